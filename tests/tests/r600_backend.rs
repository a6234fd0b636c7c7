//! The R600 backend against the reference interpreter: each fragment shader is optimized for
//! the chip, compiled, run on the emulator over a grid of pixels, and its colours compared with
//! what the interpreter computes from the unoptimized shader on the same inputs (planes over
//! barycentrics, so both sides see the same values), on R600, R700, Evergreen and Cayman; each
//! vertex shader likewise over a batch of vertices with random attributes.

use shrew_engine::interp::{Launch, Resources, layout_variables, run};
use shrew_engine::ir::{Builtin, Mode, Shader};
use shrew_engine::passes::lower_io::interp_of;
use shrew_engine::raster::QuadGrid;
use shrew_engine::rng::Rng;
use shrew_engine::text;
use shrew_r600::compile::compile;
use shrew_r600::dispatch::{FragmentDraw, VertexDraw, run_fragment, run_vertex};
use shrew_r600::isa::Chip;
use shrew_tests::backend::{self, close, random_textures};
use std::sync::Arc;

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
                let planes = [0; 4].map(|_| [4.0 * small(), small(), small()]);
                draw.inputs.insert(slot, planes);
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
    draw.resources = Arc::new(resources);
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
                        (0..comps).map(move |c| draw.input(slot, c, i, interp).to_bits() as u64)
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
            let mut resources = (*draw.resources).clone();
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
        r#"
shader fragment
var shader_in f32x4 @a (location=0)
var shader_in f32x2 @b (location=1)
var uniform f32x4 @u
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @a
    32x4 %1 = load_deref %0
    32 %2 = deref_var @b
    32x2 %3 = load_deref %2
    32 %4 = deref_var @u
    32x4 %5 = load_deref %4
    32x4 %6 = fmul %1, %5
    32 %7 = fdot2 %3, %3
    32 %8 = frsq %7
    32x4 %9 = fadd %6, %8.xxxx
    32 %10 = fsin %3.x
    32 %11 = fmax %9.y, %10
    32 %12 = load_const (0.5)
    32 %13 = fmul %11, %12
    32x4 %14 = vec4 %9.x, %13, %9.z, %10
    32 %15 = deref_var @color
    store_deref %15, %14 (write_mask=xyzw)
    return
}
"#,
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
        r#"
shader fragment
var shader_in f32x4 @a (location=0)
var uniform f32 @n
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @a
    32x4 %1 = load_deref %0
    32 %2 = load_const (0)
    32 %3 = load_const (1)
    32 %11 = deref_var @n
    32 %12 = load_deref %11
    32 %13 = fabs %12
    32 %14 = load_const (2.5)
    32 %15 = fadd %13, %14
    32 %4 = f2u32 %15
    jump b1
b1: loop merge=b4 continue=b3
    32 %5 = phi b0: %2, b3: %9
    32x4 %6 = phi b0: %1, b3: %8
    1 %7 = ult %5, %4
    branch %7, b2, b4
    b2:
        32x4 %8 = fadd %6.yzwx, %6
        jump b3
    b3:
        32 %9 = iadd %5, %3
        jump b1
b4:
    32 %10 = deref_var @color
    store_deref %10, %6 (write_mask=xyzw)
    return
}
"#,
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
        "shader fragment
struct B { a: f32x4[160] offset 0 }
var ubo B @b (binding=0)
var uniform f32x4[4] @u
var uniform f32[7] @s
var constant f32x2[4] @weights = (0.5, 1.0, 0.25, 2.0, 0.5, 0.125, 8.0, 4.0)
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = fabs %1
    32x4 %3 = load_const (3.0, 100.0, 6.0, 3.0)
    32x4 %4 = fmul %2, %3
    32x4 %5 = f2u32 %4
    32x4 %6 = load_const (3, 159, 6, 3)
    32x4 %7 = umin %5, %6
    32 %21 = mov %7.x
    32 %22 = mov %7.y
    32 %31 = mov %7.z
    32 %32 = mov %7.w
    32 %8 = deref_var @u
    32 %9 = deref_array %8[%21]
    32x4 %10 = load_deref %9
    32 %11 = deref_var @b
    32 %12 = deref_struct %11.a
    32 %13 = deref_array %12[%22]
    32x4 %14 = load_deref %13
    32 %15 = load_const (159)
    32 %16 = deref_array %12[%15]
    32x4 %17 = load_deref %16
    32x4 %18 = fadd %10, %14
    32x4 %19 = fadd %18, %17.zwxy
    32 %23 = deref_var @s
    32 %24 = deref_array %23[%31]
    32 %25 = load_deref %24
    32 %26 = deref_var @weights
    32 %27 = deref_array %26[%32]
    32x2 %28 = load_deref %27
    32x4 %29 = vec4 %25, %28.x, %28.y, %25
    32x4 %30 = fmul %19, %29
    32 %20 = deref_var @color
    store_deref %20, %30 (write_mask=xyzw)
    return
}
",
    );
}

/// Sampling: implicit LOD, bias, explicit LOD (zero: SAMPLE_LZ), derivatives, explicit
/// gradients (SAMPLE_G after SET_GRADIENTS_H/V), shadow comparison with a projector, 3D, array, 1D and rectangle textures with
/// texel offsets.
#[test]
fn texture_sampling() {
    check(
        "texture_sampling",
        r#"shader fragment
var shader_in f32x4 @uv (location=0)
var uniform texture(2d, float) @albedo (binding=0)
var uniform texture(2d shadow, float) @depth (binding=1)
var uniform texture(rect, float) @plane (binding=2)
var uniform texture(3d, float) @volume (binding=3)
var uniform texture(2d array, float) @layers (binding=4)
var uniform texture(1d, float) @ramp (binding=5)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x4 %1 = load_deref %0
    32x2 %2 = mov %1.xy
    32 %3 = deref_var @albedo
    32x4 %4 = tex 2d %3 (texture_deref), %2 (coord)
    32 %5 = mov %1.z
    32x4 %6 = txb 2d %3 (texture_deref), %2 (coord), %5 (bias)
    32x4 %7 = txl 2d %3 (texture_deref), %2 (coord), %5 (lod)
    32 %8 = load_const (0)
    32x4 %9 = txl 2d %3 (texture_deref), %2 (coord), %8 (lod)
    32x2 %10 = fddx %2
    32x2 %11 = fddy %2
    32x2 %12 = fadd %10, %11
    32x2 %52 = load_const (3.0, 3.0)
    32x2 %53 = fmul %10, %52
    32x4 %50 = txd 2d %3 (texture_deref), %2 (coord), %53 (ddx), %11 (ddy)
    32x4 %51 = fadd %4, %50
    32 %13 = deref_var @depth
    32 %14 = mov %1.w
    32 %15 = tex 2d shadow %13 (texture_deref), %2 (coord), %14 (comparator)
    32 %16 = fabs %5
    32 %17 = load_const (1.0)
    32 %18 = fadd %16, %17
    32 %19 = txb 2d shadow %13 (texture_deref), %2 (coord), %18 (projector), %14 (comparator), %5 (bias)
    32 %20 = deref_var @plane
    32x2 %21 = load_const (8.0, 8.0)
    32x2 %22 = fmul %2, %21
    32x2 %60 = load_const (1, -2)
    32x4 %23 = tex rect %20 (texture_deref), %22 (coord), %60 (offset)
    32x3 %24 = mov %1.xyz
    32 %25 = deref_var @volume
    32x4 %26 = tex 3d %25 (texture_deref), %24 (coord)
    32 %27 = deref_var @layers
    32x4 %28 = txl 2d array %27 (texture_deref), %24 (coord), %16 (lod)
    32 %29 = deref_var @ramp
    32 %30 = mov %1.x
    32x4 %31 = tex 1d %29 (texture_deref), %30 (coord)
    32x4 %32 = fadd %51, %6
    32x4 %33 = fadd %32, %7
    32x4 %34 = fadd %33, %9
    32x4 %35 = fadd %34, %23
    32x4 %36 = fadd %35, %26
    32x4 %37 = fadd %36, %28
    32x4 %38 = fadd %37, %31
    32x4 %39 = vec4 %15, %19, %12.x, %12.y
    32x4 %40 = fadd %38, %39
    32 %41 = deref_var @color
    store_deref %41, %40 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Texel fetches at LOD 0 and 1 from an array element of textures, sizes and mip counts.
#[test]
fn texel_fetches_and_queries() {
    check(
        "texel_fetches_and_queries",
        r#"shader fragment
var shader_in f32x4 @uv (location=0)
var uniform texture(2d, float)[2] @pair (binding=0)
var uniform texture(2d array, float) @layers (binding=2)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x4 %1 = load_deref %0
    32x4 %2 = ffract %1
    32 %3 = load_const (4.0)
    32x4 %4 = fmul %2, %3.xxxx
    32x4 %5 = f2i32 %4
    32x2 %6 = mov %5.xy
    32 %7 = deref_var @pair
    32 %8 = load_const (0)
    32 %9 = load_const (1)
    32 %20 = deref_array %7[%9]
    32x4 %10 = txf 2d %20 (texture_deref), %6 (coord), %8 (lod)
    32x4 %11 = txf 2d %20 (texture_deref), %6 (coord), %9 (lod)
    32 %12 = deref_var @layers
    32x3 %13 = txs 2d array %12 (texture_deref), %9 (lod)
    32 %14 = query_levels 2d array %12 (texture_deref)
    32x3 %15 = i2f32 %13
    32 %16 = i2f32 %14
    32x4 %17 = vec4 %15.x, %15.y, %15.z, %16
    32x4 %18 = fadd %10, %11
    32x4 %19 = fadd %18, %17
    32 %21 = deref_var @color
    store_deref %21, %19 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Fine derivatives (Evergreen and Cayman have them; R600 and R700 reject them) beside coarse
/// ones, of a value that is not linear over the quad.
#[test]
fn fine_and_coarse_derivatives() {
    let source = r#"shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = fmul %1, %1
    32x2 %3 = fddx_fine %2.xy
    32x2 %4 = fddy_fine %2.zw
    32x2 %5 = fddx_coarse %2.xy
    32x2 %6 = fddy %2.zw
    32x4 %7 = vec4 %3.x, %4.y, %5.x, %6.y
    32x4 %8 = vec4 %3.y, %4.x, %5.y, %6.x
    32x4 %9 = fadd %7, %8
    32 %10 = deref_var @color
    store_deref %10, %9 (write_mask=xyzw)
    return
}
"#;
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
        r#"shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (1000.0)
    32x4 %3 = fmul %1, %2.xxxx
    32x4 %4 = f2i32 %3
    32 %5 = load_const (3)
    32x2 %6 = ishr %4.zw, %5.xx
    32x2 %7 = idiv %4.xy, %6
    32x2 %8 = imod %4.xy, %6
    32 %9 = irem %4.x, %6.y
    32 %10 = udiv %4.y, %6.x
    32x4 %11 = vec4 %7.x, %8.y, %9, %10
    32x4 %12 = i2f32 %11
    32 %13 = deref_var @color
    store_deref %13, %12 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Returns before the end of the shader: from a selection, and from inside loops (the flag
/// each loop tests to break on outwards), one in a loop of 3 or 4 trips that is not unrolled.
#[test]
fn early_returns() {
    check(
        "return_in_loop.shrew",
        r#"shader fragment
var shader_in f32x4 @v (location=0)
var uniform f32 @n
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = deref_var @n
    32 %3 = load_deref %2
    32 %4 = fabs %3
    32 %5 = load_const (3.5)
    32 %6 = fadd %4, %5
    32 %7 = f2u32 %6
    32 %8 = load_const (0)
    32 %9 = load_const (1)
    32 %20 = deref_var @color
    32 %21 = load_const (2.0)
    32 %22 = fmul %1.x, %21
    jump b1
b1: loop merge=b6 continue=b5
    32 %10 = phi b0: %8, b5: %16
    1 %11 = ult %10, %7
    branch %11, b2, b6
    b2: selection merge=b4
        32 %12 = u2f32 %10
        1 %14 = flt %22, %12
        branch %14, b3, b4
        b3:
            32x4 %15 = vec4 %12, %1.y, %22, %1.w
            store_deref %20, %15 (write_mask=xyzw)
            return
    b4:
        jump b5
    b5:
        32 %16 = iadd %10, %9
        jump b1
b6:
    store_deref %20, %1 (write_mask=xyzw)
    return
}
"#,
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
    draw.resources = Arc::new(resources.clone());
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
        r#"shader vertex
var shader_in f32x4 @vertex (location=0)
var shader_out f32x4 @gl_Position (builtin=position)

entry fn main() {
b0:
    32 %0 = deref_var @vertex
    32x4 %1 = load_deref %0
    32 %2 = load_const (2.0)
    32x4 %3 = vec4 %1.x, %1.y, %1.z, %2
    32 %4 = deref_var @gl_Position
    store_deref %4, %3 (write_mask=xyzw)
    return
}
"#,
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
        r#"shader fragment
var shader_in f32x4 @v (location=0)
var uniform texture(2d, float) @t (binding=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0: selection merge=b3
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (10.0)
    32x4 %3 = fmul %1, %2.xxxx
    32x4 %4 = f2i32 %3
    32x4 %5 = fabs %3
    32x4 %6 = f2u32 %5
    32 %7 = deref_var @t
    32x2 %8 = mov %1.xy
    32x4 %9 = load_const (1.0, 2.0, 3.0, 4.0)
    1 %10 = ilt %4.x, %4.y
    branch %10, b1, b2
    b1:
        32x4 %11 = tex 2d %7 (texture_deref), %8 (coord)
        jump b3
    b2:
        jump b3
b3: selection merge=b6
    32x4 %12 = phi b1: %11, b2: %9
    1 %13 = uge %6.z, %6.w
    branch %13, b4, b5
    b4:
        32x2 %14 = mov %1.yx
        32x4 %15 = tex 2d %7 (texture_deref), %14 (coord)
        jump b6
    b5:
        jump b6
b6:
    32x4 %16 = phi b4: %15, b5: %12
    32 %17 = deref_var @color
    store_deref %17, %16 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Arrays too long to keep in registers, in scratch memory: a loop reading what its previous
/// iteration wrote (and nothing written before it), indexed writes and reads, a partial write
/// in one arm of an `if`.
/// R600 has no READ_SCRATCH: such a shader is a compile error there.
#[test]
fn temporaries_in_scratch_memory() {
    let source = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)
var function_temp f32x4[40] @a
var function_temp f32[50] @s

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = fabs %1
    32x4 %3 = load_const (39.0, 49.0, 5.0, 4.0)
    32x4 %4 = fmul %2, %3
    32x4 %5 = f2u32 %4
    32x4 %6 = load_const (39, 49, 5, 4)
    32x4 %7 = umin %5, %6
    32 %8 = mov %7.x
    32 %9 = mov %7.y
    32 %10 = mov %7.w
    32 %11 = deref_var @a
    32 %12 = deref_var @s
    32 %13 = load_const (0)
    32 %14 = load_const (1)
    32 %23 = load_const (49)
    32 %45 = load_const (39)
    32 %15 = deref_array %11[%8]
    jump b1
b1: loop merge=b4 continue=b3
    32 %20 = phi b0: %13, b3: %30
    1 %21 = ult %20, %10
    branch %21, b2, b4
    b2:
        32 %22 = iadd %9, %20
        32 %24 = umin %22, %23
        32 %25 = deref_array %12[%24]
        32 %26 = load_deref %25
        32 %27 = fadd %26, %1.x
        32 %28 = iadd %24, %14
        32 %29 = umin %28, %23
        32 %31 = deref_array %12[%29]
        store_deref %31, %27 (write_mask=x)
        jump b3
    b3:
        32 %30 = iadd %20, %14
        jump b1
b4: selection merge=b7
    store_deref %15, %1 (write_mask=xyzw)
    32 %41 = load_const (0.0)
    1 %42 = flt %41, %1.z
    branch %42, b5, b7
    b5:
        32x4 %43 = load_const (3.0, 4.0, 5.0, 6.0)
        32 %44 = umin %9, %45
        32 %46 = deref_array %11[%44]
        store_deref %46, %43 (write_mask=xz)
        jump b7
b7:
    32 %47 = umin %9, %45
    32 %48 = deref_array %11[%47]
    32x4 %49 = load_deref %48
    32x4 %50 = load_deref %15
    32 %51 = iadd %9, %10
    32 %52 = umin %51, %23
    32 %53 = deref_array %12[%52]
    32 %54 = load_deref %53
    32x4 %55 = fmul %50, %54.xxxx
    32x4 %56 = fadd %49, %55
    32 %57 = deref_var @color
    store_deref %57, %56 (write_mask=xyzw)
    return
}
";
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
    let source = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)
var function_temp f32x4[6] @a

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = fabs %1
    32x4 %3 = load_const (5.0, 2.0, 5.0, 3.0)
    32x4 %4 = fmul %2, %3
    32x4 %5 = f2u32 %4
    32x4 %6 = load_const (5, 2, 5, 3)
    32x4 %7 = umin %5, %6
    32 %8 = mov %7.x
    32 %9 = mov %7.y
    32 %10 = mov %7.w
    32 %11 = deref_var @a
    32 %12 = load_const (0)
    32 %13 = load_const (1)
    32 %14 = load_const (5)
    32x4 %15 = load_const (0.5, 0.25, -1.0, 2.0)
    32 %16 = deref_array %11[%12]
    store_deref %16, %15 (write_mask=xyzw)
    32 %17 = deref_array %11[%14]
    store_deref %17, %1 (write_mask=xyzw)
    jump b1
b1: loop merge=b4 continue=b3
    32 %20 = phi b0: %12, b3: %30
    1 %21 = ult %20, %10
    branch %21, b2, b4
    b2:
        32 %22 = iadd %9, %20
        32 %23 = umin %22, %14
        32 %24 = deref_array %11[%23]
        32x4 %25 = fadd %1, %15
        store_deref %24, %25 (write_mask=xyzw)
        jump b3
    b3:
        32 %30 = iadd %20, %13
        jump b1
b4: selection merge=b6
    32 %40 = load_const (0.0)
    1 %41 = flt %40, %1.z
    branch %41, b5, b6
    b5:
        32x4 %42 = load_const (3.0, 4.0, 5.0, 6.0)
        32 %43 = load_const (2)
        32 %44 = deref_array %11[%43]
        store_deref %44, %42 (write_mask=yw)
        jump b6
b6:
    32 %50 = deref_array %11[%8]
    store_deref %50, %2 (write_mask=xz)
    32x4 %51 = load_deref %50
    32 %52 = deref_array %11[%9]
    32x4 %53 = load_deref %52
    32x4 %56 = fmul %53, %1
    32x4 %57 = fadd %56, %2
    32x4 %54 = fmul %51, %57
    32 %55 = deref_var @color
    store_deref %55, %54 (write_mask=xyzw)
    return
}
";
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
    let source = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)
var shader_temp f32x4 @acc
var shader_temp f32 @x

fn twice() {
b0:
    32 %0 = deref_var @acc
    32x4 %1 = load_deref %0
    32x4 %2 = fadd %1, %1
    store_deref %0, %2 (write_mask=xyzw)
    return
}

fn step() {
b0: selection merge=b2
    32 %0 = deref_var @x
    32 %1 = load_deref %0
    32 %2 = load_const (0.0)
    1 %3 = flt %1, %2
    branch %3, b1, b2
    b1:
        return
b2:
    call twice()
    32 %4 = deref_var @acc
    32x4 %5 = load_deref %4
    32 %6 = load_const (0.25)
    32x4 %7 = fsub %5, %6.xxxx
    store_deref %4, %7 (write_mask=xyzw)
    32 %8 = fsub %1, %6
    store_deref %0, %8 (write_mask=x)
    return
}

entry fn main() {
b0: selection merge=b2
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = deref_var @acc
    store_deref %2, %1 (write_mask=xyzw)
    32 %3 = deref_var @x
    32 %17 = mov %1.w
    store_deref %3, %17 (write_mask=x)
    32 %4 = load_const (0.0)
    1 %5 = flt %4, %1.y
    branch %5, b1, b2
    b1:
        call twice()
        jump b2
b2:
    32 %6 = load_const (0)
    32 %7 = load_const (1)
    32 %8 = load_const (3)
    jump b3
b3: loop merge=b6 continue=b5
    32 %9 = phi b2: %6, b5: %10
    1 %11 = ult %9, %8
    branch %11, b4, b6
    b4:
        call step()
        jump b5
    b5:
        32 %10 = iadd %9, %7
        jump b3
b6:
    32x4 %12 = load_deref %2
    32 %13 = load_const (0.5)
    32x4 %14 = fmul %1, %13.xxxx
    32x4 %15 = fadd %12, %14
    32 %16 = deref_var @color
    store_deref %16, %15 (write_mask=xyzw)
    return
}
";
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
