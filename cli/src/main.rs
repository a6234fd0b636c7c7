//! `shrew`: the command-line front of the shrew shader compiler.

use clap::{Parser, Subcommand};
use shrew_engine::ir::Shader;
use shrew_engine::text;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod compile;
mod corpus;
mod gen_fragments;
mod opt;
mod piglit;
mod pipeline;
mod r600_fragments;
mod r600_lowering;
mod rules;
mod run;
mod varyings;

#[derive(Parser)]
#[command(
    name = "shrew",
    version,
    about = "A shader compiler mid-end and back-end built on declarative rewrite rules"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load a shader (any kind), verify it and print it as IR text in canonical form.
    Fmt {
        file: PathBuf,
        /// Rewrite the file in place instead of printing it.
        #[arg(long)]
        write: bool,
    },
    /// Check a shader: exit 0 when it translates to valid IR, print located errors otherwise.
    Verify { file: PathBuf },
    /// Execute a shader on the reference interpreter and print its outputs per invocation.
    Run(run::RunArgs),
    /// Optimize a shader with a pipeline of passes and print the result.
    Opt(opt::OptArgs),
    /// List the rule sets and their rules.
    Rules(rules::RulesArgs),
    /// List the passes a pipeline may name, and the default pipeline.
    Passes,
    /// Run piglit `.shader_test` files on the reference interpreter.
    Piglit(piglit::PiglitArgs),
    /// Translate every shader stage found under the paths and report per stage.
    Corpus(corpus::CorpusArgs),
    /// Compile a shader for a GPU: assembly and shader-db statistics.
    Compile(compile::CompileArgs),
    /// Print the assembly of a native binary `shrew compile --binary` wrote.
    Disasm(compile::DisasmArgs),
}

/// An error the CLI reports: already formatted with its location.
pub struct CliError(String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> CliError {
        CliError(e.to_string())
    }
}

fn passes() -> Result<(), CliError> {
    let registry = pipeline::registry(pipeline::Target::Generic);
    let width = registry.passes().map(|p| p.name().len()).max().unwrap_or(0);
    let mut out = String::new();
    for pass in registry.passes() {
        out.push_str(&format!(
            "{:<width$}  {}\n",
            pass.name(),
            pass.description()
        ));
    }
    out.push_str(&format!("\ndefault: {}\n", registry.default_pipeline()));
    emit(&out)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fmt { file, write } => fmt(&file, write),
        Command::Verify { file } => load(&file).map(|_| ()),
        Command::Run(args) => run::run(&args),
        Command::Opt(args) => opt::opt(&args),
        Command::Rules(args) => rules::rules(&args),
        Command::Passes => passes(),
        Command::Piglit(args) => piglit::piglit(&args),
        Command::Corpus(args) => corpus::corpus(&args),
        Command::Compile(args) => compile::compile(&args),
        Command::Disasm(args) => compile::disasm(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError(message)) => {
            eprintln!("{}", message.trim_end());
            ExitCode::FAILURE
        }
    }
}

/// Writes a command's output to stdout. A reader that went away (`shrew rules | head`) is not an
/// error: the output is simply no longer wanted.
pub fn emit(text: &str) -> Result<(), CliError> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError(format!("cannot write the output: {e}")))
        }
        _ => Ok(()),
    }
}

/// Reads, translates and verifies a shader file of any kind the front ends read, with every
/// error located.
pub fn load(path: &Path) -> Result<Shader, CliError> {
    shrew_frontend::load_file(path, &shrew_frontend::LoadOptions::default())
        .map_err(|e| CliError(e.to_string()))
}

fn fmt(path: &Path, write: bool) -> Result<(), CliError> {
    let printed = text::print(&load(path)?);
    if write {
        std::fs::write(path, printed)
            .map_err(|e| CliError(format!("{}: cannot write: {e}", path.display())))?;
    } else {
        emit(&printed)?;
    }
    Ok(())
}
