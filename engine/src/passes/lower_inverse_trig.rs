//! `lower-inverse-trig`: `fatan`, `fatan2`, `fasin` and `facos` become polynomial
//! approximations in arithmetic the target has, for targets without those functions.
//!
//! What: on 32-bit floats,
//! - `atan(a) = sign(a) · t(|a|)`, where `t(x)` reduces the range with `u = min(x, 1) /
//!   max(x, 1)`, approximates `atan(u)` with an odd polynomial of degree 11, and gives
//!   `π/2 − atan(u)` when `x > 1`;
//! - `atan2(y, x)` takes `u = min(|x|, |y|) / max(|x|, |y|)`, the same polynomial, `π/2 − p`
//!   when `|y| > |x|`, `π − r` when `x < 0`, and the sign of `y` (`atan2(0, x < 0) = π`;
//!   `atan2(0, 0)`, which GLSL leaves undefined, is NaN);
//! - `asin(a) = sign(a) · (π/2 − sqrt(1 − |a|) · (π/2 + |a| · (π/4 − 1 + |a| · (p0 + |a| ·
//!   p1))))` and `acos(a) = π/2 − asin(a)` with its own `p0`, `p1`.
//!
//! The coefficients are the ones Mesa's builtin builder and GLSL built-ins use; their error is
//! within what GLSL allows for these functions (and what piglit checks).
//!
//! Why: Gen's math unit has `sin`, `cos`, `sqrt`, `inv`, but no inverse trigonometry; R600's
//! ALU neither. Lowered in the IR, the approximations get the mid-end's and backends' usual
//! treatment (fused multiply-adds, selects, source modifiers).
//!
//! Invariants: results are approximations of the exact functions (the interpreter computes
//! those): atan and atan2 within 1e-5, asin within 4e-4 and acos within 2e-4 in absolute
//! terms (asin's coefficients keep its relative error small near 0). Other bit sizes are left
//! alone. Each lowered instruction is one transformation.
//!
//! Options: the target's `lower_inverse_trig` (off: the pass changes nothing).

use super::manager::{Pass, PassContext};
use super::{lower_each, replace_alu};
use crate::ir::{Builder, FuncId, InstKind, Shader, Value};
use crate::ops::AluOp;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// The coefficients of `atan(u)` on `[0, 1]`: `u·(c1 + u²·(c3 + u²·(c5 + …)))`, highest first.
const ATAN: [f64; 6] = [
    -0.012_132_321_317_344_4,
    0.053_681_378_431_040_6,
    -0.117_350_319_478_685_1,
    0.193_892_497_711_561,
    -0.332_675_641_809_124_6,
    0.999_979_312_831_035_5,
];

/// `p0`, `p1` of the `asin` and `acos` approximations.
const ASIN: [f64; 2] = [0.086_566_724, -0.031_029_55];
const ACOS: [f64; 2] = [0.081_324_63, -0.023_633_18];

/// The `lower-inverse-trig` pass.
pub struct LowerInverseTrig {
    /// Whether the target asks for it ([`crate::rewrite::TargetOptions::lower_inverse_trig`]).
    pub enabled: bool,
}

impl Pass for LowerInverseTrig {
    fn name(&self) -> &str {
        "lower-inverse-trig"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns atan, atan2, asin and acos into polynomial approximations (targets without them)"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        if !self.enabled {
            return Ok(false);
        }
        Ok(lower_each(
            shader,
            context,
            |_, inst| {
                matches!(&inst.kind, InstKind::Alu(alu)
                    if matches!(alu.op, AluOp::Fatan | AluOp::Fatan2 | AluOp::Fasin | AluOp::Facos))
                    && inst.def.is_some_and(|d| d.bits == 32)
            },
            lower,
        ))
    }
}

/// Replaces `v` by its approximation, built just before it.
fn lower(shader: &mut Shader, func: FuncId, v: Value) {
    replace_alu(shader, func, v, |b, op, srcs| match op {
        AluOp::Fatan => {
            let x = b.alu(AluOp::Fabs, &[srcs[0]]);
            let one = b.imm_f32(1.0);
            let low = b.alu(AluOp::Fmin, &[x, one]);
            let high = b.alu(AluOp::Fmax, &[x, one]);
            let u = b.alu(AluOp::Fdiv, &[low, high]);
            let above_one = b.alu(AluOp::Flt, &[one, x]);
            let t = reduced_atan(b, u, above_one);
            let sign = b.alu(AluOp::Fsign, &[srcs[0]]);
            b.alu(AluOp::Fmul, &[sign, t])
        }
        AluOp::Fatan2 => {
            let (y, x) = (srcs[0], srcs[1]);
            let ax = b.alu(AluOp::Fabs, &[x]);
            let ay = b.alu(AluOp::Fabs, &[y]);
            let low = b.alu(AluOp::Fmin, &[ax, ay]);
            let high = b.alu(AluOp::Fmax, &[ax, ay]);
            let u = b.alu(AluOp::Fdiv, &[low, high]);
            let steep = b.alu(AluOp::Flt, &[ax, ay]);
            let t = reduced_atan(b, u, steep);
            let zero = b.imm_f32(0.0);
            let left = b.alu(AluOp::Flt, &[x, zero]);
            let pi = b.imm_f32(PI as f32);
            let mirrored = b.alu(AluOp::Fsub, &[pi, t]);
            let r = b.alu(AluOp::Bcsel, &[left, mirrored, t]);
            let below = b.alu(AluOp::Flt, &[y, zero]);
            let negated = b.alu(AluOp::Fneg, &[r]);
            b.alu(AluOp::Bcsel, &[below, negated, r])
        }
        AluOp::Fasin => {
            let t = asin_magnitude(b, srcs[0], ASIN);
            let sign = b.alu(AluOp::Fsign, &[srcs[0]]);
            b.alu(AluOp::Fmul, &[sign, t])
        }
        AluOp::Facos => {
            let t = asin_magnitude(b, srcs[0], ACOS);
            let sign = b.alu(AluOp::Fsign, &[srcs[0]]);
            let asin = b.alu(AluOp::Fmul, &[sign, t]);
            let half_pi = b.imm_f32(FRAC_PI_2 as f32);
            b.alu(AluOp::Fsub, &[half_pi, asin])
        }
        _ => unreachable!("only inverse trigonometry is lowered"),
    })
}

/// `atan(u)` for `u` in `[0, 1]` by the polynomial, or `π/2 − atan(u)` where `mirror` holds.
fn reduced_atan(b: &mut Builder, u: Value, mirror: Value) -> Value {
    let u2 = b.alu(AluOp::Fmul, &[u, u]);
    let mut p = b.imm_f32(ATAN[0] as f32);
    for &c in &ATAN[1..] {
        let c = b.imm_f32(c as f32);
        p = b.alu(AluOp::Ffma, &[p, u2, c]);
    }
    let p = b.alu(AluOp::Fmul, &[p, u]);
    let half_pi = b.imm_f32(FRAC_PI_2 as f32);
    let complement = b.alu(AluOp::Fsub, &[half_pi, p]);
    b.alu(AluOp::Bcsel, &[mirror, complement, p])
}

/// `π/2 − sqrt(1 − |a|) · (π/2 + |a| · (π/4 − 1 + |a| · (p0 + |a| · p1)))`: `asin(|a|)`.
fn asin_magnitude(b: &mut Builder, a: Value, [p0, p1]: [f64; 2]) -> Value {
    let x = b.alu(AluOp::Fabs, &[a]);
    let p1 = b.imm_f32(p1 as f32);
    let p0 = b.imm_f32(p0 as f32);
    let mut p = b.alu(AluOp::Ffma, &[x, p1, p0]);
    for c in [FRAC_PI_4 - 1.0, FRAC_PI_2] {
        let c = b.imm_f32(c as f32);
        p = b.alu(AluOp::Ffma, &[x, p, c]);
    }
    let one = b.imm_f32(1.0);
    let rest = b.alu(AluOp::Fsub, &[one, x]);
    let root = b.alu(AluOp::Fsqrt, &[rest]);
    let scaled = b.alu(AluOp::Fmul, &[root, p]);
    let half_pi = b.imm_f32(FRAC_PI_2 as f32);
    b.alu(AluOp::Fsub, &[half_pi, scaled])
}
