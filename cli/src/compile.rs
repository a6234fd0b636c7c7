//! `shrew compile`: runs the mid-end and a backend over a shader and prints the kernel's
//! assembly and statistics, or writes its native binary; `shrew disasm` prints a binary's
//! assembly again.

use crate::pipeline::{Hardware, Pipeline, Target, backend_targets};
use crate::r600_lowering::R600Lowering;
use crate::{CliError, ShaderArgs, emit};
use clap::Args;
use shrew_engine::ir::{Shader, Stage};
use shrew_gen::isa::Gen;
use shrew_r600::isa::Chip;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompileArgs {
    #[command(flatten)]
    shader: ShaderArgs,
    /// The hardware to compile for.
    #[arg(long, value_parser = backend_targets())]
    target: Target,
    /// Dispatch width: 8, 16 or 32 for fragment and compute shaders; vertex shaders run at 8.
    #[arg(long, default_value_t = 8)]
    simd: u8,
    /// The mid-end pipeline before the backend (the target's backend pipeline always follows it).
    #[arg(short, long, default_value = "default")]
    pipeline: String,
    /// Print the assembly.
    #[arg(long)]
    asm: bool,
    /// Print the statistics (the default when neither `--asm` nor `--json` is given).
    #[arg(long)]
    stats: bool,
    /// Print the statistics as JSON.
    #[arg(long)]
    json: bool,
    /// Write the native binary to this file: on Gen its uncompacted 16-byte instructions; on
    /// R600 a 12-byte header with what a driver programs beside the dwords (the chip, GPRs,
    /// stack and scratch sizes), then the dwords.
    #[arg(long)]
    binary: Option<PathBuf>,
}

#[derive(Args)]
pub struct DisasmArgs {
    /// A native binary, as `shrew compile --binary` writes it.
    file: PathBuf,
    /// The hardware it is for.
    #[arg(long, value_parser = backend_targets())]
    target: Target,
}

/// The R600-family chip of a target, if it is one.
pub fn chip_of(target: Target) -> Option<Chip> {
    match target.hardware()? {
        Hardware::R600(chip) => Some(chip),
        Hardware::Gen(_) => None,
    }
}

/// The Gen generation of a target, if it is one.
pub fn gen_of(target: Target) -> Option<Gen> {
    match target.hardware()? {
        Hardware::Gen(hw) => Some(hw),
        Hardware::R600(_) => None,
    }
}

/// The hardware of a target `backend_targets` accepted.
fn hardware(target: Target) -> Result<Hardware, CliError> {
    target
        .hardware()
        .ok_or_else(|| CliError(format!("`{target:?}` has no backend")))
}

pub fn compile(args: &CompileArgs) -> Result<(), CliError> {
    let target = args.target;
    let mut shader = args.shader.load()?;
    Pipeline::parse(&args.pipeline, target)?
        .run(&mut shader)
        .map_err(CliError)?;
    let hw = match hardware(target)? {
        Hardware::R600(chip) => return compile_r600(args, &shader, chip),
        Hardware::Gen(hw) => hw,
    };
    Pipeline::parse(&target.backend_pipeline(), target)?
        .run(&mut shader)
        .map_err(CliError)?;
    let kernel = match shader.stage {
        Stage::Vertex if args.simd != 8 => {
            return Err(CliError(format!(
                "{}: vertex shaders run at SIMD8",
                args.shader.file.display()
            )));
        }
        Stage::Vertex => shrew_gen::compile::compile_vertex(&shader, hw),
        Stage::Compute => shrew_gen::compile::compile_compute(&shader, hw, args.simd),
        _ => shrew_gen::compile::compile_fragment(&shader, hw, args.simd),
    }
    .map_err(|e| CliError(format!("{}: {e}", args.shader.file.display())))?;
    if let Some(path) = &args.binary {
        let bytes = shrew_gen::encoding::assemble(&kernel.insts, hw)
            .map_err(|e| CliError(format!("{}: {e}", args.shader.file.display())))?;
        std::fs::write(path, bytes).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    let mut out = String::new();
    if args.asm {
        out.push_str(&shrew_gen::disasm::listing(&kernel.insts, hw));
    }
    let s = &kernel.stats;
    if args.json {
        out.push_str(&serde_json::to_string(s).map_err(|e| CliError(e.to_string()))?);
        out.push('\n');
    } else if args.stats || !args.asm {
        out.push_str(&format!(
            "SIMD{} shader: {} instructions. {} loops. {} cycles. {}:{} spills:fills, {} sends\n",
            kernel.dispatch_width, s.instructions, s.loops, s.cycles, s.spills, s.fills, s.sends
        ));
    }
    emit(&out)
}

/// `shrew compile` for an R600-family chip.
fn compile_r600(args: &CompileArgs, shader: &Shader, chip: Chip) -> Result<(), CliError> {
    let (_, kernel) = R600Lowering::new(chip, args.target)?
        .compile(shader)
        .map_err(|e| CliError(format!("{}: {e}", args.shader.file.display())))?;
    if let Some(path) = &args.binary {
        std::fs::write(path, kernel.binary.to_file())
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    }
    let mut out = String::new();
    if args.asm {
        let listing = shrew_r600::disasm::listing(&kernel.binary)
            .map_err(|e| CliError(format!("internal error: {e}")))?;
        out.push_str(&listing);
    }
    let s = &kernel.stats;
    if args.json {
        out.push_str(&serde_json::to_string(s).map_err(|e| CliError(e.to_string()))?);
        out.push('\n');
    } else if args.stats || !args.asm {
        out.push_str(&format!(
            "shader: {} dw, {} gprs, {} stack, {} alu groups, {} alu slots, {} literals, {} cf, \
             {} alu clauses, {} fetch clauses, {} fetches, {} loops, {} cycles\n",
            s.dwords,
            s.gprs,
            s.stack,
            s.alu_groups,
            s.alu_slots,
            s.literals,
            s.cf,
            s.alu_clauses,
            s.fetch_clauses,
            s.fetches,
            s.loops,
            s.cycles
        ));
    }
    emit(&out)
}

pub fn disasm(args: &DisasmArgs) -> Result<(), CliError> {
    let bytes =
        std::fs::read(&args.file).map_err(|e| CliError(format!("{}: {e}", args.file.display())))?;
    match hardware(args.target)? {
        Hardware::R600(chip) => {
            let binary = shrew_r600::encoding::Binary::from_file(&bytes, chip)
                .map_err(|e| CliError(format!("{}: {e}", args.file.display())))?;
            let listing = shrew_r600::disasm::listing(&binary)
                .map_err(|e| CliError(format!("{}: {e}", args.file.display())))?;
            emit(&listing)
        }
        Hardware::Gen(hw) => {
            let insts = shrew_gen::encoding::disassemble_binary(&bytes, hw)
                .map_err(|e| CliError(format!("{}: {e}", args.file.display())))?;
            emit(&shrew_gen::disasm::listing(&insts, hw))
        }
    }
}
