//! Register units: the sets of values that must share one GPR, because a fetch reads its
//! operands from one GPR (and writes its results to one) and an export sends one GPR.
//!
//! What: [`form_units`] gives every fetch and export its units: the values of the lanes of
//! each GPR it reads (a fetch's sources, and the gradients of SAMPLE_G), and the results of a
//! fetch. A value joins at most one unit; when it is already in another, or
//! it is loaded by the hardware into a GPR the unit's other values are not in, or its channel
//! is forced (an INTERP result, a fixed input) onto a channel another value of the unit is
//! forced onto, a MOV to a fresh value goes just before the instruction (or, for a result,
//! just after it) and the unit takes the fresh value.
//!
//! Why: the swizzles of fetches (SRC_SEL, DST_SEL) and exports (SWIZ_SEL) reach any channel
//! of the one GPR, so a unit's values only need distinct channels (the packer chooses them)
//! and one GPR number (register allocation chooses it).
//!
//! Invariants: after it, each value is in at most one unit, a unit's forced channels are
//! distinct, and a unit with a fixed value holds only values fixed in that GPR (a fetch or
//! export reading fixed values beside others reads copies of them).

use crate::lir::{Alu, Inst, Lane, Lir, Src, V};
use std::collections::HashMap;

/// The units of a program.
#[derive(Clone, Debug, Default)]
pub struct Units {
    /// The unit of each value that is in one.
    pub of: HashMap<V, usize>,
    pub members: Vec<Vec<V>>,
}

/// Gives every fetch and export its unit, inserting copies where a value cannot join.
pub fn form_units(lir: &mut Lir) -> Units {
    let mut forced: HashMap<V, u8> = lir.fixed.iter().map(|(&v, &(_, c))| (v, c)).collect();
    lir.for_each_inst(&mut |inst| {
        if let Inst::Multi(m) = inst
            && m.op.has(crate::isa::flag::INTERP)
        {
            for (c, slot) in m.slots.iter().enumerate() {
                if let Some(v) = slot.dst {
                    forced.insert(v, c as u8);
                }
            }
        }
    });
    let fixed = lir.fixed.clone();
    let mut units = Units::default();
    let mut next = lir.values;
    let mut new_value = || {
        next += 1;
        V(next - 1)
    };
    lir.for_each_block_mut(&mut |insts| {
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts.drain(..) {
            let mut before = Vec::new();
            let mut after = Vec::new();
            if matches!(inst, Inst::Fetch(_) | Inst::Export(_)) {
                for lanes in inst.lane_groups_mut() {
                    let unit = units.members.len();
                    let mut members: Vec<V> = Vec::new();
                    // Fixed values stay where the hardware put them only when every value of
                    // the unit is fixed in the same GPR; otherwise they are copied like the
                    // rest.
                    let gprs: Vec<Option<u8>> = lanes
                        .iter()
                        .filter_map(|l| match l {
                            Lane::Value(v) => Some(fixed.get(v).map(|&(g, _)| g)),
                            _ => None,
                        })
                        .collect();
                    let stay_fixed = gprs
                        .first()
                        .is_some_and(|g| g.is_some() && gprs.iter().all(|x| x == g));
                    for k in 0..lanes.len() {
                        let Lane::Value(v) = lanes[k] else { continue };
                        if members.contains(&v) {
                            continue;
                        }
                        if joinable(v, &members, &units, &fixed, &forced)
                            && (stay_fixed || !fixed.contains_key(&v))
                        {
                            members.push(v);
                        } else {
                            let copy = new_value();
                            before.push(Inst::Alu(Alu::new(
                                crate::isa::AluOp::Mov,
                                Some(copy),
                                vec![Src::value(v)],
                            )));
                            // Every lane reading `v` reads the copy.
                            for other in lanes.iter_mut() {
                                if *other == Lane::Value(v) {
                                    *other = Lane::Value(copy);
                                }
                            }
                            members.push(copy);
                        }
                    }
                    for &v in &members {
                        units.of.insert(v, unit);
                    }
                    units.members.push(members);
                }
                if let Inst::Fetch(fetch) = &mut inst {
                    let unit = units.members.len();
                    let mut results = Vec::new();
                    for dst in fetch.dsts.iter_mut().flatten() {
                        if units.of.contains_key(dst) || forced.contains_key(dst) {
                            let copy = new_value();
                            after.push(Inst::Alu(Alu::new(
                                crate::isa::AluOp::Mov,
                                Some(*dst),
                                vec![Src::value(copy)],
                            )));
                            *dst = copy;
                        }
                        results.push(*dst);
                        units.of.insert(*dst, unit);
                    }
                    units.members.push(results);
                }
            }
            out.extend(before);
            out.push(inst);
            out.extend(after);
        }
        *insts = out;
    });
    lir.values = next;
    units
}

/// Whether `v` can join a unit of `members`.
fn joinable(
    v: V,
    members: &[V],
    units: &Units,
    fixed: &std::collections::BTreeMap<V, (u8, u8)>,
    forced: &HashMap<V, u8>,
) -> bool {
    if units.of.contains_key(&v) {
        return false;
    }
    // Fixed values stay in their GPR: they share a unit only with values fixed in the same one.
    let gpr = |v: &V| fixed.get(v).map(|&(g, _)| g);
    if members.iter().any(|m| gpr(m) != gpr(&v)) {
        return false;
    }
    match forced.get(&v) {
        Some(c) => !members.iter().any(|m| forced.get(m) == Some(c)),
        None => true,
    }
}
