//! `shrew opt`: runs passes over a shader and prints the result.

use crate::{CliError, ShaderArgs, emit, target_parser};
use clap::Args;
use shrew_engine::passes::manager::{RunOptions, RunReport};
use shrew_engine::text;
use shrew_targets::{Pipeline, Target};

#[derive(Args)]
pub struct OptArgs {
    #[command(flatten)]
    shader: ShaderArgs,
    /// Passes to run (`shrew passes` lists them): names separated by commas, `(a,b)*` repeats a
    /// group until it changes nothing, `default` is the default pipeline, `none` runs nothing.
    #[arg(short, long, default_value = "default")]
    pipeline: String,
    /// The target to optimize for: its rule options and the costs `eqsat` extracts with.
    #[arg(long, value_parser = target_parser(), default_value = "generic")]
    target: &'static Target,
    #[command(flatten)]
    observe: ObserveArgs,
}

/// How a run of passes is watched: the options `opt` and `compile` share.
#[derive(Args)]
pub struct ObserveArgs {
    /// Print per pass how often it ran and changed the shader, its time and instruction delta,
    /// and how often each rule fired, to stderr (`compile`: and the kernel's statistics, which
    /// it prints anyway unless `--asm` or `--json` is given).
    #[arg(long)]
    pub stats: bool,
    /// Print the shader after every run of this pass (one the pipeline runs), to stderr
    /// (repeatable).
    #[arg(long, value_name = "PASS")]
    print_after: Vec<String>,
    /// Print the shader after every pass, to stderr.
    #[arg(long)]
    print_after_all: bool,
    /// Verify the shader after every pass, naming the pass that made it invalid.
    #[arg(long)]
    verify_each: bool,
    /// Make at most N transformations (rule firings and pass-level changes), then report the
    /// last one: bisect N to find a bad transformation.
    #[arg(long, value_name = "N")]
    bisect_limit: Option<u64>,
    /// Tag each instruction with the pass, and the rule (its text and file:line), that made it:
    /// `opt` prints the tags as comments, `compile` prints the assembly with each instruction's
    /// tag.
    #[arg(long)]
    pub provenance: bool,
}

impl ObserveArgs {
    /// The options of the run.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            print_after: self.print_after.clone(),
            print_after_all: self.print_after_all,
            verify_each: self.verify_each,
            bisect_limit: self.bisect_limit,
            provenance: self.provenance,
            ..Pipeline::quiet_options()
        }
    }

    /// Prints to stderr what the options asked for of `report` (the dumps, the bisect summary,
    /// the statistics) and, always, a note for each pass that stopped early.
    pub fn print(&self, report: &RunReport) {
        for (pass, dump) in &report.dumps {
            eprintln!("; after {pass}\n{dump}");
        }
        if let Some(limit) = self.bisect_limit {
            eprintln!(
                "bisect limit {limit}: {} transformations made{}",
                report.transformations,
                report
                    .last_transformation
                    .as_deref()
                    .map(|last| format!("; the last: {last}"))
                    .unwrap_or_default()
            );
        }
        if self.stats {
            eprint!("{}", format_stats(report));
        }
        for stop in &report.stopped_early {
            eprintln!("note: stopped early (the result is valid, only less optimized): {stop}");
        }
    }
}

pub fn opt(args: &OptArgs) -> Result<(), CliError> {
    let mut shader = args.shader.load()?;
    let mut pipeline = Pipeline::parse(&args.pipeline, args.target)?;
    pipeline.options = args.observe.options();
    let report = pipeline.run(&mut shader).map_err(CliError)?;
    args.observe.print(&report);
    emit(&text::print(&shader))
}

/// Per pass: runs, runs with progress, time and instruction delta; then per rule set, one line
/// per rule that fired: count, rule text, location.
fn format_stats(report: &RunReport) -> String {
    let mut out = String::new();
    for (name, stats) in &report.passes {
        out.push_str(&format!(
            "{name}: {} runs, {} with progress, {:.3} ms, {:+} instructions\n",
            stats.runs,
            stats.progress,
            stats.time.as_secs_f64() * 1e3,
            stats.instruction_delta
        ));
    }
    let firings = shrew_targets::pipeline::rule_firings(report);
    for (name, stats) in &report.rule_stats {
        let what = if name.starts_with("eqsat:") {
            "applications in the e-graph"
        } else {
            "rewrites"
        };
        out.push_str(&format!("{name}: {} {what}\n", stats.total()));
        for rule in firings.iter().filter(|r| &r.set == name) {
            let (count, text, location) = (rule.count, &rule.text, &rule.location);
            out.push_str(&format!("{count:>8}  {text}  ({location})\n"));
        }
    }
    out
}
