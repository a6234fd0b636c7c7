//! Emission: the allocated Gen IR as native instructions, with control-flow jumps resolved.
//!
//! What: [`emit`] replaces virtual registers by their GRFs, gives 3-source instructions their
//! Align16 regions and one-source math functions the null register as their second source
//! (the native forms the decoder reads back), drops the `do` marks (Gen6+ has no `do`), turns
//! the halt target into the closing `halt` every halted channel must reach, and sets the jump
//! offsets (in bytes, 16 per instruction) as the hardware reads them:
//! - `if`: JIP to the instruction after its `else` (or to its `endif`), UIP to its `endif`;
//! - `else`: JIP and UIP to its `endif`; `endif`: JIP to the next instruction;
//! - `while`: JIP back to the loop's first instruction;
//! - `break` and `cont`: JIP to the end of the innermost block around them (the next `else`,
//!   `endif` or `while`), UIP to the loop's `while`;
//! - `halt`: JIP to the end of its block, UIP to the halt target.
//!
//! Invariants: the output has one instruction per Gen IR instruction except `do` marks;
//! every register operand is a GRF below 128.
//!
//! Options: none.

use crate::disasm::listing;
use crate::encoding::{Dst, IDENTITY_SWIZZLE, Inst, Reg, Src, assemble};
use crate::isa::{ARF_NULL, Gen, Opcode, RegFile, Region, Type};
use crate::lir::{self, Base, Lir, Op, Operand};
use crate::regalloc::Allocation;
use shrew_engine::passes::machine::MachineIr;
use shrew_engine::provenance::Origin;
use std::sync::Arc;

/// Bytes of a native instruction.
const INST_BYTES: i32 = 16;

/// A generation's native instructions: what emission makes.
#[derive(Clone, Debug, PartialEq)]
pub struct Native {
    pub hw: Gen,
    pub insts: Vec<Inst>,
    /// What made each instruction ([`lir::Inst::origin`]), when recorded; else empty.
    pub origins: Vec<Option<Arc<Origin>>>,
}

impl MachineIr for Native {
    /// The assembly, as the disassembler prints it.
    fn print(&self) -> String {
        listing(&self.insts, &self.origins, self.hw)
    }

    /// Every instruction encodes on the generation.
    fn validate(&self) -> Result<(), String> {
        assemble(&self.insts, self.hw)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn instruction_count(&self) -> usize {
        self.insts.len()
    }
}

/// The Gen IR instructions that become native ones, with their indices: all but the `do`
/// marks.
fn emitted(program: &Lir) -> impl Iterator<Item = (usize, &lir::Inst)> {
    (program.insts.iter().enumerate()).filter(|(_, inst)| inst.op != Op::Do)
}

/// What made each native instruction [`emit`] makes of the program; empty when the run
/// recorded no provenance.
pub fn origins(program: &Lir) -> Vec<Option<Arc<Origin>>> {
    if program.insts.iter().all(|inst| inst.origin.is_none()) {
        return Vec::new();
    }
    emitted(program)
        .map(|(_, inst)| inst.origin.clone())
        .collect()
}

/// The native program of an allocated Gen IR program.
pub fn emit(program: &Lir, alloc: &Allocation) -> Vec<Inst> {
    // Native index of each Gen IR instruction (the `do` marks take none).
    let mut native_index = Vec::with_capacity(program.insts.len());
    let mut n = 0usize;
    for inst in &program.insts {
        native_index.push(n);
        if inst.op != Op::Do {
            n += 1;
        }
    }
    let jumps = jump_targets(program);
    let mut out = Vec::with_capacity(n);
    for (i, inst) in emitted(program) {
        let mut native = convert(inst, alloc);
        let offset =
            |target: usize| (native_index[target] as i32 - native_index[i] as i32) * INST_BYTES;
        if let Some((jip, uip)) = jumps[i] {
            native.jip = offset(jip);
            native.uip = offset(uip);
        }
        if inst.op == Op::HaltTarget {
            native.jip = INST_BYTES;
            native.uip = INST_BYTES;
        }
        out.push(native);
    }
    out
}

/// The JIP and UIP targets (Gen IR indices) of each control-flow instruction.
fn jump_targets(program: &Lir) -> Vec<Option<(usize, usize)>> {
    let insts = &program.insts;
    let nesting = program.nesting();
    let last = insts.len().saturating_sub(1);
    let block_end = block_ends(insts);
    insts
        .iter()
        .enumerate()
        .map(|(i, inst)| {
            let endif = nesting.endif_of[i].unwrap_or(last);
            match inst.op {
                Op::Hw(Opcode::If) => Some(match nesting.else_of[i] {
                    Some(e) => (e + 1, endif),
                    None => (endif, endif),
                }),
                Op::Hw(Opcode::Else) => Some((endif, endif)),
                Op::Hw(Opcode::Endif) => Some((i + 1, i + 1)),
                // The loop starts after its `do` mark.
                Op::Hw(Opcode::While) => nesting.do_of[i].map(|d| (d + 1, d + 1)),
                Op::Hw(Opcode::Break | Opcode::Cont) => {
                    Some((block_end[i], nesting.while_of[i].unwrap_or(last)))
                }
                Op::Hw(Opcode::Halt) => {
                    let target = nesting.halt_target.unwrap_or(last);
                    Some((block_end[i].min(target), target))
                }
                _ => None,
            }
        })
        .collect()
}

/// For each `break`, `continue` and `halt`, the end of the innermost block around it: the next
/// else, endif or while (or the halt target) at its depth, or the last instruction. One pass
/// keeps the jumps still waiting for their block's end, per construct open there.
fn block_ends(insts: &[lir::Inst]) -> Vec<usize> {
    let last = insts.len().saturating_sub(1);
    let mut ends = vec![last; insts.len()];
    let mut waiting: Vec<Vec<usize>> = vec![Vec::new()];
    for (k, inst) in insts.iter().enumerate() {
        match inst.op {
            Op::Hw(Opcode::If) | Op::Do => waiting.push(Vec::new()),
            Op::Hw(Opcode::Else) | Op::HaltTarget => {
                for i in waiting.last_mut().expect("a level").drain(..) {
                    ends[i] = k;
                }
            }
            Op::Hw(Opcode::Endif | Opcode::While) => {
                for i in waiting.last_mut().expect("a level").drain(..) {
                    ends[i] = k;
                }
                if waiting.len() > 1 {
                    waiting.pop();
                }
            }
            Op::Hw(Opcode::Break | Opcode::Cont | Opcode::Halt) => {
                waiting.last_mut().expect("a level").push(k);
            }
            _ => {}
        }
    }
    ends
}

/// The register file, number and byte offset of an operand once allocated.
pub(crate) fn register(op: &Operand, alloc: &Allocation) -> (RegFile, u8, u8) {
    match op.base {
        Base::Vgrf(v) => {
            let first = alloc.first_grf[v.0 as usize].expect("allocated") as u32;
            (
                RegFile::Grf,
                (first + op.offset / 32) as u8,
                (op.offset % 32) as u8,
            )
        }
        Base::Fixed(g) => (
            RegFile::Grf,
            g + (op.offset / 32) as u8,
            (op.offset % 32) as u8,
        ),
        Base::Arf(nr) => (RegFile::Arf, nr, op.offset as u8),
    }
}

fn convert(inst: &lir::Inst, alloc: &Allocation) -> Inst {
    let opcode = match inst.op {
        Op::Hw(op) => op,
        Op::HaltTarget => Opcode::Halt,
        Op::Do => Opcode::Nop,
        Op::Call(_) => Opcode::Call,
        Op::Return => Opcode::Ret,
    };
    let three_src = opcode.num_srcs() == 3;
    let mut srcs: Vec<Src> = inst
        .srcs
        .iter()
        .map(|s| match *s {
            lir::Src::Imm(ty, bits) => Src::Imm(ty, bits),
            lir::Src::Reg(r) => {
                let (file, nr, subnr) = register(&r, alloc);
                let region = if three_src && r.region != Region::SCALAR {
                    Region::new(4, 4, 1)
                } else {
                    r.region
                };
                Src::Reg(Reg {
                    file,
                    nr,
                    subnr,
                    ty: r.ty,
                    region,
                    negate: r.negate,
                    abs: r.abs,
                    // A replicated scalar of a 3-source instruction has no swizzle.
                    swizzle: if three_src && region == Region::SCALAR {
                        0
                    } else {
                        IDENTITY_SWIZZLE
                    },
                })
            }
        })
        .collect();
    // A one-source math function reads the null register as its second source.
    if opcode == Opcode::Math && srcs.len() == 1 {
        srcs.push(Src::Reg(Reg {
            file: RegFile::Arf,
            ..Reg::grf(ARF_NULL, 0, srcs[0].ty(), Region::new(8, 8, 1))
        }));
    }
    if let Op::Call(callee) = inst.op {
        // Until the parts are linked ([`crate::compile`]), a call's destination is g0 and its
        // immediate names the callee; linking makes them the callee's return-address register
        // and the offset to its first instruction.
        srcs = vec![Src::Imm(Type::D, u64::from(callee))];
    }
    let dst = inst.dst.map(|d| {
        let (file, nr, subnr) = register(&d, alloc);
        Dst {
            file,
            nr,
            subnr,
            ty: d.ty,
            hstride: d.region.hstride.max(1),
            writemask: 0xF,
        }
    });
    let dst = match inst.op {
        Op::Call(_) => Some(Dst::grf(0, 0, Type::UD)),
        _ => dst,
    };
    Inst {
        opcode,
        exec_size: inst.exec_size,
        group: inst.group,
        mask_all: inst.mask_all,
        predicate: inst.predicate,
        cond: inst.cond,
        math: inst.math,
        sfid: inst.send.map_or(0, |m| m.sfid),
        flag: inst.flag,
        saturate: inst.saturate,
        acc_write: false,
        dst,
        srcs,
        jip: 0,
        uip: 0,
    }
}
