//! Target cost models for extraction.
//!
//! A [`CostModel`] says what computing one node costs on a target, its sources excluded.
//! Extraction minimizes the sum over the nodes it keeps, each shared node counted once, so a
//! model describes issue cost (slots, instructions), not latency along a path. The backends
//! implement it from their instruction sets (`shrew_gen::GenCost`, `shrew_r600::R600Cost`);
//! [`UnitCost`] is the target-neutral model.

use super::{Facts, Node};
use shrew_ops::AluOp;

/// What a target charges for a node. Costs are small integers (about one per instruction slot)
/// and add up without overflow in any region extraction accepts.
pub trait CostModel: Send + Sync {
    /// The target's name, as `--target` takes it.
    fn name(&self) -> &'static str;

    /// The cost of computing `node`, whose value `facts` describes, its sources excluded.
    /// Leaves cost nothing: they are computed whatever the region becomes. A
    /// [`Node::Loaded`] costs the load instruction, which goes when nothing reads it. Memory
    /// nodes are never extracted, so their cost does not matter.
    fn cost(&self, node: &Node, facts: &Facts) -> u32;
}

/// Every ALU operation costs one per component, and a load or intrinsic one; moves, vector constructions,
/// swizzles and constants are free (register allocation and copy propagation absorb them).
#[derive(Debug, Default)]
pub struct UnitCost;

impl CostModel for UnitCost {
    fn name(&self) -> &'static str {
        "generic"
    }

    fn cost(&self, node: &Node, facts: &Facts) -> u32 {
        match node {
            Node::Alu { op, .. } if is_copy(*op) => 0,
            Node::Alu { .. } => facts.comps as u32,
            Node::Loaded { .. } | Node::Intrinsic { .. } => 1,
            _ => 0,
        }
    }
}

/// Moves and vector constructions: copies the register allocator usually coalesces.
pub fn is_copy(op: AluOp) -> bool {
    op == AluOp::Mov || op.is_vec()
}
