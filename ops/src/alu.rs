//! The ALU opcode table.
//!
//! Each line of [`alu_table!`]'s invocation is one opcode: its Rust name, its IR name, the
//! source operands, the destination, its properties (algebraic and numeric: [`COMMUTATIVE`],
//! [`ASSOCIATIVE`], [`UNDERFLOWS`], [`PASSES_THROUGH`]), its semantics and, where it is not 1,
//! the number of roundings it makes (`rounds N`). Operand types
//! follow NIR: a size of 0 means *unsized* — every unsized source and an unsized destination share
//! the instruction's one bit size — and a component count of 0 means *per component* — the
//! operand has as many components as the destination. Opcodes with a fixed destination component
//! count (dot products, `vecN`, pack/unpack) read whole vectors.
//!
//! Booleans are 1-bit values holding 0 or 1; comparisons produce them, `bcsel` consumes them, and
//! the integer bit operations work on them.

use crate::BaseType;
use crate::eval::*;
use std::cmp::Ordering::{Equal, Greater, Less};

/// One operand (source or destination) of an opcode.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    pub base: BaseType,
    /// Fixed bit size, or 0 for the instruction's common size.
    pub bits: u8,
    /// Fixed component count, or 0 for per-component (as many as the destination).
    pub comps: u8,
}

impl Operand {
    const fn new(base: BaseType, bits: u8) -> Operand {
        Operand {
            base,
            bits,
            comps: 0,
        }
    }

    /// The same operand with a fixed component count.
    const fn n(self, comps: u8) -> Operand {
        Operand { comps, ..self }
    }

    pub fn is_sized(&self) -> bool {
        self.bits != 0
    }
}

const F: Operand = Operand::new(BaseType::Float, 0);
const F16: Operand = Operand::new(BaseType::Float, 16);
const F32: Operand = Operand::new(BaseType::Float, 32);
const F64: Operand = Operand::new(BaseType::Float, 64);
const I: Operand = Operand::new(BaseType::Int, 0);
const I8: Operand = Operand::new(BaseType::Int, 8);
const I16: Operand = Operand::new(BaseType::Int, 16);
const I32: Operand = Operand::new(BaseType::Int, 32);
const I64: Operand = Operand::new(BaseType::Int, 64);
const U: Operand = Operand::new(BaseType::Uint, 0);
const U8: Operand = Operand::new(BaseType::Uint, 8);
const U16: Operand = Operand::new(BaseType::Uint, 16);
const U32: Operand = Operand::new(BaseType::Uint, 32);
const U64: Operand = Operand::new(BaseType::Uint, 64);
const B: Operand = Operand::new(BaseType::Bool, 1);

/// How an opcode computes its result. The interpreter and the constant folder both use it.
#[derive(Copy, Clone)]
pub enum Eval {
    /// One destination component from the same component of every source (raw bits in, raw
    /// bits out).
    Comp(CompEval),
    /// Whole vectors: every source's components in, every destination component out.
    Vector(fn(&[&[u64]], Bits, &mut [u64])),
    /// A screen-space derivative: needs the neighbouring invocations of a 2×2 quad, so it is
    /// evaluated by the interpreter and never constant folded.
    Derivative {
        axis: Axis,
        precision: DerivativePrecision,
    },
}

/// A per-component evaluation, for one set of source components and for many lanes at once.
#[derive(Copy, Clone, Debug)]
pub struct CompEval {
    /// One destination component from the same component of every source.
    pub one: fn(&[u64], Bits) -> u64,
    /// `one` for every lane: `srcs[j][i]` is source `j`'s component in lane `i`, and `out[i]`
    /// receives lane `i`'s result (all sources as long as `out`). The function is compiled for
    /// each opcode, so the interpreter pays one call per instruction rather than per lane.
    pub lanes: fn(&[&[u64]], Bits, &mut [u64]),
}

/// `one` for every lane of `out`, as [`CompEval::lanes`] describes; inlined into each opcode's
/// own loop, with the common source counts unrolled.
#[inline(always)]
pub fn comp_lanes(srcs: &[&[u64]], bits: Bits, out: &mut [u64], one: impl Fn(&[u64], Bits) -> u64) {
    match *srcs {
        [a] => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = one(&[x], bits);
            }
        }
        [a, b] => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = one(&[x, y], bits);
            }
        }
        [a, b, c] => {
            for (((o, &x), &y), &z) in out.iter_mut().zip(a).zip(b).zip(c) {
                *o = one(&[x, y, z], bits);
            }
        }
        _ => {
            let mut comp = [0u64; 16];
            for (i, o) in out.iter_mut().enumerate() {
                for (slot, src) in comp.iter_mut().zip(srcs) {
                    *slot = src[i];
                }
                *o = one(&comp[..srcs.len()], bits);
            }
        }
    }
}

/// A per-component [`Eval`] from the closure computing one component.
macro_rules! comp {
    ($one:expr) => {
        Eval::Comp(CompEval {
            one: $one,
            lanes: |srcs, bits, out| comp_lanes(srcs, bits, out, $one),
        })
    };
}

/// Screen axis of a derivative.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
}

/// Derivative precision: coarse uses one difference per quad, fine one per row or column. The
/// unqualified form is implementation-chosen; shrew defines it as coarse.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DerivativePrecision {
    Default,
    Fine,
    Coarse,
}

/// The first two sources may be swapped.
pub const COMMUTATIVE: u8 = 1;
/// `op(op(a, b), c) == op(a, op(b, c))` (exactly, for integer ops; for float ops only when
/// inexact rewriting is allowed).
pub const ASSOCIATIVE: u8 = 2;

/// A float operation whose result loses precision when it underflows (comes out denormal, or
/// zero from nonzero operands): products, quotients, reciprocals, exponentials. Sums and
/// differences are exact when their result is denormal.
pub const UNDERFLOWS: u8 = 4;
/// The result is one of the sources of the destination's base type, unchanged: moves, vectors
/// and selects (whose boolean selector does not pass through).
pub const PASSES_THROUGH: u8 = 8;

/// Everything the table says about one opcode.
pub struct OpInfo {
    pub op: AluOp,
    pub name: &'static str,
    pub srcs: &'static [Operand],
    pub dst: Operand,
    pub flags: u8,
    pub eval: Eval,
    /// How many times one component of the result is rounded: formula opcodes round after
    /// each of their operations (`ffma` 2, `fdot3` 3 products and 2 sums), every other 1.
    pub rounding_steps: u8,
}

impl OpInfo {
    pub fn num_srcs(&self) -> usize {
        self.srcs.len()
    }

    pub fn is_commutative(&self) -> bool {
        self.flags & COMMUTATIVE != 0
    }

    pub fn is_associative(&self) -> bool {
        self.flags & ASSOCIATIVE != 0
    }

    /// See [`UNDERFLOWS`].
    pub fn may_underflow(&self) -> bool {
        self.flags & UNDERFLOWS != 0
    }

    /// Whether source `i` is passed through to the destination unchanged, so that its type is
    /// the type the destination is used as (see [`PASSES_THROUGH`]).
    pub fn passes_through(&self, i: usize) -> bool {
        self.flags & PASSES_THROUGH != 0 && self.srcs[i].base == self.dst.base
    }

    /// Whether the destination's component count follows the instruction (per-component op).
    pub fn is_per_component(&self) -> bool {
        self.dst.comps == 0
    }

    /// The shape of the destination of an instruction built with `bits` and `comps`: the
    /// operand's fixed size and component count where it has them.
    pub fn dst_shape(&self, bits: u8, comps: u8) -> (u8, u8) {
        let bits = if self.dst.bits != 0 {
            self.dst.bits
        } else {
            bits
        };
        let comps = if self.dst.comps != 0 {
            self.dst.comps
        } else {
            comps
        };
        (bits, comps)
    }

    /// The bit size each source is read at: a sized operand's own size, and for unsized operands
    /// the instruction's common size — `dst_bits` when the destination is unsized, else
    /// `first_unsized_src_bits` (the size of the first unsized source's value; `dst_bits` when
    /// that is unknown).
    pub fn src_bit_sizes(&self, dst_bits: u8, first_unsized_src_bits: Option<u8>) -> Vec<u8> {
        let common = if self.dst.bits == 0 {
            dst_bits
        } else {
            first_unsized_src_bits.unwrap_or(dst_bits)
        };
        self.srcs
            .iter()
            .map(|operand| {
                if operand.bits == 0 {
                    common
                } else {
                    operand.bits
                }
            })
            .collect()
    }

    /// Which source sets the common size of an instruction whose destination is sized: the
    /// first unsized operand.
    pub fn first_unsized_src(&self) -> Option<usize> {
        self.srcs.iter().position(|operand| operand.bits == 0)
    }

    /// The bit sizes the instruction's common size may take: those every unsized operand's base
    /// type allows (floats narrow it to 16/32/64). Empty for fully sized opcodes.
    pub fn unsized_bit_sizes(&self) -> Vec<u8> {
        let mut unsized_operands = self
            .srcs
            .iter()
            .chain([&self.dst])
            .filter(|o| o.bits == 0)
            .peekable();
        if unsized_operands.peek().is_none() {
            return Vec::new();
        }
        let mut sizes = crate::BIT_SIZES.to_vec();
        for operand in unsized_operands {
            sizes.retain(|b| operand.base.allowed_bit_sizes().contains(b));
        }
        sizes
    }

    /// Whether every unsized operand of this opcode must share one bit size, and so the
    /// instruction's bit size is free to choose.
    pub fn is_unsized(&self) -> bool {
        self.dst.bits == 0 || self.srcs.iter().any(|s| s.bits == 0)
    }
}

macro_rules! f1 {
    (|$a:ident| $e:expr) => {
        comp!(|s, b| {
            let $a = fget(s[0], b.src[0]);
            fput($e, b.dst)
        })
    };
}
macro_rules! f2 {
    (|$a:ident, $b:ident| $e:expr) => {
        comp!(|s, bits| {
            let $a = fget(s[0], bits.src[0]);
            let $b = fget(s[1], bits.src[1]);
            fput($e, bits.dst)
        })
    };
}
macro_rules! fcmp {
    (|$a:ident, $b:ident| $e:expr) => {
        comp!(|s, bits| {
            let $a = fget(s[0], bits.src[0]);
            let $b = fget(s[1], bits.src[1]);
            ($e) as u64
        })
    };
}
macro_rules! i1 {
    (|$a:ident| $e:expr) => {
        comp!(|s, b| {
            let $a = sext(s[0], b.src[0]);
            mask(($e) as u64, b.dst)
        })
    };
}
macro_rules! i2 {
    (|$a:ident, $b:ident| $e:expr) => {
        comp!(|s, bits| {
            let $a = sext(s[0], bits.src[0]);
            let $b = sext(s[1], bits.src[1]);
            mask(($e) as u64, bits.dst)
        })
    };
}
macro_rules! u1 {
    (|$a:ident| $e:expr) => {
        comp!(|s, b| {
            let $a = mask(s[0], b.src[0]);
            mask(($e) as u64, b.dst)
        })
    };
}
macro_rules! u2 {
    (|$a:ident, $b:ident| $e:expr) => {
        comp!(|s, bits| {
            let $a = mask(s[0], bits.src[0]);
            let $b = mask(s[1], bits.src[1]);
            mask(($e) as u64, bits.dst)
        })
    };
}
/// Integer comparison on sign-extended sources.
macro_rules! icmp {
    (|$a:ident, $b:ident| $e:expr) => {
        comp!(|s, bits| {
            let $a = sext(s[0], bits.src[0]);
            let $b = sext(s[1], bits.src[1]);
            ($e) as u64
        })
    };
}
/// Integer comparison on zero-extended sources.
macro_rules! ucmp {
    (|$a:ident, $b:ident| $e:expr) => {
        comp!(|s, bits| {
            let $a = mask(s[0], bits.src[0]);
            let $b = mask(s[1], bits.src[1]);
            ($e) as u64
        })
    };
}
/// `vecN`: one scalar source per destination component.
macro_rules! vec_n {
    () => {
        Eval::Vector(|s, _, d| {
            for (d, s) in d.iter_mut().zip(s) {
                *d = s[0];
            }
        })
    };
}
/// Dot product: `x0*y0 + x1*y1 + ...` evaluated left to right, each step rounded at the
/// operand size.
macro_rules! fdot {
    () => {
        Eval::Vector(|s, b, d| {
            let r = |x: f64| round_to(x, b.dst);
            let mut products = s[0]
                .iter()
                .zip(s[1])
                .map(|(&x, &y)| r(fget(x, b.src[0]) * fget(y, b.src[1])));
            let first = products.next().unwrap_or(0.0);
            d[0] = fput(products.fold(first, |acc, p| r(acc + p)), b.dst);
        })
    };
}
/// Packs `n` floats into one 32-bit value of n fields, each through `$f(x) -> field`.
macro_rules! pack_norm {
    ($width:literal, $f:expr) => {
        Eval::Vector(|s, _, d| {
            let f: fn(f64) -> u64 = $f;
            d[0] = s[0].iter().enumerate().fold(0, |acc, (i, &x)| {
                acc | (mask(f(fget(x, 32)), $width) << ($width * i))
            });
        })
    };
}
/// Unpacks one 32-bit value of n fields into n floats, each through `$f(field) -> float`.
macro_rules! unpack_norm {
    ($width:literal, $f:expr) => {
        Eval::Vector(|s, _, d| {
            let f: fn(u64) -> f64 = $f;
            for (i, d) in d.iter_mut().enumerate() {
                *d = fput(f(mask(s[0][0] >> ($width * i), $width)), 32);
            }
        })
    };
}
/// Packs two halves of `$width` bits into one value.
macro_rules! pack_2x {
    ($width:literal) => {
        Eval::Vector(|s, _, d| d[0] = mask(s[0][0], $width) | (mask(s[0][1], $width) << $width))
    };
}
/// Splits a value into two halves of `$width` bits.
macro_rules! unpack_2x {
    ($width:literal) => {
        Eval::Vector(|s, _, d| {
            d[0] = mask(s[0][0], $width);
            d[1] = mask(s[0][0] >> $width, $width);
        })
    };
}
macro_rules! derivative {
    ($axis:ident, $precision:ident) => {
        Eval::Derivative {
            axis: Axis::$axis,
            precision: DerivativePrecision::$precision,
        }
    };
}

macro_rules! alu_table {
    (@rounds) => { 1 };
    (@rounds $steps:literal) => { $steps };
    ($( $variant:ident $name:literal ( $($src:expr),* ) -> $dst:expr, $flags:expr, $eval:expr
        $(, rounds $steps:literal)?; )*) => {
        /// An ALU opcode. See [`ALU_OPS`] for what each one is.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum AluOp {
            $($variant),*
        }

        /// The table, indexed by `AluOp as usize`.
        pub static ALU_OPS: &[OpInfo] = &[
            $(OpInfo {
                op: AluOp::$variant,
                name: $name,
                srcs: &[$($src),*],
                dst: $dst,
                flags: $flags,
                eval: $eval,
                rounding_steps: alu_table!(@rounds $($steps)?),
            }),*
        ];

        impl AluOp {
            /// Looks an opcode up by its IR name.
            pub fn from_name(name: &str) -> Option<AluOp> {
                match name {
                    $($name => Some(AluOp::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

/// How far from the exact result an implementation may be, for 32-bit floats: at most
/// `ulps + ulps_per_operand × |operand|` units in the last place of the result, plus
/// `absolute`. The figures are Vulkan's precision requirements for SPIR-V's operations, and
/// for those it inherits from a formula (`asin` from `atan2(x, sqrt(1 - x²))`, `sinh` from
/// exponentials) the formula's own figures combined; what a driver lowers must stay inside
/// them. Operations not listed are correctly rounded or exact.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Accuracy {
    pub ulps: f64,
    pub ulps_per_operand: f64,
    pub absolute: f64,
}

impl Accuracy {
    /// Correctly rounded: half an ulp.
    pub const ROUNDED: Accuracy = Accuracy::ulps(0.5);

    const fn ulps(ulps: f64) -> Accuracy {
        Accuracy {
            ulps,
            ulps_per_operand: 0.0,
            absolute: 0.0,
        }
    }

    const fn absolute(absolute: f64) -> Accuracy {
        Accuracy {
            ulps: 0.0,
            ulps_per_operand: 0.0,
            absolute,
        }
    }

    /// The error allowed for a 32-bit result of magnitude at most `result` from an operand of
    /// magnitude at most `operand`.
    pub fn error(&self, result: f64, operand: f64) -> f64 {
        let ulp = result.max(f32::MIN_POSITIVE as f64) * f32::EPSILON as f64;
        (self.ulps + self.ulps_per_operand * operand) * ulp + self.absolute
    }
}

impl AluOp {
    pub fn info(self) -> &'static OpInfo {
        &ALU_OPS[self as usize]
    }

    /// See [`Accuracy`].
    pub fn accuracy(self) -> Accuracy {
        use AluOp::*;
        match self {
            Fdiv | Frcp => Accuracy::ulps(2.5),
            Frsq => Accuracy::ulps(2.0),
            // 1 / inversesqrt(x).
            Fsqrt => Accuracy::ulps(5.0),
            Fexp2 => Accuracy {
                ulps: 3.0,
                ulps_per_operand: 2.0,
                absolute: 0.0,
            },
            // 3 ulps outside [0.5, 2], 2^-21 inside.
            Flog2 => Accuracy {
                ulps: 3.0,
                ulps_per_operand: 0.0,
                absolute: 1.0 / 2_097_152.0,
            },
            // exp2(y · log2(x)): the logarithm's error grows with y and the exponent's.
            Fpow => Accuracy {
                ulps: 3.0,
                ulps_per_operand: 16.0,
                absolute: 0.0,
            },
            // Inside [-π, π].
            Fsin | Fcos => Accuracy::absolute(1.0 / 2048.0),
            // sin / cos.
            Ftan => Accuracy::absolute(1.0 / 256.0),
            Fatan | Fatan2 | Fasin | Facos => Accuracy::ulps(4096.0),
            // From exponentials and logarithms.
            Fsinh | Fcosh | Ftanh | Fasinh | Facosh | Fatanh => Accuracy {
                ulps: 8.0,
                ulps_per_operand: 4.0,
                absolute: 1.0 / 2_097_152.0,
            },
            Ffma => Accuracy::ulps(1.0),
            _ => Accuracy::ROUNDED,
        }
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn all() -> impl Iterator<Item = AluOp> {
        ALU_OPS.iter().map(|info| info.op)
    }

    /// The `vecN` that gathers `comps` scalars, if there is one.
    pub fn vec_of(comps: u8) -> Option<AluOp> {
        Some(match comps {
            2 => AluOp::Vec2,
            3 => AluOp::Vec3,
            4 => AluOp::Vec4,
            8 => AluOp::Vec8,
            16 => AluOp::Vec16,
            _ => return None,
        })
    }

    /// `vec2` … `vec16`: gathers scalars into a vector.
    pub fn is_vec(self) -> bool {
        matches!(
            self,
            AluOp::Vec2 | AluOp::Vec3 | AluOp::Vec4 | AluOp::Vec8 | AluOp::Vec16
        )
    }
}

/// A width-generic conversion: the family of sized conversion opcodes (`f2f16`, `f2f32`,
/// `f2f64`…) that differ only in their destination size. Rules name a family to match any member
/// and to build the member of the size that bit-size inference picks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConvFamily {
    F2f,
    F2i,
    F2u,
    I2f,
    U2f,
    I2i,
    U2u,
    B2f,
    B2i,
}

impl ConvFamily {
    pub const ALL: [ConvFamily; 9] = [
        ConvFamily::F2f,
        ConvFamily::F2i,
        ConvFamily::F2u,
        ConvFamily::I2f,
        ConvFamily::U2f,
        ConvFamily::I2i,
        ConvFamily::U2u,
        ConvFamily::B2f,
        ConvFamily::B2i,
    ];

    /// The family's name in rules (`f2f`, `i2i`…).
    pub fn name(self) -> &'static str {
        match self {
            ConvFamily::F2f => "f2f",
            ConvFamily::F2i => "f2i",
            ConvFamily::F2u => "f2u",
            ConvFamily::I2f => "i2f",
            ConvFamily::U2f => "u2f",
            ConvFamily::I2i => "i2i",
            ConvFamily::U2u => "u2u",
            ConvFamily::B2f => "b2f",
            ConvFamily::B2i => "b2i",
        }
    }

    pub fn from_name(name: &str) -> Option<ConvFamily> {
        ConvFamily::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Every member, narrowest destination first.
    pub fn members(self) -> &'static [AluOp] {
        use AluOp::*;
        match self {
            ConvFamily::F2f => &[F2f16, F2f32, F2f64],
            ConvFamily::F2i => &[F2i8, F2i16, F2i32, F2i64],
            ConvFamily::F2u => &[F2u8, F2u16, F2u32, F2u64],
            ConvFamily::I2f => &[I2f16, I2f32, I2f64],
            ConvFamily::U2f => &[U2f16, U2f32, U2f64],
            ConvFamily::I2i => &[I2i8, I2i16, I2i32, I2i64],
            ConvFamily::U2u => &[U2u8, U2u16, U2u32, U2u64],
            ConvFamily::B2f => &[B2f16, B2f32, B2f64],
            ConvFamily::B2i => &[B2i8, B2i16, B2i32, B2i64],
        }
    }

    /// The member converting to `bits` bits (the round-to-nearest-even form for `f2f16`).
    pub fn op(self, bits: u8) -> Option<AluOp> {
        self.members()
            .iter()
            .copied()
            .find(|op| op.info().dst.bits == bits)
    }

    pub fn contains(self, op: AluOp) -> bool {
        self.members().contains(&op)
    }

    /// The base types of the source and the destination.
    pub fn types(self) -> (BaseType, BaseType) {
        let op = self.members()[0];
        (op.info().srcs[0].base, op.info().dst.base)
    }
}

impl AluOp {
    /// The width-generic family this conversion belongs to, if any.
    pub fn conv_family(self) -> Option<ConvFamily> {
        ConvFamily::ALL.into_iter().find(|f| f.contains(self))
    }
}

impl std::fmt::Display for AluOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const C: u8 = COMMUTATIVE;
const CA: u8 = COMMUTATIVE | ASSOCIATIVE;
const P: u8 = PASSES_THROUGH;
const UF: u8 = UNDERFLOWS;

alu_table! {
    // Moves and vector construction. `mov` with a swizzle is component extraction.
    Mov "mov" (U) -> U, P, u1!(|a| a);
    Vec2 "vec2" (U.n(1), U.n(1)) -> U.n(2), P, vec_n!();
    Vec3 "vec3" (U.n(1), U.n(1), U.n(1)) -> U.n(3), P, vec_n!();
    Vec4 "vec4" (U.n(1), U.n(1), U.n(1), U.n(1)) -> U.n(4), P, vec_n!();
    Vec8 "vec8" (U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1)) -> U.n(8), P, vec_n!();
    Vec16 "vec16" (U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1),
                   U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1), U.n(1)) -> U.n(16), P, vec_n!();
    Bcsel "bcsel" (B, U, U) -> U, P, comp!(|s, _| if s[0] & 1 != 0 { s[1] } else { s[2] });

    // Float arithmetic.
    Fneg "fneg" (F) -> F, 0, f1!(|a| -a);
    Fabs "fabs" (F) -> F, 0, f1!(|a| a.abs());
    Fsat "fsat" (F) -> F, 0, f1!(|a| if a.is_nan() || a <= 0.0 { 0.0 } else { a.min(1.0) });
    Fsign "fsign" (F) -> F, 0, f1!(|a| if a > 0.0 { 1.0 } else if a < 0.0 { -1.0 } else { a });
    Fadd "fadd" (F, F) -> F, CA, f2!(|a, b| a + b);
    Fsub "fsub" (F, F) -> F, 0, f2!(|a, b| a - b);
    Fmul "fmul" (F, F) -> F, CA | UF, f2!(|a, b| a * b);
    Fdiv "fdiv" (F, F) -> F, UF, f2!(|a, b| a / b);
    Ffma "ffma" (F, F, F) -> F, C | UF, comp!(|s, b| ffma(s[0], s[1], s[2], b.dst)), rounds 2;
    Flrp "flrp" (F, F, F) -> F, UF, comp!(|s, b| {
        let r = |x: f64| round_to(x, b.dst);
        let (x, y, t) = (fget(s[0], b.dst), fget(s[1], b.dst), fget(s[2], b.dst));
        fput(r(x * r(1.0 - t)) + r(y * t), b.dst)
    }), rounds 4;
    Fmin "fmin" (F, F) -> F, CA, f2!(|a, b| fmin(a, b));
    Fmax "fmax" (F, F) -> F, CA, f2!(|a, b| fmax(a, b));
    Fmod "fmod" (F, F) -> F, 0, comp!(|s, b| {
        let r = |x: f64| round_to(x, b.dst);
        let (x, y) = (fget(s[0], b.dst), fget(s[1], b.dst));
        fput(x - r(y * r(x / y).floor()), b.dst)
    }), rounds 4;
    Frem "frem" (F, F) -> F, 0, comp!(|s, b| {
        let r = |x: f64| round_to(x, b.dst);
        let (x, y) = (fget(s[0], b.dst), fget(s[1], b.dst));
        fput(x - r(y * r(x / y).trunc()), b.dst)
    }), rounds 4;
    Ffloor "ffloor" (F) -> F, 0, f1!(|a| a.floor());
    Fceil "fceil" (F) -> F, 0, f1!(|a| a.ceil());
    Ftrunc "ftrunc" (F) -> F, 0, f1!(|a| a.trunc());
    FroundEven "fround_even" (F) -> F, 0, f1!(|a| round_even(a));
    Ffract "ffract" (F) -> F, 0, f1!(|a| a - a.floor());
    Frcp "frcp" (F) -> F, UF, f1!(|a| 1.0 / a);
    Frsq "frsq" (F) -> F, UF, f1!(|a| 1.0 / a.sqrt());
    Fsqrt "fsqrt" (F) -> F, 0, f1!(|a| a.sqrt());
    Fexp2 "fexp2" (F) -> F, UF, f1!(|a| a.exp2());
    Flog2 "flog2" (F) -> F, 0, f1!(|a| a.log2());
    Fpow "fpow" (F, F) -> F, UF, f2!(|a, b| a.powf(b));
    Fsin "fsin" (F) -> F, 0, f1!(|a| a.sin());
    Fcos "fcos" (F) -> F, 0, f1!(|a| a.cos());
    Ftan "ftan" (F) -> F, 0, f1!(|a| a.tan());
    Fasin "fasin" (F) -> F, 0, f1!(|a| a.asin());
    Facos "facos" (F) -> F, 0, f1!(|a| a.acos());
    Fatan "fatan" (F) -> F, 0, f1!(|a| a.atan());
    Fatan2 "fatan2" (F, F) -> F, 0, f2!(|y, x| y.atan2(x));
    Fsinh "fsinh" (F) -> F, 0, f1!(|a| a.sinh());
    Fcosh "fcosh" (F) -> F, 0, f1!(|a| a.cosh());
    Ftanh "ftanh" (F) -> F, 0, f1!(|a| a.tanh());
    Fasinh "fasinh" (F) -> F, 0, f1!(|a| a.asinh());
    Facosh "facosh" (F) -> F, 0, f1!(|a| a.acosh());
    Fatanh "fatanh" (F) -> F, 0, f1!(|a| a.atanh());
    Fldexp "fldexp" (F, I32) -> F, UF,
        comp!(|s, b| fput(ldexp(fget(s[0], b.src[0]), sext(s[1], 32)), b.dst));
    FrexpSig "frexp_sig" (F) -> F, 0, f1!(|a| frexp(a).0);
    FrexpExp "frexp_exp" (F) -> I32, 0, comp!(|s, b| mask(frexp(fget(s[0], b.src[0])).1 as u64, 32));
    FquantizeF16 "fquantize2f16" (F) -> F, 0, f1!(|a| quantize_f16(a));

    // Float comparisons. Ordered ones are false when either source is NaN; the `u` ones
    // (unordered) are true then.
    Flt "flt" (F, F) -> B, 0, fcmp!(|a, b| a < b);
    Fge "fge" (F, F) -> B, 0, fcmp!(|a, b| a >= b);
    Feq "feq" (F, F) -> B, C, fcmp!(|a, b| a == b);
    Fneu "fneu" (F, F) -> B, C, fcmp!(|a, b| a != b);
    Fltu "fltu" (F, F) -> B, 0, fcmp!(|a, b| !matches!(a.partial_cmp(&b), Some(Greater | Equal)));
    Fgeu "fgeu" (F, F) -> B, 0, fcmp!(|a, b| !matches!(a.partial_cmp(&b), Some(Less)));
    Fequ "fequ" (F, F) -> B, C, fcmp!(|a, b| a == b || a.is_nan() || b.is_nan());
    Fneo "fneo" (F, F) -> B, C, fcmp!(|a, b| matches!(a.partial_cmp(&b), Some(Less | Greater)));
    Ford "ford" (F, F) -> B, C, fcmp!(|a, b| !a.is_nan() && !b.is_nan());
    Funord "funord" (F, F) -> B, C, fcmp!(|a, b| a.is_nan() || b.is_nan());

    // Integer arithmetic, wrapping.
    Ineg "ineg" (I) -> I, 0, i1!(|a| a.wrapping_neg());
    Iabs "iabs" (I) -> I, 0, i1!(|a| a.wrapping_abs());
    Isign "isign" (I) -> I, 0, i1!(|a| a.signum());
    Iadd "iadd" (I, I) -> I, CA, i2!(|a, b| a.wrapping_add(b));
    Isub "isub" (I, I) -> I, 0, i2!(|a, b| a.wrapping_sub(b));
    Imul "imul" (I, I) -> I, CA, i2!(|a, b| a.wrapping_mul(b));
    Idiv "idiv" (I, I) -> I, 0, comp!(|s, b| {
        let (x, y) = (sext(s[0], b.src[0]), sext(s[1], b.src[1]));
        // Dividing at the value's own width makes INT_MIN / -1 wrap to INT_MIN.
        let q = if y == 0 { 0 } else if y == -1 { x.wrapping_neg() } else { x / y };
        mask(q as u64, b.dst)
    });
    Udiv "udiv" (U, U) -> U, 0, u2!(|a, b| a.checked_div(b).unwrap_or(0));
    Irem "irem" (I, I) -> I, 0, i2!(|a, b| if b == 0 { 0 } else { a.wrapping_rem(b) });
    Imod "imod" (I, I) -> I, 0, i2!(|a, b| if b == 0 { 0 } else {
        let r = a.wrapping_rem(b);
        if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r }
    });
    Umod "umod" (U, U) -> U, 0, u2!(|a, b| a.checked_rem(b).unwrap_or(0));
    Imin "imin" (I, I) -> I, CA, i2!(|a, b| a.min(b));
    Imax "imax" (I, I) -> I, CA, i2!(|a, b| a.max(b));
    Umin "umin" (U, U) -> U, CA, u2!(|a, b| a.min(b));
    Umax "umax" (U, U) -> U, CA, u2!(|a, b| a.max(b));
    IaddSat "iadd_sat" (I, I) -> I, C, comp!(|s, b| {
        let (lo, hi) = (sext(1 << (b.dst - 1), b.dst), sext(mask(u64::MAX, b.dst - 1), 64));
        mask((sext(s[0], b.dst) as i128 + sext(s[1], b.dst) as i128).clamp(lo as i128, hi as i128) as u64, b.dst)
    });
    UaddSat "uadd_sat" (U, U) -> U, C, comp!(|s, b| {
        (mask(s[0], b.dst) as u128 + mask(s[1], b.dst) as u128).min(mask(u64::MAX, b.dst) as u128) as u64
    });
    IsubSat "isub_sat" (I, I) -> I, 0, comp!(|s, b| {
        let (lo, hi) = (sext(1 << (b.dst - 1), b.dst), sext(mask(u64::MAX, b.dst - 1), 64));
        mask((sext(s[0], b.dst) as i128 - sext(s[1], b.dst) as i128).clamp(lo as i128, hi as i128) as u64, b.dst)
    });
    UsubSat "usub_sat" (U, U) -> U, 0, u2!(|a, b| a.saturating_sub(b));
    UaddCarry "uadd_carry" (U, U) -> U, C, comp!(|s, b| (mask(s[0], b.dst) as u128 + mask(s[1], b.dst) as u128 > mask(u64::MAX, b.dst) as u128) as u64);
    UsubBorrow "usub_borrow" (U, U) -> U, 0, u2!(|a, b| (a < b) as u64);
    ImulHigh "imul_high" (I, I) -> I, C, comp!(|s, b| {
        mask(((sext(s[0], b.dst) as i128 * sext(s[1], b.dst) as i128) >> b.dst) as u64, b.dst)
    });
    UmulHigh "umul_high" (U, U) -> U, C, comp!(|s, b| {
        mask(((mask(s[0], b.dst) as u128 * mask(s[1], b.dst) as u128) >> b.dst) as u64, b.dst)
    });
    Imul2x32To64 "imul_2x32_64" (I32, I32) -> I64, C, i2!(|a, b| a.wrapping_mul(b));
    Umul2x32To64 "umul_2x32_64" (U32, U32) -> U64, C, u2!(|a, b| a.wrapping_mul(b));

    // Integer comparisons.
    Ilt "ilt" (I, I) -> B, 0, icmp!(|a, b| a < b);
    Ige "ige" (I, I) -> B, 0, icmp!(|a, b| a >= b);
    Ult "ult" (U, U) -> B, 0, ucmp!(|a, b| a < b);
    Uge "uge" (U, U) -> B, 0, ucmp!(|a, b| a >= b);
    Ieq "ieq" (I, I) -> B, C, ucmp!(|a, b| a == b);
    Ine "ine" (I, I) -> B, C, ucmp!(|a, b| a != b);

    // Bit operations; on 1-bit values they are the boolean operations.
    Inot "inot" (I) -> I, 0, u1!(|a| !a);
    Iand "iand" (U, U) -> U, CA, u2!(|a, b| a & b);
    Ior "ior" (U, U) -> U, CA, u2!(|a, b| a | b);
    Ixor "ixor" (U, U) -> U, CA, u2!(|a, b| a ^ b);
    Ishl "ishl" (I, U32) -> I, 0, comp!(|s, b| mask(s[0] << (s[1] % b.dst as u64), b.dst));
    Ishr "ishr" (I, U32) -> I, 0, comp!(|s, b| mask((sext(s[0], b.dst) >> (s[1] % b.dst as u64)) as u64, b.dst));
    Ushr "ushr" (U, U32) -> U, 0, comp!(|s, b| mask(s[0], b.dst) >> (s[1] % b.dst as u64));
    Urol "urol" (U, U32) -> U, 0, comp!(|s, b| {
        let (v, n) = (mask(s[0], b.dst), (s[1] % b.dst as u64) as u32);
        if n == 0 { v } else { mask(v << n | v >> (b.dst as u32 - n), b.dst) }
    });
    Uror "uror" (U, U32) -> U, 0, comp!(|s, b| {
        let (v, n) = (mask(s[0], b.dst), (s[1] % b.dst as u64) as u32);
        if n == 0 { v } else { mask(v >> n | v << (b.dst as u32 - n), b.dst) }
    });
    BitfieldInsert "bitfield_insert" (U, U, U32, U32) -> U, 0, comp!(|s, b| {
        let (offset, count) = bitfield(s[2], s[3], b.dst);
        let m = field_mask(offset, count);
        mask((s[0] & !m) | (s[1].checked_shl(offset).unwrap_or(0) & m), b.dst)
    });
    UbitfieldExtract "ubitfield_extract" (U, U32, U32) -> U, 0, comp!(|s, b| {
        let (offset, count) = bitfield(s[1], s[2], b.dst);
        mask(s[0], b.dst).checked_shr(offset).unwrap_or(0) & field_mask(0, count)
    });
    IbitfieldExtract "ibitfield_extract" (I, U32, U32) -> I, 0, comp!(|s, b| {
        let (offset, count) = bitfield(s[1], s[2], b.dst);
        // A non-empty field lies inside the value, so its offset is below 64.
        if count == 0 { 0 } else { mask(sext(s[0] >> offset, count as u8) as u64, b.dst) }
    });
    BitCount "bit_count" (U) -> U32, 0, comp!(|s, b| mask(s[0], b.src[0]).count_ones() as u64);
    UfindMsb "ufind_msb" (U) -> I32, 0, comp!(|s, b| {
        let v = mask(s[0], b.src[0]);
        mask(if v == 0 { -1i64 as u64 } else { 63 - v.leading_zeros() as u64 }, 32)
    });
    IfindMsb "ifind_msb" (I) -> I32, 0, comp!(|s, b| {
        // The highest bit that differs from the sign bit.
        let v = sext(s[0], b.src[0]);
        let v = if v < 0 { !v } else { v } as u64;
        mask(if v == 0 { -1i64 as u64 } else { 63 - v.leading_zeros() as u64 }, 32)
    });
    FindLsb "find_lsb" (U) -> I32, 0, comp!(|s, b| {
        let v = mask(s[0], b.src[0]);
        mask(if v == 0 { -1i64 as u64 } else { v.trailing_zeros() as u64 }, 32)
    });
    BitfieldReverse "bitfield_reverse" (U) -> U, 0, comp!(|s, b| s[0].reverse_bits() >> (64 - b.dst as u32));

    // Conversions. The destination size is part of the name, as in NIR.
    F2f16 "f2f16" (F) -> F16, 0, f1!(|a| a);
    F2f16Rtne "f2f16_rtne" (F) -> F16, 0, f1!(|a| a);
    F2f16Rtz "f2f16_rtz" (F) -> F16, 0, comp!(|s, b| f2f16_rtz(fget(s[0], b.src[0])));
    F2f32 "f2f32" (F) -> F32, 0, f1!(|a| a);
    F2f64 "f2f64" (F) -> F64, 0, f1!(|a| a);
    F2i8 "f2i8" (F) -> I8, 0, comp!(|s, b| f2i(fget(s[0], b.src[0]), 8));
    F2i16 "f2i16" (F) -> I16, 0, comp!(|s, b| f2i(fget(s[0], b.src[0]), 16));
    F2i32 "f2i32" (F) -> I32, 0, comp!(|s, b| f2i(fget(s[0], b.src[0]), 32));
    F2i64 "f2i64" (F) -> I64, 0, comp!(|s, b| f2i(fget(s[0], b.src[0]), 64));
    F2u8 "f2u8" (F) -> U8, 0, comp!(|s, b| f2u(fget(s[0], b.src[0]), 8));
    F2u16 "f2u16" (F) -> U16, 0, comp!(|s, b| f2u(fget(s[0], b.src[0]), 16));
    F2u32 "f2u32" (F) -> U32, 0, comp!(|s, b| f2u(fget(s[0], b.src[0]), 32));
    F2u64 "f2u64" (F) -> U64, 0, comp!(|s, b| f2u(fget(s[0], b.src[0]), 64));
    I2f16 "i2f16" (I) -> F16, 0, comp!(|s, b| i2f(sext(s[0], b.src[0]), 16));
    I2f32 "i2f32" (I) -> F32, 0, comp!(|s, b| i2f(sext(s[0], b.src[0]), 32));
    I2f64 "i2f64" (I) -> F64, 0, comp!(|s, b| i2f(sext(s[0], b.src[0]), 64));
    U2f16 "u2f16" (U) -> F16, 0, comp!(|s, b| u2f(mask(s[0], b.src[0]), 16));
    U2f32 "u2f32" (U) -> F32, 0, comp!(|s, b| u2f(mask(s[0], b.src[0]), 32));
    U2f64 "u2f64" (U) -> F64, 0, comp!(|s, b| u2f(mask(s[0], b.src[0]), 64));
    I2i8 "i2i8" (I) -> I8, 0, i1!(|a| a);
    I2i16 "i2i16" (I) -> I16, 0, i1!(|a| a);
    I2i32 "i2i32" (I) -> I32, 0, i1!(|a| a);
    I2i64 "i2i64" (I) -> I64, 0, i1!(|a| a);
    U2u8 "u2u8" (U) -> U8, 0, u1!(|a| a);
    U2u16 "u2u16" (U) -> U16, 0, u1!(|a| a);
    U2u32 "u2u32" (U) -> U32, 0, u1!(|a| a);
    U2u64 "u2u64" (U) -> U64, 0, u1!(|a| a);
    B2f16 "b2f16" (B) -> F16, 0, comp!(|s, _| fput((s[0] & 1) as f64, 16));
    B2f32 "b2f32" (B) -> F32, 0, comp!(|s, _| fput((s[0] & 1) as f64, 32));
    B2f64 "b2f64" (B) -> F64, 0, comp!(|s, _| fput((s[0] & 1) as f64, 64));
    B2i8 "b2i8" (B) -> I8, 0, comp!(|s, _| s[0] & 1);
    B2i16 "b2i16" (B) -> I16, 0, comp!(|s, _| s[0] & 1);
    B2i32 "b2i32" (B) -> I32, 0, comp!(|s, _| s[0] & 1);
    B2i64 "b2i64" (B) -> I64, 0, comp!(|s, _| s[0] & 1);
    F2b1 "f2b1" (F) -> B, 0, comp!(|s, b| (fget(s[0], b.src[0]) != 0.0) as u64);
    I2b1 "i2b1" (I) -> B, 0, comp!(|s, b| (mask(s[0], b.src[0]) != 0) as u64);

    // Packing, as GLSL's pack/unpack functions define them.
    PackHalf2x16 "pack_half_2x16" (F32.n(2)) -> U32.n(1), 0, pack_norm!(16, |x| fput(x, 16));
    UnpackHalf2x16 "unpack_half_2x16" (U32.n(1)) -> F32.n(2), 0, unpack_norm!(16, |h| fget(h, 16));
    PackUnorm2x16 "pack_unorm_2x16" (F32.n(2)) -> U32.n(1), 0,
        pack_norm!(16, |x| round_even(times_f32(fsat_num(x), 65535.0)) as u64);
    UnpackUnorm2x16 "unpack_unorm_2x16" (U32.n(1)) -> F32.n(2), 0, unpack_norm!(16, |v| v as f64 / 65535.0);
    PackSnorm2x16 "pack_snorm_2x16" (F32.n(2)) -> U32.n(1), 0,
        pack_norm!(16, |x| round_even(times_f32(snorm_clamp(x), 32767.0)) as i64 as u64);
    UnpackSnorm2x16 "unpack_snorm_2x16" (U32.n(1)) -> F32.n(2), 0,
        unpack_norm!(16, |v| (sext(v, 16) as f64 / 32767.0).clamp(-1.0, 1.0));
    PackUnorm4x8 "pack_unorm_4x8" (F32.n(4)) -> U32.n(1), 0,
        pack_norm!(8, |x| round_even(times_f32(fsat_num(x), 255.0)) as u64);
    UnpackUnorm4x8 "unpack_unorm_4x8" (U32.n(1)) -> F32.n(4), 0, unpack_norm!(8, |v| v as f64 / 255.0);
    PackSnorm4x8 "pack_snorm_4x8" (F32.n(4)) -> U32.n(1), 0,
        pack_norm!(8, |x| round_even(times_f32(snorm_clamp(x), 127.0)) as i64 as u64);
    UnpackSnorm4x8 "unpack_snorm_4x8" (U32.n(1)) -> F32.n(4), 0,
        unpack_norm!(8, |v| (sext(v, 8) as f64 / 127.0).clamp(-1.0, 1.0));
    Pack64_2x32 "pack_64_2x32" (U32.n(2)) -> U64.n(1), 0, pack_2x!(32);
    Unpack64_2x32 "unpack_64_2x32" (U64.n(1)) -> U32.n(2), 0, unpack_2x!(32);
    Pack32_2x16 "pack_32_2x16" (U16.n(2)) -> U32.n(1), 0, pack_2x!(16);
    Unpack32_2x16 "unpack_32_2x16" (U32.n(1)) -> U16.n(2), 0, unpack_2x!(16);

    // Reductions.
    Fdot2 "fdot2" (F.n(2), F.n(2)) -> F.n(1), C, fdot!(), rounds 3;
    Fdot3 "fdot3" (F.n(3), F.n(3)) -> F.n(1), C, fdot!(), rounds 5;
    Fdot4 "fdot4" (F.n(4), F.n(4)) -> F.n(1), C, fdot!(), rounds 7;

    // Screen-space derivatives (fragment shaders).
    Fddx "fddx" (F) -> F, 0, derivative!(X, Default);
    Fddy "fddy" (F) -> F, 0, derivative!(Y, Default);
    FddxFine "fddx_fine" (F) -> F, 0, derivative!(X, Fine);
    FddyFine "fddy_fine" (F) -> F, 0, derivative!(Y, Fine);
    FddxCoarse "fddx_coarse" (F) -> F, 0, derivative!(X, Coarse);
    FddyCoarse "fddy_coarse" (F) -> F, 0, derivative!(Y, Coarse);
}

/// Saturate for the pack functions: NaN packs as 0.
fn fsat_num(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// `x · scale` as a 32-bit float multiplication rounds it, as GLSL computes the packing
/// functions (the `f64` product of two 32-bit floats is exact).
fn times_f32(x: f64, scale: f64) -> f64 {
    (x * scale) as f32 as f64
}

fn snorm_clamp(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(-1.0, 1.0) }
}

impl AluOp {
    /// Evaluates a per-component or vector opcode on constant components. `srcs[i]` holds the
    /// components source `i` reads (already swizzled); `dst` receives the destination's
    /// components. Returns `false` for opcodes that cannot be evaluated without invocation
    /// context (derivatives).
    pub fn eval(self, srcs: &[&[u64]], bits: Bits, dst: &mut [u64]) -> bool {
        match self.info().eval {
            Eval::Comp(CompEval { one: f, .. }) => {
                let mut comp = [0u64; 16];
                for (c, d) in dst.iter_mut().enumerate() {
                    for (slot, src) in comp.iter_mut().zip(srcs) {
                        *slot = src[c];
                    }
                    *d = f(&comp[..srcs.len()], bits);
                }
                true
            }
            Eval::Vector(f) => {
                f(srcs, bits, dst);
                true
            }
            Eval::Derivative { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every per-component opcode's lane loop gives, lane by lane, what its one-component
    /// function gives, for every source count the loop unrolls and the general one.
    #[test]
    fn lane_loops_compute_what_one_component_computes() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for op in AluOp::all() {
            let Eval::Comp(f) = op.info().eval else {
                continue;
            };
            let n = op.info().srcs.len();
            for bits in [32u8, 64] {
                let src_bits = vec![bits; n];
                let b = Bits {
                    src: &src_bits,
                    dst: bits,
                };
                let rows: Vec<Vec<u64>> = (0..n)
                    .map(|_| (0..40).map(|_| next() & mask(u64::MAX, bits)).collect())
                    .collect();
                let srcs: Vec<&[u64]> = rows.iter().map(|r| &r[..]).collect();
                let mut out = vec![0; 40];
                (f.lanes)(&srcs, b, &mut out);
                for (i, &o) in out.iter().enumerate() {
                    let comps: Vec<u64> = rows.iter().map(|r| r[i]).collect();
                    let one = (f.one)(&comps, b);
                    assert_eq!(o, one, "{op:?} at {bits} bits, lane {i}");
                }
            }
        }
    }

    /// The numeric columns the rule checker reads: roundings, underflow, pass-through.
    #[test]
    fn the_table_states_the_numeric_facts_of_opcodes() {
        let rounds = |op: AluOp| op.info().rounding_steps;
        assert_eq!(
            [
                AluOp::Fadd,
                AluOp::Ffma,
                AluOp::Flrp,
                AluOp::Fdot2,
                AluOp::Fdot4
            ]
            .map(rounds),
            [1, 2, 4, 3, 7]
        );
        assert!(AluOp::all().all(|op| rounds(op) >= 1));
        let underflow = |op: AluOp| op.info().may_underflow();
        assert!([AluOp::Fmul, AluOp::Fdiv, AluOp::Frcp, AluOp::Fexp2].map(underflow) == [true; 4]);
        assert!([AluOp::Fadd, AluOp::Fsub, AluOp::Fsqrt, AluOp::Imul].map(underflow) == [false; 4]);
        let bcsel = AluOp::Bcsel.info();
        assert!(!bcsel.passes_through(0) && bcsel.passes_through(1) && bcsel.passes_through(2));
        assert!(AluOp::Mov.info().passes_through(0) && AluOp::Vec4.info().passes_through(3));
        assert!(!AluOp::Fneg.info().passes_through(0) && !AluOp::F2f32.info().passes_through(0));
    }

    fn eval1(op: AluOp, srcs: &[u64], src_bits: &[u8], dst_bits: u8) -> u64 {
        let srcs: Vec<[u64; 1]> = srcs.iter().map(|&s| [s]).collect();
        let refs: Vec<&[u64]> = srcs.iter().map(|s| &s[..]).collect();
        let mut d = [0u64];
        assert!(op.eval(
            &refs,
            Bits {
                src: src_bits,
                dst: dst_bits
            },
            &mut d
        ));
        d[0]
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<_> = ALU_OPS.iter().map(|i| i.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALU_OPS.len());
        for info in ALU_OPS {
            assert_eq!(AluOp::from_name(info.name), Some(info.op));
            assert_eq!(info.op.info().name, info.name);
        }
    }

    #[test]
    fn table_shapes_are_consistent() {
        for info in ALU_OPS {
            assert!(
                !info.srcs.is_empty() && info.srcs.len() <= 16,
                "{}",
                info.name
            );
            // A per-component destination needs per-component sources and vice versa, except
            // that vector-reading opcodes have sized component counts everywhere.
            if info.dst.comps == 0 {
                assert!(info.srcs.iter().all(|s| s.comps == 0), "{}", info.name);
            }
            if info.is_commutative() {
                assert!(
                    info.srcs.len() >= 2 && info.srcs[0] == info.srcs[1],
                    "{}",
                    info.name
                );
            }
        }
    }

    #[test]
    fn unsized_bit_sizes_follow_the_operand_types() {
        assert_eq!(AluOp::Fadd.info().unsized_bit_sizes(), [16, 32, 64]);
        assert_eq!(AluOp::Flt.info().unsized_bit_sizes(), [16, 32, 64]);
        assert_eq!(AluOp::Iand.info().unsized_bit_sizes(), [1, 8, 16, 32, 64]);
        assert!(AluOp::Imul2x32To64.info().unsized_bit_sizes().is_empty());
    }

    #[test]
    fn integer_wrap_and_undefined_cases() {
        assert_eq!(
            eval1(AluOp::Iadd, &[0x7fff_ffff, 1], &[32, 32], 32),
            0x8000_0000
        );
        assert_eq!(
            eval1(AluOp::Idiv, &[0x8000_0000, 0xffff_ffff], &[32, 32], 32),
            0x8000_0000
        );
        assert_eq!(eval1(AluOp::Udiv, &[7, 0], &[32, 32], 32), 0);
        assert_eq!(eval1(AluOp::Ishl, &[1, 33], &[32, 32], 32), 2);
        assert_eq!(eval1(AluOp::Ishr, &[0x80, 1], &[8, 32], 8), 0xc0);
        assert_eq!(
            eval1(AluOp::Imod, &[mask(-7i64 as u64, 32), 3], &[32, 32], 32),
            2
        );
        assert_eq!(
            eval1(AluOp::Irem, &[mask(-7i64 as u64, 32), 3], &[32, 32], 32),
            mask(-1i64 as u64, 32)
        );
        assert_eq!(eval1(AluOp::UaddSat, &[0xf0, 0x20], &[8, 8], 8), 0xff);
        assert_eq!(eval1(AluOp::IaddSat, &[0x7f, 1], &[8, 8], 8), 0x7f);
        assert_eq!(eval1(AluOp::IsubSat, &[0x80, 1], &[8, 8], 8), 0x80);
        assert_eq!(
            eval1(AluOp::UmulHigh, &[0xffff_ffff, 0xffff_ffff], &[32, 32], 32),
            0xffff_fffe
        );
    }

    #[test]
    fn bitfields_at_64_bits_clamp_instead_of_overflowing() {
        let all = u64::MAX;
        assert_eq!(
            eval1(
                AluOp::BitfieldInsert,
                &[0x1234, all, 64, 8],
                &[64, 64, 32, 32],
                64
            ),
            0x1234
        );
        assert_eq!(
            eval1(AluOp::UbitfieldExtract, &[all, 64, 8], &[64, 32, 32], 64),
            0
        );
        assert_eq!(
            eval1(AluOp::IbitfieldExtract, &[all, 64, 8], &[64, 32, 32], 64),
            0
        );
        assert_eq!(
            eval1(AluOp::UbitfieldExtract, &[all, 0, 64], &[64, 32, 32], 64),
            all
        );
        assert_eq!(
            eval1(
                AluOp::BitfieldInsert,
                &[0, all, 60, 10],
                &[64, 64, 32, 32],
                64
            ),
            0xf << 60
        );
        assert_eq!(
            eval1(
                AluOp::IbitfieldExtract,
                &[1 << 63, 63, 1],
                &[64, 32, 32],
                64
            ),
            all
        );
    }

    #[test]
    fn wide_multiplies_carries_and_rotates() {
        let all = u64::MAX;
        assert_eq!(eval1(AluOp::UmulHigh, &[all, all], &[64, 64], 64), all - 1);
        assert_eq!(eval1(AluOp::ImulHigh, &[all, all], &[64, 64], 64), 0);
        assert_eq!(eval1(AluOp::ImulHigh, &[1 << 63, 2], &[64, 64], 64), all);
        assert_eq!(
            eval1(
                AluOp::Umul2x32To64,
                &[0xffff_ffff, 0xffff_ffff],
                &[32, 32],
                64
            ),
            0xffff_fffe_0000_0001
        );
        assert_eq!(
            eval1(AluOp::Imul2x32To64, &[0xffff_ffff, 2], &[32, 32], 64),
            (-2i64) as u64
        );
        assert_eq!(eval1(AluOp::UaddCarry, &[0xffff_ffff, 1], &[32, 32], 32), 1);
        assert_eq!(eval1(AluOp::UaddCarry, &[0xffff_fffe, 1], &[32, 32], 32), 0);
        assert_eq!(eval1(AluOp::UsubBorrow, &[1, 2], &[32, 32], 32), 1);
        assert_eq!(eval1(AluOp::UsubBorrow, &[2, 2], &[32, 32], 32), 0);
        assert_eq!(eval1(AluOp::Uror, &[3, 1], &[32, 32], 32), 0x8000_0001);
        assert_eq!(eval1(AluOp::Uror, &[0x12, 36], &[8, 32], 8), 0x21);
        assert_eq!(
            eval1(AluOp::Isign, &[mask(-5i64 as u64, 32)], &[32], 32),
            0xffff_ffff
        );
        assert_eq!(eval1(AluOp::Isign, &[0], &[32], 32), 0);
    }

    #[test]
    fn formula_opcodes_round_each_step_in_their_type() {
        let f = |x: f32| x.to_bits() as u64;
        // 16777215 / 0.1 rounds to an integer in f32, so the f32 formula gives exactly 0.
        assert_eq!(
            eval1(AluOp::Fmod, &[f(16777215.0), f(0.1)], &[32, 32], 32),
            f(0.0)
        );
        assert_eq!(
            eval1(AluOp::Frem, &[f(16777215.0), f(0.1)], &[32, 32], 32),
            f(0.0)
        );
        assert_eq!(
            eval1(AluOp::Fmod, &[f(-1.0), f(3.0)], &[32, 32], 32),
            f(2.0)
        );
        assert_eq!(
            eval1(AluOp::Frem, &[f(-1.0), f(3.0)], &[32, 32], 32),
            f(-1.0)
        );
        let (a, b, t) = (1.2874556f32, 4.822836f32, 0.97198635f32);
        assert_eq!(
            eval1(AluOp::Flrp, &[f(a), f(b), f(t)], &[32, 32, 32], 32),
            f(a * (1.0 - t) + b * t)
        );
        let x = [f(0.1), f(0.2), f(0.3)];
        let y = [f(0.7), f(0.11), f(0.13)];
        let mut d = [0u64];
        AluOp::Fdot3.eval(
            &[&x, &y],
            Bits {
                src: &[32, 32],
                dst: 32,
            },
            &mut d,
        );
        assert_eq!(d[0], f(0.1f32 * 0.7 + 0.2 * 0.11 + 0.3 * 0.13));
        assert_eq!(eval1(AluOp::Ffract, &[f(-0.25)], &[32], 32), f(0.75));
    }

    #[test]
    fn signs_saturation_and_exponents() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(eval1(AluOp::Fsign, &[f(-0.0)], &[32], 32), f(-0.0));
        assert_eq!(eval1(AluOp::Fsign, &[f(-3.0)], &[32], 32), f(-1.0));
        assert!(f32::from_bits(eval1(AluOp::Fsign, &[f(f32::NAN)], &[32], 32) as u32).is_nan());
        assert_eq!(eval1(AluOp::Fsat, &[f(-0.0)], &[32], 32), f(0.0));
        assert_eq!(eval1(AluOp::Fsat, &[f(7.0)], &[32], 32), f(1.0));
        assert_eq!(eval1(AluOp::FrexpSig, &[f(-12.0)], &[32], 32), f(-0.75));
        assert_eq!(eval1(AluOp::FrexpExp, &[f(-12.0)], &[32], 32), 4);
        assert_eq!(
            eval1(AluOp::FrexpExp, &[f(f32::from_bits(1))], &[32], 32),
            mask(-148i64 as u64, 32)
        );
        assert_eq!(eval1(AluOp::Fldexp, &[f(0.75), 4], &[32, 32], 32), f(12.0));
        assert_eq!(
            eval1(
                AluOp::Fldexp,
                &[f(1.0), mask(-149i64 as u64, 32)],
                &[32, 32],
                32
            ),
            1
        );
        assert_eq!(
            eval1(AluOp::Fldexp, &[f(1.0), 200], &[32, 32], 32),
            f(f32::INFINITY)
        );
        assert_eq!(
            eval1(AluOp::F2f16Rtz, &[f(1.0 + 3.0 * 2f32.powi(-12))], &[32], 16),
            0x3c00
        );
        assert_eq!(
            eval1(AluOp::F2f16, &[f(1.0 + 3.0 * 2f32.powi(-12))], &[32], 16),
            0x3c01
        );
        assert_eq!(eval1(AluOp::FquantizeF16, &[f(1e-5)], &[32], 32), f(0.0));
        assert_eq!(
            eval1(AluOp::FquantizeF16, &[f(0.1)], &[32], 32),
            f(0.099975586)
        );
    }

    #[test]
    fn norm_packing_rounds_and_clamps() {
        let f = |x: f32| x.to_bits() as u64;
        let mut d = [0u64];
        let bits = Bits {
            src: &[32],
            dst: 32,
        };
        AluOp::PackSnorm4x8.eval(&[&[f(-1.0), f(0.5), f(-2.0), f(f32::NAN)]], bits, &mut d);
        assert_eq!(d[0], 0x0081_4081);
        AluOp::PackUnorm2x16.eval(&[&[f(0.5), f(-1.0)]], bits, &mut d);
        assert_eq!(d[0], 0x0000_8000);
        // 0.9 · 65535 is 58981.498 exactly, but 58981.5 as a 32-bit product: 58982.
        AluOp::PackUnorm2x16.eval(&[&[f(0.9), f(0.0)]], bits, &mut d);
        assert_eq!(d[0], 58982);
        AluOp::PackSnorm2x16.eval(&[&[f(1.0), f(-0.5)]], bits, &mut d);
        assert_eq!(d[0], 0xc000_7fff);
        let mut four = [0u64; 4];
        AluOp::UnpackUnorm4x8.eval(&[&[0xff00_80ff]], bits, &mut four);
        assert_eq!(four, [f(1.0), f(128.0 / 255.0), f(0.0), f(1.0)]);
        AluOp::UnpackSnorm4x8.eval(&[&[0x8081_7f00]], bits, &mut four);
        assert_eq!(four, [f(0.0), f(1.0), f(-1.0), f(-1.0)]);
        let mut two = [0u64; 2];
        AluOp::UnpackHalf2x16.eval(&[&[0xc000_3c00]], bits, &mut two);
        assert_eq!(two, [f(1.0), f(-2.0)]);
    }

    #[test]
    fn bit_operations() {
        assert_eq!(eval1(AluOp::BitfieldReverse, &[1], &[32], 32), 0x8000_0000);
        assert_eq!(eval1(AluOp::UfindMsb, &[0], &[32], 32), 0xffff_ffff);
        assert_eq!(eval1(AluOp::IfindMsb, &[0xffff_fff0], &[32], 32), 3);
        assert_eq!(eval1(AluOp::FindLsb, &[8], &[32], 32), 3);
        assert_eq!(eval1(AluOp::BitCount, &[0xff], &[64], 32), 8);
        assert_eq!(
            eval1(AluOp::UbitfieldExtract, &[0xabcd, 4, 8], &[32, 32, 32], 32),
            0xbc
        );
        assert_eq!(
            eval1(AluOp::IbitfieldExtract, &[0x0f0, 4, 4], &[32, 32, 32], 32),
            0xffff_ffff
        );
        assert_eq!(
            eval1(
                AluOp::BitfieldInsert,
                &[0xffff, 0, 4, 8],
                &[32, 32, 32, 32],
                32
            ),
            0xf00f
        );
        assert_eq!(eval1(AluOp::Urol, &[0x8000_0001, 1], &[32, 32], 32), 3);
    }

    #[test]
    fn float_semantics() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(
            eval1(AluOp::Fadd, &[f(0.1), f(0.2)], &[32, 32], 32),
            f(0.1 + 0.2)
        );
        assert_eq!(eval1(AluOp::Fsat, &[f(f32::NAN)], &[32], 32), f(0.0));
        assert_eq!(eval1(AluOp::Flt, &[f(f32::NAN), f(1.0)], &[32, 32], 1), 0);
        assert_eq!(eval1(AluOp::Fltu, &[f(f32::NAN), f(1.0)], &[32, 32], 1), 1);
        assert_eq!(
            eval1(AluOp::Fneu, &[f(f32::NAN), f(f32::NAN)], &[32, 32], 1),
            1
        );
        assert_eq!(eval1(AluOp::Fneg, &[f(0.0)], &[32], 32), f(-0.0));
        assert_eq!(
            eval1(AluOp::F2i32, &[f(-1.5)], &[32], 32),
            mask(-1i64 as u64, 32)
        );
        assert_eq!(eval1(AluOp::F2f16, &[f(65520.0)], &[32], 16), 0x7c00);
        // A float32 denormal survives arithmetic.
        let tiny = f32::from_bits(1);
        assert_eq!(eval1(AluOp::Fadd, &[f(tiny), f(tiny)], &[32, 32], 32), 2);
        // ffma rounds once: (1 + 2^-23)^2 - 1 keeps the 2^-46 term.
        let x = 1.0f32 + f32::EPSILON;
        assert_eq!(
            eval1(AluOp::Ffma, &[f(x), f(x), f(-1.0)], &[32, 32, 32], 32),
            f(x.mul_add(x, -1.0))
        );
    }

    #[test]
    fn packing_matches_glsl() {
        let f = |x: f32| x.to_bits() as u64;
        let mut d = [0u64];
        AluOp::PackUnorm4x8.eval(
            &[&[f(0.0), f(1.0), f(0.5), f(2.0)]],
            Bits {
                src: &[32],
                dst: 32,
            },
            &mut d,
        );
        assert_eq!(d[0], 0xff80_ff00);
        AluOp::PackHalf2x16.eval(
            &[&[f(1.0), f(-2.0)]],
            Bits {
                src: &[32],
                dst: 32,
            },
            &mut d,
        );
        assert_eq!(d[0], 0xc000_3c00);
        let mut two = [0u64; 2];
        AluOp::UnpackSnorm2x16.eval(
            &[&[0x8000_7fff]],
            Bits {
                src: &[32],
                dst: 32,
            },
            &mut two,
        );
        assert_eq!(two, [f(1.0), f(-1.0)]);
        AluOp::Unpack64_2x32.eval(
            &[&[0x1234_5678_9abc_def0]],
            Bits {
                src: &[64],
                dst: 32,
            },
            &mut two,
        );
        assert_eq!(two, [0x9abc_def0, 0x1234_5678]);
    }
}
