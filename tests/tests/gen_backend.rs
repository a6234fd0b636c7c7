//! The Gen backend against the reference interpreter: each fragment shader is optimized for
//! the target, compiled at SIMD8 and SIMD16, run on the emulator over a grid of pixels, and its
//! colours compared with what the interpreter computes from the unoptimized shader on the same
//! inputs (the values the kernels' `pln` computes from the planes the dispatcher makes, so both
//! sides see the same values).

use shrew_engine::draw::{FragmentDraw, QuadGrid, VertexDraw};
use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::{Builtin, Mode, Shader, Stage};
use shrew_engine::passes::lower_io::interp_of;
use shrew_engine::rng::Rng;
use shrew_engine::text;
use shrew_gen::compile::{compile_compute, compile_fragment, compile_vertex};
use shrew_gen::dispatch::{ComputeDispatch, input, run_compute, run_fragment, run_vertex};
use shrew_gen::encoding::{Inst, Src};
use shrew_gen::isa::{Gen, Opcode};
use shrew_gen::lower::VueSlot;
use shrew_tests::backend::{self, close, random_input, random_textures};
use std::path::{Path, PathBuf};

const WIDTH: u32 = 8;
const HEIGHT: u32 = 4;

fn gen9() -> &'static shrew_targets::Target {
    shrew_targets::lookup("gen9").unwrap()
}

fn optimized(shader: &Shader) -> Shader {
    backend::optimized(shader, gen9())
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
            let slot = var.location.unwrap_or(0);
            draw.inputs.insert(slot, random_input(&mut small));
        }
    }
    let resources = &mut draw.resources;
    resources.uniform_data = vec![0; 4096];
    for chunk in resources.uniform_data.chunks_mut(4) {
        chunk.copy_from_slice(&small().to_bits().to_le_bytes());
    }
    resources
        .ubos
        .insert(0, resources.uniform_data.iter().rev().copied().collect());
    for var in shader.variables.iter().filter(|v| v.mode == Mode::Ssbo) {
        resources
            .ssbos
            .insert(var.binding.unwrap_or(0), vec![0; 1024]);
    }
    (resources.textures, resources.samplers) = random_textures(shader, &mut || small().abs());
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
                    // Integer inputs are flat: the constant's bits, as `mov` copies them.
                    .map(|c| input(draw, slot, c, i, interp).to_bits() as u64)
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
        let mut resources = draw.resources.clone();
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
                    let (want, have) = (words(buffer), words(&run_draw.resources.ssbos[binding]));
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
        include_str!("../filetests/target/gen/ubo.shrew"),
    );
}

/// Selects between constants (equal, one zero, the immediate first) and a discard.
#[test]
fn selects_of_constants_and_discard() {
    check(
        "selects.shrew",
        include_str!("../filetests/target/gen/selects.shrew"),
    );
}

/// Selects between a value and zero, and a boolean converted to float times a value (a
/// select after the late rules): each is an `and` of the condition with the value or with its
/// complement.
#[test]
fn selects_of_a_value_and_zero() {
    check(
        "selects_of_zero.shrew",
        include_str!("../filetests/target/gen/selects_of_zero.shrew"),
    );
}

/// The Gen rules: a division by a constant becomes a multiplication by its reciprocal (no
/// `math fdiv`), and negated or absolute products written to the colour (a send takes no
/// modifiers) move the modifier onto the product's sources (no `mov`).
#[test]
fn gen_rules_divisors_and_modifiers() {
    let source = include_str!("../filetests/target/gen/gen_rules.shrew");
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
        include_str!("../filetests/target/gen/modifiers.shrew"),
    );
}

/// Integer division and remainder, signed and unsigned, by per-pixel divisors (zero among
/// them) and by a push constant: the math unit's 8-channel limit splits them at SIMD16.
#[test]
fn integer_division() {
    check(
        "division.shrew",
        include_str!("../filetests/target/gen/division.shrew"),
    );
}

/// A table of constants read at per-pixel and uniform run-time indices: `opt-large-constants`
/// moves it into the constant data, read by untyped surface reads.
#[test]
fn constant_table() {
    check(
        "constant_table.shrew",
        include_str!("../filetests/target/gen/constant_table.shrew"),
    );
}

/// Uniforms pulled from their buffers: a default-block array and a UBO array at per-pixel
/// indices, and a UBO element at a constant index past the 64 GRFs of push constants.
#[test]
fn pulled_uniforms() {
    check(
        "pulled_uniforms.shrew",
        include_str!("../filetests/target/gen/pulled_uniforms.shrew"),
    );
}

/// `sign` on positive, negative and zero values (floor gives zeros), and the mid-end's rules
/// for the sign of an absolute value.
#[test]
fn sign() {
    check(
        "sign.shrew",
        include_str!("../filetests/target/gen/sign.shrew"),
    );
}

/// `tan` through the mid-end's lowering to `sin / cos` on the math unit.
#[test]
fn tangent() {
    check(
        "tangent.shrew",
        include_str!("../filetests/target/gen/tangent.shrew"),
    );
}

/// `atan`, `atan2`, `asin` and `acos` through the mid-end's polynomial approximations (square
/// root, division, fused multiply-adds and selects), within asin's error bound.
#[test]
fn inverse_trigonometry() {
    check_within(
        "inverse_trig.shrew",
        include_str!("../filetests/target/gen/inverse_trig.shrew"),
        4e-4,
    );
}

/// An output read back and written again (`gl_FragColor.xy = gl_FragColor.yx + 1.0`): it
/// lives in a temporary until the render-target write.
#[test]
fn output_read_back() {
    check(
        "output_read_back.shrew",
        include_str!("../filetests/target/gen/output_read_back.shrew"),
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
    let source = include_str!("../filetests/target/gen/accumulate.shrew");
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
        include_str!("../filetests/target/gen/texture_sampling.shrew"),
    );
}

/// SSBO stores, loads of what was stored, and atomics from fragments: discarded pixels and
/// helpers write nothing (the stores are predicated on the live pixels).
#[test]
fn ssbo_stores_loads_and_atomics() {
    check(
        "ssbo_stores_loads_and_atomics",
        include_str!("../filetests/target/gen/ssbo_stores_loads_and_atomics.shrew"),
    );
}

/// Helper pixels (the draw's uncovered one) run for their quad's derivatives but write no
/// memory, in a shader that does not discard.
#[test]
fn helpers_write_no_memory() {
    check(
        "helpers_write_no_memory",
        include_str!("../filetests/target/gen/helpers_write_no_memory.shrew"),
    );
}

/// Elements of an array of arrays of textures: each its own binding table entry.
#[test]
fn texture_array_elements() {
    check(
        "texture_array_elements",
        include_str!("../filetests/target/gen/texture_array_elements.shrew"),
    );
}

/// Fetches at LOD 0 (Gen9's `ld_lz`) and 1, sizes and mip counts, and the LOD query.
#[test]
fn texel_fetches_and_queries() {
    check(
        "texel_fetches_and_queries",
        include_str!("../filetests/target/gen/texel_fetches_and_queries.shrew"),
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
        count: vertices,
        resources: Resources {
            uniform_data: (0..256).flat_map(|_| small().to_le_bytes()).collect(),
            ..Resources::default()
        },
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
        let attributes: Vec<[u32; 4]> = (0..vertices).map(|_| [0; 4].map(|_| small())).collect();
        let values = attributes
            .iter()
            .map(|a| a.iter().map(|&x| x as u64).collect())
            .collect();
        draw.attributes.insert(layout.offset / 16, attributes);
        launch.inputs.insert(var.name.clone(), values);
    }
    let mut resources = draw.resources.clone();
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
    let source = include_str!("../filetests/target/gen/scratch.shrew");
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
        include_str!("../filetests/target/gen/workgroups_barriers_and_shared_memory.shrew"),
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
        include_str!("../filetests/target/gen/reduction_with_barriers_in_a_loop.shrew"),
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
