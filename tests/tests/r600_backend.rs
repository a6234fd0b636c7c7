//! What the R600 backend's kernels must look like, beyond computing what the interpreter does
//! (the target filetests' `// run:` lines and `emulators.rs` check that): registers shared
//! across a loop, what each chip refuses, arrays indexed in registers, subroutines. Everything
//! goes through the target interface; listings are Mesa's assembly.

use shrew_engine::ir::Shader;
use shrew_engine::text;
use shrew_harness::differential::{Run, compiled, run_on_target};
use shrew_targets::{Kernel, Target};
use std::path::Path;

const CHIPS: [&str; 4] = ["r600", "r700", "evergreen", "cayman"];

fn target(name: &str) -> &'static Target {
    shrew_targets::lookup(name).unwrap()
}

/// A target filetest's shader.
fn shader(file: &str) -> Shader {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("filetests/target/r600")
        .join(file);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    text::parse(&source, file).unwrap_or_else(|e| panic!("{e}"))
}

/// `file`'s kernel for `chip` after the mid-end pipeline `mid_end`.
fn kernel(file: &str, mid_end: &str, chip: &str) -> Box<dyn Kernel> {
    compiled(&shader(file), mid_end, target(chip), None)
        .unwrap_or_else(|e| panic!("{file} on {chip}: {e}"))
}

/// Runs `shader` over `workgroups` on Evergreen and Cayman (the chips with RATs and the LDS)
/// against the interpreter.
fn on_the_chips_with_rats(shader: &Shader, workgroups: [u32; 3]) {
    for chip in ["evergreen", "cayman"] {
        let run = Run {
            workgroups,
            ..Run::new(chip, None)
        };
        run_on_target(shader, &run).unwrap_or_else(|e| panic!("{chip}: {e}"));
    }
}

fn figure(kernel: &dyn Kernel, name: &str) -> u64 {
    let figures = kernel.statistics();
    figures.iter().find(|(n, _)| *n == name).unwrap().1
}

/// A swap of two components on every trip of a loop keeps one register for the loop value, its
/// swap and the output, as Mesa does.
#[test]
fn swap_in_a_loop_keeps_one_register() {
    for chip in CHIPS {
        let kernel = kernel("swap_in_a_loop.shrew", "default", chip);
        assert_eq!(
            figure(kernel.as_ref(), "gprs"),
            1,
            "{chip}:\n{}",
            kernel.listing().unwrap()
        );
    }
}

/// Fine derivatives: Evergreen and Cayman have them, R600 and R700 refuse the shader.
#[test]
fn fine_derivatives_need_evergreen() {
    for chip in ["r600", "r700"] {
        let error = compiled(&shader("derivatives.shrew"), "default", target(chip), None)
            .err()
            .expect("refused");
        assert!(error.contains("fine derivatives need Evergreen"), "{error}");
    }
}

/// R600 has no READ_SCRATCH: arrays too long for registers are a compile error there.
#[test]
fn scratch_memory_needs_r700() {
    let error = compiled(&shader("scratch.shrew"), "default", target("r600"), None)
        .err()
        .expect("no READ_SCRATCH");
    assert!(error.contains("READ_SCRATCH"), "{error}");
}

/// A temporary array stored at run-time indices stays in GPRs: on R600 and R700 addressed
/// relative to AR (R600 has no scratch memory to fall back on), on Evergreen and Cayman as
/// selects among its elements, which the compiler finds cheaper than the scratch memory the
/// indexed lowering uses there. No chip touches scratch memory.
#[test]
fn temporaries_in_registers() {
    for chip in CHIPS {
        let listing = kernel("indexed.shrew", "default", chip).listing().unwrap();
        if matches!(chip, "r600" | "r700") {
            assert!(listing.contains("MOVA_INT"), "{chip}:\n{listing}");
            assert!(listing.contains("+AR.x]"), "{chip}:\n{listing}");
        }
        assert!(!listing.contains("SCRATCH"), "{chip}:\n{listing}");
    }
}

/// Functions left uninlined run as subroutines (CALL and RET), three calls in all; the binary
/// decodes past the end of the main program into the subroutines, to the same program; main's
/// registers, then each callee's window above its callers'.
#[test]
fn subroutines() {
    let kernel = kernel("calls.shrew", "none", "evergreen");
    let listing = kernel.listing().unwrap();
    let calls = (listing.lines())
        .filter(|l| l.split_whitespace().nth(3) == Some("CALL"))
        .count();
    assert_eq!(calls, 3, "{listing}");
    let backend = target("evergreen").backend().unwrap();
    let decoded = backend.decode(&kernel.binary().unwrap()).unwrap();
    assert_eq!(decoded, listing);
    assert!(figure(kernel.as_ref(), "gprs") > 10, "{listing}");
}

/// Compute shaders on Evergreen and Cayman: workgroups of more than one wavefront, the local,
/// workgroup and dispatch IDs, image stores as RAT writes (some lanes masked off): the emulator
/// computes what the interpreter does, the images compared texel by texel. R600 and R700 have
/// no RATs and refuse them.
#[test]
fn compute_shaders_store_images_through_rats() {
    // Two wavefronts a workgroup; the invocations of odd rows write, one texel each (the
    // arithmetic exact, so that a fused multiply-add rounds as the unfused one).
    const SHADER: &str = "#version 430
        layout(local_size_x = 8, local_size_y = 16) in;
        layout(rgba32f) uniform image2D dst;
        uniform vec4 offset;
        void main() {
            uvec3 l = gl_LocalInvocationID;
            if ((l.y & 1u) == 1u) {
                ivec2 c = ivec2(l.x, l.y / 2u);
                vec4 ids = vec4(c, gl_WorkGroupID.y, gl_NumWorkGroups.x);
                imageStore(dst, c, ids * 2.0 + offset + vec4(gl_LocalInvocationIndex));
            }
        }";
    let Some(shader) = shrew_tests::shader_from_glsl(SHADER, shrew_engine::ir::Stage::Compute)
    else {
        return;
    };
    on_the_chips_with_rats(&shader, [1, 1, 1]);
    for chip in ["r600", "r700"] {
        let error = compiled(&shader, "default", target(chip), None)
            .err()
            .expect("refused");
        assert!(error.contains("need Evergreen or Cayman"), "{error}");
    }
}

/// Image loads and atomics on Evergreen and Cayman: a RAT NOP_RTN returns the texel and each
/// atomic its texel's old value, read back by a fetch; atomics on texels every lane of a row
/// updates keep what the interpreter's order gives whatever the hardware's (max, or).
#[test]
fn compute_shaders_load_and_update_images_through_rats() {
    const SHADER: &str = "#version 430
        layout(local_size_x = 8, local_size_y = 8) in;
        layout(rgba32f, binding = 0) uniform readonly image2D src;
        layout(r32ui, binding = 1) uniform uimage2D counters;
        layout(r32ui, binding = 2) uniform uimage2D rows;
        layout(rgba32f, binding = 3) uniform writeonly image2D dst;
        void main() {
            ivec2 c = ivec2(gl_LocalInvocationID.xy);
            vec4 t = imageLoad(src, c.yx);
            uint old = imageAtomicAdd(counters, c, 5u);
            uint swapped = imageAtomicCompSwap(counters, c, old + 5u, uint(c.x * 3));
            uint missed = imageAtomicCompSwap(counters, c, 1u, 2u);
            imageAtomicMax(rows, ivec2(c.y, 0), uint(c.x));
            imageAtomicOr(rows, ivec2(c.y, 1), 1u << c.x);
            imageStore(dst, c, vec4(t.xy, uintBitsToFloat(old ^ swapped), uintBitsToFloat(missed)));
        }";
    let Some(shader) = shrew_tests::shader_from_glsl(SHADER, shrew_engine::ir::Stage::Compute)
    else {
        return;
    };
    on_the_chips_with_rats(&shader, [1, 1, 1]);
}

/// `textureQueryLod`: GET_LOD, its LOD from the quad's coordinates like an implicit-LOD sample;
/// the hardware's x (the computed LOD) and y (the level accessed) are the IR's y and x.
#[test]
fn lod_queries_are_get_lod() {
    const SHADER: &str = "#version 450
        layout(binding = 0) uniform sampler2D tex;
        in vec2 uv;
        out vec4 color;
        void main() {
            vec2 lod = textureQueryLod(tex, uv * vec2(37.0, 5.0));
            color = vec4(lod, lod.x - lod.y, 1.0);
        }";
    let Some(shader) = shrew_tests::fragment_from_glsl(SHADER) else {
        return;
    };
    for chip in CHIPS {
        let listing = compiled(&shader, "default", target(chip), None)
            .unwrap_or_else(|e| panic!("{chip}: {e}"))
            .listing()
            .unwrap();
        assert!(listing.contains("GET_LOD"), "{chip}:\n{listing}");
        run_on_target(&shader, &Run::new(chip, None)).unwrap_or_else(|e| panic!("{chip}: {e}"));
    }
}

/// `gl_HelperInvocation`: true in every lane, cleared by a fetch in valid pixel mode that
/// only covered pixels run. The differential run's triangle leaves a helper pixel in a quad,
/// whose value reaches its covered neighbours through the derivatives.
#[test]
fn helper_invocations_are_the_pixels_valid_pixel_mode_skips() {
    const SHADER: &str = "#version 450
        out vec4 color;
        void main() {
            float helper = float(gl_HelperInvocation);
            color = vec4(abs(dFdx(helper)), abs(dFdy(helper)), helper, 1.0);
        }";
    let Some(shader) = shrew_tests::fragment_from_glsl(SHADER) else {
        return;
    };
    for chip in CHIPS {
        run_on_target(&shader, &Run::new(chip, None)).unwrap_or_else(|e| panic!("{chip}: {e}"));
    }
}

/// Shared memory on Evergreen and Cayman: the workgroup's LDS, written and read (LDS_WRITE,
/// LDS_READ_RET through the output queue, vectors and arrays at run-time offsets) and updated
/// atomically (LDS_ADD_RET, LDS_CMP_XCHG_RET...) by two wavefronts that see each other's
/// writes only across GROUP_BARRIERs; two workgroups, each with its own LDS. The emulator
/// computes what the interpreter does; without the barriers' wait a wavefront would read the
/// other's data before it is written.
#[test]
fn shared_memory_is_the_lds_across_barriers() {
    const SHADER: &str = "#version 430
        layout(local_size_x = 80) in;
        layout(std430, binding = 0) buffer B { uint rows[160]; uint total[2]; int low[2]; } b;
        shared uint data[80];
        shared uint swaps[80];
        shared uvec2 pairs[40];
        shared uint sum;
        shared int low;
        void main() {
            uint i = gl_LocalInvocationIndex;
            uint g = gl_WorkGroupID.x;
            data[i] = i * 3u + g;
            swaps[i] = i * 3u + g;
            if (i < 40u)
                pairs[i] = uvec2(i, 79u - i);
            if (i == 0u) {
                sum = 0u;
                low = 1000;
            }
            barrier();
            atomicAdd(sum, data[79u - i]);
            atomicMin(low, int(i) - 60);
            uint seen = atomicCompSwap(swaps[(i + 40u) % 80u], (i + 40u) % 80u * 3u + g, i);
            barrier();
            uvec2 p = pairs[i / 2u];
            b.rows[g * 80u + i] = swaps[i] | seen << 8 | p.x << 16 | p.y << 24;
            if (i == 79u) {
                b.total[g] = sum;
                b.low[g] = low;
            }
        }";
    let Some(shader) = shrew_tests::shader_from_glsl(SHADER, shrew_engine::ir::Stage::Compute)
    else {
        return;
    };
    on_the_chips_with_rats(&shader, [2, 1, 1]);
}

/// SSBOs on Evergreen and Cayman: loads through the RAT's buffer resource after stores
/// (STORE_RAW, with write masks and 64-bit values) and atomics with their returns (ADD_RTN,
/// CMPXCHG_INT_RTN...), in compute and fragment shaders: the emulator computes what the
/// interpreter does, the SSBOs compared byte by byte. Vertex shaders have no RATs.
#[test]
fn ssbos_load_store_and_update_atomically_through_rats() {
    // Two wavefronts; atomics run in invocation order on both, so their returns agree.
    const COMPUTE: &str = "#version 430
        layout(local_size_x = 80) in;
        layout(std430, binding = 0) buffer B {
            uint counter; int low; uint flags; uint pad; uvec2 v[80]; double d[40];
        } b;
        void main() {
            uint i = gl_LocalInvocationIndex;
            uint before = atomicAdd(b.counter, 2u);
            atomicMin(b.low, int(i) - 40);
            atomicOr(b.flags, 1u << (i & 31u));
            uint swapped = atomicCompSwap(b.v[i].y, b.v[i].y, i + 7u);
            b.v[i].x = before / 2u + swapped;
            if (i < 40u)
                b.d[i] = double(i) * 0.25;
        }";
    const FRAGMENT: &str = "#version 430
        layout(std430, binding = 1) buffer C { uint hits; uint seen[64]; } c;
        out vec4 color;
        void main() {
            uint n = atomicAdd(c.hits, 1u);
            uint slot = uint(gl_FragCoord.x) + 8u * uint(gl_FragCoord.y);
            c.seen[slot & 63u] = n < 1000u ? 1u : 2u;
            color = vec4(float(c.seen[slot & 63u]));
        }";
    let (Some(compute), Some(fragment)) = (
        shrew_tests::shader_from_glsl(COMPUTE, shrew_engine::ir::Stage::Compute),
        shrew_tests::shader_from_glsl(FRAGMENT, shrew_engine::ir::Stage::Fragment),
    ) else {
        return;
    };
    for shader in [&compute, &fragment] {
        on_the_chips_with_rats(shader, [1, 1, 1]);
    }
}
