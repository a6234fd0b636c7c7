//! `shrew opt`: runs passes over a shader and prints the result.

use crate::pipeline::Pipeline;
use crate::{CliError, emit, load};
use clap::Args;
use shrew_engine::passes::algebraic::RuleStats;
use shrew_engine::rewrite::RuleSet;
use shrew_engine::text;
use std::path::PathBuf;

#[derive(Args)]
pub struct OptArgs {
    /// The shader: `.shrew` IR text, `.spv`, `.wgsl` or GLSL (`.vert`, `.frag`, `.comp`, ...).
    file: PathBuf,
    /// Passes to run, comma-separated. Each rule set is a pass (`shrew rules` lists them);
    /// `none` runs nothing.
    #[arg(short, long, default_value = "algebraic")]
    pipeline: String,
    /// Print how often each rule fired, to stderr.
    #[arg(long)]
    stats: bool,
}

pub fn opt(args: &OptArgs) -> Result<(), CliError> {
    let mut shader = load(&args.file)?;
    let pipeline = Pipeline::parse(&args.pipeline)?;
    let stats = pipeline.run(&mut shader).map_err(CliError)?;
    if args.stats {
        let report: String = pipeline
            .sets
            .iter()
            .zip(&stats)
            .map(|(set, stats)| format_stats(set, stats))
            .collect();
        eprint!("{report}");
    }
    emit(&text::print(&shader))
}

/// One line per rule that fired: count, rule text, location.
fn format_stats(set: &RuleSet, stats: &RuleStats) -> String {
    let mut out = format!("{}: {} rewrites\n", set.name, stats.total());
    for ((_, rule), &count) in set.rules().zip(&stats.fired) {
        if count > 0 {
            out.push_str(&format!(
                "{count:>8}  {}  ({})\n",
                rule.text,
                rule.location()
            ));
        }
    }
    out
}
