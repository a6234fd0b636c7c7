//! The Gen backend against the reference interpreter: each fragment shader is optimized for
//! the target, compiled at SIMD8 and SIMD16, run on the emulator over a grid of pixels, and its
//! colours compared with what the interpreter computes from the unoptimized shader on the same
//! inputs (planes over barycentrics, so both sides see the same values).

use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::{Builtin, Interp, Mode, Shader, Stage};
use shrew_engine::passes::lower_io::interp_of;
use shrew_engine::raster::QuadGrid;
use shrew_engine::rng::Rng;
use shrew_engine::text;
use shrew_gen::compile::{compile_compute, compile_fragment, compile_vertex};
use shrew_gen::dispatch::{
    ComputeDispatch, FragmentDraw, VertexDraw, run_compute, run_fragment, run_vertex,
};
use shrew_gen::encoding::{Inst, Src};
use shrew_gen::isa::{Gen, Opcode};
use shrew_gen::lower::VueSlot;
use shrew_tests::backend::{self, close, random_textures};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const WIDTH: u32 = 8;
const HEIGHT: u32 = 4;

fn gen9() -> &'static shrew_targets::Target {
    shrew_targets::lookup("gen9").unwrap()
}

fn optimized(shader: &Shader) -> Shader {
    backend::optimized(shader, gen9())
}

/// A draw with random planes and barycentrics, one uncovered pixel and random uniforms.
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
            let slot = var.location.unwrap_or(0);
            let planes = [0; 4].map(|_| [small(), small(), 0.0, 4.0 * small()]);
            draw.planes.insert(slot, planes);
        }
    }
    draw.uniform_data = vec![0; 4096];
    for chunk in draw.uniform_data.chunks_mut(4) {
        chunk.copy_from_slice(&small().to_bits().to_le_bytes());
    }
    draw.ubos
        .insert(0, draw.uniform_data.iter().rev().copied().collect());
    for var in shader.variables.iter().filter(|v| v.mode == Mode::Ssbo) {
        draw.ssbos.insert(var.binding.unwrap_or(0), vec![0; 1024]);
    }
    (draw.textures, draw.samplers) = random_textures(shader, &mut || small().abs());
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
        let slot = var.location.unwrap_or(0);
        let comps = var.ty.val_type().map_or(4, |t| t.comps as usize);
        let interp = interp_of(shader, slot);
        let values = (0..pixels)
            .map(|i| {
                (0..comps)
                    .map(|c| {
                        // Integer inputs are flat: the constant's bits, as `mov` copies them.
                        let flat = interp == Interp::Flat;
                        let perspective = interp != Interp::NoPerspective;
                        draw.input(slot, c, i, flat, perspective).to_bits() as u64
                    })
                    .collect()
            })
            .collect();
        launch.inputs.insert(var.name.clone(), values);
    }
    launch
}

/// Compiles and runs `source` at SIMD8, SIMD16 and SIMD32 on every generation and compares each covered
/// pixel's colour with the interpreter's, within 1e-4 (rounding of reassociated arithmetic).
fn check(name: &str, source: &str) {
    check_within(name, source, 1e-4);
}

/// [`check`] with the error `tolerance` the mid-end's approximations of `source` have.
fn check_within(name: &str, source: &str, tolerance: f32) {
    let shader = text::parse(source, name).unwrap_or_else(|e| panic!("{e}"));
    let optimized = optimized(&shader);
    let color = shader
        .variables
        .iter()
        .find(|v| v.mode == Mode::ShaderOut && v.location == Some(0))
        .map(|v| v.name.clone())
        .expect("a colour output");
    for seed in 0..3 {
        let draw = draw(&shader, seed);
        let launch = launch(&shader, &draw);
        let mut resources = Resources {
            uniform_data: draw.uniform_data.clone(),
            ubos: draw.ubos.clone(),
            ssbos: draw.ssbos.clone(),
            textures: draw.textures.clone(),
            samplers: draw.samplers.clone(),
            ..Resources::default()
        };
        let expected = run(&shader, &launch, &mut resources).unwrap_or_else(|e| panic!("{e}"));
        for hw in [Gen::Gen7, Gen::Gen75, Gen::Gen8, Gen::Gen9] {
            for width in [8, 16, 32] {
                let kernel = compile_fragment(&optimized, hw, width)
                    .unwrap_or_else(|e| panic!("{name} {hw:?} SIMD{width}: {e}"));
                let mut run_draw = draw.clone();
                let got = run_fragment(&kernel, &mut run_draw)
                    .unwrap_or_else(|e| panic!("{name} {hw:?} SIMD{width}: {e}"));
                for (binding, buffer) in &resources.ssbos {
                    let words = |b: &[u8]| -> Vec<u32> {
                        b.chunks(4)
                            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                            .collect()
                    };
                    let (want, have) = (words(buffer), words(&run_draw.ssbos[binding]));
                    let at = (0..want.len()).find(|&i| want[i] != have[i]);
                    assert_eq!(
                        at,
                        None,
                        "{name} {hw:?} SIMD{width} seed {seed}: SSBO {binding} dword {at:?}: interpreter {:?}, emulator {:?}",
                        at.map(|i| want[i]),
                        at.map(|i| have[i])
                    );
                }
                for (i, inv) in expected.invocations.iter().enumerate() {
                    let written = got[i].get(&0);
                    if !draw.pixels.covered[i] || inv.discarded || inv.helper {
                        assert_eq!(
                            written, None,
                            "{name} SIMD{width}: pixel {i} must not be written"
                        );
                        continue;
                    }
                    let want = &inv.outputs[&color];
                    let have = written.unwrap_or_else(|| {
                        panic!("{name} {hw:?} SIMD{width} seed {seed}: pixel {i} not written")
                    });
                    for c in 0..want.len().min(4) {
                        assert!(
                            close(want[c] as u32, have[c], tolerance),
                            "{name} {hw:?} SIMD{width} seed {seed}: pixel {i} component {c}: interpreter {} ({:#x}), emulator {} ({:#x})",
                            f32::from_bits(want[c] as u32),
                            want[c],
                            f32::from_bits(have[c]),
                            have[c]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn lighting_example() {
    check(
        "lighting.shrew",
        include_str!("../../examples/lighting.shrew"),
    );
}

#[test]
fn texel_fetch_example() {
    check(
        "texel_fetch.shrew",
        include_str!("../../examples/texel_fetch.shrew"),
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

/// GLSL's default uniform block arrives as a UBO: its loads become push constants.
#[test]
fn ubo_members_as_push_constants() {
    check(
        "ubo.shrew",
        "shader fragment
struct B { scale: f32 offset 0, bias: f32x4 offset 16 }
var ubo B @b (binding=0)
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @b
    32 %1 = deref_struct %0.scale
    32 %2 = load_deref %1
    32 %3 = deref_struct %0.bias
    32x4 %4 = load_deref %3
    32 %5 = deref_var @v
    32x4 %6 = load_deref %5
    32x4 %7 = fmul %6, %2.xxxx
    32x4 %8 = fadd %7, %4
    32 %9 = deref_var @color
    store_deref %9, %8 (write_mask=xyzw)
    return
}
",
    );
}

/// Selects between constants (equal, one zero, the immediate first) and a discard.
#[test]
fn selects_of_constants_and_discard() {
    check(
        "selects.shrew",
        "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (0.25)
    1 %3 = flt %1.x, %2
    32x4 %4 = load_const (0.5, 0, 3.0, 1.0)
    32x4 %5 = load_const (0.5, 2.0, 0, 1.5)
    32x4 %6 = bcsel %3.xxxx, %4, %5
    32x4 %7 = bcsel %3.xxxx, %5, %1
    32x4 %8 = fadd %6, %7
    1 %9 = flt %1.y, %1.z
    discard_if %9
    32 %10 = deref_var @color
    store_deref %10, %8 (write_mask=xyzw)
    return
}
",
    );
}

/// Selects between a value and zero, and a boolean converted to float times a value (a
/// select after the late rules): each is an `and` of the condition with the value or with its
/// complement.
#[test]
fn selects_of_a_value_and_zero() {
    check(
        "selects_of_zero.shrew",
        "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    1 %2 = flt %1.x, %1.y
    32 %3 = load_const (0)
    32 %4 = bcsel %2, %1.z, %3
    32 %5 = bcsel %2, %3, %1.w
    32 %6 = b2f32 %2
    32 %7 = fmul %6, %1.y
    32 %8 = fneg %1.x
    32 %9 = bcsel %2, %3, %8
    32x4 %10 = vec4 %4, %5, %7, %9
    32 %11 = deref_var @color
    store_deref %11, %10 (write_mask=xyzw)
    return
}
",
    );
}

/// The Gen rules: a division by a constant becomes a multiplication by its reciprocal (no
/// `math fdiv`), and negated or absolute products written to the colour (a send takes no
/// modifiers) move the modifier onto the product's sources (no `mov`).
#[test]
fn gen_rules_divisors_and_modifiers() {
    let source = "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (10.0)
    32 %3 = fdiv %1.x, %2
    32 %4 = fmul %1.y, %1.z
    32 %5 = fneg %4
    32 %6 = fmul %1.z, %1.w
    32 %7 = fabs %6
    32 %8 = ffma %1.x, %1.w, %1.y
    32 %9 = fneg %8
    32x4 %10 = vec4 %3, %5, %7, %9
    32 %11 = deref_var @color
    store_deref %11, %10 (write_mask=xyzw)
    return
}
";
    check("gen_rules.shrew", source);
    let shader = text::parse(source, "gen_rules.shrew").unwrap();
    let kernel = compile_fragment(&optimized(&shader), Gen::Gen9, 8).unwrap();
    let listing = shrew_gen::disasm::listing(&kernel.insts, Gen::Gen9);
    assert!(!listing.contains("fdiv"), "{listing}");
    let movs = listing.lines().filter(|l| l.contains("mov(")).count();
    assert_eq!(movs, 0, "{listing}");
}

/// Source modifiers and copies folded into their readers: negations and absolute values of
/// inputs and push constants into `add`, `mul`, `mad` and `math`, `ceil`'s negated result,
/// integer negation, and `cond ? 0 : k` as an `and` of the complement.
#[test]
fn source_modifiers_and_copies() {
    check(
        "modifiers.shrew",
        "shader fragment
struct B { scale: f32 offset 0, bias: f32x4 offset 16 }
var ubo B @b (binding=0)
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @b
    32 %1 = deref_struct %0.scale
    32 %2 = load_deref %1
    32 %3 = deref_struct %0.bias
    32x4 %4 = load_deref %3
    32 %5 = deref_var @v
    32x4 %6 = load_deref %5
    32 %7 = fneg %2
    32 %8 = ffma %7, %6.x, %6.y
    32 %9 = fabs %6.z
    32 %10 = fmul %9, %4.y
    32 %11 = fceil %6.w
    32 %12 = fneg %11
    32 %13 = frsq %9
    32 %14 = fabs %4.x
    32 %15 = fneg %14
    32 %16 = fadd %15, %13
    32 %17 = load_const (10.0)
    32 %18 = fmul %6.x, %17
    32 %19 = f2i32 %18
    32 %20 = iabs %19
    32 %21 = ineg %20
    32 %22 = iadd %21, %19
    32 %23 = i2f32 %22
    1 %24 = flt %6.x, %6.y
    32 %25 = load_const (0)
    32 %26 = load_const (1.0)
    32 %27 = bcsel %24, %25, %26
    32 %28 = fadd %8, %27
    32 %29 = fadd %10, %12
    32 %30 = fadd %16, %23
    32 %31 = fmul %12, %9
    32x4 %32 = vec4 %28, %29, %30, %31
    32 %33 = deref_var @color
    store_deref %33, %32 (write_mask=xyzw)
    return
}
",
    );
}

/// Integer division and remainder, signed and unsigned, by per-pixel divisors (zero among
/// them) and by a push constant: the math unit's 8-channel limit splits them at SIMD16.
#[test]
fn integer_division() {
    check(
        "division.shrew",
        "shader fragment
struct B { n: i32 offset 0 }
var ubo B @b (binding=0)
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (1000.0)
    32 %3 = fmul %1.x, %2
    32 %4 = f2i32 %3
    32 %5 = load_const (7.0)
    32 %6 = fmul %1.y, %5
    32 %7 = f2i32 %6
    32 %8 = idiv %4, %7
    32 %9 = irem %4, %7
    32 %10 = iabs %4
    32 %11 = iabs %7
    32 %12 = load_const (1)
    32 %13 = iadd %11, %12
    32 %14 = udiv %10, %13
    32 %15 = deref_var @b
    32 %16 = deref_struct %15.n
    32 %17 = load_deref %16
    32 %18 = umod %10, %17
    32 %19 = i2f32 %8
    32 %20 = i2f32 %9
    32 %21 = u2f32 %14
    32 %22 = u2f32 %18
    32x4 %23 = vec4 %19, %20, %21, %22
    32 %24 = deref_var @color
    store_deref %24, %23 (write_mask=xyzw)
    return
}
",
    );
}

/// A table of constants read at per-pixel and uniform run-time indices: `opt-large-constants`
/// moves it into the constant data, read by untyped surface reads.
#[test]
fn constant_table() {
    check(
        "constant_table.shrew",
        "shader fragment
struct B { n: u32 offset 0 }
var ubo B @b (binding=0)
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)
var function_temp f32x4[5] @table

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = fabs %1.x
    32 %3 = load_const (3.0)
    32 %4 = fmul %2, %3
    32 %5 = f2u32 %4
    32 %6 = load_const (4)
    32 %7 = umin %5, %6
    32 %10 = deref_var @table
    32 %11 = load_const (0)
    32 %12 = deref_array %10[%11]
    32x4 %13 = load_const (1.0, 2.0, 3.0, 4.0)
    store_deref %12, %13 (write_mask=xyzw)
    32 %14 = load_const (1)
    32 %15 = deref_array %10[%14]
    32x4 %16 = load_const (-1.5, 0.25, 8.0, 16.0)
    store_deref %15, %16 (write_mask=xyzw)
    32 %17 = load_const (2)
    32 %18 = deref_array %10[%17]
    32x4 %19 = load_const (0.5, 0.75, -2.0, 3.5)
    store_deref %18, %19 (write_mask=xyzw)
    32 %20 = load_const (3)
    32 %21 = deref_array %10[%20]
    32x4 %22 = load_const (10.0, 20.0, 30.0, 40.0)
    store_deref %21, %22 (write_mask=xyzw)
    32 %23 = deref_array %10[%6]
    32x4 %24 = load_const (-7.0, 0.125, 64.0, 9.0)
    store_deref %23, %24 (write_mask=xyzw)
    32 %25 = deref_array %10[%7]
    32x4 %26 = load_deref %25
    32 %27 = deref_var @b
    32 %28 = deref_struct %27.n
    32 %29 = load_deref %28
    32 %30 = umin %29, %6
    32 %31 = deref_array %10[%30]
    32x4 %32 = load_deref %31
    32x4 %33 = fmul %26, %1
    32x4 %34 = fadd %33, %32.wzyx
    32 %35 = deref_var @color
    store_deref %35, %34 (write_mask=xyzw)
    return
}
",
    );
}

/// Uniforms pulled from their buffers: a default-block array and a UBO array at per-pixel
/// indices, and a UBO element at a constant index past the 64 GRFs of push constants.
#[test]
fn pulled_uniforms() {
    check(
        "pulled_uniforms.shrew",
        "shader fragment
struct B { a: f32x4[160] offset 0 }
var ubo B @b (binding=0)
var uniform f32x4[4] @u
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = fabs %1
    32x2 %3 = load_const (3.0, 100.0)
    32x2 %4 = fmul %2.xy, %3
    32x2 %5 = f2u32 %4
    32x2 %6 = load_const (3, 159)
    32x2 %7 = umin %5, %6
    32 %21 = mov %7.x
    32 %22 = mov %7.y
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
    32 %20 = deref_var @color
    store_deref %20, %19 (write_mask=xyzw)
    return
}
",
    );
}

/// `sign` on positive, negative and zero values (floor gives zeros), and the mid-end's rules
/// for the sign of an absolute value.
#[test]
fn sign() {
    check(
        "sign.shrew",
        "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = ffloor %1
    32x4 %3 = fsign %2
    32 %4 = fabs %1.z
    32 %5 = fneg %4
    32 %6 = fsign %5
    32 %7 = fsign %1.w
    32 %8 = fabs %7
    32 %9 = fmul %6, %8
    32x4 %10 = fadd %3, %9.xxxx
    32 %11 = deref_var @color
    store_deref %11, %10 (write_mask=xyzw)
    return
}
",
    );
}

/// `tan` through the mid-end's lowering to `sin / cos` on the math unit.
#[test]
fn tangent() {
    check(
        "tangent.shrew",
        "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32x4 %2 = ftan %1
    32 %3 = deref_var @color
    store_deref %3, %2 (write_mask=xyzw)
    return
}
",
    );
}

/// `atan`, `atan2`, `asin` and `acos` through the mid-end's polynomial approximations (square
/// root, division, fused multiply-adds and selects), within asin's error bound.
#[test]
fn inverse_trigonometry() {
    check_within(
        "inverse_trig.shrew",
        "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (8.0)
    32 %3 = fmul %1.x, %2
    32 %4 = fatan %3
    32 %5 = fatan2 %1.y, %1.z
    32 %6 = fsat %1.w
    32 %7 = fasin %6
    32 %8 = load_const (0.5)
    32 %9 = fmul %1.x, %8
    32 %10 = facos %9
    32x4 %11 = vec4 %4, %5, %7, %10
    32 %12 = deref_var @color
    store_deref %12, %11 (write_mask=xyzw)
    return
}
",
        4e-4,
    );
}

/// An output read back and written again (`gl_FragColor.xy = gl_FragColor.yx + 1.0`): it
/// lives in a temporary until the render-target write.
#[test]
fn output_read_back() {
    check(
        "output_read_back.shrew",
        "shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = deref_var @color
    store_deref %2, %1 (write_mask=xyzw)
    32x4 %3 = load_deref %2
    32 %4 = load_const (1.0)
    32x2 %5 = fadd %3.yx, %4.xx
    32x4 %6 = vec4 %5.x, %5.y, %3.z, %3.w
    store_deref %2, %6 (write_mask=xy)
    return
}
",
    );
}

/// Found by running piglit on the emulator: a swizzle rotating a loop's vector in place, nested
/// loops starting at one instruction, and a return from inside a selection.
#[test]
fn rotation_nested_loops_and_early_return() {
    check(
        "loops_and_returns.shrew",
        include_str!("../ir/loops_and_returns.shrew"),
    );
}

/// A loop's `r += x` on a vector adds into the loop-carried register in place, component by
/// component: no copies in the loop body.
#[test]
fn accumulation_in_a_loop_is_in_place() {
    let source = "shader fragment
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32x4 %0 = load_frag_coord
    32 %1 = load_const (0)
    32 %2 = load_const (1)
    32x4 %3 = load_const (0.0, 0.0, 0.0, 0.0)
    32 %4 = mov %0.x
    32 %5 = f2i32 %4
    jump b1
b1: loop merge=b4 continue=b3
    32 %6 = phi b0: %1, b3: %9
    32x4 %7 = phi b0: %3, b3: %8
    1 %10 = ilt %6, %5
    branch %10, b2, b4
    b2:
        jump b3
    b3:
        32x4 %8 = fadd %7, %0
        32 %9 = iadd %6, %2
        jump b1
b4:
    32 %11 = deref_var @color
    store_deref %11, %7 (write_mask=xyzw)
    return
}
";
    check("accumulate.shrew", source);
    let shader = text::parse(source, "accumulate.shrew").unwrap();
    let kernel = compile_fragment(&optimized(&shader), Gen::Gen9, 8).unwrap();
    let end = (kernel.insts.iter())
        .position(|i| i.opcode == shrew_gen::isa::Opcode::While)
        .expect("a loop");
    let start = (end as i32 + kernel.insts[end].jip / 16) as usize;
    let body = &kernel.insts[start..end];
    assert!(
        body.iter().all(|i| i.opcode != shrew_gen::isa::Opcode::Mov),
        "{}",
        shrew_gen::disasm::listing(&kernel.insts, Gen::Gen9)
    );
}

/// Sampling: implicit LOD, bias, explicit LOD (zero: Gen9's `sample_lz`), derivatives, shadow
/// comparison with a projector, cube, 3D, array and 1D textures; linear filtering keeps the
/// comparison continuous.
#[test]
fn texture_sampling() {
    check(
        "texture_sampling",
        r#"shader fragment
var shader_in f32x4 @uv (location=0)
var uniform texture(2d, float) @albedo (binding=0)
var uniform texture(2d shadow, float) @depth (binding=1)
var uniform texture(cube, float) @sky (binding=2)
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
    32x4 %12 = txd 2d %3 (texture_deref), %2 (coord), %10 (ddx), %11 (ddy)
    32 %13 = deref_var @depth
    32 %14 = mov %1.w
    32 %15 = tex 2d shadow %13 (texture_deref), %2 (coord), %14 (comparator)
    32 %16 = fabs %5
    32 %17 = load_const (1.0)
    32 %18 = fadd %16, %17
    32 %19 = txb 2d shadow %13 (texture_deref), %2 (coord), %18 (projector), %14 (comparator), %5 (bias)
    32 %20 = deref_var @sky
    32x3 %21 = mov %1.xyz
    32x4 %22 = tex cube %20 (texture_deref), %21 (coord)
    32 %23 = deref_var @volume
    32x4 %24 = tex 3d %23 (texture_deref), %21 (coord)
    32 %25 = deref_var @layers
    32x4 %26 = txl 2d array %25 (texture_deref), %21 (coord), %16 (lod)
    32 %27 = deref_var @ramp
    32 %28 = mov %1.x
    32x4 %29 = tex 1d %27 (texture_deref), %28 (coord)
    32x4 %30 = fadd %4, %6
    32x4 %31 = fadd %30, %7
    32x4 %32 = fadd %31, %9
    32x4 %33 = fadd %32, %12
    32x4 %34 = fadd %33, %22
    32x4 %35 = fadd %34, %24
    32x4 %36 = fadd %35, %26
    32x4 %37 = fadd %36, %29
    32x4 %38 = vec4 %15, %19, %15, %19
    32x4 %39 = fadd %37, %38
    32 %40 = deref_var @color
    store_deref %40, %39 (write_mask=xyzw)
    return
}
"#,
    );
}

/// SSBO stores, loads of what was stored, and atomics from fragments: discarded pixels and
/// helpers write nothing (the stores are predicated on the live pixels).
#[test]
fn ssbo_stores_loads_and_atomics() {
    check(
        "ssbo_stores_loads_and_atomics",
        r#"shader fragment
var shader_in f32x4 @v (location=0)
var ssbo u32[64] @cells (binding=0)
var ssbo u32 @count (binding=1)
var ssbo i32[8] @extremes (binding=2)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (0.5)
    1 %3 = flt %2, %1.z
    discard_if %3
    32x4 %4 = load_frag_coord
    32 %5 = f2u32 %4.x
    32 %6 = f2u32 %4.y
    32 %7 = load_const (16)
    32 %8 = imul %6, %7
    32 %9 = iadd %8, %5
    32 %10 = load_const (63)
    32 %11 = iand %9, %10
    32 %12 = load_const (100.0)
    32 %13 = fmul %1.x, %12
    32 %14 = f2i32 %13
    32 %15 = deref_var @cells
    32 %16 = deref_array %15[%11]
    store_deref %16, %14 (write_mask=x)
    32 %17 = load_deref %16
    32 %18 = deref_var @count
    32 %19 = load_const (1)
    32 %20 = deref_atomic %18, %19
    32 %21 = load_const (7)
    32 %22 = iand %11, %21
    32 %23 = deref_var @extremes
    32 %24 = deref_array %23[%22]
    32 %25 = fmul %1.y, %12
    32 %26 = f2i32 %25
    32 %27 = deref_atomic %24, %26 (atomic_op=imax)
    32 %28 = i2f32 %17
    32x4 %29 = vec4 %28, %28, %1.w, %28
    32 %30 = deref_var @color
    store_deref %30, %29 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Helper pixels (the draw's uncovered one) run for their quad's derivatives but write no
/// memory, in a shader that does not discard.
#[test]
fn helpers_write_no_memory() {
    check(
        "helpers_write_no_memory",
        r#"shader fragment
var shader_in f32x4 @v (location=0)
var ssbo u32 @count (binding=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = deref_var @count
    32 %3 = load_const (1)
    32 %4 = deref_atomic %2, %3
    32 %5 = deref_var @color
    store_deref %5, %1 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Elements of an array of arrays of textures: each its own binding table entry.
#[test]
fn texture_array_elements() {
    check(
        "texture_array_elements",
        r#"shader fragment
var shader_in f32x2 @uv (location=0)
var uniform texture(2d, float)[2][3] @grid (binding=0)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x2 %1 = load_deref %0
    32 %2 = deref_var @grid
    32 %3 = load_const (1)
    32 %4 = deref_array %2[%3]
    32 %5 = load_const (2)
    32 %6 = deref_array %4[%5]
    32x4 %7 = tex 2d %6 (texture_deref), %1 (coord)
    32 %8 = load_const (0)
    32 %9 = deref_array %2[%8]
    32 %10 = deref_array %9[%3]
    32x4 %11 = tex 2d %10 (texture_deref), %1 (coord)
    32x4 %12 = fadd %7, %11
    32 %13 = deref_var @color
    store_deref %13, %12 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Fetches at LOD 0 (Gen9's `ld_lz`) and 1, sizes and mip counts, and the LOD query.
#[test]
fn texel_fetches_and_queries() {
    check(
        "texel_fetches_and_queries",
        r#"shader fragment
var shader_in f32x4 @uv (location=0)
var uniform texture(2d, float) @albedo (binding=0)
var uniform texture(2d array, float) @layers (binding=1)
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
    32 %7 = deref_var @albedo
    32 %8 = load_const (0)
    32 %9 = load_const (1)
    32x4 %10 = txf 2d %7 (texture_deref), %6 (coord), %8 (lod)
    32x4 %11 = txf 2d %7 (texture_deref), %6 (coord), %9 (lod)
    32x2 %12 = txs 2d %7 (texture_deref), %9 (lod)
    32 %13 = query_levels 2d %7 (texture_deref)
    32x2 %14 = mov %1.xy
    32x2 %15 = lod 2d %7 (texture_deref), %14 (coord)
    32 %16 = deref_var @layers
    32x3 %17 = txs 2d array %16 (texture_deref), %8 (lod)
    32 %28 = load_const (2)
    32 %29 = umin %5.z, %28
    32x3 %18 = vec3 %5.x, %5.y, %29
    32x4 %19 = txf 2d array %16 (texture_deref), %18 (coord), %8 (lod)
    32x4 %20 = vec4 %12.x, %12.y, %13, %17.z
    32x4 %21 = i2f32 %20
    32x4 %22 = fadd %10, %11
    32x4 %23 = fadd %22, %21
    32x4 %24 = vec4 %15.x, %15.y, %15.x, %15.y
    32x4 %25 = fadd %23, %24
    32x4 %26 = fadd %25, %19
    32 %27 = deref_var @color
    store_deref %27, %26 (write_mask=xyzw)
    return
}
"#,
    );
}

/// Compiles a vertex shader for Gen8 and Gen9 at SIMD8, runs 13 vertices of random attributes
/// (two threads, the second partial) on the emulator and compares each vertex's URB entry with
/// the interpreter's outputs: the position, the point size in the header, and each varying in
/// its slot.
fn check_vertex(name: &str, source: &str) {
    let shader = text::parse(source, name).unwrap_or_else(|e| panic!("{e}"));
    let optimized = optimized(&shader);
    let layouts = shrew_engine::interp::layout_variables(&optimized).unwrap();
    let output_at = |slot: u32| {
        optimized
            .variables
            .iter()
            .zip(&layouts)
            .find(|(v, l)| v.mode == Mode::ShaderOut && l.offset / 16 == slot)
            .map(|(v, _)| v.name.clone())
            .unwrap()
    };
    let builtin = |b: Builtin| {
        shader
            .variables
            .iter()
            .find(|v| v.builtin == Some(b))
            .map(|v| v.name.clone())
    };
    let mut rng = Rng::new(7);
    let mut small = || ((rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).to_bits();
    let vertices = 13;
    let mut launch = Launch::invocations(vertices);
    let mut draw = VertexDraw {
        vertices: vec![BTreeMap::new(); vertices],
        uniform_data: (0..256).flat_map(|_| small().to_le_bytes()).collect(),
        ..VertexDraw::default()
    };
    for (var, layout) in shader.variables.iter().zip(
        shrew_engine::interp::layout_variables(&shader)
            .unwrap()
            .iter(),
    ) {
        if var.mode != Mode::ShaderIn {
            continue;
        }
        let values: Vec<Vec<u64>> = (0..vertices)
            .map(|v| {
                let attribute = [0; 4].map(|_| small());
                draw.vertices[v].insert(layout.offset / 16, attribute);
                attribute.iter().map(|&x| x as u64).collect()
            })
            .collect();
        launch.inputs.insert(var.name.clone(), values);
    }
    let mut resources = Resources {
        uniform_data: draw.uniform_data.clone(),
        ..Resources::default()
    };
    let expected = run(&shader, &launch, &mut resources).unwrap_or_else(|e| panic!("{e}"));
    for hw in [Gen::Gen8, Gen::Gen9] {
        let kernel = compile_vertex(&optimized, hw).unwrap_or_else(|e| panic!("{name}: {e}"));
        let entries =
            run_vertex(&kernel, &mut draw.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (v, inv) in expected.invocations.iter().enumerate() {
            for (slot, what) in kernel.payload.vue.iter().enumerate() {
                let (want, comps): (Vec<u64>, std::ops::Range<usize>) = match what {
                    VueSlot::Header => match builtin(Builtin::PointSize) {
                        Some(name) => (vec![0, 0, 0, inv.outputs[&name][0]], 3..4),
                        None => continue,
                    },
                    VueSlot::Position => (
                        inv.outputs[&builtin(Builtin::Position).unwrap()].clone(),
                        0..4,
                    ),
                    VueSlot::Output(s) => {
                        let values = inv.outputs[&output_at(*s)].clone();
                        let n = values.len();
                        (values, 0..n)
                    }
                };
                for c in comps {
                    assert!(
                        close(want[c] as u32, entries[v][slot][c], 1e-4),
                        "{name} {hw:?}: vertex {v} slot {slot} ({what:?}) component {c}: interpreter {}, emulator {}",
                        f32::from_bits(want[c] as u32),
                        f32::from_bits(entries[v][slot][c])
                    );
                }
            }
        }
    }
}

/// A vertex shader: a transform by a uniform matrix, varyings computed in a loop and under a
/// condition, a point size, and an attribute passed through.
#[test]
fn vertex_shader_outputs() {
    check_vertex(
        "vertex_shader_outputs",
        include_str!("../ir/vertex_outputs.shrew"),
    );
}

/// More values live at once than SIMD8 has registers: the kernel spills to scratch and still
/// computes what the interpreter does; the driver's choice of variants keeps SIMD8 and leaves
/// SIMD16 out, as Mesa does once SIMD8 spills.
#[test]
fn pressure_spills_and_the_variants_follow_mesa() {
    const VALUES: usize = 140;
    let mut source = String::from(
        "shader fragment\nvar shader_out f32x4 @color (location=0)\n\nentry fn main() {\nb0:\n    32x4 %0 = load_frag_coord\n    32 %1 = mov %0.x\n",
    );
    // A chain of sines, %(2 + 2k) = sin(%(2k) + k): each needs the one before. The sums take
    // them from the last back to the first, so all are live once the last is computed.
    for k in 0..VALUES {
        let previous = if k == 0 { 1 } else { 2 * k };
        source += &format!(
            "    32 %{c} = load_const ({k}.25)\n    32 %{a} = fadd %{previous}, %{c}\n    32 %{s} = fsin %{a}\n",
            c = 1000 + k,
            a = 2000 + k,
            s = 2 + 2 * k
        );
    }
    let sums = 2 + 2 * VALUES;
    source += &format!("    32 %{sums} = mov %{}\n", 2 * VALUES);
    for k in 1..VALUES {
        source += &format!(
            "    32 %{} = fadd %{}, %{}\n",
            sums + k,
            sums + k - 1,
            2 * (VALUES - k)
        );
    }
    let total = sums + VALUES - 1;
    source += &format!(
        "    32x4 %{v} = vec4 %{total}, %{total}, %{total}, %{total}\n    32 %{d} = deref_var @color\n    store_deref %{d}, %{v} (write_mask=xyzw)\n    return\n}}\n",
        v = 3000,
        d = 3001
    );
    check_within("pressure.shrew", &source, 1e-3);
    let shader = optimized(&text::parse(&source, "pressure.shrew").unwrap());
    let variants = shrew_gen::compile::compile_fragment_variants(&shader, Gen::Gen9);
    let simd8 = variants[0].1.as_ref().expect("SIMD8 compiles");
    assert!(
        simd8.stats.spills > 0 && simd8.stats.fills > 0,
        "{:?}",
        simd8.stats
    );
    assert!(simd8.scratch_bytes > 0);
    assert!(
        matches!(
            variants[1].1,
            Err(shrew_gen::compile::CompileError::Skipped(_))
        ),
        "SIMD16 is left out"
    );
    assert!(
        matches!(
            variants[2].1,
            Err(shrew_gen::compile::CompileError::Skipped(_))
        ),
        "so is SIMD32"
    );
}

/// A temporary array too large for select ladders, written in a loop and at a run-time index
/// (one component only), and read at run-time and constant indices: it stays in scratch memory, each
/// channel's copy addressed dword by dword (DWord scattered reads and writes).
#[test]
fn temporaries_in_scratch_memory() {
    let source = r#"shader fragment
var shader_in f32x4 @v (location=0)
var shader_out f32x4 @color (location=0)
var function_temp f32x4[40] @table

entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (0)
    32 %3 = load_const (1)
    32 %4 = load_const (40)
    32 %5 = deref_var @table
    jump b1
b1: loop merge=b4 continue=b3
    32 %6 = phi b0: %2, b3: %9
    1 %7 = ilt %6, %4
    branch %7, b2, b4
    b2:
        jump b3
    b3:
        32 %10 = i2f32 %6
        32x4 %11 = fadd %1, %10.xxxx
        32 %12 = deref_array %5[%6]
        store_deref %12, %11 (write_mask=xyzw)
        32 %9 = iadd %6, %3
        jump b1
b4:
    32 %13 = load_const (10.0)
    32 %14 = fabs %1.x
    32 %15 = fmul %14, %13
    32 %16 = f2u32 %15
    32 %17 = load_const (31)
    32 %18 = iand %16, %17
    32 %19 = deref_array %5[%18]
    32x4 %20 = load_const (0.0, 2.5, 0.0, 0.0)
    store_deref %19, %20 (write_mask=y)
    32 %21 = iadd %18, %3
    32 %22 = deref_array %5[%21]
    32x4 %23 = load_deref %22
    32x4 %24 = load_deref %19
    32x4 %25 = fadd %23, %24
    32 %27 = load_const (3)
    32 %28 = deref_array %5[%27]
    32x4 %29 = load_deref %28
    32x4 %30 = fmul %25, %29
    32 %26 = deref_var @color
    store_deref %26, %30 (write_mask=xyzw)
    return
}
"#;
    check("temporaries_in_scratch_memory", source);
    let shader = text::parse(source, "scratch.shrew").unwrap();
    let kernel = compile_fragment(&optimized(&shader), Gen::Gen9, 16).unwrap();
    let listing = shrew_gen::disasm::listing(&kernel.insts, Gen::Gen9);
    assert!(listing.contains("DWORD scattered write"), "{listing}");
    assert!(listing.contains("DWORD scattered read"), "{listing}");
    assert!(
        kernel.scratch_bytes >= 40 * 16 * 16,
        "{}",
        kernel.scratch_bytes
    );
}

/// Compiles a compute shader on every generation at SIMD8, SIMD16 and SIMD32, runs
/// `workgroups` workgroups of it on the emulator, and compares every SSBO dword with what the
/// interpreter leaves from the unoptimized shader, both starting from the same random buffers
/// and uniforms.
fn check_compute(name: &str, source: &str, workgroups: [u32; 3]) {
    let shader = text::parse(source, name).unwrap_or_else(|e| panic!("{e}"));
    let optimized = optimized(&shader);
    let mut rng = Rng::new(11);
    let mut dispatch = ComputeDispatch {
        workgroups,
        uniform_data: (0..1024).map(|_| rng.next_u64() as u8 % 16).collect(),
        ..ComputeDispatch::default()
    };
    for var in shader.variables.iter().filter(|v| v.mode == Mode::Ssbo) {
        let bytes = (0..1024).map(|_| rng.next_u64() as u8).collect();
        dispatch.ssbos.insert(var.binding.unwrap_or(0), bytes);
    }
    let launch = Launch {
        workgroups,
        ..Launch::default()
    };
    let mut resources = Resources {
        uniform_data: dispatch.uniform_data.clone(),
        ssbos: dispatch.ssbos.clone(),
        ..Resources::default()
    };
    run(&shader, &launch, &mut resources).unwrap_or_else(|e| panic!("{name}: {e}"));
    for hw in [Gen::Gen7, Gen::Gen75, Gen::Gen8, Gen::Gen9] {
        for width in [8, 16, 32] {
            let kernel = compile_compute(&optimized, hw, width)
                .unwrap_or_else(|e| panic!("{name} {hw:?} SIMD{width}: {e}"));
            let mut run_dispatch = dispatch.clone();
            run_compute(&kernel, &mut run_dispatch)
                .unwrap_or_else(|e| panic!("{name} {hw:?} SIMD{width}: {e}"));
            for (binding, want) in &resources.ssbos {
                let have = &run_dispatch.ssbos[binding];
                let at =
                    (0..want.len() / 4).find(|&i| want[4 * i..4 * i + 4] != have[4 * i..4 * i + 4]);
                assert_eq!(
                    at, None,
                    "{name} {hw:?} SIMD{width}: SSBO {binding} differs at dword {at:?}"
                );
            }
        }
    }
}

/// The compute example: shared memory written, a barrier, and a neighbour's value read back.
#[test]
fn shared_rotate_example() {
    check_compute(
        "shared_rotate.shrew",
        include_str!("../../examples/shared_rotate.shrew"),
        [1, 1, 1],
    );
}

/// A workgroup of 6x5 invocations (four SIMD8 threads, the last partial) over 3x2 groups:
/// global and local IDs, the flat index, the number of groups, a uniform, shared memory
/// written in one phase and read across threads after a barrier, a shared counter, and SSBO
/// atomics. The second phase reads the cell of the invocation mirrored in the group, which
/// another thread wrote.
#[test]
fn workgroups_barriers_and_shared_memory() {
    check_compute(
        "workgroups_barriers_and_shared_memory",
        r#"shader compute (workgroup_size=6,5,1)
var ssbo u32[256] @out (binding=0)
var ssbo u32[4] @counters (binding=1)
var uniform u32 @scale
var shared u32[30] @cells
var shared u32 @arrivals

entry fn main() {
b0:
    32x3 %0 = load_global_invocation_id
    32x3 %1 = load_local_invocation_id
    32 %2 = load_local_invocation_index
    32x3 %3 = load_num_workgroups
    32 %4 = deref_var @scale
    32 %5 = load_deref %4
    32 %6 = imul %0.x, %5
    32 %7 = iadd %6, %0.y
    32 %8 = iadd %7, %1.y
    32 %9 = iadd %8, %3.x
    32 %10 = deref_var @cells
    32 %11 = deref_array %10[%2]
    store_deref %11, %9 (write_mask=x)
    32 %12 = deref_var @arrivals
    32 %13 = load_const (1)
    32 %14 = deref_atomic %12, %13
    barrier (execution_scope=workgroup, memory_scope=workgroup, memory_semantics=acquire|release, memory_modes=shared)
    32 %15 = load_const (29)
    32 %16 = isub %15, %2
    32 %17 = deref_array %10[%16]
    32 %18 = load_deref %17
    32 %19 = load_deref %12
    32 %20 = imul %19, %14
    32 %21 = iadd %18, %20
    32x3 %22 = load_workgroup_id
    32 %23 = imul %22.y, %3.x
    32 %24 = iadd %23, %22.x
    32 %25 = load_const (30)
    32 %26 = imul %24, %25
    32 %27 = iadd %26, %2
    32 %28 = deref_var @out
    32 %29 = deref_array %28[%27]
    store_deref %29, %21 (write_mask=x)
    32 %30 = load_const (3)
    32 %31 = iand %2, %30
    32 %32 = deref_var @counters
    32 %33 = deref_array %32[%31]
    32 %34 = deref_atomic %33, %18 (atomic_op=umax)
    return
}
"#,
        [3, 2, 1],
    );
}

/// A tree reduction in shared memory over a loop whose trip count a uniform decides, with a
/// barrier in every iteration, inside control flow that differs between channels; the first
/// invocation of each group stores the sum. Two SIMD8 threads meet at every barrier.
#[test]
fn reduction_with_barriers_in_a_loop() {
    check_compute(
        "reduction_with_barriers_in_a_loop",
        r#"shader compute (workgroup_size=16,1,1)
var ssbo u32[64] @values (binding=0)
var uniform u32 @shift
var shared u32[16] @partial

entry fn main() {
b0:
    32 %0 = load_local_invocation_index
    32x3 %1 = load_global_invocation_id
    32 %2 = deref_var @values
    32 %3 = mov %1.x
    32 %4 = deref_array %2[%3]
    32 %5 = load_deref %4
    32 %6 = deref_var @partial
    32 %7 = deref_array %6[%0]
    store_deref %7, %5 (write_mask=x)
    barrier (execution_scope=workgroup, memory_scope=workgroup, memory_semantics=acquire|release, memory_modes=shared)
    32 %8 = deref_var @shift
    32 %9 = load_deref %8
    32 %10 = load_const (1)
    32 %11 = iand %9, %10
    32 %12 = load_const (8)
    32 %13 = ushr %12, %11
    32 %15 = load_const (0)
    jump b1
b1: loop merge=b5 continue=b4
    32 %14 = phi b0: %13, b4: %20
    1 %16 = ine %14, %15
    branch %16, b2, b5
    b2: selection merge=b7
        1 %17 = ult %0, %14
        branch %17, b6, b7
        b6:
            32 %21 = iadd %0, %14
            32 %22 = deref_array %6[%21]
            32 %23 = load_deref %22
            32 %24 = load_deref %7
            32 %25 = iadd %24, %23
            store_deref %7, %25 (write_mask=x)
            jump b7
        b7:
            jump b4
    b4:
        barrier (execution_scope=workgroup, memory_scope=workgroup, memory_semantics=acquire|release, memory_modes=shared)
        32 %20 = ushr %14, %10
        jump b1
b5: selection merge=b9
    1 %26 = ieq %0, %15
    branch %26, b8, b9
    b8:
        32x3 %27 = load_workgroup_id
        32 %28 = mov %27.x
        32 %29 = deref_array %2[%28]
        32 %30 = load_deref %7
        store_deref %29, %30 (write_mask=x)
        jump b9
b9:
    return
}
"#,
        [2, 1, 1],
    );
}

/// After register allocation no `mov` copies a register region onto itself (allocation gives a
/// copy and its source one register when they do not interfere): over the shipped IR shaders,
/// with and without the mid-end, at every width.
#[test]
fn no_move_copies_a_region_onto_itself() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = [root.join("ir"), root.join("../examples")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()))
        .filter(|path| path.extension().is_some_and(|e| e == "shrew"))
        .collect();
    files.sort();
    let mut kernels = 0;
    for path in &files {
        let name = path.display().to_string();
        let source = std::fs::read_to_string(path).unwrap();
        let shader = text::parse(&source, &name).unwrap_or_else(|e| panic!("{e}"));
        for mid_end in ["none", "default"] {
            let optimized = backend::optimized_after(mid_end, &shader, gen9());
            for width in [8, 16, 32] {
                let kernel = match optimized.stage {
                    Stage::Vertex if width == 8 => compile_vertex(&optimized, Gen::Gen9),
                    Stage::Vertex => continue,
                    Stage::Compute => compile_compute(&optimized, Gen::Gen9, width),
                    _ => compile_fragment(&optimized, Gen::Gen9, width),
                };
                // What the backend cannot compile yet has no moves to look at.
                let Ok(kernel) = kernel else { continue };
                kernels += 1;
                for inst in &kernel.insts {
                    assert!(
                        !copies_onto_itself(inst),
                        "{name} -p {mid_end} SIMD{width}: {}",
                        shrew_gen::disasm::listing(std::slice::from_ref(inst), Gen::Gen9)
                    );
                }
            }
        }
    }
    assert!(kernels >= 40, "only {kernels} kernels compiled");
}

/// Whether a native `mov` without modifiers writes each channel's element with itself.
fn copies_onto_itself(inst: &Inst) -> bool {
    let (Opcode::Mov, Some(dst), [Src::Reg(src)]) = (inst.opcode, inst.dst, inst.srcs.as_slice())
    else {
        return false;
    };
    let Some(vstride) = src.region.vstride else {
        return false;
    };
    let width = src.region.width.max(1) as u32;
    !inst.saturate
        && inst.cond.is_none()
        && !src.negate
        && !src.abs
        && (src.file, src.nr, src.subnr, src.ty) == (dst.file, dst.nr, dst.subnr, dst.ty)
        && (0..inst.exec_size as u32).all(|k| {
            k / width * vstride as u32 + k % width * src.region.hstride as u32
                == k * dst.hstride as u32
        })
}
