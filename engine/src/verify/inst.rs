//! ALU instructions, constants, derefs and calls.

use super::ErrorKind;
use super::function::FuncCx;
use super::shader::CallSite;
use crate::ir::{Alu, BlockId, Deref, FuncId, Inst, Type, ValType, Value};
use shrew_ops::{BIT_SIZES, BaseType};

impl FuncCx<'_> {
    pub(super) fn check_alu(&mut self, v: Value, inst: &Inst, alu: &Alu) {
        let info = alu.op.info();
        if alu.srcs.len() != info.srcs.len() {
            let message = format!(
                "has {} sources, expected {}",
                alu.srcs.len(),
                info.srcs.len()
            );
            self.err_inst(ErrorKind::AluSourceCount, v, message);
            return;
        }
        let Some(def) = inst.def else {
            return;
        };

        // Bit sizes: sized operands have exactly their size; unsized ones share one size, taken
        // from the result when it is unsized, else from the first unsized source.
        let mut common = None;
        if info.dst.bits == 0 {
            common = Some(def.bits);
        } else if def.bits != info.dst.bits {
            let message = format!(
                "result has bit size {}, expected {}",
                def.bits, info.dst.bits
            );
            self.err_inst(ErrorKind::AluBitSize, v, message);
        }
        for (k, (src, operand)) in alu.srcs.iter().zip(info.srcs).enumerate() {
            let Some(shape) = self.shape(src.value) else {
                continue;
            };
            let expected = if operand.bits != 0 {
                operand.bits
            } else {
                *common.get_or_insert(shape.bits)
            };
            if shape.bits != expected {
                let message = format!(
                    "source {k} has bit size {}, expected {expected}",
                    shape.bits
                );
                self.err_inst(ErrorKind::AluBitSize, v, message);
            }
        }
        // An invalid common size is already reported where it comes from.
        if let Some(bits) = common.filter(|b| BIT_SIZES.contains(b)) {
            let mut bases: Vec<BaseType> = Vec::new();
            let operands = std::iter::once(&info.dst).chain(info.srcs);
            for operand in operands.filter(|o| o.bits == 0) {
                if !operand.base.allowed_bit_sizes().contains(&bits)
                    && !bases.contains(&operand.base)
                {
                    bases.push(operand.base);
                    let message = format!(
                        "bit size {bits} is not allowed for {} operands",
                        operand.base.name()
                    );
                    self.err_inst(ErrorKind::AluBitSize, v, message);
                }
            }
        }

        // Components: a fixed-size result has its size; every source reads as many components
        // as the result has (per-component operands) or its operand's fixed count.
        if info.dst.comps != 0 && def.comps != info.dst.comps {
            let message = format!(
                "result has {} components, expected {}",
                def.comps, info.dst.comps
            );
            self.err_inst(ErrorKind::AluComponents, v, message);
        }
        for (k, (src, operand)) in alu.srcs.iter().zip(info.srcs).enumerate() {
            let Some(shape) = self.shape(src.value) else {
                continue;
            };
            let reads = if operand.comps == 0 {
                def.comps
            } else {
                operand.comps
            };
            let reads = (reads as usize).min(src.swizzle.len());
            if let Some(c) = src.swizzle[..reads].iter().find(|&&c| c >= shape.comps) {
                let message = format!(
                    "source {k} reads component {c} of {}, which has {}",
                    src.value, shape.comps
                );
                self.err_inst(ErrorKind::Swizzle, v, message);
            }
        }
    }

    pub(super) fn check_const(&mut self, v: Value, inst: &Inst, values: &[u64]) {
        let Some(def) = inst.def else {
            return;
        };
        if values.len() != def.comps as usize {
            let message = format!("has {} values for {} components", values.len(), def.comps);
            self.err_inst(ErrorKind::ConstComponents, v, message);
        }
        for (k, &x) in values.iter().enumerate() {
            if def.bits < 64 && x >> def.bits != 0 {
                let message = format!("component {k} ({x:#x}) does not fit in {} bits", def.bits);
                self.err_inst(ErrorKind::ConstRange, v, message);
            }
        }
    }

    pub(super) fn check_deref(&mut self, v: Value, inst: &Inst, deref: &Deref) {
        if let Some(def) = inst.def
            && def != ValType::DEREF
        {
            let message = format!("has shape {def}, expected {}", ValType::DEREF);
            self.err_inst(ErrorKind::DerefShape, v, message);
        }
        match *deref {
            Deref::Var(var) => {
                if self.shader.variables.get(var.0 as usize).is_none() {
                    let message = format!("variable #{} does not exist", var.0);
                    self.err_inst(ErrorKind::DerefVar, v, message);
                }
            }
            Deref::Array { parent, index } => {
                let index_shape = self.shape(index);
                if let Some(shape) = index_shape
                    && shape != ValType::scalar(32)
                {
                    let message = format!("index {index} has shape {shape}, expected 32");
                    self.err_inst(ErrorKind::DerefIndex, v, message);
                }
                let Some(ty) = self.parent_type(v, parent) else {
                    return;
                };
                // A constant index past the end is valid IR (dead code after folding may hold
                // one); the access through it faults when it runs.
                if ty.element_count().is_none() {
                    let message = format!(
                        "parent {parent} points to {}, which cannot be indexed",
                        self.shader.type_name(&ty)
                    );
                    self.err_inst(ErrorKind::DerefParent, v, message);
                }
            }
            Deref::Struct { parent, member } => {
                let Some(ty) = self.parent_type(v, parent) else {
                    return;
                };
                let Type::Struct(id) = ty else {
                    let message = format!(
                        "parent {parent} points to {}, not a struct",
                        self.shader.type_name(&ty)
                    );
                    self.err_inst(ErrorKind::DerefParent, v, message);
                    return;
                };
                // A missing struct is reported with the declarations.
                if let Some(s) = self.shader.structs.get(id.0 as usize)
                    && member as usize >= s.members.len()
                {
                    let message = format!(
                        "struct {} has no member {member} (it has {})",
                        s.name,
                        s.members.len()
                    );
                    self.err_inst(ErrorKind::DerefMember, v, message);
                }
            }
        }
    }

    /// The type a deref's parent points to; reports a parent that is not a deref. `None` when
    /// the parent is not a deref or its own chain is malformed.
    fn parent_type(&mut self, v: Value, parent: Value) -> Option<Type> {
        if !self.is_deref_or_unknown(parent) {
            let message = format!("parent {parent} is not a deref");
            self.err_inst(ErrorKind::DerefParent, v, message);
            return None;
        }
        self.deref_target(parent).map(|(_, ty)| ty)
    }

    pub(super) fn check_call(
        &mut self,
        v: Value,
        inst: &Inst,
        callee: FuncId,
        args: &[Value],
        block: BlockId,
    ) {
        let Some(target) = self.shader.functions.get(callee.0 as usize) else {
            let message = format!("calls function #{}, which does not exist", callee.0);
            self.err_inst(ErrorKind::UnknownFunction, v, message);
            return;
        };
        self.calls.push(CallSite {
            caller: self.id,
            block,
            inst: v,
            callee,
        });
        if args.len() != target.params.len() {
            let message = format!(
                "passes {} arguments to {}, which takes {}",
                args.len(),
                target.name,
                target.params.len()
            );
            self.err_inst(ErrorKind::CallArguments, v, message);
        } else {
            for (k, (&arg, &param)) in args.iter().zip(&target.params).enumerate() {
                if let Some(shape) = self.shape(arg)
                    && shape != param
                {
                    let message =
                        format!("argument {k} ({arg}) has shape {shape}, expected {param}");
                    self.err_inst(ErrorKind::CallArguments, v, message);
                }
            }
        }
        if let (Some(def), Some(ret)) = (inst.def, target.ret)
            && def != ret
        {
            let message = format!("result has shape {def}, but {} returns {ret}", target.name);
            self.err_inst(ErrorKind::CallResult, v, message);
        }
    }
}
