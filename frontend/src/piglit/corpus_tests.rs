//! Checks against the real piglit corpus, run by hand:
//!
//! ```sh
//! SHREW_PIGLIT_DIR=.../usr/lib/x86_64-linux-gnu/piglit \
//!     cargo test -p shrew-frontend --release --lib piglit::corpus_tests -- --ignored --nocapture
//! ```
//!
//! `SHREW_PIGLIT_DIR` is the directory holding `tests/` and `generated_tests/` (the Debian
//! package unpacked, see the piglit corpus reference). The compile checks use the SPIR-V cache
//! (set `SHREW_CACHE_DIR` to choose it); `execution_tests_compile` bypasses it when
//! `SHREW_NO_CACHE` is set.

use super::*;
use crate::glsl::{Attempt, Glslang};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn piglit_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("SHREW_PIGLIT_DIR").expect(
            "set SHREW_PIGLIT_DIR to the piglit directory holding tests/ and generated_tests/",
        ),
    )
}

fn shader_tests_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "shader_test") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
#[ignore = "needs the piglit corpus (SHREW_PIGLIT_DIR)"]
fn every_shader_test_parses() {
    let root = piglit_dir();
    let mut files = shader_tests_under(&root.join("tests"));
    files.extend(shader_tests_under(&root.join("generated_tests")));
    let results: Vec<(PathBuf, Result<ShaderTest, String>)> = files
        .into_par_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            let parsed = parse_shader_test(&text).map_err(|e| e.to_string());
            (path, parsed)
        })
        .collect();
    let mut failures = 0;
    let mut other_commands: BTreeMap<String, usize> = BTreeMap::new();
    let mut source_errors = 0;
    for (path, result) in &results {
        match result {
            Ok(test) => {
                for command in &test.commands {
                    if let Command::Other(_) = command.command {
                        *other_commands.entry(command.command.name()).or_default() += 1;
                    }
                }
                if let Err(error) = stage_sources(test) {
                    source_errors += 1;
                    if source_errors <= 10 {
                        println!("{}: {error}", path.display());
                    }
                }
            }
            Err(error) => {
                failures += 1;
                println!("{}: {error}", path.display());
            }
        }
    }
    let mut other: Vec<_> = other_commands.into_iter().collect();
    other.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    println!(
        "most frequent other commands: {:?}",
        &other[..other.len().min(15)]
    );
    println!(
        "{} files, {failures} parse errors, {source_errors} without preparable sources",
        results.len()
    );
}

#[test]
#[ignore = "needs the piglit corpus (SHREW_PIGLIT_DIR) and glslangValidator"]
fn execution_tests_compile() {
    let root = piglit_dir();
    let dirs = [
        "generated_tests/spec/glsl-1.10/execution/built-in-functions",
        "generated_tests/spec/glsl-1.20/execution/built-in-functions",
        "tests/spec/glsl-1.10/execution",
        "tests/spec/glsl-1.20/execution",
        "tests/shaders/ssa",
    ];
    let glslang = Glslang::find().expect("glslangValidator");
    let glslang = match std::env::var_os("SHREW_NO_CACHE") {
        Some(_) => glslang.without_cache(),
        None => glslang,
    };
    for dir in dirs {
        let files = shader_tests_under(&root.join(dir));
        let outcomes: Vec<(PathBuf, Vec<Result<Attempt, String>>)> = files
            .par_iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let Ok(test) = parse_shader_test(&text) else {
                    return (path.clone(), vec![Err("parse error".to_owned())]);
                };
                let Ok(sources) = stage_sources(&test) else {
                    return (path.clone(), vec![Err("no sources".to_owned())]);
                };
                let results = sources
                    .iter()
                    .filter(|s| matches!(s.stage, Stage::Vertex | Stage::Fragment))
                    .map(|s| {
                        glslang
                            .compile_cascade(&s.source, s.stage)
                            .map(|compiled| compiled.attempt)
                            .map_err(|e| format!("{}: {e}", s.stage.name()))
                    })
                    .collect();
                (path.clone(), results)
            })
            .collect();
        let mut compiled_files = 0;
        let mut stages = 0;
        let mut compiled_stages = 0;
        let mut attempts: BTreeMap<&str, usize> = BTreeMap::new();
        for (path, results) in &outcomes {
            stages += results.len();
            let mut all = true;
            for result in results {
                match result {
                    Ok(attempt) => {
                        compiled_stages += 1;
                        *attempts.entry(attempt.name()).or_default() += 1;
                    }
                    Err(error) => {
                        all = false;
                        let first_lines: Vec<&str> = error.lines().take(3).collect();
                        println!("FAIL {}: {}", path.display(), first_lines.join(" | "));
                    }
                }
            }
            compiled_files += usize::from(all);
        }
        println!(
            "{dir}: {compiled_files}/{} files ({:.1}%), {compiled_stages}/{stages} VS+FS stages, attempts {attempts:?}",
            outcomes.len(),
            100.0 * compiled_files as f64 / outcomes.len().max(1) as f64,
        );
    }
}

/// Whether `test` is one of piglit's executable tests in the reference's sense: one vertex
/// shader (or the passthrough) and one fragment shader, no vertex data, and a `[test]` that
/// only sets uniforms, clears, draws rectangles and probes.
fn is_simple_executable(test: &ShaderTest) -> bool {
    let count = |stage| test.shaders_of(stage).count();
    let stages_ok =
        test.shaders.len() == 2 && count(Stage::Vertex) == 1 && count(Stage::Fragment) == 1;
    let commands_ok = test.commands.iter().all(|c| match &c.command {
        Command::DrawRect { patch, .. } => !patch,
        Command::Uniform { .. }
        | Command::Clear
        | Command::ClearColor(_)
        | Command::Ortho(_)
        | Command::Probe(_) => true,
        _ => false,
    });
    let draws = test
        .commands
        .iter()
        .any(|c| matches!(c.command, Command::DrawRect { .. }));
    let probes = test
        .commands
        .iter()
        .any(|c| matches!(c.command, Command::Probe(_)));
    stages_ok && commands_ok && draws && probes && test.vertex_data.is_none()
}

#[test]
#[ignore = "needs the piglit corpus (SHREW_PIGLIT_DIR) and glslangValidator"]
fn all_simple_executable_tests_compile() {
    let root = piglit_dir();
    let mut files = shader_tests_under(&root.join("tests"));
    files.extend(shader_tests_under(&root.join("generated_tests")));
    let glslang = Glslang::find().expect("glslangValidator");
    let outcomes: Vec<(PathBuf, Vec<Result<Attempt, String>>)> = files
        .par_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let test = parse_shader_test(&text).ok()?;
            if !is_simple_executable(&test) {
                return None;
            }
            let sources = stage_sources(&test).ok()?;
            let results = sources
                .iter()
                .map(|s| {
                    glslang
                        .compile_cascade(&s.source, s.stage)
                        .map(|compiled| compiled.attempt)
                        .map_err(|e| format!("{}: {e}", s.stage.name()))
                })
                .collect();
            Some((path.clone(), results))
        })
        .collect();
    let mut compiled = 0;
    let mut attempts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut first_errors: BTreeMap<String, usize> = BTreeMap::new();
    for (path, results) in &outcomes {
        let mut all = true;
        for result in results {
            match result {
                Ok(attempt) => *attempts.entry(attempt.name()).or_default() += 1,
                Err(error) => {
                    all = false;
                    let first = error.lines().nth(1).unwrap_or_default();
                    let shape: String = first.split(':').skip(3).collect::<Vec<_>>().join(":");
                    *first_errors.entry(shape).or_default() += 1;
                    println!(
                        "FAIL {}: {}",
                        path.display(),
                        error.lines().take(3).collect::<Vec<_>>().join(" | ")
                    );
                }
            }
        }
        compiled += usize::from(all);
    }
    let mut errors: Vec<_> = first_errors.into_iter().collect();
    errors.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    for (error, count) in errors.iter().take(25) {
        println!("{count:5} {error}");
    }
    println!(
        "simple executable tests: {compiled}/{} compile ({:.1}%), stage attempts {attempts:?}",
        outcomes.len(),
        100.0 * compiled as f64 / outcomes.len().max(1) as f64
    );
}

#[test]
#[ignore = "needs the piglit corpus (SHREW_PIGLIT_DIR) and glslangValidator; slow without a warm cache"]
fn all_unique_stages_compile() {
    let root = piglit_dir();
    let mut files = shader_tests_under(&root.join("tests"));
    files.extend(shader_tests_under(&root.join("generated_tests")));
    let mut unique: BTreeMap<(String, &'static str), String> = BTreeMap::new();
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Ok(test) = parse_shader_test(&text) else {
            continue;
        };
        for source in stage_sources(&test).unwrap_or_default() {
            let version = crate::glsl::declared_version(&source.source)
                .map(|d| d.version.to_string())
                .unwrap_or_default();
            unique
                .entry((source.source, source.stage.name()))
                .or_insert(version);
        }
    }
    let glslang = Glslang::find().expect("glslangValidator");
    let results: Vec<(&String, Result<Attempt, String>)> = unique
        .par_iter()
        .map(|((source, stage_name), version)| {
            let stage = Stage::from_name(stage_name).unwrap_or(Stage::Vertex);
            let result = glslang
                .compile_cascade(source, stage)
                .map(|compiled| compiled.attempt)
                .map_err(|error| format!("{version}: {error}"));
            (version, result)
        })
        .collect();
    let mut by_version: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut attempts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for (version, result) in &results {
        let entry = by_version.entry(version.as_str()).or_default();
        entry.0 += usize::from(result.is_ok());
        entry.1 += 1;
        match result {
            Ok(attempt) => *attempts.entry(attempt.name()).or_default() += 1,
            Err(error) => {
                // The version and glslang's first message, without its line number.
                let message = error.lines().nth(1).unwrap_or_default();
                let message: String = message.split(':').skip(3).collect::<Vec<_>>().join(":");
                let key = format!("{}:{message}", error.split(':').next().unwrap_or_default());
                *errors.entry(key).or_default() += 1;
            }
        }
    }
    let mut errors: Vec<_> = errors.into_iter().collect();
    errors.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    for (error, count) in errors.iter().take(40) {
        println!("{count:5} {error}");
    }
    for (version, (ok, total)) in &by_version {
        println!(
            "{version:>14}: {ok}/{total} ({:.1}%)",
            100.0 * *ok as f64 / *total as f64
        );
    }
    let ok: usize = by_version.values().map(|v| v.0).sum();
    println!(
        "unique stages: {ok}/{} compile ({:.1}%), attempts {attempts:?}",
        results.len(),
        100.0 * ok as f64 / results.len().max(1) as f64
    );
}
