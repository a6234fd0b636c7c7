//! Random differential testing, the reducer and the op matrix (`shrew_harness::fuzz`,
//! `reduce`, `op_matrix`): generated programs are valid and defined, the first ones call
//! functions calling functions, exchange values through shared memory, run atomics, fetch,
//! sample and query textures, compute on integers of 8, 16 and 64 bits and floats of 16 and
//! 64 and write SSBOs from fragment and vertex shaders, a small fixed-seed slice agrees on
//! every target, the reducer keeps a failure while shrinking, and the matrix tells native,
//! lowered and refused opcodes apart, per bit size, and which targets write SSBOs. The long
//! runs are `shrew fuzz`.

use shrew_engine::ir::{InstKind, Mode, Shader, Stage, TexOp};
use shrew_engine::ops::{AluOp, Intrinsic};
use shrew_harness::differential::{Run, optimized, run_on_target};
use shrew_harness::fuzz::{self, Campaign};
use shrew_harness::op_matrix::{self, Support};
use shrew_harness::reduce;

fn uses(shader: &Shader, op: AluOp) -> bool {
    has(
        shader,
        |kind| matches!(kind, InstKind::Alu(alu) if alu.op == op),
    )
}

#[test]
fn generated_programs_verify_and_run_through_the_default_pipeline() {
    let everything: Vec<_> = Vec::new();
    for seed in 0..24 {
        let shader = fuzz::program(seed, 40, &everything);
        shrew_engine::verify::verify(&shader)
            .unwrap_or_else(|e| panic!("program {seed} does not verify: {e:?}"));
        let mut run = Run::new("generic", None);
        run.workgroups = shrew_harness::random_shader::WORKGROUPS;
        run_on_target(&shader, &run).unwrap_or_else(|e| panic!("program {seed}: {e}"));
    }
}

/// Whether some instruction of `shader` satisfies `pred`.
fn has(shader: &Shader, pred: impl Fn(&InstKind) -> bool) -> bool {
    shader
        .functions
        .iter()
        .any(|f| f.insts.iter().flatten().any(|inst| pred(&inst.kind)))
}

fn intrinsic(shader: &Shader, op: Intrinsic) -> bool {
    has(
        shader,
        |kind| matches!(kind, InstKind::Intrinsic(ii) if ii.op == op),
    )
}

/// Whether `shader` applies `op` to operands of `bits` bits (the op matrix's entry).
fn uses_at(shader: &Shader, op: AluOp, bits: u8) -> bool {
    shader.functions.iter().any(|f| {
        f.insts
            .iter()
            .flatten()
            .any(|inst| match (&inst.kind, inst.def) {
                (InstKind::Alu(alu), Some(def)) => op_matrix::entry_of(f, alu, def) == (op, bits),
                _ => false,
            })
    })
}

fn texture_op(shader: &Shader, op: TexOp) -> bool {
    has(
        shader,
        |kind| matches!(kind, InstKind::Tex(tex) if tex.op == op),
    )
}

#[test]
fn the_first_programs_use_calls_shared_memory_atomics_textures_every_size_and_ssbo_writes() {
    let programs: Vec<Shader> = (0..32).map(|seed| fuzz::program(seed, 40, &[])).collect();
    let some = |pred: &dyn Fn(&Shader) -> bool| programs.iter().any(pred);
    assert!(some(&|s| s.functions.len() > 1
        && s.functions[1..].iter().any(|f| f
            .insts
            .iter()
            .flatten()
            .any(|i| matches!(i.kind, InstKind::Call { .. })))));
    assert!(some(&|s| intrinsic(s, Intrinsic::Barrier)
        && s.variables.iter().any(
            |v| v.name.starts_with("shared") && v.mode == Mode::Shared
        )));
    assert!(some(&|s| intrinsic(s, Intrinsic::DerefAtomic)));
    assert!(some(&|s| intrinsic(s, Intrinsic::DerefAtomicSwap)));
    for op in [TexOp::Txf, TexOp::Txl, TexOp::Txs] {
        assert!(some(&|s| texture_op(s, op)), "no program has {op:?}");
    }
    for stage in [Stage::Fragment, Stage::Vertex, Stage::Compute] {
        assert!(
            some(&|s| s.stage == stage && texture_op(s, TexOp::Txf)),
            "no {} shader fetches texels",
            stage.name()
        );
    }
    for bits in [8, 16, 64] {
        assert!(
            some(&|s| uses_at(s, AluOp::I2i32, bits) || uses_at(s, AluOp::U2u32, bits)),
            "no program computes on {bits}-bit integers"
        );
    }
    for bits in [16, 64] {
        assert!(
            some(&|s| uses_at(s, AluOp::F2f32, bits)),
            "no program computes on {bits}-bit floats"
        );
    }
    for stage in [Stage::Fragment, Stage::Vertex] {
        assert!(
            some(&|s| s.stage == stage
                && fuzz::writes_ssbos(s)
                && intrinsic(s, Intrinsic::DerefAtomic)),
            "no {} shader runs atomics on SSBOs",
            stage.name()
        );
    }
    // Stores and atomics, compare-and-swap included, on the pixel's own dwords.
    assert!(some(&|s| s.stage == Stage::Fragment
        && fuzz::writes_ssbos(s)
        && intrinsic(s, Intrinsic::DerefAtomicSwap)));
    assert!(some(&|s| uses_at(s, AluOp::Iadd, 64)));
    assert!(some(&|s| uses_at(s, AluOp::Fsub, 16)));
    assert!(some(&|s| uses_at(s, AluOp::Fadd, 64)));
}

#[test]
fn a_fixed_seed_slice_agrees_on_every_target_and_pipeline() {
    let mut campaign = Campaign::new(7, 4);
    campaign.random_pipelines = 1;
    let summary = fuzz::run_campaign(&campaign, |_, _| {});
    assert_eq!(summary.programs, 4);
    assert!(summary.comparisons >= 4 * 10, "{summary:?}");
    let found: Vec<String> = summary
        .findings
        .iter()
        .map(|f| format!("program {}: {}", f.seed, f.message))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_reducer_keeps_the_failure_and_shrinks_the_shader() {
    // Fragment shaders (even seeds) observe their inexact floats through the colour; the
    // sine must be live, as the reducer removes dead code from every candidate.
    let generic = shrew_targets::generic();
    let live_sine =
        |s: &Shader| optimized(s, "dead-cf,dce", generic).is_ok_and(|s| uses(&s, AluOp::Fsin));
    let shader = (0..)
        .map(|seed| fuzz::program(2 * seed, 40, &[]))
        .find(|s| reduce::size(s) > 200 && live_sine(s))
        .expect("some program computes a sine");
    let fails = |s: &Shader| uses(s, AluOp::Fsin);
    let reduced = reduce::reduce(&shader, &fails, 3000);
    assert!(uses(&reduced, AluOp::Fsin));
    shrew_engine::verify::verify(&reduced).expect("the reduced shader verifies");
    assert!(
        reduce::size(&reduced) * 10 < reduce::size(&shader),
        "{} instructions left of {}",
        reduce::size(&reduced),
        reduce::size(&shader)
    );
}

/// Every opcode at every bit size, on every target with a backend, compiles and runs as the
/// interpreter does or is refused with its reason: never wrong, never an internal error (a
/// pass leaving invalid IR, as `lower-doubles` once did on booleans converted to doubles).
#[test]
fn no_opcode_is_wrong_or_an_internal_error_on_any_target() {
    for target in shrew_targets::all().iter().filter(|t| t.has_backend()) {
        for (op, bits) in op_matrix::entries() {
            let support = op_matrix::support(target, op, bits);
            let internal = support
                .reason()
                .is_some_and(|r| r.contains("internal error"));
            assert!(
                !matches!(support, Support::Wrong(_)) && !internal,
                "{op:?}@{bits} on {}: {support:?}",
                target.name
            );
        }
    }
}

#[test]
fn the_op_matrix_tells_native_lowered_and_refused_opcodes_apart() {
    let gen9 = shrew_targets::lookup("gen9").unwrap();
    let r600 = shrew_targets::lookup("r600").unwrap();
    let evergreen = shrew_targets::lookup("evergreen").unwrap();
    assert_eq!(op_matrix::support(gen9, AluOp::Iadd, 32), Support::Native);
    // Gen has no atan: lower-inverse-trig turns it into a polynomial, within its accuracy.
    assert_eq!(op_matrix::support(gen9, AluOp::Fatan, 32), Support::Lowered);
    // A boolean is all ones on Gen: its bit count must still be 1.
    assert_eq!(
        op_matrix::support(gen9, AluOp::BitCount, 1),
        Support::Native
    );
    // ...and as an unsigned value its highest set bit is bit 0 (LZD alone would say 31).
    for bits in [1, 32] {
        for op in [AluOp::UfindMsb, AluOp::IfindMsb] {
            assert_eq!(
                op_matrix::support(gen9, op, bits),
                Support::Native,
                "{op:?}@{bits}"
            );
        }
    }
    assert!(matches!(
        op_matrix::support(r600, AluOp::FddxFine, 32),
        Support::Refused(why) if why.contains("Evergreen")
    ));
    assert_eq!(
        op_matrix::support(evergreen, AluOp::FddxFine, 32),
        Support::Native
    );
    // Programs skip targets per opcode and bit size: Gen8+ has 64-bit integers, Gen7 and R600
    // build them from dwords; doubles need Evergreen or Cayman on R600.
    let gen9_ops = op_matrix::compiled_ops(gen9);
    assert!(gen9_ops.contains(&(AluOp::Iadd, 32)) && gen9_ops.contains(&(AluOp::Iand, 1)));
    assert!(gen9_ops.contains(&(AluOp::Iadd, 64)));
    let gen7 = shrew_targets::lookup("gen7").unwrap();
    assert_eq!(op_matrix::support(gen7, AluOp::Iadd, 64), Support::Lowered);
    assert_eq!(op_matrix::support(gen7, AluOp::Fadd, 64), Support::Native);
    assert_eq!(op_matrix::support(r600, AluOp::Iadd, 64), Support::Lowered);
    assert!(op_matrix::compiled_ops(r600).contains(&(AluOp::Iadd, 64)));
    assert_eq!(
        op_matrix::support(evergreen, AluOp::Fadd, 64),
        Support::Native
    );
    assert!(matches!(
        op_matrix::support(r600, AluOp::Fadd, 64),
        Support::Refused(why) if why.contains("Evergreen")
    ));
    // R600 stores to no SSBO (Evergreen and Cayman do from pixel and compute shaders); Gen
    // does from fragment and vertex shaders.
    assert!(!op_matrix::writes_ssbos(r600, Stage::Fragment));
    assert!(op_matrix::writes_ssbos(gen9, Stage::Fragment));
    assert!(op_matrix::writes_ssbos(gen9, Stage::Vertex));
    // Evergreen writes SSBOs from compute shaders and has shared memory (the LDS); R600
    // runs no compute shader.
    assert!(op_matrix::writes_ssbos(evergreen, Stage::Compute));
    assert!(op_matrix::has_shared_memory(evergreen));
    assert!(!op_matrix::has_shared_memory(r600));
    assert!(op_matrix::has_shared_memory(gen9));
}
