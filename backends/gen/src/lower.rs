//! Lowering of a fragment or compute shader (at a dispatch width of 8, 16 or 32) or a vertex
//! shader (at 8, Gen8 and later) from the shrew IR to the Gen IR ([`crate::lir`]).
//!
//! What: the shader must have been through `lower-io` (inputs, outputs and uniforms at offsets)
//! and be in SSA form; [`lower_fragment`] leaves SSA with [`shrew_engine::out_of_ssa::destruct`],
//! gives each of its registers a virtual GRF run (one GRF per 32-bit component at SIMD8, two at
//! SIMD16, four at SIMD32), and walks the structured tree ([`shrew_engine::structure`]) emitting:
//! - ALU operations component by component, each one SIMD instruction over all channels.
//!   Booleans are 32-bit: all ones for true, zero for false, as `cmp` writes them.
//!   Constants become immediates where the hardware takes one (the last source of a 2-source
//!   instruction) and are moved to a register elsewhere.
//! - Uniforms at constant offsets read the push constants in the payload directly, as scalars
//!   (at most 64 GRFs of them, the default block first).
//! - The constant data (`load_constant`), uniforms at run-time offsets and uniforms past the
//!   pushed ones are pulled with untyped surface reads: each channel loads the dwords at its
//!   own byte address from a surface of the binding table ([`Payload::surfaces`]).
//! - SSBO loads, stores and atomics (as `lower-io` leaves them) are untyped surface reads,
//!   writes and atomic operations, each channel at its own byte address; in fragment shaders
//!   only live pixels write (predicated on f1.0, loaded from the pixel mask as for `discard`).
//! - Temporaries kept in memory (`load_scratch`, `store_scratch`: arrays indexed at run time,
//!   too large for select ladders) live in the thread's scratch memory, each channel's copy
//!   interleaved dword by dword with the others' (dword `d` of channel `c` at `4 · (d · width +
//!   c)`), and are read and written with DWord scattered messages; spills go after them.
//! - Texture instructions become sampler messages ([`crate::sampler`]): the parameters in the
//!   message's order, coordinates and reference divided by a projector, one message per 16
//!   channels (per 8 for derivatives or more than five parameters); the texture is a binding
//!   table entry ([`Surface::Texture`]), the sampler the texture's binding.
//! - Vertex shaders read their attributes from the payload (a GRF per component) and write
//!   their outputs straight into the payloads of SIMD8 URB writes, which send the vertex's
//!   URB entry at the end ([`Payload::vue`]: the header with the point size, the position, the
//!   other outputs by slot; the header only when the point size is written).
//! - Compute shaders read each channel's local invocation ID from the payload (per-thread push
//!   constants), the workgroup's ID from R0.1, R0.6 and R0.7, and the number of workgroups from
//!   a pushed GRF; shared memory is the SLM surface ([`SLM_SURFACE`]) of untyped messages; a
//!   barrier is a data-cache fence (when it orders memory), the gateway's barrier message and a
//!   `wait` on n0 (when it synchronizes the workgroup); the thread ends with the thread
//!   spawner's EOT message.
//! - Inputs of fragment shaders are interpolated with `pln` from the barycentrics and the attribute's plane in the
//!   payload; flat inputs read the plane's constant term.
//! - Control flow as `if`/`else`/`endif` and `do`…`while` with `break` and `cont`; an `if`
//!   whose arms only leave the loop becomes a predicated `break` or `cont`.
//! - `discard` clears the channel's bit in the live-pixel flag f1.0 (loaded from the dispatch's
//!   pixel mask) and halts quads with no live pixel left; a `return` inside control flow halts
//!   the channel. Halted channels join again at the end, where one render-target write per
//!   colour output sends the colours (the last with EOT), predicated on f1.0 when the shader
//!   discards.
//!
//! Why: this is the first step of the backend's straight line (lowering, optimization, register
//! allocation, emission); the Gen IR keeps the hardware's instruction form so later steps see
//! exactly what will run.
//!
//! Invariants: every virtual register is written before it is read on every path the source
//! program takes; a flag is written in the same straight-line code as the instructions that
//! read it, before them. Unsupported input (64-bit or 16-bit values, images, partial SSBO
//! stores, compare-exchange and float atomics, texel offsets, gathers, multisampled or buffer
//! textures, textures at run-time indices or with separate samplers, a dynamically indexed input
//! or output, a UBO or SSBO at a run-time binding) is a
//! [`LowerError`] naming the instruction, never wrong code.
//!
//! Options: the generation and the dispatch width. The generation only picks the data port of
//! untyped surface reads (IVB's data cache, HSW+'s data cache 1). ALU instructions run at the
//! dispatch width; [`crate::simd_width`] splits those the generation cannot run that wide.

use crate::encoding::Predicate;
use crate::isa::{ARF_NOTIFICATION, CondMod, Gen, MathFn, Opcode, Region, Type};
use crate::lir::{Base, Inst, Message, Op, Operand, Program, Src, VReg};
use crate::sampler::{Param, SamplerMsg, TextureSurface, coord_comps};
use crate::simd_width::part;
use shrew_engine::interp::memory::{constant_data, layout_variables};
use shrew_engine::ir::{
    AluSrc, Builtin, Deref, Dim, Function, InstKind, Interp, IntrinsicInst, Mode, Shader, Stage,
    Terminator, Tex, TexOp, TexSrc, Value,
};
use shrew_engine::ops::{AluOp, AtomicOp, IndexKind, Intrinsic};
use shrew_engine::out_of_ssa::{Destruction, Reg, destruct};
use shrew_engine::passes::lower_io::interp_of;
use shrew_engine::structure::{Node, structurize};
use std::collections::BTreeMap;

/// Why a shader cannot be lowered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LowerError(pub String);

/// Where the dispatcher puts what the thread reads: the fragment or vertex thread payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payload {
    pub dispatch_width: u8,
    /// Vertex threads: what each slot of the vertex's URB entry (its VUE) holds, in order.
    /// Empty for fragment threads.
    pub vue: Vec<VueSlot>,
    /// First GRF of the perspective pixel barycentrics (b1 then b2, each a GRF per 8 channels).
    pub perspective_bary: Option<u8>,
    /// First GRF of the linear (noperspective) pixel barycentrics.
    pub linear_bary: Option<u8>,
    /// First GRF of the interpolated window depth.
    pub source_depth: Option<u8>,
    /// First GRF of the interpolated 1/w.
    pub source_w: Option<u8>,
    /// The push constants: byte ranges of the uniform block and of UBOs, each from a GRF.
    pub push: Vec<PushRange>,
    /// First GRF of the attribute setup: for fragment threads two GRFs per input slot in
    /// [`Payload::inputs`], each component's plane as four floats (b1 coefficient, b2
    /// coefficient, unused, constant); for vertex threads four GRFs per input slot, a
    /// component's value per channel in each ([`Payload::attribute`]).
    pub setup_start: u8,
    /// The input slots, in setup order.
    pub inputs: Vec<u32>,
    /// GRFs the payload occupies.
    pub regs: u8,
    /// The buffers the kernel reads through data-port messages and the textures it samples:
    /// entry `i` at binding table index [`FIRST_SURFACE`] + `i` (the render targets come
    /// first).
    pub surfaces: Vec<Surface>,
    /// The shader's constant data ([`shrew_engine::interp::memory::constant_data`]), uploaded
    /// with the kernel as [`Surface::ConstantData`].
    pub constant_data: Vec<u8>,
    /// Compute threads: the GRF whose dwords 0-2 hold the number of workgroups (a push
    /// constant).
    pub num_workgroups: Option<u8>,
    /// Compute threads: the first of the GRFs holding each channel's local invocation ID, x,
    /// y and z one after the other, each a GRF per 8 channels (a per-thread push constant).
    pub local_ids: Option<u8>,
    /// Compute threads: the workgroup's size.
    pub workgroup_size: [u32; 3],
    /// Compute threads: bytes of shared local memory the workgroup needs.
    pub shared_bytes: u32,
}

/// What a slot of a vertex's URB entry holds, as the later stages read it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum VueSlot {
    /// The VUE header: dword 3 the point size, the rest zero.
    Header,
    /// `gl_Position`.
    Position,
    /// The output at this slot of the shader's outputs (as `lower-io` placed them).
    Output(u32),
}

/// A buffer or texture bound in the binding table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Surface {
    /// The shader's constant data.
    ConstantData,
    /// The default uniform block.
    UniformBlock,
    /// The UBO at a binding.
    Ubo(u32),
    /// The SSBO at a binding.
    Ssbo(u32),
    /// A texture the sampler reads.
    Texture(TextureSurface),
    /// The workgroup's shared local memory, at binding table index [`SLM_SURFACE`].
    Shared,
}

/// The binding table index that addresses shared local memory (Gen7-9).
pub const SLM_SURFACE: u32 = 254;

/// The message gateway's barrier message (SFID 3, descriptor bits 2:0).
pub const GATEWAY_BARRIER: u32 = 4;

/// The data cache's memory fence message type (SFID 10).
pub const MEMORY_FENCE: u32 = 7;

/// The thread spawner's shared function, which ends compute threads.
pub const THREAD_SPAWNER: u8 = 7;

/// Binding table index of the first surface after the render targets.
pub const FIRST_SURFACE: u32 = 8;

/// Bytes `0..bytes` of a buffer, pushed into the payload from GRF `grf`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushRange {
    /// The UBO's binding; `None` for the default uniform block.
    pub binding: Option<u32>,
    pub grf: u8,
    pub bytes: u32,
}

impl Payload {
    /// The push-constant register holding byte `offset` of a buffer, and the byte in it.
    pub fn pushed(&self, binding: Option<u32>, offset: u32) -> Option<(u8, u32)> {
        let range = self.push.iter().find(|r| r.binding == binding)?;
        (offset < range.bytes).then(|| (range.grf + (offset / 32) as u8, offset % 32))
    }

    /// The GRF holding component `comp` of vertex attribute `slot`, one dword per channel.
    pub fn attribute(&self, slot: u32, comp: u32) -> Option<u8> {
        let index = self.inputs.iter().position(|&s| s == slot)? as u32;
        Some(self.setup_start + (4 * index + comp) as u8)
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

/// Where each output slot's components are written: the register and the byte offset of
/// component 0 (a render target's colour, or a slot of a URB write's payload).
type Outputs = BTreeMap<u32, (VReg, u32)>;

/// Most GRFs the whole thread payload may take, leaving the rest of the 128 to the kernel.
const MAX_PAYLOAD_REGS: u32 = 100;

/// Most GRFs of push constants (Mesa's limit too); the rest of the uniforms are pulled.
const MAX_PUSH_REGS: u32 = 64;

/// The any4h predicate control: a channel's quad has some flag bit set.
const ANY4H: u8 = 6;

/// The URB's SIMD8 write message (opcode, descriptor bits 3:0).
pub const URB_SIMD8_WRITE: u32 = 7;

/// The flag subregister holding live (covered, not discarded) pixels: f1.0.
pub const LIVE_FLAG: u8 = 2;

/// Lowers the entry function of a fragment shader for `hw` at dispatch width `width` (8, 16 or
/// 32).
pub fn lower_fragment(
    shader: &Shader,
    hw: Gen,
    width: u8,
) -> Result<(Program, Payload), LowerError> {
    if shader.stage != Stage::Fragment {
        return Err(LowerError(format!(
            "a {} shader is not a fragment shader",
            shader.stage.name()
        )));
    }
    if ![8, 16, 32].contains(&width) {
        return Err(LowerError(format!("SIMD{width} is not supported")));
    }
    lower_entry(shader, hw, width)
}

/// Lowers the entry function of a vertex shader for `hw` at SIMD8: each channel one vertex,
/// its attributes in the payload and its outputs written to its URB entry.
pub fn lower_vertex(shader: &Shader, hw: Gen) -> Result<(Program, Payload), LowerError> {
    if shader.stage != Stage::Vertex {
        return Err(LowerError(format!(
            "a {} shader is not a vertex shader",
            shader.stage.name()
        )));
    }
    if hw < Gen::Gen8 {
        return Err(LowerError(
            "vertex shaders need Gen8's SIMD8 vertex dispatch (Gen7 runs them as SIMD4x2)".into(),
        ));
    }
    lower_entry(shader, hw, 8)
}

/// Lowers the entry function of a compute shader for `hw` at dispatch width `width` (8, 16 or
/// 32): each channel one invocation of a workgroup, its local ID in the payload.
pub fn lower_compute(
    shader: &Shader,
    hw: Gen,
    width: u8,
) -> Result<(Program, Payload), LowerError> {
    if shader.stage != Stage::Compute {
        return Err(LowerError(format!(
            "a {} shader is not a compute shader",
            shader.stage.name()
        )));
    }
    if ![8, 16, 32].contains(&width) {
        return Err(LowerError(format!("SIMD{width} is not supported")));
    }
    let invocations: u64 = shader.workgroup_size.iter().map(|&n| n as u64).product();
    let threads = invocations.div_ceil(width as u64);
    if threads > MAX_WORKGROUP_THREADS {
        return Err(LowerError(format!(
            "a workgroup of {invocations} invocations needs {threads} SIMD{width} threads; at most {MAX_WORKGROUP_THREADS} share a barrier"
        )));
    }
    lower_entry(shader, hw, width)
}

/// Most threads of one workgroup (the barrier's thread count on Gen7-9).
pub const MAX_WORKGROUP_THREADS: u64 = 64;

fn lower_entry(shader: &Shader, hw: Gen, width: u8) -> Result<(Program, Payload), LowerError> {
    let func = &shader.functions[shader.entry.0 as usize];
    let tree = structurize(func).map_err(|e| LowerError(e.to_string()))?;
    let destruction = destruct(func);
    let mut payload = plan_payload(shader, func, width)?;
    payload.constant_data = layout_variables(shader)
        .and_then(|layouts| constant_data(shader, &layouts))
        .map_err(|e| LowerError(e.to_string()))?;
    let mut lowering = Lowering {
        shader,
        func,
        hw,
        width,
        regs: destruction,
        vregs: BTreeMap::new(),
        staged: None,
        program: Program {
            dispatch_width: width,
            insts: Vec::new(),
            vreg_sizes: Vec::new(),
            payload_regs: payload.regs as u32,
            scratch_bytes: 0,
        },
        payload,
        outputs: BTreeMap::new(),
        urb_messages: Vec::new(),
        discards: uses_intrinsic(func, is_kill)
            || (shader.stage == Stage::Fragment && uses_intrinsic(func, writes_memory)),
        halts: false,
        lane_offsets: None,
    };
    if uses_intrinsic(func, |op| {
        matches!(op, Intrinsic::LoadScratch | Intrinsic::StoreScratch)
    }) {
        // Each channel's copy of the temporaries, dword by dword: dword `d` of channel `c` at
        // byte `4 · (d · width + c)`, so a message's channels address one run of GRF size.
        let private = storage_bytes(shader, &[Mode::FunctionTemp, Mode::ShaderTemp])?;
        lowering.program.scratch_bytes = (private * width as u32).next_multiple_of(32);
        lowering.lane_offsets = Some(lowering.lane_offsets());
    }
    lowering.lower(&tree)?;
    Ok((lowering.program, lowering.payload))
}

/// The slots of a vertex's URB entry: the header, the position, then the other outputs the
/// shader writes, by slot. The point size goes in the header. (`lower-io` leaves built-in
/// outputs as variables, so every `store_output` is of another output.)
fn plan_vue(func: &Function) -> Vec<VueSlot> {
    let mut outputs: Vec<u32> = func
        .insts
        .iter()
        .flatten()
        .filter_map(|inst| match &inst.kind {
            InstKind::Intrinsic(ii) if ii.op == Intrinsic::StoreOutput => {
                Some(ii.index(IndexKind::Base).unwrap_or(0))
            }
            _ => None,
        })
        .collect();
    outputs.sort_unstable();
    outputs.dedup();
    let mut vue = vec![VueSlot::Header, VueSlot::Position];
    vue.extend(outputs.into_iter().map(VueSlot::Output));
    vue
}

/// The data port's code of an atomic operation (Mesa's BRW_AOP_*), for those the backend emits.
fn atomic_opcode(op: AtomicOp) -> Option<u32> {
    Some(match op {
        AtomicOp::Iand => 1,
        AtomicOp::Ior => 2,
        AtomicOp::Ixor => 3,
        AtomicOp::Xchg => 4,
        AtomicOp::Iadd => 7,
        AtomicOp::Imax => 10,
        AtomicOp::Imin => 11,
        AtomicOp::Umax => 12,
        AtomicOp::Umin => 13,
        _ => return None,
    })
}

/// Whether the function stores the built-in output `builtin`.
fn stores_builtin(shader: &Shader, func: &Function, builtin: Builtin) -> bool {
    func.insts.iter().flatten().any(|inst| match &inst.kind {
        InstKind::Intrinsic(ii) if ii.op == Intrinsic::StoreDeref => {
            matches!(&func.inst(ii.srcs[0]).kind, InstKind::Deref(Deref::Var(var))
                if shader.variables[var.0 as usize].builtin == Some(builtin))
        }
        _ => false,
    })
}

/// The output slot of the vertex shader's `builtin`, if it has one.
fn builtin_slot(shader: &Shader, builtin: Builtin) -> Option<u32> {
    let layouts = layout_variables(shader).ok()?;
    shader
        .variables
        .iter()
        .zip(&layouts)
        .find(|(var, _)| var.mode == Mode::ShaderOut && var.builtin == Some(builtin))
        .map(|(_, layout)| layout.offset / 16)
}

/// The pushed buffer (`None`: the default uniform block) and byte offset a uniform or UBO load
/// reads, when both are constant.
fn push_location(func: &Function, ii: &IntrinsicInst) -> Option<(Option<u32>, u32)> {
    if ii.op == Intrinsic::LoadUbo {
        let binding = func.constant_u32(ii.srcs[0])?;
        Some((Some(binding), func.constant_u32(ii.srcs[1])?))
    } else {
        let base = ii.index(IndexKind::Base).unwrap_or(0);
        Some((None, base + func.constant_u32(ii.srcs[0])?))
    }
}

/// The 16-channel halves of a dispatch (one below SIMD16): messages and the per-half parts of
/// the payload go half by half.
fn halves(width: u8) -> u8 {
    width.div_ceil(16)
}

fn is_kill(op: Intrinsic) -> bool {
    matches!(
        op,
        Intrinsic::Discard
            | Intrinsic::DiscardIf
            | Intrinsic::Terminate
            | Intrinsic::TerminateIf
            | Intrinsic::Demote
            | Intrinsic::DemoteIf
    )
}

/// Whether the intrinsic writes memory: in fragment shaders, only live pixels may.
fn writes_memory(op: Intrinsic) -> bool {
    matches!(op, Intrinsic::StoreSsbo | Intrinsic::SsboAtomic)
}

fn uses_intrinsic(func: &Function, pred: impl Fn(Intrinsic) -> bool) -> bool {
    func.insts.iter().flatten().any(|inst| match &inst.kind {
        InstKind::Intrinsic(ii) => pred(ii.op),
        _ => false,
    })
}

/// Decides what the payload holds from what the shader reads.
fn plan_payload(shader: &Shader, func: &Function, width: u8) -> Result<Payload, LowerError> {
    let vertex = shader.stage == Stage::Vertex;
    let compute = shader.stage == Stage::Compute;
    let per_value = (width / 8) as u32;
    let mut inputs = Vec::new();
    let (mut local_ids, mut num_workgroups) = (false, false);
    let (mut perspective, mut linear, mut depth, mut w) = (false, false, false, false);
    // Bytes read of each pushed buffer (`None`: the default uniform block).
    let mut push_ends: BTreeMap<Option<u32>, u32> = BTreeMap::new();
    for inst in func.insts.iter().flatten() {
        let InstKind::Intrinsic(ii) = &inst.kind else {
            continue;
        };
        match ii.op {
            Intrinsic::LoadInput => {
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                if !inputs.contains(&slot) {
                    inputs.push(slot);
                }
                match interp_of(shader, slot) {
                    _ if vertex => {}
                    Interp::NoPerspective => linear = true,
                    Interp::Flat => {}
                    _ => perspective = true,
                }
            }
            Intrinsic::LoadFragCoord => {
                depth = true;
                w = true;
            }
            Intrinsic::LoadLocalInvocationId => local_ids = true,
            Intrinsic::LoadNumWorkgroups => num_workgroups = true,
            Intrinsic::LoadUniform | Intrinsic::LoadUbo => {
                if let Some((binding, offset)) = push_location(func, ii) {
                    let bytes = inst.def.map_or(0, |d| d.comps as u32 * 4);
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
    // The default block first, then UBOs by binding, until MAX_PUSH_REGS are taken: loads
    // past what is pushed are pulled.
    let mut push = Vec::new();
    let mut push_regs_left = MAX_PUSH_REGS;
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
    let regs_per_input = if vertex { 4 } else { 2 };
    let regs = setup_start + regs_per_input * inputs.len() as u32;
    if regs > MAX_PAYLOAD_REGS {
        return Err(LowerError(format!("the thread payload needs {regs} GRFs")));
    }
    Ok(Payload {
        dispatch_width: width,
        vue: if vertex { plan_vue(func) } else { Vec::new() },
        perspective_bary,
        linear_bary,
        source_depth,
        source_w,
        push,
        setup_start: setup_start as u8,
        inputs,
        regs: regs as u8,
        surfaces: Vec::new(),
        constant_data: Vec::new(),
        num_workgroups,
        local_ids,
        workgroup_size: shader.workgroup_size,
        shared_bytes: storage_bytes(shader, &[Mode::Shared])?,
    })
}

/// Bytes the shader's variables of the given modes take in their storage.
fn storage_bytes(shader: &Shader, modes: &[Mode]) -> Result<u32, LowerError> {
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

struct Lowering<'s> {
    shader: &'s Shader,
    func: &'s Function,
    hw: Gen,
    width: u8,
    regs: Destruction,
    vregs: BTreeMap<(Reg, u8), VReg>,
    /// A value computed into fresh registers instead of its own (see [`Lowering::alu`]).
    staged: Option<(Value, Vec<VReg>)>,
    program: Program,
    payload: Payload,
    outputs: Outputs,
    /// Vertex shaders: the URB writes at the end, each its first VUE slot and its payload (the
    /// header, then four GRFs per slot), which the outputs are written into.
    urb_messages: Vec<(u32, VReg)>,
    /// Whether the fragment shader discards or writes memory: it keeps live pixels in f1.0.
    discards: bool,
    /// Whether some channel may halt: the end needs a halt target.
    halts: bool,
    /// Each channel's byte offset in a dword of scratch (4 times its index), when the shader
    /// keeps temporaries there.
    lane_offsets: Option<VReg>,
}

impl Lowering<'_> {
    fn error(&self, v: Value, what: &str) -> LowerError {
        LowerError(format!(
            "fn {}: {v} (`{}`): {what}",
            self.func.name,
            self.func.inst(v).kind.name()
        ))
    }

    /// GRFs of one 32-bit component at the dispatch width.
    fn comp_regs(&self) -> u32 {
        self.width as u32 / 8
    }

    fn emit(&mut self, inst: Inst) {
        self.program.insts.push(inst);
    }

    /// A SIMD instruction over the dispatch width.
    fn op(&mut self, op: Opcode, dst: Operand, srcs: Vec<Src>) -> &mut Inst {
        let inst = Inst::new(op, self.width, Some(dst), srcs);
        self.program.insts.push(inst);
        self.program.insts.last_mut().expect("just pushed")
    }

    /// A fresh register of `comps` 32-bit components.
    fn temp(&mut self, comps: u32) -> VReg {
        let size = comps * self.comp_regs();
        self.program.new_vreg(size)
    }

    fn temp_operand(&mut self, ty: Type) -> Operand {
        let r = self.temp(1);
        Operand::vector(r, 0, ty)
    }

    /// The virtual register of component `c` of shrew register `reg`. Components get registers
    /// of their own, so that each can be allocated, and coalesced into a payload, alone.
    fn vreg(&mut self, reg: Reg, c: u8) -> VReg {
        if let Some(&v) = self.vregs.get(&(reg, c)) {
            return v;
        }
        let v = self.temp(1);
        self.vregs.insert((reg, c), v);
        v
    }

    /// Component `c` of value `v`'s register, as `ty`.
    fn comp(&mut self, v: Value, c: u8, ty: Type) -> Operand {
        if let Some((staged, temps)) = &self.staged
            && *staged == v
        {
            return Operand::vector(temps[c as usize], 0, ty);
        }
        let reg = self.vreg(self.regs.reg_of(v), c);
        Operand::vector(reg, 0, ty)
    }

    /// Component `c` of a value as a source: an immediate for constants, the push constant for
    /// uniforms at constant offsets, else its register.
    fn read(&mut self, v: Value, c: u8, ty: Type) -> Src {
        match &self.func.inst(v).kind {
            InstKind::Const(values) => {
                let bits = values[c as usize];
                let bits = if self.func.inst(v).def.is_some_and(|d| d.bits == 1) {
                    if bits & 1 != 0 { u32::MAX as u64 } else { 0 }
                } else {
                    bits & 0xFFFF_FFFF
                };
                Src::Imm(ty, bits)
            }
            InstKind::Intrinsic(ii)
                if matches!(ii.op, Intrinsic::LoadUniform | Intrinsic::LoadUbo) =>
            {
                match self.push_constant(v, ii) {
                    Some((binding, offset)) => {
                        let (grf, byte) = self
                            .payload
                            .pushed(binding, offset + 4 * c as u32)
                            .expect("planned with the payload");
                        Src::Reg(Operand::scalar(Base::Fixed(grf), byte, ty))
                    }
                    None => Src::Reg(self.comp(v, c, ty)),
                }
            }
            _ => Src::Reg(self.comp(v, c, ty)),
        }
    }

    fn read_alu(&mut self, src: &AluSrc, c: u8, ty: Type) -> Src {
        self.read(src.value, src.swizzle[c as usize], ty)
    }

    /// The buffer and byte offset of a uniform or UBO load whose components are all pushed.
    fn push_constant(&self, v: Value, ii: &IntrinsicInst) -> Option<(Option<u32>, u32)> {
        let (binding, offset) = push_location(self.func, ii)?;
        let comps = self.func.inst(v).def?.comps as u32;
        self.payload.pushed(binding, offset + 4 * comps - 4)?;
        Some((binding, offset))
    }

    /// Puts an immediate in a register (for sources that cannot be immediates).
    fn in_register(&mut self, src: Src) -> Src {
        match src {
            Src::Imm(ty, _) => {
                let t = self.temp_operand(ty);
                self.op(Opcode::Mov, t, vec![src]);
                Src::Reg(t)
            }
            reg => reg,
        }
    }

    /// A 2-source ALU instruction with its immediates where the hardware takes them: only the
    /// second source may be one; commutative operations swap.
    fn alu2(&mut self, op: Opcode, dst: Operand, a: Src, b: Src, commutative: bool) -> &mut Inst {
        let (a, b) = match (a.is_imm(), b.is_imm()) {
            (true, false) if commutative => (b, a),
            (true, _) => (self.in_register(a), b),
            _ => (a, b),
        };
        self.op(op, dst, vec![a, b])
    }

    /// A 3-source (Align16) instruction: no immediates.
    fn alu3(&mut self, op: Opcode, dst: Operand, srcs: [Src; 3]) {
        let srcs = srcs.map(|s| self.in_register(s)).to_vec();
        self.op(op, dst, srcs);
    }

    fn math(&mut self, f: MathFn, dst: Operand, srcs: Vec<Src>) {
        let srcs: Vec<Src> = srcs.into_iter().map(|s| self.in_register(s)).collect();
        self.op(Opcode::Math, dst, srcs).math = Some(f);
    }

    /// Sets flag `flag` to `src != 0` per channel.
    fn flag_from_bool(&mut self, src: Src, flag: u8) {
        let src = self.in_register(src);
        let inst = self.op(Opcode::Cmp, Operand::null(Type::D), vec![src, Src::d(0)]);
        inst.cond = Some(CondMod::Nz);
        inst.flag = flag;
    }

    fn lower(&mut self, tree: &[Node]) -> Result<(), LowerError> {
        if self.shader.stage == Stage::Vertex {
            self.plan_urb_writes();
        }
        if self.discards {
            // f1 starts as the dispatch's pixel mask (R1.7, and R2.7 for channels 16-31 at
            // SIMD32): helpers are not live.
            for half in 0..halves(self.width) {
                let mut init = Inst::new(
                    Opcode::Mov,
                    1,
                    Some(Operand::scalar(
                        Base::Arf(crate::isa::ARF_FLAG + 1),
                        2 * half as u32,
                        Type::UW,
                    )),
                    vec![Src::Reg(Operand::scalar(
                        Base::Fixed(1 + half),
                        28,
                        Type::UW,
                    ))],
                );
                init.mask_all = true;
                self.emit(init);
            }
        }
        self.nodes(tree, true)?;
        if self.halts {
            self.emit(Inst::control(Op::HaltTarget, self.width));
        }
        match self.shader.stage {
            Stage::Vertex => self.urb_writes(),
            Stage::Compute => self.end_thread(),
            _ => self.color_writes(),
        }
        Ok(())
    }

    /// Lowers a list of nodes; `tail` says nothing runs after it (the end of the shader).
    fn nodes(&mut self, nodes: &[Node], tail: bool) -> Result<(), LowerError> {
        for (i, node) in nodes.iter().enumerate() {
            let node_tail = tail && i + 1 == nodes.len();
            match node {
                Node::Block(b) => self.block(*b)?,
                Node::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let cond = self.read(*cond, 0, Type::D);
                    if let Some((op, inverse)) = leave_only(then, otherwise) {
                        self.flag_from_bool(cond, 0);
                        let mut inst = Inst::control(Op::Hw(op), self.width);
                        inst.predicate = Some(Predicate {
                            control: 1,
                            inverse,
                        });
                        self.emit(inst);
                        continue;
                    }
                    self.flag_from_bool(cond, 0);
                    let mut inst = Inst::control(Op::Hw(Opcode::If), self.width);
                    inst.predicate = Some(Predicate {
                        control: 1,
                        inverse: false,
                    });
                    self.emit(inst);
                    self.nodes(then, node_tail)?;
                    if !otherwise.is_empty() {
                        self.emit(Inst::control(Op::Hw(Opcode::Else), self.width));
                        self.nodes(otherwise, node_tail)?;
                    }
                    self.emit(Inst::control(Op::Hw(Opcode::Endif), self.width));
                }
                Node::Loop(body) => {
                    self.emit(Inst::control(Op::Do, self.width));
                    self.nodes(body, false)?;
                    self.emit(Inst::control(Op::Hw(Opcode::While), self.width));
                }
                Node::Break => self.emit(Inst::control(Op::Hw(Opcode::Break), self.width)),
                Node::Continue => self.emit(Inst::control(Op::Hw(Opcode::Cont), self.width)),
                Node::Return(_) => {
                    // Channels that return early wait at the end for the colour writes.
                    if !node_tail {
                        self.halts = true;
                        self.emit(Inst::control(Op::Hw(Opcode::Halt), self.width));
                    }
                }
                Node::Unreachable => {}
            }
        }
        Ok(())
    }

    fn block(&mut self, b: shrew_engine::ir::BlockId) -> Result<(), LowerError> {
        for copy in self.regs.copies_at_start(b).to_vec() {
            self.copy(copy);
        }
        for &v in &self.func.block(b).insts.clone() {
            self.inst(v)?;
        }
        for copy in self.regs.copies_at_end(b).to_vec() {
            self.copy(copy);
        }
        if let Some(Terminator::Return { value: Some(_) }) = self.func.block(b).terminator {
            return Err(LowerError(format!(
                "fn {}: the entry point returns a value",
                self.func.name
            )));
        }
        Ok(())
    }

    fn copy(&mut self, (dst, src): (Reg, Reg)) {
        for c in 0..self.regs.reg_shape(dst).comps {
            let (d, s) = (self.vreg(dst, c), self.vreg(src, c));
            self.op(
                Opcode::Mov,
                Operand::vector(d, 0, Type::UD),
                vec![Src::Reg(Operand::vector(s, 0, Type::UD))],
            );
        }
    }

    fn inst(&mut self, v: Value) -> Result<(), LowerError> {
        let inst = self.func.inst(v);
        if let Some(def) = inst.def
            && def.bits != 32
            && def.bits != 1
            && !matches!(inst.kind, InstKind::Deref(_))
        {
            let what = format!("{}-bit values are not supported yet", def.bits);
            return Err(self.error(v, &what));
        }
        match &inst.kind {
            InstKind::Const(values) => {
                // Registers for constants that copies or other non-immediate reads need; dead
                // ones go in dead-code elimination.
                for c in 0..values.len() as u8 {
                    let src = self.read(v, c, Type::UD);
                    let dst = self.comp(v, c, Type::UD);
                    self.op(Opcode::Mov, dst, vec![src]);
                }
                Ok(())
            }
            InstKind::Undef | InstKind::Phi(_) | InstKind::Deref(_) => Ok(()),
            InstKind::Alu(alu) => {
                let alu = alu.clone();
                let def = inst.def.expect("ALU instructions define a value");
                self.alu(v, &alu, def.comps)
            }
            InstKind::Intrinsic(ii) => {
                let ii = ii.clone();
                self.intrinsic(v, &ii)
            }
            InstKind::Tex(t) => {
                let t = t.clone();
                self.texture(v, &t)
            }
            InstKind::Call { .. } => Err(self.error(v, "calls must be inlined first")),
        }
    }

    fn intrinsic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let comps = self.func.inst(v).def.map_or(0, |d| d.comps);
        match ii.op {
            Intrinsic::LoadConstant => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                self.pull(v, Surface::ConstantData, base, ii.srcs[0])
            }
            Intrinsic::LoadSsbo => {
                let binding = self.ssbo_binding(v, ii.srcs[0])?;
                self.pull(v, Surface::Ssbo(binding), 0, ii.srcs[1])
            }
            Intrinsic::StoreSsbo => {
                let binding = self.ssbo_binding(v, ii.srcs[1])?;
                let data = self.whole_store(v, ii.srcs[0], ii)?;
                self.untyped_write(Surface::Ssbo(binding), (ii.srcs[2], 0), data, None);
                Ok(())
            }
            Intrinsic::SsboAtomic => {
                let binding = self.ssbo_binding(v, ii.srcs[0])?;
                let aop = self.atomic_operation(v, ii)?;
                let data = vec![self.read(ii.srcs[2], 0, Type::UD)];
                self.untyped_write(
                    Surface::Ssbo(binding),
                    (ii.srcs[1], 0),
                    data,
                    Some((v, aop)),
                );
                Ok(())
            }
            Intrinsic::LoadShared => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                self.pull(v, Surface::Shared, base, ii.srcs[0])
            }
            Intrinsic::StoreShared => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let data = self.whole_store(v, ii.srcs[0], ii)?;
                self.untyped_write(Surface::Shared, (ii.srcs[1], base), data, None);
                Ok(())
            }
            Intrinsic::SharedAtomic => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let aop = self.atomic_operation(v, ii)?;
                let data = vec![self.read(ii.srcs[1], 0, Type::UD)];
                self.untyped_write(Surface::Shared, (ii.srcs[0], base), data, Some((v, aop)));
                Ok(())
            }
            Intrinsic::Barrier => self.barrier(v, ii),
            Intrinsic::LoadScratch => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let def = self.func.inst(v).def.expect("loads define a value");
                if def.bits != 32 {
                    return Err(self.error(v, "only 32-bit scratch loads are supported"));
                }
                for c in 0..comps {
                    let address = self.scratch_address(ii.srcs[0], base + 4 * c as u32);
                    let dst = self.comp(v, c, Type::UD);
                    self.scratch_message(address, dst, None);
                }
                Ok(())
            }
            Intrinsic::StoreScratch => {
                let base = ii.index(IndexKind::Base).unwrap_or(0);
                let data = ii.srcs[0];
                let ty = self.func.value_type(data).expect("stores store a value");
                if ty.bits != 32 {
                    return Err(self.error(v, "only 32-bit scratch stores are supported"));
                }
                let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
                for c in (0..ty.comps).filter(|c| mask >> c & 1 != 0) {
                    let address = self.scratch_address(ii.srcs[1], base + 4 * c as u32);
                    let value = self.read(data, c, Type::UD);
                    self.scratch_message(address, Operand::null(Type::UD), Some(value));
                }
                Ok(())
            }
            Intrinsic::LoadLocalInvocationId => {
                let first = self.payload.local_ids.expect("planned with the payload");
                for c in 0..comps {
                    let grf = first + c * self.width / 8;
                    let dst = self.comp(v, c, Type::UD);
                    self.op(
                        Opcode::Mov,
                        dst,
                        vec![Src::Reg(Operand::payload(grf, 0, Type::UD))],
                    );
                }
                Ok(())
            }
            Intrinsic::LoadWorkgroupId => {
                // R0.1, R0.6 and R0.7 of the thread's header.
                for (c, dword) in [1, 6, 7].into_iter().enumerate().take(comps as usize) {
                    let dst = self.comp(v, c as u8, Type::UD);
                    let id = Operand::scalar(Base::Fixed(0), 4 * dword, Type::UD);
                    self.op(Opcode::Mov, dst, vec![Src::Reg(id)]);
                }
                Ok(())
            }
            Intrinsic::LoadNumWorkgroups => {
                let grf = self
                    .payload
                    .num_workgroups
                    .expect("planned with the payload");
                for c in 0..comps {
                    let dst = self.comp(v, c, Type::UD);
                    let n = Operand::scalar(Base::Fixed(grf), 4 * c as u32, Type::UD);
                    self.op(Opcode::Mov, dst, vec![Src::Reg(n)]);
                }
                Ok(())
            }
            Intrinsic::LoadUniform | Intrinsic::LoadUbo if self.push_constant(v, ii).is_none() => {
                if ii.op == Intrinsic::LoadUniform {
                    let base = ii.index(IndexKind::Base).unwrap_or(0);
                    return self.pull(v, Surface::UniformBlock, base, ii.srcs[0]);
                }
                let Some(binding) = self.func.constant_u32(ii.srcs[0]) else {
                    return Err(self.error(v, "UBOs at run-time bindings are not supported yet"));
                };
                self.pull(v, Surface::Ubo(binding), 0, ii.srcs[1])
            }
            Intrinsic::LoadUniform | Intrinsic::LoadUbo => {
                // Reads go to the push constants; a register copy for copies that need one.
                for c in 0..comps {
                    let src = self.read(v, c, Type::UD);
                    let dst = self.comp(v, c, Type::UD);
                    self.op(Opcode::Mov, dst, vec![src]);
                }
                Ok(())
            }
            Intrinsic::LoadInput => {
                if self.func.constant_u32(ii.srcs[0]) != Some(0) {
                    return Err(self.error(v, "dynamically indexed inputs are not supported yet"));
                }
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0);
                if self.shader.stage == Stage::Vertex {
                    for c in 0..comps {
                        let grf = self.payload.attribute(slot, first + c as u32);
                        let grf =
                            grf.ok_or_else(|| self.error(v, "the input has no payload slot"))?;
                        let dst = self.comp(v, c, Type::UD);
                        let value = Operand::payload(grf, 0, Type::UD);
                        self.op(Opcode::Mov, dst, vec![Src::Reg(value)]);
                    }
                    return Ok(());
                }
                let interp = interp_of(self.shader, slot);
                for c in 0..comps {
                    let comp = first + c as u32;
                    let Some((grf, offset)) = self.payload.plane(slot, comp) else {
                        return Err(self.error(v, "the input has no payload slot"));
                    };
                    let dst = self.comp(v, c, Type::F);
                    let bary = match interp {
                        Interp::Flat => None,
                        Interp::NoPerspective => self.payload.linear_bary,
                        _ => self.payload.perspective_bary,
                    };
                    match bary {
                        None => {
                            let constant = Operand::scalar(Base::Fixed(grf), offset + 12, Type::F);
                            self.op(Opcode::Mov, dst, vec![Src::Reg(constant)]);
                        }
                        Some(bary) => {
                            let plane = Operand {
                                region: Region::new(0, 4, 1),
                                ..Operand::scalar(Base::Fixed(grf), offset, Type::F)
                            };
                            let bary = Operand::payload(bary, 0, Type::F);
                            self.op(Opcode::Pln, dst, vec![Src::Reg(plane), Src::Reg(bary)]);
                        }
                    }
                }
                Ok(())
            }
            Intrinsic::StoreOutput => {
                if self.func.constant_u32(ii.srcs[1]) != Some(0) {
                    return Err(self.error(v, "dynamically indexed outputs are not supported yet"));
                }
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0) as u8;
                self.store_output(v, slot, first, ii.srcs[0], ii)
            }
            // `lower-io` leaves built-in outputs as variables: a vertex shader's position and
            // point size go to their slots.
            Intrinsic::StoreDeref if self.shader.stage == Stage::Vertex => {
                let builtin = match &self.func.inst(ii.srcs[0]).kind {
                    InstKind::Deref(Deref::Var(var)) => {
                        self.shader.variables[var.0 as usize].builtin
                    }
                    _ => None,
                };
                let slot = match builtin {
                    Some(b @ (Builtin::Position | Builtin::PointSize)) => {
                        builtin_slot(self.shader, b)
                    }
                    _ => None,
                };
                let slot = slot.ok_or_else(|| {
                    self.error(
                        v,
                        "only stores of gl_Position and gl_PointSize are supported",
                    )
                })?;
                self.store_output(v, slot, 0, ii.srcs[1], ii)
            }
            Intrinsic::LoadFragCoord => self.frag_coord(v),
            Intrinsic::Discard | Intrinsic::Terminate | Intrinsic::Demote => {
                self.kill(None);
                Ok(())
            }
            Intrinsic::DiscardIf | Intrinsic::TerminateIf | Intrinsic::DemoteIf => {
                let cond = self.read(ii.srcs[0], 0, Type::D);
                self.kill(Some(cond));
                Ok(())
            }
            Intrinsic::LoadFrontFace => {
                // Front-facing only, as the interpreter's default draw: all ones.
                let dst = self.comp(v, 0, Type::D);
                self.op(Opcode::Mov, dst, vec![Src::d(-1)]);
                Ok(())
            }
            _ => Err(self.error(v, "this intrinsic is not supported yet")),
        }
    }

    /// Writes the components of `data` the store's write mask has, from component `first` of
    /// output `slot` on (a render target's colour, or a slot of the vertex's URB entry).
    fn store_output(
        &mut self,
        v: Value,
        slot: u32,
        first: u8,
        data: Value,
        ii: &IntrinsicInst,
    ) -> Result<(), LowerError> {
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        if self.func.value_type(data).is_some_and(|t| t.bits != 32) {
            return Err(self.error(v, "only 32-bit outputs are supported"));
        }
        let out = match self.outputs.get(&slot) {
            Some(&out) => out,
            None if self.shader.stage == Stage::Vertex => {
                return Err(self.error(v, "the output has no slot in the URB entry"));
            }
            None => {
                let out = (self.temp(4), 0);
                self.outputs.insert(slot, out);
                out
            }
        };
        let n = self.func.value_type(data).map_or(0, |t| t.comps);
        for c in 0..n {
            if mask & (1 << c) == 0 || first + c >= 4 {
                continue;
            }
            let src = self.read(data, c, Type::UD);
            self.write_colour(out, (first + c) as u32, src);
        }
        Ok(())
    }

    /// `gl_FragCoord`: pixel centres from the subspan origins in R1, depth and 1/w from the
    /// payload.
    fn frag_coord(&mut self, v: Value) -> Result<(), LowerError> {
        // R1.2 + 2n holds subspan n's upper-left x and y as words: one origin per 4 channels,
        // plus 0,1,0,1 (x) or 0,0,1,1 (y) inside the quad.
        for (c, word, pattern) in [(0u8, 4u32, 0x1010_1010u64), (1, 5, 0x1100_1100)] {
            let ints = self.temp_operand(Type::UW);
            let ints = Operand {
                region: Region::new(8, 8, 1),
                ..ints
            };
            // Each 16 channels' subspans are in their half's R1.
            for half in 0..halves(self.width) {
                let origin = Operand {
                    region: Region::new(2, 4, 0),
                    ..Operand::scalar(Base::Fixed(1 + half), word * 2, Type::UW)
                };
                let width = self.width.min(16);
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(
                        Opcode::Add,
                        width,
                        Some(Operand {
                            offset: 32 * half as u32,
                            ..ints
                        }),
                        vec![Src::Reg(origin), Src::Imm(Type::V, pattern)],
                    )
                });
            }
            let dst = self.comp(v, c, Type::F);
            self.op(Opcode::Add, dst, vec![Src::Reg(ints), Src::f(0.5)]);
        }
        for (c, grf) in [(2u8, self.payload.source_depth), (3, self.payload.source_w)] {
            let grf = grf.expect("planned with the payload");
            let dst = self.comp(v, c, Type::F);
            let src = Operand::payload(grf, 0, Type::F);
            self.op(Opcode::Mov, dst, vec![Src::Reg(src)]);
        }
        Ok(())
    }

    /// Clears the live bit of the channels where `cond` holds (all active ones without a
    /// condition) and halts quads with no live pixel left.
    fn kill(&mut self, cond: Option<Src>) {
        let (a, b) = match cond {
            Some(c) => (self.in_register(c), Src::d(0)),
            // x != x is false for every channel: R0's first dword compared with itself.
            None => {
                let r0 = Src::Reg(Operand::scalar(Base::Fixed(0), 0, Type::UD));
                (r0, r0)
            }
        };
        let cmp = self.op(Opcode::Cmp, Operand::null(Type::D), vec![a, b]);
        cmp.cond = Some(if cond.is_some() {
            CondMod::Z
        } else {
            CondMod::Nz
        });
        cmp.flag = LIVE_FLAG;
        cmp.predicate = Some(Predicate {
            control: 1,
            inverse: false,
        });
        let mut halt = Inst::control(Op::Hw(Opcode::Halt), self.width);
        // Inverted any4h: the quads none of whose pixels is live.
        halt.predicate = Some(Predicate {
            control: ANY4H,
            inverse: true,
        });
        halt.flag = LIVE_FLAG;
        self.emit(halt);
        self.halts = true;
    }

    /// The binding table index of a surface, bound on first use.
    fn surface(&mut self, surface: Surface) -> u32 {
        if surface == Surface::Shared {
            return SLM_SURFACE;
        }
        let surfaces = &mut self.payload.surfaces;
        let index = match surfaces.iter().position(|&s| s == surface) {
            Some(i) => i,
            None => {
                surfaces.push(surface);
                surfaces.len() - 1
            }
        };
        FIRST_SURFACE + index as u32
    }

    /// The texture and sampler bindings of a texture instruction: a deref of a texture
    /// variable, or an element of an array of them at a constant index (the sampler is the
    /// texture's, a combined one); else the instruction's own bindings.
    /// A texture instruction: one sampler message per 16 channels, or per 8 when its payload
    /// takes more than five parameters (the payload limit) or it has derivatives, each
    /// parameter one 32-bit value per channel as [`SamplerMsg::params`] lays them out, the
    /// four components of the response copied to the value's.
    fn texture(&mut self, v: Value, t: &Tex) -> Result<(), LowerError> {
        let def = self
            .func
            .inst(v)
            .def
            .expect("texture instructions define a value");
        if def.bits != 32 || def.comps > 4 {
            return Err(self.error(v, "only results of 1 to 4 32-bit components are supported"));
        }
        let unsupported = [
            TexSrc::Offset,
            TexSrc::MinLod,
            TexSrc::MsIndex,
            TexSrc::TextureOffset,
            TexSrc::SamplerOffset,
        ];
        if let Some(kind) = unsupported.into_iter().find(|&k| t.src(k).is_some()) {
            return Err(self.error(v, &format!("texture source {kind:?} is not supported yet")));
        }
        if !matches!(t.dim, Dim::D1 | Dim::D2 | Dim::D3 | Dim::Cube | Dim::Rect) {
            return Err(self.error(
                v,
                &format!("{} textures are not supported yet", t.dim.name()),
            ));
        }
        let (binding, sampler) = t
            .bindings(self.shader, self.func)
            .map_err(|e| self.error(v, &e))?;
        if sampler > 15 {
            return Err(self.error(v, "sampler indices past 15 are not supported"));
        }
        let lod_zero = t
            .src(TexSrc::Lod)
            .is_some_and(|l| self.func.constant_u32(l) == Some(0));
        let msg = SamplerMsg::for_op(t.op, t.is_shadow, lod_zero, self.hw)
            .map_err(|e| self.error(v, &e))?;
        let bti = self.surface(Surface::Texture(TextureSurface {
            binding,
            dim: t.dim,
            arrayed: t.is_array,
            dest_type: t.dest_type,
        }));
        let coords = coord_comps(t.dim, t.is_array);
        let params = msg.params(t.dim, t.is_array, self.hw);
        let ty = if msg.integer_params() {
            Type::D
        } else {
            Type::F
        };
        let read = |l: &mut Self, kind: TexSrc, c: u8| {
            t.src(kind)
                .map_or(Src::Imm(ty, 0), |value| l.read(value, c, ty))
        };
        // Coordinates (but not the array index) and the reference divided by the projector.
        let axes = coords - t.is_array as u8;
        let mut coord: Vec<Src> = (0..coords).map(|c| read(self, TexSrc::Coord, c)).collect();
        let mut reference = read(self, TexSrc::Comparator, 0);
        if let Some(q) = t.src(TexSrc::Projector) {
            let inverse = self.temp_operand(Type::F);
            let q = self.read(q, 0, Type::F);
            self.math(MathFn::Inv, inverse, vec![q]);
            let reference = t.src(TexSrc::Comparator).map(|_| &mut reference);
            for x in coord[..axes as usize].iter_mut().chain(reference) {
                let projected = self.temp_operand(Type::F);
                self.alu2(Opcode::Mul, projected, *x, Src::Reg(inverse), true);
                *x = Src::Reg(projected);
            }
        }
        let payload_of = |l: &mut Self, p: Param| match p {
            Param::Coord(c) => coord.get(c as usize).copied().unwrap_or(Src::Imm(ty, 0)),
            Param::Ref => reference,
            Param::Bias => read(l, TexSrc::Bias, 0),
            Param::Lod => read(l, TexSrc::Lod, 0),
            Param::Ddx(c) => read(l, TexSrc::Ddx, c),
            Param::Ddy(c) => read(l, TexSrc::Ddy, c),
        };
        let piece = if params.len() > 5 || t.op == TexOp::Txd {
            8
        } else {
            self.width.min(16)
        };
        let per_param = piece as u32 / 8;
        let message = Message {
            sfid: 2,
            mlen: (params.len() as u32 * per_param) as u8,
            rlen: (4 * per_param) as u8,
            control: per_param << 17 | msg.code() << 12 | sampler << 8 | bti,
            eot: false,
        };
        for group in (0..self.width).step_by(piece as usize) {
            let payload = self.program.new_vreg(message.mlen as u32);
            for (k, &p) in params.iter().enumerate() {
                let dst = Operand::vector(payload, k as u32 * per_param * 32, ty);
                let src = payload_of(self, p);
                self.on_channels(group, piece, Opcode::Mov, dst, vec![src]);
            }
            let response = self.program.new_vreg(message.rlen as u32);
            let payload = Src::Reg(Operand::vector(payload, 0, Type::UD));
            let descriptor = Src::ud(message.descriptor(false));
            let dst = Operand::vector(response, 0, Type::UD);
            // The payload is this piece's alone: the send reads it from its start.
            self.emit(Inst {
                group,
                send: Some(message),
                ..Inst::new(Opcode::Send, piece, Some(dst), vec![payload, descriptor])
            });
            for c in 0..def.comps {
                // `textureQueryLevels` is the mip count `resinfo` gives in its fourth component.
                let from = if t.op == TexOp::QueryLevels {
                    3
                } else {
                    c as u32
                };
                let response = Operand::vector(response, from * per_param * 32, Type::UD);
                let dst = part(self.comp(v, c, Type::UD), group);
                self.emit(Inst {
                    group,
                    ..Inst::new(Opcode::Mov, piece, Some(dst), vec![Src::Reg(response)])
                });
            }
        }
        Ok(())
    }

    /// The components of a store's `data`, which must be a whole 32-bit value.
    fn whole_store(
        &mut self,
        v: Value,
        data: Value,
        ii: &IntrinsicInst,
    ) -> Result<Vec<Src>, LowerError> {
        let ty = self.func.value_type(data).expect("stores store a value");
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        if ty.bits != 32 || mask != (1 << ty.comps) - 1 {
            return Err(self.error(v, "only whole stores of 32-bit values are supported"));
        }
        Ok((0..ty.comps)
            .map(|c| self.read(data, c, Type::UD))
            .collect())
    }

    /// Each channel's index times 4, for every channel of the dispatch (WE_all): the vector
    /// immediate 0-7 as words, 8 added for each further 8 channels, shifted into dwords.
    fn lane_offsets(&mut self) -> VReg {
        let width = self.width;
        let words = self.program.new_vreg((width as u32 * 2).div_ceil(32));
        let all = |mut inst: Inst| {
            inst.mask_all = true;
            inst
        };
        self.emit(all(Inst::new(
            Opcode::Mov,
            8,
            Some(Operand::vector(words, 0, Type::UW)),
            vec![Src::Imm(Type::UV, 0x7654_3210)],
        )));
        let mut done = 8;
        while done < width {
            self.emit(all(Inst::new(
                Opcode::Add,
                done,
                Some(Operand::vector(words, 2 * done as u32, Type::UW)),
                vec![
                    Src::Reg(Operand::vector(words, 0, Type::UW)),
                    Src::Imm(Type::UW, done as u64),
                ],
            )));
            done *= 2;
        }
        let offsets = self.temp(1);
        self.emit(all(Inst::new(
            Opcode::Shl,
            width,
            Some(Operand::vector(offsets, 0, Type::UD)),
            vec![Src::Reg(Operand::vector(words, 0, Type::UW)), Src::ud(2)],
        )));
        offsets
    }

    /// Each channel's byte address in scratch of the dword at byte `base` + `offset` of its
    /// temporaries ([`Lowering::lane_offsets`]' layout).
    fn scratch_address(&mut self, offset: Value, base: u32) -> Operand {
        let lanes = self
            .lane_offsets
            .expect("planned for shaders that use scratch");
        let lanes = Src::Reg(Operand::vector(lanes, 0, Type::UD));
        let width = self.width as u32;
        let address = self.temp_operand(Type::UD);
        match self.func.constant_u32(offset) {
            Some(offset) => {
                let first = (base + offset) * width;
                self.alu2(Opcode::Add, address, lanes, Src::ud(first), true);
            }
            None => {
                let offset = self.read(offset, 0, Type::UD);
                let scaled = self.temp_operand(Type::UD);
                let shift = width.trailing_zeros();
                self.alu2(Opcode::Shl, scaled, offset, Src::ud(shift), false);
                let sum = self.temp_operand(Type::UD);
                self.alu2(Opcode::Add, sum, Src::Reg(scaled), lanes, true);
                self.alu2(
                    Opcode::Add,
                    address,
                    Src::Reg(sum),
                    Src::ud(base * width),
                    true,
                );
            }
        }
        address
    }

    /// A DWord scattered read into `dst` (or, with `data`, write) of each channel's dword at
    /// its scratch `address`: data cache messages 3 and 11 on the stateless surface (Gen8+'s
    /// non-coherent 253, Gen7's 255), the header a copy of R0 (which holds the thread's
    /// scratch base); one message per 16 channels.
    fn scratch_message(&mut self, address: Operand, dst: Operand, data: Option<Src>) {
        let width = self.width.min(16);
        let per_value = width as u32 / 8;
        let (message_type, rlen) = match data {
            Some(_) => (11, 0),
            None => (3, per_value),
        };
        let surface = if self.hw.is_gen8_plus() { 253 } else { 255 };
        // Block size (bits 9:8): SIMD8 2, SIMD16 3.
        let block = if width == 16 { 3 } else { 2 };
        let message = Message {
            sfid: 10,
            mlen: (1 + per_value * (1 + data.is_some() as u32)) as u8,
            rlen: rlen as u8,
            control: message_type << 14 | block << 8 | surface,
            eot: false,
        };
        for half in 0..halves(self.width) {
            let payload = self.program.new_vreg(message.mlen as u32);
            self.copy_header(payload);
            let at_address = Operand::vector(payload, 32, Type::UD);
            self.on_half(half, Opcode::Mov, at_address, vec![Src::Reg(address)]);
            if let Some(value) = data {
                let at_data = Operand::vector(payload, 32 * (1 + per_value), Type::UD);
                self.on_half(half, Opcode::Mov, at_data, vec![value]);
            }
            let response = match data {
                Some(_) => Operand::null(Type::UD),
                None => Operand::vector(self.program.new_vreg(per_value), 0, Type::UD),
            };
            // The payload and response are this half's alone: read from their start.
            self.emit(Inst {
                group: 16 * half,
                send: Some(message),
                ..Inst::new(
                    Opcode::Send,
                    width,
                    Some(response),
                    vec![
                        Src::Reg(Operand::vector(payload, 0, Type::UD)),
                        Src::ud(message.descriptor(true)),
                    ],
                )
            });
            if data.is_none() {
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(
                        Opcode::Mov,
                        width,
                        Some(part(dst, 16 * half)),
                        vec![Src::Reg(response)],
                    )
                });
            }
        }
    }

    /// The data port's code of an atomic intrinsic's operation.
    fn atomic_operation(&self, v: Value, ii: &IntrinsicInst) -> Result<u32, LowerError> {
        let op = ii.index(IndexKind::AtomicOp).and_then(AtomicOp::from_index);
        op.and_then(atomic_opcode)
            .ok_or_else(|| self.error(v, "this atomic operation is not supported yet"))
    }

    /// A barrier: a memory fence when it orders memory, then, when it synchronizes the
    /// workgroup, the gateway's barrier message and a `wait` on n0 until every thread of the
    /// group has sent it. (A subgroup's channels run together: they need no message.)
    fn barrier(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        const WORKGROUP_SCOPE: u32 = 3;
        let orders_memory = ii.index(IndexKind::MemorySemantics).unwrap_or(0) != 0
            && ii.index(IndexKind::MemoryModes).unwrap_or(0) != 0;
        let synchronizes = ii.index(IndexKind::ExecutionScope).unwrap_or(0) >= WORKGROUP_SCOPE;
        if synchronizes && self.shader.stage != Stage::Compute {
            return Err(self.error(v, "only compute shaders synchronize workgroups"));
        }
        if orders_memory {
            let fence = Message {
                sfid: 10,
                mlen: 1,
                rlen: 0,
                control: MEMORY_FENCE << 14,
                eot: false,
            };
            let header = self.header();
            self.send_header(header, fence);
        }
        if synchronizes {
            let barrier = Message {
                sfid: 3,
                mlen: 1,
                rlen: 0,
                control: GATEWAY_BARRIER,
                eot: false,
            };
            // The barrier's ID comes from R0.2 (bits 27:24; Gen9 also keeps bit 31).
            let header = self.header();
            let mask = if self.hw >= Gen::Gen9 {
                0x8f00_0000
            } else {
                0x0f00_0000
            };
            let id = Operand::scalar(Base::Fixed(0), 8, Type::UD);
            let mut and = Inst::new(
                Opcode::And,
                1,
                Some(Operand::scalar(Base::Vgrf(header), 8, Type::UD)),
                vec![Src::Reg(id), Src::ud(mask)],
            );
            and.mask_all = true;
            self.emit(and);
            self.send_header(header, barrier);
            let n0 = Operand::scalar(Base::Arf(ARF_NOTIFICATION), 0, Type::UD);
            let mut wait = Inst::new(Opcode::Wait, 1, Some(n0), vec![Src::Reg(n0)]);
            wait.mask_all = true;
            self.emit(wait);
        }
        Ok(())
    }

    /// A copy of the thread's header R0 (WE_all), the payload of the gateway's messages, the
    /// data port's fences and the thread spawner's.
    fn header(&mut self) -> VReg {
        let header = self.temp(1);
        self.copy_header(header);
        header
    }

    /// Copies R0 into the first GRF of `payload` (WE_all).
    fn copy_header(&mut self, payload: VReg) {
        let mut copy = Inst::new(
            Opcode::Mov,
            8,
            Some(Operand::vector(payload, 0, Type::UD)),
            vec![Src::Reg(Operand::payload(0, 0, Type::UD))],
        );
        copy.mask_all = true;
        self.emit(copy);
    }

    /// Sends a one-GRF message of `header` (WE_all).
    fn send_header(&mut self, header: VReg, message: Message) {
        let mut send = simd8_send(header, message);
        send.mask_all = true;
        self.emit(send);
    }

    /// The end of a compute thread: the thread spawner's message with EOT.
    fn end_thread(&mut self) {
        // Resource select (bit 4): the fixed-function unit frees the thread's resources.
        let end = Message {
            sfid: THREAD_SPAWNER,
            mlen: 1,
            rlen: 0,
            control: 1 << 4,
            eot: true,
        };
        let header = self.header();
        self.send_header(header, end);
    }

    /// The binding of an SSBO access, which must be a constant.
    fn ssbo_binding(&self, v: Value, binding: Value) -> Result<u32, LowerError> {
        self.func
            .constant_u32(binding)
            .ok_or_else(|| self.error(v, "SSBOs at run-time bindings are not supported yet"))
    }

    /// Writes `data` (one dword per component) at byte `base` + `offset` of a surface, each channel at
    /// its own offset: an untyped surface write (HSW+ data cache 1, message 9; IVB data cache,
    /// message 13); or, with `atomic`, the untyped atomic operation (data cache 1 message 2,
    /// data cache message 6) whose old value goes to the atomic's value. In fragment shaders
    /// only live pixels write (f1.0).
    fn untyped_write(
        &mut self,
        surface: Surface,
        (offset, base): (Value, u32),
        data: Vec<Src>,
        atomic: Option<(Value, u32)>,
    ) {
        let bti = self.surface(surface);
        let mut offset = self.read(offset, 0, Type::UD);
        if base != 0 {
            let address = self.temp_operand(Type::UD);
            self.alu2(Opcode::Add, address, offset, Src::ud(base), true);
            offset = Src::Reg(address);
        }
        let width = self.width.min(16);
        let per_comp = width as u32 / 8;
        let simd8 = width == 8;
        let (sfid, message_type, control) = match (atomic, self.hw >= Gen::Gen75) {
            // The operation, SIMD8 mode (bit 4), return data (bit 5).
            (Some((_, aop)), hw75) => {
                let control = aop | (simd8 as u32) << 4 | 1 << 5;
                if hw75 {
                    (12, 2, control)
                } else {
                    (10, 6, control)
                }
            }
            // SIMD mode (SIMD16 1, SIMD8 2) in bits 5:4, the disabled channels in 3:0.
            (None, hw75) => {
                let control = (if simd8 { 2 } else { 1 }) << 4 | (0xF & !((1 << data.len()) - 1));
                if hw75 {
                    (12, 9, control)
                } else {
                    (10, 13, control)
                }
            }
        };
        let message = Message {
            sfid,
            mlen: ((1 + data.len() as u32) * per_comp) as u8,
            rlen: if atomic.is_some() { per_comp as u8 } else { 0 },
            control: message_type << 14 | control << 8 | bti,
            eot: false,
        };
        for half in 0..halves(self.width) {
            let payload = self.program.new_vreg(message.mlen as u32);
            for (k, &src) in [offset].iter().chain(&data).enumerate() {
                let dst = Operand::vector(payload, k as u32 * per_comp * 32, Type::UD);
                self.on_half(half, Opcode::Mov, dst, vec![src]);
            }
            let response = match atomic {
                Some(_) => Operand::vector(self.program.new_vreg(per_comp), 0, Type::UD),
                None => Operand::null(Type::UD),
            };
            let payload = Src::Reg(Operand::vector(payload, 0, Type::UD));
            let descriptor = Src::ud(message.descriptor(false));
            // The payload is this half's alone: the send reads it from its start.
            let send = Inst {
                group: 16 * half,
                send: Some(message),
                ..Inst::new(
                    Opcode::Send,
                    width,
                    Some(response),
                    vec![payload, descriptor],
                )
            };
            self.emit_for_live_pixels(send);
            if let Some((v, _)) = atomic {
                let dst = part(self.comp(v, 0, Type::UD), 16 * half);
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(Opcode::Mov, width, Some(dst), vec![Src::Reg(response)])
                });
            }
        }
    }

    /// Loads value `v` (32-bit components) from byte `base` + `offset` of a surface, each
    /// channel at its own offset: an untyped surface read of as many dwords as `v` has
    /// components (HSW+ data cache 1, message 1; IVB data cache, message 5).
    fn pull(
        &mut self,
        v: Value,
        surface: Surface,
        base: u32,
        offset: Value,
    ) -> Result<(), LowerError> {
        let def = self.func.inst(v).def.expect("loads define a value");
        if def.bits != 32 || def.comps > 4 {
            return Err(self.error(v, "only loads of 1 to 4 32-bit components are supported"));
        }
        let bti = self.surface(surface);
        let address = self.temp_operand(Type::UD);
        let offset = self.read(offset, 0, Type::UD);
        if base == 0 {
            self.op(Opcode::Mov, address, vec![offset]);
        } else {
            self.alu2(Opcode::Add, address, offset, Src::ud(base), true);
        }
        let (sfid, message_type) = if self.hw >= Gen::Gen75 {
            (12, 1)
        } else {
            (10, 5)
        };
        // One message per 16 channels: SIMD mode 13:12 (SIMD16 1, SIMD8 2), disabled channels
        // 11:8, binding table index.
        let width = self.width.min(16);
        let per_comp = width / 8;
        let simd_mode = if width == 16 { 1 } else { 2 };
        let disabled = 0xF & !((1u32 << def.comps) - 1);
        let message = Message {
            sfid,
            mlen: per_comp,
            rlen: def.comps * per_comp,
            control: message_type << 14 | simd_mode << 12 | disabled << 8 | bti,
            eot: false,
        };
        for half in 0..halves(self.width) {
            let data = self.program.new_vreg(message.rlen as u32);
            let response = Operand::vector(data, 0, Type::UD);
            let descriptor = Src::ud(message.descriptor(false));
            let send = self.on_half(
                half,
                Opcode::Send,
                response,
                vec![Src::Reg(address), descriptor],
            );
            send.send = Some(message);
            for c in 0..def.comps {
                let dst = part(self.comp(v, c, Type::UD), 16 * half);
                let at = c as u32 * per_comp as u32 * 32;
                // The response is this half's alone: read from its start.
                let response = Operand::vector(data, at, Type::UD);
                self.emit(Inst {
                    group: 16 * half,
                    ..Inst::new(Opcode::Mov, width, Some(dst), vec![Src::Reg(response)])
                });
            }
        }
        Ok(())
    }

    /// Plans the URB writes of a vertex shader's outputs ([`Payload::vue`]), two slots to a
    /// message, from slot 1 unless the shader writes the point size (slot 0, the header's
    /// fourth dword): each output slot is written straight into its message's payload.
    fn plan_urb_writes(&mut self) {
        let position = builtin_slot(self.shader, Builtin::Position);
        let point_size = builtin_slot(self.shader, Builtin::PointSize)
            .filter(|_| stores_builtin(self.shader, self.func, Builtin::PointSize));
        let vue = self.payload.vue.clone();
        let first = if point_size.is_some() { 0 } else { 1 };
        for (m, slots) in vue[first..].chunks(2).enumerate() {
            let first_slot = (first + 2 * m) as u32;
            let payload = self.program.new_vreg(1 + 4 * slots.len() as u32);
            for (k, slot) in slots.iter().enumerate() {
                let at = (1 + 4 * k as u32) * 32;
                let output = match *slot {
                    VueSlot::Header => point_size.map(|s| (s, at + 3 * 32)),
                    VueSlot::Position => position.map(|s| (s, at)),
                    VueSlot::Output(s) => Some((s, at)),
                };
                if let Some((s, at)) = output {
                    self.outputs.insert(s, (payload, at));
                }
            }
            self.urb_messages.push((first_slot, payload));
        }
    }

    /// The URB writes [`Lowering::plan_urb_writes`] planned, the last with EOT: each payload's
    /// header holds the URB handles; the header's other dwords and the slots the shader never
    /// writes are zero.
    fn urb_writes(&mut self) {
        let written: Vec<(VReg, u32)> = self.outputs.values().copied().collect();
        let messages = self.urb_messages.clone();
        for (m, &(first_slot, payload)) in messages.iter().enumerate() {
            let slots = (self.program.vreg_sizes[payload.0 as usize] - 1) / 4;
            let mut header = Inst::new(
                Opcode::Mov,
                8,
                Some(Operand::vector(payload, 0, Type::UD)),
                vec![Src::Reg(Operand::payload(1, 0, Type::UD))],
            );
            header.mask_all = true;
            self.emit(header);
            for k in 0..slots {
                let at = (1 + 4 * k) * 32;
                let zeros = match self.payload.vue[(first_slot + k) as usize] {
                    VueSlot::Header => 0..3,
                    _ if written.contains(&(payload, at)) => 0..0,
                    _ => 0..4,
                };
                for c in zeros {
                    let dst = Operand::vector(payload, at + 32 * c, Type::UD);
                    self.op(Opcode::Mov, dst, vec![Src::ud(0)]);
                }
            }
            let message = Message {
                sfid: 6,
                mlen: (1 + 4 * slots) as u8,
                rlen: 0,
                // SIMD8 write (7) at the first slot's offset in 128-bit units.
                control: URB_SIMD8_WRITE | first_slot << 4,
                eot: m + 1 == messages.len(),
            };
            self.emit(simd8_send(payload, message));
        }
    }

    /// The render-target writes: one per colour output, the last with EOT.
    fn color_writes(&mut self) {
        let outputs: Vec<(u32, VReg)> = self.outputs.iter().map(|(&s, &(r, _))| (s, r)).collect();
        if outputs.is_empty() {
            // A thread must end: a write of nothing to render target 0 with EOT.
            let r = self.temp(4);
            for c in 0..4 {
                self.write_colour((r, 0), c, Src::ud(0));
            }
            self.render_target_write(0, r, true);
            return;
        }
        let last = outputs.len() - 1;
        for (i, (slot, reg)) in outputs.into_iter().enumerate() {
            self.render_target_write(slot, reg, i == last);
        }
    }

    /// `op` over the channels of one 16-channel half (all of them below SIMD16): messages and
    /// the per-half payload go this way.
    fn on_half(&mut self, half: u8, op: Opcode, dst: Operand, srcs: Vec<Src>) -> &mut Inst {
        self.on_channels(16 * half, self.width.min(16), op, dst, srcs)
    }

    /// `op` over the `width` channels from `group`, reading each source's part for those
    /// channels and writing `dst` as given.
    fn on_channels(
        &mut self,
        group: u8,
        width: u8,
        op: Opcode,
        dst: Operand,
        srcs: Vec<Src>,
    ) -> &mut Inst {
        let srcs = srcs
            .into_iter()
            .map(|s| match s {
                Src::Reg(o) => Src::Reg(part(o, group)),
                imm => imm,
            })
            .collect();
        self.emit(Inst {
            group,
            ..Inst::new(op, width, Some(dst), srcs)
        });
        self.program.insts.last_mut().expect("just pushed")
    }

    /// Emits a message that only live pixels may send (memory writes, render-target writes):
    /// predicated on f1.0 when the shader keeps live pixels there.
    fn emit_for_live_pixels(&mut self, mut send: Inst) {
        if self.discards {
            send.predicate = Some(Predicate {
                control: 1,
                inverse: false,
            });
            send.flag = LIVE_FLAG;
        }
        self.emit(send);
    }

    /// Byte offset of component `c` of `half`'s render-target payload in a colour register:
    /// each 16 channels' payload (four components of one or two GRFs) after the other's.
    fn colour_at(&self, half: u8, c: u32) -> u32 {
        (4 * half as u32 + c) * self.width.min(16) as u32 / 8 * 32
    }

    /// Writes component `c` of an output (`colour_at`'s layout from the given byte offset).
    fn write_colour(&mut self, (reg, base): (VReg, u32), c: u32, src: Src) {
        for half in 0..halves(self.width) {
            let dst = Operand::vector(reg, base + self.colour_at(half, c), Type::UD);
            self.on_half(half, Opcode::Mov, dst, vec![src]);
        }
    }

    /// Writes the colour in `colour` (laid out by [`Lowering::colour_at`]) to a render target:
    /// one SIMD16 or SIMD8 message per 16 channels, the last of all with EOT.
    fn render_target_write(&mut self, target: u32, colour: VReg, last: bool) {
        let (mlen, subtype) = if self.width >= 16 { (8, 0) } else { (4, 4) };
        let halves = halves(self.width);
        for half in 0..halves {
            let message = Message {
                sfid: 5,
                mlen,
                rlen: 0,
                // Render-target write (12), subtype, last render target, binding table index.
                control: 12 << 14 | subtype << 8 | (last as u32) << 12 | target,
                eot: last && half + 1 == halves,
            };
            let payload = Operand::vector(colour, self.colour_at(half, 0), Type::UD);
            let mut send = Inst::new(
                Opcode::Sendc,
                self.width.min(16),
                Some(Operand::null(Type::UW)),
                vec![Src::Reg(payload), Src::ud(message.descriptor(false))],
            );
            send.group = 16 * half;
            send.send = Some(message);
            self.emit_for_live_pixels(send);
        }
    }

    fn alu(&mut self, v: Value, alu: &shrew_engine::ir::Alu, comps: u8) -> Result<(), LowerError> {
        // A vector sharing its register with a source (out-of-SSA coalesced them, as a loop's
        // `r += x`) is written in place, component by component, when each component reads only
        // itself of that source; else (a swizzle, `r = r.yzwx`, or a dot product) it is computed
        // into fresh registers, then copied, as writing it in place would clobber components
        // still to be read.
        let reg = self.regs.reg_of(v);
        let aliased = |s: &AluSrc| self.regs.reg_of(s.value) == reg;
        let in_place = match alu.op {
            AluOp::Fdot2 | AluOp::Fdot3 | AluOp::Fdot4 => !alu.srcs.iter().any(aliased),
            op if op.is_vec() => (alu.srcs.iter().enumerate())
                .all(|(i, s)| !aliased(s) || s.swizzle[0] as usize == i),
            _ => (alu.srcs.iter())
                .all(|s| !aliased(s) || (0..comps).all(|c| s.swizzle[c as usize] == c)),
        };
        if comps > 1 && !in_place {
            let temps = (0..comps).map(|_| self.temp(1)).collect();
            self.staged = Some((v, temps));
            let lowered = self.alu_in_place(v, alu, comps);
            let (_, temps) = self.staged.take().expect("staged above");
            lowered?;
            for (c, t) in temps.into_iter().enumerate() {
                let dst = self.comp(v, c as u8, Type::UD);
                self.op(
                    Opcode::Mov,
                    dst,
                    vec![Src::Reg(Operand::vector(t, 0, Type::UD))],
                );
            }
            return Ok(());
        }
        self.alu_in_place(v, alu, comps)
    }

    fn alu_in_place(
        &mut self,
        v: Value,
        alu: &shrew_engine::ir::Alu,
        comps: u8,
    ) -> Result<(), LowerError> {
        use AluOp as A;
        let srcs = &alu.srcs;
        let src_bits: Vec<u8> = srcs
            .iter()
            .map(|s| self.func.value_type(s.value).map_or(32, |t| t.bits))
            .collect();
        if src_bits.iter().any(|&b| b != 32 && b != 1) {
            return Err(self.error(v, "only 32-bit and boolean sources are supported yet"));
        }
        match alu.op {
            A::Fdot2 | A::Fdot3 | A::Fdot4 => {
                let n = match alu.op {
                    A::Fdot2 => 2,
                    A::Fdot3 => 3,
                    _ => 4,
                };
                let dst = self.comp(v, 0, Type::F);
                let a0 = self.read_alu(&srcs[0], 0, Type::F);
                let b0 = self.read_alu(&srcs[1], 0, Type::F);
                self.alu2(Opcode::Mul, dst, a0, b0, true);
                for c in 1..n {
                    let a = self.read_alu(&srcs[0], c, Type::F);
                    let b = self.read_alu(&srcs[1], c, Type::F);
                    self.alu3(Opcode::Mad, dst, [Src::Reg(dst), a, b]);
                }
                return Ok(());
            }
            op if op.is_vec() || op == A::Mov => {
                for c in 0..comps {
                    let src = if op == A::Mov {
                        self.read_alu(&srcs[0], c, Type::UD)
                    } else {
                        self.read_alu(&srcs[c as usize], 0, Type::UD)
                    };
                    let dst = self.comp(v, c, Type::UD);
                    self.op(Opcode::Mov, dst, vec![src]);
                }
                return Ok(());
            }
            _ => {}
        }
        for c in 0..comps {
            self.alu_comp(v, alu, c)?;
        }
        Ok(())
    }

    /// Component `c` of a per-component ALU operation.
    fn alu_comp(&mut self, v: Value, alu: &shrew_engine::ir::Alu, c: u8) -> Result<(), LowerError> {
        use AluOp as A;
        let srcs = &alu.srcs;
        let f = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, Type::F);
        let d = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, Type::D);
        let ud = |s: &mut Self, i: usize| s.read_alu(&srcs[i], c, Type::UD);
        let dst_f = self.comp(v, c, Type::F);
        let dst_d = dst_f.retype(Type::D);
        let dst_ud = dst_f.retype(Type::UD);
        let modifier = |s: &mut Self, src: Src, dst: Operand, neg: bool, abs: bool| {
            let Src::Reg(r) = s.in_register(src) else {
                unreachable!("in a register")
            };
            let r = if abs { r.absolute() } else { r };
            let r = if neg { r.negated() } else { r };
            s.op(Opcode::Mov, dst, vec![Src::Reg(r)]);
        };
        // A comparison writing all ones or zero to `dst`; an immediate goes second.
        let cmp = |s: &mut Self, dst: Operand, a: Src, b: Src, cond: CondMod| {
            let (a, b, cond) = if a.is_imm() && !b.is_imm() {
                (b, a, swapped(cond))
            } else {
                (s.in_register(a), b, cond)
            };
            s.op(Opcode::Cmp, dst, vec![a, b]).cond = Some(cond);
        };
        match alu.op {
            A::Fadd => {
                let (a, b) = (f(self, 0), f(self, 1));
                self.alu2(Opcode::Add, dst_f, a, b, true);
            }
            A::Fsub => {
                let (a, b) = (f(self, 0), f(self, 1));
                let b = negate_src(b);
                self.alu2(Opcode::Add, dst_f, a, b, true);
            }
            A::Fmul => {
                let (a, b) = (f(self, 0), f(self, 1));
                self.alu2(Opcode::Mul, dst_f, a, b, true);
            }
            A::Ffma => {
                let (a, b, c2) = (f(self, 0), f(self, 1), f(self, 2));
                self.alu3(Opcode::Mad, dst_f, [c2, a, b]);
            }
            A::Flrp => {
                let (x, y, t) = (f(self, 0), f(self, 1), f(self, 2));
                // lrp(t, y, x) = t*y + (1-t)*x
                self.alu3(Opcode::Lrp, dst_f, [t, y, x]);
            }
            A::Fneg => {
                let a = f(self, 0);
                modifier(self, a, dst_f, true, false);
            }
            A::Fabs => {
                let a = f(self, 0);
                modifier(self, a, dst_f, false, true);
            }
            A::Fsat => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]).saturate = true;
            }
            A::Fmin | A::Fmax | A::Imin | A::Imax | A::Umin | A::Umax => {
                let ty = match alu.op {
                    A::Fmin | A::Fmax => Type::F,
                    A::Imin | A::Imax => Type::D,
                    _ => Type::UD,
                };
                let (a, b) = (
                    self.read_alu(&srcs[0], c, ty),
                    self.read_alu(&srcs[1], c, ty),
                );
                let cond = if matches!(alu.op, A::Fmin | A::Imin | A::Umin) {
                    CondMod::L
                } else {
                    CondMod::Ge
                };
                self.alu2(Opcode::Sel, dst_f.retype(ty), a, b, true).cond = Some(cond);
            }
            A::Ffloor => {
                let a = f(self, 0);
                self.op(Opcode::Rndd, dst_f, vec![a]);
            }
            A::Fceil => {
                // ceil(x) = -floor(-x)
                let a = f(self, 0);
                let neg = negate_src(a);
                let t = self.temp_operand(Type::F);
                self.op(Opcode::Rndd, t, vec![neg]);
                self.op(Opcode::Mov, dst_f, vec![Src::Reg(t.negated())]);
            }
            A::Ftrunc => {
                let a = f(self, 0);
                self.op(Opcode::Rndz, dst_f, vec![a]);
            }
            A::FroundEven => {
                let a = f(self, 0);
                self.op(Opcode::Rnde, dst_f, vec![a]);
            }
            A::Ffract => {
                let a = f(self, 0);
                self.op(Opcode::Frc, dst_f, vec![a]);
            }
            A::Frcp | A::Frsq | A::Fsqrt | A::Fexp2 | A::Flog2 | A::Fsin | A::Fcos => {
                let function = match alu.op {
                    A::Frcp => MathFn::Inv,
                    A::Frsq => MathFn::Rsq,
                    A::Fsqrt => MathFn::Sqrt,
                    A::Fexp2 => MathFn::Exp,
                    A::Flog2 => MathFn::Log,
                    A::Fsin => MathFn::Sin,
                    _ => MathFn::Cos,
                };
                let a = f(self, 0);
                self.math(function, dst_f, vec![a]);
            }
            A::Fpow | A::Fdiv => {
                let function = if alu.op == A::Fpow {
                    MathFn::Pow
                } else {
                    MathFn::Fdiv
                };
                let (a, b) = (f(self, 0), f(self, 1));
                self.math(function, dst_f, vec![a, b]);
            }
            A::Fsign => {
                // sign(x): x's sign bit, with 1.0's bits ORed in where x != 0 (±0 stays).
                let a = f(self, 0);
                let a = self.in_register(a);
                let cmp = self.op(Opcode::Cmp, Operand::null(Type::F), vec![a, Src::f(0.0)]);
                cmp.cond = Some(CondMod::Nz);
                self.op(
                    Opcode::And,
                    dst_ud,
                    vec![a.retype(Type::UD), Src::ud(0x8000_0000)],
                );
                let or = self.op(
                    Opcode::Or,
                    dst_ud,
                    vec![Src::Reg(dst_ud), Src::ud(0x3F80_0000)],
                );
                or.predicate = Some(Predicate {
                    control: 1,
                    inverse: false,
                });
            }
            A::Flt | A::Fge | A::Feq | A::Fneu => {
                let (a, b) = (f(self, 0), f(self, 1));
                let cond = match alu.op {
                    A::Flt => CondMod::L,
                    A::Fge => CondMod::Ge,
                    A::Feq => CondMod::Z,
                    _ => CondMod::Nz,
                };
                cmp(self, dst_d, a, b, cond);
            }
            A::Ilt | A::Ige | A::Ieq | A::Ine => {
                let (a, b) = (d(self, 0), d(self, 1));
                let cond = match alu.op {
                    A::Ilt => CondMod::L,
                    A::Ige => CondMod::Ge,
                    A::Ieq => CondMod::Z,
                    _ => CondMod::Nz,
                };
                cmp(self, dst_d, a, b, cond);
            }
            A::Ult | A::Uge => {
                let (a, b) = (ud(self, 0), ud(self, 1));
                let cond = if alu.op == A::Ult {
                    CondMod::L
                } else {
                    CondMod::Ge
                };
                cmp(self, dst_ud, a, b, cond);
            }
            A::Iadd => {
                let (a, b) = (d(self, 0), d(self, 1));
                self.alu2(Opcode::Add, dst_d, a, b, true);
            }
            A::Isub => {
                let (a, b) = (d(self, 0), d(self, 1));
                let b = negate_src(b);
                self.alu2(Opcode::Add, dst_d, a, b, true);
            }
            A::Imul => {
                let (a, b) = (d(self, 0), d(self, 1));
                self.alu2(Opcode::Mul, dst_d, a, b, true);
            }
            // The math unit's quotient truncates and its remainder takes the dividend's sign.
            A::Idiv | A::Irem | A::Udiv | A::Umod => {
                let (a, b, dst) = if matches!(alu.op, A::Idiv | A::Irem) {
                    (d(self, 0), d(self, 1), dst_d)
                } else {
                    (ud(self, 0), ud(self, 1), dst_ud)
                };
                let f = if matches!(alu.op, A::Idiv | A::Udiv) {
                    MathFn::IntDiv
                } else {
                    MathFn::IntMod
                };
                self.math(f, dst, vec![a, b]);
            }
            A::Ineg => {
                let a = d(self, 0);
                modifier(self, a, dst_d, true, false);
            }
            A::Iabs => {
                let a = d(self, 0);
                modifier(self, a, dst_d, false, true);
            }
            A::Iand | A::Ior | A::Ixor => {
                let op = match alu.op {
                    A::Iand => Opcode::And,
                    A::Ior => Opcode::Or,
                    _ => Opcode::Xor,
                };
                let (a, b) = (ud(self, 0), ud(self, 1));
                self.alu2(op, dst_ud, a, b, true);
            }
            A::Inot => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Not, dst_ud, vec![a]);
            }
            A::Ishl | A::Ishr | A::Ushr => {
                let (op, ty) = match alu.op {
                    A::Ishl => (Opcode::Shl, Type::UD),
                    A::Ishr => (Opcode::Asr, Type::D),
                    _ => (Opcode::Shr, Type::UD),
                };
                let (a, b) = (self.read_alu(&srcs[0], c, ty), ud(self, 1));
                // Shift counts are taken modulo 32, as the hardware does with the low 5 bits.
                self.alu2(op, dst_f.retype(ty), a, b, false);
            }
            A::Bcsel => {
                let cond = d(self, 0);
                let (a, b) = (ud(self, 1), ud(self, 2));
                if let (Src::Imm(_, x), Src::Imm(_, y)) = (a, b)
                    && x == y
                {
                    self.op(Opcode::Mov, dst_ud, vec![a]);
                    return Ok(());
                }
                // Booleans are all ones or zero: `cond & a` is `cond ? a : 0`, and `!cond & b`
                // is `cond ? 0 : b` (copy propagation makes the `not` a source modifier on
                // Gen8+).
                if b == Src::ud(0) {
                    let cond = self.in_register(cond);
                    self.alu2(Opcode::And, dst_ud, cond.retype(Type::UD), a, true);
                    return Ok(());
                }
                if a == Src::ud(0) {
                    let cond = self.in_register(cond);
                    let inverse = self.temp_operand(Type::UD);
                    self.op(Opcode::Not, inverse, vec![cond.retype(Type::UD)]);
                    self.alu2(Opcode::And, dst_ud, Src::Reg(inverse), b, true);
                    return Ok(());
                }
                self.flag_from_bool(cond, 0);
                // Only the second source may be an immediate: swap and invert the predicate.
                let (a, b, inverse) = if a.is_imm() && !b.is_imm() {
                    (b, a, true)
                } else {
                    (a, b, false)
                };
                let sel = self.alu2(Opcode::Sel, dst_ud, a, b, false);
                sel.predicate = Some(Predicate {
                    control: 1,
                    inverse,
                });
            }
            A::B2f32 => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::And, dst_ud, vec![a, Src::ud(0x3F80_0000)]);
            }
            A::B2i32 => {
                let a = d(self, 0);
                modifier(self, a, dst_d, true, false);
            }
            A::F2b1 => {
                let a = f(self, 0);
                cmp(self, dst_d, a, Src::f(0.0), CondMod::Nz);
            }
            A::I2b1 => {
                let a = d(self, 0);
                cmp(self, dst_d, a, Src::d(0), CondMod::Nz);
            }
            A::F2i32 => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_d, vec![a]);
            }
            A::F2u32 => {
                let a = f(self, 0);
                self.op(Opcode::Mov, dst_ud, vec![a]);
            }
            A::I2f32 => {
                let a = d(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            A::U2f32 => {
                let a = ud(self, 0);
                self.op(Opcode::Mov, dst_f, vec![a]);
            }
            A::F2f32 | A::I2i32 | A::U2u32 => {
                let a = ud(self, 0);
                self.op(Opcode::Mov, dst_ud, vec![a]);
            }
            A::Fddx | A::FddxCoarse | A::Fddy | A::FddyCoarse | A::FddxFine => {
                let a = f(self, 0);
                let Src::Reg(a) = self.in_register(a) else {
                    unreachable!("in a register")
                };
                // Quad channels are top-left, top-right, bottom-left, bottom-right.
                // The difference is the minuend's channel minus channel 0 of its quad (coarse)
                // or row (fine x).
                let (minuend, region) = match alu.op {
                    A::Fddx | A::FddxCoarse => (1, Region::new(4, 4, 0)),
                    A::Fddy | A::FddyCoarse => (2, Region::new(4, 4, 0)),
                    _ => (1, Region::new(2, 2, 0)),
                };
                let at = |r: Operand, k: u32| Operand {
                    region: if r.region == Region::SCALAR {
                        Region::SCALAR
                    } else {
                        region
                    },
                    offset: if r.region == Region::SCALAR {
                        r.offset
                    } else {
                        r.offset + 4 * k
                    },
                    ..r
                };
                let hi = at(a, minuend);
                let lo = at(a, 0);
                self.op(
                    Opcode::Add,
                    dst_f,
                    vec![Src::Reg(hi), Src::Reg(lo.negated())],
                );
            }
            A::FindLsb => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Fbl, dst_ud, vec![a]);
            }
            A::BitCount => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Cbit, dst_ud, vec![a]);
            }
            A::BitfieldReverse => {
                let a = ud(self, 0);
                let a = self.in_register(a);
                self.op(Opcode::Bfrev, dst_ud, vec![a]);
            }
            other => {
                return Err(self.error(v, &format!("`{}` is not supported yet", other.name())));
            }
        }
        Ok(())
    }
}

/// A SIMD8 send of `message` (without a header bit) from `payload`, answering nothing.
fn simd8_send(payload: VReg, message: Message) -> Inst {
    Inst {
        send: Some(message),
        ..Inst::new(
            Opcode::Send,
            8,
            Some(Operand::null(Type::UD)),
            vec![
                Src::Reg(Operand::vector(payload, 0, Type::UD)),
                Src::ud(message.descriptor(false)),
            ],
        )
    }
}

/// The opcode of an `If` whose arms only leave the loop (one empty, the other a lone `Break`
/// or `Continue`), and whether its predicate is inverted.
fn leave_only(then: &[Node], otherwise: &[Node]) -> Option<(Opcode, bool)> {
    let exit = |nodes: &[Node]| match nodes {
        [Node::Break] => Some(Opcode::Break),
        [Node::Continue] => Some(Opcode::Cont),
        _ => None,
    };
    match (exit(then), exit(otherwise)) {
        (Some(op), None) if otherwise.is_empty() => Some((op, false)),
        (None, Some(op)) if then.is_empty() => Some((op, true)),
        _ => None,
    }
}

/// The condition that holds with the sources swapped.
fn swapped(cond: CondMod) -> CondMod {
    match cond {
        CondMod::L => CondMod::G,
        CondMod::G => CondMod::L,
        CondMod::Le => CondMod::Ge,
        CondMod::Ge => CondMod::Le,
        other => other,
    }
}

fn negate_src(src: Src) -> Src {
    match src {
        Src::Reg(r) => Src::Reg(r.negated()),
        Src::Imm(Type::F, bits) => Src::f(-f32::from_bits(bits as u32)),
        Src::Imm(ty, bits) => Src::Imm(ty, (bits as u32).wrapping_neg() as u64),
    }
}
