//! piglit's `.shader_test` files: parsing them, and preparing their GLSL for glslang.
//!
//! A `.shader_test` file is a list of sections, each starting with a `[name]` line in column
//! 0: `[require]` (GL/GLSL versions, extensions, window size), one section per shader
//! (`[vertex shader]`, `[fragment shader]`, ...; several of one stage are linked together),
//! `[vertex data]`, and `[test]` (commands: set uniforms, draw, probe pixels).
//! [`parse_shader_test`] reads all of it; [`stage_sources`] turns the shader sections into the
//! sources piglit's `shader_runner` would give the GL (with `#version` inserted, the
//! passthrough vertex shader expanded), ready for [`crate::glsl::Glslang::compile_cascade`].

mod commands;
mod parse;
pub mod run;
mod textures;

pub use commands::{Command, ExpectedColor, Probe, ProbeRegion, TestCommand, TextureImage};
pub use parse::{ParseError, parse_shader_test};

use crate::glsl::GlslVersion;
use shrew_engine::ir::Stage;
use std::path::Path;

/// A parsed `.shader_test` file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShaderTest {
    /// The `[require]` section.
    pub requirements: Requirements,
    /// The shader sections, in file order.
    pub shaders: Vec<ShaderSection>,
    /// The `[vertex data]` section.
    pub vertex_data: Option<TextSection>,
    /// The commands of the `[test]` section (comments and blank lines left out).
    pub commands: Vec<TestCommand>,
    /// Every other section (`[vertex program]`, `[fragment shader spirv]`,
    /// `[geometry layout]`, ...), kept by name.
    pub other_sections: Vec<TextSection>,
}

impl ShaderTest {
    /// The GLSL version the `[require]` section asks for (see [`Requirements::glsl_version`]).
    pub fn glsl_version(&self) -> Option<GlslVersion> {
        self.requirements.glsl_version()
    }

    /// The shader sections of one stage.
    pub fn shaders_of(&self, stage: Stage) -> impl Iterator<Item = &ShaderSection> {
        self.shaders
            .iter()
            .filter(move |section| section.stage == stage)
    }

    /// Replaces the [`ShaderSource::File`] sections by the files' contents, read relative to
    /// `test_dir` (the directory of the `.shader_test` file).
    pub fn load_shader_files(&mut self, test_dir: &Path) -> Result<(), SourceError> {
        for section in &mut self.shaders {
            if let ShaderSource::File(path) = &section.source {
                let full_path = test_dir.join(path);
                let text = std::fs::read_to_string(&full_path).map_err(|error| {
                    SourceError::Unreadable {
                        line: section.line,
                        path: full_path.display().to_string(),
                        message: error.to_string(),
                    }
                })?;
                section.source = ShaderSource::Glsl(text);
            }
        }
        Ok(())
    }
}

/// A section kept as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextSection {
    /// The name between the brackets.
    pub name: String,
    /// The 1-based line of the `[name]` header.
    pub line: usize,
    /// The lines after the header, up to the next section, with their newlines.
    pub text: String,
}

/// A shader section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderSection {
    pub stage: Stage,
    pub source: ShaderSource,
    /// The 1-based line of the section header; source line `n` is file line `line + n`.
    pub line: usize,
}

/// Where a shader section's GLSL is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShaderSource {
    /// In the section, as written (possibly without `#version`).
    Glsl(String),
    /// `[vertex shader passthrough]`: piglit's fixed vertex shader
    /// ([`PASSTHROUGH_VERTEX_SHADER`]).
    Passthrough,
    /// `[<stage> shader file]`: in this file, relative to the test's directory (see
    /// [`ShaderTest::load_shader_files`]).
    File(String),
}

/// How a requirement compares versions or limits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

impl Comparison {
    /// Parses `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn from_symbol(symbol: &str) -> Option<Comparison> {
        Some(match symbol {
            "==" => Comparison::Equal,
            "!=" => Comparison::NotEqual,
            "<" => Comparison::Less,
            "<=" => Comparison::LessEqual,
            ">" => Comparison::Greater,
            ">=" => Comparison::GreaterEqual,
            _ => return None,
        })
    }
}

/// A `GLSL >= 1.30` or `GLSL ES >= 3.00` requirement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GlslRequirement {
    pub comparison: Comparison,
    pub version: GlslVersion,
    /// The 1-based line in the file.
    pub line: usize,
}

/// A `GL >= 3.2`, `GL ES >= 3.0`, `GL CORE >= 3.1` or `GL COMPAT >= 3.1` requirement.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GlRequirement {
    pub comparison: Comparison,
    /// The version times 10 (32 for 3.2).
    pub number: u32,
    pub es: bool,
    /// The core profile (`CORE`) or the compatibility one (`COMPAT`); `None` if unsaid.
    pub profile: Option<GlProfile>,
    /// The 1-based line in the file.
    pub line: usize,
}

/// An OpenGL profile a requirement names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GlProfile {
    Core,
    Compatibility,
}

/// A line of `[require]` that is not a version, an extension or the window size (limits such
/// as `GL_MAX_VARYING_COMPONENTS >= 64`, `SPIRV YES`, `rlimit ...`), kept as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherRequirement {
    /// The 1-based line in the file.
    pub line: usize,
    /// The line, trimmed.
    pub text: String,
}

/// The `[require]` section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    pub glsl: Option<GlslRequirement>,
    pub gl: Option<GlRequirement>,
    /// Extensions that must be supported (`GL_ARB_gpu_shader5`).
    pub extensions: Vec<String>,
    /// Extensions that must not be supported (`!GL_ARB_foo`).
    pub absent_extensions: Vec<String>,
    /// `SIZE w h`: the window size (piglit's default is 250×250).
    pub window_size: Option<(u32, u32)>,
    pub other: Vec<OtherRequirement>,
}

impl Requirements {
    /// The GLSL version of a `GLSL >= X.Y` (or `GLSL ES >= X.Y`) line: what piglit puts in the
    /// `#version` it inserts.
    pub fn glsl_version(&self) -> Option<GlslVersion> {
        self.glsl
            .filter(|requirement| requirement.comparison == Comparison::GreaterEqual)
            .map(|requirement| requirement.version)
    }
}

/// piglit's passthrough vertex shader (`shader_runner.c`), without `#version`: it declares
/// `piglit_vertex` with `in` from GLSL 1.30 on and with `attribute` before (the legacy rewrite
/// of [`crate::glsl::Glslang::compile_cascade`] handles that case).
pub const PASSTHROUGH_VERTEX_SHADER: &str = "#if __VERSION__ >= 130\n\
     in vec4 piglit_vertex;\n\
     #else\n\
     attribute vec4 piglit_vertex;\n\
     #endif\n\
     void main() { gl_Position = piglit_vertex; }\n";

/// The passthrough vertex shader with `#version` for `version`.
pub fn passthrough_vertex_shader(version: GlslVersion) -> String {
    format!(
        "#version {}\n{PASSTHROUGH_VERTEX_SHADER}",
        version.directive()
    )
}

/// One stage's GLSL ready for glslang.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageSource {
    pub stage: Stage,
    /// The GLSL, with `#version` inserted when the section had none.
    pub source: String,
    /// The 1-based line of the section header in the `.shader_test` file.
    pub section_line: usize,
    /// Whether a `#version` line was inserted before the section's text.
    pub version_inserted: bool,
    /// Whether this is piglit's passthrough vertex shader.
    pub passthrough: bool,
}

impl StageSource {
    /// The `.shader_test` line of line `source_line` (1-based) of [`source`](Self::source),
    /// e.g. of a glslang diagnostic. `None` for the inserted `#version` line and the
    /// passthrough shader (which has no lines in the file: its section header line is the
    /// closest answer, [`section_line`](Self::section_line)).
    pub fn file_line(&self, source_line: usize) -> Option<usize> {
        if self.passthrough {
            return None;
        }
        let section_text_line = if self.version_inserted {
            source_line.checked_sub(1).filter(|&line| line > 0)?
        } else {
            source_line
        };
        Some(self.section_line + section_text_line)
    }

    /// Where line `source_line` of the source is in the `.shader_test` called `file`:
    /// `file:LINE`, the section header's line for the lines the file does not have.
    pub fn location(&self, file: &str, source_line: usize) -> String {
        let line = self.file_line(source_line).unwrap_or(self.section_line);
        format!("{file}:{line}")
    }
}

/// Why [`stage_sources`] cannot prepare a shader.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error(
        "line {line}: the shader has no #version and [require] has no `GLSL >= X.Y` line to take \
         it from"
    )]
    MissingGlslVersion { line: usize },
    #[error(
        "line {line}: the shader is in the file `{path}`; load it first (ShaderTest::load_shader_files)"
    )]
    ExternalFile { line: usize, path: String },
    #[error("line {line}: cannot read the shader file `{path}`: {message}")]
    Unreadable {
        line: usize,
        path: String,
        message: String,
    },
}

/// The GLSL of every shader section, in file order, as piglit's `shader_runner` compiles it:
/// a section without `#version ` anywhere in its text gets `#version N` (`N es` for GLSL ES
/// but 1.00) from the `[require]` GLSL line prepended, and `[vertex shader passthrough]`
/// becomes [`passthrough_vertex_shader`].
pub fn stage_sources(test: &ShaderTest) -> Result<Vec<StageSource>, SourceError> {
    let required_version = test.glsl_version();
    test.shaders
        .iter()
        .map(|section| {
            let (text, passthrough) = match &section.source {
                ShaderSource::Glsl(text) => (text.as_str(), false),
                ShaderSource::Passthrough => (PASSTHROUGH_VERTEX_SHADER, true),
                ShaderSource::File(path) => {
                    return Err(SourceError::ExternalFile {
                        line: section.line,
                        path: path.clone(),
                    });
                }
            };
            // The same test as shader_runner's `strstr(shader_string, "#version ")`.
            let version_inserted = !text.contains("#version ");
            let source = if version_inserted {
                let version = required_version
                    .ok_or(SourceError::MissingGlslVersion { line: section.line })?;
                format!("#version {}\n{text}", version.directive())
            } else {
                text.to_owned()
            };
            Ok(StageSource {
                stage: section.stage,
                source,
                section_line: section.line,
                version_inserted,
                passthrough,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glsl::Glslang;

    const LEGACY_TEST: &str = "\
[require]
GLSL >= 1.10

[vertex shader]
void main()
{
  gl_Position = gl_Vertex;
  gl_FrontColor = vec4(0.0, 1.0, 0.0, 1.0);
}

[fragment shader]
#version 110
void main()
{
  gl_FragColor = gl_Color;
}

[test]
draw rect -1 -1 2 2
probe all rgba 0.0 1.0 0.0 1.0
";

    #[test]
    fn sources_get_the_required_version_and_map_lines_back() {
        let test = parse_shader_test(LEGACY_TEST).unwrap();
        let sources = stage_sources(&test).unwrap();
        let vertex = &sources[0];
        assert!(vertex.source.starts_with("#version 110\nvoid main()\n"));
        assert!(vertex.version_inserted);
        // Line 4 of the source (`  gl_Position = gl_Vertex;`) is line 7 of the file.
        assert_eq!(
            vertex.source.lines().nth(3),
            Some("  gl_Position = gl_Vertex;")
        );
        assert_eq!(vertex.file_line(4), Some(7));
        assert_eq!(vertex.file_line(1), None);
        let fragment = &sources[1];
        assert!(!fragment.version_inserted);
        assert_eq!(
            fragment.source.lines().nth(3),
            Some("  gl_FragColor = gl_Color;")
        );
        assert_eq!(fragment.file_line(4), Some(15));
    }

    #[test]
    fn es_versions_and_passthrough() {
        let es3 = parse_shader_test("[require]\nGL ES >= 3.0\nGLSL ES >= 3.00\n[vertex shader passthrough]\n[fragment shader]\nvoid main() {}\n").unwrap();
        let sources = stage_sources(&es3).unwrap();
        assert_eq!(
            sources[0].source,
            passthrough_vertex_shader(GlslVersion::es(300))
        );
        assert!(sources[0].passthrough);
        assert_eq!(sources[0].file_line(2), None);
        assert_eq!(sources[1].source, "#version 300 es\nvoid main() {}\n");
        let es1 =
            parse_shader_test("[require]\nGLSL ES >= 1.00\n[fragment shader]\nvoid main() {}\n")
                .unwrap();
        assert!(
            stage_sources(&es1).unwrap()[0]
                .source
                .starts_with("#version 100\n")
        );
    }

    #[test]
    fn source_errors() {
        let no_version =
            parse_shader_test("[require]\nGL >= 2.0\n[fragment shader]\nvoid main() {}\n").unwrap();
        assert_eq!(
            stage_sources(&no_version),
            Err(SourceError::MissingGlslVersion { line: 3 })
        );
        // A shader with its own #version needs no requirement.
        let versioned =
            parse_shader_test("[fragment shader]\n#version 130\nvoid main() {}\n").unwrap();
        assert_eq!(
            stage_sources(&versioned).unwrap()[0].source,
            "#version 130\nvoid main() {}\n"
        );

        let dir = std::env::temp_dir().join(format!("shrew-piglit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.frag"), "void main() {}\n").unwrap();
        let mut external = parse_shader_test("[require]\nGLSL >= 1.30\n[fragment shader file]\na.frag\n[vertex shader file]\nmissing.vert\n").unwrap();
        assert!(matches!(
            stage_sources(&external),
            Err(SourceError::ExternalFile { line: 3, .. })
        ));
        let error = external.load_shader_files(&dir).unwrap_err();
        assert!(
            matches!(error, SourceError::Unreadable { line: 5, .. }),
            "{error}"
        );
        assert_eq!(
            external.shaders[0].source,
            ShaderSource::Glsl("void main() {}\n".into())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn legacy_test_compiles_with_linked_varyings() {
        let Some(glslang) = Glslang::for_tests() else {
            return;
        };
        let test = parse_shader_test(LEGACY_TEST).unwrap();
        let sources = stage_sources(&test).unwrap();
        let interfaces: Vec<_> = sources
            .iter()
            .map(|source| {
                let compiled = glslang
                    .compile_cascade(&source.source, source.stage)
                    .unwrap();
                compiled.legacy_interface.unwrap()
            })
            .collect();
        assert_eq!(interfaces[0].inputs[0].name, "piglit_vertex");
        assert_eq!(
            interfaces[0].varyings[0].name,
            interfaces[1].varyings[0].name
        );
        assert_eq!(interfaces[1].outputs[0].location, Some(0));

        let passthrough = passthrough_vertex_shader(GlslVersion::desktop(110));
        let compiled = glslang
            .compile_cascade(&passthrough, Stage::Vertex)
            .unwrap();
        assert!(compiled.legacy_interface.unwrap().is_empty());
    }
}
