//! The control-flow machine: the CF program's loop, the CF stack of pushes, loop and call
//! frames, and exports. The clauses it runs (`alu`, `fetch`) know nothing of the stack: they run
//! on the active mask it keeps.
//!
//! # Control flow
//!
//! A CF stack holds push entries (the active mask at the push) and loop frames (the active
//! mask at the loop's start, the lanes that left it by LOOP_BREAK and those parked by
//! LOOP_CONTINUE). A mask restored from the stack loses the killed lanes and the broken and
//! parked lanes of every loop frame on the stack. A flow instruction's `addr` is an index into
//! the CF list; only COND 0 (always) is modelled.
//! - ALU_PUSH_BEFORE pushes, then runs its clause; ALU_POP_AFTER / ALU_POP2_AFTER run, then pop
//!   1 / 2 entries; ALU_ELSE_AFTER runs, then flips as ELSE does without jumping or popping.
//!   PUSH pushes (its address is not used); POP pops `pop_count` entries and restores the mask
//!   of the deepest one popped.
//! - JUMP: if no lane is active, pop `pop_count` entries and jump to `addr`.
//! - ELSE: the lanes of the last push that are not active become active and the active ones
//!   inactive; then if none is active, pop `pop_count` entries and jump to `addr`.
//! - LOOP_START_DX10: if no lane is active, jump to `addr` (past the LOOP_END) without
//!   entering; else push a loop frame. LOOP_END: the active and parked lanes go round (jump to
//!   `addr`, the body) if there are any; else the frame is popped and its start mask restored.
//!   LOOP_BREAK (LOOP_CONTINUE): the active lanes leave the loop (are parked until LOOP_END);
//!   then if no lane of the loop is left to run this iteration, the stack is unwound to the
//!   loop frame and execution jumps to `addr` (the LOOP_END). Popping a loop frame by a pop
//!   count, ELSE without a push, LOOP_END with pushes above the frame, and popping an empty
//!   stack are errors.
//! - CALL: if a lane is active, pushes a call frame and jumps to `addr` (a subroutine after
//!   the end of the main program); RET pops that frame and returns after the CALL with the
//!   call's mask, less the lanes killed since. RET with anything else on top of the stack, a
//!   pop count reaching a call frame, and a LOOP_BREAK or LOOP_CONTINUE with no loop frame
//!   above the innermost call frame are errors.
//! - Stack depth (the hardware's stack-size rule): after each push or loop start the stack's elements are
//!   counted, a push 1 and a loop or call frame 4 (the entry size of wave-64 chips; the
//!   call's size is an assumption, the documents at hand do not give it), plus 2 on
//!   R600/R700 and 1 on Evergreen when a push is on the stack, plus 2 always on Cayman; more
//!   than `4 · program.stack_size` elements is an error. (Mesa counts at its pushes, so a
//!   program that never pushes may declare 0.)
//! - EXPORT / EXPORT_DONE give one [`ExportRecord`] per GPR of the burst (consecutive bases),
//!   with a value for every lane that is not killed, active or not: `swizzle` picks x-w (0-3),
//!   0 (4), 1.0 (5) or 0 for a masked component (7).
//! - The program ends after a CF instruction with `end_of_program` (R600-Evergreen; Cayman
//!   ignores the bit) or at CF_END (Cayman). Running past the last CF instruction, jumping
//!   outside the program, or executing more than [`STEP_LIMIT`] CF instructions (a runaway
//!   loop) is an error. CALL_FS (a vertex shader's call of its fetch shader) does nothing:
//!   the dispatcher loads the vertex attributes into the GPRs beforehand, as the fetch shader
//!   does. Unmodelled CF instructions (LOOP_START with loop constants, CF KILL, ALU_EXT,
//!   ALU_BREAK, ALU_CONTINUE) are errors.

use super::{
    At, EmuError, ExportRecord, Machine, ONE, STEP_LIMIT, Within, bit, invalid, unsupported,
};
use crate::isa::{CLAUSE_TEMP_BASE, CfOp, Chip};
use crate::program::{Cf, CfBody, Export};
use shrew_engine::deadline;

/// Stack elements a loop frame takes (the entry size of wave-64 chips).
const LOOP_FRAME_ELEMENTS: usize = 4;

/// An entry of the CF stack.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Entry {
    /// The active mask at a push.
    Push(u64),
    /// A CALL: the active mask at the call and the CF index to return to.
    Call { active: u64, ret: usize },
    /// A loop: the active mask at its start, the lanes that broke out of it, the lanes
    /// parked by LOOP_CONTINUE until the next iteration.
    Loop {
        start: u64,
        broken: u64,
        parked: u64,
    },
}

impl Machine<'_> {
    /// Runs from the CF instruction at `self.pc` to the end of the program; with
    /// `stop_at_barriers`, only to the end of the next clause with a GROUP_BARRIER (then
    /// gives false, and `self.pc` is where to go on).
    pub(super) fn run(&mut self, stop_at_barriers: bool) -> Result<bool, EmuError> {
        let cfs = &self.program.cf;
        loop {
            let pc = self.pc;
            let cf = cfs.get(pc).ok_or(EmuError::RanOffEnd)?;
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err(EmuError::StepLimit(STEP_LIMIT));
            }
            if self.steps.is_multiple_of(deadline::CHECK_EVERY) && deadline::expired() {
                return Err(EmuError::TimeLimit);
            }
            let at = At {
                cf: pc,
                cf_op: cf.op,
                within: Within::Cf,
            };
            if cf.op.opcode(self.chip).is_none() {
                return Err(unsupported(format!("{} on {:?}", cf.op, self.chip)).at(at));
            }
            let next = self.step(&at, cf)?;
            if cf.op == CfOp::CfEnd || (cf.end_of_program && self.chip != Chip::Cayman) {
                return Ok(true);
            }
            self.pc = next.unwrap_or(pc + 1);
            if std::mem::take(&mut self.at_barrier) && stop_at_barriers {
                return Ok(false);
            }
        }
    }

    /// Executes one CF instruction; gives the CF index it jumps to, if it jumps.
    fn step(&mut self, at: &At, cf: &Cf) -> Result<Option<usize>, EmuError> {
        let body = &cf.body;
        let op = at.cf_op;
        let mismatch = || invalid(format!("{op} with a body of the wrong kind")).at(at.clone());
        match op {
            // The fetch shader a vertex shader calls first: the dispatcher has already loaded
            // the vertex attributes into the GPRs, as the fetch shader would.
            CfOp::Nop | CfOp::CfEnd | CfOp::CallFs => Ok(None),
            CfOp::Alu
            | CfOp::AluPushBefore
            | CfOp::AluPopAfter
            | CfOp::AluPop2After
            | CfOp::AluElseAfter => {
                let CfBody::Alu { kcache, groups } = body else {
                    return Err(mismatch());
                };
                if op == CfOp::AluPushBefore {
                    self.push(at, Entry::Push(self.active))?;
                }
                self.alu_clause(at, kcache, groups)?;
                match op {
                    CfOp::AluPopAfter => self.pop(at, 1)?,
                    CfOp::AluPop2After => self.pop(at, 2)?,
                    CfOp::AluElseAfter => self.flip(at)?,
                    _ => {}
                }
                Ok(None)
            }
            CfOp::Tex | CfOp::Vtx | CfOp::VtxTc | CfOp::Gds => {
                let CfBody::Fetch(fetches) = body else {
                    return Err(mismatch());
                };
                self.fetch_clause(at, fetches, op, cf.valid_pixel_mode)?;
                Ok(None)
            }
            CfOp::Export | CfOp::ExportDone => {
                let CfBody::Export(export) = body else {
                    return Err(mismatch());
                };
                self.export(at, export)?;
                Ok(None)
            }
            CfOp::MemScratch => {
                let CfBody::Export(write) = body else {
                    return Err(mismatch());
                };
                self.scratch_write(write).map_err(|w| w.at(at.clone()))?;
                Ok(None)
            }
            CfOp::MemRat => {
                let CfBody::Export(write) = body else {
                    return Err(mismatch());
                };
                self.rat_write(write, cf.valid_pixel_mode)
                    .map_err(|w| w.at(at.clone()))?;
                Ok(None)
            }
            CfOp::WaitAck => {
                self.in_flight.acknowledged = false;
                Ok(None)
            }
            CfOp::Call | CfOp::Return => {
                let &CfBody::Flow { addr, cond, .. } = body else {
                    return Err(mismatch());
                };
                if cond != 0 {
                    return Err(unsupported(format!("COND {cond} (only 0, always)")).at(at.clone()));
                }
                self.call(at, addr)
            }
            CfOp::Push
            | CfOp::Pop
            | CfOp::Jump
            | CfOp::Else
            | CfOp::LoopStartDx10
            | CfOp::LoopEnd
            | CfOp::LoopBreak
            | CfOp::LoopContinue => {
                let &CfBody::Flow {
                    addr,
                    pop_count,
                    cond,
                    ..
                } = body
                else {
                    return Err(mismatch());
                };
                if cond != 0 {
                    return Err(unsupported(format!("COND {cond} (only 0, always)")).at(at.clone()));
                }
                self.flow(at, addr, pop_count as usize)
            }
            _ => Err(unsupported(op.mnemonic()).at(at.clone())),
        }
    }

    /// Executes a stack, jump or loop instruction.
    fn flow(&mut self, at: &At, addr: u32, pop_count: usize) -> Result<Option<usize>, EmuError> {
        let len = self.program.cf.len();
        let target = || {
            if (addr as usize) < len {
                Ok(addr as usize)
            } else {
                Err(EmuError::BadAddress {
                    at: at.clone(),
                    addr,
                    len,
                })
            }
        };
        match at.cf_op {
            CfOp::Push => {
                self.push(at, Entry::Push(self.active))?;
                Ok(None)
            }
            CfOp::Pop => {
                self.pop(at, pop_count)?;
                Ok(None)
            }
            CfOp::Jump => {
                let target = target()?;
                if self.active != 0 {
                    return Ok(None);
                }
                self.pop(at, pop_count)?;
                Ok(Some(target))
            }
            CfOp::Else => {
                let target = target()?;
                self.flip(at)?;
                if self.active != 0 {
                    return Ok(None);
                }
                self.pop(at, pop_count)?;
                Ok(Some(target))
            }
            CfOp::LoopStartDx10 => {
                let target = target()?;
                if self.active == 0 {
                    return Ok(Some(target));
                }
                self.push(
                    at,
                    Entry::Loop {
                        start: self.active,
                        broken: 0,
                        parked: 0,
                    },
                )?;
                Ok(None)
            }
            CfOp::LoopEnd => {
                let target = target()?;
                let Some(&Entry::Loop { start, parked, .. }) = self.stack.last() else {
                    return Err(
                        invalid("LOOP_END without its loop frame on top of the stack")
                            .at(at.clone()),
                    );
                };
                let again = (self.active | parked) & self.alive();
                if again != 0 {
                    self.active = again;
                    if let Some(Entry::Loop { parked, .. }) = self.stack.last_mut() {
                        *parked = 0;
                    }
                    return Ok(Some(target));
                }
                self.stack.pop();
                self.active = self.restore(start);
                Ok(None)
            }
            CfOp::LoopBreak | CfOp::LoopContinue => {
                let target = target()?;
                // A loop frame above the innermost call frame: a subroutine leaves no loop of
                // its caller.
                let frame = self
                    .stack
                    .iter()
                    .rposition(|e| matches!(e, Entry::Loop { .. } | Entry::Call { .. }))
                    .filter(|&f| matches!(self.stack[f], Entry::Loop { .. }))
                    .ok_or_else(|| invalid("outside a loop").at(at.clone()))?;
                let active = self.active;
                let alive = self.alive();
                let Entry::Loop {
                    start,
                    broken,
                    parked,
                } = &mut self.stack[frame]
                else {
                    return Err(invalid("outside a loop").at(at.clone()));
                };
                if at.cf_op == CfOp::LoopBreak {
                    *broken |= active;
                } else {
                    *parked |= active;
                }
                let left = *start & alive & !*broken & !*parked;
                self.active = 0;
                if left != 0 {
                    return Ok(None);
                }
                self.stack.truncate(frame + 1);
                Ok(Some(target))
            }
            _ => Err(unsupported(at.cf_op.mnemonic()).at(at.clone())),
        }
    }

    /// CALL: when a lane is active, pushes a call frame and jumps to `addr`. RET: pops the
    /// call frame on top of the stack, restores its mask and returns after the CALL.
    fn call(&mut self, at: &At, addr: u32) -> Result<Option<usize>, EmuError> {
        if at.cf_op == CfOp::Return {
            let Some(&Entry::Call { active, ret }) = self.stack.last() else {
                return Err(
                    invalid("RET without its call frame on top of the stack").at(at.clone())
                );
            };
            self.stack.pop();
            self.active = self.restore(active);
            return Ok(Some(ret));
        }
        let len = self.program.cf.len();
        if addr as usize >= len {
            return Err(EmuError::BadAddress {
                at: at.clone(),
                addr,
                len,
            });
        }
        if self.active == 0 {
            return Ok(None);
        }
        self.push(
            at,
            Entry::Call {
                active: self.active,
                ret: at.cf + 1,
            },
        )?;
        Ok(Some(addr as usize))
    }

    /// Lanes that exist and are not killed.
    pub(super) fn alive(&self) -> u64 {
        self.exists & !self.killed
    }

    /// `mask` as restored from the stack: without killed lanes, nor the lanes that left or
    /// are parked in a loop on the stack.
    fn restore(&self, mask: u64) -> u64 {
        let out = self.stack.iter().fold(0, |m, e| match *e {
            Entry::Loop { broken, parked, .. } => m | broken | parked,
            Entry::Push(_) | Entry::Call { .. } => m,
        });
        mask & self.alive() & !out
    }

    fn push(&mut self, at: &At, entry: Entry) -> Result<(), EmuError> {
        self.stack.push(entry);
        let pushes = self
            .stack
            .iter()
            .filter(|e| matches!(e, Entry::Push(_)))
            .count();
        let loops = self.stack.len() - pushes;
        let extra = match self.chip {
            Chip::R600 | Chip::R700 if pushes > 0 => 2,
            Chip::Evergreen if pushes > 0 => 1,
            Chip::Cayman => 2,
            _ => 0,
        };
        let needed = (loops * LOOP_FRAME_ELEMENTS + pushes + extra).div_ceil(4);
        if needed > self.program.stack_size as usize {
            return Err(EmuError::StackOverflow {
                at: at.clone(),
                needed,
                declared: self.program.stack_size,
            });
        }
        Ok(())
    }

    /// Pops `count` push entries and restores the deepest one's mask.
    fn pop(&mut self, at: &At, count: usize) -> Result<(), EmuError> {
        let mut mask = None;
        for _ in 0..count {
            match self.stack.pop() {
                Some(Entry::Push(m)) => mask = Some(m),
                Some(Entry::Loop { .. } | Entry::Call { .. }) => {
                    return Err(invalid("a pop count reaches a loop or call frame").at(at.clone()));
                }
                None => return Err(invalid("popping an empty stack").at(at.clone())),
            }
        }
        if let Some(mask) = mask {
            self.active = self.restore(mask);
        }
        Ok(())
    }

    /// ELSE's flip: the lanes of the last push that are not active become active, the
    /// active ones inactive.
    fn flip(&mut self, at: &At) -> Result<(), EmuError> {
        let Some(&Entry::Push(mask)) = self.stack.last() else {
            return Err(invalid("ELSE without a push on top of the stack").at(at.clone()));
        };
        self.active = self.restore(mask & !self.active);
        Ok(())
    }

    fn export(&mut self, at: &At, e: &Export) -> Result<(), EmuError> {
        let bad = |why: String| Err(invalid(why).at(at.clone()));
        if e.burst == 0 {
            return bad("an export of a burst of 0 GPRs".into());
        }
        if let Some(&s) = e.swizzle.iter().find(|&&s| s == 6 || s > 7) {
            return bad(format!("swizzle select {s}"));
        }
        for k in 0..e.burst {
            let gpr = e.gpr as usize + k as usize;
            if gpr >= CLAUSE_TEMP_BASE as usize {
                return bad(format!("exports R{gpr}, not a GPR of the program"));
            }
            let Some(base) = e.base.checked_add(k as u16) else {
                return bad("the burst's array base overflows".into());
            };
            let values = (0..self.wave.lanes)
                .map(|lane| {
                    (!bit(self.killed, lane)).then(|| {
                        let r = self.wave.gprs[lane][gpr];
                        e.swizzle.map(|s| match s {
                            0..=3 => r[s as usize],
                            5 => ONE,
                            _ => 0,
                        })
                    })
                })
                .collect();
            self.exports.push(ExportRecord {
                kind: e.kind,
                base,
                values,
            });
        }
        Ok(())
    }
}
