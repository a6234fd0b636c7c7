//! `lower-int64`: the 64-bit integer operations a target lacks become 32-bit operations on the
//! values' halves and 64-bit operations the target has.
//!
//! What, for the operations in the target's `lower_int64` list:
//! - `imul`: the low halves' full 64-bit product (`umul_2x32_64`) plus the two cross products
//!   in its high half;
//! - `udiv`, `umod`: restoring division, one quotient bit per step from bit 63 down: where
//!   `n >> i ≥ d`, `n −= d << i` and bit `i` of the quotient is set (the comparison shifts the
//!   dividend so that `d << i` never overflows); division by zero gives 0, as the
//!   interpreter does;
//! - `idiv`, `irem`, `imod`: the magnitudes divided, the sign fixed as `lower-idiv` does at 32
//!   bits (`idiv` negative when the signs differ, `irem` with the dividend's sign, `imod` with
//!   the divisor's);
//! - `bit_count`, `ufind_msb`, `ifind_msb`, `find_lsb`: the 32-bit operation on each half,
//!   combined (`ifind_msb` of `x` is `ufind_msb` of `x` with its sign bits flipped off).
//!
//! Why: Gen8+ has 64-bit adds, shifts, logic, compares and selects, but no 64-bit multiply of
//! 64-bit operands, no divider and no 64-bit bit scans; lowered in the IR, the sequences are
//! shared by every target that asks and get the usual simplifications.
//!
//! Invariants: results are bit-identical to the interpreter's for every input. Vector
//! instructions are lowered per component. Each lowered instruction is one transformation.
//!
//! Options: the target's `lower_int64`, the operations to lower (empty: the pass changes
//! nothing).

use super::manager::{Pass, PassContext};
use super::{halves, join, lower_each, per_component, replace_alu};
use crate::ir::{Builder, FuncId, InstKind, Shader, Value};
use crate::ops::AluOp;

/// The `lower-int64` pass.
pub struct LowerInt64 {
    /// The 64-bit integer operations to lower ([`crate::rewrite::TargetOptions::lower_int64`]).
    pub ops: Vec<AluOp>,
}

/// The operations the pass knows how to build.
pub const LOWERABLE: &[AluOp] = &[
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

impl Pass for LowerInt64 {
    fn name(&self) -> &str {
        "lower-int64"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "builds the 64-bit integer operations the target lacks (multiplies, division, bit scans) from others"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let ops: Vec<AluOp> = self
            .ops
            .iter()
            .copied()
            .filter(|op| LOWERABLE.contains(op))
            .collect();
        if ops.is_empty() {
            return Ok(false);
        }
        Ok(lower_each(
            shader,
            context,
            |function, inst| match &inst.kind {
                // The bit scans have 32-bit results: the source's size decides.
                InstKind::Alu(alu) if ops.contains(&alu.op) => function
                    .value_type(alu.srcs[0].value)
                    .is_some_and(|t| t.bits == 64),
                _ => false,
            },
            lower,
        ))
    }
}

fn lower(shader: &mut Shader, func: FuncId, v: Value) {
    replace_alu(shader, func, v, |b, op, srcs| {
        per_component(b, srcs, |b, s| lower_scalar(b, op, s))
    })
}

/// `op` on scalar sources `s`.
fn lower_scalar(b: &mut Builder, op: AluOp, s: &[Value]) -> Value {
    match op {
        AluOp::Imul => {
            let (a_lo, a_hi) = halves(b, s[0]);
            let (b_lo, b_hi) = halves(b, s[1]);
            let low = b.alu(AluOp::Umul2x32To64, &[a_lo, b_lo]);
            let (lo, carry) = halves(b, low);
            let cross_a = b.alu(AluOp::Imul, &[a_lo, b_hi]);
            let cross_b = b.alu(AluOp::Imul, &[a_hi, b_lo]);
            let cross = b.alu(AluOp::Iadd, &[cross_a, cross_b]);
            let hi = b.alu(AluOp::Iadd, &[carry, cross]);
            join(b, lo, hi)
        }
        AluOp::Udiv => divide(b, s[0], s[1]).0,
        AluOp::Umod => divide(b, s[0], s[1]).1,
        AluOp::Idiv | AluOp::Irem | AluOp::Imod => {
            let (n, d) = (s[0], s[1]);
            let n_abs = b.alu(AluOp::Iabs, &[n]);
            let d_abs = b.alu(AluOp::Iabs, &[d]);
            let (q, r) = divide(b, n_abs, d_abs);
            let zero = b.imm_int(0, 64);
            match op {
                AluOp::Idiv => {
                    let signs = b.alu(AluOp::Ixor, &[n, d]);
                    let differ = b.alu(AluOp::Ilt, &[signs, zero]);
                    let negated = b.alu(AluOp::Ineg, &[q]);
                    b.alu(AluOp::Bcsel, &[differ, negated, q])
                }
                _ => {
                    let negative = b.alu(AluOp::Ilt, &[n, zero]);
                    let negated = b.alu(AluOp::Ineg, &[r]);
                    let rem = b.alu(AluOp::Bcsel, &[negative, negated, r]);
                    if op == AluOp::Irem {
                        return rem;
                    }
                    let signs = b.alu(AluOp::Ixor, &[rem, d]);
                    let differ = b.alu(AluOp::Ilt, &[signs, zero]);
                    let nonzero = b.alu(AluOp::Ine, &[rem, zero]);
                    let fix = b.alu(AluOp::Iand, &[differ, nonzero]);
                    let shifted = b.alu(AluOp::Iadd, &[rem, d]);
                    b.alu(AluOp::Bcsel, &[fix, shifted, rem])
                }
            }
        }
        AluOp::BitCount => {
            let (lo, hi) = halves(b, s[0]);
            let low = b.alu(AluOp::BitCount, &[lo]);
            let high = b.alu(AluOp::BitCount, &[hi]);
            b.alu(AluOp::Iadd, &[low, high])
        }
        AluOp::UfindMsb => ufind_msb(b, s[0]),
        AluOp::IfindMsb => {
            let (lo, hi) = halves(b, s[0]);
            let thirty_one = b.imm_u32(31);
            let signs = b.alu(AluOp::Ishr, &[hi, thirty_one]);
            let lo = b.alu(AluOp::Ixor, &[lo, signs]);
            let hi = b.alu(AluOp::Ixor, &[hi, signs]);
            let flipped = join(b, lo, hi);
            ufind_msb(b, flipped)
        }
        AluOp::FindLsb => {
            let (lo, hi) = halves(b, s[0]);
            let low = b.alu(AluOp::FindLsb, &[lo]);
            let high = b.alu(AluOp::FindLsb, &[hi]);
            let thirty_two = b.imm_int(32, 32);
            let high = b.alu(AluOp::Iadd, &[high, thirty_two]);
            let zero = b.imm_u32(0);
            let none = b.imm_int(-1, 32);
            let hi_zero = b.alu(AluOp::Ieq, &[hi, zero]);
            let high = b.alu(AluOp::Bcsel, &[hi_zero, none, high]);
            let lo_zero = b.alu(AluOp::Ieq, &[lo, zero]);
            b.alu(AluOp::Bcsel, &[lo_zero, high, low])
        }
        _ => unreachable!("only the operations of LOWERABLE are lowered"),
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
