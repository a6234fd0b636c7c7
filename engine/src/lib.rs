//! The shrew engine: the IR ([`ir`]), its text format ([`text`]), the verifier ([`verify`]),
//! the reference interpreter ([`interp`]), analyses ([`cfg`], [`dominators`], [`liveness`],
//! [`uses`]), [`ssa_repair`], the passes with their pipeline ([`passes`]), equality saturation with
//! target-aware extraction ([`egraph`]), and the out-of-SSA translation and the structured
//! control-flow tree the backends start from ([`out_of_ssa`], [`structure`]), and the draw
//! contract between a rasterizer and the stages that run on the interpreter or an emulator
//! ([`draw`]), and [`deep`] for walks whose recursion follows the shader's nesting.

pub mod cfg;
pub mod deadline;
pub mod deep;
pub mod dominators;
pub mod draw;
pub mod egraph;
pub mod features;
pub mod interp;
pub mod ir;
pub mod liveness;
pub mod loops;
pub mod memory;
pub mod meter;
pub mod out_of_ssa;
pub mod passes;
pub mod provenance;
pub mod random_program;
pub mod rewrite;
pub mod rng;
pub mod ssa_repair;
pub mod structure;
pub mod text;
pub mod uses;
pub mod verify;

pub use shrew_ops as ops;
