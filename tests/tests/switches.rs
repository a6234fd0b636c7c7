//! `switch` statements end to end: GLSL (through glslang) and SPIR-V assembly (through
//! `spirv-as`, for what glslang does not emit) translated by the SPIR-V reader, run on the
//! reference interpreter against a model of the switch written here for every selector in
//! -4..=4 (what the shader computes, independently of how the reader lowers it), then on the
//! Gen9, Evergreen and R600 emulators against the interpreter ([`run_on_target`], random
//! inputs: each shader reads its selectors from the floor of an interpolated `vec2 v` in
//! [-4, 4]).
//!
//! Without glslangValidator or spirv-as the tests are skipped, unless `SHREW_REQUIRE_GLSLANG`
//! is set (CI sets it).

use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::Shader;
use shrew_frontend::spirv::{Options, translate};
use shrew_harness::differential::{Run, compiled, run_on_target};
use shrew_tests::fragment_from_glsl as from_glsl;
use std::io::Write;
use std::process::{Command, Stdio};

/// What a shader writes to `o` for selectors `k` and `m`.
type Model = fn(i32, i32) -> [f32; 4];

fn from_assembly(text: &str) -> Option<Shader> {
    let child = Command::new("spirv-as")
        .args(["--target-env", "spv1.0", "-o", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if std::env::var_os("SHREW_REQUIRE_GLSLANG").is_some() => panic!("spirv-as: {e}"),
        Err(e) => {
            eprintln!("skipping a test that needs spirv-as: {e}");
            return None;
        }
    };
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(text.as_bytes())
        .expect("spirv-as reads the assembly");
    let out = child.wait_with_output().expect("spirv-as runs");
    assert!(
        out.status.success(),
        "spirv-as: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let words: Vec<u32> = (out.stdout.chunks_exact(4))
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    Some(translate(&words, &Options::default()).unwrap_or_else(|e| panic!("{e}")))
}

/// The shader on the interpreter for every `k` and `m` in -4..=4, against `model`.
fn agrees_with_model(shader: &Shader, model: Model) {
    let pairs: Vec<(i32, i32)> = (-4..=4)
        .flat_map(|k| (-4..=4).map(move |m| (k, m)))
        .collect();
    let inputs = (pairs.iter())
        .map(|&(k, m)| vec![(k as f32).to_bits() as u64, (m as f32).to_bits() as u64])
        .collect();
    let launch = Launch::invocations(pairs.len()).with_input("v", inputs);
    let result = run(shader, &launch, &mut Resources::default()).expect("the shader runs");
    for (i, &(k, m)) in pairs.iter().enumerate() {
        let got: Vec<f32> = (result.invocation(i).output("o").expect("an output").iter())
            .map(|&v| f32::from_bits(v as u32))
            .collect();
        assert_eq!(got, model(k, m), "k = {k}, m = {m}");
    }
}

/// The shader on the Gen9 (SIMD8 and 16), Evergreen and R600 emulators against the
/// interpreter.
fn agrees_on_emulators(shader: &Shader, targets: &[(&str, Option<u8>)]) {
    for &(target, width) in targets {
        if let Err(e) = run_on_target(shader, &Run::new(target, width)) {
            panic!("{e}");
        }
    }
}

const EVERYWHERE: [(&str, Option<u8>); 4] = [
    ("gen9", Some(8)),
    ("gen9", Some(16)),
    ("evergreen", None),
    ("r600", None),
];

fn check_glsl(body: &str, model: Model) {
    let source = format!(
        "#version 450
layout(location = 0) in vec2 v;
layout(location = 0) out vec4 o;
void main() {{
    int k = int(floor(v.x));
    int m = int(floor(v.y));
    vec4 c = vec4(0.0);
{body}
    o = c;
}}
"
    );
    let Some(shader) = from_glsl(&source) else {
        return;
    };
    agrees_with_model(&shader, model);
    agrees_on_emulators(&shader, &EVERYWHERE);
}

/// Fall-through chains: `case -3` into `case 0` into the default (in the middle of the
/// chain, which glslang lists first) into `case 2` into `case 3`, a case falling through only
/// when a condition fails, and a last case falling off the end.
#[test]
fn fall_through_chains_with_the_default_in_the_middle() {
    check_glsl(
        "    switch (k) {
    case -3: c.x += 1.0;
    case 0: c.x += 2.0;
    default: c.y += 1.0;
    case 2: c.z += 1.0; if (m > 0) break;
    case 3: c.w += 1.0; break;
    case 4: c.x -= 1.0;
    }",
        |k, m| {
            let mut c = [0.0; 4];
            let mut at = match k {
                -3 => 0,
                0 => 1,
                2 => 3,
                3 => 4,
                4 => 5,
                _ => 2,
            };
            loop {
                match at {
                    0 => c[0] += 1.0,
                    1 => c[0] += 2.0,
                    2 => c[1] += 1.0,
                    3 => {
                        c[2] += 1.0;
                        if m > 0 {
                            break;
                        }
                    }
                    4 => {
                        c[3] += 1.0;
                        break;
                    }
                    _ => {
                        c[0] -= 1.0;
                        break;
                    }
                }
                at += 1;
            }
            c
        },
    );
}

/// Breaks nested two and three selections deep inside cases, several literals to one case,
/// and a case that falls into the default after a nested break.
#[test]
fn breaks_nested_in_selections_inside_cases() {
    check_glsl(
        "    switch (k) {
    case 0: case 1: case -4:
        c.x += 1.0;
        if (m > -2) {
            c.y += 1.0;
            if (m > 0) { c.z += 1.0; if (m > 2) break; c.z += 2.0; }
            if (m == 0) break;
            c.w += 1.0;
        }
        c.x += 4.0;
        break;
    case 2:
        c.y += 8.0;
        if (m < 0) { if (m < -2) break; c.y += 1.0; }
    default:
        c.w += 16.0;
    }",
        |k, m| {
            let mut c = [0.0; 4];
            match k {
                0 | 1 | -4 => 'case: {
                    c[0] += 1.0;
                    if m > -2 {
                        c[1] += 1.0;
                        if m > 0 {
                            c[2] += 1.0;
                            if m > 2 {
                                break 'case;
                            }
                            c[2] += 2.0;
                        }
                        if m == 0 {
                            break 'case;
                        }
                        c[3] += 1.0;
                    }
                    c[0] += 4.0;
                }
                2 => 'case: {
                    c[1] += 8.0;
                    if m < 0 {
                        if m < -2 {
                            break 'case;
                        }
                        c[1] += 1.0;
                    }
                    c[3] += 16.0;
                }
                _ => c[3] += 16.0,
            }
            c
        },
    );
}

/// A switch in a loop whose cases `continue` and `break` the loop (from inside selections, so
/// that the switch needs its one-trip loop and routes them), with a switch inside a case of
/// it that continues the outer loop too.
#[test]
fn switches_in_a_loop_continue_and_break_it() {
    check_glsl(
        "    for (int i = 0; i < 6; i++) {
        switch ((k + i) & 3) {
        case 0:
            c.x += 1.0;
            if (m > i) { if (m > 2 * i) break; c.w += 0.5; continue; }
            c.x += 2.0;
        case 1:
            c.y += 1.0;
            if (i == m) break;
            if (i > 4) { c.z += 100.0; continue; }
            break;
        case 2:
            if (m < 0) { c.z -= 1.0; break; }
            switch (m & 1) {
            case 0: c.z += 3.0; if (i == 3) continue; break;
            default: c.w += 1.0; if (i == 2) break; c.w += 1.0;
            }
            if (i + m == 7) { c.x += 0.25; }
        default:
            c.w += 4.0;
            if (k == 3 && i == 4) { c.x -= 8.0; break; }
            if (m == 2 && i == 5) { c.z += 9.0; }
        }
        c.z += 0.125;
        if (c.w > 20.0) break;
    }",
        |k, m| {
            let mut c = [0.0f32; 4];
            for i in 0..6 {
                // Which case runs next (3 is the default), and whether the loop continues.
                let mut at = match (k + i) & 3 {
                    s @ 0..=2 => s,
                    _ => 3,
                };
                let mut next_iteration = false;
                loop {
                    match at {
                        0 => {
                            c[0] += 1.0;
                            if m > i {
                                if m > 2 * i {
                                    break;
                                }
                                c[3] += 0.5;
                                next_iteration = true;
                                break;
                            }
                            c[0] += 2.0;
                        }
                        1 => {
                            c[1] += 1.0;
                            if i == m {
                                break;
                            }
                            if i > 4 {
                                c[2] += 100.0;
                                next_iteration = true;
                            }
                            break;
                        }
                        2 => {
                            if m < 0 {
                                c[2] -= 1.0;
                                break;
                            }
                            if m & 1 == 0 {
                                c[2] += 3.0;
                                if i == 3 {
                                    next_iteration = true;
                                    break;
                                }
                            } else {
                                c[3] += 1.0;
                                if i != 2 {
                                    c[3] += 1.0;
                                }
                            }
                            if i + m == 7 {
                                c[0] += 0.25;
                            }
                        }
                        _ => {
                            c[3] += 4.0;
                            if k == 3 && i == 4 {
                                c[0] -= 8.0;
                                break;
                            }
                            if m == 2 && i == 5 {
                                c[2] += 9.0;
                            }
                            break;
                        }
                    }
                    at += 1;
                }
                if next_iteration {
                    continue;
                }
                c[2] += 0.125;
                if c[3] > 20.0 {
                    break;
                }
            }
            c
        },
    );
}

/// A switch inside a case of another: the inner one's breaks (nested in a selection) and
/// fall-through stay inside it; the outer case then falls through too.
#[test]
fn a_switch_inside_a_case_of_another() {
    check_glsl(
        "    switch (k & 1) {
    case 0:
        switch (m) {
        case -1: c.x += 1.0; if (k > 0) break;
        case 1: c.y += 2.0; break;
        case 3: if (k < 0) { c.z += 4.0; break; } c.z += 8.0;
        default: c.w += 1.0;
        }
        c.x += 16.0;
    default:
        c.y += 32.0;
        if (m == 2) break;
        c.z += 64.0;
    }",
        |k, m| {
            let mut c = [0.0; 4];
            if k & 1 == 0 {
                let mut at = match m {
                    -1 => 0,
                    1 => 1,
                    3 => 2,
                    _ => 3,
                };
                loop {
                    match at {
                        0 => {
                            c[0] += 1.0;
                            if k > 0 {
                                break;
                            }
                        }
                        1 => {
                            c[1] += 2.0;
                            break;
                        }
                        2 => {
                            if k < 0 {
                                c[2] += 4.0;
                                break;
                            }
                            c[2] += 8.0;
                        }
                        _ => {
                            c[3] += 1.0;
                            break;
                        }
                    }
                    at += 1;
                }
                c[0] += 16.0;
            }
            c[1] += 32.0;
            if m != 2 {
                c[2] += 64.0;
            }
            c
        },
    );
}

/// SPIR-V glslang does not emit: OpPhi in the merge block (with sources from the header, for
/// literals that target the merge block, and from a break nested in a selection) and in a
/// fall-through target (from the header and from the case falling into it), and two literals
/// on one case.
///
/// `switch (k) { case 0: x = 1 (falls into case 1); case 1, 3: y = phi(10 from the header,
/// x from case 0) + 1; break; case 2, 4: break (the merge block); default: if (m > 0)
/// break with 7; 8 }`; `o = vec4(phi at the merge)`.
#[test]
fn phis_in_the_merge_block_and_in_a_fall_through_target() {
    let text = r#"
               OpCapability Shader
          %1 = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint Fragment %main "main" %v %o
               OpExecutionMode %main OriginUpperLeft
               OpName %v "v"
               OpName %o "o"
               OpDecorate %v Location 0
               OpDecorate %o Location 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
        %int = OpTypeInt 32 1
       %bool = OpTypeBool
       %vec2 = OpTypeVector %float 2
       %vec4 = OpTypeVector %float 4
     %in_ptr = OpTypePointer Input %vec2
    %out_ptr = OpTypePointer Output %vec4
          %v = OpVariable %in_ptr Input
          %o = OpVariable %out_ptr Output
      %int_0 = OpConstant %int 0
     %f_1 = OpConstant %float 1
     %f_7 = OpConstant %float 7
     %f_8 = OpConstant %float 8
    %f_10 = OpConstant %float 10
   %f_100 = OpConstant %float 100
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %vv = OpLoad %vec2 %v
         %vx = OpCompositeExtract %float %vv 0
         %vy = OpCompositeExtract %float %vv 1
         %fx = OpExtInst %float %1 Floor %vx
         %fy = OpExtInst %float %1 Floor %vy
          %k = OpConvertFToS %int %fx
          %m = OpConvertFToS %int %fy
               OpSelectionMerge %merge None
               OpSwitch %k %default 0 %case0 1 %case1 3 %case1 2 %merge 4 %merge
      %case0 = OpLabel
          %x = OpFAdd %float %f_1 %fy
               OpBranch %case1
      %case1 = OpLabel
         %px = OpPhi %float %f_10 %entry %x %case0
          %y = OpFAdd %float %px %f_1
               OpBranch %merge
    %default = OpLabel
         %mp = OpSGreaterThan %bool %m %int_0
               OpSelectionMerge %dmerge None
               OpBranchConditional %mp %dbreak %dmerge
     %dbreak = OpLabel
               OpBranch %merge
     %dmerge = OpLabel
               OpBranch %merge
      %merge = OpLabel
          %r = OpPhi %float %f_100 %entry %y %case1 %f_7 %dbreak %f_8 %dmerge
        %out = OpCompositeConstruct %vec4 %r %fy %r %f_1
               OpStore %o %out
               OpReturn
               OpFunctionEnd
"#;
    let Some(shader) = from_assembly(text) else {
        return;
    };
    agrees_with_model(&shader, |k, m| {
        let r = match k {
            0 => 1.0 + m as f32 + 1.0,
            1 | 3 => 11.0,
            2 | 4 => 100.0,
            _ if m > 0 => 7.0,
            _ => 8.0,
        };
        [r, m as f32, r, 1.0]
    });
    agrees_on_emulators(&shader, &EVERYWHERE);
}

/// A switch of 1,500 cases: one level of nesting, so it compiles and runs on Evergreen
/// (whose control-flow stack a ladder of 1,500 nested tests overflowed) and on Gen9.
#[test]
fn a_switch_of_1500_cases_compiles_and_runs() {
    let cases: String = (0..1500)
        .map(|i| format!("    case {i}: c.x = v.y * {i}.0 + 1.0; break;\n"))
        .collect();
    let source = format!(
        "#version 450
layout(location = 0) in vec2 v;
layout(location = 0) out vec4 o;
void main() {{
    vec4 c = vec4(0.0);
    switch (int(v.x * 200.0) + 750) {{
{cases}    default: c.y = 1.0;
    }}
    o = c;
}}
"
    );
    let Some(shader) = from_glsl(&source) else {
        return;
    };
    agrees_on_emulators(&shader, &[("evergreen", None), ("gen9", Some(8))]);
}

/// Eight switches in sequence, each with a case whose three conditional breaks are nested in
/// selections and which falls into the next case: the code grows linearly with the switches
/// (the ladder emitted the rest of the function again inside each break's arm: 90,096 Gen
/// instructions for six, and eight were rejected).
#[test]
fn sequential_switches_with_conditional_breaks_grow_linearly() {
    let instructions = |n: usize| {
        let body: String = (0..n)
            .map(|s| {
                format!(
                    "    switch (k + {s}) {{
    case 0: c.x += 1.0; if (m > 1) break; c.x += 2.0; if (m > 2) break; c.x += 3.0;
            if (m > 3) break; c.y += 1.0;
    case 1: c.y += 2.0; break;
    default: c.w += 4.0;
    }}\n"
                )
            })
            .collect();
        let source = format!(
            "#version 450
layout(location = 0) in vec2 v;
layout(location = 0) out vec4 o;
void main() {{
    int k = int(floor(v.x));
    int m = int(floor(v.y));
    vec4 c = vec4(0.0);
{body}    o = c;
}}
"
        );
        let shader = from_glsl(&source)?;
        agrees_on_emulators(&shader, &[("gen9", Some(8)), ("evergreen", None)]);
        let gen9 = shrew_targets::lookup("gen9").expect("a target");
        let kernel = compiled(&shader, "default", gen9, Some(8)).unwrap_or_else(|e| panic!("{e}"));
        let stats = kernel.statistics();
        Some(
            stats
                .iter()
                .find(|(name, _)| *name == "instructions")
                .expect("counted")
                .1,
        )
    };
    let (Some(four), Some(eight)) = (instructions(4), instructions(8)) else {
        return;
    };
    // Twice the switches, about twice the code (a few instructions are the shader's own).
    assert!(
        eight <= 2 * four + 16,
        "4 switches: {four}, 8 switches: {eight}"
    );
}
