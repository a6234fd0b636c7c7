//! What the Gen backend's kernels must look like, beyond computing what the interpreter does
//! (the target filetests' `// run:` lines and `emulators.rs` check that): the rules' effect on
//! the instructions, loops accumulating in place, the driver's choice of variants once SIMD8
//! spills, scratch messages, and no copy of a register onto itself. Everything goes through
//! the target interface; listings are Mesa's assembly.

use shrew_engine::ir::{Shader, Stage};
use shrew_engine::text;
use shrew_harness::differential::{Run, compiled, optimized, run_on_target};
use shrew_targets::Kernel;
use std::path::{Path, PathBuf};

fn gen9() -> &'static shrew_targets::Target {
    shrew_targets::lookup("gen9").unwrap()
}

fn parse(source: &str, name: &str) -> Shader {
    text::parse(source, name).unwrap_or_else(|e| panic!("{e}"))
}

/// The Gen9 listing of a target filetest's shader at `width` after the default pipeline.
fn listing(file: &str, width: u8) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("filetests/target/gen")
        .join(file);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let kernel = compiled(&parse(&source, file), "default", gen9(), Some(width))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    kernel.listing().unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The Gen rules: a division by a constant becomes a multiplication by its reciprocal (no
/// `math fdiv`), and negated or absolute products written to the colour (a send takes no
/// modifiers) move the modifier onto the product's sources (no `mov`).
#[test]
fn gen_rules_divisors_and_modifiers() {
    let listing = listing("gen_rules.shrew", 8);
    assert!(!listing.contains("fdiv"), "{listing}");
    let movs = listing.lines().filter(|l| l.contains("mov(")).count();
    assert_eq!(movs, 0, "{listing}");
}

/// A loop's `r += x` on a vector adds into the loop-carried register in place, component by
/// component: no copies in the loop body (from the loop's label to its `while`).
#[test]
fn accumulation_in_a_loop_is_in_place() {
    let listing = listing("accumulate.shrew", 8);
    let lines: Vec<&str> = listing.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.contains("while("))
        .expect("a loop");
    let target = lines[end]
        .split("JIP: ")
        .nth(1)
        .and_then(|label| label.split_whitespace().next())
        .expect("the loop's label");
    let start = lines
        .iter()
        .position(|l| *l == format!("{target}:"))
        .expect("the label");
    assert!(
        lines[start..end].iter().all(|l| !l.contains("mov(")),
        "{listing}"
    );
}

/// Temporaries kept in scratch memory are addressed dword by dword in each channel's copy:
/// DWord scattered reads and writes.
#[test]
fn temporaries_in_scratch_memory() {
    let listing = listing("scratch.shrew", 16);
    assert!(listing.contains("DWORD scattered write"), "{listing}");
    assert!(listing.contains("DWORD scattered read"), "{listing}");
}

/// A shader keeping `values` sines live at once: a chain `s(k) = sin(s(k-1) + k)` summed from
/// the last back to the first, written to the colour.
fn pressure(values: usize) -> String {
    let mut source = String::from(
        "shader fragment\nvar shader_out f32x4 @color (location=0)\n\nentry fn main() {\nb0:\n    32x4 %0 = load_frag_coord\n    32 %1 = mov %0.x\n",
    );
    for k in 0..values {
        let previous = if k == 0 { 1 } else { 2 * k };
        source += &format!(
            "    32 %{c} = load_const ({k}.25)\n    32 %{a} = fadd %{previous}, %{c}\n    32 %{s} = fsin %{a}\n",
            c = 1000 + k,
            a = 2000 + k,
            s = 2 + 2 * k
        );
    }
    let sums = 2 + 2 * values;
    source += &format!("    32 %{sums} = mov %{}\n", 2 * values);
    for k in 1..values {
        source += &format!(
            "    32 %{} = fadd %{}, %{}\n",
            sums + k,
            sums + k - 1,
            2 * (values - k)
        );
    }
    let total = sums + values - 1;
    source += &format!(
        "    32x4 %{v} = vec4 %{total}, %{total}, %{total}, %{total}\n    32 %{d} = deref_var @color\n    store_deref %{d}, %{v} (write_mask=xyzw)\n    return\n}}\n",
        v = 3000,
        d = 3001
    );
    source
}

/// More values live at once than SIMD8 has registers: the kernel spills to scratch and still
/// computes what the interpreter does; the driver's choice of variants keeps SIMD8 and leaves
/// SIMD16 and SIMD32 out, as Mesa does once SIMD8 spills.
#[test]
fn pressure_spills_and_the_variants_follow_mesa() {
    let shader = parse(&pressure(140), "pressure.shrew");
    for target in ["gen7", "gen75", "gen8", "gen9"] {
        for width in [8, 16, 32] {
            let run = Run {
                tolerance: 1e-3,
                ..Run::new(target, Some(width))
            };
            run_on_target(&shader, &run).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let optimized = optimized(&shader, "default", gen9()).unwrap();
    let variants = gen9().compiler().unwrap().variants(&optimized);
    let simd8 = variants[0].as_ref().expect("SIMD8 compiles");
    let figure = |kernel: &dyn Kernel, name: &str| {
        let figures = kernel.statistics();
        figures.iter().find(|(n, _)| *n == name).unwrap().1
    };
    assert!(
        figure(simd8.as_ref(), "spills") > 0 && figure(simd8.as_ref(), "fills") > 0,
        "{}",
        simd8.statistics_line()
    );
    for (variant, width) in variants[1..].iter().zip([16, 32]) {
        let error = variant.as_ref().err().expect("left out");
        assert_eq!(error.width, Some(width));
        assert!(error.message.contains("spill"), "{}", error.message);
    }
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
        let shader = parse(&std::fs::read_to_string(path).unwrap(), &name);
        let widths: &[u8] = if shader.stage == Stage::Vertex {
            &[8]
        } else {
            &[8, 16, 32]
        };
        for mid_end in ["none", "default"] {
            for &width in widths {
                // What the backend cannot compile yet has no moves to look at.
                let Ok(kernel) = compiled(&shader, mid_end, gen9(), Some(width)) else {
                    continue;
                };
                kernels += 1;
                let listing = kernel.listing().unwrap();
                if let Some(line) = listing.lines().find(|l| copies_onto_itself(l)) {
                    panic!("{name} -p {mid_end} SIMD{width}: {line}");
                }
            }
        }
    }
    assert!(kernels >= 40, "only {kernels} kernels compiled");
}

/// Whether a listing line is a `mov` without modifiers writing each channel's element with
/// itself: `mov(N) gR.S<H>T gR.S<V,W,H'>T` whose source region walks the destination's
/// elements, channel `k` at `k / W * V + k % W * H'` and `k * H`.
fn copies_onto_itself(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [_, mov, dst, src, ..] = words.as_slice() else {
        return false;
    };
    let Some(exec) = mov
        .strip_prefix("mov(")
        .and_then(|n| n.strip_suffix(')'))
        .and_then(|n| n.parse::<u32>().ok())
    else {
        return false;
    };
    let region = |operand: &str| -> Option<(String, Vec<u32>, String)> {
        let (register, rest) = operand.split_once('<')?;
        let (numbers, ty) = rest.split_once('>')?;
        let numbers = numbers
            .split(',')
            .map(|n| n.parse().ok())
            .collect::<Option<Vec<u32>>>()?;
        Some((register.to_string(), numbers, ty.to_string()))
    };
    let (Some((dst_reg, dst_stride, dst_ty)), Some((src_reg, src_region, src_ty))) =
        (region(dst), region(src))
    else {
        return false;
    };
    let ([h], [v, w, hs]) = (dst_stride.as_slice(), src_region.as_slice()) else {
        return false;
    };
    let width = (*w).max(1);
    dst_reg == src_reg
        && dst_ty == src_ty
        && !src.starts_with('-')
        && !src.starts_with("(abs)")
        && (0..exec).all(|k| k / width * v + k % width * hs == k * h)
}

#[test]
fn a_copy_onto_itself_is_recognized() {
    let copy = "0x00000060: mov(8)          g6<1>UD         g6<8,8,1>UD       { align1 1Q };";
    assert!(copies_onto_itself(copy));
    for other in [
        "0x00000060: mov(8)          g6<1>UD         g7<8,8,1>UD       { align1 1Q };",
        "0x00000060: mov(8)          g6<1>UD         -g6<8,8,1>D       { align1 1Q };",
        "0x00000060: mov(8)          g6<1>UD         g6<0,1,0>UD       { align1 1Q };",
        "0x00000060: mov.sat(8)      g6<1>F          g6<8,8,1>F        { align1 1Q };",
        "0x00000060: mov(8)          g6<1>UD         0x00000000UD      { align1 1Q };",
    ] {
        assert!(!copies_onto_itself(other), "{other}");
    }
}

/// A sampler index past the descriptor's four bits is a compile error at the texture
/// instruction, naming the field, not a descriptor whose sampler spills into other fields.
#[test]
fn a_sampler_index_too_wide_for_its_field_is_a_located_error() {
    let source = "shader fragment
var shader_in f32x4 @uv (location=0)
var uniform texture(2d, float) @far (binding=16)
var shader_out f32x4 @color (location=0)

entry fn main() {
b0:
    32 %0 = deref_var @uv
    32x4 %1 = load_deref %0
    32x2 %2 = mov %1.xy
    32 %3 = deref_var @far
    32x4 %4 = tex 2d %3 (texture_deref), %2 (coord)
    32 %5 = deref_var @color
    store_deref %5, %4 (write_mask=xyzw)
    return
}
";
    let error = match compiled(&parse(source, "far.shrew"), "default", gen9(), Some(8)) {
        Ok(_) => panic!("compiled a sampler index of 16"),
        Err(error) => error,
    };
    assert!(error.contains("`tex`"), "{error}");
    assert!(
        error.contains("sampler_index = 16 does not fit its 4-bit field"),
        "{error}"
    );
}

/// Image loads and stores are typed surface messages, eight channels each: at every
/// generation and width the emulator computes what the interpreter does, the images compared
/// texel by texel.
#[test]
fn images_load_and_store_through_typed_surface_messages() {
    const SHADER: &str = "#version 430
        layout(local_size_x = 8, local_size_y = 4) in;
        layout(rgba32f) uniform image2D src;
        layout(rgba32f) uniform image2D dst;
        void main() {
            ivec2 c = ivec2(gl_GlobalInvocationID.xy);
            vec4 v = imageLoad(src, ivec2((c.x + 3) & 7, c.y));
            imageStore(dst, c, v * 2.0 + vec4(c, 0.0, 1.0));
        }";
    let Some(shader) = shrew_tests::shader_from_glsl(SHADER, shrew_engine::ir::Stage::Compute)
    else {
        return;
    };
    for target in ["gen7", "gen75", "gen8", "gen9"] {
        for width in [8, 16, 32] {
            let run = Run {
                workgroups: [1, 2, 1],
                ..Run::new(target, Some(width))
            };
            run_on_target(&shader, &run).unwrap_or_else(|e| panic!("{target} SIMD{width}: {e}"));
        }
    }
}

/// Stores under write masks (each run of written components its own untyped write, 64-bit
/// ones split at four dwords) and booleans in shared memory (0 or 1 there, 0 or all ones in
/// registers): the emulator computes what the interpreter does.
#[test]
fn partial_and_boolean_stores_to_buffers_and_shared_memory() {
    const SHADER: &str = "#version 430
        layout(local_size_x = 16) in;
        layout(std430, binding = 0) buffer B { vec4 v[16]; dvec4 d[16]; uint r[16]; } b;
        shared vec4 s[16];
        shared bool flag[16];
        void main() {
            uint i = gl_LocalInvocationIndex;
            s[i] = vec4(1.0);
            s[i].yw = vec2(float(i), 2.0 * float(i));
            flag[i] = (b.r[i] & 1u) != 0u;
            barrier();
            b.v[i].xz = s[(i + 1u) & 15u].yw;
            b.d[i].yzw = dvec3(double(i), 3.0, double(i) * 0.5);
            b.r[i] = flag[(i + 3u) & 15u] ? 7u : 9u;
        }";
    let Some(shader) = shrew_tests::shader_from_glsl(SHADER, shrew_engine::ir::Stage::Compute)
    else {
        return;
    };
    for target in ["gen8", "gen9"] {
        for width in [8, 16] {
            let run = Run::new(target, Some(width));
            run_on_target(&shader, &run).unwrap_or_else(|e| panic!("{target} SIMD{width}: {e}"));
        }
    }
}

/// Vertex shaders with more attributes than the payload holds beside the program: those past
/// a quarter of the register file's worth come from the vertex's URB entry (SIMD8 reads),
/// and the emulator computes what the interpreter does on every Gen8+ generation.
#[test]
fn vertex_attributes_past_the_payload_are_read_from_the_urb() {
    const SHADER: &str = "#version 410
        layout(location = 0) in vec4 a[24];
        layout(location = 24) in dvec4 d[3];
        out vec4 sum;
        void main() {
            vec4 s = vec4(0.0);
            for (int i = 0; i < 24; i++)
                s += a[i] * float(i + 1);
            sum = s + vec4(d[0] + d[1] * 2.0 + d[2]);
            gl_Position = a[0];
        }";
    let Some(shader) = shrew_tests::shader_from_glsl(SHADER, shrew_engine::ir::Stage::Vertex)
    else {
        return;
    };
    for target in ["gen8", "gen9"] {
        run_on_target(&shader, &Run::new(target, Some(8)))
            .unwrap_or_else(|e| panic!("{target}: {e}"));
    }
}
