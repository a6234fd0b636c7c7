//! Helpers the variable passes share (`vars-to-ssa`, `split-vars`, `find-array-copies`,
//! `copy-prop-vars`, `outputs-to-temporaries`, `lower-var-copies`): which temporaries a function
//! owns, how each variable's derefs are used, deref chains compared by shape, which components
//! of a value are read, and copies of a variable's parts leaf by leaf.

use crate::ir::{
    Alu, AluSrc, Builder, Deref, FpFlags, Function, Inst, InstKind, Mode, Shader, Type, Value,
    VarId, deref_chain,
};
use crate::ops::AluOp;
use crate::uses::{User, Uses};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{IndexKind, Intrinsic};

/// For each function, the temporaries no other function reaches: its `function_temp`
/// variables and, for the entry function, `shader_temp` ones. Only these can be rewritten by
/// looking at one function. None once `lower-io` has placed temporaries in scratch memory:
/// the scratch accesses' offsets follow the variables' layout, which deleting, splitting or
/// narrowing any temporary would move.
pub fn owned_temporaries(shader: &Shader) -> Vec<FxHashSet<VarId>> {
    let mut owned = vec![FxHashSet::default(); shader.functions.len()];
    if uses_scratch(shader) {
        return owned;
    }
    let mut owners: FxHashMap<VarId, Option<usize>> = FxHashMap::default();
    for (f, func) in shader.functions.iter().enumerate() {
        for inst in func.insts.iter().flatten() {
            if let InstKind::Deref(Deref::Var(var)) = inst.kind {
                let owner = owners.entry(var).or_insert(Some(f));
                if *owner != Some(f) {
                    *owner = None;
                }
            }
        }
    }
    for (var, owner) in owners {
        let Some(f) = owner else { continue };
        let is_temporary = match shader.variable(var).mode {
            Mode::FunctionTemp => true,
            Mode::ShaderTemp => f == shader.entry.0 as usize,
            _ => false,
        };
        if is_temporary {
            owned[f].insert(var);
        }
    }
    owned
}

/// Whether any instruction reads or writes scratch memory (temporaries `lower-io` placed).
fn uses_scratch(shader: &Shader) -> bool {
    shader.functions.iter().any(|func| {
        func.insts.iter().flatten().any(|inst| {
            matches!(&inst.kind, InstKind::Intrinsic(i)
                if matches!(i.op, Intrinsic::LoadScratch | Intrinsic::StoreScratch))
        })
    })
}

/// Whether only this invocation's own accesses through derefs change variables of this mode:
/// no other invocation (as with shared memory, buffers and tessellation-control outputs) and no
/// lowered intrinsic writes them.
pub fn is_private(mode: Mode) -> bool {
    matches!(
        mode,
        Mode::FunctionTemp
            | Mode::ShaderTemp
            | Mode::ShaderIn
            | Mode::Uniform
            | Mode::PushConst
            | Mode::Constant
    )
}

/// How an instruction uses a deref of a variable.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Load,
    Store,
    CopyDst,
    CopySrc,
}

/// A load, store or copy through a deref of a variable.
#[derive(Copy, Clone, Debug)]
pub struct Access {
    pub inst: Value,
    pub deref: Value,
    pub kind: AccessKind,
}

/// The derefs of one variable in one function and what reads them.
#[derive(Clone, Debug, Default)]
pub struct VarAccesses {
    /// Every deref rooted at the variable, in block order.
    pub derefs: Vec<Value>,
    pub accesses: Vec<Access>,
    /// A deref is used other than as a deref's parent or a load's, store's or copy's address
    /// (a call argument, a phi, an atomic...): the variable's memory is visible elsewhere.
    pub escapes: bool,
}

/// The derefs and accesses of every variable `func` reaches.
pub fn var_accesses(func: &Function) -> FxHashMap<VarId, VarAccesses> {
    let mut vars: FxHashMap<VarId, VarAccesses> = FxHashMap::default();
    let root_of = |v: Value| match func.get_inst(v).map(|i| &i.kind) {
        Some(InstKind::Deref(_)) => deref_chain(func, v).map(|(var, _)| var),
        _ => None,
    };
    for b in func.blocks() {
        for &v in &func.cfg[b].insts {
            let kind = &func.inst(v).kind;
            if let InstKind::Deref(_) = kind {
                match root_of(v) {
                    Some(var) => vars.entry(var).or_default().derefs.push(v),
                    // A chain that reaches no variable: nothing can be said about its users.
                    None => continue,
                }
            }
            let access_kinds: &[AccessKind] = match kind {
                InstKind::Intrinsic(i) => match i.op {
                    Intrinsic::LoadDeref => &[AccessKind::Load],
                    Intrinsic::StoreDeref => &[AccessKind::Store],
                    Intrinsic::CopyDeref => &[AccessKind::CopyDst, AccessKind::CopySrc],
                    _ => &[],
                },
                _ => &[],
            };
            let is_child_deref = matches!(
                kind,
                InstKind::Deref(Deref::Array { .. } | Deref::Struct { .. })
            );
            for (slot, src) in crate::ir::inst_sources(kind).into_iter().enumerate() {
                let Some(var) = root_of(src) else { continue };
                let entry = vars.entry(var).or_default();
                if is_child_deref && slot == 0 {
                    continue;
                }
                match access_kinds.get(slot) {
                    Some(&kind) => entry.accesses.push(Access {
                        inst: v,
                        deref: src,
                        kind,
                    }),
                    None => entry.escapes = true,
                }
            }
        }
        if let Some(src) = func.cfg[b].terminator.as_ref().and_then(|t| t.src())
            && let Some(var) = root_of(src)
        {
            vars.entry(var).or_default().escapes = true;
        }
    }
    vars
}

/// One step of a deref chain, compared by what it selects.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathStep {
    Member(u32),
    /// An element by a constant index.
    Const(u64),
    /// An element by a computed index: the same value selects the same element.
    Dynamic(Value),
}

/// A deref chain as the variable and the steps from it: two derefs with equal paths point to
/// the same storage, whichever instructions built them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DerefPath {
    pub var: VarId,
    pub steps: Vec<PathStep>,
}

impl DerefPath {
    pub fn of(func: &Function, deref: Value) -> Option<DerefPath> {
        let (var, chain) = deref_chain(func, deref)?;
        let steps = chain
            .iter()
            .map(|&step| match &func.inst(step).kind {
                InstKind::Deref(Deref::Struct { member, .. }) => PathStep::Member(*member),
                InstKind::Deref(Deref::Array { index, .. }) => match &func.inst(*index).kind {
                    InstKind::Const(values) => PathStep::Const(values[0]),
                    _ => PathStep::Dynamic(*index),
                },
                _ => unreachable!("deref_chain returns array and struct steps"),
            })
            .collect();
        Some(DerefPath { var, steps })
    }

    /// Whether `self` leads to `other` or into it.
    pub fn is_prefix_of(&self, other: &DerefPath) -> bool {
        self.var == other.var && other.steps.starts_with(&self.steps)
    }
}

/// The mask of the components of `v` anything reads: ALU sources through their swizzles,
/// `store_deref` data through its write mask, everything else (terminators included) all of
/// them. Users deleted since `uses` was built read nothing; users added since are not seen
/// (callers only add readers of fewer components than the ones they replace).
pub fn components_read(func: &Function, uses: &Uses, v: Value) -> u32 {
    let comps = func.value_type(v).map_or(16, |t| t.comps);
    let all = (1u32 << comps) - 1;
    let mut read = 0;
    for &user in uses.users(v) {
        let User::Inst(user) = user else {
            return all;
        };
        let Some(inst) = func.get_inst(user) else {
            continue;
        };
        match &inst.kind {
            InstKind::Alu(alu) => {
                let def = inst.def.expect("ALU instructions define a value");
                for (i, src) in alu.srcs.iter().enumerate() {
                    if src.value == v {
                        let n = alu.src_components(i, def) as usize;
                        read |= src.swizzle[..n].iter().fold(0, |m, &c| m | 1 << c);
                    }
                }
            }
            InstKind::Intrinsic(i) if i.op == Intrinsic::StoreDeref && i.srcs[0] != v => {
                read |= i.index(IndexKind::WriteMask).unwrap_or(all);
            }
            _ => return all,
        }
    }
    read & all
}

/// Follows `mov`s back from `v`: the value they copy and, for each component of `v`, the
/// component of that value it is.
pub fn through_movs(func: &Function, v: Value) -> (Value, Vec<u8>) {
    let comps = func.value_type(v).map_or(1, |t| t.comps);
    let mut value = v;
    let mut components: Vec<u8> = (0..comps).collect();
    // Bounded: malformed IR could hold a cycle of movs.
    for _ in 0..func.insts.len() {
        match &func.inst(value).kind {
            InstKind::Alu(alu) if alu.op == AluOp::Mov => {
                components = components
                    .iter()
                    .map(|&c| alu.srcs[0].swizzle[c as usize])
                    .collect();
                value = alu.srcs[0].value;
            }
            _ => break,
        }
    }
    (value, components)
}

/// A fresh variable name built from `base`: IR text names are identifiers, so dots and
/// brackets cannot be used; a number is appended while the name is taken.
pub fn unique_name(shader: &Shader, base: String) -> String {
    if shader.find_variable(&base).is_none() {
        return base;
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|name| shader.find_variable(name).is_none())
        .expect("some suffix is free")
}

/// Turns a load or store into an ALU instruction in place, so its id (and position) stay.
pub fn rewrite_as_alu(inst: &mut Inst, op: AluOp, srcs: Vec<AluSrc>) {
    inst.kind = InstKind::Alu(Alu {
        op,
        srcs,
        exact: false,
        fp: FpFlags::default(),
    });
}

/// A source reading `value` through `components` (all of it in order when empty).
pub fn read(value: Value, components: &[u8]) -> AluSrc {
    if components.is_empty() {
        AluSrc::new(value)
    } else {
        AluSrc::swizzled(value, components)
    }
}

/// Whether `ty` is made of numbers only (no opaque handles, no runtime-sized arrays): what
/// [`copy_leaves`] can copy.
pub fn copyable(shader: &Shader, ty: &Type) -> bool {
    match ty {
        Type::Scalar(_) | Type::Vector(..) | Type::Matrix { .. } => true,
        Type::Array { elem, len, .. } => *len > 0 && copyable(shader, elem),
        Type::Struct(id) => shader.structs[id.0 as usize]
            .members
            .iter()
            .all(|m| copyable(shader, &m.ty)),
        _ => false,
    }
}

/// Copies every scalar and vector of `ty` from `src` to `dst`, one load and store each.
pub fn copy_leaves(b: &mut Builder, dst: Value, src: Value, ty: &Type) {
    if ty.is_vector_or_scalar() {
        let value = b.load_deref(src);
        b.store_deref_all(dst, value);
    } else if let Type::Struct(id) = ty {
        let members: Vec<Type> = b.shader.structs[id.0 as usize]
            .members
            .iter()
            .map(|m| m.ty.clone())
            .collect();
        for (m, member_ty) in members.iter().enumerate() {
            let (dst_member, src_member) =
                (b.deref_struct(dst, m as u32), b.deref_struct(src, m as u32));
            copy_leaves(b, dst_member, src_member, member_ty);
        }
    } else {
        let elem = ty.element().expect("an array or matrix");
        for i in 0..ty.element_count().expect("an array or matrix") {
            let index = b.imm_u32(i);
            let (dst_elem, src_elem) = (b.deref_array(dst, index), b.deref_array(src, index));
            copy_leaves(b, dst_elem, src_elem, &elem);
        }
    }
}
