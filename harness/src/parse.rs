//! A whole `.shader_test` file as the test runner reads it: the shader sources (the front end's
//! [`parse_sources`], which also reads the GLSL version) and the sections only a runner needs,
//! `[require]`'s other lines, `[vertex data]` and the `[test]` commands.

use crate::commands::{TestCommand, parse_command};
use crate::vertex_data::VertexData;
use shrew_frontend::shader_test::{
    self, GlRequirement, Section, ShaderTestSources, VersionRequirement, parse_sources,
    version_requirement,
};

/// A parsed `.shader_test` file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShaderTest {
    /// The shader sections and the GLSL version `[require]` asks for.
    pub sources: ShaderTestSources,
    /// The rest of the `[require]` section.
    pub requirements: Requirements,
    /// The `[vertex data]` section.
    pub vertex_data: Option<VertexData>,
    /// The commands of the `[test]` section (comments and blank lines left out).
    pub commands: Vec<TestCommand>,
    /// Every other section (`[vertex program]`, `[fragment shader spirv]`,
    /// `[geometry layout]`, ...), kept by name.
    pub other_sections: Vec<TextSection>,
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

impl From<&Section<'_>> for TextSection {
    fn from(section: &Section) -> TextSection {
        TextSection {
            name: section.name.to_owned(),
            line: section.line,
            text: section.text(),
        }
    }
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

/// The `[require]` section but its GLSL version (in [`ShaderTest::sources`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    pub gl: Option<GlRequirement>,
    /// Extensions that must be supported (`GL_ARB_gpu_shader5`).
    pub extensions: Vec<String>,
    /// Extensions that must not be supported (`!GL_ARB_foo`).
    pub absent_extensions: Vec<String>,
    /// `SIZE w h`: the window size (piglit's default is 250×250).
    pub window_size: Option<(u32, u32)>,
    pub other: Vec<OtherRequirement>,
}

/// Why a `.shader_test` file does not parse; every variant has the 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The sections, or a requirement.
    #[error(transparent)]
    Sources(#[from] shader_test::ParseError),
    #[error("line {line}: bad `{command}` command `{text}`: {reason}")]
    BadCommand {
        line: usize,
        command: &'static str,
        text: String,
        reason: String,
    },
}

impl ParseError {
    /// The 1-based line of the error.
    pub fn line(&self) -> usize {
        match self {
            ParseError::Sources(error) => error.line(),
            ParseError::BadCommand { line, .. } => *line,
        }
    }
}

/// Parses a `.shader_test` file.
pub fn parse_shader_test(text: &str) -> Result<ShaderTest, ParseError> {
    let (sources, sections) = parse_sources(text)?;
    let mut test = ShaderTest {
        sources,
        ..ShaderTest::default()
    };
    for section in &sections {
        match section.name {
            "require" => {
                for &(line, line_text) in &section.body {
                    parse_requirement(&mut test.requirements, line, line_text)?;
                }
            }
            "vertex data" => test.vertex_data = Some(VertexData::parse(&section.body)?),
            "test" => {
                for &(line, line_text) in &section.body {
                    if let Some(command) = parse_command(line, line_text)? {
                        test.commands.push(command);
                    }
                }
            }
            _ => test.other_sections.push(section.into()),
        }
    }
    Ok(test)
}

/// Parses one line of `[require]` into `requirements` (the GLSL version is the front end's).
fn parse_requirement(
    requirements: &mut Requirements,
    line: usize,
    line_text: &str,
) -> Result<(), ParseError> {
    let text = line_text.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(());
    }
    match version_requirement(line, text).transpose()? {
        Some(VersionRequirement::Gl(gl)) => requirements.gl = Some(gl),
        Some(VersionRequirement::Glsl(_)) => {}
        None => {
            let words: Vec<&str> = text.split_whitespace().collect();
            match words[0] {
                "SIZE" => {
                    let size = match words[1..] {
                        [width, height] => width.parse().ok().zip(height.parse().ok()),
                        _ => None,
                    };
                    requirements.window_size =
                        Some(size.ok_or_else(|| shader_test::ParseError::BadRequirement {
                            line,
                            text: text.to_owned(),
                            reason: "expected `SIZE width height`".to_owned(),
                        })?);
                }
                // A lone name is an extension; `GL_MAX_... >= N` is a limit, kept with the
                // others.
                extension if words.len() == 1 && extension.starts_with("GL_") => {
                    requirements.extensions.push(extension.to_owned());
                }
                absent if words.len() == 1 && absent.starts_with("!GL_") => {
                    requirements.absent_extensions.push(absent[1..].to_owned());
                }
                _ => requirements.other.push(OtherRequirement {
                    line,
                    text: text.to_owned(),
                }),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shrew_engine::ir::Stage;
    use shrew_frontend::glsl::GlslVersion;
    use shrew_frontend::shader_test::GlProfile;

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
        assert_eq!(test.sources.glsl_version(), Some(GlslVersion::desktop(120)));
        let requirements = &test.requirements;
        assert_eq!(requirements.extensions, ["GL_ARB_foo"]);
        assert_eq!(requirements.absent_extensions, ["GL_ARB_bar"]);
        assert_eq!(requirements.window_size, Some((32, 16)));
        assert_eq!(requirements.other.len(), 1);
        assert_eq!(requirements.other[0].line, 6);

        assert_eq!(test.sources.shaders.len(), 3);
        assert_eq!(test.sources.shaders_of(Stage::Fragment).count(), 2);
        assert_eq!(test.other_sections.len(), 1);
        assert_eq!(test.other_sections[0].name, "geometry layout");
        assert_eq!(test.other_sections[0].text, "input type GL_POINTS\n\n");
        assert_eq!(test.commands.len(), 3);
        assert_eq!(test.commands[0].line, 24);
    }

    #[test]
    fn gl_requirements() {
        let test = parse_shader_test(
            "[require]\nGL ES >= 3.0\nGLSL ES >= 3.00\n[require]\nGL CORE >= 3.2\n",
        )
        .unwrap();
        assert_eq!(test.sources.glsl_version(), Some(GlslVersion::es(300)));
        let gl = test.requirements.gl.unwrap();
        assert_eq!(
            (gl.number, gl.es, gl.profile),
            (32, false, Some(GlProfile::Core))
        );
    }

    #[test]
    fn errors_have_lines() {
        for bad in ["GL >=", "SIZE 10", "GLSL >= 1"] {
            let error = parse_shader_test(&format!("[require]\n{bad}\n")).unwrap_err();
            assert!(
                matches!(
                    error,
                    ParseError::Sources(shader_test::ParseError::BadRequirement { line: 2, .. })
                ),
                "{bad}: {error}"
            );
        }
        let command = parse_shader_test("[test]\n\nprobe rgba 1 2 0 1\n").unwrap_err();
        assert_eq!(command.line(), 3);
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
