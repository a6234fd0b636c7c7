//! Bit-level helpers for the opcode semantics: reading and writing floats and integers of every
//! size from the raw `u64` bits a component is stored in.
//!
//! Fixed choices where SPIR-V leaves results undefined (the interpreter and the constant folder
//! share them because both evaluate through the opcode table):
//! - shift counts are taken modulo the bit size (as NIR and most hardware do);
//! - integer division or remainder by zero gives 0; `INT_MIN / -1` wraps to `INT_MIN`;
//! - float → integer conversions truncate toward zero and saturate to the destination range;
//!   NaN converts to 0;
//! - bitfield offsets and counts are clamped so the field lies inside the value;
//! - denormals are preserved (never flushed);
//! - `fmin`/`fmax` return the other operand when one is NaN, and order −0 below +0.
//!
//! - `fsign(±0)` keeps the zero's sign; `fsat(−0)` is +0.
//!
//! Float arithmetic of 16- and 32-bit values is computed in `f64` and rounded once to the
//! destination size. For `+ − × ÷ √` this is exactly IEEE-754 correct (the `f64` significand is
//! more than twice as wide plus two bits); fused multiply-add is evaluated natively for 32 and 64
//! bits and through round-to-odd for 16. Rounding to 16 bits is done here, to nearest even,
//! rather than by the `half` crate, whose conversion from `f64` goes through `f32` (rounding
//! twice) or truncates, depending on the host CPU. Opcodes defined by a formula of several
//! operations (`fmod`, `frem`, `flrp`, `fdot`) round after each operation at the operand size,
//! as the formula evaluated in that type does.

use half::f16;

/// Bit sizes of one evaluation: each source's and the destination's.
#[derive(Copy, Clone, Debug)]
pub struct Bits<'a> {
    pub src: &'a [u8],
    pub dst: u8,
}

/// Keeps the low `bits` bits of `v`.
#[inline]
pub fn mask(v: u64, bits: u8) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

/// Sign-extends the low `bits` bits of `v`.
#[inline]
pub fn sext(v: u64, bits: u8) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let shift = 64 - bits as u32;
        ((v << shift) as i64) >> shift
    }
}

/// Reads a float of `bits` bits as `f64` (exactly).
#[inline]
pub fn fget(v: u64, bits: u8) -> f64 {
    match bits {
        16 => f16::from_bits(v as u16).to_f64(),
        32 => f32::from_bits(v as u32) as f64,
        _ => f64::from_bits(v),
    }
}

/// Rounds `x` to a float of `bits` bits (round to nearest even) and returns its bits.
#[inline]
pub fn fput(x: f64, bits: u8) -> u64 {
    match bits {
        16 => f16_bits(x) as u64,
        32 => (x as f32).to_bits() as u64,
        _ => x.to_bits(),
    }
}

/// Rounds `x` to the nearest binary16 (ties to even) and returns its bits.
pub fn f16_bits(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a.is_nan() {
        return sign | 0x7e00;
    }
    // 65520 lies halfway between the largest finite half (65504, odd significand) and 2^16:
    // it and everything above round to infinity.
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    // The exponent of the half's quantum: the value's own binade, or the subnormal one.
    let exp = if a < 2f64.powi(-14) {
        -14
    } else {
        frexp(a).1 - 1
    };
    let quantum = 2f64.powi(exp as i32 - 10);
    // Dividing by a power of two is exact, and the quotient is below 2^11, so rounding it to an
    // integer is the one rounding step.
    let significand = (a / quantum).round_ties_even() as u16;
    // For subnormals (exp = -14) the bits are the significand itself; for normals the implicit
    // leading 1 (1024) carries into the exponent field, which also handles rounding up to the
    // next binade.
    sign | ((((exp + 14) as u16) << 10) + significand)
}

/// Rounds `x` to a float of `bits` bits and back: one step of arithmetic in that type.
#[inline]
pub fn round_to(x: f64, bits: u8) -> f64 {
    fget(fput(x, bits), bits)
}

/// Fused multiply-add with a single rounding at the destination size.
pub fn ffma(a: u64, b: u64, c: u64, bits: u8) -> u64 {
    match bits {
        16 => {
            // The product of two 11-bit significands is exact in f64, the sum is not: compute
            // it rounded to odd (round to nearest, then make the last bit odd when the result is
            // inexact), which makes the second rounding, to f16, correct. An infinite or NaN sum
            // is already exact: the error terms would be NaN there.
            let product = fget(a, 16) * fget(b, 16);
            let c = fget(c, 16);
            let sum = product + c;
            let c_part = sum - product;
            let error = (product - (sum - c_part)) + (c - c_part);
            let odd = if sum.is_finite() && error != 0.0 && sum.to_bits() & 1 == 0 {
                let away = (error > 0.0) == (sum > 0.0);
                f64::from_bits(if away {
                    sum.to_bits() + 1
                } else {
                    sum.to_bits() - 1
                })
            } else {
                sum
            };
            fput(odd, 16)
        }
        32 => {
            let (a, b, c) = (
                f32::from_bits(a as u32),
                f32::from_bits(b as u32),
                f32::from_bits(c as u32),
            );
            a.mul_add(b, c).to_bits() as u64
        }
        _ => f64::from_bits(a)
            .mul_add(f64::from_bits(b), f64::from_bits(c))
            .to_bits(),
    }
}

/// IEEE minNum with −0 < +0.
#[inline]
pub fn fmin(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// IEEE maxNum with −0 < +0.
#[inline]
pub fn fmax(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// Float → signed integer of `bits` bits: truncate, saturate, NaN → 0.
pub fn f2i(x: f64, bits: u8) -> u64 {
    let lo = -(2f64.powi(bits as i32 - 1));
    let hi = 2f64.powi(bits as i32 - 1) - 1.0;
    let v = if x.is_nan() {
        0.0
    } else {
        x.trunc().clamp(lo, hi)
    };
    mask(v as i64 as u64, bits)
}

/// Float → unsigned integer of `bits` bits: truncate, saturate, NaN → 0.
pub fn f2u(x: f64, bits: u8) -> u64 {
    let hi = if bits >= 64 {
        u64::MAX as f64
    } else {
        ((1u64 << bits) - 1) as f64
    };
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= hi {
        mask(u64::MAX, bits)
    } else {
        x.trunc() as u64
    }
}

/// Signed integer → float of `bits` bits, rounded once.
pub fn i2f(x: i64, bits: u8) -> u64 {
    match bits {
        32 => (x as f32).to_bits() as u64,
        64 => (x as f64).to_bits(),
        // Every integer that does not overflow f16 is exact in f64.
        _ => fput(x as f64, 16),
    }
}

/// Unsigned integer → float of `bits` bits, rounded once.
pub fn u2f(x: u64, bits: u8) -> u64 {
    match bits {
        32 => (x as f32).to_bits() as u64,
        64 => (x as f64).to_bits(),
        _ => fput(x as f64, 16),
    }
}

/// Converts to a 16-bit float rounding toward zero.
pub fn f2f16_rtz(x: f64) -> u64 {
    let bits = f16_bits(x);
    let away = f16::from_bits(bits).to_f64().abs() > x.abs();
    if x.is_nan() || !away {
        bits as u64
    } else {
        // One step toward zero in magnitude; infinity steps to the largest finite value.
        (bits - 1) as u64
    }
}

/// `ldexp` without intermediate overflow: scales in steps that stay representable.
pub fn ldexp(x: f64, exp: i64) -> f64 {
    let mut e = exp.clamp(-2200, 2200);
    let mut v = x;
    while e > 1000 {
        v *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        v *= 2f64.powi(-1000);
        e += 1000;
    }
    v * 2f64.powi(e as i32)
}

/// Splits a finite non-zero float into a significand in [0.5, 1) and an exponent.
pub fn frexp(x: f64) -> (f64, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let mut exp = 0i64;
    let mut v = x;
    // Bring denormals into the normal range first.
    if v.abs() < f64::MIN_POSITIVE {
        v *= 2f64.powi(64);
        exp -= 64;
    }
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    exp += biased - 1022;
    let sig = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (sig, exp)
}

/// Clamps a bitfield `(offset, count)` so it lies inside a value of `bits` bits.
pub fn bitfield(offset: u64, count: u64, bits: u8) -> (u32, u32) {
    let offset = offset.min(bits as u64) as u32;
    let count = count.min(bits as u64 - offset as u64) as u32;
    (offset, count)
}

/// A mask of `count` ones starting at bit `offset`.
pub fn field_mask(offset: u32, count: u32) -> u64 {
    if count == 0 {
        0
    } else if count >= 64 {
        u64::MAX
    } else {
        ((1u64 << count) - 1) << offset
    }
}

/// Round half to even, as GLSL `roundEven` and the pack functions use.
pub fn round_even(x: f64) -> f64 {
    x.round_ties_even()
}

/// Rounds to f16 precision, flushing magnitudes below the smallest normal f16 to signed zero
/// (SPIR-V `OpQuantizeToF16`; the flush looks at the value before rounding, as NIR does).
pub fn quantize_f16(x: f64) -> f64 {
    if x.abs() < 2f64.powi(-14) {
        0.0f64.copysign(x)
    } else {
        round_to(x, 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_extension_and_masking() {
        assert_eq!(sext(0xff, 8), -1);
        assert_eq!(sext(0x7f, 8), 127);
        assert_eq!(mask(u64::MAX, 16), 0xffff);
        assert_eq!(mask(5, 64), 5);
    }

    #[test]
    fn conversions_saturate() {
        assert_eq!(f2i(1e20, 32), 0x7fff_ffff);
        assert_eq!(f2i(-1e20, 8), 0x80);
        assert_eq!(f2i(f64::NAN, 32), 0);
        assert_eq!(f2u(-3.0, 32), 0);
        assert_eq!(f2u(1e30, 16), 0xffff);
        assert_eq!(f2i(-2.7, 32), mask(-2i64 as u64, 32));
    }

    #[test]
    fn min_max_order_signed_zero_and_skip_nan() {
        assert!(fmin(0.0, -0.0).is_sign_negative());
        assert!(fmax(-0.0, 0.0).is_sign_positive());
        assert_eq!(fmin(f64::NAN, 2.0), 2.0);
        assert_eq!(fmax(3.0, f64::NAN), 3.0);
    }

    #[test]
    fn frexp_handles_denormals() {
        let (s, e) = frexp(f64::MIN_POSITIVE / 4.0);
        assert_eq!(s, 0.5);
        assert_eq!(e, -1023);
        assert_eq!(frexp(8.0), (0.5, 4));
        assert_eq!(ldexp(0.5, 4), 8.0);
        assert_eq!(ldexp(1.0, 3000), f64::INFINITY);
    }

    #[test]
    fn f16_rounding_is_correct_to_nearest_even() {
        let one = 1.0f64;
        // Just above the halfway point between 1 and the next half: rounds up, however far
        // below f32 precision the excess lies.
        assert_eq!(f16_bits(one + 2f64.powi(-11) + 2f64.powi(-40)), 0x3c01);
        assert_eq!(f16_bits(one + 2f64.powi(-11) + 2f64.powi(-22)), 0x3c01);
        // Exactly halfway: ties to even.
        assert_eq!(f16_bits(one + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f16_bits(one + 3.0 * 2f64.powi(-11)), 0x3c02);
        // Subnormals, the smallest normal, overflow, signs and NaN.
        assert_eq!(f16_bits(2f64.powi(-24)), 0x0001);
        assert_eq!(f16_bits(2f64.powi(-25)), 0x0000);
        assert_eq!(f16_bits(2f64.powi(-25) * 1.5), 0x0001);
        assert_eq!(f16_bits(2f64.powi(-14) * (1.0 - 2f64.powi(-12))), 0x0400);
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(65519.99), 0x7bff);
        assert_eq!(f16_bits(65520.0), 0x7c00);
        assert_eq!(f16_bits(-2.0), 0xc000);
        assert_eq!(f16_bits(-0.0), 0x8000);
        assert_eq!(f16_bits(f64::NEG_INFINITY), 0xfc00);
        assert!(f16::from_bits(f16_bits(f64::NAN)).is_nan());
        // Every half converts back to itself.
        for bits in 0..=0xffffu16 {
            let h = f16::from_bits(bits);
            if !h.is_nan() {
                assert_eq!(f16_bits(h.to_f64()), bits);
            }
        }
    }

    #[test]
    fn f16_fma_rounds_once() {
        // 1.5 * 0x3956 + 2^-24 is exactly 1 + 2^-11 + 2^-24: just above halfway, so it rounds up,
        // which rounding the f64 sum to nearest first would lose.
        assert_eq!(ffma(0x3e00, 0x3956, 0x0001, 16), 0x3c01);
        assert_eq!(ffma(0x3c00, 0x3c00, 0x3c00, 16), 0x4000);
        // An infinite addend stays infinite: -0.0 * 2^-14 + -inf.
        assert_eq!(ffma(0x8000, 0x0400, 0xfc00, 16), 0xfc00);
        assert_eq!(ffma(0x7bff, 0x7bff, 0x3c00, 16), 0x7c00);
    }

    #[test]
    fn quantize_flushes_below_the_smallest_normal_half() {
        assert_eq!(quantize_f16(6.1034e-5), 0.0);
        assert!(quantize_f16(-1e-6).is_sign_negative());
        assert_eq!(quantize_f16(2f64.powi(-14)), 2f64.powi(-14));
        assert_eq!(quantize_f16(0.1), f16::from_bits(0x2e66).to_f64());
        assert_eq!(quantize_f16(1e6), f64::INFINITY);
    }

    #[test]
    fn rtz_rounds_toward_zero() {
        // 1 + 2^-11 + tiny rounds to 1 + 2^-10 to nearest, but to 1.0 toward zero.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-20);
        assert_eq!(fget(f2f16_rtz(x), 16), 1.0);
        assert_eq!(fget(f2f16_rtz(1e6), 16), 65504.0);
        assert_eq!(fget(f2f16_rtz(-1e6), 16), -65504.0);
    }
}
