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
//! The facts are those of AMD's R600, R700, Evergreen and Cayman ISA documents (CF, ALU, fetch
//! and export instructions, clause rules, the stack). Where they leave a behaviour open, the
//! emulator picks a model, stated below for lanes and
//! in the submodule that runs each part for the rest: `alu` (ALU clauses, interpolation),
//! `arith` (the operations' arithmetic), `cf` (control flow, exports), `scratch` (scratch
//! memory), `rat` (random access targets), `lds` (the local data share, its output queue and
//! barriers), `gds` (the global data share) and `fetch` (fetch clauses).
//!
//! # Lanes
//!
//! A wavefront has up to 64 lanes; lanes `4q .. 4q+3` form quad `q` (top-left, top-right,
//! bottom-left, bottom-right). Each lane has 128 vec4 GPRs of raw 32-bit values, an *active*
//! (exec) bit, a *predicate* bit and a *killed* flag. Killed lanes (by KILL, or before the run)
//! are out of every mask for the rest of the program; no mask restored from the stack brings
//! them back.

mod alu;
mod arith;
mod cf;
mod fetch;
mod gds;
mod lds;
mod rat;
mod scratch;
#[cfg(test)]
mod tests;

use crate::isa::{AluOpcode, CfOp, Chip, FetchOp};
use crate::program::{ExportType, Program};
use crate::texture::TextureState;
use cf::Entry;
use scratch::InFlight;
use shrew_engine::interp::Image;
use std::collections::BTreeMap;
use std::fmt;

/// Most lanes of a wavefront.
pub const MAX_LANES: usize = 64;

/// Most CF instructions one run executes before it fails as a runaway.
pub const STEP_LIMIT: u64 = 1 << 22;

/// 1.0f.
const ONE: u32 = 0x3f80_0000;

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
    /// The GPRs a run wrote in some lane (bit `g` for R`g`), which [`Wavefront::reuse`] zeroes.
    written: u128,
    /// Lanes whose pixel is not covered (helpers for derivatives): instructions in valid
    /// pixel mode do not run for them.
    pub helpers: u64,
    /// The memory of each random access target (RAT), by number, as the dispatcher binds it;
    /// MEM_RAT writes it, vertex fetches read it ([`crate::program::RAT_BUFFER_RESOURCE`]).
    pub rats: BTreeMap<u8, RatMemory>,
    /// Per RAT, what each lane's last returning operation (an atomic, NOP_RTN) returned.
    returns: BTreeMap<u8, Vec<[u32; 4]>>,
    /// The workgroup's local data share, in dwords, as the dispatcher binds it (the
    /// wavefronts of a workgroup share it).
    pub lds: Vec<u32>,
    /// The global data share, in dwords, as the dispatcher binds it (every wavefront of a
    /// draw shares it).
    pub gds: Vec<u32>,
    /// Where the run stopped at a barrier: the next run goes on from there.
    suspended: Option<Box<Suspended>>,
}

/// The state of a run stopped at a barrier.
#[derive(Clone, Debug, PartialEq)]
struct Suspended {
    pc: usize,
    steps: u64,
    active: u64,
    stack: Vec<Entry>,
    exports: Vec<ExportRecord>,
    scratch: Vec<[u32; 4]>,
    in_flight: InFlight,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// The program ended: its exports in program order.
    Finished(Vec<ExportRecord>),
    /// The wavefront stopped at a workgroup barrier; running it again goes on from there.
    AtBarrier,
}

/// What a random access target holds.
#[derive(Clone, Debug, PartialEq)]
pub enum RatMemory {
    /// An image, its texels raw dwords.
    Image(Image),
    /// A buffer of bytes (an SSBO).
    Buffer(Vec<u8>),
}

impl Wavefront {
    /// A wavefront of `lanes` lanes, zeroed and none killed.
    pub fn new(lanes: usize) -> Wavefront {
        Wavefront {
            lanes,
            gprs: vec![[[0; 4]; 128]; lanes],
            killed: vec![false; lanes],
            written: 0,
            helpers: 0,
            rats: BTreeMap::new(),
            returns: BTreeMap::new(),
            lds: Vec::new(),
            gds: Vec::new(),
            suspended: None,
        }
    }

    /// Makes this wavefront a new one of `lanes` lanes, none killed, for a dispatch that sets
    /// the same registers in every wavefront: the GPRs runs wrote are zeroed in every lane, so
    /// each GPR is zero unless the dispatch set it, without clearing the whole register file.
    pub fn reuse(&mut self, lanes: usize) {
        while self.written != 0 {
            let g = self.written.trailing_zeros() as usize;
            self.written &= self.written - 1;
            for gprs in &mut self.gprs {
                gprs[g] = [0; 4];
            }
        }
        self.gprs.resize(lanes, [[0; 4]; 128]);
        self.killed.clear();
        self.killed.resize(lanes, false);
        self.helpers = 0;
        self.returns.clear();
        self.suspended = None;
        self.lanes = lanes;
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
        op: AluOpcode,
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
    /// The time limit of the run (see `shrew_engine::deadline`) passed.
    #[error("the time limit passed while the program ran")]
    TimeLimit,
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

/// Runs `program` on `wave` with the fixed-function state `env`, through any barriers (a lone
/// wavefront waits for no other); gives the exports in program order. `wave` keeps the final
/// registers and kill flags (also after an error).
pub fn run(
    program: &Program,
    wave: &mut Wavefront,
    env: &Env,
) -> Result<Vec<ExportRecord>, EmuError> {
    loop {
        if let Progress::Finished(exports) = run_until_barrier(program, wave, env)? {
            return Ok(exports);
        }
    }
}

/// Runs `program` on `wave` as [`run`] does, but only to the next workgroup barrier (see
/// `lds`): the dispatcher runs the other wavefronts of the workgroup to it, then this one on.
/// A wavefront stopped at a barrier goes on from it.
pub fn run_until_barrier(
    program: &Program,
    wave: &mut Wavefront,
    env: &Env,
) -> Result<Progress, EmuError> {
    shrew_engine::meter::executing(|| run_wave(program, wave, env))
}

fn run_wave(program: &Program, wave: &mut Wavefront, env: &Env) -> Result<Progress, EmuError> {
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
    let state = wave.suspended.take().map_or_else(
        || Suspended {
            pc: 0,
            steps: 0,
            active: exists & !killed,
            stack: Vec::new(),
            exports: Vec::new(),
            scratch: vec![[0; 4]; lanes * program.scratch_elements as usize],
            in_flight: InFlight::default(),
        },
        |state| *state,
    );
    let mut machine = Machine {
        program,
        env,
        chip: program.chip,
        wave,
        exists,
        active: state.active,
        killed,
        stack: state.stack,
        exports: state.exports,
        scratch: state.scratch,
        in_flight: state.in_flight,
        pc: state.pc,
        steps: state.steps,
        at_barrier: false,
    };
    let result = machine.run(true);
    for lane in 0..lanes {
        machine.wave.killed[lane] = bit(machine.killed, lane);
    }
    match result? {
        true => Ok(Progress::Finished(machine.exports)),
        false => {
            machine.wave.suspended = Some(Box::new(Suspended {
                pc: machine.pc,
                steps: machine.steps,
                active: machine.active,
                stack: machine.stack,
                exports: machine.exports,
                scratch: machine.scratch,
                in_flight: machine.in_flight,
            }));
            Ok(Progress::AtBarrier)
        }
    }
}

fn bit(mask: u64, lane: usize) -> bool {
    lane < MAX_LANES && mask >> lane & 1 != 0
}

/// The lanes of a mask, in ascending order.
fn lanes(mask: u64) -> impl Iterator<Item = usize> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        let lane = rest.trailing_zeros() as usize;
        rest &= rest.wrapping_sub(1);
        (lane < MAX_LANES).then_some(lane)
    })
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
    /// The CF instruction to run next.
    pc: usize,
    /// CF instructions run so far.
    steps: u64,
    /// The clause just run ended with a GROUP_BARRIER.
    at_barrier: bool,
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
