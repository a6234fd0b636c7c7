//! Intrinsics: shapes and indices against the intrinsic table, memory access through derefs,
//! parameters, and the stages intrinsics exist in.

use super::ErrorKind;
use super::function::FuncCx;
use crate::ir::{Inst, IntrinsicInst, Stage, Type, ValType, Value};
use shrew_ops::{AtomicOp, BaseType, DestShape, IndexKind, Intrinsic, SrcShape};

/// Whether an index value is in range: enumerations must name a value, flag sets may only hold
/// known flags. Relies on the table's formatter, which writes a plain number exactly for
/// values that have no name.
fn index_in_range(kind: IndexKind, value: u32) -> bool {
    match kind {
        IndexKind::AtomicOp
        | IndexKind::ImageDim
        | IndexKind::ExecutionScope
        | IndexKind::MemoryScope => kind.format_value(value) != value.to_string(),
        IndexKind::Access
        | IndexKind::DstAccess
        | IndexKind::SrcAccess
        | IndexKind::MemorySemantics
        | IndexKind::MemoryModes => value == 0 || kind.format_value(value) != value.to_string(),
        IndexKind::ImageArray => value <= 1,
        _ => true,
    }
}

/// The stages an intrinsic exists in, when it does not exist in all of them.
fn stages(intr: &IntrinsicInst) -> Option<&'static [Stage]> {
    use Intrinsic::*;
    use Stage::*;
    if intr.op.info().is_control() {
        return Some(&[Fragment]);
    }
    match intr.op {
        IsHelperInvocation | LoadHelperInvocation | LoadFrontFace | LoadFragCoord
        | LoadPointCoord | LoadSampleId => Some(&[Fragment]),
        LoadVertexId | LoadInstanceId | LoadBaseVertex | LoadBaseInstance | LoadDrawId => {
            Some(&[Vertex])
        }
        LoadInvocationId => Some(&[TessCtrl, Geometry]),
        LoadPrimitiveId => Some(&[TessCtrl, TessEval, Geometry, Fragment]),
        LoadLocalInvocationId
        | LoadLocalInvocationIndex
        | LoadGlobalInvocationId
        | LoadWorkgroupId
        | LoadNumWorkgroups
        | LoadWorkgroupSize
        | LoadShared
        | StoreShared
        | SharedAtomic
        | SharedAtomicSwap => Some(&[Compute]),
        // Invocations only wait for their workgroup in compute and tessellation-control
        // shaders.
        Barrier => {
            let workgroup = IndexKind::ExecutionScope.parse_value("workgroup")?;
            let scope = intr.index(IndexKind::ExecutionScope)?;
            (scope >= workgroup).then_some(&[Compute, TessCtrl][..])
        }
        _ => None,
    }
}

impl FuncCx<'_> {
    pub(super) fn check_intrinsic(&mut self, v: Value, inst: &Inst, intr: &IntrinsicInst) {
        let info = intr.op.info();
        let srcs_ok = intr.srcs.len() == info.srcs.len();
        if !srcs_ok {
            let message = format!(
                "has {} sources, expected {}",
                intr.srcs.len(),
                info.srcs.len()
            );
            self.err_inst(ErrorKind::IntrinsicSourceCount, v, message);
        }
        let indices_ok = intr.indices.len() == info.indices.len();
        if !indices_ok {
            let message = format!(
                "has {} indices, expected {}",
                intr.indices.len(),
                info.indices.len()
            );
            self.err_inst(ErrorKind::IndexCount, v, message);
        }

        if srcs_ok {
            let result = inst.def.filter(|_| info.has_dest());
            for (k, (&src, &slot)) in intr.srcs.iter().zip(info.srcs).enumerate() {
                self.check_intrinsic_src(v, result, k, src, slot);
            }
        }
        if let (DestShape::Fixed { comps, bits }, Some(def)) = (info.dest, inst.def)
            && def != ValType::new(bits, comps)
        {
            let message = format!(
                "result has shape {def}, expected {}",
                ValType::new(bits, comps)
            );
            self.err_inst(ErrorKind::IntrinsicDefShape, v, message);
        }
        if info.has_index(IndexKind::AtomicOp)
            && let Some(def) = inst.def
            && def.comps != 1
        {
            let message = format!("atomics work on scalars, but the result has shape {def}");
            self.err_inst(ErrorKind::IntrinsicDefShape, v, message);
        }

        if indices_ok {
            for (&kind, &value) in info.indices.iter().zip(&intr.indices) {
                if !index_in_range(kind, value) {
                    let message = format!("{} value {value} is out of range", kind.name());
                    self.err_inst(ErrorKind::IndexOutOfRange, v, message);
                }
            }
            if let Some(mask) = intr.index(IndexKind::WriteMask) {
                self.check_write_mask(v, intr, mask, srcs_ok);
            }
            if let Some(op) = intr.index(IndexKind::AtomicOp) {
                self.check_atomic_op(v, intr, op, srcs_ok);
            }
        }

        if srcs_ok {
            match intr.op {
                Intrinsic::LoadDeref
                | Intrinsic::StoreDeref
                | Intrinsic::DerefAtomic
                | Intrinsic::DerefAtomicSwap => self.check_deref_access(v, inst, intr),
                Intrinsic::CopyDeref => self.check_copy(v, intr),
                Intrinsic::ImageDerefLoad
                | Intrinsic::ImageDerefStore
                | Intrinsic::ImageDerefAtomic
                | Intrinsic::ImageDerefAtomicSwap
                | Intrinsic::ImageDerefSize => self.check_image(v, intr, indices_ok),
                _ => {}
            }
        }
        if intr.op == Intrinsic::LoadParam && indices_ok {
            self.check_load_param(v, inst, intr);
        }
        if let Some(allowed) = indices_ok.then(|| stages(intr)).flatten()
            && !allowed.contains(&self.shader.stage)
        {
            let names: Vec<&str> = allowed.iter().map(|s| s.name()).collect();
            let message = format!(
                "only exists in {} shaders, not {}",
                names.join(" and "),
                self.shader.stage.name()
            );
            self.err_inst(ErrorKind::StageMismatch, v, message);
        }
    }

    /// Checks source `k` against its slot; `result` is the instruction's result shape when the
    /// table gives it one.
    fn check_intrinsic_src(
        &mut self,
        v: Value,
        result: Option<ValType>,
        k: usize,
        src: Value,
        slot: SrcShape,
    ) {
        if slot == SrcShape::Deref {
            if !self.is_deref_or_unknown(src) {
                let message = format!("source {k} ({src}) is not a deref");
                self.err_inst(ErrorKind::IntrinsicSourceShape, v, message);
            }
            return;
        }
        let Some(shape) = self.shape(src) else {
            return;
        };
        let expected = match slot {
            SrcShape::Scalar32 => Some(ValType::scalar(32)),
            SrcShape::Address64 => Some(ValType::scalar(64)),
            SrcShape::Cond => Some(ValType::BOOL),
            // Operands of atomics have the result's shape; stored data is checked against the
            // memory it goes to.
            SrcShape::Data => result,
            SrcShape::Coord => {
                if shape.bits != 32 || !(1..=4).contains(&shape.comps) {
                    let message = format!(
                        "source {k} ({src}) has shape {shape}, expected 1-4 components of 32 bits"
                    );
                    self.err_inst(ErrorKind::IntrinsicSourceShape, v, message);
                }
                None
            }
            SrcShape::Deref => None,
        };
        if let Some(expected) = expected
            && shape != expected
        {
            let message = format!("source {k} ({src}) has shape {shape}, expected {expected}");
            self.err_inst(ErrorKind::IntrinsicSourceShape, v, message);
        }
    }

    /// A write mask selects components of the stored value (the first data source).
    fn check_write_mask(&mut self, v: Value, intr: &IntrinsicInst, mask: u32, srcs_ok: bool) {
        if mask == 0 {
            self.err_inst(ErrorKind::WriteMask, v, "write mask is empty".into());
            return;
        }
        let info = intr.op.info();
        let data = info
            .srcs
            .iter()
            .position(|s| *s == SrcShape::Data)
            .filter(|_| srcs_ok)
            .and_then(|i| self.shape(intr.srcs[i]));
        if let Some(data) = data
            && mask.checked_shr(data.comps as u32).unwrap_or(0) != 0
        {
            let message = format!(
                "write mask {} writes beyond the {} components of the stored value",
                IndexKind::WriteMask.format_value(mask),
                data.comps
            );
            self.err_inst(ErrorKind::WriteMask, v, message);
        }
    }

    /// `cmpxchg` exactly in the `_swap` forms, and float or integer operations on targets of
    /// their kind when the target's type is known: the scalar a deref atomic points to, or the
    /// base type of an image.
    fn check_atomic_op(&mut self, v: Value, intr: &IntrinsicInst, value: u32, srcs_ok: bool) {
        // An unknown operation is reported as an index out of range.
        let Some(op) = AtomicOp::from_index(value) else {
            return;
        };
        let op_name = IndexKind::AtomicOp.format_value(value);
        let swap = matches!(
            intr.op,
            Intrinsic::DerefAtomicSwap
                | Intrinsic::SsboAtomicSwap
                | Intrinsic::SharedAtomicSwap
                | Intrinsic::ImageDerefAtomicSwap
        );
        let name = intr.op.name();
        if swap != (op == AtomicOp::Cmpxchg) {
            let message = if swap {
                format!("{name} only does cmpxchg, not {op_name}")
            } else {
                format!("cmpxchg needs the swap form of {name}")
            };
            self.err_inst(ErrorKind::AtomicOperation, v, message);
        }
        let target = match intr.op {
            Intrinsic::DerefAtomic | Intrinsic::DerefAtomicSwap if srcs_ok => {
                match self.deref_target(intr.srcs[0]) {
                    Some((_, Type::Scalar(s))) => Some(s.base),
                    _ => None,
                }
            }
            Intrinsic::ImageDerefAtomic | Intrinsic::ImageDerefAtomicSwap if srcs_ok => {
                match self.deref_target(intr.srcs[0]) {
                    Some((_, Type::Image { base, .. })) => Some(base),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some(base) = target else {
            return;
        };
        let fits = match op {
            AtomicOp::Xchg | AtomicOp::Cmpxchg => true,
            AtomicOp::Fadd | AtomicOp::Fmin | AtomicOp::Fmax => base == BaseType::Float,
            AtomicOp::Iadd
            | AtomicOp::Imin
            | AtomicOp::Umin
            | AtomicOp::Imax
            | AtomicOp::Umax
            | AtomicOp::Iand
            | AtomicOp::Ior
            | AtomicOp::Ixor => matches!(base, BaseType::Int | BaseType::Uint),
        };
        if !fits {
            let message = format!(
                "atomic_op={op_name} does not apply to a {} target",
                base.name()
            );
            self.err_inst(ErrorKind::AtomicOperation, v, message);
        }
    }

    /// Loads, stores and atomics through a deref: the deref points to a scalar or vector whose
    /// shape is the value's, and writes go to writable variables.
    fn check_deref_access(&mut self, v: Value, inst: &Inst, intr: &IntrinsicInst) {
        let Some((var, ty)) = self.deref_target(intr.srcs[0]) else {
            return;
        };
        let name = intr.op.name();
        let Some(ty_shape) = ty.val_type() else {
            let message = format!(
                "{name} through a deref to {}, which is not a scalar or vector",
                self.shader.type_name(&ty)
            );
            self.err_inst(ErrorKind::DerefAccess, v, message);
            return;
        };
        let value = if intr.op == Intrinsic::StoreDeref {
            self.shape(intr.srcs[1])
        } else {
            inst.def
        };
        if let Some(shape) = value
            && shape != ty_shape
        {
            let message = format!(
                "accesses {shape} through a deref to {} ({ty_shape})",
                self.shader.type_name(&ty)
            );
            self.err_inst(ErrorKind::DerefAccess, v, message);
        }
        if intr.op != Intrinsic::LoadDeref {
            self.check_writable(v, var);
        }
    }

    fn check_writable(&mut self, v: Value, var: crate::ir::VarId) {
        if let Some(var) = self.shader.variables.get(var.0 as usize)
            && !var.mode.is_writable()
        {
            let message = format!(
                "writes @{}, a read-only {} variable",
                var.name,
                var.mode.name()
            );
            self.err_inst(ErrorKind::ReadOnlyStore, v, message);
        }
    }

    fn check_copy(&mut self, v: Value, intr: &IntrinsicInst) {
        let dst = self.deref_target(intr.srcs[0]);
        let src = self.deref_target(intr.srcs[1]);
        if let (Some((_, dt)), Some((_, st))) = (&dst, &src)
            && dt != st
        {
            let message = format!(
                "copies {} into {}",
                self.shader.type_name(st),
                self.shader.type_name(dt)
            );
            self.err_inst(ErrorKind::DerefAccess, v, message);
        }
        if let Some((var, _)) = dst {
            self.check_writable(v, var);
        }
    }

    /// Image intrinsics go through a deref to an image whose dimension and arrayness their
    /// indices repeat.
    fn check_image(&mut self, v: Value, intr: &IntrinsicInst, indices_ok: bool) {
        let Some((_, ty)) = self.deref_target(intr.srcs[0]) else {
            return;
        };
        let Type::Image { dim, arrayed, .. } = ty else {
            let message = format!(
                "{} of {}, which is not an image",
                intr.op.name(),
                self.shader.type_name(&ty)
            );
            self.err_inst(ErrorKind::DerefAccess, v, message);
            return;
        };
        if !indices_ok {
            return;
        }
        let dim_index = intr.index(IndexKind::ImageDim);
        let array_index = intr.index(IndexKind::ImageArray);
        if dim_index != Some(dim.index_value()) || array_index != Some(arrayed as u32) {
            let message = format!(
                "image_dim={} image_array={} but the image is {}{}",
                IndexKind::ImageDim.format_value(dim_index.unwrap_or(0)),
                array_index.unwrap_or(0),
                dim.name(),
                if arrayed { " array" } else { "" }
            );
            self.err_inst(ErrorKind::DerefAccess, v, message);
        }
    }

    fn check_load_param(&mut self, v: Value, inst: &Inst, intr: &IntrinsicInst) {
        let Some(idx) = intr.index(IndexKind::ParamIdx) else {
            return;
        };
        let params = &self.func.params;
        let message = match (params.get(idx as usize), inst.def) {
            (None, _) => format!(
                "param_idx {idx} is out of range ({} takes {} parameters)",
                self.func.name,
                params.len()
            ),
            (Some(&param), Some(def)) if def != param => {
                format!("loads {def}, but parameter {idx} is {param}")
            }
            _ => return,
        };
        self.err_inst(ErrorKind::LoadParam, v, message);
    }
}
