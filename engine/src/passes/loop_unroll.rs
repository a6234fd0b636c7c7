//! `loop-unroll`: replaces loops that run a number of times known at compile time by that many
//! copies of their body.
//!
//! What: a loop qualifies when its only way out is one conditional branch to its merge block,
//! in a block that every iteration passes (it dominates the continue block), and the branch's
//! condition follows from constants: it is pure arithmetic on constants and the header's phis,
//! which start from such values and step by arithmetic on themselves. The condition is evaluated iteration by
//! iteration with the opcode table (the interpreter's own evaluation) until the loop would leave;
//! if that happens within [`MAX_ITERATIONS`] iterations and the copies stay within
//! [`MAX_UNROLLED_INSTS`] instructions, the loop becomes its iterations in a row: each copy's
//! header phis take the previous copy's back-edge values (the first copy's the values entering
//! the loop), the exit branch continues into the same copy, and the last copy runs up to the
//! exit branch and goes on to the merge block. Loops are unrolled innermost first, one at a
//! time, so an outer loop may qualify once its inner loops are gone.
//!
//! Why: GPU compilers unroll loops of constant trip count (Mesa's `nir_opt_loop_unroll`): the
//! copies' induction variables become constants, so the body folds, and there is no branch,
//! loop mask or back edge left to pay for. piglit's loop tests mostly compute constants this
//! way.
//!
//! Invariants: semantics are kept exactly (the trip count is what the interpreter would run;
//! the copies are the body's own instructions). The CFG stays structured: copies keep the
//! structure of the body's selections and inner loops; the header copies are plain blocks.
//! Loops whose body returns, breaks out further, or leaves from several places are left alone,
//! and so are loops whose exit depends on anything but constants. Each unrolled loop is one
//! transformation.
//!
//! Options: [`MAX_ITERATIONS`], [`MAX_UNROLLED_INSTS`].

use super::manager::{Pass, PassContext};
use crate::cfg::DomTree;
use crate::ir::fold::eval_alu;
use crate::ir::{BlockId, Edge, Function, Inst, InstKind, Shader, Structure, Terminator, Value};
use std::collections::{HashMap, HashSet};

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
        let mut progress = false;
        for func in &mut shader.functions {
            while !context.budget.is_spent() {
                let Some(plan) = find_unrollable(func) else {
                    break;
                };
                let what = format!(
                    "loop-unroll: the loop at {:?} in `{}`, {} iterations",
                    plan.header, func.name, plan.iterations
                );
                unroll(func, &plan);
                progress = true;
                context.budget.spend(|| what);
            }
        }
        Ok(progress)
    }
}

/// A loop to unroll and how.
struct Plan {
    header: BlockId,
    /// The loop's blocks, header first, in a topological order of the body without back edges.
    body: Vec<BlockId>,
    merge: BlockId,
    cont: BlockId,
    /// The block entering the loop.
    preheader: BlockId,
    /// The block whose branch leaves, and the successor it stays in.
    exit: BlockId,
    stay: BlockId,
    /// Times the back edge is taken before the exit branch leaves.
    iterations: usize,
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
    // The body: what the header reaches without passing the merge block.
    let mut body: Vec<BlockId> = Vec::new();
    let mut seen: HashSet<BlockId> = HashSet::from([header]);
    let mut stack = vec![header];
    while let Some(b) = stack.pop() {
        body.push(b);
        if !matches!(
            func.cfg[b].terminator,
            Some(Terminator::Jump | Terminator::Branch { .. })
        ) {
            return None;
        }
        for s in func.successors(b) {
            if s != merge && seen.insert(s) {
                stack.push(s);
            }
        }
    }
    if !seen.contains(&cont) || !body.iter().all(|&b| dom.dominates(header, b)) {
        return None;
    }
    let (exit, stay, leave_when) = only_exit(func, &body, merge)?;
    if !dom.dominates(exit, cont) || func.predecessors(merge) != [exit] {
        return None;
    }
    let preheaders: Vec<BlockId> = func
        .predecessors(header)
        .into_iter()
        .filter(|p| !seen.contains(p))
        .collect();
    let [preheader] = preheaders[..] else {
        return None;
    };
    let size: usize = body.iter().map(|&b| func.cfg[b].insts.len()).sum();
    let Some(Terminator::Branch { cond }) = func.cfg[exit].terminator else {
        return None;
    };
    let iterations = trip_count(func, header, &seen, preheader, cont, cond, leave_when)?;
    if size * (iterations + 1) > MAX_UNROLLED_INSTS {
        return None;
    }
    body.sort_by_key(|&b| dom.rpo_index(b));
    Some(Plan {
        header,
        body,
        merge,
        cont,
        preheader,
        exit,
        stay,
        iterations,
    })
}

/// The body's only edge to the merge block: its block, the successor it stays in, and the
/// condition value that leaves. Any other edge out of the body disqualifies the loop.
fn only_exit(
    func: &Function,
    body: &[BlockId],
    merge: BlockId,
) -> Option<(BlockId, BlockId, bool)> {
    let inside: HashSet<BlockId> = body.iter().copied().collect();
    let mut exit = None;
    for &b in body {
        for s in func.successors(b) {
            if s == merge {
                if exit.is_some() {
                    return None;
                }
                let leave_when = func.successor(b, Edge::True) == Some(merge);
                let other = if leave_when { Edge::False } else { Edge::True };
                let stay = func.successor(b, other)?;
                if stay == merge {
                    return None;
                }
                exit = Some((b, stay, leave_when));
            } else if !inside.contains(&s) {
                return None;
            }
        }
    }
    exit
}

/// How many times the loop goes round before `cond` equals `leave_when`, if that is known
/// within [`MAX_ITERATIONS`].
fn trip_count(
    func: &Function,
    header: BlockId,
    body: &HashSet<BlockId>,
    preheader: BlockId,
    cont: BlockId,
    cond: Value,
    leave_when: bool,
) -> Option<usize> {
    let mut eval = Evaluator {
        func,
        header,
        body,
        preheader,
        cont,
        known: HashMap::new(),
    };
    (0..=MAX_ITERATIONS).find_map(|k| {
        let value = eval.value(cond, k)?;
        ((value[0] & 1 != 0) == leave_when).then_some(k)
    })
}

/// Values of the loop's instructions (and the arithmetic they read from before it) at each
/// iteration, where constants determine them.
struct Evaluator<'f> {
    func: &'f Function,
    header: BlockId,
    body: &'f HashSet<BlockId>,
    preheader: BlockId,
    cont: BlockId,
    known: HashMap<(Value, usize), Option<Vec<u64>>>,
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
                let mut srcs = HashMap::new();
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
    let n = plan.iterations;
    let header_phis: Vec<(Value, Value, Value)> = func.cfg[plan.header]
        .insts
        .iter()
        .filter_map(|&v| match &func.inst(v).kind {
            InstKind::Phi(srcs) => {
                let from = |pred| srcs.iter().find(|(p, _)| *p == pred).map(|s| s.1);
                Some((v, from(plan.preheader)?, from(plan.cont)?))
            }
            _ => None,
        })
        .collect();
    // The block whose edge goes round: the continue block, or the exit when it branches back.
    let back_edge = if plan.stay == plan.header {
        plan.exit
    } else {
        plan.cont
    };
    // The last copy runs only up to the exit branch.
    let last_blocks = reachable_without(func, plan.header, plan.exit, &plan.body);
    let mut copies: Vec<(HashMap<BlockId, BlockId>, HashMap<Value, Value>)> = Vec::new();
    for k in 0..=n {
        let blocks: HashMap<BlockId, BlockId> = plan
            .body
            .iter()
            .filter(|b| k < n || last_blocks.contains(b))
            .map(|&b| (b, func.add_block()))
            .collect();
        let mut values: HashMap<Value, Value> = HashMap::new();
        for &(phi, entering, back) in &header_phis {
            let value = match copies.last() {
                None => entering,
                Some((_, previous)) => previous.get(&back).copied().unwrap_or(back),
            };
            values.insert(phi, value);
        }
        for &b in &plan.body {
            let Some(&copy) = blocks.get(&b) else {
                continue;
            };
            for v in func.cfg[b].insts.clone() {
                if values.contains_key(&v) {
                    continue; // a header phi
                }
                let new = func.alloc_inst(Inst {
                    block: copy,
                    ..func.inst(v).clone()
                });
                values.insert(v, new);
                func.cfg[copy].insts.push(new);
            }
        }
        for (&b, &copy) in &blocks {
            for i in 0..func.cfg[copy].insts.len() {
                let v = func.cfg[copy].insts[i];
                let kind = &mut func.inst_mut(v).kind;
                kind.for_each_src_mut(|s| {
                    if let Some(&new) = values.get(s) {
                        *s = new;
                    }
                });
                if let InstKind::Phi(srcs) = kind {
                    // The last copy lacks the blocks after the exit, and their edges.
                    srcs.retain(|(pred, _)| blocks.contains_key(pred));
                    for (pred, _) in srcs {
                        *pred = blocks[pred];
                    }
                }
            }
            let structure = func.cfg[b].structure;
            func.cfg[copy].structure = if b == plan.header || b == plan.exit {
                None
            } else {
                structure.map(|s| s.map_blocks(|b| blocks.get(&b).copied().unwrap_or(b)))
            };
            if b == plan.exit && k == n {
                func.set_jump(copy, plan.merge);
            } else if b == plan.exit && plan.stay != plan.header {
                func.set_jump(copy, blocks[&plan.stay]);
            } else if b == back_edge {
                // Goes on to the next copy's header: chained below.
            } else {
                match func.cfg[b].terminator.clone() {
                    Some(Terminator::Branch { mut cond }) => {
                        if let Some(&new) = values.get(&cond) {
                            cond = new;
                        }
                        let t = blocks[&func.successor(b, Edge::True).expect("branch edge")];
                        let f = blocks[&func.successor(b, Edge::False).expect("branch edge")];
                        func.set_branch(copy, cond, t, f);
                    }
                    _ => {
                        let t = blocks[&func.successor(b, Edge::Jump).expect("jump edge")];
                        func.set_jump(copy, t);
                    }
                }
            }
        }
        copies.push((blocks, values));
    }
    // Chain the copies: each back edge goes on to the next header copy.
    for k in 0..n {
        let next = copies[k + 1].0[&plan.header];
        func.set_jump(copies[k].0[&back_edge], next);
    }
    let (last_blocks, last_values) = copies.last().expect("at least one copy");
    let first_header = copies[0].0[&plan.header];
    let last_exit = last_blocks[&plan.exit];
    // Enter the first copy; a construct that merged at the header merges there now.
    retarget(func, plan.preheader, plan.header, first_header);
    for b in func.blocks() {
        if let Some(s) = func.cfg[b].structure {
            func.cfg[b].structure =
                Some(s.map_blocks(|b| if b == plan.header { first_header } else { b }));
        }
    }
    // The merge block's phis come from the last exit copy; later uses read the last copy.
    for v in func.cfg[plan.merge].insts.clone() {
        if let InstKind::Phi(srcs) = &mut func.inst_mut(v).kind {
            for (pred, value) in srcs.iter_mut() {
                if *pred == plan.exit {
                    *pred = last_exit;
                    *value = last_values.get(value).copied().unwrap_or(*value);
                }
            }
        }
    }
    for &b in &plan.body {
        for v in func.cfg[b].insts.clone() {
            if let Some(&new) = last_values.get(&v) {
                func.replace_uses(v, new);
            }
        }
    }
    for &b in &plan.body {
        func.remove_block(b);
    }
}

/// The body blocks `from` reaches without leaving `exit` by any edge.
fn reachable_without(
    func: &Function,
    from: BlockId,
    exit: BlockId,
    body: &[BlockId],
) -> HashSet<BlockId> {
    let inside: HashSet<BlockId> = body.iter().copied().collect();
    let mut seen = HashSet::from([from]);
    let mut stack = vec![from];
    while let Some(b) = stack.pop() {
        if b == exit {
            continue;
        }
        for s in func.successors(b) {
            if inside.contains(&s) && seen.insert(s) {
                stack.push(s);
            }
        }
    }
    seen
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
