//! `split-vars`: splits temporaries into smaller ones and drops the components nothing reads.
//!
//! What: three rewrites of the temporaries a single function owns (`function_temp` variables,
//! and `shader_temp` ones of the entry function), after Mesa's `nir_split_vars.c`:
//! - *structure splitting*: a struct variable becomes one variable per member (`s_member`,
//!   nested structs member by member), each `deref_struct` reaching a member becomes a
//!   `deref_var` of the new variable;
//! - *array splitting*: an array dimension indexed only by constants in bounds, in every deref
//!   chain of the variable, becomes that many variables (`a_1` for element 1; `vec4 a[3][32]`
//!   with a constant second index becomes `vec4[3]` variables); elements never reached get no
//!   variable. The chains are rebuilt from the new variable with the remaining indices;
//! - *vector narrowing*: a vector variable, or array of vectors, whose loads have components
//!   nothing reads loses them: stores keep the live components (a swizzling `mov` of the data,
//!   the write mask compressed; a store of dead components only is deleted), each load becomes
//!   a narrow load rebuilt to the old width by a `vecN` with `undef` for the dead components.
//!   A variable no load reads is deleted with its stores.
//!
//! Splitting repeats until nothing changes (a split member may be an array to split), then
//! narrowing runs once.
//!
//! Why: a temporary array with some indirect indices cannot become SSA values (`vars-to-ssa`),
//! but its constant-indexed dimensions and unread components can still go, so that what stays
//! in memory is small, and `find-array-copies` and `copy-prop-vars` can see through it (the
//! DXVK tessellation-control pattern of Mesa's series: `vec4 shader_in[3][32]` filled from
//! inputs element by element and read with `gl_InvocationID`).
//!
//! Invariants: a variable is rewritten only when every use of its derefs is a deref's parent
//! or the address of a `load_deref` or `store_deref` (array splitting and struct splitting
//! also allow `copy_deref`s below the split level; narrowing none). A dimension with any
//! indirect or out-of-bounds index, or reached whole by an access, stays. Splitting or
//! narrowing one variable is one transformation.
//!
//! Options: none.

use super::Transformations;
use super::manager::{Pass, PassContext};
use super::vars::{
    AccessKind, VarAccesses, components_read, owned_temporaries, read, rewrite_as_alu, unique_name,
    var_accesses,
};
use crate::ir::{
    Deref, Function, InstKind, IntrinsicInst, Scalar, Shader, Type, ValType, Value, VarId,
    Variable, deref_chain,
};
use crate::ops::AluOp;
use crate::uses::Uses;
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{IndexKind, Intrinsic};

/// The `split-vars` pass.
pub struct SplitVars;

impl Pass for SplitVars {
    fn name(&self) -> &str {
        "split-vars"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "splits temporary structs and constant-indexed array dimensions, narrows vectors"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        // Variables are split wherever they are used, in several functions: they are
        // transformations of the shader as a whole.
        let mut transformations = context.budget.whole_shader();
        let mut progress = false;
        loop {
            let structs = split_structs(shader, &mut transformations);
            let arrays = split_arrays(shader, &mut transformations);
            if !(structs || arrays) {
                break;
            }
            progress = true;
        }
        Ok(narrow_vectors(shader, &mut transformations) || progress)
    }
}

/// The temporaries of each function that `pick` accepts, with their accesses, in id order:
/// only those whose derefs do not escape.
fn candidates(
    shader: &Shader,
    pick: impl Fn(&Variable) -> bool,
) -> Vec<(usize, Vec<(VarId, VarAccesses)>)> {
    let owned = owned_temporaries(shader);
    let mut out = Vec::new();
    for (f, temps) in owned.iter().enumerate() {
        let mut vars: Vec<VarId> = temps
            .iter()
            .copied()
            .filter(|&v| pick(shader.variable(v)))
            .collect();
        if vars.is_empty() {
            continue;
        }
        vars.sort();
        let mut accesses = var_accesses(&shader.functions[f]);
        let picked = vars
            .into_iter()
            .filter_map(|v| accesses.remove(&v).map(|a| (v, a)))
            .filter(|(_, a)| !a.escapes)
            .collect();
        out.push((f, picked));
    }
    out
}

/// Records one split or narrowed variable; `false` once the budget is spent.
fn spend(transformations: &mut Transformations, what: &str, shader: &Shader, var: VarId) -> bool {
    let name = &shader.variable(var).name;
    transformations.take(|| format!("{what} @{name}"))
}

/// The types a deref chain's steps reach, the one after the variable first.
fn step_types(shader: &Shader, func: &Function, steps: &[Value], mut ty: Type) -> Vec<Type> {
    steps
        .iter()
        .map_while(|&step| {
            let InstKind::Deref(d) = &func.inst(step).kind else {
                return None;
            };
            ty = shader.deref_step_type(&ty, d)?;
            Some(ty.clone())
        })
        .collect()
}

fn split_structs(shader: &mut Shader, transformations: &mut Transformations) -> bool {
    let mut replaced = FxHashSet::default();
    for (f, vars) in candidates(shader, |v| matches!(v.ty, Type::Struct(_))) {
        for (var, acc) in vars {
            // A copy of a whole struct (or of a nested one) would have to be split too.
            let copies_a_struct = acc.accesses.iter().any(|a| {
                shader
                    .deref_target(&shader.functions[f], a.deref)
                    .is_none_or(|(_, ty)| matches!(ty, Type::Struct(_)))
            });
            if copies_a_struct || !spend(transformations, "struct", shader, var) {
                continue;
            }
            split_struct(shader, f, var, &acc.derefs);
            replaced.insert(var);
        }
    }
    if replaced.is_empty() {
        return false;
    }
    shader.retain_variables(|v| !replaced.contains(&v));
    true
}

/// Gives each member of `var` reached by a deref a variable of its own.
fn split_struct(shader: &mut Shader, f: usize, var: VarId, derefs: &[Value]) {
    let original = shader.variable(var).clone();
    let mut members: FxHashMap<Vec<u32>, VarId> = FxHashMap::default();
    let mut dead = Vec::new();
    // The chains, their members and types as they are before any is rewritten.
    let chains: Vec<(Value, Vec<Option<u32>>, Vec<Type>)> = derefs
        .iter()
        .map(|&d| {
            let func = &shader.functions[f];
            let steps = deref_chain(func, d).expect("rooted").1;
            let members = steps
                .iter()
                .map(|&s| match func.inst(s).kind {
                    InstKind::Deref(Deref::Struct { member, .. }) => Some(member),
                    _ => None,
                })
                .collect();
            (
                d,
                members,
                step_types(shader, func, &steps, original.ty.clone()),
            )
        })
        .collect();
    for (d, steps, types) in chains {
        // The struct steps: the chain's prefix while the parent is a struct.
        let mut path = Vec::new();
        let mut name = original.name.clone();
        let mut parent = original.ty.clone();
        for (member, ty) in steps.iter().zip(&types) {
            let Type::Struct(id) = parent else { break };
            let member = member.expect("a struct is only reached into by members");
            path.push(member);
            name = format!(
                "{name}_{}",
                shader.struct_type(id).members[member as usize].name
            );
            parent = ty.clone();
        }
        if matches!(parent, Type::Struct(_)) {
            dead.push(d);
        } else if path.len() == steps.len() {
            let member = match members.get(&path) {
                Some(&m) => m,
                None => {
                    let mut v = original.clone();
                    v.name = unique_name(shader, name);
                    v.ty = parent;
                    let m = shader.add_variable(v);
                    members.insert(path, m);
                    m
                }
            };
            shader.functions[f].inst_mut(d).kind = InstKind::Deref(Deref::Var(member));
        }
    }
    for d in dead {
        shader.functions[f].remove_inst(d);
    }
}

/// The lengths of the leading array dimensions of a type, outermost first, as long as they
/// have a length and the natural stride.
fn array_dims(ty: &Type) -> Vec<u32> {
    let mut dims = Vec::new();
    let mut t = ty;
    while let Type::Array { elem, len, stride } = t {
        if *len == 0 || *stride != 0 {
            break;
        }
        dims.push(*len);
        t = elem;
    }
    dims
}

/// `ty` without the leading array dimensions `split` marks.
fn without_dims(ty: &Type, split: &[bool]) -> Type {
    match (ty, split.split_first()) {
        (Type::Array { elem, len, stride }, Some((&drop, rest))) => {
            let inner = without_dims(elem, rest);
            if drop {
                inner
            } else {
                Type::Array {
                    elem: Box::new(inner),
                    len: *len,
                    stride: *stride,
                }
            }
        }
        _ => ty.clone(),
    }
}

fn split_arrays(shader: &mut Shader, transformations: &mut Transformations) -> bool {
    let mut replaced = FxHashSet::default();
    for (f, vars) in candidates(shader, |v| !array_dims(&v.ty).is_empty()) {
        for (var, acc) in vars {
            let func = &shader.functions[f];
            let dims = array_dims(&shader.variable(var).ty);
            let Some(split) = splittable_dims(func, &dims, &acc) else {
                continue;
            };
            if !spend(transformations, "array", shader, var) {
                continue;
            }
            split_array(shader, f, var, &split, &acc.derefs);
            replaced.insert(var);
        }
    }
    if replaced.is_empty() {
        return false;
    }
    shader.retain_variables(|v| !replaced.contains(&v));
    true
}

/// An array step's index, and its value when it is a constant in bounds.
type ArrayStep = (Value, Option<u32>);

/// The array steps of a deref chain within the leading dimensions, and for each its constant
/// index when it has one in bounds.
fn array_indices(func: &Function, deref: Value, dims: &[u32]) -> Vec<ArrayStep> {
    let (_, steps) = deref_chain(func, deref).expect("rooted at the variable");
    steps
        .iter()
        .zip(dims)
        .map(|(&step, &len)| {
            let InstKind::Deref(Deref::Array { index, .. }) = func.inst(step).kind else {
                unreachable!("an array is only reached into by elements");
            };
            let constant = match &func.inst(index).kind {
                InstKind::Const(values) => u32::try_from(values[0]).ok().filter(|&i| i < len),
                _ => None,
            };
            (index, constant)
        })
        .collect()
}

/// Which leading dimensions can be split: every deref indexes them by a constant in bounds
/// and every access goes past them. `None` when none can.
fn splittable_dims(func: &Function, dims: &[u32], acc: &VarAccesses) -> Option<Vec<bool>> {
    let mut split = vec![true; dims.len()];
    for a in &acc.accesses {
        let depth = array_indices(func, a.deref, dims).len();
        split[depth..].iter_mut().for_each(|s| *s = false);
    }
    for &d in &acc.derefs {
        for (dim, (_, constant)) in array_indices(func, d, dims).iter().enumerate() {
            split[dim] &= constant.is_some();
        }
    }
    let last = split.iter().rposition(|&s| s)?;
    split.truncate(last + 1);
    Some(split)
}

/// Gives each combination of constant indices of the split dimensions a variable, and
/// rebuilds the chains that pass the last split dimension from it.
fn split_array(shader: &mut Shader, f: usize, var: VarId, split: &[bool], derefs: &[Value]) {
    let original = shader.variable(var).clone();
    let dims = array_dims(&original.ty);
    let element_type = without_dims(&original.ty, split);
    let mut elements: FxHashMap<Vec<u32>, VarId> = FxHashMap::default();
    let mut dead = Vec::new();
    // The chains as they are before any is rewritten.
    let chains: Vec<(Value, Vec<ArrayStep>, usize)> = derefs
        .iter()
        .map(|&d| {
            let func = &shader.functions[f];
            let len = deref_chain(func, d).expect("rooted").1.len();
            (d, array_indices(func, d, &dims), len)
        })
        .collect();
    for (d, indices, chain_len) in chains {
        if indices.len() < split.len() {
            // Above the last split dimension: only the rebuilt chains below it are used.
            dead.push(d);
            continue;
        }
        if chain_len != split.len() {
            // Below the last split dimension: its parent is rebuilt in place.
            continue;
        }
        let key: Vec<u32> = indices
            .iter()
            .zip(split)
            .filter(|(_, s)| **s)
            .map(|((_, c), _)| c.expect("split dimensions have constant indices"))
            .collect();
        let element = match elements.get(&key) {
            Some(&e) => e,
            None => {
                let suffix: Vec<String> = key.iter().map(u32::to_string).collect();
                let mut v = original.clone();
                v.name = unique_name(shader, format!("{}_{}", original.name, suffix.join("_")));
                v.ty = element_type.clone();
                let e = shader.add_variable(v);
                elements.insert(key, e);
                e
            }
        };
        // The new chain: the element's variable, then the indices of the dimensions kept; `d`
        // becomes its last step so that its users stay.
        let kept: Vec<Value> = indices
            .iter()
            .zip(split)
            .filter(|(_, s)| !**s)
            .map(|((index, _), _)| *index)
            .collect();
        let func = &mut shader.functions[f];
        let last = match kept.split_last() {
            None => Deref::Var(element),
            Some((&index, above)) => {
                let mut parent = func.insert_before(
                    d,
                    InstKind::Deref(Deref::Var(element)),
                    Some(ValType::DEREF),
                );
                for &index in above {
                    let step = InstKind::Deref(Deref::Array { parent, index });
                    parent = func.insert_before(d, step, Some(ValType::DEREF));
                }
                Deref::Array { parent, index }
            }
        };
        func.inst_mut(d).kind = InstKind::Deref(last);
    }
    for d in dead {
        shader.functions[f].remove_inst(d);
    }
}

/// The scalar and width of the vector at the bottom of a type's leading arrays.
fn vector_leaf(ty: &Type) -> Option<(Scalar, u8)> {
    match ty {
        Type::Array { elem, len, .. } if *len > 0 => vector_leaf(elem),
        Type::Vector(s, n) => Some((*s, *n)),
        _ => None,
    }
}

/// `ty` with the vector at the bottom of its arrays replaced by `leaf`.
fn with_leaf(ty: &Type, leaf: Type) -> Type {
    match ty {
        Type::Array { elem, len, stride } => Type::Array {
            elem: Box::new(with_leaf(elem, leaf)),
            len: *len,
            stride: *stride,
        },
        _ => leaf,
    }
}

fn narrow_vectors(shader: &mut Shader, transformations: &mut Transformations) -> bool {
    let mut deleted = FxHashSet::default();
    let mut progress = false;
    for (f, vars) in candidates(shader, |v| vector_leaf(&v.ty).is_some()) {
        let uses = Uses::build(&shader.functions[f]);
        for (var, acc) in vars {
            let func = &shader.functions[f];
            let (scalar, width) = vector_leaf(&shader.variable(var).ty).expect("picked");
            // Whole vectors loaded and stored only: a component deref or a copy reads or
            // writes components this pass does not follow.
            let whole_vectors = acc.accesses.iter().all(|a| {
                matches!(a.kind, AccessKind::Load | AccessKind::Store)
                    && shader
                        .deref_target(func, a.deref)
                        .is_some_and(|(_, ty)| ty == Type::Vector(scalar, width))
            });
            if !whole_vectors || AluOp::vec_of(width).is_none() {
                continue;
            }
            let live = acc
                .accesses
                .iter()
                .filter(|a| a.kind == AccessKind::Load)
                .fold(0, |m, a| m | components_read(func, &uses, a.inst));
            let full = (1u32 << width) - 1;
            if live == full || !spend(transformations, "vector", shader, var) {
                continue;
            }
            progress = true;
            let live: Vec<u8> = (0..width).filter(|c| live & (1 << c) != 0).collect();
            let func = &mut shader.functions[f];
            if live.is_empty() {
                // Nothing reads the variable: its loads are unused, its stores useless.
                func.remove_insts(acc.accesses.iter().map(|a| a.inst));
                func.remove_insts(acc.derefs.iter().copied());
                deleted.insert(var);
                continue;
            }
            let narrow = match live.len() {
                1 => Type::Scalar(scalar),
                n => Type::Vector(scalar, n as u8),
            };
            let shape = ValType::new(scalar.bits, live.len() as u8);
            for a in &acc.accesses {
                match a.kind {
                    AccessKind::Store => narrow_store(func, a.inst, &live, shape),
                    _ => narrow_load(func, a.inst, &live, shape, width),
                }
            }
            let ty = with_leaf(&shader.variable(var).ty, narrow);
            shader.variables[var.0 as usize].ty = ty;
        }
    }
    if !deleted.is_empty() {
        shader.retain_variables(|v| !deleted.contains(&v));
    }
    progress
}

/// Stores the live components of the data only; deletes a store of dead components only.
fn narrow_store(func: &mut Function, store: Value, live: &[u8], shape: ValType) {
    let InstKind::Intrinsic(i) = &func.inst(store).kind else {
        unreachable!("a store");
    };
    let (data, mask) = (i.srcs[1], i.index(IndexKind::WriteMask).unwrap_or(0));
    let narrow_mask = live
        .iter()
        .enumerate()
        .filter(|(_, c)| mask & (1 << **c) != 0)
        .fold(0, |m, (j, _)| m | 1 << j);
    if narrow_mask == 0 {
        func.remove_inst(store);
        return;
    }
    let kind = InstKind::Alu(crate::ir::Alu {
        op: AluOp::Mov,
        srcs: vec![read(data, live)],
        exact: false,
        fp: Default::default(),
    });
    let narrow_data = func.insert_before(store, kind, Some(shape));
    let InstKind::Intrinsic(i) = &mut func.inst_mut(store).kind else {
        unreachable!("a store");
    };
    i.srcs[1] = narrow_data;
    i.set_index(IndexKind::WriteMask, narrow_mask);
}

/// Loads the live components only and rebuilds the old width around them, in place so the
/// load's users stay; the dead components are `undef`.
fn narrow_load(func: &mut Function, load: Value, live: &[u8], shape: ValType, width: u8) {
    let InstKind::Intrinsic(i) = &func.inst(load).kind else {
        unreachable!("a load");
    };
    let narrow = InstKind::Intrinsic(IntrinsicInst {
        op: Intrinsic::LoadDeref,
        srcs: i.srcs.clone(),
        indices: i.indices.clone(),
    });
    let narrow = func.insert_before(load, narrow, Some(shape));
    let undef = (live.len() < width as usize)
        .then(|| func.insert_before(load, InstKind::Undef, Some(ValType::scalar(shape.bits))));
    let srcs = (0..width)
        .map(|c| match live.iter().position(|&l| l == c) {
            Some(j) => read(narrow, &[j as u8]),
            None => read(undef.expect("made for dead components"), &[0]),
        })
        .collect();
    let op = AluOp::vec_of(width).expect("checked");
    rewrite_as_alu(func.inst_mut(load), op, srcs);
}
