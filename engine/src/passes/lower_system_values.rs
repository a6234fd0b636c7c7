//! `lower-system-values`: compute shaders' derived system values become arithmetic of the
//! ones hardware threads are given.
//!
//! What: in compute shaders (whose workgroup size the IR fixes),
//! - `load_workgroup_size` becomes the constant size;
//! - `load_global_invocation_id` becomes `load_workgroup_id · size + load_local_invocation_id`;
//! - `load_local_invocation_index` becomes `x + size.x · (y + size.y · z)` of the local
//!   invocation ID.
//!
//! A dimension of size 1 has local ID 0, which constant folding then drops.
//!
//! Why: Gen's compute threads get each channel's local ID in their payload and the group's ID
//! in R0; R600's get both in registers. Neither has the global ID or the flat index, so both
//! are computed from those, as NIR's system-value lowering does, where the mid-end can still
//! share and fold the arithmetic.
//!
//! Invariants: the values are the same as the interpreter's definitions (GLSL's and
//! SPIR-V's); other stages are left alone. Each lowered instruction is one transformation.
//!
//! Options: none.

use super::lower_each;
use super::manager::{Pass, PassContext};
use crate::ir::{Builder, Cursor, FuncId, InstKind, Shader, Stage, Value};
use crate::ops::{AluOp, Intrinsic};

pub struct LowerSystemValues;

impl Pass for LowerSystemValues {
    fn name(&self) -> &str {
        "lower-system-values"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "computes the global invocation ID, the local invocation index and the workgroup size from the local and workgroup IDs"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        if shader.stage != Stage::Compute {
            return Ok(false);
        }
        Ok(lower_each(
            shader,
            context,
            |_, inst| derived(&inst.kind).is_some(),
            lower,
        ))
    }
}

/// The system value `kind` loads, if this pass lowers it.
fn derived(kind: &InstKind) -> Option<Intrinsic> {
    match kind {
        InstKind::Intrinsic(ii)
            if matches!(
                ii.op,
                Intrinsic::LoadWorkgroupSize
                    | Intrinsic::LoadGlobalInvocationId
                    | Intrinsic::LoadLocalInvocationIndex
            ) =>
        {
            Some(ii.op)
        }
        _ => None,
    }
}

/// Replaces `v` by its computation, built just before it.
fn lower(shader: &mut Shader, func: FuncId, v: Value) {
    let size = shader.workgroup_size;
    let function = &shader.functions[func.0 as usize];
    let inst = function.inst(v);
    let block = inst.block;
    let op = derived(&inst.kind).expect("only derived system values are lowered");
    let pos = function.cfg[block].insts.iter().position(|&i| i == v);
    let first_new = function.next_value();
    let mut b = Builder::new(shader, func);
    b.cursor = Cursor { block, pos };
    // A dimension of size 1 has local ID 0.
    let local_ids = |b: &mut Builder| {
        let local = b.intrinsic(Intrinsic::LoadLocalInvocationId, &[], None, &[]);
        [0, 1, 2].map(|c| match size[c as usize] {
            1 => b.imm_u32(0),
            _ => b.channel(local, c),
        })
    };
    let result = match op {
        Intrinsic::LoadWorkgroupSize => b.imm(32, &size.map(u64::from)),
        Intrinsic::LoadGlobalInvocationId => {
            let group = b.intrinsic(Intrinsic::LoadWorkgroupId, &[], None, &[]);
            let local = local_ids(&mut b);
            let ids = [0, 1, 2].map(|c| {
                let group = b.channel(group, c as u8);
                let size = b.imm_u32(size[c]);
                let first = b.alu(AluOp::Imul, &[group, size]);
                b.alu(AluOp::Iadd, &[first, local[c]])
            });
            b.vec(&ids)
        }
        _ => {
            let [x, y, z] = local_ids(&mut b);
            let (size_x, size_y) = (b.imm_u32(size[0]), b.imm_u32(size[1]));
            let plane = b.alu(AluOp::Imul, &[z, size_y]);
            let row = b.alu(AluOp::Iadd, &[plane, y]);
            let rows = b.alu(AluOp::Imul, &[row, size_x]);
            b.alu(AluOp::Iadd, &[rows, x])
        }
    };
    shader.functions[func.0 as usize].replace_inst(v, result, first_new);
}
