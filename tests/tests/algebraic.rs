//! The algebraic rule sets on whole programs: the interpreter gives the same results before and
//! after the greedy pass, on random programs and on the example shaders.
//!
//! With only the exact rules enabled, results must be bit-identical (any NaN equals any NaN).
//! With every rule, `~` rules may change rounding, NaN, infinities and signed zeros, so finite
//! results are compared with a relative tolerance.

use shrew_engine::interp::{self, Launch, Resources};
use shrew_engine::ir::Shader;
use shrew_engine::ops::eval::fget;
use shrew_engine::passes::Budget;
use shrew_engine::passes::algebraic::{self, RuleStats};
use shrew_engine::rewrite::{RuleSet, TargetOptions};
use shrew_engine::{text, verify};
use shrew_tests::{assert_outputs_agree, bit_identical, outputs, same_float};

/// Indices of the rules of `set` that may change results (`~`, nsz, nnan, ninf).
fn inexact_rules(set: &RuleSet) -> Vec<usize> {
    set.rules()
        .enumerate()
        .filter(|(_, (_, r))| r.inexact || r.loses.0 != 0)
        .map(|(i, _)| i)
        .collect()
}

fn optimize(shader: &mut Shader, exact_only: bool, opts: &TargetOptions) -> u64 {
    let mut fired = 0;
    for set in [&shrew_rules::ALGEBRAIC, &shrew_rules::LATE] {
        let disabled = if exact_only {
            inexact_rules(set)
        } else {
            Vec::new()
        };
        let mut stats = RuleStats::default();
        algebraic::run(
            shader,
            set,
            opts,
            &disabled,
            &mut stats,
            &mut Budget::unlimited(),
        )
        .expect("no rule cycle");
        verify::verify(shader).expect("valid IR after the pass");
        fired += stats.total();
        // The pass ends at a fixpoint: running it again finds nothing.
        let mut again = RuleStats::default();
        algebraic::run(
            shader,
            set,
            opts,
            &disabled,
            &mut again,
            &mut Budget::unlimited(),
        )
        .expect("no rule cycle");
        assert_eq!(again.total(), 0, "{} fired after a fixpoint", set.name);
    }
    fired
}

#[test]
fn exact_rules_keep_random_programs_bit_identical() {
    let mut fired = 0;
    for seed in 0..30 {
        let mut shader = shrew_tests::program(seed, 300);
        let before = outputs(&shader);
        fired += optimize(&mut shader, true, &TargetOptions::default());
        let after = outputs(&shader);
        assert_outputs_agree(&before, &after, bit_identical, &format!("seed {seed}"));
    }
    assert!(
        fired > 100,
        "the rules should fire on random programs ({fired})"
    );
}

#[test]
fn all_rules_keep_random_programs_close_with_every_option_set() {
    let all_on = TargetOptions {
        fuse_ffma16: true,
        fuse_ffma32: true,
        fuse_ffma64: true,
        lower_fsub: true,
        lower_isub: true,
        lower_fsat: true,
        lower_fdiv: true,
        lower_flrp32: true,
        lower_fpow: true,
        lower_fmod: true,
        lower_ftan: true,
        lower_fsign: true,
        lower_isign: true,
        lower_iabs: true,
        lower_bitfield_extract: true,
        lower_bitfield_insert: true,
        lower_add_sat: true,
        lower_rotate: true,
        ..TargetOptions::default()
    };
    for opts in [TargetOptions::default(), all_on] {
        for seed in 100..120 {
            let mut shader = shrew_tests::program(seed, 300);
            let before = outputs(&shader);
            optimize(&mut shader, false, &opts);
            let after = outputs(&shader);
            assert_outputs_agree(&before, &after, same_float, &format!("seed {seed}"));
        }
    }
}

#[test]
fn example_shaders_compute_the_same_after_the_rules() {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/lighting.shrew");
    let src = std::fs::read_to_string(examples).expect("example exists");
    let mut shader = text::parse(&src, "lighting.shrew").expect("parses");
    let launch = Launch::invocations(4).with_input(
        "uv",
        vec![
            vec![0.1f32.to_bits() as u64, 0.2f32.to_bits() as u64],
            vec![0.9f32.to_bits() as u64, 0.2f32.to_bits() as u64],
            vec![0.1f32.to_bits() as u64, 0.8f32.to_bits() as u64],
            vec![0.9f32.to_bits() as u64, 0.8f32.to_bits() as u64],
        ],
    );
    let run = |s: &Shader| interp::run(s, &launch, &mut Resources::default()).expect("runs");
    let before = run(&shader);
    optimize(&mut shader, false, &TargetOptions::default());
    let after = run(&shader);
    for (b, a) in before.invocations().zip(after.invocations()) {
        for (name, values) in b.outputs() {
            for (&x, &y) in values.iter().zip(a.output(name).unwrap_or_default()) {
                assert!(
                    same_float(x, y),
                    "{name}: {} became {}",
                    fget(x, 32),
                    fget(y, 32)
                );
            }
        }
    }
}
