//! Bisection of a pipeline that makes a shader wrong: the first transformation (a pass's change
//! or a rule's firing, as the pass manager counts them under `--bisect-limit`) after which the
//! shader's kernels fail their check, with the IR before and after it.
//!
//! The check is the shader's piglit test on the target's emulator (every stage through the
//! pipeline, each run with the same transformation limit), or the kernels against the
//! unoptimized shader on the interpreter with random inputs. A binary search over the limit
//! finds the smallest failing one: the check must pass with no transformation and fail with
//! all of them.

use crate::differential::{self, Run};
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
pub type PipelineSource<'a> = &'a dyn Fn() -> Result<Pipeline, String>;

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
    }
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
        return Err(format!(
            "the check passes with the pipeline on {}: nothing to bisect",
            target.name
        ));
    }
    if let Err(e) = check(shader, pipeline, target, oracle, Some(0)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use shrew_engine::ir::InstKind;
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
}
