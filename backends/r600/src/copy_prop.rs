//! Copy propagation on the R600 IR: a MOV whose destination is defined once is removed, its
//! readers reading the MOV's source instead, with the MOV's negation and absolute value folded
//! into their source modifiers.
//!
//! Why: lowering turns moves, vector constructions, swizzles, `fneg`, `fabs`, uniform and
//! input reads into MOVs so that it can stay one instruction per operation; on this hardware
//! the modifiers and the constant-file reads are free in the reader.
//!
//! Invariants: a MOV is propagated only when its destination is defined once and its source
//! is a constant, a kcache read, a value defined once, or a value or indexed register
//! component every read of the destination sees unchanged (each follows the MOV in its block,
//! with no write that may touch the source between): so it holds the same value wherever the
//! destination is read; and only when every reader can take the source (an instruction's
//! relative operands must share one index, which AR holds for its group): three-source
//! instructions have no absolute value, fetch and export lanes take only plain values and the
//! constants 0 and 1.0 (a vertex fetch's address only a value), and an instruction must still fit a group on its own
//! ([`crate::pack::fits_alone`]). A MOV that saturates is kept.

use crate::isa::{AluOpcode, Chip, FetchOp, flag};
use crate::lir::{Alu, Inst, Lane, Lir, Operand, Src, VReg};
use crate::pack::fits_alone;
use std::collections::{HashMap, HashSet};

/// Propagates copies until none is left to propagate.
///
/// Round by round: the MOVs that may go are taken in program order, and each goes if all its
/// readers take its source. A round walks the program a fixed number of times (counting
/// definitions; finding, for every MOV at once, whether its readers see its source unchanged:
/// [`sources_unchanged`]; listing each value's readers) and then visits only each MOV's
/// readers, which it keeps by position as propagation moves them from value to value.
pub fn propagate_copies(lir: &mut Lir, chip: Chip) {
    let mut blocks: Vec<Vec<Option<Inst>>> = Vec::new();
    lir.for_each_block_mut(&mut |insts| blocks.push(insts.drain(..).map(Some).collect()));
    while propagation_round(&mut blocks, lir, chip) {}
    let mut blocks = blocks.into_iter();
    lir.for_each_block_mut(&mut |insts| {
        *insts = (blocks.next().expect("one taken for each block"))
            .into_iter()
            .flatten()
            .collect()
    });
}

/// Where an instruction is while copies are propagated: its block and its index there (a
/// propagated MOV leaves `None` in its place, so positions hold for the whole round).
type At = (usize, usize);

/// The instructions left, with their positions, in program order.
fn insts(blocks: &[Vec<Option<Inst>>]) -> impl Iterator<Item = (At, &Inst)> {
    blocks.iter().enumerate().flat_map(|(b, block)| {
        (block.iter().enumerate()).filter_map(move |(i, inst)| Some(((b, i), inst.as_ref()?)))
    })
}

/// One round of propagation; whether it propagated anything.
fn propagation_round(blocks: &mut [Vec<Option<Inst>>], lir: &Lir, chip: Chip) -> bool {
    let mut defs = vec![0u32; lir.values as usize];
    for v in lir.fixed.keys() {
        defs[v.0 as usize] += 1;
    }
    for (_, inst) in insts(blocks) {
        for v in inst.writes() {
            defs[v.0 as usize] += 1;
        }
    }
    let unchanged = sources_unchanged(blocks);
    let mut candidates = Vec::new();
    // The instructions that read each value.
    let mut readers: Vec<Vec<At>> = vec![Vec::new(); lir.values as usize];
    for (at, inst) in insts(blocks) {
        for v in inst.reads() {
            let readers = &mut readers[v.0 as usize];
            if readers.last() != Some(&at) {
                readers.push(at);
            }
        }
        if let Inst::Alu(alu) = inst
            && alu.op == AluOpcode::Mov
            && !alu.clamp
            && let Some(dst) = alu.dst
            && defs[dst.0 as usize] == 1
            && !lir.fixed.contains_key(&dst)
        {
            let src = alu.srcs[0];
            let once = match src.operand {
                Operand::Value(s) => {
                    s != dst && (defs[s.0 as usize] == 1 || unchanged.contains(&dst))
                }
                Operand::Const(_) | Operand::Kcache { .. } => true,
                Operand::Indexed(_) => unchanged.contains(&dst),
                Operand::Param { .. } => false,
            };
            if once {
                candidates.push((at, dst, src));
            }
        }
    }
    let mut changed = false;
    // What each propagated value became: later candidates may read it.
    let mut replaced: HashMap<VReg, Src> = HashMap::new();
    for (at, dst, mut src) in candidates {
        let original = src;
        while let Operand::Value(v) = src.operand
            && let Some(&by) = replaced.get(&v)
        {
            src = combine(src, by);
        }
        // A source reached through propagated copies that may change (an indexed register
        // component, a value defined more than once) was not checked to hold its value
        // wherever this MOV's readers read it: the next round checks it.
        let may_change = match src.operand {
            Operand::Indexed(_) => true,
            Operand::Value(v) => defs[v.0 as usize] != 1,
            _ => false,
        };
        if src != original && may_change {
            continue;
        }
        if try_propagate(blocks, &mut readers, chip, at, dst, src) {
            replaced.insert(dst, src);
            changed = true;
        }
    }
    changed
}

/// The values defined by a MOV of a value or of an indexed register component whose every
/// read follows that MOV in its block with no instruction between that may write the MOV's
/// source (the values defined once among them hold the source's value wherever they are
/// read). One sweep in program order, keeping the position of each value's and indexed
/// register component's latest write.
fn sources_unchanged(blocks: &[Vec<Option<Inst>>]) -> HashSet<VReg> {
    // Positions count the instructions in program order.
    let mut copies: HashMap<VReg, (usize, Operand)> = HashMap::new();
    let mut last_writes = LastWrites::default();
    let mut broken = HashSet::new();
    let mut position = 0;
    for block in blocks {
        let block_start = position;
        for inst in block.iter().flatten() {
            for v in inst.reads() {
                let holds = copies.get(&v).is_some_and(|&(copy, source)| {
                    copy >= block_start && last_writes.of(source).is_none_or(|w| w <= copy)
                });
                if !holds {
                    broken.insert(v);
                }
            }
            last_writes.record(inst, position);
            if let Inst::Alu(alu) = inst
                && alu.op == AluOpcode::Mov
                && let Some(dst) = alu.dst
                && matches!(alu.srcs[0].operand, Operand::Value(_) | Operand::Indexed(_))
            {
                copies.insert(dst, (position, alu.srcs[0].operand));
            }
            position += 1;
        }
    }
    (copies.into_keys())
        .filter(|v| !broken.contains(v))
        .collect()
}

/// The position of the latest write of each value, and of each indexed register component by
/// a write of that component, by a relative write of its channel, and by any write of its
/// channel.
#[derive(Default)]
struct LastWrites {
    values: HashMap<VReg, usize>,
    components: HashMap<(u16, u8), usize>,
    relative: HashMap<u8, usize>,
    channels: HashMap<u8, usize>,
}

impl LastWrites {
    fn record(&mut self, inst: &Inst, position: usize) {
        for v in inst.writes() {
            self.values.insert(v, position);
        }
        if let Inst::Alu(Alu {
            indexed: Some(write),
            ..
        }) = inst
        {
            self.channels.insert(write.chan, position);
            if write.index.is_some() {
                self.relative.insert(write.chan, position);
            } else {
                self.components.insert((write.reg, write.chan), position);
            }
        }
    }

    /// The latest write that may change `source` (one that [`Indexed::may_alias`] it, for an
    /// indexed register component).
    fn of(&self, source: Operand) -> Option<usize> {
        match source {
            Operand::Value(v) => self.values.get(&v).copied(),
            Operand::Indexed(read) if read.index.is_some() => {
                self.channels.get(&read.chan).copied()
            }
            Operand::Indexed(read) => (self.components.get(&(read.reg, read.chan)))
                .max(self.relative.get(&read.chan))
                .copied(),
            Operand::Const(_) | Operand::Kcache { .. } | Operand::Param { .. } => None,
        }
    }
}

/// Moves constant operands (kcache reads, literals) of instructions that do not fit a group
/// on their own ([`fits_alone`]: a DOT4 of two uniforms reads more constants than a group may)
/// into values of their own, computed by MOVs just before.
pub fn legalize_operands(lir: &mut Lir, chip: Chip) {
    let mut next = lir.values;
    lir.for_each_block_mut(&mut |insts| {
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts.drain(..) {
            while !fits_alone(&inst, chip) {
                let Some(src) = inst
                    .srcs_mut()
                    .into_iter()
                    .rev()
                    .find(|s| is_constant_read(s.operand))
                else {
                    break;
                };
                let value = VReg(next);
                next += 1;
                let plain = Src::of(src.operand);
                src.operand = Operand::Value(value);
                out.push(Inst::Alu(Alu::new(
                    AluOpcode::Mov,
                    Some(value),
                    vec![plain],
                )));
            }
            out.push(inst);
        }
        *insts = out;
    });
    lir.values = next;
}

/// Whether an operand takes a literal or constant-file slot of a group.
fn is_constant_read(operand: Operand) -> bool {
    match operand {
        Operand::Kcache { .. } => true,
        Operand::Const(bits) => crate::isa::sel::inline_constant(bits).is_none(),
        Operand::Value(_) | Operand::Param { .. } | Operand::Indexed(_) => false,
    }
}

/// Replaces every read of `dst` by `src` and removes the MOV at `at` that defines it, if every
/// reader can take `src`; the readers become readers of what `src` reads.
fn try_propagate(
    blocks: &mut [Vec<Option<Inst>>],
    readers: &mut [Vec<At>],
    chip: Chip,
    at: At,
    dst: VReg,
    src: Src,
) -> bool {
    let moved = std::mem::take(&mut readers[dst.0 as usize]);
    let reader = |&(b, i): &At| {
        blocks[b][i]
            .as_ref()
            .filter(|inst| inst.reads().contains(&dst))
    };
    let ok = moved.iter().filter_map(reader).all(|inst| {
        let mut rewritten = inst.clone();
        rewrite(&mut rewritten, dst, src)
            && fits_alone(&rewritten, chip)
            && !matches!(&rewritten, Inst::Alu(alu) if alu.relative_index().is_none())
    });
    if !ok {
        readers[dst.0 as usize] = moved;
        return false;
    }
    blocks[at.0][at.1] = None;
    for &(b, i) in &moved {
        if let Some(inst) = &mut blocks[b][i] {
            rewrite(inst, dst, src);
        }
    }
    if let Some(v) = src.values_read() {
        readers[v.0 as usize].extend(moved);
    }
    true
}

/// What a read with `read`'s modifiers of a value that is `src` reads.
fn combine(read: Src, src: Src) -> Src {
    if read.abs {
        Src {
            operand: src.operand,
            abs: true,
            neg: read.neg,
        }
    } else {
        Src {
            operand: src.operand,
            abs: src.abs,
            neg: src.neg ^ read.neg,
        }
    }
}

/// Makes `inst` read `src` where it reads `dst`; false if it cannot take it.
fn rewrite(inst: &mut Inst, dst: VReg, src: Src) -> bool {
    let three_sources = match inst {
        Inst::Alu(alu) => alu.op.is_op3(),
        Inst::Multi(m) => m.op.is_op3(),
        _ => false,
    };
    // The LDS operations' sources have no modifiers.
    let plain = matches!(inst, Inst::Alu(alu) if alu.op.has(flag::LDS));
    // A vertex fetch's address selects a GPR channel: no constant lanes.
    let address = matches!(inst, Inst::Fetch(f) if f.op == FetchOp::Vfetch);
    for s in inst.srcs_mut() {
        if s.operand != Operand::Value(dst) {
            continue;
        }
        let combined = combine(*s, src);
        if (combined.abs && three_sources) || (plain && (combined.abs || combined.neg)) {
            return false;
        }
        *s = combined;
    }
    for indexed in inst.indexed_mut() {
        if indexed.index != Some(dst) {
            continue;
        }
        // The address register loads from a value.
        match (src.operand, src.neg, src.abs) {
            (Operand::Value(v), false, false) => indexed.index = Some(v),
            _ => return false,
        }
    }
    for lane in inst.lane_groups_mut().into_iter().flatten() {
        if *lane != Lane::Value(dst) {
            continue;
        }
        *lane = match (src.operand, src.neg, src.abs) {
            (Operand::Value(v), false, false) => Lane::Value(v),
            _ if address => return false,
            (Operand::Const(0), false, _) => Lane::Zero,
            (Operand::Const(bits), false, _) if bits == 1f32.to_bits() => Lane::One,
            _ => return false,
        };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lir::{Indexed, Node};

    fn mov(dst: u32, src: Src) -> Inst {
        Inst::Alu(Alu::new(AluOpcode::Mov, Some(VReg(dst)), vec![src]))
    }

    fn add(dst: u32, a: u32, b: u32) -> Inst {
        let srcs = vec![Src::value(VReg(a)), Src::value(VReg(b))];
        Inst::Alu(Alu::new(AluOpcode::Add, Some(VReg(dst)), srcs))
    }

    fn only_block(lir: &Lir) -> &[Inst] {
        let Node::Block(block) = &lir.body[0] else {
            unreachable!("one block")
        };
        block
    }

    /// v0 is written twice (a register a phi copy writes); v1 copies it, then is read.
    fn copy_of_a_register(rewrite_between: bool) -> Lir {
        let mut block = vec![
            mov(0, Src::float(1.0)),
            mov(0, Src::float(2.0)),
            mov(1, Src::value(VReg(0))),
        ];
        if rewrite_between {
            block.push(mov(0, Src::float(3.0)));
        }
        block.push(add(2, 1, 1));
        Lir {
            body: vec![Node::Block(block)],
            values: 3,
            ..Lir::default()
        }
    }

    #[test]
    fn copies_of_registers_propagate_while_the_register_holds_the_value() {
        let mut lir = copy_of_a_register(false);
        propagate_copies(&mut lir, Chip::Evergreen);
        let block = only_block(&lir);
        assert_eq!(block.len(), 3);
        assert_eq!(block[2], add(2, 0, 0));

        let mut lir = copy_of_a_register(true);
        let before = lir.clone();
        propagate_copies(&mut lir, Chip::Evergreen);
        assert_eq!(lir, before, "v0 changes before v1 is read");
    }

    /// v1 copies v0 (a register written twice), v2 copies v1; v0 is written again before v2
    /// is read.
    #[test]
    fn a_copy_of_a_copy_of_a_register_is_kept_when_the_register_changes_before_it_is_read() {
        let block = vec![
            mov(0, Src::float(1.0)),
            mov(0, Src::float(2.0)),
            mov(1, Src::value(VReg(0))),
            mov(2, Src::value(VReg(1))),
            mov(0, Src::float(3.0)),
            add(3, 2, 2),
        ];
        let mut lir = Lir {
            body: vec![Node::Block(block)],
            values: 4,
            ..Lir::default()
        };
        propagate_copies(&mut lir, Chip::Evergreen);
        let block = only_block(&lir);
        assert_ne!(block.last(), Some(&add(3, 0, 0)), "{block:?}");
    }

    /// v0 copies register 0's x of the indexed registers, then is read; a relative write of
    /// channel x may come between.
    fn copy_of_an_indexed_register(write_between: bool) -> Lir {
        let element = Indexed {
            reg: 0,
            chan: 0,
            index: None,
        };
        let mut block = vec![
            mov(1, Src::constant(1)),
            mov(0, Src::of(Operand::Indexed(element))),
        ];
        if write_between {
            let write = Indexed {
                reg: 2,
                index: Some(VReg(1)),
                ..element
            };
            block.push(Inst::Alu(Alu {
                indexed: Some(write),
                ..Alu::new(AluOpcode::Mov, None, vec![Src::float(2.0)])
            }));
        }
        block.push(add(2, 0, 0));
        Lir {
            body: vec![Node::Block(block)],
            values: 3,
            indexed_gprs: 3,
            ..Lir::default()
        }
    }

    #[test]
    fn copies_of_indexed_registers_propagate_while_no_write_may_touch_them() {
        let mut lir = copy_of_an_indexed_register(false);
        propagate_copies(&mut lir, Chip::Evergreen);
        let block = only_block(&lir);
        let Some(Inst::Alu(sum)) = block.last() else {
            unreachable!()
        };
        assert!(
            sum.srcs
                .iter()
                .all(|s| matches!(s.operand, Operand::Indexed(_))),
            "{block:?}"
        );

        let mut lir = copy_of_an_indexed_register(true);
        propagate_copies(&mut lir, Chip::Evergreen);
        let block = only_block(&lir);
        assert_eq!(
            block.last(),
            Some(&add(2, 0, 0)),
            "R[2+AR].x may be register 0"
        );
    }
}
