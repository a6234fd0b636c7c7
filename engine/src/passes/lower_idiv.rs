//! `lower-idiv`: 32-bit integer division and remainder (`udiv`, `umod`, `idiv`, `irem`, `imod`)
//! become a reciprocal estimate and corrections, for targets without an integer divider.
//!
//! What: the unsigned quotient of `n` by `d` is computed as Mesa's `nir_lower_idiv` and LLVM's
//! AMDGPU backend do it:
//! - estimate `2^32 / d` in floating point: `z = f2u32(frcp(u2f32(d)) · 4294966784.0)`, the
//!   constant (`0x4f7ffffe`) a little below `2^32` so that the estimate does not overshoot;
//! - refine it with one Newton–Raphson step in integers: `z += umul_high(z, −d · z)`;
//! - `q = umul_high(n, z)`, `r = n − q · d`: `q` is now at most two below the quotient, so two
//!   rounds of "if `r ≥ d`, `q += 1` and `r −= d`" make it exact.
//!
//! Division by zero then gives 0 for both the quotient and the remainder, as the interpreter
//! does. The signed operations divide the magnitudes (`iabs(INT_MIN)` read as unsigned is
//! `2^31`, so it needs no special case) and fix the sign: `idiv` is negative when the signs
//! differ (`INT_MIN / −1` wraps to `INT_MIN`), `irem` takes the sign of the dividend, and
//! `imod` the sign of the divisor (a nonzero remainder of the other sign gets the divisor
//! added).
//!
//! Why: R600's ALU has no integer divide, only multiplies, `MULHI_UINT` and a float reciprocal.
//! Lowered in the IR, the sequence gets the mid-end's and backends' usual treatment (constant
//! folding, CSE of the estimate shared by a `udiv` and `umod` of the same operands, selects).
//!
//! Invariants: results are bit-identical to the interpreter's for every input, division by
//! zero included. Vector instructions are lowered on whole vectors, their swizzles applied
//! first. Other bit sizes are left alone. Each lowered instruction is one transformation.
//!
//! Options: the target's `lower_idiv` (off: the pass changes nothing).

use super::manager::{Pass, PassContext};
use super::{lower_each, replace_alu};
use crate::ir::{Builder, FuncId, InstKind, Shader, Value};
use crate::ops::AluOp;

/// `0x4f7ffffe`, `2^32 − 512`: two floats below `2^32`. Scaling the reciprocal by it rather than
/// by `2^32` absorbs the reciprocal's rounding, so the estimate does not exceed `2^32 / d`.
const RECIPROCAL_SCALE: f32 = 4_294_966_784.0;

/// The `lower-idiv` pass.
pub struct LowerIdiv {
    /// Whether the target asks for it ([`crate::rewrite::TargetOptions::lower_idiv`]).
    pub enabled: bool,
}

impl Pass for LowerIdiv {
    fn name(&self) -> &str {
        "lower-idiv"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns 32-bit integer division and remainder into a reciprocal estimate (targets without a divider)"
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
                    if matches!(alu.op, AluOp::Udiv | AluOp::Umod | AluOp::Idiv | AluOp::Irem | AluOp::Imod))
                    && inst.def.is_some_and(|d| d.bits == 32)
            },
            lower,
        ))
    }
}

/// Replaces `v` by the division sequence, built just before it.
fn lower(shader: &mut Shader, func: FuncId, v: Value) {
    replace_alu(shader, func, v, |b, op, srcs| {
        let (n, d) = (srcs[0], srcs[1]);
        match op {
            AluOp::Udiv => udiv_umod(b, n, d).0,
            AluOp::Umod => udiv_umod(b, n, d).1,
            AluOp::Idiv => {
                let (q, _) = signed_magnitudes(b, n, d);
                // The quotient is negative when exactly one operand is.
                let signs = b.alu(AluOp::Ixor, &[n, d]);
                let zero = b.imm_u32(0);
                let negative = b.alu(AluOp::Ilt, &[signs, zero]);
                let negated = b.alu(AluOp::Ineg, &[q]);
                b.alu(AluOp::Bcsel, &[negative, negated, q])
            }
            AluOp::Irem => irem(b, n, d),
            AluOp::Imod => {
                let r = irem(b, n, d);
                // A nonzero remainder whose sign differs from the divisor's moves by one divisor,
                // which gives it the divisor's sign (and keeps it below it in magnitude).
                let zero = b.imm_u32(0);
                let nonzero = b.alu(AluOp::Ine, &[r, zero]);
                let signs = b.alu(AluOp::Ixor, &[r, d]);
                let differ = b.alu(AluOp::Ilt, &[signs, zero]);
                let adjust = b.alu(AluOp::Iand, &[nonzero, differ]);
                let adjusted = b.alu(AluOp::Iadd, &[r, d]);
                b.alu(AluOp::Bcsel, &[adjust, adjusted, r])
            }
            _ => unreachable!("only integer division is lowered"),
        }
    })
}

/// The unsigned quotient and remainder of `n` by `d`, both 0 when `d` is 0. Both are built; the
/// one not used is dead code for `dce`.
fn udiv_umod(b: &mut Builder, n: Value, d: Value) -> (Value, Value) {
    // An estimate of 2^32 / d from the float reciprocal, a little low.
    let fd = b.alu(AluOp::U2f32, &[d]);
    let frcp = b.alu(AluOp::Frcp, &[fd]);
    let scale = b.imm_f32(RECIPROCAL_SCALE);
    let scaled = b.alu(AluOp::Fmul, &[frcp, scale]);
    let z = b.alu(AluOp::F2u32, &[scaled]);
    // One Newton–Raphson step: −d·z is 2^32 − d·z modulo 2^32, the estimate's error times d.
    let neg_d = b.alu(AluOp::Ineg, &[d]);
    let error = b.alu(AluOp::Imul, &[neg_d, z]);
    let correction = b.alu(AluOp::UmulHigh, &[z, error]);
    let z = b.alu(AluOp::Iadd, &[z, correction]);
    // The quotient from the refined reciprocal is at most two too small: two corrections.
    let mut q = b.alu(AluOp::UmulHigh, &[n, z]);
    let qd = b.alu(AluOp::Imul, &[q, d]);
    let mut r = b.alu(AluOp::Isub, &[n, qd]);
    let one = b.imm_u32(1);
    for _ in 0..2 {
        let too_small = b.alu(AluOp::Uge, &[r, d]);
        let q_next = b.alu(AluOp::Iadd, &[q, one]);
        let r_next = b.alu(AluOp::Isub, &[r, d]);
        q = b.alu(AluOp::Bcsel, &[too_small, q_next, q]);
        r = b.alu(AluOp::Bcsel, &[too_small, r_next, r]);
    }
    // The estimate of 1/0 saturates and leaves q = n + 1, r = n: the interpreter gives 0.
    let zero = b.imm_u32(0);
    let by_zero = b.alu(AluOp::Ieq, &[d, zero]);
    let q = b.alu(AluOp::Bcsel, &[by_zero, zero, q]);
    let r = b.alu(AluOp::Bcsel, &[by_zero, zero, r]);
    (q, r)
}

/// The unsigned quotient and remainder of `|n|` by `|d|`.
fn signed_magnitudes(b: &mut Builder, n: Value, d: Value) -> (Value, Value) {
    let an = b.alu(AluOp::Iabs, &[n]);
    let ad = b.alu(AluOp::Iabs, &[d]);
    udiv_umod(b, an, ad)
}

/// The remainder of the truncating division of `n` by `d`: the sign of `n`.
fn irem(b: &mut Builder, n: Value, d: Value) -> Value {
    let (_, r) = signed_magnitudes(b, n, d);
    let zero = b.imm_u32(0);
    let negative = b.alu(AluOp::Ilt, &[n, zero]);
    let negated = b.alu(AluOp::Ineg, &[r]);
    b.alu(AluOp::Bcsel, &[negative, negated, r])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{Launch, Resources, RunResult, run};
    use crate::ir::{AluSrc, Mode, Scalar, Stage, Type, Variable};
    use crate::passes::Budget;
    use crate::rng::Rng;
    use crate::text::print;
    use crate::verify::verify;

    const OPS: [AluOp; 5] = [
        AluOp::Udiv,
        AluOp::Umod,
        AluOp::Idiv,
        AluOp::Irem,
        AluOp::Imod,
    ];

    const I32: Type = Type::Scalar(Scalar::I32);
    const I32X2: Type = Type::Vector(Scalar::I32, 2);

    fn input(b: &mut Builder, name: &str, ty: Type) -> Value {
        let var = b
            .shader
            .add_variable(Variable::new(name, Mode::ShaderIn, ty));
        let deref = b.deref_var(var);
        b.load_deref(deref)
    }

    fn output(b: &mut Builder, name: &str, ty: Type, value: Value) {
        let var = b
            .shader
            .add_variable(Variable::new(name, Mode::ShaderOut, ty));
        let deref = b.deref_var(var);
        b.store_deref_all(deref, value);
    }

    /// A vertex shader that writes, for every operation, `op(n, d)` to `<op>` and
    /// `op(n2.yx, d2.xy)` to `<op>_vec2`.
    fn division_shader() -> Shader {
        let mut shader = Shader::new(Stage::Vertex);
        let entry = shader.entry;
        let mut b = Builder::new(&mut shader, entry);
        let n = input(&mut b, "n", I32);
        let d = input(&mut b, "d", I32);
        let n2 = input(&mut b, "n2", I32X2);
        let d2 = input(&mut b, "d2", I32X2);
        for op in OPS {
            let scalar = b.alu(op, &[n, d]);
            output(&mut b, op.name(), I32, scalar);
            let srcs = vec![AluSrc::swizzled(n2, &[1, 0]), AluSrc::swizzled(d2, &[0, 1])];
            let vector = b.alu_swizzled(op, srcs, 2);
            output(&mut b, &format!("{}_vec2", op.name()), I32X2, vector);
        }
        b.ret(None);
        shader
    }

    fn lower_all(shader: &mut Shader) -> bool {
        let pass = LowerIdiv { enabled: true };
        let progress = pass.run(shader, &mut PassContext::default()).unwrap();
        verify(shader).unwrap_or_else(|e| panic!("{e:?}\n{}", print(shader)));
        progress
    }

    fn divisions_left(shader: &Shader) -> usize {
        let func = shader.entry_function();
        func.all_insts()
            .filter(|&v| matches!(&func.inst(v).kind, InstKind::Alu(alu) if OPS.contains(&alu.op)))
            .count()
    }

    /// Runs the shader and its lowered form on every pair (the vector form divides
    /// `pairs[i].0` by `pairs[i].1` in `x` and the pair from the other end of the list in `y`)
    /// and checks that they agree bit for bit.
    fn check_pairs(pairs: &[(u32, u32)]) {
        let original = division_shader();
        let mut lowered = original.clone();
        assert!(lower_all(&mut lowered));
        assert_eq!(divisions_left(&lowered), 0, "{}", print(&lowered));

        let other = |i: usize| pairs[pairs.len() - 1 - i];
        let per_invocation = |f: &dyn Fn(usize) -> Vec<u64>| (0..pairs.len()).map(f).collect();
        let launch = Launch::invocations(pairs.len())
            .with_input("n", per_invocation(&|i| vec![pairs[i].0 as u64]))
            .with_input("d", per_invocation(&|i| vec![pairs[i].1 as u64]))
            .with_input(
                "n2",
                per_invocation(&|i| vec![other(i).0 as u64, pairs[i].0 as u64]),
            )
            .with_input(
                "d2",
                per_invocation(&|i| vec![pairs[i].1 as u64, other(i).1 as u64]),
            );
        let results = |shader: &Shader| -> RunResult {
            run(shader, &launch, &mut Resources::default()).unwrap_or_else(|e| panic!("{e}"))
        };
        let (expected, actual) = (results(&original), results(&lowered));
        assert_eq!(expected.len(), pairs.len());
        assert_eq!(expected.outputs.len(), 2 * OPS.len());
        for (i, (want, got)) in expected.invocations().zip(actual.invocations()).enumerate() {
            for op in OPS {
                let (n, d) = pairs[i];
                let (n2, d2) = other(i);
                let scalar = op.name().to_string();
                let vector = format!("{scalar}_vec2");
                let (w, g) = (want.output(&scalar), got.output(&scalar));
                assert_eq!(w, g, "{scalar}({n:#x}, {d:#x})");
                let (w, g) = (want.output(&vector), got.output(&vector));
                assert_eq!(w, g, "{vector}(({n:#x}, {n2:#x}), ({d:#x}, {d2:#x}))");
            }
        }
    }

    /// Zero, ±1, the extremes, powers of two and their neighbours (both signs), and a few
    /// others.
    fn edge_values() -> Vec<u32> {
        let mut values = vec![0, 3, 5, 7, 10, 1000, 0x5555_5555, 0xaaaa_aaaa];
        for k in 0..32 {
            let p = 1u32 << k;
            for v in [p, p - 1, p + 1] {
                values.extend([v, v.wrapping_neg()]);
            }
        }
        values.extend([i32::MAX as u32, i32::MIN as u32, u32::MAX, u32::MAX - 1]);
        values.sort_unstable();
        values.dedup();
        values
    }

    #[test]
    fn every_pair_of_edge_values_divides_as_the_interpreter_does() {
        let values = edge_values();
        let pairs: Vec<(u32, u32)> = values
            .iter()
            .flat_map(|&n| values.iter().map(move |&d| (n, d)))
            .collect();
        assert!(pairs.len() > 10_000);
        check_pairs(&pairs);
    }

    /// Operands of random magnitude (a random word shifted right by 0 to 31 bits), near a power
    /// of two, or near `u32::MAX`, of either sign: quotients of every size come up, not only
    /// the 0 and 1 of uniform words, and so do the rare pairs (a dividend near `2^32`, a divisor
    /// near a power of two) whose estimate needs both corrections.
    #[test]
    fn random_pairs_divide_as_the_interpreter_does() {
        let mut rng = Rng::new(0x1d1f);
        let mut operand = || {
            let v = match rng.below(3) {
                0 => (rng.next_u64() as u32) >> rng.below(32),
                1 => (1u32 << rng.below(32)).wrapping_add(rng.range(-64, 64) as u32),
                _ => u32::MAX - rng.below(1024) as u32,
            };
            if rng.below(2) == 0 {
                v
            } else {
                v.wrapping_neg()
            }
        };
        let pairs: Vec<(u32, u32)> = (0..20_000).map(|_| (operand(), operand())).collect();
        check_pairs(&pairs);
    }

    #[test]
    fn nothing_changes_when_the_target_has_a_divider() {
        let mut shader = division_shader();
        let before = print(&shader);
        let pass = LowerIdiv { enabled: false };
        assert!(!pass.run(&mut shader, &mut PassContext::default()).unwrap());
        assert_eq!(print(&shader), before);
    }

    #[test]
    fn other_bit_sizes_are_left_alone() {
        let mut shader = Shader::new(Stage::Compute);
        let entry = shader.entry;
        let mut b = Builder::new(&mut shader, entry);
        for bits in [8, 16, 64] {
            let n = b.imm(bits, &[100]);
            let d = b.imm(bits, &[7]);
            for op in OPS {
                b.alu(op, &[n, d]);
            }
        }
        b.ret(None);
        let before = print(&shader);
        assert!(!lower_all(&mut shader));
        assert_eq!(print(&shader), before);
    }

    #[test]
    fn each_lowered_instruction_spends_one_transformation() {
        let mut shader = division_shader();
        let total = divisions_left(&shader);
        let mut context = PassContext {
            budget: Budget::new(Some(3)),
            ..PassContext::default()
        };
        let pass = LowerIdiv { enabled: true };
        context.budget.start_pass(pass.name());
        assert!(pass.run(&mut shader, &mut context).unwrap());
        verify(&shader).unwrap();
        assert_eq!(context.budget.spent(), 3);
        assert_eq!(divisions_left(&shader), total - 3);
        assert!(context.budget.last().unwrap().starts_with("lower-idiv: "));
    }
}
