//! `lower-doubles`: the 64-bit float operations a target lacks become 64-bit adds, multiplies,
//! fused multiply-adds and selects, 32-bit estimates, and integer operations on the two 32-bit
//! halves of the values.
//!
//! What, for the operations in the target's `lower_doubles` list:
//! - `ftrunc` clears the fraction bits below the exponent with two 32-bit masks (`±0` below 1);
//!   `ffloor`, `fceil` correct the truncation by one where it rounded the wrong way; `ffract` is
//!   `x − floor(x)`; `fround_even` adds and subtracts `2^52` to the magnitude (exactly, marked
//!   `exact` so that no rule folds it) and puts the sign back; `fsign` compares and selects.
//! - `frcp`, `fdiv`, `frsq`, `fsqrt` work on the mantissa `m` (the value with its exponent set
//!   to 0, or to 0 or 1 to keep an even exponent for square roots; denormals are scaled by
//!   `2^54` first): a 32-bit estimate of `1/m` or `1/√m`, two Newton–Raphson steps in 64 bits
//!   (each doubles the correct bits: 23 → 46 → 92), and for `fdiv` and `fsqrt` one last
//!   correction of the quotient or root by its residual. The result is then scaled by the
//!   power of two the exponent stands for, in two multiplies, which round to denormals and
//!   overflow to infinity as the exact operation does. Zeros, infinities, NaNs and negative
//!   square roots are selected at the end.
//! - `fldexp` multiplies by three powers of two (its exponent clamped to where the result is
//!   0 or infinite anyway); `frexp_sig` and `frexp_exp` read and set the exponent bits.
//! - Conversions from and to 32-bit integers go through 16-bit halves, which 32-bit floats
//!   hold exactly: `u2f64`/`i2f64` add the high half times 2^16 to the low half (exact: the
//!   result is an integer of 32 bits); `f2u32`/`f2i32` truncate, saturate (NaN gives 0),
//!   and split the result into `floor(t / 2^16)` and the exact remainder. Narrower integers
//!   (booleans, 8 and 16 bits) convert through a 32-bit float, which holds them exactly.
//!
//! Why: Gen's 64-bit floats have adds, multiplies, `mad`, compares and selects, but no math
//! unit functions, rounding or division at 64 bits; the mid-end builds them once for every
//! target that asks, and the results get the usual treatment (CSE of the halves, constant
//! folding, fused multiply-adds).
//!
//! Invariants: `ftrunc`, `ffloor`, `fceil`, `ffract`, `fround_even`, `fsign`, `fldexp` (for
//! normal results), `frexp_sig`, `frexp_exp` are bit-identical to the interpreter; `frcp`,
//! `frsq`, `fdiv`, `fsqrt` are within a few units in the last place of the exact result, with
//! its infinities, zeros (`fsqrt(-0) = -0`) and NaNs. Vector instructions are lowered per
//! component. Each lowered instruction is one transformation.
//!
//! Options: the target's `lower_doubles`, the operations to lower (empty: the pass changes
//! nothing): [`ROUNDING_AND_MATH`] for Gen's doubles, [`lowerable`] for R600's (which also
//! lack the conversions from and to 32-bit integers).

use super::manager::{Pass, PassContext};
use super::{halves, has_64_bit_operand, join, lower_each, per_component, replace_alu};
use crate::ir::{Builder, FuncId, Function, Inst, InstKind, Shader, Value};
use crate::ops::{AluOp, BaseType};

/// The `lower-doubles` pass.
pub struct LowerDoubles {
    /// The 64-bit float operations to lower ([`crate::rewrite::TargetOptions::lower_doubles`]).
    pub ops: Vec<AluOp>,
}

/// The rounding and math-unit operations: what a target whose 64-bit floats have adds,
/// multiplies, fused multiply-adds, compares, selects and conversions still lacks.
pub const ROUNDING_AND_MATH: &[AluOp] = &[
    AluOp::Ftrunc,
    AluOp::Ffloor,
    AluOp::Fceil,
    AluOp::Ffract,
    AluOp::FroundEven,
    AluOp::Fsign,
    AluOp::Frcp,
    AluOp::Fdiv,
    AluOp::Frsq,
    AluOp::Fsqrt,
    AluOp::Fldexp,
    AluOp::FrexpSig,
    AluOp::FrexpExp,
];

/// The conversions between doubles and 32-bit integers.
pub const CONVERSIONS: &[AluOp] = &[AluOp::I2f64, AluOp::U2f64, AluOp::F2i32, AluOp::F2u32];

/// Every operation the pass knows how to build: what a target whose 64-bit floats have adds,
/// multiplies, fused multiply-adds, minimums, maximums, compares and the conversions between
/// float sizes only asks for.
pub fn lowerable() -> Vec<AluOp> {
    [ROUNDING_AND_MATH, CONVERSIONS].concat()
}

impl Pass for LowerDoubles {
    fn name(&self) -> &str {
        "lower-doubles"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "builds the 64-bit float operations the target lacks (rounding, division, square roots, exponents) from others"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        if self.ops.is_empty() {
            return Ok(false);
        }
        let ops: Vec<AluOp> = self
            .ops
            .iter()
            .copied()
            .filter(|op| ROUNDING_AND_MATH.contains(op) || CONVERSIONS.contains(op))
            .collect();
        // Conversions from and to 64-bit integers are `lower-int64`'s.
        let lowers = |function: &Function, inst: &Inst| {
            matches!(&inst.kind, InstKind::Alu(alu) if ops.contains(&alu.op))
                && has_64_bit_operand(function, inst, &[BaseType::Float])
                && !has_64_bit_operand(function, inst, &[BaseType::Int, BaseType::Uint])
        };
        // Each round lowers what the previous one built (`ffract` builds `ffloor`, which
        // builds `ftrunc`).
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
    let x = s[0];
    match op {
        AluOp::Ftrunc => trunc(b, x),
        AluOp::U2f64 | AluOp::I2f64 if b.value_type(x).bits < 32 => {
            // Narrower integers are exact as 32-bit floats.
            let to_float = if op == AluOp::I2f64 {
                AluOp::I2f32
            } else {
                AluOp::U2f32
            };
            let single = b.alu(to_float, &[x]);
            b.alu(AluOp::F2f64, &[single])
        }
        AluOp::U2f64 | AluOp::I2f64 => {
            let sixteen = b.imm_u32(16);
            let high_shift = if op == AluOp::I2f64 {
                AluOp::Ishr
            } else {
                AluOp::Ushr
            };
            let high = b.alu(high_shift, &[x, sixteen]);
            let low_mask = b.imm_u32(0xffff);
            let low = b.alu(AluOp::Iand, &[x, low_mask]);
            let to_float = if op == AluOp::I2f64 {
                AluOp::I2f32
            } else {
                AluOp::U2f32
            };
            let high = b.alu(to_float, &[high]);
            let high = b.alu(AluOp::F2f64, &[high]);
            let low = b.alu(AluOp::U2f32, &[low]);
            let low = b.alu(AluOp::F2f64, &[low]);
            let scale = b.imm_float(65536.0, 64);
            let high = b.alu(AluOp::Fmul, &[high, scale]);
            b.alu(AluOp::Fadd, &[high, low])
        }
        AluOp::F2i32 | AluOp::F2u32 => {
            let signed = op == AluOp::F2i32;
            let t = trunc(b, x);
            let zero = b.imm_float(0.0, 64);
            let number = b.alu(AluOp::Feq, &[t, t]);
            let t = b.alu(AluOp::Bcsel, &[number, t, zero]);
            let (min, max) = if signed {
                (-(2f64.powi(31)), 2f64.powi(31) - 1.0)
            } else {
                (0.0, 2f64.powi(32) - 1.0)
            };
            let (min, max) = (b.imm_float(min, 64), b.imm_float(max, 64));
            let t = b.alu(AluOp::Fmax, &[t, min]);
            let t = b.alu(AluOp::Fmin, &[t, max]);
            let down = b.imm_float(2f64.powi(-16), 64);
            let high = b.alu(AluOp::Fmul, &[t, down]);
            let high = b.alu(AluOp::Ffloor, &[high]);
            let up = b.imm_float(65536.0, 64);
            let high_part = b.alu(AluOp::Fmul, &[high, up]);
            let low = b.alu(AluOp::Fsub, &[t, high_part]);
            let high = b.alu(AluOp::F2f32, &[high]);
            let high = b.alu(if signed { AluOp::F2i32 } else { AluOp::F2u32 }, &[high]);
            let low = b.alu(AluOp::F2f32, &[low]);
            let low = b.alu(AluOp::F2u32, &[low]);
            let sixteen = b.imm_u32(16);
            let high = b.alu(AluOp::Ishl, &[high, sixteen]);
            b.alu(AluOp::Ior, &[high, low])
        }
        AluOp::Ffloor => floor(b, x),
        AluOp::Fceil => {
            let t = trunc(b, x);
            let one = b.imm_float(1.0, 64);
            let up = b.alu(AluOp::Fadd, &[t, one]);
            let rounded_down = b.alu(AluOp::Flt, &[t, x]);
            b.alu(AluOp::Bcsel, &[rounded_down, up, t])
        }
        AluOp::Ffract => {
            let f = floor(b, x);
            b.alu(AluOp::Fsub, &[x, f])
        }
        AluOp::FroundEven => {
            let magnitude = b.alu(AluOp::Fabs, &[x]);
            let two_52 = b.imm_float(4_503_599_627_370_496.0, 64);
            let shifted = exact(b, AluOp::Fadd, &[magnitude, two_52]);
            let rounded = exact(b, AluOp::Fsub, &[shifted, two_52]);
            let (_, hi) = halves(b, x);
            let sign = sign_bit(b, hi);
            let (r_lo, r_hi) = halves(b, rounded);
            let signed_hi = b.alu(AluOp::Ior, &[r_hi, sign]);
            let signed = join(b, r_lo, signed_hi);
            let has_fraction = b.alu(AluOp::Flt, &[magnitude, two_52]);
            b.alu(AluOp::Bcsel, &[has_fraction, signed, x])
        }
        AluOp::Fsign => {
            let zero = b.imm_float(0.0, 64);
            let one = b.imm_float(1.0, 64);
            let minus_one = b.imm_float(-1.0, 64);
            let negative = b.alu(AluOp::Flt, &[x, zero]);
            let nonpositive = b.alu(AluOp::Bcsel, &[negative, minus_one, x]);
            let positive = b.alu(AluOp::Flt, &[zero, x]);
            b.alu(AluOp::Bcsel, &[positive, one, nonpositive])
        }
        AluOp::Frcp => {
            let n = Normalized::of(b, x, 0);
            let r = reciprocal(b, n.mantissa);
            let minus = b.alu(AluOp::Ineg, &[n.exponent]);
            let r = scale(b, r, minus, 2);
            reciprocal_specials(b, x, &n, r)
        }
        AluOp::Fdiv => {
            let (a, d) = (x, s[1]);
            let n = Normalized::of(b, d, 0);
            let r = reciprocal(b, n.mantissa);
            let q = b.alu(AluOp::Fmul, &[a, r]);
            let minus_m = b.alu(AluOp::Fneg, &[n.mantissa]);
            let residual = b.alu(AluOp::Ffma, &[minus_m, q, a]);
            let corrected = b.alu(AluOp::Ffma, &[r, residual, q]);
            // An infinite or NaN dividend makes the residual NaN: the uncorrected quotient
            // is then the answer.
            let lost = b.alu(AluOp::Fneu, &[corrected, corrected]);
            let q = b.alu(AluOp::Bcsel, &[lost, q, corrected]);
            let minus = b.alu(AluOp::Ineg, &[n.exponent]);
            let q = scale(b, q, minus, 2);
            // A zero, infinite or NaN divisor: `a` times its reciprocal.
            let one = b.imm_float(1.0, 64);
            let special_reciprocal = reciprocal_specials(b, d, &n, one);
            let special = b.alu(AluOp::Fmul, &[a, special_reciprocal]);
            let zero = b.imm_float(0.0, 64);
            let is_zero = b.alu(AluOp::Feq, &[d, zero]);
            let not_finite = n.is_inf_or_nan(b);
            let is_special = b.alu(AluOp::Ior, &[is_zero, not_finite]);
            b.alu(AluOp::Bcsel, &[is_special, special, q])
        }
        AluOp::Frsq | AluOp::Fsqrt => {
            // The exponent split as `2·half + odd`; the mantissa keeps `odd`, in [1, 4).
            let n = Normalized::of(b, x, 1);
            let one = b.imm_int(1, 32);
            let half = b.alu(AluOp::Ishr, &[n.exponent, one]);
            let narrow = b.alu(AluOp::F2f32, &[n.mantissa]);
            let estimate = b.alu(AluOp::Frsq, &[narrow]);
            let mut y = b.alu(AluOp::F2f64, &[estimate]);
            let minus_half_m = {
                let half_f = b.imm_float(-0.5, 64);
                b.alu(AluOp::Fmul, &[n.mantissa, half_f])
            };
            let three_halves = b.imm_float(1.5, 64);
            for _ in 0..2 {
                // y·(3/2 − m·y²/2)
                let t = b.alu(AluOp::Fmul, &[minus_half_m, y]);
                let factor = b.alu(AluOp::Ffma, &[t, y, three_halves]);
                y = b.alu(AluOp::Fmul, &[y, factor]);
            }
            let zero = b.imm_float(0.0, 64);
            let (result, at_zero, at_infinity) = if op == AluOp::Fsqrt {
                // s = m·y, corrected by (m − s²)·y/2.
                let s0 = b.alu(AluOp::Fmul, &[n.mantissa, y]);
                let minus_s0 = b.alu(AluOp::Fneg, &[s0]);
                let residual = b.alu(AluOp::Ffma, &[minus_s0, s0, n.mantissa]);
                let half_f = b.imm_float(0.5, 64);
                let half_y = b.alu(AluOp::Fmul, &[y, half_f]);
                let s = b.alu(AluOp::Ffma, &[residual, half_y, s0]);
                (scale(b, s, half, 1), x, x)
            } else {
                let minus = b.alu(AluOp::Ineg, &[half]);
                let infinity = signed_infinity(b, x);
                let is_nan = b.alu(AluOp::Fneu, &[x, x]);
                let at_infinity = b.alu(AluOp::Bcsel, &[is_nan, x, zero]);
                (scale(b, y, minus, 1), infinity, at_infinity)
            };
            let not_finite = n.is_inf_or_nan(b);
            let r = b.alu(AluOp::Bcsel, &[not_finite, at_infinity, result]);
            let negative = b.alu(AluOp::Flt, &[x, zero]);
            let nan = b.imm(64, &[0x7ff8_0000_0000_0000]);
            let r = b.alu(AluOp::Bcsel, &[negative, nan, r]);
            let is_zero = b.alu(AluOp::Feq, &[x, zero]);
            b.alu(AluOp::Bcsel, &[is_zero, at_zero, r])
        }
        AluOp::Fldexp => scale(b, x, s[1], 3),
        AluOp::FrexpSig | AluOp::FrexpExp => {
            let n = Normalized::of(b, x, 0);
            let zero = b.imm_float(0.0, 64);
            let is_zero = b.alu(AluOp::Feq, &[x, zero]);
            let not_finite = n.is_inf_or_nan(b);
            let unchanged = b.alu(AluOp::Ior, &[is_zero, not_finite]);
            if op == AluOp::FrexpSig {
                // The mantissa in [0.5, 1).
                let half_exponent = b.imm_int(1022, 32);
                let sig = with_exponent(b, n.mantissa, half_exponent);
                b.alu(AluOp::Bcsel, &[unchanged, x, sig])
            } else {
                let one = b.imm_int(1, 32);
                let exponent = b.alu(AluOp::Iadd, &[n.exponent, one]);
                let none = b.imm_int(0, 32);
                b.alu(AluOp::Bcsel, &[unchanged, none, exponent])
            }
        }
        _ => unreachable!("only the operations the pass knows are lowered"),
    }
}

/// An ALU instruction no inexact rule may rewrite.
fn exact(b: &mut Builder, op: AluOp, srcs: &[Value]) -> Value {
    let v = b.alu(op, srcs);
    if let InstKind::Alu(alu) = &mut b.function_mut().inst_mut(v).kind {
        alu.exact = true;
    }
    v
}

fn and_imm(b: &mut Builder, x: Value, mask: u32) -> Value {
    let mask = b.imm_u32(mask);
    b.alu(AluOp::Iand, &[x, mask])
}

fn sign_bit(b: &mut Builder, hi: Value) -> Value {
    and_imm(b, hi, 0x8000_0000)
}

/// The biased exponent field of a double whose high half is `hi`.
fn exponent_field(b: &mut Builder, hi: Value) -> Value {
    let twenty = b.imm_u32(20);
    let shifted = b.alu(AluOp::Ushr, &[hi, twenty]);
    and_imm(b, shifted, 0x7ff)
}

/// `x` with its biased exponent field set to `field` (in range).
fn with_exponent(b: &mut Builder, x: Value, field: Value) -> Value {
    let (lo, hi) = halves(b, x);
    let kept = and_imm(b, hi, 0x800f_ffff);
    let twenty = b.imm_u32(20);
    let exponent = b.alu(AluOp::Ishl, &[field, twenty]);
    let hi = b.alu(AluOp::Ior, &[kept, exponent]);
    join(b, lo, hi)
}

/// `±∞` with the sign of `x`.
fn signed_infinity(b: &mut Builder, x: Value) -> Value {
    let (_, hi) = halves(b, x);
    let sign = sign_bit(b, hi);
    let infinity = b.imm_u32(0x7ff0_0000);
    let hi = b.alu(AluOp::Ior, &[sign, infinity]);
    let zero = b.imm_u32(0);
    join(b, zero, hi)
}

/// A double split into a mantissa (its sign kept, its exponent replaced) and the exponent it
/// had, denormals included.
struct Normalized {
    /// `x` times a power of two, in `[1, 2)` in magnitude, or `[1, 4)` when the exponent's
    /// parity moved into it.
    mantissa: Value,
    /// The unbiased exponent `x` had, minus the parity the mantissa kept.
    exponent: Value,
    /// The original biased exponent field.
    field: Value,
}

impl Normalized {
    /// `x` normalized; with `parity` 1, the mantissa keeps the exponent's lowest bit so that
    /// the exponent left is even.
    fn of(b: &mut Builder, x: Value, parity: u32) -> Normalized {
        let (_, hi) = halves(b, x);
        let field = exponent_field(b, hi);
        let zero = b.imm_u32(0);
        let denormal = b.alu(AluOp::Ieq, &[field, zero]);
        let two_54 = b.imm_float(18_014_398_509_481_984.0, 64);
        let scaled_up = b.alu(AluOp::Fmul, &[x, two_54]);
        let scaled = b.alu(AluOp::Bcsel, &[denormal, scaled_up, x]);
        let (_, scaled_hi) = halves(b, scaled);
        let scaled_field = exponent_field(b, scaled_hi);
        let bias = b.imm_int(1023, 32);
        let denormal_bias = b.imm_int(1023 + 54, 32);
        let bias = b.alu(AluOp::Bcsel, &[denormal, denormal_bias, bias]);
        let unbiased = b.alu(AluOp::Isub, &[scaled_field, bias]);
        let (mantissa, exponent) = if parity == 0 {
            let zero_exponent = b.imm_int(1023, 32);
            (with_exponent(b, scaled, zero_exponent), unbiased)
        } else {
            let odd = and_imm(b, unbiased, 1);
            let base = b.imm_int(1023, 32);
            let field = b.alu(AluOp::Iadd, &[odd, base]);
            let even = b.alu(AluOp::Isub, &[unbiased, odd]);
            (with_exponent(b, scaled, field), even)
        };
        Normalized {
            mantissa,
            exponent,
            field,
        }
    }

    fn is_inf_or_nan(&self, b: &mut Builder) -> Value {
        let all_ones = b.imm_u32(0x7ff);
        b.alu(AluOp::Ieq, &[self.field, all_ones])
    }
}

/// `1/m` for `m` in `[1, 2)` in magnitude: a 32-bit estimate and two Newton–Raphson steps.
fn reciprocal(b: &mut Builder, m: Value) -> Value {
    let narrow = b.alu(AluOp::F2f32, &[m]);
    let estimate = b.alu(AluOp::Frcp, &[narrow]);
    let mut r = b.alu(AluOp::F2f64, &[estimate]);
    let minus_m = b.alu(AluOp::Fneg, &[m]);
    let one = b.imm_float(1.0, 64);
    for _ in 0..2 {
        let error = b.alu(AluOp::Ffma, &[minus_m, r, one]);
        r = b.alu(AluOp::Ffma, &[r, error, r]);
    }
    r
}

/// `r`, the reciprocal computed for ordinary `x`, or what `1/x` is at zeros, infinities and
/// NaNs.
fn reciprocal_specials(b: &mut Builder, x: Value, n: &Normalized, r: Value) -> Value {
    let (_, hi) = halves(b, x);
    let sign = sign_bit(b, hi);
    let zero_lo = b.imm_u32(0);
    let signed_zero = join(b, zero_lo, sign);
    let is_nan = b.alu(AluOp::Fneu, &[x, x]);
    let at_infinity = b.alu(AluOp::Bcsel, &[is_nan, x, signed_zero]);
    let not_finite = n.is_inf_or_nan(b);
    let r = b.alu(AluOp::Bcsel, &[not_finite, at_infinity, r]);
    let zero = b.imm_float(0.0, 64);
    let is_zero = b.alu(AluOp::Feq, &[x, zero]);
    let infinity = signed_infinity(b, x);
    b.alu(AluOp::Bcsel, &[is_zero, infinity, r])
}

/// `x · 2^n` (`n` a 32-bit integer) in `parts` multiplies by normal powers of two, each
/// exponent clamped to `[-1022, 1023]`: exact while the result is normal, rounded once
/// where it is denormal, infinite where it overflows.
fn scale(b: &mut Builder, x: Value, n: Value, parts: usize) -> Value {
    let (low, high) = (b.imm_int(-1022, 32), b.imm_int(1023, 32));
    let mut rest = n;
    let mut result = x;
    for part in 0..parts {
        let clamped = b.alu(AluOp::Imax, &[rest, low]);
        let clamped = b.alu(AluOp::Imin, &[clamped, high]);
        if part + 1 < parts {
            rest = b.alu(AluOp::Isub, &[rest, clamped]);
        }
        let bias = b.imm_int(1023, 32);
        let field = b.alu(AluOp::Iadd, &[clamped, bias]);
        let twenty = b.imm_u32(20);
        let hi = b.alu(AluOp::Ishl, &[field, twenty]);
        let lo = b.imm_u32(0);
        let power = join(b, lo, hi);
        result = b.alu(AluOp::Fmul, &[result, power]);
    }
    result
}

/// `x` rounded toward zero: the fraction bits below its exponent cleared.
fn trunc(b: &mut Builder, x: Value) -> Value {
    let (lo, hi) = halves(b, x);
    let field = exponent_field(b, hi);
    // How many of the 52 fraction bits are below the binary point, 0 to 52, or 63 (every bit
    // but the sign) for magnitudes below 1.
    let bias = b.imm_int(1023 + 52, 32);
    let below = b.alu(AluOp::Isub, &[bias, field]);
    let zero = b.imm_int(0, 32);
    let below = b.alu(AluOp::Imax, &[below, zero]);
    let fraction_only = b.imm_int(52, 32);
    let under_one = b.alu(AluOp::Ilt, &[fraction_only, below]);
    let all = b.imm_int(63, 32);
    let below = b.alu(AluOp::Bcsel, &[under_one, all, below]);
    let ones = b.imm_u32(u32::MAX);
    let thirty_two = b.imm_int(32, 32);
    let in_high = b.alu(AluOp::Ige, &[below, thirty_two]);
    let low_mask = b.alu(AluOp::Ishl, &[ones, below]);
    let zero_u = b.imm_u32(0);
    let low_mask = b.alu(AluOp::Bcsel, &[in_high, zero_u, low_mask]);
    let high_shift = b.alu(AluOp::Isub, &[below, thirty_two]);
    let high_mask = b.alu(AluOp::Ishl, &[ones, high_shift]);
    let high_mask = b.alu(AluOp::Bcsel, &[in_high, high_mask, ones]);
    let lo = b.alu(AluOp::Iand, &[lo, low_mask]);
    let hi = b.alu(AluOp::Iand, &[hi, high_mask]);
    join(b, lo, hi)
}

/// `x` rounded toward −∞: the truncation, one less where it rounded up.
fn floor(b: &mut Builder, x: Value) -> Value {
    let t = trunc(b, x);
    let one = b.imm_float(1.0, 64);
    let down = b.alu(AluOp::Fsub, &[t, one]);
    let rounded_up = b.alu(AluOp::Flt, &[x, t]);
    b.alu(AluOp::Bcsel, &[rounded_up, down, t])
}
