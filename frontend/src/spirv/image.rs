//! Textures (sampled images) and storage images.

use super::function::{Translator, Val, describe};
use super::module::{id, result_type};
use super::{Inst, Result, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{ImageOperands, Op};
use shrew_engine::ir::{AluSrc, Dim, Tex, TexOp, TexSrc, Type, Value};
use shrew_engine::ops::{AluOp, IndexKind, Intrinsic};

/// The optional operands of an image instruction, from its `ImageOperands` mask.
#[derive(Default)]
struct Extra {
    bias: Option<Value>,
    lod: Option<Value>,
    grad: Option<(Value, Value)>,
    offset: Option<Value>,
    sample: Option<Value>,
    min_lod: Option<Value>,
}

impl Translator<'_> {
    /// Translates an image instruction; `false` when the opcode is not one.
    pub fn image_inst(&mut self, inst: &Inst) -> Result<bool> {
        use Op::*;
        let op = inst.inst.class.opcode;
        let v = match op {
            SampledImage => {
                let texture = self.handle(id(inst, 0)?)?;
                let sampler = self.handle(id(inst, 1)?)?;
                Val::Sampled {
                    texture,
                    sampler: Some(sampler),
                }
            }
            Image => match self.val(id(inst, 0)?)? {
                Val::Sampled { texture, .. } => Val::Handle(texture),
                other => {
                    return Err(SpirvError::malformed(format!(
                        "OpImage of {}",
                        describe(&other)
                    )));
                }
            },
            ImageSampleImplicitLod
            | ImageSampleExplicitLod
            | ImageSampleDrefImplicitLod
            | ImageSampleDrefExplicitLod
            | ImageSampleProjImplicitLod
            | ImageSampleProjExplicitLod
            | ImageSampleProjDrefImplicitLod
            | ImageSampleProjDrefExplicitLod => self.sample(inst)?,
            ImageFetch => self.fetch(inst)?,
            ImageGather | ImageDrefGather => self.gather(inst)?,
            ImageQuerySizeLod | ImageQuerySize => self.query_size(inst)?,
            ImageQueryLevels => {
                let (texture, sampler) = self.sampled_or_image(id(inst, 0)?)?;
                let mut tex = self.tex_for(TexOp::QueryLevels, texture, sampler)?;
                tex.srcs.retain(|(k, _)| *k != TexSrc::SamplerDeref);
                Val::Ssa(
                    self.builder()
                        .tex(tex, shrew_engine::ir::ValType::scalar(32)),
                )
            }
            ImageQueryLod => {
                let (texture, sampler) = self.sampled_or_image(id(inst, 0)?)?;
                let mut tex = self.tex_for(TexOp::Lod, texture, sampler)?;
                // The query's coordinate has no array layer; the IR's coordinates always do,
                // and the layer does not change the level of detail.
                let axes = self.ssa(id(inst, 1)?)?;
                let axes = self.first_comps(axes, tex.dim.coord_components())?;
                let coord = if tex.is_array {
                    let mut comps: Vec<Value> = (0..tex.dim.coord_components())
                        .map(|c| self.builder().channel(axes, c))
                        .collect();
                    comps.push(self.builder().imm_f32(0.0));
                    self.builder().vec(&comps)
                } else {
                    axes
                };
                tex.srcs.push((TexSrc::Coord, coord));
                Val::Ssa(
                    self.builder()
                        .tex(tex, shrew_engine::ir::ValType::new(32, 2)),
                )
            }
            ImageRead => {
                let image = self.handle(id(inst, 0)?)?;
                let coord = self.ssa(id(inst, 1)?)?;
                let extra = self.extra(inst, 2)?;
                let vt = self.val_type(result_type(inst)?)?;
                let (dim, arrayed) = self.image_dim(image)?;
                let sample = self.or_zero(extra.sample);
                let lod = self.or_zero(extra.lod);
                Val::Ssa(self.builder().intrinsic(
                    Intrinsic::ImageDerefLoad,
                    &[image, coord, sample, lod],
                    Some(vt),
                    &[
                        (IndexKind::ImageDim, dim.index_value()),
                        (IndexKind::ImageArray, arrayed as u32),
                    ],
                ))
            }
            ImageWrite => {
                let image = self.handle(id(inst, 0)?)?;
                let coord = self.ssa(id(inst, 1)?)?;
                let data = self.ssa(id(inst, 2)?)?;
                let extra = self.extra(inst, 3)?;
                let (dim, arrayed) = self.image_dim(image)?;
                let sample = self.or_zero(extra.sample);
                let lod = self.or_zero(extra.lod);
                self.builder().intrinsic(
                    Intrinsic::ImageDerefStore,
                    &[image, coord, sample, data, lod],
                    None,
                    &[
                        (IndexKind::ImageDim, dim.index_value()),
                        (IndexKind::ImageArray, arrayed as u32),
                    ],
                );
                return Ok(true);
            }
            ImageTexelPointer => {
                let Val::Ptr(super::memory::Ptr::Deref(image)) = self.val(id(inst, 0)?)? else {
                    return Err(SpirvError::malformed("a texel pointer into a non-image"));
                };
                let coord = self.ssa(id(inst, 1)?)?;
                let sample = self.ssa(id(inst, 2)?)?;
                Val::Texel {
                    image,
                    coord,
                    sample,
                }
            }
            _ => return Ok(false),
        };
        self.set(inst, v)?;
        Ok(true)
    }

    fn or_zero(&mut self, v: Option<Value>) -> Value {
        match v {
            Some(v) => v,
            None => self.builder().imm_u32(0),
        }
    }

    /// The deref of an image or sampler operand.
    fn handle(&mut self, id: u32) -> Result<Value> {
        match self.val(id)? {
            Val::Handle(d) => Ok(d),
            Val::Sampled { texture, .. } => Ok(texture),
            other => Err(SpirvError::malformed(format!(
                "%{id} should be an image or sampler, found {}",
                describe(&other)
            ))),
        }
    }

    fn sampled_or_image(&mut self, id: u32) -> Result<(Value, Option<Value>)> {
        match self.val(id)? {
            Val::Sampled { texture, sampler } => Ok((texture, sampler)),
            Val::Handle(d) => Ok((d, None)),
            other => Err(SpirvError::malformed(format!(
                "%{id} should be an image, found {}",
                describe(&other)
            ))),
        }
    }

    /// A texture instruction on a texture (and sampler) with no other sources yet.
    fn tex_for(&mut self, op: TexOp, texture: Value, sampler: Option<Value>) -> Result<Tex> {
        let Some((_, ty)) = self.shader.deref_target(self.func(), texture) else {
            return Err(SpirvError::malformed(
                "a texture operand that is not a variable",
            ));
        };
        let Type::Texture {
            dim,
            arrayed,
            shadow,
            base,
        } = ty
        else {
            return Err(SpirvError::unsupported(format!(
                "sampling a {}",
                self.shader.type_name(&ty)
            )));
        };
        let mut tex = Tex::new(op, dim, vec![(TexSrc::TextureDeref, texture)]);
        tex.is_array = arrayed;
        tex.is_shadow = shadow;
        tex.dest_type = base;
        if let Some(s) = sampler {
            tex.srcs.push((TexSrc::SamplerDeref, s));
        }
        Ok(tex)
    }

    /// The first `n` components of a coordinate as 32-bit values.
    fn first_comps(&mut self, v: Value, n: u8) -> Result<Value> {
        let have = self.builder().value_type(v).comps;
        if have < n {
            return Err(SpirvError::malformed(format!(
                "a coordinate of {have} components where {n} are needed"
            )));
        }
        if have == n {
            return Ok(v);
        }
        let swz: Vec<u8> = (0..n).collect();
        Ok(self
            .builder()
            .alu_swizzled(AluOp::Mov, vec![AluSrc::swizzled(v, &swz)], n))
    }

    fn coord(&mut self, id: u32, tex: &Tex) -> Result<Value> {
        let v = self.ssa(id)?;
        let n = tex.dim.coord_components() + tex.is_array as u8;
        self.first_comps(v, n)
    }

    /// Reads the image operands starting at operand `at`.
    fn extra(&mut self, inst: &Inst, at: usize) -> Result<Extra> {
        let mut e = Extra::default();
        let Some(Operand::ImageOperands(mask)) = inst.inst.operands.get(at) else {
            return Ok(e);
        };
        let mask = *mask;
        if mask.contains(ImageOperands::BIAS)
            && mask.intersects(ImageOperands::LOD | ImageOperands::GRAD)
        {
            // Bias applies to an implicit level of detail only.
            return Err(SpirvError::malformed(
                "the Bias image operand with an explicit Lod or Grad",
            ));
        }
        let mut i = at + 1;
        let mut next = |translator: &mut Self| -> Result<Value> {
            let v = translator.ssa(id(inst, i)?)?;
            i += 1;
            Ok(v)
        };
        if mask.contains(ImageOperands::BIAS) {
            e.bias = Some(next(self)?);
        }
        if mask.contains(ImageOperands::LOD) {
            e.lod = Some(next(self)?);
        }
        if mask.contains(ImageOperands::GRAD) {
            let dx = next(self)?;
            let dy = next(self)?;
            e.grad = Some((dx, dy));
        }
        if mask.contains(ImageOperands::CONST_OFFSET) {
            e.offset = Some(next(self)?);
        }
        if mask.contains(ImageOperands::OFFSET) {
            e.offset = Some(next(self)?);
        }
        if mask.contains(ImageOperands::CONST_OFFSETS) {
            return Err(SpirvError::unsupported(
                "textureGatherOffsets (ConstOffsets)",
            ));
        }
        if mask.contains(ImageOperands::SAMPLE) {
            e.sample = Some(next(self)?);
        }
        if mask.contains(ImageOperands::MIN_LOD) {
            e.min_lod = Some(next(self)?);
        }
        Ok(e)
    }

    fn sample(&mut self, inst: &Inst) -> Result<Val> {
        use Op::*;
        let op = inst.inst.class.opcode;
        let proj = matches!(
            op,
            ImageSampleProjImplicitLod
                | ImageSampleProjExplicitLod
                | ImageSampleProjDrefImplicitLod
                | ImageSampleProjDrefExplicitLod
        );
        let dref = matches!(
            op,
            ImageSampleDrefImplicitLod
                | ImageSampleDrefExplicitLod
                | ImageSampleProjDrefImplicitLod
                | ImageSampleProjDrefExplicitLod
        );
        let (texture, sampler) = self.sampled_or_image(id(inst, 0)?)?;
        let raw = self.ssa(id(inst, 1)?)?;
        let mut at = 2;
        let comparator = if dref {
            at = 3;
            Some(self.ssa(id(inst, 2)?)?)
        } else {
            None
        };
        let extra = self.extra(inst, at)?;
        let op = if extra.grad.is_some() {
            TexOp::Txd
        } else if extra.lod.is_some() {
            TexOp::Txl
        } else if extra.bias.is_some() {
            TexOp::Txb
        } else {
            TexOp::Tex
        };
        let mut tex = self.tex_for(op, texture, sampler)?;
        let n = tex.dim.coord_components() + tex.is_array as u8;
        let coord = self.first_comps(raw, n)?;
        tex.srcs.push((TexSrc::Coord, coord));
        if proj {
            let q = self.builder().channel(raw, n);
            tex.srcs.push((TexSrc::Projector, q));
        }
        if let Some(c) = comparator {
            tex.srcs.push((TexSrc::Comparator, c));
            if !tex.is_shadow {
                return Err(SpirvError::malformed(
                    "a depth comparison on a non-depth image",
                ));
            }
        }
        self.push_extra(&mut tex, &extra);
        let comps = if tex.is_shadow && dref { 1 } else { 4 };
        let v = self
            .builder()
            .tex(tex, shrew_engine::ir::ValType::new(32, comps));
        Ok(Val::Ssa(v))
    }

    fn push_extra(&mut self, tex: &mut Tex, e: &Extra) {
        if let Some(b) = e.bias {
            tex.srcs.push((TexSrc::Bias, b));
        }
        if let Some(l) = e.lod {
            tex.srcs.push((TexSrc::Lod, l));
        }
        if let Some((dx, dy)) = e.grad {
            tex.srcs.push((TexSrc::Ddx, dx));
            tex.srcs.push((TexSrc::Ddy, dy));
        }
        if let Some(o) = e.offset {
            tex.srcs.push((TexSrc::Offset, o));
        }
        if let Some(m) = e.min_lod {
            tex.srcs.push((TexSrc::MinLod, m));
        }
    }

    fn fetch(&mut self, inst: &Inst) -> Result<Val> {
        let (texture, _) = self.sampled_or_image(id(inst, 0)?)?;
        let extra = self.extra(inst, 2)?;
        let op = if extra.sample.is_some() {
            TexOp::TxfMs
        } else {
            TexOp::Txf
        };
        let mut tex = self.tex_for(op, texture, None)?;
        let coord = self.coord(id(inst, 1)?, &tex)?;
        tex.srcs.push((TexSrc::Coord, coord));
        if let Some(s) = extra.sample {
            tex.srcs.push((TexSrc::MsIndex, s));
        } else {
            let lod = self.or_zero(extra.lod);
            tex.srcs.push((TexSrc::Lod, lod));
        }
        if let Some(o) = extra.offset {
            tex.srcs.push((TexSrc::Offset, o));
        }
        Ok(Val::Ssa(
            self.builder()
                .tex(tex, shrew_engine::ir::ValType::new(32, 4)),
        ))
    }

    fn gather(&mut self, inst: &Inst) -> Result<Val> {
        let (texture, sampler) = self.sampled_or_image(id(inst, 0)?)?;
        let mut tex = self.tex_for(TexOp::Tg4, texture, sampler)?;
        let coord = self.coord(id(inst, 1)?, &tex)?;
        tex.srcs.push((TexSrc::Coord, coord));
        let other = id(inst, 2)?;
        if inst.inst.class.opcode == Op::ImageDrefGather {
            let c = self.ssa(other)?;
            tex.srcs.push((TexSrc::Comparator, c));
        } else {
            tex.component = self.const_u32(other)? as u8;
        }
        let extra = self.extra(inst, 3)?;
        if let Some(o) = extra.offset {
            tex.srcs.push((TexSrc::Offset, o));
        }
        Ok(Val::Ssa(
            self.builder()
                .tex(tex, shrew_engine::ir::ValType::new(32, 4)),
        ))
    }

    fn query_size(&mut self, inst: &Inst) -> Result<Val> {
        let vt = self.val_type(result_type(inst)?)?;
        let lod = if inst.inst.class.opcode == Op::ImageQuerySizeLod {
            let l = self.ssa(id(inst, 1)?)?;
            Some(l)
        } else {
            None
        };
        let (image, sampler) = self.sampled_or_image(id(inst, 0)?)?;
        let ty = self.shader.deref_target(self.func(), image).map(|(_, t)| t);
        if let Some(Type::Image { dim, arrayed, .. }) = ty {
            let lod = self.or_zero(lod);
            let v = self.builder().intrinsic(
                Intrinsic::ImageDerefSize,
                &[image, lod],
                Some(vt),
                &[
                    (IndexKind::ImageDim, dim.index_value()),
                    (IndexKind::ImageArray, arrayed as u32),
                ],
            );
            return Ok(Val::Ssa(v));
        }
        let mut tex = self.tex_for(TexOp::Txs, image, sampler)?;
        tex.srcs.retain(|(k, _)| *k != TexSrc::SamplerDeref);
        if let Some(l) = lod {
            tex.srcs.push((TexSrc::Lod, l));
        }
        if tex.dim == Dim::Ms && lod.is_some() {
            return Err(SpirvError::malformed(
                "a size query with a LOD on a multisampled image",
            ));
        }
        Ok(Val::Ssa(self.builder().tex(tex, vt)))
    }
}
