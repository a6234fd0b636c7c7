//! The static performance model of Mesa's Gen backend: the "cycles" of shader-db statistics,
//! from a program of native instructions.
//!
//! Every instruction occupies the front end for `df` cycles and, when it runs on a unit (the FPU,
//! extended math, a shared function), that unit for `db` cycles; its destination registers are
//! ready `ld` cycles after it issues (the accumulator after `la`, flags after `lf`), a send's
//! payload is read by `ls`. An instruction issues once the registers it reads and writes are
//! ready and its unit is free. The estimate is the front end's elapsed time, with everything
//! inside a loop weighted ten times per loop level.
//!
//! The figures are Mesa's per generation (IVB, HSW, Gen8–9). Where Mesa gives only the
//! destination latency of a class, the accumulator is ready four cycles earlier and the flags
//! six cycles later on Gen7 (four on Gen8+), as in the classes it gives in full.
//! Atomics are costed as other data-cache messages for now.

use crate::encoding::{Dst, Inst, Src};
use crate::fields::desc;
use crate::isa::{Gen, MathFn, Opcode, RegFile, Type};
use crate::lir;

/// What a program costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Performance {
    /// The estimated latency in cycles (shader-db's "cycles"); `u64::MAX` when the estimate
    /// passes it (hundreds of nested loops).
    pub cycles: u64,
    /// Invocations per cycle: the dispatch width over the busiest of the front end and units.
    pub throughput: f64,
}

/// The units an instruction may keep busy besides the front end.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Fpu,
    ExtendedMath,
    Sampler,
    Urb,
    DataCache,
    RenderCache,
    ConstantCache,
    PixelInterpolator,
    Gateway,
}

pub(crate) const UNITS: usize = 9;

/// The timing of one instruction (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Timing {
    pub unit: Option<Unit>,
    pub df: i64,
    pub db: i64,
    pub ls: i64,
    pub ld: i64,
    pub la: i64,
    pub lf: i64,
}

/// What an instruction's timing depends on; native instructions and Gen IR instructions (before
/// register allocation) both have one.
#[derive(Clone, Copy, Debug)]
struct Shape {
    opcode: Opcode,
    math: Option<MathFn>,
    sfid: u8,
    /// Sizes in GRFs: the destination, the execution, the largest source (a send's payload).
    sd: i64,
    sx: i64,
    ss: i64,
    /// The 3-source bank-conflict term: the destination size when sources 1 and 2 share a bank.
    sc: i64,
    /// A 64-bit execution type or a 32×32-bit integer product.
    wide: bool,
    float: bool,
}

impl Shape {
    fn of_native(inst: &Inst, hw: Gen) -> Shape {
        let (sd, sx, ss, sc) = sizes(inst, hw);
        Shape {
            opcode: inst.opcode,
            math: inst.math,
            sfid: inst.sfid,
            sd,
            sx,
            ss,
            sc,
            wide: is_wide(
                inst.opcode,
                inst.srcs.iter().map(Src::ty),
                inst.dst.map(|d| d.ty),
            ),
            float: inst.dst.is_some_and(|d| d.ty.is_float()),
        }
    }

    /// The shape of a Gen IR instruction; registers are not allocated yet, so bank conflicts are
    /// not known and count as none. `None` for the marks that emit nothing.
    fn of_lir(inst: &lir::Inst) -> Option<Shape> {
        let lir::Op::Hw(opcode) = inst.op else {
            return None;
        };
        let grfs = |bytes: u32| bytes.div_ceil(32) as i64;
        let dst_bytes = |d: &lir::Operand| {
            inst.exec_size as u32 * d.region.hstride.max(1) as u32 * d.ty.size() as u32
        };
        let exec_type = exec_type_size(inst.srcs.iter().map(|s| s.ty()), inst.dst.map(|d| d.ty));
        let ss = match inst.send {
            Some(m) => m.mlen() as i64,
            None => (0..inst.srcs.len())
                .map(|i| grfs(inst.src_span(i)))
                .max()
                .unwrap_or(0),
        };
        Some(Shape {
            opcode,
            math: inst.math,
            sfid: inst.send.map_or(0, |m| m.sfid),
            sd: inst.dst.map_or(0, |d| grfs(dst_bytes(&d)).max(1)),
            sx: grfs(inst.exec_size as u32 * exec_type).max(1),
            ss,
            sc: 0,
            wide: is_wide(
                opcode,
                inst.srcs.iter().map(|s| s.ty()),
                inst.dst.map(|d| d.ty),
            ),
            float: inst.dst.is_some_and(|d| d.ty.is_float()),
        })
    }
}

/// The timing of a Gen IR instruction on `hw`, for scheduling before register allocation;
/// `None` for the marks that emit nothing.
pub(crate) fn lir_timing(inst: &lir::Inst, hw: Gen) -> Option<Timing> {
    Shape::of_lir(inst).map(|shape| timing(&shape, hw))
}

/// Dependency slots: 128 GRFs, two accumulators, eight flag bytes.
const ACC_SLOT: usize = 128;
const FLAG_SLOT: usize = 130;
const SLOTS: usize = 138;

/// Estimates `program` (dispatched `dispatch_width` wide) on `hw`.
pub fn estimate(program: &[Inst], hw: Gen, dispatch_width: u8) -> Performance {
    // Loops start where a `while` jumps back to.
    let mut loop_starts = vec![0u32; program.len() + 1];
    for (index, inst) in program.iter().enumerate() {
        if inst.opcode == Opcode::While && inst.jip <= 0 {
            let target = index as i64 + inst.jip as i64 / 16;
            if let Ok(target) = usize::try_from(target) {
                loop_starts[target] += 1;
            }
        }
    }
    let mut fe: i64 = 0;
    let mut elapsed = 0.0;
    let mut weight = 1.0;
    let mut unit_ready = [0i64; UNITS];
    let mut busy = [0.0f64; UNITS];
    let mut dep_ready = [0i64; SLOTS];
    for (index, inst) in program.iter().enumerate() {
        for _ in 0..loop_starts[index] {
            weight *= 10.0;
        }
        let before = fe;
        let timing = timing(&Shape::of_native(inst, hw), hw);
        let reads = reads(inst);
        let writes = writes(inst);
        for &slot in reads.iter().chain(&writes) {
            fe = fe.max(dep_ready[slot]);
        }
        fe += timing.df;
        if let Some(unit) = timing.unit {
            fe = fe.max(unit_ready[unit as usize]);
            unit_ready[unit as usize] = fe + timing.db;
            busy[unit as usize] += timing.db as f64 * weight;
        }
        if inst.opcode.is_send() {
            for &slot in &reads {
                dep_ready[slot] = dep_ready[slot].max(fe + timing.ls);
            }
        }
        for &slot in &writes {
            let latency = match slot {
                s if s < ACC_SLOT => timing.ld,
                s if s < FLAG_SLOT => timing.la,
                _ => timing.lf,
            };
            dep_ready[slot] = fe + latency;
        }
        elapsed += (fe - before) as f64 * weight;
        if inst.opcode == Opcode::While {
            weight /= 10.0;
        }
    }
    let busiest = busy.iter().copied().fold(elapsed, f64::max);
    Performance {
        cycles: elapsed.round() as u64,
        throughput: if busiest > 0.0 {
            dispatch_width as f64 / busiest
        } else {
            0.0
        },
    }
}

/// GRFs a region of `bytes` starting at byte `subnr` of register `nr` covers.
fn grf_span(nr: u8, subnr: u8, bytes: u32) -> std::ops::Range<usize> {
    let first = nr as usize;
    let count = (subnr as u32 + bytes.max(1)).div_ceil(32) as usize;
    first..(first + count).min(ACC_SLOT)
}

/// Bytes a source region reads for `exec_size` channels.
fn src_bytes(inst: &Inst, src: &Src) -> u32 {
    let Src::Reg(reg) = src else { return 0 };
    let last = inst.exec_size.max(1) as u32 - 1;
    (reg.region.element(last) + 1) * reg.ty.size() as u32
}

fn dst_bytes(inst: &Inst, dst: &Dst) -> u32 {
    inst.exec_size as u32 * dst.hstride.max(1) as u32 * dst.ty.size() as u32
}

/// The flag bytes (8 channels each) an instruction's predicate or modifier touches.
fn flag_slots(inst: &Inst) -> impl Iterator<Item = usize> {
    let first = inst.flag as usize * 2 + inst.group as usize / 8;
    let count = (inst.exec_size as usize).div_ceil(8);
    (first..first + count).map(|b| FLAG_SLOT + b.min(7))
}

fn reads(inst: &Inst) -> Vec<usize> {
    let mut slots = Vec::new();
    for src in &inst.srcs {
        if let Src::Reg(reg) = src
            && reg.file == RegFile::Grf
        {
            let bytes = if inst.opcode.is_send() {
                // The payload: `mlen` registers.
                inst.descriptor()
                    .map_or(32, |desc| desc.get(desc::Send::FIELDS.mlen) * 32)
            } else {
                src_bytes(inst, src)
            };
            slots.extend(grf_span(reg.nr, reg.subnr, bytes));
        }
    }
    if inst.predicate.is_some() {
        slots.extend(flag_slots(inst));
    }
    if matches!(inst.opcode, Opcode::Mac | Opcode::Mach) {
        slots.push(ACC_SLOT);
    }
    slots
}

fn writes(inst: &Inst) -> Vec<usize> {
    let mut slots = Vec::new();
    if let Some(dst) = &inst.dst
        && dst.file == RegFile::Grf
    {
        let bytes = match inst.descriptor() {
            Some(desc) => desc.get(desc::Send::FIELDS.rlen) * 32,
            None => dst_bytes(inst, dst),
        };
        if bytes > 0 {
            slots.extend(grf_span(dst.nr, dst.subnr, bytes));
        }
    }
    if inst.acc_write || matches!(inst.opcode, Opcode::Mac | Opcode::Mach) {
        slots.push(ACC_SLOT);
    }
    if inst.cond.is_some() && inst.opcode != Opcode::Sel {
        slots.extend(flag_slots(inst));
    }
    slots
}

/// The size in GRFs of the destination (`sd`), of the execution (`sx`), of the largest source
/// (`ss`), and the 3-source bank-conflict term (`sc`).
fn sizes(inst: &Inst, hw: Gen) -> (i64, i64, i64, i64) {
    let sd = inst
        .dst
        .map_or(0, |dst| dst_bytes(inst, &dst).div_ceil(32).max(1) as i64);
    let exec_type = exec_type_size(inst.srcs.iter().map(Src::ty), inst.dst.map(|d| d.ty));
    let sx = (inst.exec_size as u32 * exec_type).div_ceil(32).max(1) as i64;
    let ss = match inst.descriptor() {
        Some(desc) => desc.get(desc::Send::of(hw).mlen) as i64,
        None => inst
            .srcs
            .iter()
            .map(|s| src_bytes(inst, s).div_ceil(32) as i64)
            .max()
            .unwrap_or(0),
    };
    let sc = if inst.is_three_src() && bank_conflict(inst, hw) {
        sd
    } else {
        0
    };
    (sd, sx, ss, sc)
}

/// Whether sources 1 and 2 of a 3-source instruction sit in one register bank.
fn bank_conflict(inst: &Inst, hw: Gen) -> bool {
    let nr = |i: usize| match inst.srcs.get(i) {
        Some(Src::Reg(r)) => Some(r.nr),
        _ => None,
    };
    let (Some(a), Some(b), Some(c)) = (nr(0), nr(1), nr(2)) else {
        return false;
    };
    let bank = |reg: u8| ((reg & 0x40) >> 5) | (reg & 1);
    let shared = hw >= Gen::Gen9 && (a == b || a == c || b == c);
    bank(b) == bank(c) && !shared
}

/// Bytes of an instruction's execution type: its widest operand (4 without operands).
fn exec_type_size(srcs: impl Iterator<Item = Type>, dst: Option<Type>) -> u32 {
    srcs.chain(dst).map(|t| t.size()).max().unwrap_or(4) as u32
}

/// Whether an instruction runs at the 64-bit (half) rate: a 64-bit execution type, or a
/// 32×32-bit integer product.
fn is_wide(
    opcode: Opcode,
    mut srcs: impl Iterator<Item = Type> + Clone,
    dst: Option<Type>,
) -> bool {
    let any_64 = srcs.clone().any(|t| t.size() == 8) || dst.is_some_and(|t| t.size() == 8);
    let int_32 = |t: Type| matches!(t, Type::D | Type::UD);
    let int_product = matches!(opcode, Opcode::Mul | Opcode::Mad)
        && srcs.clone().count() >= 2
        && srcs.all(int_32);
    any_64 || int_product
}

fn timing(shape: &Shape, hw: Gen) -> Timing {
    let &Shape {
        opcode,
        math,
        sfid,
        sd,
        sx,
        ss,
        sc,
        wide,
        float,
    } = shape;
    let gen8 = hw.is_gen8_plus();
    // An FPU class with destination latency `ld` (the accumulator and flags follow it).
    let fpu = |df: i64, db: i64, ld: i64| Timing {
        unit: Some(Unit::Fpu),
        df,
        db,
        ld,
        la: ld - 4,
        lf: if gen8 { ld + 4 } else { ld + 6 },
        ..Timing::default()
    };
    // Latencies of the plain ALU classes: (IVB, HSW, Gen8–9).
    let by_gen = |ivb: i64, hsw: i64, gen89: i64| match hw {
        Gen::Gen7 => ivb,
        Gen::Gen75 => hsw,
        Gen::Gen8 | Gen::Gen9 => gen89,
    };
    let wide = gen8 && wide;
    let send = |unit: Unit, db: i64, ls: i64, ld: i64| Timing {
        unit: Some(unit),
        df: 2,
        db,
        ls,
        ld,
        la: 0,
        lf: 0,
    };
    match opcode {
        op if op.is_control_flow() || matches!(op, Opcode::Call | Opcode::Ret) => Timing {
            df: by_gen(2, 6, 8),
            ..Timing::default()
        },
        Opcode::Mov | Opcode::Cmp | Opcode::Cmpn | Opcode::Add | Opcode::Mul => {
            if wide {
                fpu(4 * sd, 4 * sx, 12)
            } else if float {
                fpu(2 * sd, 2 * sx, by_gen(14, 12, 8))
            } else {
                fpu(2 * sd, 2 * sx, by_gen(12, 10, 8))
            }
        }
        Opcode::Mad => {
            if wide {
                fpu(4 * sd + sc, 4 * sx, 12)
            } else {
                let ld = if float {
                    by_gen(14, 12, 8)
                } else {
                    by_gen(12, 10, 8)
                };
                fpu(2 * sd + sc, 2 * sx, ld)
            }
        }
        Opcode::Lrp => {
            if gen8 {
                fpu(4 * sd + sc, 4 * sx, 12)
            } else {
                fpu(2 * sd + sc, 2 * sx, by_gen(12, 10, 0))
            }
        }
        Opcode::Bfe | Opcode::Bfi2 => fpu(2 * sd + sc, 2 * sx, by_gen(12, 10, 8)),
        Opcode::F32to16 | Opcode::F16to32 => fpu(4 * sd, 4 * sx, by_gen(12, 10, 8)),
        Opcode::Pln => {
            if gen8 {
                fpu(4 * sd, 4 * sx, 12)
            } else {
                fpu(2 * sd, 2 * sx, by_gen(12, 10, 0))
            }
        }
        Opcode::Math => {
            let em = |df: i64, db: i64, ld: i64| Timing {
                unit: Some(Unit::ExtendedMath),
                ..fpu(df, db, ld)
            };
            match math {
                Some(MathFn::Pow) if gen8 => em(-2 + 4 * sd, 8 * sx, 24),
                Some(MathFn::Pow) => em(2 * sd, 4 * sx, by_gen(22, 20, 0)),
                Some(MathFn::IntDiv | MathFn::IntMod | MathFn::IntDivMod) => em(2, 26, 28),
                _ if gen8 => em(-2 + 4 * sd, 4 * sx, 16),
                _ => em(2 * sd, 2 * sx, by_gen(14, 12, 0)),
            }
        }
        Opcode::Send | Opcode::Sendc => match sfid {
            2 | 4 => send(Unit::Sampler, 16 * sx, 8 + 2 * ss, 750 + 2 * ss),
            6 => send(Unit::Urb, 6 * sx, 32, 200),
            5 => send(Unit::RenderCache, 450 * sx, 10, 300),
            9 => send(Unit::ConstantCache, 16 * sx, 10, 100),
            11 => send(Unit::PixelInterpolator, 14, 0, 90),
            3 => Timing {
                unit: Some(Unit::Gateway),
                df: 90,
                ..Timing::default()
            },
            10 | 12 => send(Unit::DataCache, 20 * sx, 10, 100),
            _ => Timing {
                df: 2,
                ..Timing::default()
            },
        },
        Opcode::Nop => Timing::default(),
        // Logic, shifts, selects, rounding, bit counting and the other plain ALU operations.
        _ => {
            if wide {
                fpu(4 * sd, 4 * sx, 12)
            } else {
                fpu(2 * sd, 2 * sx, by_gen(12, 10, 8))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::Reg;
    use crate::fields::Descriptor;
    use crate::isa::Region;

    fn add(dst: u8, a: u8, b: u8) -> Inst {
        let src = |nr| Src::Reg(Reg::grf(nr, 0, Type::F, Region::new(8, 8, 1)));
        Inst::new(
            Opcode::Add,
            8,
            Some(Dst::grf(dst, 0, Type::F)),
            vec![src(a), src(b)],
        )
    }

    /// Gen9 SIMD8 float add: 2 cycles of front end and FPU, result ready 8 cycles after issue.
    #[test]
    fn a_dependent_add_waits_for_its_source() {
        let independent = [add(2, 1, 1), add(3, 1, 1)];
        let dependent = [add(2, 1, 1), add(3, 2, 2)];
        assert_eq!(estimate(&independent, Gen::Gen9, 8).cycles, 4);
        // The second issues when g2 is ready (2 + 8) and takes 2 more.
        assert_eq!(estimate(&dependent, Gen::Gen9, 8).cycles, 12);
        // Haswell's float latency is 12.
        assert_eq!(estimate(&dependent, Gen::Gen75, 8).cycles, 16);
    }

    #[test]
    fn sixteen_wide_operations_take_twice_the_front_end() {
        let mut wide = add(2, 4, 6);
        wide.exec_size = 16;
        assert_eq!(estimate(&[wide], Gen::Gen9, 16).cycles, 4);
    }

    /// Everything inside a loop counts ten times.
    #[test]
    fn loops_weigh_ten_times() {
        let mut back = Inst::new(Opcode::While, 8, None, Vec::new());
        back.jip = -16;
        let straight = estimate(&[add(2, 1, 1)], Gen::Gen9, 8).cycles;
        let looped = estimate(&[add(2, 1, 1), back], Gen::Gen9, 8).cycles;
        // The add (2) and the while's front end (8), both in the loop.
        assert_eq!(straight, 2);
        assert_eq!(looped, 10 * (2 + 8));
    }

    /// Past about 300 nested loops the weight is infinite: the estimate saturates (every
    /// instruction takes the front end at least one cycle, so no NaN reads as 0 cycles).
    #[test]
    fn hundreds_of_nested_loops_saturate_the_estimate() {
        let mut program = vec![add(2, 1, 1)];
        for k in 1..=400 {
            let mut back = Inst::new(Opcode::While, 8, None, Vec::new());
            back.jip = -16 * k;
            program.push(back);
        }
        program.push(add(3, 1, 1));
        let performance = estimate(&program, Gen::Gen9, 8);
        assert_eq!(performance.cycles, u64::MAX);
        assert_eq!(performance.throughput, 0.0);
    }

    #[test]
    fn a_sample_is_ready_hundreds_of_cycles_later() {
        let send = desc::Send::FIELDS;
        let lengths = Descriptor::build(&[(send.mlen, 2), (send.rlen, 4)]).unwrap();
        let mut sample = Inst::new(
            Opcode::Send,
            8,
            Some(Dst::grf(10, 0, Type::UW)),
            vec![
                Src::Reg(Reg::grf(2, 0, Type::UD, Region::new(8, 8, 1))),
                Src::Imm(Type::UD, lengths.0.into()),
            ],
        );
        sample.sfid = desc::Sampler::SFID;
        let reads_result = add(20, 10, 13);
        let cycles = estimate(&[sample, reads_result], Gen::Gen9, 8).cycles;
        // Issue at 2; the result is ready at 2 + 750 + 2·2; the add takes 2 more.
        assert_eq!(cycles, 2 + 754 + 2);
    }
}
