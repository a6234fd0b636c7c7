//! The emulator's tests: small programs run end to end, from ALU groups and control flow to
//! fetches and scratch memory.

use super::*;
use crate::isa::sel;
use crate::program::{
    AluInst, Cf, CfBody, Dst, Export, Fetch, Group, Kcache, MemRead, Src, VtxFormat, end_program,
};
use crate::texture;
use shrew_engine::interp::{MipLevel, Resources, SamplerState, Texture};
use shrew_engine::ir::Dim;
use shrew_engine::ops::BaseType;
use std::sync::Arc;

fn f(x: f32) -> u32 {
    x.to_bits()
}

fn floats(xs: &[f32]) -> Vec<u32> {
    xs.iter().map(|&x| f(x)).collect()
}

/// `cf` on `chip`, ended after its last instruction (by CF_END on Cayman).
fn program(chip: Chip, mut cf: Vec<Cf>, stack_size: u8) -> Program {
    end_program(chip, &mut cf);
    Program {
        chip,
        cf,
        gprs: 16,
        stack_size,
        scratch_elements: 0,
    }
}

fn alu(op: CfOp, groups: Vec<Group>) -> Cf {
    Cf::new(
        op,
        CfBody::Alu {
            kcache: vec![],
            groups,
        },
    )
}

fn group(insts: Vec<AluInst>) -> Group {
    Group {
        insts,
        literals: vec![],
    }
}

fn inst(op: AluOpcode, dst: Dst, srcs: &[Src]) -> AluInst {
    AluInst::new(op, dst, srcs)
}

fn mov(dst: Dst, src: Src) -> AluInst {
    inst(AluOpcode::Mov, dst, &[src])
}

fn r(gpr: u8, chan: u8) -> Src {
    Src::gpr(gpr, chan)
}

fn d(gpr: u8, chan: u8) -> Dst {
    Dst::gpr(gpr, chan)
}

fn lit(chan: u8) -> Src {
    Src::sel(sel::LITERAL, chan)
}

/// A predicate set that updates the predicate and the exec mask (Mesa's `if`).
fn pred_set(op: AluOpcode, a: Src, b: Src) -> AluInst {
    AluInst {
        update_exec_mask: true,
        update_pred: true,
        ..inst(op, Dst::none(0), &[a, b])
    }
}

/// A wavefront of `lanes` lanes with component `chan` of GPR `gpr` set per lane.
fn wave(lanes: usize, inputs: &[(usize, usize, &[u32])]) -> Wavefront {
    let mut w = Wavefront::new(lanes);
    for &(gpr, chan, values) in inputs {
        for (lane, &v) in values.iter().enumerate() {
            w.gprs[lane][gpr][chan] = v;
        }
    }
    w
}

fn column(w: &Wavefront, gpr: usize, chan: usize) -> Vec<u32> {
    w.gprs.iter().map(|g| g[gpr][chan]).collect()
}

fn fetch(op: FetchOp, src_gpr: u8, src_sel: [u8; 4], dst_gpr: u8, dst_sel: [u8; 4]) -> Fetch {
    Fetch {
        op,
        resource: 0,
        sampler: 0,
        src_gpr,
        src_sel,
        dst_gpr,
        dst_sel,
        coord_normalized: [true; 4],
        lod_bias: 0,
        offset: [0; 3],
        vtx: VtxFormat::default(),
    }
}

fn run_env(p: &Program, w: &mut Wavefront, env: &Env) -> Vec<ExportRecord> {
    run(p, w, env).unwrap_or_else(|e| panic!("{e}"))
}

fn run_ok(p: &Program, w: &mut Wavefront) -> Vec<ExportRecord> {
    run_env(p, w, &Env::default())
}

fn err(p: &Program, w: &mut Wavefront) -> EmuError {
    run(p, w, &Env::default()).expect_err("the run should fail")
}

fn constants(values: &[(usize, [f32; 4])]) -> Vec<u8> {
    let len = values.iter().map(|&(n, _)| n + 1).max().unwrap_or(0);
    let mut bytes = vec![0; 16 * len];
    for &(n, v) in values {
        for (c, x) in v.iter().enumerate() {
            bytes[16 * n + 4 * c..][..4].copy_from_slice(&x.to_le_bytes());
        }
    }
    bytes
}

#[test]
fn a_group_reads_literals_kcache_pv_and_ps() {
    let g0 = Group {
        insts: vec![
            inst(AluOpcode::Mul, d(1, 0), &[r(0, 0), lit(0)]),
            inst(
                AluOpcode::Add,
                d(1, 1),
                &[Src::sel(129, 1), Src::sel(sel::ONE, 0)],
            ),
            mov(Dst::none(2), Src::sel(160 + 17, 3)),
            inst(AluOpcode::RecipIeee, d(2, 0), &[r(0, 1)]),
        ],
        literals: vec![f(2.5)],
    };
    let g1 = Group {
        insts: vec![
            inst(
                AluOpcode::Add,
                d(3, 0),
                &[Src::sel(sel::PV, 0), Src::sel(sel::PS, 0)],
            ),
            mov(d(3, 1), Src::sel(sel::PV, 2)),
            inst(
                AluOpcode::Muladd,
                d(3, 2),
                &[
                    Src::sel(sel::PV, 1),
                    lit(1),
                    Src {
                        neg: true,
                        ..r(0, 0)
                    },
                ],
            ),
        ],
        literals: vec![f(3.0), f(0.5)],
    };
    let clause = Cf::new(
        CfOp::Alu,
        CfBody::Alu {
            kcache: vec![
                Kcache {
                    bank: 0,
                    line: 0,
                    lines: 1,
                },
                Kcache {
                    bank: 3,
                    line: 1,
                    lines: 2,
                },
            ],
            groups: vec![g0, g1],
        },
    );
    let env = Env {
        constant_buffers: BTreeMap::from([
            (0, constants(&[(1, [10.0, 20.0, 30.0, 40.0])])),
            (3, constants(&[(33, [100.0, 200.0, 300.0, 400.0])])),
        ]),
        ..Env::default()
    };
    let p = program(Chip::Evergreen, vec![clause], 0);
    let mut w = wave(
        2,
        &[(0, 0, &floats(&[1.5, -2.0])), (0, 1, &floats(&[4.0, 0.5]))],
    );
    run_env(&p, &mut w, &env);
    assert_eq!(column(&w, 1, 0), floats(&[3.75, -5.0]));
    assert_eq!(column(&w, 1, 1), floats(&[21.0, 21.0]));
    assert_eq!(column(&w, 1, 2), [0, 0], "the MOV does not write");
    assert_eq!(column(&w, 2, 0), floats(&[0.25, 2.0]));
    assert_eq!(column(&w, 3, 0), floats(&[4.0, -3.0]));
    assert_eq!(column(&w, 3, 1), floats(&[400.0, 400.0]));
    assert_eq!(column(&w, 3, 2), floats(&[9.0, 12.5]));
}

#[test]
fn operands_the_clause_lacks_are_errors() {
    let one_group = |insts: Vec<AluInst>, literals: Vec<u32>| {
        program(
            Chip::Evergreen,
            vec![alu(CfOp::Alu, vec![Group { insts, literals }])],
            0,
        )
    };
    let mut w = Wavefront::new(1);
    let e = err(&one_group(vec![mov(d(1, 0), lit(1))], vec![7]), &mut w);
    assert_eq!(
        e,
        EmuError::Invalid {
            at: At {
                cf: 0,
                cf_op: CfOp::Alu,
                within: Within::Inst {
                    group: 0,
                    inst: 0,
                    op: AluOpcode::Mov
                }
            },
            why: "reads literal y of a group with 1".into()
        }
    );
    let e = err(
        &one_group(vec![mov(d(1, 0), Src::sel(128, 0))], vec![]),
        &mut w,
    );
    assert!(e.to_string().contains("KC0[0]"), "{e}");
    let kc = Cf::new(
        CfOp::Alu,
        CfBody::Alu {
            kcache: vec![Kcache {
                bank: 0,
                line: 2,
                lines: 1,
            }],
            groups: vec![group(vec![mov(d(1, 0), Src::sel(128 + 16, 0))])],
        },
    );
    let e = err(&program(Chip::Evergreen, vec![kc], 0), &mut w);
    assert!(e.to_string().contains("outside the 16 constants"), "{e}");
    let e = err(
        &one_group(vec![mov(d(1, 0), Src::sel(sel::PV, 0))], vec![]),
        &mut w,
    );
    assert!(e.to_string().contains("reads PV.x"), "{e}");
    let e = err(&one_group(vec![mov(d(1, 0), r(125, 2))], vec![]), &mut w);
    assert!(e.to_string().contains("T1.z read before"), "{e}");
    let e = err(
        &one_group(
            vec![inst(AluOpcode::Cube, d(1, 0), &[r(0, 0), r(0, 1)])],
            vec![],
        ),
        &mut w,
    );
    assert!(matches!(e, EmuError::Unsupported { .. }), "{e}");
    // A clause temporary lives within its clause only.
    let temps = program(
        Chip::Evergreen,
        vec![
            alu(
                CfOp::Alu,
                vec![
                    group(vec![mov(d(124, 0), Src::sel(sel::ONE, 0))]),
                    group(vec![mov(d(1, 0), r(124, 0))]),
                ],
            ),
            alu(CfOp::Alu, vec![group(vec![mov(d(1, 1), r(124, 0))])]),
        ],
        0,
    );
    let e = err(&temps, &mut w);
    assert!(e.to_string().starts_with("CF 1 (ALU)"), "{e}");
    assert_eq!(w.gprs[0][1][0], f(1.0));
}

#[test]
fn cayman_runs_trans_operations_in_each_vector_slot() {
    let recips = group(vec![
        inst(AluOpcode::RecipIeee, d(1, 0), &[r(0, 0)]),
        inst(AluOpcode::RecipIeee, Dst::none(1), &[r(0, 1)]),
        inst(AluOpcode::RecipIeee, Dst::none(2), &[r(0, 2)]),
    ]);
    let mullo = group(vec![
        mov(d(1, 1), Src::sel(sel::PV, 1)),
        inst(AluOpcode::MulloInt, d(2, 0), &[r(3, 0), r(3, 1)]),
        inst(AluOpcode::MulloInt, Dst::none(1), &[r(3, 0), r(3, 0)]),
        inst(AluOpcode::MulloInt, Dst::none(2), &[r(3, 0), r(3, 0)]),
        inst(AluOpcode::MulloInt, Dst::none(3), &[r(3, 0), r(3, 0)]),
    ]);
    // The MOV and the MULLO_INT of slot x collide: split them.
    let [mov_pv, rest @ ..] = &mullo.insts[..] else {
        unreachable!()
    };
    let g1 = group(vec![mov_pv.clone()]);
    let g2 = group(rest.to_vec());
    let g3 = group(vec![mov(d(2, 1), Src::sel(sel::PV, 1))]);
    let p = program(
        Chip::Cayman,
        vec![alu(CfOp::Alu, vec![recips.clone(), g1, g2, g3])],
        0,
    );
    let mut w = wave(
        1,
        &[
            (0, 0, &floats(&[2.0])),
            (0, 1, &floats(&[8.0])),
            (3, 0, &[7]),
            (3, 1, &[(-3i32) as u32]),
        ],
    );
    run_ok(&p, &mut w);
    assert_eq!(w.gprs[0][1][..2], floats(&[0.5, 0.125]));
    assert_eq!(w.gprs[0][2][..2], [(-21i32) as u32, 49]);
    // Cayman has no PS.
    let ps = program(
        Chip::Cayman,
        vec![alu(
            CfOp::Alu,
            vec![recips, group(vec![mov(d(1, 0), Src::sel(sel::PS, 0))])],
        )],
        0,
    );
    assert!(err(&ps, &mut w).to_string().contains("PS on Cayman"));
}

#[test]
fn legacy_multiplies_ignore_infinity_times_zero() {
    let g = group(vec![
        inst(AluOpcode::Mul, d(1, 0), &[r(0, 0), r(0, 1)]),
        inst(AluOpcode::MulIeee, d(1, 1), &[r(0, 0), r(0, 1)]),
        inst(AluOpcode::Muladd, d(1, 2), &[r(0, 0), r(0, 1), r(0, 2)]),
        inst(AluOpcode::MuladdIeee, d(1, 3), &[r(0, 0), r(0, 1), r(0, 2)]),
        inst(AluOpcode::MuladdM2, d(2, 0), &[r(0, 2), r(0, 2), r(0, 2)]),
    ]);
    let mut sat = inst(AluOpcode::MulIeee, d(2, 1), &[r(0, 2), r(0, 3)]);
    sat.omod = 1;
    sat.dst.clamp = true;
    let mut halved = inst(AluOpcode::Add, d(2, 2), &[r(0, 2), r(0, 3)]);
    halved.omod = 3;
    // PV holds the result after the output modifier and clamp.
    let pv = group(vec![mov(d(2, 3), Src::sel(sel::PV, 1))]);
    let p = program(
        Chip::Evergreen,
        vec![alu(CfOp::Alu, vec![g, group(vec![sat, halved]), pv])],
        0,
    );
    let mut w = wave(
        2,
        &[
            (0, 0, &floats(&[0.0, -0.0])),
            (0, 1, &floats(&[f32::INFINITY, f32::NAN])),
            (0, 2, &floats(&[2.0, 2.0])),
            (0, 3, &floats(&[0.125, -1.0])),
        ],
    );
    run_ok(&p, &mut w);
    assert_eq!(column(&w, 1, 0), [f(0.0), f(-0.0)]);
    assert!(column(&w, 1, 1).iter().all(|&x| f32::from_bits(x).is_nan()));
    assert_eq!(column(&w, 1, 2), floats(&[2.0, 2.0]));
    assert!(column(&w, 1, 3).iter().all(|&x| f32::from_bits(x).is_nan()));
    assert_eq!(column(&w, 2, 0), floats(&[12.0, 12.0]));
    assert_eq!(column(&w, 2, 1), floats(&[0.5, 0.0]));
    assert_eq!(column(&w, 2, 2), floats(&[1.0625, 0.5]));
    assert_eq!(column(&w, 2, 3), floats(&[0.5, 0.0]));
}

#[test]
fn flt_to_int_truncates_before_evergreen_and_rounds_after() {
    let inputs = floats(&[2.5, -2.5, 3.5, 1e20, f32::NAN, -1e20]);
    for (chip, expect) in [
        (Chip::R600, [2, -2, 3, i32::MAX, 0, i32::MIN]),
        (Chip::R700, [2, -2, 3, i32::MAX, 0, i32::MIN]),
        (Chip::Evergreen, [2, -2, 4, i32::MAX, 0, i32::MIN]),
        (Chip::Cayman, [2, -2, 4, i32::MAX, 0, i32::MIN]),
    ] {
        let g = group(vec![inst(AluOpcode::FltToInt, d(1, 0), &[r(0, 0)])]);
        let p = program(chip, vec![alu(CfOp::Alu, vec![g])], 0);
        let mut w = wave(inputs.len(), &[(0, 0, &inputs)]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 1, 0), expect.map(|x| x as u32), "{chip:?}");
    }
}

#[test]
fn sin_takes_radians_on_r600_and_revolutions_later() {
    for (chip, sin, cos) in [
        (Chip::R600, 0.25f64.sin() as f32, 0.5f64.cos() as f32),
        (Chip::R700, 1.0, -1.0),
        (Chip::Evergreen, 1.0, -1.0),
    ] {
        let p = program(
            chip,
            vec![alu(
                CfOp::Alu,
                vec![
                    group(vec![inst(AluOpcode::Sin, d(1, 0), &[r(0, 0)])]),
                    group(vec![inst(AluOpcode::Cos, d(1, 1), &[r(0, 1)])]),
                ],
            )],
            0,
        );
        let mut w = wave(1, &[(0, 0, &floats(&[0.25])), (0, 1, &floats(&[0.5]))]);
        run_ok(&p, &mut w);
        assert_eq!(w.gprs[0][1][..2], floats(&[sin, cos]), "{chip:?}");
    }
}

/// `if (R0.x > 0) R1.x = 10 else R1.x = 20; R1.y = 1`, as Mesa lays it out.
fn if_else(chip: Chip) -> Program {
    let set = |value: f32| Group {
        insts: vec![mov(d(1, 0), lit(0))],
        literals: vec![f(value)],
    };
    program(
        chip,
        vec![
            alu(
                CfOp::AluPushBefore,
                vec![group(vec![pred_set(
                    AluOpcode::PredSetgt,
                    r(0, 0),
                    Src::sel(sel::ZERO, 0),
                )])],
            ),
            Cf::flow(CfOp::Jump, 3, 0),
            alu(CfOp::Alu, vec![set(10.0)]),
            Cf::flow(CfOp::Else, 5, 1),
            alu(CfOp::AluPopAfter, vec![set(20.0)]),
            alu(
                CfOp::Alu,
                vec![group(vec![mov(d(1, 1), Src::sel(sel::ONE, 0))])],
            ),
        ],
        1,
    )
}

#[test]
fn if_else_runs_each_side_for_its_lanes() {
    for chip in [Chip::R600, Chip::Evergreen, Chip::Cayman] {
        let p = if_else(chip);
        let mut w = wave(4, &[(0, 0, &floats(&[1.0, -1.0, 2.0, -2.0]))]);
        run_ok(&p, &mut w);
        assert_eq!(
            column(&w, 1, 0),
            floats(&[10.0, 20.0, 10.0, 20.0]),
            "{chip:?}"
        );
        assert_eq!(column(&w, 1, 1), floats(&[1.0; 4]), "{chip:?}");
        // Every lane on one side: ELSE jumps over the other side, JUMP over the first.
        let mut w = wave(4, &[(0, 0, &floats(&[1.0; 4]))]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 1, 0), floats(&[10.0; 4]));
        assert_eq!(column(&w, 1, 1), floats(&[1.0; 4]));
        let mut w = wave(4, &[(0, 0, &floats(&[-1.0; 4]))]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 1, 0), floats(&[20.0; 4]));
        assert_eq!(column(&w, 1, 1), floats(&[1.0; 4]));
    }
}

/// A loop counting R1.x up to R0.x (integers), breaking at the top, as Mesa lays it out;
/// R2.x = 1.0 after the loop.
fn counting_loop(chip: Chip, stack_size: u8) -> Program {
    program(
        chip,
        vec![
            alu(
                CfOp::Alu,
                vec![group(vec![mov(d(1, 0), Src::sel(sel::ZERO, 0))])],
            ),
            Cf::flow(CfOp::LoopStartDx10, 8, 0),
            alu(
                CfOp::AluPushBefore,
                vec![group(vec![pred_set(
                    AluOpcode::PredSetgeInt,
                    r(1, 0),
                    r(0, 0),
                )])],
            ),
            Cf::flow(CfOp::Jump, 6, 1),
            Cf::flow(CfOp::LoopBreak, 7, 0),
            Cf::flow(CfOp::Pop, 6, 1),
            alu(
                CfOp::Alu,
                vec![group(vec![inst(
                    AluOpcode::AddInt,
                    d(1, 0),
                    &[r(1, 0), Src::sel(sel::ONE_INT, 0)],
                )])],
            ),
            Cf::flow(CfOp::LoopEnd, 2, 0),
            alu(
                CfOp::Alu,
                vec![group(vec![mov(d(2, 0), Src::sel(sel::ONE, 0))])],
            ),
        ],
        stack_size,
    )
}

#[test]
fn a_loop_runs_each_lane_until_it_breaks() {
    for chip in [Chip::R700, Chip::Evergreen, Chip::Cayman] {
        let mut w = wave(5, &[(0, 0, &[0, 1, 3, 2, 7])]);
        run_ok(&counting_loop(chip, 2), &mut w);
        assert_eq!(column(&w, 1, 0), [0, 1, 3, 2, 7], "{chip:?}");
        assert_eq!(column(&w, 2, 0), floats(&[1.0; 5]), "{chip:?}");
    }
}

/// `main` (ended) with the subroutine `sub` after it; `main`'s CALLs name the subroutine
/// by the index 0.
fn with_subroutine(chip: Chip, main: Vec<Cf>, sub: Vec<Cf>, stack_size: u8) -> Program {
    let mut p = program(chip, main, stack_size);
    let start = p.cf.len() as u32;
    for cf in &mut p.cf {
        if let (CfOp::Call, CfBody::Flow { addr, .. }) = (cf.op, &mut cf.body) {
            *addr = start;
        }
    }
    p.cf.extend(sub);
    p
}

#[test]
fn a_call_runs_its_subroutine_on_the_active_lanes_and_returns() {
    for chip in [Chip::R700, Chip::Evergreen, Chip::Cayman] {
        // Lanes with R0.x > 0 call R1.x = R0.x + 1; then every lane copies R1.x.
        let p = with_subroutine(
            chip,
            vec![
                alu(
                    CfOp::AluPushBefore,
                    vec![group(vec![pred_set(
                        AluOpcode::PredSetgtInt,
                        r(0, 0),
                        Src::sel(sel::ZERO, 0),
                    )])],
                ),
                Cf::flow(CfOp::Jump, 4, 1),
                Cf::flow(CfOp::Call, 0, 0),
                Cf::flow(CfOp::Pop, 0, 1),
                alu(CfOp::Alu, vec![group(vec![mov(d(2, 0), r(1, 0))])]),
            ],
            vec![
                alu(
                    CfOp::Alu,
                    vec![group(vec![inst(
                        AluOpcode::AddInt,
                        d(1, 0),
                        &[r(0, 0), Src::sel(sel::ONE_INT, 0)],
                    )])],
                ),
                Cf::flow(CfOp::Return, 0, 0),
            ],
            // A push and a call frame, and the chip's extra elements: two entries.
            2,
        );
        let mut w = wave(3, &[(0, 0, &[0, 5, 7])]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 2, 0), [0, 6, 8], "{chip:?}");
    }
}

#[test]
fn a_return_without_a_call_and_a_break_out_of_a_subroutine_are_errors() {
    let chip = Chip::Evergreen;
    let returns = program(chip, vec![Cf::flow(CfOp::Return, 0, 0)], 1);
    let e = err(&returns, &mut wave(1, &[]));
    assert!(e.to_string().contains("RET without its call frame"), "{e}");
    // A loop whose body calls a subroutine that breaks.
    let breaks = with_subroutine(
        chip,
        vec![
            Cf::flow(CfOp::LoopStartDx10, 3, 0),
            Cf::flow(CfOp::Call, 0, 0),
            Cf::flow(CfOp::LoopEnd, 1, 0),
        ],
        vec![
            Cf::flow(CfOp::LoopBreak, 2, 0),
            Cf::flow(CfOp::Return, 0, 0),
        ],
        2,
    );
    let e = err(&breaks, &mut wave(1, &[]));
    assert!(e.to_string().contains("outside a loop"), "{e}");
}

#[test]
fn a_stack_deeper_than_declared_is_an_error() {
    // Evergreen: a loop frame (4) + a push (1) + 1 = 6 elements, 2 entries.
    let mut w = wave(2, &[(0, 0, &[1, 2])]);
    let e = err(&counting_loop(Chip::Evergreen, 1), &mut w);
    assert_eq!(
        e,
        EmuError::StackOverflow {
            at: At {
                cf: 2,
                cf_op: CfOp::AluPushBefore,
                within: Within::Cf
            },
            needed: 2,
            declared: 1
        }
    );
    // One push on Evergreen: 2 elements, 1 entry; the if/else declares 1.
    let mut w = wave(1, &[(0, 0, &floats(&[1.0]))]);
    run_ok(&if_else(Chip::Evergreen), &mut w);
    let mut none = if_else(Chip::Evergreen);
    none.stack_size = 0;
    assert!(matches!(
        err(&none, &mut w),
        EmuError::StackOverflow { needed: 1, .. }
    ));
}

#[test]
fn stack_elements_follow_each_chip() {
    // `n` nested PUSHes, popped together.
    let pushes = |chip: Chip, n: usize| {
        let mut cf: Vec<Cf> = (0..n).map(|_| Cf::flow(CfOp::Push, 0, 0)).collect();
        cf.push(Cf::flow(CfOp::Pop, 0, n as u8));
        program(chip, cf, 1)
    };
    // A loop whose body breaks at once.
    let empty_loop = |chip: Chip| {
        program(
            chip,
            vec![
                Cf::flow(CfOp::LoopStartDx10, 3, 0),
                Cf::flow(CfOp::LoopBreak, 2, 0),
                Cf::flow(CfOp::LoopEnd, 1, 0),
                Cf::flow(CfOp::Nop, 0, 0),
            ],
            1,
        )
    };
    // Pushes, plus 2 (R600/R700) or 1 (Evergreen) with a push; plus 2 always on Cayman.
    for (chip, fit) in [
        (Chip::R600, 2),
        (Chip::R700, 2),
        (Chip::Evergreen, 3),
        (Chip::Cayman, 2),
    ] {
        let mut w = Wavefront::new(1);
        run_ok(&pushes(chip, fit), &mut w);
        let e = err(&pushes(chip, fit + 1), &mut w);
        let at_last_push =
            matches!(&e, EmuError::StackOverflow { needed: 2, at, .. } if at.cf == fit);
        assert!(at_last_push, "{chip:?}: {e}");
        let looped = run(&empty_loop(chip), &mut w, &Env::default());
        assert_eq!(looped.is_ok(), chip != Chip::Cayman, "{chip:?}");
    }
}

#[test]
fn continue_parks_lanes_until_the_next_iteration() {
    // Count R1.x up to R0.x; R3.x counts the iterations where R1.x (after the increment)
    // is even: an odd one continues.
    let p = program(
        Chip::Evergreen,
        vec![
            alu(
                CfOp::Alu,
                vec![group(vec![mov(d(1, 0), Src::sel(sel::ZERO, 0))])],
            ),
            Cf::flow(CfOp::LoopStartDx10, 13, 0),
            alu(
                CfOp::AluPushBefore,
                vec![group(vec![pred_set(
                    AluOpcode::PredSetgeInt,
                    r(1, 0),
                    r(0, 0),
                )])],
            ),
            Cf::flow(CfOp::Jump, 6, 1),
            Cf::flow(CfOp::LoopBreak, 12, 0),
            Cf::flow(CfOp::Pop, 6, 1),
            alu(
                CfOp::Alu,
                vec![group(vec![inst(
                    AluOpcode::AddInt,
                    d(1, 0),
                    &[r(1, 0), Src::sel(sel::ONE_INT, 0)],
                )])],
            ),
            alu(
                CfOp::AluPushBefore,
                vec![
                    group(vec![inst(
                        AluOpcode::AndInt,
                        Dst::none(0),
                        &[r(1, 0), Src::sel(sel::ONE_INT, 0)],
                    )]),
                    group(vec![pred_set(
                        AluOpcode::PredSetneInt,
                        Src::sel(sel::PV, 0),
                        Src::sel(sel::ZERO, 0),
                    )]),
                ],
            ),
            Cf::flow(CfOp::Jump, 11, 1),
            Cf::flow(CfOp::LoopContinue, 12, 0),
            Cf::flow(CfOp::Pop, 11, 1),
            alu(
                CfOp::Alu,
                vec![group(vec![inst(
                    AluOpcode::AddInt,
                    d(3, 0),
                    &[r(3, 0), Src::sel(sel::ONE_INT, 0)],
                )])],
            ),
            Cf::flow(CfOp::LoopEnd, 2, 0),
            alu(
                CfOp::Alu,
                vec![group(vec![mov(d(2, 0), Src::sel(sel::ONE, 0))])],
            ),
        ],
        2,
    );
    let mut w = wave(4, &[(0, 0, &[0, 1, 4, 5])]);
    run_ok(&p, &mut w);
    assert_eq!(column(&w, 1, 0), [0, 1, 4, 5]);
    assert_eq!(column(&w, 3, 0), [0, 0, 2, 2]);
    assert_eq!(column(&w, 2, 0), floats(&[1.0; 4]));
}

#[test]
fn a_runaway_loop_hits_the_step_limit() {
    let p = program(
        Chip::Evergreen,
        vec![
            Cf::flow(CfOp::LoopStartDx10, 3, 0),
            alu(CfOp::Alu, vec![]),
            Cf::flow(CfOp::LoopEnd, 1, 0),
            Cf::flow(CfOp::Nop, 0, 0),
        ],
        1,
    );
    let mut w = Wavefront::new(4);
    assert_eq!(err(&p, &mut w), EmuError::StepLimit(STEP_LIMIT));
}

#[test]
fn malformed_control_flow_is_an_error() {
    let mut w = Wavefront::new(1);
    let pop = program(Chip::Evergreen, vec![Cf::flow(CfOp::Pop, 0, 1)], 1);
    assert!(
        err(&pop, &mut w)
            .to_string()
            .contains("popping an empty stack")
    );
    let jump = program(
        Chip::Evergreen,
        vec![Cf::flow(CfOp::Push, 0, 0), Cf::flow(CfOp::Jump, 9, 1)],
        1,
    );
    assert_eq!(
        err(&jump, &mut w),
        EmuError::BadAddress {
            at: At {
                cf: 1,
                cf_op: CfOp::Jump,
                within: Within::Cf
            },
            addr: 9,
            len: 2
        }
    );
    let mut open = program(Chip::Evergreen, vec![Cf::flow(CfOp::Nop, 0, 0)], 0);
    open.cf[0].end_of_program = false;
    assert_eq!(err(&open, &mut w), EmuError::RanOffEnd);
    let brk = program(Chip::Evergreen, vec![Cf::flow(CfOp::LoopBreak, 0, 0)], 0);
    assert!(err(&brk, &mut w).to_string().contains("outside a loop"));
    let mut w = Wavefront::new(65);
    assert!(matches!(err(&brk, &mut w), EmuError::Setup(_)));
}

#[test]
fn killed_lanes_stay_out_and_export_nothing() {
    let kill = inst(
        AluOpcode::Killgt,
        Dst::none(0),
        &[Src::sel(sel::ZERO, 0), r(0, 0)],
    );
    let export = Cf::new(
        CfOp::ExportDone,
        CfBody::Export(Export {
            burst: 2,
            ..Export::new(ExportType::Pixel, 0, 0, [0, 4, 5, 7])
        }),
    );
    // Kill inside an `if`: the POP must not bring the killed lane back.
    let p = program(
        Chip::Evergreen,
        vec![
            alu(
                CfOp::AluPushBefore,
                vec![group(vec![pred_set(
                    AluOpcode::PredSetgt,
                    r(0, 1),
                    Src::sel(sel::ZERO, 0),
                )])],
            ),
            Cf::flow(CfOp::Jump, 3, 1),
            alu(CfOp::AluPopAfter, vec![group(vec![kill])]),
            alu(
                CfOp::Alu,
                vec![Group {
                    insts: vec![mov(d(1, 0), lit(0))],
                    literals: vec![f(5.0)],
                }],
            ),
            export,
        ],
        1,
    );
    let mut w = wave(
        4,
        &[
            (0, 0, &floats(&[1.0, -1.0, 2.0, -3.0])),
            (0, 1, &floats(&[1.0, 1.0, 1.0, -1.0])),
        ],
    );
    let exports = run_ok(&p, &mut w);
    assert_eq!(w.killed, [false, true, false, false]);
    assert_eq!(column(&w, 1, 0), floats(&[5.0, 0.0, 5.0, 5.0]));
    let one = f(1.0);
    assert_eq!(
        exports,
        [
            ExportRecord {
                kind: ExportType::Pixel,
                base: 0,
                values: vec![
                    Some([one, 0, one, 0]),
                    None,
                    Some([f(2.0), 0, one, 0]),
                    Some([f(-3.0), 0, one, 0]),
                ],
            },
            ExportRecord {
                kind: ExportType::Pixel,
                base: 1,
                values: vec![
                    Some([f(5.0), 0, one, 0]),
                    None,
                    Some([f(5.0), 0, one, 0]),
                    Some([f(5.0), 0, one, 0]),
                ],
            },
        ]
    );
}

#[test]
fn else_and_loop_end_do_not_bring_killed_lanes_back() {
    // Kill the lanes where R0.x < 0.
    let kill = || {
        alu(
            CfOp::Alu,
            vec![group(vec![inst(
                AluOpcode::Killgt,
                Dst::none(0),
                &[Src::sel(sel::ZERO, 0), r(0, 0)],
            )])],
        )
    };
    let set = |chan: u8| {
        alu(
            CfOp::Alu,
            vec![group(vec![mov(d(1, chan), Src::sel(sel::ONE, 0))])],
        )
    };
    // if (R0.y > 0) kill; else R1.x = 1
    let in_if = program(
        Chip::Evergreen,
        vec![
            alu(
                CfOp::AluPushBefore,
                vec![group(vec![pred_set(
                    AluOpcode::PredSetgt,
                    r(0, 1),
                    Src::sel(sel::ZERO, 0),
                )])],
            ),
            Cf::flow(CfOp::Jump, 3, 0),
            kill(),
            Cf::flow(CfOp::Else, 5, 1),
            alu(
                CfOp::AluPopAfter,
                vec![group(vec![mov(d(1, 0), Src::sel(sel::ONE, 0))])],
            ),
            Cf::flow(CfOp::Nop, 0, 0),
        ],
        1,
    );
    let inputs = [
        (0, 0, &floats(&[-1.0, 1.0, 1.0])[..]),
        (0, 1, &floats(&[1.0, 1.0, -1.0])[..]),
    ];
    let mut w = wave(3, &inputs);
    run_ok(&in_if, &mut w);
    assert_eq!(w.killed, [true, false, false]);
    assert_eq!(column(&w, 1, 0), floats(&[0.0, 0.0, 1.0]));
    // loop { kill; break } R1.y = 1
    let in_loop = program(
        Chip::Evergreen,
        vec![
            Cf::flow(CfOp::LoopStartDx10, 4, 0),
            kill(),
            Cf::flow(CfOp::LoopBreak, 3, 0),
            Cf::flow(CfOp::LoopEnd, 1, 0),
            set(1),
        ],
        1,
    );
    let mut w = wave(3, &inputs);
    run_ok(&in_loop, &mut w);
    assert_eq!(w.killed, [true, false, false]);
    assert_eq!(column(&w, 1, 1), floats(&[0.0, 1.0, 1.0]));
}

#[test]
fn interp_weighs_the_parameters_by_i_and_j() {
    let param = |n: u16| Src::sel(sel::PARAM + n, 0);
    let pairs = |op: AluOpcode, writes: [bool; 4]| {
        group(
            (0..4u8)
                .map(|c| {
                    let dst = if writes[c as usize] {
                        d(1, c)
                    } else {
                        Dst::none(c)
                    };
                    // Even slots read j (R0.y), odd ones i (R0.x).
                    inst(op, dst, &[r(0, 1 - c % 2), param(0)])
                })
                .collect(),
        )
    };
    let p = program(
        Chip::Evergreen,
        vec![alu(
            CfOp::Alu,
            vec![
                pairs(AluOpcode::InterpZw, [false, false, true, true]),
                pairs(AluOpcode::InterpXy, [true, true, false, false]),
                group(vec![inst(
                    AluOpcode::InterpLoadP0,
                    d(2, 0),
                    &[Src::sel(sel::PARAM + 1, 2)],
                )]),
            ],
        )],
        0,
    );
    let env = Env {
        params: vec![
            [
                [1.0, 2.0, 4.0],
                [0.5, 1.0, -1.0],
                [10.0, 4.0, 8.0],
                [-1.0, 2.0, 2.0],
            ],
            [[0.0; 3], [0.0; 3], [7.0, 1.0, 1.0], [0.0; 3]],
        ],
        ..Env::default()
    };
    let mut w = wave(
        2,
        &[
            (0, 0, &floats(&[0.25, 0.5])),
            (0, 1, &floats(&[0.5, 0.125])),
        ],
    );
    run_env(&p, &mut w, &env);
    assert_eq!(w.gprs[0][1], floats(&[3.5, 0.25, 15.0, 0.5])[..]);
    assert_eq!(w.gprs[1][1], floats(&[2.5, 0.875, 13.0, 0.25])[..]);
    assert_eq!(column(&w, 2, 0), floats(&[7.0, 7.0]));
}

#[test]
fn dot4_fills_the_vector_slots_and_replicates() {
    let dot = |op: AluOpcode, n: u8| {
        group(
            (0..n)
                .map(|c| {
                    let dst = if c == 0 { d(2, 0) } else { Dst::none(c) };
                    inst(op, dst, &[r(0, c), r(1, c)])
                })
                .collect(),
        )
    };
    let p = program(
        Chip::Evergreen,
        vec![alu(
            CfOp::Alu,
            vec![
                dot(AluOpcode::Dot4, 4),
                group(vec![
                    mov(d(2, 1), Src::sel(sel::PV, 0)),
                    mov(d(2, 2), Src::sel(sel::PV, 3)),
                ]),
                dot(AluOpcode::Dot4Ieee, 4),
            ],
        )],
        0,
    );
    let mut w = Wavefront::new(1);
    w.gprs[0][0] = floats(&[1.0, 2.0, 0.0, 4.0]).try_into().unwrap();
    w.gprs[0][1] = floats(&[5.0, 6.0, f32::INFINITY, 8.0]).try_into().unwrap();
    run_ok(&p, &mut w);
    assert!(f32::from_bits(w.gprs[0][2][0]).is_nan(), "DOT4_IEEE: 0·inf");
    assert_eq!(w.gprs[0][2][1..3], floats(&[49.0, 49.0]));
    let short = program(
        Chip::Evergreen,
        vec![alu(CfOp::Alu, vec![dot(AluOpcode::Dot4, 3)])],
        0,
    );
    assert!(
        err(&short, &mut w)
            .to_string()
            .contains("four vector slots")
    );
}

#[test]
fn vertex_fetches_read_elements_at_the_buffer_stride() {
    let bytes: Vec<u8> = (0..12u32).flat_map(|k| (100 + k).to_le_bytes()).collect();
    let env = Env {
        buffers: BTreeMap::from([(1, Buffer { bytes, stride: 16 })]),
        ..Env::default()
    };
    let vfetch = |dst: u8, format: u8, offset: u16, dst_sel: [u8; 4]| Fetch {
        resource: 1,
        vtx: VtxFormat {
            data_format: format,
            offset,
            ..VtxFormat::default()
        },
        ..fetch(FetchOp::Vfetch, 0, [1, 7, 7, 7], dst, dst_sel)
    };
    let fetches = vec![
        vfetch(1, 34, 0, [0, 1, 2, 3]),
        vfetch(2, 13, 4, [0, 4, 5, 7]),
    ];
    for (chip, op) in [
        (Chip::R600, CfOp::Vtx),
        (Chip::Evergreen, CfOp::Tex),
        (Chip::Cayman, CfOp::Tex),
    ] {
        let p = program(chip, vec![Cf::new(op, CfBody::Fetch(fetches.clone()))], 0);
        let mut w = wave(3, &[(0, 1, &[0, 2, 3]), (2, 3, &[77, 77, 77])]);
        run_env(&p, &mut w, &env);
        assert_eq!(w.gprs[0][1], [100, 101, 102, 103], "{chip:?}");
        assert_eq!(w.gprs[1][1], [108, 109, 110, 111]);
        assert_eq!(w.gprs[2][1], [0; 4], "past the end");
        assert_eq!(w.gprs[0][2], [101, 0, f(1.0), 77]);
        assert_eq!(w.gprs[1][2], [109, 0, f(1.0), 77]);
    }
    let p = program(
        Chip::R700,
        vec![Cf::new(CfOp::Tex, CfBody::Fetch(fetches))],
        0,
    );
    let mut w = Wavefront::new(1);
    assert!(err(&p, &mut w).to_string().contains("before Evergreen"));
    // The same bytes as a buffer of dwords: index 3 is byte 12.
    let dwords = Env {
        buffers: BTreeMap::from([(
            1,
            Buffer {
                bytes: env.buffers[&1].bytes.clone(),
                stride: 4,
            },
        )]),
        ..Env::default()
    };
    let fetches = vec![vfetch(1, 29, 4, [0, 1, 7, 7])];
    let p = program(
        Chip::Evergreen,
        vec![Cf::new(CfOp::Tex, CfBody::Fetch(fetches))],
        0,
    );
    let mut w = wave(1, &[(0, 1, &[3])]);
    run_env(&p, &mut w, &dwords);
    assert_eq!(w.gprs[0][1], [104, 105, 0, 0]);
}

#[test]
fn gradients_are_coarse_or_fine_differences_over_the_quad() {
    let p = program(
        Chip::Evergreen,
        vec![Cf::new(
            CfOp::Tex,
            CfBody::Fetch(vec![
                fetch(FetchOp::GetGradientsHFine, 0, [0, 0, 0, 0], 1, [0, 7, 7, 7]),
                fetch(FetchOp::GetGradientsVFine, 0, [0, 0, 0, 0], 1, [7, 0, 7, 7]),
                fetch(FetchOp::GetGradientsH, 0, [0, 0, 0, 0], 2, [0, 7, 7, 7]),
                fetch(FetchOp::GetGradientsV, 0, [0, 0, 0, 0], 2, [7, 0, 7, 7]),
            ]),
        )],
        0,
    );
    let mut w = wave(4, &[(0, 0, &floats(&[1.0, 2.0, 10.0, 30.0]))]);
    run_ok(&p, &mut w);
    assert_eq!(column(&w, 1, 0), floats(&[1.0, 1.0, 20.0, 20.0]));
    assert_eq!(column(&w, 1, 1), floats(&[9.0, 28.0, 9.0, 28.0]));
    assert_eq!(column(&w, 2, 0), floats(&[1.0; 4]));
    assert_eq!(column(&w, 2, 1), floats(&[9.0; 4]));
}

const RED: [f32; 4] = [1.0, 0.0, 0.0, 1.0];
const T00: [f32; 4] = [1.0, 0.0, 0.0, 1.0];
const T10: [f32; 4] = [0.0, 1.0, 0.0, 1.0];
const T01: [f32; 4] = [0.0, 0.0, 1.0, 1.0];
const T11: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

/// A 4×4 red texture whose 2×2 level 1 has four colours, as resource 0 (binding 5) with
/// sampler 0 (binding 2, nearest filtering and mipmapping).
fn texture_env() -> Env {
    let mut resources = Resources::default();
    resources.textures.insert(
        5,
        Texture {
            layers: 1,
            levels: vec![
                MipLevel::from_f32(4, 4, 1, &[RED; 16]),
                MipLevel::from_f32(2, 2, 1, &[T00, T10, T01, T11]),
            ],
        },
    );
    resources.samplers.insert(2, SamplerState::default());
    let mut env = Env::default();
    env.textures.views.insert(
        0,
        texture::TexView {
            binding: 5,
            dim: Dim::D2,
            is_array: false,
            dest_type: BaseType::Float,
        },
    );
    env.textures.sampler_bindings.insert(0, 2);
    env.textures.resources = Arc::new(resources);
    env
}

#[test]
fn sample_takes_its_lod_from_the_quad() {
    let texel_units = Fetch {
        coord_normalized: [false, false, true, true],
        ..fetch(FetchOp::Sample, 2, [0, 1, 7, 7], 3, [3, 0, 4, 5])
    };
    let p = program(
        Chip::Evergreen,
        vec![Cf::new(
            CfOp::Tex,
            CfBody::Fetch(vec![
                fetch(FetchOp::Sample, 0, [0, 1, 7, 7], 1, [0, 1, 2, 3]),
                texel_units,
                fetch(FetchOp::SampleL, 0, [0, 1, 7, 2], 4, [0, 1, 2, 3]),
                fetch(FetchOp::SampleLz, 0, [0, 1, 7, 7], 5, [0, 1, 2, 3]),
            ]),
        )],
        0,
    );
    // Coordinates half a texture apart: two texels of level 0, so level 1.
    let (u, v) = ([0.25, 0.75, 0.25, 0.75], [0.25, 0.25, 0.75, 0.75]);
    let mut w = wave(
        4,
        &[
            (0, 0, &floats(&u)),
            (0, 1, &floats(&v)),
            (0, 2, &floats(&[0.0, 1.0, 0.0, 1.0])),
            (2, 0, &floats(&u.map(|x| 4.0 * x))),
            (2, 1, &floats(&v.map(|x| 4.0 * x))),
        ],
    );
    run_env(&p, &mut w, &texture_env());
    let level1 = [T00, T10, T01, T11];
    for (lane, (gprs, t)) in w.gprs.iter().zip(level1).enumerate() {
        assert_eq!(gprs[1], t.map(f), "lane {lane}");
        assert_eq!(gprs[3], [t[3], t[0], 0.0, 1.0].map(f), "lane {lane}");
        let lod = if lane % 2 == 0 { RED } else { t };
        assert_eq!(gprs[4], lod.map(f), "SAMPLE_L, lane {lane}");
        assert_eq!(gprs[5], RED.map(f), "SAMPLE_LZ, lane {lane}");
    }
    // A lane alone in its quad has no derivatives: level 0.
    let mut w = wave(1, &[(0, 0, &floats(&[0.75])), (0, 1, &floats(&[0.25]))]);
    run_env(&p, &mut w, &texture_env());
    assert_eq!(w.gprs[0][1], RED.map(f));
}

#[test]
fn ld_and_resinfo_take_integers() {
    let p = program(
        Chip::Cayman,
        vec![Cf::new(
            CfOp::Tex,
            CfBody::Fetch(vec![
                fetch(FetchOp::Ld, 0, [0, 1, 7, 3], 1, [0, 1, 2, 3]),
                fetch(FetchOp::GetTextureResinfo, 2, [0, 7, 7, 7], 3, [0, 1, 2, 3]),
            ]),
        )],
        0,
    );
    let mut w = wave(
        2,
        &[
            (0, 0, &[1, 3]),
            (0, 1, &[0, 2]),
            (0, 3, &[1, 0]),
            (2, 0, &[0, 1]),
        ],
    );
    run_env(&p, &mut w, &texture_env());
    assert_eq!(w.gprs[0][1], T10.map(f));
    assert_eq!(w.gprs[1][1], RED.map(f));
    assert_eq!(w.gprs[0][3], [4, 4, 0, 2]);
    assert_eq!(w.gprs[1][3], [2, 2, 0, 2]);
    // A texture fetch out of range is the sampler's error.
    w.gprs[0][0][0] = 9;
    let e = run(&p, &mut w, &texture_env()).expect_err("out of range");
    assert!(matches!(e, EmuError::Texture { .. }), "{e}");
}

/// MEM_SCRATCH of R`gpr`'s x channel to element `base` (+ R`index`.x), acknowledged.
fn scratch_write(base: u16, gpr: u8, index: Option<u8>, array_size: u16) -> Cf {
    Cf::new(
        CfOp::MemScratch,
        CfBody::Export(Export {
            elem_size: 3,
            index_gpr: index,
            ack: true,
            array_size,
            ..Export::new(ExportType::Scratch, base, gpr, [0, 7, 7, 7])
        }),
    )
}

/// A VTX clause reading element `base` (+ R`index`.x) into R`dst`.x.
fn scratch_read(base: u16, index: Option<u8>, array_size: u16, dst: u8) -> Cf {
    let mut read = fetch(
        FetchOp::ReadScratch,
        index.unwrap_or(0),
        [0, 7, 7, 7],
        dst,
        [0, 7, 7, 7],
    );
    read.coord_normalized = [false; 4];
    read.vtx = VtxFormat {
        data_format: 34,
        mem: MemRead {
            array_base: base,
            array_size,
            elem_size: 3,
            indexed: index.is_some(),
        },
        ..VtxFormat::default()
    };
    Cf::new(CfOp::Vtx, CfBody::Fetch(vec![read]))
}

#[test]
fn scratch_memory_is_per_lane_and_indexed() {
    let wait = Cf::flow(CfOp::WaitAck, 0, 0);
    let mut p = program(
        Chip::Evergreen,
        vec![
            scratch_write(2, 0, Some(1), 4),
            scratch_write(0, 2, None, 0),
            wait,
            scratch_read(2, Some(1), 4, 3),
            scratch_read(0, None, 0, 4),
            // Index 4 is past the array: the write is dropped, the read gives 0.
            scratch_write(2, 0, Some(5), 4),
            Cf::flow(CfOp::WaitAck, 0, 0),
            scratch_read(2, Some(5), 4, 6),
            scratch_read(5, None, 0, 7),
        ],
        0,
    );
    p.scratch_elements = 8;
    let mut w = wave(
        2,
        &[
            (0, 0, &[10, 20]),
            (1, 0, &[0, 3]),
            (2, 0, &[7, 8]),
            (5, 0, &[4, 4]),
            (6, 0, &[9, 9]),
        ],
    );
    run_ok(&p, &mut w);
    assert_eq!(
        column(&w, 3, 0),
        [10, 20],
        "each lane reads its own element"
    );
    assert_eq!(column(&w, 4, 0), [7, 8]);
    assert_eq!(column(&w, 6, 0), [0, 0], "a read past the array");
    assert_eq!(column(&w, 7, 0), [0, 20], "lane 1 wrote element 2 + 3");
}

#[test]
fn scratch_reads_wait_for_writes_and_stay_in_memory() {
    let mut p = program(
        Chip::Cayman,
        vec![scratch_write(0, 0, None, 0), scratch_read(0, None, 0, 1)],
        0,
    );
    p.scratch_elements = 1;
    if let CfBody::Fetch(_) = p.cf[1].body {
        p.cf[1].op = CfOp::Tex;
    }
    let e = err(&p, &mut Wavefront::new(1));
    assert!(e.to_string().contains("in flight"), "{e}");
    p.scratch_elements = 0;
    p.cf.remove(1);
    let e = err(&p, &mut Wavefront::new(1));
    assert!(e.to_string().contains("past the 0"), "{e}");
}

fn relative(src: Src) -> Src {
    Src { rel: true, ..src }
}

/// MOVA_INT of R1.x, then a group that reads R[2+AR].y and writes R[4+AR].z.
fn relative_clause() -> Vec<Group> {
    vec![
        group(vec![inst(AluOpcode::MovaInt, Dst::none(0), &[r(1, 0)])]),
        group(vec![mov(
            Dst {
                rel: true,
                ..d(4, 2)
            },
            relative(r(2, 1)),
        )]),
    ]
}

#[test]
fn relative_operands_add_the_lanes_ar() {
    for chip in [Chip::R700, Chip::Evergreen, Chip::Cayman] {
        let p = program(chip, vec![alu(CfOp::Alu, relative_clause())], 0);
        let mut w = wave(2, &[(1, 0, &[0, 2]), (2, 1, &[10, 11]), (4, 1, &[40, 41])]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 4, 2), [10, 0], "{chip:?}: lane 0 writes R4.z");
        assert_eq!(
            column(&w, 6, 2),
            [0, 41],
            "{chip:?}: lane 1 reads R4.y, writes R6.z"
        );
    }
}

#[test]
fn ar_is_loaded_in_an_earlier_group_of_the_same_clause() {
    let mut w = wave(1, &[(1, 0, &[0])]);
    // AR loaded in another clause.
    let [mova, rel] = relative_clause().try_into().unwrap();
    let p = program(
        Chip::Evergreen,
        vec![
            alu(CfOp::Alu, vec![mova.clone()]),
            alu(CfOp::Alu, vec![rel.clone()]),
        ],
        0,
    );
    let e = err(&p, &mut w);
    assert!(e.to_string().contains("loaded AR.x"), "{e}");
    // AR loaded in the same group.
    let both = group([mova.insts, rel.insts].concat());
    let p = program(Chip::Evergreen, vec![alu(CfOp::Alu, vec![both])], 0);
    let e = err(&p, &mut w);
    assert!(e.to_string().contains("in one group"), "{e}");
    // An address past the GPRs.
    let mut w = wave(1, &[(1, 0, &[200])]);
    let p = program(Chip::Evergreen, vec![alu(CfOp::Alu, relative_clause())], 0);
    let e = err(&p, &mut w);
    assert!(e.to_string().contains("outside the GPRs"), "{e}");
}

#[test]
fn on_r600_a_nop_group_follows_a_relative_write() {
    let mut groups = relative_clause();
    groups.push(group(vec![mov(d(7, 0), r(1, 0))]));
    let p = program(Chip::R600, vec![alu(CfOp::Alu, groups.clone())], 0);
    let e = err(&p, &mut wave(1, &[]));
    assert!(e.to_string().contains("must be a NOP"), "{e}");
    groups.insert(2, group(vec![inst(AluOpcode::AluNop, Dst::none(0), &[])]));
    let p = program(Chip::R600, vec![alu(CfOp::Alu, groups)], 0);
    run_ok(&p, &mut wave(1, &[]));
}

/// A reused wavefront is zero again in every GPR a run wrote, in every lane, and keeps the
/// registers nobody wrote as they were.
#[test]
fn a_reused_wavefront_forgets_what_runs_wrote() {
    let p = program(
        Chip::Evergreen,
        vec![alu(CfOp::Alu, vec![group(vec![mov(d(5, 2), r(0, 0))])])],
        0,
    );
    let mut w = wave(2, &[(0, 0, &floats(&[1.0, 2.0]))]);
    run_ok(&p, &mut w);
    assert_eq!(column(&w, 5, 2), floats(&[1.0, 2.0]));
    w.killed[1] = true;
    w.reuse(3);
    assert_eq!((w.lanes, w.killed.clone()), (3, vec![false; 3]));
    assert_eq!(column(&w, 5, 2), [0; 3]);
    // R0 was set from outside, as a dispatch sets its inputs in every wavefront.
    assert_eq!(column(&w, 0, 0), [f(1.0), f(2.0), 0]);
}

/// LDS operations: writes, an atomic and a read, their returns popped in order from output
/// queue A (one entry a group), lane by lane; an address past the memory reads 0.
#[test]
fn lds_operations_queue_their_returns_in_order() {
    let chip = Chip::Evergreen;
    let pop = Src::sel(sel::LDS_OQ_A_POP, 0);
    let lds = |op, srcs: &[Src]| inst(op, Dst::none(0), srcs);
    let p = program(
        chip,
        vec![alu(
            CfOp::Alu,
            vec![
                // R0.x: the byte address of the lane's dword; R0.y: a value.
                group(vec![lds(AluOpcode::LdsWrite, &[r(0, 0), r(0, 1)])]),
                group(vec![lds(AluOpcode::LdsAddRet, &[r(0, 0), r(0, 1)])]),
                group(vec![lds(AluOpcode::LdsReadRet, &[r(0, 0)])]),
                group(vec![mov(d(1, 0), pop)]),
                group(vec![mov(d(1, 1), pop)]),
            ],
        )],
        0,
    );
    let mut w = wave(3, &[(0, 0, &[0, 4, 4096]), (0, 1, &[5, 7, 9])]);
    w.lds = vec![0; 2];
    run_ok(&p, &mut w);
    // The add returns the old dword, the read the sum; lane 2's address is past the memory.
    assert_eq!(column(&w, 1, 0), [5, 7, 0]);
    assert_eq!(column(&w, 1, 1), [10, 14, 0]);
    assert_eq!(w.lds, [10, 14]);
}

/// GDS operations run in lane order on the shared memory and return the dword before them;
/// a clause in valid pixel mode skips helper pixels, and an address past the memory reads 0.
#[test]
fn gds_operations_are_atomic_in_lane_order() {
    let gds = |op, sels: [u8; 3], dst_sel: [u8; 4]| Fetch::gds(op, 0, sels, 1, dst_sel);
    let clause = |fetches: Vec<Fetch>, valid_pixels: bool| {
        let mut cf = Cf::new(CfOp::Gds, CfBody::Fetch(fetches));
        cf.valid_pixel_mode = valid_pixels;
        cf
    };
    // R0.x: the byte address, R0.y and R0.z the operands.
    let p = program(
        Chip::Cayman,
        vec![
            clause(
                vec![gds(FetchOp::GdsAddRet, [0, 1, 4], [0, 7, 7, 7])],
                false,
            ),
            // Compare with z, store y.
            clause(
                vec![gds(FetchOp::GdsCmpXchgRet, [0, 2, 1], [7, 0, 7, 7])],
                true,
            ),
            clause(
                vec![gds(FetchOp::GdsReadRet, [0, 4, 4], [7, 7, 0, 7])],
                false,
            ),
        ],
        0,
    );
    let mut w = wave(
        4,
        &[
            (0, 0, &[4, 4, 4, 64]),
            (0, 1, &[1, 2, 3, 4]),
            (0, 2, &[16, 9, 9, 9]),
        ],
    );
    w.helpers = 0b0010;
    w.gds = vec![0, 10];
    run_ok(&p, &mut w);
    assert_eq!(
        column(&w, 1, 0),
        [10, 11, 13, 0],
        "each lane's add sees the ones before"
    );
    // 16 after the adds: lane 0's comparand matches and stores 1, lane 1 is a helper, lane 2's
    // does not match.
    assert_eq!(column(&w, 1, 1), [16, 0, 1, 0]);
    assert_eq!(column(&w, 1, 2), [1, 1, 1, 0]);
    assert_eq!(w.gds, [0, 1]);
    // An unaligned address is an error.
    let mut w = wave(1, &[(0, 0, &[2])]);
    w.gds = vec![0; 2];
    assert!(err(&p, &mut w).to_string().contains("not a multiple of 4"));
}

/// The queue holds what a clause's LDS operations return: popping it empty, leaving entries at
/// the clause's end, an unaligned address and a barrier before a clause's last group are
/// errors.
#[test]
fn lds_queue_misuse_is_an_error() {
    let chip = Chip::Cayman;
    let pop = Src::sel(sel::LDS_OQ_A_POP, 0);
    let read = inst(AluOpcode::LdsReadRet, Dst::none(0), &[r(0, 0)]);
    let barrier = inst(AluOpcode::GroupBarrier, Dst::none(0), &[]);
    let cases: [(Vec<Group>, &str); 4] = [
        (vec![group(vec![mov(d(1, 0), pop)])], "is empty"),
        (vec![group(vec![read])], "left on LDS output queue A"),
        (
            vec![group(vec![barrier]), group(vec![mov(d(1, 0), r(0, 0))])],
            "GROUP_BARRIER before the last group",
        ),
        (
            vec![
                group(vec![inst(AluOpcode::LdsReadRet, Dst::none(0), &[r(0, 1)])]),
                group(vec![mov(d(1, 0), pop)]),
            ],
            "not a multiple of 4",
        ),
    ];
    for (groups, expected) in cases {
        let p = program(chip, vec![alu(CfOp::Alu, groups)], 0);
        let mut w = wave(1, &[(0, 0, &[4]), (0, 1, &[2])]);
        w.lds = vec![0; 4];
        let e = err(&p, &mut w).to_string();
        assert!(e.contains(expected), "{e}");
    }
}

/// A wavefront stops after the clause that ends with GROUP_BARRIER and goes on from there when
/// run again; `run` goes through its barriers.
#[test]
fn a_barrier_stops_the_wavefront_until_it_runs_again() {
    let chip = Chip::Evergreen;
    let barrier = inst(AluOpcode::GroupBarrier, Dst::none(0), &[]);
    let p = program(
        chip,
        vec![
            alu(CfOp::Alu, vec![group(vec![barrier])]),
            alu(
                CfOp::Alu,
                vec![Group {
                    insts: vec![mov(d(0, 0), lit(0))],
                    literals: vec![7],
                }],
            ),
        ],
        0,
    );
    let mut w = wave(2, &[]);
    let env = Env::default();
    assert_eq!(run_until_barrier(&p, &mut w, &env), Ok(Progress::AtBarrier));
    assert_eq!(column(&w, 0, 0), [0, 0]);
    assert!(matches!(
        run_until_barrier(&p, &mut w, &env),
        Ok(Progress::Finished(_))
    ));
    assert_eq!(column(&w, 0, 0), [7, 7]);
    let mut w = wave(2, &[]);
    run_ok(&p, &mut w);
    assert_eq!(column(&w, 0, 0), [7, 7]);
}
