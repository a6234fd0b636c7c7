//! Register allocation: each virtual GRF run of the Gen IR gets a run of hardware GRFs.
//!
//! What: [`allocate`] computes liveness per GRF of every virtual register (a GRF is defined by
//! an unpredicated write that covers it whole, as Mesa's `fs_live_variables` does) by backward
//! dataflow over the basic blocks of the structured program, turns it into one live interval
//! of instruction indices per virtual register, and assigns GRFs by linear scan in order of
//! interval start, first fit over runs of free GRFs above the payload. The payload of the
//! end-of-thread send goes to the top of the file (g128 − its size), as the hardware wants
//! EOT payloads high.
//!
//! Why: intervals over the linear program are conservative under SIMD control flow: a value a
//! loop carries or that one arm of an `if` writes while the other reads another stays live
//! across the whole construct, so masked writes never clobber a value other channels still
//! need. Linear scan over intervals is optimal for registers of one GRF and near-optimal for
//! runs.
//!
//! Invariants: two virtual registers whose intervals overlap never share a GRF; an interval
//! covers every instruction reading or writing its register. A register read in the same
//! instruction that writes another is live there, so sources and destinations never overlap.
//!
//! Options: none; when the registers do not fit, an error says how many GRFs were needed
//! (spilling is not implemented yet).

use crate::isa::Opcode;
use crate::lir::{Op, Program, Src};
use std::collections::BTreeMap;

/// GRFs in the file.
pub const GRFS: u32 = 128;

/// Where each virtual register went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// First GRF of each virtual register, by number; `None` for registers nothing uses.
    pub first_grf: Vec<Option<u8>>,
    /// GRFs in use: the payload and every allocated run (one past the highest used).
    pub grfs_used: u32,
}

/// Why allocation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "register allocation failed: {needed} GRFs are live at instruction {at}, more than the {available} free (spilling is not implemented yet)"
)]
pub struct AllocError {
    pub at: usize,
    pub needed: u32,
    pub available: u32,
}

/// A basic block: instruction range and successors (block indices).
struct Block {
    start: usize,
    end: usize,
    succs: Vec<usize>,
}

/// Splits the program into basic blocks with their structured control-flow edges.
fn blocks(program: &Program) -> Vec<Block> {
    let insts = &program.insts;
    let ends_block = |i: usize| {
        matches!(
            insts[i].op,
            Op::Hw(
                Opcode::If
                    | Opcode::Else
                    | Opcode::While
                    | Opcode::Break
                    | Opcode::Cont
                    | Opcode::Halt
            )
        )
    };
    let starts_block =
        |i: usize| matches!(insts[i].op, Op::Hw(Opcode::Endif) | Op::Do | Op::HaltTarget);
    // Block boundaries: after every block-ending instruction, before every block-starting one.
    let mut starts = vec![0usize];
    for i in 0..insts.len() {
        if starts_block(i) && *starts.last().expect("nonempty") != i {
            starts.push(i);
        }
        if ends_block(i) && i + 1 < insts.len() {
            starts.push(i + 1);
        }
    }
    starts.dedup();
    let block_of = |i: usize| starts.partition_point(|&s| s <= i) - 1;
    let nesting = program.nesting();
    let n = starts.len();
    (0..n)
        .map(|b| {
            let start = starts[b];
            let end = if b + 1 < n {
                starts[b + 1]
            } else {
                insts.len()
            };
            let last = end.saturating_sub(1).max(start);
            let mut succs = Vec::new();
            if b + 1 < n {
                succs.push(b + 1);
            }
            if last < insts.len() {
                let target = match insts[last].op {
                    // Past the `else` when there is one, else to the `endif`.
                    Op::Hw(Opcode::If) => nesting.else_of[last]
                        .map(|e| e + 1)
                        .or(nesting.endif_of[last]),
                    Op::Hw(Opcode::Else) => nesting.endif_of[last],
                    Op::Hw(Opcode::While) => nesting.do_of[last],
                    Op::Hw(Opcode::Break | Opcode::Cont) => nesting.while_of[last],
                    Op::Hw(Opcode::Halt) => nesting.halt_target,
                    _ => None,
                };
                if let Some(t) = target {
                    succs.push(block_of(t.min(insts.len() - 1)));
                }
            }
            succs.sort_unstable();
            succs.dedup();
            Block { start, end, succs }
        })
        .collect()
}

/// Live intervals `[first, last]` (instruction indices) of each virtual register.
pub fn intervals(program: &Program) -> Vec<Option<(usize, usize)>> {
    // One liveness variable per GRF of each virtual register.
    let mut var_base = Vec::with_capacity(program.vreg_sizes.len());
    let mut vars = 0usize;
    for &size in &program.vreg_sizes {
        var_base.push(vars);
        vars += size as usize;
    }
    let grfs_of = |offset: u32, span: u32| {
        let first = offset / 32;
        let last = (offset + span.max(1) - 1) / 32;
        first..=last
    };
    let blocks = blocks(program);
    let words = vars.div_ceil(64);
    let mut uses = vec![vec![0u64; words]; blocks.len()];
    let mut defs = vec![vec![0u64; words]; blocks.len()];
    let set = |bits: &mut Vec<u64>, v: usize| bits[v / 64] |= 1 << (v % 64);
    let get = |bits: &Vec<u64>, v: usize| bits[v / 64] >> (v % 64) & 1 != 0;
    for (b, block) in blocks.iter().enumerate() {
        for inst in &program.insts[block.start..block.end] {
            for (i, src) in inst.srcs.iter().enumerate() {
                let Src::Reg(r) = src else { continue };
                let Some(v) = r.vreg() else { continue };
                for g in grfs_of(r.offset, inst.src_span(i)) {
                    let var = var_base[v.0 as usize] + g as usize;
                    if !get(&defs[b], var) {
                        set(&mut uses[b], var);
                    }
                }
            }
            if let Some(d) = &inst.dst
                && let Some(v) = d.vreg()
            {
                let span = inst.dst_span();
                let whole = inst.is_full_write();
                for g in grfs_of(d.offset, span) {
                    let covers = d.offset <= g * 32 && d.offset + span >= g * 32 + 32;
                    if whole && covers {
                        set(&mut defs[b], var_base[v.0 as usize] + g as usize);
                    }
                }
            }
        }
    }
    // Backward dataflow to a fixed point.
    let mut live_in = vec![vec![0u64; words]; blocks.len()];
    let mut live_out = vec![vec![0u64; words]; blocks.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..blocks.len()).rev() {
            let mut out = vec![0u64; words];
            for &s in &blocks[b].succs {
                for (o, i) in out.iter_mut().zip(&live_in[s]) {
                    *o |= i;
                }
            }
            let inn: Vec<u64> = (0..words)
                .map(|w| uses[b][w] | (out[w] & !defs[b][w]))
                .collect();
            if inn != live_in[b] || out != live_out[b] {
                live_in[b] = inn;
                live_out[b] = out;
                changed = true;
            }
        }
    }
    let mut result: Vec<Option<(usize, usize)>> = vec![None; program.vreg_sizes.len()];
    let mut extend = |v: usize, at: usize| {
        let entry = &mut result[v];
        *entry = Some(match *entry {
            None => (at, at),
            Some((a, b)) => (a.min(at), b.max(at)),
        });
    };
    for (i, inst) in program.insts.iter().enumerate() {
        let regs = inst
            .srcs
            .iter()
            .filter_map(|s| s.reg())
            .chain(inst.dst.as_ref());
        for r in regs {
            if let Some(v) = r.vreg() {
                extend(v.0 as usize, i);
            }
        }
    }
    for (b, block) in blocks.iter().enumerate() {
        for (v, &base) in var_base.iter().enumerate() {
            for g in 0..program.vreg_sizes[v] as usize {
                if get(&live_in[b], base + g) {
                    extend(v, block.start);
                }
                if get(&live_out[b], base + g) {
                    extend(v, block.end.saturating_sub(1).max(block.start));
                }
            }
        }
    }
    result
}

/// Assigns GRFs to every virtual register of `program`.
pub fn allocate(program: &Program) -> Result<Allocation, AllocError> {
    let intervals = intervals(program);
    let payload = program.payload_regs;
    // The end-of-thread payload goes to the top.
    let mut fixed: BTreeMap<usize, u32> = BTreeMap::new();
    for inst in &program.insts {
        if inst.send.is_some_and(|m| m.eot)
            && let Some(v) = inst.srcs[0].reg().and_then(|r| r.vreg())
        {
            let size = program.vreg_sizes[v.0 as usize];
            fixed.insert(v.0 as usize, GRFS - size);
        }
    }
    let mut order: Vec<usize> = (0..intervals.len())
        .filter(|&v| intervals[v].is_some())
        .collect();
    order.sort_by_key(|&v| (intervals[v].map(|i| i.0), v));
    let mut first_grf = vec![None; intervals.len()];
    // GRF → the instruction index until which it is taken.
    let mut busy_until: Vec<Option<usize>> = vec![None; GRFS as usize];
    for busy in &mut busy_until[..payload as usize] {
        *busy = Some(usize::MAX);
    }
    let mut grfs_used = payload;
    for &v in &order {
        let (start, end) = intervals[v].expect("filtered");
        let size = program.vreg_sizes[v];
        let free = |g: u32, busy: &Vec<Option<usize>>| {
            (g..g + size).all(|k| busy[k as usize].is_none_or(|until| until < start))
        };
        let first = match fixed.get(&v) {
            Some(&g) if free(g, &busy_until) => Some(g),
            Some(_) => None,
            None => (payload..=GRFS.saturating_sub(size)).find(|&g| {
                free(g, &busy_until)
                    // Leave the EOT payload's GRFs to it.
                    && fixed.iter().all(|(&f, &at)| {
                        f == v
                            || g + size <= at
                            || g >= at + program.vreg_sizes[f]
                            || intervals[f].is_none_or(|(s, _)| s > end)
                    })
            }),
        };
        let Some(first) = first else {
            let needed = (0..GRFS as usize)
                .filter(|&g| busy_until[g].is_some_and(|u| u >= start))
                .count() as u32
                + size;
            return Err(AllocError {
                at: start,
                needed,
                available: GRFS - payload,
            });
        };
        for k in first..first + size {
            busy_until[k as usize] = Some(end);
        }
        first_grf[v] = Some(first as u8);
        grfs_used = grfs_used.max(first + size);
    }
    Ok(Allocation {
        first_grf,
        grfs_used,
    })
}
