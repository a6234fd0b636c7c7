//! Register units: the sets of values that must share one GPR, because a fetch reads its
//! operands from one GPR (and writes its results to one) and an export sends one GPR.
//!
//! What: [`form_units`] gives every fetch and export its units: the values of the lanes of
//! each GPR it reads (a fetch's sources, and the gradients of SAMPLE_G), and the results of a
//! fetch. A value joins at most one unit; when it is already in another, or
//! it is loaded by the hardware into a GPR the unit's other values are not in, or its channel
//! is forced (an INTERP result, a fixed input) onto a channel another value of the unit is
//! forced onto, or it is the result of a double-precision operation (whose pair of slots the
//! packer chooses), a MOV to a fresh value goes just before the instruction (or, for a result,
//! just after it) and the unit takes the fresh value. A scratch write has no swizzle: it
//! forces the value of its lane c onto channel c (and its index onto x), copying a value
//! already forced elsewhere. Lanes that read exactly the values of a unit formed before read
//! its GPR as they are.
//!
//! Why: the swizzles of fetches (SRC_SEL, DST_SEL) and exports (SWIZ_SEL) reach any channel
//! of the one GPR, so a unit's values only need distinct channels (the packer chooses them)
//! and one GPR number (register allocation chooses it).
//!
//! Invariants: after it, each value is in at most one unit, a unit's forced channels are
//! distinct, a unit with a fixed value holds only values fixed in that GPR (a fetch or
//! export reading fixed values beside others reads copies of them), and [`Units::forced`]
//! holds every channel fixed before packing.

use crate::lir::{Alu, Inst, Lane, Lir, Src, VReg};
use crate::program::ExportType;
use std::collections::{HashMap, HashSet};

/// The units of a program.
#[derive(Clone, Debug, Default)]
pub struct Units {
    /// The unit of each value that is in one.
    pub of: HashMap<VReg, usize>,
    pub members: Vec<Vec<VReg>>,
    /// The values whose channel is fixed before packing: fixed inputs, INTERP results and
    /// the lanes of scratch writes.
    pub forced: HashMap<VReg, u8>,
}

/// Gives every fetch and export its unit, inserting copies where a value cannot join.
pub fn form_units(lir: &mut Lir) -> Units {
    let mut forced: HashMap<VReg, u8> = lir.fixed.iter().map(|(&v, &(_, c))| (v, c)).collect();
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
    // The results of double-precision operations take the channels of the pair of slots
    // the packer chooses: a unit's other values must not narrow that choice, so a unit reads
    // copies of them.
    let mut paired = HashSet::new();
    lir.for_each_inst(&mut |inst| {
        if let Inst::Multi(m) = inst
            && m.op.has(crate::isa::flag::F64)
        {
            paired.extend(m.slots.iter().filter_map(|slot| slot.dst));
        }
    });
    let fixed = lir.fixed.clone();
    let mut units = Units::default();
    let mut next = lir.values;
    let mut new_value = || {
        next += 1;
        VReg(next - 1)
    };
    lir.for_each_block_mut(&mut |insts| {
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts.drain(..) {
            let mut before = Vec::new();
            let mut after = Vec::new();
            if matches!(inst, Inst::Fetch(_) | Inst::Export(_)) {
                let pinned = matches!(&inst, Inst::Export(e) if matches!(e.kind, ExportType::Scratch | ExportType::Rat));
                for lanes in inst.lane_groups_mut() {
                    if reads_a_unit(lanes, pinned, &units, &forced) {
                        continue;
                    }
                    let unit = units.members.len();
                    let mut members: Vec<VReg> = Vec::new();
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
                        // Without a swizzle, a constant lane is a value like the others.
                        if pinned && matches!(lanes[k], Lane::Zero | Lane::One) {
                            let bits = if lanes[k] == Lane::One {
                                1.0f32.to_bits()
                            } else {
                                0
                            };
                            let constant = new_value();
                            before.push(mov(constant, Src::constant(bits)));
                            lanes[k] = Lane::Value(constant);
                        }
                        let Lane::Value(v) = lanes[k] else { continue };
                        if members.contains(&v) {
                            continue;
                        }
                        let channel = pinned.then_some(k as u8);
                        if joinable(v, &members, &units, &fixed, &forced)
                            && !paired.contains(&v)
                            && (stay_fixed || !fixed.contains_key(&v))
                            && channel.is_none_or(|c| forced.get(&v).is_none_or(|&f| f == c))
                        {
                            members.push(v);
                            if let Some(c) = channel {
                                forced.insert(v, c);
                            }
                        } else {
                            let copy = new_value();
                            before.push(mov(copy, Src::value(v)));
                            // Every lane reading `v` reads the copy.
                            for other in lanes.iter_mut() {
                                if *other == Lane::Value(v) {
                                    *other = Lane::Value(copy);
                                }
                            }
                            members.push(copy);
                            if let Some(c) = channel {
                                forced.insert(copy, c);
                            }
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
                            after.push(mov(*dst, Src::value(copy)));
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
    units.forced = forced;
    units
}

fn mov(dst: VReg, src: Src) -> Inst {
    Inst::Alu(Alu::new(crate::isa::AluOpcode::Mov, Some(dst), vec![src]))
}

/// Whether `lanes` read exactly the values of one unit (each on its lane's channel when
/// `pinned`): then they read that unit's GPR, with no copies.
fn reads_a_unit(
    lanes: &[Lane; 4],
    pinned: bool,
    units: &Units,
    forced: &HashMap<VReg, u8>,
) -> bool {
    let mut values: Vec<VReg> = Vec::new();
    for (k, lane) in lanes.iter().enumerate() {
        match *lane {
            Lane::Value(v) if pinned && forced.get(&v) != Some(&(k as u8)) => return false,
            Lane::Value(v) if !values.contains(&v) => values.push(v),
            Lane::Zero | Lane::One if pinned => return false,
            _ => {}
        }
    }
    let Some(&unit) = values.first().and_then(|v| units.of.get(v)) else {
        return false;
    };
    let members = &units.members[unit];
    members.len() == values.len() && values.iter().all(|v| members.contains(v))
}

/// Whether `v` can join a unit of `members`.
fn joinable(
    v: VReg,
    members: &[VReg],
    units: &Units,
    fixed: &std::collections::BTreeMap<VReg, (u8, u8)>,
    forced: &HashMap<VReg, u8>,
) -> bool {
    if units.of.contains_key(&v) {
        return false;
    }
    // Fixed values stay in their GPR: they share a unit only with values fixed in the same one.
    let gpr = |v: &VReg| fixed.get(v).map(|&(g, _)| g);
    if members.iter().any(|m| gpr(m) != gpr(&v)) {
        return false;
    }
    match forced.get(&v) {
        Some(c) => !members.iter().any(|m| forced.get(m) == Some(c)),
        None => true,
    }
}
