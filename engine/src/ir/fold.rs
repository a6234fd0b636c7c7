//! Constant folding of one instruction through the opcode table: the evaluation the interpreter
//! uses, applied at compile time. Passes decide where to fold; this only computes. The same
//! evaluation on any source values ([`eval_alu`]) serves executors of lowered code.

use super::{Function, InstKind, Value};

/// The constant components of `v` when it is an ALU instruction whose sources are all
/// constants and whose opcode can be evaluated without invocation context (derivatives cannot).
/// Folding is exact: it computes exactly what the interpreter computes at run time, so it needs
/// no check of the `exact` or float-controls flags.
pub fn fold_alu(func: &Function, v: Value) -> Option<Vec<u64>> {
    eval_alu(func, v, |src| match &func.get_inst(src)?.kind {
        InstKind::Const(values) => Some(values.as_slice()),
        _ => None,
    })
}

/// Evaluates ALU instruction `v` through the opcode table, reading each source value's
/// components from `read` (which gives `None` for a value it does not know). `None` when `v` is
/// not an ALU instruction, a source is unknown or too short for its swizzle, or the opcode needs
/// invocation context. Constant folding reads constants; an executor can read registers.
pub fn eval_alu<'a>(
    func: &Function,
    v: Value,
    mut read: impl FnMut(Value) -> Option<&'a [u64]>,
) -> Option<Vec<u64>> {
    let inst = func.get_inst(v)?;
    let (InstKind::Alu(alu), Some(def)) = (&inst.kind, inst.def) else {
        return None;
    };
    let mut srcs = Vec::with_capacity(alu.srcs.len());
    for (i, src) in alu.srcs.iter().enumerate() {
        let values = read(src.value)?;
        let swizzle = &src.swizzle[..alu.src_components(i, def) as usize];
        srcs.push(
            swizzle
                .iter()
                .map(|&c| values.get(c as usize).copied())
                .collect::<Option<Vec<u64>>>()?,
        );
    }
    let refs: Vec<&[u64]> = srcs.iter().map(Vec::as_slice).collect();
    let bits = alu.src_bit_sizes(func, def);
    let mut out = vec![0; def.comps as usize];
    alu.op
        .eval(
            &refs,
            shrew_ops::eval::Bits {
                src: &bits,
                dst: def.bits,
            },
            &mut out,
        )
        .then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AluSrc, Builder, FuncId, Shader, Stage};
    use shrew_ops::AluOp;

    #[test]
    fn folds_swizzled_constant_sources_at_their_sizes() {
        let mut shader = Shader::new(Stage::Fragment);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let v = b.imm_vec_f32(&[1.0, 2.0, 3.0, 4.0]);
        let w = b.imm_f32(0.5);
        let sum = b.alu_swizzled(
            AluOp::Fadd,
            vec![AluSrc::swizzled(v, &[3, 1]), AluSrc::swizzled(w, &[0, 0])],
            2,
        );
        let h = b.imm(16, &[0x3c00]);
        let widened = b.alu(AluOp::F2f32, &[h]);
        let narrow = b.imm(8, &[0xff]);
        let sext = b.alu(AluOp::I2i32, &[narrow]);
        let func = &shader.functions[0];
        assert_eq!(
            fold_alu(func, sum),
            Some(vec![4.5f32.to_bits() as u64, 2.5f32.to_bits() as u64])
        );
        assert_eq!(fold_alu(func, widened), Some(vec![1.0f32.to_bits() as u64]));
        assert_eq!(fold_alu(func, sext), Some(vec![0xffff_ffff]));
    }

    #[test]
    fn leaves_derivatives_and_non_constant_sources_alone() {
        let mut shader = Shader::new(Stage::Fragment);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let c = b.imm_f32(2.0);
        let ddx = b.alu(AluOp::Fddx, &[c]);
        let twice = b.alu(AluOp::Fadd, &[ddx, c]);
        let func = &shader.functions[0];
        assert_eq!(fold_alu(func, ddx), None);
        assert_eq!(fold_alu(func, twice), None);
        assert_eq!(fold_alu(func, c), None);
    }
}
