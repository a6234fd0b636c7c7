//! Pipelines as the commands take them (`-p/--pipeline`), run by the engine's pass manager
//! ([`shrew_engine::passes::manager`]) over every pass there is ([`shrew_rules::registry`]).

use crate::CliError;
use shrew_engine::ir::Shader;
use shrew_engine::passes::manager::{self, Registry, RunOptions, RunReport};
use shrew_engine::rewrite::TargetOptions;
use shrew_engine::verify;

/// Every pass a pipeline may name.
pub fn registry() -> Registry {
    shrew_rules::registry(&TargetOptions::default())
}

/// A parsed pipeline with the passes it names and how to run it.
pub struct Pipeline {
    registry: Registry,
    pipeline: manager::Pipeline,
    pub options: RunOptions,
}

impl Pipeline {
    pub fn parse(spec: &str) -> Result<Pipeline, CliError> {
        let registry = registry();
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
