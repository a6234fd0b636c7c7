//! `lower-var-copies`: turns each `copy_deref` into loads and stores of the scalars and vectors
//! it copies.
//!
//! What: a copy of an array, matrix or struct (or of one vector) becomes, in its place, a
//! `load_deref` and a `store_deref` per scalar or vector leaf, reached by constant indices and
//! members from the copy's destination and source derefs (Mesa's `nir_lower_var_copies`).
//! Copies of types with opaque handles or runtime-sized arrays stay.
//!
//! Why: a whole-array copy reaches every element of both arrays at once, so `split-vars` cannot
//! split them and `vars-to-ssa` cannot promote them, and backends have no memory for
//! temporaries. Element by element, the arrays split and become SSA values. The mid-end keeps
//! copies (`find-array-copies` makes them) because `copy-prop-vars` reads through them; this
//! pass runs in the backend pipeline, after `lower-indirect-derefs`.
//!
//! Invariants: the destination holds what the copy would write; each leaf is loaded before it
//! is stored, so overlapping copies (a variable to itself) stay exact leaf by leaf. Each copy
//! lowered is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use super::vars::{copy_leaves, copyable};
use crate::ir::{Builder, Cursor, FuncId, InstKind, Shader};
use shrew_ops::Intrinsic;

/// The `lower-var-copies` pass.
pub struct LowerVarCopies;

impl Pass for LowerVarCopies {
    fn name(&self) -> &str {
        "lower-var-copies"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns copy_deref into loads and stores of each scalar and vector it copies"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context.budget.each_function(shader, |shader, f, transformations| {
            let func = &shader.functions[f];
            let copies: Vec<_> = func
                .all_insts()
                .filter(|&v| {
                    matches!(&func.inst(v).kind, InstKind::Intrinsic(i) if i.op == Intrinsic::CopyDeref)
                })
                .collect();
            transformations.each(copies, |copy| {
                let func = &shader.functions[f];
                let InstKind::Intrinsic(intr) = &func.inst(copy).kind else {
                    return None;
                };
                let (dst, src) = (intr.srcs[0], intr.srcs[1]);
                let (_, ty) = shader.deref_target(func, dst)?;
                if !copyable(shader, &ty) {
                    return None;
                }
                let block = func.inst(copy).block;
                let pos = func.cfg[block].insts.iter().position(|&v| v == copy);
                let mut b = Builder::new(shader, FuncId(f as u32));
                b.cursor = Cursor { block, pos };
                copy_leaves(&mut b, dst, src, &ty);
                shader.functions[f].remove_inst(copy);
                Some(move || format!("{copy}"))
            });
        }))
    }
}
