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
//! Options: which operations to split is the target's choice; the registered pass splits every
//! operation it can.

use super::manager::{Pass, PassContext};
use crate::ir::{Alu, AluSrc, Builder, Cursor, FuncId, Function, InstKind, Shader, ValType, Value};
use crate::ops::AluOp;
use crate::uses::{User, Uses};

/// The `lower-alu-to-scalar` pass.
pub struct LowerAluToScalar;

impl Pass for LowerAluToScalar {
    fn name(&self) -> &str {
        "lower-alu-to-scalar"
    }

    fn description(&self) -> &str {
        "splits vector ALU instructions into one per component, gathered by a vecN"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let mut progress = false;
        for f in 0..shader.functions.len() {
            let func_id = FuncId(f as u32);
            let mut uses = Uses::build(&shader.functions[f]);
            for b in shader.functions[f].blocks() {
                let mut pos = 0;
                while pos < shader.functions[f].cfg[b].insts.len() {
                    if context.budget.is_spent() {
                        return Ok(progress);
                    }
                    let v = shader.functions[f].cfg[b].insts[pos];
                    let Some((alu, def, vec)) = splittable(&shader.functions[f], v) else {
                        pos += 1;
                        continue;
                    };
                    let mut builder = Builder::new(shader, func_id);
                    builder.cursor = Cursor {
                        block: b,
                        pos: Some(pos),
                    };
                    let components: Vec<_> = (0..def.comps as usize)
                        .map(|c| {
                            let srcs = alu
                                .srcs
                                .iter()
                                .map(|s| AluSrc::swizzled(s.value, &[s.swizzle[c]]))
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
                    let gathered = builder.alu(vec, &components);
                    let func = &mut shader.functions[f];
                    for &new in components.iter().chain([&gathered]) {
                        for src in func.inst_sources(new) {
                            uses.add(src, User::Inst(new));
                        }
                    }
                    uses.replace_all(func, v, gathered);
                    uses.remove_inst(func, v);
                    // Past the components and the vecN; the split instruction is gone.
                    pos += components.len() + 1;
                    progress = true;
                    let name = &func.name;
                    context
                        .budget
                        .spend(|| format!("lower-alu-to-scalar: {v} in `{name}`"));
                }
            }
        }
        Ok(progress)
    }
}

/// The instruction, its shape and the `vecN` that gathers its components, if it splits.
fn splittable(func: &Function, v: Value) -> Option<(Alu, ValType, AluOp)> {
    let inst = func.get_inst(v)?;
    let (InstKind::Alu(alu), Some(def)) = (&inst.kind, inst.def) else {
        return None;
    };
    let info = alu.op.info();
    let per_component = info.dst.comps == 0 && info.srcs.iter().all(|o| o.comps == 0);
    let vec = AluOp::vec_of(def.comps)?;
    (per_component && alu.op != AluOp::Mov).then(|| (alu.clone(), def, vec))
}
