//! `shrew`: the command-line front of the shrew shader compiler.

use clap::{Parser, Subcommand};
use shrew_engine::ir::Shader;
use shrew_engine::{text, verify};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod opt;
mod rules;
mod run;

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
    /// Parse, verify and print a `.shrew` file in canonical form.
    Fmt {
        file: PathBuf,
        /// Rewrite the file in place instead of printing it.
        #[arg(long)]
        write: bool,
    },
    /// Check a `.shrew` file: exit 0 when it is valid, print located errors otherwise.
    Verify { file: PathBuf },
    /// Execute a shader on the reference interpreter and print its outputs per invocation.
    Run(run::RunArgs),
    /// Optimize a shader with a pipeline of passes and print the result.
    Opt(opt::OptArgs),
    /// List the rule sets and their rules.
    Rules(rules::RulesArgs),
}

/// An error the CLI reports: already formatted with its location.
pub struct CliError(String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> CliError {
        CliError(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fmt { file, write } => fmt(&file, write),
        Command::Verify { file } => load(&file).map(|_| ()),
        Command::Run(args) => run::run(&args),
        Command::Opt(args) => opt::opt(&args),
        Command::Rules(args) => rules::rules(&args),
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

/// Reads, parses and verifies a shader file, with every error located.
pub fn load(path: &Path) -> Result<Shader, CliError> {
    let name = path.display().to_string();
    let source =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{name}: cannot read: {e}")))?;
    let shader = text::parse(&source, &name)?;
    verify::verify(&shader).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("{name}: {e}")).collect();
        CliError(lines.join("\n"))
    })?;
    Ok(shader)
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
