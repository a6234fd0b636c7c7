//! Textures, samplers, storage images and the deterministic software sampler.
//!
//! Sampling follows the Vulkan specification's texel filtering chapter, with the
//! implementation-defined parts fixed:
//! - LOD: `λ = log2(ρ)` with `ρ = max(|∂uvw/∂x · size|, |∂uvw/∂y · size|)` (Euclidean lengths in
//!   texels of level 0), plus the `txb` bias, then clamped to the sampler's `[min_lod, max_lod]`
//!   and raised to the `min_lod` source. A NaN LOD counts as 0.
//! - `λ ≤ 0` magnifies from level 0; otherwise the level is `d = min(λ, levels − 1)`, rounded half
//!   down for nearest mipmapping or blended between `⌊d⌋` and `⌊d⌋ + 1` for linear mipmapping.
//! - Linear filtering weighs the 2, 4 or 8 texels around `coord·size − 0.5`; blends are computed
//!   in `f64` and rounded to `f32` once.
//! - Texel coordinates are floored with Rust's saturating float-to-int conversion, so NaN
//!   coordinates read texel 0 (before wrapping) and infinities saturate.
//! - Array layers are `clamp(round_even(layer), 0, layers − 1)`.
//! - Cube maps: the face is the major axis, ties going to x, then y, then z; the face
//!   coordinates and their derivatives follow the Vulkan face table and the quotient rule; within
//!   a face addressing is always clamp-to-edge (no seamless filtering across faces).
//! - Shadow comparison compares the reference (not clamped) with each texel's red channel before
//!   filtering; the result is `(r, 0, 0, 1)`.
//! - Integer fetches through `tex`/`txb`/`txl`/`txd` (a `dest_type` of `int` or `uint`) use nearest
//!   filtering and the nearest mip level, returning raw texel bits.
//! - `tg4` gathers from level 0 in the order `(i0,j1) (i1,j1) (i1,j0) (i0,j0)`.
//! - `lod` returns `(d, λ)`: the level that would be read (fractional for linear mipmapping) and
//!   the clamped LOD.
//! - `txf`, `txs` and every image access outside the texture, level or layer range is an error.
//!
//! Every level of a texture and every image must have each size (width, height, depth, layers)
//! from 1 to [`MAX_TEXTURE_DIM`], at most [`MAX_TEXELS`] texels, and exactly as many texels as
//! its size says; [`super::run`] checks this before running (see [`super::Resources::validate`]).

use super::{Fault, InterpError};
use serde::{Deserialize, Serialize};

/// Largest width, height, depth or layer count of a texture level or an image.
pub const MAX_TEXTURE_DIM: u32 = 16384;

/// Most texels (over all layers) of one texture level or image.
pub const MAX_TEXELS: u64 = 1 << 28;

/// The texel count of a texture level or image of size `[width, height, depth, layers]`, if
/// every size is 1 to [`MAX_TEXTURE_DIM`] and the count at most [`MAX_TEXELS`].
fn texel_count(dims: [u32; 4]) -> Result<u64, String> {
    let [w, h, d, layers] = dims;
    let size = format!("{w}x{h}x{d} with {layers} layers");
    if dims.iter().any(|&x| x == 0 || x > MAX_TEXTURE_DIM) {
        return Err(format!("{size}: every size must be 1 to {MAX_TEXTURE_DIM}"));
    }
    let count = dims.iter().map(|&x| x as u64).product::<u64>();
    if count > MAX_TEXELS {
        return Err(format!(
            "{size} is {count} texels, more than the limit of {MAX_TEXELS} texels"
        ));
    }
    Ok(count)
}

/// Checks the size of a texture level or image holding `texels` texels.
fn check_size(dims: [u32; 4], texels: usize) -> Result<(), String> {
    let count = texel_count(dims)?;
    if texels as u64 != count {
        let [w, h, d, layers] = dims;
        return Err(format!(
            "{w}x{h}x{d} with {layers} layers has {texels} texels, its size needs {count}"
        ));
    }
    Ok(())
}

/// Index of texel `(x, y, z, layer)` in a level or image of `[width, height, depth, layers]`
/// texels, or `None` outside it.
fn texel_index(c: [i64; 4], dims: [u32; 4]) -> Option<usize> {
    if c.iter()
        .zip(dims)
        .any(|(&v, n)| !(0..n as i64).contains(&v))
    {
        return None;
    }
    let [w, h, d, _] = dims.map(|n| n as u64);
    let [x, y, z, layer] = c.map(|v| v as u64);
    let idx = layer
        .checked_mul(d)?
        .checked_add(z)?
        .checked_mul(h)?
        .checked_add(y)?
        .checked_mul(w)?
        .checked_add(x)?;
    usize::try_from(idx).ok()
}

/// One mip level of a texture: `width × height × depth × layers` texels of four raw 32-bit
/// components (`f32` bits for float textures, integers for int/uint textures), indexed as
/// `((layer · depth + z) · height + y) · width + x`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MipLevel {
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub texels: Vec<[u32; 4]>,
}

impl MipLevel {
    /// A level from float texels.
    pub fn from_f32(width: u32, height: u32, depth: u32, texels: &[[f32; 4]]) -> MipLevel {
        MipLevel {
            width,
            height,
            depth,
            texels: texels.iter().map(|t| t.map(f32::to_bits)).collect(),
        }
    }
}

/// A sampled texture: array layers (for cube maps, six faces per cube: `+x −x +y −y +z −z`) and
/// a mip chain. How the coordinates address it (1D, 2D, 3D, cube, array) comes from the texture
/// instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Texture {
    pub layers: u32,
    pub levels: Vec<MipLevel>,
}

impl Texture {
    /// A texture with one level of float texels and one layer.
    pub fn from_f32(width: u32, height: u32, depth: u32, texels: &[[f32; 4]]) -> Texture {
        Texture {
            layers: 1,
            levels: vec![MipLevel::from_f32(width, height, depth, texels)],
        }
    }

    /// Adds the next mip level.
    pub fn with_level(mut self, level: MipLevel) -> Texture {
        self.levels.push(level);
        self
    }

    /// Checks the size of every level (see the module documentation).
    pub(crate) fn validate(&self) -> Result<(), String> {
        for (i, l) in self.levels.iter().enumerate() {
            check_size([l.width, l.height, l.depth, self.layers], l.texels.len())
                .map_err(|e| format!("level {i}: {e}"))?;
        }
        Ok(())
    }

    fn level(&self, l: usize) -> Result<&MipLevel, Fault> {
        self.levels.get(l).ok_or_else(|| {
            Fault::oob(format!(
                "mip level {l} of a texture with {}",
                self.levels.len()
            ))
        })
    }

    /// The texel at integer coordinates of a level; `None` outside the level.
    fn texel(&self, l: &MipLevel, x: i64, y: i64, z: i64, layer: i64) -> Option<[u32; 4]> {
        let dims = [l.width, l.height, l.depth, self.layers];
        texel_index([x, y, z, layer], dims).and_then(|i| l.texels.get(i).copied())
    }
}

/// A storage image: one level of `width × height × depth × layers` texels of four raw 32-bit
/// components (f32, i32 or u32 bits), indexed like a [`MipLevel`]. Cube images store six layers
/// per cube.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub layers: u32,
    pub texels: Vec<[u32; 4]>,
}

impl Image {
    /// A zero-filled image; fails for sizes [`super::Resources::validate`] rejects.
    pub fn new(width: u32, height: u32, depth: u32, layers: u32) -> Result<Image, InterpError> {
        let count = texel_count([width, height, depth, layers])
            .map_err(|e| InterpError::Setup(format!("image of {e}")))?;
        Ok(Image {
            width,
            height,
            depth,
            layers,
            texels: vec![[0; 4]; count as usize],
        })
    }

    /// Checks the size (see the module documentation).
    pub(crate) fn validate(&self) -> Result<(), String> {
        check_size(
            [self.width, self.height, self.depth, self.layers],
            self.texels.len(),
        )
    }

    /// Index of the texel at `(x, y, z, layer)`, or `None` outside the image.
    pub fn index(&self, c: [i64; 4]) -> Option<usize> {
        let dims = [self.width, self.height, self.depth, self.layers];
        texel_index(c, dims).filter(|&i| i < self.texels.len())
    }
}

/// Texel filter.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Filter {
    #[default]
    Nearest,
    Linear,
}

/// Addressing outside `[0, 1)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Wrap {
    #[default]
    Repeat,
    ClampToEdge,
    MirroredRepeat,
}

/// The comparison of shadow samplers: `reference OP texel`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareFunc {
    Never,
    Less,
    Equal,
    LessOrEqual,
    Greater,
    NotEqual,
    GreaterOrEqual,
    Always,
}

impl CompareFunc {
    fn test(self, reference: f64, texel: f64) -> bool {
        match self {
            CompareFunc::Never => false,
            CompareFunc::Less => reference < texel,
            CompareFunc::Equal => reference == texel,
            CompareFunc::LessOrEqual => reference <= texel,
            CompareFunc::Greater => reference > texel,
            CompareFunc::NotEqual => reference != texel,
            CompareFunc::GreaterOrEqual => reference >= texel,
            CompareFunc::Always => true,
        }
    }
}

/// Sampler state.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplerState {
    pub mag_filter: Filter,
    pub min_filter: Filter,
    /// Filter between mip levels.
    pub mipmap_mode: Filter,
    /// Addressing of u, v and w.
    pub wrap: [Wrap; 3],
    /// Compare function of shadow samplers (required by shadow sampling).
    pub compare: Option<CompareFunc>,
    pub min_lod: f32,
    pub max_lod: f32,
}

impl Default for SamplerState {
    fn default() -> SamplerState {
        SamplerState {
            mag_filter: Filter::Nearest,
            min_filter: Filter::Nearest,
            mipmap_mode: Filter::Nearest,
            wrap: [Wrap::Repeat; 3],
            compare: None,
            min_lod: 0.0,
            max_lod: 1000.0,
        }
    }
}

impl SamplerState {
    /// Linear minification, magnification and mipmapping.
    pub fn linear() -> SamplerState {
        SamplerState {
            mag_filter: Filter::Linear,
            min_filter: Filter::Linear,
            mipmap_mode: Filter::Linear,
            ..SamplerState::default()
        }
    }

    /// The same sampler with one addressing mode on every axis.
    pub fn with_wrap(self, wrap: Wrap) -> SamplerState {
        SamplerState {
            wrap: [wrap; 3],
            ..self
        }
    }
}

/// Wraps texel coordinate `i` into `0..size` (sizes are validated to be at least 1).
fn wrap(i: i64, size: u32, mode: Wrap) -> i64 {
    let n = (size as i64).max(1);
    match mode {
        Wrap::Repeat => i.rem_euclid(n),
        Wrap::ClampToEdge => i.clamp(0, n - 1),
        Wrap::MirroredRepeat => {
            let m = i.rem_euclid(2 * n);
            if m < n { m } else { 2 * n - 1 - m }
        }
    }
}

/// How the LOD of a sample is found.
#[derive(Copy, Clone, Debug)]
pub(crate) enum LodSource {
    /// From derivatives of the (normalized) coordinates along x and y, plus a bias.
    Derivatives {
        dx: [f64; 3],
        dy: [f64; 3],
        bias: f64,
    },
    /// An explicit LOD.
    Explicit(f64),
}

/// A filtered read request, coordinates already reduced to a face for cube maps.
#[derive(Copy, Clone, Debug)]
pub(crate) struct SampleQuery {
    /// Normalized (or texel, when `normalized` is false) coordinates of `axes` axes.
    pub coord: [f64; 3],
    pub axes: usize,
    pub normalized: bool,
    /// Cube faces always clamp to the edge.
    pub cube: bool,
    pub layer: i64,
    pub lod: LodSource,
    pub min_lod: f64,
    pub offset: [i64; 3],
    /// Shadow reference.
    pub compare: Option<f64>,
    /// Raw integer texels instead of filtered floats.
    pub integer: bool,
}

impl SampleQuery {
    fn wraps(&self, sampler: &SamplerState) -> [Wrap; 3] {
        if self.cube {
            [Wrap::ClampToEdge; 3]
        } else {
            sampler.wrap
        }
    }
}

/// Which levels a sample reads and how.
struct LevelChoice {
    filter: Filter,
    levels: [usize; 2],
    /// Weight of the second level.
    frac: f64,
    /// The level `lod` reports, and the clamped LOD.
    d: f64,
    lambda: f64,
}

fn level_size(l: &MipLevel) -> [f64; 3] {
    [l.width as f64, l.height as f64, l.depth as f64]
}

fn choose_level(
    tex: &Texture,
    sampler: &SamplerState,
    q: &SampleQuery,
) -> Result<LevelChoice, Fault> {
    let base = tex.level(0)?;
    let lambda = if !q.normalized {
        0.0
    } else {
        match q.lod {
            LodSource::Explicit(l) => l,
            LodSource::Derivatives { dx, dy, bias } => {
                let size = level_size(base);
                let len = |d: [f64; 3]| {
                    (0..q.axes)
                        .map(|a| (d[a] * size[a]).powi(2))
                        .sum::<f64>()
                        .sqrt()
                };
                len(dx).max(len(dy)).log2() + bias
            }
        }
    };
    let lambda = if lambda.is_nan() { 0.0 } else { lambda };
    let lambda = lambda
        .max(sampler.min_lod as f64)
        .max(q.min_lod)
        .min(sampler.max_lod as f64);
    let q_max = (tex.levels.len() - 1) as f64;
    if lambda <= 0.0 {
        return Ok(LevelChoice {
            filter: sampler.mag_filter,
            levels: [0, 0],
            frac: 0.0,
            d: 0.0,
            lambda,
        });
    }
    let d = lambda.min(q_max);
    let nearest_level = ((d + 0.5).ceil() - 1.0).clamp(0.0, q_max);
    Ok(if sampler.mipmap_mode == Filter::Nearest || q.integer {
        LevelChoice {
            filter: sampler.min_filter,
            levels: [nearest_level as usize; 2],
            frac: 0.0,
            d: nearest_level,
            lambda,
        }
    } else {
        let l0 = d.floor();
        LevelChoice {
            filter: sampler.min_filter,
            levels: [l0 as usize, (l0 + 1.0).min(q_max) as usize],
            frac: d - l0,
            d,
            lambda,
        }
    })
}

/// Floors a texel-space coordinate to an integer texel (saturating; NaN gives 0).
fn floor_i(x: f64) -> i64 {
    x.floor() as i64
}

fn to_texel_space(q: &SampleQuery, l: &MipLevel) -> [f64; 3] {
    let size = level_size(l);
    let mut c = [0.0; 3];
    for a in 0..q.axes {
        c[a] = if q.normalized {
            q.coord[a] * size[a]
        } else {
            q.coord[a]
        };
    }
    c
}

/// Reads one texel after wrapping; axes beyond `q.axes` are 0.
fn tap(
    tex: &Texture,
    l: &MipLevel,
    q: &SampleQuery,
    wraps: [Wrap; 3],
    i: [i64; 3],
) -> Result<[u32; 4], Fault> {
    let size = [l.width, l.height, l.depth];
    let mut w = [0i64; 3];
    for a in 0..q.axes {
        w[a] = wrap(i[a], size[a], wraps[a]);
    }
    let layer = q.layer.clamp(0, (tex.layers as i64 - 1).max(0));
    tex.texel(l, w[0], w[1], w[2], layer)
        .ok_or_else(|| Fault::oob(format!("texel {w:?} of layer {layer}")))
}

/// The float value of a texel, or its comparison result.
fn texel_value(t: [u32; 4], q: &SampleQuery, cmp: Option<CompareFunc>) -> [f64; 4] {
    match (q.compare, cmp) {
        (Some(reference), Some(f)) => {
            let pass = f.test(reference, f32::from_bits(t[0]) as f64) as u8 as f64;
            [pass, 0.0, 0.0, 1.0]
        }
        _ => t.map(|c| f32::from_bits(c) as f64),
    }
}

fn filter_level(
    tex: &Texture,
    sampler: &SamplerState,
    q: &SampleQuery,
    level: usize,
    filter: Filter,
) -> Result<[f64; 4], Fault> {
    let l = tex.level(level)?;
    let c = to_texel_space(q, l);
    let wraps = q.wraps(sampler);
    match filter {
        Filter::Nearest => {
            let mut i = [0i64; 3];
            for a in 0..q.axes {
                i[a] = floor_i(c[a]).saturating_add(q.offset[a]);
            }
            Ok(texel_value(tap(tex, l, q, wraps, i)?, q, sampler.compare))
        }
        Filter::Linear => {
            let mut i0 = [0i64; 3];
            let mut alpha = [0.0; 3];
            for a in 0..q.axes {
                let s = c[a] - 0.5;
                i0[a] = floor_i(s).saturating_add(q.offset[a]);
                alpha[a] = if s.is_finite() { s - s.floor() } else { 0.0 };
            }
            let mut sum = [0.0; 4];
            for corner in 0..1usize << q.axes {
                let mut i = i0;
                let mut weight = 1.0;
                for a in 0..q.axes {
                    let hi = corner >> a & 1 == 1;
                    i[a] = i[a].saturating_add(hi as i64);
                    weight *= if hi { alpha[a] } else { 1.0 - alpha[a] };
                }
                let v = texel_value(tap(tex, l, q, wraps, i)?, q, sampler.compare);
                for (s, v) in sum.iter_mut().zip(v) {
                    *s += weight * v;
                }
            }
            Ok(sum)
        }
    }
}

fn check_compare(sampler: &SamplerState, q: &SampleQuery) -> Result<(), Fault> {
    if q.compare.is_some() && sampler.compare.is_none() {
        return Err(Fault::invalid(
            "shadow sampling with a sampler that has no compare function".into(),
        ));
    }
    Ok(())
}

/// Samples a texture: the four result components as raw 32-bit values.
pub(crate) fn sample(
    tex: &Texture,
    sampler: &SamplerState,
    q: &SampleQuery,
) -> Result<[u32; 4], Fault> {
    check_compare(sampler, q)?;
    let choice = choose_level(tex, sampler, q)?;
    if q.integer {
        let l = tex.level(choice.levels[0])?;
        let c = to_texel_space(q, l);
        let mut i = [0i64; 3];
        for a in 0..q.axes {
            i[a] = floor_i(c[a]).saturating_add(q.offset[a]);
        }
        return tap(tex, l, q, q.wraps(sampler), i);
    }
    let v0 = filter_level(tex, sampler, q, choice.levels[0], choice.filter)?;
    let v = if choice.frac > 0.0 && choice.levels[1] != choice.levels[0] {
        let v1 = filter_level(tex, sampler, q, choice.levels[1], choice.filter)?;
        let f = choice.frac;
        [0, 1, 2, 3].map(|c| v0[c] * (1.0 - f) + v1[c] * f)
    } else {
        v0
    };
    Ok(v.map(|x| (x as f32).to_bits()))
}

/// The `lod` query: `(d, λ)` as f32 bits.
pub(crate) fn query_lod(
    tex: &Texture,
    sampler: &SamplerState,
    q: &SampleQuery,
) -> Result<[u32; 2], Fault> {
    let choice = choose_level(tex, sampler, q)?;
    Ok([
        (choice.d as f32).to_bits(),
        (choice.lambda as f32).to_bits(),
    ])
}

/// `tg4`: one component of the four texels of the bilinear footprint at level 0.
pub(crate) fn gather(
    tex: &Texture,
    sampler: &SamplerState,
    q: &SampleQuery,
    component: u8,
) -> Result<[u32; 4], Fault> {
    check_compare(sampler, q)?;
    let l = tex.level(0)?;
    let c = to_texel_space(q, l);
    let wraps = q.wraps(sampler);
    let i0 = floor_i(c[0] - 0.5).saturating_add(q.offset[0]);
    let j0 = floor_i(c[1] - 0.5).saturating_add(q.offset[1]);
    let order = [(0, 1), (1, 1), (1, 0), (0, 0)];
    let mut out = [0u32; 4];
    for (o, (di, dj)) in out.iter_mut().zip(order) {
        let t = tap(
            tex,
            l,
            q,
            wraps,
            [i0.saturating_add(di), j0.saturating_add(dj), 0],
        )?;
        *o = match (q.compare, sampler.compare) {
            (Some(reference), Some(f)) => {
                let pass = f.test(reference, f32::from_bits(t[0]) as f64);
                (pass as u8 as f32).to_bits()
            }
            _ => t[component as usize & 3],
        };
    }
    Ok(out)
}

/// `txf`: the texel at integer coordinates `(x, y, z)` of `layer` and `level`.
pub(crate) fn fetch(tex: &Texture, level: i64, c: [i64; 3], layer: i64) -> Result<[u32; 4], Fault> {
    let lv = usize::try_from(level)
        .ok()
        .filter(|&l| l < tex.levels.len())
        .ok_or_else(|| {
            Fault::oob(format!(
                "txf of mip level {level}, the texture has {}",
                tex.levels.len()
            ))
        })?;
    let l = tex.level(lv)?;
    tex.texel(l, c[0], c[1], c[2], layer).ok_or_else(|| {
        Fault::oob(format!(
            "txf at ({}, {}, {}) layer {layer} of level {lv} sized {}x{}x{} with {} layers",
            c[0], c[1], c[2], l.width, l.height, l.depth, tex.layers
        ))
    })
}

/// The size `(width, height, depth)` of a level, for `txs`.
pub(crate) fn level_dims(tex: &Texture, level: i64) -> Result<[u32; 3], Fault> {
    let l = usize::try_from(level)
        .ok()
        .and_then(|l| tex.levels.get(l))
        .ok_or_else(|| {
            Fault::oob(format!(
                "txs of mip level {level}, the texture has {}",
                tex.levels.len()
            ))
        })?;
    Ok([l.width, l.height, l.depth])
}

/// A cube map direction reduced to a face: `(face, [u, v])` in `[0, 1]`, and the derivatives of
/// `u, v` given the derivatives of the direction.
pub(crate) fn cube_face(p: [f64; 3], dp: &[[f64; 3]; 2]) -> (i64, [f64; 2], [[f64; 2]; 2]) {
    let [x, y, z] = p;
    // (face, major axis, sc = sign · axis, tc = sign · axis)
    let (face, ma, sc, tc): (i64, usize, (f64, usize), (f64, usize)) =
        if x.abs() >= y.abs() && x.abs() >= z.abs() {
            if x >= 0.0 {
                (0, 0, (-1.0, 2), (-1.0, 1))
            } else {
                (1, 0, (1.0, 2), (-1.0, 1))
            }
        } else if y.abs() >= z.abs() {
            if y >= 0.0 {
                (2, 1, (1.0, 0), (1.0, 2))
            } else {
                (3, 1, (1.0, 0), (-1.0, 2))
            }
        } else if z >= 0.0 {
            (4, 2, (1.0, 0), (-1.0, 1))
        } else {
            (5, 2, (-1.0, 0), (-1.0, 1))
        };
    let m = p[ma].abs();
    let sign_m = if p[ma] < 0.0 { -1.0 } else { 1.0 };
    let face_coord = |(sign, axis): (f64, usize), d: &[f64; 3]| {
        let s = sign * p[axis];
        let ds = sign * d[axis];
        let dm = sign_m * d[ma];
        (0.5 * (s / m + 1.0), 0.5 * (ds * m - s * dm) / (m * m))
    };
    let (u, dudx) = face_coord(sc, &dp[0]);
    let (v, dvdx) = face_coord(tc, &dp[0]);
    let (_, dudy) = face_coord(sc, &dp[1]);
    let (_, dvdy) = face_coord(tc, &dp[1]);
    (face, [u, v], [[dudx, dvdx], [dudy, dvdy]])
}
