//! `copy-prop-vars`: loads through a `copy_deref`'s destination read its source instead.
//!
//! What: after `copy_deref dst, src`, a load of `dst` or of anything inside it (`dst[idx]`, with
//! indirect indices too) becomes a load of the same place inside `src` — the deref chain past
//! `dst` is rebuilt on `src` — as long as no write to either variable may have happened since.
//! A copy stays known to the end of its block and into a block whose only predecessor that
//! block is, so every path to the load passes the copy; a store, copy or atomic through a deref
//! of either variable, or a call, forgets it. Then a temporary that nothing reads any more —
//! only stored to and copied into — is deleted with its stores, copies and derefs.
//!
//! Why: the loads of a temporary filled by an array copy (from `find-array-copies`) read the
//! copied variable directly, and the temporary goes: the DXVK tessellation-control inputs read
//! with `gl_InvocationID` end up as indirect loads of the inputs, with no array in memory.
//!
//! Invariants: both variables are only written by this invocation's derefs (temporaries,
//! inputs, uniforms, push constants; see `vars::is_private`), distinct, and have the same type
//! (`copy_deref` requires it), so the chain past `dst` applies to `src` and reads the same
//! values. Volatile loads stay. Rewriting one load, and deleting one temporary, are one
//! transformation each.
//!
//! Options: none.

use super::Transformations;
use super::manager::{Pass, PassContext};
use super::vars::{AccessKind, DerefPath, is_private, owned_temporaries, var_accesses};
use crate::cfg::reverse_post_order;
use crate::ir::{BlockId, Function, InstKind, Shader, ValType, Value, VarId, deref_chain};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{ACCESS_VOLATILE, IndexKind, Intrinsic, MemClass};

/// The `copy-prop-vars` pass.
pub struct CopyPropVars;

impl Pass for CopyPropVars {
    fn name(&self) -> &str {
        "copy-prop-vars"
    }

    fn description(&self) -> &str {
        "loads after a copy_deref read its source; deletes temporaries nothing reads"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let propagated = context.budget.each_function(shader, propagate);
        Ok(remove_unread_temporaries(shader, context) || propagated)
    }
}

/// A `copy_deref` whose destination still holds what its source holds.
#[derive(Clone, Debug)]
struct KnownCopy {
    dst: DerefPath,
    src: DerefPath,
    /// The copy's source deref, which dominates everything the copy does.
    src_deref: Value,
}

/// Rewrites the loads of copied destinations of function `f`.
fn propagate(shader: &mut Shader, f: usize, transformations: &mut Transformations) {
    let mut leaving: FxHashMap<BlockId, Vec<KnownCopy>> = FxHashMap::default();
    for b in reverse_post_order(&shader.functions[f]) {
        let func = &shader.functions[f];
        let mut known = match func.predecessors(b).as_slice() {
            [p] if *p != b => leaving.get(p).cloned().unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut i = 0;
        while i < shader.functions[f].cfg[b].insts.len() {
            let func = &shader.functions[f];
            let v = func.cfg[b].insts[i];
            i += 1;
            let intrinsic = match &func.inst(v).kind {
                InstKind::Call { .. } => {
                    known.clear();
                    continue;
                }
                InstKind::Intrinsic(intrinsic) => intrinsic.clone(),
                _ => continue,
            };
            let root = |k: usize| deref_chain(func, intrinsic.srcs[k]).map(|(var, _)| var);
            match intrinsic.op {
                Intrinsic::LoadDeref => {
                    let volatile = intrinsic
                        .index(IndexKind::Access)
                        .is_some_and(|a| a & ACCESS_VOLATILE != 0);
                    let Some(path) = DerefPath::of(func, intrinsic.srcs[0]) else {
                        continue;
                    };
                    let Some(copy) = known.iter().find(|c| c.dst.is_prefix_of(&path)) else {
                        continue;
                    };
                    if volatile || !transformations.take(|| format!("load {v}")) {
                        continue;
                    }
                    let depth = copy.dst.steps.len();
                    let src_deref = copy.src_deref;
                    i += read_from_source(&mut shader.functions[f], v, depth, src_deref);
                }
                Intrinsic::CopyDeref => {
                    forget(&mut known, root(0));
                    let paths = (
                        DerefPath::of(func, intrinsic.srcs[0]),
                        DerefPath::of(func, intrinsic.srcs[1]),
                    );
                    if let (Some(dst), Some(src)) = paths
                        && dst.var != src.var
                        && is_private(shader.variable(dst.var).mode)
                        && is_private(shader.variable(src.var).mode)
                    {
                        known.push(KnownCopy {
                            dst,
                            src,
                            src_deref: intrinsic.srcs[1],
                        });
                    }
                }
                op if op.info().writes.contains(MemClass::VARIABLE) => forget(&mut known, root(0)),
                // Lowered intrinsics and barriers write no private variable.
                _ => {}
            }
        }
        leaving.insert(b, known);
    }
}

/// Forgets the copies a write to `var` may change (all of them when the variable is unknown).
fn forget(known: &mut Vec<KnownCopy>, var: Option<VarId>) {
    match var {
        Some(var) => known.retain(|c| c.dst.var != var && c.src.var != var),
        None => known.clear(),
    }
}

/// Makes `load` read through `src_deref` followed by the steps of its chain past the first
/// `depth` (the copy's destination); returns how many derefs it inserted before the load.
fn read_from_source(func: &mut Function, load: Value, depth: usize, src_deref: Value) -> usize {
    let InstKind::Intrinsic(i) = &func.inst(load).kind else {
        unreachable!("a load");
    };
    let (_, steps) = deref_chain(func, i.srcs[0]).expect("a path was found");
    let mut parent = src_deref;
    for &step in &steps[depth..] {
        let mut kind = func.inst(step).kind.clone();
        if let InstKind::Deref(
            crate::ir::Deref::Array { parent: p, .. } | crate::ir::Deref::Struct { parent: p, .. },
        ) = &mut kind
        {
            *p = parent;
        }
        parent = func.insert_before(load, kind, Some(ValType::DEREF));
    }
    let InstKind::Intrinsic(i) = &mut func.inst_mut(load).kind else {
        unreachable!("a load");
    };
    i.srcs[0] = parent;
    steps.len() - depth
}

/// Deletes the temporaries nothing reads (only stored to or copied into), with their stores,
/// copies and derefs; returns whether there were any.
fn remove_unread_temporaries(shader: &mut Shader, context: &mut PassContext) -> bool {
    let owned = owned_temporaries(shader);
    let mut deleted = FxHashSet::default();
    context
        .budget
        .each_function(shader, |shader, f, transformations| {
            let temps = &owned[f];
            let mut accesses: Vec<_> = var_accesses(&shader.functions[f])
                .into_iter()
                .filter(|(var, acc)| {
                    temps.contains(var)
                        && !acc.escapes
                        && acc
                            .accesses
                            .iter()
                            .all(|a| matches!(a.kind, AccessKind::Store | AccessKind::CopyDst))
                })
                .collect();
            accesses.sort_by_key(|(var, _)| *var);
            for (var, acc) in accesses {
                let name = &shader.variable(var).name;
                if !transformations.take(|| format!("unread @{name}")) {
                    return;
                }
                let func = &mut shader.functions[f];
                func.remove_insts(acc.accesses.iter().map(|a| a.inst));
                func.remove_insts(acc.derefs.iter().copied());
                deleted.insert(var);
            }
        });
    if deleted.is_empty() {
        return false;
    }
    shader.retain_variables(|var| !deleted.contains(&var));
    true
}
