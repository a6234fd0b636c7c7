//! piglit's `.shader_test` files read as shader sources: their sections, and the GLSL of their
//! shader sections as piglit's `shader_runner` gives it to the GL.
//!
//! A `.shader_test` file is a list of sections, each starting with a `[name]` line in column
//! 0: `[require]` (GL/GLSL versions, extensions, window size), one section per shader
//! (`[vertex shader]`, `[fragment shader]`, ...; several of one stage are linked together),
//! `[vertex data]`, and `[test]` (commands: set uniforms, draw, probe pixels).
//! [`parse_sources`] reads the shader sections and the GLSL version `[require]` asks for, and
//! hands the other sections back to the caller (the harness's test runner reads them);
//! [`stage_sources`] turns the shader sections into the sources `shader_runner` would give the
//! GL (with `#version` inserted, the passthrough vertex shader expanded), ready for
//! [`crate::glsl::Glslang::compile_cascade`].
//!
//! Why here: loading one stage of a `.shader_test` as a shader (`shrew compile x.shader_test`,
//! the corpus) needs only this, and the front end must not depend on the test runner.

use crate::glsl::GlslVersion;
use shrew_engine::ir::Stage;
use std::path::Path;

/// Why a `.shader_test` file does not parse; every variant has the 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("line {line}: section header `{text}` has no closing `]`")]
    UnclosedSectionHeader { line: usize, text: String },
    #[error("line {line}: bad requirement `{text}`: {reason}")]
    BadRequirement {
        line: usize,
        text: String,
        reason: String,
    },
    #[error("line {line}: [{section}] names no file")]
    MissingShaderFile { line: usize, section: String },
}

impl ParseError {
    /// The 1-based line of the error.
    pub fn line(&self) -> usize {
        match self {
            ParseError::UnclosedSectionHeader { line, .. }
            | ParseError::BadRequirement { line, .. }
            | ParseError::MissingShaderFile { line, .. } => *line,
        }
    }
}

/// One section of a `.shader_test` file: its name, header line and body lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section<'a> {
    /// The name between the brackets, trimmed.
    pub name: &'a str,
    /// The 1-based line of the `[name]` header.
    pub line: usize,
    /// The lines after the header, up to the next section: each with its 1-based line number
    /// and its newline.
    pub body: Vec<(usize, &'a str)>,
}

impl Section<'_> {
    /// The body as one text.
    pub fn text(&self) -> String {
        self.body.iter().map(|(_, text)| *text).collect()
    }
}

/// Splits the file at its section headers (lines starting with `[`, as shader_runner does).
/// Lines before the first header are ignored.
fn split_sections(text: &str) -> Result<Vec<Section<'_>>, ParseError> {
    let mut sections: Vec<Section> = Vec::new();
    for (index, line_text) in text.split_inclusive('\n').enumerate() {
        let line = index + 1;
        if let Some(header) = line_text.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                return Err(ParseError::UnclosedSectionHeader {
                    line,
                    text: line_text.trim_end().to_owned(),
                });
            };
            sections.push(Section {
                name: header[..end].trim(),
                line,
                body: Vec::new(),
            });
        } else if let Some(section) = sections.last_mut() {
            section.body.push((line, line_text));
        }
    }
    Ok(sections)
}

/// The shader sections of a `.shader_test` file and the GLSL version its `[require]` asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShaderTestSources {
    /// The `GLSL` line of `[require]`.
    pub glsl: Option<GlslRequirement>,
    /// The shader sections, in file order.
    pub shaders: Vec<ShaderSection>,
}

/// Reads the shader sections of a `.shader_test` file and the `GLSL` line of its `[require]`;
/// gives them and every other section (`[require]` too), in file order.
pub fn parse_sources(text: &str) -> Result<(ShaderTestSources, Vec<Section<'_>>), ParseError> {
    let mut sources = ShaderTestSources::default();
    let mut others = Vec::new();
    for section in split_sections(text)? {
        if let Some((stage, source)) = shader_source(&section)? {
            sources.shaders.push(ShaderSection {
                stage,
                source,
                line: section.line,
            });
            continue;
        }
        if section.name == "require" {
            for &(line, text) in &section.body {
                if let Some(VersionRequirement::Glsl(glsl)) =
                    version_requirement(line, text).transpose()?
                {
                    sources.glsl = Some(glsl);
                }
            }
        }
        others.push(section);
    }
    Ok((sources, others))
}

/// The stage and source of a shader section (`[<stage> shader]`, `[<stage> shader file]`,
/// `[vertex shader passthrough]`); `None` for the other sections.
fn shader_source(section: &Section) -> Result<Option<(Stage, ShaderSource)>, ParseError> {
    const STAGES: [(&str, Stage); 6] = [
        ("vertex", Stage::Vertex),
        ("tessellation control", Stage::TessCtrl),
        ("tessellation evaluation", Stage::TessEval),
        ("geometry", Stage::Geometry),
        ("fragment", Stage::Fragment),
        ("compute", Stage::Compute),
    ];
    if section.name == "vertex shader passthrough" {
        return Ok(Some((Stage::Vertex, ShaderSource::Passthrough)));
    }
    for (stage_name, stage) in STAGES {
        match section.name.strip_prefix(stage_name) {
            Some(" shader") => return Ok(Some((stage, ShaderSource::Glsl(section.text())))),
            Some(" shader file") => {
                let path = section
                    .body
                    .iter()
                    .map(|(_, text)| text.trim())
                    .find(|text| !text.is_empty() && !text.starts_with('#'))
                    .ok_or_else(|| ParseError::MissingShaderFile {
                        line: section.line,
                        section: section.name.to_owned(),
                    })?;
                return Ok(Some((stage, ShaderSource::File(path.to_owned()))));
            }
            _ => {}
        }
    }
    Ok(None)
}

impl ShaderTestSources {
    /// The GLSL version the `[require]` section asks for: that of a `GLSL >= X.Y` (or `GLSL ES
    /// >= X.Y`) line, what piglit puts in the `#version` it inserts.
    pub fn glsl_version(&self) -> Option<GlslVersion> {
        self.glsl
            .filter(|requirement| requirement.comparison == Comparison::GreaterEqual)
            .map(|requirement| requirement.version)
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
    /// [`ShaderTestSources::load_shader_files`]).
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

/// A `GLSL ...` or `GL ...` line of `[require]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum VersionRequirement {
    Glsl(GlslRequirement),
    Gl(GlRequirement),
}

/// Reads line `line` of `[require]` if it names a GLSL or GL version; `None` for the other
/// lines.
pub fn version_requirement(
    line: usize,
    line_text: &str,
) -> Option<Result<VersionRequirement, ParseError>> {
    let text = line_text.trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    let glsl = match words.first() {
        Some(&"GLSL") => true,
        Some(&"GL") => false,
        _ => return None,
    };
    let bad = |reason: &str| ParseError::BadRequirement {
        line,
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let mut rest = &words[1..];
    let mut profile = None;
    let mut es = false;
    loop {
        match rest.first() {
            Some(&"CORE") => profile = Some(GlProfile::Core),
            Some(&"COMPAT") => profile = Some(GlProfile::Compatibility),
            Some(&"ES") => es = true,
            _ => break,
        }
        rest = &rest[1..];
    }
    let [symbol, version] = rest else {
        return Some(Err(bad("expected `<comparison> X.Y`")));
    };
    let Some(comparison) = Comparison::from_symbol(symbol) else {
        return Some(Err(bad(&format!("unknown comparison `{symbol}`"))));
    };
    let scale = if glsl { 100 } else { 10 };
    let Some(number) = parse_dotted_version(version, scale) else {
        return Some(Err(bad(&format!("`{version}` is not a version like 1.30"))));
    };
    Some(Ok(if glsl {
        VersionRequirement::Glsl(GlslRequirement {
            comparison,
            version: GlslVersion { number, es },
            line,
        })
    } else {
        VersionRequirement::Gl(GlRequirement {
            comparison,
            number,
            es,
            profile,
            line,
        })
    }))
}

/// Parses an `X.Y` version into `X * scale + Y` (scale 100 for GLSL, 10 for GL), the
/// arithmetic of shader_runner (which reads `GL >= 3.10` as 4.0).
fn parse_dotted_version(text: &str, scale: u32) -> Option<u32> {
    let (major, minor) = text.split_once('.')?;
    let major: u32 = major.parse().ok()?;
    let minor: u32 = minor.parse().ok()?;
    major.checked_mul(scale)?.checked_add(minor)
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
        "line {line}: the shader is in the file `{path}`; load it first (ShaderTestSources::load_shader_files)"
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
pub fn stage_sources(test: &ShaderTestSources) -> Result<Vec<StageSource>, SourceError> {
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

    /// The shader sections and GLSL requirement of `text`, which must parse.
    fn parsed(text: &str) -> ShaderTestSources {
        parse_sources(text).unwrap().0
    }

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
        let test = parsed(LEGACY_TEST);
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
        let es3 = parsed(
            "[require]\nGL ES >= 3.0\nGLSL ES >= 3.00\n[vertex shader passthrough]\n[fragment shader]\nvoid main() {}\n",
        );
        let sources = stage_sources(&es3).unwrap();
        assert_eq!(
            sources[0].source,
            passthrough_vertex_shader(GlslVersion::es(300))
        );
        assert!(sources[0].passthrough);
        assert_eq!(sources[0].file_line(2), None);
        assert_eq!(sources[1].source, "#version 300 es\nvoid main() {}\n");
        let es1 = parsed("[require]\nGLSL ES >= 1.00\n[fragment shader]\nvoid main() {}\n");
        assert!(
            stage_sources(&es1).unwrap()[0]
                .source
                .starts_with("#version 100\n")
        );
    }

    #[test]
    fn source_errors() {
        let no_version = parsed("[require]\nGL >= 2.0\n[fragment shader]\nvoid main() {}\n");
        assert_eq!(
            stage_sources(&no_version),
            Err(SourceError::MissingGlslVersion { line: 3 })
        );
        // A shader with its own #version needs no requirement.
        let versioned = parsed("[fragment shader]\n#version 130\nvoid main() {}\n");
        assert_eq!(
            stage_sources(&versioned).unwrap()[0].source,
            "#version 130\nvoid main() {}\n"
        );

        let dir = std::env::temp_dir().join(format!("shrew-piglit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.frag"), "void main() {}\n").unwrap();
        let mut external = parsed(
            "[require]\nGLSL >= 1.30\n[fragment shader file]\na.frag\n[vertex shader file]\nmissing.vert\n",
        );
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
        let test = parsed(LEGACY_TEST);
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

    const EXAMPLE: &str = "\
# A comment before any section.
[require]
GLSL >= 1.20
GL_ARB_foo

[vertex shader]
void main() { gl_Position = gl_Vertex; }

[fragment shader]
uniform vec4 color;
void main() { gl_FragColor = color; }

[fragment shader]
vec4 helper() { return vec4(1.0); }

[geometry layout]
input type GL_POINTS

[test]
draw rect -1 -1 2 2
";

    #[test]
    fn shader_sections_and_the_others() {
        let (sources, others) = parse_sources(EXAMPLE).unwrap();
        assert_eq!(
            sources.glsl,
            Some(GlslRequirement {
                comparison: Comparison::GreaterEqual,
                version: GlslVersion::desktop(120),
                line: 3
            })
        );
        assert_eq!(sources.glsl_version(), Some(GlslVersion::desktop(120)));
        assert_eq!(sources.shaders.len(), 3);
        assert_eq!(sources.shaders[0].stage, Stage::Vertex);
        assert_eq!(sources.shaders[0].line, 6);
        assert_eq!(
            sources.shaders[0].source,
            ShaderSource::Glsl("void main() { gl_Position = gl_Vertex; }\n\n".into())
        );
        assert_eq!(sources.shaders_of(Stage::Fragment).count(), 2);
        let names: Vec<&str> = others.iter().map(|s| s.name).collect();
        assert_eq!(names, ["require", "geometry layout", "test"]);
        assert_eq!(others[1].text(), "input type GL_POINTS\n\n");
        assert_eq!(others[2].body, [(20, "draw rect -1 -1 2 2\n")]);
    }

    #[test]
    fn version_requirements() {
        let (sources, _) =
            parse_sources("[require]\nGL ES >= 3.0\nGLSL ES >= 3.00\n[require]\nGL CORE >= 3.2\n")
                .unwrap();
        assert_eq!(sources.glsl_version(), Some(GlslVersion::es(300)));
        let Some(Ok(VersionRequirement::Gl(gl))) = version_requirement(5, "GL CORE >= 3.2\n")
        else {
            panic!("not a GL requirement");
        };
        assert_eq!(
            (gl.number, gl.es, gl.profile),
            (32, false, Some(GlProfile::Core))
        );
        assert_eq!(version_requirement(2, "GL_ARB_foo\n"), None);
        // shader_runner's arithmetic: `GL >= 3.10` is 4.0.
        let Some(Ok(VersionRequirement::Gl(gl))) = version_requirement(1, "GL >= 3.10") else {
            panic!("not a GL requirement");
        };
        assert_eq!(gl.number, 40);
    }

    #[test]
    fn passthrough_and_file_sections() {
        let sources =
            parsed("[vertex shader passthrough]\n[fragment shader file]\n\n  shaders/a.frag\n");
        assert_eq!(sources.shaders[0].source, ShaderSource::Passthrough);
        assert_eq!(
            sources.shaders[1].source,
            ShaderSource::File("shaders/a.frag".into())
        );
    }

    #[test]
    fn errors_have_lines() {
        let unclosed = parse_sources("[require]\nGLSL >= 1.10\n[vertex shader\n").unwrap_err();
        assert_eq!(unclosed.line(), 3);
        assert!(unclosed.to_string().contains("no closing"));
        for bad in ["GLSL >= one", "GLSL => 1.10", "GL >=", "GLSL >= 1"] {
            let error = parse_sources(&format!("[require]\n{bad}\n")).unwrap_err();
            assert!(
                matches!(error, ParseError::BadRequirement { line: 2, .. }),
                "{bad}: {error}"
            );
        }
        let no_file = parse_sources("[vertex shader file]\n\n").unwrap_err();
        assert_eq!(
            no_file,
            ParseError::MissingShaderFile {
                line: 1,
                section: "vertex shader file".into()
            }
        );
    }

    #[test]
    fn empty_and_odd_input_does_not_panic() {
        for text in [
            "",
            "\n",
            "[",
            "[]",
            "[require]",
            "[test]\n\u{0}\n",
            "[require]\n!\n",
        ] {
            let _ = parse_sources(text);
        }
        assert_eq!(parsed(""), ShaderTestSources::default());
    }
}
