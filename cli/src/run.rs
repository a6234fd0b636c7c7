//! `shrew run`: executes a shader on the reference interpreter and prints what every invocation
//! produced, plus the final contents of SSBOs.

use crate::{CliError, emit};
use shrew_engine::interp::Resources;
use shrew_harness::execute;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub shader: crate::ShaderArgs,
    /// A `shader_in` variable: `NAME=VALUES` for every invocation, or `NAME=V1;V2;...` one value
    /// per invocation. Components are comma-separated (`uv=0.5,0.25`); one literal fills all.
    #[arg(long = "input", value_name = "NAME=VALUES")]
    pub inputs: Vec<String>,
    /// A `uniform`, `ubo`, `ssbo` or `push_const` variable: `NAME=VALUES`.
    #[arg(long = "uniform", value_name = "NAME=VALUES")]
    pub uniforms: Vec<String>,
    /// A JSON file of resources (buffers by binding, textures, samplers, images) to start from;
    /// `--uniform` values are applied on top. Its shape is `interp::Resources` serialized.
    #[arg(long, value_name = "FILE.json")]
    pub resources: Option<PathBuf>,
    /// Invocations of vertex and fragment shaders (fragment: laid out in 2×2 quads).
    #[arg(long, default_value_t = 1)]
    pub invocations: usize,
    /// Workgroups of a compute shader, `X,Y,Z`.
    #[arg(long, default_value = "1,1,1", value_parser = parse_workgroups)]
    pub workgroups: [u32; 3],
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn parse_workgroups(text: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = text.split(',').collect();
    let numbers: Result<Vec<u32>, _> = parts.iter().map(|p| p.trim().parse::<u32>()).collect();
    match numbers {
        Ok(n) if n.len() == 3 && n.iter().all(|&x| x > 0) => Ok([n[0], n[1], n[2]]),
        _ => Err(format!(
            "expected three positive integers X,Y,Z, found '{text}'"
        )),
    }
}

pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let shader = args.shader.load()?;
    let resources = match &args.resources {
        Some(path) => {
            let name = path.display();
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError(format!("{name}: cannot read: {e}")))?;
            serde_json::from_str::<Resources>(&text)
                .map_err(|e| CliError(format!("{name}: {e}")))?
        }
        None => Resources::default(),
    };
    let request = execute::Request {
        invocations: args.invocations,
        workgroups: args.workgroups,
        inputs: args.inputs.clone(),
        uniforms: args.uniforms.clone(),
        resources,
    };
    let report = execute::run(&shader, &request)?;
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))
    } else {
        emit(&report.text())
    }
}
