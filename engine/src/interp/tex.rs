//! Texture instructions: choosing the texture and sampler, reading the sources, and calling the
//! software sampler.

use super::Fault;
use super::exec::{Frame, Machine};
use super::program::FuncCode;
use super::sampler::{self, LodSource, SampleQuery, Texture};
use crate::ir::*;
use shrew_ops::BaseType;
use shrew_ops::eval::{fget, fput, mask, sext};

/// The sources of one texture instruction as read from a register file.
struct Srcs<'a> {
    fc: &'a FuncCode,
    regs: &'a [u64],
    tex: &'a Tex,
}

impl Srcs<'_> {
    fn raw(&self, kind: TexSrc) -> Option<(&[u64], u8)> {
        let v = self.tex.src(kind)?.index();
        let off = self.fc.reg_off[v] as usize;
        let n = self.fc.reg_comps[v] as usize;
        Some((&self.regs[off..off + n], self.fc.reg_bits[v]))
    }

    fn floats(&self, kind: TexSrc) -> Option<Vec<f64>> {
        self.raw(kind)
            .map(|(vals, bits)| vals.iter().map(|&x| fget(x, bits)).collect())
    }

    fn ints(&self, kind: TexSrc) -> Option<Vec<i64>> {
        self.raw(kind)
            .map(|(vals, bits)| vals.iter().map(|&x| sext(x, bits)).collect())
    }

    fn float(&self, kind: TexSrc) -> Option<f64> {
        self.floats(kind).map(|v| v[0])
    }

    fn int(&self, kind: TexSrc) -> Option<i64> {
        self.ints(kind).map(|v| v[0])
    }

    /// Coordinate axes of the instruction, without the array layer (3 for cube directions).
    fn axes(&self) -> usize {
        match self.tex.dim {
            Dim::Cube => 3,
            d => d.coord_components() as usize,
        }
    }

    /// The float coordinates (projected when there is a projector) and the comparator.
    fn coords(&self) -> Result<(Vec<f64>, Option<f64>), Fault> {
        let mut c = self
            .floats(TexSrc::Coord)
            .ok_or_else(|| Fault::invalid("texture instruction without coordinates".into()))?;
        let axes = self.axes();
        if c.len() < axes + self.tex.is_array as usize {
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

impl<'s> Machine<'_, 's> {
    fn tex_of(&self, frame: &Frame, v: Value) -> (&'s Tex, ValType) {
        let shader: &'s Shader = self.prog.shader;
        let inst = shader.functions[frame.func as usize].inst(v);
        match &inst.kind {
            InstKind::Tex(t) => (t, inst.def.unwrap_or(ValType::new(32, 4))),
            _ => unreachable!("decoded from a texture instruction"),
        }
    }

    /// The coordinates whose screen-space derivatives give the implicit LOD: the projected
    /// coordinate axes (for cube maps, the direction).
    pub(crate) fn tex_deriv_coord(&self, fc: &FuncCode, frame: &Frame, v: Value) -> [f64; 3] {
        let (tex, _) = self.tex_of(frame, v);
        let s = Srcs {
            fc,
            regs: &frame.regs,
            tex,
        };
        match s.coords() {
            Ok((c, _)) => pad3(&c[..s.axes()]),
            Err(_) => [0.0; 3],
        }
    }

    fn texture(&self, binding: u32) -> Result<&Texture, Fault> {
        self.res
            .textures
            .get(&binding)
            .ok_or_else(|| Fault::invalid(format!("no texture bound at binding {binding}")))
    }

    /// Executes a texture instruction; `derivs` are the coordinate derivatives along x and y of
    /// an implicit-LOD operation (zero when absent).
    pub(crate) fn exec_tex(
        &mut self,
        fc: &FuncCode,
        frame: &mut Frame,
        v: Value,
        derivs: Option<[[f64; 3]; 2]>,
    ) -> Result<(), Fault> {
        let (t, def) = self.tex_of(frame, v);
        let s = Srcs {
            fc,
            regs: &frame.regs,
            tex: t,
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
        let tex = self.texture(tex_binding)?;
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
                    .zip(s.ints(TexSrc::Offset).unwrap_or_default())
                {
                    *x = x.saturating_add(o);
                }
                let level = s.int(TexSrc::Lod).unwrap_or(0);
                (sampler::fetch(tex, level, xyz, layer)?, float)
            }
            _ => {
                let sampler_state = self.res.samplers.get(&sampler_binding).ok_or_else(|| {
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
                    let layer = (layer_coord.round_ties_even() as i64)
                        .clamp(0, tex.layers.max(1) as i64 - 1);
                    (pad3(&c[..axes]), axes, dx, dy, layer)
                };
                let mut offset = [0i64; 3];
                for (o, x) in offset
                    .iter_mut()
                    .zip(s.ints(TexSrc::Offset).unwrap_or_default())
                {
                    *o = x;
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
