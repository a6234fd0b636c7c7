//! The fields of the native 128-bit instruction, each declared once with its bits on Gen7/7.5
//! and on Gen8+ (the two layouts differ in the control and type fields, and Gen8 widens the
//! type fields to four bits). [`Bits::put`] and [`Bits::get`] read a declaration, so the
//! encoder and the decoder share every position, and an encoding error names the field.
//!
//! The parts: [`Header`] (every instruction), [`Align1`] (instructions of up to two sources,
//! control flow included), [`Imm`] and [`Jumps`] (an immediate or the jump offsets, in place
//! of source register fields) and [`ThreeSrc`] (the Align16 layout of 3-source instructions).

use crate::encoding::EncodingError;
use crate::isa::Gen;

/// One field of the instruction: its name and its bits `hi:lo` of the 128.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: &'static str,
    pub hi: u32,
    pub lo: u32,
}

impl Field {
    const fn new(name: &'static str, (hi, lo): (u32, u32)) -> Field {
        assert!(
            lo <= hi && hi < 128,
            "a field lies within the instruction's 128 bits"
        );
        Field { name, hi, lo }
    }

    pub fn width(self) -> u32 {
        self.hi - self.lo + 1
    }

    /// The field's bits, in place.
    pub fn mask(self) -> u128 {
        (u128::MAX >> (128 - self.width())) << self.lo
    }
}

/// The 128 bits of an instruction, read and written field by field.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bits(pub u128);

impl Bits {
    /// Writes `value` to `field`; a value wider than the field is an error naming it.
    pub fn put(&mut self, field: Field, value: impl Into<u64>) -> Result<(), EncodingError> {
        let value = u128::from(value.into());
        let width = field.width();
        if value >> width != 0 {
            return Err(EncodingError::new(format!(
                "{} = {value} does not fit its {width}-bit field",
                field.name
            )));
        }
        self.0 = self.0 & !field.mask() | value << field.lo;
        Ok(())
    }

    pub fn get(&self, field: Field) -> u64 {
        ((self.0 & field.mask()) >> field.lo) as u64
    }

    pub fn bit(&self, field: Field) -> bool {
        self.get(field) != 0
    }
}

/// A field's `(hi, lo)`: `[hi:lo]` or `[bit]` on every generation, or
/// `{ gen7 [..], gen8 [..] }` where Gen8 moved it.
macro_rules! position {
    ($gen8:ident; [$hi:literal : $lo:literal]) => {
        ($hi, $lo)
    };
    ($gen8:ident; [$bit:literal]) => {
        ($bit, $bit)
    };
    ($gen8:ident; { gen7 $gen7_at:tt, gen8 $gen8_at:tt }) => {
        if $gen8 {
            position!($gen8; $gen8_at)
        } else {
            position!($gen8; $gen7_at)
        }
    };
}

/// Declares parts of the instruction: a struct per part with a [`Field`] per declared field,
/// named as declared, and its tables for Gen7/7.5 and Gen8+.
macro_rules! parts {
    ($(
        $(#[$doc:meta])*
        struct $part:ident {
            $($(#[$field_doc:meta])* $name:ident: $at:tt,)+
        }
    )+) => {$(
        $(#[$doc])*
        pub(crate) struct $part {
            $($(#[$field_doc])* pub $name: Field,)+
        }

        impl $part {
            // A part laid out alike on every generation does not read `gen8`.
            #[allow(unused_variables)]
            const fn layout(gen8: bool) -> $part {
                $part {
                    $($name: Field::new(stringify!($name), position!(gen8; $at)),)+
                }
            }

            const GEN7: $part = $part::layout(false);
            const GEN8: $part = $part::layout(true);

            /// The part's fields on `hw`.
            pub fn of(hw: Gen) -> &'static $part {
                if hw.is_gen8_plus() {
                    &Self::GEN8
                } else {
                    &Self::GEN7
                }
            }

            /// Every field, in declaration order.
            #[cfg(test)]
            fn all(&self) -> Vec<Field> {
                vec![$(self.$name),+]
            }
        }
    )+};
}

parts! {
    /// The fields every instruction has.
    struct Header {
        opcode: [6:0],
        /// Set for Align16, the layout of 3-source instructions.
        access_mode: [8],
        /// WE_all.
        mask_all: { gen7 [9], gen8 [34] },
        /// Which group of four channels within the quarter (`nib_ctrl`) and which group of
        /// eight (`qtr_ctrl`) the instruction's first channel is.
        nib_ctrl: { gen7 [47], gen8 [11] },
        qtr_ctrl: [13:12],
        pred_control: [19:16],
        pred_inv: [20],
        /// log2 of the channel count.
        exec_size: [23:21],
        /// The conditional modifier, `math`'s function or a send's shared function.
        function: [27:24],
        acc_wr_ctrl: [28],
        /// Set in a compacted (64-bit) instruction.
        cmpt_ctrl: [29],
        saturate: [31],
    }

    /// The Align1 layout of instructions with up to two sources. Register numbers and
    /// subregisters (in bytes) are direct; a region is `<vstride;width,hstride>`.
    struct Align1 {
        flag_subreg: { gen7 [89], gen8 [32] },
        flag_reg: { gen7 [90], gen8 [33] },
        dst_file: { gen7 [33:32], gen8 [36:35] },
        dst_type: { gen7 [36:34], gen8 [40:37] },
        src0_file: { gen7 [38:37], gen8 [42:41] },
        src0_type: { gen7 [41:39], gen8 [46:43] },
        src1_file: { gen7 [43:42], gen8 [90:89] },
        src1_type: { gen7 [46:44], gen8 [94:91] },
        dst_subnr: [52:48],
        dst_nr: [60:53],
        dst_hstride: [62:61],
        src0_subnr: [68:64],
        src0_nr: [76:69],
        src0_abs: [77],
        src0_negate: [78],
        src0_hstride: [81:80],
        src0_width: [84:82],
        src0_vstride: [88:85],
        src1_subnr: [100:96],
        src1_nr: [108:101],
        src1_abs: [109],
        src1_negate: [110],
        src1_hstride: [113:112],
        src1_width: [116:114],
        src1_vstride: [120:117],
    }

    /// An immediate, the last source: its file and type fields say so, its value takes the
    /// place of source register fields (a 64-bit one, Gen8+, those of both sources).
    struct Imm {
        imm32: [127:96],
        imm64: [127:64],
    }

    /// The jump offsets of control flow: Gen8+ in bytes where a 32-bit immediate and source 0
    /// would be; Gen7 in 64-bit units, 16 bits each, where source 1's immediate would be.
    struct Jumps {
        jip: { gen7 [111:96], gen8 [127:96] },
        uip: { gen7 [127:112], gen8 [95:64] },
    }

    /// The Align16 layout of 3-source instructions: GRF operands at dword subregisters (the
    /// fields count dwords), one type for the three sources, a swizzle per source unless it
    /// is a replicated scalar (`rep_ctrl`), and a write mask.
    struct ThreeSrc {
        flag_subreg: { gen7 [33], gen8 [32] },
        flag_reg: { gen7 [34], gen8 [33] },
        src0_abs: { gen7 [36], gen8 [37] },
        src0_negate: { gen7 [37], gen8 [38] },
        src1_abs: { gen7 [38], gen8 [39] },
        src1_negate: { gen7 [39], gen8 [40] },
        src2_abs: { gen7 [40], gen8 [41] },
        src2_negate: { gen7 [41], gen8 [42] },
        src_type: { gen7 [43:42], gen8 [45:43] },
        dst_type: { gen7 [45:44], gen8 [48:46] },
        dst_writemask: [52:49],
        dst_subnr: [55:53],
        dst_nr: [63:56],
        src0_rep_ctrl: [64],
        src0_swizzle: [72:65],
        src0_subnr: [75:73],
        src0_nr: [83:76],
        src1_rep_ctrl: [85],
        src1_swizzle: [93:86],
        src1_subnr: [96:94],
        src1_nr: [104:97],
        src2_rep_ctrl: [106],
        src2_swizzle: [114:107],
        src2_subnr: [117:115],
        src2_nr: [125:118],
    }
}

/// The fields of one Align1 source register.
pub(crate) struct SrcFields {
    pub file: Field,
    pub ty: Field,
    pub subnr: Field,
    pub nr: Field,
    pub abs: Field,
    pub negate: Field,
    pub hstride: Field,
    pub width: Field,
    pub vstride: Field,
}

impl Align1 {
    /// Source `i` (0 or 1).
    pub fn src(&self, i: usize) -> SrcFields {
        if i == 0 {
            SrcFields {
                file: self.src0_file,
                ty: self.src0_type,
                subnr: self.src0_subnr,
                nr: self.src0_nr,
                abs: self.src0_abs,
                negate: self.src0_negate,
                hstride: self.src0_hstride,
                width: self.src0_width,
                vstride: self.src0_vstride,
            }
        } else {
            SrcFields {
                file: self.src1_file,
                ty: self.src1_type,
                subnr: self.src1_subnr,
                nr: self.src1_nr,
                abs: self.src1_abs,
                negate: self.src1_negate,
                hstride: self.src1_hstride,
                width: self.src1_width,
                vstride: self.src1_vstride,
            }
        }
    }
}

/// The fields of one 3-source operand.
pub(crate) struct ThreeSrcFields {
    pub abs: Field,
    pub negate: Field,
    pub rep_ctrl: Field,
    pub swizzle: Field,
    pub subnr: Field,
    pub nr: Field,
}

impl ThreeSrc {
    /// The three sources' fields.
    pub fn srcs(&self) -> [ThreeSrcFields; 3] {
        [
            ThreeSrcFields {
                abs: self.src0_abs,
                negate: self.src0_negate,
                rep_ctrl: self.src0_rep_ctrl,
                swizzle: self.src0_swizzle,
                subnr: self.src0_subnr,
                nr: self.src0_nr,
            },
            ThreeSrcFields {
                abs: self.src1_abs,
                negate: self.src1_negate,
                rep_ctrl: self.src1_rep_ctrl,
                swizzle: self.src1_swizzle,
                subnr: self.src1_subnr,
                nr: self.src1_nr,
            },
            ThreeSrcFields {
                abs: self.src2_abs,
                negate: self.src2_negate,
                rep_ctrl: self.src2_rep_ctrl,
                swizzle: self.src2_swizzle,
                subnr: self.src2_subnr,
                nr: self.src2_nr,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GENS: [Gen; 2] = [Gen::Gen7, Gen::Gen8];

    fn every_field(hw: Gen) -> Vec<Field> {
        [
            Header::of(hw).all(),
            Align1::of(hw).all(),
            Imm::of(hw).all(),
            Jumps::of(hw).all(),
            ThreeSrc::of(hw).all(),
        ]
        .concat()
    }

    /// The first two fields of `fields` that share a bit.
    fn overlap(fields: &[Field]) -> Option<(&'static str, &'static str)> {
        fields.iter().enumerate().find_map(|(i, a)| {
            fields[i + 1..]
                .iter()
                .find(|b| a.mask() & b.mask() != 0)
                .map(|b| (a.name, b.name))
        })
    }

    /// Every field holds its largest value and a pattern, reads them back, and leaves the
    /// other bits alone; a value one bit too wide is an error naming the field.
    #[test]
    fn every_field_round_trips() {
        for hw in GENS {
            for field in every_field(hw) {
                let max = u64::MAX >> (64 - field.width());
                for value in [max, 0x5555_5555_5555_5555 & max, 1] {
                    for background in [0, u128::MAX] {
                        let mut bits = Bits(background);
                        bits.put(field, value).unwrap();
                        assert_eq!(bits.get(field), value, "{hw:?} {}", field.name);
                        assert_eq!(bits.0 & !field.mask(), background & !field.mask());
                    }
                }
                if field.width() < 64 {
                    let err = Bits::default().put(field, max + 1).unwrap_err();
                    assert!(err.to_string().starts_with(field.name), "{err}");
                }
            }
        }
    }

    #[test]
    fn no_two_fields_of_a_layout_overlap() {
        for hw in GENS {
            let header = Header::of(hw).all();
            for part in [
                Align1::of(hw).all(),
                ThreeSrc::of(hw).all(),
                Jumps::of(hw).all(),
            ] {
                let layout = [header.clone(), part].concat();
                assert_eq!(overlap(&layout), None, "{hw:?}");
            }
        }
    }

    /// An immediate or a jump offset takes the place of source register fields only: never
    /// of the controls, the destination, or source 0's file and type, which say what it is.
    #[test]
    fn immediates_and_jumps_replace_only_source_registers() {
        for hw in GENS {
            let align1 = Align1::of(hw);
            let kept: Vec<Field> = Header::of(hw)
                .all()
                .into_iter()
                .chain(align1.all())
                .filter(|f| {
                    !f.name.starts_with("src") || [align1.src0_file, align1.src0_type].contains(f)
                })
                .collect();
            // Gen7 has no 64-bit immediates.
            let imm = Imm::of(hw)
                .all()
                .into_iter()
                .filter(|f| hw.is_gen8_plus() || f.name != "imm64");
            for field in imm.chain(Jumps::of(hw).all()) {
                assert_eq!(
                    overlap(&[kept.clone(), vec![field]].concat()),
                    None,
                    "{hw:?}"
                );
            }
        }
    }
}
