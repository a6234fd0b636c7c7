//! Lowering of a fragment, vertex or (on Evergreen and Cayman) compute shader from the shrew IR
//! to the R600 IR ([`crate::lir`]).
//!
//! What: the shader must have been through `lower-io` and be in SSA form. Lowering leaves SSA
//! with [`shrew_engine::out_of_ssa::destruct`], gives each register component a value, and
//! walks the structured tree ([`shrew_engine::structure`]):
//! - ALU operations component by component, each one instruction of the hardware (or a short
//!   sequence: sine and cosine scale their argument to the chip's range first). Booleans are
//!   32-bit: all ones for true, zero for false, as the `*_DX10` and integer compares write them.
//!   Moves, vector constructions, negation and absolute values become MOVs, which
//!   [`crate::copy_prop`] folds into their readers as source modifiers or removes.
//! - Constants, and uniforms at constant offsets (kcache reads of constant buffer 0; UBO `b` is
//!   buffer `b + 1`, the constant data [`CONSTANT_DATA_BANK`]), are read directly by the
//!   instructions that use them, with no instruction of their own. Uniforms at run-time
//!   offsets are vertex fetches from the same buffer, which the dispatcher also binds as the
//!   buffer resource of the same number, addressed in dwords ([`CONSTANT_BUFFER_STRIDE`]), so
//!   that one fetch reads up to four dwords at any dword offset.
//! - Fragment inputs: on R600 and R700 the hardware interpolates them into GPRs before the
//!   shader starts ([`Interface::input_gprs`]); on Evergreen and Cayman the shader
//!   interpolates them from the barycentrics in R0 (perspective i, j in x, y; linear in z, w)
//!   with INTERP_ZW/INTERP_XY over a parameter, or loads a flat one with INTERP_LOAD_P0. Either
//!   way this happens once, at the start of the shader.
//! - Texture instructions are fetches (SAMPLE and its _L, _LB, _LZ, _G and _C forms, LD,
//!   GET_TEXTURE_RESINFO) with their parameters in the channels [`crate::texture::layout`]
//!   gives; the texture at binding `b` is resource [`TEXTURE_RESOURCE_BASE`]` + b` with
//!   sampler `b` ([`Interface::textures`], [`Interface::samplers`]). Projected coordinates are
//!   divided first. Derivatives are GET_GRADIENTS_H/VReg fetches (the _FINE forms on Evergreen
//!   and Cayman).
//! - `discard` is a KILL of every lane, `discard_if` a KILLNE_INT of the condition.
//! - Colour outputs are gathered in values of their own and exported at the end, one EXPORT per
//!   render target, the last one EXPORT_DONE.
//! - Vertex shaders: the fetch shader the program calls first (CALL_FS) loads the vertex
//!   attributes into GPRs from R1 on ([`Interface::input_gprs`]), as on R600's fragment
//!   inputs. At the end the position is exported as POS 60, the point size (if written) as
//!   POS 61, each other output slot as a PARAM in slot order ([`Interface::params_out`]).
//! - An `if` ends the block before it with a predicate set: of the compare that defines its
//!   condition, on the compare's operands (PRED_SETGT, PRED_SETE_INT, ...; the compare itself
//!   is not computed when the `if` is its only reader), or PRED_SETNE_INT of the condition.
//!   An `if` with nothing in its `then` tests the opposite and swaps its arms (no ELSE).
//! - A `return` before the end of the shader: the shader's body runs in a loop of one trip,
//!   which a `return` leaves with a LOOP_BREAK; inside inner loops it also sets a flag that
//!   each loop holding a `return` tests after it to break on outwards. The colours are exported
//!   after that loop, as they were when each lane returned.
//!
//! - Compute shaders: the dispatcher loads the local invocation ID, the workgroup ID and the
//!   number of workgroups into [`LOCAL_ID_GPR`], [`WORKGROUP_ID_GPR`] and
//!   [`NUM_WORKGROUPS_GPR`].
//! - Images and SSBOs (pixel and compute shaders on Evergreen and Cayman) are random access
//!   targets, numbered in the order of first use ([`Interface::rats`]): an image store is a
//!   MEM_RAT STORE_TYPED, an SSBO store a STORE_RAW per four dwords, an SSBO atomic the `_RTN`
//!   operation and a vertex fetch of its return; SSBO loads are vertex fetches through the
//!   RAT's buffer resource.
//! - 64-bit values are two words each (the low one first) in every register, input, output,
//!   uniform and temporary; moves, selects and the packing of halves copy words. On Evergreen
//!   (Cypress) and Cayman, double-precision arithmetic is pair operations
//!   ([`Lowering::pair`]); 64-bit integer arithmetic and the double operations the chips lack
//!   are the target options' (`lower-int64`, `lower-doubles`).
//!
//! Why: the first step of the backend's straight line; after it come copy propagation, the
//! packing into groups and clauses, register allocation and emission.
//!
//! Invariants: unsupported input (16-bit values, doubles on R600 and R700, cube textures,
//! gathers, LOD queries, run-time texel offsets, memory other than uniforms and textures,
//! UBOs at run-time bindings, vertex system values, built-in vertex outputs other than the
//! position and point size, compute shaders on R600 and R700, images and SSBOs in vertex
//! shaders, image loads, shared memory outside compute shaders) is a [`LowerError`] naming the
//! instruction, never wrong code. Shared memory is the LDS, a workgroup barrier GROUP_BARRIER.
//!
//! Options: the chip.

use crate::isa::{AluOpcode, Chip, FetchOp, MAX_SCRATCH_ELEMENTS, Slots};
use crate::lir::{
    Alu, Export, Fetch, Indexed, Inst, Lane, Lir, Multi, Node, Operand, SlotPart, Src, VReg,
};
use crate::program::{
    DWORD_FORMATS, ExportType, GDS_COUNTER_BUFFER_BYTES, GDS_COUNTER_BUFFERS, RAT_BUFFER_RESOURCE,
    RAT_RETURN_RESOURCE, RATS, VtxFormat, rat_inst,
};
use crate::texture::{TexParam, TexView, layout};
use shrew_engine::deep::nested;
use shrew_engine::interp::memory::{Storage, constant_data, layout_variables, storage_extent};
use shrew_engine::ir::{
    ATOMIC_COUNTER_BINDINGS, AluSrc, Builtin, Deref, Dim, FuncId, Function, InstKind, Interp,
    IntrinsicInst, Shader, Stage, Tex, TexOp, TexSrc, ValType, Value, opaque_binding,
};
use shrew_engine::ops::{AluOp, AtomicOp, IndexKind, Intrinsic};
use shrew_engine::out_of_ssa::{Destruction, Reg, destruct};
use shrew_engine::passes::lower_io::interp_of;
use shrew_engine::structure::{Node as Tree, returns_early, structurize};
use shrew_engine::uses::{User, Uses};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Why a shader cannot be lowered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LowerError(pub String);

/// The constant buffer holding the shader's constant data (`load_constant`).
pub const CONSTANT_DATA_BANK: u8 = 15;

/// The stride, in bytes, of constant buffer `b` bound as buffer resource `b` for vertex
/// fetches: one dword, so a fetch's index is a dword offset.
pub const CONSTANT_BUFFER_STRIDE: u32 = 4;

/// The resource id of the texture at binding 0: constant buffers take the ids below it.
pub const TEXTURE_RESOURCE_BASE: u8 = 16;

/// The fragment input slot of the primitive ID: a flat parameter after every slot of the
/// shader's own, which the vertex stage exports from the primitive ID the VGT gives it.
pub const PRIMITIVE_ID_SLOT: u32 = u32::MAX;

/// The sampler states a shader stage has.
const SAMPLERS: u32 = 18;

/// What a random access target (RAT) is bound to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RatTarget {
    /// The image at a binding.
    Image(u32),
    /// The SSBO at a binding.
    Buffer(u32),
}

/// Compute shaders: the GPRs holding the invocation's local ID, its workgroup's ID and the
/// number of workgroups (x, y, z each), which the dispatcher loads.
pub const LOCAL_ID_GPR: u8 = 0;
pub const WORKGROUP_ID_GPR: u8 = 1;
pub const NUM_WORKGROUPS_GPR: u8 = 2;

/// Bytes of local data share a compute workgroup may use (Evergreen and Cayman have 32 KiB
/// per SIMD).
pub const LDS_BYTES: u32 = 32 * 1024;

/// What the hardware gives the shader before it starts and what it exports: the contract
/// with the dispatcher ([`crate::dispatch`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interface {
    /// Evergreen and Cayman: the GPR holding the barycentrics (perspective i, j, linear i, j).
    pub barycentrics: Option<u8>,
    /// Evergreen and Cayman: the input slot of each interpolation parameter, by index.
    pub params: Vec<u32>,
    /// R600 and R700 fragment shaders: the GPR each input slot is interpolated into; vertex
    /// shaders: the GPR the fetch shader loads each attribute into.
    pub input_gprs: BTreeMap<u32, u8>,
    /// How each input slot is interpolated.
    pub interp: BTreeMap<u32, Interp>,
    /// The GPR holding the window position (x, y, z, 1/w), if the shader reads it.
    pub frag_coord: Option<u8>,
    /// The GPR whose x is all ones for front-facing primitives, if the shader reads it.
    pub front_face: Option<u8>,
    /// The render targets the shader exports, in order.
    pub colour_targets: Vec<u32>,
    /// Vertex shaders: the output slot each PARAM export (by index) carries.
    pub params_out: Vec<u32>,
    /// Vertex shaders: whether the point size is exported (POS 61, in x).
    pub point_size: bool,
    /// The shader's constant data, bound as constant buffer [`CONSTANT_DATA_BANK`].
    pub constant_data: Vec<u8>,
    /// The textures the shader reads, by resource id.
    pub textures: BTreeMap<u8, TexView>,
    /// The sampler binding of each sampler id the shader uses.
    pub samplers: BTreeMap<u8, u32>,
    /// What each RAT (by number) of the shader is: its images and SSBOs.
    pub rats: Vec<RatTarget>,
    /// The atomic counter buffers the shader reaches in the global data share (Evergreen and
    /// Cayman keep atomic counters there, in every stage), by binding: the dispatcher puts
    /// buffer `b` at byte [`GDS_COUNTER_BUFFER_BYTES`]` · b`.
    pub gds_buffers: Vec<u32>,
    /// Compute shaders: the invocations of a workgroup along x, y, z.
    pub workgroup_size: [u32; 3],
    /// Compute shaders: the bytes of LDS a workgroup's shared variables take.
    pub lds_bytes: u32,
}

/// Lowers the entry function of a fragment or vertex shader for `chip`.
pub fn lower(shader: &Shader, chip: Chip) -> Result<(Lir, Interface), LowerError> {
    match shader.stage {
        Stage::Fragment | Stage::Vertex => {}
        Stage::Compute if chip.is_evergreen_class() => {}
        Stage::Compute => {
            return Err(LowerError(
                "compute shaders need Evergreen or Cayman: R600 and R700 have no random access \
                 targets (RATs) to write their results to"
                    .into(),
            ));
        }
        stage => {
            return Err(LowerError(format!(
                "{} shaders are not supported by the R600 backend yet",
                stage.name()
            )));
        }
    }
    let mut lowering = Lowering::new(shader, shader.entry, chip, false)?;
    lowering.interface.workgroup_size = shader.workgroup_size;
    let layouts = layout_variables(shader).map_err(|e| LowerError(e.to_string()))?;
    lowering.interface.lds_bytes = storage_extent(&layouts, Storage::Shared);
    if lowering.interface.lds_bytes > LDS_BYTES {
        return Err(LowerError(format!(
            "the shared variables take {} bytes, more than the {LDS_BYTES} bytes of LDS a \
             workgroup has",
            lowering.interface.lds_bytes
        )));
    }
    lowering.plan_inputs();
    lowering.block = lowering.prologue();
    let mut body = lowering.lower_function()?;
    match shader.stage {
        Stage::Vertex => lowering.export_vertex(&mut body),
        Stage::Fragment => lowering.export_colours(&mut body),
        _ => lowering.flush(&mut body),
    }
    lowering.lir.body = body;
    Ok((lowering.lir, lowering.interface))
}

/// Lowers function `func` of `shader`, which the entry function calls, as a subroutine. It
/// takes no arguments and gives no result, and reads no inputs and writes no outputs (only
/// the entry function has them); what it shares with its callers is in scratch memory. The
/// interface gives the textures and samplers it reads.
pub fn lower_subroutine(
    shader: &Shader,
    func: FuncId,
    chip: Chip,
) -> Result<(Lir, Interface), LowerError> {
    let mut lowering = Lowering::new(shader, func, chip, true)?;
    let mut body = lowering.lower_function()?;
    lowering.flush(&mut body);
    lowering.lir.body = body;
    Ok((lowering.lir, lowering.interface))
}

/// Dwords of the shader's temporaries (its private variables): the scratch elements they
/// take when they are kept in scratch memory, one a dword.
pub fn temporary_dwords(shader: &Shader) -> Result<u32, LowerError> {
    let layouts = layout_variables(shader).map_err(|e| LowerError(e.to_string()))?;
    Ok(storage_extent(&layouts, Storage::Private).div_ceil(4))
}

/// A `load_scratch` or `store_scratch`: the data stored (none for a load), the shape of what
/// is accessed, the constant byte offset and the run-time one.
struct ScratchAccess {
    data: Option<Value>,
    def: ValType,
    base: u32,
    dynamic: Option<Value>,
}

/// The most GPRs the shader's temporaries may take as indexed registers.
const MAX_INDEXED_GPRS: u32 = 64;

/// How many GPRs the temporaries take when they are kept in registers rather than in scratch
/// memory (0 when they are not): when they fit in [`MAX_INDEXED_GPRS`] and every access at a
/// run-time offset stays within one register whatever the offset (the offset is a multiple
/// of 16 bytes, `align_mul`, and the components fit after `base`'s channel). Each dword then
/// has a channel of its own, four to a register, as Mesa keeps arrays in GPRs.
fn indexed_gprs(func: &Function, scratch_dwords: u32) -> u16 {
    let gprs = scratch_dwords.div_ceil(4);
    if gprs == 0 || gprs > MAX_INDEXED_GPRS {
        return 0;
    }
    let fits = func.all_insts().all(|v| {
        let InstKind::Intrinsic(ii) = &func.inst(v).kind else {
            return true;
        };
        let (accessed, offset) = match ii.op {
            Intrinsic::LoadScratch => (v, ii.srcs[0]),
            Intrinsic::StoreScratch => (ii.srcs[0], ii.srcs[1]),
            _ => return true,
        };
        if func.constant_u32(offset).is_some() {
            return true;
        }
        let base = ii.index(IndexKind::Base).unwrap_or(0);
        let comps = func.inst(accessed).def.map_or(0, |d| u32::from(d.comps));
        ii.index(IndexKind::AlignMul).unwrap_or(0) >= 16
            && base.is_multiple_of(4)
            && base % 16 / 4 + comps <= 4
    });
    if fits { gprs as u16 } else { 0 }
}

/// The sources and the component of each that component `c` of an ALU instruction defining
/// `def` reads; `None` when the operation mixes components.
fn component_reads(alu: &shrew_engine::ir::Alu, def: ValType, c: u8) -> Option<Vec<(AluSrc, u8)>> {
    if alu.op.is_vec() {
        let src = alu.srcs[c as usize];
        return Some(vec![(src, src.swizzle[0])]);
    }
    let per_component = alu.op.info().is_per_component()
        && (0..alu.srcs.len()).all(|i| alu.src_components(i, def) == def.comps);
    per_component.then(|| {
        alu.srcs
            .iter()
            .map(|s| (*s, s.swizzle[c as usize]))
            .collect()
    })
}

/// Registers that more than one value or a phi copy writes: their values must really be in
/// the register, so constants and uniforms defining them are moved there.
fn shared_regs(func: &Function, regs: &Destruction) -> BTreeSet<Reg> {
    let mut writers: HashMap<Reg, u32> = HashMap::new();
    for (i, inst) in func.insts.iter().enumerate() {
        if inst.as_ref().is_some_and(|inst| inst.def.is_some()) {
            *writers.entry(regs.reg_of(Value(i as u32))).or_default() += 1;
        }
    }
    let mut shared: BTreeSet<Reg> = writers
        .into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|(r, _)| r)
        .collect();
    for b in func.cfg.node_indices() {
        for &(dst, _) in regs.copies_at_start(b).iter().chain(regs.copies_at_end(b)) {
            shared.insert(dst);
        }
    }
    shared
}

/// Where an output goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Output {
    Position,
    PointSize,
    /// A colour (render target) or varying slot.
    Slot(u32),
}

struct Lowering<'a> {
    shader: &'a Shader,
    func: &'a Function,
    chip: Chip,
    regs: Destruction,
    /// Registers that must hold their values (see [`shared_regs`]).
    shared: BTreeSet<Reg>,
    /// Each register's component values.
    reg_values: HashMap<Reg, Vec<VReg>>,
    /// Who reads each IR value.
    uses: Uses,
    /// IR values read as operands rather than from their register: constants, uniforms.
    direct: HashMap<Value, Vec<Src>>,
    /// The registers of those values (written by nothing else): what a copy from them reads.
    direct_regs: HashMap<Reg, Vec<Src>>,
    lir: Lir,
    interface: Interface,
    /// Each input slot's component values, interpolated in the prologue.
    inputs: BTreeMap<u32, [VReg; 4]>,
    /// The components of each input slot the shader reads (a bit each).
    input_masks: BTreeMap<u32, u8>,
    /// Each output's component values.
    outputs: BTreeMap<Output, [Option<VReg>; 4]>,
    /// The block being filled.
    block: Vec<Inst>,
    /// Where the components of the ALU instruction being lowered that a source in its own
    /// register still has to be read from are written instead of the register.
    redirect: Option<Vec<Option<VReg>>>,
    /// When the shader returns early: the flag a `return` inside an inner loop sets.
    returned: Option<VReg>,
    /// How many early returns were lowered so far (whether a loop holds one, without
    /// searching its body again at every level of nesting).
    early_returns: u32,
    /// How many of the shader's own loops enclose the node being lowered.
    loop_depth: u32,
    /// Dwords of the temporaries in memory (the interpreter's private area).
    scratch_dwords: u32,
    /// The register index (offset / 16) computed for each run-time offset of the indexed
    /// registers, in the block being filled.
    ar_indices: HashMap<Value, VReg>,
    /// Whether the function is a subroutine (no inputs, no outputs).
    subroutine: bool,
}

impl<'a> Lowering<'a> {
    /// The lowering of function `id` of `shader` (a `subroutine` or the entry function), its
    /// registers planned.
    fn new(
        shader: &'a Shader,
        id: FuncId,
        chip: Chip,
        subroutine: bool,
    ) -> Result<Lowering<'a>, LowerError> {
        let func = &shader.functions[id.0 as usize];
        let regs = destruct(func);
        let mut lowering = Lowering {
            shader,
            func,
            chip,
            shared: shared_regs(func, &regs),
            uses: Uses::build(func),
            regs,
            reg_values: HashMap::new(),
            direct: HashMap::new(),
            direct_regs: HashMap::new(),
            lir: Lir::default(),
            interface: Interface::default(),
            inputs: BTreeMap::new(),
            input_masks: BTreeMap::new(),
            outputs: BTreeMap::new(),
            block: Vec::new(),
            redirect: None,
            returned: None,
            early_returns: 0,
            loop_depth: 0,
            scratch_dwords: 0,
            ar_indices: HashMap::new(),
            subroutine,
        };
        if !subroutine {
            let layouts = layout_variables(shader).map_err(|e| LowerError(e.to_string()))?;
            lowering.interface.constant_data =
                constant_data(shader, &layouts).map_err(|e| LowerError(e.to_string()))?;
        }
        lowering.scratch_dwords = temporary_dwords(shader)?;
        // A subroutine, and an entry function that calls, share their temporaries in scratch
        // memory: each has registers of its own.
        let calls = subroutine
            || func
                .all_insts()
                .any(|v| matches!(func.inst(v).kind, InstKind::Call { .. }));
        if !calls {
            lowering.lir.indexed_gprs = indexed_gprs(func, lowering.scratch_dwords);
        }
        Ok(lowering)
    }

    /// The function's body, its last block still being filled; one that returns early runs
    /// in a loop of one trip that the `return`s break.
    fn lower_function(&mut self) -> Result<Vec<Node>, LowerError> {
        let tree = structurize(self.func).map_err(|e| LowerError(e.to_string()))?;
        let mut body = Vec::new();
        if returns_early(&tree) {
            let returned = self.lir.new_value();
            self.returned = Some(returned);
            self.mov(returned, Src::constant(0));
            self.flush(&mut body);
            let mut once = Vec::new();
            self.lower_nodes(&tree, &mut once, false)?;
            self.flush(&mut once);
            if once.last() != Some(&Node::Break) {
                once.push(Node::Break);
            }
            body.push(Node::Loop(once.into()));
        } else {
            self.lower_nodes(&tree, &mut body, true)?;
        }
        Ok(body)
    }

    /// A call of `callee`: the block so far, then the subroutine.
    fn call(&mut self, v: Value, callee: FuncId, out: &mut Vec<Node>) -> Result<(), LowerError> {
        let inst = self.func.inst(v);
        if matches!(&inst.kind, InstKind::Call { args, .. } if !args.is_empty())
            || inst.def.is_some()
        {
            return Err(self.error(
                v,
                "calls with arguments or a result are not supported: the R600 backend's \
                 subroutines have no parameters",
            ));
        }
        self.flush(out);
        out.push(Node::Call(callee.0));
        Ok(())
    }

    fn error(&self, v: Value, what: &str) -> LowerError {
        LowerError(format!("{v} = {}: {what}", self.func.inst(v).kind.name()))
    }

    /// The value of word `c` of register `r` (its component `c`, or for 64-bit registers
    /// word `c % 2` of component `c / 2`: the low word first).
    fn reg_value(&mut self, r: Reg, c: u8) -> VReg {
        let words = words_of(self.regs.reg_shape(r)) as usize;
        if !self.reg_values.contains_key(&r) {
            let values = (0..words.max(1)).map(|_| self.lir.new_value()).collect();
            self.reg_values.insert(r, values);
        }
        self.reg_values[&r][c as usize]
    }

    /// What reading word `c` of IR value `v` reads (as [`Self::reg_value`] counts words).
    fn src(&mut self, v: Value, c: u8) -> Src {
        if let Some(direct) = self.direct.get(&v) {
            return direct[c as usize];
        }
        match &self.func.inst(v).kind {
            InstKind::Const(values) if self.is_wide(v) => {
                let bits = values[c as usize / 2];
                Src::constant((bits >> (32 * (c % 2))) as u32)
            }
            InstKind::Const(values) => Src::constant(const_bits(self.func, v, values[c as usize])),
            InstKind::Undef => Src::constant(0),
            _ => {
                let r = self.regs.reg_of(v);
                Src::value(self.reg_value(r, c))
            }
        }
    }

    /// Whether IR value `v` has 64 bits (two words a component).
    fn is_wide(&self, v: Value) -> bool {
        self.func.value_type(v).is_some_and(|t| t.bits == 64)
    }

    /// The value word `c` of IR value `v` is written to.
    fn dst(&mut self, v: Value, c: u8) -> VReg {
        if let Some(t) = self.redirect.as_ref().and_then(|temps| temps[c as usize]) {
            return t;
        }
        let r = self.regs.reg_of(v);
        self.reg_value(r, c)
    }

    fn emit(&mut self, op: AluOpcode, dst: Option<VReg>, srcs: Vec<Src>) {
        self.block.push(Inst::Alu(Alu::new(op, dst, srcs)));
    }

    /// A MOV, unless it would copy a value onto itself.
    fn mov(&mut self, dst: VReg, src: Src) {
        if src != Src::value(dst) {
            self.emit(AluOpcode::Mov, Some(dst), vec![src]);
        }
    }

    /// A fresh value computed by `op` over `srcs`.
    fn temp(&mut self, op: AluOpcode, srcs: Vec<Src>) -> Src {
        let t = self.lir.new_value();
        self.emit(op, Some(t), srcs);
        Src::value(t)
    }

    /// Finds the inputs the shader reads and where they come from.
    fn plan_inputs(&mut self) {
        let (mut frag_coord, mut front_face) = (false, false);
        for inst in self.func.insts.iter().flatten() {
            if let InstKind::Intrinsic(ii) = &inst.kind {
                match ii.op {
                    Intrinsic::LoadInput => {
                        let slot = ii.index(IndexKind::Base).unwrap_or(0);
                        let first = ii.index(IndexKind::Component).unwrap_or(0);
                        let words = u32::from(inst.def.map_or(0, words_of));
                        for word in first..first + words {
                            *self.input_masks.entry(slot + word / 4).or_default() |=
                                1 << (word % 4);
                        }
                    }
                    Intrinsic::LoadFragCoord => frag_coord = true,
                    Intrinsic::LoadFrontFace => front_face = true,
                    Intrinsic::LoadPrimitiveId if self.shader.stage == Stage::Fragment => {
                        *self.input_masks.entry(PRIMITIVE_ID_SLOT).or_default() |= 1;
                    }
                    _ => {}
                }
            }
        }
        let slots: Vec<u32> = self.input_masks.keys().copied().collect();
        for &slot in &slots {
            let interp = match slot {
                PRIMITIVE_ID_SLOT => Interp::Flat,
                _ => interp_of(self.shader, slot),
            };
            self.interface.interp.insert(slot, interp);
        }
        let mut next_gpr = 0u8;
        if self.shader.stage == Stage::Vertex {
            // R0 holds the vertex and instance indices.
            for (&slot, gpr) in slots.iter().zip(1u8..) {
                self.interface.input_gprs.insert(slot, gpr);
            }
            return;
        }
        if self.chip.interpolates_in_alu() {
            if !slots.is_empty() {
                self.interface.barycentrics = Some(0);
                next_gpr = 1;
            }
            self.interface.params = slots.clone();
        } else {
            for &slot in &slots {
                self.interface.input_gprs.insert(slot, next_gpr);
                next_gpr += 1;
            }
        }
        if frag_coord {
            self.interface.frag_coord = Some(next_gpr);
            next_gpr += 1;
        }
        if front_face {
            self.interface.front_face = Some(next_gpr);
        }
    }

    /// A value the hardware loads into `gpr`.`chan` before the shader starts.
    fn fixed(&mut self, gpr: u8, chan: u8) -> VReg {
        if let Some((&v, _)) = self.lir.fixed.iter().find(|(_, at)| **at == (gpr, chan)) {
            return v;
        }
        let v = self.lir.new_value();
        self.lir.fixed.insert(v, (gpr, chan));
        v
    }

    /// The instructions that interpolate the inputs, at the start of the shader.
    fn prologue(&mut self) -> Vec<Inst> {
        let mut block = Vec::new();
        let slots: Vec<u32> = self
            .interface
            .params
            .iter()
            .chain(self.interface.input_gprs.keys())
            .copied()
            .collect();
        for slot in slots {
            let values = [0; 4].map(|_| self.lir.new_value());
            // Only the components the shader reads are loaded.
            let mask = self.input_masks[&slot];
            let read = |c: usize| mask >> c & 1 != 0;
            if let Some(&gpr) = self.interface.input_gprs.get(&slot) {
                for (c, &v) in values.iter().enumerate().filter(|&(c, _)| read(c)) {
                    let fixed = self.fixed(gpr, c as u8);
                    block.push(Inst::Alu(Alu::new(
                        AluOpcode::Mov,
                        Some(v),
                        vec![Src::value(fixed)],
                    )));
                }
            } else {
                let index = self
                    .interface
                    .params
                    .iter()
                    .position(|&s| s == slot)
                    .unwrap() as u16;
                let param = |chan: u8| Src::of(Operand::Param { index, chan });
                match self.interface.interp[&slot] {
                    Interp::Flat => {
                        for (c, &v) in values.iter().enumerate().filter(|&(c, _)| read(c)) {
                            block.push(Inst::Alu(Alu::new(
                                AluOpcode::InterpLoadP0,
                                Some(v),
                                vec![param(c as u8)],
                            )));
                        }
                    }
                    interp => {
                        // Perspective barycentrics in R0.xy, linear ones in R0.zw.
                        let base = if interp == Interp::NoPerspective {
                            2
                        } else {
                            0
                        };
                        let i = Src::value(self.fixed(0, base));
                        let j = Src::value(self.fixed(0, base + 1));
                        for (op, written) in
                            [(AluOpcode::InterpZw, [2, 3]), (AluOpcode::InterpXy, [0, 1])]
                        {
                            if !written.iter().any(|&c| read(c as usize)) {
                                continue;
                            }
                            let slots = [0u8, 1, 2, 3].map(|c| SlotPart {
                                dst: written.contains(&c).then(|| values[c as usize]),
                                srcs: vec![if c % 2 == 0 { j } else { i }, param(c)],
                            });
                            block.push(Inst::Multi(Multi {
                                op,
                                slots,
                                origin: None,
                            }));
                        }
                    }
                }
            }
            self.inputs.insert(slot, values);
        }
        block
    }

    /// Lowers a list of tree nodes into `out`; `top` when it is the function's top level.
    fn lower_nodes(
        &mut self,
        nodes: &[Tree],
        out: &mut Vec<Node>,
        top: bool,
    ) -> Result<(), LowerError> {
        for (k, node) in nodes.iter().enumerate() {
            match node {
                Tree::Block(b) => {
                    for (dst, src) in self.regs.copies_at_start(*b).to_vec() {
                        self.copy(dst, src);
                    }
                    for &v in &self.func.cfg[*b].insts {
                        match self.func.inst(v).kind {
                            InstKind::Call { func, .. } => self.call(v, func, out)?,
                            _ => {
                                let first = self.block.len();
                                self.lower_inst(v)?;
                                if let Some(origin) = shrew_engine::provenance::origin(self.func, v)
                                {
                                    let made = first.min(self.block.len());
                                    for inst in &mut self.block[made..] {
                                        inst.set_origin(origin);
                                    }
                                }
                            }
                        }
                    }
                    for (dst, src) in self.regs.copies_at_end(*b).to_vec() {
                        self.copy(dst, src);
                    }
                }
                Tree::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let before = std::mem::take(&mut self.block);
                    let (mut t, mut e) = (Vec::new(), Vec::new());
                    nested(|| self.lower_nodes(then, &mut t, false))?;
                    self.flush(&mut t);
                    nested(|| self.lower_nodes(otherwise, &mut e, false))?;
                    self.flush(&mut e);
                    // With nothing to do where the condition holds, the predicate tests the
                    // opposite and the other arm runs without an ELSE.
                    let inverted = (t.is_empty() && !e.is_empty())
                        .then(|| self.predicate(*cond, true))
                        .flatten();
                    let pred = match inverted {
                        Some(pred) => {
                            std::mem::swap(&mut t, &mut e);
                            pred
                        }
                        None => self
                            .predicate(*cond, false)
                            .expect("a test of the condition"),
                    };
                    self.block = before;
                    self.block.push(Inst::Alu(pred));
                    self.flush(out);
                    out.push(Node::If {
                        then: t.into(),
                        otherwise: e.into(),
                    });
                }
                Tree::Loop(body) => {
                    self.flush(out);
                    let mut b = Vec::new();
                    let early_returns = self.early_returns;
                    self.loop_depth += 1;
                    nested(|| self.lower_nodes(body, &mut b, false))?;
                    self.loop_depth -= 1;
                    self.flush(&mut b);
                    out.push(Node::Loop(b.into()));
                    // Lanes that returned inside the loop leave the enclosing one too.
                    if let Some(returned) = self.returned
                        && self.early_returns > early_returns
                    {
                        let mut pred = Alu::new(
                            AluOpcode::PredSetneInt,
                            None,
                            vec![Src::value(returned), Src::constant(0)],
                        );
                        pred.pred = true;
                        self.block.push(Inst::Alu(pred));
                        self.flush(out);
                        out.push(Node::If {
                            then: vec![Node::Break].into(),
                            otherwise: Vec::new().into(),
                        });
                    }
                }
                Tree::Break => {
                    self.flush(out);
                    out.push(Node::Break);
                }
                Tree::Continue => {
                    self.flush(out);
                    out.push(Node::Continue);
                }
                Tree::Return(_) if top && k + 1 == nodes.len() => {}
                Tree::Return(_) => {
                    self.early_returns += 1;
                    let returned = self
                        .returned
                        .expect("an early return runs in the one-trip loop");
                    if self.loop_depth > 0 {
                        self.mov(returned, Src::constant(u32::MAX));
                    }
                    self.flush(out);
                    out.push(Node::Break);
                }
                Tree::Unreachable => {}
            }
        }
        Ok(())
    }

    /// Ends the block being filled, if it has instructions.
    fn flush(&mut self, out: &mut Vec<Node>) {
        if !self.block.is_empty() {
            out.push(Node::Block(std::mem::take(&mut self.block)));
        }
        self.ar_indices.clear();
    }

    /// Copies register `src` into register `dst`, component by component (from the operands
    /// of a constant or uniform whose register is never written).
    fn copy(&mut self, dst: Reg, src: Reg) {
        for c in 0..words_of(self.regs.reg_shape(dst)) {
            let d = self.reg_value(dst, c);
            let s = match self.direct_regs.get(&src) {
                Some(srcs) => srcs[c as usize],
                None => Src::value(self.reg_value(src, c)),
            };
            self.mov(d, s);
        }
    }

    fn lower_inst(&mut self, v: Value) -> Result<(), LowerError> {
        let inst = self.func.inst(v);
        if let Some(def) = inst.def
            && !matches!(def.bits, 1 | 32 | 64)
        {
            return Err(self.error(v, &format!("{}-bit values are not supported", def.bits)));
        }
        match &inst.kind {
            InstKind::Phi(_) => Ok(()),
            InstKind::Undef => {
                let words = inst.def.map_or(1, words_of) as usize;
                self.define_direct(v, vec![Src::constant(0); words]);
                Ok(())
            }
            InstKind::Const(values) => {
                let srcs: Vec<Src> = if self.is_wide(v) {
                    (values.iter())
                        .flat_map(|&bits| [bits as u32, (bits >> 32) as u32])
                        .map(Src::constant)
                        .collect()
                } else {
                    (values.iter())
                        .map(|&bits| Src::constant(const_bits(self.func, v, bits)))
                        .collect()
                };
                self.define_direct(v, srcs);
                Ok(())
            }
            InstKind::Alu(alu) if self.has_wide_operand(v, alu) => self.lower_wide_alu(v, alu),
            // A compare only an `if` reads: the `if`'s predicate set compares.
            InstKind::Alu(_)
                if self.folded_compare(v).is_some()
                    && matches!(self.uses.users(v), [User::Terminator(_)]) =>
            {
                Ok(())
            }
            InstKind::Alu(alu) => {
                let def = inst.def.expect("an ALU instruction defines a value");
                // A source in the destination's register (out-of-SSA coalesced them): a
                // component a later component reads is computed into a temporary and written
                // last.
                let reg = self.regs.reg_of(v);
                let aliased = |s: &AluSrc| {
                    !self.direct.contains_key(&s.value) && self.regs.reg_of(s.value) == reg
                };
                if def.comps > 1 && alu.srcs.iter().any(aliased) {
                    let deferred: Vec<Option<VReg>> = (0..def.comps)
                        .map(|c| {
                            let read_later =
                                ((c + 1)..def.comps).any(|later| {
                                    match component_reads(alu, def, later) {
                                        Some(reads) => {
                                            reads.iter().any(|(s, read)| aliased(s) && *read == c)
                                        }
                                        None => true,
                                    }
                                });
                            read_later.then(|| self.lir.new_value())
                        })
                        .collect();
                    self.redirect = Some(deferred);
                }
                let per_component = alu.op.info().is_per_component();
                for c in 0..def.comps {
                    // A component computed like an earlier one (`x / y.xx`) is a copy of it.
                    let computed_alike = |e: &u8| {
                        alu.srcs
                            .iter()
                            .all(|s| s.swizzle[*e as usize] == s.swizzle[c as usize])
                    };
                    let same = per_component.then(|| (0..c).find(computed_alike)).flatten();
                    match same {
                        Some(e) => {
                            let (earlier, d) = (self.dst(v, e), self.dst(v, c));
                            self.mov(d, Src::value(earlier));
                        }
                        None => self.lower_alu(v, alu.op, &alu.srcs, c)?,
                    }
                }
                if let Some(temps) = self.redirect.take() {
                    for (c, t) in temps.into_iter().enumerate() {
                        if let Some(t) = t {
                            let d = self.reg_value(reg, c as u8);
                            self.mov(d, Src::value(t));
                        }
                    }
                }
                Ok(())
            }
            InstKind::Intrinsic(ii) => self.lower_intrinsic(v, ii),
            InstKind::Tex(t) => self.lower_tex(v, t),
            // Derefs of textures: their instructions read them.
            InstKind::Deref(_) => Ok(()),
            InstKind::Call { .. } => unreachable!("a call is lowered with its block"),
        }
    }

    /// The predicate set of an `if` on `cond` (of its opposite when `negated`): the compare
    /// defining it ([`Self::folded_compare`]), or PRED_SETNE_INT (PRED_SETE_INT) of the boolean.
    /// `None` for the opposite of a float compare, which is not a compare (NaNs).
    fn predicate(&mut self, cond: Value, negated: bool) -> Option<Alu> {
        use AluOpcode as H;
        let (op, a, b) = match self.folded_compare(cond) {
            Some((op, a, b)) => {
                let (a, b) = (
                    self.src(a.value, a.swizzle[0]),
                    self.src(b.value, b.swizzle[0]),
                );
                match (negated, op) {
                    (false, op) => (op, a, b),
                    (true, H::PredSeteInt) => (H::PredSetneInt, a, b),
                    (true, H::PredSetneInt) => (H::PredSeteInt, a, b),
                    (true, H::PredSetgtInt) => (H::PredSetgeInt, b, a),
                    (true, H::PredSetgeInt) => (H::PredSetgtInt, b, a),
                    (true, H::PredSetgtUint) => (H::PredSetgeUint, b, a),
                    (true, H::PredSetgeUint) => (H::PredSetgtUint, b, a),
                    (true, _) => return None,
                }
            }
            None => {
                let op = if negated {
                    H::PredSeteInt
                } else {
                    H::PredSetneInt
                };
                (op, self.src(cond, 0), Src::constant(0))
            }
        };
        let mut pred = Alu::new(op, None, vec![a, b]);
        pred.pred = true;
        Some(pred)
    }

    /// The predicate set an `if` on `cond` can do instead of testing it, when `cond` is a
    /// scalar compare: the opcode and its two operands, in order. Not when an operand's register
    /// is shared: a phi copy at the end of the block could overwrite it before the `if`.
    fn folded_compare(&self, cond: Value) -> Option<(AluOpcode, AluSrc, AluSrc)> {
        use AluOpcode as H;
        let inst = self.func.inst(cond);
        let InstKind::Alu(alu) = &inst.kind else {
            return None;
        };
        if inst.def.is_none_or(|d| d.comps != 1) || self.has_wide_operand(cond, alu) {
            return None;
        }
        let (op, swapped) = match alu.op {
            AluOp::Flt => (H::PredSetgt, true),
            AluOp::Fge => (H::PredSetge, false),
            AluOp::Feq => (H::PredSete, false),
            AluOp::Fneu => (H::PredSetne, false),
            AluOp::Ieq => (H::PredSeteInt, false),
            AluOp::Ine => (H::PredSetneInt, false),
            AluOp::Ilt => (H::PredSetgtInt, true),
            AluOp::Ige => (H::PredSetgeInt, false),
            AluOp::Ult => (H::PredSetgtUint, true),
            AluOp::Uge => (H::PredSetgeUint, false),
            _ => return None,
        };
        let stable = |s: &AluSrc| {
            self.direct.contains_key(&s.value)
                || matches!(
                    self.func.inst(s.value).kind,
                    InstKind::Const(_) | InstKind::Undef
                )
                || !self.shared.contains(&self.regs.reg_of(s.value))
        };
        if !alu.srcs.iter().all(stable) {
            return None;
        }
        let (a, b) = (alu.srcs[0], alu.srcs[1]);
        Some(if swapped { (op, b, a) } else { (op, a, b) })
    }

    /// Makes `v` read as `srcs`; moved into its register when the register is shared.
    fn define_direct(&mut self, v: Value, srcs: Vec<Src>) {
        if self.shared.contains(&self.regs.reg_of(v)) {
            for (c, &src) in srcs.iter().enumerate() {
                let d = self.dst(v, c as u8);
                self.mov(d, src);
            }
        } else {
            self.direct_regs.insert(self.regs.reg_of(v), srcs.clone());
            self.direct.insert(v, srcs);
        }
    }

    /// Whether ALU instruction `v` reads or writes a 64-bit value.
    fn has_wide_operand(&self, v: Value, alu: &shrew_engine::ir::Alu) -> bool {
        self.is_wide(v) || alu.srcs.iter().any(|s| self.is_wide(s.value))
    }

    /// ALU instruction `v`, which has a 64-bit operand: what `lower-int64` and `lower-doubles`
    /// leave. Moves, vector constructions, selects and the packing of halves work on the
    /// words of any 64-bit value; on Evergreen and Cayman, double-precision adds, multiplies,
    /// fused multiply-adds, minimums, maximums, compares and conversions between float sizes
    /// are pair operations ([`Self::pair`]), and negation and absolute value are modifiers of
    /// the high word. The result's words are computed first, then copied to its register.
    fn lower_wide_alu(&mut self, v: Value, alu: &shrew_engine::ir::Alu) -> Result<(), LowerError> {
        use AluOpcode as H;
        let def = self
            .func
            .inst(v)
            .def
            .expect("an ALU instruction defines a value");
        // Word `h` (0 low, 1 high) of component `comp` of source `i`; a 32-bit source's
        // component itself.
        let word = |this: &mut Self, i: usize, comp: u8, h: u8| {
            let value = alu.srcs[i].value;
            if this.is_wide(value) {
                this.src(value, 2 * comp + h)
            } else {
                this.src(value, comp)
            }
        };
        let both = |this: &mut Self, i: usize, c: u8| {
            let comp = alu.srcs[i].swizzle[c as usize];
            [word(this, i, comp, 0), word(this, i, comp, 1)]
        };
        let doubles = alu.op.info().dst.base == shrew_engine::ops::BaseType::Float
            || alu
                .op
                .info()
                .srcs
                .iter()
                .any(|o| o.base == shrew_engine::ops::BaseType::Float);
        if doubles && !self.chip.is_evergreen_class() {
            return Err(self.error(
                v,
                "double-precision floats need Evergreen (Cypress) or Cayman: R600 and R700 have \
                 no FMA_64 and this backend gives them no doubles",
            ));
        }
        let mut results: Vec<Src> = Vec::new();
        for c in 0..def.comps {
            match alu.op {
                AluOp::Mov => results.extend(both(self, 0, c)),
                AluOp::Vec2 | AluOp::Vec3 | AluOp::Vec4 => {
                    let comp = alu.srcs[c as usize].swizzle[0];
                    results.extend([
                        word(self, c as usize, comp, 0),
                        word(self, c as usize, comp, 1),
                    ]);
                }
                AluOp::Pack64_2x32 => {
                    let source = &alu.srcs[0];
                    let (lo, hi) = (source.swizzle[0], source.swizzle[1]);
                    results.extend([self.src(source.value, lo), self.src(source.value, hi)]);
                }
                AluOp::Unpack64_2x32 => {
                    let comp = alu.srcs[0].swizzle[0];
                    results.push(word(self, 0, comp, c));
                }
                AluOp::Bcsel => {
                    let cond = self.src(alu.srcs[0].value, alu.srcs[0].swizzle[c as usize]);
                    let (a, b) = (both(self, 1, c), both(self, 2, c));
                    for h in 0..2 {
                        results.push(if a[h] == b[h] {
                            a[h]
                        } else {
                            self.temp(H::CndeInt, vec![cond, b[h], a[h]])
                        });
                    }
                }
                AluOp::Fneg | AluOp::Fabs => {
                    let [lo, hi] = both(self, 0, c);
                    let hi = if alu.op == AluOp::Fneg {
                        hi.negated()
                    } else {
                        Src {
                            abs: true,
                            neg: false,
                            ..hi
                        }
                    };
                    results.extend([lo, hi]);
                }
                AluOp::Fadd | AluOp::Fmul | AluOp::Fmin | AluOp::Fmax => {
                    let op = match alu.op {
                        AluOp::Fadd => H::Add64,
                        AluOp::Fmul => H::Mul64,
                        AluOp::Fmin => H::Min64,
                        _ => H::Max64,
                    };
                    let (a, b) = (both(self, 0, c), both(self, 1, c));
                    results.extend(self.pair(op, &[a, b], 2));
                }
                AluOp::Fsat => {
                    // The maximum with 0 first: NaN gives 0.
                    let a = both(self, 0, c);
                    let zero = [Src::constant(0); 2];
                    let one = [Src::constant(0), Src::constant(0x3ff0_0000)];
                    let above_zero = self.pair(H::Max64, &[a, zero], 2);
                    let above_zero = [above_zero[0], above_zero[1]];
                    results.extend(self.pair(H::Min64, &[above_zero, one], 2));
                }
                AluOp::Fsub => {
                    let (a, [lo, hi]) = (both(self, 0, c), both(self, 1, c));
                    results.extend(self.pair(H::Add64, &[a, [lo, hi.negated()]], 2));
                }
                AluOp::Ffma => {
                    let (a, b, d) = (both(self, 0, c), both(self, 1, c), both(self, 2, c));
                    results.extend(self.pair(H::Fma64, &[a, b, d], 2));
                }
                AluOp::Feq | AluOp::Fneu | AluOp::Flt | AluOp::Fge | AluOp::F2b1 => {
                    let a = both(self, 0, c);
                    let b = match alu.op {
                        AluOp::F2b1 => [Src::constant(0); 2],
                        _ => both(self, 1, c),
                    };
                    let (op, operands) = match alu.op {
                        AluOp::Feq => (H::Sete64, [a, b]),
                        AluOp::Fneu | AluOp::F2b1 => (H::Setne64, [a, b]),
                        AluOp::Flt => (H::Setgt64, [b, a]),
                        _ => (H::Setge64, [a, b]),
                    };
                    results.extend(self.pair(op, &operands, 1));
                }
                AluOp::Fdot2 | AluOp::Fdot3 | AluOp::Fdot4 => {
                    // Left to right, each product and sum rounded, as the opcodes are defined.
                    let n = match alu.op {
                        AluOp::Fdot2 => 2,
                        AluOp::Fdot3 => 3,
                        _ => 4,
                    };
                    let mut sum: Option<Vec<Src>> = None;
                    for k in 0..n {
                        let (a, b) = (both(self, 0, k), both(self, 1, k));
                        let product = self.pair(H::Mul64, &[a, b], 2);
                        sum = Some(match sum {
                            None => product,
                            Some(s) => {
                                let (s, p) = ([s[0], s[1]], [product[0], product[1]]);
                                self.pair(H::Add64, &[s, p], 2)
                            }
                        });
                    }
                    results.extend(sum.expect("a dot product of at least two components"));
                }
                AluOp::F2f32 => {
                    let a = both(self, 0, c);
                    results.extend(self.pair(H::Flt64ToFlt32, &[a], 1));
                }
                AluOp::F2f64 => {
                    // The float goes in the slot that reads high words.
                    let x = self.src(alu.srcs[0].value, alu.srcs[0].swizzle[c as usize]);
                    results.extend(self.pair(H::Flt32ToFlt64, &[[Src::constant(0), x]], 2));
                }
                AluOp::B2f64 => {
                    // 1.0 is 0x3ff00000 in the high word, 0 in the low one.
                    let b = self.src(alu.srcs[0].value, alu.srcs[0].swizzle[c as usize]);
                    let hi = self.temp(H::AndInt, vec![b, Src::constant(0x3ff0_0000)]);
                    results.extend([Src::constant(0), hi]);
                }
                op => {
                    return Err(self.error(
                        v,
                        &format!(
                            "the 64-bit `{}` is not supported: the chip has no such instruction \
                             and neither lower-int64 nor lower-doubles builds it",
                            op.name()
                        ),
                    ));
                }
            }
        }
        for (w, result) in results.into_iter().enumerate() {
            let d = self.dst(v, w as u8);
            self.mov(d, result);
        }
        Ok(())
    }

    /// A double-precision pair operation over `operands`, each (low word, high word): the
    /// even slot of its pair reads the high words and writes the result's low word, the odd
    /// slot reads the low words and writes the high word (or nothing, for a 32-bit result:
    /// `words` 1). Cayman's four-slot operations (MUL_64, FMA_64) repeat the operands in the
    /// other pair, whose results go unread. Gives the result's words.
    fn pair(&mut self, op: AluOpcode, operands: &[[Src; 2]], words: usize) -> Vec<Src> {
        let result: Vec<VReg> = (0..words).map(|_| self.lir.new_value()).collect();
        let even = SlotPart {
            dst: result.first().copied(),
            srcs: operands.iter().map(|o| o[1]).collect(),
        };
        let odd = SlotPart {
            dst: result.get(1).copied(),
            srcs: operands.iter().map(|o| o[0]).collect(),
        };
        let (third, fourth) = if op.slots(self.chip) == Slots::Vec4 {
            // A three-source instruction always writes: its copies get values of their own.
            let mut unread = || op.is_op3().then(|| self.lir.new_value());
            (
                SlotPart {
                    dst: unread(),
                    srcs: even.srcs.clone(),
                },
                SlotPart {
                    dst: unread(),
                    srcs: odd.srcs.clone(),
                },
            )
        } else {
            let empty = || SlotPart {
                dst: None,
                srcs: Vec::new(),
            };
            (empty(), empty())
        };
        self.block.push(Inst::Multi(Multi {
            op,
            slots: [even, odd, third, fourth],
            origin: None,
        }));
        result.into_iter().map(Src::value).collect()
    }

    /// Component `c` of ALU instruction `v`.
    fn lower_alu(&mut self, v: Value, op: AluOp, srcs: &[AluSrc], c: u8) -> Result<(), LowerError> {
        use AluOpcode as H;
        let s = |this: &mut Self, i: usize| {
            let src = &srcs[i];
            this.src(src.value, src.swizzle[c as usize])
        };
        let dst = self.dst(v, c);
        let unary = |this: &mut Self, hw: AluOpcode| {
            let x = s(this, 0);
            this.emit(hw, Some(dst), vec![x]);
        };
        let binary = |this: &mut Self, hw: AluOpcode, a: usize, b: usize| {
            let (x, y) = (s(this, a), s(this, b));
            this.emit(hw, Some(dst), vec![x, y]);
        };
        match op {
            AluOp::Mov | AluOp::Vec2 | AluOp::Vec3 | AluOp::Vec4 => {
                let src = &srcs[if matches!(op, AluOp::Mov) {
                    0
                } else {
                    c as usize
                }];
                let comp = if matches!(op, AluOp::Mov) {
                    src.swizzle[c as usize]
                } else {
                    src.swizzle[0]
                };
                let x = self.src(src.value, comp);
                self.mov(dst, x);
            }
            AluOp::Fneg => {
                let x = s(self, 0);
                self.mov(dst, x.negated());
            }
            AluOp::Fabs => {
                let x = s(self, 0);
                self.mov(
                    dst,
                    Src {
                        abs: true,
                        neg: false,
                        ..x
                    },
                );
            }
            AluOp::Fsat => {
                let x = s(self, 0);
                let mut mov = Alu::new(H::Mov, Some(dst), vec![x]);
                mov.clamp = true;
                self.block.push(Inst::Alu(mov));
            }
            AluOp::Fadd => binary(self, H::Add, 0, 1),
            AluOp::Fsub => {
                let (x, y) = (s(self, 0), s(self, 1));
                self.emit(H::Add, Some(dst), vec![x, y.negated()]);
            }
            AluOp::Fmul => binary(self, H::MulIeee, 0, 1),
            // What `algebraic-late` leaves (an exact division, which the rules may not
            // rewrite): a reciprocal and a multiply, within GLSL's 2.5 ulp of the quotient.
            AluOp::Fdiv => {
                let (x, y) = (s(self, 0), s(self, 1));
                let reciprocal = self.temp(H::RecipIeee, vec![y]);
                self.emit(H::MulIeee, Some(dst), vec![x, reciprocal]);
            }
            AluOp::Ffma => {
                let (x, y, z) = (s(self, 0), s(self, 1), s(self, 2));
                // Evergreen's FMA rounds once, as `ffma` must; R600 and R700 have none, and
                // their target options split `ffma`.
                if !self.chip.is_evergreen_class() {
                    return Err(self.error(v, "R600 and R700 have no fused multiply-add"));
                }
                self.emit(H::Fma, Some(dst), vec![x, y, z]);
            }
            AluOp::Fmin => binary(self, H::MinDx10, 0, 1),
            AluOp::Fmax => binary(self, H::MaxDx10, 0, 1),
            AluOp::Ffloor => unary(self, H::Floor),
            AluOp::Fceil => unary(self, H::Ceil),
            AluOp::Ftrunc => unary(self, H::Trunc),
            AluOp::FroundEven => unary(self, H::Rndne),
            AluOp::Ffract => unary(self, H::Fract),
            AluOp::Frcp => unary(self, H::RecipIeee),
            AluOp::Frsq => unary(self, H::RecipsqrtIeee),
            AluOp::Fsqrt => unary(self, H::SqrtIeee),
            AluOp::Fexp2 => unary(self, H::ExpIeee),
            AluOp::Flog2 => unary(self, H::LogIeee),
            AluOp::Fsin | AluOp::Fcos => {
                let x = s(self, 0);
                let arg = self.trig_argument(x);
                let hw = if op == AluOp::Fsin { H::Sin } else { H::Cos };
                self.emit(hw, Some(dst), vec![arg]);
            }
            AluOp::Feq => binary(self, H::SeteDx10, 0, 1),
            AluOp::Fneu => binary(self, H::SetneDx10, 0, 1),
            AluOp::Flt => binary(self, H::SetgtDx10, 1, 0),
            AluOp::Fge => binary(self, H::SetgeDx10, 0, 1),
            AluOp::Ieq => binary(self, H::SeteInt, 0, 1),
            AluOp::Ine => binary(self, H::SetneInt, 0, 1),
            AluOp::Ilt => binary(self, H::SetgtInt, 1, 0),
            AluOp::Ige => binary(self, H::SetgeInt, 0, 1),
            AluOp::Ult => binary(self, H::SetgtUint, 1, 0),
            AluOp::Uge => binary(self, H::SetgeUint, 0, 1),
            AluOp::Iadd => binary(self, H::AddInt, 0, 1),
            AluOp::Isub => binary(self, H::SubInt, 0, 1),
            AluOp::Ineg => {
                let x = s(self, 0);
                self.emit(H::SubInt, Some(dst), vec![Src::constant(0), x]);
            }
            AluOp::Iabs => {
                let x = s(self, 0);
                let neg = self.temp(H::SubInt, vec![Src::constant(0), x]);
                self.emit(H::MaxInt, Some(dst), vec![x, neg]);
            }
            AluOp::Imul => binary(self, H::MulloInt, 0, 1),
            AluOp::ImulHigh => binary(self, H::MulhiInt, 0, 1),
            AluOp::UmulHigh => binary(self, H::MulhiUint, 0, 1),
            AluOp::BitCount
            | AluOp::BitfieldReverse
            | AluOp::FindLsb
            | AluOp::UfindMsb
            | AluOp::IfindMsb
                if !self.chip.is_evergreen_class() =>
            {
                return Err(self.error(v, "bit counts and scans need Evergreen or Cayman"));
            }
            // A boolean is all ones when true: its one bit is the lowest, and the highest.
            AluOp::BitCount | AluOp::UfindMsb
                if self
                    .func
                    .value_type(srcs[0].value)
                    .is_some_and(|t| t.bits == 1) =>
            {
                let x = s(self, 0);
                match op {
                    AluOp::BitCount => self.emit(H::AndInt, Some(dst), vec![x, Src::constant(1)]),
                    _ => self.emit(H::NotInt, Some(dst), vec![x]),
                }
            }
            AluOp::BitCount => unary(self, H::BcntInt),
            AluOp::BitfieldReverse => unary(self, H::BfrevInt),
            // FFBL gives -1 for 0, as `find_lsb` does.
            AluOp::FindLsb => unary(self, H::FfblInt),
            AluOp::UfindMsb | AluOp::IfindMsb => {
                // FFBH counts from the top (-1 when no bit is found): the bit index is 31
                // minus it, and -1 stays.
                let x = s(self, 0);
                let hw = if op == AluOp::UfindMsb {
                    H::FfbhUint
                } else {
                    H::FfbhInt
                };
                let from_top = self.temp(hw, vec![x]);
                let index = self.temp(H::SubInt, vec![Src::constant(31), from_top]);
                self.emit(H::CndgeInt, Some(dst), vec![from_top, index, from_top]);
            }
            AluOp::Imin => binary(self, H::MinInt, 0, 1),
            AluOp::Imax => binary(self, H::MaxInt, 0, 1),
            AluOp::Umin => binary(self, H::MinUint, 0, 1),
            AluOp::Umax => binary(self, H::MaxUint, 0, 1),
            AluOp::Iand => binary(self, H::AndInt, 0, 1),
            AluOp::Ior => binary(self, H::OrInt, 0, 1),
            AluOp::Ixor => binary(self, H::XorInt, 0, 1),
            AluOp::Inot => unary(self, H::NotInt),
            AluOp::Ishl => binary(self, H::LshlInt, 0, 1),
            AluOp::Ishr => binary(self, H::AshrInt, 0, 1),
            AluOp::Ushr => binary(self, H::LshrInt, 0, 1),
            AluOp::Bcsel => {
                let (cond, a, b) = (s(self, 0), s(self, 1), s(self, 2));
                if a == b {
                    // A component both sides agree on (constant vectors): a copy, which an
                    // export reads for free when it is 0 or 1.0.
                    self.mov(dst, a);
                } else {
                    self.emit(H::CndeInt, Some(dst), vec![cond, b, a]);
                }
            }
            AluOp::B2f32 => {
                let x = s(self, 0);
                self.emit(H::AndInt, Some(dst), vec![x, Src::float(1.0)]);
            }
            AluOp::B2i32 => {
                let x = s(self, 0);
                self.emit(H::AndInt, Some(dst), vec![x, Src::constant(1)]);
            }
            AluOp::F2b1 => {
                let x = s(self, 0);
                self.emit(H::SetneDx10, Some(dst), vec![x, Src::constant(0)]);
            }
            AluOp::I2b1 => {
                let x = s(self, 0);
                self.emit(H::SetneInt, Some(dst), vec![x, Src::constant(0)]);
            }
            AluOp::F2i32 | AluOp::F2u32 => {
                let x = s(self, 0);
                // Evergreen's conversions round to nearest: truncate first.
                let x = if self.chip.is_evergreen_class() {
                    self.temp(H::Trunc, vec![x])
                } else {
                    x
                };
                let hw = if op == AluOp::F2i32 {
                    H::FltToInt
                } else {
                    H::FltToUint
                };
                self.emit(hw, Some(dst), vec![x]);
            }
            AluOp::I2f32 => unary(self, H::IntToFlt),
            AluOp::U2f32 => unary(self, H::UintToFlt),
            AluOp::Fddx
            | AluOp::FddxCoarse
            | AluOp::FddxFine
            | AluOp::Fddy
            | AluOp::FddyCoarse
            | AluOp::FddyFine => {
                let x = s(self, 0);
                let along_x = matches!(op, AluOp::Fddx | AluOp::FddxCoarse | AluOp::FddxFine);
                let fine = matches!(op, AluOp::FddxFine | AluOp::FddyFine);
                self.derivative(dst, x, along_x, fine)
                    .map_err(|e| self.error(v, &e))?;
            }
            AluOp::Fdot2 | AluOp::Fdot3 | AluOp::Fdot4 => {
                let n = match op {
                    AluOp::Fdot2 => 2,
                    AluOp::Fdot3 => 3,
                    _ => 4,
                };
                let mut slots: [SlotPart; 4] = std::array::from_fn(|_| SlotPart {
                    dst: None,
                    srcs: vec![Src::constant(0), Src::constant(0)],
                });
                for (k, slot) in slots.iter_mut().enumerate().take(n) {
                    let (a, b) = (&srcs[0], &srcs[1]);
                    slot.srcs = vec![
                        self.src(a.value, a.swizzle[k]),
                        self.src(b.value, b.swizzle[k]),
                    ];
                }
                // The sum is replicated over the slots; slot x keeps it (the packer may move
                // the write to any slot).
                slots[0].dst = Some(dst);
                self.block.push(Inst::Multi(Multi {
                    op: H::Dot4Ieee,
                    slots,
                    origin: None,
                }));
            }
            _ => return Err(self.error(v, &format!("`{}` is not supported yet", op.name()))),
        }
        Ok(())
    }

    /// The argument SIN and COS take for an angle `x` in radians: R700 and later take
    /// revolutions in [-0.5, 0.5], R600 radians in [-π, π]; both reduce the angle to one
    /// period first (`fract(x / 2π + 0.5) - 0.5`).
    fn trig_argument(&mut self, x: Src) -> Src {
        use std::f32::consts::PI;
        let scaled = self.temp(
            AluOpcode::MuladdIeee,
            vec![x, Src::float(0.5 / PI), Src::float(0.5)],
        );
        let fract = self.temp(AluOpcode::Fract, vec![scaled]);
        if self.chip == Chip::R600 {
            self.temp(
                AluOpcode::MuladdIeee,
                vec![fract, Src::float(2.0 * PI), Src::float(-PI)],
            )
        } else {
            self.temp(AluOpcode::Add, vec![fract, Src::float(-0.5)])
        }
    }

    fn lower_intrinsic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        // Words: a 64-bit component is two.
        let comps = self.func.inst(v).def.map_or(0, words_of);
        let interface = matches!(
            ii.op,
            Intrinsic::LoadInput
                | Intrinsic::LoadFragCoord
                | Intrinsic::LoadFrontFace
                | Intrinsic::LoadVertexId
                | Intrinsic::StoreOutput
                | Intrinsic::StoreDeref
        );
        if self.subroutine && interface {
            return Err(self.error(
                v,
                "inputs and outputs are the entry function's: a called function cannot reach \
                 them in the R600 backend",
            ));
        }
        match ii.op {
            Intrinsic::LoadUniform | Intrinsic::LoadConstant | Intrinsic::LoadUbo => {
                let (bank, base, offset) = match ii.op {
                    Intrinsic::LoadUbo => {
                        let binding = self.func.constant_u32(ii.srcs[0]).ok_or_else(|| {
                            self.error(v, "UBOs at run-time bindings are not supported yet")
                        })?;
                        if binding >= CONSTANT_DATA_BANK as u32 - 1 {
                            return Err(self.error(v, "UBO bindings above 13 are not supported"));
                        }
                        (binding as u8 + 1, 0, ii.srcs[1])
                    }
                    op => {
                        let base = ii.index(IndexKind::Base).unwrap_or(0);
                        let bank = if op == Intrinsic::LoadConstant {
                            CONSTANT_DATA_BANK
                        } else {
                            0
                        };
                        (bank, base, ii.srcs[0])
                    }
                };
                let Some(offset) = self.func.constant_u32(offset).map(|o| base + o) else {
                    return self.fetch_uniform(v, bank, base, offset);
                };
                if offset % 4 != 0 {
                    return Err(self.error(v, "a uniform at an unaligned offset"));
                }
                let srcs = (0..comps as u32)
                    .map(|c| {
                        let dword = offset / 4 + c;
                        Src::of(Operand::Kcache {
                            bank,
                            index: dword / 4,
                            chan: (dword % 4) as u8,
                        })
                    })
                    .collect();
                self.define_direct(v, srcs);
                Ok(())
            }
            Intrinsic::LoadInput => {
                if self.func.constant_u32(ii.srcs[0]) != Some(0) {
                    return Err(self.error(v, "dynamically indexed inputs are not supported yet"));
                }
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0);
                // A 64-bit vector of three or four components goes on into the next slot.
                for c in 0..comps {
                    let word = first + u32::from(c);
                    let value = self.inputs[&(slot + word / 4)][word as usize % 4];
                    let d = self.dst(v, c);
                    self.mov(d, Src::value(value));
                }
                Ok(())
            }
            Intrinsic::LoadPrimitiveId if self.shader.stage == Stage::Fragment => {
                let value = self.inputs[&PRIMITIVE_ID_SLOT][0];
                let d = self.dst(v, 0);
                self.mov(d, Src::value(value));
                Ok(())
            }
            Intrinsic::LoadFragCoord => {
                let gpr = self.interface.frag_coord.expect("planned");
                for c in 0..comps {
                    let fixed = self.fixed(gpr, c);
                    let d = self.dst(v, c);
                    self.mov(d, Src::value(fixed));
                }
                Ok(())
            }
            Intrinsic::LoadFrontFace => {
                let gpr = self.interface.front_face.expect("planned");
                let fixed = self.fixed(gpr, 0);
                let d = self.dst(v, 0);
                self.mov(d, Src::value(fixed));
                Ok(())
            }
            Intrinsic::LoadLocalInvocationId
            | Intrinsic::LoadWorkgroupId
            | Intrinsic::LoadNumWorkgroups => {
                let gpr = match ii.op {
                    Intrinsic::LoadLocalInvocationId => LOCAL_ID_GPR,
                    Intrinsic::LoadWorkgroupId => WORKGROUP_ID_GPR,
                    _ => NUM_WORKGROUPS_GPR,
                };
                for c in 0..comps {
                    let fixed = self.fixed(gpr, c);
                    let d = self.dst(v, c);
                    self.mov(d, Src::value(fixed));
                }
                Ok(())
            }
            Intrinsic::ImageDerefStore => self.image_store(v, ii),
            Intrinsic::ImageDerefLoad => self.image_load(v, ii),
            Intrinsic::ImageDerefAtomic | Intrinsic::ImageDerefAtomicSwap => {
                self.image_atomic(v, ii)
            }
            Intrinsic::IsHelperInvocation if self.shader.stage == Stage::Fragment => {
                self.helper_invocation(v);
                Ok(())
            }
            Intrinsic::LoadShared | Intrinsic::StoreShared => self.shared_access(v, ii),
            Intrinsic::SharedAtomic | Intrinsic::SharedAtomicSwap => self.shared_atomic(v, ii),
            Intrinsic::Barrier => self.barrier(v, ii),
            Intrinsic::LoadSsbo => self.ssbo_load(v, ii),
            Intrinsic::StoreSsbo => self.ssbo_store(v, ii),
            Intrinsic::SsboAtomic | Intrinsic::SsboAtomicSwap => self.ssbo_atomic(v, ii),
            // The vertex index the fetch shader reads the attributes at, in R0.x.
            Intrinsic::LoadVertexId if self.shader.stage == Stage::Vertex => {
                let fixed = self.fixed(0, 0);
                let d = self.dst(v, 0);
                self.mov(d, Src::value(fixed));
                Ok(())
            }
            Intrinsic::StoreOutput => {
                if self.func.constant_u32(ii.srcs[1]) != Some(0) {
                    return Err(self.error(v, "dynamically indexed outputs are not supported yet"));
                }
                let slot = ii.index(IndexKind::Base).unwrap_or(0);
                let first = ii.index(IndexKind::Component).unwrap_or(0);
                let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
                let data = ii.srcs[0];
                let words = self.word_mask(data, mask);
                // A 64-bit vector of three or four components goes on into the next slot.
                for w in (0..8).filter(|w| words & (1 << w) != 0) {
                    let word = first + w;
                    self.store(
                        Output::Slot(slot + word / 4),
                        word as usize % 4,
                        w as u8,
                        data,
                    );
                }
                Ok(())
            }
            // `lower-io` leaves built-in outputs as variables.
            Intrinsic::StoreDeref if self.shader.stage == Stage::Vertex => {
                let output = match &self.func.inst(ii.srcs[0]).kind {
                    InstKind::Deref(Deref::Var(var)) => {
                        match self.shader.variables[var.0 as usize].builtin {
                            Some(Builtin::Position) => Some(Output::Position),
                            Some(Builtin::PointSize) => Some(Output::PointSize),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let output = output.ok_or_else(|| {
                    self.error(
                        v,
                        "only stores of gl_Position and gl_PointSize are supported",
                    )
                })?;
                let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
                for c in (0..4).filter(|c| mask & (1 << c) != 0) {
                    self.store(output, c as usize, c, ii.srcs[1]);
                }
                Ok(())
            }
            Intrinsic::LoadScratch | Intrinsic::StoreScratch => self.scratch_access(v, ii),
            Intrinsic::Discard | Intrinsic::Terminate | Intrinsic::Demote => {
                self.emit(
                    AluOpcode::KilleInt,
                    None,
                    vec![Src::constant(0), Src::constant(0)],
                );
                Ok(())
            }
            Intrinsic::DiscardIf | Intrinsic::TerminateIf | Intrinsic::DemoteIf => {
                let cond = self.src(ii.srcs[0], 0);
                self.emit(AluOpcode::KillneInt, None, vec![cond, Src::constant(0)]);
                Ok(())
            }
            op if op.is_subgroup() => Err(self.error(v, crate::isa::NO_CROSS_LANE_OPERATIONS)),
            _ => Err(self.error(v, "this intrinsic is not supported yet")),
        }
    }

    /// The LDS byte address `offset` plus `bytes`: a constant, or the offset's value plus it.
    fn lds_address(&mut self, offset: Value, bytes: u32) -> Src {
        if let Some(constant) = self.func.constant_u32(offset) {
            return Src::constant(constant.wrapping_add(bytes));
        }
        let offset = self.src(offset, 0);
        if bytes == 0 {
            return offset;
        }
        self.temp(AluOpcode::AddInt, vec![offset, Src::constant(bytes)])
    }

    /// A `load_shared` (an LDS_READ_RET per dword) or a `store_shared` (an LDS_WRITE per dword
    /// its write mask touches), at the byte offset plus `base`.
    fn shared_access(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        self.uses_lds(v)?;
        let base = ii.index(IndexKind::Base).unwrap_or(0);
        if ii.op == Intrinsic::LoadShared {
            let words = self.func.inst(v).def.map_or(0, words_of);
            for w in 0..words {
                let address = self.lds_address(ii.srcs[0], base + 4 * u32::from(w));
                let d = self.dst(v, w);
                self.emit(AluOpcode::LdsReadRet, Some(d), vec![address]);
            }
            return Ok(());
        }
        let data = ii.srcs[0];
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        let words = self.word_mask(data, mask);
        for w in (0..8u8).filter(|w| words >> w & 1 != 0) {
            let address = self.lds_address(ii.srcs[1], base + 4 * u32::from(w));
            let value = self.src(data, w);
            self.emit(AluOpcode::LdsWrite, None, vec![address, value]);
        }
        Ok(())
    }

    /// A `shared_atomic` or `shared_atomic_swap` on a 32-bit scalar: the LDS operation's
    /// `_RET` form, which gives the old value.
    fn shared_atomic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        self.uses_lds(v)?;
        let op = ii
            .index(IndexKind::AtomicOp)
            .and_then(AtomicOp::from_index)
            .ok_or_else(|| self.error(v, "an atomic without its operation"))?;
        if self
            .func
            .inst(v)
            .def
            .is_none_or(|d| d.bits != 32 || d.comps != 1)
        {
            return Err(self.error(v, "atomics other than on 32-bit scalars are not supported"));
        }
        let lds_op = match op {
            AtomicOp::Iadd => AluOpcode::LdsAddRet,
            AtomicOp::Imin => AluOpcode::LdsMinIntRet,
            AtomicOp::Umin => AluOpcode::LdsMinUintRet,
            AtomicOp::Imax => AluOpcode::LdsMaxIntRet,
            AtomicOp::Umax => AluOpcode::LdsMaxUintRet,
            AtomicOp::Iand => AluOpcode::LdsAndRet,
            AtomicOp::Ior => AluOpcode::LdsOrRet,
            AtomicOp::Ixor => AluOpcode::LdsXorRet,
            AtomicOp::Xchg => AluOpcode::LdsXchgRet,
            AtomicOp::Cmpxchg => AluOpcode::LdsCmpXchgRet,
            AtomicOp::Fadd | AtomicOp::Fmin | AtomicOp::Fmax => {
                return Err(self.error(v, "float atomics: the LDS has none"));
            }
        };
        let base = ii.index(IndexKind::Base).unwrap_or(0);
        let mut srcs = vec![self.lds_address(ii.srcs[0], base)];
        // The swap form's operands: the comparand, then the value stored.
        for &data in &ii.srcs[1..] {
            srcs.push(self.src(data, 0));
        }
        let d = self.dst(v, 0);
        self.emit(lds_op, Some(d), srcs);
        Ok(())
    }

    /// Shared memory is the LDS of Evergreen and Cayman's compute shaders.
    fn uses_lds(&self, v: Value) -> Result<(), LowerError> {
        if self.shader.stage != Stage::Compute {
            return Err(self.error(v, "shared memory outside a compute shader"));
        }
        Ok(())
    }

    /// A `barrier`: a GROUP_BARRIER when it synchronizes the workgroup. A wavefront's LDS
    /// operations run in order, and the packer makes its reads of memory it wrote wait for
    /// the writes (WAIT_ACK), so ordering memory alone needs no instruction.
    fn barrier(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        const WORKGROUP_SCOPE: u32 = 3;
        if ii.index(IndexKind::ExecutionScope).unwrap_or(0) < WORKGROUP_SCOPE {
            return Ok(());
        }
        if self.shader.stage != Stage::Compute {
            return Err(self.error(v, "only compute shaders synchronize workgroups"));
        }
        self.emit(AluOpcode::GroupBarrier, None, Vec::new());
        Ok(())
    }

    /// The RAT of `target`: the next free one at its first use. Only pixel and compute
    /// shaders write RATs, on Evergreen and Cayman.
    fn rat(&mut self, v: Value, target: RatTarget) -> Result<u8, LowerError> {
        if !self.chip.is_evergreen_class() || self.shader.stage == Stage::Vertex {
            return Err(self.error(
                v,
                "images and SSBOs need a RAT (random access target): Evergreen and Cayman have \
                 them in pixel and compute shaders, R600 and R700 none",
            ));
        }
        if let Some(rat) = self.interface.rats.iter().position(|&t| t == target) {
            return Ok(rat as u8);
        }
        if self.interface.rats.len() >= usize::from(RATS) {
            return Err(self.error(v, &format!("more than the {RATS} RATs a shader has")));
        }
        self.interface.rats.push(target);
        Ok(self.interface.rats.len() as u8 - 1)
    }

    /// An image store: a RAT write (MEM_RAT STORE_TYPED) of the four components at the
    /// coordinates (x, y and a layer or z as the image has them).
    fn image_store(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let binding = opaque_binding(self.shader, self.func, ii.srcs[0], "image")
            .map_err(|e| self.error(v, &e))?;
        let rat = self.rat(v, RatTarget::Image(binding))?;
        let data = ii.srcs[3];
        if self
            .func
            .value_type(data)
            .is_none_or(|t| t.bits != 32 || t.comps != 4)
        {
            return Err(self.error(v, "image stores of other than four 32-bit components"));
        }
        let index = self.image_coordinates(ii.srcs[1]);
        let srcs = std::array::from_fn(|c| {
            let src = self.src(data, c as u8);
            self.lane(src)
        });
        let write = Export::rat(rat.into(), rat_inst::STORE_TYPED, srcs, index);
        self.block.push(Inst::Export(write));
        Ok(())
    }

    /// The index lanes of an image RAT operation at `coord`: x, y and a layer or z (zero for
    /// the coordinates the image does not have).
    fn image_coordinates(&mut self, coord: Value) -> [Lane; 4] {
        let coords = self.func.value_type(coord).map_or(1, |t| t.comps).min(3);
        let mut index = [Lane::Unused; 4];
        for (c, lane) in index.iter_mut().enumerate().take(3) {
            *lane = if (c as u8) < coords {
                let src = self.src(coord, c as u8);
                self.lane(src)
            } else {
                Lane::Zero
            };
        }
        index
    }

    /// An image load: a RAT NOP_RTN at the texel, then a fetch of what it returned (the
    /// texel's components).
    fn image_load(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let binding = opaque_binding(self.shader, self.func, ii.srcs[0], "image")
            .map_err(|e| self.error(v, &e))?;
        let Some(def) = self.func.inst(v).def.filter(|d| d.bits == 32) else {
            return Err(self.error(v, "image loads of other than 32-bit components"));
        };
        let rat = self.rat(v, RatTarget::Image(binding))?;
        let index = self.image_coordinates(ii.srcs[1]);
        let read = Export::rat(rat.into(), rat_inst::NOP_RTN, [Lane::Unused; 4], index);
        self.block.push(Inst::Export(read));
        let mut dsts = [None; 4];
        for (c, dst) in dsts
            .iter_mut()
            .enumerate()
            .take(usize::from(def.comps.min(4)))
        {
            *dst = Some(self.dst(v, c as u8));
        }
        self.fetch_return(rat, dsts, def.comps.min(4));
        Ok(())
    }

    /// A fetch of what the lane's last returning RAT operation on `rat` gave (`count`
    /// components into `dsts`). Its address is not read (a value, as a vertex fetch's
    /// address must be).
    fn fetch_return(&mut self, rat: u8, dsts: [Option<VReg>; 4], count: u8) {
        let address = self.lir.new_value();
        self.mov(address, Src::constant(0));
        self.fetch_dwords(RAT_RETURN_RESOURCE + rat, 0, address, dsts, count);
    }

    /// The RAT of the SSBO `binding` names, and the dword index byte offset `offset` is.
    fn ssbo_place(
        &mut self,
        v: Value,
        binding: Value,
        offset: Value,
    ) -> Result<(u8, VReg), LowerError> {
        let binding = self
            .func
            .constant_u32(binding)
            .ok_or_else(|| self.error(v, "SSBOs at run-time bindings are not supported yet"))?;
        let rat = self.rat(v, RatTarget::Buffer(binding))?;
        let bytes = self.src(offset, 0);
        let index = self.lir.new_value();
        self.emit(
            AluOpcode::LshrInt,
            Some(index),
            vec![bytes, Src::constant(2)],
        );
        Ok((rat, index))
    }

    /// The GDS byte address of byte `offset` of the SSBO `binding` names, when that is an
    /// atomic counter buffer (past [`ATOMIC_COUNTER_BINDINGS`]) and the chip keeps them in its global data share (Evergreen and Cayman:
    /// every stage reaches it, and its operations are atomic across a draw, as a RAT is not
    /// in a vertex shader); `None` for the other SSBOs.
    fn counter_address(
        &mut self,
        v: Value,
        binding: Value,
        offset: Value,
    ) -> Result<Option<VReg>, LowerError> {
        let Some(binding) = (self.func.constant_u32(binding))
            .and_then(|b| b.checked_sub(ATOMIC_COUNTER_BINDINGS))
            .filter(|_| self.chip.is_evergreen_class())
        else {
            return Ok(None);
        };
        if binding >= GDS_COUNTER_BUFFERS {
            return Err(self.error(
                v,
                &format!(
                    "atomic counter buffer {binding}: the global data share holds buffers 0 to {}",
                    GDS_COUNTER_BUFFERS - 1
                ),
            ));
        }
        if !self.interface.gds_buffers.contains(&binding) {
            self.interface.gds_buffers.push(binding);
        }
        let base = GDS_COUNTER_BUFFER_BYTES * binding;
        let address = self.lir.new_value();
        match self.func.constant_u32(offset) {
            Some(offset) => self.mov(address, Src::constant(base.wrapping_add(offset))),
            None => {
                let srcs = vec![self.src(offset, 0), Src::constant(base)];
                self.emit(AluOpcode::AddInt, Some(address), srcs);
            }
        }
        Ok(Some(address))
    }

    /// GDS operation `op` on the dword `words` dwords past byte address `address`, with the
    /// operands `y` and `z`; the dword as it was goes to `dst`.
    fn gds(&mut self, op: FetchOp, address: VReg, words: u8, [y, z]: [Lane; 2], dst: Option<VReg>) {
        let address = if words == 0 {
            address
        } else {
            let moved = self.lir.new_value();
            let srcs = vec![Src::value(address), Src::constant(4 * u32::from(words))];
            self.emit(AluOpcode::AddInt, Some(moved), srcs);
            moved
        };
        // Helper pixels must not change the counters.
        let valid_pixels = self.shader.stage == Stage::Fragment;
        let gds = Fetch::gds(op, [Lane::Value(address), y, z], dst, valid_pixels);
        self.block.push(Inst::Fetch(gds));
    }

    /// An SSBO load: vertex fetches of its dwords through the RAT's buffer resource (or GDS
    /// reads of atomic counters).
    fn ssbo_load(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let words = self.func.inst(v).def.map_or(0, words_of);
        if let Some(address) = self.counter_address(v, ii.srcs[0], ii.srcs[1])? {
            for k in 0..words {
                let dst = self.dst(v, k);
                let zero = [Lane::Zero; 2];
                self.gds(FetchOp::GdsReadRet, address, k, zero, Some(dst));
            }
            return Ok(());
        }
        let (rat, index) = self.ssbo_place(v, ii.srcs[0], ii.srcs[1])?;
        for first in (0..words).step_by(4) {
            let count = (words - first).min(4);
            let mut dsts = [None; 4];
            for (c, dst) in dsts.iter_mut().enumerate().take(count as usize) {
                *dst = Some(self.dst(v, first + c as u8));
            }
            let resource = RAT_BUFFER_RESOURCE + rat;
            self.fetch_dwords(resource, 4 * u16::from(first), index, dsts, count);
        }
        Ok(())
    }

    /// An SSBO store: a RAT write (MEM_RAT STORE_RAW) of each group of four dwords the write
    /// mask touches (of atomic counters: a GDS exchange of each dword).
    fn ssbo_store(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let data = ii.srcs[0];
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        let words = self.word_mask(data, mask);
        if let Some(address) = self.counter_address(v, ii.srcs[1], ii.srcs[2])? {
            for k in (0..8u8).filter(|k| words >> k & 1 != 0) {
                let src = self.src(data, k);
                let value = self.lane(src);
                self.gds(FetchOp::GdsXchgRet, address, k, [value, Lane::Zero], None);
            }
            return Ok(());
        }
        let (rat, base) = self.ssbo_place(v, ii.srcs[1], ii.srcs[2])?;
        for first in (0..8u8).step_by(4) {
            if words >> first & 15 == 0 {
                continue;
            }
            let index = if first == 0 {
                base
            } else {
                let moved = self.lir.new_value();
                let srcs = vec![Src::value(base), Src::constant(first.into())];
                self.emit(AluOpcode::AddInt, Some(moved), srcs);
                moved
            };
            let srcs = std::array::from_fn(|c| {
                if words >> (first as usize + c) & 1 == 0 {
                    return Lane::Unused;
                }
                let src = self.src(data, first + c as u8);
                self.lane(src)
            });
            let index = [Lane::Value(index), Lane::Unused, Lane::Unused, Lane::Unused];
            let write = Export::rat(rat.into(), rat_inst::STORE_RAW, srcs, index);
            self.block.push(Inst::Export(write));
        }
        Ok(())
    }

    /// An SSBO atomic on the dword at its byte offset: a RAT's, or on an atomic counter a GDS
    /// operation (a compare-exchange's comparand in y, the value stored in z).
    fn ssbo_atomic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        if let Some(address) = self.counter_address(v, ii.srcs[0], ii.srcs[1])? {
            let op = self.atomic_op(v, ii)?;
            let op = gds_atomic(op)
                .ok_or_else(|| self.error(v, "float atomics: the global data share has none"))?;
            let mut operands = [Lane::Zero; 2];
            for (lane, &operand) in operands.iter_mut().zip(&ii.srcs[2..]) {
                let src = self.src(operand, 0);
                *lane = self.lane(src);
            }
            let dst = self.dst(v, 0);
            self.gds(op, address, 0, operands, Some(dst));
            return Ok(());
        }
        let inst = self.atomic_inst(v, ii)?;
        let (rat, index_value) = self.ssbo_place(v, ii.srcs[0], ii.srcs[1])?;
        let index = [
            Lane::Value(index_value),
            Lane::Unused,
            Lane::Unused,
            Lane::Unused,
        ];
        self.rat_atomic_at(v, ii, inst, rat, index, 2);
        Ok(())
    }

    /// An image atomic on a 32-bit texel's first component.
    fn image_atomic(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let binding = opaque_binding(self.shader, self.func, ii.srcs[0], "image")
            .map_err(|e| self.error(v, &e))?;
        let inst = self.atomic_inst(v, ii)?;
        let rat = self.rat(v, RatTarget::Image(binding))?;
        let index = self.image_coordinates(ii.srcs[1]);
        // Its operands follow the coordinates and the sample.
        self.rat_atomic_at(v, ii, inst, rat, index, 3);
        Ok(())
    }

    /// The operation of the atomic `v`, which must be on a 32-bit scalar.
    fn atomic_op(&self, v: Value, ii: &IntrinsicInst) -> Result<AtomicOp, LowerError> {
        let op = ii
            .index(IndexKind::AtomicOp)
            .and_then(AtomicOp::from_index)
            .ok_or_else(|| self.error(v, "an atomic without its operation"))?;
        if self
            .func
            .inst(v)
            .def
            .is_none_or(|d| d.bits != 32 || d.comps != 1)
        {
            return Err(self.error(v, "atomics other than on 32-bit scalars are not supported"));
        }
        Ok(op)
    }

    /// The RAT's `_RTN` instruction for the atomic `v`, or why it has none.
    fn atomic_inst(&self, v: Value, ii: &IntrinsicInst) -> Result<u8, LowerError> {
        let op = self.atomic_op(v, ii)?;
        rat_atomic(op).ok_or_else(|| self.error(v, "float atomics: the RATs have none"))
    }

    /// The RAT `_RTN` instruction `inst` on `rat` at `index`, its operand in the data GPR's x
    /// (a compare-exchange's comparand in w: the swap form's sources from `operands` on are
    /// the comparand, then the value stored), then a fetch of what it returned into `v`.
    fn rat_atomic_at(
        &mut self,
        v: Value,
        ii: &IntrinsicInst,
        inst: u8,
        rat: u8,
        index: [Lane; 4],
        operands: usize,
    ) {
        let swap = matches!(
            ii.op,
            Intrinsic::SsboAtomicSwap | Intrinsic::ImageDerefAtomicSwap
        );
        let operand = self.src(ii.srcs[operands + swap as usize], 0);
        let mut srcs = [self.lane(operand), Lane::Zero, Lane::Zero, Lane::Zero];
        if swap {
            let comparand = self.src(ii.srcs[operands], 0);
            srcs[3] = self.lane(comparand);
        }
        let write = Export::rat(rat.into(), inst, srcs, index);
        self.block.push(Inst::Export(write));
        let returned = self.dst(v, 0);
        self.fetch_return(rat, [Some(returned), None, None, None], 1);
    }

    /// What a `load_scratch` or `store_scratch` accesses: a constant offset is folded into
    /// `base`.
    fn scratch_shape(&self, v: Value, ii: &IntrinsicInst) -> Result<ScratchAccess, LowerError> {
        let (data, offset) = match ii.op {
            Intrinsic::StoreScratch => (Some(ii.srcs[0]), ii.srcs[1]),
            _ => (None, ii.srcs[0]),
        };
        // The value loaded or stored gives the access's shape.
        let Some(def) = self.func.inst(data.unwrap_or(v)).def else {
            return Err(self.error(v, "a scratch access without a value"));
        };

        let base = ii.index(IndexKind::Base).unwrap_or(0);
        Ok(match self.func.constant_u32(offset) {
            Some(constant) => ScratchAccess {
                data,
                def,
                base: base.saturating_add(constant),
                dynamic: None,
            },
            None => ScratchAccess {
                data,
                def,
                base,
                dynamic: Some(offset),
            },
        })
    }

    /// A load or store of the temporaries kept in the indexed registers ([`indexed_gprs`]):
    /// byte `o` is channel `o / 4 % 4` of register `o / 16`. A component is one MOV from or to
    /// the register, relative to AR (loaded with the run-time offset / 16) when the offset is
    /// not a constant.
    fn indexed_access(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        let ScratchAccess {
            data,
            def,
            base,
            dynamic,
        } = self.scratch_shape(v, ii)?;
        let index = match dynamic {
            None => None,
            Some(offset) => Some(match self.ar_indices.get(&offset) {
                Some(&index) => index,
                None => {
                    let bytes = self.src(offset, 0);
                    let index = self.lir.new_value();
                    self.emit(
                        AluOpcode::LshrInt,
                        Some(index),
                        vec![bytes, Src::constant(4)],
                    );
                    self.ar_indices.insert(offset, index);
                    index
                }
            }),
        };
        let first = base / 4;
        let words = words_of(def);
        if first + u32::from(words) > 4 * u32::from(self.lir.indexed_gprs) {
            return Err(self.error(v, "a scratch access outside the temporaries"));
        }
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        let mask = data.map_or(mask, |data| self.word_mask(data, mask));
        for c in 0..words {
            let dword = first + u32::from(c);
            let indexed = Indexed {
                reg: (dword / 4) as u16,
                chan: (dword % 4) as u8,
                index,
            };
            match data {
                Some(data) if mask & 1 << c != 0 => {
                    let src = self.src(data, c);
                    self.block.push(Inst::Alu(Alu {
                        indexed: Some(indexed),
                        ..Alu::new(AluOpcode::Mov, None, vec![src])
                    }));
                }
                Some(_) => {}
                None => {
                    let dst = self.dst(v, c);
                    self.mov(dst, Src::of(Operand::Indexed(indexed)));
                }
            }
        }
        Ok(())
    }

    /// A load or store of the temporaries kept in memory (`load_scratch`, `store_scratch` at
    /// byte `base` plus a run-time offset). Each dword of them is the x channel of a scratch
    /// element of its own, so that an offset (any multiple of 4 bytes) is an element index
    /// whatever the temporary's type: a component is one READ_SCRATCH, or one MEM_SCRATCH
    /// of a value [`crate::units`] keeps in channel x.
    fn scratch_access(&mut self, v: Value, ii: &IntrinsicInst) -> Result<(), LowerError> {
        if self.lir.indexed_gprs > 0 {
            return self.indexed_access(v, ii);
        }
        if !self.chip.reads_scratch() {
            return Err(self.error(
                v,
                "temporaries in scratch memory need READ_SCRATCH, which R600 lacks (R700 and later have it)",
            ));
        }
        if self.scratch_dwords > MAX_SCRATCH_ELEMENTS {
            return Err(self.error(
                v,
                &format!(
                    "{} bytes of temporaries in scratch memory; at most {} are supported",
                    4 * self.scratch_dwords,
                    4 * MAX_SCRATCH_ELEMENTS
                ),
            ));
        }
        let ScratchAccess {
            data,
            def,
            base,
            dynamic,
        } = self.scratch_shape(v, ii)?;
        let index = match dynamic {
            None => Lane::Unused,
            Some(offset) => {
                let offset = self.src(offset, 0);
                let index = self.lir.new_value();
                self.emit(
                    AluOpcode::LshrInt,
                    Some(index),
                    vec![offset, Src::constant(2)],
                );
                Lane::Value(index)
            }
        };
        let first = base / 4;
        let words = words_of(def);
        if !base.is_multiple_of(4) || first + u32::from(words) > self.scratch_dwords {
            return Err(self.error(
                v,
                "a scratch access outside the temporaries, or not aligned to 4 bytes",
            ));
        }
        self.lir.scratch_elements = self.scratch_dwords as u16;
        let mask = ii.index(IndexKind::WriteMask).unwrap_or(0);
        let mask = data.map_or(mask, |data| self.word_mask(data, mask));
        for c in 0..words {
            let element = first + u32::from(c);
            match data {
                Some(data) if mask & 1 << c != 0 => {
                    let src = self.src(data, c);
                    let value = self.lane(src);
                    let lanes = [value, Lane::Unused, Lane::Unused, Lane::Unused];
                    let write = Export::write_scratch(element as u16, lanes, index);
                    self.block.push(Inst::Export(write));
                }
                Some(_) => {}
                None => {
                    let dst = self.dst(v, c);
                    self.block.push(Inst::Fetch(Fetch::read_scratch(
                        element as u16,
                        (self.scratch_dwords - element) as u16,
                        index,
                        [Some(dst), None, None, None],
                    )));
                }
            }
        }
        Ok(())
    }

    /// A uniform load at a run-time byte offset `offset` (plus `base`) from constant buffer
    /// `bank`: a vertex fetch of its dwords.
    fn fetch_uniform(
        &mut self,
        v: Value,
        bank: u8,
        base: u32,
        offset: Value,
    ) -> Result<(), LowerError> {
        let words = self.func.inst(v).def.map_or(0, words_of);
        let offset = self.src(offset, 0);
        let index = self.lir.new_value();
        self.emit(
            AluOpcode::LshrInt,
            Some(index),
            vec![offset, Src::constant(2)],
        );
        // A fetch reads up to four dwords: 64-bit vectors of three or four take two.
        for first in (0..words).step_by(4) {
            let count = (words - first).min(4);
            let base = u16::try_from(base + 4 * u32::from(first))
                .map_err(|_| self.error(v, "a uniform base offset above 65535 bytes"))?;
            let mut dsts = [None; 4];
            for (c, dst) in dsts.iter_mut().enumerate().take(count as usize) {
                *dst = Some(self.dst(v, first + c as u8));
            }
            self.fetch_dwords(bank, base, index, dsts, count);
        }
        Ok(())
    }

    /// A vertex fetch of `count` dwords of constant buffer `bank` at byte `base` plus dword
    /// `index` into `dsts`.
    fn fetch_dwords(
        &mut self,
        bank: u8,
        base: u16,
        index: VReg,
        dsts: [Option<VReg>; 4],
        count: u8,
    ) {
        self.block.push(Inst::Fetch(Fetch {
            op: FetchOp::Vfetch,
            resource: bank,
            sampler: 0,
            srcs: [Lane::Value(index), Lane::Unused, Lane::Unused, Lane::Unused],
            dsts,
            coord_normalized: [false; 4],
            offset: [0; 3],
            vtx: VtxFormat {
                offset: base,
                // No index offset, raw integer data.
                fetch_type: 2,
                data_format: DWORD_FORMATS[count as usize - 1],
                num_format: 1,
                srf_mode: true,
                ..VtxFormat::default()
            },
            gradients: None,
            valid_pixels: false,
        }));
    }

    /// A texture instruction: one fetch.
    fn lower_tex(&mut self, v: Value, t: &Tex) -> Result<(), LowerError> {
        let unsupported = [
            TexSrc::MinLod,
            TexSrc::MsIndex,
            TexSrc::TextureOffset,
            TexSrc::SamplerOffset,
        ];
        if let Some(kind) = unsupported.into_iter().find(|&k| t.src(k).is_some()) {
            return Err(self.error(v, &format!("texture source {kind:?} is not supported yet")));
        }
        let (binding, sampler) = t
            .bindings(self.shader, self.func)
            .map_err(|e| self.error(v, &e))?;
        if binding >= SAMPLERS || sampler >= SAMPLERS {
            return Err(self.error(
                v,
                &format!("texture bindings past {} are not supported", SAMPLERS - 1),
            ));
        }
        let lod_zero = t
            .src(TexSrc::Lod)
            .is_some_and(|l| self.func.constant_u32(l) == Some(0));
        let op = match (t.op, t.is_shadow) {
            (TexOp::Tex, false) => FetchOp::Sample,
            (TexOp::Tex, true) => FetchOp::SampleC,
            (TexOp::Txb, false) => FetchOp::SampleLb,
            (TexOp::Txb, true) => FetchOp::SampleCLb,
            (TexOp::Txl, false) if lod_zero => FetchOp::SampleLz,
            (TexOp::Txl, true) if lod_zero => FetchOp::SampleCLz,
            (TexOp::Txl, false) => FetchOp::SampleL,
            (TexOp::Txl, true) => FetchOp::SampleCL,
            (TexOp::Txd, false) => FetchOp::SampleG,
            (TexOp::Txd, true) => FetchOp::SampleCG,
            (TexOp::Txf, false) => FetchOp::Ld,
            (TexOp::Txs | TexOp::QueryLevels, _) => FetchOp::GetTextureResinfo,
            (TexOp::Lod, _) => FetchOp::GetLod,
            (op, _) => {
                return Err(self.error(v, &format!("`{}` is not supported yet", op.name())));
            }
        };
        let params = layout(op, t.dim, t.is_array).map_err(|e| self.error(v, &e))?;
        let axes = t.dim.coord_components() as usize;
        let read = |this: &mut Self, kind: TexSrc, c: u8| t.src(kind).map(|x| this.src(x, c));
        let mut coords: Vec<Src> = (0..axes + t.is_array as usize)
            .map(|c| read(self, TexSrc::Coord, c as u8).unwrap_or(Src::constant(0)))
            .collect();
        let mut reference = read(self, TexSrc::Comparator, 0);
        if let Some(q) = read(self, TexSrc::Projector, 0) {
            let inverse = self.temp(AluOpcode::RecipIeee, vec![q]);
            for x in coords[..axes].iter_mut().chain(reference.as_mut()) {
                *x = self.temp(AluOpcode::MulIeee, vec![*x, inverse]);
            }
        }
        let mut srcs = [Lane::Unused; 4];
        for (lane, param) in srcs.iter_mut().zip(params) {
            let src = match param {
                None => continue,
                Some(TexParam::Coord(a)) => Some(coords[a as usize]),
                Some(TexParam::Layer) => Some(coords[axes]),
                Some(TexParam::Ref) => reference,
                Some(TexParam::Lod) => read(self, TexSrc::Lod, 0),
                Some(TexParam::Bias) => read(self, TexSrc::Bias, 0),
            };
            *lane = self.lane(src.unwrap_or(Src::constant(0)));
        }
        // SAMPLE_G: the gradients of the coordinate axes, x, y, z in the channels.
        let mut gradients = None;
        if t.op == TexOp::Txd {
            let mut both = [[Lane::Unused; 4]; 2];
            for (lanes, kind) in both.iter_mut().zip([TexSrc::Ddx, TexSrc::Ddy]) {
                for (a, lane) in lanes.iter_mut().enumerate().take(axes) {
                    let d = read(self, kind, a as u8).unwrap_or(Src::constant(0));
                    *lane = self.lane(d);
                }
            }
            gradients = Some(both);
        }
        let mut offset = [0i8; 3];
        if let Some(o) = t.src(TexSrc::Offset) {
            for (a, half_texels) in offset.iter_mut().enumerate().take(axes) {
                let texels = match self.src(o, a as u8).operand {
                    Operand::Const(bits) => bits as i32,
                    _ => return Err(self.error(v, "run-time texel offsets are not supported")),
                };
                // A signed 5-bit field in half texels.
                *half_texels = i8::try_from(2 * texels)
                    .ok()
                    .filter(|h| (-16..16).contains(h))
                    .ok_or_else(|| self.error(v, &format!("a texel offset of {texels}")))?;
            }
        }
        let comps = self.func.inst(v).def.map_or(0, |d| d.comps);
        let mut dsts = [None; 4];
        if t.op == TexOp::QueryLevels {
            dsts[3] = Some(self.dst(v, 0));
        } else if t.op == TexOp::Lod {
            // GET_LOD gives the computed LOD in x, the level it accesses in y: the IR's other
            // order.
            dsts[0] = Some(self.dst(v, 1));
            dsts[1] = Some(self.dst(v, 0));
        } else {
            for (c, dst) in dsts.iter_mut().enumerate().take(comps as usize) {
                *dst = Some(self.dst(v, c as u8));
            }
        }
        let resource = TEXTURE_RESOURCE_BASE + binding as u8;
        self.interface.textures.insert(
            resource,
            TexView {
                binding,
                dim: t.dim,
                is_array: t.is_array,
                dest_type: t.dest_type,
            },
        );
        self.interface.samplers.insert(sampler as u8, sampler);
        // Rectangle textures take texel coordinates; the others normalized ones.
        let normalized = t.dim != Dim::Rect;
        self.block.push(Inst::Fetch(Fetch {
            op,
            resource,
            sampler: sampler as u8,
            srcs,
            dsts,
            coord_normalized: [normalized; 4],
            offset,
            vtx: VtxFormat::default(),
            gradients,
            valid_pixels: false,
        }));
        Ok(())
    }

    /// Component `c` of a derivative of `x` along x or y: a gradient fetch.
    fn derivative(&mut self, dst: VReg, x: Src, along_x: bool, fine: bool) -> Result<(), String> {
        if fine && !self.chip.is_evergreen_class() {
            return Err("fine derivatives need Evergreen or Cayman".into());
        }
        let op = match (along_x, fine) {
            (true, false) => FetchOp::GetGradientsH,
            (false, false) => FetchOp::GetGradientsV,
            (true, true) => FetchOp::GetGradientsHFine,
            (false, true) => FetchOp::GetGradientsVFine,
        };
        let lane = self.lane(x);
        self.block.push(Inst::Fetch(Fetch {
            op,
            resource: 0,
            sampler: 0,
            srcs: [lane, Lane::Unused, Lane::Unused, Lane::Unused],
            dsts: [Some(dst), None, None, None],
            coord_normalized: [true; 4],
            offset: [0; 3],
            vtx: VtxFormat::default(),
            gradients: None,
            valid_pixels: false,
        }));
        Ok(())
    }

    /// `gl_HelperInvocation`: true in every lane, then cleared by a fetch (a gradient of zero)
    /// in valid pixel mode, which the covered pixels alone run; helper pixels keep true.
    fn helper_invocation(&mut self, v: Value) {
        let d = self.dst(v, 0);
        self.emit(AluOpcode::Mov, Some(d), vec![Src::constant(u32::MAX)]);
        self.block.push(Inst::Fetch(Fetch {
            op: FetchOp::GetGradientsH,
            resource: 0,
            sampler: 0,
            srcs: [Lane::Zero, Lane::Unused, Lane::Unused, Lane::Unused],
            dsts: [Some(d), None, None, None],
            coord_normalized: [true; 4],
            offset: [0; 3],
            vtx: VtxFormat::default(),
            gradients: None,
            valid_pixels: true,
        }));
    }

    /// What a fetch source channel reading `src` is: the value itself, a constant 0 or 1.0,
    /// or a copy of anything else (modifiers, other constants, uniforms).
    fn lane(&mut self, src: Src) -> Lane {
        let plain = !src.neg && !src.abs;
        match src.operand {
            Operand::Value(v) if plain => Lane::Value(v),
            Operand::Const(0) if plain => Lane::Zero,
            Operand::Const(bits) if plain && bits == 1.0f32.to_bits() => Lane::One,
            _ => {
                let t = self.lir.new_value();
                self.mov(t, src);
                Lane::Value(t)
            }
        }
    }

    /// Stores the components of `data` in `mask` to `output`, from component `first` on.
    /// Copies word `word` of `data` to component `comp` of `output`.
    fn store(&mut self, output: Output, comp: usize, word: u8, data: Value) {
        let value = self.src(data, word);
        let comps = self.outputs.entry(output).or_insert([None; 4]);
        let out = *comps[comp].get_or_insert_with(|| self.lir.new_value());
        self.mov(out, value);
    }

    /// The words of `data` a write mask of its components selects.
    fn word_mask(&self, data: Value, mask: u32) -> u32 {
        if !self.is_wide(data) {
            return mask;
        }
        (0..4)
            .filter(|c| mask & (1 << c) != 0)
            .fold(0, |words, c| words | 3 << (2 * c))
    }

    /// The exports of a vertex shader, at its end: the position (POS 60), the point size
    /// (POS 61), then each output slot as a PARAM (at least one: the hardware expects it).
    fn export_vertex(&mut self, out: &mut Vec<Node>) {
        let outputs = std::mem::take(&mut self.outputs);
        let lanes = |comps: &[Option<VReg>; 4]| comps.map(|c| c.map_or(Lane::Zero, Lane::Value));
        let position = outputs
            .get(&Output::Position)
            .map_or([Lane::Unused; 4], lanes);
        self.block
            .push(Inst::Export(Export::new(ExportType::Pos, 60, position)));
        if let Some(size) = outputs.get(&Output::PointSize) {
            self.interface.point_size = true;
            self.block.push(Inst::Export(Export::new(
                ExportType::Pos,
                61,
                [lanes(size)[0], Lane::Unused, Lane::Unused, Lane::Unused],
            )));
        }
        for (output, comps) in &outputs {
            if let &Output::Slot(slot) = output {
                self.block.push(Inst::Export(Export::new(
                    ExportType::Param,
                    self.interface.params_out.len() as u16,
                    lanes(comps),
                )));
                self.interface.params_out.push(slot);
            }
        }
        if self.interface.params_out.is_empty() {
            self.block.push(Inst::Export(Export::new(
                ExportType::Param,
                0,
                [Lane::Unused; 4],
            )));
        }
        self.flush(out);
    }

    /// The exports of the colour outputs, at the end of the shader: one EXPORT per render
    /// target, the last one EXPORT_DONE (a masked one when the shader writes no colour).
    fn export_colours(&mut self, out: &mut Vec<Node>) {
        let outputs = std::mem::take(&mut self.outputs);
        if outputs.is_empty() {
            self.block.push(Inst::Export(Export::new(
                ExportType::Pixel,
                0,
                [Lane::Unused; 4],
            )));
        }
        for (&output, comps) in &outputs {
            let Output::Slot(slot) = output else {
                continue;
            };
            self.interface.colour_targets.push(slot);
            self.block.push(Inst::Export(Export::new(
                ExportType::Pixel,
                slot as u16,
                comps.map(|c| c.map_or(Lane::Zero, Lane::Value)),
            )));
        }
        self.flush(out);
    }
}

/// The RAT's `_RTN` operation of an integer atomic (the RATs have no float atomics).
fn rat_atomic(op: AtomicOp) -> Option<u8> {
    Some(match op {
        AtomicOp::Iadd => rat_inst::ADD_RTN,
        AtomicOp::Imin => rat_inst::MIN_INT_RTN,
        AtomicOp::Umin => rat_inst::MIN_UINT_RTN,
        AtomicOp::Imax => rat_inst::MAX_INT_RTN,
        AtomicOp::Umax => rat_inst::MAX_UINT_RTN,
        AtomicOp::Iand => rat_inst::AND_RTN,
        AtomicOp::Ior => rat_inst::OR_RTN,
        AtomicOp::Ixor => rat_inst::XOR_RTN,
        AtomicOp::Xchg => rat_inst::XCHG_RTN,
        AtomicOp::Cmpxchg => rat_inst::CMPXCHG_INT_RTN,
        AtomicOp::Fadd | AtomicOp::Fmin | AtomicOp::Fmax => return None,
    })
}

/// The GDS operation of an atomic, `None` for the float ones (the GDS has none).
fn gds_atomic(op: AtomicOp) -> Option<FetchOp> {
    Some(match op {
        AtomicOp::Iadd => FetchOp::GdsAddRet,
        AtomicOp::Imin => FetchOp::GdsMinIntRet,
        AtomicOp::Umin => FetchOp::GdsMinUintRet,
        AtomicOp::Imax => FetchOp::GdsMaxIntRet,
        AtomicOp::Umax => FetchOp::GdsMaxUintRet,
        AtomicOp::Iand => FetchOp::GdsAndRet,
        AtomicOp::Ior => FetchOp::GdsOrRet,
        AtomicOp::Ixor => FetchOp::GdsXorRet,
        AtomicOp::Xchg => FetchOp::GdsXchgRet,
        AtomicOp::Cmpxchg => FetchOp::GdsCmpXchgRet,
        AtomicOp::Fadd | AtomicOp::Fmin | AtomicOp::Fmax => return None,
    })
}

/// The 32-bit words of a value of type `ty`: two a component at 64 bits.
fn words_of(ty: ValType) -> u8 {
    ty.comps * if ty.bits == 64 { 2 } else { 1 }
}

/// The raw bits of a constant component as a 32-bit register holds it (booleans all ones).
fn const_bits(func: &Function, v: Value, bits: u64) -> u32 {
    if func.inst(v).def.is_some_and(|d| d.bits == 1) {
        if bits != 0 { u32::MAX } else { 0 }
    } else {
        bits as u32
    }
}
