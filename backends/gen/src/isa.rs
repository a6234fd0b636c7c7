//! The Gen7–Gen9 execution unit as the encoder, the disassembler and the emulator see it:
//! generations, register files, data types, regions and hardware opcodes, with their encodings.

use std::fmt;

/// Bytes of scratch memory a thread can have: the per-thread scratch space field encodes powers
/// of two from 1 KiB to 2 MiB.
pub const MAX_SCRATCH_BYTES: u32 = 2 << 20;
/// The byte of a scratch message's header (a copy of g0) whose dword holds the thread's scratch
/// base, in bits 31:10.
pub const SCRATCH_BASE_BYTE: u32 = 5 * 4;

/// A hardware generation. Encodings differ between Gen7/7.5 and Gen8/9.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Gen {
    Gen7,
    Gen75,
    Gen8,
    Gen9,
}

impl Gen {
    /// Whether the Gen8+ instruction layout applies.
    pub fn is_gen8_plus(self) -> bool {
        self >= Gen::Gen8
    }
}

/// A register file as the 2-bit field encodes it (Gen7+ has no MRF).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegFile {
    /// Architecture registers: null, address, accumulator, flags… (the register number's high
    /// nibble says which).
    Arf,
    Grf,
}

/// The ARF register numbers the backend uses.
pub const ARF_NULL: u8 = 0x00;
pub const ARF_ADDRESS: u8 = 0x10;
pub const ARF_ACCUMULATOR: u8 = 0x20;
pub const ARF_FLAG: u8 = 0x30;
/// The notification count register n0, which `wait` blocks on (a barrier's gateway signals it).
pub const ARF_NOTIFICATION: u8 = 0x90;

/// An operand's data type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    UD,
    D,
    UW,
    W,
    UB,
    B,
    DF,
    F,
    UQ,
    Q,
    HF,
    /// Immediate only: eight unsigned 4-bit integers.
    UV,
    /// Immediate only: four 8-bit restricted floats.
    VF,
    /// Immediate only: eight signed 4-bit integers.
    V,
}

impl Type {
    pub const ALL: [Type; 14] = [
        Type::UD,
        Type::D,
        Type::UW,
        Type::W,
        Type::UB,
        Type::B,
        Type::DF,
        Type::F,
        Type::UQ,
        Type::Q,
        Type::HF,
        Type::UV,
        Type::VF,
        Type::V,
    ];

    /// Whether elements are floating point (the packed VF immediate is not a register type).
    #[inline]
    pub fn is_float(self) -> bool {
        matches!(self, Type::F | Type::DF | Type::HF)
    }

    /// Size of one element in bytes (the packed vector immediates count as 4).
    #[inline]
    pub fn size(self) -> u8 {
        match self {
            Type::UB | Type::B => 1,
            Type::UW | Type::W | Type::HF => 2,
            Type::UD | Type::D | Type::F | Type::UV | Type::VF | Type::V => 4,
            Type::DF | Type::UQ | Type::Q => 8,
        }
    }

    /// The register-operand encoding on `hw`; `None` when registers of this type do not exist
    /// there.
    pub fn reg_code(self, hw: Gen) -> Option<u8> {
        match self {
            Type::UD => Some(0),
            Type::D => Some(1),
            Type::UW => Some(2),
            Type::W => Some(3),
            Type::UB => Some(4),
            Type::B => Some(5),
            Type::DF => Some(6),
            Type::F => Some(7),
            Type::UQ if hw.is_gen8_plus() => Some(8),
            Type::Q if hw.is_gen8_plus() => Some(9),
            Type::HF if hw.is_gen8_plus() => Some(10),
            _ => None,
        }
    }

    /// The immediate encoding on `hw`; `None` when no immediate of this type exists there.
    pub fn imm_code(self, hw: Gen) -> Option<u8> {
        match self {
            Type::UD => Some(0),
            Type::D => Some(1),
            Type::UW => Some(2),
            Type::W => Some(3),
            Type::UV => Some(4),
            Type::VF => Some(5),
            Type::V => Some(6),
            Type::F => Some(7),
            Type::UQ if hw.is_gen8_plus() => Some(8),
            Type::Q if hw.is_gen8_plus() => Some(9),
            Type::DF if hw.is_gen8_plus() => Some(10),
            Type::HF if hw.is_gen8_plus() => Some(11),
            _ => None,
        }
    }

    pub fn from_reg_code(code: u8, hw: Gen) -> Option<Type> {
        Type::ALL.into_iter().find(|t| t.reg_code(hw) == Some(code))
    }

    pub fn from_imm_code(code: u8, hw: Gen) -> Option<Type> {
        Type::ALL.into_iter().find(|t| t.imm_code(hw) == Some(code))
    }

    /// The one type field of 3-source instructions: F, D, UD, DF, and HF on Gen8+.
    pub fn three_src_code(self, hw: Gen) -> Option<u8> {
        match self {
            Type::F => Some(0),
            Type::D => Some(1),
            Type::UD => Some(2),
            Type::DF => Some(3),
            Type::HF if hw.is_gen8_plus() => Some(4),
            _ => None,
        }
    }

    pub fn from_three_src_code(code: u8, hw: Gen) -> Option<Type> {
        Type::ALL
            .into_iter()
            .find(|t| t.three_src_code(hw) == Some(code))
    }

    /// The disassembler's suffix.
    pub fn name(self) -> &'static str {
        match self {
            Type::UD => "UD",
            Type::D => "D",
            Type::UW => "UW",
            Type::W => "W",
            Type::UB => "UB",
            Type::B => "B",
            Type::DF => "DF",
            Type::F => "F",
            Type::UQ => "UQ",
            Type::Q => "Q",
            Type::HF => "HF",
            Type::UV => "UV",
            Type::VF => "VF",
            Type::V => "V",
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The value of a "restricted float", an element of a VF immediate: sign, 3-bit exponent (bias
/// 3), 4-bit mantissa.
pub fn restricted_float(byte: u8) -> f32 {
    if byte & 0x7F == 0 {
        return if byte & 0x80 != 0 { -0.0 } else { 0.0 };
    }
    let exponent = ((byte >> 4) & 7) as i32 - 3;
    let value = (1.0 + (byte & 0xF) as f32 / 16.0) * 2f32.powi(exponent);
    if byte & 0x80 != 0 { -value } else { value }
}

/// An Align1 source region `<vstride; width, hstride>`, in elements. `vstride` of `None` is
/// VxH (indirect rows).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    pub vstride: Option<u8>,
    pub width: u8,
    pub hstride: u8,
}

impl Region {
    /// One element for every channel: `<0;1,0>`.
    pub const SCALAR: Region = Region::new(0, 1, 0);

    /// A SIMD4x2 vertex's dword, the same for its four channels: `<4;4,0>` (channels 0-3 read
    /// the first element, 4-7 the one four dwords on).
    pub const PER_VERTEX: Region = Region::new(4, 4, 0);

    /// One dword of each SIMD4x2 vertex, for a 2-channel instruction: `<4;1,0>` (channel 0
    /// reads the first element, channel 1 the one four dwords on).
    pub const EACH_VERTEX: Region = Region::new(4, 1, 0);

    pub const fn new(vstride: u8, width: u8, hstride: u8) -> Region {
        Region {
            vstride: Some(vstride),
            width,
            hstride,
        }
    }

    /// One element of `ty` per channel, contiguous, in rows of one GRF: `<8;8,1>`, or `<4;4,1>`
    /// for 64-bit types.
    pub fn packed(ty: Type) -> Region {
        if ty.size() == 8 {
            Region::new(4, 4, 1)
        } else {
            Region::new(8, 8, 1)
        }
    }

    /// The element (counted in the operand's type from its start) that channel `i` reads or
    /// writes: rows of `width` elements `hstride` apart, the rows `vstride` apart. The widths
    /// encodable are powers of two, which take a shift rather than a division (the emulator
    /// computes this per channel).
    #[inline]
    pub fn element(self, i: u32) -> u32 {
        let (v, w, h) = (
            self.vstride.unwrap_or(0) as u32,
            self.width.max(1) as u32,
            self.hstride as u32,
        );
        if w.is_power_of_two() {
            (i >> w.trailing_zeros()) * v + (i & (w - 1)) * h
        } else {
            (i / w) * v + (i % w) * h
        }
    }

    /// Whether every channel reads the same element.
    pub fn is_scalar(self) -> bool {
        self.vstride == Some(0) && self.hstride == 0
    }

    /// The 4-bit vertical-stride code: 0, 1, 2, 4 … 32 as 0–6, VxH as 0xF.
    pub fn vstride_code(self) -> Option<u8> {
        match self.vstride {
            None => Some(0xF),
            Some(0) => Some(0),
            Some(v) if v.is_power_of_two() && v <= 32 => Some(v.trailing_zeros() as u8 + 1),
            Some(_) => None,
        }
    }

    /// The 3-bit width code: log2 of 1–16.
    pub fn width_code(self) -> Option<u8> {
        (self.width.is_power_of_two() && self.width <= 16)
            .then(|| self.width.trailing_zeros() as u8)
    }

    pub fn from_codes(vstride: u8, width: u8, hstride: u8) -> Option<Region> {
        let vstride = match vstride {
            0xF => None,
            0 => Some(0),
            1..=6 => Some(1 << (vstride - 1)),
            _ => return None,
        };
        if width > 4 {
            return None;
        }
        Some(Region {
            vstride,
            width: 1 << width,
            hstride: hstride_from_code(hstride),
        })
    }
}

/// The 2-bit horizontal-stride code: 0, 1, 2, 4 as 0–3.
pub fn hstride_code(hstride: u8) -> Option<u8> {
    match hstride {
        0 => Some(0),
        1 => Some(1),
        2 => Some(2),
        4 => Some(3),
        _ => None,
    }
}

pub fn hstride_from_code(code: u8) -> u8 {
    match code {
        0 => 0,
        3 => 4,
        c => c,
    }
}

macro_rules! opcodes {
    ($($name:ident $text:literal $code:literal $srcs:literal;)*) => {
        /// A hardware opcode (Gen7–Gen9 numbering).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Opcode {
            $($name,)*
        }

        impl Opcode {
            pub const ALL: &[Opcode] = &[$(Opcode::$name,)*];

            /// The 7-bit opcode field.
            pub fn code(self) -> u8 {
                match self {
                    $(Opcode::$name => $code,)*
                }
            }

            /// The mnemonic.
            pub fn name(self) -> &'static str {
                match self {
                    $(Opcode::$name => $text,)*
                }
            }

            /// Register or immediate sources (control flow has none: it carries jump offsets; a
            /// send's second source is its descriptor).
            pub fn num_srcs(self) -> usize {
                match self {
                    $(Opcode::$name => $srcs,)*
                }
            }
        }
    };
}

opcodes! {
    Mov "mov" 0x01 1;
    Sel "sel" 0x02 2;
    Not "not" 0x04 1;
    And "and" 0x05 2;
    Or "or" 0x06 2;
    Xor "xor" 0x07 2;
    Shr "shr" 0x08 2;
    Shl "shl" 0x09 2;
    Asr "asr" 0x0c 2;
    Cmp "cmp" 0x10 2;
    Cmpn "cmpn" 0x11 2;
    F32to16 "f32to16" 0x13 1;
    F16to32 "f16to32" 0x14 1;
    Bfrev "bfrev" 0x17 1;
    Bfe "bfe" 0x18 3;
    Bfi1 "bfi1" 0x19 2;
    Bfi2 "bfi2" 0x1a 3;
    Jmpi "jmpi" 0x20 0;
    If "if" 0x22 0;
    Else "else" 0x24 0;
    Endif "endif" 0x25 0;
    While "while" 0x27 0;
    Break "break" 0x28 0;
    Cont "cont" 0x29 0;
    Halt "halt" 0x2a 0;
    Call "call" 0x2c 1;
    Ret "ret" 0x2d 1;
    Wait "wait" 0x30 1;
    Send "send" 0x31 2;
    Sendc "sendc" 0x32 2;
    Math "math" 0x38 2;
    Add "add" 0x40 2;
    Mul "mul" 0x41 2;
    Avg "avg" 0x42 2;
    Frc "frc" 0x43 1;
    Rndu "rndu" 0x44 1;
    Rndd "rndd" 0x45 1;
    Rnde "rnde" 0x46 1;
    Rndz "rndz" 0x47 1;
    Mac "mac" 0x48 2;
    Mach "mach" 0x49 2;
    Lzd "lzd" 0x4a 1;
    Fbh "fbh" 0x4b 1;
    Fbl "fbl" 0x4c 1;
    Cbit "cbit" 0x4d 1;
    Addc "addc" 0x4e 2;
    Subb "subb" 0x4f 2;
    Pln "pln" 0x5a 2;
    Mad "mad" 0x5b 3;
    Lrp "lrp" 0x5c 3;
    Nop "nop" 0x7e 0;
}

impl Opcode {
    pub fn from_code(code: u8) -> Option<Opcode> {
        Opcode::ALL.iter().copied().find(|o| o.code() == code)
    }

    /// Control-flow instructions: they carry JIP (and UIP) instead of sources.
    pub fn is_control_flow(self) -> bool {
        matches!(
            self,
            Opcode::Jmpi
                | Opcode::If
                | Opcode::Else
                | Opcode::Endif
                | Opcode::While
                | Opcode::Break
                | Opcode::Cont
                | Opcode::Halt
        )
    }

    /// Whether the instruction has an update point (UIP) besides its join point (JIP).
    pub fn has_uip(self, hw: Gen) -> bool {
        match self {
            Opcode::If | Opcode::Break | Opcode::Cont | Opcode::Halt => true,
            Opcode::Else => hw.is_gen8_plus(),
            _ => false,
        }
    }

    pub fn is_send(self) -> bool {
        matches!(self, Opcode::Send | Opcode::Sendc)
    }
}

/// The 4-bit conditional modifier.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CondMod {
    Z,
    Nz,
    G,
    Ge,
    L,
    Le,
    O,
    U,
}

impl CondMod {
    pub const ALL: [CondMod; 8] = [
        CondMod::Z,
        CondMod::Nz,
        CondMod::G,
        CondMod::Ge,
        CondMod::L,
        CondMod::Le,
        CondMod::O,
        CondMod::U,
    ];

    pub fn code(self) -> u8 {
        match self {
            CondMod::Z => 1,
            CondMod::Nz => 2,
            CondMod::G => 3,
            CondMod::Ge => 4,
            CondMod::L => 5,
            CondMod::Le => 6,
            CondMod::O => 8,
            CondMod::U => 9,
        }
    }

    pub fn from_code(code: u8) -> Option<CondMod> {
        CondMod::ALL.into_iter().find(|c| c.code() == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            CondMod::Z => "z",
            CondMod::Nz => "nz",
            CondMod::G => "g",
            CondMod::Ge => "ge",
            CondMod::L => "l",
            CondMod::Le => "le",
            CondMod::O => "o",
            CondMod::U => "u",
        }
    }
}

/// The extended-math function, in the conditional-modifier field of `math`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Inv,
    Log,
    Exp,
    Sqrt,
    Rsq,
    Sin,
    Cos,
    Fdiv,
    Pow,
    IntDivMod,
    IntDiv,
    IntMod,
}

impl MathFn {
    pub const ALL: [MathFn; 12] = [
        MathFn::Inv,
        MathFn::Log,
        MathFn::Exp,
        MathFn::Sqrt,
        MathFn::Rsq,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Fdiv,
        MathFn::Pow,
        MathFn::IntDivMod,
        MathFn::IntDiv,
        MathFn::IntMod,
    ];

    pub fn code(self) -> u8 {
        match self {
            MathFn::Inv => 1,
            MathFn::Log => 2,
            MathFn::Exp => 3,
            MathFn::Sqrt => 4,
            MathFn::Rsq => 5,
            MathFn::Sin => 6,
            MathFn::Cos => 7,
            MathFn::Fdiv => 9,
            MathFn::Pow => 10,
            MathFn::IntDivMod => 11,
            MathFn::IntDiv => 12,
            MathFn::IntMod => 13,
        }
    }

    pub fn from_code(code: u8) -> Option<MathFn> {
        MathFn::ALL.into_iter().find(|m| m.code() == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            MathFn::Inv => "inv",
            MathFn::Log => "log",
            MathFn::Exp => "exp",
            MathFn::Sqrt => "sqrt",
            MathFn::Rsq => "rsq",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Fdiv => "fdiv",
            MathFn::Pow => "pow",
            MathFn::IntDivMod => "intdivmod",
            MathFn::IntDiv => "intdiv",
            MathFn::IntMod => "intmod",
        }
    }
}
