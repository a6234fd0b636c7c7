//! `cse`: common-subexpression elimination of pure instructions.
//!
//! What: two pure instructions with the same operation, sources, indices and shape compute the
//! same value; the later one's users read the earlier one instead, when the earlier one's block
//! dominates the later one's (or it comes first in the same block), and the later one goes.
//! Blocks are visited in reverse post-order, so a source merged early makes its users equal
//! too. Commutative ALU operations match with their two sources in either order. Phis match
//! only within one block.
//!
//! Pure: ALU operations, constants, derefs, texture instructions, intrinsics the opcode table
//! marks both reorderable and eliminable, and loads of variables the shader cannot write
//! (inputs, uniforms, UBOs, push constants, constant data), unless they are volatile. Calls and
//! everything with an effect or reading memory that can change are never merged (memory loads
//! are the memory-token pass's).
//!
//! Why: front ends recompute addresses, constants and conversions freely, and rewrites create
//! duplicates; one value is one register later.
//!
//! Invariants: the kept instruction dominates every use it takes over, so the IR stays in SSA
//! form. Each merge is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use super::{Transformations, insts_in_reverse_post_order};
use crate::cfg::DomTree;
use crate::ir::{
    Alu, BlockId, FpFlags, Function, IDENTITY_SWIZZLE, InstKind, Shader, ValType, Value, Variable,
    deref_chain,
};
use crate::uses::Uses;
use shrew_ops::{AluOp, IndexKind, Intrinsic};
use std::collections::HashMap;

/// The `cse` pass.
pub struct Cse;

impl Pass for Cse {
    fn name(&self) -> &str {
        "cse"
    }

    fn description(&self) -> &str {
        "merges pure instructions that compute the same value (value numbering under dominance)"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                eliminate(&mut shader.functions[f], &shader.variables, transformations);
            }))
    }
}

/// What identifies the value of a pure instruction: its operation with canonically ordered
/// sources, its shape, and for phis their block.
type Key = (InstKind, Option<ValType>, Option<BlockId>);

fn key(func: &Function, variables: &[Variable], v: Value) -> Option<Key> {
    let inst = func.inst(v);
    let pure = match &inst.kind {
        InstKind::Alu(_) | InstKind::Const(_) | InstKind::Deref(_) | InstKind::Tex(_) => true,
        InstKind::Phi(_) => true,
        InstKind::Intrinsic(i) if i.op == Intrinsic::LoadDeref => {
            let volatile = i
                .index(IndexKind::Access)
                .is_some_and(|access| access & shrew_ops::ACCESS_VOLATILE != 0);
            let read_only = deref_chain(func, i.srcs[0])
                .and_then(|(var, _)| variables.get(var.0 as usize))
                .is_some_and(|var| !var.mode.is_writable());
            read_only && !volatile
        }
        InstKind::Intrinsic(i) => i.is_pure(),
        InstKind::Undef | InstKind::Call { .. } => false,
    };
    if !pure {
        return None;
    }
    let mut kind = inst.kind.clone();
    // A copy is its source through a swizzle however it is spelled: `vec2 %a.y, %a.x` and
    // `mov %a.yx` are one value.
    if let InstKind::Alu(alu) = &mut kind
        && let Some(src) = alu.as_copy()
    {
        *alu = Alu {
            op: AluOp::Mov,
            srcs: vec![src],
            exact: false,
            fp: FpFlags::default(),
        };
    }
    // Only the components an instruction reads are meaningful: the others must not tell two
    // equal instructions apart.
    if let (InstKind::Alu(alu), Some(def)) = (&mut kind, inst.def) {
        for i in 0..alu.srcs.len() {
            let read = alu.src_components(i, def) as usize;
            alu.srcs[i].swizzle[read..].copy_from_slice(&IDENTITY_SWIZZLE[read..]);
        }
    }
    if let InstKind::Alu(alu) = &mut kind
        && alu.op.info().is_commutative()
        && alu.srcs.len() >= 2
        && (alu.srcs[1].value, alu.srcs[1].swizzle) < (alu.srcs[0].value, alu.srcs[0].swizzle)
    {
        alu.srcs.swap(0, 1);
    }
    let block = matches!(kind, InstKind::Phi(_)).then_some(inst.block);
    Some((kind, inst.def, block))
}

/// Merges the duplicates of one function.
fn eliminate(func: &mut Function, variables: &[Variable], transformations: &mut Transformations) {
    let dom = DomTree::new(func);
    let mut uses = Uses::build(func);
    let mut seen: HashMap<Key, Vec<Value>> = HashMap::new();
    transformations.each(insts_in_reverse_post_order(func), |v| {
        let b = func.inst(v).block;
        let candidates = seen.entry(key(func, variables, v)?).or_default();
        let earlier = candidates
            .iter()
            .copied()
            .find(|&c| dom.dominates(func.inst(c).block, b));
        let Some(kept) = earlier else {
            candidates.push(v);
            return None;
        };
        uses.replace_all(func, v, kept);
        uses.remove_inst(func, v);
        Some(move || format!("{v} is {kept}"))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AluSrc, Builder, FuncId, Stage};

    /// Two reads of `v.x` whose swizzles differ only in components the instruction does not
    /// read are one value.
    #[test]
    fn unread_swizzle_components_do_not_keep_equal_instructions_apart() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let v = b.imm(32, &[1, 2, 3]);
        let identity = AluSrc::swizzled(v, &[0]);
        let mut other = identity;
        other.swizzle[1..4].copy_from_slice(&[2, 2, 2]);
        let first = b.alu_swizzled(AluOp::Ineg, vec![identity], 1);
        let second = b.alu_swizzled(AluOp::Ineg, vec![other], 1);
        let sum = b.alu(AluOp::Iadd, &[first, second]);
        b.ret(None);
        let func = shader.entry_function();
        assert_eq!(key(func, &[], first), key(func, &[], second));
        assert_ne!(key(func, &[], first), key(func, &[], sum));
    }

    /// A `vecN` of components of one value is a `mov` of that value through a swizzle.
    #[test]
    fn copies_spelled_as_vectors_and_moves_are_one_value() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let v = b.imm(32, &[1, 2, 3]);
        let swapped = b.alu_swizzled(AluOp::Mov, vec![AluSrc::swizzled(v, &[1, 0])], 2);
        let parts = [AluSrc::swizzled(v, &[1]), AluSrc::swizzled(v, &[0])];
        let built = b.alu_swizzled(AluOp::Vec2, parts.to_vec(), 2);
        let other = b.alu_swizzled(AluOp::Vec2, vec![parts[1], parts[0]], 2);
        b.ret(None);
        let func = shader.entry_function();
        assert_eq!(key(func, &[], swapped), key(func, &[], built));
        assert_ne!(key(func, &[], swapped), key(func, &[], other));
    }
}
