//! `cse`: common-subexpression elimination of pure instructions.
//!
//! What: two pure instructions with the same operation, sources, indices and shape compute the
//! same value; the later one's users read the earlier one instead, when the earlier one's block
//! dominates the later one's (or it comes first in the same block), and the later one goes.
//! Blocks are visited in a preorder walk of the dominator tree, so a source merged early makes
//! its users equal too. Commutative ALU operations match with their two sources in either
//! order. Phis match only within one block.
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

use super::Transformations;
use super::manager::{Pass, PassContext};
use crate::cfg::DomTree;
use crate::ir::{
    Alu, BlockId, FpFlags, Function, IDENTITY_SWIZZLE, InstKind, Shader, ValType, Value, Variable,
    deref_chain,
};
use crate::uses::Uses;
use rustc_hash::FxHashMap;
use shrew_ops::{AluOp, IndexKind, Intrinsic};

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

/// Merges the duplicates of one function: a walk of the dominator tree in preorder with a
/// scoped table, so that the values in the table always dominate the block being visited and a
/// lookup is one hash probe.
fn eliminate(func: &mut Function, variables: &[Variable], transformations: &mut Transformations) {
    let dom = DomTree::new(func);
    let mut uses = Uses::build(func);
    // The blocks on the path from the entry to the one visited, with the keys each added.
    let mut scopes: Vec<(BlockId, Vec<Key>)> = Vec::new();
    let mut merged = Vec::new();
    let insts: Vec<(BlockId, Value)> = (dom.preorder().iter())
        .flat_map(|&b| func.cfg[b].insts.iter().map(move |&v| (b, v)))
        .collect();
    let mut available: FxHashMap<Key, Value> =
        FxHashMap::with_capacity_and_hasher(insts.len(), Default::default());
    transformations.each(insts, |(b, v)| {
        if scopes.last().is_none_or(|(top, _)| *top != b) {
            while let Some((top, keys)) = scopes.last()
                && !dom.dominates(*top, b)
            {
                for key in keys {
                    available.remove(key);
                }
                scopes.pop();
            }
            scopes.push((b, Vec::new()));
        }
        let key = key(func, variables, v)?;
        let Some(&kept) = available.get(&key) else {
            available.insert(key.clone(), v);
            scopes.last_mut().expect("the block's scope").1.push(key);
            return None;
        };
        uses.replace_all(func, v, kept);
        uses.forget_sources(func, v);
        merged.push(v);
        Some(move || format!("{v} is {kept}"))
    });
    // Removed from their blocks in one sweep per block: one at a time, a block of many
    // duplicates would be searched once per duplicate.
    let mut blocks: Vec<BlockId> = merged.iter().map(|&v| func.inst(v).block).collect();
    blocks.sort();
    blocks.dedup();
    for &v in &merged {
        func.insts[v.index()] = None;
    }
    for b in blocks {
        let insts = &func.insts;
        func.cfg[b].insts.retain(|i| insts[i.index()].is_some());
    }
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
