//! Executing instructions of one invocation: ALU, derefs, memory, intrinsics, control flow.

use super::memory::{self, Layout, SLOT_BYTES, Storage};
use super::program::*;
use super::{Fault, Launch, MAX_CALL_DEPTH, MAX_GROUP_BYTES, Resources, Site, Stats};
use crate::ir::*;
use shrew_ops::eval::{Bits, fget, fput, mask, sext};
use shrew_ops::{AtomicOp, IndexKind, Intrinsic};

/// One call frame.
pub(crate) struct Frame {
    pub func: u32,
    pub block: u32,
    pub pos: u32,
    pub regs: Vec<u64>,
    pub args: Vec<Vec<u64>>,
    /// Where the caller wants the result: register offset and component count.
    pub ret_dst: (u32, u32),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Running,
    /// Stopped at a sync point, which is still to execute.
    Waiting,
    Done,
    /// Ended by `discard` or `terminate`.
    Terminated,
}

/// An invocation's own memory and identity.
pub(crate) struct InvState {
    pub input: Vec<u8>,
    pub output: Vec<u8>,
    pub private: Vec<u8>,
    pub helper: bool,
    pub initially_helper: bool,
    pub frag_coord: [f32; 4],
    pub vertex_id: u32,
    pub local_id: [u32; 3],
    pub workgroup_id: [u32; 3],
    /// The invocation's index in its subgroup, and its subgroup's in the group it runs in
    /// (only compute workgroups hold several subgroups).
    pub subgroup_lane: u32,
    pub subgroup: u32,
}

pub(crate) struct Invocation {
    /// Position in the run's results.
    pub index: usize,
    /// Position in its quad: `0 1` over `2 3`.
    pub quad_pos: usize,
    pub status: Status,
    pub steps: u64,
    pub frames: Vec<Frame>,
    pub state: InvState,
}

/// A mask of a subgroup's lanes as the four 32-bit components of its value, lane 0 in bit 0
/// of x.
pub(crate) fn mask_words(mask: u128) -> Vec<u64> {
    (0..4).map(|w| (mask >> (32 * w)) as u32 as u64).collect()
}

/// What an executed step leads to.
pub(crate) enum Flow {
    Next,
    Sync,
    Done,
    Terminate,
}

/// Executes invocations of one run.
pub(crate) struct Machine<'p, 's> {
    pub prog: &'p Program<'s>,
    pub launch: &'p Launch,
    pub res: &'p mut Resources,
    /// The default uniform block.
    pub uniform: Vec<u8>,
    /// The shader's constant data ([`memory::constant_data`]).
    pub constant: Vec<u8>,
    pub stats: Stats,
    /// Register words (`u64`s, arguments included) the call frames of the group being run may
    /// still take, so that its memory stays within [`MAX_GROUP_BYTES`]; set for each group.
    pub call_words_left: usize,
    phi_tmp: Vec<u64>,
}

/// Register words a frame holds.
fn frame_words(f: &Frame) -> usize {
    f.regs.len() + f.args.iter().map(Vec::len).sum::<usize>()
}

/// Bytes of one component of a value of `bits` bits in byte-addressed memory.
fn raw_bytes(bits: u8) -> u32 {
    if bits == 1 { 4 } else { bits as u32 / 8 }
}

fn load_raw(buf: &[u8], off: u64, n: u32, bits: u8, what: &str) -> Result<Vec<u64>, Fault> {
    let cb = raw_bytes(bits);
    (0..n as u64)
        .map(|c| {
            let at = off + c * cb as u64;
            memory::read_bytes(buf, at, cb)
                .map(|raw| if bits == 1 { (raw != 0) as u64 } else { raw })
                .ok_or_else(|| {
                    Fault::oob(format!(
                        "{cb} bytes at {at} of {what} of {} bytes",
                        buf.len()
                    ))
                })
        })
        .collect()
}

fn store_raw(
    buf: &mut [u8],
    off: u64,
    data: &[u64],
    write_mask: u32,
    bits: u8,
    what: &str,
) -> Result<(), Fault> {
    let cb = raw_bytes(bits);
    let len = buf.len();
    for (c, &v) in data.iter().enumerate() {
        if write_mask & (1 << c) != 0 {
            let at = off + c as u64 * cb as u64;
            let v = if bits == 1 { v & 1 } else { mask(v, bits) };
            memory::write_bytes(buf, at, cb, v).ok_or_else(|| {
                Fault::oob(format!("{cb} bytes at {at} of {what} of {len} bytes"))
            })?;
        }
    }
    Ok(())
}

/// The value an atomic leaves in memory: `op` of the `bits`-bit `old` value with operand `a`
/// (and `b`, the value a compare-exchange stores where `old` equals `a`); `None` for a
/// compare-exchange without `b`.
pub fn atomic_result(op: AtomicOp, bits: u8, old: u64, a: u64, b: Option<u64>) -> Option<u64> {
    let (so, sa) = (sext(old, bits), sext(a, bits));
    let (uo, ua) = (mask(old, bits), mask(a, bits));
    let f = |x: u64| fget(x, bits);
    Some(mask(
        match op {
            AtomicOp::Iadd => uo.wrapping_add(ua),
            AtomicOp::Imin => so.min(sa) as u64,
            AtomicOp::Imax => so.max(sa) as u64,
            AtomicOp::Umin => uo.min(ua),
            AtomicOp::Umax => uo.max(ua),
            AtomicOp::Iand => uo & ua,
            AtomicOp::Ior => uo | ua,
            AtomicOp::Ixor => uo ^ ua,
            AtomicOp::Xchg => ua,
            AtomicOp::Cmpxchg => {
                if uo == ua {
                    b?
                } else {
                    uo
                }
            }
            AtomicOp::Fadd => fput(f(old) + f(a), bits),
            AtomicOp::Fmin => fput(shrew_ops::eval::fmin(f(old), f(a)), bits),
            AtomicOp::Fmax => fput(shrew_ops::eval::fmax(f(old), f(a)), bits),
        },
        bits,
    ))
}

/// [`atomic_result`], a compare-exchange without its second operand a fault.
fn atomic_update(op: AtomicOp, bits: u8, old: u64, a: u64, b: Option<u64>) -> Result<u64, Fault> {
    atomic_result(op, bits, old, a, b)
        .ok_or_else(|| Fault::invalid("cmpxchg needs the `_swap` form of the atomic".into()))
}

/// Reads, updates and (when `write`) writes back one atomic location; returns the old value.
fn atomic_raw(
    buf: &mut [u8],
    off: u64,
    bits: u8,
    op: AtomicOp,
    (a, b): (u64, Option<u64>),
    write: bool,
    what: &str,
) -> Result<u64, Fault> {
    let old = load_raw(buf, off, 1, bits, what)?[0];
    let new = atomic_update(op, bits, old, a, b)?;
    if write {
        store_raw(buf, off, &[new], 1, bits, what)?;
    }
    Ok(old)
}

/// Lanes from which a per-component instruction runs on whole rows ([`eval_rows`]).
const ROW_LANES_MIN: usize = 8;
/// Most sources of an instruction run on rows.
const ROW_SOURCES: usize = 4;
/// Lanes of one call of an opcode's lane loop.
const ROW_CHUNK: usize = 64;

/// A per-component instruction for many lanes: each destination component takes one call of the
/// opcode's lane loop per chunk of lanes, on the sources' rows of the register file (copied
/// into a buffer first when the lanes are not consecutive).
fn eval_rows(
    a: &AluCode,
    kernel: fn(&[&[u64]], Bits, &mut [u64]),
    (regs, width, lanes): (&mut [u64], usize, &[u32]),
    bits: Bits,
) {
    let nsrcs = a.srcs.len();
    let mut gathered = [[0u64; ROW_CHUNK]; ROW_SOURCES];
    let mut out = [0u64; ROW_CHUNK];
    for c in 0..a.comps as usize {
        let mut rows = [0usize; ROW_SOURCES];
        for (row, s) in rows.iter_mut().zip(&a.srcs) {
            *row = (s.off as usize + s.swizzle[c] as usize) * width;
        }
        let dst = (a.dst as usize + c) * width;
        for chunk in lanes.chunks(ROW_CHUNK) {
            let (first, k) = (chunk[0] as usize, chunk.len());
            let consecutive = chunk[k - 1] as usize - first + 1 == k;
            if !consecutive {
                for (buf, row) in gathered.iter_mut().zip(&rows).take(nsrcs) {
                    for (g, &l) in buf.iter_mut().zip(chunk) {
                        *g = regs[row + l as usize];
                    }
                }
            }
            let srcs: [&[u64]; ROW_SOURCES] = std::array::from_fn(|j| match consecutive {
                _ if j >= nsrcs => &[][..],
                true => &regs[rows[j] + first..rows[j] + first + k],
                false => &gathered[j][..k],
            });
            kernel(&srcs[..nsrcs], bits, &mut out[..k]);
            if consecutive {
                regs[dst + first..dst + first + k].copy_from_slice(&out[..k]);
            } else {
                for (&o, &l) in out.iter().zip(chunk) {
                    regs[dst + l as usize] = o;
                }
            }
        }
    }
}

/// Evaluates an ALU instruction for `lanes` of a register file of `width` lanes, in which
/// register `r` of lane `l` is word `r * width + l` (one invocation's registers: width 1, lane 0).
pub(crate) fn eval_alu(a: &AluCode, regs: &mut [u64], width: usize, lanes: &[u32]) {
    let bits = Bits {
        src: &a.src_bits,
        dst: a.dst_bits,
    };
    if let Some(f) = a.per_component {
        if lanes.len() >= ROW_LANES_MIN && a.srcs.len() <= ROW_SOURCES {
            eval_rows(a, f.lanes, (regs, width, lanes), bits);
            return;
        }
        // Component by component, straight from the registers: what `AluOp::eval` does with
        // the gathered sources. An SSA value is never its own source, so writing the result's
        // components one by one reads nothing it writes.
        let nsrcs = a.srcs.len();
        let mut comp = [0u64; 16];
        let comp = &mut comp[..nsrcs];
        let mut rows = [0usize; 16];
        for c in 0..a.comps as usize {
            for (row, s) in rows.iter_mut().zip(&a.srcs) {
                *row = (s.off as usize + s.swizzle[c] as usize) * width;
            }
            let dst = (a.dst as usize + c) * width;
            for &l in lanes {
                let l = l as usize;
                for (slot, row) in comp.iter_mut().zip(&rows) {
                    *slot = regs[row + l];
                }
                regs[dst + l] = (f.one)(comp, bits);
            }
        }
        return;
    }
    if a.op.is_vec() {
        // A gather of scalars: each destination row is a copy of one source row.
        for (c, s) in a.srcs.iter().enumerate() {
            let (from, to) = (
                (s.off as usize + s.swizzle[0] as usize) * width,
                (a.dst as usize + c) * width,
            );
            for &l in lanes {
                regs[to + l as usize] = regs[from + l as usize];
            }
        }
        return;
    }
    // Zeroed once for all lanes: each lane reads only what it wrote.
    let mut buf = [0u64; MAX_ALU_READS];
    let mut starts = [0usize; 17];
    for &l in lanes {
        let l = l as usize;
        let mut k = 0;
        for (i, s) in a.srcs.iter().enumerate() {
            starts[i] = k;
            let base = s.off as usize;
            for &c in &s.swizzle[..s.n as usize] {
                buf[k] = regs[(base + c as usize) * width + l];
                k += 1;
            }
        }
        let nsrcs = a.srcs.len();
        starts[nsrcs] = k;
        let refs: [&[u64]; 16] = std::array::from_fn(|i| {
            if i < nsrcs {
                &buf[starts[i]..starts[i + 1]]
            } else {
                &[]
            }
        });
        let n = a.comps as usize;
        let mut out = [0u64; 16];
        a.op.eval(&refs[..nsrcs], bits, &mut out[..n]);
        for (c, &v) in out[..n].iter().enumerate() {
            regs[(a.dst as usize + c) * width + l] = v;
        }
    }
}

/// Executes an instruction that only reads and writes registers (constants, `undef` and
/// derefs) for `lanes` of a register file laid out as for [`eval_alu`].
pub(crate) fn register_op(op: &Op, regs: &mut [u64], width: usize, lanes: &[u32]) {
    let row = |r: u32| r as usize * width;
    for &l in lanes {
        let l = l as usize;
        match op {
            Op::Const { dst, vals } => {
                for (c, &v) in vals.iter().enumerate() {
                    regs[row(*dst + c as u32) + l] = v;
                }
            }
            Op::Undef { dst, n } => {
                for r in *dst..*dst + *n {
                    regs[row(r) + l] = 0;
                }
            }
            Op::DerefVar { dst, ptr } => regs[row(*dst) + l] = *ptr,
            Op::DerefArray {
                dst,
                parent,
                index,
                index_bits,
                stride,
                len,
            } => {
                let p = regs[row(*parent) + l];
                let i = sext(regs[row(*index) + l], *index_bits);
                let inside = i >= 0 && (*len == 0 || i < *len as i64);
                let off = (p as u32 as i64).checked_add(i.saturating_mul(*stride as i64));
                regs[row(*dst) + l] = match off {
                    Some(off) if inside && p & PTR_OOB == 0 && off <= u32::MAX as i64 => {
                        (p & !0xffff_ffff) | off as u64
                    }
                    _ => p | PTR_OOB,
                };
            }
            Op::DerefBlock {
                dst,
                parent,
                index,
                index_bits,
                len,
            } => {
                let p = regs[row(*parent) + l];
                let i = sext(regs[row(*index) + l], *index_bits);
                regs[row(*dst) + l] = if (0..*len as i64).contains(&i) {
                    p | (i as u64) << BLOCK_SHIFT
                } else {
                    p | PTR_OOB
                };
            }
            Op::DerefStruct {
                dst,
                parent,
                offset,
            } => {
                let p = regs[row(*parent) + l];
                regs[row(*dst) + l] = match (p as u32).checked_add(*offset) {
                    Some(off) => (p & !0xffff_ffff) | off as u64,
                    None => p | PTR_OOB,
                };
            }
            _ => unreachable!("not a register instruction"),
        }
    }
}

/// Loads or stores the components of a decoded access for one lane of a register file laid out
/// as for [`eval_alu`]: at byte `at` of `buf`, which holds them, or nowhere for an access out of
/// bounds under robust access (a load then reads zeros).
#[inline(always)]
fn access_components(
    a: &DerefAccess,
    area: Option<(&mut [u8], u64)>,
    (regs, width, lane): (&mut [u64], usize, usize),
) {
    let Some((buf, at)) = area else {
        if !a.store {
            for c in 0..a.data.1 {
                regs[(a.data.0 + c) as usize * width + lane] = 0;
            }
        }
        return;
    };
    // Result components past the pointee's read zero.
    if !a.store {
        for c in a.n.min(a.data.1)..a.data.1 {
            regs[(a.data.0 + c) as usize * width + lane] = 0;
        }
    }
    for c in 0..a.n.min(a.data.1) {
        let off = at + c as u64 * a.bytes as u64;
        let reg = (a.data.0 + c) as usize * width + lane;
        if !a.store {
            let raw = memory::read_bytes(buf, off, a.bytes).unwrap();
            regs[reg] = mask(memory::from_memory(raw, a.scalar), a.bits);
        } else if a.write_mask & (1 << c) != 0 {
            let x = memory::to_memory(regs[reg], a.scalar);
            memory::write_bytes(buf, off, a.bytes, x).unwrap();
        }
    }
}

/// A short description of an instruction for error sites.
pub(crate) fn describe(shader: &Shader, func: &Function, v: Value) -> String {
    let Some(inst) = func.get_inst(v) else {
        return format!("{v}");
    };
    let name = match &inst.kind {
        InstKind::Call { func: f, .. } => match shader.functions.get(f.0 as usize) {
            Some(callee) => format!("call {}", callee.name),
            None => "call".into(),
        },
        kind => kind.name().to_string(),
    };
    if inst.def.is_some() {
        format!("{v} = {name}")
    } else {
        format!("{name} (id {v})")
    }
}

fn describe_term(t: &Term) -> &'static str {
    match t {
        Term::Jump(_) => "jump",
        Term::Branch { .. } => "branch",
        Term::Return(_) => "return",
        Term::Unreachable => "unreachable",
        Term::Invalid(_) => "(terminator)",
    }
}

impl<'p, 's> Machine<'p, 's> {
    pub fn new(
        prog: &'p Program<'s>,
        launch: &'p Launch,
        res: &'p mut Resources,
        uniform: Vec<u8>,
        constant: Vec<u8>,
    ) -> Machine<'p, 's> {
        Machine {
            prog,
            launch,
            res,
            uniform,
            constant,
            stats: Stats::default(),
            call_words_left: 0,
            phi_tmp: Vec::new(),
        }
    }

    fn shader(&self) -> &'s Shader {
        self.prog.shader
    }

    /// The site of the instruction an invocation is at.
    pub fn site(&self, inv: &Invocation) -> Site {
        let Some(frame) = inv.frames.last() else {
            return Site {
                invocation: inv.index,
                function: "-".into(),
                block: "-".into(),
                inst: "-".into(),
            };
        };
        let func = &self.shader().functions[frame.func as usize];
        let block = &self.prog.funcs[frame.func as usize].blocks[frame.block as usize];
        let inst = match block.vals.get(frame.pos as usize) {
            Some(&v) => describe(self.shader(), func, v),
            None => describe_term(&block.term).into(),
        };
        Site {
            invocation: inv.index,
            function: func.name.clone(),
            block: format!("b{}", block.id.index()),
            inst,
        }
    }

    /// A fresh frame of a function.
    pub fn frame(&self, func: u32, args: Vec<Vec<u64>>, ret_dst: (u32, u32)) -> Frame {
        let fc = &self.prog.funcs[func as usize];
        Frame {
            func,
            block: fc.entry,
            pos: 0,
            regs: vec![0; fc.nregs],
            args,
            ret_dst,
        }
    }

    /// Executes one instruction or terminator.
    pub fn step(&mut self, inv: &mut Invocation, shared: &mut [u8]) -> Result<Flow, Fault> {
        let prog = self.prog;
        let fragment = prog.shader.stage == Stage::Fragment;
        let Invocation { frames, state, .. } = inv;
        let depth = frames.len();
        let frame = frames.last_mut().expect("a running invocation has a frame");
        let fc = &prog.funcs[frame.func as usize];
        let block = &fc.blocks[frame.block as usize];
        let Some(op) = block.ops.get(frame.pos as usize) else {
            return self.terminator(frames);
        };
        self.stats.instructions += 1;
        let regs = &mut frame.regs;
        match op {
            Op::Alu(a) => {
                self.stats.alu += 1;
                eval_alu(a, regs, 1, &[0]);
            }
            Op::Derivative(a, ..) => {
                if fragment {
                    return Ok(Flow::Sync);
                }
                self.stats.alu += 1;
                let dst = a.dst as usize;
                regs[dst..dst + a.comps as usize].fill(0);
            }
            Op::Const { .. }
            | Op::Undef { .. }
            | Op::DerefVar { .. }
            | Op::DerefArray { .. }
            | Op::DerefBlock { .. }
            | Op::DerefStruct { .. } => register_op(op, regs, 1, &[0]),
            Op::DerefAccess(a) => self.deref_access(a, (regs, 1, 0), state, shared)?,
            Op::Intrinsic(v) => {
                let flow = self.intrinsic(fc, frame, state, shared, *v)?;
                if let Flow::Next = flow {
                    frame.pos += 1;
                }
                return Ok(flow);
            }
            Op::Barrier { sync } => {
                if *sync {
                    return Ok(Flow::Sync);
                }
            }
            Op::Subgroup(_) => return Ok(Flow::Sync),
            Op::Tex { value, implicit } => {
                if *implicit {
                    return Ok(Flow::Sync);
                }
                let operands = self.tex_operands(fc, frame, *value);
                self.exec_tex(fc, frame, *value, &operands, None)?;
            }
            Op::Call { func, args, dst } => {
                if depth >= MAX_CALL_DEPTH {
                    return Err(Fault::invalid(format!(
                        "calls nest deeper than {MAX_CALL_DEPTH}"
                    )));
                }
                let args = args
                    .iter()
                    .map(|&(off, n)| regs[off as usize..(off + n) as usize].to_vec())
                    .collect();
                let callee = self.frame(*func, args, *dst);
                self.call_words_left = self
                    .call_words_left
                    .checked_sub(frame_words(&callee))
                    .ok_or_else(|| {
                        Fault::unsupported(format!(
                            "the call frames of the group need more than {MAX_GROUP_BYTES} bytes"
                        ))
                    })?;
                frames.push(callee);
                return Ok(Flow::Next);
            }
            Op::Invalid(msg) => return Err(Fault::invalid(msg.clone())),
        }
        frame.pos += 1;
        Ok(Flow::Next)
    }

    pub(crate) fn terminator(&mut self, frames: &mut Vec<Frame>) -> Result<Flow, Fault> {
        let prog = self.prog;
        let depth = frames.len();
        let frame = frames.last_mut().unwrap();
        let fc = &prog.funcs[frame.func as usize];
        match &fc.blocks[frame.block as usize].term {
            Term::Jump(t) => self.enter(fc, frame, *t),
            Term::Branch { cond, t, f } => {
                let target = if frame.regs[*cond as usize] & 1 != 0 {
                    *t
                } else {
                    *f
                };
                self.enter(fc, frame, target)
            }
            Term::Return(_) if depth == 1 => {
                // The entry function's frame stays, so its registers can be reused.
                Ok(Flow::Done)
            }
            Term::Return(value) => {
                let ret: Vec<u64> = value
                    .map(|(off, n)| frame.regs[off as usize..(off + n) as usize].to_vec())
                    .unwrap_or_default();
                let (dst, n) = frame.ret_dst;
                self.call_words_left += frame_words(frame);
                frames.pop();
                let caller = frames
                    .last_mut()
                    .expect("a caller below the returning frame");
                let n = (n as usize).min(ret.len());
                caller.regs[dst as usize..dst as usize + n].copy_from_slice(&ret[..n]);
                caller.pos += 1;
                Ok(Flow::Next)
            }
            Term::Unreachable => Err(Fault::invalid("reached `unreachable`".into())),
            Term::Invalid(msg) => Err(Fault::invalid(msg.clone())),
        }
    }

    /// Moves a frame to block `target`, running the target's phis for the edge taken.
    fn enter(&mut self, fc: &FuncCode, frame: &mut Frame, target: u32) -> Result<Flow, Fault> {
        let blk = &fc.blocks[target as usize];
        if !blk.phis.is_empty() {
            let from = &fc.blocks[frame.block as usize];
            let edge = blk
                .phis
                .iter()
                .find(|e| e.pred == frame.block)
                .ok_or_else(|| {
                    Fault::invalid(format!(
                        "b{} has phis but is not a successor of b{}",
                        blk.id.index(),
                        from.id.index()
                    ))
                })?;
            let moves = edge.moves.as_ref().map_err(|m| Fault::invalid(m.clone()))?;
            // Phis read their sources before any of them is written.
            self.phi_tmp.clear();
            for &(_, src, n) in moves {
                self.phi_tmp
                    .extend_from_slice(&frame.regs[src as usize..(src + n) as usize]);
            }
            let mut k = 0;
            for &(dst, _, n) in moves {
                let n = n as usize;
                frame.regs[dst as usize..dst as usize + n].copy_from_slice(&self.phi_tmp[k..k + n]);
                k += n;
            }
            self.stats.instructions += moves.len() as u64;
        }
        frame.block = target;
        frame.pos = 0;
        Ok(Flow::Next)
    }

    /// The bytes of a storage area.
    fn area<'a>(
        &'a mut self,
        state: &'a mut InvState,
        shared: &'a mut [u8],
        storage: Storage,
    ) -> Result<&'a mut [u8], Fault> {
        let missing =
            |what: &str, b: u32| Fault::invalid(format!("no {what} bound at binding {b}"));
        Ok(match storage {
            Storage::Input => &mut state.input,
            Storage::Output => &mut state.output,
            Storage::Private => &mut state.private,
            Storage::Shared => shared,
            Storage::Uniform => &mut self.uniform,
            Storage::Ubo { binding } => self
                .res
                .ubos
                .get_mut(&binding)
                .ok_or_else(|| missing("UBO", binding))?,
            Storage::Ssbo { binding } => self
                .res
                .ssbos
                .get_mut(&binding)
                .ok_or_else(|| missing("SSBO", binding))?,
            Storage::PushConst => &mut self.res.push_constants,
            Storage::Constant => &mut self.constant,
            Storage::Opaque { .. } => {
                return Err(Fault::invalid("memory access to an opaque variable".into()));
            }
        })
    }

    /// The memory `len` bytes at `extra` past a deref point to: the area and absolute offset,
    /// after checking the access stays inside the variable. `None` for an access out of bounds
    /// under [`Launch::robust_access`] (reads see zero, writes are dropped).
    fn var_area<'a>(
        &'a mut self,
        state: &'a mut InvState,
        shared: &'a mut [u8],
        ptr: u64,
        extra: u32,
        len: u32,
    ) -> Result<Option<(&'a mut [u8], u64)>, Fault> {
        let robust = self.launch.robust_access;
        let prog = self.prog;
        let var = ptr_var(ptr);
        let vl = *prog
            .vars
            .get(var)
            .ok_or_else(|| Fault::invalid(format!("deref value {ptr:#x} names no variable")))?;
        let name = &prog.shader.variables[var].name;
        if ptr & PTR_OOB != 0 {
            if robust {
                return Ok(None);
            }
            return Err(Fault::oob(format!(
                "an array index in the deref of @{name} is out of range"
            )));
        }
        let off = (ptr as u32) as u64 + extra as u64;
        let storage = match vl.storage {
            Storage::Ubo { binding } if prog.shader.variables[var].array_of_blocks => {
                Storage::Ubo {
                    binding: binding.wrapping_add(ptr_block(ptr)),
                }
            }
            Storage::Ssbo { binding } if prog.shader.variables[var].array_of_blocks => {
                Storage::Ssbo {
                    binding: binding.wrapping_add(ptr_block(ptr)),
                }
            }
            storage => storage,
        };
        let buf = self.area(state, shared, storage)?;
        let extent = match vl.storage {
            Storage::Ubo { .. } | Storage::Ssbo { .. } | Storage::PushConst => buf.len() as u64,
            _ => vl.size as u64,
        };
        if off + len as u64 > extent {
            if robust {
                return Ok(None);
            }
            return Err(Fault::oob(format!(
                "bytes {off}..{} of @{name}, which has {extent}",
                off + len as u64
            )));
        }
        Ok(Some((buf, vl.offset as u64 + off)))
    }

    /// The variable and pointee type of a deref source, and the layout of the variable's types.
    fn pointee(&self, fc: &FuncCode, v: Value) -> Result<(VarId, Type, &'p Layout<'s>), Fault> {
        let prog: &'p Program<'s> = self.prog;
        let (var, ty) = fc
            .derefs
            .get(&v)
            .cloned()
            .ok_or_else(|| Fault::invalid(format!("{v} is not a well-formed deref")))?;
        Ok((var, ty, prog.var_layout(var)))
    }

    /// Whether a write by this invocation to this storage is dropped (helpers' global writes).
    fn drops_write(&self, state: &InvState, var: VarId) -> bool {
        state.helper && matches!(self.prog.vars[var.0 as usize].storage, Storage::Ssbo { .. })
    }

    fn check_writable(&self, var: VarId) -> Result<(), Fault> {
        let v = self.shader().variable(var);
        if v.mode.is_writable() {
            Ok(())
        } else {
            Err(Fault::invalid(format!(
                "write to @{}, a read-only {} variable",
                v.name,
                v.mode.name()
            )))
        }
    }

    /// Reads every leaf of the value a deref points to.
    fn read_leaves(
        &mut self,
        state: &mut InvState,
        shared: &mut [u8],
        ptr: u64,
        leaves: &[memory::Leaf],
    ) -> Result<Vec<u64>, Fault> {
        leaves
            .iter()
            .map(|l| {
                let Some((buf, at)) = self.var_area(state, shared, ptr, l.offset, l.bytes)? else {
                    return Ok(0);
                };
                let raw = memory::read_bytes(buf, at, l.bytes).unwrap();
                Ok(memory::from_memory(raw, l.scalar))
            })
            .collect()
    }

    fn write_leaves(
        &mut self,
        state: &mut InvState,
        shared: &mut [u8],
        ptr: u64,
        leaves: &[memory::Leaf],
        vals: &[u64],
    ) -> Result<(), Fault> {
        for (l, &v) in leaves.iter().zip(vals) {
            if let Some((buf, at)) = self.var_area(state, shared, ptr, l.offset, l.bytes)? {
                memory::write_bytes(buf, at, l.bytes, memory::to_memory(v, l.scalar)).unwrap();
            }
        }
        Ok(())
    }

    /// Executes a decoded `load_deref` or `store_deref` for lane `lane` of a register file of
    /// `width` lanes (laid out as for [`eval_alu`]).
    pub(crate) fn deref_access(
        &mut self,
        a: &DerefAccess,
        (regs, width, lane): (&mut [u64], usize, usize),
        state: &mut InvState,
        shared: &mut [u8],
    ) -> Result<(), Fault> {
        if a.store && self.drops_write(state, a.var) {
            return Ok(());
        }
        let ptr = regs[a.ptr as usize * width + lane];
        let area = self.var_area(state, shared, ptr, 0, a.n * a.bytes)?;
        access_components(a, area, (regs, width, lane));
        Ok(())
    }

    /// [`Self::deref_access`] for the lanes of `batch` of a wave. An access inside its variable
    /// goes straight to the memory, the variable looked up once for the batch: the lane's own
    /// (inputs, outputs, private variables), or, for a load, memory every lane reads alike
    /// (uniforms, UBOs, SSBOs, push and other constants), found once for the batch's pointers
    /// into one block. Any other access goes through `deref_access`. An error names the lane.
    pub(crate) fn deref_access_lanes(
        &mut self,
        a: &DerefAccess,
        (regs, width): (&mut [u64], usize),
        batch: &[u32],
        lanes: &mut [Invocation],
        shared: &mut [u8],
    ) -> Result<(), (usize, Fault)> {
        let var = self.prog.vars[a.var.0 as usize];
        let span = (a.n * a.bytes) as u64;
        let ptr_of = |regs: &[u64], l: u32| regs[a.ptr as usize * width + l as usize];
        // Pointers into the variable, inside the range the direct path checks.
        let inside = |ptr: u64, end: u64| {
            ptr_var(ptr) == a.var.0 as usize
                && ptr & PTR_OOB == 0
                && (ptr as u32 as u64) + span <= end
        };
        let mut slow = Vec::new();
        match var.storage {
            Storage::Input | Storage::Output | Storage::Private => {
                let area_of: fn(&mut InvState) -> &mut Vec<u8> = match var.storage {
                    Storage::Input => |state| &mut state.input,
                    Storage::Output => |state| &mut state.output,
                    _ => |state| &mut state.private,
                };
                for &l in batch {
                    let ptr = ptr_of(regs, l);
                    if !inside(ptr, var.size as u64) {
                        slow.push(l);
                        continue;
                    }
                    let buf = area_of(&mut lanes[l as usize].state);
                    let area = Some((&mut buf[..], var.offset as u64 + (ptr as u32 as u64)));
                    access_components(a, area, (&mut *regs, width, l as usize));
                }
            }
            Storage::Shared => slow.extend_from_slice(batch),
            _ if a.store => slow.extend_from_slice(batch),
            _ => {
                let first = ptr_of(regs, batch[0]);
                match self.common_area(a.var, first) {
                    Some((buf, end)) => {
                        // Pointers with the first one's variable, block and flags.
                        let block = first & !0xffff_ffff;
                        for &l in batch {
                            let ptr = ptr_of(regs, l);
                            if ptr & !0xffff_ffff != block || !inside(ptr, end) {
                                slow.push(l);
                                continue;
                            }
                            let at = var.offset as u64 + (ptr as u32 as u64);
                            access_components(
                                a,
                                Some((&mut *buf, at)),
                                (&mut *regs, width, l as usize),
                            );
                        }
                    }
                    None => slow.extend_from_slice(batch),
                }
            }
        }
        for l in slow {
            let state = &mut lanes[l as usize].state;
            self.deref_access(a, (&mut *regs, width, l as usize), state, shared)
                .map_err(|f| (l as usize, f))?;
        }
        Ok(())
    }

    /// The memory of a variable every invocation shares (not its own, not workgroup memory)
    /// that `ptr` points into, with the end of the variable's bytes in it; `None` when nothing is
    /// bound there.
    fn common_area(&mut self, var: VarId, ptr: u64) -> Option<(&mut [u8], u64)> {
        let prog = self.prog;
        let (layout, v) = (
            prog.vars[var.0 as usize],
            &prog.shader.variables[var.0 as usize],
        );
        let block = |binding: u32| match v.array_of_blocks {
            true => binding.wrapping_add(ptr_block(ptr)),
            false => binding,
        };
        let buf: &mut Vec<u8> = match layout.storage {
            Storage::Uniform => &mut self.uniform,
            Storage::Constant => &mut self.constant,
            Storage::PushConst => &mut self.res.push_constants,
            Storage::Ubo { binding } => self.res.ubos.get_mut(&block(binding))?,
            Storage::Ssbo { binding } => self.res.ssbos.get_mut(&block(binding))?,
            _ => return None,
        };
        let end = match layout.storage {
            Storage::Ubo { .. } | Storage::Ssbo { .. } | Storage::PushConst => buf.len() as u64,
            _ => layout.size as u64,
        };
        Some((buf, end))
    }

    /// The binding of the texture, sampler or image a deref value points to.
    pub(crate) fn opaque_binding(&self, ptr: u64) -> Result<u32, Fault> {
        let var = ptr_var(ptr);
        let name = self
            .shader()
            .variables
            .get(var)
            .map_or("?", |v| v.name.as_str());
        match self.prog.vars.get(var).map(|l| l.storage) {
            Some(Storage::Opaque { binding }) if ptr & PTR_OOB == 0 => {
                Ok(binding.wrapping_add(ptr as u32))
            }
            Some(Storage::Opaque { .. }) => Err(Fault::oob(format!(
                "an array index in the deref of @{name} is out of range"
            ))),
            _ => Err(Fault::invalid(format!(
                "@{name} is not a texture, sampler or image"
            ))),
        }
    }

    pub(crate) fn intrinsic(
        &mut self,
        fc: &FuncCode,
        frame: &mut Frame,
        state: &mut InvState,
        shared: &mut [u8],
        v: Value,
    ) -> Result<Flow, Fault> {
        let prog = self.prog;
        let shader = prog.shader;
        let inst = shader.functions[frame.func as usize].inst(v);
        let InstKind::Intrinsic(ii) = &inst.kind else {
            unreachable!()
        };
        let def = inst.def;
        let regs = &frame.regs;
        let src = |k: usize| {
            let s = ii.srcs[k].index();
            &regs[fc.reg_off[s] as usize..(fc.reg_off[s] + fc.reg_comps[s]) as usize]
        };
        let src0 = |k: usize| src(k)[0];
        let idx = |kind: IndexKind| ii.index(kind).unwrap_or(0);
        let (bits, comps) = def.map_or((32, 0), |d| (d.bits, d.comps as u32));
        let atomic_op = || {
            AtomicOp::from_index(idx(IndexKind::AtomicOp))
                .ok_or_else(|| Fault::invalid("unknown atomic_op".into()))
        };
        let swap_data = |k: usize| {
            (
                src0(k),
                matches!(
                    ii.op,
                    Intrinsic::DerefAtomicSwap
                        | Intrinsic::SsboAtomicSwap
                        | Intrinsic::SharedAtomicSwap
                        | Intrinsic::ImageDerefAtomicSwap
                )
                .then(|| src0(k + 1)),
            )
        };
        let u32s = |v: [u32; 3]| v.map(|x| x as u64).to_vec();
        let launch: &'p Launch = self.launch;
        let sys = &launch.system;
        let robust = launch.robust_access;
        let result: Vec<u64> = match ii.op {
            Intrinsic::LoadDeref | Intrinsic::StoreDeref => {
                unreachable!("decoded as Op::DerefAccess")
            }
            Intrinsic::CopyDeref => {
                let (dvar, dty, dlayout) = self.pointee(fc, ii.srcs[0])?;
                let (_, sty, slayout) = self.pointee(fc, ii.srcs[1])?;
                self.check_writable(dvar)?;
                let (mut dl, mut sl) = (Vec::new(), Vec::new());
                dlayout
                    .leaves(&dty, 0, 0, &mut dl)
                    .and_then(|()| slayout.leaves(&sty, 0, 0, &mut sl))
                    .map_err(|e| Fault::unsupported(format!("copy_deref: {e}")))?;
                if dl.len() != sl.len() {
                    return Err(Fault::invalid("copy_deref between different types".into()));
                }
                let (dptr, sptr) = (src0(0), src0(1));
                let vals = self.read_leaves(state, shared, sptr, &sl)?;
                if !self.drops_write(state, dvar) {
                    self.write_leaves(state, shared, dptr, &dl, &vals)?;
                }
                Vec::new()
            }
            Intrinsic::DerefAtomic | Intrinsic::DerefAtomicSwap => {
                let (var, ty, layout) = self.pointee(fc, ii.srcs[0])?;
                self.check_writable(var)?;
                let Type::Scalar(s) = ty else {
                    return Err(Fault::invalid("atomic on a non-scalar".into()));
                };
                let op = atomic_op()?;
                let data = swap_data(1);
                let write = !self.drops_write(state, var);
                let bytes = layout.comp_bytes(s);
                match self.var_area(state, shared, src0(0), 0, bytes)? {
                    Some((buf, at)) => {
                        vec![atomic_raw(
                            buf,
                            at,
                            s.bits,
                            op,
                            data,
                            write,
                            "the variable",
                        )?]
                    }
                    None => vec![0],
                }
            }
            Intrinsic::LoadInput | Intrinsic::LoadOutput => {
                let buf = if ii.op == Intrinsic::LoadInput {
                    &state.input
                } else {
                    &state.output
                };
                let at = self.slot_offset(ii, src0(0));
                self.load_slots(buf, at, comps, bits)?
            }
            Intrinsic::StoreOutput => {
                let at = self.slot_offset(ii, src0(1));
                let cb = if bits_of(fc, ii.srcs[0]) == 64 { 8 } else { 4 };
                let data = src(0);
                let write_mask = idx(IndexKind::WriteMask);
                let len = state.output.len();
                for (c, &x) in data.iter().enumerate() {
                    if write_mask & (1 << c) != 0 {
                        let off = at + c as u64 * cb as u64;
                        memory::write_bytes(&mut state.output, off, cb, x)
                            .ok_or_else(|| Fault::oob(format!("output bytes at {off} of {len}")))?;
                    }
                }
                Vec::new()
            }
            Intrinsic::LoadUniform => {
                let off = idx(IndexKind::Base) as u64 + src0(0) as u32 as u64;
                load_raw(&self.uniform, off, comps, bits, "the uniform block")?
            }
            Intrinsic::LoadConstant => {
                let off = idx(IndexKind::Base) as u64 + src0(0) as u32 as u64;
                load_raw(&self.constant, off, comps, bits, "the constant data")?
            }
            Intrinsic::LoadPushConstant => {
                let off = idx(IndexKind::Base) as u64 + src0(0) as u32 as u64;
                load_raw(
                    &self.res.push_constants,
                    off,
                    comps,
                    bits,
                    "the push constants",
                )?
            }
            Intrinsic::LoadParam => {
                let p = idx(IndexKind::ParamIdx) as usize;
                frame
                    .args
                    .get(p)
                    .cloned()
                    .ok_or_else(|| Fault::invalid(format!("no parameter {p}")))?
            }
            Intrinsic::LoadUbo | Intrinsic::LoadSsbo => {
                let (binding, off) = (src0(0) as u32, src0(1) as u32 as u64);
                let (map, what) = if ii.op == Intrinsic::LoadUbo {
                    (&self.res.ubos, "UBO")
                } else {
                    (&self.res.ssbos, "SSBO")
                };
                let buf = map.get(&binding).ok_or_else(|| {
                    Fault::invalid(format!("no {what} bound at binding {binding}"))
                })?;
                load_raw(buf, off, comps, bits, &format!("{what} {binding}"))?
            }
            Intrinsic::StoreSsbo => {
                let (binding, off) = (src0(1) as u32, src0(2) as u32 as u64);
                let data = src(0).to_vec();
                let dbits = bits_of(fc, ii.srcs[0]);
                if !state.helper {
                    let buf = self.ssbo(binding)?;
                    store_raw(
                        buf,
                        off,
                        &data,
                        idx(IndexKind::WriteMask),
                        dbits,
                        &format!("SSBO {binding}"),
                    )?;
                }
                Vec::new()
            }
            Intrinsic::SsboAtomic | Intrinsic::SsboAtomicSwap => {
                let (binding, off) = (src0(0) as u32, src0(1) as u32 as u64);
                let (op, data) = (atomic_op()?, swap_data(2));
                let write = !state.helper;
                let buf = self.ssbo(binding)?;
                vec![atomic_raw(
                    buf,
                    off,
                    bits,
                    op,
                    data,
                    write,
                    &format!("SSBO {binding}"),
                )?]
            }
            Intrinsic::GetSsboSize => {
                let binding = src0(0) as u32;
                vec![self.ssbo(binding)?.len() as u64]
            }
            Intrinsic::LoadScratch => {
                let off = idx(IndexKind::Base) as u64 + src0(0) as u32 as u64;
                load_raw(&state.private, off, comps, bits, "scratch memory")?
            }
            Intrinsic::StoreScratch => {
                let off = idx(IndexKind::Base) as u64 + src0(1) as u32 as u64;
                let dbits = bits_of(fc, ii.srcs[0]);
                store_raw(
                    &mut state.private,
                    off,
                    src(0),
                    idx(IndexKind::WriteMask),
                    dbits,
                    "scratch memory",
                )?;
                Vec::new()
            }
            Intrinsic::LoadShared => {
                let off = idx(IndexKind::Base) as u64 + src0(0) as u32 as u64;
                load_raw(shared, off, comps, bits, "shared memory")?
            }
            Intrinsic::StoreShared => {
                let off = idx(IndexKind::Base) as u64 + src0(1) as u32 as u64;
                let dbits = bits_of(fc, ii.srcs[0]);
                store_raw(
                    shared,
                    off,
                    src(0),
                    idx(IndexKind::WriteMask),
                    dbits,
                    "shared memory",
                )?;
                Vec::new()
            }
            Intrinsic::SharedAtomic | Intrinsic::SharedAtomicSwap => {
                let off = idx(IndexKind::Base) as u64 + src0(0) as u32 as u64;
                let (op, data) = (atomic_op()?, swap_data(1));
                vec![atomic_raw(
                    shared,
                    off,
                    bits,
                    op,
                    data,
                    true,
                    "shared memory",
                )?]
            }
            Intrinsic::LoadGlobal | Intrinsic::StoreGlobal => {
                return Err(Fault::unsupported(format!(
                    "{}: the interpreter has no global memory",
                    ii.op.name()
                )));
            }
            Intrinsic::ImageDerefLoad
            | Intrinsic::ImageDerefStore
            | Intrinsic::ImageDerefAtomic
            | Intrinsic::ImageDerefAtomicSwap => {
                let data_bits = match ii.op {
                    Intrinsic::ImageDerefStore => bits_of(fc, ii.srcs[3]),
                    _ => bits,
                };
                if data_bits != 32 {
                    return Err(Fault::unsupported(format!(
                        "{}-bit image access (images hold 32-bit components)",
                        data_bits
                    )));
                }
                let binding = self.opaque_binding(src0(0))?;
                let dim = image_dim(ii)?;
                let coord = image_coord(dim, idx(IndexKind::ImageArray) != 0, src(1));
                let helper = state.helper;
                let img = self.res.images.get_mut(&binding).ok_or_else(|| {
                    Fault::invalid(format!("no image bound at binding {binding}"))
                })?;
                let at = img.index(coord).ok_or_else(|| {
                    Fault::oob(format!(
                        "texel {coord:?} of an image of {}x{}x{} with {} layers",
                        img.width, img.height, img.depth, img.layers
                    ))
                });
                match ii.op {
                    // Robust access, as GL's images have it: outside the image, loads and
                    // atomics see zero and nothing is written.
                    Intrinsic::ImageDerefStore if at.is_err() && robust => Vec::new(),
                    _ if at.is_err() && robust => vec![0; comps as usize],
                    Intrinsic::ImageDerefLoad => {
                        let t = img.texels[at?];
                        t.iter().take(comps as usize).map(|&c| c as u64).collect()
                    }
                    Intrinsic::ImageDerefStore => {
                        if !helper {
                            let at = at?;
                            for (c, &x) in src(3).iter().take(4).enumerate() {
                                img.texels[at][c] = x as u32;
                            }
                        }
                        Vec::new()
                    }
                    _ => {
                        let at = at?;
                        let old = img.texels[at][0] as u64;
                        let new = atomic_update(atomic_op()?, 32, old, src0(3), swap_data(3).1)?;
                        if !helper {
                            img.texels[at][0] = new as u32;
                        }
                        vec![old]
                    }
                }
            }
            Intrinsic::ImageDerefSize => {
                let binding = self.opaque_binding(src0(0))?;
                let img = self.res.images.get(&binding).ok_or_else(|| {
                    Fault::invalid(format!("no image bound at binding {binding}"))
                })?;
                let array = idx(IndexKind::ImageArray) != 0;
                let (w, h, d, l) = (img.width, img.height, img.depth, img.layers);
                let mut size = match image_dim(ii)? {
                    Dim::D1 | Dim::Buf => vec![w],
                    Dim::D3 => vec![w, h, d],
                    Dim::Cube => vec![w, h],
                    _ => vec![w, h],
                };
                if array {
                    size.push(if image_dim(ii)? == Dim::Cube {
                        l / 6
                    } else {
                        l
                    });
                }
                size.into_iter().map(|x| x as u64).collect()
            }
            Intrinsic::Barrier => unreachable!("decoded as Op::Barrier"),
            Intrinsic::Discard | Intrinsic::Terminate => return Ok(Flow::Terminate),
            Intrinsic::DiscardIf | Intrinsic::TerminateIf => {
                if src0(0) & 1 != 0 {
                    return Ok(Flow::Terminate);
                }
                Vec::new()
            }
            Intrinsic::Demote => {
                state.helper = true;
                Vec::new()
            }
            Intrinsic::DemoteIf => {
                if src0(0) & 1 != 0 {
                    state.helper = true;
                }
                Vec::new()
            }
            Intrinsic::LoadSubgroupInvocation => vec![state.subgroup_lane as u64],
            Intrinsic::LoadSubgroupSize => vec![launch.subgroup_size as u64],
            Intrinsic::LoadSubgroupEqMask
            | Intrinsic::LoadSubgroupGeMask
            | Intrinsic::LoadSubgroupGtMask
            | Intrinsic::LoadSubgroupLeMask
            | Intrinsic::LoadSubgroupLtMask => {
                let (lane, size) = (state.subgroup_lane, launch.subgroup_size);
                // The lanes below `n`, for `n` up to 128.
                let below = |n: u32| u128::MAX.checked_shr(128 - n).unwrap_or(0);
                let mask = match ii.op {
                    Intrinsic::LoadSubgroupEqMask => 1u128 << lane,
                    Intrinsic::LoadSubgroupGeMask => below(size) & !below(lane),
                    Intrinsic::LoadSubgroupGtMask => below(size) & !below(lane + 1),
                    Intrinsic::LoadSubgroupLeMask => below(lane + 1),
                    _ => below(lane),
                };
                mask_words(mask)
            }
            Intrinsic::Ballot
            | Intrinsic::ReadInvocation
            | Intrinsic::ReadFirstInvocation
            | Intrinsic::Reduce
            | Intrinsic::InclusiveScan
            | Intrinsic::ExclusiveScan
            | Intrinsic::VoteAll
            | Intrinsic::VoteAny
            | Intrinsic::VoteAllEqual => unreachable!("decoded as Op::Subgroup"),
            Intrinsic::IsHelperInvocation => vec![state.helper as u64],
            Intrinsic::LoadHelperInvocation => vec![state.initially_helper as u64],
            Intrinsic::LoadFrontFace => vec![sys.front_face as u64],
            Intrinsic::LoadFragCoord => state.frag_coord.map(|x| x.to_bits() as u64).to_vec(),
            Intrinsic::LoadPointCoord => sys.point_coord.map(|x| x.to_bits() as u64).to_vec(),
            Intrinsic::LoadSampleId => vec![sys.sample_id as u64],
            Intrinsic::LoadVertexId => vec![state.vertex_id as u64],
            Intrinsic::LoadInstanceId => vec![sys.instance_id as u64],
            Intrinsic::LoadBaseVertex => vec![sys.base_vertex as u64],
            Intrinsic::LoadBaseInstance => vec![sys.base_instance as u64],
            Intrinsic::LoadDrawId => vec![sys.draw_id as u64],
            Intrinsic::LoadPrimitiveId => vec![sys.primitive_id as u64],
            Intrinsic::LoadInvocationId => vec![sys.invocation_id as u64],
            Intrinsic::LoadLocalInvocationId => u32s(state.local_id),
            Intrinsic::LoadLocalInvocationIndex => {
                let [sx, sy, _] = shader.workgroup_size;
                let [x, y, z] = state.local_id;
                vec![
                    z.wrapping_mul(sy)
                        .wrapping_add(y)
                        .wrapping_mul(sx)
                        .wrapping_add(x) as u64,
                ]
            }
            Intrinsic::LoadGlobalInvocationId => {
                let size = shader.workgroup_size;
                u32s([0, 1, 2].map(|a| {
                    state.workgroup_id[a]
                        .wrapping_mul(size[a])
                        .wrapping_add(state.local_id[a])
                }))
            }
            Intrinsic::LoadWorkgroupId => u32s(state.workgroup_id),
            Intrinsic::LoadNumWorkgroups => u32s(launch.workgroups),
            Intrinsic::LoadWorkgroupSize => u32s(shader.workgroup_size),
        };
        if let Some(d) = def {
            let dst = fc.reg_off[v.index()] as usize;
            let n = d.comps as usize;
            let out = &mut frame.regs[dst..dst + n];
            out.fill(0);
            for (o, &x) in out.iter_mut().zip(&result) {
                *o = mask(x, d.bits);
            }
        }
        Ok(Flow::Next)
    }

    fn ssbo(&mut self, binding: u32) -> Result<&mut Vec<u8>, Fault> {
        self.res
            .ssbos
            .get_mut(&binding)
            .ok_or_else(|| Fault::invalid(format!("no SSBO bound at binding {binding}")))
    }

    /// Byte offset of a lowered I/O access: slot `base + offset`, then the first component.
    fn slot_offset(&self, ii: &IntrinsicInst, offset: u64) -> u64 {
        let base = ii.index(IndexKind::Base).unwrap_or(0) as u64;
        let comp = ii.index(IndexKind::Component).unwrap_or(0) as u64;
        (base + offset as u32 as u64) * SLOT_BYTES as u64 + comp * 4
    }

    fn load_slots(&self, buf: &[u8], at: u64, comps: u32, bits: u8) -> Result<Vec<u64>, Fault> {
        let cb = if bits == 64 { 8 } else { 4 };
        (0..comps as u64)
            .map(|c| {
                let off = at + c * cb as u64;
                memory::read_bytes(buf, off, cb)
                    .map(|raw| if bits == 1 { (raw != 0) as u64 } else { raw })
                    .ok_or_else(|| Fault::oob(format!("I/O bytes at {off} of {}", buf.len())))
            })
            .collect()
    }
}

/// Bit size of a value.
fn bits_of(fc: &FuncCode, v: Value) -> u8 {
    fc.reg_bits[v.index()]
}

fn image_dim(ii: &IntrinsicInst) -> Result<Dim, Fault> {
    let d = ii.index(IndexKind::ImageDim).unwrap_or(0);
    Dim::ALL
        .get(d as usize)
        .copied()
        .ok_or_else(|| Fault::invalid(format!("unknown image_dim {d}")))
}

/// Image coordinates as `(x, y, z, layer)`; cube images address faces as layers.
fn image_coord(dim: Dim, array: bool, c: &[u64]) -> [i64; 4] {
    let g = |i: usize| c.get(i).map_or(0, |&v| sext(v, 32));
    match dim {
        Dim::D1 | Dim::Buf => [g(0), 0, 0, if array { g(1) } else { 0 }],
        Dim::D3 => [g(0), g(1), g(2), 0],
        Dim::Cube => [g(0), g(1), 0, g(2)],
        Dim::D2 | Dim::Rect | Dim::Ms | Dim::Subpass => {
            [g(0), g(1), 0, if array { g(2) } else { 0 }]
        }
    }
}
