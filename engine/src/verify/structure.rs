//! Structured control flow: construct headers with their merge and continue blocks, back edges,
//! reducibility, and the conditional branches that may leave a construct.
//!
//! A block belongs to the construct of header `h` when `h` dominates it, the construct's merge
//! block does not, and it belongs to every construct enclosing `h` (computed by
//! [`crate::cfg::innermost_constructs`]); the header itself is outside its own construct.

use super::ErrorKind;
use super::function::FuncCx;
use crate::ir::{Block, BlockId, Structure, Terminator};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use rustc_hash::FxHashMap;

impl FuncCx<'_> {
    /// The checks of a header block on its own construct.
    pub(super) fn check_structure(&mut self, b: BlockId, block: &Block) {
        let Some(structure) = block.structure else {
            return;
        };
        let merge = structure.merge();
        if !self.func.cfg.contains_node(merge) {
            let message = format!("merge block b{} does not exist", merge.index());
            self.err_block(ErrorKind::MissingStructureBlock, b, message);
        } else if merge == b {
            let message = "the construct's merge block is its own header".into();
            self.err_block(ErrorKind::MergeIsHeader, b, message);
        } else if self.dom.as_ref().is_some_and(|dom| dom.dominates(merge, b)) {
            let message = format!("merge block b{} dominates the header", merge.index());
            self.err_block(ErrorKind::MergePlacement, b, message);
        }
        match structure {
            Structure::Selection { .. } => {
                if !matches!(block.terminator, Some(Terminator::Branch { .. })) {
                    let message = "a selection header must end in a branch".into();
                    self.err_block(ErrorKind::SelectionHeader, b, message);
                }
            }
            Structure::Loop { cont, .. } => {
                if !self.func.cfg.contains_node(cont) {
                    let message = format!("continue block b{} does not exist", cont.index());
                    self.err_block(ErrorKind::MissingStructureBlock, b, message);
                    return;
                }
                if cont == merge {
                    let message = format!(
                        "b{} is both the loop's merge block and its continue block",
                        cont.index()
                    );
                    self.err_block(ErrorKind::MergePlacement, b, message);
                }
                if !self.func.cfg.edges(cont).any(|e| e.target() == b) {
                    let message = format!(
                        "continue block b{} does not branch back to the header",
                        cont.index()
                    );
                    self.err_block(ErrorKind::LoopContinue, b, message);
                }
                let undominated = self.dom.as_ref().is_some_and(|dom| {
                    dom.is_reachable(b) && dom.is_reachable(cont) && !dom.dominates(b, cont)
                });
                if undominated {
                    let message = format!(
                        "the header does not dominate its continue block b{}",
                        cont.index()
                    );
                    self.err_block(ErrorKind::LoopContinue, b, message);
                }
            }
        }
    }

    /// Every back edge (an edge to a block that dominates its source) must go to a loop header
    /// from inside that loop.
    pub(super) fn check_back_edges(&mut self) {
        let Some(dom) = &self.dom else {
            return;
        };
        let mut bad = Vec::new();
        for e in (&self.func.cfg).edge_references() {
            let (s, t) = (e.source(), e.target());
            if !dom.dominates(t, s) {
                continue;
            }
            match self.func.cfg[t].structure {
                // A merge block that is the continue block is reported with the header.
                Some(Structure::Loop { merge, cont }) => {
                    if merge != cont && dom.dominates(merge, s) {
                        bad.push((
                            s,
                            format!(
                                "back edge to loop header b{} comes from outside the loop (its \
                                 merge block b{} dominates b{})",
                                t.index(),
                                merge.index(),
                                s.index()
                            ),
                        ));
                    }
                }
                _ => bad.push((
                    s,
                    format!("back edge to b{}, which is not a loop header", t.index()),
                )),
            }
        }
        for (s, message) in bad {
            self.err_block(ErrorKind::BackEdge, s, message);
        }
    }

    /// The CFG is reducible: every edge a depth-first walk from the entry finds retreating (to
    /// a block on the walk's current path) goes to a block that dominates its source, so every
    /// cycle has a single entry. Iterative, so deep CFGs cannot overflow the stack.
    pub(super) fn check_reducible(&mut self) {
        let Some(dom) = &self.dom else {
            return;
        };
        let func = self.func;
        // `true` while a block is on the current path, `false` once it is finished.
        let mut on_path: FxHashMap<BlockId, bool> = FxHashMap::default();
        let successors = |b: BlockId| {
            let mut succs = func.successors(b);
            succs.sort();
            succs.dedup();
            succs
        };
        let mut stack = vec![(func.entry, successors(func.entry), 0)];
        on_path.insert(func.entry, true);
        let mut bad = Vec::new();
        while let Some((b, succs, next)) = stack.last_mut() {
            let b = *b;
            let Some(&t) = succs.get(*next) else {
                on_path.insert(b, false);
                stack.pop();
                continue;
            };
            *next += 1;
            match on_path.get(&t) {
                Some(true) if !dom.dominates(t, b) => bad.push((b, t)),
                Some(_) => {}
                None => {
                    on_path.insert(t, true);
                    stack.push((t, successors(t), 0));
                }
            }
        }
        for (b, t) in bad {
            let message = format!(
                "the edge to b{} closes a cycle that b{0} does not dominate: the control flow is \
                 irreducible",
                t.index()
            );
            self.err_block(ErrorKind::Irreducible, b, message);
        }
    }

    /// A conditional branch outside a header must be a structured exit: one of its targets is
    /// the merge or continue block of a construct enclosing its block.
    pub(super) fn check_branches(&mut self) {
        let innermost = match &self.dom {
            Some(dom) => crate::cfg::innermost_constructs(self.func, dom),
            None => FxHashMap::default(),
        };
        let mut bad = Vec::new();
        for b in self.func.blocks() {
            let block = &self.func.cfg[b];
            if block.structure.is_some()
                || !matches!(block.terminator, Some(Terminator::Branch { .. }))
            {
                continue;
            }
            // Only reachable blocks have a construct nesting.
            let Some(&inner) = innermost.get(&b) else {
                continue;
            };
            let targets = self.func.successors(b);
            let exits = |h: BlockId| match self.func.cfg[h].structure {
                Some(Structure::Loop { merge, cont }) => vec![merge, cont],
                Some(Structure::Selection { merge }) => vec![merge],
                None => Vec::new(),
            };
            let structured = std::iter::successors(inner, |h| innermost[h])
                .any(|h| exits(h).iter().any(|x| targets.contains(x)));
            if !structured {
                let names: Vec<String> =
                    targets.iter().map(|t| format!("b{}", t.index())).collect();
                bad.push((b, names.join(", ")));
            }
        }
        for (b, targets) in bad {
            let message = format!(
                "conditional branch to {targets} in a block that is not a header: no target is \
                 the merge or continue block of an enclosing construct"
            );
            self.err_block(ErrorKind::UnstructuredBranch, b, message);
        }
    }
}
