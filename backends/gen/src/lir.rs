//! The Gen IR: hardware instructions over virtual registers, in program order.
//!
//! Lowering ([`crate::lower`]) produces it from the shrew IR at one dispatch width; register
//! allocation ([`crate::regalloc`]) maps its virtual GRFs to hardware GRFs; emission
//! ([`crate::emit`]) turns it into native [`crate::encoding::Inst`]s with resolved jumps.
//!
//! An instruction is a hardware opcode with the hardware's fields (execution size, channel
//! group, WE_all, predicate, flag, conditional modifier, saturate, math function, shared
//! function), except that its register operands name *virtual* GRFs: a [`VReg`] is a run of
//! whole GRFs (a vector value at SIMD16 is several), and an operand is a byte offset into it,
//! a type and a region. Fixed registers (the thread payload, pre-coloured) and the ARF (flags,
//! null) appear as they are. Structured control flow is in the list as its hardware
//! instructions (`if`, `else`, `endif`, `while`, `break`, `cont`, `halt`) plus [`Op::Do`], the
//! mark where a loop starts (Gen6+ has no `do` instruction), and [`Op::HaltTarget`], where
//! halted channels join again.

use crate::encoding::EncodingError;
use crate::fields::{Descriptor, Field, desc};
use crate::isa::{CondMod, Gen, MathFn, Opcode, Region, Type};
use shrew_engine::passes::machine::MachineIr;
use shrew_engine::provenance::Origin;
use std::fmt;
use std::sync::Arc;

/// A virtual GRF run, numbered from 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VReg(pub u32);

/// What a register operand lives in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Base {
    Vgrf(VReg),
    /// A hardware GRF: the thread payload.
    Fixed(u8),
    /// An architecture register (flag, null, accumulator) by its number.
    Arf(u8),
}

/// A register operand: `offset` bytes into its base, read through `region` (sources) or written
/// every `region.hstride` elements (destinations).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    pub base: Base,
    pub offset: u32,
    pub ty: Type,
    pub region: Region,
    pub negate: bool,
    pub abs: bool,
}

impl Operand {
    /// A value of `ty` at `offset` bytes into `reg`, one element per channel: rows of 8
    /// elements, of 4 for 64-bit types (a row may not cross a GRF).
    pub fn vector(reg: VReg, offset: u32, ty: Type) -> Operand {
        Operand {
            base: Base::Vgrf(reg),
            offset,
            ty,
            region: Region::packed(ty),
            negate: false,
            abs: false,
        }
    }

    /// Dword `half` (0 low, 1 high) of each channel's 64-bit element of `reg` from `offset`:
    /// every other dword, in rows of 4 (a GRF each).
    pub fn half_of_wide(reg: VReg, offset: u32, half: u32) -> Operand {
        Operand {
            region: Region::new(8, 4, 2),
            ..Operand::vector(reg, offset + 4 * half, Type::UD)
        }
    }

    /// Payload GRF `grf` from `offset` bytes, one element of `ty` per channel.
    pub fn payload(grf: u8, offset: u32, ty: Type) -> Operand {
        Operand {
            region: Region::new(8, 8, 1),
            ..Operand::scalar(Base::Fixed(grf), offset, ty)
        }
    }

    /// The same element for every channel.
    pub fn scalar(base: Base, offset: u32, ty: Type) -> Operand {
        Operand {
            base,
            offset,
            ty,
            region: Region::SCALAR,
            negate: false,
            abs: false,
        }
    }

    pub fn null(ty: Type) -> Operand {
        Operand::scalar(Base::Arf(crate::isa::ARF_NULL), 0, ty)
    }

    /// The same bytes read as `ty`; a packed operand stays packed (one element per channel).
    pub fn retype(self, ty: Type) -> Operand {
        let region = if self.region == Region::packed(self.ty) {
            Region::packed(ty)
        } else {
            self.region
        };
        Operand { ty, region, ..self }
    }

    pub fn negated(self) -> Operand {
        Operand {
            negate: !self.negate,
            ..self
        }
    }

    pub fn absolute(self) -> Operand {
        Operand {
            abs: true,
            negate: false,
            ..self
        }
    }

    pub fn vreg(&self) -> Option<VReg> {
        match self.base {
            Base::Vgrf(r) => Some(r),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        self.base == Base::Arf(crate::isa::ARF_NULL)
    }

    /// The GRFs of its base that `span` bytes from the operand's offset touch.
    pub fn grfs(&self, span: u32) -> std::ops::RangeInclusive<u32> {
        self.offset / 32..=(self.offset + span.max(1) - 1) / 32
    }

    /// Bytes from `offset` that `channels` channels read (sources) or write (destinations).
    pub fn span(&self, channels: u8) -> u32 {
        let last = channels.max(1) as u32 - 1;
        (self.region.element(last) + 1) * self.ty.size() as u32
    }
}

/// A source.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    Reg(Operand),
    Imm(Type, u64),
}

impl Src {
    /// An immediate of type F (a 32-bit float).
    pub fn imm_f(x: f32) -> Src {
        Src::Imm(Type::F, x.to_bits() as u64)
    }

    /// An immediate of type D (a 32-bit signed integer).
    pub fn imm_d(x: i32) -> Src {
        Src::Imm(Type::D, x as u32 as u64)
    }

    /// An immediate of type UD (a 32-bit unsigned integer).
    pub fn imm_ud(x: u32) -> Src {
        Src::Imm(Type::UD, x as u64)
    }

    pub fn ty(&self) -> Type {
        match self {
            Src::Reg(r) => r.ty,
            Src::Imm(ty, _) => *ty,
        }
    }

    pub fn reg(&self) -> Option<&Operand> {
        match self {
            Src::Reg(r) => Some(r),
            Src::Imm(..) => None,
        }
    }

    pub fn is_imm(&self) -> bool {
        matches!(self, Src::Imm(..))
    }

    /// The same register read as `ty`; immediates stay as they are.
    pub fn retype(self, ty: Type) -> Src {
        match self {
            Src::Reg(r) => Src::Reg(r.retype(ty)),
            imm => imm,
        }
    }
}

/// What an instruction does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Hw(Opcode),
    /// A loop starts here.
    Do,
    /// Halted channels join again here.
    HaltTarget,
    /// A call of the subroutine compiled from the function of this number: the enabled
    /// channels run it, then go on here. The callee keeps the caller's registers (its own are
    /// above every register live here) and may read the whole payload.
    Call(u32),
    /// The end of a subroutine: back to the instruction after the call, whose address and
    /// channel mask source 0 holds (the register the call wrote them to).
    Return,
}

/// One instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub op: Op,
    pub exec_size: u8,
    pub group: u8,
    pub mask_all: bool,
    /// Predicate control (1 normal, reductions as in the encoding) and inversion.
    pub predicate: Option<crate::encoding::Predicate>,
    /// Flag subregister of the predicate and conditional modifier: f0.0, f0.1, f1.0, f1.1.
    pub flag: u8,
    pub cond: Option<CondMod>,
    pub saturate: bool,
    pub math: Option<MathFn>,
    /// Sends: the shared function and the descriptor.
    pub send: Option<Message>,
    pub dst: Option<Operand>,
    pub srcs: Vec<Src>,
    /// The pass and rule that made the IR instruction this one was lowered from, when the run
    /// recorded provenance.
    pub origin: Option<Arc<Origin>>,
}

/// A send's message: the shared function and the descriptor, which [`Message::new`] builds
/// through the declared fields ([`crate::fields::desc`]) and the accessors read back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub sfid: u8,
    desc: Descriptor,
}

impl Message {
    /// A message to shared function `sfid` whose descriptor has `fields` set to their values:
    /// the lengths, header and EOT ([`desc::Send`]) and the shared function's own fields. A
    /// value too wide for its field is an error naming it.
    pub(crate) fn new(sfid: u8, fields: &[(Field, u32)]) -> Result<Message, EncodingError> {
        Ok(Message {
            sfid,
            desc: Descriptor::build(fields)?,
        })
    }

    /// The payload's length in GRFs.
    pub fn mlen(&self) -> u32 {
        self.desc.get(desc::Send::FIELDS.mlen)
    }

    /// The response's length in GRFs.
    pub fn rlen(&self) -> u32 {
        self.desc.get(desc::Send::FIELDS.rlen)
    }

    /// Whether the message ends the thread.
    pub fn eot(&self) -> bool {
        self.desc.bit(desc::Send::FIELDS.eot)
    }

    /// The descriptor, the send's immediate second source.
    pub fn descriptor(&self) -> u32 {
        self.desc.0
    }

    /// Whether the message on `hw` does more than read into its response: it writes memory (no
    /// response, or an untyped atomic operation) or ends the thread.
    pub fn has_effect(&self, hw: Gen) -> bool {
        let untyped = desc::UntypedPort::of(hw);
        let atomic = self.sfid == untyped.sfid
            && desc::data_port_message_type(self.sfid, self.desc, hw) == Some(untyped.atomic);
        self.rlen() == 0 || self.eot() || atomic
    }
}

impl Inst {
    pub fn new(op: Opcode, exec_size: u8, dst: Option<Operand>, srcs: Vec<Src>) -> Inst {
        Inst {
            op: Op::Hw(op),
            exec_size,
            group: 0,
            mask_all: false,
            predicate: None,
            flag: 0,
            cond: None,
            saturate: false,
            math: None,
            send: None,
            dst,
            srcs,
            origin: None,
        }
    }

    /// A structured control-flow mark or instruction without operands.
    pub fn control(op: Op, exec_size: u8) -> Inst {
        Inst {
            op,
            ..Inst::new(Opcode::Nop, exec_size, None, Vec::new())
        }
    }

    pub fn opcode(&self) -> Option<Opcode> {
        match self.op {
            Op::Hw(op) => Some(op),
            _ => None,
        }
    }

    /// Whether every enabled channel of the destination's bytes is written: a definition that
    /// kills what the register held. Predicated instructions do not count, except `sel`, whose
    /// predicate chooses the source of each channel, not whether it is written.
    pub fn is_full_write(&self) -> bool {
        self.predicate.is_none() || self.opcode() == Some(Opcode::Sel)
    }

    /// Bytes the destination covers from its offset.
    pub fn dst_span(&self) -> u32 {
        match (&self.dst, self.send) {
            (Some(_), Some(m)) => m.rlen() * 32,
            (Some(d), None) => d.span(self.exec_size),
            (None, _) => 0,
        }
    }

    /// Bytes source `i` covers from its offset.
    pub fn src_span(&self, i: usize) -> u32 {
        match (&self.srcs[i], self.send) {
            (Src::Reg(_), Some(m)) if i == 0 => m.mlen() * 32,
            // `pln` reads b1 and b2, a GRF each per 8 channels.
            (Src::Reg(r), _) if i == 1 && self.op == Op::Hw(Opcode::Pln) => {
                2 * r.span(self.exec_size)
            }
            (Src::Reg(r), _) => r.span(self.exec_size),
            (Src::Imm(..), _) => 0,
        }
    }
}

/// The virtual-register LIR: a lowered shader at one dispatch width, before register allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Lir {
    pub dispatch_width: u8,
    pub insts: Vec<Inst>,
    /// The size in GRFs of each virtual register.
    pub vreg_sizes: Vec<u32>,
    /// GRFs the thread payload occupies from g0 (pre-coloured, never allocated).
    pub payload_regs: u32,
    /// GRFs from g0 kept for the whole program, whoever reads them: a subroutine's callers'
    /// registers and its return address (then the same as `payload_regs`); 0 in the main
    /// program, whose payload GRFs are free after their last read.
    pub kept_regs: u32,
    /// One past the last GRF the program may use: the whole file in the main program; a
    /// subroutine's window ends below what its callers keep at the top of the file (the
    /// end-of-thread payloads).
    pub grf_limit: u32,
    /// Bytes of the thread's scratch memory the program addresses itself (temporaries kept in
    /// memory), from offset 0; spills go after them.
    pub scratch_bytes: u32,
}

impl Lir {
    pub fn new_vreg(&mut self, grfs: u32) -> VReg {
        self.vreg_sizes.push(grfs);
        VReg(self.vreg_sizes.len() as u32 - 1)
    }

    /// Which control-flow instructions belong together.
    pub fn nesting(&self) -> Nesting {
        let n = self.insts.len();
        let mut nesting = Nesting {
            else_of: vec![None; n],
            endif_of: vec![None; n],
            while_of: vec![None; n],
            do_of: vec![None; n],
            halt_target: None,
        };
        let mut open: Vec<usize> = Vec::new();
        let mut loops: Vec<usize> = Vec::new();
        // Breaks and continues with the `do` of their loop, resolved once its `while` is known.
        let mut exits: Vec<(usize, usize)> = Vec::new();
        for (i, inst) in self.insts.iter().enumerate() {
            match inst.op {
                Op::Hw(Opcode::If) => open.push(i),
                Op::Do => {
                    open.push(i);
                    loops.push(i);
                }
                Op::Hw(Opcode::Else) => {
                    if let Some(&o) = open.last() {
                        nesting.else_of[o] = Some(i);
                    }
                }
                Op::Hw(Opcode::Endif) => {
                    if let Some(o) = open.pop() {
                        nesting.endif_of[o] = Some(i);
                        if let Some(e) = nesting.else_of[o] {
                            nesting.endif_of[e] = Some(i);
                        }
                    }
                }
                Op::Hw(Opcode::While) => {
                    if let Some(o) = open.pop() {
                        nesting.while_of[o] = Some(i);
                        nesting.do_of[i] = Some(o);
                    }
                    loops.pop();
                }
                Op::Hw(Opcode::Break | Opcode::Cont) => {
                    if let Some(&d) = loops.last() {
                        exits.push((i, d));
                    }
                }
                Op::HaltTarget => nesting.halt_target = Some(i),
                _ => {}
            }
        }
        for (i, d) in exits {
            nesting.while_of[i] = nesting.while_of[d];
        }
        nesting
    }
}

/// The structure of a program's control flow, by instruction index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nesting {
    /// For an `if`: its `else`, if it has one.
    pub else_of: Vec<Option<usize>>,
    /// For an `if` or `else`: its `endif`.
    pub endif_of: Vec<Option<usize>>,
    /// For a `do` mark, `break` or `cont`: the `while` of the loop.
    pub while_of: Vec<Option<usize>>,
    /// For a `while`: its `do` mark.
    pub do_of: Vec<Option<usize>>,
    /// Where halted channels join again.
    pub halt_target: Option<usize>,
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negate {
            f.write_str("-")?;
        }
        if self.abs {
            f.write_str("(abs)")?;
        }
        match self.base {
            Base::Vgrf(r) => write!(f, "vgrf{}", r.0)?,
            Base::Fixed(n) => write!(f, "g{n}")?,
            Base::Arf(n) => write!(f, "arf{n:#x}")?,
        }
        let r = self.region;
        let vstride = r.vstride.map_or("Vx".to_string(), |v| v.to_string());
        write!(
            f,
            "+{}<{},{},{}>{}",
            self.offset, vstride, r.width, r.hstride, self.ty
        )
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.predicate {
            write!(
                f,
                "({}f{}.{}) ",
                if p.inverse { '-' } else { '+' },
                self.flag / 2,
                self.flag % 2
            )?;
        }
        match self.op {
            Op::Hw(op) => f.write_str(op.name())?,
            Op::Do => f.write_str("do")?,
            Op::HaltTarget => f.write_str("halt_target")?,
            Op::Call(callee) => write!(f, "call fn{callee}")?,
            Op::Return => f.write_str("return")?,
        }
        if let Some(m) = self.math {
            write!(f, " {}", m.name())?;
        }
        if self.saturate {
            f.write_str(".sat")?;
        }
        if let Some(c) = self.cond {
            write!(f, ".{}", c.name())?;
        }
        write!(f, "({})", self.exec_size)?;
        if let Some(d) = &self.dst {
            write!(f, " {d}")?;
        }
        for s in &self.srcs {
            match s {
                Src::Reg(r) => write!(f, " {r}")?,
                Src::Imm(ty, bits) => write!(f, " {bits:#x}{ty}")?,
            }
        }
        if let Some(m) = self.send {
            write!(
                f,
                " sfid {} mlen {} rlen {}{}",
                m.sfid,
                m.mlen(),
                m.rlen(),
                if m.eot() { " EOT" } else { "" }
            )?;
        }
        if self.mask_all {
            f.write_str(" WE_all")?;
        }
        Ok(())
    }
}

impl MachineIr for Lir {
    /// A header with the dispatch width, payload and virtual registers, then one instruction a
    /// line.
    fn print(&self) -> String {
        let mut out = format!(
            "SIMD{} program: {} payload GRFs, {} kept, GRFs below {}, {} scratch bytes, vgrf sizes {:?}\n",
            self.dispatch_width,
            self.payload_regs,
            self.kept_regs,
            self.grf_limit,
            self.scratch_bytes,
            self.vreg_sizes
        );
        for (i, inst) in self.insts.iter().enumerate() {
            out.push_str(&format!("{i:>5}: {inst}\n"));
        }
        out
    }

    /// Every virtual register exists and every operand stays inside its register; execution
    /// sizes are those of the hardware; control flow nests.
    fn validate(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        for (i, inst) in self.insts.iter().enumerate() {
            if ![1, 2, 4, 8, 16, 32].contains(&inst.exec_size) {
                errors.push(format!("{i}: execution size {}", inst.exec_size));
            }
            let operands = inst.dst.iter().map(|d| (d, inst.dst_span())).chain(
                inst.srcs
                    .iter()
                    .enumerate()
                    .filter_map(|(k, s)| s.reg().map(|r| (r, inst.src_span(k)))),
            );
            for (operand, span) in operands {
                let Some(reg) = operand.vreg() else {
                    continue;
                };
                match self.vreg_sizes.get(reg.0 as usize) {
                    None => errors.push(format!("{i}: vgrf{} does not exist", reg.0)),
                    Some(&grfs) if operand.offset + span > grfs * 32 => errors.push(format!(
                        "{i}: {operand} reaches byte {} of vgrf{}, which has {grfs} GRFs",
                        operand.offset + span,
                        reg.0
                    )),
                    Some(_) => {}
                }
            }
        }
        let nesting = self.nesting();
        for (i, inst) in self.insts.iter().enumerate() {
            let unmatched = match inst.op {
                Op::Hw(Opcode::If) | Op::Hw(Opcode::Else) => nesting.endif_of[i].is_none(),
                Op::Do => nesting.while_of[i].is_none(),
                Op::Hw(Opcode::While) => nesting.do_of[i].is_none(),
                _ => false,
            };
            if unmatched {
                errors.push(format!("{i}: `{inst}` does not nest"));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    fn instruction_count(&self) -> usize {
        self.insts.len()
    }
}

/// Small programs for the passes' unit tests.
#[cfg(test)]
pub mod testing {
    use super::*;

    /// A SIMD8 program over `vregs` one-GRF virtual registers.
    pub fn program(vregs: u32, insts: Vec<Inst>) -> Lir {
        Lir {
            dispatch_width: 8,
            insts,
            vreg_sizes: vec![1; vregs as usize],
            payload_regs: 2,
            kept_regs: 0,
            grf_limit: crate::regalloc::GRFS,
            scratch_bytes: 0,
        }
    }

    /// Virtual register `n` as a SIMD8 vector of `ty`.
    pub fn v(n: u32, ty: Type) -> Operand {
        Operand::vector(VReg(n), 0, ty)
    }

    pub fn mov(dst: Operand, src: Src) -> Inst {
        Inst::new(Opcode::Mov, 8, Some(dst), vec![src])
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{mov, program, v};
    use super::*;

    /// A message's lengths and EOT read back from its descriptor; a value too wide for its
    /// field is an error naming it.
    #[test]
    fn messages_are_built_field_by_field() {
        let send = desc::Send::of(Gen::Gen9);
        let sampler = desc::Sampler::of(Gen::Gen9);
        let end = Message::new(7, &[(send.eot, 1), (send.mlen, 1), (send.rlen, 0)]).unwrap();
        assert_eq!((end.mlen(), end.rlen(), end.eot()), (1, 0, true));
        assert!(end.has_effect(Gen::Gen9));
        let too_many = Message::new(desc::Sampler::SFID, &[(send.rlen, 32)]).unwrap_err();
        assert_eq!(
            too_many.to_string(),
            "rlen = 32 does not fit its 5-bit field"
        );
        let too_far = Message::new(desc::Sampler::SFID, &[(sampler.sampler_index, 16)]);
        assert!(
            too_far
                .unwrap_err()
                .to_string()
                .starts_with("sampler_index")
        );
    }

    #[test]
    fn the_validator_names_missing_registers_overruns_and_broken_nesting() {
        let valid = program(2, vec![mov(v(1, Type::F), Src::Reg(v(0, Type::F)))]);
        assert_eq!(valid.validate(), Ok(()));
        assert!(
            valid
                .print()
                .contains("mov(8) vgrf1+0<8,8,1>F vgrf0+0<8,8,1>F")
        );

        let missing = program(1, vec![mov(v(1, Type::F), Src::Reg(v(0, Type::F)))]);
        let error = missing.validate().unwrap_err();
        assert!(error.contains("vgrf1 does not exist"), "{error}");

        let wide = Inst::new(Opcode::Mov, 16, Some(v(1, Type::F)), vec![Src::imm_f(1.0)]);
        let error = program(2, vec![wide]).validate().unwrap_err();
        assert!(error.contains("which has 1 GRFs"), "{error}");

        let open_if = Inst::control(Op::Hw(Opcode::If), 8);
        let error = program(0, vec![open_if]).validate().unwrap_err();
        assert!(error.contains("does not nest"), "{error}");
    }
}
