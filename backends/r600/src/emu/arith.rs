//! The arithmetic of the ALU operations: each one-slot operation's result from its sources'
//! raw bits on a given chip, and the comparisons that predicates, kills and conditional moves
//! share.
//!
//! # Arithmetic
//!
//! Float operations round once to f32 and keep denormals, like the interpreter; the
//! transcendental ones (EXP_IEEE 2^x, LOG_IEEE log2, RECIP, RECIPSQRT, SQRT, SIN, COS) are
//! computed in f64 and rounded once. Model choices:
//! - MUL, MULADD* and DOT4 are "legacy": a zero operand of the product gives a zero product
//!   (signed by the operands' signs) even against infinity or NaN; MUL_IEEE, MULADD_IEEE and
//!   DOT4_IEEE are IEEE. MULADD and MULADD_IEEE are not fused: the product is rounded, then
//!   the sum (MULADD_M2/M4/D2 then scale by 2, 4 or ½). FMA is the fused one (Evergreen on).
//! - DOT4 (and DOT4_IEEE) fills the four vector slots: each slot's src0·src1 product, summed
//!   left to right (x, y, z, w) in f32, replicated to every slot (and PV), written by each
//!   slot's write mask. MAX4 likewise takes the MAX of the four src0.
//! - MAX and MIN return `a >= b ? a : b` and `a < b ? a : b` (so a NaN `a` gives `b`, a NaN
//!   `b` gives NaN); MAX_DX10 and MIN_DX10 return the other operand when one is NaN and order
//!   −0 below +0.
//! - SETcc (1.0/0.0), SETcc_DX10 (~0/0) compare floats; SETcc_INT and SETcc_UINT integers.
//!   NE holds for unordered floats, the other conditions do not. CNDcc compare src0 with 0.0
//!   (CNDcc_INT with 0) and give src1 where the condition holds, else src2.
//! - FLT_TO_INT and FLT_TO_UINT truncate on R600/R700 and round to nearest even on
//!   Evergreen/Cayman (Mesa emits TRUNC first there); both saturate, NaN gives 0. INT_TO_FLT
//!   and UINT_TO_FLT round to nearest even.
//! - LOG_CLAMPED and RECIP_CLAMPED, RECIPSQRT_CLAMPED clamp infinite results to ±FLT_MAX.
//! - SIN and COS take radians on R600 and revolutions (sin(2π·x)) on R700 and later.
//! - Shifts use the low 5 bits of the count. MULLO/MULHI give the low/high 32 bits of the
//!   64-bit product. RECIP_UINT gives ⌊2³²/x⌋ saturated to 0xFFFFFFFF, and 0xFFFFFFFF for 0.
//! - BFE_UINT/BFE_INT (value, offset, width; the low 5 bits of each; width 0 gives 0),
//!   BFI_INT (`src0 & src1 | !src0 & src2`), BFM_INT (a mask of `src0` bits at `src1`),
//!   BCNT_INT, FFBH_UINT (leading zeros), FFBH_INT (leading bits equal to the sign), FFBL_INT
//!   (trailing zeros; the FFB* give −1 when there is no such bit), BFREV_INT, ADDC_UINT (the
//!   carry), SUBB_UINT (the borrow), MUL_UINT24 (the low 24 bits of each operand).
//! - On Cayman the trans operations take three or four vector slots, each instruction
//!   computing from its own sources: each is run independently (MULLO_INT and the others too).

use super::{ONE, Why, unsupported};
use crate::isa::{AluOpcode, Chip, flag};
use shrew_engine::ops::eval;

/// Whether `op` is a predicate set with a condition (PRED_SETcc, not the pushing forms).
pub(super) fn is_pred_set(op: AluOpcode) -> bool {
    op.has(flag::PRED) && op.info().cc.is_some()
}

/// Whether `a cc b` holds for `op`'s condition and compare type (float unless INT_CMP or
/// UINT_CMP); conditional moves compare `a` with 0, whose bits are zero in every type.
pub(super) fn holds(op: AluOpcode, a: u32, b: u32) -> bool {
    use std::cmp::Ordering::*;
    let order = if op.has(flag::INT_CMP) {
        Some((a as i32).cmp(&(b as i32)))
    } else if op.has(flag::UINT_CMP) {
        Some(a.cmp(&b))
    } else {
        f32::from_bits(a).partial_cmp(&f32::from_bits(b))
    };
    match op.info().cc {
        Some(crate::isa::Cc::E) => order == Some(Equal),
        Some(crate::isa::Cc::Ne) => order != Some(Equal),
        Some(crate::isa::Cc::Gt) => order == Some(Greater),
        Some(crate::isa::Cc::Ge) => matches!(order, Some(Greater | Equal)),
        Some(crate::isa::Cc::Lt) => order == Some(Less),
        Some(crate::isa::Cc::Le) => matches!(order, Some(Less | Equal)),
        None => false,
    }
}

/// MUL's product: a zero operand gives zero, even against infinity or NaN.
pub(super) fn mul_legacy(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        if a.is_sign_negative() != b.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else {
        a * b
    }
}

/// MAX: `a >= b ? a : b`.
pub(super) fn max_legacy(a: f32, b: f32) -> f32 {
    if a >= b { a } else { b }
}

/// MULADD's `a·b + c`, the product rounded, with the legacy zero rule (`legacy`) or IEEE.
fn muladd(a: f32, b: f32, c: f32, legacy: bool) -> f32 {
    let product = if legacy { mul_legacy(a, b) } else { a * b };
    product + c
}

/// Clamps an infinite result to ±FLT_MAX.
fn clamp_infinite(x: f64) -> f64 {
    x.clamp(f32::MIN as f64, f32::MAX as f64)
}

/// The result of a one-slot operation `op` on `chip` from its sources' raw bits.
pub(super) fn eval_op(op: AluOpcode, chip: Chip, s: [u32; 3]) -> Result<u32, Why> {
    use AluOpcode::*;
    let f = |k: usize| f32::from_bits(s[k]);
    let d = |k: usize| f32::from_bits(s[k]) as f64;
    let i = |k: usize| s[k] as i32;
    // A value computed in f64, rounded once.
    let round = |x: f64| (x as f32).to_bits();
    let float = |b: bool| if b { ONE } else { 0 };
    let all = |b: bool| if b { u32::MAX } else { 0 };
    let to_int_rounds = chip.is_evergreen_class();
    let revolutions = chip != Chip::R600;
    let bits = |x: f32| x.to_bits();
    Ok(match op {
        Add => bits(f(0) + f(1)),
        Mul => bits(mul_legacy(f(0), f(1))),
        MulIeee => bits(f(0) * f(1)),
        Max => bits(max_legacy(f(0), f(1))),
        Min => bits(if f(0) < f(1) { f(0) } else { f(1) }),
        MaxDx10 => round(eval::fmax(d(0), d(1))),
        MinDx10 => round(eval::fmin(d(0), d(1))),
        Sete | Setgt | Setge | Setne => float(holds(op, s[0], s[1])),
        SeteDx10 | SetgtDx10 | SetgeDx10 | SetneDx10 | SeteInt | SetgtInt | SetgeInt | SetneInt
        | SetgtUint | SetgeUint => all(holds(op, s[0], s[1])),
        Fract => round(d(0) - d(0).floor()),
        Trunc => bits(f(0).trunc()),
        Ceil => bits(f(0).ceil()),
        Rndne => round(eval::round_even(d(0))),
        Floor => bits(f(0).floor()),
        AshrInt => (i(0) >> (s[1] & 31)) as u32,
        LshrInt => s[0] >> (s[1] & 31),
        LshlInt => s[0] << (s[1] & 31),
        Mov | MovaInt => s[0],
        PredSetgtUint | PredSetgeUint | PredSete | PredSetgt | PredSetge | PredSetne
        | PredSeteInt | PredSetgtInt | PredSetgeInt | PredSetneInt => float(!holds(op, s[0], s[1])),
        Kille | Killgt | Killge | Killne | KillgtUint | KillgeUint | KilleInt | KillgtInt
        | KillgeInt | KillneInt => float(holds(op, s[0], s[1])),
        AndInt => s[0] & s[1],
        OrInt => s[0] | s[1],
        XorInt => s[0] ^ s[1],
        NotInt => !s[0],
        AddInt => s[0].wrapping_add(s[1]),
        SubInt => s[0].wrapping_sub(s[1]),
        MaxInt => i(0).max(i(1)) as u32,
        MinInt => i(0).min(i(1)) as u32,
        MaxUint => s[0].max(s[1]),
        MinUint => s[0].min(s[1]),
        // `as` saturates and maps NaN to 0.
        FltToInt if to_int_rounds => eval::round_even(d(0)) as i32 as u32,
        FltToInt => d(0).trunc() as i32 as u32,
        FltToUint if to_int_rounds => eval::round_even(d(0)) as u32,
        FltToUint => d(0).trunc() as u32,
        IntToFlt => bits(i(0) as f32),
        UintToFlt => bits(s[0] as f32),
        ExpIeee => round(d(0).exp2()),
        LogIeee => round(d(0).log2()),
        LogClamped => round(clamp_infinite(d(0).log2())),
        RecipIeee => round(1.0 / d(0)),
        RecipClamped => round(clamp_infinite(1.0 / d(0))),
        RecipsqrtIeee => round(1.0 / d(0).sqrt()),
        RecipsqrtClamped => round(clamp_infinite(1.0 / d(0).sqrt())),
        SqrtIeee => round(d(0).sqrt()),
        Sin if revolutions => round((d(0) * std::f64::consts::TAU).sin()),
        Sin => round(d(0).sin()),
        Cos if revolutions => round((d(0) * std::f64::consts::TAU).cos()),
        Cos => round(d(0).cos()),
        MulloInt | MulloUint => s[0].wrapping_mul(s[1]),
        MulhiInt => ((i(0) as i64 * i(1) as i64) >> 32) as u32,
        MulhiUint => ((s[0] as u64 * s[1] as u64) >> 32) as u32,
        RecipUint => match s[0] {
            0 => u32::MAX,
            x => ((1u64 << 32) / x as u64).min(u32::MAX as u64) as u32,
        },
        BfeUint | BfeInt => {
            let (offset, width) = (s[1] & 31, s[2] & 31);
            if width == 0 {
                0
            } else if offset + width < 32 {
                let up = s[0] << (32 - offset - width);
                if op == BfeInt {
                    ((up as i32) >> (32 - width)) as u32
                } else {
                    up >> (32 - width)
                }
            } else if op == BfeInt {
                (i(0) >> offset) as u32
            } else {
                s[0] >> offset
            }
        }
        BfiInt => s[0] & s[1] | !s[0] & s[2],
        BfmInt => ((1u32 << (s[0] & 31)) - 1) << (s[1] & 31),
        BcntInt => s[0].count_ones(),
        FfbhUint => match s[0] {
            0 => u32::MAX,
            x => x.leading_zeros(),
        },
        FfbhInt => match if i(0) < 0 { !s[0] } else { s[0] } {
            0 => u32::MAX,
            x => x.leading_zeros(),
        },
        FfblInt => match s[0] {
            0 => u32::MAX,
            x => x.trailing_zeros(),
        },
        BfrevInt => s[0].reverse_bits(),
        Fma => bits(f(0).mul_add(f(1), f(2))),
        AddcUint => s[0].checked_add(s[1]).is_none() as u32,
        SubbUint => (s[0] < s[1]) as u32,
        MulUint24 => (s[0] & 0xff_ffff).wrapping_mul(s[1] & 0xff_ffff),
        Muladd => bits(muladd(f(0), f(1), f(2), true)),
        MuladdM2 => bits(muladd(f(0), f(1), f(2), true) * 2.0),
        MuladdM4 => bits(muladd(f(0), f(1), f(2), true) * 4.0),
        MuladdD2 => bits(muladd(f(0), f(1), f(2), true) * 0.5),
        MuladdIeee => bits(muladd(f(0), f(1), f(2), false)),
        Cnde | Cndgt | Cndge | CndeInt | CndgtInt | CndgeInt => {
            if holds(op, s[0], 0) {
                s[1]
            } else {
                s[2]
            }
        }
        _ => return Err(unsupported(op.mnemonic())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_operations() {
        let e = |op: AluOpcode, s: [u32; 3]| eval_op(op, Chip::Evergreen, s).unwrap();
        let fl = |x: f32| x.to_bits();
        let nan = f32::NAN.to_bits();
        assert_eq!(e(AluOpcode::MaxDx10, [nan, fl(2.0), 0]), fl(2.0));
        assert_eq!(e(AluOpcode::MinDx10, [fl(3.0), nan, 0]), fl(3.0));
        assert_eq!(e(AluOpcode::Max, [nan, fl(2.0), 0]), fl(2.0));
        assert!(f32::from_bits(e(AluOpcode::Max, [fl(2.0), nan, 0])).is_nan());
        assert_eq!(e(AluOpcode::Setne, [nan, nan, 0]), fl(1.0));
        assert_eq!(e(AluOpcode::SetgtDx10, [fl(1.0), fl(-1.0), 0]), u32::MAX);
        assert_eq!(e(AluOpcode::SetgtUint, [u32::MAX, 1, 0]), u32::MAX);
        assert_eq!(e(AluOpcode::SetgtInt, [u32::MAX, 1, 0]), 0);
        assert_eq!(e(AluOpcode::PredSetgt, [fl(1.0), 0, 0]), 0);
        assert_eq!(e(AluOpcode::PredSetgt, [0, fl(1.0), 0]), fl(1.0));
        assert_eq!(e(AluOpcode::Cndge, [fl(-0.0), 1, 2]), 1);
        assert_eq!(e(AluOpcode::CndgtInt, [u32::MAX, 1, 2]), 2);
        assert_eq!(e(AluOpcode::LogClamped, [0, 0, 0]), fl(f32::MIN));
        assert_eq!(e(AluOpcode::RecipClamped, [fl(-0.0), 0, 0]), fl(f32::MIN));
        assert_eq!(e(AluOpcode::RecipsqrtIeee, [fl(4.0), 0, 0]), fl(0.5));
        assert_eq!(e(AluOpcode::ExpIeee, [fl(-2.0), 0, 0]), fl(0.25));
        assert_eq!(e(AluOpcode::Fract, [fl(-1.25), 0, 0]), fl(0.75));
        assert_eq!(e(AluOpcode::Rndne, [fl(2.5), 0, 0]), fl(2.0));
        assert_eq!(e(AluOpcode::FltToUint, [fl(-3.0), 0, 0]), 0);
        assert_eq!(e(AluOpcode::UintToFlt, [u32::MAX, 0, 0]), fl(4294967296.0));
        assert_eq!(e(AluOpcode::AshrInt, [0x8000_0000, 33, 0]), 0xc000_0000);
        assert_eq!(e(AluOpcode::LshlInt, [1, 36, 0]), 16);
        assert_eq!(e(AluOpcode::MulhiInt, [(-2i32) as u32, 0x8000_0000, 0]), 1);
        assert_eq!(e(AluOpcode::MulhiUint, [u32::MAX, 2, 0]), 1);
        assert_eq!(e(AluOpcode::RecipUint, [3, 0, 0]), 0x5555_5555);
        assert_eq!(e(AluOpcode::RecipUint, [1, 0, 0]), u32::MAX);
        assert_eq!(e(AluOpcode::RecipUint, [0, 0, 0]), u32::MAX);
        assert_eq!(e(AluOpcode::BfeUint, [0xabcd_1234, 8, 8]), 0x12);
        assert_eq!(e(AluOpcode::BfeInt, [0x0000_f000, 12, 4]), u32::MAX);
        assert_eq!(e(AluOpcode::BfeUint, [0xabcd_1234, 16, 0]), 0);
        assert_eq!(e(AluOpcode::BfeUint, [0xabcd_1234, 28, 8]), 0xa);
        assert_eq!(e(AluOpcode::BfiInt, [0xff00, 0x1234, 0xabcd]), 0x12cd);
        assert_eq!(e(AluOpcode::BfmInt, [4, 8, 0]), 0xf00);
        assert_eq!(e(AluOpcode::BcntInt, [0xf0f0, 0, 0]), 8);
        assert_eq!(e(AluOpcode::FfbhUint, [1, 0, 0]), 31);
        assert_eq!(e(AluOpcode::FfbhUint, [0, 0, 0]), u32::MAX);
        assert_eq!(e(AluOpcode::FfbhInt, [(-2i32) as u32, 0, 0]), 31);
        assert_eq!(e(AluOpcode::FfbhInt, [u32::MAX, 0, 0]), u32::MAX);
        assert_eq!(e(AluOpcode::FfblInt, [8, 0, 0]), 3);
        assert_eq!(e(AluOpcode::BfrevInt, [1, 0, 0]), 0x8000_0000);
        assert_eq!(e(AluOpcode::AddcUint, [u32::MAX, 1, 0]), 1);
        assert_eq!(e(AluOpcode::SubbUint, [1, 2, 0]), 1);
        assert_eq!(e(AluOpcode::MulUint24, [0x0100_0003, 5, 0]), 15);
        // MULADD_IEEE rounds the product: (1 + 2^-23)² − 1 loses its 2^-46 term, FMA keeps it.
        let x = fl(1.0 + f32::EPSILON);
        let rounded = f32::from_bits(e(AluOpcode::MuladdIeee, [x, x, fl(-1.0)]));
        assert_eq!(rounded, 2.0 * f32::EPSILON);
        let fused = f32::from_bits(e(AluOpcode::Fma, [x, x, fl(-1.0)]));
        assert_eq!(fused, 2.0 * f32::EPSILON + f32::EPSILON * f32::EPSILON);
        assert!(matches!(
            eval_op(AluOpcode::Cube, Chip::Evergreen, [0; 3]),
            Err(Why::Unsupported(_))
        ));
    }
}
