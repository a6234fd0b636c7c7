//! The backend's straight line for one shader: lowering, copy propagation, register units,
//! packing into groups and clauses, register allocation, emission and encoding, and the
//! shader-db style statistics of the result.

use crate::copy_prop::{legalize_operands, propagate_copies};
use crate::emit::emit;
use crate::encoding::{Binary, EncodeError, assemble};
use crate::isa::{CfOp, Chip};
use crate::lower::{Interface, LowerError, lower};
use crate::pack::{PackError, pack};
use crate::program::{CfBody, Program};
use crate::regalloc::{AllocError, allocate};
use crate::units::form_units;
use shrew_engine::ir::{Shader, Stage};

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
}

/// Compiles a fragment or vertex shader (after the mid-end and the backend pipeline) for
/// `chip`.
pub fn compile(shader: &Shader, chip: Chip) -> Result<Kernel, CompileError> {
    let (mut lir, interface) = lower(shader, chip)?;
    propagate_copies(&mut lir, chip);
    legalize_operands(&mut lir, chip);
    let units = form_units(&mut lir);
    let packed = pack(&lir, &units, chip)?;
    let alloc = allocate(&packed, &lir, &units)?;
    let program =
        emit(&packed, &alloc, chip, shader.stage == Stage::Vertex).map_err(CompileError::Emit)?;
    let binary = assemble(&program)?;
    let stats = statistics(&program, &binary);
    Ok(Kernel {
        program,
        binary,
        interface,
        stats,
    })
}

/// The statistics of a compiled program.
pub fn statistics(program: &Program, binary: &Binary) -> Stats {
    let mut stats = Stats {
        dwords: binary.words.len() as u32,
        gprs: program.gprs as u32,
        stack: program.stack_size as u32,
        cf: program.cf.len() as u32,
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

/// Cycles of one 64-lane wavefront, statically (fact sheet B10): a group or a fetch issues in
/// four cycles, and a CF instruction costs what sb's heuristics say AMD's documents say, about
/// 40 groups. Loops count once.
pub fn estimate_cycles(stats: &Stats) -> u64 {
    const CYCLES_PER_GROUP: u64 = 4;
    const GROUPS_PER_CF: u64 = 40;
    CYCLES_PER_GROUP
        * (stats.alu_groups as u64 + stats.fetches as u64 + GROUPS_PER_CF * stats.cf as u64)
}
