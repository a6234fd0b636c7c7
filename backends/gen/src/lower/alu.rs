//! ALU operations: each IR operation component by component as Gen instructions, a vector
//! whose register a source shares computed into fresh registers first.

use super::{LowerError, Lowering};
use crate::encoding::Predicate;
use crate::isa::{CondMod, MathFn, Opcode, Region, Type};
use crate::lir::{Inst, Operand, Src};
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
            let wide = self.is_wide(v);
            let temps = (0..comps).map(|_| self.temp(1 + wide as u32)).collect();
            self.staged = Some((v, temps));
            let lowered = self.alu_in_place(v, alu, comps);
            let (_, temps) = self.staged.take().expect("staged above");
            lowered?;
            for (c, t) in temps.into_iter().enumerate() {
                let dst = self.comp(v, c as u8, Type::UD);
                let dst = dst.vreg().expect("values live in virtual registers");
                self.copy_component(dst, t, wide);
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
        let sizes_supported = srcs
            .iter()
            .filter_map(|s| self.func.value_type(s.value))
            .all(|t| matches!(t.bits, 1 | 32 | 64));
        if !sizes_supported {
            return Err(self.error(v, "only 32-bit, 64-bit and boolean sources are supported"));
        }
        let wide = self.is_wide(v);
        match alu.op {
            A::Fdot2 | A::Fdot3 | A::Fdot4 => {
                let n = match alu.op {
                    A::Fdot2 => 2,
                    A::Fdot3 => 3,
                    _ => 4,
                };
                let ty = if wide { Type::DF } else { Type::F };
                let dst = self.comp(v, 0, ty);
                let a0 = self.read_alu(&srcs[0], 0, ty);
                let b0 = self.read_alu(&srcs[1], 0, ty);
                self.alu2(Opcode::Mul, dst, a0, b0, true);
                for c in 1..n {
                    let a = self.read_alu(&srcs[0], c, ty);
                    let b = self.read_alu(&srcs[1], c, ty);
                    self.alu3(Opcode::Mad, dst, [Src::Reg(dst), a, b]);
                }
                return Ok(());
            }
            op if op.is_vec() || op == A::Mov => {
                for c in 0..comps {
                    let (src, from) = if op == A::Mov {
                        (&srcs[0], c)
                    } else {
                        (&srcs[c as usize], 0)
                    };
                    let from = src.swizzle[from as usize];
                    self.move_component(v, c, src.value, from);
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

    /// Component `c` of `v` set to component `from` of `src` (a value of the same size).
    fn move_component(&mut self, v: Value, c: u8, src: Value, from: u8) {
        if self.is_wide(v) && !self.hw.is_gen8_plus() {
            for half in 0..2 {
                let value = self.read_dword(src, 2 * from + half);
                let dst = self.dword(v, 2 * c + half);
                self.op(Opcode::Mov, dst, vec![value]);
            }
            return;
        }
        let ty = if self.is_wide(v) { Type::UQ } else { Type::UD };
        let value = self.read(src, from, ty);
        let dst = self.comp(v, c, ty);
        self.op(Opcode::Mov, dst, vec![value]);
    }

    /// Component `c` of a per-component ALU operation. Each source is read at its own size
    /// (F, D, UD or DF, Q, UQ) and the destination written at its own, so that the same code
    /// serves 32- and 64-bit operations and moves between the sizes convert.
    fn alu_comp(&mut self, v: Value, alu: &shrew_engine::ir::Alu, c: u8) -> Result<(), LowerError> {
        use AluOp as A;
        let srcs = &alu.srcs;
        let wide = self.is_wide(v);
        // 64-bit sources of a 32-bit result: the operation writes every other dword of a
        // 64-bit temporary (a 64-bit execution type needs its destination aligned so), then
        // the result is packed.
        let narrowing = !wide && srcs.iter().any(|s| self.is_wide(s.value));
        match alu.op {
            // The halves of a 64-bit value are its dwords.
            A::Pack64_2x32 => {
                for half in 0..2 {
                    let value = self.read_alu(&srcs[0], half, Type::UD);
                    let dst = self.dword(v, 2 * c + half);
                    self.op(Opcode::Mov, dst, vec![value]);
                }
                return Ok(());
            }
            A::Unpack64_2x32 => {
                let value = self.read_dword(srcs[0].value, 2 * srcs[0].swizzle[0] + c);
                let dst = self.comp(v, c, Type::UD);
                self.op(Opcode::Mov, dst, vec![value]);
                return Ok(());
            }
            // No 64-bit integer type before Gen8: a select of each half.
            A::Bcsel if wide && !self.hw.is_gen8_plus() => {
                let cond = self.read_alu(&srcs[0], c, Type::D);
                self.flag_from_bool(cond, 0);
                for half in 0..2 {
                    let [a, b] = [1, 2].map(|i| {
                        let comp = srcs[i].swizzle[c as usize];
                        self.read_dword(srcs[i].value, 2 * comp + half)
                    });
                    // Only the second source may be an immediate: swap and invert the
                    // predicate.
                    let a = if a.is_imm() && b.is_imm() {
                        self.in_register(a)
                    } else {
                        a
                    };
                    let (a, b, inverse) = if a.is_imm() {
                        (b, a, true)
                    } else {
                        (a, b, false)
                    };
                    let dst = self.dword(v, 2 * c + half);
                    let sel = self.alu2(Opcode::Sel, dst, a, b, false);
                    sel.predicate = Some(Predicate {
                        control: 1,
                        inverse,
                    });
                }
                return Ok(());
            }
            op if (wide || narrowing) && !native_64bit(op) => {
                let what = format!("`{}` on 64-bit values is not supported yet", op.name());
                return Err(self.error(v, &what));
            }
            op if (wide || narrowing) && !self.hw.is_gen8_plus() && !double_op(op) => {
                let what = format!(
                    "the 64-bit integer `{}` needs Gen8 (Gen7 has no 64-bit integer type: \
                     lower-int64 builds it from dwords)",
                    op.name()
                );
                return Err(self.error(v, &what));
            }
            _ => {}
        }
        let result = self.comp(v, c, Type::F);
        let dst_f = if narrowing {
            let t = self.temp_operand(Type::UQ);
            Operand {
                region: Region::new(8, 4, 2),
                ..t.retype(Type::F)
            }
        } else {
            result.retype(sized(Type::F, wide))
        };
        self.alu_comp_into(v, alu, c, dst_f)?;
        if narrowing {
            let low_halves = Src::Reg(dst_f.retype(Type::UD));
            self.op(Opcode::Mov, result.retype(Type::UD), vec![low_halves]);
        }
        Ok(())
    }

    /// [`Lowering::alu_comp`] writing `dst_f` (as F, DF or their integer types).
    fn alu_comp_into(
        &mut self,
        v: Value,
        alu: &shrew_engine::ir::Alu,
        c: u8,
        dst_f: Operand,
    ) -> Result<(), LowerError> {
        use AluOp as A;
        let srcs = &alu.srcs;
        let wide_src = |s: &Self, i: usize| s.is_wide(srcs[i].value);
        let f = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, sized(Type::F, wide_src(s, i)));
        let d = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, sized(Type::D, wide_src(s, i)));
        let ud = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, sized(Type::UD, wide_src(s, i)));
        let wide = dst_f.ty.size() == 8;
        let dst_d = dst_f.retype(sized(Type::D, wide));
        let dst_ud = dst_f.retype(sized(Type::UD, wide));
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
                let ty = sized(ty, wide);
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
                let ty = sized(ty, wide);
                let (a, b) = (self.read_alu(&srcs[0], c, ty), ud(self, 1));
                // Shift counts are taken modulo the size, as the hardware does with the low 5
                // (6) bits.
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
            // 1.0 as a double is 0x3FF00000 in the high dword, zero in the low one.
            A::B2f64 => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                let reg = dst_f.vreg().expect("values live in virtual registers");
                let low = Operand::half_of_wide(reg, dst_f.offset, 0);
                self.op(Opcode::Mov, low, vec![Src::imm_ud(0)]);
                let high = Operand::half_of_wide(reg, dst_f.offset, 1);
                self.op(Opcode::And, high, vec![a, Src::imm_ud(0x3FF0_0000)]);
            }
            A::B2i32 | A::B2i64 => {
                let a = d(self, 0);
                modifier(self, a, dst_d, true, false);
            }
            // A 64-bit zero must be in a register: 64-bit immediates are `mov`'s alone.
            A::F2b1 | A::I2b1 => {
                let a = if alu.op == A::F2b1 {
                    f(self, 0)
                } else {
                    d(self, 0)
                };
                let zero = if a.ty().size() == 8 {
                    self.in_register(Src::Imm(Type::UQ, 0)).retype(a.ty())
                } else {
                    Src::Imm(a.ty(), 0)
                };
                cmp(self, dst_d.retype(Type::D), a, zero, CondMod::Nz);
            }
            A::F2i32 | A::F2i64 => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_d, vec![a]);
            }
            A::F2u32 | A::F2u64 => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_ud, vec![a]);
            }
            A::I2f32 | A::I2f64 => {
                let a = d(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            A::U2f32 | A::U2f64 => {
                let a = ud(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            A::F2f32 | A::F2f64 if wide != wide_src(self, 0) => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            // Sign extension; truncation keeps the low dword.
            A::I2i64 | A::I2i32 => {
                let a = d(self, 0);
                self.op(Opcode::Mov, dst_d, vec![a]);
            }
            A::F2f32 | A::F2f64 | A::U2u32 | A::U2u64 => {
                let a = ud(self, 0);
                self.op(Opcode::Mov, dst_ud, vec![a]);
            }
            // The high dword of the 64-bit product (Gen8+ multiplies dwords into a qword).
            A::ImulHigh | A::UmulHigh if !wide && self.hw.is_gen8_plus() => {
                let (a, b, ty) = if alu.op == A::ImulHigh {
                    (d(self, 0), d(self, 1), Type::Q)
                } else {
                    (ud(self, 0), ud(self, 1), Type::UQ)
                };
                let product = self.temp_operand(ty);
                self.alu2(Opcode::Mul, product, a, b, true);
                let reg = product.vreg().expect("a temporary");
                let high = Operand::half_of_wide(reg, 0, 1);
                self.op(Opcode::Mov, dst_ud, vec![Src::Reg(high)]);
            }
            A::Imul2x32To64 | A::Umul2x32To64 => {
                let (a, b) = if alu.op == A::Imul2x32To64 {
                    (d(self, 0), d(self, 1))
                } else {
                    (ud(self, 0), ud(self, 1))
                };
                let dst = if alu.op == A::Imul2x32To64 {
                    dst_d
                } else {
                    dst_ud
                };
                self.alu2(Opcode::Mul, dst, a, b, true);
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
            A::FddyFine => {
                let a = f(self, 0);
                let Src::Reg(a) = self.in_register(a) else {
                    unreachable!("in a register")
                };
                if a.region == Region::SCALAR {
                    self.op(Opcode::Mov, dst_f, vec![Src::imm_f(0.0)]);
                } else {
                    // Each column's bottom minus its top: a quad at a time, its bottom row
                    // (channels 2 and 3) and top row (0 and 1) read twice each.
                    let row = |k: u32| Operand {
                        region: Region::new(0, 2, 1),
                        offset: a.offset + 4 * k,
                        ..a
                    };
                    for quad in 0..u32::from(self.width) / 4 {
                        let dst = Operand {
                            offset: dst_f.offset + 16 * quad,
                            ..dst_f
                        };
                        let (bottom, top) = (row(4 * quad + 2), row(4 * quad));
                        self.emit(Inst {
                            group: 4 * quad as u8,
                            ..Inst::new(
                                Opcode::Add,
                                4,
                                Some(dst),
                                vec![Src::Reg(bottom), Src::Reg(top.negated())],
                            )
                        });
                    }
                }
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

/// `ty` (F, D or UD), or its 64-bit counterpart (DF, Q, UQ) when `wide`.
fn sized(ty: Type, wide: bool) -> Type {
    match (ty, wide) {
        (Type::F, true) => Type::DF,
        (Type::D, true) => Type::Q,
        (Type::UD, true) => Type::UQ,
        (ty, _) => ty,
    }
}

/// The 64-bit operations Gen7 has: those of doubles (DF), and conversions between them and
/// 32-bit types.
fn double_op(op: AluOp) -> bool {
    use AluOp as A;
    matches!(
        op,
        A::Fadd
            | A::Fsub
            | A::Fmul
            | A::Ffma
            | A::Fneg
            | A::Fabs
            | A::Fsat
            | A::Fmin
            | A::Fmax
            | A::Flt
            | A::Fge
            | A::Feq
            | A::Fneu
            | A::F2b1
            | A::B2f64
            | A::F2i32
            | A::F2u32
            | A::F2f32
            | A::F2f64
            | A::I2f64
            | A::U2f64
            | A::Fdot2
            | A::Fdot3
            | A::Fdot4
    )
}

/// Whether Gen8 runs `op` on 64-bit values (or converts between the sizes) as it lowers it
/// here; the others are lowered to 32-bit operations before the backend, or refused.
fn native_64bit(op: AluOp) -> bool {
    use AluOp as A;
    double_op(op)
        || matches!(
            op,
            A::Imin
                | A::Imax
                | A::Umin
                | A::Umax
                | A::Ilt
                | A::Ige
                | A::Ieq
                | A::Ine
                | A::Ult
                | A::Uge
                | A::Iadd
                | A::Isub
                | A::Ineg
                | A::Iabs
                | A::Iand
                | A::Ior
                | A::Ixor
                | A::Inot
                | A::Ishl
                | A::Ishr
                | A::Ushr
                | A::Bcsel
                | A::I2b1
                | A::B2i64
                | A::I2f32
                | A::U2f32
                | A::I2i32
                | A::U2u32
                | A::F2i64
                | A::F2u64
                | A::I2i64
                | A::U2u64
                | A::Imul2x32To64
                | A::Umul2x32To64
        )
}
