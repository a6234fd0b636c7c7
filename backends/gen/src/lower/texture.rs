//! Texture instructions as sampler messages, with the parameters in the order
//! [`crate::sampler`] lays out for the message.

use super::{LowerError, Lowering, Surface};
use crate::fields::desc;
use crate::isa::{MathFn, Opcode, Type};
use crate::lir::{Inst, Operand, Src};
use crate::sampler::{Param, SamplerMsg, TextureSurface, coord_comps};
use crate::simd_width::part;
use shrew_engine::ir::{Dim, Tex, TexOp, TexSrc, Value};

impl Lowering<'_> {
    /// The texture and sampler bindings of a texture instruction: a deref of a texture
    /// variable, or an element of an array of them at a constant index (the sampler is the
    /// texture's, a combined one); else the instruction's own bindings.
    /// A texture instruction: one sampler message per 16 channels, or per 8 when its payload
    /// takes more than five parameters (the payload limit) or it has derivatives, each
    /// parameter one 32-bit value per channel as [`SamplerMsg::params`] lays them out, the
    /// four components of the response copied to the value's.
    pub(super) fn texture(&mut self, v: Value, t: &Tex) -> Result<(), LowerError> {
        let def = self
            .func
            .inst(v)
            .def
            .expect("texture instructions define a value");
        if def.bits != 32 || def.comps > 4 {
            return Err(self.error(v, "only results of 1 to 4 32-bit components are supported"));
        }
        let unsupported = [
            TexSrc::Offset,
            TexSrc::MinLod,
            TexSrc::MsIndex,
            TexSrc::TextureOffset,
            TexSrc::SamplerOffset,
        ];
        if let Some(kind) = unsupported.into_iter().find(|&k| t.src(k).is_some()) {
            return Err(self.error(v, &format!("texture source {kind:?} is not supported yet")));
        }
        if !matches!(t.dim, Dim::D1 | Dim::D2 | Dim::D3 | Dim::Cube | Dim::Rect) {
            return Err(self.error(
                v,
                &format!("{} textures are not supported yet", t.dim.name()),
            ));
        }
        let (binding, sampler) = t
            .bindings(self.shader, self.func)
            .map_err(|e| self.error(v, &e))?;
        let lod_zero = t
            .src(TexSrc::Lod)
            .is_some_and(|l| self.func.constant_u32(l) == Some(0));
        let msg = SamplerMsg::for_op(t.op, t.is_shadow, lod_zero, self.hw)
            .map_err(|e| self.error(v, &e))?;
        let bti = self.surface(Surface::Texture(TextureSurface {
            binding,
            dim: t.dim,
            arrayed: t.is_array,
            dest_type: t.dest_type,
        }));
        let coords = coord_comps(t.dim, t.is_array);
        let params = msg.params(t.dim, t.is_array, self.hw);
        let ty = if msg.integer_params() {
            Type::D
        } else {
            Type::F
        };
        let read = |l: &mut Self, kind: TexSrc, c: u8| {
            t.src(kind)
                .map_or(Src::Imm(ty, 0), |value| l.read(value, c, ty))
        };
        // Coordinates (but not the array index) and the reference divided by the projector.
        let axes = coords - t.is_array as u8;
        let mut coord: Vec<Src> = (0..coords).map(|c| read(self, TexSrc::Coord, c)).collect();
        let mut reference = read(self, TexSrc::Comparator, 0);
        if let Some(q) = t.src(TexSrc::Projector) {
            let inverse = self.temp_operand(Type::F);
            let q = self.read(q, 0, Type::F);
            self.math(MathFn::Inv, inverse, vec![q]);
            let reference = t.src(TexSrc::Comparator).map(|_| &mut reference);
            for x in coord[..axes as usize].iter_mut().chain(reference) {
                let projected = self.temp_operand(Type::F);
                self.alu2(Opcode::Mul, projected, *x, Src::Reg(inverse), true);
                *x = Src::Reg(projected);
            }
        }
        let payload_of = |l: &mut Self, p: Param| match p {
            Param::Coord(c) => coord.get(c as usize).copied().unwrap_or(Src::Imm(ty, 0)),
            Param::Ref => reference,
            Param::Bias => read(l, TexSrc::Bias, 0),
            Param::Lod => read(l, TexSrc::Lod, 0),
            Param::Ddx(c) => read(l, TexSrc::Ddx, c),
            Param::Ddy(c) => read(l, TexSrc::Ddy, c),
        };
        let piece = if params.len() > 5 || t.op == TexOp::Txd {
            8
        } else {
            self.width.min(16)
        };
        let per_param = piece as u32 / 8;
        let simd_mode = if piece == 16 {
            desc::Sampler::SIMD16
        } else {
            desc::Sampler::SIMD8
        };
        let send = desc::Send::of(self.hw);
        let f = desc::Sampler::of(self.hw);
        let message = self.message(
            v,
            desc::Sampler::SFID,
            &[
                (send.mlen, params.len() as u32 * per_param),
                (send.rlen, 4 * per_param),
                (f.simd_mode, simd_mode),
                (f.message_type, msg.code()),
                (f.sampler_index, sampler),
                (desc::Surface::of(self.hw).binding_table_index, bti),
            ],
        )?;
        for group in (0..self.width).step_by(piece as usize) {
            let payload = self.program.new_vreg(message.mlen());
            for (k, &p) in params.iter().enumerate() {
                let dst = Operand::vector(payload, k as u32 * per_param * 32, ty);
                let src = payload_of(self, p);
                self.on_channels(group, piece, Opcode::Mov, dst, vec![src]);
            }
            let response = self.program.new_vreg(message.rlen());
            let payload = Src::Reg(Operand::vector(payload, 0, Type::UD));
            let descriptor = Src::imm_ud(message.descriptor());
            let dst = Operand::vector(response, 0, Type::UD);
            // The payload is this piece's alone: the send reads it from its start.
            self.emit(Inst {
                group,
                send: Some(message),
                ..Inst::new(Opcode::Send, piece, Some(dst), vec![payload, descriptor])
            });
            for c in 0..def.comps {
                // `textureQueryLevels` is the mip count `resinfo` gives in its fourth component.
                let from = if t.op == TexOp::QueryLevels {
                    3
                } else {
                    c as u32
                };
                let response = Operand::vector(response, from * per_param * 32, Type::UD);
                let dst = part(self.comp(v, c, Type::UD), group);
                self.emit(Inst {
                    group,
                    ..Inst::new(Opcode::Mov, piece, Some(dst), vec![Src::Reg(response)])
                });
            }
        }
        Ok(())
    }
}
