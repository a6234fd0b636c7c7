//! Pipelines as the commands take them (`-p/--pipeline`): rule sets by name, comma-separated,
//! run in order; `none` runs nothing.

use crate::CliError;
use shrew_engine::ir::Shader;
use shrew_engine::passes::algebraic::{self, RuleStats};
use shrew_engine::rewrite::{RuleSet, TargetOptions};
use shrew_engine::verify;

/// A parsed pipeline.
pub struct Pipeline {
    pub sets: Vec<&'static RuleSet>,
}

impl Pipeline {
    pub fn parse(spec: &str) -> Result<Pipeline, CliError> {
        let mut sets = Vec::new();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "none" {
                continue;
            }
            let set = shrew_rules::set(name).ok_or_else(|| {
                let known: Vec<&str> = shrew_rules::SETS.iter().map(|s| s.name).collect();
                CliError(format!(
                    "unknown pass `{name}`; known: none, {}",
                    known.join(", ")
                ))
            })?;
            sets.push(set);
        }
        Ok(Pipeline { sets })
    }

    /// Runs every pass, verifying after each; returns each set's statistics.
    pub fn run(&self, shader: &mut Shader) -> Result<Vec<RuleStats>, String> {
        let opts = TargetOptions::default();
        let mut all = Vec::new();
        for set in &self.sets {
            let mut stats = RuleStats::default();
            algebraic::run(shader, set, &opts, &[], &mut stats).map_err(|e| e.to_string())?;
            verify::verify(shader).map_err(|errors| {
                let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                format!(
                    "internal error: invalid IR after `{}`:\n{}",
                    set.name,
                    lines.join("\n")
                )
            })?;
            all.push(stats);
        }
        Ok(all)
    }
}
