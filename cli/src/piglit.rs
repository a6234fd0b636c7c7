//! `shrew piglit`: runs piglit's executable `.shader_test` files on the reference interpreter.

use crate::pipeline::Pipeline;
use crate::{CliError, emit};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use shrew_frontend::glsl::Glslang;
use shrew_frontend::piglit::run::{Outcome, Status, run_file};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct PiglitArgs {
    /// `.shader_test` files, or directories searched for them.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    batch: BatchArgs,
}

/// What the batch commands (`piglit`, `corpus`) share.
#[derive(Args)]
pub struct BatchArgs {
    /// Passes to run on every translated stage (`none`: no optimization).
    #[arg(short, long, default_value = "none")]
    pub pipeline: String,
    /// Print one JSON object per item and a summary object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Files processed at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// Every file under the paths that `matches` accepts (and the paths named directly), sorted.
pub fn find_files(paths: &[PathBuf], matches: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&p) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        } else if matches(&p) || paths.contains(&p) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A progress bar on a terminal, nothing otherwise.
pub fn progress(len: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {wide_msg}") {
        bar.set_style(style);
    }
    bar
}

pub fn thread_pool(jobs: Option<usize>) -> Result<rayon::ThreadPool, CliError> {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = jobs {
        builder = builder.num_threads(n.max(1));
    }
    builder.build().map_err(CliError::from)
}

pub fn piglit(args: &PiglitArgs) -> Result<(), CliError> {
    let pipeline = Pipeline::parse(&args.batch.pipeline)?;
    let glslang = Glslang::find()?;
    let files = find_files(&args.paths, |p| {
        p.extension().is_some_and(|e| e == "shader_test")
    });
    let bar = progress(files.len());
    let optimize = |shader: &mut shrew_engine::ir::Shader| pipeline.run(shader).map(|_| ());
    let results: Vec<(PathBuf, Outcome, f64)> = thread_pool(args.batch.jobs)?.install(|| {
        files
            .par_iter()
            .map(|path| {
                let start = Instant::now();
                let outcome = run_file(path, &glslang, &optimize);
                bar.inc(1);
                (path.clone(), outcome, start.elapsed().as_secs_f64())
            })
            .collect()
    });
    bar.finish_and_clear();
    let count = |s: Status| results.iter().filter(|(_, o, _)| o.status == s).count();
    let (passed, failed, skipped) = (
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Skip),
    );
    let compiled = results.iter().filter(|(_, o, _)| o.compiled).count();
    let mut out = String::new();
    for (path, outcome, time) in &results {
        if args.batch.json {
            let line = serde_json::json!({
                "path": path.display().to_string(),
                "status": outcome.status,
                "reason": outcome.reason,
                "time": time,
            });
            out.push_str(&format!("{line}\n"));
        } else if outcome.status == Status::Fail {
            out.push_str(&format!(
                "FAIL {}: {}\n",
                path.display(),
                outcome.reason.as_deref().unwrap_or("")
            ));
        }
    }
    if args.batch.json {
        let summary = serde_json::json!({
            "summary": { "passed": passed, "failed": failed, "skipped": skipped, "compiled": compiled }
        });
        out.push_str(&format!("{summary}\n"));
    } else {
        out.push_str(&format!(
            "{passed} passed, {failed} failed, {skipped} skipped\n"
        ));
    }
    emit(&out)?;
    if failed > 0 {
        return Err(CliError(String::new()));
    }
    Ok(())
}
