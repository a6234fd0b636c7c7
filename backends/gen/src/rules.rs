//! The Gen rule set (`gen-algebraic`), in the rule DSL: rewrites that pay on Gen's EU and not
//! in general, run on the optimized IR after the shared backend pipeline, right before
//! lowering ([`BACKEND_PASSES`]).
//!
//! * Division by a constant: `math fdiv` goes to the shared math unit, whose throughput is a
//!   fraction of the ALU's; the reciprocal of a constant folds, leaving one `mul`.
//! * Source modifiers: every float source of an ALU instruction, `mad`'s three included, takes
//!   a free negation and absolute value, but a destination takes neither. A negation or
//!   absolute value of a product is moved onto its sources, where lowering makes it a
//!   modifier, instead of costing a `mov` before a reader that takes no modifiers (a send, a
//!   logic instruction).
//!
//! The other Gen choices are target options the shared rules read ([`crate::target_options`]):
//! `mad` fusion, `b2f(c) * x` as a select (one `and` of the all-ones condition), `fmod`, `ftan`
//! and the inverse trigonometry as arithmetic, no unordered comparisons. Saturation and
//! compare-and-select folding need no rules: `fsat` of a clamp and `bcsel` of a comparison of
//! its arms (`fmin`/`fmax`, lowered to `sel.l`/`sel.ge`) are in the shared sets.

use shrew_engine::rewrite::RuleSet;

shrew_rules_macro::rules! {
    /// Gen instruction selection.
    pub static GEN_SELECT;

    ~fdiv(a, #b) => fmul(a, frcp(b));

    fneg(fmul[is_used_once](a, b)) => fmul(fneg(a), b);
    fabs(fmul[is_used_once](a, b)) => fmul(fabs(a), fabs(b));
    fneg(ffma[is_used_once, nsz](a, b, c)) => ffma(fneg(a), b, fneg(c));
}

/// The Gen rule set.
pub static GEN_ALGEBRAIC: RuleSet = RuleSet {
    name: "gen-algebraic",
    description: "Gen instruction selection: constant divisors, source modifiers",
    groups: &[&GEN_SELECT],
};

/// The backend's rule sets, for registries and listings.
pub static RULE_SETS: &[&RuleSet] = &[&GEN_ALGEBRAIC];

/// What runs on Gen before the shared backend pipeline: every call the inliner can remove goes,
/// whatever the mid-end pipeline was (the rest become subroutines).
pub const FIRST_PASSES: &str = "inline";

/// What runs on Gen after the shared backend pipeline: the Gen rules, the reciprocals they build
/// folded, and the copies and dead values they leave removed.
pub const BACKEND_PASSES: &str = "gen-algebraic,constant-fold,copy-prop,cse,dce";
