//! One run of a shader on the reference interpreter, its inputs and uniforms given as text
//! (`NAME=VALUES`, as `shrew run` and the Python package take them), and what every invocation
//! produced, with the final contents of the SSBOs, as a report.

use serde::Serialize;
use shrew_engine::interp::{self, Launch, Resources, RunResult};
use shrew_engine::ir::{Mode, Shader};
use std::collections::BTreeMap;

/// What to run: how many invocations or workgroups, and the values of the variables.
#[derive(Clone, Debug)]
pub struct Request {
    /// Invocations of vertex and fragment shaders (fragment: laid out in 2×2 quads).
    pub invocations: usize,
    /// Workgroups of a compute shader.
    pub workgroups: [u32; 3],
    /// `shader_in` variables: `NAME=VALUES` for every invocation, or `NAME=V1;V2;...` one value
    /// per invocation.
    pub inputs: Vec<String>,
    /// `uniform`, `ubo`, `ssbo` or `push_const` variables: `NAME=VALUES`, applied over
    /// `resources`.
    pub uniforms: Vec<String>,
    pub resources: Resources,
}

impl Default for Request {
    fn default() -> Request {
        Request {
            invocations: 1,
            workgroups: [1, 1, 1],
            inputs: Vec::new(),
            uniforms: Vec::new(),
            resources: Resources::default(),
        }
    }
}

/// The result of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub invocations: Vec<InvocationReport>,
    /// Final contents of every SSBO variable.
    pub buffers: BTreeMap<String, String>,
    pub instructions: u64,
    pub alu_instructions: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct InvocationReport {
    pub index: usize,
    pub discarded: bool,
    pub helper: bool,
    pub outputs: BTreeMap<String, String>,
}

/// Runs `shader` as `request` says; errors name the argument at fault.
pub fn run(shader: &Shader, request: &Request) -> Result<Report, String> {
    let mut launch = Launch::invocations(request.invocations);
    launch.workgroups = request.workgroups;
    for arg in &request.inputs {
        let (name, values) = assignment(shader, arg, "input", &[Mode::ShaderIn])?;
        let values = interp::parse_variable(shader, name, values).map_err(|e| e.to_string())?;
        if values.len() != 1 && values.len() != request.invocations {
            return Err(format!(
                "--input {arg}: {} values for {} invocations (give one, or one per invocation)",
                values.len(),
                request.invocations
            ));
        }
        launch.inputs.insert(name.to_string(), values);
    }
    let mut resources = request.resources.clone();
    let resource_modes = [Mode::Uniform, Mode::Ubo, Mode::Ssbo, Mode::PushConst];
    for arg in &request.uniforms {
        let (name, values) = assignment(shader, arg, "uniform", &resource_modes)?;
        let values = interp::parse_variable(shader, name, values).map_err(|e| e.to_string())?;
        let [value] = values.as_slice() else {
            return Err(format!(
                "--uniform {arg}: a uniform has one value, not one per invocation"
            ));
        };
        resources
            .set_variable(shader, name, value)
            .map_err(|e| e.to_string())?;
    }
    // SSBOs nobody filled start zeroed, so a compute shader can run with no arguments.
    for var in shader.variables.iter().filter(|v| v.mode == Mode::Ssbo) {
        resources
            .zero_variable(shader, &var.name)
            .map_err(|e| e.to_string())?;
    }
    let result = interp::run(shader, &launch, &mut resources).map_err(|e| e.to_string())?;
    report(shader, &result, &resources).map_err(|e| e.to_string())
}

/// Splits `NAME=VALUES`, checking that NAME is a variable of one of the allowed modes.
fn assignment<'a>(
    shader: &Shader,
    arg: &'a str,
    flag: &str,
    modes: &[Mode],
) -> Result<(&'a str, &'a str), String> {
    let (name, values) = arg
        .split_once('=')
        .ok_or_else(|| format!("--{flag} {arg}: expected NAME=VALUES"))?;
    let name = name.trim_start_matches('@');
    let var = shader
        .find_variable(name)
        .ok_or_else(|| format!("--{flag} {arg}: the shader has no variable @{name}"))?;
    let mode = shader.variable(var).mode;
    if !modes.contains(&mode) {
        let allowed: Vec<&str> = modes.iter().map(|m| m.name()).collect();
        return Err(format!(
            "--{flag} {arg}: @{name} is a {} variable, expected {}",
            mode.name(),
            allowed.join(" or ")
        ));
    }
    Ok((name, values))
}

fn report(
    shader: &Shader,
    result: &RunResult,
    resources: &Resources,
) -> Result<Report, interp::InterpError> {
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

impl Report {
    /// The report as `shrew run` prints it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for inv in &self.invocations {
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
        for (name, value) in &self.buffers {
            out.push_str(&format!("ssbo @{name} = {value}\n"));
        }
        out.push_str(&format!(
            "{} instructions executed ({} ALU)\n",
            self.instructions, self.alu_instructions
        ));
        out
    }
}
