//! What operations cost on Gen9 at SIMD8, for e-graph extraction.
//!
//! The backend is scalar: an IR operation on `n` components becomes `n` instructions, so every
//! cost is per component. The unit is one ALU instruction's issue time (in the performance
//! model of [`crate::perf`]: 2 cycles of dispatch and FPU time at SIMD8), and the other figures
//! follow the same model: extended-math operations (rcp, rsq, sqrt, exp2, log2, sin, cos) keep
//! the EM unit twice as long, pow and fdiv four times, integer division about thirteen times.
//! Operations the backend lowers cost what their lowering does (`tests/tests/cost_models.rs`
//! checks each against what the backend emits). Source modifiers (neg, abs) and the saturate
//! destination modifier are free; so are moves, vector constructions and swizzles, which copy
//! propagation and register allocation absorb, and constants, which become immediates. A load
//! (a data-port send) counts four, and so does a UBO load; other pure intrinsics (system values,
//! inputs, push constants) come in the payload.

use shrew_engine::egraph::{CostModel, Facts, Node};
use shrew_engine::ops::{AluOp, Intrinsic};

/// The Gen9 cost model.
#[derive(Debug, Default)]
pub struct GenCost;

impl CostModel for GenCost {
    fn name(&self) -> &'static str {
        "gen9"
    }

    fn cost(&self, node: &Node, facts: &Facts) -> u32 {
        match node {
            Node::Alu { op, .. } => {
                // 64-bit operations issue as two halves.
                let width = if facts.bits == 64 { 2 } else { 1 };
                per_component(*op) * facts.comps as u32 * width
            }
            // The address payload's setup and the send, whose latency the scheduler can only
            // partly hide.
            Node::Loaded { .. }
            | Node::Intrinsic {
                op: Intrinsic::LoadUbo,
                ..
            } => 4,
            _ => 0,
        }
    }
}

/// The cost of one component of `op`.
fn per_component(op: AluOp) -> u32 {
    use AluOp::*;
    match op {
        Mov | Vec2 | Vec3 | Vec4 | Vec8 | Vec16 => 0,
        Fneg | Fabs | Ineg | Iabs | Fsat => 0,
        Frcp | Frsq | Fsqrt | Fexp2 | Flog2 | Fsin | Fcos => 2,
        Fpow | Fdiv => 4,
        Idiv | Udiv | Umod | Irem => 13,
        // The remainder, then a compare of its sign against the divisor's and a correction.
        Imod => 20,
        // `cmp` to set the flag, then `sel`.
        Bcsel | Isign => 2,
        // `cmp` with zero, `and` of the sign bit, a predicated `or` of 1.0.
        Fsign => 3,
        // What the backend pipeline lowers them to: `x - y * floor(x / y)` (the division
        // counting 4), `sin / cos`, and the polynomials of `lower-inverse-trig`.
        Fmod | Frem => 6,
        Ftan => 8,
        Fasin | Facos => 15,
        Fatan => 26,
        Fatan2 => 28,
        // Exponentials and logarithms of `algebraic-late`'s hyperbolic lowerings.
        Fsinh | Fcosh | Facosh => 8,
        Ftanh => 11,
        Fasinh => 12,
        Fatanh => 9,
        // Exponent arithmetic: three multiplies by clamped powers of two; the exponent field
        // read, denormals scaled first, specials selected.
        Fldexp => 17,
        FrexpSig => 11,
        FrexpExp => 13,
        // Rounding at the half's significand bit, with the subnormal, overflow and NaN cases.
        FquantizeF16 => 16,
        PackHalf2x16 => 40,
        // Per component: saturate or clamp, scale, round, convert, shift and combine.
        PackUnorm2x16 => 10,
        PackSnorm2x16 => 18,
        PackUnorm4x8 => 22,
        PackSnorm4x8 => 38,
        // Gen8 and later multiply 32-bit integers in one `mul`; the high half is a `mul` into
        // a qword, whose high dwords the user reads in place (a move only before a 3-source
        // user).
        Imul => 1,
        ImulHigh | UmulHigh => 1,
        // Saturating and carrying arithmetic, rotates and bit fields are lowered (no BFE, BFI,
        // ADDC or SUBB selected yet): shift, mask, compare and select sequences.
        IaddSat | IsubSat => 10,
        UaddSat | UsubSat | UaddCarry => 3,
        UsubBorrow => 2,
        Urol | Uror => 4,
        // `lzd` and a subtraction from 31; the signed form first clears the sign's copies
        // (`asr`, `xor`).
        UfindMsb => 2,
        IfindMsb => 4,
        BitfieldInsert => 13,
        UbitfieldExtract | IbitfieldExtract => 9,
        // `mul` then a `mad` per further component pair.
        Fdot2 => 2,
        Fdot3 => 3,
        Fdot4 => 4,
        _ => 1,
    }
}
