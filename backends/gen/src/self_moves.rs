//! `self-moves`: after register allocation, a `mov` that copies registers onto themselves goes.
//!
//! What: a `mov` of a register region into the same type, without source modifiers, saturation
//! or a conditional modifier, whose source and destination allocation put at the same GRF bytes
//! and whose every channel reads the element it writes (`mov(8) g10<1>UD g10<8,8,1>UD`), is
//! removed, predicated or not.
//!
//! Why: allocation gives a copy and its source one register when their live intervals do not
//! overlap (the copies that replace phis out of SSA, loop-carried values); the copy is then a
//! no-op that still costs an issue slot.
//!
//! Invariants: every removed instruction wrote each channel it enables with the value already
//! there; nothing else changes (emission resolves the jumps afterwards).
//!
//! Options: none.

use crate::emit::register;
use crate::isa::{Opcode, RegFile};
use crate::lir::{Inst, Lir, Src};
use crate::regalloc::Allocation;

/// Runs the pass on an allocated program; gives whether it removed anything.
pub fn remove_self_moves(program: &mut Lir, alloc: &Allocation) -> bool {
    let before = program.insts.len();
    program.insts.retain(|inst| !is_self_move(inst, alloc));
    program.insts.len() != before
}

/// Whether `inst` is a `mov` whose channels each copy an element onto itself.
fn is_self_move(inst: &Inst, alloc: &Allocation) -> bool {
    let (Some(Opcode::Mov), Some(dst), [Src::Reg(src)]) =
        (inst.opcode(), inst.dst, inst.srcs.as_slice())
    else {
        return false;
    };
    let plain = !inst.saturate && inst.cond.is_none() && !src.negate && !src.abs;
    let at = register(src, alloc);
    // An indirect (VxH) region has no vertical stride: its elements are not known here.
    let Some(vstride) = src.region.vstride else {
        return false;
    };
    if !plain || src.ty != dst.ty || at.0 != RegFile::Grf || at != register(&dst, alloc) {
        return false;
    }
    // Channel k reads element (k / width) * vstride + (k % width) * hstride and writes element
    // k * the destination's stride.
    let (width, hstride) = (
        u32::from(src.region.width.max(1)),
        u32::from(src.region.hstride),
    );
    let dst_stride = u32::from(dst.region.hstride.max(1));
    (0..u32::from(inst.exec_size))
        .all(|k| k / width * u32::from(vstride) + k % width * hstride == k * dst_stride)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{CondMod, Region, Type};
    use crate::lir::testing::{mov, program, v};

    /// Virtual registers 0 and 1 both in g10, 2 in g11.
    fn allocation() -> Allocation {
        Allocation {
            first_grf: vec![Some(10), Some(10), Some(11)],
            grfs_used: 12,
            spills: 0,
            fills: 0,
            scratch_bytes: 0,
        }
    }

    /// Whether the pass removes `inst`.
    fn removes(inst: Inst) -> bool {
        let mut p = program(3, vec![inst]);
        remove_self_moves(&mut p, &allocation())
    }

    #[test]
    fn copies_onto_the_same_bytes_go() {
        let copy = || mov(v(1, Type::UD), Src::Reg(v(0, Type::UD)));
        assert!(removes(copy()));
        let mut predicated = copy();
        predicated.predicate = Some(crate::encoding::Predicate {
            control: 1,
            inverse: false,
        });
        assert!(removes(predicated));
        // One channel reading the element it writes.
        let mut single = copy();
        single.exec_size = 1;
        if let Src::Reg(r) = &mut single.srcs[0] {
            r.region = Region::SCALAR;
        }
        assert!(removes(single));
    }

    #[test]
    fn copies_that_change_something_stay() {
        let copy = || mov(v(1, Type::F), Src::Reg(v(0, Type::F)));
        assert!(!removes(mov(v(2, Type::F), Src::Reg(v(0, Type::F)))));
        assert!(!removes(mov(
            v(1, Type::F),
            Src::Reg(v(0, Type::F).negated())
        )));
        assert!(!removes(mov(
            v(1, Type::F),
            Src::Reg(v(0, Type::F).absolute())
        )));
        assert!(!removes(mov(v(1, Type::F), Src::Reg(v(0, Type::D)))));
        let mut saturated = copy();
        saturated.saturate = true;
        assert!(!removes(saturated));
        let mut compared = copy();
        compared.cond = Some(CondMod::Nz);
        assert!(!removes(compared));
        let mut broadcast = copy();
        if let Src::Reg(r) = &mut broadcast.srcs[0] {
            r.region = Region::SCALAR;
        }
        assert!(!removes(broadcast));
        let mut shifted = copy();
        if let Src::Reg(r) = &mut shifted.srcs[0] {
            r.offset = 4;
        }
        assert!(!removes(shifted));
        let mut strided = copy();
        if let Some(d) = &mut strided.dst {
            d.region.hstride = 2;
        }
        assert!(!removes(strided));
    }
}
