//! `shrew search`: pass-ordering search over a corpus for a target (the library's
//! [`shrew_harness::search`] does the work; this parses the arguments and prints).

use crate::piglit::Progress;
use crate::{CliError, backend_target_parser, emit, stage_parser};
use clap::Args;
use shrew_engine::ir::Stage;
use shrew_harness::batch::Shard;
use shrew_harness::bisect::{self, Oracle};
use shrew_harness::search::{self, Objective, Settings, plots, report};
use shrew_targets::Target;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct SearchArgs {
    /// Files or directories of the corpus (`.shader_test`, GLSL, `.spv`, `.wgsl`, `.shrew`).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The target whose kernels are measured (a Gen or R600 one).
    #[arg(long, value_parser = backend_target_parser())]
    target: &'static Target,
    /// What to minimise: a kernel statistic or a weighted sum (`cycles`, `instructions+4*spills`,
    /// `alu_groups`), relative to the default pipeline per shader.
    #[arg(long, default_value = "instructions")]
    objective: String,
    /// Strategies, comma-separated: random, greedy, beam[:WIDTH], evolution[:POPULATION].
    #[arg(long, default_value = "random,greedy")]
    strategy: String,
    /// `per-shader`: the best pipeline of each shader (of the test split, when there is one);
    /// `corpus`: one pipeline searched on the training split and measured on the test split.
    #[arg(long, default_value = "per-shader", value_parser = ["per-shader", "corpus"])]
    mode: String,
    /// Candidate pipelines each search may evaluate (per shader in per-shader mode).
    #[arg(long, default_value_t = 100)]
    budget: usize,
    /// Also stop each search after this many seconds (the result then depends on the machine).
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<f64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The part of the shaders held out as the test split (0: no split).
    #[arg(long, default_value_t = 0.0)]
    test_fraction: f64,
    /// Only the stages of this kind.
    #[arg(long, value_name = "STAGE", value_parser = stage_parser())]
    stage: Option<Stage>,
    /// At most this many shaders (the first in name order).
    #[arg(long, value_name = "N")]
    max_shaders: Option<usize>,
    /// The passes searched, comma-separated (default: every pass of the target's registry).
    #[arg(long, value_name = "PASSES")]
    passes: Option<String>,
    /// Pipeline text run before and after every searched part.
    #[arg(long, default_value = "")]
    prefix: String,
    #[arg(long, default_value = "")]
    suffix: String,
    /// Most passes and groups in a searched part.
    #[arg(long, default_value_t = 24)]
    max_length: usize,
    /// Leave fixpoint groups `( ... )*` out of the space.
    #[arg(long)]
    no_groups: bool,
    /// Do not check the kernels on the emulator against the interpreter.
    #[arg(long)]
    no_check: bool,
    /// Print every evaluation and the summary as JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Also write every evaluation and the summary as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Jobs evaluating at once (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Per-shader mode: search only shard I of N of the searched shaders (join the runs with
    /// `shrew report --merge`).
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
}

pub fn search(args: &SearchArgs) -> Result<(), CliError> {
    let settings = Settings {
        stage: args.stage,
        objective: args.objective.clone(),
        strategies: args.strategy.clone(),
        mode: args.mode.clone(),
        evaluations: args.budget,
        seconds: args.seconds,
        seed: args.seed,
        test_fraction: args.test_fraction,
        max_shaders: args.max_shaders,
        passes: args.passes.clone(),
        prefix: args.prefix.clone(),
        suffix: args.suffix.clone(),
        max_length: args.max_length,
        groups: !args.no_groups,
        check: !args.no_check,
        shard: args.shard,
        ..Settings::new(args.paths.clone(), args.target)
    };
    let session = settings.session().map_err(CliError)?;
    let output = match &args.output {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?,
        )),
        None => None,
    };
    let mut printer = Printer {
        json: args.json,
        output,
        bar: None,
        failure: Ok(()),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .map_err(|e| CliError(e.to_string()))?;
    let summary = pool.install(|| search::run_session(&session, &mut printer));
    if let Some(bar) = &printer.bar {
        bar.finish();
    }
    let summary = summary.map_err(CliError)?;
    let summary_line = serde_json::json!({ "summary": summary }).to_string();
    printer.write(&summary_line);
    printer.failure?;
    if let Some(out) = &mut printer.output {
        out.flush()
            .map_err(|e| CliError(format!("cannot write the output file: {e}")))?;
    }
    match args.json {
        true => emit(&(summary_line + "\n")),
        false => emit(&report::text(&summary)),
    }
}

/// Where a search's evaluations go: the output file, stdout as JSON lines, and a progress bar
/// over the searches.
struct Printer {
    json: bool,
    output: Option<std::io::BufWriter<std::fs::File>>,
    bar: Option<Progress>,
    failure: Result<(), CliError>,
}

impl Printer {
    /// Writes a line to the output file, keeping the first failure.
    fn write(&mut self, line: &str) {
        if let Some(out) = &mut self.output
            && let Err(e) = writeln!(out, "{line}")
            && self.failure.is_ok()
        {
            self.failure = Err(CliError(format!("cannot write the output file: {e}")));
        }
    }
}

impl search::Observer for Printer {
    fn record(&mut self, record: &search::Record) {
        let line = record.json().to_string();
        self.write(&line);
        if self.json && self.failure.is_ok() {
            self.failure = match &self.bar {
                Some(bar) => bar.print_line(&line),
                None => emit(&(line + "\n")),
            };
        }
    }

    fn searched(&mut self, _done: usize, total: usize) {
        self.bar
            .get_or_insert_with(|| Progress::new(total, "searches"))
            .inc();
    }
}

#[derive(Args)]
pub struct ReportArgs {
    /// A run's JSON lines (`shrew search --output`), and a second one to compare with (another
    /// strategy, seed or commit); with `--merge`, the shards to join.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// Join the runs of the shards of one per-shader search (`--shard I/N`) into this file, and
    /// print the joined summary.
    #[arg(long, value_name = "FILE")]
    merge: Option<PathBuf>,
    /// Also draw the run's plots (the joined run's with `--merge`) into this directory, as SVG
    /// and PNG: the best ratio over evaluations per strategy, the per-shader ratios sorted, and
    /// the passes by position in the best pipelines.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
}

/// `shrew report`: a saved search's summary as text, two side by side, or shards joined.
pub fn report(args: &ReportArgs) -> Result<(), CliError> {
    let runs = args
        .runs
        .iter()
        .map(|path| report::load(path))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError)?;
    let plot = |run: &report::SavedRun| -> Result<(), CliError> {
        let Some(dir) = &args.plots else {
            return Ok(());
        };
        for path in plots::write(run, dir).map_err(CliError)? {
            eprintln!("wrote {}", path.display());
        }
        Ok(())
    };
    if let Some(out) = &args.merge {
        let joined = report::merge(&runs).map_err(CliError)?;
        std::fs::write(out, joined.lines())
            .map_err(|e| CliError(format!("cannot write {}: {e}", out.display())))?;
        plot(&joined)?;
        return emit(&report::text(&joined.summary));
    }
    match runs.as_slice() {
        [run] => {
            plot(run)?;
            emit(&report::text(&run.summary))
        }
        [_, _] if args.plots.is_some() => Err(CliError(
            "--plots draws one run: give one (or shards with --merge)".into(),
        )),
        [run, other] => emit(&report::compare(run, other)),
        _ => Err(CliError(
            "one run to print, two to compare, or shards with --merge".into(),
        )),
    }
}

#[derive(Args)]
pub struct BisectArgs {
    /// The shader (`shrew compile` reads the same files); with `--objective`, a corpus: files or
    /// directories, every stage of which is compared.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The stage of a `.glsl` file or of a `.shader_test` to read; with `--objective`, only the
    /// stages of this kind.
    #[arg(long, value_name = "STAGE", value_parser = stage_parser())]
    stage: Option<Stage>,
    /// The pipeline with which the kernels are wrong (or, with `--objective`, worse).
    #[arg(short, long)]
    pipeline: String,
    #[arg(long, value_parser = backend_target_parser())]
    target: &'static Target,
    /// Bisect a regression of the kernels' cost rather than of their results: a statistic or a
    /// weighted sum (as `shrew search --objective`). The shaders the pipeline makes worse than
    /// `--against` are listed, worst first, and each is bisected with the shader after each
    /// limit finished by `--against` as the oracle.
    #[arg(long)]
    objective: Option<String>,
    /// The reference pipeline of a cost regression.
    #[arg(long, default_value = "default", requires = "objective")]
    against: String,
    /// Also print the IR before and after each transformation found (the default when one
    /// shader is bisected).
    #[arg(long)]
    ir: bool,
    /// Jobs comparing and bisecting at once (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
}

/// `shrew bisect`: the first transformation of a pipeline after which a shader's kernels fail
/// their check (its piglit test for a `.shader_test`, random inputs against the interpreter
/// otherwise) or, with `--objective`, cost more than with a reference pipeline, each with the
/// IR before and after it.
pub fn bisect(args: &BisectArgs) -> Result<(), CliError> {
    let pipeline =
        || shrew_targets::Pipeline::parse(&args.pipeline, args.target).map_err(|e| e.to_string());
    let Some(objective) = &args.objective else {
        let [file] = args.paths.as_slice() else {
            return Err(CliError(ONE_SHADER.into()));
        };
        if file.is_dir() {
            return Err(CliError(ONE_SHADER.into()));
        }
        let shader = crate::ShaderArgs {
            file: file.clone(),
            stage: args.stage,
        }
        .load()?;
        let oracle = match file.extension().is_some_and(|e| e == "shader_test") {
            true => Oracle::Piglit {
                test: file.clone(),
                glslang: shrew_frontend::glsl::Glslang::find()?,
            },
            false => Oracle::RandomInputs,
        };
        let found = bisect::bisect(&shader, &pipeline, args.target, &oracle).map_err(CliError)?;
        return emit(&bisection_text(&found, true));
    };
    let objective = Objective::parse(objective).map_err(CliError)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .map_err(|e| CliError(e.to_string()))?;
    let found = pool
        .install(|| {
            let stages = shrew_harness::corpus::read(&args.paths)
                .into_iter()
                .filter(|s| match (&s.shader, args.stage) {
                    (Ok(shader), Some(stage)) => shader.stage == stage,
                    (Ok(shader), None) => args.target.compiles(shader.stage),
                    (Err(_), _) => true,
                })
                .collect();
            bisect::regressions(stages, &pipeline, &args.against, args.target, &objective)
        })
        .map_err(CliError)?;
    let mut out = format!(
        "{} shaders compared on {} ({objective}, `{}` against `{}`): {} worse, {} better, {} \
         not compared\n",
        found.compared,
        args.target.name,
        args.pipeline,
        args.against,
        found.worse.len(),
        found.better,
        found.failed.len()
    );
    for (name, why) in &found.failed {
        out += &format!(
            "not compared: {name}: {}\n",
            why.lines().next().unwrap_or("")
        );
    }
    let with_ir = args.ir || found.worse.len() == 1;
    for worse in &found.worse {
        out += &format!(
            "\n{}: {} against {} ({:+.1}%)\n",
            worse.name,
            worse.cost,
            worse.reference_cost,
            100.0 * (worse.cost / worse.reference_cost.max(f64::MIN_POSITIVE) - 1.0)
        );
        match &worse.bisection {
            Ok(found) => out += &bisection_text(found, with_ir),
            Err(e) => out += &format!("not bisected: {e}\n"),
        }
    }
    emit(&out)
}

const ONE_SHADER: &str =
    "bisecting wrong results takes one shader file (a corpus needs --objective)";

/// A bisection's transformation and failure, and with `ir` the shader before and after it.
fn bisection_text(found: &bisect::Bisection, ir: bool) -> String {
    let mut text = format!(
        "transformation {} of {} makes the check fail: {}\nfailure: {}\n",
        found.first_bad,
        found.total,
        found.transformation,
        found.failure.lines().next().unwrap_or("")
    );
    if ir {
        text += &format!(
            "\n; before it\n{}\n; after it\n{}",
            found.before, found.after
        );
    }
    text
}
