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
//! # Same results as the reference
//!
//! Every instruction is executed by the reference interpreter's own code on the invocation's own
//! registers and memory; only the order of work across invocations differs. That order is
//! invisible when no invocation can see another's writes, so [`eligible`] takes exactly the
//! programs without calls and without writes or atomics to memory invocations share (SSBOs,
//! images, shared memory). An error of any kind ends the wide run, and the caller runs the
//! reference instead, so errors name the same invocation and instruction as the reference's.

use super::exec::{Flow, Invocation, Machine, Status};
use super::launch;
use super::memory::Storage;
use super::program::{Op, Program};
use super::{Fault, InterpError};
use crate::deadline;
use crate::ir::{InstKind, Stage};
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

/// Runs a wave to its end: `lanes` are the invocations, `groups` the ranges of them that
/// synchronise together (quads, workgroups, or one invocation each).
pub(crate) fn run_wave(
    m: &mut Machine,
    lanes: &mut [Invocation],
    groups: &[Range<usize>],
    shared: &mut [u8],
) -> Result<(), InterpError> {
    let mut batch = Vec::with_capacity(lanes.len());
    loop {
        while next_batch(m.prog, lanes, &mut batch) {
            run_batch(m, lanes, &mut batch, shared)?;
        }
        let mut resolved = false;
        for group in groups {
            let members = &mut lanes[group.clone()];
            let waiting: Vec<usize> = (0..members.len())
                .filter(|&i| members[i].status == Status::Waiting)
                .collect();
            let Some(first) = waiting.iter().map(|&i| point(m.prog, &members[i])).min() else {
                continue;
            };
            let parts: Vec<usize> = waiting
                .iter()
                .copied()
                .filter(|&i| point(m.prog, &members[i]) == first)
                .collect();
            launch::resolve(m, members, &parts, waiting.len())?;
            resolved = true;
        }
        if !resolved {
            return Ok(());
        }
    }
}

/// Where an invocation stands, in the order the wave runs points: the block's scheduling order
/// and the position in the block (an eligible program has one frame).
fn point(prog: &Program, inv: &Invocation) -> (u32, u32) {
    let frame = &inv.frames[0];
    let order = prog.funcs[frame.func as usize].blocks[frame.block as usize].order;
    (order, frame.pos)
}

/// Fills `batch` with the running invocations at the earliest point; false when none runs.
fn next_batch(prog: &Program, lanes: &[Invocation], batch: &mut Vec<usize>) -> bool {
    batch.clear();
    let mut first = (u32::MAX, u32::MAX);
    for (i, inv) in lanes.iter().enumerate() {
        if inv.status != Status::Running {
            continue;
        }
        let at = point(prog, inv);
        if at < first {
            first = at;
            batch.clear();
        }
        if at == first {
            batch.push(i);
        }
    }
    !batch.is_empty()
}

/// Runs the invocations of `batch`, all at the same point, to the end of their block or the next
/// sync point.
fn run_batch(
    m: &mut Machine,
    lanes: &mut [Invocation],
    batch: &mut Vec<usize>,
    shared: &mut [u8],
) -> Result<(), InterpError> {
    let prog = m.prog;
    let fragment = prog.shader.stage == Stage::Fragment;
    let limit = m.launch.step_limit;
    let (func, block, start) = {
        let f = &lanes[batch[0]].frames[0];
        (f.func as usize, f.block as usize, f.pos as usize)
    };
    let code = &prog.funcs[func];
    let ops = &code.blocks[block].ops;
    let before = m.stats.instructions;
    if before / deadline::CHECK_EVERY != (before + ops.len() as u64) / deadline::CHECK_EVERY
        && deadline::expired()
    {
        return Err(InterpError::TimeLimit {
            site: m.site(&lanes[batch[0]]),
        });
    }
    for pos in start..=ops.len() {
        for &l in batch.iter() {
            let inv = &mut lanes[l];
            inv.steps += 1;
            if inv.steps > limit {
                return Err(InterpError::StepLimit {
                    site: m.site(inv),
                    limit,
                });
            }
        }
        let Some(op) = ops.get(pos) else {
            // The terminator: every invocation takes its own edge.
            for &l in batch.iter() {
                let inv = &mut lanes[l];
                let flow = m.terminator(&mut inv.frames);
                match flow.map_err(|f| f.at(m.site(inv)))? {
                    Flow::Next => {}
                    Flow::Done => inv.status = Status::Done,
                    Flow::Sync | Flow::Terminate => {
                        unreachable!("terminators neither wait nor kill")
                    }
                }
            }
            return Ok(());
        };
        let count = batch.len() as u64;
        m.stats.instructions += count;
        let waits = match op {
            Op::Derivative(..) => fragment,
            Op::Barrier { sync } => *sync,
            Op::Tex { implicit, .. } => *implicit,
            _ => false,
        };
        if waits {
            for &l in batch.iter() {
                lanes[l].frames[0].pos = pos as u32;
                lanes[l].status = Status::Waiting;
            }
            return Ok(());
        }
        match op {
            Op::Alu(a) => {
                m.stats.alu += count;
                for &l in batch.iter() {
                    super::exec::eval_alu(a, &mut lanes[l].frames[0].regs);
                }
            }
            Op::Derivative(a, ..) => {
                m.stats.alu += count;
                let dst = a.dst as usize..(a.dst + a.comps) as usize;
                for &l in batch.iter() {
                    lanes[l].frames[0].regs[dst.clone()].fill(0);
                }
            }
            Op::Intrinsic(v) => {
                let mut k = 0;
                while k < batch.len() {
                    let inv = &mut lanes[batch[k]];
                    inv.frames[0].pos = pos as u32;
                    match m.intrinsic(code, &mut inv.frames[0], &mut inv.state, shared, *v) {
                        Ok(Flow::Terminate) => {
                            inv.status = Status::Terminated;
                            batch.remove(k);
                        }
                        Ok(_) => k += 1,
                        Err(f) => return Err(f.at(m.site(inv))),
                    }
                }
                if batch.is_empty() {
                    return Ok(());
                }
            }
            Op::DerefAccess(a) => {
                for &l in batch.iter() {
                    let inv = &mut lanes[l];
                    let done = m.deref_access(a, &mut inv.frames[0].regs, &mut inv.state, shared);
                    if let Err(f) = done {
                        inv.frames[0].pos = pos as u32;
                        return Err(f.at(m.site(inv)));
                    }
                }
            }
            Op::Tex { value, .. } => {
                for &l in batch.iter() {
                    let inv = &mut lanes[l];
                    inv.frames[0].pos = pos as u32;
                    let done = m.exec_tex(code, &mut inv.frames[0], *value, None);
                    done.map_err(|f| f.at(m.site(inv)))?;
                }
            }
            Op::Barrier { .. } => {}
            Op::Invalid(msg) => {
                let inv = &mut lanes[batch[0]];
                inv.frames[0].pos = pos as u32;
                return Err(Fault::invalid(msg.clone()).at(m.site(inv)));
            }
            Op::Call { .. } => unreachable!("an eligible program has no calls"),
            register_op => {
                for &l in batch.iter() {
                    super::exec::register_op(register_op, &mut lanes[l].frames[0].regs);
                }
            }
        }
    }
    unreachable!("the loop returns at the terminator")
}
