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
//! 2. Liveness of that program, of the values copies name only: where each is live, as ranges
//!    of *points* (the point after each step, numbered block after block in an order that keeps
//!    every loop contiguous), found by a backward search from its uses that takes a whole loop
//!    at once when the loop holds no write of the value. Interference among them: two values
//!    interfere when one is live just after a definition of the other, except where that
//!    definition is a copy of it (Chaitin's rule: the copy holds its source's value). The
//!    destinations of one parallel copy interfere with each other, because they are written at
//!    once, unless they copy one value.
//! 3. Coalescing: the two sides of a copy share a register when no value in the class of one
//!    side interferes with a value in the class of the other side. Copies in the deepest loops
//!    go first. A copy whose two sides share a register disappears. Each class keeps where its
//!    members are written and, in disjoint segments of points, which are live: two classes are
//!    compared by looking up the smaller one's writes in the other's segments and its segments
//!    in the other's writes, so neither the interfering pairs nor each block's live values are
//!    ever listed (values live across nested loops make them quadratic in the depth).
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
use crate::loops::{LoopForest, LoopId};
use petgraph::visit::NodeIndexable;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

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

    /// Step 2: where each `related` node is live, as ranges of points (see [`Points`]). A node
    /// is live into the blocks from which a path reaches a read of it before any write of it,
    /// found by a search back from those reads (as [`crate::liveness`] does), and out of their
    /// predecessors. When the search reaches a loop that holds no write of the node, the node is
    /// live at every point of the loop (its blocks are strongly connected): the search records
    /// the loop and goes on from the loop's entries, without visiting its blocks. So a value
    /// live across nested loops costs one range and one step per loop level it is live out of,
    /// not one per block.
    fn live_ranges(
        &self,
        func: &Function,
        related: &[bool],
        forest: &LoopForest,
        points: &Points,
    ) -> Vec<Ranges> {
        let bound = func.cfg.node_bound();
        let mut predecessors: Vec<Vec<BlockId>> = vec![Vec::new(); bound];
        for b in func.blocks() {
            for s in func.cfg.neighbors(b) {
                predecessors[s.index()].push(b);
            }
        }
        let occurrences = self.occurrences(func, related);
        // Marks of the search of one node: the node's number plus one (0: none yet).
        let (mut live_in, mut live_out) = (vec![0; bound], vec![0; bound]);
        let (mut defines, mut occurs) = (vec![0; bound], vec![0; bound]);
        let mut whole = vec![0; forest.len()];
        let mut work: Vec<BlockId> = Vec::new();
        let mut ranges = vec![Vec::new(); related.len()];
        for (node, occurrences) in occurrences.iter().enumerate() {
            if occurrences.is_empty() {
                continue;
            }
            let mark = node + 1;
            let by_block: Vec<&[(BlockId, u32, Occurrence)]> =
                occurrences.chunk_by(|x, y| x.0 == y.0).collect();
            let mut written = Vec::new();
            for block in &by_block {
                let b = block[0].0;
                occurs[b.index()] = mark;
                if block.iter().any(|o| matches!(o.2, Occurrence::Def { .. })) {
                    defines[b.index()] = mark;
                    written.push(b);
                }
                if block[0].2 == Occurrence::Use {
                    live_in[b.index()] = mark;
                    work.push(b);
                }
            }
            // The loop whose points all hold the node once it is live into `b`: the outermost
            // one around `b` with no write of the node (a node written in several blocks is a
            // phi register, live only across the edges into its phi's block).
            let loop_without_writes = |b: BlockId| match written[..] {
                [] => forest.outermost_without(b, None),
                [d] => forest.outermost_without(b, Some(d)),
                _ => None,
            };
            let mut outs = Vec::new();
            let mut loops = Vec::new();
            while let Some(b) = work.pop() {
                let preds = match loop_without_writes(b) {
                    Some(l) if whole[l as usize] == mark => continue,
                    Some(l) => {
                        whole[l as usize] = mark;
                        loops.push(l);
                        forest.entries(l)
                    }
                    None => &predecessors[b.index()][..],
                };
                for &p in preds {
                    if live_out[p.index()] == mark {
                        continue;
                    }
                    live_out[p.index()] = mark;
                    outs.push(p);
                    if defines[p.index()] != mark && live_in[p.index()] != mark {
                        live_in[p.index()] = mark;
                        work.push(p);
                    }
                }
            }
            let mut found: Ranges = loops.iter().filter_map(|&l| points.of_loop(l)).collect();
            for block in &by_block {
                let b = block[0].0;
                points.within_block(b, block, live_out[b.index()] == mark, &mut found);
            }
            for b in outs.into_iter().filter(|b| occurs[b.index()] != mark) {
                found.extend(points.of_block(b));
            }
            ranges[node] = merged(found);
        }
        ranges
    }

    /// Where each `related` node is read and written: `(block, step, what)` in block order, step
    /// by step, a step's reads before its writes.
    fn occurrences(
        &self,
        func: &Function,
        related: &[bool],
    ) -> Vec<Vec<(BlockId, u32, Occurrence)>> {
        let mut occurrences = vec![Vec::new(); related.len()];
        for b in func.blocks() {
            for (i, step) in self.steps[&b].iter().enumerate() {
                for &u in step.uses.iter().filter(|&&u| related[u as usize]) {
                    occurrences[u as usize].push((b, i as u32, Occurrence::Use));
                }
                for (j, &d) in step.defs.iter().enumerate() {
                    if related[d as usize] {
                        let source = step.copied(j);
                        occurrences[d as usize].push((b, i as u32, Occurrence::Def { source }));
                    }
                }
            }
        }
        occurrences
    }

    /// Step 3: the classes of nodes that share a register, built by coalescing the copies of
    /// the deepest loops first, then in block order.
    fn coalesce(&self, func: &Function) -> Classes {
        let dom = DomTree::new(func);
        let copies = self.copies_in_order(func, &dom);
        let mut classes = self.singleton_classes(func, &dom, &self.related(&copies));
        for (dst, src) in copies {
            let (a, b) = (classes.find(dst), classes.find(src));
            if a != b && !classes.interfere(a, b) {
                classes.union(a, b);
            }
        }
        classes
    }

    /// The copies `(dst, src)` in the order coalescing takes them: the deepest loops first,
    /// then block order.
    fn copies_in_order(&self, func: &Function, dom: &DomTree) -> Vec<(Node, Node)> {
        let depths = loop_depths(func, dom);
        let mut copies: Vec<(usize, Node, Node)> = Vec::new();
        for b in func.blocks() {
            let depth = depths.get(&b).copied().unwrap_or(0);
            for parallel in [self.at_start.get(&b), self.at_end.get(&b)] {
                let parallel = parallel.map_or(&[][..], Vec::as_slice);
                copies.extend(parallel.iter().map(|&(dst, src)| (depth, dst, src)));
            }
        }
        // Stable, so copies at one depth keep block order.
        copies.sort_by_key(|&(depth, _, _)| std::cmp::Reverse(depth));
        copies.into_iter().map(|(_, dst, src)| (dst, src)).collect()
    }

    /// Which nodes `copies` name: the only ones coalescing asks about.
    fn related(&self, copies: &[(Node, Node)]) -> Vec<bool> {
        let mut related = vec![false; self.shapes.len()];
        for &(dst, src) in copies {
            related[dst as usize] = true;
            related[src as usize] = true;
        }
        related
    }

    /// Every node in a class of its own, with where the `related` ones are written and live.
    fn singleton_classes(&self, func: &Function, dom: &DomTree, related: &[bool]) -> Classes {
        let forest = LoopForest::new(func, dom);
        let points = Points::new(self, &forest, func);
        let ranges = self.live_ranges(func, related, &forest, &points);
        let mut classes = Classes::new(self.shapes.len());
        for (node, ranges) in ranges.into_iter().enumerate() {
            let live = ranges
                .into_iter()
                .map(|(from, to)| (from, Segment::new(to, node as Node)));
            classes.data[node].live = live.collect();
        }
        for b in func.blocks() {
            for (i, step) in self.steps[&b].iter().enumerate() {
                for (j, &d) in step.defs.iter().enumerate() {
                    if related[d as usize] {
                        let def = Def {
                            source: step.copied(j),
                            members: vec![d],
                        };
                        classes.data[d as usize]
                            .defs
                            .insert(points.after(b, i), def);
                    }
                }
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
                let mut seen = FxHashSet::default();
                for &(dst, src) in nodes {
                    let copy = (reg_of(dst, &mut shapes), reg_of(src, &mut shapes));
                    // Copies of one value into one register (phi registers coalesced) run once.
                    if copy.0 != copy.1 && seen.insert(copy) {
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

/// A point of the copy program: just after one of its steps. Points are numbered block after
/// block in the order of a [`LoopForest`], so the points of a loop are one range.
type Point = u32;

/// Inclusive ranges of points, sorted, disjoint and not adjacent.
type Ranges = Vec<(Point, Point)>;

/// What a step does with a node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Occurrence {
    Use,
    /// A write, a copy of `source` when the step is a copy.
    Def {
        source: Option<Node>,
    },
}

/// The numbering of points.
struct Points {
    /// Per block index: the number of the point after its first step, and how many steps it has.
    blocks: Vec<(Point, u32)>,
    /// Per loop: its points, if it has any.
    loops: Vec<Option<(Point, Point)>>,
}

impl Points {
    fn new(program: &CopyProgram, forest: &LoopForest, func: &Function) -> Points {
        let mut blocks = vec![(0, 0); func.cfg.node_bound()];
        let mut next = 0;
        for &b in forest.order() {
            let steps = program.steps[&b].len() as u32;
            blocks[b.index()] = (next, steps);
            next += steps;
        }
        let mut points = Points {
            blocks,
            loops: vec![None; forest.len()],
        };
        for &b in forest.order() {
            if let (Some(range), Some(l)) = (points.of_block(b), forest.innermost(b)) {
                points.loops[l as usize] = Some(hull(points.loops[l as usize], range));
            }
        }
        // Inner loops are numbered before the loops around them.
        for l in 0..forest.len() as LoopId {
            if let (Some(range), Some(parent)) = (points.loops[l as usize], forest.parent(l)) {
                points.loops[parent as usize] = Some(hull(points.loops[parent as usize], range));
            }
        }
        points
    }

    /// The point after step `i` of block `b`.
    fn after(&self, b: BlockId, i: usize) -> Point {
        self.blocks[b.index()].0 + i as Point
    }

    /// The points of block `b`, if it has any.
    fn of_block(&self, b: BlockId) -> Option<(Point, Point)> {
        let (first, steps) = self.blocks[b.index()];
        (steps > 0).then(|| (first, first + steps - 1))
    }

    /// The points of loop `l`, if it has any: one range, as the loop is contiguous.
    fn of_loop(&self, l: LoopId) -> Option<(Point, Point)> {
        self.loops[l as usize]
    }

    /// Adds to `ranges` the points of block `b` where a node is live, given the node's
    /// `occurrences` in `b` (by step) and whether it is live out of `b`: a node is live after a
    /// step when the next step that names it reads it, or when none does and it is live out.
    fn within_block(
        &self,
        b: BlockId,
        occurrences: &[(BlockId, u32, Occurrence)],
        live_out: bool,
        ranges: &mut Ranges,
    ) {
        let (first, steps) = self.blocks[b.index()];
        let mut live = live_out;
        let mut top = steps.checked_sub(1).filter(|_| live);
        for step in occurrences.chunk_by(|x, y| x.1 == y.1).rev() {
            let at = step[0].1;
            let reads = step.iter().any(|o| o.2 == Occurrence::Use);
            let writes = step.iter().any(|o| o.2 != Occurrence::Use);
            let live_before = reads || (live && !writes);
            match (live, live_before) {
                (true, false) => {
                    let top = top.take().expect("a live run has a top");
                    ranges.push((first + at, first + top));
                }
                (false, true) => top = at.checked_sub(1),
                _ => {}
            }
            live = live_before;
        }
        if let Some(top) = top {
            ranges.push((first, first + top));
        }
    }
}

/// The smallest range holding `range` and `hull`, if any.
fn hull(hull: Option<(Point, Point)>, range: (Point, Point)) -> (Point, Point) {
    hull.map_or(range, |(from, to)| (from.min(range.0), to.max(range.1)))
}

/// The union of `ranges` (in any order) as sorted disjoint ranges, adjacent ones joined.
fn merged(mut ranges: Ranges) -> Ranges {
    ranges.sort_unstable();
    let mut union: Ranges = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        match union.last_mut() {
            Some(last) if from <= last.1.saturating_add(1) => last.1 = last.1.max(to),
            _ => union.push((from, to)),
        }
    }
    union
}

/// A point where members of a class are written: the members the step writes, and what they
/// copy if the step is a copy. Members written by one step copy one source: copies of two
/// sources interfere.
struct Def {
    source: Option<Node>,
    members: Vec<Node>,
}

/// A range of points (from its key in [`ClassData::live`] to `end`) where the same members of a
/// class are live.
struct Segment {
    end: Point,
    members: Vec<Node>,
}

impl Segment {
    fn new(end: Point, member: Node) -> Segment {
        Segment {
            end,
            members: vec![member],
        }
    }
}

/// Where the members of a class are written, and where they are live, in disjoint segments.
#[derive(Default)]
struct ClassData {
    defs: BTreeMap<Point, Def>,
    live: BTreeMap<Point, Segment>,
}

impl ClassData {
    fn size(&self) -> usize {
        self.defs.len() + self.live.len()
    }

    /// The members live at point `p`.
    fn live_at(&self, p: Point) -> &[Node] {
        match self.live.range(..=p).next_back() {
            Some((_, segment)) if segment.end >= p => &segment.members,
            _ => &[],
        }
    }

    /// Whether a member of this class interferes with a member of `other`: whether a member of
    /// one is written where a member of the other is live, or written by the same step, without
    /// holding its value (it holds it when it copies that member, or copies the same source in
    /// the same parallel copy). Costs a logarithmic search per write and segment of this class,
    /// plus one per write of `other` in a segment of this class that copies its member.
    fn interferes_with(&self, other: &ClassData) -> bool {
        // Written here, live or written there.
        for (p, def) in &self.defs {
            let others = other.defs.get(p);
            if others.is_some_and(|o| o.source != def.source) {
                return true;
            }
            // Excluded: the source of the copy, and its other copies in the same step.
            let same_value = |y: Node| {
                def.source == Some(y)
                    || others.is_some_and(|o| o.source == def.source && o.members.contains(&y))
            };
            if other.live_at(*p).iter().any(|&y| !same_value(y)) {
                return true;
            }
        }
        // Live here, written there.
        for (&from, segment) in &self.live {
            for (p, def) in other.defs.range(from..=segment.end) {
                let mine = self.defs.get(p);
                let same_value = |y: Node| {
                    def.source == Some(y)
                        || mine.is_some_and(|m| m.source == def.source && m.members.contains(&y))
                };
                if segment.members.iter().any(|&y| !same_value(y)) {
                    return true;
                }
            }
        }
        false
    }

    /// Adds the writes and live ranges of another class.
    fn absorb(&mut self, other: ClassData) {
        for (p, def) in other.defs {
            match self.defs.entry(p) {
                Entry::Occupied(mut entry) => entry.get_mut().members.extend(def.members),
                Entry::Vacant(entry) => {
                    entry.insert(def);
                }
            }
        }
        for (from, segment) in other.live {
            self.add_live(from, segment.end, &segment.members);
        }
    }

    /// Adds `members` as live from point `from` to point `to`, splitting the segments there.
    fn add_live(&mut self, from: Point, to: Point, members: &[Node]) {
        self.split_at(from);
        if let Some(after) = to.checked_add(1) {
            self.split_at(after);
        }
        let starts: Vec<Point> = self.live.range(from..=to).map(|(&p, _)| p).collect();
        let mut next = from;
        for start in starts {
            if next < start {
                let gap = Segment {
                    end: start - 1,
                    members: members.to_vec(),
                };
                self.live.insert(next, gap);
            }
            let segment = self.live.get_mut(&start).expect("a segment starts there");
            segment.members.extend_from_slice(members);
            next = segment.end + 1;
        }
        if next <= to {
            let rest = Segment {
                end: to,
                members: members.to_vec(),
            };
            self.live.insert(next, rest);
        }
    }

    /// Makes a segment start at point `p` if one holds `p`.
    fn split_at(&mut self, p: Point) {
        if let Some((&start, segment)) = self.live.range_mut(..p).next_back()
            && segment.end >= p
        {
            let tail = Segment {
                end: segment.end,
                members: segment.members.clone(),
            };
            segment.end = p - 1;
            debug_assert!(start < p);
            self.live.insert(p, tail);
        }
    }
}

/// Union-find over nodes, with where each class is written and live at its root.
struct Classes {
    parent: Vec<Node>,
    data: Vec<ClassData>,
}

impl Classes {
    fn new(n: usize) -> Classes {
        Classes {
            parent: (0..n as Node).collect(),
            data: (0..n).map(|_| ClassData::default()).collect(),
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
    /// roots), found from the smaller class's writes and segments.
    fn interfere(&self, a: Node, b: Node) -> bool {
        let (a, b) = (&self.data[a as usize], &self.data[b as usize]);
        let (small, big) = if a.size() <= b.size() { (a, b) } else { (b, a) };
        small.interferes_with(big)
    }

    /// Merges two classes given by their roots, the smaller into the larger.
    fn union(&mut self, a: Node, b: Node) {
        let (big, small) = if self.data[a as usize].size() >= self.data[b as usize].size() {
            (a, b)
        } else {
            (b, a)
        };
        self.parent[small as usize] = big;
        let moved = std::mem::take(&mut self.data[small as usize]);
        self.data[big as usize].absorb(moved);
    }
}

/// How many loops contain each reachable block, a loop header counting as inside its loop (its
/// top copies run on every iteration). The loops around a block are those around its innermost
/// construct's header, which counts itself: in reverse post-order the header comes first.
fn loop_depths(func: &Function, dom: &DomTree) -> FxHashMap<BlockId, usize> {
    let innermost = innermost_constructs(func, dom);
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
/// sequential copies with the same effect, in time linear in the copies. A copy can run once no
/// pending copy still needs the value its destination holds. Where each source's value is now is
/// tracked: once a copy has moved a register's value into its destination, the copies still
/// reading that value read it there, and the register is free to be written. When no copy can
/// run, the pending copies are cycles of registers: saving one register of a cycle in a
/// temporary from `temp` (given the register it will hold) frees the copy that writes it.
fn sequentialize(parallel: Vec<(Reg, Reg)>, mut temp: impl FnMut(Reg) -> Reg) -> Vec<(Reg, Reg)> {
    debug_assert!(parallel.iter().all(|(dst, src)| dst != src));
    let mut source: FxHashMap<Reg, Reg> = parallel.iter().copied().collect();
    debug_assert_eq!(source.len(), parallel.len(), "destinations are distinct");
    let mut location: FxHashMap<Reg, Reg> = parallel.iter().map(|&(_, src)| (src, src)).collect();
    // Destinations no copy reads, first copy first.
    let mut ready: Vec<Reg> = (parallel.iter().rev())
        .filter(|(dst, _)| !location.contains_key(dst))
        .map(|&(dst, _)| dst)
        .collect();
    let mut cycle_starts = parallel.iter().map(|&(dst, _)| dst);
    let mut sequential = Vec::with_capacity(parallel.len());
    loop {
        while let Some(dst) = ready.pop() {
            let src = source.remove(&dst).expect("a ready copy is pending");
            let at = location[&src];
            sequential.push((dst, at));
            location.insert(src, dst);
            if at == src && source.contains_key(&src) {
                ready.push(src);
            }
        }
        let Some(dst) = cycle_starts.find(|dst| source.contains_key(dst)) else {
            return sequential;
        };
        // A pending copy that is not ready is on a cycle, and its destination still holds
        // its own value.
        let saved = temp(dst);
        sequential.push((saved, dst));
        location.insert(dst, saved);
        ready.push(dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::liveness::{Live, LiveRangeSearch};
    use crate::random_program::{random_program, simplify};

    // The interference coalescing first used, kept as the reference: every pair of related
    // nodes that interferes, from each block's live-out nodes and a walk back through it.

    /// The `related` nodes live at the end of each block (after its terminator), by
    /// block index, each found by a search back from its uses ([`LiveRangeSearch`]).
    fn live_out(program: &CopyProgram, func: &Function, related: &[bool]) -> Vec<Vec<Node>> {
        let ids = func.blocks();
        let blocks = ids.last().map_or(0, |b| b.index() + 1);
        // Per node, the blocks that read it before writing it and the blocks that write it.
        let nodes = related.len();
        let (mut exposed, mut written) = (Vec::new(), Vec::new());
        let (mut exposed_in, mut written_in) = (vec![usize::MAX; nodes], vec![usize::MAX; nodes]);
        for (&b, steps) in &program.steps {
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
    fn interference(
        program: &CopyProgram,
        live_out: &[Vec<Node>],
        related: &[bool],
    ) -> FxHashSet<(Node, Node)> {
        let is_related = |n: &Node| related[*n as usize];
        let mut pairs = FxHashSet::default();
        for (b, steps) in &program.steps {
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
                            pairs.insert((d.min(x), d.max(x)));
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

    /// Checks, on the entry function of `shader`, the interference of classes against the
    /// reference pairs: for every two related nodes alone, and for the classes of every copy
    /// as coalescing meets it (a member of one class interferes with a member of the other).
    fn check_interference(shader: &crate::ir::Shader) {
        let func = shader.entry_function();
        let program = CopyProgram::isolate(func);
        let dom = DomTree::new(func);
        let copies = program.copies_in_order(func, &dom);
        let related = program.related(&copies);
        let pairs = interference(&program, &live_out(&program, func, &related), &related);
        let mut classes = program.singleton_classes(func, &dom, &related);
        let nodes: Vec<Node> = (0..related.len() as Node)
            .filter(|&n| related[n as usize])
            .collect();
        for &x in &nodes {
            for &y in nodes.iter().filter(|&&y| y > x) {
                let expected = pairs.contains(&(x, y));
                assert_eq!(classes.interfere(x, y), expected, "{x} and {y}");
            }
        }
        let mut members: Vec<Vec<Node>> = (0..related.len() as Node).map(|n| vec![n]).collect();
        for (dst, src) in copies {
            let (a, b) = (classes.find(dst), classes.find(src));
            let expected = a != b
                && members[a as usize].iter().any(|&x| {
                    members[b as usize]
                        .iter()
                        .any(|&y| pairs.contains(&(x.min(y), x.max(y))))
                });
            assert_eq!(
                a != b && classes.interfere(a, b),
                expected,
                "copy {dst} <- {src}"
            );
            if a != b && !expected {
                classes.union(a, b);
                let root = classes.find(a);
                let moved: Vec<Node> = [a, b]
                    .into_iter()
                    .filter(|&r| r != root)
                    .flat_map(|r| std::mem::take(&mut members[r as usize]))
                    .collect();
                members[root as usize].extend(moved);
            }
        }
    }

    #[test]
    fn interference_of_classes_matches_the_pairs_of_nodes() {
        for seed in 0..300 {
            let mut shader = random_program(seed, 40);
            check_interference(&shader);
            simplify(&mut shader).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            check_interference(&shader);
        }
    }

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
        // Copying r0 out of the cycle first frees it, and r3 then reads r1's value in r0.
        assert_eq!(check(&[(0, 1), (1, 0), (2, 0), (3, 1)], 4), 0);
        // Two cycles and a chain hanging off one of them, which frees that cycle: only the
        // other needs a temporary.
        assert_eq!(
            check(&[(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (5, 4)], 6),
            1
        );
    }

    /// Random parallel copies: a destination per register at most, sources anywhere, and
    /// exactly one temporary per cycle of copies no copy leaves.
    #[test]
    fn random_parallel_copies_match_their_sequential_order() {
        let mut rng = crate::rng::Rng::new(7);
        for _ in 0..2000 {
            let regs = 1 + rng.below(12) as u32;
            let mut parallel = Vec::new();
            for dst in 0..regs {
                let src = rng.below(regs as usize) as u32;
                if src != dst && rng.below(4) != 0 {
                    parallel.push((dst, src));
                }
            }
            // Cycles none of whose registers a copy outside the cycle reads need a temporary
            // each: walk back from each destination, and count a cycle at its smallest register.
            let source: FxHashMap<u32, u32> = parallel.iter().copied().collect();
            let readers = |r: u32| parallel.iter().filter(|&&(_, src)| src == r).count();
            let mut closed_cycles = 0;
            for &(start, _) in &parallel {
                let mut members = vec![start];
                while let Some(&src) = source.get(members.last().expect("one")) {
                    if src == start {
                        let counted = members.iter().min() == Some(&start);
                        let closed = members.iter().all(|&m| readers(m) == 1);
                        closed_cycles += usize::from(counted && closed);
                        break;
                    }
                    if members.contains(&src) {
                        break;
                    }
                    members.push(src);
                }
            }
            assert_eq!(
                check(&parallel, regs) as usize,
                closed_cycles,
                "{parallel:?}"
            );
        }
    }
}
