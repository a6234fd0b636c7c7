//! The shrew engine: the IR ([`ir`]), its text format ([`text`]), the verifier ([`verify`]),
//! the reference interpreter ([`interp`]), analyses ([`cfg`], [`uses`]), the passes with their
//! pipeline ([`passes`]), and the out-of-SSA translation the backends start from
//! ([`out_of_ssa`]). The e-graph joins it in a later issue.

pub mod cfg;
pub mod interp;
pub mod ir;
pub mod out_of_ssa;
pub mod passes;
pub mod rewrite;
pub mod rng;
pub mod text;
pub mod uses;
pub mod verify;

pub use shrew_ops as ops;
