//! `shrew corpus`: translates every shader stage found under the paths (the stages of piglit
//! `.shader_test` files, GLSL, SPIR-V and WGSL files) and reports per stage and in total. The
//! shader-db of the later issues starts here.

use crate::piglit::{BatchArgs, Progress};
use crate::{CliError, emit};
use clap::Args;
use shrew_engine::egraph::shader_cost;
use shrew_engine::ir::Stage;
use shrew_engine::rewrite::Model;
use shrew_frontend::glsl::{Glslang, stage_for_extension};
use shrew_frontend::shader_test::{parse_sources, stage_sources};
use shrew_frontend::spirv::{self, ErrorKind};
use shrew_frontend::{LoadError, LoadOptions, load_file};
use shrew_harness::batch::{ItemEnd, run_batch};
use shrew_harness::corpus::find_files;
use shrew_targets::{Compiler, Pipeline, Target, VariantError, statistics_json};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct CorpusArgs {
    /// Files or directories (`.shader_test`, `.vert` `.frag` `.comp` `.geom` `.tesc` `.tese`,
    /// `.spv`, `.wgsl`).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    batch: BatchArgs,
    /// Also write the SPIR-V glslang makes of every GLSL stage into this directory, one
    /// `.spv` file per distinct module (the input of `scripts/bench_frontend.py`).
    #[arg(long, value_name = "DIR")]
    save_spirv: Option<PathBuf>,
    /// A second pipeline to compare `-p` against (Gen and R600 targets): every stage the
    /// backend compiles is also optimized with it and compiled, and the summary counts the
    /// kernels each pipeline makes smaller (helped) or larger (hurt), with the change of the
    /// totals, as shader-db's report does.
    #[arg(long, value_name = "PIPELINE")]
    vs_pipeline: Option<String>,
}

/// What became of one stage.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    Ok,
    /// glslang (or naga) did not compile the source: not the front end's doing.
    NotCompiled,
    Unsupported,
    FrontendError,
    /// The front end panicked: always a bug, and the corpus gate fails on any.
    Panicked,
    /// The file's work was still running at the batch's time limit.
    TimedOut,
}

struct StageReport {
    /// The 1-based number of the stage's file in the input.
    index: usize,
    name: String,
    stage: Option<Stage>,
    status: Status,
    message: Option<String>,
    instructions: usize,
    /// What the stage's pure instructions cost under the target's model.
    cost: u64,
    time: f64,
    /// The pipeline's share of `time`.
    pipeline_time: f64,
    /// The backend's kernels, with their statistics or why they did not compile.
    kernels: Kernels,
    /// The kernels of the `--vs-pipeline` pipeline.
    baseline: Kernels,
}

/// A stage's kernels from the target's backend, as a driver compiles them: each one's
/// statistics, or why it was not compiled. Empty without a backend, or for a stage the backend
/// does not compile.
type Kernels = Vec<Result<KernelStats, VariantError>>;

/// A kernel's dispatch width (where the backend has a choice) and shader-db figures.
#[derive(Clone)]
struct KernelStats {
    width: Option<u8>,
    figures: Vec<(&'static str, u64)>,
}

/// The kernels as JSON: each one's statistics (and `simd`), or its width and error.
fn kernels_json(kernels: &Kernels) -> serde_json::Value {
    kernels
        .iter()
        .map(|kernel| match kernel {
            Ok(stats) => statistics_json(stats.width, &stats.figures),
            Err(VariantError { width, message }) => {
                let mut error = serde_json::json!({ "error": message });
                if let Some(width) = width {
                    error["simd"] = (*width).into();
                }
                error
            }
        })
        .collect::<Vec<_>>()
        .into()
}

pub fn corpus(args: &CorpusArgs) -> Result<(), CliError> {
    if let Some(dir) = &args.save_spirv {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
    }
    let context = Context {
        glslang: Glslang::find().ok(),
        pipeline: Pipeline::parse(&args.batch.pipeline, args.batch.target)?,
        model: args.batch.target.options().costs.model,
        compiler: if args.batch.target.has_backend() {
            Some(args.batch.target.compiler()?)
        } else {
            None
        },
        save_spirv: args.save_spirv.clone(),
        baseline: match &args.vs_pipeline {
            Some(p) => Some(Pipeline::parse(p, args.batch.target)?),
            None => None,
        },
    };
    let files = args.batch.select(find_files(&args.paths, |p| {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        ext == "shader_test" || ext == "spv" || ext == "wgsl" || stage_for_extension(ext).is_some()
    }));
    let bar = Progress::new(files.len(), "files");
    let mut reports: Vec<StageReport> = Vec::new();
    let mut output = Ok(());
    run_batch(
        &files,
        args.batch.options(),
        |(_, path)| file_reports(path, &context),
        |i, end| {
            let (index, path) = &files[i];
            let name = path.display().to_string();
            let mut file_reports = match end {
                ItemEnd::Done(reports) => reports,
                ItemEnd::Panicked(message) => {
                    vec![failure(name, Status::Panicked, format!("panic: {message}"))]
                }
                ItemEnd::TimedOut(limit) => vec![failure(
                    name,
                    Status::TimedOut,
                    format!("the time limit of {} s passed", limit.as_secs_f64()),
                )],
            };
            bar.inc();
            for r in &mut file_reports {
                r.index = *index;
                if let Some(line) = report_line(r, &context, args.batch.json)
                    && output.is_ok()
                {
                    output = bar.print_line(&line);
                }
            }
            reports.append(&mut file_reports);
        },
    );
    bar.finish();
    output?;
    let mut out = String::new();
    out.push_str(&summary(&reports, args.batch.json));
    if context.compiler.is_some() {
        out.push_str(&kernel_summary(
            &reports,
            args.batch.target,
            context.baseline.is_some(),
            args.batch.json,
        ));
    }
    emit(&out)
}

/// The output line of one stage's report: every report in JSON, the failures in text.
fn report_line(r: &StageReport, context: &Context, json: bool) -> Option<String> {
    if !json {
        return (r.status != Status::Ok).then(|| {
            format!(
                "{:?} #{} {}: {}",
                r.status,
                r.index,
                r.name,
                r.message.as_deref().unwrap_or("")
            )
        });
    }
    let mut line = serde_json::json!({
        "index": r.index,
        "name": r.name,
        "stage": r.stage.map(|s| s.name()),
        "status": r.status,
        "message": r.message,
        "instructions": r.instructions,
        "cost": r.cost,
        "time": r.time,
        "pipeline_time": r.pipeline_time,
    });
    if context.compiler.is_some() {
        line["kernels"] = kernels_json(&r.kernels);
    }
    if context.baseline.is_some() {
        line["kernels_baseline"] = kernels_json(&r.baseline);
    }
    Some(line.to_string())
}

/// shader-db's totals per stage and dispatch width: kernels and the sum of each figure; with a
/// `--vs-pipeline`, over the kernels both pipelines compile, the totals of each, their change,
/// and how many kernels `-p` makes smaller (helped) or larger (hurt).
fn kernel_summary(reports: &[StageReport], target: &Target, compare: bool, json: bool) -> String {
    let mut text = String::new();
    let mut groups = Vec::new();
    // The backend's figures, as any of its kernels names them.
    let names: Vec<&'static str> = reports
        .iter()
        .flat_map(|r| &r.kernels)
        .find_map(|k| k.as_ref().ok())
        .map(|k| k.figures.iter().map(|(name, _)| *name).collect())
        .unwrap_or_default();
    for stage in Stage::ALL {
        let reports: Vec<&StageReport> =
            reports.iter().filter(|r| r.stage == Some(stage)).collect();
        let mut widths: Vec<Option<u8>> = reports
            .iter()
            .flat_map(|r| r.kernels.iter().map(width_of))
            .collect();
        widths.sort();
        widths.dedup();
        for width in widths {
            let of = |kernels: &Kernels| {
                kernels
                    .iter()
                    .find(|k| width_of(k) == width)
                    .and_then(|k| k.as_ref().ok())
                    .cloned()
            };
            let compiled: Vec<KernelStats> =
                reports.iter().filter_map(|r| of(&r.kernels)).collect();
            let failed = reports
                .iter()
                .filter(|r| r.kernels.iter().any(|k| width_of(k) == width && k.is_err()))
                .count();
            let variant = width.map(|w| format!(" SIMD{w}")).unwrap_or_default();
            let mut group = serde_json::json!({
                "target": target.name,
                "stage": stage.name(),
                "kernels": compiled.len(),
                "not_compiled": failed,
            });
            if let Some(width) = width {
                group["simd"] = width.into();
            }
            text.push_str(&format!(
                "{} {}{variant}: {} kernels ({failed} not compiled or left out):",
                target.name,
                stage.name(),
                compiled.len(),
            ));
            for &name in &names {
                let total: u64 = compiled.iter().map(|k| figure(k, name)).sum();
                group[name] = total.into();
                text.push_str(&format!(" {total} {name},"));
            }
            text.pop();
            text.push('\n');
            if compare {
                let pairs: Vec<_> = reports
                    .iter()
                    .filter_map(|r| Some((of(&r.kernels)?, of(&r.baseline)?)))
                    .collect();
                group["vs_pipeline"] = compare_pipelines(&pairs, &names, &mut text);
            }
            groups.push(group);
        }
    }
    if json {
        format!("{}\n", serde_json::json!({ "kernel_summary": groups }))
    } else {
        text
    }
}

/// The dispatch width of a kernel or of the variant that did not compile.
fn width_of(kernel: &Result<KernelStats, VariantError>) -> Option<u8> {
    match kernel {
        Ok(stats) => stats.width,
        Err(error) => error.width,
    }
}

/// The figure called `name` of a kernel (0 if it has none).
fn figure(kernel: &KernelStats, name: &str) -> u64 {
    kernel
        .figures
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, value)| *value)
}

/// shader-db's report of `-p` against `--vs-pipeline` over `pairs` of (ours, baseline)
/// kernels both compile: for each figure the totals, their change, and how many kernels `-p`
/// makes smaller (helped) or larger (hurt). Appends the text to `text` and gives the JSON.
fn compare_pipelines(
    pairs: &[(KernelStats, KernelStats)],
    names: &[&'static str],
    text: &mut String,
) -> serde_json::Value {
    let mut comparison = serde_json::Map::new();
    text.push_str(&format!(
        "  against --vs-pipeline, over the {} kernels both compile:\n",
        pairs.len()
    ));
    for &name in names {
        let f = |k: &KernelStats| figure(k, name);
        let ours: u64 = pairs.iter().map(|(a, _)| f(a)).sum();
        let theirs: u64 = pairs.iter().map(|(_, b)| f(b)).sum();
        let helped = pairs.iter().filter(|(a, b)| f(a) < f(b)).count();
        let hurt = pairs.iter().filter(|(a, b)| f(a) > f(b)).count();
        // No kernels in common: no change, not -100%.
        let change = if theirs == 0 {
            0.0
        } else {
            100.0 * (ours as f64 / theirs as f64 - 1.0)
        };
        text.push_str(&format!(
            "  total {name} in shared programs: {theirs} -> {ours} ({change:+.2}%); \
             helped {helped}, HURT {hurt}\n"
        ));
        comparison.insert(
            name.to_string(),
            serde_json::json!({"baseline": theirs, "ours": ours, "change_percent": change,
                "helped": helped, "hurt": hurt}),
        );
    }
    comparison.into()
}

fn summary(reports: &[StageReport], json: bool) -> String {
    let count = |s: Status| reports.iter().filter(|r| r.status == s).count();
    let ok = count(Status::Ok);
    // The rate is over the stages the front end must handle: vertex, fragment and compute
    // stages that glslang (or naga) compiles.
    let gated = |r: &&StageReport| {
        r.status != Status::NotCompiled
            && matches!(
                r.stage,
                Some(Stage::Vertex | Stage::Fragment | Stage::Compute) | None
            )
    };
    let compiled = reports.iter().filter(gated).count();
    let gated_ok = reports
        .iter()
        .filter(gated)
        .filter(|r| r.status == Status::Ok)
        .count();
    let instructions: usize = reports.iter().map(|r| r.instructions).sum();
    let time: f64 = reports.iter().map(|r| r.time).sum();
    // The most common failure reasons, with instruction words and ids blanked out.
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for r in reports
        .iter()
        .filter(|r| r.status != Status::Ok && r.status != Status::NotCompiled)
    {
        let m = r.message.as_deref().unwrap_or("");
        let m = m.split_once(": ").map_or(m, |(_, rest)| rest);
        let key: String = m
            .split_whitespace()
            .map(|w| {
                if w.trim_start_matches(['%', '('])
                    .starts_with(|c: char| c.is_ascii_digit())
                {
                    "N"
                } else {
                    w
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        *reasons.entry(key).or_default() += 1;
    }
    let mut top: Vec<(String, usize)> = reasons.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(10);
    let rate = if compiled == 0 {
        0.0
    } else {
        100.0 * gated_ok as f64 / compiled as f64
    };
    if json {
        let summary = serde_json::json!({"summary": {
            "stages": reports.len(),
            "ok": ok,
            "not_compiled": count(Status::NotCompiled),
            "unsupported": count(Status::Unsupported),
            "frontend_error": count(Status::FrontendError),
            "panicked": count(Status::Panicked),
            "timed_out": count(Status::TimedOut),
            "translated_percent": rate,
            "instructions": instructions,
            "time": time,
            "top_reasons": top,
        }});
        return format!("{summary}\n");
    }
    let mut s = format!(
        "{} stages: {ok} ok, {} not compiled by glslang/naga, {} unsupported, {} frontend errors, \
         {} panics, {} past the time limit\n\
         translated {rate:.2}% of the {compiled} vertex, fragment and compute stages that \
         compile; {instructions} IR instructions; \
         {time:.2} s translating and optimizing\n",
        reports.len(),
        count(Status::NotCompiled),
        count(Status::Unsupported),
        count(Status::FrontendError),
        count(Status::Panicked),
        count(Status::TimedOut),
    );
    for (reason, n) in top {
        s.push_str(&format!("{n:>8}  {reason}\n"));
    }
    s
}

fn instruction_count(shader: &shrew_engine::ir::Shader) -> usize {
    shader.functions.iter().map(|f| f.all_insts().count()).sum()
}

/// What every stage of the run shares.
struct Context {
    glslang: Option<Glslang>,
    pipeline: Pipeline,
    /// The target's cost model, for the `cost` of each stage.
    model: Model,
    /// The target's backend, when it has one: the stages it takes are compiled.
    compiler: Option<Box<dyn Compiler>>,
    save_spirv: Option<PathBuf>,
    /// The `--vs-pipeline` to compare against.
    baseline: Option<Pipeline>,
}

/// One report per stage of a file.
fn file_reports(path: &Path, context: &Context) -> Vec<StageReport> {
    let name = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext == "shader_test" {
        return shader_test_reports(path, &name, context);
    }
    if let Some(stage) = stage_for_extension(ext) {
        return vec![match std::fs::read(path) {
            Ok(bytes) => {
                let file = name.clone();
                let locate = move |line| format!("{file}:{line}");
                glsl_report(
                    name,
                    stage,
                    &String::from_utf8_lossy(&bytes),
                    &locate,
                    context,
                )
            }
            Err(e) => failure(name, Status::FrontendError, format!("cannot read: {e}")),
        }];
    }
    let start = Instant::now();
    let result = load_file(path, &LoadOptions::default());
    let time = start.elapsed().as_secs_f64();
    let (status, message, shader) = match result {
        Ok(s) => (Status::Ok, None, Some(s)),
        Err(LoadError::Spirv { error, .. }) => {
            (spirv_status(&error), Some(error.to_string()), None)
        }
        Err(e @ LoadError::Wgsl { .. }) => (Status::NotCompiled, Some(e.to_string()), None),
        Err(e) => (Status::FrontendError, Some(e.to_string()), None),
    };
    let stage = shader.as_ref().map(|s| s.stage);
    vec![finish(name, stage, status, message, shader, time, context)]
}

fn spirv_status(e: &spirv::SpirvError) -> Status {
    match e.kind {
        ErrorKind::Unsupported => Status::Unsupported,
        _ => Status::FrontendError,
    }
}

/// A stage that ended before translation.
fn failure(name: String, status: Status, message: String) -> StageReport {
    StageReport {
        index: 0,
        name,
        stage: None,
        status,
        message: Some(message),
        instructions: 0,
        cost: 0,
        time: 0.0,
        pipeline_time: 0.0,
        kernels: Kernels::new(),
        baseline: Kernels::new(),
    }
}

/// Runs the pipeline on a translated stage (its time adds to the translation's) and counts
/// its instructions.
fn finish(
    name: String,
    stage: Option<Stage>,
    mut status: Status,
    mut message: Option<String>,
    shader: Option<shrew_engine::ir::Shader>,
    mut time: f64,
    context: &Context,
) -> StageReport {
    let (mut instructions, mut cost, mut pipeline_time) = (0, 0, 0.0);
    let (mut kernels, mut baseline) = (Kernels::new(), Kernels::new());
    if let Some(mut shader) = shader {
        let unoptimized = context.baseline.as_ref().map(|_| shader.clone());
        let start = Instant::now();
        if let Err(e) = context.pipeline.run(&mut shader) {
            status = Status::FrontendError;
            message = Some(format!("pipeline: {e}"));
        }
        pipeline_time = start.elapsed().as_secs_f64();
        time += pipeline_time;
        instructions = instruction_count(&shader);
        cost = shader_cost(&shader, context.model.0.as_ref());
        if status == Status::Ok {
            kernels = backend_kernels(shader, context);
            if let (Some(pipeline), Some(mut other)) = (&context.baseline, unoptimized) {
                baseline = match pipeline.run(&mut other) {
                    Ok(_) => backend_kernels(other, context),
                    Err(e) => vec![Err(VariantError {
                        width: None,
                        message: format!("--vs-pipeline: {e}"),
                    })],
                };
            }
        }
    }
    StageReport {
        index: 0,
        name,
        stage,
        status,
        message,
        instructions,
        cost,
        time,
        pipeline_time,
        kernels,
        baseline,
    }
}

/// The backend's kernels of a stage, as a driver compiles them.
fn backend_kernels(shader: shrew_engine::ir::Shader, context: &Context) -> Kernels {
    let Some(compiler) = &context.compiler else {
        return Kernels::new();
    };
    compiler
        .variants(&shader)
        .into_iter()
        .map(|kernel| {
            kernel.map(|kernel| KernelStats {
                width: kernel.width(),
                figures: kernel.statistics(),
            })
        })
        .collect()
}

fn shader_test_reports(path: &Path, name: &str, context: &Context) -> Vec<StageReport> {
    let fail = |status: Status, message: String| vec![failure(name.to_string(), status, message)];
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return fail(Status::FrontendError, format!("cannot read: {e}")),
    };
    let mut test = match parse_sources(&text) {
        Ok((sources, _)) => sources,
        Err(e) => return fail(Status::FrontendError, format!("cannot parse: {e}")),
    };
    if let Some(dir) = path.parent()
        && test.load_shader_files(dir).is_err()
    {
        return fail(Status::NotCompiled, "a shader file is missing".into());
    }
    let sources = match stage_sources(&test) {
        Ok(s) => s,
        Err(e) => return fail(Status::NotCompiled, e.to_string()),
    };
    sources
        .into_iter()
        .enumerate()
        .map(|(i, source)| {
            let stage_name = format!("{name}#{}{i}", source.stage.name());
            let locate = |line| source.location(name, line);
            glsl_report(stage_name, source.stage, &source.source, &locate, context)
        })
        .collect()
}

/// Compiles one GLSL stage with glslang's cascade (saving the SPIR-V if asked) and translates it;
/// `locate` gives the place of a source line in the user's file.
fn glsl_report(
    name: String,
    stage: Stage,
    source: &str,
    locate: &dyn Fn(usize) -> String,
    context: &Context,
) -> StageReport {
    let Some(glslang) = &context.glslang else {
        return failure(
            name,
            Status::NotCompiled,
            "glslangValidator is not installed (apt-get install glslang-tools)".into(),
        );
    };
    let compiled = match glslang.compile_cascade(source, stage) {
        Ok(c) => c,
        Err(e) => {
            let first = e
                .located(locate)
                .to_string()
                .lines()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            return StageReport {
                stage: Some(stage),
                ..failure(name, Status::NotCompiled, first)
            };
        }
    };
    if let Some(dir) = &context.save_spirv
        && let Err(e) = save_spirv(dir, &compiled.words)
    {
        return failure(name, Status::FrontendError, e);
    }
    let start = Instant::now();
    let result = spirv::translate(&compiled.words, &spirv::Options::default());
    let time = start.elapsed().as_secs_f64();
    let (status, message, shader) = match result {
        Ok(shader) => (Status::Ok, None, Some(shader)),
        Err(e) => (spirv_status(&e), Some(e.to_string()), None),
    };
    finish(name, Some(stage), status, message, shader, time, context)
}

/// Writes a module to `dir`, named by a hash of its words so equal modules are saved once.
fn save_spirv(dir: &Path, words: &[u32]) -> Result<(), String> {
    let mut hasher = std::hash::DefaultHasher::new();
    words.hash(&mut hasher);
    let path = dir.join(format!("{:016x}.spv", hasher.finish()));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
