//! The local data share (Evergreen, Cayman): the memory a compute workgroup's wavefronts
//! share, its operations in ALU clauses, their output queue, and GROUP_BARRIER.
//!
//! # LDS operations
//!
//! An LDS operation (an LDS_IDX_OP word, [`flag::LDS`]) runs for the lanes its instruction
//! runs on, in lane order, on [`Wavefront::lds`] (dwords): src0 is a byte address, which must
//! be a multiple of 4; an address past the memory reads 0 and writes nothing. LDS_WRITE stores
//! src1; the atomic `_RET` operations store `old op src1` (LDS_CMP_XCHG_RET: src2 where the
//! old dword equals src1), with the interpreter's arithmetic (`atomic_result`); LDS_READ_RET
//! only reads. A `_RET` operation queues, for each lane, the dword as it was before the
//! operation on LDS output queue A. The operations write no GPR and no PV.
//!
//! # The output queue
//!
//! A group reading LDS_OQ_A_POP (221) takes the entry at the queue's front before it runs: its
//! reads of the select give each lane's dword of that entry, for the lanes the entry's
//! operation ran on (another lane's read is an error). A group pops at most once, and reading
//! an empty queue is an error. The queue does not outlive its clause: entries left at the end
//! of a clause are an error.
//!
//! # Barriers
//!
//! GROUP_BARRIER must be the last instruction group of its clause. After that clause the
//! wavefront stops at the barrier ([`super::run_until_barrier`]) until the dispatcher has run
//! every other wavefront of its workgroup to the barrier or to its end; [`super::run`] runs a
//! lone wavefront through its barriers.
//!
//! [`Wavefront::lds`]: super::Wavefront::lds

use super::{MAX_LANES, Machine, Why, invalid, lanes};
use crate::isa::{AluOpcode, flag, sel};
use crate::program::{AluInst, Group};
use shrew_engine::interp::atomic_result;
use shrew_engine::ops::AtomicOp;
use std::collections::VecDeque;

/// One entry of LDS output queue A: each lane's dword, and the lanes that computed one.
#[derive(Clone, Debug)]
pub(super) struct QueueEntry {
    pub values: [u32; MAX_LANES],
    pub lanes: u64,
}

/// The output queue of an ALU clause, and the entry the current group popped.
#[derive(Default)]
pub(super) struct Queue {
    pub entries: VecDeque<QueueEntry>,
    pub popped: Option<QueueEntry>,
}

/// The atomic operation of an LDS `_RET` operation, `None` for LDS_WRITE and LDS_READ_RET.
fn atomic_op(op: AluOpcode) -> Option<AtomicOp> {
    Some(match op {
        AluOpcode::LdsAddRet => AtomicOp::Iadd,
        AluOpcode::LdsMinIntRet => AtomicOp::Imin,
        AluOpcode::LdsMaxIntRet => AtomicOp::Imax,
        AluOpcode::LdsMinUintRet => AtomicOp::Umin,
        AluOpcode::LdsMaxUintRet => AtomicOp::Umax,
        AluOpcode::LdsAndRet => AtomicOp::Iand,
        AluOpcode::LdsOrRet => AtomicOp::Ior,
        AluOpcode::LdsXorRet => AtomicOp::Ixor,
        AluOpcode::LdsXchgRet => AtomicOp::Xchg,
        AluOpcode::LdsCmpXchgRet => AtomicOp::Cmpxchg,
        _ => return None,
    })
}

impl Queue {
    /// Pops the front entry for a group that reads LDS_OQ_A_POP.
    pub fn pop_for(&mut self, group: &Group) -> Result<(), Why> {
        let pops = (group.insts.iter())
            .filter(|i| i.srcs().iter().any(|s| s.sel == sel::LDS_OQ_A_POP))
            .count();
        self.popped = None;
        match pops {
            0 => Ok(()),
            1 => {
                let entry = self.entries.pop_front().ok_or_else(|| {
                    invalid("reads LDS_OQ_A_POP, but LDS output queue A is empty")
                })?;
                self.popped = Some(entry);
                Ok(())
            }
            _ => Err(invalid(
                "more than one instruction of the group pops LDS_OQ_A_POP",
            )),
        }
    }

    /// The popped dword of `lane`.
    pub fn read(&self, lane: usize) -> Result<u32, Why> {
        match &self.popped {
            Some(e) if e.lanes >> lane & 1 != 0 => Ok(e.values[lane]),
            _ => Err(invalid(format!(
                "reads LDS_OQ_A_POP for lane {lane}, which the popped entry has no dword for"
            ))),
        }
    }

    /// Entries left at the end of the clause are an error.
    pub fn check_empty(&self) -> Result<(), Why> {
        match self.entries.len() {
            0 => Ok(()),
            n => Err(invalid(format!(
                "{n} entries left on LDS output queue A at the end of the clause"
            ))),
        }
    }
}

impl Machine<'_> {
    /// Runs LDS operation `inst` for the lanes of `exec`; `read(lane, k)` reads its source k.
    pub(super) fn lds_op(
        &mut self,
        inst: &AluInst,
        exec: u64,
        queue: &mut VecDeque<QueueEntry>,
        read: impl Fn(&Self, usize, usize) -> Result<u32, Why>,
    ) -> Result<(), Why> {
        if inst.dst.write || inst.dst.clamp || inst.omod != 0 {
            return Err(invalid(
                "an LDS operation with a destination or output modifier",
            ));
        }
        if inst.srcs().iter().any(|s| s.neg || s.abs) {
            return Err(invalid("an LDS operation with a source modifier"));
        }
        let op = inst.op;
        let mut entry = QueueEntry {
            values: [0; MAX_LANES],
            lanes: exec,
        };
        for lane in lanes(exec) {
            let s: Vec<u32> = (0..op.nsrc())
                .map(|k| read(self, lane, k))
                .collect::<Result<_, _>>()?;
            let address = s[0];
            if !address.is_multiple_of(4) {
                return Err(invalid(format!(
                    "LDS address {address} is not a multiple of 4 (lane {lane})"
                )));
            }
            let index = (address / 4) as usize;
            let old = self.wave.lds.get(index).copied().unwrap_or(0);
            let new = match (op, atomic_op(op)) {
                (AluOpcode::LdsWrite, _) => Some(s[1]),
                (_, Some(atomic)) => {
                    let swap = s.get(2).map(|&v| v.into());
                    atomic_result(atomic, 32, old.into(), s[1].into(), swap).map(|v| v as u32)
                }
                _ => None,
            };
            if let (Some(new), Some(slot)) = (new, self.wave.lds.get_mut(index)) {
                *slot = new;
            }
            entry.values[lane] = old;
        }
        if op.has(flag::RET) {
            queue.push_back(entry);
        }
        Ok(())
    }
}
