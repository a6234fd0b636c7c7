//! `lower-int64`: the 64-bit integer operations a target lacks become 32-bit operations on the
//! values' halves and 64-bit operations the target has.
//!
//! What, for the operations in the target's `lower_int64` list (an instruction is lowered when
//! one of its integer operands, a source or the result, has 64 bits):
//! - adds and subtracts carry between the halves (`uadd_carry`, `usub_borrow`); `ineg`,
//!   `iabs`, `isign`, the minimums and maximums, the saturating forms, carries and borrows are
//!   built from them, from compares and from selects;
//! - compares decide on the high halves, and on the low halves (unsigned) where those are
//!   equal; the bit operations work on each half;
//! - shifts by `n` (taken modulo 64) shift each half and move the bits that cross between them
//!   (`n < 32`), or move one half into the other (`n ≥ 32`); rotates are two shifts;
//! - `imul`: the low halves' full 64-bit product (`umul_2x32_64`) plus the two cross products
//!   in its high half; `umul_high` sums the four 32×32-bit products' halves; `imul_high`
//!   corrects `umul_high` by the operands' signs; `umul_2x32_64` and `imul_2x32_64` are a
//!   32-bit `imul` and `umul_high`/`imul_high`;
//! - `udiv`, `umod`: restoring division, one quotient bit per step from bit 63 down: where
//!   `n >> i ≥ d`, `n −= d << i` and bit `i` of the quotient is set (the comparison shifts the
//!   dividend so that `d << i` never overflows); division by zero gives 0, as the
//!   interpreter does;
//! - `idiv`, `irem`, `imod`: the magnitudes divided, the sign fixed as `lower-idiv` does at 32
//!   bits (`idiv` negative when the signs differ, `irem` with the dividend's sign, `imod` with
//!   the divisor's);
//! - `bit_count`, `ufind_msb`, `ifind_msb`, `find_lsb`, `bitfield_reverse`: the 32-bit
//!   operation on each half, combined (`ifind_msb` of `x` is `ufind_msb` of `x` with its sign
//!   bits flipped off);
//! - conversions: to and from 32 bits by halves (sign or zero extension, the low half);
//!   `u2f32` rounds the top 32 bits of the normalized value with the rest as a sticky bit and
//!   scales by a power of two; `u2f64`/`i2f64` add the high half times 2^32 to the low half
//!   (both exact in doubles: one rounding); `f2u64`/`f2i64` split the truncated magnitude into
//!   `floor(m / 2^32)` and the exact remainder, saturating out of range and giving 0 for NaN,
//!   as the interpreter does.
//!
//! The sequences may use 64-bit operations that the list also names (division shifts and
//! compares 64-bit values): the pass runs until no instruction it lowers is left.
//!
//! Why: Gen8+ has 64-bit adds, shifts, logic, compares and selects, but no 64-bit multiply of
//! 64-bit operands, no divider and no 64-bit bit scans; Gen7 and R600 have no 64-bit integer
//! arithmetic at all and keep 64-bit values as pairs of 32-bit ones (moves, selects, loads
//! and stores of them are theirs). Lowered in the IR, the sequences are shared by every target
//! that asks and get the usual simplifications.
//!
//! Invariants: results are bit-identical to the interpreter's for every input. Vector
//! instructions are lowered per component. Each lowered instruction is one transformation.
//! What is left of 64-bit integer values is moves, vector constructions, selects, the
//! `pack_64_2x32`/`unpack_64_2x32` of the halves, and what reads and writes memory.
//!
//! Options: the target's `lower_int64`, the operations to lower (empty: the pass changes
//! nothing): [`lowerable`] for a target with no 64-bit integer arithmetic,
//! [`WITH_64_BIT_ALU`] for one with 64-bit adds, shifts, logic and compares.

use super::manager::{Pass, PassContext};
use super::{halves, has_64_bit_operand, join, lower_each, per_component, replace_alu};
use crate::ir::{Builder, FuncId, Shader, Value};
use crate::ops::{AluOp, BaseType};

/// The `lower-int64` pass.
pub struct LowerInt64 {
    /// The 64-bit integer operations to lower ([`crate::rewrite::TargetOptions::lower_int64`]).
    pub ops: Vec<AluOp>,
}

/// What a target whose ALU has 64-bit adds, shifts, logic, compares and selects still lacks.
pub const WITH_64_BIT_ALU: &[AluOp] = &[
    AluOp::Imul,
    AluOp::Udiv,
    AluOp::Umod,
    AluOp::Idiv,
    AluOp::Irem,
    AluOp::Imod,
    AluOp::BitCount,
    AluOp::UfindMsb,
    AluOp::IfindMsb,
    AluOp::FindLsb,
];

/// The rest of the 64-bit integer arithmetic: adds, compares, shifts, logic, the other
/// multiplies, saturating forms and conversions, which a target with no 64-bit integer
/// arithmetic also lacks.
pub const ARITHMETIC: &[AluOp] = &[
    AluOp::BitfieldReverse,
    AluOp::Iadd,
    AluOp::Isub,
    AluOp::Ineg,
    AluOp::Iabs,
    AluOp::Isign,
    AluOp::Imin,
    AluOp::Imax,
    AluOp::Umin,
    AluOp::Umax,
    AluOp::IaddSat,
    AluOp::UaddSat,
    AluOp::IsubSat,
    AluOp::UsubSat,
    AluOp::UaddCarry,
    AluOp::UsubBorrow,
    AluOp::ImulHigh,
    AluOp::UmulHigh,
    AluOp::Imul2x32To64,
    AluOp::Umul2x32To64,
    AluOp::Ilt,
    AluOp::Ige,
    AluOp::Ult,
    AluOp::Uge,
    AluOp::Ieq,
    AluOp::Ine,
    AluOp::Inot,
    AluOp::Iand,
    AluOp::Ior,
    AluOp::Ixor,
    AluOp::Ishl,
    AluOp::Ishr,
    AluOp::Ushr,
    AluOp::Urol,
    AluOp::Uror,
    AluOp::I2i32,
    AluOp::U2u32,
    AluOp::I2i64,
    AluOp::U2u64,
    AluOp::B2i64,
    AluOp::I2b1,
    AluOp::I2f32,
    AluOp::U2f32,
    AluOp::I2f64,
    AluOp::U2f64,
    AluOp::F2i64,
    AluOp::F2u64,
];

/// Every operation the pass knows how to build: what a target with no 64-bit integer
/// arithmetic asks for.
pub fn lowerable() -> Vec<AluOp> {
    [WITH_64_BIT_ALU, ARITHMETIC].concat()
}

impl Pass for LowerInt64 {
    fn name(&self) -> &str {
        "lower-int64"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "builds the 64-bit integer operations the target lacks (multiplies, division, bit scans, or all arithmetic) from 32-bit ones"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let ops: Vec<AluOp> = self
            .ops
            .iter()
            .copied()
            .filter(|op| WITH_64_BIT_ALU.contains(op) || ARITHMETIC.contains(op))
            .collect();
        if ops.is_empty() {
            return Ok(false);
        }
        let lowers = |function: &crate::ir::Function, inst: &crate::ir::Inst| {
            matches!(&inst.kind, crate::ir::InstKind::Alu(alu) if ops.contains(&alu.op))
                && has_64_bit_operand(function, inst, &[BaseType::Int, BaseType::Uint])
        };
        // Each round lowers what the previous one built; every sequence is built from
        // operations that are smaller (fewer bits, or fewer steps), so rounds run out.
        let mut changed = false;
        while lower_each(shader, context, lowers, lower) {
            changed = true;
        }
        Ok(changed)
    }
}

fn lower(shader: &mut Shader, func: FuncId, v: Value) {
    replace_alu(shader, func, v, |b, op, srcs| {
        per_component(b, srcs, |b, s| lower_scalar(b, op, s))
    })
}

/// `op` on scalar sources `s`.
fn lower_scalar(b: &mut Builder, op: AluOp, s: &[Value]) -> Value {
    use AluOp::*;
    let binary = |b: &mut Builder, op32: AluOp| {
        let (a_lo, a_hi) = halves(b, s[0]);
        let (b_lo, b_hi) = halves(b, s[1]);
        let lo = b.alu(op32, &[a_lo, b_lo]);
        let hi = b.alu(op32, &[a_hi, b_hi]);
        join(b, lo, hi)
    };
    match op {
        Imul => {
            let (a_lo, a_hi) = halves(b, s[0]);
            let (b_lo, b_hi) = halves(b, s[1]);
            let low = b.alu(Umul2x32To64, &[a_lo, b_lo]);
            let (lo, carry) = halves(b, low);
            let cross_a = b.alu(Imul, &[a_lo, b_hi]);
            let cross_b = b.alu(Imul, &[a_hi, b_lo]);
            let cross = b.alu(Iadd, &[cross_a, cross_b]);
            let hi = b.alu(Iadd, &[carry, cross]);
            join(b, lo, hi)
        }
        Udiv => divide(b, s[0], s[1]).0,
        Umod => divide(b, s[0], s[1]).1,
        Idiv | Irem | Imod => signed_divide(b, op, s[0], s[1]),
        BitCount => {
            let (lo, hi) = halves(b, s[0]);
            let low = b.alu(BitCount, &[lo]);
            let high = b.alu(BitCount, &[hi]);
            b.alu(Iadd, &[low, high])
        }
        UfindMsb => ufind_msb(b, s[0]),
        IfindMsb => {
            let (lo, hi) = halves(b, s[0]);
            let thirty_one = b.imm_u32(31);
            let signs = b.alu(Ishr, &[hi, thirty_one]);
            let lo = b.alu(Ixor, &[lo, signs]);
            let hi = b.alu(Ixor, &[hi, signs]);
            let flipped = join(b, lo, hi);
            ufind_msb(b, flipped)
        }
        FindLsb => {
            let (lo, hi) = halves(b, s[0]);
            let low = b.alu(FindLsb, &[lo]);
            let high = b.alu(FindLsb, &[hi]);
            let thirty_two = b.imm_int(32, 32);
            let high = b.alu(Iadd, &[high, thirty_two]);
            let zero = b.imm_u32(0);
            let none = b.imm_int(-1, 32);
            let hi_zero = b.alu(Ieq, &[hi, zero]);
            let high = b.alu(Bcsel, &[hi_zero, none, high]);
            let lo_zero = b.alu(Ieq, &[lo, zero]);
            b.alu(Bcsel, &[lo_zero, high, low])
        }
        BitfieldReverse => {
            let (lo, hi) = halves(b, s[0]);
            let new_lo = b.alu(BitfieldReverse, &[hi]);
            let new_hi = b.alu(BitfieldReverse, &[lo]);
            join(b, new_lo, new_hi)
        }
        Iadd | Isub => {
            let (a_lo, a_hi) = halves(b, s[0]);
            let (b_lo, b_hi) = halves(b, s[1]);
            let carry_op = if op == Iadd { UaddCarry } else { UsubBorrow };
            let lo = b.alu(op, &[a_lo, b_lo]);
            let carry = b.alu(carry_op, &[a_lo, b_lo]);
            let hi = b.alu(op, &[a_hi, b_hi]);
            let hi = b.alu(op, &[hi, carry]);
            join(b, lo, hi)
        }
        Ineg => {
            let zero = b.imm_int(0, 64);
            b.alu(Isub, &[zero, s[0]])
        }
        Iabs => {
            let zero = b.imm_int(0, 64);
            let negative = b.alu(Ilt, &[s[0], zero]);
            let negated = b.alu(Ineg, &[s[0]]);
            b.alu(Bcsel, &[negative, negated, s[0]])
        }
        Isign => {
            let zero = b.imm_int(0, 64);
            let negative = b.alu(Ilt, &[s[0], zero]);
            let nonzero = b.alu(Ine, &[s[0], zero]);
            let one = b.alu(B2i64, &[nonzero]);
            let minus_one = b.imm_int(-1, 64);
            b.alu(Bcsel, &[negative, minus_one, one])
        }
        Imin | Imax | Umin | Umax => {
            let less = if matches!(op, Imin | Imax) { Ilt } else { Ult };
            let first_less = b.alu(less, &[s[0], s[1]]);
            let (first, second) = if matches!(op, Imin | Umin) {
                (s[0], s[1])
            } else {
                (s[1], s[0])
            };
            b.alu(Bcsel, &[first_less, first, second])
        }
        UaddSat => {
            let sum = b.alu(Iadd, &[s[0], s[1]]);
            let wrapped = b.alu(Ult, &[sum, s[0]]);
            let max = b.imm_int(-1, 64);
            b.alu(Bcsel, &[wrapped, max, sum])
        }
        UsubSat => {
            let below = b.alu(Ult, &[s[0], s[1]]);
            let difference = b.alu(Isub, &[s[0], s[1]]);
            let zero = b.imm_int(0, 64);
            b.alu(Bcsel, &[below, zero, difference])
        }
        IaddSat | IsubSat => {
            // Overflow: the result's sign differs from the first operand's, and (adding) from
            // the second's, or (subtracting) the operands' signs differ.
            let result = b.alu(if op == IaddSat { Iadd } else { Isub }, &[s[0], s[1]]);
            let flipped = b.alu(Ixor, &[result, s[0]]);
            let other = if op == IaddSat {
                b.alu(Ixor, &[result, s[1]])
            } else {
                b.alu(Ixor, &[s[0], s[1]])
            };
            let both = b.alu(Iand, &[flipped, other]);
            let zero = b.imm_int(0, 64);
            let overflow = b.alu(Ilt, &[both, zero]);
            let negative = b.alu(Ilt, &[s[0], zero]);
            let min = b.imm_int(i64::MIN, 64);
            let max = b.imm_int(i64::MAX, 64);
            let saturated = b.alu(Bcsel, &[negative, min, max]);
            b.alu(Bcsel, &[overflow, saturated, result])
        }
        UaddCarry => {
            let sum = b.alu(Iadd, &[s[0], s[1]]);
            let wrapped = b.alu(Ult, &[sum, s[0]]);
            b.alu(B2i64, &[wrapped])
        }
        UsubBorrow => {
            let below = b.alu(Ult, &[s[0], s[1]]);
            b.alu(B2i64, &[below])
        }
        UmulHigh => umul_high(b, s[0], s[1]),
        ImulHigh => {
            let high = umul_high(b, s[0], s[1]);
            let zero = b.imm_int(0, 64);
            let a_negative = b.alu(Ilt, &[s[0], zero]);
            let b_negative = b.alu(Ilt, &[s[1], zero]);
            let fix_a = b.alu(Bcsel, &[a_negative, s[1], zero]);
            let fix_b = b.alu(Bcsel, &[b_negative, s[0], zero]);
            let high = b.alu(Isub, &[high, fix_a]);
            b.alu(Isub, &[high, fix_b])
        }
        Umul2x32To64 | Imul2x32To64 => {
            let lo = b.alu(Imul, &[s[0], s[1]]);
            let high = if op == Umul2x32To64 {
                UmulHigh
            } else {
                ImulHigh
            };
            let hi = b.alu(high, &[s[0], s[1]]);
            join(b, lo, hi)
        }
        Ieq | Ine => {
            let (a_lo, a_hi) = halves(b, s[0]);
            let (b_lo, b_hi) = halves(b, s[1]);
            let lo = b.alu(op, &[a_lo, b_lo]);
            let hi = b.alu(op, &[a_hi, b_hi]);
            b.alu(if op == Ieq { Iand } else { Ior }, &[lo, hi])
        }
        Ilt | Ult | Ige | Uge => {
            // The high halves decide, the low halves (unsigned) where those are equal.
            let (a_lo, a_hi) = halves(b, s[0]);
            let (b_lo, b_hi) = halves(b, s[1]);
            let (strict, low_op) = match op {
                Ilt => (b.alu(Ilt, &[a_hi, b_hi]), Ult),
                Ult => (b.alu(Ult, &[a_hi, b_hi]), Ult),
                Ige => (b.alu(Ilt, &[b_hi, a_hi]), Uge),
                _ => (b.alu(Ult, &[b_hi, a_hi]), Uge),
            };
            let equal = b.alu(Ieq, &[a_hi, b_hi]);
            let low = b.alu(low_op, &[a_lo, b_lo]);
            let tie = b.alu(Iand, &[equal, low]);
            b.alu(Ior, &[strict, tie])
        }
        Inot => {
            let (lo, hi) = halves(b, s[0]);
            let lo = b.alu(Inot, &[lo]);
            let hi = b.alu(Inot, &[hi]);
            join(b, lo, hi)
        }
        Iand | Ior | Ixor => binary(b, op),
        Ishl | Ishr | Ushr => shift(b, op, s[0], s[1]),
        Urol | Uror => {
            let sixty_three = b.imm_u32(63);
            let n = b.alu(Iand, &[s[1], sixty_three]);
            let sixty_four = b.imm_u32(64);
            let back = b.alu(Isub, &[sixty_four, n]);
            let (forward, backward) = if op == Urol {
                (Ishl, Ushr)
            } else {
                (Ushr, Ishl)
            };
            let there = b.alu(forward, &[s[0], n]);
            let around = b.alu(backward, &[s[0], back]);
            b.alu(Ior, &[there, around])
        }
        I2i32 | U2u32 => halves(b, s[0]).0,
        I2i64 | U2u64 => {
            let bits = b.value_type(s[0]).bits;
            if bits == 64 {
                return s[0];
            }
            let lo = if bits < 32 {
                b.alu(if op == I2i64 { I2i32 } else { U2u32 }, &[s[0]])
            } else {
                s[0]
            };
            let hi = if op == I2i64 {
                let thirty_one = b.imm_u32(31);
                b.alu(Ishr, &[lo, thirty_one])
            } else {
                b.imm_u32(0)
            };
            join(b, lo, hi)
        }
        B2i64 => {
            let lo = b.alu(B2i32, &[s[0]]);
            let hi = b.imm_u32(0);
            join(b, lo, hi)
        }
        I2b1 => {
            let (lo, hi) = halves(b, s[0]);
            let either = b.alu(Ior, &[lo, hi]);
            let zero = b.imm_u32(0);
            b.alu(Ine, &[either, zero])
        }
        U2f32 => u2f32(b, s[0]),
        I2f32 => {
            let zero = b.imm_int(0, 64);
            let negative = b.alu(Ilt, &[s[0], zero]);
            let magnitude = b.alu(Iabs, &[s[0]]);
            let converted = u2f32(b, magnitude);
            let negated = b.alu(Fneg, &[converted]);
            b.alu(Bcsel, &[negative, negated, converted])
        }
        U2f64 | I2f64 => {
            // Both halves are exact in doubles, as is the high half's scaling: one rounding.
            let (lo, hi) = halves(b, s[0]);
            let high = b.alu(if op == U2f64 { U2f64 } else { I2f64 }, &[hi]);
            let scale = b.imm_float(2f64.powi(32), 64);
            let high = b.alu(Fmul, &[high, scale]);
            let low = b.alu(U2f64, &[lo]);
            b.alu(Fadd, &[high, low])
        }
        F2u64 | F2i64 => float_to_int64(b, op == F2i64, s[0]),
        _ => unreachable!("only the operations the pass knows are lowered"),
    }
}

/// Shift `op` of 64-bit `x` by `n` (modulo 64) on the halves: under 32, each half shifts and
/// the bits crossing between them move over; from 32, one half moves into the other.
fn shift(b: &mut Builder, op: AluOp, x: Value, n: Value) -> Value {
    use AluOp::*;
    let (lo, hi) = halves(b, x);
    let (one, thirty_one, thirty_two) = (b.imm_u32(1), b.imm_u32(31), b.imm_u32(32));
    let zero = b.imm_u32(0);
    let bit_five = b.alu(Iand, &[n, thirty_two]);
    let far = b.alu(Ine, &[bit_five, zero]);
    // 31 − n for n < 32: the crossing bits shift by one first so that n = 0 moves none.
    let rest = b.alu(Isub, &[thirty_one, n]);
    let (new_lo, new_hi) = if op == Ishl {
        let lo_shifted = b.alu(Ishl, &[lo, n]);
        let hi_shifted = b.alu(Ishl, &[hi, n]);
        let crossing = b.alu(Ushr, &[lo, one]);
        let crossing = b.alu(Ushr, &[crossing, rest]);
        let near_hi = b.alu(Ior, &[hi_shifted, crossing]);
        (
            b.alu(Bcsel, &[far, zero, lo_shifted]),
            b.alu(Bcsel, &[far, lo_shifted, near_hi]),
        )
    } else {
        let hi_shifted = b.alu(op, &[hi, n]);
        let lo_shifted = b.alu(Ushr, &[lo, n]);
        let crossing = b.alu(Ishl, &[hi, one]);
        let crossing = b.alu(Ishl, &[crossing, rest]);
        let near_lo = b.alu(Ior, &[lo_shifted, crossing]);
        let fill = if op == Ishr {
            b.alu(Ishr, &[hi, thirty_one])
        } else {
            zero
        };
        (
            b.alu(Bcsel, &[far, hi_shifted, near_lo]),
            b.alu(Bcsel, &[far, fill, hi_shifted]),
        )
    };
    join(b, new_lo, new_hi)
}

/// The high 64 bits of the 128-bit product of `x` and `y`: the four 32×32-bit products'
/// halves summed in their columns.
fn umul_high(b: &mut Builder, x: Value, y: Value) -> Value {
    use AluOp::*;
    let (x_lo, x_hi) = halves(b, x);
    let (y_lo, y_hi) = halves(b, y);
    let low_low = b.alu(Umul2x32To64, &[x_lo, y_lo]);
    let low_high = b.alu(Umul2x32To64, &[x_lo, y_hi]);
    let high_low = b.alu(Umul2x32To64, &[x_hi, y_lo]);
    let high_high = b.alu(Umul2x32To64, &[x_hi, y_hi]);
    let (_, carry) = halves(b, low_low);
    let (lh_lo, lh_hi) = halves(b, low_high);
    let (hl_lo, hl_hi) = halves(b, high_low);
    let zero = b.imm_u32(0);
    let widen = |b: &mut Builder, v: Value| join(b, v, zero);
    // The middle column (at most 3·(2^32 − 1)) and what it carries out.
    let (carry, lh_lo, hl_lo) = (widen(b, carry), widen(b, lh_lo), widen(b, hl_lo));
    let middle = b.alu(Iadd, &[carry, lh_lo]);
    let middle = b.alu(Iadd, &[middle, hl_lo]);
    let (_, middle_carry) = halves(b, middle);
    let (lh_hi, hl_hi, middle_carry) = (widen(b, lh_hi), widen(b, hl_hi), widen(b, middle_carry));
    let high = b.alu(Iadd, &[high_high, lh_hi]);
    let high = b.alu(Iadd, &[high, hl_hi]);
    b.alu(Iadd, &[high, middle_carry])
}

/// Unsigned 64-bit `x` to a 32-bit float, rounded once: below 2^32 the low half converts;
/// above, the value shifted so that its top bit is bit 63 gives its high half, with a sticky
/// bit for the low half's bits, to round, and the result is scaled back by a power of two.
fn u2f32(b: &mut Builder, x: Value) -> Value {
    use AluOp::*;
    let (lo, hi) = halves(b, x);
    let small = b.alu(U2f32, &[lo]);
    let msb = b.alu(UfindMsb, &[hi]);
    let thirty_one = b.imm_u32(31);
    let leading = b.alu(Isub, &[thirty_one, msb]);
    let normalized = b.alu(Ishl, &[x, leading]);
    let (rest, top) = halves(b, normalized);
    let zero = b.imm_u32(0);
    let inexact = b.alu(Ine, &[rest, zero]);
    let sticky = b.alu(B2i32, &[inexact]);
    let top = b.alu(Ior, &[top, sticky]);
    let rounded = b.alu(U2f32, &[top]);
    // 2^(32 − leading) as float bits: exponent field 127 + 32 − leading.
    let biased = b.imm_u32(127 + 32);
    let exponent = b.alu(Isub, &[biased, leading]);
    let twenty_three = b.imm_u32(23);
    let scale = b.alu(Ishl, &[exponent, twenty_three]);
    let large = b.alu(Fmul, &[rounded, scale]);
    let hi_zero = b.alu(Ieq, &[hi, zero]);
    b.alu(Bcsel, &[hi_zero, small, large])
}

/// Float `x` (32 or 64 bits) to a 64-bit integer, as the interpreter converts: truncated,
/// saturated, NaN to 0.
fn float_to_int64(b: &mut Builder, signed: bool, x: Value) -> Value {
    use AluOp::*;
    let bits = b.value_type(x).bits;
    let truncated = b.alu(Ftrunc, &[x]);
    // The magnitude's halves: floor(m / 2^32), and the remainder, which only clears the
    // quotient's bits from m and so is exact.
    let magnitude = if signed {
        b.alu(Fabs, &[truncated])
    } else {
        let zero = b.imm_float(0.0, bits);
        let positive = b.alu(Fge, &[truncated, zero]);
        b.alu(Bcsel, &[positive, truncated, zero])
    };
    let down = b.imm_float(2f64.powi(-32), bits);
    let up = b.imm_float(2f64.powi(32), bits);
    let high = b.alu(Fmul, &[magnitude, down]);
    let high = b.alu(Ffloor, &[high]);
    let high_part = b.alu(Fmul, &[high, up]);
    let low = b.alu(Fsub, &[magnitude, high_part]);
    let hi = b.alu(F2u32, &[high]);
    let lo = b.alu(F2u32, &[low]);
    let result = join(b, lo, hi);
    if signed {
        let zero = b.imm_float(0.0, bits);
        let negative = b.alu(Flt, &[truncated, zero]);
        let negated = b.alu(Ineg, &[result]);
        let result = b.alu(Bcsel, &[negative, negated, result]);
        let limit = b.imm_float(2f64.powi(63), bits);
        let too_big = b.alu(Fge, &[truncated, limit]);
        let max = b.imm_int(i64::MAX, 64);
        let result = b.alu(Bcsel, &[too_big, max, result]);
        let minus_limit = b.imm_float(-(2f64.powi(63)), bits);
        let too_small = b.alu(Flt, &[truncated, minus_limit]);
        let min = b.imm_int(i64::MIN, 64);
        b.alu(Bcsel, &[too_small, min, result])
    } else {
        let limit = b.imm_float(2f64.powi(64), bits);
        let too_big = b.alu(Fge, &[truncated, limit]);
        let max = b.imm_int(-1, 64);
        b.alu(Bcsel, &[too_big, max, result])
    }
}

/// The highest set bit of 64-bit `x`, −1 for 0.
fn ufind_msb(b: &mut Builder, x: Value) -> Value {
    let (lo, hi) = halves(b, x);
    let low = b.alu(AluOp::UfindMsb, &[lo]);
    let high = b.alu(AluOp::UfindMsb, &[hi]);
    let thirty_two = b.imm_int(32, 32);
    let high = b.alu(AluOp::Iadd, &[high, thirty_two]);
    let zero = b.imm_u32(0);
    let hi_zero = b.alu(AluOp::Ieq, &[hi, zero]);
    b.alu(AluOp::Bcsel, &[hi_zero, low, high])
}

/// `idiv`, `irem` or `imod` of `n` by `d`: the magnitudes divided, the sign fixed.
fn signed_divide(b: &mut Builder, op: AluOp, n: Value, d: Value) -> Value {
    use AluOp::*;
    let n_abs = b.alu(Iabs, &[n]);
    let d_abs = b.alu(Iabs, &[d]);
    let (q, r) = divide(b, n_abs, d_abs);
    let zero = b.imm_int(0, 64);
    if op == Idiv {
        let signs = b.alu(Ixor, &[n, d]);
        let differ = b.alu(Ilt, &[signs, zero]);
        let negated = b.alu(Ineg, &[q]);
        return b.alu(Bcsel, &[differ, negated, q]);
    }
    let negative = b.alu(Ilt, &[n, zero]);
    let negated = b.alu(Ineg, &[r]);
    let rem = b.alu(Bcsel, &[negative, negated, r]);
    if op == Irem {
        return rem;
    }
    let signs = b.alu(Ixor, &[rem, d]);
    let differ = b.alu(Ilt, &[signs, zero]);
    let nonzero = b.alu(Ine, &[rem, zero]);
    let fix = b.alu(Iand, &[differ, nonzero]);
    let shifted = b.alu(Iadd, &[rem, d]);
    b.alu(Bcsel, &[fix, shifted, rem])
}

/// The unsigned quotient and remainder of `n` by `d` (both 0 when `d` is 0).
fn divide(b: &mut Builder, n: Value, d: Value) -> (Value, Value) {
    let mut remainder = n;
    let mut quotient = b.imm_int(0, 64);
    for i in (0..64).rev() {
        let shift = b.imm_u32(i);
        let top = b.alu(AluOp::Ushr, &[remainder, shift]);
        let fits = b.alu(AluOp::Uge, &[top, d]);
        let subtrahend = b.alu(AluOp::Ishl, &[d, shift]);
        let reduced = b.alu(AluOp::Isub, &[remainder, subtrahend]);
        remainder = b.alu(AluOp::Bcsel, &[fits, reduced, remainder]);
        let bit = b.imm(64, &[1 << i]);
        let set = b.alu(AluOp::Ior, &[quotient, bit]);
        quotient = b.alu(AluOp::Bcsel, &[fits, set, quotient]);
    }
    let zero = b.imm_int(0, 64);
    let by_zero = b.alu(AluOp::Ieq, &[d, zero]);
    (
        b.alu(AluOp::Bcsel, &[by_zero, zero, quotient]),
        b.alu(AluOp::Bcsel, &[by_zero, zero, remainder]),
    )
}
