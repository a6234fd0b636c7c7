//! The shader's outputs: stores into the payloads of a vertex's URB writes or into a
//! fragment's colours, and the URB or render-target writes that send them at the end of the
//! thread.

use super::thread::simd8_send;
use super::{LowerError, Lowering, VueSlot, halves};
use crate::fields::desc;
use crate::isa::{Opcode, Region, Type};
use crate::lir::{Inst, Operand, Src, VReg};
use shrew_engine::interp::memory::layout_variables;
use shrew_engine::ir::{
    Builtin, Deref, Function, InstKind, IntrinsicInst, Mode, Shader, Stage, Value,
};
use shrew_engine::ops::{IndexKind, Intrinsic};

impl Lowering<'_> {
    /// Writes the components of `data` the store's write mask has, from component `first` of
    /// output `slot` on (a render target's colour, or a slot of the vertex's URB entry).
    pub(super) fn store_output(
        &mut self,
        v: Value,
        slot: u32,
        first: u8,
        data: Value,
        ii: &IntrinsicInst,
    ) -> Result<(), LowerError> {
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        let Some(ty) = self
            .func
            .value_type(data)
            .filter(|t| matches!(t.bits, 32 | 64))
        else {
            return Err(self.error(v, "only 32- and 64-bit outputs are supported"));
        };
        // Dword `k` of the value goes to dword `first + k` from the slot's start: a 64-bit
        // component takes two and may go on into the next slot.
        let per_comp = self.dwords_per_comp(data);
        for c in (0..ty.comps).filter(|c| mask & (1 << c) != 0) {
            for h in 0..per_comp {
                let k = c * per_comp + h;
                let at = first as u32 + k as u32;
                let (slot, comp) = (slot + at / 4, at % 4);
                if self.shader.stage == Stage::Fragment && comp != at {
                    continue;
                }
                let out = match self.outputs.get(&slot) {
                    Some(&out) => out,
                    None if self.shader.stage == Stage::Vertex => {
                        return Err(self.error(v, "the output has no slot in the URB entry"));
                    }
                    None => {
                        let out = (self.temp(4), 0);
                        self.outputs.insert(slot, out);
                        out
                    }
                };
                let src = self.read_dword(data, k);
                if self.shader.stage == Stage::Vertex {
                    let place = (out.0, out.1 + self.vue_component_bytes() * comp);
                    let temp = *(self.vertex_outputs.entry(place))
                        .or_insert_with(|| self.program.new_vreg(1));
                    self.op(Opcode::Mov, Operand::vector(temp, 0, Type::UD), vec![src]);
                } else {
                    self.write_colour(out, comp, src);
                }
            }
        }
        Ok(())
    }

    /// Bytes between the components of a VUE slot in a URB write's payload: a GRF at SIMD8
    /// (a dword per vertex in each), a dword at SIMD4x2 (each vertex's four components in its
    /// half of the slot's GRF).
    fn vue_component_bytes(&self) -> u32 {
        if self.payload.simd4x2 { 4 } else { 32 }
    }

    /// GRFs a VUE slot takes in a URB write's payload.
    fn vue_slot_grfs(&self) -> u32 {
        if self.payload.simd4x2 { 1 } else { 4 }
    }

    /// Plans the URB writes of a vertex shader's outputs ([`Payload::vue`]), two slots to a
    /// SIMD8 message (fourteen to a SIMD4x2 one, the most a message's 15 GRFs hold), from
    /// slot 1 unless the shader writes the point size (slot 0, the header's fourth dword):
    /// each output slot's place in its message's payload.
    ///
    /// [`Payload::vue`]: super::Payload::vue
    pub(super) fn plan_urb_writes(&mut self) {
        let position = builtin_slot(self.shader, Builtin::Position);
        let point_size = builtin_slot(self.shader, Builtin::PointSize)
            .filter(|_| stores_builtin(self.shader, self.func, Builtin::PointSize));
        let vue = self.payload.vue.clone();
        let first = if point_size.is_some() { 0 } else { 1 };
        let (grfs, comp_bytes) = (self.vue_slot_grfs(), self.vue_component_bytes());
        let per_message = if self.payload.simd4x2 { 14 } else { 2 };
        for (m, slots) in vue[first..].chunks(per_message).enumerate() {
            let first_slot = (first + per_message * m) as u32;
            let payload = self.program.new_vreg(1 + grfs * slots.len() as u32);
            for (k, slot) in slots.iter().enumerate() {
                let at = (1 + grfs * k as u32) * 32;
                let output = match *slot {
                    VueSlot::Header => point_size.map(|s| (s, at + 3 * comp_bytes)),
                    VueSlot::Position => position.map(|s| (s, at)),
                    VueSlot::Output(s) => Some((s, at)),
                };
                if let Some((s, at)) = output {
                    self.outputs.insert(s, (payload, at));
                }
            }
            self.urb_messages.push((first_slot, payload));
        }
    }

    /// The URB writes [`Lowering::plan_urb_writes`] planned, the last with EOT: each payload's
    /// header holds the URB handles, the output components the shader wrote are copied in; the
    /// header's other dwords and the slots the shader never writes are zero, the other
    /// components of a slot undefined.
    pub(super) fn urb_writes(&mut self) -> Result<(), LowerError> {
        let copies: Vec<((VReg, u32), VReg)> =
            self.vertex_outputs.iter().map(|(&p, &t)| (p, t)).collect();
        let messages = self.urb_messages.clone();
        let (grfs, comp_bytes) = (self.vue_slot_grfs(), self.vue_component_bytes());
        for (m, &(first_slot, payload)) in messages.iter().enumerate() {
            for &((_, at), temp) in copies.iter().filter(|((p, _), _)| *p == payload) {
                let src = Src::Reg(Operand::vector(temp, 0, Type::UD));
                self.write_vue_component(payload, at, src);
            }
            let slots = (self.program.vreg_sizes[payload.0 as usize] - 1) / grfs;
            let mut header = Inst::new(
                Opcode::Mov,
                8,
                Some(Operand::vector(payload, 0, Type::UD)),
                vec![Src::Reg(Operand::payload(1, 0, Type::UD))],
            );
            header.mask_all = true;
            self.emit(header);
            for k in 0..slots {
                let at = (1 + grfs * k) * 32;
                let slot_bytes = 4 * comp_bytes;
                let written = (copies.iter())
                    .any(|&((p, place), _)| p == payload && (at..at + slot_bytes).contains(&place));
                let zeros = match self.payload.vue[(first_slot + k) as usize] {
                    VueSlot::Header => 0..3,
                    _ if written => 0..0,
                    _ => 0..4,
                };
                for c in zeros {
                    self.write_vue_component(payload, at + comp_bytes * c, Src::imm_ud(0));
                }
            }
            // A SIMD8 write (an interleaved one at SIMD4x2: each GRF a slot of both vertices)
            // at the first slot's offset in 128-bit units. URB messages require their header:
            // the payload's first GRF, with the URB handles.
            let send = desc::Send::of(self.hw);
            let urb = desc::Urb::of(self.hw);
            let (opcode, swizzle) = if self.payload.simd4x2 {
                (desc::Urb::WRITE_HWORD, desc::Urb::INTERLEAVE)
            } else {
                (desc::Urb::SIMD8_WRITE, 0)
            };
            let message = self.final_message(
                "the vertex's URB write",
                desc::Urb::SFID,
                &[
                    (send.eot, (m + 1 == messages.len()) as u32),
                    (send.mlen, 1 + grfs * slots),
                    (send.header_present, 1),
                    (urb.opcode, opcode),
                    (urb.swizzle_control, swizzle),
                    (urb.global_offset, first_slot),
                ],
            )?;
            self.emit(simd8_send(payload, message));
        }
        Ok(())
    }

    /// Writes one component of a VUE slot, at byte `at` of a URB write's payload, from `src`:
    /// at SIMD8 a GRF, a dword per channel; at SIMD4x2 dword `at` of each vertex's half (from
    /// channels 0 and 4), whatever the channels (the write itself sends the live vertices).
    fn write_vue_component(&mut self, payload: VReg, at: u32, src: Src) {
        let dst = Operand::vector(payload, at, Type::UD);
        if !self.payload.simd4x2 {
            self.op(Opcode::Mov, dst, vec![src]);
            return;
        }
        let src = match src {
            Src::Reg(op) => Src::Reg(Operand {
                region: Region::EACH_VERTEX,
                ..op
            }),
            imm => imm,
        };
        let dst = Operand {
            region: Region::new(8, 2, 4),
            ..dst
        };
        let mut mov = Inst::new(Opcode::Mov, 2, Some(dst), vec![src]);
        mov.mask_all = true;
        self.emit(mov);
    }

    /// Vertex threads: a URB SIMD8 read of the input at 128-bit offset `oword` of each
    /// vertex's URB entry (the handles in the header, as for the writes): four GRFs, a
    /// component's dword per channel in each.
    pub(super) fn urb_read(&mut self, v: Value, oword: u32) -> Result<VReg, LowerError> {
        let header = self.program.new_vreg(1);
        let mut handles = Inst::new(
            Opcode::Mov,
            8,
            Some(Operand::vector(header, 0, Type::UD)),
            vec![Src::Reg(Operand::payload(1, 0, Type::UD))],
        );
        handles.mask_all = true;
        self.emit(handles);
        let send = desc::Send::of(self.hw);
        let urb = desc::Urb::of(self.hw);
        let message = self.message(
            v,
            desc::Urb::SFID,
            &[
                (send.mlen, 1),
                (send.rlen, 4),
                (send.header_present, 1),
                (urb.opcode, desc::Urb::SIMD8_READ),
                (urb.global_offset, oword),
            ],
        )?;
        let data = self.program.new_vreg(4);
        self.emit(Inst {
            send: Some(message),
            ..Inst::new(
                Opcode::Send,
                8,
                Some(Operand::vector(data, 0, Type::UD)),
                vec![
                    Src::Reg(Operand::vector(header, 0, Type::UD)),
                    Src::imm_ud(message.descriptor()),
                ],
            )
        });
        Ok(data)
    }

    /// The render-target writes: one per colour output, the last with EOT.
    pub(super) fn color_writes(&mut self) -> Result<(), LowerError> {
        let outputs: Vec<(u32, VReg)> = self.outputs.iter().map(|(&s, &(r, _))| (s, r)).collect();
        if outputs.is_empty() {
            // A thread must end: a write of nothing to render target 0 with EOT.
            let r = self.temp(4);
            for c in 0..4 {
                self.write_colour((r, 0), c, Src::imm_ud(0));
            }
            return self.render_target_write(0, r, true);
        }
        let last = outputs.len() - 1;
        for (i, (slot, reg)) in outputs.into_iter().enumerate() {
            self.render_target_write(slot, reg, i == last)?;
        }
        Ok(())
    }

    /// Byte offset of component `c` of `half`'s render-target payload in a colour register:
    /// each 16 channels' payload (four components of one or two GRFs) after the other's.
    fn colour_at(&self, half: u8, c: u32) -> u32 {
        (4 * half as u32 + c) * self.width.min(16) as u32 / 8 * 32
    }

    /// Writes component `c` of an output (`colour_at`'s layout from the given byte offset).
    fn write_colour(&mut self, (reg, base): (VReg, u32), c: u32, src: Src) {
        for half in 0..halves(self.width) {
            let dst = Operand::vector(reg, base + self.colour_at(half, c), Type::UD);
            self.on_half(half, Opcode::Mov, dst, vec![src]);
        }
    }

    /// Writes the colour in `colour` (laid out by [`Lowering::colour_at`]) to a render target:
    /// one SIMD16 or SIMD8 message per 16 channels, each to its slot group (the second 16
    /// pixels of SIMD32 are slot group 1), the last of all with EOT.
    fn render_target_write(
        &mut self,
        target: u32,
        colour: VReg,
        last: bool,
    ) -> Result<(), LowerError> {
        let (mlen, subtype) = if self.width >= 16 {
            (8, desc::RenderTargetWrite::SIMD16)
        } else {
            (4, desc::RenderTargetWrite::SIMD8)
        };
        let halves = halves(self.width);
        let send = desc::Send::of(self.hw);
        let rt = desc::RenderTargetWrite::of(self.hw);
        for half in 0..halves {
            let message = self.final_message(
                "the render-target write",
                desc::RenderCache::SFID,
                &[
                    (send.eot, (last && half + 1 == halves) as u32),
                    (send.mlen, mlen),
                    (
                        desc::RenderCache::of(self.hw).message_type,
                        desc::RenderCache::RENDER_TARGET_WRITE,
                    ),
                    (rt.last_render_target, last as u32),
                    (rt.slot_group, half as u32),
                    (rt.subtype, subtype),
                    (desc::Surface::of(self.hw).binding_table_index, target),
                ],
            )?;
            let payload = Operand::vector(colour, self.colour_at(half, 0), Type::UD);
            let mut send = Inst::new(
                Opcode::Sendc,
                self.width.min(16),
                Some(Operand::null(Type::UW)),
                vec![Src::Reg(payload), Src::imm_ud(message.descriptor())],
            );
            send.group = 16 * half;
            send.send = Some(message);
            self.emit_for_live_pixels(send);
        }
        Ok(())
    }
}

/// Whether the function stores the built-in output `builtin`.
fn stores_builtin(shader: &Shader, func: &Function, builtin: Builtin) -> bool {
    func.insts.iter().flatten().any(|inst| match &inst.kind {
        InstKind::Intrinsic(ii) if ii.op == Intrinsic::StoreDeref => {
            matches!(&func.inst(ii.srcs[0]).kind, InstKind::Deref(Deref::Var(var))
                if shader.variables[var.0 as usize].builtin == Some(builtin))
        }
        _ => false,
    })
}

/// The output slot of the vertex shader's `builtin`, if it has one.
pub(super) fn builtin_slot(shader: &Shader, builtin: Builtin) -> Option<u32> {
    let layouts = layout_variables(shader).ok()?;
    shader
        .variables
        .iter()
        .zip(&layouts)
        .find(|(var, _)| var.mode == Mode::ShaderOut && var.builtin == Some(builtin))
        .map(|(_, layout)| layout.offset / 16)
}
