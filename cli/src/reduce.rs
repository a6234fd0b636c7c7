//! `shrew reduce`: shrinks a failing shader file while it keeps failing the same way (the
//! reduction is `shrew_harness::reduce`).

use crate::{CliError, emit};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ReduceArgs {
    /// A `.shrew` file whose `// run:` lines say how it fails (as `shrew fuzz --save` writes
    /// them).
    pub file: PathBuf,
    /// Write the reduced file here instead of printing it.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// At most this many candidate shaders are run.
    #[arg(long, default_value_t = 2000)]
    pub tries: usize,
}

pub fn reduce(args: &ReduceArgs) -> Result<(), CliError> {
    let source = std::fs::read_to_string(&args.file)
        .map_err(|e| CliError(format!("{}: {e}", args.file.display())))?;
    let name = args.file.display().to_string();
    let reduced = shrew_harness::reduce::reduce_file(&source, &name, args.tries)?;
    eprintln!(
        "{}: {} instructions → {}, still failing on {} ({:?})",
        name, reduced.before, reduced.after, reduced.run, reduced.failure
    );
    match &args.output {
        Some(path) => std::fs::write(path, &reduced.text)
            .map_err(|e| CliError(format!("{}: {e}", path.display()))),
        None => emit(&reduced.text),
    }
}
