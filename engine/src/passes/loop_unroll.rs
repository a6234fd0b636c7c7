//! `loop-unroll`: replaces loops whose every iteration's path is known at compile time by the
//! copies of those paths, one after the other.
//!
//! What: iteration by iteration, the pass walks the loop body from its header, deciding each
//! branch by its condition's value in that iteration: pure arithmetic on constants and the
//! header's phis, which start from such values and step by arithmetic on themselves, evaluated
//! with the opcode table (the interpreter's own evaluation). A selection whose condition is not
//! known is kept whole when it cannot leave the loop (its only way out is its merge block), and
//! so is an inner loop. An iteration ends by going round (the continue block's back edge), by
//! leaving to the merge block (the header's test, any `break`), or by returning. If the loop
//! leaves within [`MAX_ITERATIONS`] iterations and the copies stay within
//! [`MAX_UNROLLED_INSTS`] instructions, the loop becomes its iterations in a row: each copy of
//! the header's phis takes the previous iteration's back-edge values (the first copy the values
//! entering the loop), decided branches become jumps along the path, and the last iteration
//! goes on to the merge block, whose phis keep only the edge it leaves by. Loops are unrolled
//! innermost first, one at a time, so an outer loop may qualify once its inner loops are gone.
//! A loop that never goes round (`while (true) { ...; break; }`) is the case of one iteration.
//!
//! Why: GPU compilers unroll loops of constant trip count (Mesa's `nir_opt_loop_unroll`, which
//! also takes loops with several `break`s): the copies' induction variables become constants, so
//! the body folds, and there is no branch, loop mask or back edge left to pay for. piglit's
//! loop tests mostly compute constants this way.
//!
//! Invariants: semantics are kept exactly (each copy is what the interpreter would run in that
//! iteration; the copies are the body's own instructions). The CFG stays structured: kept
//! constructs keep their structure in the copies, the decided ones become plain blocks. Loops
//! that something enters other than through the header, whose path leaves to an outer
//! construct, or whose decided path needs a branch it cannot evaluate, are left alone; so is a
//! loop left by a return when a value of the loop is used after it. Each unrolled loop is one
//! transformation.
//!
//! Options: [`MAX_ITERATIONS`], [`MAX_UNROLLED_INSTS`] (which also bounds the loop body
//! searched: a loop larger than that is not unrolled even when one iteration's path is smaller).

use super::manager::{Pass, PassContext};
use crate::cfg::DomTree;
use crate::ir::fold::eval_alu;
use crate::ir::{BlockId, Edge, Function, Inst, InstKind, Shader, Structure, Terminator, Value};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

/// The most iterations a loop may have to be unrolled (Mesa's Intel limit).
pub const MAX_ITERATIONS: usize = 32;

/// The most instructions the copies of one loop may add up to.
pub const MAX_UNROLLED_INSTS: usize = 1024;

/// The `loop-unroll` pass.
pub struct LoopUnroll;

impl Pass for LoopUnroll {
    fn name(&self) -> &str {
        "loop-unroll"
    }

    fn description(&self) -> &str {
        "replaces loops of constant trip count by copies of their body, innermost first"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let func = &mut shader.functions[f];
                transformations.to_fixpoint(|| {
                    let plan = find_unrollable(func)?;
                    unroll(func, &plan);
                    let (header, iterations) = (plan.header, plan.walks.len());
                    Some(move || format!("the loop at {header:?}, {iterations} iterations"))
                });
            }))
    }
}

/// A loop to unroll: the path each of its iterations takes.
struct Plan {
    header: BlockId,
    merge: BlockId,
    cont: BlockId,
    /// The block entering the loop.
    preheader: BlockId,
    /// Iteration by iteration, what it runs: every iteration but the last goes round.
    walks: Vec<Walk>,
    /// The blocks that go with the loop: its body, and its continue block even if unreachable.
    blocks: BTreeSet<BlockId>,
    /// The header's phis, each with its value entering the loop and its value from the
    /// continue block (if the phi has one).
    header_phis: Vec<(Value, Value, Option<Value>)>,
}

/// The blocks one iteration runs.
struct Walk {
    /// In the order the iteration reaches them. A construct whose branch is not known (or an
    /// inner loop) is kept whole: all its blocks are here, with their own terminators.
    blocks: Vec<BlockId>,
    /// Where each block of the path goes next; kept constructs and returns are not here.
    next: FxHashMap<BlockId, Next>,
    end: End,
}

/// Where a block of an iteration's path goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Next {
    Block(BlockId),
    /// Round to the next iteration (the continue block's back edge).
    Round,
    /// Out to the loop's merge block.
    Leave,
}

/// How an iteration ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum End {
    Round,
    /// It leaves to the merge block from this block.
    Leave(BlockId),
    /// It returns from the function.
    Return,
}

/// The first loop, innermost first, that qualifies.
fn find_unrollable(func: &Function) -> Option<Plan> {
    let dom = DomTree::new(func);
    let mut headers: Vec<BlockId> = func
        .blocks()
        .into_iter()
        .filter(|&b| matches!(func.cfg[b].structure, Some(Structure::Loop { .. })))
        .filter(|&b| dom.is_reachable(b))
        .collect();
    // Inner loops come later in reverse post-order: try them first.
    headers.sort_by_key(|&b| std::cmp::Reverse(dom.rpo_index(b)));
    headers.into_iter().find_map(|h| plan(func, &dom, h))
}

fn plan(func: &Function, dom: &DomTree, header: BlockId) -> Option<Plan> {
    let Some(Structure::Loop { merge, cont }) = func.cfg[header].structure else {
        return None;
    };
    // The body: what the header reaches without passing the merge block or going round. A body
    // larger than all the copies may be is not unrolled, and not searched further: so the
    // loops of a deep nest, each tried in turn, cost no more than that each.
    let mut body: BTreeSet<BlockId> = BTreeSet::from([header]);
    let mut body_size = func.cfg[header].insts.len();
    let mut stack = vec![header];
    while let Some(b) = stack.pop() {
        for s in func.successors(b) {
            if s != merge && s != header && body.insert(s) {
                body_size += func.cfg[s].insts.len();
                if body_size > MAX_UNROLLED_INSTS {
                    return None;
                }
                stack.push(s);
            }
        }
    }
    if !body.iter().all(|&b| dom.dominates(header, b)) {
        return None;
    }
    let mut blocks = body.clone();
    blocks.insert(cont);
    // Nothing but the preheader may enter the loop's blocks from outside.
    let mut preheaders = Vec::new();
    for &b in &blocks {
        for p in func.predecessors(b) {
            if !blocks.contains(&p) {
                if b != header {
                    return None;
                }
                preheaders.push(p);
            }
        }
    }
    let [preheader] = preheaders[..] else {
        return None;
    };
    let header_phis = header_phis(func, header, preheader, cont)?;
    let mut eval = Evaluator {
        func,
        header,
        body: &body,
        preheader,
        cont,
        known: FxHashMap::default(),
    };
    let mut walks: Vec<Walk> = Vec::new();
    let mut size = 0;
    while walks.last().is_none_or(|w| w.end == End::Round) {
        let k = walks.len();
        if k > MAX_ITERATIONS {
            return None;
        }
        let walk = walk(func, dom, &mut eval, k, header, merge, cont, &body)?;
        size += walk
            .blocks
            .iter()
            .map(|&b| func.cfg[b].insts.len())
            .sum::<usize>();
        if size > MAX_UNROLLED_INSTS {
            return None;
        }
        walks.push(walk);
    }
    let last = walks.last()?;
    // A phi of the header needs its value from the continue block if the loop goes round.
    if walks.len() > 1 && header_phis.iter().any(|p| p.2.is_none()) {
        return None;
    }
    let leaving = match last.end {
        End::Leave(b) => Some(b),
        // The merge block is not reached any more: nothing after the loop may need it.
        _ if func.cfg[merge].insts.iter().any(|&v| is_phi(func, v)) => return None,
        _ => None,
    };
    let last_blocks: BTreeSet<BlockId> = last.blocks.iter().copied().collect();
    if !uses_outside_come_from(func, &blocks, leaving, &last_blocks) {
        return None;
    }
    Some(Plan {
        header,
        merge,
        cont,
        preheader,
        walks,
        blocks,
        header_phis,
    })
}

fn is_phi(func: &Function, v: Value) -> bool {
    matches!(func.inst(v).kind, InstKind::Phi(_))
}

/// The header's phis with their values from the preheader and (if it has one) the continue
/// block; `None` if a phi lacks the preheader's.
fn header_phis(
    func: &Function,
    header: BlockId,
    preheader: BlockId,
    cont: BlockId,
) -> Option<Vec<(Value, Value, Option<Value>)>> {
    let mut phis = Vec::new();
    for &v in &func.cfg[header].insts {
        if let InstKind::Phi(srcs) = &func.inst(v).kind {
            let from = |pred| srcs.iter().find(|(p, _)| *p == pred).map(|s| s.1);
            phis.push((v, from(preheader)?, from(cont)));
        }
    }
    Some(phis)
}

/// The path iteration `k` takes from the header, deciding each branch by the evaluated
/// condition; `None` when a branch that is not a whole construct is not known, or the path
/// leaves the loop other than to its merge block or by returning.
#[allow(clippy::too_many_arguments)]
fn walk(
    func: &Function,
    dom: &DomTree,
    eval: &mut Evaluator,
    k: usize,
    header: BlockId,
    merge: BlockId,
    cont: BlockId,
    body: &BTreeSet<BlockId>,
) -> Option<Walk> {
    let mut blocks = Vec::new();
    let mut next = FxHashMap::default();
    let mut b = header;
    loop {
        if blocks.len() > body.len() {
            return None;
        }
        blocks.push(b);
        let structure = if b == header {
            None
        } else {
            func.cfg[b].structure
        };
        let target = match (func.cfg[b].terminator.clone()?, structure) {
            (_, Some(Structure::Loop { merge: inner, .. })) => {
                b = keep_whole(func, dom, (b, inner), header, body, &mut blocks)?;
                continue;
            }
            (Terminator::Jump, _) => func.successor(b, Edge::Jump)?,
            (Terminator::Branch { cond }, construct) => match eval.value(cond, k) {
                Some(value) => {
                    let edge = if value[0] & 1 != 0 {
                        Edge::True
                    } else {
                        Edge::False
                    };
                    func.successor(b, edge)?
                }
                None => {
                    let construct = (b, construct?.merge());
                    b = keep_whole(func, dom, construct, header, body, &mut blocks)?;
                    continue;
                }
            },
            (Terminator::Return { .. }, _) => {
                return Some(Walk {
                    blocks,
                    next,
                    end: End::Return,
                });
            }
            (Terminator::Unreachable, _) => return None,
        };
        let (step, end) = if target == header && b == cont {
            (Next::Round, End::Round)
        } else if target == merge {
            (Next::Leave, End::Leave(b))
        } else if body.contains(&target) && target != header {
            next.insert(b, Next::Block(target));
            b = target;
            continue;
        } else {
            return None;
        };
        next.insert(b, step);
        return Some(Walk { blocks, next, end });
    }
}

/// Adds the blocks of the construct `start` opens (up to its merge block `merge`) to `blocks`,
/// in reverse post-order, and returns the merge block, where the path goes on; `None` if the
/// construct has an edge out other than to its merge block (a `break` or `continue` of the
/// loop at `header`).
fn keep_whole(
    func: &Function,
    dom: &DomTree,
    (start, merge): (BlockId, BlockId),
    header: BlockId,
    body: &BTreeSet<BlockId>,
    blocks: &mut Vec<BlockId>,
) -> Option<BlockId> {
    let mut region = vec![start];
    let mut seen = BTreeSet::from([start]);
    let mut i = 0;
    while let Some(&b) = region.get(i) {
        i += 1;
        for s in func.successors(b) {
            if s == merge || seen.contains(&s) {
                continue;
            }
            if !body.contains(&s) || s == header {
                return None;
            }
            seen.insert(s);
            region.push(s);
        }
    }
    if !body.contains(&merge) || merge == header {
        return None;
    }
    region.sort_by_key(|&b| dom.rpo_index(b));
    blocks.extend(region.into_iter().filter(|&b| b != start));
    Some(merge)
}

/// Whether every value of the loop's `blocks` that something outside reads is defined in the
/// last iteration's blocks (`last`), so its last copy can stand in. The merge block's phis only
/// count their edge from `leaving`, the edge that stays.
fn uses_outside_come_from(
    func: &Function,
    blocks: &BTreeSet<BlockId>,
    leaving: Option<BlockId>,
    last: &BTreeSet<BlockId>,
) -> bool {
    let defined_well = |v: Value| {
        func.get_inst(v)
            .is_none_or(|i| !blocks.contains(&i.block) || last.contains(&i.block))
    };
    func.blocks()
        .into_iter()
        .filter(|b| !blocks.contains(b))
        .all(|b| {
            let insts_ok = func.cfg[b].insts.iter().all(|&v| match &func.inst(v).kind {
                InstKind::Phi(srcs) => srcs
                    .iter()
                    .filter(|(p, _)| !blocks.contains(p) || Some(*p) == leaving)
                    .all(|&(_, s)| defined_well(s)),
                _ => func.inst_sources(v).into_iter().all(defined_well),
            });
            let term_ok = match func.cfg[b].terminator {
                Some(Terminator::Branch { cond }) => defined_well(cond),
                Some(Terminator::Return { value: Some(v) }) => defined_well(v),
                _ => true,
            };
            insts_ok && term_ok
        })
}

/// Values of the loop's instructions (and the arithmetic they read from before it) at each
/// iteration, where constants determine them.
struct Evaluator<'f> {
    func: &'f Function,
    header: BlockId,
    body: &'f BTreeSet<BlockId>,
    preheader: BlockId,
    cont: BlockId,
    known: FxHashMap<(Value, usize), Option<Vec<u64>>>,
}

impl Evaluator<'_> {
    fn value(&mut self, v: Value, iteration: usize) -> Option<Vec<u64>> {
        let inst = self.func.get_inst(v)?;
        if let InstKind::Const(values) = &inst.kind {
            return Some(values.clone());
        }
        // Values from outside the loop are the same in every iteration.
        let iteration = if self.body.contains(&inst.block) {
            iteration
        } else {
            0
        };
        if let Some(done) = self.known.get(&(v, iteration)) {
            return done.clone();
        }
        // Unknown until computed: a value that depends on itself stays unknown.
        self.known.insert((v, iteration), None);
        let result = match &inst.kind {
            InstKind::Phi(srcs) if inst.block == self.header => {
                let from = |pred: BlockId| srcs.iter().find(|(p, _)| *p == pred).map(|s| s.1);
                match iteration {
                    0 => from(self.preheader).and_then(|s| self.value(s, 0)),
                    k => from(self.cont).and_then(|s| self.value(s, k - 1)),
                }
            }
            InstKind::Alu(alu) => {
                let mut srcs = FxHashMap::default();
                for src in &alu.srcs {
                    srcs.insert(src.value, self.value(src.value, iteration)?);
                }
                eval_alu(self.func, v, |s| srcs.get(&s).map(Vec::as_slice))
            }
            _ => None,
        };
        self.known.insert((v, iteration), result.clone());
        result
    }
}

/// Replaces the loop by its iterations (see the module documentation).
fn unroll(func: &mut Function, plan: &Plan) {
    // Each iteration's copies of blocks and values.
    let mut copies: Vec<(FxHashMap<BlockId, BlockId>, FxHashMap<Value, Value>)> = Vec::new();
    for walk in &plan.walks {
        let blocks: FxHashMap<BlockId, BlockId> =
            walk.blocks.iter().map(|&b| (b, func.add_block())).collect();
        let mut values: FxHashMap<Value, Value> = FxHashMap::default();
        for &(phi, entering, back) in &plan.header_phis {
            let value = match (copies.last(), back) {
                (Some((_, previous)), Some(back)) => previous.get(&back).copied().unwrap_or(back),
                _ => entering,
            };
            values.insert(phi, value);
        }
        for &b in &walk.blocks {
            for v in func.cfg[b].insts.clone() {
                if values.contains_key(&v) {
                    continue; // a header phi
                }
                let new = func.alloc_inst(Inst {
                    block: blocks[&b],
                    ..func.inst(v).clone()
                });
                values.insert(v, new);
                func.cfg[blocks[&b]].insts.push(new);
            }
        }
        let map_block = |b: BlockId| blocks.get(&b).copied().unwrap_or(b);
        for &b in &walk.blocks {
            let copy = blocks[&b];
            match walk.next.get(&b) {
                Some(Next::Block(t)) => func.set_jump(copy, blocks[t]),
                // Chained to the next iteration's header below.
                Some(Next::Round) => {}
                Some(Next::Leave) => func.set_jump(copy, plan.merge),
                None => {
                    let value = |v: Value| values.get(&v).copied().unwrap_or(v);
                    func.copy_terminator(b, copy, map_block, value);
                }
            }
            func.cfg[copy].structure = match walk.next.get(&b) {
                None if b != plan.header => func.cfg[b].structure.map(|s| s.map_blocks(map_block)),
                _ => None,
            };
        }
        for &b in &walk.blocks {
            let copy = blocks[&b];
            for i in 0..func.cfg[copy].insts.len() {
                let v = func.cfg[copy].insts[i];
                func.inst_mut(v).kind.for_each_src_mut(|s| {
                    if let Some(&new) = values.get(s) {
                        *s = new;
                    }
                });
            }
            // The phis of a copy keep the edges the copies still have.
            let preds = func.predecessors(copy);
            for i in 0..func.cfg[copy].insts.len() {
                let v = func.cfg[copy].insts[i];
                if let InstKind::Phi(srcs) = &mut func.inst_mut(v).kind {
                    srcs.retain_mut(|(pred, _)| {
                        *pred = map_block(*pred);
                        preds.contains(pred)
                    });
                }
            }
        }
        copies.push((blocks, values));
    }
    // Chain the iterations: each back edge goes on to the next header copy.
    for k in 1..copies.len() {
        let next = copies[k].0[&plan.header];
        func.set_jump(copies[k - 1].0[&plan.cont], next);
    }
    let (last_blocks, last_values) = copies.last().expect("at least one iteration");
    let first_header = copies[0].0[&plan.header];
    // Enter the first copy; a construct that merged at the header merges there now.
    retarget(func, plan.preheader, plan.header, first_header);
    for b in func.blocks() {
        if let Some(s) = func.cfg[b].structure {
            func.cfg[b].structure =
                Some(s.map_blocks(|b| if b == plan.header { first_header } else { b }));
        }
    }
    // The merge block's phis keep the edge of the last iteration's way out.
    let leaving = match plan.walks.last().map(|w| w.end) {
        Some(End::Leave(b)) => Some(b),
        _ => None,
    };
    for v in func.cfg[plan.merge].insts.clone() {
        if let InstKind::Phi(srcs) = &mut func.inst_mut(v).kind {
            srcs.retain(|(pred, _)| !plan.blocks.contains(pred) || Some(*pred) == leaving);
            for (pred, value) in srcs.iter_mut() {
                if Some(*pred) == leaving {
                    *pred = last_blocks[pred];
                    *value = last_values.get(value).copied().unwrap_or(*value);
                }
            }
        }
    }
    // Later uses read the last iteration's copies (the plan checked they all have one).
    func.replace_uses_by(last_values);
    for &b in &plan.blocks {
        func.remove_block(b);
    }
}

/// Makes `b`'s edge to `from` go to `to`.
fn retarget(func: &mut Function, b: BlockId, from: BlockId, to: BlockId) {
    let pick = |func: &Function, edge| {
        let s = func.successor(b, edge).expect("branch edge");
        if s == from { to } else { s }
    };
    match func.cfg[b].terminator.clone() {
        Some(Terminator::Branch { cond }) => {
            let (t, f) = (pick(func, Edge::True), pick(func, Edge::False));
            func.set_branch(b, cond, t, f);
        }
        _ => func.set_jump(b, to),
    }
}
