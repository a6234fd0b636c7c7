//! The emulator of R600-family programs: runs a compiled [`Program`] on one wavefront, so that
//! differential tests can compare what the backend's code computes with the reference
//! interpreter.
//!
//! [`run`] takes the program, a [`Wavefront`] (its GPRs hold the inputs and, afterwards, the
//! final register values) and an [`Env`] (what the fixed-function units read: constant
//! buffers, vertex buffers, interpolation parameters, textures) and gives the exports. Any
//! program, however malformed, gives a result or an [`EmuError`] naming the CF instruction,
//! group and instruction (or fetch) and why; nothing panics.
//!
//! The facts are the ISA fact sheet's (../shared/reference/isa-gen-r600.md, B1-B6). Where it is
//! silent or only recalls the documents, this module picks a model, stated here.
//!
//! # Lanes
//!
//! A wavefront has up to 64 lanes; lanes `4q .. 4q+3` form quad `q` (top-left, top-right,
//! bottom-left, bottom-right). Each lane has 128 vec4 GPRs of raw 32-bit values, an *active*
//! (exec) bit, a *predicate* bit and a *killed* flag. Killed lanes (by KILL, or before the run)
//! are out of every mask for the rest of the program; no mask restored from the stack brings
//! them back.
//!
//! # ALU clauses
//!
//! - At a clause's start every predicate bit is 0 and the clause temporaries (GPRs 124-127)
//!   are undefined: reading a component a lane has not written in this clause is an error, as
//!   is reading one in a fetch clause or an export. Writing one from a fetch is an error too.
//! - An instruction runs for the lanes that are active, filtered by its `pred_sel` (Zero: where
//!   the predicate bit is 0, One: where it is 1). A group reads every source of every
//!   instruction before any instruction writes. Each instruction's slot is
//!   [`Group::slots`]'s; a group that does not fit its slots is an error.
//! - PV.c is the result of vector slot c of the previous group of the clause, PS that of its
//!   trans slot (R600-Evergreen only), for the lanes that ran that instruction; reading one a
//!   lane did not compute (the first group, an empty slot, another predicate) is an error.
//!   Results reach PV/PS after the output modifier and clamp, whether or not the write mask
//!   is set. ALU_NOP leaves its slot empty.
//! - Sources: GPRs (sel < 128); kcache sets (KC0 128-159, KC1 160-191, KC2 256-287, KC3
//!   288-319): constant `16·line + index` of the set's bank, the index below `16·lines` of the
//!   clause's `kcache[set]`; inline constants 248-252; the literal of the group selected by the
//!   channel (253); PV (254); PS (255); interpolation parameters (448 + n) for INTERP
//!   operations only. A constant buffer is bytes: constant `n` is the 16 bytes at `16·n`,
//!   little-endian dwords; bytes past its end (or of a bank not given) read as zero. `abs`
//!   clears then `neg` flips the sign bit of the raw value, whatever the operation (abs only
//!   on two-source operations). Relative addressing is not modelled.
//! - Destinations: operations with a float result apply the output modifier (×2, ×4, ÷2), then
//!   clamp to [0, 1] (NaN and −0 become +0); an output modifier or clamp on an integer result
//!   is an error, as is an output modifier or `abs` on a three-source operation (they have no
//!   such field). Two-source operations write when `write` is set, three-source ones always.
//!   Two instructions of a group writing one GPR component is an error.
//! - Predicate sets (PRED_SETcc, float, signed and unsigned) give 0.0 where the condition holds
//!   and 1.0 where it fails; UPDATE_PRED sets the predicate bit to the condition;
//!   UPDATE_EXEC_MASK deactivates the lanes where it fails, for the rest of the clause and
//!   after. KILLcc kills the lanes where `src0 cc src1` holds and gives 1.0 where it holds,
//!   0.0 elsewhere. These effects, like every write, land after the group has read its
//!   sources; a group holds at most one predicate set or kill. The predicate-stack
//!   operations (PRED_SET*_PUSH, PRED_SET_INV/POP/CLR/RESTORE) are not modelled.
//!
//! # Arithmetic
//!
//! Float operations round once to f32 and keep denormals, like the interpreter; the
//! transcendental ones (EXP_IEEE 2^x, LOG_IEEE log2, RECIP, RECIPSQRT, SQRT, SIN, COS) are
//! computed in f64 and rounded once. Model choices:
//! - MUL, MULADD* and DOT4 are "legacy": a zero operand of the product gives a zero product
//!   (signed by the operands' signs) even against infinity or NaN; MUL_IEEE, MULADD_IEEE and
//!   DOT4_IEEE are IEEE. MULADD and MULADD_IEEE are not fused: the product is rounded, then
//!   the sum (MULADD_M2/M4/D2 then scale by 2, 4 or ½). FMA is the fused one (Evergreen on).
//! - DOT4 (and DOT4_IEEE) fills the four vector slots: each slot's src0·src1 product, summed
//!   left to right (x, y, z, w) in f32, replicated to every slot (and PV), written by each
//!   slot's write mask. MAX4 likewise takes the MAX of the four src0.
//! - MAX and MIN return `a >= b ? a : b` and `a < b ? a : b` (so a NaN `a` gives `b`, a NaN
//!   `b` gives NaN); MAX_DX10 and MIN_DX10 return the other operand when one is NaN and order
//!   −0 below +0.
//! - SETcc (1.0/0.0), SETcc_DX10 (~0/0) compare floats; SETcc_INT and SETcc_UINT integers.
//!   NE holds for unordered floats, the other conditions do not. CNDcc compare src0 with 0.0
//!   (CNDcc_INT with 0) and give src1 where the condition holds, else src2.
//! - FLT_TO_INT and FLT_TO_UINT truncate on R600/R700 and round to nearest even on
//!   Evergreen/Cayman (Mesa emits TRUNC first there); both saturate, NaN gives 0. INT_TO_FLT
//!   and UINT_TO_FLT round to nearest even.
//! - LOG_CLAMPED and RECIP_CLAMPED, RECIPSQRT_CLAMPED clamp infinite results to ±FLT_MAX.
//! - SIN and COS take radians on R600 and revolutions (sin(2π·x)) on R700 and later.
//! - Shifts use the low 5 bits of the count. MULLO/MULHI give the low/high 32 bits of the
//!   64-bit product. RECIP_UINT gives ⌊2³²/x⌋ saturated to 0xFFFFFFFF, and 0xFFFFFFFF for 0.
//! - BFE_UINT/BFE_INT (value, offset, width; the low 5 bits of each; width 0 gives 0),
//!   BFI_INT (`src0 & src1 | !src0 & src2`), BFM_INT (a mask of `src0` bits at `src1`),
//!   BCNT_INT, FFBH_UINT (leading zeros), FFBH_INT (leading bits equal to the sign), FFBL_INT
//!   (trailing zeros; the FFB* give −1 when there is no such bit), BFREV_INT, ADDC_UINT (the
//!   carry), SUBB_UINT (the borrow), MUL_UINT24 (the low 24 bits of each operand).
//! - On Cayman the trans operations take three or four vector slots, each instruction
//!   computing from its own sources: each is run independently (MULLO_INT and the others too).
//!
//! # Interpolation (Evergreen, Cayman)
//!
//! INTERP_XY and INTERP_ZW fill the four vector slots. In each slot pair (x, y) and (z, w) the
//! even slot's src0 is j and the odd slot's src0 is i (Mesa's `INTERP_ZW __.x, R0.y, Param0.x`
//! then `__.y, R0.x, Param0.x`: R0.x = i, R0.y = j); each slot's src1 selects the parameter
//! n (448 + n) and its channel is ignored. Slot c gives `p0 + i·p10 + j·p20` of component c of
//! parameter n ([`Env::params`]), in f32 from left to right, each operation rounded (as
//! [`crate::dispatch`] computes the interpreter's inputs from the same numbers): INTERP_XY in
//! slots x, y from the (x, y) pair, INTERP_ZW in slots z, w from the (z, w) pair; its other
//! two slots give 0 (and read nothing). INTERP_LOAD_P0/P10/P20 `dst, ParamN.c` give p0, p10
//! or p20 of component c.
//!
//! # Control flow
//!
//! A CF stack holds push entries (the active mask at the push) and loop frames (the active
//! mask at the loop's start, the lanes that left it by LOOP_BREAK and those parked by
//! LOOP_CONTINUE). A mask restored from the stack loses the killed lanes and the broken and
//! parked lanes of every loop frame on the stack. A flow instruction's `addr` is an index into
//! the CF list; only COND 0 (always) is modelled.
//! - ALU_PUSH_BEFORE pushes, then runs its clause; ALU_POP_AFTER / ALU_POP2_AFTER run, then pop
//!   1 / 2 entries; ALU_ELSE_AFTER runs, then flips as ELSE does without jumping or popping.
//!   PUSH pushes (its address is not used); POP pops `pop_count` entries and restores the mask
//!   of the deepest one popped.
//! - JUMP: if no lane is active, pop `pop_count` entries and jump to `addr`.
//! - ELSE: the lanes of the last push that are not active become active and the active ones
//!   inactive; then if none is active, pop `pop_count` entries and jump to `addr`.
//! - LOOP_START_DX10: if no lane is active, jump to `addr` (past the LOOP_END) without
//!   entering; else push a loop frame. LOOP_END: the active and parked lanes go round (jump to
//!   `addr`, the body) if there are any; else the frame is popped and its start mask restored.
//!   LOOP_BREAK (LOOP_CONTINUE): the active lanes leave the loop (are parked until LOOP_END);
//!   then if no lane of the loop is left to run this iteration, the stack is unwound to the
//!   loop frame and execution jumps to `addr` (the LOOP_END). Popping a loop frame by a pop
//!   count, ELSE without a push, LOOP_END with pushes above the frame, and popping an empty
//!   stack are errors.
//! - CALL: if a lane is active, pushes a call frame and jumps to `addr` (a subroutine after
//!   the end of the main program); RET pops that frame and returns after the CALL with the
//!   call's mask, less the lanes killed since. RET with anything else on top of the stack, a
//!   pop count reaching a call frame, and a LOOP_BREAK or LOOP_CONTINUE with no loop frame
//!   above the innermost call frame are errors.
//! - Stack depth (fact sheet B4.4): after each push or loop start the stack's elements are
//!   counted, a push 1 and a loop or call frame 4 (the entry size of wave-64 chips; the
//!   call's size is an assumption, the documents at hand do not give it), plus 2 on
//!   R600/R700 and 1 on Evergreen when a push is on the stack, plus 2 always on Cayman; more
//!   than `4 · program.stack_size` elements is an error. (Mesa counts at its pushes, so a
//!   program that never pushes may declare 0.)
//! - EXPORT / EXPORT_DONE give one [`ExportRecord`] per GPR of the burst (consecutive bases),
//!   with a value for every lane that is not killed, active or not: `swizzle` picks x-w (0-3),
//!   0 (4), 1.0 (5) or 0 for a masked component (7).
//! - The program ends after a CF instruction with `end_of_program` (R600-Evergreen; Cayman
//!   ignores the bit) or at CF_END (Cayman). Running past the last CF instruction, jumping
//!   outside the program, or executing more than [`STEP_LIMIT`] CF instructions (a runaway
//!   loop) is an error. CALL_FS (a vertex shader's call of its fetch shader) does nothing:
//!   the dispatcher loads the vertex attributes into the GPRs beforehand, as the fetch shader
//!   does. Unmodelled CF instructions (LOOP_START with loop constants, CF KILL, ALU_EXT,
//!   ALU_BREAK, ALU_CONTINUE) are errors.
//!
//! # Scratch memory
//!
//! Each lane has `program.scratch_elements` vec4 elements of scratch memory, zero at the
//! start. MEM_SCRATCH (element size 3, one vec4 per element) writes, for each active lane,
//! the components of its COMP_MASK of each GPR of the burst to element `base + k`, plus the x
//! channel of `index_gpr` when indexed; an indexed write whose index is at or past
//! `array_size` is dropped, and an element past the lane's memory is an error. READ_SCRATCH
//! (R700 and later, FMT_32_32_32_32) reads element `array_base`, plus channel `src_sel[0]` of
//! its source GPR when indexed, the same way (zero past `array_size`). A write is in flight
//! until a WAIT_ACK after it, which only waits for acknowledged writes (WRITE_ACK,
//! WRITE_IND_ACK): a READ_SCRATCH while a write is in flight is an error, the hazard the
//! hardware leaves to the program.
//!
//! # Fetch clauses
//!
//! A fetch runs for the active lanes, in order; each reads its source GPR, then writes its
//! destination through `dst_sel` (0-3 a result component, 4 zero, 5 1.0, 7 unwritten).
//! - Texture instructions (SAMPLE*, LD, GET_TEXTURE_RESINFO): [`crate::texture`].
//! - VFETCH (in VTX clauses, and in TEX clauses on Evergreen and Cayman): the element index is
//!   component `src_sel[0]` of the source GPR; the data is at byte `stride·index + offset` of
//!   buffer `resource` ([`Env::buffers`], each with its stride). FMT_32 (13),
//!   FMT_32_32 (29), FMT_32_32_32 (47) and FMT_32_32_32_32 (34) read 1-4 dwords; the other
//!   components are 0; bytes past the end (or of a buffer not given) read as zero. The number
//!   format, fetch type, mega-fetch count and swizzle flags are not interpreted; endian swaps
//!   are not modelled.
//! - GET_GRADIENTS_H/V give the derivative of each source channel (after `src_sel`) along x
//!   (right − left of the quad's top row) or y (bottom − top of its left column) over the
//!   quad's lanes that run the fetch, falling back to the other row (column), 0 when neither
//!   pair runs it: the interpreter's coarse derivatives. The _FINE forms take the lane's own
//!   row (column) first: its fine derivatives.
//!   SET_GRADIENTS_H/V keep each lane's source channels as the gradients of a later SAMPLE_G
//!   of the same clause.

use crate::isa::{AluOp, CLAUSE_TEMP_BASE, CfOp, Chip, FetchOp, MAX_LITERALS, flag, sel};
use crate::program::{
    AluInst, CfBody, Export, ExportType, Fetch, Group, Kcache, PredSel, Program, Slot, Src,
};
use crate::texture::{self, COARSE_X, COARSE_Y, Gradients, TextureState};
use shrew_engine::ops::eval;
use std::collections::BTreeMap;
use std::fmt;

/// Most lanes of a wavefront.
pub const MAX_LANES: usize = 64;

/// Most CF instructions one run executes before it fails as a runaway.
pub const STEP_LIMIT: u64 = 1 << 22;

/// Stack elements a loop frame takes (the entry size of wave-64 chips).
const LOOP_FRAME_ELEMENTS: usize = 4;

/// 1.0f.
const ONE: u32 = 0x3f80_0000;

const CHANS: [char; 4] = ['x', 'y', 'z', 'w'];

/// One wavefront's registers and kill state.
#[derive(Clone, Debug, PartialEq)]
pub struct Wavefront {
    /// Lanes that exist, at most [`MAX_LANES`]. Lanes `4q .. 4q+3` form quad `q`: top-left,
    /// top-right, bottom-left, bottom-right.
    pub lanes: usize,
    /// Per lane, the 128 GPRs' components x, y, z, w as raw bits.
    pub gprs: Vec<[[u32; 4]; 128]>,
    /// Per lane, whether it is killed: set before the run, a lane never runs; KILL sets it.
    pub killed: Vec<bool>,
}

impl Wavefront {
    /// A wavefront of `lanes` lanes, zeroed and none killed.
    pub fn new(lanes: usize) -> Wavefront {
        Wavefront {
            lanes,
            gprs: vec![[[0; 4]; 128]; lanes],
            killed: vec![false; lanes],
        }
    }
}

/// What the fixed-function units read.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Constant buffers by kcache bank: constant `n` is the 16 bytes at `16·n`; bytes past the
    /// end read as zero.
    pub constant_buffers: BTreeMap<u8, Vec<u8>>,
    /// The buffers vertex fetches read, by resource id.
    pub buffers: BTreeMap<u8, Buffer>,
    /// Interpolation parameter n, component c: `[p0, p10, p20]`, the value at the primitive's
    /// first vertex and its changes towards the second (weighted by i) and third (by j).
    pub params: Vec<[[f32; 3]; 4]>,
    /// The texture units' state.
    pub textures: TextureState,
}

/// A buffer resource of vertex fetches: its bytes and the bytes from one element to the next.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buffer {
    pub bytes: Vec<u8>,
    pub stride: u32,
}

/// One exported GPR.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRecord {
    pub kind: ExportType,
    /// ARRAY_BASE (plus the position in the burst).
    pub base: u16,
    /// Per lane, the four components (raw bits); `None` for killed lanes.
    pub values: Vec<Option<[u32; 4]>>,
}

/// Where in the program something happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At {
    /// Index of the CF instruction.
    pub cf: usize,
    pub cf_op: CfOp,
    pub within: Within,
}

/// The part of a CF instruction's clause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Within {
    /// The CF instruction itself.
    Cf,
    /// An instruction group of an ALU clause.
    Group(usize),
    /// An instruction of a group.
    Inst {
        group: usize,
        inst: usize,
        op: AluOp,
    },
    /// A fetch of a TEX or VTX clause.
    Fetch { index: usize, op: FetchOp },
}

impl At {
    fn within(&self, within: Within) -> At {
        At {
            within,
            ..self.clone()
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CF {} ({})", self.cf, self.cf_op)?;
        match &self.within {
            Within::Cf => Ok(()),
            Within::Group(g) => write!(f, ", group {g}"),
            Within::Inst { group, inst, op } => {
                write!(f, ", group {group}, instruction {inst} ({op})")
            }
            Within::Fetch { index, op } => write!(f, ", fetch {index} ({op})"),
        }
    }
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmuError {
    /// The wavefront is not well formed.
    #[error("wavefront: {0}")]
    Setup(String),
    /// The program uses something the model does not run.
    #[error("{at}: {what} is not supported")]
    Unsupported { at: At, what: String },
    /// The program does something undefined or malformed.
    #[error("{at}: {why}")]
    Invalid { at: At, why: String },
    /// The texture unit cannot run a fetch.
    #[error("{at}: texture unit: {why}")]
    Texture { at: At, why: String },
    /// The CF stack grew past the program's declared stack size.
    #[error("{at}: the CF stack needs {needed} entries, the program declares {declared}")]
    StackOverflow { at: At, needed: usize, declared: u8 },
    /// A flow instruction's address is outside the program.
    #[error("{at}: address {addr} is outside the program's {len} CF instructions")]
    BadAddress { at: At, addr: u32, len: usize },
    /// More than [`STEP_LIMIT`] CF instructions ran.
    #[error("more than {0} CF instructions executed (a runaway loop?)")]
    StepLimit(u64),
    /// Execution went past the last CF instruction without ending the program.
    #[error("execution ran past the last CF instruction without ending the program")]
    RanOffEnd,
}

/// Why something failed, before the place is known.
#[derive(Debug)]
enum Why {
    Unsupported(String),
    Invalid(String),
}

impl Why {
    fn at(self, at: At) -> EmuError {
        match self {
            Why::Unsupported(what) => EmuError::Unsupported { at, what },
            Why::Invalid(why) => EmuError::Invalid { at, why },
        }
    }
}

fn invalid(why: impl Into<String>) -> Why {
    Why::Invalid(why.into())
}

fn unsupported(what: impl Into<String>) -> Why {
    Why::Unsupported(what.into())
}

/// Runs `program` on `wave` with the fixed-function state `env`; gives the exports in
/// program order. `wave` keeps the final registers and kill flags (also after an error).
pub fn run(
    program: &Program,
    wave: &mut Wavefront,
    env: &Env,
) -> Result<Vec<ExportRecord>, EmuError> {
    let lanes = wave.lanes;
    if lanes > MAX_LANES || wave.gprs.len() != lanes || wave.killed.len() != lanes {
        return Err(EmuError::Setup(format!(
            "{lanes} lanes (at most {MAX_LANES}) with {} register files and {} kill flags",
            wave.gprs.len(),
            wave.killed.len()
        )));
    }
    let exists = if lanes == MAX_LANES {
        u64::MAX
    } else {
        (1u64 << lanes) - 1
    };
    let killed = (0..lanes)
        .filter(|&l| wave.killed[l])
        .fold(0u64, |m, l| m | 1 << l);
    let mut machine = Machine {
        program,
        env,
        chip: program.chip,
        wave,
        exists,
        active: exists & !killed,
        killed,
        stack: Vec::new(),
        exports: Vec::new(),
        scratch: vec![[0; 4]; lanes * program.scratch_elements as usize],
        in_flight: InFlight::default(),
    };
    let result = machine.run();
    for lane in 0..lanes {
        machine.wave.killed[lane] = bit(machine.killed, lane);
    }
    result.map(|()| machine.exports)
}

fn bit(mask: u64, lane: usize) -> bool {
    lane < MAX_LANES && mask >> lane & 1 != 0
}

/// The lanes of a mask.
fn lanes(mask: u64) -> impl Iterator<Item = usize> {
    (0..MAX_LANES).filter(move |&l| bit(mask, l))
}

/// An entry of the CF stack.
#[derive(Copy, Clone, Debug)]
enum Entry {
    /// The active mask at a push.
    Push(u64),
    /// A CALL: the active mask at the call and the CF index to return to.
    Call { active: u64, ret: usize },
    /// A loop: the active mask at its start, the lanes that broke out of it, the lanes
    /// parked by LOOP_CONTINUE until the next iteration.
    Loop {
        start: u64,
        broken: u64,
        parked: u64,
    },
}

struct Machine<'a> {
    program: &'a Program,
    env: &'a Env,
    chip: Chip,
    wave: &'a mut Wavefront,
    /// Lanes that exist.
    exists: u64,
    active: u64,
    killed: u64,
    stack: Vec<Entry>,
    exports: Vec<ExportRecord>,
    /// Per lane, `program.scratch_elements` vec4 elements.
    scratch: Vec<[u32; 4]>,
    in_flight: InFlight,
}

/// Scratch writes that may not have landed yet.
#[derive(Copy, Clone, Debug, Default)]
struct InFlight {
    /// Acknowledged writes since the last WAIT_ACK.
    acknowledged: bool,
    /// Writes without acknowledgement: nothing waits for them.
    unacknowledged: bool,
}

/// What an ALU clause keeps from group to group.
struct Clause<'c> {
    kcache: &'c [Kcache],
    /// The lanes whose predicate bit is 1.
    pred: u64,
    /// Per lane, the previous group's results by slot (x, y, z, w, t).
    pv: Vec<[u32; 5]>,
    /// Per slot, the lanes that computed the previous group's result.
    pv_lanes: [u64; 5],
    /// Per clause-temporary component (`4·(gpr − 124) + chan`), the lanes that wrote it.
    temps: [u64; 16],
    /// Per lane, the address register AR.x a MOVA_INT of the clause loaded.
    ar: Vec<i32>,
    /// The lanes whose AR.x a MOVA_INT of an earlier group of the clause loaded: AR does not
    /// outlive its clause, and a group cannot read what it loads.
    ar_lanes: u64,
    /// The previous group wrote a register at a relative address (on R600 the next group must
    /// be a NOP).
    relative_write: bool,
}

/// The GPR `base + AR.x` of `lane`: AR must have been loaded in an earlier group of the clause,
/// and the address must be a GPR (not a clause temporary).
fn relative_gpr(clause: &Clause, base: usize, lane: usize) -> Result<usize, Why> {
    if !bit(clause.ar_lanes, lane) {
        return Err(invalid(format!(
            "a relative operand, but no earlier group of the clause loaded AR.x for lane {lane}"
        )));
    }
    let gpr = base as i64 + i64::from(clause.ar[lane]);
    if !(0..i64::from(CLAUSE_TEMP_BASE)).contains(&gpr) {
        return Err(invalid(format!(
            "relative address R{gpr} (R{base} + AR.x) outside the GPRs (lane {lane})"
        )));
    }
    Ok(gpr as usize)
}

/// The side effects of a group, applied after its writes.
#[derive(Default)]
struct Effects {
    /// Lanes whose predicate bit is updated, and its new value.
    pred_lanes: u64,
    pred_values: u64,
    /// Lanes that leave the active mask.
    deactivate: u64,
    /// Lanes killed.
    kill: u64,
}

impl Machine<'_> {
    fn run(&mut self) -> Result<(), EmuError> {
        let cfs = &self.program.cf;
        let mut pc = 0;
        let mut steps = 0u64;
        loop {
            let cf = cfs.get(pc).ok_or(EmuError::RanOffEnd)?;
            steps += 1;
            if steps > STEP_LIMIT {
                return Err(EmuError::StepLimit(STEP_LIMIT));
            }
            let at = At {
                cf: pc,
                cf_op: cf.op,
                within: Within::Cf,
            };
            if cf.op.opcode(self.chip).is_none() {
                return Err(unsupported(format!("{} on {:?}", cf.op, self.chip)).at(at));
            }
            let next = self.step(&at, &cf.body)?;
            if cf.op == CfOp::CfEnd || (cf.end_of_program && self.chip != Chip::Cayman) {
                return Ok(());
            }
            pc = next.unwrap_or(pc + 1);
        }
    }

    /// Executes one CF instruction; gives the CF index it jumps to, if it jumps.
    fn step(&mut self, at: &At, body: &CfBody) -> Result<Option<usize>, EmuError> {
        let op = at.cf_op;
        let mismatch = || invalid(format!("{op} with a body of the wrong kind")).at(at.clone());
        match op {
            // The fetch shader a vertex shader calls first: the dispatcher has already loaded
            // the vertex attributes into the GPRs, as the fetch shader would.
            CfOp::Nop | CfOp::CfEnd | CfOp::CallFs => Ok(None),
            CfOp::Alu
            | CfOp::AluPushBefore
            | CfOp::AluPopAfter
            | CfOp::AluPop2After
            | CfOp::AluElseAfter => {
                let CfBody::Alu { kcache, groups } = body else {
                    return Err(mismatch());
                };
                if op == CfOp::AluPushBefore {
                    self.push(at, Entry::Push(self.active))?;
                }
                self.alu_clause(at, kcache, groups)?;
                match op {
                    CfOp::AluPopAfter => self.pop(at, 1)?,
                    CfOp::AluPop2After => self.pop(at, 2)?,
                    CfOp::AluElseAfter => self.flip(at)?,
                    _ => {}
                }
                Ok(None)
            }
            CfOp::Tex | CfOp::Vtx | CfOp::VtxTc => {
                let CfBody::Fetch(fetches) = body else {
                    return Err(mismatch());
                };
                self.fetch_clause(at, fetches, op != CfOp::Tex)?;
                Ok(None)
            }
            CfOp::Export | CfOp::ExportDone => {
                let CfBody::Export(export) = body else {
                    return Err(mismatch());
                };
                self.export(at, export)?;
                Ok(None)
            }
            CfOp::MemScratch => {
                let CfBody::Export(write) = body else {
                    return Err(mismatch());
                };
                self.scratch_write(write).map_err(|w| w.at(at.clone()))?;
                Ok(None)
            }
            CfOp::WaitAck => {
                self.in_flight.acknowledged = false;
                Ok(None)
            }
            CfOp::Call | CfOp::Return => {
                let &CfBody::Flow { addr, cond, .. } = body else {
                    return Err(mismatch());
                };
                if cond != 0 {
                    return Err(unsupported(format!("COND {cond} (only 0, always)")).at(at.clone()));
                }
                self.call(at, addr)
            }
            CfOp::Push
            | CfOp::Pop
            | CfOp::Jump
            | CfOp::Else
            | CfOp::LoopStartDx10
            | CfOp::LoopEnd
            | CfOp::LoopBreak
            | CfOp::LoopContinue => {
                let &CfBody::Flow {
                    addr,
                    pop_count,
                    cond,
                    ..
                } = body
                else {
                    return Err(mismatch());
                };
                if cond != 0 {
                    return Err(unsupported(format!("COND {cond} (only 0, always)")).at(at.clone()));
                }
                self.flow(at, addr, pop_count as usize)
            }
            _ => Err(unsupported(op.mnemonic()).at(at.clone())),
        }
    }

    /// Executes a stack, jump or loop instruction.
    fn flow(&mut self, at: &At, addr: u32, pop_count: usize) -> Result<Option<usize>, EmuError> {
        let len = self.program.cf.len();
        let target = || {
            if (addr as usize) < len {
                Ok(addr as usize)
            } else {
                Err(EmuError::BadAddress {
                    at: at.clone(),
                    addr,
                    len,
                })
            }
        };
        match at.cf_op {
            CfOp::Push => {
                self.push(at, Entry::Push(self.active))?;
                Ok(None)
            }
            CfOp::Pop => {
                self.pop(at, pop_count)?;
                Ok(None)
            }
            CfOp::Jump => {
                let target = target()?;
                if self.active != 0 {
                    return Ok(None);
                }
                self.pop(at, pop_count)?;
                Ok(Some(target))
            }
            CfOp::Else => {
                let target = target()?;
                self.flip(at)?;
                if self.active != 0 {
                    return Ok(None);
                }
                self.pop(at, pop_count)?;
                Ok(Some(target))
            }
            CfOp::LoopStartDx10 => {
                let target = target()?;
                if self.active == 0 {
                    return Ok(Some(target));
                }
                self.push(
                    at,
                    Entry::Loop {
                        start: self.active,
                        broken: 0,
                        parked: 0,
                    },
                )?;
                Ok(None)
            }
            CfOp::LoopEnd => {
                let target = target()?;
                let Some(&Entry::Loop { start, parked, .. }) = self.stack.last() else {
                    return Err(
                        invalid("LOOP_END without its loop frame on top of the stack")
                            .at(at.clone()),
                    );
                };
                let again = (self.active | parked) & self.alive();
                if again != 0 {
                    self.active = again;
                    if let Some(Entry::Loop { parked, .. }) = self.stack.last_mut() {
                        *parked = 0;
                    }
                    return Ok(Some(target));
                }
                self.stack.pop();
                self.active = self.restore(start);
                Ok(None)
            }
            CfOp::LoopBreak | CfOp::LoopContinue => {
                let target = target()?;
                // A loop frame above the innermost call frame: a subroutine leaves no loop of
                // its caller.
                let frame = self
                    .stack
                    .iter()
                    .rposition(|e| matches!(e, Entry::Loop { .. } | Entry::Call { .. }))
                    .filter(|&f| matches!(self.stack[f], Entry::Loop { .. }))
                    .ok_or_else(|| invalid("outside a loop").at(at.clone()))?;
                let active = self.active;
                let alive = self.alive();
                let Entry::Loop {
                    start,
                    broken,
                    parked,
                } = &mut self.stack[frame]
                else {
                    return Err(invalid("outside a loop").at(at.clone()));
                };
                if at.cf_op == CfOp::LoopBreak {
                    *broken |= active;
                } else {
                    *parked |= active;
                }
                let left = *start & alive & !*broken & !*parked;
                self.active = 0;
                if left != 0 {
                    return Ok(None);
                }
                self.stack.truncate(frame + 1);
                Ok(Some(target))
            }
            _ => Err(unsupported(at.cf_op.mnemonic()).at(at.clone())),
        }
    }

    /// CALL: when a lane is active, pushes a call frame and jumps to `addr`. RET: pops the
    /// call frame on top of the stack, restores its mask and returns after the CALL.
    fn call(&mut self, at: &At, addr: u32) -> Result<Option<usize>, EmuError> {
        if at.cf_op == CfOp::Return {
            let Some(&Entry::Call { active, ret }) = self.stack.last() else {
                return Err(
                    invalid("RET without its call frame on top of the stack").at(at.clone())
                );
            };
            self.stack.pop();
            self.active = self.restore(active);
            return Ok(Some(ret));
        }
        let len = self.program.cf.len();
        if addr as usize >= len {
            return Err(EmuError::BadAddress {
                at: at.clone(),
                addr,
                len,
            });
        }
        if self.active == 0 {
            return Ok(None);
        }
        self.push(
            at,
            Entry::Call {
                active: self.active,
                ret: at.cf + 1,
            },
        )?;
        Ok(Some(addr as usize))
    }

    /// Lanes that exist and are not killed.
    fn alive(&self) -> u64 {
        self.exists & !self.killed
    }

    /// `mask` as restored from the stack: without killed lanes, nor the lanes that left or
    /// are parked in a loop on the stack.
    fn restore(&self, mask: u64) -> u64 {
        let out = self.stack.iter().fold(0, |m, e| match *e {
            Entry::Loop { broken, parked, .. } => m | broken | parked,
            Entry::Push(_) | Entry::Call { .. } => m,
        });
        mask & self.alive() & !out
    }

    fn push(&mut self, at: &At, entry: Entry) -> Result<(), EmuError> {
        self.stack.push(entry);
        let pushes = self
            .stack
            .iter()
            .filter(|e| matches!(e, Entry::Push(_)))
            .count();
        let loops = self.stack.len() - pushes;
        let extra = match self.chip {
            Chip::R600 | Chip::R700 if pushes > 0 => 2,
            Chip::Evergreen if pushes > 0 => 1,
            Chip::Cayman => 2,
            _ => 0,
        };
        let needed = (loops * LOOP_FRAME_ELEMENTS + pushes + extra).div_ceil(4);
        if needed > self.program.stack_size as usize {
            return Err(EmuError::StackOverflow {
                at: at.clone(),
                needed,
                declared: self.program.stack_size,
            });
        }
        Ok(())
    }

    /// Pops `count` push entries and restores the deepest one's mask.
    fn pop(&mut self, at: &At, count: usize) -> Result<(), EmuError> {
        let mut mask = None;
        for _ in 0..count {
            match self.stack.pop() {
                Some(Entry::Push(m)) => mask = Some(m),
                Some(Entry::Loop { .. } | Entry::Call { .. }) => {
                    return Err(invalid("a pop count reaches a loop or call frame").at(at.clone()));
                }
                None => return Err(invalid("popping an empty stack").at(at.clone())),
            }
        }
        if let Some(mask) = mask {
            self.active = self.restore(mask);
        }
        Ok(())
    }

    /// ELSE's flip: the lanes of the last push that are not active become active, the
    /// active ones inactive.
    fn flip(&mut self, at: &At) -> Result<(), EmuError> {
        let Some(&Entry::Push(mask)) = self.stack.last() else {
            return Err(invalid("ELSE without a push on top of the stack").at(at.clone()));
        };
        self.active = self.restore(mask & !self.active);
        Ok(())
    }

    fn export(&mut self, at: &At, e: &Export) -> Result<(), EmuError> {
        let bad = |why: String| Err(invalid(why).at(at.clone()));
        if e.burst == 0 {
            return bad("an export of a burst of 0 GPRs".into());
        }
        if let Some(&s) = e.swizzle.iter().find(|&&s| s == 6 || s > 7) {
            return bad(format!("swizzle select {s}"));
        }
        for k in 0..e.burst {
            let gpr = e.gpr as usize + k as usize;
            if gpr >= CLAUSE_TEMP_BASE as usize {
                return bad(format!("exports R{gpr}, not a GPR of the program"));
            }
            let Some(base) = e.base.checked_add(k as u16) else {
                return bad("the burst's array base overflows".into());
            };
            let values = (0..self.wave.lanes)
                .map(|lane| {
                    (!bit(self.killed, lane)).then(|| {
                        let r = self.wave.gprs[lane][gpr];
                        e.swizzle.map(|s| match s {
                            0..=3 => r[s as usize],
                            5 => ONE,
                            _ => 0,
                        })
                    })
                })
                .collect();
            self.exports.push(ExportRecord {
                kind: e.kind,
                base,
                values,
            });
        }
        Ok(())
    }

    /// The scratch element of `lane` at `base` plus `index` (when indexed): `None` when an
    /// index is at or past `array_size` (the access is dropped).
    fn scratch_element(
        &self,
        lane: usize,
        base: u32,
        index: Option<u32>,
        array_size: u16,
    ) -> Result<Option<usize>, Why> {
        let element = match index {
            Some(i) if i >= u32::from(array_size) => return Ok(None),
            Some(i) => base + i,
            None => base,
        };
        let elements = u32::from(self.program.scratch_elements);
        if element >= elements {
            return Err(invalid(format!(
                "scratch element {element}, past the {elements} the program declares"
            )));
        }
        Ok(Some(lane * elements as usize + element as usize))
    }

    fn scratch_write(&mut self, w: &Export) -> Result<(), Why> {
        if w.kind != ExportType::Scratch || w.elem_size != 3 || w.burst == 0 {
            return Err(unsupported(format!(
                "a scratch write of type {:?}, element size {} and burst {}",
                w.kind, w.elem_size, w.burst
            )));
        }
        for k in 0..w.burst {
            let gpr = w.gpr as usize + k as usize;
            let registers = [Some(gpr), w.index_gpr.map(usize::from)];
            if let Some(g) = registers
                .into_iter()
                .flatten()
                .find(|&g| g >= CLAUSE_TEMP_BASE as usize)
            {
                return Err(invalid(format!("reads R{g}, not a GPR of the program")));
            }
            for lane in lanes(self.active) {
                let index = w.index_gpr.map(|g| self.wave.gprs[lane][g as usize][0]);
                let base = u32::from(w.base) + u32::from(k);
                let Some(at) = self.scratch_element(lane, base, index, w.array_size)? else {
                    continue;
                };
                let value = self.wave.gprs[lane][gpr];
                for (c, &component) in value.iter().enumerate() {
                    if usize::from(w.swizzle[c]) == c {
                        self.scratch[at][c] = component;
                    }
                }
            }
        }
        if w.ack {
            self.in_flight.acknowledged = true;
        } else {
            self.in_flight.unacknowledged = true;
        }
        Ok(())
    }

    /// READ_SCRATCH's results.
    fn scratch_read(&self, fetch: &Fetch, exec: u64) -> Result<Vec<Option<[u32; 4]>>, Why> {
        let mem = &fetch.vtx.mem;
        if mem.elem_size != 3 || fetch.vtx.data_format != 34 {
            return Err(unsupported(format!(
                "a scratch read of element size {} and data format {}",
                mem.elem_size, fetch.vtx.data_format
            )));
        }
        let InFlight {
            acknowledged,
            unacknowledged,
        } = self.in_flight;
        if acknowledged || unacknowledged {
            return Err(invalid(
                "a scratch read while a scratch write may be in flight (no WAIT_ACK after it)",
            ));
        }
        let chan = fetch.src_sel[0] as usize;
        if chan > 3 {
            return Err(invalid(format!("address component select {chan}")));
        }
        let mut out = vec![None; self.wave.lanes];
        for lane in lanes(exec) {
            let index = mem
                .indexed
                .then(|| self.wave.gprs[lane][fetch.src_gpr as usize][chan]);
            let at = self.scratch_element(lane, mem.array_base.into(), index, mem.array_size)?;
            out[lane] = Some(at.map_or([0; 4], |at| self.scratch[at]));
        }
        Ok(out)
    }

    // --- ALU clauses --------------------------------------------------------------------

    fn alu_clause(&mut self, at: &At, kcache: &[Kcache], groups: &[Group]) -> Result<(), EmuError> {
        if kcache.len() > self.chip.kcache_sets() {
            return Err(invalid(format!(
                "{} kcache sets locked, {:?} has {}",
                kcache.len(),
                self.chip,
                self.chip.kcache_sets()
            ))
            .at(at.clone()));
        }
        if let Some(k) = kcache.iter().find(|k| !(1..=2).contains(&k.lines)) {
            return Err(invalid(format!("a kcache set of {} lines", k.lines)).at(at.clone()));
        }
        let mut clause = Clause {
            kcache,
            pred: 0,
            pv: vec![[0; 5]; self.wave.lanes],
            pv_lanes: [0; 5],
            temps: [0; 16],
            ar: vec![0; self.wave.lanes],
            ar_lanes: 0,
            relative_write: false,
        };
        for (g, group) in groups.iter().enumerate() {
            self.group(at, g, group, &mut clause)?;
        }
        Ok(())
    }

    /// Checks what can be checked of an instruction before it runs.
    fn check(&self, inst: &AluInst) -> Result<(), Why> {
        let op = inst.op;
        if op.opcode(self.chip).is_none() {
            return Err(unsupported(format!("{op} on {:?}", self.chip)));
        }
        let relative = inst.dst.rel || inst.srcs().iter().any(|s| s.rel);
        if relative && inst.index_mode != 0 {
            return Err(unsupported(format!(
                "index mode {} (only AR.x is modelled)",
                inst.index_mode
            )));
        }
        if inst.srcs().iter().any(|s| s.rel && s.sel > 127) {
            return Err(unsupported("a relative source outside the GPRs"));
        }
        if op.has(flag::MOVA) {
            if op != AluOp::MovaInt {
                return Err(unsupported(format!("{op} (only MOVA_INT is modelled)")));
            }
            if inst.dst.write || relative {
                return Err(unsupported(
                    "a MOVA_INT that writes a GPR or has a relative operand",
                ));
            }
            if self.chip == Chip::Cayman && inst.dst.gpr != 0 {
                return Err(unsupported(format!(
                    "MOVA_INT into destination {} on Cayman (only AR_X, 0, is modelled)",
                    inst.dst.gpr
                )));
            }
        }
        if inst.dst.gpr >= 128 || inst.dst.chan > 3 {
            return Err(invalid(format!(
                "destination R{}.{} outside the register file",
                inst.dst.gpr, inst.dst.chan
            )));
        }
        if let Some(s) = inst.srcs().iter().find(|s| s.chan > 3) {
            return Err(invalid(format!("source channel {}", s.chan)));
        }
        if inst.omod > 3 {
            return Err(invalid(format!("output modifier {}", inst.omod)));
        }
        if op.is_op3() && (inst.omod != 0 || inst.srcs().iter().any(|s| s.abs)) {
            return Err(invalid(
                "an output modifier or abs on a three-source instruction",
            ));
        }
        if op.has(flag::INT_DST | flag::UINT_DST) && (inst.omod != 0 || inst.dst.clamp) {
            return Err(invalid("an output modifier or clamp on an integer result"));
        }
        if (inst.update_pred || inst.update_exec_mask) && !is_pred_set(op) {
            return Err(invalid(
                "UPDATE_PRED or UPDATE_EXEC_MASK on an instruction that sets no predicate",
            ));
        }
        Ok(())
    }

    /// Runs group `g` of an ALU clause.
    fn group(
        &mut self,
        at: &At,
        g: usize,
        group: &Group,
        clause: &mut Clause,
    ) -> Result<(), EmuError> {
        let at_group = at.within(Within::Group(g));
        let at_inst = |i: usize| {
            at.within(Within::Inst {
                group: g,
                inst: i,
                op: group.insts[i].op,
            })
        };
        for (i, inst) in group.insts.iter().enumerate() {
            self.check(inst).map_err(|w| w.at(at_inst(i)))?;
        }
        let slots = group.slots(self.chip).ok_or_else(|| {
            invalid("the instructions do not fit the group's slots").at(at_group.clone())
        })?;
        if group.literals.len() > MAX_LITERALS {
            return Err(invalid(format!("{} literals", group.literals.len())).at(at_group));
        }
        let once = group
            .insts
            .iter()
            .filter(|i| i.op.has(flag::PRED | flag::PRED_PUSH | flag::KILL))
            .count();
        if once > 1 {
            return Err(invalid("more than one predicate set or kill in a group").at(at_group));
        }
        let relative = |i: &AluInst| i.dst.rel || i.srcs().iter().any(|s| s.rel);
        let loads_ar = group.insts.iter().any(|i| i.op.has(flag::MOVA));
        if loads_ar && group.insts.iter().any(relative) {
            return Err(
                invalid("a MOVA_INT and a relative operand in one group").at(at_group.clone())
            );
        }
        if self.chip == Chip::R600
            && clause.relative_write
            && group.insts.iter().any(|i| i.op != AluOp::AluNop)
        {
            return Err(
                invalid("on R600 the group after a relative write must be a NOP").at(at_group),
            );
        }
        let exec: Vec<u64> = group
            .insts
            .iter()
            .map(|inst| {
                self.active
                    & match inst.pred_sel {
                        PredSel::Off => u64::MAX,
                        PredSel::Zero => !clause.pred,
                        PredSel::One => clause.pred,
                    }
            })
            .collect();
        // Every result before any write.
        let mut results: Vec<Option<Vec<u32>>> = vec![None; group.insts.len()];
        let mut effects = Effects::default();
        for i in 0..group.insts.len() {
            if results[i].is_some() {
                continue;
            }
            let inst = &group.insts[i];
            match inst.op {
                AluOp::Dot4 | AluOp::Dot4Ieee | AluOp::Max4 | AluOp::InterpXy | AluOp::InterpZw => {
                    let members =
                        four_slots(group, &slots, inst.op).map_err(|w| w.at(at_inst(i)))?;
                    let values = self
                        .four_slot_op(clause, group, members, exec[i])
                        .map_err(|w| w.at(at_inst(i)))?;
                    for (m, v) in members.into_iter().zip(values) {
                        results[m] = Some(v);
                    }
                }
                AluOp::AluNop => {}
                _ => {
                    let values = self
                        .one_slot_op(clause, group, inst, exec[i], &mut effects)
                        .map_err(|w| w.at(at_inst(i)))?;
                    results[i] = Some(values);
                }
            }
        }
        // Writes, PV/PS, then the side effects.
        let mut pv_lanes = [0u64; 5];
        let mut written = Vec::new();
        let mut ar_loaded = 0u64;
        for (i, inst) in group.insts.iter().enumerate() {
            let Some(values) = &results[i] else {
                continue;
            };
            let slot = slots[i] as usize;
            pv_lanes[slot] = exec[i];
            if inst.op.has(flag::MOVA) {
                for lane in lanes(exec[i]) {
                    clause.ar[lane] = values[lane] as i32;
                }
                ar_loaded |= exec[i];
            }
            let writes = inst.op.is_op3() || inst.dst.write;
            let (gpr, chan) = (inst.dst.gpr as usize, inst.dst.chan as usize);
            if writes && !inst.dst.rel {
                if written.contains(&(gpr, chan)) {
                    return Err(invalid(format!(
                        "R{gpr}.{} is written twice in the group",
                        CHANS[chan]
                    ))
                    .at(at_inst(i)));
                }
                written.push((gpr, chan));
                if gpr >= CLAUSE_TEMP_BASE as usize {
                    clause.temps[(gpr - CLAUSE_TEMP_BASE as usize) * 4 + chan] |= exec[i];
                }
            }
            for lane in lanes(exec[i]) {
                let v = output(inst, values[lane]);
                clause.pv[lane][slot] = v;
                if writes {
                    let gpr = if inst.dst.rel {
                        relative_gpr(clause, gpr, lane).map_err(|w| w.at(at_inst(i)))?
                    } else {
                        gpr
                    };
                    self.wave.gprs[lane][gpr][chan] = v;
                }
            }
        }
        clause.pv_lanes = pv_lanes;
        clause.ar_lanes |= ar_loaded;
        clause.relative_write = group.insts.iter().any(|i| i.dst.rel);
        clause.pred = clause.pred & !effects.pred_lanes | effects.pred_values;
        self.killed |= effects.kill;
        self.active &= !effects.deactivate & self.alive();
        Ok(())
    }

    /// Reads source `src` of an instruction of `group` for `lane`, with its modifiers.
    fn read(&self, clause: &Clause, group: &Group, lane: usize, src: &Src) -> Result<u32, Why> {
        let chan = src.chan as usize;
        let raw = match src.sel {
            s @ 0..=127 => {
                let s = if src.rel {
                    relative_gpr(clause, s as usize, lane)?
                } else {
                    s as usize
                };
                let temp = CLAUSE_TEMP_BASE as usize;
                if s >= temp && !bit(clause.temps[(s - temp) * 4 + chan], lane) {
                    return Err(invalid(format!(
                        "clause temporary T{}.{} read before the clause wrote it (lane {lane})",
                        s - temp,
                        CHANS[chan]
                    )));
                }
                self.wave.gprs[lane][s][chan]
            }
            sel::LITERAL => *group.literals.get(chan).ok_or_else(|| {
                invalid(format!(
                    "reads literal {} of a group with {}",
                    CHANS[chan],
                    group.literals.len()
                ))
            })?,
            sel::PV | sel::PS => {
                let slot = if src.sel == sel::PV {
                    chan
                } else if self.chip.has_trans() {
                    Slot::T as usize
                } else {
                    return Err(invalid("PS on Cayman, which has no trans slot"));
                };
                if !bit(clause.pv_lanes[slot], lane) {
                    let name = if src.sel == sel::PV {
                        format!("PV.{}", CHANS[chan])
                    } else {
                        "PS".to_string()
                    };
                    return Err(invalid(format!(
                        "reads {name}, which the previous group of the clause did not compute \
                         for lane {lane}"
                    )));
                }
                clause.pv[lane][slot]
            }
            s if s >= sel::PARAM => {
                return Err(invalid(format!(
                    "select {s} (a parameter) outside an INTERP instruction"
                )));
            }
            s => match (sel::inline_value(s), sel::kcache(s)) {
                (Some(v), _) => v,
                (None, Some((set, index))) => self.constant(clause.kcache, set, index, chan)?,
                (None, None) => return Err(unsupported(format!("source select {s}"))),
            },
        };
        let raw = if src.abs { raw & 0x7fff_ffff } else { raw };
        Ok(if src.neg { raw ^ 0x8000_0000 } else { raw })
    }

    /// Component `chan` of constant `index` of kcache set `set`.
    fn constant(&self, kcache: &[Kcache], set: usize, index: u16, chan: usize) -> Result<u32, Why> {
        if set >= self.chip.kcache_sets() {
            return Err(invalid(format!("KC{set} on {:?}", self.chip)));
        }
        let k = kcache.get(set).ok_or_else(|| {
            invalid(format!(
                "reads KC{set}[{index}], the clause locks {} sets",
                kcache.len()
            ))
        })?;
        if index >= 16 * k.lines as u16 {
            return Err(invalid(format!(
                "reads KC{set}[{index}], outside the {} constants the clause locks",
                16 * k.lines as u16
            )));
        }
        let n = 16 * k.line as u64 + index as u64;
        let bytes = self.env.constant_buffers.get(&k.bank);
        Ok(dword(
            bytes.map_or(&[], Vec::as_slice),
            16 * n + 4 * chan as u64,
        ))
    }

    /// Interpolation parameter `src` selects.
    fn param(&self, src: &Src) -> Result<&[[f32; 3]; 4], Why> {
        if !(sel::PARAM..sel::PARAM + 64).contains(&src.sel) {
            return Err(invalid(format!(
                "select {} where a parameter (Param<n>, 448 + n) belongs",
                src.sel
            )));
        }
        let n = (src.sel - sel::PARAM) as usize;
        self.env.params.get(n).ok_or_else(|| {
            invalid(format!(
                "Param{n} read, {} parameters are given",
                self.env.params.len()
            ))
        })
    }

    /// Runs a one-slot instruction for the lanes of `exec`: each lane's result (0 for the
    /// others), and the predicate, exec-mask and kill effects into `effects`.
    fn one_slot_op(
        &self,
        clause: &Clause,
        group: &Group,
        inst: &AluInst,
        exec: u64,
        effects: &mut Effects,
    ) -> Result<Vec<u32>, Why> {
        let op = inst.op;
        let mut out = vec![0; self.wave.lanes];
        if let AluOp::InterpLoadP0 | AluOp::InterpLoadP10 | AluOp::InterpLoadP20 = op {
            let param = self.param(&inst.src[0])?;
            let which = match op {
                AluOp::InterpLoadP0 => 0,
                AluOp::InterpLoadP10 => 1,
                _ => 2,
            };
            let v = param[inst.src[0].chan as usize][which].to_bits();
            for lane in lanes(exec) {
                out[lane] = v;
            }
            return Ok(out);
        }
        if op.has(flag::PRED_PUSH) || (op.has(flag::PRED) && op.info().cc.is_none()) {
            return Err(unsupported(format!("{op} (the predicate stack)")));
        }
        // The evaluation depends on the operands' values only: zeros tell whether the
        // operation is modelled, also when no lane runs it.
        eval_op(op, self.chip, [0; 3])?;
        for lane in lanes(exec) {
            let mut s = [0; 3];
            for (v, src) in s.iter_mut().zip(inst.srcs()) {
                *v = self.read(clause, group, lane, src)?;
            }
            out[lane] = eval_op(op, self.chip, s)?;
            let cond = || holds(op, s[0], s[1]);
            if is_pred_set(op) {
                if inst.update_pred {
                    effects.pred_lanes |= 1 << lane;
                    effects.pred_values |= (cond() as u64) << lane;
                }
                if inst.update_exec_mask && !cond() {
                    effects.deactivate |= 1 << lane;
                }
            }
            if op.has(flag::KILL) && cond() {
                effects.kill |= 1 << lane;
            }
        }
        Ok(out)
    }

    /// Runs a four-slot operation (DOT4, DOT4_IEEE, MAX4, INTERP_XY, INTERP_ZW) whose
    /// instructions in slots x-w are `members`: each slot's per-lane results.
    fn four_slot_op(
        &self,
        clause: &Clause,
        group: &Group,
        members: [usize; 4],
        exec: u64,
    ) -> Result<[Vec<u32>; 4], Why> {
        let insts = members.map(|m| &group.insts[m]);
        if insts.iter().any(|i| i.pred_sel != insts[0].pred_sel) {
            return Err(invalid(
                "the slots of a four-slot operation differ in predicate select",
            ));
        }
        let op = insts[0].op;
        let mut out: [Vec<u32>; 4] = std::array::from_fn(|_| vec![0; self.wave.lanes]);
        for lane in lanes(exec) {
            let src = |k: usize, which: usize| self.read(clause, group, lane, &insts[k].src[which]);
            let f = |k: usize, which: usize| src(k, which).map(f32::from_bits);
            match op {
                AluOp::Dot4 | AluOp::Dot4Ieee => {
                    let mut sum = 0.0f32;
                    for k in 0..4 {
                        let (a, b) = (f(k, 0)?, f(k, 1)?);
                        let p = if op == AluOp::Dot4 {
                            mul_legacy(a, b)
                        } else {
                            a * b
                        };
                        sum = if k == 0 { p } else { sum + p };
                    }
                    for o in &mut out {
                        o[lane] = sum.to_bits();
                    }
                }
                AluOp::Max4 => {
                    let mut max = f(0, 0)?;
                    for k in 1..4 {
                        max = max_legacy(max, f(k, 0)?);
                    }
                    for o in &mut out {
                        o[lane] = max.to_bits();
                    }
                }
                _ => {
                    // INTERP_XY: slots x, y from the (x, y) pair; INTERP_ZW: z, w from (z, w).
                    let pair = if op == AluOp::InterpXy { 0 } else { 2 };
                    let (j, i) = (f(pair, 0)?, f(pair + 1, 0)?);
                    for c in [pair, pair + 1] {
                        let [p0, p10, p20] = self.param(&insts[c].src[1])?[c];
                        out[c][lane] = (p0 + i * p10 + j * p20).to_bits();
                    }
                }
            }
        }
        Ok(out)
    }

    // --- Fetch clauses ------------------------------------------------------------------

    fn fetch_clause(&mut self, at: &At, fetches: &[Fetch], vertex: bool) -> Result<(), EmuError> {
        if fetches.len() > self.chip.max_fetches() {
            return Err(invalid(format!(
                "{} fetches, {:?} clauses hold {}",
                fetches.len(),
                self.chip,
                self.chip.max_fetches()
            ))
            .at(at.clone()));
        }
        let mut gradients: Vec<Gradients> = vec![[None, None]; self.wave.lanes];
        for (index, fetch) in fetches.iter().enumerate() {
            let at = at.within(Within::Fetch {
                index,
                op: fetch.op,
            });
            self.fetch(&at, fetch, vertex, &mut gradients)?;
        }
        Ok(())
    }

    /// Runs one fetch of a clause (`vertex`: a VTX clause).
    fn fetch(
        &mut self,
        at: &At,
        fetch: &Fetch,
        vertex: bool,
        gradients: &mut [Gradients],
    ) -> Result<(), EmuError> {
        let bad = |why: String| Err(invalid(why).at(at.clone()));
        let op = fetch.op;
        if op.opcode(self.chip).is_none() {
            return Err(unsupported(format!("{op} on {:?}", self.chip)).at(at.clone()));
        }
        if vertex && !op.is_vertex_fetch() {
            return bad(format!("{op} in a vertex-fetch clause"));
        }
        if op.is_vertex_fetch() && !vertex && !self.chip.is_evergreen_class() {
            return bad(format!("{op} in a TEX clause before Evergreen"));
        }
        for (what, gpr) in [("reads", fetch.src_gpr), ("writes", fetch.dst_gpr)] {
            if gpr >= CLAUSE_TEMP_BASE {
                return bad(format!("{what} R{gpr}, not a GPR of the program"));
            }
        }
        let sels = fetch.src_sel.iter().chain(&fetch.dst_sel);
        if let Some(&s) = sels.clone().find(|&&s| s == 6 || s > 7) {
            return bad(format!("component select {s}"));
        }
        let exec = self.active;
        let lanes_n = self.wave.lanes;
        let srcs: Vec<[u32; 4]> = (0..lanes_n)
            .map(|lane| {
                let r = self.wave.gprs[lane][fetch.src_gpr as usize];
                fetch.src_sel.map(|s| match s {
                    0..=3 => r[s as usize],
                    5 => ONE,
                    _ => 0,
                })
            })
            .collect();
        let results: Vec<Option<[u32; 4]>> = match op {
            FetchOp::Vfetch => self.vfetch(fetch, exec).map_err(|w| w.at(at.clone()))?,
            FetchOp::ReadScratch => self
                .scratch_read(fetch, exec)
                .map_err(|w| w.at(at.clone()))?,
            FetchOp::GetGradientsH
            | FetchOp::GetGradientsHFine
            | FetchOp::GetGradientsV
            | FetchOp::GetGradientsVFine => {
                let along_x = matches!(op, FetchOp::GetGradientsH | FetchOp::GetGradientsHFine);
                let fine = matches!(op, FetchOp::GetGradientsHFine | FetchOp::GetGradientsVFine);
                gradients_of(&srcs, exec, along_x, fine)
            }
            FetchOp::SetGradientsH | FetchOp::SetGradientsV => {
                let which = (op == FetchOp::SetGradientsV) as usize;
                for lane in lanes(exec) {
                    gradients[lane][which] = Some(srcs[lane]);
                }
                return Ok(());
            }
            _ if op.is_vertex_fetch() => {
                return Err(unsupported(op.mnemonic()).at(at.clone()));
            }
            _ => {
                texture::run(&self.env.textures, fetch, &srcs, exec, gradients).map_err(|why| {
                    EmuError::Texture {
                        at: at.clone(),
                        why,
                    }
                })?
            }
        };
        let dst = fetch.dst_gpr as usize;
        for (lane, result) in results.iter().enumerate() {
            let Some(r) = result else {
                continue;
            };
            for (c, &s) in fetch.dst_sel.iter().enumerate() {
                let v = match s {
                    0..=3 => r[s as usize],
                    4 => 0,
                    5 => ONE,
                    _ => continue,
                };
                self.wave.gprs[lane][dst][c] = v;
            }
        }
        Ok(())
    }

    /// A vertex fetch for the lanes of `exec`.
    fn vfetch(&self, fetch: &Fetch, exec: u64) -> Result<Vec<Option<[u32; 4]>>, Why> {
        let vtx = &fetch.vtx;
        let dwords = match vtx.data_format {
            13 => 1,
            29 => 2,
            47 => 3,
            34 => 4,
            f => return Err(unsupported(format!("vertex data format {f}"))),
        };
        if vtx.endian_swap != 0 {
            return Err(unsupported("endian swapping"));
        }
        let chan = fetch.src_sel[0];
        if chan > 3 {
            return Err(invalid(format!("address component select {chan}")));
        }
        let (bytes, stride) = self
            .env
            .buffers
            .get(&fetch.resource)
            .map_or((&[][..], 0), |b| (b.bytes.as_slice(), b.stride as u64));
        let mut out = vec![None; self.wave.lanes];
        for lane in lanes(exec) {
            let index = self.wave.gprs[lane][fetch.src_gpr as usize][chan as usize] as u64;
            let base = stride * index + vtx.offset as u64;
            out[lane] = Some(std::array::from_fn(|k| {
                if k < dwords {
                    dword(bytes, base + 4 * k as u64)
                } else {
                    0
                }
            }));
        }
        Ok(out)
    }
}

/// The little-endian dword at byte `at` of `bytes`, zero past the end.
fn dword(bytes: &[u8], at: u64) -> u32 {
    (0..4).fold(0, |v, k| {
        let b = usize::try_from(at + k)
            .ok()
            .and_then(|i| bytes.get(i))
            .copied()
            .unwrap_or(0);
        v | (b as u32) << (8 * k)
    })
}

/// The instructions of a four-slot operation `op`: exactly one in each vector slot.
fn four_slots(group: &Group, slots: &[Slot], op: AluOp) -> Result<[usize; 4], Why> {
    let mut members = [None; 4];
    for (i, inst) in group.insts.iter().enumerate() {
        if inst.op == op {
            match slots[i] {
                Slot::T => return Err(invalid(format!("{op} in the trans slot"))),
                s => members[s as usize] = Some(i),
            }
        }
    }
    let count = group.insts.iter().filter(|i| i.op == op).count();
    match members {
        [Some(x), Some(y), Some(z), Some(w)] if count == 4 => Ok([x, y, z, w]),
        _ => Err(invalid(format!("{op} must fill the four vector slots"))),
    }
}

/// The fine derivatives of each lane's source channels along x (`along_x`) or y over the
/// quad's lanes in `exec`.
fn gradients_of(srcs: &[[u32; 4]], exec: u64, along_x: bool, fine: bool) -> Vec<Option<[u32; 4]>> {
    let value = |lane: usize| {
        (lane < srcs.len() && bit(exec, lane)).then(|| srcs[lane].map(|x| f32::from_bits(x) as f64))
    };
    (0..srcs.len())
        .map(|lane| {
            if !bit(exec, lane) {
                return None;
            }
            let (first, pos) = (lane - lane % 4, lane % 4);
            let at: [Option<[f64; 4]>; 4] = std::array::from_fn(|k| value(first + k));
            // Fine: the lane's own row (column) first; coarse: the top row (left column).
            let (row, col) = if fine { (pos / 2, pos % 2) } else { (0, 0) };
            let pairs = if along_x {
                [COARSE_X[row], COARSE_X[1 - row]]
            } else {
                [COARSE_Y[col], COARSE_Y[1 - col]]
            };
            Some(texture::quad_difference(&at, pairs).map(|d| (d as f32).to_bits()))
        })
        .collect()
}

/// Whether `op` is a predicate set with a condition (PRED_SETcc, not the pushing forms).
fn is_pred_set(op: AluOp) -> bool {
    op.has(flag::PRED) && op.info().cc.is_some()
}

/// Whether `a cc b` holds for `op`'s condition and compare type (float unless INT_CMP or
/// UINT_CMP); conditional moves compare `a` with 0, whose bits are zero in every type.
fn holds(op: AluOp, a: u32, b: u32) -> bool {
    use std::cmp::Ordering::*;
    let order = if op.has(flag::INT_CMP) {
        Some((a as i32).cmp(&(b as i32)))
    } else if op.has(flag::UINT_CMP) {
        Some(a.cmp(&b))
    } else {
        f32::from_bits(a).partial_cmp(&f32::from_bits(b))
    };
    match op.info().cc {
        Some(crate::isa::Cc::E) => order == Some(Equal),
        Some(crate::isa::Cc::Ne) => order != Some(Equal),
        Some(crate::isa::Cc::Gt) => order == Some(Greater),
        Some(crate::isa::Cc::Ge) => matches!(order, Some(Greater | Equal)),
        Some(crate::isa::Cc::Lt) => order == Some(Less),
        Some(crate::isa::Cc::Le) => matches!(order, Some(Less | Equal)),
        None => false,
    }
}

/// MUL's product: a zero operand gives zero, even against infinity or NaN.
fn mul_legacy(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        if a.is_sign_negative() != b.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else {
        a * b
    }
}

/// MAX: `a >= b ? a : b`.
fn max_legacy(a: f32, b: f32) -> f32 {
    if a >= b { a } else { b }
}

/// MULADD's `a·b + c`, the product rounded, with the legacy zero rule (`legacy`) or IEEE.
fn muladd(a: f32, b: f32, c: f32, legacy: bool) -> f32 {
    let product = if legacy { mul_legacy(a, b) } else { a * b };
    product + c
}

/// Clamps an infinite result to ±FLT_MAX.
fn clamp_infinite(x: f64) -> f64 {
    x.clamp(f32::MIN as f64, f32::MAX as f64)
}

/// The destination's value of `result`: for float results the output modifier, then clamp.
fn output(inst: &AluInst, result: u32) -> u32 {
    if inst.op.has(flag::INT_DST | flag::UINT_DST) || (inst.omod == 0 && !inst.dst.clamp) {
        return result;
    }
    let x = f32::from_bits(result);
    let x = match inst.omod {
        1 => x * 2.0,
        2 => x * 4.0,
        3 => x * 0.5,
        _ => x,
    };
    let x = if !inst.dst.clamp {
        x
    } else if x.is_nan() || x <= 0.0 {
        0.0
    } else {
        x.min(1.0)
    };
    x.to_bits()
}

/// The result of a one-slot operation `op` on `chip` from its sources' raw bits.
fn eval_op(op: AluOp, chip: Chip, s: [u32; 3]) -> Result<u32, Why> {
    use AluOp::*;
    let f = |k: usize| f32::from_bits(s[k]);
    let d = |k: usize| f32::from_bits(s[k]) as f64;
    let i = |k: usize| s[k] as i32;
    // A value computed in f64, rounded once.
    let round = |x: f64| (x as f32).to_bits();
    let float = |b: bool| if b { ONE } else { 0 };
    let all = |b: bool| if b { u32::MAX } else { 0 };
    let to_int_rounds = chip.is_evergreen_class();
    let revolutions = chip != Chip::R600;
    let bits = |x: f32| x.to_bits();
    Ok(match op {
        Add => bits(f(0) + f(1)),
        Mul => bits(mul_legacy(f(0), f(1))),
        MulIeee => bits(f(0) * f(1)),
        Max => bits(max_legacy(f(0), f(1))),
        Min => bits(if f(0) < f(1) { f(0) } else { f(1) }),
        MaxDx10 => round(eval::fmax(d(0), d(1))),
        MinDx10 => round(eval::fmin(d(0), d(1))),
        Sete | Setgt | Setge | Setne => float(holds(op, s[0], s[1])),
        SeteDx10 | SetgtDx10 | SetgeDx10 | SetneDx10 | SeteInt | SetgtInt | SetgeInt | SetneInt
        | SetgtUint | SetgeUint => all(holds(op, s[0], s[1])),
        Fract => round(d(0) - d(0).floor()),
        Trunc => bits(f(0).trunc()),
        Ceil => bits(f(0).ceil()),
        Rndne => round(eval::round_even(d(0))),
        Floor => bits(f(0).floor()),
        AshrInt => (i(0) >> (s[1] & 31)) as u32,
        LshrInt => s[0] >> (s[1] & 31),
        LshlInt => s[0] << (s[1] & 31),
        Mov | MovaInt => s[0],
        PredSetgtUint | PredSetgeUint | PredSete | PredSetgt | PredSetge | PredSetne
        | PredSeteInt | PredSetgtInt | PredSetgeInt | PredSetneInt => float(!holds(op, s[0], s[1])),
        Kille | Killgt | Killge | Killne | KillgtUint | KillgeUint | KilleInt | KillgtInt
        | KillgeInt | KillneInt => float(holds(op, s[0], s[1])),
        AndInt => s[0] & s[1],
        OrInt => s[0] | s[1],
        XorInt => s[0] ^ s[1],
        NotInt => !s[0],
        AddInt => s[0].wrapping_add(s[1]),
        SubInt => s[0].wrapping_sub(s[1]),
        MaxInt => i(0).max(i(1)) as u32,
        MinInt => i(0).min(i(1)) as u32,
        MaxUint => s[0].max(s[1]),
        MinUint => s[0].min(s[1]),
        // `as` saturates and maps NaN to 0.
        FltToInt if to_int_rounds => eval::round_even(d(0)) as i32 as u32,
        FltToInt => d(0).trunc() as i32 as u32,
        FltToUint if to_int_rounds => eval::round_even(d(0)) as u32,
        FltToUint => d(0).trunc() as u32,
        IntToFlt => bits(i(0) as f32),
        UintToFlt => bits(s[0] as f32),
        ExpIeee => round(d(0).exp2()),
        LogIeee => round(d(0).log2()),
        LogClamped => round(clamp_infinite(d(0).log2())),
        RecipIeee => round(1.0 / d(0)),
        RecipClamped => round(clamp_infinite(1.0 / d(0))),
        RecipsqrtIeee => round(1.0 / d(0).sqrt()),
        RecipsqrtClamped => round(clamp_infinite(1.0 / d(0).sqrt())),
        SqrtIeee => round(d(0).sqrt()),
        Sin if revolutions => round((d(0) * std::f64::consts::TAU).sin()),
        Sin => round(d(0).sin()),
        Cos if revolutions => round((d(0) * std::f64::consts::TAU).cos()),
        Cos => round(d(0).cos()),
        MulloInt | MulloUint => s[0].wrapping_mul(s[1]),
        MulhiInt => ((i(0) as i64 * i(1) as i64) >> 32) as u32,
        MulhiUint => ((s[0] as u64 * s[1] as u64) >> 32) as u32,
        RecipUint => match s[0] {
            0 => u32::MAX,
            x => ((1u64 << 32) / x as u64).min(u32::MAX as u64) as u32,
        },
        BfeUint | BfeInt => {
            let (offset, width) = (s[1] & 31, s[2] & 31);
            if width == 0 {
                0
            } else if offset + width < 32 {
                let up = s[0] << (32 - offset - width);
                if op == BfeInt {
                    ((up as i32) >> (32 - width)) as u32
                } else {
                    up >> (32 - width)
                }
            } else if op == BfeInt {
                (i(0) >> offset) as u32
            } else {
                s[0] >> offset
            }
        }
        BfiInt => s[0] & s[1] | !s[0] & s[2],
        BfmInt => ((1u32 << (s[0] & 31)) - 1) << (s[1] & 31),
        BcntInt => s[0].count_ones(),
        FfbhUint => match s[0] {
            0 => u32::MAX,
            x => x.leading_zeros(),
        },
        FfbhInt => match if i(0) < 0 { !s[0] } else { s[0] } {
            0 => u32::MAX,
            x => x.leading_zeros(),
        },
        FfblInt => match s[0] {
            0 => u32::MAX,
            x => x.trailing_zeros(),
        },
        BfrevInt => s[0].reverse_bits(),
        Fma => bits(f(0).mul_add(f(1), f(2))),
        AddcUint => s[0].checked_add(s[1]).is_none() as u32,
        SubbUint => (s[0] < s[1]) as u32,
        MulUint24 => (s[0] & 0xff_ffff).wrapping_mul(s[1] & 0xff_ffff),
        Muladd => bits(muladd(f(0), f(1), f(2), true)),
        MuladdM2 => bits(muladd(f(0), f(1), f(2), true) * 2.0),
        MuladdM4 => bits(muladd(f(0), f(1), f(2), true) * 4.0),
        MuladdD2 => bits(muladd(f(0), f(1), f(2), true) * 0.5),
        MuladdIeee => bits(muladd(f(0), f(1), f(2), false)),
        Cnde | Cndgt | Cndge | CndeInt | CndgtInt | CndgeInt => {
            if holds(op, s[0], 0) {
                s[1]
            } else {
                s[2]
            }
        }
        _ => return Err(unsupported(op.mnemonic())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Cf, Dst, MemRead, VtxFormat, end_program};
    use shrew_engine::interp::{MipLevel, Resources, SamplerState, Texture};
    use shrew_engine::ir::Dim;
    use shrew_engine::ops::BaseType;
    use std::sync::Arc;

    fn f(x: f32) -> u32 {
        x.to_bits()
    }

    fn floats(xs: &[f32]) -> Vec<u32> {
        xs.iter().map(|&x| f(x)).collect()
    }

    /// `cf` on `chip`, ended after its last instruction (by CF_END on Cayman).
    fn program(chip: Chip, mut cf: Vec<Cf>, stack_size: u8) -> Program {
        end_program(chip, &mut cf);
        Program {
            chip,
            cf,
            gprs: 16,
            stack_size,
            scratch_elements: 0,
        }
    }

    fn alu(op: CfOp, groups: Vec<Group>) -> Cf {
        Cf::new(
            op,
            CfBody::Alu {
                kcache: vec![],
                groups,
            },
        )
    }

    fn group(insts: Vec<AluInst>) -> Group {
        Group {
            insts,
            literals: vec![],
        }
    }

    fn inst(op: AluOp, dst: Dst, srcs: &[Src]) -> AluInst {
        AluInst::new(op, dst, srcs)
    }

    fn mov(dst: Dst, src: Src) -> AluInst {
        inst(AluOp::Mov, dst, &[src])
    }

    fn r(gpr: u8, chan: u8) -> Src {
        Src::gpr(gpr, chan)
    }

    fn d(gpr: u8, chan: u8) -> Dst {
        Dst::gpr(gpr, chan)
    }

    fn lit(chan: u8) -> Src {
        Src::sel(sel::LITERAL, chan)
    }

    /// A predicate set that updates the predicate and the exec mask (Mesa's `if`).
    fn pred_set(op: AluOp, a: Src, b: Src) -> AluInst {
        AluInst {
            update_exec_mask: true,
            update_pred: true,
            ..inst(op, Dst::none(0), &[a, b])
        }
    }

    /// A wavefront of `lanes` lanes with component `chan` of GPR `gpr` set per lane.
    fn wave(lanes: usize, inputs: &[(usize, usize, &[u32])]) -> Wavefront {
        let mut w = Wavefront::new(lanes);
        for &(gpr, chan, values) in inputs {
            for (lane, &v) in values.iter().enumerate() {
                w.gprs[lane][gpr][chan] = v;
            }
        }
        w
    }

    fn column(w: &Wavefront, gpr: usize, chan: usize) -> Vec<u32> {
        w.gprs.iter().map(|g| g[gpr][chan]).collect()
    }

    fn fetch(op: FetchOp, src_gpr: u8, src_sel: [u8; 4], dst_gpr: u8, dst_sel: [u8; 4]) -> Fetch {
        Fetch {
            op,
            resource: 0,
            sampler: 0,
            src_gpr,
            src_sel,
            dst_gpr,
            dst_sel,
            coord_normalized: [true; 4],
            lod_bias: 0,
            offset: [0; 3],
            vtx: VtxFormat::default(),
        }
    }

    fn run_env(p: &Program, w: &mut Wavefront, env: &Env) -> Vec<ExportRecord> {
        run(p, w, env).unwrap_or_else(|e| panic!("{e}"))
    }

    fn run_ok(p: &Program, w: &mut Wavefront) -> Vec<ExportRecord> {
        run_env(p, w, &Env::default())
    }

    fn err(p: &Program, w: &mut Wavefront) -> EmuError {
        run(p, w, &Env::default()).expect_err("the run should fail")
    }

    fn constants(values: &[(usize, [f32; 4])]) -> Vec<u8> {
        let len = values.iter().map(|&(n, _)| n + 1).max().unwrap_or(0);
        let mut bytes = vec![0; 16 * len];
        for &(n, v) in values {
            for (c, x) in v.iter().enumerate() {
                bytes[16 * n + 4 * c..][..4].copy_from_slice(&x.to_le_bytes());
            }
        }
        bytes
    }

    #[test]
    fn a_group_reads_literals_kcache_pv_and_ps() {
        let g0 = Group {
            insts: vec![
                inst(AluOp::Mul, d(1, 0), &[r(0, 0), lit(0)]),
                inst(
                    AluOp::Add,
                    d(1, 1),
                    &[Src::sel(129, 1), Src::sel(sel::ONE, 0)],
                ),
                mov(Dst::none(2), Src::sel(160 + 17, 3)),
                inst(AluOp::RecipIeee, d(2, 0), &[r(0, 1)]),
            ],
            literals: vec![f(2.5)],
        };
        let g1 = Group {
            insts: vec![
                inst(
                    AluOp::Add,
                    d(3, 0),
                    &[Src::sel(sel::PV, 0), Src::sel(sel::PS, 0)],
                ),
                mov(d(3, 1), Src::sel(sel::PV, 2)),
                inst(
                    AluOp::Muladd,
                    d(3, 2),
                    &[
                        Src::sel(sel::PV, 1),
                        lit(1),
                        Src {
                            neg: true,
                            ..r(0, 0)
                        },
                    ],
                ),
            ],
            literals: vec![f(3.0), f(0.5)],
        };
        let clause = Cf::new(
            CfOp::Alu,
            CfBody::Alu {
                kcache: vec![
                    Kcache {
                        bank: 0,
                        line: 0,
                        lines: 1,
                    },
                    Kcache {
                        bank: 3,
                        line: 1,
                        lines: 2,
                    },
                ],
                groups: vec![g0, g1],
            },
        );
        let env = Env {
            constant_buffers: BTreeMap::from([
                (0, constants(&[(1, [10.0, 20.0, 30.0, 40.0])])),
                (3, constants(&[(33, [100.0, 200.0, 300.0, 400.0])])),
            ]),
            ..Env::default()
        };
        let p = program(Chip::Evergreen, vec![clause], 0);
        let mut w = wave(
            2,
            &[(0, 0, &floats(&[1.5, -2.0])), (0, 1, &floats(&[4.0, 0.5]))],
        );
        run_env(&p, &mut w, &env);
        assert_eq!(column(&w, 1, 0), floats(&[3.75, -5.0]));
        assert_eq!(column(&w, 1, 1), floats(&[21.0, 21.0]));
        assert_eq!(column(&w, 1, 2), [0, 0], "the MOV does not write");
        assert_eq!(column(&w, 2, 0), floats(&[0.25, 2.0]));
        assert_eq!(column(&w, 3, 0), floats(&[4.0, -3.0]));
        assert_eq!(column(&w, 3, 1), floats(&[400.0, 400.0]));
        assert_eq!(column(&w, 3, 2), floats(&[9.0, 12.5]));
    }

    #[test]
    fn operands_the_clause_lacks_are_errors() {
        let one_group = |insts: Vec<AluInst>, literals: Vec<u32>| {
            program(
                Chip::Evergreen,
                vec![alu(CfOp::Alu, vec![Group { insts, literals }])],
                0,
            )
        };
        let mut w = Wavefront::new(1);
        let e = err(&one_group(vec![mov(d(1, 0), lit(1))], vec![7]), &mut w);
        assert_eq!(
            e,
            EmuError::Invalid {
                at: At {
                    cf: 0,
                    cf_op: CfOp::Alu,
                    within: Within::Inst {
                        group: 0,
                        inst: 0,
                        op: AluOp::Mov
                    }
                },
                why: "reads literal y of a group with 1".into()
            }
        );
        let e = err(
            &one_group(vec![mov(d(1, 0), Src::sel(128, 0))], vec![]),
            &mut w,
        );
        assert!(e.to_string().contains("KC0[0]"), "{e}");
        let kc = Cf::new(
            CfOp::Alu,
            CfBody::Alu {
                kcache: vec![Kcache {
                    bank: 0,
                    line: 2,
                    lines: 1,
                }],
                groups: vec![group(vec![mov(d(1, 0), Src::sel(128 + 16, 0))])],
            },
        );
        let e = err(&program(Chip::Evergreen, vec![kc], 0), &mut w);
        assert!(e.to_string().contains("outside the 16 constants"), "{e}");
        let e = err(
            &one_group(vec![mov(d(1, 0), Src::sel(sel::PV, 0))], vec![]),
            &mut w,
        );
        assert!(e.to_string().contains("reads PV.x"), "{e}");
        let e = err(&one_group(vec![mov(d(1, 0), r(125, 2))], vec![]), &mut w);
        assert!(e.to_string().contains("T1.z read before"), "{e}");
        let e = err(
            &one_group(
                vec![inst(AluOp::Cube, d(1, 0), &[r(0, 0), r(0, 1)])],
                vec![],
            ),
            &mut w,
        );
        assert!(matches!(e, EmuError::Unsupported { .. }), "{e}");
        // A clause temporary lives within its clause only.
        let temps = program(
            Chip::Evergreen,
            vec![
                alu(
                    CfOp::Alu,
                    vec![
                        group(vec![mov(d(124, 0), Src::sel(sel::ONE, 0))]),
                        group(vec![mov(d(1, 0), r(124, 0))]),
                    ],
                ),
                alu(CfOp::Alu, vec![group(vec![mov(d(1, 1), r(124, 0))])]),
            ],
            0,
        );
        let e = err(&temps, &mut w);
        assert!(e.to_string().starts_with("CF 1 (ALU)"), "{e}");
        assert_eq!(w.gprs[0][1][0], f(1.0));
    }

    #[test]
    fn cayman_runs_trans_operations_in_each_vector_slot() {
        let recips = group(vec![
            inst(AluOp::RecipIeee, d(1, 0), &[r(0, 0)]),
            inst(AluOp::RecipIeee, Dst::none(1), &[r(0, 1)]),
            inst(AluOp::RecipIeee, Dst::none(2), &[r(0, 2)]),
        ]);
        let mullo = group(vec![
            mov(d(1, 1), Src::sel(sel::PV, 1)),
            inst(AluOp::MulloInt, d(2, 0), &[r(3, 0), r(3, 1)]),
            inst(AluOp::MulloInt, Dst::none(1), &[r(3, 0), r(3, 0)]),
            inst(AluOp::MulloInt, Dst::none(2), &[r(3, 0), r(3, 0)]),
            inst(AluOp::MulloInt, Dst::none(3), &[r(3, 0), r(3, 0)]),
        ]);
        // The MOV and the MULLO_INT of slot x collide: split them.
        let [mov_pv, rest @ ..] = &mullo.insts[..] else {
            unreachable!()
        };
        let g1 = group(vec![mov_pv.clone()]);
        let g2 = group(rest.to_vec());
        let g3 = group(vec![mov(d(2, 1), Src::sel(sel::PV, 1))]);
        let p = program(
            Chip::Cayman,
            vec![alu(CfOp::Alu, vec![recips.clone(), g1, g2, g3])],
            0,
        );
        let mut w = wave(
            1,
            &[
                (0, 0, &floats(&[2.0])),
                (0, 1, &floats(&[8.0])),
                (3, 0, &[7]),
                (3, 1, &[(-3i32) as u32]),
            ],
        );
        run_ok(&p, &mut w);
        assert_eq!(w.gprs[0][1][..2], floats(&[0.5, 0.125]));
        assert_eq!(w.gprs[0][2][..2], [(-21i32) as u32, 49]);
        // Cayman has no PS.
        let ps = program(
            Chip::Cayman,
            vec![alu(
                CfOp::Alu,
                vec![recips, group(vec![mov(d(1, 0), Src::sel(sel::PS, 0))])],
            )],
            0,
        );
        assert!(err(&ps, &mut w).to_string().contains("PS on Cayman"));
    }

    #[test]
    fn legacy_multiplies_ignore_infinity_times_zero() {
        let g = group(vec![
            inst(AluOp::Mul, d(1, 0), &[r(0, 0), r(0, 1)]),
            inst(AluOp::MulIeee, d(1, 1), &[r(0, 0), r(0, 1)]),
            inst(AluOp::Muladd, d(1, 2), &[r(0, 0), r(0, 1), r(0, 2)]),
            inst(AluOp::MuladdIeee, d(1, 3), &[r(0, 0), r(0, 1), r(0, 2)]),
            inst(AluOp::MuladdM2, d(2, 0), &[r(0, 2), r(0, 2), r(0, 2)]),
        ]);
        let mut sat = inst(AluOp::MulIeee, d(2, 1), &[r(0, 2), r(0, 3)]);
        sat.omod = 1;
        sat.dst.clamp = true;
        let mut halved = inst(AluOp::Add, d(2, 2), &[r(0, 2), r(0, 3)]);
        halved.omod = 3;
        // PV holds the result after the output modifier and clamp.
        let pv = group(vec![mov(d(2, 3), Src::sel(sel::PV, 1))]);
        let p = program(
            Chip::Evergreen,
            vec![alu(CfOp::Alu, vec![g, group(vec![sat, halved]), pv])],
            0,
        );
        let mut w = wave(
            2,
            &[
                (0, 0, &floats(&[0.0, -0.0])),
                (0, 1, &floats(&[f32::INFINITY, f32::NAN])),
                (0, 2, &floats(&[2.0, 2.0])),
                (0, 3, &floats(&[0.125, -1.0])),
            ],
        );
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 1, 0), [f(0.0), f(-0.0)]);
        assert!(column(&w, 1, 1).iter().all(|&x| f32::from_bits(x).is_nan()));
        assert_eq!(column(&w, 1, 2), floats(&[2.0, 2.0]));
        assert!(column(&w, 1, 3).iter().all(|&x| f32::from_bits(x).is_nan()));
        assert_eq!(column(&w, 2, 0), floats(&[12.0, 12.0]));
        assert_eq!(column(&w, 2, 1), floats(&[0.5, 0.0]));
        assert_eq!(column(&w, 2, 2), floats(&[1.0625, 0.5]));
        assert_eq!(column(&w, 2, 3), floats(&[0.5, 0.0]));
    }

    #[test]
    fn flt_to_int_truncates_before_evergreen_and_rounds_after() {
        let inputs = floats(&[2.5, -2.5, 3.5, 1e20, f32::NAN, -1e20]);
        for (chip, expect) in [
            (Chip::R600, [2, -2, 3, i32::MAX, 0, i32::MIN]),
            (Chip::R700, [2, -2, 3, i32::MAX, 0, i32::MIN]),
            (Chip::Evergreen, [2, -2, 4, i32::MAX, 0, i32::MIN]),
            (Chip::Cayman, [2, -2, 4, i32::MAX, 0, i32::MIN]),
        ] {
            let g = group(vec![inst(AluOp::FltToInt, d(1, 0), &[r(0, 0)])]);
            let p = program(chip, vec![alu(CfOp::Alu, vec![g])], 0);
            let mut w = wave(inputs.len(), &[(0, 0, &inputs)]);
            run_ok(&p, &mut w);
            assert_eq!(column(&w, 1, 0), expect.map(|x| x as u32), "{chip:?}");
        }
    }

    #[test]
    fn sin_takes_radians_on_r600_and_revolutions_later() {
        for (chip, sin, cos) in [
            (Chip::R600, 0.25f64.sin() as f32, 0.5f64.cos() as f32),
            (Chip::R700, 1.0, -1.0),
            (Chip::Evergreen, 1.0, -1.0),
        ] {
            let p = program(
                chip,
                vec![alu(
                    CfOp::Alu,
                    vec![
                        group(vec![inst(AluOp::Sin, d(1, 0), &[r(0, 0)])]),
                        group(vec![inst(AluOp::Cos, d(1, 1), &[r(0, 1)])]),
                    ],
                )],
                0,
            );
            let mut w = wave(1, &[(0, 0, &floats(&[0.25])), (0, 1, &floats(&[0.5]))]);
            run_ok(&p, &mut w);
            assert_eq!(w.gprs[0][1][..2], floats(&[sin, cos]), "{chip:?}");
        }
    }

    /// `if (R0.x > 0) R1.x = 10 else R1.x = 20; R1.y = 1`, as Mesa lays it out.
    fn if_else(chip: Chip) -> Program {
        let set = |value: f32| Group {
            insts: vec![mov(d(1, 0), lit(0))],
            literals: vec![f(value)],
        };
        program(
            chip,
            vec![
                alu(
                    CfOp::AluPushBefore,
                    vec![group(vec![pred_set(
                        AluOp::PredSetgt,
                        r(0, 0),
                        Src::sel(sel::ZERO, 0),
                    )])],
                ),
                Cf::flow(CfOp::Jump, 3, 0),
                alu(CfOp::Alu, vec![set(10.0)]),
                Cf::flow(CfOp::Else, 5, 1),
                alu(CfOp::AluPopAfter, vec![set(20.0)]),
                alu(
                    CfOp::Alu,
                    vec![group(vec![mov(d(1, 1), Src::sel(sel::ONE, 0))])],
                ),
            ],
            1,
        )
    }

    #[test]
    fn if_else_runs_each_side_for_its_lanes() {
        for chip in [Chip::R600, Chip::Evergreen, Chip::Cayman] {
            let p = if_else(chip);
            let mut w = wave(4, &[(0, 0, &floats(&[1.0, -1.0, 2.0, -2.0]))]);
            run_ok(&p, &mut w);
            assert_eq!(
                column(&w, 1, 0),
                floats(&[10.0, 20.0, 10.0, 20.0]),
                "{chip:?}"
            );
            assert_eq!(column(&w, 1, 1), floats(&[1.0; 4]), "{chip:?}");
            // Every lane on one side: ELSE jumps over the other side, JUMP over the first.
            let mut w = wave(4, &[(0, 0, &floats(&[1.0; 4]))]);
            run_ok(&p, &mut w);
            assert_eq!(column(&w, 1, 0), floats(&[10.0; 4]));
            assert_eq!(column(&w, 1, 1), floats(&[1.0; 4]));
            let mut w = wave(4, &[(0, 0, &floats(&[-1.0; 4]))]);
            run_ok(&p, &mut w);
            assert_eq!(column(&w, 1, 0), floats(&[20.0; 4]));
            assert_eq!(column(&w, 1, 1), floats(&[1.0; 4]));
        }
    }

    /// A loop counting R1.x up to R0.x (integers), breaking at the top, as Mesa lays it out;
    /// R2.x = 1.0 after the loop.
    fn counting_loop(chip: Chip, stack_size: u8) -> Program {
        program(
            chip,
            vec![
                alu(
                    CfOp::Alu,
                    vec![group(vec![mov(d(1, 0), Src::sel(sel::ZERO, 0))])],
                ),
                Cf::flow(CfOp::LoopStartDx10, 8, 0),
                alu(
                    CfOp::AluPushBefore,
                    vec![group(vec![pred_set(AluOp::PredSetgeInt, r(1, 0), r(0, 0))])],
                ),
                Cf::flow(CfOp::Jump, 6, 1),
                Cf::flow(CfOp::LoopBreak, 7, 0),
                Cf::flow(CfOp::Pop, 6, 1),
                alu(
                    CfOp::Alu,
                    vec![group(vec![inst(
                        AluOp::AddInt,
                        d(1, 0),
                        &[r(1, 0), Src::sel(sel::ONE_INT, 0)],
                    )])],
                ),
                Cf::flow(CfOp::LoopEnd, 2, 0),
                alu(
                    CfOp::Alu,
                    vec![group(vec![mov(d(2, 0), Src::sel(sel::ONE, 0))])],
                ),
            ],
            stack_size,
        )
    }

    #[test]
    fn a_loop_runs_each_lane_until_it_breaks() {
        for chip in [Chip::R700, Chip::Evergreen, Chip::Cayman] {
            let mut w = wave(5, &[(0, 0, &[0, 1, 3, 2, 7])]);
            run_ok(&counting_loop(chip, 2), &mut w);
            assert_eq!(column(&w, 1, 0), [0, 1, 3, 2, 7], "{chip:?}");
            assert_eq!(column(&w, 2, 0), floats(&[1.0; 5]), "{chip:?}");
        }
    }

    /// `main` (ended) with the subroutine `sub` after it; `main`'s CALLs name the subroutine
    /// by the index 0.
    fn with_subroutine(chip: Chip, main: Vec<Cf>, sub: Vec<Cf>, stack_size: u8) -> Program {
        let mut p = program(chip, main, stack_size);
        let start = p.cf.len() as u32;
        for cf in &mut p.cf {
            if let (CfOp::Call, CfBody::Flow { addr, .. }) = (cf.op, &mut cf.body) {
                *addr = start;
            }
        }
        p.cf.extend(sub);
        p
    }

    #[test]
    fn a_call_runs_its_subroutine_on_the_active_lanes_and_returns() {
        for chip in [Chip::R700, Chip::Evergreen, Chip::Cayman] {
            // Lanes with R0.x > 0 call R1.x = R0.x + 1; then every lane copies R1.x.
            let p = with_subroutine(
                chip,
                vec![
                    alu(
                        CfOp::AluPushBefore,
                        vec![group(vec![pred_set(
                            AluOp::PredSetgtInt,
                            r(0, 0),
                            Src::sel(sel::ZERO, 0),
                        )])],
                    ),
                    Cf::flow(CfOp::Jump, 4, 1),
                    Cf::flow(CfOp::Call, 0, 0),
                    Cf::flow(CfOp::Pop, 0, 1),
                    alu(CfOp::Alu, vec![group(vec![mov(d(2, 0), r(1, 0))])]),
                ],
                vec![
                    alu(
                        CfOp::Alu,
                        vec![group(vec![inst(
                            AluOp::AddInt,
                            d(1, 0),
                            &[r(0, 0), Src::sel(sel::ONE_INT, 0)],
                        )])],
                    ),
                    Cf::flow(CfOp::Return, 0, 0),
                ],
                // A push and a call frame, and the chip's extra elements: two entries.
                2,
            );
            let mut w = wave(3, &[(0, 0, &[0, 5, 7])]);
            run_ok(&p, &mut w);
            assert_eq!(column(&w, 2, 0), [0, 6, 8], "{chip:?}");
        }
    }

    #[test]
    fn a_return_without_a_call_and_a_break_out_of_a_subroutine_are_errors() {
        let chip = Chip::Evergreen;
        let returns = program(chip, vec![Cf::flow(CfOp::Return, 0, 0)], 1);
        let e = err(&returns, &mut wave(1, &[]));
        assert!(e.to_string().contains("RET without its call frame"), "{e}");
        // A loop whose body calls a subroutine that breaks.
        let breaks = with_subroutine(
            chip,
            vec![
                Cf::flow(CfOp::LoopStartDx10, 3, 0),
                Cf::flow(CfOp::Call, 0, 0),
                Cf::flow(CfOp::LoopEnd, 1, 0),
            ],
            vec![
                Cf::flow(CfOp::LoopBreak, 2, 0),
                Cf::flow(CfOp::Return, 0, 0),
            ],
            2,
        );
        let e = err(&breaks, &mut wave(1, &[]));
        assert!(e.to_string().contains("outside a loop"), "{e}");
    }

    #[test]
    fn a_stack_deeper_than_declared_is_an_error() {
        // Evergreen: a loop frame (4) + a push (1) + 1 = 6 elements, 2 entries.
        let mut w = wave(2, &[(0, 0, &[1, 2])]);
        let e = err(&counting_loop(Chip::Evergreen, 1), &mut w);
        assert_eq!(
            e,
            EmuError::StackOverflow {
                at: At {
                    cf: 2,
                    cf_op: CfOp::AluPushBefore,
                    within: Within::Cf
                },
                needed: 2,
                declared: 1
            }
        );
        // One push on Evergreen: 2 elements, 1 entry; the if/else declares 1.
        let mut w = wave(1, &[(0, 0, &floats(&[1.0]))]);
        run_ok(&if_else(Chip::Evergreen), &mut w);
        let mut none = if_else(Chip::Evergreen);
        none.stack_size = 0;
        assert!(matches!(
            err(&none, &mut w),
            EmuError::StackOverflow { needed: 1, .. }
        ));
    }

    #[test]
    fn stack_elements_follow_each_chip() {
        // `n` nested PUSHes, popped together.
        let pushes = |chip: Chip, n: usize| {
            let mut cf: Vec<Cf> = (0..n).map(|_| Cf::flow(CfOp::Push, 0, 0)).collect();
            cf.push(Cf::flow(CfOp::Pop, 0, n as u8));
            program(chip, cf, 1)
        };
        // A loop whose body breaks at once.
        let empty_loop = |chip: Chip| {
            program(
                chip,
                vec![
                    Cf::flow(CfOp::LoopStartDx10, 3, 0),
                    Cf::flow(CfOp::LoopBreak, 2, 0),
                    Cf::flow(CfOp::LoopEnd, 1, 0),
                    Cf::flow(CfOp::Nop, 0, 0),
                ],
                1,
            )
        };
        // Pushes, plus 2 (R600/R700) or 1 (Evergreen) with a push; plus 2 always on Cayman.
        for (chip, fit) in [
            (Chip::R600, 2),
            (Chip::R700, 2),
            (Chip::Evergreen, 3),
            (Chip::Cayman, 2),
        ] {
            let mut w = Wavefront::new(1);
            run_ok(&pushes(chip, fit), &mut w);
            let e = err(&pushes(chip, fit + 1), &mut w);
            let at_last_push =
                matches!(&e, EmuError::StackOverflow { needed: 2, at, .. } if at.cf == fit);
            assert!(at_last_push, "{chip:?}: {e}");
            let looped = run(&empty_loop(chip), &mut w, &Env::default());
            assert_eq!(looped.is_ok(), chip != Chip::Cayman, "{chip:?}");
        }
    }

    #[test]
    fn continue_parks_lanes_until_the_next_iteration() {
        // Count R1.x up to R0.x; R3.x counts the iterations where R1.x (after the increment)
        // is even: an odd one continues.
        let p = program(
            Chip::Evergreen,
            vec![
                alu(
                    CfOp::Alu,
                    vec![group(vec![mov(d(1, 0), Src::sel(sel::ZERO, 0))])],
                ),
                Cf::flow(CfOp::LoopStartDx10, 13, 0),
                alu(
                    CfOp::AluPushBefore,
                    vec![group(vec![pred_set(AluOp::PredSetgeInt, r(1, 0), r(0, 0))])],
                ),
                Cf::flow(CfOp::Jump, 6, 1),
                Cf::flow(CfOp::LoopBreak, 12, 0),
                Cf::flow(CfOp::Pop, 6, 1),
                alu(
                    CfOp::Alu,
                    vec![group(vec![inst(
                        AluOp::AddInt,
                        d(1, 0),
                        &[r(1, 0), Src::sel(sel::ONE_INT, 0)],
                    )])],
                ),
                alu(
                    CfOp::AluPushBefore,
                    vec![
                        group(vec![inst(
                            AluOp::AndInt,
                            Dst::none(0),
                            &[r(1, 0), Src::sel(sel::ONE_INT, 0)],
                        )]),
                        group(vec![pred_set(
                            AluOp::PredSetneInt,
                            Src::sel(sel::PV, 0),
                            Src::sel(sel::ZERO, 0),
                        )]),
                    ],
                ),
                Cf::flow(CfOp::Jump, 11, 1),
                Cf::flow(CfOp::LoopContinue, 12, 0),
                Cf::flow(CfOp::Pop, 11, 1),
                alu(
                    CfOp::Alu,
                    vec![group(vec![inst(
                        AluOp::AddInt,
                        d(3, 0),
                        &[r(3, 0), Src::sel(sel::ONE_INT, 0)],
                    )])],
                ),
                Cf::flow(CfOp::LoopEnd, 2, 0),
                alu(
                    CfOp::Alu,
                    vec![group(vec![mov(d(2, 0), Src::sel(sel::ONE, 0))])],
                ),
            ],
            2,
        );
        let mut w = wave(4, &[(0, 0, &[0, 1, 4, 5])]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 1, 0), [0, 1, 4, 5]);
        assert_eq!(column(&w, 3, 0), [0, 0, 2, 2]);
        assert_eq!(column(&w, 2, 0), floats(&[1.0; 4]));
    }

    #[test]
    fn a_runaway_loop_hits_the_step_limit() {
        let p = program(
            Chip::Evergreen,
            vec![
                Cf::flow(CfOp::LoopStartDx10, 3, 0),
                alu(CfOp::Alu, vec![]),
                Cf::flow(CfOp::LoopEnd, 1, 0),
                Cf::flow(CfOp::Nop, 0, 0),
            ],
            1,
        );
        let mut w = Wavefront::new(4);
        assert_eq!(err(&p, &mut w), EmuError::StepLimit(STEP_LIMIT));
    }

    #[test]
    fn malformed_control_flow_is_an_error() {
        let mut w = Wavefront::new(1);
        let pop = program(Chip::Evergreen, vec![Cf::flow(CfOp::Pop, 0, 1)], 1);
        assert!(
            err(&pop, &mut w)
                .to_string()
                .contains("popping an empty stack")
        );
        let jump = program(
            Chip::Evergreen,
            vec![Cf::flow(CfOp::Push, 0, 0), Cf::flow(CfOp::Jump, 9, 1)],
            1,
        );
        assert_eq!(
            err(&jump, &mut w),
            EmuError::BadAddress {
                at: At {
                    cf: 1,
                    cf_op: CfOp::Jump,
                    within: Within::Cf
                },
                addr: 9,
                len: 2
            }
        );
        let mut open = program(Chip::Evergreen, vec![Cf::flow(CfOp::Nop, 0, 0)], 0);
        open.cf[0].end_of_program = false;
        assert_eq!(err(&open, &mut w), EmuError::RanOffEnd);
        let brk = program(Chip::Evergreen, vec![Cf::flow(CfOp::LoopBreak, 0, 0)], 0);
        assert!(err(&brk, &mut w).to_string().contains("outside a loop"));
        let mut w = Wavefront::new(65);
        assert!(matches!(err(&brk, &mut w), EmuError::Setup(_)));
    }

    #[test]
    fn killed_lanes_stay_out_and_export_nothing() {
        let kill = inst(
            AluOp::Killgt,
            Dst::none(0),
            &[Src::sel(sel::ZERO, 0), r(0, 0)],
        );
        let export = Cf::new(
            CfOp::ExportDone,
            CfBody::Export(Export {
                burst: 2,
                ..Export::new(ExportType::Pixel, 0, 0, [0, 4, 5, 7])
            }),
        );
        // Kill inside an `if`: the POP must not bring the killed lane back.
        let p = program(
            Chip::Evergreen,
            vec![
                alu(
                    CfOp::AluPushBefore,
                    vec![group(vec![pred_set(
                        AluOp::PredSetgt,
                        r(0, 1),
                        Src::sel(sel::ZERO, 0),
                    )])],
                ),
                Cf::flow(CfOp::Jump, 3, 1),
                alu(CfOp::AluPopAfter, vec![group(vec![kill])]),
                alu(
                    CfOp::Alu,
                    vec![Group {
                        insts: vec![mov(d(1, 0), lit(0))],
                        literals: vec![f(5.0)],
                    }],
                ),
                export,
            ],
            1,
        );
        let mut w = wave(
            4,
            &[
                (0, 0, &floats(&[1.0, -1.0, 2.0, -3.0])),
                (0, 1, &floats(&[1.0, 1.0, 1.0, -1.0])),
            ],
        );
        let exports = run_ok(&p, &mut w);
        assert_eq!(w.killed, [false, true, false, false]);
        assert_eq!(column(&w, 1, 0), floats(&[5.0, 0.0, 5.0, 5.0]));
        let one = f(1.0);
        assert_eq!(
            exports,
            [
                ExportRecord {
                    kind: ExportType::Pixel,
                    base: 0,
                    values: vec![
                        Some([one, 0, one, 0]),
                        None,
                        Some([f(2.0), 0, one, 0]),
                        Some([f(-3.0), 0, one, 0]),
                    ],
                },
                ExportRecord {
                    kind: ExportType::Pixel,
                    base: 1,
                    values: vec![
                        Some([f(5.0), 0, one, 0]),
                        None,
                        Some([f(5.0), 0, one, 0]),
                        Some([f(5.0), 0, one, 0]),
                    ],
                },
            ]
        );
    }

    #[test]
    fn else_and_loop_end_do_not_bring_killed_lanes_back() {
        // Kill the lanes where R0.x < 0.
        let kill = || {
            alu(
                CfOp::Alu,
                vec![group(vec![inst(
                    AluOp::Killgt,
                    Dst::none(0),
                    &[Src::sel(sel::ZERO, 0), r(0, 0)],
                )])],
            )
        };
        let set = |chan: u8| {
            alu(
                CfOp::Alu,
                vec![group(vec![mov(d(1, chan), Src::sel(sel::ONE, 0))])],
            )
        };
        // if (R0.y > 0) kill; else R1.x = 1
        let in_if = program(
            Chip::Evergreen,
            vec![
                alu(
                    CfOp::AluPushBefore,
                    vec![group(vec![pred_set(
                        AluOp::PredSetgt,
                        r(0, 1),
                        Src::sel(sel::ZERO, 0),
                    )])],
                ),
                Cf::flow(CfOp::Jump, 3, 0),
                kill(),
                Cf::flow(CfOp::Else, 5, 1),
                alu(
                    CfOp::AluPopAfter,
                    vec![group(vec![mov(d(1, 0), Src::sel(sel::ONE, 0))])],
                ),
                Cf::flow(CfOp::Nop, 0, 0),
            ],
            1,
        );
        let inputs = [
            (0, 0, &floats(&[-1.0, 1.0, 1.0])[..]),
            (0, 1, &floats(&[1.0, 1.0, -1.0])[..]),
        ];
        let mut w = wave(3, &inputs);
        run_ok(&in_if, &mut w);
        assert_eq!(w.killed, [true, false, false]);
        assert_eq!(column(&w, 1, 0), floats(&[0.0, 0.0, 1.0]));
        // loop { kill; break } R1.y = 1
        let in_loop = program(
            Chip::Evergreen,
            vec![
                Cf::flow(CfOp::LoopStartDx10, 4, 0),
                kill(),
                Cf::flow(CfOp::LoopBreak, 3, 0),
                Cf::flow(CfOp::LoopEnd, 1, 0),
                set(1),
            ],
            1,
        );
        let mut w = wave(3, &inputs);
        run_ok(&in_loop, &mut w);
        assert_eq!(w.killed, [true, false, false]);
        assert_eq!(column(&w, 1, 1), floats(&[0.0, 1.0, 1.0]));
    }

    #[test]
    fn interp_weighs_the_parameters_by_i_and_j() {
        let param = |n: u16| Src::sel(sel::PARAM + n, 0);
        let pairs = |op: AluOp, writes: [bool; 4]| {
            group(
                (0..4u8)
                    .map(|c| {
                        let dst = if writes[c as usize] {
                            d(1, c)
                        } else {
                            Dst::none(c)
                        };
                        // Even slots read j (R0.y), odd ones i (R0.x).
                        inst(op, dst, &[r(0, 1 - c % 2), param(0)])
                    })
                    .collect(),
            )
        };
        let p = program(
            Chip::Evergreen,
            vec![alu(
                CfOp::Alu,
                vec![
                    pairs(AluOp::InterpZw, [false, false, true, true]),
                    pairs(AluOp::InterpXy, [true, true, false, false]),
                    group(vec![inst(
                        AluOp::InterpLoadP0,
                        d(2, 0),
                        &[Src::sel(sel::PARAM + 1, 2)],
                    )]),
                ],
            )],
            0,
        );
        let env = Env {
            params: vec![
                [
                    [1.0, 2.0, 4.0],
                    [0.5, 1.0, -1.0],
                    [10.0, 4.0, 8.0],
                    [-1.0, 2.0, 2.0],
                ],
                [[0.0; 3], [0.0; 3], [7.0, 1.0, 1.0], [0.0; 3]],
            ],
            ..Env::default()
        };
        let mut w = wave(
            2,
            &[
                (0, 0, &floats(&[0.25, 0.5])),
                (0, 1, &floats(&[0.5, 0.125])),
            ],
        );
        run_env(&p, &mut w, &env);
        assert_eq!(w.gprs[0][1], floats(&[3.5, 0.25, 15.0, 0.5])[..]);
        assert_eq!(w.gprs[1][1], floats(&[2.5, 0.875, 13.0, 0.25])[..]);
        assert_eq!(column(&w, 2, 0), floats(&[7.0, 7.0]));
    }

    #[test]
    fn dot4_fills_the_vector_slots_and_replicates() {
        let dot = |op: AluOp, n: u8| {
            group(
                (0..n)
                    .map(|c| {
                        let dst = if c == 0 { d(2, 0) } else { Dst::none(c) };
                        inst(op, dst, &[r(0, c), r(1, c)])
                    })
                    .collect(),
            )
        };
        let p = program(
            Chip::Evergreen,
            vec![alu(
                CfOp::Alu,
                vec![
                    dot(AluOp::Dot4, 4),
                    group(vec![
                        mov(d(2, 1), Src::sel(sel::PV, 0)),
                        mov(d(2, 2), Src::sel(sel::PV, 3)),
                    ]),
                    dot(AluOp::Dot4Ieee, 4),
                ],
            )],
            0,
        );
        let mut w = Wavefront::new(1);
        w.gprs[0][0] = floats(&[1.0, 2.0, 0.0, 4.0]).try_into().unwrap();
        w.gprs[0][1] = floats(&[5.0, 6.0, f32::INFINITY, 8.0]).try_into().unwrap();
        run_ok(&p, &mut w);
        assert!(f32::from_bits(w.gprs[0][2][0]).is_nan(), "DOT4_IEEE: 0·inf");
        assert_eq!(w.gprs[0][2][1..3], floats(&[49.0, 49.0]));
        let short = program(
            Chip::Evergreen,
            vec![alu(CfOp::Alu, vec![dot(AluOp::Dot4, 3)])],
            0,
        );
        assert!(
            err(&short, &mut w)
                .to_string()
                .contains("four vector slots")
        );
    }

    #[test]
    fn vertex_fetches_read_elements_at_the_buffer_stride() {
        let bytes: Vec<u8> = (0..12u32).flat_map(|k| (100 + k).to_le_bytes()).collect();
        let env = Env {
            buffers: BTreeMap::from([(1, Buffer { bytes, stride: 16 })]),
            ..Env::default()
        };
        let vfetch = |dst: u8, format: u8, offset: u16, dst_sel: [u8; 4]| Fetch {
            resource: 1,
            vtx: VtxFormat {
                data_format: format,
                offset,
                ..VtxFormat::default()
            },
            ..fetch(FetchOp::Vfetch, 0, [1, 7, 7, 7], dst, dst_sel)
        };
        let fetches = vec![
            vfetch(1, 34, 0, [0, 1, 2, 3]),
            vfetch(2, 13, 4, [0, 4, 5, 7]),
        ];
        for (chip, op) in [
            (Chip::R600, CfOp::Vtx),
            (Chip::Evergreen, CfOp::Tex),
            (Chip::Cayman, CfOp::Tex),
        ] {
            let p = program(chip, vec![Cf::new(op, CfBody::Fetch(fetches.clone()))], 0);
            let mut w = wave(3, &[(0, 1, &[0, 2, 3]), (2, 3, &[77, 77, 77])]);
            run_env(&p, &mut w, &env);
            assert_eq!(w.gprs[0][1], [100, 101, 102, 103], "{chip:?}");
            assert_eq!(w.gprs[1][1], [108, 109, 110, 111]);
            assert_eq!(w.gprs[2][1], [0; 4], "past the end");
            assert_eq!(w.gprs[0][2], [101, 0, f(1.0), 77]);
            assert_eq!(w.gprs[1][2], [109, 0, f(1.0), 77]);
        }
        let p = program(
            Chip::R700,
            vec![Cf::new(CfOp::Tex, CfBody::Fetch(fetches))],
            0,
        );
        let mut w = Wavefront::new(1);
        assert!(err(&p, &mut w).to_string().contains("before Evergreen"));
        // The same bytes as a buffer of dwords: index 3 is byte 12.
        let dwords = Env {
            buffers: BTreeMap::from([(
                1,
                Buffer {
                    bytes: env.buffers[&1].bytes.clone(),
                    stride: 4,
                },
            )]),
            ..Env::default()
        };
        let fetches = vec![vfetch(1, 29, 4, [0, 1, 7, 7])];
        let p = program(
            Chip::Evergreen,
            vec![Cf::new(CfOp::Tex, CfBody::Fetch(fetches))],
            0,
        );
        let mut w = wave(1, &[(0, 1, &[3])]);
        run_env(&p, &mut w, &dwords);
        assert_eq!(w.gprs[0][1], [104, 105, 0, 0]);
    }

    #[test]
    fn gradients_are_coarse_or_fine_differences_over_the_quad() {
        let p = program(
            Chip::Evergreen,
            vec![Cf::new(
                CfOp::Tex,
                CfBody::Fetch(vec![
                    fetch(FetchOp::GetGradientsHFine, 0, [0, 0, 0, 0], 1, [0, 7, 7, 7]),
                    fetch(FetchOp::GetGradientsVFine, 0, [0, 0, 0, 0], 1, [7, 0, 7, 7]),
                    fetch(FetchOp::GetGradientsH, 0, [0, 0, 0, 0], 2, [0, 7, 7, 7]),
                    fetch(FetchOp::GetGradientsV, 0, [0, 0, 0, 0], 2, [7, 0, 7, 7]),
                ]),
            )],
            0,
        );
        let mut w = wave(4, &[(0, 0, &floats(&[1.0, 2.0, 10.0, 30.0]))]);
        run_ok(&p, &mut w);
        assert_eq!(column(&w, 1, 0), floats(&[1.0, 1.0, 20.0, 20.0]));
        assert_eq!(column(&w, 1, 1), floats(&[9.0, 28.0, 9.0, 28.0]));
        assert_eq!(column(&w, 2, 0), floats(&[1.0; 4]));
        assert_eq!(column(&w, 2, 1), floats(&[9.0; 4]));
    }

    const RED: [f32; 4] = [1.0, 0.0, 0.0, 1.0];
    const T00: [f32; 4] = [1.0, 0.0, 0.0, 1.0];
    const T10: [f32; 4] = [0.0, 1.0, 0.0, 1.0];
    const T01: [f32; 4] = [0.0, 0.0, 1.0, 1.0];
    const T11: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

    /// A 4×4 red texture whose 2×2 level 1 has four colours, as resource 0 (binding 5) with
    /// sampler 0 (binding 2, nearest filtering and mipmapping).
    fn texture_env() -> Env {
        let mut resources = Resources::default();
        resources.textures.insert(
            5,
            Texture {
                layers: 1,
                levels: vec![
                    MipLevel::from_f32(4, 4, 1, &[RED; 16]),
                    MipLevel::from_f32(2, 2, 1, &[T00, T10, T01, T11]),
                ],
            },
        );
        resources.samplers.insert(2, SamplerState::default());
        let mut env = Env::default();
        env.textures.views.insert(
            0,
            texture::TexView {
                binding: 5,
                dim: Dim::D2,
                is_array: false,
                dest_type: BaseType::Float,
            },
        );
        env.textures.sampler_bindings.insert(0, 2);
        env.textures.resources = Arc::new(resources);
        env
    }

    #[test]
    fn sample_takes_its_lod_from_the_quad() {
        let texel_units = Fetch {
            coord_normalized: [false, false, true, true],
            ..fetch(FetchOp::Sample, 2, [0, 1, 7, 7], 3, [3, 0, 4, 5])
        };
        let p = program(
            Chip::Evergreen,
            vec![Cf::new(
                CfOp::Tex,
                CfBody::Fetch(vec![
                    fetch(FetchOp::Sample, 0, [0, 1, 7, 7], 1, [0, 1, 2, 3]),
                    texel_units,
                    fetch(FetchOp::SampleL, 0, [0, 1, 7, 2], 4, [0, 1, 2, 3]),
                    fetch(FetchOp::SampleLz, 0, [0, 1, 7, 7], 5, [0, 1, 2, 3]),
                ]),
            )],
            0,
        );
        // Coordinates half a texture apart: two texels of level 0, so level 1.
        let (u, v) = ([0.25, 0.75, 0.25, 0.75], [0.25, 0.25, 0.75, 0.75]);
        let mut w = wave(
            4,
            &[
                (0, 0, &floats(&u)),
                (0, 1, &floats(&v)),
                (0, 2, &floats(&[0.0, 1.0, 0.0, 1.0])),
                (2, 0, &floats(&u.map(|x| 4.0 * x))),
                (2, 1, &floats(&v.map(|x| 4.0 * x))),
            ],
        );
        run_env(&p, &mut w, &texture_env());
        let level1 = [T00, T10, T01, T11];
        for (lane, (gprs, t)) in w.gprs.iter().zip(level1).enumerate() {
            assert_eq!(gprs[1], t.map(f), "lane {lane}");
            assert_eq!(gprs[3], [t[3], t[0], 0.0, 1.0].map(f), "lane {lane}");
            let lod = if lane % 2 == 0 { RED } else { t };
            assert_eq!(gprs[4], lod.map(f), "SAMPLE_L, lane {lane}");
            assert_eq!(gprs[5], RED.map(f), "SAMPLE_LZ, lane {lane}");
        }
        // A lane alone in its quad has no derivatives: level 0.
        let mut w = wave(1, &[(0, 0, &floats(&[0.75])), (0, 1, &floats(&[0.25]))]);
        run_env(&p, &mut w, &texture_env());
        assert_eq!(w.gprs[0][1], RED.map(f));
    }

    #[test]
    fn ld_and_resinfo_take_integers() {
        let p = program(
            Chip::Cayman,
            vec![Cf::new(
                CfOp::Tex,
                CfBody::Fetch(vec![
                    fetch(FetchOp::Ld, 0, [0, 1, 7, 3], 1, [0, 1, 2, 3]),
                    fetch(FetchOp::GetTextureResinfo, 2, [0, 7, 7, 7], 3, [0, 1, 2, 3]),
                ]),
            )],
            0,
        );
        let mut w = wave(
            2,
            &[
                (0, 0, &[1, 3]),
                (0, 1, &[0, 2]),
                (0, 3, &[1, 0]),
                (2, 0, &[0, 1]),
            ],
        );
        run_env(&p, &mut w, &texture_env());
        assert_eq!(w.gprs[0][1], T10.map(f));
        assert_eq!(w.gprs[1][1], RED.map(f));
        assert_eq!(w.gprs[0][3], [4, 4, 0, 2]);
        assert_eq!(w.gprs[1][3], [2, 2, 0, 2]);
        // A texture fetch out of range is the sampler's error.
        w.gprs[0][0][0] = 9;
        let e = run(&p, &mut w, &texture_env()).expect_err("out of range");
        assert!(matches!(e, EmuError::Texture { .. }), "{e}");
    }

    #[test]
    fn scalar_operations() {
        let e = |op: AluOp, s: [u32; 3]| eval_op(op, Chip::Evergreen, s).unwrap();
        let fl = |x: f32| x.to_bits();
        let nan = f32::NAN.to_bits();
        assert_eq!(e(AluOp::MaxDx10, [nan, fl(2.0), 0]), fl(2.0));
        assert_eq!(e(AluOp::MinDx10, [fl(3.0), nan, 0]), fl(3.0));
        assert_eq!(e(AluOp::Max, [nan, fl(2.0), 0]), fl(2.0));
        assert!(f32::from_bits(e(AluOp::Max, [fl(2.0), nan, 0])).is_nan());
        assert_eq!(e(AluOp::Setne, [nan, nan, 0]), fl(1.0));
        assert_eq!(e(AluOp::SetgtDx10, [fl(1.0), fl(-1.0), 0]), u32::MAX);
        assert_eq!(e(AluOp::SetgtUint, [u32::MAX, 1, 0]), u32::MAX);
        assert_eq!(e(AluOp::SetgtInt, [u32::MAX, 1, 0]), 0);
        assert_eq!(e(AluOp::PredSetgt, [fl(1.0), 0, 0]), 0);
        assert_eq!(e(AluOp::PredSetgt, [0, fl(1.0), 0]), fl(1.0));
        assert_eq!(e(AluOp::Cndge, [fl(-0.0), 1, 2]), 1);
        assert_eq!(e(AluOp::CndgtInt, [u32::MAX, 1, 2]), 2);
        assert_eq!(e(AluOp::LogClamped, [0, 0, 0]), fl(f32::MIN));
        assert_eq!(e(AluOp::RecipClamped, [fl(-0.0), 0, 0]), fl(f32::MIN));
        assert_eq!(e(AluOp::RecipsqrtIeee, [fl(4.0), 0, 0]), fl(0.5));
        assert_eq!(e(AluOp::ExpIeee, [fl(-2.0), 0, 0]), fl(0.25));
        assert_eq!(e(AluOp::Fract, [fl(-1.25), 0, 0]), fl(0.75));
        assert_eq!(e(AluOp::Rndne, [fl(2.5), 0, 0]), fl(2.0));
        assert_eq!(e(AluOp::FltToUint, [fl(-3.0), 0, 0]), 0);
        assert_eq!(e(AluOp::UintToFlt, [u32::MAX, 0, 0]), fl(4294967296.0));
        assert_eq!(e(AluOp::AshrInt, [0x8000_0000, 33, 0]), 0xc000_0000);
        assert_eq!(e(AluOp::LshlInt, [1, 36, 0]), 16);
        assert_eq!(e(AluOp::MulhiInt, [(-2i32) as u32, 0x8000_0000, 0]), 1);
        assert_eq!(e(AluOp::MulhiUint, [u32::MAX, 2, 0]), 1);
        assert_eq!(e(AluOp::RecipUint, [3, 0, 0]), 0x5555_5555);
        assert_eq!(e(AluOp::RecipUint, [1, 0, 0]), u32::MAX);
        assert_eq!(e(AluOp::RecipUint, [0, 0, 0]), u32::MAX);
        assert_eq!(e(AluOp::BfeUint, [0xabcd_1234, 8, 8]), 0x12);
        assert_eq!(e(AluOp::BfeInt, [0x0000_f000, 12, 4]), u32::MAX);
        assert_eq!(e(AluOp::BfeUint, [0xabcd_1234, 16, 0]), 0);
        assert_eq!(e(AluOp::BfeUint, [0xabcd_1234, 28, 8]), 0xa);
        assert_eq!(e(AluOp::BfiInt, [0xff00, 0x1234, 0xabcd]), 0x12cd);
        assert_eq!(e(AluOp::BfmInt, [4, 8, 0]), 0xf00);
        assert_eq!(e(AluOp::BcntInt, [0xf0f0, 0, 0]), 8);
        assert_eq!(e(AluOp::FfbhUint, [1, 0, 0]), 31);
        assert_eq!(e(AluOp::FfbhUint, [0, 0, 0]), u32::MAX);
        assert_eq!(e(AluOp::FfbhInt, [(-2i32) as u32, 0, 0]), 31);
        assert_eq!(e(AluOp::FfbhInt, [u32::MAX, 0, 0]), u32::MAX);
        assert_eq!(e(AluOp::FfblInt, [8, 0, 0]), 3);
        assert_eq!(e(AluOp::BfrevInt, [1, 0, 0]), 0x8000_0000);
        assert_eq!(e(AluOp::AddcUint, [u32::MAX, 1, 0]), 1);
        assert_eq!(e(AluOp::SubbUint, [1, 2, 0]), 1);
        assert_eq!(e(AluOp::MulUint24, [0x0100_0003, 5, 0]), 15);
        // MULADD_IEEE rounds the product: (1 + 2^-23)² − 1 loses its 2^-46 term, FMA keeps it.
        let x = fl(1.0 + f32::EPSILON);
        let rounded = f32::from_bits(e(AluOp::MuladdIeee, [x, x, fl(-1.0)]));
        assert_eq!(rounded, 2.0 * f32::EPSILON);
        let fused = f32::from_bits(e(AluOp::Fma, [x, x, fl(-1.0)]));
        assert_eq!(fused, 2.0 * f32::EPSILON + f32::EPSILON * f32::EPSILON);
        assert!(matches!(
            eval_op(AluOp::Cube, Chip::Evergreen, [0; 3]),
            Err(Why::Unsupported(_))
        ));
    }

    /// MEM_SCRATCH of R`gpr`'s x channel to element `base` (+ R`index`.x), acknowledged.
    fn scratch_write(base: u16, gpr: u8, index: Option<u8>, array_size: u16) -> Cf {
        Cf::new(
            CfOp::MemScratch,
            CfBody::Export(Export {
                elem_size: 3,
                index_gpr: index,
                ack: true,
                array_size,
                ..Export::new(ExportType::Scratch, base, gpr, [0, 7, 7, 7])
            }),
        )
    }

    /// A VTX clause reading element `base` (+ R`index`.x) into R`dst`.x.
    fn scratch_read(base: u16, index: Option<u8>, array_size: u16, dst: u8) -> Cf {
        let mut read = fetch(
            FetchOp::ReadScratch,
            index.unwrap_or(0),
            [0, 7, 7, 7],
            dst,
            [0, 7, 7, 7],
        );
        read.coord_normalized = [false; 4];
        read.vtx = VtxFormat {
            data_format: 34,
            mem: MemRead {
                array_base: base,
                array_size,
                elem_size: 3,
                indexed: index.is_some(),
            },
            ..VtxFormat::default()
        };
        Cf::new(CfOp::Vtx, CfBody::Fetch(vec![read]))
    }

    #[test]
    fn scratch_memory_is_per_lane_and_indexed() {
        let wait = Cf::flow(CfOp::WaitAck, 0, 0);
        let mut p = program(
            Chip::Evergreen,
            vec![
                scratch_write(2, 0, Some(1), 4),
                scratch_write(0, 2, None, 0),
                wait,
                scratch_read(2, Some(1), 4, 3),
                scratch_read(0, None, 0, 4),
                // Index 4 is past the array: the write is dropped, the read gives 0.
                scratch_write(2, 0, Some(5), 4),
                Cf::flow(CfOp::WaitAck, 0, 0),
                scratch_read(2, Some(5), 4, 6),
                scratch_read(5, None, 0, 7),
            ],
            0,
        );
        p.scratch_elements = 8;
        let mut w = wave(
            2,
            &[
                (0, 0, &[10, 20]),
                (1, 0, &[0, 3]),
                (2, 0, &[7, 8]),
                (5, 0, &[4, 4]),
                (6, 0, &[9, 9]),
            ],
        );
        run_ok(&p, &mut w);
        assert_eq!(
            column(&w, 3, 0),
            [10, 20],
            "each lane reads its own element"
        );
        assert_eq!(column(&w, 4, 0), [7, 8]);
        assert_eq!(column(&w, 6, 0), [0, 0], "a read past the array");
        assert_eq!(column(&w, 7, 0), [0, 20], "lane 1 wrote element 2 + 3");
    }

    #[test]
    fn scratch_reads_wait_for_writes_and_stay_in_memory() {
        let mut p = program(
            Chip::Cayman,
            vec![scratch_write(0, 0, None, 0), scratch_read(0, None, 0, 1)],
            0,
        );
        p.scratch_elements = 1;
        if let CfBody::Fetch(_) = p.cf[1].body {
            p.cf[1].op = CfOp::Tex;
        }
        let e = err(&p, &mut Wavefront::new(1));
        assert!(e.to_string().contains("in flight"), "{e}");
        p.scratch_elements = 0;
        p.cf.remove(1);
        let e = err(&p, &mut Wavefront::new(1));
        assert!(e.to_string().contains("past the 0"), "{e}");
    }

    fn relative(src: Src) -> Src {
        Src { rel: true, ..src }
    }

    /// MOVA_INT of R1.x, then a group that reads R[2+AR].y and writes R[4+AR].z.
    fn relative_clause() -> Vec<Group> {
        vec![
            group(vec![inst(AluOp::MovaInt, Dst::none(0), &[r(1, 0)])]),
            group(vec![mov(
                Dst {
                    rel: true,
                    ..d(4, 2)
                },
                relative(r(2, 1)),
            )]),
        ]
    }

    #[test]
    fn relative_operands_add_the_lanes_ar() {
        for chip in [Chip::R700, Chip::Evergreen, Chip::Cayman] {
            let p = program(chip, vec![alu(CfOp::Alu, relative_clause())], 0);
            let mut w = wave(2, &[(1, 0, &[0, 2]), (2, 1, &[10, 11]), (4, 1, &[40, 41])]);
            run_ok(&p, &mut w);
            assert_eq!(column(&w, 4, 2), [10, 0], "{chip:?}: lane 0 writes R4.z");
            assert_eq!(
                column(&w, 6, 2),
                [0, 41],
                "{chip:?}: lane 1 reads R4.y, writes R6.z"
            );
        }
    }

    #[test]
    fn ar_is_loaded_in_an_earlier_group_of_the_same_clause() {
        let mut w = wave(1, &[(1, 0, &[0])]);
        // AR loaded in another clause.
        let [mova, rel] = relative_clause().try_into().unwrap();
        let p = program(
            Chip::Evergreen,
            vec![
                alu(CfOp::Alu, vec![mova.clone()]),
                alu(CfOp::Alu, vec![rel.clone()]),
            ],
            0,
        );
        let e = err(&p, &mut w);
        assert!(e.to_string().contains("loaded AR.x"), "{e}");
        // AR loaded in the same group.
        let both = group([mova.insts, rel.insts].concat());
        let p = program(Chip::Evergreen, vec![alu(CfOp::Alu, vec![both])], 0);
        let e = err(&p, &mut w);
        assert!(e.to_string().contains("in one group"), "{e}");
        // An address past the GPRs.
        let mut w = wave(1, &[(1, 0, &[200])]);
        let p = program(Chip::Evergreen, vec![alu(CfOp::Alu, relative_clause())], 0);
        let e = err(&p, &mut w);
        assert!(e.to_string().contains("outside the GPRs"), "{e}");
    }

    #[test]
    fn on_r600_a_nop_group_follows_a_relative_write() {
        let mut groups = relative_clause();
        groups.push(group(vec![mov(d(7, 0), r(1, 0))]));
        let p = program(Chip::R600, vec![alu(CfOp::Alu, groups.clone())], 0);
        let e = err(&p, &mut wave(1, &[]));
        assert!(e.to_string().contains("must be a NOP"), "{e}");
        groups.insert(2, group(vec![inst(AluOp::AluNop, Dst::none(0), &[])]));
        let p = program(Chip::R600, vec![alu(CfOp::Alu, groups)], 0);
        run_ok(&p, &mut wave(1, &[]));
    }
}
