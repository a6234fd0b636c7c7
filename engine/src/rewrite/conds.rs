//! The conditions rules attach to variables and operations, and their description for rule
//! verification. The facts follow Mesa's `nir_search_helpers.h`; the code is shrew's own.
//!
//! Generated matchers call conditions by name:
//! - a *variable condition* (`a[is_pos_power_of_two]`) is `fn(&Ctx, &Src) -> bool` on the value
//!   the variable bound, read through its swizzle;
//! - an *expression condition* (`fmul[is_used_once](a, b)`) is `fn(&Ctx, Value) -> bool` on the
//!   value of the matched instruction. All of them look at uses, so all are structural.
//!
//! Variable conditions are of three kinds ([`CondKind`]):
//! - **constant**: only a constant satisfies it, and every read component must have the
//!   condition's one-component meaning, checked at the value's bit size;
//! - **range**: a fact of the float range analysis ([`Range`]), computed exactly from the read
//!   components when the value is a constant;
//! - **structural**: about the shape of the IR, not about the value.
//!
//! A condition does not know which operand type reads the value (Mesa asks the ALU instruction):
//! integer conditions read the raw bits (as signed where the doc says so), float conditions read
//! them as a float of the value's bit size and are false at 1 and 8 bits.
//!
//! Range conditions keep Mesa's meaning: a sign class speaks only about the components that are
//! numbers, so `is_gt_zero` admits NaN and `is_a_number_gt_zero` does not; −0.0 is a zero, so
//! `is_ge_zero` and `is_le_zero` both admit it. `is_integral` admits infinities (rounding them
//! changes nothing) and NaN. A relation admits every class inside it (`is_ge_zero` admits a value
//! known to be `> 0`), so `is_not_negative`, `is_not_positive` and `is_not_zero` are the same
//! tests as `is_ge_zero`, `is_le_zero` and `is_ne_zero`, kept under Mesa's names.
//!
//! [`VAR_CONDITIONS`] gives the one-component meaning of every constant and range condition
//! (`holds`): whenever a condition accepts a value, `holds` is true of each of the components it
//! reads, so a rule checked on every input satisfying `holds` is checked on everything the
//! matcher lets it rewrite. For a constant condition and a one-component constant, the condition
//! and `holds` agree exactly. One exception: `is_any_comp_nan` accepts a vector with a single NaN
//! component, so on vectors its `holds` (NaN) does not describe the other components.
//! `is_not_const_zero` says nothing about the values of non-constants, so it is structural.

use super::range::{Range, Sign};
use super::rewriter::{Ctx, Src, constant_at};
use crate::ir::{Alu, Function, InstKind, Terminator, TexOp, TexSrc, Value};
use crate::uses::User;
use shrew_ops::eval::{fget, mask, sext};
use shrew_ops::{AluOp, BaseType};

/// What a variable condition looks at.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CondKind {
    /// The value must be a constant; `holds` says what its read components are.
    Constant,
    /// A fact of the range analysis about every read component.
    Range,
    /// The shape of the IR (what the value is computed by), not the value.
    Structural,
}

/// The description of one variable condition.
#[derive(Debug)]
pub struct VarCondition {
    pub name: &'static str,
    pub kind: CondKind,
    /// The condition's meaning for one component, `holds(raw bits, bit size)`: true of every read
    /// component of any value the condition accepts. `None` for structural conditions.
    pub holds: Option<fn(u64, u8) -> bool>,
    /// For range conditions, the test on a range: what the e-graph asks of an e-class's range.
    pub admits: Option<fn(Range) -> bool>,
    /// The function generated matchers call.
    pub check: fn(&Ctx<'_>, &Src) -> bool,
}

/// Every expression condition. They all depend on the uses of the matched value.
pub static OP_CONDITIONS: &[&str] = &[
    "is_used_once",
    "is_used_by_if",
    "is_not_used_by_if",
    "is_only_used_by_if",
    "is_used_by_non_fsat",
    "is_only_used_as_float",
    "is_only_used_by_fadd",
    "is_only_used_by_iadd",
    "is_only_used_by_iand",
    "is_only_used_by_ior",
    "only_lower_8_bits_used",
    "only_lower_16_bits_used",
];

/// The variable condition called `name`.
pub fn var_condition(name: &str) -> Option<&'static VarCondition> {
    VAR_CONDITIONS.iter().find(|c| c.name == name)
}

/// Whether a condition depends on the shape of the IR rather than on values: the structural
/// variable conditions and every expression condition. False for names in neither table.
pub fn is_structural(name: &str) -> bool {
    OP_CONDITIONS.contains(&name)
        || var_condition(name).is_some_and(|c| c.kind == CondKind::Structural)
}

// Helpers.

/// The raw bits as a float, for the float sizes.
fn float_at(raw: u64, bits: u8) -> Option<f64> {
    matches!(bits, 16 | 32 | 64).then(|| fget(raw, bits))
}

fn is_constant(func: &Function, v: Value) -> bool {
    matches!(func.get_inst(v).map(|i| &i.kind), Some(InstKind::Const(_)))
}

fn alu_at(func: &Function, v: Value) -> Option<&Alu> {
    match &func.get_inst(v)?.kind {
        InstKind::Alu(alu) => Some(alu),
        _ => None,
    }
}

/// The opcode computing `v`, or the one under it when `v` is an `fneg`.
fn op_through_fneg(func: &Function, v: Value) -> Option<AluOp> {
    let alu = alu_at(func, v)?;
    if alu.op == AluOp::Fneg {
        alu_at(func, alu.srcs.first()?.value).map(|a| a.op)
    } else {
        Some(alu.op)
    }
}

/// `src` is a constant and every read component satisfies `holds`.
fn const_all(cx: &Ctx, src: &Src, holds: fn(u64, u8) -> bool) -> bool {
    constant_at(cx.func, src)
        .is_some_and(|(values, bits)| values.iter().all(|&v| holds(mask(v, bits), bits)))
}

/// The range of the components `src` reads: exact for constants, the analysis otherwise.
fn range_at(cx: &Ctx, src: &Src) -> Range {
    match constant_at(cx.func, src) {
        Some((values, bits)) => Range::of_constant(&values, bits),
        None => cx.ranges.get(cx.func, src.value),
    }
}

/// What a range condition requires.
#[derive(Copy, Clone)]
struct Need {
    /// The class every number must be in.
    sign: Sign,
    number: bool,
    finite: bool,
    integral: bool,
}

impl Need {
    const fn sign(sign: Sign) -> Need {
        Need {
            sign,
            number: false,
            finite: false,
            integral: false,
        }
    }

    const fn number(self) -> Need {
        Need {
            number: true,
            ..self
        }
    }

    /// Finite values are numbers too.
    const fn finite(self) -> Need {
        Need {
            finite: true,
            number: true,
            ..self
        }
    }

    const fn integral(self) -> Need {
        Need {
            integral: true,
            ..self
        }
    }

    /// Whether every value in `r` meets the need.
    fn admits(self, r: Range) -> bool {
        r.sign.within(self.sign)
            && (r.is_a_number || !self.number)
            && (r.is_finite || !self.finite)
            && (r.is_integral || !self.integral)
    }

    /// Whether one component meets the need.
    fn holds(self, raw: u64, bits: u8) -> bool {
        let Some(x) = float_at(raw, bits) else {
            return false;
        };
        match Sign::of(x) {
            None => !self.number,
            Some(sign) => {
                sign.within(self.sign)
                    && (x.is_finite() || !self.finite)
                    && (x.floor() == x || !self.integral)
            }
        }
    }
}

// One-component meanings of the constant conditions.

fn pos_power_of_two(v: u64, bits: u8) -> bool {
    sext(v, bits) > 0 && v.is_power_of_two()
}

fn neg_power_of_two(v: u64, bits: u8) -> bool {
    let s = sext(v, bits);
    let int_min = sext(1 << (bits - 1), bits);
    s < 0 && s != int_min && s.unsigned_abs().is_power_of_two()
}

fn bitcount2(v: u64, _: u8) -> bool {
    v.count_ones() == 2
}

fn nan(v: u64, bits: u8) -> bool {
    float_at(v, bits).is_some_and(f64::is_nan)
}

fn negative_zero(v: u64, bits: u8) -> bool {
    float_at(v, bits).is_some_and(|x| x == 0.0 && x.is_sign_negative())
}

fn unsigned_multiple_of<const N: u64>(v: u64, _: u8) -> bool {
    v.is_multiple_of(N)
}

fn zero_to_one(v: u64, bits: u8) -> bool {
    float_at(v, bits).is_some_and(|x| (0.0..=1.0).contains(&x))
}

fn gt_0_and_lt_1(v: u64, bits: u8) -> bool {
    float_at(v, bits).is_some_and(|x| x > 0.0 && x < 1.0)
}

fn odd(v: u64, _: u8) -> bool {
    v & 1 != 0
}

fn ult<const N: u64>(v: u64, _: u8) -> bool {
    v < N
}

fn first_5_bits_uge_2(v: u64, _: u8) -> bool {
    v & 0x1f >= 2
}

fn low_5_bits_not_zero(v: u64, _: u8) -> bool {
    v & 0x1f != 0
}

/// `SCALE` times the value, read as signed, fits in 16 bits as a signed or an unsigned integer.
fn fits_16_bits<const SCALE: i64>(v: u64, bits: u8) -> bool {
    let x = sext(v, bits) as i128 * SCALE as i128;
    (-0x8000..=0xffff).contains(&x)
}

/// The upper and lower halves of a value of 8 bits or more.
fn halves(v: u64, bits: u8) -> Option<(u64, u64)> {
    let half = bits / 2;
    (bits >= 8).then(|| (v >> half, mask(v, half)))
}

fn upper_half_zero(v: u64, bits: u8) -> bool {
    halves(v, bits).is_some_and(|(hi, _)| hi == 0)
}

fn lower_half_zero(v: u64, bits: u8) -> bool {
    halves(v, bits).is_some_and(|(_, lo)| lo == 0)
}

fn upper_half_negative_one(v: u64, bits: u8) -> bool {
    halves(v, bits).is_some_and(|(hi, _)| hi == mask(u64::MAX, bits / 2))
}

fn lower_half_negative_one(v: u64, bits: u8) -> bool {
    halves(v, bits).is_some_and(|(_, lo)| lo == mask(u64::MAX, bits / 2))
}

fn bitmask(v: u64, bits: u8) -> bool {
    let ones = v.count_ones() as u8;
    v != 0 && ones < bits && v == mask(u64::MAX, ones)
}

fn bfm(v: u64, _: u8) -> bool {
    let field = v.checked_shr(v.trailing_zeros()).unwrap_or(0);
    v != 0 && field & field.wrapping_add(1) == 0
}

/// Generates the constant and range conditions from their one-component meanings, and the table
/// of every variable condition (the structural and hand-written ones are listed by kind).
macro_rules! var_conditions {
    (
        constant {
            $( $(#[doc = $cdoc:literal])+ $cname:ident => $holds:expr; )*
        }
        range {
            $( $(#[doc = $rdoc:literal])+ $rname:ident => $need:expr; )*
        }
        hand_written {
            $( $hname:ident => $hkind:ident $(($hholds:expr))?; )*
        }
    ) => {
        $(
            $(#[doc = $cdoc])+
            pub fn $cname(cx: &Ctx, src: &Src) -> bool {
                const_all(cx, src, $holds)
            }
        )*
        $(
            $(#[doc = $rdoc])+
            pub fn $rname(cx: &Ctx, src: &Src) -> bool {
                $need.admits(range_at(cx, src))
            }
        )*
        /// Every variable condition.
        pub static VAR_CONDITIONS: &[VarCondition] = &[
            $(VarCondition {
                name: stringify!($cname),
                kind: CondKind::Constant,
                holds: Some($holds),
                admits: None,
                check: $cname,
            },)*
            $(VarCondition {
                name: stringify!($rname),
                kind: CondKind::Range,
                holds: Some(|raw: u64, bits: u8| $need.holds(raw, bits)),
                admits: Some(|range: Range| $need.admits(range)),
                check: $rname,
            },)*
            $(VarCondition {
                name: stringify!($hname),
                kind: CondKind::$hkind,
                holds: optional!($($hholds)?),
                admits: None,
                check: $hname,
            },)*
        ];
    };
}

macro_rules! optional {
    () => {
        None
    };
    ($e:expr) => {
        Some($e)
    };
}

var_conditions! {
    constant {
        /// An integer constant that is positive and a power of two. Read as signed, so
        /// `INT_MIN` (a power of two only as an unsigned value) is not one.
        is_pos_power_of_two => pos_power_of_two;
        /// An integer constant that is negative and whose negation is a power of two, other than
        /// `INT_MIN`.
        is_neg_power_of_two => neg_power_of_two;
        /// An integer constant with exactly two bits set.
        is_bitcount2 => bitcount2;
        /// A float constant whose components are all NaN.
        is_nan => nan;
        /// A float constant whose components are all −0.0.
        is_negative_zero => negative_zero;
        /// An integer constant, read as unsigned, that is a multiple of 2.
        is_unsigned_multiple_of_2 => unsigned_multiple_of::<2>;
        /// An integer constant, read as unsigned, that is a multiple of 4.
        is_unsigned_multiple_of_4 => unsigned_multiple_of::<4>;
        /// An integer constant, read as unsigned, that is a multiple of 8.
        is_unsigned_multiple_of_8 => unsigned_multiple_of::<8>;
        /// An integer constant, read as unsigned, that is a multiple of 16.
        is_unsigned_multiple_of_16 => unsigned_multiple_of::<16>;
        /// An integer constant, read as unsigned, that is a multiple of 32.
        is_unsigned_multiple_of_32 => unsigned_multiple_of::<32>;
        /// An integer constant, read as unsigned, that is a multiple of 64.
        is_unsigned_multiple_of_64 => unsigned_multiple_of::<64>;
        /// A float constant in [0, 1] (−0.0 included, NaN not).
        is_zero_to_one => zero_to_one;
        /// A float constant in the open interval (0, 1).
        is_gt_0_and_lt_1 => gt_0_and_lt_1;
        /// An integer constant with its lowest bit set.
        is_odd => odd;
        /// An integer constant below 32, read as unsigned.
        is_ult_32 => ult::<32>;
        /// An integer constant below `0xfffc07fc`, read as unsigned (the bound under which a
        /// four-way byte dot product plus it cannot overflow 32 bits).
        is_ult_0xfffc07fc => ult::<0xfffc07fc>;
        /// An integer constant whose low five bits, read as unsigned, are at least 2.
        is_first_5_bits_uge_2 => first_5_bits_uge_2;
        /// An integer constant of 8 bits or more whose upper half is zero.
        is_upper_half_zero => upper_half_zero;
        /// An integer constant of 8 bits or more whose lower half is zero.
        is_lower_half_zero => lower_half_zero;
        /// An integer constant of 8 bits or more whose upper half is all ones.
        is_upper_half_negative_one => upper_half_negative_one;
        /// An integer constant of 8 bits or more whose lower half is all ones.
        is_lower_half_negative_one => lower_half_negative_one;
        /// An integer constant of the form `2^k - 1` with `0 < k <` the bit size: a mask of the
        /// low bits, neither zero nor all ones.
        is_const_bitmask => bitmask;
        /// A non-zero integer constant whose set bits are contiguous, at any offset: what a
        /// bitfield mask can make.
        is_const_bfm => bfm;
        /// An integer constant whose low five bits are not all zero.
        is_5lsb_not_zero => low_5_bits_not_zero;
    }
    range {
        /// Every component that is a number is an integer or an infinity.
        is_integral => Need::sign(Sign::Unknown).integral();
        /// Every component is finite (not an infinity and not NaN).
        is_finite => Need::sign(Sign::Unknown).finite();
        /// Every component is finite and not a zero.
        is_finite_not_zero => Need::sign(Sign::NeZero).finite();
        /// Every component is `< 0` or NaN.
        is_lt_zero => Need::sign(Sign::LtZero);
        /// Every component is `≤ 0` or NaN.
        is_le_zero => Need::sign(Sign::LeZero);
        /// Every component is `> 0` or NaN.
        is_gt_zero => Need::sign(Sign::GtZero);
        /// Every component is `≥ 0` or NaN.
        is_ge_zero => Need::sign(Sign::GeZero);
        /// Every component is non-zero (NaN included).
        is_ne_zero => Need::sign(Sign::NeZero);
        /// Every component is a number `< 0`.
        is_a_number_lt_zero => Need::sign(Sign::LtZero).number();
        /// Every component is a number `≤ 0`.
        is_a_number_le_zero => Need::sign(Sign::LeZero).number();
        /// Every component is a number `> 0`.
        is_a_number_gt_zero => Need::sign(Sign::GtZero).number();
        /// Every component is a number `≥ 0`.
        is_a_number_ge_zero => Need::sign(Sign::GeZero).number();
        /// Every component is a number other than a zero.
        is_a_number_ne_zero => Need::sign(Sign::NeZero).number();
        /// No component is `< 0` (NaN admitted): the test of `is_ge_zero`.
        is_not_negative => Need::sign(Sign::GeZero);
        /// Every component is a number `≥ 0`: the test of `is_a_number_ge_zero`.
        is_a_number_not_negative => Need::sign(Sign::GeZero).number();
        /// No component is `> 0` (NaN admitted): the test of `is_le_zero`.
        is_not_positive => Need::sign(Sign::LeZero);
        /// Every component is a number `≤ 0`: the test of `is_a_number_le_zero`.
        is_a_number_not_positive => Need::sign(Sign::LeZero).number();
        /// No component is a zero (NaN admitted): the test of `is_ne_zero`.
        is_not_zero => Need::sign(Sign::NeZero);
        /// Every component is a number other than a zero: the test of `is_a_number_ne_zero`.
        is_a_number_not_zero => Need::sign(Sign::NeZero).number();
        /// No component is NaN.
        is_a_number => Need::sign(Sign::Unknown).number();
    }
    hand_written {
        is_any_comp_nan => Constant(nan);
        is_16_bits => Constant(fits_16_bits::<1>);
        is_2x_16_bits => Constant(fits_16_bits::<2>);
        is_neg2x_16_bits => Constant(fits_16_bits::<{ -2 }>);
        is_not_const_zero => Structural;
        is_not_const => Structural;
        is_fmul => Structural;
        is_not_fmul => Structural;
        is_not_const_and_not_fsign => Structural;
    }
}

// Constant conditions that look at the components together.

/// A float constant with at least one NaN among its read components. `holds` (NaN) describes a
/// one-component constant; on a vector the other components may be anything.
pub fn is_any_comp_nan(cx: &Ctx, src: &Src) -> bool {
    constant_at(cx.func, src).is_some_and(|(values, bits)| values.iter().any(|&v| nan(v, bits)))
}

/// Every read component, read as signed and multiplied by `SCALE`, fits in 16 bits, all as
/// signed or all as unsigned integers (no component below zero when one is above `0x7fff`).
fn all_fit_16_bits<const SCALE: i64>(cx: &Ctx, src: &Src) -> bool {
    let Some((values, bits)) = constant_at(cx.func, src) else {
        return false;
    };
    let scaled = || {
        values
            .iter()
            .map(|&v| sext(v, bits) as i128 * SCALE as i128)
    };
    values.iter().all(|&v| fits_16_bits::<SCALE>(v, bits))
        && !(scaled().any(|x| x < 0) && scaled().any(|x| x > 0x7fff))
}

/// An integer constant, read as signed, that fits in 16 bits as a signed or an unsigned integer
/// (all components the same way).
pub fn is_16_bits(cx: &Ctx, src: &Src) -> bool {
    all_fit_16_bits::<1>(cx, src)
}

/// An integer constant, read as signed, whose double fits in 16 bits as a signed or an unsigned
/// integer (all components the same way).
pub fn is_2x_16_bits(cx: &Ctx, src: &Src) -> bool {
    all_fit_16_bits::<2>(cx, src)
}

/// An integer constant, read as signed, whose double negated fits in 16 bits as a signed or an
/// unsigned integer (all components the same way).
pub fn is_neg2x_16_bits(cx: &Ctx, src: &Src) -> bool {
    all_fit_16_bits::<{ -2 }>(cx, src)
}

// Structural variable conditions.

/// Not a constant, or a constant none of whose read components is zero (neither the integer 0
/// nor the float −0.0 bits). It says nothing about the values a non-constant takes, so it is
/// structural: a rule using it must be right for zeros too.
pub fn is_not_const_zero(cx: &Ctx, src: &Src) -> bool {
    if !is_constant(cx.func, src.value) {
        return true;
    }
    constant_at(cx.func, src).is_some_and(|(values, bits)| {
        values
            .iter()
            .all(|&v| mask(v, bits) != 0 && !negative_zero(v, bits))
    })
}

/// Not a constant. Keeps rules that move constants around from fighting constant folding.
pub fn is_not_const(cx: &Ctx, src: &Src) -> bool {
    !is_constant(cx.func, src.value)
}

/// Computed by `fmul`, or by `fneg` of an `fmul`.
pub fn is_fmul(cx: &Ctx, src: &Src) -> bool {
    op_through_fneg(cx.func, src.value) == Some(AluOp::Fmul)
}

/// Not computed by `fmul` nor by `fneg` of an `fmul` (anything that is not an ALU instruction
/// qualifies).
pub fn is_not_fmul(cx: &Ctx, src: &Src) -> bool {
    !is_fmul(cx, src)
}

/// Not a constant, and computed neither by `fsign` nor by `fneg` of an `fsign`.
pub fn is_not_const_and_not_fsign(cx: &Ctx, src: &Src) -> bool {
    is_not_const(cx, src) && op_through_fneg(cx.func, src.value) != Some(AluOp::Fsign)
}

// Expression conditions.

/// How many `fneg`/`fabs`, `mov`/`bcsel` steps the use walks follow.
const USE_DEPTH: u8 = 8;

/// The ALU instruction behind a use.
fn user_alu<'a>(cx: &Ctx<'a>, user: User) -> Option<(Value, &'a Alu)> {
    match user {
        User::Inst(u) => alu_at(cx.func, u).map(|alu| (u, alu)),
        User::Terminator(_) => None,
    }
}

/// Whether a use is the condition of a conditional branch (an `if` or a loop exit).
fn is_if_use(cx: &Ctx, user: User) -> bool {
    match user {
        User::Terminator(b) => cx
            .func
            .cfg
            .node_weight(b)
            .is_some_and(|block| matches!(block.terminator, Some(Terminator::Branch { .. }))),
        User::Inst(_) => false,
    }
}

/// The value has exactly one use (a branch condition counts).
pub fn is_used_once(cx: &Ctx, v: Value) -> bool {
    cx.uses.count(v) == 1
}

/// Some use is a branch condition.
pub fn is_used_by_if(cx: &Ctx, v: Value) -> bool {
    cx.uses.users(v).iter().any(|&u| is_if_use(cx, u))
}

/// No use is a branch condition.
pub fn is_not_used_by_if(cx: &Ctx, v: Value) -> bool {
    !is_used_by_if(cx, v)
}

/// Every use is a branch condition (true of an unused value).
pub fn is_only_used_by_if(cx: &Ctx, v: Value) -> bool {
    cx.uses.users(v).iter().all(|&u| is_if_use(cx, u))
}

/// Some use is not an `fsat` (terminators and non-ALU users count as such).
pub fn is_used_by_non_fsat(cx: &Ctx, v: Value) -> bool {
    cx.uses
        .users(v)
        .iter()
        .any(|&u| user_alu(cx, u).is_none_or(|(_, alu)| alu.op != AluOp::Fsat))
}

/// Texture operations that sample, whose coordinates and level controls are floats.
fn samples(op: TexOp) -> bool {
    matches!(
        op,
        TexOp::Tex | TexOp::Txb | TexOp::Txl | TexOp::Txd | TexOp::Lod | TexOp::Tg4
    )
}

/// Whether every use of `v` reads it as a float, following `mov` and the data operands of
/// `bcsel` and `vecN` at most `depth` steps.
fn used_as_float(cx: &Ctx, v: Value, depth: u8) -> bool {
    cx.uses.users(v).iter().all(|&user| {
        let User::Inst(u) = user else {
            return false;
        };
        match cx.func.get_inst(u).map(|i| &i.kind) {
            Some(InstKind::Alu(alu)) => {
                let info = alu.op.info();
                alu.srcs
                    .iter()
                    .zip(info.srcs)
                    .enumerate()
                    .filter(|(_, (s, _))| s.value == v)
                    .all(|(i, (_, operand))| {
                        let moves = matches!(
                            alu.op,
                            AluOp::Mov
                                | AluOp::Vec2
                                | AluOp::Vec3
                                | AluOp::Vec4
                                | AluOp::Vec8
                                | AluOp::Vec16
                        ) || (alu.op == AluOp::Bcsel && i > 0);
                        operand.base == BaseType::Float
                            || (moves && depth > 0 && used_as_float(cx, u, depth - 1))
                    })
            }
            Some(InstKind::Tex(tex)) => tex.srcs.iter().filter(|(_, s)| *s == v).all(|(k, _)| {
                samples(tex.op)
                    && matches!(
                        k,
                        TexSrc::Coord
                            | TexSrc::Projector
                            | TexSrc::Comparator
                            | TexSrc::Bias
                            | TexSrc::Lod
                            | TexSrc::MinLod
                            | TexSrc::Ddx
                            | TexSrc::Ddy
                    )
            }),
            _ => false,
        }
    })
}

/// Every use reads the value as a float: a float operand of an ALU instruction (through `mov`
/// and the data operands of `bcsel` and `vecN`, a few steps deep), or a float source of a
/// sampling texture instruction. Other users (terminators, intrinsics, calls) fail it. True of
/// an unused value.
pub fn is_only_used_as_float(cx: &Ctx, v: Value) -> bool {
    used_as_float(cx, v, USE_DEPTH)
}

fn only_used_by_fadd(cx: &Ctx, v: Value, depth: u8) -> bool {
    cx.uses
        .users(v)
        .iter()
        .all(|&user| match user_alu(cx, user) {
            Some((_, alu)) if alu.op == AluOp::Fadd => true,
            Some((u, alu)) if matches!(alu.op, AluOp::Fneg | AluOp::Fabs) => {
                depth > 0 && only_used_by_fadd(cx, u, depth - 1)
            }
            _ => false,
        })
}

/// Every use is an `fadd`, directly or through `fneg` and `fabs` (true of an unused value).
pub fn is_only_used_by_fadd(cx: &Ctx, v: Value) -> bool {
    only_used_by_fadd(cx, v, USE_DEPTH)
}

fn only_used_by(cx: &Ctx, v: Value, op: AluOp) -> bool {
    cx.uses
        .users(v)
        .iter()
        .all(|&u| user_alu(cx, u).is_some_and(|(_, alu)| alu.op == op))
}

/// Generates the conditions "every use is this opcode".
macro_rules! only_used_by {
    ($( $(#[doc = $doc:literal])+ $name:ident => $op:ident; )*) => {
        $(
            $(#[doc = $doc])+
            pub fn $name(cx: &Ctx, v: Value) -> bool {
                only_used_by(cx, v, AluOp::$op)
            }
        )*
    };
}

only_used_by! {
    /// Every use is an `iadd` (true of an unused value).
    is_only_used_by_iadd => Iadd;
    /// Every use is an `iand` (true of an unused value).
    is_only_used_by_iand => Iand;
    /// Every use is an `ior` (true of an unused value).
    is_only_used_by_ior => Ior;
}

/// The bits of `v` that one use can read: all of them unless the user provably reads only some.
fn bits_read(cx: &Ctx, user: User, v: Value, bits: u8) -> u64 {
    let all = mask(u64::MAX, bits);
    let Some((u, alu)) = user_alu(cx, user) else {
        return all;
    };
    let dst_bits = cx.func.value_type(u).map_or(64, |t| t.bits);
    let read = |i: usize| match (alu.op, i) {
        // Integer conversions read the low bits of the destination's size.
        (
            AluOp::U2u8
            | AluOp::U2u16
            | AluOp::U2u32
            | AluOp::U2u64
            | AluOp::I2i8
            | AluOp::I2i16
            | AluOp::I2i32
            | AluOp::I2i64,
            0,
        ) => mask(u64::MAX, dst_bits),
        // Shift and rotate counts are taken modulo the (power-of-two) bit size.
        (AluOp::Ishl | AluOp::Ishr | AluOp::Ushr | AluOp::Urol | AluOp::Uror, 1)
            if dst_bits.is_power_of_two() =>
        {
            dst_bits as u64 - 1
        }
        // A mask with a constant reads the mask's bits.
        (AluOp::Iand, 0 | 1) => {
            let other = alu.srcs[1 - i].value;
            match cx.func.get_inst(other).map(|i| &i.kind) {
                Some(InstKind::Const(values)) if other != v => values.iter().fold(0, |m, c| m | c),
                _ => all,
            }
        }
        _ => all,
    };
    alu.srcs
        .iter()
        .enumerate()
        .filter(|(_, s)| s.value == v)
        .fold(0, |m, (i, _)| m | read(i))
        & all
}

/// Whether the uses of `v` read none of its bits above the low `n`.
fn only_low_bits_used(cx: &Ctx, v: Value, n: u8) -> bool {
    let bits = cx.func.value_type(v).map_or(64, |t| t.bits);
    let used = cx
        .uses
        .users(v)
        .iter()
        .fold(0, |m, &u| m | bits_read(cx, u, v, bits));
    used & !mask(u64::MAX, n) == 0
}

/// No use reads a bit of the value above the low 8. A use counts as reading all bits unless it
/// is a conversion to 8 bits (`u2u8`, `i2i8`), an `iand` with a constant mask within `0xff`, or a
/// shift count. Always true of values of 8 bits or fewer, and of unused values.
pub fn only_lower_8_bits_used(cx: &Ctx, v: Value) -> bool {
    only_low_bits_used(cx, v, 8)
}

/// No use reads a bit of the value above the low 16: as `only_lower_8_bits_used`, with
/// conversions to 8 or 16 bits and masks within `0xffff`.
pub fn only_lower_16_bits_used(cx: &Ctx, v: Value) -> bool {
    only_low_bits_used(cx, v, 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, Dim, FuncId, IDENTITY_SWIZZLE, Shader, Stage, Tex, ValType};
    use crate::rewrite::RangeCache;
    use crate::uses::Uses;
    use shrew_ops::eval::fput;

    /// Builds a function with `build`, ends it, and runs `check` with a context over it.
    fn with_ctx<T>(build: impl FnOnce(&mut Builder) -> T, check: impl FnOnce(&Ctx, T)) {
        let mut shader = Shader::new(Stage::Fragment);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let built = build(&mut b);
        b.ret(None);
        let func = &shader.functions[0];
        let uses = Uses::build(func);
        let ranges = RangeCache::default();
        let cx = Ctx {
            func,
            uses: &uses,
            ranges: &ranges,
        };
        check(&cx, built);
    }

    /// `v` read whole.
    fn whole(cx: &Ctx, v: Value) -> Src {
        Src {
            value: v,
            swizzle: IDENTITY_SWIZZLE,
            comps: cx.func.value_type(v).unwrap().comps,
        }
    }

    fn check_fn(name: &str) -> fn(&Ctx<'_>, &Src) -> bool {
        var_condition(name).unwrap().check
    }

    /// Condition `name` on a constant of `bits` bits with the given components.
    fn on_const(name: &str, bits: u8, comps: &[u64]) -> bool {
        let mut result = false;
        with_ctx(
            |b| b.imm(bits, comps),
            |cx, v| result = check_fn(name)(cx, &whole(cx, v)),
        );
        result
    }

    fn f(x: f64, bits: u8) -> u64 {
        fput(x, bits)
    }

    fn neg(x: i64) -> u64 {
        x as u64
    }

    #[test]
    fn constant_conditions() {
        let nan32 = f(f64::NAN, 32);
        let cases: &[(&str, u8, &[u64], bool)] = &[
            ("is_pos_power_of_two", 32, &[4, 8], true),
            ("is_pos_power_of_two", 32, &[4, 6], false),
            ("is_pos_power_of_two", 32, &[0], false),
            ("is_pos_power_of_two", 32, &[0x8000_0000], false),
            ("is_pos_power_of_two", 8, &[0x40], true),
            ("is_pos_power_of_two", 64, &[1 << 62], true),
            ("is_pos_power_of_two", 1, &[1], false),
            ("is_neg_power_of_two", 32, &[neg(-4), neg(-1)], true),
            ("is_neg_power_of_two", 32, &[neg(-3)], false),
            ("is_neg_power_of_two", 32, &[0x8000_0000], false),
            ("is_neg_power_of_two", 16, &[0xfffe], true),
            ("is_neg_power_of_two", 32, &[4], false),
            ("is_bitcount2", 32, &[5, 0x8000_0001], true),
            ("is_bitcount2", 32, &[7], false),
            ("is_nan", 32, &[nan32, nan32], true),
            ("is_nan", 32, &[nan32, f(1.0, 32)], false),
            ("is_nan", 16, &[0x7e00], true),
            ("is_nan", 64, &[f(f64::NAN, 64)], true),
            ("is_nan", 32, &[f(f64::INFINITY, 32)], false),
            ("is_nan", 8, &[0xff], false),
            ("is_negative_zero", 32, &[0x8000_0000], true),
            ("is_negative_zero", 32, &[0], false),
            ("is_negative_zero", 16, &[0x8000], true),
            ("is_negative_zero", 64, &[1 << 63], true),
            ("is_negative_zero", 8, &[0x80], false),
            ("is_any_comp_nan", 32, &[f(1.0, 32), nan32], true),
            ("is_any_comp_nan", 32, &[f(1.0, 32), f(2.0, 32)], false),
            ("is_any_comp_nan", 8, &[0xff], false),
            (
                "is_zero_to_one",
                32,
                &[f(0.5, 32), f(-0.0, 32), f(1.0, 32)],
                true,
            ),
            ("is_zero_to_one", 32, &[f(1.0000001, 32)], false),
            ("is_zero_to_one", 32, &[nan32], false),
            ("is_zero_to_one", 16, &[f(-0.1, 16)], false),
            ("is_gt_0_and_lt_1", 64, &[f(0.5, 64), 1], true),
            ("is_gt_0_and_lt_1", 32, &[f(0.0, 32)], false),
            ("is_gt_0_and_lt_1", 32, &[f(1.0, 32)], false),
            ("is_odd", 32, &[3, 0xffff_ffff], true),
            ("is_odd", 32, &[4], false),
            ("is_ult_32", 32, &[0, 31], true),
            ("is_ult_32", 32, &[32], false),
            ("is_ult_32", 8, &[0xff], false),
            ("is_ult_0xfffc07fc", 32, &[0xfffc_07fb], true),
            ("is_ult_0xfffc07fc", 32, &[0xfffc_07fc], false),
            ("is_first_5_bits_uge_2", 32, &[2, 0x3e], true),
            ("is_first_5_bits_uge_2", 32, &[0x21], false),
            ("is_16_bits", 32, &[0xffff, 0], true),
            ("is_16_bits", 32, &[0x7fff, neg(-1)], true),
            ("is_16_bits", 32, &[0xffff, neg(-1)], false),
            ("is_16_bits", 32, &[0x1_0000], false),
            ("is_16_bits", 32, &[neg(-0x8000)], true),
            ("is_16_bits", 32, &[neg(-0x8001)], false),
            ("is_2x_16_bits", 32, &[0x7fff, 0x10], true),
            ("is_2x_16_bits", 32, &[neg(-0x4000)], true),
            ("is_2x_16_bits", 32, &[0x7fff, neg(-1)], false),
            ("is_2x_16_bits", 32, &[0x8000], false),
            ("is_2x_16_bits", 32, &[neg(-0x4001)], false),
            ("is_neg2x_16_bits", 32, &[neg(-0x7fff), 0], true),
            ("is_neg2x_16_bits", 32, &[0x4000], true),
            ("is_neg2x_16_bits", 32, &[0x4001], false),
            ("is_upper_half_zero", 32, &[0xffff], true),
            ("is_upper_half_zero", 32, &[0x1_0000], false),
            ("is_upper_half_zero", 64, &[0xffff_ffff], true),
            ("is_upper_half_zero", 1, &[0], false),
            ("is_lower_half_zero", 32, &[0xffff_0000], true),
            ("is_lower_half_zero", 32, &[0x1_0001], false),
            ("is_upper_half_negative_one", 32, &[0xffff_0000], true),
            ("is_upper_half_negative_one", 16, &[0xff12], true),
            ("is_upper_half_negative_one", 32, &[0x7fff_0000], false),
            ("is_lower_half_negative_one", 32, &[0x1234_ffff], true),
            ("is_lower_half_negative_one", 32, &[0xfffe], false),
            ("is_const_bitmask", 32, &[0xff, 1], true),
            ("is_const_bitmask", 32, &[0], false),
            ("is_const_bitmask", 32, &[0xffff_ffff], false),
            ("is_const_bitmask", 32, &[0xfe], false),
            ("is_const_bitmask", 64, &[u64::MAX >> 1], true),
            ("is_const_bfm", 32, &[0xff0, 0xffff_ffff], true),
            ("is_const_bfm", 32, &[0], false),
            ("is_const_bfm", 32, &[0xf0f], false),
            ("is_const_bfm", 64, &[u64::MAX, 1 << 63], true),
            ("is_5lsb_not_zero", 32, &[0x21, 1], true),
            ("is_5lsb_not_zero", 32, &[0x20], false),
        ];
        for &(name, bits, comps, expected) in cases {
            assert_eq!(
                on_const(name, bits, comps),
                expected,
                "{name} on {bits}-bit {comps:x?}"
            );
        }
        for (name, n) in [
            ("is_unsigned_multiple_of_2", 2),
            ("is_unsigned_multiple_of_4", 4),
            ("is_unsigned_multiple_of_8", 8),
            ("is_unsigned_multiple_of_16", 16),
            ("is_unsigned_multiple_of_32", 32),
            ("is_unsigned_multiple_of_64", 64),
        ] {
            assert!(on_const(name, 32, &[0, n, 3 * n]), "{name}");
            assert!(!on_const(name, 32, &[n, n + 1]), "{name}");
            assert!(!on_const(name, 32, &[n / 2]), "{name}");
        }
    }

    #[test]
    fn constant_conditions_read_through_the_swizzle_and_reject_non_constants() {
        with_ctx(
            |b| {
                let c = b.imm(32, &[4, 3]);
                let x = b.undef(ValType::scalar(32));
                (c, x)
            },
            |cx, (c, x)| {
                let read = |comp: u8| Src {
                    value: c,
                    swizzle: [comp; 16],
                    comps: 2,
                };
                assert!(is_pos_power_of_two(cx, &read(0)));
                assert!(!is_pos_power_of_two(cx, &read(1)));
                assert!(is_odd(cx, &read(1)));
                assert!(is_ult_32(cx, &whole(cx, c)));
                for c in VAR_CONDITIONS
                    .iter()
                    .filter(|c| c.kind == CondKind::Constant)
                {
                    assert!(!(c.check)(cx, &whole(cx, x)), "{}", c.name);
                }
            },
        );
    }

    #[test]
    fn structural_conditions() {
        with_ctx(
            |b| {
                let x = b.undef(ValType::scalar(32));
                let mul = b.alu(AluOp::Fmul, &[x, x]);
                let neg_mul = b.alu(AluOp::Fneg, &[mul]);
                let add = b.alu(AluOp::Fadd, &[x, x]);
                let sign = b.alu(AluOp::Fsign, &[x]);
                let neg_sign = b.alu(AluOp::Fneg, &[sign]);
                let c = b.imm(32, &[1, 2]);
                let zero = b.imm(32, &[1, 0]);
                let neg_zero = b.imm_f32(-0.0);
                [x, mul, neg_mul, add, sign, neg_sign, c, zero, neg_zero]
            },
            |cx, [x, mul, neg_mul, add, sign, neg_sign, c, zero, neg_zero]| {
                let t = |cond: fn(&Ctx<'_>, &Src) -> bool, v: Value| cond(cx, &whole(cx, v));
                assert!(t(is_not_const, x) && t(is_not_const, mul));
                assert!(!t(is_not_const, c));
                assert!(t(is_fmul, mul) && t(is_fmul, neg_mul));
                assert!(!t(is_fmul, add) && !t(is_fmul, x) && !t(is_fmul, c));
                assert!(t(is_not_fmul, add) && t(is_not_fmul, x) && t(is_not_fmul, c));
                assert!(!t(is_not_fmul, mul) && !t(is_not_fmul, neg_mul));
                assert!(t(is_not_const_and_not_fsign, add) && t(is_not_const_and_not_fsign, x));
                assert!(!t(is_not_const_and_not_fsign, sign));
                assert!(!t(is_not_const_and_not_fsign, neg_sign));
                assert!(!t(is_not_const_and_not_fsign, c));
                assert!(t(is_not_const_zero, x) && t(is_not_const_zero, c));
                assert!(!t(is_not_const_zero, zero) && !t(is_not_const_zero, neg_zero));
            },
        );
    }

    #[test]
    fn range_conditions() {
        type Case = (Value, &'static [&'static str]);
        const NEGATIVE: &[&str] = &[
            "is_lt_zero",
            "is_le_zero",
            "is_ne_zero",
            "is_not_positive",
            "is_not_zero",
        ];
        with_ctx(
            |b| -> Vec<Case> {
                let x = b.undef(ValType::scalar(32));
                let i = b.undef(ValType::scalar(32));
                let cond = b.undef(ValType::BOOL);
                let sat = b.alu(AluOp::Fsat, &[x]);
                let b2f = b.alu(AluOp::B2f32, &[cond]);
                let exp_sat = b.alu(AluOp::Fexp2, &[sat]);
                let neg_exp_sat = b.alu(AluOp::Fneg, &[exp_sat]);
                let exp = b.alu(AluOp::Fexp2, &[x]);
                let neg_exp = b.alu(AluOp::Fneg, &[exp]);
                let square = b.alu(AluOp::Fmul, &[x, x]);
                let neg_square = b.alu(AluOp::Fneg, &[square]);
                let i2f = b.alu(AluOp::I2f32, &[i]);
                let u2f = b.alu(AluOp::U2f32, &[i]);
                let one = b.imm_f32(1.0);
                let u2f_plus_one = b.alu(AluOp::Fadd, &[u2f, one]);
                let sign_sat = b.alu(AluOp::Fsign, &[sat]);
                let positive = b.imm_vec_f32(&[1.0, 3.0]);
                let nan = b.imm_f32(f32::NAN);
                let neg_zero = b.imm_f32(-0.0);
                let mixed = b.imm_vec_f32(&[-3.5, 2.0]);
                let inf = b.imm_f32(f32::INFINITY);
                let byte = b.imm(8, &[1]);
                vec![
                    (x, &[]),
                    (byte, &[]),
                    (
                        sat,
                        &[
                            "is_finite",
                            "is_ge_zero",
                            "is_a_number_ge_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_a_number",
                        ],
                    ),
                    (
                        b2f,
                        &[
                            "is_integral",
                            "is_finite",
                            "is_ge_zero",
                            "is_a_number_ge_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_a_number",
                        ],
                    ),
                    (
                        sign_sat,
                        &[
                            "is_integral",
                            "is_finite",
                            "is_ge_zero",
                            "is_a_number_ge_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_a_number",
                        ],
                    ),
                    (
                        neg_exp_sat,
                        &[
                            "is_lt_zero",
                            "is_le_zero",
                            "is_ne_zero",
                            "is_a_number_lt_zero",
                            "is_a_number_le_zero",
                            "is_a_number_ne_zero",
                            "is_not_positive",
                            "is_a_number_not_positive",
                            "is_not_zero",
                            "is_a_number_not_zero",
                            "is_a_number",
                        ],
                    ),
                    (exp, &["is_ge_zero", "is_not_negative"]),
                    (neg_exp, &["is_le_zero", "is_not_positive"]),
                    (square, &["is_ge_zero", "is_not_negative"]),
                    (neg_square, &["is_le_zero", "is_not_positive"]),
                    (i2f, &["is_integral", "is_finite", "is_a_number"]),
                    (
                        u2f,
                        &[
                            "is_integral",
                            "is_finite",
                            "is_ge_zero",
                            "is_a_number_ge_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_a_number",
                        ],
                    ),
                    (
                        u2f_plus_one,
                        &[
                            "is_integral",
                            "is_gt_zero",
                            "is_ge_zero",
                            "is_ne_zero",
                            "is_a_number_gt_zero",
                            "is_a_number_ge_zero",
                            "is_a_number_ne_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_not_zero",
                            "is_a_number_not_zero",
                            "is_a_number",
                        ],
                    ),
                    (
                        positive,
                        &[
                            "is_integral",
                            "is_finite",
                            "is_finite_not_zero",
                            "is_gt_zero",
                            "is_ge_zero",
                            "is_ne_zero",
                            "is_a_number_gt_zero",
                            "is_a_number_ge_zero",
                            "is_a_number_ne_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_not_zero",
                            "is_a_number_not_zero",
                            "is_a_number",
                        ],
                    ),
                    // A NaN satisfies every sign class; the empty set of signs is `NeZero`.
                    (nan, &["is_integral", "is_ne_zero", "is_not_zero"]),
                    (
                        neg_zero,
                        &[
                            "is_integral",
                            "is_finite",
                            "is_le_zero",
                            "is_ge_zero",
                            "is_a_number_le_zero",
                            "is_a_number_ge_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_not_positive",
                            "is_a_number_not_positive",
                            "is_a_number",
                        ],
                    ),
                    (
                        mixed,
                        &[
                            "is_finite",
                            "is_finite_not_zero",
                            "is_ne_zero",
                            "is_a_number_ne_zero",
                            "is_not_zero",
                            "is_a_number_not_zero",
                            "is_a_number",
                        ],
                    ),
                    (
                        inf,
                        &[
                            "is_integral",
                            "is_gt_zero",
                            "is_ge_zero",
                            "is_ne_zero",
                            "is_a_number_gt_zero",
                            "is_a_number_ge_zero",
                            "is_a_number_ne_zero",
                            "is_not_negative",
                            "is_a_number_not_negative",
                            "is_not_zero",
                            "is_a_number_not_zero",
                            "is_a_number",
                        ],
                    ),
                ]
            },
            |cx, cases| {
                for &(v, expected) in &cases {
                    for c in VAR_CONDITIONS.iter().filter(|c| c.kind == CondKind::Range) {
                        assert_eq!(
                            (c.check)(cx, &whole(cx, v)),
                            expected.contains(&c.name),
                            "{} on {}",
                            c.name,
                            cx.func.inst(v).kind.name()
                        );
                    }
                }
                // A constant is judged by the components read.
                let mixed = cases[16].0;
                let read = |comp: u8| Src {
                    value: mixed,
                    swizzle: [comp; 16],
                    comps: 1,
                };
                assert!(is_lt_zero(cx, &read(0)) && !is_lt_zero(cx, &read(1)));
                assert!(is_integral(cx, &read(1)) && !is_integral(cx, &read(0)));
                assert!(NEGATIVE.iter().all(|&n| (check_fn(n))(cx, &read(0))));
            },
        );
    }

    #[test]
    fn uses_by_branches_and_fsat() {
        with_ctx(
            |b| {
                let x = b.undef(ValType::scalar(32));
                let one = b.imm_f32(1.0);
                let only_if = b.alu(AluOp::Flt, &[x, one]);
                let nif = b.push_if(only_if);
                b.pop_if(nif);
                let if_and_sel = b.alu(AluOp::Flt, &[one, x]);
                let nif = b.push_if(if_and_sel);
                let sel = b.alu(AluOp::Bcsel, &[if_and_sel, x, one]);
                let sat_only = b.alu(AluOp::Fmul, &[x, sel]);
                b.alu(AluOp::Fsat, &[sat_only]);
                b.pop_if(nif);
                let returned = b.alu(AluOp::Fadd, &[x, one]);
                let sat_and_add = b.alu(AluOp::Fmul, &[x, x]);
                b.alu(AluOp::Fsat, &[sat_and_add]);
                b.alu(AluOp::Fadd, &[sat_and_add, returned]);
                b.ret(Some(returned));
                (only_if, if_and_sel, returned, sat_only, sat_and_add)
            },
            |cx, (only_if, if_and_sel, returned, sat_only, sat_and_add)| {
                assert!(is_used_once(cx, only_if) && !is_used_once(cx, if_and_sel));
                assert!(is_used_by_if(cx, only_if) && is_used_by_if(cx, if_and_sel));
                assert!(!is_used_by_if(cx, returned) && !is_used_by_if(cx, sat_only));
                assert!(!is_not_used_by_if(cx, only_if) && is_not_used_by_if(cx, returned));
                assert!(is_only_used_by_if(cx, only_if));
                assert!(!is_only_used_by_if(cx, if_and_sel) && !is_only_used_by_if(cx, returned));
                assert!(!is_used_by_non_fsat(cx, sat_only));
                assert!(is_used_by_non_fsat(cx, sat_and_add) && is_used_by_non_fsat(cx, returned));
            },
        );
    }

    #[test]
    fn uses_as_floats() {
        with_ctx(
            |b| {
                let x = b.undef(ValType::scalar(32));
                let y = b.undef(ValType::scalar(32));
                let cond = b.alu(AluOp::Flt, &[x, y]);
                let mut sum = || b.alu(AluOp::Fadd, &[x, y]);
                let [
                    by_fmul_fsat,
                    by_mov,
                    by_bcsel,
                    by_iadd,
                    by_bcsel_iadd,
                    returned,
                ] = [(); 6].map(|_| sum());
                let [by_tex, by_txf, by_vec, by_long_movs] = [(); 4].map(|_| sum());
                b.alu(AluOp::Fmul, &[by_fmul_fsat, y]);
                b.alu(AluOp::Fsat, &[by_fmul_fsat]);
                let mov = b.alu(AluOp::Mov, &[by_mov]);
                b.alu(AluOp::Fadd, &[mov, y]);
                let sel = b.alu(AluOp::Bcsel, &[cond, by_bcsel, y]);
                b.alu(AluOp::Fneg, &[sel]);
                b.alu(AluOp::Iadd, &[by_iadd, by_iadd]);
                let sel = b.alu(AluOp::Bcsel, &[cond, y, by_bcsel_iadd]);
                b.alu(AluOp::Iadd, &[sel, y]);
                let coord = b.vec(&[by_tex, y]);
                b.tex(
                    Tex::new(TexOp::Tex, Dim::D2, vec![(TexSrc::Coord, coord)]),
                    ValType::new(32, 4),
                );
                b.tex(
                    Tex::new(TexOp::Txf, Dim::D2, vec![(TexSrc::Coord, by_txf)]),
                    ValType::new(32, 4),
                );
                let v = b.vec(&[by_vec, y]);
                b.alu(AluOp::Fdot2, &[v, v]);
                let mut m = by_long_movs;
                for _ in 0..=USE_DEPTH {
                    m = b.alu(AluOp::Mov, &[m]);
                }
                b.alu(AluOp::Fadd, &[m, y]);
                b.ret(Some(returned));
                (
                    [by_fmul_fsat, by_mov, by_bcsel, by_tex, by_vec],
                    [by_iadd, by_bcsel_iadd, returned, by_txf, by_long_movs, cond],
                )
            },
            |cx, (floats, others)| {
                for v in floats {
                    assert!(
                        is_only_used_as_float(cx, v),
                        "{}",
                        cx.func.inst(v).kind.name()
                    );
                }
                for v in others {
                    assert!(!is_only_used_as_float(cx, v), "{v}");
                }
            },
        );
    }

    #[test]
    fn uses_by_one_opcode() {
        with_ctx(
            |b| {
                let x = b.undef(ValType::scalar(32));
                let y = b.undef(ValType::scalar(32));
                let mut mul = || b.alu(AluOp::Fmul, &[x, y]);
                let [
                    fadd_direct_and_fneg,
                    through_fabs_to_fmul,
                    unused,
                    fadd_and_fsub,
                ] = [(); 4].map(|_| mul());
                b.alu(AluOp::Fadd, &[fadd_direct_and_fneg, y]);
                let n = b.alu(AluOp::Fneg, &[fadd_direct_and_fneg]);
                b.alu(AluOp::Fadd, &[n, y]);
                let a = b.alu(AluOp::Fabs, &[through_fabs_to_fmul]);
                b.alu(AluOp::Fmul, &[a, y]);
                b.alu(AluOp::Fadd, &[fadd_and_fsub, y]);
                b.alu(AluOp::Fsub, &[fadd_and_fsub, y]);
                let i = b.undef(ValType::scalar(32));
                let mut add = || b.alu(AluOp::Iadd, &[i, i]);
                let [iadds, iand_ior, iands, iors] = [(); 4].map(|_| add());
                b.alu(AluOp::Iadd, &[iadds, iadds]);
                b.alu(AluOp::Iand, &[iand_ior, i]);
                b.alu(AluOp::Ior, &[iand_ior, i]);
                b.alu(AluOp::Iand, &[iands, i]);
                b.alu(AluOp::Ior, &[iors, i]);
                (
                    [
                        fadd_direct_and_fneg,
                        through_fabs_to_fmul,
                        unused,
                        fadd_and_fsub,
                    ],
                    [iadds, iand_ior, iands, iors],
                )
            },
            |cx, ([direct, fabs_fmul, unused, fsub], [iadds, iand_ior, iands, iors])| {
                assert!(is_only_used_by_fadd(cx, direct) && is_only_used_by_fadd(cx, unused));
                assert!(!is_only_used_by_fadd(cx, fabs_fmul) && !is_only_used_by_fadd(cx, fsub));
                assert!(is_only_used_by_iadd(cx, iadds) && !is_only_used_by_iadd(cx, iands));
                assert!(is_only_used_by_iand(cx, iands) && !is_only_used_by_iand(cx, iand_ior));
                assert!(is_only_used_by_ior(cx, iors) && !is_only_used_by_ior(cx, iand_ior));
                assert!(!is_only_used_by_iadd(cx, direct));
            },
        );
    }

    #[test]
    fn low_bits_used() {
        with_ctx(
            |b| {
                let i = b.undef(ValType::scalar(32));
                let mut add = || b.alu(AluOp::Iadd, &[i, i]);
                let [
                    u2u8,
                    u2u16,
                    mask_ff,
                    mask_1ff,
                    shift,
                    iadd,
                    self_mask,
                    widened,
                    returned,
                ] = [(); 9].map(|_| add());
                b.alu(AluOp::U2u8, &[u2u8]);
                b.alu(AluOp::I2i16, &[u2u16]);
                let ff = b.imm_u32(0xff);
                b.alu(AluOp::Iand, &[mask_ff, ff]);
                let c = b.imm_u32(0x1ff);
                b.alu(AluOp::Iand, &[c, mask_1ff]);
                b.alu(AluOp::Ishl, &[i, shift]);
                b.alu(AluOp::Iadd, &[iadd, i]);
                b.alu(AluOp::Iand, &[self_mask, self_mask]);
                b.alu(AluOp::I2i64, &[widened]);
                let byte = b.undef(ValType::scalar(8));
                let narrow = b.alu(AluOp::Iadd, &[byte, byte]);
                b.alu(AluOp::Iadd, &[narrow, byte]);
                b.ret(Some(returned));
                (
                    [u2u8, mask_ff, shift, narrow],
                    [u2u16, mask_1ff],
                    [iadd, self_mask, widened, returned],
                )
            },
            |cx, (low_8, low_16, all)| {
                for v in low_8 {
                    assert!(only_lower_8_bits_used(cx, v) && only_lower_16_bits_used(cx, v));
                }
                for v in low_16 {
                    assert!(!only_lower_8_bits_used(cx, v) && only_lower_16_bits_used(cx, v));
                }
                for v in all {
                    assert!(!only_lower_8_bits_used(cx, v) && !only_lower_16_bits_used(cx, v));
                }
            },
        );
    }

    #[test]
    fn tables_describe_every_condition_once() {
        let mut names: Vec<&str> = VAR_CONDITIONS.iter().map(|c| c.name).collect();
        names.extend(OP_CONDITIONS);
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a condition is listed twice");
        assert!(VAR_CONDITIONS.len() >= 50 && OP_CONDITIONS.len() >= 12);
        for c in VAR_CONDITIONS {
            assert_eq!(
                c.holds.is_none(),
                c.kind == CondKind::Structural,
                "{}",
                c.name
            );
            assert_eq!(is_structural(c.name), c.kind == CondKind::Structural);
            assert!(std::ptr::eq(var_condition(c.name).unwrap(), c));
        }
        assert!(
            OP_CONDITIONS
                .iter()
                .all(|n| is_structural(n) && var_condition(n).is_none())
        );
        assert!(is_structural("is_not_const") && is_structural("is_used_once"));
        assert!(!is_structural("is_gt_zero") && !is_structural("no_such_condition"));
    }

    /// Raw values of `bits` bits worth testing every condition on.
    fn interesting(bits: u8) -> Vec<u64> {
        let mut v: Vec<u64> = vec![
            0,
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            16,
            31,
            32,
            33,
            48,
            64,
            96,
            0x7f,
            0x80,
            0xff,
            0x100,
            0x1ff,
            0xff0,
            0xf0f,
            0x3fff,
            0x4000,
            0x4001,
            0x7fff,
            0x8000,
            0x8001,
            0xffff,
            0x1_0000,
            0x1_ffff,
            0x00ff_ff00,
            0xff00_ff00,
            0xffff_0000,
            0x7fff_ffff,
            0x8000_0000,
            0xfffc_07fb,
            0xfffc_07fc,
            0xffff_ffff,
            0xffff_ffff_0000_0000,
            0x8000_0000_0000_0000,
            0x7fff_ffff_ffff_ffff,
            u64::MAX,
            0x1234_5678_9abc_def0,
        ];
        v.extend([-2i64, -3, -4, -0x4000, -0x4001, -0x7fff, -0x8000, -0x8001].map(|x| x as u64));
        if matches!(bits, 16 | 32 | 64) {
            let floats = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -0.5,
                0.25,
                1.5,
                2.0,
                -2.0,
                3.0,
                0.999,
                1.001,
                1e-3,
                1024.0,
                65504.0,
                1e30,
                -1e30,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                -f64::NAN,
                f64::MAX,
            ];
            v.extend(floats.map(|x| fput(x, bits)));
            let sign = 1u64 << (bits - 1);
            let exp_one = fput(f64::INFINITY, bits) & !1;
            v.extend([sign | 1, 0x3ff, sign | 0x3ff, exp_one >> 1, exp_one | 1]);
        }
        let mut v: Vec<u64> = v.into_iter().map(|x| mask(x, bits)).collect();
        v.sort();
        v.dedup();
        v
    }

    #[test]
    fn holds_agrees_with_the_conditions_on_scalar_constants() {
        for bits in [1, 8, 16, 32, 64] {
            let values = interesting(bits);
            with_ctx(
                |b| {
                    values
                        .iter()
                        .map(|&v| b.imm(bits, &[v]))
                        .collect::<Vec<_>>()
                },
                |cx, consts| {
                    for c in VAR_CONDITIONS {
                        let Some(holds) = c.holds else { continue };
                        for (&v, &raw) in consts.iter().zip(&values) {
                            let accepted = (c.check)(cx, &whole(cx, v));
                            let meaning = holds(raw, bits);
                            if c.kind == CondKind::Constant {
                                assert_eq!(accepted, meaning, "{} on {bits}-bit {raw:#x}", c.name);
                            } else {
                                assert!(!accepted || meaning, "{} on {bits}-bit {raw:#x}", c.name);
                            }
                        }
                    }
                },
            );
        }
    }

    #[test]
    fn range_conditions_on_computed_values_imply_holds() {
        // Every range condition the analysis grants an instruction on constants must hold for
        // each folded component.
        use crate::ir::fold::fold_alu;
        for bits in [16, 32, 64] {
            let values: Vec<u64> = interesting(bits)
                .into_iter()
                .filter(|&v| fget(v, bits).is_nan() || v & 0xff == 0 || v < 0x10)
                .collect();
            with_ctx(
                |b| {
                    let mut out = Vec::new();
                    for pair in values.chunks(2) {
                        let c = b.imm(bits, pair);
                        let reversed: Vec<u64> = pair.iter().rev().copied().collect();
                        let r = b.imm(bits, &reversed);
                        for op in [
                            AluOp::Fsat,
                            AluOp::Ffloor,
                            AluOp::Fsqrt,
                            AluOp::Frsq,
                            AluOp::Fexp2,
                        ] {
                            out.push(b.alu(op, &[c]));
                        }
                        out.push(b.alu(AluOp::Fmul, &[c, c]));
                        out.push(b.alu(AluOp::Fadd, &[c, r]));
                    }
                    out
                },
                |cx, insts| {
                    for v in insts {
                        let folded = fold_alu(cx.func, v).unwrap();
                        for c in VAR_CONDITIONS.iter().filter(|c| c.kind == CondKind::Range) {
                            if (c.check)(cx, &whole(cx, v)) {
                                for &raw in &folded {
                                    assert!((c.holds.unwrap())(raw, bits), "{} {raw:#x}", c.name);
                                }
                            }
                        }
                    }
                },
            );
        }
    }
}
