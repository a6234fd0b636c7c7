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
