//! Runtime support for rules written in the rule DSL (`shrew_rules_macro::rules!`).
//!
//! The macro compiles every rule into a Rust function that matches the rule's search pattern
//! against an instruction and builds its replacement. Those functions call the primitives of
//! [`Rewriter`]; they carry no interpreter of their own. Next to the code the macro emits a
//! [`RuleGroup`]: its dispatchers by root opcode and one [`RuleInfo`] per rule, which describes the rule as
//! data (its text, its location, its patterns with their bit-size classes). Statistics, the
//! `shrew rules` listing and the per-rule verification tests read that description.
//!
//! Matching follows NIR's algebraic matcher: a pattern node is a position in the IR (a value
//! read through a swizzle); an ALU node's sources are read through the composition of the
//! instruction's own swizzles with the position's; a repeated variable must bind the same value
//! with the same swizzle; constants compare per read component at the value's bit size.
//! Exactness: an `exact` instruction anywhere in the matched tree blocks an inexact (`~`) rule,
//! and makes every instruction of an exact rule's replacement exact. A rule that does not
//! preserve signed zeros, NaNs or infinities (`~`, or the `nsz`/`nnan`/`ninf` flags) is blocked
//! by any matched instruction that must preserve them.

pub mod check;
pub mod conds;
pub mod instance;
mod range;
mod rewriter;
pub mod shadow;

pub use range::{Range, RangeCache, Sign, alu_range};
pub use rewriter::{
    Checkpoint, ConstRead, Ctx, Placements, Rewriter, Shape, Src, SrcKind, is_bool_literal,
    is_float_literal, is_int_literal,
};

use crate::egraph::{CostModel, UnitCost};
use crate::ir::{FpFlags, Value};
use shrew_ops::{AluOp, BaseType, ConvFamily};
use std::fmt;
use std::sync::Arc;

/// A group's matcher for the rules rooted at one opcode: tries the enabled ones on `root` in
/// priority order; on the first match, builds the replacement before `root` and returns the
/// rule's index and the replacement.
pub type Dispatcher = fn(&mut Rewriter<'_>, Value) -> Option<(usize, Src)>;

/// One invocation of the rule macro: a group of rules in priority order, with the generated
/// dispatchers and the description of every rule.
pub struct RuleGroup {
    pub name: &'static str,
    pub rules: &'static [RuleInfo],
    /// The opcodes the group's rules are rooted at, each with its dispatcher: a pass calls the
    /// dispatcher of the root's opcode directly, and skips the group at other opcodes.
    pub roots: &'static [(AluOp, Dispatcher)],
}

/// What the rule macro's generated matchers name, imported with one glob where a group
/// expands: a glob import never clashes with the module's own imports.
pub mod matcher_prelude {
    pub use super::{Rewriter, Src, SrcKind, TargetOptions, conds};
    pub use crate::ir::{FpFlags, Value};
    pub use shrew_ops::{AluOp, BaseType, ConvFamily};
}

/// A named rule set, as passes use it: groups tried in order, so the first group's rules have
/// the highest priority. Rules are numbered across the groups in that order.
pub struct RuleSet {
    pub name: &'static str,
    pub description: &'static str,
    pub groups: &'static [&'static RuleGroup],
}

impl RuleSet {
    /// Every rule with its group, in priority order.
    pub fn rules(&self) -> impl Iterator<Item = (&'static RuleGroup, &'static RuleInfo)> + '_ {
        self.groups
            .iter()
            .flat_map(|g| g.rules.iter().map(move |r| (*g, r)))
    }

    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.rules.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether each rule's guard holds for `opts`, across the groups.
    pub fn guards(&self, opts: &TargetOptions) -> Vec<bool> {
        self.rules()
            .map(|(_, rule)| rule.guard.as_ref().is_none_or(|g| (g.holds)(opts)))
            .collect()
    }
}

/// A rule as data.
#[derive(Debug)]
pub struct RuleInfo {
    /// The rule's source text, `search => replacement [if guard]`.
    pub text: &'static str,
    pub file: &'static str,
    pub line: u32,
    /// The module the group is defined in (`shrew_rules::bitops`).
    pub module: &'static str,
    /// The name of the generated function and test: the rule's label, or its root op and line
    /// (`ior_l42`).
    pub name: &'static str,
    pub search: Pattern,
    pub replace: Pattern,
    pub vars: &'static [VarInfo],
    /// The bit-size classes of the rule: the sizes each class may take.
    pub classes: &'static [&'static [u8]],
    /// `~` somewhere in the search: the replacement may round differently and may differ on
    /// NaN, infinity and the sign of zero.
    pub inexact: bool,
    /// Float behaviours the rule does not preserve (from `~`, `nsz`, `nnan`, `ninf`).
    pub loses: FpFlags,
    /// The target/option guard, if any.
    pub guard: Option<Guard>,
    /// The rule's matcher and builder for the e-graph; `None` for rules with conditions on the
    /// matched operations (all of them look at uses), which only the greedy matcher runs.
    pub egraph: Option<crate::egraph::rules::EggRule>,
    /// One direction of an equality `a <=> b`: only the e-graph runs it.
    pub egraph_only: bool,
}

/// A rule's condition on the target options (`if opts.fuse_ffma32`).
#[derive(Debug)]
pub struct Guard {
    /// The condition as written.
    pub text: &'static str,
    pub holds: fn(&TargetOptions) -> bool,
}

impl RuleInfo {
    /// `file:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// The crate holding the rule and its generated test (`shrew_rules`).
    pub fn crate_name(&self) -> &'static str {
        self.module.split("::").next().unwrap_or(self.module)
    }

    /// The generated test's path within its crate, as `cargo test` filters take it
    /// (`bitops::verify::ior_l42`).
    pub fn test_path(&self) -> String {
        match self.module.split_once("::") {
            Some((_, inner)) => format!("{inner}::verify::{}", self.name),
            None => format!("verify::{}", self.name),
        }
    }

    /// Whether only the greedy matcher runs the rule: a condition depends on how values are
    /// used or on the shape of the IR, which an e-graph cannot decide.
    pub fn is_greedy_only(&self) -> bool {
        !crate::egraph::rules::egraph_ready(self)
    }
}

/// A pattern tree.
#[derive(Debug)]
pub enum Pattern {
    /// Variable `index` of [`RuleInfo::vars`], read through an extra swizzle in replacements.
    Var {
        index: u8,
        swizzle: Option<&'static [u8]>,
    },
    Const {
        value: Literal,
        size: Size,
    },
    Op {
        op: OpName,
        /// The bit size of the destination.
        size: Size,
        /// The bit size of the unsized sources.
        src_size: Size,
        srcs: &'static [Pattern],
        /// `!op` in a replacement.
        exact: bool,
        /// Conditions on the matched instruction (`op[is_used_once]`).
        conds: &'static [&'static str],
    },
}

impl Pattern {
    /// Visits the tree in pre-order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Pattern)) {
        f(self);
        if let Pattern::Op { srcs, .. } = self {
            srcs.iter().for_each(|s| s.walk(f));
        }
    }
}

/// An opcode in a pattern: a sized opcode, or a width-generic conversion.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpName {
    Op(AluOp),
    Conv(ConvFamily),
}

impl OpName {
    pub fn name(self) -> &'static str {
        match self {
            OpName::Op(op) => op.name(),
            OpName::Conv(f) => f.name(),
        }
    }

    /// Whether the first two sources may swap (conversions have one source).
    pub fn is_commutative(self) -> bool {
        match self {
            OpName::Op(op) => op.info().is_commutative(),
            OpName::Conv(_) => false,
        }
    }

    /// The concrete opcode for a destination of `bits` bits.
    pub fn resolve(self, bits: u8) -> Option<AluOp> {
        match self {
            OpName::Op(op) => Some(op),
            OpName::Conv(f) => f.op(bits),
        }
    }
}

/// A literal constant of a pattern.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Literal {
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// A bit size as bit-size inference left it: fixed, or one of the rule's classes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Size {
    Fixed(u8),
    Class(u8),
}

/// A pattern variable.
#[derive(Debug)]
pub struct VarInfo {
    pub name: &'static str,
    pub size: Size,
    /// `#a`: only constants match.
    pub is_const: bool,
    /// `a@float`: the value must come from an instruction producing that base type.
    pub ty: Option<BaseType>,
    /// Variable conditions.
    pub conds: &'static [VarCond],
}

/// A variable condition of a rule: its name as written and the function the matcher calls.
#[derive(Debug)]
pub struct VarCond {
    pub name: &'static str,
    pub check: fn(&Ctx<'_>, &Src) -> bool,
}

/// What a target asks of the rule sets. Rules guard on these fields (`if opts.lower_fsub`), and
/// each backend fills them in; the defaults describe a target with every operation native.
#[derive(Clone, Debug, Default)]
pub struct TargetOptions {
    /// Fuse `fadd(fmul(a, b), c)` into `ffma` (the target has a fused multiply-add that is
    /// not slower than the two operations).
    pub fuse_ffma16: bool,
    pub fuse_ffma32: bool,
    pub fuse_ffma64: bool,
    /// Split `ffma` into `fmul` + `fadd`: the target has no fused multiply-add.
    pub lower_ffma16: bool,
    pub lower_ffma32: bool,
    pub lower_ffma64: bool,
    /// `fsub` becomes `fadd` of `fneg`.
    pub lower_fsub: bool,
    /// `isub` becomes `iadd` of `ineg`.
    pub lower_isub: bool,
    /// `ineg` becomes `isub(0, a)`.
    pub lower_ineg: bool,
    /// `fneg` becomes `fmul(a, -1.0)`.
    pub lower_fneg: bool,
    /// `fsat` becomes `fmin(fmax(a, 0.0), 1.0)`.
    pub lower_fsat: bool,
    /// `fdiv` becomes `fmul(a, frcp(b))`.
    pub lower_fdiv: bool,
    /// `flrp` becomes its definition.
    pub lower_flrp16: bool,
    pub lower_flrp32: bool,
    pub lower_flrp64: bool,
    /// `fpow` becomes `fexp2(fmul(flog2(a), b))`.
    pub lower_fpow: bool,
    /// `fmod`/`frem` become their definitions.
    pub lower_fmod: bool,
    /// `ftan` becomes `fsin / fcos` (GLSL defines `tan` so).
    pub lower_ftan: bool,
    /// `fatan`, `fatan2`, `fasin`, `facos` become polynomial approximations
    /// (`lower-inverse-trig`).
    pub lower_inverse_trig: bool,
    /// `fsign`/`isign` become compare-and-select.
    pub lower_fsign: bool,
    pub lower_isign: bool,
    /// `iabs` becomes `imax(a, ineg(a))`.
    pub lower_iabs: bool,
    /// Bitfield operations become shifts and masks.
    pub lower_bitfield_extract: bool,
    pub lower_bitfield_insert: bool,
    /// `uadd_carry`/`usub_borrow` become compares.
    pub lower_uadd_carry: bool,
    pub lower_usub_borrow: bool,
    /// Saturating adds become compare-and-select sequences.
    pub lower_add_sat: bool,
    /// `urol`/`uror` become shifts.
    pub lower_rotate: bool,
    /// 32-bit `udiv`, `umod`, `idiv`, `irem`, `imod` become a float reciprocal estimate refined
    /// in integers (`lower-idiv`): the target has no integer divider.
    pub lower_idiv: bool,
    /// The 64-bit float operations the target lacks, which `lower-doubles` builds from others
    /// (those it knows: `passes::lower_doubles::lowerable`).
    pub lower_doubles: Vec<AluOp>,
    /// The 64-bit integer operations the target lacks, which `lower-int64` builds from others
    /// (those it knows: `passes::lower_int64::lowerable`).
    pub lower_int64: Vec<AluOp>,
    /// Textures read at run-time array indices become one read per element and a select
    /// (`lower-texture-indices`): the target names texture units in its instructions.
    pub lower_texture_indices: bool,
    /// The target prefers `bcsel` over `b2f` multiplications.
    pub lower_b2f_mul: bool,
    /// Scalar `fdot` on targets without dot-product instructions.
    pub lower_fdot: bool,
    /// `imul_high`/`umul_high` become 64-bit multiplies.
    pub lower_mul_high: bool,
    /// 32-bit `imul_high`/`umul_high` become 16-bit partial products (targets without 64-bit
    /// multiplies).
    pub lower_mul_high_in_halves: bool,
    /// The hyperbolic functions and their inverses become exponentials and logarithms.
    pub lower_hyperbolic: bool,
    /// `imod` becomes `irem` and a correction (targets with a remainder but no floored modulo).
    pub lower_imod: bool,
    /// 32-bit `fldexp`, `frexp_sig` and `frexp_exp` become multiplies and exponent-field
    /// arithmetic.
    pub lower_ldexp_frexp32: bool,
    /// GLSL's pack and unpack operations (normalized and half floats) and 32-bit
    /// `fquantize2f16` become conversions, shifts, masks and selects.
    pub lower_pack: bool,
    /// 32-bit `bit_count` becomes shifts, masks and a multiply.
    pub lower_bit_count: bool,
    /// 32-bit `bitfield_reverse` becomes five swaps of halves.
    pub lower_bitfield_reverse: bool,
    /// 32-bit `ufind_msb`/`ifind_msb` and `find_lsb` become bit counts.
    pub lower_find_msb: bool,
    pub lower_find_lsb: bool,
    /// `fpow(a, 2.0)` and similar become multiplications.
    pub lower_pow_small_int: bool,
    /// Unordered float comparisons become ordered ones with NaN checks.
    pub lower_unordered_cmp: bool,
    /// Derivatives stay correct after a discard (discarded invocations keep running as
    /// helpers), so `move-discards` may move kills above them.
    pub derivatives_safe_after_discard: bool,
    /// The target loads uniforms, UBOs and push constants at run-time offsets (pull
    /// constants), so `lower-indirect-derefs` leaves those loads to `lower-io`.
    pub indirect_uniform_loads: bool,
    /// The target indexes arrays of temporaries in its registers at run time (R600's
    /// AR-relative operands), so `lower-indirect-derefs` leaves the array and matrix steps
    /// whose elements fill whole 16-byte slots to `lower-io` (vector components are still
    /// selected).
    pub indexed_temporaries: bool,
    /// Which vector ALU operations `lower-alu-to-scalar` splits.
    pub scalarize: Scalarize,
    /// What control flow costs against arithmetic.
    pub costs: CostOptions,
    /// The nesting the target's control-flow stack holds (`None`: any), which
    /// `flatten-deep-cf` keeps functions within.
    pub cf_nesting: Option<NestingBudget>,
    /// The most instructions `inline` lets the entry function grow to with copies of shared
    /// callees (`None`: the pass's [`crate::passes::inline::MAX_FUNCTION_SIZE`]), for targets
    /// whose jumps bound a program's size.
    pub inline_budget: Option<usize>,
}

/// A hardware control-flow stack: how many elements it holds and what a loop and an `if`
/// take of it while their bodies run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NestingBudget {
    pub limit: u32,
    pub per_loop: u32,
    pub per_if: u32,
}

/// Which vector ALU operations `lower-alu-to-scalar` splits.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Scalarize {
    /// Every operation whose operands are per-component.
    #[default]
    Every,
    /// Those (but `bcsel`) with a constant operand whose components differ, such as
    /// `fmul((0.1, 0, 0, 0), a.xxxx)`: each component then meets the rules on its own constant
    /// (`0 * a` folds), where the vector matches none. Selects stay whole because the
    /// per-component `bcsel` rules trade them for `b2f` arithmetic.
    MixedConstants,
}

/// What things cost on a target, for the passes that trade one form against another.
#[derive(Clone, Debug)]
pub struct CostOptions {
    /// `if-convert`: the most ALU instructions the arms of a selection may hold together, selects
    /// included, for straight-line code to beat the branch (0: never convert).
    pub if_convert_max_alu: u32,
    /// `eqsat`: what each operation costs, for extraction.
    pub model: Model,
}

impl Default for CostOptions {
    /// A branch costs about as much as eight ALU instructions: the jump, the divergence
    /// bookkeeping and the lost scheduling freedom around it. Operations cost one per component.
    fn default() -> CostOptions {
        CostOptions {
            if_convert_max_alu: 8,
            model: Model(Arc::new(UnitCost)),
        }
    }
}

/// A shared cost model.
#[derive(Clone)]
pub struct Model(pub Arc<dyn CostModel>);

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Model({})", self.0.name())
    }
}
