//! AMD R600–Cayman backend. For now: the target description the mid-end optimizes for (options
//! and the cost model of extraction); VLIW packing, clauses, register allocation, assembly and
//! the emulator arrive with the R600 backend issue.

mod cost;
pub mod disasm;
pub mod emu;
pub mod encoding;
pub mod isa;
pub mod program;
pub mod texture;

pub use cost::R600Cost;

use shrew_engine::rewrite::{CostOptions, Model, TargetOptions};
use std::sync::Arc;

/// The mid-end options for Evergreen: MULADD fuses multiply-adds; there is no `pow` nor
/// divide, which become LOG/MUL/EXP and RECIP/MUL.
pub fn target_options() -> TargetOptions {
    TargetOptions {
        fuse_ffma32: true,
        lower_fpow: true,
        lower_fdiv: true,
        costs: CostOptions {
            model: Model(Arc::new(R600Cost)),
            ..CostOptions::default()
        },
        ..TargetOptions::default()
    }
}
