//! The sampler shared function (SFID 2): its messages, their parameter layouts, and the model
//! of the unit the emulator runs.
//!
//! What: [`SamplerMsg`] names the message types of Gen7–Gen9 (the descriptor's
//! [`desc::Sampler`] message type field) that
//! lowering emits for the IR's texture operations, and [`SamplerMsg::params`] lays out each
//! one's payload: one parameter per GRF (SIMD8) or GRF pair (SIMD16), no header. Lowering
//! writes the payload from this layout and the emulator reads it back by the same layout, so
//! the two cannot disagree. [`TextureSurface`] is what the binding table says of a texture
//! (the hardware's SURFACE_STATE): its dimensionality, whether it is an array, and how its
//! texels are typed.
//!
//! Why: textures are sampled by a fixed-function unit; the emulator models it with the
//! reference interpreter's software sampler ([`shrew_engine::interp::texture_op`]), so a
//! differential test compares the kernel's addressing of the sampler, not two samplers.
//!
//! Invariants: the implicit LOD of a message comes from the derivatives of its coordinates over
//! each 2×2 subspan, as the hardware computes them (coarse: the top row's and the left
//! column's differences), from the channels the message has enabled, as the interpreter takes
//! them from the quad members that reach the instruction.

use crate::emu::{EmuError, Thread};
use crate::encoding::Inst;
use crate::fields::{Descriptor, desc};
use crate::isa::{Gen, RegFile};
use shrew_engine::interp::{TexKind, TexOperands, texture_op};
use shrew_engine::ir::{Dim, TexOp, TexSrc};
use shrew_engine::ops::BaseType;

/// A sampler message type (Gen5+ numbering, as Gen7–Gen9 use it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SamplerMsg {
    Sample,
    SampleB,
    SampleL,
    SampleC,
    SampleD,
    SampleBC,
    SampleLC,
    Ld,
    Lod,
    Resinfo,
    /// `sample_d_c`: Haswell and later.
    SampleDC,
    /// `sample_lz`, `sample_c_lz`, `ld_lz`: Gen9's messages for an LOD of zero.
    SampleLz,
    SampleCLz,
    LdLz,
}

/// One parameter of a sampler message's payload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Param {
    /// Coordinate component `i`; past the texture's components, a zero the message needs.
    Coord(u8),
    /// The shadow reference.
    Ref,
    Bias,
    Lod,
    /// Derivatives of coordinate component `i` along x and y.
    Ddx(u8),
    Ddy(u8),
}

const ALL: [SamplerMsg; 14] = [
    SamplerMsg::Sample,
    SamplerMsg::SampleB,
    SamplerMsg::SampleL,
    SamplerMsg::SampleC,
    SamplerMsg::SampleD,
    SamplerMsg::SampleBC,
    SamplerMsg::SampleLC,
    SamplerMsg::Ld,
    SamplerMsg::Lod,
    SamplerMsg::Resinfo,
    SamplerMsg::SampleDC,
    SamplerMsg::SampleLz,
    SamplerMsg::SampleCLz,
    SamplerMsg::LdLz,
];

/// Most GRFs of a sampler message's payload.
pub const MAX_SAMPLER_MESSAGE_SIZE: u32 = 11;

impl SamplerMsg {
    /// The value of the descriptor's message type field.
    pub fn code(self) -> u32 {
        match self {
            SamplerMsg::Sample => 0,
            SamplerMsg::SampleB => 1,
            SamplerMsg::SampleL => 2,
            SamplerMsg::SampleC => 3,
            SamplerMsg::SampleD => 4,
            SamplerMsg::SampleBC => 5,
            SamplerMsg::SampleLC => 6,
            SamplerMsg::Ld => 7,
            SamplerMsg::Lod => 9,
            SamplerMsg::Resinfo => 10,
            SamplerMsg::SampleDC => 20,
            SamplerMsg::SampleLz => 24,
            SamplerMsg::SampleCLz => 25,
            SamplerMsg::LdLz => 26,
        }
    }

    /// The message with type field `code` on `hw`.
    pub fn from_code(code: u32, hw: Gen) -> Option<SamplerMsg> {
        ALL.into_iter()
            .find(|m| m.code() == code)
            .filter(|m| m.exists_on(hw))
    }

    /// The name Mesa's disassembler prints.
    pub fn name(self) -> &'static str {
        match self {
            SamplerMsg::Sample => "sample",
            SamplerMsg::SampleB => "sample_b",
            SamplerMsg::SampleL => "sample_l",
            SamplerMsg::SampleC => "sample_c",
            SamplerMsg::SampleD => "sample_d",
            SamplerMsg::SampleBC => "sample_b_c",
            SamplerMsg::SampleLC => "sample_l_c",
            SamplerMsg::Ld => "ld",
            SamplerMsg::Lod => "lod",
            SamplerMsg::Resinfo => "resinfo",
            SamplerMsg::SampleDC => "sample_d_c",
            SamplerMsg::SampleLz => "sample_lz",
            SamplerMsg::SampleCLz => "sample_c_lz",
            SamplerMsg::LdLz => "ld_lz",
        }
    }

    fn exists_on(self, hw: Gen) -> bool {
        match self {
            SamplerMsg::SampleDC => hw >= Gen::Gen75,
            SamplerMsg::SampleLz | SamplerMsg::SampleCLz | SamplerMsg::LdLz => hw >= Gen::Gen9,
            _ => true,
        }
    }

    /// The message for texture operation `op` (shadow or not; `lod_zero`: an explicit LOD that
    /// is the constant zero) on `hw`, or what is not supported.
    pub fn for_op(op: TexOp, shadow: bool, lod_zero: bool, hw: Gen) -> Result<SamplerMsg, String> {
        let zero = lod_zero && hw >= Gen::Gen9;
        let msg = match (op, shadow) {
            (TexOp::Tex, false) => SamplerMsg::Sample,
            (TexOp::Tex, true) => SamplerMsg::SampleC,
            (TexOp::Txb, false) => SamplerMsg::SampleB,
            (TexOp::Txb, true) => SamplerMsg::SampleBC,
            (TexOp::Txl, false) if zero => SamplerMsg::SampleLz,
            (TexOp::Txl, true) if zero => SamplerMsg::SampleCLz,
            (TexOp::Txl, false) => SamplerMsg::SampleL,
            (TexOp::Txl, true) => SamplerMsg::SampleLC,
            (TexOp::Txd, false) => SamplerMsg::SampleD,
            (TexOp::Txd, true) => SamplerMsg::SampleDC,
            (TexOp::Txf, false) if zero => SamplerMsg::LdLz,
            (TexOp::Txf, false) => SamplerMsg::Ld,
            (TexOp::Lod, false) => SamplerMsg::Lod,
            (TexOp::Txs | TexOp::QueryLevels, false) => SamplerMsg::Resinfo,
            (op, _) => return Err(format!("`{}` is not supported yet", op.name())),
        };
        if !msg.exists_on(hw) {
            return Err(format!("{} needs Haswell or later", msg.name()));
        }
        Ok(msg)
    }

    /// The texture operation the message performs, and whether it compares (shadow).
    fn tex_op(self) -> (TexOp, bool) {
        match self {
            SamplerMsg::Sample => (TexOp::Tex, false),
            SamplerMsg::SampleB => (TexOp::Txb, false),
            SamplerMsg::SampleL | SamplerMsg::SampleLz => (TexOp::Txl, false),
            SamplerMsg::SampleC => (TexOp::Tex, true),
            SamplerMsg::SampleD => (TexOp::Txd, false),
            SamplerMsg::SampleBC => (TexOp::Txb, true),
            SamplerMsg::SampleLC | SamplerMsg::SampleCLz => (TexOp::Txl, true),
            SamplerMsg::Ld | SamplerMsg::LdLz => (TexOp::Txf, false),
            SamplerMsg::Lod => (TexOp::Lod, false),
            SamplerMsg::Resinfo => (TexOp::Txs, false),
            SamplerMsg::SampleDC => (TexOp::Txd, true),
        }
    }

    /// Whether the LOD comes from the derivatives of the coordinates over each subspan.
    fn implicit_lod(self) -> bool {
        matches!(
            self,
            SamplerMsg::Sample
                | SamplerMsg::SampleB
                | SamplerMsg::SampleC
                | SamplerMsg::SampleBC
                | SamplerMsg::Lod
        )
    }

    /// Whether the parameters are integers (`ld`'s coordinates and LOD, `resinfo`'s LOD).
    pub fn integer_params(self) -> bool {
        matches!(
            self,
            SamplerMsg::Ld | SamplerMsg::LdLz | SamplerMsg::Resinfo
        )
    }

    /// The payload's parameters in order, for a texture of `dim` (an array or not): the
    /// reference first, then the bias or LOD, then the coordinates (the array index last),
    /// except that `sample_d` follows each axis's coordinate with its derivatives and `ld`
    /// puts the LOD after u (Gen7/8) or after u and v (Gen9).
    pub fn params(self, dim: Dim, arrayed: bool, hw: Gen) -> Vec<Param> {
        let (axes, coords) = (dim.coord_components(), coord_comps(dim, arrayed));
        let mut params = Vec::new();
        let (_, shadow) = self.tex_op();
        if shadow {
            params.push(Param::Ref);
        }
        match self {
            SamplerMsg::SampleB | SamplerMsg::SampleBC => params.push(Param::Bias),
            SamplerMsg::SampleL | SamplerMsg::SampleLC | SamplerMsg::Resinfo => {
                params.push(Param::Lod)
            }
            _ => {}
        }
        match self {
            SamplerMsg::Resinfo => {}
            SamplerMsg::SampleD | SamplerMsg::SampleDC => {
                for i in 0..coords {
                    params.push(Param::Coord(i));
                    // The array index has no derivatives.
                    if i < axes {
                        params.extend([Param::Ddx(i), Param::Ddy(i)]);
                    }
                }
            }
            SamplerMsg::Ld => {
                let lod_after = if hw >= Gen::Gen9 { 2 } else { 1 };
                for i in 0..coords.max(lod_after) {
                    if i == lod_after {
                        params.push(Param::Lod);
                    }
                    params.push(Param::Coord(i));
                }
                if coords <= lod_after {
                    params.push(Param::Lod);
                }
            }
            _ => params.extend((0..coords).map(Param::Coord)),
        }
        params
    }
}

/// The coordinate components a texture of dimensionality `dim` takes: its axes (a cube's
/// direction has three), then the array index.
pub fn coord_comps(dim: Dim, arrayed: bool) -> u8 {
    dim.coord_components() + arrayed as u8
}

/// What the binding table says of a texture: the texture at `binding` of the shader's
/// resources, how coordinates address it, and how its texels are typed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TextureSurface {
    pub binding: u32,
    pub dim: Dim,
    pub arrayed: bool,
    pub dest_type: BaseType,
}

/// Runs a sampler message (`descriptor` its descriptor) on the `enabled` channels of a send
/// whose payload starts at GRF `payload`: each channel's result goes to its four response
/// components, a GRF per 8 channels each.
pub(crate) fn emulate(
    inst: &Inst,
    hw: Gen,
    thread: &mut Thread,
    descriptor: Descriptor,
    payload: u8,
    enabled: u32,
) -> Result<(), EmuError> {
    let fault = |what: String| EmuError::Sampler(what);
    let fields = desc::Sampler::of(hw);
    let code = descriptor.get(fields.message_type);
    let msg = SamplerMsg::from_code(code, hw)
        .ok_or_else(|| fault(format!("message type {code} is not modelled")))?;
    let bti = descriptor.get(desc::Surface::of(hw).binding_table_index);
    let sampler = descriptor.get(fields.sampler_index);
    let surface = *thread
        .sampler_views
        .get(&bti)
        .ok_or_else(|| fault(format!("no texture at binding table index {bti}")))?;
    let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf) else {
        return Err(fault("the response goes to no GRF".into()));
    };
    let (op, shadow) = msg.tex_op();
    let kind = TexKind {
        op,
        dim: surface.dim,
        is_array: surface.arrayed,
        is_shadow: shadow,
        dest_type: surface.dest_type,
        component: 0,
    };
    let (axes, coords) = (
        surface.dim.coord_components(),
        coord_comps(surface.dim, surface.arrayed),
    );
    let params = msg.params(surface.dim, surface.arrayed, hw);
    let width = inst.exec_size as usize;
    let per_param = width.div_ceil(8);
    // Parameter `p` of channel `i`; zero for one the message does not have.
    let param = |p: Param, i: usize| -> Result<u64, EmuError> {
        match params.iter().position(|&q| q == p) {
            Some(k) => thread.read(
                (payload as usize + k * per_param + i / 8) * 32 + i % 8 * 4,
                4,
            ),
            None => Ok(0),
        }
    };
    let float = |bits: u64| f32::from_bits(bits as u32) as f64;
    let enabled_channel = |i: usize| enabled >> (inst.group as usize + i) & 1 != 0;
    let mut results = Vec::new();
    for i in (0..width).filter(|&i| enabled_channel(i)) {
        let mut operands = TexOperands::default();
        let mut set = |kind: TexSrc, params: &[Param]| -> Result<(), EmuError> {
            let values = params
                .iter()
                .map(|&p| param(p, i))
                .collect::<Result<Vec<_>, _>>()?;
            operands.set(kind, &values, 32);
            Ok(())
        };
        let coord: Vec<Param> = (0..coords).map(Param::Coord).collect();
        let grads = 0..axes;
        for p in &params {
            match *p {
                Param::Coord(0) => set(TexSrc::Coord, &coord)?,
                Param::Ref => set(TexSrc::Comparator, &[Param::Ref])?,
                Param::Bias => set(TexSrc::Bias, &[Param::Bias])?,
                Param::Lod => set(TexSrc::Lod, &[Param::Lod])?,
                Param::Ddx(0) => set(
                    TexSrc::Ddx,
                    &grads.clone().map(Param::Ddx).collect::<Vec<_>>(),
                )?,
                Param::Ddy(0) => set(
                    TexSrc::Ddy,
                    &grads.clone().map(Param::Ddy).collect::<Vec<_>>(),
                )?,
                _ => {}
            }
        }
        // The coarse derivatives over the channel's subspan, from its enabled members.
        let derivs = if msg.implicit_lod() {
            let first = i - i % 4;
            let mut at = [None; 4];
            for (k, slot) in at.iter_mut().enumerate() {
                if enabled_channel(first + k) {
                    let mut c = [0.0; 3];
                    for (a, x) in c.iter_mut().enumerate().take(axes as usize) {
                        *x = float(param(Param::Coord(a as u8), first + k)?);
                    }
                    *slot = Some(c);
                }
            }
            let diff = |pairs: [(usize, usize); 2]| {
                pairs
                    .into_iter()
                    .find_map(|(a, b)| Some((at[a]?, at[b]?)))
                    .map_or([0.0; 3], |(a, b)| [b[0] - a[0], b[1] - a[1], b[2] - a[2]])
            };
            Some([diff([(0, 1), (2, 3)]), diff([(0, 2), (1, 3)])])
        } else {
            None
        };
        let (mut texel, _) =
            texture_op(&thread.sampling, &kind, bti, sampler, &operands, derivs).map_err(fault)?;
        if msg == SamplerMsg::Resinfo {
            // The mip count in the fourth component.
            let levels = thread
                .sampling
                .textures
                .get(&bti)
                .map_or(0, |t| t.levels.len());
            texel[3] = levels as u32;
        }
        results.push((i, texel));
    }
    for (i, texel) in results {
        for (c, value) in texel.into_iter().enumerate() {
            let reg = dst.nr as usize + c * per_param + i / 8;
            thread.write(reg * 32 + i % 8 * 4, 4, value as u64)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_layouts_follow_the_message_type() {
        use Param::*;
        let params = |msg: SamplerMsg, dim, arrayed, hw| msg.params(dim, arrayed, hw);
        let ld = SamplerMsg::Ld;
        assert_eq!(
            params(ld, Dim::D2, false, Gen::Gen9),
            [Coord(0), Coord(1), Lod]
        );
        assert_eq!(
            params(ld, Dim::D1, false, Gen::Gen9),
            [Coord(0), Coord(1), Lod]
        );
        assert_eq!(
            params(ld, Dim::D2, true, Gen::Gen9),
            [Coord(0), Coord(1), Lod, Coord(2)]
        );
        assert_eq!(
            params(ld, Dim::D3, false, Gen::Gen8),
            [Coord(0), Lod, Coord(1), Coord(2)]
        );
        assert_eq!(params(ld, Dim::D1, false, Gen::Gen7), [Coord(0), Lod]);
        assert_eq!(
            params(SamplerMsg::SampleBC, Dim::D2, false, Gen::Gen9),
            [Ref, Bias, Coord(0), Coord(1)]
        );
        assert_eq!(
            params(SamplerMsg::SampleD, Dim::D2, true, Gen::Gen9),
            [Coord(0), Ddx(0), Ddy(0), Coord(1), Ddx(1), Ddy(1), Coord(2)]
        );
        assert_eq!(
            params(SamplerMsg::SampleD, Dim::D3, false, Gen::Gen9).len(),
            9
        );
        assert_eq!(
            params(SamplerMsg::Resinfo, Dim::D2, false, Gen::Gen7),
            [Lod]
        );
    }

    #[test]
    fn messages_exist_on_their_generations() {
        let msg = |op, shadow, zero, hw| SamplerMsg::for_op(op, shadow, zero, hw);
        assert_eq!(
            msg(TexOp::Txl, false, true, Gen::Gen9),
            Ok(SamplerMsg::SampleLz)
        );
        assert_eq!(
            msg(TexOp::Txl, false, true, Gen::Gen8),
            Ok(SamplerMsg::SampleL)
        );
        assert_eq!(
            msg(TexOp::Txf, false, true, Gen::Gen9),
            Ok(SamplerMsg::LdLz)
        );
        assert!(msg(TexOp::Txd, true, false, Gen::Gen7).is_err());
        assert_eq!(
            msg(TexOp::Txd, true, false, Gen::Gen75),
            Ok(SamplerMsg::SampleDC)
        );
        assert!(msg(TexOp::Tg4, false, false, Gen::Gen9).is_err());
        for m in ALL {
            assert_eq!(SamplerMsg::from_code(m.code(), Gen::Gen9), Some(m));
        }
        assert_eq!(SamplerMsg::from_code(24, Gen::Gen8), None);
    }
}
