//! The shipped examples and IR test files on every emulator, against the reference interpreter
//! ([`shrew_harness::differential`]): fragment shaders on every Gen generation at SIMD8, 16 and
//! 32 and on every R600 chip, vertex shaders on Gen8 and later (the emulator reads Gen8's URB
//! layout) and on every R600 chip, compute shaders on every Gen generation (R600 compiles
//! none). The target filetests (`tests/filetests/target`) hold the backends' own shaders, with
//! `// run:` lines.
//!
//! Left out: alu_float.shrew (64-bit floats, and a precise fused multiply-add R600 and R700
//! cannot round once), constant_table.shrew, indirect_arrays.shrew and types.shrew, which index
//! arrays out of bounds on random inputs (GL leaves such reads undefined), and the files
//! without a colour output or an SSBO (nothing to compare).

use shrew_engine::text;
use shrew_harness::differential::{Run, run_on_target};
use std::path::Path;

const GEN: [&str; 4] = ["gen7", "gen75", "gen8", "gen9"];
const R600: [&str; 4] = ["r600", "r700", "evergreen", "cayman"];

/// Runs the shader in `file` (relative to the workspace) on every target of `targets`, at
/// every width a Gen target takes, `workgroups` of it if it is a compute shader.
fn check(file: &str, targets: &[&str], workgroups: [u32; 3]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let shader = text::parse(&source, file).unwrap_or_else(|e| panic!("{e}"));
    let gen_widths: &[u8] = match shader.stage {
        shrew_engine::ir::Stage::Vertex => &[8],
        _ => &[8, 16, 32],
    };
    for &target in targets {
        let widths: Vec<Option<u8>> = if target.starts_with("gen") {
            gen_widths.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for width in widths {
            let run = Run {
                workgroups,
                ..Run::new(target, width)
            };
            if let Err(e) = run_on_target(&shader, &run) {
                panic!("{file}: {e}");
            }
        }
    }
}

fn everywhere(file: &str) {
    check(file, &[GEN, R600].concat(), [1, 1, 1]);
}

#[test]
fn lighting_example() {
    everywhere("examples/lighting.shrew");
}

#[test]
fn texel_fetch_example() {
    everywhere("examples/texel_fetch.shrew");
}

#[test]
fn algebraic_example() {
    everywhere("examples/algebraic.shrew");
}

/// The compute example: shared memory written, a barrier, and a neighbour's value read back.
#[test]
fn shared_rotate_example() {
    check("examples/shared_rotate.shrew", &GEN, [1, 1, 1]);
}

#[test]
fn control_flow_with_calls_and_demote() {
    everywhere("tests/ir/control_flow.shrew");
}

/// Found by running piglit on the emulators: a swizzle rotating a loop's vector in place,
/// nested loops starting at one instruction, and a return from inside a selection.
#[test]
fn rotation_nested_loops_and_early_return() {
    everywhere("tests/ir/loops_and_returns.shrew");
}

/// A return from inside a loop (the flag each loop tests to break on outwards).
#[test]
fn loop_left_by_return() {
    everywhere("tests/ir/loop_left_by_return.shrew");
}

#[test]
fn counted_loops() {
    everywhere("tests/ir/counted_loops.shrew");
}

#[test]
fn loops_with_breaks() {
    everywhere("tests/ir/loops_with_breaks.shrew");
}

#[test]
fn nested_loop_return() {
    everywhere("tests/ir/nested_loop_return.shrew");
}

#[test]
fn splat_swizzle() {
    everywhere("tests/ir/splat_swizzle.shrew");
}

/// A transform by a uniform matrix, varyings computed in a loop and under a condition, a point
/// size, and an attribute passed through; 70 vertices, more than a wavefront or a few SIMD8
/// threads hold.
#[test]
fn vertex_shader_outputs() {
    check(
        "tests/ir/vertex_outputs.shrew",
        &["gen8", "gen9", "r600", "r700", "evergreen", "cayman"],
        [1, 1, 1],
    );
}
