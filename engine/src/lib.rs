//! The shrew engine: the IR ([`ir`]), its text format ([`text`]), the verifier ([`verify`]) and
//! the reference interpreter ([`interp`]). Passes, analyses, the e-graph and the pipeline join
//! it in later issues.

pub mod cfg;
pub mod interp;
pub mod ir;
pub mod passes;
pub mod rewrite;
pub mod rng;
pub mod text;
pub mod uses;
pub mod verify;

pub use shrew_ops as ops;
