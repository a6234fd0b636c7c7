//! `shrew run`: executes a shader on the reference interpreter and prints what every invocation
//! produced, plus the final contents of SSBOs.

use crate::{CliError, emit};
use serde::Serialize;
use shrew_engine::interp::{self, Launch, Resources, RunResult};
use shrew_engine::ir::{Mode, Shader};
use std::collections::BTreeMap;
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

/// Splits `NAME=VALUES`, checking that NAME is a variable of one of the allowed modes.
fn assignment<'a>(
    shader: &Shader,
    arg: &'a str,
    flag: &str,
    modes: &[Mode],
) -> Result<(&'a str, &'a str), CliError> {
    let (name, values) = arg
        .split_once('=')
        .ok_or_else(|| CliError(format!("--{flag} {arg}: expected NAME=VALUES")))?;
    let name = name.trim_start_matches('@');
    let var = shader.find_variable(name).ok_or_else(|| {
        CliError(format!(
            "--{flag} {arg}: the shader has no variable @{name}"
        ))
    })?;
    let mode = shader.variable(var).mode;
    if !modes.contains(&mode) {
        let allowed: Vec<&str> = modes.iter().map(|m| m.name()).collect();
        return Err(CliError(format!(
            "--{flag} {arg}: @{name} is a {} variable, expected {}",
            mode.name(),
            allowed.join(" or ")
        )));
    }
    Ok((name, values))
}

/// The printable result of a run.
#[derive(Serialize)]
struct Report {
    invocations: Vec<InvocationReport>,
    /// Final contents of every SSBO variable.
    buffers: BTreeMap<String, String>,
    instructions: u64,
    alu_instructions: u64,
}

#[derive(Serialize)]
struct InvocationReport {
    index: usize,
    discarded: bool,
    helper: bool,
    outputs: BTreeMap<String, String>,
}

pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let shader = args.shader.load()?;
    let mut launch = Launch::invocations(args.invocations);
    launch.workgroups = args.workgroups;
    for arg in &args.inputs {
        let (name, values) = assignment(&shader, arg, "input", &[Mode::ShaderIn])?;
        let values = interp::parse_variable(&shader, name, values)?;
        if values.len() != 1 && values.len() != args.invocations {
            return Err(CliError(format!(
                "--input {arg}: {} values for {} invocations (give one, or one per invocation)",
                values.len(),
                args.invocations
            )));
        }
        launch.inputs.insert(name.to_string(), values);
    }
    let mut resources = match &args.resources {
        Some(path) => {
            let name = path.display();
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError(format!("{name}: cannot read: {e}")))?;
            serde_json::from_str::<Resources>(&text)
                .map_err(|e| CliError(format!("{name}: {e}")))?
        }
        None => Resources::default(),
    };
    let resource_modes = [Mode::Uniform, Mode::Ubo, Mode::Ssbo, Mode::PushConst];
    for arg in &args.uniforms {
        let (name, values) = assignment(&shader, arg, "uniform", &resource_modes)?;
        let values = interp::parse_variable(&shader, name, values)?;
        let [value] = values.as_slice() else {
            return Err(CliError(format!(
                "--uniform {arg}: a uniform has one value, not one per invocation"
            )));
        };
        resources.set_variable(&shader, name, value)?;
    }
    // SSBOs nobody filled start zeroed, so a compute shader can run with no arguments.
    for var in shader.variables.iter().filter(|v| v.mode == Mode::Ssbo) {
        resources.zero_variable(&shader, &var.name)?;
    }
    let result = interp::run(&shader, &launch, &mut resources)?;
    let report = report(&shader, &result, &resources)?;
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))
    } else {
        emit(&format_report(&report))
    }
}

fn report(shader: &Shader, result: &RunResult, resources: &Resources) -> Result<Report, CliError> {
    let mut invocations = Vec::new();
    for (index, inv) in result.invocations().enumerate() {
        let mut outputs = BTreeMap::new();
        for (name, comps) in inv.outputs() {
            outputs.insert(
                name.to_string(),
                interp::format_variable(shader, name, comps)?,
            );
        }
        invocations.push(InvocationReport {
            index,
            discarded: inv.discarded,
            helper: inv.helper,
            outputs,
        });
    }
    let mut buffers = BTreeMap::new();
    for var in shader.variables.iter().filter(|v| v.mode == Mode::Ssbo) {
        let comps = resources.variable(shader, &var.name)?;
        buffers.insert(
            var.name.clone(),
            interp::format_variable(shader, &var.name, &comps)?,
        );
    }
    Ok(Report {
        invocations,
        buffers,
        instructions: result.stats.instructions,
        alu_instructions: result.stats.alu,
    })
}

fn format_report(report: &Report) -> String {
    let mut out = String::new();
    for inv in &report.invocations {
        let state = match (inv.discarded, inv.helper) {
            (true, _) => " (discarded)",
            (false, true) => " (helper)",
            _ => "",
        };
        out.push_str(&format!("invocation {}{state}\n", inv.index));
        for (name, value) in &inv.outputs {
            out.push_str(&format!("    @{name} = {value}\n"));
        }
    }
    for (name, value) in &report.buffers {
        out.push_str(&format!("ssbo @{name} = {value}\n"));
    }
    out.push_str(&format!(
        "{} instructions executed ({} ALU)\n",
        report.instructions, report.alu_instructions
    ));
    out
}
