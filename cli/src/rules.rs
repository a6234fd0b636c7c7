//! `shrew rules`: lists the rule sets and their rules.

use crate::{CliError, emit};
use clap::Args;
use serde::Serialize;

#[derive(Args)]
pub struct RulesArgs {
    /// Only this rule set.
    #[arg(long)]
    set: Option<String>,
    /// One JSON object per rule instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct RuleEntry<'a> {
    set: &'a str,
    group: &'a str,
    /// Index in the set: its priority, and the number `--stats` and bisection use.
    index: usize,
    text: &'a str,
    location: String,
    guard: Option<&'a str>,
    inexact: bool,
    /// Conditions on uses make the rule usable by the greedy matcher only.
    greedy_only: bool,
    /// One direction of an equality: the e-graph runs it, the greedy matcher does not.
    egraph_only: bool,
}

pub fn rules(args: &RulesArgs) -> Result<(), CliError> {
    let sets: Vec<_> = match &args.set {
        Some(name) => vec![
            crate::pipeline::rule_set(name)
                .ok_or_else(|| CliError(format!("unknown rule set `{name}`")))?,
        ],
        None => crate::pipeline::all_rule_sets().collect(),
    };
    let mut out = String::new();
    for set in sets {
        if !args.json {
            out.push_str(&format!(
                "# {} ({} rules): {}\n",
                set.name,
                set.len(),
                set.description
            ));
        }
        for (index, (group, rule)) in set.rules().enumerate() {
            let entry = RuleEntry {
                set: set.name,
                group: group.name,
                index,
                text: rule.text,
                location: rule.location(),
                guard: rule.guard,
                inexact: rule.inexact,
                greedy_only: rule.is_greedy_only(),
                egraph_only: rule.egraph_only,
            };
            if args.json {
                out.push_str(&serde_json::to_string(&entry)?);
                out.push('\n');
            } else {
                let engines = if entry.greedy_only {
                    "  [greedy only]"
                } else if entry.egraph_only {
                    "  [e-graph only]"
                } else {
                    ""
                };
                out.push_str(&format!(
                    "{:>5}  {:<8} {}  ({}){engines}\n",
                    index, group.name, rule.text, entry.location
                ));
            }
        }
    }
    emit(&out)
}
