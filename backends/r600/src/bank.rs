//! GPR read ports and bank swizzles: whether a group's operands can be read
//! in its three read cycles, and with which BANK_SWIZZLE per instruction.
//!
//! What: each cycle has one GPR read port per channel; a vector-slot instruction's swizzle
//! (VEC_012 … VEC_210) gives the cycle of each of its sources, a trans-slot instruction's
//! (SCL_210 … SCL_221) likewise, with its constant operands (at most two) taking the early
//! cycles: its GPR and PV/PS operands must be read in a cycle no earlier than its number of
//! constant operands. Two reads share a port only when they read the same register. [`solve`]
//! tries every combination of swizzles, as Mesa does.
//!
//! Why: the packer asks before it adds an instruction to a group, and the emitter asks again
//! for the swizzle codes. The packer works before register allocation, naming each value by
//! its own key; two values read in one group are both live there, so they get different
//! registers, and the answer with GPR numbers is the same.
//!
//! Invariants: a group [`solve`] accepts reads every GPR operand on a free or shared port.

/// What an operand costs the read ports.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A GPR (or clause temporary) component: a register key and the channel read.
    Gpr(u32, u8),
    /// A constant-file (kcache), literal or inline constant read.
    Constant,
    /// PV or PS: no port, but a trans operand like a GPR's.
    Forwarded,
}

/// An instruction of the group as the read ports see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    pub trans: bool,
    pub srcs: Vec<Operand>,
}

/// Cycle of each source under each vector swizzle (VEC_012, 021, 120, 102, 201, 210).
const VECTOR: [[u8; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 2, 0],
    [1, 0, 2],
    [2, 0, 1],
    [2, 1, 0],
];

/// Cycle of each source under each trans swizzle (SCL_210, 122, 212, 221).
const TRANS: [[u8; 3]; 4] = [[2, 1, 0], [1, 2, 2], [2, 1, 2], [2, 2, 1]];

/// A bank swizzle for each instruction such that every GPR read has a port, or `None`.
pub fn solve(group: &[Reads]) -> Option<Vec<u8>> {
    let mut ports: [[Option<u32>; 4]; 3] = [[None; 4]; 3];
    let mut chosen = vec![0u8; group.len()];
    if search(group, 0, &mut ports, &mut chosen) {
        Some(chosen)
    } else {
        None
    }
}

fn search(group: &[Reads], i: usize, ports: &mut [[Option<u32>; 4]; 3], chosen: &mut [u8]) -> bool {
    let Some(inst) = group.get(i) else {
        return true;
    };
    let options: &[[u8; 3]] = if inst.trans { &TRANS } else { &VECTOR };
    let constants = inst
        .srcs
        .iter()
        .filter(|s| **s == Operand::Constant)
        .count() as u8;
    if inst.trans && constants > 2 {
        return false;
    }
    for (code, cycles) in options.iter().enumerate() {
        let saved = *ports;
        if reserve(inst, cycles, constants, ports) && search(group, i + 1, ports, chosen) {
            chosen[i] = code as u8;
            return true;
        }
        *ports = saved;
    }
    false
}

/// Reserves the ports of one instruction's sources under `cycles`; false on a conflict.
fn reserve(
    inst: &Reads,
    cycles: &[u8; 3],
    constants: u8,
    ports: &mut [[Option<u32>; 4]; 3],
) -> bool {
    for (k, src) in inst.srcs.iter().enumerate() {
        let cycle = cycles[k];
        match *src {
            Operand::Gpr(reg, chan) => {
                // A second read of the first source's register component reuses its read.
                if k == 1 && inst.srcs[0] == *src {
                    continue;
                }
                if inst.trans && cycle < constants {
                    return false;
                }
                let port = &mut ports[cycle as usize][chan as usize];
                match port {
                    Some(r) if *r != reg => return false,
                    _ => *port = Some(reg),
                }
            }
            Operand::Forwarded if inst.trans && cycle < constants => return false,
            Operand::Forwarded | Operand::Constant => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(srcs: &[Operand]) -> Reads {
        Reads {
            trans: false,
            srcs: srcs.to_vec(),
        }
    }

    #[test]
    fn three_registers_on_one_channel_take_the_three_cycles() {
        let g = [vector(&[
            Operand::Gpr(1, 0),
            Operand::Gpr(2, 0),
            Operand::Gpr(3, 0),
        ])];
        assert_eq!(solve(&g), Some(vec![0]));
        // A fourth register on the same channel has no port left.
        let g = [
            g[0].clone(),
            vector(&[Operand::Gpr(4, 0), Operand::Constant]),
        ];
        assert_eq!(solve(&g), None);
    }

    #[test]
    fn shared_reads_and_swizzles_resolve_conflicts() {
        // Both read register 1 first and different registers second: the second instruction
        // swaps its cycles (VEC_102) so register 2 and register 3 do not meet.
        let g = [
            vector(&[Operand::Gpr(1, 0), Operand::Gpr(2, 1)]),
            vector(&[Operand::Gpr(3, 1), Operand::Gpr(1, 0)]),
        ];
        let codes = solve(&g).expect("a solution");
        let cycle = |inst: usize, src: usize| VECTOR[codes[inst] as usize][src];
        assert_ne!(cycle(0, 1), cycle(1, 0));
    }

    #[test]
    fn trans_reads_registers_after_its_constants() {
        let t = |srcs: &[Operand]| Reads {
            trans: true,
            srcs: srcs.to_vec(),
        };
        assert!(
            solve(&[t(&[
                Operand::Constant,
                Operand::Constant,
                Operand::Gpr(1, 0)
            ])])
            .is_some()
        );
        assert!(
            solve(&[t(&[
                Operand::Constant,
                Operand::Constant,
                Operand::Constant
            ])])
            .is_none()
        );
        // Two constants leave only cycle 2 for the register: SCL_122 or SCL_221 puts src2
        // there... but src2 is a constant here, so src0 needs cycle 2 (SCL_210/212/221).
        let codes = solve(&[t(&[
            Operand::Gpr(1, 0),
            Operand::Constant,
            Operand::Constant,
        ])])
        .expect("a solution");
        assert_eq!(TRANS[codes[0] as usize][0], 2);
    }
}
