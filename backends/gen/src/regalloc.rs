//! Register allocation by graph colouring: each virtual GRF run of the Gen IR gets a run of
//! hardware GRFs, and under pressure some live in scratch memory instead ([`crate::spill`]).
//!
//! What: [`allocate`] computes liveness per GRF of every virtual register (a GRF is defined by
//! an unpredicated write that covers it whole, as Mesa's `fs_live_variables` does) over the
//! basic blocks of the structured program (the least solution of the backward dataflow
//! equations, found by a search back from each GRF's uses that visits only the blocks where it
//! is live; a GRF nothing writes, an undefined part of a message payload, holds no value and is
//! live only where it is read), and turns it into one live interval of instruction indices per
//! virtual register;
//! two registers interfere when their intervals overlap. The interference graph is an interval
//! graph, so it is never built: a sweep over the intervals in order of start colours it and
//! counts each register's neighbours. It is chordal: colouring it
//! first fit in a perfect elimination order (by interval start, where the neighbours coloured
//! before a register are all live at once with it) needs no more GRFs than are live at once for
//! one-GRF registers, where optimistic Chaitin–Briggs colouring can fail near the limit. Runs of
//! several GRFs (vectors at SIMD16, send payloads) take the first run free of their coloured
//! neighbours. The payload is pre-coloured from g0, and the end-of-thread payload at the top of
//! the file (g128 − its size), as the hardware wants EOT payloads high.
//!
//! When a register finds no place, and spilling is allowed, of it and the registers live where
//! it starts the one with the best ratio of benefit (the places its neighbours lose to it: a
//! neighbour of `m` GRFs blocks at most `n + m − 1` places of a run of `n`, after Runeson and
//! Nyström) to Mesa's spill cost (GRFs read and written, ×10 per loop around them, ×0.5 per
//! `if`, divided by the logarithm of the live interval's length) leaves the graph, until it
//! fits; the colouring goes on, the registers that left go to scratch together, and allocation
//! starts over on the rewritten program.
//!
//! Why: intervals over the linear program are conservative under SIMD control flow: a value a
//! loop carries or that one arm of an `if` writes while the other reads another stays live
//! across the whole construct, so masked writes never clobber a value other channels still
//! need.
//!
//! Invariants: two virtual registers whose intervals overlap never share a GRF; an interval
//! covers every instruction reading or writing its register. A register read in the same
//! instruction that writes another is live there, so sources and destinations never overlap.
//! Registers spilling creates are never spilled.
//!
//! Options: whether to spill; without it, an error says how many GRFs were live where the
//! file ran out.

use crate::encoding::EncodingError;
use crate::isa::{Gen, MAX_SCRATCH_BYTES, Opcode};
use crate::lir::{Base, Lir, Op, Src, VReg};
use crate::spill::{spill, spill_costs};
use shrew_engine::liveness::{Live, LiveRangeSearch};

/// GRFs in the file.
pub const GRFS: u32 = 128;

/// GRFs at the start of the payload that stay allocated to it (see [`payload_last_reads`]).
const PAYLOAD_HEADERS: usize = 3;

/// Where each virtual register went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// First GRF of each virtual register, by number; `None` for registers nothing uses.
    pub first_grf: Vec<Option<u8>>,
    /// GRFs in use: the payload and every allocated run (one past the highest used).
    pub grfs_used: u32,
    /// Scratch block writes and reads spilling added.
    pub spills: u32,
    pub fills: u32,
    /// Bytes of scratch memory each thread needs.
    pub scratch_bytes: u32,
}

/// Why allocation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    #[error(
        "register allocation failed: {needed} GRFs are live at instruction {at}, more than the {available} free"
    )]
    OutOfRegisters {
        at: usize,
        needed: u32,
        available: u32,
    },
    #[error(
        "the shader needs {0} bytes of scratch memory per thread (its temporaries and spills), \
         more than the {MAX_SCRATCH_BYTES} the hardware gives a thread"
    )]
    OutOfScratch(u32),
    /// A spill's message cannot be encoded.
    #[error("register allocation failed: a scratch message: {0}")]
    ScratchMessage(EncodingError),
}

/// A basic block: instruction range and successors (block indices).
struct Block {
    start: usize,
    end: usize,
    succs: Vec<usize>,
}

/// Splits the program into basic blocks with their structured control-flow edges.
fn blocks(program: &Lir) -> Vec<Block> {
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
pub fn intervals(program: &Lir) -> Vec<Option<(usize, usize)>> {
    // One liveness variable per GRF of each virtual register.
    let mut var_base = Vec::with_capacity(program.vreg_sizes.len());
    let mut vreg_of_var = Vec::new();
    for (v, &size) in program.vreg_sizes.iter().enumerate() {
        var_base.push(vreg_of_var.len());
        vreg_of_var.extend(std::iter::repeat_n(v, size as usize));
    }
    let vars = vreg_of_var.len();
    let blocks = blocks(program);
    // Per variable, the blocks that read it before writing it whole (upward-exposed uses) and
    // the blocks that write it whole, each in block order.
    let mut exposed = Vec::new();
    let mut defined = Vec::new();
    // The last block that wrote each variable whole, and the last that read it exposed.
    let mut defined_in = vec![usize::MAX; vars];
    let mut exposed_in = vec![usize::MAX; vars];
    // Whether anything writes the variable, even in part.
    let mut written = vec![false; vars];
    for (b, block) in blocks.iter().enumerate() {
        for inst in &program.insts[block.start..block.end] {
            for (i, src) in inst.srcs.iter().enumerate() {
                let Src::Reg(r) = src else { continue };
                let Some(v) = r.vreg() else { continue };
                for g in r.grfs(inst.src_span(i)) {
                    let var = var_base[v.0 as usize] + g as usize;
                    if defined_in[var] != b && exposed_in[var] != b {
                        exposed_in[var] = b;
                        exposed.push((var, b));
                    }
                }
            }
            if let Some(d) = &inst.dst
                && let Some(v) = d.vreg()
            {
                let span = inst.dst_span();
                let whole = inst.is_full_write();
                for g in d.grfs(span) {
                    let covers = d.offset <= g * 32 && d.offset + span >= g * 32 + 32;
                    let var = var_base[v.0 as usize] + g as usize;
                    written[var] = true;
                    if whole && covers && defined_in[var] != b {
                        defined_in[var] = b;
                        defined.push((var, b));
                    }
                }
            }
        }
    }
    let exposed = by_variable(vars, &exposed);
    let defined = by_variable(vars, &defined);
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
    // Each variable lives from the start of each block it is live into to the end of each block
    // it is live out of.
    let mut search = LiveRangeSearch::new(blocks.len(), |b| blocks[b].succs.iter().copied());
    for (var, &v) in vreg_of_var.iter().enumerate() {
        // A GRF nothing writes holds no value (the parts of a message payload the shader
        // leaves undefined): its reads keep it live nowhere else.
        if !written[var] {
            continue;
        }
        let (exposed, defined) = (exposed.of(var), defined.of(var));
        search.search(exposed.iter().copied(), defined.iter().copied(), |live| {
            let at = match live {
                Live::In(b) => blocks[b].start,
                Live::Out(b) => blocks[b].end.saturating_sub(1).max(blocks[b].start),
            };
            extend(v, at);
        });
    }
    result
}

/// Pairs `(variable, block)` grouped by variable, in their order within each group.
struct ByVariable {
    /// Where each variable's blocks start in `blocks` (one more entry: the end).
    start: Vec<usize>,
    blocks: Vec<usize>,
}

impl ByVariable {
    fn of(&self, var: usize) -> &[usize] {
        &self.blocks[self.start[var]..self.start[var + 1]]
    }
}

fn by_variable(vars: usize, pairs: &[(usize, usize)]) -> ByVariable {
    let mut start = vec![0usize; vars + 1];
    for &(var, _) in pairs {
        start[var + 1] += 1;
    }
    for var in 0..vars {
        start[var + 1] += start[var];
    }
    let mut next = start.clone();
    let mut blocks = vec![0; pairs.len()];
    for &(var, b) in pairs {
        blocks[next[var]] = b;
        next[var] += 1;
    }
    ByVariable { start, blocks }
}

/// Assigns GRFs to every virtual register of `program` for `hw`, spilling registers to scratch
/// when they do not fit and `may_spill` allows it (the spill and fill instructions go into
/// `program`).
pub fn allocate(program: &mut Lir, hw: Gen, may_spill: bool) -> Result<Allocation, AllocError> {
    let mut unspillable = vec![false; program.vreg_sizes.len()];
    let (mut spills, mut fills, mut scratch_bytes) = (0, 0, program.scratch_bytes);
    if scratch_bytes > MAX_SCRATCH_BYTES {
        return Err(AllocError::OutOfScratch(scratch_bytes));
    }
    loop {
        let intervals = intervals(program);
        let graph = Graph::of(program, &intervals);
        let rank = may_spill.then(|| spill_ranks(program, &graph, &unspillable));
        let payload = payload_last_reads(program);
        let colouring = graph.colour(&payload, rank.as_deref());
        let spilled = match colouring {
            Ok(Colouring { first_grf, spilled }) if spilled.is_empty() => {
                let grfs_used = (0..first_grf.len())
                    .filter_map(|v| first_grf[v].map(|g| g as u32 + program.vreg_sizes[v]))
                    .fold(program.payload_regs, u32::max);
                return Ok(Allocation {
                    first_grf,
                    grfs_used,
                    spills,
                    fills,
                    scratch_bytes,
                });
            }
            Ok(Colouring { spilled, .. }) => spilled,
            Err(stuck) => {
                // Where the register that found no place meets the most pressure (the last such
                // instruction).
                let (start, end) = intervals[stuck].expect("coloured registers are live");
                let live = live_grfs(program, &intervals);
                let at = (start..=end).max_by_key(|&at| live[at]).expect("nonempty");
                return Err(AllocError::OutOfRegisters {
                    at,
                    needed: live[at],
                    available: program.grf_limit - program.payload_regs,
                });
            }
        };
        let mut slots = Vec::with_capacity(spilled.len());
        for v in spilled {
            slots.push((VReg(v as u32), scratch_bytes));
            scratch_bytes += program.vreg_sizes[v] * 32;
        }
        if scratch_bytes > MAX_SCRATCH_BYTES {
            return Err(AllocError::OutOfScratch(scratch_bytes));
        }
        let done = spill(program, hw, &slots).map_err(AllocError::ScratchMessage)?;
        spills += done.spills;
        fills += done.fills;
        unspillable.resize(program.vreg_sizes.len(), false);
        for v in slots.into_iter().map(|(v, _)| v).chain(done.temporaries) {
            unspillable[v.0 as usize] = true;
        }
    }
}

/// Each call of an allocated program (the callee's function number) and the GRFs its callee
/// must leave alone there: those from g0 up to the first it may use (the program's kept GRFs,
/// the whole payload, which the callee may read, and every register live across the call),
/// and those from the last it may use up (end-of-thread payloads live across the call, at the
/// top of the file, and what the program's own callers keep there).
pub fn live_at_calls(program: &Lir, alloc: &Allocation) -> Vec<CallWindow> {
    let calls: Vec<(usize, u32)> = (program.insts.iter().enumerate())
        .filter_map(|(i, inst)| match inst.op {
            Op::Call(callee) => Some((i, callee)),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    let intervals = intervals(program);
    let mut at_the_top = vec![false; program.vreg_sizes.len()];
    for v in end_of_thread_payloads(program) {
        at_the_top[v.0 as usize] = true;
    }
    // A sweep in program order over the registers started so far: below the window by the GRF
    // past their run (the highest first), above it by their first GRF (the lowest first);
    // those that ended before a call never cover a later one.
    let mut by_start: Vec<(usize, usize, usize)> = (intervals.iter().enumerate())
        .filter_map(|(v, interval)| interval.map(|(start, end)| (start, end, v)))
        .filter(|&(_, _, v)| alloc.first_grf[v].is_some())
        .collect();
    by_start.sort_unstable();
    let mut below = std::collections::BinaryHeap::new();
    let mut above = std::collections::BinaryHeap::new();
    let mut next = 0;
    let floor = program.payload_regs.max(program.kept_regs);
    calls
        .into_iter()
        .map(|(at, callee)| {
            while let Some(&(start, end, v)) = by_start.get(next)
                && start <= at
            {
                let first = u32::from(alloc.first_grf[v].expect("allocated"));
                if at_the_top[v] {
                    above.push((std::cmp::Reverse(first), end));
                } else {
                    below.push((first + program.vreg_sizes[v], end));
                }
                next += 1;
            }
            while below.peek().is_some_and(|&(_, end)| end < at) {
                below.pop();
            }
            while above.peek().is_some_and(|&(_, end)| end < at) {
                above.pop();
            }
            CallWindow {
                callee,
                first: below.peek().map_or(floor, |&(top, _)| top.max(floor)),
                end: (above.peek()).map_or(program.grf_limit, |&(std::cmp::Reverse(first), _)| {
                    first.min(program.grf_limit)
                }),
            }
        })
        .collect()
}

/// The GRFs a call's callee may use: `first..end`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallWindow {
    /// The callee's function number.
    pub callee: u32,
    pub first: u32,
    pub end: u32,
}

/// How much spilling each register of `graph` is worth: the benefit over the cost, or a negative
/// rank for registers that must not spill (`unspillable`) or gain nothing by it (live over fewer
/// than three instructions).
fn spill_ranks(program: &Lir, graph: &Graph, unspillable: &[bool]) -> Vec<f32> {
    let costs = spill_costs(program);
    let benefits = graph.benefits();
    (0..graph.intervals.len())
        .map(|v| match graph.intervals[v] {
            Some((start, end)) if !unspillable[v] && end - start >= 2 => {
                let cost = costs[v] / ((end - start) as f32).ln();
                benefits[v] as f32 / cost.max(f32::MIN_POSITIVE)
            }
            _ => -1.0,
        })
        .collect()
}

/// The GRFs live at each instruction: the sizes of the registers whose intervals cover it.
fn live_grfs(program: &Lir, intervals: &[Option<(usize, usize)>]) -> Vec<u32> {
    let mut change = vec![0i64; program.insts.len() + 1];
    for (v, interval) in intervals.iter().enumerate() {
        if let Some((start, end)) = *interval {
            change[start] += i64::from(program.vreg_sizes[v]);
            change[end + 1] -= i64::from(program.vreg_sizes[v]);
        }
    }
    let mut live = 0i64;
    change[..program.insts.len()]
        .iter()
        .map(|c| {
            live += c;
            live as u32
        })
        .collect()
}

/// The interference graph of the live virtual registers. It is an interval graph, so it is kept
/// as the intervals: a register's neighbours are the registers whose intervals overlap its own.
struct Graph<'a> {
    intervals: &'a [Option<(usize, usize)>],
    sizes: &'a [u32],
    /// The live registers by interval start.
    order: Vec<usize>,
    /// Pre-coloured registers: the end-of-thread payloads, at the top of the file.
    fixed: Vec<Option<u32>>,
    /// One past the last GRF the program may use.
    limit: u32,
}

/// The registers end-of-thread messages send, which go at the top of the file.
fn end_of_thread_payloads(program: &Lir) -> impl Iterator<Item = VReg> + '_ {
    (program.insts.iter())
        .filter(|inst| inst.send.is_some_and(|m| m.eot()))
        .filter_map(|inst| inst.srcs[0].reg().and_then(|r| r.vreg()))
}

impl<'a> Graph<'a> {
    fn of(program: &'a Lir, intervals: &'a [Option<(usize, usize)>]) -> Graph<'a> {
        let n = intervals.len();
        let mut order: Vec<usize> = (0..n).filter(|&v| intervals[v].is_some()).collect();
        order.sort_by_key(|&v| intervals[v].map(|i| i.0));
        let mut fixed = vec![None; n];
        for v in end_of_thread_payloads(program) {
            fixed[v.0 as usize] = Some(GRFS - program.vreg_sizes[v.0 as usize]);
        }
        Graph {
            intervals,
            sizes: &program.vreg_sizes,
            order,
            fixed,
            limit: program.grf_limit,
        }
    }

    fn interval(&self, v: usize) -> (usize, usize) {
        self.intervals[v].expect("a live register")
    }

    fn overlap(&self, a: usize, b: usize) -> bool {
        let ((start_a, end_a), (start_b, end_b)) = (self.interval(a), self.interval(b));
        start_a <= end_b && start_b <= end_a
    }

    /// The places each register takes from its neighbours (0 for registers not live): a
    /// neighbour of `m` GRFs can take `n + m - 1` places of a run of `n`.
    fn benefits(&self) -> Vec<u32> {
        // The intervals overlapping `[start, end]` are those starting at or before `end` but
        // those ending before `start`, which all start before `end` too: counts and sizes of
        // both, per instruction, are prefix sums.
        let points = self
            .order
            .iter()
            .map(|&v| self.interval(v).1)
            .max()
            .map_or(0, |e| e + 1);
        let mut starting = vec![(0u64, 0u64); points + 1];
        let mut ending = vec![(0u64, 0u64); points + 1];
        for &v in &self.order {
            let (start, end) = self.interval(v);
            let size = u64::from(self.sizes[v]);
            starting[start + 1].0 += 1;
            starting[start + 1].1 += size;
            ending[end + 1].0 += 1;
            ending[end + 1].1 += size;
        }
        for at in 1..=points {
            for sums in [&mut starting, &mut ending] {
                sums[at].0 += sums[at - 1].0;
                sums[at].1 += sums[at - 1].1;
            }
        }
        // `starting[at]`: the intervals starting before `at`; `ending[at]`: those ending before.
        let mut benefits = vec![0; self.intervals.len()];
        for &v in &self.order {
            let (start, end) = self.interval(v);
            let size = u64::from(self.sizes[v]);
            // Less the register itself.
            let neighbours = starting[end + 1].0 - ending[start].0 - 1;
            let sizes = starting[end + 1].1 - ending[start].1 - size;
            // Each neighbour of `m` GRFs blocks `m + size - 1` places.
            benefits[v] = (sizes + neighbours * size - neighbours) as u32;
        }
        benefits
    }

    /// The first GRF of every live register, or one that found no place. Registers are coloured
    /// first fit in order of interval start: a perfect elimination order of the interval graph,
    /// where the neighbours coloured before a register are all live where it starts. Besides the
    /// pre-coloured registers, those are the ones still live there: the sweep keeps them, no more
    /// than the file holds at once.
    ///
    /// With `rank`, a register that finds no place does not stop the sweep: the best ranked of
    /// it and the registers live where it starts leave the graph until it fits or is the one that
    /// leaves, and the colouring names the registers that left. As Chaitin–Briggs colouring
    /// does, one colouring picks every register to spill: spilling them leaves short
    /// temporaries around their uses in their place, so a few more attempts settle, where one
    /// attempt per spilled register would take time quadratic in the program.
    fn colour(&self, payload: &[Option<usize>], rank: Option<&[f32]>) -> Result<Colouring, usize> {
        let mut first_grf: Vec<Option<u8>> =
            self.fixed.iter().map(|f| f.map(|g| g as u8)).collect();
        let fixed: Vec<usize> = self
            .order
            .iter()
            .copied()
            .filter(|&v| self.fixed[v].is_some())
            .collect();
        let run = |v: usize, first_grf: &[Option<u8>]| {
            let g = first_grf[v].expect("coloured");
            ((1u128 << self.sizes[v]) - 1) << g
        };
        let mut spilled = Vec::new();
        let mut active: Vec<usize> = Vec::new();
        // The payload GRFs still to be read, dropped as the sweep passes their last reads.
        let mut payload_live = 0u128;
        let mut payload_ends: Vec<(usize, usize)> = (payload.iter().enumerate())
            .filter_map(|(g, last)| last.map(|last| (last, g)))
            .collect();
        payload_ends.sort_unstable();
        for &(_, g) in &payload_ends {
            payload_live |= 1 << g;
        }
        let mut payload_ended = 0;
        for &v in self.order.iter().filter(|&&v| self.fixed[v].is_none()) {
            let (start, _) = self.interval(v);
            active.retain(|&a| self.interval(a).1 >= start);
            while let Some(&(last, g)) = payload_ends.get(payload_ended)
                && last < start
            {
                payload_live &= !(1 << g);
                payload_ended += 1;
            }
            loop {
                let mut taken = payload_live;
                for &m in active
                    .iter()
                    .chain(fixed.iter().filter(|&&m| self.overlap(m, v)))
                {
                    taken |= run(m, &first_grf);
                }
                let run = (1u128 << self.sizes[v]) - 1;
                let last = self.limit.checked_sub(self.sizes[v]);
                if let Some(g) = last.and_then(|l| (0..=l).find(|&g| taken & run << g == 0)) {
                    first_grf[v] = Some(g as u8);
                    active.push(v);
                    break;
                }
                // Of equal ranks, the highest-numbered register.
                let rank = rank.ok_or(v)?;
                let best = active
                    .iter()
                    .copied()
                    .chain([v])
                    .filter(|&m| rank[m] >= 0.0)
                    .max_by(|&a, &b| rank[a].total_cmp(&rank[b]).then(a.cmp(&b)))
                    .ok_or(v)?;
                spilled.push(best);
                if best == v {
                    break;
                }
                first_grf[best] = None;
                active.retain(|&a| a != best);
            }
        }
        Ok(Colouring { first_grf, spilled })
    }
}

/// The last instruction reading each GRF of the thread payload (`None`: never read): after it,
/// the GRF is free for other registers. A read inside a loop reads again on the loop's next
/// trip, so it counts as a read at the loop's `while` (the outermost loop's). The headers (R0,
/// R1 and R2: the thread's IDs, URB handles, subspans and pixel masks, which messages also
/// read without naming them) stay through the whole thread, and so do a subroutine's kept
/// GRFs. A call reads the whole payload (its callee may).
fn payload_last_reads(program: &Lir) -> Vec<Option<usize>> {
    let mut last = vec![None; program.payload_regs as usize];
    let kept = PAYLOAD_HEADERS.max(program.kept_regs as usize);
    for header in last.iter_mut().take(kept) {
        *header = Some(usize::MAX);
    }
    // The `while` of the loops starting at each instruction, the furthest when several do.
    let nesting = program.nesting();
    let mut loop_from = vec![None; program.insts.len()];
    for (w, inst) in program.insts.iter().enumerate() {
        if let (Op::Hw(Opcode::While), Some(d)) = (inst.op, nesting.do_of[w]) {
            let end: &mut Option<usize> = &mut loop_from[d];
            *end = (*end).max(Some(w));
        }
    }
    // The furthest `while` among the loops started so far: the end of the outermost loop
    // holding the instruction when it is at or past the instruction.
    let mut reach: Option<usize> = None;
    for (i, inst) in program.insts.iter().enumerate() {
        reach = reach.max(loop_from[i]);
        let read_until = reach.filter(|&w| w >= i).unwrap_or(i);
        if let Op::Call(_) = inst.op {
            for at in &mut last {
                *at = (*at).max(Some(read_until));
            }
        }
        for (k, src) in inst.srcs.iter().enumerate() {
            let Some(r) = src.reg().filter(|r| matches!(r.base, Base::Fixed(_))) else {
                continue;
            };
            let Base::Fixed(g) = r.base else {
                unreachable!("filtered")
            };
            for grf in r.grfs(inst.src_span(k)) {
                if let Some(at) = last.get_mut(g as usize + grf as usize) {
                    *at = (*at).max(Some(read_until));
                }
            }
        }
    }
    last
}

/// A colouring: the first GRF of every live register but those to spill.
struct Colouring {
    first_grf: Vec<Option<u8>>,
    spilled: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::emit;
    use crate::emu::{Thread, run};
    use crate::encoding::Predicate;
    use crate::isa::{CondMod, Gen, Type};
    use crate::lir::testing::{mov, program, v};
    use crate::lir::{Inst, Operand};

    const VALUES: u32 = 140;

    /// `VALUES` products of the input (g1) live at once, replaced in the channels whose input
    /// exceeds 0.5 (writes under divergent control flow), then summed into g1.
    fn pressure() -> Lir {
        let input = Src::Reg(Operand::payload(1, 0, Type::F));
        let mut insts: Vec<Inst> = (0..VALUES)
            .map(|k| {
                Inst::new(
                    Opcode::Mul,
                    8,
                    Some(v(k, Type::F)),
                    vec![input, Src::imm_f(k as f32)],
                )
            })
            .collect();
        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Operand::null(Type::F)),
            vec![input, Src::imm_f(0.5)],
        );
        cmp.cond = Some(CondMod::G);
        insts.push(cmp);
        let mut branch = Inst::control(Op::Hw(Opcode::If), 8);
        branch.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        insts.push(branch);
        insts.extend((0..VALUES).map(|k| mov(v(k, Type::F), Src::imm_f(-(k as f32)))));
        insts.push(Inst::control(Op::Hw(Opcode::Endif), 8));
        insts.push(mov(v(VALUES, Type::F), Src::imm_f(0.0)));
        for k in 0..VALUES {
            insts.push(Inst::new(
                Opcode::Add,
                8,
                Some(v(VALUES + 1 + k, Type::F)),
                vec![Src::Reg(v(VALUES + k, Type::F)), Src::Reg(v(k, Type::F))],
            ));
        }
        insts.push(mov(
            Operand::payload(1, 0, Type::F),
            Src::Reg(v(2 * VALUES, Type::F)),
        ));
        program(2 * VALUES + 1, insts)
    }

    /// A GRF nothing writes (a message payload's undefined part) holds no value: the register's
    /// interval starts at its first write, not at the program's start.
    #[test]
    fn grfs_nothing_writes_keep_no_register_live() {
        let undefined_half = Operand::vector(VReg(0), 32, Type::F);
        let mut p = program(
            2,
            vec![
                mov(v(1, Type::F), Src::imm_f(1.0)),
                mov(v(0, Type::F), Src::imm_f(2.0)),
                Inst::new(
                    Opcode::Add,
                    8,
                    Some(v(1, Type::F)),
                    vec![Src::Reg(v(1, Type::F)), Src::Reg(undefined_half)],
                ),
            ],
        );
        p.vreg_sizes[0] = 2;
        assert_eq!(intervals(&p)[0], Some((1, 2)));
    }

    /// A payload GRF read inside a loop (a uniform the loop's condition reads) is read again on
    /// every trip: it stays allocated to the outermost loop's `while`, so no value defined in
    /// the loop takes it.
    #[test]
    fn payload_read_in_a_loop_lives_to_the_loops_end() {
        let uniform = Src::Reg(Operand::payload(3, 1, Type::F));
        let mut insts = vec![
            Inst::control(Op::Do, 8),
            mov(v(0, Type::F), Src::imm_f(1.0)),
            Inst::control(Op::Do, 8),
            mov(v(1, Type::F), uniform),
            Inst::control(Op::Hw(Opcode::While), 8),
            mov(v(2, Type::F), Src::imm_f(2.0)),
            Inst::control(Op::Hw(Opcode::While), 8),
            mov(v(3, Type::F), Src::Reg(Operand::payload(4, 0, Type::F))),
        ];
        let add = |dst, a, b| {
            let srcs = vec![Src::Reg(v(a, Type::F)), Src::Reg(v(b, Type::F))];
            Inst::new(Opcode::Add, 8, Some(v(dst, Type::F)), srcs)
        };
        insts.extend([add(4, 0, 1), add(5, 4, 2), add(6, 5, 3)]);
        insts.push(mov(
            Operand::payload(1, 0, Type::F),
            Src::Reg(v(6, Type::F)),
        ));
        let mut p = program(7, insts);
        p.payload_regs = 5;
        let last = payload_last_reads(&p);
        assert_eq!(last[3], Some(6), "{last:?}");
        assert_eq!(last[4], Some(7), "{last:?}");
        let alloc = allocate(&mut p, Gen::Gen9, false).expect("allocates");
        let grf = |n: u32| alloc.first_grf[n as usize];
        assert!([0, 1, 2].iter().all(|&n| grf(n) != Some(3)), "{alloc:?}");
    }

    #[test]
    fn pressure_beyond_the_file_spills_and_keeps_every_value() {
        let mut p = pressure();
        assert!(matches!(
            allocate(&mut p.clone(), Gen::Gen9, false),
            Err(AllocError::OutOfRegisters { needed, .. }) if needed > GRFS - 2
        ));
        let alloc = allocate(&mut p, Gen::Gen9, true).expect("spills");
        assert!(alloc.spills > 0 && alloc.fills > 0, "{alloc:?}");
        assert!(alloc.grfs_used <= GRFS);
        let mut thread = Thread::new(8);
        let inputs = [0.25f32, 0.75, 1.0, -2.0, 0.5, 3.0, 0.0, 0.625];
        for (c, x) in inputs.iter().enumerate() {
            thread.set(1, c, Type::F, x.to_bits() as u64);
        }
        run(&emit(&p, &alloc), Gen::Gen9, &mut thread).expect("runs");
        for (c, &x) in inputs.iter().enumerate() {
            let mut sum = 0f32;
            for k in 0..VALUES {
                let value = if x > 0.5 { -(k as f32) } else { x * k as f32 };
                sum += value;
            }
            let got = f32::from_bits(thread.get(1, c, Type::F) as u32);
            assert_eq!(got, sum, "channel {c}");
        }
    }

    /// Spills past the first 128 KiB of scratch (what a message's 12-bit offset reaches) move
    /// the base in their headers, and land where the fills find them.
    #[test]
    fn spills_past_the_offsets_reach_move_the_header_base() {
        let mut p = pressure();
        // Temporaries the program keeps in scratch itself take the first window but one GRF.
        p.scratch_bytes = 4095 * 32;
        let alloc = allocate(&mut p, Gen::Gen9, true).expect("spills");
        assert!(alloc.scratch_bytes > 4096 * 32 + 32, "{alloc:?}");
        let moves_base = |inst: &crate::lir::Inst| {
            inst.op == Op::Hw(Opcode::Add)
                && inst.srcs.get(1) == Some(&Src::imm_ud(4096 * 32))
                && inst.dst.is_some_and(|d| d.offset == 20)
        };
        assert!(p.insts.iter().any(moves_base));
        let mut thread = Thread::new(8);
        let inputs = [0.25f32, 0.75, 1.0, -2.0, 0.5, 3.0, 0.0, 0.625];
        for (c, x) in inputs.iter().enumerate() {
            thread.set(1, c, Type::F, x.to_bits() as u64);
        }
        run(&emit(&p, &alloc), Gen::Gen9, &mut thread).expect("runs");
        assert!(thread.scratch.len() > 4096 * 32);
        for (c, &x) in inputs.iter().enumerate() {
            let sum: f32 = (0..VALUES)
                .map(|k| if x > 0.5 { -(k as f32) } else { x * k as f32 })
                .sum();
            let got = f32::from_bits(thread.get(1, c, Type::F) as u32);
            assert_eq!(got, sum, "channel {c}");
        }
    }

    /// Scratch past what the hardware gives a thread is an error with the size needed.
    #[test]
    fn scratch_past_the_thread_limit_is_an_error() {
        let mut p = pressure();
        p.scratch_bytes = MAX_SCRATCH_BYTES - 32;
        assert!(matches!(
            allocate(&mut p, Gen::Gen9, true),
            Err(AllocError::OutOfScratch(needed)) if needed > MAX_SCRATCH_BYTES
        ));
        let mut p = pressure();
        p.scratch_bytes = MAX_SCRATCH_BYTES + 32;
        assert_eq!(
            allocate(&mut p, Gen::Gen9, false),
            Err(AllocError::OutOfScratch(MAX_SCRATCH_BYTES + 32))
        );
    }

    /// A predicated `sel` writes every channel, so its register is live from there on: not from
    /// the start of the program, as a predicated write that keeps what other channels held is.
    #[test]
    fn a_predicated_sel_defines_its_register() {
        let predicated = |opcode: Opcode, dst: u32| {
            let mut inst = Inst::new(
                opcode,
                8,
                Some(v(dst, Type::F)),
                vec![Src::Reg(v(0, Type::F)), Src::Reg(v(1, Type::F))],
            );
            inst.predicate = Some(Predicate {
                control: 1,
                inverse: false,
            });
            inst
        };
        let mut cmp = Inst::new(
            Opcode::Cmp,
            8,
            Some(Operand::null(Type::F)),
            vec![Src::Reg(v(0, Type::F)), Src::imm_f(0.5)],
        );
        cmp.cond = Some(CondMod::G);
        let p = program(
            4,
            vec![
                mov(v(0, Type::F), Src::imm_f(1.0)),
                mov(v(1, Type::F), Src::imm_f(2.0)),
                cmp,
                predicated(Opcode::Sel, 2),
                predicated(Opcode::Add, 3),
                mov(Operand::payload(1, 0, Type::F), Src::Reg(v(2, Type::F))),
                mov(Operand::payload(1, 0, Type::F), Src::Reg(v(3, Type::F))),
            ],
        );
        let live = intervals(&p);
        assert_eq!(live[2], Some((3, 5)), "sel");
        assert_eq!(live[3].map(|(start, _)| start), Some(0), "predicated add");
    }

    /// Runs of several GRFs pack around each other; interfering registers never share a GRF.
    #[test]
    fn runs_of_several_grfs_do_not_overlap_while_live() {
        let mut p = program(
            3,
            vec![
                mov(v(0, Type::F), Src::imm_f(1.0)),
                mov(v(1, Type::F), Src::imm_f(2.0)),
                mov(v(2, Type::F), Src::Reg(v(0, Type::F))),
                mov(v(2, Type::F), Src::Reg(v(1, Type::F))),
            ],
        );
        p.vreg_sizes = vec![4, 3, 2];
        let alloc = allocate(&mut p, Gen::Gen9, false).expect("fits");
        let run = |r: usize| {
            let first = alloc.first_grf[r].expect("allocated") as u32;
            first..first + p.vreg_sizes[r]
        };
        for (a, b) in [(0, 1), (1, 2), (0, 2)] {
            assert!(
                run(a).end <= run(b).start || run(b).end <= run(a).start,
                "{a} and {b} overlap: {alloc:?}"
            );
        }
        assert!(run(0).start >= 2 && alloc.grfs_used == 2 + 4 + 3 + 2);
    }
}
