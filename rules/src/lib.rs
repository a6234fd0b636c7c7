//! The algebraic rule sets of shrew, written in the rule DSL (`shrew_rules_macro::rules!`).
//!
//! Each module holds one rule group on one theme; a rule set lists groups in priority order (the
//! first rule of the first group that matches an instruction wins):
//!
//! * [`ALGEBRAIC`] (`algebraic`): the main simplification and canonicalisation rules, every
//!   group but [`late`], ending with the equalities of [`equal`], which only `eqsat` runs;
//! * [`LATE`] (`algebraic-late`): fusion and target-driven lowering, run after the main set.
//!
//! Every rule is verified by a generated test that evaluates its search and replacement with the
//! opcode table's semantics.

pub mod arith;
pub mod bitops;
pub mod bool;
pub mod conv;
pub mod equal;
pub mod fcmp;
pub mod fsat;
pub mod intmul;
pub mod late;
pub mod minmax;

use shrew_engine::passes::algebraic::RuleSetPass;
use shrew_engine::passes::eqsat::Eqsat;
use shrew_engine::passes::manager::{Pass, Registry};
use shrew_engine::rewrite::{RuleSet, TargetOptions};

/// The main algebraic rules: conversions and booleans first (they canonicalise what the other
/// groups look at), then comparisons and selects, saturation, min/max, arithmetic, integer
/// multiplication and division, and bit operations.
pub static ALGEBRAIC: RuleSet = RuleSet {
    name: "algebraic",
    description: "algebraic simplification and canonicalisation",
    groups: &[
        &conv::CONV,
        &bool::BOOL,
        &fcmp::FCMP,
        &fsat::FSAT,
        &minmax::MINMAX,
        &arith::ARITH,
        &intmul::INTMUL,
        &bitops::BITOPS,
        &equal::EQUAL,
    ],
};

/// Late rules: multiply-add fusion and the lowering of operations the target lacks.
pub static LATE: RuleSet = RuleSet {
    name: "algebraic-late",
    description: "late fusion and lowering driven by the target options",
    groups: &[&late::LATE],
};

/// Every rule set, for listings and lookup by name.
pub static SETS: &[&RuleSet] = &[&ALGEBRAIC, &LATE];

/// The rule set called `name`.
pub fn set(name: &str) -> Option<&'static RuleSet> {
    SETS.iter().copied().find(|s| s.name == name)
}

/// The pipeline `default` names. Loops of constant trip count are unrolled in each function
/// before inlining: a `return` in a callee's loop is a plain exit there, where inlined it becomes
/// a flag and a `break` whose condition the unroller cannot follow. Target lowerings that build
/// arithmetic (`lower-inverse-trig`) run next, so that the rules see what they build.
pub const DEFAULT_PIPELINE: &str = "vars-to-ssa,constant-fold,dead-cf,loop-unroll,inline,lower-inverse-trig,split-vars,find-array-copies,copy-prop-vars,(vars-to-ssa,constant-fold,dead-cf,loop-unroll,if-convert,discard-if,copy-prop,phi-simplify,algebraic,cse,memory-cse,dce)*,move-discards,algebraic-late,copy-prop,cse,dce";

/// What runs between the mid-end pipeline and a backend: the arguments and results of calls
/// left go through temporaries caller and callee share, compute shaders' derived system values
/// become arithmetic of the local and workgroup IDs, outputs read back, indexed at run time
/// or stored more than once become temporaries, temporaries holding only constants move to
/// the constant data, other run-time array indices become selects (except the array steps a
/// target indexing its registers keeps: R600's), whole-variable copies become copies of each
/// scalar and vector, split variables have their indices lowered again (splitting an array of
/// matrices gives arrays of columns, which the target may not index), the arrays left become
/// SSA values (small selections of them, and of the outputs
/// stored in their arms, flatten to selects), the vector operations the target asks to split
/// become scalar ones (those reading constants with mixed components, so each component
/// folds on its own), inverse trigonometry becomes arithmetic where the target asks, all
/// of it is folded and simplified again (the selects the indices became), textures read at
/// run-time array indices become a read per element and a select, integer division
/// becomes arithmetic where the target asks (after the rules turned divisions by constants
/// into shifts and multiplications), so do the 64-bit float and integer operations the target lacks
/// (after the rules lowered `fmod` to a division and a floor), and inputs, outputs,
/// uniforms, constants and memory go to their offsets, whose arithmetic is simplified last.
pub const BACKEND_PIPELINE: &str = "lower-call-params,lower-system-values,outputs-to-temporaries,opt-large-constants,lower-indirect-derefs,lower-var-copies,split-vars,lower-indirect-derefs,vars-to-ssa,flatten-deep-cf,vars-to-ssa,if-convert,lower-alu-to-scalar,lower-inverse-trig,copy-prop,constant-fold,algebraic,lower-texture-indices,lower-idiv,lower-int64,lower-doubles,algebraic-late,copy-prop,cse,dce,lower-block-indices,lower-io,algebraic,copy-prop,cse,dce";

/// Every pass a mid-end pipeline may name: the engine's, one per rule set (these and the
/// backend's `backend_sets`), and `eqsat` with the main rules, all for the target options `opts`.
pub fn registry(opts: &TargetOptions, backend_sets: &[&'static RuleSet]) -> Registry {
    let mut passes = shrew_engine::passes::standard(opts);
    passes.extend(SETS.iter().chain(backend_sets).map(|&set| {
        Box::new(RuleSetPass {
            set,
            opts: opts.clone(),
        }) as Box<dyn Pass>
    }));
    passes.push(Box::new(Eqsat::new(
        &[&ALGEBRAIC],
        opts,
        opts.costs.model.0.clone(),
    )));
    Registry::new(passes, DEFAULT_PIPELINE)
}

#[cfg(test)]
mod tests {
    use shrew_engine::rewrite::shadow::shadowed_rules;

    /// The macro rejects a rule pre-empted within its group; across the groups of a set, no rule
    /// may be pre-empted either.
    #[test]
    fn no_rule_of_a_set_is_preempted_by_an_earlier_group() {
        for set in super::SETS {
            let shadowed: Vec<String> = shadowed_rules(set)
                .iter()
                .map(|s| {
                    format!(
                        "`{}` ({}) never fires: `{}` ({}) matches everything it matches",
                        s.rule.text,
                        s.rule.location(),
                        s.by.text,
                        s.by.location()
                    )
                })
                .collect();
            assert!(shadowed.is_empty(), "{}: {shadowed:#?}", set.name);
        }
    }
}
