//! Fragment, vertex and compute thread dispatch for the emulator: what the hardware's windower
//! (or vertex fetch, or GPGPU walker) does before a kernel runs, and what the render target
//! (or the URB, or memory) holds after. [`run_vertex`] runs eight vertices to a thread (two on
//! Gen7/7.5, SIMD4x2), each with its attributes in the payload and its URB handle in R1, and
//! gives each vertex's URB entry. [`run_compute`] runs workgroups, their threads in turns between barriers.
//!
//! What: [`run_fragment`] cuts a grid of pixels into 2×2 quads, packs those with a covered pixel
//! (the others are not dispatched) into threads of the kernel's dispatch width (quad `q` of a thread in channels `4q..4q+3`: top-left, top-right,
//! bottom-left, bottom-right), fills each thread's payload as [`crate::lower::Payload`] says
//! (R1's subspan origins and pixel mask, R2's for channels 16-31 at SIMD32, barycentrics, depth and 1/w, push constants, attribute
//! planes), runs it, and gives each pixel's render-target writes. What runs is the kernel's
//! native binary decoded again, which must equal the compiled instructions.
//!
//! The draw is the engine's ([`shrew_engine::draw`]): each input's values at the triangle's
//! three vertices, from which the dispatcher makes the planes the hardware's setup would, `v0 +
//! b1 (v1 - v0) + b2 (v2 - v0)` over the pixel's barycentrics, or the provoking vertex's value
//! for an input the kernel reads flat ([`Payload::interp`]).
//!
//! Why: the backend's differential tests and `shrew piglit --target gen*` run kernels against
//! the interpreter; both sides must see the same inputs, so [`input`] gives the value a pixel's
//! `pln` computes from the same planes.
//!
//! Invariants: a pixel that is not covered runs as a helper (its quad's derivatives need it)
//! and is never written. Threads run one after another; fragment threads share nothing, a
//! workgroup's threads share its local memory and meet at barriers.

use crate::compile::Kernel;
use crate::disasm::disassemble;
use crate::emu::{EmuError, Execution, Stop, Thread, pln, run};
use crate::encoding::{assemble, disassemble_binary};
use crate::isa::Type;
use crate::lower::{FIRST_SURFACE, Payload, SLM_SURFACE, SYSTEM_VALUES_SLOT, Surface};
use shrew_engine::draw::{ComputeDispatch, FragmentDraw, VertexDraw};
use shrew_engine::interp::Resources;
use shrew_engine::ir::Interp;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The render-target writes of a draw, by render target: per pixel of the grid its RGBA (raw
/// bits), `None` where the pixel wrote none; one array per target, not a map per pixel.
pub type RenderTargets = BTreeMap<u32, Vec<Option<[u32; 4]>>>;

/// The plane of component `comp` of input `slot`: b1 and b2 coefficients, unused, constant
/// (a flat input's only the constant, the provoking vertex's value).
fn plane(draw: &FragmentDraw, slot: u32, comp: usize, flat: bool) -> [f32; 4] {
    if slot == SYSTEM_VALUES_SLOT {
        return [0.0, 0.0, 0.0, f32::from_bits(draw.primitive.id)];
    }
    let [v0, v1, v2] = draw.at_vertices(slot, comp);
    if flat {
        [0.0, 0.0, 0.0, v2]
    } else {
        [v1 - v0, v2 - v0, 0.0, v0]
    }
}

/// The value a kernel reading component `comp` of input `slot` with `interp` gets at pixel
/// `index`: `pln` of its plane, or the constant of a flat one.
pub fn input(draw: &FragmentDraw, slot: u32, comp: usize, index: usize, interp: Interp) -> f32 {
    let plane = plane(draw, slot, comp, interp == Interp::Flat);
    let [b1, b2] = match interp {
        Interp::Flat => return plane[3],
        Interp::NoPerspective => draw.pixels.linear[index],
        _ => draw.pixels.perspective[index],
    };
    pln(plane, b1, b2)
}

/// Runs `kernel` over the draw's pixels; gives each pixel's writes (row-major).
pub fn run_fragment(kernel: &Kernel, draw: &mut FragmentDraw) -> Result<RenderTargets, EmuError> {
    let width = kernel.dispatch_width as usize;
    let pixels = (draw.pixels.width * draw.pixels.height) as usize;
    let mut outputs = RenderTargets::new();
    let p = &kernel.payload;
    let program = decoded(kernel)?;
    let sampling = sampling(p, &draw.resources);
    // Each input slot's planes, as the hardware's setup makes them.
    let planes: Vec<[[f32; 4]; 4]> = p
        .inputs
        .iter()
        .map(|slot| {
            let flat = p.interp.get(slot) == Some(&Interp::Flat);
            std::array::from_fn(|comp| plane(draw, *slot, comp, flat))
        })
        .collect();
    // Quads without a covered pixel are not dispatched; the others fill threads in order.
    for thread_quads in draw.pixels.covered_quads().chunks(width / 4) {
        let mut thread = Thread::new(kernel.dispatch_width);
        // R0.0 bit 15: the primitive faces away.
        thread.set(0, 0, Type::UW, u64::from(draw.primitive.back_facing) << 15);
        let mut pixel_of_channel = vec![None; width];
        let mut pixel_mask = 0u32;
        for (q, &quad) in thread_quads.iter().enumerate() {
            let (qx, qy) = draw.pixels.quad_origin(quad);
            // Subspan origin in R1.2+q: x and y words; subspans 4-7 (SIMD32) in R2.
            let (r1, subspan) = (1 + (q / 4) as u8, q % 4);
            thread.set(
                r1,
                4 + 2 * subspan,
                Type::UW,
                (draw.pixels.origin[0] as usize + qx) as u64,
            );
            thread.set(
                r1,
                5 + 2 * subspan,
                Type::UW,
                (draw.pixels.origin[1] as usize + qy) as u64,
            );
            for k in 0..4 {
                let (x, y) = (qx + k % 2, qy + k / 2);
                let index = y * draw.pixels.width as usize + x;
                let channel = 4 * q + k;
                pixel_of_channel[channel] = Some(index);
                if draw.pixels.covered.get(index).copied().unwrap_or(false) {
                    pixel_mask |= 1 << channel;
                }
                let (half, lane) = ((channel / 8) as u8, channel % 8);
                let f = |x: f32| x.to_bits() as u64;
                if let Some(g) = p.perspective_bary {
                    let [b1, b2] = draw
                        .pixels
                        .perspective
                        .get(index)
                        .copied()
                        .unwrap_or_default();
                    thread.set(g + 2 * half, lane, Type::F, f(b1));
                    thread.set(g + 2 * half + 1, lane, Type::F, f(b2));
                }
                if let Some(g) = p.linear_bary {
                    let [b1, b2] = draw.pixels.linear.get(index).copied().unwrap_or_default();
                    thread.set(g + 2 * half, lane, Type::F, f(b1));
                    thread.set(g + 2 * half + 1, lane, Type::F, f(b2));
                }
                let [z, w] = draw
                    .pixels
                    .depth_w
                    .get(index)
                    .copied()
                    .unwrap_or([0.0, 1.0]);
                if let Some(g) = p.source_depth {
                    thread.set(g + half, lane, Type::F, f(z));
                }
                if let Some(g) = p.source_w {
                    thread.set(g + half, lane, Type::F, f(w));
                }
            }
        }
        // The pixel mask in R1.7's low word (channels 16-31 in R2.7's).
        for half in 0..width.div_ceil(16) {
            let bits = (pixel_mask >> (16 * half)) & 0xFFFF;
            thread.set(1 + half as u8, 14, Type::UW, bits as u64);
        }
        let resources = &mut draw.resources;
        bind(&mut thread, p, resources, &sampling);
        lend(&mut thread, p, resources);
        for (k, planes) in planes.iter().enumerate() {
            for (comp, plane) in planes.iter().enumerate() {
                let grf = p.setup_start + (2 * k + comp / 2) as u8;
                for (e, &x) in plane.iter().enumerate() {
                    thread.set(grf, (comp % 2) * 4 + e, Type::F, x.to_bits() as u64);
                }
            }
        }
        run(&program, kernel.hw, &mut thread)?;
        take_back(&mut thread, p, resources);
        for (&target, writes) in &thread.render_targets {
            let values = outputs.entry(target).or_insert_with(|| vec![None; pixels]);
            for (channel, rgba) in writes.iter().enumerate().take(width) {
                if let (Some(rgba), Some(index)) = (rgba, pixel_of_channel[channel]) {
                    values[index] = Some(*rgba);
                }
            }
        }
    }
    Ok(outputs)
}

/// The kernel's native binary decoded again, which must equal the compiled instructions: the
/// emulator runs what the decoder reads back, so every run is a test of the encoding.
fn decoded(kernel: &Kernel) -> Result<Vec<crate::encoding::Inst>, EmuError> {
    let program = assemble(&kernel.insts, kernel.hw)
        .and_then(|bytes| disassemble_binary(&bytes, kernel.hw))
        .map_err(|e| EmuError::Encoding(e.to_string()))?;
    if program != kernel.insts {
        let at = (0..program.len())
            .find(|&i| program[i] != kernel.insts[i])
            .unwrap_or(program.len());
        let text = |inst: &crate::encoding::Inst| disassemble(inst, kernel.hw, &|_| None);
        return Err(EmuError::Encoding(format!(
            "instruction {at}, `{}`, decodes to `{}`",
            text(&kernel.insts[at]),
            text(&program[at])
        )));
    }
    Ok(program)
}

/// The sampler's view of a draw: its textures by binding table index, samplers by index.
fn sampling(p: &Payload, resources: &Resources) -> Arc<Resources> {
    let mut sampling = Resources {
        samplers: resources.samplers.clone(),
        ..Resources::default()
    };
    for (i, surface) in p.surfaces.iter().enumerate() {
        if let Surface::Texture(view) = surface
            && let Some(texture) = resources.textures.get(&view.binding)
        {
            sampling
                .textures
                .insert(FIRST_SURFACE + i as u32, texture.clone());
        }
    }
    Arc::new(sampling)
}

/// Gives a thread the push constants of its payload, the buffers of its binding table but the
/// SSBOs (which [`lend`] moves in) and the sampler's view of the textures.
fn bind(thread: &mut Thread, p: &Payload, resources: &Resources, sampling: &Arc<Resources>) {
    let (uniform_data, ubos) = (&resources.uniform_data, &resources.ubos);
    for range in &p.push {
        let buffer: &[u8] = match range.binding {
            None => uniform_data,
            Some(b) => ubos.get(&b).map_or(&[], Vec::as_slice),
        };
        for byte in 0..range.bytes as usize {
            let value = buffer.get(byte).copied().unwrap_or(0);
            thread.set(
                range.grf + (byte / 32) as u8,
                byte % 32,
                Type::UB,
                value as u64,
            );
        }
    }
    for (i, surface) in p.surfaces.iter().enumerate() {
        let bti = FIRST_SURFACE + i as u32;
        let bytes: &[u8] = match surface {
            Surface::ConstantData => &p.constant_data,
            Surface::UniformBlock => uniform_data,
            Surface::Ubo(b) => ubos.get(b).map_or(&[], Vec::as_slice),
            Surface::Texture(view) => {
                thread.sampler_views.insert(bti, *view);
                continue;
            }
            Surface::Ssbo(_) | Surface::Image(_) | Surface::Shared => continue,
        };
        thread.surfaces.insert(bti, bytes.to_vec());
    }
    thread.sampling = sampling.clone();
}

/// Moves the SSBOs of the payload's binding table into a thread, for [`take_back`] to return:
/// threads that run in turns see each other's writes.
fn lend(thread: &mut Thread, p: &Payload, resources: &mut Resources) {
    for (i, surface) in p.surfaces.iter().enumerate() {
        let bti = FIRST_SURFACE + i as u32;
        match surface {
            Surface::Ssbo(b) => {
                let buffer = resources.ssbos.get_mut(b).map(std::mem::take);
                thread.surfaces.insert(bti, buffer.unwrap_or_default());
            }
            Surface::Image(b) => {
                if let Some(image) = resources.images.remove(b) {
                    thread.images.insert(bti, image);
                }
            }
            _ => {}
        }
    }
}

/// Takes the SSBOs and images [`lend`] gave a thread back, as the thread left them.
fn take_back(thread: &mut Thread, p: &Payload, resources: &mut Resources) {
    for (i, surface) in p.surfaces.iter().enumerate() {
        let bti = FIRST_SURFACE + i as u32;
        match surface {
            Surface::Ssbo(b) => {
                if let Some(buffer) = thread.surfaces.remove(&bti)
                    && resources.ssbos.contains_key(b)
                {
                    resources.ssbos.insert(*b, buffer);
                }
            }
            Surface::Image(b) => {
                if let Some(image) = thread.images.remove(&bti) {
                    resources.images.insert(*b, image);
                }
            }
            _ => {}
        }
    }
}

/// Runs a vertex kernel over the draw's vertices, eight to a thread at SIMD8 (vertex `v` in
/// channel `v % 8`) or two at SIMD4x2 (vertex `v` in channels `4 (v % 2)` to `4 (v % 2) + 3`),
/// each vertex's URB handle `v` in R1 ([`Payload::urb_handle_dword`]), its attributes in the
/// payload ([`Payload::attribute_dword`]) or, for those the payload has no room for
/// ([`Payload::pulled_attribute`]), in its URB entry; gives each vertex's URB entry as the
/// slots of [`Payload::vue`], four raw dwords each (zero where nothing was written).
pub fn run_vertex(kernel: &Kernel, draw: &mut VertexDraw) -> Result<Vec<Vec<[u32; 4]>>, EmuError> {
    let p = &kernel.payload;
    let program = decoded(kernel)?;
    let sampling = sampling(p, &draw.resources);
    let per_thread = p.vertices_per_thread() as usize;
    let mut entries = Vec::new();
    for first in (0..draw.count).step_by(per_thread) {
        let vertices = (draw.count - first).min(per_thread) as u32;
        let mut thread = Thread::new(8);
        thread.live = (0..vertices)
            .map(|h| p.vertex_channels(h))
            .fold(0, |a, b| a | b);
        for h in 0..vertices {
            let vertex = first + h as usize;
            thread.set(1, p.urb_handle_dword(h) as usize, Type::UD, vertex as u64);
            if let Some((grf, dword)) = p.attribute_dword(SYSTEM_VALUES_SLOT, 0, h) {
                thread.set(grf, dword as usize, Type::UD, vertex as u64);
            }
            for &slot in draw.attributes.keys() {
                let values = draw.attribute(slot, vertex);
                // The attributes the payload has no room for wait in the vertex's URB entry.
                if let Some(oword) = p.pulled_attribute(slot) {
                    let entry = thread.urb.entry(vertex as u32).or_default();
                    let at = 4 * oword as usize;
                    if entry.len() < at + 4 {
                        entry.resize(at + 4, 0);
                    }
                    entry[at..at + 4].copy_from_slice(&values);
                }
                for (c, value) in values.into_iter().enumerate() {
                    if let Some((grf, dword)) = p.attribute_dword(slot, c as u32, h) {
                        thread.set(grf, dword as usize, Type::UD, value as u64);
                    }
                }
            }
        }
        let resources = &mut draw.resources;
        bind(&mut thread, p, resources, &sampling);
        lend(&mut thread, p, resources);
        run(&program, kernel.hw, &mut thread)?;
        take_back(&mut thread, p, resources);
        for h in 0..vertices as usize {
            let dwords = thread.urb.get(&((first + h) as u32));
            let dword = |k: usize| dwords.and_then(|d| d.get(k)).copied().unwrap_or(0);
            entries.push(
                (0..p.vue.len())
                    .map(|slot| std::array::from_fn(|c| dword(4 * slot + c)))
                    .collect(),
            );
        }
    }
    Ok(entries)
}

/// Runs a compute kernel over the dispatch's workgroups, one after another (x fastest): each
/// workgroup's invocations in threads of the dispatch width (local index `i` in channel `i %
/// width` of thread `i / width`, the last thread partial), their local IDs in the payload,
/// the workgroup's ID in R0 and its shared local memory zeroed. The threads run in turns, each
/// until it ends or waits at a barrier; once all of them wait there, they all go on. A thread
/// that ends while others wait would hang the hardware: that is an error.
pub fn run_compute(kernel: &Kernel, dispatch: &mut ComputeDispatch) -> Result<(), EmuError> {
    let p = &kernel.payload;
    let program = decoded(kernel)?;
    let sampling = sampling(p, &dispatch.resources);
    let width = kernel.dispatch_width as usize;
    let [sx, sy, sz] = p.workgroup_size.map(|n| n as usize);
    let invocations = sx * sy * sz;
    let [gx, gy, gz] = dispatch.workgroups;
    let groups = (0..gz).flat_map(|z| (0..gy).flat_map(move |y| (0..gx).map(move |x| [x, y, z])));
    for group in groups {
        let mut slm = vec![0u8; p.shared_bytes as usize];
        let mut threads = Vec::new();
        for first in (0..invocations).step_by(width) {
            let mut thread = Thread::new(kernel.dispatch_width);
            let lanes = (invocations - first).min(width);
            thread.live = u32::MAX >> (32 - lanes);
            for (&dword, &id) in [1, 6, 7].iter().zip(&group) {
                thread.set(0, dword, Type::UD, id as u64);
            }
            if let Some(grf) = p.num_workgroups {
                for (c, &n) in dispatch.workgroups.iter().enumerate() {
                    thread.set(grf, c, Type::UD, n as u64);
                }
            }
            if let Some(grf) = p.local_ids {
                for lane in 0..lanes {
                    let i = first + lane;
                    let id = [i % sx, i / sx % sy, i / (sx * sy)];
                    for (c, &value) in id.iter().enumerate() {
                        let reg = grf as usize + c * width / 8 + lane / 8;
                        thread.set(reg as u8, lane % 8, Type::UD, value as u64);
                    }
                }
            }
            bind(&mut thread, p, &dispatch.resources, &sampling);
            let execution = Execution::new(&program, thread.live)?;
            threads.push((thread, execution));
        }
        let mut running: Vec<usize> = (0..threads.len()).collect();
        while !running.is_empty() {
            let mut waiting = Vec::new();
            for &t in &running {
                let (thread, execution) = &mut threads[t];
                lend(thread, p, &mut dispatch.resources);
                thread
                    .surfaces
                    .insert(SLM_SURFACE, std::mem::take(&mut slm));
                let stop = execution.resume(&program, kernel.hw, thread)?;
                slm = thread.surfaces.remove(&SLM_SURFACE).unwrap_or_default();
                take_back(thread, p, &mut dispatch.resources);
                if stop == Stop::Barrier {
                    waiting.push(t);
                }
            }
            if !waiting.is_empty() && waiting.len() != running.len() {
                return Err(EmuError::Barrier(format!(
                    "workgroup {group:?}: {} of {} threads wait at a barrier the others ended without reaching",
                    waiting.len(),
                    running.len()
                )));
            }
            running = waiting;
        }
    }
    Ok(())
}
