//! `redundant-flags`: a `cmp.nz` that sets f0.0 from a boolean f0.0 already holds is removed.
//!
//! What: lowering sets f0.0 from a boolean register before each `if`, predicated `break` or
//! `sel` (`cmp.nz.f0.0 null b, 0`). A `cmp` that wrote `b` also wrote f0.0 with the same bits
//! (true is all ones, so `b != 0` is the comparison's result), and so did an earlier
//! `cmp.nz` of `b`. Within straight-line code, while neither f0.0 nor `b` is written again, the
//! flag still holds `b != 0` on the same channels, and the later `cmp.nz` goes. This is the
//! common case of Mesa's conditional-modifier propagation.
//!
//! Why: a vector `bcsel` lowers to one `sel` per component, each after its own `cmp.nz`; a
//! comparison feeding an `if` is followed by one.
//!
//! Invariants: knowledge is dropped at every control-flow instruction and send (the channels
//! enabled may change there), at any other write of f0.0 and at any write of `b`.
//!
//! Options: none.

use crate::isa::{CondMod, Opcode};
use crate::lir::{Base, Lir, Op, Operand, Src};

/// Runs the pass; gives whether it removed anything.
pub fn remove_redundant_flags(program: &mut Lir) -> bool {
    // The register whose `!= 0` f0.0 holds, as (base, offset).
    let mut known: Option<(Base, u32)> = None;
    let mut remove = vec![false; program.insts.len()];
    for (index, inst) in program.insts.iter().enumerate() {
        let is_control =
            inst.send.is_some() || !matches!(inst.op, Op::Hw(op) if !op.is_control_flow());
        if is_control {
            known = None;
            continue;
        }
        let flag_test = flag_test_of(inst);
        if flag_test.is_some() && flag_test == known {
            remove[index] = true;
            continue;
        }
        if let Some(d) = &inst.dst
            && let Some((base, offset)) = known
            && d.base == base
            && d.offset <= offset
            && offset < d.offset + inst.dst_span().max(1)
        {
            known = None;
        }
        let writes_f0 = inst.cond.is_some() && inst.opcode() != Some(Opcode::Sel) && inst.flag == 0;
        if writes_f0 {
            known = flag_test.or_else(|| compared_into(inst));
        }
    }
    let removed = remove.iter().any(|&r| r);
    let mut index = 0;
    program.insts.retain(|_| {
        index += 1;
        !remove[index - 1]
    });
    removed
}

/// The register of a `cmp.nz.f0.0 null reg, 0`.
fn flag_test_of(inst: &crate::lir::Inst) -> Option<(Base, u32)> {
    let plain = |r: &Operand| !r.negate && !r.abs && r.ty.size() == 4;
    match (inst.opcode(), inst.cond, inst.srcs.as_slice()) {
        (Some(Opcode::Cmp), Some(CondMod::Nz), [Src::Reg(r), Src::Imm(_, 0)])
            if inst.flag == 0
                && inst.predicate.is_none()
                && inst.dst.is_some_and(|d| d.is_null())
                && plain(r)
                && r.vreg().is_some() =>
        {
            Some((r.base, r.offset))
        }
        _ => None,
    }
}

/// The register an unpredicated `cmp` wrote its all-ones-or-zero result to.
fn compared_into(inst: &crate::lir::Inst) -> Option<(Base, u32)> {
    let d = inst.dst?;
    (inst.opcode() == Some(Opcode::Cmp)
        && inst.predicate.is_none()
        && !d.is_null()
        && d.ty.size() == 4
        && d.vreg().is_some())
    .then_some((d.base, d.offset))
}
