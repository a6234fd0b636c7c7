//! Pre-RA list scheduling of the Gen IR: each basic block's instructions are reordered to hide
//! result latencies.
//!
//! What: [`schedule`] builds, for every run of instructions between control-flow instructions
//! (and marks, a barrier's `wait`, and an end-of-thread send), the dependence graph over the registers, flags and
//! memory they touch:
//! - read after write, with the writer's latency from the performance model (`ld` for GRFs,
//!   `lf` for flags);
//! - write after write, with the first writer's latency (the second may not land first);
//! - write after read, with no latency, except after a send, which reads its payload `ls`
//!   cycles after it issues;
//! - every send after the previous send: messages keep their order, so memory does too.
//!
//! It then issues the block again in the model's in-order pipeline, one instruction at a time:
//! of the instructions whose predecessors are issued, the one with the longest latency-weighted
//! path to the block's end among those that can issue without a stall, else the one that stalls
//! least; ties keep the original order. This is the classic critical-path list scheduler, and
//! the performance model ([`crate::perf`]) is its cost.
//!
//! Why: lowering emits each value right before its first use, so a chain of dependent ALU
//! instructions waits out every latency (8 cycles on Gen8+, 2 to issue); interleaving
//! independent chains hides it.
//!
//! Invariants: a block keeps its instructions, and every pair that touches a common register
//! byte range (one of them writing it), a common flag subregister (one of them writing it), or
//! that are both sends, keeps its order. Dependences are per GRF, which is conservative for
//! values that share a GRF.
//!
//! [`schedule_for_pressure`] orders each block for the fewest live registers instead: bottom-up,
//! of the instructions whose successors are placed, the one that frees the most GRFs above it
//! (its last write of a register the placed instructions read, less the registers it begins to
//! read), ties by original order from the end. A register written piecewise (a message payload
//! whose parts the shader writes early) then lives from its parts' writes, moved down to its
//! send, rather than from the first of them.
//!
//! Options: none. Scheduling lengthens live ranges; the caller allocates the scheduled program
//! and falls back to the pressure order when it does not fit, as Mesa tries its pre-RA modes in
//! turn. A block of more than [`MAX_PRESSURE_BLOCK`] instructions keeps its order there.

use crate::isa::{ARF_FLAG, ARF_NULL, Gen, Opcode};
use crate::lir::{Base, Inst, Lir, Op, Operand};
use crate::perf::{Timing, UNITS, lir_timing};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Reorders every basic block of `program` for `hw`'s latencies.
pub fn schedule(program: &mut Lir, hw: Gen) {
    reorder_blocks(program, |block, _| schedule_block(block, hw));
}

/// Replaces each basic block of `program` (the runs between [`is_barrier`] instructions) by
/// `order` of it (given the registers' sizes).
fn reorder_blocks(program: &mut Lir, order: impl Fn(&[Inst], &[u32]) -> Vec<Inst>) {
    let mut start = 0;
    let mut out = Vec::with_capacity(program.insts.len());
    let insts = std::mem::take(&mut program.insts);
    for (i, inst) in insts.iter().enumerate() {
        if is_barrier(inst) {
            out.extend(order(&insts[start..i], &program.vreg_sizes));
            out.push(inst.clone());
            start = i + 1;
        }
    }
    out.extend(order(&insts[start..], &program.vreg_sizes));
    program.insts = out;
}

/// Whether an instruction ends a basic block: control flow, a mark, a call or return, the end
/// of the thread, or a `wait` (the threads' meeting point at a barrier: no access moves across
/// it).
fn is_barrier(inst: &Inst) -> bool {
    match inst.op {
        Op::Hw(op) => {
            op.is_control_flow() || op == Opcode::Wait || inst.send.is_some_and(|m| m.eot())
        }
        Op::Do | Op::HaltTarget | Op::Call(_) | Op::Return => true,
    }
}

/// A thing instructions read and write, at the granularity dependences are tracked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Resource {
    /// One GRF of a register base.
    Grf(Base, u32),
    /// A flag subregister (16 channels).
    Flag(u8),
    /// An architecture register other than the flags and null (the accumulator, the address).
    Arf(u8),
    /// What messages read and write.
    Memory,
}

/// The GRFs (or flag subregisters) an operand covers over `bytes` bytes.
fn operand_resources(op: &Operand, bytes: u32, out: &mut Vec<Resource>) {
    match op.base {
        Base::Arf(ARF_NULL) => {}
        Base::Arf(arf) if arf & 0xF0 == ARF_FLAG => {
            // f0 and f1 are 32 bits each: two 16-channel subregisters of 2 bytes.
            let first = (arf & 0xF) as u32 * 2 + op.offset / 2;
            let last = first + bytes.max(1).div_ceil(2) - 1;
            out.extend((first..=last.min(3)).map(|f| Resource::Flag(f as u8)));
        }
        Base::Arf(arf) => out.push(Resource::Arf(arf)),
        base => {
            let first = op.offset / 32;
            let last = (op.offset + bytes.max(1) - 1) / 32;
            out.extend((first..=last).map(|g| Resource::Grf(base, g)));
        }
    }
}

/// The flag subregisters an instruction's predicate or conditional modifier uses.
fn flag_resources(inst: &Inst, out: &mut Vec<Resource>) {
    let first = inst.flag as u32 + inst.group as u32 / 16;
    let last = first + (inst.group as u32 % 16 + inst.exec_size as u32).div_ceil(16) - 1;
    out.extend((first..=last.min(3)).map(|f| Resource::Flag(f as u8)));
}

fn reads(inst: &Inst) -> Vec<Resource> {
    let mut out = Vec::new();
    for (i, src) in inst.srcs.iter().enumerate() {
        if let Some(op) = src.reg() {
            operand_resources(op, inst.src_span(i), &mut out);
        }
    }
    if inst.predicate.is_some() {
        flag_resources(inst, &mut out);
    }
    implicit_resources(inst, &mut out);
    out
}

fn writes(inst: &Inst) -> Vec<Resource> {
    let mut out = Vec::new();
    if let Some(dst) = &inst.dst {
        operand_resources(dst, inst.dst_span(), &mut out);
    }
    if inst.cond.is_some() && inst.opcode() != Some(Opcode::Sel) {
        flag_resources(inst, &mut out);
    }
    implicit_resources(inst, &mut out);
    out
}

/// What an instruction both reads and writes without naming it: the accumulator of `mac` and
/// `mach`, and memory for a send.
fn implicit_resources(inst: &Inst, out: &mut Vec<Resource>) {
    if matches!(inst.opcode(), Some(Opcode::Mac | Opcode::Mach)) {
        out.push(Resource::Arf(crate::isa::ARF_ACCUMULATOR));
    }
    if inst.send.is_some() {
        out.push(Resource::Memory);
    }
}

/// A dependence: `to` issues at least `latency` cycles after `from` has.
struct Edge {
    to: usize,
    latency: i64,
}

/// The latency a reader or later writer of `resource` waits after its writer issued.
fn result_latency(timing: &Timing, resource: Resource) -> i64 {
    match resource {
        Resource::Grf(..) => timing.ld,
        Resource::Flag(_) => timing.lf,
        Resource::Arf(_) => timing.la,
        Resource::Memory => 0,
    }
}

/// The dependence graph of a block: each instruction's successors.
fn dependences(block: &[Inst], timings: &[Timing]) -> Vec<Vec<Edge>> {
    #[derive(Default)]
    struct Access {
        writer: Option<usize>,
        readers: Vec<usize>,
    }
    let mut access: HashMap<Resource, Access> = HashMap::new();
    let mut succs: Vec<Vec<Edge>> = (0..block.len()).map(|_| Vec::new()).collect();
    let mut edge = |from: usize, to: usize, latency: i64| {
        if from != to {
            succs[from].push(Edge { to, latency });
        }
    };
    for (i, inst) in block.iter().enumerate() {
        for r in reads(inst) {
            let a = access.entry(r).or_default();
            if let Some(w) = a.writer {
                edge(w, i, result_latency(&timings[w], r));
            }
            a.readers.push(i);
        }
        for r in writes(inst) {
            let a = access.entry(r).or_default();
            if let Some(w) = a.writer {
                edge(w, i, result_latency(&timings[w], r));
            }
            for &reader in &a.readers {
                let payload_read = if block[reader].send.is_some() {
                    timings[reader].ls
                } else {
                    0
                };
                edge(reader, i, payload_read);
            }
            a.writer = Some(i);
            a.readers.clear();
        }
    }
    succs
}

/// The longest block [`schedule_for_pressure`] reorders (each step scans the ready
/// instructions).
pub const MAX_PRESSURE_BLOCK: usize = 4096;

/// Reorders every basic block of `program` for the fewest live registers (see the module
/// documentation).
pub fn schedule_for_pressure(program: &mut Lir, hw: Gen) {
    reorder_blocks(program, |block, sizes| pressure_block(block, sizes, hw));
}

/// The virtual registers an operand list names.
fn vregs<'a>(operands: impl Iterator<Item = &'a Operand>) -> Vec<usize> {
    let mut out: Vec<usize> = operands
        .filter_map(|op| match op.base {
            Base::Vgrf(v) => Some(v.0 as usize),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Each instruction's timing on `hw`, and the block's dependence graph with those latencies.
fn graph(block: &[Inst], hw: Gen) -> (Vec<Timing>, Vec<Vec<Edge>>) {
    let timings: Vec<Timing> = block
        .iter()
        .map(|inst| lir_timing(inst, hw).unwrap_or_default())
        .collect();
    let succs = dependences(block, &timings);
    (timings, succs)
}

/// One block in its pressure order, placed bottom-up.
fn pressure_block(block: &[Inst], sizes: &[u32], hw: Gen) -> Vec<Inst> {
    if block.len() < 2 || block.len() > MAX_PRESSURE_BLOCK {
        return block.to_vec();
    }
    let (_, succs) = graph(block, hw);
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); block.len()];
    for (from, edges) in succs.iter().enumerate() {
        for e in edges {
            preds[e.to].push(from);
        }
    }
    let read: Vec<Vec<usize>> = (block.iter())
        .map(|inst| vregs(inst.srcs.iter().filter_map(|s| s.reg())))
        .collect();
    let written: Vec<Vec<usize>> = block.iter().map(|inst| vregs(inst.dst.iter())).collect();
    // Per register: the block's writes of it not placed yet, and whether it is live below
    // the instructions placed so far.
    let mut writes_left = vec![0u32; sizes.len()];
    for w in written.iter().flatten() {
        writes_left[*w] += 1;
    }
    let mut live = vec![false; sizes.len()];
    let size = |v: usize| sizes.get(v).copied().unwrap_or(1) as i64;
    let mut successors_left: Vec<usize> = succs.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..block.len()).filter(|&i| succs[i].is_empty()).collect();
    let mut order = Vec::with_capacity(block.len());
    while !ready.is_empty() {
        let gain = |i: usize| {
            let freed: i64 = (written[i].iter())
                .filter(|&&w| live[w] && writes_left[w] == 1 && !read[i].contains(&w))
                .map(|&w| size(w))
                .sum();
            let begun: i64 = read[i]
                .iter()
                .filter(|&&r| !live[r])
                .map(|&r| size(r))
                .sum();
            freed - begun
        };
        let (at, &pick) = (ready.iter().enumerate())
            .max_by_key(|&(_, &i)| (gain(i), i))
            .expect("not empty");
        ready.swap_remove(at);
        for &w in &written[pick] {
            writes_left[w] -= 1;
            if writes_left[w] == 0 {
                live[w] = false;
            }
        }
        for &r in &read[pick] {
            live[r] = true;
        }
        order.push(pick);
        for &p in &preds[pick] {
            successors_left[p] -= 1;
            if successors_left[p] == 0 {
                ready.push(p);
            }
        }
    }
    order.reverse();
    order.into_iter().map(|i| block[i].clone()).collect()
}

/// The ready instructions of one unit. An instruction issues at the latest of the clock, its
/// unit's next free cycle and its `earliest` cycle; the first two are the same for the whole
/// queue and never decrease, so the queue keeps apart the instructions whose `earliest` has
/// passed (their start is the same: the best has the longest path) from the others (the best
/// has the least `earliest`, then the longest path).
#[derive(Default)]
struct ReadyQueue {
    /// By longest path, then original order.
    now: BinaryHeap<Reverse<(i64, usize)>>,
    /// By earliest cycle, longest path, original order.
    later: BinaryHeap<Reverse<(i64, i64, usize)>>,
}

impl ReadyQueue {
    fn push(&mut self, inst: usize, earliest: i64, critical: i64) {
        self.later.push(Reverse((earliest, -critical, inst)));
    }

    /// Moves the instructions whose `earliest` is at most `free` (the clock or the unit's free
    /// cycle, whichever is later) to `now`.
    fn settle(&mut self, free: i64) {
        while let Some(&Reverse((earliest, critical, inst))) = self.later.peek()
            && earliest <= free
        {
            self.later.pop();
            self.now.push(Reverse((critical, inst)));
        }
    }

    /// The best instruction to issue once the clock and the unit allow from `free`: its start
    /// cycle, negated longest path and index (the scheduler's key, as the stall is the start
    /// less the clock).
    fn best(&mut self, free: i64) -> Option<(i64, i64, usize)> {
        self.settle(free);
        match self.now.peek() {
            Some(&Reverse((critical, inst))) => Some((free, critical, inst)),
            None => self
                .later
                .peek()
                .map(|&Reverse((earliest, critical, inst))| (earliest, critical, inst)),
        }
    }

    /// Removes the instruction [`ReadyQueue::best`] gave for `free`.
    fn pop(&mut self, free: i64) {
        self.settle(free);
        if self.now.pop().is_none() {
            self.later.pop();
        }
    }
}

/// The block's instructions in their scheduled order.
fn schedule_block(block: &[Inst], hw: Gen) -> Vec<Inst> {
    if block.len() < 2 {
        return block.to_vec();
    }
    let (timings, succs) = graph(block, hw);
    // The longest latency-weighted path from each instruction to the block's end (successors
    // come later in the block, so one backward sweep computes it).
    let mut critical = vec![0i64; block.len()];
    for i in (0..block.len()).rev() {
        let own = timings[i].df;
        critical[i] = succs[i]
            .iter()
            .map(|e| e.latency.max(own) + critical[e.to])
            .max()
            .unwrap_or(own);
    }
    let mut waiting: Vec<usize> = vec![0; block.len()];
    for e in succs.iter().flatten() {
        waiting[e.to] += 1;
    }
    // The cycle from which each instruction's dependences allow it to issue.
    let mut earliest = vec![0i64; block.len()];
    // The ready instructions by the unit they run on (the last queue: none).
    let mut ready: Vec<ReadyQueue> = (0..=UNITS).map(|_| ReadyQueue::default()).collect();
    let queue_of = |i: usize| timings[i].unit.map_or(UNITS, |u| u as usize);
    for i in (0..block.len()).filter(|&i| waiting[i] == 0) {
        ready[queue_of(i)].push(i, 0, critical[i]);
    }
    let mut unit_free = [0i64; UNITS];
    let mut clock = 0i64;
    let mut order = Vec::with_capacity(block.len());
    // Each queue's best by (stall, longest path, original order); the least of those issues.
    while let Some((issue, queue)) = (0..=UNITS)
        .filter_map(|q| {
            let free = unit_free.get(q).copied().unwrap_or(0);
            ready[q].best(clock.max(free)).map(|best| (best, q))
        })
        .min()
    {
        let (start, _, pick) = issue;
        ready[queue].pop(clock.max(unit_free.get(queue).copied().unwrap_or(0)));
        let t = &timings[pick];
        clock = start + t.df;
        if let Some(unit) = t.unit {
            debug_assert!(clock + t.db >= unit_free[unit as usize]);
            unit_free[unit as usize] = clock + t.db;
        }
        for e in &succs[pick] {
            earliest[e.to] = earliest[e.to].max(clock + e.latency);
            waiting[e.to] -= 1;
            if waiting[e.to] == 0 {
                ready[queue_of(e.to)].push(e.to, earliest[e.to], critical[e.to]);
            }
        }
        order.push(pick);
    }
    debug_assert_eq!(order.len(), block.len(), "the dependence graph is acyclic");
    order.into_iter().map(|i| block[i].clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Type;
    use crate::lir::{Src, VReg};

    fn program(insts: Vec<Inst>) -> Lir {
        Lir {
            dispatch_width: 8,
            insts,
            vreg_sizes: vec![1; 16],
            payload_regs: 2,
            kept_regs: 0,
            grf_limit: crate::regalloc::GRFS,
            scratch_bytes: 0,
        }
    }

    fn v(n: u32) -> Operand {
        Operand::vector(VReg(n), 0, Type::F)
    }

    fn add(dst: u32, a: u32, b: u32) -> Inst {
        Inst::new(
            Opcode::Add,
            8,
            Some(v(dst)),
            vec![Src::Reg(v(a)), Src::Reg(v(b))],
        )
    }

    fn cycles(program: &Lir) -> u64 {
        let mut program = program.clone();
        let alloc = crate::regalloc::allocate(&mut program, Gen::Gen9, false).expect("fits");
        crate::perf::estimate(&crate::emit::emit(&program, &alloc), Gen::Gen9, 8).cycles
    }

    /// Registers written early and read one after the other at the end (as message payloads
    /// are) are written just before their readers in the pressure order.
    #[test]
    fn the_pressure_order_moves_writes_down_to_their_readers() {
        let write = |n: u32| Inst::new(Opcode::Mov, 8, Some(v(n)), vec![Src::imm_f(n as f32)]);
        // v0..v3 written first; v4 = v0 + v0, then v(5 + k) = v(k + 1) + v(4 + k).
        let mut insts: Vec<Inst> = (0..4).map(write).collect();
        insts.push(add(4, 0, 0));
        insts.extend((0..3).map(|k| add(5 + k, k + 1, 4 + k)));
        let mut p = program(insts);
        p.vreg_sizes[..4].fill(9);
        schedule_for_pressure(&mut p, Gen::Gen9);
        let dsts: Vec<u32> = p
            .insts
            .iter()
            .map(|inst| match inst.dst.map(|d| d.base) {
                Some(Base::Vgrf(VReg(n))) => n,
                _ => u32::MAX,
            })
            .collect();
        assert_eq!(dsts, [0, 4, 1, 5, 2, 6, 3, 7]);
    }

    /// Two dependent chains, written one after the other, are interleaved.
    #[test]
    fn independent_chains_interleave() {
        let mut p = program(vec![
            add(2, 0, 0),
            add(3, 2, 2),
            add(4, 1, 1),
            add(5, 4, 4),
            add(6, 3, 5),
        ]);
        let before = cycles(&p);
        schedule(&mut p, Gen::Gen9);
        let dsts: Vec<u32> = p
            .insts
            .iter()
            .map(|i| i.dst.unwrap().vreg().unwrap().0)
            .collect();
        assert_eq!(dsts, [2, 4, 3, 5, 6]);
        assert!(cycles(&p) < before, "{} < {before}", cycles(&p));
    }

    /// A later write of a register a read still needs stays after the read; so does a write of
    /// the same register, and the reader of a flag stays after the flag's writer.
    #[test]
    fn dependences_keep_their_order() {
        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Operand::null(Type::F)),
            vec![Src::Reg(v(0)), Src::imm_f(0.0)],
        );
        cmp.cond = Some(crate::isa::CondMod::G);
        let mut sel = add(4, 1, 1);
        sel.predicate = Some(crate::encoding::Predicate {
            control: 1,
            inverse: false,
        });
        let insts = vec![
            add(2, 0, 0),
            add(3, 2, 2),
            add(2, 1, 1),
            cmp,
            add(5, 3, 2),
            sel,
        ];
        let mut p = program(insts.clone());
        schedule(&mut p, Gen::Gen9);
        let position = |inst: &Inst| p.insts.iter().position(|i| i == inst).unwrap();
        assert!(
            position(&insts[1]) < position(&insts[2]),
            "read before rewrite"
        );
        assert!(position(&insts[0]) < position(&insts[2]), "write order");
        assert!(
            position(&insts[2]) < position(&insts[4]),
            "read after write"
        );
        assert!(
            position(&insts[3]) < position(&insts[5]),
            "flag read after write"
        );
    }

    /// Instructions never cross control flow.
    #[test]
    fn blocks_end_at_control_flow() {
        let insts = vec![
            add(2, 0, 0),
            add(3, 2, 2),
            Inst::control(Op::Hw(Opcode::Endif), 8),
            add(4, 1, 1),
        ];
        let mut p = program(insts.clone());
        schedule(&mut p, Gen::Gen9);
        assert_eq!(p.insts, insts);
    }
}
