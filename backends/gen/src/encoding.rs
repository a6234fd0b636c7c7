//! Hardware instructions and their native 128-bit encoding, Gen7–Gen9: the Align1 layout of
//! 0–2 source instructions, the Align16 layout of 3-source ones, jump offsets of control flow
//! and send descriptors. Every field's bits are declared once, in [`crate::fields`], which the
//! encoder and the decoder both read. [`decode`] is [`encode`]'s inverse; the tests hold it to
//! that and to encodings taken from real hardware programs.

use crate::fields::{Align1, Bits, Descriptor, Header, Imm, Jumps, ThreeSrc, desc};
use crate::isa::{
    CondMod, Gen, MathFn, Opcode, RegFile, Region, Type, hstride_code, hstride_from_code,
};

/// A register source.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reg {
    pub file: RegFile,
    pub nr: u8,
    /// Byte offset inside the register.
    pub subnr: u8,
    pub ty: Type,
    pub region: Region,
    pub negate: bool,
    pub abs: bool,
    /// Align16 (3-source) swizzle, two bits per channel; identity `.xyzw` is 0xE4.
    pub swizzle: u8,
}

impl Reg {
    /// `g<nr>` read with `region`.
    pub fn grf(nr: u8, subnr: u8, ty: Type, region: Region) -> Reg {
        Reg {
            file: RegFile::Grf,
            nr,
            subnr,
            ty,
            region,
            negate: false,
            abs: false,
            swizzle: IDENTITY_SWIZZLE,
        }
    }
}

/// The Align16 identity swizzle `.xyzw`.
pub const IDENTITY_SWIZZLE: u8 = 0xE4;

/// A source: a register or an immediate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Src {
    Reg(Reg),
    /// Raw bits of the value; 64-bit types use all of them (Gen8+).
    Imm(Type, u64),
}

impl Src {
    pub fn ty(&self) -> Type {
        match self {
            Src::Reg(r) => r.ty,
            Src::Imm(ty, _) => *ty,
        }
    }
}

/// A destination.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dst {
    pub file: RegFile,
    pub nr: u8,
    pub subnr: u8,
    pub ty: Type,
    pub hstride: u8,
    /// Align16 (3-source) write mask; 0xF writes every channel.
    pub writemask: u8,
}

impl Dst {
    /// The null register: results go nowhere (a `cmp` that only writes flags).
    pub fn null(ty: Type) -> Dst {
        Dst {
            file: RegFile::Arf,
            ..Dst::grf(crate::isa::ARF_NULL, 0, ty)
        }
    }

    pub fn grf(nr: u8, subnr: u8, ty: Type) -> Dst {
        Dst {
            file: RegFile::Grf,
            nr,
            subnr,
            ty,
            hstride: 1,
            writemask: 0xF,
        }
    }
}

/// Predication: the flag register's bits (or a reduction of them) enable channels.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Predicate {
    /// The Align1 predicate control: 1 normal, 2/3 anyv/allv, 4–13 any2h/all2h … any32h/all32h.
    pub control: u8,
    pub inverse: bool,
}

/// One hardware instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inst {
    pub opcode: Opcode,
    /// Channels: 1, 2, 4, 8, 16 or 32.
    pub exec_size: u8,
    /// The first channel of the dispatch the instruction covers: 0, 4, 8 … 28.
    pub group: u8,
    /// WE_all: ignore the execution mask.
    pub mask_all: bool,
    pub predicate: Option<Predicate>,
    /// The conditional modifier (not for `math` and sends, whose field holds something else).
    pub cond: Option<CondMod>,
    /// The extended-math function of `math`.
    pub math: Option<MathFn>,
    /// The shared function a send goes to.
    pub sfid: u8,
    /// The flag subregister (f0.0, f0.1, f1.0, f1.1 as 0–3) of the predicate and modifier.
    pub flag: u8,
    pub saturate: bool,
    pub acc_write: bool,
    /// Control flow has none.
    pub dst: Option<Dst>,
    pub srcs: Vec<Src>,
    /// Control flow: jump offsets in bytes from this instruction.
    pub jip: i32,
    pub uip: i32,
}

impl Inst {
    /// An instruction with no predicate, modifiers or control-flow offsets.
    pub fn new(opcode: Opcode, exec_size: u8, dst: Option<Dst>, srcs: Vec<Src>) -> Inst {
        Inst {
            opcode,
            exec_size,
            group: 0,
            mask_all: false,
            predicate: None,
            cond: None,
            math: None,
            sfid: 0,
            flag: 0,
            saturate: false,
            acc_write: false,
            dst,
            srcs,
            jip: 0,
            uip: 0,
        }
    }

    /// Whether the 3-source Align16 layout encodes the instruction.
    pub fn is_three_src(&self) -> bool {
        self.opcode.num_srcs() == 3
    }

    /// The send descriptor (a send's immediate second source).
    pub fn send_desc(&self) -> Option<u32> {
        self.descriptor().map(|desc| desc.0)
    }

    /// The send descriptor, to read field by field.
    pub(crate) fn descriptor(&self) -> Option<Descriptor> {
        match self.srcs.get(1) {
            Some(&Src::Imm(_, bits)) if self.opcode.is_send() => Some(Descriptor(bits as u32)),
            _ => None,
        }
    }

    /// A send that ends the thread.
    pub fn is_eot(&self) -> bool {
        self.descriptor()
            .is_some_and(|desc| desc.bit(desc::Send::FIELDS.eot))
    }
}

/// Why an instruction cannot be encoded or a word cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EncodingError(String);

impl EncodingError {
    pub(crate) fn new(message: String) -> EncodingError {
        EncodingError(message)
    }
}

fn error<T>(message: impl Into<String>) -> Result<T, EncodingError> {
    Err(EncodingError(message.into()))
}

const FILE_ARF: u64 = 0;
const FILE_GRF: u64 = 1;
const FILE_IMM: u64 = 3;

fn file_code(file: RegFile) -> u64 {
    match file {
        RegFile::Arf => FILE_ARF,
        RegFile::Grf => FILE_GRF,
    }
}

fn file_from_code(code: u64) -> Result<RegFile, EncodingError> {
    match code {
        FILE_ARF => Ok(RegFile::Arf),
        FILE_GRF => Ok(RegFile::Grf),
        _ => error(format!(
            "register file {code} (MRF) does not exist on Gen7+"
        )),
    }
}

/// The exec-size field: log2 of 1–32.
fn exec_size_code(exec_size: u8) -> Result<u64, EncodingError> {
    if exec_size.is_power_of_two() && exec_size <= 32 {
        Ok(exec_size.trailing_zeros() as u64)
    } else {
        error(format!("exec size {exec_size} is not 1, 2, 4, 8, 16 or 32"))
    }
}

/// The header's function field: conditional modifier, math function or shared function.
fn function_code(inst: &Inst) -> u8 {
    if inst.opcode == Opcode::Math {
        inst.math.map_or(0, MathFn::code)
    } else if inst.opcode.is_send() {
        inst.sfid
    } else {
        inst.cond.map_or(0, CondMod::code)
    }
}

/// Encodes `inst` for `hw` as four little-endian dwords.
pub fn encode(inst: &Inst, hw: Gen) -> Result<[u32; 4], EncodingError> {
    let mut b = Bits::default();
    let h = Header::of(hw);
    b.put(h.opcode, inst.opcode.code())?;
    b.put(h.access_mode, inst.is_three_src())?;
    b.put(h.mask_all, inst.mask_all)?;
    if !inst.group.is_multiple_of(4) || inst.group >= 32 {
        return error(format!(
            "channel group {} is not a multiple of 4 below 32",
            inst.group
        ));
    }
    b.put(h.qtr_ctrl, inst.group / 8)?;
    b.put(h.nib_ctrl, inst.group / 4 % 2 == 1)?;
    if let Some(p) = inst.predicate {
        if p.control == 0 || p.control > 13 {
            return error(format!("predicate control {} is not 1–13", p.control));
        }
        b.put(h.pred_control, p.control)?;
        b.put(h.pred_inv, p.inverse)?;
    }
    b.put(h.exec_size, exec_size_code(inst.exec_size)?)?;
    b.put(h.function, function_code(inst))?;
    b.put(h.acc_wr_ctrl, inst.acc_write)?;
    b.put(h.saturate, inst.saturate)?;
    if inst.flag > 3 {
        return error(format!("flag subregister {} is not 0–3", inst.flag));
    }
    if inst.is_three_src() {
        encode_three_src(inst, hw, &mut b)?;
    } else {
        let a = Align1::of(hw);
        b.put(a.flag_subreg, inst.flag % 2 == 1)?;
        b.put(a.flag_reg, inst.flag / 2 == 1)?;
        if inst.opcode.is_control_flow() {
            encode_jumps(inst, hw, &mut b)?;
        } else {
            encode_align1(inst, hw, &mut b)?;
        }
    }
    Ok([0, 1, 2, 3].map(|i| (b.0 >> (32 * i)) as u32))
}

fn encode_jumps(inst: &Inst, hw: Gen, b: &mut Bits) -> Result<(), EncodingError> {
    // A D-typed null destination with stride 1; the offsets sit where the immediate does: in
    // source 0's slot on Gen8+ (UIP overlaps source 1's fields), in source 1's on Gen7.
    let (a, jumps) = (Align1::of(hw), Jumps::of(hw));
    let d = |code: Option<u8>| code.expect("D exists everywhere");
    b.put(a.dst_type, d(Type::D.reg_code(hw)))?;
    b.put(a.dst_hstride, hstride_code(1).expect("stride 1 exists"))?;
    if hw.is_gen8_plus() {
        b.put(a.src0_file, FILE_IMM)?;
        b.put(a.src0_type, d(Type::D.imm_code(hw)))?;
        b.put(jumps.jip, inst.jip as u32)?;
        b.put(jumps.uip, inst.uip as u32)?;
    } else {
        b.put(a.src0_type, d(Type::D.reg_code(hw)))?;
        b.put(a.src1_file, FILE_IMM)?;
        b.put(a.src1_type, d(Type::D.imm_code(hw)))?;
        // Gen7 counts in 64-bit units, in 16-bit fields.
        let units = |bytes: i32| -> Result<u16, EncodingError> {
            if bytes % 8 != 0 || bytes / 8 > i16::MAX as i32 || bytes / 8 < i16::MIN as i32 {
                return error(format!("jump of {bytes} bytes does not fit Gen7's field"));
            }
            Ok((bytes / 8) as i16 as u16)
        };
        b.put(jumps.jip, units(inst.jip)?)?;
        b.put(jumps.uip, units(inst.uip)?)?;
    }
    Ok(())
}

fn encode_align1(inst: &Inst, hw: Gen, b: &mut Bits) -> Result<(), EncodingError> {
    let Some(dst) = inst.dst else {
        return error(format!("`{}` needs a destination", inst.opcode.name()));
    };
    if inst.srcs.len() != inst.opcode.num_srcs() {
        return error(format!(
            "`{}` takes {} sources, not {}",
            inst.opcode.name(),
            inst.opcode.num_srcs(),
            inst.srcs.len()
        ));
    }
    let a = Align1::of(hw);
    b.put(a.dst_file, file_code(dst.file))?;
    b.put(a.dst_type, reg_type(dst.ty, hw)?)?;
    b.put(a.dst_subnr, dst.subnr)?;
    b.put(a.dst_nr, dst.nr)?;
    match hstride_code(dst.hstride) {
        Some(code) if dst.hstride != 0 => b.put(a.dst_hstride, code)?,
        _ => {
            return error(format!(
                "destination stride {} is not 1, 2 or 4",
                dst.hstride
            ));
        }
    }
    for (i, src) in inst.srcs.iter().enumerate() {
        let f = a.src(i);
        match *src {
            Src::Reg(reg) => {
                b.put(f.file, file_code(reg.file))?;
                b.put(f.ty, reg_type(reg.ty, hw)?)?;
                b.put(f.subnr, reg.subnr)?;
                b.put(f.nr, reg.nr)?;
                b.put(f.abs, reg.abs)?;
                b.put(f.negate, reg.negate)?;
                let region = reg.region;
                let bad = || EncodingError(format!("region {region:?} cannot be encoded"));
                b.put(f.hstride, hstride_code(region.hstride).ok_or_else(bad)?)?;
                b.put(f.width, region.width_code().ok_or_else(bad)?)?;
                b.put(f.vstride, region.vstride_code().ok_or_else(bad)?)?;
            }
            Src::Imm(ty, bits) => {
                // An immediate is the last source; its type takes that source's type field.
                if i + 1 != inst.srcs.len() {
                    return error("only the last source may be an immediate");
                }
                let code = ty
                    .imm_code(hw)
                    .ok_or_else(|| EncodingError(format!("no {ty} immediates on {hw:?}")))?;
                b.put(f.file, FILE_IMM)?;
                b.put(f.ty, code)?;
                let imm = Imm::of(hw);
                if ty.size() == 8 {
                    b.put(imm.imm64, bits)?;
                } else {
                    b.put(imm.imm32, bits & 0xffff_ffff)?;
                }
            }
        }
    }
    Ok(())
}

fn reg_type(ty: Type, hw: Gen) -> Result<u8, EncodingError> {
    ty.reg_code(hw)
        .ok_or_else(|| EncodingError(format!("no {ty} registers on {hw:?}")))
}

fn encode_three_src(inst: &Inst, hw: Gen, b: &mut Bits) -> Result<(), EncodingError> {
    let t = ThreeSrc::of(hw);
    b.put(t.flag_subreg, inst.flag % 2 == 1)?;
    b.put(t.flag_reg, inst.flag / 2 == 1)?;
    let Some(dst) = inst.dst else {
        return error(format!("`{}` needs a destination", inst.opcode.name()));
    };
    let ty = |t: Type| {
        t.three_src_code(hw)
            .ok_or_else(|| EncodingError(format!("3-source instructions cannot use {t}")))
    };
    b.put(t.dst_type, ty(dst.ty)?)?;
    if dst.file != RegFile::Grf || dst.subnr % 4 != 0 {
        return error("a 3-source destination is a GRF at a dword offset");
    }
    b.put(t.dst_nr, dst.nr)?;
    b.put(t.dst_subnr, dst.subnr / 4)?;
    b.put(t.dst_writemask, dst.writemask)?;
    if inst.srcs.len() != 3 {
        return error(format!("`{}` takes 3 sources", inst.opcode.name()));
    }
    let mut src_type = None;
    for (src, f) in inst.srcs.iter().zip(t.srcs()) {
        let Src::Reg(reg) = *src else {
            return error("3-source instructions take no immediates");
        };
        if reg.file != RegFile::Grf || reg.subnr % 4 != 0 {
            return error("a 3-source operand is a GRF at a dword offset");
        }
        if *src_type.get_or_insert(reg.ty) != reg.ty {
            return error("the sources of a 3-source instruction share one type");
        }
        let rep = match reg.region {
            Region::SCALAR => true,
            r if r == Region::new(4, 4, 1) => false,
            r => {
                return error(format!(
                    "3-source region {r:?} is neither <0,1,0> nor <4,4,1>"
                ));
            }
        };
        b.put(f.rep_ctrl, rep)?;
        b.put(f.swizzle, if rep { 0 } else { reg.swizzle })?;
        b.put(f.subnr, reg.subnr / 4)?;
        b.put(f.nr, reg.nr)?;
        b.put(f.abs, reg.abs)?;
        b.put(f.negate, reg.negate)?;
    }
    b.put(t.src_type, ty(src_type.expect("three sources"))?)?;
    Ok(())
}

/// The native binary of a program: each instruction's four dwords, little-endian.
pub fn assemble(program: &[Inst], hw: Gen) -> Result<Vec<u8>, EncodingError> {
    let mut bytes = Vec::with_capacity(16 * program.len());
    for inst in program {
        for word in encode(inst, hw)? {
            bytes.extend(word.to_le_bytes());
        }
    }
    Ok(bytes)
}

/// The instructions of a native binary (uncompacted, 16 bytes each).
pub fn disassemble_binary(bytes: &[u8], hw: Gen) -> Result<Vec<Inst>, EncodingError> {
    if !bytes.len().is_multiple_of(16) {
        return Err(EncodingError(format!(
            "{} bytes is not a whole number of 16-byte instructions",
            bytes.len()
        )));
    }
    bytes
        .chunks(16)
        .enumerate()
        .map(|(i, chunk)| {
            let word =
                |k: usize| u32::from_le_bytes(chunk[4 * k..4 * k + 4].try_into().expect("4 bytes"));
            decode([word(0), word(1), word(2), word(3)], hw)
                .map_err(|e| EncodingError(format!("instruction {i} (byte {}): {e}", 16 * i)))
        })
        .collect()
}

/// Decodes one native instruction for `hw`.
pub fn decode(words: [u32; 4], hw: Gen) -> Result<Inst, EncodingError> {
    let b = Bits(
        words
            .iter()
            .enumerate()
            .map(|(i, &w)| (w as u128) << (32 * i))
            .sum(),
    );
    let h = Header::of(hw);
    if b.bit(h.cmpt_ctrl) {
        return error("compacted instructions are not supported");
    }
    let code = b.get(h.opcode) as u8;
    let opcode = Opcode::from_code(code)
        .ok_or_else(|| EncodingError(format!("unknown opcode {code:#x}")))?;
    let exec_size = 1u8
        .checked_shl(b.get(h.exec_size) as u32)
        .filter(|&e| e <= 32)
        .ok_or_else(|| EncodingError("exec size field above 32".into()))?;
    let mut inst = Inst::new(opcode, exec_size, None, Vec::new());
    inst.mask_all = b.bit(h.mask_all);
    inst.group = b.get(h.qtr_ctrl) as u8 * 8 + b.bit(h.nib_ctrl) as u8 * 4;
    let control = b.get(h.pred_control) as u8;
    if control != 0 {
        inst.predicate = Some(Predicate {
            control,
            inverse: b.bit(h.pred_inv),
        });
    }
    let function = b.get(h.function) as u8;
    if opcode == Opcode::Math {
        inst.math = Some(
            MathFn::from_code(function)
                .ok_or_else(|| EncodingError(format!("unknown math function {function}")))?,
        );
    } else if opcode.is_send() {
        inst.sfid = function;
    } else if function != 0 {
        inst.cond =
            Some(CondMod::from_code(function).ok_or_else(|| {
                EncodingError(format!("unknown conditional modifier {function}"))
            })?);
    }
    inst.acc_write = b.bit(h.acc_wr_ctrl);
    inst.saturate = b.bit(h.saturate);
    if inst.is_three_src() {
        decode_three_src(&b, hw, &mut inst)?;
        return Ok(inst);
    }
    let a = Align1::of(hw);
    inst.flag = b.bit(a.flag_subreg) as u8 + 2 * b.bit(a.flag_reg) as u8;
    if opcode.is_control_flow() {
        let jumps = Jumps::of(hw);
        if hw.is_gen8_plus() {
            inst.jip = b.get(jumps.jip) as u32 as i32;
            inst.uip = b.get(jumps.uip) as u32 as i32;
        } else {
            inst.jip = b.get(jumps.jip) as u16 as i16 as i32 * 8;
            inst.uip = b.get(jumps.uip) as u16 as i16 as i32 * 8;
        }
        return Ok(inst);
    }
    let dst_type = b.get(a.dst_type) as u8;
    inst.dst = Some(Dst {
        file: file_from_code(b.get(a.dst_file))?,
        nr: b.get(a.dst_nr) as u8,
        subnr: b.get(a.dst_subnr) as u8,
        ty: Type::from_reg_code(dst_type, hw)
            .ok_or_else(|| EncodingError(format!("unknown destination type {dst_type}")))?,
        hstride: hstride_from_code(b.get(a.dst_hstride) as u8),
        writemask: 0xF,
    });
    let count = if opcode.is_send() {
        2
    } else {
        opcode.num_srcs().clamp(1, 2)
    };
    for f in (0..count).map(|i| a.src(i)) {
        let file = b.get(f.file);
        let ty_code = b.get(f.ty) as u8;
        if file == FILE_IMM {
            let ty = Type::from_imm_code(ty_code, hw)
                .ok_or_else(|| EncodingError(format!("unknown immediate type {ty_code}")))?;
            let imm = Imm::of(hw);
            let bits = if ty.size() == 8 {
                b.get(imm.imm64)
            } else {
                b.get(imm.imm32)
            };
            inst.srcs.push(Src::Imm(ty, bits));
            break;
        }
        let region = Region::from_codes(
            b.get(f.vstride) as u8,
            b.get(f.width) as u8,
            b.get(f.hstride) as u8,
        )
        .ok_or_else(|| EncodingError("invalid source region".into()))?;
        inst.srcs.push(Src::Reg(Reg {
            file: file_from_code(file)?,
            nr: b.get(f.nr) as u8,
            subnr: b.get(f.subnr) as u8,
            ty: Type::from_reg_code(ty_code, hw)
                .ok_or_else(|| EncodingError(format!("unknown source type {ty_code}")))?,
            region,
            negate: b.bit(f.negate),
            abs: b.bit(f.abs),
            swizzle: IDENTITY_SWIZZLE,
        }));
    }
    Ok(inst)
}

fn decode_three_src(b: &Bits, hw: Gen, inst: &mut Inst) -> Result<(), EncodingError> {
    let t = ThreeSrc::of(hw);
    inst.flag = b.bit(t.flag_subreg) as u8 + 2 * b.bit(t.flag_reg) as u8;
    let ty = |code: u64| {
        Type::from_three_src_code(code as u8, hw)
            .ok_or_else(|| EncodingError(format!("unknown 3-source type {code}")))
    };
    inst.dst = Some(Dst {
        file: RegFile::Grf,
        nr: b.get(t.dst_nr) as u8,
        subnr: b.get(t.dst_subnr) as u8 * 4,
        ty: ty(b.get(t.dst_type))?,
        hstride: 1,
        writemask: b.get(t.dst_writemask) as u8,
    });
    let src_type = ty(b.get(t.src_type))?;
    for f in t.srcs() {
        let rep = b.bit(f.rep_ctrl);
        inst.srcs.push(Src::Reg(Reg {
            file: RegFile::Grf,
            nr: b.get(f.nr) as u8,
            subnr: b.get(f.subnr) as u8 * 4,
            ty: src_type,
            region: if rep {
                Region::SCALAR
            } else {
                Region::new(4, 4, 1)
            },
            negate: b.bit(f.negate),
            abs: b.bit(f.abs),
            swizzle: if rep { 0 } else { b.get(f.swizzle) as u8 },
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(bytes: [u8; 16]) -> [u32; 4] {
        std::array::from_fn(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()))
    }

    /// `add(8) g124<1>F g7<8,8,1>D 1D { align1 1Q };` as Gen9 encodes it.
    #[test]
    fn gen9_add_with_an_immediate() {
        let bytes = [
            0x40, 0x00, 0x60, 0x00, 0xe8, 0x0a, 0x80, 0x2f, 0xe0, 0x00, 0x8d, 0x0e, 0x01, 0x00,
            0x00, 0x00,
        ];
        let inst = Inst::new(
            Opcode::Add,
            8,
            Some(Dst::grf(124, 0, Type::F)),
            vec![
                Src::Reg(Reg::grf(7, 0, Type::D, Region::new(8, 8, 1))),
                Src::Imm(Type::D, 1),
            ],
        );
        assert_eq!(encode(&inst, Gen::Gen9).unwrap(), words(bytes));
        assert_eq!(decode(words(bytes), Gen::Gen9).unwrap(), inst);
    }

    /// `mov(8) g123<1>UD g1<8,8,1>UD { align1 WE_all 1Q };` on Gen9.
    #[test]
    fn gen9_mov_with_write_enable_all() {
        let bytes = [
            0x01, 0x00, 0x60, 0x00, 0x0c, 0x02, 0x60, 0x2f, 0x20, 0x00, 0x8d, 0x00, 0x00, 0x00,
            0x00, 0x00,
        ];
        let mut inst = Inst::new(
            Opcode::Mov,
            8,
            Some(Dst::grf(123, 0, Type::UD)),
            vec![Src::Reg(Reg::grf(1, 0, Type::UD, Region::new(8, 8, 1)))],
        );
        inst.mask_all = true;
        assert_eq!(decode(words(bytes), Gen::Gen9).unwrap(), inst);
        assert_eq!(encode(&inst, Gen::Gen9).unwrap(), words(bytes));
    }

    /// `(+f0.0) if(8) JIP: +32 UIP: +80` on Gen9: offsets in bytes, UIP in dword 2.
    #[test]
    fn gen9_if_carries_jip_and_uip() {
        let bytes = [
            0x22, 0x00, 0x61, 0x00, 0x20, 0x0e, 0x00, 0x20, 0x50, 0x00, 0x00, 0x00, 0x20, 0x00,
            0x00, 0x00,
        ];
        let inst = decode(words(bytes), Gen::Gen9).unwrap();
        assert_eq!(inst.opcode, Opcode::If);
        assert_eq!((inst.jip, inst.uip), (32, 80));
        assert_eq!(
            inst.predicate,
            Some(Predicate {
                control: 1,
                inverse: false
            })
        );
        assert_eq!(encode(&inst, Gen::Gen9).unwrap(), words(bytes));
    }

    /// Every generation decodes what it encodes, for a spread of instructions.
    #[test]
    fn decode_inverts_encode_on_every_generation() {
        let region = Region::new(8, 8, 1);
        let mut mad = Inst::new(
            Opcode::Mad,
            8,
            Some(Dst::grf(26, 0, Type::F)),
            vec![
                Src::Reg(Reg::grf(22, 0, Type::F, Region::new(4, 4, 1))),
                // A replicated scalar has no swizzle.
                Src::Reg(Reg {
                    negate: true,
                    swizzle: 0,
                    ..Reg::grf(2, 16, Type::F, Region::SCALAR)
                }),
                Src::Reg(Reg {
                    swizzle: 0x1B,
                    ..Reg::grf(5, 0, Type::F, Region::new(4, 4, 1))
                }),
            ],
        );
        mad.saturate = true;
        let mut cmp = Inst::new(
            Opcode::Cmp,
            16,
            Some(Dst::null(Type::F)),
            vec![
                Src::Reg(Reg {
                    abs: true,
                    ..Reg::grf(20, 0, Type::F, region)
                }),
                Src::Imm(Type::F, 0xbf80_0000),
            ],
        );
        cmp.cond = Some(CondMod::Z);
        cmp.flag = 1;
        cmp.group = 16;
        let mut math = Inst::new(
            Opcode::Math,
            8,
            Some(Dst::grf(95, 0, Type::F)),
            vec![
                Src::Reg(Reg::grf(94, 0, Type::F, region)),
                Src::Reg(Reg {
                    file: RegFile::Arf,
                    ..Reg::grf(0, 0, Type::F, region)
                }),
            ],
        );
        math.math = Some(MathFn::Inv);
        math.group = 4;
        let mut sel = Inst::new(
            Opcode::Sel,
            8,
            Some(Dst::grf(124, 0, Type::UD)),
            vec![
                Src::Reg(Reg::grf(124, 0, Type::UD, region)),
                Src::Imm(Type::UD, 0x3f80_0000),
            ],
        );
        sel.predicate = Some(Predicate {
            control: 1,
            inverse: true,
        });
        let mut send = Inst::new(
            Opcode::Send,
            8,
            Some(Dst::grf(124, 0, Type::UW)),
            vec![
                Src::Reg(Reg::grf(13, 0, Type::UD, region)),
                Src::Imm(Type::UD, 0x8643_a001),
            ],
        );
        send.sfid = 2;
        let mut halt = Inst::new(Opcode::Halt, 8, None, Vec::new());
        halt.jip = -48;
        halt.uip = 64;
        halt.predicate = Some(Predicate {
            control: 6,
            inverse: true,
        });
        halt.flag = 1;
        // A call's offset is a 32-bit immediate on every generation; a return reads its frame.
        let mut call = Inst::new(
            Opcode::Call,
            1,
            Some(Dst::grf(21, 0, Type::UD)),
            vec![Src::Imm(Type::D, (-1_048_576i32) as u32 as u64)],
        );
        call.mask_all = true;
        let mut ret = Inst::new(
            Opcode::Ret,
            1,
            Some(Dst::null(Type::UD)),
            vec![Src::Reg(Reg::grf(21, 0, Type::UD, Region::SCALAR))],
        );
        ret.mask_all = true;
        for hw in [Gen::Gen7, Gen::Gen75, Gen::Gen8, Gen::Gen9] {
            for inst in [&mad, &cmp, &math, &sel, &send, &halt, &call, &ret] {
                let encoded = encode(inst, hw).unwrap_or_else(|e| panic!("{hw:?}: {e}"));
                assert_eq!(&decode(encoded, hw).unwrap(), inst, "{hw:?}");
            }
        }
        assert!(send.is_eot());
    }

    use proptest::prelude::*;

    /// A register source of any type `hw` has, any valid region and modifiers.
    fn any_reg(hw: Gen) -> impl Strategy<Value = Reg> {
        let types: Vec<Type> = Type::ALL
            .into_iter()
            .filter(|t| t.reg_code(hw).is_some())
            .collect();
        (
            any::<bool>(),
            any::<u8>(),
            0u8..32,
            proptest::sample::select(types),
            (0u8..7, 0u8..5, 0u8..4),
            any::<(bool, bool)>(),
        )
            .prop_map(|(arf, nr, subnr, ty, (v, w, h), (negate, abs))| Reg {
                file: if arf { RegFile::Arf } else { RegFile::Grf },
                nr,
                subnr,
                ty,
                region: Region::from_codes(v, w, h).expect("codes in range"),
                negate,
                abs,
                swizzle: IDENTITY_SWIZZLE,
            })
    }

    /// A well-formed 2-source Align1 instruction for a generation.
    fn any_two_source() -> impl Strategy<Value = (Gen, Inst)> {
        let gens = vec![Gen::Gen7, Gen::Gen75, Gen::Gen8, Gen::Gen9];
        proptest::sample::select(gens).prop_flat_map(|hw| {
            let opcodes = vec![
                Opcode::Add,
                Opcode::Mul,
                Opcode::And,
                Opcode::Sel,
                Opcode::Cmp,
            ];
            let src1 = prop_oneof![
                any_reg(hw).prop_map(Src::Reg),
                any::<u32>().prop_map(|bits| Src::Imm(Type::UD, bits as u64)),
            ];
            (
                Just(hw),
                proptest::sample::select(opcodes),
                (0u32..6, 0u8..8),
                any::<(bool, bool, bool)>(),
                proptest::option::of(proptest::sample::select(CondMod::ALL.to_vec())),
                0u8..4,
                proptest::option::of((1u8..14, any::<bool>())),
                (any::<u8>(), proptest::sample::select(vec![1u8, 2, 4])),
                any_reg(hw),
                src1,
            )
                .prop_map(
                    |(hw, opcode, (exec, group), flags, cond, flag, pred, dst, src0, src1)| {
                        let (nr, hstride) = dst;
                        let mut inst = Inst::new(
                            opcode,
                            1 << exec,
                            Some(Dst {
                                hstride,
                                ..Dst::grf(nr, 0, Type::F)
                            }),
                            vec![Src::Reg(src0), src1],
                        );
                        inst.group = group * 4;
                        (inst.mask_all, inst.saturate, inst.acc_write) = flags;
                        inst.cond = cond;
                        inst.flag = flag;
                        inst.predicate =
                            pred.map(|(control, inverse)| Predicate { control, inverse });
                        (hw, inst)
                    },
                )
        })
    }

    proptest! {
        /// Any well-formed 2-source Align1 instruction decodes to itself, on every generation.
        #[test]
        fn two_source_instructions_round_trip((hw, inst) in any_two_source()) {
            let encoded = encode(&inst, hw).unwrap();
            prop_assert_eq!(decode(encoded, hw).unwrap(), inst);
        }
    }

    #[test]
    fn unencodable_instructions_are_errors() {
        let df = Inst::new(
            Opcode::Mov,
            8,
            Some(Dst::grf(2, 0, Type::F)),
            vec![Src::Imm(Type::DF, 1.0f64.to_bits())],
        );
        assert!(encode(&df, Gen::Gen7).is_err());
        assert!(encode(&df, Gen::Gen8).is_ok());
        let bad_stride = Inst::new(
            Opcode::Mov,
            8,
            Some(Dst {
                hstride: 0,
                ..Dst::grf(2, 0, Type::F)
            }),
            vec![Src::Reg(Reg::grf(3, 0, Type::F, Region::new(8, 8, 1)))],
        );
        assert!(encode(&bad_stride, Gen::Gen9).is_err());
        assert!(decode([0x7f, 0, 0, 0], Gen::Gen9).is_err());
    }
}
