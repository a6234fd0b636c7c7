//! The interpreter on full-window fragment draws: 250×250 pixels (piglit's window) of a few
//! shaders, on the wide executor (`run`) and on the reference scheduler (`run_reference`).
//! Criterion's throughput is in executed lane-instructions (the run's instruction count, every
//! invocation's instructions summed), so `elem/s` is lane-instructions per second and the ratio
//! of the two executors' times is the wide executor's speed-up.
//!
//! - `lighting`: `examples/lighting.shrew`, a branch, a loop and coarse derivatives;
//! - `matrix_temporaries`: UBO loads, conversions and a function_temp array, every access
//!   through derefs, as unoptimized GLSL translates;
//! - `sampled_gradient`: an implicit-LOD texture sample and fine derivatives (quad sync points).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shrew_engine::interp::{self, Launch, Resources, SamplerState, Texture};
use shrew_engine::ir::Shader;
use std::path::Path;

const WINDOW: u32 = 250;

fn shader(path: &str) -> Shader {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let text = std::fs::read_to_string(&path).expect("the bench shader exists");
    shrew_engine::text::parse(&text, path.to_str().unwrap_or("bench shader"))
        .expect("the bench shader parses")
}

/// A 16×16 texture with its whole mip chain, texels varying with the position and level.
fn mipmapped_texture() -> Texture {
    let level = |size: u32, k: f32| {
        let texels: Vec<[f32; 4]> = (0..size * size)
            .map(|i| {
                let (x, y) = ((i % size) as f32, (i / size) as f32);
                [x / size as f32, y / size as f32, k, 1.0]
            })
            .collect();
        interp::MipLevel::from_f32(size, size, 1, &texels)
    };
    let mut texture = Texture {
        layers: 1,
        levels: vec![level(16, 0.0)],
    };
    for (k, size) in [8, 4, 2, 1].into_iter().enumerate() {
        texture = texture.with_level(level(size, (k + 1) as f32 / 4.0));
    }
    texture
}

/// A full-window launch with `uv` running from 0 to 1 across the window.
fn full_window(shader: &Shader) -> (Launch, Resources) {
    let n = (WINDOW * WINDOW) as usize;
    let mut launch = Launch::invocations(n);
    launch.width = WINDOW;
    let uv = (0..n)
        .map(|i| {
            let (x, y) = ((i as u32 % WINDOW) as f32, (i as u32 / WINDOW) as f32);
            let at = |p: f32| ((p + 0.5) / WINDOW as f32).to_bits() as u64;
            vec![at(x), at(y)]
        })
        .collect();
    launch.inputs.insert("uv".into(), uv);
    let mut resources = Resources::default();
    for v in &shader.variables {
        let _ = resources.zero_variable(shader, &v.name);
    }
    resources.textures.insert(0, mipmapped_texture());
    resources.samplers.insert(0, SamplerState::linear());
    (launch, resources)
}

fn bench(c: &mut Criterion) {
    for (name, path) in [
        ("lighting", "examples/lighting.shrew"),
        (
            "matrix_temporaries",
            "tests/benches/shaders/matrix_temporaries.shrew",
        ),
        (
            "sampled_gradient",
            "tests/benches/shaders/sampled_gradient.shrew",
        ),
    ] {
        let shader = shader(path);
        let (launch, resources) = full_window(&shader);
        let executed = interp::run(&shader, &launch, &mut resources.clone())
            .expect("the bench shader runs")
            .stats
            .instructions;
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(executed));
        group.sample_size(10);
        group.bench_function("wide", |b| {
            b.iter(|| interp::run(&shader, &launch, &mut resources.clone()).unwrap())
        });
        group.bench_function("reference", |b| {
            b.iter(|| interp::run_reference(&shader, &launch, &mut resources.clone()).unwrap())
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
