//! What the backends' differential tests share: the optimization of a shader for a target,
//! random inputs of a triangle and random textures for a shader's texture variables, and the
//! comparison of an emulator's result with the interpreter's.

use shrew_engine::interp::{CompareFunc, MipLevel, SamplerState, Texture};
use shrew_engine::ir::{Dim, Shader, Type};
use shrew_engine::passes::manager::{self, Pipeline, RunOptions};
use shrew_targets::Target;
use std::collections::BTreeMap;

/// `shader` after the default pipeline and `target`'s backend pipeline, verified after every
/// pass.
pub fn optimized(shader: &Shader, target: &Target) -> Shader {
    optimized_after("default", shader, target)
}

/// [`optimized`] with the mid-end pipeline `mid_end` instead of the default one.
pub fn optimized_after(mid_end: &str, shader: &Shader, target: &Target) -> Shader {
    let registry = target.registry();
    let pipeline = format!("{mid_end},{}", target.backend_pipeline());
    let pipeline = Pipeline::parse(&pipeline, &registry).unwrap();
    let mut shader = shader.clone();
    let options = RunOptions {
        verify_each: true,
        ..RunOptions::default()
    };
    manager::run(&pipeline, &registry, &mut shader, &options).unwrap_or_else(|e| panic!("{e}"));
    shader
}

/// Equal, both NaN, or within `tolerance` relative to the larger magnitude (absolute below 1).
pub fn close(a: u32, b: u32, tolerance: f32) -> bool {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    a == b
        || (x.is_nan() && y.is_nan())
        || (x - y).abs() <= tolerance * x.abs().max(y.abs()).max(1.0)
}

/// A random input slot of a triangle: its four components (raw bits) at the three vertices,
/// each component `4 r` at the first vertex and within 1 of it at the others (`r` and the
/// changes from `random`, in [-1, 1]).
pub fn random_input(random: &mut dyn FnMut() -> f32) -> [[u32; 4]; 3] {
    let mut at = [[0; 4]; 3];
    for c in 0..4 {
        let v0 = 4.0 * random();
        let [v1, v2] = [v0 + random(), v0 + random()];
        for (vertex, value) in at.iter_mut().zip([v0, v1, v2]) {
            vertex[c] = value.to_bits();
        }
    }
    at
}

/// Textures and samplers, by binding, for every texture variable of `shader` (an array of
/// them takes one binding per element): random texels, linear filtering, and a less-or-equal
/// comparison for shadow textures.
pub fn random_textures(
    shader: &Shader,
    random: &mut dyn FnMut() -> f32,
) -> (BTreeMap<u32, Texture>, BTreeMap<u32, SamplerState>) {
    let (mut textures, mut samplers) = (BTreeMap::new(), BTreeMap::new());
    for var in &shader.variables {
        let (ty, count) = var.ty.innermost_element();
        if let Type::Texture {
            dim,
            arrayed,
            shadow,
            ..
        } = *ty
        {
            let first = var.binding.unwrap_or(0);
            for binding in first..first + count {
                textures.insert(binding, random_texture(dim, arrayed, random));
                let sampler = SamplerState {
                    compare: shadow.then_some(CompareFunc::LessOrEqual),
                    ..SamplerState::linear()
                };
                samplers.insert(binding, sampler);
            }
        }
    }
    (textures, samplers)
}

/// A texture of `dim` with a full mip chain from 8 texels a side (cube maps: six faces;
/// arrays: three layers or cubes) of random texels.
pub fn random_texture(dim: Dim, arrayed: bool, random: &mut dyn FnMut() -> f32) -> Texture {
    let faces = if dim == Dim::Cube { 6 } else { 1 };
    let layers = faces * if arrayed { 3 } else { 1 };
    let size = |n: u32| match dim {
        Dim::D1 => [n, 1, 1],
        Dim::D3 => [n, n, n],
        _ => [n, n, 1],
    };
    let levels = (0..4)
        .map(|l| {
            let [w, h, d] = size(8 >> l);
            let texels: Vec<[f32; 4]> = (0..w * h * d * layers)
                .map(|_| [0; 4].map(|_| random()))
                .collect();
            MipLevel::from_f32(w, h, d, &texels)
        })
        .collect();
    Texture { layers, levels }
}
