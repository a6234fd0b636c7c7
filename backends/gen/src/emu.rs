//! An emulator of Gen programs: one hardware thread running native instructions on 128
//! 32-byte GRFs, two flag registers and a per-channel execution mask.
//!
//! It reads operands through their regions, converts sources to the execution type (float when
//! any source is a float) and the result to the destination type, applies source modifiers,
//! saturation and conditional modifiers, and writes only the channels that are enabled: live
//! (dispatched and not halted), active in the structured control flow, and passing the
//! predicate (unless the instruction is WE_all).
//!
//! Control flow keeps a stack of frames. `if` narrows the mask to the channels whose predicate
//! holds and jumps to its JIP (the `else` or `endif`) when none remain; `else` flips to the other
//! channels of the `if`; `endif` restores the mask. A loop starts at the target of its `while`'s
//! backward jump (Gen6+ has no `do`): entering it pushes a loop frame; `break` and `cont` take
//! channels out until the loop ends or the `while`; `while` jumps back while any channel goes
//! on. `halt` (discard) takes channels out for the rest of the thread.
//!
//! Sends run through models of the render target, the URB's SIMD8 writes, the sampler
//! ([`crate::sampler`]), the data port's untyped surface reads, writes, atomics and fences
//! (shared local memory is a surface too), the thread's scratch memory, the gateway's barrier
//! and the thread spawner's end of thread. A thread is an [`Execution`] that stops at a
//! barrier's `wait`, so that a dispatcher can run a workgroup's threads in turns
//! ([`crate::dispatch::run_compute`]). Other sends, the accumulator instructions and address-register
//! indirection are not modelled yet: running them is an error that names the instruction.

use crate::encoding::{Dst, Inst, Reg, Src};
use crate::fields::desc;
use crate::isa::{
    ARF_FLAG, ARF_NULL, CondMod, Gen, MAX_SCRATCH_BYTES, MathFn, Opcode, RegFile,
    SCRATCH_BASE_BYTE, Type, restricted_float,
};
use crate::sampler::{self, TextureSurface};
use shrew_engine::interp::{Image, Resources};
use shrew_engine::{deadline, meter};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One hardware thread's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Thread {
    pub grf: Vec<[u8; 32]>,
    /// f0 and f1: bit `c` of a flag register belongs to channel `c`.
    pub flags: [u32; 2],
    /// Channels dispatched.
    pub live: u32,
    /// Render-target writes: by binding table index, each channel's last RGBA (raw bits).
    pub render_targets: BTreeMap<u32, Vec<Option<[u32; 4]>>>,
    /// The buffers data-port reads see, by binding table index. Reads past a buffer's end
    /// (or of an unbound one) return zero, as the hardware's bounds checking does.
    pub surfaces: BTreeMap<u32, Vec<u8>>,
    /// The images typed surface messages read and write, by binding table index (raw
    /// dwords per channel, as the reference interpreter holds them).
    pub images: BTreeMap<u32, Image>,
    /// The thread's scratch memory, grown as spills write it (unwritten bytes read as zero).
    pub scratch: Vec<u8>,
    /// What the sampler reads: textures by binding table index, sampler states by sampler
    /// index.
    pub sampling: Arc<Resources>,
    /// How the binding table's textures are addressed, by binding table index.
    pub sampler_views: BTreeMap<u32, TextureSurface>,
    /// The URB entries vertex threads write: by URB handle, their dwords.
    pub urb: BTreeMap<u32, Vec<u32>>,
    /// Whether the thread has sent the gateway a barrier message its `wait` has not yet
    /// waited for.
    pub barrier_sent: bool,
}

impl Thread {
    /// The `len` bytes of scratch memory at byte `at`, grown to hold them.
    fn scratch_mut(&mut self, at: u64, len: usize) -> Result<&mut [u8], EmuError> {
        let end = at + len as u64;
        if end > MAX_SCRATCH_BYTES as u64 {
            return Err(EmuError::ScratchAddress(at));
        }
        let (at, end) = (at as usize, end as usize);
        if self.scratch.len() < end {
            self.scratch.resize(end, 0);
        }
        Ok(&mut self.scratch[at..end])
    }

    /// A thread dispatched `width` channels wide, with zeroed registers.
    pub fn new(width: u8) -> Thread {
        Thread {
            grf: vec![[0; 32]; 128],
            flags: [0; 2],
            live: if width >= 32 {
                u32::MAX
            } else {
                (1u32 << width) - 1
            },
            render_targets: BTreeMap::new(),
            surfaces: BTreeMap::new(),
            images: BTreeMap::new(),
            scratch: Vec::new(),
            sampling: Arc::default(),
            sampler_views: BTreeMap::new(),
            urb: BTreeMap::new(),
            barrier_sent: false,
        }
    }

    /// The `bytes` bytes at byte `offset` of the register file.
    #[inline]
    pub(crate) fn read(&self, offset: usize, bytes: usize) -> Result<u64, EmuError> {
        let (nr, at) = (offset / 32, offset % 32);
        if at + bytes <= 32 && matches!(bytes, 4 | 8) {
            // A dword or qword inside one register, as every aligned element is.
            // Fixed-size copies, which compile to one load each.
            let reg = self.grf.get(nr).ok_or(EmuError::OutOfRegisters(nr))?;
            return Ok(if bytes == 4 {
                u32::from_le_bytes(reg[at..at + 4].try_into().unwrap()) as u64
            } else {
                u64::from_le_bytes(reg[at..at + 8].try_into().unwrap())
            });
        }
        let mut value = 0u64;
        for k in 0..bytes {
            let at = offset + k;
            let byte = self
                .grf
                .get(at / 32)
                .ok_or(EmuError::OutOfRegisters(at / 32))?[at % 32];
            value |= (byte as u64) << (8 * k);
        }
        Ok(value)
    }

    #[inline]
    pub(crate) fn write(
        &mut self,
        offset: usize,
        bytes: usize,
        value: u64,
    ) -> Result<(), EmuError> {
        let (nr, at) = (offset / 32, offset % 32);
        if at + bytes <= 32 && matches!(bytes, 4 | 8) {
            let reg = self.grf.get_mut(nr).ok_or(EmuError::OutOfRegisters(nr))?;
            if bytes == 4 {
                reg[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
            } else {
                reg[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            return Ok(());
        }
        for k in 0..bytes {
            let at = offset + k;
            let reg = self
                .grf
                .get_mut(at / 32)
                .ok_or(EmuError::OutOfRegisters(at / 32))?;
            reg[at % 32] = (value >> (8 * k)) as u8;
        }
        Ok(())
    }

    /// Writes `value` (of `ty`) to every channel of GRF element `index` of `reg`: a helper for
    /// setting up inputs.
    pub fn set(&mut self, reg: u8, index: usize, ty: Type, value: u64) {
        let size = ty.size() as usize;
        self.write(reg as usize * 32 + index * size, size, value)
            .expect("inside the register file");
    }

    /// Element `index` (of `ty`) counted from GRF `reg`.
    #[inline]
    pub fn get(&self, reg: u8, index: usize, ty: Type) -> u64 {
        let size = ty.size() as usize;
        self.read(reg as usize * 32 + index * size, size)
            .expect("inside the register file")
    }
}

/// Why a program could not run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmuError {
    #[error("instruction {index} (`{opcode}`) is not modelled by the emulator")]
    Unsupported { index: usize, opcode: &'static str },
    #[error("an operand reaches past g127 (g{0})")]
    OutOfRegisters(usize),
    #[error("instruction {0}: control flow does not match its structure")]
    BadControlFlow(usize),
    #[error("instruction {index} (`{opcode}`) works on bits but has a float operand")]
    FloatBits { index: usize, opcode: &'static str },
    #[error("the program ran more than {0} instructions")]
    RunAway(u64),
    /// The time limit of the run (see `shrew_engine::deadline`) passed.
    #[error("the time limit passed while the program ran")]
    TimeLimit,
    #[error("the binary does not round-trip: {0}")]
    Encoding(String),
    #[error("sampler: {0}")]
    Sampler(String),
    #[error("barrier: {0}")]
    Barrier(String),
    #[error("a scratch access at byte {0} is past the {MAX_SCRATCH_BYTES} bytes a thread has")]
    ScratchAddress(u64),
}

/// How many instructions a run may execute.
const STEP_LIMIT: u64 = 10_000_000;

/// A frame of structured control flow.
#[derive(Debug)]
enum Frame {
    /// The mask before the `if`, and the channels that took it.
    If { before: u32, taken: u32 },
    /// The mask entering the loop, and the channels waiting at the `while` after a `cont`.
    Loop { before: u32, continued: u32 },
}

/// Runs `program` on `thread` until it falls off the end or ends the thread. The generation
/// decides what a negated source of a logic instruction means. A thread that waits at a
/// barrier has no workgroup to wait for here: that is an error ([`run_compute`] runs
/// workgroups).
///
/// [`run_compute`]: crate::dispatch::run_compute
pub fn run(program: &[Inst], hw: Gen, thread: &mut Thread) -> Result<(), EmuError> {
    match Execution::new(program, thread.live)?.resume(program, hw, thread)? {
        Stop::Ended => Ok(()),
        Stop::Barrier => Err(EmuError::Barrier(
            "a thread waits at a barrier outside a workgroup".into(),
        )),
    }
}

/// Why a thread stopped running.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It ended (EOT) or fell off the end of the program.
    Ended,
    /// It waits at a barrier for the other threads of its workgroup.
    Barrier,
}

/// Where a thread is in a program, so that it can stop at a barrier and go on later.
#[derive(Debug)]
pub struct Execution {
    /// Loops start where a `while` jumps back to; nested loops may start at one instruction.
    /// Each start lists its loops' `while`s, outermost (latest) first.
    loop_starts: Vec<Vec<usize>>,
    stack: Vec<Frame>,
    mask: u32,
    /// Halted channels and the instruction where they join again.
    parked: Vec<(usize, u32)>,
    pc: usize,
    steps: u64,
    /// The `while` that just jumped back: its loop and those around it keep their frames.
    back_edge: Option<usize>,
}

impl Execution {
    /// An execution at the start of `program`, its `live` channels enabled.
    pub fn new(program: &[Inst], live: u32) -> Result<Execution, EmuError> {
        let mut loop_starts: Vec<Vec<usize>> = vec![Vec::new(); program.len()];
        for (index, inst) in program.iter().enumerate().rev() {
            if inst.opcode == Opcode::While {
                let target = index as i64 + inst.jip as i64 / 16;
                match usize::try_from(target) {
                    Ok(t) if t <= index => loop_starts[t].push(index),
                    _ => return Err(EmuError::BadControlFlow(index)),
                }
            }
        }
        Ok(Execution {
            loop_starts,
            stack: Vec::new(),
            mask: live,
            parked: Vec::new(),
            pc: 0,
            steps: 0,
            back_edge: None,
        })
    }

    /// Runs the thread from where it stopped until it ends or waits at a barrier.
    pub fn resume(
        &mut self,
        program: &[Inst],
        hw: Gen,
        thread: &mut Thread,
    ) -> Result<Stop, EmuError> {
        meter::executing(|| self.run_to_stop(program, hw, thread))
    }

    fn run_to_stop(
        &mut self,
        program: &[Inst],
        hw: Gen,
        thread: &mut Thread,
    ) -> Result<Stop, EmuError> {
        while self.pc < program.len() {
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err(EmuError::RunAway(STEP_LIMIT));
            }
            if self.steps.is_multiple_of(deadline::CHECK_EVERY) && deadline::expired() {
                return Err(EmuError::TimeLimit);
            }
            for &end in &self.loop_starts[self.pc] {
                if self.back_edge.is_none_or(|from| end < from) {
                    self.stack.push(Frame::Loop {
                        before: self.mask,
                        continued: 0,
                    });
                }
            }
            self.back_edge = None;
            let inst = &program[self.pc];
            let jump = |offset: i32| -> Result<usize, EmuError> {
                usize::try_from(self.pc as i64 + offset as i64 / 16)
                    .map_err(|_| EmuError::BadControlFlow(self.pc))
            };
            for &(target, channels) in &self.parked {
                if target == self.pc {
                    self.mask |= channels;
                }
            }
            self.parked.retain(|&(target, _)| target != self.pc);
            let waiting = self.parked.iter().fold(0, |all, &(_, c)| all | c);
            self.mask &= thread.live & !waiting;
            let channels = channels_of(inst);
            let predicate = predicate_mask(inst, thread);
            match inst.opcode {
                Opcode::If => {
                    let before_if = self.mask;
                    let taken = self.mask & predicate & channels;
                    self.stack.push(Frame::If {
                        before: self.mask,
                        taken,
                    });
                    self.mask = taken;
                    if self.mask == 0 {
                        // Straight to the `else` part (or the `endif`) with the other channels.
                        self.mask = before_if;
                        self.pc = jump(inst.jip)?;
                        continue;
                    }
                }
                Opcode::Else => {
                    let Some(Frame::If { before, taken }) = self.stack.last() else {
                        return Err(EmuError::BadControlFlow(self.pc));
                    };
                    self.mask = before & !taken & thread.live;
                    if self.mask == 0 {
                        self.pc = jump(inst.jip)?;
                        continue;
                    }
                }
                Opcode::Endif => {
                    let Some(Frame::If { before, .. }) = self.stack.pop() else {
                        return Err(EmuError::BadControlFlow(self.pc));
                    };
                    self.mask = before & thread.live;
                }
                Opcode::Break | Opcode::Cont => {
                    let leaving = self.mask & predicate & channels;
                    let Some(Frame::Loop { continued, .. }) = self
                        .stack
                        .iter_mut()
                        .rev()
                        .find(|f| matches!(f, Frame::Loop { .. }))
                    else {
                        return Err(EmuError::BadControlFlow(self.pc));
                    };
                    // Broken channels only leave the self.mask; continued ones rejoin at the `while`.
                    if inst.opcode == Opcode::Cont {
                        *continued |= leaving;
                    }
                    self.mask &= !leaving;
                    // Every `if` frame inside the loop forgets the channels that left.
                    for frame in self.stack.iter_mut().rev() {
                        match frame {
                            Frame::If { before, taken } => {
                                *before &= !leaving;
                                *taken &= !leaving;
                            }
                            Frame::Loop { .. } => break,
                        }
                    }
                    if self.mask == 0 {
                        // Nothing runs until the end of the innermost block (JIP: its `else`,
                        // `endif` or `while`), where other channels may wait.
                        self.pc = jump(inst.jip)?;
                        continue;
                    }
                }
                Opcode::While => {
                    let Some(Frame::Loop { before, continued }) = self.stack.last_mut() else {
                        return Err(EmuError::BadControlFlow(self.pc));
                    };
                    let going_on = (self.mask | *continued) & predicate & channels & thread.live;
                    *continued = 0;
                    if going_on != 0 {
                        self.mask = going_on;
                        self.back_edge = Some(self.pc);
                        self.pc = jump(inst.jip)?;
                        continue;
                    }
                    self.mask = *before & thread.live;
                    self.stack.pop();
                }
                Opcode::Halt => {
                    // Halted channels wait at the UIP; the halt there (JIP = UIP = next) is where
                    // they all meet again.
                    let target = jump(inst.uip)?;
                    let halted = self.mask & predicate & channels;
                    if target > self.pc && halted != 0 {
                        self.parked.push((target, halted));
                        self.mask &= !halted;
                    }
                }
                Opcode::Call => {
                    // The return address (the next instruction's byte address) and the
                    // channels enabled go to dwords 0 and 1 of the destination; the immediate
                    // is the callee's offset in bytes from the call.
                    let (Some(dst), Some(&Src::Imm(_, offset))) = (inst.dst, inst.srcs.first())
                    else {
                        return Err(EmuError::BadControlFlow(self.pc));
                    };
                    let frame = call_frame(thread, dst.file, dst.nr, dst.subnr, self.pc)?;
                    frame[..4].copy_from_slice(&(16 * (self.pc as u32 + 1)).to_le_bytes());
                    frame[4..].copy_from_slice(&self.mask.to_le_bytes());
                    self.pc = jump(offset as u32 as i32)?;
                    continue;
                }
                Opcode::Ret => {
                    let Some(Src::Reg(src)) = inst.srcs.first() else {
                        return Err(EmuError::BadControlFlow(self.pc));
                    };
                    let frame = call_frame(thread, src.file, src.nr, src.subnr, self.pc)?;
                    let dword = |k: usize| {
                        u32::from_le_bytes(frame[4 * k..4 * k + 4].try_into().expect("4 bytes"))
                    };
                    let (address, mask) = (dword(0) as usize, dword(1));
                    if !address.is_multiple_of(16) || address / 16 > program.len() {
                        return Err(EmuError::BadControlFlow(self.pc));
                    }
                    self.pc = address / 16;
                    self.mask = mask & thread.live;
                    continue;
                }
                Opcode::Send | Opcode::Sendc => {
                    let enabled = if inst.mask_all {
                        channels
                    } else {
                        self.mask & channels
                    } & predicate;
                    meter::add(enabled.count_ones() as u64);
                    if send(inst, hw, thread, enabled)? {
                        return Ok(Stop::Ended);
                    }
                }
                Opcode::Wait => {
                    // n0 counts the gateway's notifications: the barrier message sent before
                    // is answered once every thread of the workgroup has sent its own.
                    if !std::mem::take(&mut thread.barrier_sent) {
                        return Err(EmuError::Barrier(format!(
                            "instruction {}: `wait` without a barrier message, which never ends",
                            self.pc
                        )));
                    }
                    self.pc += 1;
                    return Ok(Stop::Barrier);
                }
                Opcode::Nop => {}
                _ => {
                    let enabled = if inst.mask_all {
                        channels
                    } else {
                        self.mask & channels
                    } & if inst.predicate.is_some() && inst.opcode != Opcode::Sel {
                        predicate
                    } else {
                        // A predicated `sel` writes every channel: the predicate picks the source.
                        u32::MAX
                    };
                    meter::add(enabled.count_ones() as u64);
                    execute(inst, hw, thread, enabled).map_err(|e| match e {
                        EmuError::Unsupported { .. } => EmuError::Unsupported {
                            index: self.pc,
                            opcode: inst.opcode.name(),
                        },
                        EmuError::FloatBits { .. } => EmuError::FloatBits {
                            index: self.pc,
                            opcode: inst.opcode.name(),
                        },
                        other => other,
                    })?;
                }
            }
            self.pc += 1;
        }
        Ok(Stop::Ended)
    }
}

/// The two dwords of a call's frame (return address, channel mask) at GRF `nr`, byte `subnr`.
fn call_frame(
    thread: &mut Thread,
    file: RegFile,
    nr: u8,
    subnr: u8,
    pc: usize,
) -> Result<&mut [u8], EmuError> {
    let at = subnr as usize;
    match thread.grf.get_mut(nr as usize) {
        Some(grf) if file == RegFile::Grf && at.is_multiple_of(4) && at + 8 <= 32 => {
            Ok(&mut grf[at..at + 8])
        }
        _ => Err(EmuError::BadControlFlow(pc)),
    }
}

/// The channels an instruction covers: `exec_size` channels from its group.
#[inline]
fn channels_of(inst: &Inst) -> u32 {
    let span = if inst.exec_size >= 32 {
        u32::MAX
    } else {
        (1u32 << inst.exec_size) - 1
    };
    span << inst.group
}

/// The channels whose predicate holds (all of them without a predicate).
fn predicate_mask(inst: &Inst, thread: &Thread) -> u32 {
    let Some(p) = inst.predicate else {
        return u32::MAX;
    };
    let flag = thread.flags[inst.flag as usize / 2] >> (16 * (inst.flag as u32 % 2));
    let bits = match p.control {
        1 => flag,
        2 => thread.flags[0] | thread.flags[1],
        3 => thread.flags[0] & thread.flags[1],
        control => {
            // any2h/all2h … any32h/all32h: each aligned group of n channels as one.
            let n = 1u32 << ((control as u32 - 4) / 2 + 1);
            let any = control % 2 == 0;
            let group_mask = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
            let mut out = 0u32;
            for start in (0..32).step_by(n as usize) {
                let g = (flag >> start) & group_mask;
                let hit = if any { g != 0 } else { g == group_mask };
                if hit {
                    out |= group_mask << start;
                }
            }
            out
        }
    };
    if p.inverse { !bits } else { bits }
}

/// A value during execution.
#[derive(Copy, Clone, Debug)]
enum Num {
    Int(i64),
    Float(f64),
}

/// Reads source `src` for element `i` of the instruction. `logic` says the instruction is a
/// Gen8+ logic operation, where a negated source is its bitwise complement.
#[inline]
fn read_src(src: &Src, i: usize, thread: &Thread, logic: bool) -> Result<(Num, Type), EmuError> {
    match *src {
        Src::Imm(ty, bits) => {
            let raw = match ty {
                Type::V | Type::UV => (bits >> (4 * (i % 8))) & 0xF,
                Type::VF => (bits >> (8 * (i % 4))) & 0xFF,
                _ => bits,
            };
            Ok((to_num(raw, ty), ty))
        }
        Src::Reg(reg) => {
            let raw = read_reg(&reg, i, thread)?;
            let mut value = to_num(raw, reg.ty);
            if reg.abs {
                value = match value {
                    Num::Int(v) => Num::Int(v.wrapping_abs()),
                    Num::Float(v) => Num::Float(v.abs()),
                };
            }
            if reg.negate && logic {
                value = Num::Int(!raw as i64);
            } else if reg.negate {
                value = match value {
                    Num::Int(v) => Num::Int(v.wrapping_neg()),
                    Num::Float(v) => Num::Float(-v),
                };
            }
            Ok((value, reg.ty))
        }
    }
}

/// Reads source `src` into `values` for each enabled channel of an instruction of `n`
/// channels from channel `group` (the others are left). A plain GRF operand, the common case,
/// is addressed once.
fn read_source(
    src: &Src,
    n: usize,
    group: u8,
    enabled: u32,
    thread: &Thread,
    logic: bool,
    values: &mut [Num; 32],
) -> Result<(), EmuError> {
    let channels = (0..n).filter(|&i| enabled >> (group as u32 + i as u32) & 1 != 0);
    match *src {
        Src::Reg(reg) if reg.file == RegFile::Grf && !reg.abs && !reg.negate => {
            let size = reg.ty.size() as usize;
            let base = reg.nr as usize * 32 + reg.subnr as usize;
            for i in channels {
                let offset = base + reg.region.element(i as u32) as usize * size;
                values[i] = to_num(thread.read(offset, size)?, reg.ty);
            }
        }
        _ => {
            for i in channels {
                values[i] = read_src(src, i, thread, logic)?.0;
            }
        }
    }
    Ok(())
}

#[inline]
fn read_reg(reg: &Reg, i: usize, thread: &Thread) -> Result<u64, EmuError> {
    let element = reg.region.element(i as u32) as usize;
    if reg.file == RegFile::Arf {
        // Flag registers read as their bytes; other architecture registers as zero.
        if reg.nr & 0xF0 != ARF_FLAG {
            return Ok(0);
        }
        let bytes = thread.flags[(reg.nr & 1) as usize].to_le_bytes();
        let size = reg.ty.size() as usize;
        let at = reg.subnr as usize + element * size;
        return Ok((0..size).fold(0u64, |v, k| {
            v | (bytes.get(at + k).copied().unwrap_or(0) as u64) << (8 * k)
        }));
    }
    let size = reg.ty.size() as usize;
    thread.read(
        reg.nr as usize * 32 + reg.subnr as usize + element * size,
        size,
    )
}

/// The raw bits of `ty` as a number: floats as floats, integers sign- or zero-extended.
#[inline]
fn to_num(raw: u64, ty: Type) -> Num {
    match ty {
        Type::F => Num::Float(f32::from_bits(raw as u32) as f64),
        Type::DF => Num::Float(f64::from_bits(raw)),
        Type::HF => Num::Float(half_to_f32(raw as u16) as f64),
        Type::VF => Num::Float(restricted_float(raw as u8) as f64),
        Type::D => Num::Int(raw as u32 as i32 as i64),
        Type::W => Num::Int(raw as u16 as i16 as i64),
        Type::B => Num::Int(raw as u8 as i8 as i64),
        Type::V => Num::Int(((raw as u8) << 4) as i8 as i64 >> 4),
        Type::Q => Num::Int(raw as i64),
        Type::UD | Type::UW | Type::UB | Type::UQ | Type::UV => Num::Int(raw as i64),
    }
}

fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1F) as i32;
    let mant = (h & 0x3FF) as f32;
    sign * match exp {
        0 => mant * 2f32.powi(-24),
        31 if mant == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1.0 + mant / 1024.0) * 2f32.powi(e - 15),
    }
}

/// The bits of `value` as `ty`: floats rounded to the type, integers wrapped (or saturated
/// when `saturate`), float-to-integer conversions rounded toward zero and saturated.
#[inline]
fn from_num(value: Num, ty: Type, saturate: bool) -> u64 {
    // The common cases first, as the general ones below compute them.
    match (value, ty) {
        (Num::Float(x), Type::F) if !saturate => return (x as f32).to_bits() as u64,
        (Num::Int(v), Type::D | Type::UD) if !saturate => return v as u32 as u64,
        _ => {}
    }
    if ty.is_float() {
        let mut x = match value {
            Num::Float(x) => x,
            Num::Int(v) => v as f64,
        };
        if saturate {
            x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
        }
        return match ty {
            Type::DF => x.to_bits(),
            Type::HF => f32_to_half(x as f32) as u64,
            _ => (x as f32).to_bits() as u64,
        };
    }
    let bits = ty.size() as u32 * 8;
    let signed = matches!(ty, Type::D | Type::W | Type::B | Type::Q);
    if bits <= 32 {
        // Every value of these types, and both ends of their ranges, fit in an i64.
        let (min, max) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        let narrow = match value {
            Num::Float(x) if x.is_nan() => 0,
            Num::Float(x) => (x.trunc().clamp(min as f64, max as f64)) as i64,
            Num::Int(v) if saturate => v.clamp(min, max),
            Num::Int(v) => v,
        };
        return (narrow as u64) & ((1u64 << bits) - 1);
    }
    let (min, max): (i128, i128) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let wide: i128 = match value {
        Num::Float(x) if x.is_nan() => 0,
        Num::Float(x) => (x.trunc() as i128).clamp(min, max),
        Num::Int(v) if saturate => (v as i128).clamp(min, max),
        Num::Int(v) => v as i128,
    };
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    (wide as u64) & mask
}

fn f32_to_half(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    if x.is_nan() {
        return sign | 0x7E00;
    }
    let exp = ((bits >> 23) & 0xFF) as i32 - 127 + 15;
    let mant = bits & 0x7F_FFFF;
    if exp >= 31 {
        sign | 0x7C00
    } else if exp <= 0 {
        sign
    } else {
        sign | ((exp as u16) << 10) | (mant >> 13) as u16
    }
}

#[inline]
fn as_float(n: Num) -> f64 {
    match n {
        Num::Float(x) => x,
        Num::Int(v) => v as f64,
    }
}

#[inline]
fn as_int(n: Num) -> i64 {
    match n {
        Num::Int(v) => v,
        Num::Float(x) => x as i64,
    }
}

/// `a cond b`; integers compare as unsigned 64-bit values when `unsigned` (for UQ operands:
/// the others are exact as signed 64-bit values).
#[inline]
fn compare(cond: CondMod, a: Num, b: Num, unsigned: bool) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) if unsigned => {
            let order = (x as u64).cmp(&(y as u64)) as i64;
            compare(cond, Num::Int(order), Num::Int(0), false)
        }
        (Num::Int(x), Num::Int(y)) => match cond {
            CondMod::Z => x == y,
            CondMod::Nz => x != y,
            CondMod::G => x > y,
            CondMod::Ge => x >= y,
            CondMod::L => x < y,
            CondMod::Le => x <= y,
            CondMod::O | CondMod::U => false,
        },
        _ => {
            let (x, y) = (as_float(a), as_float(b));
            match cond {
                CondMod::Z => x == y,
                CondMod::Nz => x != y,
                CondMod::G => x > y,
                CondMod::Ge => x >= y,
                CondMod::L => x < y,
                CondMod::Le => x <= y,
                CondMod::O => false,
                CondMod::U => x.is_nan() || y.is_nan(),
            }
        }
    }
}

/// Unsigned integer sources compare and shift as unsigned 32-bit values.
#[inline]
fn is_unsigned(ty: Type) -> bool {
    matches!(ty, Type::UD | Type::UW | Type::UB | Type::UQ | Type::UV)
}

/// Executes an ALU instruction on the `enabled` channels. (Kept out of the control-flow loop:
/// inlined there it measured about 10% slower.)
#[inline(never)]
fn execute(inst: &Inst, hw: Gen, thread: &mut Thread, enabled: u32) -> Result<(), EmuError> {
    let unsupported = EmuError::Unsupported {
        index: 0,
        opcode: inst.opcode.name(),
    };
    if inst.opcode.is_send() || matches!(inst.opcode, Opcode::Mac | Opcode::Mach) {
        return Err(unsupported);
    }
    let dst: Dst = inst.dst.ok_or(unsupported.clone())?;
    let bitwise = matches!(
        inst.opcode,
        Opcode::And
            | Opcode::Or
            | Opcode::Xor
            | Opcode::Not
            | Opcode::Shl
            | Opcode::Shr
            | Opcode::Asr
            | Opcode::Bfrev
            | Opcode::Cbit
            | Opcode::Fbl
            | Opcode::Fbh
            | Opcode::Lzd
    );
    let float_operand = inst.srcs.iter().any(|s| s.ty().is_float()) || dst.ty.is_float();
    if bitwise && float_operand {
        return Err(EmuError::FloatBits {
            index: 0,
            opcode: inst.opcode.name(),
        });
    }
    // Gen encodes at most three sources.
    if inst.srcs.len() > 3 {
        return Err(unsupported);
    }
    let n = inst.exec_size as usize;
    if n > 32 {
        return Err(unsupported);
    }
    // One value per channel, at most 32.
    let mut results = [Num::Int(0); 32];
    let mut flag_bits = 0u32;
    let logic = hw.is_gen8_plus()
        && matches!(
            inst.opcode,
            Opcode::And | Opcode::Or | Opcode::Xor | Opcode::Not
        );
    let predicate = predicate_mask(inst, thread);
    // Every source is read for all channels before any result is written; a missing one is 0.
    let mut operands = [[Num::Int(0); 32]; 3];
    let mut types = [Type::UD; 3];
    for (k, s) in inst.srcs.iter().enumerate() {
        read_source(s, n, inst.group, enabled, thread, logic, &mut operands[k])?;
        types[k] = s.ty();
    }
    let types = &types[..inst.srcs.len()];
    // Integer and float values are so by their types (the vector of restricted floats too).
    let float = types.iter().any(|t| t.is_float() || *t == Type::VF);
    let unsigned = types.iter().all(|t| is_unsigned(*t));
    // 64-bit integer operands (Gen8+): bitwise operations and shifts on all 64 bits.
    let wide = types.first().is_some_and(|t| t.size() == 8) || dst.ty.size() == 8;
    let plane = match inst.opcode {
        Opcode::Pln => Some(pln_operands(inst, thread)?),
        _ => None,
    };
    for (i, result) in results.iter_mut().enumerate().take(n) {
        let channel = inst.group as u32 + i as u32;
        if enabled >> channel & 1 == 0 {
            // Neither its result nor its flag bit is written.
            continue;
        }
        let [a, b, c] = [operands[0][i], operands[1][i], operands[2][i]];
        let arith = |f: fn(f64, f64) -> f64, g: fn(i64, i64) -> i64| {
            if float {
                Num::Float(f(as_float(a), as_float(b)))
            } else {
                Num::Int(g(as_int(a), as_int(b)))
            }
        };
        let bits32 = |x: Num| as_int(x) as u32;
        let bits64 = |x: Num| as_int(x) as u64;
        let value = match inst.opcode {
            Opcode::Pln => pln_channel(plane.ok_or(unsupported.clone())?, thread, i),
            // UQ values past i64's range convert to floats as the unsigned values they are.
            Opcode::Mov if types.first() == Some(&Type::UQ) && dst.ty.is_float() => {
                Num::Float(as_int(a) as u64 as f64)
            }
            Opcode::Mov => a,
            Opcode::Add => arith(|x, y| x + y, i64::wrapping_add),
            Opcode::Mul => arith(|x, y| x * y, i64::wrapping_mul),
            Opcode::Avg => Num::Int((as_int(a) + as_int(b) + 1) >> 1),
            Opcode::Mad => {
                if float {
                    Num::Float(as_float(b).mul_add(as_float(c), as_float(a)))
                } else {
                    Num::Int(as_int(a).wrapping_add(as_int(b).wrapping_mul(as_int(c))))
                }
            }
            Opcode::Lrp => {
                let t = as_float(a);
                Num::Float(t * as_float(b) + (1.0 - t) * as_float(c))
            }
            Opcode::Sel => match inst.cond {
                Some(cond) if inst.predicate.is_none() => {
                    // Min and max return the other source when one is NaN (IEEE minNum/maxNum);
                    // a NaN in `a` fails the comparison, so only one in `b` needs a case.
                    if (float && as_float(b).is_nan()) || compare(cond, a, b, unsigned && wide) {
                        a
                    } else {
                        b
                    }
                }
                _ => {
                    let chosen = predicate >> channel & 1 != 0;
                    if chosen { a } else { b }
                }
            },
            Opcode::Cmp | Opcode::Cmpn => {
                let cond = inst.cond.unwrap_or(CondMod::Z);
                let holds = compare(cond, a, b, unsigned && wide);
                flag_bits |= (holds as u32) << channel;
                Num::Int(if holds { -1 } else { 0 })
            }
            Opcode::And if wide => Num::Int((bits64(a) & bits64(b)) as i64),
            Opcode::Or if wide => Num::Int((bits64(a) | bits64(b)) as i64),
            Opcode::Xor if wide => Num::Int((bits64(a) ^ bits64(b)) as i64),
            Opcode::Not if wide => Num::Int(!bits64(a) as i64),
            Opcode::Shl if wide => Num::Int((bits64(a) << (bits32(b) & 63)) as i64),
            Opcode::Shr if wide => Num::Int((bits64(a) >> (bits32(b) & 63)) as i64),
            Opcode::Asr if wide => Num::Int(as_int(a) >> (bits32(b) & 63)),
            Opcode::And => Num::Int((bits32(a) & bits32(b)) as i64),
            Opcode::Or => Num::Int((bits32(a) | bits32(b)) as i64),
            Opcode::Xor => Num::Int((bits32(a) ^ bits32(b)) as i64),
            Opcode::Not => Num::Int(!bits32(a) as i64),
            Opcode::Shl => Num::Int((bits32(a) << (bits32(b) & 31)) as i64),
            Opcode::Shr => Num::Int((bits32(a) >> (bits32(b) & 31)) as i64),
            Opcode::Asr => Num::Int(((bits32(a) as i32) >> (bits32(b) & 31)) as i64),
            Opcode::Frc => Num::Float(as_float(a) - as_float(a).floor()),
            Opcode::Rndd => Num::Float(as_float(a).floor()),
            Opcode::Rndu => Num::Float(as_float(a).ceil()),
            Opcode::Rndz => Num::Float(as_float(a).trunc()),
            Opcode::Rnde => Num::Float(as_float(a).round_ties_even()),
            Opcode::Bfrev => Num::Int(bits32(a).reverse_bits() as i64),
            Opcode::Cbit => Num::Int(bits32(a).count_ones() as i64),
            Opcode::Lzd => Num::Int(bits32(a).leading_zeros() as i64),
            Opcode::Fbl => Num::Int(match bits32(a) {
                0 => -1,
                x => x.trailing_zeros() as i64,
            }),
            Opcode::Fbh => {
                let x = bits32(a);
                let signed = types.first().is_some_and(|t| !is_unsigned(*t));
                // Signed: the first bit that differs from the sign, counted from the MSB.
                let y = if signed && (x as i32) < 0 { !x } else { x };
                Num::Int(if y == 0 { -1 } else { y.leading_zeros() as i64 })
            }
            Opcode::Math => math(inst.math, a, b, unsigned).ok_or(unsupported.clone())?,
            _ => return Err(unsupported),
        };
        if let Some(cond) = inst.cond
            && !matches!(inst.opcode, Opcode::Cmp | Opcode::Cmpn | Opcode::Sel)
        {
            let zero = if float { Num::Float(0.0) } else { Num::Int(0) };
            flag_bits |= (compare(cond, value, zero, false) as u32) << channel;
        }
        *result = value;
    }
    let results = &results[..n];
    // Write the destination, then the flag, so that sources read the old values.
    if dst.file == RegFile::Arf && dst.nr & 0xF0 == ARF_FLAG {
        let register = &mut thread.flags[(dst.nr & 1) as usize];
        let size = dst.ty.size() as usize;
        let mut bytes = register.to_le_bytes();
        for (i, value) in results.iter().enumerate() {
            if enabled >> (inst.group as u32 + i as u32) & 1 == 0 {
                continue;
            }
            let raw = from_num(*value, dst.ty, inst.saturate);
            for k in 0..size {
                let at = dst.subnr as usize + (i * dst.hstride as usize) * size + k;
                if let Some(byte) = bytes.get_mut(at) {
                    *byte = (raw >> (8 * k)) as u8;
                }
            }
        }
        *register = u32::from_le_bytes(bytes);
    } else if !(dst.file == RegFile::Arf && dst.nr == ARF_NULL) {
        let size = dst.ty.size() as usize;
        for (i, &value) in results.iter().enumerate() {
            let channel = inst.group as u32 + i as u32;
            if enabled >> channel & 1 == 0 {
                continue;
            }
            let offset =
                dst.nr as usize * 32 + dst.subnr as usize + i * dst.hstride as usize * size;
            thread.write(offset, size, from_num(value, dst.ty, inst.saturate))?;
        }
    }
    let writes_flag = inst.cond.is_some() && inst.opcode != Opcode::Sel;
    if writes_flag {
        let shift = 16 * (inst.flag as u32 % 2);
        let register = &mut thread.flags[inst.flag as usize / 2];
        let mask = enabled << shift;
        *register = (*register & !mask) | ((flag_bits << shift) & mask);
    }
    Ok(())
}

/// The texel of the image at binding table index `bti` that a typed message's coordinates
/// name (u, then v and r as the image has them: r is the layer of an array, z of a 3D image);
/// `None` outside the image or without one.
fn typed_texel(thread: &Thread, bti: u32, coords: &[i32]) -> Option<usize> {
    let at = |k: usize| coords.get(k).map_or(0, |&c| c as i64);
    let image = thread.images.get(&bti)?;
    let coord = if image.depth <= 1 {
        [at(0), at(1), 0, at(2)]
    } else {
        [at(0), at(1), at(2), 0]
    };
    image.index(coord)
}

/// `pln`'s operands: the plane (source 0: the b1 and b2 coefficients and the constant,
/// elements 0, 1 and 3) and the register of the barycentrics (source 1: b1 and b2 in
/// consecutive GRFs, a pair per 8 channels), which [`pln_channel`] reads per channel.
fn pln_operands(inst: &Inst, thread: &Thread) -> Result<([f32; 4], u8), EmuError> {
    let (Some(Src::Reg(plane)), Some(Src::Reg(bary))) = (inst.srcs.first(), inst.srcs.get(1))
    else {
        return Err(EmuError::Unsupported {
            index: 0,
            opcode: "pln",
        });
    };
    let coefficient = |k: usize| {
        f32::from_bits(thread.get(plane.nr, plane.subnr as usize / 4 + k, Type::F) as u32)
    };
    Ok((std::array::from_fn(coefficient), bary.nr))
}

/// `pln` for channel `i` of the instruction, its operands from [`pln_operands`].
fn pln_channel((plane, bary): ([f32; 4], u8), thread: &Thread, i: usize) -> Num {
    // Operands address registers from the instruction's first channel, whatever its group.
    let pair = bary + 2 * (i / 8) as u8;
    let b1 = f32::from_bits(thread.get(pair, i % 8, Type::F) as u32);
    let b2 = f32::from_bits(thread.get(pair + 1, i % 8, Type::F) as u32);
    Num::Float(pln(plane, b1, b2) as f64)
}

/// Plane interpolation as `pln` computes it: `p[0]·b1 + p[1]·b2 + p[3]`, rounded once.
pub fn pln(plane: [f32; 4], b1: f32, b2: f32) -> f32 {
    (plane[0] as f64 * b1 as f64 + plane[1] as f64 * b2 as f64 + plane[3] as f64) as f32
}

/// Runs a send on the `enabled` channels; gives whether it ends the thread.
fn send(inst: &Inst, hw: Gen, thread: &mut Thread, enabled: u32) -> Result<bool, EmuError> {
    let unsupported = EmuError::Unsupported {
        index: 0,
        opcode: inst.opcode.name(),
    };
    let (Some(descriptor), Some(Src::Reg(payload))) = (inst.descriptor(), inst.srcs.first()) else {
        return Err(unsupported);
    };
    let message_type = desc::data_port_message_type(inst.sfid, descriptor, hw);
    let bti = descriptor.get(desc::Surface::of(hw).binding_table_index);
    let untyped = desc::UntypedPort::of(hw);
    let typed = desc::TypedPort::of(hw);
    match inst.sfid {
        desc::Sampler::SFID => sampler::emulate(inst, hw, thread, descriptor, payload.nr, enabled)?,
        // Typed surface read and write, eight channels (the instruction's) a message: the
        // payload holds the texel coordinates (u, then v and r as the image has them: r is
        // the layer of an array, z of a 3D image), a GRF each, then for a write the enabled
        // components' data. Outside the image, reads see zero and writes are dropped.
        sfid if sfid == typed.sfid
            && (message_type == Some(typed.read) || message_type == Some(typed.write)) =>
        {
            let f = desc::TypedSurface::of(hw);
            let disabled = descriptor.get(f.disabled_channels);
            let first = inst.group as usize;
            let comps: Vec<usize> = (0..4).filter(|k| disabled >> k & 1 == 0).collect();
            let mlen = descriptor.get(desc::Send::of(hw).mlen) as usize;
            let write = message_type == Some(typed.write);
            let coords = if write { mlen - comps.len() } else { mlen }.min(3);
            let mut reads = Vec::new();
            for i in (0..8).filter(|&i| enabled >> (first + i) & 1 != 0) {
                let reg = |k: usize| thread.get(payload.nr + k as u8, i, Type::UD) as u32;
                let c: Vec<i32> = (0..coords).map(|k| reg(k) as i32).collect();
                let index = typed_texel(thread, bti, &c);
                if write {
                    let data: Vec<u32> = (0..comps.len()).map(|j| reg(coords + j)).collect();
                    if let (Some(index), Some(img)) = (index, thread.images.get_mut(&bti)) {
                        for (&k, value) in comps.iter().zip(data) {
                            img.texels[index][k] = value;
                        }
                    }
                } else {
                    let texel = index
                        .and_then(|index| Some(thread.images.get(&bti)?.texels[index]))
                        .unwrap_or_default();
                    reads.push((i, comps.iter().map(|&k| texel[k]).collect::<Vec<_>>()));
                }
            }
            if let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf && !write) {
                for (i, values) in reads {
                    for (j, value) in values.into_iter().enumerate() {
                        thread.set(dst.nr + j as u8, i, Type::UD, value as u64);
                    }
                }
            }
        }
        // Typed atomic operation, eight channels (the instruction's) a message: the payload
        // holds the texel coordinates as a typed surface message's, then the operand (a swap's
        // comparand and new value); each enabled channel in order applies the operation to
        // its texel's first component and gets the old value back. Outside the image it reads
        // zero and writes nothing.
        sfid if sfid == typed.sfid && message_type == Some(typed.atomic) => {
            let aop = descriptor.get(desc::TypedAtomic::of(hw).operation);
            let mlen = descriptor.get(desc::Send::of(hw).mlen) as usize;
            let operands = if aop == CMPWR { 2 } else { 1 };
            let coords = mlen.saturating_sub(operands).min(3);
            let first = inst.group as usize;
            let mut results = Vec::new();
            for i in (0..8).filter(|&i| enabled >> (first + i) & 1 != 0) {
                let reg = |k: usize| thread.get(payload.nr + k as u8, i, Type::UD) as u32;
                let c: Vec<i32> = (0..coords).map(|k| reg(k) as i32).collect();
                let (operand, swapped) = (reg(coords), (aop == CMPWR).then(|| reg(coords + 1)));
                let index = typed_texel(thread, bti, &c);
                let old = match (index, thread.images.get_mut(&bti)) {
                    (Some(index), Some(img)) => {
                        let old = img.texels[index][0];
                        img.texels[index][0] =
                            atomic(aop, old, operand, swapped).ok_or(unsupported.clone())?;
                        old
                    }
                    _ => 0,
                };
                results.push((i, old));
            }
            if let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf) {
                for (i, old) in results {
                    thread.set(dst.nr, i, Type::UD, old as u64);
                }
            }
        }
        // Render-target write: R, G, B, A, each a GRF per 8 channels, to the pixels of the
        // message's slot group (16 pixels each) that its channels enable and that are in the
        // dispatch's pixel mask (R1.7; R2.7 for pixels 16-31 of SIMD32).
        desc::RenderCache::SFID if message_type == Some(desc::RenderCache::RENDER_TARGET_WRITE) => {
            let pixels = if thread.live >> 16 != 0 {
                thread.get(1, 14, Type::UW) as u32 | (thread.get(2, 14, Type::UW) as u32) << 16
            } else {
                thread.get(1, 14, Type::UW) as u32
            };
            let first_pixel =
                16 * descriptor.get(desc::RenderTargetWrite::of(hw).slot_group) as usize;
            let width = inst.exec_size as usize;
            let per_comp = width.div_ceil(8) as u8;
            let writes: Vec<(usize, [u32; 4])> = (0..width)
                .filter(|&i| {
                    enabled >> (inst.group as usize + i) & 1 != 0
                        && pixels >> (first_pixel + i) & 1 != 0
                })
                .map(|i| {
                    let rgba = [0u8, 1, 2, 3]
                        .map(|c| thread.get(payload.nr + c * per_comp, i, Type::UD) as u32);
                    (first_pixel + i, rgba)
                })
                .collect();
            let out = thread
                .render_targets
                .entry(bti)
                .or_insert_with(|| vec![None; 32]);
            for (pixel, rgba) in writes {
                out[pixel] = Some(rgba);
            }
        }
        // URB SIMD8 write: each enabled channel writes the data GRFs' dwords to its URB entry
        // (the handle in the header's dword for the channel), from the descriptor's offset in
        // 128-bit units.
        desc::Urb::SFID if descriptor.get(desc::Urb::of(hw).opcode) == desc::Urb::SIMD8_WRITE => {
            let dwords = descriptor.get(desc::Send::of(hw).mlen) as usize - 1;
            let offset = descriptor.get(desc::Urb::of(hw).global_offset) as usize * 4;
            for i in (0..8).filter(|&i| enabled >> (inst.group as usize + i) & 1 != 0) {
                let handle = thread.read(payload.nr as usize * 32 + 4 * i, 4)? as u32;
                let values = (0..dwords)
                    .map(|k| thread.read((payload.nr as usize + 1 + k) * 32 + 4 * i, 4))
                    .collect::<Result<Vec<_>, _>>()?;
                let entry = thread.urb.entry(handle).or_default();
                if entry.len() < offset + dwords {
                    entry.resize(offset + dwords, 0);
                }
                for (k, value) in values.into_iter().enumerate() {
                    entry[offset + k] = value as u32;
                }
            }
        }
        // URB interleaved write (SIMD4x2): each vertex with an enabled channel (0-3 for
        // vertex 0, 4-7 for vertex 1) writes its half of each data GRF, a 128-bit slot each,
        // to its URB entry (the handle in the header's dword 0 or 4), from the descriptor's
        // offset in 128-bit units.
        desc::Urb::SFID
            if descriptor.get(desc::Urb::of(hw).opcode) == desc::Urb::WRITE_HWORD
                && descriptor.get(desc::Urb::of(hw).swizzle_control) == desc::Urb::INTERLEAVE =>
        {
            let slots = descriptor.get(desc::Send::of(hw).mlen) as usize - 1;
            let offset = descriptor.get(desc::Urb::of(hw).global_offset) as usize * 4;
            let channels = (enabled >> inst.group) & 0xFF;
            for vertex in (0..2).filter(|&h| channels >> (4 * h) & 0xF != 0) {
                let handle = thread.read(payload.nr as usize * 32 + 16 * vertex, 4)? as u32;
                let values = (0..4 * slots)
                    .map(|k| {
                        let grf = payload.nr as usize + 1 + k / 4;
                        thread.read(grf * 32 + 16 * vertex + 4 * (k % 4), 4)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let entry = thread.urb.entry(handle).or_default();
                if entry.len() < offset + values.len() {
                    entry.resize(offset + values.len(), 0);
                }
                for (k, value) in values.into_iter().enumerate() {
                    entry[offset + k] = value as u32;
                }
            }
        }
        // URB SIMD8 read: each enabled channel reads `rlen` dwords of its URB entry (the
        // handle in the header's dword for the channel) from the descriptor's offset in
        // 128-bit units, dword k into the response's GRF k (0 past the entry's end).
        desc::Urb::SFID if descriptor.get(desc::Urb::of(hw).opcode) == desc::Urb::SIMD8_READ => {
            let dwords = descriptor.get(desc::Send::of(hw).rlen) as usize;
            let offset = descriptor.get(desc::Urb::of(hw).global_offset) as usize * 4;
            let dst = inst.dst.filter(|d| d.file == RegFile::Grf);
            for i in
                (0..8).filter(|&i| dst.is_some() && enabled >> (inst.group as usize + i) & 1 != 0)
            {
                let dst = dst.expect("a GRF destination");
                let handle = thread.read(payload.nr as usize * 32 + 4 * i, 4)? as u32;
                let entry = thread.urb.get(&handle);
                let values: Vec<u32> = (0..dwords)
                    .map(|k| entry.and_then(|e| e.get(offset + k)).copied().unwrap_or(0))
                    .collect();
                for (k, value) in values.into_iter().enumerate() {
                    thread.set(dst.nr + k as u8, i, Type::UD, value as u64);
                }
            }
        }
        // The gateway's barrier message: the thread has arrived (its `wait` stops it).
        desc::Gateway::SFID
            if descriptor.get(desc::Gateway::of(hw).subfunction) == desc::Gateway::BARRIER =>
        {
            thread.barrier_sent = true
        }
        // A memory fence: messages run in order here, so earlier writes are already visible.
        desc::DataCache::SFID if message_type == Some(desc::DataCache::MEMORY_FENCE) => {}
        // The thread spawner's end of thread.
        desc::ThreadSpawner::SFID if inst.is_eot() => {}
        // DWord scattered read and write (data cache messages 3 and 11) on a stateless
        // surface: after the header, each enabled channel's byte address in the thread's
        // scratch memory (and, to write, its dword).
        desc::DataCache::SFID
            if matches!(
                message_type,
                Some(
                    desc::DataCache::DWORD_SCATTERED_READ | desc::DataCache::DWORD_SCATTERED_WRITE
                )
            ) && matches!(bti, 253 | 255) =>
        {
            let per_value = (inst.exec_size as usize).div_ceil(8);
            let dword = |thread: &Thread, k: usize, i: usize| {
                thread.read((payload.nr as usize + k + i / 8) * 32 + i % 8 * 4, 4)
            };
            let lanes = (0..inst.exec_size as usize)
                .filter(|&i| enabled >> (inst.group as usize + i) & 1 != 0);
            for i in lanes {
                let at = dword(thread, 1, i)?;
                if message_type == Some(desc::DataCache::DWORD_SCATTERED_WRITE) {
                    let value = dword(thread, 1 + per_value, i)? as u32;
                    thread
                        .scratch_mut(at, 4)?
                        .copy_from_slice(&value.to_le_bytes());
                } else {
                    let at = at as usize;
                    let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf) else {
                        return Err(unsupported);
                    };
                    let value = thread
                        .scratch
                        .get(at..at + 4)
                        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                    thread.write((dst.nr as usize + i / 8) * 32 + i % 8 * 4, 4, value as u64)?;
                }
            }
        }
        // Scratch block write and read (the data cache's scratch category): whole GRFs at the
        // descriptor's offset in 32-byte units from the base in bits 31:10 of the header's
        // dword 5 (zero in the g0 a thread starts with), whatever the execution mask; a write's
        // data follows its header.
        desc::DataCache::SFID if message_type.is_none() => {
            let scratch = desc::Scratch::of(hw);
            let grfs = 1usize << descriptor.get(scratch.block_size);
            let base =
                thread.read(payload.nr as usize * 32 + SCRATCH_BASE_BYTE as usize, 4)? & !0x3ff;
            let at = base + descriptor.get(scratch.offset) as u64 * 32;
            if descriptor.bit(scratch.write) {
                thread.scratch_mut(at, grfs * 32)?;
                for k in 0..grfs {
                    let from = payload.nr as usize + 1 + k;
                    let data = *thread.grf.get(from).ok_or(EmuError::OutOfRegisters(from))?;
                    thread
                        .scratch_mut(at + 32 * k as u64, 32)?
                        .copy_from_slice(&data);
                }
            } else {
                let at = at as usize;
                let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf) else {
                    return Err(unsupported);
                };
                for k in 0..grfs {
                    let mut data = [0u8; 32];
                    if let Some(bytes) = thread.scratch.get(at + 32 * k..at + 32 * (k + 1)) {
                        data.copy_from_slice(bytes);
                    }
                    let to = dst.nr as usize + k;
                    *thread.grf.get_mut(to).ok_or(EmuError::OutOfRegisters(to))? = data;
                }
            }
        }
        // Untyped surface read: each enabled channel reads the dwords of the unmasked
        // components at its byte address.
        sfid if sfid == untyped.sfid && message_type == Some(untyped.read) => {
            let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf) else {
                return Err(unsupported);
            };
            let disabled = descriptor.get(desc::UntypedSurface::of(hw).disabled_channels);
            let width = inst.exec_size as usize;
            let per_comp = width.div_ceil(8);
            let mut writes = Vec::new();
            for i in (0..width).filter(|&i| enabled >> (inst.group as usize + i) & 1 != 0) {
                let (grf, lane) = (i / 8, i % 8);
                let address = thread.read((payload.nr as usize + grf) * 32 + lane * 4, 4)?;
                let surface = thread.surfaces.get(&bti);
                let comps = (0..4).filter(|k| disabled >> k & 1 == 0);
                for (j, k) in comps.enumerate() {
                    let at = address as usize + 4 * k;
                    let dword = surface
                        .and_then(|bytes| bytes.get(at..at + 4))
                        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                    let reg = dst.nr as usize + j * per_comp + grf;
                    writes.push((reg * 32 + lane * 4, dword));
                }
            }
            for (at, dword) in writes {
                thread.write(at, 4, dword as u64)?;
            }
        }
        // Untyped surface write: each enabled channel writes the unmasked components' dwords
        // at its byte address; writes past the buffer's end are dropped.
        sfid if sfid == untyped.sfid && message_type == Some(untyped.write) => {
            let disabled = descriptor.get(desc::UntypedSurface::of(hw).disabled_channels);
            let per_comp = (inst.exec_size as usize).div_ceil(8);
            for i in (0..inst.exec_size as usize)
                .filter(|&i| enabled >> (inst.group as usize + i) & 1 != 0)
            {
                let dword = |k: usize| {
                    thread.read(
                        (payload.nr as usize + k * per_comp + i / 8) * 32 + i % 8 * 4,
                        4,
                    )
                };
                let address = dword(0)? as usize;
                let values = (0..4).filter(|k| disabled >> k & 1 == 0).count();
                let data = (0..values)
                    .map(|j| dword(1 + j))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(bytes) = thread.surfaces.get_mut(&bti) {
                    for (j, value) in data.into_iter().enumerate() {
                        let at = address + 4 * j;
                        if let Some(word) = bytes.get_mut(at..at + 4) {
                            word.copy_from_slice(&(value as u32).to_le_bytes());
                        }
                    }
                }
            }
        }
        // Untyped atomic operation: each enabled channel in order applies the operation to
        // the dword at its byte address and gets the old value back; outside the buffer it
        // reads zero and writes nothing.
        sfid if sfid == untyped.sfid && message_type == Some(untyped.atomic) => {
            let per_comp = (inst.exec_size as usize).div_ceil(8);
            let aop = descriptor.get(desc::UntypedAtomic::of(hw).operation);
            let mut results = Vec::new();
            for i in (0..inst.exec_size as usize)
                .filter(|&i| enabled >> (inst.group as usize + i) & 1 != 0)
            {
                let dword = |k: usize| {
                    thread.read(
                        (payload.nr as usize + k * per_comp + i / 8) * 32 + i % 8 * 4,
                        4,
                    )
                };
                let (address, operand) = (dword(0)? as usize, dword(1)? as u32);
                // Compare and swap's new value follows its comparand.
                let swapped = match aop {
                    CMPWR => Some(dword(2)? as u32),
                    _ => None,
                };
                let word = thread
                    .surfaces
                    .get_mut(&bti)
                    .and_then(|b| b.get_mut(address..address + 4));
                let old = match word {
                    Some(word) => {
                        let old = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                        let new = atomic(aop, old, operand, swapped).ok_or(unsupported.clone())?;
                        word.copy_from_slice(&new.to_le_bytes());
                        old
                    }
                    None => 0,
                };
                results.push((i, old));
            }
            if let Some(dst) = inst.dst.filter(|d| d.file == RegFile::Grf) {
                for (i, old) in results {
                    thread.write((dst.nr as usize + i / 8) * 32 + i % 8 * 4, 4, old as u64)?;
                }
            }
        }
        _ => return Err(unsupported),
    }
    Ok(inst.is_eot())
}

/// The data port's compare-and-write atomic (Mesa's BRW_AOP_CMPWR): two operands.
const CMPWR: u32 = 14;

/// The data port's atomic operation `aop` (Mesa's BRW_AOP_* codes) on `old` with `operand`
/// (and, for [`CMPWR`], the value written when `old` equals `operand`).
fn atomic(aop: u32, old: u32, operand: u32, swapped: Option<u32>) -> Option<u32> {
    Some(match aop {
        1 => old & operand,
        2 => old | operand,
        3 => old ^ operand,
        4 => operand,
        7 => old.wrapping_add(operand),
        10 => (old as i32).max(operand as i32) as u32,
        11 => (old as i32).min(operand as i32) as u32,
        12 => old.max(operand),
        13 => old.min(operand),
        CMPWR if old == operand => swapped?,
        CMPWR => old,
        _ => return None,
    })
}

fn math(function: Option<MathFn>, a: Num, b: Num, unsigned: bool) -> Option<Num> {
    let x = as_float(a);
    Some(match function? {
        MathFn::Inv => Num::Float(1.0 / x),
        MathFn::Log => Num::Float(x.log2()),
        MathFn::Exp => Num::Float(x.exp2()),
        MathFn::Sqrt => Num::Float(x.sqrt()),
        MathFn::Rsq => Num::Float(1.0 / x.sqrt()),
        MathFn::Sin => Num::Float(x.sin()),
        MathFn::Cos => Num::Float(x.cos()),
        MathFn::Pow => Num::Float(x.powf(as_float(b))),
        MathFn::Fdiv => Num::Float(x / as_float(b)),
        MathFn::IntDiv | MathFn::IntMod => {
            let (p, q) = (as_int(a), as_int(b));
            let (p, q) = if unsigned {
                (p as u32 as i64, q as u32 as i64)
            } else {
                (p as i32 as i64, q as i32 as i64)
            };
            if q == 0 {
                Num::Int(0)
            } else if function? == MathFn::IntDiv {
                Num::Int(p.wrapping_div(q))
            } else {
                Num::Int(p.wrapping_rem(q))
            }
        }
        MathFn::IntDivMod => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{Predicate, decode, encode};
    use crate::fields::Descriptor;
    use crate::isa::{Gen, Region};

    const VEC8: Region = Region::new(8, 8, 1);

    fn grf(nr: u8, ty: Type) -> Src {
        Src::Reg(Reg::grf(nr, 0, ty, VEC8))
    }

    /// Runs `program` after an encode/decode round trip, so the emulator runs what the binary
    /// says.
    fn run_binary(program: &[Inst], thread: &mut Thread) {
        let decoded: Vec<Inst> = program
            .iter()
            .map(|i| decode(encode(i, Gen::Gen9).unwrap(), Gen::Gen9).unwrap())
            .collect();
        run(&decoded, Gen::Gen9, thread).unwrap();
    }

    /// `add gN, gN, 1` on D.
    fn increment(nr: u8) -> Inst {
        Inst::new(
            Opcode::Add,
            8,
            Some(Dst::grf(nr, 0, Type::D)),
            vec![grf(nr, Type::D), Src::Imm(Type::D, 1)],
        )
    }

    /// `cmp.ge.f0.0 null, gN, n` on D.
    fn at_least(nr: u8, n: u64) -> Inst {
        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Dst::null(Type::D)),
            vec![grf(nr, Type::D), Src::Imm(Type::D, n)],
        );
        cmp.cond = Some(CondMod::Ge);
        cmp
    }

    /// A jump predicated on flag subregister `flag`, with JIP and UIP `offset` bytes ahead.
    fn predicated_jump(opcode: Opcode, flag: u8, offset: i32) -> Inst {
        let mut inst = Inst::new(opcode, 8, None, Vec::new());
        inst.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        inst.flag = flag;
        (inst.jip, inst.uip) = (offset, offset);
        inst
    }

    fn floats(thread: &Thread, reg: u8) -> Vec<f32> {
        (0..8)
            .map(|i| f32::from_bits(thread.get(reg, i, Type::F) as u32))
            .collect()
    }

    /// A negated source of a logic instruction is its complement on Gen8+, a two's complement
    /// negation before.
    #[test]
    fn logic_negation_by_generation() {
        let and = Inst::new(
            Opcode::And,
            8,
            Some(Dst::grf(3, 0, Type::UD)),
            vec![
                Src::Reg(Reg {
                    negate: true,
                    ..Reg::grf(2, 0, Type::UD, VEC8)
                }),
                Src::Imm(Type::UD, 0xFF),
            ],
        );
        for (hw, want) in [(Gen::Gen9, 0xFEu64), (Gen::Gen75, 0xFF)] {
            let mut thread = Thread::new(8);
            for i in 0..8 {
                thread.set(2, i, Type::UD, 1);
            }
            run(std::slice::from_ref(&and), hw, &mut thread).unwrap();
            assert_eq!(thread.get(3, 0, Type::UD), want, "{hw:?}");
        }
    }

    /// `sel.ge` (max) and `sel.l` (min) return the source that is a number when the other is NaN,
    /// whichever side it is on.
    #[test]
    fn min_and_max_ignore_nan() {
        for (cond, want) in [(CondMod::Ge, 2.0f32), (CondMod::L, 2.0)] {
            for nan_first in [true, false] {
                let (a, b) = if nan_first {
                    (f32::NAN, 2.0)
                } else {
                    (2.0, f32::NAN)
                };
                let mut sel = Inst::new(
                    Opcode::Sel,
                    8,
                    Some(Dst::grf(3, 0, Type::F)),
                    vec![grf(2, Type::F), Src::Imm(Type::F, b.to_bits() as u64)],
                );
                sel.cond = Some(cond);
                let mut thread = Thread::new(8);
                for i in 0..8 {
                    thread.set(2, i, Type::F, a.to_bits() as u64);
                }
                run(std::slice::from_ref(&sel), Gen::Gen9, &mut thread).unwrap();
                let got = f32::from_bits(thread.get(3, 0, Type::F) as u32);
                assert_eq!(got, want, "{cond:?}, NaN first: {nan_first}");
            }
        }
    }

    #[test]
    fn alu_with_conversion_modifiers_and_saturate() {
        let mut thread = Thread::new(8);
        for i in 0..8 {
            thread.set(2, i, Type::D, (i as i32 - 4) as u32 as u64);
        }
        // g3 = float(g2 + 1); g4 = sat(-g3 * 0.25); g5 = |g2| (D)
        let add = Inst::new(
            Opcode::Add,
            8,
            Some(Dst::grf(3, 0, Type::F)),
            vec![grf(2, Type::D), Src::Imm(Type::D, 1)],
        );
        let mut mul = Inst::new(
            Opcode::Mul,
            8,
            Some(Dst::grf(4, 0, Type::F)),
            vec![
                Src::Reg(Reg {
                    negate: true,
                    ..Reg::grf(3, 0, Type::F, VEC8)
                }),
                Src::Imm(Type::F, 0.25f32.to_bits() as u64),
            ],
        );
        mul.saturate = true;
        let abs = Inst::new(
            Opcode::Mov,
            8,
            Some(Dst::grf(5, 0, Type::D)),
            vec![Src::Reg(Reg {
                abs: true,
                ..Reg::grf(2, 0, Type::D, VEC8)
            })],
        );
        run_binary(&[add, mul, abs], &mut thread);
        assert_eq!(
            floats(&thread, 3),
            [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]
        );
        assert_eq!(
            floats(&thread, 4),
            [0.75, 0.5, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
        let abs: Vec<u64> = (0..8).map(|i| thread.get(5, i, Type::D)).collect();
        assert_eq!(abs, [4, 3, 2, 1, 0, 1, 2, 3]);
    }

    /// `if (x < 0) y = -1 else y = 1` per channel, through cmp, if, else and endif.
    #[test]
    fn if_else_runs_each_side_on_its_channels() {
        let mut thread = Thread::new(8);
        for i in 0..8 {
            thread.set(2, i, Type::F, ((i as f32) - 3.5).to_bits() as u64);
        }
        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Dst::null(Type::F)),
            vec![grf(2, Type::F), Src::Imm(Type::F, 0)],
        );
        cmp.cond = Some(CondMod::L);
        let mut branch = Inst::new(Opcode::If, 8, None, Vec::new());
        branch.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        branch.jip = 32;
        branch.uip = 64;
        let set = |value: f32| {
            Inst::new(
                Opcode::Mov,
                8,
                Some(Dst::grf(3, 0, Type::F)),
                vec![Src::Imm(Type::F, value.to_bits() as u64)],
            )
        };
        let mut other = Inst::new(Opcode::Else, 8, None, Vec::new());
        other.jip = 32;
        other.uip = 32;
        let mut join = Inst::new(Opcode::Endif, 8, None, Vec::new());
        join.jip = 16;
        run_binary(
            &[cmp, branch, set(-1.0), other, set(1.0), join],
            &mut thread,
        );
        assert_eq!(
            floats(&thread, 3),
            [-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0]
        );
    }

    /// Each channel counts up to its own limit: a loop with a predicated break.
    #[test]
    fn loops_run_until_every_channel_breaks() {
        let mut thread = Thread::new(8);
        for i in 0..8 {
            thread.set(2, i, Type::D, i as u64);
        }
        // g3 = 0; loop { cmp.ge g3, g2; (+f0.0) break; g3 += 1; } while
        let zero = Inst::new(
            Opcode::Mov,
            8,
            Some(Dst::grf(3, 0, Type::D)),
            vec![Src::Imm(Type::D, 0)],
        );
        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Dst::null(Type::D)),
            vec![grf(3, Type::D), grf(2, Type::D)],
        );
        cmp.cond = Some(CondMod::Ge);
        let brk = predicated_jump(Opcode::Break, 0, 32);
        let mut back = Inst::new(Opcode::While, 8, None, Vec::new());
        back.jip = -48;
        run_binary(&[zero, cmp, brk, increment(3), back], &mut thread);
        let counts: Vec<u64> = (0..8).map(|i| thread.get(3, i, Type::D)).collect();
        assert_eq!(counts, [0, 1, 2, 3, 4, 5, 6, 7]);
    }

    /// A loop nested in another, both starting at one instruction: the outer loop's back edge
    /// enters the inner loop afresh.
    #[test]
    fn nested_loops_may_start_together() {
        let mut thread = Thread::new(8);
        let back = |jip: i32| {
            let mut inst = Inst::new(Opcode::While, 8, None, Vec::new());
            inst.jip = jip;
            inst
        };
        // loop { loop { g3 += 1; if g3 >= 2 break } g4 += 1; if g4 >= 3 break }
        let program = [
            increment(3),
            at_least(3, 2),
            predicated_jump(Opcode::Break, 0, 16),
            back(-48),
            increment(4),
            at_least(4, 3),
            predicated_jump(Opcode::Break, 0, 16),
            back(-112),
        ];
        run_binary(&program, &mut thread);
        assert_eq!(thread.get(3, 0, Type::D), 4);
        assert_eq!(thread.get(4, 0, Type::D), 3);
    }

    /// Odd channels `cont` before counting, so only even ones count; all of them iterate.
    #[test]
    fn continued_channels_rejoin_at_the_while() {
        let mut thread = Thread::new(8);
        thread.flags[0] = 0b1010_1010 << 16;
        let set = |nr: u8| {
            Inst::new(
                Opcode::Mov,
                8,
                Some(Dst::grf(nr, 0, Type::D)),
                vec![Src::Imm(Type::D, 0)],
            )
        };
        let mut back = Inst::new(Opcode::While, 8, None, Vec::new());
        back.jip = -80;
        let program = [
            set(3),
            set(4),
            at_least(3, 4),
            predicated_jump(Opcode::Break, 0, 64),
            increment(3),
            predicated_jump(Opcode::Cont, 1, 32),
            increment(4),
            back,
        ];
        run_binary(&program, &mut thread);
        let iterations: Vec<u64> = (0..8).map(|i| thread.get(3, i, Type::D)).collect();
        let counted: Vec<u64> = (0..8).map(|i| thread.get(4, i, Type::D)).collect();
        assert_eq!(iterations, [4; 8]);
        assert_eq!(counted, [4, 0, 4, 0, 4, 0, 4, 0]);
    }

    /// A call in divergent control flow: the subroutine (jumped over at the start) runs on the
    /// caller's channels, its frame holds the return address and mask, and the return goes on
    /// after the call with the same channels.
    #[test]
    fn subroutines_run_on_the_callers_channels() {
        let mut thread = Thread::new(8);
        thread.flags = [0b1111_0000, 0];
        let branch = |flag: u8, jip: i32| {
            let mut inst = Inst::new(Opcode::If, 8, None, Vec::new());
            inst.predicate = Some(Predicate {
                control: 1,
                inverse: false,
            });
            inst.flag = flag;
            (inst.jip, inst.uip) = (jip, jip);
            inst
        };
        let mut endif = Inst::new(Opcode::Endif, 8, None, Vec::new());
        endif.jip = 16;
        let mov = |reg: u8, value: u64| {
            Inst::new(
                Opcode::Mov,
                8,
                Some(Dst::grf(reg, 0, Type::D)),
                vec![Src::Imm(Type::D, value)],
            )
        };
        let mut call = Inst::new(
            Opcode::Call,
            1,
            Some(Dst::grf(20, 0, Type::UD)),
            vec![Src::Imm(Type::D, (-64i32) as u32 as u64)],
        );
        call.mask_all = true;
        let mut ret = Inst::new(
            Opcode::Ret,
            1,
            Some(Dst::null(Type::UD)),
            vec![Src::Reg(Reg::grf(20, 0, Type::UD, Region::SCALAR))],
        );
        ret.mask_all = true;
        let program = [
            branch(2, 48), // f1.0 is clear: over the subroutine
            mov(6, 3),
            ret,
            endif.clone(),
            branch(0, 48),
            call,
            mov(5, 2),
            endif,
            mov(7, 4),
        ];
        run_binary(&program, &mut thread);
        let channels =
            |reg: u8| -> Vec<u64> { (0..8).map(|i| thread.get(reg, i, Type::D)).collect() };
        assert_eq!(channels(6), [0, 0, 0, 0, 3, 3, 3, 3]);
        assert_eq!(channels(5), [0, 0, 0, 0, 2, 2, 2, 2]);
        assert_eq!(channels(7), [4; 8]);
        assert_eq!(channels(20)[..2], [96, 0b1111_0000]);
    }

    #[test]
    fn halted_channels_wait_at_the_halt_target() {
        let mut thread = Thread::new(8);
        thread.flags[0] = 0b1010_1010;
        let mut halt = Inst::new(Opcode::Halt, 8, None, Vec::new());
        halt.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        (halt.jip, halt.uip) = (32, 32);
        let mov = |reg: u8, value: u64| {
            Inst::new(
                Opcode::Mov,
                8,
                Some(Dst::grf(reg, 0, Type::D)),
                vec![Src::Imm(Type::D, value)],
            )
        };
        let mut target = Inst::new(Opcode::Halt, 8, None, Vec::new());
        (target.jip, target.uip) = (16, 16);
        run_binary(&[halt, mov(4, 1), target, mov(5, 2)], &mut thread);
        let skipped: Vec<u64> = (0..8).map(|i| thread.get(4, i, Type::D)).collect();
        assert_eq!(skipped, [1, 0, 1, 0, 1, 0, 1, 0]);
        let joined: Vec<u64> = (0..8).map(|i| thread.get(5, i, Type::D)).collect();
        assert_eq!(joined, [2; 8]);
    }

    #[test]
    fn untyped_surface_reads_fetch_the_unmasked_dwords_of_enabled_channels() {
        let mut thread = Thread::new(8);
        thread.live = 0b0111_1111; // channel 7 is not dispatched
        thread
            .surfaces
            .insert(9, (0..16u8).flat_map(|x| [x, 0, 0, 0]).collect());
        for lane in 0..8 {
            // Channel 6 reads past the end of the 64-byte surface.
            let address = if lane == 6 { 60 } else { 4 * lane as u64 };
            thread.set(2, lane, Type::UD, address);
            for reg in 10..12 {
                thread.set(reg, lane, Type::UD, 0xdead);
            }
        }
        // Components x and z (mask 0b1010 disables y and w), SIMD8, surface 9.
        let (port, send, f) = (
            desc::UntypedPort::of(Gen::Gen9),
            desc::Send::FIELDS,
            desc::UntypedSurface::of(Gen::Gen9),
        );
        let read = Descriptor::build(&[
            (send.mlen, 1),
            (send.rlen, 2),
            (port.message_type, port.read),
            (f.simd_mode, desc::UntypedSurface::SIMD8),
            (f.disabled_channels, 0b1010),
            (desc::Surface::of(Gen::Gen9).binding_table_index, 9),
        ])
        .unwrap();
        let mut send = Inst::new(
            Opcode::Send,
            8,
            Some(Dst::grf(10, 0, Type::UD)),
            vec![grf(2, Type::UD), Src::Imm(Type::UD, read.0.into())],
        );
        send.sfid = port.sfid;
        assert_eq!(run(&[send], Gen::Gen9, &mut thread), Ok(()));
        for lane in 0..6 {
            assert_eq!(thread.get(10, lane, Type::UD), lane as u64);
            assert_eq!(thread.get(11, lane, Type::UD), lane as u64 + 2);
        }
        assert_eq!(thread.get(10, 6, Type::UD), 15);
        assert_eq!(thread.get(11, 6, Type::UD), 0);
        assert_eq!(thread.get(10, 7, Type::UD), 0xdead);
    }

    #[test]
    fn sends_are_reported_not_modelled() {
        let mut thread = Thread::new(8);
        // A URB message with opcode 0, which the emulator does not model.
        let one_grf = Descriptor::build(&[(desc::Send::FIELDS.mlen, 1)]).unwrap();
        let mut send = Inst::new(
            Opcode::Send,
            8,
            Some(Dst::grf(10, 0, Type::UW)),
            vec![grf(2, Type::UD), Src::Imm(Type::UD, one_grf.0.into())],
        );
        send.sfid = desc::Urb::SFID;
        assert_eq!(
            run(&[send], Gen::Gen9, &mut thread),
            Err(EmuError::Unsupported {
                index: 0,
                opcode: "send"
            })
        );
    }
}
