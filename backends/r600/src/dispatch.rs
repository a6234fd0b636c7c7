//! Fragment, vertex and compute dispatch for the emulator: what the hardware's shader pipe
//! interpolator and sequencer do before a pixel shader runs, and what the colour buffer holds
//! after; what the vertex grouper and the fetch shader do before a vertex shader runs, and
//! what it exports.
//!
//! What: [`run_fragment`] cuts a grid of pixels into 2×2 quads and packs those with a covered
//! pixel (the others are not dispatched) sixteen to a 64-lane wavefront
//! (quad `q` in lanes `4q..4q+3`: top-left, top-right, bottom-left, bottom-right), loads what
//! [`crate::lower::Interface`] says the shader reads (the barycentrics in R0 on Evergreen and
//! Cayman, with the interpolation parameters of the inputs; the interpolated inputs in their
//! GPRs on R600 and R700; the window position; the facing), binds the constant buffers (for
//! kcache reads, and as buffer resources for vertex fetches) and the textures, runs
//! the program decoded from its binary, and gives each covered pixel's colour exports.
//!
//! The draw is the engine's ([`shrew_engine::draw`]): each input's values at the triangle's
//! three vertices, from which the dispatcher makes the interpolation parameters the hardware's
//! setup would: `[p0, p10, p20]`, the value at the first vertex and its changes towards the
//! second and third, or for an input the kernel reads flat
//! ([`crate::lower::Interface::interp`]) the provoking vertex's value as `p0`.
//!
//! Why: the backend's differential tests and `shrew piglit --target r600|…` compare against
//! the interpreter, which must see the same inputs: [`input`] gives an input component as the
//! hardware computes it, `p0 + b1·p10 + b2·p20` over the pixel's barycentrics (b1, b2),
//! perspective or linear, and a flat one `p0`.
//!
//! [`run_vertex`] runs up to 64 vertices per wavefront, each lane's R0.x its vertex index and
//! its attributes where [`crate::lower::Interface::input_gprs`] says (the fetch shader's work),
//! and gives each vertex's position, point size and output slots.
//!
//! [`run_compute`] runs each workgroup's invocations in wavefronts of up to 64 lanes, their
//! IDs in the GPRs [`crate::lower::Interface`]'s contract names, sharing the workgroup's LDS
//! (zeroed for each workgroup); the wavefronts take turns, each running to its next barrier,
//! so that none passes a barrier before the others reach it. The RAT writes land in the
//! dispatch's images and SSBOs.
//!
//! Invariants: uncovered pixels of a quad run as helpers and are never written; killed lanes
//! export nothing.

use crate::compile::Kernel;
use crate::emu::{Buffer, EmuError, Env, Progress, RatMemory, Wavefront, run, run_until_barrier};
use crate::encoding::decode;
use crate::lower::{
    CONSTANT_BUFFER_STRIDE, CONSTANT_DATA_BANK, Interface, LOCAL_ID_GPR, NUM_WORKGROUPS_GPR,
    PRIMITIVE_ID_SLOT, RatTarget, WORKGROUP_ID_GPR,
};
use crate::program::{ExportType, GDS_COUNTER_BUFFER_BYTES, GDS_COUNTER_BUFFERS};
use crate::texture::TextureState;
use shrew_engine::draw::{ComputeDispatch, FragmentDraw, VertexDraw};
use shrew_engine::interp::Resources;
use shrew_engine::ir::{ATOMIC_COUNTER_BINDINGS, Interp};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Lanes of a wavefront.
pub const WAVEFRONT: usize = 64;

/// The colour exports of a draw, by render target: per pixel of the grid its RGBA (raw bits),
/// `None` where the pixel exported none; one array per target, not a map per pixel.
pub type RenderTargets = BTreeMap<u32, Vec<Option<[u32; 4]>>>;

/// The interpolation parameters `[p0, p10, p20]` of component `comp` of input `slot` (a flat
/// input's `p0` the provoking vertex's value, the others zero).
fn parameters(draw: &FragmentDraw, slot: u32, comp: usize, flat: bool) -> [f32; 3] {
    if slot == PRIMITIVE_ID_SLOT {
        return [f32::from_bits(draw.primitive.id), 0.0, 0.0];
    }
    let [v0, v1, v2] = draw.at_vertices(slot, comp);
    if flat {
        [v2, 0.0, 0.0]
    } else {
        [v0, v1 - v0, v2 - v0]
    }
}

/// The value a kernel reading component `comp` of input `slot` with `interp` gets at pixel
/// `index`.
pub fn input(draw: &FragmentDraw, slot: u32, comp: usize, index: usize, interp: Interp) -> f32 {
    let [p0, p10, p20] = parameters(draw, slot, comp, interp == Interp::Flat);
    let [b1, b2] = match interp {
        Interp::Flat => return p0,
        Interp::NoPerspective => draw.pixels.linear[index],
        _ => draw.pixels.perspective[index],
    };
    p0 + b1 * p10 + b2 * p20
}

/// Why a draw failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DispatchError {
    #[error("the binary does not decode to the compiled program: {0}")]
    Encoding(String),
    #[error(transparent)]
    Emulator(#[from] EmuError),
}

/// Runs `kernel` over the draw's pixels; gives each pixel's exports (row-major).
pub fn run_fragment(
    kernel: &Kernel,
    draw: &mut FragmentDraw,
) -> Result<RenderTargets, DispatchError> {
    let interface = &kernel.interface;
    let mut wave = Wavefront::new(0);
    wave.rats = bind_rats(interface, &mut draw.resources);
    wave.gds = bind_gds(interface, &draw.resources);
    let outputs = shade(kernel, draw, &mut wave);
    unbind_rats(
        interface,
        std::mem::take(&mut wave.rats),
        &mut draw.resources,
    );
    unbind_gds(interface, &wave.gds, &mut draw.resources);
    outputs
}

/// [`run_fragment`] with the RATs bound in `wave`.
fn shade(
    kernel: &Kernel,
    draw: &FragmentDraw,
    wave: &mut Wavefront,
) -> Result<RenderTargets, DispatchError> {
    let interface = &kernel.interface;
    let mut env = environment(kernel, &draw.resources)?;
    env.params = interface
        .params
        .iter()
        .map(|slot| {
            let flat = interface.interp.get(slot) == Some(&Interp::Flat);
            std::array::from_fn(|comp| parameters(draw, *slot, comp, flat))
        })
        .collect();
    let grid = &draw.pixels;
    let pixels = (grid.width * grid.height) as usize;
    let mut outputs = RenderTargets::new();
    // Quads without a covered pixel are not dispatched; the others fill wavefronts in order.
    for wave_quads in grid.covered_quads().chunks(WAVEFRONT / 4) {
        wave.reuse(4 * wave_quads.len());
        let mut pixel_of_lane = Vec::with_capacity(4 * wave_quads.len());
        for (q, &quad) in wave_quads.iter().enumerate() {
            let (qx, qy) = grid.quad_origin(quad);
            for k in 0..4 {
                let (x, y) = (qx + k % 2, qy + k / 2);
                let index = y * grid.width as usize + x;
                let lane = 4 * q + k;
                pixel_of_lane.push(index);
                if !grid.covered.get(index).copied().unwrap_or(false) {
                    wave.helpers |= 1 << lane;
                }
                let gprs = &mut wave.gprs[lane];
                if let Some(g) = interface.barycentrics {
                    let [pi, pj] = grid.perspective[index];
                    let [li, lj] = grid.linear[index];
                    gprs[g as usize] = [pi, pj, li, lj].map(f32::to_bits);
                }
                for (&slot, &g) in &interface.input_gprs {
                    let interp = interface.interp[&slot];
                    gprs[g as usize] =
                        std::array::from_fn(|c| input(draw, slot, c, index, interp).to_bits());
                }
                if let Some(g) = interface.frag_coord {
                    let [z, w] = grid.depth_w.get(index).copied().unwrap_or([0.0, 1.0]);
                    let window = [
                        (grid.origin[0] as usize + x) as f32 + 0.5,
                        (grid.origin[1] as usize + y) as f32 + 0.5,
                        z,
                        w,
                    ];
                    gprs[g as usize] = window.map(f32::to_bits);
                }
                if let Some(g) = interface.front_face {
                    gprs[g as usize][0] = if draw.primitive.back_facing {
                        0
                    } else {
                        u32::MAX
                    };
                }
            }
        }
        let exports = run(&kernel.program, wave, &env)?;
        for export in exports.iter().filter(|e| e.kind == ExportType::Pixel) {
            let values = (outputs.entry(export.base as u32)).or_insert_with(|| vec![None; pixels]);
            for (lane, value) in export.values.iter().enumerate() {
                let index = pixel_of_lane[lane];
                if let Some(rgba) = value
                    && grid.covered.get(index).copied().unwrap_or(false)
                {
                    values[index] = Some(*rgba);
                }
            }
        }
    }
    Ok(outputs)
}

/// The units' state for running `kernel`, whose binary must decode to its program: the
/// constant buffers (for kcache reads, and as buffer resources), the constant data and the
/// textures.
fn environment(kernel: &Kernel, resources: &Resources) -> Result<Env, DispatchError> {
    let program = decode(&kernel.binary).map_err(|e| DispatchError::Encoding(e.to_string()))?;
    if program != kernel.program {
        return Err(DispatchError::Encoding(
            "decoding the binary gives another program".into(),
        ));
    }
    let interface = &kernel.interface;
    let mut env = Env::default();
    env.constant_buffers
        .insert(0, resources.uniform_data.clone());
    for (&binding, bytes) in &resources.ubos {
        env.constant_buffers
            .insert(binding as u8 + 1, bytes.clone());
    }
    env.constant_buffers
        .insert(CONSTANT_DATA_BANK, interface.constant_data.clone());
    // Each constant buffer is also the buffer resource of its number, for fetches at run-time
    // offsets.
    env.buffers = env
        .constant_buffers
        .iter()
        .map(|(&bank, bytes)| {
            let stride = CONSTANT_BUFFER_STRIDE;
            (
                bank,
                Buffer {
                    bytes: bytes.clone(),
                    stride,
                },
            )
        })
        .collect();
    env.textures = TextureState {
        views: interface.textures.clone(),
        sampler_bindings: interface.samplers.clone(),
        resources: Arc::new(Resources {
            textures: resources.textures.clone(),
            samplers: resources.samplers.clone(),
            ..Resources::default()
        }),
    };
    Ok(env)
}

/// Runs the compute shader `kernel` over the dispatch's workgroups: each workgroup's
/// invocations in wavefronts of up to 64 lanes, one after the other, each lane's local ID in
/// [`LOCAL_ID_GPR`], its workgroup's ID in [`WORKGROUP_ID_GPR`] and the number of workgroups
/// in [`NUM_WORKGROUPS_GPR`] (x, y, z); the images and SSBOs the shader writes are its RATs'
/// memory, given back to the dispatch's resources at the end.
pub fn run_compute(kernel: &Kernel, dispatch: &mut ComputeDispatch) -> Result<(), DispatchError> {
    let interface = &kernel.interface;
    let env = environment(kernel, &dispatch.resources)?;
    let [sx, sy, sz] = interface.workgroup_size;
    let invocations = sx as usize * sy as usize * sz as usize;
    let [nx, ny, nz] = dispatch.workgroups;
    let mut waves: Vec<Wavefront> = (0..invocations.div_ceil(WAVEFRONT))
        .map(|_| Wavefront::new(0))
        .collect();
    // The memory the running wavefront holds: the RATs, the GDS and its workgroup's LDS.
    let mut rats = bind_rats(interface, &mut dispatch.resources);
    let mut gds = bind_gds(interface, &dispatch.resources);
    let groups = (0..nz).flat_map(|z| (0..ny).flat_map(move |y| (0..nx).map(move |x| [x, y, z])));
    let mut result = Ok(());
    'groups: for group in groups {
        for (w, wave) in waves.iter_mut().enumerate() {
            let first = w * WAVEFRONT;
            let count = (invocations - first).min(WAVEFRONT);
            wave.reuse(count);
            for lane in 0..count {
                let i = (first + lane) as u32;
                let local = [i % sx, i / sx % sy, i / (sx * sy)];
                let gprs = &mut wave.gprs[lane];
                gprs[LOCAL_ID_GPR as usize] = [local[0], local[1], local[2], 0];
                gprs[WORKGROUP_ID_GPR as usize] = [group[0], group[1], group[2], 0];
                gprs[NUM_WORKGROUPS_GPR as usize] = [nx, ny, nz, 0];
            }
        }
        let mut lds = vec![0u32; interface.lds_bytes.div_ceil(4) as usize];
        // Each wavefront in turn runs to its next barrier or its end, until all have ended:
        // none passes a barrier before every other has reached it (or ended).
        let mut running: Vec<usize> = (0..waves.len()).collect();
        while !running.is_empty() {
            let mut waiting = Vec::new();
            for w in running {
                let wave = &mut waves[w];
                wave.rats = std::mem::take(&mut rats);
                wave.gds = std::mem::take(&mut gds);
                wave.lds = std::mem::take(&mut lds);
                let progress = run_until_barrier(&kernel.program, wave, &env);
                rats = std::mem::take(&mut wave.rats);
                gds = std::mem::take(&mut wave.gds);
                lds = std::mem::take(&mut wave.lds);
                match progress {
                    Ok(Progress::AtBarrier) => waiting.push(w),
                    Ok(Progress::Finished(_)) => {}
                    Err(e) => {
                        result = Err(e.into());
                        break 'groups;
                    }
                }
            }
            running = waiting;
        }
    }
    unbind_rats(interface, rats, &mut dispatch.resources);
    unbind_gds(interface, &gds, &mut dispatch.resources);
    result
}

/// The memory of the shader's RATs, taken from `resources` (a RAT whose image or SSBO is not
/// given has none).
fn bind_rats(interface: &Interface, resources: &mut Resources) -> BTreeMap<u8, RatMemory> {
    (interface.rats.iter().enumerate())
        .filter_map(|(rat, &target)| {
            let memory = match target {
                RatTarget::Image(b) => RatMemory::Image(resources.images.remove(&b)?),
                RatTarget::Buffer(b) => RatMemory::Buffer(resources.ssbos.remove(&b)?),
            };
            Some((rat as u8, memory))
        })
        .collect()
}

/// Gives the RATs' memory back to `resources`.
fn unbind_rats(interface: &Interface, rats: BTreeMap<u8, RatMemory>, resources: &mut Resources) {
    for (rat, memory) in rats {
        match (interface.rats[rat as usize], memory) {
            (RatTarget::Image(b), RatMemory::Image(image)) => {
                resources.images.insert(b, image);
            }
            (RatTarget::Buffer(b), RatMemory::Buffer(bytes)) => {
                resources.ssbos.insert(b, bytes);
            }
            _ => unreachable!("bound as its target"),
        }
    }
}

/// The global data share as a draw starts: the atomic counter buffers the shader reaches there
/// (SSBOs past [`ATOMIC_COUNTER_BINDINGS`] in the resources), each from byte [`GDS_COUNTER_BUFFER_BYTES`]` · binding` (what fits), zero elsewhere.
fn bind_gds(interface: &Interface, resources: &Resources) -> Vec<u32> {
    if interface.gds_buffers.is_empty() {
        return Vec::new();
    }
    let per_buffer = (GDS_COUNTER_BUFFER_BYTES / 4) as usize;
    let mut gds = vec![0; GDS_COUNTER_BUFFERS as usize * per_buffer];
    for &b in &interface.gds_buffers {
        let Some(bytes) = resources.ssbos.get(&(ATOMIC_COUNTER_BINDINGS + b)) else {
            continue;
        };
        let words = gds[b as usize * per_buffer..].iter_mut().take(per_buffer);
        for (word, chunk) in words.zip(bytes.chunks(4)) {
            let mut le = [0; 4];
            le[..chunk.len()].copy_from_slice(chunk);
            *word = u32::from_le_bytes(le);
        }
    }
    gds
}

/// Copies the atomic counter buffers back from the global data share after a draw.
fn unbind_gds(interface: &Interface, gds: &[u32], resources: &mut Resources) {
    let per_buffer = (GDS_COUNTER_BUFFER_BYTES / 4) as usize;
    for &b in &interface.gds_buffers {
        let (Some(bytes), Some(words)) = (
            resources.ssbos.get_mut(&(ATOMIC_COUNTER_BINDINGS + b)),
            gds.get(b as usize * per_buffer..),
        ) else {
            continue;
        };
        for (chunk, word) in bytes.chunks_mut(4).zip(words.iter().take(per_buffer)) {
            let len = chunk.len();
            chunk.copy_from_slice(&word.to_le_bytes()[..len]);
        }
    }
}

/// What a vertex exports: its position, its point size if the shader writes it, and its
/// output slots (raw bits).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexOutput {
    pub position: [u32; 4],
    pub point_size: Option<u32>,
    pub slots: BTreeMap<u32, [u32; 4]>,
}

/// Runs the vertex shader `kernel` over the draw's vertices; gives each vertex's exports, and
/// leaves the atomic counters as the vertices left them.
pub fn run_vertex(
    kernel: &Kernel,
    draw: &mut VertexDraw,
) -> Result<Vec<VertexOutput>, DispatchError> {
    let interface = &kernel.interface;
    let env = environment(kernel, &draw.resources)?;
    let mut outputs = vec![VertexOutput::default(); draw.count];
    let mut gds = bind_gds(interface, &draw.resources);
    let result = vertices(kernel, draw, &env, &mut gds, &mut outputs);
    unbind_gds(interface, &gds, &mut draw.resources);
    result.map(|()| outputs)
}

/// [`run_vertex`] with the GDS bound: each wavefront's vertices into `outputs`.
fn vertices(
    kernel: &Kernel,
    draw: &VertexDraw,
    env: &Env,
    gds: &mut Vec<u32>,
    outputs: &mut [VertexOutput],
) -> Result<(), DispatchError> {
    let interface = &kernel.interface;
    for first in (0..draw.count).step_by(WAVEFRONT) {
        let count = (draw.count - first).min(WAVEFRONT);
        let mut wave = Wavefront::new(count);
        wave.gds = std::mem::take(gds);
        for lane in 0..count {
            let vertex = first + lane;
            wave.gprs[lane][0][0] = vertex as u32;
            for (&slot, &gpr) in &interface.input_gprs {
                wave.gprs[lane][gpr as usize] = draw.attribute(slot, vertex);
            }
        }
        let exports = run(&kernel.program, &mut wave, env);
        *gds = std::mem::take(&mut wave.gds);
        for export in exports? {
            for (lane, value) in export.values.iter().enumerate() {
                let (Some(value), out) = (value, &mut outputs[first + lane]) else {
                    continue;
                };
                match (export.kind, export.base) {
                    (ExportType::Pos, 60) => out.position = *value,
                    (ExportType::Pos, 61) => out.point_size = Some(value[0]),
                    (ExportType::Param, param) => {
                        if let Some(&slot) = interface.params_out.get(param as usize) {
                            out.slots.insert(slot, *value);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}
