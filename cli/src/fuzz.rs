//! `shrew fuzz`: random differential testing (the campaign is `shrew_harness::fuzz`); prints
//! each finding as soon as its program has run, and saves it as a regression filetest.

use crate::{CliError, emit};
use shrew_harness::fuzz::{self, Campaign};
use shrew_targets::Target;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// The first program's seed (program i has seed SEED + i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How many programs.
    #[arg(long, default_value_t = 100)]
    pub programs: u64,
    /// Stop starting programs after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<f64>,
    /// A target whose emulator runs every program at every width (repeat it; every target
    /// with a backend when none is given).
    #[arg(long = "target", value_parser = crate::backend_target_parser())]
    pub targets: Vec<&'static Target>,
    /// Random pipelines of registered passes each program also runs through.
    #[arg(long, default_value_t = 2)]
    pub pipelines: usize,
    /// Statements per program.
    #[arg(long, default_value_t = 40)]
    pub statements: usize,
    /// Write each finding here as a target filetest (`seed-S-TARGET.shrew`).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Print one program (the one of `--seed`) as IR text instead of running anything.
    #[arg(long)]
    pub print: bool,
}

pub fn fuzz(args: &FuzzArgs) -> Result<(), CliError> {
    let mut campaign = Campaign::new(args.seed, args.programs);
    if !args.targets.is_empty() {
        campaign.targets = args.targets.clone();
    }
    if args.print {
        let shader = fuzz::program(args.seed, args.statements, &campaign.targets);
        return emit(&shrew_engine::text::print(&shader));
    }
    campaign.time_limit = args.seconds.map(Duration::from_secs_f64);
    campaign.random_pipelines = args.pipelines;
    campaign.statements = args.statements;
    let saved = std::sync::Mutex::new(Ok(()));
    let summary = fuzz::run_campaign(&campaign, |summary, findings| {
        for finding in findings {
            eprintln!("{}", describe(finding));
            if let Some(dir) = &args.save {
                let written = save(finding, dir);
                let mut saved = saved.lock().unwrap_or_else(|e| e.into_inner());
                if saved.is_ok() {
                    *saved = written;
                }
            }
        }
        if summary.programs % 50 == 0 {
            eprintln!(
                "{} programs, {} comparisons, {} findings",
                summary.programs,
                summary.comparisons,
                summary.findings.len() + findings.len()
            );
        }
    });
    saved.into_inner().unwrap_or_else(|e| e.into_inner())?;
    let mut out = String::new();
    for finding in &summary.findings {
        out.push_str(&describe(finding));
        out.push('\n');
    }
    out.push_str(&format!(
        "{} programs, {} comparisons ({} left out: opcodes, SSBO writes or shared memory a \
         target does not compile, stages its emulator does not run), {} findings\n",
        summary.programs,
        summary.comparisons,
        summary.skipped,
        summary.findings.len()
    ));
    emit(&out)?;
    if summary.findings.is_empty() {
        Ok(())
    } else {
        Err(CliError(format!(
            "{} programs disagree",
            summary.findings.len()
        )))
    }
}

/// A finding's first line, with its program's seed.
fn describe(finding: &fuzz::Finding) -> String {
    format!(
        "program {}: {}",
        finding.seed,
        finding.message.lines().next().unwrap_or("")
    )
}

/// Writes a finding into `dir` as a target filetest, `seed-S-RUN.shrew`.
fn save(finding: &fuzz::Finding, dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = format!(
        "seed-{}-{}.shrew",
        finding.seed,
        finding
            .run
            .describe()
            .replace([' ', ',', '(', ')', '*'], "_")
    );
    std::fs::write(dir.join(name), finding.regression_file())
}
