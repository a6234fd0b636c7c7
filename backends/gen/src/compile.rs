//! The backend's straight line for one shader (fragment and compute at SIMD8, 16 or 32, vertex
//! at SIMD8, SIMD4x2 on Gen7/7.5) at
//! one dispatch width: lowering, copy
//! propagation, common subexpressions, redundant flag writes, payload coalescing and dead-code elimination on the Gen
//! IR, pre-RA scheduling, register allocation with spilling, the removal of the copies it made
//! no-ops, emission, and the shader-db statistics of the result. A function the entry function
//! still calls goes down the same line as a subroutine, its registers above those live at its
//! calls, and the parts are linked into one program (each `call` aimed at its callee).

use crate::coalesce::coalesce_payloads;
use crate::copy_prop::propagate_copies;
use crate::cse::eliminate_common_subexpressions;
use crate::emit::{Native, emit, origins};
use crate::encoding::{Dst, Inst, Src as EncodedSrc};
use crate::isa::{Gen, Opcode, Type};
use crate::lir::{Lir, Op};
use crate::lower::{
    LowerError, Payload, lower_compute, lower_fragment, lower_subroutine, lower_vertex,
};
use crate::perf::estimate;
use crate::redundant_flags::remove_redundant_flags;
use crate::regalloc::{AllocError, CallWindow, GRFS, allocate, live_at_calls};
use crate::schedule::{schedule, schedule_for_pressure};
use crate::self_moves::remove_self_moves;
use crate::simd_width::{lower_simd_width, lowered_width};
use shrew_engine::ir::{Shader, Stage};
use shrew_engine::passes::machine::MachinePasses;
use shrew_engine::passes::manager::RunError;
use shrew_engine::provenance::Origin;
use std::sync::Arc;

/// A compiled kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub hw: Gen,
    pub dispatch_width: u8,
    pub insts: Vec<Inst>,
    /// What made each instruction, when the run recorded provenance; else empty.
    pub origins: Vec<Option<Arc<Origin>>>,
    pub payload: Payload,
    pub stats: Stats,
    /// The performance model's pixels per cycle: channels over the busiest unit's cycles.
    pub throughput: f64,
    /// Bytes of scratch memory each thread needs for its spills.
    pub scratch_bytes: u32,
}

/// shader-db's figures for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    pub instructions: u32,
    pub cycles: u64,
    pub loops: u32,
    pub spills: u32,
    pub fills: u32,
    pub sends: u32,
}

/// Why a shader did not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Lower(#[from] LowerError),
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// A variant the driver's choice of dispatch widths leaves out.
    #[error("{0}")]
    Skipped(String),
    /// A machine pass left invalid IR (with `verify_each`).
    #[error(transparent)]
    Pass(#[from] RunError),
}

/// Compiles a fragment shader (after the mid-end and `lower-io`) at `width` channels, spilling
/// to scratch what does not fit the registers.
pub fn compile_fragment(shader: &Shader, hw: Gen, width: u8) -> Result<Kernel, CompileError> {
    compile(shader, hw, width, true)
}

/// Compiles a shader of any stage the backend takes (after the mid-end and `lower-io`) at
/// `width` channels (vertex shaders at 8), its machine passes run by `passes`.
pub fn compile_stage(
    shader: &Shader,
    hw: Gen,
    width: u8,
    passes: &mut MachinePasses,
) -> Result<Kernel, CompileError> {
    let lowered = match shader.stage {
        Stage::Vertex => lower_vertex(shader, hw)?,
        Stage::Compute => lower_compute(shader, hw, width)?,
        _ => lower_fragment(shader, hw, width)?,
    };
    finish(shader, lowered, hw, true, passes)
}

/// Compiles a vertex shader (after the mid-end and `lower-io`) at SIMD8 (SIMD4x2 on Gen7/7.5),
/// spilling to scratch what does not fit the registers.
pub fn compile_vertex(shader: &Shader, hw: Gen) -> Result<Kernel, CompileError> {
    let lowered = lower_vertex(shader, hw)?;
    finish(shader, lowered, hw, true, &mut MachinePasses::quiet())
}

/// Compiles a compute shader (after the mid-end and `lower-io`) at `width` channels, spilling
/// to scratch what does not fit the registers.
pub fn compile_compute(shader: &Shader, hw: Gen, width: u8) -> Result<Kernel, CompileError> {
    finish(
        shader,
        lower_compute(shader, hw, width)?,
        hw,
        true,
        &mut MachinePasses::quiet(),
    )
}

/// The narrowest dispatch width from `at_least` up at which a workgroup of `shader` fits the
/// threads that may share a barrier; `at_least` when none does (lowering then says why).
pub fn compute_width(shader: &Shader, at_least: u8) -> u8 {
    let invocations: u64 = shader.workgroup_size.iter().map(|&n| n as u64).product();
    [8u8, 16, 32]
        .into_iter()
        .filter(|&w| w >= at_least)
        .find(|&w| invocations.div_ceil(w as u64) <= crate::lower::MAX_WORKGROUP_THREADS)
        .unwrap_or(at_least)
}

/// The compute kernels a driver compiles, as Mesa chooses them for Gen7-9: SIMD8 when the
/// workgroup fits 64 threads of 8 channels; SIMD16 when SIMD8 did not spill; SIMD32 only when
/// the workgroup needs it (neither narrower width fits). The driver runs the widest that
/// compiled without spilling.
pub fn compile_compute_variants(
    shader: &Shader,
    hw: Gen,
) -> Vec<(u8, Result<Kernel, CompileError>)> {
    let simd8 = compile_compute(shader, hw, 8);
    let simd16 = match &simd8 {
        Ok(k) if k.stats.spills > 0 => Err(CompileError::Skipped(
            "SIMD16 is not compiled when SIMD8 spills".into(),
        )),
        _ => compile_compute(shader, hw, 16),
    };
    let simd32 = match (&simd8, &simd16) {
        (Err(CompileError::Lower(_)), Err(CompileError::Lower(_))) => {
            compile_compute(shader, hw, 32)
        }
        _ => Err(CompileError::Skipped(
            "SIMD32 is compiled only for workgroups too large for SIMD16".into(),
        )),
    };
    vec![(8, simd8), (16, simd16), (32, simd32)]
}

/// The fragment kernels a driver keeps, as Mesa chooses them: SIMD8 always,
/// spilling if it must; SIMD16 only when SIMD8 did not spill, and only if it fits the registers
/// without spilling; SIMD32 only when both did, if it fits without spilling, and only if the
/// performance model gives it a better throughput than both.
pub fn compile_fragment_variants(
    shader: &Shader,
    hw: Gen,
) -> Vec<(u8, Result<Kernel, CompileError>)> {
    let simd8 = compile(shader, hw, 8, true);
    let simd16 = match &simd8 {
        Ok(k) if k.stats.spills > 0 => Err(CompileError::Skipped(
            "SIMD16 is not compiled when SIMD8 spills".into(),
        )),
        _ => compile(shader, hw, 16, false),
    };
    let simd32 = match (&simd8, &simd16) {
        (Ok(k8), Ok(k16)) if k8.stats.spills == 0 => {
            compile(shader, hw, 32, false).and_then(|k32| {
                let best = k8.throughput.max(k16.throughput);
                if k32.throughput > best {
                    Ok(k32)
                } else {
                    Err(CompileError::Skipped(format!(
                        "SIMD32's estimated throughput {:.3} does not beat {best:.3}",
                        k32.throughput
                    )))
                }
            })
        }
        _ => Err(CompileError::Skipped(
            "SIMD32 is compiled only when SIMD8 and SIMD16 compiled without spilling".into(),
        )),
    };
    vec![(8, simd8), (16, simd16), (32, simd32)]
}

fn compile(shader: &Shader, hw: Gen, width: u8, may_spill: bool) -> Result<Kernel, CompileError> {
    finish(
        shader,
        lower_fragment(shader, hw, width)?,
        hw,
        may_spill,
        &mut MachinePasses::quiet(),
    )
}

/// The straight line after lowering, each pass run by `passes` (which may print, validate,
/// time it and, for the optional ones, stop at a bisect limit). The functions the entry
/// function still calls become subroutines after the main program, each lowered and compiled
/// the same way with its registers above every register live at its calls, and the parts are
/// linked into one program.
fn finish(
    shader: &Shader,
    (program, mut payload): (Lir, Payload),
    hw: Gen,
    may_spill: bool,
    passes: &mut MachinePasses,
) -> Result<Kernel, CompileError> {
    let width = program.dispatch_width;
    let main = compile_part(program, hw, may_spill, passes)?;
    let mut parts = vec![(shader.entry.0, None, main)];
    for callee in shader.called_callers_first() {
        // Above every register live at one of its calls, below what any caller keeps at the
        // top of the file; the first GRF holds the return address.
        let calls =
            (parts.iter().flat_map(|(_, _, part)| &part.calls)).filter(|c| c.callee == callee.0);
        let (first, end) = calls.fold((u32::from(payload.regs), GRFS), |(first, end), c| {
            (first.max(c.first), end.min(c.end))
        });
        let return_address = u8::try_from(first).ok().filter(|_| first + 1 < end).ok_or(
            AllocError::OutOfRegisters {
                at: 0,
                needed: first + 1 + GRFS - end,
                available: GRFS,
            },
        )?;
        let scratch_bytes = (parts.iter().map(|(_, _, part)| part.scratch_bytes))
            .max()
            .unwrap_or(0);
        let (lir, with_callee) = lower_subroutine(
            shader,
            callee,
            hw,
            payload,
            return_address,
            end,
            scratch_bytes,
        )?;
        payload = with_callee;
        let part = compile_part(lir, hw, may_spill, passes)?;
        parts.push((callee.0, Some(return_address), part));
    }
    let Native { insts, origins, .. } = link(&parts, hw);
    let perf = estimate(&insts, hw, width);
    let stats = Stats {
        instructions: insts.iter().filter(|i| i.opcode != Opcode::Nop).count() as u32,
        cycles: perf.cycles,
        loops: insts.iter().filter(|i| i.opcode == Opcode::While).count() as u32,
        spills: parts.iter().map(|(_, _, part)| part.spills).sum(),
        fills: parts.iter().map(|(_, _, part)| part.fills).sum(),
        sends: insts.iter().filter(|i| i.opcode.is_send()).count() as u32,
    };
    Ok(Kernel {
        hw,
        dispatch_width: width,
        insts,
        origins,
        payload,
        stats,
        throughput: perf.throughput,
        scratch_bytes: (parts.iter().map(|(_, _, part)| part.scratch_bytes))
            .max()
            .unwrap_or(0),
    })
}

/// One function's part of the program, compiled.
struct Part {
    native: Native,
    /// Each call and the GRFs its callee may use there.
    calls: Vec<CallWindow>,
    spills: u32,
    fills: u32,
    scratch_bytes: u32,
}

/// The parts as one program: the main program, then the subroutines, each call aimed at its
/// callee's first instruction (an offset in bytes) and writing its return address to the
/// callee's return-address GRF.
fn link(parts: &[(u32, Option<u8>, Part)], hw: Gen) -> Native {
    let mut starts = Vec::with_capacity(parts.len());
    let mut insts = Vec::new();
    for (_, _, part) in parts {
        starts.push(insts.len());
        insts.extend(part.native.insts.iter().cloned());
    }
    let part_of = |f: u32| parts.iter().position(|(g, _, _)| *g == f);
    for (at, inst) in insts.iter_mut().enumerate() {
        if inst.opcode != Opcode::Call {
            continue;
        }
        let Some(&EncodedSrc::Imm(_, callee)) = inst.srcs.first() else {
            unreachable!("emission names the callee in the immediate");
        };
        let k = part_of(callee as u32).expect("every function called is compiled");
        let offset = (starts[k] as i64 - at as i64) * 16;
        inst.srcs = vec![EncodedSrc::Imm(Type::D, offset as i32 as u32 as u64)];
        inst.dst = Some(Dst::grf(parts[k].1.expect("a callee"), 0, Type::UD));
    }
    let origins = if parts.iter().all(|(_, _, p)| p.native.origins.is_empty()) {
        Vec::new()
    } else {
        (parts.iter())
            .flat_map(|(_, _, p)| match p.native.origins.is_empty() {
                true => vec![None; p.native.insts.len()],
                false => p.native.origins.clone(),
            })
            .collect()
    };
    Native { hw, insts, origins }
}

/// One part's straight line after lowering.
fn compile_part(
    mut program: Lir,
    hw: Gen,
    may_spill: bool,
    passes: &mut MachinePasses,
) -> Result<Part, CompileError> {
    passes.optimize("gen-copy-prop", &mut program, |p| {
        propagate_copies(p, hw);
    })?;
    passes.optimize("gen-cse", &mut program, |p| {
        eliminate_common_subexpressions(p);
    })?;
    passes.optimize("gen-redundant-flags", &mut program, |p| {
        remove_redundant_flags(p);
    })?;
    passes.optimize("gen-dce", &mut program, |p| dead_code(p, hw))?;
    passes.optimize("gen-coalesce-payloads", &mut program, |p| {
        if coalesce_payloads(p) {
            dead_code(p, hw);
        }
    })?;
    // Split last: the passes before see whole instructions, each register with one writer.
    passes.require("gen-lower-simd-width", &mut program, |p| {
        lower_simd_width(p, hw)
    })?;
    // Scheduled for latency if the result fits the register file without spilling, else for
    // the fewest live registers, spilling what does not fit then (Mesa also tries its pre-RA
    // scheduling modes in turn, and spills only in its last attempt).
    let mut scheduled = program.clone();
    passes.optimize("gen-schedule", &mut scheduled, |p| schedule(p, hw))?;
    let (mut program, alloc) =
        match passes.require("gen-regalloc", &mut scheduled, |p| allocate(p, hw, false))? {
            Ok(alloc) => (scheduled, alloc),
            Err(_) => {
                passes.optimize("gen-schedule-pressure", &mut program, |p| {
                    schedule_for_pressure(p, hw)
                })?;
                let alloc = passes.require("gen-regalloc-spill", &mut program, |p| {
                    allocate(p, hw, may_spill)
                })??;
                (program, alloc)
            }
        };
    debug_assert!(
        program
            .insts
            .iter()
            .all(|inst| inst.exec_size <= lowered_width(inst, hw)),
        "an instruction wider than the hardware runs"
    );
    passes.optimize("gen-self-moves", &mut program, |p| {
        remove_self_moves(p, &alloc);
    })?;
    let native = passes.translate("gen-emit", &program, |program| {
        let insts = emit(program, &alloc);
        let origins = origins(program);
        Ok::<_, CompileError>(Native { hw, insts, origins })
    })?;
    Ok(Part {
        native,
        calls: live_at_calls(&program, &alloc),
        spills: alloc.spills,
        fills: alloc.fills,
        scratch_bytes: alloc.scratch_bytes,
    })
}

/// Removes instructions whose only effect is a virtual register nothing reads, until none is
/// left.
fn dead_code(program: &mut Lir, hw: Gen) {
    loop {
        let mut read = vec![false; program.vreg_sizes.len()];
        for inst in &program.insts {
            for r in inst.srcs.iter().filter_map(|s| s.reg()) {
                if let Some(v) = r.vreg() {
                    read[v.0 as usize] = true;
                }
            }
        }
        let before = program.insts.len();
        program.insts.retain(|inst| {
            let writes_flag = inst.cond.is_some() && inst.opcode() != Some(Opcode::Sel);
            let send_effect = inst.send.is_some_and(|m| m.has_effect(hw));
            let effect = writes_flag || send_effect || !matches!(inst.op, Op::Hw(_));
            let dead = inst
                .dst
                .and_then(|d| d.vreg())
                .is_some_and(|v| !read[v.0 as usize]);
            effect || !dead
        });
        if program.insts.len() == before {
            return;
        }
    }
}
