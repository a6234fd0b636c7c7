//! `coalesce`: values copied into a send's payload are computed there instead.
//!
//! What: a message payload is a virtual register that only sends read and only whole-register
//! `mov`s fill, one per part (the colours of a render-target write, for instance). When such a
//! `mov` copies all of a register that nothing else reads, every instruction writing or reading
//! that register is redirected to the payload's part and the `mov` goes. This is what Mesa's
//! `register_coalesce` and `compute_to_mrf` achieve for message payloads.
//!
//! Why: lowering assembles payloads by copying, so that every value has its own register until
//! allocation; without this pass every render-target write would cost a `mov` per component.
//!
//! A payload with GRFs nothing writes (the components of a vertex's output slot the shader leaves
//! undefined) is live, all of it, from its first write: a copy whose source is written in an
//! earlier basic block than the copy stays, so that the payload is not held across the control
//! flow between them, only the source's one GRF.
//!
//! Invariants: a payload part is written by exactly one instruction before and after (the copy's
//! source definitions, which the copy replaced); the renamed register's bytes map one to one
//! onto the part, so every channel holds what the copy would have put there.
//!
//! Options: none.

use crate::isa::Opcode;
use crate::lir::{Base, Lir, Op, Src, VReg};

/// Runs the pass; gives whether it changed anything.
pub fn coalesce_payloads(program: &mut Lir) -> bool {
    let vregs = program.vreg_sizes.len();
    let mut reads = vec![0u32; vregs];
    let mut read_by_other_than_send = vec![false; vregs];
    let mut writes = vec![0u32; vregs];
    let mut written_by_other_than_mov = vec![false; vregs];
    for inst in &program.insts {
        for (i, src) in inst.srcs.iter().enumerate() {
            if let Some(v) = src.reg().and_then(|r| r.vreg()) {
                reads[v.0 as usize] += 1;
                if !(inst.send.is_some() && i == 0) {
                    read_by_other_than_send[v.0 as usize] = true;
                }
            }
        }
        if let Some(v) = inst.dst.and_then(|d| d.vreg()) {
            writes[v.0 as usize] += 1;
            if inst.opcode() != Some(Opcode::Mov) {
                written_by_other_than_mov[v.0 as usize] = true;
            }
        }
    }
    let is_payload = |v: VReg| {
        !read_by_other_than_send[v.0 as usize] && !written_by_other_than_mov[v.0 as usize]
    };
    // Each instruction's basic block (counted by the control flow before it), each register's
    // blocks that write it, and the GRFs of each register something writes.
    let mut block = 0u32;
    let mut block_of = Vec::with_capacity(program.insts.len());
    let mut written_in: Vec<Vec<u32>> = vec![Vec::new(); vregs];
    let mut written_grfs: Vec<u64> = vec![0; vregs];
    for inst in &program.insts {
        let boundary = match inst.op {
            Op::Hw(op) => op.is_control_flow(),
            Op::Do | Op::HaltTarget | Op::Call(_) | Op::Return => true,
        };
        block += boundary as u32;
        block_of.push(block);
        if let Some(d) = inst.dst
            && let Some(v) = d.vreg()
        {
            written_in[v.0 as usize].push(block);
            for g in d.grfs(inst.dst_span()) {
                written_grfs[v.0 as usize] |= 1u64.checked_shl(g).unwrap_or(0);
            }
        }
    }
    let has_holes = |v: VReg| {
        let size = program.vreg_sizes[v.0 as usize].min(64);
        let all = if size == 64 {
            u64::MAX
        } else {
            (1u64 << size) - 1
        };
        written_grfs[v.0 as usize] & all != all
    };
    // (source register, payload register, byte offset) of each copy to fold, and its index.
    let mut folds: Vec<(usize, VReg, VReg, u32)> = Vec::new();
    for (index, inst) in program.insts.iter().enumerate() {
        let (Some(dst), [Src::Reg(src)]) = (inst.dst, inst.srcs.as_slice()) else {
            continue;
        };
        let (Some(payload), Some(source)) = (dst.vreg(), src.vreg()) else {
            continue;
        };
        let plain = inst.op == Op::Hw(Opcode::Mov)
            && inst.predicate.is_none()
            && !inst.saturate
            && !inst.mask_all
            && inst.exec_size == program.dispatch_width
            && !src.negate
            && !src.abs
            && src.offset == 0
            && src.ty.size() == dst.ty.size()
            && src.region == dst.region
            && dst.offset % 32 == 0;
        let whole = program.vreg_sizes[source.0 as usize] * 32 == inst.dst_span();
        // Checked last: it scans the program.
        let sole_part_writer = || {
            program.insts.iter().enumerate().all(|(k, other)| {
                k == index
                    || other.dst.is_none_or(|d| {
                        d.vreg() != Some(payload)
                            || d.offset + other.dst_span() <= dst.offset
                            || d.offset >= dst.offset + inst.dst_span()
                    })
            })
        };
        if plain
            && whole
            && payload != source
            && is_payload(payload)
            && reads[source.0 as usize] == 1
            && writes[source.0 as usize] > 0
            && folds
                .iter()
                .all(|&(_, s, p, _)| s != source && s != payload && p != source)
            && (!has_holes(payload)
                || written_in[source.0 as usize]
                    .iter()
                    .all(|&b| b == block_of[index]))
            && sole_part_writer()
        {
            folds.push((index, source, payload, dst.offset));
        }
    }
    if folds.is_empty() {
        return false;
    }
    let redirect = |base: &mut Base, offset: &mut u32| {
        if let Base::Vgrf(v) = *base
            && let Some(&(_, _, payload, at)) = folds.iter().find(|f| f.1 == v)
        {
            *base = Base::Vgrf(payload);
            *offset += at;
        }
    };
    let dead: Vec<usize> = folds.iter().map(|f| f.0).collect();
    let mut index = 0;
    program.insts.retain(|_| {
        index += 1;
        !dead.contains(&(index - 1))
    });
    for inst in &mut program.insts {
        if let Some(d) = &mut inst.dst {
            redirect(&mut d.base, &mut d.offset);
        }
        for src in &mut inst.srcs {
            if let Src::Reg(r) = src {
                redirect(&mut r.base, &mut r.offset);
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::desc;
    use crate::isa::{Gen, Type};
    use crate::lir::testing::{mov, program, v};
    use crate::lir::{Inst, Message, Operand};

    /// Register 1 (written at the start, or after an `if`) copied into the first GRF of
    /// payload register 0, whose second GRF nothing writes, read by a send at the end.
    fn copy_into_a_payload_with_a_hole(written_before_the_if: bool) -> Lir {
        let value = mov(v(1, Type::F), Src::imm_f(1.0));
        let mut insts = Vec::new();
        if written_before_the_if {
            insts.push(value.clone());
        }
        insts.push(Inst::control(Op::Hw(Opcode::If), 8));
        insts.push(mov(v(2, Type::F), Src::imm_f(2.0)));
        insts.push(Inst::control(Op::Hw(Opcode::Endif), 8));
        if !written_before_the_if {
            insts.push(value);
        }
        insts.push(mov(v(0, Type::F), Src::Reg(v(1, Type::F))));
        let send = desc::Send::of(Gen::Gen9);
        let message = Message::new(desc::Urb::SFID, &[(send.mlen, 2)]).unwrap();
        let mut write = Inst::new(
            Opcode::Send,
            8,
            Some(Operand::null(Type::UD)),
            vec![Src::Reg(v(0, Type::UD)), Src::imm_ud(message.descriptor())],
        );
        write.send = Some(message);
        insts.push(write);
        let mut p = program(3, insts);
        p.vreg_sizes[0] = 2;
        p
    }

    /// The copy is folded when its source is written in its block, and kept when folding would
    /// hold the payload with its undefined GRF across the `if`.
    #[test]
    fn copies_into_payloads_with_holes_fold_within_a_block() {
        let mut same_block = copy_into_a_payload_with_a_hole(false);
        assert!(coalesce_payloads(&mut same_block));
        let mut across = copy_into_a_payload_with_a_hole(true);
        assert!(!coalesce_payloads(&mut across));
    }
}
