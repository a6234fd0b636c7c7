//! `eqsat`: equality saturation of every basic block with the rule sets, and extraction under
//! the target's cost model.
//!
//! What: each block's pure dataflow becomes an e-graph ([`crate::egraph::region`]); the rules
//! of the sets that an e-graph can decide (see [`crate::egraph::rules::egraph_ready`]) and the
//! built-in equalities of swizzles and memory tokens (a load of what a store wrote is the
//! stored value; loads of one address under one token are one value) run on it until it saturates or a limit stops them; extraction
//! picks the cheapest computation of the block's roots, counting shared values once
//! ([`crate::egraph::extract`]); and when that is cheaper than what the block computes now, the
//! block's pure instructions are replaced with it.
//!
//! Why: the greedy matcher commits to the first rule that matches, so it cannot take a step
//! that only pays off after further rewrites, nor choose between two rewritings by what the
//! target pays for them. The e-graph keeps every form it finds and lets the target's costs
//! choose (for example `fdiv` on Gen, which has a divide, and `frcp`+`fmul` on R600).
//!
//! Invariants: the block computes the same values (up to the exactness of the rules, as with
//! `algebraic`); skeleton instructions (everything but ALU operations and constants) keep their
//! order; a block is only rebuilt when the choice is strictly cheaper under the cost model, so
//! the pass never makes a block more expensive and reaches a fixpoint.
//!
//! Options: the rule sets and the target options their guards read, the cost model, and the
//! limits of one block's saturation ([`Limits`]: iterations and e-nodes, which decide the
//! result, and a time limit far above them that only guards against a runaway rule set).
//! Blocks whose e-graph starts above half the node limit are left alone. The scheduler is egg's backoff
//! scheduler, which bans a rule for a few iterations when it matches too often, so one explosive
//! rule (reassociation) cannot take the node budget from the others.

use super::algebraic::RuleStats;
use super::manager::{Pass, PassContext};
use crate::egraph::extract::extract;
use crate::egraph::region::Region;
use crate::egraph::rules::{BUILTINS, builtin_rewrites, rewrites};
use crate::egraph::{CostModel, EGraph, FactsAnalysis, Node};
use crate::ir::{Function, Shader, Variable};
use crate::rewrite::{RuleSet, TargetOptions};
use crate::uses::Uses;
use egg::{BackoffScheduler, Rewrite, Runner, StopReason, Symbol};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How far one block's saturation may go.
///
/// The iteration and node limits bound the work per block, so the pass stays linear in the
/// number of blocks, and they stop saturation at the same point on every machine: the output
/// depends only on the input. The time limit is a safety net far above what those limits
/// allow on the rule sets shipped (the largest block they admit saturates in well under 0.1 s
/// in a release build); when it strikes, the result depends on the machine's speed, and the pass says so in
/// [`PassContext::stopped_early`].
#[derive(Clone, Debug)]
pub struct Limits {
    pub iterations: usize,
    pub nodes: usize,
    pub time: Duration,
}

impl Default for Limits {
    /// Enough for the rule sets to saturate typical blocks (most settle within five
    /// iterations), small enough to keep the slowest shaders of the piglit corpus fast.
    fn default() -> Limits {
        Limits {
            iterations: 16,
            nodes: 4000,
            time: Duration::from_secs(1),
        }
    }
}

/// What saturating and extracting one block did.
struct BlockOutcome {
    rebuilt: bool,
    /// The time limit stopped saturation (see [`Limits`]).
    timed_out: bool,
}

/// The `eqsat` pass.
pub struct Eqsat {
    rules: Vec<Rewrite<Node, FactsAnalysis>>,
    /// For every rule's name: the statistics it counts in (see
    /// [`super::manager::PassContext::rule_stats`]) and its index there.
    sources: FxHashMap<Symbol, (String, usize)>,
    model: Arc<dyn CostModel>,
    pub limits: Limits,
}

impl Eqsat {
    /// The pass with the rules of `sets` whose guards hold under `opts`, extracting under
    /// `model`.
    pub fn new(
        sets: &[&'static RuleSet],
        opts: &TargetOptions,
        model: Arc<dyn CostModel>,
    ) -> Eqsat {
        let mut rules = Vec::new();
        let mut sources: FxHashMap<Symbol, (String, usize)> = BUILTINS
            .iter()
            .enumerate()
            .map(|(index, (name, _))| (Symbol::from(*name), ("eqsat:built-in".to_string(), index)))
            .collect();
        for set in sets {
            for (index, rule) in rewrites(set, opts) {
                sources.insert(rule.name, (format!("eqsat:{}", set.name), index));
                rules.push(rule);
            }
        }
        Eqsat {
            rules,
            sources,
            model,
            limits: Limits::default(),
        }
    }

    /// Saturates and extracts one block; rebuilds it when the choice is cheaper. The rules'
    /// applications count in `stats` either way.
    fn run_block(
        &self,
        func: &mut Function,
        variables: &[Variable],
        block: crate::ir::BlockId,
        stats: &mut BTreeMap<String, RuleStats>,
    ) -> BlockOutcome {
        let uses = Uses::build(func);
        let mut region = Region::build(func, variables, &uses, block, self.model.as_ref());
        // A block that already fills most of the node budget leaves the rules no room, and
        // extraction's memory grows with the square of the classes: leave it to `algebraic`.
        if region.roots.is_empty() || region.egraph.total_number_of_nodes() > self.limits.nodes / 2
        {
            return BlockOutcome {
                rebuilt: false,
                timed_out: false,
            };
        }
        let egraph = std::mem::replace(&mut region.egraph, EGraph::new(FactsAnalysis::default()));
        let runner = Runner::default()
            .with_scheduler(BackoffScheduler::default())
            .with_iter_limit(self.limits.iterations)
            .with_node_limit(self.limits.nodes)
            .with_time_limit(self.limits.time)
            .with_egraph(egraph)
            .run(
                builtin_rewrites(self.limits.nodes)
                    .iter()
                    .chain(&self.rules),
            );
        for iteration in &runner.iterations {
            for (name, &count) in &iteration.applied {
                let (key, index) = &self.sources[name];
                stats
                    .entry(key.clone())
                    .or_default()
                    .add(*index, count as u64);
            }
        }
        let timed_out = matches!(runner.stop_reason, Some(StopReason::TimeLimit(_)));
        region.egraph = runner.egraph;
        let roots: Vec<_> = region.roots.iter().map(|&(_, class)| class).collect();
        let choice = extract(
            &region.egraph,
            self.model.as_ref(),
            |n| region.position(n),
            &roots,
        );
        let rebuilt = match region.extracted_cost(&choice) {
            Some(cost) if cost < region.original_cost => {
                region.rebuild(func, &choice);
                true
            }
            _ => false,
        };
        BlockOutcome { rebuilt, timed_out }
    }
}

impl Pass for Eqsat {
    fn name(&self) -> &str {
        "eqsat"
    }

    fn description(&self) -> &str {
        "equality saturation of each block with the algebraic rules, extracted under the target's costs"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let stats = &mut context.rule_stats;
        let mut timed_out = Vec::new();
        let progress = context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let (func, variables) = (&mut shader.functions[f], &shader.variables);
                transformations.each(func.blocks(), |block| {
                    let outcome = self.run_block(func, variables, block, stats);
                    if outcome.timed_out {
                        timed_out.push(format!("fn {}: b{}", func.name, block.index()));
                    }
                    outcome
                        .rebuilt
                        .then_some(move || format!("b{}", block.index()))
                });
            });
        if !timed_out.is_empty() {
            context.stopped_early.push(format!(
                "eqsat: the time limit ({:?} a block) stopped saturating {} block(s), so their \
                 result depends on the machine's speed: {}",
                self.limits.time,
                timed_out.len(),
                timed_out.join(", ")
            ));
        }
        Ok(progress)
    }
}
