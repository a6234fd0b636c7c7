//! The machine program: what the encoder writes, the decoder reads back, the disassembler
//! prints and the emulator runs. It is the hardware's form with registers allocated, kept as
//! structure rather than words: a list of control-flow instructions, each ALU clause holding
//! its instruction groups and each fetch clause its fetches.
//!
//! Invariants (what [`crate::encoding`] relies on): the instructions of a group are in slot
//! order (x, y, z, w, then trans), an instruction in a vector slot writes that slot's channel,
//! and [`Group::slots`] gives each its slot; literal sources index [`Group::literals`]; a flow
//! instruction's `addr` is the index of a CF instruction of the same program.

use crate::isa::{AluOpcode, CfOp, Chip, FetchOp, Slots};
use shrew_engine::provenance::Origin;
use std::sync::Arc;

/// A compiled program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub chip: Chip,
    pub cf: Vec<Cf>,
    /// GPRs the program uses (R0 up to R`gprs - 1`).
    pub gprs: u8,
    /// Stack entries the CF program needs (the STACK_SIZE state register, Mesa's `nstack`).
    pub stack_size: u8,
    /// Vec4 elements of scratch memory each lane needs (the scratch ring's item size).
    pub scratch_elements: u16,
}

/// A control-flow instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Cf {
    pub op: CfOp,
    pub body: CfBody,
    /// Wait for the clauses before to finish (Mesa sets it on every clause).
    pub barrier: bool,
    /// The last instruction (R600-Evergreen; Cayman ends with CF_END).
    pub end_of_program: bool,
    pub valid_pixel_mode: bool,
    pub whole_quad_mode: bool,
}

impl Cf {
    /// A CF instruction with a barrier and no other flag.
    pub fn new(op: CfOp, body: CfBody) -> Cf {
        Cf {
            op,
            body,
            barrier: true,
            end_of_program: false,
            valid_pixel_mode: false,
            whole_quad_mode: false,
        }
    }

    /// A jump, stack or loop instruction (or NOP, CF_END) to CF index `addr`, popping
    /// `pop_count` entries, unconditional.
    pub fn flow(op: CfOp, addr: u32, pop_count: u8) -> Cf {
        Cf::new(
            op,
            CfBody::Flow {
                addr,
                pop_count,
                cond: 0,
                cf_const: 0,
            },
        )
    }
}

/// Ends a CF program as `chip` requires: a CF_END after its last instruction on Cayman,
/// END_OF_PROGRAM on its last instruction on the others.
pub fn end_program(chip: Chip, cf: &mut Vec<Cf>) {
    if chip == Chip::Cayman {
        cf.push(Cf::flow(CfOp::CfEnd, 0, 0));
    } else if let Some(last) = cf.last_mut() {
        last.end_of_program = true;
    }
}

/// What a CF instruction holds beyond its opcode and flags.
#[derive(Clone, Debug, PartialEq)]
pub enum CfBody {
    /// An ALU clause (the opcodes `Alu*`): the constant windows it locks and its groups.
    Alu {
        kcache: Vec<Kcache>,
        groups: Vec<Group>,
    },
    /// A TEX or VTX clause.
    Fetch(Vec<Fetch>),
    /// Jumps, stack and loop instructions, NOP and CF_END: a target CF index, entries to pop,
    /// the condition (0 always, 1 never, 2 boolean constant, 3 its negation) and CF_CONST.
    Flow {
        addr: u32,
        pop_count: u8,
        cond: u8,
        cf_const: u8,
    },
    /// An export or a scratch write.
    Export(Export),
}

/// A constant-buffer window an ALU clause locks: 16 (`lines` 1) or 32 (`lines` 2) vec4
/// constants of `bank` from constant `16 · line`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Kcache {
    pub bank: u8,
    pub line: u8,
    pub lines: u8,
}

impl Program {
    /// What made each ALU instruction, in program order (CF instruction, group, instruction);
    /// empty when the compile recorded no provenance.
    pub fn alu_origins(&self) -> Vec<Option<Arc<Origin>>> {
        let alus = self.cf.iter().flat_map(|cf| match &cf.body {
            CfBody::Alu { groups, .. } => groups.as_slice(),
            _ => &[],
        });
        let origins: Vec<_> = alus
            .flat_map(|group| group.insts.iter().map(|inst| inst.origin.clone()))
            .collect();
        match origins.iter().any(Option::is_some) {
            true => origins,
            false => Vec::new(),
        }
    }
}

/// An instruction group (a VLIW bundle) with its literal dwords.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    pub insts: Vec<AluInst>,
    /// At most four; encoded padded to an even count.
    pub literals: Vec<u32>,
}

/// An issue slot of a group.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    X,
    Y,
    Z,
    W,
    T,
}

impl Slot {
    pub const VECTOR: [Slot; 4] = [Slot::X, Slot::Y, Slot::Z, Slot::W];

    /// The letter sb's dumps print before an instruction.
    pub fn letter(self) -> char {
        b"xyzwt"[self as usize] as char
    }
}

impl Group {
    /// Each instruction's slot, as the hardware assigns them: in order, an instruction goes to
    /// the vector slot of its destination channel unless only the trans slot runs it or that
    /// slot is taken, then to the trans slot. `None` when the group is not well formed (two
    /// instructions for one slot, an opcode in a slot that cannot run it).
    pub fn slots(&self, chip: Chip) -> Option<Vec<Slot>> {
        let mut taken = [false; 5];
        let mut slots = Vec::with_capacity(self.insts.len());
        for inst in &self.insts {
            let chan = inst.dst.chan as usize;
            let slot = match inst.op.slots(chip) {
                Slots::No => return None,
                Slots::Trans if chip.has_trans() => Slot::T,
                Slots::Any if taken[chan] && chip.has_trans() => Slot::T,
                _ => Slot::VECTOR[chan],
            };
            if taken[slot as usize] {
                return None;
            }
            taken[slot as usize] = true;
            slots.push(slot);
        }
        Some(slots)
    }

    /// Slots of the clause the group takes: one per instruction, one per literal pair.
    pub fn clause_slots(&self) -> usize {
        self.insts.len() + self.literals.len().div_ceil(2)
    }
}

/// An ALU instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct AluInst {
    pub op: AluOpcode,
    pub dst: Dst,
    /// The sources the opcode reads ([`AluOpcode::nsrc`] of them); the rest are zero.
    pub src: [Src; 3],
    /// Output modifier (OP2): 0 none, 1 ×2, 2 ×4, 3 ÷2.
    pub omod: u8,
    pub pred_sel: PredSel,
    /// OP2: lanes where a predicate set fails leave the active mask.
    pub update_exec_mask: bool,
    /// OP2: a predicate set writes the lane's predicate bit.
    pub update_pred: bool,
    /// BANK_SWIZZLE: which read cycle each source uses (see [`crate::bank`]).
    pub bank_swizzle: u8,
    /// The address register relative operands use (0-3 AR.x-w, 4 loop index, ...).
    pub index_mode: u8,
    /// The pass and rule that made the IR instruction it comes from, when the compile recorded
    /// provenance (no part of the encoding).
    pub origin: Option<Arc<Origin>>,
}

impl AluInst {
    /// `op dst, srcs` with no modifier, writing `dst`.
    pub fn new(op: AluOpcode, dst: Dst, srcs: &[Src]) -> AluInst {
        let mut src = [Src::default(); 3];
        src[..srcs.len()].copy_from_slice(srcs);
        AluInst {
            op,
            dst,
            src,
            omod: 0,
            pred_sel: PredSel::Off,
            update_exec_mask: false,
            update_pred: false,
            bank_swizzle: 0,
            index_mode: 0,
            origin: None,
        }
    }

    /// The sources the opcode reads.
    pub fn srcs(&self) -> &[Src] {
        &self.src[..self.op.nsrc()]
    }
}

/// An ALU destination.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Dst {
    pub gpr: u8,
    pub chan: u8,
    /// Relative to the index register.
    pub rel: bool,
    /// Saturate to [0, 1].
    pub clamp: bool,
    /// OP2: whether the result is written (OP3 instructions always write).
    pub write: bool,
}

impl Dst {
    /// Component `chan` of `gpr`, written.
    pub fn gpr(gpr: u8, chan: u8) -> Dst {
        Dst {
            gpr,
            chan,
            rel: false,
            clamp: false,
            write: true,
        }
    }

    /// Channel `chan` of an OP2 instruction that writes nothing (`__.x`).
    pub fn none(chan: u8) -> Dst {
        Dst {
            write: false,
            ..Dst::gpr(0, chan)
        }
    }
}

/// An ALU source: a select (a GPR, a constant window, an inline constant, a literal, PV, PS or
/// an interpolation parameter; see [`crate::isa::sel`]), a channel and modifiers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Src {
    pub sel: u16,
    pub chan: u8,
    pub neg: bool,
    /// OP2 only.
    pub abs: bool,
    pub rel: bool,
}

impl Src {
    pub fn gpr(gpr: u8, chan: u8) -> Src {
        Src {
            sel: gpr as u16,
            chan,
            ..Src::default()
        }
    }

    pub fn sel(sel: u16, chan: u8) -> Src {
        Src {
            sel,
            chan,
            ..Src::default()
        }
    }
}

/// Which lanes an instruction runs on beyond the active mask.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PredSel {
    #[default]
    Off,
    /// Lanes whose predicate bit is 0.
    Zero,
    /// Lanes whose predicate bit is 1.
    One,
}

/// A fetch instruction of a TEX, VTX or GDS clause (see [`Fetch::gds`]). A vertex fetch leaves the texture fields at
/// rest (`sampler` 0, `src_sel[1..]` unused (7), no normalized coordinates, bias or offsets);
/// a texture fetch leaves `vtx` at its default.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetch {
    pub op: FetchOp,
    /// The texture resource, or the buffer of a vertex fetch.
    pub resource: u8,
    /// TEX: the sampler state.
    pub sampler: u8,
    pub src_gpr: u8,
    /// TEX: the source component of each coordinate (0-3 x-w, 4 zero, 5 one, 7 unused); VTX:
    /// `src_sel[0]` is the address component.
    pub src_sel: [u8; 4],
    pub dst_gpr: u8,
    /// Which result component lands in each channel (0-3 x-w, 4 zero, 5 one, 7 masked).
    pub dst_sel: [u8; 4],
    /// TEX: which coordinates are normalized (the others are texel units).
    pub coord_normalized: [bool; 4],
    /// TEX: LOD bias, a signed fixed-point 7-bit field (1/2 units).
    pub lod_bias: i8,
    /// TEX: texel offsets, signed 5-bit fields in half texels.
    pub offset: [i8; 3],
    /// VTX: the format of the fetched data.
    pub vtx: VtxFormat,
}

impl Fetch {
    /// A GDS operation: the source GPR's selects for x, y and z (the byte address, the
    /// operands), its results into `dst_gpr` by `dst_sel`; every other field at rest.
    pub fn gds(op: FetchOp, src_gpr: u8, src_sel: [u8; 3], dst_gpr: u8, dst_sel: [u8; 4]) -> Fetch {
        Fetch {
            op,
            resource: 0,
            sampler: 0,
            src_gpr,
            src_sel: [src_sel[0], src_sel[1], src_sel[2], 7],
            dst_gpr,
            dst_sel,
            coord_normalized: [false; 4],
            lod_bias: 0,
            offset: [0; 3],
            vtx: VtxFormat::default(),
        }
    }
}

/// VFETCH data formats reading 1, 2, 3 or 4 dwords (FMT_32, FMT_32_32, FMT_32_32_32,
/// FMT_32_32_32_32).
pub const DWORD_FORMATS: [u8; 4] = [13, 29, 47, 34];

/// The fields of a vertex fetch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct VtxFormat {
    /// Bytes added to the address.
    pub offset: u16,
    /// 0 per vertex, 1 per instance, 2 no index.
    pub fetch_type: u8,
    pub mega_fetch_count: u8,
    pub data_format: u8,
    pub num_format: u8,
    pub format_comp_signed: bool,
    pub srf_mode: bool,
    pub use_const_fields: bool,
    pub endian_swap: u8,
    /// A memory read's (READ_SCRATCH's) fields; at rest for the other fetches.
    pub mem: MemRead,
}

/// Where a memory read (the MEM_RD words of READ_SCRATCH) reads: element `array_base`, plus
/// the address channel of the source GPR when `indexed`, of `elem_size + 1` dwords.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MemRead {
    pub array_base: u16,
    /// Elements the index may reach: an index at or past it reads zero.
    pub array_size: u16,
    pub elem_size: u8,
    pub indexed: bool,
}

/// What an export writes to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExportType {
    /// A render target (`base` its index) or depth (61).
    Pixel,
    /// The vertex position (60) or its other system outputs.
    Pos,
    /// A parameter (a varying) for the next stage.
    Param,
    /// The lane's scratch memory (MEM_SCRATCH).
    Scratch,
    /// A random access target (MEM_RAT, Evergreen and Cayman): `base` is the RAT's number.
    Rat,
}

/// MEM_RAT's operations (RAT_INST) that this backend uses.
pub mod rat_inst {
    /// The texel at the index GPR's coordinates (x, y, z as integers) takes the data GPR's
    /// enabled components.
    pub const STORE_TYPED: u8 = 1;
    /// The dwords from the index GPR's x on take the data GPR's enabled components.
    pub const STORE_RAW: u8 = 2;
    /// Returns what is at the index (an image texel's four components, a buffer's dword),
    /// changing nothing: an image load.
    pub const NOP_RTN: u8 = 32;
    /// Atomics on the dword at the index GPR's x (an image texel's first component at its
    /// x, y, z) with the data GPR's x (and its w, the comparand, for CMPXCHG), returning the
    /// dword's old value.
    pub const XCHG_RTN: u8 = 34;
    pub const CMPXCHG_INT_RTN: u8 = 36;
    pub const ADD_RTN: u8 = 39;
    pub const MIN_INT_RTN: u8 = 42;
    pub const MIN_UINT_RTN: u8 = 43;
    pub const MAX_INT_RTN: u8 = 44;
    pub const MAX_UINT_RTN: u8 = 45;
    pub const AND_RTN: u8 = 46;
    pub const OR_RTN: u8 = 47;
    pub const XOR_RTN: u8 = 48;
}

/// Where the dispatcher keeps atomic counter buffer `b` in the global data share (64 KB): from
/// byte `GDS_COUNTER_BUFFER_BYTES · b`, for the [`GDS_COUNTER_BUFFERS`] buffers 0 to 7.
pub const GDS_COUNTER_BUFFER_BYTES: u32 = 8192;
pub const GDS_COUNTER_BUFFERS: u32 = 8;

/// The random access targets (RATs) a program may write.
pub const RATS: u8 = 12;

/// The buffer resource through which vertex fetches read the memory of RAT `r` (an SSBO):
/// `RAT_BUFFER_RESOURCE + r`, its elements dwords.
pub const RAT_BUFFER_RESOURCE: u8 = 64;

/// The resource through which a vertex fetch reads, for each lane, the dword its last atomic
/// on RAT `r` returned: `RAT_RETURN_RESOURCE + r`.
pub const RAT_RETURN_RESOURCE: u8 = 80;

/// An export, or a scratch write (the CF_ALLOC_EXPORT words).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub kind: ExportType,
    /// ARRAY_BASE: render target, position or parameter index, or the first scratch element.
    pub base: u16,
    pub gpr: u8,
    /// Source of each component: 0-3 x-w of the GPR, 4 zero, 5 one, 7 masked. A scratch
    /// write has no swizzle: component c is channel c or masked (its COMP_MASK).
    pub swizzle: [u8; 4],
    /// GPRs written in a burst (1 for one vec4).
    pub burst: u8,
    pub elem_size: u8,
    /// Scratch writes: the GPR whose x channel is added to `base` (WRITE_IND), if any.
    pub index_gpr: Option<u8>,
    /// Scratch writes: the write is acknowledged, so a WAIT_ACK can wait for it (WRITE_ACK).
    pub ack: bool,
    /// Scratch writes: elements the index may reach; a write at or past it is dropped.
    pub array_size: u16,
    /// RAT writes: the operation ([`rat_inst`]).
    pub rat_inst: u8,
}

impl Export {
    /// A pixel, position or parameter export of one GPR.
    pub fn new(kind: ExportType, base: u16, gpr: u8, swizzle: [u8; 4]) -> Export {
        Export {
            kind,
            base,
            gpr,
            swizzle,
            burst: 1,
            elem_size: 0,
            index_gpr: None,
            ack: false,
            array_size: 0,
            rat_inst: 0,
        }
    }
}
