//! Emission: the packed, allocated program as a machine [`Program`]: the CF program with its
//! clauses, the control flow as the CF stack runs it, and the stack size it needs.
//!
//! What: each ALU clause becomes an ALU CF instruction (ALU_PUSH_BEFORE when it ends with an
//! `if`'s predicate set) with its groups, registers, kcache windows, literals and bank
//! swizzles; fetch clauses TEX or VTX; exports EXPORT, the last of each kind EXPORT_DONE. An
//! `if` is `JUMP` (to the ELSE, or past the POP with POP:1), the arm, `ELSE` (POP:1, past the
//! POP), the other arm, `POP`; a loop is `LOOP_START_DX10` (past its end), the body,
//! `LOOP_END` (to the body), with `LOOP_BREAK` and `LOOP_CONTINUE` pointing at the LOOP_END. A
//! POP right after a plain ALU clause (and targeted by no jump) folds into it as ALU_POP_AFTER
//! (ALU_POP2_AFTER after an ALU_POP_AFTER). The stack size follows Mesa's count: an
//! entry per push, four per loop, plus the chip's extra entries. Scratch writes are
//! MEM_SCRATCH with acknowledgement, and a WAIT_ACK goes before a fetch clause that reads
//! scratch memory when a write may still be in flight there: after one on some path to it,
//! taking every path through ifs (an arm may be skipped) and around loops.
//!
//! Why: the last step of the straight line; what the encoder writes and the emulator runs.
//!
//! Invariants: a trans-slot instruction the hardware would issue in the free vector slot of
//! its channel is put there, and the next group reads it as PV instead of PS; the stack size
//! covers the deepest nesting.

use crate::bank;
use crate::disasm::listing;
use crate::encoding::assemble;
use crate::isa::{AluOpcode, CfOp, Chip, FetchOp, sel};
use crate::lir::{Indexed, Lane, Operand};
use crate::pack::{Item, PKind, PNode, Packed, Placed};
use crate::program::{
    AluInst, Cf, CfBody, Dst, Export, ExportType, Fetch, Group, Kcache, PredSel, Program, Slot,
    Src, end_program,
};
use crate::regalloc::Allocation;
use shrew_engine::deep::nested;
use shrew_engine::passes::machine::MachineIr;
use shrew_engine::rewrite::NestingBudget;

/// Which part of a program is emitted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// The main program, which ends the program; a vertex shader's (`fetch_shader`) starts
    /// with the call of its fetch shader.
    Main { fetch_shader: bool },
    /// A subroutine, which returns (RET) to its caller.
    Subroutine,
}

/// A CALL of an emitted part.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// Its CF index.
    pub at: usize,
    /// The shader's function it calls.
    pub callee: u32,
    /// The loops and the pushes on the stack there.
    pub nesting: Nesting,
}

/// Loops and pushes on the CF stack.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Nesting {
    pub loops: u32,
    pub pushes: u32,
}

/// The most stack elements a program may use: STACK_SIZE, 8 bits wide, counts entries of four.
pub const STACK_ELEMENTS: u32 = 255 * 4;
/// The elements a loop takes while its body runs.
pub const LOOP_ELEMENTS: u32 = 4;
/// The elements a push (an `if`) takes while its arms run.
pub const PUSH_ELEMENTS: u32 = 1;

impl Nesting {
    /// The stack elements this nesting takes on `chip`: four per loop, one
    /// per push, plus the chip's extra elements.
    pub fn elements(self, chip: Chip) -> u32 {
        let mut elements = self.loops * LOOP_ELEMENTS + self.pushes * PUSH_ELEMENTS;
        if self.pushes > 0 {
            elements += match chip {
                Chip::R600 | Chip::R700 => 2,
                Chip::Evergreen => 1,
                Chip::Cayman => 0,
            };
        }
        if chip == Chip::Cayman {
            elements += 2;
        }
        elements
    }

    /// The nesting the mid-end keeps a function within on `chip` (`flatten-deep-cf`): the
    /// stack less the chip's extra elements and the loop of one trip a function returning
    /// early runs in.
    pub fn budget(chip: Chip) -> NestingBudget {
        let extra = Nesting {
            loops: 0,
            pushes: 1,
        }
        .elements(chip)
            - PUSH_ELEMENTS;
        NestingBudget {
            limit: STACK_ELEMENTS - extra - LOOP_ELEMENTS,
            per_loop: LOOP_ELEMENTS,
            per_if: PUSH_ELEMENTS,
        }
    }

    /// Each count the larger of the two's.
    pub fn max(self, other: Nesting) -> Nesting {
        Nesting {
            loops: self.loops.max(other.loops),
            pushes: self.pushes.max(other.pushes),
        }
    }
}

/// An emitted part and what linking it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Emitted {
    /// The part; its stack size covers its own nesting, not its calls' (at most the field's
    /// 255 entries: [`Emitted::stack_elements`] is the true need).
    pub program: Program,
    /// The most stack elements the part's own nesting uses at once.
    pub stack_elements: u32,
    pub calls: Vec<CallSite>,
    /// The most loops and the most pushes on the stack at once (each counted on its own).
    pub nesting: Nesting,
    /// The scratch writes and reads of spilled values.
    pub spills: u32,
    pub fills: u32,
}

/// Emits a part of the program. An error is a group the packer accepted that the hardware
/// cannot run (a bug).
pub fn emit(
    packed: &Packed,
    alloc: &Allocation,
    chip: Chip,
    part: Part,
) -> Result<Emitted, String> {
    let mut e = Emitter {
        chip,
        packed,
        alloc,
        cf: Vec::new(),
        nesting: Nesting::default(),
        deepest: 0,
        most: Nesting::default(),
        calls: Vec::new(),
        loop_exits: Vec::new(),
        targets: Vec::new(),
        loop_writes: loops_writing_scratch(&packed.body).into_iter(),
        // A subroutine's caller may have written scratch memory just before the call.
        writes_in_flight: part == Part::Subroutine,
    };
    if part == (Part::Main { fetch_shader: true }) {
        e.push_cf(Cf::flow(CfOp::CallFs, 0, 0));
    }
    e.nodes(&packed.body)?;
    Ok(e.finish(part))
}

struct Emitter<'a> {
    chip: Chip,
    packed: &'a Packed,
    alloc: &'a Allocation,
    cf: Vec<Cf>,
    /// The stack now.
    nesting: Nesting,
    /// The most stack elements in use at once.
    deepest: u32,
    /// The most loops and pushes at once, each counted on its own.
    most: Nesting,
    calls: Vec<CallSite>,
    /// The LOOP_BREAK and LOOP_CONTINUE instructions of the loops being emitted.
    loop_exits: Vec<Vec<usize>>,
    /// CF indices some instruction jumps to.
    targets: Vec<usize>,
    /// Whether each loop holds a scratch write, in the order the loops are emitted.
    loop_writes: std::vec::IntoIter<bool>,
    /// Whether a scratch write may not have landed at this point of the program.
    writes_in_flight: bool,
}

impl Emitter<'_> {
    fn push_cf(&mut self, cf: Cf) -> usize {
        self.cf.push(cf);
        self.cf.len() - 1
    }

    fn set_addr(&mut self, at: usize, to: usize) {
        if let CfBody::Flow { addr, .. } = &mut self.cf[at].body {
            *addr = to as u32;
        }
        self.targets.push(to);
    }

    /// Notes the stack elements in use now.
    fn note_stack(&mut self) {
        self.deepest = self.deepest.max(self.nesting.elements(self.chip));
        self.most = self.most.max(self.nesting);
    }

    fn nodes(&mut self, nodes: &[PNode]) -> Result<(), String> {
        for node in nodes {
            match node {
                PNode::Block(items) => {
                    for item in items {
                        self.item(item)?;
                    }
                }
                PNode::If { then, otherwise } => {
                    // The block before ended with an ALU_PUSH_BEFORE.
                    self.nesting.pushes += 1;
                    self.note_stack();
                    let has_else = !otherwise.is_empty();
                    let jump = self.push_cf(Cf::flow(CfOp::Jump, 0, if has_else { 0 } else { 1 }));
                    // Either arm may run, or be skipped, without the other.
                    let before = self.writes_in_flight;
                    nested(|| self.nodes(then))?;
                    self.writes_in_flight |= before;
                    if has_else {
                        let else_at = self.push_cf(Cf::flow(CfOp::Else, 0, 1));
                        self.set_addr(jump, else_at);
                        let after_then = self.writes_in_flight;
                        nested(|| self.nodes(otherwise))?;
                        self.writes_in_flight |= after_then;
                        let pop = self.push_cf(Cf::flow(CfOp::Pop, 0, 1));
                        self.set_addr(else_at, pop + 1);
                    } else {
                        let pop = self.push_cf(Cf::flow(CfOp::Pop, 0, 1));
                        self.set_addr(jump, pop + 1);
                    }
                    self.nesting.pushes -= 1;
                }
                PNode::Loop(body) => {
                    let start = self.push_cf(Cf::flow(CfOp::LoopStartDx10, 0, 0));
                    self.nesting.loops += 1;
                    self.note_stack();
                    self.loop_exits.push(Vec::new());
                    // A write of one iteration may be in flight in the next, and after the
                    // loop (a break may leave before the iteration's WAIT_ACK).
                    let writes = self.loop_writes.next().expect("one per loop");
                    self.writes_in_flight |= writes;
                    nested(|| self.nodes(body))?;
                    self.writes_in_flight |= writes;
                    let end = self.push_cf(Cf::flow(CfOp::LoopEnd, 0, 0));
                    self.set_addr(end, start + 1);
                    self.set_addr(start, end + 1);
                    for exit in self.loop_exits.pop().expect("pushed") {
                        self.set_addr(exit, end);
                    }
                    self.nesting.loops -= 1;
                }
                PNode::Break | PNode::Continue => {
                    let op = if matches!(node, PNode::Break) {
                        CfOp::LoopBreak
                    } else {
                        CfOp::LoopContinue
                    };
                    let at = self.push_cf(Cf::flow(op, 0, 0));
                    self.loop_exits.last_mut().expect("inside a loop").push(at);
                }
                &PNode::Call(callee) => {
                    let at = self.push_cf(Cf::flow(CfOp::Call, 0, 0));
                    self.calls.push(CallSite {
                        at,
                        callee,
                        nesting: self.nesting,
                    });
                    // The subroutine may have written scratch memory just before returning.
                    self.writes_in_flight = true;
                }
            }
        }
        Ok(())
    }

    fn item(&mut self, item: &Item) -> Result<(), String> {
        match item {
            Item::Alu(clause) => {
                // The other wavefronts of the workgroup read what this one wrote once they
                // pass the barrier.
                let barrier =
                    (clause.groups.iter().flatten()).any(|p| p.op == AluOpcode::GroupBarrier);
                if barrier && self.writes_in_flight {
                    self.push_cf(Cf::flow(CfOp::WaitAck, 0, 0));
                    self.writes_in_flight = false;
                }
                let mut groups = Vec::new();
                // The slot each instruction of the previous group really took, for PV/PS.
                let mut previous: Vec<(Slot, Slot)> = Vec::new();
                for placed in &clause.groups {
                    let (group, slots) = self.group(placed, &clause.kcache, &previous)?;
                    previous = slots;
                    groups.push(group);
                }
                let op = if clause.push {
                    CfOp::AluPushBefore
                } else {
                    CfOp::Alu
                };
                self.push_cf(Cf::new(
                    op,
                    CfBody::Alu {
                        kcache: clause.kcache.clone(),
                        groups,
                    },
                ));
            }
            Item::Fetch(fetches) => {
                let op = fetches
                    .first()
                    .map_or(CfOp::Tex, |f| f.op.clause(self.chip));
                let body = fetches.iter().flat_map(|f| self.fetch(f)).collect();
                if self.writes_in_flight && fetches.iter().any(|f| f.reads_memory()) {
                    self.push_cf(Cf::flow(CfOp::WaitAck, 0, 0));
                    self.writes_in_flight = false;
                }
                let mut cf = Cf::new(op, CfBody::Fetch(body));
                cf.valid_pixel_mode = fetches.first().is_some_and(|f| f.valid_pixels);
                self.push_cf(cf);
            }
            Item::Export(export) if export.kind == ExportType::Scratch => {
                let (gpr, swizzle) = self.lanes(&export.srcs);
                let (index_gpr, _) = self.lanes(&export.index);
                let indexed = export.index[0] != Lane::Unused;
                self.push_cf(Cf::new(
                    CfOp::MemScratch,
                    CfBody::Export(Export {
                        elem_size: 3,
                        index_gpr: indexed.then_some(index_gpr),
                        ack: true,
                        array_size: self.packed.array_size(export.base),
                        ..Export::new(export.kind, export.base, gpr, swizzle)
                    }),
                ));
                self.writes_in_flight = true;
            }
            Item::Export(export) if export.kind == ExportType::Rat => {
                let (gpr, swizzle) = self.lanes(&export.srcs);
                let (index_gpr, _) = self.lanes(&export.index);
                // Buffer writes and atomics are acknowledged: fetches of the buffer or of
                // the atomics' returns wait for them. Helper pixels write nothing.
                let ack = export.acknowledged();
                let mut cf = Cf::new(
                    CfOp::MemRat,
                    CfBody::Export(Export {
                        index_gpr: Some(index_gpr),
                        rat_inst: export.rat_inst,
                        ack,
                        ..Export::new(export.kind, export.base, gpr, swizzle)
                    }),
                );
                cf.valid_pixel_mode = true;
                self.push_cf(cf);
                self.writes_in_flight |= ack;
            }
            Item::Export(export) => {
                let (gpr, swizzle) = self.lanes(&export.srcs);
                self.push_cf(Cf::new(
                    CfOp::Export,
                    CfBody::Export(Export::new(export.kind, export.base, gpr, swizzle)),
                ));
            }
        }
        Ok(())
    }

    fn chan(&self, v: crate::lir::VReg) -> u8 {
        self.packed.chans[v.0 as usize].unwrap_or(0)
    }

    fn gpr(&self, v: crate::lir::VReg) -> Option<u8> {
        self.alloc.gpr[v.0 as usize]
    }

    /// The GPR of an indexed register (the base of a relative operand).
    fn indexed_gpr(&self, indexed: Indexed) -> u8 {
        self.alloc.indexed_base + indexed.reg as u8
    }

    /// A GPR and the swizzle selecting `lanes` from it (0-3 channels, 4 zero, 5 one, 7 none).
    fn lanes(&self, lanes: &[Lane; 4]) -> (u8, [u8; 4]) {
        let mut gpr = 0;
        let swizzle = lanes.map(|lane| match lane {
            Lane::Value(v) => {
                gpr = self.gpr(v).unwrap_or(0);
                self.chan(v)
            }
            Lane::Zero => 4,
            Lane::One => 5,
            Lane::Unused => 7,
        });
        (gpr, swizzle)
    }

    /// The hardware fetches of `f`: itself, after its SET_GRADIENTS_H and _V if it has
    /// gradients.
    fn fetch(&self, f: &crate::lir::Fetch) -> Vec<Fetch> {
        let mut fetches = Vec::new();
        for (lanes, op) in f.gradients.iter().flat_map(|g| {
            g.iter()
                .zip([FetchOp::SetGradientsH, FetchOp::SetGradientsV])
        }) {
            let (src_gpr, src_sel) = self.lanes(lanes);
            fetches.push(Fetch {
                op,
                resource: f.resource,
                sampler: f.sampler,
                src_gpr,
                src_sel,
                dst_gpr: 0,
                dst_sel: [7; 4],
                coord_normalized: f.coord_normalized,
                lod_bias: 0,
                offset: [0; 3],
                vtx: Default::default(),
            });
        }
        fetches.push(self.fetch_of(f));
        fetches
    }

    fn fetch_of(&self, f: &crate::lir::Fetch) -> Fetch {
        let (src_gpr, mut src_sel) = self.lanes(&f.srcs);
        // A vertex fetch's address field has no "unused": one that reads no address (a
        // scratch read at a constant element) leaves it at x.
        if f.op.is_vertex_fetch() && src_sel[0] == 7 {
            src_sel[0] = 0;
        }
        let mut dst_gpr = 0;
        let mut dst_sel = [7u8; 4];
        for (k, dst) in f.dsts.iter().enumerate() {
            if let Some(v) = dst
                && let Some(g) = self.gpr(*v)
            {
                dst_gpr = g;
                dst_sel[self.chan(*v) as usize] = k as u8;
            }
        }
        Fetch {
            op: f.op,
            resource: f.resource,
            sampler: f.sampler,
            src_gpr,
            src_sel,
            dst_gpr,
            dst_sel,
            coord_normalized: f.coord_normalized,
            lod_bias: 0,
            offset: f.offset,
            vtx: f.vtx,
        }
    }

    /// One group: its instructions in the slots the hardware gives them, the literals, the bank
    /// swizzles; and for each instruction the packer's slot and the real one.
    fn group(
        &self,
        placed: &[Placed],
        kcache: &[Kcache],
        previous: &[(Slot, Slot)],
    ) -> Result<(Group, Vec<(Slot, Slot)>), String> {
        let mut literals: Vec<u32> = Vec::new();
        let insts: Vec<(Slot, AluInst)> = placed
            .iter()
            .map(|p| {
                let srcs: Vec<Src> = p
                    .srcs
                    .iter()
                    .map(|s| {
                        let mut src = match s.kind {
                            PKind::Operand(Operand::Value(v)) => {
                                Src::gpr(self.gpr(v).unwrap_or(0), self.chan(v))
                            }
                            PKind::Pv(c) => forwarded(previous, Slot::VECTOR[c as usize]),
                            PKind::Ps => forwarded(previous, Slot::T),
                            PKind::LdsPop => Src::sel(sel::LDS_OQ_A_POP, 0),
                            PKind::Operand(Operand::Const(bits)) => {
                                match sel::inline_constant(bits) {
                                    Some(inline) => Src::sel(inline, 0),
                                    None => {
                                        let k = literals
                                            .iter()
                                            .position(|&l| l == bits)
                                            .unwrap_or_else(|| {
                                                literals.push(bits);
                                                literals.len() - 1
                                            });
                                        Src::sel(sel::LITERAL, k as u8)
                                    }
                                }
                            }
                            PKind::Operand(Operand::Kcache { bank, index, chan }) => {
                                let (set, k) = kcache
                                    .iter()
                                    .enumerate()
                                    .find(|(_, k)| {
                                        k.bank == bank
                                            && (k.line as u32 * 16
                                                ..(k.line as u32 + k.lines as u32) * 16)
                                                .contains(&index)
                                    })
                                    .expect("the packer locked a window");
                                Src::sel(
                                    sel::KCACHE[set] + (index - k.line as u32 * 16) as u16,
                                    chan,
                                )
                            }
                            PKind::Operand(Operand::Param { index, chan }) => {
                                Src::sel(sel::PARAM + index, chan)
                            }
                            PKind::Operand(Operand::Indexed(indexed)) => Src {
                                rel: indexed.index.is_some(),
                                ..Src::gpr(self.indexed_gpr(indexed), indexed.chan)
                            },
                        };
                        src.neg = s.neg;
                        src.abs = s.abs;
                        src
                    })
                    .collect();
                let dst = match (p.dst.and_then(|v| self.gpr(v)), p.indexed) {
                    (Some(g), _) => Dst {
                        clamp: p.clamp,
                        ..Dst::gpr(g, p.chan)
                    },
                    (None, Some(indexed)) => Dst {
                        clamp: p.clamp,
                        rel: indexed.index.is_some(),
                        ..Dst::gpr(self.indexed_gpr(indexed), p.chan)
                    },
                    (None, None) => Dst {
                        clamp: p.clamp,
                        ..Dst::none(p.chan)
                    },
                };
                let mut inst = AluInst::new(p.op, dst, &srcs);
                inst.origin = p.origin.clone();
                if p.pred {
                    inst.update_exec_mask = true;
                    inst.update_pred = true;
                }
                inst.pred_sel = PredSel::Off;
                (p.slot, inst)
            })
            .collect();
        // The hardware's slots: an instruction placed in the trans slot whose channel's vector
        // slot is free goes there.
        let mut group = Group {
            insts: insts.iter().map(|(_, i)| i.clone()).collect(),
            literals,
        };
        let hw = group
            .slots(self.chip)
            .ok_or("the packer placed a group the hardware's slots cannot take")?;
        let mut order: Vec<usize> = (0..insts.len()).collect();
        order.sort_by_key(|&i| hw[i]);
        let slots: Vec<(Slot, Slot)> = order.iter().map(|&i| (insts[i].0, hw[i])).collect();
        group.insts = order.iter().map(|&i| insts[i].1.clone()).collect();
        let reads: Vec<bank::Reads> = slots
            .iter()
            .zip(&group.insts)
            .map(|(&(_, slot), inst)| bank::Reads {
                trans: slot == Slot::T,
                srcs: inst
                    .srcs()
                    .iter()
                    .map(|s| match s.sel {
                        0..=127 => bank::Operand::Gpr(s.sel as u32, s.chan),
                        sel::PV | sel::PS => bank::Operand::Forwarded,
                        s if s >= sel::PARAM => bank::Operand::Forwarded,
                        _ => bank::Operand::Constant,
                    })
                    .collect(),
            })
            .collect();
        let swizzles =
            bank::solve(&reads).ok_or("the packer placed a group the read ports cannot serve")?;
        for (inst, bs) in group.insts.iter_mut().zip(swizzles) {
            inst.bank_swizzle = bs;
        }
        Ok((group, slots))
    }

    /// The CF program: exports marked done, POPs folded, the end marked (a RET ends a
    /// subroutine).
    fn finish(mut self, part: Part) -> Emitted {
        // The last export of each kind is EXPORT_DONE.
        for kind in [ExportType::Pixel, ExportType::Pos, ExportType::Param] {
            if let Some(cf) = self
                .cf
                .iter_mut()
                .rev()
                .find(|cf| matches!(&cf.body, CfBody::Export(e) if e.kind == kind))
            {
                cf.op = CfOp::ExportDone;
            }
        }
        self.fold_pops();
        if part == Part::Subroutine {
            self.cf.push(Cf::flow(CfOp::Return, 0, 0));
            return self.emitted();
        }
        let needs_end = self.cf.is_empty()
            || matches!(self.cf.last().map(|c| c.op), Some(op) if op.is_alu())
            || self.targets.contains(&self.cf.len());
        // The CF_ALU words have no END_OF_PROGRAM bit, and a jump past the end needs a target.
        if needs_end && self.chip != Chip::Cayman {
            self.cf.push(Cf::flow(CfOp::Nop, 0, 0));
        }
        end_program(self.chip, &mut self.cf);
        self.emitted()
    }

    fn emitted(self) -> Emitted {
        Emitted {
            program: Program {
                chip: self.chip,
                cf: self.cf,
                gprs: self.alloc.gprs,
                stack_size: u8::try_from(self.deepest.div_ceil(4)).unwrap_or(u8::MAX),
                scratch_elements: self.packed.scratch_size(),
            },
            calls: self.calls,
            stack_elements: self.deepest,
            nesting: self.most,
            spills: self.alloc.spills,
            fills: self.alloc.fills,
        }
    }

    /// Folds each POP:1 that no jump targets into the plain ALU clause before it.
    fn fold_pops(&mut self) {
        let mut targeted = vec![false; self.cf.len() + 1];
        for &t in &self.targets {
            targeted[t] = true;
        }
        // Each old CF index's new one (a folded POP's is the next instruction's).
        let mut moved = Vec::with_capacity(self.cf.len() + 1);
        let mut kept: Vec<Cf> = Vec::with_capacity(self.cf.len());
        for (i, cf) in std::mem::take(&mut self.cf).into_iter().enumerate() {
            moved.push(kept.len());
            let foldable = cf.op == CfOp::Pop
                && matches!(cf.body, CfBody::Flow { pop_count: 1, .. })
                && !targeted[i];
            if let Some(alu) = kept.last_mut()
                && foldable
                && matches!(alu.op, CfOp::Alu | CfOp::AluPopAfter)
            {
                alu.op = if alu.op == CfOp::Alu {
                    CfOp::AluPopAfter
                } else {
                    CfOp::AluPop2After
                };
                continue;
            }
            kept.push(cf);
        }
        moved.push(kept.len());
        for cf in &mut kept {
            if let CfBody::Flow { addr, .. } = &mut cf.body
                && cf.op != CfOp::CfEnd
            {
                *addr = moved[*addr as usize] as u32;
            }
        }
        for t in &mut self.targets {
            *t = moved[*t];
        }
        for call in &mut self.calls {
            call.at = moved[call.at];
        }
        self.cf = kept;
    }
}

/// The PV or PS read of what the previous group computed in the packer's slot `slot`.
fn forwarded(previous: &[(Slot, Slot)], slot: Slot) -> Src {
    let real = previous
        .iter()
        .find(|(packed, _)| *packed == slot)
        .map_or(slot, |&(_, real)| real);
    match real {
        Slot::T => Src::sel(sel::PS, 0),
        s => Src::sel(sel::PV, s as u8),
    }
}

/// Whether each loop of `nodes` holds an acknowledged memory write, outer loops before the loops they
/// hold (the order of emission), in one walk however deep the loops nest.
fn loops_writing_scratch(nodes: &[PNode]) -> Vec<bool> {
    /// Whether `nodes` hold a scratch write; pushes their loops' entries to `out`.
    fn walk(nodes: &[PNode], out: &mut Vec<bool>) -> bool {
        let mut writes = false;
        for node in nodes {
            writes |= match node {
                PNode::Block(items) => {
                    (items.iter()).any(|item| matches!(item, Item::Export(e) if e.acknowledged()))
                }
                PNode::If { then, otherwise } => nested(|| walk(then, out) | walk(otherwise, out)),
                PNode::Loop(body) => {
                    let at = out.len();
                    out.push(false);
                    let inner = nested(|| walk(body, out));
                    out[at] = inner;
                    inner
                }
                PNode::Break | PNode::Continue | PNode::Call(_) => false,
            };
        }
        writes
    }
    let mut out = Vec::new();
    walk(nodes, &mut out);
    out
}

impl MachineIr for Emitted {
    /// The part's assembly, as the disassembler prints its binary (a CALL still aims at the
    /// part's start until linking).
    fn print(&self) -> String {
        assemble(&self.program)
            .map_err(|e| e.to_string())
            .and_then(|binary| {
                listing(&binary, &self.program.alu_origins()).map_err(|e| e.to_string())
            })
            .unwrap_or_else(|e| format!("(not encodable: {e})\n{:#?}\n", self.program))
    }

    /// The part encodes: every field fits and every group is one the hardware can issue.
    fn validate(&self) -> Result<(), String> {
        assemble(&self.program).map(drop).map_err(|e| e.to_string())
    }

    /// ALU instructions, fetches and CF instructions.
    fn instruction_count(&self) -> usize {
        let clauses = self.program.cf.iter().map(|cf| match &cf.body {
            CfBody::Alu { groups, .. } => groups.iter().map(|g| g.insts.len()).sum(),
            CfBody::Fetch(fetches) => fetches.len(),
            _ => 0,
        });
        self.program.cf.len() + clauses.sum::<usize>()
    }
}
