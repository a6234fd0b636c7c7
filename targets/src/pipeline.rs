//! Pipelines as users write them (`-p/--pipeline`), for a target: parsed over every pass
//! there is for it and run by the engine's pass manager ([`shrew_engine::passes::manager`]),
//! the result verified.

use crate::Target;
use shrew_engine::egraph::rules::BUILTINS;
use shrew_engine::ir::Shader;
use shrew_engine::passes::manager::{self, Registry, RunOptions, RunReport};
use shrew_engine::rewrite::{RuleSet, TargetOptions};
use shrew_engine::verify;

pub use manager::PipelineError;

/// A parsed pipeline with the passes it names and how to run it.
pub struct Pipeline {
    registry: Registry,
    pipeline: manager::Pipeline,
    pub options: RunOptions,
}

impl Pipeline {
    pub fn parse(spec: &str, target: &Target) -> Result<Pipeline, PipelineError> {
        Pipeline::parse_with_options(spec, target, target.options())
    }

    /// [`Pipeline::parse`] with the passes made for `options` rather than the target's own.
    pub fn parse_with_options(
        spec: &str,
        target: &Target,
        options: TargetOptions,
    ) -> Result<Pipeline, PipelineError> {
        Pipeline::parse_in(spec, shrew_rules::registry(&options, target.rule_sets()))
    }

    /// A pipeline over the passes of `registry` (the target's own with more, see
    /// [`Registry::with`]).
    pub fn parse_in(spec: &str, registry: Registry) -> Result<Pipeline, PipelineError> {
        let pipeline = manager::Pipeline::parse(spec, &registry)?;
        Ok(Pipeline {
            registry,
            pipeline,
            options: Pipeline::quiet_options(),
        })
    }

    /// Options that observe nothing (the result is still verified once, at the end).
    pub fn quiet_options() -> RunOptions {
        RunOptions {
            verify_each: false,
            ..RunOptions::default()
        }
    }

    /// Runs the pipeline; the result is verified even without `verify_each`.
    pub fn run(&self, shader: &mut Shader) -> Result<RunReport, String> {
        self.run_with(shader, &self.options)
    }

    /// Runs the pipeline as part of a longer compile, after passes that made
    /// `transformations`: with what is left of `options`' bisect limit, printing after the
    /// passes of `options` this pipeline runs.
    pub fn run_after(
        &self,
        shader: &mut Shader,
        options: &RunOptions,
        transformations: u64,
    ) -> Result<RunReport, String> {
        let options = options.after(transformations, |name| self.runs_pass(name));
        self.run_with(shader, &options)
    }

    /// Whether the pipeline runs the pass called `name`.
    pub fn runs_pass(&self, name: &str) -> bool {
        self.pipeline.runs_pass(&self.registry, name)
    }

    fn run_with(&self, shader: &mut Shader, options: &RunOptions) -> Result<RunReport, String> {
        let report = manager::run(&self.pipeline, &self.registry, shader, options)
            .map_err(|e| e.to_string())?;
        if !options.verify_each
            && !self.pipeline.is_empty()
            && let Err(errors) = verify::verify(shader)
        {
            let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            return Err(format!(
                "internal error: invalid IR after the pipeline (rerun with --verify-each to \
                 find the pass):\n{}",
                lines.join("\n")
            ));
        }
        Ok(report)
    }
}

/// Every rule set: the shared ones, then each backend's (once, however many targets share it).
pub fn all_rule_sets() -> Vec<&'static RuleSet> {
    let mut sets: Vec<&'static RuleSet> = shrew_rules::SETS.to_vec();
    for target in crate::all() {
        for set in target.rule_sets() {
            if !sets.iter().any(|s| std::ptr::eq(*s, *set)) {
                sets.push(set);
            }
        }
    }
    sets
}

/// The rule set called `name`, shared or a backend's.
pub fn rule_set(name: &str) -> Option<&'static RuleSet> {
    all_rule_sets().into_iter().find(|s| s.name == name)
}

/// One rule's firings in a run: in which rule set (`eqsat:` before the name for its
/// applications in the e-graph), the rule's text and `file:line` (a built-in e-graph rewrite:
/// its name and what it does), and how many times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleFirings {
    pub set: String,
    pub text: String,
    pub location: String,
    pub count: u64,
}

/// Every rule that fired in a run, set by set, in each set's order.
pub fn rule_firings(report: &RunReport) -> Vec<RuleFirings> {
    let mut out = Vec::new();
    for (name, stats) in &report.rule_stats {
        // What each counted rule is: its text and location, or a built-in's description.
        let rules: Vec<(String, String)> = if name == "eqsat:built-in" {
            BUILTINS
                .iter()
                .map(|(name, what)| (name.to_string(), what.to_string()))
                .collect()
        } else {
            let set_name = name.strip_prefix("eqsat:").unwrap_or(name);
            let Some(set) = rule_set(set_name) else {
                continue;
            };
            set.rules()
                .map(|(_, rule)| (rule.text.to_string(), rule.location()))
                .collect()
        };
        for ((text, location), &count) in rules.into_iter().zip(&stats.fired) {
            if count > 0 {
                out.push(RuleFirings {
                    set: name.clone(),
                    text,
                    location,
                    count,
                });
            }
        }
    }
    out
}
