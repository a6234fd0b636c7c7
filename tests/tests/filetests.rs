//! Filetests: every `tests/filetests/**/*.shrew` names a pipeline in a `// pipeline: ...` line
//! and carries FileCheck directives (`// check:`, `// nextln:`, `// not:`, `// sameln:`,
//! `// regex:`; the `filecheck` crate's syntax) that the printed result must satisfy. The
//! pipeline runs with the IR verified after every pass. The shader also runs on the reference
//! interpreter before and after ([`run_with_small_resources`]): when the original runs, the
//! optimized shader must give the same outputs and buffers.
//!
//! A `// target: NAME [simdN]` line (one or more) runs the pipeline (the default one when the
//! file names none) for that target, its rule options and rule sets, instead of the generic
//! target's; the FileCheck directives then hold for each target's result. In a file without
//! FileCheck directives, or with assembly blocks, a target with a backend also compiles the
//! result (at dispatch width N where the backend has a choice), and its statistics line and
//! assembly must equal the file's `// assembly: NAME [simdN]` block: the comment lines that
//! follow that header. `SHREW_BLESS=1 cargo test -p shrew-tests --test
//! filetests` rewrites those blocks in place when a change of the output is intended (review
//! the diff). A `// tolerance: X` line lets 32-bit outputs on the interpreter differ by X
//! relative to the larger magnitude, for pipelines that approximate.
//!
//! A `// run: TARGET... [simdN...] [-p PIPELINE]` line runs the shader, after the file's
//! pipeline (or PIPELINE), on each
//! named target's emulator at each named width and compares what it computes with the
//! interpreter running the original shader on the same random inputs
//! ([`shrew_harness::differential`]), within the file's tolerance (1e-4 without one); a compute
//! shader runs the workgroups of the file's `// workgroups: X Y Z` line (one without it).
use filecheck::{CheckerBuilder, NO_VARIABLES};
use shrew_engine::ir::Shader;
use shrew_engine::passes::manager::{self, Pipeline, RunOptions, RunReport};
use shrew_engine::text;
use shrew_harness::differential::{self, close, directive, file_runs};
use shrew_targets::Target;
use shrew_tests::run_with_small_resources;
use std::path::{Path, PathBuf};

/// A `// target:` line: the target, and the dispatch width asked for.
struct TargetSpec {
    target: &'static Target,
    width: Option<u8>,
    /// The line's text after `// target:`, which names its `// assembly:` block too.
    text: String,
}

fn target_specs(source: &str) -> Result<Vec<TargetSpec>, String> {
    let mut specs = Vec::new();
    for line in source.lines() {
        let Some(spec) = line.trim().strip_prefix("// target:") else {
            continue;
        };
        let mut words = spec.split_whitespace();
        let name = words.next().ok_or("`// target:` names no target")?;
        let target = shrew_targets::lookup(name).map_err(|e| e.to_string())?;
        let width = match words.next() {
            Some(word) => Some(
                word.strip_prefix("simd")
                    .and_then(|w| w.parse().ok())
                    .ok_or_else(|| format!("`{word}`: expected simdN"))?,
            ),
            None => None,
        };
        if let Some(extra) = words.next() {
            return Err(format!("`// target:` line: unexpected `{extra}`"));
        }
        let text = spec.split_whitespace().collect::<Vec<_>>().join(" ");
        specs.push(TargetSpec {
            target,
            width,
            text,
        });
    }
    Ok(specs)
}

const ASSEMBLY: &str = "// assembly:";

/// The file's `// assembly:` blocks: each header's spec and the text of the comment lines after
/// it (up to the next header or a line that is not a comment).
fn assembly_blocks(source: &str) -> Vec<(String, String)> {
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut open = false;
    for line in source.lines() {
        if let Some(spec) = line.strip_prefix(ASSEMBLY) {
            let spec = spec.split_whitespace().collect::<Vec<_>>().join(" ");
            blocks.push((spec, String::new()));
            open = true;
        } else if open && line.starts_with("//") {
            let text = line.strip_prefix("// ").unwrap_or(&line[2..]);
            let block = &mut blocks.last_mut().expect("a block is open").1;
            block.push_str(text);
            block.push('\n');
        } else {
            open = false;
        }
    }
    blocks
}

/// `source` without its assembly blocks, and with `blocks` appended at its end.
fn with_assembly(source: &str, blocks: &[(String, String)]) -> String {
    let mut kept = String::new();
    let mut open = false;
    for line in source.lines() {
        if line.starts_with(ASSEMBLY) {
            open = true;
        } else if !(open && line.starts_with("//")) {
            open = false;
            kept.push_str(line);
            kept.push('\n');
        }
    }
    let mut out = kept.trim_end().to_string();
    out.push('\n');
    for (spec, text) in blocks {
        out.push_str(&format!("{ASSEMBLY} {spec}\n"));
        for line in text.lines() {
            out.push_str(&if line.is_empty() {
                "//\n".to_string()
            } else {
                format!("// {line}\n")
            });
        }
    }
    out
}

/// The statistics line and listing `spec`'s target makes of `shader` (after the mid-end), the
/// IR verified and the backend's IR validated after every pass.
fn assembly(shader: &Shader, spec: &TargetSpec) -> Result<String, String> {
    let compiler = spec.target.compiler().map_err(|e| e.to_string())?;
    let checked = RunOptions {
        verify_each: true,
        ..RunOptions::default()
    };
    let mut report = RunReport::default();
    let kernel = compiler.compile_observed(shader, spec.width, &checked, &mut report)?;
    Ok(format!(
        "{}\n{}",
        kernel.statistics_line(),
        kernel.listing()?
    ))
}

fn filetests(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            filetests(&path, out);
        } else if path.extension().is_some_and(|e| e == "shrew") {
            out.push(path);
        }
    }
}

/// Runs one filetest; the error says what went wrong. With `bless`, rewrites the file's
/// assembly blocks instead of comparing them.
fn check(path: &Path, bless: bool) -> Result<(), String> {
    let source = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let specs = target_specs(&source)?;
    let runs_on_targets = source.lines().any(|l| l.trim().starts_with("// run:"));
    let pipeline_text = directive(&source, "// pipeline:")
        .or((!specs.is_empty() || runs_on_targets).then_some("default"))
        .ok_or("no `// pipeline:` line")?;
    let tolerance = match directive(&source, "// tolerance:") {
        Some(t) => Some(
            t.parse::<f32>()
                .map_err(|e| format!("`// tolerance: {t}`: {e}"))?,
        ),
        None => None,
    };
    let runs = file_runs(&source, pipeline_text, tolerance)?;
    let input = text::parse(&source, &path.display().to_string()).map_err(|e| e.to_string())?;
    shrew_engine::verify::verify(&input).map_err(|e| format!("the input is invalid: {e:?}"))?;
    let checker = CheckerBuilder::new()
        .text(&source)
        .map_err(|e| format!("bad directives: {e}"))?
        .finish();
    let generic = [None];
    let targets: Vec<Option<&TargetSpec>> = if specs.is_empty() {
        generic.to_vec()
    } else {
        specs.iter().map(Some).collect()
    };
    let expected = assembly_blocks(&source);
    // A pass's filetest checks its IR for the target's options; a file without FileCheck
    // directives, or with assembly blocks, checks the backend's output.
    let compiles = checker.is_empty() || !expected.is_empty();
    let compiled = compiles && specs.iter().any(|s| s.target.has_backend());
    if checker.is_empty() && !compiled && runs.is_empty() {
        return Err("no check directives".into());
    }
    let mut blessed = Vec::new();
    for spec in targets {
        let target = spec.map_or_else(shrew_targets::generic, |s| s.target);
        let mut shader = input.clone();
        optimize(&mut shader, pipeline_text, target, &checker, tolerance)
            .map_err(|e| format!("{}: {e}", target.name))?;
        let Some(spec) = spec.filter(|s| compiled && s.target.has_backend()) else {
            continue;
        };
        let got = assembly(&shader, spec).map_err(|e| format!("{}: {e}", spec.text))?;
        if bless {
            blessed.push((spec.text.clone(), got));
            continue;
        }
        let want = expected
            .iter()
            .find(|(s, _)| *s == spec.text)
            .map(|(_, text)| text)
            .ok_or_else(|| {
                format!(
                    "no `{ASSEMBLY} {}` block (SHREW_BLESS=1 writes it)",
                    spec.text
                )
            })?;
        if *want != got {
            return Err(format!(
                "{}: the assembly differs (SHREW_BLESS=1 rewrites it if the change is \
                 intended):\n{}",
                spec.text,
                line_diff(want, &got)
            ));
        }
    }
    for run in &runs {
        differential::run_on_target(&input, run)?;
    }
    if bless && compiled {
        let rewritten = with_assembly(&source, &blessed);
        if rewritten != source {
            std::fs::write(path, rewritten).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The first lines where `want` and `got` differ, with a line of context.
fn line_diff(want: &str, got: &str) -> String {
    let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let first = (0..want.len().max(got.len()))
        .find(|&i| want.get(i) != got.get(i))
        .unwrap_or(0);
    let mut out = String::new();
    for i in first.saturating_sub(1)..(first + 4).min(want.len().max(got.len())) {
        match (want.get(i), got.get(i)) {
            (Some(w), Some(g)) if w == g => out.push_str(&format!("   {w}\n")),
            (w, g) => {
                if let Some(w) = w {
                    out.push_str(&format!(" - {w}\n"));
                }
                if let Some(g) = g {
                    out.push_str(&format!(" + {g}\n"));
                }
            }
        }
    }
    out
}

/// Runs `pipeline_text` for `target` over `shader`, verified after every pass; checks the
/// result against the FileCheck directives and, when the shader ran before, on the interpreter:
/// the same outputs, or with a `tolerance` (for passes that approximate) 32-bit outputs
/// within it relative to the larger magnitude.
fn optimize(
    shader: &mut Shader,
    pipeline_text: &str,
    target: &Target,
    checker: &filecheck::Checker,
    tolerance: Option<f32>,
) -> Result<(), String> {
    let before = run_with_small_resources(shader);
    let registry = target.registry();
    let pipeline = Pipeline::parse(pipeline_text, &registry).map_err(|e| e.to_string())?;
    let options = RunOptions {
        verify_each: true,
        ..RunOptions::default()
    };
    manager::run(&pipeline, &registry, shader, &options).map_err(|e| e.to_string())?;
    let printed = text::print(shader);
    if !checker.is_empty()
        && !checker
            .check(&printed, NO_VARIABLES)
            .map_err(|e| e.to_string())?
    {
        let (_, explained) = checker
            .explain(&printed, NO_VARIABLES)
            .map_err(|e| e.to_string())?;
        return Err(format!(
            "the output does not match:\n{printed}\n{explained}"
        ));
    }
    if let Some((result, resources)) = before {
        let (after, after_resources) =
            run_with_small_resources(shader).ok_or("the optimized shader no longer runs")?;
        let agree = match tolerance {
            None => after.invocations().eq(result.invocations()),
            Some(tolerance) => {
                after.len() == result.len()
                    && after.invocations().zip(result.invocations()).all(|(a, b)| {
                        a.discarded == b.discarded
                            && a.helper == b.helper
                            && a.outputs().count() == b.outputs().count()
                            && a.outputs().zip(b.outputs()).all(|((n, x), (m, y))| {
                                n == m
                                    && x.len() == y.len()
                                    && x.iter()
                                        .zip(y)
                                        .all(|(&x, &y)| close(x as u32, y as u32, tolerance))
                            })
                    })
            }
        };
        if !agree || after_resources.ssbos != resources.ssbos {
            return Err(format!(
                "the optimized shader computes something else:\n{printed}"
            ));
        }
    }
    Ok(())
}

#[test]
fn filetests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests");
    let mut paths = Vec::new();
    filetests(&root, &mut paths);
    assert!(!paths.is_empty(), "no filetests under {}", root.display());
    let bless = std::env::var_os("SHREW_BLESS").is_some_and(|v| v == "1");
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            check(p, bless)
                .err()
                .map(|e| format!("{}: {e}", p.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
