//! The binary form of a [`Program`]: [`assemble`] writes the hardware's dwords and [`decode`]
//! reads them back, both through the field declarations of [`crate::fields`].
//!
//! Layout, as Mesa lays a program out: every CF instruction first, two dwords each, in program
//! order (on Evergreen/Cayman an ALU clause locking more than two kcache sets is preceded by an
//! ALU_EXTENDED pair carrying sets 2 and 3); then the clause bodies in CF order: ALU bodies (two
//! dwords per instruction, a group's literals after its last instruction, padded with a zero to
//! an even count) at 64-bit alignment, fetch bodies (four dwords per instruction, the fourth
//! zero) at 128-bit alignment, zero dwords filling the gaps. Addresses in CF words count 64-bit
//! units from the start of the program.
//!
//! A [`CfBody::Flow`] target in the program is the index of a CF instruction; in the words it is
//! that instruction's hardware address, which is its ALU_EXTENDED prefix when it has one. The
//! encoder maps one to the other and the decoder back.
//!
//! A binary's file ([`Binary::to_file`], what `shrew compile --binary` writes) is a 12-byte
//! header carrying what a driver programs beside the dwords (the chip, NUM_GPRS, STACK_SIZE and
//! the scratch size, which the words do not hold), then the dwords, little-endian.
//!
//! Invariants: `decode(&assemble(p)?) == p` for every program [`assemble`] accepts, and
//! [`decode`] accepts exactly the binaries [`assemble`] can produce: it re-encodes what it read
//! and compares, so a set bit the program has no field for, a reserved value or a layout the
//! encoder would not write is an error rather than silently dropped. Neither function panics.

use crate::fields::{
    AluExtendedWords, AluLds, AluOp2, AluOp3, AluWords, CfAluWords, CfCommon, CfWords,
    ExportBuffer, ExportSwizzle, ExportWords, FetchWords, Field, GdsWords, MemReadWords, SrcFields,
    TexWords, VertexFetchWords, VtxWords, Writer, bit, get, signed,
};
use crate::isa::{AluOpcode, CfOp, Chip, FetchOp, LDS_IDX_OP, MAX_ALU_CLAUSE_SLOTS, flag, sel};
use crate::program::{
    AluInst, Cf, CfBody, Dst, Export, ExportType, Fetch, Group, Kcache, MemRead, PredSel, Program,
    Src, VtxFormat,
};

/// An assembled program: its dwords, and the two state registers that travel beside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    pub chip: Chip,
    pub words: Vec<u32>,
    /// GPRs the program uses (the NUM_GPRS state field).
    pub gprs: u8,
    /// Stack entries the program needs (the STACK_SIZE state field).
    pub stack_size: u8,
    /// Vec4 elements of scratch memory each lane needs (the scratch ring's item size).
    pub scratch_elements: u16,
}

/// The first bytes of a binary's file.
const FILE_MAGIC: [u8; 4] = *b"R6SB";

/// Bytes of a binary file's header: the magic, the chip, GPRs, stack size, a zero byte, the
/// scratch elements (16 bits) and two zero bytes.
const FILE_HEADER: usize = 12;

/// Why bytes are not a binary's file ([`Binary::from_file`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error(
        "not a shrew R600 binary (it starts with the {FILE_HEADER}-byte header `shrew compile \
         --binary` writes)"
    )]
    Header,
    #[error("a binary for {}, not {}", .found.name(), .expected.name())]
    Chip { found: Chip, expected: Chip },
    #[error("the {len} bytes after the header are not a whole number of dwords")]
    Dwords { len: usize },
}

impl Binary {
    /// The binary as a file: the header (see the module documentation), then the dwords.
    pub fn to_file(&self) -> Vec<u8> {
        // The chip as its index in `Chip::ALL`, the order of its declaration.
        let mut bytes = FILE_MAGIC.to_vec();
        bytes.extend([self.chip as u8, self.gprs, self.stack_size, 0]);
        bytes.extend(self.scratch_elements.to_le_bytes());
        bytes.extend([0, 0]);
        bytes.extend(self.words.iter().flat_map(|w| w.to_le_bytes()));
        bytes
    }

    /// The binary [`Binary::to_file`] wrote for `chip`.
    pub fn from_file(bytes: &[u8], chip: Chip) -> Result<Binary, FileError> {
        let header = bytes
            .split_first_chunk::<FILE_HEADER>()
            .filter(|(header, _)| header.starts_with(&FILE_MAGIC));
        let Some((&[_, _, _, _, index, gprs, stack_size, 0, s0, s1, 0, 0], words)) = header else {
            return Err(FileError::Header);
        };
        let &found = Chip::ALL.get(index as usize).ok_or(FileError::Header)?;
        if found != chip {
            return Err(FileError::Chip {
                found,
                expected: chip,
            });
        }
        if !words.len().is_multiple_of(4) {
            return Err(FileError::Dwords { len: words.len() });
        }
        Ok(Binary {
            chip,
            words: words
                .chunks_exact(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect(),
            gprs,
            stack_size,
            scratch_elements: u16::from_le_bytes([s0, s1]),
        })
    }
}

/// Where in a program an encoding or decoding error lies. CF indices are indices of
/// [`Program::cf`] (an ALU_EXTENDED prefix belongs to the clause after it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// The program as a whole.
    Program,
    /// A CF instruction.
    Cf(usize),
    /// A group of an ALU clause.
    Group { cf: usize, group: usize },
    /// An instruction of a group.
    Inst {
        cf: usize,
        group: usize,
        inst: usize,
    },
    /// An instruction of a TEX or VTX clause.
    Fetch { cf: usize, fetch: usize },
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            At::Program => write!(f, "program"),
            At::Cf(cf) => write!(f, "CF {cf}"),
            At::Group { cf, group } => write!(f, "CF {cf}, group {group}"),
            At::Inst { cf, group, inst } => write!(f, "CF {cf}, group {group}, instruction {inst}"),
            At::Fetch { cf, fetch } => write!(f, "CF {cf}, fetch {fetch}"),
        }
    }
}

/// Why a program cannot be assembled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{at}: {what} does not exist on {chip:?}")]
    NotOnChip {
        at: At,
        what: &'static str,
        chip: Chip,
    },
    #[error("{at}: {what} is not supported")]
    Unsupported { at: At, what: String },
    #[error("{at}: {op} needs {expected} body")]
    BodyKind {
        at: At,
        op: CfOp,
        expected: &'static str,
    },
    #[error("{at}: {field} = {value} does not fit its field")]
    Field {
        at: At,
        field: &'static str,
        value: i64,
    },
    #[error("{at}: {field} has no bits in this encoding and must be {expected}")]
    Unused {
        at: At,
        field: &'static str,
        expected: &'static str,
    },
    #[error("{at}: {why}")]
    EndOfProgram { at: At, why: &'static str },
    #[error("{at}: target {addr} is not a CF instruction (the program has {len})")]
    Target { at: At, addr: u32, len: usize },
    #[error("{at}: the clause locks {sets} kcache sets, {chip:?} at most {max}")]
    KcacheSets {
        at: At,
        sets: usize,
        max: usize,
        chip: Chip,
    },
    #[error("{at}: {why}")]
    Kcache { at: At, why: String },
    #[error("{at}: the clause has {size} {unit}; it needs 1 to {max}")]
    ClauseSize {
        at: At,
        size: usize,
        unit: &'static str,
        max: usize,
    },
    #[error("{at}: {why}")]
    Group { at: At, why: &'static str },
    #[error("{at}: {why}")]
    Literal { at: At, why: String },
    #[error("{at}: address {addr} (64-bit units) does not fit the {bits}-bit ADDR field")]
    TooLarge { at: At, addr: usize, bits: u32 },
}

/// Why words are not a program [`assemble`] could have written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{at}: needs the dwords up to {needed}, the binary has {len}")]
    Truncated { at: At, needed: usize, len: usize },
    #[error("no end of program (END_OF_PROGRAM, or CF_END on Cayman) in the {len} dwords")]
    NoEnd { len: usize },
    #[error("{at}: unknown {kind} opcode {opcode:#x} on {chip:?}")]
    UnknownOp {
        at: At,
        kind: &'static str,
        opcode: u32,
        chip: Chip,
    },
    #[error("{at}: {why}")]
    Malformed { at: At, why: String },
    #[error("{at}: address {addr} starts no CF instruction")]
    Target { at: At, addr: u32 },
    #[error("the decoded program is not well formed: {0}")]
    Invalid(#[source] EncodeError),
    #[error(
        "dword {dword} is {found:#010x}, but the decoded program encodes it as {expected:#010x} \
         (bits the program has no field for, or a layout the encoder does not write)"
    )]
    NotCanonical {
        dword: usize,
        found: u32,
        expected: u32,
    },
    #[error("the binary has {len} dwords, but the decoded program encodes to {expected}")]
    Length { len: usize, expected: usize },
}

/// Where a CF instruction and its clause body sit in the words (dword indices).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// The instruction's first dword: that of its ALU_EXTENDED prefix when it has one.
    pub at: usize,
    /// Whether an ALU_EXTENDED pair precedes the instruction's own pair.
    pub extended: bool,
    /// The first dword of the clause body.
    pub body: Option<usize>,
}

/// The layout of a program's words.
pub(crate) struct Layout {
    /// One per CF instruction.
    pub places: Vec<Place>,
    pub len: usize,
}

/// Where each instruction and clause body of `program` goes. Sizes come from the program as
/// it is; [`assemble`] checks them before writing.
pub(crate) fn layout(program: &Program) -> Layout {
    let mut next = 0;
    let mut places: Vec<Place> = program
        .cf
        .iter()
        .map(|cf| {
            let extended = needs_extension(program.chip, cf);
            let place = Place {
                at: next,
                extended,
                body: None,
            };
            next += if extended { 4 } else { 2 };
            place
        })
        .collect();
    for (place, cf) in places.iter_mut().zip(&program.cf) {
        match &cf.body {
            CfBody::Alu { groups, .. } => {
                place.body = Some(next);
                next += 2 * groups.iter().map(Group::clause_slots).sum::<usize>();
            }
            CfBody::Fetch(fetches) => {
                next = next.next_multiple_of(4);
                place.body = Some(next);
                next += 4 * fetches.len();
            }
            CfBody::Flow { .. } | CfBody::Export(_) => {}
        }
    }
    Layout { places, len: next }
}

/// Whether the instruction takes an ALU_EXTENDED prefix: a clause locking kcache sets 2 or 3
/// on a chip that has the prefix (Evergreen/Cayman; on R600/R700 such a clause is an error).
fn needs_extension(chip: Chip, cf: &Cf) -> bool {
    CfOp::AluExtended.opcode(chip).is_some()
        && matches!(&cf.body, CfBody::Alu { kcache, .. } if kcache.len() > 2)
}

fn unused(at: At, field: &'static str, expected: &'static str) -> EncodeError {
    EncodeError::Unused {
        at,
        field,
        expected,
    }
}

/// The kinds of [`CfBody`], to check an opcode against its body.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    Alu,
    Fetch,
    Flow,
    Export,
}

impl Kind {
    /// The body `op` takes.
    fn of_op(op: CfOp) -> Kind {
        match op {
            _ if op.is_alu() => Kind::Alu,
            CfOp::Tex | CfOp::Vtx | CfOp::VtxTc | CfOp::Gds => Kind::Fetch,
            _ if op.is_export() => Kind::Export,
            _ => Kind::Flow,
        }
    }

    fn of_body(body: &CfBody) -> Kind {
        match body {
            CfBody::Alu { .. } => Kind::Alu,
            CfBody::Fetch(_) => Kind::Fetch,
            CfBody::Flow { .. } => Kind::Flow,
            CfBody::Export(_) => Kind::Export,
        }
    }

    /// The kind with its article, for messages.
    fn name(self) -> &'static str {
        match self {
            Kind::Alu => "an ALU",
            Kind::Fetch => "a fetch",
            Kind::Flow => "a flow",
            Kind::Export => "an export",
        }
    }
}

/// Assembles `program` (see the module documentation for the layout). Errors name the CF
/// instruction, group and instruction that cannot be encoded.
pub fn assemble(program: &Program) -> Result<Binary, EncodeError> {
    let chip = program.chip;
    check_end(program)?;
    let layout = layout(program);
    let mut words = vec![0; layout.len];
    let hw_addr = |target: u32, at: At| {
        layout
            .places
            .get(target as usize)
            .map(|place| place.at / 2)
            .ok_or(EncodeError::Target {
                at,
                addr: target,
                len: program.cf.len(),
            })
    };
    for (i, (cf, place)) in program.cf.iter().zip(&layout.places).enumerate() {
        let at = At::Cf(i);
        let opcode = cf.op.opcode(chip).ok_or(EncodeError::NotOnChip {
            at,
            what: cf.op.mnemonic(),
            chip,
        })?;
        if cf.op == CfOp::AluExtended {
            return Err(EncodeError::Unsupported {
                at,
                what: "ALU_EXT as an instruction (the encoder adds it before a clause locking \
                       kcache sets 2 or 3)"
                    .into(),
            });
        }
        let kind = Kind::of_op(cf.op);
        if kind != Kind::of_body(&cf.body) {
            return Err(EncodeError::BodyKind {
                at,
                op: cf.op,
                expected: kind.name(),
            });
        }
        let body = place.body.unwrap_or(0);
        let pair = match &cf.body {
            CfBody::Alu { kcache, groups } => {
                let clause = encode_alu_clause(chip, i, kcache, groups)?;
                words[body..body + clause.len()].copy_from_slice(&clause);
                let (extension, pair) =
                    encode_alu_cf(chip, at, cf, opcode, kcache, body / 2, groups)?;
                if let Some(extension) = extension {
                    words[place.at..place.at + 2].copy_from_slice(&extension);
                }
                pair
            }
            CfBody::Fetch(fetches) => {
                for (k, fetch) in fetches.iter().enumerate() {
                    let at = At::Fetch { cf: i, fetch: k };
                    let fetch = encode_fetch(chip, cf.op, fetch, at)?;
                    words[body + 4 * k..body + 4 * k + 4].copy_from_slice(&fetch);
                }
                encode_fetch_cf(chip, at, cf, opcode, body / 2, fetches.len())?
            }
            &CfBody::Flow {
                addr,
                pop_count,
                cond,
                cf_const,
            } => {
                let f = CfWords::of(chip);
                let mut w = Writer::new(at);
                w.put(f.pop_count, pop_count)?;
                w.put(f.cf_const, cf_const)?;
                w.put(f.cond, cond)?;
                put_common(&mut w, chip, cf, opcode)?;
                put_addr(&mut w, at, f.addr, hw_addr(addr, at)?)?;
                w.words
            }
            CfBody::Export(export) => encode_export(chip, at, cf, opcode, export)?,
        };
        let own = place.at + if place.extended { 2 } else { 0 };
        words[own..own + 2].copy_from_slice(&pair);
    }
    Ok(Binary {
        chip,
        words,
        gprs: program.gprs,
        stack_size: program.stack_size,
        scratch_elements: program.scratch_elements,
    })
}

/// R600-Evergreen: END_OF_PROGRAM on one instruction. Cayman: no END_OF_PROGRAM bit; CF_END
/// on one instruction. That instruction is the last, or the subroutines the program calls
/// follow it, the last instruction a RET.
fn check_end(program: &Program) -> Result<(), EncodeError> {
    let Some(last) = program.cf.len().checked_sub(1) else {
        return Err(EncodeError::EndOfProgram {
            at: At::Program,
            why: "the program has no CF instruction",
        });
    };
    let cayman = program.chip == Chip::Cayman;
    let mut end = None;
    for (i, cf) in program.cf.iter().enumerate() {
        let why = if cayman && cf.end_of_program {
            "Cayman has no END_OF_PROGRAM bit: the program ends with CF_END"
        } else if !(if cayman {
            cf.op == CfOp::CfEnd
        } else {
            cf.end_of_program
        }) {
            continue;
        } else if end.is_some() {
            "a second end of the program"
        } else {
            end = Some(i);
            continue;
        };
        return Err(EncodeError::EndOfProgram { at: At::Cf(i), why });
    }
    let why = match end {
        None if cayman => "a Cayman program ends with CF_END",
        None => "the last instruction of the main program must set END_OF_PROGRAM",
        Some(end) if end != last && program.cf[last].op != CfOp::Return => {
            "the subroutines after the end of the program must end with RET"
        }
        Some(_) => return Ok(()),
    };
    Err(EncodeError::EndOfProgram {
        at: At::Cf(last),
        why,
    })
}

/// Writes a clause body's or a jump target's address (64-bit units) to `field`.
fn put_addr<const N: usize>(
    w: &mut Writer<N>,
    at: At,
    field: Field,
    addr: usize,
) -> Result<(), EncodeError> {
    let too_large = EncodeError::TooLarge {
        at,
        addr,
        bits: field.bits,
    };
    let value = i64::try_from(addr).map_err(|_| too_large.clone())?;
    w.put(field, value).map_err(|_| too_large)
}

/// The opcode and flags of a CF_WORD1 or export WORD1 (not of the CF_ALU words).
fn put_common(w: &mut Writer<2>, chip: Chip, cf: &Cf, opcode: u8) -> Result<(), EncodeError> {
    let f = CfCommon::of(chip);
    w.put(f.cf_inst, opcode)?;
    w.put(f.valid_pixel_mode, cf.valid_pixel_mode)?;
    w.put(f.end_of_program, cf.end_of_program)?;
    w.put(f.whole_quad_mode, cf.whole_quad_mode)?;
    w.put(f.barrier, cf.barrier)
}

/// The CF_ALU pair of an ALU clause whose body starts at `addr` (64-bit units), and the
/// ALU_EXTENDED pair before it when it locks sets 2 or 3.
fn encode_alu_cf(
    chip: Chip,
    at: At,
    cf: &Cf,
    opcode: u8,
    kcache: &[Kcache],
    addr: usize,
    groups: &[Group],
) -> Result<(Option<[u32; 2]>, [u32; 2]), EncodeError> {
    if cf.end_of_program {
        return Err(EncodeError::EndOfProgram {
            at,
            why: "the CF_ALU words have no END_OF_PROGRAM bit (end with a NOP after the clause)",
        });
    }
    if cf.valid_pixel_mode {
        return Err(unused(at, "valid_pixel_mode", "false"));
    }
    if kcache.len() > chip.kcache_sets() {
        return Err(EncodeError::KcacheSets {
            at,
            sets: kcache.len(),
            max: chip.kcache_sets(),
            chip,
        });
    }
    let (f, e) = (CfAluWords::of(chip), AluExtendedWords::of(chip));
    let (mut pair, mut prefix) = (Writer::new(at), Writer::new(at));
    for (set, k) in kcache.iter().enumerate() {
        if !(1..=2).contains(&k.lines) {
            return Err(EncodeError::Kcache {
                at,
                why: format!(
                    "kcache set {set} locks {} lines; it can lock 1 or 2",
                    k.lines
                ),
            });
        }
        let (w, [bank, mode, line]) = if set < 2 {
            (&mut pair, f.kcache(set))
        } else {
            (&mut prefix, e.kcache(set))
        };
        w.put(bank, k.bank)?;
        // The mode is LOCK_1 (1) or LOCK_2 (2): the number of lines.
        w.put(mode, k.lines)?;
        w.put(line, k.line)?;
    }
    put_addr(&mut pair, at, f.addr, addr)?;
    let slots: usize = groups.iter().map(Group::clause_slots).sum();
    pair.put(f.count, slots as i64 - 1)?;
    pair.put(f.cf_inst, opcode)?;
    pair.put(f.whole_quad_mode, cf.whole_quad_mode)?;
    pair.put(f.barrier, cf.barrier)?;
    let extension = match CfOp::AluExtended.opcode(chip) {
        Some(code) if kcache.len() > 2 => {
            prefix.put(e.cf_inst, code)?;
            prefix.put(e.whole_quad_mode, cf.whole_quad_mode)?;
            prefix.put(e.barrier, cf.barrier)?;
            Some(prefix.words)
        }
        _ => None,
    };
    Ok((extension, pair.words))
}

/// The body of an ALU clause.
fn encode_alu_clause(
    chip: Chip,
    cf: usize,
    kcache: &[Kcache],
    groups: &[Group],
) -> Result<Vec<u32>, EncodeError> {
    let slots: usize = groups.iter().map(Group::clause_slots).sum();
    if !(1..=MAX_ALU_CLAUSE_SLOTS).contains(&slots) {
        return Err(EncodeError::ClauseSize {
            at: At::Cf(cf),
            size: slots,
            unit: "slots",
            max: MAX_ALU_CLAUSE_SLOTS,
        });
    }
    let mut words = Vec::with_capacity(2 * slots);
    for (g, group) in groups.iter().enumerate() {
        encode_group(chip, cf, g, kcache, group, &mut words)?;
    }
    Ok(words)
}

/// The literal dwords a group's sources read: one more than the highest literal channel.
fn literals_read(insts: &[AluInst]) -> usize {
    insts
        .iter()
        .flat_map(AluInst::srcs)
        .filter(|src| src.sel == sel::LITERAL)
        .map(|src| src.chan as usize + 1)
        .max()
        .unwrap_or(0)
}

fn encode_group(
    chip: Chip,
    cf: usize,
    g: usize,
    kcache: &[Kcache],
    group: &Group,
    words: &mut Vec<u32>,
) -> Result<(), EncodeError> {
    let at = At::Group { cf, group: g };
    if group.insts.is_empty() {
        return Err(EncodeError::Group {
            at,
            why: "a group needs an instruction",
        });
    }
    for (k, inst) in group.insts.iter().enumerate() {
        if inst.op.opcode(chip).is_none() {
            let at = At::Inst {
                cf,
                group: g,
                inst: k,
            };
            return Err(EncodeError::NotOnChip {
                at,
                what: inst.op.mnemonic(),
                chip,
            });
        }
    }
    let slots = group.slots(chip).ok_or(EncodeError::Group {
        at,
        why: "two instructions need the same slot, or an opcode is in a slot that cannot run it",
    })?;
    // The hardware assigns slots in order, so the words must list them x, y, z, w, trans.
    if slots.windows(2).any(|pair| pair[0] >= pair[1]) {
        return Err(EncodeError::Group {
            at,
            why: "the instructions are not in slot order (x, y, z, w, trans)",
        });
    }
    let last = group.insts.len() - 1;
    for (k, inst) in group.insts.iter().enumerate() {
        let at = At::Inst {
            cf,
            group: g,
            inst: k,
        };
        words.extend(encode_alu(chip, at, kcache, inst, k == last)?);
    }
    let read = literals_read(&group.insts);
    let have = group.literals.len();
    if have != read {
        let why = if have < read {
            format!(
                "a source reads literal {} but the group has {have}",
                read - 1
            )
        } else {
            format!("the group carries {have} literals but its sources read {read}")
        };
        return Err(EncodeError::Literal { at, why });
    }
    words.extend(&group.literals);
    if have % 2 == 1 {
        words.push(0);
    }
    Ok(())
}

/// Writes a source's select, relative flag, channel and negation to its fields.
fn put_src(w: &mut Writer<2>, f: &SrcFields, src: &Src) -> Result<(), EncodeError> {
    put_operand(w, f, src)?;
    w.put(f.neg, src.neg)
}

/// A source's select, relative flag and channel (the LDS form has no negation field).
fn put_operand(w: &mut Writer<2>, f: &SrcFields, src: &Src) -> Result<(), EncodeError> {
    w.put(f.sel, src.sel)?;
    w.put(f.rel, src.rel)?;
    w.put(f.chan, src.chan)
}

/// A source reading the constant file must read a set the clause locks, within its lines.
fn check_kcache_read(at: At, kcache: &[Kcache], src: &Src) -> Result<(), EncodeError> {
    let Some((set, index)) = sel::kcache(src.sel) else {
        return Ok(());
    };
    let why = match kcache.get(set) {
        None => format!(
            "a source reads KC{set}, but the clause locks {} sets",
            kcache.len()
        ),
        Some(k) if index >= 16 * u16::from(k.lines) => format!(
            "a source reads KC{set}[{index}], beyond the {} constants the set locks",
            16 * k.lines
        ),
        Some(_) => return Ok(()),
    };
    Err(EncodeError::Kcache { at, why })
}

const SRC_FIELDS: [&str; 3] = ["src[0]", "src[1]", "src[2]"];

/// ALU_WORD0 and ALU_WORD1 of an instruction (OP2, OP3 or LDS_IDX_OP form by its opcode).
fn encode_alu(
    chip: Chip,
    at: At,
    kcache: &[Kcache],
    inst: &AluInst,
    last: bool,
) -> Result<[u32; 2], EncodeError> {
    let opcode = inst.op.opcode(chip).ok_or(EncodeError::NotOnChip {
        at,
        what: inst.op.mnemonic(),
        chip,
    })?;
    for (field, src) in SRC_FIELDS.iter().zip(&inst.src).skip(inst.op.nsrc()) {
        if *src != Src::default() {
            return Err(unused(
                at,
                field,
                "Src::default() (the opcode does not read it)",
            ));
        }
    }
    for src in inst.srcs() {
        check_kcache_read(at, kcache, src)?;
    }
    let pred_sel = match inst.pred_sel {
        PredSel::Off => 0,
        PredSel::Zero => 2,
        PredSel::One => 3,
    };
    let f = AluWords::of(chip);
    let mut w = Writer::new(at);
    let lds = inst.op.has(flag::LDS);
    for (fields, src) in f.srcs().iter().zip(&inst.src) {
        if lds {
            put_operand(&mut w, fields, src)?;
        } else {
            put_src(&mut w, fields, src)?;
        }
    }
    w.put(f.index_mode, inst.index_mode)?;
    w.put(f.pred_sel, pred_sel)?;
    w.put(f.last, last)?;
    let dst = &inst.dst;
    w.put(f.bank_swizzle, inst.bank_swizzle)?;
    if lds {
        // The index offset (zero here) holds the bits the other forms give the source
        // negations, the destination GPR, its relative flag and the clamp.
        if inst.src.iter().any(|src| src.neg || src.abs) {
            return Err(unused(at, "source neg/abs", "false (LDS operations)"));
        }
        if *dst != Dst::none(dst.chan) {
            return Err(unused(at, "dst", "Dst::none (LDS operations write no GPR)"));
        }
        if inst.omod != 0 || inst.update_exec_mask || inst.update_pred {
            return Err(unused(at, "omod/update flags", "0 (LDS operations)"));
        }
        let l = AluLds::of(chip);
        w.put(f.dst_chan, dst.chan)?;
        put_operand(&mut w, &l.src2(), &inst.src[2])?;
        w.put(l.alu_inst, LDS_IDX_OP)?;
        w.put(l.lds_op, opcode)?;
        return Ok(w.words);
    }
    w.put(f.dst_gpr, dst.gpr)?;
    w.put(f.dst_rel, dst.rel)?;
    w.put(f.dst_chan, dst.chan)?;
    w.put(f.clamp, dst.clamp)?;
    if inst.op.is_op3() {
        if inst.src.iter().any(|src| src.abs) {
            return Err(unused(at, "source abs", "false (OP3)"));
        }
        if inst.omod != 0 {
            return Err(unused(at, "omod", "0 (OP3)"));
        }
        if inst.update_exec_mask || inst.update_pred {
            return Err(unused(at, "update_exec_mask/update_pred", "false (OP3)"));
        }
        if !dst.write {
            return Err(unused(at, "dst.write", "true (OP3 always writes)"));
        }
        let op3 = AluOp3::of(chip);
        put_src(&mut w, &op3.src2(), &inst.src[2])?;
        w.put(op3.alu_inst, opcode)?;
    } else {
        let op2 = AluOp2::of(chip);
        w.put(op2.src0_abs, inst.src[0].abs)?;
        w.put(op2.src1_abs, inst.src[1].abs)?;
        w.put(op2.update_exec_mask, inst.update_exec_mask)?;
        w.put(op2.update_pred, inst.update_pred)?;
        w.put(op2.write_mask, dst.write)?;
        w.put(op2.omod, inst.omod)?;
        w.put(op2.alu_inst, opcode)?;
    }
    Ok(w.words)
}

/// The CF pair of a TEX or VTX clause of `count` instructions at `addr` (64-bit units).
fn encode_fetch_cf(
    chip: Chip,
    at: At,
    cf: &Cf,
    opcode: u8,
    addr: usize,
    count: usize,
) -> Result<[u32; 2], EncodeError> {
    if !(1..=chip.max_fetches()).contains(&count) {
        return Err(EncodeError::ClauseSize {
            at,
            size: count,
            unit: "instructions",
            max: chip.max_fetches(),
        });
    }
    let f = CfWords::of(chip);
    let mut w = Writer::new(at);
    put_addr(&mut w, at, f.addr, addr)?;
    // The count less one; the bits above COUNT go to COUNT_3 (R700's fourth bit).
    let n = count as i64 - 1;
    w.put(f.count, n & f.count.max())?;
    w.put(f.count_3, n >> f.count.bits)?;
    put_common(&mut w, chip, cf, opcode)?;
    Ok(w.words)
}

/// The four dwords of a fetch in a clause launched by `clause`.
fn encode_fetch(chip: Chip, clause: CfOp, fetch: &Fetch, at: At) -> Result<[u32; 4], EncodeError> {
    let code = fetch.op.opcode(chip).ok_or(EncodeError::NotOnChip {
        at,
        what: fetch.op.mnemonic(),
        chip,
    })?;
    let (inst, modifier) = (code & 0xff, code >> 8);
    let f = FetchWords::of(chip);
    let mut w = Writer::new(at);
    w.put(f.fetch_inst, inst)?;
    if fetch.op.is_gds() != (clause == CfOp::Gds) {
        return Err(EncodeError::Unsupported {
            at,
            what: format!("{} in a {clause} clause", fetch.op),
        });
    }
    if fetch.op.is_gds() {
        return encode_gds(chip, at, fetch, modifier, w);
    }
    if fetch.op.is_vertex_fetch() {
        if modifier != 0 {
            return Err(EncodeError::Unsupported {
                at,
                what: format!("{} (the VTX words have no instruction modifier)", fetch.op),
            });
        }
        return encode_vtx(chip, at, fetch, w);
    }
    if clause != CfOp::Tex {
        return Err(EncodeError::Unsupported {
            at,
            what: format!("{} in a {clause} clause", fetch.op),
        });
    }
    // The modifier exists from Evergreen on; R600/R700's field has no bits.
    let t = TexWords::of(chip);
    w.put(t.inst_mod, modifier)?;
    if fetch.vtx != VtxFormat::default() {
        return Err(unused(
            at,
            "vtx",
            "VtxFormat::default() (a TEX instruction)",
        ));
    }
    w.put(t.resource_id, fetch.resource)?;
    w.put(f.src_gpr, fetch.src_gpr)?;
    w.put(f.dst_gpr, fetch.dst_gpr)?;
    w.put_signed(t.lod_bias, fetch.lod_bias)?;
    w.put(t.sampler_id, fetch.sampler)?;
    let (dst_sel, coord_type, src_sel) = (f.dst_sel(), t.coord_type(), t.src_sel());
    for c in 0..4 {
        w.put(dst_sel[c], fetch.dst_sel[c])?;
        w.put(coord_type[c], fetch.coord_normalized[c])?;
        w.put(src_sel[c], fetch.src_sel[c])?;
    }
    for (field, offset) in t.offset().into_iter().zip(fetch.offset) {
        w.put_signed(field, offset)?;
    }
    Ok(w.words)
}

/// The four dwords of a GDS operation (`gds_op` its GDS_OP), `w` holding the memory
/// instruction: the source GPR's x, y and z (the byte address and the operands), the
/// destination GPR's selects; the fourth dword is zero.
fn encode_gds(
    chip: Chip,
    at: At,
    fetch: &Fetch,
    gds_op: u32,
    mut w: Writer<4>,
) -> Result<[u32; 4], EncodeError> {
    let [x, y, z, _] = fetch.src_sel;
    let at_rest = Fetch::gds(
        fetch.op,
        fetch.src_gpr,
        [x, y, z],
        fetch.dst_gpr,
        fetch.dst_sel,
    );
    if *fetch != at_rest {
        return Err(unused(
            at,
            "resource, sampler, coordinates, offsets, vtx and src_sel[3]",
            "their defaults and src_sel[3] masked (a GDS operation)",
        ));
    }
    let g = GdsWords::of(chip);
    w.put(g.mem_op, GdsWords::MEM_OP_GDS)?;
    w.put(g.gds_op, gds_op)?;
    w.put(g.src_gpr, fetch.src_gpr)?;
    w.put(g.dst_gpr, fetch.dst_gpr)?;
    for (field, sel) in g.src_sel().into_iter().zip(fetch.src_sel) {
        w.put(field, sel)?;
    }
    for (field, sel) in g.dst_sel().into_iter().zip(fetch.dst_sel) {
        w.put(field, sel)?;
    }
    Ok(w.words)
}

/// The four dwords of a vertex fetch (VFETCH and its kin) or a memory read (READ_SCRATCH,
/// the MEM_RD words: the VTX words with the memory fields where the buffer, fetch type,
/// mega-fetch count and offset are), `w` holding the instruction.
fn encode_vtx(
    chip: Chip,
    at: At,
    fetch: &Fetch,
    mut w: Writer<4>,
) -> Result<[u32; 4], EncodeError> {
    if fetch.sampler != 0 {
        return Err(unused(at, "sampler", "0 (a vertex fetch)"));
    }
    if fetch.src_sel[1..] != [7, 7, 7] {
        return Err(unused(
            at,
            "src_sel[1..4]",
            "7 (a vertex fetch reads one address)",
        ));
    }
    if fetch.coord_normalized != [false; 4] || fetch.lod_bias != 0 || fetch.offset != [0; 3] {
        return Err(unused(
            at,
            "coord_normalized/lod_bias/offset",
            "false/0/0 (a vertex fetch)",
        ));
    }
    let vtx = &fetch.vtx;
    let (f, v) = (FetchWords::of(chip), VertexFetchWords::of(chip));
    w.put(f.dst_gpr, fetch.dst_gpr)?;
    w.put(v.data_format, vtx.data_format)?;
    w.put(v.num_format_all, vtx.num_format)?;
    w.put(v.format_comp_all, vtx.format_comp_signed)?;
    w.put(v.srf_mode_all, vtx.srf_mode)?;
    for (field, sel) in f.dst_sel().into_iter().zip(fetch.dst_sel) {
        w.put(field, sel)?;
    }
    w.put(f.src_gpr, fetch.src_gpr)?;
    w.put(v.src_sel_x, fetch.src_sel[0])?;
    w.put(v.endian_swap, vtx.endian_swap)?;
    if fetch.op == FetchOp::ReadScratch {
        let rest = VtxFormat {
            data_format: 0,
            num_format: 0,
            format_comp_signed: false,
            srf_mode: false,
            endian_swap: 0,
            mem: MemRead::default(),
            ..*vtx
        };
        if rest != VtxFormat::default() || fetch.resource != 0 {
            return Err(unused(
                at,
                "resource/offset/fetch_type/mega_fetch_count/use_const_fields",
                "0 (a memory read)",
            ));
        }
        let (m, mem) = (MemReadWords::of(chip), &vtx.mem);
        w.put(m.elem_size, mem.elem_size)?;
        w.put(m.indexed, mem.indexed)?;
        w.put(m.array_base, mem.array_base)?;
        w.put(m.array_size, mem.array_size)?;
        return Ok(w.words);
    }
    if vtx.mem != MemRead::default() {
        return Err(unused(at, "mem", "MemRead::default() (a vertex fetch)"));
    }
    // Cayman has no mega-fetch; before it Mesa always sets MEGA_FETCH (the count then applies).
    let mega = chip != Chip::Cayman;
    if !mega && vtx.mega_fetch_count != 0 {
        return Err(unused(
            at,
            "mega_fetch_count",
            "0 (Cayman has no mega-fetch)",
        ));
    }
    let x = VtxWords::of(chip);
    // Fetch type 3 is reserved.
    if vtx.fetch_type > 2 {
        return Err(EncodeError::Field {
            at,
            field: x.fetch_type.name,
            value: vtx.fetch_type.into(),
        });
    }
    w.put(x.fetch_type, vtx.fetch_type)?;
    w.put(x.buffer_id, fetch.resource)?;
    w.put(x.mega_fetch_count, vtx.mega_fetch_count)?;
    w.put(x.use_const_fields, vtx.use_const_fields)?;
    w.put(x.offset, vtx.offset)?;
    w.put(x.mega_fetch, mega)?;
    Ok(w.words)
}

/// The CF_ALLOC_EXPORT pair of an export or a scratch write. A scratch write (MEM_SCRATCH)
/// has the buffer form of WORD1 (ARRAY_SIZE, COMP_MASK) and its TYPE says whether it is
/// indexed and acknowledged; an export has the swizzle form.
fn encode_export(
    chip: Chip,
    at: At,
    cf: &Cf,
    opcode: u8,
    export: &Export,
) -> Result<[u32; 2], EncodeError> {
    // Evergreen's export WORD1 has MARK where the others have WHOLE_QUAD_MODE.
    if chip.is_evergreen_class() && cf.whole_quad_mode {
        return Err(unused(at, "whole_quad_mode", "false (an Evergreen export)"));
    }
    let rat = cf.op == CfOp::MemRat;
    let scratch = cf.op == CfOp::MemScratch;
    if scratch != (export.kind == ExportType::Scratch) || rat != (export.kind == ExportType::Rat) {
        return Err(EncodeError::Unsupported {
            at,
            what: format!("{} of type {:?}", cf.op, export.kind),
        });
    }
    let f = ExportWords::of(chip);
    let mut w = Writer::new(at);
    if scratch || rat {
        let mut comp_mask = 0u8;
        for (c, &sel) in export.swizzle.iter().enumerate() {
            match sel {
                7 => {}
                s if usize::from(s) == c => comp_mask |= 1 << c,
                _ => return Err(unused(at, "swizzle", "c or 7 (a scratch write's mask)")),
            }
        }
        let b = ExportBuffer::of(chip);
        // A scratch write's type: indexed in bit 0, acknowledged in bit 1 (a RAT write is
        // indexed: its coordinates).
        if rat && export.index_gpr.is_none() {
            return Err(unused(at, "index_gpr", "Some (a RAT write's coordinates)"));
        }
        w.put(
            f.export_type,
            u8::from(export.index_gpr.is_some()) | u8::from(export.ack) << 1,
        )?;
        w.put(b.array_size, export.array_size)?;
        w.put(b.comp_mask, comp_mask)?;
    } else {
        if export.index_gpr.is_some() || export.ack || export.array_size != 0 {
            return Err(unused(
                at,
                "index_gpr/ack/array_size",
                "None/false/0 (an export)",
            ));
        }
        for (field, sel) in ExportSwizzle::of(chip)
            .sel()
            .into_iter()
            .zip(export.swizzle)
        {
            w.put(field, sel)?;
        }
        let kind = match export.kind {
            ExportType::Pixel => 0,
            ExportType::Pos => 1,
            _ => 2,
        };
        w.put(f.export_type, kind)?;
    }
    // The RAT form of ARRAY_BASE: RAT_ID in bits 3:0, RAT_INST in 9:4.
    if rat && (export.base > 15 || export.rat_inst > 63) {
        return Err(unused(
            at,
            "base/rat_inst",
            "a RAT below 16 and an operation below 64",
        ));
    }
    if !rat && export.rat_inst != 0 {
        return Err(unused(at, "rat_inst", "0 (not a RAT write)"));
    }
    let array_base = if rat {
        export.base | u16::from(export.rat_inst) << 4
    } else {
        export.base
    };
    w.put(f.array_base, array_base)?;
    w.put(f.rw_gpr, export.gpr)?;
    w.put(f.index_gpr, export.index_gpr.unwrap_or(0))?;
    w.put(f.elem_size, export.elem_size)?;
    w.put(f.burst_count, i64::from(export.burst) - 1)?;
    put_common(&mut w, chip, cf, opcode)?;
    Ok(w.words)
}

/// Decodes the words [`assemble`] wrote back into the program. Errors name the CF instruction
/// (and group, instruction or fetch) the words stop making sense at; words the encoder would
/// not have written (see the module documentation) are an error too.
pub fn decode(binary: &Binary) -> Result<Program, DecodeError> {
    let reader = Reader {
        chip: binary.chip,
        words: &binary.words,
    };
    let program = Program {
        chip: binary.chip,
        cf: reader.cf_program()?,
        gprs: binary.gprs,
        stack_size: binary.stack_size,
        scratch_elements: binary.scratch_elements,
    };
    let again = assemble(&program).map_err(DecodeError::Invalid)?;
    if let Some((dword, (&found, &expected))) = binary
        .words
        .iter()
        .zip(&again.words)
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        return Err(DecodeError::NotCanonical {
            dword,
            found,
            expected,
        });
    }
    if again.words.len() != binary.words.len() {
        return Err(DecodeError::Length {
            len: binary.words.len(),
            expected: again.words.len(),
        });
    }
    Ok(program)
}

/// Reads the words of one binary.
struct Reader<'a> {
    chip: Chip,
    words: &'a [u32],
}

impl Reader<'_> {
    /// `N` dwords from `start`.
    fn read<const N: usize>(&self, at: At, start: usize) -> Result<[u32; N], DecodeError> {
        let end = start.saturating_add(N);
        self.words
            .get(start..end)
            .and_then(|words| words.try_into().ok())
            .ok_or(DecodeError::Truncated {
                at,
                needed: end,
                len: self.words.len(),
            })
    }

    /// The CF instructions, up to the end of the program, with their clauses.
    fn cf_program(&self) -> Result<Vec<Cf>, DecodeError> {
        let chip = self.chip;
        let mut cfs: Vec<Cf> = Vec::new();
        // For each CF pair read, the CF index a hardware address there names: none for the
        // CF_ALU pair after an ALU_EXTENDED prefix (its address is the prefix's).
        let mut targets: Vec<Option<usize>> = Vec::new();
        let mut extension: Option<[u32; 2]> = None;
        // The CF pair after the furthest CALL target read: the subroutines after the end of
        // the main program reach at least there.
        let mut called_until = 0;
        loop {
            let at = At::Cf(cfs.len());
            let pair = targets.len();
            let Some(&[word0, word1]) = self.words.get(2 * pair..2 * pair + 2) else {
                return Err(DecodeError::NoEnd {
                    len: self.words.len(),
                });
            };
            // The ALU clause opcodes (8-15) set the top bit of CF_ALU's 4-bit CF_INST, which
            // is the top bit of every CF_INST, clear in all other CF opcodes.
            let code = get(&[word0, word1], CfAluWords::of(chip).cf_inst);
            if code >= 8 {
                let op = CfOp::decode(chip, true, code as u8).ok_or(DecodeError::UnknownOp {
                    at,
                    kind: "CF_ALU",
                    opcode: code,
                    chip,
                })?;
                if op == CfOp::AluExtended {
                    if extension.replace([word0, word1]).is_some() {
                        return Err(malformed(at, "two ALU_EXTENDED prefixes in a row"));
                    }
                    targets.push(Some(cfs.len()));
                    continue;
                }
                targets.push(if extension.is_some() {
                    None
                } else {
                    Some(cfs.len())
                });
                cfs.push(self.alu_cf(cfs.len(), op, [word0, word1], extension.take())?);
                continue;
            }
            if extension.is_some() {
                return Err(malformed(
                    at,
                    "an ALU_EXTENDED prefix before a CF that is no ALU clause",
                ));
            }
            targets.push(Some(cfs.len()));
            let cf = self.cf(cfs.len(), [word0, word1])?;
            let end = if chip == Chip::Cayman {
                cf.op == CfOp::CfEnd
            } else {
                cf.end_of_program
            };
            if let (CfOp::Call, CfBody::Flow { addr, .. }) = (cf.op, &cf.body) {
                called_until = called_until.max(*addr as usize + 1);
            }
            let part_ends = end || cf.op == CfOp::Return;
            cfs.push(cf);
            if part_ends && called_until <= targets.len() {
                break;
            }
        }
        for (i, cf) in cfs.iter_mut().enumerate() {
            if let CfBody::Flow { addr, .. } = &mut cf.body {
                let target = targets.get(*addr as usize).copied().flatten();
                *addr = target.ok_or(DecodeError::Target {
                    at: At::Cf(i),
                    addr: *addr,
                })? as u32;
            }
        }
        Ok(cfs)
    }

    /// An ALU clause launch and its body; `extension` is the ALU_EXTENDED pair before it.
    fn alu_cf(
        &self,
        cf: usize,
        op: CfOp,
        [word0, word1]: [u32; 2],
        extension: Option<[u32; 2]>,
    ) -> Result<Cf, DecodeError> {
        let at = At::Cf(cf);
        let words = [word0, word1];
        let (f, e) = (CfAluWords::of(self.chip), AluExtendedWords::of(self.chip));
        // (bank, mode, line) of each set.
        let read = |words: &[u32; 2], [bank, mode, line]: [Field; 3]| {
            (get(words, bank), get(words, mode), get(words, line))
        };
        let mut sets = vec![read(&words, f.kcache(0)), read(&words, f.kcache(1))];
        if let Some(prefix) = extension {
            sets.push(read(&prefix, e.kcache(2)));
            sets.push(read(&prefix, e.kcache(3)));
        }
        let mut kcache = Vec::new();
        for (set, (bank, mode, line)) in sets.into_iter().enumerate() {
            match mode {
                0 => {}
                1 | 2 if kcache.len() == set => kcache.push(Kcache {
                    bank: bank as u8,
                    line: line as u8,
                    lines: mode as u8,
                }),
                1 | 2 => {
                    return Err(malformed(
                        at,
                        format!("kcache set {set} is locked after an unlocked set"),
                    ));
                }
                _ => {
                    return Err(malformed(
                        at,
                        format!("kcache set {set} uses LOCK_LOOP_INDEX"),
                    ));
                }
            }
        }
        let start = 2 * get(&words, f.addr) as usize;
        let slots = get(&words, f.count) as usize + 1;
        Ok(Cf {
            op,
            body: CfBody::Alu {
                kcache,
                groups: self.alu_clause(cf, start, slots)?,
            },
            barrier: bit(&words, f.barrier),
            end_of_program: false,
            valid_pixel_mode: false,
            whole_quad_mode: bit(&words, f.whole_quad_mode),
        })
    }

    /// The groups of an ALU clause of `slots` slots from dword `start`.
    fn alu_clause(&self, cf: usize, start: usize, slots: usize) -> Result<Vec<Group>, DecodeError> {
        let end = start + 2 * slots;
        let mut pos = start;
        let mut groups = Vec::new();
        while pos < end {
            let g = groups.len();
            let at = At::Group { cf, group: g };
            let mut group = Group::default();
            loop {
                if pos == end {
                    return Err(malformed(
                        at,
                        "the clause ends inside the group (no LAST bit)",
                    ));
                }
                if group.insts.len() == self.chip.slots() {
                    let why = format!("more than {} instructions without LAST", self.chip.slots());
                    return Err(malformed(at, why));
                }
                let at = At::Inst {
                    cf,
                    group: g,
                    inst: group.insts.len(),
                };
                let words = self.read(at, pos)?;
                pos += 2;
                group.insts.push(self.alu(at, words)?);
                if bit(&words, AluWords::of(self.chip).last) {
                    break;
                }
            }
            let count = literals_read(&group.insts);
            let padded = count.next_multiple_of(2);
            if pos + padded > end {
                return Err(malformed(
                    at,
                    "the group's literals run past the end of the clause",
                ));
            }
            let literals = self
                .words
                .get(pos..pos + count)
                .ok_or(DecodeError::Truncated {
                    at,
                    needed: pos + count,
                    len: self.words.len(),
                })?;
            group.literals = literals.to_vec();
            pos += padded;
            groups.push(group);
        }
        Ok(groups)
    }

    /// An ALU instruction.
    fn alu(&self, at: At, words: [u32; 2]) -> Result<AluInst, DecodeError> {
        let chip = self.chip;
        let (f, op2, op3) = (AluWords::of(chip), AluOp2::of(chip), AluOp3::of(chip));
        // Every OP3 opcode is 4 or more: the top three bits of its ALU_INST, zero in the words
        // of every OP2 opcode.
        let is_op3 = get(&words, op3.alu_inst) >= 4;
        if chip.is_evergreen_class() && get(&words, op3.alu_inst) == u32::from(LDS_IDX_OP) {
            return self.lds(at, words);
        }
        let opcode = get(&words, if is_op3 { op3.alu_inst } else { op2.alu_inst });
        let op = AluOpcode::decode(chip, is_op3, opcode as u16).ok_or(DecodeError::UnknownOp {
            at,
            kind: if is_op3 { "ALU OP3" } else { "ALU OP2" },
            opcode,
            chip,
        })?;
        let src = |fields: &SrcFields, abs: bool| Src {
            sel: get(&words, fields.sel) as u16,
            rel: bit(&words, fields.rel),
            chan: get(&words, fields.chan) as u8,
            neg: bit(&words, fields.neg),
            abs,
        };
        let pred_sel = match get(&words, f.pred_sel) {
            0 => PredSel::Off,
            2 => PredSel::Zero,
            3 => PredSel::One,
            _ => return Err(malformed(at, "PRED_SEL 1 is reserved")),
        };
        let op2_bit = |field: Field| !is_op3 && bit(&words, field);
        let [src0, src1] = f.srcs();
        Ok(AluInst {
            op,
            dst: Dst {
                gpr: get(&words, f.dst_gpr) as u8,
                chan: get(&words, f.dst_chan) as u8,
                rel: bit(&words, f.dst_rel),
                clamp: bit(&words, f.clamp),
                write: is_op3 || bit(&words, op2.write_mask),
            },
            src: [
                src(&src0, op2_bit(op2.src0_abs)),
                src(&src1, op2_bit(op2.src1_abs)),
                if is_op3 {
                    src(&op3.src2(), false)
                } else {
                    Src::default()
                },
            ],
            omod: if is_op3 {
                0
            } else {
                get(&words, op2.omod) as u8
            },
            pred_sel,
            update_exec_mask: op2_bit(op2.update_exec_mask),
            update_pred: op2_bit(op2.update_pred),
            bank_swizzle: get(&words, f.bank_swizzle) as u8,
            index_mode: get(&words, f.index_mode) as u8,
            origin: None,
        })
    }

    /// An LDS operation (an LDS_IDX_OP word).
    fn lds(&self, at: At, words: [u32; 2]) -> Result<AluInst, DecodeError> {
        let chip = self.chip;
        let (f, l) = (AluWords::of(chip), AluLds::of(chip));
        if l.idx_offset().iter().any(|&field| bit(&words, field)) {
            return Err(malformed(
                at,
                "an LDS index offset other than 0 (the second address of the two-address \
                 operations, which programs here do not use)",
            ));
        }
        let lds_op = get(&words, l.lds_op);
        let op = AluOpcode::decode_lds(chip, lds_op as u16).ok_or(DecodeError::UnknownOp {
            at,
            kind: "LDS",
            opcode: lds_op,
            chip,
        })?;
        let src = |fields: &SrcFields| Src {
            sel: get(&words, fields.sel) as u16,
            rel: bit(&words, fields.rel),
            chan: get(&words, fields.chan) as u8,
            ..Src::default()
        };
        let [src0, src1] = f.srcs();
        let pred_sel = match get(&words, f.pred_sel) {
            0 => PredSel::Off,
            2 => PredSel::Zero,
            3 => PredSel::One,
            _ => return Err(malformed(at, "PRED_SEL 1 is reserved")),
        };
        let mut inst = AluInst::new(
            op,
            Dst::none(get(&words, f.dst_chan) as u8),
            &[src(&src0), src(&src1), src(&l.src2())],
        );
        for k in op.nsrc()..3 {
            inst.src[k] = Src::default();
        }
        inst.pred_sel = pred_sel;
        inst.bank_swizzle = get(&words, f.bank_swizzle) as u8;
        inst.index_mode = get(&words, f.index_mode) as u8;
        Ok(inst)
    }

    /// A CF instruction other than an ALU clause launch, with its fetch clause if it has one.
    /// Flow targets stay hardware addresses; the caller maps them.
    fn cf(&self, cf: usize, words: [u32; 2]) -> Result<Cf, DecodeError> {
        let chip = self.chip;
        let at = At::Cf(cf);
        let (f, common) = (CfWords::of(chip), CfCommon::of(chip));
        let code = get(&words, common.cf_inst);
        let op = CfOp::decode(chip, false, code as u8).ok_or(DecodeError::UnknownOp {
            at,
            kind: "CF",
            opcode: code,
            chip,
        })?;
        let addr = get(&words, f.addr);
        let body = match op {
            CfOp::Tex | CfOp::Vtx | CfOp::VtxTc | CfOp::Gds => {
                let n = get(&words, f.count) | get(&words, f.count_3) << f.count.bits;
                let start = (addr as usize).saturating_mul(2);
                let fetches = (0..=n as usize)
                    .map(|k| {
                        let at = At::Fetch { cf, fetch: k };
                        let words = self.read::<4>(at, start.saturating_add(4 * k))?;
                        self.fetch(at, op, words)
                    })
                    .collect::<Result<_, _>>()?;
                CfBody::Fetch(fetches)
            }
            _ if op.is_export() => CfBody::Export(self.export(at, op, words)?),
            _ => CfBody::Flow {
                addr,
                pop_count: get(&words, f.pop_count) as u8,
                cf_const: get(&words, f.cf_const) as u8,
                cond: get(&words, f.cond) as u8,
            },
        };
        // Evergreen's exports have MARK, not WHOLE_QUAD_MODE, in that bit.
        let mark = chip.is_evergreen_class() && op.is_export();
        Ok(Cf {
            op,
            body,
            barrier: bit(&words, common.barrier),
            end_of_program: bit(&words, common.end_of_program),
            valid_pixel_mode: bit(&words, common.valid_pixel_mode),
            whole_quad_mode: bit(&words, common.whole_quad_mode) && !mark,
        })
    }

    fn export(&self, at: At, op: CfOp, words: [u32; 2]) -> Result<Export, DecodeError> {
        let f = ExportWords::of(self.chip);
        let kind = get(&words, f.export_type);
        let mut export = Export {
            burst: get(&words, f.burst_count) as u8 + 1,
            elem_size: get(&words, f.elem_size) as u8,
            ..Export::new(
                ExportType::Scratch,
                get(&words, f.array_base) as u16,
                get(&words, f.rw_gpr) as u8,
                ExportSwizzle::of(self.chip)
                    .sel()
                    .map(|sel| get(&words, sel) as u8),
            )
        };
        if op == CfOp::MemScratch || op == CfOp::MemRat {
            // Indexed in bit 0 of the type, acknowledged in bit 1.
            let b = ExportBuffer::of(self.chip);
            export.index_gpr = (kind & 1 != 0).then(|| get(&words, f.index_gpr) as u8);
            export.ack = kind & 2 != 0;
            export.array_size = get(&words, b.array_size) as u16;
            let mask = get(&words, b.comp_mask);
            export.swizzle = [0, 1, 2, 3].map(|c| if mask >> c & 1 != 0 { c as u8 } else { 7 });
            if op == CfOp::MemRat {
                export.kind = ExportType::Rat;
                export.rat_inst = (export.base >> 4) as u8;
                export.base &= 15;
            }
            return Ok(export);
        }
        export.kind = match kind {
            0 => ExportType::Pixel,
            1 => ExportType::Pos,
            2 => ExportType::Param,
            _ => return Err(malformed(at, "export type 3 is reserved")),
        };
        Ok(export)
    }

    /// A fetch of a clause launched by `clause`. VTX clauses hold vertex fetches. A TEX clause
    /// may hold either kind (Evergreen's fetches through the texture cache, and Cayman's, which
    /// has no VTX clause): the instruction field (bits 4:0) tells them apart, as no chip gives a
    /// vertex-fetch and a texture instruction the same number there.
    fn fetch(&self, at: At, clause: CfOp, words: [u32; 4]) -> Result<Fetch, DecodeError> {
        let chip = self.chip;
        let f = FetchWords::of(chip);
        let inst = get(&words, f.fetch_inst);
        if clause == CfOp::Gds {
            return self.gds(at, inst, words);
        }
        if let Some(op) = FetchOp::decode(chip, true, inst) {
            return Ok(vertex_fetch(chip, op, words));
        }
        if clause != CfOp::Tex {
            return Err(DecodeError::UnknownOp {
                at,
                kind: "VTX",
                opcode: inst,
                chip,
            });
        }
        let t = TexWords::of(chip);
        let code = inst | get(&words, t.inst_mod) << 8;
        let op = FetchOp::decode(chip, false, code).ok_or(DecodeError::UnknownOp {
            at,
            kind: "TEX",
            opcode: code,
            chip,
        })?;
        Ok(Fetch {
            op,
            resource: get(&words, t.resource_id) as u8,
            sampler: get(&words, t.sampler_id) as u8,
            src_gpr: get(&words, f.src_gpr) as u8,
            src_sel: t.src_sel().map(|sel| get(&words, sel) as u8),
            dst_gpr: get(&words, f.dst_gpr) as u8,
            dst_sel: f.dst_sel().map(|sel| get(&words, sel) as u8),
            coord_normalized: t.coord_type().map(|normalized| bit(&words, normalized)),
            lod_bias: signed(&words, t.lod_bias),
            offset: t.offset().map(|offset| signed(&words, offset)),
            vtx: VtxFormat::default(),
        })
    }
}

impl Reader<'_> {
    /// A GDS operation (`inst` the memory instruction its words start with).
    fn gds(&self, at: At, inst: u32, words: [u32; 4]) -> Result<Fetch, DecodeError> {
        let g = GdsWords::of(self.chip);
        let (mem_op, gds_op) = (get(&words, g.mem_op), get(&words, g.gds_op));
        let op = FetchOp::decode_gds(self.chip, gds_op)
            .filter(|op| op.opcode(self.chip).is_some_and(|code| code & 0xff == inst))
            .filter(|_| mem_op == GdsWords::MEM_OP_GDS)
            .ok_or(DecodeError::UnknownOp {
                at,
                kind: "GDS",
                opcode: inst | mem_op << 8 | gds_op << 16,
                chip: self.chip,
            })?;
        if let Some((_, name)) = g.at_rest().into_iter().find(|&(f, _)| get(&words, f) != 0) {
            return Err(malformed(at, format!("GDS field {name} is set")));
        }
        Ok(Fetch::gds(
            op,
            get(&words, g.src_gpr) as u8,
            g.src_sel().map(|sel| get(&words, sel) as u8),
            get(&words, g.dst_gpr) as u8,
            g.dst_sel().map(|sel| get(&words, sel) as u8),
        ))
    }
}

/// A vertex fetch or a memory read.
fn vertex_fetch(chip: Chip, op: FetchOp, words: [u32; 4]) -> Fetch {
    let (f, v) = (FetchWords::of(chip), VertexFetchWords::of(chip));
    let mut fetch = Fetch {
        op,
        resource: 0,
        sampler: 0,
        src_gpr: get(&words, f.src_gpr) as u8,
        src_sel: [get(&words, v.src_sel_x) as u8, 7, 7, 7],
        dst_gpr: get(&words, f.dst_gpr) as u8,
        dst_sel: f.dst_sel().map(|sel| get(&words, sel) as u8),
        coord_normalized: [false; 4],
        lod_bias: 0,
        offset: [0; 3],
        vtx: VtxFormat {
            data_format: get(&words, v.data_format) as u8,
            num_format: get(&words, v.num_format_all) as u8,
            format_comp_signed: bit(&words, v.format_comp_all),
            srf_mode: bit(&words, v.srf_mode_all),
            endian_swap: get(&words, v.endian_swap) as u8,
            ..VtxFormat::default()
        },
    };
    if op == FetchOp::ReadScratch {
        let m = MemReadWords::of(chip);
        fetch.vtx.mem = MemRead {
            array_base: get(&words, m.array_base) as u16,
            array_size: get(&words, m.array_size) as u16,
            elem_size: get(&words, m.elem_size) as u8,
            indexed: bit(&words, m.indexed),
        };
    } else {
        let x = VtxWords::of(chip);
        fetch.resource = get(&words, x.buffer_id) as u8;
        fetch.vtx.offset = get(&words, x.offset) as u16;
        fetch.vtx.fetch_type = get(&words, x.fetch_type) as u8;
        fetch.vtx.mega_fetch_count = get(&words, x.mega_fetch_count) as u8;
        fetch.vtx.use_const_fields = bit(&words, x.use_const_fields);
    }
    fetch
}

fn malformed(at: At, why: impl Into<String>) -> DecodeError {
    DecodeError::Malformed {
        at,
        why: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Slots;
    use crate::program::Slot;
    use crate::program::end_program;
    use proptest::prelude::*;

    fn lit(chan: u8) -> Src {
        Src::sel(sel::LITERAL, chan)
    }

    /// Channel `chan` of constant `index` of kcache set `set`.
    fn kc(set: usize, index: u16, chan: u8) -> Src {
        Src::sel(sel::KCACHE[set] + index, chan)
    }

    fn neg(src: Src) -> Src {
        Src { neg: true, ..src }
    }

    fn inst(op: AluOpcode, dst: Dst, srcs: &[Src]) -> AluInst {
        AluInst::new(op, dst, srcs)
    }

    fn group(insts: Vec<AluInst>, literals: &[u32]) -> Group {
        Group {
            insts,
            literals: literals.to_vec(),
        }
    }

    fn alu(op: CfOp, kcache: &[Kcache], groups: Vec<Group>) -> Cf {
        Cf::new(
            op,
            CfBody::Alu {
                kcache: kcache.to_vec(),
                groups,
            },
        )
    }

    fn with_literals(group: Group, literals: &[u32]) -> Group {
        Group {
            literals: literals.to_vec(),
            ..group
        }
    }

    fn mov(gpr: u8, chan: u8, src: Src) -> Group {
        group(vec![inst(AluOpcode::Mov, Dst::gpr(gpr, chan), &[src])], &[])
    }

    fn export(op: CfOp, kind: ExportType, base: u16, gpr: u8, burst: u8) -> Cf {
        let export = Export {
            burst,
            elem_size: 3,
            ..Export::new(kind, base, gpr, [0, 1, 2, 3])
        };
        Cf::new(op, CfBody::Export(export))
    }

    fn pixel_export() -> Cf {
        export(CfOp::ExportDone, ExportType::Pixel, 0, 0, 1)
    }

    fn kcache(bank: u8, line: u8, lines: u8) -> Kcache {
        Kcache { bank, line, lines }
    }

    /// `cf` completed for `chip`: END_OF_PROGRAM on its last instruction, or on Cayman a
    /// CF_END after it.
    fn program(chip: Chip, mut cf: Vec<Cf>) -> Program {
        end_program(chip, &mut cf);
        Program {
            chip,
            cf,
            gprs: 8,
            stack_size: 1,
            scratch_elements: 0,
        }
    }

    /// A binary's file carries the state registers beside the words; anything else is refused.
    #[test]
    fn files_carry_the_state_registers() {
        let binary = Binary {
            chip: Chip::Evergreen,
            words: vec![1, 2, 0xdead_beef],
            gprs: 7,
            stack_size: 3,
            scratch_elements: 260,
        };
        let file = binary.to_file();
        assert_eq!(file.len(), FILE_HEADER + 12);
        assert_eq!(Binary::from_file(&file, Chip::Evergreen), Ok(binary));
        assert_eq!(
            Binary::from_file(&file, Chip::Cayman)
                .unwrap_err()
                .to_string(),
            "a binary for evergreen, not cayman"
        );
        assert_eq!(
            Binary::from_file(&file[..file.len() - 1], Chip::Evergreen),
            Err(FileError::Dwords { len: 11 })
        );
        for corrupt in [0, 4, 7, 11] {
            let mut bad = file.clone();
            bad[corrupt] ^= 0x40;
            assert_eq!(
                Binary::from_file(&bad, Chip::Evergreen),
                Err(FileError::Header),
                "byte {corrupt}"
            );
        }
        assert_eq!(
            Binary::from_file(&file[..5], Chip::Evergreen),
            Err(FileError::Header)
        );
    }

    /// The words of `program`, after checking that they decode back to it.
    fn round_trip(program: &Program) -> Vec<u32> {
        let binary = assemble(program).unwrap_or_else(|e| panic!("{:?}: {e}", program.chip));
        assert_eq!(decode(&binary), Ok(program.clone()), "{:?}", program.chip);
        binary.words
    }

    fn assemble_err(program: &Program) -> EncodeError {
        assemble(program).expect_err("the program should not encode")
    }

    /// Field `f` of the instruction whose first dword is `words[at]`.
    fn field(words: &[u32], at: usize, f: Field) -> u32 {
        get(&words[at..], f)
    }

    /// The dword where the body of the clause whose CF words start at `cf_dword` starts, as
    /// they say (64-bit units × 2).
    fn body_of(chip: Chip, words: &[u32], cf_dword: usize, alu: bool) -> usize {
        let addr = if alu {
            CfAluWords::of(chip).addr
        } else {
            CfWords::of(chip).addr
        };
        2 * field(words, cf_dword, addr) as usize
    }

    #[test]
    fn literals_follow_their_group_padded_to_an_even_count() {
        for chip in Chip::ALL {
            let g0 = group(
                vec![
                    inst(
                        AluOpcode::Muladd,
                        Dst::gpr(1, 0),
                        &[Src::gpr(0, 0), lit(0), Src::sel(sel::HALF, 0)],
                    ),
                    inst(AluOpcode::Mov, Dst::gpr(1, 1), &[kc(0, 3, 2)]),
                ],
                &[0x4049_0fdb],
            );
            let g1 = group(
                vec![
                    inst(AluOpcode::Add, Dst::gpr(2, 0), &[lit(0), lit(1)]),
                    inst(
                        AluOpcode::Mul,
                        Dst::gpr(2, 1),
                        &[lit(2), Src::sel(sel::PV, 0)],
                    ),
                ],
                &[0x3fc0_0000, 0x4020_0000, 0x4060_0000],
            );
            let mut g2 = vec![inst(
                AluOpcode::Mov,
                Dst::gpr(3, 2),
                &[Src::sel(sel::PV, 1)],
            )];
            if chip.has_trans() {
                // z is taken, so this ADD goes to the trans slot.
                g2.push(inst(
                    AluOpcode::Add,
                    Dst::gpr(4, 2),
                    &[Src::sel(sel::PS, 0), Src::sel(sel::ONE, 0)],
                ));
            } else {
                g2.push(inst(
                    AluOpcode::Mov,
                    Dst::gpr(3, 3),
                    &[Src::sel(sel::MINUS_ONE_INT, 0)],
                ));
            }
            let clause = alu(CfOp::Alu, &[kcache(2, 0, 1)], vec![g0, g1, group(g2, &[])]);
            let words = round_trip(&program(chip, vec![clause, pixel_export()]));
            let b = body_of(chip, &words, 0, true);
            assert_eq!(
                b,
                if chip == Chip::Cayman { 6 } else { 4 },
                "{chip:?}: the body follows the CF words"
            );
            let last = |at| field(&words, at, AluWords::of(chip).last);
            // Group 0: LAST on its second instruction, then the literal and a zero.
            assert_eq!([last(b), last(b + 2)], [0, 1], "{chip:?}");
            assert_eq!(words[b + 4..b + 6], [0x4049_0fdb, 0], "{chip:?}");
            // Group 1: three literals and a zero.
            assert_eq!(last(b + 8), 1, "{chip:?}");
            assert_eq!(
                words[b + 10..b + 14],
                [0x3fc0_0000, 0x4020_0000, 0x4060_0000, 0],
                "{chip:?}"
            );
            // COUNT = slots - 1: 3 + 4 + 2.
            assert_eq!(field(&words, 0, CfAluWords::of(chip).count), 8, "{chip:?}");
            assert_eq!(words.len(), b + 18, "{chip:?}");
        }
    }

    #[test]
    fn two_kcache_sets_sit_in_the_cf_alu_words() {
        for chip in Chip::ALL {
            let sets = [kcache(1, 2, 2), kcache(15, 7, 1)];
            let reads = group(
                vec![
                    inst(AluOpcode::Mov, Dst::gpr(0, 0), &[kc(0, 31, 3)]),
                    inst(AluOpcode::Mov, Dst::gpr(0, 1), &[kc(1, 15, 0)]),
                ],
                &[],
            );
            let words = round_trip(&program(
                chip,
                vec![alu(CfOp::Alu, &sets, vec![reads]), pixel_export()],
            ));
            let f = CfAluWords::of(chip);
            let sets = [0, 1].map(|set| f.kcache(set).map(|bits| field(&words, 0, bits)));
            // (bank, mode, line) of each set.
            assert_eq!(sets, [[1, 2, 2], [15, 1, 7]], "{chip:?}");
            assert_eq!(field(&words, 0, f.cf_inst), 8, "{chip:?}: CF_INST ALU");
        }
        for chip in [Chip::R600, Chip::R700] {
            let sets = [kcache(0, 0, 1), kcache(1, 0, 1), kcache(2, 0, 1)];
            let p = program(
                chip,
                vec![
                    alu(CfOp::Alu, &sets, vec![mov(0, 0, kc(2, 0, 0))]),
                    pixel_export(),
                ],
            );
            assert_eq!(
                assemble_err(&p),
                EncodeError::KcacheSets {
                    at: At::Cf(0),
                    sets: 3,
                    max: 2,
                    chip
                }
            );
        }
    }

    #[test]
    fn more_kcache_sets_take_an_extended_prefix_that_shifts_jump_targets() {
        for chip in [Chip::Evergreen, Chip::Cayman] {
            let two = [kcache(1, 0, 1), kcache(2, 1, 1)];
            let four = [
                kcache(1, 0, 1),
                kcache(2, 1, 1),
                kcache(9, 3, 2),
                kcache(12, 200, 1),
            ];
            let reads = group(
                vec![
                    inst(AluOpcode::Mov, Dst::gpr(0, 0), &[kc(2, 20, 0)]),
                    inst(AluOpcode::Mov, Dst::gpr(0, 1), &[kc(3, 15, 1)]),
                ],
                &[],
            );
            let cf = vec![
                alu(CfOp::Alu, &two, vec![mov(0, 0, kc(1, 1, 0))]), // pair 0
                Cf::flow(CfOp::Jump, 3, 0),                         // pair 1
                alu(CfOp::Alu, &four, vec![reads]),                 // pairs 2 (prefix) and 3
                alu(CfOp::Alu, &four[..3], vec![mov(1, 0, kc(2, 0, 0))]), // pairs 4 (prefix) and 5
                Cf::flow(CfOp::Jump, 2, 0),                         // pair 6
                pixel_export(),                                     // pair 7
            ];
            let words = round_trip(&program(chip, cf));
            assert_eq!(
                words[2], 4,
                "{chip:?}: the forward jump targets CF 3's prefix"
            );
            assert_eq!(
                words[12], 2,
                "{chip:?}: the backward jump targets CF 2's prefix"
            );
            let e = AluExtendedWords::of(chip);
            let set = |prefix, set| e.kcache(set).map(|bits| field(&words, prefix, bits));
            for (prefix, mode3) in [(4, 1), (8, 0)] {
                assert_eq!(
                    field(&words, prefix, e.cf_inst),
                    12,
                    "{chip:?}: ALU_EXTENDED"
                );
                assert_eq!(set(prefix, 2), [9, 2, 3], "{chip:?}: set 2");
                assert_eq!(set(prefix, 3)[1], mode3, "{chip:?}: set 3's mode");
                assert_eq!(
                    field(&words, prefix + 2, CfAluWords::of(chip).cf_inst),
                    8,
                    "{chip:?}: the CF_ALU pair follows"
                );
            }
            assert_eq!(set(4, 3), [12, 1, 200], "{chip:?}: set 3");
            // The bodies follow the 8 CF pairs (9 with Cayman's CF_END); CF 0's takes 2 dwords.
            assert_eq!(
                body_of(chip, &words, 6, true),
                if chip == Chip::Cayman { 20 } else { 18 }
            );
        }
    }

    #[test]
    fn op3_instructions_use_the_three_source_layout() {
        for chip in Chip::ALL {
            let muladd = inst(
                AluOpcode::Muladd,
                Dst::gpr(5, 1),
                &[neg(Src::gpr(1, 0)), Src::gpr(2, 3), neg(Src::gpr(3, 2))],
            );
            let cnde = inst(
                AluOpcode::CndeInt,
                Dst::gpr(6, 2),
                &[Src::gpr(1, 3), Src::gpr(2, 0), Src::gpr(7, 1)],
            );
            let clause = alu(CfOp::Alu, &[], vec![group(vec![muladd, cnde], &[])]);
            let words = round_trip(&program(chip, vec![clause, pixel_export()]));
            let b = body_of(chip, &words, 0, true);
            let (f, op3) = (AluWords::of(chip), AluOp3::of(chip));
            let (m, c) = (b, b + 2);
            assert_eq!(
                field(&words, m, op3.alu_inst),
                u32::from(AluOpcode::Muladd.opcode(chip).unwrap()),
                "{chip:?}"
            );
            assert_eq!(
                field(&words, c, op3.alu_inst),
                u32::from(AluOpcode::CndeInt.opcode(chip).unwrap()),
                "{chip:?}"
            );
            // SRC2 of MULADD: -R3.z.
            let src2 = op3.src2();
            assert_eq!(
                [src2.sel, src2.chan, src2.neg].map(|bits| field(&words, m, bits)),
                [3, 2, 1],
                "{chip:?}"
            );
            assert_eq!(
                [f.dst_gpr, f.dst_chan].map(|bits| field(&words, m, bits)),
                [5, 1],
                "{chip:?}: dst R5.y"
            );
            assert_eq!(field(&words, m, f.src0_neg), 1, "{chip:?}: SRC0 negated");
        }
    }

    #[test]
    fn trans_operations_take_the_trans_slot_or_are_replicated_on_cayman() {
        let recip = |chan, write| {
            let dst = Dst {
                write,
                ..Dst::gpr(2, chan)
            };
            inst(AluOpcode::RecipIeee, dst, &[Src::gpr(1, 1)])
        };
        let vliw5 = group(
            vec![
                inst(AluOpcode::Mov, Dst::gpr(0, 0), &[Src::gpr(1, 0)]),
                recip(3, true),
            ],
            &[],
        );
        assert_eq!(vliw5.slots(Chip::Evergreen), Some(vec![Slot::X, Slot::T]));
        let words = round_trip(&program(
            Chip::Evergreen,
            vec![alu(CfOp::Alu, &[], vec![vliw5]), pixel_export()],
        ));
        let b = body_of(Chip::Evergreen, &words, 0, true);
        let op2 = AluOp2::of(Chip::Evergreen);
        assert_eq!(
            field(&words, b + 2, op2.alu_inst),
            0x86,
            "RECIP_IEEE's Evergreen opcode"
        );
        let last = AluWords::of(Chip::Evergreen).last;
        assert_eq!(
            field(&words, b + 2, last),
            1,
            "LAST on the trans instruction"
        );

        let replicated = group(vec![recip(0, false), recip(1, true), recip(2, false)], &[]);
        assert_eq!(
            replicated.slots(Chip::Cayman),
            Some(vec![Slot::X, Slot::Y, Slot::Z])
        );
        let words = round_trip(&program(
            Chip::Cayman,
            vec![alu(CfOp::Alu, &[], vec![replicated]), pixel_export()],
        ));
        let b = body_of(Chip::Cayman, &words, 0, true);
        let op2 = AluOp2::of(Chip::Cayman);
        let writes: Vec<u32> = (0..3)
            .map(|k| field(&words, b + 2 * k, op2.write_mask))
            .collect();
        assert_eq!(writes, [0, 1, 0], "only the y replica writes");
        assert!((0..3).all(|k| field(&words, b + 2 * k, op2.alu_inst) == 0x86));
    }

    #[test]
    fn op2_flags_sit_where_each_chip_puts_them() {
        for chip in Chip::ALL {
            let mut pred = inst(
                AluOpcode::PredSetne,
                Dst::none(0),
                &[Src::gpr(0, 0), Src::sel(sel::ZERO, 0)],
            );
            pred.update_exec_mask = true;
            pred.update_pred = true;
            let mut doubled = inst(
                AluOpcode::Mov,
                Dst::gpr(1, 1),
                &[Src {
                    abs: true,
                    ..Src::gpr(0, 1)
                }],
            );
            doubled.omod = 1;
            doubled.pred_sel = PredSel::Zero;
            doubled.bank_swizzle = 5;
            let cf = vec![
                alu(
                    CfOp::AluPushBefore,
                    &[],
                    vec![group(vec![pred], &[]), group(vec![doubled], &[])],
                ),
                Cf::flow(CfOp::Pop, 0, 1),
                pixel_export(),
            ];
            let words = round_trip(&program(chip, cf));
            let b = body_of(chip, &words, 0, true);
            let (f, op2) = (AluWords::of(chip), AluOp2::of(chip));
            assert_eq!(field(&words, b, op2.alu_inst), 0x23, "{chip:?}: PRED_SETNE");
            assert_eq!(
                [op2.update_exec_mask, op2.update_pred, op2.write_mask]
                    .map(|bits| field(&words, b, bits)),
                [1, 1, 0],
                "{chip:?}: exec mask and predicate, no write"
            );
            let doubled = b + 2;
            assert_eq!(field(&words, doubled, op2.omod), 1, "{chip:?}: OMOD ×2");
            assert_eq!(
                [op2.src0_abs, f.bank_swizzle, f.pred_sel].map(|bits| field(&words, doubled, bits)),
                [1, 5, 2],
                "{chip:?}"
            );
            let cf_inst = CfAluWords::of(chip).cf_inst;
            assert_eq!(field(&words, 0, cf_inst), 9, "{chip:?}: ALU_PUSH_BEFORE");
        }
    }

    fn sample() -> Fetch {
        Fetch {
            op: FetchOp::Sample,
            resource: 3,
            sampler: 2,
            src_gpr: 4,
            src_sel: [0, 1, 7, 7],
            dst_gpr: 1,
            dst_sel: [0, 1, 2, 3],
            coord_normalized: [true, true, false, false],
            lod_bias: -5,
            offset: [-3, 2, 0],
            vtx: VtxFormat::default(),
        }
    }

    #[test]
    fn tex_clauses_are_aligned_and_their_fields_placed() {
        for chip in Chip::ALL {
            let mut fetches = vec![sample()];
            if chip.is_evergreen_class() {
                fetches.push(Fetch {
                    op: FetchOp::Ldfptr,
                    ..sample()
                });
            }
            let cf = vec![
                alu(CfOp::Alu, &[], vec![with_literals(mov(4, 0, lit(0)), &[9])]),
                Cf::new(CfOp::Tex, CfBody::Fetch(fetches.clone())),
                pixel_export(),
            ];
            let words = round_trip(&program(chip, cf));
            let b = body_of(chip, &words, 2, false);
            // CF words 6 (8 on Cayman), then the ALU body's 4: the TEX body is aligned from
            // 10 up to 12 (on Cayman it starts there).
            assert_eq!(b, 12, "{chip:?}");
            if chip != Chip::Cayman {
                assert_eq!(words[10..12], [0, 0], "{chip:?}: alignment padding");
            }
            let (f, t) = (FetchWords::of(chip), TexWords::of(chip));
            let get = |bits| field(&words, b, bits);
            assert_eq!(
                [
                    f.fetch_inst,
                    t.resource_id,
                    f.src_gpr,
                    f.dst_gpr,
                    t.sampler_id
                ]
                .map(get),
                [0x10, 3, 4, 1, 2],
                "{chip:?}"
            );
            assert_eq!(f.dst_sel().map(get), [0, 1, 2, 3], "{chip:?}");
            assert_eq!(t.coord_type().map(get), [1, 1, 0, 0], "{chip:?}");
            assert_eq!(get(t.lod_bias), 0x7b, "{chip:?}: LOD bias -5");
            assert_eq!(t.offset().map(get), [0x1d, 2, 0], "{chip:?}");
            assert_eq!(t.src_sel().map(get), [0, 1, 7, 7], "{chip:?}: xy__");
            assert_eq!(words[b + 3], 0, "{chip:?}: padding dword");
            assert_eq!(
                field(&words, 2, CfWords::of(chip).count),
                fetches.len() as u32 - 1,
                "{chip:?}: COUNT"
            );
            if chip.is_evergreen_class() {
                assert_eq!(
                    [f.fetch_inst, t.inst_mod].map(|bits| field(&words, b + 4, bits)),
                    [3, 1],
                    "LD, modifier 1"
                );
            }
        }
        // R700's fourth COUNT bit; R600's eight-fetch limit.
        let twelve = Cf::new(CfOp::Tex, CfBody::Fetch(vec![sample(); 12]));
        let words = round_trip(&program(Chip::R700, vec![twelve.clone(), pixel_export()]));
        let f = CfWords::of(Chip::R700);
        assert_eq!(
            [f.count, f.count_3].map(|bits| field(&words, 0, bits)),
            [3, 1]
        );
        let err = assemble_err(&program(Chip::R600, vec![twelve, pixel_export()]));
        assert_eq!(
            err,
            EncodeError::ClauseSize {
                at: At::Cf(0),
                size: 12,
                unit: "instructions",
                max: 8
            }
        );
    }

    #[test]
    fn gds_operations_use_the_mem_gds_words() {
        let gds = Fetch::gds(FetchOp::GdsCmpXchgRet, 3, [2, 0, 1], 5, [7, 0, 7, 7]);
        let clause = |op: CfOp, fetch: &Fetch| {
            vec![
                Cf::new(op, CfBody::Fetch(vec![fetch.clone()])),
                pixel_export(),
            ]
        };
        for chip in [Chip::Evergreen, Chip::Cayman] {
            let words = round_trip(&program(chip, clause(CfOp::Gds, &gds)));
            assert_eq!(
                field(&words, 0, CfCommon::of(chip).cf_inst),
                3,
                "CF_INST GDS"
            );
            let (f, g) = (FetchWords::of(chip), GdsWords::of(chip));
            let body = body_of(chip, &words, 0, false);
            let get = |bits| field(&words, body, bits);
            assert_eq!(
                [f.fetch_inst, g.mem_op, g.gds_op, g.src_gpr, g.dst_gpr].map(get),
                [2, 4, 0x30, 3, 5],
                "MEM_INST, MEM_OP, GDS_OP, the GPRs"
            );
            assert_eq!(g.src_sel().map(get), [2, 0, 1]);
            assert_eq!(g.dst_sel().map(get), [7, 0, 7, 7]);
            assert_eq!(words[body + 3], 0, "the fourth dword");
            // A GDS operation goes in a GDS clause only, with the texture fields at rest.
            let in_tex = program(chip, clause(CfOp::Tex, &gds));
            assert!(matches!(
                assemble_err(&in_tex),
                EncodeError::Unsupported { .. }
            ));
            let sampled = Fetch {
                sampler: 1,
                ..gds.clone()
            };
            let sampled = program(chip, clause(CfOp::Gds, &sampled));
            assert!(matches!(assemble_err(&sampled), EncodeError::Unused { .. }));
            // Words with an append-counter (UAV) field set do not decode.
            let mut binary = assemble(&program(chip, clause(CfOp::Gds, &gds))).unwrap();
            binary.words[body + 1] |= 1 << g.uav_id.lo;
            assert!(decode(&binary).is_err());
        }
        let r700 = program(Chip::R700, clause(CfOp::Gds, &gds));
        assert!(matches!(assemble_err(&r700), EncodeError::NotOnChip { .. }));
    }

    fn vfetch() -> Fetch {
        Fetch {
            op: FetchOp::Vfetch,
            resource: 5,
            sampler: 0,
            src_gpr: 0,
            src_sel: [1, 7, 7, 7],
            dst_gpr: 2,
            dst_sel: [0, 1, 2, 5],
            coord_normalized: [false; 4],
            lod_bias: 0,
            offset: [0; 3],
            vtx: VtxFormat {
                offset: 16,
                fetch_type: 1,
                mega_fetch_count: 15,
                data_format: 0x23,
                num_format: 2,
                format_comp_signed: true,
                srf_mode: true,
                use_const_fields: false,
                endian_swap: 0,
                mem: MemRead::default(),
            },
        }
    }

    #[test]
    fn vertex_fetches_use_the_vtx_words() {
        let cf = vec![
            Cf::new(CfOp::Vtx, CfBody::Fetch(vec![vfetch()])),
            pixel_export(),
        ];
        let chip = Chip::Evergreen;
        let words = round_trip(&program(chip, cf));
        let cf_inst = CfCommon::of(chip).cf_inst;
        assert_eq!(field(&words, 0, cf_inst), 2, "CF_INST VTX");
        let (f, v, x) = (
            FetchWords::of(chip),
            VertexFetchWords::of(chip),
            VtxWords::of(chip),
        );
        let get = |bits| field(&words, 4, bits);
        assert_eq!(
            [
                f.fetch_inst,
                x.fetch_type,
                x.buffer_id,
                v.src_sel_x,
                x.mega_fetch_count
            ]
            .map(get),
            [0, 1, 5, 1, 15]
        );
        assert_eq!(f.dst_sel().map(get), [0, 1, 2, 5]);
        assert_eq!(
            [
                f.dst_gpr,
                v.data_format,
                v.num_format_all,
                v.format_comp_all,
                v.srf_mode_all
            ]
            .map(get),
            [2, 0x23, 2, 1, 1]
        );
        assert_eq!(
            [x.offset, x.mega_fetch].map(get),
            [16, 1],
            "offset, MEGA_FETCH"
        );

        // Cayman has no VTX clause: the fetch goes in a TEX clause, without mega-fetch.
        let fetch = Fetch {
            vtx: VtxFormat {
                mega_fetch_count: 0,
                ..vfetch().vtx
            },
            ..vfetch()
        };
        let cf = vec![
            Cf::new(CfOp::Tex, CfBody::Fetch(vec![fetch.clone()])),
            pixel_export(),
        ];
        let words = round_trip(&program(Chip::Cayman, cf));
        let mega_fetch = VtxWords::of(Chip::Cayman).mega_fetch;
        assert_eq!(field(&words, 8, mega_fetch), 0, "no MEGA_FETCH on Cayman");
        let cf = vec![
            Cf::new(CfOp::Vtx, CfBody::Fetch(vec![fetch])),
            pixel_export(),
        ];
        assert!(matches!(
            assemble_err(&program(Chip::Cayman, cf)),
            EncodeError::NotOnChip {
                at: At::Cf(0),
                what: "VTX",
                ..
            }
        ));
    }

    #[test]
    fn vertex_and_texture_instruction_numbers_never_collide() {
        // The rule that tells the two kinds apart inside a TEX clause.
        for chip in Chip::ALL {
            for &op in FetchOp::ALL {
                if let Some(code) = op.opcode(chip)
                    && !op.is_vertex_fetch()
                    && !op.is_gds()
                {
                    assert_eq!(
                        FetchOp::decode(chip, true, code & 0x1f),
                        None,
                        "{op} on {chip:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn flow_targets_are_cf_indices_in_the_program_and_addresses_in_the_words() {
        for chip in Chip::ALL {
            let mut pred = inst(
                AluOpcode::PredSetneInt,
                Dst::none(0),
                &[Src::gpr(0, 0), Src::sel(sel::ZERO, 0)],
            );
            pred.update_exec_mask = true;
            pred.update_pred = true;
            let mut loop_pred = pred.clone();
            loop_pred.op = AluOpcode::PredSeteInt;
            let cf = vec![
                alu(CfOp::AluPushBefore, &[], vec![group(vec![pred], &[])]), // 0
                Cf::flow(CfOp::Jump, 3, 0),                                  // 1
                alu(CfOp::Alu, &[], vec![mov(1, 0, Src::sel(sel::ONE, 0))]), // 2
                Cf::flow(CfOp::Else, 5, 1),                                  // 3
                alu(
                    CfOp::AluPopAfter,
                    &[],
                    vec![mov(1, 0, Src::sel(sel::ZERO, 0))],
                ), // 4
                Cf::flow(CfOp::LoopStartDx10, 10, 0),                        // 5
                alu(CfOp::AluPushBefore, &[], vec![group(vec![loop_pred], &[])]), // 6
                Cf::flow(CfOp::LoopBreak, 9, 0),                             // 7
                Cf::flow(CfOp::Pop, 0, 1),                                   // 8
                Cf::flow(CfOp::LoopEnd, 6, 0),                               // 9
                pixel_export(),                                              // 10
            ];
            let words = round_trip(&program(chip, cf));
            let targets: Vec<u32> = [1, 3, 5, 7, 9].iter().map(|&cf| words[2 * cf]).collect();
            assert_eq!(targets, [3, 5, 10, 9, 6], "{chip:?}");
            let cf_inst = CfCommon::of(chip).cf_inst;
            let ops = [1, 3, 5, 7, 8, 9].map(|cf| field(&words, 2 * cf, cf_inst));
            assert_eq!(ops, [0x0a, 0x0d, 0x06, 0x09, 0x0e, 0x05], "{chip:?}");
            let pop_count = CfWords::of(chip).pop_count;
            assert_eq!(
                field(&words, 6, pop_count),
                1,
                "{chip:?}: ELSE pops one entry"
            );
        }
    }

    #[test]
    fn exports_carry_type_base_gpr_swizzle_and_burst() {
        // Mesa's words for Evergreen's `EXPORT_DONE PIXEL 0 R0.xyzw ES:3 EOP`.
        let words = round_trip(&program(Chip::Evergreen, vec![pixel_export()]));
        assert_eq!(words, [0xc000_0000, 0x9520_0688]);
        for chip in Chip::ALL {
            let mut param = export(CfOp::Export, ExportType::Param, 1, 2, 2);
            param.body = match param.body {
                CfBody::Export(e) => CfBody::Export(Export {
                    swizzle: [2, 7, 4, 5],
                    ..e
                }),
                body => body,
            };
            let cf = vec![
                export(CfOp::ExportDone, ExportType::Pos, 60, 1, 1),
                param,
                pixel_export(),
            ];
            let words = round_trip(&program(chip, cf));
            let f = ExportWords::of(chip);
            assert_eq!(
                [f.array_base, f.export_type, f.rw_gpr].map(|bits| field(&words, 0, bits)),
                [60, 1, 1]
            );
            assert_eq!(
                [f.export_type, f.burst_count].map(|bits| field(&words, 2, bits)),
                [2, 1]
            );
            let sel = ExportSwizzle::of(chip).sel();
            assert_eq!(sel.map(|bits| field(&words, 2, bits)), [2, 7, 4, 5]);
            let end_of_program = CfCommon::of(chip).end_of_program;
            assert_eq!(
                field(&words, 4, end_of_program) == 1,
                chip != Chip::Cayman,
                "{chip:?}: END_OF_PROGRAM"
            );
        }
    }

    #[test]
    fn cayman_programs_end_with_cf_end() {
        let p = program(
            Chip::Cayman,
            vec![
                alu(CfOp::Alu, &[], vec![mov(0, 0, Src::gpr(1, 0))]),
                pixel_export(),
            ],
        );
        let words = round_trip(&p);
        let common = CfCommon::of(Chip::Cayman);
        assert_eq!(field(&words, 4, common.cf_inst), 0x20, "CF_INST CF_END");
        assert_eq!(
            field(&words, 2, common.end_of_program),
            0,
            "no END_OF_PROGRAM bit"
        );

        let mut no_end = p.clone();
        no_end.cf.pop();
        assert!(matches!(
            assemble_err(&no_end),
            EncodeError::EndOfProgram { at: At::Cf(1), .. }
        ));
        let mut eop = p.clone();
        eop.cf[1].end_of_program = true;
        assert!(matches!(
            assemble_err(&eop),
            EncodeError::EndOfProgram { at: At::Cf(1), .. }
        ));
        // Without its CF_END pair the words have no end.
        let mut cut = assemble(&program(Chip::Cayman, vec![pixel_export()])).unwrap();
        cut.words.truncate(2);
        assert_eq!(decode(&cut), Err(DecodeError::NoEnd { len: 2 }));
    }

    /// A one-clause program whose only group is `g`.
    fn one_group(chip: Chip, kcache: &[Kcache], g: Group) -> Program {
        program(chip, vec![alu(CfOp::Alu, kcache, vec![g]), pixel_export()])
    }

    #[test]
    fn programs_that_cannot_be_encoded_are_errors_that_say_where() {
        let eg = Chip::Evergreen;
        let at_group = At::Group { cf: 0, group: 0 };
        let at_inst = At::Inst {
            cf: 0,
            group: 0,
            inst: 0,
        };
        let missing = one_group(eg, &[], with_literals(mov(0, 0, lit(1)), &[1]));
        assert!(
            matches!(assemble_err(&missing), EncodeError::Literal { at, why } if at == at_group && why.contains("literal 1"))
        );
        let unused = one_group(eg, &[], with_literals(mov(0, 0, Src::gpr(1, 0)), &[5]));
        assert!(matches!(assemble_err(&unused), EncodeError::Literal { at, .. } if at == at_group));

        let two_trans = group(
            vec![
                inst(AluOpcode::RecipIeee, Dst::gpr(0, 0), &[Src::gpr(1, 0)]),
                inst(AluOpcode::SqrtIeee, Dst::gpr(0, 1), &[Src::gpr(1, 1)]),
            ],
            &[],
        );
        assert!(
            matches!(assemble_err(&one_group(eg, &[], two_trans)), EncodeError::Group { at, .. } if at == at_group)
        );
        let reversed = group(
            vec![
                inst(AluOpcode::Mov, Dst::gpr(0, 1), &[Src::gpr(1, 0)]),
                inst(AluOpcode::Mov, Dst::gpr(0, 0), &[Src::gpr(1, 0)]),
            ],
            &[],
        );
        assert!(
            matches!(assemble_err(&one_group(eg, &[], reversed)), EncodeError::Group { why, .. } if why.contains("slot order"))
        );
        let mova = group(
            vec![inst(AluOpcode::Mova, Dst::gpr(0, 0), &[Src::gpr(1, 0)])],
            &[],
        );
        assert_eq!(
            assemble_err(&one_group(eg, &[], mova)),
            EncodeError::NotOnChip {
                at: at_inst,
                what: "MOVA",
                chip: eg
            }
        );
        let kc1 = one_group(eg, &[kcache(0, 0, 1)], mov(0, 0, kc(1, 0, 0)));
        assert!(matches!(assemble_err(&kc1), EncodeError::Kcache { at, .. } if at == at_inst));
        let beyond = one_group(eg, &[kcache(0, 0, 1)], mov(0, 0, kc(0, 16, 0)));
        assert!(
            matches!(assemble_err(&beyond), EncodeError::Kcache { why, .. } if why.contains("KC0[16]"))
        );

        let mut abs = inst(
            AluOpcode::Muladd,
            Dst::gpr(0, 0),
            &[Src::gpr(1, 0), Src::gpr(2, 0), Src::gpr(3, 0)],
        );
        abs.src[1].abs = true;
        let err = assemble_err(&one_group(eg, &[], group(vec![abs], &[])));
        assert!(
            matches!(err, EncodeError::Unused { at, field: "source abs", .. } if at == at_inst)
        );
        let no_write = inst(
            AluOpcode::CndeInt,
            Dst::none(0),
            &[Src::gpr(1, 0), Src::gpr(2, 0), Src::gpr(3, 0)],
        );
        let err = assemble_err(&one_group(eg, &[], group(vec![no_write], &[])));
        assert!(matches!(
            err,
            EncodeError::Unused {
                field: "dst.write",
                ..
            }
        ));
        let wide = group(
            vec![inst(AluOpcode::Mov, Dst::gpr(128, 0), &[Src::gpr(1, 0)])],
            &[],
        );
        let err = assemble_err(&one_group(eg, &[], wide));
        assert_eq!(
            err,
            EncodeError::Field {
                at: at_inst,
                field: "dst_gpr",
                value: 128
            }
        );

        let big = alu(CfOp::Alu, &[], vec![mov(0, 0, Src::gpr(1, 0)); 129]);
        let err = assemble_err(&program(eg, vec![big, pixel_export()]));
        assert_eq!(
            err,
            EncodeError::ClauseSize {
                at: At::Cf(0),
                size: 129,
                unit: "slots",
                max: 128
            }
        );

        let far = program(eg, vec![Cf::flow(CfOp::Jump, 7, 0), pixel_export()]);
        assert_eq!(
            assemble_err(&far),
            EncodeError::Target {
                at: At::Cf(0),
                addr: 7,
                len: 2
            }
        );
        let mut open = program(eg, vec![pixel_export()]);
        open.cf[0].end_of_program = false;
        assert!(matches!(
            assemble_err(&open),
            EncodeError::EndOfProgram { at: At::Cf(0), .. }
        ));
        let alu_last = program(
            eg,
            vec![alu(CfOp::Alu, &[], vec![mov(0, 0, Src::gpr(1, 0))])],
        );
        assert!(
            matches!(assemble_err(&alu_last), EncodeError::EndOfProgram { why, .. } if why.contains("NOP"))
        );
        let scratch = Cf {
            op: CfOp::MemScratch,
            ..pixel_export()
        };
        assert!(matches!(
            assemble_err(&program(eg, vec![scratch])),
            EncodeError::Unsupported { .. }
        ));
        let jump_alu = Cf {
            op: CfOp::Jump,
            ..alu(CfOp::Alu, &[], vec![mov(0, 0, Src::gpr(1, 0))])
        };
        let err = assemble_err(&program(eg, vec![jump_alu, pixel_export()]));
        assert_eq!(
            err,
            EncodeError::BodyKind {
                at: At::Cf(0),
                op: CfOp::Jump,
                expected: "a flow"
            }
        );
        let bias = Fetch {
            lod_bias: 64,
            ..sample()
        };
        let err = assemble_err(&program(
            eg,
            vec![
                Cf::new(CfOp::Tex, CfBody::Fetch(vec![bias])),
                pixel_export(),
            ],
        ));
        assert_eq!(
            err,
            EncodeError::Field {
                at: At::Fetch { cf: 0, fetch: 0 },
                field: "lod_bias",
                value: 64
            }
        );
    }

    #[test]
    fn words_the_encoder_would_not_write_are_decode_errors() {
        let p = program(
            Chip::R700,
            vec![
                alu(CfOp::Alu, &[], vec![with_literals(mov(0, 0, lit(0)), &[7])]),
                pixel_export(),
            ],
        );
        let good = assemble(&p).unwrap();
        let with = |dword: usize, word: u32| {
            let mut b = good.clone();
            b.words[dword] = word;
            decode(&b)
        };
        // USES_WATERFALL (bit 25 of CF_ALU_WORD1) has no field in the program.
        assert_eq!(
            with(1, good.words[1] | 1 << 25),
            Err(DecodeError::NotCanonical {
                dword: 1,
                found: good.words[1] | 1 << 25,
                expected: good.words[1]
            })
        );
        let cf_inst = CfCommon::of(Chip::R700).cf_inst;
        assert!(matches!(
            with(3, good.words[3] & !cf_inst.mask() | 0x3f << cf_inst.lo),
            Err(DecodeError::UnknownOp {
                at: At::Cf(1),
                kind: "CF",
                ..
            })
        ));
        // PRED_SEL 1 is reserved.
        let pred_sel = AluWords::of(Chip::R700).pred_sel;
        assert!(matches!(
            with(4, good.words[4] | 1 << pred_sel.lo),
            Err(DecodeError::Malformed {
                at: At::Inst {
                    cf: 0,
                    group: 0,
                    inst: 0
                },
                ..
            })
        ));
        // The literal's padding dword.
        assert!(matches!(
            with(7, 1),
            Err(DecodeError::NotCanonical { dword: 7, .. })
        ));
        let mut longer = good.clone();
        longer.words.push(0);
        assert_eq!(
            decode(&longer),
            Err(DecodeError::Length {
                len: 9,
                expected: 8
            })
        );
        let mut shorter = good.clone();
        shorter.words.truncate(6);
        assert!(matches!(
            decode(&shorter),
            Err(DecodeError::Truncated { .. })
        ));
    }

    /// A splitmix64 generator. The random programs' shapes depend on earlier choices (the chip,
    /// the kcache sets a clause locks, the literals its sources read), which a seeded builder
    /// states more plainly than nested strategies.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn flip(&mut self) -> bool {
            self.next() & 1 == 1
        }

        fn pick<T: Copy>(&mut self, items: &[T]) -> T {
            items[self.below(items.len())]
        }
    }

    fn alu_ops(chip: Chip, wanted: impl Fn(Slots) -> bool) -> Vec<AluOpcode> {
        AluOpcode::ALL
            .iter()
            .copied()
            .filter(|op| wanted(op.slots(chip)))
            .collect()
    }

    fn random_src(chip: Chip, kcache: &[Kcache], abs: bool, rng: &mut Rng) -> Src {
        let sel = match rng.below(7) {
            0 if !kcache.is_empty() => {
                let set = rng.below(kcache.len());
                sel::KCACHE[set] + rng.below(16 * usize::from(kcache[set].lines)) as u16
            }
            1 => rng.pick(&[
                sel::ZERO,
                sel::ONE,
                sel::ONE_INT,
                sel::MINUS_ONE_INT,
                sel::HALF,
            ]),
            2 => sel::LITERAL,
            3 if chip.has_trans() => rng.pick(&[sel::PV, sel::PS]),
            3 => sel::PV,
            4 if chip.is_evergreen_class() => sel::PARAM + rng.below(32) as u16,
            _ => rng.below(128) as u16,
        };
        Src {
            sel,
            chan: rng.below(4) as u8,
            neg: rng.flip(),
            abs: abs && rng.flip(),
            rel: rng.flip(),
        }
    }

    fn random_inst(
        chip: Chip,
        kcache: &[Kcache],
        op: AluOpcode,
        chan: u8,
        rng: &mut Rng,
    ) -> AluInst {
        let op2 = !op.is_op3();
        let dst = Dst {
            gpr: rng.below(128) as u8,
            chan,
            rel: rng.flip(),
            clamp: rng.flip(),
            write: !op2 || rng.flip(),
        };
        if op.has(flag::LDS) {
            let mut inst = AluInst::new(op, Dst::none(chan), &[]);
            for k in 0..op.nsrc() {
                let src = random_src(chip, kcache, false, rng);
                inst.src[k] = Src { neg: false, ..src };
            }
            inst.pred_sel = rng.pick(&[PredSel::Off, PredSel::Zero, PredSel::One]);
            inst.bank_swizzle = rng.below(8) as u8;
            inst.index_mode = rng.below(8) as u8;
            return inst;
        }
        let mut inst = AluInst::new(op, dst, &[]);
        for k in 0..op.nsrc() {
            inst.src[k] = random_src(chip, kcache, op2, rng);
        }
        if op2 {
            inst.omod = rng.below(4) as u8;
            inst.update_exec_mask = rng.flip();
            inst.update_pred = rng.flip();
        }
        inst.pred_sel = rng.pick(&[PredSel::Off, PredSel::Zero, PredSel::One]);
        inst.bank_swizzle = rng.below(8) as u8;
        inst.index_mode = rng.below(8) as u8;
        inst
    }

    /// A well-formed group: a four-slot DOT4, or instructions in some vector slots and maybe
    /// the trans slot; its literals are the ones its sources read.
    fn random_group(chip: Chip, kcache: &[Kcache], rng: &mut Rng) -> Group {
        let mut insts = Vec::new();
        if rng.below(10) == 0 {
            for chan in 0..4 {
                insts.push(random_inst(chip, kcache, AluOpcode::Dot4, chan, rng));
            }
        } else {
            // On Cayman a trans operation may stand alone in a vector slot (one replica).
            let vector = alu_ops(chip, |s| {
                matches!(s, Slots::Any | Slots::Vec) || (!chip.has_trans() && s == Slots::Trans)
            });
            for chan in 0..4 {
                if rng.flip() {
                    let op = rng.pick(&vector);
                    insts.push(random_inst(chip, kcache, op, chan, rng));
                }
            }
            if chip.has_trans() && rng.flip() {
                let taken: Vec<u8> = insts.iter().map(|inst| inst.dst.chan).collect();
                // An op any slot runs goes to trans only when its channel's slot is taken.
                let (op, chan) = if !taken.is_empty() && rng.flip() {
                    (
                        rng.pick(&alu_ops(chip, |s| s == Slots::Any)),
                        rng.pick(&taken),
                    )
                } else {
                    (
                        rng.pick(&alu_ops(chip, |s| s == Slots::Trans)),
                        rng.below(4) as u8,
                    )
                };
                insts.push(random_inst(chip, kcache, op, chan, rng));
            }
            if insts.is_empty() {
                insts.push(random_inst(chip, kcache, AluOpcode::Mov, 0, rng));
            }
        }
        let literals = (0..literals_read(&insts))
            .map(|_| rng.next() as u32)
            .collect();
        Group { insts, literals }
    }

    fn random_alu_clause(chip: Chip, rng: &mut Rng) -> Cf {
        let kcache: Vec<Kcache> = (0..rng.below(chip.kcache_sets() + 1))
            .map(|_| {
                kcache(
                    rng.below(16) as u8,
                    rng.next() as u8,
                    1 + rng.below(2) as u8,
                )
            })
            .collect();
        let groups = (0..1 + rng.below(8))
            .map(|_| random_group(chip, &kcache, rng))
            .collect();
        let ops: Vec<CfOp> = CfOp::ALL
            .iter()
            .copied()
            .filter(|op| op.is_alu() && *op != CfOp::AluExtended && op.opcode(chip).is_some())
            .collect();
        let mut cf = Cf::new(rng.pick(&ops), CfBody::Alu { kcache, groups });
        cf.barrier = rng.flip();
        cf.whole_quad_mode = rng.flip();
        cf
    }

    fn random_tex(op: FetchOp, rng: &mut Rng) -> Fetch {
        Fetch {
            op,
            resource: rng.next() as u8,
            sampler: rng.below(32) as u8,
            src_gpr: rng.below(128) as u8,
            src_sel: [(); 4].map(|_| rng.below(8) as u8),
            dst_gpr: rng.below(128) as u8,
            dst_sel: [(); 4].map(|_| rng.below(8) as u8),
            coord_normalized: [(); 4].map(|_| rng.flip()),
            lod_bias: rng.below(128) as i8 - 64,
            offset: [(); 3].map(|_| rng.below(32) as i8 - 16),
            vtx: VtxFormat::default(),
        }
    }

    fn random_vtx(chip: Chip, op: FetchOp, rng: &mut Rng) -> Fetch {
        if op == FetchOp::ReadScratch {
            let fetch = random_vtx(chip, FetchOp::Vfetch, rng);
            return Fetch {
                op,
                resource: 0,
                vtx: VtxFormat {
                    mem: MemRead {
                        array_base: rng.below(1 << 13) as u16,
                        array_size: rng.below(1 << 12) as u16,
                        elem_size: rng.below(4) as u8,
                        indexed: rng.flip(),
                    },
                    data_format: fetch.vtx.data_format,
                    num_format: fetch.vtx.num_format,
                    format_comp_signed: fetch.vtx.format_comp_signed,
                    srf_mode: fetch.vtx.srf_mode,
                    endian_swap: fetch.vtx.endian_swap,
                    ..VtxFormat::default()
                },
                ..fetch
            };
        }
        Fetch {
            op,
            resource: rng.next() as u8,
            sampler: 0,
            src_gpr: rng.below(128) as u8,
            src_sel: [rng.below(4) as u8, 7, 7, 7],
            dst_gpr: rng.below(128) as u8,
            dst_sel: [(); 4].map(|_| rng.below(8) as u8),
            coord_normalized: [false; 4],
            lod_bias: 0,
            offset: [0; 3],
            vtx: VtxFormat {
                offset: rng.next() as u16,
                fetch_type: rng.below(3) as u8,
                mega_fetch_count: if chip == Chip::Cayman {
                    0
                } else {
                    rng.below(64) as u8
                },
                data_format: rng.below(64) as u8,
                num_format: rng.below(4) as u8,
                format_comp_signed: rng.flip(),
                srf_mode: rng.flip(),
                use_const_fields: rng.flip(),
                endian_swap: rng.below(4) as u8,
                mem: MemRead::default(),
            },
        }
    }

    fn random_fetch_clause(chip: Chip, rng: &mut Rng) -> Cf {
        let vertex: Vec<FetchOp> = FetchOp::ALL
            .iter()
            .copied()
            .filter(|op| op.is_vertex_fetch() && op.opcode(chip).is_some_and(|code| code >> 8 == 0))
            .collect();
        let texture: Vec<FetchOp> = FetchOp::ALL
            .iter()
            .copied()
            .filter(|op| !op.is_vertex_fetch() && !op.is_gds() && op.opcode(chip).is_some())
            .collect();
        let gds: Vec<FetchOp> = FetchOp::ALL
            .iter()
            .copied()
            .filter(|op| op.is_gds() && op.opcode(chip).is_some())
            .collect();
        let vtx_ops: Vec<CfOp> = [CfOp::Vtx, CfOp::VtxTc]
            .into_iter()
            .filter(|op| op.opcode(chip).is_some())
            .collect();
        let op = if !gds.is_empty() && rng.below(4) == 0 {
            CfOp::Gds
        } else if !vtx_ops.is_empty() && rng.flip() {
            rng.pick(&vtx_ops)
        } else {
            CfOp::Tex
        };
        let fetches = (0..1 + rng.below(chip.max_fetches()))
            .map(|_| {
                if op == CfOp::Gds {
                    let sel = |rng: &mut Rng| [0, 1, 2, 3, 4, 5, 7][rng.below(7)];
                    let (src, dst) = (rng.below(128) as u8, rng.below(128) as u8);
                    let src_sel = [(); 3].map(|_| sel(rng));
                    let dst_sel = [(); 4].map(|_| sel(rng));
                    Fetch::gds(rng.pick(&gds), src, src_sel, dst, dst_sel)
                } else if op != CfOp::Tex || rng.below(4) == 0 {
                    let fetch_op = rng.pick(&vertex);
                    random_vtx(chip, fetch_op, rng)
                } else {
                    let fetch_op = rng.pick(&texture);
                    random_tex(fetch_op, rng)
                }
            })
            .collect();
        let mut cf = Cf::new(op, CfBody::Fetch(fetches));
        cf.barrier = rng.flip();
        cf.whole_quad_mode = rng.flip();
        cf.valid_pixel_mode = rng.flip();
        cf
    }

    fn random_export(chip: Chip, rng: &mut Rng) -> Cf {
        let mut export = Export {
            burst: 1 + rng.below(16) as u8,
            elem_size: rng.below(4) as u8,
            ..Export::new(
                rng.pick(&[ExportType::Pixel, ExportType::Pos, ExportType::Param]),
                rng.below(1 << 13) as u16,
                rng.below(128) as u8,
                [(); 4].map(|_| rng.below(8) as u8),
            )
        };
        let op = if rng.below(4) == 0 {
            export.kind = ExportType::Scratch;
            export.swizzle = [0, 1, 2, 3].map(|c| if rng.flip() { c } else { 7 });
            export.index_gpr = rng.flip().then(|| rng.below(128) as u8);
            export.ack = rng.flip();
            export.array_size = rng.below(1 << 12) as u16;
            CfOp::MemScratch
        } else {
            rng.pick(&[CfOp::Export, CfOp::ExportDone])
        };
        let mut cf = Cf::new(op, CfBody::Export(export));
        cf.barrier = rng.flip();
        cf.valid_pixel_mode = rng.flip();
        cf.whole_quad_mode = !chip.is_evergreen_class() && rng.flip();
        cf
    }

    /// A flow instruction; its target is set once the program's length is known.
    fn random_flow(chip: Chip, rng: &mut Rng) -> Cf {
        use CfOp::*;
        let ops = [
            Nop,
            LoopStart,
            LoopEnd,
            LoopStartDx10,
            LoopStartNoAl,
            LoopContinue,
            LoopBreak,
            Jump,
            Push,
            Else,
            Pop,
            CallFs,
            Kill,
            WaitAck,
        ]
        .into_iter()
        .filter(|op| op.opcode(chip).is_some())
        .collect::<Vec<_>>();
        let body = CfBody::Flow {
            addr: 0,
            pop_count: rng.below(8) as u8,
            cond: rng.below(4) as u8,
            cf_const: rng.below(32) as u8,
        };
        let mut cf = Cf::new(rng.pick(&ops), body);
        cf.barrier = rng.flip();
        cf.whole_quad_mode = rng.flip();
        cf.valid_pixel_mode = rng.flip();
        cf
    }

    /// A well-formed program for `chip` drawn from `seed`.
    fn random_program(chip: Chip, seed: u64) -> Program {
        let mut rng = Rng(seed);
        let rng = &mut rng;
        let mut cf: Vec<Cf> = (0..1 + rng.below(8))
            .map(|_| match rng.below(5) {
                0 | 1 => random_alu_clause(chip, rng),
                2 => random_fetch_clause(chip, rng),
                3 => random_export(chip, rng),
                _ => random_flow(chip, rng),
            })
            .collect();
        if chip == Chip::Cayman {
            cf.push(Cf::flow(CfOp::CfEnd, 0, 0));
        } else {
            if matches!(
                cf.last(),
                Some(Cf {
                    body: CfBody::Alu { .. },
                    ..
                })
            ) {
                cf.push(random_flow(chip, rng));
            }
            if let Some(last) = cf.last_mut() {
                last.end_of_program = true;
            }
        }
        let len = cf.len();
        for c in &mut cf {
            if let CfBody::Flow { addr, .. } = &mut c.body {
                *addr = rng.below(len) as u32;
            }
        }
        Program {
            chip,
            cf,
            gprs: rng.below(128) as u8,
            stack_size: rng.below(16) as u8,
            scratch_elements: rng.below(64) as u16,
        }
    }

    fn any_chip() -> impl Strategy<Value = Chip> {
        proptest::sample::select(Chip::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn random_programs_round_trip(chip in any_chip(), seed in any::<u64>()) {
            let program = random_program(chip, seed);
            let binary = assemble(&program).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(decode(&binary), Ok(program));
        }

        #[test]
        fn random_words_never_panic_the_decoder(
            chip in any_chip(),
            words in proptest::collection::vec(any::<u32>(), 0..96),
        ) {
            let binary = Binary {
                chip,
                words,
                gprs: 0,
                stack_size: 0,
                scratch_elements: 0,
            };
            if let Ok(program) = decode(&binary) {
                prop_assert_eq!(assemble(&program).map(|b| b.words), Ok(binary.words));
            }
        }

        #[test]
        fn damaged_binaries_decode_exactly_or_fail(
            chip in any_chip(),
            seed in any::<u64>(),
            flips in proptest::collection::vec((any::<proptest::sample::Index>(), 0u32..32), 1..4),
            cut in any::<proptest::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let mut binary = assemble(&random_program(chip, seed)).unwrap();
            for (index, b) in flips {
                let i = index.index(binary.words.len());
                binary.words[i] ^= 1 << b;
            }
            if truncate {
                binary.words.truncate(cut.index(binary.words.len()));
            }
            if let Ok(program) = decode(&binary) {
                prop_assert_eq!(assemble(&program).map(|b| b.words), Ok(binary.words));
            }
        }
    }
}
