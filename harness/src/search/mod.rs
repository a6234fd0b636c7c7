//! Pass-ordering search: which mid-end pipeline makes the best kernels for a corpus on a target.
//!
//! - The **objective** ([`Objective`]) is a kernel statistic or a weighted sum of them
//!   (`cycles`, `instructions+4*spills`), taken on the kernel the target compiles at its default
//!   width, and normalised per shader against the default pipeline: a shader's *ratio* is its
//!   cost over the default's, and a set of shaders scores the geometric mean of their ratios
//!   (below 1 is better than the default).
//! - The **space** ([`Space`]) is the sequences of passes and fixpoint groups `( ... )*` of the
//!   target's registry, between an optional fixed prefix and suffix, up to a length.
//! - The **strategies** ([`Strategy`]): random sampling, greedy (append the best next pass),
//!   beam, and an evolutionary search; each runs within a budget of evaluations (or seconds)
//!   from a seed, and gives the same result for the same seed and budget of evaluations.
//! - **Correctness**: every pipeline's result for a shader is checked on the target's emulator:
//!   by the piglit test it comes from (its probes, every stage through the pipeline), or else
//!   against the unoptimized shader on the interpreter with the same random inputs
//!   ([`crate::differential`]), whichever passes under the default pipeline. A wrong result
//!   disqualifies the pipeline and is kept as a bug with its reproduction (the shader and the
//!   pipeline).
//! - **Modes** ([`per_shader`], [`corpus_wide`]): the best pipeline for each shader, or one
//!   pipeline for a training split measured on the held-out split.
//!
//! Every evaluation is cached by (shader content, pipeline) for the evaluator's target, the
//! evaluations of one step of a strategy run in parallel, and each new one is logged as a
//! [`Record`] in a fixed order.

pub mod plots;
pub mod report;
mod strategy;

pub use strategy::Strategy;

use crate::differential::{self, Run};
use rayon::prelude::*;
use shrew_engine::ir::Shader;
use shrew_engine::rng::Rng;
use shrew_frontend::glsl::Glslang;
use shrew_targets::{Compiler, Target};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a search minimises: a weighted sum of kernel statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    terms: Vec<(String, f64)>,
}

impl Objective {
    /// `stat` or `w*stat` terms joined by `+` (`cycles`, `instructions+4*spills`); the names
    /// are the target's statistics (`shrew compile --stats` shows them) and [`COMPILE_TIME`].
    pub fn parse(text: &str) -> Result<Objective, String> {
        let terms =
            text.split('+')
                .map(|term| {
                    let term = term.trim();
                    let (weight, name) = match term.split_once('*') {
                        Some((w, name)) => {
                            let weight: f64 = w.trim().parse().map_err(|_| {
                                format!("objective term `{term}`: bad weight `{w}`")
                            })?;
                            (weight, name.trim())
                        }
                        None => (1.0, term),
                    };
                    if name.is_empty() || !weight.is_finite() || weight < 0.0 {
                        return Err(format!(
                            "objective term `{term}`: expected STAT or W*STAT with W >= 0"
                        ));
                    }
                    Ok((name.to_string(), weight))
                })
                .collect::<Result<Vec<_>, String>>()?;
        Ok(Objective { terms })
    }

    /// The objective's value for a kernel's statistics.
    pub fn cost(&self, figures: &[(&'static str, u64)]) -> Result<f64, String> {
        self.terms
            .iter()
            .map(|(name, weight)| {
                let value = figures
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|&(_, v)| v)
                    .ok_or_else(|| {
                        let names: Vec<&str> = figures.iter().map(|(n, _)| *n).collect();
                        format!(
                            "the kernels have no statistic `{name}` (they have: {})",
                            names.join(", ")
                        )
                    })?;
                Ok(weight * value as f64)
            })
            .sum()
    }
}

/// The objective's name for the time the mid-end and the backend take, in microseconds (a
/// measurement: it varies from run to run, so searches that use it do not repeat exactly).
pub const COMPILE_TIME: &str = "compile_us";

impl Objective {
    /// Whether the objective reads the figure `name`.
    pub fn uses(&self, name: &str) -> bool {
        self.terms.iter().any(|(n, _)| n == name)
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let terms: Vec<String> = self
            .terms
            .iter()
            .map(|(name, w)| match *w == 1.0 {
                true => name.clone(),
                false => format!("{w}*{name}"),
            })
            .collect();
        f.write_str(&terms.join("+"))
    }
}

/// One element of a searched pipeline: a pass, or a group of passes repeated to a fixpoint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Gene {
    Pass(usize),
    Group(Vec<usize>),
}

/// The pipelines a search considers.
#[derive(Clone, Debug)]
pub struct Space {
    /// The passes it chooses from, by name.
    pub passes: Vec<String>,
    /// Pipeline text run before and after the searched part (empty: none).
    pub prefix: String,
    pub suffix: String,
    /// Most genes in a searched part.
    pub max_length: usize,
    /// Whether fixpoint groups are part of the space, and their longest.
    pub groups: bool,
    pub max_group: usize,
    /// A sequence the evolutionary search starts from (with mutations of it) besides random
    /// ones: the default pipeline's, where the space can express it.
    pub start: Vec<Gene>,
}

impl Space {
    /// Every pass of `target`'s registry, no prefix or suffix, up to 24 genes, groups of up to
    /// 12 passes; the default pipeline's genes as where the evolutionary search starts.
    pub fn of(target: &Target) -> Space {
        let registry = target.registry();
        let mut space = Space {
            passes: registry.passes().map(|p| p.name().to_string()).collect(),
            prefix: String::new(),
            suffix: String::new(),
            max_length: 24,
            groups: true,
            max_group: 12,
            start: Vec::new(),
        };
        space.start = space.genes(registry.default_pipeline()).unwrap_or_default();
        space
    }

    /// The genes of a pipeline text of passes and (unnested) fixpoint groups, `None` when it
    /// names a pass outside the space or nests groups.
    pub fn genes(&self, pipeline: &str) -> Option<Vec<Gene>> {
        let index = |name: &str| self.passes.iter().position(|p| p == name);
        pipeline_items(pipeline)?
            .into_iter()
            .map(|item| match item {
                Item::Pass(name) => index(name).map(Gene::Pass),
                Item::Group(names) => names
                    .into_iter()
                    .map(index)
                    .collect::<Option<Vec<_>>>()
                    .map(Gene::Group),
            })
            .collect()
    }

    /// Searches only the passes named in `list` (comma-separated), which must all be in the
    /// space.
    pub fn choose_passes(&mut self, list: &str) -> Result<(), String> {
        let chosen: Vec<String> = list.split(',').map(|p| p.trim().to_string()).collect();
        if let Some(unknown) = chosen.iter().find(|p| !self.passes.contains(p)) {
            return Err(format!("no pass `{unknown}` (see `shrew passes`)"));
        }
        let start = self.render(&self.start);
        self.passes = chosen;
        self.start = self.genes(&start).unwrap_or_default();
        Ok(())
    }

    /// The pipeline text of `genes` between the prefix and the suffix (`none` when empty).
    pub fn render(&self, genes: &[Gene]) -> String {
        let name = |&p: &usize| self.passes[p].as_str();
        let mut parts: Vec<String> = Vec::new();
        if !self.prefix.trim().is_empty() {
            parts.push(self.prefix.trim().to_string());
        }
        for gene in genes {
            parts.push(match gene {
                Gene::Pass(p) => name(p).to_string(),
                Gene::Group(ps) => {
                    format!("({})*", ps.iter().map(name).collect::<Vec<_>>().join(","))
                }
            });
        }
        if !self.suffix.trim().is_empty() {
            parts.push(self.suffix.trim().to_string());
        }
        match parts.is_empty() {
            true => "none".into(),
            false => parts.join(","),
        }
    }

    /// A random gene: a pass, or (one time in six, where groups are allowed) a group of 2 up to
    /// `max_group` passes.
    pub fn random_gene(&self, rng: &mut Rng) -> Gene {
        if self.groups && self.max_group >= 2 && rng.below(6) == 0 {
            let n = 2 + rng.below(self.max_group - 1);
            Gene::Group((0..n).map(|_| rng.below(self.passes.len())).collect())
        } else {
            Gene::Pass(rng.below(self.passes.len()))
        }
    }

    /// A random sequence of 1 to `max_length` genes.
    pub fn random(&self, rng: &mut Rng) -> Vec<Gene> {
        let n = 1 + rng.below(self.max_length.max(1));
        (0..n).map(|_| self.random_gene(rng)).collect()
    }
}

/// A top-level element of a pipeline's text.
#[derive(Debug, PartialEq, Eq)]
pub enum Item<'t> {
    Pass(&'t str),
    /// `(a,b,c)*`: its passes.
    Group(Vec<&'t str>),
}

/// The top-level passes and fixpoint groups of a pipeline text of passes and unnested groups;
/// `None` for a group that nests another or is not closed by `)*`.
pub fn pipeline_items(pipeline: &str) -> Option<Vec<Item<'_>>> {
    let mut items = Vec::new();
    let mut rest = pipeline.trim();
    while !rest.is_empty() {
        if let Some(group) = rest.strip_prefix('(') {
            let (inside, after) = group.split_once(")*")?;
            if inside.contains('(') {
                return None;
            }
            items.push(Item::Group(inside.split(',').map(str::trim).collect()));
            rest = after.trim_start().trim_start_matches(',').trim_start();
        } else {
            let (name, after) = rest.split_once(',').unwrap_or((rest, ""));
            items.push(Item::Pass(name.trim()));
            rest = after.trim_start();
        }
    }
    Some(items)
}

/// A shader to search on: its name, its IR, and the piglit test it comes from, if any.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub name: String,
    pub shader: Shader,
    pub piglit_test: Option<PathBuf>,
}

/// How a shader's kernels are checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// By running its piglit test on the emulator.
    Piglit(PathBuf),
    /// Against the unoptimized shader on the interpreter, with random inputs.
    RandomInputs,
    /// Not at all: neither check passes under the default pipeline (or checks are off).
    Unchecked,
}

/// A shader of a search, with its figures under the default pipeline.
#[derive(Clone, Debug)]
pub struct SearchShader {
    pub name: String,
    pub shader: Shader,
    /// A hash of the shader's text: the cache key.
    pub content: u64,
    /// The objective's value under the default pipeline.
    pub default_cost: f64,
    pub check: Check,
}

/// What one evaluation of a pipeline on a shader gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The kernel's objective value and its statistics.
    Cost {
        cost: f64,
        figures: Vec<(&'static str, u64)>,
    },
    /// The pipeline or the backend failed (the message says how).
    Failed(String),
    /// The kernel computes something else than the unoptimized shader: a bug.
    Wrong(String),
}

/// A new evaluation, as searches log them.
#[derive(Clone, Debug)]
pub struct Record {
    /// Its number in the evaluator's log, from 0.
    pub index: usize,
    pub shader: String,
    pub pipeline: String,
    pub outcome: Outcome,
    /// The cost over the default pipeline's, where it has a cost.
    pub ratio: Option<f64>,
    /// The strategy whose search made it, once a session reports it.
    pub strategy: Option<String>,
}

impl Record {
    /// The record as one JSON object (the lines of `shrew search --json`).
    pub fn json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "evaluation": self.index,
            "shader": self.shader,
            "pipeline": self.pipeline,
        });
        let fields = value.as_object_mut().expect("an object");
        if let Some(strategy) = &self.strategy {
            fields.insert("strategy".into(), strategy.clone().into());
        }
        match &self.outcome {
            Outcome::Cost { cost, figures } => {
                fields.insert("status".into(), "ok".into());
                fields.insert("cost".into(), (*cost).into());
                fields.insert("ratio".into(), self.ratio.into());
                let stats: serde_json::Map<String, serde_json::Value> = figures
                    .iter()
                    .map(|&(n, v)| (n.to_string(), v.into()))
                    .collect();
                fields.insert("stats".into(), stats.into());
            }
            Outcome::Failed(m) => {
                fields.insert("status".into(), "failed".into());
                fields.insert("message".into(), m.clone().into());
            }
            Outcome::Wrong(m) => {
                fields.insert("status".into(), "wrong".into());
                fields.insert("message".into(), m.clone().into());
            }
        }
        value
    }
}

/// Evaluates pipelines on the shaders of a corpus for one target, caching every result.
pub struct Evaluator {
    pub target: &'static Target,
    compiler: Box<dyn Compiler>,
    pub objective: Objective,
    /// glslang, for the piglit tests that check kernels.
    glslang: Option<Glslang>,
    pub shaders: Vec<SearchShader>,
    cache: Mutex<HashMap<(u64, String), Outcome>>,
    log: Mutex<Vec<Record>>,
}

/// The default pipeline, the reference every ratio is taken against.
pub const DEFAULT: &str = "default";

impl Evaluator {
    /// An evaluator of `shaders` on `target`, checking kernels if `check` says so. Shaders the
    /// default pipeline does not compile for the target, or whose default cost is not
    /// positive, are left out and given back with the reason.
    pub fn new(
        target: &'static Target,
        objective: Objective,
        check: bool,
        shaders: Vec<Candidate>,
    ) -> Result<(Evaluator, Vec<(String, String)>), String> {
        let compiler = target.compiler().map_err(|e| e.to_string())?;
        let mut evaluator = Evaluator {
            target,
            compiler,
            objective,
            glslang: Glslang::find().ok(),
            shaders: Vec::new(),
            cache: Mutex::new(HashMap::new()),
            log: Mutex::new(Vec::new()),
        };
        let defaults: Vec<(SearchShader, Outcome)> = shaders
            .into_par_iter()
            .map(|c| {
                let mut s = SearchShader {
                    content: content_hash(&c.shader),
                    name: c.name,
                    shader: c.shader,
                    default_cost: 0.0,
                    check: Check::Unchecked,
                };
                let compiled = evaluator.compile(&s, DEFAULT);
                if check && let Ok((optimized, _)) = &compiled {
                    // The first check that passes under the default pipeline.
                    let piglit = c.piglit_test.map(Check::Piglit);
                    s.check = piglit
                        .into_iter()
                        .chain([Check::RandomInputs])
                        .find(|check| {
                            evaluator
                                .agrees(&s.shader, optimized, check, DEFAULT)
                                .is_ok()
                        })
                        .unwrap_or(Check::Unchecked);
                }
                (
                    s,
                    compiled.map_or_else(Outcome::Failed, |(_, outcome)| outcome),
                )
            })
            .collect();
        let mut left_out = Vec::new();
        for (mut s, outcome) in defaults {
            match outcome {
                Outcome::Cost { cost, .. } if cost > 0.0 => {
                    s.default_cost = cost;
                    let key = (s.content, DEFAULT.to_string());
                    evaluator
                        .cache
                        .get_mut()
                        .expect("cache")
                        .insert(key, outcome);
                    evaluator.shaders.push(s);
                }
                Outcome::Cost { .. } => {
                    left_out.push((s.name, "the default pipeline's cost is 0".into()))
                }
                Outcome::Failed(m) | Outcome::Wrong(m) => left_out.push((s.name, m)),
            }
        }
        Ok((evaluator, left_out))
    }

    /// The shader after the pipeline, and its kernel's cost and statistics ([`Outcome::Cost`]),
    /// without the check.
    fn compile(&self, s: &SearchShader, pipeline: &str) -> Result<(Shader, Outcome), String> {
        let optimized = differential::optimized(&s.shader, pipeline, self.target)?;
        let mut figures = self.compiler.compile(&optimized, None)?.statistics();
        if self.objective.uses(COMPILE_TIME) {
            figures.push((COMPILE_TIME, self.compile_time(&s.shader, pipeline)?));
        }
        let cost = self.objective.cost(&figures)?;
        Ok((optimized, Outcome::Cost { cost, figures }))
    }

    /// Microseconds the pipeline and the backend take on the shader, without the verification
    /// after every pass that the evaluation itself runs.
    fn compile_time(&self, shader: &Shader, pipeline: &str) -> Result<u64, String> {
        let parsed =
            shrew_targets::Pipeline::parse(pipeline, self.target).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut optimized = shader.clone();
        parsed.run(&mut optimized)?;
        self.compiler.compile(&optimized, None)?;
        Ok(start.elapsed().as_micros() as u64)
    }

    /// Whether the kernels of `optimized` (`shader` after `pipeline`) pass `check`:
    /// `Err((wrong, message))`, `wrong` when the kernels ran and computed something else (rather
    /// than failing to compile or run).
    fn agrees(
        &self,
        shader: &Shader,
        optimized: &Shader,
        check: &Check,
        pipeline: &str,
    ) -> Result<(), (bool, String)> {
        match check {
            Check::Unchecked => Ok(()),
            Check::RandomInputs => {
                let run = Run {
                    mid_end: pipeline.to_string(),
                    ..Run::new(self.target.name, None)
                };
                // The differential run compiles what the search compiled already: what fails
                // there computes something else.
                differential::check_optimized(shader, optimized, &run)
                    .map(|_| ())
                    .map_err(|e| (true, e))
            }
            Check::Piglit(test) => {
                let failed = |e: String| (false, e);
                let glslang = self
                    .glslang
                    .as_ref()
                    .ok_or_else(|| failed("glslangValidator is not installed".into()))?;
                let parsed = shrew_targets::Pipeline::parse(pipeline, self.target)
                    .map_err(|e| failed(e.to_string()))?;
                let outcome =
                    crate::run_file_through(test, glslang, &parsed, self.compiler.as_ref());
                match outcome.status {
                    crate::Status::Pass => Ok(()),
                    _ => Err((
                        outcome.mismatch,
                        format!(
                            "{}: {}",
                            test.display(),
                            outcome.reason.unwrap_or_else(|| "fails".into())
                        ),
                    )),
                }
            }
        }
    }

    fn evaluate_uncached(&self, s: &SearchShader, pipeline: &str) -> Outcome {
        let (optimized, outcome) = match self.compile(s, pipeline) {
            Ok(compiled) => compiled,
            Err(e) => return Outcome::Failed(e),
        };
        match self.agrees(&s.shader, &optimized, &s.check, pipeline) {
            Ok(()) => outcome,
            Err((true, e)) => Outcome::Wrong(e),
            Err((false, e)) => Outcome::Failed(e),
        }
    }

    /// The shader's ratio for an outcome.
    pub fn ratio(&self, shader: usize, outcome: &Outcome) -> Option<f64> {
        match outcome {
            Outcome::Cost { cost, .. } => Some(cost / self.shaders[shader].default_cost),
            _ => None,
        }
    }

    /// Evaluates every pipeline on every shader of `shaders` (in parallel), and gives each
    /// pipeline's score on them: the geometric mean of the ratios, or `None` if it fails or is
    /// wrong on any. New evaluations are logged in the order of the pipelines, then shaders.
    pub fn score(&self, shaders: &[usize], pipelines: &[String]) -> Vec<Option<f64>> {
        let pairs: Vec<(usize, usize)> = (0..pipelines.len())
            .flat_map(|p| shaders.iter().map(move |&s| (p, s)))
            .collect();
        // Each pipeline not in the cache is evaluated once, and logged at its first place in
        // the batch, whichever evaluation ends first: the log is the same on every run.
        let key = |&(p, s): &(usize, usize)| (self.shaders[s].content, pipelines[p].clone());
        let fresh: Vec<bool> = {
            let cache = self.cache.lock().expect("cache");
            let mut seen = HashSet::new();
            pairs
                .iter()
                .map(|pair| {
                    let key = key(pair);
                    !cache.contains_key(&key) && seen.insert(key)
                })
                .collect()
        };
        let evaluated: Vec<((u64, String), Outcome)> = (pairs.iter().zip(&fresh))
            .filter(|(_, fresh)| **fresh)
            .map(|(pair, _)| *pair)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(p, s)| {
                let outcome = self.evaluate_uncached(&self.shaders[s], &pipelines[p]);
                (key(&(p, s)), outcome)
            })
            .collect();
        let outcomes: Vec<(Outcome, bool)> = {
            let mut cache = self.cache.lock().expect("cache");
            cache.extend(evaluated);
            (pairs.iter().zip(fresh))
                .map(|(pair, fresh)| (cache[&key(pair)].clone(), fresh))
                .collect()
        };
        let mut log = self.log.lock().expect("log");
        let mut log_sums = vec![(0.0f64, true); pipelines.len()];
        for (&(p, s), (outcome, fresh)) in pairs.iter().zip(outcomes) {
            let ratio = self.ratio(s, &outcome);
            match ratio {
                Some(r) => log_sums[p].0 += r.ln(),
                None => log_sums[p].1 = false,
            }
            if fresh {
                let index = log.len();
                log.push(Record {
                    index,
                    shader: self.shaders[s].name.clone(),
                    pipeline: pipelines[p].clone(),
                    outcome,
                    ratio,
                    strategy: None,
                });
            }
        }
        log_sums
            .into_iter()
            .map(|(sum, ok)| ok.then(|| (sum / shaders.len().max(1) as f64).exp()))
            .collect()
    }

    /// The evaluations logged from `from` on.
    pub fn records(&self, from: usize) -> Vec<Record> {
        self.log.lock().expect("log")[from..].to_vec()
    }

    /// The wrong results found so far: (shader, pipeline, what differs).
    pub fn bugs(&self) -> Vec<(String, String, String)> {
        self.log
            .lock()
            .expect("log")
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Wrong(m) => Some((r.shader.clone(), r.pipeline.clone(), m.clone())),
                _ => None,
            })
            .collect()
    }
}

fn content_hash(shader: &Shader) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    shrew_engine::text::print(shader).hash(&mut hasher);
    hasher.finish()
}

/// How much a strategy may evaluate: candidates (each pipeline on the shaders searched counts
/// once), and optionally seconds (which makes the result depend on the machine's speed).
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub evaluations: usize,
    pub seconds: Option<f64>,
}

/// The best pipeline a strategy found, and how the best score went.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub strategy: String,
    pub pipeline: String,
    /// Its score on the searched shaders (1 is the default pipeline's).
    pub score: f64,
    /// (candidates evaluated, best score so far) at every improvement.
    pub curve: Vec<(usize, f64)>,
    pub evaluated: usize,
}

/// What a strategy works with: the evaluator, the shaders it searches on, the space, the
/// budget and the random generator.
pub struct Search<'e> {
    evaluator: &'e Evaluator,
    shaders: Vec<usize>,
    space: Space,
    budget: Budget,
    started: Instant,
    rng: Rng,
    evaluated: usize,
    best: (f64, String),
    curve: Vec<(usize, f64)>,
}

impl<'e> Search<'e> {
    fn new(
        evaluator: &'e Evaluator,
        shaders: Vec<usize>,
        space: Space,
        budget: Budget,
        seed: u64,
    ) -> Search<'e> {
        Search {
            evaluator,
            shaders,
            space,
            budget,
            started: Instant::now(),
            rng: Rng::new(seed),
            evaluated: 0,
            // The default pipeline scores 1 by definition: a search never reports worse.
            best: (1.0, DEFAULT.into()),
            curve: vec![(0, 1.0)],
        }
    }

    /// Candidates the budget still allows.
    pub fn remaining(&self) -> usize {
        let over_time = self
            .budget
            .seconds
            .is_some_and(|s| self.started.elapsed() >= Duration::from_secs_f64(s));
        match over_time {
            true => 0,
            false => self.budget.evaluations.saturating_sub(self.evaluated),
        }
    }

    /// Scores candidates (as many as the budget allows, in order; the rest are dropped), and
    /// keeps the best. `None` for a candidate that fails or is wrong on a shader.
    pub fn score(&mut self, candidates: &[Vec<Gene>]) -> Vec<Option<f64>> {
        let n = candidates.len().min(self.remaining());
        let pipelines: Vec<String> = candidates[..n]
            .iter()
            .map(|c| self.space.render(c))
            .collect();
        let scores = self.evaluator.score(&self.shaders, &pipelines);
        for (pipeline, score) in pipelines.into_iter().zip(&scores) {
            self.evaluated += 1;
            if let Some(score) = *score
                && score < self.best.0
            {
                self.best = (score, pipeline);
                self.curve.push((self.evaluated, score));
            }
        }
        scores
    }

    fn found(self, strategy: &Strategy) -> Found {
        Found {
            strategy: strategy.to_string(),
            pipeline: self.best.1,
            score: self.best.0,
            curve: self.curve,
            evaluated: self.evaluated,
        }
    }
}

/// Splits shaders into a training and a test set: a shader is in the test set when a hash of
/// its name and `seed` falls in the `test_fraction` of the range. The split depends only on the
/// names, so adding a shader moves no other.
pub fn split(names: &[&str], test_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        let mut hasher = std::hash::DefaultHasher::new();
        (seed, name).hash(&mut hasher);
        let at = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
        match at < test_fraction {
            true => test.push(i),
            false => train.push(i),
        }
    }
    (train, test)
}

/// The best pipeline for each of `shaders` (indices into the evaluator's shaders), each
/// searched with its own budget and the same seed.
pub fn per_shader(
    evaluator: &Evaluator,
    shaders: &[usize],
    space: &Space,
    strategy: &Strategy,
    budget: Budget,
    seed: u64,
) -> Vec<(usize, Found)> {
    shaders
        .iter()
        .map(|&s| {
            let mut search = Search::new(evaluator, vec![s], space.clone(), budget, seed);
            strategy.run(&mut search);
            (s, search.found(strategy))
        })
        .collect()
}

/// One pipeline for all of `train`, searched on their geometric mean; with its score on
/// `test` (None when it fails or is wrong on a test shader).
pub fn corpus_wide(
    evaluator: &Evaluator,
    train: &[usize],
    test: &[usize],
    space: &Space,
    strategy: &Strategy,
    budget: Budget,
    seed: u64,
) -> (Found, Option<f64>) {
    let mut search = Search::new(evaluator, train.to_vec(), space.clone(), budget, seed);
    strategy.run(&mut search);
    let found = search.found(strategy);
    let on_test = match test.is_empty() {
        true => None,
        false => evaluator.score(test, std::slice::from_ref(&found.pipeline))[0],
    };
    (found, on_test)
}

/// The geometric mean of positive figures (1 for none).
pub fn geomean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    match n {
        0 => 1.0,
        n => (sum / n as f64).exp(),
    }
}

#[cfg(test)]
mod tests;

/// Whether a session searches a pipeline per shader or one for the whole corpus.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The best pipeline of each shader of the test split.
    PerShader,
    /// One pipeline searched on the training split, measured on the test split.
    CorpusWide,
}

/// A whole search: the corpus, what is searched and how.
#[derive(Clone, Debug)]
pub struct Session {
    pub paths: Vec<std::path::PathBuf>,
    /// Only the stages of this kind (all where `None`).
    pub stage: Option<shrew_engine::ir::Stage>,
    pub target: &'static Target,
    pub objective: Objective,
    pub space: Space,
    pub strategies: Vec<Strategy>,
    pub mode: Mode,
    pub budget: Budget,
    pub seed: u64,
    /// The part of the shaders held out for testing.
    pub test_fraction: f64,
    /// At most this many shaders of the corpus, the first in name order.
    pub max_shaders: Option<usize>,
    pub check: bool,
    /// Per shader: search only this shard of the searched shaders (`shrew report --merge`
    /// joins the shards' runs).
    pub shard: Option<crate::batch::Shard>,
}

/// A session as a user describes it, in text where a command line has text: the one place
/// where `shrew search`'s options and the Python package's arguments become a [`Session`].
#[derive(Clone, Debug)]
pub struct Settings {
    pub paths: Vec<std::path::PathBuf>,
    pub stage: Option<shrew_engine::ir::Stage>,
    pub target: &'static Target,
    /// A kernel statistic or a weighted sum (`cycles`, `instructions+4*spills`).
    pub objective: String,
    /// Comma-separated: random, greedy, beam[:WIDTH], evolution[:POPULATION].
    pub strategies: String,
    /// `per-shader` or `corpus`.
    pub mode: String,
    pub evaluations: usize,
    pub seconds: Option<f64>,
    pub seed: u64,
    pub test_fraction: f64,
    pub max_shaders: Option<usize>,
    /// The passes searched, comma-separated (every pass of the target's registry by default).
    pub passes: Option<String>,
    pub prefix: String,
    pub suffix: String,
    pub max_length: usize,
    pub groups: bool,
    pub check: bool,
    pub shard: Option<crate::batch::Shard>,
}

impl Settings {
    /// `shrew search`'s defaults for a corpus and a target.
    pub fn new(paths: Vec<std::path::PathBuf>, target: &'static Target) -> Settings {
        Settings {
            paths,
            stage: None,
            target,
            objective: "instructions".into(),
            strategies: "random,greedy".into(),
            mode: "per-shader".into(),
            evaluations: 100,
            seconds: None,
            seed: 1,
            test_fraction: 0.0,
            max_shaders: None,
            passes: None,
            prefix: String::new(),
            suffix: String::new(),
            max_length: 24,
            groups: true,
            check: true,
            shard: None,
        }
    }

    /// The session, or what is wrong with a setting (named as `shrew search`'s option).
    pub fn session(&self) -> Result<Session, String> {
        let mut space = Space::of(self.target);
        if let Some(passes) = &self.passes {
            space
                .choose_passes(passes)
                .map_err(|e| format!("--passes: {e}"))?;
        }
        space.prefix = self.prefix.clone();
        space.suffix = self.suffix.clone();
        space.max_length = self.max_length.max(1);
        space.groups = self.groups;
        let strategies = self
            .strategies
            .split(',')
            .map(|s| Strategy::parse(s.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if !(0.0..1.0).contains(&self.test_fraction) {
            return Err("--test-fraction: from 0 up to (not including) 1".into());
        }
        let mode = match self.mode.as_str() {
            "per-shader" => Mode::PerShader,
            "corpus" => Mode::CorpusWide,
            other => return Err(format!("--mode {other}: per-shader or corpus")),
        };
        Ok(Session {
            paths: self.paths.clone(),
            stage: self.stage,
            target: self.target,
            objective: Objective::parse(&self.objective)?,
            space,
            strategies,
            mode,
            budget: Budget {
                evaluations: self.evaluations,
                seconds: self.seconds,
            },
            seed: self.seed,
            test_fraction: self.test_fraction,
            max_shaders: self.max_shaders,
            check: self.check,
            shard: self.shard,
        })
    }
}

/// What a session tells as it goes.
pub trait Observer {
    /// A new evaluation, once it is logged (after each shader in per-shader mode, after each
    /// strategy in corpus mode).
    fn record(&mut self, record: &Record);
    /// `done` of the session's `total` searches (a strategy on a shader, or on the corpus) have
    /// ended.
    fn searched(&mut self, done: usize, total: usize);
}

/// Runs a session, telling `observer` as it goes; the result is the session's summary as JSON.
pub fn run_session(
    session: &Session,
    observer: &mut dyn Observer,
) -> Result<serde_json::Value, String> {
    let stages = crate::corpus::read(&session.paths);
    let stages_read = stages.len();
    let mut left_out: Vec<(String, String)> = Vec::new();
    let mut shaders = Vec::new();
    for stage in stages {
        match stage.shader {
            Ok(shader) if session.stage.is_none_or(|s| s == shader.stage) => {
                if session.target.compiles(shader.stage) {
                    shaders.push(Candidate {
                        name: stage.name,
                        shader,
                        piglit_test: stage.piglit_test,
                    });
                }
            }
            Ok(_) => {}
            Err(e) => left_out.push((stage.name, e)),
        }
    }
    if let Some(n) = session.max_shaders {
        shaders.truncate(n);
    }
    if session.shard.is_some() && session.mode == Mode::CorpusWide {
        return Err("a corpus-wide search is one search: it has no shards".into());
    }
    let (evaluator, not_compiled) = Evaluator::new(
        session.target,
        session.objective.clone(),
        session.check,
        shaders,
    )?;
    left_out.extend(not_compiled);
    if evaluator.shaders.is_empty() {
        return Err(format!(
            "no shader to search: none of the {} stages read is one {} compiles",
            stages_read, session.target.name
        ));
    }
    let names: Vec<&str> = evaluator.shaders.iter().map(|s| s.name.as_str()).collect();
    let (train, test) = match session.test_fraction > 0.0 {
        true => split(&names, session.test_fraction, session.seed),
        false => ((0..names.len()).collect(), Vec::new()),
    };
    let mut logged = 0;
    // Per shader: the test split's shaders (all, without a split) in the session's shard.
    let searched: Vec<usize> = if test.is_empty() { &train } else { &test }
        .iter()
        .enumerate()
        .filter(|(k, _)| session.shard.is_none_or(|shard| shard.contains(k + 1)))
        .map(|(_, &s)| s)
        .collect();
    let searches = match session.mode {
        Mode::PerShader => searched.len() * session.strategies.len(),
        Mode::CorpusWide => session.strategies.len(),
    };
    let mut done = 0;
    let mut flush = |evaluator: &Evaluator, observer: &mut dyn Observer, strategy: &Strategy| {
        let new = evaluator.records(logged);
        logged += new.len();
        for mut record in new {
            record.strategy = Some(strategy.to_string());
            observer.record(&record);
        }
        done += 1;
        observer.searched(done, searches);
    };
    let mut results = Vec::new();
    for strategy in &session.strategies {
        let result = match session.mode {
            Mode::PerShader => {
                // Shader by shader, so that each one's evaluations are reported when it ends.
                let mut found = Vec::with_capacity(searched.len());
                for &s in &searched {
                    found.extend(per_shader(
                        &evaluator,
                        &[s],
                        &session.space,
                        strategy,
                        session.budget,
                        session.seed,
                    ));
                    flush(&evaluator, observer, strategy);
                }
                let rows: Vec<serde_json::Value> = found
                    .iter()
                    .map(|(s, f)| {
                        serde_json::json!({
                            "shader": evaluator.shaders[*s].name,
                            "pipeline": f.pipeline,
                            "ratio": f.score,
                            "evaluated": f.evaluated,
                            "curve": f.curve,
                        })
                    })
                    .collect();
                serde_json::json!({
                    "strategy": strategy.to_string(),
                    "geomean_ratio": geomean(found.iter().map(|(_, f)| f.score)),
                    "shaders": rows,
                })
            }
            Mode::CorpusWide => {
                let (found, on_test) = corpus_wide(
                    &evaluator,
                    &train,
                    &test,
                    &session.space,
                    strategy,
                    session.budget,
                    session.seed,
                );
                serde_json::json!({
                    "strategy": strategy.to_string(),
                    "pipeline": found.pipeline,
                    "train_ratio": found.score,
                    "test_ratio": on_test,
                    "evaluated": found.evaluated,
                    "curve": found.curve,
                })
            }
        };
        if session.mode == Mode::CorpusWide {
            flush(&evaluator, observer, strategy);
        }
        results.push(result);
    }
    let bugs: Vec<serde_json::Value> = evaluator
        .bugs()
        .into_iter()
        .map(|(shader, pipeline, message)| {
            serde_json::json!({ "shader": shader, "pipeline": pipeline, "message": message })
        })
        .collect();
    Ok(serde_json::json!({
        "target": session.target.name,
        "objective": session.objective.to_string(),
        "mode": match session.mode {
            Mode::PerShader => "per-shader",
            Mode::CorpusWide => "corpus",
        },
        "seed": session.seed,
        "shard": session.shard.map(|s| format!("{}/{}", s.index, s.count)),
        "shaders": evaluator.shaders.len(),
        "train": train.len(),
        "test": test.len(),
        "checked_by_piglit": evaluator.shaders.iter().filter(|s| matches!(s.check, Check::Piglit(_))).count(),
        "checked_by_random_inputs": evaluator.shaders.iter().filter(|s| s.check == Check::RandomInputs).count(),
        "left_out": left_out.len(),
        "results": results,
        "bugs": bugs,
    }))
}
