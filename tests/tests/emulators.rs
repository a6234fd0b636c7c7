//! The shipped examples and IR test files on every emulator, against the reference interpreter
//! ([`shrew_harness::differential`]): fragment shaders on every Gen generation at SIMD8, 16 and
//! 32 and on every R600 chip, vertex shaders on Gen8 and later (the emulator reads Gen8's URB
//! layout) and on every R600 chip, compute shaders on every Gen generation (and on Evergreen
//! and Cayman in `r600_backend.rs`). The target filetests (`tests/filetests/target`) hold the
//! backends' own shaders, with `// run:` lines.
//!
//! Left out: alu_float.shrew (16-bit floats, which no backend compiles yet, and a precise fused
//! multiply-add R600 and R700 cannot round once), constant_table.shrew, indirect_arrays.shrew
//! and types.shrew, which index arrays out of bounds on random inputs (GL leaves such reads
//! undefined), and the files without a colour output or an SSBO (nothing to compare).

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

/// The compute example: shared memory written, a barrier, and a neighbour's value read back
/// (on Evergreen and Cayman through the LDS).
#[test]
fn shared_rotate_example() {
    check(
        "examples/shared_rotate.shrew",
        &[&GEN[..], &["evergreen", "cayman"]].concat(),
        [1, 1, 1],
    );
}

/// Arrays of UBOs and SSBOs at run-time block indices: the accesses under branches on the
/// index (`lower-block-indices`), on every target with compute shaders.
#[test]
fn block_arrays_at_run_time_indices() {
    check(
        "tests/ir/block_arrays.shrew",
        &[&GEN[..], &["evergreen", "cayman"]].concat(),
        [2, 1, 1],
    );
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

/// A fragment shader whose `if`s (`loops` false) or counted loops (of `trips` iterations) nest
/// `depth` deep, each level changing `x`, which starts as the input's first component and ends
/// as the colour.
fn nested_shader(depth: usize, loops: bool, trips: u32) -> String {
    let mut text = String::from(
        "shader fragment\nvar shader_in f32x4 @v (location=0)\n\
         var shader_out f32x4 @color (location=0)\nvar function_temp f32 @x\n",
    );
    for k in 0..depth * usize::from(loops) {
        text += &format!("var function_temp i32 @i{k}\n");
    }
    text += "entry fn main() {\nb0:\n    32 %0 = deref_var @x\n    32 %1 = deref_var @v\n\
             32 %2 = load_const (0)\n    32 %3 = deref_array %1[%2]\n    32 %4 = load_deref %3\n\
             store_deref %0, %4 (write_mask=x)\n    32 %5 = load_const (1)\n    jump b1\n";
    // Level k: blocks from 3k + 1; its merge (and a loop's continue block) after all levels.
    let end = 3 * depth + 1;
    let merge = |k: usize| end + 2 * (depth - k);
    let cont = |k: usize| merge(k) - 1;
    let mut value = 6;
    let mut next = || {
        value += 1;
        value - 1
    };
    for k in 0..depth {
        let (header, body) = (3 * k + 1, 3 * k + 2);
        let inner = if k + 1 < depth { body + 2 } else { end };
        let (x, c, sum, cond) = (next(), next(), next(), next());
        if loops {
            let (i, now, n) = (next(), next(), next());
            text += &format!(
                "b{header}: loop merge=b{m} continue=b{cnt}\n    32 %{i} = deref_var @i{k}\n\
                 32 %{now} = load_deref %{i}\n    32 %{n} = load_const ({trips})\n\
                 1 %{cond} = ilt %{now}, %{n}\n    branch %{cond}, b{body}, b{m}\n",
                m = merge(k),
                cnt = cont(k),
            );
        } else {
            text += &format!(
                "b{header}: selection merge=b{m}\n    32 %{x} = load_deref %0\n\
                 32 %{c} = load_const ({k}.5)\n    1 %{cond} = flt %{c}, %{x}\n\
                 branch %{cond}, b{body}, b{m}\n",
                m = merge(k),
            );
        }
        let (y, half) = (next(), next());
        text += &format!(
            "b{body}:\n    32 %{y} = load_deref %0\n    32 %{half} = load_const (0.75)\n\
             32 %{sum} = ffma %{y}, %{half}, %{half}\n    store_deref %0, %{sum} (write_mask=x)\n"
        );
        if loops && k + 1 < depth {
            let i = next();
            text += &format!(
                "    32 %{i} = deref_var @i{}\n    store_deref %{i}, %2 (write_mask=x)\n",
                k + 1
            );
        }
        text += &format!(
            "    jump b{}\nb{}:\n    jump b{}\n",
            body + 1,
            body + 1,
            inner
        );
    }
    text += &format!(
        "b{end}:\n    jump b{}\n",
        if loops {
            cont(depth - 1)
        } else {
            merge(depth - 1)
        }
    );
    for k in (0..depth).rev() {
        if loops {
            let (i, now, inc) = (next(), next(), next());
            text += &format!(
                "b{}:\n    32 %{i} = deref_var @i{k}\n    32 %{now} = load_deref %{i}\n\
                 32 %{inc} = iadd %{now}, %5\n    store_deref %{i}, %{inc} (write_mask=x)\n\
                 jump b{}\n",
                cont(k),
                3 * k + 1
            );
        } else {
            text += &format!("b{}:\n    jump b{}\n", cont(k), merge(k));
        }
        let after = if k == 0 {
            merge(0) + 1
        } else if loops {
            cont(k - 1)
        } else {
            merge(k - 1)
        };
        text += &format!("b{}:\n    jump b{after}\n", merge(k));
    }
    let (x, out, color) = (next(), next(), next());
    text += &format!(
        "b{}:\n    32 %{x} = load_deref %0\n    32x4 %{out} = vec4 %{x}, %{x}, %{x}, %{x}\n\
         32 %{color} = deref_var @color\n    store_deref %{color}, %{out} (write_mask=xyzw)\n\
         return\n}}\n",
        merge(0) + 1
    );
    text
}

/// A fragment shader of `regions` regions one after the other, each computing `count`
/// products of the value before it, running a loop, and summing the products after the loop in
/// reverse order: in each region, all its products are live across its loop at once.
fn values_live_across_loops(count: usize, regions: usize) -> String {
    let mut text = String::from(
        "shader fragment\nvar shader_in f32x4 @v (location=0)\n\
         var shader_out f32x4 @color (location=0)\nvar function_temp f32 @i\n\
         var function_temp f32 @y\nentry fn main() {\nb0:\n    32 %0 = deref_var @v\n\
         32 %1 = load_const (0)\n    32 %2 = deref_array %0[%1]\n    32 %3 = load_deref %2\n\
         32 %4 = load_const (1)\n    32 %5 = deref_array %0[%4]\n    32 %6 = load_deref %5\n\
         32 %7 = deref_var @i\n    32 %8 = deref_var @y\n    32 %9 = load_const (0.0)\n\
         32 %10 = load_const (0.5)\n    32 %11 = load_const (1.0)\n",
    );
    let mut last = 11;
    let mut next = || {
        last += 1;
        last
    };
    let mut value = 3;
    for region in 0..regions {
        text += &format!(
            "    store_deref %7, %9 (write_mask=x)\n    store_deref %8, %{value} (write_mask=x)\n"
        );
        let mut products = Vec::new();
        for k in 0..count {
            let (c, p) = (next(), next());
            text +=
                &format!("    32 %{c} = load_const ({k}.25)\n    32 %{p} = fmul %{value}, %{c}\n");
            products.push(p);
        }
        let b = 4 * region + 1;
        let [now, go, y, ffma, i, inc, sum] = [(); 7].map(|()| next());
        text += &format!(
            "    jump b{b}\nb{b}: loop merge=b{exit} continue=b{cont}\n    32 %{now} = load_deref %7\n\
             1 %{go} = flt %{now}, %6\n    branch %{go}, b{body}, b{exit}\nb{body}:\n\
             32 %{y} = load_deref %8\n    32 %{ffma} = ffma %{y}, %10, %10\n\
             store_deref %8, %{ffma} (write_mask=x)\n    jump b{cont}\nb{cont}:\n\
             32 %{i} = load_deref %7\n    32 %{inc} = fadd %{i}, %11\n\
             store_deref %7, %{inc} (write_mask=x)\n    jump b{b}\nb{exit}:\n\
             32 %{sum} = load_deref %8\n",
            body = b + 1,
            cont = b + 2,
            exit = b + 3,
        );
        value = sum;
        for p in products.into_iter().rev() {
            let total = next();
            text += &format!("    32 %{total} = ffma %{value}, %10, %{p}\n");
            value = total;
        }
    }
    let (out, color) = (next(), next());
    text += &format!(
        "    32x4 %{out} = vec4 %{value}, %{value}, %{value}, %{value}\n\
         32 %{color} = deref_var @color\n    store_deref %{color}, %{out} (write_mask=xyzw)\n\
         return\n}}\n"
    );
    text
}

/// Far more values live at once than the GPRs hold (1,200 across a loop, 124 GPRs of four
/// channels): spilling starts from their live hulls, then the exact rounds finish, and the
/// shader runs as the interpreter runs it on the chips that read scratch memory back. Two
/// regions of 700 such values one after the other share their scratch elements.
#[test]
fn values_far_beyond_the_gprs_are_spilled() {
    for (count, regions) in [(1200, 1), (700, 2)] {
        let source = values_live_across_loops(count, regions);
        let shader = text::parse(&source, "live").unwrap_or_else(|e| panic!("{e}"));
        for target in ["r700", "evergreen", "cayman"] {
            if let Err(e) = run_on_target(&shader, &Run::new(target, None)) {
                panic!("{count} values in {regions} regions on {target}: {e}");
            }
        }
    }
}

/// Control flow nested far deeper than a thread's stack holds when every level of a walk over
/// it takes a frame: structurizing, lowering, packing, printing and dropping the trees grow
/// their stack instead, so the shader compiles and runs as the interpreter runs it. (The
/// loops count to 2 at every level, so they are few enough levels for the interpreter.)
#[test]
fn nesting_a_thousand_deep_compiles_on_a_small_stack() {
    let shaders = [
        ("ifs", nested_shader(1000, false, 0)),
        ("loops", nested_shader(12, true, 2)),
    ];
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            for (name, source) in shaders {
                let shader = text::parse(&source, name).unwrap_or_else(|e| panic!("{e}"));
                for (target, width) in [("gen9", Some(8)), ("evergreen", None), ("r600", None)] {
                    if let Err(e) = run_on_target(&shader, &Run::new(target, width)) {
                        panic!("{name} on {target}: {e}");
                    }
                }
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

/// Nesting deeper than R600's CF stack holds (1,020 elements, less the chip's extras: 300
/// loops with their exit tests take 1,500, 1,100 `if`s 1,100) is flattened into dispatch loops
/// (`flatten-deep-cf`), and runs as the interpreter runs it on every chip; without the pass
/// both are rejected as too deep for the stack.
#[test]
fn nesting_deeper_than_the_cf_stack_is_flattened() {
    for (name, source) in [
        ("ifs", nested_shader(1100, false, 0)),
        ("loops", nested_shader(300, true, 1)),
    ] {
        let shader = text::parse(&source, name).unwrap_or_else(|e| panic!("{e}"));
        for target in R600 {
            if let Err(e) = run_on_target(&shader, &Run::new(target, None)) {
                panic!("{name} on {target}: {e}");
            }
        }
    }
}

/// 64-bit values: integers (native on Gen8+, pairs of dwords on Gen7 and R600) and doubles,
/// on every target that has doubles (R600 and R700 get none here).
#[test]
fn sixty_four_bit_values() {
    check(
        "tests/ir/sixty_four_bit.shrew",
        &["gen7", "gen75", "gen8", "gen9", "evergreen", "cayman"],
        [1, 1, 1],
    );
}
