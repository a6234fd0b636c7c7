//! The opcode tables of shrew.
//!
//! This crate is data: one declarative list of ALU opcodes ([`alu`]) and one of intrinsics
//! ([`intrinsics`]). Everything that needs to know what an opcode is — the IR printer and parser,
//! the verifier, the interpreter, the constant folder, and the rule macro at expansion time —
//! reads these tables instead of keeping its own copy. It has no dependency on the engine so a
//! proc macro can depend on it.

pub mod alu;
pub mod eval;
pub mod intrinsics;

pub use alu::{Accuracy, AluOp, ConvFamily, Eval, OpInfo, Operand};
pub use intrinsics::{
    ACCESS_COHERENT, ACCESS_RESTRICT, ACCESS_VOLATILE, AtomicOp, DestShape, IndexKind, Intrinsic,
    IntrinsicInfo, MemClass, SrcShape,
};

/// The base type an opcode reads or writes. Values in the IR are untyped bags of bits; the
/// opcode says how to interpret them, as in NIR.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BaseType {
    Float,
    Int,
    Uint,
    Bool,
}

impl BaseType {
    pub fn name(self) -> &'static str {
        match self {
            BaseType::Float => "float",
            BaseType::Int => "int",
            BaseType::Uint => "uint",
            BaseType::Bool => "bool",
        }
    }

    /// The bit sizes a value of this base type may have.
    pub fn allowed_bit_sizes(self) -> &'static [u8] {
        match self {
            BaseType::Float => &[16, 32, 64],
            BaseType::Int | BaseType::Uint => &[1, 8, 16, 32, 64],
            BaseType::Bool => &[1],
        }
    }
}

/// Bit sizes a value may have.
pub const BIT_SIZES: [u8; 5] = [1, 8, 16, 32, 64];

/// Largest component count of a value (NIR allows vectors of 1–4, 8 and 16 components).
pub const MAX_COMPONENTS: usize = 16;

/// Whether `n` is a legal component count for a value.
pub fn is_valid_component_count(n: usize) -> bool {
    matches!(n, 1..=5 | 8 | 16)
}

/// Component letters: `xyzw` when every index is below 4, `a`–`p` otherwise.
pub const SWIZZLE_XYZW: &[u8; 4] = b"xyzw";
pub const SWIZZLE_WIDE: &[u8; 16] = b"abcdefghijklmnop";

/// Formats a swizzle as letters (`xyzw` style when possible).
pub fn swizzle_letters(swizzle: &[u8]) -> String {
    let letters: &[u8] = if swizzle.iter().all(|&c| c < 4) {
        SWIZZLE_XYZW
    } else {
        SWIZZLE_WIDE
    };
    swizzle
        .iter()
        .map(|&c| letters[c as usize] as char)
        .collect()
}

/// Parses swizzle letters; `None` when a letter is not a component name or the two alphabets
/// are mixed.
pub fn parse_swizzle(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_COMPONENTS {
        return None;
    }
    let alphabet: &[u8] = if bytes.iter().all(|b| SWIZZLE_XYZW.contains(b)) {
        SWIZZLE_XYZW
    } else {
        SWIZZLE_WIDE
    };
    bytes
        .iter()
        .map(|b| alphabet.iter().position(|a| a == b).map(|i| i as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swizzles_round_trip_in_both_alphabets() {
        for swz in [vec![0, 1, 2, 3], vec![3, 3, 0], vec![0, 5, 15], vec![4]] {
            assert_eq!(parse_swizzle(&swizzle_letters(&swz)).unwrap(), swz);
        }
        assert_eq!(swizzle_letters(&[0, 5]), "af");
        assert_eq!(parse_swizzle("xa"), None);
        assert_eq!(parse_swizzle("q"), None);
    }
}
