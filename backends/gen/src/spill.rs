//! Spilling: a virtual register the register file has no room for lives in the thread's scratch
//! memory, and every instruction that touches it goes through a short-lived temporary.
//!
//! What: [`spill`] gives the register a slot of scratch and rewrites each instruction reading
//! or writing it to use a fresh temporary instead: a *fill* (a scratch block read) loads the
//! GRFs the instruction touches before it, and a *spill* (a scratch block write) stores the GRFs
//! it writes after it. [`spill_costs`] weighs each register as Mesa does, so the allocator
//! spills what costs least per GRF of pressure it relieves.
//!
//! Why: register allocation ([`crate::regalloc`]) calls it when colouring fails; spilling one
//! long-lived register splits its range into short ones around each use.
//!
//! Invariants: block messages move whole GRFs whatever the execution mask, so an instruction
//! that writes only part of what it touches (some bytes of the GRFs, a predicate, or channels
//! that divergent control flow disables) gets a fill first, and the spill after it writes back
//! what the register held in the other channels. The temporaries are marked unspillable.
//!
//! The messages: Gen7+ scratch block read and write on the data cache, offset in
//! the descriptor in 32-byte units and a header whose dword 5 (the per-thread scratch offset) the
//! thread's g0 provides: a fill reads with g0 itself as its one-GRF message; a spill's message is
//! a copy of g0 and the data after it, so the temporary of a write keeps a header GRF before its
//! data when the write lands there whole. The offset field has 12 bits, a 128 KiB window; a slot
//! past the first window moves the header's base (bits 31:10 of dword 5) up by whole windows, in
//! a copy of g0 for a fill.
//!
//! Options: none.

use crate::encoding::EncodingError;
use crate::fields::desc;
use crate::isa::{Gen, Opcode, SCRATCH_BASE_BYTE, Type};
use crate::lir::{Base, Inst, Lir, Message, Op, Operand, Src, VReg};

/// The widest scratch block, in GRFs.
const MAX_BLOCK: u32 = 4;
/// GRFs a message's offset reaches from the base in its header: 12 bits of 32-byte units
/// ([`desc::Scratch`]'s offset field).
const WINDOW_GRFS: u32 = 1 << 12;

/// What spilling one register added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spilled {
    pub spills: u32,
    pub fills: u32,
    /// The temporaries it created, which must not be spilled in turn.
    pub temporaries: Vec<VReg>,
}

/// Per instruction: the loop depth and the `if` depth around it.
fn depths(program: &Lir) -> Vec<(u32, u32)> {
    let (mut loops, mut ifs) = (0u32, 0u32);
    program
        .insts
        .iter()
        .map(|inst| {
            match inst.op {
                Op::Hw(Opcode::While) => loops = loops.saturating_sub(1),
                Op::Hw(Opcode::Endif) => ifs = ifs.saturating_sub(1),
                _ => {}
            }
            let here = (loops, ifs);
            match inst.op {
                Op::Do => loops += 1,
                Op::Hw(Opcode::If) => ifs += 1,
                _ => {}
            }
            here
        })
        .collect()
}

/// Mesa's spill cost of each virtual register: the GRFs its instructions read and write, each
/// ×10 per loop around it and ×0.5 per `if`.
pub fn spill_costs(program: &Lir) -> Vec<f32> {
    let mut costs = vec![0f32; program.vreg_sizes.len()];
    for (inst, (loops, ifs)) in program.insts.iter().zip(depths(program)) {
        let scale = 10f32.powi(loops as i32) * 0.5f32.powi(ifs as i32);
        for (i, src) in inst.srcs.iter().enumerate() {
            if let Some(v) = src.reg().and_then(|r| r.vreg()) {
                costs[v.0 as usize] += inst.src_span(i).div_ceil(32) as f32 * scale;
            }
        }
        if let Some(v) = inst.dst.and_then(|d| d.vreg()) {
            costs[v.0 as usize] += inst.dst_span().div_ceil(32) as f32 * scale;
        }
    }
    costs
}

/// Pieces of `count` GRFs from `first` that scratch blocks can move: 4, 2 or 1 GRFs.
fn blocks(first: u32, count: u32) -> Vec<(u32, u32)> {
    let mut pieces = Vec::new();
    let mut at = first;
    while at < first + count {
        let left = first + count - at;
        let size = [MAX_BLOCK, 2, 1]
            .into_iter()
            .find(|&s| s <= left)
            .expect("1 fits");
        pieces.push((at, size));
        at += size;
    }
    pieces
}

/// A scratch block read or write (`write`) on `hw` of `size` GRFs at scratch GRF `slot` of the
/// window its header's base points to: the header is the payload's first GRF, a write's data
/// follows it.
fn scratch_block(hw: Gen, write: bool, slot: u32, size: u32) -> Result<Message, EncodingError> {
    let send = desc::Send::of(hw);
    let scratch = desc::Scratch::of(hw);
    let (mlen, rlen) = if write { (1 + size, 0) } else { (1, size) };
    Message::new(
        desc::DataCache::SFID,
        &[
            (send.mlen, mlen),
            (send.rlen, rlen),
            (send.header_present, 1),
            (
                desc::DataCache::of(hw).category,
                desc::DataCache::SCRATCH_CATEGORY,
            ),
            (scratch.write, write as u32),
            (scratch.block_size, size.trailing_zeros()),
            (scratch.offset, slot % WINDOW_GRFS),
        ],
    )
}

/// Moves the scratch base in `header` (a copy of g0) up to the window holding scratch GRF
/// `slot`; nothing for the first window.
fn rebase_header(header: VReg, slot: u32) -> Option<Inst> {
    let window_bytes = slot / WINDOW_GRFS * WINDOW_GRFS * 32;
    (window_bytes > 0).then(|| {
        let base = Operand::scalar(Base::Vgrf(header), SCRATCH_BASE_BYTE, Type::UD);
        let mut add = Inst::new(
            Opcode::Add,
            1,
            Some(base),
            vec![Src::Reg(base), Src::imm_ud(window_bytes)],
        );
        add.mask_all = true;
        add
    })
}

/// A scratch block read of `size` GRFs at scratch GRF `slot` into `dst` bytes into `reg`, with
/// g0 as its header, or past the first window a copy of g0 in a new register of `program`
/// (returned, to be kept from spilling) whose base moves to the slot's window.
fn fill(
    program: &mut Lir,
    hw: Gen,
    (reg, dst): (VReg, u32),
    slot: u32,
    size: u32,
    before: &mut Vec<Inst>,
) -> Result<Option<VReg>, EncodingError> {
    let message = scratch_block(hw, false, slot, size)?;
    let g0 = Operand::payload(0, 0, Type::UD);
    let header = (slot >= WINDOW_GRFS).then(|| program.new_vreg(1));
    let header_operand = match header {
        Some(header) => {
            before.push(copy_grf(Operand::vector(header, 0, Type::UD), g0));
            before.extend(rebase_header(header, slot));
            Operand::vector(header, 0, Type::UD)
        }
        None => g0,
    };
    let mut inst = Inst::new(
        Opcode::Send,
        program.dispatch_width,
        Some(Operand::vector(reg, dst, Type::UD)),
        vec![Src::Reg(header_operand), Src::imm_ud(message.descriptor())],
    );
    inst.send = Some(message);
    // Whole GRFs, as the spill that wrote them.
    inst.mask_all = true;
    before.push(inst);
    Ok(header)
}

/// A whole-GRF copy whatever the execution mask: `mov(8) dst src WE_all` as dwords.
fn copy_grf(dst: Operand, src: Operand) -> Inst {
    let mut inst = Inst::new(Opcode::Mov, 8, Some(dst), vec![Src::Reg(src)]);
    inst.mask_all = true;
    inst
}

/// The spill of `size` GRFs at `payload` + 32 (after its header GRF) to scratch GRF `slot`:
/// the header copied from g0 (its base moved to the slot's window), then a scratch block write.
fn spill_from(
    hw: Gen,
    width: u8,
    payload: VReg,
    slot: u32,
    size: u32,
) -> Result<(Vec<Inst>, Inst), EncodingError> {
    let mut header = vec![copy_grf(
        Operand::vector(payload, 0, Type::UD),
        Operand::payload(0, 0, Type::UD),
    )];
    header.extend(rebase_header(payload, slot));
    let message = scratch_block(hw, true, slot, size)?;
    let mut send = Inst::new(
        Opcode::Send,
        width,
        Some(Operand::null(Type::UW)),
        vec![
            Src::Reg(Operand::vector(payload, 0, Type::UD)),
            Src::imm_ud(message.descriptor()),
        ],
    );
    send.send = Some(message);
    send.mask_all = true;
    Ok((header, send))
}

/// Moves each virtual register of `regs` to scratch at its byte slot (a multiple of 32) on `hw`:
/// every instruction touching it goes through a temporary filled before and spilled after it.
/// Several registers give the program spilling them one after the other would: an instruction
/// touching several gets each one's fills after the earlier ones' and its spills before them.
/// A slot past the scratch messages' offsets is an error naming the field.
pub fn spill(program: &mut Lir, hw: Gen, regs: &[(VReg, u32)]) -> Result<Spilled, EncodingError> {
    let mut position = vec![None; program.vreg_sizes.len()];
    for (k, &(v, _)) in regs.iter().enumerate() {
        position[v.0 as usize] = Some(k);
    }
    let depths = depths(program);
    let insts = std::mem::take(&mut program.insts);
    let mut out = Vec::with_capacity(insts.len());
    let mut done = Spilled::default();
    let mut touched = Vec::new();
    for (mut inst, depth) in insts.into_iter().zip(depths) {
        touched.clear();
        let operands = inst.srcs.iter().filter_map(Src::reg).chain(&inst.dst);
        touched.extend(operands.filter_map(|r| position[r.vreg()?.0 as usize]));
        if touched.is_empty() {
            out.push(inst);
            continue;
        }
        touched.sort_unstable();
        touched.dedup();
        let mut after = Vec::new();
        for &k in &touched {
            let (v, slot) = regs[k];
            let mut spills = spill_around(
                program,
                hw,
                (v, slot / 32),
                &mut inst,
                depth,
                &mut out,
                &mut done,
            )?;
            spills.append(&mut after);
            after = spills;
        }
        out.push(inst);
        out.append(&mut after);
    }
    program.insts = out;
    Ok(done)
}

/// Rewrites `inst` (at loop and `if` depths `depth`) to use a temporary in place of `v`, which
/// lives at scratch GRF `slot_grf`: the fills go to `before`; gives the spills to follow it.
fn spill_around(
    program: &mut Lir,
    hw: Gen,
    (v, slot_grf): (VReg, u32),
    inst: &mut Inst,
    (loops, ifs): (u32, u32),
    before: &mut Vec<Inst>,
    done: &mut Spilled,
) -> Result<Vec<Inst>, EncodingError> {
    let width = program.dispatch_width;
    let reads: Vec<(u32, u32)> = (0..inst.srcs.len())
        .filter_map(|i| {
            let r = inst.srcs[i].reg()?;
            (r.vreg() == Some(v)).then(|| r.grfs(inst.src_span(i)).into_inner())
        })
        .collect();
    let write = inst
        .dst
        .filter(|d| d.vreg() == Some(v))
        .map(|d| d.grfs(inst.dst_span()).into_inner());
    if reads.is_empty() && write.is_none() {
        return Ok(Vec::new());
    }
    let lo = reads.iter().chain(&write).map(|r| r.0).min().expect("one");
    let hi = reads.iter().chain(&write).map(|r| r.1).max().expect("one");
    // Whether the write leaves bytes or channels of its GRFs as they were.
    let partial = write.is_some_and(|(first, last)| {
        let d = inst.dst.expect("written");
        let whole_grfs = d.offset.is_multiple_of(32)
            && inst.dst_span() == (last - first + 1) * 32
            && (inst.send.is_some() || d.region.hstride == 1);
        let every_channel = inst.mask_all || (loops == 0 && ifs == 0);
        !whole_grfs || !inst.is_full_write() || !every_channel || (lo, hi) != (first, last)
    });
    // The write's own message when it covers the temporary whole in one block.
    let direct = write.is_some_and(|(first, last)| {
        first == lo && last == hi && [1, 2, 4].contains(&(last - first + 1))
    });
    let header = direct as u32;
    let temp = program.new_vreg(header + hi - lo + 1);
    done.temporaries.push(temp);
    if !reads.is_empty() || partial {
        for (at, size) in blocks(lo, hi - lo + 1) {
            let target = (temp, (header + at - lo) * 32);
            let header = fill(program, hw, target, slot_grf + at, size, before)?;
            done.temporaries.extend(header);
            done.fills += 1;
        }
    }
    let rebase = |r: &mut Operand| {
        if r.vreg() == Some(v) {
            r.base = Base::Vgrf(temp);
            r.offset = r.offset + header * 32 - lo * 32;
        }
    };
    for src in &mut inst.srcs {
        if let Src::Reg(r) = src {
            rebase(r);
        }
    }
    if let Some(d) = &mut inst.dst {
        rebase(d);
    }
    let Some((first, last)) = write else {
        return Ok(Vec::new());
    };
    if direct {
        done.spills += 1;
        let (mut insts, send) = spill_from(hw, width, temp, slot_grf + first, last - first + 1)?;
        insts.push(send);
        return Ok(insts);
    }
    let mut after = Vec::new();
    for (at, size) in blocks(first, last - first + 1) {
        let payload = program.new_vreg(1 + size);
        done.temporaries.push(payload);
        let (header, send) = spill_from(hw, width, payload, slot_grf + at, size)?;
        after.extend(header);
        for k in 0..size {
            after.push(copy_grf(
                Operand::vector(payload, 32 * (1 + k), Type::UD),
                Operand::vector(temp, 32 * (at + k - lo), Type::UD),
            ));
        }
        after.push(send);
        done.spills += 1;
    }
    Ok(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lir::testing::{mov, program, v};

    #[test]
    fn costs_weigh_loops_and_ifs() {
        let mut p = program(
            2,
            vec![
                mov(v(0, Type::F), Src::imm_f(1.0)),
                Inst::control(Op::Do, 8),
                mov(v(1, Type::F), Src::Reg(v(0, Type::F))),
                Inst::control(Op::Hw(Opcode::If), 8),
                mov(v(1, Type::F), Src::Reg(v(0, Type::F))),
                Inst::control(Op::Hw(Opcode::Endif), 8),
                Inst::control(Op::Hw(Opcode::While), 8),
            ],
        );
        p.vreg_sizes[1] = 2;
        assert_eq!(spill_costs(&p), vec![1.0 + 10.0 + 5.0, 10.0 + 5.0]);
    }

    #[test]
    fn writes_in_divergent_flow_are_filled_first() {
        let mut p = program(
            1,
            vec![
                mov(v(0, Type::F), Src::imm_f(1.0)),
                Inst::control(Op::Hw(Opcode::If), 8),
                mov(v(0, Type::F), Src::imm_f(2.0)),
                Inst::control(Op::Hw(Opcode::Endif), 8),
            ],
        );
        let done = spill(&mut p, Gen::Gen9, &[(VReg(0), 64)]).unwrap();
        assert_eq!((done.spills, done.fills), (2, 1));
        let ops: Vec<String> = p.insts.iter().map(|i| i.to_string()).collect();
        // The first write is whole: no fill. The one under the `if` fills first.
        assert!(ops[0].starts_with("mov(8) vgrf1+32"), "{ops:?}");
        assert!(ops[1].starts_with("mov(8) vgrf1+0") && ops[1].ends_with("WE_all"));
        assert!(ops[2].starts_with("send(8) arf0x0") && ops[2].contains("mlen 2 rlen 0"));
        assert!(ops[4].starts_with("send(8) vgrf2+32") && ops[4].contains("mlen 1 rlen 1"));
        assert!(ops[5].starts_with("mov(8) vgrf2+32"));
    }
}
