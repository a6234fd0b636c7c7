//! `lower-alu-to-scalar`: splits vector ALU instructions into one instruction per component.
//!
//! What: an ALU instruction of N > 1 components whose operands are all per-component becomes N
//! one-component instructions, each reading its component of every source (the swizzle picks
//! it), and a `vecN` that gathers them; users read the `vecN`. Operations with operands of a
//! fixed size (dot products, packing, `vecN` itself) and `mov`s are left alone, as are widths
//! without a `vecN` (5). The new instructions keep the `exact` and float-controls flags.
//!
//! Why: scalar machines (R600's VLIW slots, Gen in SIMD mode) execute one component per
//! instruction; splitting early lets copy propagation, CSE and dead-code elimination work per
//! component (an unused component's work disappears).
//!
//! Invariants: each new instruction computes exactly the component it replaces. One split
//! instruction is one transformation.
//!
//! A source that is a vector constant reads its component as a one-component constant of its
//! own, so equal components of different constants become one value under CSE.
//!
//! Options: which operations to split is the target's choice ([`Scalarize`]): every one it
//! can, or only those reading a constant whose components differ (R600, where splitting the
//! rest gains nothing its backend does not do anyway).

use super::manager::{Pass, PassContext};
use crate::ir::{
    Alu, AluSrc, BlockId, Builder, Cursor, FuncId, Function, InstKind, Shader, ValType, Value,
};
use crate::ops::AluOp;
use crate::rewrite::Scalarize;
use crate::uses::{User, Uses};

/// The `lower-alu-to-scalar` pass.
pub struct LowerAluToScalar {
    pub which: Scalarize,
}

impl Pass for LowerAluToScalar {
    fn name(&self) -> &str {
        "lower-alu-to-scalar"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "splits vector ALU instructions into one per component, gathered by a vecN"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let mut uses = Uses::build(&shader.functions[f]);
                for b in shader.functions[f].blocks() {
                    // Splitting inserts before the split instruction: walk the block by position.
                    let mut pos = 0;
                    while pos < shader.functions[f].cfg[b].insts.len() {
                        let ran = transformations.attempt(|| {
                            let v = shader.functions[f].cfg[b].insts[pos];
                            let Some(added) = split(shader, f, b, pos, &mut uses, self.which)
                            else {
                                pos += 1;
                                return None;
                            };
                            // Past the new instructions; the split one is gone.
                            pos += added;
                            Some(move || format!("{v}"))
                        });
                        if !ran {
                            return;
                        }
                    }
                }
            }))
    }
}

/// Splits the instruction at `pos` of block `b` of function `f` if it is one to split;
/// gives how many instructions it inserted in its place.
fn split(
    shader: &mut Shader,
    f: usize,
    b: BlockId,
    pos: usize,
    uses: &mut Uses,
    which: Scalarize,
) -> Option<usize> {
    let v = shader.functions[f].cfg[b].insts[pos];
    let (alu, def, vec) = splittable(&shader.functions[f], v, which)?;
    let block_len = shader.functions[f].cfg[b].insts.len();
    let mut builder = Builder::new(shader, FuncId(f as u32));
    builder.cursor = Cursor {
        block: b,
        pos: Some(pos),
    };
    let components: Vec<_> = (0..def.comps as usize)
        .map(|c| {
            let srcs = alu
                .srcs
                .iter()
                .map(|s| component(&mut builder, s, c))
                .collect();
            builder.insert(
                InstKind::Alu(Alu {
                    srcs,
                    ..alu.clone()
                }),
                Some(ValType::new(def.bits, 1)),
            )
        })
        .collect();
    builder.alu(vec, &components);
    let func = &mut shader.functions[f];
    // The new instructions: scalar constants, the components and the vecN.
    let added = func.cfg[b].insts.len() - block_len;
    let new = func.cfg[b].insts[pos..pos + added].to_vec();
    for &inst in &new {
        for src in func.inst_sources(inst) {
            uses.add(src, User::Inst(inst));
        }
    }
    let gathered = new[added - 1];
    uses.replace_all(func, v, gathered);
    uses.remove_inst(func, v);
    Some(added)
}

/// Component `c` of source `src`: a vector constant's as a scalar constant of its own, so that
/// equal components of different constants are one value to CSE.
fn component(builder: &mut Builder, src: &AluSrc, c: usize) -> AluSrc {
    let read = src.swizzle[c];
    let element = constant_components(builder.function(), src.value)
        .filter(|(_, comps)| comps.len() > 1)
        .map(|(bits, comps)| (bits, comps[read as usize]));
    match element {
        Some((bits, value)) => AluSrc::swizzled(builder.imm(bits, &[value]), &[0]),
        None => AluSrc::swizzled(src.value, &[read]),
    }
}

/// The bit size and components of `v` if it is a constant.
fn constant_components(func: &Function, v: Value) -> Option<(u8, &[u64])> {
    let inst = func.get_inst(v)?;
    match &inst.kind {
        InstKind::Const(comps) => Some((inst.def?.bits, comps.as_slice())),
        _ => None,
    }
}

/// The instruction, its shape and the `vecN` that gathers its components, if it splits under
/// `which`.
fn splittable(func: &Function, v: Value, which: Scalarize) -> Option<(Alu, ValType, AluOp)> {
    let inst = func.get_inst(v)?;
    let (InstKind::Alu(alu), Some(def)) = (&inst.kind, inst.def) else {
        return None;
    };
    let info = alu.op.info();
    let per_component = info.dst.comps == 0 && info.srcs.iter().all(|o| o.comps == 0);
    let vec = AluOp::vec_of(def.comps)?;
    let chosen = per_component
        && alu.op != AluOp::Mov
        && match which {
            Scalarize::Every => true,
            Scalarize::MixedConstants => {
                alu.op != AluOp::Bcsel && reads_mixed_constant(func, alu, def)
            }
        };
    chosen.then(|| (alu.clone(), def, vec))
}

/// Whether `alu` (of shape `def`) reads a constant whose components it reads differ.
fn reads_mixed_constant(func: &Function, alu: &Alu, def: ValType) -> bool {
    alu.srcs.iter().any(|src| {
        constant_components(func, src.value).is_some_and(|(_, comps)| {
            let mut read = src.swizzle[..def.comps as usize]
                .iter()
                .map(|&c| comps[c as usize]);
            let first = read.next();
            read.any(|x| Some(x) != first)
        })
    })
}
