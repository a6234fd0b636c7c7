//! GLSL → SPIR-V through `glslangValidator`, an external process.
//!
//! [`Glslang::compile`] runs one recipe (`glslangValidator -V -R --amb --aml --stdin -S <stage>`:
//! Vulkan SPIR-V with relaxed rules, loose uniforms gathered in a default uniform block,
//! bindings and locations assigned automatically). [`Glslang::compile_cascade`] is what real
//! shaders need: the source as written first, then the [legacy rewrite](rewrite_legacy) for
//! old GLSL, then the latest version (`--glsl-version 460`, `320es`) for shaders that use
//! features of later versions, then that source with the array sizes glslang does not fold
//! evaluated by shrew (see [`Attempt`]). [`Glslang::compile_units_cascade`] does the same for
//! the several compilation units of one stage, which glslang links.
//!
//! Every run's result, failures included, is cached on disk by a hash of glslang's version,
//! the arguments, the stage and the source (see [`Glslang::cache_dir`]): a glslang process
//! costs ~50 ms, a cache hit microseconds. A [`Glslang`] can be shared between threads.

mod cache;
mod fold;
mod legacy;
mod lexer;

pub use legacy::{LegacyInterface, LegacyUniform, LegacyVariable, RENAMED_PREFIX, rewrite_legacy};

use cache::{CachedOutcome, SpirvCache};
use shrew_engine::ir::Stage;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable naming the `glslangValidator` binary to use instead of the one on
/// `PATH`.
pub const GLSLANG_ENV: &str = "GLSLANG_VALIDATOR";

/// The stage a file extension stands for: `vert`, `frag`, `comp`, `geom`, `tesc`, `tese`
/// (with or without the leading dot). `.glsl` says nothing about the stage: `None`, the caller
/// has to be told.
pub fn stage_for_extension(extension: &str) -> Option<Stage> {
    match extension.strip_prefix('.').unwrap_or(extension) {
        "vert" => Some(Stage::Vertex),
        "tesc" => Some(Stage::TessCtrl),
        "tese" => Some(Stage::TessEval),
        "geom" => Some(Stage::Geometry),
        "frag" => Some(Stage::Fragment),
        "comp" => Some(Stage::Compute),
        _ => None,
    }
}

/// glslang's name of a stage, as `-S` takes it (also the usual file extension).
pub fn glslang_stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Vertex => "vert",
        Stage::TessCtrl => "tesc",
        Stage::TessEval => "tese",
        Stage::Geometry => "geom",
        Stage::Fragment => "frag",
        Stage::Compute => "comp",
    }
}

/// A GLSL language version: 110 for GLSL 1.10, 300 ES for GLSL ES 3.00.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlslVersion {
    /// The version times 100 (110, 330, 460; 100 for ES 1.00).
    pub number: u32,
    /// Whether this is a GLSL ES version.
    pub es: bool,
}

impl GlslVersion {
    /// A desktop GLSL version.
    pub const fn desktop(number: u32) -> Self {
        GlslVersion { number, es: false }
    }

    /// A GLSL ES version.
    pub const fn es(number: u32) -> Self {
        GlslVersion { number, es: true }
    }

    /// What follows `#version`: `330`, `300 es`, and `100` for ES 1.00 (which takes no
    /// profile), as piglit writes it.
    pub fn directive(self) -> String {
        if self.es && self.number != 100 {
            format!("{} es", self.number)
        } else {
            self.number.to_string()
        }
    }

    /// The value of glslang's `--glsl-version`: `330`, `310es`.
    pub fn glslang_name(self) -> String {
        if self.es && self.number != 100 {
            format!("{}es", self.number)
        } else {
            self.number.to_string()
        }
    }
}

impl fmt::Display for GlslVersion {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let es = if self.es { " ES" } else { "" };
        write!(f, "GLSL{es} {}.{:02}", self.number / 100, self.number % 100)
    }
}

/// A shader's `#version` directive.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeclaredVersion {
    /// The version (`#version 100` is ES 1.00, whose directive names no profile).
    pub version: GlslVersion,
    /// `#version ... compatibility`.
    pub compatibility: bool,
    /// The 1-based line of the directive.
    pub line: usize,
}

/// The first `#version` directive of `source`, if it has one that parses.
pub fn declared_version(source: &str) -> Option<DeclaredVersion> {
    let directive = lexer::tokenize(source).into_iter().find(|token| {
        token.kind == lexer::TokenKind::Directive && lexer::directive_name(token.text) == "version"
    })?;
    let arguments = lexer::directive_arguments(directive.text);
    let number: u32 = arguments.first()?.parse().ok()?;
    let profile = arguments.get(1).copied();
    Some(DeclaredVersion {
        version: GlslVersion {
            number,
            es: profile == Some("es") || number == 100,
        },
        compatibility: profile == Some("compatibility"),
        line: directive.line,
    })
}

/// `#extension` directives glslang does not know (it fails on `require`) although the features
/// they enable are core in the versions the cascade retries with (or, for
/// `GL_ARB_shader_precision`, only about accuracy). [`Glslang::compile_cascade`] blanks them
/// out on its retries.
pub const UNSUPPORTED_EXTENSIONS: [&str; 6] = [
    "GL_ARB_shader_precision",
    "GL_ARB_arrays_of_arrays",
    "GL_ARB_fragment_layer_viewport",
    "GL_ARB_shading_language_420pack",
    "GL_ARB_texture_query_levels",
    "GL_EXT_gpu_shader4",
];

/// `source` with its `#extension` lines for [`UNSUPPORTED_EXTENSIONS`] replaced by empty lines
/// (so line numbers do not move).
pub fn drop_unsupported_extensions(source: &str) -> String {
    lexer::tokenize(source)
        .into_iter()
        .map(|token| {
            let unsupported = token.kind == lexer::TokenKind::Directive
                && lexer::directive_name(token.text) == "extension"
                && lexer::directive_arguments(token.text)
                    .first()
                    .is_some_and(|name| UNSUPPORTED_EXTENSIONS.contains(name));
            if unsupported {
                "\n".repeat(token.text.matches('\n').count())
            } else {
                token.text.to_owned()
            }
        })
        .collect()
}

/// Options of one [`Glslang::compile`] run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Compile as this version whatever `#version` says (`--glsl-version`).
    pub glsl_version: Option<GlslVersion>,
    /// Compile as OpenGL GLSL for OpenGL SPIR-V (`-G`) instead of Vulkan GLSL (`-V`): the
    /// words Vulkan GLSL reserves (`sampler`, `texture`, ...) are names again, and loose
    /// uniforms need no relaxed rules.
    pub opengl: bool,
    /// SPIR-V 1.3 (`--target-env spirv1.3`) instead of 1.0: the version the `GroupNonUniform`
    /// instructions of GL_KHR_shader_subgroup need.
    pub spirv_1_3: bool,
}

/// Which attempt of [`Glslang::compile_cascade`] produced the SPIR-V.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Attempt {
    /// The source as given, with the base recipe.
    AsWritten,
    /// The [legacy rewrite](rewrite_legacy), compiled as GLSL 3.30 (4.30 for compute).
    LegacyRewrite,
    /// The source compiled as the latest version glslang knows, GLSL 4.60 (or ES 3.20 for
    /// ES 3.x shaders), after the legacy rewrite if the shader needs it: later versions accept
    /// what older ones refuse, such as `const` variables with non-constant initializers or,
    /// for SPIR-V, ES 3.00 itself.
    LatestVersion,
    /// The last attempt's source compiled as OpenGL GLSL (`-G`), for shaders that are valid
    /// OpenGL GLSL but not Vulkan GLSL.
    OpenGl,
    /// The latest version's source preprocessed, with the array sizes glslang does not fold
    /// (built-in functions of constants) evaluated by shrew (see `fold.rs`), as Vulkan or
    /// OpenGL GLSL.
    FoldedConstants,
}

impl Attempt {
    /// A short name for reports: `as-written`, `legacy-rewrite`, `latest-version`, `opengl`.
    pub fn name(self) -> &'static str {
        match self {
            Attempt::AsWritten => "as-written",
            Attempt::LegacyRewrite => "legacy-rewrite",
            Attempt::LatestVersion => "latest-version",
            Attempt::OpenGl => "opengl",
            Attempt::FoldedConstants => "folded-constants",
        }
    }
}

/// The result of [`Glslang::compile_cascade`].
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    /// The SPIR-V module.
    pub words: Vec<u32>,
    /// The attempt that succeeded.
    pub attempt: Attempt,
    /// What the legacy rewrite introduced, when the successful attempt compiled its output.
    pub legacy_interface: Option<LegacyInterface>,
}

/// Why GLSL did not become SPIR-V.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GlslError {
    /// There is no `glslangValidator` to run.
    #[error(
        "glslangValidator not found ({reason}); install it with `apt-get install glslang-tools` \
         (Debian and Ubuntu package glslang-tools), or set {GLSLANG_ENV} to its path"
    )]
    NotFound { reason: String },
    /// Starting glslang or talking to it failed (an I/O error).
    #[error("could not run `{program}`: {message}")]
    Run { program: String, message: String },
    /// glslang compiled the shader and refused it; `diagnostics` are its error lines.
    #[error("glslang rejected the {stage_name} shader:\n{diagnostics}", stage_name = .stage.name())]
    Rejected { stage: Stage, diagnostics: String },
    /// glslang ended abnormally (a crash, a usage error): not cached.
    #[error("`{program}` failed ({status}) on the {stage_name} shader:\n{diagnostics}", stage_name = .stage.name())]
    Failed {
        program: String,
        stage: Stage,
        status: String,
        diagnostics: String,
    },
    /// glslang said it succeeded but its output file is missing or not SPIR-V.
    #[error("`{program}` produced no valid SPIR-V: {reason}")]
    BadOutput { program: String, reason: String },
}

impl GlslError {
    /// The source line of the first error glslang reported (`ERROR: stdin:12: ...`).
    pub fn first_error_line(&self) -> Option<usize> {
        let (GlslError::Rejected { diagnostics, .. } | GlslError::Failed { diagnostics, .. }) =
            self
        else {
            return None;
        };
        diagnostics.lines().find_map(|line| {
            let location = line.strip_prefix("ERROR: ")?;
            let mut parts = location.splitn(3, ':');
            let _source_name = parts.next()?;
            parts.next()?.trim().parse().ok()
        })
    }

    /// The error with the source location of each of glslang's messages (`stdin:LINE`, as
    /// glslang names the source it reads from standard input) replaced by `locate(LINE)`, the
    /// place of that line in the user's file (`shader.frag:12`).
    pub fn located(self, locate: impl Fn(usize) -> String) -> GlslError {
        let relocate = |diagnostics: String| {
            let lines: Vec<String> = diagnostics
                .lines()
                .map(|line| locate_message(line, &locate))
                .collect();
            lines.join("\n")
        };
        match self {
            GlslError::Rejected { stage, diagnostics } => GlslError::Rejected {
                stage,
                diagnostics: relocate(diagnostics),
            },
            GlslError::Failed {
                program,
                stage,
                status,
                diagnostics,
            } => GlslError::Failed {
                program,
                stage,
                status,
                diagnostics: relocate(diagnostics),
            },
            other => other,
        }
    }

    /// Whether glslang only refused the shader's `#version` or profile (so another attempt's
    /// diagnostics say more about the shader).
    fn is_version_refusal(&self) -> bool {
        matches!(self, GlslError::Rejected { diagnostics, .. } if diagnostics.contains("#version:"))
    }

    /// Whether glslang compiled the shader's compilation units but could not link them: its
    /// errors are all link errors (it reports a failed link after compile errors too).
    pub fn is_link_error(&self) -> bool {
        let GlslError::Rejected { diagnostics, .. } = self else {
            return false;
        };
        let mut errors = diagnostics
            .lines()
            .filter(|line| line.starts_with("ERROR: "))
            .peekable();
        errors.peek().is_some() && errors.all(|line| line.starts_with("ERROR: Linking "))
    }

    /// Whether glslang refused a feature for the SPIR-V version (subgroup operations).
    fn needs_spirv_1_3(&self) -> bool {
        matches!(self, GlslError::Rejected { diagnostics, .. }
            if diagnostics.contains("requires SPIR-V 1.3"))
    }
}

/// One line of glslang's diagnostics (`ERROR: stdin:12: message`) with its location given by
/// `locate`; a line without one is kept as it is.
fn locate_message(line: &str, locate: &dyn Fn(usize) -> String) -> String {
    // The location follows the severity (`ERROR: `, `WARNING: `, ...).
    let start = line.find(": ").map_or(0, |i| i + 2);
    let (severity, rest) = line.split_at(start);
    rest.strip_prefix("stdin:")
        .and_then(|tail| tail.split_once(':'))
        .and_then(|(number, message)| {
            let number = number.parse().ok()?;
            Some(format!("{severity}{}:{message}", locate(number)))
        })
        .unwrap_or_else(|| line.to_string())
}

/// A unique suffix for temporary file names: the process id and a counter.
fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A file under the system temporary directory, removed when dropped.
struct TempFile {
    path: PathBuf,
}

impl TempFile {
    fn new(extension: &str) -> Self {
        let name = format!("shrew-glslang-{}.{extension}", unique_suffix());
        TempFile {
            path: std::env::temp_dir().join(name),
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // It may not exist (glslang failed before writing it).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The module a file of the SPIR-V cache holds (see [`Glslang::cache_dir`]); `None` when the
/// entry is glslang's rejection of its shader, or does not check out. For tools that sample
/// what glslang compiled (the differential test against `spirv-val`).
pub fn cached_spirv(path: &Path) -> Option<Vec<u32>> {
    match SpirvCache::load_file(path)? {
        CachedOutcome::Spirv(words) => Some(words),
        CachedOutcome::Rejected(_) => None,
    }
}

/// The SPIR-V cache's directory when it is not given: see [`Glslang::cache_dir`].
pub fn default_cache_dir() -> Option<PathBuf> {
    SpirvCache::default_dir()
}

/// SPIR-V magic number, the first word of every module.
const SPIRV_MAGIC: u32 = 0x0723_0203;

/// Decodes a SPIR-V binary in either byte order; `None` if it is not one (length not a whole
/// number of words, shorter than the 5-word header, wrong magic number).
fn spirv_words(bytes: &[u8]) -> Option<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) || bytes.len() < 20 {
        return None;
    }
    let words = bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]);
    let first = [bytes[0], bytes[1], bytes[2], bytes[3]];
    if u32::from_le_bytes(first) == SPIRV_MAGIC {
        Some(words.map(u32::from_le_bytes).collect())
    } else if u32::from_be_bytes(first) == SPIRV_MAGIC {
        Some(words.map(u32::from_be_bytes).collect())
    } else {
        None
    }
}

/// glslang's output reduced to what explains a failure: its `ERROR:` lines when there are
/// any (without the closing "N compilation errors" summary), else every non-blank line but
/// the echoed input name.
fn trim_diagnostics(stdout: &[u8], stderr: &[u8]) -> String {
    let stdout = String::from_utf8_lossy(stdout);
    let stderr = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .map(str::trim_end)
        .filter(|line| {
            let noise = line.is_empty()
                || *line == "stdin"
                || line.starts_with("SPIR-V is not generated")
                || (line.starts_with("ERROR: ") && line.ends_with("No code generated."));
            !noise
        })
        .collect();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.starts_with("ERROR: "))
        .collect();
    if errors.is_empty() {
        lines.join("\n")
    } else {
        errors.join("\n")
    }
}

/// The `glslangValidator` binary, its version, and the SPIR-V cache.
#[derive(Clone, Debug)]
pub struct Glslang {
    program: PathBuf,
    version: String,
    cache: Option<SpirvCache>,
}

impl Glslang {
    /// Finds `glslangValidator`: the path in the environment variable [`GLSLANG_ENV`] if set,
    /// else the first one on `PATH`. Runs it once for its version (part of every cache key).
    /// The cache is in the default directory (see [`cache_dir`](Self::cache_dir)).
    pub fn find() -> Result<Glslang, GlslError> {
        if let Some(program) = std::env::var_os(GLSLANG_ENV).filter(|value| !value.is_empty()) {
            return Glslang::at(program);
        }
        let on_path = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("glslangValidator"))
                .find(|candidate| candidate.is_file())
        });
        match on_path {
            Some(program) => Glslang::at(program),
            None => Err(GlslError::NotFound {
                reason: "no glslangValidator on PATH".into(),
            }),
        }
    }

    /// Uses the `glslangValidator` at `program` (a path, or a name looked up on `PATH`).
    pub fn at(program: impl Into<PathBuf>) -> Result<Glslang, GlslError> {
        let program = program.into();
        let output = Command::new(&program)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => GlslError::NotFound {
                    reason: format!("{} does not exist", program.display()),
                },
                _ => GlslError::Run {
                    program: program.display().to_string(),
                    message: error.to_string(),
                },
            })?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if !output.status.success() || version.is_empty() {
            return Err(GlslError::Run {
                program: program.display().to_string(),
                message: format!(
                    "`--version` failed ({}): {}",
                    output.status,
                    trim_diagnostics(&output.stdout, &output.stderr)
                ),
            });
        }
        Ok(Glslang {
            program,
            version,
            cache: SpirvCache::default_dir().map(SpirvCache::new),
        })
    }

    /// For tests: glslang without the user's cache, or `None` (and a note on stderr) when it is
    /// not installed. With `SHREW_REQUIRE_GLSLANG` set (the test script installs glslang and
    /// sets it) a missing glslang panics, so no test passes vacuously.
    #[doc(hidden)]
    pub fn for_tests() -> Option<Glslang> {
        match Glslang::find() {
            Ok(glslang) => Some(glslang.without_cache()),
            Err(error) if std::env::var_os("SHREW_REQUIRE_GLSLANG").is_some() => panic!("{error}"),
            Err(error) => {
                eprintln!("skipping a test that needs glslangValidator: {error}");
                None
            }
        }
    }

    /// The same compiler without the SPIR-V cache: every compile runs glslang.
    pub fn without_cache(self) -> Glslang {
        Glslang {
            cache: None,
            ..self
        }
    }

    /// The same compiler with its SPIR-V cache in `dir` (created when first written).
    pub fn with_cache_dir(self, dir: impl Into<PathBuf>) -> Glslang {
        Glslang {
            cache: Some(SpirvCache::new(dir.into())),
            ..self
        }
    }

    /// The binary this runs.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// What `glslangValidator --version` printed.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The SPIR-V cache directory, `None` when caching is off. By default it is
    /// `$SHREW_CACHE_DIR`, else `$XDG_CACHE_HOME/shrew/spirv`, else `$HOME/.cache/shrew/spirv`.
    /// Entries are written atomically (a temporary file renamed into place), so processes and
    /// threads can share the directory; a corrupt entry is ignored and replaced. Delete the
    /// directory to clear the cache.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(SpirvCache::dir)
    }

    /// The arguments of a run that decide its result (the cache key includes them).
    fn recipe_arguments(options: &CompileOptions) -> Vec<String> {
        let mode: &[&str] = if options.opengl {
            &["-G"]
        } else {
            &["-V", "-R"]
        };
        let mut arguments: Vec<String> = mode
            .iter()
            .chain(&["--amb", "--aml"])
            .map(|a| a.to_string())
            .collect();
        if let Some(version) = options.glsl_version {
            arguments.push("--glsl-version".into());
            arguments.push(version.glslang_name());
        }
        if options.spirv_1_3 {
            arguments.push("--target-env".into());
            arguments.push("spirv1.3".into());
        }
        arguments
    }

    /// Compiles `source` as a `stage` shader with one glslang run (or a cache hit):
    /// `glslangValidator -V -R --amb --aml [--glsl-version N] --stdin -S <stage> -o <tmp>` (`-G`
    /// for [`CompileOptions::opengl`]).
    /// On failure, the error holds glslang's diagnostics.
    pub fn compile(
        &self,
        source: &str,
        stage: Stage,
        options: &CompileOptions,
    ) -> Result<Vec<u32>, GlslError> {
        self.compile_units(&[source], stage, options)
    }

    /// [`Glslang::compile`] of the compilation units that make one stage of a program (as GL
    /// links several shaders of a stage): more than one is linked by glslang (`-l` over one
    /// file per unit).
    pub fn compile_units(
        &self,
        units: &[&str],
        stage: Stage,
        options: &CompileOptions,
    ) -> Result<Vec<u32>, GlslError> {
        let mut recipe = Glslang::recipe_arguments(options);
        if units.len() > 1 {
            recipe.push("-l".into());
        }
        let cached = self.cache.as_ref().map(|cache| {
            let mut key_parts: Vec<&str> = vec![&self.version, glslang_stage_name(stage)];
            key_parts.extend(recipe.iter().map(String::as_str));
            key_parts.extend(units);
            (cache, SpirvCache::key(&key_parts))
        });
        if let Some((cache, key)) = &cached {
            match cache.load(key) {
                Some(CachedOutcome::Spirv(words)) => return Ok(words),
                Some(CachedOutcome::Rejected(diagnostics)) => {
                    return Err(GlslError::Rejected { stage, diagnostics });
                }
                None => {}
            }
        }
        let result = self.run(units, stage, &recipe);
        if let Some((cache, key)) = &cached {
            match &result {
                Ok(words) => cache.store(key, &CachedOutcome::Spirv(words.clone())),
                Err(GlslError::Rejected { diagnostics, .. }) => {
                    cache.store(key, &CachedOutcome::Rejected(diagnostics.clone()));
                }
                Err(_) => {}
            }
        }
        result
    }

    /// Runs glslang once: one unit from standard input, several from files named for the
    /// stage.
    fn run(&self, units: &[&str], stage: Stage, recipe: &[String]) -> Result<Vec<u32>, GlslError> {
        let program_name = || self.program.display().to_string();
        let output_file = TempFile::new("spv");
        let mut command = Command::new(&self.program);
        command.args(recipe);
        let (source, _unit_files) = match units {
            [source] => {
                // glslang 12 wants `--stdin` before `-S`.
                command.args(["--stdin", "-S", glslang_stage_name(stage)]);
                (*source, Vec::new())
            }
            _ => {
                let mut files = Vec::new();
                for unit in units {
                    let file = TempFile::new(glslang_stage_name(stage));
                    std::fs::write(&file.path, unit).map_err(|error| GlslError::Run {
                        program: program_name(),
                        message: format!("writing {}: {error}", file.path.display()),
                    })?;
                    command.arg(&file.path);
                    files.push(file);
                }
                ("", files)
            }
        };
        command.arg("-o").arg(&output_file.path);
        let output = run_with_input(&mut command, source).map_err(|error| GlslError::Run {
            program: program_name(),
            message: error.to_string(),
        })?;
        let diagnostics = trim_diagnostics(&output.stdout, &output.stderr);
        // glslang exits with 2 when compiling fails, 3 when linking fails.
        match output.status.code() {
            Some(0) => {}
            Some(2 | 3) => return Err(GlslError::Rejected { stage, diagnostics }),
            _ => {
                return Err(GlslError::Failed {
                    program: program_name(),
                    stage,
                    status: output.status.to_string(),
                    diagnostics,
                });
            }
        }
        let bytes = std::fs::read(&output_file.path).map_err(|error| GlslError::BadOutput {
            program: program_name(),
            reason: format!("reading {}: {error}", output_file.path.display()),
        })?;
        spirv_words(&bytes).ok_or_else(|| GlslError::BadOutput {
            program: program_name(),
            reason: format!("{} bytes that are not a SPIR-V module", bytes.len()),
        })
    }

    /// Compiles a real-world shader the way that works for most of piglit (see the module
    /// documentation): the source as written; if glslang refuses it and it is legacy GLSL
    /// (below 3.30, ES 1.00, compatibility profile, or using `gl_FragColor`, `attribute`,
    /// `varying`, ...), the [legacy rewrite](rewrite_legacy) compiled as 3.30 (4.30 for
    /// compute); if that fails too, or for desktop GLSL 1.40 and later, the source (rewritten
    /// if legacy) compiled as 4.60; ES 3.x shaders are retried as ES 3.20. The retries blank
    /// out the `#extension` lines of [`UNSUPPORTED_EXTENSIONS`].
    ///
    /// On total failure the error is the first attempt's, unless glslang only refused its
    /// `#version` there; then the first later attempt's whose diagnostics are about the
    /// shader itself.
    pub fn compile_cascade(&self, source: &str, stage: Stage) -> Result<Compiled, GlslError> {
        self.compile_units_cascade(&[source], stage)
    }

    /// [`Glslang::compile_cascade`] of the compilation units of one stage, linked together
    /// ([`Glslang::compile_units`]): each attempt treats every unit as it would one source,
    /// and the legacy rewrite's interface is that of all units.
    pub fn compile_units_cascade(
        &self,
        units: &[&str],
        stage: Stage,
    ) -> Result<Compiled, GlslError> {
        let mut base = CompileOptions::default();
        let mut first = self.compile_units(units, stage, &base);
        // Every attempt targets SPIR-V 1.3 once the shader needs it.
        if first.as_ref().is_err_and(GlslError::needs_spirv_1_3) {
            base.spirv_1_3 = true;
            first = self.compile_units(units, stage, &base);
        }
        let first_error = match first {
            Ok(words) => {
                return Ok(Compiled {
                    words,
                    attempt: Attempt::AsWritten,
                    legacy_interface: None,
                });
            }
            // Retrying cannot help when glslang itself did not work.
            Err(error @ GlslError::Rejected { .. }) => error,
            Err(error) => return Err(error),
        };
        let mut errors = vec![first_error];
        let cleaned: Vec<String> = units
            .iter()
            .map(|u| drop_unsupported_extensions(u))
            .collect();
        let legacy = units
            .iter()
            .any(|unit| legacy::needs_legacy_rewrite(unit, stage))
            .then(|| {
                let mut interface = LegacyInterface::default();
                let rewritten: Vec<String> = cleaned
                    .iter()
                    .map(|unit| {
                        let (text, unit_interface) = rewrite_legacy(unit, stage);
                        interface.merge(unit_interface);
                        text
                    })
                    .collect();
                (rewritten, interface)
            });
        if let Some((rewritten, interface)) = &legacy {
            let version = (units.iter())
                .map(|unit| legacy::rewritten_version(unit, stage))
                .max_by_key(|version| version.number)
                .expect("a stage has a unit");
            let options = CompileOptions {
                glsl_version: Some(version),
                ..base.clone()
            };
            match self.compile_units(&as_strs(rewritten), stage, &options) {
                Ok(words) => {
                    return Ok(Compiled {
                        words,
                        attempt: Attempt::LegacyRewrite,
                        legacy_interface: Some(interface.clone()),
                    });
                }
                Err(error) => errors.push(error),
            }
        }
        let latest = match units.iter().find_map(|unit| declared_version(unit)) {
            _ if legacy.is_some() => Some(GlslVersion::desktop(460)),
            Some(declared) if declared.version.es && declared.version.number >= 300 => {
                Some(GlslVersion::es(320))
            }
            Some(declared) if !declared.version.es && declared.version.number >= 140 => {
                Some(GlslVersion::desktop(460))
            }
            _ => None,
        };
        if let Some(latest) = latest {
            let (texts, legacy_interface) = match legacy {
                Some((rewritten, interface)) => (rewritten, Some(interface)),
                None => (cleaned, None),
            };
            let mut options = CompileOptions {
                glsl_version: Some(latest),
                ..base
            };
            for attempt in [Attempt::LatestVersion, Attempt::OpenGl] {
                options.opengl = attempt == Attempt::OpenGl;
                match self.compile_units(&as_strs(&texts), stage, &options) {
                    Ok(words) => {
                        return Ok(Compiled {
                            words,
                            attempt,
                            legacy_interface,
                        });
                    }
                    Err(error) => errors.push(error),
                }
            }
            if errors.iter().any(fold::needs_folding) {
                let folded: Vec<String> = (texts.iter())
                    .map(|text| {
                        self.fold_array_sizes(text, stage)
                            .unwrap_or_else(|| text.clone())
                    })
                    .collect();
                for opengl in [false, true].into_iter().filter(|_| folded != texts) {
                    options.opengl = opengl;
                    match self.compile_units(&as_strs(&folded), stage, &options) {
                        Ok(words) => {
                            return Ok(Compiled {
                                words,
                                attempt: Attempt::FoldedConstants,
                                legacy_interface,
                            });
                        }
                        Err(error) => errors.push(error),
                    }
                }
            }
        }
        let most_informative = errors
            .iter()
            .position(|error| !error.is_version_refusal())
            .unwrap_or(0);
        Err(errors.swap_remove(most_informative))
    }
}

/// Runs `command` with `input` on its standard input and collects its output. Standard input
/// is fed from another thread while this one collects the output, so that neither side can
/// block on a full pipe; a write error means the program exited early, which its status says.
fn run_with_input(command: &mut Command, input: &str) -> std::io::Result<std::process::Output> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdin = child.stdin.take();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input.as_bytes());
            }
        });
        child.wait_with_output()
    })
}

/// Borrowed views of `texts`.
fn as_strs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_and_extensions() {
        for stage in Stage::ALL {
            assert_eq!(stage_for_extension(glslang_stage_name(stage)), Some(stage));
        }
        assert_eq!(stage_for_extension(".frag"), Some(Stage::Fragment));
        assert_eq!(stage_for_extension(".glsl"), None);
        assert_eq!(stage_for_extension(""), None);
    }

    #[test]
    fn version_texts() {
        assert_eq!(GlslVersion::desktop(110).directive(), "110");
        assert_eq!(GlslVersion::es(300).directive(), "300 es");
        assert_eq!(GlslVersion::es(100).directive(), "100");
        assert_eq!(GlslVersion::es(310).glslang_name(), "310es");
        assert_eq!(GlslVersion::desktop(460).glslang_name(), "460");
        assert_eq!(GlslVersion::desktop(110).to_string(), "GLSL 1.10");
        assert_eq!(GlslVersion::es(300).to_string(), "GLSL ES 3.00");
    }

    #[test]
    fn declared_versions() {
        let declared = declared_version("// header\n  #version 150 compatibility\n").unwrap();
        assert_eq!(declared.version, GlslVersion::desktop(150));
        assert!(declared.compatibility);
        assert_eq!(declared.line, 2);
        assert_eq!(
            declared_version("#version 100\n").unwrap().version,
            GlslVersion::es(100)
        );
        assert_eq!(
            declared_version("#version 310 es\n").unwrap().version,
            GlslVersion::es(310)
        );
        assert_eq!(declared_version("/* #version 110 */ void main() {}"), None);
        assert_eq!(declared_version("#version x"), None);
    }

    #[test]
    fn unsupported_extensions_become_blank_lines() {
        let source = "#version 150\n#extension GL_ARB_shader_precision : require\n#extension GL_ARB_gpu_shader5 : enable\nvoid main() {}\n";
        assert_eq!(
            drop_unsupported_extensions(source),
            "#version 150\n\n#extension GL_ARB_gpu_shader5 : enable\nvoid main() {}\n"
        );
    }

    #[test]
    fn diagnostics_keep_the_error_lines() {
        let stdout = b"stdin\nWARNING: stdin:1: varying deprecated\nERROR: stdin:6: 'x' : undeclared identifier \nERROR: 1 compilation errors.  No code generated.\n\n\nSPIR-V is not generated for failed compile or link\n";
        let diagnostics = trim_diagnostics(stdout, b"");
        assert_eq!(diagnostics, "ERROR: stdin:6: 'x' : undeclared identifier");
        let error = GlslError::Rejected {
            stage: Stage::Fragment,
            diagnostics,
        };
        assert_eq!(error.first_error_line(), Some(6));
        assert!(
            error
                .to_string()
                .starts_with("glslang rejected the fragment shader:\nERROR")
        );
        assert_eq!(
            trim_diagnostics(b"stdin\n", b"Segmentation fault\n"),
            "Segmentation fault"
        );
    }

    #[test]
    fn every_message_is_located_in_the_users_file() {
        let error = GlslError::Rejected {
            stage: Stage::Fragment,
            diagnostics: "WARNING: stdin:1: 'varying' : deprecated\nERROR: stdin:6: 'x' : \
                          undeclared identifier\nERROR: stdin:12: '' : compilation terminated\n\
                          Segmentation fault"
                .into(),
        };
        let located = error.located(|line| format!("a.frag:{}", line + 10));
        assert_eq!(
            located.to_string(),
            "glslang rejected the fragment shader:\nWARNING: a.frag:11: 'varying' : deprecated\n\
             ERROR: a.frag:16: 'x' : undeclared identifier\nERROR: a.frag:22: '' : compilation \
             terminated\nSegmentation fault"
        );
        assert_eq!(located.first_error_line(), Some(16));
    }

    #[test]
    fn spirv_words_in_both_byte_orders() {
        let words = [SPIRV_MAGIC, 0x0001_0000, 0, 5, 0];
        let little: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let big: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(spirv_words(&little).as_deref(), Some(&words[..]));
        assert_eq!(spirv_words(&big).as_deref(), Some(&words[..]));
        assert_eq!(spirv_words(&little[..19]), None);
        assert_eq!(spirv_words(&little[..16]), None);
        assert_eq!(spirv_words(&[0; 20]), None);
    }

    #[test]
    fn missing_binary_says_how_to_install() {
        let error = Glslang::at("/nonexistent/glslangValidator").unwrap_err();
        assert!(matches!(error, GlslError::NotFound { .. }));
        assert!(error.to_string().contains("apt-get install glslang-tools"));
    }

    const MODERN_FRAGMENT: &str =
        "#version 330\nout vec4 color;\nvoid main() { color = vec4(1.0); }\n";

    #[test]
    fn compiles_and_reports_errors_with_lines() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        assert!(glslang.version().contains("Glslang"));
        let words = glslang
            .compile(MODERN_FRAGMENT, Stage::Fragment, &CompileOptions::default())
            .unwrap();
        assert_eq!(words[0], SPIRV_MAGIC);
        let error = glslang
            .compile(
                "#version 330\nvoid main() {\n  undeclared = 1.0;\n}\n",
                Stage::Fragment,
                &CompileOptions::default(),
            )
            .unwrap_err();
        assert_eq!(error.first_error_line(), Some(3));
        assert!(
            error.to_string().contains("undeclared identifier"),
            "{error}"
        );
    }

    #[test]
    fn cascade_attempts() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        let compiled = glslang
            .compile_cascade(MODERN_FRAGMENT, Stage::Fragment)
            .unwrap();
        assert_eq!(
            (compiled.attempt, compiled.legacy_interface),
            (Attempt::AsWritten, None)
        );

        let legacy = "#version 110\nuniform sampler2D s;\nvoid main() { gl_FragColor = texture2D(s, vec2(0.0)); }\n";
        let compiled = glslang.compile_cascade(legacy, Stage::Fragment).unwrap();
        assert_eq!(compiled.attempt, Attempt::LegacyRewrite);
        let interface = compiled.legacy_interface.unwrap();
        assert_eq!(interface.outputs[0].name, "shrew_FragColor");

        // A `const` with a non-constant initializer needs GLSL 4.20.
        let newer = "#version 150\nuniform float u;\nout vec4 c;\nvoid main() { const float k = u; c = vec4(k); }\n";
        let compiled = glslang.compile_cascade(newer, Stage::Fragment).unwrap();
        assert_eq!(compiled.attempt, Attempt::LatestVersion);

        // `sampler` is a keyword of Vulkan GLSL only.
        let opengl = "#version 330\nuniform sampler2D s;\nout vec4 c;\n\
                      vec4 f(sampler2D sampler) { return texture(sampler, vec2(0.5)); }\n\
                      void main() { c = f(s); }\n";
        let compiled = glslang.compile_cascade(opengl, Stage::Fragment).unwrap();
        assert_eq!(compiled.attempt, Attempt::OpenGl);

        let es = "#version 300 es\nprecision mediump float;\nout vec4 c;\nvoid main() { c = vec4(1.0); }\n";
        assert_eq!(
            glslang
                .compile_cascade(es, Stage::Fragment)
                .unwrap()
                .attempt,
            Attempt::LatestVersion
        );
    }

    #[test]
    fn array_sizes_glslang_does_not_fold_are_evaluated() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        // A macro, a nested index and a built-in glslang does not fold.
        let shader = |size: &str| {
            format!(
                "#version 400\n#define SIZE(x) ({size})\nout vec4 c;\n\
                 void main() {{ float a[SIZE(7)]; int k[2] = int[2](3, 4);\n\
                 a[bitCount(2u)] = 1.0; c = vec4(a[k[1]], a.length(), 0.0, 1.0); }}\n"
            )
        };
        let compiled = glslang
            .compile_cascade(&shader("bitCount(uint(x)) + findMSB(16)"), Stage::Fragment)
            .unwrap();
        assert_eq!(compiled.attempt, Attempt::FoldedConstants);
        // 3 + 4 elements, so k[1] is in bounds; a size that folds to 0 is still refused.
        let zero = glslang.compile_cascade(&shader("bitCount(uint(x)) - 3"), Stage::Fragment);
        assert!(zero.is_err());
        let folded = glslang
            .fold_array_sizes(&shader("bitCount(uint(x)) - 3"), Stage::Fragment)
            .unwrap();
        assert!(
            folded.contains("float a[0]") && folded.contains("a[1]= 1.0"),
            "{folded}"
        );
    }

    #[test]
    fn units_of_a_stage_link_together() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        // Legacy units: each is rewritten, and the interface is that of both.
        let main = "#version 110\nvec4 colour();\nvoid main() { gl_FragColor = colour(); }\n";
        let colour = "#version 110\nuniform vec4 u;\nvec4 colour() { return u * gl_Color; }\n";
        let compiled = glslang
            .compile_units_cascade(&[main, colour], Stage::Fragment)
            .unwrap();
        assert_eq!(compiled.attempt, Attempt::LegacyRewrite);
        let interface = compiled.legacy_interface.unwrap();
        assert_eq!(interface.outputs[0].name, "shrew_FragColor");
        assert_eq!(interface.varyings[0].replaces, "gl_Color");
        // A function no unit defines is a link error; a unit alone does not link.
        let error = glslang
            .compile_units_cascade(&[main, "#version 110\nvoid unused() {}\n"], Stage::Fragment)
            .unwrap_err();
        assert!(error.is_link_error(), "{error}");
        let alone = glslang.compile_cascade(main, Stage::Fragment).unwrap_err();
        assert!(alone.is_link_error(), "{alone}");
        let syntax = glslang.compile_cascade("#version 110\nvoid main( {}", Stage::Fragment);
        let syntax = syntax.unwrap_err();
        assert!(!syntax.is_link_error(), "{syntax:?}");
    }

    #[test]
    fn cascade_failure_reports_the_shader_error_not_the_version() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        let error = glslang
            .compile_cascade(
                "#version 110\nvoid main() {\n  gl_FragColor = nope;\n}\n",
                Stage::Fragment,
            )
            .unwrap_err();
        assert!(!error.to_string().contains("#version"), "{error}");
        assert_eq!(error.first_error_line(), Some(3), "{error}");
    }

    #[test]
    fn cache_serves_results_and_survives_corruption() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        let dir =
            std::env::temp_dir().join(format!("shrew-glslang-cache-test-{}", unique_suffix()));
        let glslang = glslang.with_cache_dir(&dir);
        assert_eq!(glslang.cache_dir(), Some(dir.as_path()));
        let options = CompileOptions::default();
        let words = glslang
            .compile(MODERN_FRAGMENT, Stage::Fragment, &options)
            .unwrap();
        let bad = "#version 330\nvoid main() { nope; }\n";
        let error = glslang.compile(bad, Stage::Fragment, &options).unwrap_err();
        let entries = || -> Vec<PathBuf> {
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect()
        };
        assert_eq!(entries().len(), 2);
        // Cached: the same answers, no new entries.
        assert_eq!(
            glslang
                .compile(MODERN_FRAGMENT, Stage::Fragment, &options)
                .unwrap(),
            words
        );
        assert_eq!(
            glslang.compile(bad, Stage::Fragment, &options).unwrap_err(),
            error
        );
        assert_eq!(entries().len(), 2);
        // Corrupt entries are recompiled and replaced.
        for entry in entries() {
            std::fs::write(entry, b"corrupt").unwrap();
        }
        assert_eq!(
            glslang
                .compile(MODERN_FRAGMENT, Stage::Fragment, &options)
                .unwrap(),
            words
        );
        assert_eq!(
            glslang.compile(bad, Stage::Fragment, &options).unwrap_err(),
            error
        );
        // A different stage or option is a different entry.
        let options_460 = CompileOptions {
            glsl_version: Some(GlslVersion::desktop(460)),
            ..CompileOptions::default()
        };
        glslang
            .compile(MODERN_FRAGMENT, Stage::Fragment, &options_460)
            .unwrap();
        assert_eq!(entries().len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
