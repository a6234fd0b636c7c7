//! `OpSwitch` as a flat sequence of selections, one per case target, in fall-through order.
//!
//! What: for each case construct, in the order its cases fall into each other, a test block
//! `D` ends in `branch (matches || fell) -> case, J` with `selection merge=J`, where the join
//! block `J` jumps to the next case's test (after the last case, `J` is an `end` block that
//! jumps to the switch's merge block). `matches` compares the selector with the case's
//! literals; the default's is that no other literal matches: neither one of a case before it
//! (an `or` accumulated test by test) nor one of a case after it or of the merge block. A case
//! that falls into the next jumps to its join block, whose `fell` phi is true from those edges;
//! the fallen-into case's phis of its entries (the header and the case falling into it) become
//! phis of that join block. The order comes from the control flow, not the operand order: the
//! chains of cases falling into each other in turn, the default's chain last. Each case is
//! emitted once, the selections are siblings (one level of nesting, whatever the number of
//! cases), and the work is linear in the switch.
//!
//! A switch break (an edge to the merge block) at the top level of its case, not inside a
//! construct of the case, jumps to the case's `J` instead: every later test is false (the
//! literals are distinct, and the default excludes them all), so control passes through to
//! `end` and the merge block. A break nested in a construct of the case cannot end that
//! construct, so a switch with one is wrapped in a loop that runs once (`loop merge=M
//! continue=K`, with `K` unreachable) and all its breaks are loop breaks, which structurizing
//! turns into `Break` nodes; dead-cf removes the loop again when no case falls through (each
//! break then ends the selections around it, the old ladder without its copies). When the
//! merge block has phis, no break is redirected (their sources name the breaking blocks).
//!
//! Inside that loop, an edge that leaves the switch for an enclosing loop's merge block or
//! continue target (`break` or `continue` of that loop, from a case) would leave two loops at
//! once, which structured control flow cannot express. Such edges and the breaks go to a new
//! merge block of the one-trip loop instead, whose phi of exit codes dispatches to their
//! targets as conditional breaks and continues of the enclosing loop; the phis of the targets
//! take their sources from there. Switches are lowered innermost first, so an enclosing switch
//! routes its inner switches' dispatches in turn.
//!
//! Values a case defines may have dominated the merge block (a default that alone reaches it);
//! redirected breaks and the dispatch block take that dominance away, and the engine's SSA
//! repair gives those uses phis with `undef` on the paths that never ran the case.
//!
//! How: [`begin`] builds each switch as the OpSwitch is read, with the tests in operand order:
//! the case blocks are not translated yet, so which case falls into which is unknown. Once the
//! function's blocks are read and their phis resolved, [`lower`] finds the fall-through edges
//! (edges into a case target from a block it does not dominate, in another case construct) by
//! one dominator tree of the function, orders the tests, routes the breaks and exits, and
//! rewrites the phis. A case construct is the set of blocks whose innermost enclosing case
//! target, through the dominator tree, is that target (a switch's merge block is in the case
//! its header is in).

use super::{Inst, Result, SpirvError};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_engine::cfg::{DomTree, innermost_constructs};
use shrew_engine::ir::{
    BlockId, Builder, Cursor, FuncId, Function, InstKind, Shader, Structure, Terminator, ValType,
    Value,
};
use shrew_engine::ops::AluOp;

/// A switch read and not lowered yet.
pub(super) struct Switch {
    /// The OpSwitch, for errors.
    inst: usize,
    header: BlockId,
    merge: BlockId,
    /// The case targets in operand order (the default among them unless it is the merge block).
    cases: Vec<Case>,
    /// The index in `cases` of the default, unless the default is the merge block.
    default: Option<usize>,
    /// Literals whose target is the merge block.
    merge_literals: Vec<u64>,
    selector: Value,
    bits: u8,
    /// Where control goes when no case is entered or a case breaks at its top level.
    end: BlockId,
}

/// A case target and its test block.
struct Case {
    target: BlockId,
    test: BlockId,
    literals: Vec<u64>,
    /// Whether the selector equals one of `literals`, computed in `test` (`None` for the
    /// default, whose condition depends on the order).
    matches: Option<Value>,
}

/// A builder appending to `block`, terminated or not.
fn append(shader: &mut Shader, func: FuncId, block: BlockId) -> Builder<'_> {
    let pos = shader.functions[func.0 as usize].cfg[block].insts.len();
    Builder {
        shader,
        func,
        cursor: Cursor {
            block,
            pos: Some(pos),
        },
    }
}

/// Whether the selector equals one of `literals` (`None` when there are none).
fn any_equal(b: &mut Builder, selector: Value, bits: u8, literals: &[u64]) -> Option<Value> {
    let mut any = None;
    for &lit in literals {
        let k = b.imm(bits, &[lit]);
        let eq = b.alu(AluOp::Ieq, &[selector, k]);
        any = Some(match any {
            Some(prev) => b.alu(AluOp::Ior, &[prev, eq]),
            None => eq,
        });
    }
    any
}

/// Builds the switch ending `header` (see the module comment): the header jumps to the first
/// test, each test to its case or the next test, the last to `end`, which jumps to `merge`.
/// Returns the test block of each target and `end`, the IR predecessors of the header's
/// SPIR-V edges, and the switch to [`lower`] once the function is read.
#[allow(clippy::too_many_arguments)]
pub(super) fn begin(
    shader: &mut Shader,
    func: FuncId,
    inst: usize,
    header: BlockId,
    selector: Value,
    bits: u8,
    default: BlockId,
    targets: Vec<(BlockId, Vec<u64>)>,
    merge: BlockId,
) -> Switch {
    let mut cases = Vec::new();
    let mut merge_literals = Vec::new();
    let mut default_index = None;
    for (target, literals) in targets {
        if target == merge {
            merge_literals.extend(literals);
            continue;
        }
        if target == default {
            default_index = Some(cases.len());
        }
        cases.push(Case {
            target,
            test: BlockId::new(0),
            literals,
            matches: None,
        });
    }
    if default != merge && default_index.is_none() {
        default_index = Some(cases.len());
        cases.push(Case {
            target: default,
            test: BlockId::new(0),
            literals: Vec::new(),
            matches: None,
        });
    }
    let f = &mut shader.functions[func.0 as usize];
    for case in &mut cases {
        case.test = f.add_block();
    }
    let end = f.add_block();
    // The default's test is `true` until the order says which literals it must exclude.
    let always = default_index.map(|_| append(shader, func, header).imm_bool(true));
    for (i, case) in cases.iter_mut().enumerate() {
        if Some(i) != default_index {
            let mut b = append(shader, func, case.test);
            case.matches = any_equal(&mut b, selector, bits, &case.literals);
        }
    }
    let f = &mut shader.functions[func.0 as usize];
    let first = cases.first().map_or(end, |c| c.test);
    f.set_jump(header, first);
    for i in 0..cases.len() {
        let next = cases.get(i + 1).map_or(end, |c| c.test);
        let cond = cases[i]
            .matches
            .or(always)
            .expect("a case has literals or is the default");
        f.set_branch(cases[i].test, cond, cases[i].target, next);
        f.cfg[cases[i].test].structure = Some(Structure::Selection { merge: next });
    }
    f.set_jump(end, merge);
    Switch {
        inst,
        header,
        merge,
        cases,
        default: default_index,
        merge_literals,
        selector,
        bits,
        end,
    }
}

impl Switch {
    /// The IR predecessor of the header's SPIR-V edge to `target`.
    pub fn entry_of(&self, target: BlockId) -> BlockId {
        match self.cases.iter().find(|c| c.target == target) {
            Some(case) => case.test,
            None => self.end,
        }
    }
}

/// Where each block is, relative to the switches of a function.
struct Layout {
    dom: DomTree,
    /// The innermost structured construct of each reachable block, as read.
    innermost: FxHashMap<BlockId, Option<BlockId>>,
    /// Per block, the case target of the innermost case construct it is in.
    owner: FxHashMap<BlockId, BlockId>,
    /// Per case target, its switch and case index.
    case_of: FxHashMap<BlockId, (usize, usize)>,
    headers: Vec<BlockId>,
}

impl Layout {
    fn new(func: &mut Function, switches: &[Switch]) -> Layout {
        // While the blocks are classified, each switch header is a selection on its merge
        // block, so that what follows an inner switch is outside it.
        for s in switches {
            func.cfg[s.header].structure = Some(Structure::Selection { merge: s.merge });
        }
        let dom = DomTree::new(func);
        let innermost = innermost_constructs(func, &dom);
        for s in switches {
            func.cfg[s.header].structure = None;
        }
        let mut case_of = FxHashMap::default();
        let mut merge_of = FxHashMap::default();
        for (i, s) in switches.iter().enumerate() {
            merge_of.insert(s.merge, i);
            for (k, case) in s.cases.iter().enumerate() {
                case_of.insert(case.target, (i, k));
            }
        }
        let mut owner: FxHashMap<BlockId, BlockId> = FxHashMap::default();
        for &b in dom.preorder() {
            let from = if case_of.contains_key(&b) {
                Some(b)
            } else if let Some(&i) = merge_of.get(&b) {
                owner.get(&switches[i].header).copied()
            } else {
                (dom.immediate_dominator(b)).and_then(|d| owner.get(&d).copied())
            };
            if let Some(t) = from {
                owner.insert(b, t);
            }
        }
        Layout {
            dom,
            innermost,
            owner,
            case_of,
            headers: switches.iter().map(|s| s.header).collect(),
        }
    }

    /// The switch whose case construct directly holds `b`.
    fn switch_of(&self, b: BlockId) -> Option<usize> {
        self.owner.get(&b).map(|t| self.case_of[t].0)
    }

    /// The case of switch `s` whose construct holds `b`, possibly inside inner switches.
    fn case_in(&self, s: usize, b: BlockId) -> Option<usize> {
        let mut at = self.owner.get(&b).copied();
        while let Some(t) = at {
            let (switch, case) = self.case_of[&t];
            if switch == s {
                return Some(case);
            }
            at = self.owner.get(&self.headers[switch]).copied();
        }
        None
    }
}

/// Makes `from`'s edge to `old` go to `new`.
fn retarget(func: &mut Function, from: BlockId, old: BlockId, new: BlockId) {
    func.copy_terminator(from, from, |b| if b == old { new } else { b }, |v| v);
}

/// The phis at the top of a block.
fn phis(func: &Function, b: BlockId) -> Vec<Value> {
    (func.cfg[b].insts.iter().copied())
        .take_while(|&v| matches!(func.inst(v).kind, InstKind::Phi(_)))
        .collect()
}

/// The sources of a phi.
fn sources(func: &Function, phi: Value) -> Vec<(BlockId, Value)> {
    match &func.inst(phi).kind {
        InstKind::Phi(srcs) => srcs.clone(),
        _ => Vec::new(),
    }
}

fn set_sources(func: &mut Function, phi: Value, srcs: Vec<(BlockId, Value)>) {
    func.inst_mut(phi).kind = InstKind::Phi(srcs);
}

/// Distinct predecessors, in id order.
fn preds(func: &Function, b: BlockId) -> Vec<BlockId> {
    let mut p = func.predecessors(b);
    p.dedup();
    p
}

/// Lowers the switches of a function whose blocks are read and whose phis are resolved (see
/// the module comment), innermost first; then repairs SSA where a case's definitions stopped
/// dominating their uses.
pub(super) fn lower(
    shader: &mut Shader,
    func: FuncId,
    switches: Vec<Switch>,
    insts: &[Inst],
) -> Result<()> {
    if switches.is_empty() {
        return Ok(());
    }
    let f = &mut shader.functions[func.0 as usize];
    let mut layout = Layout::new(f, &switches);
    // Per switch, the edges that leave its case constructs (breaks included).
    let mut exits: Vec<Vec<(BlockId, BlockId)>> = vec![Vec::new(); switches.len()];
    for &b in layout.dom.preorder() {
        let Some(s) = layout.switch_of(b) else {
            continue;
        };
        let mut succs = f.successors(b);
        succs.dedup();
        for t in succs {
            if layout.case_in(s, t).is_none() {
                exits[s].push((b, t));
            }
        }
    }
    // Switches are read outer first (a header dominates what it holds).
    for s in (0..switches.len()).rev() {
        let out = lower_one(shader, func, &switches[s], s, &mut layout, &exits[s])
            .map_err(|e| e.at(&insts[switches[s].inst]))?;
        if let Some(outer) = layout.switch_of(switches[s].header) {
            for (b, t) in out {
                if layout.case_in(outer, t).is_none() {
                    exits[outer].push((b, t));
                }
            }
        }
    }
    shrew_engine::ssa_repair::repair_ssa(&mut shader.functions[func.0 as usize]);
    Ok(())
}

/// The function being lowered.
fn function(shader: &mut Shader, func: FuncId) -> &mut Function {
    &mut shader.functions[func.0 as usize]
}

/// A builder appending to the function's first block, for constants and `undef`s that every
/// block may read.
fn at_entry(shader: &mut Shader, func: FuncId) -> Builder<'_> {
    let entry = function(shader, func).entry;
    append(shader, func, entry)
}

/// Which case falls into which, and the blocks that do.
struct FallThrough {
    into: Vec<Option<usize>>,
    from: Vec<Option<usize>>,
    /// Per case, the blocks of the case falling into it.
    preds: Vec<Vec<BlockId>>,
}

impl FallThrough {
    /// The edges into a case target from blocks of other cases (an edge from a block the
    /// target dominates is the back edge of a loop it heads).
    fn find(func: &Function, sw: &Switch, s: usize, layout: &Layout) -> Result<FallThrough> {
        let n = sw.cases.len();
        let mut fall = FallThrough {
            into: vec![None; n],
            from: vec![None; n],
            preds: vec![Vec::new(); n],
        };
        for (c, case) in sw.cases.iter().enumerate() {
            for p in preds(func, case.target) {
                if p == case.test
                    || !layout.dom.is_reachable(p)
                    || layout.dom.dominates(case.target, p)
                {
                    continue;
                }
                let Some(k) = layout.case_in(s, p).filter(|&k| k != c) else {
                    return Err(SpirvError::malformed(
                        "a branch into a switch case from outside the switch's cases",
                    ));
                };
                if fall.into[k].is_some_and(|x| x != c) {
                    return Err(SpirvError::malformed(
                        "a switch case falls through into two other cases",
                    ));
                }
                if fall.from[c].is_some_and(|x| x != k) {
                    return Err(SpirvError::malformed(
                        "two switch cases fall through into the same case",
                    ));
                }
                fall.into[k] = Some(c);
                fall.from[c] = Some(k);
                fall.preds[c].push(p);
            }
        }
        Ok(fall)
    }

    /// The cases in fall-through order: each chain of cases falling into each other in turn,
    /// by the operand order of their first case, with the default's chain last.
    fn order(&self, default: Option<usize>) -> Result<Vec<usize>> {
        let n = self.into.len();
        let head_of = |mut c: usize| {
            let mut steps = 0;
            while let Some(k) = self.from[c]
                && steps < n
            {
                c = k;
                steps += 1;
            }
            c
        };
        let default_chain = default.map(head_of);
        let heads = (0..n)
            .filter(|&c| self.from[c].is_none() && Some(c) != default_chain)
            .chain(default_chain.filter(|&h| self.from[h].is_none()));
        let mut order = Vec::with_capacity(n);
        for head in heads {
            let mut at = Some(head);
            while let Some(c) = at
                && order.len() < n
            {
                order.push(c);
                at = self.into[c];
            }
        }
        if order.len() != n {
            return Err(SpirvError::malformed(
                "switch cases fall through into each other in a cycle",
            ));
        }
        Ok(order)
    }
}

/// Makes `from`'s edge to `to` pass through a new block; the phis of `to` name it instead.
fn split_edge(func: &mut Function, from: BlockId, to: BlockId) -> BlockId {
    let mid = func.add_block();
    retarget(func, from, to, mid);
    func.set_jump(mid, to);
    for phi in phis(func, to) {
        let srcs = (sources(func, phi).into_iter())
            .map(|(p, v)| (if p == from { mid } else { p }, v))
            .collect();
        set_sources(func, phi, srcs);
    }
    mid
}

/// Lowers switch `s`; returns the edges that leave it afterwards for blocks other than its
/// merge block (for the switch around it to route).
fn lower_one(
    shader: &mut Shader,
    func: FuncId,
    sw: &Switch,
    s: usize,
    layout: &mut Layout,
    exits: &[(BlockId, BlockId)],
) -> Result<Vec<(BlockId, BlockId)>> {
    let f = function(shader, func);
    let fall = FallThrough::find(f, sw, s, layout)?;
    let order = fall.order(sw.default)?;
    let mut position = vec![0; order.len()];
    for (i, &c) in order.iter().enumerate() {
        position[c] = i;
    }
    // Where control goes on after each case: a join block per case that jumps to the next
    // test (`end` after the last). Made in order, so that the blocks a chain of flattened
    // selections leaves merge in one sweep.
    let joins: Vec<BlockId> = (0..order.len())
        .map(|i| match order.get(i + 1) {
            Some(&next) => {
                let join = f.add_block();
                f.set_jump(join, sw.cases[next].test);
                join
            }
            None => sw.end,
        })
        .collect();
    let join = |c: usize| joins[position[c]];

    // Breaks at the top level of their case go on to the next test, unless another break
    // needs the one-trip loop: then every break is a loop break, so that dead-cf can still
    // take the loop away when each break can end the selections around it instead (no case
    // falls through). A block that also falls through keeps its break: one edge cannot say
    // both.
    let merge_has_phis = !phis(f, sw.merge).is_empty();
    let case_targets: FxHashSet<BlockId> = sw.cases.iter().map(|c| c.target).collect();
    let mut redirected = Vec::new();
    let mut exits_left = Vec::new();
    for &(b, t) in exits {
        let case = (layout.owner.get(&b)).map(|target| layout.case_of[target]);
        let top_level = t == sw.merge
            && case.is_some_and(|(switch, k)| {
                switch == s
                    && layout.innermost.get(&b) == layout.innermost.get(&sw.cases[k].target)
                    && !(f.successors(b).iter()).any(|x| case_targets.contains(x))
            });
        match case {
            Some((_, k)) if top_level => redirected.push((b, k)),
            _ => exits_left.push((b, t)),
        }
    }
    if merge_has_phis || exits_left.iter().any(|&(_, t)| t == sw.merge) {
        exits_left.extend(redirected.drain(..).map(|(b, _)| (b, sw.merge)));
    }
    let mut entered_end = !sw.merge_literals.is_empty() || sw.default.is_none();
    for &(b, k) in &redirected {
        retarget(f, b, sw.merge, join(k));
        entered_end |= position[k] + 1 == order.len();
    }
    for (c, fall_preds) in fall.preds.iter().enumerate() {
        for &p in fall_preds {
            retarget(f, p, sw.cases[c].target, joins[position[c] - 1]);
        }
    }
    for &c in &order {
        let case = &sw.cases[c];
        let next = join(c);
        let Some(Terminator::Branch { cond }) = f.block(case.test).terminator else {
            unreachable!("a switch test ends in a branch");
        };
        f.set_branch(case.test, cond, case.target, next);
        f.cfg[case.test].structure = Some(Structure::Selection { merge: next });
    }
    if !entered_end {
        f.set_exit(sw.end, Terminator::Unreachable);
        f.forget_predecessor(sw.merge, sw.end);
    }
    f.set_jump(sw.header, sw.cases[order[0]].test);
    // Whether a case before the default in the order matched, accumulated test by test.
    let mut matched = None;
    for &c in order.iter().take_while(|&&c| Some(c) != sw.default) {
        if let Some(m) = sw.cases[c].matches {
            matched = Some(match matched {
                Some(before) => {
                    append(shader, func, sw.cases[c].test).alu(AluOp::Ior, &[before, m])
                }
                None => m,
            });
        }
    }
    for (i, &c) in order.iter().enumerate() {
        // The case before, whose join block leads to this test.
        let previous = i
            .checked_sub(1)
            .map(|p| (sw.cases[order[p]].test, joins[p]));
        let default_excludes = Exclusions {
            matched,
            later: &order[i + 1..],
        };
        set_condition(
            shader,
            func,
            sw,
            c,
            previous,
            default_excludes,
            &fall.preds[c],
        );
    }

    // The one-trip loop, when some break is nested in a construct of its case.
    if !exits_left.iter().any(|&(_, t)| t == sw.merge) {
        return Ok(exits_left);
    }
    let f = function(shader, func);
    let (head, cont) = (f.add_block(), f.add_block());
    f.set_jump(cont, head);
    f.set_jump(sw.header, head);
    f.set_jump(head, sw.cases[order[0]].test);
    if entered_end {
        exits_left.push((sw.end, sw.merge));
    }
    if exits_left.iter().all(|&(_, t)| t == sw.merge) {
        f.cfg[head].structure = Some(Structure::Loop {
            merge: sw.merge,
            cont,
        });
        return Ok(Vec::new());
    }
    let dispatch = dispatch_exits(shader, func, sw, exits_left, layout);
    let f = function(shader, func);
    f.cfg[head].structure = Some(Structure::Loop {
        merge: dispatch[0].0,
        cont,
    });
    Ok(dispatch)
}

/// What the default's test excludes: a case before it matched, or a literal of a case after
/// it or of the merge block matches.
struct Exclusions<'a> {
    matched: Option<Value>,
    later: &'a [usize],
}

/// The condition of case `c`'s test: its literals match (for the default: nothing it
/// [`Exclusions`] does), or the case before fell into it; with the phis its entries need (see
/// the module comment).
fn set_condition(
    shader: &mut Shader,
    func: FuncId,
    sw: &Switch,
    c: usize,
    previous: Option<(BlockId, BlockId)>,
    exclusions: Exclusions,
    fall_preds: &[BlockId],
) {
    let case = &sw.cases[c];
    let mut fell = None;
    if let Some((previous, join)) = previous.filter(|_| !fall_preds.is_empty()) {
        let entries = preds(function(shader, func), join);
        let mut b = at_entry(shader, func);
        let (yes, no) = (b.imm_bool(true), b.imm_bool(false));
        let flags = (entries.iter())
            .map(|&p| (p, if fall_preds.contains(&p) { yes } else { no }))
            .collect();
        fell = Some(append(shader, func, join).phi(ValType::scalar(1), flags));
        // The case's phis: their sources from the header (now the test's predecessor, through
        // the previous test) and from the case falling into it meet in the join block.
        for phi in phis(function(shader, func), case.target) {
            let f = function(shader, func);
            let old = sources(f, phi);
            let ty = f.inst(phi).def.expect("a phi has a type");
            let source = |p: BlockId| old.iter().find(|(q, _)| *q == p).map(|&(_, v)| v);
            let from_header = source(case.test);
            let undef = at_entry(shader, func).undef(ty);
            let joined_srcs = (entries.iter())
                .map(|&p| {
                    let v = if fall_preds.contains(&p) {
                        source(p)
                    } else if p == previous {
                        from_header
                    } else {
                        None
                    };
                    (p, v.unwrap_or(undef))
                })
                .collect();
            let joined = append(shader, func, join).phi(ty, joined_srcs);
            let mut kept: Vec<(BlockId, Value)> = (old.iter().copied())
                .filter(|(p, _)| *p != case.test && !fall_preds.contains(p))
                .collect();
            kept.push((case.test, joined));
            set_sources(function(shader, func), phi, kept);
        }
    }
    let mut b = append(shader, func, case.test);
    let matches = if Some(c) == sw.default {
        let literals: Vec<u64> = (exclusions.later.iter())
            .flat_map(|&x| sw.cases[x].literals.iter().copied())
            .chain(sw.merge_literals.iter().copied())
            .collect();
        let later = any_equal(&mut b, sw.selector, sw.bits, &literals);
        let any = match (exclusions.matched, later) {
            (Some(m), Some(l)) => Some(b.alu(AluOp::Ior, &[m, l])),
            (m, l) => m.or(l),
        };
        any.map(|any| b.alu(AluOp::Inot, &[any]))
    } else {
        case.matches
    };
    let cond = match (matches, fell) {
        (Some(m), Some(fell)) => b.alu(AluOp::Ior, &[m, fell]),
        (Some(v), None) | (None, Some(v)) => v,
        // The default with nothing after it: the provisional condition, `true`.
        (None, None) => return,
    };
    function(shader, func).cfg[case.test].terminator = Some(Terminator::Branch { cond });
}

/// Sends the edges leaving the one-trip loop of a switch (breaks, and exits to enclosing loops)
/// to a new block that dispatches on an exit code: a chain of conditional exits, the last
/// going on to the merge block. Returns the dispatch blocks with their exit targets, the loop's
/// new merge block first.
fn dispatch_exits(
    shader: &mut Shader,
    func: FuncId,
    sw: &Switch,
    mut exits: Vec<(BlockId, BlockId)>,
    layout: &mut Layout,
) -> Vec<(BlockId, BlockId)> {
    let f = function(shader, func);
    // A block with two edges out cannot give one code for both: one goes through a new block.
    exits.sort();
    for i in 1..exits.len() {
        if exits[i].0 == exits[i - 1].0 {
            let (from, to) = exits[i];
            let mid = split_edge(f, from, to);
            if let Some(&owner) = layout.owner.get(&from) {
                layout.owner.insert(mid, owner);
            }
            exits[i] = (mid, to);
        }
    }
    let mut targets: Vec<BlockId> = Vec::new();
    for &(_, t) in &exits {
        if t != sw.merge && !targets.contains(&t) {
            targets.push(t);
        }
    }
    let code = |t: BlockId| {
        targets
            .iter()
            .position(|&x| x == t)
            .map_or(0, |i| i as u32 + 1)
    };
    // One block per target other than the merge block: `dispatch[r]` leaves for `targets[r]`.
    let dispatch: Vec<BlockId> = targets.iter().map(|_| f.add_block()).collect();
    let outer = layout.owner.get(&sw.header).copied();
    for &d in &dispatch {
        if let Some(o) = outer {
            layout.owner.insert(d, o);
        }
    }
    let entry = dispatch[0];
    for &(b, t) in &exits {
        retarget(f, b, t, entry);
    }
    let mut b = at_entry(shader, func);
    let codes: Vec<Value> = (0..=targets.len()).map(|r| b.imm_u32(r as u32)).collect();
    let code_srcs = exits
        .iter()
        .map(|&(b, t)| (b, codes[code(t) as usize]))
        .collect();
    let exit_code = append(shader, func, entry).phi(ValType::scalar(32), code_srcs);
    // The phis of each target: their sources from the exits meet in the dispatch entry.
    let last = *dispatch.last().expect("a target besides the merge block");
    for (target, from) in std::iter::once((sw.merge, last))
        .chain(targets.iter().copied().zip(dispatch.iter().copied()))
    {
        for phi in phis(function(shader, func), target) {
            let f = function(shader, func);
            let old = sources(f, phi);
            let ty = f.inst(phi).def.expect("a phi has a type");
            let undef = at_entry(shader, func).undef(ty);
            let joined_srcs = (exits.iter())
                .map(|&(b, t)| {
                    let v = (t == target)
                        .then(|| old.iter().find(|(p, _)| *p == b).map(|&(_, v)| v))
                        .flatten();
                    (b, v.unwrap_or(undef))
                })
                .collect();
            let joined = append(shader, func, entry).phi(ty, joined_srcs);
            let mut kept: Vec<(BlockId, Value)> = (old.iter().copied())
                .filter(|(p, _)| !exits.iter().any(|&(b, t)| b == *p && t == target))
                .collect();
            kept.push((from, joined));
            set_sources(function(shader, func), phi, kept);
        }
    }
    for (r, (&d, &t)) in dispatch.iter().zip(&targets).enumerate() {
        let mut b = append(shader, func, d);
        let is_r = b.alu(AluOp::Ieq, &[exit_code, codes[r + 1]]);
        let f = function(shader, func);
        let otherwise = dispatch.get(r + 1).copied().unwrap_or(sw.merge);
        f.set_branch(d, is_r, t, otherwise);
    }
    dispatch.into_iter().zip(targets).collect()
}
