//! The textures of shader_runner's `texture` commands and the state `texparameter` sets, as
//! the interpreter's textures and sampler states, which the executor binds to the units the
//! shaders' sampler uniforms name (and the emulators sample through the same).
//!
//! Each texture is what piglit's helpers upload: one mip level (`miptree`: four), nearest
//! filtering, row 0 at the bottom (texture coordinate t = 0). Colour textures are RGBA8, so their texels are rounded to
//! multiples of 1/255. `rgbw` and the depth textures clamp to the edge;
//! `checkerboard` clamps to a border in GL, which nearest filtering never reads inside
//! [0, 1], so it clamps to the edge here too (the reference sampler has no border). Depth
//! textures hold `x / (w − 1)` and compare with `GREATER`.

use crate::commands::{Command, TextureImage};
use shrew_engine::interp::{CompareFunc, Filter, MipLevel, SamplerState, Texture, Wrap};
use std::collections::BTreeMap;

/// The texture units the `texture` commands fill, and the one `texparameter` changes (the
/// last one filled).
#[derive(Default)]
pub(crate) struct TextureUnits {
    pub(crate) units: BTreeMap<u32, (Texture, SamplerState)>,
    /// Each unit's texture with all its levels, and its base and maximum levels and whether
    /// its minification filter uses mipmaps: the unit's texture is that range of levels, or
    /// the base level alone without mipmaps (GL counts levels and LODs from the base level).
    levels: BTreeMap<u32, LevelRange>,
    active: u32,
}

struct LevelRange {
    all: Vec<MipLevel>,
    base: usize,
    max: usize,
    mipmapped: bool,
}

impl TextureUnits {
    /// Carries out a `texture` or `texparameter` command; `false` for the other commands.
    pub(crate) fn apply(&mut self, command: &Command) -> Result<bool, String> {
        match command {
            Command::Texture { unit, image } => {
                let (texture, sampler) = make(image)?;
                let range = LevelRange {
                    all: texture.levels.clone(),
                    base: 0,
                    max: texture.levels.len() - 1,
                    mipmapped: true,
                };
                self.levels.insert(*unit, range);
                self.units.insert(*unit, (texture, sampler));
                self.active = *unit;
            }
            Command::TexParameter { name, value, .. } => {
                let (texture, sampler) = self
                    .units
                    .get_mut(&self.active)
                    .ok_or("texparameter before any texture")?;
                set_parameter(sampler, name, value)?;
                let Some(range) = self.levels.get_mut(&self.active) else {
                    return Ok(true);
                };
                match name.as_str() {
                    "base_level" => range.base = value.parse().unwrap_or_default(),
                    "max_level" => range.max = value.parse().unwrap_or_default(),
                    "min" => range.mipmapped = value.contains("_mipmap_"),
                    _ => return Ok(true),
                }
                let top = match range.mipmapped {
                    true => range.max.min(range.all.len() - 1),
                    false => range.base,
                };
                if range.base > top || range.base >= range.all.len() {
                    return Err(format!(
                        "texparameter {name} {value} leaves the texture without levels"
                    ));
                }
                texture.levels = range.all[range.base..=top].to_vec();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The texture and sampler state a `texture` command makes, or why it cannot be made here.
pub(crate) fn make(image: &TextureImage) -> Result<(Texture, SamplerState), String> {
    let clamped = SamplerState::default().with_wrap(Wrap::ClampToEdge);
    let (width, height, texels, sampler): (u32, u32, Vec<[f32; 4]>, SamplerState) = match *image {
        TextureImage::Rgbw {
            width,
            height,
            channels,
        } => {
            let texel = |x: u32, y: u32| {
                let mut rgba = match (x < width / 2, y < height / 2) {
                    (true, true) => [1.0, 0.0, 0.0, 1.0],
                    (false, true) => [0.0, 1.0, 0.0, 1.0],
                    (true, false) => [0.0, 0.0, 1.0, 1.0],
                    (false, false) => [1.0, 1.0, 1.0, 1.0],
                };
                rgba[channels.min(3) as usize..3].fill(0.0);
                rgba
            };
            (width, height, grid(width, height, texel), clamped)
        }
        TextureImage::Checkerboard {
            level,
            width,
            height,
            colors,
        } => {
            if level != 0 {
                return Err(format!(
                    "a checkerboard at mip level {level} leaves level 0 undefined"
                ));
            }
            let (check_w, check_h) = ((width / 2).max(1), (height / 2).max(1));
            let colors = colors.map(|c| c.map(unorm8));
            let texel = |x: u32, y: u32| colors[((x / check_w + y / check_h) % 2) as usize];
            (width, height, grid(width, height, texel), clamped)
        }
        TextureImage::Miptree => return Ok((miptree(), clamped)),
        TextureImage::Shadow { width, height, .. } => {
            let depth = |x: u32, _| [x as f32 / (width as f32 - 1.0), 0.0, 0.0, 1.0];
            let sampler = SamplerState {
                compare: Some(CompareFunc::Greater),
                ..clamped
            };
            (width, height, grid(width, height, depth), sampler)
        }
    };
    if width == 0 || height == 0 {
        return Err(format!("a {width}x{height} texture"));
    }
    let texture = Texture {
        layers: 1,
        levels: vec![MipLevel::from_f32(width, height, 1, &texels)],
    };
    Ok((texture, sampler))
}

/// piglit's mipmapped texture: 8×8, each of its four levels one colour (red, green, blue,
/// white).
fn miptree() -> Texture {
    const COLORS: [[f32; 4]; 4] = [
        [1.0, 0.0, 0.0, 1.0],
        [0.0, 1.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 1.0],
        [1.0, 1.0, 1.0, 1.0],
    ];
    let levels = COLORS
        .iter()
        .enumerate()
        .map(|(level, color)| {
            let size = 8 >> level;
            MipLevel::from_f32(size, size, 1, &vec![*color; (size * size) as usize])
        })
        .collect();
    Texture { layers: 1, levels }
}

/// `x` stored in an 8-bit normalized channel and read back.
fn unorm8(x: f32) -> f32 {
    (x.clamp(0.0, 1.0) * 255.0).round() / 255.0
}

/// The texels of a `width × height` image, row 0 first.
fn grid(width: u32, height: u32, texel: impl Fn(u32, u32) -> [f32; 4]) -> Vec<[f32; 4]> {
    (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|(x, y)| texel(x, y))
        .collect()
}

/// Applies `texparameter NAME VALUE` to a sampler, or says why it cannot be applied here.
pub(crate) fn set_parameter(
    sampler: &mut SamplerState,
    name: &str,
    value: &str,
) -> Result<(), String> {
    match (name, value) {
        ("compare_func", _) => {
            sampler.compare = Some(match value {
                "greater" => CompareFunc::Greater,
                "gequal" => CompareFunc::GreaterOrEqual,
                "less" => CompareFunc::Less,
                "lequal" => CompareFunc::LessOrEqual,
                "equal" => CompareFunc::Equal,
                "notequal" => CompareFunc::NotEqual,
                "never" => CompareFunc::Never,
                "always" => CompareFunc::Always,
                _ => return Err(format!("unknown compare function `{value}`")),
            })
        }
        // glslang returns a legacy shadow lookup as (r, r, r, r): the intensity mode.
        ("depth_mode", "intensity") => {}
        // `min` with `_mipmap_` filters between levels too ([`TextureUnits`] keeps only the
        // base level of a texture whose filter has no mipmaps).
        ("min" | "mag", _) => {
            let filter = |name: &str| match name {
                "nearest" => Ok(Filter::Nearest),
                "linear" => Ok(Filter::Linear),
                _ => Err(format!("unknown filter `{value}`")),
            };
            let (within, between) = match value.split_once("_mipmap_") {
                Some((within, between)) => (filter(within)?, Some(filter(between)?)),
                None => (filter(value)?, None),
            };
            if name == "mag" {
                sampler.mag_filter = within;
            } else {
                sampler.min_filter = within;
                if let Some(between) = between {
                    sampler.mipmap_mode = between;
                }
            }
        }
        ("base_level" | "max_level", _) if value.parse::<u32>().is_ok() => {}
        _ => return Err(format!("texparameter {name} {value} is not supported")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgbw_quadrants_start_red_at_the_bottom_left() {
        let (texture, sampler) = make(&TextureImage::Rgbw {
            width: 4,
            height: 2,
            channels: 4,
        })
        .unwrap();
        let level = &texture.levels[0];
        let red = [1.0f32, 0.0, 0.0, 1.0].map(f32::to_bits);
        let green = [0.0f32, 1.0, 0.0, 1.0].map(f32::to_bits);
        let white = [1.0f32; 4].map(f32::to_bits);
        assert_eq!(level.texels[1], red);
        assert_eq!(level.texels[2], green);
        assert_eq!(level.texels[7], white);
        assert_eq!(sampler.wrap, [Wrap::ClampToEdge; 3]);
    }

    /// The miptree's levels halve from 8×8, one colour each; base and maximum levels make the
    /// unit's texture that range of them, and a minification filter without mipmaps keeps the
    /// base level alone.
    #[test]
    fn miptree_levels_and_their_range() {
        let mut units = TextureUnits::default();
        let texture = Command::Texture {
            unit: 1,
            image: TextureImage::Miptree,
        };
        assert!(units.apply(&texture).unwrap());
        let parameter = |name: &str, value: &str| Command::TexParameter {
            target: "2D".into(),
            name: name.into(),
            value: value.into(),
        };
        let sizes = |units: &TextureUnits| -> Vec<u32> {
            units.units[&1].0.levels.iter().map(|l| l.width).collect()
        };
        assert_eq!(sizes(&units), [8, 4, 2, 1]);
        let blue = [0.0f32, 0.0, 1.0, 1.0].map(f32::to_bits);
        assert_eq!(units.units[&1].0.levels[2].texels[0], blue);
        units.apply(&parameter("base_level", "1")).unwrap();
        units.apply(&parameter("max_level", "2")).unwrap();
        assert_eq!(sizes(&units), [4, 2]);
        assert!(units.apply(&parameter("base_level", "3")).is_err());
        units.apply(&parameter("base_level", "1")).unwrap();
        units.apply(&parameter("min", "linear")).unwrap();
        assert_eq!(sizes(&units), [4]);
        units
            .apply(&parameter("min", "linear_mipmap_linear"))
            .unwrap();
        assert_eq!(sizes(&units), [4, 2]);
        let sampler = units.units[&1].1;
        assert_eq!(
            (sampler.min_filter, sampler.mipmap_mode),
            (Filter::Linear, Filter::Linear)
        );
    }

    #[test]
    fn checks_and_depth_ramps() {
        let colors = [[0.0; 4], [1.0; 4]];
        let (texture, _) = make(&TextureImage::Checkerboard {
            level: 0,
            width: 4,
            height: 4,
            colors,
        })
        .unwrap();
        let texels = &texture.levels[0].texels;
        let first = colors[0].map(f32::to_bits);
        assert_eq!([texels[0], texels[5], texels[10], texels[15]], [first; 4]);
        assert_ne!(texels[2], first);
        assert_ne!(texels[8], first);
        let (depth, sampler) = make(&TextureImage::Shadow {
            dims: 1,
            width: 5,
            height: 1,
        })
        .unwrap();
        let ramp: Vec<f32> = depth.levels[0]
            .texels
            .iter()
            .map(|t| f32::from_bits(t[0]))
            .collect();
        assert_eq!(ramp, [0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(sampler.compare, Some(CompareFunc::Greater));
    }
}
