//! WGSL through naga's front end and SPIR-V writer, then our SPIR-V translator: the result is
//! run on the reference interpreter and compared with what the WGSL computes. Bad WGSL gives
//! naga's located diagnostics, never a panic.

use shrew_engine::interp::{InvocationResult, Launch, Resources, run};
use shrew_engine::ir::{Shader, Stage};
use shrew_frontend::spirv::{Options, translate};
use shrew_frontend::wgsl::{WgslError, to_spirv};

fn translate_wgsl(source: &str, entry: Option<&str>) -> Shader {
    let (words, name) = to_spirv(source, "test.wgsl", entry).unwrap_or_else(|e| panic!("{e}"));
    translate(
        &words,
        &Options {
            entry_point: Some(name),
        },
    )
    .unwrap_or_else(|e| panic!("translation failed: {e}"))
}

/// The only `shader_out` variable of a one-output fragment shader, whatever naga named it.
fn single_output(invocation: InvocationResult) -> Vec<f32> {
    let outputs: Vec<_> = invocation.outputs().collect();
    assert_eq!(outputs.len(), 1, "outputs: {outputs:?}");
    outputs[0]
        .1
        .iter()
        .map(|&v| f32::from_bits(v as u32))
        .collect()
}

const FRAGMENT: &str = r#"
struct Params { scale: f32, steps: u32 }

fn weight(x: f32) -> f32 {
    return select(x * 0.5, x, x > 1.0);
}

@fragment
fn main(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    let p = Params(2.0, 4u);
    var acc = 0.0;
    for (var i = 0u; i < p.steps; i++) {
        if i == 2u { continue; }
        acc += f32(i) * p.scale;
    }
    let v = vec2f(pos.x, pos.y);
    return vec4f(acc, weight(v.x), dot(v, vec2f(1.0, 10.0)), clamp(v.y - 1.0, 0.0, 1.0));
}
"#;

#[test]
fn fragment_shader_with_loop_call_and_struct() {
    let shader = translate_wgsl(FRAGMENT, None);
    assert_eq!(shader.stage, Stage::Fragment);
    // A 2×2 quad at the window origin: pixel centres (0.5, 0.5), (1.5, 0.5), (0.5, 1.5), (1.5, 1.5).
    let result = run(&shader, &Launch::invocations(4), &mut Resources::default()).unwrap();
    for (index, invocation) in result.invocations().enumerate() {
        let (x, y) = ((index % 2) as f32 + 0.5, (index / 2) as f32 + 0.5);
        // i = 0, 1, 3 contribute (0 + 1 + 3) · 2 = 8.
        let weight = if x > 1.0 { x } else { x * 0.5 };
        let want = [8.0, weight, x + 10.0 * y, (y - 1.0).clamp(0.0, 1.0)];
        assert_eq!(single_output(invocation), want, "pixel ({x}, {y})");
    }
}

const COMPUTE: &str = r#"
@group(0) @binding(0) var<storage, read> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> output: array<u32>;
var<workgroup> partial: array<u32, 4>;

@compute @workgroup_size(4)
fn main(@builtin(local_invocation_index) local: u32, @builtin(workgroup_id) group: vec3u) {
    let index = group.x * 4u + local;
    partial[local] = input[index] * input[index];
    workgroupBarrier();
    if local == 0u {
        output[group.x] = partial[0] + partial[1] + partial[2] + partial[3];
    }
}
"#;

#[test]
fn compute_shader_with_storage_buffers_shared_memory_and_barrier() {
    let shader = translate_wgsl(COMPUTE, Some("main"));
    assert_eq!(shader.stage, Stage::Compute);
    let input: Vec<u32> = (1..=8).collect();
    let mut resources = Resources::default();
    resources
        .ssbos
        .insert(0, input.iter().flat_map(|v| v.to_le_bytes()).collect());
    resources.ssbos.insert(1, vec![0; 8]);
    let launch = Launch {
        workgroups: [2, 1, 1],
        ..Launch::default()
    };
    run(&shader, &launch, &mut resources).unwrap();
    let output: Vec<u32> = resources.ssbos[&1]
        .chunks(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(output, [1 + 4 + 9 + 16, 25 + 36 + 49 + 64]);
}

#[test]
fn wgsl_errors_are_located() {
    let parse = to_spirv(
        "@fragment fn main() -> @location(0) vec4f {\n  return vec4f(1.0)\n}\n",
        "bad.wgsl",
        None,
    )
    .unwrap_err();
    let WgslError::Parse(message) = &parse else {
        panic!("expected a parse error, got {parse}");
    };
    assert!(message.contains("bad.wgsl:"), "{message}");

    // Parses and type-checks, but an entry point's result needs a binding.
    let invalid = to_spirv(
        "@fragment fn main() -> vec4f { return vec4f(1.0); }",
        "bad.wgsl",
        None,
    )
    .unwrap_err();
    assert!(matches!(invalid, WgslError::Validation(_)), "{invalid}");

    let missing = to_spirv(FRAGMENT, "ok.wgsl", Some("vs_main")).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "the module has no entry point named vs_main"
    );
}
