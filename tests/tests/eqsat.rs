//! The `eqsat` pass: it keeps semantics on random programs for every target's cost model, never
//! makes a block more expensive under that model, and lets the target's costs choose between
//! equal forms.

use shrew_engine::egraph::{CostModel, UnitCost, shader_cost};
use shrew_engine::ir::Shader;
use shrew_engine::passes::eqsat::Eqsat;
use shrew_engine::passes::manager::{self, Pass, PassContext, Pipeline};
use shrew_engine::rewrite::TargetOptions;
use shrew_engine::{text, verify};
use shrew_tests::{assert_outputs_agree, outputs, run_with_small_resources, same_float};
use std::sync::Arc;
use std::time::Duration;

/// The cost model of the target called `name`.
fn model(name: &str) -> Arc<dyn CostModel> {
    shrew_targets::lookup(name).unwrap().options().costs.model.0
}

fn models() -> Vec<Arc<dyn CostModel>> {
    vec![Arc::new(UnitCost), model("gen9"), model("evergreen")]
}

/// The `eqsat` pass with the main rules and the default options and limits.
fn main_rules(model: Arc<dyn CostModel>) -> Eqsat {
    Eqsat::new(&[&shrew_rules::ALGEBRAIC], &TargetOptions::default(), model)
}

/// Runs `eqsat` with the main rules and the default options under `model`; the IR must verify.
/// The time limit, a safety net, is lifted further (the iteration and node limits, which decide
/// the result, stay): a debug build on a busy machine must not reach it either.
fn eqsat(shader: &mut Shader, model: Arc<dyn CostModel>) -> bool {
    let mut pass = main_rules(model);
    pass.limits.time = Duration::from_secs(60);
    let changed = pass.run(shader, &mut PassContext::default()).unwrap();
    if let Err(errors) = verify::verify(shader) {
        panic!(
            "invalid IR after eqsat: {errors:?}\n{}",
            text::print(shader)
        );
    }
    changed
}

/// Runs the greedy rules (`algebraic,dce`) with the default options.
fn greedy(shader: &mut Shader) {
    let registry = shrew_rules::registry(&TargetOptions::default(), &[]);
    let pipeline = Pipeline::parse("algebraic,dce", &registry).unwrap();
    manager::run(&pipeline, &registry, shader, &Default::default()).unwrap();
}

#[test]
fn random_programs_keep_their_results_and_never_cost_more() {
    for model in models() {
        let mut improved = 0;
        for seed in 0..10 {
            let mut shader = shrew_tests::program(seed, 200);
            let before = outputs(&shader);
            let cost_before = shader_cost(&shader, model.as_ref());
            improved += eqsat(&mut shader, model.clone()) as usize;
            let cost_after = shader_cost(&shader, model.as_ref());
            assert!(
                cost_after <= cost_before,
                "{}: seed {seed} went from {cost_before} to {cost_after}",
                model.name()
            );
            let after = outputs(&shader);
            let what = format!("{}, seed {seed}", model.name());
            assert_outputs_agree(&before, &after, same_float, &what);
        }
        assert!(
            improved >= 8,
            "{}: only {improved} programs improved",
            model.name()
        );
    }
}

/// `c ? 1.0 : 0.0` per component, written to the output.
const SELECT_ONE_ZERO: &str = "shader fragment
var shader_in f32x4 @color (location=0)
var shader_out f32x4 @frag (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @color
    32x4 %1 = load_deref %0
    32x4 %2 = load_const (0.5, 0.5, 0.5, 0.5)
    1x4 %3 = flt %1, %2
    32x4 %4 = load_const (1.0, 1.0, 1.0, 1.0)
    32x4 %5 = load_const (0.0, 0.0, 0.0, 0.0)
    32x4 %6 = bcsel %3, %4, %5
    32 %7 = deref_var @frag
    store_deref %7, %6 (write_mask=xyzw)
    return
}
";

/// The same e-graph (the rule `bcsel(c, 1.0, 0.0) => b2f(c)` makes both forms equal) extracts
/// differently: Gen pays a compare and a select for `bcsel` but one `and` for `b2f`; Evergreen
/// does `bcsel` in one CNDE with inline constants, while `b2f` is an AND_INT with a literal.
#[test]
fn gen_and_evergreen_choose_different_forms_of_one_select() {
    let original = text::parse(SELECT_ONE_ZERO, "select.shrew").unwrap();
    let (reference, _) = run_with_small_resources(&original).unwrap();
    let mut printed = Vec::new();
    for model in [model("gen9"), model("evergreen")] {
        let mut shader = original.clone();
        eqsat(&mut shader, model);
        let (result, _) = run_with_small_resources(&shader).unwrap();
        assert_eq!(result.len(), reference.len());
        assert!(reference.invocations().eq(result.invocations()));
        printed.push(text::print(&shader));
    }
    assert!(
        printed[0].contains("b2f32") && !printed[0].contains("bcsel"),
        "{}",
        printed[0]
    );
    assert!(
        printed[1].contains("bcsel") && !printed[1].contains("b2f32"),
        "{}",
        printed[1]
    );
}

/// The time limit is a safety net: when it stops a block's saturation, the pass keeps valid IR
/// (the block unchanged or a cheaper extraction) and says so, since that result depends on
/// the machine's speed.
#[test]
fn a_time_limit_that_strikes_is_reported_and_keeps_valid_ir() {
    let original = text::parse(SELECT_ONE_ZERO, "select.shrew").unwrap();
    let (reference, _) = run_with_small_resources(&original).unwrap();
    let mut shader = original.clone();
    let mut pass = main_rules(model("gen9"));
    pass.limits.time = Duration::ZERO;
    let mut context = PassContext::default();
    pass.run(&mut shader, &mut context).unwrap();
    verify::verify(&shader).unwrap();
    let (result, _) = run_with_small_resources(&shader).unwrap();
    assert!(reference.invocations().eq(result.invocations()));
    assert!(
        matches!(&context.stopped_early[..], [note] if note.contains("time limit") && note.contains("fn main: b0")),
        "{:?}",
        context.stopped_early
    );

    // Under the default limits the same block saturates without a note.
    let mut context = PassContext::default();
    let mut shader = original.clone();
    main_rules(model("gen9"))
        .run(&mut shader, &mut context)
        .unwrap();
    assert!(
        context.stopped_early.is_empty(),
        "{:?}",
        context.stopped_early
    );
}

/// On Evergreen, eqsat does better than the greedy rules, which commit to `b2f` whatever the
/// target pays for it.
#[test]
fn eqsat_beats_the_greedy_rules_under_evergreen_costs() {
    let original = text::parse(SELECT_ONE_ZERO, "select.shrew").unwrap();
    let mut rewritten = original.clone();
    greedy(&mut rewritten);
    let evergreen = model("evergreen");
    let greedy_cost = shader_cost(&rewritten, evergreen.as_ref());
    let mut shader = original.clone();
    eqsat(&mut shader, evergreen.clone());
    let saturated = shader_cost(&shader, evergreen.as_ref());
    assert!(
        saturated < greedy_cost,
        "eqsat {saturated}, greedy {greedy_cost}"
    );
}

/// `x * (y + z) - x * z` is `x * y`, but the only way there is through the expanded form
/// `(x * y + x * z) - x * z`, which costs a multiplication more than the original: a step that
/// makes the code worse before `isub(iadd(a, b), b) => a` makes it better. The greedy rules never
/// take it (distributivity is an equality of the `equal` group, which only the e-graph runs);
/// eqsat does.
const NEEDS_A_WORSE_STEP: &str = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out u32 @o (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = f2i32 %1.x
    32 %3 = f2i32 %1.y
    32 %4 = f2i32 %1.z
    32 %5 = iadd %3, %4
    32 %6 = imul %2, %5
    32 %7 = imul %2, %4
    32 %8 = isub %6, %7
    32 %9 = deref_var @o
    store_deref %9, %8 (write_mask=x)
    return
}
";

#[test]
fn eqsat_takes_a_temporarily_worse_step_that_greedy_cannot() {
    let original = text::parse(NEEDS_A_WORSE_STEP, "detour.shrew").unwrap();
    let before = outputs(&original);
    let mut rewritten = original.clone();
    greedy(&mut rewritten);
    let gen9 = model("gen9");
    assert_eq!(
        shader_cost(&rewritten, gen9.as_ref()),
        shader_cost(&original, gen9.as_ref()),
        "the greedy rules found a way:\n{}",
        text::print(&rewritten)
    );
    let mut saturated = original.clone();
    assert!(eqsat(&mut saturated, gen9));
    let printed = text::print(&saturated);
    assert_eq!(printed.matches(" imul ").count(), 1, "{printed}");
    assert!(
        !printed.contains(" iadd ") && !printed.contains(" isub "),
        "{printed}"
    );
    assert_outputs_agree(&before, &outputs(&saturated), |a, b| a == b, "detour");
}
