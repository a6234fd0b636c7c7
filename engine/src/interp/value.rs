//! Reading and writing variable values as text, for the command line and for tests.
//!
//! A value is written as its scalar components in flattening order (see
//! [`super::flatten_type`]), separated by commas or spaces; brackets and parentheses are ignored,
//! so `(1.0, 2, 3, 4)` and `1.0,2,3,4` are the same `f32x4`. One literal alone fills every
//! component. Literals:
//! - floats: decimal (`1`, `-0.0`, `1e-7`), `inf`, `-inf`, `nan`, or `0x…` raw bits;
//! - integers: decimal (negative values are two's complement at the component's size) or `0x…`;
//! - booleans: `true`, `false`, `1`, `0`.
//!
//! Formatting writes floats in the shortest form that reads back to the same bits (`nan` only
//! for the canonical quiet NaN, raw `0x…` bits for other NaNs), integers in decimal (signed for
//! `i` types) and booleans as `true`/`false`, joined by `", "`.

use super::InterpError;
use super::memory::{flatten_type, try_flatten_type};
use crate::ir::{Scalar, Shader, Type};
use half::f16;
use shrew_ops::BaseType;
use shrew_ops::eval::{fget, fput, mask, sext};

fn setup(msg: String) -> InterpError {
    InterpError::Setup(msg)
}

/// Parses one literal as a component of scalar type `s`.
pub fn parse_scalar(s: Scalar, text: &str) -> Result<u64, InterpError> {
    let bad = || {
        setup(format!(
            "`{text}` is not a valid {} literal",
            crate::ir::scalar_name(s)
        ))
    };
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).map_err(|_| bad())?;
        return if mask(v, s.bits) == v {
            Ok(v)
        } else {
            Err(bad())
        };
    }
    match s.base {
        BaseType::Bool => match text {
            "true" | "1" => Ok(1),
            "false" | "0" => Ok(0),
            _ => Err(bad()),
        },
        BaseType::Float => {
            let lower = text.to_ascii_lowercase();
            let special = match lower.trim_start_matches('+') {
                "nan" => Some(f64::NAN),
                "inf" | "infinity" => Some(f64::INFINITY),
                "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
                _ => None,
            };
            if let Some(x) = special {
                return Ok(fput(x, s.bits));
            }
            // Parse at the target precision so the decimal is rounded once.
            match s.bits {
                32 => text
                    .parse::<f32>()
                    .map(|x| x.to_bits() as u64)
                    .map_err(|_| bad()),
                64 => text.parse::<f64>().map(f64::to_bits).map_err(|_| bad()),
                // Halves go through f64 and the engine's own rounding (the `half` crate's
                // conversion depends on the host CPU).
                _ => text.parse::<f64>().map(|x| fput(x, 16)).map_err(|_| bad()),
            }
        }
        BaseType::Int | BaseType::Uint => {
            let v: i128 = text.parse().map_err(|_| bad())?;
            let lo = -(1i128 << (s.bits - 1));
            let hi = (1i128 << s.bits) - 1;
            if v < lo || v > hi {
                return Err(bad());
            }
            Ok(mask(v as u64, s.bits))
        }
    }
}

/// Formats one component of scalar type `s`.
pub fn format_scalar(s: Scalar, v: u64) -> String {
    match s.base {
        BaseType::Bool => (v & 1 != 0).to_string(),
        BaseType::Int => sext(v, s.bits).to_string(),
        BaseType::Uint => mask(v, s.bits).to_string(),
        BaseType::Float => {
            let x = fget(v, s.bits);
            if x.is_nan() {
                if mask(v, s.bits) == fput(f64::NAN, s.bits) {
                    "nan".into()
                } else {
                    format!("0x{:x}", mask(v, s.bits))
                }
            } else if x.is_infinite() {
                if x > 0.0 { "inf" } else { "-inf" }.into()
            } else {
                match s.bits {
                    32 => format!("{:?}", f32::from_bits(v as u32)),
                    64 => format!("{:?}", f64::from_bits(v)),
                    // Every f16 is exact as f32, and f32's shortest form reads back exactly.
                    _ => format!("{:?}", f16::from_bits(v as u16).to_f32()),
                }
            }
        }
    }
}

/// Parses a value of type `ty` (see the module documentation for the syntax).
pub fn parse_value(shader: &Shader, ty: &Type, text: &str) -> Result<Vec<u64>, InterpError> {
    let scalars = try_flatten_type(shader, ty)?;
    let literals: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace() || "()[]{}".contains(c))
        .filter(|t| !t.is_empty())
        .collect();
    match literals.len() {
        1 => scalars
            .iter()
            .map(|&s| parse_scalar(s, literals[0]))
            .collect(),
        n if n == scalars.len() => scalars
            .iter()
            .zip(literals)
            .map(|(&s, lit)| parse_scalar(s, lit))
            .collect(),
        n => Err(setup(format!(
            "{} needs {} components, got {n}",
            shader.type_name(ty),
            scalars.len()
        ))),
    }
}

/// Formats a value of type `ty` given its flattened components.
pub fn format_value(shader: &Shader, ty: &Type, comps: &[u64]) -> String {
    flatten_type(shader, ty)
        .into_iter()
        .zip(comps)
        .map(|(s, &v)| format_scalar(s, v))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses values of the variable `name`: one value, or one per invocation separated by `;`.
pub fn parse_variable(
    shader: &Shader,
    name: &str,
    text: &str,
) -> Result<Vec<Vec<u64>>, InterpError> {
    let var = shader
        .find_variable(name)
        .ok_or_else(|| setup(format!("no variable @{name}")))?;
    let ty = &shader.variable(var).ty;
    text.split(';')
        .map(|part| {
            parse_value(shader, ty, part).map_err(|e| match e {
                InterpError::Setup(msg) => setup(format!("@{name}: {msg}")),
                e => e,
            })
        })
        .collect()
}

/// Formats a value of the variable `name` given its flattened components.
pub fn format_variable(shader: &Shader, name: &str, comps: &[u64]) -> Result<String, InterpError> {
    let var = shader
        .find_variable(name)
        .ok_or_else(|| setup(format!("no variable @{name}")))?;
    Ok(format_value(shader, &shader.variable(var).ty, comps))
}
