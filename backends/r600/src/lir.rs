//! The R600 IR: what lowering produces and the packer, register allocator and emitter consume.
//!
//! What: scalar 32-bit virtual values ([`VReg`]) computed by ALU instructions (one slot each, or
//! the four vector slots together for [`Multi`] operations such as DOT4 and INTERP), fetches
//! and exports that read and write a whole vec4 register, in a structured tree of blocks, ifs
//! and loops ([`Node`]). A value's channel is not fixed here: the packer chooses it when it
//! places the value's first definition (the slot of an instruction in a vector slot is its
//! channel), and register allocation then only picks GPR numbers.
//!
//! Invariants: every value is defined before it is read on every path (values with several
//! definitions are out-of-SSA registers: phi copies); the values a fetch or export reads
//! (and a fetch writes) share one GPR, so [`crate::units`] gives each such set its own values;
//! a block that precedes an `if` ends with the `if`'s predicate instruction ([`Alu::pred`]).

use crate::isa::{AluOpcode, FetchOp};
use crate::program::{DWORD_FORMATS, ExportType, MemRead, VtxFormat};
use shrew_engine::deep::{Children, nested};
use shrew_engine::passes::machine::MachineIr;
use shrew_engine::provenance::Origin;
use shrew_engine::text::indentation;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A virtual register: one 32-bit value, before register allocation gives it a channel of a GPR.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VReg(pub u32);

impl fmt::Display for VReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// What an ALU source reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Value(VReg),
    /// Raw bits: an inline constant or a literal.
    Const(u32),
    /// Component `chan` of vec4 constant `index` of constant buffer `bank`.
    Kcache {
        bank: u8,
        index: u32,
        chan: u8,
    },
    /// Component `chan` of interpolation parameter `index` (INTERP operations only).
    Param {
        index: u16,
        chan: u8,
    },
    /// A component of the indexed registers.
    Indexed(Indexed),
}

/// Component `chan` of register `reg` of the shader's indexed registers (its temporaries
/// addressed at run time, kept in a range of GPRs: [`Lir::indexed_gprs`]), plus the value
/// of `index` when there is one: the operand is then relative to the address register, which
/// the packer loads with that value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Indexed {
    pub reg: u16,
    pub chan: u8,
    pub index: Option<VReg>,
}

impl Indexed {
    /// Whether two accesses may touch one component: a relative one may reach any register
    /// of its channel.
    pub fn may_alias(self, other: Indexed) -> bool {
        self.chan == other.chan
            && (self.index.is_some() || other.index.is_some() || self.reg == other.reg)
    }
}

/// An ALU source with its modifiers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Src {
    pub operand: Operand,
    pub neg: bool,
    pub abs: bool,
}

impl Src {
    pub fn value(v: VReg) -> Src {
        Src::of(Operand::Value(v))
    }

    pub fn constant(bits: u32) -> Src {
        Src::of(Operand::Const(bits))
    }

    pub fn float(x: f32) -> Src {
        Src::constant(x.to_bits())
    }

    pub fn of(operand: Operand) -> Src {
        Src {
            operand,
            neg: false,
            abs: false,
        }
    }

    pub fn negated(self) -> Src {
        Src {
            neg: !self.neg,
            ..self
        }
    }

    pub fn value_read(&self) -> Option<VReg> {
        match self.operand {
            Operand::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The values the source reads: its value, or an indexed operand's index.
    pub fn values_read(&self) -> Option<VReg> {
        match self.operand {
            Operand::Value(v) => Some(v),
            Operand::Indexed(Indexed { index, .. }) => index,
            _ => None,
        }
    }
}

/// An ALU instruction of one slot.
#[derive(Clone, Debug, PartialEq)]
pub struct Alu {
    pub op: AluOpcode,
    /// `None` when the result is not kept (predicate sets, kills) or goes to `indexed`.
    pub dst: Option<VReg>,
    /// Where the result goes when it goes to the indexed registers.
    pub indexed: Option<Indexed>,
    pub srcs: Vec<Src>,
    /// Saturate the result to [0, 1].
    pub clamp: bool,
    /// The predicate set of the `if` that follows the block: it updates the predicate and the
    /// active mask, and ends the block's last ALU clause (an ALU_PUSH_BEFORE).
    pub pred: bool,
    /// The pass and rule that made the IR instruction it was lowered from, when recorded.
    pub origin: Option<Arc<Origin>>,
}

impl Alu {
    pub fn new(op: AluOpcode, dst: Option<VReg>, srcs: Vec<Src>) -> Alu {
        Alu {
            op,
            dst,
            srcs,
            indexed: None,
            clamp: false,
            pred: false,
            origin: None,
        }
    }

    /// The one index the instruction's relative operands add to AR (`Some(None)` when it has
    /// none); `None` when they add different ones, which no group can place, since one AR
    /// value serves a group.
    pub fn relative_index(&self) -> Option<Option<VReg>> {
        let mut indices = self.indexed_accesses().filter_map(|(a, _)| a.index);
        let first = indices.next();
        indices.all(|v| Some(v) == first).then_some(first)
    }

    /// The indexed register components the instruction reads, then the one it writes.
    pub fn indexed_accesses(&self) -> impl Iterator<Item = (Indexed, bool)> + '_ {
        let reads = self.srcs.iter().filter_map(|s| match s.operand {
            Operand::Indexed(indexed) => Some((indexed, false)),
            _ => None,
        });
        reads.chain(self.indexed.map(|indexed| (indexed, true)))
    }
}

/// What one vector slot of a [`Multi`] operation writes and reads.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotPart {
    pub dst: Option<VReg>,
    pub srcs: Vec<Src>,
}

/// An operation over the four vector slots of a group (DOT4, INTERP_XY/ZW), each slot with its
/// own sources; slot `c` writes channel `c`. A double-precision operation ([`flag::F64`]) is a
/// pair of slots instead, which the packer places in x, y or z, w: its first part reads the
/// operands' high words and writes the result's low word, the second reads the low words and
/// writes the high word; its last two parts are empty, or on Cayman, for the operations that
/// fill four slots there, the other pair's copies of the first two.
///
/// [`flag::F64`]: crate::isa::flag::F64
#[derive(Clone, Debug, PartialEq)]
pub struct Multi {
    pub op: AluOpcode,
    pub slots: [SlotPart; 4],
    /// As [`Alu::origin`].
    pub origin: Option<Arc<Origin>>,
}

/// What a fetch source channel or an export component reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Value(VReg),
    Zero,
    One,
    Unused,
}

/// A fetch instruction: its sources are one GPR's channels, its results another's.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetch {
    pub op: FetchOp,
    pub resource: u8,
    pub sampler: u8,
    /// What each of the fetch's source channels x, y, z, w carries.
    pub srcs: [Lane; 4],
    /// The value each result component goes to.
    pub dsts: [Option<VReg>; 4],
    pub coord_normalized: [bool; 4],
    pub offset: [i8; 3],
    pub vtx: VtxFormat,
    /// SAMPLE_G and SAMPLE_C_G: the derivatives of the coordinates along x and y, which a
    /// SET_GRADIENTS_H and a SET_GRADIENTS_V (each reading a GPR of its own) pass just before
    /// the sample, in its clause.
    pub gradients: Option<[[Lane; 4]; 2]>,
    /// Valid pixel mode: only covered pixels run the fetch (its clause has the mode), and
    /// helper pixels keep what its destinations held, so the fetch reads them too.
    pub valid_pixels: bool,
}

impl Fetch {
    /// A GDS operation: `srcs` the byte address and the operands, its result (the dword as it
    /// was) into `dst`; in valid pixel mode helper pixels do not run it.
    pub fn gds(op: FetchOp, srcs: [Lane; 3], dst: Option<VReg>, valid_pixels: bool) -> Fetch {
        Fetch {
            op,
            resource: 0,
            sampler: 0,
            srcs: [srcs[0], srcs[1], srcs[2], Lane::Unused],
            dsts: [dst, None, None, None],
            coord_normalized: [false; 4],
            offset: [0; 3],
            vtx: VtxFormat::default(),
            gradients: None,
            valid_pixels,
        }
    }

    /// Whether the fetch reads memory that shader writes write: scratch memory, RAT buffers
    /// and the returns of RAT atomics.
    pub fn reads_memory(&self) -> bool {
        use crate::program::{RAT_BUFFER_RESOURCE, RAT_RETURN_RESOURCE, RATS};
        let rats = RAT_BUFFER_RESOURCE..RAT_RETURN_RESOURCE + RATS;
        self.op == FetchOp::ReadScratch
            || (self.op == FetchOp::Vfetch && rats.contains(&self.resource))
    }

    /// A READ_SCRATCH of the vec4 at element `element`, plus the x of `index` when that is a
    /// value (an index at or past `array_size` reads zero): component c goes to `dsts[c]`.
    pub fn read_scratch(
        element: u16,
        array_size: u16,
        index: Lane,
        dsts: [Option<VReg>; 4],
    ) -> Fetch {
        Fetch {
            op: FetchOp::ReadScratch,
            resource: 0,
            sampler: 0,
            srcs: [index, Lane::Unused, Lane::Unused, Lane::Unused],
            dsts,
            coord_normalized: [false; 4],
            offset: [0; 3],
            vtx: VtxFormat {
                data_format: DWORD_FORMATS[3],
                num_format: 1,
                srf_mode: true,
                mem: MemRead {
                    array_base: element,
                    array_size,
                    elem_size: 3,
                    indexed: index != Lane::Unused,
                },
                ..VtxFormat::default()
            },
            gradients: None,
            valid_pixels: false,
        }
    }

    /// The values the fetch reads: its sources and gradients, and in valid pixel mode its
    /// destinations (which helper pixels keep).
    pub fn reads(&self) -> Vec<VReg> {
        let mut reads = lanes(
            self.srcs
                .iter()
                .chain(self.gradients.iter().flatten().flatten()),
        );
        if self.valid_pixels {
            reads.extend(self.dsts.iter().flatten());
        }
        reads
    }

    /// The scratch element and component a read of one component at a constant element reads
    /// (how a spilled value is read back).
    pub fn scratch_component_read(&self) -> Option<(u16, usize)> {
        let mut components = (0..4).filter(|&c| self.dsts[c].is_some());
        match (self.op, components.next(), components.next()) {
            (FetchOp::ReadScratch, Some(c), None) if !self.vtx.mem.indexed => {
                Some((self.vtx.mem.array_base, c))
            }
            _ => None,
        }
    }
}

/// An export of one vec4, a scratch write or a RAT write. A scratch write (kind
/// [`ExportType::Scratch`]) writes component c from channel c (it has no swizzle), so
/// [`crate::units`] forces its values onto those channels, and its index onto x; so does a
/// RAT write ([`ExportType::Rat`]), with its coordinates in x, y, z of the index.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    pub kind: ExportType,
    /// The render target, position or parameter index, or the first scratch element.
    pub base: u16,
    pub srcs: [Lane; 4],
    /// A scratch write's index register: x the element index added to `base` (all unused
    /// when there is none, and for exports); a RAT write's texel coordinates or dword index.
    pub index: [Lane; 4],
    /// A RAT write's operation ([`crate::program::rat_inst`]).
    pub rat_inst: u8,
}

impl Export {
    /// An export of `srcs` (or a scratch write at a constant element).
    pub fn new(kind: ExportType, base: u16, srcs: [Lane; 4]) -> Export {
        Export {
            kind,
            base,
            srcs,
            index: [Lane::Unused; 4],
            rat_inst: 0,
        }
    }

    /// A scratch write of `srcs` (component c from lane c) to element `base`, plus the x of
    /// `index` when that is a value.
    pub fn write_scratch(base: u16, srcs: [Lane; 4], index: Lane) -> Export {
        Export {
            index: [index, Lane::Unused, Lane::Unused, Lane::Unused],
            ..Export::new(ExportType::Scratch, base, srcs)
        }
    }

    /// RAT operation `inst` on RAT `rat` with `srcs` (component c from lane c) at `index`
    /// (a texel's coordinates, or a dword index).
    pub fn rat(rat: u16, inst: u8, srcs: [Lane; 4], index: [Lane; 4]) -> Export {
        Export {
            index,
            rat_inst: inst,
            ..Export::new(ExportType::Rat, rat, srcs)
        }
    }

    /// Whether the export writes memory: scratch memory or a RAT.
    pub fn writes_memory(&self) -> bool {
        matches!(self.kind, ExportType::Scratch | ExportType::Rat)
    }

    /// Whether the write is acknowledged, so that reads of written memory wait for it (a
    /// WAIT_ACK): scratch writes, and RAT writes but typed stores (images are not read back).
    pub fn acknowledged(&self) -> bool {
        match self.kind {
            ExportType::Scratch => true,
            ExportType::Rat => self.rat_inst != crate::program::rat_inst::STORE_TYPED,
            _ => false,
        }
    }

    /// The values the export reads: its sources and index.
    pub fn reads(&self) -> Vec<VReg> {
        lanes(self.srcs.iter().chain(&self.index))
    }

    /// The scratch element and component a write of one component at a constant element
    /// writes (how a spilled value is written).
    pub fn scratch_component_written(&self) -> Option<(u16, usize)> {
        let mut components = (0..4).filter(|&c| self.srcs[c] != Lane::Unused);
        match (self.kind, components.next(), components.next()) {
            (ExportType::Scratch, Some(c), None) if self.index[0] == Lane::Unused => {
                Some((self.base, c))
            }
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    Alu(Alu),
    Multi(Multi),
    Fetch(Fetch),
    Export(Export),
}

impl Inst {
    /// The indexed register components the instruction reads, then the one it writes (a
    /// [`Multi`] only reads them, from any slot).
    pub fn indexed_accesses(&self) -> Vec<(Indexed, bool)> {
        match self {
            Inst::Alu(alu) => alu.indexed_accesses().collect(),
            Inst::Multi(multi) => multi
                .slots
                .iter()
                .flat_map(|slot| &slot.srcs)
                .filter_map(|s| match s.operand {
                    Operand::Indexed(indexed) => Some((indexed, false)),
                    _ => None,
                })
                .collect(),
            Inst::Fetch(_) | Inst::Export(_) => Vec::new(),
        }
    }

    /// Records what made the instruction (on ALU instructions, which the listing tags).
    pub fn set_origin(&mut self, origin: &Arc<Origin>) {
        match self {
            Inst::Alu(alu) => alu.origin = Some(origin.clone()),
            Inst::Multi(multi) => multi.origin = Some(origin.clone()),
            Inst::Fetch(_) | Inst::Export(_) => {}
        }
    }

    /// The values the instruction reads.
    pub fn reads(&self) -> Vec<VReg> {
        match self {
            Inst::Alu(alu) => alu
                .srcs
                .iter()
                .filter_map(Src::values_read)
                .chain(alu.indexed.and_then(|indexed| indexed.index))
                .collect(),
            Inst::Multi(m) => m
                .slots
                .iter()
                .flat_map(|s| s.srcs.iter().filter_map(Src::values_read))
                .collect(),
            Inst::Fetch(f) => f.reads(),
            Inst::Export(e) => e.reads(),
        }
    }

    /// The values the instruction writes.
    pub fn writes(&self) -> Vec<VReg> {
        match self {
            Inst::Alu(alu) => alu.dst.into_iter().collect(),
            Inst::Multi(m) => m.slots.iter().filter_map(|s| s.dst).collect(),
            Inst::Fetch(f) => f.dsts.iter().flatten().copied().collect(),
            Inst::Export(_) => Vec::new(),
        }
    }

    /// Every source of the instruction, mutably (fetch and export lanes excepted).
    pub fn srcs_mut(&mut self) -> Vec<&mut Src> {
        match self {
            Inst::Alu(alu) => alu.srcs.iter_mut().collect(),
            Inst::Multi(m) => m.slots.iter_mut().flat_map(|s| s.srcs.iter_mut()).collect(),
            Inst::Fetch(_) | Inst::Export(_) => Vec::new(),
        }
    }

    /// The indexed register components the instruction reads or writes, mutably.
    pub fn indexed_mut(&mut self) -> Vec<&mut Indexed> {
        let Inst::Alu(alu) = self else {
            return Vec::new();
        };
        let reads = alu.srcs.iter_mut().filter_map(|s| match &mut s.operand {
            Operand::Indexed(indexed) => Some(indexed),
            _ => None,
        });
        reads.chain(alu.indexed.as_mut()).collect()
    }

    /// The lanes of each GPR a fetch or export reads (a fetch's sources, then its gradients),
    /// mutably.
    pub fn lane_groups_mut(&mut self) -> Vec<&mut [Lane; 4]> {
        match self {
            Inst::Fetch(f) => std::iter::once(&mut f.srcs)
                .chain(f.gradients.iter_mut().flatten())
                .collect(),
            Inst::Export(e) => vec![&mut e.srcs, &mut e.index],
            Inst::Alu(_) | Inst::Multi(_) => Vec::new(),
        }
    }
}

fn lanes<'a>(lanes: impl IntoIterator<Item = &'a Lane>) -> Vec<VReg> {
    lanes
        .into_iter()
        .filter_map(|l| match l {
            Lane::Value(v) => Some(*v),
            _ => None,
        })
        .collect()
}

/// The structured tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Block(Vec<Inst>),
    /// Runs `then` on the lanes whose predicate (set at the end of the block before) holds,
    /// `otherwise` on the others.
    If {
        then: Children<Vec<Node>>,
        otherwise: Children<Vec<Node>>,
    },
    Loop(Children<Vec<Node>>),
    Break,
    Continue,
    /// Runs the subroutine compiled from the shader's function of this index.
    Call(u32),
}

/// A lowered shader.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lir {
    pub body: Vec<Node>,
    /// How many values there are (numbered from 0).
    pub values: u32,
    /// Values the hardware loads before the shader starts, at a fixed GPR and channel.
    pub fixed: BTreeMap<VReg, (u8, u8)>,
    /// Vec4 elements of scratch memory per lane (one per dword of the shader's temporaries
    /// in memory: each element holds one in its x channel).
    pub scratch_elements: u16,
    /// GPRs holding the shader's temporaries addressed at run time ([`Indexed`]), a dword
    /// per channel: register allocation reserves that many consecutive GPRs.
    pub indexed_gprs: u16,
}

impl Lir {
    pub fn new_value(&mut self) -> VReg {
        self.values += 1;
        VReg(self.values - 1)
    }

    /// Calls `f` on every instruction, in program order.
    pub fn for_each_inst(&self, f: &mut impl FnMut(&Inst)) {
        self.for_each_block(&mut |insts| insts.iter().for_each(&mut *f))
    }

    /// Calls `f` on every block's instructions, in program order.
    pub fn for_each_block(&self, f: &mut impl FnMut(&[Inst])) {
        fn walk(nodes: &[Node], f: &mut impl FnMut(&[Inst])) {
            for node in nodes {
                match node {
                    Node::Block(insts) => f(insts),
                    Node::If { then, otherwise } => nested(|| {
                        walk(then, f);
                        walk(otherwise, f);
                    }),
                    Node::Loop(body) => nested(|| walk(body, f)),
                    Node::Break | Node::Continue | Node::Call(_) => {}
                }
            }
        }
        walk(&self.body, f)
    }

    /// Calls `f` on every block's instructions, mutably, in program order.
    pub fn for_each_block_mut(&mut self, f: &mut impl FnMut(&mut Vec<Inst>)) {
        fn walk(nodes: &mut [Node], f: &mut impl FnMut(&mut Vec<Inst>)) {
            for node in nodes {
                match node {
                    Node::Block(insts) => f(insts),
                    Node::If { then, otherwise } => nested(|| {
                        walk(then, f);
                        walk(otherwise, f);
                    }),
                    Node::Loop(body) => nested(|| walk(body, f)),
                    Node::Break | Node::Continue | Node::Call(_) => {}
                }
            }
        }
        walk(&mut self.body, f)
    }

    /// How many times each value is defined.
    pub fn def_counts(&self) -> Vec<u32> {
        let mut counts = vec![0; self.values as usize];
        for v in self.fixed.keys() {
            counts[v.0 as usize] += 1;
        }
        self.for_each_inst(&mut |inst| {
            for v in inst.writes() {
                counts[v.0 as usize] += 1;
            }
        });
        counts
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Operand::Value(v) => write!(f, "{v}"),
            Operand::Const(bits) => write!(f, "{bits:#x}"),
            Operand::Kcache { bank, index, chan } => {
                write!(f, "KC{bank}[{index}].{}", channel(chan))
            }
            Operand::Param { index, chan } => write!(f, "Param{index}.{}", channel(chan)),
            Operand::Indexed(indexed) => write!(f, "{indexed}"),
        }
    }
}

impl fmt::Display for Indexed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "I{}", self.reg)?;
        if let Some(index) = self.index {
            write!(f, "[AR={index}]")?;
        }
        write!(f, ".{}", channel(self.chan))
    }
}

impl fmt::Display for Src {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.neg, self.abs) {
            (true, true) => write!(f, "-|{}|", self.operand),
            (false, true) => write!(f, "|{}|", self.operand),
            (true, false) => write!(f, "-{}", self.operand),
            (false, false) => write!(f, "{}", self.operand),
        }
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lane::Value(v) => write!(f, "{v}"),
            Lane::Zero => f.write_str("0"),
            Lane::One => f.write_str("1"),
            Lane::Unused => f.write_str("_"),
        }
    }
}

/// `x`, `y`, `z` or `w`.
pub(crate) fn channel(chan: u8) -> char {
    ['x', 'y', 'z', 'w']
        .get(chan as usize)
        .copied()
        .unwrap_or('?')
}

fn lanes_text(lanes: &[Lane]) -> String {
    let lanes: Vec<String> = lanes.iter().map(Lane::to_string).collect();
    format!("[{}]", lanes.join(" "))
}

fn srcs_text(srcs: &[Src]) -> String {
    let srcs: Vec<String> = srcs.iter().map(Src::to_string).collect();
    srcs.join(", ")
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inst::Alu(alu) => {
                let dst = match (alu.dst, alu.indexed) {
                    (Some(v), _) => v.to_string(),
                    (None, Some(indexed)) => indexed.to_string(),
                    (None, None) => "_".to_string(),
                };
                write!(f, "{dst} = {:?}", alu.op)?;
                if alu.clamp {
                    f.write_str(".sat")?;
                }
                if alu.pred {
                    f.write_str(".pred")?;
                }
                write!(f, " {}", srcs_text(&alu.srcs))
            }
            Inst::Multi(m) => {
                write!(f, "{:?}", m.op)?;
                for (c, slot) in m.slots.iter().enumerate() {
                    let dst = slot.dst.map_or("_".to_string(), |v| v.to_string());
                    write!(
                        f,
                        " {}: {dst} = {};",
                        channel(c as u8),
                        srcs_text(&slot.srcs)
                    )?;
                }
                Ok(())
            }
            Inst::Fetch(fetch) => {
                let dsts: Vec<String> = fetch
                    .dsts
                    .iter()
                    .map(|d| d.map_or("_".to_string(), |v| v.to_string()))
                    .collect();
                write!(
                    f,
                    "[{}] = {:?} R{} S{} {}",
                    dsts.join(" "),
                    fetch.op,
                    fetch.resource,
                    fetch.sampler,
                    lanes_text(&fetch.srcs)
                )?;
                if let Some([h, v]) = &fetch.gradients {
                    write!(f, " gradients {} {}", lanes_text(h), lanes_text(v))?;
                }
                Ok(())
            }
            Inst::Export(e) => write!(
                f,
                "export {:?} {} {} index {}",
                e.kind,
                e.base,
                lanes_text(&e.srcs),
                lanes_text(&e.index)
            ),
        }
    }
}

impl MachineIr for Lir {
    /// A header with the values, fixed registers and memory, then the tree, indented.
    fn print(&self) -> String {
        fn tree(out: &mut String, nodes: &[Node], depth: usize) {
            let pad = indentation(depth);
            for node in nodes {
                match node {
                    Node::Block(insts) => {
                        for inst in insts {
                            out.push_str(&format!("{pad}{inst}\n"));
                        }
                    }
                    Node::If { then, otherwise } => {
                        out.push_str(&format!("{pad}if {{\n"));
                        nested(|| tree(out, then, depth + 1));
                        out.push_str(&format!("{pad}}} else {{\n"));
                        nested(|| tree(out, otherwise, depth + 1));
                        out.push_str(&format!("{pad}}}\n"));
                    }
                    Node::Loop(body) => {
                        out.push_str(&format!("{pad}loop {{\n"));
                        nested(|| tree(out, body, depth + 1));
                        out.push_str(&format!("{pad}}}\n"));
                    }
                    Node::Break => out.push_str(&format!("{pad}break\n")),
                    Node::Continue => out.push_str(&format!("{pad}continue\n")),
                    Node::Call(function) => out.push_str(&format!("{pad}call {function}\n")),
                }
            }
        }
        let fixed: Vec<String> = self
            .fixed
            .iter()
            .map(|(v, (gpr, chan))| format!("{v}=R{gpr}.{}", channel(*chan)))
            .collect();
        let mut out = format!(
            "{} values, fixed [{}], {} scratch elements, {} indexed GPRs\n",
            self.values,
            fixed.join(" "),
            self.scratch_elements,
            self.indexed_gprs
        );
        tree(&mut out, &self.body, 0);
        out
    }

    /// Every value read exists and has a definition; the block before each `if` ends with its
    /// predicate instruction.
    fn validate(&self) -> Result<(), String> {
        fn ifs_follow_predicates(nodes: &[Node], errors: &mut Vec<String>) {
            for (i, node) in nodes.iter().enumerate() {
                match node {
                    Node::If { then, otherwise } => {
                        let predicated = i > 0
                            && matches!(&nodes[i - 1], Node::Block(insts)
                                if matches!(insts.last(), Some(Inst::Alu(alu)) if alu.pred));
                        if !predicated {
                            errors.push("an `if` without its predicate instruction".into());
                        }
                        nested(|| {
                            ifs_follow_predicates(then, errors);
                            ifs_follow_predicates(otherwise, errors);
                        });
                    }
                    Node::Loop(body) => nested(|| ifs_follow_predicates(body, errors)),
                    _ => {}
                }
            }
        }
        let mut errors = Vec::new();
        let mut read = Vec::new();
        self.for_each_inst(&mut |inst| read.extend(inst.reads()));
        let mut written = Vec::new();
        self.for_each_inst(&mut |inst| written.extend(inst.writes()));
        if let Some(v) = read
            .iter()
            .chain(&written)
            .chain(self.fixed.keys())
            .find(|v| v.0 >= self.values)
        {
            errors.push(format!("{v} is beyond the {} values", self.values));
        } else {
            let defined = self.def_counts();
            read.sort();
            read.dedup();
            for v in read.iter().filter(|v| defined[v.0 as usize] == 0) {
                errors.push(format!("{v} is read but never defined"));
            }
        }
        ifs_follow_predicates(&self.body, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    fn instruction_count(&self) -> usize {
        let mut count = 0;
        self.for_each_inst(&mut |_| count += 1);
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_validator_names_undefined_values_and_unpredicated_ifs() {
        let mut lir = Lir::default();
        let (a, b) = (lir.new_value(), lir.new_value());
        lir.body = vec![Node::Block(vec![Inst::Alu(Alu::new(
            AluOpcode::Mov,
            Some(b),
            vec![Src::value(a)],
        ))])];
        let error = lir.validate().unwrap_err();
        assert!(error.contains("v0 is read but never defined"), "{error}");
        lir.fixed.insert(a, (0, 0));
        assert_eq!(lir.validate(), Ok(()));
        assert!(lir.print().contains("v1 = Mov v0"), "{}", lir.print());
        lir.body.push(Node::If {
            then: Vec::new().into(),
            otherwise: Vec::new().into(),
        });
        let error = lir.validate().unwrap_err();
        assert!(error.contains("without its predicate"), "{error}");
    }
}
