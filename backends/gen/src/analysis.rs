//! Analyses of a Gen IR program that its passes share: who writes each register, and which
//! instruction dominates which in the structured program.

use crate::isa::Opcode;
use crate::lir::{Base, Lir, Op, Src};

/// Who writes each register.
pub struct Writers {
    /// Per virtual register: the last instruction writing it (the only one when `count` is 1).
    last: Vec<Option<usize>>,
    count: Vec<u32>,
    /// Payload GRFs some instruction writes.
    fixed_written: Vec<bool>,
}

impl Writers {
    pub fn of(program: &Lir) -> Writers {
        let mut writers = Writers {
            last: vec![None; program.vreg_sizes.len()],
            count: vec![0; program.vreg_sizes.len()],
            fixed_written: vec![false; 128],
        };
        for (index, inst) in program.insts.iter().enumerate() {
            let Some(d) = inst.dst else { continue };
            match d.base {
                Base::Vgrf(v) => {
                    writers.last[v.0 as usize] = Some(index);
                    writers.count[v.0 as usize] += 1;
                }
                Base::Fixed(grf) => {
                    let last = grf as u32 + (d.offset + inst.dst_span()).div_ceil(32);
                    for g in grf as u32..last.min(128) {
                        writers.fixed_written[g as usize] = true;
                    }
                }
                Base::Arf(_) => {}
            }
        }
        writers
    }

    /// Whether `src` holds one value wherever instruction `index` and the instructions it
    /// dominates read it: an immediate, a payload register no instruction writes, or a virtual
    /// register with a single writer that dominates `index`, or whose writers (several: a
    /// value built in parts, or under a predicate) all come before `index`. In a structured
    /// program, a path from `index` to an instruction it dominates that meets such a writer
    /// (around a loop) meets `index` again after it.
    pub fn is_stable(&self, src: &Src, index: usize, blocks: &Blocks) -> bool {
        match src {
            Src::Imm(..) => true,
            Src::Reg(r) => match r.base {
                Base::Fixed(grf) => !self.fixed_written[grf as usize],
                Base::Vgrf(v) => match self.single(v.0) {
                    Some(w) => blocks.dominates(w, index),
                    None => self.last[v.0 as usize].is_some_and(|w| w < index),
                },
                Base::Arf(_) => false,
            },
        }
    }

    pub fn single(&self, vreg: u32) -> Option<usize> {
        let v = vreg as usize;
        if self.count[v] == 1 {
            self.last[v]
        } else {
            None
        }
    }
}

/// The blocks of the structured program: the whole program, each `if` and `else` arm and each
/// loop body, nested.
pub struct Blocks {
    /// Per instruction: the innermost block it is in.
    block_of: Vec<usize>,
    /// Per block: one past the last block nested in it. Blocks are numbered in the order they
    /// open, so the blocks nested in `b` are `b + 1..end[b]`.
    end: Vec<usize>,
}

impl Blocks {
    pub fn of(program: &Lir) -> Blocks {
        let mut block_of = Vec::with_capacity(program.insts.len());
        let mut end = vec![usize::MAX];
        let mut open = vec![0usize];
        for inst in &program.insts {
            let top = *open.last().expect("the program block stays open");
            let closes = matches!(
                inst.op,
                Op::Hw(Opcode::Else | Opcode::Endif | Opcode::While)
            );
            let outer = if closes && open.len() > 1 {
                open.pop();
                end[top] = end.len();
                *open.last().expect("still open")
            } else {
                top
            };
            block_of.push(outer);
            if matches!(inst.op, Op::Hw(Opcode::If | Opcode::Else) | Op::Do) {
                open.push(end.len());
                end.push(usize::MAX);
            }
        }
        // Blocks left open (the program's, and any an unbalanced program leaves) end last.
        for &b in &open {
            end[b] = end.len();
        }
        Blocks { block_of, end }
    }

    /// Whether every path to instruction `b` passes instruction `a` first: `a` comes first, in a
    /// block that encloses `b`'s.
    pub fn dominates(&self, a: usize, b: usize) -> bool {
        let (outer, inner) = (self.block_of[a], self.block_of[b]);
        a < b && outer <= inner && inner < self.end[outer]
    }
}
