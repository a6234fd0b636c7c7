//! Control-flow analyses over a function's petgraph CFG: reachability, dominators, post-order,
//! and the structured-construct nesting of blocks.

use crate::ir::{BlockId, Function, Structure};
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
/// of header `h` when `h` dominates it and the construct's merge block does not (SPIR-V's
/// definition); the header itself is outside its own construct.
pub fn construct_depths(func: &Function, dom: &DomTree) -> HashMap<BlockId, usize> {
    let headers: Vec<(BlockId, Structure)> = func
        .blocks()
        .into_iter()
        .filter_map(|b| func.block(b).structure.map(|s| (b, s)))
        .collect();
    func.blocks()
        .into_iter()
        .map(|b| {
            let depth = headers
                .iter()
                .filter(|(h, s)| *h != b && dom.dominates(*h, b) && !dom.dominates(s.merge(), b))
                .count();
            (b, depth)
        })
        .collect()
}
