//! Control-flow analyses over a function's petgraph CFG: reachability, dominators, post-order,
//! and the structured-construct nesting of blocks.

use crate::dominators::immediate_dominators;
use crate::ir::{BlockId, Function};
use petgraph::visit::{DfsPostOrder, NodeIndexable, Walker};
use rustc_hash::{FxHashMap, FxHashSet};

/// Dominator information of one function.
pub struct DomTree {
    /// Per block index: its immediate dominator; `None` for the entry and unreachable blocks.
    idom: Vec<Option<BlockId>>,
    /// Per block index: its position in reverse post-order, for reachable blocks.
    rpo_index: Vec<Option<usize>>,
    /// Per block index: where the block enters and leaves a preorder walk of the dominator
    /// tree, so that dominance is two comparisons. Unset for unreachable blocks.
    walk: Vec<(usize, usize)>,
    /// The reachable blocks in preorder of the dominator tree, children in reverse post-order.
    preorder: Vec<BlockId>,
    /// Per block index: the blocks it immediately dominates, in reverse post-order.
    children: Vec<Vec<BlockId>>,
}

impl DomTree {
    pub fn new(func: &Function) -> DomTree {
        let bound = func.cfg.node_bound();
        let idom: Vec<Option<BlockId>> = immediate_dominators(bound, func.entry.index(), |b| {
            func.cfg.neighbors(BlockId::new(b)).map(|s| s.index())
        })
        .into_iter()
        .map(|d| d.map(BlockId::new))
        .collect();
        let order = reverse_post_order(func);
        let mut rpo_index = vec![None; bound];
        let mut children: Vec<Vec<BlockId>> = vec![Vec::new(); bound];
        for (i, &b) in order.iter().enumerate() {
            rpo_index[b.index()] = Some(i);
            if let Some(parent) = idom[b.index()] {
                children[parent.index()].push(b);
            }
        }
        let mut walk = vec![(usize::MAX, usize::MAX); bound];
        let mut preorder = Vec::with_capacity(order.len());
        let mut stack = vec![(func.entry, 0)];
        while let Some((b, next_child)) = stack.pop() {
            if next_child == 0 {
                walk[b.index()].0 = preorder.len();
                preorder.push(b);
            }
            match children[b.index()].get(next_child) {
                Some(&child) => {
                    stack.push((b, next_child + 1));
                    stack.push((child, 0));
                }
                None => walk[b.index()].1 = preorder.len(),
            }
        }
        DomTree {
            idom,
            rpo_index,
            walk,
            preorder,
            children,
        }
    }

    pub fn is_reachable(&self, b: BlockId) -> bool {
        self.rpo_index(b).is_some()
    }

    /// Whether `a` dominates `b` (every block dominates itself). Unreachable blocks are
    /// dominated by nothing and dominate nothing. Constant time.
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        if !self.is_reachable(a) || !self.is_reachable(b) {
            return false;
        }
        let (enter, leave) = self.walk[a.index()];
        (enter..leave).contains(&self.walk[b.index()].0)
    }

    /// The blocks `b` immediately dominates, in reverse post-order.
    pub fn children(&self, b: BlockId) -> &[BlockId] {
        self.children.get(b.index()).map_or(&[], Vec::as_slice)
    }

    /// The reachable blocks in a preorder walk of the dominator tree: every block after its
    /// dominators, each subtree contiguous.
    pub fn preorder(&self) -> &[BlockId] {
        &self.preorder
    }

    /// Position of a reachable block in [`DomTree::preorder`].
    pub fn preorder_index(&self, b: BlockId) -> Option<usize> {
        self.is_reachable(b).then(|| self.walk[b.index()].0)
    }

    /// The immediate dominator of a reachable block other than the entry.
    pub fn immediate_dominator(&self, b: BlockId) -> Option<BlockId> {
        self.idom.get(b.index()).copied().flatten()
    }

    /// Position of a reachable block in reverse post-order.
    pub fn rpo_index(&self, b: BlockId) -> Option<usize> {
        self.rpo_index.get(b.index()).copied().flatten()
    }
}

/// The dominance frontier of every reachable block: the blocks where its dominance ends, so
/// where a definition made in it meets others. Found by walking up from each join block's
/// predecessors to the join's immediate dominator (Cooper, Harvey and Kennedy).
pub fn dominance_frontiers(func: &Function, dom: &DomTree) -> FxHashMap<BlockId, Vec<BlockId>> {
    let mut frontiers: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
    for join in func.blocks() {
        let preds: Vec<BlockId> = func
            .predecessors(join)
            .into_iter()
            .filter(|&p| dom.is_reachable(p))
            .collect();
        if preds.len() < 2 || !dom.is_reachable(join) {
            continue;
        }
        let idom = dom.immediate_dominator(join);
        for pred in preds {
            let mut runner = Some(pred);
            while let Some(r) = runner
                && Some(r) != idom
            {
                let frontier = frontiers.entry(r).or_default();
                if frontier.last() == Some(&join) {
                    break;
                }
                frontier.push(join);
                runner = dom.immediate_dominator(r);
            }
        }
    }
    frontiers
}

/// The iterated dominance frontier of a set of blocks, restricted to the blocks where `wanted`
/// holds: where SSA construction places the phis of a variable defined in them (Cytron et al.),
/// pruned to where the variable is live. A block left out does not extend the frontier either:
/// a phi nothing reads defines nothing another phi needs. Sorted by block id.
pub fn iterated_dominance_frontier(
    frontiers: &FxHashMap<BlockId, Vec<BlockId>>,
    blocks: impl IntoIterator<Item = BlockId>,
    wanted: impl Fn(BlockId) -> bool,
) -> Vec<BlockId> {
    let mut result = Vec::new();
    let mut work: Vec<BlockId> = blocks.into_iter().collect();
    let mut seen: FxHashSet<BlockId> = work.iter().copied().collect();
    let mut placed = FxHashSet::default();
    while let Some(b) = work.pop() {
        for &f in frontiers.get(&b).map_or(&[][..], Vec::as_slice) {
            if !wanted(f) || !placed.insert(f) {
                continue;
            }
            result.push(f);
            if seen.insert(f) {
                work.push(f);
            }
        }
    }
    result.sort();
    result
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

/// For every reachable block, the header of the innermost structured construct containing it,
/// if any; following these links from a block visits every construct containing it, innermost
/// first. A block belongs to the construct of header `h` when `h` dominates it, the construct's
/// merge block does not, and it belongs to every construct enclosing `h` (SPIR-V's definition,
/// with the last condition so that a block reached by breaking out of a loop from inside a
/// selection is outside that selection too). The header itself is outside its own construct.
///
/// Computed in one walk down the dominator tree: a block is in the constructs its immediate
/// dominator is in, and in the immediate dominator's own construct when that is a header,
/// except that reaching a construct's merge block leaves that construct and every construct
/// nested in it.
pub fn innermost_constructs(func: &Function, dom: &DomTree) -> FxHashMap<BlockId, Option<BlockId>> {
    let mut children: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
    for b in func.blocks() {
        if b != func.entry
            && dom.is_reachable(b)
            && let Some(idom) = dom.immediate_dominator(b)
        {
            children.entry(idom).or_default().push(b);
        }
    }
    // The headers whose construct each block is the merge block of.
    let mut merging_at: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
    for b in func.blocks() {
        if let Some(structure) = func.cfg[b].structure {
            merging_at.entry(structure.merge()).or_default().push(b);
        }
    }
    let mut innermost: FxHashMap<BlockId, Option<BlockId>> = FxHashMap::default();
    // How many constructs contain each block: the length of its chain of innermost constructs.
    let mut level: FxHashMap<BlockId, usize> = FxHashMap::default();
    innermost.insert(func.entry, None);
    level.insert(func.entry, 0);
    let mut stack = vec![func.entry];
    while let Some(parent) = stack.pop() {
        let base = if func.cfg[parent].structure.is_some() {
            Some(parent)
        } else {
            innermost[&parent]
        };
        let chain_level = |h: BlockId, level: &FxHashMap<BlockId, usize>| level[&h] + 1;
        for &child in children.get(&parent).map_or(&[][..], Vec::as_slice) {
            // The outermost construct of the chain from `base` that `child` is the merge block
            // of, if any. Only headers dominating `child` can be in the chain, and the chain's
            // levels fall by one per step, so the walk stops below the lowest such header's
            // level: it visits only the constructs `child` leaves.
            let candidates: &[BlockId] = merging_at.get(&child).map_or(&[], Vec::as_slice);
            let lowest = (candidates.iter())
                .filter(|&&h| dom.dominates(h, child) && level.contains_key(&h))
                .map(|&h| chain_level(h, &level))
                .min();
            let mut left = None;
            if let Some(lowest) = lowest {
                let candidates: FxHashSet<BlockId> = candidates.iter().copied().collect();
                let mut walk = base;
                while let Some(h) = walk
                    && chain_level(h, &level) >= lowest
                {
                    if candidates.contains(&h) {
                        left = Some(h);
                    }
                    walk = innermost[&h];
                }
            }
            let inside = match left {
                Some(h) => innermost[&h],
                None => base,
            };
            level.insert(child, inside.map_or(0, |h| chain_level(h, &level)));
            innermost.insert(child, inside);
            stack.push(child);
        }
    }
    innermost
}

/// For every block, how many structured constructs contain it (see [`innermost_constructs`]);
/// unreachable blocks count as outside every construct.
pub fn construct_depths(func: &Function, dom: &DomTree) -> FxHashMap<BlockId, usize> {
    let innermost = innermost_constructs(func, dom);
    let mut depth: FxHashMap<BlockId, usize> = func.blocks().into_iter().map(|b| (b, 0)).collect();
    // A header comes before the blocks of its construct in reverse post-order, so its own depth
    // is known when they are reached.
    for b in reverse_post_order(func) {
        if let Some(Some(header)) = innermost.get(&b) {
            let d = depth[header] + 1;
            depth.insert(b, d);
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, Edge, FuncId, Shader, Stage};

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

    /// Diamonds nested 100,000 deep, each in the true arm of the one around it: the dominator
    /// tree is as deep, and neither finding it nor walking it may recurse that deep.
    #[test]
    fn dominators_of_diamonds_nested_100000_deep() {
        const DEPTH: usize = 100_000;
        let mut func = Function::new("deep");
        let headers: Vec<BlockId> = std::iter::once(func.entry)
            .chain((1..DEPTH).map(|_| func.add_block()))
            .collect();
        let false_arms: Vec<BlockId> = (0..DEPTH).map(|_| func.add_block()).collect();
        let merges: Vec<BlockId> = (0..DEPTH).map(|_| func.add_block()).collect();
        for i in 0..DEPTH {
            let inner = headers.get(i + 1).unwrap_or(&merges[i]);
            func.cfg.add_edge(headers[i], *inner, Edge::True);
            func.cfg.add_edge(headers[i], false_arms[i], Edge::False);
            func.cfg.add_edge(false_arms[i], merges[i], Edge::Jump);
            if i > 0 {
                func.cfg.add_edge(merges[i], merges[i - 1], Edge::Jump);
            }
        }
        let dom = DomTree::new(&func);
        assert_eq!(dom.immediate_dominator(headers[0]), None);
        for i in 0..DEPTH {
            if i > 0 {
                assert_eq!(dom.immediate_dominator(headers[i]), Some(headers[i - 1]));
            }
            assert_eq!(dom.immediate_dominator(false_arms[i]), Some(headers[i]));
            assert_eq!(dom.immediate_dominator(merges[i]), Some(headers[i]));
        }
        assert_eq!(dom.preorder().len(), 3 * DEPTH);
        assert!(dom.dominates(headers[0], merges[DEPTH - 1]));
        assert!(!dom.dominates(false_arms[0], merges[0]));
        assert!(!dom.dominates(headers[DEPTH - 1], merges[0]));
    }
}
