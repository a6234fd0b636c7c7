//! Constant components in the text format: how the raw bits of a component are written, and how
//! a literal is read back into bits at the value's size.

use half::f16;
use shrew_ops::eval::{fget, fput, mask, sext};

/// Writes one component of a `bits`-bit constant: `true`/`false` for 1-bit values, a float when
/// the bits read naturally as one, a small signed decimal, or hexadecimal bits.
pub(super) fn format_const(v: u64, bits: u8) -> String {
    let v = mask(v, bits);
    if bits == 1 {
        return if v != 0 { "true" } else { "false" }.to_string();
    }
    if let Some(text) = float_text(v, bits) {
        return text;
    }
    let signed = sext(v, bits);
    if (-65536..=65536).contains(&signed) {
        signed.to_string()
    } else {
        format!("{v:#x}")
    }
}

/// The float literal for `v`, when it is `-0.0` or a normal float of magnitude in [1e-6, 1e9].
/// Requiring a normal float keeps small integers (whose bits read as denormals) integers: every
/// 32-bit integer below 2^23 and every 16-bit one below 1024.
/// `{:?}` is Rust's shortest round-trip form and always has a `.` or an exponent, so the text
/// re-parses as a float of the same bits.
fn float_text(v: u64, bits: u8) -> Option<String> {
    let x = match bits {
        16 => f16::from_bits(v as u16).to_f64(),
        32 => f32::from_bits(v as u32) as f64,
        64 => f64::from_bits(v),
        _ => return None,
    };
    if x == 0.0 && x.is_sign_negative() {
        return Some("-0.0".to_string());
    }
    let smallest = if bits == 16 { 2f64.powi(-14) } else { 1e-6 };
    if !x.is_finite() || !(smallest..=1e9).contains(&x.abs()) {
        return None;
    }
    // Halves print as the f32 of the same (exact) value and parse back through f32.
    Some(if bits == 64 {
        format!("{x:?}")
    } else {
        format!("{:?}", x as f32)
    })
}

/// Reads a number token (`12`, `-3`, `0xff`, `1.5`, `-2e-8`) as a `bits`-bit component.
pub(super) fn parse_number(text: &str, bits: u8) -> Result<u64, String> {
    // The parser only passes legal sizes; clamping keeps the shifts below in range regardless.
    let bits = bits.clamp(1, 64);
    let (negative, body) = match text.strip_prefix('-') {
        Some(body) => (true, body),
        None => (false, text),
    };
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        if negative {
            return Err(format!(
                "negative hexadecimal literal '{text}' (write the bits, or a negative decimal)"
            ));
        }
        let v = u64::from_str_radix(hex, 16)
            .map_err(|_| format!("invalid hexadecimal literal '{text}'"))?;
        if mask(v, bits) != v {
            return Err(format!("literal '{text}' does not fit in {bits} bits"));
        }
        return Ok(v);
    }
    if body.contains(['.', 'e', 'E']) {
        return parse_float(text, bits);
    }
    let v: i128 = text
        .parse()
        .map_err(|_| format!("invalid number '{text}'"))?;
    let (min, max) = (-(1i128 << (bits - 1)), (1i128 << bits) - 1);
    if !(min..=max).contains(&v) {
        return Err(format!("literal '{text}' does not fit in {bits} bits"));
    }
    Ok(mask(v as u64, bits))
}

fn parse_float(text: &str, bits: u8) -> Result<u64, String> {
    let invalid = |_| format!("invalid float literal '{text}'");
    let value = match bits {
        // Printed halves are exact in f64, so this rounds (if at all) only hand-written text.
        16 => fput(text.parse::<f64>().map_err(invalid)?, 16),
        32 => text.parse::<f32>().map_err(invalid)?.to_bits() as u64,
        64 => text.parse::<f64>().map_err(invalid)?.to_bits(),
        _ => return Err(float_size_error(text, bits)),
    };
    // Infinity is written `inf`; a finite literal too large for the size is a mistake.
    let spelled_infinite = text.trim_start_matches(['-', '+']).starts_with("inf");
    if fget(value, bits).is_infinite() && !spelled_infinite {
        return Err(format!("float literal '{text}' overflows {bits} bits"));
    }
    Ok(value)
}

fn float_size_error(text: &str, bits: u8) -> String {
    format!("float literal '{text}' needs a 16-, 32- or 64-bit value, not {bits}-bit")
}

/// Reads a word literal: `true`, `false`, `inf`, `nan` (`inf` and `nan` may be negated).
pub(super) fn parse_word(word: &str, negative: bool, bits: u8) -> Result<u64, String> {
    let sign = |v: u64| if negative { v | 1 << (bits - 1) } else { v };
    let text = if negative {
        format!("-{word}")
    } else {
        word.to_string()
    };
    match (word, bits) {
        ("true", _) if !negative => Ok(1),
        ("false", _) if !negative => Ok(0),
        ("inf", 16) => Ok(sign(0x7c00)),
        ("inf", 32) => Ok(sign(0x7f80_0000)),
        ("inf", 64) => Ok(sign(0x7ff0_0000_0000_0000)),
        // The canonical quiet NaN of each size.
        ("nan", 16) => Ok(sign(0x7e00)),
        ("nan", 32) => Ok(sign(0x7fc0_0000)),
        ("nan", 64) => Ok(sign(0x7ff8_0000_0000_0000)),
        ("inf" | "nan", _) => Err(float_size_error(&text, bits)),
        _ => Err(format!(
            "expected a constant (a number, true, false, inf or nan), found '{text}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_the_rules() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(format_const(1, 1), "true");
        assert_eq!(format_const(0, 1), "false");
        assert_eq!(format_const(f(1.0), 32), "1.0");
        assert_eq!(format_const(f(0.1), 32), "0.1");
        assert_eq!(format_const(f(-2.5e-6), 32), "-2.5e-6");
        assert_eq!(format_const(f(1e9), 32), "1000000000.0");
        assert_eq!(format_const(f(-0.0), 32), "-0.0");
        assert_eq!(format_const(0x8000, 16), "-0.0");
        assert_eq!(format_const(f(0.0), 32), "0");
        assert_eq!(format_const(f(f32::INFINITY), 32), "0x7f800000");
        assert_eq!(format_const(f(f32::NAN), 32), "0x7fc00000");
        assert_eq!(format_const(f(1e10), 32), "0x501502f9");
        assert_eq!(format_const(0xffff_ffff, 32), "-1");
        assert_eq!(format_const(7, 32), "7");
        assert_eq!(format_const(65536, 32), "65536");
        assert_eq!(format_const(65537, 64), "0x10001");
        assert_eq!(format_const(0xff, 8), "-1");
        assert_eq!(format_const(0x3c00, 16), "1.0");
        assert_eq!(format_const(1000, 16), "1000");
        assert_eq!(format_const(0x3ff, 16), "1023");
        assert_eq!(format_const(0x3555, 16), "0.33325195");
        assert_eq!(format_const(1.5f64.to_bits(), 64), "1.5");
        assert_eq!(format_const(0x1234_5678_9abc, 64), "0x123456789abc");
    }

    #[test]
    fn parses_what_it_formats() {
        let samples = [
            (1, 1),
            (0x3f80_0000, 32),
            (0x8000_0000, 32),
            (0x7f80_0001, 32),
            (0x3555, 16),
            (0x0001, 16),
            (0x8000, 16),
            (0x7bff, 16),
            (0x3fb9_9999_9999_999a, 64),
            (0x8000_0000_0000_0000, 64),
            (u64::MAX, 64),
            (0x80, 8),
            (0x12, 8),
        ];
        for (v, bits) in samples {
            let text = format_const(v, bits);
            let parsed = if text.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
                parse_number(&text, bits)
            } else {
                parse_word(&text, false, bits)
            };
            assert_eq!(parsed, Ok(v), "{text} at {bits} bits");
        }
    }

    #[test]
    fn overflowing_float_literals_are_errors() {
        assert_eq!(
            parse_float("1e39", 32),
            Err("float literal '1e39' overflows 32 bits".to_string())
        );
        assert_eq!(
            parse_float("70000.0", 16),
            Err("float literal '70000.0' overflows 16 bits".to_string())
        );
        assert_eq!(parse_float("-inf", 32), Ok(0xff80_0000));
        assert_eq!(parse_float("1e39", 64), Ok(1e39f64.to_bits()));
    }

    #[test]
    fn range_and_size_errors() {
        assert_eq!(parse_number("-128", 8), Ok(0x80));
        assert_eq!(parse_number("255", 8), Ok(0xff));
        assert_eq!(
            parse_number("256", 8),
            Err("literal '256' does not fit in 8 bits".into())
        );
        assert_eq!(
            parse_number("0x100", 8),
            Err("literal '0x100' does not fit in 8 bits".into())
        );
        assert_eq!(
            parse_number("-0x1", 32),
            Err(
                "negative hexadecimal literal '-0x1' (write the bits, or a negative decimal)"
                    .into()
            )
        );
        assert_eq!(
            parse_number("1.5", 8),
            Err("float literal '1.5' needs a 16-, 32- or 64-bit value, not 8-bit".into())
        );
        assert_eq!(
            parse_number("32x4", 32),
            Err("invalid number '32x4'".into())
        );
        assert_eq!(
            parse_number("1.2.3", 32),
            Err("invalid float literal '1.2.3'".into())
        );
        assert_eq!(parse_word("inf", true, 32), Ok(0xff80_0000));
        assert_eq!(parse_word("nan", false, 16), Ok(0x7e00));
        assert_eq!(
            parse_word("maybe", false, 32),
            Err("expected a constant (a number, true, false, inf or nan), found 'maybe'".into())
        );
    }
}
