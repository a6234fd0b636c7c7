//! Control-flow analyses over a function's petgraph CFG: reachability, dominators, post-order,
//! and the structured-construct nesting of blocks.

use crate::ir::{BlockId, Function};
use petgraph::algo::dominators::{self, Dominators};
use petgraph::visit::{DfsPostOrder, Walker};
use std::collections::HashMap;

/// Dominator information of one function.
pub struct DomTree {
    doms: Dominators<BlockId>,
    reachable: HashMap<BlockId, usize>,
}

impl DomTree {
    pub fn new(func: &Function) -> DomTree {
        let doms = dominators::simple_fast(&func.cfg, func.entry);
        let reachable = reverse_post_order(func)
            .into_iter()
            .enumerate()
            .map(|(i, b)| (b, i))
            .collect();
        DomTree { doms, reachable }
    }

    pub fn is_reachable(&self, b: BlockId) -> bool {
        self.reachable.contains_key(&b)
    }

    /// Whether `a` dominates `b` (every block dominates itself). Unreachable blocks are
    /// dominated by nothing and dominate nothing.
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        if !self.is_reachable(a) || !self.is_reachable(b) {
            return false;
        }
        self.doms
            .dominators(b)
            .is_some_and(|mut chain| chain.any(|d| d == a))
    }

    pub fn immediate_dominator(&self, b: BlockId) -> Option<BlockId> {
        self.doms.immediate_dominator(b)
    }

    /// Position of a reachable block in reverse post-order.
    pub fn rpo_index(&self, b: BlockId) -> Option<usize> {
        self.reachable.get(&b).copied()
    }
}

/// Reachable blocks in post-order (successors visited true-edge first).
pub fn post_order(func: &Function) -> Vec<BlockId> {
    DfsPostOrder::new(&func.cfg, func.entry)
        .iter(&func.cfg)
        .collect()
}

/// Reachable blocks in reverse post-order: every block after its dominators.
pub fn reverse_post_order(func: &Function) -> Vec<BlockId> {
    let mut order = post_order(func);
    order.reverse();
    order
}

/// For every block, how many structured constructs contain it. A block belongs to the construct
/// of header `h` when `h` dominates it, the construct's merge block does not, and it belongs to
/// every construct enclosing `h` (SPIR-V's definition, with the last condition so that a block
/// reached by breaking out of a loop from inside a selection is outside that selection too).
/// The header itself is outside its own construct.
pub fn construct_depths(func: &Function, dom: &DomTree) -> HashMap<BlockId, usize> {
    let blocks = func.blocks();
    let mut depth: HashMap<BlockId, usize> = blocks.iter().map(|&b| (b, 0)).collect();
    // Members of each construct, computed outer headers first (reverse post-order), so the
    // construct enclosing a header is known when the header is reached.
    let mut members: Vec<(BlockId, Vec<BlockId>)> = Vec::new();
    for h in reverse_post_order(func) {
        let Some(structure) = func.block(h).structure else {
            continue;
        };
        let parent = members
            .iter()
            .rev()
            .find(|(_, m)| m.contains(&h))
            .map(|(_, m)| m);
        let inside: Vec<BlockId> = blocks
            .iter()
            .copied()
            .filter(|&b| b != h && dom.dominates(h, b) && !dom.dominates(structure.merge(), b))
            .filter(|b| parent.is_none_or(|p| p.contains(b)))
            .collect();
        for b in &inside {
            *depth.get_mut(b).unwrap() += 1;
        }
        members.push((h, inside));
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, FuncId, Shader, Stage};

    #[test]
    fn a_break_target_is_outside_the_selection_it_breaks_from() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let lp = b.push_loop();
        let cond = b.imm_bool(true);
        let nif = b.push_if(cond);
        b.break_loop(&lp);
        b.pop_if(nif);
        let inner_merge = b.cursor.block;
        let merge = lp.merge;
        b.pop_loop(lp);
        b.ret(None);
        let func = &shader.functions[0];
        let depths = construct_depths(func, &DomTree::new(func));
        assert_eq!(depths[&merge], 0);
        assert_eq!(depths[&inner_merge], 1);
        assert_eq!(depths[&func.entry], 0);
    }
}
