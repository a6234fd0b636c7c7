//! A float value-range analysis for rule conditions, in the spirit of Mesa's `nir_analyze_range`.
//!
//! [`RangeCache::get`] describes a value read as floats of its bit size: the sign class of its
//! components and whether they are integers, finite and numbers ([`Range`]). The description
//! holds for every component of the value (it is a union over the components), so it holds for
//! any swizzle that reads the value. The analysis follows ALU instructions back through their
//! sources, at most [`MAX_DEPTH`] instructions deep; it knows nothing about phis, undefs,
//! intrinsics, texture results, integer arithmetic or values of 1 and 8 bits, which are unknown.
//!
//! Rules fire on these facts, so a wrong fact is a miscompile: every transfer function accounts
//! for NaN, infinities, signed zeros, denormals, underflow to zero and overflow to infinity, with
//! the semantics of the opcode table (`shrew_ops::alu`), which the interpreter and the constant
//! folder share. Magnitudes are not tracked, so any operation that can overflow or underflow is
//! assumed to.

use crate::ir::{Alu, Function, InstKind, ValType, Value};
use shrew_ops::AluOp;
use shrew_ops::eval::{fget, fput};
use std::cell::RefCell;
use std::collections::HashMap;

/// How many instructions deep [`RangeCache::get`] follows sources; anything further is unknown.
pub const MAX_DEPTH: u8 = 24;

/// What is known about the sign of the components that are numbers. NaN components satisfy every
/// class (whether there are any is [`Range::is_a_number`]); −0.0 is a zero, so it belongs to
/// `EqZero`, `LeZero` and `GeZero`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sign {
    /// Any sign.
    Unknown,
    /// Every number is `< 0`.
    LtZero,
    /// Every number is `≤ 0`.
    LeZero,
    /// Every number is `+0.0` or `−0.0`.
    EqZero,
    /// Every number is `≥ 0`.
    GeZero,
    /// Every number is `> 0`.
    GtZero,
    /// No number is a zero.
    NeZero,
}

// The sign classes as sets of the signs a number can have.
const NEG: u8 = 1;
const ZERO: u8 = 2;
const POS: u8 = 4;
const LE: u8 = NEG | ZERO;
const GE: u8 = ZERO | POS;
const NE: u8 = NEG | POS;
const ANY: u8 = NEG | ZERO | POS;

impl Sign {
    /// The class of one value: `LtZero`, `EqZero` or `GtZero`; `None` for NaN.
    pub fn of(x: f64) -> Option<Sign> {
        if x.is_nan() {
            None
        } else if x < 0.0 {
            Some(Sign::LtZero)
        } else if x == 0.0 {
            Some(Sign::EqZero)
        } else {
            Some(Sign::GtZero)
        }
    }

    /// Whether every number of class `self` is also of class `other`.
    pub fn within(self, other: Sign) -> bool {
        self.signs() & !other.signs() == 0
    }

    /// The signs (`NEG`, `ZERO`, `POS`) a number of this class may have.
    fn signs(self) -> u8 {
        match self {
            Sign::Unknown => ANY,
            Sign::LtZero => NEG,
            Sign::LeZero => LE,
            Sign::EqZero => ZERO,
            Sign::GeZero => GE,
            Sign::GtZero => POS,
            Sign::NeZero => NE,
        }
    }

    /// The class of a set of signs. The empty set (no component is a number) has no class of
    /// its own; it becomes `NeZero`, which a value without numbers satisfies like any other.
    fn from_signs(signs: u8) -> Sign {
        match signs {
            NEG => Sign::LtZero,
            ZERO => Sign::EqZero,
            POS => Sign::GtZero,
            LE => Sign::LeZero,
            GE => Sign::GeZero,
            NE | 0 => Sign::NeZero,
            _ => Sign::Unknown,
        }
    }
}

/// Facts about every component of a value read as a float of the value's bit size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Range {
    /// The sign class of the components that are numbers (NaN components are not constrained).
    pub sign: Sign,
    /// Every component that is a number is an integer or an infinity: rounding it to an integer
    /// in any direction gives it back (NaN components are not constrained).
    pub is_integral: bool,
    /// No component is an infinity or NaN (so `is_finite` implies `is_a_number`).
    pub is_finite: bool,
    /// No component is NaN.
    pub is_a_number: bool,
}

impl Range {
    /// Nothing is known.
    pub const UNKNOWN: Range = Range {
        sign: Sign::Unknown,
        is_integral: false,
        is_finite: false,
        is_a_number: false,
    };

    /// A range from facts, normalized: finite values are numbers, and values whose numbers are
    /// all zeros (or that have no numbers) are integral.
    fn new(signs: u8, is_integral: bool, is_finite: bool, is_a_number: bool) -> Range {
        Range {
            sign: Sign::from_signs(signs),
            is_integral: is_integral || signs & !ZERO == 0,
            is_finite: is_finite && is_a_number,
            is_a_number,
        }
    }

    /// The range of constant components of `bits` bits (raw bits, one entry per component).
    /// Values of 1 and 8 bits are not floats: unknown.
    pub fn of_constant(values: &[u64], bits: u8) -> Range {
        if !matches!(bits, 16 | 32 | 64) {
            return Range::UNKNOWN;
        }
        let (mut signs, mut integral, mut finite, mut number) = (0, true, true, true);
        for &raw in values {
            let x = fget(raw, bits);
            match Sign::of(x) {
                Some(sign) => {
                    signs |= sign.signs();
                    integral &= x.floor() == x;
                    finite &= x.is_finite();
                }
                None => number = false,
            }
        }
        Range::new(signs, integral, finite, number)
    }

    fn signs(self) -> u8 {
        self.sign.signs()
    }

    /// Whether a component may be an infinity of a sign in `signs`.
    fn may_be_inf(self, signs: u8) -> bool {
        !self.is_finite && self.signs() & signs != 0
    }

    /// What is known of a value both ranges describe (two facts about one value). Facts that
    /// contradict each other (which only values made equal by inexact rewrites can have) keep
    /// `self`.
    pub fn meet(self, other: Range) -> Range {
        let signs = self.signs() & other.signs();
        if signs == 0 {
            return self;
        }
        Range::new(
            signs,
            self.is_integral || other.is_integral,
            self.is_finite || other.is_finite,
            self.is_a_number || other.is_a_number,
        )
    }

    /// What holds for both ranges: the range of a value that is one or the other.
    fn union(self, other: Range) -> Range {
        Range::new(
            self.signs() | other.signs(),
            self.is_integral && other.is_integral,
            self.is_finite && other.is_finite,
            self.is_a_number && other.is_a_number,
        )
    }
}

/// Maps every sign of a set through `f` and unites the results.
fn map_signs(signs: u8, f: impl Fn(u8) -> u8) -> u8 {
    [NEG, ZERO, POS]
        .into_iter()
        .filter(|s| signs & s != 0)
        .fold(0, |acc, s| acc | f(s))
}

/// Applies `f` to every pair of signs of two sets and unites the results.
fn pairwise(a: u8, b: u8, f: impl Fn(u8, u8) -> u8) -> u8 {
    map_signs(a, |x| map_signs(b, |y| f(x, y)))
}

fn fneg(a: Range) -> Range {
    let signs = map_signs(a.signs(), |s| match s {
        NEG => POS,
        POS => NEG,
        _ => ZERO,
    });
    Range {
        sign: Sign::from_signs(signs),
        ..a
    }
}

fn fabs(a: Range) -> Range {
    let signs = map_signs(a.signs(), |s| if s == ZERO { ZERO } else { POS });
    Range {
        sign: Sign::from_signs(signs),
        ..a
    }
}

/// `fsat`: in [0, 1], and NaN becomes 0. Integers saturate to 0 or 1.
fn fsat(a: Range) -> Range {
    let mut signs = a.signs() & POS;
    if a.signs() & (NEG | ZERO) != 0 || !a.is_a_number {
        signs |= ZERO;
    }
    Range::new(signs, a.is_integral, true, true)
}

/// `fsign`: −1, ±0 (keeping the zero's sign), 1, or NaN for NaN.
fn fsign(a: Range) -> Range {
    Range::new(a.signs(), true, a.is_a_number, a.is_a_number)
}

/// `fadd`. A sum of same-signed numbers keeps the sign (it cannot underflow); a zero operand
/// gives the other operand; `inf + -inf` is NaN; numbers of opposite signs cannot overflow. Sums
/// of integers round to integers or overflow to infinities.
fn fadd(a: Range, b: Range) -> Range {
    let signs = pairwise(a.signs(), b.signs(), |x, y| match (x, y) {
        (ZERO, s) | (s, ZERO) => s,
        (s, t) if s == t => s,
        _ => ANY,
    });
    let number = a.is_a_number
        && b.is_a_number
        && !(a.may_be_inf(POS) && b.may_be_inf(NEG))
        && !(a.may_be_inf(NEG) && b.may_be_inf(POS));
    let no_overflow = a.signs() == ZERO
        || b.signs() == ZERO
        || (a.signs() & POS == 0 && b.signs() & NEG == 0)
        || (a.signs() & NEG == 0 && b.signs() & POS == 0);
    let finite = a.is_finite && b.is_finite && no_overflow;
    Range::new(signs, a.is_integral && b.is_integral, finite, number)
}

/// `fmul`; `same` when both sources read the same value through the same swizzle, so the
/// product is a square. Products of non-zero numbers may underflow to zero and overflow to
/// infinity; `0 * inf` is NaN.
fn fmul(a: Range, b: Range, same: bool) -> Range {
    let integral = a.is_integral && b.is_integral;
    if same {
        let signs = map_signs(a.signs(), |s| if s == ZERO { ZERO } else { ZERO | POS });
        let finite = a.is_finite && a.signs() == ZERO;
        return Range::new(signs, integral, finite, a.is_a_number);
    }
    let signs = pairwise(a.signs(), b.signs(), |x, y| match (x, y) {
        (ZERO, _) | (_, ZERO) => ZERO,
        (s, t) if s == t => ZERO | POS,
        _ => ZERO | NEG,
    });
    let zero_times_inf = |x: Range, y: Range| x.signs() & ZERO != 0 && !y.is_finite;
    let number = a.is_a_number && b.is_a_number && !zero_times_inf(a, b) && !zero_times_inf(b, a);
    let finite = a.is_finite && b.is_finite && (a.signs() == ZERO || b.signs() == ZERO);
    Range::new(signs, integral, finite, number)
}

/// `fmin` (`max` false) or `fmax`: one of the operands, the other one when one is NaN.
fn fmin_max(a: Range, b: Range, max: bool) -> Range {
    // The sign that wins (negative for fmin) and the one that needs both operands.
    let (wins, loses) = if max { (POS, NEG) } else { (NEG, POS) };
    let mut signs = pairwise(a.signs(), b.signs(), |x, y| {
        if x == wins || y == wins {
            wins
        } else if x == ZERO || y == ZERO {
            ZERO
        } else {
            loses
        }
    });
    if !a.is_a_number {
        signs |= b.signs();
    }
    if !b.is_a_number {
        signs |= a.signs();
    }
    // A finite operand bounds the result when the other cannot be an infinity that wins.
    let finite = (a.is_finite && (b.is_finite || b.signs() & wins == 0))
        || (b.is_finite && a.signs() & wins == 0);
    Range::new(
        signs,
        a.is_integral && b.is_integral,
        finite,
        a.is_a_number || b.is_a_number,
    )
}

/// `ffloor`, `fceil`, `ftrunc`, `fround_even`: integers with the sign of the source, except that
/// rounding toward zero may reach a zero (`fceil(-0.5)` is −0.0).
fn round(op: AluOp, a: Range) -> Range {
    let signs = if a.is_integral {
        a.signs()
    } else {
        map_signs(a.signs(), |s| match (op, s) {
            (_, ZERO) => ZERO,
            (AluOp::Ffloor, NEG) | (AluOp::Fceil, POS) => s,
            _ => s | ZERO,
        })
    };
    Range::new(signs, true, a.is_finite, a.is_a_number)
}

/// `ffract`: `a - floor(a)`, in [0, 1] (it can round up to 1), zero for integers, NaN for
/// infinities and NaN.
fn ffract(a: Range) -> Range {
    let signs = if a.is_integral { ZERO } else { ZERO | POS };
    Range::new(signs, a.is_integral, a.is_finite, a.is_finite)
}

/// `fsqrt`: keeps zeros (with their sign) and positive numbers, NaN for negative numbers.
fn fsqrt(a: Range) -> Range {
    let real = a.signs() & NEG == 0;
    Range::new(
        a.signs() & (ZERO | POS),
        false,
        a.is_finite && real,
        a.is_a_number && real,
    )
}

/// `frsq`: `1 / sqrt(a)`. Positive numbers give positive numbers (+0 for +inf), `+0` gives
/// +inf and `−0` gives −inf (`sqrt(−0)` is −0), negative numbers give NaN.
fn frsq(a: Range) -> Range {
    let mut signs = 0;
    if a.signs() & POS != 0 {
        signs |= if a.is_finite { POS } else { POS | ZERO };
    }
    if a.signs() & ZERO != 0 {
        signs |= NEG | POS;
    }
    let number = a.is_a_number && a.signs() & NEG == 0;
    Range::new(signs, false, number && a.signs() == POS, number)
}

/// `frcp`: keeps the sign of non-zero numbers (infinities give zeros, denormals may give
/// infinities); zeros give infinities of their sign.
fn frcp(a: Range) -> Range {
    let signs = map_signs(a.signs(), |s| match s {
        ZERO => NEG | POS,
        _ if a.is_finite => s,
        _ => s | ZERO,
    });
    Range::new(signs, false, false, a.is_a_number)
}

/// `fexp2`: at least 1 for non-negative numbers, in [0, 1] (it may underflow) for negative ones.
fn fexp2(a: Range) -> Range {
    let signs = if a.signs() & NEG == 0 {
        POS
    } else {
        ZERO | POS
    };
    let finite = a.is_a_number && a.signs() & POS == 0;
    Range::new(signs, false, finite, a.is_a_number)
}

/// `i2f`/`u2f` from `src_bits` to `dst_bits`: integers, which overflow only when the largest
/// source magnitude rounds to infinity (`u2f16` of 16 bits does).
fn int_to_float(signed: bool, src_bits: u8, dst_bits: u8) -> Range {
    let largest = if signed {
        2f64.powi(src_bits as i32 - 1)
    } else {
        2f64.powi(src_bits as i32) - 1.0
    };
    let finite = fget(fput(largest, dst_bits), dst_bits).is_finite();
    let signs = if signed { ANY } else { ZERO | POS };
    Range::new(signs, true, finite, true)
}

/// Float-to-float conversions and `fquantize2f16`. Narrowing rounds: numbers may underflow to
/// zeros and, except when rounding toward zero, overflow to infinities; integers stay integers.
/// `fquantize2f16` also flushes what is below the smallest normal half to zero.
fn float_convert(op: AluOp, a: Range, src_bits: u8, dst_bits: u8) -> Range {
    let narrows = if op == AluOp::FquantizeF16 {
        src_bits > 16
    } else {
        src_bits > dst_bits
    };
    let underflows = narrows || op == AluOp::FquantizeF16;
    let overflows = narrows && op != AluOp::F2f16Rtz;
    let signs = if underflows {
        map_signs(a.signs(), |s| s | ZERO)
    } else {
        a.signs()
    };
    Range::new(
        signs,
        a.is_integral,
        a.is_finite && !overflows,
        a.is_a_number,
    )
}

/// A memoized range: exact, or cut short by the depth bound.
#[derive(Copy, Clone, Debug)]
struct Memo {
    range: Range,
    /// `None` when the analysis reached every leaf; else the depth budget it had, so only a
    /// query with at most that budget may reuse it.
    budget: Option<u8>,
}

/// The range analysis of one pass run: memoized per value, and cleared (by the pass) after every
/// rewrite, since a rewrite can change what any value depends on.
#[derive(Debug, Default)]
pub struct RangeCache {
    memo: RefCell<HashMap<Value, Memo>>,
}

impl RangeCache {
    /// The range of `v`, read as floats of its bit size, over all its components.
    pub fn get(&self, func: &Function, v: Value) -> Range {
        self.analyze(func, v, MAX_DEPTH).0
    }

    /// Forgets every memoized range.
    pub fn clear(&self) {
        self.memo.borrow_mut().clear();
    }

    /// The range of `v` looking at most `budget` instructions deep, and whether that was deep
    /// enough to see everything the value depends on.
    fn analyze(&self, func: &Function, v: Value, budget: u8) -> (Range, bool) {
        let memo = self.memo.borrow().get(&v).copied();
        match memo {
            Some(Memo {
                range,
                budget: None,
            }) => return (range, true),
            Some(Memo {
                range,
                budget: Some(b),
            }) if b >= budget => return (range, false),
            _ => {}
        }
        if budget == 0 {
            return (Range::UNKNOWN, false);
        }
        let mut complete = true;
        let range = self.compute(func, v, budget, &mut complete);
        let budget = (!complete).then_some(budget);
        self.memo.borrow_mut().insert(v, Memo { range, budget });
        (range, complete)
    }

    fn compute(&self, func: &Function, v: Value, budget: u8, complete: &mut bool) -> Range {
        let Some(inst) = func.get_inst(v) else {
            return Range::UNKNOWN;
        };
        let Some(def) = inst.def.filter(|d| matches!(d.bits, 16 | 32 | 64)) else {
            return Range::UNKNOWN;
        };
        match &inst.kind {
            InstKind::Const(values) => Range::of_constant(values, def.bits),
            InstKind::Alu(alu) => self.alu(func, alu, def, budget, complete),
            _ => Range::UNKNOWN,
        }
    }

    fn alu(
        &self,
        func: &Function,
        alu: &Alu,
        def: ValType,
        budget: u8,
        complete: &mut bool,
    ) -> Range {
        let sizes = alu.src_bit_sizes(func, def);
        let src_bits = |i: usize| func.value_type(alu.srcs[i].value).map_or(0, |t| t.bits);
        // Malformed instructions (sources missing or of the wrong size) are unknown.
        if alu.srcs.len() != sizes.len() || (0..sizes.len()).any(|i| src_bits(i) != sizes[i]) {
            return Range::UNKNOWN;
        }
        let comps = def.comps as usize;
        let same_sources = alu.srcs.len() >= 2
            && alu.srcs[0].value == alu.srcs[1].value
            && alu.srcs[0].swizzle[..comps] == alu.srcs[1].swizzle[..comps];
        alu_range(alu.op, def.bits, src_bits, same_sources, |i| {
            let (range, exact) = self.analyze(func, alu.srcs[i].value, budget - 1);
            *complete &= exact;
            range
        })
    }
}

/// The range of ALU operation `op` producing `dst_bits` bits, from its sources' bit sizes and
/// ranges (`src` is asked only for the sources the operation's range depends on). `same_sources`
/// says that sources 0 and 1 read the same components of the same value, so a product is a
/// square. The range analysis of the IR and the e-graph's class analysis share it.
pub fn alu_range(
    op: AluOp,
    dst_bits: u8,
    src_bits: impl Fn(usize) -> u8,
    same_sources: bool,
    mut src: impl FnMut(usize) -> Range,
) -> Range {
    if !matches!(dst_bits, 16 | 32 | 64) {
        return Range::UNKNOWN;
    }
    use AluOp::*;
    match op {
        Mov => src(0),
        Vec2 | Vec3 | Vec4 | Vec8 | Vec16 => {
            let first = src(0);
            (1..op.info().srcs.len()).fold(first, |acc, i| acc.union(src(i)))
        }
        Bcsel => {
            let a = src(1);
            a.union(src(2))
        }
        Fneg => fneg(src(0)),
        Fabs => fabs(src(0)),
        Fsat => fsat(src(0)),
        Fsign => fsign(src(0)),
        Fadd => {
            let a = src(0);
            fadd(a, src(1))
        }
        Fsub => {
            let a = src(0);
            fadd(a, fneg(src(1)))
        }
        Fmul => {
            let a = src(0);
            fmul(a, src(1), same_sources)
        }
        // The exact product is rounded only once, with the addend, which the rounding of
        // the product (`fmul` may underflow or overflow) covers.
        Ffma => {
            let (a, b) = (src(0), src(1));
            fadd(fmul(a, b, same_sources), src(2))
        }
        Fmin | Fmax => {
            let a = src(0);
            fmin_max(a, src(1), op == Fmax)
        }
        Ffloor | Fceil | Ftrunc | FroundEven => round(op, src(0)),
        Ffract => ffract(src(0)),
        Fsqrt => fsqrt(src(0)),
        Frsq => frsq(src(0)),
        Frcp => frcp(src(0)),
        Fexp2 => fexp2(src(0)),
        B2f16 | B2f32 | B2f64 => Range::new(ZERO | POS, true, true, true),
        I2f16 | I2f32 | I2f64 => int_to_float(true, src_bits(0), dst_bits),
        U2f16 | U2f32 | U2f64 => int_to_float(false, src_bits(0), dst_bits),
        F2f16 | F2f16Rtne | F2f16Rtz | F2f32 | F2f64 | FquantizeF16 => {
            float_convert(op, src(0), src_bits(0), dst_bits)
        }
        _ => Range::UNKNOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::fold::fold_alu;
    use crate::ir::{AluSrc, Builder, FuncId, Shader, Stage};

    /// Whether one component (raw bits of `bits` bits) is consistent with `r`.
    fn contains(r: Range, raw: u64, bits: u8) -> bool {
        let x = fget(raw, bits);
        match Sign::of(x) {
            None => !r.is_a_number && !r.is_finite,
            Some(s) => {
                s.within(r.sign)
                    && (!r.is_finite || x.is_finite())
                    && (!r.is_integral || x.floor() == x)
            }
        }
    }

    /// Special floats of `bits` bits: zeros, ±1, fractions, a large integer, the smallest
    /// denormals, the largest finite values, infinities and NaN.
    fn special_floats(bits: u8) -> Vec<u64> {
        let sign = 1u64 << (bits - 1);
        let max = fput(65504.0, 16) as u64;
        let max = match bits {
            16 => max,
            32 => f32::MAX.to_bits() as u64,
            _ => f64::MAX.to_bits(),
        };
        let mut v: Vec<u64> = [0.0, -0.0, 1.0, -1.0, 0.5, -0.75, 2.5, -3.0, 1024.0]
            .iter()
            .map(|&x| fput(x, bits))
            .collect();
        v.extend([1, sign | 1, max, sign | max]);
        v.extend([f64::INFINITY, f64::NEG_INFINITY, f64::NAN].map(|x| fput(x, bits)));
        v
    }

    /// A deterministic pseudo-random sequence.
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) % n as u64) as usize
        }
    }

    /// Builds `op` once per case on constant sources (one constant per source, holding that
    /// source's values, of `src_bits` bits), read so that the destination's components cover
    /// every combination of source values; then checks that every folded component lies in the
    /// range computed for the instruction. `same` makes the first two sources one value read
    /// the same way (a square).
    fn check_op(op: AluOp, src_bits: &[u8], cases: &[Vec<Vec<u64>>], same: bool) {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let mut insts = Vec::new();
        for case in cases {
            let consts: Vec<Value> = case
                .iter()
                .zip(src_bits)
                .map(|(vals, &bits)| b.imm(bits, vals))
                .collect();
            let sizes: Vec<usize> = case.iter().map(Vec::len).collect();
            let comps: usize = if same {
                sizes[0] * sizes[2..].iter().product::<usize>()
            } else {
                sizes.iter().product()
            };
            let mut swizzles = vec![Vec::new(); case.len()];
            for k in 0..comps {
                let mut rest = k;
                for (i, &n) in sizes.iter().enumerate() {
                    if same && i == 1 {
                        let first = swizzles[0][k];
                        swizzles[1].push(first);
                        continue;
                    }
                    swizzles[i].push((rest % n) as u8);
                    rest /= n;
                }
            }
            let srcs = (0..case.len())
                .map(|i| {
                    let c = if same && i == 1 { consts[0] } else { consts[i] };
                    AluSrc::swizzled(c, &swizzles[i])
                })
                .collect();
            insts.push(b.alu_swizzled(op, srcs, comps as u8));
        }
        b.ret(None);
        let func = &shader.functions[0];
        let cache = RangeCache::default();
        for (v, case) in insts.iter().zip(cases) {
            let r = cache.get(func, *v);
            let bits = func.value_type(*v).unwrap().bits;
            let out = fold_alu(func, *v).unwrap();
            for raw in out {
                assert!(
                    contains(r, raw, bits),
                    "{op} on {case:x?} (same: {same}) gives {raw:#x} = {}, outside {r:?}",
                    fget(raw, bits)
                );
            }
        }
    }

    /// Cases for an op of `n` float sources: every combination of single special values, and
    /// random sets of two values per source.
    fn float_cases(bits: u8, n: usize, random: usize) -> Vec<Vec<Vec<u64>>> {
        let vals = special_floats(bits);
        let mut cases = Vec::new();
        let total = vals.len().pow(n as u32);
        for k in 0..total {
            let mut rest = k;
            let case = (0..n)
                .map(|_| {
                    let v = vals[rest % vals.len()];
                    rest /= vals.len();
                    vec![v]
                })
                .collect();
            cases.push(case);
        }
        let mut rng = Lcg(bits as u64 * 7 + n as u64);
        for _ in 0..random {
            let case = (0..n)
                .map(|_| vec![vals[rng.below(vals.len())], vals[rng.below(vals.len())]])
                .collect();
            cases.push(case);
        }
        cases
    }

    #[test]
    fn transfer_functions_contain_every_folded_result() {
        use AluOp::*;
        for bits in [16, 32, 64] {
            for op in [
                Mov,
                Fneg,
                Fabs,
                Fsat,
                Fsign,
                Ffloor,
                Fceil,
                Ftrunc,
                FroundEven,
                Ffract,
                Fsqrt,
                Frsq,
                Frcp,
                Fexp2,
                FquantizeF16,
            ] {
                check_op(op, &[bits], &float_cases(bits, 1, 200), false);
            }
            for op in [Fadd, Fsub, Fmul, Fmin, Fmax] {
                check_op(op, &[bits, bits], &float_cases(bits, 2, 1500), false);
            }
            // `shrew_ops::eval::ffma` at 16 bits turns infinite results into NaN (its
            // round-to-odd step computes `inf - inf`); IEEE fma does not, and neither does the
            // analysis, so those cases are left out.
            let mut fma_cases = float_cases(bits, 3, 1000);
            if bits == 16 {
                fma_cases.retain(|case| case.iter().flatten().all(|&v| fget(v, 16).is_finite()));
            }
            check_op(Ffma, &[bits; 3], &fma_cases, false);
            // Squares: the second source repeats the first.
            let squares: Vec<_> = float_cases(bits, 2, 300);
            check_op(Fmul, &[bits, bits], &squares, true);
            let mut fma_squares = float_cases(bits, 3, 300);
            if bits == 16 {
                fma_squares.retain(|case| case.iter().flatten().all(|&v| fget(v, 16).is_finite()));
            }
            check_op(Ffma, &[bits; 3], &fma_squares, true);
            for op in [F2f16, F2f16Rtne, F2f16Rtz, F2f32, F2f64] {
                check_op(op, &[bits], &float_cases(bits, 1, 200), false);
            }
        }
    }

    #[test]
    fn conversions_to_float_contain_every_folded_result() {
        use AluOp::*;
        for src_bits in [1u8, 8, 16, 32, 64] {
            let ints = [
                0u64,
                1,
                u64::MAX,
                1 << (src_bits - 1),
                (1 << (src_bits - 1)) - 1,
                2,
            ];
            let cases: Vec<_> = ints.iter().map(|&i| vec![vec![i, 3]]).collect();
            for op in [I2f16, I2f32, I2f64, U2f16, U2f32, U2f64] {
                check_op(op, &[src_bits], &cases, false);
            }
        }
        let bools = vec![vec![vec![0u64, 1]]];
        for op in [B2f16, B2f32, B2f64] {
            check_op(op, &[1], &bools, false);
        }
        for bits in [16, 32, 64] {
            let vals = special_floats(bits);
            let cases: Vec<_> = (0..vals.len())
                .map(|i| {
                    vec![
                        vec![0, 1],
                        vec![vals[i], vals[(i + 3) % vals.len()]],
                        vec![vals[(i + 5) % vals.len()]],
                    ]
                })
                .collect();
            check_op(Bcsel, &[1, bits, bits], &cases, false);
        }
    }

    fn get(shader: &Shader, v: Value) -> Range {
        RangeCache::default().get(&shader.functions[0], v)
    }

    #[test]
    fn squares_are_not_negative_but_may_be_nan() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let x = b.undef(ValType::scalar(32));
        let sq = b.alu(AluOp::Fmul, &[x, x]);
        let y = b.undef(ValType::scalar(32));
        let xy = b.alu(AluOp::Fmul, &[x, y]);
        let sat = b.alu(AluOp::Fsat, &[x]);
        let sat_sq = b.alu(AluOp::Fmul, &[sat, sat]);
        let v = b.undef(ValType::new(32, 2));
        let swapped = b.alu_swizzled(
            AluOp::Fmul,
            vec![AluSrc::swizzled(v, &[0, 1]), AluSrc::swizzled(v, &[1, 0])],
            2,
        );
        b.ret(None);
        let r = get(&shader, sq);
        assert_eq!(r.sign, Sign::GeZero);
        assert!(!r.is_a_number && !r.is_finite);
        assert_eq!(get(&shader, xy), Range::UNKNOWN);
        let r = get(&shader, sat_sq);
        assert_eq!(r.sign, Sign::GeZero);
        assert!(r.is_a_number && !r.is_finite);
        // Different swizzles multiply different components.
        assert_eq!(get(&shader, swapped).sign, Sign::Unknown);
    }

    #[test]
    fn sums_saturation_zeros_and_infinities() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let x = b.undef(ValType::scalar(32));
        let abs = b.alu(AluOp::Fabs, &[x]);
        let sat = b.alu(AluOp::Fsat, &[x]);
        let sum = b.alu(AluOp::Fadd, &[abs, sat]);
        let neg_zero = b.imm_f32(-0.0);
        let inf = b.imm_f32(f32::INFINITY);
        let zero_times_inf = b.alu(AluOp::Fmul, &[neg_zero, inf]);
        let one = b.imm_f32(1.0);
        let sat_plus_one = b.alu(AluOp::Fadd, &[sat, one]);
        let diff = b.alu(AluOp::Fsub, &[sat, one]);
        b.ret(None);
        let r = get(&shader, sum);
        assert_eq!(r.sign, Sign::GeZero);
        assert!(!r.is_a_number);
        let r = get(&shader, sat);
        assert_eq!(r.sign, Sign::GeZero);
        assert!(r.is_a_number && r.is_finite && !r.is_integral);
        let r = get(&shader, neg_zero);
        assert_eq!(r.sign, Sign::EqZero);
        assert!(r.is_integral && r.is_finite);
        let r = get(&shader, zero_times_inf);
        assert_eq!(r.sign, Sign::EqZero);
        assert!(!r.is_a_number);
        let r = get(&shader, sat_plus_one);
        assert_eq!(r.sign, Sign::GtZero);
        assert!(r.is_a_number && !r.is_finite);
        // [0, 1] - 1 has opposite signs: it cannot overflow.
        let r = get(&shader, diff);
        assert_eq!(r.sign, Sign::Unknown);
        assert!(r.is_finite);
    }

    #[test]
    fn reciprocal_square_root_of_negative_zero_is_negative() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let zero = b.imm_f32(-0.0);
        let rsq = b.alu(AluOp::Frsq, &[zero]);
        let x = b.undef(ValType::scalar(32));
        let abs = b.alu(AluOp::Fabs, &[x]);
        let sqrt = b.alu(AluOp::Fsqrt, &[abs]);
        let sqrt_any = b.alu(AluOp::Fsqrt, &[x]);
        b.ret(None);
        assert_eq!(get(&shader, rsq).sign, Sign::NeZero);
        assert_eq!(get(&shader, sqrt).sign, Sign::GeZero);
        let r = get(&shader, sqrt_any);
        assert_eq!(r.sign, Sign::GeZero);
        assert!(!r.is_a_number);
    }

    #[test]
    fn u2f16_of_16_bits_may_overflow() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let i16v = b.undef(ValType::scalar(16));
        let u = b.alu(AluOp::U2f16, &[i16v]);
        let i = b.alu(AluOp::I2f16, &[i16v]);
        let i32v = b.undef(ValType::scalar(32));
        let wide = b.alu(AluOp::U2f32, &[i32v]);
        b.ret(None);
        assert!(!get(&shader, u).is_finite);
        assert!(get(&shader, i).is_finite);
        let r = get(&shader, wide);
        assert!(r.is_finite && r.is_integral);
        assert_eq!(r.sign, Sign::GeZero);
    }

    #[test]
    fn non_float_values_and_other_instructions_are_unknown() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let byte = b.imm(8, &[1]);
        let x = b.imm_f32(1.0);
        let cmp = b.alu(AluOp::Flt, &[x, x]);
        let int = b.imm_u32(3);
        let sum = b.alu(AluOp::Iadd, &[int, int]);
        b.ret(None);
        for v in [byte, cmp, sum] {
            assert_eq!(get(&shader, v), Range::UNKNOWN);
        }
        assert_eq!(get(&shader, x).sign, Sign::GtZero);
    }

    #[test]
    fn depth_is_bounded_and_long_chains_stay_cheap() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let one = b.imm_f32(1.0);
        let mut v = b.alu(AluOp::Fabs, &[one]);
        let mut chain = vec![v];
        for _ in 0..200 {
            // Each step reads the previous one twice: without the memo this is exponential.
            v = b.alu(AluOp::Fadd, &[v, v]);
            chain.push(v);
        }
        b.ret(None);
        let func = &shader.functions[0];
        assert_eq!(RangeCache::default().get(func, chain[200]), Range::UNKNOWN);
        // chain[k] is k + 2 instructions deep, counting the constant.
        let last = MAX_DEPTH as usize - 2;
        assert_eq!(
            RangeCache::default().get(func, chain[last]).sign,
            Sign::GtZero
        );
        // One deeper, the constant is out of reach: only the `fabs` is seen.
        let r = RangeCache::default().get(func, chain[last + 1]);
        assert_eq!(r.sign, Sign::GeZero);
        assert!(!r.is_a_number);
        // A value first reached near the bound is analysed in full when asked directly.
        let cache = RangeCache::default();
        assert_eq!(cache.get(func, chain[30]), Range::UNKNOWN);
        assert_eq!(cache.get(func, chain[10]).sign, Sign::GtZero);
    }

    #[test]
    fn clear_forgets_memoized_ranges() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let one = b.imm_f32(1.0);
        let neg = b.alu(AluOp::Fneg, &[one]);
        b.ret(None);
        let cache = RangeCache::default();
        assert_eq!(cache.get(&shader.functions[0], neg).sign, Sign::LtZero);
        let InstKind::Alu(alu) = &mut shader.functions[0].inst_mut(neg).kind else {
            unreachable!()
        };
        alu.op = AluOp::Fabs;
        assert_eq!(cache.get(&shader.functions[0], neg).sign, Sign::LtZero);
        cache.clear();
        assert_eq!(cache.get(&shader.functions[0], neg).sign, Sign::GtZero);
    }

    #[test]
    fn sign_classes_nest() {
        use Sign::*;
        let all = [Unknown, LtZero, LeZero, EqZero, GeZero, GtZero, NeZero];
        for s in all {
            assert!(s.within(Unknown) && s.within(s));
            assert_eq!(Sign::from_signs(s.signs()), s);
        }
        assert!(LtZero.within(LeZero) && EqZero.within(GeZero) && GtZero.within(NeZero));
        assert!(!LeZero.within(LtZero) && !EqZero.within(NeZero));
        assert_eq!(Sign::of(-0.0), Some(EqZero));
        assert_eq!(Sign::of(f64::NAN), None);
        assert_eq!(Sign::of(f64::NEG_INFINITY), Some(LtZero));
    }
}
