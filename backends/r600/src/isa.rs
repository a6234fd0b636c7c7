//! The R600 family's hardware model: the chips ([`Chip`]), the ALU opcodes with their encodings,
//! slot legality and semantics flags ([`AluOpcode`]), the fetch opcodes ([`FetchOp`]), the
//! control-flow opcodes ([`CfOp`]) and the special source selects ([`sel`]).
//!
//! The opcode tables (each opcode's number on each chip, its name and, for ALU opcodes, its
//! source count, legal slots and semantics flags) are written as data: the encoder, decoder, disassembler, packer and emulator all read them, so
//! an opcode's number, name and legal slots are stated once.

/// A member of the family. Each column of the opcode tables is one of these.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Chip {
    /// R600 (HD 2000): VLIW5, 2 kcache sets, TEX/VTX clauses of 8.
    R600,
    /// R700 (HD 4000): VLIW5, 2 kcache sets, fetch clauses of 16.
    R700,
    /// Evergreen (HD 5000): VLIW5, 4 kcache sets, interpolation in the ALU (INTERP_*).
    Evergreen,
    /// Cayman (HD 6900): VLIW4, no trans slot (its operations take three or four vector
    /// slots), CF_END ends the program.
    Cayman,
}

/// Why no chip of the family runs subgroup operations.
pub const NO_CROSS_LANE_OPERATIONS: &str = "the R600 family has no operations across the lanes of a wavefront (ballots, votes, reads \
     of other lanes)";

impl Chip {
    pub const ALL: [Chip; 4] = [Chip::R600, Chip::R700, Chip::Evergreen, Chip::Cayman];

    /// The column of the opcode tables.
    fn column(self) -> usize {
        self as usize
    }

    /// Whether the chip uses the Evergreen encodings (opcode numbers, CF word layout).
    pub fn is_evergreen_class(self) -> bool {
        self >= Chip::Evergreen
    }

    /// Whether the instruction groups have a fifth, trans(cendental) slot.
    pub fn has_trans(self) -> bool {
        self != Chip::Cayman
    }

    /// Why the chip cannot run shaders that use the GL extension `name`, when it lacks the
    /// hardware for it (a driver would not expose the extension): `None` when it has it.
    pub fn lacks_extension(self, name: &str) -> Option<&'static str> {
        match name {
            "GL_ARB_shader_ballot" | "GL_ARB_shader_group_vote" | "GL_KHR_shader_subgroup" => {
                Some(NO_CROSS_LANE_OPERATIONS)
            }
            "GL_ARB_gpu_shader_fp64" | "GL_ARB_vertex_attrib_64bit"
                if !self.is_evergreen_class() =>
            {
                Some("R600 and R700 have no double-precision ALU operations")
            }
            _ => None,
        }
    }

    /// Slots of an instruction group.
    pub fn slots(self) -> usize {
        if self.has_trans() { 5 } else { 4 }
    }

    /// Most fetch instructions in a TEX or VTX clause.
    pub fn max_fetches(self) -> usize {
        if self == Chip::R600 { 8 } else { 16 }
    }

    /// Whether the chip reads scratch memory back (READ_SCRATCH, R700 and later): what
    /// temporaries kept there and spilled values need.
    pub fn reads_scratch(self) -> bool {
        self != Chip::R600
    }

    /// Kcache sets an ALU clause may lock.
    pub fn kcache_sets(self) -> usize {
        if self.is_evergreen_class() { 4 } else { 2 }
    }

    /// Distinct constant-file reads a group may make: R600 four (address, channel) reads,
    /// later chips two (address, channel pair) reads.
    pub fn kcache_reads(self) -> usize {
        if self == Chip::R600 { 4 } else { 2 }
    }

    /// Whether fragment inputs are interpolated by ALU instructions (INTERP_*) from the
    /// barycentrics rather than loaded into GPRs before the shader starts.
    pub fn interpolates_in_alu(self) -> bool {
        self.is_evergreen_class()
    }

    /// The chip letter of Mesa's disassembly header (`shader 0 -- E`).
    pub fn letter(self) -> char {
        match self {
            Chip::R600 => '6',
            Chip::R700 => '7',
            Chip::Evergreen => 'E',
            Chip::Cayman => 'C',
        }
    }

    /// The name `--target` takes.
    pub fn name(self) -> &'static str {
        match self {
            Chip::R600 => "r600",
            Chip::R700 => "r700",
            Chip::Evergreen => "evergreen",
            Chip::Cayman => "cayman",
        }
    }
}

/// The OP3 field of an LDS operation's word (Evergreen, Cayman): LDS_IDX_OP.
pub const LDS_IDX_OP: u16 = 0x11;
/// GPRs a shader may use (Mesa's cap; the 4 above are the clause temporaries).
pub const MAX_GPRS: u8 = 124;
/// The first clause temporary (T0); T0-T3 live only within one ALU clause.
pub const CLAUSE_TEMP_BASE: u8 = 124;
/// Slots an ALU clause holds (instructions and literal pairs).
pub const MAX_ALU_CLAUSE_SLOTS: usize = 128;
/// Vec4 elements of scratch memory a lane may use: the most a scratch access's ARRAY_SIZE
/// (12 bits) can bound.
pub const MAX_SCRATCH_ELEMENTS: u32 = (1 << 12) - 1;
/// Distinct literal dwords an instruction group may carry.
pub const MAX_LITERALS: usize = 4;

/// Special values of an ALU source's 9-bit select: 0-127 are GPRs, the others kcache
/// constants, inline constants, the literal, PV/PS and (Evergreen+) interpolation parameters.
pub mod sel {
    /// First select of kcache set 0; set 1 at 160; sets 2 and 3 (Evergreen+) at 256 and 288.
    pub const KCACHE: [u16; 4] = [128, 160, 256, 288];
    /// Constants per kcache set window (two lines of 16).
    pub const KCACHE_WINDOW: u16 = 32;
    pub const ZERO: u16 = 248;
    pub const ONE: u16 = 249;
    pub const ONE_INT: u16 = 250;
    pub const MINUS_ONE_INT: u16 = 251;
    pub const HALF: u16 = 252;
    pub const LITERAL: u16 = 253;
    /// The previous group's vector results (the channel picks the slot).
    pub const PV: u16 = 254;
    /// The previous group's trans result.
    pub const PS: u16 = 255;
    /// The front of LDS output queue A, popped by the read (Evergreen+).
    pub const LDS_OQ_A_POP: u16 = 221;
    /// First interpolation parameter (Evergreen+): `Param<n>` is 448 + n.
    pub const PARAM: u16 = 448;

    /// The inline constant with these bits, if there is one.
    pub fn inline_constant(bits: u32) -> Option<u16> {
        match bits {
            0 => Some(ZERO),
            0x3f80_0000 => Some(ONE),
            1 => Some(ONE_INT),
            0xffff_ffff => Some(MINUS_ONE_INT),
            0x3f00_0000 => Some(HALF),
            _ => None,
        }
    }

    /// The bits an inline constant reads as.
    pub fn inline_value(sel: u16) -> Option<u32> {
        match sel {
            ZERO => Some(0),
            ONE => Some(0x3f80_0000),
            ONE_INT => Some(1),
            MINUS_ONE_INT => Some(0xffff_ffff),
            HALF => Some(0x3f00_0000),
            _ => None,
        }
    }

    /// The kcache set and the index in its window of a constant-file select.
    pub fn kcache(sel: u16) -> Option<(usize, u16)> {
        KCACHE
            .iter()
            .position(|&base| (base..base + KCACHE_WINDOW).contains(&sel))
            .map(|set| (set, sel - KCACHE[set]))
    }
}

/// Where an ALU opcode may be issued on one chip.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Slots {
    /// Not on this chip.
    No,
    /// A vector slot (its destination's channel) or the trans slot.
    Any,
    /// Vector slots only.
    Vec,
    /// The trans slot only (on Cayman: replicated over the vector slots).
    Trans,
    /// All four vector slots together.
    Vec4,
    /// A pair of vector slots (x,y or z,w).
    Vec2,
}

/// The condition of a compare, predicate, kill or conditional move.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cc {
    E,
    Gt,
    Ge,
    Ne,
    Lt,
    Le,
}

/// Semantics flags of an ALU opcode.
pub mod flag {
    pub const COMM: u32 = 1;
    pub const ASSOC: u32 = 1 << 1;
    pub const IEEE: u32 = 1 << 2;
    pub const DX10: u32 = 1 << 3;
    pub const INT_DST: u32 = 1 << 4;
    pub const UINT_DST: u32 = 1 << 5;
    /// A compare writing its result (SETcc).
    pub const SET: u32 = 1 << 6;
    /// A predicate set (PRED_SETcc and the predicate-stack operations).
    pub const PRED: u32 = 1 << 7;
    /// A predicate set that also pushes.
    pub const PRED_PUSH: u32 = 1 << 8;
    pub const KILL: u32 = 1 << 9;
    /// A conditional move (CNDcc).
    pub const CMOV: u32 = 1 << 10;
    pub const INT_CMP: u32 = 1 << 11;
    pub const UINT_CMP: u32 = 1 << 12;
    /// The result is replicated into every slot it occupies.
    pub const REPL: u32 = 1 << 13;
    /// Reads a neighbouring slot's operands or result.
    pub const PREV: u32 = 1 << 14;
    pub const F64: u32 = 1 << 15;
    pub const MUL24: u32 = 1 << 16;
    pub const CVT: u32 = 1 << 17;
    pub const INTERP: u32 = 1 << 18;
    pub const MOVA: u32 = 1 << 19;
    /// A local data share operation (Evergreen, Cayman): an LDS_IDX_OP word whose LDS_OP
    /// field holds the opcode. It writes no GPR; a `_RET` form queues its result on LDS
    /// output queue A, which a later group of the clause pops ([`super::sel::LDS_OQ_A_POP`]).
    pub const LDS: u32 = 1 << 20;
    /// An LDS operation that returns a value (the `_RET` forms).
    pub const RET: u32 = 1 << 21;
}

/// What the tables say of an ALU opcode.
#[derive(Copy, Clone, Debug)]
pub struct AluInfo {
    /// The mnemonic as Mesa's disassembler prints it.
    pub mnemonic: &'static str,
    pub nsrc: u8,
    /// The opcode on R600/R700 and on Evergreen/Cayman: the OP3 field for three-source
    /// operations, the OP2 field for the others.
    opcode: [Option<u16>; 2],
    slots: [Slots; 4],
    pub cc: Option<Cc>,
    pub flags: u32,
}

macro_rules! alu_ops {
    ($(($name:ident, $mnemonic:literal, $nsrc:literal, $opcode:expr, [$($slot:ident),*], $cc:expr, $flags:expr)),* $(,)?) => {
        /// An ALU opcode (the LDS operations are left out).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AluOpcode {
            $($name),*
        }

        const ALU_OPS: &[AluInfo] = &[
            $(AluInfo {
                mnemonic: $mnemonic,
                nsrc: $nsrc,
                opcode: $opcode,
                slots: [$(Slots::$slot),*],
                cc: $cc,
                flags: $flags,
            }),*
        ];

        impl AluOpcode {
            pub const ALL: &[AluOpcode] = &[$(AluOpcode::$name),*];
        }
    };
}

use flag::*;

alu_ops! {
    (Add, "ADD", 2, [Some(0x00), Some(0x00)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (Mul, "MUL", 2, [Some(0x01), Some(0x01)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (MulIeee, "MUL_IEEE", 2, [Some(0x02), Some(0x02)], [Any, Any, Any, Any], None, COMM | ASSOC | IEEE),
    (Max, "MAX", 2, [Some(0x03), Some(0x03)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (Min, "MIN", 2, [Some(0x04), Some(0x04)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (MaxDx10, "MAX_DX10", 2, [Some(0x05), Some(0x05)], [Any, Any, Any, Any], None, COMM | ASSOC | DX10),
    (MinDx10, "MIN_DX10", 2, [Some(0x06), Some(0x06)], [Any, Any, Any, Any], None, COMM | ASSOC | DX10),
    (Sete, "SETE", 2, [Some(0x08), Some(0x08)], [Any, Any, Any, Any], Some(Cc::E), SET),
    (Setgt, "SETGT", 2, [Some(0x09), Some(0x09)], [Any, Any, Any, Any], Some(Cc::Gt), SET),
    (Setge, "SETGE", 2, [Some(0x0A), Some(0x0A)], [Any, Any, Any, Any], Some(Cc::Ge), SET),
    (Setne, "SETNE", 2, [Some(0x0B), Some(0x0B)], [Any, Any, Any, Any], Some(Cc::Ne), SET),
    (SeteDx10, "SETE_DX10", 2, [Some(0x0C), Some(0x0C)], [Any, Any, Any, Any], Some(Cc::E), SET | DX10 | INT_DST),
    (SetgtDx10, "SETGT_DX10", 2, [Some(0x0D), Some(0x0D)], [Any, Any, Any, Any], Some(Cc::Gt), SET | DX10 | INT_DST),
    (SetgeDx10, "SETGE_DX10", 2, [Some(0x0E), Some(0x0E)], [Any, Any, Any, Any], Some(Cc::Ge), SET | DX10 | INT_DST),
    (SetneDx10, "SETNE_DX10", 2, [Some(0x0F), Some(0x0F)], [Any, Any, Any, Any], Some(Cc::Ne), SET | DX10 | INT_DST),
    (Fract, "FRACT", 1, [Some(0x10), Some(0x10)], [Any, Any, Any, Any], None, 0),
    (Trunc, "TRUNC", 1, [Some(0x11), Some(0x11)], [Any, Any, Any, Any], None, 0),
    (Ceil, "CEIL", 1, [Some(0x12), Some(0x12)], [Any, Any, Any, Any], None, 0),
    (Rndne, "RNDNE", 1, [Some(0x13), Some(0x13)], [Any, Any, Any, Any], None, 0),
    (Floor, "FLOOR", 1, [Some(0x14), Some(0x14)], [Any, Any, Any, Any], None, 0),
    (AshrInt, "ASHR_INT", 2, [Some(0x70), Some(0x15)], [Trans, Any, Any, Any], None, INT_DST),
    (LshrInt, "LSHR_INT", 2, [Some(0x71), Some(0x16)], [Trans, Any, Any, Any], None, INT_DST),
    (LshlInt, "LSHL_INT", 2, [Some(0x72), Some(0x17)], [Trans, Any, Any, Any], None, INT_DST),
    (Mov, "MOV", 1, [Some(0x19), Some(0x19)], [Any, Any, Any, Any], None, 0),
    (AluNop, "ALU_NOP", 0, [Some(0x1A), Some(0x1A)], [Any, Any, Any, Any], None, 0),
    (PredSetgtUint, "PRED_SETGT_UINT", 2, [Some(0x1E), Some(0x1E)], [Any, Any, Any, Any], Some(Cc::Gt), PRED | UINT_CMP),
    (PredSetgeUint, "PRED_SETGE_UINT", 2, [Some(0x1F), Some(0x1F)], [Any, Any, Any, Any], Some(Cc::Ge), PRED | UINT_CMP),
    (PredSete, "PRED_SETE", 2, [Some(0x20), Some(0x20)], [Any, Any, Any, Any], Some(Cc::E), PRED),
    (PredSetgt, "PRED_SETGT", 2, [Some(0x21), Some(0x21)], [Any, Any, Any, Any], Some(Cc::Gt), PRED),
    (PredSetge, "PRED_SETGE", 2, [Some(0x22), Some(0x22)], [Any, Any, Any, Any], Some(Cc::Ge), PRED),
    (PredSetne, "PRED_SETNE", 2, [Some(0x23), Some(0x23)], [Any, Any, Any, Any], Some(Cc::Ne), PRED),
    (PredSetInv, "PRED_SET_INV", 1, [Some(0x24), Some(0x24)], [Any, Any, Any, Any], None, PRED),
    (PredSetPop, "PRED_SET_POP", 2, [Some(0x25), Some(0x25)], [Any, Any, Any, Any], None, PRED),
    (PredSetClr, "PRED_SET_CLR", 0, [Some(0x26), Some(0x26)], [Any, Any, Any, Any], None, PRED),
    (PredSetRestore, "PRED_SET_RESTORE", 1, [Some(0x27), Some(0x27)], [Any, Any, Any, Any], None, PRED),
    (PredSetePush, "PRED_SETE_PUSH", 2, [Some(0x28), Some(0x28)], [Any, Any, Any, Any], Some(Cc::E), PRED_PUSH),
    (PredSetgtPush, "PRED_SETGT_PUSH", 2, [Some(0x29), Some(0x29)], [Any, Any, Any, Any], Some(Cc::Gt), PRED_PUSH),
    (PredSetgePush, "PRED_SETGE_PUSH", 2, [Some(0x2A), Some(0x2A)], [Any, Any, Any, Any], Some(Cc::Ge), PRED_PUSH),
    (PredSetnePush, "PRED_SETNE_PUSH", 2, [Some(0x2B), Some(0x2B)], [Any, Any, Any, Any], Some(Cc::Ne), PRED_PUSH),
    (Kille, "KILLE", 2, [Some(0x2C), Some(0x2C)], [Any, Any, Any, Any], Some(Cc::E), KILL),
    (Killgt, "KILLGT", 2, [Some(0x2D), Some(0x2D)], [Any, Any, Any, Any], Some(Cc::Gt), KILL),
    (Killge, "KILLGE", 2, [Some(0x2E), Some(0x2E)], [Any, Any, Any, Any], Some(Cc::Ge), KILL),
    (Killne, "KILLNE", 2, [Some(0x2F), Some(0x2F)], [Any, Any, Any, Any], Some(Cc::Ne), KILL),
    (AndInt, "AND_INT", 2, [Some(0x30), Some(0x30)], [Any, Any, Any, Any], None, COMM | ASSOC | INT_DST),
    (OrInt, "OR_INT", 2, [Some(0x31), Some(0x31)], [Any, Any, Any, Any], None, COMM | ASSOC | INT_DST),
    (XorInt, "XOR_INT", 2, [Some(0x32), Some(0x32)], [Any, Any, Any, Any], None, COMM | ASSOC | INT_DST),
    (NotInt, "NOT_INT", 1, [Some(0x33), Some(0x33)], [Any, Any, Any, Any], None, INT_DST),
    (AddInt, "ADD_INT", 2, [Some(0x34), Some(0x34)], [Any, Any, Any, Any], None, COMM | ASSOC | INT_DST),
    (SubInt, "SUB_INT", 2, [Some(0x35), Some(0x35)], [Any, Any, Any, Any], None, INT_DST),
    (MaxInt, "MAX_INT", 2, [Some(0x36), Some(0x36)], [Any, Any, Any, Any], None, COMM | ASSOC | INT_DST),
    (MinInt, "MIN_INT", 2, [Some(0x37), Some(0x37)], [Any, Any, Any, Any], None, COMM | ASSOC | INT_DST),
    (MaxUint, "MAX_UINT", 2, [Some(0x38), Some(0x38)], [Any, Any, Any, Any], None, COMM | ASSOC | UINT_DST),
    (MinUint, "MIN_UINT", 2, [Some(0x39), Some(0x39)], [Any, Any, Any, Any], None, COMM | ASSOC | UINT_DST),
    (SeteInt, "SETE_INT", 2, [Some(0x3A), Some(0x3A)], [Any, Any, Any, Any], Some(Cc::E), SET | INT_DST | INT_CMP),
    (SetgtInt, "SETGT_INT", 2, [Some(0x3B), Some(0x3B)], [Any, Any, Any, Any], Some(Cc::Gt), SET | INT_DST | INT_CMP),
    (SetgeInt, "SETGE_INT", 2, [Some(0x3C), Some(0x3C)], [Any, Any, Any, Any], Some(Cc::Ge), SET | INT_DST | INT_CMP),
    (SetneInt, "SETNE_INT", 2, [Some(0x3D), Some(0x3D)], [Any, Any, Any, Any], Some(Cc::Ne), SET | INT_DST | INT_CMP),
    (SetgtUint, "SETGT_UINT", 2, [Some(0x3E), Some(0x3E)], [Any, Any, Any, Any], Some(Cc::Gt), SET | UINT_DST | UINT_CMP),
    (SetgeUint, "SETGE_UINT", 2, [Some(0x3F), Some(0x3F)], [Any, Any, Any, Any], Some(Cc::Ge), SET | UINT_DST | UINT_CMP),
    (KillgtUint, "KILLGT_UINT", 2, [Some(0x40), Some(0x40)], [Any, Any, Any, Any], Some(Cc::Gt), KILL | UINT_CMP),
    (KillgeUint, "KILLGE_UINT", 2, [Some(0x41), Some(0x41)], [Any, Any, Any, Any], Some(Cc::Ge), KILL | UINT_CMP),
    (PredSeteInt, "PRED_SETE_INT", 2, [Some(0x42), Some(0x42)], [Any, Any, Any, Any], Some(Cc::E), PRED | INT_CMP),
    (PredSetgtInt, "PRED_SETGT_INT", 2, [Some(0x43), Some(0x43)], [Any, Any, Any, Any], Some(Cc::Gt), PRED | INT_CMP),
    (PredSetgeInt, "PRED_SETGE_INT", 2, [Some(0x44), Some(0x44)], [Any, Any, Any, Any], Some(Cc::Ge), PRED | INT_CMP),
    (PredSetneInt, "PRED_SETNE_INT", 2, [Some(0x45), Some(0x45)], [Any, Any, Any, Any], Some(Cc::Ne), PRED | INT_CMP),
    (KilleInt, "KILLE_INT", 2, [Some(0x46), Some(0x46)], [Any, Any, Any, Any], Some(Cc::E), KILL | INT_CMP),
    (KillgtInt, "KILLGT_INT", 2, [Some(0x47), Some(0x47)], [Any, Any, Any, Any], Some(Cc::Gt), KILL | INT_CMP),
    (KillgeInt, "KILLGE_INT", 2, [Some(0x48), Some(0x48)], [Any, Any, Any, Any], Some(Cc::Ge), KILL | INT_CMP),
    (KillneInt, "KILLNE_INT", 2, [Some(0x49), Some(0x49)], [Any, Any, Any, Any], Some(Cc::Ne), KILL | INT_CMP),
    (PredSetePushInt, "PRED_SETE_PUSH_INT", 2, [Some(0x4A), Some(0x4A)], [Any, Any, Any, Any], Some(Cc::E), PRED_PUSH | INT_CMP),
    (PredSetgtPushInt, "PRED_SETGT_PUSH_INT", 2, [Some(0x4B), Some(0x4B)], [Any, Any, Any, Any], Some(Cc::Gt), PRED_PUSH | INT_CMP),
    (PredSetgePushInt, "PRED_SETGE_PUSH_INT", 2, [Some(0x4C), Some(0x4C)], [Any, Any, Any, Any], Some(Cc::Ge), PRED_PUSH | INT_CMP),
    (PredSetnePushInt, "PRED_SETNE_PUSH_INT", 2, [Some(0x4D), Some(0x4D)], [Any, Any, Any, Any], Some(Cc::Ne), PRED_PUSH | INT_CMP),
    (PredSetltPushInt, "PRED_SETLT_PUSH_INT", 2, [Some(0x4E), Some(0x4E)], [Any, Any, Any, Any], Some(Cc::Lt), PRED_PUSH | INT_CMP),
    (PredSetlePushInt, "PRED_SETLE_PUSH_INT", 2, [Some(0x4F), Some(0x4F)], [Any, Any, Any, Any], Some(Cc::Le), PRED_PUSH | INT_CMP),
    (FltToInt, "FLT_TO_INT", 1, [Some(0x6B), Some(0x50)], [Trans, Trans, Vec, Vec], None, INT_DST | CVT),
    (BfrevInt, "BFREV_INT", 1, [None, Some(0x51)], [No, No, Any, Any], None, INT_DST),
    (AddcUint, "ADDC_UINT", 2, [None, Some(0x52)], [No, No, Any, Any], None, UINT_DST),
    (SubbUint, "SUBB_UINT", 2, [None, Some(0x53)], [No, No, Any, Any], None, UINT_DST),
    (GroupBarrier, "GROUP_BARRIER", 0, [None, Some(0x54)], [No, No, Any, Any], None, 0),
    (GroupSeqBegin, "GROUP_SEQ_BEGIN", 0, [None, Some(0x55)], [No, No, Any, No], None, 0),
    (GroupSeqEnd, "GROUP_SEQ_END", 0, [None, Some(0x56)], [No, No, Any, No], None, 0),
    (SetMode, "SET_MODE", 2, [None, Some(0x57)], [No, No, Any, Any], None, 0),
    (SetCfIdx0, "SET_CF_IDX0", 0, [None, Some(0x58)], [No, No, Any, No], None, 0),
    (SetCfIdx1, "SET_CF_IDX1", 0, [None, Some(0x59)], [No, No, Any, No], None, 0),
    (SetLdsSize, "SET_LDS_SIZE", 2, [None, Some(0x5A)], [No, No, Any, Any], None, 0),
    (MulInt24, "MUL_INT24", 2, [None, Some(0x5B)], [No, No, No, Vec], None, INT_DST | MUL24),
    (MulhiInt24, "MULHI_INT24", 2, [None, Some(0x5C)], [No, No, No, Vec], None, INT_DST | MUL24),
    (FltToIntTrunc, "FLT_TO_INT_TRUNC", 1, [None, Some(0x5D)], [No, No, No, Vec], None, INT_DST | CVT),
    (ExpIeee, "EXP_IEEE", 1, [Some(0x61), Some(0x81)], [Trans, Trans, Trans, Trans], None, IEEE),
    (LogClamped, "LOG_CLAMPED", 1, [Some(0x62), Some(0x82)], [Trans, Trans, Trans, Trans], None, 0),
    (LogIeee, "LOG_IEEE", 1, [Some(0x63), Some(0x83)], [Trans, Trans, Trans, Trans], None, IEEE),
    (RecipClamped, "RECIP_CLAMPED", 1, [Some(0x64), Some(0x84)], [Trans, Trans, Trans, Trans], None, 0),
    (RecipFf, "RECIP_FF", 1, [Some(0x65), Some(0x85)], [Trans, Trans, Trans, Trans], None, 0),
    (RecipIeee, "RECIP_IEEE", 1, [Some(0x66), Some(0x86)], [Trans, Trans, Trans, Trans], None, IEEE),
    (RecipsqrtClamped, "RECIPSQRT_CLAMPED", 1, [Some(0x67), Some(0x87)], [Trans, Trans, Trans, Trans], None, 0),
    (RecipsqrtFf, "RECIPSQRT_FF", 1, [Some(0x68), Some(0x88)], [Trans, Trans, Trans, Trans], None, 0),
    (RecipsqrtIeee, "RECIPSQRT_IEEE", 1, [Some(0x69), Some(0x89)], [Trans, Trans, Trans, Trans], None, IEEE),
    (SqrtIeee, "SQRT_IEEE", 1, [Some(0x6A), Some(0x8A)], [Trans, Trans, Trans, Trans], None, IEEE),
    (Sin, "SIN", 1, [Some(0x6E), Some(0x8D)], [Trans, Trans, Trans, Trans], None, 0),
    (Cos, "COS", 1, [Some(0x6F), Some(0x8E)], [Trans, Trans, Trans, Trans], None, 0),
    (MulloInt, "MULLO_INT", 2, [Some(0x73), Some(0x8F)], [Trans, Trans, Trans, Vec4], None, COMM | INT_DST | REPL),
    (MulhiInt, "MULHI_INT", 2, [Some(0x74), Some(0x90)], [Trans, Trans, Trans, Vec4], None, COMM | INT_DST | REPL),
    (MulloUint, "MULLO_UINT", 2, [Some(0x75), Some(0x91)], [Trans, Trans, Trans, Vec4], None, COMM | UINT_DST | REPL),
    (MulhiUint, "MULHI_UINT", 2, [Some(0x76), Some(0x92)], [Trans, Trans, Trans, Vec4], None, COMM | UINT_DST | REPL),
    (RecipInt, "RECIP_INT", 1, [Some(0x77), Some(0x93)], [Trans, Trans, Trans, No], None, INT_DST),
    (RecipUint, "RECIP_UINT", 1, [Some(0x78), Some(0x94)], [Trans, Trans, Trans, No], None, UINT_DST),
    (Recip64, "RECIP_64", 2, [None, Some(0x95)], [No, No, Trans, Trans], None, F64),
    (RecipClamped64, "RECIP_CLAMPED_64", 2, [None, Some(0x96)], [No, No, Trans, Trans], None, F64),
    (Recipsqrt64, "RECIPSQRT_64", 2, [None, Some(0x97)], [No, No, Trans, Trans], None, F64),
    (RecipsqrtClamped64, "RECIPSQRT_CLAMPED_64", 2, [None, Some(0x98)], [No, No, Trans, Trans], None, F64),
    (Sqrt64, "SQRT_64", 2, [None, Some(0x99)], [No, No, Trans, Trans], None, F64),
    (FltToUint, "FLT_TO_UINT", 1, [Some(0x79), Some(0x9A)], [Trans, Trans, Trans, Vec], None, UINT_DST | CVT),
    (IntToFlt, "INT_TO_FLT", 1, [Some(0x6C), Some(0x9B)], [Trans, Trans, Trans, Vec], None, CVT),
    (UintToFlt, "UINT_TO_FLT", 1, [Some(0x6D), Some(0x9C)], [Trans, Trans, Trans, Vec], None, CVT),
    (BfmInt, "BFM_INT", 2, [None, Some(0xA0)], [No, No, Vec, Vec], None, INT_DST),
    (Flt32ToFlt16, "FLT32_TO_FLT16", 1, [None, Some(0xA2)], [No, No, Vec, Vec], None, 0),
    (Flt16ToFlt32, "FLT16_TO_FLT32", 1, [None, Some(0xA3)], [No, No, Vec, Vec], None, 0),
    (Ubyte0Flt, "UBYTE0_FLT", 1, [None, Some(0xA4)], [No, No, Vec, Vec], None, 0),
    (Ubyte1Flt, "UBYTE1_FLT", 1, [None, Some(0xA5)], [No, No, Vec, Vec], None, 0),
    (Ubyte2Flt, "UBYTE2_FLT", 1, [None, Some(0xA6)], [No, No, Vec, Vec], None, 0),
    (Ubyte3Flt, "UBYTE3_FLT", 1, [None, Some(0xA7)], [No, No, Vec, Vec], None, 0),
    (BcntInt, "BCNT_INT", 1, [None, Some(0xAA)], [No, No, Vec, Vec], None, INT_DST),
    (FfbhUint, "FFBH_UINT", 1, [None, Some(0xAB)], [No, No, Vec, Vec], None, UINT_DST),
    (FfblInt, "FFBL_INT", 1, [None, Some(0xAC)], [No, No, Vec, Vec], None, INT_DST),
    (FfbhInt, "FFBH_INT", 1, [None, Some(0xAD)], [No, No, Vec, Vec], None, INT_DST),
    (FltToUint4, "FLT_TO_UINT4", 1, [None, Some(0xAE)], [No, No, Vec, Vec], None, UINT_DST),
    (DotIeee, "DOT_IEEE", 2, [None, Some(0xAF)], [No, No, Vec, Vec], None, PREV | IEEE),
    (FltToIntRpi, "FLT_TO_INT_RPI", 1, [None, Some(0xB0)], [No, No, Vec, Vec], None, INT_DST | CVT),
    (FltToIntFloor, "FLT_TO_INT_FLOOR", 1, [None, Some(0xB1)], [No, No, Vec, Vec], None, INT_DST | CVT),
    (MulhiUint24, "MULHI_UINT24", 2, [None, Some(0xB2)], [No, No, Vec, Vec], None, UINT_DST | MUL24),
    (Mbcnt32hiInt, "MBCNT_32HI_INT", 1, [None, Some(0xB3)], [No, No, Vec, Vec], None, INT_DST),
    (OffsetToFlt, "OFFSET_TO_FLT", 1, [None, Some(0xB4)], [No, No, Vec, Vec], None, 0),
    (MulUint24, "MUL_UINT24", 2, [None, Some(0xB5)], [No, No, Vec, Vec], None, UINT_DST | MUL24),
    (BcntAccumPrevInt, "BCNT_ACCUM_PREV_INT", 1, [None, Some(0xB6)], [No, No, Vec, Vec], None, INT_DST | PREV),
    (Mbcnt32loAccumPrevInt, "MBCNT_32LO_ACCUM_PREV_INT", 1, [None, Some(0xB7)], [No, No, Vec, Vec], None, INT_DST | PREV),
    (Sete64, "SETE_64", 2, [None, Some(0xB8)], [No, No, Vec, Vec], Some(Cc::E), SET | F64),
    (Setne64, "SETNE_64", 2, [None, Some(0xB9)], [No, No, Vec, Vec], Some(Cc::Ne), SET | F64),
    (Setgt64, "SETGT_64", 2, [None, Some(0xBA)], [No, No, Vec, Vec], Some(Cc::Gt), SET | F64),
    (Setge64, "SETGE_64", 2, [None, Some(0xBB)], [No, No, Vec, Vec], Some(Cc::Ge), SET | F64),
    (Min64, "MIN_64", 2, [None, Some(0xBC)], [No, No, Vec, Vec], None, F64),
    (Max64, "MAX_64", 2, [None, Some(0xBD)], [No, No, Vec, Vec], None, F64),
    (Dot4, "DOT4", 2, [Some(0x50), Some(0xBE)], [Vec4, Vec4, Vec4, Vec4], None, REPL),
    (Dot4Ieee, "DOT4_IEEE", 2, [Some(0x51), Some(0xBF)], [Vec4, Vec4, Vec4, Vec4], None, REPL | IEEE),
    (Cube, "CUBE", 2, [Some(0x52), Some(0xC0)], [Vec4, Vec4, Vec4, Vec4], None, 0),
    (Max4, "MAX4", 1, [Some(0x53), Some(0xC1)], [Vec4, Vec4, Vec4, Vec4], None, REPL),
    (Frexp64, "FREXP_64", 1, [Some(0x07), Some(0xC4)], [Vec, Vec, Vec, Vec], None, F64),
    (Ldexp64, "LDEXP_64", 2, [Some(0x7A), Some(0xC5)], [Vec, Vec, Vec, Vec], None, F64),
    (Fract64, "FRACT_64", 1, [Some(0x7B), Some(0xC6)], [Vec, Vec, Vec, Vec], None, F64),
    (PredSetgt64, "PRED_SETGT_64", 2, [Some(0x7C), Some(0xC7)], [Vec, Vec, Vec, Vec], Some(Cc::Gt), PRED | F64),
    (PredSete64, "PRED_SETE_64", 2, [Some(0x7D), Some(0xC8)], [Vec, Vec, Vec, Vec], Some(Cc::E), PRED | F64),
    (PredSetge64, "PRED_SETGE_64", 2, [Some(0x7E), Some(0xC9)], [Vec, Vec, Vec, Vec], Some(Cc::Ge), PRED | F64),
    (Mul64, "MUL_64", 2, [Some(0x1B), Some(0xCA)], [Vec, Vec, Vec, Vec4], None, F64),
    (Add64, "ADD_64", 2, [Some(0x17), Some(0xCB)], [Vec, Vec, Vec, Vec], None, F64),
    (MovaInt, "MOVA_INT", 1, [Some(0x18), Some(0xCC)], [Vec, Vec, Vec, Vec], None, MOVA),
    (Flt64ToFlt32, "FLT64_TO_FLT32", 1, [Some(0x1C), Some(0xCD)], [Vec, Vec, Vec, Vec], None, F64),
    (Flt32ToFlt64, "FLT32_TO_FLT64", 1, [Some(0x1D), Some(0xCE)], [Vec, Vec, Vec, Vec], None, F64),
    (SadAccumPrevUint, "SAD_ACCUM_PREV_UINT", 2, [None, Some(0xCF)], [No, No, Vec, Vec], None, UINT_DST | PREV),
    (Dot, "DOT", 2, [None, Some(0xD0)], [No, No, Vec, Vec], None, PREV),
    (MulPrev, "MUL_PREV", 1, [None, Some(0xD1)], [No, No, Vec, Vec], None, PREV),
    (MulIeeePrev, "MUL_IEEE_PREV", 1, [None, Some(0xD2)], [No, No, Vec, Vec], None, PREV | IEEE),
    (AddPrev, "ADD_PREV", 1, [None, Some(0xD3)], [No, No, Vec, Vec], None, PREV),
    (MuladdPrev, "MULADD_PREV", 2, [None, Some(0xD4)], [No, No, Vec, Vec], None, PREV),
    (MuladdIeeePrev, "MULADD_IEEE_PREV", 2, [None, Some(0xD5)], [No, No, Vec, Vec], None, PREV | IEEE),
    (InterpXy, "INTERP_XY", 2, [None, Some(0xD6)], [No, No, Vec4, Vec4], None, INTERP),
    (InterpZw, "INTERP_ZW", 2, [None, Some(0xD7)], [No, No, Vec4, Vec4], None, INTERP),
    (InterpX, "INTERP_X", 2, [None, Some(0xD8)], [No, No, Vec2, Vec2], None, INTERP),
    (InterpZ, "INTERP_Z", 2, [None, Some(0xD9)], [No, No, Vec2, Vec2], None, INTERP),
    (StoreFlags, "STORE_FLAGS", 1, [None, Some(0xDA)], [No, No, Vec, Vec], None, 0),
    (LoadStoreFlags, "LOAD_STORE_FLAGS", 1, [None, Some(0xDB)], [No, No, Vec, Vec], None, 0),
    (Lds1a, "LDS_1A", 2, [None, Some(0xDC)], [No, No, Vec, Vec], None, 0),
    (Lds1a1d, "LDS_1A1D", 2, [None, Some(0xDD)], [No, No, Vec, Vec], None, 0),
    (Lds2a, "LDS_2A", 2, [None, Some(0xDF)], [No, No, Vec, Vec], None, 0),
    (InterpLoadP0, "INTERP_LOAD_P0", 1, [None, Some(0xE0)], [No, No, Vec, Vec], None, INTERP),
    (InterpLoadP10, "INTERP_LOAD_P10", 1, [None, Some(0xE1)], [No, No, Vec, Vec], None, INTERP),
    (InterpLoadP20, "INTERP_LOAD_P20", 1, [None, Some(0xE2)], [No, No, Vec, Vec], None, INTERP),
    (BfeUint, "BFE_UINT", 3, [None, Some(0x04)], [No, No, Vec, Vec], None, UINT_DST),
    (BfeInt, "BFE_INT", 3, [None, Some(0x05)], [No, No, Vec, Vec], None, INT_DST),
    (BfiInt, "BFI_INT", 3, [None, Some(0x06)], [No, No, Vec, Vec], None, INT_DST),
    (Fma, "FMA", 3, [None, Some(0x07)], [No, No, Vec, Vec], None, 0),
    (MuladdInt24, "MULADD_INT24", 3, [None, Some(0x08)], [No, No, No, Vec], None, INT_DST | MUL24),
    (Cndne64, "CNDNE_64", 3, [None, Some(0x09)], [No, No, Vec, Vec], None, CMOV | F64),
    (Fma64, "FMA_64", 3, [None, Some(0x0A)], [No, No, Vec, Vec4], None, F64),
    (LerpUint, "LERP_UINT", 3, [None, Some(0x0B)], [No, No, Vec, Vec], None, UINT_DST),
    (BitAlignInt, "BIT_ALIGN_INT", 3, [None, Some(0x0C)], [No, No, Vec, Vec], None, INT_DST),
    (ByteAlignInt, "BYTE_ALIGN_INT", 3, [None, Some(0x0D)], [No, No, Vec, Vec], None, INT_DST),
    (SadAccumUint, "SAD_ACCUM_UINT", 3, [None, Some(0x0E)], [No, No, Vec, Vec], None, UINT_DST),
    (SadAccumHiUint, "SAD_ACCUM_HI_UINT", 3, [None, Some(0x0F)], [No, No, Vec, Vec], None, UINT_DST),
    (MuladdUint24, "MULADD_UINT24", 3, [None, Some(0x10)], [No, No, Vec, Vec], None, UINT_DST | MUL24),
    (Muladd, "MULADD", 3, [Some(0x10), Some(0x14)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (MuladdM2, "MULADD_M2", 3, [Some(0x11), Some(0x15)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (MuladdM4, "MULADD_M4", 3, [Some(0x12), Some(0x16)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (MuladdD2, "MULADD_D2", 3, [Some(0x13), Some(0x17)], [Any, Any, Any, Any], None, COMM | ASSOC),
    (MuladdIeee, "MULADD_IEEE", 3, [Some(0x14), Some(0x18)], [Any, Any, Any, Any], None, COMM | ASSOC | IEEE),
    (Cnde, "CNDE", 3, [Some(0x18), Some(0x19)], [Any, Any, Any, Any], Some(Cc::E), CMOV),
    (Cndgt, "CNDGT", 3, [Some(0x19), Some(0x1A)], [Any, Any, Any, Any], Some(Cc::Gt), CMOV),
    (Cndge, "CNDGE", 3, [Some(0x1A), Some(0x1B)], [Any, Any, Any, Any], Some(Cc::Ge), CMOV),
    (CndeInt, "CNDE_INT", 3, [Some(0x1C), Some(0x1C)], [Any, Any, Any, Any], Some(Cc::E), CMOV | INT_CMP),
    (CndgtInt, "CNDGT_INT", 3, [Some(0x1D), Some(0x1D)], [Any, Any, Any, Any], Some(Cc::Gt), CMOV | INT_CMP),
    (CndgeInt, "CNDGE_INT", 3, [Some(0x1E), Some(0x1E)], [Any, Any, Any, Any], Some(Cc::Ge), CMOV | INT_CMP),
    (MulLit, "MUL_LIT", 3, [Some(0x0C), Some(0x1F)], [Trans, Trans, Trans, Vec], None, 0),
    (Mova, "MOVA", 1, [Some(0x15), None], [Vec, Vec, No, No], None, MOVA),
    (MovaFloor, "MOVA_FLOOR", 1, [Some(0x16), None], [Vec, Vec, No, No], None, MOVA),
    (MovaGprInt, "MOVA_GPR_INT", 1, [Some(0x60), None], [Trans, No, No, No], None, MOVA),
    (Muladd64, "MULADD_64", 3, [Some(0x08), None], [Vec, Vec, No, No], None, F64),
    (Muladd64M2, "MULADD_64_M2", 3, [Some(0x09), None], [Vec, Vec, No, No], None, F64),
    (Muladd64M4, "MULADD_64_M4", 3, [Some(0x0A), None], [Vec, Vec, No, No], None, F64),
    (Muladd64D2, "MULADD_64_D2", 3, [Some(0x0B), None], [Vec, Vec, No, No], None, F64),
    (MulLitM2, "MUL_LIT_M2", 3, [Some(0x0D), None], [Any, Any, No, No], None, 0),
    (MulLitM4, "MUL_LIT_M4", 3, [Some(0x0E), None], [Any, Any, No, No], None, 0),
    (MulLitD2, "MUL_LIT_D2", 3, [Some(0x0F), None], [Any, Any, No, No], None, 0),
    (MuladdIeeeM2, "MULADD_IEEE_M2", 3, [Some(0x15), None], [Any, Any, No, No], None, COMM | ASSOC | IEEE),
    (MuladdIeeeM4, "MULADD_IEEE_M4", 3, [Some(0x16), None], [Any, Any, No, No], None, COMM | ASSOC | IEEE),
    (MuladdIeeeD2, "MULADD_IEEE_D2", 3, [Some(0x17), None], [Any, Any, No, No], None, COMM | ASSOC | IEEE),
    // The LDS operations: the opcode is the LDS_OP field of an LDS_IDX_OP word; the sources
    // are the byte address, then the data (a compare-exchange's comparand, then its value).
    (LdsWrite, "LDS_WRITE", 2, [None, Some(0x0D)], [No, No, Vec, Vec], None, LDS),
    (LdsAddRet, "LDS_ADD_RET", 2, [None, Some(0x20)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsMinIntRet, "LDS_MIN_INT_RET", 2, [None, Some(0x25)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsMaxIntRet, "LDS_MAX_INT_RET", 2, [None, Some(0x26)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsMinUintRet, "LDS_MIN_UINT_RET", 2, [None, Some(0x27)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsMaxUintRet, "LDS_MAX_UINT_RET", 2, [None, Some(0x28)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsAndRet, "LDS_AND_RET", 2, [None, Some(0x29)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsOrRet, "LDS_OR_RET", 2, [None, Some(0x2A)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsXorRet, "LDS_XOR_RET", 2, [None, Some(0x2B)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsXchgRet, "LDS_XCHG_RET", 2, [None, Some(0x2D)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsCmpXchgRet, "LDS_CMP_XCHG_RET", 3, [None, Some(0x30)], [No, No, Vec, Vec], None, LDS | RET),
    (LdsReadRet, "LDS_READ_RET", 1, [None, Some(0x32)], [No, No, Vec, Vec], None, LDS | RET),
}

impl AluOpcode {
    pub fn info(self) -> &'static AluInfo {
        &ALU_OPS[self as usize]
    }

    pub fn mnemonic(self) -> &'static str {
        self.info().mnemonic
    }

    pub fn nsrc(self) -> usize {
        self.info().nsrc as usize
    }

    pub fn has(self, flags: u32) -> bool {
        self.info().flags & flags != 0
    }

    /// Whether the opcode is encoded in the three-source (OP3) form (the LDS operations have
    /// a form of their own).
    pub fn is_op3(self) -> bool {
        self.info().nsrc == 3 && !self.has(flag::LDS)
    }

    /// Where the opcode may be issued on `chip`.
    pub fn slots(self, chip: Chip) -> Slots {
        self.info().slots[chip.column()]
    }

    /// The opcode's number on `chip`, if the chip has it.
    pub fn opcode(self, chip: Chip) -> Option<u16> {
        match self.slots(chip) {
            Slots::No => None,
            _ => self.info().opcode[chip.is_evergreen_class() as usize],
        }
    }

    /// The opcode `chip` encodes as `opcode` in the OP3 (`op3`) or OP2 field.
    pub fn decode(chip: Chip, op3: bool, opcode: u16) -> Option<AluOpcode> {
        AluOpcode::ALL
            .iter()
            .copied()
            .find(|op| !op.has(flag::LDS) && op.is_op3() == op3 && op.opcode(chip) == Some(opcode))
    }

    /// The LDS operation `chip` encodes as `lds_op` in an LDS_IDX_OP word's LDS_OP field.
    pub fn decode_lds(chip: Chip, lds_op: u16) -> Option<AluOpcode> {
        (AluOpcode::ALL.iter().copied())
            .find(|op| op.has(flag::LDS) && op.opcode(chip) == Some(lds_op))
    }

    /// Whether only the trans slot runs it (on Cayman: replicated over the vector slots).
    pub fn is_trans_only(self, chip: Chip) -> bool {
        self.slots(chip) == Slots::Trans
    }
}

impl std::fmt::Display for AluOpcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.mnemonic())
    }
}

macro_rules! fetch_ops {
    ($(($name:ident, $mnemonic:literal, $opcode:expr)),* $(,)?) => {
        /// A fetch opcode of TEX and VTX clauses. The number's low byte is the
        /// instruction field, the bits above it the instruction modifier.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum FetchOp {
            $($name),*
        }

        const FETCH_OPS: &[(&str, [Option<u32>; 4])] = &[$(($mnemonic, $opcode)),*];

        impl FetchOp {
            pub const ALL: &[FetchOp] = &[$(FetchOp::$name),*];
        }
    };
}

fetch_ops! {
    (Vfetch, "VFETCH", [Some(0x000000), Some(0x000000), Some(0x000000), Some(0x000000)]),
    (Semfetch, "SEMFETCH", [Some(0x000001), Some(0x000001), Some(0x000001), Some(0x000001)]),
    (ReadScratch, "READ_SCRATCH", [None, Some(0x000002), Some(0x000002), Some(0x000002)]),
    (ReadReduct, "READ_REDUCT", [None, Some(0x000102), None, None]),
    (ReadMem, "READ_MEM", [None, Some(0x000202), Some(0x000202), Some(0x000202)]),
    (DsLocalWrite, "DS_LOCAL_WRITE", [None, Some(0x000402), None, None]),
    (DsLocalRead, "DS_LOCAL_READ", [None, Some(0x000502), None, None]),
    (Ld, "LD", [Some(0x000003), Some(0x000003), Some(0x000003), Some(0x000003)]),
    (Ldfptr, "LDFPTR", [None, None, Some(0x000103), Some(0x000103)]),
    (GetTextureResinfo, "GET_TEXTURE_RESINFO", [Some(0x000004), Some(0x000004), Some(0x000004), Some(0x000004)]),
    (GetNumberOfSamples, "GET_NUMBER_OF_SAMPLES", [Some(0x000005), Some(0x000005), Some(0x000005), Some(0x000005)]),
    (GetLod, "GET_LOD", [Some(0x000006), Some(0x000006), Some(0x000006), Some(0x000006)]),
    (GetGradientsH, "GET_GRADIENTS_H", [Some(0x000007), Some(0x000007), Some(0x000007), Some(0x000007)]),
    (GetGradientsV, "GET_GRADIENTS_V", [Some(0x000008), Some(0x000008), Some(0x000008), Some(0x000008)]),
    (GetGradientsHFine, "GET_GRADIENTS_H_FINE", [None, None, Some(0x000107), Some(0x000107)]),
    (GetGradientsVFine, "GET_GRADIENTS_V_FINE", [None, None, Some(0x000108), Some(0x000108)]),
    (GetLerp, "GET_LERP", [Some(0x000009), Some(0x000009), None, None]),
    (SetTextureOffsets, "SET_TEXTURE_OFFSETS", [None, None, Some(0x000009), Some(0x000009)]),
    (KeepGradients, "KEEP_GRADIENTS", [None, Some(0x00000A), Some(0x00000A), Some(0x00000A)]),
    (SetGradientsH, "SET_GRADIENTS_H", [Some(0x00000B), Some(0x00000B), Some(0x00000B), Some(0x00000B)]),
    (SetGradientsV, "SET_GRADIENTS_V", [Some(0x00000C), Some(0x00000C), Some(0x00000C), Some(0x00000C)]),
    (SetGradientsHCoarse, "SET_GRADIENTS_H_COARSE", [None, None, None, Some(0x00010B)]),
    (SetGradientsVCoarse, "SET_GRADIENTS_V_COARSE", [None, None, None, Some(0x00010C)]),
    (SetGradientsHPackedFine, "SET_GRADIENTS_H_PACKED_FINE", [None, None, None, Some(0x00020B)]),
    (SetGradientsVPackedFine, "SET_GRADIENTS_V_PACKED_FINE", [None, None, None, Some(0x00020C)]),
    (SetGradientsHPackedCoarse, "SET_GRADIENTS_H_PACKED_COARSE", [None, None, None, Some(0x00030B)]),
    (SetGradientsVPackedCoarse, "SET_GRADIENTS_V_PACKED_COARSE", [None, None, None, Some(0x00030C)]),
    (Pass, "PASS", [Some(0x00000D), Some(0x00000D), Some(0x00000D), Some(0x00000D)]),
    (Pass1, "PASS1", [None, None, Some(0x00010D), Some(0x00010D)]),
    (Pass2, "PASS2", [None, None, Some(0x00020D), Some(0x00020D)]),
    (Pass3, "PASS3", [None, None, Some(0x00030D), Some(0x00030D)]),
    (SetCubemapIndex, "SET_CUBEMAP_INDEX", [Some(0x00000E), Some(0x00000E), None, None]),
    (GetBufferResinfo, "GET_BUFFER_RESINFO", [None, None, Some(0x00000E), Some(0x00000E)]),
    (Fetch4, "FETCH4", [Some(0x00000F), Some(0x00000F), None, None]),
    (Sample, "SAMPLE", [Some(0x000010), Some(0x000010), Some(0x000010), Some(0x000010)]),
    (SampleL, "SAMPLE_L", [Some(0x000011), Some(0x000011), Some(0x000011), Some(0x000011)]),
    (SampleLb, "SAMPLE_LB", [Some(0x000012), Some(0x000012), Some(0x000012), Some(0x000012)]),
    (SampleLz, "SAMPLE_LZ", [Some(0x000013), Some(0x000013), Some(0x000013), Some(0x000013)]),
    (SampleG, "SAMPLE_G", [Some(0x000014), Some(0x000014), Some(0x000014), Some(0x000014)]),
    (SampleGL, "SAMPLE_G_L", [Some(0x000015), Some(0x000015), None, None]),
    (Gather4, "GATHER4", [None, None, Some(0x000015), Some(0x000015)]),
    (SampleGLb, "SAMPLE_G_LB", [Some(0x000016), Some(0x000016), Some(0x000016), Some(0x000016)]),
    (SampleGLz, "SAMPLE_G_LZ", [Some(0x000017), Some(0x000017), None, None]),
    (Gather4O, "GATHER4_O", [None, None, Some(0x000017), Some(0x000017)]),
    (SampleC, "SAMPLE_C", [Some(0x000018), Some(0x000018), Some(0x000018), Some(0x000018)]),
    (SampleCL, "SAMPLE_C_L", [Some(0x000019), Some(0x000019), Some(0x000019), Some(0x000019)]),
    (SampleCLb, "SAMPLE_C_LB", [Some(0x00001A), Some(0x00001A), Some(0x00001A), Some(0x00001A)]),
    (SampleCLz, "SAMPLE_C_LZ", [Some(0x00001B), Some(0x00001B), Some(0x00001B), Some(0x00001B)]),
    (SampleCG, "SAMPLE_C_G", [Some(0x00001C), Some(0x00001C), Some(0x00001C), Some(0x00001C)]),
    (SampleCGL, "SAMPLE_C_G_L", [Some(0x00001D), Some(0x00001D), None, None]),
    (Gather4C, "GATHER4_C", [None, None, Some(0x00001D), Some(0x00001D)]),
    (SampleCGLb, "SAMPLE_C_G_LB", [Some(0x00001E), Some(0x00001E), Some(0x00001E), Some(0x00001E)]),
    (SampleCGLz, "SAMPLE_C_G_LZ", [Some(0x00001F), Some(0x00001F), None, None]),
    (Gather4CO, "GATHER4_C_O", [None, None, Some(0x00001F), Some(0x00001F)]),
    // The global data share's returning operations (GDS clauses, Evergreen and Cayman): the
    // MEM_GDS words' instruction (2) in the low byte, their GDS_OP above it (its top bits
    // the operands and results: not encoded).
    (GdsAddRet, "GDS_ADD_RET", [None, None, Some(0x2002), Some(0x2002)]),
    (GdsMinIntRet, "GDS_MIN_INT_RET", [None, None, Some(0x2502), Some(0x2502)]),
    (GdsMaxIntRet, "GDS_MAX_INT_RET", [None, None, Some(0x2602), Some(0x2602)]),
    (GdsMinUintRet, "GDS_MIN_UINT_RET", [None, None, Some(0x2702), Some(0x2702)]),
    (GdsMaxUintRet, "GDS_MAX_UINT_RET", [None, None, Some(0x2802), Some(0x2802)]),
    (GdsAndRet, "GDS_AND_RET", [None, None, Some(0x2902), Some(0x2902)]),
    (GdsOrRet, "GDS_OR_RET", [None, None, Some(0x2A02), Some(0x2A02)]),
    (GdsXorRet, "GDS_XOR_RET", [None, None, Some(0x2B02), Some(0x2B02)]),
    (GdsXchgRet, "GDS_XCHG_RET", [None, None, Some(0x2D02), Some(0x2D02)]),
    (GdsCmpXchgRet, "GDS_CMP_XCHG_RET", [None, None, Some(0x3002), Some(0x3002)]),
    (GdsReadRet, "GDS_READ_RET", [None, None, Some(0x3202), Some(0x3202)]),
}

impl FetchOp {
    pub fn mnemonic(self) -> &'static str {
        FETCH_OPS[self as usize].0
    }

    /// The opcode (instruction in bits 7:0, modifier above) on `chip`, if the chip has it.
    pub fn opcode(self, chip: Chip) -> Option<u32> {
        FETCH_OPS[self as usize].1[chip.column()]
    }

    /// The opcode of a TEX (`vertex` false) or VTX instruction on `chip`. Vertex-fetch and
    /// texture opcodes share numbers, so the clause kind picks the table half.
    pub fn decode(chip: Chip, vertex: bool, opcode: u32) -> Option<FetchOp> {
        FetchOp::ALL.iter().copied().find(|op| {
            !op.is_gds() && op.is_vertex_fetch() == vertex && op.opcode(chip) == Some(opcode)
        })
    }

    /// The GDS operation whose GDS_OP field is `gds_op`, on `chip`.
    pub fn decode_gds(chip: Chip, gds_op: u32) -> Option<FetchOp> {
        FetchOp::ALL
            .iter()
            .copied()
            .find(|op| op.is_gds() && op.opcode(chip).is_some_and(|code| code >> 8 == gds_op))
    }

    /// Whether the instruction is an operation of the global data share (a GDS clause's).
    pub fn is_gds(self) -> bool {
        matches!(
            self,
            FetchOp::GdsAddRet
                | FetchOp::GdsMinIntRet
                | FetchOp::GdsMaxIntRet
                | FetchOp::GdsMinUintRet
                | FetchOp::GdsMaxUintRet
                | FetchOp::GdsAndRet
                | FetchOp::GdsOrRet
                | FetchOp::GdsXorRet
                | FetchOp::GdsXchgRet
                | FetchOp::GdsCmpXchgRet
                | FetchOp::GdsReadRet
        )
    }

    /// The clause a fetch goes in on `chip`: TEX, VTX (Cayman has none: its vertex fetches go
    /// in TEX clauses) or GDS.
    pub fn clause(self, chip: Chip) -> CfOp {
        if self.is_gds() {
            CfOp::Gds
        } else if self.is_vertex_fetch() && chip != Chip::Cayman {
            CfOp::Vtx
        } else {
            CfOp::Tex
        }
    }

    /// Whether the instruction reads the other pixels of its quad: derivatives, and samples
    /// whose level of detail comes from them. A KILL moved across it would change what it
    /// reads.
    pub fn reads_quad(self) -> bool {
        matches!(
            self,
            FetchOp::GetGradientsH
                | FetchOp::GetGradientsV
                | FetchOp::GetGradientsHFine
                | FetchOp::GetGradientsVFine
                | FetchOp::GetLod
                | FetchOp::Sample
                | FetchOp::SampleLb
                | FetchOp::SampleC
                | FetchOp::SampleCLb
        )
    }

    /// Whether the instruction belongs in a VTX clause (or is a buffer fetch through the
    /// texture cache).
    pub fn is_vertex_fetch(self) -> bool {
        matches!(
            self,
            FetchOp::Vfetch
                | FetchOp::Semfetch
                | FetchOp::ReadScratch
                | FetchOp::ReadReduct
                | FetchOp::ReadMem
                | FetchOp::DsLocalWrite
                | FetchOp::DsLocalRead
                | FetchOp::GetBufferResinfo
        )
    }
}

impl std::fmt::Display for FetchOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.mnemonic())
    }
}

macro_rules! cf_ops {
    ($(($name:ident, $mnemonic:literal, $opcode:expr)),* $(,)?) => {
        /// A control-flow opcode. The ALU clause launches (`Alu*`) use the
        /// 4-bit field of the CF_ALU words, the others the CF_INST field.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum CfOp {
            $($name),*
        }

        const CF_OPS: &[(&str, [Option<u8>; 4])] = &[$(($mnemonic, $opcode)),*];

        impl CfOp {
            pub const ALL: &[CfOp] = &[$(CfOp::$name),*];
        }
    };
}

cf_ops! {
    (Nop, "NOP", [Some(0x00), Some(0x00), Some(0x00), Some(0x00)]),
    (Tex, "TEX", [Some(0x01), Some(0x01), Some(0x01), Some(0x01)]),
    (Vtx, "VTX", [Some(0x02), Some(0x02), Some(0x02), None]),
    (VtxTc, "VTX_TC", [Some(0x03), Some(0x03), None, None]),
    (Gds, "GDS", [None, None, Some(0x03), Some(0x03)]),
    (LoopStart, "LOOP_START", [Some(0x04), Some(0x04), Some(0x04), Some(0x04)]),
    (LoopEnd, "LOOP_END", [Some(0x05), Some(0x05), Some(0x05), Some(0x05)]),
    (LoopStartDx10, "LOOP_START_DX10", [Some(0x06), Some(0x06), Some(0x06), Some(0x06)]),
    (LoopStartNoAl, "LOOP_START_NO_AL", [Some(0x07), Some(0x07), Some(0x07), Some(0x07)]),
    (LoopContinue, "LOOP_CONTINUE", [Some(0x08), Some(0x08), Some(0x08), Some(0x08)]),
    (LoopBreak, "LOOP_BREAK", [Some(0x09), Some(0x09), Some(0x09), Some(0x09)]),
    (Jump, "JUMP", [Some(0x0A), Some(0x0A), Some(0x0A), Some(0x0A)]),
    (Push, "PUSH", [Some(0x0B), Some(0x0B), Some(0x0B), Some(0x0B)]),
    (Else, "ELSE", [Some(0x0D), Some(0x0D), Some(0x0D), Some(0x0D)]),
    (Pop, "POP", [Some(0x0E), Some(0x0E), Some(0x0E), Some(0x0E)]),
    (Call, "CALL", [Some(0x12), Some(0x12), Some(0x12), Some(0x12)]),
    (CallFs, "CALL_FS", [Some(0x13), Some(0x13), Some(0x13), Some(0x13)]),
    (Return, "RET", [Some(0x14), Some(0x14), Some(0x14), Some(0x14)]),
    (Kill, "KILL", [Some(0x18), Some(0x18), Some(0x18), Some(0x18)]),
    (WaitAck, "WAIT_ACK", [None, Some(0x1A), Some(0x1A), Some(0x1A)]),
    (CfEnd, "CF_END", [None, None, None, Some(0x20)]),
    (MemScratch, "MEM_SCRATCH", [Some(0x24), Some(0x24), Some(0x50), Some(0x50)]),
    (MemRat, "MEM_RAT", [None, None, Some(0x56), Some(0x56)]),
    (Export, "EXPORT", [Some(0x27), Some(0x27), Some(0x53), Some(0x53)]),
    (ExportDone, "EXPORT_DONE", [Some(0x28), Some(0x28), Some(0x54), Some(0x54)]),
    (Alu, "ALU", [Some(8), Some(8), Some(8), Some(8)]),
    (AluPushBefore, "ALU_PUSH_BEFORE", [Some(9), Some(9), Some(9), Some(9)]),
    (AluPopAfter, "ALU_POP_AFTER", [Some(10), Some(10), Some(10), Some(10)]),
    (AluPop2After, "ALU_POP2_AFTER", [Some(11), Some(11), Some(11), Some(11)]),
    (AluExtended, "ALU_EXT", [None, None, Some(12), Some(12)]),
    (AluContinue, "ALU_CONTINUE", [Some(13), Some(13), Some(13), None]),
    (AluBreak, "ALU_BREAK", [Some(14), Some(14), Some(14), None]),
    (AluElseAfter, "ALU_ELSE_AFTER", [Some(15), Some(15), Some(15), Some(15)]),
}

impl CfOp {
    pub fn mnemonic(self) -> &'static str {
        CF_OPS[self as usize].0
    }

    /// The opcode on `chip`, if the chip has it.
    pub fn opcode(self, chip: Chip) -> Option<u8> {
        CF_OPS[self as usize].1[chip.column()]
    }

    /// Whether the opcode launches an ALU clause (CF_ALU word layout).
    pub fn is_alu(self) -> bool {
        matches!(
            self,
            CfOp::Alu
                | CfOp::AluPushBefore
                | CfOp::AluPopAfter
                | CfOp::AluPop2After
                | CfOp::AluExtended
                | CfOp::AluContinue
                | CfOp::AluBreak
                | CfOp::AluElseAfter
        )
    }

    /// Whether the opcode uses the export/memory (CF_ALLOC_EXPORT) word layout.
    /// Whether the instruction's address is a CF instruction it may go to.
    pub fn has_target(self) -> bool {
        matches!(
            self,
            CfOp::Jump
                | CfOp::Else
                | CfOp::LoopStartDx10
                | CfOp::LoopEnd
                | CfOp::LoopBreak
                | CfOp::LoopContinue
                | CfOp::Call
        )
    }

    pub fn is_export(self) -> bool {
        matches!(
            self,
            CfOp::MemScratch | CfOp::MemRat | CfOp::Export | CfOp::ExportDone
        )
    }

    /// The opcode `chip` encodes as `opcode`, in the ALU-clause field (`alu`) or CF_INST.
    pub fn decode(chip: Chip, alu: bool, opcode: u8) -> Option<CfOp> {
        CfOp::ALL
            .iter()
            .copied()
            .find(|op| op.is_alu() == alu && op.opcode(chip) == Some(opcode))
    }
}

impl std::fmt::Display for CfOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.mnemonic())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_decodes_to_itself() {
        for chip in Chip::ALL {
            for &op in AluOpcode::ALL {
                if let Some(code) = op.opcode(chip) {
                    let decoded = if op.has(flag::LDS) {
                        AluOpcode::decode_lds(chip, code)
                    } else {
                        AluOpcode::decode(chip, op.is_op3(), code)
                    };
                    assert_eq!(decoded, Some(op), "{op} {chip:?}");
                }
            }
            for &op in FetchOp::ALL {
                if let Some(code) = op.opcode(chip) {
                    let decoded = if op.is_gds() {
                        FetchOp::decode_gds(chip, code >> 8)
                    } else {
                        FetchOp::decode(chip, op.is_vertex_fetch(), code)
                    };
                    assert_eq!(decoded, Some(op), "{op} {chip:?}");
                }
            }
            for &op in CfOp::ALL {
                if let Some(code) = op.opcode(chip) {
                    assert_eq!(
                        CfOp::decode(chip, op.is_alu(), code),
                        Some(op),
                        "{op} {chip:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn chips_lack_subgroups_and_only_the_early_ones_doubles() {
        for chip in Chip::ALL {
            assert!(chip.lacks_extension("GL_ARB_shader_ballot").is_some());
            let doubles = chip.lacks_extension("GL_ARB_gpu_shader_fp64");
            assert_eq!(doubles.is_none(), chip.is_evergreen_class(), "{chip:?}");
            assert_eq!(chip.lacks_extension("GL_ARB_gpu_shader5"), None);
        }
    }

    #[test]
    fn cayman_has_no_trans_slot_but_keeps_its_operations() {
        assert_eq!(AluOpcode::RecipIeee.slots(Chip::Cayman), Slots::Trans);
        assert_eq!(AluOpcode::MulloInt.slots(Chip::Cayman), Slots::Vec4);
        assert_eq!(AluOpcode::RecipInt.opcode(Chip::Cayman), None);
        assert_eq!(AluOpcode::FltToInt.slots(Chip::R700), Slots::Trans);
        assert_eq!(AluOpcode::FltToInt.slots(Chip::Evergreen), Slots::Vec);
    }
}
