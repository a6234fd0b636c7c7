//! The fields of the R600 family's instruction words, each declared once: its dword within
//! the instruction, its bits, and per chip where the chips differ (a field a chip lacks has no
//! bits there, so only 0 fits it). [`Writer::put`] and [`get`] read a declaration, so the
//! encoder and the decoder share every position, and an encoding error names the field.
//!
//! The parts, by the words they describe: [`CfWords`] and [`CfCommon`] (CF_WORD0/1 of flow and
//! fetch-clause instructions), [`CfAluWords`] and [`AluExtendedWords`] (an ALU clause's CF_ALU pair and
//! its ALU_EXTENDED prefix), [`ExportWords`] with [`ExportSwizzle`] or [`ExportBuffer`] and
//! [`CfCommon`] (CF_ALLOC_EXPORT: exports, and scratch writes), [`AluWords`] with [`AluOp2`] or
//! [`AluOp3`] (ALU_WORD0/1), and [`FetchWords`] with [`TexWords`] (TEX words) or [`VertexFetchWords`] and
//! [`VtxWords`] or [`MemReadWords`] (VTX and MEM_RD words).

use crate::encoding::{At, EncodeError};
use crate::isa::Chip;

/// One field of an instruction: its name, its dword and its bits `lo..lo + bits`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: &'static str,
    pub word: usize,
    pub lo: u32,
    pub bits: u32,
}

impl Field {
    /// `at` is `(hi, lo)`, or `None` where the chip has no such field.
    const fn new(name: &'static str, word: usize, at: Option<(u32, u32)>) -> Field {
        let (lo, bits) = match at {
            Some((hi, lo)) => {
                assert!(lo <= hi && hi < 32, "a field lies within its dword");
                (lo, hi - lo + 1)
            }
            None => (0, 0),
        };
        Field {
            name,
            word,
            lo,
            bits,
        }
    }

    /// The largest value the field holds.
    pub fn max(self) -> i64 {
        (1 << self.bits) - 1
    }

    /// The field's bits within its dword.
    pub fn mask(self) -> u32 {
        (((1u64 << self.bits) - 1) << self.lo) as u32
    }
}

/// The value of `field` in an instruction's `words`.
pub(crate) fn get(words: &[u32], field: Field) -> u32 {
    (words[field.word] & field.mask()) >> field.lo
}

pub(crate) fn bit(words: &[u32], field: Field) -> bool {
    get(words, field) != 0
}

/// The value of a two's-complement field.
pub(crate) fn signed(words: &[u32], field: Field) -> i8 {
    let shift = 32 - field.bits;
    ((get(words, field) << shift) as i32 >> shift) as i8
}

/// The `N` dwords of an instruction being written, with where it is in the program.
pub(crate) struct Writer<const N: usize> {
    at: At,
    pub words: [u32; N],
}

impl<const N: usize> Writer<N> {
    pub fn new(at: At) -> Writer<N> {
        Writer { at, words: [0; N] }
    }

    /// Writes `value` to `field`; a value outside it is an error naming the field.
    pub fn put(&mut self, field: Field, value: impl Into<i64>) -> Result<(), EncodeError> {
        let value = value.into();
        if !(0..=field.max()).contains(&value) {
            return Err(EncodeError::Field {
                at: self.at,
                field: field.name,
                value,
            });
        }
        self.write(field, value as u32);
        Ok(())
    }

    /// Writes `value` to a two's-complement field.
    pub fn put_signed(&mut self, field: Field, value: i8) -> Result<(), EncodeError> {
        let half = (1i64 << field.bits) >> 1;
        if !(-half..=field.max() - half).contains(&i64::from(value)) {
            return Err(EncodeError::Field {
                at: self.at,
                field: field.name,
                value: value.into(),
            });
        }
        self.write(field, value as u32 & field.mask() >> field.lo);
        Ok(())
    }

    fn write(&mut self, field: Field, value: u32) {
        let word = &mut self.words[field.word];
        *word = *word & !field.mask() | value << field.lo & field.mask();
    }
}

/// A field's `(hi, lo)` on `chip`: `[hi:lo]` or `[bit]` on every chip, or
/// `{ R600 | R700 => [..], .. }` per chip (`None` on a chip not listed).
macro_rules! position {
    ($chip:ident; [$hi:literal : $lo:literal]) => {
        Some(($hi, $lo))
    };
    ($chip:ident; [$bit:literal]) => {
        Some(($bit, $bit))
    };
    ($chip:ident; { $($($on:ident)|+ => $at:tt),+ $(,)? }) => {
        match $chip {
            $($(Chip::$on)|+ => position!($chip; $at),)+
            #[allow(unreachable_patterns)]
            _ => None,
        }
    };
}

/// The index of dword `w0`–`w3`.
macro_rules! word {
    (w0) => {
        0
    };
    (w1) => {
        1
    };
    (w2) => {
        2
    };
    (w3) => {
        3
    };
}

/// Declares parts of the instruction words: a struct per part with a [`Field`] per declared
/// field, named as declared, and its table for each chip.
macro_rules! parts {
    ($(
        $(#[$doc:meta])*
        struct $part:ident {
            $($(#[$field_doc:meta])* $name:ident: $word:ident $at:tt,)+
        }
    )+) => {$(
        $(#[$doc])*
        pub(crate) struct $part {
            $($(#[$field_doc])* pub $name: Field,)+
        }

        impl $part {
            // A part laid out alike on every chip does not read `chip`.
            #[allow(unused_variables)]
            const fn layout(chip: Chip) -> $part {
                $part {
                    $($name: Field::new(stringify!($name), word!($word), position!(chip; $at)),)+
                }
            }

            /// The part's fields on `chip`.
            pub fn of(chip: Chip) -> &'static $part {
                static TABLES: [$part; 4] = [
                    $part::layout(Chip::ALL[0]),
                    $part::layout(Chip::ALL[1]),
                    $part::layout(Chip::ALL[2]),
                    $part::layout(Chip::ALL[3]),
                ];
                &TABLES[chip as usize]
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
    /// CF_WORD0 and the fields of CF_WORD1 that flow and fetch-clause instructions have:
    /// the target or clause address (64-bit units), the stack entries to pop, the loop
    /// constant, the condition, and a fetch clause's instruction count less one (R700 adds
    /// its fourth bit, COUNT_3, apart; Evergreen widens the field).
    struct CfWords {
        addr: w0 { R600 | R700 => [31:0], Evergreen | Cayman => [23:0] },
        pop_count: w1 [2:0],
        cf_const: w1 [7:3],
        cond: w1 [9:8],
        count: w1 { R600 | R700 => [12:10], Evergreen | Cayman => [15:10] },
        count_3: w1 { R700 => [19] },
    }

    /// The fields of CF_WORD1 that flow, fetch-clause and export instructions share. Cayman
    /// has no END_OF_PROGRAM (its programs end with CF_END); Evergreen's exports have MARK
    /// where the others have WHOLE_QUAD_MODE.
    struct CfCommon {
        valid_pixel_mode: w1 { R600 | R700 => [22], Evergreen | Cayman => [20] },
        end_of_program: w1 [21],
        cf_inst: w1 { R600 | R700 => [29:23], Evergreen | Cayman => [29:22] },
        whole_quad_mode: w1 [30],
        barrier: w1 [31],
    }

    /// CF_ALU_WORD0/1, an ALU clause's launch: the body's address (64-bit units), kcache
    /// sets 0 and 1 (bank, mode LOCK_1/LOCK_2 or 0 unlocked, line), the clause's slots
    /// less one.
    struct CfAluWords {
        addr: w0 [21:0],
        kcache_bank0: w0 [25:22],
        kcache_bank1: w0 [29:26],
        kcache_mode0: w0 [31:30],
        kcache_mode1: w1 [1:0],
        kcache_addr0: w1 [9:2],
        kcache_addr1: w1 [17:10],
        count: w1 [24:18],
        cf_inst: w1 [29:26],
        whole_quad_mode: w1 [30],
        barrier: w1 [31],
    }

    /// The ALU_EXTENDED pair (Evergreen/Cayman) before a clause locking kcache sets 2 and 3.
    struct AluExtendedWords {
        kcache_bank2: w0 [25:22],
        kcache_bank3: w0 [29:26],
        kcache_mode2: w0 [31:30],
        kcache_mode3: w1 [1:0],
        kcache_addr2: w1 [9:2],
        kcache_addr3: w1 [17:10],
        cf_inst: w1 [29:26],
        whole_quad_mode: w1 [30],
        barrier: w1 [31],
    }

    /// CF_ALLOC_EXPORT_WORD0 and the burst of WORD1: the array base, the type (pixel,
    /// position, parameter; a scratch write's: indexed in bit 0, acknowledged in bit 1), the
    /// register, the index register, the element size and the burst's count less one.
    struct ExportWords {
        array_base: w0 [12:0],
        export_type: w0 [14:13],
        rw_gpr: w0 [21:15],
        index_gpr: w0 [29:23],
        elem_size: w0 [31:30],
        burst_count: w1 { R600 | R700 => [20:17], Evergreen | Cayman => [19:16] },
    }

    /// WORD1's swizzle form (exports): a select per channel.
    struct ExportSwizzle {
        sel_x: w1 [2:0],
        sel_y: w1 [5:3],
        sel_z: w1 [8:6],
        sel_w: w1 [11:9],
    }

    /// WORD1's buffer form (scratch writes): the array size and the channels written.
    struct ExportBuffer {
        array_size: w1 [11:0],
        comp_mask: w1 [15:12],
    }

    /// ALU_WORD0 and the fields of ALU_WORD1 both forms share. A source is a select, a
    /// relative flag, a channel and a negation.
    struct AluWords {
        src0_sel: w0 [8:0],
        src0_rel: w0 [9],
        src0_chan: w0 [11:10],
        src0_neg: w0 [12],
        src1_sel: w0 [21:13],
        src1_rel: w0 [22],
        src1_chan: w0 [24:23],
        src1_neg: w0 [25],
        index_mode: w0 [28:26],
        pred_sel: w0 [30:29],
        /// The group's last instruction.
        last: w0 [31],
        bank_swizzle: w1 [20:18],
        dst_gpr: w1 [27:21],
        dst_rel: w1 [28],
        dst_chan: w1 [30:29],
        clamp: w1 [31],
    }

    /// ALU_WORD1_OP2, of one- and two-source opcodes. R600's holds FOG_MERGE (always 0) at
    /// bit 5, moving OMOD and ALU_INST up.
    struct AluOp2 {
        src0_abs: w1 [0],
        src1_abs: w1 [1],
        update_exec_mask: w1 [2],
        update_pred: w1 [3],
        write_mask: w1 [4],
        omod: w1 { R600 => [7:6], R700 | Evergreen | Cayman => [6:5] },
        alu_inst: w1 { R600 => [17:8], R700 | Evergreen | Cayman => [17:7] },
    }

    /// ALU_WORD1_OP3, of three-source opcodes: the third source, and the opcode, whose top
    /// three bits (nonzero for every OP3 opcode) are zero in every OP2 word.
    struct AluOp3 {
        src2_sel: w1 [8:0],
        src2_rel: w1 [9],
        src2_chan: w1 [11:10],
        src2_neg: w1 [12],
        alu_inst: w1 [17:13],
    }

    /// ALU_WORD1_LDS_IDX_OP (Evergreen, Cayman), with ALU_WORD0's sources and flags: the third
    /// source, the LDS operation, and the six bits of the index offset, scattered where the
    /// other forms hold the source negations (ALU_WORD0), the destination GPR, its relative
    /// flag and the clamp.
    struct AluLds {
        src2_sel: w1 [8:0],
        src2_rel: w1 [9],
        src2_chan: w1 [11:10],
        idx_offset_1: w1 [12],
        alu_inst: w1 [17:13],
        lds_op: w1 [26:21],
        idx_offset_0: w1 [27],
        idx_offset_2: w1 [28],
        idx_offset_3: w1 [31],
        idx_offset_4: w0 [12],
        idx_offset_5: w0 [25],
    }

    /// The fields of every fetch (TEX, VTX and MEM_RD words): the instruction, the address
    /// register, the destination register and a select per destination channel.
    struct FetchWords {
        fetch_inst: w0 [4:0],
        src_gpr: w0 [22:16],
        dst_gpr: w1 [6:0],
        dst_sel_x: w1 [11:9],
        dst_sel_y: w1 [14:12],
        dst_sel_z: w1 [17:15],
        dst_sel_w: w1 [20:18],
    }

    /// TEX_WORD0-2: the instruction modifier (Evergreen/Cayman; R600/R700 have BC_FRAC_MODE
    /// there), the resource, the LOD bias, the coordinates' normalization, the texel offsets,
    /// the sampler and a select per coordinate.
    struct TexWords {
        inst_mod: w0 { Evergreen | Cayman => [6:5] },
        resource_id: w0 [15:8],
        lod_bias: w1 [27:21],
        coord_type_x: w1 [28],
        coord_type_y: w1 [29],
        coord_type_z: w1 [30],
        coord_type_w: w1 [31],
        offset_x: w2 [4:0],
        offset_y: w2 [9:5],
        offset_z: w2 [14:10],
        sampler_id: w2 [19:15],
        src_sel_x: w2 [22:20],
        src_sel_y: w2 [25:23],
        src_sel_z: w2 [28:26],
        src_sel_w: w2 [31:29],
    }

    /// The fields VTX and MEM_RD words share: the address channel and the data's format.
    struct VertexFetchWords {
        src_sel_x: w0 [25:24],
        data_format: w1 [27:22],
        num_format_all: w1 [29:28],
        format_comp_all: w1 [30],
        srf_mode_all: w1 [31],
        endian_swap: w2 [17:16],
    }

    /// The rest of VTX_WORD0-2 (vertex fetches).
    struct VtxWords {
        fetch_type: w0 [6:5],
        buffer_id: w0 [15:8],
        mega_fetch_count: w0 [31:26],
        use_const_fields: w1 [21],
        offset: w2 [15:0],
        mega_fetch: w2 [19],
    }

    /// MEM_GDS_WORD0-2 (Evergreen, Cayman), after the memory instruction in WORD0's low bits:
    /// the operation's source GPR (x the byte address, y and z the operands), its destination
    /// GPR and selects. The relative modes, second source, UAV fields and append-counter mode
    /// are at rest (the counters are addressed in GDS memory).
    struct GdsWords {
        mem_op: w0 [10:8],
        src_gpr: w0 [17:11],
        src_rel: w0 [19:18],
        src_sel_x: w0 [22:20],
        src_sel_y: w0 [25:23],
        src_sel_z: w0 [28:26],
        dst_gpr: w1 [6:0],
        dst_rel: w1 [8:7],
        gds_op: w1 [14:9],
        src_gpr2: w1 [22:16],
        uav_index_mode: w1 [25:24],
        uav_id: w1 [29:26],
        alloc_consume: w1 [30],
        bcast_first_req: w1 [31],
        dst_sel_x: w2 [2:0],
        dst_sel_y: w2 [5:3],
        dst_sel_z: w2 [8:6],
        dst_sel_w: w2 [11:9],
    }

    /// The rest of MEM_RD_WORD0-2 (memory reads: READ_SCRATCH), where a vertex fetch has its
    /// fetch type, buffer and offset.
    struct MemReadWords {
        elem_size: w0 [6:5],
        indexed: w0 [12],
        array_base: w2 [12:0],
        array_size: w2 [31:20],
    }
}

impl CfAluWords {
    /// The (bank, mode, line) fields of kcache set `set` (0 or 1).
    pub fn kcache(&self, set: usize) -> [Field; 3] {
        if set == 0 {
            [self.kcache_bank0, self.kcache_mode0, self.kcache_addr0]
        } else {
            [self.kcache_bank1, self.kcache_mode1, self.kcache_addr1]
        }
    }
}

impl AluExtendedWords {
    /// The (bank, mode, line) fields of kcache set `set` (2 or 3).
    pub fn kcache(&self, set: usize) -> [Field; 3] {
        if set == 2 {
            [self.kcache_bank2, self.kcache_mode2, self.kcache_addr2]
        } else {
            [self.kcache_bank3, self.kcache_mode3, self.kcache_addr3]
        }
    }
}

impl ExportSwizzle {
    pub fn sel(&self) -> [Field; 4] {
        [self.sel_x, self.sel_y, self.sel_z, self.sel_w]
    }
}

/// The fields of an ALU source: select, relative, channel and negation.
pub(crate) struct SrcFields {
    pub sel: Field,
    pub rel: Field,
    pub chan: Field,
    pub neg: Field,
}

impl AluWords {
    /// Sources 0 and 1.
    pub fn srcs(&self) -> [SrcFields; 2] {
        [
            SrcFields {
                sel: self.src0_sel,
                rel: self.src0_rel,
                chan: self.src0_chan,
                neg: self.src0_neg,
            },
            SrcFields {
                sel: self.src1_sel,
                rel: self.src1_rel,
                chan: self.src1_chan,
                neg: self.src1_neg,
            },
        ]
    }
}

impl AluOp3 {
    pub fn src2(&self) -> SrcFields {
        SrcFields {
            sel: self.src2_sel,
            rel: self.src2_rel,
            chan: self.src2_chan,
            neg: self.src2_neg,
        }
    }
}

impl AluLds {
    /// Source 2 (its `neg` is the index offset's bit 1: the LDS form has no negation, and
    /// only its select, relative flag and channel are written).
    pub fn src2(&self) -> SrcFields {
        SrcFields {
            sel: self.src2_sel,
            rel: self.src2_rel,
            chan: self.src2_chan,
            neg: self.idx_offset_1,
        }
    }

    /// The index offset's bits, lowest first.
    pub fn idx_offset(&self) -> [Field; 6] {
        [
            self.idx_offset_0,
            self.idx_offset_1,
            self.idx_offset_2,
            self.idx_offset_3,
            self.idx_offset_4,
            self.idx_offset_5,
        ]
    }
}

impl FetchWords {
    pub fn dst_sel(&self) -> [Field; 4] {
        [
            self.dst_sel_x,
            self.dst_sel_y,
            self.dst_sel_z,
            self.dst_sel_w,
        ]
    }
}

impl GdsWords {
    /// MEM_OP of a GDS operation (5 would be a tessellation factor write).
    pub const MEM_OP_GDS: u32 = 4;

    pub fn src_sel(&self) -> [Field; 3] {
        [self.src_sel_x, self.src_sel_y, self.src_sel_z]
    }

    pub fn dst_sel(&self) -> [Field; 4] {
        [
            self.dst_sel_x,
            self.dst_sel_y,
            self.dst_sel_z,
            self.dst_sel_w,
        ]
    }

    /// The fields this backend leaves at zero, with their names.
    pub fn at_rest(&self) -> [(Field, &'static str); 7] {
        [
            (self.src_rel, "src_rel"),
            (self.dst_rel, "dst_rel"),
            (self.src_gpr2, "src_gpr2"),
            (self.uav_index_mode, "uav_index_mode"),
            (self.uav_id, "uav_id"),
            (self.alloc_consume, "alloc_consume"),
            (self.bcast_first_req, "bcast_first_req"),
        ]
    }
}

impl TexWords {
    pub fn coord_type(&self) -> [Field; 4] {
        [
            self.coord_type_x,
            self.coord_type_y,
            self.coord_type_z,
            self.coord_type_w,
        ]
    }

    pub fn offset(&self) -> [Field; 3] {
        [self.offset_x, self.offset_y, self.offset_z]
    }

    pub fn src_sel(&self) -> [Field; 4] {
        [
            self.src_sel_x,
            self.src_sel_y,
            self.src_sel_z,
            self.src_sel_w,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each instruction layout, as the parts that make it up.
    fn layouts(chip: Chip) -> Vec<(&'static str, Vec<Field>)> {
        let common = CfCommon::of(chip).all();
        let export = ExportWords::of(chip).all();
        let (fetch, vertex) = (FetchWords::of(chip).all(), VertexFetchWords::of(chip).all());
        let alu = AluWords::of(chip).all();
        vec![
            ("CF", [CfWords::of(chip).all(), common.clone()].concat()),
            ("CF_ALU", CfAluWords::of(chip).all()),
            ("ALU_EXTENDED", AluExtendedWords::of(chip).all()),
            (
                "export",
                [
                    export.clone(),
                    common.clone(),
                    ExportSwizzle::of(chip).all(),
                ]
                .concat(),
            ),
            (
                "scratch write",
                [export, common, ExportBuffer::of(chip).all()].concat(),
            ),
            ("ALU OP2", [alu.clone(), AluOp2::of(chip).all()].concat()),
            ("ALU OP3", [alu.clone(), AluOp3::of(chip).all()].concat()),
            (
                "ALU LDS_IDX_OP",
                [
                    alu.into_iter()
                        .filter(|f| {
                            !["src0_neg", "src1_neg", "dst_gpr", "dst_rel", "clamp"]
                                .contains(&f.name)
                        })
                        .collect(),
                    AluLds::of(chip).all(),
                ]
                .concat(),
            ),
            ("TEX", [fetch.clone(), TexWords::of(chip).all()].concat()),
            (
                "MEM_GDS",
                [vec![fetch[0]], GdsWords::of(chip).all()].concat(),
            ),
            (
                "VTX",
                [fetch.clone(), vertex.clone(), VtxWords::of(chip).all()].concat(),
            ),
            (
                "MEM_RD",
                [fetch, vertex, MemReadWords::of(chip).all()].concat(),
            ),
        ]
    }

    /// Every field holds its largest value and a pattern, reads them back, and leaves the
    /// other bits alone; a value outside it is an error naming the field.
    #[test]
    fn every_field_round_trips() {
        let at = At::Program;
        for chip in Chip::ALL {
            for (_, fields) in layouts(chip) {
                for field in fields {
                    for value in [field.max(), 0x5555_5555 & field.max(), 1 & field.max()] {
                        for background in [0, u32::MAX] {
                            let mut w = Writer::<4> {
                                at,
                                words: [background; 4],
                            };
                            w.put(field, value).unwrap();
                            assert_eq!(i64::from(get(&w.words, field)), value, "{}", field.name);
                            let mut expected = [background; 4];
                            expected[field.word] =
                                background & !field.mask() | (value as u32) << field.lo;
                            assert_eq!(w.words, expected, "{}", field.name);
                        }
                    }
                    let too_wide = Writer::<4>::new(at).put(field, field.max() + 1);
                    assert_eq!(
                        too_wide,
                        Err(EncodeError::Field {
                            at,
                            field: field.name,
                            value: field.max() + 1
                        })
                    );
                }
            }
        }
    }

    #[test]
    fn signed_fields_round_trip() {
        for chip in Chip::ALL {
            let tex = TexWords::of(chip);
            for field in [tex.lod_bias, tex.offset_x, tex.offset_y, tex.offset_z] {
                let half = 1 << (field.bits - 1);
                for value in [-half, -1, 0, 1, half - 1] {
                    let mut w = Writer::<4>::new(At::Program);
                    w.put_signed(field, value as i8).unwrap();
                    assert_eq!(i64::from(signed(&w.words, field)), value, "{}", field.name);
                }
                let mut w = Writer::<4>::new(At::Program);
                assert!(w.put_signed(field, half as i8).is_err());
                assert!(w.put_signed(field, (-half - 1) as i8).is_err());
            }
        }
    }

    #[test]
    fn no_two_fields_of_a_layout_overlap() {
        for chip in Chip::ALL {
            for (name, fields) in layouts(chip) {
                for (i, a) in fields.iter().enumerate() {
                    for b in &fields[i + 1..] {
                        assert!(
                            a.word != b.word || a.mask() & b.mask() == 0,
                            "{chip:?} {name}: {} and {} overlap",
                            a.name,
                            b.name
                        );
                    }
                }
            }
        }
    }
}
