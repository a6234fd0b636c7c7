//! What each fuzz target checks on one input, shared by the libFuzzer targets (`fuzz/`, run
//! with the nightly toolchain by `scripts/fuzz.sh`) and the test that replays their seeds,
//! the inputs of the bugs they found, and fixed mutants of the seeds on every build
//! (`tests/tests/fuzz_targets.rs`). Each returns normally on any input, an error being an
//! answer; a panic, an abort, a stack overflow or a hang is a bug.

use shrew_engine::ir::Shader;
use shrew_engine::text::{parse, print};
use shrew_engine::verify::verify;
use shrew_frontend::shader_test::stage_sources;
use shrew_frontend::spirv::{Options, translate_bytes};
use shrew_targets::{Compiler, Pipeline, Target};

/// The largest module `pipeline` compiles: a few hundred instructions, as most piglit shaders
/// are, so that each run stays short.
pub const PIPELINE_MAX_BYTES: usize = 16 * 1024;

/// The SPIR-V reader: `translate_bytes` returns a located error or a shader; a shader passes
/// the IR verifier and prints as text that parses back to the same text.
pub fn spirv_reader(bytes: &[u8]) {
    let Ok(shader) = translate_bytes(bytes, &Options::default()) else {
        return;
    };
    if let Err(errors) = verify(&shader) {
        panic!(
            "the reader returned IR that fails the verifier: {}",
            errors[0]
        );
    }
    round_trips(&shader);
}

/// The IR text parser: text that parses to verified IR prints as text that verifies and
/// prints the same again.
pub fn ir_text(bytes: &[u8]) {
    let Ok(source) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(shader) = parse(source, "<fuzz>") else {
        return;
    };
    if verify(&shader).is_ok() {
        round_trips(&shader);
    }
}

/// The printed text of `shader` parses back to IR that verifies and prints the same.
fn round_trips(shader: &Shader) {
    let text = print(shader);
    let reparsed = parse(&text, "<printed>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    if let Err(errors) = verify(&reparsed) {
        panic!("the printed text fails the verifier: {}\n{text}", errors[0]);
    }
    assert_eq!(
        print(&reparsed),
        text,
        "the printed text does not round-trip"
    );
}

/// The piglit `.shader_test` parser and the stages' sources, with every line's location.
pub fn piglit_parser(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let test = match crate::parse_shader_test(&text) {
        Ok(test) => test,
        Err(error) => {
            let _ = (error.line(), error.to_string());
            return;
        }
    };
    let Ok(stages) = stage_sources(&test.sources) else {
        return;
    };
    for stage in &stages {
        for line in 1..=stage.source.lines().count() + 1 {
            let _ = stage.location("<fuzz>", line);
        }
    }
}

/// Every target with a backend and its compiler, prepared once for many inputs.
pub struct Compilers(Vec<(&'static Target, Box<dyn Compiler>)>);

impl Compilers {
    pub fn new() -> Compilers {
        Compilers(
            (shrew_targets::all().iter())
                .filter(|target| target.has_backend())
                .map(|target| (target, target.compiler().expect("the target's compiler")))
                .collect(),
        )
    }
}

impl Default for Compilers {
    fn default() -> Compilers {
        Compilers::new()
    }
}

/// The whole compiler on SPIR-V bytes (up to [`PIPELINE_MAX_BYTES`]): the reader, then on
/// every target the default mid-end pipeline and every kernel the backend compiles (each
/// SIMD width on Gen), with its listing, statistics and binary decoded again.
pub fn pipeline(bytes: &[u8], compilers: &Compilers) {
    if bytes.len() > PIPELINE_MAX_BYTES {
        return;
    }
    let Ok(shader) = translate_bytes(bytes, &Options::default()) else {
        return;
    };
    for (target, compiler) in &compilers.0 {
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
