//! The R600 backend against the reference interpreter: each fragment shader is optimized for
//! the chip, compiled, run on the emulator over a grid of pixels, and its colours compared with
//! what the interpreter computes from the unoptimized shader on the same inputs (the values the
//! hardware interpolates from the parameters the dispatcher makes, so both sides see the same
//! values), on R600, R700, Evergreen and Cayman; each
//! vertex shader likewise over a batch of vertices with random attributes.

use shrew_engine::draw::{FragmentDraw, QuadGrid, VertexDraw};
use shrew_engine::interp::{Launch, Resources, layout_variables, run};
use shrew_engine::ir::{Builtin, Mode, Shader};
use shrew_engine::passes::lower_io::interp_of;
use shrew_engine::rng::Rng;
use shrew_engine::text;
use shrew_r600::compile::compile;
use shrew_r600::dispatch::{input, run_fragment, run_vertex};
use shrew_r600::isa::Chip;
use shrew_tests::backend::{self, close, random_input, random_textures};

const WIDTH: u32 = 8;
const HEIGHT: u32 = 4;

fn optimized(shader: &Shader, chip: Chip) -> Shader {
    optimized_after("default", shader, chip)
}

fn optimized_after(mid_end: &str, shader: &Shader, chip: Chip) -> Shader {
    let name = format!("{chip:?}").to_lowercase();
    let target = shrew_targets::lookup(&name).unwrap();
    backend::optimized_after(mid_end, shader, target)
}

/// A draw with random inputs and barycentrics, one uncovered pixel and random uniforms.
fn draw(shader: &Shader, seed: u64) -> FragmentDraw {
    let mut rng = Rng::new(seed);
    let mut small = || (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0;
    let pixels = (WIDTH * HEIGHT) as usize;
    let mut draw = FragmentDraw {
        pixels: QuadGrid {
            width: WIDTH,
            height: HEIGHT,
            origin: [2, 4],
            covered: (0..pixels).map(|i| i != 5).collect(),
            ..QuadGrid::default()
        },
        ..FragmentDraw::default()
    };
    for _ in 0..pixels {
        draw.pixels.perspective.push([small(), small()]);
        draw.pixels.linear.push([small(), small()]);
        draw.pixels
            .depth_w
            .push([small().abs(), 1.0 + small().abs()]);
    }
    for var in &shader.variables {
        if var.mode == Mode::ShaderIn && var.builtin.is_none() {
            // An array of inputs takes a slot per element.
            let first = var.location.unwrap_or(0);
            for slot in first..first + var.ty.innermost_element().1 {
                draw.inputs.insert(slot, random_input(&mut small));
            }
        }
    }
    let mut resources = Resources {
        uniform_data: vec![0; 4096],
        ..Resources::default()
    };
    for chunk in resources.uniform_data.chunks_mut(4) {
        chunk.copy_from_slice(&small().to_bits().to_le_bytes());
    }
    resources
        .ubos
        .insert(0, resources.uniform_data.iter().rev().copied().collect());
    (resources.textures, resources.samplers) = random_textures(shader, &mut || small().abs());
    draw.resources = resources;
    draw
}

/// The interpreter's launch for the same pixels and inputs.
fn launch(shader: &Shader, draw: &FragmentDraw) -> Launch {
    let pixels = (WIDTH * HEIGHT) as usize;
    let mut launch = Launch::invocations(pixels);
    launch.width = WIDTH;
    launch.origin = draw.pixels.origin;
    launch.covered = draw.pixels.covered.clone();
    launch.frag_coord_zw = draw.pixels.depth_w.clone();
    for var in &shader.variables {
        if var.mode != Mode::ShaderIn || var.builtin.is_some() {
            continue;
        }
        let first = var.location.unwrap_or(0);
        let (elem, count) = var.ty.innermost_element();
        let comps = elem.val_type().map_or(4, |t| t.comps as usize);
        let interp = interp_of(shader, first);
        let values = (0..pixels)
            .map(|i| {
                (first..first + count)
                    .flat_map(|slot| {
                        (0..comps).map(move |c| input(draw, slot, c, i, interp).to_bits() as u64)
                    })
                    .collect()
            })
            .collect();
        launch.inputs.insert(var.name.clone(), values);
    }
    launch
}

/// Compiles and runs `source` on every chip and compares each covered pixel's colour with the
/// interpreter's, within 1e-4 (rounding of reassociated arithmetic).
fn check(name: &str, source: &str) {
    check_on(&Chip::ALL, name, source);
}

fn check_on(chips: &[Chip], name: &str, source: &str) {
    check_after("default", chips, name, source);
}

/// [`check_on`] with the mid-end pipeline `mid_end`.
fn check_after(mid_end: &str, chips: &[Chip], name: &str, source: &str) {
    let tolerance = 1e-4;
    let shader = text::parse(source, name).unwrap_or_else(|e| panic!("{e}"));
    let color = shader
        .variables
        .iter()
        .find(|v| v.mode == Mode::ShaderOut && v.location == Some(0))
        .map(|v| v.name.clone())
        .expect("a colour output");
    for &chip in chips {
        let optimized = optimized_after(mid_end, &shader, chip);
        let kernel = compile(&optimized, chip).unwrap_or_else(|e| panic!("{name} {chip:?}: {e}"));
        for seed in 0..3 {
            let draw = draw(&shader, seed);
            let launch = launch(&shader, &draw);
            let mut resources = draw.resources.clone();
            let expected = run(&shader, &launch, &mut resources).unwrap_or_else(|e| panic!("{e}"));
            let got = run_fragment(&kernel, &draw).unwrap_or_else(|e| {
                let listing = shrew_r600::disasm::listing(&kernel.binary).unwrap_or_default();
                panic!("{name} {chip:?}: {e}\n{listing}")
            });
            for (i, inv) in expected.invocations.iter().enumerate() {
                let written = got[i].get(&0);
                if !draw.pixels.covered[i] || inv.discarded || inv.helper {
                    assert_eq!(
                        written, None,
                        "{name} {chip:?}: pixel {i} must not be written"
                    );
                    continue;
                }
                let want = &inv.outputs[&color];
                let have = written.unwrap_or_else(|| {
                    panic!("{name} {chip:?} seed {seed}: pixel {i} not written")
                });
                for c in 0..want.len().min(4) {
                    assert!(
                        close(want[c] as u32, have[c], tolerance),
                        "{name} {chip:?} seed {seed}: pixel {i} component {c}: interpreter {} ({:#x}), emulator {} ({:#x})\n{}",
                        f32::from_bits(want[c] as u32),
                        want[c],
                        f32::from_bits(have[c]),
                        have[c],
                        shrew_r600::disasm::listing(&kernel.binary).unwrap_or_default()
                    );
                }
            }
        }
    }
}

#[test]
fn interpolation_uniforms_and_arithmetic() {
    check(
        "arith.shrew",
        include_str!("../filetests/target/r600/arith.shrew"),
    );
}

#[test]
fn algebraic_example() {
    check(
        "algebraic.shrew",
        include_str!("../../examples/algebraic.shrew"),
    );
}

#[test]
fn control_flow_with_calls_and_demote() {
    check(
        "control_flow.shrew",
        include_str!("../ir/control_flow.shrew"),
    );
}

/// A vec4 rotated in a loop of 2 or 3 iterations (not unrolled): out of SSA, the rotation's source and destination share one
/// register, so every component must be read before any is written.
#[test]
fn rotation_in_a_loop_reads_its_register_before_writing_it() {
    check(
        "rotate.shrew",
        include_str!("../filetests/target/r600/rotate.shrew"),
    );
}

/// Two components swapped on every trip of a loop, the result used after it (piglit's
/// fs-swap-problem): the loop value, its swap and the output share one register, the swap
/// reading its components before writing them, as Mesa does.
#[test]
fn swap_in_a_loop_keeps_one_register() {
    let source = r#"
shader fragment
var uniform u32 @n
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32x4 %1 = load_const (1.0, 0.0, 0.0, 1.0)
    32 %2 = load_const (0)
    32 %3 = load_const (1)
    32 %4 = deref_var @n
    32 %12 = load_deref %4
    32 %13 = load_const (5)
    32 %5 = umin %12, %13
    jump b1
b1: loop merge=b3 continue=b2
    32x4 %6 = phi b0: %1, b2: %7
    32 %8 = phi b0: %2, b2: %9
    32x4 %7 = vec4 %6.y, %6.x, %6.z, %6.w
    jump b2
    b2:
        32 %9 = iadd %8, %3
        1 %10 = ult %9, %5
        branch %10, b1, b3
b3:
    32 %11 = deref_var @color
    store_deref %11, %7 (write_mask=xyzw)
    return
}
"#;
    check("swap.shrew", source);
    let shader = text::parse(source, "swap.shrew").unwrap_or_else(|e| panic!("{e}"));
    for chip in Chip::ALL {
        let kernel = compile(&optimized(&shader, chip), chip).unwrap_or_else(|e| panic!("{e}"));
        let listing = shrew_r600::disasm::listing(&kernel.binary).unwrap_or_default();
        assert_eq!(kernel.stats.gprs, 1, "{chip:?}:\n{listing}");
    }
}

/// Uniforms at run-time offsets, fetched from their buffers: a default-block vec4 array, a
/// float array and a UBO array at per-pixel indices, a UBO element at a constant index, and
/// a constant table of vec2s (elements not aligned to vec4s).
#[test]
fn uniforms_at_run_time_offsets() {
    check(
        "fetched_uniforms.shrew",
        include_str!("../filetests/target/r600/fetched_uniforms.shrew"),
    );
}

/// Sampling: implicit LOD, bias, explicit LOD (zero: SAMPLE_LZ), derivatives, explicit
/// gradients (SAMPLE_G after SET_GRADIENTS_H/V), shadow comparison with a projector, 3D, array, 1D and rectangle textures with
/// texel offsets.
#[test]
fn texture_sampling() {
    check(
        "texture_sampling",
        include_str!("../filetests/target/r600/texture_sampling.shrew"),
    );
}

/// Texel fetches at LOD 0 and 1 from an array element of textures, sizes and mip counts.
#[test]
fn texel_fetches_and_queries() {
    check(
        "texel_fetches_and_queries",
        include_str!("../filetests/target/r600/texel_fetches_and_queries.shrew"),
    );
}

/// Fine derivatives (Evergreen and Cayman have them; R600 and R700 reject them) beside coarse
/// ones, of a value that is not linear over the quad.
#[test]
fn fine_and_coarse_derivatives() {
    let source = include_str!("../filetests/target/r600/derivatives.shrew");
    check_on(&[Chip::Evergreen, Chip::Cayman], "derivatives", source);
    let shader = text::parse(source, "derivatives").unwrap();
    for chip in [Chip::R600, Chip::R700] {
        let err = compile(&optimized(&shader, chip), chip).unwrap_err();
        assert!(
            err.to_string().contains("fine derivatives need Evergreen"),
            "{err}"
        );
    }
}

/// Integer division and remainders (lowered to a reciprocal estimate: R600 has no divider) of
/// signed values of both signs, with a zero divisor in some pixels.
#[test]
fn integer_division() {
    check(
        "integer_division",
        include_str!("../filetests/target/r600/integer_division.shrew"),
    );
}

/// Returns before the end of the shader: from a selection, and from inside loops (the flag
/// each loop tests to break on outwards), one in a loop of 3 or 4 trips that is not unrolled.
#[test]
fn early_returns() {
    check(
        "return_in_loop.shrew",
        include_str!("../filetests/target/r600/return_in_loop.shrew"),
    );
    check(
        "loop_left_by_return.shrew",
        include_str!("../ir/loop_left_by_return.shrew"),
    );
    check(
        "loops_and_returns.shrew",
        include_str!("../ir/loops_and_returns.shrew"),
    );
}

/// Compiles and runs the vertex shader `source` on every chip and compares each vertex's
/// position, point size and output slots with the interpreter's, within 1e-4.
fn check_vertex(name: &str, source: &str) {
    let shader = text::parse(source, name).unwrap_or_else(|e| panic!("{e}"));
    let layouts = shrew_engine::interp::layout_variables(&shader).unwrap();
    let mut rng = Rng::new(7);
    let mut small = || ((rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).to_bits();
    let vertices = 70;
    let mut launch = Launch::invocations(vertices);
    let mut draw = VertexDraw {
        count: vertices,
        ..VertexDraw::default()
    };
    for (var, layout) in shader.variables.iter().zip(&layouts) {
        if var.mode != Mode::ShaderIn {
            continue;
        }
        let attributes: Vec<[u32; 4]> = (0..vertices).map(|_| [0; 4].map(|_| small())).collect();
        let values = attributes
            .iter()
            .map(|a| a.iter().map(|&x| x as u64).collect())
            .collect();
        draw.attributes.insert(layout.offset / 16, attributes);
        launch.inputs.insert(var.name.clone(), values);
    }
    let mut resources = Resources {
        uniform_data: (0..256).flat_map(|_| small().to_le_bytes()).collect(),
        ..Resources::default()
    };
    resources
        .ubos
        .insert(0, resources.uniform_data.iter().rev().copied().collect());
    draw.resources = resources.clone();
    let expected = run(&shader, &launch, &mut resources.clone()).unwrap_or_else(|e| panic!("{e}"));
    for chip in Chip::ALL {
        let optimized = optimized(&shader, chip);
        let kernel = compile(&optimized, chip).unwrap_or_else(|e| panic!("{name} {chip:?}: {e}"));
        let got = run_vertex(&kernel, &draw).unwrap_or_else(|e| panic!("{name} {chip:?}: {e}"));
        let outputs = layout_variables(&optimized).unwrap();
        for (v, inv) in expected.invocations.iter().enumerate() {
            for (var, layout) in optimized.variables.iter().zip(&outputs) {
                if var.mode != Mode::ShaderOut {
                    continue;
                }
                let want = &inv.outputs[&var.name];
                let have: Vec<u32> = match var.builtin {
                    Some(Builtin::Position) => got[v].position.to_vec(),
                    Some(Builtin::PointSize) => got[v].point_size.into_iter().collect(),
                    _ => got[v].slots[&(layout.offset / 16)].to_vec(),
                };
                for (c, &w) in want.iter().enumerate() {
                    assert!(
                        close(w as u32, have[c], 1e-4),
                        "{name} {chip:?}: vertex {v} {} component {c}: interpreter {}, emulator {}\n{}",
                        var.name,
                        f32::from_bits(w as u32),
                        f32::from_bits(have[c]),
                        shrew_r600::disasm::listing(&kernel.binary).unwrap_or_default()
                    );
                }
            }
        }
    }
}

/// A vertex shader (more vertices than a wavefront holds): a transform by a uniform matrix,
/// a varying under a condition, a point size, and an attribute passed through.
#[test]
fn vertex_shader_outputs() {
    check_vertex(
        "vertex_shader_outputs",
        include_str!("../ir/vertex_outputs.shrew"),
    );
}

/// An export of attribute components (in the GPR the fetch shader loaded) beside a computed
/// one: the attribute is copied into the exported register.
#[test]
fn vertex_attribute_exported_beside_a_constant() {
    check_vertex(
        "attribute_and_constant",
        include_str!("../filetests/target/r600/attribute_and_constant.shrew"),
    );
}

/// The examples' and IR test files' fragment shaders, but alu_float.shrew (64-bit floats, and
/// a precise fused multiply-add R600 and R700 cannot round once), and constant_table.shrew
/// and indirect_arrays.shrew, which index arrays out of bounds on random inputs (as the vertex
/// shader types.shrew does).
#[test]
fn examples_and_ir_files() {
    let fragment = [
        (
            "lighting.shrew",
            include_str!("../../examples/lighting.shrew"),
        ),
        (
            "texel_fetch.shrew",
            include_str!("../../examples/texel_fetch.shrew"),
        ),
        (
            "counted_loops.shrew",
            include_str!("../ir/counted_loops.shrew"),
        ),
        (
            "loops_with_breaks.shrew",
            include_str!("../ir/loops_with_breaks.shrew"),
        ),
        (
            "nested_loop_return.shrew",
            include_str!("../ir/nested_loop_return.shrew"),
        ),
        (
            "splat_swizzle.shrew",
            include_str!("../ir/splat_swizzle.shrew"),
        ),
    ];
    for (name, source) in fragment {
        check(name, source);
    }
}

/// Ifs on integer and unsigned compares of values no phi writes, with arms if-conversion
/// leaves alone (they sample): the predicate set compares the operands itself.
#[test]
fn predicates_from_integer_compares() {
    check(
        "integer_predicates",
        include_str!("../filetests/target/r600/integer_predicates.shrew"),
    );
}

/// Arrays too long to keep in registers, in scratch memory: a loop reading what its previous
/// iteration wrote (and nothing written before it), indexed writes and reads, a partial write
/// in one arm of an `if`.
/// R600 has no READ_SCRATCH: such a shader is a compile error there.
#[test]
fn temporaries_in_scratch_memory() {
    let source = include_str!("../filetests/target/r600/scratch.shrew");
    check_on(
        &[Chip::R700, Chip::Evergreen, Chip::Cayman],
        "scratch.shrew",
        source,
    );
    let shader = text::parse(source, "scratch.shrew").unwrap_or_else(|e| panic!("{e}"));
    let error = compile(&optimized(&shader, Chip::R600), Chip::R600).expect_err("no READ_SCRATCH");
    assert!(error.to_string().contains("READ_SCRATCH"), "{error}");
}

/// A temporary array stored at run-time indices stays in GPRs, addressed relative to AR: a
/// loop storing at its counter plus an input's index, a store at a constant index in one arm
/// of an `if`, then a store and loads at run-time indices, which may be the same element. On
/// every chip (R600 included: no scratch memory is involved).
#[test]
fn temporaries_in_indexed_registers() {
    let source = include_str!("../filetests/target/r600/indexed.shrew");
    check("indexed.shrew", source);
    let shader = text::parse(source, "indexed.shrew").unwrap_or_else(|e| panic!("{e}"));
    for chip in Chip::ALL {
        let kernel = compile(&optimized(&shader, chip), chip).unwrap_or_else(|e| panic!("{e}"));
        let listing = shrew_r600::disasm::listing(&kernel.binary).unwrap_or_default();
        assert!(listing.contains("MOVA_INT"), "{chip:?}:\n{listing}");
        assert!(listing.contains("+AR.x]"), "{chip:?}:\n{listing}");
        assert!(!listing.contains("SCRATCH"), "{chip:?}:\n{listing}");
    }
}

/// Functions left uninlined run as subroutines (CALL and RET), sharing their variables through
/// scratch memory: a call in an `if`, a call in a loop of a function that returns early
/// (some lanes at once, some after a few trips) and calls another, a value of main live across
/// the calls. R700 and later (R600 has no scratch reads); the mid-end does not inline.
#[test]
fn subroutines() {
    let source = include_str!("../filetests/target/r600/calls.shrew");
    check_after(
        "none",
        &[Chip::R700, Chip::Evergreen, Chip::Cayman],
        "calls.shrew",
        source,
    );
    let shader = text::parse(source, "calls.shrew").unwrap_or_else(|e| panic!("{e}"));
    let kernel = compile(
        &optimized_after("none", &shader, Chip::Evergreen),
        Chip::Evergreen,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let calls = kernel
        .program
        .cf
        .iter()
        .filter(|cf| cf.op == shrew_r600::isa::CfOp::Call)
        .count();
    assert_eq!(calls, 3, "{:?}", kernel.program.cf);
    // The decoder reads on past the end of the main program into the subroutines.
    let decoded = shrew_r600::encoding::decode(&kernel.binary).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decoded, kernel.program);
    // Main's registers, then step's window, then twice's above both of its callers'.
    assert!(kernel.stats.gprs > 10, "{:?}", kernel.stats);
}
