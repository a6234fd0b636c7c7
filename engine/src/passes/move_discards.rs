//! `move-discards`: moves a fragment shader's discards, with what computes their conditions, to
//! the top of the shader.
//!
//! What: the kills (`discard`, `discard_if`, `terminate`, `terminate_if`) at the top level of
//! the entry function — in no selection or loop — move to the start of the entry block,
//! together with their *dependency cone*: the instructions their condition is computed from.
//! The walk goes through the shader in order and stops moving at the first of:
//! - a derivative, or a texture lookup with implicit derivatives, unless the target says
//!   derivatives stay correct after a discard (a discarded invocation no longer feeds its
//!   quad's derivatives);
//! - a write to memory other invocations or the API can see (SSBOs, images, shared and global
//!   memory, atomics, barriers): a discarded invocation must not have made it;
//! - a call or a return (the kill would now also kill invocations that returned);
//! - a kill that cannot move (nested in a construct, or with a condition it cannot take along):
//!   so the kills keep their order.
//!
//! A cone can be taken along when it only holds ALU operations, constants, derefs, pure
//! intrinsics, loads of read-only variables (inputs, uniforms, UBOs, push constants) and
//! texture lookups without implicit derivatives (with them, when derivatives are safe).
//!
//! Why: shaders often decide to discard from little information but late (DXVK puts every
//! discard at the end, as D3D allows); once the kill is first, a discarded invocation does none
//! of the work, and a whole quad or SIMD thread that discards can stop at once.
//!
//! Invariants: a moved kill kills exactly the invocations it killed before, since nothing it
//! moved above had an effect those invocations could show; the cone is moved in its order, so
//! definitions still dominate uses; the kills' order is kept. Each moved kill is one
//! transformation.
//!
//! Options: [`MoveDiscards::derivatives_safe_after_discard`], from the target.

use super::manager::{Pass, PassContext};
use crate::cfg::{DomTree, innermost_constructs, reverse_post_order};
use crate::ir::{Function, InstKind, Mode, Shader, Stage, Terminator, Value, deref_chain};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::Eval;
use shrew_ops::{Intrinsic, MemClass};

/// The `move-discards` pass.
pub struct MoveDiscards {
    /// The target keeps derivatives correct after a discard (the discarded invocations keep
    /// running as helpers), so derivatives do not stop kills from moving.
    pub derivatives_safe_after_discard: bool,
}

impl Pass for MoveDiscards {
    fn name(&self) -> &str {
        "move-discards"
    }

    fn description(&self) -> &str {
        "moves top-level discards and their conditions to the top of fragment shaders"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        if shader.stage != Stage::Fragment {
            return Ok(false);
        }
        let plan = self.plan(shader);
        let func = shader.entry_function_mut();
        let top = func.entry;
        let mut at = 0;
        let mut transformations = context.budget.whole_shader();
        transformations.each(plan, |(kill, cone)| {
            let before = func.cfg[top].insts.clone();
            for v in cone.into_iter().chain([kill]) {
                let block = func.inst(v).block;
                let pos = func.cfg[block].insts.iter().position(|&i| i == v);
                if block == top && pos.is_some_and(|p| p < at) {
                    continue;
                }
                func.cfg[block].insts.retain(|&i| i != v);
                func.cfg[top].insts.insert(at, v);
                func.inst_mut(v).block = top;
                at += 1;
            }
            let name = func.inst(kill).kind.name();
            (func.cfg[top].insts != before).then_some(move || format!("{name} {kill}"))
        });
        Ok(transformations.made_any())
    }
}

impl MoveDiscards {
    /// The kills that move, in order, each with its cone in program order.
    fn plan(&self, shader: &Shader) -> Vec<(Value, Vec<Value>)> {
        let func = shader.entry_function();
        let dom = DomTree::new(func);
        let innermost = innermost_constructs(func, &dom);
        let order = reverse_post_order(func);
        let position: FxHashMap<Value, (usize, usize)> = order
            .iter()
            .enumerate()
            .flat_map(|(i, &b)| {
                func.cfg[b]
                    .insts
                    .iter()
                    .enumerate()
                    .map(move |(j, &v)| (v, (i, j)))
            })
            .collect();
        let mut plan = Vec::new();
        for &b in &order {
            let top_level = innermost.get(&b).copied().flatten().is_none();
            for &v in &func.cfg[b].insts {
                if is_kill(func, v) {
                    match self.cone(shader, func, v).filter(|_| top_level) {
                        Some(mut cone) => {
                            cone.sort_by_key(|c| position[c]);
                            plan.push((v, cone));
                        }
                        None => return plan,
                    }
                } else if self.stops(shader, func, v) {
                    return plan;
                }
            }
            if matches!(func.cfg[b].terminator, Some(Terminator::Return { .. })) {
                return plan;
            }
        }
        plan
    }

    /// The instructions a kill's condition is computed from, if all can move.
    fn cone(&self, shader: &Shader, func: &Function, kill: Value) -> Option<Vec<Value>> {
        let mut cone = Vec::new();
        let mut seen = FxHashSet::default();
        let mut work = func.inst_sources(kill);
        while let Some(v) = work.pop() {
            if !seen.insert(v) {
                continue;
            }
            if !self.can_move(shader, func, v) {
                return None;
            }
            cone.push(v);
            work.extend(func.inst_sources(v));
        }
        Some(cone)
    }

    /// Whether an instruction may be computed earlier, before anything the pass moves over.
    fn can_move(&self, shader: &Shader, func: &Function, v: Value) -> bool {
        match &func.inst(v).kind {
            InstKind::Alu(alu) => {
                self.derivatives_safe_after_discard
                    || !matches!(alu.op.info().eval, Eval::Derivative { .. })
            }
            InstKind::Const(_) | InstKind::Undef | InstKind::Deref(_) => true,
            InstKind::Intrinsic(i) if i.op == Intrinsic::LoadDeref => {
                matches!(
                    variable_mode(shader, func, i.srcs[0]),
                    Some(Mode::ShaderIn | Mode::Uniform | Mode::Ubo | Mode::PushConst)
                )
            }
            InstKind::Intrinsic(i) => i.op.info().can_reorder(),
            InstKind::Tex(tex) => {
                self.derivatives_safe_after_discard || !tex.op.uses_implicit_derivatives()
            }
            InstKind::Phi(_) | InstKind::Call { .. } => false,
        }
    }

    /// Whether a kill may not move above this instruction.
    fn stops(&self, shader: &Shader, func: &Function, v: Value) -> bool {
        match &func.inst(v).kind {
            InstKind::Alu(alu) => {
                !self.derivatives_safe_after_discard
                    && matches!(alu.op.info().eval, Eval::Derivative { .. })
            }
            InstKind::Tex(tex) => {
                !self.derivatives_safe_after_discard && tex.op.uses_implicit_derivatives()
            }
            InstKind::Call { .. } => true,
            InstKind::Intrinsic(i) => {
                let info = i.op.info();
                let external = MemClass::SSBO
                    .union(MemClass::IMAGE)
                    .union(MemClass::SHARED)
                    .union(MemClass::GLOBAL);
                info.is_barrier()
                    || info.is_control()
                    || info.writes.intersects(external)
                    || (info.writes.intersects(MemClass::VARIABLE)
                        && matches!(
                            variable_mode(shader, func, i.srcs[0]),
                            Some(Mode::Ssbo | Mode::Shared) | None
                        ))
            }
            InstKind::Const(_) | InstKind::Undef | InstKind::Phi(_) | InstKind::Deref(_) => false,
        }
    }
}

/// Whether an instruction is a kill this pass moves.
fn is_kill(func: &Function, v: Value) -> bool {
    matches!(
        &func.inst(v).kind,
        InstKind::Intrinsic(i) if matches!(
            i.op,
            Intrinsic::Discard | Intrinsic::DiscardIf | Intrinsic::Terminate | Intrinsic::TerminateIf
        )
    )
}

/// The mode of the variable a deref chain starts at.
fn variable_mode(shader: &Shader, func: &Function, deref: Value) -> Option<Mode> {
    let (var, _) = deref_chain(func, deref)?;
    shader.variables.get(var.0 as usize).map(|v| v.mode)
}
