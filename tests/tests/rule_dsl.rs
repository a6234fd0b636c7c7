//! The rule DSL end to end: a small rule group compiled by the macro, run by the greedy pass on
//! IR text, checked against the interpreter and the verifier.

use shrew_engine::ir::InstKind;
use shrew_engine::passes::Budget;
use shrew_engine::passes::algebraic::{self, AlgebraicError, RuleStats};
use shrew_engine::rewrite::{Ctx, RuleSet, Src, TargetOptions};
use shrew_engine::{text, verify};

// One group per module: the macro expands its matchers next to the group.
mod dsl {
    shrew_rules_macro::rules! {
        /// Rules exercising the DSL's features.
        pub static DSL;

        iadd(a, 0) => a;
        ~fadd(a, 0.0) => a;
        fmul(a, 1.0) => a;
        ineg(ineg(a)) => a;
        ~fadd@32(fmul[is_used_once](a, b), c) => ffma(a, b, c) if opts.fuse_ffma32;
        imul(a, #b[crate::single_bit]) => ishl(a, find_lsb(b));
        flt(fneg(a), fneg(b)) => flt(b, a);
        fdot2(a, a) => fadd(fmul(a.x, a.x), fmul(a.y, a.y));
        bcsel(c, a, a) => a;
        f2f32(f2f64(a@32)) => a if opts.lower_fsub;
    }
}
use dsl::DSL;

/// A condition defined outside the library: every read component has exactly one bit set.
fn single_bit(cx: &Ctx, src: &Src) -> bool {
    match cx.func.get_inst(src.value).map(|i| &i.kind) {
        Some(InstKind::Const(values)) => src
            .read()
            .iter()
            .all(|&c| values[c as usize].count_ones() == 1),
        _ => false,
    }
}

static SET: RuleSet = RuleSet {
    name: "dsl",
    description: "test rules",
    groups: &[&DSL],
};

mod fight {
    shrew_rules_macro::rules! {
        /// Two rules that undo each other.
        pub static FIGHT;

        ishl(a@32, 1) => iadd(a, a);
        iadd(a@32, a) => ishl(a, 1);
    }
}
use fight::FIGHT;

mod laws {
    shrew_rules_macro::rules! {
        /// An equality: two rules, one per direction, that only the e-graph runs.
        pub static LAWS;

        iadd(a, 0) => a;
        imul(a, iadd(b, c)) <=> iadd(imul(a, b), imul(a, c));
    }
}
use laws::LAWS;

#[test]
fn an_equality_is_two_egraph_only_rules_without_greedy_matchers() {
    assert_eq!(LAWS.rules.len(), 3);
    let [plain, forward, backward] = &LAWS.rules else {
        unreachable!()
    };
    assert!(!plain.egraph_only);
    assert_eq!(
        forward.text,
        "imul(a, iadd(b, c)) => iadd(imul(a, b), imul(a, c))"
    );
    assert_eq!(
        backward.text,
        "iadd(imul(a, b), imul(a, c)) => imul(a, iadd(b, c))"
    );
    assert!(forward.egraph_only && backward.egraph_only);
    assert!(forward.egraph.is_some() && backward.egraph.is_some());
    assert_eq!(forward.line, backward.line);
    // The greedy dispatchers only know the plain rule: `iadd` is dispatched (for it), `imul`
    // is not.
    let roots: Vec<&str> = LAWS.roots.iter().map(|(op, _)| op.name()).collect();
    assert_eq!(roots, ["iadd"]);
}

mod general {
    shrew_rules_macro::rules! {
        /// A general rule, and a guarded one.
        pub static GENERAL;

        iadd(a, 0) => a;
        imul(a, 1) => a if opts.lower_fsub;
    }
}
use general::GENERAL;

mod special {
    shrew_rules_macro::rules! {
        /// Rules that GENERAL's rules pre-empt, or not.
        pub static SPECIAL;

        #[name = zero_plus_constant] iadd(#a, 0) => a;
        iadd(a@32, 0) => a;
        imul(a, 1) => a;
        iadd(0, a) => a;
        iadd(a, 1) => iadd(1, a);
    }
}
use special::SPECIAL;

#[test]
fn a_rule_preempted_by_an_earlier_group_of_its_set_is_reported() {
    static SHADOWING: RuleSet = RuleSet {
        name: "shadowing",
        description: "a general group before a special one",
        groups: &[&GENERAL, &SPECIAL],
    };
    let shadowed: Vec<(&str, &str)> = shrew_engine::rewrite::shadow::shadowed_rules(&SHADOWING)
        .iter()
        .map(|s| (s.rule.name, s.by.text))
        .collect();
    let line = SPECIAL.rules[1].line;
    // `imul(a, 1)` only fires under its guard, so the unguarded rule below it does fire; `iadd`
    // is commutative, so `iadd(0, a)` is `iadd(a, 0)` too.
    assert_eq!(
        shadowed,
        [
            ("zero_plus_constant", "iadd(a, 0) => a"),
            (format!("iadd_l{line}").as_str(), "iadd(a, 0) => a"),
            (format!("iadd_l{}", line + 2).as_str(), "iadd(a, 0) => a"),
        ]
    );
}

#[test]
fn rules_are_named_by_label_or_by_root_op_and_line() {
    let names: Vec<&str> = SPECIAL.rules.iter().map(|r| r.name).collect();
    let line = SPECIAL.rules[1].line;
    assert_eq!(names[0], "zero_plus_constant");
    assert_eq!(names[1], format!("iadd_l{line}"));
    assert_eq!(names[2], format!("imul_l{}", line + 1));
    assert_eq!(SPECIAL.rules[0].crate_name(), "rule_dsl");
    assert_eq!(
        SPECIAL.rules[0].test_path(),
        "special::verify::zero_plus_constant"
    );
    // The directions of an equality are named by their own roots.
    let names: Vec<&str> = LAWS.rules.iter().map(|r| r.name).collect();
    let line = LAWS.rules[1].line;
    assert_eq!(
        names[1..],
        [format!("imul_l{line}"), format!("iadd_l{line}")]
    );
}

static FIGHT_SET: RuleSet = RuleSet {
    name: "fight",
    description: "rules that undo each other",
    groups: &[&FIGHT],
};

mod factor {
    shrew_rules_macro::rules! {
        /// Rules whose matches depend on operand orders: three commutative ops (eight orders), and
        /// a variable repeated across the commutative and the fixed sources of `ffma`.
        pub static FACTOR;

        ~fadd(fmul(a, b), fmul(a, c)) => fmul(a, fadd(b, c));
        ffma(a, 1.0, a) => fadd(a, a);
    }
}
use factor::FACTOR;

static FACTOR_SET: RuleSet = RuleSet {
    name: "factor",
    description: "one rule with three commutative ops",
    groups: &[&FACTOR],
};

fn optimize(src: &str, set: &RuleSet, opts: &TargetOptions) -> (String, RuleStats) {
    let mut shader = text::parse(src, "test.shrew").expect("test IR parses");
    let mut stats = RuleStats::default();
    algebraic::run(
        &mut shader,
        set,
        opts,
        &[],
        &mut stats,
        &mut Budget::unlimited(),
    )
    .expect("no cycle");
    verify::verify(&shader).expect("valid after the pass");
    (text::print(&shader), stats)
}

#[test]
fn metadata_lists_every_rule_with_text_and_location() {
    assert_eq!(DSL.rules.len(), 10);
    assert_eq!(DSL.rules[1].text, "~fadd(a, 0.0) => a");
    assert!(DSL.rules[1].inexact);
    let guard = DSL.rules[4].guard.as_ref().expect("the rule has a guard");
    assert_eq!(guard.text, "opts.fuse_ffma32");
    let fused = TargetOptions {
        fuse_ffma32: true,
        ..TargetOptions::default()
    };
    assert!(!(guard.holds)(&TargetOptions::default()) && (guard.holds)(&fused));
    assert!(
        DSL.rules[0].file.ends_with("rule_dsl.rs"),
        "{}",
        DSL.rules[0].file
    );
    assert!(DSL.rules[0].line > 10);
    let guards = SET.guards(&TargetOptions::default());
    assert_eq!(guards.iter().filter(|g| !**g).count(), 2);
}

/// A fragment shader around `body`, which reads `%1` (a vec4 input) and leaves its result in
/// `%99`, stored to the output.
fn shader(body: &str) -> String {
    format!(
        "shader fragment\nvar shader_in f32x4 @v (location=0)\nvar shader_out f32x4 @o (location=0)\n\
         entry fn main() {{\nb0:\n    32 %0 = deref_var @v\n    32x4 %1 = load_deref %0\n{body}\n    \
         32 %98 = deref_var @o\n    store_deref %98, %99 (write_mask=xyzw)\n    return\n}}\n"
    )
}

/// The instruction lines of the printed entry function, without value numbers that a rewrite
/// renumbers.
fn ops(printed: &str) -> Vec<String> {
    printed
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(_, rhs)| rhs.trim().to_string()))
        .collect()
}

#[test]
fn a_rule_replaces_the_root_and_leaves_the_rest_for_dce() {
    let src = shader("    32 %2 = load_const (1.0)\n    32x4 %99 = fmul %1, %2.xxxx");
    let (out, stats) = optimize(&src, &SET, &TargetOptions::default());
    assert!(out.contains("store_deref %98, %1"), "{out}");
    assert!(!out.contains("fmul"), "{out}");
    assert_eq!(stats.fired[2], 1);

    // A dead instruction is left alone for dead-code elimination.
    let src = shader(
        "    32 %2 = load_const (1.0)\n    32x4 %3 = fmul %1, %2.xxxx\n    32x4 %99 = fadd %1, %1",
    );
    let (out, stats) = optimize(&src, &SET, &TargetOptions::default());
    assert_eq!(stats.total(), 0, "{out}");
}

#[test]
fn commutative_ops_match_in_either_order_and_repeated_variables_must_agree() {
    // Constant first: iadd(0, x) still matches `iadd(a, 0)`.
    let src = shader(
        "    32x4 %2 = load_const (0, 0, 0, 0)\n    32x4 %3 = fmul %1, %1\n    \
         32x4 %4 = iadd %2, %3\n    32x4 %99 = bcsel %5.xxxx, %4, %4\n    \
         1 %5 = load_const (true)",
    );
    // `%5` is defined after its use above only textually; define it first instead.
    let src = src
        .replace("    1 %5 = load_const (true)\n", "")
        .replace("    32x4 %2", "    1 %5 = load_const (true)\n    32x4 %2");
    let (out, stats) = optimize(&src, &SET, &TargetOptions::default());
    assert_eq!(stats.fired[0], 1, "{out}");
    assert_eq!(stats.fired[8], 1, "{out}");
    assert!(out.contains("store_deref %98, %3"), "{out}");

    // Different swizzles of the same value are different variables.
    let src =
        shader("    1 %2 = load_const (true)\n    32x4 %99 = bcsel %2.xxxx, %1.xyzw, %1.wzyx");
    let (out, stats) = optimize(&src, &SET, &TargetOptions::default());
    assert_eq!(stats.total(), 0, "{out}");
}

#[test]
fn nested_patterns_conditions_and_guards() {
    let body = "    32x4 %2 = fmul %1, %1.yyyy\n    32x4 %99 = fadd %2, %1";
    let (out, _) = optimize(&shader(body), &SET, &TargetOptions::default());
    assert!(!out.contains("ffma"), "the guard is off by default: {out}");
    let fused = TargetOptions {
        fuse_ffma32: true,
        ..TargetOptions::default()
    };
    let (out, stats) = optimize(&shader(body), &SET, &fused);
    assert_eq!(stats.fired[4], 1, "{out}");
    assert!(out.contains("ffma %1, %1.yyyy, %1"), "{out}");

    // A second use of the product blocks the fusion (`is_used_once`).
    let body =
        "    32x4 %2 = fmul %1, %1.yyyy\n    32x4 %3 = fadd %2, %1\n    32x4 %99 = fadd %3, %2";
    let (out, stats) = optimize(&shader(body), &SET, &fused);
    assert_eq!(stats.total(), 0, "{out}");
}

#[test]
fn exactness_blocks_inexact_rules_and_propagates_to_replacements() {
    let body = "    32 %2 = load_const (0.0)\n    32x4 %99 = fadd %1, %2.xxxx {exact}";
    let (_, stats) = optimize(&shader(body), &SET, &TargetOptions::default());
    assert_eq!(stats.total(), 0);
    let body = "    32 %2 = load_const (0.0)\n    32x4 %99 = fadd %1, %2.xxxx {preserve_sz}";
    let (_, stats) = optimize(&shader(body), &SET, &TargetOptions::default());
    assert_eq!(
        stats.total(),
        0,
        "~ rules do not touch sign-preserving instructions"
    );
    let body = "    32 %2 = load_const (0.0)\n    32x4 %99 = fadd %1, %2.xxxx";
    let (_, stats) = optimize(&shader(body), &SET, &TargetOptions::default());
    assert_eq!(stats.fired[1], 1);

    // An exact rule may consume an exact instruction, and then builds exact instructions.
    let body = "    32x2 %2 = fmul %1.xy, %1.zw\n    32 %3 = fdot2 %2, %2 {exact}\n    \
                32x4 %99 = vec4 %3, %3, %3, %3";
    let (out, stats) = optimize(&shader(body), &SET, &TargetOptions::default());
    assert_eq!(stats.fired[7], 1, "{out}");
    let built: Vec<String> = ops(&out)
        .into_iter()
        .filter(|l| l.starts_with("fadd") || l.contains("fmul %2"))
        .collect();
    assert_eq!(built.len(), 3, "{out}");
    assert!(built.iter().all(|l| l.ends_with("{exact}")), "{out}");
}

#[test]
fn replacement_swizzles_constants_and_generic_sizes() {
    // fdot2(a, a) => fadd(fmul(a.x, a.x), fmul(a.y, a.y)) on a swizzled source.
    let body = "    32 %3 = fdot2 %1.zw, %1.zw\n    32x4 %99 = vec4 %3, %3, %3, %3";
    let (out, _) = optimize(&shader(body), &SET, &TargetOptions::default());
    let lines = ops(&out);
    assert!(lines.iter().any(|l| l.contains("fmul %1.z, %1.z")), "{out}");
    assert!(lines.iter().any(|l| l.contains("fmul %1.w, %1.w")), "{out}");

    // imul by a power of two becomes a shift by find_lsb of the constant, at 16 bits; find_lsb
    // of a constant folds into the 32-bit shift count 3.
    let body = "    16x4 %2 = f2i16 %1\n    16 %3 = load_const (8)\n    16x4 %4 = imul %2, %3.xxxx\n    \
                32x4 %99 = i2f32 %4";
    let (out, stats) = optimize(&shader(body), &SET, &TargetOptions::default());
    assert_eq!(stats.fired[5], 1, "{out}");
    let lines = ops(&out);
    assert!(!lines.iter().any(|l| l.starts_with("find_lsb")), "{out}");
    let count = out
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("32x4 ")?
                .strip_suffix(" = load_const (3, 3, 3, 3)")
        })
        .unwrap_or_else(|| panic!("no 32-bit constant 3: {out}"));
    assert!(
        lines.iter().any(|l| l == &format!("ishl %2, {count}")),
        "{out}"
    );
}

#[test]
fn rules_that_undo_each_other_are_reported_not_looped() {
    let src = shader(
        "    32x4 %2 = f2i32 %1\n    32 %3 = load_const (1)\n    32x4 %4 = ishl %2, %3.xxxx\n    \
         32x4 %99 = i2f32 %4",
    );
    let mut shader = text::parse(&src, "test.shrew").unwrap();
    let err = algebraic::run(
        &mut shader,
        &FIGHT_SET,
        &TargetOptions::default(),
        &[],
        &mut RuleStats::default(),
        &mut Budget::unlimited(),
    )
    .unwrap_err();
    let AlgebraicError::RuleCycle { first, second, .. } = &err else {
        panic!("expected a cycle, got {err}");
    };
    let mut pair = [*first, *second];
    pair.sort();
    assert_eq!(
        pair,
        ["iadd(a@32, a) => ishl(a, 1)", "ishl(a@32, 1) => iadd(a, a)"]
    );
    verify::verify(&shader).expect("the shader stays valid");
}

#[test]
fn every_operand_order_of_every_commutative_op_matches() {
    // `a` is %1.x; b and c are %1.y and %1.z, in every order of the three commutative ops.
    for flips in 0..8 {
        let pair = |bit: u32, first: &str, second: &str| {
            if flips & bit != 0 {
                format!("{second}, {first}")
            } else {
                format!("{first}, {second}")
            }
        };
        let body = format!(
            "    32 %2 = fmul {}\n    32 %3 = fmul {}\n    32 %4 = fadd {}\n    \
             32x4 %99 = vec4 %4, %4, %4, %4",
            pair(2, "%1.x", "%1.y"),
            pair(4, "%1.x", "%1.z"),
            pair(1, "%2", "%3"),
        );
        let (out, stats) = optimize(&shader(&body), &FACTOR_SET, &TargetOptions::default());
        assert_eq!(stats.total(), 1, "order {flips}: {out}");
        assert!(
            out.contains("fadd %1.y, %1.z") || out.contains("fadd %1.z, %1.y"),
            "{out}"
        );
    }
}

#[test]
fn a_variable_repeated_across_commutative_and_fixed_sources_matches_either_order() {
    for body in [
        "    32 %2 = load_const (1.0)\n    32 %3 = ffma %1.x, %2, %1.x",
        "    32 %2 = load_const (1.0)\n    32 %3 = ffma %2, %1.x, %1.x",
    ] {
        let body = format!("{body}\n    32x4 %99 = vec4 %3, %3, %3, %3");
        let (out, stats) = optimize(&shader(&body), &FACTOR_SET, &TargetOptions::default());
        assert_eq!(stats.fired[1], 1, "{out}");
        assert!(out.contains("fadd %1.x, %1.x"), "{out}");
    }
}

// A rule wrong on purpose (its generated test asserts the verification rejects it), next to a
// right one, for the bisection to find.
mod wrong {
    shrew_rules_macro::rules! {
        /// A right rule and a wrong one.
        pub static WRONG;

        fmul(a, 1.0) => a;
        #[wrong] fadd(a, fneg(b)) => fadd(a, b);
    }
}

static WRONG_SET: RuleSet = RuleSet {
    name: "wrong-rules",
    description: "a right rule and one wrong on purpose",
    groups: &[&wrong::WRONG],
};

/// `shrew bisect`'s library finds a wrong rule injected into a pipeline: the firing after which
/// the kernels disagree with the interpreter, named by the rule's text and file:line, after a
/// right rule's firing that it leaves alone.
#[test]
fn bisection_names_an_injected_wrong_rule_and_its_firing() {
    use shrew_harness::bisect::{Oracle, bisect};
    let shader = text::parse(
        "shader fragment
var shader_in f32x2 @uv (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x2 %1 = load_deref %0
    32 %2 = fneg %1.y
    32 %3 = fadd %1.x, %2
    32 %4 = load_const (1.0)
    32 %5 = fmul %3, %4
    32x4 %6 = vec4 %5, %5, %5, %5
    32 %7 = deref_var @color
    store_deref %7, %6 (write_mask=xyzw)
    return
}
",
        "wrong rule",
    )
    .unwrap();
    for name in ["gen9", "evergreen"] {
        let target = shrew_targets::lookup(name).unwrap();
        let pipeline = || {
            let pass = algebraic::RuleSetPass {
                set: &WRONG_SET,
                opts: target.options(),
            };
            let registry = target.registry().with(Box::new(pass));
            shrew_targets::Pipeline::parse_in("wrong-rules", registry).map_err(|e| e.to_string())
        };
        let found = bisect(&shader, &pipeline, target, &Oracle::RandomInputs).unwrap();
        // The multiplication (the last instruction) is rewritten first, then the addition.
        assert_eq!((found.first_bad, found.total), (2, 2), "{name}: {found:?}");
        let rule = &wrong::WRONG.rules[1];
        assert!(
            found.transformation.starts_with(&format!(
                "wrong-rules: `{}` ({})",
                rule.text,
                rule.location()
            )) && rule.location().contains("rule_dsl.rs:"),
            "{name}: {}",
            found.transformation
        );
        assert!(found.before.contains("fadd %1.x, %2"), "{}", found.before);
        assert!(found.after.contains("fadd %1.x, %1.y"), "{}", found.after);
    }
}
