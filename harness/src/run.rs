//! The executor: runs one piglit executable test, every draw through the stages of the draw
//! contract, the reference interpreter's or a backend's on its emulator.
//!
//! A test is executable here when it has one fragment shader, at most one vertex shader (or
//! piglit's passthrough one), and `[test]` commands among `uniform`, `clear`, `clear color`,
//! `ortho`, `draw rect [ortho]`, `draw arrays` of points, triangles (lists, strips, fans) and
//! quads (lists, strips) from its `[vertex data]` ([`crate::vertex_data`]; one instance),
//! `tolerance`, the `probe` family, and the `texture rgbw`, `checkerboard`, `miptree`,
//! `shadow1D` and `shadow2D` textures ([`crate::textures`]) with the `texparameter`s the reference sampler has (a sampler uniform's value is its texture
//! unit, 0 unless set). Anything else is skipped with the reason, and so is a shader glslang
//! cannot compile. GL's fixed-function vertex stage stands in for a missing vertex shader. A
//! uniform with an initializer becomes a constant, unless the test sets it (then its initial
//! value is set before the first command).
//!
//! A draw runs the vertex shader on the rectangle's four vertices (`piglit_vertex`, a triangle
//! strip) or on the vertices drawn (a point becomes the square of its `gl_PointSize`),
//! rasterizes the triangles at pixel centres ([`crate::raster`]), and shades each
//! triangle on its own, as hardware does, from the varyings at its three vertices and every
//! pixel's barycentrics — only the pixels some probe of the test looks at, in whole 2×2 quads
//! whose other pixels run as helpers so derivatives stay right. Colour output 0 is clamped to
//! [0, 1] and quantized to the RGBA8 framebuffer. Probes compare with piglit's tolerance for
//! 8-bit channels (3/256), or the test's own `tolerance`.
//!
//! The stages are the reference interpreter's ([`crate::interpreter`]) unless a backend's
//! [`DrawStages`] are given: then the fragment shader always runs as the backend's kernel on
//! its emulator, and the vertex shader does when the backend has a vertex stage for its
//! hardware (else on the interpreter); a shader the backend cannot compile fails the test.

use crate::commands::{
    Command, Comparison, ExpectedColor, Probe, ProbeRegion, TestCommand, TextureImage,
};
use crate::compute;
use crate::initializer;
use crate::interpreter::{Interpreter, Vertices};
use crate::parse::{ShaderTest, parse_shader_test};
use crate::raster::{self, STRIP};
use crate::textures::{self, TextureUnits};
use shrew_engine::draw::{
    DrawStages, FragmentKernel, Primitive, QuadGrid, TriangleFragments, VertexKernel,
};
use shrew_engine::interp::memory::{Layout, LayoutRule};
use shrew_engine::interp::{Image, Resources, SamplerState, Texture};
use shrew_engine::ir::{Builtin, Mode, Shader, Stage, StructId, Type};
use shrew_engine::ops::BaseType;
use shrew_frontend::glsl::{Glslang, LegacyInterface, RENAMED_PREFIX};
use shrew_frontend::shader_test::{ShaderSection, ShaderSource, stage_sources};
use shrew_frontend::spirv;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::path::Path;

/// piglit's default window size.
const DEFAULT_SIZE: (u32, u32) = (250, 250);

/// The environment variable naming a test file (its file name) that [`run_file`] panics on,
/// so that tests can check what a batch does with a panic.
pub const PANIC_HOOK: &str = "SHREW_TEST_PANIC";

/// How a test ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

/// A test's status and, unless it passed, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub reason: Option<String>,
    /// Whether every shader of the test compiled through glslang (the pass rate counts these).
    pub compiled: bool,
    /// Whether it failed because a probe saw other values than it expects: everything compiled
    /// and ran, and computed something else.
    pub mismatch: bool,
}

impl Outcome {
    fn skip(reason: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Skip,
            reason: Some(reason.into()),
            compiled: false,
            mismatch: false,
        }
    }

    /// A failure of a test whose shaders compiled, for `reason`.
    pub fn fail(reason: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Fail,
            reason: Some(reason.into()),
            compiled: true,
            mismatch: false,
        }
    }
}

/// Runs one `.shader_test` file with every stage through `pipeline` and the draws on
/// `compiler`'s emulated stages.
pub fn run_file_through(
    path: &Path,
    glslang: &Glslang,
    pipeline: &shrew_targets::Pipeline,
    compiler: &dyn shrew_targets::Compiler,
) -> Outcome {
    let optimize = |s: &mut Shader| pipeline.run(s).map(|_| ());
    match compiler.draw_stages(None) {
        Ok(stages) => run_file(path, glslang, &optimize, Some(stages.as_ref())),
        Err(e) => Outcome::fail(e),
    }
}

/// Runs one `.shader_test` file; `optimize` runs on every translated stage before execution,
/// and `backend`'s stages, if given, run the draws (else the reference interpreter's).
pub fn run_file(
    path: &Path,
    glslang: &Glslang,
    optimize: &dyn Fn(&mut Shader) -> Result<(), String>,
    backend: Option<&dyn DrawStages>,
) -> Outcome {
    // A test-only hook: a batch must report a panicking test as failed and finish the others.
    if let Some(name) = std::env::var_os(PANIC_HOOK)
        && path.file_name() == Some(name.as_os_str())
    {
        panic!("{PANIC_HOOK} names this test");
    }
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return Outcome::fail(format!("cannot read the file: {e}")),
    };
    let mut test = match parse_shader_test(&text) {
        Ok(t) => t,
        Err(e) => return Outcome::fail(format!("cannot parse the test: {e}")),
    };
    if let Some(dir) = path.parent()
        && let Err(e) = test.sources.load_shader_files(dir)
    {
        return Outcome::skip(e.to_string());
    }
    if let Err(reason) = executable(&test).and_then(|()| constant_initialized_uniforms(&mut test)) {
        return Outcome::skip(reason);
    }
    // As a driver that does not expose an extension, the target skips what it cannot run.
    if let Some(stages) = backend
        && let Some((name, why)) = (test.requirements.extensions.iter())
            .find_map(|name| Some((name, stages.lacks_extension(name)?)))
    {
        return Outcome::skip(format!("{TARGET_LACKS}{name}: {why}"));
    }
    if is_compute(&test) {
        return run_compute(
            &test,
            path,
            glslang,
            optimize,
            backend.unwrap_or(&Interpreter::ROBUST),
        );
    }
    if test.sources.shaders_of(Stage::Vertex).count() == 0 {
        // GL's fixed-function vertex stage stands in for a missing vertex shader.
        test.sources.shaders.push(ShaderSection {
            stage: Stage::Vertex,
            source: ShaderSource::Glsl(FIXED_FUNCTION_VERTEX_SHADER.into()),
            line: 0,
        });
    }
    let stages = match compile(&test, path, glslang) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let mut vs = None;
    let mut fs = None;
    for (stage, mut shader, legacy) in stages {
        if let Err(e) = optimize(&mut shader) {
            return Outcome::fail(format!("{} shader: optimization failed: {e}", stage.name()));
        }
        match stage {
            Stage::Vertex => vs = Some((shader, legacy)),
            _ => fs = Some((shader, legacy)),
        }
    }
    let (Some(vs), Some(fs)) = (vs, fs) else {
        return Outcome::skip("no vertex and fragment shader pair");
    };
    let stages = backend.unwrap_or(&Interpreter::ROBUST);
    let kernel = match stages.compile_fragment(&fs.0) {
        Ok(k) => k,
        Err(e) => return Outcome::fail(format!("fragment shader: backend: {e}")),
    };
    // Stages without a vertex stage leave the vertices to the interpreter.
    let vertex_kernel = match stages.compile_vertex(&vs.0) {
        Ok(Some(k)) => k,
        Ok(None) => Box::new(Vertices {
            shader: vs.0.clone(),
            robust_access: true,
        }),
        Err(e) => return Outcome::fail(format!("vertex shader: backend: {e}")),
    };
    let mut ctx = match Context::new(&test, vs, fs, kernel, vertex_kernel) {
        Ok(c) => c,
        Err(e) => return Outcome::fail(e),
    };
    finish(ctx.execute(&test))
}

/// Why a test's commands stopped: a message, and whether a probe saw other values than it
/// expects (the test ran, and computed something else).
pub(crate) struct ExecFailure {
    pub(crate) message: String,
    pub(crate) mismatch: bool,
}

impl From<String> for ExecFailure {
    fn from(message: String) -> ExecFailure {
        ExecFailure {
            message,
            mismatch: false,
        }
    }
}

/// Whether the test's program has a compute shader.
fn is_compute(test: &ShaderTest) -> bool {
    test.sources.shaders_of(Stage::Compute).count() > 0
}

/// Runs a compute test's stage through `optimize` and `stages`' compute kernel.
fn run_compute(
    test: &ShaderTest,
    path: &Path,
    glslang: &Glslang,
    optimize: &dyn Fn(&mut Shader) -> Result<(), String>,
    stages: &dyn DrawStages,
) -> Outcome {
    let compiled = match compile(test, path, glslang) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let Some((_, mut shader, legacy)) = compiled.into_iter().next() else {
        return Outcome::skip("no compute shader");
    };
    if let Err(e) = optimize(&mut shader) {
        return Outcome::fail(format!("compute shader: optimization failed: {e}"));
    }
    let kernel = match stages.compile_compute(&shader) {
        Ok(k) => k,
        Err(e) => return Outcome::fail(format!("compute shader: backend: {e}")),
    };
    let cs = match StageState::new(shader, legacy) {
        Ok(cs) => cs,
        Err(e) => return Outcome::fail(e),
    };
    let size = test.requirements.window_size.unwrap_or(DEFAULT_SIZE);
    finish(compute::ComputeRun::new(test, cs, kernel, size).execute(test))
}

/// The outcome of a test whose commands ran to `result`.
fn finish(result: Result<(), ExecFailure>) -> Outcome {
    match result {
        Ok(()) => Outcome {
            status: Status::Pass,
            reason: None,
            compiled: true,
            mismatch: false,
        },
        Err(e) => Outcome {
            mismatch: e.mismatch,
            ..Outcome::fail(e.message)
        },
    }
}

/// The pixels of the first level of the texture on `unit` as a render target holds them
/// (8-bit colours), with its width and height.
pub(crate) fn target_pixels(
    textures: &TextureUnits,
    unit: u32,
) -> Result<(Vec<[u8; 4]>, u32, u32), String> {
    let level = (textures.units.get(&unit))
        .and_then(|(texture, _)| texture.levels.first())
        .ok_or_else(|| format!("the framebuffer is texture unit {unit}, which has none"))?;
    let pixels = (level.texels.iter())
        .map(|texel| texel.map(|bits| quantize(f32::from_bits(bits))))
        .collect();
    Ok((pixels, level.width, level.height))
}

/// `provoking vertex first|last`: whether the first vertex provokes.
fn provoking_vertex(command: &str) -> Option<bool> {
    match command.strip_prefix("provoking vertex ")?.trim() {
        "first" => Some(true),
        "last" => Some(false),
        _ => None,
    }
}

/// `enable` or `disable` of GL_PROGRAM_POINT_SIZE (GL_VERTEX_PROGRAM_POINT_SIZE before GL 3.2):
/// whether points take the vertex shader's `gl_PointSize`.
fn program_point_size(command: &str) -> Option<bool> {
    let (enable, cap) = match command.split_once(' ')? {
        ("enable", cap) => (true, cap),
        ("disable", cap) => (false, cap),
        _ => return None,
    };
    matches!(
        cap.trim(),
        "GL_PROGRAM_POINT_SIZE" | "GL_VERTEX_PROGRAM_POINT_SIZE"
    )
    .then_some(enable)
}

/// How the reason of a test skipped for an extension the target's hardware lacks begins.
const TARGET_LACKS: &str = "the target lacks ";

/// What GL's fixed-function vertex stage does for a test without a vertex shader: the vertex
/// through the fixed-function matrices, its colour, and its first texture coordinates through
/// the first texture matrix.
const FIXED_FUNCTION_VERTEX_SHADER: &str = "#version 110\n\
     void main() { gl_Position = ftransform(); gl_FrontColor = gl_Color;\n\
     gl_TexCoord[0] = gl_TextureMatrix[0] * gl_MultiTexCoord0; }\n";

/// Why a test cannot run here, if it cannot.
fn executable(test: &ShaderTest) -> Result<(), String> {
    if is_compute(test) {
        if test
            .sources
            .shaders
            .iter()
            .any(|s| s.stage != Stage::Compute)
        {
            return Err("links a compute shader with other shaders".into());
        }
        if let Some(section) = test.other_sections.first() {
            return Err(format!("uses a [{}] section", section.name));
        }
        return compute::executable(test);
    }
    for section in &test.sources.shaders {
        if !matches!(section.stage, Stage::Vertex | Stage::Fragment) {
            return Err(format!("uses a {} shader", section.stage.name()));
        }
    }
    if test.sources.shaders_of(Stage::Fragment).count() == 0 {
        return Err("has no fragment shader".into());
    }
    if let Some(section) = test.other_sections.first() {
        return Err(format!("uses a [{}] section", section.name));
    }
    let (mut depth_textures, mut intensity) = (0, 0);
    for c in &test.commands {
        match &c.command {
            Command::Uniform { .. }
            | Command::UboArrayIndex(_)
            | Command::ClearColor(_)
            | Command::Clear
            | Command::Ortho(_)
            | Command::Tolerance(_) => {}
            // Every test that gets here compiled, and its stages link as one draw; one that
            // expects the link to fail is decided when its stages compile.
            Command::Other(text) if text == "link success" || text == "link error" => {}
            // Every write is visible to what follows here.
            Command::Other(text) if text.starts_with("memory barrier") => {}
            Command::Other(text)
                if provoking_vertex(text).is_some() || program_point_size(text).is_some() => {}
            Command::ImageTexture { .. } => {}
            Command::Framebuffer(target) if compute::fb_texture(target).is_some() => {}
            Command::DrawRect { patch: false, .. } | Command::DrawRectTex { .. } => {}
            Command::DrawArrays {
                mode, instances, ..
            } => {
                if DrawMode::from_mode(mode).is_none() || instances.is_some_and(|n| n != 1) {
                    return Err(format!("uses `{}`", c.command.name()));
                }
            }
            // A test that probes nothing passes when its commands run (piglit's crash tests).
            Command::Probe(_)
            | Command::ProbeAtomicCounter { .. }
            | Command::ProbeSsbo { .. }
            | Command::AtomicCounters { .. }
            | Command::SetAtomicCounter { .. }
            | Command::Ssbo { .. }
            | Command::SsboSubdata { .. } => {}
            Command::Texture { image, .. } => {
                textures::make(image)?;
                depth_textures += matches!(image, TextureImage::Shadow { .. }) as u32;
            }
            Command::TexParameter { name, value, .. } => {
                textures::set_parameter(&mut SamplerState::default(), name, value)?;
                intensity += (name == "depth_mode") as u32;
            }
            other => return Err(format!("uses `{}`", other.name())),
        }
    }
    if depth_textures > intensity {
        // GL's default depth texture mode is luminance, (r, r, r, 1).
        return Err(
            "reads a depth texture in the luminance mode, which glslang's \
                    (r, r, r, r) for legacy shadow lookups does not give"
                .into(),
        );
    }
    Ok(())
}

/// Makes every uniform with an initializer in the test's GLSL a constant, in every stage that
/// declares it (`uniform T name = value;` → `const T name = value;`): glslang's SPIR-V drops
/// uniform initializers, and a uniform the test never sets keeps its initializer, which is then
/// that constant. A uniform the test sets stays a uniform without its initializer, whose value
/// ([`crate::initializer`]) a `uniform` command before the test's first sets; an initializer
/// of other than literals and constructors skips the test.
fn constant_initialized_uniforms(test: &mut ShaderTest) -> Result<(), String> {
    // Each section's declarations, found once (none in sections that are not GLSL text).
    let declarations: Vec<Vec<UniformDeclaration>> = test
        .sources
        .shaders
        .iter()
        .map(|section| match &section.source {
            ShaderSource::Glsl(source) => uniform_declarations(source),
            _ => Vec::new(),
        })
        .collect();
    let is_set = |name: &str| {
        test.commands.iter().any(|c| match &c.command {
            Command::Uniform { name: set, .. } => {
                set == name
                    || set.starts_with(&format!("{name}["))
                    || set.starts_with(&format!("{name}."))
            }
            _ => false,
        })
    };
    // Each initialized uniform's replacement declaration, and the commands setting the values
    // of those the test sets.
    let mut replacements: HashMap<String, String> = HashMap::new();
    let mut initial_values = Vec::new();
    for (section, found) in test.sources.shaders.iter().zip(&declarations) {
        let ShaderSource::Glsl(source) = &section.source else {
            continue;
        };
        for d in found {
            let Some(value) = &d.initializer else {
                continue;
            };
            let declarator = source[d.range.start + "uniform".len()..value.start - 1].trim_end();
            if !is_set(&d.name) {
                let declaration = &source[d.range.start + "uniform".len()..value.end];
                replacements.insert(d.name.clone(), format!("const{declaration}"));
                continue;
            }
            let initial = initializer::evaluate(&source[value.clone()], &struct_names(source))
                .map_err(|e| {
                    format!(
                        "sets uniform {}, whose initializer is not read: {e}",
                        d.name
                    )
                })?;
            // An unsized array takes its size from the initializer.
            let sized = declarator.replacen("[]", &format!("[{}]", initial.elements), 1);
            if replacements
                .insert(d.name.clone(), format!("uniform{sized}"))
                .is_none()
            {
                let glsl_type = declarator.split_whitespace().next().unwrap_or_default();
                initial_values.push(TestCommand {
                    line: test.commands.first().map_or(0, |c| c.line),
                    command: Command::Uniform {
                        glsl_type: glsl_type.to_string(),
                        name: d.name.clone(),
                        values: initial.scalars,
                    },
                });
            }
        }
    }
    for (section, found) in test.sources.shaders.iter_mut().zip(declarations) {
        let ShaderSource::Glsl(source) = &mut section.source else {
            continue;
        };
        // From the end, so that the ranges still to replace keep their offsets.
        for d in found.into_iter().rev() {
            if let Some(replacement) = replacements.get(&d.name) {
                source.replace_range(d.range, replacement);
            }
        }
    }
    test.commands.splice(0..0, initial_values);
    Ok(())
}

/// The names of the struct types a GLSL source declares.
fn struct_names(source: &str) -> Vec<String> {
    let code = blank_comments_and_directives(source);
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|w| w[0] == "struct")
        .map(|w| w[1].to_string())
        .collect()
}

/// A `uniform` declaration statement of GLSL source.
struct UniformDeclaration {
    /// From the `uniform` keyword to the end of the statement (without its `;`).
    range: Range<usize>,
    /// The name declared last.
    name: String,
    /// Where the initializer's value is, if there is one.
    initializer: Option<Range<usize>>,
    /// Its `layout(binding = N)`: a sampler or image array's first unit.
    binding: Option<u32>,
}

/// Every `uniform` declaration statement at the top level of the source, found with comments
/// and preprocessor lines blanked out.
fn uniform_declarations(source: &str) -> Vec<UniformDeclaration> {
    let code = blank_comments_and_directives(source);
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    // Braces of initializer lists (`= { 0, 1 }`) nest inside their statement; other braces open
    // and close blocks, bodies and structs, each ending the statement before it.
    let mut initializer_braces = 0usize;
    for (end, c) in code.char_indices() {
        match c {
            '{' if initializer_braces > 0 || code[..end].trim_end().ends_with('=') => {
                initializer_braces += 1;
                continue;
            }
            '}' if initializer_braces > 0 => {
                initializer_braces -= 1;
                continue;
            }
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !matches!(c, ';' | '{' | '}') {
            continue;
        }
        let statement = &code[start..end];
        start = end + 1;
        let keyword = statement.match_indices("uniform").find(|&(i, _)| {
            let before = statement[..i].chars().next_back();
            let after = statement[i + "uniform".len()..].chars().next();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        });
        let (Some((at, _)), ';', 0) = (keyword, c, depth) else {
            continue;
        };
        let binding = layout_binding(&statement[..at]);
        let at = end - statement.len() + at;
        let (declarator, initializer) = match code[at..end].split_once('=') {
            Some((declarator, _)) => (declarator, Some(at + declarator.len() + 1..end)),
            None => (&code[at..end], None),
        };
        // The name is the last word once array sizes (`vec2[2] a`, `mat2 m[2]`) are removed.
        let mut without_sizes = String::new();
        let mut brackets = 0usize;
        for ch in declarator.chars() {
            match ch {
                '[' => brackets += 1,
                ']' => brackets = brackets.saturating_sub(1),
                _ if brackets == 0 => without_sizes.push(ch),
                _ => {}
            }
        }
        let Some(name) = without_sizes.split_whitespace().next_back() else {
            continue;
        };
        found.push(UniformDeclaration {
            range: at..end,
            name: name.to_string(),
            initializer,
            binding,
        });
    }
    found
}

/// The first unit of each sampler or image (array) the test's GLSL declares with
/// `layout(binding = N)`: unit N, its elements at the units after it (the others start at 0).
pub(crate) fn layout_units(test: &ShaderTest) -> Vec<(String, u32)> {
    let mut units = Vec::new();
    for section in &test.sources.shaders {
        if let ShaderSource::Glsl(source) = &section.source {
            for d in uniform_declarations(source) {
                if let Some(unit) = d.binding {
                    units.push((d.name, unit));
                }
            }
        }
    }
    units
}

/// The `binding = N` of a `layout(...)` among qualifiers.
fn layout_binding(qualifiers: &str) -> Option<u32> {
    let (_, list) = qualifiers.split_once("layout")?;
    let list = list.trim_start().strip_prefix('(')?.split(')').next()?;
    list.split(',').find_map(|q| {
        let (key, value) = q.split_once('=')?;
        (key.trim() == "binding").then(|| value.trim().parse().ok())?
    })
}

/// The source with comments and preprocessor lines replaced by spaces (newlines kept), so that
/// byte offsets stay the same.
fn blank_comments_and_directives(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    let mut line_start = true;
    while let Some(c) = rest.chars().next() {
        let (skip, keep_newline) = if rest.starts_with("//")
            || (line_start && rest.trim_start_matches([' ', '\t']).starts_with('#'))
        {
            (rest.find('\n').unwrap_or(rest.len()), false)
        } else if rest.starts_with("/*") {
            (rest.find("*/").map_or(rest.len(), |i| i + 2), true)
        } else {
            out.push(c);
            line_start = c == '\n' || (line_start && (c == ' ' || c == '\t'));
            rest = &rest[c.len_utf8()..];
            continue;
        };
        for skipped in rest[..skip].chars() {
            if keep_newline && skipped == '\n' {
                out.push('\n');
            } else {
                out.extend(std::iter::repeat_n(' ', skipped.len_utf8()));
            }
        }
        rest = &rest[skip..];
    }
    out
}

type Stages = Vec<(Stage, Shader, Option<LegacyInterface>)>;

/// Compiles and translates every stage of the test at `path`; a glslang failure skips the test,
/// a translation failure fails it.
/// Whether the test expects its program not to link (`link error`).
fn expects_link_error(test: &ShaderTest) -> bool {
    (test.commands.iter())
        .any(|c| matches!(&c.command, Command::Other(text) if text == "link error"))
}

/// The test's stages, each from its compilation units linked together; a test expecting a
/// link error passes when linking a stage's units fails, and fails when they link
/// (interfaces between stages are not checked here).
fn compile(test: &ShaderTest, path: &Path, glslang: &Glslang) -> Result<Stages, Outcome> {
    let sources = stage_sources(&test.sources).map_err(|e| Outcome::skip(e.to_string()))?;
    let file = path.display().to_string();
    let mut out = Vec::new();
    // The shaders of a stage are its compilation units, linked together (in the order of
    // the stages' first sections).
    let mut stages: Vec<Stage> = Vec::new();
    for source in &sources {
        if !stages.contains(&source.stage) {
            stages.push(source.stage);
        }
    }
    for stage in stages {
        let units: Vec<_> = sources.iter().filter(|s| s.stage == stage).collect();
        let texts: Vec<&str> = units.iter().map(|s| s.source.as_str()).collect();
        let compiled = glslang.compile_units_cascade(&texts, stage).map_err(|e| {
            if expects_link_error(test) && e.is_link_error() {
                return Outcome {
                    status: Status::Pass,
                    reason: None,
                    compiled: false,
                    mismatch: false,
                };
            }
            let e = e.located(|line| units[0].location(&file, line));
            let first = e.to_string().lines().take(2).collect::<Vec<_>>().join(" ");
            Outcome::skip(format!("glslang: {first}"))
        })?;
        let shader = spirv::translate(&compiled.words, &spirv::Options::default())
            .map_err(|e| Outcome::fail(format!("{} shader: frontend: {e}", stage.name())))?;
        out.push((stage, shader, compiled.legacy_interface));
    }
    if expects_link_error(test) {
        return Err(Outcome::fail(
            "the test expects a link error, and each stage's shaders link (the interfaces \
             between stages are not checked)",
        ));
    }
    Ok(out)
}

/// One stage ready to run: its shader, its resources and the legacy names it uses.
pub(crate) struct StageState {
    pub(crate) shader: Shader,
    pub(crate) resources: Resources,
    legacy: Option<LegacyInterface>,
    /// The texture unit of each sampler binding that a uniform set (the others read unit 0).
    sampler_units: BTreeMap<u32, u32>,
    /// The image unit of each image binding, likewise.
    pub(crate) image_units: BTreeMap<u32, u32>,
    /// The element of an array of uniform blocks that a uniform named by the block's name
    /// alone sets (`ubo array index`).
    pub(crate) ubo_array_index: u32,
}

struct Context {
    vs: StageState,
    fs: StageState,
    /// The texture and sampler state of each texture unit, and the unit of the last
    /// `texture` command (the one `texparameter` changes).
    textures: TextureUnits,
    /// The fragment stage's kernel.
    kernel: Box<dyn FragmentKernel>,
    /// The vertex stage's kernel.
    vertex_kernel: Box<dyn VertexKernel>,
    /// The render target's size and pixels: the window's, or after `fb tex 2d UNIT` those of
    /// that unit's texture (written back to its first level after each draw and clear).
    width: u32,
    height: u32,
    framebuffer: Vec<[u8; 4]>,
    fb_unit: Option<u32>,
    /// The texture units that are image units too (`image texture`).
    image_units: BTreeSet<u32>,
    /// `provoking vertex first`: flat inputs take the first vertex's value, not the last's.
    provoking_first: bool,
    /// `enable GL_PROGRAM_POINT_SIZE`: points are `gl_PointSize` pixels wide, else 1.
    program_point_size: bool,
    clear_color: [f32; 4],
    tolerance: [f32; 4],
    /// Pixels some probe looks at (every pixel when the fragment shader may write memory, or
    /// the target is a texture): the pixels drawn.
    probed: Vec<bool>,
}

impl Context {
    fn new(
        test: &ShaderTest,
        vs: (Shader, Option<LegacyInterface>),
        fs: (Shader, Option<LegacyInterface>),
        kernel: Box<dyn FragmentKernel>,
        vertex_kernel: Box<dyn VertexKernel>,
    ) -> Result<Context, String> {
        let (width, height) = test.requirements.window_size.unwrap_or(DEFAULT_SIZE);
        // A fragment shader that may write memory (SSBOs, images) runs on every pixel, not
        // only on those the probes look at.
        let writes_memory = fs.0.variables.iter().any(|v| {
            v.mode == Mode::Ssbo || matches!(v.ty.innermost_element().0, Type::Image { .. })
        });
        let mut ctx = Context {
            vs: StageState::new(vs.0, vs.1)?,
            fs: StageState::new(fs.0, fs.1)?,
            textures: TextureUnits::default(),
            kernel,
            vertex_kernel,
            width,
            height,
            framebuffer: vec![[0; 4]; (width * height) as usize],
            fb_unit: None,
            image_units: BTreeSet::new(),
            provoking_first: false,
            program_point_size: false,
            clear_color: [0.0; 4],
            tolerance: [3.0 / 256.0; 4],
            probed: vec![writes_memory; (width * height) as usize],
        };
        for (name, unit) in layout_units(test) {
            ctx.vs.first_unit(&name, unit);
            ctx.fs.first_unit(&name, unit);
        }
        for c in &test.commands {
            if let Command::Probe(p) = &c.command {
                let (x0, y0, x1, y1) = probe_region(&p.region, ctx.width, ctx.height);
                for y in y0..y1 {
                    for x in x0..x1 {
                        ctx.probed[(y * width + x) as usize] = true;
                    }
                }
            }
        }
        Ok(ctx)
    }

    /// A probe region as a pixel rectangle clipped to the window: `(x0, y0, x1, y1)`.
    fn execute(&mut self, test: &ShaderTest) -> Result<(), ExecFailure> {
        for c in &test.commands {
            let at = |e: String| format!("line {}: {e}", c.line);
            if self.textures.apply(&c.command).map_err(at)? {
                continue;
            }
            if let Some(probed) = buffer_command(&mut [&mut self.fs, &mut self.vs], &c.command) {
                probed.map_err(|e| ExecFailure {
                    message: at(e),
                    mismatch: true,
                })?;
                continue;
            }
            match &c.command {
                Command::Uniform {
                    glsl_type,
                    name,
                    values,
                } => {
                    // A uniform neither stage has was removed by glslang as unused;
                    // setting it changes nothing, as in piglit's GL.
                    self.vs.set_uniform(glsl_type, name, values).map_err(at)?;
                    self.fs.set_uniform(glsl_type, name, values).map_err(at)?;
                }
                Command::UboArrayIndex(index) => {
                    self.vs.ubo_array_index = *index;
                    self.fs.ubo_array_index = *index;
                }
                Command::ClearColor(c) => self.clear_color = *c,
                Command::Clear => {
                    let px = self.clear_color.map(quantize);
                    self.framebuffer.fill(px);
                    self.store_target();
                }
                Command::Tolerance(t) => self.tolerance = *t,
                Command::Other(text)
                    if text == "link success" || text.starts_with("memory barrier") => {}
                Command::Other(text) if provoking_vertex(text).is_some() => {
                    self.provoking_first = provoking_vertex(text) == Some(true);
                }
                Command::Other(text) if program_point_size(text).is_some() => {
                    self.program_point_size = program_point_size(text) == Some(true);
                }
                Command::ImageTexture { unit } => {
                    self.image_units.insert(*unit);
                }
                Command::Framebuffer(target) => {
                    let unit = compute::fb_texture(target)
                        .ok_or_else(|| at(format!("unsupported framebuffer `{target}`")))?;
                    self.render_to(unit).map_err(at)?;
                }
                Command::Ortho(bounds) => self.ortho(*bounds).map_err(at)?,
                Command::DrawRect { rect, ortho, .. } => {
                    self.draw(*rect, *ortho, None).map_err(at)?
                }
                Command::DrawRectTex { rect, tex } => {
                    self.draw(*rect, false, Some(*tex)).map_err(at)?
                }
                Command::DrawArrays {
                    mode, first, count, ..
                } => {
                    let draw_mode = DrawMode::from_mode(mode)
                        .ok_or_else(|| at(format!("unsupported primitive {mode}")))?;
                    self.draw_arrays(test, draw_mode, *first..*first + *count)
                        .map_err(at)?
                }
                Command::Probe(p) => check_probe(
                    p,
                    &self.framebuffer,
                    self.width,
                    self.height,
                    self.tolerance,
                )
                .map_err(|e| ExecFailure {
                    message: at(e),
                    mismatch: true,
                })?,
                other => {
                    return Err(at(format!("unsupported command `{}`", other.name())).into());
                }
            }
        }
        Ok(())
    }

    /// `ortho [l r b t]`: the fixed-function projection becomes `glOrtho(l, r, b, t, -1, 1)`
    /// (the window by default). Only shaders that read the (rewritten) fixed-function matrices
    /// see it.
    fn ortho(&mut self, bounds: Option<[f32; 4]>) -> Result<(), String> {
        let [l, r, b, t] = bounds.unwrap_or([0.0, self.width as f32, 0.0, self.height as f32]);
        let m = [
            2.0 / (r - l),
            0.0,
            0.0,
            0.0,
            0.0,
            2.0 / (t - b),
            0.0,
            0.0,
            0.0,
            0.0,
            -1.0,
            0.0,
            -(r + l) / (r - l),
            -(t + b) / (t - b),
            0.0,
            1.0,
        ];
        let values: Vec<String> = m.iter().map(|v: &f32| v.to_string()).collect();
        for name in ["shrew_ProjectionMatrix", "shrew_ModelViewProjectionMatrix"] {
            self.vs.set_uniform("mat4", name, &values)?;
            self.fs.set_uniform("mat4", name, &values)?;
        }
        Ok(())
    }

    /// Draws a rectangle: vertex shader, rasterization, fragment shader, framebuffer.
    fn draw(&mut self, rect: [f32; 4], ortho: bool, tex: Option<[f32; 4]>) -> Result<(), String> {
        self.vs.bind_textures(&self.textures.units);
        self.fs.bind_textures(&self.textures.units);
        let [x, y, w, h] = rect;
        let to_ndc = |v: f32, size: u32| {
            if ortho {
                2.0 * v / size as f32 - 1.0
            } else {
                v
            }
        };
        let (x0, x1) = (to_ndc(x, self.width), to_ndc(x + w, self.width));
        let (y0, y1) = (to_ndc(y, self.height), to_ndc(y + h, self.height));
        let corners = [[x0, y0], [x1, y0], [x0, y1], [x1, y1]];
        let as_vec4 = |corners: [[f32; 2]; 4]| -> Vec<Vec<u64>> {
            corners
                .iter()
                .map(|c| floats(&[c[0], c[1], 0.0, 1.0]))
                .collect()
        };
        let mut inputs: BTreeMap<String, Vec<Vec<u64>>> = self
            .rect_position_input()
            .map(|name| (name, as_vec4(corners)))
            .into_iter()
            .collect();
        // `draw rect tex`: the corners' texture coordinates, in the same order (to no input
        // when the vertex shader reads none, as GL ignores an attribute nothing reads).
        if let (Some([s, t, sw, th]), Some(name)) = (tex, self.rect_texcoord_input()) {
            let coords = [[s, t], [s + sw, t], [s, t + th], [s + sw, t + th]];
            inputs.insert(name, as_vec4(coords));
        }
        let vertices = self.run_vertices(corners.len(), inputs)?;
        self.rasterize_and_shade(&vertices, &[(STRIP[0], 0), (STRIP[1], 1)])
    }

    /// `fb tex 2d UNIT`: that unit's texture (its first level) becomes the render target, and
    /// what probes read (no command here names the window again).
    fn render_to(&mut self, unit: u32) -> Result<(), String> {
        let (pixels, width, height) = target_pixels(&self.textures, unit)?;
        self.probed = vec![true; pixels.len()];
        self.framebuffer = pixels;
        (self.width, self.height, self.fb_unit) = (width, height, Some(unit));
        Ok(())
    }

    /// Writes the render target back into its texture when it is one (8-bit colours, as
    /// the framebuffer holds them).
    fn store_target(&mut self) {
        let Some(unit) = self.fb_unit else {
            return;
        };
        if let Some(level) =
            (self.textures.units.get_mut(&unit)).and_then(|(texture, _)| texture.levels.first_mut())
        {
            for (texel, px) in level.texels.iter_mut().zip(&self.framebuffer) {
                *texel = px.map(|c| (f32::from(c) / 255.0).to_bits());
            }
        }
    }

    /// The vertex input `draw rect tex` feeds its texture coordinates to: `piglit_texcoord`,
    /// the attribute shader_runner binds for them, or the one standing for
    /// `gl_MultiTexCoord0` in a legacy shader.
    fn rect_texcoord_input(&self) -> Option<String> {
        let legacy = self.vs.legacy.as_ref().and_then(|legacy| {
            let var = legacy
                .inputs
                .iter()
                .find(|v| v.replaces == "gl_MultiTexCoord0")?;
            Some(var.name.to_string())
        });
        let inputs = self.vs.shader.variables.iter();
        inputs
            .filter(|v| v.mode == Mode::ShaderIn)
            .find(|v| v.name == "piglit_texcoord" || Some(&v.name) == legacy.as_ref())
            .map(|v| v.name.clone())
    }

    /// The vertex input `draw rect` feeds its corners to: `piglit_vertex`, the attribute
    /// shader_runner binds to location 0 before linking, or else the input at location 0
    /// (where GL's linker puts a shader's only unlocated input); `None` when there is neither.
    fn rect_position_input(&self) -> Option<String> {
        let inputs = || {
            self.vs
                .shader
                .variables
                .iter()
                .filter(|v| v.mode == Mode::ShaderIn)
        };
        inputs()
            .find(|v| v.name == "piglit_vertex")
            .or_else(|| {
                inputs().find(|v| {
                    v.location == Some(0) && self.vs.legacy_input_default(&v.name).is_none()
                })
            })
            .map(|v| v.name.clone())
    }

    /// `draw arrays`: the vertex shader on the vertices `range` of `[vertex data]`, assembled
    /// into primitives of `mode`.
    fn draw_arrays(
        &mut self,
        test: &ShaderTest,
        mode: DrawMode,
        range: Range<usize>,
    ) -> Result<(), String> {
        self.vs.bind_textures(&self.textures.units);
        self.fs.bind_textures(&self.textures.units);
        // Without `[vertex data]` the vertices have only their index (`gl_VertexID`).
        let inputs = match &test.vertex_data {
            Some(data) => data.inputs(range.clone(), &self.vs.shader)?,
            None => BTreeMap::new(),
        };
        let mut vertices = self.run_vertices(range.len(), inputs)?;
        let triangles = match mode {
            DrawMode::Points => self.point_sprites(&mut vertices),
            _ if self.provoking_first => mode
                .first_vertex_triangles(vertices.len())
                .ok_or_else(|| format!("no first-vertex convention for {mode:?} here"))?,
            _ => mode.triangles(vertices.len()),
        };
        self.rasterize_and_shade(&vertices, &triangles)
    }

    /// Replaces each point by the square of its size (`gl_PointSize` once program point sizes
    /// are enabled, else 1 pixel) around it: four vertices with its outputs, and the square's
    /// two triangles (primitive `i` of point `i`).
    fn point_sprites(&self, vertices: &mut Vec<VertexOut>) -> Vec<([usize; 3], u32)> {
        let size = (self.vs.shader.variables.iter())
            .find(|v| v.builtin == Some(Builtin::PointSize) && self.program_point_size)
            .map(|v| v.name.clone());
        let points = std::mem::take(vertices);
        let mut triangles = Vec::with_capacity(points.len() * 2);
        for (primitive, point) in (0..).zip(points) {
            let pixels = size
                .as_ref()
                .and_then(|name| point.outputs.get(name))
                .and_then(|v| v.first())
                .map_or(1.0, |&bits| f32::from_bits(bits as u32).max(1.0));
            // Half the size in clip space: a pixel is 2/width of normalized x, times w.
            let [x, y, z, w] = point.position;
            let dx = pixels / self.width as f32 * w;
            let dy = pixels / self.height as f32 * w;
            let k = vertices.len();
            for (sx, sy) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
                vertices.push(VertexOut {
                    position: [x + sx * dx, y + sy * dy, z, w],
                    outputs: point.outputs.clone(),
                });
            }
            triangles.extend(STRIP.map(|t| (t.map(|i| k + i), primitive)));
        }
        triangles
    }

    /// Rasterizes the triangles of `vertices`, each with the primitive it belongs to (a quad's
    /// two triangles are one primitive), and shades each.
    fn rasterize_and_shade(
        &mut self,
        vertices: &[VertexOut],
        triangles: &[([usize; 3], u32)],
    ) -> Result<(), String> {
        let positions: Vec<[f32; 4]> = vertices.iter().map(|v| v.position).collect();
        let window = raster::window_positions(&positions, self.width, self.height);
        let corners: Vec<[usize; 3]> = triangles.iter().map(|&(tri, _)| tri).collect();
        let grids = raster::rasterize(&window, &corners, self.width, self.height, &self.probed);
        let images = self.fs.bind_images(&self.textures.units, &self.image_units);
        let mut shaded = Ok(());
        for (&(tri, primitive_id), grid) in triangles.iter().zip(grids) {
            if let Some(pixels) = grid {
                let primitive = Primitive {
                    id: primitive_id,
                    back_facing: !raster::counter_clockwise(&window, tri),
                };
                shaded = self.shade_triangle(tri, pixels, primitive, vertices);
                if shaded.is_err() {
                    break;
                }
            }
        }
        self.fs.unbind_images(&images, &mut self.textures.units);
        self.store_target();
        shaded
    }

    /// Shades one triangle's pixels and writes the covered ones the shader wrote.
    fn shade_triangle(
        &mut self,
        tri: [usize; 3],
        pixels: QuadGrid,
        primitive: Primitive,
        vertices: &[VertexOut],
    ) -> Result<(), String> {
        let mut varyings = BTreeMap::new();
        for var in &self.fs.shader.variables {
            if var.mode != Mode::ShaderIn || var.builtin.is_some() {
                continue;
            }
            if let Some(per_vertex) = varying(vertices, &var.name, var.location, &self.vs.shader) {
                varyings.insert(var.name.clone(), tri.map(|i| per_vertex[i].clone()));
            }
        }
        let fragments = TriangleFragments {
            pixels,
            varyings,
            primitive,
        };
        let colors = self
            .kernel
            .shade(&fragments, &mut self.fs.resources)
            .map_err(|e| format!("fragment shader: {e}"))?;
        let grid = &fragments.pixels;
        for (i, rgba) in colors.iter().enumerate() {
            let Some(rgba) = rgba else { continue };
            if !grid.covered[i] {
                continue;
            }
            let (x, y) = (
                grid.origin[0] + i as u32 % grid.width,
                grid.origin[1] + i as u32 / grid.width,
            );
            let px = rgba.map(|bits| quantize(f32::from_bits(bits)));
            self.framebuffer[(y * self.width + x) as usize] = px;
        }
        Ok(())
    }

    /// Runs the vertex shader on `count` vertices with the attributes `inputs`; legacy inputs
    /// without attributes read their fixed-function defaults.
    fn run_vertices(
        &mut self,
        count: usize,
        mut inputs: BTreeMap<String, Vec<Vec<u64>>>,
    ) -> Result<Vec<VertexOut>, String> {
        let shader = &self.vs.shader;
        for var in shader.variables.iter().filter(|v| v.mode == Mode::ShaderIn) {
            if inputs.contains_key(&var.name) {
                continue;
            }
            if let Some(default) = self.vs.legacy_input_default(&var.name) {
                inputs.insert(var.name.clone(), vec![floats(&default)]);
            } else if let Some(current) = current_attribute(&var.ty) {
                inputs.insert(var.name.clone(), vec![current]);
            }
        }
        let images = self.vs.bind_images(&self.textures.units, &self.image_units);
        let outputs = self
            .vertex_kernel
            .run(count, &inputs, &mut self.vs.resources)
            .map_err(|e| format!("vertex shader: {e}"));
        self.vs.unbind_images(&images, &mut self.textures.units);
        let outputs = outputs?;
        let shader = &self.vs.shader;
        let position = shader
            .variables
            .iter()
            .find(|v| v.builtin == Some(Builtin::Position))
            .map(|v| v.name.clone());
        // Fixed-function vertex colours are clamped to [0, 1] (no ARB_color_buffer_float here).
        let clamped: Vec<&str> = self
            .vs
            .legacy
            .iter()
            .flat_map(|l| &l.varyings)
            .filter(|v| {
                matches!(
                    v.replaces,
                    "gl_FrontColor"
                        | "gl_BackColor"
                        | "gl_FrontSecondaryColor"
                        | "gl_BackSecondaryColor"
                )
            })
            .map(|v| v.name)
            .collect();
        let mut out = Vec::new();
        for mut outputs in outputs {
            for name in &clamped {
                if let Some(values) = outputs.get_mut(*name) {
                    for v in values.iter_mut() {
                        let x = f32::from_bits(*v as u32);
                        *v = x.clamp(0.0, 1.0).to_bits() as u64;
                    }
                }
            }
            let pos = position
                .as_ref()
                .and_then(|p| outputs.get(p))
                .map(|v| {
                    let f: Vec<f32> = v.iter().map(|&b| f32::from_bits(b as u32)).collect();
                    [f[0], f[1], f[2], f[3]]
                })
                .ok_or("the vertex shader writes no gl_Position")?;
            out.push(VertexOut {
                position: pos,
                outputs,
            });
        }
        Ok(out)
    }
}

/// The pixels `x0..x1`, `y0..y1` of a `width`×`height` framebuffer a probe region covers.
pub(crate) fn probe_region(r: &ProbeRegion, width: u32, height: u32) -> (u32, u32, u32, u32) {
    let (w, h) = (width as f32, height as f32);
    let (x, y, rw, rh) = match *r {
        ProbeRegion::Pixel { x, y } => (x as f32, y as f32, 1.0, 1.0),
        ProbeRegion::Rect {
            x,
            y,
            width,
            height,
        } => (x as f32, y as f32, width as f32, height as f32),
        ProbeRegion::All => (0.0, 0.0, w, h),
        ProbeRegion::RelativePixel { x, y } => ((x * w).floor(), (y * h).floor(), 1.0, 1.0),
        ProbeRegion::RelativeRect {
            x,
            y,
            width,
            height,
        } => (
            (x * w).floor(),
            (y * h).floor(),
            (width * w).floor(),
            (height * h).floor(),
        ),
    };
    let clip = |v: f32, max: f32| v.clamp(0.0, max) as u32;
    (clip(x, w), clip(y, h), clip(x + rw, w), clip(y + rh, h))
}

/// Checks the atomic counter at byte `offset` of buffer `buffer` against `value`, in the first
/// of `stages` that has the buffer (each stage counts in its own copy here).
/// Runs a command on the stages' buffers: makes atomic counter buffers and SSBOs, writes
/// SSBOs, and checks probes of them (a failed probe is the error); `None` for the commands of
/// other kinds.
pub(crate) fn buffer_command(
    stages: &mut [&mut StageState],
    command: &Command,
) -> Option<Result<(), String>> {
    match *command {
        Command::AtomicCounters { buffer, count } => {
            for stage in stages.iter_mut() {
                stage.add_atomic_counters(buffer, count);
            }
        }
        Command::SetAtomicCounter {
            buffer,
            index,
            value,
        } => {
            for stage in stages.iter_mut() {
                stage.set_atomic_counter(buffer, index, value);
            }
        }
        Command::Ssbo { .. } | Command::SsboSubdata { .. } => {
            for stage in stages.iter_mut() {
                stage.ssbo_command(command);
            }
        }
        Command::ProbeAtomicCounter {
            buffer,
            offset,
            op,
            value,
        } => {
            let stages: Vec<&StageState> = stages.iter().map(|s| &**s).collect();
            return Some(probe_atomic_counter(&stages, buffer, offset, op, value));
        }
        Command::ProbeSsbo {
            binding,
            offset,
            signed,
            op,
            value,
        } => {
            let stages: Vec<&StageState> = stages.iter().map(|s| &**s).collect();
            return Some(probe_ssbo(&stages, binding, offset, signed, op, value));
        }
        _ => return None,
    }
    Some(Ok(()))
}

/// Checks the `int` (`signed`) or `uint` at byte `offset` of SSBO `binding`, in the first of
/// `stages` that has it, against `value`.
fn probe_ssbo(
    stages: &[&StageState],
    binding: u32,
    offset: u32,
    signed: bool,
    op: Comparison,
    value: i64,
) -> Result<(), String> {
    // Each stage runs on its own resources: the SSBO is the one of a stage whose shader
    // declares it.
    let declares = |s: &&&StageState| {
        (s.shader.variables.iter())
            .any(|v| v.mode == Mode::Ssbo && !v.atomic_counters && v.binding == Some(binding))
    };
    let observed = (stages.iter().filter(declares).chain(stages))
        .find_map(|s| {
            let bytes = s.resources.ssbos.get(&binding)?;
            let at = offset as usize;
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        })
        .ok_or_else(|| format!("no dword at byte {offset} of SSBO {binding}"))?;
    let observed = if signed {
        i64::from(observed as i32)
    } else {
        i64::from(observed)
    };
    if op.holds(observed, value) {
        Ok(())
    } else {
        Err(format!(
            "SSBO {binding} at byte {offset}: expected {op:?} {value}, observed {observed}"
        ))
    }
}

fn probe_atomic_counter(
    stages: &[&StageState],
    buffer: u32,
    offset: u32,
    op: Comparison,
    value: u32,
) -> Result<(), String> {
    let observed = stages
        .iter()
        .find_map(|s| {
            let bytes = s.resources.ssbos.get(&s.atomic_counter_binding(buffer)?)?;
            let at = offset as usize;
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        })
        .ok_or_else(|| format!("no atomic counter at byte {offset} of buffer {buffer}"))?;
    if op.holds(observed, value) {
        Ok(())
    } else {
        Err(format!(
            "atomic counter at byte {offset} of buffer {buffer}: expected {op:?} {value}, observed {observed}"
        ))
    }
}

/// Checks a probe against `pixels` (row-major, row 0 at the bottom), each channel within
/// `tolerance`; the message names the first pixel that differs.
pub(crate) fn check_probe(
    probe: &Probe,
    pixels: &[[u8; 4]],
    width: u32,
    height: u32,
    tolerance: [f32; 4],
) -> Result<(), String> {
    let (x0, y0, x1, y1) = probe_region(&probe.region, width, height);
    let (expected, n) = match probe.expected {
        ExpectedColor::Rgb(c) => ([c[0], c[1], c[2], 1.0], 3),
        ExpectedColor::Rgba(c) => (c, 4),
    };
    for y in y0..y1 {
        for x in x0..x1 {
            let observed = pixels[(y * width + x) as usize].map(|b| b as f32 / 255.0);
            if (0..n).any(|i| (observed[i] - expected[i]).abs() > tolerance[i]) {
                return Err(format!(
                    "probe at ({x}, {y}): expected {:?}, observed {:?}",
                    &expected[..n],
                    &observed[..n]
                ));
            }
        }
    }
    Ok(())
}

/// The primitive modes `draw arrays` draws.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum DrawMode {
    Points,
    Triangles,
    TriangleStrip,
    TriangleFan,
    Quads,
    QuadStrip,
}

impl DrawMode {
    fn from_mode(mode: &str) -> Option<DrawMode> {
        Some(match mode {
            "GL_POINTS" => DrawMode::Points,
            "GL_TRIANGLES" => DrawMode::Triangles,
            "GL_TRIANGLE_STRIP" => DrawMode::TriangleStrip,
            "GL_TRIANGLE_FAN" => DrawMode::TriangleFan,
            "GL_QUADS" => DrawMode::Quads,
            "GL_QUAD_STRIP" => DrawMode::QuadStrip,
            _ => return None,
        })
    }

    /// [`DrawMode::triangles`] under the first-vertex convention: each triangle's corners
    /// turned (keeping its winding) so that the provoking vertex, which GL's table gives for
    /// the convention, is third; `None` for quads, whose second triangle lacks it.
    fn first_vertex_triangles(self, count: usize) -> Option<Vec<([usize; 3], u32)>> {
        let turned = self
            .triangles(count)
            .into_iter()
            .map(|([a, b, c], primitive)| {
                let first = match self {
                    DrawMode::Triangles => a,
                    // An odd triangle of a strip is (i + 1, i, i + 2): its first vertex is i.
                    DrawMode::TriangleStrip => a.min(b),
                    DrawMode::TriangleFan => b,
                    _ => return None,
                };
                Some(match first {
                    f if f == a => ([b, c, a], primitive),
                    f if f == b => ([c, a, b], primitive),
                    _ => ([a, b, c], primitive),
                })
            });
        turned.collect()
    }

    /// The triangles of `count` vertices drawn in this mode (not points), each with its
    /// provoking vertex (GL's last-vertex convention) third and the primitive it belongs to
    /// (`gl_PrimitiveID`: a quad's two triangles are one primitive).
    fn triangles(self, count: usize) -> Vec<([usize; 3], u32)> {
        let primitives = 0u32..;
        match self {
            DrawMode::Points => Vec::new(),
            DrawMode::Triangles => primitives
                .zip(0..count / 3)
                .map(|(p, t)| ([3 * t, 3 * t + 1, 3 * t + 2], p))
                .collect(),
            DrawMode::TriangleStrip => primitives
                .zip(0..count.saturating_sub(2))
                .map(|(p, i)| match i % 2 {
                    0 => ([i, i + 1, i + 2], p),
                    _ => ([i + 1, i, i + 2], p),
                })
                .collect(),
            DrawMode::TriangleFan => primitives
                .zip(0..count.saturating_sub(2))
                .map(|(p, i)| ([0, i + 1, i + 2], p))
                .collect(),
            DrawMode::Quads => primitives
                .zip(0..count / 4)
                .flat_map(|(p, q)| {
                    let v = 4 * q;
                    [([v, v + 1, v + 3], p), ([v + 1, v + 2, v + 3], p)]
                })
                .collect(),
            DrawMode::QuadStrip => primitives
                .zip(0..count.saturating_sub(2) / 2)
                .flat_map(|(p, q)| {
                    let v = 2 * q;
                    [([v, v + 1, v + 3], p), ([v + 2, v, v + 3], p)]
                })
                .collect(),
        }
    }
}

struct VertexOut {
    position: [f32; 4],
    outputs: BTreeMap<String, Vec<u64>>,
}

/// GL's current value of a generic vertex attribute nothing sets, (0, 0, 0, 1), as an input of
/// type `ty` takes it (a 32-bit scalar or vector; `None` for the other types, which read 0).
fn current_attribute(ty: &Type) -> Option<Vec<u64>> {
    let (scalar, comps) = match *ty {
        Type::Scalar(s) => (s, 1),
        Type::Vector(s, n) => (s, n as usize),
        _ => return None,
    };
    let one = match (scalar.base, scalar.bits) {
        (BaseType::Float, 32) => 1f32.to_bits() as u64,
        (BaseType::Int | BaseType::Uint, 32) => 1,
        _ => return None,
    };
    Some((0..comps).map(|c| if c == 3 { one } else { 0 }).collect())
}

fn floats(xs: &[f32]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits() as u64).collect()
}

pub(crate) fn quantize(x: f32) -> u8 {
    let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    (x * 255.0).round() as u8
}

/// The per-vertex values of the vertex output that feeds the fragment input `name`: the output
/// of the same name, else the one at the same location.
fn varying(
    vertices: &[VertexOut],
    name: &str,
    location: Option<u32>,
    vs: &Shader,
) -> Option<Vec<Vec<u64>>> {
    let out_name = if vertices.first()?.outputs.contains_key(name) {
        name.to_string()
    } else {
        vs.variables
            .iter()
            .find(|v| v.mode == Mode::ShaderOut && v.location.is_some() && v.location == location)?
            .name
            .clone()
    };
    vertices
        .iter()
        .map(|v| v.outputs.get(&out_name).cloned())
        .collect()
}

impl StageState {
    pub(crate) fn new(
        shader: Shader,
        legacy: Option<LegacyInterface>,
    ) -> Result<StageState, String> {
        let mut resources = Resources::default();
        for var in &shader.variables {
            if matches!(var.mode, Mode::Ubo | Mode::Uniform) && !var.ty.is_opaque_deep() {
                resources
                    .zero_variable(&shader, &var.name)
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut state = StageState {
            shader,
            resources,
            legacy,
            sampler_units: BTreeMap::new(),
            image_units: BTreeMap::new(),
            ubo_array_index: 0,
        };
        if let Some(legacy) = state.legacy.clone() {
            for u in &legacy.uniforms {
                let values: Vec<String> = u.default_value.iter().map(|v| v.to_string()).collect();
                state.set_uniform(u.glsl_type, u.name, &values)?;
            }
        }
        Ok(state)
    }

    /// The SSBO binding (in the resources) of atomic counter buffer `buffer` (atomic counters
    /// are SSBO atomics in the IR), if this stage has the buffer.
    fn atomic_counter_binding(&self, buffer: u32) -> Option<u32> {
        let var = (self.shader.variables.iter())
            .find(|v| v.atomic_counters && v.binding == Some(buffer))?;
        Some(var.buffer_binding())
    }

    /// `atomic counters`: atomic counter buffer `buffer`, `count` zeroed counters.
    /// Makes (`ssbo B SIZE`) or writes part of (`ssbo B subdata ...`) an SSBO; a write past
    /// the end grows it.
    pub(crate) fn ssbo_command(&mut self, command: &Command) {
        match command {
            &Command::Ssbo { binding, size } => {
                self.resources.ssbos.insert(binding, vec![0; size as usize]);
            }
            Command::SsboSubdata {
                binding,
                bytes,
                offset,
            } => {
                let buffer = self.resources.ssbos.entry(*binding).or_default();
                let (start, end) = (*offset as usize, *offset as usize + bytes.len());
                if buffer.len() < end {
                    buffer.resize(end, 0);
                }
                buffer[start..end].copy_from_slice(bytes);
            }
            _ => {}
        }
    }

    /// `atomic counter`: counter `index` of atomic counter buffer `buffer` set to `value` (the
    /// buffer grown to hold it).
    pub(crate) fn set_atomic_counter(&mut self, buffer: u32, index: u32, value: u32) {
        if let Some(binding) = self.atomic_counter_binding(buffer) {
            let bytes = self.resources.ssbos.entry(binding).or_default();
            let at = 4 * index as usize;
            if bytes.len() < at + 4 {
                bytes.resize(at + 4, 0);
            }
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
    }

    pub(crate) fn add_atomic_counters(&mut self, buffer: u32, count: u32) {
        if let Some(binding) = self.atomic_counter_binding(buffer) {
            let bytes = vec![0; 4 * count as usize];
            self.resources.ssbos.insert(binding, bytes);
        }
    }

    /// Points the sampler or image (array) `name` at units from `unit` on, one per element.
    pub(crate) fn first_unit(&mut self, name: &str, unit: u32) {
        let Some(var) = self.shader.variables.iter().find(|v| v.name == name) else {
            return;
        };
        let (element, count) = var.ty.innermost_element();
        let units = match element {
            Type::Texture { .. } => &mut self.sampler_units,
            Type::Image { .. } => &mut self.image_units,
            _ => return,
        };
        if let Some(first) = var.binding {
            for e in 0..count {
                units.insert(first + e, unit + e);
            }
        }
    }

    /// Binds each sampler binding of the shader to its unit's texture and sampler.
    pub(crate) fn bind_textures(&mut self, units: &BTreeMap<u32, (Texture, SamplerState)>) {
        for var in &self.shader.variables {
            let (element, leaves) = var.ty.innermost_element();
            let (Some(first), Type::Texture { .. }) = (var.binding, element) else {
                continue;
            };
            for binding in first..first + leaves {
                let unit = self.sampler_units.get(&binding).copied().unwrap_or(0);
                match units.get(&unit) {
                    Some((texture, sampler)) => {
                        self.resources.textures.insert(binding, texture.clone());
                        self.resources.samplers.insert(binding, *sampler);
                    }
                    // A unit without a texture holds an incomplete one, which reads as
                    // (0, 0, 0, 1) in GL.
                    None => {
                        let incomplete = Texture::from_f32(1, 1, 1, &[[0.0, 0.0, 0.0, 1.0]]);
                        self.resources.textures.insert(binding, incomplete);
                        self.resources
                            .samplers
                            .insert(binding, SamplerState::default());
                    }
                }
            }
        }
    }

    /// Binds each image binding of the shader whose image unit is one of `image_units` (the
    /// units `image texture` names) and holds a texture to a copy of that texture's first
    /// level; gives the bindings with their units, for [`StageState::unbind_images`].
    pub(crate) fn bind_images(
        &mut self,
        units: &BTreeMap<u32, (Texture, SamplerState)>,
        image_units: &BTreeSet<u32>,
    ) -> Vec<(u32, u32)> {
        let mut bindings = Vec::new();
        for var in &self.shader.variables {
            let (element, count) = var.ty.innermost_element();
            let (Some(first), Type::Image { .. }) = (var.binding, element) else {
                continue;
            };
            for binding in first..first + count {
                let unit = self.image_units.get(&binding).copied().unwrap_or(0);
                let level = units.get(&unit).and_then(|(t, _)| t.levels.first());
                if let (true, Some(level)) = (image_units.contains(&unit), level) {
                    self.resources.images.insert(
                        binding,
                        Image {
                            width: level.width,
                            height: level.height,
                            depth: level.depth,
                            layers: 1,
                            texels: level.texels.clone(),
                        },
                    );
                    bindings.push((binding, unit));
                }
            }
        }
        bindings
    }

    /// Moves the images [`StageState::bind_images`] bound back into their units' textures.
    /// Several bindings may show one unit: the image written (that differs from the texture)
    /// is what the unit holds after, not a copy left as it was.
    pub(crate) fn unbind_images(
        &mut self,
        bindings: &[(u32, u32)],
        units: &mut BTreeMap<u32, (Texture, SamplerState)>,
    ) {
        let mut written = BTreeMap::new();
        for &(binding, unit) in bindings {
            let image = self.resources.images.remove(&binding);
            let level = units.get(&unit).and_then(|(t, _)| t.levels.first());
            if let (Some(image), Some(level)) = (image, level)
                && image.texels != level.texels
            {
                written.insert(unit, image.texels);
            }
        }
        for (unit, texels) in written {
            if let Some((texture, _)) = units.get_mut(&unit) {
                texture.levels[0].texels = texels;
            }
        }
    }

    /// The default value of a legacy attribute (what the fixed-function state holds).
    fn legacy_input_default(&self, name: &str) -> Option<[f32; 4]> {
        let legacy = self.legacy.as_ref()?;
        let var = legacy.inputs.iter().find(|v| v.name == name)?;
        Some(match var.replaces {
            "gl_Color" => [1.0, 1.0, 1.0, 1.0],
            "gl_Normal" => [0.0, 0.0, 1.0, 0.0],
            _ => [0.0, 0.0, 0.0, 1.0],
        })
    }

    /// Sets a uniform by its GLSL name (with `[i]` and `.member` steps) in the default uniform
    /// block or a loose uniform; `false` when this stage has no such uniform.
    pub(crate) fn set_uniform(
        &mut self,
        glsl_type: &str,
        name: &str,
        values: &[String],
    ) -> Result<bool, String> {
        let Some(UniformPlace {
            binding,
            offset,
            ty,
            path,
        }) = self.locate_uniform(name)?
        else {
            return Ok(false);
        };
        // An array named alone is its first element (GL's location of `a` is `a[0]`'s).
        let opaque = ty.innermost_element().0;
        if let Type::Texture { .. } | Type::Image { .. } = opaque {
            // A sampler's value is the texture unit it reads, an image's its image unit. Its
            // variable is the array itself, or, for one inside structs, the one the front end
            // made of that member (`s[1].tex` is `s_tex[1]`); the indices on the path pick its
            // element.
            let var = [path.join("_"), path[0].clone()]
                .iter()
                .find_map(|n| self.shader.variables.iter().find(|v| &v.name == n))
                .ok_or_else(|| format!("uniform {glsl_type} {name}: no sampler variable"))?;
            let mut element = 0;
            let mut array = &var.ty;
            for step in &split_path(name) {
                if let (Step::Index(_, index), Type::Array { elem, len, .. }) = (step, array) {
                    element = element * len + index;
                    array = elem;
                }
            }
            let unit = values
                .first()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("uniform {glsl_type} {name}: no texture unit"))?;
            let units = match opaque {
                Type::Image { .. } => &mut self.image_units,
                _ => &mut self.sampler_units,
            };
            units.insert(var.binding.unwrap_or(0) + element, unit);
            return Ok(true);
        }
        let layout = Layout::new(&self.shader, LayoutRule::Std430);
        let mut leaves = Vec::new();
        layout.leaves(&ty, offset, 0, &mut leaves)?;
        // Like piglit, fewer values than components set the first ones only.
        if values.is_empty() {
            return Err(format!("uniform {glsl_type} {name} has no values"));
        }
        let buf = match binding {
            Some(b) => self.resources.ubos.entry(b).or_default(),
            None => &mut self.resources.uniform_data,
        };
        for (leaf, text) in leaves.iter().zip(values) {
            let raw = parse_value(text, leaf.scalar.base, leaf.scalar.bits)
                .ok_or_else(|| format!("`{text}` is not a value of uniform {name}"))?;
            let end = (leaf.offset + leaf.bytes) as usize;
            if buf.len() < end {
                buf.resize(end, 0);
            }
            let bytes = raw.to_le_bytes();
            buf[leaf.offset as usize..end].copy_from_slice(&bytes[..leaf.bytes as usize]);
        }
        Ok(true)
    }

    /// Where a uniform lives: the UBO binding (`None` for the default uniform area), its byte
    /// offset, its type, and the IR's names of its variable (or default-block member) and
    /// members on its path (the front end names a variable split from a struct by them).
    fn locate_uniform(&self, name: &str) -> Result<Option<UniformPlace>, String> {
        let steps = split_path(name);
        let Some(root) = steps.first() else {
            return Ok(None);
        };
        let layout = Layout::new(&self.shader, LayoutRule::Std430);
        let offset_of = |var: &str| -> Result<u32, String> {
            let place = shrew_engine::interp::memory::layout_variables(&self.shader)
                .map_err(|e| e.to_string())?;
            let index = self.shader.find_variable(var).map_or(0, |v| v.0) as usize;
            Ok(place[index].offset)
        };
        // A loose uniform, or a member of a default uniform block (a buffer, or a uniform when
        // it holds opaque members).
        let mut found = None;
        for var in &self.shader.variables {
            let default_block = var.name.starts_with("gl_DefaultUniformBlock");
            match (&var.mode, &var.ty) {
                (Mode::Uniform, ty) if is_gl_name(&var.name, root.name()) => {
                    found = Some((None, offset_of(&var.name)?, ty.clone(), var.name.clone()));
                }
                (Mode::Ubo | Mode::Uniform, Type::Struct(id)) if default_block => {
                    if let Some((offset, ty, ir)) = member(&self.shader, &layout, *id, root.name())?
                    {
                        found = Some(match var.mode {
                            Mode::Ubo => (Some(var.binding.unwrap_or(0)), offset, ty, ir),
                            _ => (None, offset_of(&var.name)? + offset, ty, ir),
                        });
                    }
                }
                _ => {}
            }
            if found.is_some() {
                break;
            }
        }
        // A member of a named uniform block, which GL names after the block (`Block.member`,
        // `Block[2].member` in an array of blocks), not after its instance; or of a block
        // without an instance name, which GL names as the member alone.
        let mut first_step = 0;
        if found.is_none() {
            for var in self.shader.variables.iter().filter(|v| v.mode == Mode::Ubo) {
                let Type::Struct(id) = var.buffer_type() else {
                    continue;
                };
                let base = var.binding.unwrap_or(0);
                let block = &self.shader.struct_type(*id).name;
                if block == root.name() && steps.len() > 1 {
                    let binding = match root {
                        Step::Index(_, i) if var.array_of_blocks => base + i,
                        Step::Member(_) if var.array_of_blocks => base + self.ubo_array_index,
                        _ => base,
                    };
                    found = Some((Some(binding), 0, Type::Struct(*id), block.clone()));
                    first_step = 1;
                } else if let Some((offset, ty, ir)) =
                    member(&self.shader, &layout, *id, root.name())?
                {
                    found = Some((Some(base), offset, ty, ir));
                }
                if found.is_some() {
                    break;
                }
            }
        }
        let Some((binding, mut offset, mut ty, root_ir)) = found else {
            return Ok(None);
        };
        let mut path = vec![root_ir];
        for (i, step) in steps.iter().enumerate().skip(first_step) {
            if i == 0 {
                if let Step::Index(_, index) = step {
                    (offset, ty) = element(&layout, offset, &ty, *index)?;
                }
                continue;
            }
            let m = step.name();
            if !m.is_empty() {
                let Type::Struct(id) = ty else {
                    return Err(format!("{name}: .{m} of a non-struct"));
                };
                let (o, t, ir) = member(&self.shader, &layout, id, m)?
                    .ok_or_else(|| format!("{name}: no member {m}"))?;
                (offset, ty) = (offset + o, t);
                path.push(ir);
            }
            if let Step::Index(_, index) = step {
                (offset, ty) = element(&layout, offset, &ty, *index)?;
            }
        }
        Ok(Some(UniformPlace {
            binding,
            offset,
            ty,
            path,
        }))
    }
}

/// Where [`StageState::locate_uniform`] found a uniform.
struct UniformPlace {
    binding: Option<u32>,
    offset: u32,
    ty: Type,
    path: Vec<String>,
}

/// Whether the IR names `ir` what GL names `gl`: the same name, or the one the legacy rewrite
/// gave an identifier later GLSL reserves (`sampler` is `shrew_user_sampler`).
fn is_gl_name(ir: &str, gl: &str) -> bool {
    ir == gl || ir.strip_prefix(RENAMED_PREFIX) == Some(gl)
}

/// One step of a uniform name: `member` or `member[index]`.
enum Step {
    Member(String),
    Index(String, u32),
}

impl Step {
    fn name(&self) -> &String {
        match self {
            Step::Member(m) | Step::Index(m, _) => m,
        }
    }
}

/// Splits `a[2].b.c[1]` into its steps (several indices on one member become several steps).
fn split_path(name: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in name.split('.') {
        let mut pieces = part.split('[');
        let base = pieces.next().unwrap_or("").to_string();
        let indices: Vec<u32> = pieces
            .filter_map(|p| p.trim_end_matches(']').trim().parse().ok())
            .collect();
        if indices.is_empty() {
            steps.push(Step::Member(base));
        } else {
            for (k, i) in indices.into_iter().enumerate() {
                steps.push(Step::Index(
                    if k == 0 { base.clone() } else { String::new() },
                    i,
                ));
            }
        }
    }
    steps
}

fn member(
    shader: &Shader,
    layout: &Layout,
    id: StructId,
    name: &str,
) -> Result<Option<(u32, Type, String)>, String> {
    let st = shader.struct_type(id);
    let Some(pos) = st.members.iter().position(|m| is_gl_name(&m.name, name)) else {
        return Ok(None);
    };
    let offsets = layout.member_offsets(id)?;
    let m = &st.members[pos];
    Ok(Some((offsets[pos], m.ty.clone(), m.name.clone())))
}

fn element(layout: &Layout, offset: u32, ty: &Type, index: u32) -> Result<(u32, Type), String> {
    let elem = ty.element().ok_or("indexing a non-array uniform")?;
    if ty.element_count().is_some_and(|n| n != 0 && index >= n) {
        return Err(format!("index {index} is out of bounds"));
    }
    let stride = layout.array_stride(ty)?;
    Ok((offset + stride * index, elem))
}

/// Parses one uniform value for a component of this type, as raw bits.
pub(crate) fn parse_value(text: &str, base: BaseType, bits: u8) -> Option<u64> {
    // piglit reads numbers with strtod/strtol, which stop at the first character that does not
    // belong to the number: `2.0;` is 2, `7u` is 7, and `2.0` for an int is 2.
    let text = text.trim_end_matches([';', ',', 'u', 'U']);
    let as_int = |t: &str| {
        t.parse::<i64>()
            .ok()
            .or_else(|| t.parse::<f64>().ok().map(|f| f as i64))
    };
    // `0x...` is bits; strtol also reads `-0x...`, the bits' negation.
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let hex = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .map(|bits| if negative { bits.wrapping_neg() } else { bits });
    let raw = match (base, bits) {
        (BaseType::Float, 64) => match hex {
            Some(h) => h,
            None => text.parse::<f64>().ok()?.to_bits(),
        },
        (BaseType::Float, _) => match hex {
            Some(h) => h,
            None => text.parse::<f32>().ok()?.to_bits() as u64,
        },
        (BaseType::Bool, _) => (as_int(text)? != 0) as u64,
        (BaseType::Uint, _) => match hex {
            Some(h) => h,
            None => text
                .parse::<u64>()
                .ok()
                .or_else(|| as_int(text).map(|v| v as u64))?,
        },
        (BaseType::Int, _) => match hex {
            Some(h) => h,
            None => as_int(text)? as u64,
        },
    };
    Some(shrew_engine::ops::eval::mask(raw, bits))
}

#[cfg(test)]
mod tests {
    use super::{
        Command, DrawMode, constant_initialized_uniforms, parse_shader_test, parse_value,
        uniform_declarations,
    };
    use shrew_engine::ops::BaseType;

    /// Values read as piglit's strtod/strtol read them: suffixes and separators after the
    /// number are ignored, hexadecimal is bits.
    #[test]
    fn the_first_vertex_convention_turns_triangles_to_their_first_vertex() {
        let strip = DrawMode::TriangleStrip.first_vertex_triangles(5).unwrap();
        // (0 1 2), (2 1 3) turned: each keeps its winding, its first vertex (0, 1, 2) third.
        assert_eq!(strip, [([1, 2, 0], 0), ([3, 2, 1], 1), ([3, 4, 2], 2)]);
        let fan = DrawMode::TriangleFan.first_vertex_triangles(4).unwrap();
        assert_eq!(fan, [([2, 0, 1], 0), ([3, 0, 2], 1)]);
        assert_eq!(DrawMode::Quads.first_vertex_triangles(4), None);
    }

    #[test]
    fn uniform_values_read_as_piglit_reads_them() {
        let uint = |t: &str| parse_value(t, BaseType::Uint, 32);
        assert_eq!(uint("4227922944u"), Some(4_227_922_944));
        assert_eq!(uint("7U;"), Some(7));
        assert_eq!(uint("0xff"), Some(255));
        assert_eq!(parse_value("-1", BaseType::Int, 32), Some(0xffff_ffff));
        assert_eq!(parse_value("2.0,", BaseType::Int, 32), Some(2));
        assert_eq!(uint("twelve"), None);
    }
    use shrew_frontend::shader_test::ShaderSource;

    #[test]
    fn uniform_declarations_and_their_initializers() {
        let source = "#version 120\n// uniform float commented = 1.0;\n\
                      /* a uniform in a comment */ uniform vec4 color = vec4(0.0, 1.0, 0.0, 0.0);\n\
                      uniform vec2[2] pair = vec2[2](vec2(1), vec2(2));\n\
                      uniform mat2 m[2];\nconst float uniformity = 1.0;\n\
                      uniform dvec2 listed = { 0, 1 };\n\
                      layout(binding = 0) uniform Block { vec4 member; } block;\n\
                      void main() { vec4 c = color; float[2] a = { 1.0, 2.0 }; gl_FragColor = c; }";
        let found = uniform_declarations(source);
        let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["color", "pair", "m", "listed"]);
        let listed = found[3].initializer.clone().unwrap();
        assert_eq!(&source[listed], " { 0, 1 }");
        assert_eq!(
            &source[found[0].range.clone()],
            "uniform vec4 color = vec4(0.0, 1.0, 0.0, 0.0)"
        );
        let value = found[1].initializer.clone().unwrap();
        assert_eq!(&source[value], " vec2[2](vec2(1), vec2(2))");
        assert!(found[2].initializer.is_none());
    }

    const TWO_STAGES: &str = "[require]\nGLSL >= 1.20\n\n[vertex shader]\n\
        uniform float f = 2.0;\nvoid main() { gl_Position = gl_Vertex * f; }\n\n\
        [fragment shader]\nuniform float f;\nuniform float g;\n\
        void main() { gl_FragColor = vec4(f, g, 0.0, 1.0); }\n\n\
        [test]\nuniform float g 1.0\ndraw rect -1 -1 2 2\nprobe all rgba 0 1 0 1\n";

    #[test]
    fn initialized_uniforms_become_constants_in_every_stage() {
        let mut test = parse_shader_test(TWO_STAGES).unwrap();
        constant_initialized_uniforms(&mut test).unwrap();
        let sources: Vec<&str> = test
            .sources
            .shaders
            .iter()
            .map(|s| match &s.source {
                ShaderSource::Glsl(text) => text.as_str(),
                _ => "",
            })
            .collect();
        assert!(
            sources[0].contains("const float f = 2.0;"),
            "{}",
            sources[0]
        );
        assert!(
            sources[1].contains("const float f = 2.0;"),
            "{}",
            sources[1]
        );
        assert!(sources[1].contains("uniform float g;"), "{}", sources[1]);

        // A uniform the test sets stays one, its initial value set before the first command.
        let sets_f = TWO_STAGES.replace("uniform float g 1.0", "uniform float f 1.0");
        let mut test = parse_shader_test(&sets_f).unwrap();
        constant_initialized_uniforms(&mut test).unwrap();
        for section in &test.sources.shaders {
            let ShaderSource::Glsl(text) = &section.source else {
                continue;
            };
            assert!(text.contains("uniform float f;"), "{text}");
        }
        assert_eq!(
            test.commands[0].command,
            Command::Uniform {
                glsl_type: "float".into(),
                name: "f".into(),
                values: vec!["2.0".into()],
            }
        );
        let computed = sets_f.replace("float f = 2.0;", "float f = sqrt(2.0);");
        let mut test = parse_shader_test(&computed).unwrap();
        let reason = constant_initialized_uniforms(&mut test).unwrap_err();
        assert!(reason.contains("sets uniform f"), "{reason}");
    }
}
