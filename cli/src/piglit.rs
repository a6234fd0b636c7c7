//! `shrew piglit`: runs piglit's executable `.shader_test` files on the reference interpreter,
//! or with `--target gen*`, their fragment shaders through the Gen backend on its emulator.

use crate::compile::{chip_of, gen_of};
use crate::gen_fragments::GenFragments;
use crate::pipeline::Pipeline;
use crate::r600_fragments::R600Fragments;
use crate::{CliError, emit};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use shrew_frontend::glsl::Glslang;
use shrew_frontend::piglit::run::{FragmentBackend, Outcome, Status, run_file};
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
    /// Dispatch width of the fragment kernels when a Gen target runs them: 8, 16 or 32.
    #[arg(long, default_value_t = 8)]
    simd: u8,
}

/// What the batch commands (`piglit`, `corpus`) share.
#[derive(Args)]
pub struct BatchArgs {
    /// Passes to run on every translated stage (`none`: no optimization).
    #[arg(short, long, default_value = "none")]
    pub pipeline: String,
    /// The target to optimize for: its rule options and the costs `eqsat` extracts with. With
    /// `piglit`, a Gen target also runs the fragment shaders: compiled, on its emulator.
    #[arg(long, value_enum, default_value_t)]
    pub target: crate::pipeline::Target,
    /// Print one JSON object per item and a summary object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Files processed at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Process only the files numbered A to B (1-based, in the sorted input order that the
    /// output's `index` gives; `A..`, `..B` and `A` work too), to bisect a batch.
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub only_shaders: Option<(usize, usize)>,
    /// Skip the files numbered A to B (same numbering as `--only-shaders`).
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub skip_shaders: Option<(usize, usize)>,
}

impl BatchArgs {
    /// The files the ranges select, each with its 1-based number in the input.
    pub fn select(&self, files: Vec<PathBuf>) -> Vec<(usize, PathBuf)> {
        let inside = |range: Option<(usize, usize)>, n: usize| {
            range.is_some_and(|(first, last)| (first..=last).contains(&n))
        };
        files
            .into_iter()
            .enumerate()
            .map(|(i, path)| (i + 1, path))
            .filter(|&(n, _)| {
                (self.only_shaders.is_none() || inside(self.only_shaders, n))
                    && !inside(self.skip_shaders, n)
            })
            .collect()
    }
}

/// `A..B`, `A..`, `..B` or `A`: an inclusive range of 1-based numbers.
fn parse_range(text: &str) -> Result<(usize, usize), String> {
    let number = |s: &str, default: usize| -> Result<usize, String> {
        if s.is_empty() {
            return Ok(default);
        }
        match s.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("`{s}` is not a number from 1 on")),
        }
    };
    let (first, last) = match text.split_once("..") {
        Some((a, b)) => (number(a, 1)?, number(b, usize::MAX)?),
        None => {
            let n = number(text, 0)?;
            (n, n)
        }
    };
    if first > last {
        return Err(format!("the range {first}..{last} is empty"));
    }
    Ok((first, last))
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
    let pipeline = Pipeline::parse(&args.batch.pipeline, args.batch.target)?;
    let glslang = Glslang::find()?;
    let files = args.batch.select(find_files(&args.paths, |p| {
        p.extension().is_some_and(|e| e == "shader_test")
    }));
    let bar = progress(files.len());
    let optimize = |shader: &mut shrew_engine::ir::Shader| pipeline.run(shader).map(|_| ());
    let backend: Option<Box<dyn FragmentBackend>> =
        match (gen_of(args.batch.target), chip_of(args.batch.target)) {
            (Some(hw), _) => Some(Box::new(GenFragments::new(
                hw,
                args.simd,
                args.batch.target,
            )?)),
            (_, Some(chip)) => Some(Box::new(R600Fragments::new(chip, args.batch.target)?)),
            _ => None,
        };
    let backend = backend.as_deref();
    let results: Vec<(usize, PathBuf, Outcome, f64)> =
        thread_pool(args.batch.jobs)?.install(|| {
            files
                .par_iter()
                .map(|(index, path)| {
                    let start = Instant::now();
                    let outcome = run_file(path, &glslang, &optimize, backend);
                    bar.inc(1);
                    (*index, path.clone(), outcome, start.elapsed().as_secs_f64())
                })
                .collect()
        });
    bar.finish_and_clear();
    let count = |s: Status| results.iter().filter(|(_, _, o, _)| o.status == s).count();
    let (passed, failed, skipped) = (
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Skip),
    );
    let compiled = results.iter().filter(|(_, _, o, _)| o.compiled).count();
    let mut out = String::new();
    for (index, path, outcome, time) in &results {
        if args.batch.json {
            let line = serde_json::json!({
                "index": index,
                "path": path.display().to_string(),
                "status": outcome.status,
                "reason": outcome.reason,
                "time": time,
            });
            out.push_str(&format!("{line}\n"));
        } else if outcome.status == Status::Fail {
            out.push_str(&format!(
                "FAIL #{index} {}: {}\n",
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

#[cfg(test)]
mod tests {
    use super::{BatchArgs, parse_range};
    use std::path::PathBuf;

    #[test]
    fn ranges_select_files_by_number() {
        assert_eq!(parse_range("2..4"), Ok((2, 4)));
        assert_eq!(parse_range("3"), Ok((3, 3)));
        assert_eq!(parse_range("..2"), Ok((1, 2)));
        assert_eq!(parse_range("5.."), Ok((5, usize::MAX)));
        assert!(parse_range("0..2").is_err());
        assert!(parse_range("4..2").is_err());
        assert!(parse_range("x").is_err());
        let batch = BatchArgs {
            pipeline: "none".into(),
            target: crate::pipeline::Target::Generic,
            json: false,
            jobs: None,
            only_shaders: Some((2, 5)),
            skip_shaders: Some((3, 3)),
        };
        let files: Vec<PathBuf> = (1..=6).map(|i| PathBuf::from(format!("{i}"))).collect();
        let chosen: Vec<usize> = batch.select(files).into_iter().map(|(n, _)| n).collect();
        assert_eq!(chosen, [2, 4, 5]);
    }
}
