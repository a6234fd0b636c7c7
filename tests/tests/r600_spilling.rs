//! Spilling on the R600 family: fragment shaders whose values need more than the 124 GPRs
//! (hundreds of vec4 values live at once, folded by an order-sensitive integer hash, so that a
//! wrong or stale reload changes the colour) compile on R700, Evergreen and Cayman with spills
//! and fills, and run on their emulators as on the interpreter; R600, which cannot read
//! scratch memory back, refuses them and says why.
//!
//! The shaders are GLSL (through glslang): without glslangValidator the tests are skipped,
//! unless `SHREW_REQUIRE_GLSLANG` is set (CI sets it).

use shrew_engine::ir::Shader;
use shrew_harness::differential::{Run, compiled, run_on_target};
use shrew_targets::Kernel;
use shrew_tests::fragment_from_glsl as from_glsl;

/// The chips that spill.
const SPILLING: [&str; 3] = ["r700", "evergreen", "cayman"];

/// A fragment shader of `body`, which reads `vec4 v`, writes `uvec4 h`, and may loop `n`
/// times (1 to 4, per pixel); the colour is the low 16 bits of each component of `h`.
fn fragment(body: &str) -> String {
    format!(
        "#version 450
layout(location = 0) in vec4 v;
layout(location = 0) out vec4 o;
void main() {{
    int n = int(abs(v.x)) + 1;
{body}
    o = vec4(h & 0xffffu);
}}
"
    )
}

/// `count` vec4 values computed from the input before a loop of `n` trips, each trip folding
/// all of them into the hash: they are all live across the loop.
fn live_across_a_loop(count: usize) -> String {
    let values: String = (0..count)
        .map(|k| {
            format!(
                "    uvec4 a{k} = floatBitsToUint(v * {k}.25 + vec4({k}.5)) ^ uvec4({}u);\n",
                k * 7919
            )
        })
        .collect();
    let fold: String = (0..count)
        .map(|k| format!("        h = (h ^ a{k}) * 16777619u;\n"))
        .collect();
    fragment(&format!(
        "{values}    uvec4 h = uvec4(2166136261u);
    for (int i = 0; i < n; i++) {{
{fold}    }}"
    ))
}

/// A loop of `n` trips that computes `count` vec4 values from the hash so far, then folds them
/// in order in one arm of an `if` and in reverse order in the other: the pressure is inside
/// the loop, and the values live into both arms.
fn live_inside_a_loop_and_an_if(count: usize) -> String {
    let values: String = (0..count)
        .map(|k| {
            format!(
                "        uvec4 b{k} = (h + uvec4({}u)) * uvec4({}u) ^ floatBitsToUint(v * {k}.5);\n",
                k * 7919,
                2 * k + 3
            )
        })
        .collect();
    let forwards: String = (0..count)
        .map(|k| format!("            h = (h ^ b{k}) * 16777619u;\n"))
        .collect();
    let backwards: String = (0..count)
        .rev()
        .map(|k| format!("            h = (h ^ b{k}) * 2246822519u;\n"))
        .collect();
    fragment(&format!(
        "    uvec4 h = floatBitsToUint(v);
    for (int i = 0; i < n; i++) {{
{values}        if (v.y > float(i) - 2.0) {{
{forwards}        }} else {{
{backwards}        }}
    }}"
    ))
}

fn figure(kernel: &dyn Kernel, name: &str) -> u64 {
    let figures = kernel.statistics();
    (figures.iter().find(|(n, _)| *n == name))
        .unwrap_or_else(|| panic!("no figure {name}"))
        .1
}

/// `shader` compiles on every chip that spills, within the GPRs and spilling, and computes
/// there what the interpreter computes.
fn spills_and_agrees(shader: &Shader) {
    for chip in SPILLING {
        let target = shrew_targets::lookup(chip).expect("a target");
        let kernel = compiled(shader, "default", target, None).unwrap_or_else(|e| panic!("{e}"));
        let kernel = kernel.as_ref();
        assert!(figure(kernel, "gprs") <= 124, "{chip}");
        assert!(figure(kernel, "spills") > 0, "{chip}: no spills");
        assert!(figure(kernel, "fills") > 0, "{chip}: no fills");
        assert!(figure(kernel, "scratch_bytes") > 0, "{chip}: no scratch");
        if let Err(e) = run_on_target(shader, &Run::new(chip, None)) {
            panic!("{e}");
        }
    }
}

#[test]
fn values_live_across_a_loop_are_spilled() {
    if let Some(shader) = from_glsl(&live_across_a_loop(160)) {
        spills_and_agrees(&shader);
    }
}

#[test]
fn values_live_inside_a_loop_and_into_both_arms_of_an_if_are_spilled() {
    if let Some(shader) = from_glsl(&live_inside_a_loop_and_an_if(160)) {
        spills_and_agrees(&shader);
    }
}

/// R600 has no READ_SCRATCH: a shader that does not fit its GPRs is an error that says so.
#[test]
fn r600_cannot_spill() {
    let Some(shader) = from_glsl(&live_across_a_loop(160)) else {
        return;
    };
    let target = shrew_targets::lookup("r600").expect("a target");
    let error = compiled(&shader, "default", target, None)
        .err()
        .expect("refused");
    assert!(
        error.contains("GPR limit exceeded") && error.contains("READ_SCRATCH"),
        "{error}"
    );
}
