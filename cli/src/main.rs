//! `shrew`: the command-line front of the shrew shader compiler.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use shrew_engine::ir::{Shader, Stage};
use shrew_engine::text;
use shrew_frontend::glsl::{glslang_stage_name, stage_for_extension};
use shrew_frontend::{LoadError, LoadOptions};
use shrew_targets::Target;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod compile;
mod corpus;
mod fuzz;
mod ops;
mod opt;
mod piglit;
mod reduce;
mod rules;
mod run;
mod search;

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
    /// Print a shader of any kind as IR text in canonical form, verified (the way to see what a
    /// GLSL, SPIR-V or WGSL shader translates to); `--write` formats a `.shrew` file in place.
    Fmt {
        #[command(flatten)]
        shader: ShaderArgs,
        /// Rewrite the file in place instead of printing it (`.shrew` IR text files only).
        #[arg(long)]
        write: bool,
    },
    /// Check a shader: exit 0 when it translates to valid IR, print located errors otherwise.
    Verify(ShaderArgs),
    /// Execute a shader on the reference interpreter and print its outputs per invocation.
    Run(run::RunArgs),
    /// Optimize a shader with a pipeline of passes and print the result.
    Opt(opt::OptArgs),
    /// List the rule sets and their rules.
    Rules(rules::RulesArgs),
    /// List the passes a pipeline may name, and the default pipeline.
    Passes,
    /// List the targets `--target` takes, and what each compiles for.
    Targets,
    /// Run piglit `.shader_test` files on the reference interpreter or a GPU's emulator.
    ///
    /// With a Gen `--target` (gen7, gen75, gen8, gen9) the fragment shaders, and on Gen8 and
    /// later the vertex shaders, are compiled and run on that generation's emulator; with an
    /// R600 one (r600, r700, evergreen, cayman) both stages are, on that chip's emulator.
    Piglit(piglit::PiglitArgs),
    /// Translate every shader stage found under the paths and report per stage.
    ///
    /// With a Gen or R600 `--target`, the stages its backend takes are also compiled, and the
    /// report gives their kernels' statistics.
    Corpus(corpus::CorpusArgs),
    /// Search mid-end pipelines for a corpus and a target: random, greedy, beam and
    /// evolutionary searches of the registered passes and fixpoint groups, every kernel
    /// measured through the target and checked on its emulator against the interpreter, the
    /// cost relative to the default pipeline per shader (geometric means).
    Search(search::SearchArgs),
    /// Print a saved search's summary (`shrew search --output`), or compare two saved searches
    /// strategy by strategy.
    Report(search::ReportArgs),
    /// Find the first transformation (a pass's change or a rule's firing) of a pipeline after
    /// which a shader's kernels on a target fail their check, and print the IR before and
    /// after it.
    Bisect(search::BisectArgs),
    /// Compile a shader for a GPU: assembly and shader-db statistics. Gen takes fragment,
    /// vertex and compute shaders; R600 fragment and vertex shaders, and compute shaders on
    /// Evergreen and Cayman.
    Compile(compile::CompileArgs),
    /// Print the assembly of a native binary `shrew compile --binary` wrote.
    Disasm(compile::DisasmArgs),
    /// Random differential testing: random valid shaders on the interpreter against every
    /// target's emulator, the default and eqsat pipelines and random pass orders.
    Fuzz(fuzz::FuzzArgs),
    /// The op × target matrix: every ALU opcode at every bit size, and whether each target
    /// compiles it (natively or lowered) and runs it as the interpreter does, or why not.
    Ops(ops::OpsArgs),
    /// Shrink a failing shader file (`shrew fuzz --save` writes them) while its run keeps
    /// failing the same way: delta debugging over the IR.
    Reduce(reduce::ReduceArgs),
}

/// An error the CLI reports: already formatted with its location.
pub struct CliError(String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> CliError {
        CliError(e.to_string())
    }
}

fn passes() -> Result<(), CliError> {
    let registry = shrew_targets::generic().registry();
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

fn targets() -> Result<(), CliError> {
    let width = shrew_targets::all()
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for target in shrew_targets::all() {
        let name = target.name;
        out.push_str(&format!("{name:<width$}  {}\n", target.description));
    }
    emit(&out)
}

/// `--target`: every target's name.
pub fn target_parser() -> impl TypedValueParser<Value = &'static Target> {
    PossibleValuesParser::new(shrew_targets::names())
        .map(|name| shrew_targets::lookup(&name).expect("a listed target exists"))
}

/// `--target` of the commands that compile: the names of the targets with a backend.
pub fn backend_target_parser() -> impl TypedValueParser<Value = &'static Target> {
    PossibleValuesParser::new(shrew_targets::backend_names())
        .map(|name| shrew_targets::lookup(&name).expect("a listed target exists"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fmt { shader, write } => fmt(&shader, write),
        Command::Verify(shader) => shader.load().map(|_| ()),
        Command::Run(args) => run::run(&args),
        Command::Opt(args) => opt::opt(&args),
        Command::Rules(args) => rules::rules(&args),
        Command::Passes => passes(),
        Command::Targets => targets(),
        Command::Piglit(args) => piglit::piglit(&args),
        Command::Corpus(args) => corpus::corpus(&args),
        Command::Search(args) => search::search(&args),
        Command::Report(args) => search::report(&args),
        Command::Bisect(args) => search::bisect(&args),
        Command::Compile(args) => compile::compile(&args),
        Command::Disasm(args) => compile::disasm(&args),
        Command::Fuzz(args) => fuzz::fuzz(&args),
        Command::Ops(args) => ops::ops(&args),
        Command::Reduce(args) => reduce::reduce(&args),
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

/// The shader file of a command that reads one.
#[derive(Args)]
pub struct ShaderArgs {
    /// The shader: `.shrew` IR text, SPIR-V (`.spv`), WGSL (`.wgsl`), GLSL (`.vert` `.frag`
    /// `.comp` `.geom` `.tesc` `.tese`, or `.glsl` with `--stage`), or a piglit `.shader_test`
    /// (its fragment shader, or its `--stage` one).
    pub file: PathBuf,
    /// The stage of a `.glsl` file, or the shader of a `.shader_test` to read; other kinds of
    /// file say their stage, which must then be this one.
    #[arg(long, value_name = "STAGE", value_parser = stage_parser())]
    pub stage: Option<Stage>,
}

/// `--stage`: glslang's names of the stages (the GLSL file extensions).
fn stage_parser() -> impl TypedValueParser<Value = Stage> {
    PossibleValuesParser::new(Stage::ALL.map(glslang_stage_name))
        .try_map(|name| stage_for_extension(&name).ok_or("not a stage"))
}

impl ShaderArgs {
    /// Reads, translates and verifies the shader, with every error located.
    pub fn load(&self) -> Result<Shader, CliError> {
        let options = LoadOptions {
            stage: self.stage,
            ..LoadOptions::default()
        };
        shrew_frontend::load_file(&self.file, &options).map_err(|e| match e {
            LoadError::NoStage { .. } => {
                let names: Vec<&str> = Stage::ALL.map(glslang_stage_name).to_vec();
                CliError(format!("{e}: give it with --stage {}", names.join("|")))
            }
            e => CliError(e.to_string()),
        })
    }
}

fn fmt(shader: &ShaderArgs, write: bool) -> Result<(), CliError> {
    let path = &shader.file;
    if write && path.extension().is_none_or(|e| e != "shrew") {
        return Err(CliError(format!(
            "{}: --write rewrites .shrew IR text files only (it would replace this source by \
             its IR)",
            path.display()
        )));
    }
    let printed = text::print(&shader.load()?);
    if write {
        std::fs::write(path, printed)
            .map_err(|e| CliError(format!("{}: cannot write: {e}", path.display())))?;
    } else {
        emit(&printed)?;
    }
    Ok(())
}
