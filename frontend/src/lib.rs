//! Front ends into the shrew IR.
//!
//! - [`spirv`]: our own SPIR-V → IR translator on top of `rspirv`'s parser.
//! - [`glsl`]: GLSL source compiled to SPIR-V by `glslangValidator` (an external process), with
//!   the SPIR-V cached by content hash.
//! - [`wgsl`]: WGSL through `naga` (WGSL → naga IR → SPIR-V), then the SPIR-V path.
//! - [`shader_test`]: piglit's `.shader_test` files read as shader sources: their sections and
//!   the GLSL of each stage as piglit's `shader_runner` prepares it (running the tests is the
//!   harness's).
//!
//! `.shrew` IR text is parsed by the engine ([`shrew_engine::text::parse`]).

pub mod glsl;
pub mod shader_test;
pub mod spirv;
pub mod wgsl;

use shrew_engine::ir::{Shader, Stage};
use std::path::Path;

/// Why a shader file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {message}")]
    Io { path: String, message: String },
    #[error("{0}")]
    Text(String),
    #[error("{path}: {error}")]
    Spirv {
        path: String,
        error: spirv::SpirvError,
    },
    #[error("{path}: {error}")]
    Glsl {
        path: String,
        error: glsl::GlslError,
    },
    #[error("{path}: {error}")]
    Wgsl {
        path: String,
        error: wgsl::WgslError,
    },
    #[error(
        "{path}: unknown kind of shader file (expected .shrew, .spv, .wgsl, .shader_test, or GLSL: \
         .vert .frag .comp .geom .tesc .tese, or .glsl with its stage given)"
    )]
    UnknownKind { path: String },
    /// A `.glsl` file without [`LoadOptions::stage`]: its name does not say the stage.
    #[error("{path}: a .glsl file does not say its stage")]
    NoStage { path: String },
    /// The shader is not of the stage [`LoadOptions::stage`] asks for.
    #[error("{path}: a {found} shader, not a {expected} one", found = .found.name(), expected = .expected.name())]
    WrongStage {
        path: String,
        found: Stage,
        expected: Stage,
    },
    #[error("{path}: {message}")]
    ShaderTest { path: String, message: String },
}

/// What [`load_file`] needs besides the path.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// The entry point of SPIR-V and WGSL modules with several (the first by default).
    pub entry_point: Option<String>,
    /// The stage of a `.glsl` file, and the section of a `.shader_test` (fragment by default).
    /// A shader of any other kind must be of this stage.
    pub stage: Option<Stage>,
}

/// Loads a shader of any supported kind by its extension: `.shrew` IR text, `.spv` SPIR-V,
/// `.wgsl` through naga, GLSL through glslangValidator, and one stage of a piglit `.shader_test`
/// (prepared as `shader_runner` does). The result is verified IR, of the stage
/// [`LoadOptions::stage`] asks for if it asks for one.
pub fn load_file(path: &Path, options: &LoadOptions) -> Result<Shader, LoadError> {
    let shader = load_any(path, options)?;
    match options.stage {
        Some(expected) if shader.stage != expected => Err(LoadError::WrongStage {
            path: path.display().to_string(),
            found: shader.stage,
            expected,
        }),
        _ => Ok(shader),
    }
}

/// A shader from IR text, verified; `name` locates the errors.
pub fn load_text(source: &str, name: &str) -> Result<Shader, LoadError> {
    let shader =
        shrew_engine::text::parse(source, name).map_err(|e| LoadError::Text(e.to_string()))?;
    shrew_engine::verify::verify(&shader).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("{name}: {e}")).collect();
        LoadError::Text(lines.join("\n"))
    })?;
    Ok(shader)
}

/// [`load_file`] without the check of the stage.
fn load_any(path: &Path, options: &LoadOptions) -> Result<Shader, LoadError> {
    let name = path.display().to_string();
    let io = |e: std::io::Error| LoadError::Io {
        path: name.clone(),
        message: e.to_string(),
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let spirv_options = spirv::Options {
        entry_point: options.entry_point.clone(),
    };
    let from_spirv = |words: &[u32], spirv_options: &spirv::Options| {
        spirv::translate(words, spirv_options).map_err(|error| LoadError::Spirv {
            path: name.clone(),
            error,
        })
    };
    match ext {
        "shrew" => {
            let source = std::fs::read_to_string(path).map_err(io)?;
            load_text(&source, &name)
        }
        "spv" => {
            let bytes = std::fs::read(path).map_err(io)?;
            spirv::translate_bytes(&bytes, &spirv_options).map_err(|error| LoadError::Spirv {
                path: name.clone(),
                error,
            })
        }
        "wgsl" => {
            let source = std::fs::read_to_string(path).map_err(io)?;
            let (words, entry) = wgsl::to_spirv(&source, &name, options.entry_point.as_deref())
                .map_err(|error| LoadError::Wgsl {
                    path: name.clone(),
                    error,
                })?;
            from_spirv(
                &words,
                &spirv::Options {
                    entry_point: Some(entry),
                },
            )
        }
        "shader_test" => {
            let stage = options.stage.unwrap_or(Stage::Fragment);
            let section =
                shader_test_stage(path, stage).map_err(|message| LoadError::ShaderTest {
                    path: name.clone(),
                    message,
                })?;
            let compiled = glsl::Glslang::find()
                .and_then(|glslang| glslang.compile_cascade(&section.source, stage))
                .map_err(|error| LoadError::Glsl {
                    path: name.clone(),
                    error: error.located(|line| section.location(&name, line)),
                })?;
            from_spirv(&compiled.words, &spirv_options)
        }
        _ => {
            let stage = match (glsl::stage_for_extension(ext), ext) {
                (Some(stage), _) => stage,
                (None, "glsl") => options
                    .stage
                    .ok_or_else(|| LoadError::NoStage { path: name.clone() })?,
                (None, _) => return Err(LoadError::UnknownKind { path: name.clone() }),
            };
            let source = std::fs::read_to_string(path).map_err(io)?;
            let glsl_error = |error: glsl::GlslError| LoadError::Glsl {
                path: name.clone(),
                error: error.located(|line| format!("{name}:{line}")),
            };
            let compiled = glsl::Glslang::find()
                .map_err(glsl_error)?
                .compile_cascade(&source, stage)
                .map_err(glsl_error)?;
            from_spirv(&compiled.words, &spirv_options)
        }
    }
}

/// A `.shader_test`'s first section of `stage`, as `shader_runner` compiles it.
fn shader_test_stage(path: &Path, stage: Stage) -> Result<shader_test::StageSource, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let (mut sources, _) = shader_test::parse_sources(&text).map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent() {
        sources.load_shader_files(dir).map_err(|e| e.to_string())?;
    }
    shader_test::stage_sources(&sources)
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|section| section.stage == stage)
        .ok_or_else(|| format!("no {} shader section", stage.name()))
}
