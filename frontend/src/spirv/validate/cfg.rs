//! Structured control flow: each function's blocks form the nested constructs SPIR-V's
//! structured control flow requires.
//!
//! What: over the blocks reachable from the function's first, with their structural dominators
//! (dominance where each header also branches to its merge block and continue target): a block
//! is the merge block of at most one header and the continue target of at most one loop; a
//! header dominates its merge block and a loop header its continue target; a block comes after
//! its dominator in the function; every back edge (to a block that dominates its source) goes
//! from a loop's continue construct to its header, one per loop; a branch into a construct goes
//! to its header (its continue target, for a continue construct), and a branch out of one goes
//! to its merge block or, from inside a loop, to the loop's merge block or continue target (a
//! break or continue), or from inside a switch to the switch's merge block.
//!
//! Why: the translator turns merge instructions into the IR's structure annotations and the
//! passes that follow (structurizing, loop unrolling, if-conversion) assume properly nested
//! single-entry constructs; a branch into the middle of one would be translated into a
//! control flow graph the annotations misdescribe.
//!
//! How: constructs are sets of blocks given by dominance (a header's construct is what it
//! dominates, less what its merge block dominates; a continue construct what the continue
//! target dominates, within the loop). Each block's innermost construct is found in dominator
//! tree order by leaving constructs that do not hold it, so each edge is checked against the
//! constructs it enters or leaves only (a break or continue finds the loop or switch it leaves
//! to in the construct it starts in), so the work is linear in the edges.

use crate::spirv::module::id;
use crate::spirv::{Inst, Result, SpirvError};
use rspirv::spirv::{Op, Word};
use shrew_engine::dominators::immediate_dominators;
use std::collections::{HashMap, HashSet};

/// A block: where its label and terminator are, its successors and merge instruction.
struct Block {
    label: usize,
    terminator: usize,
    successors: Vec<usize>,
    /// `OpSelectionMerge` (merge block) or `OpLoopMerge` (merge block, continue target).
    merge: Option<(usize, Option<usize>)>,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    Selection,
    Switch,
    Loop,
    Continue,
}

/// A construct: its kind, header (the continue target, for a continue construct), merge block
/// (the loop's, for a continue construct) and the construct it is nested in.
struct Construct {
    kind: Kind,
    header: usize,
    merge: usize,
    parent: Option<usize>,
    /// The loop a continue construct belongs to, and a loop's continue target.
    partner: usize,
    /// The innermost loop and switch constructs holding this one (itself included), which a
    /// break or continue from inside it may leave to: kept per construct so that an edge
    /// finds them without walking up the nesting.
    innermost_loop: Option<usize>,
    innermost_switch: Option<usize>,
}

/// The dominator tree of the reachable blocks, with pre- and post-order numbers that answer
/// "does a dominate b" in constant time.
struct Dominators {
    /// Per block its immediate dominator (block 0's is itself); `None` for unreachable blocks.
    idom: Vec<Option<usize>>,
    pre: Vec<usize>,
    post: Vec<usize>,
    /// The reachable blocks, parents before children.
    preorder: Vec<usize>,
}

impl Dominators {
    fn reachable(&self, block: usize) -> bool {
        self.idom[block].is_some()
    }

    fn dominates(&self, a: usize, b: usize) -> bool {
        self.reachable(a)
            && self.reachable(b)
            && self.pre[a] <= self.pre[b]
            && self.post[b] <= self.post[a]
    }

    /// Structural dominance (the dominance of the graph where every header also branches to
    /// its merge block and continue target, so that a break or continue does not pull those
    /// into the constructs it leaves), from block 0; each block's children in the tree in
    /// reverse postorder.
    fn new(blocks: &[Block]) -> Dominators {
        let n = blocks.len();
        let structural: Vec<Vec<usize>> = (blocks.iter())
            .map(|b| {
                let (merge, continue_target) = b.merge.unzip();
                let mut successors = b.successors.clone();
                successors.extend(merge.into_iter().chain(continue_target.flatten()));
                successors
            })
            .collect();
        let mut order = Vec::with_capacity(n);
        let mut visited = vec![false; n];
        let mut stack = vec![(0, 0)];
        visited[0] = true;
        while let Some(&mut (block, ref mut next)) = stack.last_mut() {
            if let Some(&succ) = structural[block].get(*next) {
                *next += 1;
                if !visited[succ] {
                    visited[succ] = true;
                    stack.push((succ, 0));
                }
            } else {
                order.push(block);
                stack.pop();
            }
        }
        order.reverse();
        let mut idom = immediate_dominators(n, 0, |block| structural[block].iter().copied());
        idom[0] = Some(0);
        let mut children = vec![Vec::new(); n];
        for &block in &order[1..] {
            if let Some(parent) = idom[block] {
                children[parent].push(block);
            }
        }
        let (mut pre, mut post) = (vec![0; n], vec![0; n]);
        let mut preorder = Vec::with_capacity(order.len());
        let mut counter = 0;
        let mut stack = vec![(0, 0)];
        pre[0] = 0;
        preorder.push(0);
        while let Some(&mut (block, ref mut next)) = stack.last_mut() {
            if let Some(&child) = children[block].get(*next) {
                *next += 1;
                counter += 1;
                pre[child] = counter;
                preorder.push(child);
                stack.push((child, 0));
            } else {
                counter += 1;
                post[block] = counter;
                stack.pop();
            }
        }
        Dominators {
            idom,
            pre,
            post,
            preorder,
        }
    }
}

/// Checks the structured control flow of the function whose body (the instructions after its
/// parameters, up to its end) is `body`.
pub(super) fn check_function(insts: &[Inst], body: &[usize]) -> Result<()> {
    let Some(blocks) = blocks(insts, body)? else {
        return Ok(());
    };
    let dom = Dominators::new(&blocks);
    let at = |block: usize| &insts[blocks[block].terminator];
    let label = |block: usize| insts[blocks[block].label].inst.result_id.unwrap_or(0);
    let error = |block: usize, message: String| Err(SpirvError::malformed(message).at(at(block)));

    for &block in &dom.preorder[1..] {
        let parent = dom.idom[block].unwrap_or(0);
        if parent > block {
            return error(
                block,
                format!(
                    "the block %{} comes before its dominator %{}",
                    label(block),
                    label(parent)
                ),
            );
        }
    }
    let mut merges = HashSet::new();
    let mut continues = HashSet::new();
    for (header, b) in blocks.iter().enumerate() {
        let Some((merge, continue_target)) = b.merge else {
            continue;
        };
        if !merges.insert(merge) {
            return error(
                header,
                format!("%{} is already another header's merge block", label(merge)),
            );
        }
        if let Some(target) = continue_target
            && !continues.insert(target)
        {
            return error(
                header,
                format!(
                    "%{} is already another loop's continue target",
                    label(target)
                ),
            );
        }
        let dominated = |block: usize| !dom.reachable(block) || dom.dominates(header, block);
        if dom.reachable(header) && !(dominated(merge) && continue_target.is_none_or(dominated)) {
            return error(
                header,
                "a header that does not dominate its merge block or continue target".into(),
            );
        }
    }

    let constructs = Constructs::new(&blocks, &dom, insts);
    let mut back_edges: HashMap<usize, usize> = HashMap::new();
    for &from in &dom.preorder {
        for &to in &blocks[from].successors {
            if dom.dominates(to, from) {
                let continue_target = match blocks[to].merge {
                    Some((_, Some(target))) => target,
                    _ => {
                        return error(
                            from,
                            format!("a back edge to %{}, which is not a loop header", label(to)),
                        );
                    }
                };
                if !dom.dominates(continue_target, from) {
                    return error(
                        from,
                        format!(
                            "a back edge to %{} from outside its continue construct",
                            label(to)
                        ),
                    );
                }
                *back_edges.entry(to).or_default() += 1;
            }
            constructs
                .check_edge(from, to)
                .map_err(|e| e.at(at(from)))?;
        }
    }
    for &header in &dom.preorder {
        if let Some((_, Some(continue_target))) = blocks[header].merge {
            let found = back_edges.get(&header).copied().unwrap_or(0);
            if dom.reachable(continue_target) && found != 1 {
                return error(
                    header,
                    format!("the loop header %{} has {found} back edges", label(header)),
                );
            }
        }
    }
    Ok(())
}

/// The function's blocks; `None` when it has none (a declaration).
fn blocks(insts: &[Inst], body: &[usize]) -> Result<Option<Vec<Block>>> {
    let mut index: HashMap<Word, usize> = HashMap::new();
    let mut blocks = Vec::new();
    for &i in body {
        let inst = &insts[i];
        match inst.inst.class.opcode {
            Op::Label => {
                index.insert(inst.inst.result_id.unwrap_or(0), blocks.len());
                blocks.push(Block {
                    label: i,
                    terminator: i,
                    successors: Vec::new(),
                    merge: None,
                });
            }
            Op::Line | Op::NoLine => {}
            _ => {
                if let Some(block) = blocks.last_mut() {
                    block.terminator = i;
                }
            }
        }
    }
    if blocks.is_empty() {
        return Ok(None);
    }
    // Branch targets are blocks of this function: the caller has checked.
    let block_of = |id: Word| index[&id];
    for block in &mut blocks {
        let terminator = &insts[block.terminator];
        block.successors = super::block_operands(terminator)
            .into_iter()
            .map(block_of)
            .collect();
        block.successors.sort_unstable();
        block.successors.dedup();
        let merge = &insts[block.terminator.saturating_sub(1)];
        block.merge = match merge.inst.class.opcode {
            Op::SelectionMerge => Some((block_of(id(merge, 0)?), None)),
            Op::LoopMerge => Some((block_of(id(merge, 0)?), Some(block_of(id(merge, 1)?)))),
            _ => None,
        };
    }
    Ok(Some(blocks))
}

/// The constructs of a function and each reachable block's innermost one.
struct Constructs<'a> {
    dom: &'a Dominators,
    all: Vec<Construct>,
    innermost: Vec<Option<usize>>,
}

impl<'a> Constructs<'a> {
    fn new(blocks: &[Block], dom: &'a Dominators, insts: &[Inst]) -> Constructs<'a> {
        let mut constructs = Constructs {
            dom,
            all: Vec::new(),
            innermost: vec![None; blocks.len()],
        };
        // The constructs each block heads, outermost first: a continue target's continue
        // construct, then the construct of its own merge instruction.
        let mut headed: Vec<Vec<(Kind, usize, usize)>> = vec![Vec::new(); blocks.len()];
        for (header, b) in blocks.iter().enumerate() {
            match b.merge {
                Some((merge, Some(continue_target))) => {
                    headed[continue_target].insert(0, (Kind::Continue, merge, header));
                    headed[header].push((Kind::Loop, merge, continue_target));
                }
                Some((merge, None)) => {
                    let switch = insts[b.terminator].inst.class.opcode == Op::Switch;
                    let kind = if switch {
                        Kind::Switch
                    } else {
                        Kind::Selection
                    };
                    headed[header].push((kind, merge, header));
                }
                None => {}
            }
        }
        for &block in &dom.preorder {
            let mut current = dom.idom[block]
                .filter(|&parent| parent != block)
                .and_then(|parent| constructs.innermost[parent]);
            while let Some(c) = current
                && !constructs.contains(c, block)
            {
                current = constructs.all[c].parent;
            }
            for &(kind, merge, partner) in &headed[block] {
                let index = constructs.all.len();
                let enclosing = |of_kind: Kind, outer: fn(&Construct) -> Option<usize>| {
                    if kind == of_kind {
                        Some(index)
                    } else {
                        current.and_then(|c| outer(&constructs.all[c]))
                    }
                };
                let innermost_loop = enclosing(Kind::Loop, |c| c.innermost_loop);
                let innermost_switch = enclosing(Kind::Switch, |c| c.innermost_switch);
                constructs.all.push(Construct {
                    kind,
                    header: block,
                    merge,
                    parent: current,
                    partner,
                    innermost_loop,
                    innermost_switch,
                });
                current = Some(index);
            }
            constructs.innermost[block] = current;
        }
        constructs
    }

    fn contains(&self, c: usize, block: usize) -> bool {
        let construct = &self.all[c];
        let dom = self.dom;
        if !dom.dominates(construct.header, block) || dom.dominates(construct.merge, block) {
            return false;
        }
        // A continue construct lies within its loop.
        construct.kind != Kind::Continue || dom.dominates(construct.partner, block)
    }

    /// The constructs holding `block`, innermost first.
    fn around(&self, block: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.innermost[block], |&c| self.all[c].parent)
    }

    /// An edge enters constructs only through their headers, and leaves them only through
    /// their merge blocks, a loop's break or continue, or a switch's break.
    fn check_edge(&self, from: usize, to: usize) -> Result<()> {
        for c in self.around(to).take_while(|&c| !self.contains(c, from)) {
            if self.all[c].header != to {
                return Err(SpirvError::malformed(
                    "a branch into a construct, not to its header",
                ));
            }
        }
        let innermost = |of: fn(&Construct) -> Option<usize>| {
            self.innermost[from]
                .and_then(|c| of(&self.all[c]))
                .map(|c| &self.all[c])
        };
        let innermost_loop = innermost(|c| c.innermost_loop);
        let innermost_switch = innermost(|c| c.innermost_switch);
        let break_or_continue = innermost_loop.is_some_and(|l| to == l.merge || to == l.partner)
            || innermost_switch.is_some_and(|s| to == s.merge);
        if break_or_continue {
            // A break or continue may leave every construct between it and its target.
            return Ok(());
        }
        for c in self.around(from).take_while(|&c| !self.contains(c, to)) {
            let construct = &self.all[c];
            let structured = to == construct.merge
                || (construct.kind == Kind::Continue && to == construct.partner);
            if !structured {
                return Err(SpirvError::malformed(
                    "a branch out of a construct, not to its merge block, a break or a continue",
                ));
            }
        }
        Ok(())
    }
}
