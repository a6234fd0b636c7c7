//! The fields of the native 128-bit instruction and of a send's 32-bit message descriptor, each
//! declared once with its bits on Gen7/7.5 and on Gen8+ (the instruction's layouts differ in
//! the control and type fields, and Gen8 widens the type fields to four bits). [`Bits::put`]
//! and [`Bits::get`] read a declaration, so the encoder and the decoder share every position,
//! and an encoding error names the field; [`Descriptor`] does the same for descriptors, which
//! lowering builds and the emulator, the performance model and the disassembler read.
//!
//! The instruction's parts: [`Header`] (every instruction), [`Align1`] (instructions of up to
//! two sources, control flow included), [`Imm`] and [`Jumps`] (an immediate or the jump
//! offsets, in place of source register fields) and [`ThreeSrc`] (the Align16 layout of
//! 3-source instructions). The descriptor's parts are in [`desc`]: the fields every message
//! has, then those of each shared function and message.

use crate::encoding::EncodingError;
use crate::isa::Gen;

/// One field of the instruction or of a descriptor: its name and its bits `hi:lo` of the
/// 128 or the 32.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: &'static str,
    pub hi: u32,
    pub lo: u32,
}

impl Field {
    /// A field of a word of `bits` bits.
    const fn new(name: &'static str, (hi, lo): (u32, u32), bits: u32) -> Field {
        assert!(lo <= hi && hi < bits, "a field lies within its word");
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

/// A send's 32-bit message descriptor, read and written field by field (the fields of
/// [`desc`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Descriptor(pub u32);

impl Descriptor {
    /// The descriptor with `fields` set to their values; a value wider than its field is an
    /// error naming it.
    pub fn build(fields: &[(Field, u32)]) -> Result<Descriptor, EncodingError> {
        let mut bits = Bits::default();
        for &(field, value) in fields {
            bits.put(field, value)?;
        }
        Ok(Descriptor(bits.0 as u32))
    }

    pub fn get(self, field: Field) -> u32 {
        Bits(self.0.into()).get(field) as u32
    }

    pub fn bit(self, field: Field) -> bool {
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

/// Declares parts of a word of `$bits` bits (the instruction or the descriptor): a struct per
/// part with a [`Field`] per declared field, named as declared, and its tables for Gen7/7.5
/// and Gen8+.
macro_rules! parts {
    (within $bits:literal; $(
        $(#[$doc:meta])*
        struct $part:ident {
            $($(#[$field_doc:meta])* $name:ident: $at:tt,)+
        }
    )+) => {$(
        $(#[$doc])*
        #[derive(Debug, PartialEq, Eq)]
        pub(crate) struct $part {
            $($(#[$field_doc])* pub $name: Field,)+
        }

        impl $part {
            // A part laid out alike on every generation does not read `gen8`.
            #[allow(unused_variables)]
            const fn layout(gen8: bool) -> $part {
                $part {
                    $($name: Field::new(stringify!($name), position!(gen8; $at), $bits),)+
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
            pub(crate) fn all(&self) -> Vec<Field> {
                vec![$(self.$name),+]
            }
        }
    )+};
}

parts! {
    within 128;

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

/// The fields of a send's message descriptor (the immediate second source of `send` and
/// `sendc`): those every message has ([`Send`]), then each shared function's and each
/// message's own. Gen7.5 lays out every message it shares with Gen7 alike, so the Gen7 table
/// serves both; the message types and codes the backend uses are named beside their fields.
pub(crate) mod desc {
    use super::{Descriptor, Field};
    use crate::isa::Gen;

    parts! {
        within 32;

        /// The fields every message has, alike on Gen7–9: the end of the thread (the
        /// instruction's bit 127), the lengths in GRFs of the payload and of the response,
        /// and whether the payload starts with a header GRF.
        struct Send {
            eot: [31],
            mlen: [28:25],
            rlen: [24:20],
            header_present: [19],
        }

        /// The binding table index of the surface a sampler or data-port message addresses.
        struct Surface {
            binding_table_index: [7:0],
        }

        /// The sampler (SFID 2), Gen7–9: the SIMD mode, the message type (five bits; Gen9's
        /// messages for an LOD of zero are 24–26) and the sampler state's index.
        struct Sampler {
            simd_mode: [18:17],
            message_type: [16:12],
            sampler_index: [11:8],
        }

        /// The data cache (SFID 10; data cache 0 from Gen7.5 on), Gen7–9. Bit 18 is the
        /// category: 0 for the messages bits 17:14 type (four bits, every type below 16; a
        /// decoder that reads Gen8's five-bit type 18:14 reads the same values), 1 for the
        /// scratch block messages, whose own fields ([`Scratch`]) take bits 17:0.
        struct DataCache {
            category: [18],
            message_type: [17:14],
        }

        /// Data cache 1 (SFID 12, Gen7.5+; Gen7 has none), which takes the untyped surface
        /// messages from Gen7.5 on: a four-bit message type on Gen7.5, five bits on Gen8+
        /// (Gen8's A64 messages are 16 and up).
        struct DataCache1 {
            message_type: { gen7 [17:14], gen8 [18:14] },
        }

        /// The render cache (SFID 5), Gen7–9: the message type, four bits.
        struct RenderCache {
            message_type: [17:14],
        }

        /// Untyped surface read and write (Gen7's data cache messages 5 and 13, Gen7.5+'s data
        /// cache 1 messages 1 and 9): the SIMD mode and the components not read or written at
        /// each address (bit 0 x … bit 3 w).
        struct UntypedSurface {
            simd_mode: [13:12],
            disabled_channels: [11:8],
        }

        /// Untyped atomic operation (Gen7's data cache message 6, Gen7.5+'s data cache 1
        /// message 2): whether the old values come back, SIMD8 (else SIMD16), the operation.
        struct UntypedAtomic {
            return_data: [13],
            simd8: [12],
            operation: [11:8],
        }

        /// Typed surface read and write (Gen7's render cache messages 5 and 13, Gen7.5+'s data
        /// cache 1 messages 5 and 13), eight channels a message: which eight of the thread's
        /// (the slot group: 1 the low eight, 2 the high eight) and the components not read or
        /// written (bit 0 red … bit 3 alpha).
        struct TypedSurface {
            slot_group: [13:12],
            disabled_channels: [11:8],
        }

        /// Typed atomic operation (Gen7's render cache message 6, Gen7.5+'s data cache 1
        /// message 6), eight channels a message: whether the old values come back, whether
        /// the channels are the thread's high eight, the operation.
        struct TypedAtomic {
            return_data: [13],
            high_slots: [12],
            operation: [11:8],
        }

        /// DWord scattered read and write (data cache messages 3 and 11): the block size.
        struct DwordScattered {
            block_size: [9:8],
        }

        /// Scratch block read and write (data cache category 1), Gen7–9: write (else read),
        /// log2 of the GRFs moved, and the offset in GRFs from the thread's scratch base (the
        /// header's dword 5). Bit 16 is the channel mode (0 OWord, as here) and bit 15
        /// invalidates after a read.
        struct Scratch {
            write: [17],
            block_size: [13:12],
            offset: [11:0],
        }

        /// Render-target write (render cache message 12), Gen7–9: the thread's last render
        /// target, the slot group (1: the message's pixels are the second 16 of a SIMD32
        /// dispatch) and the subtype (0 SIMD16, 1 SIMD16 replicated, 2 and 3 SIMD8 dual
        /// source low and high, 4 SIMD8).
        struct RenderTargetWrite {
            last_render_target: [12],
            slot_group: [11],
            subtype: [10:8],
        }

        /// The URB (SFID 6): the offset in 128-bit units from each channel's (or vertex's)
        /// URB handle (the header holds the handles), the opcode, three bits on Gen7/7.5 and
        /// four on Gen8+, whose SIMD8 write is opcode 7, and Gen7's swizzle control (1:
        /// interleave, SIMD4x2 writes whose GRFs each hold a slot of both vertices).
        struct Urb {
            global_offset: { gen7 [13:3], gen8 [14:4] },
            opcode: { gen7 [2:0], gen8 [3:0] },
            swizzle_control: [15],
        }

        /// The message gateway (SFID 3): the sub-function.
        struct Gateway {
            subfunction: [2:0],
        }

        /// The thread spawner (SFID 7): the resource select (1: the fixed-function unit frees
        /// the thread's resources itself).
        struct ThreadSpawner {
            resource_select: [4],
        }
    }

    impl Send {
        /// The fields, alike on every generation.
        pub const FIELDS: Send = Send::GEN7;
    }

    impl Sampler {
        pub const SFID: u8 = 2;
        pub const SIMD8: u32 = 1;
        pub const SIMD16: u32 = 2;
        /// The SIMD modes' names, by their code.
        pub const SIMD_NAMES: [&'static str; 4] = ["SIMD4x2", "SIMD8", "SIMD16", "SIMD32/64"];
    }

    impl DataCache {
        pub const SFID: u8 = 10;
        pub const SCRATCH_CATEGORY: u32 = 1;
        pub const DWORD_SCATTERED_READ: u32 = 3;
        pub const MEMORY_FENCE: u32 = 7;
        pub const DWORD_SCATTERED_WRITE: u32 = 11;
    }

    impl DataCache1 {
        pub const SFID: u8 = 12;
    }

    impl RenderCache {
        pub const SFID: u8 = 5;
        pub const RENDER_TARGET_WRITE: u32 = 12;
    }

    impl UntypedSurface {
        pub const SIMD16: u32 = 1;
        pub const SIMD8: u32 = 2;
        /// The SIMD modes' names, by their code.
        pub const SIMD_NAMES: [&'static str; 4] = ["SIMD4x2", "SIMD16", "SIMD8", "SIMD4x2"];
    }

    impl DwordScattered {
        /// The block sizes of 8 and 16 dwords: one per channel of SIMD8 and SIMD16.
        pub const SIMD8: u32 = 2;
        pub const SIMD16: u32 = 3;
    }

    impl RenderTargetWrite {
        pub const SIMD16: u32 = 0;
        pub const SIMD8: u32 = 4;
        /// The subtypes' names, by their code.
        pub const SUBTYPE_NAMES: [&'static str; 5] = [
            "SIMD16",
            "SIMD16 replicated",
            "SIMD8 dual source low",
            "SIMD8 dual source high",
            "SIMD8",
        ];
    }

    impl Urb {
        pub const SFID: u8 = 6;
        pub const WRITE_HWORD: u32 = 0;
        /// The swizzle control of SIMD4x2 writes: vertex 0 in each GRF's low half, vertex 1
        /// in its high half.
        pub const INTERLEAVE: u32 = 1;
        /// Gen8+.
        pub const SIMD8_WRITE: u32 = 7;
        /// Gen8+.
        pub const SIMD8_READ: u32 = 8;
    }

    impl Gateway {
        pub const SFID: u8 = 3;
        pub const BARRIER: u32 = 4;
    }

    impl ThreadSpawner {
        pub const SFID: u8 = 7;
    }

    /// Where the untyped surface messages go on a generation: the shared function, its
    /// message type field and the read, write and atomic operation's types.
    pub(crate) struct UntypedPort {
        pub sfid: u8,
        pub message_type: Field,
        pub read: u32,
        pub write: u32,
        pub atomic: u32,
    }

    impl UntypedPort {
        /// Gen7's data cache (messages 5, 13, 6) or Gen7.5+'s data cache 1 (1, 9, 2).
        pub fn of(hw: Gen) -> UntypedPort {
            if hw >= Gen::Gen75 {
                UntypedPort {
                    sfid: DataCache1::SFID,
                    message_type: DataCache1::of(hw).message_type,
                    read: 1,
                    write: 9,
                    atomic: 2,
                }
            } else {
                UntypedPort {
                    sfid: DataCache::SFID,
                    message_type: DataCache::of(hw).message_type,
                    read: 5,
                    write: 13,
                    atomic: 6,
                }
            }
        }
    }

    /// Where the typed surface messages go on a generation: the shared function and the
    /// read, write and atomic operation messages' types.
    pub(crate) struct TypedPort {
        pub sfid: u8,
        pub read: u32,
        pub write: u32,
        pub atomic: u32,
    }

    impl TypedPort {
        /// Gen7's render cache or Gen7.5+'s data cache 1, messages 5, 13 and 6 on both.
        pub fn of(hw: Gen) -> TypedPort {
            let sfid = if hw >= Gen::Gen75 {
                DataCache1::SFID
            } else {
                RenderCache::SFID
            };
            TypedPort {
                sfid,
                read: 5,
                write: 13,
                atomic: 6,
            }
        }
    }

    impl TypedSurface {
        /// The slot groups of channels 0-7 and 8-15.
        pub const LOW: u32 = 1;
        pub const HIGH: u32 = 2;
    }

    /// The message type of a data-port message to `sfid`: `None` for the other shared
    /// functions and for the data cache's scratch block messages, which have none.
    pub fn data_port_message_type(sfid: u8, desc: Descriptor, hw: Gen) -> Option<u32> {
        match sfid {
            DataCache::SFID => {
                let dc = DataCache::of(hw);
                (desc.get(dc.category) != DataCache::SCRATCH_CATEGORY)
                    .then(|| desc.get(dc.message_type))
            }
            DataCache1::SFID => Some(desc.get(DataCache1::of(hw).message_type)),
            RenderCache::SFID => Some(desc.get(RenderCache::of(hw).message_type)),
            _ => None,
        }
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

    /// Every message the backend sends, by name, with its descriptor's fields: those every
    /// message has, then the shared function's and the message's own.
    fn message_layouts(hw: Gen) -> Vec<(&'static str, Vec<Field>)> {
        let with = |parts: &[Vec<Field>]| [desc::Send::of(hw).all(), parts.concat()].concat();
        let surface = desc::Surface::of(hw).all();
        let data_cache = desc::DataCache::of(hw);
        let untyped = desc::UntypedPort::of(hw);
        let untyped_type = if untyped.sfid == desc::DataCache::SFID {
            data_cache.all()
        } else {
            desc::DataCache1::of(hw).all()
        };
        vec![
            (
                "sample",
                with(&[surface.clone(), desc::Sampler::of(hw).all()]),
            ),
            (
                "untyped surface read or write",
                with(&[
                    surface.clone(),
                    untyped_type.clone(),
                    desc::UntypedSurface::of(hw).all(),
                ]),
            ),
            (
                "untyped atomic",
                with(&[
                    surface.clone(),
                    untyped_type,
                    desc::UntypedAtomic::of(hw).all(),
                ]),
            ),
            (
                "dword scattered read or write",
                with(&[
                    surface.clone(),
                    data_cache.all(),
                    desc::DwordScattered::of(hw).all(),
                ]),
            ),
            (
                "typed surface read or write",
                with(&[
                    surface.clone(),
                    match desc::TypedPort::of(hw).sfid {
                        desc::RenderCache::SFID => desc::RenderCache::of(hw).all(),
                        _ => desc::DataCache1::of(hw).all(),
                    },
                    desc::TypedSurface::of(hw).all(),
                ]),
            ),
            (
                "typed atomic",
                with(&[
                    surface.clone(),
                    match desc::TypedPort::of(hw).sfid {
                        desc::RenderCache::SFID => desc::RenderCache::of(hw).all(),
                        _ => desc::DataCache1::of(hw).all(),
                    },
                    desc::TypedAtomic::of(hw).all(),
                ]),
            ),
            ("memory fence", with(&[surface.clone(), data_cache.all()])),
            (
                "scratch block read or write",
                with(&[vec![data_cache.category], desc::Scratch::of(hw).all()]),
            ),
            (
                "render-target write",
                with(&[
                    surface,
                    desc::RenderCache::of(hw).all(),
                    desc::RenderTargetWrite::of(hw).all(),
                ]),
            ),
            ("URB write", with(&[desc::Urb::of(hw).all()])),
            ("barrier", with(&[desc::Gateway::of(hw).all()])),
            ("end of thread", with(&[desc::ThreadSpawner::of(hw).all()])),
        ]
    }

    const MESSAGE_GENS: [Gen; 4] = [Gen::Gen7, Gen::Gen75, Gen::Gen8, Gen::Gen9];

    /// Every descriptor field of every message holds its largest value, a pattern and 1 with
    /// the message's other fields full or empty, and reads them back; a value one bit too wide
    /// is an error naming the field.
    #[test]
    fn every_descriptor_field_round_trips() {
        for hw in MESSAGE_GENS {
            for (message, fields) in message_layouts(hw) {
                let max = |f: Field| u32::MAX >> (32 - f.width());
                for (i, &field) in fields.iter().enumerate() {
                    for value in [max(field), 0x5555_5555 & max(field), 1] {
                        for others_full in [false, true] {
                            let setting: Vec<(Field, u32)> = fields
                                .iter()
                                .enumerate()
                                .map(|(k, &f)| match (k == i, others_full) {
                                    (true, _) => (f, value),
                                    (false, true) => (f, max(f)),
                                    (false, false) => (f, 0),
                                })
                                .collect();
                            let desc = Descriptor::build(&setting).unwrap();
                            for (f, v) in setting {
                                assert_eq!(desc.get(f), v, "{hw:?} {message}: {}", f.name);
                            }
                        }
                    }
                    let err = Descriptor::build(&[(field, max(field) + 1)]).unwrap_err();
                    assert!(err.to_string().starts_with(field.name), "{err}");
                }
            }
        }
    }

    #[test]
    fn no_two_fields_of_a_message_overlap() {
        for hw in MESSAGE_GENS {
            for (message, fields) in message_layouts(hw) {
                assert_eq!(overlap(&fields), None, "{hw:?} {message}");
            }
        }
    }

    #[test]
    fn the_fields_every_message_has_are_alike_on_every_generation() {
        for hw in MESSAGE_GENS {
            assert_eq!(desc::Send::of(hw), &desc::Send::FIELDS);
        }
    }

    /// The data cache's scratch messages have no message type; its other messages, and data
    /// cache 1's, have one of their port's width.
    #[test]
    fn data_port_message_types_follow_the_port_and_the_category() {
        let dc = desc::DataCache::of(Gen::Gen9);
        let fence = Descriptor::build(&[(dc.message_type, desc::DataCache::MEMORY_FENCE)]);
        let scratch_write = Descriptor::build(&[
            (dc.category, desc::DataCache::SCRATCH_CATEGORY),
            (desc::Scratch::of(Gen::Gen9).write, 1),
        ]);
        let type_of = |d: Result<Descriptor, EncodingError>, sfid, hw| {
            desc::data_port_message_type(sfid, d.unwrap(), hw)
        };
        assert_eq!(
            type_of(fence, desc::DataCache::SFID, Gen::Gen9),
            Some(desc::DataCache::MEMORY_FENCE)
        );
        assert_eq!(
            type_of(scratch_write, desc::DataCache::SFID, Gen::Gen9),
            None
        );
        // Gen8's data cache 1 types reach bit 18; Gen7.5's stop at bit 17.
        let a64 = |hw| Descriptor::build(&[(desc::DataCache1::of(hw).message_type, 0x11)]);
        assert_eq!(
            type_of(a64(Gen::Gen8), desc::DataCache1::SFID, Gen::Gen8),
            Some(0x11)
        );
        assert!(a64(Gen::Gen75).is_err());
        let port = |hw| desc::UntypedPort::of(hw).sfid;
        assert_eq!(port(Gen::Gen7), desc::DataCache::SFID);
        assert_eq!(port(Gen::Gen75), desc::DataCache1::SFID);
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
