//! Texture instructions: which sources each operation needs and takes, their shapes, the
//! texture and sampler they go through, and the result shape.

use super::ErrorKind;
use super::function::FuncCx;
use crate::ir::{Dim, Inst, Tex, TexOp, TexSrc, Type, ValType, Value};

/// Operations that return filtered texels (and so take a comparator when shadow sampling).
fn is_sampling(op: TexOp) -> bool {
    matches!(
        op,
        TexOp::Tex | TexOp::Txb | TexOp::Txl | TexOp::Txd | TexOp::Tg4
    )
}

/// Whether the operation takes a source of this role.
fn takes(op: TexOp, role: TexSrc, shadow: bool) -> bool {
    use TexOp::*;
    match role {
        TexSrc::Coord => !matches!(op, Txs | QueryLevels),
        TexSrc::Projector => matches!(op, Tex | Txb | Txl | Txd),
        TexSrc::Comparator => is_sampling(op) && shadow,
        TexSrc::Offset => matches!(op, Tex | Txb | Txl | Txd | Txf | Tg4),
        TexSrc::Bias => op == Txb,
        TexSrc::Lod => matches!(op, Txl | Txf | Txs),
        TexSrc::MinLod => matches!(op, Tex | Txb | Txd),
        TexSrc::Ddx | TexSrc::Ddy => op == Txd,
        TexSrc::MsIndex => op == TxfMs,
        TexSrc::TextureDeref
        | TexSrc::SamplerDeref
        | TexSrc::TextureOffset
        | TexSrc::SamplerOffset => true,
    }
}

/// The sources the operation cannot do without.
fn required(op: TexOp, shadow: bool) -> Vec<TexSrc> {
    let mut roles = Vec::new();
    if takes(op, TexSrc::Coord, shadow) {
        roles.push(TexSrc::Coord);
    }
    match op {
        TexOp::Txb => roles.push(TexSrc::Bias),
        TexOp::Txl => roles.push(TexSrc::Lod),
        TexOp::Txd => roles.extend([TexSrc::Ddx, TexSrc::Ddy]),
        TexOp::TxfMs => roles.push(TexSrc::MsIndex),
        _ => {}
    }
    if is_sampling(op) && shadow {
        roles.push(TexSrc::Comparator);
    }
    roles
}

impl FuncCx<'_> {
    pub(super) fn check_tex(&mut self, v: Value, inst: &Inst, tex: &Tex) {
        let op = tex.op.name();
        let mut seen = Vec::new();
        for &(role, _) in &tex.srcs {
            if seen.contains(&role) {
                let message = format!("has two {} sources", role.name());
                self.err_inst(ErrorKind::TexDuplicateSource, v, message);
            } else {
                seen.push(role);
            }
            if !takes(tex.op, role, tex.is_shadow) {
                let message = format!(
                    "{op}{} takes no {} source",
                    if tex.is_shadow { " shadow" } else { "" },
                    role.name()
                );
                self.err_inst(ErrorKind::TexUnexpectedSource, v, message);
            }
        }
        for role in required(tex.op, tex.is_shadow) {
            if !seen.contains(&role) {
                let message = format!("{op} needs a {} source", role.name());
                self.err_inst(ErrorKind::TexMissingSource, v, message);
            }
        }

        if tex.op == TexOp::Tg4 && tex.component > 3 {
            let message = format!("gathers component {}, expected 0-3", tex.component);
            self.err_inst(ErrorKind::TexComponent, v, message);
        }

        let coord = tex.dim.coord_components() + tex.is_array as u8;
        for &(role, src) in &tex.srcs {
            let expected = match role {
                TexSrc::TextureDeref | TexSrc::SamplerDeref => {
                    self.check_tex_deref(v, tex, role, src);
                    continue;
                }
                TexSrc::Coord => ValType::new(32, coord),
                TexSrc::Offset | TexSrc::Ddx | TexSrc::Ddy => {
                    ValType::new(32, tex.dim.coord_components())
                }
                TexSrc::Projector
                | TexSrc::Comparator
                | TexSrc::Bias
                | TexSrc::Lod
                | TexSrc::MinLod
                | TexSrc::MsIndex
                | TexSrc::TextureOffset
                | TexSrc::SamplerOffset => ValType::scalar(32),
            };
            if let Some(shape) = self.shape(src)
                && shape != expected
            {
                let message = format!(
                    "{} source {src} has shape {shape}, expected {expected}",
                    role.name()
                );
                self.err_inst(ErrorKind::TexSourceShape, v, message);
            }
        }

        let Some(def) = inst.def else {
            return;
        };
        // A cube's size is that of one face.
        let face = if tex.dim == Dim::Cube {
            2
        } else {
            tex.dim.coord_components()
        };
        let size = [face + tex.is_array as u8];
        let comps: &[u8] = match tex.op {
            TexOp::Tex | TexOp::Txb | TexOp::Txl | TexOp::Txd if tex.is_shadow => &[1, 4],
            TexOp::Tex
            | TexOp::Txb
            | TexOp::Txl
            | TexOp::Txd
            | TexOp::Txf
            | TexOp::TxfMs
            | TexOp::Tg4 => &[4],
            TexOp::Txs => &size,
            TexOp::Lod => &[2],
            TexOp::QueryLevels => &[1],
        };
        if def.bits != 32 || !comps.contains(&def.comps) {
            let expected: Vec<String> = comps
                .iter()
                .map(|&n| ValType::new(32, n).to_string())
                .collect();
            let message = format!("result has shape {def}, expected {}", expected.join(" or "));
            self.err_inst(ErrorKind::TexDefShape, v, message);
        }
    }

    /// A texture deref points to a texture of the instruction's dimension and arrayness; a
    /// sampler deref to a sampler or a combined texture.
    fn check_tex_deref(&mut self, v: Value, tex: &Tex, role: TexSrc, src: Value) {
        if !self.is_deref_or_unknown(src) {
            let message = format!("{} source {src} is not a deref", role.name());
            self.err_inst(ErrorKind::TexSourceShape, v, message);
            return;
        }
        let Some((_, ty)) = self.deref_target(src) else {
            return;
        };
        let ok = match (role, &ty) {
            (TexSrc::TextureDeref, Type::Texture { dim, arrayed, .. }) => {
                *dim == tex.dim && *arrayed == tex.is_array
            }
            (TexSrc::SamplerDeref, Type::Texture { .. } | Type::Sampler { .. }) => true,
            _ => false,
        };
        if !ok {
            let message = format!(
                "{} source {src} points to {}, which does not fit a {}{} {}",
                role.name(),
                self.shader.type_name(&ty),
                tex.dim.name(),
                if tex.is_array { " array" } else { "" },
                tex.op.name()
            );
            self.err_inst(ErrorKind::TexDerefType, v, message);
        }
    }
}
