//! `dce`: dead-code elimination.
//!
//! What: deletes every instruction whose value nothing live needs and that has no effect of its
//! own. Live are the sources of terminators (branch conditions, returned values), every
//! instruction with an effect — calls, intrinsics the opcode table does not mark eliminable
//! (stores, atomics, barriers, discards, ...), volatile accesses — and, transitively, the
//! sources of live instructions. Everything else goes, including cycles of phis that only feed
//! each other (a loop variable nothing reads after the loop).
//!
//! Why: the other passes leave dead code behind on purpose (a rewrite replaces the root and
//! leaves the rest of the matched tree; copy propagation leaves the copies), so that each stays
//! simple; this pass cleans up after all of them.
//!
//! Invariants: no live instruction loses a source, no effect is removed, control flow is not
//! touched (dead blocks are `dead-cf`'s). One function's sweep is one transformation of the
//! bisect budget, made whole or not at all, so the IR stays valid wherever a bisection stops.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use crate::ir::{Function, InstKind, Shader};
use shrew_ops::{ACCESS_VOLATILE, IndexKind};

/// The `dce` pass.
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &str {
        "dce"
    }

    fn description(&self) -> &str {
        "deletes instructions whose results nothing uses and that have no effect"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                transformations.attempt(|| {
                    let deleted = eliminate(&mut shader.functions[f]);
                    (deleted > 0).then_some(move || format!("{deleted} instructions"))
                });
            }))
    }
}

/// Whether an instruction must stay even when nothing uses its value.
fn has_effect(kind: &InstKind) -> bool {
    match kind {
        InstKind::Call { .. } => true,
        InstKind::Intrinsic(i) => {
            !i.op.info().can_eliminate()
                || i.index(IndexKind::Access)
                    .is_some_and(|access| access & ACCESS_VOLATILE != 0)
        }
        InstKind::Alu(_)
        | InstKind::Const(_)
        | InstKind::Undef
        | InstKind::Phi(_)
        | InstKind::Tex(_)
        | InstKind::Deref(_) => false,
    }
}

/// Deletes the dead instructions of a function; returns how many.
pub fn eliminate(func: &mut Function) -> usize {
    let mut live = vec![false; func.insts.len()];
    let mut worklist = Vec::new();
    for b in func.blocks() {
        for &v in &func.cfg[b].insts {
            if has_effect(&func.inst(v).kind) {
                worklist.push(v);
            }
        }
        if let Some(mut term) = func.cfg[b].terminator.clone()
            && let Some(&mut src) = term.src_mut()
        {
            worklist.push(src);
        }
    }
    while let Some(v) = worklist.pop() {
        if std::mem::replace(&mut live[v.index()], true) {
            continue;
        }
        worklist.extend(func.inst_sources(v));
    }
    let mut deleted = 0;
    for b in func.blocks() {
        let insts = std::mem::take(&mut func.cfg[b].insts);
        let (keep, dead): (Vec<_>, Vec<_>) = insts.into_iter().partition(|v| live[v.index()]);
        for v in &dead {
            func.insts[v.index()] = None;
        }
        deleted += dead.len();
        func.cfg[b].insts = keep;
    }
    deleted
}
