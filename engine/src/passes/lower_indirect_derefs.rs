//! `lower-indirect-derefs`: array accesses at an index known only at run time become accesses
//! at every constant index, one of which a select picks.
//!
//! What: a `load_deref` whose deref chain indexes an array, matrix or vector of `n` elements by
//! a value that is not a constant becomes `n` loads, one per element (the rest of the chain
//! rebuilt under each), and a chain of `bcsel(index == k, element k, …)` that picks the one
//! indexed (element 0 when the index is out of bounds, which GLSL leaves undefined). A
//! `store_deref` becomes, for each element, a store of `bcsel(index == k, data, element k)`:
//! the element indexed gets the data and the others keep what they held. An access whose chain
//! has several indirect steps is lowered step by step, the first first. Loads are lowered for
//! variables private to the invocation (temporaries, inputs, uniforms, UBOs, push constants);
//! stores for temporaries.
//!
//! Why: a backend without indirect register addressing (or before it has it) cannot index its
//! registers by a run-time value; Mesa lowers the same accesses with
//! `nir_lower_indirect_derefs` for the variable modes each driver asks. Once every index is a
//! constant, `split-vars` and `vars-to-ssa` turn the array into SSA values.
//!
//! Invariants: every lowered access reads or writes the element the original did, for any
//! index in bounds. The accesses keep their order and their indices (write mask, access
//! flags). Each lowered access is one transformation.
//!
//! Options: [`MAX_ELEMENTS`], the longest array lowered (longer ones stay as they are); the
//! target's `indirect_uniform_loads` (loads of uniforms, UBOs and push constants stay) and
//! `indexed_temporaries` (array and matrix steps of temporaries whose elements fill whole
//! 16-byte slots stay, for the backend to address its registers with the index).

use super::manager::{Pass, PassContext};
use crate::interp::memory::{Layout, LayoutRule};
use crate::ir::{
    Alu, AluSrc, Deref, FpFlags, Function, InstKind, IntrinsicInst, Mode, Shader, Type, ValType,
    Value, VarId, deref_chain,
};
use crate::ops::AluOp;
use rustc_hash::FxHashSet;
use shrew_ops::Intrinsic;

/// The most elements an indirectly indexed array may have to be lowered.
pub const MAX_ELEMENTS: u32 = 32;

/// The `lower-indirect-derefs` pass.
pub struct LowerIndirectDerefs {
    /// Leave loads of uniforms, UBOs and push constants alone: the target reads them at
    /// run-time offsets ([`crate::rewrite::TargetOptions::indirect_uniform_loads`]).
    pub indirect_uniform_loads: bool,
    /// Leave the array and matrix steps of temporaries whose std430 stride is a whole number of
    /// 16-byte slots: the target indexes its registers ([`crate::rewrite::TargetOptions::indexed_temporaries`]).
    pub indexed_temporaries: bool,
}

impl Pass for LowerIndirectDerefs {
    fn name(&self) -> &str {
        "lower-indirect-derefs"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns array accesses at run-time indices into accesses at every constant index and selects"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let indexed = self.indexed_variables(shader);
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                transformations.to_fixpoint(|| {
                    let access = self.find_indirect(shader, &shader.functions[f], &indexed)?;
                    lower(&mut shader.functions[f], &access);
                    let (value, elements) = (access.access.index(), access.elements);
                    Some(move || format!("%{value}, {elements} elements"))
                });
            }))
    }
}

/// An access to lower and its first indirect step.
struct Indirect {
    /// The `load_deref` or `store_deref`.
    access: Value,
    /// The parent of the indirect step and its index.
    parent: Value,
    index: Value,
    /// The chain's steps after the indirect one, to rebuild under each element.
    below: Vec<Deref>,
    elements: u32,
}

impl LowerIndirectDerefs {
    /// The temporaries the target indexes in its registers: those stored to at a run-time
    /// index of an array or matrix step it keeps. Selecting among the elements of an array
    /// only read at run-time indices keeps its elements SSA values, which fold; a store at a
    /// run-time index would select anew every element of the array.
    fn indexed_variables(&self, shader: &Shader) -> FxHashSet<VarId> {
        let mut indexed = FxHashSet::default();
        if !self.indexed_temporaries {
            return indexed;
        }
        let layout = Layout::new(shader, LayoutRule::Std430);
        for func in &shader.functions {
            for access in func.all_insts() {
                let InstKind::Intrinsic(i) = &func.inst(access).kind else {
                    continue;
                };
                if i.op != Intrinsic::StoreDeref {
                    continue;
                }
                let Some((var, steps)) = deref_chain(func, i.srcs[0]) else {
                    continue;
                };
                if steps.iter().any(|&s| kept_step(shader, &layout, func, s)) {
                    indexed.insert(var);
                }
            }
        }
        indexed
    }

    /// The first access in `func` with an indirect step it may lower; loads of uniforms, UBOs
    /// and push constants only when the target cannot load them at run-time offsets; not the
    /// steps the target indexes in the `indexed` variables.
    fn find_indirect(
        &self,
        shader: &Shader,
        func: &Function,
        indexed: &FxHashSet<VarId>,
    ) -> Option<Indirect> {
        let layout = Layout::new(shader, LayoutRule::Std430);
        func.all_insts().find_map(|access| {
            let InstKind::Intrinsic(i) = &func.inst(access).kind else {
                return None;
            };
            let (var, steps) = deref_chain(func, *i.srcs.first()?)?;
            let mode = shader.variable(var).mode;
            let lowered = match i.op {
                Intrinsic::LoadDeref => match mode {
                    Mode::FunctionTemp | Mode::ShaderTemp | Mode::ShaderIn => true,
                    Mode::Uniform | Mode::Ubo | Mode::PushConst => !self.indirect_uniform_loads,
                    _ => false,
                },
                Intrinsic::StoreDeref => matches!(mode, Mode::FunctionTemp | Mode::ShaderTemp),
                _ => false,
            };
            if !lowered {
                return None;
            }
            // The parent type of each indirect step the pass lowers.
            let lowered_step = |s: Value| {
                let InstKind::Deref(Deref::Array { parent, index }) = func.inst(s).kind else {
                    return None;
                };
                if matches!(func.inst(index).kind, InstKind::Const(_)) {
                    return None;
                }
                if indexed.contains(&var) && kept_step(shader, &layout, func, s) {
                    return None;
                }
                Some(shader.deref_target(func, parent)?.1)
            };
            let (at, parent_type) = steps
                .iter()
                .enumerate()
                .find_map(|(at, &s)| Some((at, lowered_step(s)?)))?;
            let InstKind::Deref(Deref::Array { parent, index }) = func.inst(steps[at]).kind else {
                return None;
            };
            let elements = match parent_type {
                Type::Array { len, .. } => len,
                Type::Matrix { cols, .. } => cols as u32,
                Type::Vector(_, n) => n as u32,
                _ => return None,
            };
            if elements == 0 || elements > MAX_ELEMENTS {
                return None;
            }
            let below = steps[at + 1..]
                .iter()
                .map(|&s| match &func.inst(s).kind {
                    InstKind::Deref(d) => Some(d.clone()),
                    _ => None,
                })
                .collect::<Option<Vec<Deref>>>()?;
            Some(Indirect {
                access,
                parent,
                index,
                below,
                elements,
            })
        })
    }
}

/// Whether deref `step` indexes an array or matrix whose elements fill whole 16-byte slots
/// (std430) at a run-time index: a step a target indexing its registers keeps.
fn kept_step(shader: &Shader, layout: &Layout, func: &Function, step: Value) -> bool {
    let InstKind::Deref(Deref::Array { parent, index }) = func.inst(step).kind else {
        return false;
    };
    if matches!(func.inst(index).kind, InstKind::Const(_)) {
        return false;
    }
    shader
        .deref_target(func, parent)
        .is_some_and(|(_, parent_type)| {
            matches!(parent_type, Type::Array { .. } | Type::Matrix { .. })
                && layout
                    .array_stride(&parent_type)
                    .is_ok_and(|stride| stride % 16 == 0)
        })
}

fn lower(func: &mut Function, indirect: &Indirect) {
    let at = indirect.access;
    let first_new = func.next_value();
    let InstKind::Intrinsic(original) = func.inst(at).kind.clone() else {
        unreachable!("an access");
    };
    let alu = |op: AluOp, srcs: Vec<AluSrc>| {
        InstKind::Alu(Alu {
            op,
            srcs,
            exact: false,
            fp: FpFlags::default(),
        })
    };
    // The data's shape: what a load defines, what a store writes.
    let data = match original.op {
        Intrinsic::StoreDeref => Some(original.srcs[1]),
        _ => None,
    };
    let shape = func
        .value_type(data.unwrap_or(at))
        .expect("an access has a shape");
    let is_element = |constant: Value, func: &mut Function| {
        func.insert_before(
            at,
            alu(
                AluOp::Ieq,
                vec![AluSrc::new(indirect.index), AluSrc::new(constant)],
            ),
            Some(ValType::BOOL),
        )
    };
    let select = |cond: Value, a: Value, b: Value| {
        let cond = AluSrc::swizzled(cond, &vec![0; shape.comps as usize]);
        alu(AluOp::Bcsel, vec![cond, AluSrc::new(a), AluSrc::new(b)])
    };
    let mut picked: Option<Value> = None;
    for k in 0..indirect.elements {
        // The chain to element k.
        let constant = func.insert_before(
            at,
            InstKind::Const(vec![k as u64]),
            Some(ValType::scalar(32)),
        );
        let mut deref = func.insert_before(
            at,
            InstKind::Deref(Deref::Array {
                parent: indirect.parent,
                index: constant,
            }),
            Some(ValType::DEREF),
        );
        for step in &indirect.below {
            let step = match *step {
                Deref::Array { index, .. } => Deref::Array {
                    parent: deref,
                    index,
                },
                Deref::Struct { member, .. } => Deref::Struct {
                    parent: deref,
                    member,
                },
                Deref::Var(_) => unreachable!("a chain's steps below its variable"),
            };
            deref = func.insert_before(at, InstKind::Deref(step), Some(ValType::DEREF));
        }
        let load = match data {
            // A store's element is read back with default access.
            Some(_) => IntrinsicInst::new(Intrinsic::LoadDeref, vec![deref]),
            None => IntrinsicInst {
                srcs: vec![deref],
                ..original.clone()
            },
        };
        let element = func.insert_before(at, InstKind::Intrinsic(load), Some(shape));
        match data {
            Some(data) => {
                let cond = is_element(constant, func);
                let kept = func.insert_before(at, select(cond, data, element), Some(shape));
                let store = IntrinsicInst {
                    op: Intrinsic::StoreDeref,
                    srcs: vec![deref, kept],
                    indices: original.indices.clone(),
                };
                func.insert_before(at, InstKind::Intrinsic(store), None);
            }
            None => {
                picked = Some(match picked {
                    None => element,
                    Some(so_far) => {
                        let cond = is_element(constant, func);
                        func.insert_before(at, select(cond, element, so_far), Some(shape))
                    }
                });
            }
        }
    }
    // A load's users read the pick.
    match picked {
        Some(value) => func.replace_inst(at, value, first_new),
        None => func.remove_inst(at),
    }
}
