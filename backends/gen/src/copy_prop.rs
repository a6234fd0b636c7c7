//! `copy-prop`: instructions that read a copy's destination read the copied value instead.
//!
//! What: a copy is a `mov d, s` without predicate, conditional modifier or saturation, whose
//! destination `d` is a virtual register no other instruction writes. An instruction that reads
//! elements of `d` the copy wrote reads the elements of `s` the copy put there in its place: an
//! immediate, a payload register, or a virtual register, with the copy's source modifiers
//! (`-`, `(abs)`) composed with the reader's own. On Gen8+ a `not d, s`
//! is a copy too, into logic instructions (`and`, `or`, `xor`), where a negated source is its
//! bitwise complement (`~s`). The pass repeats until nothing changes; dead-code elimination then
//! removes the copies no one reads.
//!
//! Why: lowering writes `fneg`, `fabs`, `ineg` and `iabs` as movs with source modifiers, puts
//! immediates in registers for sources that cannot take them, and copies constants and uniforms
//! into phi registers' places; Mesa's copy propagation folds all of these into their readers.
//!
//! Invariants:
//! - `s` holds at the reader the value it held at the copy: it is an immediate, a payload
//!   register no instruction writes, or a virtual register with a single writer that dominates
//!   the copy; and the copy dominates the reader. Dominance is read from the structured
//!   program: an earlier instruction dominates a later one when the block it is in (the program,
//!   an `if` or `else` arm, a loop body) encloses the later one.
//! - The reader takes what it gets. Immediates only go where the hardware takes them (a `mov`'s
//!   source, or the second source of a 2-source ALU instruction other than `math`), and only
//!   without modifiers. Source modifiers never go into sends, instructions that ignore them
//!   (`addc`, `subb` and the others [`takes_modifiers`] lists), unsigned sources, or logic
//!   instructions (where a negation means a complement). A copy's source may be a plain
//!   vector, a scalar, every other dword (`<8,4,2>`: half of each 64-bit element, as 64-bit
//!   comparisons and the halves of 64-bit values are read) or a SIMD4x2 vertex's dword
//!   (`<4,4,0>`, `<4,1,0>`); the reader may read the copy's destination through any region
//!   within what the copy wrote, and reads the source through the region that gives each of
//!   its channels the same element, when one of those does; strided ones only in 1- and
//!   2-source instructions, since 3-source instructions have no such regions. A reader that retypes `d` gets `s` retyped only when
//!   neither side has a modifier and the copy does not convert (raw 32-bit bits).
//!
//! Options: the generation (a logic instruction's negated source is a complement on Gen8+ only).

use crate::analysis::{Blocks, Writers};
use crate::isa::{Gen, Opcode, Region, Type};
use crate::lir::{Inst, Lir, Op, Operand, Src};

/// Runs the pass; gives whether it changed anything.
pub fn propagate_copies(program: &mut Lir, hw: Gen) -> bool {
    let mut changed = false;
    while propagate_once(program, hw) {
        changed = true;
    }
    changed
}

fn propagate_once(program: &mut Lir, hw: Gen) -> bool {
    let writers = Writers::of(program);
    let blocks = Blocks::of(program);
    let mut changed = false;
    for reader in 0..program.insts.len() {
        for k in 0..program.insts[reader].srcs.len() {
            let Src::Reg(read) = program.insts[reader].srcs[k] else {
                continue;
            };
            let Some(copy_index) = read.vreg().and_then(|d| writers.single(d.0)) else {
                continue;
            };
            let copy_inst = &program.insts[copy_index];
            let Some(copy) = Copy::of(copy_inst, hw) else {
                continue;
            };
            if !writers.is_stable(&copy.src, copy_index, &blocks)
                || !blocks.dominates(copy_index, reader)
            {
                continue;
            }
            let inst = &program.insts[reader];
            if let Some(new) = substitute(inst, k, read, copy_inst, &copy) {
                program.insts[reader].srcs[k] = new;
                changed = true;
            }
        }
    }
    changed
}

/// A copy's source and whether it is a bitwise complement (a Gen8+ `not`).
struct Copy {
    src: Src,
    complement: bool,
}

impl Copy {
    fn of(inst: &Inst, hw: Gen) -> Option<Copy> {
        let plain = inst.predicate.is_none()
            && inst.cond.is_none()
            && !inst.saturate
            && !inst.mask_all
            && inst.send.is_none();
        let dst = inst.dst?;
        let src = *inst.srcs.first()?;
        if !plain || dst.offset != 0 || dst.region.hstride != 1 || dst.ty.size() != 4 {
            return None;
        }
        if let Src::Reg(s) = src
            && !SOURCE_REGIONS.contains(&s.region)
        {
            return None;
        }
        match inst.op {
            Op::Hw(Opcode::Mov) if src.ty() == dst.ty || is_raw_int_copy(src.ty(), dst.ty) => {
                Some(Copy {
                    src,
                    complement: false,
                })
            }
            Op::Hw(Opcode::Not) if hw.is_gen8_plus() && !has_modifiers(&src) => Some(Copy {
                src,
                complement: true,
            }),
            _ => None,
        }
    }
}

/// A source reading every other dword: one half of each 64-bit element (a 64-bit value's low
/// or high dwords, or what a 64-bit comparison writes).
const EVERY_OTHER_DWORD: Region = Region::new(8, 4, 2);

/// The regions a copy's source, or what a reader reads in its place, may have, in order of
/// preference: a plain vector, a scalar, every other dword, a dword for each four channels
/// (`<4;4,0>`: a SIMD4x2 vertex's attribute component) and a dword of each vertex (`<4;1,0>`:
/// what a SIMD4x2 URB write's payload takes).
const SOURCE_REGIONS: [Region; 5] = [
    PLAIN,
    Region::SCALAR,
    EVERY_OTHER_DWORD,
    Region::PER_VERTEX,
    Region::EACH_VERTEX,
];

/// A plain vector of dwords: `<8;8,1>`.
const PLAIN: Region = Region::new(8, 8, 1);

/// What channel `i` of a reader reads when it reads the copy's destination through `read`
/// and the destination holds what channel `e` of the copy read through `copy_src`: the
/// source's region and first element (counted in dwords from the copy's source) that give
/// each of the reader's `exec_size` channels the element of the source the copy put where it
/// reads; `None` when a channel reads past what the copy wrote (its `copy_exec_size`
/// elements) or no region of [`SOURCE_REGIONS`] reads the elements in that order.
fn compose(
    read: &Operand,
    exec_size: u8,
    copy_src: Region,
    copy_exec_size: u8,
) -> Option<(Region, u32)> {
    if !read.offset.is_multiple_of(4) || read.region.vstride.is_none() {
        return None;
    }
    // The destination's element channel `i` reads, and the source's element the copy put there.
    let read_element = |i: u32| read.offset / 4 + read.region.element(i);
    let channels = 0..exec_size as u32;
    if channels
        .clone()
        .any(|i| read_element(i) >= copy_exec_size as u32)
    {
        return None;
    }
    let source_element = |i: u32| copy_src.element(read_element(i));
    let first = source_element(0);
    let reads = |r: &Region| {
        (channels.clone()).all(|i| source_element(i).checked_sub(first) == Some(r.element(i)))
    };
    SOURCE_REGIONS.into_iter().find(reads).map(|r| (r, first))
}

/// A mov between 32-bit integer types copies the bits.
fn is_raw_int_copy(from: Type, to: Type) -> bool {
    matches!(from, Type::D | Type::UD) && matches!(to, Type::D | Type::UD)
}

fn has_modifiers(src: &Src) -> bool {
    src.reg().is_some_and(|r| r.negate || r.abs)
}

/// What source `k` of `inst`, which reads `read` (the copy's destination), becomes; `None`
/// when the substitution is not allowed.
fn substitute(inst: &Inst, k: usize, read: Operand, copy_inst: &Inst, copy: &Copy) -> Option<Src> {
    let Op::Hw(op) = inst.op else {
        return None;
    };
    let copy_dst = copy_inst.dst?;
    // The reader reads elements the copy wrote (at SIMD32, a half reads its part of a whole
    // copy; a reader of other channels' elements, or of every channel's (`WE_all`), may read
    // elements of channels the copy left alone, whose values nothing defined).
    if read.ty.size() != 4 || inst.send.is_some() || op.is_control_flow() {
        return None;
    }
    let copy_region = copy.src.reg().map_or(Region::SCALAR, |s| s.region);
    let (region, element) = compose(&read, inst.exec_size, copy_region, copy_inst.exec_size)?;
    let logic = matches!(op, Opcode::And | Opcode::Or | Opcode::Xor);
    let read_modifiers = read.negate || read.abs;
    let copy_src = match copy.src {
        Src::Reg(s) => Src::Reg(Operand {
            offset: s.offset + element * s.ty.size() as u32,
            region,
            ..s
        }),
        imm => imm,
    };
    if copy.complement {
        let Src::Reg(s) = copy_src else {
            return None;
        };
        let integer = matches!(read.ty, Type::D | Type::UD);
        return (logic && integer && !read_modifiers).then_some(Src::Reg(Operand {
            negate: true,
            ..s.retype(read.ty)
        }));
    }
    match copy_src {
        Src::Imm(_, bits) => {
            let position_takes_immediate = match op.num_srcs() {
                1 => op == Opcode::Mov,
                2 => k == 1 && op != Opcode::Math,
                _ => false,
            };
            (position_takes_immediate && !read_modifiers).then_some(Src::Imm(read.ty, bits))
        }
        // 3-source instructions read plain vectors and scalars only.
        Src::Reg(s) if op.num_srcs() == 3 && ![PLAIN, Region::SCALAR].contains(&s.region) => None,
        Src::Reg(s) => {
            let copy_modifiers = s.negate || s.abs;
            if read.ty != copy_dst.ty {
                let raw = !read_modifiers && !copy_modifiers && s.ty == copy_dst.ty;
                return raw.then_some(Src::Reg(s.retype(read.ty)));
            }
            // Outer modifiers over inner ones: an outer abs drops the inner negation.
            let negate = if read.abs {
                read.negate
            } else {
                read.negate != s.negate
            };
            let abs = read.abs || s.abs;
            if (negate || abs) && !takes_modifiers(op, read.ty, logic) {
                return None;
            }
            Some(Src::Reg(Operand {
                negate,
                abs,
                ..s.retype(read.ty)
            }))
        }
    }
}

/// Whether `op` applies arithmetic source modifiers to a source of type `ty`.
fn takes_modifiers(op: Opcode, ty: Type, logic: bool) -> bool {
    let ignores = matches!(
        op,
        Opcode::Addc
            | Opcode::Subb
            | Opcode::Bfe
            | Opcode::Bfi1
            | Opcode::Bfi2
            | Opcode::Bfrev
            | Opcode::Cbit
            | Opcode::Fbh
            | Opcode::Fbl
            | Opcode::Not
    );
    !ignores && !logic && !matches!(ty, Type::UD | Type::UW | Type::UB)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lir::testing::{mov, program, v};
    use crate::lir::{Base, VReg};

    #[test]
    fn modifiers_compose_into_the_reader() {
        // v1 = -(abs)v0; v2 = v1 + -v1 reads (abs)v0 negated twice over.
        let mut p = program(
            3,
            vec![
                mov(v(0, Type::F), Src::imm_f(2.0)),
                mov(v(1, Type::F), Src::Reg(v(0, Type::F).absolute().negated())),
                Inst::new(
                    Opcode::Add,
                    8,
                    Some(v(2, Type::F)),
                    vec![Src::Reg(v(1, Type::F)), Src::Reg(v(1, Type::F).negated())],
                ),
            ],
        );
        assert!(propagate_copies(&mut p, Gen::Gen9));
        let add = &p.insts[2];
        assert_eq!(add.srcs[0], Src::Reg(v(0, Type::F).absolute().negated()));
        assert_eq!(add.srcs[1], Src::Reg(v(0, Type::F).absolute()));
    }

    #[test]
    fn a_source_written_in_parts_is_read_through_the_copy_unless_written_after_it() {
        // v0 is written twice (the second time under a predicate, as `fsign` is), negated into
        // v1, and v1 is read: the reader takes -v0. With one more write of v0 after the copy,
        // the reader stays on v1.
        let mut predicated = mov(v(0, Type::F), Src::imm_f(1.0));
        predicated.predicate = Some(crate::encoding::Predicate {
            control: 1,
            inverse: false,
        });
        let mut insts = vec![
            mov(v(0, Type::F), Src::imm_f(2.0)),
            predicated,
            mov(v(1, Type::F), Src::Reg(v(0, Type::F).negated())),
            Inst::new(
                Opcode::Add,
                8,
                Some(v(2, Type::F)),
                vec![Src::Reg(v(1, Type::F)), Src::imm_f(1.0)],
            ),
        ];
        let mut p = program(3, insts.clone());
        assert!(propagate_copies(&mut p, Gen::Gen9));
        assert_eq!(p.insts[3].srcs[0], Src::Reg(v(0, Type::F).negated()));

        insts.insert(3, mov(v(0, Type::F), Src::imm_f(3.0)));
        let mut p = program(3, insts);
        assert!(!propagate_copies(&mut p, Gen::Gen9));
    }

    /// A copy of every other dword (the low halves of 64-bit values) goes into a 2-source
    /// reader, not into a 3-source one.
    #[test]
    fn halves_of_64_bit_values_go_into_two_source_readers() {
        let half = Src::Reg(Operand {
            region: Region::new(8, 4, 2),
            ..v(0, Type::UD)
        });
        let mut p = program(
            4,
            vec![
                mov(v(0, Type::UQ), Src::Imm(Type::UQ, 7)),
                mov(v(1, Type::UD), half),
                Inst::new(
                    Opcode::Add,
                    8,
                    Some(v(2, Type::UD)),
                    vec![Src::Reg(v(1, Type::UD)), Src::imm_ud(1)],
                ),
                Inst::new(
                    Opcode::Mad,
                    8,
                    Some(v(3, Type::F)),
                    vec![
                        Src::Reg(v(1, Type::F)),
                        Src::Reg(v(1, Type::F)),
                        Src::Reg(v(1, Type::F)),
                    ],
                ),
            ],
        );
        p.vreg_sizes[0] = 2;
        assert!(propagate_copies(&mut p, Gen::Gen9));
        assert_eq!(p.insts[2].srcs[0], half);
        assert_eq!(p.insts[3].srcs[0], Src::Reg(v(1, Type::F)));
    }

    #[test]
    fn immediates_only_where_the_hardware_takes_them() {
        let mut p = program(
            3,
            vec![
                mov(v(0, Type::F), Src::imm_f(2.0)),
                Inst::new(
                    Opcode::Add,
                    8,
                    Some(v(1, Type::F)),
                    vec![Src::Reg(v(0, Type::F)), Src::Reg(v(0, Type::F))],
                ),
                mov(v(2, Type::UD), Src::Reg(v(0, Type::UD))),
            ],
        );
        assert!(propagate_copies(&mut p, Gen::Gen9));
        assert_eq!(p.insts[1].srcs[0], Src::Reg(v(0, Type::F)), "not src0");
        assert_eq!(p.insts[1].srcs[1], Src::imm_f(2.0));
        assert_eq!(
            p.insts[2].srcs[0],
            Src::Imm(Type::UD, 2.0f32.to_bits() as u64)
        );
    }

    #[test]
    fn a_copy_in_an_arm_does_not_reach_past_its_endif() {
        let mut p = program(
            3,
            vec![
                mov(
                    v(0, Type::F),
                    Src::Reg(Operand::scalar(Base::Fixed(2), 0, Type::F)),
                ),
                Inst::control(Op::Hw(Opcode::If), 8),
                mov(v(1, Type::F), Src::Reg(v(0, Type::F).negated())),
                Inst::control(Op::Hw(Opcode::Endif), 8),
                mov(v(2, Type::F), Src::Reg(v(1, Type::F))),
            ],
        );
        propagate_copies(&mut p, Gen::Gen9);
        assert_eq!(p.insts[4].srcs[0], Src::Reg(v(1, Type::F)));
        // Inside the arm, the payload register reaches the negation.
        assert_eq!(
            p.insts[2].srcs[0],
            Src::Reg(Operand::scalar(Base::Fixed(2), 0, Type::F).negated())
        );
    }

    #[test]
    fn not_becomes_a_complement_in_logic_instructions_on_gen8_only() {
        let insts = vec![
            mov(
                v(0, Type::UD),
                Src::Reg(Operand::scalar(Base::Fixed(2), 0, Type::UD)),
            ),
            Inst::new(
                Opcode::Not,
                8,
                Some(v(1, Type::UD)),
                vec![Src::Reg(v(0, Type::UD))],
            ),
            Inst::new(
                Opcode::And,
                8,
                Some(v(2, Type::UD)),
                vec![Src::Reg(v(1, Type::UD)), Src::imm_ud(0x3F80_0000)],
            ),
        ];
        let mut gen7 = program(3, insts.clone());
        propagate_copies(&mut gen7, Gen::Gen75);
        assert_eq!(gen7.insts[2].srcs[0], Src::Reg(v(1, Type::UD)));
        let mut gen9 = program(3, insts);
        assert!(propagate_copies(&mut gen9, Gen::Gen9));
        let payload = Operand::scalar(Base::Fixed(2), 0, Type::UD);
        assert_eq!(gen9.insts[1].srcs[0], Src::Reg(payload));
        assert_eq!(gen9.insts[2].srcs[0], Src::Reg(payload.negated()));
    }

    /// A SIMD32 copy's halves: a SIMD16 reader of the second half reads the second half of the
    /// copied register; a reader of the first half's bytes from the second half's channels
    /// reads the first half of it.
    #[test]
    fn halves_read_their_part_of_a_wider_copy() {
        let at = |n: u32, offset: u32| Operand::vector(VReg(n), offset, Type::F);
        let half = |dst: u32, src: Operand| Inst {
            group: 16,
            ..Inst::new(Opcode::Mov, 16, Some(at(dst, 64)), vec![Src::Reg(src)])
        };
        let mut p = program(
            4,
            vec![
                Inst::new(
                    Opcode::Add,
                    32,
                    Some(at(0, 0)),
                    vec![Src::Reg(Operand::payload(2, 0, Type::F)), Src::imm_f(1.0)],
                ),
                Inst::new(Opcode::Mov, 32, Some(at(1, 0)), vec![Src::Reg(at(0, 0))]),
                half(2, at(1, 64)),
                half(3, at(1, 0)),
            ],
        );
        p.vreg_sizes = vec![4; 4];
        assert!(propagate_copies(&mut p, Gen::Gen9));
        assert_eq!(p.insts[2].srcs[0], Src::Reg(at(0, 64)));
        assert_eq!(p.insts[3].srcs[0], Src::Reg(at(0, 0)));
    }

    /// SIMD4x2 vertex threads: a copy of an attribute component (`<4;4,0>`) goes into 2-source
    /// readers and into the per-vertex (`<4;1,0>`) reads of a URB write's payload, not into
    /// 3-source readers; a reader of elements past the copy's keeps it.
    #[test]
    fn attribute_components_of_two_vertex_threads_go_into_their_readers() {
        let attribute = Operand {
            region: Region::new(4, 4, 0),
            ..Operand::scalar(Base::Fixed(3), 4, Type::F)
        };
        let per_vertex = |op: Operand| Operand {
            region: Region::new(4, 1, 0),
            ..op
        };
        let mut vue = Inst::new(
            Opcode::Mov,
            2,
            Some(Operand {
                region: Region::new(8, 2, 4),
                ..v(4, Type::F)
            }),
            vec![Src::Reg(per_vertex(v(1, Type::F)))],
        );
        vue.mask_all = true;
        let past = Operand {
            offset: 16,
            ..v(1, Type::F)
        };
        let mut p = program(
            6,
            vec![
                mov(v(1, Type::F), Src::Reg(attribute)),
                Inst::new(
                    Opcode::Add,
                    8,
                    Some(v(2, Type::F)),
                    vec![Src::Reg(v(1, Type::F)), Src::imm_f(1.0)],
                ),
                Inst::new(
                    Opcode::Mad,
                    8,
                    Some(v(3, Type::F)),
                    vec![Src::Reg(v(1, Type::F)); 3],
                ),
                vue,
                mov(v(5, Type::F), Src::Reg(past)),
            ],
        );
        assert!(propagate_copies(&mut p, Gen::Gen7));
        assert_eq!(p.insts[1].srcs[0], Src::Reg(attribute));
        assert_eq!(p.insts[2].srcs, vec![Src::Reg(v(1, Type::F)); 3]);
        assert_eq!(p.insts[3].srcs[0], Src::Reg(per_vertex(attribute)));
        assert_eq!(p.insts[4].srcs[0], Src::Reg(past));
    }
}
