//! `phi-simplify`: removes phis that choose nothing.
//!
//! What: a phi whose sources are all one value `%a`, or `%a` and the phi itself (a loop-carried
//! value the loop never changes), is `%a`: its users read `%a` and the phi goes. Removing one
//! phi can make another trivial (a loop phi that fed a merge phi), so the pass repeats until
//! none is left.
//!
//! Why: front ends place phis for every variable at every join, and passes that merge values
//! (cse, copy-prop) make their sources equal.
//!
//! Invariants: `%a` dominates every block the phi's users are in: every path into the phi's
//! block passes through a definition of `%a` (all the phi's sources are `%a` or the phi), so the
//! definition of `%a` dominates the phi's block. Each removed phi is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use crate::ir::{Function, InstKind, Shader, Value};
use crate::uses::Uses;

/// The `phi-simplify` pass.
pub struct PhiSimplify;

impl Pass for PhiSimplify {
    fn name(&self) -> &str {
        "phi-simplify"
    }

    fn description(&self) -> &str {
        "replaces phis whose sources are all one value (or the phi itself) by that value"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = &mut shader.functions[f];
                let mut uses = Uses::build(func);
                // Rounds over every instruction, until one removes no phi.
                loop {
                    let mut changed = false;
                    transformations.each(func.all_insts().collect::<Vec<_>>(), |v| {
                        let same = trivial_phi(func, v)?;
                        uses.replace_all(func, v, same);
                        uses.remove_inst(func, v);
                        changed = true;
                        Some(move || format!("{v} is {same}"))
                    });
                    if !changed || transformations.is_spent() {
                        break;
                    }
                }
            }))
    }
}

/// The one value a phi chooses, if its sources are only that value and the phi itself.
fn trivial_phi(func: &Function, v: Value) -> Option<Value> {
    let InstKind::Phi(srcs) = &func.get_inst(v)?.kind else {
        return None;
    };
    let mut others = srcs.iter().map(|&(_, s)| s).filter(|&s| s != v);
    let first = others.next()?;
    others.all(|s| s == first).then_some(first)
}
