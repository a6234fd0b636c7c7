//! `shrew rules`: lists the rule sets and their rules, and verifies the rules a pattern selects.

use crate::{CliError, emit};
use clap::Args;
use serde::Serialize;
use shrew_engine::rewrite::check::verify_rule;
use shrew_engine::rewrite::{RuleInfo, RuleSet};

#[derive(Args)]
pub struct RulesArgs {
    /// Only this rule set.
    #[arg(long)]
    set: Option<String>,
    /// One JSON object per rule instead of text.
    #[arg(long)]
    json: bool,
    /// Verify the rules whose test name or text contains PATTERN, or whose `file:line` ends
    /// with it (`bitops.rs:42`), as their generated tests do (`cargo test -p CRATE TEST` runs
    /// the same check).
    #[arg(long, value_name = "PATTERN")]
    test: Option<String>,
}

#[derive(Serialize)]
struct RuleEntry<'a> {
    set: &'a str,
    group: &'a str,
    /// Index in the set: its priority, and the number `--stats` and bisection use.
    index: usize,
    /// The generated test, as `cargo test -p CRATE TEST` selects it.
    #[serde(rename = "crate")]
    crate_name: &'a str,
    test: String,
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
        Some(name) => vec![shrew_targets::pipeline::rule_set(name).ok_or_else(|| {
            let valid: Vec<&str> = shrew_targets::pipeline::all_rule_sets()
                .iter()
                .map(|s| s.name)
                .collect();
            CliError(format!(
                "unknown rule set `{name}`; the sets are {}",
                valid.join(", ")
            ))
        })?],
        None => shrew_targets::pipeline::all_rule_sets(),
    };
    if let Some(pattern) = &args.test {
        return verify(&sets, pattern);
    }
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
                crate_name: rule.crate_name(),
                test: rule.test_path(),
                text: rule.text,
                location: rule.location(),
                guard: rule.guard.as_ref().map(|g| g.text),
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
                    "{:>5}  {:<8} {}  ({}, test {}){engines}\n",
                    index, group.name, rule.text, entry.location, entry.test
                ));
            }
        }
    }
    emit(&out)
}

/// Verifies every rule of `sets` that `pattern` selects, printing a line per rule and each
/// counterexample; an error if one does not hold or none is selected.
fn verify(sets: &[&'static RuleSet], pattern: &str) -> Result<(), CliError> {
    let selected: Vec<&RuleInfo> = sets
        .iter()
        .flat_map(|set| set.rules().map(|(_, rule)| rule))
        .filter(|rule| {
            rule.test_path().contains(pattern)
                || rule.text.contains(pattern)
                || rule.location().ends_with(pattern)
        })
        .collect();
    if selected.is_empty() {
        return Err(CliError(format!(
            "no rule's test name or text contains `{pattern}`, nor does its file:line end with it \
             (`shrew rules` lists them)"
        )));
    }
    let mut out = String::new();
    let mut failed = 0;
    for rule in &selected {
        let test = format!("{} {}", rule.crate_name(), rule.test_path());
        match verify_rule(rule) {
            Ok(report) => {
                let note = report
                    .skipped
                    .map(|why| format!(" (not fully verified: {why})"))
                    .unwrap_or_default();
                out.push_str(&format!("ok      {test}: {} cases{note}\n", report.cases));
            }
            Err(counterexample) => {
                failed += 1;
                out.push_str(&format!("FAILED  {test}: {counterexample}\n"));
            }
        }
    }
    out.push_str(&format!(
        "{} rules verified, {failed} failed\n",
        selected.len() - failed
    ));
    emit(&out)?;
    if failed > 0 {
        return Err(CliError(format!("{failed} rules do not hold")));
    }
    Ok(())
}
