//! `lower-block-indices`: an access to an array of UBOs, SSBOs or images at an index known only
//! at run time becomes the access at each constant index, under a branch on the index.
//!
//! What: a `load_deref`, `store_deref`, `deref_atomic` or `deref_atomic_swap` whose deref chain
//! starts at an array of blocks (`buffer B { ... } b[n]`), or an image access (`image_deref_*`)
//! whose chain starts at an array of images (`image2D im[n][m]`), and indexes it by a value
//! that is not a constant becomes, for each element k of the first array so indexed,
//! `if (index == k) { the access of element k }` (the rest of the chain rebuilt under each,
//! and lowered in turn while it indexes at run time); a load's or an atomic's users read the
//! value of the element indexed, picked from the branches' results by `bcsel` (element 0's
//! when the index is out of bounds, which GLSL leaves undefined).
//!
//! Why: each block or image of the array is a resource of its own binding, and neither backend
//! reads or writes a resource at a run-time binding (Gen's surface messages and R600's RAT and
//! fetch instructions name their buffer in the instruction). Branches rather than selects: only the
//! block indexed is touched, as the original did: a store or atomic elsewhere would change
//! what other invocations see, and the other bindings may have no buffer.
//!
//! Invariants: with the index in bounds, exactly the access of the original runs, with the
//! same operands and indices (write mask, atomic operation, access flags). Each lowered access
//! is one transformation.
//!
//! Options: [`MAX_BLOCKS`], the most elements (over all its dimensions) an array lowered may
//! have (a larger one keeps its access, which the backend reports).

use super::manager::{Pass, PassContext};
use crate::ir::{
    Builder, Cursor, Deref, FuncId, Function, InstKind, IntrinsicInst, Mode, Shader, Type, Value,
    deref_chain,
};
use crate::ops::AluOp;
use shrew_ops::Intrinsic;

/// The most blocks or images an array may have for its accesses to be lowered.
pub const MAX_BLOCKS: u32 = 64;

/// The deepest arrays of arrays lowered: each round lowers one run-time index of a chain.
const MAX_DEPTH: usize = 8;

/// The `lower-block-indices` pass.
pub struct LowerBlockIndices;

impl Pass for LowerBlockIndices {
    fn name(&self) -> &str {
        "lower-block-indices"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "turns accesses to arrays of UBOs, SSBOs and images at run-time indices into branches"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                // The accesses a round makes index the next arrays of their chains.
                for _ in 0..MAX_DEPTH {
                    let function = &shader.functions[f];
                    let targets: Vec<(Value, BlockArray)> = (function.all_insts())
                        .filter_map(|v| Some((v, indexed_block(shader, function, v)?)))
                        .collect();
                    if targets.is_empty() {
                        break;
                    }
                    transformations.each(targets, |(v, array)| {
                        lower(shader, FuncId(f as u32), v, &array);
                        Some(move || format!("%{}, {} elements", v.index(), array.blocks))
                    });
                }
            }))
    }
}

/// The array of blocks or images an access indexes at run time, and the chain below it.
struct BlockArray {
    /// The deref of the array, and the run-time index into it.
    parent: Value,
    index: Value,
    /// The chain's steps after the index, to rebuild under each element.
    below: Vec<Deref>,
    blocks: u32,
}

/// The array of UBOs, SSBOs or images access `v` indexes at a run-time index, if it does:
/// the first array of its chain it so indexes.
fn indexed_block(shader: &Shader, function: &Function, v: Value) -> Option<BlockArray> {
    let InstKind::Intrinsic(ii) = &function.inst(v).kind else {
        return None;
    };
    let buffer_accesses = [
        Intrinsic::LoadDeref,
        Intrinsic::StoreDeref,
        Intrinsic::DerefAtomic,
        Intrinsic::DerefAtomicSwap,
    ];
    let image_accesses = [
        Intrinsic::ImageDerefLoad,
        Intrinsic::ImageDerefStore,
        Intrinsic::ImageDerefAtomic,
        Intrinsic::ImageDerefAtomicSwap,
        Intrinsic::ImageDerefSize,
    ];
    let (var, steps) = deref_chain(function, *ii.srcs.first()?)?;
    let variable = shader.variable(var);
    let (element, elements) = variable.ty.innermost_element();
    let resources = if buffer_accesses.contains(&ii.op) {
        variable.array_of_blocks && matches!(variable.mode, Mode::Ubo | Mode::Ssbo)
    } else {
        image_accesses.contains(&ii.op) && matches!(element, Type::Image { .. })
    };
    if !resources || !(1..=MAX_BLOCKS).contains(&elements) {
        return None;
    }
    // The first step at a run-time index, and the length of the array it indexes.
    let mut ty = &variable.ty;
    let mut found = None;
    for (position, &step) in steps.iter().enumerate() {
        let Type::Array { elem, len, .. } = ty else {
            return None;
        };
        let InstKind::Deref(Deref::Array { parent, index }) = function.inst(step).kind else {
            return None;
        };
        if function.constant_u32(index).is_none() {
            found = Some((position, parent, index, *len));
            break;
        }
        ty = elem;
    }
    let (position, parent, index, len) = found?;
    let below = (steps[position + 1..].iter())
        .map(|&s| match &function.inst(s).kind {
            InstKind::Deref(d) => Some(d.clone()),
            _ => None,
        })
        .collect::<Option<Vec<Deref>>>()?;
    Some(BlockArray {
        parent,
        index,
        below,
        blocks: len,
    })
}

fn lower(shader: &mut Shader, func: FuncId, v: Value, array: &BlockArray) {
    let function = &mut shader.functions[func.0 as usize];
    let inst = function.inst(v);
    let (block, def) = (inst.block, inst.def);
    let InstKind::Intrinsic(original) = inst.kind.clone() else {
        unreachable!("an access")
    };
    let pos = (function.cfg[block].insts.iter())
        .position(|&i| i == v)
        .expect("the access is in its block");
    // The access alone in a block of its own, between what comes before and after it.
    let alone = function.split_at(block, pos);
    function.set_jump(block, alone);
    let rest = function.split_at(alone, 1);
    function.cfg[alone].insts.clear();
    function.cfg[alone].terminator = None;
    let mut b = Builder::new(shader, func);
    b.cursor = Cursor::at_end(alone);
    let mut picked: Option<Value> = None;
    for k in 0..array.blocks {
        let header = b.cursor.block;
        let undefined = def.map(|shape| b.undef(shape));
        let constant = b.imm_u32(k);
        let is_block = b.alu(AluOp::Ieq, &[array.index, constant]);
        let branch = b.push_if(is_block);
        let mut deref = b.deref_array(array.parent, constant);
        for step in &array.below {
            deref = match *step {
                Deref::Array { index, .. } => b.deref_array(deref, index),
                Deref::Struct { member, .. } => b.deref_struct(deref, member),
                Deref::Var(_) => unreachable!("a chain's steps below its variable"),
            };
        }
        let mut srcs = original.srcs.clone();
        srcs[0] = deref;
        let access = IntrinsicInst {
            srcs,
            ..original.clone()
        };
        let result = b.insert(InstKind::Intrinsic(access), def);
        let then_end = b.cursor.block;
        b.pop_if(branch);
        if let (Some(shape), Some(undefined)) = (def, undefined) {
            let value = b.phi(shape, vec![(then_end, result), (header, undefined)]);
            picked = Some(match picked {
                None => value,
                Some(so_far) => b.alu(AluOp::Bcsel, &[is_block, value, so_far]),
            });
        }
    }
    b.jump(rest);
    let function = &mut shader.functions[func.0 as usize];
    if let Some(value) = picked {
        function.replace_uses(v, value);
    }
    function.remove_inst(v);
}
