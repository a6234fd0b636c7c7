//! `dead-cf`: dead control flow.
//!
//! What: a selection whose branch condition is a constant becomes a jump to the arm it takes
//! (the header stops being a selection header, and the phis of the arm it drops forget the
//! header); then blocks no path from the entry reaches are deleted with their instructions, and
//! the phis of their successors forget them.
//!
//! Uses of a branch's condition in the blocks that only one of its edges reaches become the
//! constant that edge implies (Mesa's `opt_if_evaluate_condition_use`): the edge's target must
//! have the branch's block as its only predecessor, and the uses must be in blocks it
//! dominates (phi sources are left alone). So a condition tested again after an early return,
//! or at a loop's back edge after the same test leaves the loop, folds.
//!
//! A loop whose continue block no path reaches never goes round (inlining a function with an
//! early return leaves such a loop around its body, and a `for` loop that always returns is
//! one): it becomes its body, when every way out of it can be the end of a selection. The
//! header, if it branches (the loop's test), becomes a selection whose merge is the loop's; a
//! `break` at the body's top level then jumps to that merge. A `break` nested in selections
//! needs each of them to take the loop's merge as its own, which holds when only one of its
//! arms reaches its old merge block: that block and what follows it become part of that arm.
//! Otherwise the loop stays.
//!
//! Then a block that only one block jumps to is merged into it, unless a header names it or
//! both are headers, so that the chains of jumps other passes leave (inlining, discard-if)
//! become one block.
//!
//! A block stays, though unreachable, when a reachable header names it as its merge or continue
//! block (structured control flow needs it), when a block that stays jumps to it, or when a
//! block that stays uses a value it defines.
//!
//! Why: constant folding and the algebraic rules turn conditions into constants (specialization
//! constants, `if (false)` debug code, inlined arguments); the arms never taken are dead weight
//! for every later pass and for register allocation. A loop that runs once costs the backends
//! loop instructions and flags, and keeps its selections from being if-converted.
//!
//! Invariants: the CFG stays structured; every surviving phi has one source per predecessor
//! edge. A loop whose condition is constant is still a loop. Each folded branch, each loop
//! that runs once, each function's sweep of unreachable blocks and each function's merging of
//! blocks is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use crate::cfg::{DomTree, innermost_constructs};
use crate::ir::{BlockId, Edge, Function, Inst, InstKind, Shader, Structure, Terminator, ValType};
use crate::uses::{User, Uses};
use petgraph::visit::{Dfs, Walker};
use rustc_hash::FxHashSet;

/// The `dead-cf` pass.
pub struct DeadCf;

impl Pass for DeadCf {
    fn name(&self) -> &str {
        "dead-cf"
    }

    fn description(&self) -> &str {
        "folds selections on constant conditions, deletes unreachable blocks, merges jump chains"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = &mut shader.functions[f];
                transformations.attempt(|| {
                    let known = known_conditions(func);
                    (known > 0).then_some(move || format!("{known} uses of known conditions"))
                });
                transformations.each(func.blocks(), |b| {
                    fold_branch(func, b).then_some(move || format!("the branch of b{}", b.index()))
                });
                transformations.to_fixpoint(|| {
                    let header = unloop_one_trip_loop(func)?;
                    Some(move || format!("the loop at b{} runs once", header.index()))
                });
                transformations.attempt(|| {
                    let deleted = delete_unreachable(func);
                    (deleted > 0).then_some(move || format!("{deleted} unreachable blocks"))
                });
                transformations.attempt(|| {
                    let merged = merge_chains(func);
                    (merged > 0).then_some(move || format!("{merged} blocks merged"))
                });
            }))
    }
}

/// Replaces the uses of branch conditions that are known where they are (see the module
/// comment) by constants; returns how many uses changed.
fn known_conditions(func: &mut Function) -> usize {
    let dom = DomTree::new(func);
    let mut uses = Uses::build(func);
    let mut changed = 0;
    for p in func.blocks() {
        let Some(Terminator::Branch { cond }) = func.cfg[p].terminator else {
            continue;
        };
        if func
            .get_inst(cond)
            .is_none_or(|i| matches!(i.kind, InstKind::Const(_)))
        {
            continue;
        }
        let (Some(on_true), Some(on_false)) = (
            func.successor(p, Edge::True),
            func.successor(p, Edge::False),
        ) else {
            continue;
        };
        for (target, value) in [(on_true, 1u64), (on_false, 0)] {
            if on_true == on_false || func.predecessors(target) != [p] || !dom.is_reachable(target)
            {
                continue;
            }
            let block_of = |user: User, func: &Function| match user {
                User::Inst(v) if !matches!(func.inst(v).kind, InstKind::Phi(_)) => {
                    Some(func.inst(v).block)
                }
                User::Inst(_) => None,
                User::Terminator(b) => Some(b),
            };
            let known_here: Vec<User> = (uses.users(cond).iter().copied())
                .filter(|&u| block_of(u, func).is_some_and(|b| dom.dominates(target, b)))
                .collect();
            if known_here.is_empty() {
                continue;
            }
            let phis = (func.cfg[target].insts.iter())
                .take_while(|&&v| matches!(func.inst(v).kind, InstKind::Phi(_)))
                .count();
            let known = func.alloc_inst(Inst {
                kind: InstKind::Const(vec![value]),
                def: Some(ValType::scalar(1)),
                block: target,
            });
            func.cfg[target].insts.insert(phis, known);
            for user in known_here {
                match user {
                    User::Inst(u) => func.inst_mut(u).kind.for_each_src_mut(|s| {
                        if *s == cond {
                            *s = known;
                        }
                    }),
                    User::Terminator(b) => {
                        if let Some(src) = func.cfg[b].terminator.as_mut().and_then(|t| t.src_mut())
                        {
                            *src = known;
                        }
                    }
                }
                uses.remove(cond, user);
                uses.add(known, user);
                changed += 1;
            }
        }
    }
    changed
}

/// Replaces the branch of selection header `b` by a jump when its condition is a constant.
fn fold_branch(func: &mut Function, b: BlockId) -> bool {
    let block = &func.cfg[b];
    let (Some(Terminator::Branch { cond }), Some(Structure::Selection { .. })) =
        (&block.terminator, block.structure)
    else {
        return false;
    };
    let Some(InstKind::Const(values)) = func.get_inst(*cond).map(|i| &i.kind) else {
        return false;
    };
    let (taken, dropped) = if values[0] != 0 {
        (Edge::True, Edge::False)
    } else {
        (Edge::False, Edge::True)
    };
    let (Some(taken), Some(dropped)) = (func.successor(b, taken), func.successor(b, dropped))
    else {
        return false;
    };
    if taken == dropped {
        return false;
    }
    func.set_jump(b, taken);
    func.cfg[b].structure = None;
    func.forget_predecessor(dropped, b);
    true
}

/// Turns the first loop that never goes round and can be its body (see the module comment)
/// into its body; returns its header.
fn unloop_one_trip_loop(func: &mut Function) -> Option<BlockId> {
    let dom = DomTree::new(func);
    let innermost = innermost_constructs(func, &dom);
    for header in func.blocks() {
        let Some(Structure::Loop { merge, cont }) = func.cfg[header].structure else {
            continue;
        };
        let goes_round = func.predecessors(cont).iter().any(|&p| dom.is_reachable(p));
        if !dom.is_reachable(header) || goes_round {
            continue;
        }
        // A header that branches tests the loop's condition: it becomes a selection on the
        // merge block, and the body one of its arms.
        let header_branches =
            matches!(func.cfg[header].terminator, Some(Terminator::Branch { .. }));
        let mut to_merge = Vec::new();
        let every_exit_fits = func.predecessors(merge).into_iter().all(|exit| {
            if exit == header || !dom.is_reachable(exit) {
                return true;
            }
            let jumps = matches!(func.cfg[exit].terminator, Some(Terminator::Jump));
            let mut inner = innermost[&exit];
            if inner == Some(header) {
                return jumps || header_branches;
            }
            while let Some(h) = inner
                && h != header
            {
                match func.cfg[h].structure {
                    Some(Structure::Selection { merge: m })
                        if one_arm_reaches(func, h, m, merge) =>
                    {
                        to_merge.push(h)
                    }
                    _ => return false,
                }
                inner = innermost[&h];
            }
            inner == Some(header)
        });
        if !every_exit_fits {
            continue;
        }
        func.cfg[header].structure = header_branches.then_some(Structure::Selection { merge });
        for h in to_merge {
            func.cfg[h].structure = Some(Structure::Selection { merge });
        }
        return Some(header);
    }
    None
}

/// Whether at most one of the arms of selection `header` reaches its merge block `merge`
/// without passing `stop`.
fn one_arm_reaches(func: &Function, header: BlockId, merge: BlockId, stop: BlockId) -> bool {
    let reaches = |arm: BlockId| {
        let mut seen = FxHashSet::from_iter([arm]);
        let mut work = vec![arm];
        while let Some(b) = work.pop() {
            if b == merge {
                return true;
            }
            if b != stop {
                work.extend(func.successors(b).into_iter().filter(|&s| seen.insert(s)));
            }
        }
        false
    };
    let arms = func.successors(header);
    arms.into_iter().filter(|&arm| reaches(arm)).count() <= 1
}

/// Deletes the blocks that neither the entry reaches nor a surviving block needs; returns how
/// many.
fn delete_unreachable(func: &mut Function) -> usize {
    let reachable: FxHashSet<BlockId> = Dfs::new(&func.cfg, func.entry).iter(&func.cfg).collect();
    let mut survivors = reachable.clone();
    for &b in &reachable {
        match func.cfg[b].structure {
            Some(Structure::Selection { merge }) => {
                survivors.insert(merge);
            }
            Some(Structure::Loop { merge, cont }) => {
                survivors.extend([merge, cont]);
            }
            None => {}
        }
    }
    // Close under successors and under the definitions surviving instructions use.
    loop {
        let before = survivors.len();
        for b in survivors.clone() {
            survivors.extend(func.successors(b));
            for &v in &func.cfg[b].insts {
                // A phi's sources from blocks that go are forgotten with them.
                let sources = match &func.inst(v).kind {
                    InstKind::Phi(srcs) => srcs
                        .iter()
                        .filter(|(p, _)| survivors.contains(p))
                        .map(|&(_, src)| src)
                        .collect(),
                    _ => func.inst_sources(v),
                };
                for src in sources {
                    if let Some(inst) = func.get_inst(src) {
                        survivors.insert(inst.block);
                    }
                }
            }
            if let Some(mut term) = func.cfg[b].terminator.clone()
                && let Some(&mut src) = term.src_mut()
                && let Some(inst) = func.get_inst(src)
            {
                survivors.insert(inst.block);
            }
        }
        if survivors.len() == before {
            break;
        }
    }
    let dead: Vec<BlockId> = func
        .blocks()
        .into_iter()
        .filter(|b| !survivors.contains(b))
        .collect();
    for &d in &dead {
        for s in func.successors(d) {
            func.forget_predecessor(s, d);
        }
        func.remove_block(d);
    }
    dead.len()
}

/// Merges every block into the block that alone jumps to it, where structure allows (see the
/// module comment); returns how many blocks went.
fn merge_chains(func: &mut Function) -> usize {
    let named = func.structure_targets();
    let mut merged = 0;
    for a in func.blocks() {
        // `a` may itself have been merged away.
        while func.cfg.contains_node(a) && func.cfg[a].terminator == Some(Terminator::Jump) {
            let Some(b) = func.successor(a, Edge::Jump) else {
                break;
            };
            if b == a
                || b == func.entry
                || named.contains(b)
                || func.predecessors(b) != [a]
                || (func.cfg[a].structure.is_some() && func.cfg[b].structure.is_some())
            {
                break;
            }
            func.merge_into(a, b);
            merged += 1;
        }
    }
    merged
}
