//! `discard-if`: `if (c) { discard }` becomes `discard_if c`.
//!
//! What: a selection one of whose arms is a single block holding only `discard`, `terminate`
//! or `demote` (and ending there, or jumping to the merge block), a block no other header names
//! as its merge or continue block, becomes the conditional intrinsic at the end of the header —
//! `discard_if`, `terminate_if`, `demote_if`, on the condition or its negation — and a jump to
//! the other arm; the arm block goes, and the header stops being a selection header.
//!
//! Why: the conditional form needs no control flow, so the header's block keeps growing
//! (better scheduling, no branch) and `move-discards` can hoist it; backends have native
//! conditional kills (Gen's predicated halt, R600's KILLGT/KILLNE).
//!
//! Invariants: the kill happens under the same condition, after the same instructions; nothing
//! ran after it in the arm. Each conversion is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use crate::ir::{
    BlockId, Builder, Cursor, Edge, FuncId, Function, InstKind, Shader, Structure,
    StructureTargets, Terminator, Value,
};
use crate::ops::AluOp;
use shrew_ops::Intrinsic;

/// The `discard-if` pass.
pub struct DiscardIf;

impl Pass for DiscardIf {
    fn name(&self) -> &str {
        "discard-if"
    }

    fn description(&self) -> &str {
        "turns selections whose arm only discards (terminates, demotes) into discard_if"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let mut named = shader.functions[f].structure_targets();
                transformations.each(shader.functions[f].blocks(), |b| {
                    // A conversion removes the arm's block, which may still be in the list.
                    (shader.functions[f].cfg.contains_node(b)
                        && convert(shader, FuncId(f as u32), b, &mut named))
                    .then_some(move || format!("b{}", b.index()))
                });
            }))
    }
}

/// The conditional form of a kill intrinsic.
fn conditional(op: Intrinsic) -> Option<Intrinsic> {
    Some(match op {
        Intrinsic::Discard => Intrinsic::DiscardIf,
        Intrinsic::Terminate => Intrinsic::TerminateIf,
        Intrinsic::Demote => Intrinsic::DemoteIf,
        _ => return None,
    })
}

/// What a kill-only arm of header `b` holds: the arm's block and its conditional intrinsic.
fn kill_arm(
    func: &Function,
    b: BlockId,
    arm: BlockId,
    merge: BlockId,
    named: &StructureTargets,
) -> Option<Intrinsic> {
    let block = &func.cfg[arm];
    // The arm goes: no other header may name it as its merge or continue block.
    if arm == merge || func.predecessors(arm) != [b] || named.contains(arm) {
        return None;
    }
    let [only] = block.insts[..] else {
        return None;
    };
    let InstKind::Intrinsic(i) = &func.inst(only).kind else {
        return None;
    };
    let op = conditional(i.op)?;
    let ends_here = matches!(block.terminator, Some(Terminator::Unreachable));
    let rejoins = matches!(block.terminator, Some(Terminator::Jump))
        && func.successor(arm, Edge::Jump) == Some(merge);
    // Demote lets the invocation go on: only a demote arm may rejoin, and it must.
    let fits = if op == Intrinsic::DemoteIf {
        rejoins
    } else {
        ends_here || rejoins
    };
    fits.then_some(op)
}

/// Converts the selection of `b` if it has a kill-only arm; `named` are the blocks headers name.
fn convert(shader: &mut Shader, func: FuncId, b: BlockId, named: &mut StructureTargets) -> bool {
    let f = func.0 as usize;
    let function = &shader.functions[f];
    let block = &function.cfg[b];
    let (Some(Terminator::Branch { cond }), Some(Structure::Selection { merge })) =
        (&block.terminator, block.structure)
    else {
        return false;
    };
    let cond: Value = *cond;
    for (arm_edge, other_edge, negate) in [
        (Edge::True, Edge::False, false),
        (Edge::False, Edge::True, true),
    ] {
        let (Some(arm), Some(other)) = (
            function.successor(b, arm_edge),
            function.successor(b, other_edge),
        ) else {
            return false;
        };
        let Some(op) = kill_arm(function, b, arm, merge, named) else {
            continue;
        };
        let end = shader.functions[f].cfg[b].insts.len();
        let mut builder = Builder::new(shader, func);
        // Before the terminator, which stays until the jump replaces it.
        builder.cursor = Cursor {
            block: b,
            pos: Some(end),
        };
        let condition = if negate {
            builder.alu(AluOp::Inot, &[cond])
        } else {
            cond
        };
        builder.intrinsic(op, &[condition], None, &[]);
        let function = &mut shader.functions[f];
        function.set_jump(b, other);
        function.cfg[b].structure = None;
        named.forget(Structure::Selection { merge });
        function.forget_predecessor(merge, arm);
        function.remove_block(arm);
        return true;
    }
    false
}
