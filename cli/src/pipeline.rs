//! Pipelines as the commands take them (`-p/--pipeline`), run by the engine's pass manager
//! ([`shrew_engine::passes::manager`]) over every pass there is ([`shrew_rules::registry`]).

use crate::CliError;
use crate::compile::gen_of;
use clap::ValueEnum;
use clap::builder::TypedValueParser;
use shrew_engine::ir::Shader;
use shrew_engine::passes::manager::{self, Registry, RunOptions, RunReport};
use shrew_engine::rewrite::{RuleSet, TargetOptions};
use shrew_engine::verify;
use shrew_gen::isa::Gen;
use shrew_r600::isa::Chip;

/// The target the mid-end optimizes for: its rule options and the cost model `eqsat` extracts
/// with. The Gen generations share one description, as do the R600 family's.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// Every operation native, each costing one per component.
    #[default]
    Generic,
    Gen7,
    Gen75,
    Gen8,
    Gen9,
    R600,
    R700,
    Evergreen,
    Cayman,
}

/// The hardware a backend compiles for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hardware {
    Gen(Gen),
    R600(Chip),
}

/// The targets with a backend, as `compile` and `disasm` take them: the help and the parser
/// list the same names.
pub fn backend_targets() -> impl TypedValueParser<Value = Target> {
    let names = Target::value_variants()
        .iter()
        .filter(|t| t.hardware().is_some())
        .filter_map(ValueEnum::to_possible_value);
    clap::builder::PossibleValuesParser::new(names)
        .map(|name: String| Target::from_str(&name, false).expect("a listed target parses"))
}

impl Target {
    /// The hardware the target's backend compiles for; `None` for `generic`, which has no
    /// backend.
    pub fn hardware(self) -> Option<Hardware> {
        Some(match self {
            Target::Generic => return None,
            Target::Gen7 => Hardware::Gen(Gen::Gen7),
            Target::Gen75 => Hardware::Gen(Gen::Gen75),
            Target::Gen8 => Hardware::Gen(Gen::Gen8),
            Target::Gen9 => Hardware::Gen(Gen::Gen9),
            Target::R600 => Hardware::R600(Chip::R600),
            Target::R700 => Hardware::R600(Chip::R700),
            Target::Evergreen => Hardware::R600(Chip::Evergreen),
            Target::Cayman => Hardware::R600(Chip::Cayman),
        })
    }

    /// The target backend's own rule sets.
    pub fn rule_sets(self) -> &'static [&'static RuleSet] {
        if gen_of(self).is_some() {
            shrew_gen::rules::RULE_SETS
        } else {
            &[]
        }
    }

    /// What runs between a mid-end pipeline and the backend: the shared backend pipeline, then
    /// the backend's own passes.
    pub fn backend_pipeline(self) -> String {
        if gen_of(self).is_some() {
            format!(
                "{},{}",
                shrew_rules::BACKEND_PIPELINE,
                shrew_gen::rules::BACKEND_PASSES
            )
        } else {
            shrew_rules::BACKEND_PIPELINE.to_string()
        }
    }

    pub fn options(self) -> TargetOptions {
        match self {
            Target::Generic => TargetOptions::default(),
            Target::Gen7 | Target::Gen75 | Target::Gen8 | Target::Gen9 => {
                shrew_gen::target_options()
            }
            Target::R600 => shrew_r600::target_options(Chip::R600),
            Target::R700 => shrew_r600::target_options(Chip::R700),
            Target::Evergreen => shrew_r600::target_options(Chip::Evergreen),
            Target::Cayman => shrew_r600::target_options(Chip::Cayman),
        }
    }
}

/// Every pass a pipeline may name, for `target`.
pub fn registry(target: Target) -> Registry {
    shrew_rules::registry(&target.options(), target.rule_sets())
}

/// A parsed pipeline with the passes it names and how to run it.
pub struct Pipeline {
    registry: Registry,
    pipeline: manager::Pipeline,
    pub options: RunOptions,
}

impl Pipeline {
    pub fn parse(spec: &str, target: Target) -> Result<Pipeline, CliError> {
        Pipeline::parse_with_options(spec, target, target.options())
    }

    /// [`Pipeline::parse`] with the passes made for `options` rather than the target's own.
    pub fn parse_with_options(
        spec: &str,
        target: Target,
        options: TargetOptions,
    ) -> Result<Pipeline, CliError> {
        let registry = shrew_rules::registry(&options, target.rule_sets());
        let pipeline = manager::Pipeline::parse(spec, &registry)?;
        Ok(Pipeline {
            registry,
            pipeline,
            options: RunOptions {
                verify_each: false,
                ..RunOptions::default()
            },
        })
    }

    /// Runs the pipeline; the result is verified even without `verify_each`.
    pub fn run(&self, shader: &mut Shader) -> Result<RunReport, String> {
        let report = manager::run(&self.pipeline, &self.registry, shader, &self.options)
            .map_err(|e| e.to_string())?;
        if !self.options.verify_each
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

/// Every rule set: the shared ones, then each backend's.
pub fn all_rule_sets() -> impl Iterator<Item = &'static RuleSet> {
    shrew_rules::SETS
        .iter()
        .chain(shrew_gen::rules::RULE_SETS)
        .copied()
}

/// The rule set called `name`, shared or a backend's.
pub fn rule_set(name: &str) -> Option<&'static RuleSet> {
    all_rule_sets().find(|s| s.name == name)
}
