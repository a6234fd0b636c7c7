//! Splitting a `.shader_test` file into sections, and the `[require]` section.

use super::commands::parse_command;
use super::{
    Comparison, GlProfile, GlRequirement, GlslRequirement, OtherRequirement, Requirements,
    ShaderSection, ShaderSource, ShaderTest, TextSection,
};
use crate::glsl::GlslVersion;
use shrew_engine::ir::Stage;

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
    #[error("line {line}: bad `{command}` command `{text}`: {reason}")]
    BadCommand {
        line: usize,
        command: &'static str,
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
            | ParseError::BadCommand { line, .. }
            | ParseError::MissingShaderFile { line, .. } => *line,
        }
    }
}

/// How a section header's name is handled.
enum SectionKind {
    Require,
    Shader(Stage),
    ShaderFile(Stage),
    Passthrough,
    VertexData,
    Test,
    Other,
}

fn section_kind(name: &str) -> SectionKind {
    const STAGES: [(&str, Stage); 6] = [
        ("vertex", Stage::Vertex),
        ("tessellation control", Stage::TessCtrl),
        ("tessellation evaluation", Stage::TessEval),
        ("geometry", Stage::Geometry),
        ("fragment", Stage::Fragment),
        ("compute", Stage::Compute),
    ];
    match name {
        "require" => return SectionKind::Require,
        "vertex shader passthrough" => return SectionKind::Passthrough,
        "vertex data" => return SectionKind::VertexData,
        "test" => return SectionKind::Test,
        _ => {}
    }
    for (stage_name, stage) in STAGES {
        match name.strip_prefix(stage_name) {
            Some(" shader") => return SectionKind::Shader(stage),
            Some(" shader file") => return SectionKind::ShaderFile(stage),
            _ => {}
        }
    }
    SectionKind::Other
}

/// One section: its name, header line and body lines (each with its 1-based line number and
/// its newline).
struct RawSection<'a> {
    name: &'a str,
    line: usize,
    body: Vec<(usize, &'a str)>,
}

impl RawSection<'_> {
    fn text(&self) -> String {
        self.body.iter().map(|(_, text)| *text).collect()
    }
}

/// Splits the file at its section headers (lines starting with `[`, as shader_runner does).
/// Lines before the first header are ignored.
fn split_sections(text: &str) -> Result<Vec<RawSection<'_>>, ParseError> {
    let mut sections: Vec<RawSection> = Vec::new();
    for (index, line_text) in text.split_inclusive('\n').enumerate() {
        let line = index + 1;
        if let Some(header) = line_text.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                return Err(ParseError::UnclosedSectionHeader {
                    line,
                    text: line_text.trim_end().to_owned(),
                });
            };
            sections.push(RawSection {
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

/// Parses a `.shader_test` file.
pub fn parse_shader_test(text: &str) -> Result<ShaderTest, ParseError> {
    let mut test = ShaderTest::default();
    for section in split_sections(text)? {
        match section_kind(section.name) {
            SectionKind::Require => {
                for &(line, line_text) in &section.body {
                    parse_requirement(&mut test.requirements, line, line_text)?;
                }
            }
            SectionKind::Shader(stage) => test.shaders.push(ShaderSection {
                stage,
                source: ShaderSource::Glsl(section.text()),
                line: section.line,
            }),
            SectionKind::ShaderFile(stage) => {
                let path = section
                    .body
                    .iter()
                    .map(|(_, text)| text.trim())
                    .find(|text| !text.is_empty() && !text.starts_with('#'))
                    .ok_or_else(|| ParseError::MissingShaderFile {
                        line: section.line,
                        section: section.name.to_owned(),
                    })?;
                test.shaders.push(ShaderSection {
                    stage,
                    source: ShaderSource::File(path.to_owned()),
                    line: section.line,
                });
            }
            SectionKind::Passthrough => test.shaders.push(ShaderSection {
                stage: Stage::Vertex,
                source: ShaderSource::Passthrough,
                line: section.line,
            }),
            SectionKind::VertexData => {
                test.vertex_data = Some(TextSection {
                    name: section.name.to_owned(),
                    line: section.line,
                    text: section.text(),
                });
            }
            SectionKind::Test => {
                for &(line, line_text) in &section.body {
                    if let Some(command) = parse_command(line, line_text)? {
                        test.commands.push(command);
                    }
                }
            }
            SectionKind::Other => test.other_sections.push(TextSection {
                name: section.name.to_owned(),
                line: section.line,
                text: section.text(),
            }),
        }
    }
    Ok(test)
}

/// Parses an `X.Y` version into `X * scale + Y` (scale 100 for GLSL, 10 for GL), the
/// arithmetic of shader_runner (which reads `GL >= 3.10` as 4.0).
fn parse_dotted_version(text: &str, scale: u32) -> Option<u32> {
    let (major, minor) = text.split_once('.')?;
    let major: u32 = major.parse().ok()?;
    let minor: u32 = minor.parse().ok()?;
    major.checked_mul(scale)?.checked_add(minor)
}

/// Parses one line of `[require]` into `requirements`.
fn parse_requirement(
    requirements: &mut Requirements,
    line: usize,
    line_text: &str,
) -> Result<(), ParseError> {
    let text = line_text.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(());
    }
    let bad = |reason: &str| ParseError::BadRequirement {
        line,
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let other = |requirements: &mut Requirements| {
        requirements.other.push(OtherRequirement {
            line,
            text: text.to_owned(),
        });
    };
    match words[0] {
        "GLSL" | "GL" => {
            let glsl = words[0] == "GLSL";
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
                return Err(bad("expected `<comparison> X.Y`"));
            };
            let comparison = Comparison::from_symbol(symbol)
                .ok_or_else(|| bad(&format!("unknown comparison `{symbol}`")))?;
            let scale = if glsl { 100 } else { 10 };
            let number = parse_dotted_version(version, scale)
                .ok_or_else(|| bad(&format!("`{version}` is not a version like 1.30")))?;
            if glsl {
                requirements.glsl = Some(GlslRequirement {
                    comparison,
                    version: GlslVersion { number, es },
                    line,
                });
            } else {
                requirements.gl = Some(GlRequirement {
                    comparison,
                    number,
                    es,
                    profile,
                    line,
                });
            }
        }
        "SIZE" => {
            let size = match words[1..] {
                [width, height] => width.parse().ok().zip(height.parse().ok()),
                _ => None,
            };
            requirements.window_size =
                Some(size.ok_or_else(|| bad("expected `SIZE width height`"))?);
        }
        // A lone name is an extension; `GL_MAX_... >= N` is a limit, kept with the others.
        extension if words.len() == 1 && extension.starts_with("GL_") => {
            requirements.extensions.push(extension.to_owned());
        }
        absent if words.len() == 1 && absent.starts_with("!GL_") => {
            requirements.absent_extensions.push(absent[1..].to_owned());
        }
        _ => other(requirements),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "\
# A comment before any section.
[require]
GLSL >= 1.20
GL_ARB_foo
!GL_ARB_bar
GL_MAX_VARYING_COMPONENTS >= 64
SIZE 32 16

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
# set it
uniform vec4 color 0.0 1.0 0.0 1.0
draw rect -1 -1 2 2
probe all rgba 0.0 1.0 0.0 1.0
";

    #[test]
    fn sections_requirements_and_lines() {
        let test = parse_shader_test(EXAMPLE).unwrap();
        let requirements = &test.requirements;
        assert_eq!(
            requirements.glsl,
            Some(GlslRequirement {
                comparison: Comparison::GreaterEqual,
                version: GlslVersion::desktop(120),
                line: 3
            })
        );
        assert_eq!(test.glsl_version(), Some(GlslVersion::desktop(120)));
        assert_eq!(requirements.extensions, ["GL_ARB_foo"]);
        assert_eq!(requirements.absent_extensions, ["GL_ARB_bar"]);
        assert_eq!(requirements.window_size, Some((32, 16)));
        assert_eq!(requirements.other.len(), 1);
        assert_eq!(requirements.other[0].line, 6);

        assert_eq!(test.shaders.len(), 3);
        assert_eq!(test.shaders[0].stage, Stage::Vertex);
        assert_eq!(test.shaders[0].line, 9);
        assert_eq!(
            test.shaders[0].source,
            ShaderSource::Glsl("void main() { gl_Position = gl_Vertex; }\n\n".into())
        );
        assert_eq!(test.shaders_of(Stage::Fragment).count(), 2);
        assert_eq!(test.other_sections.len(), 1);
        assert_eq!(test.other_sections[0].name, "geometry layout");
        assert_eq!(test.other_sections[0].text, "input type GL_POINTS\n\n");
        assert_eq!(test.commands.len(), 3);
        assert_eq!(test.commands[0].line, 24);
    }

    #[test]
    fn version_requirements() {
        let test = parse_shader_test(
            "[require]\nGL ES >= 3.0\nGLSL ES >= 3.00\n[require]\nGL CORE >= 3.2\n",
        )
        .unwrap();
        assert_eq!(test.glsl_version(), Some(GlslVersion::es(300)));
        let gl = test.requirements.gl.unwrap();
        assert_eq!(
            (gl.number, gl.es, gl.profile),
            (32, false, Some(GlProfile::Core))
        );
    }

    #[test]
    fn passthrough_and_file_sections() {
        let test = parse_shader_test(
            "[vertex shader passthrough]\n[fragment shader file]\n\n  shaders/a.frag\n",
        )
        .unwrap();
        assert_eq!(test.shaders[0].source, ShaderSource::Passthrough);
        assert_eq!(
            test.shaders[1].source,
            ShaderSource::File("shaders/a.frag".into())
        );
    }

    #[test]
    fn errors_have_lines() {
        let unclosed = parse_shader_test("[require]\nGLSL >= 1.10\n[vertex shader\n").unwrap_err();
        assert_eq!(unclosed.line(), 3);
        assert!(unclosed.to_string().contains("no closing"));
        for bad in [
            "GLSL >= one",
            "GLSL => 1.10",
            "GL >=",
            "SIZE 10",
            "GLSL >= 1",
        ] {
            let error = parse_shader_test(&format!("[require]\n{bad}\n")).unwrap_err();
            assert!(
                matches!(error, ParseError::BadRequirement { line: 2, .. }),
                "{bad}: {error}"
            );
        }
        let no_file = parse_shader_test("[vertex shader file]\n\n").unwrap_err();
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
            let _ = parse_shader_test(text);
        }
        assert_eq!(parse_shader_test("").unwrap(), ShaderTest::default());
    }
}
