//! The commands of the `[test]` section, parsed once into [`Command`]s so that the executor
//! matches on what it runs and names what it skips.
//!
//! Numbers are read as shader_runner reads them: floats with `strtod` (so `inf` and `nan`
//! work) or, written `0x...`, as the bits of an IEEE float; pixel coordinates are truncated
//! to integers. Like shader_runner, a command ignores values beyond those it needs
//! (`probe rgb 0 0 0 1 0 1` is `probe rgb 0 0 0 1 0`) and text after `#` is a comment.

use crate::parse::ParseError;
use shrew_engine::ops::BaseType;

/// A `[test]` command and its 1-based line.
#[derive(Clone, Debug, PartialEq)]
pub struct TestCommand {
    /// The 1-based line in the file.
    pub line: usize,
    pub command: Command,
}

/// One command of the `[test]` section.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `uniform TYPE NAME VALUES...`: the values as written (the type decides how to read
    /// them: floats, integers, 64-bit integers, doubles, ...).
    Uniform {
        /// `vec4`, `int`, `dmat3x2`, `uint64_t`, ...
        glsl_type: String,
        /// The uniform's name with any array index or member path (`colors[2]`, `s.field`).
        name: String,
        values: Vec<String>,
    },
    /// `clear color r g b a`.
    ClearColor([f32; 4]),
    /// `clear`.
    Clear,
    /// `ortho`: the projection maps window coordinates to clip space; with four values
    /// `ortho left right bottom top`, that box.
    Ortho(Option<[f32; 4]>),
    /// `draw rect [ortho] [patch] x y w h`: a rectangle in normalized device coordinates, or
    /// in window pixels with `ortho`; `patch` draws it as a patch (tessellation tests).
    DrawRect {
        rect: [f32; 4],
        ortho: bool,
        patch: bool,
    },
    /// `draw arrays [instanced] MODE FIRST COUNT [INSTANCES]`: the vertices `FIRST..FIRST +
    /// COUNT` of `[vertex data]` as primitives of `MODE` (`GL_TRIANGLES`, ...).
    DrawArrays {
        mode: String,
        first: usize,
        count: usize,
        /// `None` without `instanced`.
        instances: Option<u32>,
    },
    /// `draw rect tex x y w h tx ty tw th`: a rectangle with texture coordinates.
    DrawRectTex { rect: [f32; 4], tex: [f32; 4] },
    /// A `probe ...` or `relative probe ...` command.
    Probe(Probe),
    /// `tolerance r g b a`: the per-channel tolerance of the following probes.
    Tolerance([f32; 4]),
    /// `fb ...` (`fb tex 2d 0`, `fb draw winsys`, ...): draws or reads go to another
    /// framebuffer; the words after `fb`.
    Framebuffer(String),
    /// `texture rgbw|checkerboard|shadow1D|shadow2D UNIT ...`: a new texture on a texture unit.
    Texture { unit: u32, image: TextureImage },
    /// `texparameter TARGET NAME VALUE`: sets state of the texture the last `texture` command
    /// made.
    TexParameter {
        target: String,
        name: String,
        value: String,
    },
    /// `ubo array index N`: the following `uniform` commands that name a member of an array
    /// of uniform blocks by the block's name (`Block.member`) set element `N` of the array
    /// (its elements counted in order, an array of arrays flattened).
    UboArrayIndex(u32),
    /// `compute X Y Z`: a dispatch of the compute shader over that many workgroups.
    Compute([u32; 3]),
    /// `image texture UNIT [FORMAT]`: the texture on texture unit `UNIT` is also image unit
    /// `UNIT`, which image uniforms name.
    ImageTexture { unit: u32 },
    /// `atomic counters N` (buffer 0) and `atomic counter buffer B N`: an atomic counter
    /// buffer of `N` zeroed counters at binding `B`.
    AtomicCounters { buffer: u32, count: u32 },
    /// `atomic counter B I VALUE`: counter `I` (dword `I`) of atomic counter buffer `B` set to
    /// `VALUE`.
    SetAtomicCounter { buffer: u32, index: u32, value: u32 },
    /// `probe atomic counter I OP VALUE` (counter `I` of buffer 0) and `probe atomic counter
    /// buffer B OFFSET OP VALUE`: the counter at byte `offset` of buffer `buffer` compared
    /// with `value`.
    ProbeAtomicCounter {
        buffer: u32,
        offset: u32,
        op: Comparison,
        value: u32,
    },
    /// `ssbo B SIZE`: a zeroed SSBO of `SIZE` bytes at binding `B`.
    Ssbo { binding: u32, size: u32 },
    /// `ssbo B subdata TYPE OFFSET VALUES...`: the values, of a scalar type (`int`, `uint`,
    /// `float`, `double`, `int64`, `uint64`), written from byte `OFFSET` of SSBO `B`.
    SsboSubdata {
        binding: u32,
        bytes: Vec<u8>,
        offset: u32,
    },
    /// `probe ssbo TYPE B OFFSET OP VALUE`: the `int` or `uint` at byte `OFFSET` of SSBO `B`
    /// compared with `VALUE`.
    ProbeSsbo {
        binding: u32,
        offset: u32,
        signed: bool,
        op: Comparison,
        value: i64,
    },
    /// Any other command (`ssbo ...`, ...), as written
    /// (comment removed), so that a runner can report what it skipped.
    Other(String),
}

impl Command {
    /// The command's name for reports: `uniform`, `draw rect`, `probe`, ... and for
    /// [`Command::Other`] its first two words.
    pub fn name(&self) -> String {
        match self {
            Command::Uniform { .. } => "uniform".into(),
            Command::ClearColor(_) => "clear color".into(),
            Command::Clear => "clear".into(),
            Command::Ortho(_) => "ortho".into(),
            Command::DrawRect { .. } => "draw rect".into(),
            Command::DrawRectTex { .. } => "draw rect tex".into(),
            Command::DrawArrays {
                mode, instances, ..
            } => match instances {
                Some(_) => format!("draw arrays instanced {mode}"),
                None => format!("draw arrays {mode}"),
            },
            Command::Probe(_) => "probe".into(),
            Command::Tolerance(_) => "tolerance".into(),
            Command::Framebuffer(_) => "fb".into(),
            Command::Texture { image, .. } => format!("texture {}", image.name()),
            Command::TexParameter { .. } => "texparameter".into(),
            Command::UboArrayIndex(_) => "ubo array index".into(),
            Command::Compute(_) => "compute".into(),
            Command::AtomicCounters { .. } => "atomic counters".into(),
            Command::SetAtomicCounter { .. } => "atomic counter".into(),
            Command::ProbeAtomicCounter { .. } => "probe atomic counter".into(),
            Command::ImageTexture { .. } => "image texture".into(),
            Command::Ssbo { .. } => "ssbo".into(),
            Command::SsboSubdata { .. } => "ssbo subdata".into(),
            Command::ProbeSsbo { .. } => "probe ssbo".into(),
            Command::Other(text) => text
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// How a probe compares what it reads with what it expects.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

impl Comparison {
    fn parse(word: &str) -> Option<Comparison> {
        Some(match word {
            "==" => Comparison::Equal,
            "!=" => Comparison::NotEqual,
            "<" => Comparison::Less,
            "<=" => Comparison::LessOrEqual,
            ">" => Comparison::Greater,
            ">=" => Comparison::GreaterOrEqual,
            _ => return None,
        })
    }

    /// Whether `observed` compares so with `expected`.
    pub fn holds<T: PartialOrd>(self, observed: T, expected: T) -> bool {
        match self {
            Comparison::Equal => observed == expected,
            Comparison::NotEqual => observed != expected,
            Comparison::Less => observed < expected,
            Comparison::LessOrEqual => observed <= expected,
            Comparison::Greater => observed > expected,
            Comparison::GreaterOrEqual => observed >= expected,
        }
    }
}

/// The texels of a `texture` command, as piglit's helpers make them (one mip level, nearest
/// filtering, clamped to the edge unless said otherwise; row 0 at the bottom).
#[derive(Clone, Debug, PartialEq)]
pub enum TextureImage {
    /// `texture rgbw UNIT (w, h) [FORMAT]`: quadrants red (bottom left), green (bottom right),
    /// blue (top left) and white, opaque, in a format of `channels` colour channels (4 for
    /// RGBA, 3 for RGB, 2 for RG, 1 for R; the missing ones read as 0 and alpha as 1).
    Rgbw {
        width: u32,
        height: u32,
        channels: u8,
    },
    /// `texture checkerboard UNIT LEVEL (w, h) (colour) (colour)`: 2×2 checks of `w/2 × h/2`
    /// texels, the first colour at the bottom left and top right, at mip level `level` only,
    /// clamped to a red border.
    Checkerboard {
        level: u32,
        width: u32,
        height: u32,
        colors: [[f32; 4]; 2],
    },
    /// `texture shadow1D UNIT (w)` and `texture shadow2D UNIT (w, h)`: depth `x / (w - 1)`,
    /// compared with `GREATER`.
    Shadow { dims: u8, width: u32, height: u32 },
    /// `texture miptree UNIT`: 8×8 with four mip levels, solid red, green, blue and white.
    Miptree,
}

impl TextureImage {
    pub fn name(&self) -> &'static str {
        match self {
            TextureImage::Rgbw { .. } => "rgbw",
            TextureImage::Checkerboard { .. } => "checkerboard",
            TextureImage::Shadow { dims: 1, .. } => "shadow1D",
            TextureImage::Shadow { .. } => "shadow2D",
            TextureImage::Miptree => "miptree",
        }
    }
}

/// A pixel probe: where, and the colour expected there.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub region: ProbeRegion,
    pub expected: ExpectedColor,
}

/// The pixels a [`Probe`] checks.
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeRegion {
    /// `probe rgba x y ...`: one pixel.
    Pixel { x: i32, y: i32 },
    /// `probe rect rgba (x, y, w, h) ...`: a rectangle of pixels.
    Rect {
        x: i32,
        y: i32,
        width: i32,
        height: i32,
    },
    /// `probe all rgba ...`: the whole framebuffer.
    All,
    /// `relative probe rgba (x, y) ...`: the pixel at this fraction of the framebuffer's size.
    RelativePixel { x: f32, y: f32 },
    /// `relative probe rect rgba (x, y, w, h) ...`: a rectangle in fractions of the size.
    RelativeRect {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
    },
}

/// The expected colour of a probe: `rgb` probes ignore alpha.
#[derive(Clone, Debug, PartialEq)]
pub enum ExpectedColor {
    Rgb([f32; 3]),
    Rgba([f32; 4]),
}

/// Reads a number as shader_runner's `get_floats` does.
fn parse_float(text: &str) -> Option<f32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(bits) => u32::from_str_radix(bits, 16).ok().map(f32::from_bits),
        None => text.parse().ok(),
    }
}

/// Parses the `[test]` line `line_text` (line `line` of the file); `None` for blank lines and
/// comments.
pub(crate) fn parse_command(
    line: usize,
    line_text: &str,
) -> Result<Option<TestCommand>, ParseError> {
    let text = match line_text.find('#') {
        Some(comment) => &line_text[..comment],
        None => line_text,
    }
    .trim();
    if text.is_empty() {
        return Ok(None);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let command = match words.as_slice() {
        ["uniform", rest @ ..] => parse_uniform(line, text, rest)?,
        ["clear", "color", ..] => {
            Command::ClearColor(floats(line, "clear color", text, &words[2..])?)
        }
        ["clear"] => Command::Clear,
        ["ortho"] => Command::Ortho(None),
        ["ortho", ..] => Command::Ortho(Some(floats(line, "ortho", text, &words[1..])?)),
        ["draw", "rect", "tex", ..] => {
            let values: [f32; 8] = floats(line, "draw rect tex", text, &words[3..])?;
            Command::DrawRectTex {
                rect: std::array::from_fn(|i| values[i]),
                tex: std::array::from_fn(|i| values[4 + i]),
            }
        }
        ["draw", "rect", rest @ ..] => {
            let flag_count = rest
                .iter()
                .take_while(|word| matches!(**word, "ortho" | "patch"))
                .count();
            let (flags, numbers) = rest.split_at(flag_count);
            Command::DrawRect {
                rect: floats(line, "draw rect", text, numbers)?,
                ortho: flags.contains(&"ortho"),
                patch: flags.contains(&"patch"),
            }
        }
        ["draw", "arrays", rest @ ..] => {
            let (instanced, rest) = match rest {
                ["instanced", rest @ ..] => (true, rest),
                _ => (false, rest),
            };
            let number = |word: Option<&&str>, what: &str| {
                word.and_then(|w| w.parse::<usize>().ok())
                    .ok_or_else(|| ParseError::BadCommand {
                        line,
                        command: "draw arrays",
                        text: text.to_owned(),
                        reason: format!("no {what}"),
                    })
            };
            let mode = rest.first().ok_or_else(|| ParseError::BadCommand {
                line,
                command: "draw arrays",
                text: text.to_owned(),
                reason: "no primitive mode".into(),
            })?;
            Command::DrawArrays {
                mode: (*mode).to_owned(),
                first: number(rest.get(1), "first vertex")?,
                count: number(rest.get(2), "vertex count")?,
                instances: match instanced {
                    true => Some(number(rest.get(3), "instance count")? as u32),
                    false => None,
                },
            }
        }
        ["tolerance", rest @ ..] => Command::Tolerance(floats(line, "tolerance", text, rest)?),
        ["compute", rest @ ..] => {
            let [x, y, z]: [f32; 3] = floats(line, "compute", text, rest)?;
            Command::Compute([x, y, z].map(|n| n.max(0.0) as u32))
        }
        ["ubo", "array", "index", index] if index.parse::<u32>().is_ok() => {
            Command::UboArrayIndex(index.parse().unwrap_or_default())
        }
        ["image", "texture", unit, ..] if unit.parse::<u32>().is_ok() => Command::ImageTexture {
            unit: unit.parse().unwrap_or_default(),
        },
        ["fb", ..] => Command::Framebuffer(words[1..].join(" ")),
        ["texture", kind, unit, rest @ ..] => match parse_texture(line, text, kind, unit, rest)? {
            Some(command) => command,
            None => Command::Other(text.to_owned()),
        },
        ["texparameter", target, name, value] => Command::TexParameter {
            target: (*target).to_owned(),
            name: (*name).to_owned(),
            value: (*value).to_owned(),
        },
        ["atomic", "counters", count] | ["atomic", "counter", "buffer", _, count]
            if count.parse::<u32>().is_ok() =>
        {
            Command::AtomicCounters {
                buffer: match words.as_slice() {
                    [.., buffer, _] if words.len() == 5 => buffer.parse().unwrap_or_default(),
                    _ => 0,
                },
                count: count.parse().unwrap_or_default(),
            }
        }
        ["atomic", "counter", buffer, index, value] if *buffer != "buffer" => {
            let number = |word: &str| parse_u32(word, line, text, "atomic counter");
            Command::SetAtomicCounter {
                buffer: number(buffer)?,
                index: number(index)?,
                value: number(value)?,
            }
        }
        ["ssbo", binding, size] if size.parse::<u32>().is_ok() => Command::Ssbo {
            binding: parse_u32(binding, line, text, "ssbo")?,
            size: size.parse().unwrap_or_default(),
        },
        ["ssbo", binding, "subdata", ty, offset, values @ ..] => {
            let bad = |reason: String| ParseError::BadCommand {
                line,
                command: "ssbo subdata",
                text: text.to_owned(),
                reason,
            };
            let mut bytes = Vec::new();
            for value in values {
                bytes.extend(
                    scalar_bytes(ty, value)
                        .ok_or_else(|| bad(format!("`{value}` is not a value of type {ty}")))?,
                );
            }
            Command::SsboSubdata {
                binding: parse_u32(binding, line, text, "ssbo subdata")?,
                bytes,
                offset: parse_u32(offset, line, text, "ssbo subdata")?,
            }
        }
        [
            "probe",
            "ssbo",
            ty @ ("int" | "uint"),
            binding,
            offset,
            op,
            value,
        ] => {
            let parsed = Comparison::parse(op).zip(parse_integer(value));
            let Some((op, value)) = parsed else {
                return Err(ParseError::BadCommand {
                    line,
                    command: "probe ssbo",
                    text: text.to_owned(),
                    reason: "expected `TYPE BINDING OFFSET OP VALUE`".into(),
                });
            };
            Command::ProbeSsbo {
                binding: parse_u32(binding, line, text, "probe ssbo")?,
                offset: parse_u32(offset, line, text, "probe ssbo")?,
                signed: *ty == "int",
                op,
                value,
            }
        }
        ["probe", "atomic", "counter", rest @ ..] => {
            let (buffer, offset, op, value) = match rest {
                ["buffer", buffer, offset, op, value, ..] => {
                    (buffer.parse().ok(), offset.parse().ok(), op, value)
                }
                [index, op, value, ..] => {
                    (Some(0), index.parse::<u32>().ok().map(|i| 4 * i), op, value)
                }
                _ => (None, None, &"", &""),
            };
            match (buffer, offset, Comparison::parse(op), value.parse::<u32>()) {
                (Some(buffer), Some(offset), Some(op), Ok(value)) => Command::ProbeAtomicCounter {
                    buffer,
                    offset,
                    op,
                    value,
                },
                _ => {
                    return Err(ParseError::BadCommand {
                        line,
                        command: "probe atomic counter",
                        text: text.to_owned(),
                        reason: "expected `[buffer B OFFSET | INDEX] OP VALUE`".into(),
                    });
                }
            }
        }
        ["probe", ..] | ["relative", "probe", ..] => match parse_probe(line, text, &words)? {
            Some(probe) => Command::Probe(probe),
            None => Command::Other(text.to_owned()),
        },
        _ => Command::Other(text.to_owned()),
    };
    Ok(Some(TestCommand { line, command }))
}

/// The colour channels of an `rgbw` texture's format that holds 0 and 1 exactly (normalized,
/// float and compressed formats); `None` for the others (integer, depth, unknown).
fn rgbw_channels(format: &str) -> Option<u8> {
    let name = format.strip_prefix("GL_")?;
    let name = name.strip_prefix("COMPRESSED_").unwrap_or(name);
    let channels = [
        "RGBA",
        "RGB",
        "RG",
        "R",
        "SRGB8_ALPHA8",
        "SRGB8",
        "R11F_G11F_B10F",
    ]
    .iter()
    .zip([4u8, 3, 2, 1, 4, 3, 3])
    .find(|(prefix, _)| {
        name.strip_prefix(**prefix).is_some_and(|bits| {
            // What follows the channels: nothing, or sizes with an F (float) or no type.
            bits.is_empty()
                || (bits.chars().all(|c| c.is_ascii_digit() || c == 'F') && !bits.starts_with('F'))
        })
    })?
    .1;
    Some(channels)
}

/// Parses the `texture` commands of [`TextureImage`]; `None` for the others (other kinds,
/// or an `rgbw` texture of another format).
fn parse_texture(
    line: usize,
    text: &str,
    kind: &str,
    unit: &str,
    rest: &[&str],
) -> Result<Option<Command>, ParseError> {
    let Ok(unit) = unit.parse::<u32>() else {
        return Ok(None);
    };
    let size = |n: f32| n.max(0.0) as u32;
    let image = match kind {
        "rgbw" => {
            let [w, h] = floats(line, "texture rgbw", text, rest)?;
            // A word that is not a number names the format: the normalized and float ones
            // hold the quadrants' 0s and 1s exactly; others are not made here.
            let format = rest.iter().find(|w| w.starts_with(char::is_alphabetic));
            let Some(channels) = format.map_or(Some(4), |format| rgbw_channels(format)) else {
                return Ok(None);
            };
            TextureImage::Rgbw {
                width: size(w),
                height: size(h),
                channels,
            }
        }
        "checkerboard" => {
            let [level, w, h, values @ ..]: [f32; 11] =
                floats(line, "texture checkerboard", text, rest)?;
            TextureImage::Checkerboard {
                level: size(level),
                width: size(w),
                height: size(h),
                colors: [
                    std::array::from_fn(|i| values[i]),
                    std::array::from_fn(|i| values[4 + i]),
                ],
            }
        }
        "shadow1D" => {
            let [w] = floats(line, "texture shadow1D", text, rest)?;
            TextureImage::Shadow {
                dims: 1,
                width: size(w),
                height: 1,
            }
        }
        "shadow2D" => {
            let [w, h] = floats(line, "texture shadow2D", text, rest)?;
            TextureImage::Shadow {
                dims: 2,
                width: size(w),
                height: size(h),
            }
        }
        // piglit makes the same 8×8 texture whatever follows the unit.
        "miptree" => TextureImage::Miptree,
        _ => return Ok(None),
    };
    Ok(Some(Command::Texture { unit, image }))
}

fn parse_uniform(line: usize, text: &str, words: &[&str]) -> Result<Command, ParseError> {
    match words {
        [glsl_type, name, values @ ..] => Ok(Command::Uniform {
            glsl_type: (*glsl_type).to_owned(),
            name: (*name).to_owned(),
            values: values.iter().map(|value| (*value).to_owned()).collect(),
        }),
        _ => Err(ParseError::BadCommand {
            line,
            command: "uniform",
            text: text.to_owned(),
            reason: "expected `uniform TYPE NAME VALUES...`".into(),
        }),
    }
}

/// The first `count` numbers of `words`, which may contain parentheses, commas and
/// semicolons (`(0.5, 0.5)`).
fn numbers(
    line: usize,
    command: &'static str,
    text: &str,
    words: &[&str],
    count: usize,
) -> Result<Vec<f32>, ParseError> {
    let bad = |reason: String| ParseError::BadCommand {
        line,
        command,
        text: text.to_owned(),
        reason,
    };
    let mut found = words
        .iter()
        .flat_map(|word| word.split(['(', ')', ',', ';']))
        .filter(|number| !number.is_empty());
    (0..count)
        .map(|index| {
            let number = found
                .next()
                .ok_or_else(|| bad(format!("expected {count} numbers, found {index}")))?;
            parse_float(number).ok_or_else(|| bad(format!("`{number}` is not a number")))
        })
        .collect()
}

/// [`numbers`] as an array.
fn floats<const N: usize>(
    line: usize,
    command: &'static str,
    text: &str,
    words: &[&str],
) -> Result<[f32; N], ParseError> {
    let values = numbers(line, command, text, words, N)?;
    Ok(std::array::from_fn(|i| values[i]))
}

/// Parses the probes shader_runner knows of the forms `[relative] probe [rect|all] rgb[a]`;
/// `None` for the other probes (atomic counters, SSBOs, depth, `rgba int`, ...).
fn parse_probe(line: usize, text: &str, words: &[&str]) -> Result<Option<Probe>, ParseError> {
    let relative = words[0] == "relative";
    let words = if relative { &words[2..] } else { &words[1..] };
    let (shape, words) = match words.first() {
        Some(&"rect") => ("rect", &words[1..]),
        Some(&"all") if !relative => ("all", &words[1..]),
        _ => ("pixel", words),
    };
    let (alpha, numbers) = match words {
        // `rgba int` and other typed probes are not handled here.
        [_, format, ..] if format.starts_with(|c: char| c.is_ascii_alphabetic()) => {
            return Ok(None);
        }
        ["rgba", numbers @ ..] => (true, numbers),
        ["rgb", numbers @ ..] => (false, numbers),
        _ => return Ok(None),
    };
    let color_len = if alpha { 4 } else { 3 };
    let position_len = match shape {
        "rect" => 4,
        "all" => 0,
        _ => 2,
    };
    let values = self::numbers(line, "probe", text, numbers, position_len + color_len)?;
    let (position, color) = values.split_at(position_len);
    let region = match (shape, relative, position) {
        ("all", _, _) => ProbeRegion::All,
        ("rect", false, &[x, y, width, height]) => ProbeRegion::Rect {
            x: x as i32,
            y: y as i32,
            width: width as i32,
            height: height as i32,
        },
        ("rect", true, &[x, y, width, height]) => ProbeRegion::RelativeRect {
            x,
            y,
            width,
            height,
        },
        (_, false, &[x, y]) => ProbeRegion::Pixel {
            x: x as i32,
            y: y as i32,
        },
        (_, true, &[x, y]) => ProbeRegion::RelativePixel { x, y },
        _ => return Ok(None),
    };
    let expected = match *color {
        [r, g, b, a] => ExpectedColor::Rgba([r, g, b, a]),
        [r, g, b] => ExpectedColor::Rgb([r, g, b]),
        _ => return Ok(None),
    };
    Ok(Some(Probe { region, expected }))
}

/// A command's unsigned number, or why the command is malformed.
fn parse_u32(
    word: &str,
    line: usize,
    text: &str,
    command: &'static str,
) -> Result<u32, ParseError> {
    word.parse().map_err(|_| ParseError::BadCommand {
        line,
        command,
        text: text.to_owned(),
        reason: format!("`{word}` is not a number"),
    })
}

/// An integer as piglit writes them (decimal, maybe negative, or `0x` hexadecimal).
fn parse_integer(word: &str) -> Option<i64> {
    crate::run::parse_value(word, BaseType::Int, 64).map(|bits| bits as i64)
}

/// The little-endian bytes of `value` as a scalar of GLSL type `ty`.
fn scalar_bytes(ty: &str, value: &str) -> Option<Vec<u8>> {
    let (base, bits) = match ty {
        "int" => (BaseType::Int, 32),
        "uint" => (BaseType::Uint, 32),
        "int64" => (BaseType::Int, 64),
        "uint64" => (BaseType::Uint, 64),
        "float" => (BaseType::Float, 32),
        "double" => (BaseType::Float, 64),
        _ => return None,
    };
    let raw = crate::run::parse_value(value, base, bits)?;
    Some(raw.to_le_bytes()[..bits as usize / 8].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(text: &str) -> Command {
        parse_command(7, text).unwrap().unwrap().command
    }

    #[test]
    fn rgbw_formats_that_hold_the_quadrants_exactly() {
        for (format, channels) in [
            ("GL_RGBA8", Some(4)),
            ("GL_RGBA32F", Some(4)),
            ("GL_COMPRESSED_RGBA", Some(4)),
            ("GL_SRGB8_ALPHA8", Some(4)),
            ("GL_R11F_G11F_B10F", Some(3)),
            ("GL_RG16F", Some(2)),
            ("GL_R32F", Some(1)),
            ("GL_RGBA8UI", None),
            ("GL_R32I", None),
            ("GL_DEPTH_COMPONENT24", None),
        ] {
            assert_eq!(rgbw_channels(format), channels, "{format}");
        }
    }

    #[test]
    fn textures_and_their_parameters() {
        assert_eq!(
            command("texture rgbw 1 (8, 4)"),
            Command::Texture {
                unit: 1,
                image: TextureImage::Rgbw {
                    channels: 4,
                    width: 8,
                    height: 4
                }
            }
        );
        assert_eq!(
            command("texture checkerboard 0 1 (4, 4) (0.5, 0, 0, 1) (0, 0, 1, 0)"),
            Command::Texture {
                unit: 0,
                image: TextureImage::Checkerboard {
                    level: 1,
                    width: 4,
                    height: 4,
                    colors: [[0.5, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]],
                }
            }
        );
        assert_eq!(
            command("texture shadow1D 2 (32)"),
            Command::Texture {
                unit: 2,
                image: TextureImage::Shadow {
                    dims: 1,
                    width: 32,
                    height: 1
                }
            }
        );
        assert_eq!(
            command("texparameter 2D compare_func greater"),
            Command::TexParameter {
                target: "2D".into(),
                name: "compare_func".into(),
                value: "greater".into()
            }
        );
        assert!(parse_command(4, "texture shadow2D 0 (32)").is_err());
    }

    #[test]
    fn skips_blank_lines_and_comments() {
        assert_eq!(parse_command(1, "   \n").unwrap(), None);
        assert_eq!(parse_command(1, "# clear\n").unwrap(), None);
        assert_eq!(
            parse_command(3, "clear # the framebuffer\n").unwrap(),
            Some(TestCommand {
                line: 3,
                command: Command::Clear
            })
        );
    }

    #[test]
    fn uniforms_keep_type_name_and_raw_values() {
        assert_eq!(
            command("uniform dvec2 s.values[2] 0x3ff0000000000000 -1.5"),
            Command::Uniform {
                glsl_type: "dvec2".into(),
                name: "s.values[2]".into(),
                values: vec!["0x3ff0000000000000".into(), "-1.5".into()],
            }
        );
        // The index of an array of arrays counts its elements flattened; the comment goes.
        assert_eq!(
            command("ubo array index 3 #[1][1]"),
            Command::UboArrayIndex(3)
        );
        assert!(matches!(
            parse_command(9, "uniform vec4").unwrap_err(),
            ParseError::BadCommand {
                line: 9,
                command: "uniform",
                ..
            }
        ));
    }

    #[test]
    fn clear_ortho_and_draws() {
        assert_eq!(
            command("clear color 0.0 0.5 1 1"),
            Command::ClearColor([0.0, 0.5, 1.0, 1.0])
        );
        assert_eq!(command("ortho"), Command::Ortho(None));
        assert_eq!(
            command("ortho 0 10 0 20"),
            Command::Ortho(Some([0.0, 10.0, 0.0, 20.0]))
        );
        assert_eq!(
            command("draw rect -1 -1 2 2"),
            Command::DrawRect {
                rect: [-1.0, -1.0, 2.0, 2.0],
                ortho: false,
                patch: false
            }
        );
        assert_eq!(
            command("draw rect ortho patch 0 0 10 10"),
            Command::DrawRect {
                rect: [0.0, 0.0, 10.0, 10.0],
                ortho: true,
                patch: true
            }
        );
        assert_eq!(
            command("draw rect tex 0 0 1 1 0 0 0.5 0.5"),
            Command::DrawRectTex {
                rect: [0.0, 0.0, 1.0, 1.0],
                tex: [0.0, 0.0, 0.5, 0.5]
            }
        );
        assert_eq!(
            command("tolerance 0.1 0.1 0 0.1"),
            Command::Tolerance([0.1, 0.1, 0.0, 0.1])
        );
        assert_eq!(
            command("fb tex 2d 0"),
            Command::Framebuffer("tex 2d 0".into())
        );
    }

    #[test]
    fn probes() {
        let probe = |text| match command(text) {
            Command::Probe(probe) => probe,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            probe("probe rgba 1 2 0.0 1.0 0.0 1.0"),
            Probe {
                region: ProbeRegion::Pixel { x: 1, y: 2 },
                expected: ExpectedColor::Rgba([0.0, 1.0, 0.0, 1.0])
            }
        );
        // Like shader_runner, extra values are ignored.
        assert_eq!(
            probe("probe rgb 0 0 0.0 1.0 0.0 1.0"),
            Probe {
                region: ProbeRegion::Pixel { x: 0, y: 0 },
                expected: ExpectedColor::Rgb([0.0, 1.0, 0.0])
            }
        );
        assert_eq!(probe("probe all rgb 0 1 0").region, ProbeRegion::All);
        assert_eq!(
            probe("probe rect rgba ( 0, 4, 8, 16 ) (0.5, 0.5, 0.5, 1)"),
            Probe {
                region: ProbeRegion::Rect {
                    x: 0,
                    y: 4,
                    width: 8,
                    height: 16
                },
                expected: ExpectedColor::Rgba([0.5, 0.5, 0.5, 1.0])
            }
        );
        assert_eq!(
            probe("relative probe rgba (0.5, 0.25) (0,1,0,1);").region,
            ProbeRegion::RelativePixel { x: 0.5, y: 0.25 }
        );
        assert_eq!(
            probe("relative probe rect rgb (0.0, 0.5, 1.0, 0.5) (1, 0, 0)"),
            Probe {
                region: ProbeRegion::RelativeRect {
                    x: 0.0,
                    y: 0.5,
                    width: 1.0,
                    height: 0.5
                },
                expected: ExpectedColor::Rgb([1.0, 0.0, 0.0])
            }
        );
        assert_eq!(
            command("relative probe rect rgba int (0.5, 0, 0.5, 0.5) (100, 0, 127, 100)").name(),
            "relative probe"
        );
        assert_eq!(command("probe ssbo uint 0 0 == 4").name(), "probe ssbo");
        assert!(matches!(
            parse_command(5, "probe rgba 1 2 0 1").unwrap_err(),
            ParseError::BadCommand {
                line: 5,
                command: "probe",
                ..
            }
        ));
        assert!(
            parse_command(5, "probe all rgba 0 one 0 1")
                .unwrap_err()
                .to_string()
                .contains("`one` is not a number")
        );
    }

    #[test]
    fn numbers_as_shader_runner_reads_them() {
        assert_eq!(parse_float("0x3f800000"), Some(1.0));
        assert_eq!(parse_float("-inf"), Some(f32::NEG_INFINITY));
        assert!(parse_float("nan").is_some_and(f32::is_nan));
        assert_eq!(parse_float("1e-3"), Some(0.001));
        assert_eq!(parse_float("0xzz"), None);
    }

    #[test]
    fn draw_arrays_with_and_without_instances() {
        assert_eq!(
            command("draw arrays GL_TRIANGLE_FAN 0 4 # fan"),
            Command::DrawArrays {
                mode: "GL_TRIANGLE_FAN".into(),
                first: 0,
                count: 4,
                instances: None
            }
        );
        let instanced = command("draw arrays instanced GL_TRIANGLES 3 6 2");
        assert_eq!(instanced.name(), "draw arrays instanced GL_TRIANGLES");
        assert!(matches!(
            instanced,
            Command::DrawArrays {
                first: 3,
                count: 6,
                instances: Some(2),
                ..
            }
        ));
        assert!(parse_command(1, "draw arrays GL_TRIANGLES 0").is_err());
    }

    #[test]
    fn other_commands_are_kept_for_reports() {
        assert_eq!(command("texture rgbw 0 (8, 8)").name(), "texture rgbw");
        assert_eq!(
            command("texture rgbw 0 (8, 8) GL_RGBA8UI"),
            Command::Other("texture rgbw 0 (8, 8) GL_RGBA8UI".into())
        );
        assert_eq!(command("compute 2 1 3"), Command::Compute([2, 1, 3]));
        assert_eq!(
            command("image texture 1 GL_RGBA8"),
            Command::ImageTexture { unit: 1 }
        );
        assert_eq!(
            command("ssbo 2 1024"),
            Command::Ssbo {
                binding: 2,
                size: 1024
            }
        );
        let mut bytes = (-1i32).to_le_bytes().to_vec();
        bytes.extend(0xffu32.to_le_bytes());
        assert_eq!(
            command("ssbo 0 subdata int 8 -1 0xff"),
            Command::SsboSubdata {
                binding: 0,
                bytes,
                offset: 8
            }
        );
        assert_eq!(
            command("ssbo 1 subdata float 0 0.5"),
            Command::SsboSubdata {
                binding: 1,
                bytes: 0.5f32.to_le_bytes().to_vec(),
                offset: 0
            }
        );
        assert_eq!(
            command("probe ssbo int 3 4 <= -2"),
            Command::ProbeSsbo {
                binding: 3,
                offset: 4,
                signed: true,
                op: Comparison::LessOrEqual,
                value: -2
            }
        );
        assert!(parse_command(7, "ssbo 0 subdata vec9 0 1").is_err());
        assert_eq!(
            command("atomic counter buffer 2 3"),
            Command::AtomicCounters {
                buffer: 2,
                count: 3
            }
        );
        assert_eq!(
            command("atomic counter 1 2 9"),
            Command::SetAtomicCounter {
                buffer: 1,
                index: 2,
                value: 9
            }
        );
        assert!(parse_command(7, "atomic counter 1 2 x").is_err());
        assert_eq!(
            command("probe atomic counter 1 == 7"),
            Command::ProbeAtomicCounter {
                buffer: 0,
                offset: 4,
                op: Comparison::Equal,
                value: 7
            }
        );
        assert_eq!(
            command("probe atomic counter buffer 0 8 != 20  # a[1]").name(),
            "probe atomic counter"
        );
        assert_eq!(command("clear depth 1").name(), "clear depth");
    }
}
