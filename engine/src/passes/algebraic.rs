//! `algebraic`: greedy rewriting with a rule set until no rule applies.
//!
//! What: every ALU instruction is offered to the set's rules, in priority order; the first rule
//! that matches replaces the instruction's value with its replacement.
//!
//! How: a worklist seeded with every ALU instruction so that the *last* one is tried first.
//! Trying roots before the instructions feeding them lets a large pattern match before a smaller
//! rule rewrites one of its sub-trees away. After a rewrite, the users of the new value and the
//! instructions just built go back on the worklist. Use lists are kept up to date, so conditions
//! such as `is_used_once` see the current program; the replaced root is deleted, and so is a
//! dead ALU instruction when the worklist reaches it (other dead code is left to dead-code
//! elimination). A rewrite can also enable matches the worklist does not revisit (a value that
//! became used once, a change deep inside a larger pattern), so the pass repeats such rounds
//! over the whole function until one changes nothing: it ends at a fixpoint.
//!
//! Termination: rules must not undo each other. Each rewrite remembers the expression it
//! replaced (a structural hash) at its original position; when the same expression comes back
//! there for the third time, two rules are fighting, and the pass stops and reports both instead
//! of looping. A cap on the number of rewrites per function (16 per instruction plus 1024)
//! backs this up. Either stop ends the pass with the shader valid (every rewrite made is
//! complete): [`run`] returns it as an error, and the pass in a pipeline reports it and goes on.
//!
//! Invariants: every rewrite keeps the program's semantics up to the rule's exactness (verified
//! per rule by the rule tests); the IR stays valid after each rewrite.
//!
//! Options: the rule set, the target options its guards read, and an optional mask of rules
//! to disable (for bisecting which rule causes a regression).

use super::Budget;
use super::manager::{Pass, PassContext};
use crate::ir::{Function, InstKind, Shader, Value};
use crate::ops::AluOp;
use crate::provenance::Origin;
use crate::rewrite::{
    Dispatcher, Placements, RangeCache, Rewriter, RuleInfo, RuleSet, TargetOptions,
};
use crate::uses::{User, Uses};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::Arc;

/// Rule firings of one or more runs, indexed like [`RuleSet::rules`].
#[derive(Clone, Debug, Default)]
pub struct RuleStats {
    pub fired: Vec<u64>,
}

impl RuleStats {
    pub fn total(&self) -> u64 {
        self.fired.iter().sum()
    }

    fn record(&mut self, rule: usize) {
        self.add(rule, 1);
    }

    /// Counts `count` more firings of `rule`.
    pub fn add(&mut self, rule: usize, count: u64) {
        if self.fired.len() <= rule {
            self.fired.resize(rule + 1, 0);
        }
        self.fired[rule] += count;
    }
}

/// Why the pass stopped early. The shader is valid either way: every rewrite done so far was
/// complete.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AlgebraicError {
    #[error(
        "rules undo each other in function `{function}`: `{first}` ({first_at}) and `{second}` ({second_at})"
    )]
    RuleCycle {
        function: String,
        first: &'static str,
        first_at: String,
        second: &'static str,
        second_at: String,
    },
    #[error("more than {cap} rewrites in function `{function}`; the last rule was `{last}`")]
    TooManyRewrites {
        function: String,
        cap: usize,
        last: &'static str,
    },
}

/// Runs `set` over every function of `shader`. `disabled` lists rule indices that may not fire.
/// Returns whether anything changed.
pub fn run(
    shader: &mut Shader,
    set: &RuleSet,
    opts: &TargetOptions,
    disabled: &[usize],
    stats: &mut RuleStats,
    budget: &mut Budget,
) -> Result<bool, AlgebraicError> {
    let mut enabled = set.guards(opts);
    for &rule in disabled {
        if let Some(flag) = enabled.get_mut(rule) {
            *flag = false;
        }
    }
    // Not `Budget::each_function`: a rule cycle stops the run with an error, and the rules'
    // worklist checks the budget itself before each rewrite.
    let mut progress = false;
    for func in &mut shader.functions {
        progress |= run_function(func, set, &enabled, stats, budget)?;
    }
    Ok(progress)
}

/// A rule set as a pass of the pass manager, named after the set.
pub struct RuleSetPass {
    pub set: &'static RuleSet,
    pub opts: TargetOptions,
}

impl Pass for RuleSetPass {
    fn name(&self) -> &str {
        self.set.name
    }

    fn description(&self) -> &str {
        self.set.description
    }

    /// A rule cycle or the cap on rewrites stops the pass, not the pipeline: every rewrite
    /// made is complete, so the shader is valid; the stop is reported in
    /// [`PassContext::stopped_early`]. The pass then counts as having made no progress, so
    /// fixpoint loops around it end.
    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let stats = context
            .rule_stats
            .entry(self.set.name.to_string())
            .or_default();
        match run(
            shader,
            self.set,
            &self.opts,
            &[],
            stats,
            &mut context.budget,
        ) {
            Ok(progress) => Ok(progress),
            Err(stop) => {
                context
                    .stopped_early
                    .push(format!("{}: {stop}", self.set.name));
                Ok(false)
            }
        }
    }
}

/// A structural hash of the expression computing `v`, a few levels deep: leaves that are not ALU
/// instructions hash by identity, constants by value.
fn expr_hash(func: &Function, v: Value, depth: u32, h: &mut impl Hasher) {
    match func.get_inst(v).map(|i| &i.kind) {
        Some(InstKind::Alu(alu)) if depth > 0 => {
            alu.op.hash(h);
            func.value_type(v).hash(h);
            for src in &alu.srcs {
                src.swizzle.hash(h);
                expr_hash(func, src.value, depth - 1, h);
            }
        }
        Some(InstKind::Const(values)) => values.hash(h),
        _ => v.hash(h),
    }
}

fn hash_of(func: &Function, v: Value) -> u64 {
    let mut h = FxHasher::default();
    expr_hash(func, v, 4, &mut h);
    h.finish()
}

/// How many times an expression may come back at one position before it counts as a cycle.
const CYCLE_REPEATS: u32 = 3;

/// Runs the rules over one function to a fixpoint. `enabled` has one flag per rule of the set.
pub fn run_function(
    func: &mut Function,
    set: &RuleSet,
    enabled: &[bool],
    stats: &mut RuleStats,
    budget: &mut Budget,
) -> Result<bool, AlgebraicError> {
    let mut state = State::new(func, set);
    loop {
        let mut placements = Placements::default();
        let result = state.round(func, enabled, stats, budget, &mut placements);
        // Also after an error: every rewrite done so far is complete once its instructions are
        // placed.
        placements.apply(func);
        if !result? {
            return Ok(state.rewrites > 0);
        }
    }
}

/// What one run over a function keeps across its rounds.
struct State {
    /// The set's name: the pass whose rules these are.
    pass: &'static str,
    rule_list: Vec<&'static RuleInfo>,
    /// For each opcode, the dispatchers of the groups with rules rooted at it, in priority
    /// order, each with the indices of its group's rules in the set.
    by_root: Vec<Vec<(Dispatcher, Range<usize>)>>,
    rewrites: usize,
    cap: usize,
    /// Position of every value: the value it replaced, transitively (itself if none).
    origin: FxHashMap<Value, Value>,
    /// (position, expression) → how often it was rewritten there, and by which rule last.
    history: FxHashMap<(Value, u64), (u32, usize)>,
}

impl State {
    fn new(func: &Function, set: &RuleSet) -> State {
        let mut by_root = vec![Vec::new(); AluOp::all().count()];
        let mut start = 0;
        for group in set.groups {
            let rules = start..start + group.rules.len();
            for &(op, dispatch) in group.roots {
                by_root[op as usize].push((dispatch, rules.clone()));
            }
            start = rules.end;
        }
        State {
            pass: set.name,
            rule_list: set.rules().map(|(_, rule)| rule).collect(),
            by_root,
            rewrites: 0,
            cap: 16 * func.insts.len() + 1024,
            origin: FxHashMap::default(),
            history: FxHashMap::default(),
        }
    }

    /// One round: every ALU instruction of the function, last first, then whatever the
    /// rewrites put back on the worklist. Returns whether anything was rewritten; a rewrite can
    /// enable a match the worklist does not revisit (a source that became used once, a pattern
    /// whose inner node changed two levels down), so rounds repeat until one changes nothing.
    fn round(
        &mut self,
        func: &mut Function,
        enabled: &[bool],
        stats: &mut RuleStats,
        budget: &mut Budget,
        placements: &mut Placements,
    ) -> Result<bool, AlgebraicError> {
        let mut uses = Uses::build(func);
        let ranges = RangeCache::default();
        let mut worklist: Vec<Value> = func
            .all_insts()
            .filter(|&v| matches!(func.inst(v).kind, InstKind::Alu(_)))
            .collect();
        let mut queued = vec![false; func.insts.len()];
        worklist.iter().for_each(|v| queued[v.index()] = true);
        let start = self.rewrites;

        while let Some(root) = worklist.pop() {
            if budget.is_spent() {
                break;
            }
            queued[root.index()] = false;
            // A dead ALU instruction is deleted, not rewritten: rewriting it would only build
            // more dead code, and while it stays its sources count its use, so a chain a rewrite
            // left dead would be taken link by link as live roots (quadratic on long chains).
            let op = match func.get_inst(root).map(|i| &i.kind) {
                Some(InstKind::Alu(alu)) if uses.count(root) > 0 => alu.op,
                Some(InstKind::Alu(_)) => {
                    uses.forget_sources(func, root);
                    func.insts[root.index()] = None;
                    continue;
                }
                _ => continue,
            };
            let mut rw = Rewriter::new(func, &mut uses, &ranges, placements, &[]);
            let mut fired = None;
            for (dispatch, rules) in &self.by_root[op as usize] {
                rw.set_enabled(&enabled[rules.clone()]);
                if let Some((index, replacement)) = dispatch(&mut rw, root) {
                    // The matched expression is intact until `finish` replaces the root.
                    let before = hash_of(rw.func, root);
                    let new = rw.finish(replacement);
                    let rule = rules.start + index;
                    fired = Some((rule, before, new, std::mem::take(&mut rw.created)));
                    break;
                }
            }
            let Some((rule, before, new, created)) = fired else {
                continue;
            };
            stats.record(rule);
            if let Some(provenance) = &mut func.provenance {
                let info = self.rule_list[rule];
                let origin = Arc::new(Origin {
                    pass: self.pass.to_string(),
                    rule: Some(format!("`{}` ({})", info.text, info.location())),
                });
                for &v in &created {
                    provenance.tag(v, origin.clone());
                }
            }
            budget.spend(|| {
                let info = self.rule_list[rule];
                format!(
                    "`{}` ({}) at {root} in `{}`",
                    info.text,
                    info.location(),
                    func.name
                )
            });
            self.rewrites += 1;
            ranges.clear();

            let position = self.origin.get(&root).copied().unwrap_or(root);
            let entry = self.history.entry((position, before)).or_insert((0, rule));
            *entry = (entry.0 + 1, rule);
            if let Some(&(count, previous)) = self.history.get(&(position, hash_of(func, new)))
                && count >= CYCLE_REPEATS
            {
                let (first, second) = (self.rule_list[previous], self.rule_list[rule]);
                return Err(AlgebraicError::RuleCycle {
                    function: func.name.clone(),
                    first: first.text,
                    first_at: first.location(),
                    second: second.text,
                    second_at: second.location(),
                });
            }
            if self.rewrites > self.cap {
                return Err(AlgebraicError::TooManyRewrites {
                    function: func.name.clone(),
                    cap: self.cap,
                    last: self.rule_list[rule].text,
                });
            }

            for &v in created.iter().chain([&new]) {
                self.origin.entry(v).or_insert(position);
            }
            queued.resize(func.insts.len(), false);
            let users = uses.users(new).iter().filter_map(|u| match u {
                User::Inst(v) => Some(*v),
                User::Terminator(_) => None,
            });
            let requeue: Vec<Value> = created.iter().copied().chain(users).collect();
            for v in requeue {
                if !queued[v.index()] {
                    queued[v.index()] = true;
                    worklist.push(v);
                }
            }
        }
        Ok(self.rewrites > start)
    }
}
