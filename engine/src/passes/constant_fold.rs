//! `constant-fold`: evaluates ALU instructions whose sources are all constants.
//!
//! What: every ALU instruction whose sources are `load_const`s (through any swizzle) becomes a
//! `load_const` of its result, computed by the opcode table's evaluation — the same code the
//! interpreter runs, so a folded value is exactly the value the instruction would have had,
//! whatever its `exact` and float-controls flags. Instructions are visited in reverse post-order
//! of the blocks, so a chain of constant operations folds in one run. Derivatives depend on the
//! neighbouring invocations and are left alone.
//!
//! Why: front ends and inlining leave constant arithmetic (matrix set-up, `const` globals,
//! specialization constants); folding it lets the algebraic rules and dead-code elimination
//! see through it.
//!
//! Invariants: the instruction keeps its value number and shape, so its users need no change;
//! the inputs it no longer reads are left for `dce`. Each fold is one transformation.
//!
//! Options: none.

use super::insts_in_reverse_post_order;
use super::manager::{Pass, PassContext};
use crate::ir::fold::fold_alu;
use crate::ir::{InstKind, Shader};

/// The `constant-fold` pass.
pub struct ConstantFold;

impl Pass for ConstantFold {
    fn name(&self) -> &str {
        "constant-fold"
    }

    fn description(&self) -> &str {
        "evaluates ALU instructions whose sources are all constants"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = &mut shader.functions[f];
                transformations.each(insts_in_reverse_post_order(func), |v| {
                    let values = fold_alu(func, v)?;
                    let op = func.inst(v).kind.name();
                    func.inst_mut(v).kind = InstKind::Const(values);
                    Some(move || format!("{op} {v}"))
                });
            }))
    }
}
