//! The fuzz targets' checks (`shrew_harness::fuzz_targets`) on every build, without libFuzzer:
//! each target's committed seeds, the inputs of the bugs it found (`fuzz/regressions/TARGET/`),
//! and for the SPIR-V targets fixed mutants of each seed (the mutator `spirv_agreement` uses).
//! `scripts/fuzz.sh` runs the same checks under libFuzzer for long campaigns.

use shrew_frontend::spirv::mutate::mutate;
use shrew_frontend::spirv::{Options, translate_bytes};
use shrew_harness::fuzz_targets::{
    Compilers, PIPELINE_MAX_BYTES, ir_text, piglit_parser, pipeline, spirv_reader,
};
use shrew_tests::files_under;
use std::path::{Path, PathBuf};

/// Mutants of each SPIR-V seed, made from seeds 0, 1, ...: the same inputs on every run.
const MUTANTS_PER_SEED: u64 = 24;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files directly in `dir` (none if it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    found.sort();
    found
}

/// The target's seeds and regression inputs.
fn inputs(target: &str, seeds: Vec<PathBuf>) -> Vec<(String, Vec<u8>)> {
    let regressions = files(&root().join("fuzz/regressions").join(target));
    (seeds.into_iter().chain(regressions))
        .map(|path| {
            let bytes = std::fs::read(&path).expect("a readable input");
            (path.display().to_string(), bytes)
        })
        .collect()
}

/// The SPIR-V seeds and regressions, each followed by its mutants.
fn spirv_inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for (name, bytes) in inputs(target, files(&root().join("fuzz/seeds/spirv"))) {
        let words: Vec<u32> = (bytes.chunks_exact(4))
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        for seed in 0..MUTANTS_PER_SEED {
            if let Ok(mutant) = mutate(&words, seed) {
                let bytes = mutant.words.iter().flat_map(|w| w.to_le_bytes()).collect();
                all.push((
                    format!("{name}, mutant {seed}: {}", mutant.description),
                    bytes,
                ));
            }
        }
        all.push((name, bytes));
    }
    all
}

/// Runs `check` on every input, naming the first that panics.
fn replay(inputs: Vec<(String, Vec<u8>)>, check: impl Fn(&[u8])) {
    assert!(!inputs.is_empty(), "no inputs");
    for (name, bytes) in &inputs {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(bytes)));
        assert!(outcome.is_ok(), "{name} panics");
    }
}

#[test]
fn the_spirv_reader_takes_its_seeds_and_their_mutants() {
    let inputs = spirv_inputs("spirv_reader");
    assert!(inputs.len() > 6 * MUTANTS_PER_SEED as usize / 2);
    replay(inputs, spirv_reader);
}

#[test]
fn the_ir_text_parser_takes_every_ir_file() {
    let seeds = ["tests", "examples"]
        .iter()
        .flat_map(|dir| files_under(&root().join(dir), "shrew"))
        .collect();
    replay(inputs("ir_text", seeds), ir_text);
}

#[test]
fn the_piglit_parser_takes_its_seeds() {
    replay(
        inputs("piglit_parser", files(&root().join("fuzz/seeds/piglit"))),
        piglit_parser,
    );
}

#[test]
fn the_pipeline_takes_its_seeds_and_their_mutants_on_every_target() {
    let compilers = Compilers::new();
    let inputs: Vec<_> = (spirv_inputs("pipeline").into_iter())
        .filter(|(_, bytes)| bytes.len() <= PIPELINE_MAX_BYTES)
        .collect();
    // The seeds themselves and some mutants get through the reader to the backends.
    let translated = (inputs.iter())
        .filter(|(_, bytes)| translate_bytes(bytes, &Options::default()).is_ok())
        .count();
    assert!(translated > 7, "only {translated} inputs translate");
    replay(inputs, |bytes| pipeline(bytes, &compilers));
}
