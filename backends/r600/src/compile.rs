//! The backend's straight line for one shader: lowering, copy propagation, register units,
//! packing into groups and clauses, register allocation (spilling what does not fit),
//! emission and encoding, and the shader-db style statistics of the result. A function the entry function still calls goes
//! down the same line as a subroutine, and the parts are linked into one program.

use crate::copy_prop::{legalize_operands, propagate_copies};
use crate::emit::{Emitted, Nesting, Part, emit};
use crate::encoding::{Binary, EncodeError, assemble};
use crate::isa::{CfOp, Chip};
use crate::lir::Lir;
use crate::lower::{Interface, LowerError, lower, lower_subroutine, temporary_dwords};
use crate::pack::{PackError, pack};
use crate::program::{CfBody, Program};
use crate::regalloc::{AllocError, Allocated};
use crate::spill::allocate_spilling;
use crate::units::form_units;
use shrew_engine::ir::{Shader, Stage};
use shrew_engine::passes::machine::MachinePasses;
use shrew_engine::passes::manager::RunError;

/// A compiled shader.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub program: Program,
    pub binary: Binary,
    pub interface: Interface,
    pub stats: Stats,
}

/// The figures Mesa's r600 statistics report for a shader, and a cycle estimate.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Dwords of the binary: CF words, clause bodies, literals, padding.
    pub dwords: u32,
    pub gprs: u32,
    /// Stack entries (STACK_SIZE).
    pub stack: u32,
    pub alu_groups: u32,
    /// ALU instructions, each slot counted (a four-slot operation is four).
    pub alu_slots: u32,
    pub literals: u32,
    /// CF instructions.
    pub cf: u32,
    pub alu_clauses: u32,
    pub fetch_clauses: u32,
    pub fetches: u32,
    pub loops: u32,
    /// Static estimate of one wavefront's cycles ([`estimate_cycles`]).
    pub cycles: u64,
    /// Scratch writes (MEM_SCRATCH) and reads (READ_SCRATCH) of spilled values.
    pub spills: u32,
    pub fills: u32,
    /// Bytes of scratch memory a lane uses: the temporaries kept there and the spilled values.
    pub scratch_bytes: u32,
}

/// Why a shader did not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Lower(#[from] LowerError),
    #[error(transparent)]
    Pack(#[from] PackError),
    #[error(transparent)]
    Alloc(#[from] AllocError),
    #[error("internal error: {0}")]
    Encode(#[from] EncodeError),
    #[error("internal error: {0}")]
    Emit(String),
    /// The control flow nests deeper than the CF stack a program may declare.
    #[error(
        "the control flow nests too deep for the hardware: it needs {entries} CF stack entries \
         of four elements (a loop takes four or eight elements, an `if` one), and STACK_SIZE, 8 \
         bits wide, declares at most 255"
    )]
    StackTooDeep { entries: u32 },
    /// A pass left invalid IR (with `verify_each`).
    #[error(transparent)]
    Pass(#[from] RunError),
}

/// Compiles a fragment or vertex shader (after the mid-end and the backend pipeline) for
/// `chip`. The functions the entry function still calls become subroutines after the main
/// program, each with a window of GPRs above those of every function that calls it, so a
/// call keeps its caller's registers.
pub fn compile(shader: &Shader, chip: Chip) -> Result<Kernel, CompileError> {
    compile_observed(shader, chip, &mut MachinePasses::quiet())
}

/// [`compile`] with the passes over the R600 IR run by `passes` (which may print, validate,
/// time them and stop optional ones at a bisect limit).
pub fn compile_observed(
    shader: &Shader,
    chip: Chip,
    passes: &mut MachinePasses,
) -> Result<Kernel, CompileError> {
    let (lir, mut interface) = lower(shader, chip)?;
    let main = Part::Main {
        fetch_shader: shader.stage == Stage::Vertex,
    };
    // Spilled values go past the temporaries, each part's past those of the parts before.
    let mut spill_base = u16::try_from(temporary_dwords(shader)?).unwrap_or(u16::MAX);
    let main = compile_part(lir, chip, main, 0, spill_base, passes)?;
    spill_base = spill_base.max(main.program.scratch_elements);
    let mut parts = vec![(shader.entry.0, main)];
    for callee in shader.called_callers_first() {
        let first = parts
            .iter()
            .filter(|(_, part)| part.calls.iter().any(|c| c.callee == callee.0))
            .map(|(_, part)| part.program.gprs)
            .max()
            .unwrap_or(0);
        let (lir, used) = lower_subroutine(shader, callee, chip)?;
        interface.textures.extend(used.textures);
        interface.samplers.extend(used.samplers);
        let part = compile_part(lir, chip, Part::Subroutine, first, spill_base, passes)?;
        spill_base = spill_base.max(part.program.scratch_elements);
        parts.push((callee.0, part));
    }
    let program = link(&parts, chip)?;
    let binary = assemble(&program)?;
    let stats = Stats {
        spills: parts.iter().map(|(_, part)| part.spills).sum(),
        fills: parts.iter().map(|(_, part)| part.fills).sum(),
        ..statistics(&program, &binary)
    };
    Ok(Kernel {
        program,
        binary,
        interface,
        stats,
    })
}

/// One function's part of the program, its registers from GPR `first` up, the values it
/// spills in scratch elements from `spill_base` up. Every step runs through `passes`: the
/// passes over the R600 IR, then packing into ALU groups, register allocation (with the spill
/// code it adds) and emission, each making the next IR (the packed program, the packed program
/// with its registers, the part's machine program).
fn compile_part(
    mut lir: Lir,
    chip: Chip,
    part: Part,
    first: u8,
    spill_base: u16,
    passes: &mut MachinePasses,
) -> Result<Emitted, CompileError> {
    passes.optimize("r600-copy-prop", &mut lir, |lir| {
        propagate_copies(lir, chip)
    })?;
    passes.require("r600-legalize", &mut lir, |lir| {
        legalize_operands(lir, chip)
    })?;
    let units = passes.require("r600-units", &mut lir, form_units)?;
    let packed = passes.translate("r600-pack", &lir, |lir| {
        pack(lir, &units, chip).map_err(CompileError::from)
    })?;
    let allocated = passes.translate("r600-regalloc", &packed, |packed| {
        let (packed, alloc) = allocate_spilling(packed, &lir, &units, first, spill_base, chip)?;
        Ok::<_, CompileError>(Allocated { packed, alloc })
    })?;
    passes.translate("r600-emit", &allocated, |allocated| {
        emit(&allocated.packed, &allocated.alloc, chip, part).map_err(CompileError::Emit)
    })
}

/// The parts as one program: the main program, then the subroutines, each CALL aimed at its
/// subroutine; the GPRs of the widest window; the stack of the deepest chain of calls (a
/// call frame takes a loop's four elements).
fn link(parts: &[(u32, Emitted)], chip: Chip) -> Result<Program, CompileError> {
    let mut starts = Vec::new();
    let mut cf = Vec::new();
    for (_, part) in parts {
        let start = cf.len();
        starts.push(start);
        cf.extend(part.program.cf.iter().cloned().map(|mut c| {
            if let CfBody::Flow { addr, .. } = &mut c.body
                && c.op.has_target()
            {
                *addr += start as u32;
            }
            c
        }));
    }
    let index = |f: u32| parts.iter().position(|(g, _)| *g == f).expect("compiled");
    for ((_, part), &start) in parts.iter().zip(&starts) {
        for call in &part.calls {
            if let CfBody::Flow { addr, .. } = &mut cf[start + call.at].body {
                *addr = starts[index(call.callee)] as u32;
            }
        }
    }
    // The nesting a part and its calls can reach, callees (later parts) first.
    let mut reach = vec![Nesting::default(); parts.len()];
    let mut elements = vec![0; parts.len()];
    for (k, (_, part)) in parts.iter().enumerate().rev() {
        reach[k] = part.nesting;
        elements[k] = part.stack_elements.div_ceil(4) * 4;
        for call in &part.calls {
            let callee = index(call.callee);
            let chain = Nesting {
                loops: call.nesting.loops + 1 + reach[callee].loops,
                pushes: call.nesting.pushes + reach[callee].pushes,
            };
            reach[k] = reach[k].max(chain);
            elements[k] = elements[k].max(chain.elements(chip));
        }
    }
    let entries = elements[0].div_ceil(4);
    Ok(Program {
        chip,
        cf,
        gprs: parts.iter().map(|(_, p)| p.program.gprs).max().unwrap_or(0),
        stack_size: u8::try_from(entries).map_err(|_| CompileError::StackTooDeep { entries })?,
        scratch_elements: (parts.iter())
            .map(|(_, p)| p.program.scratch_elements)
            .max()
            .unwrap_or(0),
    })
}

/// The statistics of a compiled program.
pub fn statistics(program: &Program, binary: &Binary) -> Stats {
    let mut stats = Stats {
        dwords: binary.words.len() as u32,
        gprs: program.gprs as u32,
        stack: program.stack_size as u32,
        cf: program.cf.len() as u32,
        scratch_bytes: 16 * u32::from(program.scratch_elements),
        ..Stats::default()
    };
    for cf in &program.cf {
        match &cf.body {
            CfBody::Alu { groups, .. } => {
                stats.alu_clauses += 1;
                stats.alu_groups += groups.len() as u32;
                for g in groups {
                    stats.alu_slots += g.insts.len() as u32;
                    stats.literals += g.literals.len() as u32;
                }
            }
            CfBody::Fetch(fetches) => {
                stats.fetch_clauses += 1;
                stats.fetches += fetches.len() as u32;
            }
            _ => {}
        }
        if cf.op == CfOp::LoopStartDx10 {
            stats.loops += 1;
        }
    }
    stats.cycles = estimate_cycles(&stats);
    stats
}

/// Cycles of one 64-lane wavefront, statically: a group or a fetch issues in
/// four cycles, and a CF instruction costs what sb's heuristics say AMD's documents say, about
/// 40 groups. Loops count once.
pub fn estimate_cycles(stats: &Stats) -> u64 {
    const CYCLES_PER_GROUP: u64 = 4;
    const GROUPS_PER_CF: u64 = 40;
    CYCLES_PER_GROUP
        * (stats.alu_groups as u64 + stats.fetches as u64 + GROUPS_PER_CF * stats.cf as u64)
}
