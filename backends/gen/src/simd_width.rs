//! SIMD-width lowering: instructions wider than the hardware executes are split into narrower
//! pieces.
//!
//! What: [`lower_simd_width`] asks [`lowered_width`] how many channels each instruction may
//! run at once on a generation (the hardware's execution-size limits, below, for the
//! instructions lowering emits) and replaces each wider one by pieces of that width, lowest channel group first.
//! Piece k runs channels k·width onwards: its channel group moves by as much, and each operand
//! that differs per channel moves to the bytes those channels read or write (a scalar operand
//! and an immediate stay whole; `pln`'s barycentrics move a GRF pair per 8 channels). Flags
//! follow the channel group by themselves: the predicate and the conditional modifier of a
//! piece use the flag bits of its channels. When the destination overlaps a source that
//! other channels read, the pieces write a temporary and copies move the result into place,
//! so that no piece overwrites what a later piece reads.
//!
//! Why: lowering emits every operation at the dispatch width and the optimizations after it
//! see whole operations; the limits are the hardware's and differ per generation (Ivy Bridge
//! has no SIMD16 3-source instructions nor compares to a register at SIMD16, and runs 64-bit
//! operations four channels at a time; no operand may
//! span more than two GRFs, extended math runs at most 16 channels and integer division 8).
//! Splitting in one place keeps those facts out of every lowering.
//!
//! Invariants: after the pass, every instruction's width is at most its [`lowered_width`]
//! (compilation asserts it again after register allocation in debug builds). Control flow and sends are never split: lowering emits messages
//! at legal widths, as their payloads are laid out per message.
//!
//! Options: the generation.

use crate::isa::{Gen, MathFn, Opcode, Type};
use crate::lir::{Inst, Lir, Op, Operand, Src};

/// Most channels `inst` may run at once on `hw`.
pub fn lowered_width(inst: &Inst, hw: Gen) -> u8 {
    let exec = inst.exec_size;
    let Op::Hw(op) = inst.op else {
        return exec;
    };
    if op.is_control_flow() || op.is_send() || op == Opcode::Nop {
        return exec;
    }
    // Instructions with rules of their own; the FPU rules below are for the others.
    match op {
        Opcode::Math => {
            return match inst.math {
                Some(MathFn::IntDiv | MathFn::IntMod | MathFn::IntDivMod) => exec.min(8),
                _ => exec.min(16),
            };
        }
        Opcode::Pln => return exec.min(16),
        // The accumulator holds 8 channels of 32-bit integers.
        Opcode::Mach | Opcode::Mac => return exec.min(8),
        _ => {}
    }
    let ivy_bridge = hw == Gen::Gen7;
    let mut width = exec.min(32);
    let mut limit = |w: u32| width = width.min(w.max(1) as u8);
    // WaCMPInstFlagDepClearedEarly.
    if op == Opcode::Cmp && ivy_bridge && inst.dst.is_some_and(|d| !d.is_null()) {
        limit(8);
    }
    let exec = exec as u32;
    let grfs = |bytes: u32| bytes.div_ceil(32).max(1);
    let dst_regs = match &inst.dst {
        Some(d) if !d.is_null() => grfs(inst.dst_span()),
        _ => 1,
    };
    let src_regs: Vec<(bool, u32)> = (0..inst.srcs.len())
        .filter_map(|i| {
            let r = inst.srcs[i].reg()?;
            Some((r.region.is_scalar(), grfs(inst.src_span(i))))
        })
        .collect();
    let reg_count = src_regs.iter().map(|&(_, n)| n).fold(dst_regs, u32::max);
    // No operand may span more than two GRFs.
    if reg_count > 2 {
        limit(exec / reg_count.div_ceil(2));
    }
    let three_source = op.num_srcs() == 3;
    if !hw.is_gen8_plus() {
        // Sources must span as many GRFs as a destination of several.
        if dst_regs > 1 && src_regs.iter().any(|&(scalar, n)| !scalar && n != dst_regs) {
            limit(exec / dst_regs);
        }
        // SIMD32 shares one 16-bit execution mask between its halves.
        if !inst.mask_all {
            limit(16);
        }
        // A destination of several GRFs needs 8 channels of 32 bits in each.
        if let Some(d) = inst.dst.filter(|d| !d.is_null())
            && dst_regs > 1
            && !inst.mask_all
        {
            let per_grf = 32 / (d.region.hstride.max(1) as u32 * d.ty.size() as u32);
            if per_grf != 8 {
                limit(per_grf);
            }
        }
    }
    if inst.cond.is_some() && (!hw.is_gen8_plus() || three_source) {
        limit(16);
    }
    if ivy_bridge {
        // Ivy Bridge runs any instruction with a 64-bit operand four channels at a time.
        let wide_dst = inst.dst.is_some_and(|d| !d.is_null() && d.ty.size() == 8);
        if wide_dst || inst.srcs.iter().any(|s| s.ty().size() == 8) {
            limit(4);
        }
        // No SIMD16 3-source instructions on Ivy Bridge.
        if three_source {
            limit(exec / reg_count);
        }
        // Regions replicating one channel per quad or row (derivatives) run 8 channels.
        if inst
            .srcs
            .iter()
            .filter_map(Src::reg)
            .any(|r| !r.region.is_scalar() && r.region.hstride == 0 && r.region.width < 8)
        {
            limit(8);
        }
    }
    // Round down to a power of two.
    1 << (u8::BITS - 1 - width.leading_zeros())
}

/// Splits every instruction of `program` wider than `hw` runs.
pub fn lower_simd_width(program: &mut Lir, hw: Gen) {
    let insts = std::mem::take(&mut program.insts);
    for inst in insts {
        let width = lowered_width(&inst, hw);
        if width >= inst.exec_size {
            program.insts.push(inst);
            continue;
        }
        let zip = inst.dst.filter(|&dst| overwrites_a_later_read(&inst, dst));
        let Some(dst) = zip else {
            program.insts.extend(pieces(&inst, width));
            continue;
        };
        // The pieces write a temporary of the destination's shape, then copies zip it back.
        let regs = (dst.offset % 32 + inst.dst_span()).div_ceil(32);
        let temp = Operand {
            base: crate::lir::Base::Vgrf(program.new_vreg(regs)),
            offset: dst.offset % 32,
            ..dst
        };
        program.insts.extend(pieces(
            &Inst {
                dst: Some(temp),
                ..inst.clone()
            },
            width,
        ));
        let raw = match dst.ty.size() {
            1 => Type::UB,
            2 => Type::UW,
            _ => Type::UD,
        };
        let copy = Inst {
            op: Op::Hw(Opcode::Mov),
            predicate: None,
            cond: None,
            saturate: false,
            math: None,
            send: None,
            dst: Some(dst.retype(raw)),
            srcs: vec![Src::Reg(plain(temp).retype(raw))],
            ..inst.clone()
        };
        let copy_width = lowered_width(&copy, hw);
        program.insts.extend(pieces(&copy, copy_width));
    }
}

/// A source read through the destination's own region, without modifiers.
fn plain(dst: Operand) -> Operand {
    Operand {
        negate: false,
        abs: false,
        ..dst
    }
}

/// Whether a piece writing `dst` could overwrite bytes of a source that a later piece reads:
/// a source of the same register read through another region or from another offset.
fn overwrites_a_later_read(inst: &Inst, dst: Operand) -> bool {
    inst.srcs.iter().filter_map(Src::reg).any(|src| {
        src.base == dst.base
            && !src.region.is_scalar()
            && (src.offset != dst.offset || src.region != dst.region || src.ty != dst.ty)
    })
}

/// `inst` as pieces of `width` channels.
fn pieces(inst: &Inst, width: u8) -> Vec<Inst> {
    (0..inst.exec_size / width)
        .map(|k| {
            let first = k * width;
            let srcs = inst
                .srcs
                .iter()
                .enumerate()
                .map(|(i, s)| match *s {
                    Src::Reg(o) if inst.op == Op::Hw(Opcode::Pln) && i == 1 => {
                        // Barycentrics come as a pair of GRFs (b1, b2) per 8 channels.
                        Src::Reg(Operand {
                            offset: o.offset + first as u32 / 8 * 64,
                            ..o
                        })
                    }
                    Src::Reg(o) => Src::Reg(part(o, first)),
                    imm => imm,
                })
                .collect();
            Inst {
                exec_size: width,
                group: inst.group + first,
                dst: inst
                    .dst
                    .map(|d| if d.is_null() { d } else { part(d, first) }),
                srcs,
                ..inst.clone()
            }
        })
        .collect()
}

/// The part of `o` that channels `first..` read or write: the element of channel `first` of
/// its region onwards. Scalars stay whole.
pub(crate) fn part(o: Operand, first: u8) -> Operand {
    let element = o.region.element(first as u32);
    Operand {
        offset: o.offset + element * o.ty.size() as u32,
        ..o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::emit;
    use crate::emu::{Thread, run};
    use crate::encoding::Predicate;
    use crate::isa::{CondMod, Region};
    use crate::lir::{Base, VReg};
    use crate::regalloc::allocate;

    /// A SIMD16 vector of floats in virtual register `n` (two GRFs), from byte `offset`.
    fn v(n: u32, offset: u32) -> Operand {
        Operand::vector(VReg(n), offset, Type::F)
    }

    fn inst(op: Opcode, exec: u8, dst: Operand, srcs: Vec<Src>) -> Inst {
        Inst::new(op, exec, Some(dst), srcs)
    }

    fn mad(dst: Operand, a: Operand) -> Inst {
        inst(
            Opcode::Mad,
            16,
            dst,
            vec![Src::Reg(a), Src::Reg(v(1, 0)), Src::Reg(v(1, 0))],
        )
    }

    #[test]
    fn widths_follow_the_generation() {
        let add32 = inst(
            Opcode::Add,
            32,
            Operand::vector(VReg(0), 0, Type::F),
            vec![Src::Reg(v(1, 0)), Src::imm_f(1.0)],
        );
        assert_eq!(lowered_width(&add32, Gen::Gen9), 16, "two GRFs per operand");
        let mov16 = inst(Opcode::Mov, 16, v(0, 0), vec![Src::Reg(v(1, 0))]);
        assert_eq!(lowered_width(&mov16, Gen::Gen7), 16);
        let mad16 = mad(v(0, 0), v(2, 0));
        assert_eq!(
            lowered_width(&mad16, Gen::Gen7),
            8,
            "no SIMD16 3-source on IVB"
        );
        assert_eq!(lowered_width(&mad16, Gen::Gen75), 16);
        let mut cmp = inst(
            Opcode::Cmp,
            16,
            v(0, 0),
            vec![Src::Reg(v(1, 0)), Src::imm_f(0.0)],
        );
        cmp.cond = Some(CondMod::G);
        assert_eq!(
            lowered_width(&cmp, Gen::Gen7),
            8,
            "compare to a register on IVB"
        );
        assert_eq!(lowered_width(&cmp, Gen::Gen8), 16);
        cmp.dst = Some(Operand::null(Type::F));
        assert_eq!(lowered_width(&cmp, Gen::Gen7), 16);
        let mut div = inst(
            Opcode::Math,
            16,
            v(0, 0),
            vec![Src::Reg(v(1, 0)), Src::Reg(v(2, 0))],
        );
        div.math = Some(MathFn::IntDiv);
        assert_eq!(lowered_width(&div, Gen::Gen9), 8);
        div.math = Some(MathFn::Sin);
        assert_eq!(lowered_width(&div, Gen::Gen9), 16);
        let quad = Operand {
            region: Region::new(4, 4, 0),
            ..v(1, 4)
        };
        let ddx = inst(
            Opcode::Add,
            16,
            v(0, 0),
            vec![Src::Reg(quad), Src::Reg(v(1, 0).negated())],
        );
        assert_eq!(lowered_width(&ddx, Gen::Gen7), 8, "derivatives on IVB");
        assert_eq!(lowered_width(&ddx, Gen::Gen75), 16);
        let scalar = Operand::scalar(Base::Vgrf(VReg(1)), 0, Type::F);
        let broadcast = inst(
            Opcode::Mul,
            16,
            v(0, 0),
            vec![Src::Reg(scalar), Src::imm_f(2.0)],
        );
        assert_eq!(
            lowered_width(&broadcast, Gen::Gen7),
            16,
            "scalars span nothing"
        );
    }

    #[test]
    fn pieces_take_their_channels_part_of_each_operand() {
        let mut add = inst(
            Opcode::Add,
            16,
            v(0, 0),
            vec![
                Src::Reg(v(1, 0)),
                Src::Reg(Operand::scalar(Base::Vgrf(VReg(2)), 4, Type::F)),
            ],
        );
        add.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        let split = pieces(&add, 8);
        assert_eq!(split.len(), 2);
        assert_eq!((split[1].group, split[1].exec_size), (8, 8));
        assert_eq!(split[1].dst.unwrap().offset, 32);
        assert_eq!(split[1].srcs[0].reg().unwrap().offset, 32);
        assert_eq!(
            split[1].srcs[1].reg().unwrap().offset,
            4,
            "the scalar stays"
        );
        assert_eq!(split[1].predicate, add.predicate);
    }

    /// Runs a SIMD16 program over inputs in g2..g5 (two float vectors) and returns g6..g7.
    fn execute(program: &Lir, hw: Gen) -> Vec<u64> {
        let mut program = program.clone();
        let alloc = allocate(&mut program, Gen::Gen9, false).expect("fits");
        let mut thread = Thread::new(16);
        for c in 0..16 {
            let x = c as f32 * 0.75 - 4.0;
            thread.set(2 + c as u8 / 8, c % 8, Type::F, x.to_bits() as u64);
            let y = 3.0 - c as f32 * 0.5;
            thread.set(4 + c as u8 / 8, c % 8, Type::F, y.to_bits() as u64);
        }
        run(&emit(&program, &alloc), hw, &mut thread).expect("runs");
        (0..16)
            .map(|c| thread.get(6 + c as u8 / 8, c % 8, Type::F))
            .collect()
    }

    /// Split programs compute what the whole instructions do, including a 3-source
    /// instruction whose destination overlaps its source one channel along (zipped through a
    /// temporary) and a compare to a register whose flag a later select reads.
    #[test]
    fn splitting_keeps_what_each_channel_computes() {
        let payload = |grf: u8| Operand::payload(grf, 0, Type::F);
        let load = |n: u32, grf: u8| inst(Opcode::Mov, 16, v(n, 0), vec![Src::Reg(payload(grf))]);
        let mut cmp = inst(
            Opcode::Cmp,
            16,
            v(3, 0),
            vec![Src::Reg(v(0, 0)), Src::Reg(v(1, 0))],
        );
        cmp.cond = Some(CondMod::L);
        let mut sel = inst(
            Opcode::Sel,
            16,
            v(4, 0),
            vec![Src::Reg(v(0, 0)), Src::Reg(v(3, 0))],
        );
        sel.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        let insts = vec![
            load(0, 2),
            load(1, 4),
            // v0 channels 1..16 = v0 channels 0..15 + v1², in place: the first piece
            // writes channel 8, which the second reads.
            mad(v(0, 4), v(0, 0)),
            cmp,
            sel,
            inst(
                Opcode::Add,
                16,
                payload(6),
                vec![Src::Reg(v(4, 0)), Src::Reg(v(0, 0))],
            ),
        ];
        let program = Lir {
            dispatch_width: 16,
            insts,
            vreg_sizes: vec![3, 2, 2, 2, 2],
            payload_regs: 8,
            kept_regs: 0,
            grf_limit: crate::regalloc::GRFS,
            scratch_bytes: 0,
        };
        let mut lowered = program.clone();
        lower_simd_width(&mut lowered, Gen::Gen7);
        // The mad in two pieces and a copy back, the compare in two pieces.
        assert_eq!(lowered.insts.len(), program.insts.len() + 3);
        // The temporary holds 64 bytes from byte 4: three GRFs.
        assert_eq!(lowered.vreg_sizes[5..], [3]);
        assert!(
            lowered
                .insts
                .iter()
                .all(|i| i.exec_size <= lowered_width(i, Gen::Gen7))
        );
        // The emulator runs the whole instructions too: they are the reference.
        assert_eq!(execute(&lowered, Gen::Gen7), execute(&program, Gen::Gen7));
    }
}
