//! Bisection of a pipeline that makes a shader wrong or worse: the first transformation (a
//! pass's change or a rule's firing, as the pass manager counts them under `--bisect-limit`)
//! after which the shader's kernels fail their check, with the IR before and after it.
//!
//! The check is the shader's piglit test on the target's emulator (every stage through the
//! pipeline, each run with the same transformation limit), the kernels against the unoptimized
//! shader on the interpreter with random inputs, or the kernels' cost against a reference
//! pipeline's. A binary search over the limit finds the smallest failing one: the check must
//! pass with no transformation and fail with all of them. [`regressions`] finds the shaders of
//! a corpus a pipeline makes worse than a reference and bisects each.

use crate::corpus::CorpusStage;
use crate::differential::{self, Run};
use crate::search::{COMPILE_TIME, Objective};
use rayon::prelude::*;
use shrew_engine::ir::Shader;
use shrew_frontend::glsl::Glslang;
use shrew_targets::{Pipeline, Target};
use std::path::PathBuf;

/// What decides whether a transformation limit gives a wrong shader.
#[derive(Clone, Debug)]
pub enum Oracle {
    /// The piglit test the shader comes from.
    Piglit { test: PathBuf, glslang: Glslang },
    /// The kernels against the unoptimized shader on the interpreter, with random inputs.
    RandomInputs,
    /// The kernels' cost: a limit fails when the shader after it, finished by the `reference`
    /// pipeline, costs more than after the reference alone. Finishing by the reference makes
    /// the check pass with no transformation (that is the reference's own result, unless the
    /// pipeline's lowerings, which a bisection does not skip, cost more), so the bisection finds
    /// the transformation whose effect the reference does not undo.
    Metric {
        objective: Objective,
        reference: String,
    },
}

impl Oracle {
    /// The metric oracle, refusing an objective that is not a property of the kernels.
    pub fn metric(objective: Objective, reference: &str) -> Result<Oracle, String> {
        if objective.uses(COMPILE_TIME) {
            return Err(format!(
                "`{COMPILE_TIME}` is measured, not computed: a bisection needs a cost that is \
                 the same on every run"
            ));
        }
        Ok(Oracle::Metric {
            objective,
            reference: reference.to_string(),
        })
    }
}

/// The transformation that breaks a shader.
#[derive(Clone, Debug)]
pub struct Bisection {
    /// The transformations the whole pipeline makes on the shader.
    pub total: u64,
    /// The number of the first transformation with which the check fails (from 1).
    pub first_bad: u64,
    /// What it is: the pass, and the rule with its file:line, or the pass's change.
    pub transformation: String,
    /// Why the check fails with it.
    pub failure: String,
    /// The shader after `first_bad - 1` and after `first_bad` transformations.
    pub before: String,
    pub after: String,
}

/// Makes the pipeline being bisected (a fresh one each time: the bisection sets its options).
pub type PipelineSource<'a> = &'a (dyn Fn() -> Result<Pipeline, String> + Sync);

/// The pipeline, stopping at `limit` transformations (`None`: all).
fn limited(pipeline: PipelineSource, limit: Option<u64>) -> Result<Pipeline, String> {
    let mut parsed = pipeline()?;
    parsed.options.bisect_limit = limit;
    Ok(parsed)
}

/// The shader after the pipeline stopped at `limit` transformations (`None`: all), and what the
/// run did.
fn optimized(
    shader: &Shader,
    pipeline: PipelineSource,
    limit: Option<u64>,
) -> Result<(Shader, shrew_engine::passes::manager::RunReport), String> {
    let mut parsed = limited(pipeline, limit)?;
    parsed.options.verify_each = true;
    let mut optimized = shader.clone();
    let report = parsed.run(&mut optimized)?;
    Ok((optimized, report))
}

/// Whether the check passes with at most `limit` transformations: `Err` says why it fails.
fn check(
    shader: &Shader,
    pipeline: PipelineSource,
    target: &'static Target,
    oracle: &Oracle,
    limit: Option<u64>,
) -> Result<(), String> {
    match oracle {
        Oracle::RandomInputs => {
            let (optimized, _) = optimized(shader, pipeline, limit)?;
            let run = Run::new(target.name, None);
            differential::check_optimized(shader, &optimized, &run).map(|_| ())
        }
        Oracle::Piglit { test, glslang } => {
            let compiler = target.compiler().map_err(|e| e.to_string())?;
            let parsed = limited(pipeline, limit)?;
            let outcome = crate::run_file_through(test, glslang, &parsed, compiler.as_ref());
            match outcome.status {
                crate::Status::Pass => Ok(()),
                _ => Err(outcome.reason.unwrap_or_else(|| "the test fails".into())),
            }
        }
        Oracle::Metric {
            objective,
            reference,
        } => {
            let cost = finished_cost(shader, pipeline, limit, target, objective, reference)?;
            let by_reference = differential::optimized(shader, reference, target)?;
            let baseline = kernel_cost(&by_reference, target, objective)?;
            match cost > baseline {
                true => Err(format!(
                    "{objective} {cost} after it and `{reference}`, {baseline} after `{reference}` \
                     alone"
                )),
                false => Ok(()),
            }
        }
    }
}

/// The cost of `target`'s kernel for `shader` after the pipeline stopped at `limit`
/// transformations, then the `reference` pipeline.
fn finished_cost(
    shader: &Shader,
    pipeline: PipelineSource,
    limit: Option<u64>,
    target: &'static Target,
    objective: &Objective,
    reference: &str,
) -> Result<f64, String> {
    let (optimized, _) = optimized(shader, pipeline, limit)?;
    let finished = differential::optimized(&optimized, reference, target)?;
    kernel_cost(&finished, target, objective)
}

/// The cost of `target`'s kernel for the (optimized) `shader`.
fn kernel_cost(
    shader: &Shader,
    target: &'static Target,
    objective: &Objective,
) -> Result<f64, String> {
    let compiler = target.compiler().map_err(|e| e.to_string())?;
    let kernel = compiler.compile(shader, None)?;
    objective.cost(&kernel.statistics())
}

/// Finds the first transformation of the pipeline on `shader` after which `oracle` fails on
/// `target`'s kernels.
pub fn bisect(
    shader: &Shader,
    pipeline: PipelineSource,
    target: &'static Target,
    oracle: &Oracle,
) -> Result<Bisection, String> {
    let (_, report) = optimized(shader, pipeline, None)?;
    let total = report.transformations;
    if check(shader, pipeline, target, oracle, None).is_ok() {
        return Err(match oracle {
            Oracle::Metric { reference, .. } => format!(
                "the shader after the pipeline and then `{reference}` costs no more on {} than \
                 after `{reference}` alone: nothing to bisect (what it lacks is a transformation \
                 it does not make)",
                target.name
            ),
            _ => format!(
                "the check passes with the pipeline on {}: nothing to bisect",
                target.name
            ),
        });
    }
    if let Err(e) = check(shader, pipeline, target, oracle, Some(0)) {
        if let Oracle::Metric { .. } = oracle {
            return Err(format!(
                "the shader costs more with no transformation at all: {e}; the difference is in \
                 what a bisection does not skip (the pipeline's lowerings)"
            ));
        }
        return Err(format!(
            "the check fails with no transformation at all (the backend or the check, not the \
             pipeline): {e}"
        ));
    }
    // The check passes at `good` transformations and fails at `bad`. A piglit test runs every
    // stage with the limit: another stage may need more transformations than this one makes.
    let (mut good, mut bad) = (0, total.max(1));
    while bad < 1 << 40 && check(shader, pipeline, target, oracle, Some(bad)).is_ok() {
        (good, bad) = (bad, bad * 2);
    }
    let mut failure = None;
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        match check(shader, pipeline, target, oracle, Some(mid)) {
            Ok(()) => good = mid,
            Err(e) => {
                bad = mid;
                failure = Some(e);
            }
        }
    }
    let failure = match failure {
        Some(e) => e,
        None => check(shader, pipeline, target, oracle, Some(bad))
            .err()
            .unwrap_or_else(|| "the check fails".into()),
    };
    let (before, _) = optimized(shader, pipeline, Some(bad - 1))?;
    let (after, at) = optimized(shader, pipeline, Some(bad))?;
    Ok(Bisection {
        total,
        first_bad: bad,
        transformation: at
            .last_transformation
            .unwrap_or_else(|| "(not named by its pass)".into()),
        failure,
        before: shrew_engine::text::print(&before),
        after: shrew_engine::text::print(&after),
    })
}

/// A shader of a corpus that a pipeline makes worse than a reference pipeline.
#[derive(Debug)]
pub struct Regression {
    pub name: String,
    /// The cost after the pipeline, and after the reference.
    pub cost: f64,
    pub reference_cost: f64,
    /// The transformation responsible, or why none was found.
    pub bisection: Result<Bisection, String>,
}

/// What a corpus gives between two pipelines.
#[derive(Debug, Default)]
pub struct Regressions {
    /// The shaders the pipeline makes worse, the worst (highest ratio) first.
    pub worse: Vec<Regression>,
    /// How many shaders were compared, and how many the pipeline makes better.
    pub compared: usize,
    pub better: usize,
    /// The shaders that could not be compared, and why.
    pub failed: Vec<(String, String)>,
}

/// Compares `pipeline` with `reference` on every stage of a corpus under `objective`, and bisects
/// each shader the pipeline makes worse with the metric oracle (in parallel).
pub fn regressions(
    stages: Vec<CorpusStage>,
    pipeline: PipelineSource,
    reference: &str,
    target: &'static Target,
    objective: &Objective,
) -> Result<Regressions, String> {
    let oracle = Oracle::metric(objective.clone(), reference)?;
    // Each stage: its name, and its costs after the pipeline and the reference.
    type Compared = (String, Result<(f64, f64, Shader), String>);
    let compared: Vec<Compared> = stages
        .into_par_iter()
        .map(|stage| {
            let costs = stage.shader.and_then(|shader| {
                let (optimized, _) = optimized(&shader, pipeline, None)?;
                let cost = kernel_cost(&optimized, target, objective)?;
                let by_reference = differential::optimized(&shader, reference, target)?;
                let reference_cost = kernel_cost(&by_reference, target, objective)?;
                Ok((cost, reference_cost, shader))
            });
            (stage.name, costs)
        })
        .collect();
    let mut found = Regressions::default();
    let mut worse = Vec::new();
    for (name, costs) in compared {
        match costs {
            Ok((cost, reference_cost, shader)) => {
                found.compared += 1;
                if cost < reference_cost {
                    found.better += 1;
                } else if cost > reference_cost {
                    worse.push((name, cost, reference_cost, shader));
                }
            }
            Err(e) => found.failed.push((name, e)),
        }
    }
    let ratio = |cost: f64, reference: f64| cost / reference.max(f64::MIN_POSITIVE);
    worse.sort_by(|a, b| {
        ratio(b.1, b.2)
            .total_cmp(&ratio(a.1, a.2))
            .then(a.0.cmp(&b.0))
    });
    found.worse = worse
        .into_par_iter()
        .map(|(name, cost, reference_cost, shader)| Regression {
            bisection: bisect(&shader, pipeline, target, &oracle),
            name,
            cost,
            reference_cost,
        })
        .collect();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shrew_engine::ir::{AluSrc, InstKind};
    use shrew_engine::ops::AluOp;
    use shrew_engine::passes::manager::{Pass, PassContext};

    /// A deliberately wrong pass: every `fadd` becomes an `fsub`, one transformation each.
    struct AddsSubtract;

    impl Pass for AddsSubtract {
        fn name(&self) -> &str {
            "adds-subtract"
        }

        fn description(&self) -> &str {
            "wrong on purpose: fadd becomes fsub"
        }

        fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
            Ok(context
                .budget
                .each_function(shader, |shader, f, transformations| {
                    let func = &mut shader.functions[f];
                    let insts: Vec<_> = func
                        .blocks()
                        .into_iter()
                        .flat_map(|b| func.cfg[b].insts.clone())
                        .collect();
                    transformations.each(insts, |v| match &mut func.inst_mut(v).kind {
                        InstKind::Alu(alu) if alu.op == AluOp::Fadd => {
                            alu.op = AluOp::Fsub;
                            Some(move || format!("{v} became an fsub"))
                        }
                        _ => None,
                    });
                }))
        }
    }

    /// A pass that costs more on purpose: every `fadd` of a constant has its sources swapped
    /// (which costs nothing), every other `a + b` becomes `(a + b) + b` (an instruction more; the
    /// metric oracle does not ask whether it is right).
    struct SlowsAdds;

    impl Pass for SlowsAdds {
        fn name(&self) -> &str {
            "slows-adds"
        }

        fn description(&self) -> &str {
            "costs more on purpose: a + b becomes (a + b) + b"
        }

        fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
            Ok(context
                .budget
                .each_function(shader, |shader, f, transformations| {
                    let func = &mut shader.functions[f];
                    let insts: Vec<_> = func
                        .blocks()
                        .into_iter()
                        .flat_map(|b| func.cfg[b].insts.clone())
                        .collect();
                    transformations.each(insts, |v| {
                        let InstKind::Alu(alu) = &func.inst(v).kind else {
                            return None;
                        };
                        if alu.op != AluOp::Fadd {
                            return None;
                        }
                        let (first, second) = (alu.srcs[0], alu.srcs[1]);
                        let def = func.inst(v).def;
                        let what = if func.constant_u32(second.value).is_some() {
                            set_sources(func, v, second, first);
                            format!("{v}: sources swapped")
                        } else {
                            let sum = func.insert_before(v, func.inst(v).kind.clone(), def);
                            set_sources(func, v, AluSrc::new(sum), second);
                            format!("{v}: adds its second source twice")
                        };
                        Some(move || what)
                    });
                }))
        }
    }

    fn set_sources(
        func: &mut shrew_engine::ir::Function,
        v: shrew_engine::ir::Value,
        a: AluSrc,
        b: AluSrc,
    ) {
        if let InstKind::Alu(alu) = &mut func.inst_mut(v).kind {
            alu.srcs = vec![a, b];
        }
    }

    /// Two additions of zero, whose subtraction changes nothing, then one that matters: the
    /// bisection names the third transformation.
    const SHADER: &str = "shader fragment
var shader_in f32x2 @uv (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x2 %1 = load_deref %0
    32 %2 = load_const (0)
    32 %3 = fadd %1.x, %2
    32 %4 = fadd %3, %2
    32 %5 = fadd %4, %1.y
    32x4 %6 = vec4 %5, %5, %5, %5
    32 %7 = deref_var @color
    store_deref %7, %6 (write_mask=xyzw)
    return
}
";

    #[test]
    fn bisection_names_the_first_wrong_transformation_of_an_injected_pass() {
        let shader = shrew_engine::text::parse(SHADER, "bisect test").unwrap();
        for name in ["gen9", "evergreen"] {
            let target = shrew_targets::lookup(name).unwrap();
            let pipeline = || {
                let registry = target.registry().with(Box::new(AddsSubtract));
                Pipeline::parse_in("adds-subtract", registry).map_err(|e| e.to_string())
            };
            let found = bisect(&shader, &pipeline, target, &Oracle::RandomInputs)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!((found.first_bad, found.total), (3, 3), "{name}: {found:?}");
            assert!(
                found.transformation.contains("adds-subtract")
                    && found.transformation.contains("%5 became an fsub"),
                "{name}: {}",
                found.transformation
            );
            assert!(found.before.contains("fadd %4, %1.y"), "{}", found.before);
            assert!(found.after.contains("fsub %4, %1.y"), "{}", found.after);
        }
        // A pipeline that is right has nothing to bisect.
        let target = shrew_targets::lookup("gen9").unwrap();
        let right = || Pipeline::parse("default", target).map_err(|e| e.to_string());
        let error = bisect(&shader, &right, target, &Oracle::RandomInputs).unwrap_err();
        assert!(error.contains("nothing to bisect"), "{error}");
    }

    #[test]
    fn a_metric_bisection_names_the_first_transformation_that_costs_more() {
        let shader = shrew_engine::text::parse(SHADER, "bisect test").unwrap();
        let target = shrew_targets::lookup("gen9").unwrap();
        let pipeline = || {
            let registry = target.registry().with(Box::new(SlowsAdds));
            Pipeline::parse_in("slows-adds", registry).map_err(|e| e.to_string())
        };
        let objective = Objective::parse("instructions").unwrap();
        let oracle = Oracle::metric(objective.clone(), "default").unwrap();
        let found = bisect(&shader, &pipeline, target, &oracle).unwrap();
        assert_eq!((found.first_bad, found.total), (3, 3), "{found:?}");
        assert!(
            found
                .transformation
                .contains("slows-adds: %5: adds its second source twice"),
            "{}",
            found.transformation
        );
        assert!(found.failure.contains("instructions"), "{}", found.failure);
        // `default` finished by itself costs what it costs alone.
        let right = || Pipeline::parse("default", target).map_err(|e| e.to_string());
        let error = bisect(&shader, &right, target, &oracle).unwrap_err();
        assert!(error.contains("nothing to bisect"), "{error}");
        assert!(Oracle::metric(Objective::parse("compile_us").unwrap(), "default").is_err());

        // The corpus of one: the pipeline makes it worse than `default`, and the bisection says
        // why.
        let stage = CorpusStage {
            name: "adds".into(),
            shader: Ok(shader),
            piglit_test: None,
        };
        let found = regressions(vec![stage], &pipeline, "default", target, &objective).unwrap();
        assert_eq!((found.compared, found.better, found.worse.len()), (1, 0, 1));
        let worse = &found.worse[0];
        assert!(worse.cost > worse.reference_cost, "{worse:?}");
        assert_eq!(worse.bisection.as_ref().unwrap().first_bad, 3);
    }
}
