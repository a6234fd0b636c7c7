//! The natural loops of a function's reducible CFG as a tree, for analyses that treat a loop as
//! one unit: each loop's blocks are strongly connected, so a variable live into one of them and
//! written in none is live everywhere in the loop.
//!
//! What: [`LoopForest`] gives each reachable block its innermost loop, each loop its parent, its
//! entry edges' sources and its exit edges' targets, a block order in which every loop is
//! contiguous, and, for a block and a definition block, the outermost loop around the first
//! that does not contain the second (a level-ancestor query, logarithmic in the nesting depth).
//!
//! How: a loop is the natural loop of a block `h` that dominates a predecessor (a back edge):
//! `h` and the blocks dominated by `h` that reach such a predecessor without passing `h`. Headers
//! are taken inner first (reverse dominator-tree preorder), and each loop is found by a search
//! back from its back edges in which inner loops found before are collapsed into their headers
//! (union-find), so every block is visited once per loop it is the header or a direct member of.
//! The block order is a reverse post-order of a depth-first walk that, on reaching a header,
//! walks the loop's exits first: what lies beyond the loop then finishes before any block of
//! the loop does, so the loop is contiguous in reverse post-order. Unreachable blocks follow,
//! by index; they belong to no loop.
//!
//! Options: none. The function's reachable CFG must be reducible (see [`crate::verify`]): then
//! every loop is entered from outside through its header only, and the collapsed search finds all
//! of it.

use crate::cfg::DomTree;
use crate::ir::{BlockId, Function};
use petgraph::Direction;
use petgraph::visit::NodeIndexable;

/// A loop, numbered from 0 (inner loops before the loops around them).
pub type LoopId = u32;

struct Loop {
    parent: Option<LoopId>,
    /// How many loops contain this one, itself included: 1 for an outermost loop.
    depth: u32,
    /// Where the loop's subtree starts and ends in a preorder of the loop tree.
    enter: u32,
    leave: u32,
    /// The sources of the edges into the loop from outside it (one per edge).
    entries: Vec<BlockId>,
    /// The targets of the edges out of the loop (one per edge).
    exits: Vec<BlockId>,
}

/// The natural loops of a function (see the module documentation).
pub struct LoopForest {
    loops: Vec<Loop>,
    /// Per block index: its innermost loop; `None` outside every loop and for unreachable blocks.
    innermost: Vec<Option<LoopId>>,
    /// `ancestors[j][l]`: the loop `2^j` levels above `l`, or `l`'s outermost ancestor.
    ancestors: Vec<Vec<LoopId>>,
    /// Every block, each loop contiguous with its header first, unreachable blocks last.
    order: Vec<BlockId>,
}

impl LoopForest {
    pub fn new(func: &Function, dom: &DomTree) -> LoopForest {
        let bound = func.cfg.node_bound();
        let preds = |b: BlockId| func.cfg.neighbors_directed(b, Direction::Incoming);
        let mut innermost: Vec<Option<LoopId>> = vec![None; bound];
        let mut header_of: Vec<Option<LoopId>> = vec![None; bound];
        let mut loops: Vec<Loop> = Vec::new();
        // Union-find: each block's link towards the header of the outermost loop found so far
        // that contains it.
        let mut collapsed: Vec<usize> = (0..bound).collect();
        let find = |collapsed: &mut Vec<usize>, mut b: usize| {
            while collapsed[b] != b {
                collapsed[b] = collapsed[collapsed[b]];
                b = collapsed[b];
            }
            b
        };
        for &h in dom.preorder().iter().rev() {
            let mut work: Vec<BlockId> = preds(h).filter(|&p| dom.dominates(h, p)).collect();
            if work.is_empty() {
                continue;
            }
            let id = loops.len() as LoopId;
            loops.push(Loop {
                parent: None,
                depth: 0,
                enter: 0,
                leave: 0,
                entries: Vec::new(),
                exits: Vec::new(),
            });
            header_of[h.index()] = Some(id);
            innermost[h.index()] = Some(id);
            while let Some(q) = work.pop() {
                let r = find(&mut collapsed, q.index());
                if r == h.index() {
                    continue;
                }
                match header_of[r] {
                    Some(inner) => loops[inner as usize].parent = Some(id),
                    None => innermost[r] = Some(id),
                }
                collapsed[r] = h.index();
                let r = BlockId::new(r);
                work.extend(preds(r).filter(|&p| dom.dominates(h, p)));
            }
        }
        // Parents are found after their children, so outer loops have larger numbers.
        let mut children: Vec<Vec<LoopId>> = vec![Vec::new(); loops.len()];
        for l in (0..loops.len()).rev() {
            loops[l].depth = loops[l].parent.map_or(1, |p| loops[p as usize].depth + 1);
            if let Some(p) = loops[l].parent {
                children[p as usize].push(l as LoopId);
            }
        }
        let mut counter = 0;
        let mut stack: Vec<(LoopId, bool)> = (0..loops.len() as LoopId)
            .filter(|&l| loops[l as usize].parent.is_none())
            .map(|l| (l, false))
            .collect();
        while let Some((l, done)) = stack.pop() {
            if done {
                loops[l as usize].leave = counter;
                continue;
            }
            loops[l as usize].enter = counter;
            counter += 1;
            stack.push((l, true));
            stack.extend(children[l as usize].iter().map(|&c| (c, false)));
        }
        let mut ancestors = vec![
            (0..loops.len() as LoopId)
                .map(|l| loops[l as usize].parent.unwrap_or(l))
                .collect::<Vec<_>>(),
        ];
        while ancestors.len() < 32 && (1 << ancestors.len()) < loops.len() {
            let last = ancestors.last().expect("one level at least");
            let next = last.iter().map(|&a| last[a as usize]).collect();
            ancestors.push(next);
        }
        let mut forest = LoopForest {
            loops,
            innermost,
            ancestors,
            order: Vec::new(),
        };
        for b in func.blocks() {
            for s in func.cfg.neighbors(b) {
                let mut around = forest.innermost[s.index()];
                while let Some(l) = around.filter(|&l| !forest.contains(l, b)) {
                    forest.loops[l as usize].entries.push(b);
                    around = forest.loops[l as usize].parent;
                }
                let mut around = forest.innermost[b.index()];
                while let Some(l) = around.filter(|&l| !forest.contains(l, s)) {
                    forest.loops[l as usize].exits.push(s);
                    around = forest.loops[l as usize].parent;
                }
            }
        }
        forest.order = forest.block_order(func, &header_of);
        forest
    }

    /// Reverse post-order of a depth-first walk that takes a header's loop exits before its
    /// successors, then the unreachable blocks.
    fn block_order(&self, func: &Function, header_of: &[Option<LoopId>]) -> Vec<BlockId> {
        let bound = func.cfg.node_bound();
        let mut visited = vec![false; bound];
        let mut post = Vec::new();
        let next_blocks = |b: BlockId| -> Vec<BlockId> {
            let exits = header_of[b.index()].map_or(&[][..], |l| &self.loops[l as usize].exits);
            exits.iter().copied().chain(func.successors(b)).collect()
        };
        visited[func.entry.index()] = true;
        let mut stack = vec![(func.entry, next_blocks(func.entry), 0)];
        while let Some((b, next, i)) = stack.last_mut() {
            match next.get(*i) {
                Some(&s) => {
                    *i += 1;
                    if !visited[s.index()] {
                        visited[s.index()] = true;
                        stack.push((s, next_blocks(s), 0));
                    }
                }
                None => {
                    post.push(*b);
                    stack.pop();
                }
            }
        }
        post.reverse();
        post.extend(func.blocks().into_iter().filter(|b| !visited[b.index()]));
        post
    }

    /// Every block of the function, each loop contiguous with its header first, unreachable
    /// blocks last.
    pub fn order(&self) -> &[BlockId] {
        &self.order
    }

    /// The innermost loop containing `b`, if any.
    pub fn innermost(&self, b: BlockId) -> Option<LoopId> {
        self.innermost[b.index()]
    }

    /// How many loops there are: they are numbered from 0.
    pub fn len(&self) -> usize {
        self.loops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.loops.is_empty()
    }

    /// The loop immediately around loop `l`, if any.
    pub fn parent(&self, l: LoopId) -> Option<LoopId> {
        self.loops[l as usize].parent
    }

    /// Whether loop `l` contains block `b`.
    pub fn contains(&self, l: LoopId, b: BlockId) -> bool {
        self.innermost[b.index()].is_some_and(|inner| self.is_within(inner, l))
    }

    /// Whether loop `inner` is `outer` or nested in it.
    fn is_within(&self, inner: LoopId, outer: LoopId) -> bool {
        let (inner, outer) = (&self.loops[inner as usize], &self.loops[outer as usize]);
        outer.enter <= inner.enter && inner.enter < outer.leave
    }

    /// The sources of the edges into loop `l` from outside it.
    pub fn entries(&self, l: LoopId) -> &[BlockId] {
        &self.loops[l as usize].entries
    }

    /// The loop around `l` at nesting depth `depth` (at most `l`'s own).
    fn ancestor_at(&self, mut l: LoopId, depth: u32) -> LoopId {
        let mut climb = self.loops[l as usize].depth - depth;
        let mut level = 0;
        while climb > 0 {
            if climb & 1 == 1 {
                l = self.ancestors[level][l as usize];
            }
            climb >>= 1;
            level += 1;
        }
        l
    }

    /// The outermost loop containing block `b` and not block `def`, if any (with no `def`, the
    /// outermost loop containing `b`).
    pub fn outermost_without(&self, b: BlockId, def: Option<BlockId>) -> Option<LoopId> {
        let inner = self.innermost(b)?;
        let Some(other) = def.and_then(|d| self.innermost(d)) else {
            return Some(self.ancestor_at(inner, 1));
        };
        // The depth of the innermost loop containing both, by climbing from the deeper one to
        // the other's depth and then both together, the largest steps first.
        let depth = |l: LoopId| self.loops[l as usize].depth;
        let common = depth(inner).min(depth(other));
        let (mut x, mut y) = (
            self.ancestor_at(inner, common),
            self.ancestor_at(other, common),
        );
        if x == y {
            return (common < depth(inner)).then(|| self.ancestor_at(inner, common + 1));
        }
        for level in (0..self.ancestors.len()).rev() {
            let (up_x, up_y) = (
                self.ancestors[level][x as usize],
                self.ancestors[level][y as usize],
            );
            if up_x != up_y {
                (x, y) = (up_x, up_y);
            }
        }
        // `x` and `y` are now children of the common loop, or outermost loops of two trees.
        let shared = self.loops[x as usize].parent == self.loops[y as usize].parent
            && self.loops[x as usize].parent.is_some();
        Some(if shared { x } else { self.ancestor_at(x, 1) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, FuncId, Shader, Stage};

    /// Three loops nested in one another, each left by a conditional break at the top of its
    /// body: the loops nest, each is contiguous in the block order with its header first, and
    /// the outermost loop without a block is found at any depth.
    #[test]
    fn nested_loops_with_breaks() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let (mut headers, mut bodies, mut open) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..3 {
            let lp = b.push_loop();
            let cond = b.imm_bool(true);
            let nif = b.push_if(cond);
            b.break_loop(&lp);
            b.pop_if(nif);
            headers.push(lp.header);
            bodies.push(b.cursor.block);
            open.push(lp);
        }
        while let Some(lp) = open.pop() {
            b.pop_loop(lp);
        }
        b.ret(None);
        let func = &shader.functions[0];
        let forest = LoopForest::new(func, &DomTree::new(func));
        assert_eq!(forest.len(), 3);
        let loops: Vec<LoopId> = headers
            .iter()
            .map(|&h| forest.innermost(h).unwrap())
            .collect();
        for (depth, &l) in loops.iter().enumerate() {
            let at: Vec<usize> = (forest.order().iter().enumerate())
                .filter(|&(_, &b)| forest.contains(l, b))
                .map(|(i, _)| i)
                .collect();
            assert_eq!(forest.order()[at[0]], headers[depth]);
            assert_eq!(at[at.len() - 1] - at[0] + 1, at.len(), "loop {depth}");
            assert_eq!(forest.parent(l), depth.checked_sub(1).map(|d| loops[d]));
        }
        let innermost = bodies[2];
        let outermost_without = |d| forest.outermost_without(innermost, d);
        assert_eq!(outermost_without(Some(func.entry)), Some(loops[0]));
        assert_eq!(outermost_without(Some(bodies[0])), Some(loops[1]));
        assert_eq!(outermost_without(Some(bodies[2])), None);
        assert_eq!(forest.outermost_without(bodies[0], None), Some(loops[0]));
        assert_eq!(forest.entries(loops[2]), [bodies[1]]);
    }
}
