//! The rule checker: verification of rewrite rules by evaluation (the IR's verifier is
//! [`crate::verify`]).
//!
//! The rule macro emits one `#[test]` per rule that calls [`assert_rule`]. The checker evaluates
//! the rule's search pattern and its replacement with the opcode table's own semantics
//! ([`AluOp::eval`], the same code the interpreter and the constant folder run) on many inputs,
//! and reports the first input on which they disagree as a [`Counterexample`].
//!
//! # Method
//!
//! 1. **Bit sizes.** Every assignment of sizes to the rule's classes ([`RuleInfo::classes`]) is
//!    checked. An assignment for which a width-generic conversion has no member of the required
//!    size (`i2i` producing 1 bit), or which puts a float literal of the search on fewer than 16
//!    bits (such a literal never matches), cannot occur and is left out.
//! 2. **Components.** When the search root is per component, both trees are evaluated at one
//!    component: per-component semantics are lane-independent. Operands with a fixed component
//!    count (`fdot3` sources, `vecN` sources, pack/unpack) read that many; a variable gets the
//!    largest count any of its uses reads, including replacement swizzles (`a.y` needs two).
//! 3. **Inputs.** A variable is a float if it feeds a float operand (directly, or through `mov`,
//!    `bcsel` or `vecN` whose result is used as a float) or is typed `@float`; else an integer
//!    (a boolean at 1 bit). Inputs are, in this order:
//!    * special values: for floats ±0, ±1, ±2, ±0.5, −1.5, 3, ±1/3, ±inf, NaN, the smallest
//!      denormal and normal, the largest finite value, 2^±k, 1 + ulp; for integers 0, 1, −1, 2, 3,
//!      5, 7, 8, min, max, min + 1, max − 1, alternating bit patterns, powers of two and the shift
//!      counts around the bit size; for both, the rule's own literals and their neighbours. With
//!      at most two variables every combination is checked; with more, every combination of each
//!      pair, the other variables random;
//!    * random values (about 1000 per size assignment, fewer when a rule has many assignments),
//!      a mix of raw bit patterns, small numbers and structured values (powers of two and their
//!      neighbours, bit masks, simple fractions), from a xorshift-style generator (splitmix64)
//!      seeded from the rule's text, so failures reproduce.
//!
//!    When the variables' bits, summed over their components, are at most 16 (two 8-bit
//!    integers, one 16-bit value of any type, booleans), every input is checked instead:
//!    exhaustively, special values first so that counterexamples are simple.
//! 4. **Conditions.** A variable condition restricts the variable's values. Structural conditions
//!    ([`conds::is_structural`]: `is_used_once`, `is_not_const`…) do not depend on the value and
//!    are ignored, as are expression conditions (`op[cond]`), `#a` and `@type`. A range condition
//!    of the library ([`conds::var_condition`], e.g. `is_gt_zero`) restricts each component by
//!    its one-component meaning `holds`, which is true of everything the matcher can admit,
//!    non-constant values included (`is_gt_zero` admits NaN: the range analysis speaks only
//!    about numbers). Every other condition is called on a scratch function holding the
//!    candidate value as a constant of the variable's size and component count, with empty use
//!    lists and a fresh range cache (exact for the library's constant conditions); values it
//!    rejects are not used. When fewer than 16 special values pass, structured candidates
//!    (powers of two, masks, multiples, small and large values, negatives) are added; random
//!    values that fail are redrawn, falling back to the candidates that passed. An assignment
//!    with fewer than 20 satisfying inputs (when not exhaustive) is reported in
//!    [`Report::skipped`]. A size at which a variable's conditions hold for no candidate is one
//!    at which the rule never fires (`is_pos_power_of_two` at 1 bit); only a rule for which that
//!    is so at every size is reported.
//! 5. **Evaluation.** Both trees are evaluated bottom-up: a sized operand at its own size, an
//!    unsized one at the op's common size; literals are masked (`Int`), rounded (`Float`, with
//!    [`fput`]) or 0/1 (`Bool`). Rules with derivatives cannot be evaluated without a quad of
//!    invocations; they are reported as skipped, with no case checked.
//! 6. **Comparison**, under the rule's exactness. The result is a float if the search root
//!    produces one (a float op, or `bcsel`/`mov` of floats).
//!    * Exact rules (no `~`, no `nsz`/`nnan`/`ninf`): bit-exact, except that any NaN equals any
//!      NaN in a float result.
//!    * `nsz`: +0 equals −0 in the result. `nnan`: cases where an input, an intermediate value
//!      or a result is NaN are skipped. `ninf`: likewise for ±inf. Only the root's zero sign is
//!      forgiven: a rule whose lost zero sign turns into a different nonzero result elsewhere
//!      is reported.
//!    * Inexact rules (`~`, which loses all three): additionally, cases where a multiplicative
//!      or exponential float operation underflows (a denormal result, or zero from nonzero
//!      operands) are skipped, as overflows are: `~` assumes real-number algebra, which the ends
//!      of the range break. A float result may differ by at most 4·n·ulp(m) at the result's
//!      size, where n counts the float operations of both trees (a formula opcode counts its
//!      steps: `ffma` 2, `flrp`/`fmod`/`frem` 4, `fdotN` 2N − 1) and m is the largest magnitude
//!      among the float inputs, intermediates and results of both trees, the products inside
//!      `ffma`, `flrp` and `fdotN`, and for `fexp2(x)` |result·x·ln 2| (for `fpow(a, b)`
//!      |result·b·max(1, ln|a|)|): an exponential turns a relative error e of its exponent into
//!      a relative error e·|x|·ln 2 of its result, so `~fexp2(flog2(a)) => a` holds with the
//!      accuracy its conditioning allows, while a rule off by a constant factor does not.
//!    * A non-float result of an inexact rule (a comparison, a conversion to integer) may differ
//!      only when the difference comes from rounding, not from a wrong rule: if the root
//!      operation of one tree, with its operands that are results of float operations (inputs
//!      and literals are exact) each moved by up to the tolerance above, can give the other
//!      tree's result (a comparison of nearly equal values, a conversion at an integer
//!      boundary), or if evaluating both trees again with every unsized float operation at 64
//!      bits (inputs widened exactly, float literals taken at 64 bits) makes them agree.
//!
//! A whole library of rules (hundreds, several sizes each) takes seconds: the trees are compiled
//! once per size assignment into a flat post-order program evaluated in place.

// A counterexample is built once, when a rule fails; the results that carry one are not on a hot
// path, and boxing it would only make the API clumsier.
#![allow(clippy::result_large_err)]

mod compare;
mod eval;
mod inputs;
mod report;
mod shape;
#[cfg(test)]
mod tests;

use super::{Literal, OpName, Pattern, RuleInfo, Size, conds};
use crate::ir::FpFlags;
use crate::rng::Rng;
use eval::{Prog, Values, compile};
use inputs::{CondChecker, Pool, Restriction, VarPlan, targeted_scalars};
use shape::Shape;
use shrew_ops::eval::{fput, mask};
use shrew_ops::{AluOp, Eval, MAX_COMPONENTS};

/// Random cases per size assignment.
const RANDOM_CASES: usize = 1000;
/// Random cases per rule, over all its size assignments: rules with many assignments check
/// fewer random cases per assignment (but at least [`MIN_RANDOM_CASES`]).
const RANDOM_BUDGET: usize = 16_000;
const MIN_RANDOM_CASES: usize = 250;
/// Inputs of at most this many bits (all variables, all components) are checked exhaustively.
const EXHAUSTIVE_BITS: u32 = 16;
/// Below this many special values satisfying a variable's conditions, structured candidates are
/// added.
const MIN_SATISFYING: usize = 16;
/// Below this many checked cases an assignment is reported as poorly covered.
const FEW_CASES: u64 = 20;
/// Cap on the combinations of special values of one size assignment.
const MAX_SPECIAL_CASES: usize = 20_000;

/// What [`verify_rule`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Inputs compared, summed over the size assignments (cases the rule need not preserve —
    /// NaN, infinity, underflow — are not counted).
    pub cases: u64,
    /// The class assignments checked: `sizes[i][c]` is the size of class `c`.
    pub sizes: Vec<Vec<u8>>,
    /// Why (part of) the rule could not be verified: derivatives, conditions no value satisfies,
    /// too few satisfying inputs.
    pub skipped: Option<String>,
}

/// One variable's value in a [`Counterexample`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputValue {
    pub name: &'static str,
    pub bits: u8,
    /// Whether the value was chosen as a float.
    pub float: bool,
    /// One raw value per component.
    pub value: Vec<u64>,
}

/// An input on which a rule's search and replacement disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    pub text: &'static str,
    pub location: String,
    /// The class assignment: `sizes[c]` is the size of class `c`.
    pub sizes: Vec<u8>,
    pub inputs: Vec<InputValue>,
    /// Size and type of the results.
    pub result_bits: u8,
    pub result_float: bool,
    /// The search's and the replacement's results, one raw value per component.
    pub search: Vec<u64>,
    pub replace: Vec<u64>,
    /// Why the two results are not equal under the rule's exactness.
    pub reason: String,
}

impl std::error::Error for Counterexample {}

/// Verifies `rule` and panics with the counterexample if it does not hold.
pub fn assert_rule(rule: &RuleInfo) {
    if let Err(counterexample) = verify_rule(rule) {
        panic!("{counterexample}");
    }
}

/// Checks that `rule`'s search and replacement agree on special, random and (for small inputs)
/// all values at every size assignment, under the rule's exactness. See the module
/// documentation for the method.
pub fn verify_rule(rule: &RuleInfo) -> Result<Report, Counterexample> {
    let mut report = Report::default();
    if let Some(op) = derivative(rule) {
        report.skipped = Some(format!(
            "`{}` is a derivative, which needs the neighbouring invocations of a quad and \
             cannot be evaluated on constants",
            op.name()
        ));
        return Ok(report);
    }
    let shape = Shape::new(rule);
    let assignments = assignments(rule.classes);
    let random_cases =
        (RANDOM_BUDGET / assignments.len().max(1)).clamp(MIN_RANDOM_CASES, RANDOM_CASES);
    let mut rng = Rng::new(hash(rule.text.as_bytes()));
    let mut checker = CondChecker::new();
    let mut notes = Vec::new();
    let mut unsatisfiable = Vec::new();
    let mut impossible = Vec::new();
    for sizes in assignments {
        let mut plan = match Plan::new(rule, &shape, &sizes) {
            Ok(plan) => plan,
            Err(why) => {
                impossible.push(why);
                continue;
            }
        };
        report.sizes.push(sizes.clone());
        let (cases, coverage) = plan.run(&mut checker, &mut rng, random_cases)?;
        report.cases += cases;
        match coverage {
            Coverage::Full => {}
            Coverage::Few(note) => notes.push(format!("{note} (sizes {sizes:?})")),
            Coverage::Unsatisfiable(note) => {
                unsatisfiable.push(format!("{note} (sizes {sizes:?})"))
            }
        }
    }
    // A size at which the conditions hold for no value is one at which the rule never fires;
    // only a rule that fires at no size at all is not verified.
    if report.cases == 0 && !unsatisfiable.is_empty() {
        notes.push(unsatisfiable.join("; "));
    }
    if report.sizes.is_empty() {
        notes.push(format!(
            "no size assignment can occur: {}",
            impossible.join("; ")
        ));
    }
    if !notes.is_empty() {
        report.skipped = Some(notes.join("; "));
    }
    Ok(report)
}

/// The first derivative opcode of either tree.
fn derivative(rule: &RuleInfo) -> Option<AluOp> {
    let mut found = None;
    let mut visit = |p: &Pattern| {
        if let Pattern::Op {
            op: OpName::Op(op), ..
        } = p
            && matches!(op.info().eval, Eval::Derivative { .. })
        {
            found.get_or_insert(*op);
        }
    };
    rule.search.walk(&mut visit);
    rule.replace.walk(&mut visit);
    found
}

/// Every assignment of a size to each class, first class slowest.
pub(super) fn assignments(classes: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    for sizes in classes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                sizes.iter().map(move |&bits| {
                    let mut v = prefix.clone();
                    v.push(bits);
                    v
                })
            })
            .collect();
    }
    out
}

/// The raw value of a literal at `bits` bits, as the rewriter builds it.
pub(super) fn literal_bits(value: Literal, bits: u8) -> u64 {
    match value {
        Literal::Int(x) => mask(x as u64, bits),
        Literal::Float(x) => mask(fput(x, bits), bits),
        Literal::Bool(b) => b as u64,
    }
}

/// FNV-1a.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// How well one size assignment was covered.
enum Coverage {
    Full,
    /// Fewer than [`FEW_CASES`] inputs compared.
    Few(String),
    /// A variable's conditions hold for no value: the rule never fires at these sizes.
    Unsatisfiable(String),
}

struct Plan<'r> {
    rule: &'r RuleInfo,
    sizes: Vec<u8>,
    vars: Vec<VarPlan>,
    int_literals: &'r [i64],
    float_literals: &'r [f64],
    search: Prog,
    replace: Prog,
    /// Both trees with unsized float operations at 64 bits, built when first needed.
    wide: Option<(Prog, Prog)>,
    float_root: bool,
    root_comps: u8,
    float_ops: usize,
    lose_sz: bool,
    lose_nan: bool,
    lose_inf: bool,
    sv: Values,
    rv: Values,
}

impl<'r> Plan<'r> {
    fn new(rule: &'r RuleInfo, shape: &'r Shape, sizes: &[u8]) -> Result<Plan<'r>, String> {
        let size = |s: Size| match s {
            Size::Fixed(bits) => bits,
            Size::Class(c) => sizes[c as usize],
        };
        let vars: Vec<VarPlan> = rule
            .vars
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let bits = match size(v.size) {
                    0 => 32,
                    bits => bits,
                };
                VarPlan {
                    name: v.name,
                    bits,
                    comps: shape.var_comps[i],
                    float: shape.var_float[i] && bits >= 16,
                    conds: v
                        .conds
                        .iter()
                        .filter(|c| !conds::is_structural(c.name))
                        .map(Restriction::of)
                        .collect(),
                }
            })
            .collect();
        let root_comps = shape.root_comps;
        let search = compile(&rule.search, sizes, &vars, root_comps, false, false, true)?;
        let float_root = search.root().float;
        let replace = compile(
            &rule.replace,
            sizes,
            &vars,
            root_comps,
            float_root,
            false,
            false,
        )?;
        let float_ops = search.float_ops() + replace.float_ops();
        let loses = rule.loses.0 | if rule.inexact { 7 } else { 0 };
        let sv = vec![[0; MAX_COMPONENTS]; search.nodes.len()];
        let rv = vec![[0; MAX_COMPONENTS]; replace.nodes.len()];
        Ok(Plan {
            rule,
            sizes: sizes.to_vec(),
            vars,
            int_literals: &shape.int_literals,
            float_literals: &shape.float_literals,
            search,
            replace,
            wide: None,
            float_root,
            root_comps,
            float_ops,
            lose_sz: loses & FpFlags::PRESERVE_SIGNED_ZERO.0 != 0,
            lose_nan: loses & FpFlags::PRESERVE_NAN.0 != 0,
            lose_inf: loses & FpFlags::PRESERVE_INF.0 != 0,
            sv,
            rv,
        })
    }

    /// Runs every case of this assignment. Returns the number of cases compared and how well
    /// they cover it.
    fn run(
        &mut self,
        checker: &mut CondChecker,
        rng: &mut Rng,
        random_cases: usize,
    ) -> Result<(u64, Coverage), Counterexample> {
        let total_bits: u32 = self
            .vars
            .iter()
            .map(|v| v.bits as u32 * v.comps as u32)
            .sum();
        let exhaustive = total_bits <= EXHAUSTIVE_BITS;
        let mut pools = Vec::with_capacity(self.vars.len());
        for v in &self.vars {
            let specials = Pool::from_scalars(&self.specials(v), v.comps);
            let pool = if exhaustive {
                self.all_values(v, &specials, checker)
            } else {
                let mut pool = specials.filter(|x| checker.holds(&v.conds, v.bits, x));
                if !v.conds.is_empty() && pool.len() < MIN_SATISFYING {
                    let targeted = Pool::from_scalars(&targeted_scalars(v.bits, v.float), v.comps);
                    for i in 0..targeted.len() {
                        let x = targeted.get(i);
                        if !pool.contains(x) && checker.holds(&v.conds, v.bits, x) {
                            pool.push(x);
                        }
                    }
                }
                pool
            };
            if pool.len() == 0 {
                return Ok((
                    0,
                    Coverage::Unsatisfiable(format!(
                        "no value of `{}` at {} bits satisfies its conditions",
                        v.name, v.bits
                    )),
                ));
            }
            pools.push(pool);
        }
        let mut inputs = vec![[0u64; MAX_COMPONENTS]; self.vars.len()];
        let mut cases = 0;
        if exhaustive || self.vars.len() <= 2 {
            let all: Vec<usize> = (0..pools.len()).collect();
            cases += self.combinations(&pools, &all, &mut inputs, checker, rng)?;
        } else {
            for i in 0..pools.len() {
                for j in i + 1..pools.len() {
                    cases += self.combinations(&pools, &[i, j], &mut inputs, checker, rng)?;
                }
            }
        }
        if exhaustive {
            return Ok((cases, Coverage::Full));
        }
        'random: for _ in 0..random_cases {
            for i in 0..self.vars.len() {
                if !self.random_input(i, &pools[i], checker, rng, &mut inputs[i]) {
                    continue 'random;
                }
            }
            cases += self.check(&inputs)? as u64;
        }
        let coverage = if cases < FEW_CASES {
            Coverage::Few(format!(
                "only {cases} inputs satisfy the conditions and were compared"
            ))
        } else {
            Coverage::Full
        };
        Ok((cases, coverage))
    }

    /// Evaluates both trees on `inputs` and compares the results. Returns whether the case was
    /// compared (not skipped because the rule does not preserve NaN, infinity or underflow).
    fn check(&mut self, inputs: &[[u64; MAX_COMPONENTS]]) -> Result<bool, Counterexample> {
        self.search.run(inputs, &mut self.sv);
        self.replace.run(inputs, &mut self.rv);
        if (self.lose_nan || self.lose_inf) && self.excluded() {
            return Ok(false);
        }
        let bits = self.search.root().bits;
        let (s, r) = (self.sv[self.sv.len() - 1], self.rv[self.rv.len() - 1]);
        let mut tolerance = None;
        for k in 0..self.root_comps as usize {
            let Some(reason) = self.mismatch(s[k], r[k], bits, &mut tolerance) else {
                continue;
            };
            if !self.float_root && self.rule.inexact {
                if self.rounding_decides(k, bits) || self.wide_agrees(inputs) {
                    return Ok(true);
                }
                let reason = format!(
                    "{reason}; neither moving the root's float operands by the tolerance nor \
                     evaluating every float operation at 64 bits explains the difference, so \
                     this is not rounding"
                );
                return Err(self.counterexample(inputs, reason));
            }
            return Err(self.counterexample(inputs, reason));
        }
        Ok(true)
    }
}
