//! Subgroup operations. A subgroup is a thread's channels (as many as the dispatch width),
//! channel `n` lane `n`; its active lanes are the channels the execution mask enables.
//!
//! Ballots and votes reduce across channels: each enabled channel's bit `1 << lane` is
//! written into a register cleared in every channel first (an instruction with WE_all), and
//! an `or` tree with WE_all folds the register to one dword. A read of another lane is a
//! ladder over the lanes (compare the index, move that lane's element), reading a copy of the
//! value in which the disabled channels are 0, so that a read of an inactive lane gives 0, as
//! the interpreter has it. Reductions and scans run a ladder too: under WE_all, each lane's
//! element of a copy whose disabled channels hold the operation's identity is combined into one
//! dword in lane order, its running value kept per lane for a scan; the enabled channels then
//! take the result.

use super::{LowerError, Lowering};
use crate::encoding::Predicate;
use crate::isa::{CondMod, Opcode, Region, Type};
use crate::lir::{Base, Inst, Operand, Src, VReg};
use shrew_engine::ir::{IntrinsicInst, Value};
use shrew_engine::ops::intrinsics::{reduction_identity, reduction_op};
use shrew_engine::ops::{AluOp, IndexKind, Intrinsic};

impl Lowering<'_> {
    pub(super) fn subgroup(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let width = self.width as u32;
        match ii.op {
            Intrinsic::LoadSubgroupInvocation => {
                let lanes = self.lane_indices();
                let dst = self.comp(v, 0, Type::UD);
                self.op(Opcode::Mov, dst, vec![Src::Reg(lanes)]);
            }
            Intrinsic::LoadSubgroupSize => {
                let dst = self.comp(v, 0, Type::UD);
                self.op(Opcode::Mov, dst, vec![Src::imm_ud(width)]);
            }
            Intrinsic::LoadSubgroupEqMask
            | Intrinsic::LoadSubgroupGeMask
            | Intrinsic::LoadSubgroupGtMask
            | Intrinsic::LoadSubgroupLeMask
            | Intrinsic::LoadSubgroupLtMask => {
                let eq = self.lane_bits();
                let dst = self.comp(v, 0, Type::UD);
                let all = u32::MAX >> (32 - width);
                match ii.op {
                    Intrinsic::LoadSubgroupEqMask => {
                        self.op(Opcode::Mov, dst, vec![Src::Reg(eq)]);
                    }
                    // The lanes from this one up: all but those below (lt = eq - 1).
                    Intrinsic::LoadSubgroupGeMask | Intrinsic::LoadSubgroupGtMask => {
                        let lt = self.temp_operand(Type::UD);
                        self.op(Opcode::Add, lt, vec![Src::Reg(eq), Src::imm_d(-1)]);
                        let below = if ii.op == Intrinsic::LoadSubgroupGtMask {
                            let le = self.temp_operand(Type::UD);
                            self.op(Opcode::Or, le, vec![Src::Reg(lt), Src::Reg(eq)]);
                            le
                        } else {
                            lt
                        };
                        self.op(Opcode::Xor, dst, vec![Src::Reg(below), Src::imm_ud(all)]);
                    }
                    Intrinsic::LoadSubgroupLeMask => {
                        let lt = self.temp_operand(Type::UD);
                        self.op(Opcode::Add, lt, vec![Src::Reg(eq), Src::imm_d(-1)]);
                        self.op(Opcode::Or, dst, vec![Src::Reg(lt), Src::Reg(eq)]);
                    }
                    _ => {
                        self.op(Opcode::Add, dst, vec![Src::Reg(eq), Src::imm_d(-1)]);
                    }
                }
                self.zero_components(v, 1..4);
            }
            Intrinsic::Ballot => {
                let cond = self.read(ii.srcs[0], 0, Type::UD);
                let bits = self.active_bits(Some(cond));
                let dst = self.comp(v, 0, Type::UD);
                self.op(Opcode::Mov, dst, vec![Src::Reg(bits)]);
                self.zero_components(v, 1..4);
            }
            Intrinsic::VoteAll | Intrinsic::VoteAny | Intrinsic::VoteAllEqual => {
                let cond = self.read(ii.srcs[0], 0, Type::UD);
                let trues = self.active_bits(Some(cond));
                let dst = self.comp(v, 0, Type::D);
                let compare = |this: &mut Self, dst: Operand, cond: CondMod, other: Src| {
                    let cmp = this.op(Opcode::Cmp, dst, vec![Src::Reg(trues), other]);
                    cmp.cond = Some(cond);
                };
                match ii.op {
                    Intrinsic::VoteAny => compare(self, dst, CondMod::Nz, Src::imm_ud(0)),
                    Intrinsic::VoteAll => {
                        let active = self.active_bits(None);
                        compare(self, dst, CondMod::Z, Src::Reg(active));
                    }
                    _ => {
                        // All false, or all true.
                        let active = self.active_bits(None);
                        let none = self.temp_operand(Type::D);
                        compare(self, none, CondMod::Z, Src::imm_ud(0));
                        let all = self.temp_operand(Type::D);
                        compare(self, all, CondMod::Z, Src::Reg(active));
                        self.op(Opcode::Or, dst, vec![Src::Reg(none), Src::Reg(all)]);
                    }
                }
            }
            Intrinsic::ReadFirstInvocation => {
                let active = self.active_bits(None);
                let first = Operand::scalar(Base::Vgrf(self.scalar_temp()), 0, Type::UD);
                self.emit(Inst {
                    mask_all: true,
                    ..Inst::new(Opcode::Fbl, 1, Some(first), vec![Src::Reg(active)])
                });
                self.read_lanes(v, ii.srcs[0], Src::Reg(first));
            }
            Intrinsic::ReadInvocation => {
                let index = self.read(ii.srcs[1], 0, Type::UD);
                let index = self.in_register(index);
                self.read_lanes(v, ii.srcs[0], index);
            }
            Intrinsic::Reduce | Intrinsic::InclusiveScan | Intrinsic::ExclusiveScan => {
                self.reduction(v, ii)?;
            }
            _ => unreachable!("{} is not a subgroup operation", ii.op.name()),
        }
        Ok(())
    }

    /// A reduction or scan of `ii`'s source with its `reduction_op`, component by component.
    fn reduction(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let op = (ii.index(IndexKind::ReductionOp))
            .and_then(reduction_op)
            .ok_or_else(|| self.error(v, "a reduction without its operation"))?;
        if self.is_wide(ii.srcs[0]) {
            return Err(self.error(v, "64-bit subgroup reductions are not supported yet"));
        }
        // Booleans are dwords of all ones or zero here: their identities are the 32-bit ones.
        let identity = reduction_identity(op, 32) as u32;
        let (opcode, ty, cond) = match op {
            AluOp::Iadd => (Opcode::Add, Type::D, None),
            AluOp::Imul => (Opcode::Mul, Type::D, None),
            AluOp::Fadd => (Opcode::Add, Type::F, None),
            AluOp::Fmul => (Opcode::Mul, Type::F, None),
            AluOp::Imin => (Opcode::Sel, Type::D, Some(CondMod::L)),
            AluOp::Umin => (Opcode::Sel, Type::UD, Some(CondMod::L)),
            AluOp::Fmin => (Opcode::Sel, Type::F, Some(CondMod::L)),
            AluOp::Imax => (Opcode::Sel, Type::D, Some(CondMod::Ge)),
            AluOp::Umax => (Opcode::Sel, Type::UD, Some(CondMod::Ge)),
            AluOp::Fmax => (Opcode::Sel, Type::F, Some(CondMod::Ge)),
            AluOp::Iand => (Opcode::And, Type::UD, None),
            AluOp::Ior => (Opcode::Or, Type::UD, None),
            _ => (Opcode::Xor, Type::UD, None),
        };
        // The identity as an immediate of the operation's type (a move converts between types).
        let identity = match ty {
            Type::F => Src::imm_f(f32::from_bits(identity)),
            _ => Src::imm_ud(identity),
        };
        let comps = self.func.value_type(ii.srcs[0]).map_or(1, |t| t.comps);
        for c in 0..comps {
            let source = self.read(ii.srcs[0], c, ty);
            let mine = self.temp_operand(ty);
            self.emit(Inst {
                mask_all: true,
                ..Inst::new(Opcode::Mov, self.width, Some(mine), vec![identity])
            });
            self.op(Opcode::Mov, mine, vec![source]);
            let acc = Operand::scalar(Base::Vgrf(self.scalar_temp()), 0, ty);
            self.emit(Inst {
                mask_all: true,
                ..Inst::new(Opcode::Mov, 1, Some(acc), vec![identity])
            });
            let scan = self.temp_operand(ty);
            for lane in 0..self.width as u32 {
                let element = Operand {
                    offset: mine.offset + 4 * lane,
                    region: Region::SCALAR,
                    ..mine
                };
                let at_lane = Operand {
                    offset: scan.offset + 4 * lane,
                    ..scan
                };
                let keep = |this: &mut Self| {
                    this.emit(Inst {
                        mask_all: true,
                        ..Inst::new(Opcode::Mov, 1, Some(at_lane), vec![Src::Reg(acc)])
                    });
                };
                if ii.op == Intrinsic::ExclusiveScan {
                    keep(self);
                }
                self.emit(Inst {
                    mask_all: true,
                    cond,
                    ..Inst::new(opcode, 1, Some(acc), vec![Src::Reg(acc), Src::Reg(element)])
                });
                if ii.op == Intrinsic::InclusiveScan {
                    keep(self);
                }
            }
            let result = if ii.op == Intrinsic::Reduce {
                acc
            } else {
                scan
            };
            let dst = self.comp(v, c, ty);
            self.op(Opcode::Mov, dst, vec![Src::Reg(result)]);
        }
        Ok(())
    }

    /// Components `range` of `v`, as 0.
    fn zero_components(&mut self, v: Value, range: std::ops::Range<u8>) {
        for c in range {
            let dst = self.comp(v, c, Type::UD);
            self.op(Opcode::Mov, dst, vec![Src::imm_ud(0)]);
        }
    }

    /// A one-GRF register for scalars.
    fn scalar_temp(&mut self) -> VReg {
        self.program.new_vreg(1)
    }

    /// Each channel's lane number, as dwords.
    fn lane_indices(&mut self) -> Operand {
        let words = self.lane_numbers();
        let lanes = self.temp_operand(Type::UD);
        self.op(
            Opcode::Mov,
            lanes,
            vec![Src::Reg(Operand::vector(words, 0, Type::UW))],
        );
        lanes
    }

    /// Each channel's bit, `1 << lane`.
    fn lane_bits(&mut self) -> Operand {
        let lanes = self.lane_indices();
        let bits = self.temp_operand(Type::UD);
        self.op(Opcode::Mov, bits, vec![Src::imm_ud(1)]);
        self.op(Opcode::Shl, bits, vec![Src::Reg(bits), Src::Reg(lanes)]);
        bits
    }

    /// The bits of the enabled channels whose `cond` (a boolean, all ones or zero) is true,
    /// or of all enabled channels, as one dword (a scalar operand).
    fn active_bits(&mut self, cond: Option<Src>) -> Operand {
        let bits = self.lane_bits();
        let mine = self.temp_operand(Type::UD);
        self.emit(Inst {
            mask_all: true,
            ..Inst::new(Opcode::Mov, self.width, Some(mine), vec![Src::imm_ud(0)])
        });
        match cond {
            Some(cond) => self.op(Opcode::And, mine, vec![Src::Reg(bits), cond]),
            None => self.op(Opcode::Mov, mine, vec![Src::Reg(bits)]),
        };
        // Halve the channels until one dword holds the `or` of them all.
        let folded = self.scalar_temp();
        let mut from = mine;
        let mut n = self.width as u32;
        while n > 1 {
            n /= 2;
            let region = match n {
                1 => Region::SCALAR,
                2 | 4 => Region::new(n as u8, n as u8, 1),
                _ => Region::new(8, 8, 1),
            };
            let low = Operand { region, ..from };
            let high = Operand {
                offset: from.offset + 4 * n,
                ..low
            };
            let dst = Operand::vector(folded, 0, Type::UD);
            self.emit(Inst {
                mask_all: true,
                ..Inst::new(
                    Opcode::Or,
                    n as u8,
                    Some(dst),
                    vec![Src::Reg(low), Src::Reg(high)],
                )
            });
            from = dst;
        }
        Operand::scalar(Base::Vgrf(folded), 0, Type::UD)
    }

    /// `v` = each channel's `value` at the lane `index` names (an immediate or register; 0
    /// for a lane that is not active or not in the thread), dword by dword.
    fn read_lanes(&mut self, v: Value, value: Value, index: Src) {
        let comps = self.func.value_type(value).map_or(1, |t| t.comps);
        let dwords = comps * if self.is_wide(value) { 2 } else { 1 };
        for k in 0..dwords {
            let source = self.read_dword(value, k);
            let active = self.temp_operand(Type::UD);
            self.emit(Inst {
                mask_all: true,
                ..Inst::new(Opcode::Mov, self.width, Some(active), vec![Src::imm_ud(0)])
            });
            self.op(Opcode::Mov, active, vec![source]);
            let dst = self.dword(v, k);
            self.op(Opcode::Mov, dst, vec![Src::imm_ud(0)]);
            for lane in 0..self.width as u32 {
                let cmp = self.op(
                    Opcode::Cmp,
                    Operand::null(Type::UD),
                    vec![index, Src::imm_ud(lane)],
                );
                cmp.cond = Some(CondMod::Z);
                cmp.flag = 0;
                let element = Operand {
                    offset: active.offset + 4 * lane,
                    region: Region::SCALAR,
                    ..active
                };
                let mov = self.op(Opcode::Mov, dst, vec![Src::Reg(element)]);
                mov.predicate = Some(Predicate {
                    control: 1,
                    inverse: false,
                });
                mov.flag = 0;
            }
        }
    }
}
