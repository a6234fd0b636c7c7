//! The texture units: where a TEX clause's sampling instructions take their operands (the
//! contract the compiler places them by), and the model the emulator runs them with.
//!
//! # The contract
//!
//! A texture instruction reads one GPR; its `src_sel` gathers four source channels x, y, z, w
//! from it (components, or the constants 0 and 1.0), and [`layout`] says which parameter each
//! channel carries for an operation on a texture of some dimensionality:
//! - the coordinates first: x, then y, then z, as many as the dimensionality has axes;
//! - the array layer of an array texture in the next channel (y for 1D, z for 2D arrays);
//! - the LOD (SAMPLE_L, SAMPLE_C_L, LD) or the bias (SAMPLE_LB, SAMPLE_C_LB) in w;
//! - the shadow reference (SAMPLE_C*) in z when z is free, else in w;
//! - GET_TEXTURE_RESINFO: the LOD (an integer) in x.
//!
//! An operation whose parameters do not fit (more than four channels, two in one) has no
//! layout: the compiler must not emit it. SAMPLE_LZ and SAMPLE_C_LZ sample level 0; SAMPLE_G
//! and SAMPLE_C_G take their coordinates like SAMPLE and their gradients from the
//! SET_GRADIENTS_H (along x) and SET_GRADIENTS_V (along y) before them in the same clause,
//! whose source channels x, y, z carry the derivatives of the coordinates x, y, z. LD takes
//! integer texel coordinates, layer and LOD. Cube textures have no layout yet.
//!
//! The resource id of an instruction picks a [`TexView`] (which texture of the interpreter's
//! [`Resources`] and how it is addressed), its sampler id a sampler binding of the
//! interpreter's resources.
//!
//! # The model
//!
//! The sampler is the reference interpreter's ([`texture_op`]), so that a differential test
//! compares the program's addressing of the sampler, not two samplers:
//! - Coordinates of the sampling operations are floats. A coordinate channel whose
//!   `coord_normalized` flag is clear is in texel units and is divided by the size of level 0
//!   along its axis (for rectangle textures, which the interpreter addresses in texels, a set
//!   flag multiplies instead); the layer is never scaled. Gradients of SAMPLE_G scale the same
//!   way as the coordinate of their axis. The compiler normally sets every flag.
//! - The implicit LOD of SAMPLE, SAMPLE_LB, SAMPLE_C and SAMPLE_C_LB comes from the coarse
//!   derivatives of the (scaled) coordinates over the lane's quad, as the interpreter computes
//!   them: x from the top row (right − left), y from the left column (bottom − top), taking
//!   the other row (column) when a member of the first pair does not execute the fetch, and 0
//!   when neither pair is complete. Only lanes that execute the fetch take part.
//! - GET_TEXTURE_RESINFO gives the interpreter's `txs` components (width; then height, or
//!   the layers of a 1D array; then depth, or the layers of a 2D array), zero past them, and
//!   the level count in w, as integers.
//! - Texel offsets are half-texel fields: even ones are whole texels and are passed on, odd
//!   ones and a nonzero LOD_BIAS field are not modelled (an error).
//! - Results are the interpreter's four components (raw bits: floats, or the texel's integers
//!   for integer textures); the emulator places them by `dst_sel`.

use crate::isa::FetchOp;
use crate::program::Fetch;
use shrew_engine::interp::{Resources, TexKind, TexOperands, texture_op};
use shrew_engine::ir::{Dim, TexOp, TexSrc};
use shrew_engine::ops::BaseType;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a texture resource id stands for: the texture at `binding` of the interpreter's
/// resources, addressed as a `dim` texture (an array or not) whose texels are of `dest_type`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TexView {
    pub binding: u32,
    pub dim: Dim,
    pub is_array: bool,
    pub dest_type: BaseType,
}

/// What the texture units read: the views by resource id, the interpreter's sampler bindings
/// by sampler id, and the interpreter's resources holding the textures and samplers.
#[derive(Clone, Debug, Default)]
pub struct TextureState {
    pub views: BTreeMap<u8, TexView>,
    pub sampler_bindings: BTreeMap<u8, u32>,
    pub resources: Arc<Resources>,
}

/// The parameter a source channel of a texture instruction carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TexParam {
    /// Coordinate axis `i` (0 x, 1 y, 2 z).
    Coord(u8),
    /// The array layer.
    Layer,
    /// The shadow reference.
    Ref,
    Lod,
    Bias,
}

impl TexParam {
    /// What the parameter is, for messages.
    pub fn name(self) -> &'static str {
        match self {
            TexParam::Coord(_) => "coordinate",
            TexParam::Layer => "array layer",
            TexParam::Ref => "shadow reference",
            TexParam::Lod => "LOD",
            TexParam::Bias => "LOD bias",
        }
    }
}

/// How an operation samples: the interpreter's operation, whether it compares, the LOD or
/// bias parameter it takes in w, and whether it samples level 0 (the `_LZ` forms).
#[derive(Copy, Clone, Debug)]
struct Shape {
    op: TexOp,
    shadow: bool,
    level: Option<TexParam>,
    level_zero: bool,
}

/// The shape of the texture operations the model supports.
fn shape(op: FetchOp) -> Option<Shape> {
    use FetchOp::*;
    use TexParam::{Bias, Lod};
    let (op, shadow, level, level_zero) = match op {
        Sample => (TexOp::Tex, false, None, false),
        SampleL => (TexOp::Txl, false, Some(Lod), false),
        SampleLb => (TexOp::Txb, false, Some(Bias), false),
        SampleLz => (TexOp::Txl, false, None, true),
        SampleG => (TexOp::Txd, false, None, false),
        SampleC => (TexOp::Tex, true, None, false),
        SampleCL => (TexOp::Txl, true, Some(Lod), false),
        SampleCLb => (TexOp::Txb, true, Some(Bias), false),
        SampleCLz => (TexOp::Txl, true, None, true),
        SampleCG => (TexOp::Txd, true, None, false),
        Ld => (TexOp::Txf, false, Some(Lod), false),
        GetTextureResinfo => (TexOp::Txs, false, Some(Lod), false),
        GetLod => (TexOp::Lod, false, None, false),
        _ => return None,
    };
    Some(Shape {
        op,
        shadow,
        level,
        level_zero,
    })
}

/// Which parameter each source channel x, y, z, w of texture operation `op` on a `dim`
/// texture (an array or not) carries, or why the operation has no layout (see the module
/// documentation).
pub fn layout(op: FetchOp, dim: Dim, is_array: bool) -> Result<[Option<TexParam>; 4], String> {
    let what = || {
        format!(
            "{op} on a {}{} texture",
            dim.name(),
            if is_array { " array" } else { "" }
        )
    };
    match dim {
        Dim::Cube => return Err("cube textures are not supported yet".into()),
        Dim::D1 | Dim::D2 | Dim::D3 | Dim::Rect => {}
        _ => return Err(format!("{}: the dimensionality is not supported", what())),
    }
    if is_array && !matches!(dim, Dim::D1 | Dim::D2) {
        return Err(format!("{}: only 1D and 2D textures have arrays", what()));
    }
    let shape =
        shape(op).ok_or_else(|| format!("{op} is not a texture operation the model runs"))?;
    let mut out = [None; 4];
    if op == FetchOp::GetTextureResinfo {
        out[0] = Some(TexParam::Lod);
        return Ok(out);
    }
    let axes = dim.coord_components() as usize;
    for (a, slot) in out.iter_mut().enumerate().take(axes) {
        *slot = Some(TexParam::Coord(a as u8));
    }
    if is_array {
        out[axes] = Some(TexParam::Layer);
    }
    let full = |param: TexParam| {
        format!(
            "{}: no source channel is left for the {}",
            what(),
            param.name()
        )
    };
    if let Some(level) = shape.level {
        if out[3].is_some() {
            return Err(full(level));
        }
        out[3] = Some(level);
    }
    if shape.shadow {
        let free = [2, 3]
            .into_iter()
            .find(|&c| out[c].is_none())
            .ok_or_else(|| full(TexParam::Ref))?;
        out[free] = Some(TexParam::Ref);
    }
    Ok(out)
}

/// Per lane, the gradients a SET_GRADIENTS_H (`[0]`, along x) and a SET_GRADIENTS_V (`[1]`,
/// along y) of the current clause gave: their four source channels.
pub(crate) type Gradients = [Option<[u32; 4]>; 2];

/// Quad member pairs of the coarse derivative along x (the top row, then the bottom one).
pub(crate) const COARSE_X: [(usize, usize); 2] = [(0, 1), (2, 3)];
/// Quad member pairs of the coarse derivative along y (the left column, then the right one).
pub(crate) const COARSE_Y: [(usize, usize); 2] = [(0, 2), (1, 3)];

/// `b − a` for the first pair `(a, b)` of quad members of `pairs` that are both present in
/// `at`, or zeros when neither pair is complete.
pub(crate) fn quad_difference<const N: usize>(
    at: &[Option<[f64; N]>; 4],
    pairs: [(usize, usize); 2],
) -> [f64; N] {
    pairs
        .into_iter()
        .find_map(|(a, b)| Some((at[a]?, at[b]?)))
        .map_or([0.0; N], |(a, b)| std::array::from_fn(|k| b[k] - a[k]))
}

/// Runs texture instruction `fetch` for the lanes of `exec`; `srcs[lane]` are the lane's four
/// source channels (after `src_sel`), `gradients[lane]` what the clause's SET_GRADIENTS gave.
/// Gives each executing lane's four result components (before `dst_sel`), or why the
/// operation cannot run.
pub(crate) fn run(
    state: &TextureState,
    fetch: &Fetch,
    srcs: &[[u32; 4]],
    exec: u64,
    gradients: &[Gradients],
) -> Result<Vec<Option<[u32; 4]>>, String> {
    let view = *state
        .views
        .get(&fetch.resource)
        .ok_or_else(|| format!("no texture view at resource {}", fetch.resource))?;
    let params = layout(fetch.op, view.dim, view.is_array)?;
    let shape = shape(fetch.op).ok_or_else(|| format!("{} is not modelled", fetch.op))?;
    if fetch.lod_bias != 0 {
        return Err("a nonzero LOD_BIAS field is not modelled".into());
    }
    let res: &Resources = &state.resources;
    let texture = res
        .textures
        .get(&view.binding)
        .ok_or_else(|| format!("no texture bound at binding {}", view.binding))?;
    let level0 = texture
        .levels
        .first()
        .ok_or_else(|| format!("the texture at binding {} has no level", view.binding))?;
    let size = [level0.width, level0.height, level0.depth].map(f64::from);
    let kind = TexKind {
        op: shape.op,
        dim: view.dim,
        is_array: view.is_array,
        is_shadow: shape.shadow,
        dest_type: view.dest_type,
        component: 0,
    };
    let sampler = match shape.op {
        // Fetches and size queries read no sampler state.
        TexOp::Txf | TexOp::Txs => 0,
        _ => *state
            .sampler_bindings
            .get(&fetch.sampler)
            .ok_or_else(|| format!("no sampler at sampler id {}", fetch.sampler))?,
    };
    let channel = |p: TexParam| params.iter().position(|&q| q == Some(p));
    let axes = view.dim.coord_components() as usize;
    let rect = view.dim == Dim::Rect;
    // The channel of each coordinate axis (the layout always has them).
    let coord_channels: Vec<usize> = (0..axes)
        .map(|a| channel(TexParam::Coord(a as u8)).unwrap_or(a))
        .collect();
    // A float coordinate (or its gradient) of axis `a` from channel `ch`, in the interpreter's
    // units.
    let scale = |x: u32, a: usize| {
        let x = f32::from_bits(x) as f64;
        match (rect, fetch.coord_normalized[coord_channels[a]]) {
            (false, false) => x / size[a],
            (true, true) => x * size[a],
            _ => x,
        }
    };
    let coords = |lane: usize| -> [f64; 3] {
        std::array::from_fn(|a| {
            if a < axes {
                scale(srcs[lane][coord_channels[a]], a)
            } else {
                0.0
            }
        })
    };
    let mut offsets = Vec::with_capacity(axes);
    for &o in &fetch.offset[..axes] {
        if o % 2 != 0 {
            return Err(format!("an offset of {o} half texels is not modelled"));
        }
        offsets.push((o / 2) as i64 as u64);
    }
    let executes = |lane: usize| lane < srcs.len() && exec >> lane & 1 != 0;
    let implicit = matches!(shape.op, TexOp::Tex | TexOp::Txb | TexOp::Lod);
    let mut out = vec![None; srcs.len()];
    for lane in (0..srcs.len()).filter(|&l| executes(l)) {
        let src = &srcs[lane];
        let mut ops = TexOperands::default();
        let mut derivs = None;
        match shape.op {
            TexOp::Txs => {
                ops.set(TexSrc::Lod, &[src[0] as u64], 32);
            }
            TexOp::Txf => {
                let mut c: Vec<u64> = coord_channels.iter().map(|&ch| src[ch] as u64).collect();
                if let Some(ch) = channel(TexParam::Layer) {
                    c.push(src[ch] as u64);
                }
                ops.set(TexSrc::Coord, &c, 32);
                if let Some(ch) = channel(TexParam::Lod) {
                    ops.set(TexSrc::Lod, &[src[ch] as u64], 32);
                }
            }
            _ => {
                let mut c: Vec<u64> = coords(lane)[..axes].iter().map(|x| x.to_bits()).collect();
                if let Some(ch) = channel(TexParam::Layer) {
                    c.push((f32::from_bits(src[ch]) as f64).to_bits());
                }
                ops.set(TexSrc::Coord, &c, 64);
                for (param, kind) in [
                    (TexParam::Ref, TexSrc::Comparator),
                    (TexParam::Lod, TexSrc::Lod),
                    (TexParam::Bias, TexSrc::Bias),
                ] {
                    if let Some(ch) = channel(param) {
                        ops.set(kind, &[src[ch] as u64], 32);
                    }
                }
                if shape.level_zero {
                    ops.set(TexSrc::Lod, &[0.0f32.to_bits() as u64], 32);
                }
                if shape.op == TexOp::Txd {
                    let grads = gradients.get(lane).copied().unwrap_or_default();
                    for (grad, kind) in grads.into_iter().zip([TexSrc::Ddx, TexSrc::Ddy]) {
                        let g = grad.ok_or_else(|| {
                            format!(
                                "{} without SET_GRADIENTS_H and SET_GRADIENTS_V before it in the \
                                 clause",
                                fetch.op
                            )
                        })?;
                        let d: Vec<u64> = (0..axes).map(|a| scale(g[a], a).to_bits()).collect();
                        ops.set(kind, &d, 64);
                    }
                }
                if implicit {
                    let first = lane - lane % 4;
                    let at: [Option<[f64; 3]>; 4] =
                        std::array::from_fn(|k| executes(first + k).then(|| coords(first + k)));
                    derivs = Some([
                        quad_difference(&at, COARSE_X),
                        quad_difference(&at, COARSE_Y),
                    ]);
                }
            }
        }
        if offsets.iter().any(|&o| o != 0) {
            ops.set(TexSrc::Offset, &offsets, 32);
        }
        let (mut texel, _) = texture_op(res, &kind, view.binding, sampler, &ops, derivs)?;
        match shape.op {
            TexOp::Txs => texel[3] = texture.levels.len() as u32,
            // GET_LOD gives the computed LOD in x and the level it accesses in y.
            TexOp::Lod => texel.swap(0, 1),
            _ => {}
        }
        out[lane] = Some(texel);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TexParam::*;

    #[test]
    fn layouts_place_coordinates_layer_level_and_reference() {
        assert_eq!(
            layout(FetchOp::Sample, Dim::D2, false),
            Ok([Some(Coord(0)), Some(Coord(1)), None, None])
        );
        assert_eq!(
            layout(FetchOp::SampleL, Dim::D2, true),
            Ok([Some(Coord(0)), Some(Coord(1)), Some(Layer), Some(Lod)])
        );
        assert_eq!(
            layout(FetchOp::SampleCLb, Dim::D1, true),
            Ok([Some(Coord(0)), Some(Layer), Some(Ref), Some(Bias)])
        );
        assert_eq!(
            layout(FetchOp::SampleC, Dim::D2, true),
            Ok([Some(Coord(0)), Some(Coord(1)), Some(Layer), Some(Ref)])
        );
        assert_eq!(
            layout(FetchOp::SampleC, Dim::D3, false),
            Ok([Some(Coord(0)), Some(Coord(1)), Some(Coord(2)), Some(Ref)])
        );
        assert_eq!(
            layout(FetchOp::Ld, Dim::D3, false),
            Ok([Some(Coord(0)), Some(Coord(1)), Some(Coord(2)), Some(Lod)])
        );
        assert_eq!(
            layout(FetchOp::GetTextureResinfo, Dim::D2, true),
            Ok([Some(Lod), None, None, None])
        );
    }

    #[test]
    fn layouts_that_do_not_fit_are_errors() {
        let err = layout(FetchOp::SampleCL, Dim::D2, true).unwrap_err();
        assert!(err.contains("shadow reference"), "{err}");
        assert!(layout(FetchOp::SampleCL, Dim::D3, false).is_err());
        assert_eq!(
            layout(FetchOp::Sample, Dim::Cube, false),
            Err("cube textures are not supported yet".to_string())
        );
        assert!(layout(FetchOp::Sample, Dim::D3, true).is_err());
        assert!(layout(FetchOp::Gather4, Dim::D2, false).is_err());
    }

    #[test]
    fn quad_differences_fall_back_to_the_other_pair() {
        let v = |x: f64| Some([x]);
        assert_eq!(
            quad_difference(&[v(1.0), v(3.0), v(0.0), v(10.0)], COARSE_X),
            [2.0]
        );
        assert_eq!(
            quad_difference(&[v(1.0), None, v(0.0), v(10.0)], COARSE_X),
            [10.0]
        );
        assert_eq!(
            quad_difference(&[v(1.0), None, None, v(10.0)], COARSE_X),
            [0.0]
        );
        assert_eq!(
            quad_difference(&[v(1.0), v(3.0), v(5.0), v(10.0)], COARSE_Y),
            [4.0]
        );
    }
}
