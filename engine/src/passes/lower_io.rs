//! `lower-io`: loads and stores of shader inputs, outputs, default-block uniforms, UBOs and
//! constants through derefs become `load_input`, `store_output`, `load_uniform`, `load_ubo` and
//! `load_constant` at offsets (and shared memory, SSBO and scratch accesses at byte offsets).
//!
//! What: a `load_deref` or `store_deref` of a scalar or vector whose deref chain starts at a
//! `shader_in`, `shader_out`, non-opaque `uniform`, `ubo` or `constant` variable is replaced by
//! the lowered intrinsic; `constant` loads become `load_constant` into the constant data; loads,
//! stores and atomics of `ssbo` variables become `load_ssbo`, `store_ssbo`, `ssbo_atomic` and
//! `ssbo_atomic_swap` at the buffer's binding and byte offset; those of `shared` variables
//! become `load_shared`, `store_shared`, `shared_atomic` and `shared_atomic_swap` at a byte
//! offset in the workgroup's shared memory (`base` the constant part, the source the dynamic
//! part); the temporaries still accessed through derefs (which `vars-to-ssa` could not
//! promote: arrays indexed at run time) become `load_scratch` and `store_scratch` at byte
//! offsets of the invocation's scratch memory, laid out as the interpreter places them.
//! Inputs and outputs are addressed in vec4 slots: `base` is the slot, `component` the first
//! 32-bit component in it, and the source the slots added by dynamic indices. Uniforms and
//! constants are addressed in bytes of the default uniform block or of the constant data:
//! `base` is the constant part, the source the dynamic part (indices times their strides). UBO
//! loads take the buffer's binding (plus the constant index into an array of blocks) and the
//! byte offset, and so do SSBO accesses. Offsets follow the interpreter's
//! placement ([`crate::interp::memory::layout_variables`]), so the lowered shader computes the
//! same results on it.
//!
//! Why: backends place inputs, outputs and uniforms in registers or constant buffers by offset
//! (Gen's push constants and attribute setup, R600's kcache and export slots); after this pass
//! they see offsets instead of variables.
//!
//! Invariants: only whole scalar or vector accesses are lowered; an access that offsets cannot
//! express (a dynamic index whose stride is not a whole number of slots, a 64-bit index, a
//! variable without a layout) keeps its deref. An output the shader also reads back (a load,
//! copy or atomic through its deref), or one with a store that keeps its deref, keeps every
//! access as a deref: its stores lowered, the reads (or the output's copy-out) would no longer
//! see them (`outputs-to-temporaries` makes such outputs temporaries, after which they lower).
//! The derefs left unused are for `dce`.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use crate::interp::memory::{Layout, LayoutRule, VarLayout, layout_variables};
use crate::ir::{
    Builder, Cursor, Deref, FuncId, InstKind, Interp, Mode, Shader, Type, ValType, Value, VarId,
    deref_chain,
};
use shrew_ops::{AluOp, IndexKind, Intrinsic};
use std::collections::HashSet;

pub struct LowerIo;

/// Bytes of an input or output slot.
const SLOT_BYTES: u32 = 16;

impl Pass for LowerIo {
    fn name(&self) -> &str {
        "lower-io"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns loads and stores of inputs, outputs and uniforms into load_input, store_output and load_uniform at offsets"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let Ok(placement) = layout_variables(shader) else {
            return Ok(false);
        };
        let kept = outputs_kept(shader, &placement);
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = FuncId(f as u32);
                for b in shader.functions[f].blocks() {
                    let insts = shader.functions[f].cfg[b].insts.clone();
                    transformations.each(insts, |v| {
                        let access = access_of(shader, func, v, &placement, &kept)?;
                        lower(shader, func, v, access);
                        Some(move || format!("{v}"))
                    });
                }
            }))
    }
}

/// Where a lowered access goes.
struct Access {
    mode: Mode,
    /// UBOs: the buffer's binding.
    binding: u32,
    /// The constant byte offset in the storage (input or output slots, or the uniform block).
    offset: u32,
    /// Dynamic indices and their byte strides.
    dynamic: Vec<(Value, u32)>,
}

/// The outputs whose accesses all keep their derefs: those the shader reads back, and those with
/// a store offsets cannot express. Lowering the other stores of such an output would split it
/// between slots and the variable, and `outputs-to-temporaries` would then copy the variable
/// (without the lowered stores) over the slots.
fn outputs_kept(shader: &Shader, placement: &[VarLayout]) -> HashSet<VarId> {
    let mut kept = outputs_read_back(shader);
    for (f, function) in shader.functions.iter().enumerate() {
        for v in function.all_insts() {
            if let InstKind::Intrinsic(ii) = &function.inst(v).kind
                && ii.op == Intrinsic::StoreDeref
                && let Some((var, _)) = deref_chain(function, ii.srcs[0])
                && shader.variables[var.0 as usize].mode == Mode::ShaderOut
                && shader.variables[var.0 as usize].builtin.is_none()
                && access_of(shader, FuncId(f as u32), v, placement, &kept).is_none()
            {
                kept.insert(var);
            }
        }
    }
    kept
}

/// The outputs some instruction reads through a deref: every use of an output's deref but as
/// the address of a store.
fn outputs_read_back(shader: &Shader) -> HashSet<VarId> {
    let mut read = HashSet::new();
    for function in &shader.functions {
        for b in function.blocks() {
            for &v in &function.cfg[b].insts {
                let InstKind::Intrinsic(ii) = &function.inst(v).kind else {
                    continue;
                };
                for (i, &src) in ii.srcs.iter().enumerate() {
                    if ii.op == Intrinsic::StoreDeref && i == 0 {
                        continue;
                    }
                    if let Some((var, _)) = deref_chain(function, src)
                        && shader.variables[var.0 as usize].mode == Mode::ShaderOut
                    {
                        read.insert(var);
                    }
                }
            }
        }
    }
    read
}

/// The lowered address of a load or store `v`, if it has one.
fn access_of(
    shader: &Shader,
    func: FuncId,
    v: Value,
    placement: &[VarLayout],
    kept: &HashSet<VarId>,
) -> Option<Access> {
    let function = &shader.functions[func.0 as usize];
    let InstKind::Intrinsic(ii) = &function.inst(v).kind else {
        return None;
    };
    if !matches!(
        ii.op,
        Intrinsic::LoadDeref
            | Intrinsic::StoreDeref
            | Intrinsic::DerefAtomic
            | Intrinsic::DerefAtomicSwap
    ) {
        return None;
    }
    let (var, steps) = deref_chain(function, ii.srcs[0])?;
    let variable = &shader.variables[var.0 as usize];
    let mode = variable.mode;
    let lowered = match mode {
        Mode::ShaderIn => ii.op == Intrinsic::LoadDeref,
        Mode::ShaderOut => ii.op == Intrinsic::StoreDeref,
        Mode::Uniform => ii.op == Intrinsic::LoadDeref && !variable.ty.is_opaque(),
        Mode::Ubo | Mode::Constant => ii.op == Intrinsic::LoadDeref,
        Mode::Ssbo | Mode::Shared => true,
        Mode::FunctionTemp | Mode::ShaderTemp => {
            matches!(ii.op, Intrinsic::LoadDeref | Intrinsic::StoreDeref)
        }
        _ => false,
    };
    if !lowered || variable.builtin.is_some() || kept.contains(&var) {
        return None;
    }
    let layout = Layout::new(shader, LayoutRule::for_mode(mode));
    let mut ty = variable.ty.clone();
    let mut access = Access {
        mode,
        binding: variable.buffer_binding(),
        offset: placement.get(var.0 as usize)?.offset,
        dynamic: Vec::new(),
    };
    let mut steps = steps.as_slice();
    if variable.array_of_blocks {
        // The first index picks the buffer: it must be a constant.
        let (&first, rest) = steps.split_first()?;
        let InstKind::Deref(Deref::Array { index, .. }) = &function.inst(first).kind else {
            return None;
        };
        let InstKind::Const(values) = &function.inst(*index).kind else {
            return None;
        };
        access.binding = access.binding.checked_add(u32::try_from(values[0]).ok()?)?;
        ty = variable.buffer_type().clone();
        steps = rest;
    }
    for &step in steps {
        let InstKind::Deref(deref) = &function.inst(step).kind else {
            return None;
        };
        match deref {
            Deref::Array { index, .. } => {
                let stride = layout.array_stride(&ty).ok()?;
                match &function.inst(*index).kind {
                    InstKind::Const(values) => {
                        access.offset = access
                            .offset
                            .checked_add(u32::try_from(values[0]).ok()?.checked_mul(stride)?)?;
                    }
                    _ if function.value_type(*index)?.bits == 32 => {
                        access.dynamic.push((*index, stride));
                    }
                    _ => return None,
                }
            }
            Deref::Struct { member, .. } => {
                let Type::Struct(id) = ty else { return None };
                access.offset += *layout.member_offsets(id).ok()?.get(*member as usize)?;
            }
            Deref::Var(_) => return None,
        }
        ty = shader.deref_step_type(&ty, deref)?;
    }
    ty.val_type()?;
    let slots = matches!(mode, Mode::ShaderIn | Mode::ShaderOut);
    if slots && access.dynamic.iter().any(|&(_, s)| s % SLOT_BYTES != 0) {
        return None;
    }
    Some(access)
}

/// Replaces `v` by the lowered intrinsic.
fn lower(shader: &mut Shader, func: FuncId, v: Value, access: Access) {
    let function = &shader.functions[func.0 as usize];
    let inst = function.inst(v);
    let (block, def) = (inst.block, inst.def);
    let pos = function.cfg[block].insts.iter().position(|&i| i == v);
    let InstKind::Intrinsic(ii) = inst.kind.clone() else {
        unreachable!("access_of accepts intrinsics only")
    };
    let first_new = function.next_value();
    let mut builder = Builder::new(shader, func);
    builder.cursor = Cursor { block, pos };
    // The dynamic part, in bytes for uniforms and in slots for inputs and outputs.
    let bytes = !matches!(access.mode, Mode::ShaderIn | Mode::ShaderOut);
    let unit = if bytes { 1 } else { SLOT_BYTES };
    let mut dynamic: Option<Value> = None;
    let strides: Vec<u32> = access.dynamic.iter().map(|&(_, stride)| stride).collect();
    for (index, stride) in access.dynamic {
        let scaled = if stride == unit {
            index
        } else {
            let scale = builder.imm_u32(stride / unit);
            builder.alu(AluOp::Imul, &[index, scale])
        };
        dynamic = Some(match dynamic {
            Some(sum) => builder.alu(AluOp::Iadd, &[sum, scaled]),
            None => scaled,
        });
    }
    if matches!(access.mode, Mode::Ubo | Mode::Ssbo) {
        // Buffer accesses have no base: the constant offset joins the dynamic one.
        let constant = builder.imm_u32(access.offset);
        let offset = match dynamic {
            Some(d) => builder.alu(AluOp::Iadd, &[d, constant]),
            None => constant,
        };
        let binding = builder.imm_u32(access.binding);
        let index = |kind: IndexKind| (kind, ii.index(kind).unwrap_or(0));
        let lowered = match ii.op {
            Intrinsic::LoadDeref if access.mode == Mode::Ubo => builder.intrinsic(
                Intrinsic::LoadUbo,
                &[binding, offset],
                def,
                &[(IndexKind::AlignMul, 4)],
            ),
            Intrinsic::LoadDeref => builder.intrinsic(
                Intrinsic::LoadSsbo,
                &[binding, offset],
                def,
                &[index(IndexKind::Access), (IndexKind::AlignMul, 4)],
            ),
            Intrinsic::StoreDeref => builder.intrinsic(
                Intrinsic::StoreSsbo,
                &[ii.srcs[1], binding, offset],
                None,
                &[
                    index(IndexKind::WriteMask),
                    index(IndexKind::Access),
                    (IndexKind::AlignMul, 4),
                ],
            ),
            Intrinsic::DerefAtomic => builder.intrinsic(
                Intrinsic::SsboAtomic,
                &[binding, offset, ii.srcs[1]],
                def,
                &[index(IndexKind::AtomicOp), index(IndexKind::Access)],
            ),
            _ => builder.intrinsic(
                Intrinsic::SsboAtomicSwap,
                &[binding, offset, ii.srcs[1], ii.srcs[2]],
                def,
                &[index(IndexKind::AtomicOp), index(IndexKind::Access)],
            ),
        };
        shader.functions[func.0 as usize].replace_inst(v, lowered, first_new);
        return;
    }
    let dynamic = dynamic.unwrap_or_else(|| builder.imm_u32(0));
    if matches!(access.mode, Mode::FunctionTemp | Mode::ShaderTemp) {
        let base = (IndexKind::Base, access.offset);
        let align = (IndexKind::AlignMul, scratch_alignment(&strides));
        let lowered = match ii.op {
            Intrinsic::LoadDeref => {
                builder.intrinsic(Intrinsic::LoadScratch, &[dynamic], def, &[base, align])
            }
            _ => builder.intrinsic(
                Intrinsic::StoreScratch,
                &[ii.srcs[1], dynamic],
                None,
                &[
                    base,
                    (
                        IndexKind::WriteMask,
                        ii.index(IndexKind::WriteMask).unwrap_or(0),
                    ),
                    align,
                ],
            ),
        };
        shader.functions[func.0 as usize].replace_inst(v, lowered, first_new);
        return;
    }
    if access.mode == Mode::Shared {
        let base = (IndexKind::Base, access.offset);
        let index = |kind: IndexKind| (kind, ii.index(kind).unwrap_or(0));
        let lowered = match ii.op {
            Intrinsic::LoadDeref => builder.intrinsic(
                Intrinsic::LoadShared,
                &[dynamic],
                def,
                &[base, (IndexKind::AlignMul, 4)],
            ),
            Intrinsic::StoreDeref => builder.intrinsic(
                Intrinsic::StoreShared,
                &[ii.srcs[1], dynamic],
                None,
                &[base, index(IndexKind::WriteMask), (IndexKind::AlignMul, 4)],
            ),
            Intrinsic::DerefAtomic => builder.intrinsic(
                Intrinsic::SharedAtomic,
                &[dynamic, ii.srcs[1]],
                def,
                &[base, index(IndexKind::AtomicOp)],
            ),
            _ => builder.intrinsic(
                Intrinsic::SharedAtomicSwap,
                &[dynamic, ii.srcs[1], ii.srcs[2]],
                def,
                &[base, index(IndexKind::AtomicOp)],
            ),
        };
        shader.functions[func.0 as usize].replace_inst(v, lowered, first_new);
        return;
    }
    let (base, component) = if bytes {
        (access.offset, 0)
    } else {
        (access.offset / SLOT_BYTES, access.offset % SLOT_BYTES / 4)
    };
    let lowered = match ii.op {
        Intrinsic::LoadDeref if matches!(access.mode, Mode::Uniform | Mode::Constant) => {
            let bytes = def.map_or(0, |d: ValType| {
                d.comps as u32 * d.bits.div_ceil(8).max(4) as u32
            });
            let op = if access.mode == Mode::Uniform {
                Intrinsic::LoadUniform
            } else {
                Intrinsic::LoadConstant
            };
            builder.intrinsic(
                op,
                &[dynamic],
                def,
                &[(IndexKind::Base, base), (IndexKind::Range, bytes)],
            )
        }
        Intrinsic::LoadDeref => builder.intrinsic(
            Intrinsic::LoadInput,
            &[dynamic],
            def,
            &[(IndexKind::Base, base), (IndexKind::Component, component)],
        ),
        _ => builder.intrinsic(
            Intrinsic::StoreOutput,
            &[ii.srcs[1], dynamic],
            None,
            &[
                (IndexKind::Base, base),
                (IndexKind::Component, component),
                (
                    IndexKind::WriteMask,
                    ii.index(IndexKind::WriteMask).unwrap_or(0),
                ),
            ],
        ),
    };
    shader.functions[func.0 as usize].replace_inst(v, lowered, first_new);
}

/// The `align_mul` of a scratch access whose dynamic offset is a sum of indices times
/// `strides`: the largest power of two dividing every stride, at most 16 (a vec4).
fn scratch_alignment(strides: &[u32]) -> u32 {
    strides
        .iter()
        .filter(|&&stride| stride != 0)
        .map(|&stride| stride & stride.wrapping_neg())
        .fold(16, u32::min)
}

/// The interpolation of the input variable that holds `slot` (the one at the highest location
/// not above it): its own, except that integers are always flat.
pub fn interp_of(shader: &Shader, slot: u32) -> Interp {
    let Some(var) = shader
        .variables
        .iter()
        .filter(|var| var.mode == Mode::ShaderIn && var.builtin.is_none())
        .filter(|var| var.location.is_some_and(|l| l <= slot))
        .max_by_key(|var| var.location)
    else {
        return Interp::Smooth;
    };
    let floats = crate::interp::memory::try_flatten_type(shader, &var.ty)
        .is_ok_and(|leaves| leaves.iter().all(|s| s.base == shrew_ops::BaseType::Float));
    if floats { var.interp } else { Interp::Flat }
}
