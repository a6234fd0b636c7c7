//! The shrew IR: an SSA IR modelled on NIR.
//!
//! A [`Shader`] holds struct types, variables and functions. A [`Function`] owns an instruction
//! arena (an instruction's index is also the id of the SSA value it defines) and a control-flow
//! graph kept as a `petgraph` graph whose nodes are [`Block`]s and whose edges are the branches.
//! Control flow is structured as in SPIR-V: every selection or loop header records its merge block
//! (and a loop its continue block), so dominators and loops come from the graph while backends
//! can still emit structured code.
//!
//! Invariants (checked by [`crate::verify`]): SSA values dominate their uses; phis sit at the top
//! of their block with one entry per predecessor; every block ends in a terminator whose
//! out-edges match it; operand shapes follow the opcode and intrinsic tables.

mod builder;
pub mod fold;
mod types;

pub use builder::{Builder, Cursor, IfBuilder, LoopBuilder};
pub use types::*;

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex as GraphNode};
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::visit::{Dfs, Walker};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{AluOp, IndexKind, Intrinsic};

/// An SSA value: the index of its defining instruction in [`Function::insts`]. Instructions
/// without a result (stores) have an id too, which nothing refers to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

impl Value {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A basic block: a node of the function's CFG.
pub type BlockId = NodeIndex<u32>;

/// Index of a variable in [`Shader::variables`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Index of a function in [`Shader::functions`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// A whole shader.
#[derive(Clone, Debug)]
pub struct Shader {
    pub stage: Stage,
    /// Workgroup size of compute shaders.
    pub workgroup_size: [u32; 3],
    pub structs: Vec<StructType>,
    pub variables: Vec<Variable>,
    pub functions: Vec<Function>,
    pub entry: FuncId,
}

/// A variable: storage that instructions reach through derefs.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    pub name: String,
    pub mode: Mode,
    pub ty: Type,
    pub location: Option<u32>,
    pub binding: Option<u32>,
    pub desc_set: Option<u32>,
    pub builtin: Option<Builtin>,
    pub interp: Interp,
    /// `ubo` and `ssbo` variables: the outermost array of the type is an array of blocks, element
    /// `i` its own buffer at `binding + i` (GLSL's `uniform B { ... } b[4];`), not one buffer
    /// holding an array.
    pub array_of_blocks: bool,
    /// `ssbo` variables: the buffer holds GL atomic counters (atomic counter buffer `binding`),
    /// which only atomics and loads reach. Memory like any SSBO's to the IR; a target may keep
    /// it elsewhere (Evergreen's and Cayman's global data share).
    pub atomic_counters: bool,
    /// `constant` variables: the value of each scalar of the type in flattening order
    /// ([`crate::interp::memory::flatten_type`]), as raw bits of the scalar's size (booleans 0
    /// or 1). `None` for every other mode.
    pub init: Option<Vec<u64>>,
}

/// Atomic counter buffer `b` is SSBO binding `ATOMIC_COUNTER_BINDINGS + b` to the SSBO
/// intrinsics and to the resources a run binds: GL's atomic counter buffers have bindings of
/// their own, apart from the SSBOs'.
pub const ATOMIC_COUNTER_BINDINGS: u32 = 1 << 20;

impl Variable {
    /// The SSBO binding of the variable's (first) buffer as the intrinsics and resources name
    /// it: its `binding`, for atomic counters past [`ATOMIC_COUNTER_BINDINGS`].
    pub fn buffer_binding(&self) -> u32 {
        let binding = self.binding.unwrap_or(0);
        match self.atomic_counters {
            true => ATOMIC_COUNTER_BINDINGS.saturating_add(binding),
            false => binding,
        }
    }

    /// The type of one buffer of the variable: the element type of an array of blocks, else the
    /// variable's type.
    pub fn buffer_type(&self) -> &Type {
        match &self.ty {
            Type::Array { elem, .. } if self.array_of_blocks => elem,
            ty => ty,
        }
    }

    pub fn new(name: impl Into<String>, mode: Mode, ty: Type) -> Variable {
        Variable {
            name: name.into(),
            mode,
            ty,
            location: None,
            binding: None,
            desc_set: None,
            builtin: None,
            interp: Interp::Smooth,
            array_of_blocks: false,
            atomic_counters: false,
            init: None,
        }
    }
}

/// The merge and continue blocks of a function's headers, with how many headers name each:
/// a pass that takes headers' structure away keeps it up to date with
/// [`StructureTargets::forget`] instead of collecting it again (a sweep of every block).
#[derive(Clone, Debug, Default)]
pub struct StructureTargets {
    names: FxHashMap<BlockId, usize>,
}

impl StructureTargets {
    /// Whether some header names `b`.
    pub fn contains(&self, b: BlockId) -> bool {
        self.names.contains_key(&b)
    }

    /// Forgets the blocks `structure` named: its header is no longer one.
    pub fn forget(&mut self, structure: Structure) {
        for target in structure.targets() {
            if let Some(count) = self.names.get_mut(&target) {
                *count -= 1;
                if *count == 0 {
                    self.names.remove(&target);
                }
            }
        }
    }
}

/// A function: parameters are read with `load_param`, a result is returned by `return %v`.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub params: Vec<ValType>,
    pub ret: Option<ValType>,
    pub insts: Vec<Option<Inst>>,
    pub cfg: StableDiGraph<Block, Edge, u32>,
    pub entry: BlockId,
    /// Which pass made each instruction, when a run records it.
    pub provenance: Option<crate::provenance::Provenance>,
}

/// A CFG edge: which way of its source block's terminator it is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Edge {
    /// The only successor of a `jump`.
    Jump,
    /// The successor of a `branch` when the condition is true.
    True,
    /// The successor of a `branch` when the condition is false.
    False,
}

/// A basic block. Its successors are the graph's out-edges.
#[derive(Clone, Debug, Default)]
pub struct Block {
    pub insts: Vec<Value>,
    /// `None` only while a builder is still filling the block.
    pub terminator: Option<Terminator>,
    pub structure: Option<Structure>,
}

/// How a block ends. Branch targets are the out-edges of the block in the CFG.
#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    Jump,
    Branch { cond: Value },
    Return { value: Option<Value> },
    Unreachable,
}

/// The structured construct a header block opens.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Structure {
    Selection { merge: BlockId },
    Loop { merge: BlockId, cont: BlockId },
}

impl Structure {
    pub fn merge(self) -> BlockId {
        match self {
            Structure::Selection { merge } | Structure::Loop { merge, .. } => merge,
        }
    }

    /// The blocks the construct names: its merge block, and a loop's continue block.
    pub fn targets(self) -> Vec<BlockId> {
        match self {
            Structure::Selection { merge } => vec![merge],
            Structure::Loop { merge, cont } => vec![merge, cont],
        }
    }

    /// The same construct with its blocks renamed by `map` (for copies of blocks).
    pub fn map_blocks(self, map: impl Fn(BlockId) -> BlockId) -> Structure {
        match self {
            Structure::Selection { merge } => Structure::Selection { merge: map(merge) },
            Structure::Loop { merge, cont } => Structure::Loop {
                merge: map(merge),
                cont: map(cont),
            },
        }
    }
}

/// An instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub kind: InstKind,
    /// The shape of the value it defines, if any.
    pub def: Option<ValType>,
    pub block: BlockId,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InstKind {
    Alu(Alu),
    /// A constant: one raw value per component.
    Const(Vec<u64>),
    Undef,
    /// One incoming value per predecessor block.
    Phi(Vec<(BlockId, Value)>),
    Intrinsic(IntrinsicInst),
    Tex(Tex),
    Deref(Deref),
    Call {
        func: FuncId,
        args: Vec<Value>,
    },
}

impl InstKind {
    /// The operation's name as IR text writes it (`fadd`, `load_const`, `deref_array`, `tex`…).
    pub fn name(&self) -> &'static str {
        match self {
            InstKind::Alu(alu) => alu.op.name(),
            InstKind::Const(_) => "load_const",
            InstKind::Undef => "undef",
            InstKind::Phi(_) => "phi",
            InstKind::Intrinsic(i) => i.op.name(),
            InstKind::Tex(t) => t.op.name(),
            InstKind::Deref(Deref::Var(_)) => "deref_var",
            InstKind::Deref(Deref::Array { .. }) => "deref_array",
            InstKind::Deref(Deref::Struct { .. }) => "deref_struct",
            InstKind::Call { .. } => "call",
        }
    }
}

/// An ALU instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Alu {
    pub op: AluOp,
    pub srcs: Vec<AluSrc>,
    /// From `precise`/`NoContraction`: no inexact rewrite may touch it.
    pub exact: bool,
    pub fp: FpFlags,
}

impl Alu {
    /// The bit size each source is read at: a sized operand's own size, and for unsized operands
    /// the instruction's common size — the destination's when it is unsized, else the first
    /// unsized source's value size (`def` when that source is unknown).
    pub fn src_bit_sizes(&self, func: &Function, def: ValType) -> Vec<u8> {
        let info = self.op.info();
        let first = info
            .first_unsized_src()
            .and_then(|i| self.srcs.get(i))
            .and_then(|s| func.value_type(s.value))
            .map(|t| t.bits);
        info.src_bit_sizes(def.bits, first)
    }

    /// How many components source `i` reads for a destination of `def.comps` components.
    pub fn src_components(&self, i: usize, def: ValType) -> u8 {
        match self.op.info().srcs.get(i) {
            Some(operand) if operand.comps != 0 => operand.comps,
            _ => def.comps,
        }
    }

    /// What a copy reads: a `mov`, or a `vecN` whose components all come from one value, is
    /// that value through one swizzle. Other operations are not copies.
    pub fn as_copy(&self) -> Option<AluSrc> {
        let first = self.srcs.first()?;
        match self.op {
            AluOp::Mov => Some(*first),
            op if op.is_vec() && self.srcs.iter().all(|s| s.value == first.value) => {
                let picked: Vec<u8> = self.srcs.iter().map(|s| s.swizzle[0]).collect();
                Some(AluSrc::swizzled(first.value, &picked))
            }
            _ => None,
        }
    }
}

/// A source of an ALU instruction: a value read through a swizzle. Only the components the
/// instruction reads are meaningful.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AluSrc {
    pub value: Value,
    pub swizzle: [u8; 16],
}

impl AluSrc {
    /// Reads the value's components in order.
    pub fn new(value: Value) -> AluSrc {
        AluSrc {
            value,
            swizzle: IDENTITY_SWIZZLE,
        }
    }

    /// Reads the given components.
    pub fn swizzled(value: Value, comps: &[u8]) -> AluSrc {
        let mut swizzle = IDENTITY_SWIZZLE;
        swizzle[..comps.len()].copy_from_slice(comps);
        AluSrc { value, swizzle }
    }
}

pub const IDENTITY_SWIZZLE: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// Float-controls flags: which IEEE behaviours an instruction must preserve.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FpFlags(pub u8);

impl FpFlags {
    pub const PRESERVE_SIGNED_ZERO: FpFlags = FpFlags(1);
    pub const PRESERVE_NAN: FpFlags = FpFlags(2);
    pub const PRESERVE_INF: FpFlags = FpFlags(4);
    /// Flag names in IR text, bit 0 first.
    pub const NAMES: [&'static str; 3] = ["preserve_sz", "preserve_nan", "preserve_inf"];

    pub fn contains(self, other: FpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// An intrinsic call with its sources and its named indices (in the table's index order).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntrinsicInst {
    pub op: Intrinsic,
    pub srcs: Vec<Value>,
    pub indices: Vec<u32>,
}

impl IntrinsicInst {
    /// An intrinsic with all indices zero.
    pub fn new(op: Intrinsic, srcs: Vec<Value>) -> IntrinsicInst {
        IntrinsicInst {
            op,
            srcs,
            indices: vec![0; op.info().indices.len()],
        }
    }

    /// Whether the intrinsic is a pure function of its sources: it can move and go, and is not
    /// a volatile access. Equal pure intrinsics are one value.
    pub fn is_pure(&self) -> bool {
        let info = self.op.info();
        info.can_reorder()
            && info.can_eliminate()
            && self
                .index(IndexKind::Access)
                .is_none_or(|access| access & shrew_ops::ACCESS_VOLATILE == 0)
    }

    /// The value of a named index, if the intrinsic has it.
    pub fn index(&self, kind: IndexKind) -> Option<u32> {
        let pos = self.op.info().indices.iter().position(|k| *k == kind)?;
        Some(self.indices[pos])
    }

    /// Sets a named index; returns `false` if the intrinsic has no such index.
    pub fn set_index(&mut self, kind: IndexKind, value: u32) -> bool {
        match self.op.info().indices.iter().position(|k| *k == kind) {
            Some(pos) => {
                self.indices[pos] = value;
                true
            }
            None => false,
        }
    }
}

/// A texture instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tex {
    pub op: TexOp,
    pub dim: Dim,
    pub is_array: bool,
    pub is_shadow: bool,
    /// How the returned texels are typed.
    pub dest_type: shrew_ops::BaseType,
    /// Binding of the texture and sampler when not given by deref sources.
    pub texture: u32,
    pub sampler: u32,
    /// The component `tg4` gathers.
    pub component: u8,
    pub srcs: Vec<(TexSrc, Value)>,
}

impl Tex {
    /// A non-array, non-shadow texture instruction returning floats from texture and sampler 0.
    pub fn new(op: TexOp, dim: Dim, srcs: Vec<(TexSrc, Value)>) -> Tex {
        Tex {
            op,
            dim,
            is_array: false,
            is_shadow: false,
            dest_type: shrew_ops::BaseType::Float,
            texture: 0,
            sampler: 0,
            component: 0,
            srcs,
        }
    }

    pub fn src(&self, kind: TexSrc) -> Option<Value> {
        self.srcs.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
    }

    /// The texture and sampler bindings of the instruction, a combined texture-sampler in
    /// `func` of `shader`: its deref source's variable binding plus its constant array indices
    /// (each element holding as many bindings as its type has textures), else the
    /// instruction's own `texture` and `sampler`. Separate samplers, run-time indices and
    /// indices out of range are errors a backend reports.
    pub fn bindings(&self, shader: &Shader, func: &Function) -> Result<(u32, u32), String> {
        if self.src(TexSrc::SamplerDeref).is_some() {
            return Err("separate samplers are not supported yet".into());
        }
        let Some(deref) = self.src(TexSrc::TextureDeref) else {
            return Ok((self.texture, self.sampler));
        };
        let binding = opaque_binding(shader, func, deref, "texture")?;
        Ok((binding, binding))
    }
}

/// The binding of the texture, sampler or image (`what`) `deref` names in `func` of `shader`:
/// its variable's binding plus its constant array indices (each element holding as many
/// bindings as its type has opaque values). Run-time indices and indices out of range are
/// errors a backend reports.
pub fn opaque_binding(
    shader: &Shader,
    func: &Function,
    mut deref: Value,
    what: &str,
) -> Result<u32, String> {
    // The constant indices from the innermost out, then the variable.
    let mut indices = Vec::new();
    let var = loop {
        match &func.inst(deref).kind {
            InstKind::Deref(Deref::Var(var)) => break &shader.variables[var.0 as usize],
            InstKind::Deref(Deref::Array { parent, index }) => {
                let index = func
                    .constant_u32(*index)
                    .ok_or(format!("{what}s at run-time indices are not supported yet"))?;
                indices.push(index);
                deref = *parent;
            }
            _ => return Err(format!("the {what} is not an array element or variable")),
        }
    };
    let mut binding = var.binding.unwrap_or(0);
    let mut ty = &var.ty;
    for index in indices.into_iter().rev() {
        let Type::Array { elem, len, .. } = ty else {
            return Err(format!("an index into a {what} that is not an array"));
        };
        if index >= *len {
            return Err(format!("{what} array index {index} is out of range"));
        }
        binding += index * elem.innermost_element().1;
        ty = elem;
    }
    Ok(binding)
}

/// A deref: a pointer into a variable, built up as a chain.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Deref {
    Var(VarId),
    /// An element of an array (or matrix column, or vector component) by a 32-bit index.
    Array {
        parent: Value,
        index: Value,
    },
    /// A member of a struct.
    Struct {
        parent: Value,
        member: u32,
    },
}

impl Function {
    /// A function with one empty entry block.
    pub fn new(name: impl Into<String>) -> Function {
        let mut cfg = StableDiGraph::default();
        let entry = cfg.add_node(Block::default());
        Function {
            name: name.into(),
            params: Vec::new(),
            ret: None,
            insts: Vec::new(),
            cfg,
            entry,
            provenance: None,
        }
    }

    /// The first component of `v` as a `u32` (an offset, index or binding) when `v` is a
    /// constant that fits.
    pub fn constant_u32(&self, v: Value) -> Option<u32> {
        match &self.inst(v).kind {
            InstKind::Const(values) => u32::try_from(values[0]).ok(),
            _ => None,
        }
    }

    pub fn inst(&self, v: Value) -> &Inst {
        self.insts[v.index()]
            .as_ref()
            .expect("use of a deleted instruction")
    }

    pub fn inst_mut(&mut self, v: Value) -> &mut Inst {
        self.insts[v.index()]
            .as_mut()
            .expect("use of a deleted instruction")
    }

    /// The instruction with this id, if it exists.
    pub fn get_inst(&self, v: Value) -> Option<&Inst> {
        self.insts.get(v.index()).and_then(|i| i.as_ref())
    }

    /// The shape of a value.
    pub fn value_type(&self, v: Value) -> Option<ValType> {
        self.get_inst(v).and_then(|i| i.def)
    }

    pub fn block(&self, b: BlockId) -> &Block {
        &self.cfg[b]
    }

    pub fn block_mut(&mut self, b: BlockId) -> &mut Block {
        &mut self.cfg[b]
    }

    /// Blocks in id order (the order they are printed in).
    pub fn blocks(&self) -> Vec<BlockId> {
        let mut ids: Vec<BlockId> = self.cfg.node_indices().collect();
        ids.sort();
        ids
    }

    pub fn add_block(&mut self) -> BlockId {
        self.cfg.add_node(Block::default())
    }

    /// The successor along an edge kind.
    pub fn successor(&self, b: BlockId, kind: Edge) -> Option<BlockId> {
        self.cfg
            .edges(b)
            .find(|e| *e.weight() == kind)
            .map(|e| e.target())
    }

    /// Successors in terminator order (true before false).
    pub fn successors(&self, b: BlockId) -> Vec<BlockId> {
        let mut edges: Vec<_> = self
            .cfg
            .edges(b)
            .map(|e| (*e.weight() as u8, e.target()))
            .collect();
        edges.sort();
        edges.into_iter().map(|(_, t)| t).collect()
    }

    /// Predecessors in id order, one entry per edge.
    pub fn predecessors(&self, b: BlockId) -> Vec<BlockId> {
        let mut preds: Vec<BlockId> = self
            .cfg
            .neighbors_directed(b, Direction::Incoming)
            .collect();
        preds.sort();
        preds
    }

    /// Removes the sources from `pred` of the phis of `block` (when the edge goes).
    pub fn forget_predecessor(&mut self, block: BlockId, pred: BlockId) {
        for v in self.cfg[block].insts.clone() {
            if let InstKind::Phi(srcs) = &mut self.inst_mut(v).kind {
                srcs.retain(|&(p, _)| p != pred);
            }
        }
    }

    /// Makes every reader of `old` — instructions and terminators — read `new`.
    pub fn replace_uses(&mut self, old: Value, new: Value) {
        self.map_reads(|v| if v == old { new } else { v });
    }

    /// Makes every read of a key of `replacements` read its value instead: one sweep of the
    /// function for any number of replacements (chains are not followed).
    pub fn replace_uses_by(&mut self, replacements: &FxHashMap<Value, Value>) {
        if !replacements.is_empty() {
            self.map_reads(|v| replacements.get(&v).copied().unwrap_or(v));
        }
    }

    /// Replaces every value read, by instructions and terminators, by what `map` makes of it.
    fn map_reads(&mut self, map: impl Fn(Value) -> Value) {
        let swap = |v: &mut Value| *v = map(*v);
        for inst in self.insts.iter_mut().flatten() {
            inst.kind.for_each_src_mut(swap);
        }
        for block in self.cfg.node_weights_mut() {
            if let Some(term) = block.terminator.as_mut()
                && let Some(v) = term.src_mut()
            {
                swap(v);
            }
        }
    }

    /// The merge and continue blocks headers name: blocks whose identity structured control
    /// flow needs.
    pub fn structure_targets(&self) -> StructureTargets {
        let mut targets = StructureTargets::default();
        for structure in self.cfg.node_weights().filter_map(|b| b.structure) {
            for target in structure.targets() {
                *targets.names.entry(target).or_default() += 1;
            }
        }
        targets
    }

    /// Appends block `b`, whose only predecessor `a` jumps to it, to `a`: `b`'s phis become
    /// their single sources, its header role (if `a` has none) and terminator move to `a`, and
    /// the phis of its successors name `a`.
    pub fn merge_into(&mut self, a: BlockId, b: BlockId) {
        let insts = std::mem::take(&mut self.cfg[b].insts);
        let mut kept = Vec::with_capacity(insts.len());
        for v in insts {
            // With one predecessor, a phi is its only source.
            if let InstKind::Phi(srcs) = &self.inst(v).kind {
                let source = srcs[0].1;
                self.replace_uses(v, source);
                self.insts[v.index()] = None;
            } else {
                self.inst_mut(v).block = a;
                kept.push(v);
            }
        }
        self.cfg[a].insts.extend(kept);
        if self.cfg[a].structure.is_none() {
            self.cfg[a].structure = self.cfg[b].structure;
        }
        let successors: Vec<(Edge, BlockId)> = self
            .cfg
            .edges(b)
            .map(|e| (*e.weight(), e.target()))
            .collect();
        match self.cfg[b].terminator.clone() {
            Some(Terminator::Branch { cond }) => {
                let target = |kind| successors.iter().find(|(k, _)| *k == kind).map(|&(_, t)| t);
                if let (Some(t), Some(f)) = (target(Edge::True), target(Edge::False)) {
                    self.set_branch(a, cond, t, f);
                }
            }
            Some(Terminator::Jump) => self.set_jump(a, successors[0].1),
            Some(term) => self.set_exit(a, term),
            None => {}
        }
        for (_, succ) in successors {
            for v in self.cfg[succ].insts.clone() {
                if let InstKind::Phi(srcs) = &mut self.inst_mut(v).kind {
                    for (pred, _) in srcs.iter_mut().filter(|(p, _)| *p == b) {
                        *pred = a;
                    }
                }
            }
        }
        self.cfg.remove_node(b);
    }

    /// Deletes a block and its instructions (whose values nothing may still use), with its
    /// edges.
    pub fn remove_block(&mut self, b: BlockId) {
        for v in std::mem::take(&mut self.cfg[b].insts) {
            self.insts[v.index()] = None;
        }
        self.cfg.remove_node(b);
    }

    /// Moves the instructions of `block` from position `pos` on — with its terminator, out-edges
    /// and, for a selection, its header role — to a new block, which it returns; phis of the
    /// successors now name the new block. `block` keeps its terminator and out-edges until the
    /// caller gives it new ones. A loop header stays the header: its back edges still come to
    /// `block`.
    pub fn split_at(&mut self, block: BlockId, pos: usize) -> BlockId {
        let rest = self.add_block();
        let moved: Vec<Value> = self.cfg[block].insts.drain(pos..).collect();
        for &v in &moved {
            self.inst_mut(v).block = rest;
        }
        self.cfg[rest].insts = moved;
        self.copy_terminator(block, rest, |b| b, |v| v);
        if let Some(Structure::Selection { merge }) = self.cfg[block].structure {
            self.cfg[block].structure = None;
            self.cfg[rest].structure = Some(Structure::Selection { merge });
        }
        for succ in self.successors(rest) {
            for v in self.cfg[succ].insts.clone() {
                if let InstKind::Phi(srcs) = &mut self.inst_mut(v).kind {
                    for (pred, _) in srcs.iter_mut().filter(|(p, _)| *p == block) {
                        *pred = rest;
                    }
                }
            }
        }
        rest
    }

    /// Ends `b` with a jump to `target`, replacing its terminator and out-edges.
    pub fn set_jump(&mut self, b: BlockId, target: BlockId) {
        self.clear_successors(b);
        self.cfg.add_edge(b, target, Edge::Jump);
        self.cfg[b].terminator = Some(Terminator::Jump);
    }

    /// Ends `b` with a conditional branch.
    pub fn set_branch(&mut self, b: BlockId, cond: Value, if_true: BlockId, if_false: BlockId) {
        self.clear_successors(b);
        self.cfg.add_edge(b, if_true, Edge::True);
        self.cfg.add_edge(b, if_false, Edge::False);
        self.cfg[b].terminator = Some(Terminator::Branch { cond });
    }

    /// Gives `to` the terminator of `from`, with its successors renamed by `map_block` and the
    /// values it reads by `map_value` (identities to move a terminator as it is).
    pub fn copy_terminator(
        &mut self,
        from: BlockId,
        to: BlockId,
        map_block: impl Fn(BlockId) -> BlockId,
        map_value: impl Fn(Value) -> Value,
    ) {
        let successor = |func: &Function, edge| {
            map_block(
                func.successor(from, edge)
                    .expect("an edge of the terminator"),
            )
        };
        match self.cfg[from].terminator.clone() {
            Some(Terminator::Branch { cond }) => {
                let (t, f) = (successor(self, Edge::True), successor(self, Edge::False));
                self.set_branch(to, map_value(cond), t, f);
            }
            Some(Terminator::Jump) => {
                let t = successor(self, Edge::Jump);
                self.set_jump(to, t);
            }
            Some(Terminator::Return { value }) => self.set_exit(
                to,
                Terminator::Return {
                    value: value.map(map_value),
                },
            ),
            Some(Terminator::Unreachable) => self.set_exit(to, Terminator::Unreachable),
            None => {}
        }
    }

    /// Ends `b` with a terminator that has no successors (`return`, `unreachable`).
    pub fn set_exit(&mut self, b: BlockId, term: Terminator) {
        debug_assert!(matches!(
            term,
            Terminator::Return { .. } | Terminator::Unreachable
        ));
        self.clear_successors(b);
        self.cfg[b].terminator = Some(term);
    }

    fn clear_successors(&mut self, b: BlockId) {
        let edges: Vec<_> = self.cfg.edges(b).map(|e| e.id()).collect();
        for e in edges {
            self.cfg.remove_edge(e);
        }
    }

    /// Adds an instruction to the arena without placing it in a block.
    pub fn alloc_inst(&mut self, inst: Inst) -> Value {
        let v = Value(self.insts.len() as u32);
        self.insts.push(Some(inst));
        v
    }

    /// Adds an instruction just before `at`, in `at`'s block.
    pub fn insert_before(&mut self, at: Value, kind: InstKind, def: Option<ValType>) -> Value {
        let block = self.inst(at).block;
        let v = self.alloc_inst(Inst { kind, def, block });
        let insts = &mut self.cfg[block].insts;
        let pos = insts.iter().position(|&i| i == at).expect("placed");
        insts.insert(pos, v);
        v
    }

    /// Deletes an instruction whose value nothing uses any more.
    /// The value the next instruction made in this function gets: what
    /// [`Function::replace_inst`] takes to tell new instructions from old ones.
    pub fn next_value(&self) -> Value {
        Value(self.insts.len() as u32)
    }

    /// Removes instruction `v`, whose readers read `new` instead. When `new` was made since
    /// `first_new` (the [`Function::next_value`] before making it) and sits just before `v`,
    /// nothing reads it yet: it moves into `v`'s place under `v`'s name, so `v`'s readers need
    /// no rewriting (finding them takes a scan of the whole function, which would make a pass
    /// replacing many instructions quadratic). Otherwise the readers are found by that scan.
    pub fn replace_inst(&mut self, v: Value, new: Value, first_new: Value) {
        let block = self.inst(v).block;
        let insts = &self.cfg[block].insts;
        let before = (insts.iter().position(|&i| i == v))
            .and_then(|p| p.checked_sub(1))
            .filter(|&p| insts[p] == new);
        if let Some(p) = before.filter(|_| new >= first_new && new != v) {
            let moved = self.insts[new.index()].take().expect("a live instruction");
            self.cfg[block].insts.remove(p);
            let inst = self.inst_mut(v);
            inst.kind = moved.kind;
            inst.def = moved.def;
        } else {
            self.replace_uses(v, new);
            self.remove_inst(v);
        }
    }

    pub fn remove_inst(&mut self, v: Value) {
        let block = self.inst(v).block;
        self.cfg[block].insts.retain(|&i| i != v);
        self.insts[v.index()] = None;
    }

    /// Removes every instruction of `values` (each at most once), each block's list swept once:
    /// removing many instructions of one block one by one is quadratic in its size.
    pub fn remove_insts(&mut self, values: impl IntoIterator<Item = Value>) {
        let mut blocks = FxHashSet::default();
        for v in values {
            if let Some(inst) = self.insts[v.index()].take() {
                blocks.insert(inst.block);
            }
        }
        for block in blocks {
            let insts = std::mem::take(&mut self.cfg[block].insts);
            self.cfg[block].insts = (insts.into_iter())
                .filter(|v| self.insts[v.index()].is_some())
                .collect();
        }
    }

    /// The values an instruction reads, in source order (phi sources included).
    pub fn inst_sources(&self, v: Value) -> Vec<Value> {
        inst_sources(&self.inst(v).kind)
    }

    /// Every live instruction, block by block, in block order.
    pub fn all_insts(&self) -> impl Iterator<Item = Value> + '_ {
        self.blocks()
            .into_iter()
            .flat_map(move |b| self.cfg[b].insts.clone())
    }
}

/// Walks the deref chain ending at `v` back to its variable. Returns the variable and the array
/// and struct steps of the chain, the one next to the variable first; `None` when the chain does
/// not start at a `deref_var`. Iterative and bounded by the number of instructions, so the cyclic
/// chains malformed IR can hold neither loop nor overflow the stack.
pub fn deref_chain(func: &Function, v: Value) -> Option<(VarId, Vec<Value>)> {
    let mut steps = Vec::new();
    let mut cur = v;
    loop {
        match &func.get_inst(cur)?.kind {
            InstKind::Deref(Deref::Var(var)) => {
                steps.reverse();
                return Some((*var, steps));
            }
            InstKind::Deref(Deref::Array { parent, .. } | Deref::Struct { parent, .. }) => {
                if steps.len() > func.insts.len() {
                    return None;
                }
                steps.push(cur);
                cur = *parent;
            }
            _ => return None,
        }
    }
}

/// The values an instruction kind reads, in source order.
pub fn inst_sources(kind: &InstKind) -> Vec<Value> {
    match kind {
        InstKind::Alu(alu) => alu.srcs.iter().map(|s| s.value).collect(),
        InstKind::Const(_) | InstKind::Undef => Vec::new(),
        InstKind::Phi(srcs) => srcs.iter().map(|(_, v)| *v).collect(),
        InstKind::Intrinsic(i) => i.srcs.clone(),
        InstKind::Tex(t) => t.srcs.iter().map(|(_, v)| *v).collect(),
        InstKind::Deref(Deref::Var(_)) => Vec::new(),
        InstKind::Deref(Deref::Array { parent, index }) => vec![*parent, *index],
        InstKind::Deref(Deref::Struct { parent, .. }) => vec![*parent],
        InstKind::Call { args, .. } => args.clone(),
    }
}

impl InstKind {
    /// Calls `f` on every value the instruction reads, so a pass can redirect uses in place.
    pub fn for_each_src_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match self {
            InstKind::Alu(alu) => alu.srcs.iter_mut().for_each(|s| f(&mut s.value)),
            InstKind::Const(_) | InstKind::Undef | InstKind::Deref(Deref::Var(_)) => {}
            InstKind::Phi(srcs) => srcs.iter_mut().for_each(|(_, v)| f(v)),
            InstKind::Intrinsic(i) => i.srcs.iter_mut().for_each(f),
            InstKind::Tex(t) => t.srcs.iter_mut().for_each(|(_, v)| f(v)),
            InstKind::Deref(Deref::Array { parent, index }) => {
                f(parent);
                f(index);
            }
            InstKind::Deref(Deref::Struct { parent, .. }) => f(parent),
            InstKind::Call { args, .. } => args.iter_mut().for_each(f),
        }
    }
}

impl Terminator {
    /// The value the terminator reads, if any.
    pub fn src(&self) -> Option<Value> {
        match self {
            Terminator::Branch { cond } => Some(*cond),
            Terminator::Return { value } => *value,
            Terminator::Jump | Terminator::Unreachable => None,
        }
    }

    /// The value the terminator reads, if any, to redirect in place.
    pub fn src_mut(&mut self) -> Option<&mut Value> {
        match self {
            Terminator::Branch { cond } => Some(cond),
            Terminator::Return { value } => value.as_mut(),
            Terminator::Jump | Terminator::Unreachable => None,
        }
    }
}

/// The nodes of `graph`, each after those it has edges to (Tarjan's algorithm yields strongly
/// connected components in reverse topological order).
fn callees_first_in(graph: &DiGraph<(), ()>) -> Vec<usize> {
    petgraph::algo::tarjan_scc(graph)
        .into_iter()
        .flatten()
        .map(|n| n.index())
        .collect()
}

impl Shader {
    pub fn new(stage: Stage) -> Shader {
        Shader {
            stage,
            workgroup_size: [1, 1, 1],
            structs: Vec::new(),
            variables: Vec::new(),
            functions: vec![Function::new("main")],
            entry: FuncId(0),
        }
    }

    pub fn entry_function(&self) -> &Function {
        &self.functions[self.entry.0 as usize]
    }

    /// The call graph: a node per function (by index), an edge from caller to callee.
    fn call_graph(&self) -> DiGraph<(), ()> {
        let mut graph = DiGraph::new();
        for _ in &self.functions {
            graph.add_node(());
        }
        for (f, func) in self.functions.iter().enumerate() {
            for inst in func.insts.iter().flatten() {
                if let InstKind::Call { func: callee, .. } = inst.kind
                    && (callee.0 as usize) < self.functions.len()
                {
                    graph.add_edge((f as u32).into(), callee.0.into(), ());
                }
            }
        }
        graph
    }

    /// The functions, callees before callers (the verifier rejects recursion, so the call
    /// graph is acyclic).
    pub fn callees_first(&self) -> Vec<usize> {
        callees_first_in(&self.call_graph())
    }

    /// The functions a chain of calls from the entry function reaches, callers before callees.
    pub fn called_callers_first(&self) -> Vec<FuncId> {
        let graph = self.call_graph();
        let entry = self.entry.0 as usize;
        let reached: std::collections::HashSet<usize> = Dfs::new(&graph, GraphNode::new(entry))
            .iter(&graph)
            .map(|n| n.index())
            .collect();
        callees_first_in(&graph)
            .into_iter()
            .rev()
            .filter(|&f| f != entry && reached.contains(&f))
            .map(|f| FuncId(f as u32))
            .collect()
    }

    pub fn entry_function_mut(&mut self) -> &mut Function {
        let entry = self.entry.0 as usize;
        &mut self.functions[entry]
    }

    pub fn variable(&self, v: VarId) -> &Variable {
        &self.variables[v.0 as usize]
    }

    pub fn add_variable(&mut self, var: Variable) -> VarId {
        self.variables.push(var);
        VarId(self.variables.len() as u32 - 1)
    }

    /// Adds an empty function (one entry block) with the given signature.
    pub fn add_function(&mut self, name: &str, params: &[ValType], ret: Option<ValType>) -> FuncId {
        let mut func = Function::new(name);
        func.params = params.to_vec();
        func.ret = ret;
        self.functions.push(func);
        FuncId(self.functions.len() as u32 - 1)
    }

    /// Deletes the variables `keep` rejects, renumbering the `deref_var`s of the others. No
    /// instruction may still name a deleted variable.
    pub fn retain_variables(&mut self, mut keep: impl FnMut(VarId) -> bool) {
        let mut renumbered = Vec::with_capacity(self.variables.len());
        let mut next = 0;
        for i in 0..self.variables.len() {
            let kept = keep(VarId(i as u32));
            renumbered.push(kept.then_some(VarId(next)));
            next += kept as u32;
        }
        let mut index = 0;
        self.variables.retain(|_| {
            index += 1;
            renumbered[index - 1].is_some()
        });
        for func in &mut self.functions {
            for inst in func.insts.iter_mut().flatten() {
                if let InstKind::Deref(Deref::Var(var)) = &mut inst.kind {
                    *var = renumbered[var.0 as usize].expect("a deleted variable is still used");
                }
            }
        }
    }

    /// Deletes the functions `keep` rejects (never the entry), renumbering the calls of the
    /// others. No call may still name a deleted function.
    pub fn retain_functions(&mut self, mut keep: impl FnMut(FuncId) -> bool) {
        let mut renumbered = Vec::with_capacity(self.functions.len());
        let mut next = 0;
        for i in 0..self.functions.len() {
            let kept = FuncId(i as u32) == self.entry || keep(FuncId(i as u32));
            renumbered.push(kept.then_some(FuncId(next)));
            next += kept as u32;
        }
        let mut index = 0;
        self.functions.retain(|_| {
            index += 1;
            renumbered[index - 1].is_some()
        });
        self.entry = renumbered[self.entry.0 as usize].expect("the entry is kept");
        for func in &mut self.functions {
            for inst in func.insts.iter_mut().flatten() {
                if let InstKind::Call { func: callee, .. } = &mut inst.kind {
                    *callee = renumbered[callee.0 as usize].expect("a deleted function is called");
                }
            }
        }
    }

    pub fn add_struct(&mut self, s: StructType) -> StructId {
        self.structs.push(s);
        StructId(self.structs.len() as u32 - 1)
    }

    pub fn struct_type(&self, id: StructId) -> &StructType {
        &self.structs[id.0 as usize]
    }

    pub fn find_variable(&self, name: &str) -> Option<VarId> {
        self.variables
            .iter()
            .position(|v| v.name == name)
            .map(|i| VarId(i as u32))
    }

    pub fn find_function(&self, name: &str) -> Option<FuncId> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| FuncId(i as u32))
    }

    /// The variable a deref chain starts at and the type it points to, or `None` when the chain
    /// is malformed (the verifier reports why).
    pub fn deref_target(&self, func: &Function, v: Value) -> Option<(VarId, Type)> {
        let (var, steps) = deref_chain(func, v)?;
        let mut ty = self.variables.get(var.0 as usize)?.ty.clone();
        for step in steps {
            let InstKind::Deref(deref) = &func.get_inst(step)?.kind else {
                return None;
            };
            ty = self.deref_step_type(&ty, deref)?;
        }
        Some((var, ty))
    }

    /// The type an array or struct deref step reaches from a parent pointing to `ty`.
    pub fn deref_step_type(&self, ty: &Type, step: &Deref) -> Option<Type> {
        match (step, ty) {
            (Deref::Array { .. }, _) => ty.element(),
            (Deref::Struct { member, .. }, Type::Struct(id)) => Some(
                self.structs
                    .get(id.0 as usize)?
                    .members
                    .get(*member as usize)?
                    .ty
                    .clone(),
            ),
            _ => None,
        }
    }

    /// Human-readable type name (as in IR text).
    pub fn type_name(&self, ty: &Type) -> String {
        match ty {
            Type::Scalar(s) => scalar_name(*s),
            Type::Vector(s, n) => format!("{}x{}", scalar_name(*s), n),
            Type::Matrix { elem, cols, rows } => {
                format!("{}mat{}x{}", scalar_name(*elem), cols, rows)
            }
            Type::Array { .. } => {
                // Postfix array dimensions read outermost first, as in GLSL: `f32[3][32]` is
                // three arrays of 32 floats.
                let mut dims = String::new();
                let mut t = ty;
                while let Type::Array { elem, len, stride } = t {
                    let len = if *len == 0 {
                        String::new()
                    } else {
                        len.to_string()
                    };
                    if *stride == 0 {
                        dims.push_str(&format!("[{len}]"));
                    } else {
                        dims.push_str(&format!("[{len} stride {stride}]"));
                    }
                    t = elem;
                }
                format!("{}{}", self.type_name(t), dims)
            }
            Type::Struct(id) => self
                .structs
                .get(id.0 as usize)
                .map_or_else(|| format!("<struct {}>", id.0), |s| s.name.clone()),
            Type::Image { dim, arrayed, base } => {
                format!(
                    "image({}{}, {})",
                    dim.name(),
                    if *arrayed { " array" } else { "" },
                    base_name(*base)
                )
            }
            Type::Texture {
                dim,
                arrayed,
                shadow,
                base,
            } => format!(
                "texture({}{}{}, {})",
                dim.name(),
                if *arrayed { " array" } else { "" },
                if *shadow { " shadow" } else { "" },
                base_name(*base)
            ),
            Type::Sampler { shadow } => {
                if *shadow {
                    "sampler(shadow)".into()
                } else {
                    "sampler".into()
                }
            }
        }
    }
}

/// Name of a base type in texture/image type names and `dest_type`.
pub fn base_name(base: shrew_ops::BaseType) -> &'static str {
    base.name()
}

/// Parses a base type name (`float`, `int`, `uint`, `bool`).
pub fn parse_base(name: &str) -> Option<shrew_ops::BaseType> {
    use shrew_ops::BaseType::*;
    [Float, Int, Uint, Bool]
        .into_iter()
        .find(|b| b.name() == name)
}
