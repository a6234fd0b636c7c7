//! The thread payload: what the dispatcher puts in the GRFs before the thread starts
//! (barycentrics, push constants, the attribute setup, compute IDs), planned from what the
//! shader reads before any instruction is lowered, and where each part of it is.

use super::{LowerError, Payload, PushRange, VueSlot, halves};
use crate::isa::{Region, Type};
use crate::lir::{Base, Operand};
use shrew_engine::interp::memory::layout_variables;
use shrew_engine::ir::{Function, InstKind, Interp, IntrinsicInst, Mode, Shader, Stage};
use shrew_engine::ops::{IndexKind, Intrinsic};
use shrew_engine::passes::lower_io::interp_of;
use std::collections::BTreeMap;

impl Payload {
    /// The push-constant register holding byte `offset` of a buffer, and the byte in it.
    pub fn pushed(&self, binding: Option<u32>, offset: u32) -> Option<(u8, u32)> {
        let range = self.push.iter().find(|r| r.binding == binding)?;
        (offset < range.bytes).then(|| (range.grf + (offset / 32) as u8, offset % 32))
    }

    /// Component `comp` of vertex attribute `slot` as each channel reads it from the payload:
    /// at SIMD8 a GRF of its own, a dword per channel (vertex); at SIMD4x2 dword `comp` of each
    /// vertex's half of the slot's GRF, the same for the vertex's four channels (`<4;4,0>`).
    pub fn attribute(&self, slot: u32, comp: u32) -> Option<Operand> {
        let (grf, dword) = self.attribute_dword(slot, comp, 0)?;
        Some(if self.simd4x2 {
            Operand {
                region: Region::PER_VERTEX,
                ..Operand::scalar(Base::Fixed(grf), 4 * dword, Type::UD)
            }
        } else {
            Operand::payload(grf, 0, Type::UD)
        })
    }

    /// Where the dispatcher puts component `comp` of attribute `slot` of the thread's vertex
    /// `vertex`: the GRF and its dword.
    pub fn attribute_dword(&self, slot: u32, comp: u32, vertex: u32) -> Option<(u8, u32)> {
        let index = self.inputs.iter().position(|&s| s == slot)? as u32;
        if index as usize >= self.pushed_inputs {
            return None;
        }
        Some(if self.simd4x2 {
            (self.setup_start + index as u8, 4 * vertex + comp)
        } else {
            (self.setup_start + (4 * index + comp) as u8, vertex)
        })
    }

    /// How many vertices a vertex thread runs: eight at SIMD8, a channel each; two at SIMD4x2,
    /// four channels each.
    pub fn vertices_per_thread(&self) -> u32 {
        if self.simd4x2 { 2 } else { 8 }
    }

    /// The channels vertex `vertex` of a vertex thread runs in.
    pub fn vertex_channels(&self, vertex: u32) -> u32 {
        if self.simd4x2 {
            0xF << (4 * vertex)
        } else {
            1 << vertex
        }
    }

    /// The dword of R1 (and of a URB write's header) holding the URB handle of the thread's
    /// vertex `vertex`.
    pub fn urb_handle_dword(&self, vertex: u32) -> u32 {
        if self.simd4x2 { 4 * vertex } else { vertex }
    }

    /// Vertex threads: the 128-bit offset in the vertex's URB entry of input `slot`, when the
    /// thread reads it from there rather than from its payload.
    pub fn pulled_attribute(&self, slot: u32) -> Option<u32> {
        let index = self.inputs.iter().position(|&s| s == slot)?;
        (index >= self.pushed_inputs).then_some(index as u32)
    }

    /// The GRF holding component `comp`'s plane of input `slot`, and its byte offset.
    pub fn plane(&self, slot: u32, comp: u32) -> Option<(u8, u32)> {
        let index = self.inputs.iter().position(|&s| s == slot)? as u32;
        Some((
            self.setup_start + (2 * index + comp / 2) as u8,
            (comp % 2) * 16,
        ))
    }
}

/// The input slot the fixed function fills with system values, after every slot of the
/// shader's own: for vertex threads an attribute the vertex fetcher writes (Gen's VF SGVs),
/// component 0 the vertex ID; for fragment threads a flat input the setup overrides with the
/// primitive ID (SBE's primitive ID override), component 0.
pub const SYSTEM_VALUES_SLOT: u32 = u32::MAX;

/// Most GRFs the whole thread payload may take: register allocation reuses each payload GRF
/// after its last read, so the kernel needs only a few of the 128 besides.
const MAX_PAYLOAD_REGS: u32 = 124;

/// GRFs a vertex thread's pushed attributes leave free (a quarter of the register file): the
/// attributes past them are read from the URB (29 slots of doubles pushed whole left 10 GRFs,
/// too few to copy them out).
const FREE_FOR_THE_PROGRAM: u32 = 32;

/// Most GRFs a payload with push constants may take, leaving the kernel room beside them.
const MAX_PUSHING_PAYLOAD_REGS: u32 = 96;

/// Most GRFs of push constants (Mesa's limit too); the rest of the uniforms are pulled.
const MAX_PUSH_REGS: u32 = 64;

/// Decides what the payload holds from what the shader reads: its entry function `func`, and
/// the subroutines, which read the same payload.
pub(super) fn plan_payload(
    shader: &Shader,
    func: &Function,
    width: u8,
    simd4x2: bool,
) -> Result<Payload, LowerError> {
    let vertex = shader.stage == Stage::Vertex;
    let compute = shader.stage == Stage::Compute;
    let per_value = (width / 8) as u32;
    let mut inputs = Vec::new();
    let mut interp = BTreeMap::new();
    let (mut local_ids, mut num_workgroups) = (false, false);
    let (mut perspective, mut linear, mut depth, mut w) = (false, false, false, false);
    // Bytes read of each pushed buffer (`None`: the default uniform block).
    let mut push_ends: BTreeMap<Option<u32>, u32> = BTreeMap::new();
    let functions = shader.functions.iter();
    for (func, inst) in functions.flat_map(|f| f.insts.iter().flatten().map(move |i| (f, i))) {
        let InstKind::Intrinsic(ii) = &inst.kind else {
            continue;
        };
        match ii.op {
            Intrinsic::LoadInput => {
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                // The slots the load's dwords reach (64-bit values take two per component).
                let first = ii.index(IndexKind::Component).unwrap_or(0);
                let dwords = inst
                    .def
                    .map_or(1, |d| d.comps as u32 * d.bits.div_ceil(32) as u32);
                for s in slot..=slot + (first + dwords.max(1) - 1) / 4 {
                    if !inputs.contains(&s) {
                        inputs.push(s);
                    }
                }
                if !vertex {
                    let mode = interp_of(shader, slot);
                    match mode {
                        Interp::NoPerspective => linear = true,
                        Interp::Flat => {}
                        _ => perspective = true,
                    }
                    interp.insert(slot, mode);
                }
            }
            Intrinsic::LoadFragCoord => {
                depth = true;
                w = true;
            }
            Intrinsic::LoadVertexId | Intrinsic::LoadPrimitiveId
                if !compute && !inputs.contains(&SYSTEM_VALUES_SLOT) =>
            {
                inputs.push(SYSTEM_VALUES_SLOT);
                if !vertex {
                    interp.insert(SYSTEM_VALUES_SLOT, Interp::Flat);
                }
            }
            Intrinsic::LoadLocalInvocationId => local_ids = true,
            Intrinsic::LoadNumWorkgroups => num_workgroups = true,
            Intrinsic::LoadUniform | Intrinsic::LoadUbo => {
                if let Some((binding, offset)) = push_location(func, ii) {
                    let bytes = inst
                        .def
                        .map_or(0, |d| d.comps as u32 * d.bits.div_ceil(32) as u32 * 4);
                    let end = push_ends.entry(binding).or_default();
                    *end = (*end).max(offset + bytes);
                }
            }
            _ => {}
        }
    }
    inputs.sort_unstable();
    // Fragment threads: R1 holds the subspans and pixel mask of channels 0-15; at SIMD32, R2
    // those of 16-31. Vertex threads: R1 holds each vertex's URB handle. Compute threads: R0
    // alone (the workgroup's ID and the barrier's).
    let mut next = if vertex {
        2
    } else if compute {
        1
    } else {
        1 + halves(width) as u32
    };
    let mut take = |used: bool, regs: u32| {
        used.then(|| {
            let at = next;
            next += regs;
            at as u8
        })
    };
    let perspective_bary = take(perspective, 2 * per_value);
    let linear_bary = take(linear, 2 * per_value);
    let source_depth = take(depth, per_value);
    let source_w = take(w, per_value);
    // The default block first, then UBOs by binding, until MAX_PUSH_REGS are taken or the
    // payload would outgrow MAX_PUSHING_PAYLOAD_REGS with the rest of it: loads past what is
    // pushed are pulled. (Push constants stay live as long as the shader reads them; the
    // inputs, copied once, free their GRFs early.)
    let regs_per_input = match (vertex, simd4x2) {
        (true, true) => 1,
        (true, false) => 4,
        (false, _) => 2,
    };
    let after_push = num_workgroups as u32
        + local_ids as u32 * 3 * per_value
        + regs_per_input * inputs.len() as u32;
    let mut push = Vec::new();
    let mut push_regs_left =
        MAX_PUSH_REGS.min(MAX_PUSHING_PAYLOAD_REGS.saturating_sub(next + after_push));
    for (binding, bytes) in push_ends {
        let regs = bytes.div_ceil(32).min(push_regs_left);
        if regs == 0 {
            break;
        }
        push.push(PushRange {
            binding,
            grf: next as u8,
            bytes: bytes.min(regs * 32),
        });
        next += regs;
        push_regs_left -= regs;
    }
    // Compute threads: the push constants shared by the workgroup's threads, then those of
    // each thread (Mesa's order for Gen7-9): the local IDs.
    let mut take = |used: bool, regs: u32| {
        used.then(|| {
            let at = next;
            next += regs;
            at as u8
        })
    };
    let num_workgroups = take(num_workgroups, 1);
    let local_ids = take(local_ids, 3 * per_value);
    let setup_start = next;
    // SIMD8 vertex threads push the attributes that leave a quarter of the register file
    // free for the program (the copies of the attributes among them) and read the others from
    // their URB entries. SIMD4x2 ones push them all: a GRF a slot.
    let room = (MAX_PAYLOAD_REGS.saturating_sub(setup_start + FREE_FOR_THE_PROGRAM)
        / regs_per_input) as usize;
    let pushed_inputs = if vertex && !simd4x2 {
        inputs.len().min(room)
    } else {
        inputs.len()
    };
    let regs = setup_start + regs_per_input * pushed_inputs as u32;
    if regs > MAX_PAYLOAD_REGS {
        return Err(LowerError(format!(
            "the thread payload needs {regs} GRFs, past the {MAX_PAYLOAD_REGS} of the 128 it \
             may take: fragment threads receive their inputs' planes there alone"
        )));
    }
    Ok(Payload {
        dispatch_width: width,
        simd4x2,
        vue: if vertex { plan_vue(func) } else { Vec::new() },
        perspective_bary,
        linear_bary,
        source_depth,
        source_w,
        push,
        setup_start: setup_start as u8,
        pushed_inputs,
        inputs,
        interp,
        regs: regs as u8,
        surfaces: Vec::new(),
        constant_data: Vec::new(),
        num_workgroups,
        local_ids,
        workgroup_size: shader.workgroup_size,
        shared_bytes: storage_bytes(shader, &[Mode::Shared])?,
    })
}

/// The slots of a vertex's URB entry: the header, the position, then the other outputs the
/// shader writes, by slot. The point size goes in the header. (`lower-io` leaves built-in
/// outputs as variables, so every `store_output` is of another output.)
fn plan_vue(func: &Function) -> Vec<VueSlot> {
    // Every slot a store reaches: a 64-bit value's components take two dwords each.
    let mut outputs: Vec<u32> = func
        .insts
        .iter()
        .flatten()
        .filter_map(|inst| match &inst.kind {
            InstKind::Intrinsic(ii) if ii.op == Intrinsic::StoreOutput => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0);
                let dwords = func
                    .value_type(ii.srcs[0])
                    .map_or(1, |t| t.comps as u32 * t.bits.div_ceil(32) as u32);
                Some(base..=base + (first + dwords.max(1) - 1) / 4)
            }
            _ => None,
        })
        .flatten()
        .collect();
    outputs.sort_unstable();
    outputs.dedup();
    let mut vue = vec![VueSlot::Header, VueSlot::Position];
    vue.extend(outputs.into_iter().map(VueSlot::Output));
    vue
}

/// The pushed buffer (`None`: the default uniform block) and byte offset a uniform or UBO load
/// reads, when both are constant.
pub(super) fn push_location(func: &Function, ii: &IntrinsicInst) -> Option<(Option<u32>, u32)> {
    if ii.op == Intrinsic::LoadUbo {
        let binding = func.constant_u32(ii.srcs[0])?;
        Some((Some(binding), func.constant_u32(ii.srcs[1])?))
    } else {
        let base = ii.index(IndexKind::Base).unwrap_or(0);
        Some((None, base + func.constant_u32(ii.srcs[0])?))
    }
}

/// Bytes the shader's variables of the given modes take in their storage.
pub(super) fn storage_bytes(shader: &Shader, modes: &[Mode]) -> Result<u32, LowerError> {
    let layouts = layout_variables(shader).map_err(|e| LowerError(e.to_string()))?;
    Ok(shader
        .variables
        .iter()
        .zip(&layouts)
        .filter(|(var, _)| modes.contains(&var.mode))
        .map(|(_, layout)| layout.offset + layout.size)
        .max()
        .unwrap_or(0))
}
