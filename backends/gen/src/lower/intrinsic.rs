//! Intrinsics: each sent to the part that lowers it (memory, outputs, barriers, discards),
//! except the reads of what the payload holds, lowered here: inputs (attributes, or planes
//! interpolated with `pln`), `gl_FragCoord` and the compute IDs.

use super::output::builtin_slot;
use super::payload::SYSTEM_VALUES_SLOT;
use super::{LIVE_FLAG, LowerError, Lowering, Surface, halves};
use crate::encoding::Predicate;
use crate::isa::{Opcode, Region, Type};
use crate::lir::{Base, Inst, Operand, Src};
use shrew_engine::ir::{Builtin, Deref, InstKind, Interp, IntrinsicInst, Stage, Value};
use shrew_engine::ops::{IndexKind, Intrinsic};
use shrew_engine::passes::lower_io::interp_of;
use std::collections::BTreeMap;

impl Lowering<'_> {
    pub(super) fn intrinsic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let comps = self.func.inst(v).def.map_or(0, |d| d.comps);
        match ii.op {
            Intrinsic::LoadConstant => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                self.pull(v, Surface::ConstantData, base, ii.srcs[0])
            }
            Intrinsic::LoadSsbo => {
                let binding = self.ssbo_binding(v, ii.srcs[0])?;
                self.pull(v, Surface::Ssbo(binding), 0, ii.srcs[1])
            }
            Intrinsic::StoreSsbo => {
                let binding = self.ssbo_binding(v, ii.srcs[1])?;
                for (byte, data) in self.store_writes(v, ii.srcs[0], ii)? {
                    let at = (ii.srcs[2], byte);
                    self.untyped_write(v, Surface::Ssbo(binding), at, data, None)?;
                }
                Ok(())
            }
            Intrinsic::SsboAtomic | Intrinsic::SsboAtomicSwap => {
                let binding = self.ssbo_binding(v, ii.srcs[0])?;
                let aop = self.atomic_operation(v, ii)?;
                // A swap's two operands (the comparand, then the new value) follow the
                // address in its payload.
                let data = ii.srcs[2..]
                    .iter()
                    .map(|&s| self.read(s, 0, Type::UD))
                    .collect();
                self.untyped_write(v, Surface::Ssbo(binding), (ii.srcs[1], 0), data, Some(aop))
            }
            Intrinsic::LoadShared => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                self.pull(v, Surface::Shared, base, ii.srcs[0])
            }
            Intrinsic::StoreShared => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                for (byte, data) in self.store_writes(v, ii.srcs[0], ii)? {
                    let at = (ii.srcs[1], base + byte);
                    self.untyped_write(v, Surface::Shared, at, data, None)?;
                }
                Ok(())
            }
            Intrinsic::SharedAtomic | Intrinsic::SharedAtomicSwap => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let aop = self.atomic_operation(v, ii)?;
                let data = ii.srcs[1..]
                    .iter()
                    .map(|&s| self.read(s, 0, Type::UD))
                    .collect();
                self.untyped_write(v, Surface::Shared, (ii.srcs[0], base), data, Some(aop))
            }
            Intrinsic::Barrier => self.barrier(v, ii),
            Intrinsic::LoadScratch => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let def = self.func.inst(v).def.expect("loads define a value");
                if def.bits != 32 {
                    return Err(self.error(v, "only 32-bit scratch loads are supported"));
                }
                for c in 0..comps {
                    let address = self.scratch_address(ii.srcs[0], base + 4 * c as u32);
                    let dst = self.comp(v, c, Type::UD);
                    self.scratch_message(v, address, dst, None)?;
                }
                Ok(())
            }
            Intrinsic::StoreScratch => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let data = ii.srcs[0];
                let ty = self.func.value_type(data).expect("stores store a value");
                if ty.bits != 32 {
                    return Err(self.error(v, "only 32-bit scratch stores are supported"));
                }
                let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
                for c in (0..ty.comps).filter(|c| mask >> c & 1 != 0) {
                    let address = self.scratch_address(ii.srcs[1], base + 4 * c as u32);
                    let value = self.read(data, c, Type::UD);
                    self.scratch_message(v, address, Operand::null(Type::UD), Some(value))?;
                }
                Ok(())
            }
            Intrinsic::LoadLocalInvocationId => {
                let first = self.payload.local_ids.expect("planned with the payload");
                for c in 0..comps {
                    let grf = first + c * self.width / 8;
                    let dst = self.comp(v, c, Type::UD);
                    self.op(
                        Opcode::Mov,
                        dst,
                        vec![Src::Reg(Operand::payload(grf, 0, Type::UD))],
                    );
                }
                Ok(())
            }
            Intrinsic::LoadWorkgroupId => {
                // R0.1, R0.6 and R0.7 of the thread's header.
                for (c, dword) in [1, 6, 7].into_iter().enumerate().take(comps as usize) {
                    let dst = self.comp(v, c as u8, Type::UD);
                    let id = Operand::scalar(Base::Fixed(0), 4 * dword, Type::UD);
                    self.op(Opcode::Mov, dst, vec![Src::Reg(id)]);
                }
                Ok(())
            }
            Intrinsic::LoadNumWorkgroups => {
                let grf = self
                    .payload
                    .num_workgroups
                    .expect("planned with the payload");
                for c in 0..comps {
                    let dst = self.comp(v, c, Type::UD);
                    let n = Operand::scalar(Base::Fixed(grf), 4 * c as u32, Type::UD);
                    self.op(Opcode::Mov, dst, vec![Src::Reg(n)]);
                }
                Ok(())
            }
            Intrinsic::LoadUniform | Intrinsic::LoadUbo if self.push_constant(v, ii).is_none() => {
                if ii.op == Intrinsic::LoadUniform {
                    let base = ii.index(IndexKind::Base).unwrap_or(0);
                    return self.pull(v, Surface::UniformBlock, base, ii.srcs[0]);
                }
                let Some(binding) = self.func.constant_u32(ii.srcs[0]) else {
                    return Err(self.error(v, "UBOs at run-time bindings are not supported yet"));
                };
                self.pull(v, Surface::Ubo(binding), 0, ii.srcs[1])
            }
            Intrinsic::LoadUniform | Intrinsic::LoadUbo => {
                // Reads go to the push constants; a register copy for copies that need one.
                for k in 0..comps * self.dwords_per_comp(v) {
                    let src = self.read_dword(v, k);
                    let dst = self.dword(v, k);
                    self.op(Opcode::Mov, dst, vec![src]);
                }
                Ok(())
            }
            Intrinsic::LoadInput => {
                if self.func.constant_u32(ii.srcs[0]) != Some(0) {
                    return Err(self.error(v, "dynamically indexed inputs are not supported yet"));
                }
                // Dword `k` of the load is dword `first + k` from the slot's start: a 64-bit
                // value's components take two each and may go on into the next slot.
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0);
                let place = |k: u8| (base + (first + k as u32) / 4, (first + k as u32) % 4);
                let dwords = comps * self.dwords_per_comp(v);
                if self.shader.stage == Stage::Vertex {
                    let mut pulled = BTreeMap::new();
                    for k in 0..dwords {
                        let (slot, comp) = place(k);
                        let value = match self.payload.attribute(slot, comp) {
                            Some(attribute) => attribute,
                            None => {
                                let Some(oword) = self.payload.pulled_attribute(slot) else {
                                    return Err(self.error(v, "the input has no payload slot"));
                                };
                                let slot_data = match pulled.get(&oword) {
                                    Some(&data) => data,
                                    None => {
                                        let data = self.urb_read(v, oword)?;
                                        pulled.insert(oword, data);
                                        data
                                    }
                                };
                                Operand::vector(slot_data, 32 * comp, Type::UD)
                            }
                        };
                        let dst = self.dword(v, k);
                        self.op(Opcode::Mov, dst, vec![Src::Reg(value)]);
                    }
                    return Ok(());
                }
                let interp = interp_of(self.shader, base);
                let bary = match interp {
                    Interp::Flat => None,
                    Interp::NoPerspective => self.payload.linear_bary,
                    _ => self.payload.perspective_bary,
                };
                if bary.is_some() && self.is_wide(v) {
                    return Err(self.error(v, "64-bit inputs must be flat"));
                }
                for k in 0..dwords {
                    let (slot, comp) = place(k);
                    let Some((grf, offset)) = self.payload.plane(slot, comp) else {
                        return Err(self.error(v, "the input has no payload slot"));
                    };
                    match bary {
                        None => {
                            let dst = self.dword(v, k);
                            let constant = Operand::scalar(Base::Fixed(grf), offset + 12, Type::UD);
                            self.op(Opcode::Mov, dst, vec![Src::Reg(constant)]);
                        }
                        Some(bary) => {
                            let dst = self.comp(v, k, Type::F);
                            let plane = Operand {
                                region: Region::new(0, 4, 1),
                                ..Operand::scalar(Base::Fixed(grf), offset, Type::F)
                            };
                            let bary = Operand::payload(bary, 0, Type::F);
                            self.op(Opcode::Pln, dst, vec![Src::Reg(plane), Src::Reg(bary)]);
                        }
                    }
                }
                Ok(())
            }
            Intrinsic::StoreOutput => {
                if self.func.constant_u32(ii.srcs[1]) != Some(0) {
                    return Err(self.error(v, "dynamically indexed outputs are not supported yet"));
                }
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0) as u8;
                self.store_output(v, slot, first, ii.srcs[0], ii)
            }
            // `lower-io` leaves built-in outputs as variables: a vertex shader's position and
            // point size go to their slots.
            Intrinsic::StoreDeref if self.shader.stage == Stage::Vertex => {
                let builtin = match &self.func.inst(ii.srcs[0]).kind {
                    InstKind::Deref(Deref::Var(var)) => {
                        self.shader.variables[var.0 as usize].builtin
                    }
                    _ => None,
                };
                let slot = match builtin {
                    Some(b @ (Builtin::Position | Builtin::PointSize)) => {
                        builtin_slot(self.shader, b)
                    }
                    _ => None,
                };
                let slot = slot.ok_or_else(|| {
                    self.error(
                        v,
                        "only stores of gl_Position and gl_PointSize are supported",
                    )
                })?;
                self.store_output(v, slot, 0, ii.srcs[1], ii)
            }
            Intrinsic::LoadFragCoord => self.frag_coord(v),
            Intrinsic::ImageDerefLoad | Intrinsic::ImageDerefStore => self.typed_surface(v, ii),
            Intrinsic::ImageDerefAtomic | Intrinsic::ImageDerefAtomicSwap => {
                self.typed_atomic(v, ii)
            }
            Intrinsic::LoadVertexId if self.shader.stage == Stage::Vertex => {
                let value = self.payload.attribute(SYSTEM_VALUES_SLOT, 0);
                let value =
                    value.ok_or_else(|| self.error(v, "the vertex ID has no payload slot"))?;
                let dst = self.dword(v, 0);
                self.op(Opcode::Mov, dst, vec![Src::Reg(value)]);
                Ok(())
            }
            Intrinsic::LoadPrimitiveId if self.shader.stage == Stage::Fragment => {
                let plane = self.payload.plane(SYSTEM_VALUES_SLOT, 0);
                let (grf, offset) =
                    plane.ok_or_else(|| self.error(v, "the primitive ID has no payload slot"))?;
                let dst = self.dword(v, 0);
                let constant = Operand::scalar(Base::Fixed(grf), offset + 12, Type::UD);
                self.op(Opcode::Mov, dst, vec![Src::Reg(constant)]);
                Ok(())
            }
            Intrinsic::Discard | Intrinsic::Terminate | Intrinsic::Demote => {
                self.kill(None);
                Ok(())
            }
            Intrinsic::DiscardIf | Intrinsic::TerminateIf | Intrinsic::DemoteIf => {
                let cond = self.read(ii.srcs[0], 0, Type::D);
                self.kill(Some(cond));
                Ok(())
            }
            // A helper is a channel outside the live pixels (f1.0): not covered, or discarded.
            Intrinsic::IsHelperInvocation if self.shader.stage == Stage::Fragment => {
                let dst = self.comp(v, 0, Type::D);
                self.op(Opcode::Mov, dst, vec![Src::imm_d(-1)]);
                let live = self.op(Opcode::Mov, dst, vec![Src::imm_d(0)]);
                live.predicate = Some(Predicate {
                    control: 1,
                    inverse: false,
                });
                live.flag = LIVE_FLAG;
                Ok(())
            }
            Intrinsic::LoadFrontFace => {
                // Bit 15 of R0.0 is set for a back-facing primitive: the word shifted right
                // arithmetically by 15 is all ones there, and its complement the boolean.
                let back = self.temp_operand(Type::D);
                let r0 = Operand::scalar(Base::Fixed(0), 0, Type::W);
                self.op(Opcode::Asr, back, vec![Src::Reg(r0), Src::imm_d(15)]);
                let dst = self.comp(v, 0, Type::D);
                self.op(Opcode::Not, dst, vec![Src::Reg(back)]);
                Ok(())
            }
            op if op.is_subgroup() && self.payload.simd4x2 => Err(self.error(
                v,
                "Gen7/7.5 run vertex shaders two vertices to a thread (SIMD4x2), which has no \
                 subgroups",
            )),
            op if op.is_subgroup() => self.subgroup(v, ii),
            _ => Err(self.error(v, "this intrinsic is not supported yet")),
        }
    }

    /// `gl_FragCoord`: pixel centres from the subspan origins in R1, depth and 1/w from the
    /// payload.
    fn frag_coord(&mut self, v: Value) -> Result<(), LowerError> {
        // R1.2 + 2n holds subspan n's upper-left x and y as words: one origin per 4 channels,
        // plus 0,1,0,1 (x) or 0,0,1,1 (y) inside the quad.
        for (c, word, pattern) in [(0u8, 4u32, 0x1010_1010u64), (1, 5, 0x1100_1100)] {
            let ints = self.temp_operand(Type::UW);
            let ints = Operand {
                region: Region::new(8, 8, 1),
                ..ints
            };
            // Each 16 channels' subspans are in their half's R1.
            for half in 0..halves(self.width) {
                let origin = Operand {
                    region: Region::new(2, 4, 0),
                    ..Operand::scalar(Base::Fixed(1 + half), word * 2, Type::UW)
                };
                let width = self.width.min(16);
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(
                        Opcode::Add,
                        width,
                        Some(Operand {
                            offset: 32 * half as u32,
                            ..ints
                        }),
                        vec![Src::Reg(origin), Src::Imm(Type::V, pattern)],
                    )
                });
            }
            let dst = self.comp(v, c, Type::F);
            self.op(Opcode::Add, dst, vec![Src::Reg(ints), Src::imm_f(0.5)]);
        }
        for (c, grf) in [(2u8, self.payload.source_depth), (3, self.payload.source_w)] {
            let grf = grf.expect("planned with the payload");
            let dst = self.comp(v, c, Type::F);
            let src = Operand::payload(grf, 0, Type::F);
            self.op(Opcode::Mov, dst, vec![Src::Reg(src)]);
        }
        Ok(())
    }
}
