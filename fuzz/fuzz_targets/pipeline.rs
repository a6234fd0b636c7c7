//! The whole compiler on SPIR-V bytes: the reader, then for every target with a backend the
//! default mid-end pipeline and every kernel the backend compiles (each SIMD width on Gen),
//! with its listing and its binary decoded again. Every step may return an error; a panic, an
//! abort, a stack overflow or a hang is a bug. Inputs above `MAX_BYTES` are skipped to keep
//! each run short; mutations edit the module's instructions (`shrew_fuzz::mutate_spirv`).

#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use shrew_engine::ir::Shader;
use shrew_frontend::spirv::{Options, translate_bytes};
use shrew_targets::{Compiler, Pipeline, Target};

/// The largest module compiled: a few hundred instructions, as most piglit shaders are.
const MAX_BYTES: usize = 16 * 1024;

thread_local! {
    /// Every target with a backend and its compiler, prepared once (libFuzzer runs the inputs
    /// on one thread).
    static COMPILERS: Vec<(&'static Target, Box<dyn Compiler>)> = shrew_targets::all()
        .iter()
        .filter(|target| target.has_backend())
        .map(|target| (target, target.compiler().expect("the target's compiler")))
        .collect();
}

fuzz_target!(|bytes: &[u8]| {
    if bytes.len() > MAX_BYTES {
        return;
    }
    let Ok(shader) = translate_bytes(bytes, &Options::default()) else {
        return;
    };
    COMPILERS.with(|compilers| compile_everywhere(&shader, compilers));
});

/// The default pipeline and every kernel of `shader` on each target.
fn compile_everywhere(shader: &Shader, compilers: &[(&'static Target, Box<dyn Compiler>)]) {
    for (target, compiler) in compilers {
        let pipeline = Pipeline::parse("default", target).expect("the default pipeline parses");
        let mut optimized = shader.clone();
        if pipeline.run(&mut optimized).is_err() {
            continue;
        }
        let backend = target.backend().expect("a target with a backend");
        for kernel in compiler.variants(&optimized).into_iter().flatten() {
            let _ = kernel.listing();
            let _ = kernel.statistics();
            if let Ok(binary) = kernel.binary() {
                let _ = backend.decode(&binary);
            }
        }
    }
}

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    shrew_fuzz::mutate_spirv(data, size, max_size, seed)
});
