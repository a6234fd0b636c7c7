//! Texture instructions: choosing the texture and sampler, reading the sources, and calling the
//! software sampler.
//!
//! [`texture_op`] is the sampler unit as a whole, apart from any instruction set: what a texture
//! operation gives one invocation from its operands. The interpreter calls it with the operands
//! in its registers; a backend's emulator calls it with those its sampler messages carry.

use super::exec::{Frame, Machine};
use super::program::FuncCode;
use super::sampler::{self, LodSource, SampleQuery};
use super::{Fault, Resources};
use crate::ir::*;
use shrew_ops::BaseType;
use shrew_ops::eval::{fget, fput, mask, sext};

/// What a texture operation does apart from its operands: the fields of a texture instruction
/// that a sampler unit learns from its message and from the bound texture.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TexKind {
    pub op: TexOp,
    pub dim: Dim,
    pub is_array: bool,
    pub is_shadow: bool,
    pub dest_type: BaseType,
    /// The component `tg4` gathers.
    pub component: u8,
}

impl TexKind {
    pub fn of(t: &Tex) -> TexKind {
        TexKind {
            op: t.op,
            dim: t.dim,
            is_array: t.is_array,
            is_shadow: t.is_shadow,
            dest_type: t.dest_type,
            component: t.component,
        }
    }
}

/// Components of a texture source that an operation reads at most (a cube array's coordinate).
const SOURCE_COMPONENTS: usize = 4;

/// One source's components as raw bits of its bit size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Operand {
    values: [u64; SOURCE_COMPONENTS],
    n: u8,
    bits: u8,
}

/// The operands of one invocation's texture operation: each source's components as raw bits of
/// its bit size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TexOperands([Option<Operand>; TexSrc::ALL.len()]);

impl TexOperands {
    /// Sets source `kind` to `values` of `bits` bits each. Components past the fourth, which no
    /// operation reads, are dropped.
    pub fn set(&mut self, kind: TexSrc, values: &[u64], bits: u8) {
        let n = values.len().min(SOURCE_COMPONENTS);
        let mut operand = Operand {
            n: n as u8,
            bits,
            ..Operand::default()
        };
        operand.values[..n].copy_from_slice(&values[..n]);
        self.0[kind as usize] = Some(operand);
    }
}

/// Up to four components of a source, converted.
#[derive(Clone, Copy, Default)]
struct Comps<T> {
    vals: [T; SOURCE_COMPONENTS],
    n: usize,
}

impl<T> std::ops::Deref for Comps<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.vals[..self.n]
    }
}

impl<T> std::ops::DerefMut for Comps<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.vals[..self.n]
    }
}

/// Runs a texture operation for one invocation on the texture and sampler at the given bindings
/// of `res`, with the coordinate derivatives along x and y of an implicit-LOD operation (zero
/// when `None`). Gives the four result components as raw 32-bit values and whether they are
/// floats, or why the operation fails (a missing resource or operand, a fetch out of range).
pub fn texture_op(
    res: &Resources,
    kind: &TexKind,
    texture: u32,
    sampler: u32,
    operands: &TexOperands,
    derivs: Option<[[f64; 3]; 2]>,
) -> Result<([u32; 4], bool), String> {
    run_texture_op(res, kind, texture, sampler, operands, derivs).map_err(|f| f.detail)
}

/// The sources of one texture operation.
struct Srcs<'a> {
    kind: &'a TexKind,
    operands: &'a TexOperands,
}

impl Srcs<'_> {
    fn raw(&self, kind: TexSrc) -> Option<(&[u64], u8)> {
        let operand = self.operands.0[kind as usize].as_ref()?;
        Some((&operand.values[..operand.n as usize], operand.bits))
    }

    fn converted<T: Copy + Default>(
        &self,
        kind: TexSrc,
        f: impl Fn(u64, u8) -> T,
    ) -> Option<Comps<T>> {
        let (vals, bits) = self.raw(kind)?;
        let mut out = Comps {
            vals: [T::default(); SOURCE_COMPONENTS],
            n: vals.len(),
        };
        for (o, &x) in out.vals.iter_mut().zip(vals) {
            *o = f(x, bits);
        }
        Some(out)
    }

    fn floats(&self, kind: TexSrc) -> Option<Comps<f64>> {
        self.converted(kind, fget)
    }

    fn ints(&self, kind: TexSrc) -> Option<Comps<i64>> {
        self.converted(kind, sext)
    }

    fn float(&self, kind: TexSrc) -> Option<f64> {
        self.floats(kind).map(|v| v[0])
    }

    fn int(&self, kind: TexSrc) -> Option<i64> {
        self.ints(kind).map(|v| v[0])
    }

    /// Coordinate axes of the instruction, without the array layer (3 for cube directions).
    fn axes(&self) -> usize {
        match self.kind.dim {
            Dim::Cube => 3,
            d => d.coord_components() as usize,
        }
    }

    /// The float coordinates (projected when there is a projector) and the comparator.
    fn coords(&self) -> Result<(Comps<f64>, Option<f64>), Fault> {
        let mut c = self
            .floats(TexSrc::Coord)
            .ok_or_else(|| Fault::invalid("texture instruction without coordinates".into()))?;
        let axes = self.axes();
        if c.len() < axes + self.kind.is_array as usize {
            return Err(Fault::invalid(format!(
                "{} coordinate components for {} axes",
                c.len(),
                axes
            )));
        }
        let q = self.float(TexSrc::Projector).unwrap_or(1.0);
        for x in &mut c[..axes] {
            *x /= q;
        }
        let cmp = self.float(TexSrc::Comparator).map(|r| r / q);
        Ok((c, cmp))
    }
}

fn pad3(v: &[f64]) -> [f64; 3] {
    let mut out = [0.0; 3];
    for (o, x) in out.iter_mut().zip(v) {
        *o = *x;
    }
    out
}

/// The operands of texture instruction `t` in a frame's registers.
fn operands(fc: &FuncCode, regs: &[u64], t: &Tex) -> TexOperands {
    let mut ops = TexOperands::default();
    for &(kind, v) in &t.srcs {
        let (off, n) = (
            fc.reg_off[v.index()] as usize,
            fc.reg_comps[v.index()] as usize,
        );
        ops.set(kind, &regs[off..off + n], fc.reg_bits[v.index()]);
    }
    ops
}

impl<'s> Machine<'_, 's> {
    fn tex_of(&self, frame: &Frame, v: Value) -> (&'s Tex, ValType) {
        let shader: &'s Shader = self.prog.shader;
        let inst = shader.functions[frame.func as usize].inst(v);
        match &inst.kind {
            InstKind::Tex(t) => (t, inst.def.unwrap_or(ValType::new(32, 4))),
            _ => unreachable!("decoded from a texture instruction"),
        }
    }

    /// The operands of texture instruction `v` in the frame's registers.
    pub(crate) fn tex_operands(&self, fc: &FuncCode, frame: &Frame, v: Value) -> TexOperands {
        operands(fc, &frame.regs, self.tex_of(frame, v).0)
    }

    /// The coordinates whose screen-space derivatives give the implicit LOD: the projected
    /// coordinate axes (for cube maps, the direction), from the instruction's operands.
    pub(crate) fn tex_deriv_coord(
        &self,
        frame: &Frame,
        v: Value,
        operands: &TexOperands,
    ) -> [f64; 3] {
        let (tex, _) = self.tex_of(frame, v);
        let s = Srcs {
            kind: &TexKind::of(tex),
            operands,
        };
        match s.coords() {
            Ok((c, _)) => pad3(&c[..s.axes()]),
            Err(_) => [0.0; 3],
        }
    }

    /// Executes a texture instruction on its operands ([`Machine::tex_operands`]); `derivs`
    /// are the coordinate derivatives along x and y of an implicit-LOD operation (zero when
    /// absent).
    pub(crate) fn exec_tex(
        &mut self,
        fc: &FuncCode,
        frame: &mut Frame,
        v: Value,
        operands: &TexOperands,
        derivs: Option<[[f64; 3]; 2]>,
    ) -> Result<(), Fault> {
        let (t, def) = self.tex_of(frame, v);
        let s = Srcs {
            kind: &TexKind::of(t),
            operands,
        };
        let tex_offset = s.int(TexSrc::TextureOffset).unwrap_or(0) as u32;
        let sampler_offset = s.int(TexSrc::SamplerOffset).unwrap_or(0) as u32;
        let deref_binding = |kind: TexSrc| {
            s.raw(kind)
                .map(|(vals, _)| self.opaque_binding(vals[0]))
                .transpose()
        };
        let tex_deref = deref_binding(TexSrc::TextureDeref)?;
        let tex_binding = tex_deref.unwrap_or(t.texture).wrapping_add(tex_offset);
        let sampler_binding = match deref_binding(TexSrc::SamplerDeref)? {
            Some(b) => b.wrapping_add(sampler_offset),
            // A texture deref without a sampler deref is a combined texture-sampler.
            None if tex_deref.is_some() => tex_binding,
            None => t.sampler.wrapping_add(sampler_offset),
        };
        let (result, float) = run_texture_op(
            self.res,
            &TexKind::of(t),
            tex_binding,
            sampler_binding,
            operands,
            derivs,
        )?;
        let dst = fc.reg_off[v.index()] as usize;
        let out = &mut frame.regs[dst..dst + def.comps as usize];
        out.fill(0);
        for (o, &x) in out.iter_mut().zip(&result) {
            *o = if float {
                match def.bits {
                    32 => x as u64,
                    bits => fput(f32::from_bits(x) as f64, bits),
                }
            } else if t.dest_type == BaseType::Int {
                mask(sext(x as u64, 32) as u64, def.bits)
            } else {
                mask(x as u64, def.bits)
            };
        }
        Ok(())
    }
}

fn run_texture_op(
    res: &Resources,
    t: &TexKind,
    tex_binding: u32,
    sampler_binding: u32,
    operands: &TexOperands,
    derivs: Option<[[f64; 3]; 2]>,
) -> Result<([u32; 4], bool), Fault> {
    let s = Srcs { kind: t, operands };
    let tex = res
        .textures
        .get(&tex_binding)
        .ok_or_else(|| Fault::invalid(format!("no texture bound at binding {tex_binding}")))?;
    let float = t.dest_type == BaseType::Float;
    let (result, float): ([u32; 4], bool) = match t.op {
        TexOp::QueryLevels => ([tex.levels.len() as u32, 0, 0, 0], false),
        TexOp::Txs => {
            let [w, h, d] = sampler::level_dims(tex, s.int(TexSrc::Lod).unwrap_or(0))?;
            let mut out = match t.dim {
                Dim::D1 | Dim::Buf => vec![w],
                Dim::D3 => vec![w, h, d],
                _ => vec![w, h],
            };
            if t.is_array {
                out.push(if t.dim == Dim::Cube {
                    tex.layers / 6
                } else {
                    tex.layers
                });
            }
            out.resize(4, 0);
            ([out[0], out[1], out[2], out[3]], false)
        }
        TexOp::Txf | TexOp::TxfMs => {
            let c = s
                .ints(TexSrc::Coord)
                .ok_or_else(|| Fault::invalid("txf without coordinates".into()))?;
            let g = |i: usize| c.get(i).copied().unwrap_or(0);
            let arr = t.is_array;
            let (mut xyz, layer) = match t.dim {
                Dim::D1 | Dim::Buf => ([g(0), 0, 0], if arr { g(1) } else { 0 }),
                Dim::D3 => ([g(0), g(1), g(2)], 0),
                Dim::Cube => ([g(0), g(1), 0], g(2)),
                _ => ([g(0), g(1), 0], if arr { g(2) } else { 0 }),
            };
            for (x, o) in xyz
                .iter_mut()
                .zip(s.ints(TexSrc::Offset).unwrap_or_default().iter())
            {
                *x = x.saturating_add(*o);
            }
            let level = s.int(TexSrc::Lod).unwrap_or(0);
            (sampler::fetch(tex, level, xyz, layer)?, float)
        }
        _ => {
            let sampler_state = res.samplers.get(&sampler_binding).ok_or_else(|| {
                Fault::invalid(format!("no sampler bound at binding {sampler_binding}"))
            })?;
            let (c, cmp) = s.coords()?;
            if t.is_shadow && cmp.is_none() {
                return Err(Fault::invalid(
                    "shadow sampling without a comparator".into(),
                ));
            }
            let axes = s.axes();
            let zero = [[0.0; 3]; 2];
            let (dx, dy) = match t.op {
                TexOp::Txd => (
                    pad3(&s.floats(TexSrc::Ddx).unwrap_or_default()),
                    pad3(&s.floats(TexSrc::Ddy).unwrap_or_default()),
                ),
                _ => {
                    let [dx, dy] = derivs.unwrap_or(zero);
                    (dx, dy)
                }
            };
            let bias = s.float(TexSrc::Bias).unwrap_or(0.0);
            let explicit = match t.op {
                TexOp::Txl => Some(s.float(TexSrc::Lod).unwrap_or(0.0)),
                TexOp::Tg4 => Some(0.0),
                _ => None,
            };
            let layer_coord = if t.is_array { c[axes] } else { 0.0 };
            let (coord, qaxes, dx, dy, layer) = if t.dim == Dim::Cube {
                let (face, uv, [duvdx, duvdy]) = sampler::cube_face(pad3(&c[..3]), &[dx, dy]);
                let cubes = (tex.layers / 6).max(1) as i64;
                let a = (layer_coord.round_ties_even() as i64).clamp(0, cubes - 1);
                let d3 = |d: [f64; 2]| [d[0], d[1], 0.0];
                ([uv[0], uv[1], 0.0], 2, d3(duvdx), d3(duvdy), a * 6 + face)
            } else {
                let layer =
                    (layer_coord.round_ties_even() as i64).clamp(0, tex.layers.max(1) as i64 - 1);
                (pad3(&c[..axes]), axes, dx, dy, layer)
            };
            let mut offset = [0i64; 3];
            for (o, x) in offset
                .iter_mut()
                .zip(s.ints(TexSrc::Offset).unwrap_or_default().iter())
            {
                *o = *x;
            }
            let q = SampleQuery {
                coord,
                axes: qaxes,
                normalized: t.dim != Dim::Rect,
                cube: t.dim == Dim::Cube,
                layer,
                lod: match explicit {
                    Some(l) => LodSource::Explicit(l),
                    None => LodSource::Derivatives { dx, dy, bias },
                },
                min_lod: s.float(TexSrc::MinLod).unwrap_or(f64::NEG_INFINITY),
                offset,
                compare: if t.is_shadow { cmp } else { None },
                integer: !float,
            };
            match t.op {
                TexOp::Lod => {
                    let [d, l] = sampler::query_lod(tex, sampler_state, &q)?;
                    ([d, l, 0, 0], true)
                }
                TexOp::Tg4 => (sampler::gather(tex, sampler_state, &q, t.component)?, float),
                _ => (sampler::sample(tex, sampler_state, &q)?, float),
            }
        }
    };
    Ok((result, float))
}
