//! Support for shrew's integration tests and benchmarks: a generator of large random programs
//! that exercise the algebraic rules, and running them on the interpreter.

use shrew_engine::interp::{self, Launch, Resources};
use shrew_engine::ir::{Builder, FuncId, Mode, Scalar, Shader, Stage, Type, Value, Variable};
use shrew_engine::ops::AluOp;
use shrew_engine::ops::eval::fget;
use shrew_engine::rng::Rng;
use shrew_frontend::glsl::Glslang;
use shrew_frontend::spirv::{Options, translate};

/// A fragment shader with about `n` ALU instructions over one vec4 input `v`, writing `o`: float and integer
/// arithmetic, compares, selects and conversions, with the constants rules look for.
pub fn program(seed: u64, n: usize) -> Shader {
    let mut shader = Shader::new(Stage::Fragment);
    let input = shader.add_variable(Variable::new(
        "v",
        Mode::ShaderIn,
        Type::Vector(Scalar::F32, 4),
    ));
    let output = shader.add_variable(Variable::new(
        "o",
        Mode::ShaderOut,
        Type::Scalar(Scalar::F32),
    ));
    let mut b = Builder::new(&mut shader, FuncId(0));
    let deref = b.deref_var(input);
    let v = b.load_deref(deref);
    let mut floats: Vec<Value> = (0..4).map(|c| b.channel(v, c)).collect();
    let mut ints: Vec<Value> = floats.iter().map(|&f| b.alu(AluOp::F2i32, &[f])).collect();
    let mut bools: Vec<Value> = Vec::new();
    let mut rng = Rng::new(seed);
    let float_consts = [0.0, 1.0, -1.0, 2.0, 0.5, 4.0];
    let int_consts = [0, 1, -1, 2, 8, 0xff, 31];
    let float_ops = [
        AluOp::Fadd,
        AluOp::Fmul,
        AluOp::Fsub,
        AluOp::Fmin,
        AluOp::Fmax,
        AluOp::Fdiv,
    ];
    let float_unary = [
        AluOp::Fneg,
        AluOp::Fabs,
        AluOp::Fsat,
        AluOp::Ffloor,
        AluOp::Frcp,
        AluOp::Fsqrt,
    ];
    let int_ops = [
        AluOp::Iadd,
        AluOp::Imul,
        AluOp::Isub,
        AluOp::Iand,
        AluOp::Ior,
        AluOp::Ixor,
        AluOp::Ishl,
        AluOp::Ushr,
        AluOp::Imin,
        AluOp::Umax,
    ];
    for _ in 0..n {
        let value = match rng.below(10) {
            0..=3 => {
                let x = rng.pick(&floats);
                let y = if rng.below(3) == 0 {
                    b.imm_f32(rng.pick(&float_consts))
                } else {
                    rng.pick(&floats)
                };
                let op = rng.pick(&float_ops);
                floats.push(b.alu(op, &[x, y]));
                continue;
            }
            4 => {
                let x = rng.pick(&floats);
                b.alu(rng.pick(&float_unary), &[x])
            }
            5..=7 => {
                let x = rng.pick(&ints);
                let y = if rng.below(2) == 0 {
                    b.imm_int(rng.pick(&int_consts), 32)
                } else {
                    rng.pick(&ints)
                };
                let op = rng.pick(&int_ops);
                ints.push(b.alu(op, &[x, y]));
                continue;
            }
            8 => {
                let (x, y) = (rng.pick(&floats), rng.pick(&floats));
                bools.push(b.alu(rng.pick(&[AluOp::Flt, AluOp::Fge, AluOp::Feq]), &[x, y]));
                continue;
            }
            _ => match bools.last() {
                Some(&c) => {
                    let (x, y) = (rng.pick(&floats), rng.pick(&floats));
                    b.alu(AluOp::Bcsel, &[c, x, y])
                }
                None => {
                    let x = rng.pick(&ints);
                    b.alu(AluOp::I2f32, &[x])
                }
            },
        };
        floats.push(value);
    }
    // Keep everything live: sum it into the output.
    let mut sum = floats[0];
    for &f in &floats[1..] {
        sum = b.alu(AluOp::Fadd, &[sum, f]);
    }
    for &i in &ints {
        let f = b.alu(AluOp::I2f32, &[i]);
        sum = b.alu(AluOp::Fadd, &[sum, f]);
    }
    let out = b.deref_var(output);
    b.store_deref_all(out, sum);
    b.ret(None);
    shader
}

/// Inputs of `v` for a 2×2 quad, mixing signs, zero, fractions and large values.
pub fn quad_inputs() -> Vec<Vec<u64>> {
    let lanes: [[f32; 4]; 4] = [
        [0.5, -1.25, 3.0, 0.0],
        [1.0e6, -0.0, 2.0, 1.0],
        [-7.5, 0.125, -3.0, 42.0],
        [0.3, 0.7, -0.001, 9.0],
    ];
    lanes
        .iter()
        .map(|l| l.iter().map(|&x| x.to_bits() as u64).collect())
        .collect()
}

/// The outputs of a [`program`] (or any shader reading `v`) over one quad, per invocation.
pub fn outputs(shader: &Shader) -> Vec<Vec<u64>> {
    let launch = Launch::invocations(4).with_input("v", quad_inputs());
    let result = interp::run(shader, &launch, &mut Resources::default()).expect("runs");
    result
        .invocations()
        .map(|inv| {
            inv.outputs()
                .flat_map(|(_, values)| values)
                .copied()
                .collect()
        })
        .collect()
}

/// Whether two 32-bit floats agree up to what inexact rules may change: a relative 1e-3, and
/// anything once either is not finite.
pub fn same_float(a: u64, b: u64) -> bool {
    let (x, y) = (fget(a, 32), fget(b, 32));
    if !x.is_finite() || !y.is_finite() {
        return true;
    }
    (x - y).abs() <= 1e-3 * x.abs().max(y.abs()).max(1.0)
}

/// Whether two values are the same bits, or both 32-bit NaNs.
pub fn bit_identical(a: u64, b: u64) -> bool {
    a == b || (fget(a, 32).is_nan() && fget(b, 32).is_nan())
}

/// Asserts that every output component of every invocation agrees under `same`; `case` names
/// the program in the message.
#[track_caller]
pub fn assert_outputs_agree(
    before: &[Vec<u64>],
    after: &[Vec<u64>],
    same: impl Fn(u64, u64) -> bool,
    case: &str,
) {
    assert_eq!(before.len(), after.len(), "{case}: invocations");
    for (b, a) in before.iter().zip(after) {
        for (&x, &y) in b.iter().zip(a) {
            assert!(
                same(x, y),
                "{case}: {} ({x:#x}) became {} ({y:#x})",
                fget(x, 32),
                fget(y, 32)
            );
        }
    }
}

/// Runs any shader with zero inputs on 4 invocations (2 workgroups for compute shaders), with
/// zeroed 256-byte SSBOs and counting UBOs at bindings 0–3; `None` when it does not run so.
/// Returns the run and the resources after it.
pub fn run_with_small_resources(shader: &Shader) -> Option<(interp::RunResult, Resources)> {
    let launch = match shader.stage {
        Stage::Compute => Launch {
            workgroups: [2, 1, 1],
            ..Launch::default()
        },
        _ => Launch::invocations(4),
    };
    let mut resources = Resources::default();
    for binding in 0..4 {
        resources.ssbos.insert(binding, vec![0; 256]);
        resources.ubos.insert(binding, (0..=255).collect());
    }
    let result = interp::run(shader, &launch, &mut resources).ok()?;
    Some((result, resources))
}

/// A fragment shader compiled from GLSL by glslang and translated; `None` when glslang is missing
/// and the tests may skip ([`Glslang::for_tests`]).
pub fn fragment_from_glsl(source: &str) -> Option<Shader> {
    shader_from_glsl(source, Stage::Fragment)
}

/// A shader of `stage` compiled from GLSL, as [`fragment_from_glsl`] compiles fragment shaders.
pub fn shader_from_glsl(source: &str, stage: Stage) -> Option<Shader> {
    let glslang = Glslang::for_tests()?;
    let compiled = glslang
        .compile_cascade(source, stage)
        .unwrap_or_else(|e| panic!("glslang: {e}"));
    Some(translate(&compiled.words, &Options::default()).unwrap_or_else(|e| panic!("{e}")))
}

/// The files under `dir`, in every subdirectory, whose name ends in `.extension`, sorted.
pub fn files_under(dir: &std::path::Path, extension: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten() {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
