//! `shrew piglit`: runs piglit's executable `.shader_test` files on the reference interpreter,
//! or with a Gen or R600 `--target`, their shaders through the backend on its emulator.

use crate::{CliError, emit, target_parser};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use shrew_engine::meter;
use shrew_frontend::glsl::Glslang;
use shrew_harness::batch::{BatchOptions, ItemEnd, Shard, run_batch};
use shrew_harness::corpus::find_files;
use shrew_harness::{Outcome, Status, run_file};
use shrew_targets::{Pipeline, Target};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct PiglitArgs {
    /// `.shader_test` files, or directories searched for them.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    batch: BatchArgs,
    /// Dispatch width of the fragment kernels when a Gen target runs them: 8 (the default),
    /// 16 or 32. R600 chips have no choice.
    #[arg(long)]
    simd: Option<u8>,
}

/// What the batch commands (`piglit`, `corpus`) share.
#[derive(Args)]
pub struct BatchArgs {
    /// Passes to run on every translated stage (`none`: no optimization).
    #[arg(short, long, default_value = "none")]
    pub pipeline: String,
    /// The target to optimize for: its rule options and the costs `eqsat` extracts with; a Gen
    /// or R600 target also selects its backend (see the command's description).
    #[arg(long, value_parser = target_parser(), default_value = "generic")]
    pub target: &'static Target,
    /// Print one JSON object per item and a summary object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Files processed at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Longest one file may take, in seconds: a file still running then is reported as failed
    /// (its work is stopped) and the batch goes on.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub time_limit: Option<Duration>,
    /// Process only the files numbered A to B (1-based, in the sorted input order that the
    /// output's `index` gives; `A..`, `..B` and `A` work too), to bisect a batch.
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub only_shaders: Option<(usize, usize)>,
    /// Skip the files numbered A to B (same numbering as `--only-shaders`).
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub skip_shaders: Option<(usize, usize)>,
    /// Process one file in N of each directory (its first, its N+1-th, ... in sorted order):
    /// a sample of every part of a corpus, the same files on every run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub sample: Option<u32>,
    /// Process only shard I of N (the files numbered I, I+N, I+2N, ...), to spread a batch
    /// over machines.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
}

/// A positive number of seconds.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

impl BatchArgs {
    /// How the batch runs its files.
    pub fn options(&self) -> BatchOptions {
        BatchOptions {
            jobs: self.jobs,
            time_limit: self.time_limit,
        }
    }

    /// The files the ranges select, each with its 1-based number in the input.
    pub fn select(&self, files: Vec<PathBuf>) -> Vec<(usize, PathBuf)> {
        let inside = |range: Option<(usize, usize)>, n: usize| {
            range.is_some_and(|(first, last)| (first..=last).contains(&n))
        };
        let mut seen_in_directory: HashMap<PathBuf, u32> = HashMap::new();
        files
            .into_iter()
            .enumerate()
            .map(|(i, path)| (i + 1, path))
            .filter(|(_, path)| {
                let Some(every) = self.sample else {
                    return true;
                };
                let seen = seen_in_directory
                    .entry(path.parent().map(Path::to_path_buf).unwrap_or_default())
                    .or_default();
                *seen += 1;
                (*seen - 1).is_multiple_of(every)
            })
            .filter(|&(n, _)| {
                (self.only_shaders.is_none() || inside(self.only_shaders, n))
                    && !inside(self.skip_shaders, n)
                    && self.shard.is_none_or(|shard| shard.contains(n))
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

/// Progress of a batch on stderr: a bar on a terminal; elsewhere (a log, CI) a plain line at
/// every tenth of the work, so that a long run is never silent.
pub struct Progress {
    bar: ProgressBar,
    what: &'static str,
    started: Instant,
    /// Off a terminal: the tenths of the work reported so far.
    tenths_reported: Option<AtomicU64>,
}

impl Progress {
    /// Progress over `len` items, called `what` in the plain lines.
    pub fn new(len: usize, what: &'static str) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = if terminal {
            let bar = ProgressBar::new(len as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {wide_msg}")
            {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::hidden())
        };
        Progress {
            bar,
            what,
            started: Instant::now(),
            tenths_reported: (!terminal).then(|| AtomicU64::new(0)),
        }
    }

    /// One more item done (from any thread).
    pub fn inc(&self) {
        self.bar.inc(1);
        let Some(reported) = &self.tenths_reported else {
            return;
        };
        let len = self.bar.length().unwrap_or(0).max(1);
        let done = self.bar.position();
        let tenths = done * 10 / len;
        if reported.fetch_max(tenths, Ordering::Relaxed) < tenths {
            eprintln!(
                "{}: {done}/{len} {} ({}%) in {:.0?}",
                env!("CARGO_BIN_NAME"),
                self.what,
                done * 100 / len,
                self.started.elapsed()
            );
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Prints a line of the batch's output on stdout, above the bar on a terminal.
    pub fn print_line(&self, line: &str) -> Result<(), CliError> {
        self.bar.suspend(|| emit(&format!("{line}\n")))
    }
}

pub fn piglit(args: &PiglitArgs) -> Result<(), CliError> {
    let pipeline = Pipeline::parse(&args.batch.pipeline, args.batch.target)?;
    let glslang = Glslang::find()?;
    let files = args.batch.select(find_files(&args.paths, |p| {
        p.extension().is_some_and(|e| e == "shader_test")
    }));
    let bar = Progress::new(files.len(), "tests");
    let optimize = |shader: &mut shrew_engine::ir::Shader| pipeline.run(shader).map(|_| ());
    let target = args.batch.target;
    let compiler = if target.has_backend() {
        Some(target.compiler()?)
    } else if args.simd.is_some() {
        return Err(CliError(format!(
            "--simd: `{}` has no backend to run kernels",
            target.name
        )));
    } else {
        None
    };
    let stages = match &compiler {
        Some(compiler) => Some(compiler.draw_stages(args.simd).map_err(CliError)?),
        None => None,
    };
    let backend = stages.as_deref();
    let json = args.batch.json;
    let (mut passed, mut failed, mut skipped, mut compiled) = (0, 0, 0, 0);
    let mut output = Ok(());
    run_batch(
        &files,
        args.batch.options(),
        |(_, path)| {
            let start = Instant::now();
            let (outcome, work) = meter::measure(|| run_file(path, &glslang, &optimize, backend));
            (outcome, start.elapsed().as_secs_f64(), work)
        },
        |i, end| {
            let (index, path) = &files[i];
            let (outcome, time, work) = match end {
                ItemEnd::Done(done) => done,
                ItemEnd::Panicked(message) => (
                    Outcome::fail(format!("panic: {message}")),
                    0.0,
                    meter::Work::default(),
                ),
                ItemEnd::TimedOut(limit) => (
                    Outcome::fail(format!(
                        "the time limit of {} s passed",
                        limit.as_secs_f64()
                    )),
                    limit.as_secs_f64(),
                    meter::Work::default(),
                ),
            };
            match outcome.status {
                Status::Pass => passed += 1,
                Status::Fail => failed += 1,
                Status::Skip => skipped += 1,
            }
            compiled += outcome.compiled as usize;
            bar.inc();
            let line = if json {
                serde_json::json!({
                    "index": index,
                    "path": path.display().to_string(),
                    "status": outcome.status,
                    "reason": outcome.reason,
                    "time": time,
                    "lane_instructions": work.lane_instructions,
                    "execution_time": work.execution.as_secs_f64(),
                })
                .to_string()
            } else {
                let status = match outcome.status {
                    Status::Pass => "PASS",
                    Status::Fail => "FAIL",
                    Status::Skip => "SKIP",
                };
                match &outcome.reason {
                    Some(reason) => format!("{status} #{index} {}: {reason}", path.display()),
                    None => format!("{status} #{index} {}", path.display()),
                }
            };
            if output.is_ok() {
                output = bar.print_line(&line);
            }
        },
    );
    bar.finish();
    output?;
    let summary = if json {
        let summary = serde_json::json!({
            "summary": { "passed": passed, "failed": failed, "skipped": skipped, "compiled": compiled }
        });
        format!("{summary}\n")
    } else {
        format!("{passed} passed, {failed} failed, {skipped} skipped\n")
    };
    emit(&summary)?;
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
            target: shrew_targets::generic(),
            json: false,
            jobs: None,
            time_limit: None,
            only_shaders: Some((2, 5)),
            skip_shaders: Some((3, 3)),
            sample: None,
            shard: None,
        };
        let files: Vec<PathBuf> = (1..=6).map(|i| PathBuf::from(format!("{i}"))).collect();
        let chosen: Vec<usize> = batch
            .select(files.clone())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(chosen, [2, 4, 5]);
        // A shard takes every N-th file by number, within the ranges.
        let shard = BatchArgs {
            only_shaders: None,
            skip_shaders: None,
            shard: Some(shrew_harness::batch::Shard { index: 2, count: 3 }),
            ..batch
        };
        let chosen: Vec<usize> = shard.select(files).into_iter().map(|(n, _)| n).collect();
        assert_eq!(chosen, [2, 5]);
    }

    #[test]
    fn a_sample_takes_one_file_in_n_of_every_directory() {
        let batch = BatchArgs {
            pipeline: "none".into(),
            target: shrew_targets::generic(),
            json: false,
            jobs: None,
            time_limit: None,
            only_shaders: None,
            skip_shaders: None,
            sample: Some(3),
            shard: None,
        };
        let files: Vec<PathBuf> = ["a/1", "a/2", "a/3", "a/4", "a/b/1", "a/b/2", "c/1"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let chosen: Vec<String> = batch
            .select(files)
            .into_iter()
            .map(|(n, path)| format!("{n}:{}", path.display()))
            .collect();
        // Numbers stay those of the whole input, so `--only-shaders` still names the same files.
        assert_eq!(chosen, ["1:a/1", "4:a/4", "5:a/b/1", "7:c/1"]);
    }
}
