//! Verification of rewrite rules by evaluation.
//!
//! The rule macro emits one `#[test]` per rule that calls [`assert_rule`]. The verifier evaluates
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

use super::{Ctx, Literal, OpName, Pattern, RangeCache, RuleInfo, Size, Src, VarCond, conds};
use crate::ir::{FpFlags, Function, IDENTITY_SWIZZLE, Inst, InstKind, ValType, Value};
use crate::rng::Rng;
use crate::uses::Uses;
use shrew_ops::eval::{Bits, fget, fput, frexp, ldexp, mask};
use shrew_ops::{AluOp, BaseType, Eval, MAX_COMPONENTS, OpInfo};
use std::fmt;

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

/// `0x…` with as many digits as the size needs, and the float it encodes.
fn format_value(raw: u64, bits: u8, float: bool) -> String {
    let digits = (bits as usize).div_ceil(4).max(1);
    let hex = format!("0x{:0digits$x}", mask(raw, bits));
    if float && bits >= 16 {
        format!("{hex} ({})", float_text(raw, bits))
    } else if bits > 1 {
        format!("{hex} ({})", shrew_ops::eval::sext(raw, bits))
    } else {
        hex
    }
}

fn float_text(raw: u64, bits: u8) -> String {
    match bits {
        // Every half is exact as an f32, whose shortest representation is short enough.
        16 | 32 => format!("{:?}", fget(raw, bits) as f32),
        _ => format!("{:?}", fget(raw, bits)),
    }
}

fn format_vector(values: &[u64], bits: u8, float: bool) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|&v| format_value(v, bits, float))
        .collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", parts.join(", "))
    }
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "rule `{}` ({}) does not hold", self.text, self.location)?;
        if self.sizes.is_empty() {
            writeln!(f, "  bit sizes: all fixed")?;
        } else {
            let classes: Vec<String> = self
                .sizes
                .iter()
                .enumerate()
                .map(|(c, bits)| format!("class {c} = {bits}"))
                .collect();
            writeln!(f, "  bit sizes: {}", classes.join(", "))?;
        }
        for input in &self.inputs {
            let ty = if input.float { "float" } else { "int" };
            writeln!(
                f,
                "  {} ({}-bit {ty}) = {}",
                input.name,
                input.bits,
                format_vector(&input.value, input.bits, input.float)
            )?;
        }
        writeln!(
            f,
            "  search      = {}",
            format_vector(&self.search, self.result_bits, self.result_float)
        )?;
        writeln!(
            f,
            "  replacement = {}",
            format_vector(&self.replace, self.result_bits, self.result_float)
        )?;
        write!(f, "  {}", self.reason)
    }
}

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

/// FNV-1a.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

// Shape: what the rule says independently of the sizes.

/// The opcode table entry describing every member of `name` (a family's members share their
/// base types and component counts).
fn representative(name: OpName) -> &'static OpInfo {
    match name {
        OpName::Op(op) => op.info(),
        OpName::Conv(family) => family.members()[0].info(),
    }
}

/// Whether source `i` of `op` passes its value through to the destination unchanged, so that
/// its type is the type the destination is used as.
fn passes_through(name: OpName, i: usize) -> bool {
    use AluOp::*;
    match name {
        OpName::Op(Mov | Vec2 | Vec3 | Vec4 | Vec8 | Vec16) => true,
        OpName::Op(Bcsel) => i > 0,
        _ => false,
    }
}

/// Component counts, variable types and literals of a rule.
struct Shape {
    var_comps: Vec<u8>,
    var_float: Vec<bool>,
    /// Components of the root.
    root_comps: u8,
    int_literals: Vec<i64>,
    float_literals: Vec<f64>,
}

impl Shape {
    fn new(rule: &RuleInfo) -> Shape {
        let root_comps = match &rule.search {
            Pattern::Op { op, .. } => representative(*op).dst.comps.max(1),
            _ => 1,
        };
        let mut shape = Shape {
            var_comps: vec![1; rule.vars.len()],
            var_float: rule
                .vars
                .iter()
                .map(|v| v.ty == Some(BaseType::Float))
                .collect(),
            root_comps,
            int_literals: Vec::new(),
            float_literals: Vec::new(),
        };
        // Twice, so that the replacement root's type, which comes from the variables' types,
        // reaches the variables the replacement passes through.
        for _ in 0..2 {
            shape.visit(&rule.search, root_comps, false);
            let float_root = shape.float_valued(&rule.search);
            shape.visit(&rule.replace, root_comps, float_root);
        }
        for (float, var) in shape.var_float.iter_mut().zip(rule.vars) {
            if matches!(
                var.ty,
                Some(BaseType::Int | BaseType::Uint | BaseType::Bool)
            ) {
                *float = false;
            }
        }
        let mut literals = |p: &Pattern| match p {
            Pattern::Const {
                value: Literal::Int(x),
                ..
            } => shape.int_literals.push(*x),
            Pattern::Const {
                value: Literal::Float(x),
                ..
            } => shape.float_literals.push(*x),
            _ => {}
        };
        rule.search.walk(&mut literals);
        rule.replace.walk(&mut literals);
        shape
    }

    /// Records what `p`, read at `ctx` components as a float or not, needs of its variables.
    fn visit(&mut self, p: &Pattern, ctx: u8, float: bool) {
        match p {
            Pattern::Var { index, swizzle } => {
                let i = *index as usize;
                let needed = match swizzle {
                    Some(s) => (0..ctx as usize)
                        .map(|k| s.get(k).map_or(k, |&c| c as usize) + 1)
                        .max()
                        .unwrap_or(1) as u8,
                    None => ctx,
                };
                self.var_comps[i] = self.var_comps[i].max(needed);
                self.var_float[i] |= float;
            }
            Pattern::Const { .. } => {}
            Pattern::Op { op, srcs, .. } => {
                let info = representative(*op);
                let comps = if info.dst.comps != 0 {
                    info.dst.comps
                } else {
                    ctx
                };
                for (i, (src, operand)) in srcs.iter().zip(info.srcs).enumerate() {
                    let src_ctx = if operand.comps != 0 {
                        operand.comps
                    } else {
                        comps
                    };
                    let src_float =
                        operand.base == BaseType::Float || (passes_through(*op, i) && float);
                    self.visit(src, src_ctx, src_float);
                }
            }
        }
    }

    /// Whether `p` produces a float.
    fn float_valued(&self, p: &Pattern) -> bool {
        match p {
            Pattern::Var { index, .. } => self.var_float[*index as usize],
            Pattern::Const { value, .. } => matches!(value, Literal::Float(_)),
            Pattern::Op { op, srcs, .. } => {
                representative(*op).dst.base == BaseType::Float
                    || srcs
                        .iter()
                        .enumerate()
                        .any(|(i, s)| passes_through(*op, i) && self.float_valued(s))
            }
        }
    }
}

// Compiled trees.

#[derive(Clone, Debug)]
enum Kind {
    /// Reads variable `var` (stored at `from` bits) through `swizzle`; converted to the node's
    /// size when it differs (floats widened in the 64-bit re-evaluation).
    Var {
        var: usize,
        swizzle: Option<&'static [u8]>,
        from: u8,
    },
    Const(u64),
    /// A float re-rounded from `from` bits to the node's size (64-bit re-evaluation only).
    Conv {
        src: usize,
        from: u8,
    },
    Op {
        op: AluOp,
        srcs: Vec<usize>,
        src_bits: Vec<u8>,
        /// Components each source is read at.
        src_comps: Vec<u8>,
    },
}

#[derive(Clone, Debug)]
struct Node {
    kind: Kind,
    bits: u8,
    /// Components the node computes.
    comps: u8,
    /// Components its consumer reads (at least `comps`; the rest repeat the computed ones).
    ctx: u8,
    /// The value is a float (NaN/inf checks, tolerance).
    float: bool,
    /// A float operation (the opcode's destination is a float).
    float_op: bool,
}

/// A tree in post order: sources before their consumer, the root last.
#[derive(Clone, Debug, Default)]
struct Prog {
    nodes: Vec<Node>,
}

type Values = Vec<[u64; MAX_COMPONENTS]>;

impl Prog {
    fn root(&self) -> &Node {
        self.nodes.last().expect("a tree has a root")
    }

    /// Float operations of the tree, counting the steps of formula opcodes.
    fn float_ops(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.float_op)
            .map(|n| match &n.kind {
                Kind::Op { op, .. } => rounding_steps(*op),
                _ => 1,
            })
            .sum()
    }

    /// Evaluates every node into `vals` (one entry per node).
    fn run(&self, inputs: &[[u64; MAX_COMPONENTS]], vals: &mut Values) {
        for (i, node) in self.nodes.iter().enumerate() {
            let (done, rest) = vals.split_at_mut(i);
            let out = &mut rest[0];
            let n = node.comps as usize;
            match &node.kind {
                Kind::Var { var, swizzle, from } => {
                    let input = &inputs[*var];
                    for (k, slot) in out[..n].iter_mut().enumerate() {
                        let c = swizzle.and_then(|s| s.get(k)).map_or(k, |&c| c as usize);
                        *slot = if *from == node.bits {
                            input[c]
                        } else {
                            fput(fget(input[c], *from), node.bits)
                        };
                    }
                }
                Kind::Const(v) => out[..n].fill(*v),
                Kind::Conv { src, from } => {
                    for (slot, &v) in out[..n].iter_mut().zip(&done[*src][..n]) {
                        *slot = fput(fget(v, *from), node.bits);
                    }
                }
                Kind::Op {
                    op,
                    srcs,
                    src_bits,
                    src_comps,
                } => {
                    let mut refs: [&[u64]; 16] = [&[]; 16];
                    for ((r, &s), &c) in refs.iter_mut().zip(srcs).zip(src_comps) {
                        *r = &done[s][..c as usize];
                    }
                    let bits = Bits {
                        src: src_bits,
                        dst: node.bits,
                    };
                    // Derivatives, the only opcodes eval refuses, are rejected up front.
                    let evaluated = op.eval(&refs[..srcs.len()], bits, &mut out[..n]);
                    debug_assert!(evaluated);
                }
            }
            for k in n..node.ctx as usize {
                out[k] = out[k % n];
            }
        }
    }
}

/// Builds a [`Prog`] for one size assignment.
struct Compiler<'a> {
    sizes: &'a [u8],
    vars: &'a [VarPlan],
    /// The 64-bit re-evaluation: unsized float operations at 64 bits.
    wide: bool,
    /// Compiling the search (whose float literals must be at least 16 bits to match).
    search: bool,
    nodes: Vec<Node>,
}

/// The raw value of a literal at `bits` bits, as the rewriter builds it.
pub(super) fn literal_bits(value: Literal, bits: u8) -> u64 {
    match value {
        Literal::Int(x) => mask(x as u64, bits),
        Literal::Float(x) => mask(fput(x, bits), bits),
        Literal::Bool(b) => b as u64,
    }
}

impl Compiler<'_> {
    fn size(&self, size: Size) -> u8 {
        match size {
            Size::Fixed(bits) => bits,
            Size::Class(c) => self.sizes[c as usize],
        }
    }

    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Compiles `p`, read by its consumer at `ctx` components, as a float operand or not, at
    /// `expected` bits (used when the pattern leaves a literal's size open).
    fn compile(
        &mut self,
        p: &Pattern,
        ctx: u8,
        float_ctx: bool,
        expected: u8,
    ) -> Result<usize, String> {
        match *p {
            Pattern::Var { index, swizzle } => {
                let var = &self.vars[index as usize];
                let bits = if self.wide && var.float { 64 } else { var.bits };
                Ok(self.push(Node {
                    kind: Kind::Var {
                        var: index as usize,
                        swizzle,
                        from: var.bits,
                    },
                    bits,
                    comps: ctx,
                    ctx,
                    float: var.float,
                    float_op: false,
                }))
            }
            Pattern::Const { value, size } => {
                let mut bits = match self.size(size) {
                    0 => expected,
                    bits => bits,
                };
                let is_float_literal = matches!(value, Literal::Float(_));
                if self.search && is_float_literal && bits < 16 {
                    return Err(format!(
                        "a float literal of the search would have {bits} bits"
                    ));
                }
                let float = bits >= 16 && (float_ctx || is_float_literal);
                let mut raw = literal_bits(value, bits);
                if self.wide && float && bits != 64 {
                    raw = match value {
                        Literal::Float(x) => fput(x, 64),
                        _ => fput(fget(raw, bits), 64),
                    };
                    bits = 64;
                }
                Ok(self.push(Node {
                    kind: Kind::Const(raw),
                    bits,
                    comps: ctx,
                    ctx,
                    float,
                    float_op: false,
                }))
            }
            Pattern::Op {
                op: name,
                size,
                src_size,
                srcs,
                ..
            } => {
                let dst_size = self.size(size);
                let op = name.resolve(dst_size).ok_or_else(|| {
                    format!("`{}` has no member producing {dst_size} bits", name.name())
                })?;
                let info = op.info();
                let mut dst_bits = if info.dst.bits != 0 {
                    info.dst.bits
                } else {
                    dst_size
                };
                let common = match src_size {
                    Size::Fixed(0) => dst_bits,
                    s => self.size(s),
                };
                let comps = if info.dst.comps != 0 {
                    info.dst.comps
                } else {
                    ctx
                };
                let mut children = Vec::with_capacity(srcs.len());
                let mut src_bits = Vec::with_capacity(srcs.len());
                let mut src_comps = Vec::with_capacity(srcs.len());
                for (i, (src, operand)) in srcs.iter().zip(info.srcs).enumerate() {
                    let bits = if operand.bits != 0 {
                        operand.bits
                    } else {
                        common
                    };
                    let src_ctx = if operand.comps != 0 {
                        operand.comps
                    } else {
                        comps
                    };
                    let src_float =
                        operand.base == BaseType::Float || (passes_through(name, i) && float_ctx);
                    children.push(self.compile(src, src_ctx, src_float, bits)?);
                    src_bits.push(bits);
                    src_comps.push(src_ctx);
                }
                let float = info.dst.base == BaseType::Float
                    || children.iter().enumerate().any(|(i, &c)| {
                        passes_through(name, i) && (float_ctx || self.nodes[c].float)
                    });
                if self.wide {
                    for (i, operand) in info.srcs.iter().enumerate() {
                        let float_operand =
                            operand.base == BaseType::Float || (passes_through(name, i) && float);
                        if operand.bits == 0 && float_operand {
                            src_bits[i] = 64;
                        }
                    }
                    if info.dst.bits == 0 && float {
                        dst_bits = 64;
                    }
                    // Convert float sources whose size now differs from what the op reads.
                    for (i, child) in children.iter_mut().enumerate() {
                        let node = &self.nodes[*child];
                        if node.float && node.bits != src_bits[i] && src_bits[i] >= 16 {
                            let (from, ctx) = (node.bits, node.ctx);
                            *child = self.push(Node {
                                kind: Kind::Conv { src: *child, from },
                                bits: src_bits[i],
                                comps: ctx,
                                ctx,
                                float: true,
                                float_op: false,
                            });
                        }
                    }
                }
                Ok(self.push(Node {
                    kind: Kind::Op {
                        op,
                        srcs: children,
                        src_bits,
                        src_comps,
                    },
                    bits: dst_bits,
                    comps,
                    ctx: ctx.max(comps),
                    float,
                    float_op: info.dst.base == BaseType::Float,
                }))
            }
        }
    }
}

fn compile(
    p: &Pattern,
    sizes: &[u8],
    vars: &[VarPlan],
    root_comps: u8,
    float_root: bool,
    wide: bool,
    search: bool,
) -> Result<Prog, String> {
    let mut c = Compiler {
        sizes,
        vars,
        wide,
        search,
        nodes: Vec::new(),
    };
    c.compile(p, root_comps, float_root, 32)?;
    Ok(Prog { nodes: c.nodes })
}

// Inputs.

/// A variable at one size assignment.
struct VarPlan {
    name: &'static str,
    bits: u8,
    comps: u8,
    /// Chosen as a float (only at 16 bits or more).
    float: bool,
    /// The conditions that restrict its value.
    conds: Vec<Restriction>,
}

/// How the verifier applies one variable condition.
#[derive(Copy, Clone)]
enum Restriction {
    /// A range condition of the library, by its one-component meaning: true of every
    /// component of any value the matcher admits, including non-constant values the range
    /// analysis only bounds (`is_gt_zero` admits NaN, which a NaN constant's exact range does
    /// not show).
    Holds(fn(u64, u8) -> bool),
    /// Any other condition, called on a constant: exact for the library's constant conditions,
    /// and the only way to apply a condition defined outside it.
    Call(fn(&Ctx<'_>, &Src) -> bool),
}

impl Restriction {
    fn of(cond: &VarCond) -> Restriction {
        match conds::var_condition(cond.name) {
            Some(c) if c.kind == conds::CondKind::Range => match c.holds {
                Some(holds) => Restriction::Holds(holds),
                None => Restriction::Call(cond.check),
            },
            _ => Restriction::Call(cond.check),
        }
    }
}

/// Candidate values of one variable: `comps` raw values per entry.
#[derive(Clone, Debug)]
struct Pool {
    comps: usize,
    data: Vec<u64>,
}

impl Pool {
    fn new(comps: u8) -> Pool {
        Pool {
            comps: comps as usize,
            data: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.data.len() / self.comps
    }

    fn get(&self, i: usize) -> &[u64] {
        &self.data[i * self.comps..(i + 1) * self.comps]
    }

    fn push(&mut self, v: &[u64]) {
        self.data.extend_from_slice(&v[..self.comps]);
    }

    fn contains(&self, v: &[u64]) -> bool {
        self.data.chunks(self.comps).any(|e| e == &v[..self.comps])
    }

    /// Vectors built from scalar candidates: each one in every component, and rotations that
    /// mix them.
    fn from_scalars(scalars: &[u64], comps: u8) -> Pool {
        let mut pool = Pool::new(comps);
        let n = scalars.len();
        if n == 0 {
            return pool;
        }
        let mut v = [0u64; MAX_COMPONENTS];
        for i in 0..n {
            v.fill(scalars[i]);
            pool.push(&v);
            if comps > 1 {
                for (k, slot) in v[..comps as usize].iter_mut().enumerate() {
                    *slot = scalars[(i + k * 7 + k * k) % n];
                }
                pool.push(&v);
            }
        }
        pool
    }

    /// The entries `keep` accepts, without duplicates.
    fn filter(&self, mut keep: impl FnMut(&[u64]) -> bool) -> Pool {
        let mut out = Pool::new(self.comps as u8);
        for i in 0..self.len() {
            let v = self.get(i);
            if !out.contains(v) && keep(v) {
                out.push(v);
            }
        }
        out
    }
}

fn push_unique(out: &mut Vec<u64>, v: u64) {
    if !out.contains(&v) {
        out.push(v);
    }
}

/// Mantissa bits and smallest normal exponent of a float format.
fn float_format(bits: u8) -> (i64, i64) {
    match bits {
        16 => (10, -14),
        32 => (23, -126),
        _ => (52, -1022),
    }
}

fn min_normal(bits: u8) -> f64 {
    ldexp(1.0, float_format(bits).1)
}

/// The distance between `x` and the next float of `bits` bits away from zero.
fn ulp(x: f64, bits: u8) -> f64 {
    let (mantissa, emin) = float_format(bits);
    let x = x.abs();
    if x < min_normal(bits) || !x.is_finite() {
        return ldexp(1.0, emin - mantissa);
    }
    let (_, e) = frexp(x);
    ldexp(1.0, e - 1 - mantissa)
}

fn sign_bit(bits: u8) -> u64 {
    1u64 << (bits - 1)
}

/// Special float values of `bits` bits, raw.
fn float_specials(bits: u8, literals: &[f64]) -> Vec<u64> {
    let f = |x: f64| fput(x, bits);
    let (mantissa, emin) = float_format(bits);
    let sign = sign_bit(bits);
    let inf = f(f64::INFINITY);
    let k = (mantissa / 2).max(4);
    let mut out = Vec::new();
    for v in [
        f(0.0),
        f(-0.0),
        f(1.0),
        f(-1.0),
        f(2.0),
        f(-2.0),
        f(0.5),
        f(-0.5),
        f(-1.5),
        f(3.0),
        f(1.0 / 3.0),
        f(-1.0 / 3.0),
        inf,
        inf | sign,
        f(f64::NAN),
        1,
        1 | sign,
        f(ldexp(1.0, emin)),
        inf - 1,
        (inf - 1) | sign,
        f(ldexp(1.0, k)),
        f(ldexp(1.0, -k)),
        f(-ldexp(1.0, k)),
        f(1.0) + 1,
        f(0.25),
        f(10.0),
    ] {
        push_unique(&mut out, v);
    }
    for &x in literals {
        let v = f(x);
        push_unique(&mut out, v);
        push_unique(&mut out, f(-x));
        if x.is_finite() && x != 0.0 {
            push_unique(&mut out, v + 1);
            push_unique(&mut out, v - 1);
        }
    }
    out
}

/// Special integer values of `bits` bits, raw.
fn int_specials(bits: u8, literals: &[i64]) -> Vec<u64> {
    let m = |x: i64| mask(x as u64, bits);
    if bits == 1 {
        return vec![0, 1];
    }
    let min = sign_bit(bits);
    let max = min - 1;
    let b = bits as i64;
    let mut out = Vec::new();
    for v in [
        0,
        1,
        m(-1),
        2,
        3,
        m(-2),
        5,
        7,
        8,
        min,
        max,
        min + 1,
        max - 1,
        m(0x5555_5555_5555_5555),
        m(0xaaaa_aaaa_aaaa_aaaa_u64 as i64),
        m(1 << (b / 2)),
        m((1 << (b / 2)) - 1),
        m(1 << (b - 2)),
        m(b - 1),
        m(b),
        m(b + 1),
        m(0x0f0f_0f0f_0f0f_0f0f),
    ] {
        push_unique(&mut out, v);
    }
    for &x in literals {
        for v in [x.wrapping_sub(1), x, x.wrapping_add(1), x.wrapping_neg()] {
            push_unique(&mut out, m(v));
        }
    }
    out
}

/// Structured candidates for variables whose conditions reject most special values.
fn targeted_scalars(bits: u8, float: bool) -> Vec<u64> {
    let mut out = Vec::new();
    if bits == 1 {
        return vec![0, 1];
    }
    if float {
        let f = |x: f64| fput(x, bits);
        let (mantissa, emin) = float_format(bits);
        let emax = -emin + 1;
        let mut e = emin - mantissa;
        while e <= emax {
            push_unique(&mut out, f(ldexp(1.0, e)));
            push_unique(&mut out, f(-ldexp(1.0, e)));
            e += if (-8..=8).contains(&e) { 1 } else { 3 };
        }
        for n in 1..=32 {
            for d in [1.0, 2.0, 4.0, 8.0, 3.0, 10.0] {
                push_unique(&mut out, f(n as f64 / d));
                push_unique(&mut out, f(-(n as f64) / d));
            }
        }
        for x in [0.1, 0.9, 0.99, 1.01, 100.0, 1000.0, 1e4, 65504.0] {
            push_unique(&mut out, f(x));
            push_unique(&mut out, f(-x));
        }
    } else {
        let m = |x: u64| mask(x, bits);
        for k in 0..bits as u32 {
            let p = 1u64 << k;
            for v in [p, p - 1, p + 1, p.wrapping_neg(), (p - 1).wrapping_neg()] {
                push_unique(&mut out, m(v));
            }
            for odd in [3u64, 5, 7, 9, 15] {
                push_unique(&mut out, m(odd << k));
            }
            // Contiguous masks.
            for width in [1u32, 4, 8] {
                let field = if width >= 64 {
                    u64::MAX
                } else {
                    (1 << width) - 1
                };
                push_unique(&mut out, m(field << k));
            }
        }
        for x in -64i64..=64 {
            push_unique(&mut out, m(x as u64));
        }
        let min = sign_bit(bits);
        for d in 0..4 {
            push_unique(&mut out, m(min + d));
            push_unique(&mut out, m(min - 1 - d));
        }
    }
    out
}

/// A random raw value: raw bits, small numbers and structured values.
fn random_scalar(bits: u8, float: bool, rng: &mut Rng) -> u64 {
    if bits == 1 {
        return rng.next_u64() & 1;
    }
    let r = rng.next_u64();
    if float {
        let f = |x: f64| fput(x, bits);
        let (mantissa, emin) = float_format(bits);
        let negative = rng.next_u64() & 1 != 0;
        let s = if negative { -1.0 } else { 1.0 };
        match rng.below(5) {
            0 => mask(r, bits),
            1 => {
                let frac = (r >> 11) as f64 / (1u64 << 53) as f64;
                f(s * (1.0 + frac) * ldexp(1.0, rng.range(-12, 12)))
            }
            2 => f(rng.range(-16, 16) as f64 / ldexp(1.0, rng.range(0, 3))),
            3 => f(s * ldexp(1.0, rng.range(emin - mantissa, -emin + 1))),
            _ => {
                // A random significand at a random exponent anywhere in the range.
                let frac = (r >> 11) as f64 / (1u64 << 53) as f64;
                f(s * (1.0 + frac) * ldexp(1.0, rng.range(emin, -emin)))
            }
        }
    } else {
        let k = rng.below(bits as usize) as u32;
        match rng.below(5) {
            0 | 1 => mask(r, bits),
            2 => mask(rng.range(-16, 16) as u64, bits),
            3 => {
                let v = mask(r, bits) >> k;
                mask(if r & 1 != 0 { v.wrapping_neg() } else { v }, bits)
            }
            _ => {
                let p = 1u64 << k;
                let v = match rng.below(4) {
                    0 => p,
                    1 => p - 1,
                    2 => p + 1,
                    _ => (rng.below(15) as u64 + 1) << k,
                };
                mask(if r & 1 != 0 { v.wrapping_neg() } else { v }, bits)
            }
        }
    }
}

/// Calls variable conditions on a constant in a scratch function.
struct CondChecker {
    func: Function,
    value: Value,
    uses: Uses,
}

impl CondChecker {
    fn new() -> CondChecker {
        let mut func = Function::new("scratch");
        let block = func.entry;
        let value = func.alloc_inst(Inst {
            kind: InstKind::Const(vec![0]),
            def: Some(ValType::scalar(32)),
            block,
        });
        func.cfg[block].insts.push(value);
        CondChecker {
            func,
            value,
            uses: Uses::default(),
        }
    }

    /// Whether every condition holds on the constant `value` (one raw value per component).
    fn holds(&mut self, conds: &[Restriction], bits: u8, value: &[u64]) -> bool {
        let mut calls = false;
        for c in conds {
            match c {
                Restriction::Holds(holds) => {
                    if !value.iter().all(|&v| holds(mask(v, bits), bits)) {
                        return false;
                    }
                }
                Restriction::Call(_) => calls = true,
            }
        }
        if !calls {
            return true;
        }
        let inst = self.func.inst_mut(self.value);
        if let InstKind::Const(c) = &mut inst.kind {
            c.clear();
            c.extend(value.iter().map(|&v| mask(v, bits)));
        }
        inst.def = Some(ValType::new(bits, value.len() as u8));
        let ranges = RangeCache::default();
        let cx = Ctx {
            func: &self.func,
            uses: &self.uses,
            ranges: &ranges,
        };
        let src = Src {
            value: self.value,
            swizzle: IDENTITY_SWIZZLE,
            comps: value.len() as u8,
        };
        conds.iter().all(|c| match c {
            Restriction::Holds(_) => true,
            Restriction::Call(check) => check(&cx, &src),
        })
    }
}

// One size assignment.

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

/// Rounding steps of an opcode: formula opcodes round after each operation.
fn rounding_steps(op: AluOp) -> usize {
    use AluOp::*;
    match op {
        Ffma => 2,
        Flrp | Fmod | Frem => 4,
        Fdot2 => 3,
        Fdot3 => 5,
        Fdot4 => 7,
        _ => 1,
    }
}

/// Magnitudes inside one component of an operation that the tolerance must cover besides its
/// operands and result: the products inside formula opcodes, and for exponentials the result
/// scaled by how much a relative error of the exponent moves it (`exp2(x)` turns a relative
/// error e of x into a relative error e·|x|·ln 2 of the result). `src(j, k)` is component `k`
/// of operand `j`; vector operands have `vector_comps` components.
fn inner_magnitudes(
    op: AluOp,
    src: &impl Fn(usize, usize) -> f64,
    result: f64,
    vector_comps: u8,
    k: usize,
    note: &mut impl FnMut(f64),
) {
    use AluOp::*;
    match op {
        Ffma => note(src(0, k) * src(1, k)),
        Flrp => {
            note(src(0, k) * (1.0 - src(2, k)));
            note(src(1, k) * src(2, k));
        }
        Fdot2 | Fdot3 | Fdot4 => note(
            (0..vector_comps as usize)
                .map(|c| (src(0, c) * src(1, c)).abs())
                .sum(),
        ),
        Fexp2 => note(result * src(0, k) * std::f64::consts::LN_2),
        Fpow => {
            let (base, exponent) = (src(0, k), src(1, k));
            note(result * exponent * base.abs().ln().abs().max(1.0));
        }
        _ => {}
    }
}

/// Float opcodes that lose precision when their result underflows (sums and differences of
/// floats are exact when they are denormal).
fn may_underflow(op: AluOp) -> bool {
    use AluOp::*;
    matches!(
        op,
        Fmul | Fdiv | Ffma | Frcp | Frsq | Fexp2 | Fpow | Fldexp | Flrp
    )
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

    fn specials(&self, v: &VarPlan) -> Vec<u64> {
        if v.float {
            float_specials(v.bits, self.float_literals)
        } else {
            int_specials(v.bits, self.int_literals)
        }
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

    /// Every value of `v` (its components packed into at most 16 bits) that satisfies its
    /// conditions, the special ones first.
    fn all_values(&self, v: &VarPlan, specials: &Pool, checker: &mut CondChecker) -> Pool {
        let width = v.bits as u32 * v.comps as u32;
        let count = 1usize << width;
        let unpack = |packed: usize, out: &mut [u64; MAX_COMPONENTS]| {
            for (k, slot) in out[..v.comps as usize].iter_mut().enumerate() {
                *slot = mask((packed >> (k * v.bits as usize)) as u64, v.bits);
            }
        };
        let pack = |x: &[u64]| {
            x.iter().enumerate().fold(0usize, |acc, (k, &c)| {
                acc | ((c as usize) << (k * v.bits as usize))
            })
        };
        let mut seen = vec![false; count];
        let mut order = Vec::with_capacity(count);
        for i in 0..specials.len() {
            let packed = pack(specials.get(i));
            if !seen[packed] {
                seen[packed] = true;
                order.push(packed);
            }
        }
        order.extend((0..count).filter(|&p| !seen[p]));
        let mut pool = Pool::new(v.comps);
        pool.data.reserve(count * v.comps as usize);
        let mut x = [0u64; MAX_COMPONENTS];
        for packed in order {
            unpack(packed, &mut x);
            if checker.holds(&v.conds, v.bits, &x[..v.comps as usize]) {
                pool.push(&x);
            }
        }
        pool
    }

    /// Every combination of the pools of `vary`; the other variables take random satisfying
    /// values. Returns the number of cases compared.
    fn combinations(
        &mut self,
        pools: &[Pool],
        vary: &[usize],
        inputs: &mut [[u64; MAX_COMPONENTS]],
        checker: &mut CondChecker,
        rng: &mut Rng,
    ) -> Result<u64, Counterexample> {
        let total: usize = vary.iter().map(|&i| pools[i].len()).product();
        let exhaustive = vary.len() == pools.len();
        // Sample evenly when there are too many combinations (only for special values).
        let step = if exhaustive && self.vars_bits() <= EXHAUSTIVE_BITS {
            1
        } else {
            total.div_ceil(MAX_SPECIAL_CASES).max(1)
        };
        let mut cases = 0;
        let mut index = 0;
        'cases: while index < total {
            let mut rest = index;
            for &i in vary.iter().rev() {
                let len = pools[i].len();
                let x = pools[i].get(rest % len);
                inputs[i][..x.len()].copy_from_slice(x);
                rest /= len;
            }
            for i in 0..pools.len() {
                if !vary.contains(&i) {
                    let picked = if rng.next_u64() & 1 == 0 {
                        let x = pools[i].get(rng.below(pools[i].len()));
                        inputs[i][..x.len()].copy_from_slice(x);
                        true
                    } else {
                        self.random_input(i, &pools[i], checker, rng, &mut inputs[i])
                    };
                    if !picked {
                        index += step;
                        continue 'cases;
                    }
                }
            }
            cases += self.check(inputs)? as u64;
            index += step;
        }
        Ok(cases)
    }

    fn vars_bits(&self) -> u32 {
        self.vars
            .iter()
            .map(|v| v.bits as u32 * v.comps as u32)
            .sum()
    }

    /// A random value of variable `i` satisfying its conditions: drawn afresh a few times, else
    /// one of the candidates known to satisfy them.
    fn random_input(
        &self,
        i: usize,
        pool: &Pool,
        checker: &mut CondChecker,
        rng: &mut Rng,
        out: &mut [u64; MAX_COMPONENTS],
    ) -> bool {
        let v = &self.vars[i];
        let n = v.comps as usize;
        for _ in 0..8 {
            for slot in &mut out[..n] {
                *slot = random_scalar(v.bits, v.float, rng);
            }
            if checker.holds(&v.conds, v.bits, &out[..n]) {
                return true;
            }
        }
        if pool.len() == 0 {
            return false;
        }
        out[..n].copy_from_slice(pool.get(rng.below(pool.len())));
        true
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

    /// Whether a case is outside what the rule preserves: NaN or infinity anywhere, or (for
    /// inexact rules) an underflowing float operation.
    fn excluded(&self) -> bool {
        for (prog, vals) in [(&self.search, &self.sv), (&self.replace, &self.rv)] {
            for (i, node) in prog.nodes.iter().enumerate() {
                if !node.float || node.bits < 16 {
                    continue;
                }
                let results = &vals[i][..node.comps as usize];
                for &raw in results {
                    let x = fget(raw, node.bits);
                    if (self.lose_nan && x.is_nan()) || (self.lose_inf && x.is_infinite()) {
                        return true;
                    }
                }
                let Kind::Op { op, srcs, .. } = &node.kind else {
                    continue;
                };
                if !self.rule.inexact || !may_underflow(*op) {
                    continue;
                }
                // A denormal result, or zero from nonzero operands, lost precision.
                let underflow = results.iter().enumerate().any(|(k, &raw)| {
                    let x = fget(raw, node.bits);
                    (x != 0.0 && x.abs() < min_normal(node.bits))
                        || (x == 0.0
                            && srcs.iter().all(|&s| {
                                let n = &prog.nodes[s];
                                !n.float || fget(vals[s][k], n.bits) != 0.0
                            }))
                });
                if underflow {
                    return true;
                }
            }
        }
        false
    }

    /// Why `s` and `r` (root components of `bits` bits) are not equal under the rule's
    /// exactness, or `None` if they are.
    fn mismatch(
        &self,
        s: u64,
        r: u64,
        bits: u8,
        tolerance: &mut Option<(f64, f64)>,
    ) -> Option<String> {
        let (s, r) = (mask(s, bits), mask(r, bits));
        if s == r {
            return None;
        }
        if !self.float_root || bits < 16 {
            return Some(if self.rule.inexact {
                "the results differ".to_string()
            } else {
                "the rule is exact, so the results must be identical".to_string()
            });
        }
        let (x, y) = (fget(s, bits), fget(r, bits));
        if x.is_nan() && y.is_nan() {
            return None;
        }
        if self.lose_sz && x == 0.0 && y == 0.0 {
            return None;
        }
        if self.rule.inexact && x.is_finite() && y.is_finite() {
            let (tol, largest) = *tolerance.get_or_insert_with(|| self.tolerance(bits));
            let diff = (x - y).abs();
            if diff <= tol {
                return None;
            }
            return Some(format!(
                "the rule is inexact, but the results differ by {diff:e}, more than the \
                 tolerance {tol:e} (4 × {} float ops × ulp({largest:e}) at {bits} bits)",
                self.float_ops.max(1)
            ));
        }
        let mut why = String::from(if self.rule.inexact || self.rule.loses.0 != 0 {
            "the results must be equal"
        } else {
            "the rule is exact, so the results must be identical bit for bit"
        });
        why.push_str(" (any NaN equals any NaN");
        if self.lose_sz {
            why.push_str(", +0 equals -0");
        }
        why.push(')');
        if self.rule.loses.0 != 0 && !self.rule.inexact {
            let lost: Vec<&str> = ["signed zeros", "NaNs", "infinities"]
                .into_iter()
                .enumerate()
                .filter(|(i, _)| self.rule.loses.0 & (1 << i) != 0)
                .map(|(_, n)| n)
                .collect();
            why.push_str(&format!("; the rule only gives up {}", lost.join(", ")));
        }
        Some(why)
    }

    /// The inexact tolerance at `bits` bits and the largest magnitude it is based on.
    fn tolerance(&self, bits: u8) -> (f64, f64) {
        let mut largest = 0.0f64;
        let mut note = |x: f64| {
            if x.is_finite() {
                largest = largest.max(x.abs());
            }
        };
        for (prog, vals) in [(&self.search, &self.sv), (&self.replace, &self.rv)] {
            for (i, node) in prog.nodes.iter().enumerate() {
                if !node.float || node.bits < 16 {
                    continue;
                }
                let results = &vals[i][..node.comps as usize];
                for &raw in results {
                    note(fget(raw, node.bits));
                }
                let Kind::Op {
                    op, srcs, src_bits, ..
                } = &node.kind
                else {
                    continue;
                };
                let src = |j: usize, k: usize| fget(vals[srcs[j]][k], src_bits[j]);
                let vector_comps = prog.nodes[srcs[0]].comps;
                for (k, &raw) in results.iter().enumerate() {
                    let result = fget(raw, node.bits);
                    inner_magnitudes(*op, &src, result, vector_comps, k, &mut note);
                }
            }
        }
        let tol = 4.0 * self.float_ops.max(1) as f64 * ulp(largest, bits);
        (tol, largest)
    }

    /// Whether the root operation of one tree, applied to its rounded float operands (results
    /// of float operations; inputs and literals are exact) each moved by up to the inexact
    /// tolerance, can give the other tree's result for component `k`: a comparison of nearly
    /// equal values, a conversion at an integer boundary.
    fn rounding_decides(&self, k: usize, bits: u8) -> bool {
        let (_, largest) = self.tolerance(bits);
        let (s, r) = (self.sv[self.sv.len() - 1][k], self.rv[self.rv.len() - 1][k]);
        self.root_can_give(&self.search, &self.sv, k, r, largest)
            || self.root_can_give(&self.replace, &self.rv, k, s, largest)
    }

    fn root_can_give(
        &self,
        prog: &Prog,
        vals: &Values,
        k: usize,
        target: u64,
        largest: f64,
    ) -> bool {
        let root = prog.root();
        let Kind::Op {
            op, srcs, src_bits, ..
        } = &root.kind
        else {
            return false;
        };
        if !matches!(op.info().eval, Eval::Comp(_)) {
            return false;
        }
        let moved: Vec<usize> = (0..srcs.len())
            .filter(|&j| prog.nodes[srcs[j]].float_op && src_bits[j] >= 16)
            .collect();
        if moved.is_empty() || moved.len() > 3 {
            return false;
        }
        let base: Vec<u64> = srcs.iter().map(|&s| vals[s][k]).collect();
        let combos = 3usize.pow(moved.len() as u32);
        for combo in 0..combos {
            let mut v = base.clone();
            let mut rest = combo;
            for &j in &moved {
                let direction = (rest % 3) as f64 - 1.0;
                rest /= 3;
                let tol = 4.0 * self.float_ops.max(1) as f64 * ulp(largest, src_bits[j]);
                let x = fget(v[j], src_bits[j]);
                v[j] = fput(x + direction * tol, src_bits[j]);
            }
            let one: Vec<[u64; 1]> = v.iter().map(|&x| [x]).collect();
            let refs: Vec<&[u64]> = one.iter().map(|x| &x[..]).collect();
            let mut out = [0u64];
            let bits = Bits {
                src: src_bits,
                dst: root.bits,
            };
            if op.eval(&refs, bits, &mut out) && mask(out[0], root.bits) == mask(target, root.bits)
            {
                return true;
            }
        }
        false
    }

    /// Whether both trees agree when every unsized float operation is computed at 64 bits.
    fn wide_agrees(&mut self, inputs: &[[u64; MAX_COMPONENTS]]) -> bool {
        if self.wide.is_none() {
            let build = |p: &Pattern, float_root: bool, search: bool| {
                compile(
                    p,
                    &self.sizes,
                    &self.vars,
                    self.root_comps,
                    float_root,
                    true,
                    search,
                )
            };
            let (Ok(s), Ok(r)) = (
                build(&self.rule.search, false, true),
                build(&self.rule.replace, self.float_root, false),
            ) else {
                return false;
            };
            self.wide = Some((s, r));
        }
        let Some((s, r)) = &self.wide else {
            return false;
        };
        let mut sv = vec![[0; MAX_COMPONENTS]; s.nodes.len()];
        let mut rv = vec![[0; MAX_COMPONENTS]; r.nodes.len()];
        s.run(inputs, &mut sv);
        r.run(inputs, &mut rv);
        let bits = s.root().bits;
        let (a, b) = (&sv[sv.len() - 1], &rv[rv.len() - 1]);
        (0..self.root_comps as usize).all(|k| mask(a[k], bits) == mask(b[k], bits))
    }

    fn counterexample(&self, inputs: &[[u64; MAX_COMPONENTS]], reason: String) -> Counterexample {
        let n = self.root_comps as usize;
        let bits = self.search.root().bits;
        Counterexample {
            text: self.rule.text,
            location: self.rule.location(),
            sizes: self.sizes.clone(),
            inputs: self
                .vars
                .iter()
                .zip(inputs)
                .map(|(v, x)| InputValue {
                    name: v.name,
                    bits: v.bits,
                    float: v.float,
                    value: x[..v.comps as usize].to_vec(),
                })
                .collect(),
            result_bits: bits,
            result_float: self.float_root,
            search: self.sv[self.sv.len() - 1][..n]
                .iter()
                .map(|&v| mask(v, bits))
                .collect(),
            replace: self.rv[self.rv.len() - 1][..n]
                .iter()
                .map(|&v| mask(v, bits))
                .collect(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::VarInfo;

    fn leak<T>(v: Vec<T>) -> &'static [T] {
        Vec::leak(v)
    }

    fn var(index: u8) -> Pattern {
        Pattern::Var {
            index,
            swizzle: None,
        }
    }

    fn swz(index: u8, swizzle: &'static [u8]) -> Pattern {
        Pattern::Var {
            index,
            swizzle: Some(swizzle),
        }
    }

    fn float(x: f64) -> Pattern {
        Pattern::Const {
            value: Literal::Float(x),
            size: Size::Class(0),
        }
    }

    fn int(x: i64) -> Pattern {
        Pattern::Const {
            value: Literal::Int(x),
            size: Size::Class(0),
        }
    }

    fn int_sized(x: i64, bits: u8) -> Pattern {
        Pattern::Const {
            value: Literal::Int(x),
            size: Size::Fixed(bits),
        }
    }

    /// An op whose unsized operands all belong to class 0.
    fn op(op: AluOp, srcs: Vec<Pattern>) -> Pattern {
        let info = op.info();
        Pattern::Op {
            op: OpName::Op(op),
            size: if info.dst.bits != 0 {
                Size::Fixed(info.dst.bits)
            } else {
                Size::Class(0)
            },
            src_size: if info.srcs.iter().any(|s| s.bits == 0) {
                Size::Class(0)
            } else {
                Size::Fixed(0)
            },
            srcs: leak(srcs),
            exact: false,
            conds: &[],
        }
    }

    fn var_info(name: &'static str) -> VarInfo {
        VarInfo {
            name,
            size: Size::Class(0),
            is_const: false,
            ty: None,
            conds: &[],
        }
    }

    /// A rule over class 0; `~` in the text makes it inexact.
    fn rule(
        text: &'static str,
        search: Pattern,
        replace: Pattern,
        vars: Vec<VarInfo>,
        sizes: &'static [u8],
    ) -> RuleInfo {
        let inexact = text.starts_with('~');
        RuleInfo {
            text,
            file: file!(),
            line: line!(),
            module: module_path!(),
            name: "test_rule",
            search,
            replace,
            vars: leak(vars),
            classes: leak(vec![sizes]),
            inexact,
            loses: FpFlags(if inexact { 7 } else { 0 }),
            guard: None,
            egraph: None,
            egraph_only: false,
        }
    }

    /// The first `n` of `a`, `b`, `c`.
    fn vars(n: usize) -> Vec<VarInfo> {
        ["a", "b", "c"][..n]
            .iter()
            .map(|&name| var_info(name))
            .collect()
    }

    fn abc() -> Vec<VarInfo> {
        vars(3)
    }

    const FLOATS: &[u8] = &[16, 32, 64];
    const INTS: &[u8] = &[8, 16, 32, 64];

    fn fails(r: &RuleInfo) -> Counterexample {
        match verify_rule(r) {
            Ok(report) => panic!("`{}` passed: {report:?}", r.text),
            Err(e) => e,
        }
    }

    fn passes(r: &RuleInfo) -> Report {
        match verify_rule(r) {
            Ok(report) => report,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn exact_fadd_of_zero_fails_on_negative_zero() {
        let r = rule(
            "fadd(a, 0.0) => a",
            op(AluOp::Fadd, vec![var(0), float(0.0)]),
            var(0),
            vars(1),
            FLOATS,
        );
        let e = fails(&r);
        let text = e.to_string();
        assert!(text.contains("-0"), "{text}");
        assert!(text.contains("fadd(a, 0.0) => a"), "{text}");
        assert!(text.contains("verify.rs"), "{text}");
        assert!(text.contains("class 0 = 16"), "{text}");
        assert_eq!(e.inputs[0].value, [0x8000]);
        assert_eq!(
            (e.search.as_slice(), e.replace.as_slice()),
            (&[0][..], &[0x8000][..])
        );
    }

    #[test]
    fn inexact_fadd_of_zero_passes() {
        let r = rule(
            "~fadd(a, 0.0) => a",
            op(AluOp::Fadd, vec![var(0), float(0.0)]),
            var(0),
            vars(1),
            FLOATS,
        );
        let report = passes(&r);
        assert_eq!(report.sizes, [[16], [32], [64]]);
        // All halves but the NaNs and infinities, which `~` does not preserve, and more.
        assert!(report.cases > 63488 + 2000, "{report:?}");
        assert_eq!(report.skipped, None);
    }

    #[test]
    fn nsz_forgives_the_sign_of_zero_but_not_nan() {
        let mut r = rule(
            "fadd[nsz](a, 0.0) => a",
            op(AluOp::Fadd, vec![var(0), float(0.0)]),
            var(0),
            vars(1),
            FLOATS,
        );
        r.loses = FpFlags::PRESERVE_SIGNED_ZERO;
        passes(&r);
        let mut r = rule(
            "fmul[nsz](a, 0.0) => 0.0",
            op(AluOp::Fmul, vec![var(0), float(0.0)]),
            float(0.0),
            vars(1),
            FLOATS,
        );
        r.loses = FpFlags::PRESERVE_SIGNED_ZERO;
        let e = fails(&r);
        assert!(e.to_string().contains("gives up signed zeros"), "{e}");
        r.loses = FpFlags(7);
        passes(&r);
    }

    #[test]
    fn iadd_of_one_fails() {
        let r = rule(
            "iadd(a, 1) => a",
            op(AluOp::Iadd, vec![var(0), int(1)]),
            var(0),
            vars(1),
            &[1, 8, 16, 32, 64],
        );
        let e = fails(&r);
        assert!(e.to_string().contains("must be identical"), "{e}");
    }

    #[test]
    fn shifts_and_multiplies_by_two() {
        let shl = || op(AluOp::Ishl, vec![var(0), int_sized(1, 32)]);
        let r = rule(
            "ishl(a, 1) => iadd(a, a)",
            shl(),
            op(AluOp::Iadd, vec![var(0), var(0)]),
            vars(1),
            INTS,
        );
        let report = passes(&r);
        assert_eq!(report.sizes.len(), 4);
        let r = rule(
            "imul(a, 2) => ishl(a, 1)",
            op(AluOp::Imul, vec![var(0), int(2)]),
            shl(),
            vars(1),
            INTS,
        );
        passes(&r);
        // A 1-bit shift counts modulo 1: `ishl(a, 1)` is `a` there, `iadd(a, a)` is 0.
        let r = rule(
            "ishl(a, 1) => iadd(a, a)",
            shl(),
            op(AluOp::Iadd, vec![var(0), var(0)]),
            vars(1),
            &[1],
        );
        assert_eq!(fails(&r).sizes, [1]);
    }

    #[test]
    fn inexact_reassociation_passes_and_a_wrong_one_fails() {
        let r = rule(
            "~fadd(fadd(a, b), c) => fadd(a, fadd(b, c))",
            op(
                AluOp::Fadd,
                vec![op(AluOp::Fadd, vec![var(0), var(1)]), var(2)],
            ),
            op(
                AluOp::Fadd,
                vec![var(0), op(AluOp::Fadd, vec![var(1), var(2)])],
            ),
            abc(),
            FLOATS,
        );
        passes(&r);
        let r = rule(
            "~fmul(fmul(a, b), c) => fmul(a, fmul(b, c))",
            op(
                AluOp::Fmul,
                vec![op(AluOp::Fmul, vec![var(0), var(1)]), var(2)],
            ),
            op(
                AluOp::Fmul,
                vec![var(0), op(AluOp::Fmul, vec![var(1), var(2)])],
            ),
            abc(),
            FLOATS,
        );
        passes(&r);
        let r = rule(
            "~fadd(fmul(a, b), fmul(a, c)) => fmul(a, fadd(b, c))",
            op(
                AluOp::Fadd,
                vec![
                    op(AluOp::Fmul, vec![var(0), var(1)]),
                    op(AluOp::Fmul, vec![var(0), var(2)]),
                ],
            ),
            op(
                AluOp::Fmul,
                vec![var(0), op(AluOp::Fadd, vec![var(1), var(2)])],
            ),
            abc(),
            FLOATS,
        );
        passes(&r);
        let r = rule(
            "~fadd(fmul(a, b), c) => fmul(a, fadd(b, c))",
            op(
                AluOp::Fadd,
                vec![op(AluOp::Fmul, vec![var(0), var(1)]), var(2)],
            ),
            op(
                AluOp::Fmul,
                vec![var(0), op(AluOp::Fadd, vec![var(1), var(2)])],
            ),
            abc(),
            FLOATS,
        );
        let e = fails(&r);
        assert!(e.to_string().contains("tolerance"), "{e}");
    }

    #[test]
    fn fusing_a_multiply_add_is_inexact() {
        let search = || {
            op(
                AluOp::Fadd,
                vec![op(AluOp::Fmul, vec![var(0), var(1)]), var(2)],
            )
        };
        let fused = || op(AluOp::Ffma, vec![var(0), var(1), var(2)]);
        fails(&rule(
            "fadd(fmul(a, b), c) => ffma(a, b, c)",
            search(),
            fused(),
            abc(),
            FLOATS,
        ));
        passes(&rule(
            "~fadd(fmul(a, b), c) => ffma(a, b, c)",
            search(),
            fused(),
            abc(),
            FLOATS,
        ));
    }

    #[test]
    fn two_8_bit_variables_are_checked_exhaustively() {
        let r = rule(
            "ixor(a, b) => ior(iand(a, inot(b)), iand(inot(a), b))",
            op(AluOp::Ixor, vec![var(0), var(1)]),
            op(
                AluOp::Ior,
                vec![
                    op(AluOp::Iand, vec![var(0), op(AluOp::Inot, vec![var(1)])]),
                    op(AluOp::Iand, vec![op(AluOp::Inot, vec![var(0)]), var(1)]),
                ],
            ),
            vars(2),
            &[8],
        );
        let report = passes(&r);
        assert_eq!(report.cases, 65536);
        // A bug on one input pair in 65536 is found.
        let r = rule(
            "ult(a, b) => ilt(a, b)",
            op(AluOp::Ult, vec![var(0), var(1)]),
            op(AluOp::Ilt, vec![var(0), var(1)]),
            vars(2),
            &[8],
        );
        fails(&r);
    }

    fn single_bit(cx: &Ctx, src: &Src) -> bool {
        match cx.func.get_inst(src.value).map(|i| &i.kind) {
            Some(InstKind::Const(values)) => src
                .read()
                .iter()
                .all(|&c| values[c as usize].count_ones() == 1),
            _ => false,
        }
    }

    fn is_used_once(_: &Ctx, _: &Src) -> bool {
        false
    }

    static SINGLE_BIT: [VarCond; 2] = [
        VarCond {
            name: "single_bit",
            check: single_bit,
        },
        VarCond {
            name: "is_used_once",
            check: is_used_once,
        },
    ];

    fn mul_by_single_bit(replace: Pattern, text: &'static str) -> RuleInfo {
        let mut vars = vars(2);
        vars[1].is_const = true;
        vars[1].conds = &SINGLE_BIT;
        rule(
            text,
            op(AluOp::Imul, vec![var(0), var(1)]),
            replace,
            vars,
            INTS,
        )
    }

    #[test]
    fn conditions_restrict_the_inputs_and_structural_ones_are_ignored() {
        let find_lsb = Pattern::Op {
            op: OpName::Op(AluOp::FindLsb),
            size: Size::Fixed(32),
            src_size: Size::Class(0),
            srcs: leak(vec![var(1)]),
            exact: false,
            conds: &[],
        };
        let r = mul_by_single_bit(
            op(AluOp::Ishl, vec![var(0), find_lsb]),
            "imul(a, #b[single_bit, is_used_once]) => ishl(a, find_lsb(b))",
        );
        let report = passes(&r);
        assert_eq!(report.skipped, None);
        // 8 single-bit values of b at 8 bits, all 256 values of a.
        assert!(report.cases >= 8 * 256 + 3 * 500, "{report:?}");
        let r = mul_by_single_bit(
            op(AluOp::Ishl, vec![var(0), var(1)]),
            "imul(a, #b[single_bit]) => ishl(a, b)",
        );
        let e = fails(&r);
        assert_eq!(e.inputs[1].value[0].count_ones(), 1, "{e}");
    }

    #[test]
    fn vectors_swizzles_and_fixed_component_counts() {
        let mul = |i: &'static [u8], j: &'static [u8]| op(AluOp::Fmul, vec![swz(0, i), swz(0, j)]);
        let r = rule(
            "fdot2(a, a) => fadd(fmul(a.x, a.x), fmul(a.y, a.y))",
            op(AluOp::Fdot2, vec![var(0), var(0)]),
            op(AluOp::Fadd, vec![mul(&[0], &[0]), mul(&[1], &[1])]),
            vars(1),
            FLOATS,
        );
        passes(&r);
        let r = rule(
            "fdot2(a, a) => fadd(fmul(a.x, a.x), fmul(a.x, a.y))",
            op(AluOp::Fdot2, vec![var(0), var(0)]),
            op(AluOp::Fadd, vec![mul(&[0], &[0]), mul(&[0], &[1])]),
            vars(1),
            FLOATS,
        );
        let e = fails(&r);
        assert_eq!(e.inputs[0].value.len(), 2, "{e}");
        // Vector construction and extraction.
        let r = rule(
            "mov(vec2(a, b)) => a",
            op(AluOp::Mov, vec![op(AluOp::Vec2, vec![var(0), var(1)])]),
            var(0),
            vars(2),
            INTS,
        );
        passes(&r);
    }

    #[test]
    fn inexact_comparisons_may_differ_only_by_rounding() {
        let r = rule(
            "~feq(fadd(a, b), a) => feq(b, 0.0)",
            op(
                AluOp::Feq,
                vec![op(AluOp::Fadd, vec![var(0), var(1)]), var(0)],
            ),
            op(AluOp::Feq, vec![var(1), float(0.0)]),
            vars(2),
            &[16, 32],
        );
        passes(&r);
        let r = rule(
            "~flt(fneg(a), b) => flt(a, b)",
            op(AluOp::Flt, vec![op(AluOp::Fneg, vec![var(0)]), var(1)]),
            op(AluOp::Flt, vec![var(0), var(1)]),
            vars(2),
            FLOATS,
        );
        let e = fails(&r);
        assert!(e.to_string().contains("this is not rounding"), "{e}");
    }

    #[test]
    fn ties_of_inputs_are_not_rounding() {
        // With exact inputs, `a < b` and `b >= a` differ exactly when a == b.
        let r = rule(
            "~flt(a, b) => fge(b, a)",
            op(AluOp::Flt, vec![var(0), var(1)]),
            op(AluOp::Fge, vec![var(1), var(0)]),
            vars(2),
            FLOATS,
        );
        let e = fails(&r);
        assert_eq!(e.inputs[0].value, e.inputs[1].value, "{e}");
    }

    #[test]
    fn the_tolerance_follows_the_conditioning_of_exponentials_and_formulas() {
        let r = rule(
            "~fexp2(flog2(a)) => a",
            op(AluOp::Fexp2, vec![op(AluOp::Flog2, vec![var(0)])]),
            var(0),
            vars(1),
            FLOATS,
        );
        passes(&r);
        let pow = || op(AluOp::Fpow, vec![var(0), var(1)]);
        let exp_log = |b: Pattern| {
            op(
                AluOp::Fexp2,
                vec![op(AluOp::Fmul, vec![op(AluOp::Flog2, vec![var(0)]), b])],
            )
        };
        passes(&rule(
            "~fpow(a, b) => fexp2(fmul(flog2(a), b))",
            pow(),
            exp_log(var(1)),
            vars(2),
            FLOATS,
        ));
        fails(&rule(
            "~fpow(a, b) => fexp2(fmul(flog2(a), fadd(b, 0.001)))",
            pow(),
            exp_log(op(AluOp::Fadd, vec![var(1), float(0.001)])),
            vars(2),
            FLOATS,
        ));
        // Extrapolation cancels inside flrp: the products bound the error.
        passes(&rule(
            "~flrp(a, a, b) => a",
            op(AluOp::Flrp, vec![var(0), var(0), var(1)]),
            var(0),
            vars(2),
            FLOATS,
        ));
    }

    static LT_ZERO: [VarCond; 1] = [VarCond {
        name: "is_lt_zero",
        check: conds::is_lt_zero,
    }];

    static NUMBER_LT_ZERO: [VarCond; 1] = [VarCond {
        name: "is_a_number_lt_zero",
        check: conds::is_a_number_lt_zero,
    }];

    #[test]
    fn range_conditions_admit_what_the_analysis_admits() {
        let fsign = |conds: &'static [VarCond], text| {
            let mut vars = vars(1);
            vars[0].conds = conds;
            rule(
                text,
                op(AluOp::Fsign, vec![var(0)]),
                float(-1.0),
                vars,
                FLOATS,
            )
        };
        // A value the analysis knows to be negative may still be NaN.
        let e = fails(&fsign(&LT_ZERO, "fsign(a[is_lt_zero]) => -1.0"));
        assert!(
            e.search.iter().all(|&v| fget(v, e.result_bits).is_nan()),
            "{e}"
        );
        let report = passes(&fsign(
            &NUMBER_LT_ZERO,
            "fsign(a[is_a_number_lt_zero]) => -1.0",
        ));
        assert!(report.cases > 30_000, "{report:?}");
    }

    fn never(_: &Ctx, _: &Src) -> bool {
        false
    }

    static NEVER: [VarCond; 1] = [VarCond {
        name: "never",
        check: never,
    }];

    #[test]
    fn unsatisfiable_conditions_are_reported() {
        let mut vars = vars(2);
        vars[1].conds = &NEVER;
        let r = rule(
            "iadd(a, b[never]) => a",
            op(AluOp::Iadd, vec![var(0), var(1)]),
            var(0),
            vars,
            INTS,
        );
        let report = passes(&r);
        assert_eq!(report.cases, 0);
        assert!(report.skipped.unwrap().contains("no value of `b`"));
    }

    #[test]
    fn derivatives_are_skipped() {
        let r = rule(
            "fddx(fneg(a)) => fneg(fddx(a))",
            op(AluOp::Fddx, vec![op(AluOp::Fneg, vec![var(0)])]),
            op(AluOp::Fneg, vec![op(AluOp::Fddx, vec![var(0)])]),
            vars(1),
            FLOATS,
        );
        let report = passes(&r);
        assert_eq!(report.cases, 0);
        assert!(report.skipped.unwrap().contains("fddx"));
    }

    #[test]
    fn sizes_without_a_conversion_member_are_left_out() {
        let conv = |src: Pattern| Pattern::Op {
            op: OpName::Conv(shrew_ops::ConvFamily::I2i),
            size: Size::Class(0),
            src_size: Size::Class(1),
            srcs: leak(vec![src]),
            exact: false,
            conds: &[],
        };
        let and = |a: Pattern, b: Pattern, class: u8| Pattern::Op {
            op: OpName::Op(AluOp::Iand),
            size: Size::Class(class),
            src_size: Size::Class(class),
            srcs: leak(vec![a, b]),
            exact: false,
            conds: &[],
        };
        let mut vars = vars(2);
        vars[0].size = Size::Class(1);
        vars[1].size = Size::Class(1);
        let r = RuleInfo {
            classes: &[&[1, 8, 16, 32, 64], &[8, 16, 32, 64]],
            ..rule(
                "i2i(iand(a, b)) => iand(i2i(a), i2i(b))",
                conv(and(var(0), var(1), 1)),
                and(conv(var(0)), conv(var(1)), 0),
                vars,
                &[],
            )
        };
        let report = passes(&r);
        assert_eq!(report.sizes.len(), 16);
        assert!(report.sizes.iter().all(|s| s[0] != 1));
        assert_eq!(report.skipped, None);
    }

    #[test]
    fn fixed_size_float_conversions_round_trip() {
        let r = RuleInfo {
            classes: &[],
            ..rule(
                "f2f32(f2f64(a@32)) => a",
                Pattern::Op {
                    op: OpName::Op(AluOp::F2f32),
                    size: Size::Fixed(32),
                    src_size: Size::Fixed(64),
                    srcs: leak(vec![Pattern::Op {
                        op: OpName::Op(AluOp::F2f64),
                        size: Size::Fixed(64),
                        src_size: Size::Fixed(32),
                        srcs: leak(vec![var(0)]),
                        exact: false,
                        conds: &[],
                    }]),
                    exact: false,
                    conds: &[],
                },
                var(0),
                vec![VarInfo {
                    size: Size::Fixed(32),
                    ..var_info("a")
                }],
                &[],
            )
        };
        let report = passes(&r);
        assert_eq!(report.sizes, [Vec::<u8>::new()]);
        assert!(report.cases >= 1000);
    }
}
