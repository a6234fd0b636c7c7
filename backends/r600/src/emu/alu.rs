//! ALU clauses: instruction groups with their sources (GPRs, kcache constants, literals, PV/PS,
//! AR-relative operands, interpolation parameters), writes, predicates and kills. The
//! arithmetic of each operation is `arith`'s.
//!
//! # ALU clauses
//!
//! - At a clause's start every predicate bit is 0 and the clause temporaries (GPRs 124-127)
//!   are undefined: reading a component a lane has not written in this clause is an error, as
//!   is reading one in a fetch clause or an export. Writing one from a fetch is an error too.
//! - An instruction runs for the lanes that are active, filtered by its `pred_sel` (Zero: where
//!   the predicate bit is 0, One: where it is 1). A group reads every source of every
//!   instruction before any instruction writes. Each instruction's slot is
//!   [`Group::slots`]'s; a group that does not fit its slots is an error.
//! - PV.c is the result of vector slot c of the previous group of the clause, PS that of its
//!   trans slot (R600-Evergreen only), for the lanes that ran that instruction; reading one a
//!   lane did not compute (the first group, an empty slot, another predicate) is an error.
//!   Results reach PV/PS after the output modifier and clamp, whether or not the write mask
//!   is set. ALU_NOP leaves its slot empty.
//! - Sources: GPRs (sel < 128); kcache sets (KC0 128-159, KC1 160-191, KC2 256-287, KC3
//!   288-319): constant `16·line + index` of the set's bank, the index below `16·lines` of the
//!   clause's `kcache[set]`; inline constants 248-252; the literal of the group selected by the
//!   channel (253); PV (254); PS (255); interpolation parameters (448 + n) for INTERP
//!   operations only. A constant buffer is bytes: constant `n` is the 16 bytes at `16·n`,
//!   little-endian dwords; bytes past its end (or of a bank not given) read as zero. `abs`
//!   clears then `neg` flips the sign bit of the raw value, whatever the operation (abs only
//!   on two-source operations). Relative addressing is not modelled.
//! - Destinations: operations with a float result apply the output modifier (×2, ×4, ÷2), then
//!   clamp to [0, 1] (NaN and −0 become +0); an output modifier or clamp on an integer result
//!   is an error, as is an output modifier or `abs` on a three-source operation (they have no
//!   such field). Two-source operations write when `write` is set, three-source ones always.
//!   Two instructions of a group writing one GPR component is an error.
//! - Predicate sets (PRED_SETcc, float, signed and unsigned) give 0.0 where the condition holds
//!   and 1.0 where it fails; UPDATE_PRED sets the predicate bit to the condition;
//!   UPDATE_EXEC_MASK deactivates the lanes where it fails, for the rest of the clause and
//!   after. KILLcc kills the lanes where `src0 cc src1` holds and gives 1.0 where it holds,
//!   0.0 elsewhere. These effects, like every write, land after the group has read its
//!   sources; a group holds at most one predicate set or kill. The predicate-stack
//!   operations (PRED_SET*_PUSH, PRED_SET_INV/POP/CLR/RESTORE) are not modelled.
//!
//! # Interpolation (Evergreen, Cayman)
//!
//! INTERP_XY and INTERP_ZW fill the four vector slots. In each slot pair (x, y) and (z, w) the
//! even slot's src0 is j and the odd slot's src0 is i (Mesa's `INTERP_ZW __.x, R0.y, Param0.x`
//! then `__.y, R0.x, Param0.x`: R0.x = i, R0.y = j); each slot's src1 selects the parameter
//! n (448 + n) and its channel is ignored. Slot c gives `p0 + i·p10 + j·p20` of component c of
//! parameter n ([`Env::params`]), in f32 from left to right, each operation rounded (as
//! [`crate::dispatch`] computes the interpreter's inputs from the same numbers): INTERP_XY in
//! slots x, y from the (x, y) pair, INTERP_ZW in slots z, w from the (z, w) pair; its other
//! two slots give 0 (and read nothing). INTERP_LOAD_P0/P10/P20 `dst, ParamN.c` give p0, p10
//! or p20 of component c.
//!
//! # Double precision (Evergreen, Cayman)
//!
//! A double is a pair of words, the low one first. A double-precision operation (ADD_64,
//! MUL_64, FMA_64, MIN_64, MAX_64, SETE/SETNE/SETGT/SETGE_64, FLT32_TO_FLT64,
//! FLT64_TO_FLT32) fills a pair of vector slots, x and y or z and w, with one opcode: operand
//! j is the double whose low word is src j of the odd slot and whose high word is src j of the
//! even slot (modifiers apply to each word as to any source: `neg` on the high word negates the
//! double). The even slot gives the result's low word, the odd slot its high word; a compare
//! gives its boolean (all ones or zero) in both, FLT64_TO_FLT32 the float in the even slot and
//! 0 in the odd one, and FLT32_TO_FLT64 converts the float the even slot's src0 reads. Results
//! are IEEE with denormals (MIN_64 and MAX_64 as the interpreter's `fmin` and `fmax`); an output
//! modifier or clamp on them is an error. On Cayman MUL_64 and FMA_64 fill all four vector
//! slots: each pair computes its own.
//!
//! [`Env::params`]: super::Env::params

use super::arith::{eval_op, holds, is_pred_set, max_legacy, mul_legacy};
use super::lds::Queue;
use super::{
    At, EmuError, MAX_LANES, Machine, Why, Within, bit, dword, invalid, lanes, unsupported,
};
use crate::isa::{AluOpcode, CLAUSE_TEMP_BASE, Chip, MAX_LITERALS, Slots, flag, sel};
use crate::program::{AluInst, Group, Kcache, PredSel, Slot, Src};
use shrew_engine::meter;
use shrew_engine::ops::eval;

const CHANS: [char; 4] = ['x', 'y', 'z', 'w'];

/// What an ALU clause keeps from group to group.
struct Clause<'c> {
    kcache: &'c [Kcache],
    /// The lanes whose predicate bit is 1.
    pred: u64,
    /// Per lane, the previous group's results by slot (x, y, z, w, t).
    pv: Vec<[u32; 5]>,
    /// Per slot, the lanes that computed the previous group's result.
    pv_lanes: [u64; 5],
    /// Per clause-temporary component (`4·(gpr − 124) + chan`), the lanes that wrote it.
    temps: [u64; 16],
    /// Per lane, the address register AR.x a MOVA_INT of the clause loaded.
    ar: Vec<i32>,
    /// The lanes whose AR.x a MOVA_INT of an earlier group of the clause loaded: AR does not
    /// outlive its clause, and a group cannot read what it loads.
    ar_lanes: u64,
    /// The previous group wrote a register at a relative address (on R600 the next group must
    /// be a NOP).
    relative_write: bool,
    /// LDS output queue A.
    queue: Queue,
}

/// The GPR `base + AR.x` of `lane`: AR must have been loaded in an earlier group of the clause,
/// and the address must be a GPR (not a clause temporary).
fn relative_gpr(clause: &Clause, base: usize, lane: usize) -> Result<usize, Why> {
    if !bit(clause.ar_lanes, lane) {
        return Err(invalid(format!(
            "a relative operand, but no earlier group of the clause loaded AR.x for lane {lane}"
        )));
    }
    let gpr = base as i64 + i64::from(clause.ar[lane]);
    if !(0..i64::from(CLAUSE_TEMP_BASE)).contains(&gpr) {
        return Err(invalid(format!(
            "relative address R{gpr} (R{base} + AR.x) outside the GPRs (lane {lane})"
        )));
    }
    Ok(gpr as usize)
}

/// The side effects of a group, applied after its writes.
#[derive(Default)]
struct Effects {
    /// Lanes whose predicate bit is updated, and its new value.
    pred_lanes: u64,
    pred_values: u64,
    /// Lanes that leave the active mask.
    deactivate: u64,
    /// Lanes killed.
    kill: u64,
}

impl Machine<'_> {
    pub(super) fn alu_clause(
        &mut self,
        at: &At,
        kcache: &[Kcache],
        groups: &[Group],
    ) -> Result<(), EmuError> {
        if kcache.len() > self.chip.kcache_sets() {
            return Err(invalid(format!(
                "{} kcache sets locked, {:?} has {}",
                kcache.len(),
                self.chip,
                self.chip.kcache_sets()
            ))
            .at(at.clone()));
        }
        if let Some(k) = kcache.iter().find(|k| !(1..=2).contains(&k.lines)) {
            return Err(invalid(format!("a kcache set of {} lines", k.lines)).at(at.clone()));
        }
        let mut clause = Clause {
            kcache,
            pred: 0,
            pv: vec![[0; 5]; self.wave.lanes],
            pv_lanes: [0; 5],
            temps: [0; 16],
            ar: vec![0; self.wave.lanes],
            ar_lanes: 0,
            relative_write: false,
            queue: Queue::default(),
        };
        let barrier = |group: &Group| group.insts.iter().any(|i| i.op == AluOpcode::GroupBarrier);
        if let Some(g) = (groups.iter().rev().skip(1)).position(barrier) {
            let g = groups.len() - 2 - g;
            return Err(invalid("GROUP_BARRIER before the last group of its clause")
                .at(at.within(Within::Group(g))));
        }
        for (g, group) in groups.iter().enumerate() {
            self.group(at, g, group, &mut clause)?;
        }
        clause.queue.check_empty().map_err(|w| w.at(at.clone()))?;
        self.at_barrier = groups.last().is_some_and(barrier);
        Ok(())
    }

    /// Checks what can be checked of an instruction before it runs.
    fn check(&self, inst: &AluInst) -> Result<(), Why> {
        let op = inst.op;
        if op.opcode(self.chip).is_none() {
            return Err(unsupported(format!("{op} on {:?}", self.chip)));
        }
        let relative = inst.dst.rel || inst.srcs().iter().any(|s| s.rel);
        if relative && inst.index_mode != 0 {
            return Err(unsupported(format!(
                "index mode {} (only AR.x is modelled)",
                inst.index_mode
            )));
        }
        if inst.srcs().iter().any(|s| s.rel && s.sel > 127) {
            return Err(unsupported("a relative source outside the GPRs"));
        }
        if op.has(flag::MOVA) {
            if op != AluOpcode::MovaInt {
                return Err(unsupported(format!("{op} (only MOVA_INT is modelled)")));
            }
            if inst.dst.write || relative {
                return Err(unsupported(
                    "a MOVA_INT that writes a GPR or has a relative operand",
                ));
            }
            if self.chip == Chip::Cayman && inst.dst.gpr != 0 {
                return Err(unsupported(format!(
                    "MOVA_INT into destination {} on Cayman (only AR_X, 0, is modelled)",
                    inst.dst.gpr
                )));
            }
        }
        if inst.dst.gpr >= 128 || inst.dst.chan > 3 {
            return Err(invalid(format!(
                "destination R{}.{} outside the register file",
                inst.dst.gpr, inst.dst.chan
            )));
        }
        if let Some(s) = inst.srcs().iter().find(|s| s.chan > 3) {
            return Err(invalid(format!("source channel {}", s.chan)));
        }
        if inst.omod > 3 {
            return Err(invalid(format!("output modifier {}", inst.omod)));
        }
        if op.is_op3() && (inst.omod != 0 || inst.srcs().iter().any(|s| s.abs)) {
            return Err(invalid(
                "an output modifier or abs on a three-source instruction",
            ));
        }
        if op.has(flag::INT_DST | flag::UINT_DST) && (inst.omod != 0 || inst.dst.clamp) {
            return Err(invalid("an output modifier or clamp on an integer result"));
        }
        if (inst.update_pred || inst.update_exec_mask) && !is_pred_set(op) {
            return Err(invalid(
                "UPDATE_PRED or UPDATE_EXEC_MASK on an instruction that sets no predicate",
            ));
        }
        Ok(())
    }

    /// Runs group `g` of an ALU clause.
    fn group(
        &mut self,
        at: &At,
        g: usize,
        group: &Group,
        clause: &mut Clause,
    ) -> Result<(), EmuError> {
        let at_group = at.within(Within::Group(g));
        let at_inst = |i: usize| {
            at.within(Within::Inst {
                group: g,
                inst: i,
                op: group.insts[i].op,
            })
        };
        for (i, inst) in group.insts.iter().enumerate() {
            self.check(inst).map_err(|w| w.at(at_inst(i)))?;
        }
        let slots = group.slots(self.chip).ok_or_else(|| {
            invalid("the instructions do not fit the group's slots").at(at_group.clone())
        })?;
        if group.literals.len() > MAX_LITERALS {
            return Err(invalid(format!("{} literals", group.literals.len())).at(at_group));
        }
        let once = group
            .insts
            .iter()
            .filter(|i| i.op.has(flag::PRED | flag::PRED_PUSH | flag::KILL))
            .count();
        if once > 1 {
            return Err(invalid("more than one predicate set or kill in a group").at(at_group));
        }
        if group.insts.iter().filter(|i| i.op.has(flag::LDS)).count() > 1 {
            return Err(invalid("more than one LDS operation in a group").at(at_group));
        }
        clause
            .queue
            .pop_for(group)
            .map_err(|w| w.at(at_group.clone()))?;
        let relative = |i: &AluInst| i.dst.rel || i.srcs().iter().any(|s| s.rel);
        let loads_ar = group.insts.iter().any(|i| i.op.has(flag::MOVA));
        if loads_ar && group.insts.iter().any(relative) {
            return Err(
                invalid("a MOVA_INT and a relative operand in one group").at(at_group.clone())
            );
        }
        if self.chip == Chip::R600
            && clause.relative_write
            && group.insts.iter().any(|i| i.op != AluOpcode::AluNop)
        {
            return Err(
                invalid("on R600 the group after a relative write must be a NOP").at(at_group),
            );
        }
        // A group that fits the slots has at most five instructions.
        let mut exec = [0u64; 5];
        for (e, inst) in exec.iter_mut().zip(&group.insts) {
            *e = self.active
                & match inst.pred_sel {
                    PredSel::Off => u64::MAX,
                    PredSel::Zero => !clause.pred,
                    PredSel::One => clause.pred,
                };
        }
        // Every mask is within the active lanes.
        meter::add(exec.iter().map(|e| e.count_ones() as u64).sum());
        // Every result before any write.
        let mut results: [Option<[u32; MAX_LANES]>; 5] = [None; 5];
        let mut effects = Effects::default();
        for i in 0..group.insts.len() {
            if results[i].is_some() {
                continue;
            }
            let inst = &group.insts[i];
            match inst.op {
                AluOpcode::Dot4
                | AluOpcode::Dot4Ieee
                | AluOpcode::Max4
                | AluOpcode::InterpXy
                | AluOpcode::InterpZw => {
                    let members =
                        four_slots(group, &slots, inst.op).map_err(|w| w.at(at_inst(i)))?;
                    let values = self
                        .four_slot_op(clause, group, members, exec[i])
                        .map_err(|w| w.at(at_inst(i)))?;
                    for (m, v) in members.into_iter().zip(values) {
                        results[m] = Some(v);
                    }
                }
                op if op.has(flag::F64) => {
                    let pairs =
                        pair_slots(group, &slots, i, self.chip).map_err(|w| w.at(at_inst(i)))?;
                    for [even, odd] in pairs {
                        let [low, high] = self
                            .pair_op(clause, group, [even, odd], exec[even])
                            .map_err(|w| w.at(at_inst(even)))?;
                        results[even] = Some(low);
                        results[odd] = Some(high);
                    }
                }
                AluOpcode::AluNop | AluOpcode::GroupBarrier => {}
                op if op.has(flag::LDS) => {
                    let mut entries = std::mem::take(&mut clause.queue.entries);
                    let read = |m: &Self, lane, k| m.read(clause, group, lane, &inst.srcs()[k]);
                    let ran = self.lds_op(inst, exec[i], &mut entries, read);
                    clause.queue.entries = entries;
                    ran.map_err(|w| w.at(at_inst(i)))?;
                }
                _ => {
                    let values = self
                        .one_slot_op(clause, group, inst, exec[i], &mut effects)
                        .map_err(|w| w.at(at_inst(i)))?;
                    results[i] = Some(values);
                }
            }
        }
        // Writes, PV/PS, then the side effects.
        let mut pv_lanes = [0u64; 5];
        // Per channel, the GPRs the group writes.
        let mut written = [0u128; 4];
        let mut ar_loaded = 0u64;
        for (i, inst) in group.insts.iter().enumerate() {
            let Some(values) = &results[i] else {
                continue;
            };
            let slot = slots[i] as usize;
            pv_lanes[slot] = exec[i];
            if inst.op.has(flag::MOVA) {
                for lane in lanes(exec[i]) {
                    clause.ar[lane] = values[lane] as i32;
                }
                ar_loaded |= exec[i];
            }
            let writes = inst.op.is_op3() || inst.dst.write;
            let (gpr, chan) = (inst.dst.gpr as usize, inst.dst.chan as usize);
            if writes && !inst.dst.rel {
                if written[chan] >> gpr & 1 != 0 {
                    return Err(invalid(format!(
                        "R{gpr}.{} is written twice in the group",
                        CHANS[chan]
                    ))
                    .at(at_inst(i)));
                }
                written[chan] |= 1 << gpr;
                if gpr >= CLAUSE_TEMP_BASE as usize {
                    clause.temps[(gpr - CLAUSE_TEMP_BASE as usize) * 4 + chan] |= exec[i];
                }
            }
            for lane in lanes(exec[i]) {
                let v = output(inst, values[lane]);
                clause.pv[lane][slot] = v;
                if writes {
                    let gpr = if inst.dst.rel {
                        relative_gpr(clause, gpr, lane).map_err(|w| w.at(at_inst(i)))?
                    } else {
                        gpr
                    };
                    self.wave.gprs[lane][gpr][chan] = v;
                    self.wave.written |= 1 << gpr;
                }
            }
        }
        clause.pv_lanes = pv_lanes;
        clause.ar_lanes |= ar_loaded;
        clause.relative_write = group.insts.iter().any(|i| i.dst.rel);
        clause.pred = clause.pred & !effects.pred_lanes | effects.pred_values;
        self.killed |= effects.kill;
        self.active &= !effects.deactivate & self.alive();
        Ok(())
    }

    /// Reads source `src` of an instruction of `group` for `lane`, with its modifiers.
    fn read(&self, clause: &Clause, group: &Group, lane: usize, src: &Src) -> Result<u32, Why> {
        let chan = src.chan as usize;
        let raw = match src.sel {
            s @ 0..=127 => {
                let s = if src.rel {
                    relative_gpr(clause, s as usize, lane)?
                } else {
                    s as usize
                };
                let temp = CLAUSE_TEMP_BASE as usize;
                if s >= temp && !bit(clause.temps[(s - temp) * 4 + chan], lane) {
                    return Err(invalid(format!(
                        "clause temporary T{}.{} read before the clause wrote it (lane {lane})",
                        s - temp,
                        CHANS[chan]
                    )));
                }
                self.wave.gprs[lane][s][chan]
            }
            sel::LITERAL => *group.literals.get(chan).ok_or_else(|| {
                invalid(format!(
                    "reads literal {} of a group with {}",
                    CHANS[chan],
                    group.literals.len()
                ))
            })?,
            sel::LDS_OQ_A_POP => clause.queue.read(lane)?,
            sel::PV | sel::PS => {
                let slot = if src.sel == sel::PV {
                    chan
                } else if self.chip.has_trans() {
                    Slot::T as usize
                } else {
                    return Err(invalid("PS on Cayman, which has no trans slot"));
                };
                if !bit(clause.pv_lanes[slot], lane) {
                    let name = if src.sel == sel::PV {
                        format!("PV.{}", CHANS[chan])
                    } else {
                        "PS".to_string()
                    };
                    return Err(invalid(format!(
                        "reads {name}, which the previous group of the clause did not compute \
                         for lane {lane}"
                    )));
                }
                clause.pv[lane][slot]
            }
            s if s >= sel::PARAM => {
                return Err(invalid(format!(
                    "select {s} (a parameter) outside an INTERP instruction"
                )));
            }
            s => match (sel::inline_value(s), sel::kcache(s)) {
                (Some(v), _) => v,
                (None, Some((set, index))) => self.constant(clause.kcache, set, index, chan)?,
                (None, None) => return Err(unsupported(format!("source select {s}"))),
            },
        };
        let raw = if src.abs { raw & 0x7fff_ffff } else { raw };
        Ok(if src.neg { raw ^ 0x8000_0000 } else { raw })
    }

    /// Source `src` decoded once for the lanes of `exec`, when every lane's read is valid: a
    /// GPR, the previous group's result, or a value the same in every lane (a literal, an inline
    /// or kcache constant). `None` for relative operands and for reads that [`Self::read`]
    /// must check, and report, lane by lane.
    fn resolve(&self, clause: &Clause, group: &Group, src: &Src, exec: u64) -> Option<Resolved> {
        let chan = src.chan as usize;
        let temp = CLAUSE_TEMP_BASE as usize;
        let place = match src.sel {
            _ if src.rel => return None,
            s @ 0..=127 => {
                let s = s as usize;
                if s >= temp && exec & !clause.temps[(s - temp) * 4 + chan] != 0 {
                    return None;
                }
                Place::Gpr(s, chan)
            }
            sel::LITERAL => Place::Value(*group.literals.get(chan)?),
            sel::PV => Place::Pv(chan),
            sel::PS if self.chip.has_trans() => Place::Pv(Slot::T as usize),
            s if s >= sel::PARAM => return None,
            s => match (sel::inline_value(s), sel::kcache(s)) {
                (Some(v), _) => Place::Value(v),
                (None, Some((set, index))) => {
                    Place::Value(self.constant(clause.kcache, set, index, chan).ok()?)
                }
                (None, None) => return None,
            },
        };
        if let Place::Pv(slot) = place
            && exec & !clause.pv_lanes[slot] != 0
        {
            return None;
        }
        Some(Resolved {
            place,
            and: if src.abs { 0x7fff_ffff } else { u32::MAX },
            xor: if src.neg { 0x8000_0000 } else { 0 },
        })
    }

    /// A resolved source's value in `lane`, with its modifiers.
    #[inline]
    fn value_of(&self, clause: &Clause, r: &Resolved, lane: usize) -> u32 {
        let raw = match r.place {
            Place::Gpr(gpr, chan) => self.wave.gprs[lane][gpr][chan],
            Place::Pv(slot) => clause.pv[lane][slot],
            Place::Value(v) => v,
        };
        raw & r.and ^ r.xor
    }

    /// Component `chan` of constant `index` of kcache set `set`.
    fn constant(&self, kcache: &[Kcache], set: usize, index: u16, chan: usize) -> Result<u32, Why> {
        if set >= self.chip.kcache_sets() {
            return Err(invalid(format!("KC{set} on {:?}", self.chip)));
        }
        let k = kcache.get(set).ok_or_else(|| {
            invalid(format!(
                "reads KC{set}[{index}], the clause locks {} sets",
                kcache.len()
            ))
        })?;
        if index >= 16 * k.lines as u16 {
            return Err(invalid(format!(
                "reads KC{set}[{index}], outside the {} constants the clause locks",
                16 * k.lines as u16
            )));
        }
        let n = 16 * k.line as u64 + index as u64;
        let bytes = self.env.constant_buffers.get(&k.bank);
        Ok(dword(
            bytes.map_or(&[], Vec::as_slice),
            16 * n + 4 * chan as u64,
        ))
    }

    /// Interpolation parameter `src` selects.
    fn param(&self, src: &Src) -> Result<&[[f32; 3]; 4], Why> {
        if !(sel::PARAM..sel::PARAM + 64).contains(&src.sel) {
            return Err(invalid(format!(
                "select {} where a parameter (Param<n>, 448 + n) belongs",
                src.sel
            )));
        }
        let n = (src.sel - sel::PARAM) as usize;
        self.env.params.get(n).ok_or_else(|| {
            invalid(format!(
                "Param{n} read, {} parameters are given",
                self.env.params.len()
            ))
        })
    }

    /// Runs a one-slot instruction for the lanes of `exec`: each lane's result (0 for the
    /// others), and the predicate, exec-mask and kill effects into `effects`.
    fn one_slot_op(
        &self,
        clause: &Clause,
        group: &Group,
        inst: &AluInst,
        exec: u64,
        effects: &mut Effects,
    ) -> Result<[u32; MAX_LANES], Why> {
        let op = inst.op;
        let mut out = [0; MAX_LANES];
        if let AluOpcode::InterpLoadP0 | AluOpcode::InterpLoadP10 | AluOpcode::InterpLoadP20 = op {
            let param = self.param(&inst.src[0])?;
            let which = match op {
                AluOpcode::InterpLoadP0 => 0,
                AluOpcode::InterpLoadP10 => 1,
                _ => 2,
            };
            let v = param[inst.src[0].chan as usize][which].to_bits();
            for lane in lanes(exec) {
                out[lane] = v;
            }
            return Ok(out);
        }
        if op.has(flag::PRED_PUSH) || (op.has(flag::PRED) && op.info().cc.is_none()) {
            return Err(unsupported(format!("{op} (the predicate stack)")));
        }
        // The evaluation depends on the operands' values only: zeros tell whether the
        // operation is modelled, also when no lane runs it.
        eval_op(op, self.chip, [0; 3])?;
        let srcs = inst.srcs();
        // Decoded once for all lanes where possible; otherwise read (and checked) per lane.
        let resolved: [Option<Resolved>; 3] = std::array::from_fn(|k| {
            srcs.get(k).map_or(Some(Resolved::ZERO), |src| {
                self.resolve(clause, group, src, exec)
            })
        });
        for lane in lanes(exec) {
            // Built as a value, not element by element in memory, which the by-value call
            // would read back wider than it was written.
            let read = |k: usize| match &resolved[k] {
                Some(r) => Ok(self.value_of(clause, r, lane)),
                None => self.read(clause, group, lane, &srcs[k]),
            };
            let s = [read(0)?, read(1)?, read(2)?];
            out[lane] = eval_op(op, self.chip, s)?;
            let cond = || holds(op, s[0], s[1]);
            if is_pred_set(op) {
                if inst.update_pred {
                    effects.pred_lanes |= 1 << lane;
                    effects.pred_values |= (cond() as u64) << lane;
                }
                if inst.update_exec_mask && !cond() {
                    effects.deactivate |= 1 << lane;
                }
            }
            if op.has(flag::KILL) && cond() {
                effects.kill |= 1 << lane;
            }
        }
        Ok(out)
    }

    /// Runs a four-slot operation (DOT4, DOT4_IEEE, MAX4, INTERP_XY, INTERP_ZW) whose
    /// instructions in slots x-w are `members`: each slot's per-lane results.
    fn four_slot_op(
        &self,
        clause: &Clause,
        group: &Group,
        members: [usize; 4],
        exec: u64,
    ) -> Result<[[u32; MAX_LANES]; 4], Why> {
        let insts = members.map(|m| &group.insts[m]);
        if insts.iter().any(|i| i.pred_sel != insts[0].pred_sel) {
            return Err(invalid(
                "the slots of a four-slot operation differ in predicate select",
            ));
        }
        let op = insts[0].op;
        let mut out = [[0; MAX_LANES]; 4];
        let resolved: [[Option<Resolved>; 2]; 4] = std::array::from_fn(|k| {
            std::array::from_fn(|which| self.resolve(clause, group, &insts[k].src[which], exec))
        });
        for lane in lanes(exec) {
            let src = |k: usize, which: usize| match &resolved[k][which] {
                Some(r) => Ok(self.value_of(clause, r, lane)),
                None => self.read(clause, group, lane, &insts[k].src[which]),
            };
            let f = |k: usize, which: usize| src(k, which).map(f32::from_bits);
            match op {
                AluOpcode::Dot4 | AluOpcode::Dot4Ieee => {
                    let mut sum = 0.0f32;
                    for k in 0..4 {
                        let (a, b) = (f(k, 0)?, f(k, 1)?);
                        let p = if op == AluOpcode::Dot4 {
                            mul_legacy(a, b)
                        } else {
                            a * b
                        };
                        sum = if k == 0 { p } else { sum + p };
                    }
                    for o in &mut out {
                        o[lane] = sum.to_bits();
                    }
                }
                AluOpcode::Max4 => {
                    let mut max = f(0, 0)?;
                    for k in 1..4 {
                        max = max_legacy(max, f(k, 0)?);
                    }
                    for o in &mut out {
                        o[lane] = max.to_bits();
                    }
                }
                _ => {
                    // INTERP_XY: slots x, y from the (x, y) pair; INTERP_ZW: z, w from (z, w).
                    let pair = if op == AluOpcode::InterpXy { 0 } else { 2 };
                    let (j, i) = (f(pair, 0)?, f(pair + 1, 0)?);
                    for c in [pair, pair + 1] {
                        let [p0, p10, p20] = self.param(&insts[c].src[1])?[c];
                        out[c][lane] = (p0 + i * p10 + j * p20).to_bits();
                    }
                }
            }
        }
        Ok(out)
    }
}

impl Machine<'_> {
    /// Runs a double-precision operation whose instructions in a pair of vector slots are
    /// `[even, odd]`: each slot's per-lane results (see the module documentation).
    fn pair_op(
        &self,
        clause: &Clause,
        group: &Group,
        [even, odd]: [usize; 2],
        exec: u64,
    ) -> Result<[[u32; MAX_LANES]; 2], Why> {
        let insts = [&group.insts[even], &group.insts[odd]];
        if insts[0].pred_sel != insts[1].pred_sel {
            return Err(invalid(
                "the slots of a double-precision operation differ in predicate select",
            ));
        }
        if insts.iter().any(|i| i.omod != 0 || i.dst.clamp) {
            return Err(invalid(
                "an output modifier or clamp on a double-precision operation",
            ));
        }
        let op = insts[0].op;
        let nsrc = op.nsrc();
        let resolved: [[Option<Resolved>; 3]; 2] = std::array::from_fn(|k| {
            std::array::from_fn(|j| self.resolve(clause, group, &insts[k].src[j], exec))
        });
        let mut out = [[0; MAX_LANES]; 2];
        for lane in lanes(exec) {
            let word = |k: usize, j: usize| match &resolved[k][j] {
                Some(r) => Ok(self.value_of(clause, r, lane)),
                None => self.read(clause, group, lane, &insts[k].src[j]),
            };
            // Operand j: the low word from the odd slot, the high word from the even one.
            let mut a = [0f64; 3];
            for (j, x) in a.iter_mut().enumerate().take(nsrc) {
                let (lo, hi) = (word(1, j)?, word(0, j)?);
                *x = f64::from_bits(u64::from(hi) << 32 | u64::from(lo));
            }
            let bits = |x: f64| {
                let b = x.to_bits();
                [b as u32, (b >> 32) as u32]
            };
            let truth = |b: bool| [if b { u32::MAX } else { 0 }; 2];
            let [low, high] = match op {
                AluOpcode::Add64 => bits(a[0] + a[1]),
                AluOpcode::Mul64 => bits(a[0] * a[1]),
                AluOpcode::Fma64 => bits(a[0].mul_add(a[1], a[2])),
                AluOpcode::Min64 => bits(eval::fmin(a[0], a[1])),
                AluOpcode::Max64 => bits(eval::fmax(a[0], a[1])),
                AluOpcode::Sete64 => truth(a[0] == a[1]),
                AluOpcode::Setne64 => truth(a[0] != a[1]),
                AluOpcode::Setgt64 => truth(a[0] > a[1]),
                AluOpcode::Setge64 => truth(a[0] >= a[1]),
                AluOpcode::Flt32ToFlt64 => bits(f64::from(f32::from_bits(word(0, 0)?))),
                AluOpcode::Flt64ToFlt32 => [(a[0] as f32).to_bits(), 0],
                _ => return Err(unsupported(format!("{op}"))),
            };
            out[0][lane] = low;
            out[1][lane] = high;
        }
        Ok(out)
    }
}

/// The instructions of the double-precision operation that instruction `i` of `group` is
/// part of, by pair of slots `[even, odd]`: the pair holding `i`, or both pairs for the
/// operations that fill the four vector slots on `chip` (Cayman's MUL_64 and FMA_64).
fn pair_slots(group: &Group, slots: &[Slot], i: usize, chip: Chip) -> Result<Vec<[usize; 2]>, Why> {
    let op = group.insts[i].op;
    let at = |slot: usize| {
        (0..group.insts.len()).find(|&k| slots[k] as usize == slot && group.insts[k].op == op)
    };
    if op.slots(chip) == Slots::Vec4 {
        let members = four_slots(group, slots, op)?;
        return Ok(vec![[members[0], members[1]], [members[2], members[3]]]);
    }
    let slot = slots[i] as usize;
    if slot > 3 {
        return Err(invalid(format!("{op} in the trans slot")));
    }
    let even = slot & !1;
    match (at(even), at(even + 1)) {
        (Some(e), Some(o)) => Ok(vec![[e, o]]),
        _ => Err(invalid(format!(
            "{op} must fill a pair of vector slots (x and y, or z and w)"
        ))),
    }
}

/// Where a source decoded once for a group's lanes reads ([`Machine::resolve`]).
#[derive(Clone, Copy)]
enum Place {
    /// GPR and channel.
    Gpr(usize, usize),
    /// The previous group's result in a slot.
    Pv(usize),
    /// The same value in every lane.
    Value(u32),
}

/// A decoded source: its place and modifiers (`abs` as a mask, `neg` as a sign flip).
#[derive(Clone, Copy)]
struct Resolved {
    place: Place,
    and: u32,
    xor: u32,
}

impl Resolved {
    /// An absent source reads zero.
    const ZERO: Resolved = Resolved {
        place: Place::Value(0),
        and: u32::MAX,
        xor: 0,
    };
}

/// The instructions of a four-slot operation `op`: exactly one in each vector slot.
fn four_slots(group: &Group, slots: &[Slot], op: AluOpcode) -> Result<[usize; 4], Why> {
    let mut members = [None; 4];
    for (i, inst) in group.insts.iter().enumerate() {
        if inst.op == op {
            match slots[i] {
                Slot::T => return Err(invalid(format!("{op} in the trans slot"))),
                s => members[s as usize] = Some(i),
            }
        }
    }
    let count = group.insts.iter().filter(|i| i.op == op).count();
    match members {
        [Some(x), Some(y), Some(z), Some(w)] if count == 4 => Ok([x, y, z, w]),
        _ => Err(invalid(format!("{op} must fill the four vector slots"))),
    }
}

/// The destination's value of `result`: for float results the output modifier, then clamp.
fn output(inst: &AluInst, result: u32) -> u32 {
    if inst.op.has(flag::INT_DST | flag::UINT_DST) || (inst.omod == 0 && !inst.dst.clamp) {
        return result;
    }
    let x = f32::from_bits(result);
    let x = match inst.omod {
        1 => x * 2.0,
        2 => x * 4.0,
        3 => x * 0.5,
        _ => x,
    };
    let x = if !inst.dst.clamp {
        x
    } else if x.is_nan() || x <= 0.0 {
        0.0
    } else {
        x.min(1.0)
    };
    x.to_bits()
}
