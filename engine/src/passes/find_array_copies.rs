//! `find-array-copies`: turns element-by-element array copies into one `copy_deref`.
//!
//! What: in one block, stores `dst[i] = load src[i]` for every `i` of an array of scalars or
//! vectors — constant indices, each element once, all components written, the stored value
//! the loaded one (through `mov`s that keep every component in place), `dst` and `src` arrays of
//! the same type in different variables — become one `copy_deref dst, src` where the last store
//! was. Nothing between the first of those loads and stores and the last store may read or
//! write `dst`'s variable or write `src`'s (no other access through their derefs, no call). The stores go; `dce` deletes the loads.
//!
//! Why: the copy is what `copy-prop-vars` sees through: loads of `dst[idx]` with an indirect
//! index then read `src[idx]`, and the temporary goes (Mesa's `nir_opt_find_array_copies`,
//! for the DXVK pattern `split-vars` prepares). So the copy is only made into a temporary that
//! some load reads through an indirect index: a temporary read with constant indices only is
//! better left to `vars-to-ssa`, which does not promote variables that are copied.
//!
//! Invariants: the copy writes what the stores wrote, at the last store, and reads what the
//! loads read, since nothing writes `src` in between; no read of `dst` saw the old elements in
//! between either. The source is a variable only this invocation writes (a temporary, an
//! input, a uniform, a push constant). Each copy made is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use super::vars::{
    AccessKind, DerefPath, PathStep, is_private, owned_temporaries, through_movs, var_accesses,
};
use crate::ir::{Deref, Function, InstKind, Shader, Type, Value, VarId, deref_chain};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{IndexKind, Intrinsic};

/// The `find-array-copies` pass.
pub struct FindArrayCopies;

impl Pass for FindArrayCopies {
    fn name(&self) -> &str {
        "find-array-copies"
    }

    fn description(&self) -> &str {
        "turns element-wise copies into indirectly read temporary arrays into copy_deref"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let owned = owned_temporaries(shader);
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let targets = indirectly_read(&shader.functions[f], &owned[f]);
                if targets.is_empty() {
                    return;
                }
                for b in shader.functions[f].blocks() {
                    let copies = find_copies(shader, &shader.functions[f], b, &targets);
                    transformations.each(copies, |copy| {
                        make_copy(&mut shader.functions[f], &copy);
                        let stores = copy.len();
                        Some(move || format!("{stores} stores"))
                    });
                }
            }))
    }
}

/// The temporaries among `temps` that a load reads through an indirect index.
fn indirectly_read(func: &Function, temps: &FxHashSet<VarId>) -> FxHashSet<VarId> {
    var_accesses(func)
        .into_iter()
        .filter(|(var, acc)| {
            temps.contains(var)
                && acc.accesses.iter().any(|a| {
                    a.kind == AccessKind::Load
                        && DerefPath::of(func, a.deref).is_some_and(|p| {
                            p.steps.iter().any(|s| matches!(s, PathStep::Dynamic(_)))
                        })
                })
        })
        .map(|(var, _)| var)
        .collect()
}

/// One element copy: `store dst[index] = load src[index]`.
#[derive(Clone, Debug)]
struct ElementCopy {
    store: Value,
    load: Value,
    index: u64,
    /// The arrays: the parents of the element derefs.
    dst: Value,
    src: Value,
}

/// Recognises `store dst[i], (load src[i])` with everything the pass requires of one element.
fn element_copy(
    shader: &Shader,
    func: &Function,
    store: Value,
    targets: &FxHashSet<VarId>,
) -> Option<(ElementCopy, u32, (DerefPath, DerefPath))> {
    let InstKind::Intrinsic(i) = &func.inst(store).kind else {
        return None;
    };
    if i.op != Intrinsic::StoreDeref {
        return None;
    }
    let (dst_elem, data) = (i.srcs[0], i.srcs[1]);
    let comps = func.value_type(data)?.comps;
    if i.index(IndexKind::WriteMask)? != (1 << comps) - 1 {
        return None;
    }
    let (load, components) = through_movs(func, data);
    if !components.iter().enumerate().all(|(c, &k)| k as usize == c)
        || func.value_type(load)?.comps != comps
    {
        return None;
    }
    let InstKind::Intrinsic(l) = &func.inst(load).kind else {
        return None;
    };
    if l.op != Intrinsic::LoadDeref || func.inst(load).block != func.inst(store).block {
        return None;
    }
    let (dst, dst_index) = array_element(func, dst_elem)?;
    let (src, src_index) = array_element(func, l.srcs[0])?;
    let (dst_var, dst_ty) = shader.deref_target(func, dst)?;
    let (src_var, src_ty) = shader.deref_target(func, src)?;
    let Type::Array { len, ref elem, .. } = dst_ty else {
        return None;
    };
    let usable = dst_index == src_index
        && dst_index < len as u64
        && dst_ty == src_ty
        && elem.is_vector_or_scalar()
        && dst_var != src_var
        && targets.contains(&dst_var)
        && is_private(shader.variable(src_var).mode);
    if !usable {
        return None;
    }
    let paths = (DerefPath::of(func, dst)?, DerefPath::of(func, src)?);
    let copy = ElementCopy {
        store,
        load,
        index: dst_index,
        dst,
        src,
    };
    Some((copy, len, paths))
}

/// The array and constant index of an element deref.
fn array_element(func: &Function, deref: Value) -> Option<(Value, u64)> {
    let InstKind::Deref(Deref::Array { parent, index }) = func.inst(deref).kind else {
        return None;
    };
    match &func.inst(index).kind {
        InstKind::Const(values) => Some((parent, values[0])),
        _ => None,
    }
}

/// The complete, undisturbed array copies of block `b`, each as its element copies in order.
fn find_copies(
    shader: &Shader,
    func: &Function,
    b: crate::ir::BlockId,
    targets: &FxHashSet<VarId>,
) -> Vec<Vec<ElementCopy>> {
    let insts = &func.cfg[b].insts;
    let position: FxHashMap<Value, usize> =
        insts.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    // Element copies gathered per pair of arrays, until every element is there.
    let mut open: FxHashMap<(DerefPath, DerefPath), Vec<ElementCopy>> = FxHashMap::default();
    let mut found = Vec::new();
    for &v in insts {
        let Some((copy, len, key)) = element_copy(shader, func, v, targets) else {
            continue;
        };
        let group = open.entry(key.clone()).or_default();
        if group.iter().any(|c| c.index == copy.index) {
            // An element again: start over from this store.
            group.clear();
        }
        group.push(copy);
        if group.len() == len as usize {
            let group = open.remove(&key).expect("just filled");
            if undisturbed(func, insts, &position, &group, &key) {
                found.push(group);
            }
        }
    }
    found
}

/// Whether nothing between the first load or store of `group` and its last store reads or
/// writes the destination variable or writes the source variable.
fn undisturbed(
    func: &Function,
    insts: &[Value],
    position: &FxHashMap<Value, usize>,
    group: &[ElementCopy],
    (dst, src): &(DerefPath, DerefPath),
) -> bool {
    let ours: FxHashSet<Value> = group.iter().flat_map(|c| [c.store, c.load]).collect();
    let start = ours.iter().map(|v| position[v]).min().expect("not empty");
    let end = position[&group.last().expect("not empty").store];
    insts[start..=end]
        .iter()
        .filter(|v| !ours.contains(v))
        .all(|&v| match &func.inst(v).kind {
            InstKind::Call { .. } => false,
            InstKind::Intrinsic(i) => {
                let info = i.op.info();
                let root = |k: usize| i.srcs.get(k).and_then(|&d| deref_chain(func, d));
                let touches =
                    |var: VarId| (0..i.srcs.len()).any(|k| root(k).is_some_and(|(r, _)| r == var));
                let writes_var = info.writes.contains(shrew_ops::MemClass::VARIABLE);
                let reads_var = info.reads.contains(shrew_ops::MemClass::VARIABLE);
                !((writes_var || reads_var) && touches(dst.var))
                    && !(writes_var && touches(src.var))
            }
            _ => true,
        })
}

/// Replaces the element stores by a `copy_deref` of the arrays at the last store.
fn make_copy(func: &mut Function, group: &[ElementCopy]) {
    let last = group.last().expect("not empty");
    let copy = InstKind::Intrinsic(crate::ir::IntrinsicInst::new(
        Intrinsic::CopyDeref,
        vec![last.dst, last.src],
    ));
    func.insert_before(last.store, copy, None);
    for c in group {
        func.remove_inst(c.store);
    }
}
