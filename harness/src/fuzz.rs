//! Random differential testing: random shaders ([`crate::random_shader`]) run on the
//! interpreter without optimization (the oracle) and, through [`run_on_target`], after the
//! default pipeline on every target's emulator at every width, after the default pipeline and
//! the equality-saturation pipeline on the interpreter, and after random pipelines of the
//! registered passes (pass-order fuzzing). Integers and exact floats must agree bit for bit,
//! other floats within the runs' tolerance; a shader a target refuses to compile is a finding
//! too, since every generated shader is valid.

use crate::differential::{Run, run_on_target};
use crate::op_matrix;
use crate::random_shader::{self, Options, WORKGROUPS};
use rayon::prelude::*;
use shrew_engine::ir::{Deref, InstKind, Mode, Shader, Stage};
use shrew_engine::ops::{AluOp, Intrinsic};
use shrew_engine::rng::Rng;
use shrew_targets::Target;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a campaign runs.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The first program's seed; program `i` has seed `seed + i`.
    pub seed: u64,
    /// How many programs, at most.
    pub programs: u64,
    /// Stop starting programs after this long.
    pub time_limit: Option<Duration>,
    /// The targets whose emulators run every program (at every width).
    pub targets: Vec<&'static Target>,
    /// Random pipelines of registered passes each program also runs through (on the
    /// interpreter).
    pub random_pipelines: usize,
    /// Statements per program.
    pub statements: usize,
}

impl Campaign {
    /// `programs` programs from `seed` over every target, with two random pipelines each.
    pub fn new(seed: u64, programs: u64) -> Campaign {
        Campaign {
            seed,
            programs,
            time_limit: None,
            targets: shrew_targets::all()
                .iter()
                .filter(|t| t.has_backend())
                .collect(),
            random_pipelines: 2,
            statements: 40,
        }
    }
}

/// A program and a run that disagree (or a run that failed).
#[derive(Clone, Debug)]
pub struct Finding {
    /// The program's seed: [`program`] gives it back.
    pub seed: u64,
    pub run: Run,
    /// Where the two differ, with the kernel's listing.
    pub message: String,
    pub shader: Shader,
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub programs: u64,
    /// Program × run comparisons made.
    pub comparisons: u64,
    /// Program × run comparisons left out: the program uses an opcode at a bit size the
    /// target does not compile ([`op_matrix::compiled_ops`]), it writes SSBOs where the
    /// target does not ([`op_matrix::writes_ssbos`]) or uses shared memory where the target
    /// has none ([`op_matrix::has_shared_memory`]), or the target's emulator does not run its
    /// stage.
    pub skipped: u64,
    pub findings: Vec<Finding>,
}

/// The program of seed `seed`: a fragment shader for even seeds, a compute shader for seeds
/// one more than a multiple of four, a vertex shader for the others; three in four of each
/// stage use only opcodes (at bit sizes) every one of `targets` that compiles the stage
/// compiles (so that every target runs them), the others every opcode at every bit size.
pub fn program(seed: u64, statements: usize, targets: &[&'static Target]) -> Shader {
    let stage = match seed % 4 {
        1 => Stage::Compute,
        3 => Stage::Vertex,
        _ => Stage::Fragment,
    };
    let allowed = (!(seed / 4).is_multiple_of(4)).then(|| {
        targets
            .iter()
            .filter(|t| t.compiles(stage))
            .map(|&t| op_matrix::compiled_ops(t))
            .reduce(|a, b| &a & &b)
            .unwrap_or_else(|| op_matrix::entries().into_iter().collect())
    });
    let options = Options {
        stage,
        statements,
        allowed,
        ..Options::default()
    };
    random_shader::random_shader(seed, &options)
}

/// The runs a shader of `stage` gets in `campaign`, the random pipelines drawn from `rng`.
pub fn runs(campaign: &Campaign, stage: Stage, rng: &mut Rng) -> Vec<Run> {
    let mut runs = Vec::new();
    for target in campaign.targets.iter().filter(|t| t.compiles(stage)) {
        for width in target.widths(stage) {
            runs.push(Run::new(target.name, width));
        }
    }
    for pipeline in ["default", "eqsat"] {
        runs.push(generic_run(pipeline.to_string()));
    }
    for _ in 0..campaign.random_pipelines {
        runs.push(generic_run(random_pipeline(rng)));
    }
    for run in &mut runs {
        run.workgroups = WORKGROUPS;
    }
    runs
}

fn generic_run(pipeline: String) -> Run {
    let mut run = Run::new("generic", None);
    run.mid_end = pipeline;
    run
}

/// A pipeline of 2 to 12 passes of the generic target's registry, any order, repeats allowed.
pub fn random_pipeline(rng: &mut Rng) -> String {
    let registry = shrew_targets::generic().registry();
    let names: Vec<&str> = registry.passes().map(|p| p.name()).collect();
    let length = 2 + rng.below(11);
    let picked: Vec<&str> = (0..length).map(|_| rng.pick(&names)).collect();
    picked.join(",")
}

/// Runs the campaign, programs in parallel, calling `progress` after each program with the
/// summary so far and that program's findings (so a long campaign can report and save each one
/// as it happens).
pub fn run_campaign(
    campaign: &Campaign,
    progress: impl Fn(&Summary, &[Finding]) + Sync,
) -> Summary {
    let start = Instant::now();
    let summary = Mutex::new(Summary::default());
    (0..campaign.programs).into_par_iter().for_each(|i| {
        if campaign
            .time_limit
            .is_some_and(|limit| start.elapsed() >= limit)
        {
            return;
        }
        let seed = campaign.seed.wrapping_add(i);
        let shader = program(seed, campaign.statements, &campaign.targets);
        let mut rng = Rng::new(seed ^ 0x5eed);
        let mut findings = Vec::new();
        let runs = runs(campaign, shader.stage, &mut rng);
        let used = alu_entries(&shader);
        let writes = writes_ssbos(&shader);
        let shares = shader.variables.iter().any(|v| v.mode == Mode::Shared);
        let mut skipped = 0;
        for run in &runs {
            // Opcodes a target does not compile yet are the op matrix's to list, and stages
            // its emulator does not run, or in which it writes no SSBOs or has no shared
            // memory, are not checked: none is a finding.
            if run.target.has_backend()
                && (!used.is_subset(&op_matrix::compiled_ops(run.target))
                    || !run.target.emulates(shader.stage)
                    || (writes && !op_matrix::writes_ssbos(run.target, shader.stage))
                    || (shares && !op_matrix::has_shared_memory(run.target)))
            {
                skipped += 1;
                continue;
            }
            if let Err(message) = run_on_target(&shader, run) {
                findings.push(Finding {
                    seed,
                    run: run.clone(),
                    message,
                    shader: shader.clone(),
                });
            }
        }
        let mut summary = summary.lock().unwrap_or_else(|e| e.into_inner());
        summary.programs += 1;
        summary.comparisons += (runs.len() - skipped) as u64;
        summary.skipped += skipped as u64;
        progress(&summary, &findings);
        summary.findings.extend(findings);
    });
    let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.findings.sort_by_key(|f| f.seed);
    summary
}

/// The ALU opcodes `shader` uses, each at the bit size it uses it (the op matrix's entries).
fn alu_entries(shader: &Shader) -> BTreeSet<(AluOp, u8)> {
    shader
        .functions
        .iter()
        .flat_map(|f| {
            f.insts
                .iter()
                .flatten()
                .filter_map(|inst| match (&inst.kind, inst.def) {
                    (InstKind::Alu(alu), Some(def)) => Some(op_matrix::entry_of(f, alu, def)),
                    _ => None,
                })
        })
        .collect()
}

/// Whether `shader` writes an SSBO: stores to one, or runs atomics on one.
pub fn writes_ssbos(shader: &Shader) -> bool {
    shader.functions.iter().any(|f| {
        f.insts.iter().flatten().any(|inst| match &inst.kind {
            InstKind::Intrinsic(ii)
                if matches!(
                    ii.op,
                    Intrinsic::StoreDeref | Intrinsic::DerefAtomic | Intrinsic::DerefAtomicSwap
                ) =>
            {
                let mut deref = ii.srcs[0];
                loop {
                    match &f.inst(deref).kind {
                        InstKind::Deref(Deref::Var(var)) => {
                            break shader.variables[var.0 as usize].mode == Mode::Ssbo;
                        }
                        InstKind::Deref(
                            Deref::Array { parent, .. } | Deref::Struct { parent, .. },
                        ) => deref = *parent,
                        _ => break false,
                    }
                }
            }
            _ => false,
        })
    })
}

impl Finding {
    /// The finding as a target filetest: its `// run:` line (and workgroups) above the shader,
    /// so that it fails under `cargo test --test filetests` until the bug is fixed.
    pub fn regression_file(&self) -> String {
        let first_line = self.message.lines().next().unwrap_or("");
        let mut run = self.run.target.name.to_string();
        if let Some(width) = self.run.width {
            run += &format!(" simd{width}");
        }
        let [x, y, z] = self.run.workgroups;
        format!(
            "// Found by `shrew fuzz` (program {seed}): {first_line}\n\
             // run: {run} -p {pipeline}\n\
             // workgroups: {x} {y} {z}\n{shader}",
            seed = self.seed,
            pipeline = self.run.mid_end,
            shader = shrew_engine::text::print(&self.shader),
        )
    }
}
