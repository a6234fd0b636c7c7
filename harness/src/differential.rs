//! Differential runs: a shader on a target's emulator against the reference interpreter,
//! through the draw contract's stage traits on both sides ([`shrew_engine::draw`]), so the
//! tests never name a backend.
//!
//! [`run_on_target`] optimizes the shader for the target (the mid-end verified after every
//! pass), compiles it through the target's draw stages and runs it with random inputs; the
//! interpreter runs the unoptimized shader on the same inputs. A fragment shader shades one
//! triangle's 8×4 pixels (one of them uncovered, so a helper) for three seeds: every covered
//! pixel's colour must agree within the tolerance, and every SSBO exactly. A vertex shader runs
//! 70 vertices (more than a wavefront or a few SIMD8 threads hold): every output must agree. A
//! compute shader runs the stated workgroups: every SSBO must agree exactly.
//!
//! The inputs: each varying component a dyadic float in [-4, 4] and barycentrics of quarters,
//! so that interpolation is exact (integer inputs get those bits too), each attribute a float
//! in [-1, 1], 4 KiB of small floats as the default uniform block and reversed as UBO 0, zeroed
//! SSBOs of 1 KiB (random bytes for compute shaders), and random textures with linear
//! filtering whose texels are multiples of 2^-[`TEXEL_FRAC`] in [0, 1] (so that a shader
//! reading one texel alone sees an exact float).

use crate::interpreter::Interpreter;
use shrew_engine::draw::{ComputeDispatch, DrawStages, Primitive, QuadGrid, TriangleFragments};
use shrew_engine::interp::memory::flatten_type;
use shrew_engine::interp::{CompareFunc, Image, MipLevel, Resources, SamplerState, Texture};
use shrew_engine::ir::{Builtin, Dim, Mode, Shader, Stage, Type};
use shrew_engine::passes::manager::RunOptions;
use shrew_engine::rng::Rng;
use shrew_targets::{Kernel, Pipeline, Target};
use std::collections::BTreeMap;

/// How a shader runs on a target against the interpreter.
#[derive(Clone, Debug)]
pub struct Run {
    pub target: &'static Target,
    /// The dispatch width, where the target has a choice.
    pub width: Option<u8>,
    /// The mid-end pipeline before the target's backend.
    pub mid_end: String,
    /// How far 32-bit outputs may differ, relative to the larger magnitude (absolute below 1).
    pub tolerance: f32,
    /// The workgroups a compute shader runs.
    pub workgroups: [u32; 3],
}

impl Run {
    /// The default pipeline on `target` at `width`, within 1e-4 (the rounding of reassociated
    /// arithmetic), one workgroup.
    pub fn new(target: &str, width: Option<u8>) -> Run {
        Run {
            target: shrew_targets::lookup(target).unwrap_or_else(|e| panic!("{e}")),
            width,
            mid_end: "default".into(),
            tolerance: 1e-4,
            workgroups: [1, 1, 1],
        }
    }

    /// What the run is, for messages: the target, the width and a pipeline other than the
    /// default.
    pub fn describe(&self) -> String {
        let mut text = self.target.name.to_string();
        if let Some(width) = self.width {
            text += &format!(" simd{width}");
        }
        if self.mid_end != "default" {
            text += &format!(" -p {}", self.mid_end);
        }
        text
    }
}

/// What a differential run compared, when the target and the interpreter agreed.
#[derive(Clone, Debug)]
pub struct Agreement {
    /// The run, as [`Run::describe`] gives it.
    pub run: String,
    /// What was compared, e.g. "3 triangles of 31 covered pixels: colours within 1e-4, SSBOs
    /// exactly".
    pub compared: String,
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the emulator agrees with the interpreter on {}",
            self.run, self.compared
        )
    }
}

/// Runs `shader` on `run`'s target and on the interpreter and compares what they compute; the
/// error says where they differ (with the kernel's listing) or why the shader did not run.
pub fn run_on_target(shader: &Shader, run: &Run) -> Result<Agreement, String> {
    let optimized = optimized(shader, &run.mid_end, run.target)?;
    check_optimized(shader, &optimized, run)
}

/// [`run_on_target`] with the mid-end's result given: `optimized` (what `run`'s mid-end made of
/// `shader`, or of part of it) on the target against `shader` on the interpreter.
pub fn check_optimized(
    shader: &Shader,
    optimized: &Shader,
    run: &Run,
) -> Result<Agreement, String> {
    // A target without a backend checks the mid-end alone: the optimized shader runs on the
    // interpreter too.
    let compiler = match run.target.has_backend() {
        true => Some(run.target.compiler().map_err(|e| e.to_string())?),
        false => None,
    };
    let stages: Box<dyn DrawStages> = match &compiler {
        Some(compiler) => compiler.draw_stages(run.width)?,
        None => Box::new(Interpreter::STRICT),
    };
    let compared = match shader.stage {
        Stage::Fragment => compare_fragments(shader, optimized, stages.as_ref(), run),
        Stage::Vertex => compare_vertices(shader, optimized, stages.as_ref(), run),
        Stage::Compute => compare_compute(shader, optimized, stages.as_ref(), run),
        stage => Err(format!("no run of {} shaders", stage.name())),
    };
    match compared {
        Ok(compared) => Ok(Agreement {
            run: run.describe(),
            compared,
        }),
        Err(e) => {
            let listing = match &compiler {
                Some(compiler) => compiler
                    .compile(optimized, run.width)
                    .and_then(|kernel| kernel.listing())
                    .unwrap_or_else(|e| format!("(no listing: {e})")),
                None => shrew_engine::text::print(optimized),
            };
            Err(format!("{}: {e}\n{listing}", run.describe()))
        }
    }
}

/// The runs a test file's `// run:` lines name (every target a line names at every width it names)
/// after the mid-end pipeline `pipeline`, within `tolerance`.
pub fn file_runs(source: &str, pipeline: &str, tolerance: Option<f32>) -> Result<Vec<Run>, String> {
    let workgroups = match directive(source, "// workgroups:") {
        None => [1, 1, 1],
        Some(text) => {
            let counts: Vec<u32> = text
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("`// workgroups: {text}`: {e}"))?;
            counts
                .try_into()
                .map_err(|_| format!("`// workgroups: {text}`: expected three counts"))?
        }
    };
    let mut runs = Vec::new();
    for line in source.lines() {
        let Some(spec) = line.trim().strip_prefix("// run:") else {
            continue;
        };
        let (mut targets, mut widths, mut mid_end) = (Vec::new(), Vec::new(), pipeline);
        let mut words = spec.split_whitespace();
        while let Some(word) = words.next() {
            if word == "-p" {
                mid_end = words
                    .next()
                    .ok_or("`// run:` line: `-p` names no pipeline")?;
                continue;
            }
            match word.strip_prefix("simd") {
                Some(width) => widths.push(Some(
                    width
                        .parse()
                        .map_err(|_| format!("`{word}`: expected simdN"))?,
                )),
                None => targets.push(shrew_targets::lookup(word).map_err(|e| e.to_string())?),
            }
        }
        if targets.is_empty() {
            return Err("`// run:` names no target".into());
        }
        if widths.is_empty() {
            widths.push(None);
        }
        for &target in &targets {
            for &width in &widths {
                runs.push(Run {
                    target,
                    width,
                    mid_end: mid_end.to_string(),
                    tolerance: tolerance.unwrap_or(1e-4),
                    workgroups,
                });
            }
        }
    }
    Ok(runs)
}

/// The trimmed text after the first line starting with `prefix`.
pub fn directive<'s>(source: &'s str, prefix: &str) -> Option<&'s str> {
    source
        .lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .map(str::trim)
}

/// How a run of [`run_on_target`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The shader did not compile (or set up): the message without its numbers, which name
    /// values and change as a shader is reduced.
    Refused(String),
    /// The target computed something other than the interpreter.
    Differs,
    /// The interpreter itself could not run the shader.
    Interpreter,
}

impl Failure {
    /// The failure an error of [`run_on_target`] reports.
    pub fn of(message: &str) -> Failure {
        let first = message.lines().next().unwrap_or("");
        // After the run's description, differences start with the seed, pixel, SSBO, vertex
        // or invocation they are at.
        let what = first.split_once(": ").map_or(first, |(_, rest)| rest);
        if what.contains("the interpreter") {
            Failure::Interpreter
        } else if ["seed ", "pixel ", "SSBO ", "vertex ", "invocation "]
            .iter()
            .any(|p| what.starts_with(p))
        {
            Failure::Differs
        } else {
            Failure::Refused(what.replace(|c: char| c.is_ascii_digit(), "#"))
        }
    }
}

/// `shader` after the mid-end pipeline `mid_end` for `target`, verified after every pass.
pub fn optimized(shader: &Shader, mid_end: &str, target: &Target) -> Result<Shader, String> {
    let pipeline = Pipeline::parse(mid_end, target).map_err(|e| e.to_string())?;
    let mut optimized = shader.clone();
    let options = RunOptions {
        verify_each: true,
        ..RunOptions::default()
    };
    pipeline.run_after(&mut optimized, &options, 0)?;
    Ok(optimized)
}

/// The kernel `target` compiles at `width` from `shader` after the mid-end pipeline `mid_end`.
pub fn compiled(
    shader: &Shader,
    mid_end: &str,
    target: &'static Target,
    width: Option<u8>,
) -> Result<Box<dyn Kernel>, String> {
    let optimized = optimized(shader, mid_end, target)?;
    let compiler = target.compiler().map_err(|e| e.to_string())?;
    compiler.compile(&optimized, width)
}

/// Equal, both NaN, or within `tolerance` relative to the larger magnitude (absolute below 1).
pub fn close(a: u32, b: u32, tolerance: f32) -> bool {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    a == b
        || (x.is_nan() && y.is_nan())
        || (x - y).abs() <= tolerance * x.abs().max(y.abs()).max(1.0)
}

/// The width and height of a fragment shader's triangle's grid of pixels (whole quads from an
/// even origin).
pub const WIDTH: u32 = 8;
pub const HEIGHT: u32 = 4;
/// The pixel the triangle does not cover: a helper of its quad.
const UNCOVERED: usize = 5;
const VERTICES: usize = 70;

/// A source of small random floats in [-1, 1], in thousandths.
fn small_floats(seed: u64) -> impl FnMut() -> f32 {
    let mut rng = Rng::new(seed);
    move || (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0
}

/// The 32-bit components of a variable (an array's elements one after another).
fn component_count(shader: &Shader, ty: &Type) -> usize {
    flatten_type(shader, ty).len()
}

/// The default uniform block (4 KiB of small floats), UBO 0 and every UBO binding of the
/// shader (the same bytes reversed), an SSBO of 1 KiB for each of the shader's, filled by
/// `ssbo_byte`, random textures, and for each image binding an image of small floats.
fn random_resources(
    shader: &Shader,
    small: &mut dyn FnMut() -> f32,
    ssbo_byte: &mut dyn FnMut() -> u8,
) -> Resources {
    let mut resources = Resources {
        uniform_data: (0..1024)
            .flat_map(|_| small().to_bits().to_le_bytes())
            .collect(),
        ..Resources::default()
    };
    let reversed: Vec<u8> = resources.uniform_data.iter().rev().copied().collect();
    resources.ubos.insert(0, reversed.clone());
    for binding in block_bindings(shader, Mode::Ubo) {
        resources.ubos.insert(binding, reversed.clone());
    }
    for var in &shader.variables {
        let (element, count) = var.ty.innermost_element();
        if let (Type::Image { .. }, Some(first)) = (element, var.binding) {
            for binding in first..first.saturating_add(count) {
                let texels = (0..TEXTURE_SIZE * TEXTURE_SIZE)
                    .map(|_| [(); 4].map(|()| small().to_bits()))
                    .collect();
                let image = Image {
                    width: TEXTURE_SIZE,
                    height: TEXTURE_SIZE,
                    depth: 1,
                    layers: 1,
                    texels,
                };
                resources.images.insert(binding, image);
            }
        }
    }
    for binding in block_bindings(shader, Mode::Ssbo) {
        let bytes = (0..1024).map(|_| ssbo_byte()).collect();
        resources.ssbos.insert(binding, bytes);
    }
    let step = 2f32.powi(TEXEL_FRAC as i32);
    let mut texel = || (small().abs() * step).round() / step;
    (resources.textures, resources.samplers) = random_textures(shader, &mut texel);
    resources
}

/// The bindings of the shader's blocks of `mode` (UBOs or SSBOs): each variable's, and for an
/// array of blocks, one per block from it on.
fn block_bindings(shader: &Shader, mode: Mode) -> Vec<u32> {
    (shader.variables.iter().filter(|v| v.mode == mode))
        .flat_map(|var| {
            let blocks = match &var.ty {
                Type::Array { len, .. } if var.array_of_blocks => *len,
                _ => 1,
            };
            let first = var.buffer_binding();
            first..first.saturating_add(blocks)
        })
        .collect()
}

/// The texels of the runs' textures are multiples of 2^-`TEXEL_FRAC`.
pub const TEXEL_FRAC: u32 = 8;
/// The width and height of level 0 of the runs' textures (a power of two), each level below
/// half the one above.
pub const TEXTURE_SIZE: u32 = 8;
/// Levels of the runs' textures: down to 1 texel a side.
pub const TEXTURE_LEVELS: u32 = TEXTURE_SIZE.trailing_zeros() + 1;

/// One triangle's fragments: random barycentrics and depths over the grid, the pixel
/// [`UNCOVERED`] left out, and each input's components at the three vertices. The values are
/// dyadic so that interpolating them is exact in `f32` as in `f64`: each barycentric is 0, 1/4,
/// 1/2 or 3/4, each input an odd number of sixteenths in [-4, 4] at the first vertex and an even
/// number of sixteenths (within 1) away from it at the others. The interpreter and every
/// emulator then see the same input values, however each interpolates, and a shader that
/// floors, converts or compares its inputs gets the same answer on both sides.
fn random_fragments(shader: &Shader, small: &mut dyn FnMut() -> f32) -> TriangleFragments {
    let pixels = (WIDTH * HEIGHT) as usize;
    let mut grid = QuadGrid {
        width: WIDTH,
        height: HEIGHT,
        origin: [2, 4],
        covered: (0..pixels).map(|i| i != UNCOVERED).collect(),
        ..QuadGrid::default()
    };
    // 0, 1/4, 1/2 or 3/4; an odd or even number of sixteenths up to `range`.
    let mut quarter = || (small().abs() * 3.99).floor() / 4.0;
    for _ in 0..pixels {
        grid.perspective.push([quarter(), quarter()]);
        grid.linear.push([quarter(), quarter()]);
    }
    for _ in 0..pixels {
        grid.depth_w.push([small().abs(), 1.0 + small().abs()]);
    }
    let mut sixteenths = |range: f32, odd: bool| {
        let half_steps = (small() * range * 8.0).round();
        (2.0 * half_steps + f32::from(u8::from(odd))) / 16.0
    };
    let mut varyings = BTreeMap::new();
    for var in &shader.variables {
        if var.mode == Mode::ShaderIn && var.builtin.is_none() {
            let mut at: [Vec<u64>; 3] = Default::default();
            for _ in 0..component_count(shader, &var.ty) {
                let first = sixteenths(3.9, true);
                let values = [
                    first,
                    first + sixteenths(1.0, false),
                    first + sixteenths(1.0, false),
                ];
                for (vertex, value) in at.iter_mut().zip(values) {
                    vertex.push(value.to_bits() as u64);
                }
            }
            varyings.insert(var.name.clone(), at);
        }
    }
    TriangleFragments {
        pixels: grid,
        varyings,
        primitive: Primitive {
            id: (small().abs() * 100.0) as u32,
            back_facing: small() < 0.0,
        },
    }
}

/// What was compared, or where the two differ.
type Compared = Result<String, String>;

const SEEDS: u64 = 3;

fn compare_fragments(
    shader: &Shader,
    optimized: &Shader,
    stages: &dyn DrawStages,
    run: &Run,
) -> Compared {
    let reference = Interpreter::STRICT.compile_fragment(shader)?;
    let kernel = stages.compile_fragment(optimized)?;
    let color_components = shader
        .variables
        .iter()
        .find(|v| v.mode == Mode::ShaderOut && v.location == Some(0))
        .map_or(4, |v| component_count(shader, &v.ty).min(4));
    for seed in 0..SEEDS {
        let mut small = small_floats(seed);
        let fragments = random_fragments(shader, &mut small);
        let resources = random_resources(shader, &mut small, &mut || 0);
        let mut want_resources = resources.clone();
        let want = reference
            .shade(&fragments, &mut want_resources)
            .map_err(|e| format!("seed {seed}: the interpreter: {e}"))?;
        let mut have_resources = resources;
        let have = kernel
            .shade(&fragments, &mut have_resources)
            .map_err(|e| format!("seed {seed}: {e}"))?;
        compare_ssbos(&want_resources, &have_resources).map_err(|e| format!("seed {seed}: {e}"))?;
        for (i, (want, have)) in want.iter().zip(&have).enumerate() {
            let (want, have) = match (want, have) {
                (None, None) => continue,
                (Some(want), Some(have)) => (want, have),
                (None, Some(_)) => {
                    return Err(format!("seed {seed}: pixel {i} must not be written"));
                }
                (Some(_), None) => return Err(format!("seed {seed}: pixel {i} was not written")),
            };
            for c in 0..color_components {
                if !close(want[c], have[c], run.tolerance) {
                    return Err(format!(
                        "seed {seed}: pixel {i} component {c}: interpreter {} ({:#x}), \
                         emulator {} ({:#x})",
                        f32::from_bits(want[c]),
                        want[c],
                        f32::from_bits(have[c]),
                        have[c]
                    ));
                }
            }
        }
    }
    Ok(format!(
        "{SEEDS} triangles of {} covered pixels: colours within {:e}, SSBOs and images exactly",
        WIDTH * HEIGHT - 1,
        run.tolerance
    ))
}

fn compare_vertices(
    shader: &Shader,
    optimized: &Shader,
    stages: &dyn DrawStages,
    run: &Run,
) -> Compared {
    let Some(kernel) = stages.compile_vertex(optimized)? else {
        return Err("the target's draws run no vertex kernels".into());
    };
    let reference = Interpreter::STRICT
        .compile_vertex(shader)?
        .expect("the interpreter runs vertices");
    let mut small = small_floats(7);
    let mut inputs = BTreeMap::new();
    for var in shader.variables.iter().filter(|v| v.mode == Mode::ShaderIn) {
        let comps = component_count(shader, &var.ty);
        let each: Vec<Vec<u64>> = (0..VERTICES)
            .map(|_| (0..comps).map(|_| small().to_bits() as u64).collect())
            .collect();
        inputs.insert(var.name.clone(), each);
    }
    let resources = random_resources(shader, &mut small, &mut || 0);
    let mut want_resources = resources.clone();
    let want = reference
        .run(VERTICES, &inputs, &mut want_resources)
        .map_err(|e| format!("the interpreter: {e}"))?;
    let mut have_resources = resources;
    let have = kernel.run(VERTICES, &inputs, &mut have_resources)?;
    compare_ssbos(&want_resources, &have_resources)?;
    // Every output the rasterizer or the next stage reads: the position, the point size and
    // the varyings.
    let compared = shader.variables.iter().filter(|v| {
        v.mode == Mode::ShaderOut
            && matches!(
                v.builtin,
                None | Some(Builtin::Position | Builtin::PointSize)
            )
    });
    for var in compared {
        for (v, (want, have)) in want.iter().zip(&have).enumerate() {
            let want = &want[&var.name];
            let have = have
                .get(&var.name)
                .ok_or_else(|| format!("the kernel does not write @{}", var.name))?;
            for (c, (&w, &h)) in want.iter().zip(have).enumerate() {
                if !close(w as u32, h as u32, run.tolerance) {
                    return Err(format!(
                        "vertex {v} @{} component {c}: interpreter {}, emulator {}",
                        var.name,
                        f32::from_bits(w as u32),
                        f32::from_bits(h as u32)
                    ));
                }
            }
        }
    }
    Ok(format!(
        "{VERTICES} vertices: outputs within {:e}, SSBOs and images exactly",
        run.tolerance
    ))
}

fn compare_compute(
    shader: &Shader,
    optimized: &Shader,
    stages: &dyn DrawStages,
    run: &Run,
) -> Compared {
    let kernel = stages.compile_compute(optimized)?;
    let reference = Interpreter::STRICT.compile_compute(shader)?;
    let mut rng = Rng::new(11);
    let mut small = small_floats(11);
    let resources = random_resources(shader, &mut small, &mut || rng.next_u64() as u8);
    let mut want = ComputeDispatch {
        workgroups: run.workgroups,
        resources,
    };
    let mut have = want.clone();
    reference
        .dispatch(&mut want)
        .map_err(|e| format!("the interpreter: {e}"))?;
    kernel.dispatch(&mut have)?;
    compare_ssbos(&want.resources, &have.resources)?;
    let [x, y, z] = run.workgroups;
    Ok(format!("{x}x{y}x{z} workgroups: SSBOs and images exactly"))
}

/// Every SSBO dword and image texel equal.
fn compare_ssbos(want: &Resources, have: &Resources) -> Result<(), String> {
    for (binding, want) in &want.images {
        let have = have
            .images
            .get(binding)
            .ok_or_else(|| format!("image {binding} is gone"))?;
        if let Some(i) = (0..want.texels.len()).find(|&i| want.texels.get(i) != have.texels.get(i))
        {
            return Err(format!(
                "image {binding} texel {i}: interpreter {:?}, emulator {:?}",
                want.texels[i],
                have.texels.get(i)
            ));
        }
    }
    for (binding, want) in &want.ssbos {
        let have = have
            .ssbos
            .get(binding)
            .ok_or_else(|| format!("SSBO {binding} is gone"))?;
        let dword = |bytes: &[u8], i: usize| bytes.get(4 * i..4 * i + 4).map(<[u8]>::to_vec);
        if let Some(i) = (0..want.len().div_ceil(4)).find(|&i| dword(want, i) != dword(have, i)) {
            return Err(format!(
                "SSBO {binding} dword {i}: interpreter {:?}, emulator {:?}",
                dword(want, i),
                dword(have, i)
            ));
        }
    }
    Ok(())
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

/// A texture of `dim` with a full mip chain from [`TEXTURE_SIZE`] texels a side (cube maps:
/// six faces; arrays: three layers or cubes) of random texels.
pub fn random_texture(dim: Dim, arrayed: bool, random: &mut dyn FnMut() -> f32) -> Texture {
    let faces = if dim == Dim::Cube { 6 } else { 1 };
    let layers = faces * if arrayed { 3 } else { 1 };
    let size = |n: u32| match dim {
        Dim::D1 => [n, 1, 1],
        Dim::D3 => [n, n, n],
        _ => [n, n, 1],
    };
    let levels = (0..TEXTURE_LEVELS)
        .map(|l| {
            let [w, h, d] = size(TEXTURE_SIZE >> l);
            let texels: Vec<[f32; 4]> = (0..w * h * d * layers)
                .map(|_| [0; 4].map(|_| random()))
                .collect();
            MipLevel::from_f32(w, h, d, &texels)
        })
        .collect();
    Texture { layers, levels }
}
