//! `shrew opt`: runs passes over a shader and prints the result.

use crate::{CliError, emit, load};
use clap::Args;
use shrew_engine::passes::algebraic::{self, RuleStats};
use shrew_engine::rewrite::{RuleSet, TargetOptions};
use shrew_engine::{text, verify};
use std::path::PathBuf;

#[derive(Args)]
pub struct OptArgs {
    /// The shader (`.shrew` IR text).
    file: PathBuf,
    /// Passes to run, comma-separated. Each rule set is a pass (`shrew rules` lists them).
    #[arg(short, long, default_value = "algebraic")]
    pipeline: String,
    /// Print how often each rule fired, to stderr.
    #[arg(long)]
    stats: bool,
}

pub fn opt(args: &OptArgs) -> Result<(), CliError> {
    let mut shader = load(&args.file)?;
    let opts = TargetOptions::default();
    let mut report = String::new();
    for name in args
        .pipeline
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let set = shrew_rules::set(name).ok_or_else(|| {
            let known: Vec<&str> = shrew_rules::SETS.iter().map(|s| s.name).collect();
            CliError(format!(
                "unknown pass `{name}`; known: {}",
                known.join(", ")
            ))
        })?;
        let mut stats = RuleStats::default();
        algebraic::run(&mut shader, set, &opts, &[], &mut stats)?;
        verify::verify(&shader).map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            CliError(format!(
                "internal error: invalid IR after `{name}`:\n{}",
                lines.join("\n")
            ))
        })?;
        report.push_str(&format_stats(set, &stats));
    }
    if args.stats {
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
