//! `if-convert`: small if/else selections of plain arithmetic become straight-line code with
//! `bcsel`.
//!
//! What: a selection header whose arms are each a single block (or missing: a branch straight
//! to the merge block) that no other header names as its merge or continue block, holding only side-effect-free ALU code with no derivative, derefs, and
//! loads of read-only memory at constant in-bounds addresses (see `is_invariant_load`;
//! Mesa's peephole select takes the same loads), and whose merge block is reached from the
//! arms alone, is flattened: the arms' instructions move to the end of the header, each phi of
//! the merge block becomes `bcsel cond, then, else` there, and the header jumps to the merge
//! block. It is done when the arms' ALU instructions and loads plus one select per phi are at
//! most the target's [`CostOptions::if_convert_max_alu`]. The merge
//! block then joins the header when nothing else needs it. Inner selections are flattened
//! first (blocks are visited in post-order), so nests of small ifs flatten in one run. A merge
//! block too large for any enclosing arm joins at the end of the run instead, outermost first,
//! so that a chain of sibling selections (each one's merge block the next one's header) costs
//! time linear in the chain.
//!
//! Why: a branch costs a jump, divergence bookkeeping and scheduling freedom; on SIMD hardware
//! both arms often run anyway. Straight-line code lets CSE and the algebraic rules see across
//! the arms, and the backends turn the selects into predicated moves (Gen `sel`, R600 `CNDE`).
//!
//! Invariants: every invocation computes the same values; only instructions that cannot trap
//! run where they did not before (ALU operations on any input give some value, as in the
//! interpreter; the loads read memory nothing writes, inside their variables). Each flattened selection is one transformation.
//!
//! Options: [`CostOptions::if_convert_max_alu`], from the target.

use super::manager::{Pass, PassContext};
use crate::cfg::post_order;
use crate::ir::{
    Alu, AluSrc, BlockId, Deref, Edge, FpFlags, Function, InstKind, IntrinsicInst, Mode, Shader,
    Structure, StructureTargets, Terminator, Value, deref_chain,
};
use crate::ops::AluOp;
use crate::rewrite::CostOptions;
use rustc_hash::FxHashMap;
use shrew_ops::{Eval, Intrinsic};

/// The `if-convert` pass.
pub struct IfConvert {
    pub costs: CostOptions,
}

impl Pass for IfConvert {
    fn name(&self) -> &str {
        "if-convert"
    }

    fn description(&self) -> &str {
        "flattens small selections of plain arithmetic into bcsel, within the target's cost"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let mut named = shader.functions[f].structure_targets();
                let mut joins = Joins::default();
                let small = 4 * self.costs.if_convert_max_alu as usize + 32;
                transformations.each(post_order(&shader.functions[f]), |header| {
                    let function = &shader.functions[f];
                    let shape = self.flattenable(shader, function, header, &named)?;
                    let func = &mut shader.functions[f];
                    flatten(func, header, shape, &mut named, &mut joins, small);
                    Some(move || format!("the selection of b{}", header.index()))
                });
                joins.finish(&mut shader.functions[f], &named);
            }))
    }
}

/// A selection to flatten: its condition, merge block, and the block that ends each arm (the
/// header itself for a missing arm).
struct Diamond {
    cond: Value,
    merge: BlockId,
    then_end: BlockId,
    else_end: BlockId,
}

impl IfConvert {
    /// The selection of `header` in `func` (a function of `shader`) if it can be flattened;
    /// `named` are the blocks headers name.
    fn flattenable(
        &self,
        shader: &Shader,
        func: &Function,
        header: BlockId,
        named: &StructureTargets,
    ) -> Option<Diamond> {
        let block = &func.cfg[header];
        let (Some(Structure::Selection { merge }), Some(Terminator::Branch { cond })) =
            (block.structure, &block.terminator)
        else {
            return None;
        };
        let mut alu_count = 0;
        // A block another header names as its merge or continue block must stay.
        let mut arm = |edge| -> Option<BlockId> {
            let target = func.successor(header, edge)?;
            if target == merge {
                return Some(header);
            }
            let arm = &func.cfg[target];
            let ends_at_merge = arm.terminator == Some(Terminator::Jump)
                && func.successor(target, Edge::Jump) == Some(merge);
            if !ends_at_merge
                || arm.structure.is_some()
                || named.contains(target)
                || func.predecessors(target) != [header]
            {
                return None;
            }
            for &v in &arm.insts {
                match &func.inst(v).kind {
                    InstKind::Alu(alu)
                        if !matches!(alu.op.info().eval, Eval::Derivative { .. }) =>
                    {
                        alu_count += 1
                    }
                    InstKind::Intrinsic(i) if is_invariant_load(shader, func, i) => alu_count += 1,
                    InstKind::Const(_) | InstKind::Undef | InstKind::Deref(_) => {}
                    _ => return None,
                }
            }
            Some(target)
        };
        let then_end = arm(Edge::True)?;
        let else_end = arm(Edge::False)?;
        if then_end == else_end {
            return None;
        }
        let mut preds = func.predecessors(merge);
        preds.sort();
        let mut expected = vec![then_end, else_end];
        expected.sort();
        if preds != expected {
            return None;
        }
        let phis = leading_phis(func, merge).len();
        (alu_count + phis <= self.costs.if_convert_max_alu as usize).then_some(Diamond {
            cond: *cond,
            merge,
            then_end,
            else_end,
        })
    }
}

/// Whether `load` reads memory no invocation writes, within bounds whatever path led to it: a
/// `load_deref` of a read-only variable (input, uniform, UBO, push constant, constant) at
/// constant indices inside the arrays, or a lowered load of those at constant offsets. Such a
/// load gives the same value wherever it runs, so it may run where it did not.
fn is_invariant_load(shader: &Shader, func: &Function, load: &IntrinsicInst) -> bool {
    let constant = |v: Value| matches!(func.inst(v).kind, InstKind::Const(_));
    match load.op {
        Intrinsic::LoadDeref => {
            let Some((var, steps)) = deref_chain(func, load.srcs[0]) else {
                return false;
            };
            let variable = shader.variable(var);
            if !matches!(
                variable.mode,
                Mode::ShaderIn | Mode::Uniform | Mode::Ubo | Mode::PushConst | Mode::Constant
            ) {
                return false;
            }
            // Walk the chain, checking each array index against its length.
            let mut ty = variable.ty.clone();
            for &step in &steps {
                let InstKind::Deref(deref) = &func.inst(step).kind else {
                    return false;
                };
                if let Deref::Array { index, .. } = deref {
                    let InstKind::Const(values) = &func.inst(*index).kind else {
                        return false;
                    };
                    if ty.element_count().is_none_or(|len| values[0] >= len as u64) {
                        return false;
                    }
                }
                let Some(next) = shader.deref_step_type(&ty, deref) else {
                    return false;
                };
                ty = next;
            }
            true
        }
        Intrinsic::LoadInput
        | Intrinsic::LoadUniform
        | Intrinsic::LoadPushConstant
        | Intrinsic::LoadConstant
        | Intrinsic::LoadUbo => load.srcs.iter().all(|&s| constant(s)),
        _ => false,
    }
}

/// The phis of a block (they come first).
fn leading_phis(func: &Function, b: BlockId) -> Vec<Value> {
    (func.cfg[b].insts.iter().copied())
        .take_while(|&v| matches!(func.inst(v).kind, InstKind::Phi(_)))
        .collect()
}

/// Merge blocks that join their flattened headers at the end of the run: merging a large
/// block into each header of a chain of selections (each one's merge block the next one's
/// header, as a `switch` makes) as it is flattened would move the chain's tail once per header.
#[derive(Default)]
struct Joins {
    /// (header, merge block) pairs, in the order the headers were flattened.
    deferred: Vec<(BlockId, BlockId)>,
    /// The block each merged block joined.
    into: FxHashMap<BlockId, BlockId>,
}

impl Joins {
    /// Where `b` is now.
    fn find(&self, mut b: BlockId) -> BlockId {
        while let Some(&a) = self.into.get(&b) {
            b = a;
        }
        b
    }

    fn merge(&mut self, func: &mut Function, header: BlockId, merge: BlockId) {
        func.merge_into(header, merge);
        self.into.insert(merge, header);
    }

    /// Joins the deferred merge blocks, outermost header first, so that each join moves only
    /// the merge block's own instructions.
    fn finish(mut self, func: &mut Function, named: &StructureTargets) {
        for (header, merge) in std::mem::take(&mut self.deferred).into_iter().rev() {
            let header = self.find(header);
            if func.cfg.contains_node(merge)
                && func.predecessors(merge) == [header]
                && func.successor(header, Edge::Jump) == Some(merge)
                && !named.contains(merge)
            {
                self.merge(func, header, merge);
            }
        }
    }
}

/// Moves the arms into the header and turns the merge block's phis into selects. The merge
/// block, now reached from the header alone, joins it, so that an enclosing selection sees a
/// one-block arm: at once when it is `small` (an arm an enclosing selection can flatten is
/// small), else at the end of the run (see [`Joins`]).
fn flatten(
    func: &mut Function,
    header: BlockId,
    d: Diamond,
    named: &mut StructureTargets,
    joins: &mut Joins,
    small: usize,
) {
    for arm in [d.then_end, d.else_end] {
        if arm == header {
            continue;
        }
        let insts = std::mem::take(&mut func.cfg[arm].insts);
        for &v in &insts {
            func.inst_mut(v).block = header;
        }
        func.cfg[header].insts.extend(insts);
    }
    let phis = leading_phis(func, d.merge);
    func.cfg[d.merge].insts.drain(..phis.len());
    for phi in phis {
        let InstKind::Phi(srcs) = &func.inst(phi).kind else {
            continue;
        };
        let from = |end: BlockId| srcs.iter().find(|(p, _)| *p == end).map(|&(_, v)| v);
        let (Some(on_true), Some(on_false)) = (from(d.then_end), from(d.else_end)) else {
            continue;
        };
        // The phi's instruction becomes the select, so its id and users stay.
        let inst = func.inst_mut(phi);
        inst.kind = InstKind::Alu(Alu {
            op: AluOp::Bcsel,
            srcs: vec![
                AluSrc::swizzled(d.cond, &[0; 16]),
                AluSrc::new(on_true),
                AluSrc::new(on_false),
            ],
            exact: false,
            fp: FpFlags::default(),
        });
        inst.block = header;
        func.cfg[header].insts.push(phi);
    }
    for arm in [d.then_end, d.else_end] {
        if arm != header {
            func.cfg.remove_node(arm);
        }
    }
    func.cfg[header].structure = None;
    named.forget(Structure::Selection { merge: d.merge });
    func.set_jump(header, d.merge);
    if func.predecessors(d.merge) == [header] && !named.contains(d.merge) {
        if func.cfg[d.merge].insts.len() <= small {
            joins.merge(func, header, d.merge);
        } else {
            joins.deferred.push((header, d.merge));
        }
    }
}
