//! `opt-large-constants`: temporary arrays that only ever hold constants become `constant`
//! variables, read from the shader's constant data instead of being built in registers.
//!
//! What: a temporary (`function_temp`, or `shader_temp` of the entry function) of at least
//! [`MIN_BYTES`] bytes qualifies when every store to it is a `store_deref` of a `load_const` at
//! constant indices in the function's entry block, every load comes after the last store (later
//! in the entry block, or in any other block: the entry block has no predecessors), nothing
//! copies into or out of it or lets its address escape, and some load indexes it at a run-time
//! index. Its stores become the initializer of a `constant` variable (scalars no store writes
//! are zero: reading them was undefined) and the stores are deleted; the loads stay as they
//! are, now reading the constant variable, for `lower-io` to turn into `load_constant`.
//!
//! Why: GLSL's `const vec4 table[32] = ...` indexed at run time is otherwise a run-time array:
//! built with one move per scalar, then read with a select per element
//! (`lower-indirect-derefs`) or through indirect register moves. Read from the constant data
//! it costs one load message. Mesa does the same with `nir_opt_large_constants`.
//!
//! Invariants: a load reads what it read before: the stores all happen before any load, and
//! each scalar of the initializer is the value the last store to it wrote. `constant`
//! variables are never deleted or retyped afterwards (the offsets of `load_constant` refer to
//! their placement). Each variable made constant is one transformation.
//!
//! Options: [`MIN_BYTES`], the smallest temporary moved (smaller ones are cheaper in registers).

use super::manager::{Pass, PassContext};
use super::vars::{AccessKind, DerefPath, PathStep, owned_temporaries, var_accesses};
use crate::interp::memory::{Layout, LayoutRule, try_flatten_type};
use crate::ir::{Function, InstKind, Mode, Shader, Type, VarId};
use shrew_ops::IndexKind;
use shrew_ops::eval::mask;

/// The fewest bytes a temporary must have to be moved into the constant data.
pub const MIN_BYTES: u32 = 32;

/// The `opt-large-constants` pass.
pub struct OptLargeConstants;

impl Pass for OptLargeConstants {
    fn name(&self) -> &str {
        "opt-large-constants"
    }

    fn description(&self) -> &str {
        "moves temporary arrays holding only constants and read at run-time indices into the constant data"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let owned = owned_temporaries(shader);
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let mut temps: Vec<VarId> = owned[f].iter().copied().collect();
                temps.sort();
                transformations.each(temps, |var| {
                    let init = initializer(shader, &shader.functions[f], var)?;
                    let name = shader.variable(var).name.clone();
                    let func = &mut shader.functions[f];
                    let accesses = var_accesses(func).remove(&var).unwrap_or_default();
                    for access in accesses.accesses {
                        if access.kind == AccessKind::Store {
                            func.remove_inst(access.inst);
                        }
                    }
                    let variable = &mut shader.variables[var.0 as usize];
                    variable.mode = Mode::Constant;
                    variable.init = Some(init);
                    Some(move || format!("@{name}"))
                });
            }))
    }
}

/// The initializer of `var` if it qualifies (see the module documentation).
fn initializer(shader: &Shader, func: &Function, var: VarId) -> Option<Vec<u64>> {
    let ty = &shader.variable(var).ty;
    let size = Layout::new(shader, LayoutRule::Std430).info(ty).ok()?.size;
    if size < MIN_BYTES {
        return None;
    }
    let accesses = var_accesses(func).remove(&var)?;
    if accesses.escapes {
        return None;
    }
    let scalars = try_flatten_type(shader, ty).ok()?;
    let mut init = vec![0u64; scalars.len()];
    let entry = &func.cfg[func.entry].insts;
    let position = |v| entry.iter().position(|&i| i == v);
    let mut last_store = None;
    let mut indirect_load = false;
    for access in &accesses.accesses {
        let path = DerefPath::of(func, access.deref)?;
        match access.kind {
            AccessKind::Store => {
                let InstKind::Intrinsic(store) = &func.inst(access.inst).kind else {
                    return None;
                };
                let InstKind::Const(values) = &func.inst(store.srcs[1]).kind else {
                    return None;
                };
                let first = first_scalar(shader, ty, &path.steps)?;
                let write_mask = store.index(IndexKind::WriteMask).unwrap_or(0);
                for (c, &value) in values.iter().enumerate() {
                    if write_mask & (1 << c) != 0 {
                        let scalar = scalars.get(first + c)?;
                        *init.get_mut(first + c)? = mask(value, scalar.bits);
                    }
                }
                let at = position(access.inst)?;
                last_store = last_store.max(Some(at));
            }
            AccessKind::Load => {
                indirect_load |= path.steps.iter().any(|s| matches!(s, PathStep::Dynamic(_)));
            }
            AccessKind::CopyDst | AccessKind::CopySrc => return None,
        }
    }
    let loads_after_stores = accesses.accesses.iter().all(|a| {
        a.kind != AccessKind::Load || position(a.inst).is_none_or(|at| Some(at) > last_store)
    });
    (indirect_load && loads_after_stores).then_some(init)
}

/// The index, in flattening order, of the first scalar a deref path with constant indices
/// reaches in a value of type `ty`.
fn first_scalar(shader: &Shader, ty: &Type, steps: &[PathStep]) -> Option<usize> {
    let count = |t: &Type| try_flatten_type(shader, t).ok().map(|s| s.len());
    let mut ty = ty.clone();
    let mut first = 0;
    for step in steps {
        match (step, &ty) {
            (PathStep::Const(i), _) if *i < ty.element_count()? as u64 => {
                let elem = ty.element()?;
                first += *i as usize * count(&elem)?;
                ty = elem;
            }
            (PathStep::Member(m), Type::Struct(id)) => {
                let members = &shader.structs.get(id.0 as usize)?.members;
                for member in members.get(..*m as usize)? {
                    first += count(&member.ty)?;
                }
                ty = members.get(*m as usize)?.ty.clone();
            }
            _ => return None,
        }
    }
    Some(first)
}
