//! Packing: the instructions of each block scheduled into instruction groups (VLIW bundles),
//! ALU clauses, fetch clauses and exports.
//!
//! What: per block, a list scheduler over the block's dependences (a read after a write goes
//! to a later group, a write after a read to the same group or a later one, since a group
//! reads all its operands before it writes) fills one group at a time from the ready
//! instructions, the longest path to the block's end first; while many values of the block are
//! live ([`PRESSURE`]), those that end more live values than they start come first. An
//! instruction goes to the vector
//! slot of its value's channel, or any free vector slot while the value has no channel yet
//! (its first definition chooses it, avoiding the channels of the values it shares a GPR with,
//! [`crate::units`]), or the trans slot; on Cayman a trans-only operation takes slots x, y and
//! z (and w when its channel is w) with the same operands, writing one. A group holds at most
//! four distinct literals, one KILL or PRED_SET, constant-file reads the clause's kcache sets
//! cover (at most two per group, or four on R600), and operands the read ports can serve
//! ([`crate::bank`]). A read of a value the previous group of the clause wrote reads PV or PS
//! instead of a GPR. A group holds at most one LDS operation; the value an LDS `_RET`
//! operation returns is popped from the output queue by a MOV in a group of its own right
//! after it, in the same clause. LDS operations keep their order, and a GROUP_BARRIER stays
//! after everything before it and before everything after it, and ends its clause. A
//! four-slot operation that no group can hold, its slots reading more
//! registers on one channel than the channel's three read cycles serve (a DOT4 of four values
//! earlier groups all put on x), reads copies of some of them instead: fresh values on the
//! channels of the slots that read them, written by MOVs before it. Fetches whose operands are
//! ready, once they are more urgent than the ready ALU work, close the ALU clause and form a
//! TEX (or VTX) clause. An ALU clause ends after 120 slots, after a KILL, when its kcache sets
//! run out, and with the predicate set of an `if` (then it is an ALU_PUSH_BEFORE).
//!
//! Why: groups are the hardware's unit of issue, and how full they are is most of the code's
//! speed; packing before register allocation is free to choose channels.
//!
//! Invariants: every group [`bank::solve`] accepts and [`crate::program::Group::slots`] can
//! assign; each value keeps the channel of its first definition; dependences hold; an
//! instruction no empty group takes is made to fit one, so a [`PackError`] is a bug.

use crate::bank::{self, Reads};
use crate::isa::{AluOpcode, CfOp, Chip, Slots, flag, sel};
use crate::lir::{
    Alu, Export, Fetch, Indexed, Inst, Lir, Multi, Node, Operand, Src, VReg, channel,
};
use crate::program::{Kcache, Slot};
use crate::units::Units;
use shrew_engine::deep::{Children, nested};
use shrew_engine::passes::machine::MachineIr;
use shrew_engine::provenance::Origin;
use shrew_engine::text::indentation;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

/// Live values of a block (channels: four to a GPR) from which the scheduler favours
/// instructions that end values over those that start them, so that wide independent work
/// (25 compares of an unrolled loop) does not take a GPR each. On piglit's fragment shaders 16
/// gives 3.6% fewer GPRs than no limit, and as many ALU groups (24 and 32 give fewer GPRs
/// back).
const PRESSURE: u32 = 16;

/// Live values of a block (a quarter of the register file's channels) from which a group that
/// already holds an instruction takes no instruction that starts more live values than it
/// ends: a long dependence chain beside wide independent work (a `switch` of a thousand
/// if-converted cases: a compare and a select per case) would otherwise start values in every
/// group's spare slots faster than the chain ends them, until the registers run out.
const CROWDED: u32 = 128;

/// Slots after which Mesa starts a new ALU clause (room for a worst-case group).
const CLAUSE_SLOT_LIMIT: usize = 120;

/// A packed program: the tree of blocks, each a list of clauses and exports, and each value's
/// channel (the values of the R600 IR, then the copies the packer added).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Packed {
    pub body: Vec<PNode>,
    pub chans: Vec<Option<u8>>,
    /// [`Lir::scratch_elements`]: the elements of the temporaries in scratch memory.
    pub scratch_elements: u16,
    /// The elements holding the values [`crate::spill`] spilled (empty when it spilled none).
    pub spill_elements: Range<u16>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PNode {
    Block(Vec<Item>),
    If {
        then: Children<Vec<PNode>>,
        otherwise: Children<Vec<PNode>>,
    },
    Loop(Children<Vec<PNode>>),
    Break,
    Continue,
    Call(u32),
}

/// A clause or export of a block.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Alu(Clause),
    /// A TEX clause, or a VTX clause of vertex fetches.
    Fetch(Vec<Fetch>),
    Export(Export),
}

/// An ALU clause.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Clause {
    pub groups: Vec<Vec<Placed>>,
    pub kcache: Vec<Kcache>,
    /// Ends with the predicate set of an `if`.
    pub push: bool,
}

/// An instruction in its slot.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub slot: Slot,
    pub op: AluOpcode,
    /// The value written (by this slot, for replicated and four-slot operations).
    pub dst: Option<VReg>,
    /// The indexed register component written instead.
    pub indexed: Option<Indexed>,
    /// The destination channel (the slot's, in a vector slot).
    pub chan: u8,
    pub srcs: Vec<PSrc>,
    pub clamp: bool,
    pub pred: bool,
    /// What made the instruction placed ([`Alu::origin`]).
    pub origin: Option<Arc<Origin>>,
}

/// A placed source.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PSrc {
    pub kind: PKind,
    pub neg: bool,
    pub abs: bool,
}

/// What a placed source reads: the instruction's operand, or the previous group's result
/// forwarded in its place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PKind {
    Operand(Operand),
    /// The previous group's result in this vector slot.
    Pv(u8),
    /// The previous group's trans result.
    Ps,
    /// The front of LDS output queue A, popped: what the LDS operation of the previous group
    /// returned.
    LdsPop,
}

/// Why a block could not be packed (an internal error: lowering produced something no group
/// can hold, or the packer failed to make it fit).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("packing: {0}")]
pub struct PackError(pub String);

/// Packs every block of `lir`.
pub fn pack(lir: &Lir, units: &Units, chip: Chip) -> Result<Packed, PackError> {
    // Forced channels are known before their values are placed, so that the values sharing
    // their GPR avoid them.
    let mut chans = vec![None; lir.values as usize];
    for (v, &c) in &units.forced {
        chans[v.0 as usize] = Some(c);
    }
    let carried: Vec<bool> = lir.def_counts().iter().map(|&defs| defs > 1).collect();
    let mut carried_load = [0; 4];
    for (v, _) in carried.iter().enumerate().filter(|&(_, &c)| c) {
        if let Some(c) = chans[v] {
            carried_load[c as usize] += 1;
        }
    }
    let mut packer = Packer {
        chip,
        units,
        chans,
        carried,
        carried_load,
    };
    let body = packer.nodes(&lir.body)?;
    Ok(Packed {
        body,
        chans: packer.chans,
        scratch_elements: lir.scratch_elements,
        spill_elements: 0..0,
    })
}

/// Whether `inst` fits a group and clause of its own: its literals, constant-file reads and,
/// for trans-only operations, its constant operands.
pub fn fits_alone(inst: &Inst, chip: Chip) -> bool {
    let srcs: Vec<&Src> = match inst {
        Inst::Alu(alu) => alu.srcs.iter().collect(),
        Inst::Multi(m) => m.slots.iter().flat_map(|s| &s.srcs).collect(),
        Inst::Fetch(_) | Inst::Export(_) => return true,
    };
    let mut budget = Budget::default();
    let mut constants = 0;
    for s in srcs {
        if !matches!(s.operand, Operand::Const(_) | Operand::Kcache { .. }) {
            continue;
        }
        constants += 1;
        if !budget.take(PKind::Operand(s.operand), chip) {
            return false;
        }
    }
    let trans_only = matches!(inst, Inst::Alu(alu) if alu.op.slots(chip) == Slots::Trans);
    !(trans_only && constants > 2)
}

/// The constants a group reads: its literals, the kcache windows its clause locks, and its
/// constant-file reads.
#[derive(Clone, Debug, Default)]
struct Budget {
    literals: Vec<u32>,
    kcache: Vec<Kcache>,
    reads: Vec<(u8, u32, u8)>,
}

impl Budget {
    /// Adds a read of `kind`; false when the group or its clause cannot take it.
    fn take(&mut self, kind: PKind, chip: Chip) -> bool {
        match kind {
            PKind::Operand(Operand::Const(bits)) if sel::inline_constant(bits).is_none() => {
                if !self.literals.contains(&bits) {
                    self.literals.push(bits);
                }
                self.literals.len() <= crate::isa::MAX_LITERALS
            }
            PKind::Operand(Operand::Kcache { bank, index, chan }) => {
                if !cover(&mut self.kcache, bank, index, chip) {
                    return false;
                }
                let key = read_key(chip, bank, index, chan);
                if !self.reads.contains(&key) {
                    self.reads.push(key);
                }
                self.reads.len() <= chip.kcache_reads()
            }
            _ => true,
        }
    }
}

/// What one constant-file read occupies of a group's limit: on R600 an (address, channel), on
/// later chips an (address, channel pair).
fn read_key(chip: Chip, bank: u8, index: u32, chan: u8) -> (u8, u32, u8) {
    if chip == Chip::R600 {
        (bank, index, chan)
    } else {
        (bank, index, chan / 2)
    }
}

struct Packer<'a> {
    chip: Chip,
    units: &'a Units,
    chans: Vec<Option<u8>>,
    /// By value: whether several instructions write it (a register phi copies carry across
    /// blocks): live beyond the blocks the scheduler sees, so it weighs on its channel
    /// everywhere.
    carried: Vec<bool>,
    /// How many carried values each channel holds.
    carried_load: [u32; 4],
}

/// The scratch accesses of a block a new one must follow: a read follows the writes before it,
/// a write the reads before it. Only those of the latest run of writes and of reads are kept:
/// the earlier ones precede a later run of the other kind, which the new access follows.
#[derive(Default)]
struct ScratchOrder {
    writes: Vec<usize>,
    reads: Vec<usize>,
    /// Whether the latest access was a write.
    after_write: bool,
}

impl ScratchOrder {
    /// Adds to `deps` what access `i` (a write, or a read) follows, and records it.
    fn access(&mut self, i: usize, write: bool, deps: &mut Vec<(usize, Dep)>) {
        let (own, other) = if write {
            (&mut self.writes, &self.reads)
        } else {
            (&mut self.reads, &self.writes)
        };
        if write != self.after_write {
            own.clear();
        }
        deps.extend(other.iter().map(|&j| (j, Dep::After)));
        own.push(i);
        self.after_write = write;
    }
}

/// The accesses of one channel of the indexed registers a new access that may touch the same
/// component ([`Indexed::may_alias`]) must keep its order with: a read follows the writes before
/// it, a write the writes before it and joins or follows the reads before it. Only those not
/// already ordered before a later one the new access is ordered after are kept, so the
/// accesses a new one compares with are those it depends on.
#[derive(Default)]
struct IndexedOrder {
    /// The latest relative write of the channel: everything before it is ordered before it.
    relative_write: Option<usize>,
    /// The relative reads since it.
    relative_reads: Vec<usize>,
    /// By register, its accesses since the relative write.
    registers: BTreeMap<u16, RegisterOrder>,
}

/// The accesses of one register of a channel since the channel's latest relative write.
#[derive(Default)]
struct RegisterOrder {
    /// The latest write.
    write: Option<usize>,
    /// The reads since that write.
    reads: Vec<usize>,
    /// How many of the channel's relative reads precede that write.
    relative_reads_before: usize,
}

impl IndexedOrder {
    /// Adds to `deps` what `access` (a write, or a read) of the channel must follow.
    fn deps(&self, access: Indexed, write: bool, deps: &mut Vec<(usize, Dep)>) {
        // A group reads before it writes: a write may join an earlier read.
        let joined = |reads: &[usize]| {
            let reads: Vec<(usize, Dep)> = reads.iter().map(|&j| (j, Dep::NotBefore)).collect();
            if write { reads } else { Vec::new() }
        };
        deps.extend(self.relative_write.map(|j| (j, Dep::After)));
        if access.index.is_some() {
            for register in self.registers.values() {
                deps.extend(register.write.map(|j| (j, Dep::After)));
                deps.extend(joined(&register.reads));
            }
            deps.extend(joined(&self.relative_reads));
        } else if let Some(register) = self.registers.get(&access.reg) {
            deps.extend(register.write.map(|j| (j, Dep::After)));
            deps.extend(joined(&register.reads));
            deps.extend(joined(
                &self.relative_reads[register.relative_reads_before..],
            ));
        } else {
            deps.extend(joined(&self.relative_reads));
        }
    }

    /// Records `access` by instruction `i`.
    fn record(&mut self, i: usize, access: Indexed, write: bool) {
        match (access.index, write) {
            (Some(_), true) => {
                *self = IndexedOrder {
                    relative_write: Some(i),
                    ..IndexedOrder::default()
                }
            }
            (Some(_), false) => self.relative_reads.push(i),
            (None, true) => {
                let register = self.registers.entry(access.reg).or_default();
                register.write = Some(i);
                register.reads.clear();
                register.relative_reads_before = self.relative_reads.len();
            }
            (None, false) => self.registers.entry(access.reg).or_default().reads.push(i),
        }
    }
}

/// How an instruction must be placed relative to one it depends on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Dep {
    /// In a later group (or clause).
    After,
    /// In the same group or a later one.
    NotBefore,
}

/// Where a placed instruction is: its item, and its group in an ALU clause.
type Pos = (usize, usize);

impl Packer<'_> {
    fn nodes(&mut self, nodes: &[Node]) -> Result<Vec<PNode>, PackError> {
        nodes
            .iter()
            .map(|node| {
                Ok(match node {
                    Node::Block(insts) => PNode::Block(self.block(insts)?),
                    Node::If { then, otherwise } => PNode::If {
                        then: nested(|| self.nodes(then))?.into(),
                        otherwise: nested(|| self.nodes(otherwise))?.into(),
                    },
                    Node::Loop(body) => PNode::Loop(nested(|| self.nodes(body))?.into()),
                    Node::Break => PNode::Break,
                    Node::Continue => PNode::Continue,
                    &Node::Call(f) => PNode::Call(f),
                })
            })
            .collect()
    }

    fn block(&mut self, insts: &[Inst]) -> Result<Vec<Item>, PackError> {
        let n = insts.len();
        // Dependences and, for each read, the instruction whose write it reads.
        let mut deps: Vec<Vec<(usize, Dep)>> = vec![Vec::new(); n];
        let mut producer: HashMap<(usize, VReg), usize> = HashMap::new();
        let mut last_writer: HashMap<VReg, usize> = HashMap::new();
        // The readers of each value's latest write, and every read of each value (a register
        // written twice keeps the readers of both writes).
        let mut readers: HashMap<VReg, Vec<usize>> = HashMap::new();
        let mut reads_in_block: HashMap<VReg, u32> = HashMap::new();
        // The latest KILL or export: each keeps its order with the one before.
        let mut last_effect: Option<usize> = None;
        // The latest KILL, and the instructions reading other pixels of the quad since it: a
        // KILL stays after them, and they stay after it.
        let mut last_kill: Option<usize> = None;
        let mut quad_reads: Vec<usize> = Vec::new();
        let mut scratch = ScratchOrder::default();
        let mut indexed: HashMap<u8, IndexedOrder> = HashMap::new();
        // The latest LDS operation (they keep their order), the latest barrier and the
        // instructions since it (a barrier stays after them, and everything after it).
        let mut last_lds: Option<usize> = None;
        let mut last_barrier: Option<usize> = None;
        // The latest GDS operation: they keep their order (one clause runs its fetches in
        // order), and stay on their side of kills.
        let mut last_gds: Option<usize> = None;
        for (i, inst) in insts.iter().enumerate() {
            let alu_op = match inst {
                Inst::Alu(a) => Some(a.op),
                _ => None,
            };
            if alu_op == Some(AluOpcode::GroupBarrier) {
                let since = last_barrier.unwrap_or(0);
                deps[i].extend((since..i).map(|j| (j, Dep::After)));
                last_barrier = Some(i);
            } else if let Some(b) = last_barrier {
                deps[i].push((b, Dep::After));
            }
            if alu_op.is_some_and(|op| op.has(flag::LDS)) {
                deps[i].extend(last_lds.map(|l| (l, Dep::After)));
                last_lds = Some(i);
            }
            // DOT4 and interpolation read indexed registers too.
            let accesses = inst.indexed_accesses();
            for &(access, write) in &accesses {
                let order = indexed.entry(access.chan).or_default();
                order.deps(access, write, &mut deps[i]);
            }
            for &(access, write) in &accesses {
                let order = indexed.entry(access.chan).or_default();
                order.record(i, access, write);
            }
            // Scratch and RAT memory: one order of reads and writes.
            match inst {
                Inst::Fetch(f) if f.reads_memory() => {
                    scratch.access(i, false, &mut deps[i]);
                }
                Inst::Export(e) if e.writes_memory() => {
                    scratch.access(i, true, &mut deps[i]);
                }
                _ => {}
            }
            for v in inst.reads() {
                if let Some(&w) = last_writer.get(&v) {
                    deps[i].push((w, Dep::After));
                    producer.insert((i, v), w);
                }
                readers.entry(v).or_default().push(i);
                *reads_in_block.entry(v).or_default() += 1;
            }
            for v in inst.writes() {
                if let Some(&w) = last_writer.get(&v) {
                    deps[i].push((w, Dep::After));
                }
                for &r in readers.get(&v).map_or(&[][..], Vec::as_slice) {
                    if r != i {
                        deps[i].push((r, Dep::NotBefore));
                    }
                }
                last_writer.insert(v, i);
                readers.remove(&v);
            }
            let is_kill = matches!(inst, Inst::Alu(a) if a.op.has(flag::KILL));
            if matches!(inst, Inst::Fetch(f) if f.op.is_gds()) {
                deps[i].extend(last_gds.map(|g| (g, Dep::NotBefore)));
                deps[i].extend(last_kill.map(|k| (k, Dep::After)));
                last_gds = Some(i);
            } else if is_kill {
                deps[i].extend(last_gds.map(|g| (g, Dep::After)));
            }
            if is_kill || matches!(inst, Inst::Export(_)) {
                deps[i].extend(last_effect.map(|e| (e, Dep::After)));
                last_effect = Some(i);
            }
            if is_kill {
                deps[i].extend(quad_reads.drain(..).map(|r| (r, Dep::After)));
                last_kill = Some(i);
            } else if matches!(inst, Inst::Fetch(f) if f.op.reads_quad()) {
                deps[i].extend(last_kill.map(|k| (k, Dep::After)));
                quad_reads.push(i);
            }
            if matches!(inst, Inst::Alu(a) if a.pred) {
                for j in 0..i {
                    deps[i].push((j, Dep::NotBefore));
                }
            }
        }
        // The longest path to the block's end, fetches weighing most.
        let mut height = vec![0u32; n];
        for i in (0..n).rev() {
            let own = if matches!(insts[i], Inst::Fetch(_)) {
                8
            } else {
                1
            };
            height[i] = height[i].max(own);
            for &(j, _) in &deps[i] {
                height[j] = height[j].max(
                    height[i]
                        + if matches!(insts[j], Inst::Fetch(_)) {
                            8
                        } else {
                            1
                        },
                );
            }
        }
        let mut users: HashMap<VReg, Vec<usize>> = HashMap::new();
        for (i, inst) in insts.iter().enumerate() {
            for v in inst.reads().into_iter().chain(inst.writes()) {
                users.entry(v).or_default().push(i);
            }
        }
        let mut dependents = vec![Vec::new(); n];
        for (i, deps) in deps.iter().enumerate() {
            for &(j, _) in deps {
                dependents[j].push(i);
            }
        }
        let mut state = BlockState {
            insts: insts.to_vec(),
            waiting: deps.iter().map(Vec::len).collect(),
            deps,
            dependents,
            producer,
            height,
            readers_left: reads_in_block,
            users,
            live: 0,
            written: HashSet::new(),
            load: [0; 4],
            counted: HashMap::new(),
            pos: vec![None; n],
            unplaced: n,
            ready: Ready::default(),
            pressure: vec![0; n],
            items: Vec::new(),
            clause: None,
        };
        for i in 0..n {
            if state.waiting[i] == 0 {
                state.make_ready(i);
            }
        }
        while state.unplaced > 0 {
            let fetches = state.ready_fetches();
            let alu_ready = state.ready_alu(state.next_group_pos());
            let fetch_first = match (fetches.first(), alu_ready.first()) {
                (Some(&f), Some(&a)) => state.height[f] >= state.height[a],
                (Some(_), None) => true,
                _ => false,
            };
            if fetch_first {
                state.close_clause();
                self.fetch_clause(&mut state, &fetches);
            } else if !alu_ready.is_empty() {
                self.group(&mut state)?;
            } else if let Some(e) = state.ready_export() {
                state.close_clause();
                let Inst::Export(export) = &state.insts[e] else {
                    unreachable!()
                };
                let export = export.clone();
                state.place(e, (state.items.len(), 0), &self.chans);
                state.items.push(Item::Export(export));
            } else {
                return Err(PackError("no instruction of the block is ready".into()));
            }
        }
        state.close_clause();
        Ok(state.items)
    }

    /// A fetch clause of ready fetches of one kind, in program order.
    fn fetch_clause(&mut self, state: &mut BlockState, ready: &[usize]) {
        // A clause is of vertex, texture or GDS instructions, in valid pixel mode or not.
        let vertex = |i: usize| match &state.insts[i] {
            Inst::Fetch(f) => (f.op.clause(self.chip), f.valid_pixels),
            _ => (CfOp::Tex, false),
        };
        let kind = vertex(ready[0]);
        // A SAMPLE_G takes two more fetches: its SET_GRADIENTS_H and _V.
        let size = |i: usize| match &state.insts[i] {
            Inst::Fetch(f) if f.gradients.is_some() => 3,
            _ => 1,
        };
        let mut room = self.chip.max_fetches();
        let mut chosen: Vec<usize> = Vec::new();
        for &i in ready.iter().filter(|&&i| vertex(i) == kind) {
            if room == 0 {
                break;
            }
            if size(i) <= room {
                room -= size(i);
                chosen.push(i);
            }
        }
        chosen.sort_unstable();
        let item = state.items.len();
        let mut fetches = Vec::new();
        let mut written: Vec<VReg> = Vec::new();
        for i in chosen {
            let Inst::Fetch(fetch) = &state.insts[i] else {
                unreachable!()
            };
            // Two writes of one value in one clause would race.
            if fetch.dsts.iter().flatten().any(|v| written.contains(v)) {
                continue;
            }
            written.extend(fetch.dsts.iter().flatten());
            let fetch = fetch.clone();
            for &v in fetch.dsts.iter().flatten() {
                self.choose_chan(state, v);
            }
            fetches.push(fetch);
            state.place(i, (item, 0), &self.chans);
        }
        state.items.push(Item::Fetch(fetches));
    }

    /// Gives `v` a channel if it has none: the first of the channels by load its unit's other
    /// values do not use.
    fn choose_chan(&mut self, state: &mut BlockState, v: VReg) {
        if self.chans[v.0 as usize].is_some() {
            return;
        }
        let allowed = self.allowed_chans(v);
        let c = (state.chans_by_load(self.carried_load).into_iter())
            .find(|&c| allowed[c as usize])
            .unwrap_or(0);
        self.set_chan(state, v, c);
    }

    /// Puts `v` on channel `c` if it has no channel yet, keeping the channels' loads.
    fn set_chan(&mut self, state: &mut BlockState, v: VReg, c: u8) {
        if self.chans[v.0 as usize].is_some() {
            return;
        }
        self.chans[v.0 as usize] = Some(c);
        if self.carried.get(v.0 as usize).copied().unwrap_or(false) {
            self.carried_load[c as usize] += 1;
        }
        state.recount(v, &self.chans);
    }

    /// The channels `v` may take: its own if it has one, else those no value of its unit has.
    fn allowed_chans(&self, v: VReg) -> [bool; 4] {
        if let Some(c) = self.chans[v.0 as usize] {
            return std::array::from_fn(|k| k == c as usize);
        }
        let mut allowed = [true; 4];
        if let Some(&unit) = self.units.of.get(&v) {
            for m in &self.units.members[unit] {
                if let Some(c) = self.chans[m.0 as usize] {
                    allowed[c as usize] = false;
                }
            }
        }
        allowed
    }

    /// Fills the next group of the open ALU clause (opening one if needed).
    fn group(&mut self, state: &mut BlockState) -> Result<(), PackError> {
        if state.clause.is_none() {
            state.clause = Some(ClauseBuilder::default());
        }
        let mut group = GroupBuilder {
            budget: Budget {
                kcache: state.clause.as_ref().expect("open").kcache.clone(),
                ..Budget::default()
            },
            ..GroupBuilder::default()
        };
        // The first ready instruction that waits for AR to hold its index.
        let mut waits_for_ar: Option<(usize, VReg)> = None;
        loop {
            let at = state.next_group_pos();
            let ready = state.ready_alu(at);
            let mut added = false;
            for i in ready {
                if state.live >= CROWDED && !group.placed.is_empty() && state.pressure[i] > 0 {
                    continue;
                }
                let index = ar_index(&state.insts[i])?;
                if let Some(v) = index
                    && !self.ar_holds(state, &group, v)
                {
                    waits_for_ar.get_or_insert((i, v));
                    continue;
                }
                // A value read before its definition is placed (a register a loop carries)
                // takes its channel now: the read ports are checked with it.
                for v in state.insts[i].reads() {
                    self.choose_chan(state, v);
                }
                if let Some(placed) = self.try_place(state, &group, i) {
                    group.relative |= index.is_some();
                    group.commit(i, placed, self.chip, state);
                    let writes: Vec<(VReg, u8)> = (group.placed.last().expect("committed"))
                        .iter()
                        .filter_map(|p| Some((p.dst?, p.chan)))
                        .collect();
                    for (v, c) in writes {
                        self.set_chan(state, v, c);
                    }
                    state.place(i, at, &self.chans);
                    added = true;
                } else if group.placed.is_empty() && !self.fits_empty_group(state, &state.insts[i])
                {
                    // No group will ever take it as it stands.
                    self.separate_operands(state, i)?;
                    added = true;
                }
            }
            if !added {
                break;
            }
        }
        if let Some((i, v)) = waits_for_ar
            && !group.relative
            && !group.ends_clause
        {
            self.load_ar(state, &mut group, i, v);
        }
        if group.placed.is_empty() {
            // The clause's kcache sets or slots are used up: a new clause.
            let clause = state.clause.as_ref().expect("open");
            if clause.groups.is_empty() {
                return Err(PackError("an instruction fits no group".into()));
            }
            state.close_clause();
            return Ok(());
        }
        let clause = state.clause.as_mut().expect("open");
        clause.kcache = group.budget.kcache.clone();
        let ends = group.ends_clause;
        let push = group.push;
        let mut insts: Vec<Placed> = group.placed.into_iter().flatten().collect();
        insts.sort_by_key(|p| p.slot);
        let relative_write = insts
            .iter()
            .any(|p| p.indexed.is_some_and(|w| w.index.is_some()));
        // What an LDS operation returns comes back through output queue A: a MOV of the next
        // group pops it into the operation's value, in its slot, and the value is forwarded
        // from there.
        let pop = insts
            .iter_mut()
            .find(|p| p.op.has(flag::RET))
            .map(|p| Placed {
                slot: p.slot,
                op: AluOpcode::Mov,
                dst: p.dst.take(),
                indexed: None,
                chan: p.chan,
                srcs: vec![PSrc {
                    kind: PKind::LdsPop,
                    neg: false,
                    abs: false,
                }],
                clamp: false,
                pred: false,
                origin: p.origin.clone(),
            });
        clause.slots += insts.len() + group.budget.literals.len().div_ceil(2);
        clause.groups.push(insts);
        if let Some(pop) = pop {
            let g = clause.groups.len() - 1;
            if let Some(&i) = clause.origin.get(&(g, pop.slot)) {
                clause.origin.insert((g + 1, pop.slot), i);
            }
            clause.groups.push(vec![pop]);
            clause.slots += 1;
        }
        clause.push |= push;
        if let Some(v) = group.loads_ar {
            clause.ar = Some(v);
        }
        if relative_write && self.chip == Chip::R600 && !ends {
            // R600 needs a NOP group after a relative write.
            clause.groups.push(vec![Placed {
                slot: Slot::X,
                op: AluOpcode::AluNop,
                dst: None,
                indexed: None,
                chan: 0,
                srcs: Vec::new(),
                clamp: false,
                pred: false,
                origin: None,
            }]);
            clause.slots += 1;
        }
        if ends || clause.slots >= CLAUSE_SLOT_LIMIT {
            state.close_clause();
        }
        Ok(())
    }

    /// Makes instruction `i`, which no group can hold, placeable: a four-slot operation whose
    /// slots read more registers on one channel than the channel's three read cycles serve
    /// (a DOT4 of four values earlier groups all put on x). Slot by slot, each register it
    /// reads off its own channel is copied by a MOV before it to a fresh value on that
    /// channel, until the operation fits an empty group; at the latest when every slot reads
    /// its own channel only, which each slot's swizzle serves alone. (An instruction of one
    /// slot reads at most three operands, one a cycle, and Cayman's replicated operations the
    /// same ones in every slot: once their constants fit, an empty group takes them.)
    fn separate_operands(&mut self, state: &mut BlockState, i: usize) -> Result<(), PackError> {
        let Inst::Multi(mut multi) = state.insts[i].clone() else {
            return Err(PackError(format!("no group can hold `{}`", state.insts[i])));
        };
        let mut copies = Vec::new();
        for c in 0..4u8 {
            let slot = c as usize;
            for k in 0..multi.slots[slot].srcs.len() {
                let operand = multi.slots[slot].srcs[k].operand;
                if !takes_port(operand) || self.operand_chan(operand) == c {
                    continue;
                }
                let copy = VReg(self.chans.len() as u32);
                self.chans.push(Some(c));
                copies.push((copy, operand));
                // The slot's other reads of the operand read the copy too.
                for s in &mut multi.slots[slot].srcs {
                    if s.operand == operand {
                        s.operand = Operand::Value(copy);
                    }
                }
                if self.fits_empty_group(state, &Inst::Multi(multi.clone())) {
                    state.insert_copies(i, Inst::Multi(multi), &copies, &self.chans);
                    return Ok(());
                }
            }
        }
        Err(PackError(format!("no group can hold `{}`", state.insts[i])))
    }

    /// The channel an operand that takes a read port reads.
    fn operand_chan(&self, operand: Operand) -> u8 {
        match operand {
            Operand::Value(v) => self.chans[v.0 as usize].unwrap_or(0),
            Operand::Indexed(indexed) => indexed.chan,
            _ => unreachable!("{operand} takes no read port"),
        }
    }

    /// Whether AR holds `v` for the group being filled: loaded by an earlier group of the
    /// clause, and not by this one.
    fn ar_holds(&self, state: &BlockState, group: &GroupBuilder, v: VReg) -> bool {
        let clause = state.clause.as_ref().expect("open");
        group.loads_ar.is_none() && clause.ar == Some(v)
    }

    /// Puts a MOVA_INT of `v` (the index instruction `i` reads) in `group`, if a slot takes it,
    /// so that AR holds `v` from the next group on.
    fn load_ar(&self, state: &BlockState, group: &mut GroupBuilder, i: usize, v: VReg) {
        let mova = Alu::new(AluOpcode::MovaInt, None, vec![Src::value(v)]);
        let srcs = vec![self.placed_src(state, &mova.srcs[0], i)];
        let order = state.chans_by_load(self.carried_load);
        let clause = state.clause.as_ref().expect("open");
        if let Some(placed) = self
            .alu_options(&mova, srcs, group, order)
            .into_iter()
            .find(|placed| group.accepts(placed, clause, self.chip, &self.chans))
        {
            for p in &placed {
                group.used[p.slot as usize] = true;
            }
            group.placed.push(placed);
            group.loads_ar = Some(v);
        }
    }

    /// How source `s` of instruction `i` is read in the group being filled: the previous
    /// group's result forwarded when that group wrote it.
    fn placed_src(&self, state: &BlockState, s: &Src, i: usize) -> PSrc {
        let at = state.next_group_pos();
        let double = matches!(&state.insts[i], Inst::Multi(m) if m.op.has(flag::F64));
        let kind = match s.operand {
            Operand::Value(v) if !double => match state.producer.get(&(i, v)) {
                Some(&w) if at.1 > 0 && state.pos[w] == Some((at.0, at.1 - 1)) => {
                    match state.slot_of_write(w, v) {
                        Some(Slot::T) => PKind::Ps,
                        Some(s) => PKind::Pv(s as u8),
                        None => PKind::Operand(s.operand),
                    }
                }
                _ => PKind::Operand(s.operand),
            },
            operand => PKind::Operand(operand),
        };
        PSrc {
            kind,
            neg: s.neg,
            abs: s.abs,
        }
    }

    /// Where instruction `i` can go in `group`, if anywhere: its placed slot(s).
    fn try_place(&self, state: &BlockState, group: &GroupBuilder, i: usize) -> Option<Vec<Placed>> {
        let clause = state.clause.as_ref().expect("open");
        let order = state.chans_by_load(self.carried_load);
        self.options(&state.insts[i], group, order, |s| {
            self.placed_src(state, s, i)
        })
        .into_iter()
        .find(|placed| group.accepts(placed, clause, self.chip, &self.chans))
    }

    /// Whether `inst` fits a group of its own at the start of a clause, where it reads every
    /// operand from where it lives (no PV or PS).
    fn fits_empty_group(&self, state: &BlockState, inst: &Inst) -> bool {
        let group = GroupBuilder::default();
        let order = state.chans_by_load(self.carried_load);
        let unforwarded = |s: &Src| PSrc {
            kind: PKind::Operand(s.operand),
            neg: s.neg,
            abs: s.abs,
        };
        self.options(inst, &group, order, unforwarded)
            .iter()
            .any(|placed| group.accepts(placed, &ClauseBuilder::default(), self.chip, &self.chans))
    }

    /// The ways to place `inst` in the free slots of `group`, best first, its sources read as
    /// `src` says.
    fn options(
        &self,
        inst: &Inst,
        group: &GroupBuilder,
        order: [u8; 4],
        src: impl Fn(&Src) -> PSrc,
    ) -> Vec<Vec<Placed>> {
        match inst {
            Inst::Alu(alu) => {
                self.alu_options(alu, alu.srcs.iter().map(src).collect(), group, order)
            }
            Inst::Multi(m) if m.op.has(flag::F64) => self.pair_options(m, group, order, src),
            Inst::Multi(m) => {
                if group.used.iter().take(4).any(|&u| u) {
                    return Vec::new();
                }
                let write_chan = if m.op.has(flag::INTERP) {
                    None
                } else {
                    let Some(v) = m.slots.iter().find_map(|s| s.dst) else {
                        return Vec::new();
                    };
                    let allowed = self.allowed_chans(v);
                    let Some(c) = (0..4).find(|&c| allowed[c as usize]) else {
                        return Vec::new();
                    };
                    Some(c)
                };
                let placed = (0..4u8)
                    .map(|c| {
                        let part = &m.slots[c as usize];
                        let dst = match write_chan {
                            None => part.dst,
                            Some(w) if w == c => m.slots.iter().find_map(|s| s.dst),
                            Some(_) => None,
                        };
                        Placed {
                            slot: Slot::VECTOR[c as usize],
                            op: m.op,
                            dst,
                            indexed: None,
                            chan: c,
                            srcs: part.srcs.iter().map(&src).collect(),
                            clamp: false,
                            pred: false,
                            origin: m.origin.clone(),
                        }
                    })
                    .collect();
                vec![placed]
            }
            Inst::Fetch(_) | Inst::Export(_) => Vec::new(),
        }
    }

    /// The ways to place a double-precision operation (see [`crate::lower`]'s pairs) in the
    /// free slots of `group`, the pair of the least loaded channels first: its first two
    /// parts in slots x, y or z, w, each writing its own channel; a four-slot one (Cayman's
    /// MUL_64, FMA_64) its other two parts in the other pair.
    fn pair_options(
        &self,
        m: &Multi,
        group: &GroupBuilder,
        order: [u8; 4],
        src: impl Fn(&Src) -> PSrc,
    ) -> Vec<Vec<Placed>> {
        let four = m.op.slots(self.chip) == Slots::Vec4;
        let fits = |part: usize, chan: u8| {
            !group.used[chan as usize]
                && m.slots[part]
                    .dst
                    .is_none_or(|v| self.allowed_chans(v)[chan as usize])
        };
        let place = |part: usize, chan: u8| Placed {
            slot: Slot::VECTOR[chan as usize],
            op: m.op,
            dst: m.slots[part].dst,
            indexed: None,
            chan,
            srcs: m.slots[part].srcs.iter().map(&src).collect(),
            clamp: false,
            pred: false,
            origin: m.origin.clone(),
        };
        let mut bases = [0u8, 2];
        bases.sort_by_key(|&b| order.iter().position(|&c| c == b || c == b + 1));
        let mut options = Vec::new();
        for base in bases {
            let other = 2 - base;
            if !fits(0, base) || !fits(1, base + 1) {
                continue;
            }
            let mut placed = vec![place(0, base), place(1, base + 1)];
            if four {
                if !fits(2, other) || !fits(3, other + 1) {
                    continue;
                }
                placed.extend([place(2, other), place(3, other + 1)]);
            }
            options.push(placed);
        }
        options
    }

    /// The ways to place `alu` in the free slots of `group`, best first; where the slot leaves
    /// the channel free (the trans slot, Cayman's multi-slot operations), the channel of fewest
    /// live values in `order`.
    fn alu_options(
        &self,
        alu: &Alu,
        srcs: Vec<PSrc>,
        group: &GroupBuilder,
        order: [u8; 4],
    ) -> Vec<Vec<Placed>> {
        let allowed = match (alu.dst, alu.indexed) {
            (Some(v), _) => self.allowed_chans(v),
            (None, Some(indexed)) => std::array::from_fn(|c| c == indexed.chan as usize),
            (None, None) => [true; 4],
        };
        let one = |slot: Slot, chan: u8| Placed {
            slot,
            op: alu.op,
            dst: alu.dst,
            indexed: alu.indexed,
            chan,
            srcs: srcs.clone(),
            clamp: alu.clamp,
            pred: alu.pred,
            origin: alu.origin.clone(),
        };
        let mut options = Vec::new();
        let slots = alu.op.slots(self.chip);
        if matches!(slots, Slots::Any | Slots::Vec) {
            for c in order {
                if allowed[c as usize] && !group.used[c as usize] {
                    options.push(vec![one(Slot::VECTOR[c as usize], c)]);
                }
            }
        }
        match slots {
            Slots::Any | Slots::Trans if self.chip.has_trans() => {
                if !group.used[Slot::T as usize]
                    && let Some(&c) = order.iter().find(|&&c| allowed[c as usize])
                {
                    options.push(vec![one(Slot::T, c)]);
                }
            }
            Slots::Trans => {
                // Cayman: the operation in slots x, y and z (and w for channel w), writing one.
                for c in (0..4u8).filter(|&c| allowed[c as usize]) {
                    let span = if c == 3 { 4 } else { 3 };
                    if group.used[..span].iter().any(|&u| u) {
                        continue;
                    }
                    let placed = (0..span as u8)
                        .map(|k| Placed {
                            dst: if k == c { alu.dst } else { None },
                            indexed: if k == c { alu.indexed } else { None },
                            ..one(Slot::VECTOR[k as usize], k)
                        })
                        .collect();
                    options.push(placed);
                    break;
                }
            }
            Slots::Vec4 => {
                // Cayman's integer multiplies: all four slots, the result in each.
                if let Some(c) = (0..4u8).find(|&c| allowed[c as usize])
                    && !group.used[..4].iter().any(|&u| u)
                {
                    let placed = (0..4u8)
                        .map(|k| Placed {
                            dst: if k == c { alu.dst } else { None },
                            indexed: if k == c { alu.indexed } else { None },
                            ..one(Slot::VECTOR[k as usize], k)
                        })
                        .collect();
                    options.push(placed);
                }
            }
            _ => {}
        }
        options
    }
}

/// The scheduling state of one block.
struct BlockState {
    /// The block's instructions, then the copies [`Packer::separate_operands`] adds.
    insts: Vec<Inst>,
    deps: Vec<Vec<(usize, Dep)>>,
    /// By instruction: its dependences not placed yet.
    waiting: Vec<usize>,
    /// By instruction: the instructions that depend on it (once per dependence).
    dependents: Vec<Vec<usize>>,
    producer: HashMap<(usize, VReg), usize>,
    height: Vec<u32>,
    /// Each value's readers in the block not placed yet.
    readers_left: HashMap<VReg, u32>,
    /// Each value's readers and writers in the block.
    users: HashMap<VReg, Vec<usize>>,
    /// Values written by placed instructions that unplaced ones still read.
    live: u32,
    /// Values placed instructions write.
    written: HashSet<VReg>,
    /// How many of the live values each channel holds, and the channel each is counted on.
    load: [u32; 4],
    counted: HashMap<VReg, u8>,
    pos: Vec<Option<Pos>>,
    unplaced: usize,
    ready: Ready,
    /// By ready ALU instruction: its [`BlockState::pressure_change`] as `ready` sorts it.
    pressure: Vec<i32>,
    items: Vec<Item>,
    clause: Option<ClauseBuilder>,
}

/// The unplaced instructions whose dependences are all placed, by kind, most urgent first
/// (kept as they change, so that choosing the next instruction does not scan the block).
#[derive(Default)]
struct Ready {
    /// ALU instructions by height.
    by_height: BTreeSet<(Reverse<u32>, usize)>,
    /// ALU instructions by the live values they start minus those they end, then height.
    by_pressure: BTreeSet<(i32, Reverse<u32>, usize)>,
    fetches: BTreeSet<(Reverse<u32>, usize)>,
    exports: BTreeSet<usize>,
}

/// The ready ALU instructions a group considers, most urgent first: the scheduler's window,
/// so that a group costs the same however much independent work the block holds.
const READY_WINDOW: usize = 64;

impl BlockState {
    /// Places instruction `i` at `at`, keeping the live values' count, the channels' loads and
    /// the ready instructions.
    fn place(&mut self, i: usize, at: Pos, chans: &[Option<u8>]) {
        self.pos[i] = Some(at);
        self.unplaced -= 1;
        self.unready(i);
        for v in self.insts[i].reads() {
            if self.readers_left.contains_key(&v) {
                self.add_readers(v, -1, chans);
                if self.readers_left[&v] == 0 && self.written.contains(&v) {
                    self.live -= 1;
                }
            }
        }
        for v in self.insts[i].writes() {
            if self.readers_left.get(&v).is_some_and(|&left| left > 0) && self.written.insert(v) {
                self.live += 1;
                self.recount(v, chans);
                self.reprioritize_users(v);
            }
        }
        for k in 0..self.dependents[i].len() {
            let d = self.dependents[i][k];
            self.waiting[d] -= 1;
            if self.waiting[d] == 0 {
                self.make_ready(d);
            }
        }
    }

    /// Adds `delta` readers to `v`'s unplaced ones, updating what depends on the count.
    fn add_readers(&mut self, v: VReg, delta: i32, chans: &[Option<u8>]) {
        let left = self.readers_left.entry(v).or_default();
        let before = *left;
        *left = left.checked_add_signed(delta).expect("counted");
        let after = *left;
        self.recount(v, chans);
        // Whether `v` starts or ends a live value changes only between none, one and more.
        if before.min(after) <= 1 {
            self.reprioritize_users(v);
        }
    }

    /// Counts `v` on its channel's load if it is live now, and only then.
    fn recount(&mut self, v: VReg, chans: &[Option<u8>]) {
        let live =
            self.written.contains(&v) && self.readers_left.get(&v).is_some_and(|&left| left > 0);
        let now = chans[v.0 as usize].filter(|_| live);
        let was = self.counted.get(&v).copied();
        if now == was {
            return;
        }
        if let Some(c) = was {
            self.load[c as usize] -= 1;
            self.counted.remove(&v);
        }
        if let Some(c) = now {
            self.load[c as usize] += 1;
            self.counted.insert(v, c);
        }
    }

    /// Instruction `i`'s dependences are all placed.
    fn make_ready(&mut self, i: usize) {
        let height = Reverse(self.height[i]);
        match self.insts[i] {
            Inst::Alu(_) | Inst::Multi(_) => {
                self.pressure[i] = self.pressure_change(i);
                self.ready.by_height.insert((height, i));
                self.ready.by_pressure.insert((self.pressure[i], height, i));
            }
            Inst::Fetch(_) => {
                self.ready.fetches.insert((height, i));
            }
            Inst::Export(_) => {
                self.ready.exports.insert(i);
            }
        }
    }

    /// Instruction `i` is placed, or waits again.
    fn unready(&mut self, i: usize) {
        let height = Reverse(self.height[i]);
        self.ready.by_height.remove(&(height, i));
        self.ready
            .by_pressure
            .remove(&(self.pressure[i], height, i));
        self.ready.fetches.remove(&(height, i));
        self.ready.exports.remove(&i);
    }

    /// Sorts again the ready ALU instructions that read or write `v`, whose count of readers
    /// left or whose being written changed.
    fn reprioritize_users(&mut self, v: VReg) {
        let Some(users) = self.users.get(&v) else {
            return;
        };
        for i in users.clone() {
            let key = (self.pressure[i], Reverse(self.height[i]), i);
            if self.ready.by_pressure.remove(&key) {
                self.pressure[i] = self.pressure_change(i);
                self.ready.by_pressure.insert((self.pressure[i], key.1, i));
            }
        }
    }

    /// Puts MOVs writing `copies` (a fresh value and the operand it copies) before instruction
    /// `i`, which becomes `rewritten` (reading the copies instead); they read what `i` read in
    /// its place and are as urgent.
    fn insert_copies(
        &mut self,
        i: usize,
        rewritten: Inst,
        copies: &[(VReg, Operand)],
        chans: &[Option<u8>],
    ) {
        self.unready(i);
        let before = std::mem::replace(&mut self.insts[i], rewritten).reads();
        // Everything `i` waited for is placed: the copies may go where `i` could.
        let deps = self.deps[i].clone();
        let first = self.insts.len();
        for &(copy, operand) in copies {
            let n = self.insts.len();
            let mov = Inst::Alu(Alu::new(AluOpcode::Mov, Some(copy), vec![Src::of(operand)]));
            self.users.entry(copy).or_default().extend([n, i]);
            for v in mov.reads() {
                if let Some(&w) = self.producer.get(&(i, v)) {
                    self.producer.insert((n, v), w);
                }
                self.users.entry(v).or_default().push(n);
            }
            self.producer.insert((i, copy), n);
            self.deps.push(deps.clone());
            self.waiting.push(0);
            self.dependents.push(vec![i]);
            self.deps[i].push((n, Dep::After));
            self.waiting[i] += 1;
            self.height.push(self.height[i] + 1);
            self.pressure.push(0);
            self.pos.push(None);
            self.unplaced += 1;
            self.insts.push(mov);
        }
        for n in first..self.insts.len() {
            for v in self.insts[n].reads() {
                self.add_readers(v, 1, chans);
            }
        }
        for v in self.insts[i].reads() {
            self.add_readers(v, 1, chans);
        }
        for v in before {
            self.add_readers(v, -1, chans);
        }
        for n in first..self.insts.len() {
            self.make_ready(n);
        }
    }

    /// The four channels, those holding the fewest live values of the block and carried
    /// registers (`carried_load`) first: where a value's channel is free, it goes where it is
    /// likeliest to share a GPR.
    fn chans_by_load(&self, carried_load: [u32; 4]) -> [u8; 4] {
        let load: [u32; 4] = std::array::from_fn(|c| carried_load[c] + self.load[c]);
        let mut order = [0, 1, 2, 3];
        order.sort_by_key(|&c| load[c as usize]);
        order
    }

    /// How many live values placing `i` would start minus how many it would end.
    fn pressure_change(&self, i: usize) -> i32 {
        let starts = self.insts[i]
            .writes()
            .iter()
            .filter(|v| self.readers_left.get(v).is_some_and(|&left| left > 0))
            .count() as i32;
        let ends = self.insts[i]
            .reads()
            .iter()
            .filter(|v| self.readers_left.get(v) == Some(&1) && self.written.contains(*v))
            .count() as i32;
        starts - ends
    }
    /// The position the next group of the open clause takes (or the first group of a new one).
    fn next_group_pos(&self) -> Pos {
        match &self.clause {
            Some(c) => (self.items.len(), c.groups.len()),
            None => (self.items.len(), 0),
        }
    }

    fn close_clause(&mut self) {
        if let Some(c) = self.clause.take()
            && !c.groups.is_empty()
        {
            self.items.push(Item::Alu(Clause {
                groups: c.groups,
                kcache: c.kcache,
                push: c.push,
            }));
        }
    }

    fn deps_allow(&self, i: usize, at: Pos) -> bool {
        self.deps[i]
            .iter()
            .all(|&(j, dep)| match (self.pos[j], dep) {
                (Some(p), Dep::After) => p < at,
                (Some(p), Dep::NotBefore) => p <= at,
                (None, _) => false,
            })
    }

    /// Unplaced ALU instructions that may go in a group at `at`, most urgent first, at most
    /// [`READY_WINDOW`] of them.
    fn ready_alu(&self, at: Pos) -> Vec<usize> {
        let allowed = |&i: &usize| self.deps_allow(i, at);
        if self.live >= PRESSURE {
            (self.ready.by_pressure.iter().map(|&(_, _, i)| i))
                .filter(allowed)
                .take(READY_WINDOW)
                .collect()
        } else {
            (self.ready.by_height.iter().map(|&(_, i)| i))
                .filter(allowed)
                .take(READY_WINDOW)
                .collect()
        }
    }

    /// Unplaced fetches whose operands are ready for a clause after everything placed, most
    /// urgent first.
    fn ready_fetches(&self) -> Vec<usize> {
        let at = (self.items.len() + 1, 0);
        (self.ready.fetches.iter().map(|&(_, i)| i))
            .filter(|&i| self.deps_allow(i, at))
            .collect()
    }

    fn ready_export(&self) -> Option<usize> {
        let at = (self.items.len() + 1, 0);
        (self.ready.exports.iter().copied()).find(|&i| self.deps_allow(i, at))
    }

    /// The slot in which instruction `w` (placed in the open clause's last group) wrote `v`.
    fn slot_of_write(&self, w: usize, v: VReg) -> Option<Slot> {
        let clause = self.clause.as_ref()?;
        let group = clause.groups.last()?;
        group
            .iter()
            .find(|p| {
                // Double-precision results are not forwarded (the hardware's PV holds them
                // only for the operations' own pairs).
                p.dst == Some(v)
                    && !p.op.has(flag::F64)
                    && clause.origin.get(&(clause.groups.len() - 1, p.slot)) == Some(&w)
            })
            .map(|p| p.slot)
    }
}

#[derive(Default)]
struct ClauseBuilder {
    groups: Vec<Vec<Placed>>,
    kcache: Vec<Kcache>,
    slots: usize,
    push: bool,
    /// Which instruction of the block each (group, slot) holds.
    origin: HashMap<(usize, Slot), usize>,
    /// The value AR holds (loaded by a finished group): AR does not outlive its clause.
    ar: Option<VReg>,
}

/// The group being filled.
#[derive(Default)]
struct GroupBuilder {
    used: [bool; 5],
    members: Vec<usize>,
    placed: Vec<Vec<Placed>>,
    budget: Budget,
    /// Holds a KILL or PRED_SET (one per group).
    once: bool,
    /// Holds an LDS operation (one per group).
    lds: bool,
    ends_clause: bool,
    push: bool,
    /// Holds an instruction with an operand relative to AR, which a MOVA may not join.
    relative: bool,
    /// Holds a MOVA_INT of this value, which a relative operand may not join.
    loads_ar: Option<VReg>,
}

impl GroupBuilder {
    /// Whether `placed` fits: slots, literals, the once-per-group operations, the clause's
    /// kcache sets, the constant-file read limit and the read ports.
    fn accepts(
        &self,
        placed: &[Placed],
        clause: &ClauseBuilder,
        chip: Chip,
        chans: &[Option<u8>],
    ) -> bool {
        if placed.iter().any(|p| self.used[p.slot as usize]) {
            return false;
        }
        let once = placed[0].op.has(flag::KILL) || placed[0].pred;
        if once && self.once {
            return false;
        }
        if placed[0].op.has(flag::LDS) && self.lds {
            return false;
        }
        let mut budget = self.budget.clone();
        if !placed
            .iter()
            .flat_map(|p| &p.srcs)
            .all(|s| budget.take(s.kind, chip))
        {
            return false;
        }
        // An LDS operation's return takes the next group's MOV that pops it.
        let pops = (self.placed.iter().flatten().chain(placed))
            .filter(|p| p.op.has(flag::RET))
            .count();
        let slots = self.placed.iter().map(Vec::len).sum::<usize>()
            + placed.len()
            + pops
            + budget.literals.len().div_ceil(2);
        if clause.slots + slots > crate::isa::MAX_ALU_CLAUSE_SLOTS {
            return false;
        }
        let all: Vec<&Placed> = self.placed.iter().flatten().chain(placed).collect();
        // The hardware runs a trans-slot instruction whose channel's vector slot is free in
        // that vector slot (`Group::slots`): its read ports are a vector slot's.
        let mut vector_used = [false; 4];
        for p in &all {
            if p.slot != Slot::T {
                vector_used[p.slot as usize] = true;
            }
        }
        let reads: Vec<Reads> = all
            .iter()
            .map(|p| {
                let mut reads = reads_of(p, chans);
                reads.trans &= p.op.slots(chip) != Slots::Any || vector_used[p.chan as usize];
                reads
            })
            .collect();
        bank::solve(&reads).is_some()
    }

    fn commit(&mut self, i: usize, placed: Vec<Placed>, chip: Chip, state: &mut BlockState) {
        let clause = state.clause.as_mut().expect("open");
        for p in &placed {
            self.used[p.slot as usize] = true;
            clause.origin.insert((clause.groups.len(), p.slot), i);
            for s in &p.srcs {
                self.budget.take(s.kind, chip);
            }
        }
        if placed[0].op.has(flag::KILL) || placed[0].pred {
            self.once = true;
            self.ends_clause = true;
            self.push |= placed[0].pred;
        }
        // GROUP_BARRIER ends its clause.
        if placed[0].op == AluOpcode::GroupBarrier {
            self.ends_clause = true;
        }
        self.lds |= placed[0].op.has(flag::LDS);
        self.members.push(i);
        self.placed.push(placed);
    }
}

/// Makes the kcache sets cover constant `index` of `bank`, adding a set if one is free.
fn cover(sets: &mut Vec<Kcache>, bank: u8, index: u32, chip: Chip) -> bool {
    let covered = sets.iter().any(|k| {
        k.bank == bank
            && (k.line as u32 * 16..(k.line as u32 + k.lines as u32) * 16).contains(&index)
    });
    if covered {
        return true;
    }
    if sets.len() >= chip.kcache_sets() || index / 16 > 255 {
        return false;
    }
    sets.push(Kcache {
        bank,
        line: (index / 16) as u8,
        lines: 2,
    });
    true
}

/// How a placed instruction uses the read ports (values keyed by their number).
fn reads_of(p: &Placed, chans: &[Option<u8>]) -> Reads {
    Reads {
        trans: p.slot == Slot::T,
        srcs: p
            .srcs
            .iter()
            .map(|s| match s.kind {
                PKind::Operand(Operand::Value(v)) => {
                    bank::Operand::Gpr(v.0, chans[v.0 as usize].unwrap_or(0))
                }
                PKind::Pv(_)
                | PKind::Ps
                | PKind::LdsPop
                | PKind::Operand(Operand::Param { .. }) => bank::Operand::Forwarded,
                PKind::Operand(Operand::Const(_) | Operand::Kcache { .. }) => {
                    bank::Operand::Constant
                }
                PKind::Operand(Operand::Indexed(indexed)) => {
                    bank::Operand::Gpr(indexed_read_key(indexed), indexed.chan)
                }
            })
            .collect(),
    }
}

/// Whether reading `operand` takes a GPR read port.
fn takes_port(operand: Operand) -> bool {
    matches!(operand, Operand::Value(_) | Operand::Indexed(_))
}

/// The read-port key of an indexed register read, apart from every value's: a relative read
/// is taken to read its own address, whatever AR holds.
fn indexed_read_key(indexed: Indexed) -> u32 {
    let relative = if indexed.index.is_some() { 1 << 16 } else { 0 };
    0x8000_0000 | relative | u32::from(indexed.reg)
}

/// The index an instruction's relative operands add to AR, if it has any.
fn ar_index(inst: &Inst) -> Result<Option<VReg>, PackError> {
    match inst {
        Inst::Alu(alu) => alu
            .relative_index()
            .ok_or_else(|| PackError("an instruction relative to two different indices".into())),
        _ => Ok(None),
    }
}

impl Packed {
    /// Every ALU clause, fetch clause and export, in program order.
    pub(crate) fn items(&self) -> Vec<&Item> {
        fn walk<'p>(nodes: &'p [PNode], out: &mut Vec<&'p Item>) {
            for node in nodes {
                match node {
                    PNode::Block(items) => out.extend(items),
                    PNode::If { then, otherwise } => nested(|| {
                        walk(then, out);
                        walk(otherwise, out);
                    }),
                    PNode::Loop(body) => nested(|| walk(body, out)),
                    PNode::Break | PNode::Continue | PNode::Call(_) => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.body, &mut out);
        out
    }

    /// [`Packed::items`], to change.
    pub(crate) fn items_mut(&mut self) -> Vec<&mut Item> {
        fn walk<'p>(nodes: &'p mut [PNode], out: &mut Vec<&'p mut Item>) {
            for node in nodes {
                match node {
                    PNode::Block(items) => out.extend(items),
                    PNode::If { then, otherwise } => nested(|| {
                        walk(then, out);
                        walk(otherwise, out);
                    }),
                    PNode::Loop(body) => nested(|| walk(body, out)),
                    PNode::Break | PNode::Continue | PNode::Call(_) => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&mut self.body, &mut out);
        out
    }

    /// Elements of scratch memory a lane needs.
    pub fn scratch_size(&self) -> u16 {
        self.scratch_elements.max(self.spill_elements.end)
    }

    /// The elements from `element` on an index may reach (ARRAY_SIZE): to the temporaries'
    /// end, or the element alone when it holds spilled values (never indexed).
    pub fn array_size(&self, element: u16) -> u16 {
        if self.spill_elements.contains(&element) {
            1
        } else {
            self.scratch_elements - element
        }
    }

    /// Each ALU clause, in program order.
    pub(crate) fn clauses(&self) -> Vec<&Clause> {
        (self.items().into_iter())
            .filter_map(|item| match item {
                Item::Alu(clause) => Some(clause),
                _ => None,
            })
            .collect()
    }
}

impl Placed {
    /// The instruction as a line: its slot, destination (value and channel), opcode and
    /// sources, where a value read is named with its channel and PV/PS stand for the previous
    /// group's results.
    fn text(&self, chans: &[Option<u8>]) -> String {
        let value = |v: VReg| {
            let chan = chans.get(v.0 as usize).copied().flatten();
            format!("{v}.{}", chan.map_or('?', channel))
        };
        let dst = match (self.dst, self.indexed) {
            (Some(v), _) => format!("{v}.{}", channel(self.chan)),
            (None, Some(indexed)) => indexed.to_string(),
            (None, None) => "_".into(),
        };
        let srcs: Vec<String> = self
            .srcs
            .iter()
            .map(|src| {
                let operand = match src.kind {
                    PKind::Operand(Operand::Value(v)) => value(v),
                    PKind::Operand(operand) => operand.to_string(),
                    PKind::Pv(c) => format!("PV.{}", channel(c)),
                    PKind::Ps => "PS".into(),
                    PKind::LdsPop => "LDS_OQ_A_POP".into(),
                };
                match (src.neg, src.abs) {
                    (true, true) => format!("-|{operand}|"),
                    (true, false) => format!("-{operand}"),
                    (false, true) => format!("|{operand}|"),
                    (false, false) => operand,
                }
            })
            .collect();
        let modifiers = match (self.clamp, self.pred) {
            (true, true) => ".sat.pred",
            (true, false) => ".sat",
            (false, true) => ".pred",
            (false, false) => "",
        };
        format!(
            "{}: {dst} = {}{modifiers} {}",
            self.slot.letter(),
            self.op.mnemonic(),
            srcs.join(", ")
        )
    }
}

impl MachineIr for Packed {
    /// The tree, indented: each ALU clause's groups numbered, an instruction a line with its
    /// slot; fetches and exports as the R600 IR prints them.
    fn print(&self) -> String {
        fn tree(out: &mut String, nodes: &[PNode], chans: &[Option<u8>], depth: usize) {
            let pad = indentation(depth);
            for node in nodes {
                match node {
                    PNode::Block(items) => {
                        for item in items {
                            match item {
                                Item::Alu(clause) => {
                                    let push = if clause.push { " push" } else { "" };
                                    out.push_str(&format!("{pad}alu clause{push}\n"));
                                    for (g, group) in clause.groups.iter().enumerate() {
                                        for placed in group {
                                            out.push_str(&format!(
                                                "{pad}{g:>4} {}\n",
                                                placed.text(chans)
                                            ));
                                        }
                                    }
                                }
                                Item::Fetch(fetches) => {
                                    out.push_str(&format!("{pad}fetch clause\n"));
                                    for fetch in fetches {
                                        let fetch = Inst::Fetch(fetch.clone());
                                        out.push_str(&format!("{pad}     {fetch}\n"));
                                    }
                                }
                                Item::Export(export) => {
                                    let export = Inst::Export(export.clone());
                                    out.push_str(&format!("{pad}{export}\n"));
                                }
                            }
                        }
                    }
                    PNode::If { then, otherwise } => {
                        out.push_str(&format!("{pad}if {{\n"));
                        nested(|| tree(out, then, chans, depth + 1));
                        out.push_str(&format!("{pad}}} else {{\n"));
                        nested(|| tree(out, otherwise, chans, depth + 1));
                        out.push_str(&format!("{pad}}}\n"));
                    }
                    PNode::Loop(body) => {
                        out.push_str(&format!("{pad}loop {{\n"));
                        nested(|| tree(out, body, chans, depth + 1));
                        out.push_str(&format!("{pad}}}\n"));
                    }
                    PNode::Break => out.push_str(&format!("{pad}break\n")),
                    PNode::Continue => out.push_str(&format!("{pad}continue\n")),
                    PNode::Call(function) => out.push_str(&format!("{pad}call {function}\n")),
                }
            }
        }
        let mut out = format!("{} scratch elements", self.scratch_elements);
        if !self.spill_elements.is_empty() {
            let Range { start, end } = self.spill_elements;
            out += &format!(", spilled values in elements {start}..{end}");
        }
        out.push('\n');
        tree(&mut out, &self.body, &self.chans, 0);
        out
    }

    /// Every group holds one to five instructions in distinct slots, each in a vector slot
    /// writing that slot's channel; every value keeps one channel; a PV or PS read follows a
    /// group of the same clause that wrote that slot.
    fn validate(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        for clause in self.clauses() {
            let mut previous: Option<&Vec<Placed>> = None;
            for (g, group) in clause.groups.iter().enumerate() {
                if group.is_empty() || group.len() > 5 {
                    errors.push(format!("group {g}: {} instructions", group.len()));
                }
                let mut slots: Vec<Slot> = group.iter().map(|p| p.slot).collect();
                slots.sort();
                if slots.windows(2).any(|pair| pair[0] == pair[1]) {
                    errors.push(format!("group {g}: two instructions in one slot"));
                }
                for placed in group {
                    let text = placed.text(&self.chans);
                    if placed.slot != Slot::T && placed.chan != placed.slot as u8 {
                        errors.push(format!("group {g}: `{text}` writes another slot's channel"));
                    }
                    if let Some(v) = placed.dst
                        && self.chans.get(v.0 as usize).copied().flatten() != Some(placed.chan)
                    {
                        errors.push(format!("group {g}: `{text}` writes {v} off its channel"));
                    }
                    for src in &placed.srcs {
                        let forwarded = match src.kind {
                            PKind::Pv(c) => Some(Slot::VECTOR[c as usize & 3]),
                            PKind::Ps => Some(Slot::T),
                            PKind::Operand(_) | PKind::LdsPop => None,
                        };
                        let Some(slot) = forwarded else { continue };
                        let wrote = previous.is_some_and(|group| {
                            group
                                .iter()
                                .any(|p| p.slot == slot && (p.dst.is_some() || p.indexed.is_some()))
                        });
                        if !wrote {
                            errors.push(format!(
                                "group {g}: `{text}` reads a result the previous group did not \
                                 write"
                            ));
                        }
                    }
                }
                previous = Some(group);
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(errors.join("\n")),
        }
    }

    fn instruction_count(&self) -> usize {
        (self.items().iter())
            .map(|item| match item {
                Item::Alu(clause) => clause.groups.iter().map(Vec::len).sum(),
                Item::Fetch(fetches) => fetches.len(),
                Item::Export(_) => 1,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::ExportType;
    use crate::regalloc::{Allocated, Allocation};
    use std::borrow::Cow;

    /// Whether the dependences `kept` (each instruction's, on earlier ones) order every pair
    /// `all` orders as strictly, through a path if not directly, and hold no pair `all` does
    /// not.
    fn same_order(kept: &[Vec<(usize, Dep)>], all: &[Vec<(usize, Dep)>]) -> bool {
        let strict = |dep: Dep| dep == Dep::After;
        // By instruction, for each earlier one: None, or whether it must come strictly after.
        let mut implied: Vec<Vec<Option<bool>>> = Vec::new();
        for deps in kept {
            let mut order = vec![None; implied.len()];
            for &(k, dep) in deps {
                let through = implied[k].iter().enumerate();
                let paths = through.filter_map(|(j, &o)| Some((j, o? || strict(dep))));
                for (j, after) in paths.chain([(k, strict(dep))]).collect::<Vec<_>>() {
                    order[j] = order[j].max(Some(after));
                }
            }
            implied.push(order);
        }
        let kept_in_all = (kept.iter().zip(all)).all(|(k, a)| k.iter().all(|d| a.contains(d)));
        let all_implied = all.iter().enumerate().all(|(i, deps)| {
            deps.iter()
                .all(|&(j, dep)| implied[i][j] >= Some(strict(dep)))
        });
        kept_in_all && all_implied
    }

    /// A xorshift generator: the tests' random accesses, the same every run.
    fn random(state: &mut u64, below: u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state % below
    }

    #[test]
    fn indexed_register_order_keeps_what_every_pair_of_accesses_needs() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..300 {
            let mut orders: HashMap<u8, IndexedOrder> = HashMap::new();
            let mut earlier: Vec<(usize, Indexed, bool)> = Vec::new();
            let (mut kept, mut all) = (Vec::new(), Vec::new());
            for i in 0..30 {
                // Up to two reads, then perhaps a write, as an instruction has them.
                let (reads, write) = (random(&mut state, 3), random(&mut state, 2) == 0);
                let accesses: Vec<(Indexed, bool)> = (0..reads + u64::from(write))
                    .map(|k| {
                        let access = Indexed {
                            reg: random(&mut state, 3) as u16,
                            chan: random(&mut state, 2) as u8,
                            index: (random(&mut state, 3) == 0).then_some(VReg(0)),
                        };
                        (access, k == reads)
                    })
                    .collect();
                let mut deps = Vec::new();
                let mut pairwise = Vec::new();
                for &(access, write) in &accesses {
                    orders
                        .entry(access.chan)
                        .or_default()
                        .deps(access, write, &mut deps);
                    for &(j, other, other_write) in &earlier {
                        if (write || other_write) && access.may_alias(other) {
                            let dep = if write && !other_write {
                                Dep::NotBefore
                            } else {
                                Dep::After
                            };
                            pairwise.push((j, dep));
                        }
                    }
                }
                for &(access, write) in &accesses {
                    orders
                        .entry(access.chan)
                        .or_default()
                        .record(i, access, write);
                    earlier.push((i, access, write));
                }
                kept.push(deps);
                all.push(pairwise);
            }
            assert!(same_order(&kept, &all), "{kept:?}\n{all:?}");
        }
    }

    #[test]
    fn scratch_order_keeps_what_every_pair_of_accesses_needs() {
        let mut state = 0x2545_f491_4f6c_dd1d;
        for _ in 0..300 {
            let mut order = ScratchOrder::default();
            let mut earlier: Vec<bool> = Vec::new();
            let (mut kept, mut all) = (Vec::new(), Vec::new());
            for i in 0..30 {
                let write = random(&mut state, 2) == 0;
                let mut deps = Vec::new();
                order.access(i, write, &mut deps);
                let pairwise = (earlier.iter().enumerate())
                    .filter(|&(_, &other_write)| other_write != write)
                    .map(|(j, _)| (j, Dep::After))
                    .collect();
                earlier.push(write);
                kept.push(deps);
                all.push(pairwise);
            }
            assert!(same_order(&kept, &all), "{kept:?}\n{all:?}");
        }
    }

    /// `dst = MOV src` in `slot`, writing channel `chan`.
    fn mov(slot: Slot, dst: u32, chan: u8, src: PKind) -> Placed {
        Placed {
            slot,
            op: AluOpcode::Mov,
            dst: Some(VReg(dst)),
            indexed: None,
            chan,
            srcs: vec![PSrc {
                kind: src,
                neg: false,
                abs: false,
            }],
            clamp: false,
            pred: false,
            origin: None,
        }
    }

    fn packed(groups: Vec<Vec<Placed>>, chans: Vec<Option<u8>>) -> Packed {
        Packed {
            body: vec![PNode::Block(vec![Item::Alu(Clause {
                groups,
                ..Clause::default()
            })])],
            chans,
            ..Packed::default()
        }
    }

    #[test]
    fn the_validator_checks_slots_channels_and_forwarding() {
        let good = packed(
            vec![
                vec![mov(Slot::X, 0, 0, PKind::Operand(Operand::Const(0)))],
                vec![mov(Slot::Y, 1, 1, PKind::Pv(0))],
            ],
            vec![Some(0), Some(1)],
        );
        assert_eq!(good.validate(), Ok(()));
        assert!(
            good.print().contains("1 y: v1.y = MOV PV.x"),
            "{}",
            good.print()
        );
        let forwarded_from_nothing = packed(
            vec![vec![mov(Slot::Y, 1, 1, PKind::Pv(0))]],
            vec![None, Some(1)],
        );
        let error = forwarded_from_nothing.validate().unwrap_err();
        assert!(error.contains("previous group did not write"), "{error}");
        let off_channel = packed(
            vec![vec![mov(Slot::X, 0, 0, PKind::Operand(Operand::Const(0)))]],
            vec![Some(2)],
        );
        let error = off_channel.validate().unwrap_err();
        assert!(error.contains("off its channel"), "{error}");
        let wrong_slot = packed(
            vec![vec![mov(Slot::Z, 0, 0, PKind::Operand(Operand::Const(0)))]],
            vec![Some(0)],
        );
        let error = wrong_slot.validate().unwrap_err();
        assert!(error.contains("another slot's channel"), "{error}");
    }

    /// A DOT4 of eight values an earlier block put on the channels `chans` (of its first
    /// operands, then its second ones), exported.
    fn dot_of_values_on(chans: [u8; 8]) -> (Lir, Units) {
        use crate::lir::{Lane, Multi, SlotPart};
        let define = (0..8)
            .map(|v| mov_of(v, 1.5 + v as f32))
            .collect::<Vec<_>>();
        let slots = std::array::from_fn(|k| SlotPart {
            dst: (k == 0).then_some(VReg(8)),
            srcs: vec![Src::value(VReg(k as u32)), Src::value(VReg(4 + k as u32))],
        });
        let dot = Inst::Multi(Multi {
            op: AluOpcode::Dot4Ieee,
            slots,
            origin: None,
        });
        let export = Inst::Export(Export::new(
            ExportType::Pixel,
            0,
            [Lane::Value(VReg(8)), Lane::Zero, Lane::Zero, Lane::Zero],
        ));
        let mut lir = Lir {
            body: vec![Node::Block(define), Node::Block(vec![dot, export])],
            values: 9,
            ..Lir::default()
        };
        let mut units = crate::units::form_units(&mut lir);
        units
            .forced
            .extend((0..8).map(|v| (VReg(v), chans[v as usize])));
        (lir, units)
    }

    fn mov_of(dst: u32, x: f32) -> Inst {
        Inst::Alu(Alu::new(
            AluOpcode::Mov,
            Some(VReg(dst)),
            vec![Src::float(x)],
        ))
    }

    #[test]
    fn a_dot4_packs_whatever_channels_its_operands_have() {
        // Every operand on one channel, then a spread of channel assignments.
        let mut cases: Vec<[u8; 8]> = (0..4).map(|c| [c; 8]).collect();
        let mut seed = 1u32;
        cases.extend((0..300).map(|_| {
            std::array::from_fn(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (seed >> 16) as u8 % 4
            })
        }));
        for chip in [Chip::Evergreen, Chip::Cayman] {
            for chans in &cases {
                let (lir, units) = dot_of_values_on(*chans);
                let packed =
                    pack(&lir, &units, chip).unwrap_or_else(|e| panic!("{chip:?} {chans:?}: {e}"));
                assert_eq!(packed.validate(), Ok(()), "{chip:?} {chans:?}");
                let alloc = crate::regalloc::allocate(&packed, &lir, &units, 0)
                    .unwrap_or_else(|e| panic!("{chip:?} {chans:?}: {e:?}"));
                let main = crate::emit::Part::Main {
                    fetch_shader: false,
                };
                crate::emit::emit(&packed, &alloc, chip, main)
                    .unwrap_or_else(|e| panic!("{chip:?} {chans:?}: {e}"));
            }
        }
    }

    #[test]
    fn the_allocation_validator_checks_registers() {
        let packed = packed(
            vec![vec![
                mov(Slot::X, 1, 0, PKind::Operand(Operand::Value(VReg(0)))),
                mov(Slot::Y, 2, 1, PKind::Operand(Operand::Value(VReg(0)))),
            ]],
            vec![Some(0), Some(0), Some(1)],
        );
        let allocated = |gpr: Vec<Option<u8>>| Allocated {
            packed: Cow::Borrowed(&packed),
            alloc: Allocation {
                gpr,
                gprs: 2,
                ..Allocation::default()
            },
        };
        assert_eq!(
            allocated(vec![Some(0), Some(1), Some(1)]).validate(),
            Ok(())
        );
        let unallocated = allocated(vec![None, Some(1), Some(1)])
            .validate()
            .unwrap_err();
        assert!(
            unallocated.contains("v0 is read from a GPR but has none"),
            "{unallocated}"
        );
        let beyond = allocated(vec![Some(5), Some(1), Some(1)])
            .validate()
            .unwrap_err();
        assert!(beyond.contains("past the 2 GPRs"), "{beyond}");
        let printed = allocated(vec![Some(0), Some(1), Some(1)]).print();
        assert!(
            printed.starts_with("2 GPRs: v0=R0.x v1=R1.x v2=R1.y"),
            "{printed}"
        );
    }
}
