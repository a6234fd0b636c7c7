//! Memory through the data port: the binding table's surfaces, untyped surface reads (pulled
//! uniforms, UBOs, the constant data, SSBOs, shared memory), writes and atomics, and the
//! thread's scratch memory through DWord scattered messages.

use super::{FIRST_SURFACE, LowerError, Lowering, SLM_SURFACE, Surface, halves};
use crate::fields::{Field, desc};
use crate::isa::{Opcode, Region, Type};
use crate::lir::{Inst, Message, Operand, Src, VReg};
use crate::simd_width::part;
use shrew_engine::ir::{IntrinsicInst, Value, opaque_binding};
use shrew_engine::ops::{AtomicOp, IndexKind, Intrinsic};

impl Lowering<'_> {
    /// The binding table index of a surface, bound on first use.
    pub(super) fn surface(&mut self, surface: Surface) -> u32 {
        if surface == Surface::Shared {
            return SLM_SURFACE;
        }
        let surfaces = &mut self.payload.surfaces;
        let index = match surfaces.iter().position(|&s| s == surface) {
            Some(i) => i,
            None => {
                surfaces.push(surface);
                surfaces.len() - 1
            }
        };
        FIRST_SURFACE + index as u32
    }

    /// The binding of an SSBO access, which must be a constant.
    pub(super) fn ssbo_binding(&self, v: Value, binding: Value) -> Result<u32, LowerError> {
        self.func
            .constant_u32(binding)
            .ok_or_else(|| self.error(v, "SSBOs at run-time bindings are not supported yet"))
    }

    /// The writes of a store of `data` (booleans, 32- or 64-bit components) under its write
    /// mask: each
    /// run of written components, at most four dwords a write, as its byte offset from the
    /// store's address and its dwords.
    pub(super) fn store_writes(
        &mut self,
        v: Value,
        data: Value,
        ii: &IntrinsicInst,
    ) -> Result<Vec<(u32, Vec<Src>)>, LowerError> {
        let ty = self.func.value_type(data).expect("stores store a value");
        if !matches!(ty.bits, 1 | 32 | 64) {
            return Err(self.error(
                v,
                "only stores of booleans and 32- or 64-bit values are supported",
            ));
        }
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        let per_comp = self.dwords_per_comp(data);
        let mut writes: Vec<(u32, Vec<Src>)> = Vec::new();
        let mut last = None;
        for c in (0..ty.comps).filter(|c| mask >> c & 1 != 0) {
            for k in 0..per_comp {
                let dword = c * per_comp + k;
                let mut src = self.read_dword(data, dword);
                if ty.bits == 1 {
                    // Memory holds a boolean as 0 or 1; a register as 0 or all ones.
                    let one = self.temp_operand(Type::UD);
                    self.alu2(Opcode::And, one, src, Src::imm_ud(1), true);
                    src = Src::Reg(one);
                }
                match writes.last_mut() {
                    Some((_, run)) if last.is_some_and(|l| l + 1 == dword) && run.len() < 4 => {
                        run.push(src)
                    }
                    _ => writes.push((4 * dword as u32, vec![src])),
                }
                last = Some(dword);
            }
        }
        Ok(writes)
    }

    /// An image load or store (`v`, the intrinsic `ii`): typed surface reads or writes of the
    /// image at the deref's binding, eight channels a message (the hardware's limit), each
    /// message's payload the texel's coordinates, a GRF each, then for a store its four
    /// components. In fragment shaders only live pixels write (f1.0).
    pub(super) fn typed_surface(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let store = ii.op == Intrinsic::ImageDerefStore;
        let binding = opaque_binding(self.shader, self.func, ii.srcs[0], "image")
            .map_err(|e| self.error(v, &e))?;
        let bti = self.surface(Surface::Image(binding));
        let coords = self
            .func
            .value_type(ii.srcs[1])
            .map_or(1, |t| t.comps)
            .min(3);
        let data: Vec<Src> = if store {
            let ty = self
                .func
                .value_type(ii.srcs[3])
                .expect("stores store a value");
            if ty.bits != 32 || ty.comps != 4 {
                return Err(self.error(v, "image stores of other than four 32-bit components"));
            }
            (0..4).map(|k| self.read(ii.srcs[3], k, Type::UD)).collect()
        } else {
            Vec::new()
        };
        let coordinates: Vec<Src> = (0..coords)
            .map(|k| self.read(ii.srcs[1], k, Type::D))
            .collect();
        let port = desc::TypedPort::of(self.hw);
        let message_type = self.typed_message_type();
        let send = desc::Send::of(self.hw);
        let f = desc::TypedSurface::of(self.hw);
        let mlen = (coordinates.len() + data.len()) as u32;
        for group in 0..self.width / 8 {
            let slot_group = if group % 2 == 0 {
                desc::TypedSurface::LOW
            } else {
                desc::TypedSurface::HIGH
            };
            let message = self.message(
                v,
                port.sfid,
                &[
                    (send.mlen, mlen),
                    (send.rlen, if store { 0 } else { 4 }),
                    (desc::Surface::of(self.hw).binding_table_index, bti),
                    (message_type, if store { port.write } else { port.read }),
                    (f.slot_group, slot_group),
                    (f.disabled_channels, 0),
                ],
            )?;
            let response = match store {
                true => Operand::null(Type::UD),
                false => Operand::vector(self.program.new_vreg(4), 0, Type::UD),
            };
            let sources: Vec<Src> = coordinates.iter().chain(&data).copied().collect();
            self.send_typed(group, message, &sources, response);
            if !store {
                let comps = self.func.inst(v).def.map_or(0, |d| d.comps);
                for c in 0..comps {
                    let dst = part(self.comp(v, c, Type::UD), 8 * group);
                    let texel = Operand {
                        offset: 32 * c as u32,
                        ..response
                    };
                    self.emit(Inst {
                        group: 8 * group,
                        ..Inst::new(Opcode::Mov, 8, Some(dst), vec![Src::Reg(texel)])
                    });
                }
            }
        }
        Ok(())
    }

    /// An atomic operation's response as each channel reads it: at SIMD4x2 only the first
    /// channel of each vertex sent the operation ([`Lowering::emit_for_live_pixels`]), and
    /// the vertex's other channels read its old value.
    fn atomic_response(&self, response: Operand) -> Operand {
        if self.payload.simd4x2 {
            Operand {
                region: Region::PER_VERTEX,
                ..response
            }
        } else {
            response
        }
    }

    /// The message type field of the typed surface messages' shared function.
    fn typed_message_type(&self) -> Field {
        if desc::TypedPort::of(self.hw).sfid == desc::RenderCache::SFID {
            desc::RenderCache::of(self.hw).message_type
        } else {
            desc::DataCache1::of(self.hw).message_type
        }
    }

    /// Sends a typed message for the eight channels of `group` (a GRF per source, in order),
    /// only from live pixels, its response to `response`.
    fn send_typed(&mut self, group: u8, message: Message, sources: &[Src], response: Operand) {
        let payload = self.program.new_vreg(sources.len() as u32);
        for (k, &src) in sources.iter().enumerate() {
            let dst = Operand::vector(payload, 32 * k as u32, Type::UD);
            self.on_channels(8 * group, 8, Opcode::Mov, dst, vec![src]);
        }
        let payload = Src::Reg(Operand::vector(payload, 0, Type::UD));
        self.emit_for_live_pixels(Inst {
            group: 8 * group,
            send: Some(message),
            ..Inst::new(
                Opcode::Send,
                8,
                Some(response),
                vec![payload, Src::imm_ud(message.descriptor())],
            )
        });
    }

    /// An image atomic (`v`, the intrinsic `ii`): a typed atomic operation on the first
    /// component of each channel's texel, eight channels a message (the texel coordinates, a
    /// GRF each, then the operand, or a swap's comparand and new value), the old value back.
    pub(super) fn typed_atomic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let binding = opaque_binding(self.shader, self.func, ii.srcs[0], "image")
            .map_err(|e| self.error(v, &e))?;
        let bti = self.surface(Surface::Image(binding));
        let aop = self.atomic_operation(v, ii)?;
        let coords = self
            .func
            .value_type(ii.srcs[1])
            .map_or(1, |t| t.comps)
            .min(3);
        let mut sources: Vec<Src> = (0..coords)
            .map(|k| self.read(ii.srcs[1], k, Type::D))
            .collect();
        for &operand in &ii.srcs[3..] {
            sources.push(self.read(operand, 0, Type::UD));
        }
        let port = desc::TypedPort::of(self.hw);
        let message_type = self.typed_message_type();
        let send = desc::Send::of(self.hw);
        let f = desc::TypedAtomic::of(self.hw);
        let mlen = sources.len() as u32;
        for group in 0..self.width / 8 {
            let message = self.message(
                v,
                port.sfid,
                &[
                    (send.mlen, mlen),
                    (send.rlen, 1),
                    (desc::Surface::of(self.hw).binding_table_index, bti),
                    (message_type, port.atomic),
                    (f.return_data, 1),
                    (f.high_slots, (group % 2) as u32),
                    (f.operation, aop),
                ],
            )?;
            let response = Operand::vector(self.program.new_vreg(1), 0, Type::UD);
            self.send_typed(group, message, &sources, response);
            let dst = part(self.comp(v, 0, Type::UD), 8 * group);
            let response = self.atomic_response(response);
            self.emit(Inst {
                group: 8 * group,
                ..Inst::new(Opcode::Mov, 8, Some(dst), vec![Src::Reg(response)])
            });
        }
        Ok(())
    }

    /// Writes `data` (one dword per component) at byte `base` + `offset` of a surface, each
    /// channel at its own offset, for the intrinsic `v`: an untyped surface write; or, with
    /// `atomic`, the untyped atomic operation whose old value goes to `v`. In fragment shaders
    /// only live pixels write (f1.0).
    pub(super) fn untyped_write(
        &mut self,
        v: Value,
        surface: Surface,
        (offset, base): (Value, u32),
        data: Vec<Src>,
        atomic: Option<u32>,
    ) -> Result<(), LowerError> {
        let bti = self.surface(surface);
        let mut offset = self.read(offset, 0, Type::UD);
        if base != 0 {
            let address = self.temp_operand(Type::UD);
            self.alu2(Opcode::Add, address, offset, Src::imm_ud(base), true);
            offset = Src::Reg(address);
        }
        let width = self.width.min(16);
        let per_comp = width as u32 / 8;
        let simd8 = width == 8;
        let port = desc::UntypedPort::of(self.hw);
        let send = desc::Send::of(self.hw);
        let common = [
            (send.mlen, (1 + data.len() as u32) * per_comp),
            (send.rlen, if atomic.is_some() { per_comp } else { 0 }),
            (desc::Surface::of(self.hw).binding_table_index, bti),
        ];
        let message = match atomic {
            Some(aop) => {
                let f = desc::UntypedAtomic::of(self.hw);
                let fields = [
                    (port.message_type, port.atomic),
                    (f.return_data, 1),
                    (f.simd8, simd8 as u32),
                    (f.operation, aop),
                ];
                self.message(v, port.sfid, &[&common[..], &fields].concat())?
            }
            None => {
                let f = desc::UntypedSurface::of(self.hw);
                let simd_mode = if simd8 {
                    desc::UntypedSurface::SIMD8
                } else {
                    desc::UntypedSurface::SIMD16
                };
                let fields = [
                    (port.message_type, port.write),
                    (f.simd_mode, simd_mode),
                    (f.disabled_channels, 0xF & !((1 << data.len()) - 1)),
                ];
                self.message(v, port.sfid, &[&common[..], &fields].concat())?
            }
        };
        for half in 0..halves(self.width) {
            let payload = self.program.new_vreg(message.mlen());
            for (k, &src) in [offset].iter().chain(&data).enumerate() {
                let dst = Operand::vector(payload, k as u32 * per_comp * 32, Type::UD);
                self.on_half(half, Opcode::Mov, dst, vec![src]);
            }
            let response = match atomic {
                Some(_) => Operand::vector(self.program.new_vreg(per_comp), 0, Type::UD),
                None => Operand::null(Type::UD),
            };
            let payload = Src::Reg(Operand::vector(payload, 0, Type::UD));
            let descriptor = Src::imm_ud(message.descriptor());
            // The payload is this half's alone: the send reads it from its start.
            let send = Inst {
                group: 16 * half,
                send: Some(message),
                ..Inst::new(
                    Opcode::Send,
                    width,
                    Some(response),
                    vec![payload, descriptor],
                )
            };
            self.emit_for_live_pixels(send);
            if atomic.is_some() {
                let dst = part(self.comp(v, 0, Type::UD), 16 * half);
                let response = self.atomic_response(response);
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(Opcode::Mov, width, Some(dst), vec![Src::Reg(response)])
                });
            }
        }
        Ok(())
    }

    /// Loads value `v` from byte `base` + `offset` of a surface, each channel at its own
    /// offset: untyped surface reads (HSW+ data cache 1, message 1; IVB data cache, message
    /// 5) of up to four dwords each, as many as `v` has (two per 64-bit component).
    pub(super) fn pull(
        &mut self,
        v: Value,
        surface: Surface,
        base: u32,
        offset: Value,
    ) -> Result<(), LowerError> {
        let def = self.func.inst(v).def.expect("loads define a value");
        if !matches!(def.bits, 1 | 32 | 64) {
            return Err(self.error(
                v,
                "only loads of booleans and 32- and 64-bit values are supported",
            ));
        }
        let dwords = def.comps * self.dwords_per_comp(v);
        let bti = self.surface(surface);
        let offset = self.read(offset, 0, Type::UD);
        let width = self.width.min(16);
        let per_comp = width as u32 / 8;
        let simd_mode = if width == 16 {
            desc::UntypedSurface::SIMD16
        } else {
            desc::UntypedSurface::SIMD8
        };
        let port = desc::UntypedPort::of(self.hw);
        let send = desc::Send::of(self.hw);
        let f = desc::UntypedSurface::of(self.hw);
        for first in (0..dwords).step_by(4) {
            let count = (dwords - first).min(4);
            let address = self.temp_operand(Type::UD);
            let at = base + 4 * first as u32;
            if at == 0 {
                self.op(Opcode::Mov, address, vec![offset]);
            } else {
                self.alu2(Opcode::Add, address, offset, Src::imm_ud(at), true);
            }
            let message = self.message(
                v,
                port.sfid,
                &[
                    (send.mlen, per_comp),
                    (send.rlen, count as u32 * per_comp),
                    (port.message_type, port.read),
                    (f.simd_mode, simd_mode),
                    (f.disabled_channels, 0xF & !((1u32 << count) - 1)),
                    (desc::Surface::of(self.hw).binding_table_index, bti),
                ],
            )?;
            // One message per 16 channels.
            for half in 0..halves(self.width) {
                let data = self.program.new_vreg(message.rlen());
                let response = Operand::vector(data, 0, Type::UD);
                let descriptor = Src::imm_ud(message.descriptor());
                let send = self.on_half(
                    half,
                    Opcode::Send,
                    response,
                    vec![Src::Reg(address), descriptor],
                );
                send.send = Some(message);
                for k in 0..count {
                    let dst = part(self.dword(v, first + k), 16 * half);
                    // The response is this half's alone: read from its start. A boolean's 0
                    // or 1 negated is the register's 0 or all ones.
                    let response = match def.bits {
                        1 => Operand::vector(data, k as u32 * per_comp * 32, Type::D).negated(),
                        _ => Operand::vector(data, k as u32 * per_comp * 32, Type::UD),
                    };
                    self.emit(Inst {
                        group: 16 * half,
                        ..Inst::new(Opcode::Mov, width, Some(dst), vec![Src::Reg(response)])
                    });
                }
            }
        }
        Ok(())
    }

    /// The data port's code of an atomic intrinsic's operation.
    pub(super) fn atomic_operation(&self, v: Value, ii: &IntrinsicInst) -> Result<u32, LowerError> {
        let op = ii.index(IndexKind::AtomicOp).and_then(AtomicOp::from_index);
        op.and_then(atomic_opcode)
            .ok_or_else(|| self.error(v, "this atomic operation is not supported yet"))
    }

    /// Each channel's index as a word, for every channel of the dispatch (WE_all): the vector
    /// immediate 0-7, 8 added for each further 8 channels.
    pub(super) fn lane_numbers(&mut self) -> VReg {
        let width = self.width;
        let words = self.program.new_vreg((width as u32 * 2).div_ceil(32));
        let all = |mut inst: Inst| {
            inst.mask_all = true;
            inst
        };
        self.emit(all(Inst::new(
            Opcode::Mov,
            8,
            Some(Operand::vector(words, 0, Type::UW)),
            vec![Src::Imm(Type::UV, 0x7654_3210)],
        )));
        let mut done = 8;
        while done < width {
            self.emit(all(Inst::new(
                Opcode::Add,
                done,
                Some(Operand::vector(words, 2 * done as u32, Type::UW)),
                vec![
                    Src::Reg(Operand::vector(words, 0, Type::UW)),
                    Src::Imm(Type::UW, done as u64),
                ],
            )));
            done *= 2;
        }
        words
    }

    /// Each channel's index times 4, for every channel of the dispatch (WE_all): the
    /// [lane numbers](Lowering::lane_numbers) shifted into dwords.
    pub(super) fn lane_offsets(&mut self) -> VReg {
        let width = self.width;
        let words = self.lane_numbers();
        let all = |mut inst: Inst| {
            inst.mask_all = true;
            inst
        };
        let offsets = self.temp(1);
        self.emit(all(Inst::new(
            Opcode::Shl,
            width,
            Some(Operand::vector(offsets, 0, Type::UD)),
            vec![
                Src::Reg(Operand::vector(words, 0, Type::UW)),
                Src::imm_ud(2),
            ],
        )));
        offsets
    }

    /// Each channel's byte address in scratch of the dword at byte `base` + `offset` of its
    /// temporaries ([`Lowering::lane_offsets`]' layout).
    pub(super) fn scratch_address(&mut self, offset: Value, base: u32) -> Operand {
        let lanes = self
            .lane_offsets
            .expect("planned for shaders that use scratch");
        let lanes = Src::Reg(Operand::vector(lanes, 0, Type::UD));
        let width = self.width as u32;
        let address = self.temp_operand(Type::UD);
        match self.func.constant_u32(offset) {
            Some(offset) => {
                let first = (base + offset) * width;
                self.alu2(Opcode::Add, address, lanes, Src::imm_ud(first), true);
            }
            None => {
                let offset = self.read(offset, 0, Type::UD);
                let scaled = self.temp_operand(Type::UD);
                let shift = width.trailing_zeros();
                self.alu2(Opcode::Shl, scaled, offset, Src::imm_ud(shift), false);
                let sum = self.temp_operand(Type::UD);
                self.alu2(Opcode::Add, sum, Src::Reg(scaled), lanes, true);
                self.alu2(
                    Opcode::Add,
                    address,
                    Src::Reg(sum),
                    Src::imm_ud(base * width),
                    true,
                );
            }
        }
        address
    }

    /// A DWord scattered read into `dst` (or, with `data`, write) of each channel's dword at
    /// its scratch `address`, for the intrinsic `v`: data cache messages 3 and 11 on the
    /// stateless surface (Gen8+'s non-coherent 253, Gen7's 255), the header a copy of R0
    /// (which holds the thread's scratch base); one message per 16 channels.
    pub(super) fn scratch_message(
        &mut self,
        v: Value,
        address: Operand,
        dst: Operand,
        data: Option<Src>,
    ) -> Result<(), LowerError> {
        let width = self.width.min(16);
        let per_value = width as u32 / 8;
        let (message_type, rlen) = match data {
            Some(_) => (desc::DataCache::DWORD_SCATTERED_WRITE, 0),
            None => (desc::DataCache::DWORD_SCATTERED_READ, per_value),
        };
        let surface = if self.hw.is_gen8_plus() { 253 } else { 255 };
        let block_size = if width == 16 {
            desc::DwordScattered::SIMD16
        } else {
            desc::DwordScattered::SIMD8
        };
        let send = desc::Send::of(self.hw);
        let message = self.message(
            v,
            desc::DataCache::SFID,
            &[
                (send.mlen, 1 + per_value * (1 + data.is_some() as u32)),
                (send.rlen, rlen),
                (send.header_present, 1),
                (desc::DataCache::of(self.hw).message_type, message_type),
                (desc::DwordScattered::of(self.hw).block_size, block_size),
                (desc::Surface::of(self.hw).binding_table_index, surface),
            ],
        )?;
        for half in 0..halves(self.width) {
            let payload = self.program.new_vreg(message.mlen());
            self.copy_header(payload);
            let at_address = Operand::vector(payload, 32, Type::UD);
            self.on_half(half, Opcode::Mov, at_address, vec![Src::Reg(address)]);
            if let Some(value) = data {
                let at_data = Operand::vector(payload, 32 * (1 + per_value), Type::UD);
                self.on_half(half, Opcode::Mov, at_data, vec![value]);
            }
            let response = match data {
                Some(_) => Operand::null(Type::UD),
                None => Operand::vector(self.program.new_vreg(per_value), 0, Type::UD),
            };
            // The payload and response are this half's alone: read from their start.
            self.emit(Inst {
                group: 16 * half,
                send: Some(message),
                ..Inst::new(
                    Opcode::Send,
                    width,
                    Some(response),
                    vec![
                        Src::Reg(Operand::vector(payload, 0, Type::UD)),
                        Src::imm_ud(message.descriptor()),
                    ],
                )
            });
            if data.is_none() {
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(
                        Opcode::Mov,
                        width,
                        Some(part(dst, 16 * half)),
                        vec![Src::Reg(response)],
                    )
                });
            }
        }
        Ok(())
    }
}

/// The data port's code of an atomic operation (Mesa's BRW_AOP_*), for those the backend emits.
fn atomic_opcode(op: AtomicOp) -> Option<u32> {
    Some(match op {
        AtomicOp::Iand => 1,
        AtomicOp::Ior => 2,
        AtomicOp::Ixor => 3,
        AtomicOp::Xchg => 4,
        AtomicOp::Iadd => 7,
        AtomicOp::Imax => 10,
        AtomicOp::Imin => 11,
        AtomicOp::Umax => 12,
        AtomicOp::Umin => 13,
        AtomicOp::Cmpxchg => 14,
        _ => return None,
    })
}
