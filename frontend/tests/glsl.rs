//! GLSL through glslangValidator and the SPIR-V translator: shapes of SPIR-V that glslang emits
//! and the piglit corpus run found the translator mishandling. Each shader is translated,
//! verified and, where it computes something, run on the reference interpreter.
//! They need glslangValidator: see [`Glslang::for_tests`].

use shrew_engine::interp::{Launch, Resources, Texture, run};
use shrew_engine::ir::{Shader, Stage};
use shrew_frontend::glsl::Glslang;
use shrew_frontend::spirv::{Options, translate};

/// glslang's SPIR-V for a shader.
fn compile(source: &str, stage: Stage) -> Option<Vec<u32>> {
    let glslang = Glslang::for_tests()?;
    let compiled = glslang
        .compile_cascade(source, stage)
        .unwrap_or_else(|e| panic!("glslang: {e}"));
    Some(compiled.words)
}

fn translate_glsl(source: &str, stage: Stage) -> Option<Shader> {
    let words = compile(source, stage)?;
    Some(translate(&words, &Options::default()).unwrap_or_else(|e| panic!("{e}")))
}

fn color(shader: &Shader, resources: &mut Resources) -> Vec<f32> {
    let result = run(shader, &Launch::invocations(1), resources).unwrap();
    result
        .invocation(0)
        .output("color")
        .expect("a color output")
        .iter()
        .map(|&v| f32::from_bits(v as u32))
        .collect()
}

#[test]
fn overloaded_functions_get_distinct_names() {
    let source = "#version 330
        out vec4 color;
        float f(float x) { return x + 1.0; }
        float f(int x) { return float(x) * 10.0; }
        void main() { color = vec4(f(1.0), f(2), 0.0, 1.0); }";
    let Some(shader) = translate_glsl(source, Stage::Fragment) else {
        return;
    };
    let mut names: Vec<&str> = shader.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["f", "f_1", "main"]);
    assert_eq!(
        color(&shader, &mut Resources::default()),
        [2.0, 20.0, 0.0, 1.0]
    );
}

#[test]
fn arrays_of_blocks_bind_one_buffer_per_element() {
    let source = "#version 430
        layout(std140, binding = 0) uniform Params { vec4 scale; } params[2];
        layout(std430, binding = 2) buffer Data { int written; float values[]; } data[2];
        out vec4 color;
        void main() {
            int k = int(gl_FragCoord.x) + 1;
            color = params[1].scale * data[k].values[1];
            data[k].written = k + 6;
            data[0].values[0] = params[0].scale.x;
        }";
    let Some(shader) = translate_glsl(source, Stage::Fragment) else {
        return;
    };
    let mut resources = Resources::default();
    for binding in 0..2u32 {
        let scale = (binding + 1) as f32;
        resources.ubos.insert(
            binding,
            [scale; 4].iter().flat_map(|v| v.to_le_bytes()).collect(),
        );
    }
    for binding in 2..4u32 {
        let values = [0.0, 10.0 * binding as f32];
        let mut bytes = vec![0; 4];
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        resources.ssbos.insert(binding, bytes);
    }
    // k = 1 (the pixel at x = 0.5): data[1] is the SSBO at binding 3.
    assert_eq!(color(&shader, &mut resources), [2.0 * 30.0; 4]);
    let int_at = |b: &[u8], at: usize| i32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(int_at(&resources.ssbos[&3], 0), 7);
    assert_eq!(int_at(&resources.ssbos[&2], 0), 0);
    assert_eq!(resources.ssbos[&2][4..8], 1.0f32.to_le_bytes());
}

#[test]
fn level_of_detail_queries_of_array_textures() {
    // The query's coordinate has no layer: one component for 1D arrays, three for cube arrays.
    for (sampler, coord) in [
        ("sampler1DArray", "0.5"),
        ("sampler2DArray", "vec2(0.5)"),
        ("samplerCubeArray", "vec3(0.5)"),
    ] {
        let source = format!(
            "#version 400
             uniform {sampler} s;
             out vec4 color;
             void main() {{ color = vec4(textureQueryLod(s, {coord}), 0.0, 1.0); }}"
        );
        translate_glsl(&source, Stage::Fragment);
    }
}

/// Rendering is single-sampled: interpolateAtCentroid and interpolateAtSample read the input,
/// interpolateAtOffset moves it along its screen-space derivatives.
#[test]
fn interpolate_at_reads_the_input_or_moves_it_along_its_derivatives() {
    for (call, derivatives) in [
        ("interpolateAtCentroid(v)", false),
        ("interpolateAtSample(v, 2)", false),
        ("interpolateAtOffset(v, vec2(0.25, -0.5))", true),
    ] {
        let source = format!(
            "#version 400
             in vec4 v;
             out vec4 color;
             void main() {{ color = {call}; }}"
        );
        let Some(shader) = translate_glsl(&source, Stage::Fragment) else {
            return;
        };
        let printed = shrew_engine::text::print(&shader);
        assert_eq!(printed.contains("fddx"), derivatives, "{call}:\n{printed}");
        assert_eq!(printed.contains("fddy"), derivatives, "{call}:\n{printed}");
    }
}

fn floats_at(bytes: &mut [u8], offset: usize, values: &[f32]) {
    for (i, v) in values.iter().enumerate() {
        bytes[offset + 4 * i..offset + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
}

#[test]
fn row_major_matrices_in_blocks() {
    // m[c][r] = 10c + r + 1, a[1][c][r] = 100 + 10c + r; stored by rows (std140: 16 bytes apart).
    let source = "#version 430
        layout(std140, binding = 0, row_major) uniform U { mat3x2 m; mat2 a[2]; int k; };
        layout(std430, binding = 1, row_major) buffer B { mat2x3 w; };
        out vec4 color;
        void main() {
            vec2 product = m * vec3(1.0, 0.0, 2.0);
            color = vec4(product.x + product.y, m[k].y, m[2][k - 1], a[k][0][1]);
            w = mat2x3(1.0, 2.0, 3.0, 4.0, 5.0, 6.0);
            w[0] = w[0] * 10.0;
            w[1][2] = 60.0;
        }";
    let Some(shader) = translate_glsl(source, Stage::Fragment) else {
        return;
    };
    let mut ubo = vec![0u8; 112];
    floats_at(&mut ubo, 0, &[1.0, 11.0, 21.0]);
    floats_at(&mut ubo, 16, &[2.0, 12.0, 22.0]);
    floats_at(&mut ubo, 64, &[100.0, 110.0]);
    floats_at(&mut ubo, 80, &[101.0, 111.0]);
    ubo[96..100].copy_from_slice(&1i32.to_le_bytes());
    let mut resources = Resources::default();
    resources.ubos.insert(0, ubo);
    resources.ssbos.insert(1, vec![0; 24]);
    // m · (1, 0, 2) = column 0 + 2 · column 2 = (43, 46).
    assert_eq!(
        color(&shader, &mut resources),
        [43.0 + 46.0, 12.0, 21.0, 101.0]
    );
    let w: Vec<f32> = resources.ssbos[&1]
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    // Columns (10, 20, 30) and (4, 5, 60), stored by rows 8 bytes apart.
    assert_eq!(w, [10.0, 4.0, 20.0, 5.0, 30.0, 60.0]);
}

#[test]
fn specialization_constant_operations_take_default_values() {
    let source = "#version 450
        layout(constant_id = 0) const int N = 3;
        layout(constant_id = 1) const bool B = true;
        const int M = N * 2 + 1;
        const int S = B ? N : -N;
        const uint U = uint(M) << 2;
        out vec4 color;
        void main() {
            float arr[M];
            for (int i = 0; i < M; i++) arr[i] = float(i);
            color = vec4(float(M), float(S), arr[M - 1], float(U));
        }";
    let Some(shader) = translate_glsl(source, Stage::Fragment) else {
        return;
    };
    assert_eq!(
        color(&shader, &mut Resources::default()),
        [7.0, 3.0, 6.0, 28.0]
    );
}

#[test]
fn amd_trinary_min_max_and_median() {
    let source = "#version 450
        #extension GL_AMD_shader_trinary_minmax : require
        out vec4 color;
        void main() {
            float x = gl_FragCoord.x;  // 0.5
            int i = int(x * 8.0);      // 4
            uint u = uint(i);
            color = vec4(min3(x, -2.0, 3.0), max3(i, -7, 2), mid3(u, 9u, 1u), mid3(x, 3.0, -1.0));
        }";
    let Some(shader) = translate_glsl(source, Stage::Fragment) else {
        return;
    };
    assert_eq!(
        color(&shader, &mut Resources::default()),
        [-2.0, 4.0, 4.0, 0.5]
    );
}

#[test]
fn functions_taking_samplers_are_specialized_per_argument() {
    let source = "#version 450
        layout(binding = 0) uniform sampler2D a;
        layout(binding = 1) uniform sampler2D b[2];
        out vec4 color;
        vec4 fetch(sampler2D s, ivec2 p) { return texelFetch(s, p, 0); }
        vec4 twice(sampler2D s) { return fetch(s, ivec2(0)) * 2.0; }
        void main() { color = fetch(a, ivec2(0)) + twice(b[1]) + fetch(b[0], ivec2(0)); }";
    let Some(shader) = translate_glsl(source, Stage::Fragment) else {
        return;
    };
    // fetch for a, b[1] and b[0], and twice for b[1]: one copy each.
    let copies = shader
        .functions
        .iter()
        .filter(|f| f.name.starts_with("fetch") || f.name.starts_with("twice"))
        .count();
    assert_eq!(copies, 4);
    let mut resources = Resources::default();
    for (binding, value) in [(0u32, 1.0f32), (1, 10.0), (2, 100.0)] {
        let texture = Texture::from_f32(1, 1, 1, &[[value; 4]]);
        resources.textures.insert(binding, texture);
    }
    // a + 2 · b[1] + b[0] = 1 + 200 + 10.
    assert_eq!(color(&shader, &mut resources), [211.0; 4]);
}
