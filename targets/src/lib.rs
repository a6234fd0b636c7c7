//! The target interface: one door per target for the CLI, the tests and the research tools.
//!
//! [`lookup`] finds a target by name (`gen9`, `evergreen`, ...; [`all`] lists them). A target
//! knows the options its rules and cost model see, its rule sets and the pipeline between the
//! mid-end and its backend. A target with a backend prepares a [`Compiler`] once, which turns
//! the mid-end's output into [`Kernel`]s (choosing SIMD widths on Gen and the better of two
//! lowerings on R600 itself) and into the stages of an emulated draw; the backend also decodes
//! its binaries. A kernel gives its statistics under shader-db's names, its listing and its
//! binary. Everything that differs between targets lives behind these traits: callers never
//! match on a target.

mod amd_r600;
mod intel_gen;
pub mod pipeline;
mod varyings;

pub use pipeline::{Pipeline, PipelineError};

use shrew_engine::draw::DrawStages;
use shrew_engine::ir::{Shader, Stage};
use shrew_engine::passes::manager::{Registry, RunOptions, RunReport};
use shrew_engine::rewrite::{RuleSet, TargetOptions};

/// A target: a name, and the backend compiling for it if it has one.
pub struct Target {
    pub name: &'static str,
    /// One line for `shrew targets`.
    pub description: &'static str,
    backend: Option<&'static dyn Backend>,
}

/// Every target, the generic one first.
static TARGETS: [Target; 9] = [
    Target {
        name: "generic",
        description: "no backend: every operation native, each costing one per component",
        backend: None,
    },
    intel_gen::GEN7,
    intel_gen::GEN75,
    intel_gen::GEN8,
    intel_gen::GEN9,
    amd_r600::R600,
    amd_r600::R700,
    amd_r600::EVERGREEN,
    amd_r600::CAYMAN,
];

/// Every target, the generic one first.
pub fn all() -> &'static [Target] {
    &TARGETS
}

/// The target called `name`.
pub fn lookup(name: &str) -> Result<&'static Target, UnknownTarget> {
    TARGETS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| UnknownTarget(name.to_string()))
}

/// The generic target: what the mid-end optimizes for without a backend.
pub fn generic() -> &'static Target {
    &TARGETS[0]
}

/// A name [`lookup`] does not know.
#[derive(Debug, thiserror::Error)]
#[error("unknown target `{0}` (targets: {names})", names = names().join(", "))]
pub struct UnknownTarget(pub String);

/// The names of every target.
pub fn names() -> Vec<&'static str> {
    TARGETS.iter().map(|t| t.name).collect()
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        self.name == other.name
    }
}

impl Target {
    /// What the mid-end's rules and cost model see of the target.
    pub fn options(&self) -> TargetOptions {
        self.backend
            .map_or_else(TargetOptions::default, |b| b.options())
    }

    /// The backend's own rule sets (the shared ones are always there).
    pub fn rule_sets(&self) -> &'static [&'static RuleSet] {
        self.backend.map_or(&[], |b| b.rule_sets())
    }

    /// Every pass a pipeline may name for this target.
    pub fn registry(&self) -> Registry {
        shrew_rules::registry(&self.options(), self.rule_sets())
    }

    /// What runs between a mid-end pipeline and the backend: the lowerings the backend needs
    /// first, the shared backend pipeline, then the backend's own passes.
    pub fn backend_pipeline(&self) -> String {
        [
            self.backend.and_then(|b| b.first_passes()),
            Some(shrew_rules::BACKEND_PIPELINE),
            self.backend.and_then(|b| b.passes()),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(",")
    }

    /// The target's backend, or an error naming the targets that have one.
    pub fn backend(&self) -> Result<&'static dyn Backend, NoBackend> {
        self.backend.ok_or(NoBackend(self.name))
    }

    /// Every width a shader of `stage` may ask for: `None` (the backend's default) where it
    /// has no choice or no backend.
    pub fn widths(&self, stage: Stage) -> Vec<Option<u8>> {
        match self.backend.map_or(&[][..], |b| b.widths(stage)) {
            [] => vec![None],
            widths => widths.iter().map(|&w| Some(w)).collect(),
        }
    }

    /// Whether the target compiles shaders of `stage` (without a backend, the mid-end takes
    /// every stage).
    pub fn compiles(&self, stage: Stage) -> bool {
        self.backend.is_none_or(|b| b.compiles(stage))
    }

    /// Whether the target's emulator runs the shaders of `stage` it compiles (without a
    /// backend, the interpreter runs every stage).
    pub fn emulates(&self, stage: Stage) -> bool {
        self.backend.is_none_or(|b| b.emulates(stage))
    }

    /// Whether the target has a backend.
    pub fn has_backend(&self) -> bool {
        self.backend.is_some()
    }

    /// Prepares compiles for this target (its backend pipelines parsed once).
    pub fn compiler(&'static self) -> Result<Box<dyn Compiler>, CompileSetupError> {
        Ok(self.backend()?.compiler(self)?)
    }

    /// Runs the pipeline `mid_end` over `shader` and compiles the result at `width`, the whole
    /// observed by `options` as one run: one bisect limit over the mid-end, the backend
    /// pipeline and the machine passes, and `print_after` naming a pass of any of them.
    pub fn compile_observed(
        &'static self,
        mid_end: &str,
        shader: &mut Shader,
        width: Option<u8>,
        options: &RunOptions,
    ) -> Result<(Box<dyn Kernel>, RunReport), String> {
        let pipeline = Pipeline::parse(mid_end, self).map_err(|e| e.to_string())?;
        let compiler = self.compiler().map_err(|e| e.to_string())?;
        let mut report = pipeline.run_after(shader, options, 0)?;
        let kernel = compiler.compile_observed(shader, width, options, &mut report)?;
        let ran: Vec<&str> = report.passes.keys().map(String::as_str).collect();
        if let Some(missing) = options
            .print_after
            .iter()
            .find(|name| !ran.contains(&name.as_str()))
        {
            return Err(format!(
                "cannot print after `{missing}`: no pass of that name ran (passes that ran: {})",
                ran.join(", ")
            ));
        }
        Ok((kernel, report))
    }
}

/// A target without a backend asked to compile.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` has no backend (targets with one: {names})", names = backend_names().join(", "))]
pub struct NoBackend(pub &'static str);

/// The names of the targets with a backend.
pub fn backend_names() -> Vec<&'static str> {
    TARGETS
        .iter()
        .filter(|t| t.has_backend())
        .map(|t| t.name)
        .collect()
}

/// Why a [`Compiler`] could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum CompileSetupError {
    #[error(transparent)]
    NoBackend(#[from] NoBackend),
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
}

/// What a target's backend provides.
pub trait Backend: Sync {
    /// What the mid-end's rules and cost model see of the hardware.
    fn options(&self) -> TargetOptions;

    /// The backend's own rule sets.
    fn rule_sets(&self) -> &'static [&'static RuleSet] {
        &[]
    }

    /// Lowerings the backend needs before the shared backend pipeline, which a mid-end
    /// pipeline (`-p none`, a searched one) need not have run.
    fn first_passes(&self) -> Option<&'static str> {
        None
    }

    /// The backend's own passes, after the shared backend pipeline.
    fn passes(&self) -> Option<&'static str> {
        None
    }

    /// Whether the backend compiles shaders of `stage`.
    fn compiles(&self, stage: Stage) -> bool;

    /// Whether the backend's emulator runs the shaders of `stage` it compiles.
    fn emulates(&self, stage: Stage) -> bool {
        self.compiles(stage)
    }

    /// The dispatch widths a shader of `stage` compiles at, where the backend has a choice
    /// (empty: one way, `None` as the width).
    fn widths(&self, _stage: Stage) -> &'static [u8] {
        &[]
    }

    /// Prepares compiles for `target` (whose pipelines name this backend's passes).
    fn compiler(&self, target: &'static Target) -> Result<Box<dyn Compiler>, PipelineError>;

    /// The listing of a binary a [`Kernel::binary`] wrote.
    fn decode(&self, bytes: &[u8]) -> Result<String, String>;
}

/// A backend ready to compile shaders after the mid-end.
pub trait Compiler: Sync {
    /// Lowers `shader` (the mid-end's output: the backend pipeline runs here) and compiles it;
    /// `width` asks for a dispatch width where the backend has a choice (`None`: its default).
    fn compile(&self, shader: &Shader, width: Option<u8>) -> Result<Box<dyn Kernel>, String> {
        let mut report = RunReport::default();
        self.compile_observed(shader, width, &Pipeline::quiet_options(), &mut report)
    }

    /// [`Compiler::compile`] with the backend pipeline and the machine passes run under
    /// `options` (printing, validating, bisecting) after the passes `report` tells of, whose
    /// transformations count against the same bisect limit; adds what they did to `report`.
    fn compile_observed(
        &self,
        shader: &Shader,
        width: Option<u8>,
        options: &RunOptions,
        report: &mut RunReport,
    ) -> Result<Box<dyn Kernel>, String>;

    /// Every kernel a driver compiles for `shader`, as it chooses them (on Gen: a kernel per
    /// dispatch width, or why that width was not compiled). Empty when the backend does not
    /// compile the shader's stage.
    fn variants(&self, shader: &Shader) -> Vec<Result<Box<dyn Kernel>, VariantError>>;

    /// The backend's stages of a draw at `width`: fragment shaders (and vertex shaders where the
    /// backend has them) run as kernels on the emulator.
    fn draw_stages(&self, width: Option<u8>) -> Result<Box<dyn DrawStages + '_>, String>;
}

/// A variant of a shader that did not compile, or that the driver leaves out.
#[derive(Clone, Debug)]
pub struct VariantError {
    /// The dispatch width, where the backend compiles several.
    pub width: Option<u8>,
    pub message: String,
}

/// A compiled shader.
pub trait Kernel: Send {
    /// The dispatch width, where the backend has a choice.
    fn width(&self) -> Option<u8>;

    /// shader-db's figures, by its names, in its order.
    fn statistics(&self) -> Vec<(&'static str, u64)>;

    /// shader-db's line of the statistics, as the driver prints it.
    fn statistics_line(&self) -> String;

    /// The assembly.
    fn listing(&self) -> Result<String, String>;

    /// The native binary, as [`Backend::decode`] reads it.
    fn binary(&self) -> Result<Vec<u8>, String>;
}

/// A kernel's statistics (its [`Kernel::statistics`]) and, where the backend has a choice, its
/// width (`simd`), as one JSON object.
pub fn statistics_json(width: Option<u8>, figures: &[(&'static str, u64)]) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    for &(name, value) in figures {
        object.insert(name.to_string(), value.into());
    }
    if let Some(width) = width {
        object.insert("simd".into(), width.into());
    }
    object.into()
}
