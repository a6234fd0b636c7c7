//! The wide executor: runs a *wave* of invocations (many quads, workgroups or single
//! invocations at once) instruction by instruction, each instruction decoded once and executed
//! for every invocation of the wave standing at it, as a GPU runs a wave.
//!
//! # How a wave runs
//!
//! Each invocation keeps its own block and position. The wave repeatedly takes the running
//! invocations standing at the earliest point of the program (the block's scheduling order, then
//! the position in the block) and executes the block from there for all of them at once, until
//! its end or a sync point. At the end of a block each invocation takes its own branch, so
//! invocations that diverge run as separate batches and meet again where their paths join: the
//! scheduling order puts a join after every block leading to it, and a loop's merge block after
//! its continue block, so the invocations that left a loop wait at the merge until the others
//! leave too.
//!
//! Once no invocation is running, every group (quad, workgroup) resolves its earliest sync point
//! for the members waiting at exactly that point, with the reference scheduler's own resolution
//! ([`super::launch`]), and the wave goes on. Invocations reach the same sync points as when they
//! run one after another, because between sync points an invocation's work depends only on its
//! own state.
//!
//! # Registers
//!
//! The wave has one register file, structure of arrays: register `r` of lane `l` is word
//! `r * width + l`, so an ALU instruction, a constant, a deref or a variable access runs as a
//! loop over the batch's lanes with its operands decoded once, and phis and branches read it
//! lane by lane. Instructions that need one invocation's frame (intrinsics, texture operations,
//! derivatives and implicit-LOD samples resolved per quad) copy just their sources into the
//! invocation's own registers and their result back ([`WideCode`]).
//!
//! # Uniform values
//!
//! An instruction whose result cannot differ between invocations (a constant, a deref or an ALU
//! operation of such values, a load through such a deref from memory no invocation writes:
//! uniforms, UBOs, push constants, constants, SSBOs of a program that stores to none) runs for
//! the batch's first lane only, and its result is copied to the others, as a GPU's scalar unit
//! runs it once for the wave. Phis and everything an invocation's own state reaches are not
//! uniform. The analysis is one pass over the blocks in scheduling order, in which every value
//! is defined before the instructions it dominates read it.
//!
//! # Same results as the reference
//!
//! Every instruction is executed by the reference interpreter's own code (the ALU, deref and
//! memory code takes the register file's width and lane; width 1 is one invocation's registers);
//! only the order of work across invocations differs. That order is
//! invisible when no invocation can see another's writes, so [`eligible`] takes exactly the
//! programs without calls and without writes or atomics to memory invocations share (SSBOs,
//! images, shared memory). An error of any kind ends the wide run, and the caller runs the
//! reference instead, so errors name the same invocation and instruction as the reference's.

use super::exec::{Flow, Invocation, Machine, Status};
use super::launch;
use super::memory::Storage;
use super::program::{FuncCode, Op, Program, Term};
use super::{Fault, InterpError};
use crate::deadline;
use crate::ir::{InstKind, Stage, Value, inst_sources};
use shrew_ops::Intrinsic;
use std::ops::Range;

/// Whether a program runs on the wide executor: no calls, and no instruction that writes memory
/// another invocation can read.
pub(crate) fn eligible(prog: &Program) -> bool {
    let shader = prog.shader;
    let entry = shader.entry.0 as usize;
    let (Some(func), Some(code)) = (shader.functions.get(entry), prog.funcs.get(entry)) else {
        return false;
    };
    if prog.uses_subgroups {
        return false;
    }
    let shared_storage = |v: crate::ir::Value| {
        code.derefs.get(&v).is_none_or(|(var, _)| {
            matches!(
                prog.vars[var.0 as usize].storage,
                Storage::Ssbo { .. } | Storage::Shared
            )
        })
    };
    code.blocks.iter().flat_map(|b| &b.ops).all(|op| match op {
        Op::Call { .. } => false,
        Op::DerefAccess(a) => {
            !a.store
                || !matches!(
                    prog.vars[a.var.0 as usize].storage,
                    Storage::Ssbo { .. } | Storage::Shared
                )
        }
        Op::Intrinsic(v) => {
            let InstKind::Intrinsic(ii) = &func.inst(*v).kind else {
                return false;
            };
            match ii.op {
                Intrinsic::StoreSsbo
                | Intrinsic::SsboAtomic
                | Intrinsic::SsboAtomicSwap
                | Intrinsic::StoreShared
                | Intrinsic::SharedAtomic
                | Intrinsic::SharedAtomicSwap
                | Intrinsic::ImageDerefStore
                | Intrinsic::ImageDerefAtomic
                | Intrinsic::ImageDerefAtomicSwap => false,
                Intrinsic::CopyDeref | Intrinsic::DerefAtomic | Intrinsic::DerefAtomicSwap => {
                    !shared_storage(ii.srcs[0])
                }
                _ => true,
            }
        }
        _ => true,
    })
}

/// What the wide executor needs beyond the decoded program: for every instruction that runs on
/// one invocation's own registers (intrinsics, texture operations, derivatives), the registers
/// it reads and writes, which are copied between the wave's register file and the
/// invocation's.
pub(crate) struct WideCode {
    /// Per block of the entry function, per instruction.
    moves: Vec<Vec<LaneMoves>>,
    /// Per block, per instruction: the result's register offset and count when the result is
    /// the same in every lane.
    pub(super) uniform: Vec<Vec<Option<(u32, u32)>>>,
}

#[derive(Default)]
struct LaneMoves {
    /// Register offset and count of every source.
    reads: Box<[(u32, u32)]>,
    /// Register offset and count of the result.
    write: (u32, u32),
}

impl WideCode {
    /// Built for an [`eligible`] program.
    pub fn new(prog: &Program) -> WideCode {
        let entry = prog.shader.entry.0 as usize;
        let (func, code) = (&prog.shader.functions[entry], &prog.funcs[entry]);
        let regs = |v: Value| {
            let i = v.index();
            code.reg_off
                .get(i)
                .map_or((0, 0), |&off| (off, code.reg_comps[i]))
        };
        let moves = code
            .blocks
            .iter()
            .map(|b| {
                b.ops
                    .iter()
                    .zip(&b.vals)
                    .map(|(op, &v)| match (op, func.get_inst(v)) {
                        (Op::Intrinsic(_) | Op::Tex { .. } | Op::Derivative(..), Some(inst)) => {
                            LaneMoves {
                                reads: inst_sources(&inst.kind).into_iter().map(regs).collect(),
                                write: regs(v),
                            }
                        }
                        _ => LaneMoves::default(),
                    })
                    .collect()
            })
            .collect();
        WideCode {
            moves,
            uniform: uniform_results(prog),
        }
    }
}

/// The result registers of every instruction of the entry function whose result is the same in
/// every invocation: per block, per instruction.
fn uniform_results(prog: &Program) -> Vec<Vec<Option<(u32, u32)>>> {
    let entry = prog.shader.entry.0 as usize;
    let (func, code) = (&prog.shader.functions[entry], &prog.funcs[entry]);
    let mut uniform = vec![false; code.reg_off.len()];
    let mut results: Vec<Vec<Option<(u32, u32)>>> = code
        .blocks
        .iter()
        .map(|b| vec![None; b.ops.len()])
        .collect();
    let mut by_order: Vec<usize> = (0..code.blocks.len()).collect();
    by_order.sort_by_key(|&b| code.blocks[b].order);
    let unwritten = |var: crate::ir::VarId| {
        matches!(
            prog.vars[var.0 as usize].storage,
            Storage::Uniform
                | Storage::Ubo { .. }
                | Storage::PushConst
                | Storage::Constant
                | Storage::Ssbo { .. }
        )
    };
    for b in by_order {
        let block = &code.blocks[b];
        for (pos, (op, &v)) in block.ops.iter().zip(&block.vals).enumerate() {
            let Some(inst) = func.get_inst(v) else {
                continue;
            };
            let sources_uniform = || {
                inst_sources(&inst.kind)
                    .into_iter()
                    .all(|s| uniform.get(s.index()).copied().unwrap_or(false))
            };
            let same = match op {
                Op::Const { .. } | Op::Undef { .. } | Op::DerefVar { .. } => true,
                Op::Alu(_)
                | Op::DerefArray { .. }
                | Op::DerefBlock { .. }
                | Op::DerefStruct { .. } => sources_uniform(),
                Op::DerefAccess(a) => !a.store && unwritten(a.var) && sources_uniform(),
                _ => false,
            };
            if same && let Some(&off) = code.reg_off.get(v.index()) {
                uniform[v.index()] = true;
                results[b][pos] = Some((off, code.reg_comps[v.index()]));
            }
        }
    }
    results
}

/// The wave's registers, register `r` of lane `l` at `r * width + l`, and where each lane
/// stands ([`point`]), its block and its steps so far, kept here as arrays so that choosing the
/// next batch and moving lanes between blocks read and write no invocation. An invocation's
/// frame is brought up to date only where it is read: when the lane waits at a sync point, runs
/// an instruction on its own registers, or fails.
struct WaveState<'a> {
    regs: &'a mut [u64],
    width: usize,
    points: Vec<u64>,
    blocks: Vec<u32>,
    steps: Vec<u64>,
    /// The groups that synchronise together, and each lane's group.
    groups: &'a [Range<usize>],
    group_of: Vec<u32>,
    /// Space for the lanes taking a branch, for the values phis copy, and for the lanes that
    /// wait at a sync point; `members` is `0, 1, …` (every member of a group).
    taken: Vec<u32>,
    phi_values: Vec<u64>,
    waiting: Vec<u32>,
    members: Vec<usize>,
}

impl WaveState<'_> {
    /// Copies the sources of an instruction, and its result's current value (which an
    /// instruction that leaves some of it unwritten keeps), into the lane's own registers.
    fn gather(&self, moves: &LaneMoves, lane: usize, own: &mut [u64]) {
        for &(off, n) in moves.reads.iter().chain([&moves.write]) {
            let range = off as usize..(off + n) as usize;
            for (r, word) in range.clone().zip(&mut own[range]) {
                *word = self.regs[r * self.width + lane];
            }
        }
    }

    /// Copies the result of an instruction from the lane's own registers.
    fn scatter(&mut self, moves: &LaneMoves, lane: usize, own: &[u64]) {
        let (off, n) = moves.write;
        let range = off as usize..(off + n) as usize;
        for (r, &word) in range.clone().zip(&own[range]) {
            self.regs[r * self.width + lane] = word;
        }
    }

    /// Copies registers `off..off + n` of the batch's first lane to its other lanes.
    fn broadcast(&mut self, (off, n): (u32, u32), batch: &[u32]) {
        let Some((&first, rest)) = batch.split_first() else {
            return;
        };
        for r in off as usize..(off + n) as usize {
            let row = &mut self.regs[r * self.width..(r + 1) * self.width];
            let word = row[first as usize];
            for &l in rest {
                row[l as usize] = word;
            }
        }
    }
}

/// Runs a wave to its end: `lanes` are the invocations, `groups` the ranges of them that
/// synchronise together (quads, workgroups, or one invocation each); `regs` is the space for
/// the wave's register file.
pub(crate) fn run_wave(
    m: &mut Machine,
    code: &WideCode,
    lanes: &mut [Invocation],
    groups: &[Range<usize>],
    shared: &mut [u8],
    regs: &mut Vec<u64>,
) -> Result<(), InterpError> {
    let entry = m.prog.shader.entry.0 as usize;
    let width = lanes.len();
    regs.clear();
    regs.resize(m.prog.funcs[entry].nregs * width, 0);
    let mut wave = WaveState {
        regs,
        width,
        points: lanes.iter().map(|inv| point(m.prog, inv)).collect(),
        blocks: lanes.iter().map(|inv| inv.frames[0].block).collect(),
        steps: lanes.iter().map(|inv| inv.steps).collect(),
        groups,
        group_of: vec![0; width],
        taken: Vec::new(),
        phi_values: Vec::new(),
        waiting: Vec::new(),
        members: Vec::new(),
    };
    for (g, group) in groups.iter().enumerate() {
        wave.group_of[group.clone()].fill(g as u32);
    }
    let mut batch = Vec::with_capacity(width);
    let (mut waiting, mut parts) = (Vec::new(), Vec::new());
    loop {
        while next_batch(&wave.points, &mut batch) {
            run_batch(m, code, lanes, &mut batch, shared, &mut wave)?;
        }
        let mut resolved = false;
        for group in groups {
            let members = &mut lanes[group.clone()];
            waiting.clear();
            waiting.extend((0..members.len()).filter(|&i| members[i].status == Status::Waiting));
            let Some(first) = waiting.iter().map(|&i| position(m.prog, &members[i])).min() else {
                continue;
            };
            parts.clear();
            parts.extend(
                waiting
                    .iter()
                    .copied()
                    .filter(|&i| position(m.prog, &members[i]) == first),
            );
            let frame = &members[parts[0]].frames[0];
            let moves = &code.moves[frame.block as usize][frame.pos as usize];
            launch::resolve(m, members, &parts, waiting.len())?;
            for &p in &parts {
                wave.scatter(moves, group.start + p, &members[p].frames[0].regs);
                wave.points[group.start + p] = point(m.prog, &members[p]);
            }
            resolved = true;
        }
        if !resolved {
            return Ok(());
        }
    }
}

/// Where a running invocation stands, in the order the wave runs points: the block's scheduling
/// order, then the position in the block (an eligible program has one frame), packed into one
/// word; [`NOT_RUNNING`] for one that waits or has finished.
fn point(prog: &Program, inv: &Invocation) -> u64 {
    match inv.status {
        Status::Running => position(prog, inv),
        _ => NOT_RUNNING,
    }
}

fn packed_point(order: u32, pos: u32) -> u64 {
    (order as u64) << 32 | pos as u64
}

/// Where an invocation stands, running or not, packed as [`point`] packs it.
fn position(prog: &Program, inv: &Invocation) -> u64 {
    let frame = &inv.frames[0];
    let order = prog.funcs[frame.func as usize].blocks[frame.block as usize].order;
    packed_point(order, frame.pos)
}

/// The point of an invocation that is not running: after every other.
const NOT_RUNNING: u64 = u64::MAX;

/// Fills `batch` with the running lanes at the earliest point; false when none runs.
fn next_batch(points: &[u64], batch: &mut Vec<u32>) -> bool {
    // One pass: the batch restarts whenever an earlier point shows up.
    batch.clear();
    let mut first = NOT_RUNNING;
    for (l, &p) in points.iter().enumerate() {
        if p < first {
            first = p;
            batch.clear();
            batch.push(l as u32);
        } else if p == first && p != NOT_RUNNING {
            batch.push(l as u32);
        }
    }
    first != NOT_RUNNING
}

/// Runs the invocations of `batch`, all at the same point, to the end of their block or the next
/// sync point.
fn run_batch(
    m: &mut Machine,
    code: &WideCode,
    lanes: &mut [Invocation],
    batch: &mut Vec<u32>,
    shared: &mut [u8],
    wave: &mut WaveState,
) -> Result<(), InterpError> {
    let prog = m.prog;
    let fragment = prog.shader.stage == Stage::Fragment;
    let first = batch[0] as usize;
    // The low word of a running lane's point is its position in the block.
    let (block, start) = (wave.blocks[first], wave.points[first] as u32 as usize);
    let fc = &prog.funcs[lanes[first].frames[0].func as usize];
    let settle = |inv: &mut Invocation, pos: usize| {
        let frame = &mut inv.frames[0];
        frame.block = block;
        frame.pos = pos as u32;
    };
    let block = block as usize;
    let ops = &fc.blocks[block].ops;
    let moves = &code.moves[block];
    let before = m.stats.instructions;
    if before / deadline::CHECK_EVERY != (before + ops.len() as u64) / deadline::CHECK_EVERY
        && deadline::expired()
    {
        settle(&mut lanes[first], start);
        return Err(InterpError::TimeLimit {
            site: m.site(&lanes[first]),
        });
    }
    // Steps of the lanes leaving the batch at `pos` (the instruction there included), checked
    // against the limit; an invocation that passes it stops the wide run, and the reference
    // finds the same error.
    let leave = |m: &Machine, steps: &mut u64, inv: &mut Invocation, pos: usize| {
        *steps += (pos - start + 1) as u64;
        if *steps > m.launch.step_limit {
            settle(inv, pos);
            return Err(InterpError::StepLimit {
                site: m.site(inv),
                limit: m.launch.step_limit,
            });
        }
        Ok(())
    };
    let width = wave.width;
    for (pos, op) in ops.iter().enumerate().skip(start) {
        let count = batch.len() as u64;
        m.stats.instructions += count;
        let waits = match op {
            Op::Derivative(..) => fragment,
            Op::Barrier { sync } => *sync,
            Op::Tex { implicit, .. } => *implicit,
            _ => false,
        };
        if waits {
            // A group whose members are all in the batch is resolved here, as the reference
            // resolves a group waiting at one point, and goes on; the others' lanes wait.
            let mut waiting = std::mem::take(&mut wave.waiting);
            waiting.clear();
            let mut kept = 0;
            let mut i = 0;
            while i < batch.len() {
                let group = wave.groups[wave.group_of[batch[i] as usize] as usize].clone();
                let n = group.len();
                let whole = batch.len() - i >= n
                    && batch[i] as usize == group.start
                    && batch[i + n - 1] as usize == group.end - 1;
                if !whole {
                    waiting.push(batch[i]);
                    i += 1;
                    continue;
                }
                for l in group.clone() {
                    let inv = &mut lanes[l];
                    settle(inv, pos);
                    wave.gather(&moves[pos], l, &mut inv.frames[0].regs);
                    inv.status = Status::Waiting;
                }
                if wave.members.len() < n {
                    wave.members = (0..n).collect();
                }
                launch::resolve(m, &mut lanes[group.clone()], &wave.members[..n], n)?;
                for l in group.clone() {
                    wave.scatter(&moves[pos], l, &lanes[l].frames[0].regs);
                }
                batch.copy_within(i..i + n, kept);
                kept += n;
                i += n;
            }
            batch.truncate(kept);
            for &l in &waiting {
                let l = l as usize;
                let inv = &mut lanes[l];
                settle(inv, pos);
                wave.gather(&moves[pos], l, &mut inv.frames[0].regs);
                inv.status = Status::Waiting;
                wave.points[l] = NOT_RUNNING;
                leave(m, &mut wave.steps[l], inv, pos)?;
            }
            wave.waiting = waiting;
            if batch.is_empty() {
                return Ok(());
            }
            continue;
        }
        // A uniform result is computed in the first lane and copied to the others.
        let uniform = code.uniform[block][pos];
        let active = match uniform {
            Some(_) => &batch[..1],
            None => &batch[..],
        };
        match op {
            Op::Alu(a) => {
                m.stats.alu += count;
                super::exec::eval_alu(a, wave.regs, width, active);
            }
            Op::Derivative(a, ..) => {
                m.stats.alu += count;
                for r in a.dst..a.dst + a.comps {
                    for &l in batch.iter() {
                        wave.regs[r as usize * width + l as usize] = 0;
                    }
                }
            }
            Op::DerefAccess(a) => {
                let regs = (&mut *wave.regs, width);
                if let Err((l, f)) = m.deref_access_lanes(a, regs, active, lanes, shared) {
                    let inv = &mut lanes[l];
                    settle(inv, pos);
                    return Err(f.at(m.site(inv)));
                }
            }
            Op::Intrinsic(_) | Op::Tex { .. } => {
                for &l in batch.iter() {
                    let l = l as usize;
                    let inv = &mut lanes[l];
                    settle(inv, pos);
                    let frame = &mut inv.frames[0];
                    wave.gather(&moves[pos], l, &mut frame.regs);
                    let flow = match op {
                        Op::Intrinsic(v) => m.intrinsic(fc, frame, &mut inv.state, shared, *v),
                        Op::Tex { value, .. } => {
                            let operands = m.tex_operands(fc, frame, *value);
                            m.exec_tex(fc, frame, *value, &operands, None)
                                .map(|()| Flow::Next)
                        }
                        _ => unreachable!("a per-invocation instruction"),
                    };
                    match flow.map_err(|f| f.at(m.site(inv)))? {
                        Flow::Terminate => {
                            inv.status = Status::Terminated;
                            wave.points[l] = NOT_RUNNING;
                            leave(m, &mut wave.steps[l], inv, pos)?;
                        }
                        _ => wave.scatter(&moves[pos], l, &inv.frames[0].regs),
                    }
                }
                // Discarded lanes leave; the others stay in ascending order.
                batch.retain(|&l| lanes[l as usize].status == Status::Running);
                if batch.is_empty() {
                    return Ok(());
                }
            }
            Op::Barrier { .. } => {}
            Op::Invalid(msg) => {
                let inv = &mut lanes[first];
                settle(inv, pos);
                return Err(Fault::invalid(msg.clone()).at(m.site(inv)));
            }
            Op::Call { .. } => unreachable!("an eligible program has no calls"),
            register_op => super::exec::register_op(register_op, wave.regs, width, active),
        }
        if let Some(result) = uniform {
            wave.broadcast(result, batch);
        }
    }
    // The terminator: each lane takes its own edge, the lanes taking one edge together.
    let end = ops.len();
    for &l in batch.iter() {
        let l = l as usize;
        leave(m, &mut wave.steps[l], &mut lanes[l], end)?;
    }
    let first = batch[0] as usize;
    let fail = |m: &Machine, lanes: &mut [Invocation], f: Fault| {
        settle(&mut lanes[first], end);
        Err(f.at(m.site(&lanes[first])))
    };
    match &fc.blocks[block].term {
        Term::Return(_) => {
            for &l in batch.iter() {
                lanes[l as usize].status = Status::Done;
                wave.points[l as usize] = NOT_RUNNING;
            }
            Ok(())
        }
        &Term::Jump(target) => match enter(m, fc, block, target, batch, wave) {
            Err(f) => fail(m, lanes, f),
            Ok(()) => Ok(()),
        },
        &Term::Branch { cond, t, f } => {
            let mut taken = std::mem::take(&mut wave.taken);
            taken.clear();
            batch.retain(|&l| {
                let yes = wave.regs[cond as usize * width + l as usize] & 1 != 0;
                if yes {
                    taken.push(l);
                }
                !yes
            });
            let result = enter(m, fc, block, t, &taken, wave)
                .and_then(|()| enter(m, fc, block, f, batch, wave));
            wave.taken = taken;
            match result {
                Err(f) => fail(m, lanes, f),
                Ok(()) => Ok(()),
            }
        }
        Term::Unreachable => fail(m, lanes, Fault::invalid("reached `unreachable`".into())),
        Term::Invalid(msg) => fail(m, lanes, Fault::invalid(msg.clone())),
    }
}

/// Moves the lanes of `batch` from block `from` into block `target`: the target's phis for the
/// edge, as one parallel copy on the wave's registers (every source read before any phi is
/// written), then the lanes' blocks and points.
fn enter(
    m: &mut Machine,
    fc: &FuncCode,
    from: usize,
    target: u32,
    batch: &[u32],
    wave: &mut WaveState,
) -> Result<(), Fault> {
    if batch.is_empty() {
        return Ok(());
    }
    let width = wave.width;
    let blk = &fc.blocks[target as usize];
    if let Some(edge) = blk.phis.iter().find(|e| e.pred == from as u32) {
        let moves = edge.moves.as_ref().map_err(|m| Fault::invalid(m.clone()))?;
        let values = &mut wave.phi_values;
        values.clear();
        for &(_, src, n) in moves {
            for r in src..src + n {
                let row = &wave.regs[r as usize * width..(r as usize + 1) * width];
                values.extend(batch.iter().map(|&l| row[l as usize]));
            }
        }
        let mut next = values.iter();
        for &(dst, _, n) in moves {
            for r in dst..dst + n {
                let row = &mut wave.regs[r as usize * width..(r as usize + 1) * width];
                for (&l, &v) in batch.iter().zip(next.by_ref()) {
                    row[l as usize] = v;
                }
            }
        }
        m.stats.instructions += (moves.len() * batch.len()) as u64;
    } else if !blk.phis.is_empty() {
        return Err(Fault::invalid(
            "a successor's phis have no edge from here".into(),
        ));
    }
    let point = packed_point(blk.order, 0);
    for &l in batch {
        wave.blocks[l as usize] = target;
        wave.points[l as usize] = point;
    }
    Ok(())
}
