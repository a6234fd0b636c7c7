//! ALU operations: each IR operation component by component as Gen instructions, a vector
//! whose register a source shares computed into fresh registers first.

use super::{LowerError, Lowering};
use crate::encoding::Predicate;
use crate::isa::{CondMod, MathFn, Opcode, Region, Type};
use crate::lir::{Operand, Src};
use shrew_engine::ir::{AluSrc, Value};
use shrew_engine::ops::AluOp;

impl Lowering<'_> {
    pub(super) fn alu(
        &mut self,
        v: Value,
        alu: &shrew_engine::ir::Alu,
        comps: u8,
    ) -> Result<(), LowerError> {
        // A vector sharing its register with a source (out-of-SSA coalesced them, as a loop's
        // `r += x`) is written in place, component by component, when each component reads only
        // itself of that source; else (a swizzle, `r = r.yzwx`, or a dot product) it is computed
        // into fresh registers, then copied, as writing it in place would clobber components
        // still to be read.
        let reg = self.regs.reg_of(v);
        let aliased = |s: &AluSrc| self.regs.reg_of(s.value) == reg;
        let in_place = match alu.op {
            AluOp::Fdot2 | AluOp::Fdot3 | AluOp::Fdot4 => !alu.srcs.iter().any(aliased),
            op if op.is_vec() => (alu.srcs.iter().enumerate())
                .all(|(i, s)| !aliased(s) || s.swizzle[0] as usize == i),
            _ => (alu.srcs.iter())
                .all(|s| !aliased(s) || (0..comps).all(|c| s.swizzle[c as usize] == c)),
        };
        if comps > 1 && !in_place {
            let temps = (0..comps).map(|_| self.temp(1)).collect();
            self.staged = Some((v, temps));
            let lowered = self.alu_in_place(v, alu, comps);
            let (_, temps) = self.staged.take().expect("staged above");
            lowered?;
            for (c, t) in temps.into_iter().enumerate() {
                let dst = self.comp(v, c as u8, Type::UD);
                self.op(
                    Opcode::Mov,
                    dst,
                    vec![Src::Reg(Operand::vector(t, 0, Type::UD))],
                );
            }
            return Ok(());
        }
        self.alu_in_place(v, alu, comps)
    }

    fn alu_in_place(
        &mut self,
        v: Value,
        alu: &shrew_engine::ir::Alu,
        comps: u8,
    ) -> Result<(), LowerError> {
        use AluOp as A;
        let srcs = &alu.srcs;
        let src_bits: Vec<u8> = srcs
            .iter()
            .map(|s| self.func.value_type(s.value).map_or(32, |t| t.bits))
            .collect();
        if src_bits.iter().any(|&b| b != 32 && b != 1) {
            return Err(self.error(v, "only 32-bit and boolean sources are supported yet"));
        }
        match alu.op {
            A::Fdot2 | A::Fdot3 | A::Fdot4 => {
                let n = match alu.op {
                    A::Fdot2 => 2,
                    A::Fdot3 => 3,
                    _ => 4,
                };
                let dst = self.comp(v, 0, Type::F);
                let a0 = self.read_alu(&srcs[0], 0, Type::F);
                let b0 = self.read_alu(&srcs[1], 0, Type::F);
                self.alu2(Opcode::Mul, dst, a0, b0, true);
                for c in 1..n {
                    let a = self.read_alu(&srcs[0], c, Type::F);
                    let b = self.read_alu(&srcs[1], c, Type::F);
                    self.alu3(Opcode::Mad, dst, [Src::Reg(dst), a, b]);
                }
                return Ok(());
            }
            op if op.is_vec() || op == A::Mov => {
                for c in 0..comps {
                    let src = if op == A::Mov {
                        self.read_alu(&srcs[0], c, Type::UD)
                    } else {
                        self.read_alu(&srcs[c as usize], 0, Type::UD)
                    };
                    let dst = self.comp(v, c, Type::UD);
                    self.op(Opcode::Mov, dst, vec![src]);
                }
                return Ok(());
            }
            _ => {}
        }
        for c in 0..comps {
            self.alu_comp(v, alu, c)?;
        }
        Ok(())
    }

    /// Component `c` of a per-component ALU operation.
    fn alu_comp(&mut self, v: Value, alu: &shrew_engine::ir::Alu, c: u8) -> Result<(), LowerError> {
        use AluOp as A;
        let srcs = &alu.srcs;
        let f = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, Type::F);
        let d = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, Type::D);
        let ud = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, Type::UD);
        let dst_f = self.comp(v, c, Type::F);
        let dst_d = dst_f.retype(Type::D);
        let dst_ud = dst_f.retype(Type::UD);
        let modifier = |s: &mut Self, src: Src, dst: Operand, neg: bool, abs: bool| {
            let Src::Reg(r) = s.in_register(src) else {
                unreachable!("in a register")
            };
            let r = if abs { r.absolute() } else { r };
            let r = if neg { r.negated() } else { r };
            s.op(Opcode::Mov, dst, vec![Src::Reg(r)]);
        };
        // A comparison writing all ones or zero to `dst`; an immediate goes second.
        let cmp = |s: &mut Self, dst: Operand, a: Src, b: Src, cond: CondMod| {
            let (a, b, cond) = if a.is_imm() && !b.is_imm() {
                (b, a, swapped(cond))
            } else {
                (s.in_register(a), b, cond)
            };
            s.op(Opcode::Cmp, dst, vec![a, b]).cond = Some(cond);
        };
        match alu.op {
            A::Fadd => {
                let (a, b) = (f(self, 0), f(self, 1));
                self.alu2(Opcode::Add, dst_f, a, b, true);
            }
            A::Fsub => {
                let (a, b) = (f(self, 0), f(self, 1));
                let b = negate_src(b);
                self.alu2(Opcode::Add, dst_f, a, b, true);
            }
            A::Fmul => {
                let (a, b) = (f(self, 0), f(self, 1));
                self.alu2(Opcode::Mul, dst_f, a, b, true);
            }
            A::Ffma => {
                let (a, b, c2) = (f(self, 0), f(self, 1), f(self, 2));
                self.alu3(Opcode::Mad, dst_f, [c2, a, b]);
            }
            A::Flrp => {
                let (x, y, t) = (f(self, 0), f(self, 1), f(self, 2));
                // lrp(t, y, x) = t*y + (1-t)*x
                self.alu3(Opcode::Lrp, dst_f, [t, y, x]);
            }
            A::Fneg => {
                let a = f(self, 0);
                modifier(self, a, dst_f, true, false);
            }
            A::Fabs => {
                let a = f(self, 0);
                modifier(self, a, dst_f, false, true);
            }
            A::Fsat => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]).saturate = true;
            }
            A::Fmin | A::Fmax | A::Imin | A::Imax | A::Umin | A::Umax => {
                let ty = match alu.op {
                    A::Fmin | A::Fmax => Type::F,
                    A::Imin | A::Imax => Type::D,
                    _ => Type::UD,
                };
                let (a, b) = (
                    self.read_alu(&srcs[0], c, ty),
                    self.read_alu(&srcs[1], c, ty),
                );
                let cond = if matches!(alu.op, A::Fmin | A::Imin | A::Umin) {
                    CondMod::L
                } else {
                    CondMod::Ge
                };
                self.alu2(Opcode::Sel, dst_f.retype(ty), a, b, true).cond = Some(cond);
            }
            A::Ffloor => {
                let a = f(self, 0);
                self.op(Opcode::Rndd, dst_f, vec![a]);
            }
            A::Fceil => {
                // ceil(x) = -floor(-x)
                let a = f(self, 0);
                let neg = negate_src(a);
                let t = self.temp_operand(Type::F);
                self.op(Opcode::Rndd, t, vec![neg]);
                self.op(Opcode::Mov, dst_f, vec![Src::Reg(t.negated())]);
            }
            A::Ftrunc => {
                let a = f(self, 0);
                self.op(Opcode::Rndz, dst_f, vec![a]);
            }
            A::FroundEven => {
                let a = f(self, 0);
                self.op(Opcode::Rnde, dst_f, vec![a]);
            }
            A::Ffract => {
                let a = f(self, 0);
                self.op(Opcode::Frc, dst_f, vec![a]);
            }
            A::Frcp | A::Frsq | A::Fsqrt | A::Fexp2 | A::Flog2 | A::Fsin | A::Fcos => {
                let function = match alu.op {
                    A::Frcp => MathFn::Inv,
                    A::Frsq => MathFn::Rsq,
                    A::Fsqrt => MathFn::Sqrt,
                    A::Fexp2 => MathFn::Exp,
                    A::Flog2 => MathFn::Log,
                    A::Fsin => MathFn::Sin,
                    _ => MathFn::Cos,
                };
                let a = f(self, 0);
                self.math(function, dst_f, vec![a]);
            }
            A::Fpow | A::Fdiv => {
                let function = if alu.op == A::Fpow {
                    MathFn::Pow
                } else {
                    MathFn::Fdiv
                };
                let (a, b) = (f(self, 0), f(self, 1));
                self.math(function, dst_f, vec![a, b]);
            }
            A::Fsign => {
                // sign(x): x's sign bit, with 1.0's bits ORed in where x != 0 (±0 stays).
                let a = f(self, 0);
                let a = self.in_register(a);
                let cmp = self.op(
                    Opcode::Cmp,
                    Operand::null(Type::F),
                    vec![a, Src::imm_f(0.0)],
                );
                cmp.cond = Some(CondMod::Nz);
                self.op(
                    Opcode::And,
                    dst_ud,
                    vec![a.retype(Type::UD), Src::imm_ud(0x8000_0000)],
                );
                let or = self.op(
                    Opcode::Or,
                    dst_ud,
                    vec![Src::Reg(dst_ud), Src::imm_ud(0x3F80_0000)],
                );
                or.predicate = Some(Predicate {
                    control: 1,
                    inverse: false,
                });
            }
            A::Flt | A::Fge | A::Feq | A::Fneu => {
                let (a, b) = (f(self, 0), f(self, 1));
                let cond = match alu.op {
                    A::Flt => CondMod::L,
                    A::Fge => CondMod::Ge,
                    A::Feq => CondMod::Z,
                    _ => CondMod::Nz,
                };
                cmp(self, dst_d, a, b, cond);
            }
            A::Ilt | A::Ige | A::Ieq | A::Ine => {
                let (a, b) = (d(self, 0), d(self, 1));
                let cond = match alu.op {
                    A::Ilt => CondMod::L,
                    A::Ige => CondMod::Ge,
                    A::Ieq => CondMod::Z,
                    _ => CondMod::Nz,
                };
                cmp(self, dst_d, a, b, cond);
            }
            A::Ult | A::Uge => {
                let (a, b) = (ud(self, 0), ud(self, 1));
                let cond = if alu.op == A::Ult {
                    CondMod::L
                } else {
                    CondMod::Ge
                };
                cmp(self, dst_ud, a, b, cond);
            }
            A::Iadd => {
                let (a, b) = (d(self, 0), d(self, 1));
                self.alu2(Opcode::Add, dst_d, a, b, true);
            }
            A::Isub => {
                let (a, b) = (d(self, 0), d(self, 1));
                let b = negate_src(b);
                self.alu2(Opcode::Add, dst_d, a, b, true);
            }
            A::Imul => {
                let (a, b) = (d(self, 0), d(self, 1));
                self.alu2(Opcode::Mul, dst_d, a, b, true);
            }
            // The math unit's quotient truncates and its remainder takes the dividend's sign.
            A::Idiv | A::Irem | A::Udiv | A::Umod => {
                let (a, b, dst) = if matches!(alu.op, A::Idiv | A::Irem) {
                    (d(self, 0), d(self, 1), dst_d)
                } else {
                    (ud(self, 0), ud(self, 1), dst_ud)
                };
                let f = if matches!(alu.op, A::Idiv | A::Udiv) {
                    MathFn::IntDiv
                } else {
                    MathFn::IntMod
                };
                self.math(f, dst, vec![a, b]);
            }
            A::Ineg => {
                let a = d(self, 0);
                modifier(self, a, dst_d, true, false);
            }
            A::Iabs => {
                let a = d(self, 0);
                modifier(self, a, dst_d, false, true);
            }
            A::Iand | A::Ior | A::Ixor => {
                let op = match alu.op {
                    A::Iand => Opcode::And,
                    A::Ior => Opcode::Or,
                    _ => Opcode::Xor,
                };
                let (a, b) = (ud(self, 0), ud(self, 1));
                self.alu2(op, dst_ud, a, b, true);
            }
            A::Inot => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Not, dst_ud, vec![a]);
            }
            A::Ishl | A::Ishr | A::Ushr => {
                let (op, ty) = match alu.op {
                    A::Ishl => (Opcode::Shl, Type::UD),
                    A::Ishr => (Opcode::Asr, Type::D),
                    _ => (Opcode::Shr, Type::UD),
                };
                let (a, b) = (self.read_alu(&srcs[0], c, ty), ud(self, 1));
                // Shift counts are taken modulo 32, as the hardware does with the low 5 bits.
                self.alu2(op, dst_f.retype(ty), a, b, false);
            }
            A::Bcsel => {
                let cond = d(self, 0);
                let (a, b) = (ud(self, 1), ud(self, 2));
                if let (Src::Imm(_, x), Src::Imm(_, y)) = (a, b)
                    && x == y
                {
                    self.op(Opcode::Mov, dst_ud, vec![a]);
                    return Ok(());
                }
                // Booleans are all ones or zero: `cond & a` is `cond ? a : 0`, and `!cond & b`
                // is `cond ? 0 : b` (copy propagation makes the `not` a source modifier on
                // Gen8+).
                if b == Src::imm_ud(0) {
                    let cond = self.in_register(cond);
                    self.alu2(Opcode::And, dst_ud, cond.retype(Type::UD), a, true);
                    return Ok(());
                }
                if a == Src::imm_ud(0) {
                    let cond = self.in_register(cond);
                    let inverse = self.temp_operand(Type::UD);
                    self.op(Opcode::Not, inverse, vec![cond.retype(Type::UD)]);
                    self.alu2(Opcode::And, dst_ud, Src::Reg(inverse), b, true);
                    return Ok(());
                }
                self.flag_from_bool(cond, 0);
                // Only the second source may be an immediate: swap and invert the predicate.
                let (a, b, inverse) = if a.is_imm() && !b.is_imm() {
                    (b, a, true)
                } else {
                    (a, b, false)
                };
                let sel = self.alu2(Opcode::Sel, dst_ud, a, b, false);
                sel.predicate = Some(Predicate {
                    control: 1,
                    inverse,
                });
            }
            A::B2f32 => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::And, dst_ud, vec![a, Src::imm_ud(0x3F80_0000)]);
            }
            A::B2i32 => {
                let a = d(self, 0);
                modifier(self, a, dst_d, true, false);
            }
            A::F2b1 => {
                let a = f(self, 0);
                cmp(self, dst_d, a, Src::imm_f(0.0), CondMod::Nz);
            }
            A::I2b1 => {
                let a = d(self, 0);
                cmp(self, dst_d, a, Src::imm_d(0), CondMod::Nz);
            }
            A::F2i32 => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_d, vec![a]);
            }
            A::F2u32 => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_ud, vec![a]);
            }
            A::I2f32 => {
                let a = d(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            A::U2f32 => {
                let a = ud(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            A::F2f32 | A::I2i32 | A::U2u32 => {
                let a = ud(self, 0);
                self.op(Opcode::Mov, dst_ud, vec![a]);
            }
            A::Fddx | A::FddxCoarse | A::Fddy | A::FddyCoarse | A::FddxFine => {
                let a = f(self, 0);
                let Src::Reg(a) = self.in_register(a) else {
                    unreachable!("in a register")
                };
                // Quad channels are top-left, top-right, bottom-left, bottom-right.
                // The difference is the minuend's channel minus channel 0 of its quad (coarse)
                // or row (fine x).
                let (minuend, region) = match alu.op {
                    A::Fddx | A::FddxCoarse => (1, Region::new(4, 4, 0)),
                    A::Fddy | A::FddyCoarse => (2, Region::new(4, 4, 0)),
                    _ => (1, Region::new(2, 2, 0)),
                };
                let at = |r: Operand, k: u32| Operand {
                    region: if r.region == Region::SCALAR {
                        Region::SCALAR
                    } else {
                        region
                    },
                    offset: if r.region == Region::SCALAR {
                        r.offset
                    } else {
                        r.offset + 4 * k
                    },
                    ..r
                };
                let hi = at(a, minuend);
                let lo = at(a, 0);
                self.op(
                    Opcode::Add,
                    dst_f,
                    vec![Src::Reg(hi), Src::Reg(lo.negated())],
                );
            }
            A::FindLsb => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Fbl, dst_ud, vec![a]);
            }
            // A boolean is all ones when true: its one bit is the lowest.
            A::BitCount
                if self
                    .func
                    .value_type(srcs[0].value)
                    .is_some_and(|t| t.bits == 1) =>
            {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::And, dst_ud, vec![a, Src::imm_ud(1)]);
            }
            A::BitCount => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Cbit, dst_ud, vec![a]);
            }
            A::BitfieldReverse => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Bfrev, dst_ud, vec![a]);
            }
            // 31 - leading zeros: LZD of 0 is 32, so 0 gives -1. The signed form looks at the
            // value with its sign's copies cleared: x ^ (x >> 31).
            A::UfindMsb | A::IfindMsb => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                // A true boolean is all ones; as an unsigned 1-bit value it is 1.
                let boolean = self
                    .func
                    .value_type(srcs[0].value)
                    .is_some_and(|t| t.bits == 1);
                let bits = if alu.op == A::UfindMsb && boolean {
                    let one_bit = self.temp_operand(Type::UD);
                    self.op(Opcode::And, one_bit, vec![a, Src::imm_ud(1)]);
                    Src::Reg(one_bit)
                } else if alu.op == A::IfindMsb {
                    let sign = self.temp_operand(Type::D);
                    let a_d = a.retype(Type::D);
                    self.op(Opcode::Asr, sign, vec![a_d, Src::imm_ud(31)]);
                    let flipped = self.temp_operand(Type::UD);
                    self.op(
                        Opcode::Xor,
                        flipped,
                        vec![Src::Reg(sign.retype(Type::UD)), a],
                    );
                    Src::Reg(flipped)
                } else {
                    a
                };
                let zeros = self.temp_operand(Type::UD);
                self.op(Opcode::Lzd, zeros, vec![bits]);
                let zeros = negate_src(Src::Reg(zeros.retype(Type::D)));
                self.op(Opcode::Add, dst_d, vec![zeros, Src::imm_d(31)]);
            }
            other => {
                return Err(self.error(v, &format!("`{}` is not supported yet", other.name())));
            }
        }
        Ok(())
    }
}

/// The condition that holds with the sources swapped.
fn swapped(cond: CondMod) -> CondMod {
    match cond {
        CondMod::L => CondMod::G,
        CondMod::G => CondMod::L,
        CondMod::Le => CondMod::Ge,
        CondMod::Ge => CondMod::Le,
        other => other,
    }
}

fn negate_src(src: Src) -> Src {
    match src {
        Src::Reg(r) => Src::Reg(r.negated()),
        Src::Imm(Type::F, bits) => Src::imm_f(-f32::from_bits(bits as u32)),
        Src::Imm(ty, bits) => Src::Imm(ty, (bits as u32).wrapping_neg() as u64),
    }
}
