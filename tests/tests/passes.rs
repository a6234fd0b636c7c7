//! Every mid-end pass alone, and the default pipeline, on random programs, on the IR test files
//! and on the example shaders: the interpreter must give the same results before and after,
//! and the IR must verify after every pass.
//!
//! The engine's own passes are exact: results must be bit-identical (any NaN equals any NaN).
//! The default pipeline and `eqsat` run the algebraic rules marked `~`, which may change
//! rounding, so they are compared with the relative tolerance of [`same_float`].

use shrew_engine::interp::{InvocationResult, Launch, Resources, run};
use shrew_engine::ir::Shader;
use shrew_engine::passes::manager::{self, Pipeline, Registry, RunOptions};
use shrew_engine::rewrite::{Scalarize, TargetOptions};
use shrew_engine::text;
use shrew_tests::{
    assert_outputs_agree, bit_identical, outputs, run_with_small_resources, same_float,
};

fn registry() -> Registry {
    shrew_rules::registry(&TargetOptions::default(), &[])
}

fn optimize(shader: &mut Shader, pipeline: &str, registry: &Registry) {
    let pipeline = Pipeline::parse(pipeline, registry).unwrap();
    manager::run(&pipeline, registry, shader, &RunOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Passes that run the algebraic rules, inexact ones included.
fn runs_rules(pass: &str) -> bool {
    shrew_rules::set(pass).is_some() || pass == "eqsat"
}

/// The engine's exact passes: every registered pass that does not run the rules.
fn engine_passes(registry: &Registry) -> Vec<String> {
    registry
        .passes()
        .map(|p| p.name().to_string())
        .filter(|name| !runs_rules(name))
        .collect()
}

#[test]
fn each_pass_alone_keeps_random_programs_bit_identical() {
    let registry = registry();
    let passes = engine_passes(&registry);
    assert!(passes.len() >= 5, "{passes:?}");
    for pass in &passes {
        for seed in 0..12 {
            let mut shader = shrew_tests::program(seed, 200);
            let before = outputs(&shader);
            optimize(&mut shader, &format!("{pass},{pass}"), &registry);
            let after = outputs(&shader);
            assert_outputs_agree(
                &before,
                &after,
                bit_identical,
                &format!("{pass}, seed {seed}"),
            );
        }
    }
}

#[test]
fn the_default_pipeline_keeps_random_programs_close_and_shrinks_them() {
    let registry = registry();
    let (mut before_count, mut after_count) = (0, 0);
    for seed in 200..215 {
        let mut shader = shrew_tests::program(seed, 300);
        before_count += shader.functions[0].all_insts().count();
        let before = outputs(&shader);
        optimize(&mut shader, "default", &registry);
        after_count += shader.functions[0].all_insts().count();
        let after = outputs(&shader);
        assert_outputs_agree(&before, &after, same_float, &format!("seed {seed}"));
    }
    assert!(
        after_count * 10 < before_count * 9,
        "the default pipeline should remove over 10% ({before_count} -> {after_count})"
    );
}

/// The IR test files and the example shaders that run with zero inputs and small buffers.
fn files() -> Vec<(String, Shader)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut out = Vec::new();
    for dir in ["tests/ir", "examples"] {
        let mut paths: Vec<_> = std::fs::read_dir(format!("{root}/{dir}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "shrew"))
            .collect();
        paths.sort();
        for path in paths {
            let name = path.display().to_string();
            let source = std::fs::read_to_string(&path).unwrap();
            let shader = text::parse(&source, &name).unwrap_or_else(|e| panic!("{e}"));
            out.push((name, shader));
        }
    }
    out
}

#[test]
fn every_pass_and_the_default_pipeline_keep_the_ir_files_and_examples() {
    let registry = registry();
    let mut pipelines = engine_passes(&registry);
    pipelines.push("eqsat".into());
    pipelines.push("default".into());
    let mut compared = 0;
    for (name, original) in files() {
        let before = run_with_small_resources(&original);
        for pipeline in &pipelines {
            let mut shader = original.clone();
            optimize(&mut shader, pipeline, &registry);
            let Some((result, resources)) = &before else {
                continue;
            };
            let (after, after_resources) = run_with_small_resources(&shader)
                .unwrap_or_else(|| panic!("{name} no longer runs after {pipeline}"));
            assert_eq!(after.len(), result.len());
            for (b, a) in result.invocations().zip(after.invocations()) {
                assert_eq!(b.discarded, a.discarded, "{name} after {pipeline}");
                for (output, values) in b.outputs() {
                    for (&x, &y) in values.iter().zip(a.output(output).unwrap_or_default()) {
                        let same = if pipeline == "default" || runs_rules(pipeline) {
                            same_float(x, y)
                        } else {
                            bit_identical(x, y)
                        };
                        assert!(
                            same,
                            "{name} after {pipeline}: {output} {x:#x} became {y:#x}"
                        );
                    }
                }
            }
            assert_eq!(
                resources.ssbos, after_resources.ssbos,
                "{name} after {pipeline}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 20, "only {compared} comparisons ran");
}

/// A fragment shader whose `main` calls `f0`, and functions `f0` to `f{count - 1}`, each with
/// the body `body` gives it (`b0`, then a return).
fn functions_called_from_main(count: usize, body: impl Fn(usize) -> String) -> Shader {
    let mut source = String::from(
        "shader fragment\nvar shader_out f32x4 @color (location=0)\n\n\
         entry fn main() {\nb0:\n    call f0()\n    return\n}\n",
    );
    for i in 0..count {
        source.push_str(&format!("\nfn f{i}() {{\nb0:\n{}    return\n}}\n", body(i)));
    }
    text::parse(&source, "calls.shrew").unwrap()
}

/// How many calls the shader's functions make.
fn count_calls(shader: &Shader) -> usize {
    (shader.functions.iter())
        .flat_map(|f| f.insts.iter().flatten())
        .filter(|i| i.kind.name() == "call")
        .count()
}

/// piglit's inline-explosion shape: each of 64 functions calls the next twice, so inlining
/// everything would take 2^64 copies of the last. `inline` must stop at its size budget (the
/// pass's own, or the one a target sets), leave calls behind and keep the IR valid.
#[test]
fn inlining_an_exponential_call_tree_stops_at_the_budget() {
    let depth = 64;
    let default = shrew_engine::passes::inline::MAX_FUNCTION_SIZE;
    for (inline_budget, budget) in [(None, default), (Some(500), 500)] {
        let mut shader = functions_called_from_main(depth, |i| {
            if i + 1 < depth {
                let next = i + 1;
                format!("    call f{next}()\n    call f{next}()\n")
            } else {
                "    32 %0 = deref_var @color\n    32x4 %1 = load_deref %0\n    \
                 32x4 %2 = fexp2 %1\n    store_deref %0, %2 (write_mask=xyzw)\n"
                    .to_string()
            }
        });
        let options = TargetOptions {
            inline_budget,
            ..TargetOptions::default()
        };
        let registry = shrew_rules::registry(&options, &[]);
        let pipeline = Pipeline::parse("inline", &registry).unwrap();
        let options = RunOptions {
            verify_each: true,
            ..RunOptions::default()
        };
        manager::run(&pipeline, &registry, &mut shader, &options).unwrap_or_else(|e| panic!("{e}"));
        let sizes: Vec<usize> = shader
            .functions
            .iter()
            .map(|f| f.all_insts().count())
            .collect();
        assert!(sizes.iter().all(|&n| n <= budget), "{budget}: {sizes:?}");
        let calls = count_calls(&shader);
        // Top down: the entry function takes copies until the budget, the remaining calls stay.
        assert!(calls > 0 && sizes[0] > budget / 2, "{budget}: {sizes:?}");
    }
}

/// A chain of functions each called once is inlined whole, however long: inlining a callee
/// called from one place does not grow the shader, so no budget stops it (a target without
/// calls would otherwise reject the shader).
#[test]
fn a_chain_of_single_calls_is_inlined_past_the_budget() {
    let depth = 4_000;
    let mut shader = functions_called_from_main(depth, |i| {
        let call = if i + 1 < depth {
            format!("    call f{}()\n", i + 1)
        } else {
            String::new()
        };
        "    32 %0 = deref_var @color\n    32x4 %1 = load_deref %0\n    \
         32x4 %2 = fexp2 %1\n    32x4 %3 = fsin %2\n    32x4 %4 = fcos %3\n    \
         store_deref %0, %4 (write_mask=xyzw)\n"
            .to_string()
            + &call
    });
    let sizes_before: usize = shader.functions.iter().map(|f| f.all_insts().count()).sum();
    assert!(sizes_before > shrew_engine::passes::inline::MAX_FUNCTION_SIZE);
    let registry = registry();
    let pipeline = Pipeline::parse("inline", &registry).unwrap();
    manager::run(&pipeline, &registry, &mut shader, &RunOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let calls = count_calls(&shader);
    assert_eq!((calls, shader.functions.len()), (0, 1));
}

/// `lower-inverse-trig` replaces the exact functions (which the interpreter computes) by
/// approximations: over a dense grid of inputs, each stays within a small absolute error of
/// the exact result, and the pass changes nothing where the target has the functions.
#[test]
fn inverse_trigonometry_is_approximated_within_its_error_bounds() {
    let source = "shader fragment
var shader_in f32 @a (location=0)
var shader_in f32 @b (location=1)
var shader_out f32x4 @o (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @a
    32 %1 = load_deref %0
    32 %2 = deref_var @b
    32 %3 = load_deref %2
    32 %4 = fatan %3
    32 %10 = fsin %3
    32 %5 = fatan2 %1, %10
    32 %6 = fasin %1
    32 %7 = facos %1
    32x4 %8 = vec4 %4, %5, %6, %7
    32 %9 = deref_var @o
    store_deref %9, %8 (write_mask=xyzw)
    return
}
";
    let shader = text::parse(source, "inverse_trig.shrew").unwrap();
    let mut unchanged = shader.clone();
    optimize(&mut unchanged, "lower-inverse-trig", &registry());
    assert_eq!(text::print(&unchanged), text::print(&shader));

    let options = TargetOptions {
        lower_inverse_trig: true,
        ..TargetOptions::default()
    };
    let mut lowered = shader.clone();
    optimize(
        &mut lowered,
        "lower-inverse-trig",
        &shrew_rules::registry(&options, &[]),
    );
    assert!(!text::print(&lowered).contains("fatan"));

    // `a` covers [-1, 1] for asin and acos, `b` covers [-50, 50] for atan; atan2 divides `a`
    // by `sin(b)`, ratios of every size.
    // An even count of steps keeps 0 out of the grid: atan2(0, 0) is undefined.
    let steps = 4000;
    let grid = |scale: f32| -> Vec<Vec<u64>> {
        (0..steps)
            .map(|i| {
                let t = i as f32 / (steps - 1) as f32 * 2.0 - 1.0;
                vec![(t * scale).to_bits() as u64]
            })
            .collect()
    };
    let mut launch = Launch::invocations(steps);
    launch.inputs.insert("a".into(), grid(1.0));
    let mut b = grid(50.0);
    b.reverse();
    launch.inputs.insert("b".into(), b);
    let results = |shader: &Shader| {
        run(shader, &launch, &mut Resources::default()).unwrap_or_else(|e| panic!("{e}"))
    };
    let (exact, approximate) = (results(&shader), results(&lowered));
    // GLSL leaves their precision to the implementation; these are the approximations' own
    // bounds (asin's coefficients trade absolute error for relative error near 0).
    let bounds = [1e-5, 1e-5, 4e-4, 2e-4];
    for (c, bound) in bounds.into_iter().enumerate() {
        let component =
            |inv: InvocationResult| f32::from_bits(inv.output("o").expect("an output")[c] as u32);
        let worst = exact
            .invocations()
            .zip(approximate.invocations())
            .map(|(want, have)| (component(want) - component(have)).abs())
            .fold(0f32, |worst, error| {
                // A NaN where the exact result is a number (the grid has no NaNs) is wrong.
                if error.is_nan() {
                    f32::INFINITY
                } else {
                    worst.max(error)
                }
            });
        assert!(worst <= bound, "component {c}: error {worst} above {bound}");
    }
}

/// The backend pipeline simplifies the selects `lower-indirect-derefs` makes: an array whose
/// elements all hold one value, read at a run-time index, is that value.
#[test]
fn the_backend_pipeline_folds_the_selects_of_indirect_indices() {
    let source = "shader fragment
var shader_out f32 @color (location=0)
var function_temp f32[3] @a

entry fn main() {
b0:
    32x4 %0 = load_frag_coord
    32 %1 = mov %0.x
    32 %2 = f2u32 %1
    32 %3 = load_const (0)
    32 %4 = load_const (1)
    32 %5 = load_const (2)
    32 %6 = deref_var @a
    32 %7 = deref_array %6[%3]
    store_deref %7, %1 (write_mask=x)
    32 %8 = deref_array %6[%4]
    store_deref %8, %1 (write_mask=x)
    32 %9 = deref_array %6[%5]
    store_deref %9, %1 (write_mask=x)
    32 %10 = deref_array %6[%2]
    32 %11 = load_deref %10
    32 %12 = deref_var @color
    store_deref %12, %11 (write_mask=x)
    return
}
";
    let mut shader = text::parse(source, "selects.shrew").unwrap();
    let registry = registry();
    optimize(&mut shader, shrew_rules::BACKEND_PIPELINE, &registry);
    let printed = text::print(&shader);
    assert!(!printed.contains("bcsel"), "{printed}");
    assert!(printed.contains("store_output"), "{printed}");
}

/// The default pipeline gives the same program every time: no pass may depend on the iteration
/// order of a hash set (loop-unroll once removed blocks in one, so the blocks added next got
/// other numbers from run to run).
/// With `indexed_temporaries` (R600), `lower-indirect-derefs` keeps the run-time array index of
/// a temporary stored at a run-time index, for the backend's relative addressing, and still
/// selects among the elements of an array only read at run-time indices and among vector
/// components. Either way the results stay the same.
#[test]
fn indexed_temporaries_keep_the_arrays_stored_at_run_time_indices() {
    let source = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @o (location=0)
var function_temp f32x4[4] @stored
var function_temp f32x4[4] @read

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = fabs %1
    32x4 %3 = f2u32 %2
    32 %4 = load_const (3)
    32 %5 = iand %3.x, %4
    32 %6 = iand %3.y, %4
    32 %7 = deref_var @stored
    32 %8 = deref_var @read
    32x4 %9 = load_const (1.0, 2.0, 3.0, 4.0)
    32 %10 = load_const (0)
    32 %11 = load_const (1)
    32 %12 = load_const (2)
    32 %13 = deref_array %7[%10]
    store_deref %13, %9 (write_mask=xyzw)
    32 %14 = deref_array %7[%11]
    store_deref %14, %1 (write_mask=xyzw)
    32 %15 = deref_array %7[%12]
    store_deref %15, %9 (write_mask=xyzw)
    32 %16 = deref_array %7[%4]
    store_deref %16, %1 (write_mask=xyzw)
    32 %17 = deref_array %8[%10]
    store_deref %17, %1 (write_mask=xyzw)
    32 %18 = deref_array %8[%11]
    store_deref %18, %9 (write_mask=xyzw)
    32 %19 = deref_array %8[%12]
    store_deref %19, %1 (write_mask=xyzw)
    32 %20 = deref_array %8[%4]
    store_deref %20, %9 (write_mask=xyzw)
    32 %21 = deref_array %7[%5]
    store_deref %21, %2 (write_mask=xyzw)
    32 %22 = deref_array %7[%6]
    32 %23 = deref_array %22[%5]
    32 %24 = load_deref %23
    32 %25 = deref_array %8[%5]
    32x4 %26 = load_deref %25
    32x4 %27 = fadd %26, %24.xxxx
    32 %28 = deref_var @o
    store_deref %28, %27 (write_mask=xyzw)
    return
}
";
    let shader = text::parse(source, "indexed_temporaries.shrew").unwrap();
    // Each access's variable, and whether its chain still has a run-time index.
    let accesses = |shader: &Shader| {
        let func = shader.entry_function();
        let mut found: Vec<(String, bool)> = func
            .all_insts()
            .filter_map(|v| match &func.inst(v).kind {
                shrew_engine::ir::InstKind::Intrinsic(i) => {
                    let (var, steps) = shrew_engine::ir::deref_chain(func, i.srcs[0])?;
                    let dynamic = steps.iter().any(|&s| {
                        matches!(func.inst(s).kind,
                            shrew_engine::ir::InstKind::Deref(shrew_engine::ir::Deref::Array { index, .. })
                                if func.constant_u32(index).is_none())
                    });
                    Some((shader.variable(var).name.clone(), dynamic))
                }
                _ => None,
            })
            .collect();
        found.sort();
        found.dedup();
        found
    };
    let lowered = |indexed_temporaries: bool| {
        let options = TargetOptions {
            indexed_temporaries,
            ..TargetOptions::default()
        };
        let mut lowered = shader.clone();
        optimize(
            &mut lowered,
            "lower-indirect-derefs",
            &shrew_rules::registry(&options, &[]),
        );
        assert_outputs_agree(
            &outputs(&shader),
            &outputs(&lowered),
            bit_identical,
            &format!("indexed_temporaries: {indexed_temporaries}"),
        );
        accesses(&lowered)
    };
    let dynamic = |found: &[(String, bool)], name: &str| {
        found.iter().any(|(var, dynamic)| var == name && *dynamic)
    };
    let kept = lowered(true);
    assert!(dynamic(&kept, "stored"), "{kept:?}");
    assert!(!dynamic(&kept, "read"), "{kept:?}");
    let selected = lowered(false);
    assert!(!dynamic(&selected, "stored"), "{selected:?}");
    assert!(!dynamic(&selected, "read"), "{selected:?}");
}

/// A target that splits only the operations reading constants with mixed components (but
/// selects) gets `(0.1, 0, 0, 0) * a` as `0.1 * a` beside zeros, and the `0.1` of two such
/// constants as one value; a splat constant's product and the select stay vectors.
#[test]
fn splitting_at_mixed_constants_folds_each_component() {
    let source = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @o (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = load_const (0.1, 0.0, 0.0, 0.0)
    32x4 %3 = load_const (0.0, 0.1, 0.0, 0.0)
    32x4 %4 = load_const (2.0, 2.0, 2.0, 2.0)
    32x4 %5 = fmul %2, %1.xxxx
    32x4 %6 = fmul %3, %1.xxxx
    32x4 %7 = fmul %4, %1.yyyy
    32 %8 = load_const (0.5)
    1 %9 = flt %1.z, %8
    32x4 %10 = bcsel %9.xxxx, %2, %3
    32x4 %11 = fadd %5, %6
    32x4 %12 = fadd %7, %10
    32x4 %13 = fadd %11, %12
    32 %14 = deref_var @o
    store_deref %14, %13 (write_mask=xyzw)
    return
}
";
    let shader = text::parse(source, "mixed_constants.shrew").unwrap();
    let options = TargetOptions {
        scalarize: Scalarize::MixedConstants,
        ..TargetOptions::default()
    };
    let mut split = shader.clone();
    optimize(
        &mut split,
        "lower-alu-to-scalar,constant-fold,algebraic,copy-prop,cse,dce",
        &shrew_rules::registry(&options, &[]),
    );
    assert_outputs_agree(
        &outputs(&shader),
        &outputs(&split),
        bit_identical,
        "mixed constants",
    );
    let printed = text::print(&split);
    let lines = |op: &str| {
        printed
            .lines()
            .filter(|line| line.contains(&format!("= {op} ")))
            .map(|line| {
                line.trim()
                    .split(' ')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(lines("fmul"), ["32", "32x4"], "{printed}");
    assert_eq!(lines("bcsel"), ["32x4"], "{printed}");
}

#[test]
fn the_default_pipeline_is_deterministic() {
    let registry = registry();
    let source = include_str!("../ir/nested_loop_return.shrew");
    let runs: Vec<String> = (0..8)
        .map(|_| {
            let mut shader = text::parse(source, "nested_loop_return.shrew").unwrap();
            optimize(&mut shader, "default", &registry);
            text::print(&shader)
        })
        .collect();
    assert!(
        runs.iter().all(|r| *r == runs[0]),
        "{}\n---\n{}",
        runs[0],
        runs[1..].iter().find(|r| **r != runs[0]).unwrap()
    );
}

/// `lower-doubles` builds each 64-bit float operation from others: over ordinary values,
/// denormals, zeros of both signs, infinities and NaNs, rounding and exponent operations are
/// bit-identical to the interpreter, and reciprocals, quotients and roots within 2 units in
/// the last place; where the target has them, the pass changes nothing.
#[test]
fn lowered_double_operations_match_the_exact_ones() {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.49999999999999994,
        4503599627370495.5,
        4503599627370497.0,
        -4503599627370497.0,
        1e300,
        -1e-300,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE / 3.0,
        -5e-324,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        std::f64::consts::PI,
        -123456.789,
        2147483647.9,
        2147483648.0,
        -2147483648.7,
        -2147483649.0,
        4294967295.5,
        4294967296.0,
        -65536.5,
    ];
    // A deterministic spread over every exponent, both signs.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut values: Vec<f64> = special.to_vec();
    for _ in 0..400 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        values.push(f64::from_bits(state));
        values.push((state % 20_000) as f64 / 16.0 - 625.0);
    }
    let options = TargetOptions {
        lower_doubles: shrew_engine::passes::lower_doubles::lowerable(),
        ..TargetOptions::default()
    };
    let lowering = shrew_rules::registry(&options, &[]);
    let ulps = |a: f64, b: f64| -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        let key = |x: f64| {
            let bits = x.to_bits() as i64;
            if bits < 0 { i64::MIN - bits } else { bits }
        };
        key(a).abs_diff(key(b))
    };
    // (op, result bits, bound in units in the last place, first operand's type)
    let cases: [(&str, &str, u64, &str); 17] = [
        ("ftrunc", "64", 0, "f64"),
        ("ffloor", "64", 0, "f64"),
        ("fceil", "64", 0, "f64"),
        ("ffract", "64", 0, "f64"),
        ("fround_even", "64", 0, "f64"),
        ("fsign", "64", 0, "f64"),
        ("frexp_sig", "64", 0, "f64"),
        ("frexp_exp", "32", 0, "f64"),
        ("fldexp", "64", 0, "f64"),
        ("frcp", "64", 2, "f64"),
        ("frsq", "64", 2, "f64"),
        ("fsqrt", "64", 2, "f64"),
        ("fdiv", "64", 2, "f64"),
        ("f2i32", "32", 0, "f64"),
        ("f2u32", "32", 0, "f64"),
        ("i2f64", "64", 0, "u32"),
        ("u2f64", "64", 0, "u32"),
    ];
    for (op, result_bits, bound, first_type) in cases {
        let binary = matches!(op, "fdiv" | "fldexp");
        let (second_type, second) = match op {
            "fldexp" => ("i32", ", %3"),
            _ if binary => ("f64", ", %3"),
            _ => ("f64", ""),
        };
        let first_bits = &first_type[1..];
        let source = format!(
            "shader fragment
var shader_in {first_type} @a (location=0)
var shader_in {second_type} @b (location=1)
var shader_out u{result_bits} @o (location=0)

entry fn main() {{
b0:
    32 %0 = deref_var @a
    {first_bits} %1 = load_deref %0
    32 %2 = deref_var @b
    {second_bits} %3 = load_deref %2
    {result_bits} %4 = {op} %1{second}
    32 %5 = deref_var @o
    store_deref %5, %4 (write_mask=x)
    return
}}
",
            second_bits = if second_type == "i32" { 32 } else { 64 },
        );
        let shader = text::parse(&source, "doubles.shrew").unwrap_or_else(|e| panic!("{e}"));
        let mut unchanged = shader.clone();
        optimize(&mut unchanged, "lower-doubles", &registry());
        assert_eq!(text::print(&unchanged), text::print(&shader));
        let mut lowered = shader.clone();
        let pipeline = Pipeline::parse("lower-doubles", &lowering).unwrap();
        let run_options = RunOptions {
            verify_each: true,
            ..RunOptions::default()
        };
        manager::run(&pipeline, &lowering, &mut lowered, &run_options)
            .unwrap_or_else(|e| panic!("{op}: {e}"));
        // (The 32-bit estimates of `frcp` and `frsq`, and conversions of 32-bit values, stay.)
        let printed = text::print(&lowered);
        assert!(
            !printed.lines().any(|l| l.contains(&format!("= {op} %1"))),
            "{op}: {printed}"
        );

        // Every value against every other value for the binary operations would be large:
        // each value is paired with a neighbour's, and with ldexp's exponents of every range.
        let count = values.len();
        let mut launch = Launch::invocations(count);
        // 32-bit integer operands take the low half of each value's bits, and the special
        // integers.
        let first = |i: usize, x: f64| match first_type {
            "u32" => match i {
                0..4 => [0, 1, 0x8000_0000, u32::MAX][i] as u64,
                _ => x.to_bits() & 0xffff_ffff,
            },
            _ => x.to_bits(),
        };
        launch.inputs.insert(
            "a".into(),
            (values.iter().enumerate())
                .map(|(i, &x)| vec![first(i, x)])
                .collect(),
        );
        let b: Vec<Vec<u64>> = (0..count)
            .map(|i| match op {
                "fldexp" => vec![((i as i64 * 37 % 4300) - 2150) as u32 as u64],
                _ => vec![values[(i * 7 + 3) % count].to_bits()],
            })
            .collect();
        launch.inputs.insert("b".into(), b);
        let results = |shader: &Shader| {
            run(shader, &launch, &mut Resources::default()).unwrap_or_else(|e| panic!("{e}"))
        };
        let (exact, approximate) = (results(&shader), results(&lowered));
        for (i, (want, have)) in exact
            .invocations()
            .zip(approximate.invocations())
            .enumerate()
        {
            let (want, have) = (want.output("o").unwrap()[0], have.output("o").unwrap()[0]);
            let error = if result_bits == "32" {
                u64::from(want != have) * u64::MAX
            } else {
                let (want, have) = (f64::from_bits(want), f64::from_bits(have));
                // Denormal results may be flushed; otherwise within the bound.
                if want.abs() < f64::MIN_POSITIVE && have.abs() < f64::MIN_POSITIVE && bound > 0 {
                    0
                } else {
                    ulps(want, have)
                }
            };
            assert!(
                error <= bound,
                "{op}({:e}, input {i}): {} instead of {}",
                values[i],
                f64::from_bits(have),
                f64::from_bits(want)
            );
        }
    }
}

/// `lower-int64` builds each 64-bit integer operation from 32-bit ones, bit-identical to the
/// interpreter over values of every size and sign, zero divisors, `INT64_MIN / -1`, shift
/// counts past 64, and floats out of range and NaN for the conversions; what is left of the
/// 64-bit values is halves, selects and moves. Where the target has the operations, the pass
/// changes nothing.
#[test]
fn lowered_int64_operations_match_the_exact_ones() {
    /// An operand: its type in the shader and what it is loaded from.
    #[derive(Copy, Clone, PartialEq)]
    enum Kind {
        U64,
        U32,
        F32,
        F64,
        /// A 32-bit input compared with zero.
        Bool,
    }
    use Kind::*;
    let mut values: Vec<u64> = vec![
        0,
        1,
        2,
        3,
        7,
        31,
        32,
        33,
        63,
        64,
        u64::MAX,
        u64::MAX - 1,
        i64::MIN as u64,
        i64::MAX as u64,
        1 << 32,
        (1 << 32) - 1,
        0xffff_ffff_0000_0000,
        (-7i64) as u64,
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..300 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // Every magnitude: the random bits shifted down by 0 to 63.
        values.push(state >> (i % 64));
        values.push((state >> (i % 64)).wrapping_neg());
    }
    // Floats of every magnitude around the 64- and 32-bit limits, halves, NaN, infinities.
    let mut floats: Vec<f64> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.0,
        -1.5,
        4294967295.0,
        4294967296.0,
        4294967297.0,
        -4294967297.0,
        9.223372036854775e18,
        -9.223372036854776e18,
        -9.3e18,
        1.8446744073709552e19,
        1.9e19,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    floats.extend(values.iter().map(|&v| (v as i64 as f64) * 0.75));
    let float_inputs = |bits: u32| -> Vec<u64> {
        floats
            .iter()
            .map(|&x| match bits {
                32 => (x as f32).to_bits() as u64,
                _ => x.to_bits(),
            })
            .collect()
    };
    let options = TargetOptions {
        lower_int64: shrew_engine::passes::lower_int64::lowerable(),
        ..TargetOptions::default()
    };
    let lowering = shrew_rules::registry(&options, &[]);
    let binary = [
        "imul",
        "udiv",
        "umod",
        "idiv",
        "irem",
        "imod",
        "iadd",
        "isub",
        "imin",
        "imax",
        "umin",
        "umax",
        "iadd_sat",
        "uadd_sat",
        "isub_sat",
        "usub_sat",
        "uadd_carry",
        "usub_borrow",
        "imul_high",
        "umul_high",
        "iand",
        "ior",
        "ixor",
    ];
    let compares = ["ilt", "ige", "ult", "uge", "ieq", "ine"];
    let shifts = ["ishl", "ishr", "ushr", "urol", "uror"];
    let unary = ["ineg", "iabs", "isign", "inot", "bitfield_reverse"];
    let to_32 = [
        "bit_count",
        "ufind_msb",
        "ifind_msb",
        "find_lsb",
        "i2i32",
        "u2u32",
        "i2f32",
        "u2f32",
    ];
    // (op, first operand, second operand, result bits; 1 for a boolean)
    let mut cases: Vec<(&str, Kind, Option<Kind>, u32)> = Vec::new();
    cases.extend(binary.iter().map(|&op| (op, U64, Some(U64), 64)));
    cases.extend(compares.iter().map(|&op| (op, U64, Some(U64), 1)));
    cases.extend(shifts.iter().map(|&op| (op, U64, Some(U32), 64)));
    cases.extend(unary.iter().map(|&op| (op, U64, None, 64)));
    cases.extend(to_32.iter().map(|&op| (op, U64, None, 32)));
    cases.extend([
        ("i2f64", U64, None, 64),
        ("u2f64", U64, None, 64),
        ("i2b1", U64, None, 1),
        ("i2i64", U32, None, 64),
        ("u2u64", U32, None, 64),
        ("umul_2x32_64", U32, Some(U32), 64),
        ("imul_2x32_64", U32, Some(U32), 64),
        ("b2i64", Bool, None, 64),
        ("f2i64", F32, None, 64),
        ("f2u64", F32, None, 64),
        ("f2i64", F64, None, 64),
        ("f2u64", F64, None, 64),
    ]);
    let shape = |k: Kind| match k {
        U64 => ("u64", 64),
        U32 | Bool => ("u32", 32),
        F32 => ("f32", 32),
        F64 => ("f64", 64),
    };
    for (op, first, second, result_bits) in cases {
        let (a_type, a_bits) = shape(first);
        let (b_type, b_bits) = second.map_or(("u32", 32), shape);
        // A boolean operand is the first input compared with zero, a boolean result is
        // stored as 0 or 1.
        let (a, a_setup) = if first == Bool {
            (
                "%7",
                "    32 %6 = load_const (0)\n    1 %7 = ine %1, %6\n".to_string(),
            )
        } else {
            ("%1", String::new())
        };
        let second_operand = if second.is_some() { ", %3" } else { "" };
        let (stored, out_type, result_line) = if result_bits == 1 {
            (
                "%8",
                "u32",
                format!("    1 %4 = {op} {a}{second_operand}\n    32 %8 = b2i32 %4\n"),
            )
        } else {
            let out = if result_bits == 64 { "u64" } else { "u32" };
            (
                "%4",
                out,
                format!("    {result_bits} %4 = {op} {a}{second_operand}\n"),
            )
        };
        let source = format!(
            "shader fragment
var shader_in {a_type} @a (location=0)
var shader_in {b_type} @b (location=1)
var shader_out {out_type} @o (location=0)

entry fn main() {{
b0:
    32 %0 = deref_var @a
    {a_bits} %1 = load_deref %0
    32 %2 = deref_var @b
    {b_bits} %3 = load_deref %2
{a_setup}{result_line}    32 %5 = deref_var @o
    store_deref %5, {stored} (write_mask=x)
    return
}}
"
        );
        let shader = text::parse(&source, "int64.shrew").unwrap_or_else(|e| panic!("{e}"));
        let mut unchanged = shader.clone();
        optimize(&mut unchanged, "lower-int64", &registry());
        assert_eq!(text::print(&unchanged), text::print(&shader));
        let mut lowered = shader.clone();
        let pipeline = Pipeline::parse("lower-int64", &lowering).unwrap();
        let run_options = RunOptions {
            verify_each: true,
            ..RunOptions::default()
        };
        manager::run(&pipeline, &lowering, &mut lowered, &run_options)
            .unwrap_or_else(|e| panic!("{op}: {e}"));
        // No 64-bit integer operation is left but moves, selects and the halves' packing.
        let printed = text::print(&lowered);
        let kept = ["mov", "vec2", "bcsel", "pack_64_2x32", "unpack_64_2x32"];
        for line in printed.lines().map(str::trim) {
            let Some((def, rest)) = line.split_once(" = ") else {
                continue;
            };
            let name = rest.split_whitespace().next().unwrap_or("");
            let floats = ["f", "i2f", "u2f"];
            let wide = def.starts_with("64 ") && !kept.contains(&name);
            let float = floats.iter().any(|f| name.starts_with(f)) && !name.starts_with("f2i");
            assert!(
                !wide || float || name == "load_deref" || name == "load_const",
                "{op}: `{line}` is left in\n{printed}"
            );
        }

        let first_values = match first {
            F32 => float_inputs(32),
            F64 => float_inputs(64),
            _ => values.clone(),
        };
        let count = first_values.len();
        let mut launch = Launch::invocations(count);
        let narrow = |v: u64, bits: u32| if bits == 32 { v & 0xffff_ffff } else { v };
        launch.inputs.insert(
            "a".into(),
            first_values
                .iter()
                .map(|&x| vec![narrow(x, a_bits)])
                .collect(),
        );
        // Each value divided by a neighbour's, by zero, by -1 and by small divisors; shifted
        // by counts of every size.
        let b: Vec<Vec<u64>> = (0..count)
            .map(|i| {
                let v = match i % 5 {
                    0 => 0,
                    1 => u64::MAX,
                    2 => (i as u64 % 13) + 1,
                    _ => values[(i * 7 + 3) % values.len()],
                };
                let v = if second == Some(U32) && b_bits == 32 && shifts.contains(&op) {
                    (i as u64 * 37) % 200
                } else {
                    v
                };
                vec![narrow(v, b_bits)]
            })
            .collect();
        launch.inputs.insert("b".into(), b);
        let results = |shader: &Shader| {
            run(shader, &launch, &mut Resources::default()).unwrap_or_else(|e| panic!("{e}"))
        };
        let (exact, lowered_results) = (results(&shader), results(&lowered));
        for (i, (want, have)) in exact
            .invocations()
            .zip(lowered_results.invocations())
            .enumerate()
        {
            let (want, have) = (want.output("o").unwrap()[0], have.output("o").unwrap()[0]);
            assert_eq!(
                have, want,
                "{op}({:#x}, input {i}): {have:#x} instead of {want:#x}",
                first_values[i]
            );
        }
    }
}
