//! Filetests: every `tests/filetests/**/*.shrew` names a pipeline in a `// pipeline: ...` line
//! and carries FileCheck directives (`// check:`, `// nextln:`, `// not:`, `// sameln:`,
//! `// regex:`; the `filecheck` crate's syntax) that the printed result must satisfy. The
//! pipeline runs with the IR verified after every pass. The shader also runs on the reference
//! interpreter before and after ([`run_with_small_resources`]): when the original runs, the
//! optimized shader must give the same outputs and buffers.

use filecheck::{CheckerBuilder, NO_VARIABLES};
use shrew_engine::passes::manager::{self, Pipeline, RunOptions};
use shrew_engine::rewrite::TargetOptions;
use shrew_engine::text;
use shrew_tests::run_with_small_resources;
use std::path::{Path, PathBuf};

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

/// Runs one filetest; the error says what went wrong.
fn check(path: &Path) -> Result<(), String> {
    let source = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let pipeline_text = source
        .lines()
        .find_map(|l| l.trim().strip_prefix("// pipeline:"))
        .ok_or("no `// pipeline:` line")?
        .trim();
    let mut shader =
        text::parse(&source, &path.display().to_string()).map_err(|e| e.to_string())?;
    shrew_engine::verify::verify(&shader).map_err(|e| format!("the input is invalid: {e:?}"))?;
    let before = run_with_small_resources(&shader);
    let registry = shrew_rules::registry(&TargetOptions::default(), &[]);
    let pipeline = Pipeline::parse(pipeline_text, &registry).map_err(|e| e.to_string())?;
    manager::run(&pipeline, &registry, &mut shader, &RunOptions::default())
        .map_err(|e| e.to_string())?;
    let printed = text::print(&shader);
    let checker = CheckerBuilder::new()
        .text(&source)
        .map_err(|e| format!("bad directives: {e}"))?
        .finish();
    if checker.is_empty() {
        return Err("no check directives".into());
    }
    if !checker
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
            run_with_small_resources(&shader).ok_or("the optimized shader no longer runs")?;
        if after.invocations != result.invocations || after_resources.ssbos != resources.ssbos {
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
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| check(p).err().map(|e| format!("{}: {e}", p.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
