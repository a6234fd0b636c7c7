//! What operations cost on Evergreen (VLIW5), for e-graph extraction.
//!
//! The unit is one slot of an ALU instruction group. Operations only the trans slot runs
//! (RECIP, RECIPSQRT, SQRT, EXP, LOG, SIN, COS, MULLO_INT, INT_TO_FLT, UINT_TO_FLT,
//! FLT_TO_UINT) count two: a group has one trans slot against four vector slots, so they pack
//! worst. A dot product is one DOT4 over the four vector slots. Operations the hardware lacks
//! cost what their lowering does, slots and literal dwords (`tests/tests/cost_models.rs` checks
//! each against what the backend emits): `fpow` is LOG, MUL, EXP; `fdiv` is RECIP and MUL. Source modifiers (neg, abs) and the
//! clamp output modifier are free. A constant costs a literal dword per distinct component value
//! (components with one value share a literal), except the inline constants 0, 1, -1, 1.0 and
//! 0.5, which take no literal slot. A load (a fetch, often
//! with a clause of its own) counts four; a UBO load one (usually a kcache read, sometimes a
//! fetch); other pure intrinsics (system values, inputs) come in registers.

use shrew_engine::egraph::{CostModel, Facts, Node};
use shrew_engine::ops::{AluOp, Intrinsic};

/// The Evergreen cost model.
#[derive(Debug, Default)]
pub struct R600Cost;

impl CostModel for R600Cost {
    fn name(&self) -> &'static str {
        "evergreen"
    }

    fn cost(&self, node: &Node, facts: &Facts) -> u32 {
        match node {
            Node::Const { values, bits } => {
                // Components with the same value share one literal of the group.
                let mut distinct: Vec<u64> = values.to_vec();
                distinct.sort_unstable();
                distinct.dedup();
                distinct.iter().map(|&v| literal_dwords(v, *bits)).sum()
            }
            Node::Alu { op, .. } => {
                let width = if facts.bits == 64 { 2 } else { 1 };
                per_component(*op) * facts.comps as u32 * width
            }
            // A fetch instruction, in a TEX or VTX clause of its own unless it joins another.
            Node::Loaded { .. } => 4,
            // A kcache read, free in the ALU group, unless the offset is dynamic (a VFETCH).
            Node::Intrinsic {
                op: Intrinsic::LoadUbo,
                ..
            } => 1,
            _ => 0,
        }
    }
}

/// The literal dwords one constant component needs.
fn literal_dwords(raw: u64, bits: u8) -> u32 {
    const INLINE: [u32; 5] = [0, 1, 0xffff_ffff, 0x3f80_0000, 0x3f00_0000];
    match bits {
        64 => 2,
        32 if INLINE.contains(&(raw as u32)) => 0,
        _ if raw == 0 || raw == 1 => 0,
        _ => 1,
    }
}

/// The cost of one component of `op`.
fn per_component(op: AluOp) -> u32 {
    use AluOp::*;
    match op {
        Mov | Vec2 | Vec3 | Vec4 | Vec8 | Vec16 => 0,
        Fneg | Fabs | Fsat => 0,
        Frcp | Frsq | Fsqrt | Fexp2 | Flog2 => 2,
        Imul | ImulHigh | UmulHigh | I2f32 | U2f32 => 2,
        // The argument scaled to turns (MULADD by 1/2π, FRACT, ADD -0.5: two literals), then
        // the trans-slot SIN or COS.
        Fsin | Fcos => 7,
        // RECIP then MUL; LOG, MUL, EXP.
        Fdiv => 3,
        Fpow => 5,
        // No integer divider: a reciprocal and a correction sequence, with their literals.
        Idiv => 38,
        Udiv => 30,
        Irem => 35,
        Imod => 41,
        Umod => 28,
        // SUB_INT from zero; MAX_INT of the value and its negation.
        Ineg => 1,
        Iabs | Isign => 2,
        // AND_INT with the literal 1.0.
        B2f32 => 2,
        // TRUNC, then FLT_TO_INT (a vector slot) or FLT_TO_UINT (the trans slot).
        F2i32 => 2,
        F2u32 => 3,
        Fdot2 | Fdot3 | Fdot4 => 4,
        // What the backend lowers them to: SETGT twice and two CNDE_INT with a literal -1.0;
        // two MULADDs; `x - y * floor(x / y)` (the RECIP counting 2); `sin / cos`; the
        // polynomials of `lower-inverse-trig`.
        Fsign => 5,
        Flrp => 3,
        Fmod | Frem => 5,
        Ftan => 15,
        // Exponentials and logarithms of `algebraic-late`'s hyperbolic lowerings, with their
        // literals.
        Fsinh | Fcosh => 10,
        Ftanh | Fasinh => 14,
        Facosh | Fatanh => 9,
        // Exponent arithmetic: three multiplies by clamped powers of two; the exponent field
        // read, denormals scaled first, specials selected.
        Fldexp => 26,
        FrexpSig => 14,
        FrexpExp => 19,
        // Rounding at the half's significand bit, with the subnormal, overflow and NaN cases.
        FquantizeF16 => 22,
        PackHalf2x16 => 51,
        // Per component: saturate or clamp, scale, round, convert, shift and combine.
        PackUnorm2x16 => 16,
        PackSnorm2x16 => 24,
        PackUnorm4x8 => 34,
        PackSnorm4x8 => 50,
        // FFBH, a subtraction from 31 and a select keeping -1.
        UfindMsb | IfindMsb => 4,
        Fasin => 19,
        Facos => 20,
        Fatan | Fatan2 => 28,
        // Saturating and carrying arithmetic, rotates and bit fields: compare-and-select
        // sequences, with their literals.
        IaddSat => 11,
        IsubSat => 10,
        UaddSat | UsubSat | UaddCarry => 3,
        UsubBorrow => 2,
        Urol | Uror => 4,
        BitfieldInsert => 16,
        UbitfieldExtract => 9,
        IbitfieldExtract => 12,
        _ => 1,
    }
}
