//! piglit's executable tests: the harness that runs `.shader_test` files on the reference
//! interpreter or on a target's emulator.
//!
//! - [`parse_shader_test`] reads a whole file: the shader sources through the front end
//!   ([`shrew_frontend::shader_test`]), the rest of `[require]`, and the `[test]` commands
//!   ([`Command`]).
//! - [`run_file`] runs one file: it compiles the stages through glslang and the front end,
//!   optimizes them, and executes the commands, every draw through the stages of the engine's
//!   draw contract ([`shrew_engine::draw`]).
//! - [`differential::run_on_target`] runs one shader on a target's emulator and on the
//!   interpreter with the same random inputs and compares what they compute (`shrew compile
//!   --check`, the target filetests' `// run:` lines).
//!
//! - [`search`] searches pipelines for a corpus ([`corpus`]) and a target, every kernel checked
//!   as above; [`bisect`] finds the transformation that makes a pipeline wrong.
//!
//! Why a crate of its own: running tests needs a rasterizer, textures, a framebuffer and
//! probes, none of which the front end (which reads shaders) or the backends (which the
//! executor drives through the draw contract, never the other way round) should carry.

pub mod batch;
pub mod bisect;
mod commands;
mod compute;
pub mod corpus;
pub mod differential;
pub mod execute;
pub mod fuzz;
pub mod fuzz_targets;
mod initializer;
pub mod interpreter;
pub mod op_matrix;
mod parse;
pub mod random_shader;
mod raster;
pub mod reduce;
mod run;
pub mod search;
mod textures;
pub mod vertex_data;

pub use commands::{Command, ExpectedColor, Probe, ProbeRegion, TestCommand, TextureImage};
pub use parse::{
    OtherRequirement, ParseError, Requirements, ShaderTest, TextSection, parse_shader_test,
};
pub use run::{Outcome, PANIC_HOOK, Status, run_file, run_file_through};
