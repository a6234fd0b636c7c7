//! `shrew ops`: the op × target matrix (`shrew_harness::op_matrix`) as a table, then the
//! reason for every entry that does not work.

use crate::{CliError, emit};
use rayon::prelude::*;
use shrew_harness::op_matrix::{self, Support};
use shrew_targets::Target;

#[derive(clap::Args)]
pub struct OpsArgs {
    /// A target to probe (repeat it; every target with a backend when none is given).
    #[arg(long = "target", value_parser = crate::backend_target_parser())]
    pub targets: Vec<&'static Target>,
    /// Only the opcodes whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

pub fn ops(args: &OpsArgs) -> Result<(), CliError> {
    let targets: Vec<&'static Target> = if args.targets.is_empty() {
        shrew_targets::all()
            .iter()
            .filter(|t| t.has_backend())
            .collect()
    } else {
        args.targets.clone()
    };
    let entries: Vec<_> = op_matrix::entries()
        .into_iter()
        .filter(|(op, _)| args.only.as_ref().is_none_or(|s| op.name().contains(s)))
        .collect();
    let rows: Vec<Vec<Support>> = entries
        .par_iter()
        .map(|&(op, bits)| {
            targets
                .iter()
                .map(|&t| op_matrix::support(t, op, bits))
                .collect()
        })
        .collect();
    let mut out = format!("{:<24}", "opcode");
    for target in &targets {
        out += &format!(" {:>9}", target.name);
    }
    out.push('\n');
    let name = |op: shrew_engine::ops::AluOp, bits: u8| match bits {
        0 => op.name().to_string(),
        bits => format!("{}@{bits}", op.name()),
    };
    let mut reasons = String::new();
    let mut working = vec![0usize; targets.len()];
    for (&(op, bits), row) in entries.iter().zip(&rows) {
        out += &format!("{:<24}", name(op, bits));
        for (i, support) in row.iter().enumerate() {
            out += &format!(" {:>9}", support.word());
            if let Some(why) = support.reason() {
                reasons += &format!("{} on {}: {why}\n", name(op, bits), targets[i].name);
            } else {
                working[i] += 1;
            }
        }
        out.push('\n');
    }
    out += &format!("{:<24}", "works");
    for count in working {
        out += &format!(" {:>9}", format!("{count}/{}", entries.len()));
    }
    out.push_str("\n\n");
    out.push_str(&reasons);
    emit(&out)
}
