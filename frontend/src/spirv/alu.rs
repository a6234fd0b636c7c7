//! Arithmetic, logic, conversions, composites and matrices.

use super::function::{Translator, Val, describe};
use super::module::{id, literal, result_type};
use super::types::SpvType;
use super::{Inst, Result, SpirvError};
use rspirv::spirv::{Op, Word};
use shrew_engine::ir::{AluSrc, Value};
use shrew_engine::ops::AluOp;

/// How an operation maps to one IR opcode: the opcode and whether the two sources swap
/// (`a > b` is `b < a`).
fn simple_op(op: Op) -> Option<(AluOp, bool)> {
    use AluOp as A;
    use Op::*;
    Some(match op {
        FAdd => (A::Fadd, false),
        FSub => (A::Fsub, false),
        FMul => (A::Fmul, false),
        FDiv => (A::Fdiv, false),
        FRem => (A::Frem, false),
        FMod => (A::Fmod, false),
        FNegate => (A::Fneg, false),
        IAdd => (A::Iadd, false),
        ISub => (A::Isub, false),
        IMul => (A::Imul, false),
        SDiv => (A::Idiv, false),
        UDiv => (A::Udiv, false),
        SRem => (A::Irem, false),
        SMod => (A::Imod, false),
        UMod => (A::Umod, false),
        SNegate => (A::Ineg, false),
        FOrdEqual => (A::Feq, false),
        FOrdNotEqual => (A::Fneo, false),
        FOrdLessThan => (A::Flt, false),
        FOrdGreaterThan => (A::Flt, true),
        FOrdLessThanEqual => (A::Fge, true),
        FOrdGreaterThanEqual => (A::Fge, false),
        FUnordEqual => (A::Fequ, false),
        FUnordNotEqual => (A::Fneu, false),
        FUnordLessThan => (A::Fltu, false),
        FUnordGreaterThan => (A::Fltu, true),
        FUnordLessThanEqual => (A::Fgeu, true),
        FUnordGreaterThanEqual => (A::Fgeu, false),
        Ordered => (A::Ford, false),
        Unordered => (A::Funord, false),
        IEqual | LogicalEqual => (A::Ieq, false),
        INotEqual | LogicalNotEqual => (A::Ine, false),
        SLessThan => (A::Ilt, false),
        SGreaterThan => (A::Ilt, true),
        SLessThanEqual => (A::Ige, true),
        SGreaterThanEqual => (A::Ige, false),
        ULessThan => (A::Ult, false),
        UGreaterThan => (A::Ult, true),
        ULessThanEqual => (A::Uge, true),
        UGreaterThanEqual => (A::Uge, false),
        LogicalOr | BitwiseOr => (A::Ior, false),
        LogicalAnd | BitwiseAnd => (A::Iand, false),
        BitwiseXor => (A::Ixor, false),
        LogicalNot | Not => (A::Inot, false),
        ShiftLeftLogical => (A::Ishl, false),
        ShiftRightLogical => (A::Ushr, false),
        ShiftRightArithmetic => (A::Ishr, false),
        BitFieldInsert => (A::BitfieldInsert, false),
        BitFieldSExtract => (A::IbitfieldExtract, false),
        BitFieldUExtract => (A::UbitfieldExtract, false),
        BitReverse => (A::BitfieldReverse, false),
        BitCount => (A::BitCount, false),
        DPdx => (A::Fddx, false),
        DPdy => (A::Fddy, false),
        DPdxFine => (A::FddxFine, false),
        DPdyFine => (A::FddyFine, false),
        DPdxCoarse => (A::FddxCoarse, false),
        DPdyCoarse => (A::FddyCoarse, false),
        QuantizeToF16 => (A::FquantizeF16, false),
        IAddSatINTEL => (A::IaddSat, false),
        UAddSatINTEL => (A::UaddSat, false),
        ISubSatINTEL => (A::IsubSat, false),
        USubSatINTEL => (A::UsubSat, false),
        _ => return None,
    })
}

/// The conversion opcode for a destination bit size.
fn conversion(op: Op, bits: u8) -> Option<AluOp> {
    use AluOp as A;
    Some(match (op, bits) {
        (Op::ConvertFToS, 8) => A::F2i8,
        (Op::ConvertFToS, 16) => A::F2i16,
        (Op::ConvertFToS, 32) => A::F2i32,
        (Op::ConvertFToS, 64) => A::F2i64,
        (Op::ConvertFToU, 8) => A::F2u8,
        (Op::ConvertFToU, 16) => A::F2u16,
        (Op::ConvertFToU, 32) => A::F2u32,
        (Op::ConvertFToU, 64) => A::F2u64,
        (Op::ConvertSToF, 16) => A::I2f16,
        (Op::ConvertSToF, 32) => A::I2f32,
        (Op::ConvertSToF, 64) => A::I2f64,
        (Op::ConvertUToF, 16) => A::U2f16,
        (Op::ConvertUToF, 32) => A::U2f32,
        (Op::ConvertUToF, 64) => A::U2f64,
        (Op::SConvert, 8) => A::I2i8,
        (Op::SConvert, 16) => A::I2i16,
        (Op::SConvert, 32) => A::I2i32,
        (Op::SConvert, 64) => A::I2i64,
        (Op::UConvert, 8) => A::U2u8,
        (Op::UConvert, 16) => A::U2u16,
        (Op::UConvert, 32) => A::U2u32,
        (Op::UConvert, 64) => A::U2u64,
        (Op::FConvert, 16) => A::F2f16,
        (Op::FConvert, 32) => A::F2f32,
        (Op::FConvert, 64) => A::F2f64,
        _ => return None,
    })
}

/// The IR opcode of an operation whose result has `bits`-bit components, and whether its two
/// sources swap: what `OpSpecConstantOp` evaluates.
pub(super) fn constant_op(op: Op, bits: u8) -> Option<(AluOp, bool)> {
    simple_op(op).or_else(|| conversion(op, bits).map(|alu| (alu, false)))
}

impl Translator<'_> {
    /// Translates an ALU-like instruction; `false` when the opcode is not one.
    pub fn alu_inst(&mut self, inst: &Inst) -> Result<bool> {
        let op = inst.inst.class.opcode;
        let nops = inst.inst.operands.len();
        if let Some((alu, swap)) = simple_op(op) {
            let mut srcs = (0..nops)
                .map(|i| self.ssa(id(inst, i)?))
                .collect::<Result<Vec<_>>>()?;
            if swap {
                srcs.swap(0, 1);
            }
            if matches!(alu, AluOp::Ishl | AluOp::Ishr | AluOp::Ushr) {
                srcs[1] = self.uint32(srcs[1])?;
            }
            if matches!(
                alu,
                AluOp::BitfieldInsert | AluOp::IbitfieldExtract | AluOp::UbitfieldExtract
            ) {
                for src in &mut srcs[nops - 2..] {
                    *src = self.uint32(*src)?;
                }
            }
            let mut v = self.builder().alu(alu, &srcs);
            if alu == AluOp::BitCount {
                v = self.resize_int(v, result_type(inst)?, false)?;
            }
            self.set(inst, Val::Ssa(v))?;
            return Ok(true);
        }
        let v = match op {
            Op::ConvertFToS
            | Op::ConvertFToU
            | Op::ConvertSToF
            | Op::ConvertUToF
            | Op::SConvert
            | Op::UConvert
            | Op::FConvert => {
                let bits = self.val_type(result_type(inst)?)?.bits;
                let alu = conversion(op, bits)
                    .ok_or_else(|| SpirvError::unsupported(format!("Op{op:?} to {bits} bits")))?;
                let a = self.ssa(id(inst, 0)?)?;
                Val::Ssa(self.builder().alu(alu, &[a]))
            }
            Op::Bitcast => {
                let a = self.ssa(id(inst, 0)?)?;
                let from = self.builder().value_type(a);
                let to = self.val_type(result_type(inst)?)?;
                let pack = match (from.bits, from.comps, to.bits, to.comps) {
                    _ if from == to => None,
                    (32, 2, 64, 1) => Some(AluOp::Pack64_2x32),
                    (64, 1, 32, 2) => Some(AluOp::Unpack64_2x32),
                    (16, 2, 32, 1) => Some(AluOp::Pack32_2x16),
                    (32, 1, 16, 2) => Some(AluOp::Unpack32_2x16),
                    _ => {
                        return Err(SpirvError::unsupported(format!(
                            "bit casts from {from} to {to} bits"
                        )));
                    }
                };
                Val::Ssa(match pack {
                    Some(op) => self.builder().alu(op, &[a]),
                    None => a,
                })
            }
            Op::UCountLeadingZerosINTEL
            | Op::UCountTrailingZerosINTEL
            | Op::AbsISubINTEL
            | Op::AbsUSubINTEL
            | Op::IAverageINTEL
            | Op::UAverageINTEL
            | Op::IAverageRoundedINTEL
            | Op::UAverageRoundedINTEL
            | Op::IMul32x16INTEL
            | Op::UMul32x16INTEL => Val::Ssa(self.integer_function(inst)?),
            Op::CopyObject | Op::CopyLogical => self.val(id(inst, 0)?)?,
            Op::Undef => self.undef(result_type(inst)?)?,
            Op::Select => {
                let cond = self.ssa(id(inst, 0)?)?;
                let a = self.val(id(inst, 1)?)?;
                let b = self.val(id(inst, 2)?)?;
                self.select(cond, &a, &b)?
            }
            Op::IsNan => {
                let a = self.ssa(id(inst, 0)?)?;
                Val::Ssa(self.builder().alu(AluOp::Fneu, &[a, a]))
            }
            Op::IsInf => {
                let a = self.ssa(id(inst, 0)?)?;
                let bits = self.builder().value_type(a).bits;
                let abs = self.builder().alu(AluOp::Fabs, &[a]);
                let inf = self.builder().imm_float(f64::INFINITY, bits);
                Val::Ssa(self.builder().alu(AluOp::Feq, &[abs, inf]))
            }
            Op::Any | Op::All => {
                let a = self.ssa(id(inst, 0)?)?;
                let alu = if op == Op::Any {
                    AluOp::Ior
                } else {
                    AluOp::Iand
                };
                Val::Ssa(self.reduce(a, alu))
            }
            Op::Dot => {
                let a = self.ssa(id(inst, 0)?)?;
                let b = self.ssa(id(inst, 1)?)?;
                Val::Ssa(self.dot(a, b)?)
            }
            Op::Fwidth | Op::FwidthFine | Op::FwidthCoarse => {
                let a = self.ssa(id(inst, 0)?)?;
                let (dx, dy) = match op {
                    Op::Fwidth => (AluOp::Fddx, AluOp::Fddy),
                    Op::FwidthFine => (AluOp::FddxFine, AluOp::FddyFine),
                    _ => (AluOp::FddxCoarse, AluOp::FddyCoarse),
                };
                let x = self.builder().alu(dx, &[a]);
                let y = self.builder().alu(dy, &[a]);
                let ax = self.builder().alu(AluOp::Fabs, &[x]);
                let ay = self.builder().alu(AluOp::Fabs, &[y]);
                Val::Ssa(self.builder().alu(AluOp::Fadd, &[ax, ay]))
            }
            Op::VectorTimesScalar => {
                let a = self.ssa(id(inst, 0)?)?;
                let s = self.ssa(id(inst, 1)?)?;
                Val::Ssa(self.builder().alu(AluOp::Fmul, &[a, s]))
            }
            Op::MatrixTimesScalar => {
                let m = self.columns(id(inst, 0)?)?;
                let s = self.ssa(id(inst, 1)?)?;
                let cols = m
                    .into_iter()
                    .map(|c| Val::Ssa(self.builder().alu(AluOp::Fmul, &[c, s])))
                    .collect();
                Val::Composite(cols)
            }
            Op::MatrixTimesVector => {
                let m = self.columns(id(inst, 0)?)?;
                let v = self.ssa(id(inst, 1)?)?;
                Val::Ssa(self.matrix_times_vector(&m, v))
            }
            Op::VectorTimesMatrix => {
                let v = self.ssa(id(inst, 0)?)?;
                let m = self.columns(id(inst, 1)?)?;
                let mut comps = Vec::new();
                for c in m {
                    comps.push(self.dot(v, c)?);
                }
                Val::Ssa(self.vector(&comps)?)
            }
            Op::MatrixTimesMatrix => {
                let a = self.columns(id(inst, 0)?)?;
                let b = self.columns(id(inst, 1)?)?;
                let cols = b
                    .into_iter()
                    .map(|c| Val::Ssa(self.matrix_times_vector(&a, c)))
                    .collect();
                Val::Composite(cols)
            }
            Op::OuterProduct => {
                let a = self.ssa(id(inst, 0)?)?;
                let b = self.ssa(id(inst, 1)?)?;
                let n = self.builder().value_type(b).comps;
                let mut cols = Vec::new();
                for j in 0..n {
                    let bj = self.builder().channel(b, j);
                    cols.push(Val::Ssa(self.builder().alu(AluOp::Fmul, &[a, bj])));
                }
                Val::Composite(cols)
            }
            Op::Transpose => {
                let m = self.columns(id(inst, 0)?)?;
                Val::Composite(self.transpose(&m)?.into_iter().map(Val::Ssa).collect())
            }
            Op::CompositeConstruct => {
                let rt = result_type(inst)?;
                let parts = (0..nops)
                    .map(|i| self.val(id(inst, i)?))
                    .collect::<Result<Vec<_>>>()?;
                if matches!(self.module.ty(rt)?, SpvType::Vector { .. }) {
                    let mut comps = Vec::new();
                    for p in &parts {
                        let Val::Ssa(v) = p else {
                            return Err(SpirvError::malformed("a vector built from composites"));
                        };
                        let n = self.builder().value_type(*v).comps;
                        for c in 0..n {
                            comps.push(self.builder().channel(*v, c));
                        }
                    }
                    Val::Ssa(self.vector(&comps)?)
                } else {
                    Val::Composite(parts)
                }
            }
            Op::CompositeExtract => {
                let base = self.val(id(inst, 0)?)?;
                let path = (1..nops)
                    .map(|i| literal(inst, i))
                    .collect::<Result<Vec<_>>>()?;
                self.extract(&base, &path)?
            }
            Op::CompositeInsert => {
                let obj = self.val(id(inst, 0)?)?;
                let base = self.val(id(inst, 1)?)?;
                let path = (2..nops)
                    .map(|i| literal(inst, i))
                    .collect::<Result<Vec<_>>>()?;
                self.insert(&base, &path, obj)?
            }
            Op::VectorExtractDynamic => {
                let v = self.ssa(id(inst, 0)?)?;
                let i = self.ssa(id(inst, 1)?)?;
                let i = self.uint32(i)?;
                Val::Ssa(self.extract_dynamic(v, i))
            }
            Op::VectorInsertDynamic => {
                let v = self.ssa(id(inst, 0)?)?;
                let x = self.ssa(id(inst, 1)?)?;
                let i = self.ssa(id(inst, 2)?)?;
                let i = self.uint32(i)?;
                let n = self.builder().value_type(v).comps;
                let mut comps = Vec::new();
                for c in 0..n {
                    let k = self.builder().imm_u32(c as u32);
                    let is_c = self.builder().alu(AluOp::Ieq, &[i, k]);
                    let old = self.builder().channel(v, c);
                    comps.push(self.builder().alu(AluOp::Bcsel, &[is_c, x, old]));
                }
                Val::Ssa(self.vector(&comps)?)
            }
            Op::VectorShuffle => {
                let a = self.ssa(id(inst, 0)?)?;
                let b = self.ssa(id(inst, 1)?)?;
                let na = self.builder().value_type(a).comps as u32;
                let nb = self.builder().value_type(b).comps as u32;
                let sel = (2..nops)
                    .map(|i| literal(inst, i))
                    .collect::<Result<Vec<_>>>()?;
                let mut comps = Vec::new();
                for s in &sel {
                    comps.push(match *s {
                        s if s < na => self.builder().channel(a, s as u8),
                        s if s < na + nb => self.builder().channel(b, (s - na) as u8),
                        0xffff_ffff => self.builder().channel(a, 0),
                        _ => return Err(SpirvError::malformed("a shuffle index out of range")),
                    });
                }
                if sel.iter().all(|&s| s < na) && !sel.is_empty() {
                    let swz: Vec<u8> = sel.iter().map(|&s| s as u8).collect();
                    let n = swz.len() as u8;
                    Val::Ssa(self.builder().alu_swizzled(
                        AluOp::Mov,
                        vec![AluSrc::swizzled(a, &swz)],
                        n,
                    ))
                } else {
                    Val::Ssa(self.vector(&comps)?)
                }
            }
            Op::IAddCarry | Op::ISubBorrow | Op::UMulExtended | Op::SMulExtended => {
                let a = self.ssa(id(inst, 0)?)?;
                let b = self.ssa(id(inst, 1)?)?;
                let (lo, hi) = match op {
                    Op::IAddCarry => (AluOp::Iadd, AluOp::UaddCarry),
                    Op::ISubBorrow => (AluOp::Isub, AluOp::UsubBorrow),
                    Op::UMulExtended => (AluOp::Imul, AluOp::UmulHigh),
                    _ => (AluOp::Imul, AluOp::ImulHigh),
                };
                let lo = self.builder().alu(lo, &[a, b]);
                let hi = self.builder().alu(hi, &[a, b]);
                Val::Composite(vec![Val::Ssa(lo), Val::Ssa(hi)])
            }
            _ => return Ok(false),
        };
        self.set(inst, v)?;
        Ok(true)
    }

    /// An integer value as 32 bits (shift counts, bit offsets, indices).
    /// SPV_INTEL_shader_integer_functions2's operations without an IR opcode of their own,
    /// built from the ones they are defined by.
    fn integer_function(&mut self, inst: &Inst) -> Result<Value> {
        use AluOp as A;
        let op = inst.inst.class.opcode;
        let a = self.ssa(id(inst, 0)?)?;
        let b = match op {
            Op::UCountLeadingZerosINTEL | Op::UCountTrailingZerosINTEL => None,
            _ => Some(self.ssa(id(inst, 1)?)?),
        };
        let bits = self.builder().value_type(a).bits;
        let mut bld = self.builder();
        Ok(match (op, b) {
            // ufind_msb(0) is -1, so 0 has `bits` leading zeros.
            (Op::UCountLeadingZerosINTEL, _) => {
                let msb = bld.alu(A::UfindMsb, &[a]);
                let top = bld.imm_int(bits as i64 - 1, 32);
                let count = bld.alu(A::Isub, &[top, msb]);
                self.resize_int(count, result_type(inst)?, false)?
            }
            // find_lsb(0) is -1, the largest unsigned value.
            (Op::UCountTrailingZerosINTEL, _) => {
                let lsb = bld.alu(A::FindLsb, &[a]);
                let width = bld.imm_u32(bits as u32);
                let count = bld.alu(A::Umin, &[lsb, width]);
                self.resize_int(count, result_type(inst)?, false)?
            }
            (Op::AbsISubINTEL, Some(b)) => {
                let high = bld.alu(A::Imax, &[a, b]);
                let low = bld.alu(A::Imin, &[a, b]);
                bld.alu(A::Isub, &[high, low])
            }
            (Op::AbsUSubINTEL, Some(b)) => {
                let high = bld.alu(A::Umax, &[a, b]);
                let low = bld.alu(A::Umin, &[a, b]);
                bld.alu(A::Isub, &[high, low])
            }
            // (a >> 1) + (b >> 1) + the carry of the low bits: both set, or (rounded) either.
            (
                Op::IAverageINTEL
                | Op::UAverageINTEL
                | Op::IAverageRoundedINTEL
                | Op::UAverageRoundedINTEL,
                Some(b),
            ) => {
                let shift = match op {
                    Op::IAverageINTEL | Op::IAverageRoundedINTEL => A::Ishr,
                    _ => A::Ushr,
                };
                let carry = match op {
                    Op::IAverageINTEL | Op::UAverageINTEL => A::Iand,
                    _ => A::Ior,
                };
                let one = bld.imm_u32(1);
                let half_a = bld.alu(shift, &[a, one]);
                let half_b = bld.alu(shift, &[b, one]);
                let low = bld.alu(carry, &[a, b]);
                let low_one = bld.imm_int(1, bits);
                let low = bld.alu(A::Iand, &[low, low_one]);
                let sum = bld.alu(A::Iadd, &[half_a, half_b]);
                bld.alu(A::Iadd, &[sum, low])
            }
            // The low 16 bits of b, sign- or zero-extended, times a.
            (Op::IMul32x16INTEL | Op::UMul32x16INTEL, Some(b)) => {
                let sixteen = bld.imm_u32((bits as u32).saturating_sub(16));
                let up = bld.alu(A::Ishl, &[b, sixteen]);
                let shift = match op {
                    Op::IMul32x16INTEL => A::Ishr,
                    _ => A::Ushr,
                };
                let low = bld.alu(shift, &[up, sixteen]);
                bld.alu(A::Imul, &[a, low])
            }
            _ => {
                return Err(SpirvError::malformed(format!(
                    "Op{op:?} has too few operands"
                )));
            }
        })
    }

    pub fn uint32(&mut self, v: Value) -> Result<Value> {
        Ok(match self.builder().value_type(v).bits {
            32 => v,
            1 => {
                return Err(SpirvError::malformed(
                    "a boolean where an integer is expected",
                ));
            }
            _ => self.builder().alu(AluOp::U2u32, &[v]),
        })
    }

    /// Converts a 32-bit integer result to the width of type `ty`.
    fn resize_int(&mut self, v: Value, ty: Word, signed: bool) -> Result<Value> {
        let bits = self.val_type(ty)?.bits;
        if bits == self.builder().value_type(v).bits {
            return Ok(v);
        }
        let op = match (bits, signed) {
            (8, false) => AluOp::U2u8,
            (16, false) => AluOp::U2u16,
            (64, false) => AluOp::U2u64,
            (8, true) => AluOp::I2i8,
            (16, true) => AluOp::I2i16,
            (64, true) => AluOp::I2i64,
            _ => AluOp::U2u32,
        };
        Ok(self.builder().alu(op, &[v]))
    }

    /// A vector from scalars (a scalar stays itself).
    pub fn vector(&mut self, comps: &[Value]) -> Result<Value> {
        if !matches!(comps.len(), 1 | 2 | 3 | 4 | 8 | 16) {
            return Err(SpirvError::malformed(format!(
                "a vector of {} components",
                comps.len()
            )));
        }
        Ok(self.builder().vec(comps))
    }

    /// Combines the components of a vector with `op`.
    pub fn reduce(&mut self, v: Value, op: AluOp) -> Value {
        let n = self.builder().value_type(v).comps;
        let mut acc = self.builder().channel(v, 0);
        for c in 1..n {
            let x = self.builder().channel(v, c);
            acc = self.builder().alu(op, &[acc, x]);
        }
        acc
    }

    pub fn dot(&mut self, a: Value, b: Value) -> Result<Value> {
        let op = match self.builder().value_type(a).comps {
            1 => AluOp::Fmul,
            2 => AluOp::Fdot2,
            3 => AluOp::Fdot3,
            4 => AluOp::Fdot4,
            n => {
                return Err(SpirvError::unsupported(format!(
                    "dot products of {n} components"
                )));
            }
        };
        Ok(self.builder().alu(op, &[a, b]))
    }

    /// The columns of a matrix operand.
    pub fn columns(&mut self, id: Word) -> Result<Vec<Value>> {
        match self.val(id)? {
            Val::Composite(cols) => cols
                .into_iter()
                .map(|c| match c {
                    Val::Ssa(v) => Ok(v),
                    _ => Err(SpirvError::malformed(
                        "a matrix column that is not a vector",
                    )),
                })
                .collect(),
            other => Err(SpirvError::malformed(format!(
                "%{id} should be a matrix, found {}",
                describe(&other)
            ))),
        }
    }

    /// Σ columns[j] · v[j].
    pub fn matrix_times_vector(&mut self, m: &[Value], v: Value) -> Value {
        let mut acc = None;
        for (j, &col) in m.iter().enumerate() {
            let vj = self.builder().channel(v, j as u8);
            let term = self.builder().alu(AluOp::Fmul, &[col, vj]);
            acc = Some(match acc {
                Some(a) => self.builder().alu(AluOp::Fadd, &[a, term]),
                None => term,
            });
        }
        acc.expect("a matrix has columns")
    }

    pub fn transpose(&mut self, m: &[Value]) -> Result<Vec<Value>> {
        let rows = m.first().map_or(0, |&c| self.builder().value_type(c).comps);
        let mut out = Vec::new();
        for r in 0..rows {
            let comps: Vec<Value> = m.iter().map(|&c| self.builder().channel(c, r)).collect();
            out.push(self.vector(&comps)?);
        }
        Ok(out)
    }

    /// `OpSelect`: per leaf for composites.
    pub fn select(&mut self, cond: Value, a: &Val, b: &Val) -> Result<Val> {
        match (a, b) {
            (Val::Ssa(x), Val::Ssa(y)) => {
                Ok(Val::Ssa(self.builder().alu(AluOp::Bcsel, &[cond, *x, *y])))
            }
            (Val::Composite(xs), Val::Composite(ys)) if xs.len() == ys.len() => {
                let mut out = Vec::new();
                for (x, y) in xs.iter().zip(ys) {
                    out.push(self.select(cond, x, y)?);
                }
                Ok(Val::Composite(out))
            }
            _ => Err(SpirvError::unsupported(format!(
                "selecting between {} and {}",
                describe(a),
                describe(b)
            ))),
        }
    }

    fn extract(&mut self, base: &Val, path: &[u32]) -> Result<Val> {
        let Some((&first, rest)) = path.split_first() else {
            return Ok(base.clone());
        };
        match base {
            Val::Composite(parts) => {
                let part = parts
                    .get(first as usize)
                    .ok_or_else(|| SpirvError::malformed("an extract index out of range"))?
                    .clone();
                self.extract(&part, rest)
            }
            Val::Ssa(v) if rest.is_empty() => {
                if first >= self.builder().value_type(*v).comps as u32 {
                    return Err(SpirvError::malformed("an extract index out of range"));
                }
                Ok(Val::Ssa(self.builder().channel(*v, first as u8)))
            }
            other => Err(SpirvError::malformed(format!(
                "extracting from {}",
                describe(other)
            ))),
        }
    }

    fn insert(&mut self, base: &Val, path: &[u32], obj: Val) -> Result<Val> {
        let Some((&first, rest)) = path.split_first() else {
            return Ok(obj);
        };
        match base {
            Val::Composite(parts) => {
                let mut parts = parts.clone();
                let slot = parts
                    .get_mut(first as usize)
                    .ok_or_else(|| SpirvError::malformed("an insert index out of range"))?;
                let old = slot.clone();
                *slot = self.insert(&old, rest, obj)?;
                Ok(Val::Composite(parts))
            }
            Val::Ssa(v) if rest.is_empty() => {
                let Val::Ssa(x) = obj else {
                    return Err(SpirvError::malformed("inserting a composite into a vector"));
                };
                let n = self.builder().value_type(*v).comps;
                if first >= n as u32 {
                    return Err(SpirvError::malformed("an insert index out of range"));
                }
                let comps: Vec<Value> = (0..n)
                    .map(|c| {
                        if c as u32 == first {
                            x
                        } else {
                            self.builder().channel(*v, c)
                        }
                    })
                    .collect();
                Ok(Val::Ssa(self.vector(&comps)?))
            }
            other => Err(SpirvError::malformed(format!(
                "inserting into {}",
                describe(other)
            ))),
        }
    }
}
