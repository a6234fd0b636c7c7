//! Out-of-SSA translation for the backends: a register for every value, and the phis replaced by
//! register copies.
//!
//! What: [`destruct`] gives every value an instruction defines a [`Reg`] and implements the phis
//! by copies at the end of their predecessors (after the instructions, before the terminator)
//! and at the top of their blocks (after the phis, before the other instructions). A backend
//! emits no code for a phi: once its block's top copies have run, the phi's value is in its
//! register. The [`Destruction`] says which register holds each value and which copies run where,
//! as sequential `(dst, src)` lists ready to emit. Registers are virtual (as many as needed,
//! each of one value shape); mapping them to hardware registers is the backend's register
//! allocation. The function itself is left as it is.
//!
//! How (Boissinot et al., "Revisiting Out-of-SSA Translation for Correctness, Code Quality, and
//! Efficiency", CGO 2009: their method I, then coalescing):
//! 1. Isolation. Each phi `p = phi(P1: s1, ..., Pn: sn)` gets a *phi register* `p'`: every `Pi`
//!    ends with the copy `p' <- si` and `p`'s block starts with `p <- p'`. The copies at the end
//!    of a block, for the phis of all its successors, are one parallel copy, and so are the
//!    copies at the top of a block. This program is already correct, because `p'` lives only
//!    from the end of a predecessor to the top of `p`'s block.
//! 2. Liveness of that program (a block's live-out is the union of its successors' live-in),
//!    of the values copies name only, each found by a backward search from its uses; and
//!    interference among them: two values interfere when one is live just after
//!    a definition of the other, except where that definition is a copy of it (Chaitin's
//!    rule: the copy holds its source's value). The destinations of one parallel copy
//!    interfere with each other, because they are written at once, unless they copy one
//!    value.
//! 3. Coalescing: the two sides of a copy share a register when no value in the class of one
//!    side interferes with a value in the class of the other side. Copies in the deepest loops
//!    go first. A copy whose two sides share a register disappears.
//! 4. Sequentialization of what remains of each parallel copy (copies of one value into one
//!    register run once): a copy can run once no pending copy still reads its destination.
//!    When only cycles are left (the swap problem), one value is saved in a fresh temporary
//!    register and its readers read it from there.
//!
//! Why: the Gen and R600 backends emit registers, and the naive translation (`p <- si` at the
//! end of each predecessor, one copy after another) is wrong in two ways (Briggs et al.,
//! "Practical Improvements to the Construction and Destruction of Static Single Assignment
//! Form", 1998). The *lost copy*: when a loop's latch also exits, the back-edge copy overwrites a
//! phi that is still used after the loop. The *swap*: phis that read each other (`a = phi(a0, b)`
//! and `b = phi(b0, a)`) need their copies done as one parallel copy. Splitting critical edges
//! is the usual cure for lost copies, but a structured CFG often cannot put a block on such an
//! edge. A do-while continue block ending in `branch %c, header, merge` must keep its edge to
//! the header, and a break `branch %c, merge, next` outside a header must target the merge
//! itself. Isolation needs no new block: `p'` interferes with everything live into the other
//! successors of a predecessor, so its copy at the end of that predecessor clobbers nothing.
//!
//! Invariants: values that interfere never share a register, so at every point a register
//! holds the value the SSA program would read from it. The values in one register have one
//! shape ([`Destruction::reg_shape`]). End copies never write the register of the terminator's
//! condition. Temporaries are fresh registers, each used in one copy sequence only. Unreachable
//! blocks get copies like any other block.
//!
//! Options: none. The function must verify (see [`crate::verify`]).

use crate::cfg::{DomTree, innermost_constructs, reverse_post_order};
use crate::ir::{BlockId, Function, InstKind, Structure, ValType, Value};
use crate::liveness::{Live, LiveRangeSearch};
use rustc_hash::{FxHashMap, FxHashSet};

/// A register of a destructed function, numbered from 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u32);

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// A function's values mapped to registers, with the copies that replace its phis.
#[derive(Clone, Debug)]
pub struct Destruction {
    /// The register of each value, by value index; `None` where no value is defined (stores,
    /// deleted instructions).
    regs: Vec<Option<Reg>>,
    /// The shape of each register, by register number.
    shapes: Vec<ValType>,
    at_start: FxHashMap<BlockId, Vec<(Reg, Reg)>>,
    at_end: FxHashMap<BlockId, Vec<(Reg, Reg)>>,
}

impl Destruction {
    /// The register holding `v`. Panics when `v` defines no value.
    pub fn reg_of(&self, v: Value) -> Reg {
        self.regs
            .get(v.index())
            .copied()
            .flatten()
            .unwrap_or_else(|| panic!("{v} defines no value"))
    }

    /// The copies `(dst, src)` to run in order at the top of `b`, before its first instruction
    /// that is not a phi.
    pub fn copies_at_start(&self, b: BlockId) -> &[(Reg, Reg)] {
        self.at_start.get(&b).map_or(&[], Vec::as_slice)
    }

    /// The copies `(dst, src)` to run in order at the end of `b`, after its last instruction and
    /// before its terminator, whichever way that goes.
    pub fn copies_at_end(&self, b: BlockId) -> &[(Reg, Reg)] {
        self.at_end.get(&b).map_or(&[], Vec::as_slice)
    }

    /// How many registers there are: they are numbered from 0.
    pub fn num_regs(&self) -> u32 {
        self.shapes.len() as u32
    }

    /// The shape of the values a register holds.
    pub fn reg_shape(&self, r: Reg) -> ValType {
        self.shapes[r.0 as usize]
    }
}

/// Gives every value of `func` a register and turns its phis into copies (see the module
/// documentation).
pub fn destruct(func: &Function) -> Destruction {
    let program = CopyProgram::isolate(func);
    let classes = program.coalesce(func);
    program.lower(func, classes)
}

/// A value of the program with copies: an SSA value (its index), or a phi register (numbered
/// after the function's instructions).
type Node = u32;

/// What one step of a block (an instruction, a parallel copy, the terminator) writes and reads.
struct Step {
    defs: Vec<Node>,
    uses: Vec<Node>,
    /// A parallel copy: `defs[i]` is a copy of `uses[i]`.
    copies: bool,
}

impl Step {
    fn parallel_copy(copies: &[(Node, Node)]) -> Step {
        Step {
            defs: copies.iter().map(|&(dst, _)| dst).collect(),
            uses: copies.iter().map(|&(_, src)| src).collect(),
            copies: true,
        }
    }

    fn inst(defs: Vec<Node>, uses: Vec<Node>) -> Step {
        Step {
            defs,
            uses,
            copies: false,
        }
    }

    /// The node the `i`th definition copies, if the step is a copy.
    fn copied(&self, i: usize) -> Option<Node> {
        self.copies.then(|| self.uses[i])
    }
}

/// The function with its phis isolated (step 1): every block as a list of steps, and the
/// parallel copies `(dst, src)` at block tops and ends.
struct CopyProgram {
    steps: FxHashMap<BlockId, Vec<Step>>,
    at_start: FxHashMap<BlockId, Vec<(Node, Node)>>,
    at_end: FxHashMap<BlockId, Vec<(Node, Node)>>,
    /// The shape of each node; `None` for instructions that define nothing.
    shapes: Vec<Option<ValType>>,
}

impl CopyProgram {
    /// Step 1: the function with a phi register for each phi and the copies that isolate it.
    fn isolate(func: &Function) -> CopyProgram {
        let mut shapes: Vec<Option<ValType>> = func
            .insts
            .iter()
            .map(|inst| inst.as_ref().and_then(|inst| inst.def))
            .collect();
        let mut phi_regs: FxHashMap<Value, Node> = FxHashMap::default();
        for v in func.all_insts() {
            if let InstKind::Phi(_) = func.inst(v).kind {
                phi_regs.insert(v, shapes.len() as Node);
                shapes.push(func.inst(v).def);
            }
        }
        let mut program = CopyProgram {
            steps: FxHashMap::default(),
            at_start: FxHashMap::default(),
            at_end: FxHashMap::default(),
            shapes,
        };
        for b in func.blocks() {
            let block = &func.cfg[b];
            let (phis, others): (Vec<Value>, Vec<Value>) = block
                .insts
                .iter()
                .copied()
                .partition(|&v| matches!(func.inst(v).kind, InstKind::Phi(_)));
            let mut steps = Vec::new();
            let top: Vec<(Node, Node)> = phis.iter().map(|&p| (p.0, phi_regs[&p])).collect();
            if !top.is_empty() {
                steps.push(Step::parallel_copy(&top));
                program.at_start.insert(b, top);
            }
            for v in others {
                steps.push(Step::inst(
                    func.inst(v).def.map(|_| v.0).into_iter().collect(),
                    func.inst_sources(v).iter().map(|s| s.0).collect(),
                ));
            }
            let mut succs = func.successors(b);
            // Both edges of a branch may reach one block; its phis have one entry for both.
            succs.sort();
            succs.dedup();
            let mut end = Vec::new();
            for s in succs {
                for &q in &func.cfg[s].insts {
                    if let InstKind::Phi(srcs) = &func.inst(q).kind
                        && let Some(&(_, src)) = srcs.iter().find(|&&(p, _)| p == b)
                    {
                        end.push((phi_regs[&q], src.0));
                    }
                }
            }
            if !end.is_empty() {
                steps.push(Step::parallel_copy(&end));
                program.at_end.insert(b, end);
            }
            if let Some(src) = block.terminator.as_ref().and_then(|t| t.src()) {
                steps.push(Step::inst(Vec::new(), vec![src.0]));
            }
            program.steps.insert(b, steps);
        }
        program
    }

    /// Step 2: the `related` nodes live at the end of each block (after its terminator), by
    /// block index, each found by a search back from its uses ([`LiveRangeSearch`]).
    fn live_out(&self, func: &Function, related: &[bool]) -> Vec<Vec<Node>> {
        let ids = func.blocks();
        let blocks = ids.last().map_or(0, |b| b.index() + 1);
        // Per node, the blocks that read it before writing it and the blocks that write it.
        let nodes = related.len();
        let (mut exposed, mut written) = (Vec::new(), Vec::new());
        let (mut exposed_in, mut written_in) = (vec![usize::MAX; nodes], vec![usize::MAX; nodes]);
        for (&b, steps) in &self.steps {
            let b = b.index();
            for step in steps {
                for &u in step.uses.iter().filter(|&&u| related[u as usize]) {
                    if written_in[u as usize] != b && exposed_in[u as usize] != b {
                        exposed_in[u as usize] = b;
                        exposed.push((u, b));
                    }
                }
                for &d in step.defs.iter().filter(|&&d| related[d as usize]) {
                    if written_in[d as usize] != b {
                        written_in[d as usize] = b;
                        written.push((d, b));
                    }
                }
            }
        }
        exposed.sort_unstable();
        written.sort_unstable();
        let blocks_of = |pairs: &[(Node, usize)], node: Node| {
            let from = pairs.partition_point(|&(n, _)| n < node);
            let to = pairs.partition_point(|&(n, _)| n <= node);
            pairs[from..to].iter().map(|&(_, b)| b).collect::<Vec<_>>()
        };
        let mut search = LiveRangeSearch::over_blocks(func);
        let mut result = vec![Vec::new(); blocks];
        for node in (0..nodes as Node).filter(|&n| related[n as usize]) {
            let (exposed, written) = (blocks_of(&exposed, node), blocks_of(&written, node));
            search.search(exposed, written, |live| {
                if let Live::Out(b) = live {
                    result[b].push(node);
                }
            });
        }
        result
    }

    /// The pairs of nodes (smaller first) that interfere, among the `related` nodes (the only
    /// ones coalescing asks about): a walk back through each block from its live-out set pairs
    /// every definition with what is live just after it and with the other destinations of its
    /// step.
    fn interference(&self, live_out: &[Vec<Node>], related: &[bool]) -> FxHashSet<(Node, Node)> {
        let is_related = |n: &Node| related[*n as usize];
        let mut pairs = FxHashSet::default();
        for (b, steps) in &self.steps {
            let mut live: FxHashSet<Node> = live_out[b.index()].iter().copied().collect();
            for step in steps.iter().rev() {
                for (i, &d) in step.defs.iter().enumerate() {
                    if !is_related(&d) {
                        continue;
                    }
                    // A copy holds its source's value: it may share a register with the
                    // source, or with another copy of it, even where both live on (Chaitin's
                    // rule). Every other definition of either still interferes with what is
                    // live there.
                    let source = step.copied(i);
                    let same_value: Vec<Node> = (0..step.defs.len())
                        .filter(|&j| source.is_some() && step.copied(j) == source)
                        .map(|j| step.defs[j])
                        .chain(source)
                        .collect();
                    for &x in live.iter().chain(&step.defs) {
                        if x != d && is_related(&x) && !same_value.contains(&x) {
                            pairs.insert(ordered(d, x));
                        }
                    }
                }
                for d in &step.defs {
                    live.remove(d);
                }
                live.extend(step.uses.iter().filter(|u| is_related(u)));
            }
        }
        pairs
    }

    /// Step 3: the classes of nodes that share a register, built by coalescing the copies of
    /// the deepest loops first, then in block order.
    fn coalesce(&self, func: &Function) -> Classes {
        let depths = loop_depths(func);
        let mut copies: Vec<(usize, Node, Node)> = Vec::new();
        for b in func.blocks() {
            let depth = depths.get(&b).copied().unwrap_or(0);
            for parallel in [self.at_start.get(&b), self.at_end.get(&b)] {
                let parallel = parallel.map_or(&[][..], Vec::as_slice);
                copies.extend(parallel.iter().map(|&(dst, src)| (depth, dst, src)));
            }
        }
        let mut related = vec![false; self.shapes.len()];
        for &(_, dst, src) in &copies {
            related[dst as usize] = true;
            related[src as usize] = true;
        }
        let interfering = self.interference(&self.live_out(func, &related), &related);
        // Stable, so copies at one depth keep block order.
        copies.sort_by_key(|&(depth, _, _)| std::cmp::Reverse(depth));
        let mut classes = Classes::new(self.shapes.len());
        for (_, dst, src) in copies {
            let (a, b) = (classes.find(dst), classes.find(src));
            if a != b && !classes.interfere(a, b, &interfering) {
                classes.union(a, b);
            }
        }
        classes
    }

    /// Step 4: a register per class, numbered in the order values and then copies name them,
    /// and each parallel copy as sequential copies of registers.
    fn lower(&self, func: &Function, mut classes: Classes) -> Destruction {
        let mut shapes = Vec::new();
        let mut class_regs: FxHashMap<Node, Reg> = FxHashMap::default();
        let mut reg_of = |node: Node, shapes: &mut Vec<ValType>| {
            let shape = self.shapes[node as usize].expect("a node with a register has a shape");
            *class_regs.entry(classes.find(node)).or_insert_with(|| {
                shapes.push(shape);
                Reg(shapes.len() as u32 - 1)
            })
        };
        let regs = (0..func.insts.len())
            .map(|v| self.shapes[v].map(|_| reg_of(v as Node, &mut shapes)))
            .collect();
        let mut at_start = FxHashMap::default();
        let mut at_end = FxHashMap::default();
        for b in func.blocks() {
            for (nodes, lowered) in [
                (self.at_start.get(&b), &mut at_start),
                (self.at_end.get(&b), &mut at_end),
            ] {
                let Some(nodes) = nodes else {
                    continue;
                };
                let mut parallel: Vec<(Reg, Reg)> = Vec::new();
                for &(dst, src) in nodes {
                    let copy = (reg_of(dst, &mut shapes), reg_of(src, &mut shapes));
                    // Copies of one value into one register (phi registers coalesced) run once.
                    if copy.0 != copy.1 && !parallel.contains(&copy) {
                        parallel.push(copy);
                    }
                }
                let sequential = sequentialize(parallel, |saved| {
                    shapes.push(shapes[saved.0 as usize]);
                    Reg(shapes.len() as u32 - 1)
                });
                if !sequential.is_empty() {
                    lowered.insert(b, sequential);
                }
            }
        }
        Destruction {
            regs,
            shapes,
            at_start,
            at_end,
        }
    }
}

fn ordered(a: Node, b: Node) -> (Node, Node) {
    (a.min(b), a.max(b))
}

/// Union-find over nodes, with the members of each class at its root.
struct Classes {
    parent: Vec<Node>,
    members: Vec<Vec<Node>>,
}

impl Classes {
    fn new(n: usize) -> Classes {
        Classes {
            parent: (0..n as Node).collect(),
            members: (0..n as Node).map(|x| vec![x]).collect(),
        }
    }

    fn find(&mut self, mut x: Node) -> Node {
        while self.parent[x as usize] != x {
            let grandparent = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grandparent;
            x = grandparent;
        }
        x
    }

    /// Whether a value of class `a` interferes with a value of class `b` (classes given by their
    /// roots).
    fn interfere(&self, a: Node, b: Node, pairs: &FxHashSet<(Node, Node)>) -> bool {
        let members = |root: Node| &self.members[root as usize];
        members(a)
            .iter()
            .any(|&x| members(b).iter().any(|&y| pairs.contains(&ordered(x, y))))
    }

    /// Merges two classes given by their roots, the smaller into the larger.
    fn union(&mut self, a: Node, b: Node) {
        let (big, small) = if self.members[a as usize].len() >= self.members[b as usize].len() {
            (a, b)
        } else {
            (b, a)
        };
        self.parent[small as usize] = big;
        let moved = std::mem::take(&mut self.members[small as usize]);
        self.members[big as usize].extend(moved);
    }
}

/// How many loops contain each reachable block, a loop header counting as inside its loop (its
/// top copies run on every iteration). The loops around a block are those around its innermost
/// construct's header, which counts itself: in reverse post-order the header comes first.
fn loop_depths(func: &Function) -> FxHashMap<BlockId, usize> {
    let innermost = innermost_constructs(func, &DomTree::new(func));
    let is_loop = |h: BlockId| matches!(func.cfg[h].structure, Some(Structure::Loop { .. }));
    let mut depths: FxHashMap<BlockId, usize> = FxHashMap::default();
    for b in reverse_post_order(func) {
        let around = innermost
            .get(&b)
            .copied()
            .flatten()
            .map_or(0, |h| depths[&h]);
        depths.insert(b, around + usize::from(is_loop(b)));
    }
    depths
}

/// Orders a parallel copy (distinct destinations, no copy of a register to itself) as
/// sequential copies with the same effect. A copy can run once no pending copy reads its
/// destination. When none can, every destination is read by exactly one pending copy, so the
/// pending copies are cycles of registers: saving one register of a cycle in a temporary from
/// `temp` (given the register it will hold) and reading it from there frees the copy that
/// writes that register.
fn sequentialize(
    mut pending: Vec<(Reg, Reg)>,
    mut temp: impl FnMut(Reg) -> Reg,
) -> Vec<(Reg, Reg)> {
    debug_assert!(pending.iter().all(|(dst, src)| dst != src));
    let mut sequential = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let free = pending
            .iter()
            .position(|&(dst, _)| pending.iter().all(|&(_, src)| src != dst));
        match free {
            Some(i) => sequential.push(pending.remove(i)),
            None => {
                let saved = pending[0].1;
                let t = temp(saved);
                sequential.push((t, saved));
                for (_, src) in &mut pending {
                    if *src == saved {
                        *src = t;
                    }
                }
            }
        }
    }
    sequential
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs copies on registers that start as `r_i = 100 + i`: all reads first when
    /// `parallel`, else one copy after another.
    fn run(copies: &[(Reg, Reg)], regs: usize, parallel: bool) -> Vec<u32> {
        let mut file: Vec<u32> = (0..regs as u32).map(|i| 100 + i).collect();
        let before = file.clone();
        for &(dst, src) in copies {
            let read = if parallel { &before } else { &file };
            file[dst.0 as usize] = read[src.0 as usize];
        }
        file
    }

    /// Sequentializes `parallel` with temporaries numbered from `regs` and checks it against
    /// the parallel semantics on the original registers; returns how many temporaries it took.
    fn check(parallel: &[(u32, u32)], regs: u32) -> u32 {
        let parallel: Vec<(Reg, Reg)> = parallel.iter().map(|&(d, s)| (Reg(d), Reg(s))).collect();
        let mut next = regs;
        let sequential = sequentialize(parallel.clone(), |_| {
            next += 1;
            Reg(next - 1)
        });
        let expected = run(&parallel, regs as usize, true);
        let got = run(&sequential, next as usize, false);
        assert_eq!(&got[..regs as usize], expected, "{sequential:?}");
        next - regs
    }

    #[test]
    fn sequential_copies_match_the_parallel_copy() {
        // The swap problem. Copying in the given order, `r0 <- r1; r1 <- r0`, would leave both
        // registers with r1's value: a cycle needs a temporary.
        assert_eq!(check(&[(0, 1), (1, 0)], 2), 1);
        // A rotation, a chain that must run from its end, and a fan-out from a cycle.
        assert_eq!(check(&[(0, 1), (1, 2), (2, 0)], 3), 1);
        assert_eq!(check(&[(1, 0), (2, 1), (3, 2)], 4), 0);
        assert_eq!(check(&[(0, 1), (1, 0), (2, 0), (3, 1)], 4), 1);
        // Two cycles and a chain hanging off one of them.
        assert_eq!(
            check(&[(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (5, 4)], 6),
            2
        );
    }
}
