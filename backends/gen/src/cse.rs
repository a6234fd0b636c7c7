//! `cse`: an instruction that computes what an earlier one computed reads the earlier result.
//!
//! What: in program order, an ALU or math instruction equal to an earlier one that dominates it
//! (same opcode, execution size and group, modifiers, destination shape and sources; only the
//! destination registers differ) is dropped, and its readers read the earlier destination.
//!
//! Why: the mid-end's CSE sees IR values, not what lowering makes of them. Lowering puts an
//! immediate in a register at each source that cannot take one (every `mad` reading the same
//! constant), and expands one IR operation into several instructions that others repeat (the
//! sign bit of the same value, the same comparison). Mesa's backend CSE and constant combining
//! remove these.
//!
//! Invariants:
//! - Both destinations are whole writes of virtual registers of the same size that no other
//!   instruction writes, and every reader of the later one is dominated by it: the earlier
//!   register holds the same value wherever the later one is read. (A reader after a loop that
//!   the later instruction does not dominate could see an iteration where a channel ran the
//!   earlier instruction and left the loop before the later one.)
//! - Every source is an immediate, a payload register no instruction writes, or a virtual
//!   register with a single writer that dominates the earlier instruction: both compute from
//!   the same values. Registers written several times (phi registers), the architecture
//!   registers (flags, accumulator) and predicated instructions are left alone, as are sends,
//!   control flow and flag writes (a `sel`'s conditional modifier writes no flag).
//! - Dominance is the structured program's (see [`crate::analysis::Blocks`]): the channels
//!   enabled at the later instruction are a subset of those enabled at the earlier one, which
//!   computed all of them.
//!
//! Options: none.

use crate::analysis::{Blocks, Writers};
use crate::isa::{CondMod, MathFn, Opcode};
use crate::lir::{Base, Inst, Lir, Op, Operand, Src, VReg};
use std::collections::HashMap;

/// Runs the pass; gives whether it removed anything.
pub fn eliminate_common_subexpressions(program: &mut Lir) -> bool {
    let writers = Writers::of(program);
    let blocks = Blocks::of(program);
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); program.vreg_sizes.len()];
    for (index, inst) in program.insts.iter().enumerate() {
        for v in inst.srcs.iter().filter_map(|s| s.reg()?.vreg()) {
            readers[v.0 as usize].push(index);
        }
    }
    // The earlier candidates that dominate the instruction at hand, by what they compute, each
    // list in program order; and all of them in program order, the latest in the innermost
    // block. A candidate stops dominating once its block closes, and so do the candidates after
    // it (they are in blocks nested in its own): leaving a block drops a suffix of `open`.
    let mut available: HashMap<Computation, Vec<usize>> = HashMap::new();
    let mut open: Vec<(usize, Computation)> = Vec::new();
    // What each dropped destination reads as instead.
    let mut renamed: HashMap<VReg, VReg> = HashMap::new();
    // In program order.
    let mut dropped = Vec::new();
    for index in 0..program.insts.len() {
        for src in &mut program.insts[index].srcs {
            if let Src::Reg(r) = src
                && let Base::Vgrf(v) = r.base
                && let Some(&earlier) = renamed.get(&v)
            {
                r.base = Base::Vgrf(earlier);
            }
        }
        let inst = &program.insts[index];
        if !is_candidate(inst, index, program, &writers, &blocks) {
            continue;
        }
        while let Some((e, _)) = open.last()
            && !blocks.dominates(*e, index)
        {
            let (_, computation) = open.pop().expect("checked");
            available
                .get_mut(&computation)
                .expect("an open candidate is available")
                .pop();
        }
        let dst = inst.dst.and_then(|d| d.vreg()).expect("a candidate");
        let replaceable = readers[dst.0 as usize]
            .iter()
            .all(|&r| blocks.dominates(index, r));
        let computation = Computation::of(inst, program);
        let candidates = available.entry(computation.clone()).or_default();
        match candidates.first().filter(|_| replaceable) {
            Some(&e) => {
                let kept = program.insts[e].dst.and_then(|d| d.vreg());
                renamed.insert(dst, kept.expect("a candidate"));
                dropped.push(index);
            }
            None => {
                candidates.push(index);
                open.push((index, computation));
            }
        }
    }
    let mut index = 0;
    program.insts.retain(|_| {
        index += 1;
        dropped.binary_search(&(index - 1)).is_err()
    });
    !renamed.is_empty()
}

/// What a candidate computes: everything about it but its destination register. Two
/// instructions compute the same thing into registers of the same size when these are equal.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Computation {
    op: Op,
    exec_size: u8,
    group: u8,
    mask_all: bool,
    flag: u8,
    cond: Option<CondMod>,
    saturate: bool,
    math: Option<MathFn>,
    /// The destination with its register left out, and the register's size in GRFs.
    dst: Operand,
    dst_size: u32,
    srcs: Vec<Src>,
}

impl Computation {
    fn of(inst: &Inst, program: &Lir) -> Computation {
        let dst = inst.dst.expect("a candidate writes a register");
        let v = dst.vreg().expect("a candidate writes a virtual register");
        Computation {
            op: inst.op,
            exec_size: inst.exec_size,
            group: inst.group,
            mask_all: inst.mask_all,
            flag: inst.flag,
            cond: inst.cond,
            saturate: inst.saturate,
            math: inst.math,
            dst: Operand {
                base: Base::Vgrf(VReg(0)),
                ..dst
            },
            dst_size: program.vreg_sizes[v.0 as usize],
            srcs: inst.srcs.clone(),
        }
    }
}

/// Whether `inst` (at `index`) computes a value from stable sources into a register of its own.
fn is_candidate(
    inst: &Inst,
    index: usize,
    program: &Lir,
    writers: &Writers,
    blocks: &Blocks,
) -> bool {
    let Op::Hw(op) = inst.op else {
        return false;
    };
    let pure = !op.is_control_flow()
        && !op.is_send()
        && inst.send.is_none()
        && inst.predicate.is_none()
        && (inst.cond.is_none() || op == Opcode::Sel);
    let Some(dst) = inst.dst else {
        return false;
    };
    let own_register = dst.offset == 0
        && dst.region.hstride == 1
        && dst
            .vreg()
            .is_some_and(|v| writers.single(v.0) == Some(index))
        && dst.span(inst.exec_size)
            >= 32 * program.vreg_sizes[dst.vreg().expect("checked").0 as usize];
    let stable = inst
        .srcs
        .iter()
        .all(|src| writers.is_stable(src, index, blocks));
    pure && own_register && stable
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Type;
    use crate::lir::testing::{mov, program, v};

    fn mad(dst: u32, srcs: [u32; 3]) -> Inst {
        let srcs = srcs.map(|s| Src::Reg(v(s, Type::F))).to_vec();
        Inst::new(Opcode::Mad, 8, Some(v(dst, Type::F)), srcs)
    }

    #[test]
    fn a_repeated_immediate_is_read_from_its_first_register() {
        let mut p = program(
            5,
            vec![
                mov(v(0, Type::F), Src::imm_f(1.5)),
                mad(1, [0, 0, 0]),
                mov(v(2, Type::F), Src::imm_f(1.5)),
                mov(v(3, Type::F), Src::imm_f(2.5)),
                mad(4, [2, 3, 1]),
            ],
        );
        assert!(eliminate_common_subexpressions(&mut p));
        assert_eq!(p.insts.len(), 4, "{:?}", p.insts);
        assert_eq!(p.insts[3].srcs[0], Src::Reg(v(0, Type::F)));
        assert_eq!(p.insts[3].srcs[1], Src::Reg(v(3, Type::F)));
    }

    #[test]
    fn chains_of_equal_instructions_collapse() {
        // v3 = mad(v1, ..) repeats v2 = mad(v0, ..) once v1 reads as v0.
        let mut p = program(
            5,
            vec![
                mov(v(0, Type::F), Src::imm_f(1.5)),
                mov(v(1, Type::F), Src::imm_f(1.5)),
                mad(2, [0, 0, 0]),
                mad(3, [1, 1, 1]),
                mad(4, [2, 3, 3]),
            ],
        );
        assert!(eliminate_common_subexpressions(&mut p));
        assert_eq!(p.insts.len(), 3);
        assert_eq!(p.insts[2], mad(4, [2, 2, 2]));
    }

    #[test]
    fn an_instruction_in_an_arm_is_not_reused_after_it() {
        let insts = vec![
            Inst::control(Op::Hw(Opcode::If), 8),
            mov(v(0, Type::F), Src::imm_f(1.5)),
            mad(1, [0, 0, 0]),
            Inst::control(Op::Hw(Opcode::Endif), 8),
            mov(v(2, Type::F), Src::imm_f(1.5)),
            mad(3, [2, 2, 2]),
        ];
        let mut p = program(4, insts.clone());
        assert!(!eliminate_common_subexpressions(&mut p));
        assert_eq!(p.insts, insts);
    }

    #[test]
    fn a_result_read_after_a_loop_it_does_not_dominate_is_kept() {
        // v3 repeats v2 after a break, and v3 is read after the loop: a channel that breaks in
        // a later iteration has v2 from that iteration and v3 from an earlier one. (Here v0 is
        // the same in every iteration, but the pass does not tell.)
        let add = |d: u32, s: u32| {
            Inst::new(
                Opcode::Add,
                8,
                Some(v(d, Type::F)),
                vec![Src::Reg(v(s, Type::F)), Src::imm_f(1.0)],
            )
        };
        let insts = vec![
            mov(v(0, Type::F), Src::imm_f(1.5)),
            Inst::control(Op::Do, 8),
            add(2, 0),
            Inst::control(Op::Hw(Opcode::Break), 8),
            add(3, 0),
            Inst::control(Op::Hw(Opcode::While), 8),
            mov(v(4, Type::F), Src::Reg(v(3, Type::F))),
        ];
        let mut p = program(5, insts.clone());
        assert!(!eliminate_common_subexpressions(&mut p));
        assert_eq!(p.insts, insts);
        // Read inside the loop, after it, the repeat goes.
        let mut inside = insts.clone();
        inside.swap(5, 6);
        let mut p = program(5, inside);
        assert!(eliminate_common_subexpressions(&mut p));
        assert_eq!(p.insts[4].srcs[0], Src::Reg(v(2, Type::F)));
    }

    #[test]
    fn sources_written_twice_keep_instructions_apart() {
        let insts = vec![
            mov(v(0, Type::F), Src::imm_f(1.5)),
            mad(1, [0, 0, 0]),
            mov(v(0, Type::F), Src::imm_f(2.5)),
            mad(2, [0, 0, 0]),
        ];
        let mut p = program(3, insts.clone());
        assert!(!eliminate_common_subexpressions(&mut p));
        assert_eq!(p.insts, insts);
    }
}
