//! `outputs-to-temporaries`: outputs the shader reads back or indexes at run time live in a
//! temporary, copied to the output at every return of the entry function.
//!
//! What: for each `shader_out` variable with a load, a copy from it, a run-time array index,
//! an escaping deref, or stores that write a part of it twice (two stores to overlapping
//! parts: one after the other, or in the arms of a selection; a store in a loop, a store
//! outside the entry function),
//! a `shader_temp` variable of the same type (named after it) takes its place in every deref; before each `return` of the entry function, every scalar
//! and vector of the temporary (array elements, matrix columns and struct members at constant
//! indices) is loaded and stored to the output.
//!
//! Why: hardware writes outputs once, at the end (Gen's render-target write, R600's export);
//! reading an output back (`gl_FragColor.x += ...`, an `out` parameter bound to an output) or
//! indexing `gl_FragData[i]` at run time has no register to go to, and every store but the
//! last of an unrolled loop's is wasted work. As a temporary, the output is promoted to SSA
//! values by `vars-to-ssa` (after `lower-indirect-derefs` for run-time indices), and only its
//! final value is stored. Mesa does the same for every output
//! (`nir_lower_io_to_temporaries`).
//!
//! Invariants: the output holds, when the entry function returns, what it held before; an
//! invocation that ends otherwise (`discard`, `terminate`) writes no output in either form.
//! Outputs whose parts are each stored once, at constant indices, are left alone, and so are
//! outputs of more scalars and vectors than any hardware has output slots
//! (4,096: the copies back would be that many); the copies
//! the pass makes are such stores (one per return), so running the pass again changes
//! nothing. Each output moved is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use super::vars::{
    AccessKind, DerefPath, PathStep, copy_leaves, copyable, unique_name, var_accesses,
};
use crate::ir::{
    BlockId, Builder, Cursor, Deref, FuncId, Function, InstKind, Mode, Shader, Terminator, Type,
    Value, VarId, Variable,
};
use petgraph::visit::Dfs;
use std::collections::BTreeSet;

/// The `outputs-to-temporaries` pass.
pub struct OutputsToTemporaries;

impl Pass for OutputsToTemporaries {
    fn name(&self) -> &str {
        "outputs-to-temporaries"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "moves outputs read back or indexed at run time to temporaries copied out at each return"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let mut transformations = context.budget.whole_shader();
        transformations.each(outputs_needing_temporaries(shader), |output| {
            move_to_temporary(shader, output);
            let name = shader.variables[output.0 as usize].name.clone();
            Some(move || format!("@{name}"))
        });
        Ok(transformations.made_any())
    }
}

/// The outputs read, copied from, indexed at run time or escaping in some function.
fn outputs_needing_temporaries(shader: &Shader) -> BTreeSet<VarId> {
    let mut outputs = BTreeSet::new();
    for func in &shader.functions {
        for (var, accesses) in var_accesses(func) {
            if shader.variables[var.0 as usize].mode != Mode::ShaderOut {
                continue;
            }
            let read = accesses
                .accesses
                .iter()
                .any(|a| matches!(a.kind, AccessKind::Load | AccessKind::CopySrc));
            let indexed = accesses.derefs.iter().any(|&d| {
                DerefPath::of(func, d)
                    .is_some_and(|p| p.steps.iter().any(|s| matches!(s, PathStep::Dynamic(_))))
            });
            let ty = &shader.variables[var.0 as usize].ty;
            let stores: Vec<(Value, DerefPath)> = accesses
                .accesses
                .iter()
                .filter(|a| matches!(a.kind, AccessKind::Store | AccessKind::CopyDst))
                .filter_map(|a| Some((a.inst, DerefPath::of(func, a.deref)?)))
                .collect();
            let in_entry = std::ptr::eq(func, shader.entry_function());
            let rewritten = (!in_entry && !stores.is_empty()) || stored_twice(func, &stores);
            if (read || indexed || accesses.escapes || rewritten)
                && copyable(shader, ty)
                && leaves(shader, ty) <= MAX_COPIED_LEAVES
            {
                outputs.insert(var);
            }
        }
    }
    outputs
}

/// The most scalars and vectors an output moved to a temporary may hold: each is copied back at
/// every return, and no hardware has more output slots than this.
const MAX_COPIED_LEAVES: u64 = 4096;

/// How many scalars and vectors `ty` holds (saturating): what [`copy_leaves`] copies one by one.
fn leaves(shader: &Shader, ty: &Type) -> u64 {
    match ty {
        Type::Array { elem, len, .. } => u64::from(*len).saturating_mul(leaves(shader, elem)),
        Type::Struct(id) => (shader.structs[id.0 as usize].members.iter())
            .fold(0u64, |n, m| n.saturating_add(leaves(shader, &m.ty))),
        Type::Matrix { .. } => ty.element_count().map_or(1, u64::from),
        _ => 1,
    }
}

/// Whether two of `stores` write overlapping parts (one after the other, or in the arms of a
/// selection: as a temporary, the arms' values meet in a phi that `if-convert` can turn into
/// a select), or one can run twice (its block on a cycle).
fn stored_twice(func: &Function, stores: &[(Value, DerefPath)]) -> bool {
    stores.iter().enumerate().any(|(i, (a, path_a))| {
        on_cycle(func, func.inst(*a).block)
            || stores[i + 1..]
                .iter()
                .any(|(_, path_b)| path_a.is_prefix_of(path_b) || path_b.is_prefix_of(path_a))
    })
}

/// Whether `block` can reach itself.
fn on_cycle(func: &Function, block: BlockId) -> bool {
    let mut dfs = Dfs::empty(&func.cfg);
    func.successors(block).into_iter().any(|next| {
        dfs.move_to(next);
        std::iter::from_fn(|| dfs.next(&func.cfg)).any(|b| b == block)
    })
}

fn move_to_temporary(shader: &mut Shader, output: VarId) {
    let out = &shader.variables[output.0 as usize];
    let ty = out.ty.clone();
    let name = unique_name(shader, format!("{}_temp", out.name));
    let temp = shader.add_variable(Variable::new(name, Mode::ShaderTemp, ty.clone()));
    for func in &mut shader.functions {
        let derefs: Vec<Value> = func
            .all_insts()
            .filter(
                |&v| matches!(func.inst(v).kind, InstKind::Deref(Deref::Var(var)) if var == output),
            )
            .collect();
        for v in derefs {
            func.inst_mut(v).kind = InstKind::Deref(Deref::Var(temp));
        }
    }
    let entry = shader.entry;
    let func = &shader.functions[entry.0 as usize];
    let returns: Vec<_> = func
        .blocks()
        .into_iter()
        .filter(|&b| matches!(func.cfg[b].terminator, Some(Terminator::Return { .. })))
        .collect();
    for block in returns {
        let before_return = shader.functions[entry.0 as usize].cfg[block].insts.len();
        let mut b = Builder::new(shader, FuncId(entry.0));
        b.cursor = Cursor {
            block,
            pos: Some(before_return),
        };
        let (dst, src) = (b.deref_var(output), b.deref_var(temp));
        copy_leaves(&mut b, dst, src, &ty);
    }
}
