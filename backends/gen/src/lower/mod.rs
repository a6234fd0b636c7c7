//! Lowering of a fragment or compute shader (at a dispatch width of 8, 16 or 32) or a vertex
//! shader (at 8: SIMD8 on Gen8 and later, SIMD4x2 on Gen7/7.5) from the shrew IR to the Gen IR
//! ([`crate::lir`]).
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
//! - Vertex shaders read their attributes from the payload (a GRF per component; at SIMD4x2 a
//!   GRF per slot, each vertex's components in its half, read `<4;4,0>`) and write each output
//!   component into a register of its own, copied into the payloads of SIMD8 URB writes
//!   (interleaved ones at SIMD4x2) at the end (`coalesce` computes it there when that costs no registers), which send
//!   the vertex's
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
//! - A call is a `call` of the callee's part of the program; [`lower_subroutine`] lowers a
//!   callee into the entry function's payload, ending in a `ret` through the GRF the call
//!   wrote its return address to (early returns break a loop of one trip around the body).
//!   A discard in a subroutine clears live bits as in the entry function; the quads it leaves
//!   without a live pixel halt until the subroutine's end, and again after each call.
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
//! Options: the generation and the dispatch width. The generation picks the data port of
//! untyped surface reads (IVB's data cache, HSW+'s data cache 1) and the vertex dispatch
//! (SIMD4x2 before Gen8, each vertex in four channels: memory writes and atomics from the
//! first of them, predicated on f1.0). ALU instructions run at the
//! dispatch width; [`crate::simd_width`] splits those the generation cannot run that wide.

mod alu;
mod control;
mod intrinsic;
mod memory;
mod operands;
mod output;
mod payload;
pub use payload::SYSTEM_VALUES_SLOT;
mod subgroup;
mod texture;
mod thread;

use crate::fields::Field;
use crate::isa::{Gen, Opcode, Type};
use crate::lir::{Inst, Lir, Message, Op, Src, VReg};
use crate::sampler::TextureSurface;
use payload::{plan_payload, storage_bytes};
use shrew_engine::interp::memory::{constant_data, layout_variables};
use shrew_engine::ir::{FuncId, Function, InstKind, Interp, Mode, Shader, Stage, Value};
use shrew_engine::ops::Intrinsic;
use shrew_engine::out_of_ssa::{Destruction, Reg, destruct};
use shrew_engine::structure::structurize;
use std::collections::BTreeMap;

/// Why a shader cannot be lowered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LowerError(pub String);

/// Where the dispatcher puts what the thread reads: the fragment or vertex thread payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payload {
    pub dispatch_width: u8,
    /// Vertex threads on Gen7/7.5, which the hardware dispatches two vertices to a thread
    /// (SIMD4x2): each vertex runs in four channels (0-3 and 4-7) that compute the same
    /// values, its attributes in half of a GRF per slot, its handle in R1.0 or R1.4, its
    /// outputs written with interleaved URB writes.
    pub simd4x2: bool,
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
    /// component's value per channel in each, or at SIMD4x2 one, each vertex's four
    /// components in its half ([`Payload::attribute`]).
    pub setup_start: u8,
    /// The input slots, in setup order.
    pub inputs: Vec<u32>,
    /// Vertex threads: how many of [`Payload::inputs`] (the first ones) are in the payload;
    /// the thread reads the others from its URB entry, where input `i` is at 128-bit offset
    /// `i` ([`Payload::pulled_attribute`]).
    pub pushed_inputs: usize,
    /// Fragment threads: how each input slot is interpolated (flat ones read the constant).
    pub interp: BTreeMap<u32, Interp>,
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
    /// The image at a binding, which typed surface messages read and write.
    Image(u32),
    /// A texture the sampler reads.
    Texture(TextureSurface),
    /// The workgroup's shared local memory, at binding table index [`SLM_SURFACE`].
    Shared,
}

/// The binding table index that addresses shared local memory (Gen7-9).
pub const SLM_SURFACE: u32 = 254;

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

/// Where each output slot's components are written: the register and the byte offset of
/// component 0 (a render target's colour, or a slot of a URB write's payload).
type Outputs = BTreeMap<u32, (VReg, u32)>;

/// The flag subregister holding live (covered, not discarded) pixels: f1.0.
pub const LIVE_FLAG: u8 = 2;

/// Lowers the entry function of a fragment shader for `hw` at dispatch width `width` (8, 16 or
/// 32).
pub fn lower_fragment(shader: &Shader, hw: Gen, width: u8) -> Result<(Lir, Payload), LowerError> {
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

/// Lowers the entry function of a vertex shader for `hw`, its attributes in the payload and
/// its outputs written to its URB entry: at SIMD8 on Gen8 and later, each channel one vertex;
/// at SIMD4x2 on Gen7/7.5 (the only vertex dispatch there), each of the thread's two vertices
/// in four channels that compute alike ([`Payload::simd4x2`]), so the program is the SIMD8
/// one with other attribute reads, URB writes and one channel per vertex for memory writes.
pub fn lower_vertex(shader: &Shader, hw: Gen) -> Result<(Lir, Payload), LowerError> {
    if shader.stage != Stage::Vertex {
        return Err(LowerError(format!(
            "a {} shader is not a vertex shader",
            shader.stage.name()
        )));
    }
    lower_entry(shader, hw, 8)
}

/// Lowers the entry function of a compute shader for `hw` at dispatch width `width` (8, 16 or
/// 32): each channel one invocation of a workgroup, its local ID in the payload.
pub fn lower_compute(shader: &Shader, hw: Gen, width: u8) -> Result<(Lir, Payload), LowerError> {
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

fn lower_entry(shader: &Shader, hw: Gen, width: u8) -> Result<(Lir, Payload), LowerError> {
    let func = &shader.functions[shader.entry.0 as usize];
    let tree = structurize(func).map_err(|e| LowerError(e.to_string()))?;
    let simd4x2 = shader.stage == Stage::Vertex && !hw.is_gen8_plus();
    let mut payload = plan_payload(shader, func, width, simd4x2)?;
    payload.constant_data = layout_variables(shader)
        .and_then(|layouts| constant_data(shader, &layouts))
        .map_err(|e| LowerError(e.to_string()))?;
    let mut lowering = Lowering::new(shader, func, hw, width, payload, None)?;
    lowering.lower(&tree)?;
    Ok((lowering.program, lowering.payload))
}

/// Lowers function `func` of `shader`, which the entry function (lowered into `payload` at
/// `width` channels) still calls, as a subroutine: its registers above GRF `return_address`,
/// where its callers keep the return address and channel mask, and below `grf_limit`; what it
/// shares with them is in scratch memory (its own spills after `scratch_bytes`). It takes no arguments and gives no
/// result, writes no outputs and does not discard; one that returns early runs in a loop of
/// one trip that the returns break. The payload gains the surfaces it reads.
pub fn lower_subroutine(
    shader: &Shader,
    func: FuncId,
    hw: Gen,
    payload: Payload,
    return_address: u8,
    grf_limit: u32,
    scratch_bytes: u32,
) -> Result<(Lir, Payload), LowerError> {
    let func = &shader.functions[func.0 as usize];
    let tree = structurize(func).map_err(|e| LowerError(e.to_string()))?;
    let width = payload.dispatch_width;
    let mut lowering = Lowering::new(shader, func, hw, width, payload, Some(return_address))?;
    lowering.program.scratch_bytes = lowering.program.scratch_bytes.max(scratch_bytes);
    lowering.program.grf_limit = grf_limit;
    lowering.lower_subroutine(&tree)?;
    Ok((lowering.program, lowering.payload))
}

impl<'s> Lowering<'s> {
    /// The lowering of `func` into `payload`; a subroutine's keeps the GRFs up to its
    /// `return_address` register for its callers.
    fn new(
        shader: &'s Shader,
        func: &'s Function,
        hw: Gen,
        width: u8,
        payload: Payload,
        return_address: Option<u8>,
    ) -> Result<Lowering<'s>, LowerError> {
        let kept_regs = return_address.map_or(0, |r| r as u32 + 1);
        let in_any_function = |pred: &dyn Fn(Intrinsic) -> bool| {
            shader.functions.iter().any(|f| uses_intrinsic(f, pred))
        };
        let mut lowering = Lowering {
            shader,
            func,
            hw,
            width,
            regs: destruct(func),
            vregs: BTreeMap::new(),
            staged: None,
            program: Lir {
                dispatch_width: width,
                insts: Vec::new(),
                vreg_sizes: Vec::new(),
                payload_regs: (payload.regs as u32).max(kept_regs),
                kept_regs,
                grf_limit: crate::regalloc::GRFS,
                scratch_bytes: 0,
            },
            payload,
            outputs: BTreeMap::new(),
            urb_messages: Vec::new(),
            vertex_outputs: BTreeMap::new(),
            // Every part of the program keeps live pixels in f1.0 when one needs them.
            discards: in_any_function(&is_kill)
                || (shader.stage == Stage::Fragment
                    && in_any_function(&|op| {
                        writes_memory(op) || op == Intrinsic::IsHelperInvocation
                    })),
            halts: false,
            lane_offsets: None,
            subroutines_kill: (shader.functions.iter().enumerate())
                .any(|(f, func)| f != shader.entry.0 as usize && uses_intrinsic(func, &is_kill)),
            subroutine: return_address.map(|return_address| Subroutine {
                return_address,
                returned: None,
                loop_depth: 0,
                early_returns: 0,
            }),
        };
        let scratch = |op| matches!(op, Intrinsic::LoadScratch | Intrinsic::StoreScratch);
        if in_any_function(&scratch) {
            // Each channel's copy of the temporaries, dword by dword: dword `d` of channel `c`
            // at byte `4 · (d · width + c)`, so a message's channels address one run of GRF
            // size. Every part of the program keeps them there, spills after them.
            let private = storage_bytes(shader, &[Mode::FunctionTemp, Mode::ShaderTemp])?;
            lowering.program.scratch_bytes = (private * width as u32).next_multiple_of(32);
            if uses_intrinsic(func, &scratch) {
                lowering.lane_offsets = Some(lowering.lane_offsets());
            }
        }
        Ok(lowering)
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
    matches!(
        op,
        Intrinsic::StoreSsbo
            | Intrinsic::SsboAtomic
            | Intrinsic::SsboAtomicSwap
            | Intrinsic::ImageDerefStore
            | Intrinsic::ImageDerefAtomic
            | Intrinsic::ImageDerefAtomicSwap
    )
}

fn uses_intrinsic(func: &Function, pred: &dyn Fn(Intrinsic) -> bool) -> bool {
    func.insts.iter().flatten().any(|inst| match &inst.kind {
        InstKind::Intrinsic(ii) => pred(ii.op),
        _ => false,
    })
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
    program: Lir,
    payload: Payload,
    outputs: Outputs,
    /// Vertex shaders: the URB writes at the end, each its first VUE slot and its payload (the
    /// header, then four GRFs per slot), which the outputs are copied into.
    urb_messages: Vec<(u32, VReg)>,
    /// Vertex shaders: each output component written, by its place in a URB payload (register,
    /// byte offset), in a register of its own until the URB writes copy it there.
    vertex_outputs: BTreeMap<(VReg, u32), VReg>,
    /// Whether the fragment shader discards, writes memory or asks which invocations are
    /// helpers: it keeps live pixels in f1.0.
    discards: bool,
    /// Whether some channel may halt: the end needs a halt target.
    halts: bool,
    /// Each channel's byte offset in a dword of scratch (4 times its index), when the shader
    /// keeps temporaries there.
    lane_offsets: Option<VReg>,
    /// Lowering a subroutine: where it returns to and how its early returns leave.
    subroutine: Option<Subroutine>,
    /// Whether a subroutine discards: after each call, quads with no live pixel left halt.
    subroutines_kill: bool,
}

/// A subroutine's return: the GRF holding its return address, and the state of returns from
/// inside loops.
struct Subroutine {
    return_address: u8,
    /// Set (all ones) in the channels that returned inside a loop, which then leave every
    /// loop around them; `None` when nothing returns early.
    returned: Option<VReg>,
    loop_depth: u32,
    early_returns: u32,
}

impl Lowering<'_> {
    fn error(&self, v: Value, what: &str) -> LowerError {
        LowerError(format!(
            "fn {}: {v} (`{}`): {what}",
            self.func.name,
            self.func.inst(v).kind.name()
        ))
    }

    /// The message to `sfid` with `fields` ([`Message::new`]); a value too wide for its
    /// descriptor field is an error at `v`.
    fn message(&self, v: Value, sfid: u8, fields: &[(Field, u32)]) -> Result<Message, LowerError> {
        Message::new(sfid, fields).map_err(|e| self.error(v, &format!("its message: {e}")))
    }

    /// A message that ends the thread's work (`what`), made as [`Lowering::message`] makes one.
    fn final_message(
        &self,
        what: &str,
        sfid: u8,
        fields: &[(Field, u32)],
    ) -> Result<Message, LowerError> {
        Message::new(sfid, fields)
            .map_err(|e| LowerError(format!("fn {}: {what}: {e}", self.func.name)))
    }

    fn inst(&mut self, v: Value) -> Result<(), LowerError> {
        let inst = self.func.inst(v);
        if let Some(def) = inst.def
            && !matches!(def.bits, 1 | 32 | 64)
            && !matches!(inst.kind, InstKind::Deref(_))
        {
            let what = format!("{}-bit values are not supported yet", def.bits);
            return Err(self.error(v, &what));
        }
        if self.subroutine.is_some()
            && let InstKind::Intrinsic(ii) = &inst.kind
            && ii.op == Intrinsic::StoreOutput
        {
            return Err(self.error(
                v,
                "a subroutine (a function the inliner left) that writes an output is not \
                 supported on Gen (`outputs-to-temporaries` moves such outputs to temporaries)",
            ));
        }
        match &inst.kind {
            InstKind::Const(values) => {
                // Registers for constants that copies or other non-immediate reads need; dead
                // ones go in dead-code elimination.
                let wide = self.is_wide(v);
                for (c, &bits) in values.iter().enumerate() {
                    if wide && self.hw.is_gen8_plus() {
                        let dst = self.comp(v, c as u8, Type::UQ);
                        self.op(Opcode::Mov, dst, vec![Src::Imm(Type::UQ, bits)]);
                        continue;
                    }
                    let per_comp = self.dwords_per_comp(v);
                    for k in c as u8 * per_comp..(c as u8 + 1) * per_comp {
                        let src = self.read_dword(v, k);
                        let dst = self.dword(v, k);
                        self.op(Opcode::Mov, dst, vec![src]);
                    }
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
            InstKind::Call { func, args } => {
                if !args.is_empty() || inst.def.is_some() {
                    return Err(self.error(
                        v,
                        "calls with arguments or a result are not supported: the Gen \
                         backend's subroutines have no parameters",
                    ));
                }
                let mut call = Inst::control(Op::Call(func.0), 1);
                call.mask_all = true;
                self.emit(call);
                if self.subroutines_kill {
                    // Quads the callee left without a live pixel stop here too.
                    self.halt_dead_quads();
                }
                Ok(())
            }
        }
    }
}
