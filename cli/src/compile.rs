//! `shrew compile`: runs the mid-end and a backend over a shader and prints the kernel's
//! assembly and statistics, or writes its native binary, and with `--check` compares the kernel
//! on the target's emulator with the interpreter; `shrew disasm` prints a binary's assembly
//! again.

use crate::opt::ObserveArgs;
use crate::{CliError, ShaderArgs, backend_target_parser, emit};
use clap::Args;
use shrew_harness::differential::{Run, run_on_target};
use shrew_targets::{Target, statistics_json};
use std::path::PathBuf;

#[derive(Args)]
pub struct CompileArgs {
    #[command(flatten)]
    shader: ShaderArgs,
    /// The hardware to compile for.
    #[arg(long, value_parser = backend_target_parser())]
    target: &'static Target,
    /// Dispatch width on Gen: 8 (the default), 16 or 32 for fragment and compute shaders;
    /// vertex shaders run at 8. R600 chips have no choice.
    #[arg(long)]
    simd: Option<u8>,
    /// The mid-end pipeline before the backend (the target's backend pipeline always follows it).
    #[arg(short, long, default_value = "default")]
    pipeline: String,
    /// Print the assembly after the statistics.
    #[arg(long)]
    asm: bool,
    /// Print the statistics as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    observe: ObserveArgs,
    /// Write the native binary to this file: on Gen its uncompacted 16-byte instructions; on
    /// R600 a 12-byte header with what a driver programs beside the dwords (the chip, GPRs,
    /// stack and scratch sizes), then the dwords.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// Also run the kernel on the target's emulator and the original shader on the reference
    /// interpreter, with the same random inputs, and compare them: a fragment shader over three
    /// triangles of 8x4 pixels, a vertex shader over 70 vertices, a compute shader over
    /// `--workgroups`; fails where they differ.
    #[arg(long)]
    check: bool,
    /// How far 32-bit results may differ under `--check`, relative to the larger magnitude.
    #[arg(long, default_value_t = 1e-4, requires = "check")]
    tolerance: f32,
    /// Workgroups of a compute shader under `--check`, `X,Y,Z`.
    #[arg(long, default_value = "1,1,1", value_parser = crate::run::parse_workgroups, requires = "check")]
    workgroups: [u32; 3],
}

#[derive(Args)]
pub struct DisasmArgs {
    /// A native binary, as `shrew compile --binary` writes it.
    file: PathBuf,
    /// The hardware it is for.
    #[arg(long, value_parser = backend_target_parser())]
    target: &'static Target,
}

pub fn compile(args: &CompileArgs) -> Result<(), CliError> {
    let target = args.target;
    let file = args.shader.file.display();
    let mut shader = args.shader.load()?;
    let original = args.check.then(|| shader.clone());
    let (kernel, report) = target
        .compile_observed(
            &args.pipeline,
            &mut shader,
            args.simd,
            &args.observe.options(),
        )
        .map_err(|e| CliError(format!("{file}: {e}")))?;
    args.observe.print(&report);
    if let Some(path) = &args.binary {
        let bytes = kernel
            .binary()
            .map_err(|e| CliError(format!("{file}: {e}")))?;
        std::fs::write(path, bytes).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    let mut out = String::new();
    if args.json {
        out.push_str(&statistics_json(kernel.width(), &kernel.statistics()).to_string());
    } else {
        out.push_str(&kernel.statistics_line());
    }
    out.push('\n');
    if args.asm || args.observe.provenance {
        out.push_str(&kernel.listing().map_err(CliError)?);
    }
    if let Some(original) = original {
        let run = Run {
            target,
            width: args.simd,
            mid_end: args.pipeline.clone(),
            tolerance: args.tolerance,
            workgroups: args.workgroups,
        };
        let agreement =
            run_on_target(&original, &run).map_err(|e| CliError(format!("{file}: {e}")))?;
        out.push_str(&format!("{agreement}\n"));
    }
    emit(&out)
}

pub fn disasm(args: &DisasmArgs) -> Result<(), CliError> {
    let file = args.file.display();
    let bytes = std::fs::read(&args.file).map_err(|e| CliError(format!("{file}: {e}")))?;
    let listing = args
        .target
        .backend()?
        .decode(&bytes)
        .map_err(|e| CliError(format!("{file}: {e}")))?;
    emit(&listing)
}
