//! `shrew corpus`: translates every shader stage found under the paths (the stages of piglit
//! `.shader_test` files, GLSL, SPIR-V and WGSL files) and reports per stage and in total. The
//! shader-db of the later issues starts here.

use crate::piglit::{BatchArgs, find_files, progress, thread_pool};
use crate::pipeline::Pipeline;
use crate::{CliError, emit};
use clap::Args;
use rayon::prelude::*;
use shrew_engine::ir::Stage;
use shrew_frontend::glsl::{Glslang, stage_for_extension};
use shrew_frontend::piglit::{parse_shader_test, stage_sources};
use shrew_frontend::spirv::{self, ErrorKind};
use shrew_frontend::{LoadError, LoadOptions, load_file};
use std::collections::BTreeMap;
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
}

struct StageReport {
    name: String,
    stage: Option<Stage>,
    status: Status,
    message: Option<String>,
    instructions: usize,
    time: f64,
}

pub fn corpus(args: &CorpusArgs) -> Result<(), CliError> {
    let pipeline = Pipeline::parse(&args.batch.pipeline)?;
    let glslang = Glslang::find().ok();
    let files = find_files(&args.paths, |p| {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        ext == "shader_test" || ext == "spv" || ext == "wgsl" || stage_for_extension(ext).is_some()
    });
    let bar = progress(files.len());
    let reports: Vec<StageReport> = thread_pool(args.batch.jobs)?.install(|| {
        files
            .par_iter()
            .flat_map_iter(|path| {
                let r = file_reports(path, glslang.as_ref(), &pipeline);
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let mut out = String::new();
    for r in &reports {
        if args.batch.json {
            let line = serde_json::json!({
                "name": r.name,
                "stage": r.stage.map(|s| s.name()),
                "status": r.status,
                "message": r.message,
                "instructions": r.instructions,
                "time": r.time,
            });
            out.push_str(&format!("{line}\n"));
        } else if r.status != Status::Ok {
            out.push_str(&format!(
                "{:?} {}: {}\n",
                r.status,
                r.name,
                r.message.as_deref().unwrap_or("")
            ));
        }
    }
    out.push_str(&summary(&reports, args.batch.json));
    emit(&out)
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
        .filter(|r| matches!(r.status, Status::Unsupported | Status::FrontendError))
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
            "translated_percent": rate,
            "instructions": instructions,
            "time": time,
            "top_reasons": top,
        }});
        return format!("{summary}\n");
    }
    let mut s = format!(
        "{} stages: {ok} ok, {} not compiled by glslang/naga, {} unsupported, {} frontend errors\n\
         translated {rate:.2}% of the {compiled} vertex, fragment and compute stages that \
         compile; {instructions} IR instructions; \
         {time:.2} s translating\n",
        reports.len(),
        count(Status::NotCompiled),
        count(Status::Unsupported),
        count(Status::FrontendError),
    );
    for (reason, n) in top {
        s.push_str(&format!("{n:>8}  {reason}\n"));
    }
    s
}

fn instruction_count(shader: &shrew_engine::ir::Shader) -> usize {
    shader.functions.iter().map(|f| f.all_insts().count()).sum()
}

/// One report per stage of a file.
fn file_reports(path: &Path, glslang: Option<&Glslang>, pipeline: &Pipeline) -> Vec<StageReport> {
    let name = path.display().to_string();
    if path.extension().is_some_and(|e| e == "shader_test") {
        return shader_test_reports(path, &name, glslang, pipeline);
    }
    let start = Instant::now();
    let result = load_file(path, &LoadOptions::default());
    let time = start.elapsed().as_secs_f64();
    let stage = path
        .extension()
        .and_then(|e| e.to_str())
        .and_then(stage_for_extension);
    let (status, message, shader) = match result {
        Ok(s) => (Status::Ok, None, Some(s)),
        Err(LoadError::Spirv { error, .. }) => {
            (spirv_status(&error), Some(error.to_string()), None)
        }
        Err(e @ (LoadError::Glsl { .. } | LoadError::Wgsl { .. })) => {
            (Status::NotCompiled, Some(e.to_string()), None)
        }
        Err(e) => (Status::FrontendError, Some(e.to_string()), None),
    };
    vec![finish(
        name,
        stage.or(shader.as_ref().map(|s| s.stage)),
        status,
        message,
        shader,
        time,
        pipeline,
    )]
}

fn spirv_status(e: &spirv::SpirvError) -> Status {
    match e.kind {
        ErrorKind::Unsupported => Status::Unsupported,
        _ => Status::FrontendError,
    }
}

fn finish(
    name: String,
    stage: Option<Stage>,
    mut status: Status,
    mut message: Option<String>,
    shader: Option<shrew_engine::ir::Shader>,
    time: f64,
    pipeline: &Pipeline,
) -> StageReport {
    let mut instructions = 0;
    if let Some(mut shader) = shader {
        if let Err(e) = pipeline.run(&mut shader) {
            status = Status::FrontendError;
            message = Some(format!("pipeline: {e}"));
        }
        instructions = instruction_count(&shader);
    }
    StageReport {
        name,
        stage,
        status,
        message,
        instructions,
        time,
    }
}

fn shader_test_reports(
    path: &Path,
    name: &str,
    glslang: Option<&Glslang>,
    pipeline: &Pipeline,
) -> Vec<StageReport> {
    let fail = |status: Status, message: String| {
        vec![StageReport {
            name: name.to_string(),
            stage: None,
            status,
            message: Some(message),
            instructions: 0,
            time: 0.0,
        }]
    };
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return fail(Status::FrontendError, format!("cannot read: {e}")),
    };
    let mut test = match parse_shader_test(&text) {
        Ok(t) => t,
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
    let Some(glslang) = glslang else {
        return fail(
            Status::NotCompiled,
            "glslangValidator is not installed (apt-get install glslang-tools)".into(),
        );
    };
    sources
        .into_iter()
        .enumerate()
        .map(|(i, source)| {
            let stage_name = format!("{name}#{}{i}", source.stage.name());
            let compiled = match glslang.compile_cascade(&source.source, source.stage) {
                Ok(c) => c,
                Err(e) => {
                    let first = e.to_string().lines().take(2).collect::<Vec<_>>().join(" ");
                    return StageReport {
                        name: stage_name,
                        stage: Some(source.stage),
                        status: Status::NotCompiled,
                        message: Some(first),
                        instructions: 0,
                        time: 0.0,
                    };
                }
            };
            let start = Instant::now();
            let result = spirv::translate(&compiled.words, &spirv::Options::default());
            let time = start.elapsed().as_secs_f64();
            match result {
                Ok(shader) => finish(
                    stage_name,
                    Some(source.stage),
                    Status::Ok,
                    None,
                    Some(shader),
                    time,
                    pipeline,
                ),
                Err(e) => finish(
                    stage_name,
                    Some(source.stage),
                    spirv_status(&e),
                    Some(e.to_string()),
                    None,
                    time,
                    pipeline,
                ),
            }
        })
        .collect()
}
