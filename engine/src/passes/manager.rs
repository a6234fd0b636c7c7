//! The pass manager: passes registered by name, pipelines written as strings, and a run that
//! keeps statistics, verifies, dumps and counts transformations.
//!
//! Pipeline syntax: pass names separated by commas; `(a,b,c)*` runs the group again and again
//! until a whole round changes nothing or [`RunOptions::max_rounds`] rounds have run; groups
//! nest. `none` is the empty pipeline and `default` the registry's default one (both may appear
//! inside a larger pipeline); an empty text or group is an error (`none` says it on purpose).
//! Whitespace is ignored. Errors give the byte column.
//!
//! A run verifies the shader after every pass when [`RunOptions::verify_each`] is set (tests
//! always set it) and stops at the first invalid result, naming the pass. Each pass sees a
//! [`Budget`]: with a bisect limit of N, the N-th transformation is the last one made, and the
//! report names it, so a bad transformation can be found by bisection on N.

use super::Budget;
use super::algebraic::RuleStats;
use crate::ir::Shader;
use crate::verify::verify;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A pass: a named transformation of a shader.
pub trait Pass: Send + Sync {
    fn name(&self) -> &str;
    /// One line for `shrew passes`.
    fn description(&self) -> &str;
    /// Transforms the shader, spending the context's budget on every transformation and making
    /// none once it is spent; returns whether anything changed.
    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String>;

    /// Whether the pass is a lowering a backend cannot do without: it runs with an unlimited
    /// budget and even after the bisect limit is reached, so a bisected compile still compiles.
    fn lowers(&self) -> bool {
        false
    }
}

/// What the passes of a run share.
#[derive(Debug, Default)]
pub struct PassContext {
    pub budget: Budget,
    /// Rule firings by rule set name; `eqsat` records the applications of a set's rules in the
    /// e-graph under `eqsat:<set>`, and of its built-in equalities under `eqsat:built-in`
    /// (indexed like [`crate::egraph::rules::BUILTINS`]).
    pub rule_stats: BTreeMap<String, RuleStats>,
    /// Why passes stopped before their own end (a limit of theirs, such as a rule set's cap on
    /// rewrites): the shader is valid, only less optimized.
    pub stopped_early: Vec<String>,
}

/// The passes a pipeline may name, and the default pipeline.
pub struct Registry {
    passes: Vec<Box<dyn Pass>>,
    default: String,
}

impl Registry {
    /// A registry with these passes, whose default pipeline is `default` (checked when it is
    /// first parsed).
    pub fn new(passes: Vec<Box<dyn Pass>>, default: impl Into<String>) -> Registry {
        Registry {
            passes,
            default: default.into(),
        }
    }

    /// The registry with one more pass (a user's own, or a test's), which pipelines may then
    /// name.
    pub fn with(mut self, pass: Box<dyn Pass>) -> Registry {
        self.passes.push(pass);
        self
    }

    pub fn passes(&self) -> impl Iterator<Item = &dyn Pass> {
        self.passes.iter().map(|p| p.as_ref())
    }

    pub fn default_pipeline(&self) -> &str {
        &self.default
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.passes.iter().position(|p| p.name() == name)
    }

    /// The names of the passes, for messages: `a, b, c`.
    fn names(&self) -> String {
        let names: Vec<&str> = self.passes().map(|p| p.name()).collect();
        names.join(", ")
    }
}

/// One step of a pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// The pass at this index of the registry.
    Pass(usize),
    /// A group repeated to a fixpoint.
    Repeat(Vec<Step>),
}

/// A parsed pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    steps: Vec<Step>,
}

/// Why a pipeline string does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("pipeline column {column}: {message}")]
pub struct PipelineError {
    /// 1-based byte column.
    pub column: usize,
    pub message: String,
}

impl Pipeline {
    pub fn parse(text: &str, registry: &Registry) -> Result<Pipeline, PipelineError> {
        Pipeline::parse_with(Parser {
            text,
            at: 0,
            registry,
            expanding_default: false,
        })
    }

    fn parse_with(mut parser: Parser) -> Result<Pipeline, PipelineError> {
        let steps = parser.list()?;
        parser.skip_spaces();
        if parser.at < parser.text.len() {
            return Err(parser.error("expected `,` or the end of the pipeline"));
        }
        Ok(Pipeline { steps })
    }

    /// Whether the pipeline runs nothing.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether the pipeline runs the pass at `index` of its registry.
    /// Whether the pipeline runs the pass called `name` of `registry`.
    pub fn runs_pass(&self, registry: &Registry, name: &str) -> bool {
        registry.find(name).is_some_and(|index| self.runs(index))
    }

    fn runs(&self, index: usize) -> bool {
        fn any(steps: &[Step], index: usize) -> bool {
            steps.iter().any(|step| match step {
                Step::Pass(i) => *i == index,
                Step::Repeat(group) => any(group, index),
            })
        }
        any(&self.steps, index)
    }
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
    registry: &'a Registry,
    expanding_default: bool,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> PipelineError {
        PipelineError {
            column: self.at + 1,
            message: message.into(),
        }
    }

    fn skip_spaces(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_spaces();
        if self.text[self.at..].starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// `item (, item)*`: the whole pipeline or a group's.
    fn list(&mut self) -> Result<Vec<Step>, PipelineError> {
        let mut steps = Vec::new();
        self.skip_spaces();
        if self.text.trim().is_empty() {
            return Err(self.error("empty pipeline: `none` runs no passes"));
        }
        if self.text[self.at..].starts_with(')') {
            return Err(self.error("empty group: `(...)*` repeats one pass or more"));
        }
        loop {
            self.item(&mut steps)?;
            if !self.eat(',') {
                return Ok(steps);
            }
        }
    }

    fn item(&mut self, steps: &mut Vec<Step>) -> Result<(), PipelineError> {
        if self.eat('(') {
            let group = self.list()?;
            if !self.eat(')') {
                return Err(self.error("expected `)` to close the group"));
            }
            if !self.eat('*') {
                return Err(self.error("expected `*` after a group: `(...)*` repeats it"));
            }
            steps.push(Step::Repeat(group));
            return Ok(());
        }
        self.skip_spaces();
        let start = self.at;
        let rest = &self.text[start..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..len];
        if name.is_empty() {
            return Err(self.error("expected a pass name or `(`"));
        }
        self.at += len;
        match name {
            "none" => {}
            "default" if self.expanding_default => {
                return Err(PipelineError {
                    column: start + 1,
                    message: "the default pipeline names itself".into(),
                });
            }
            "default" => {
                let inner = Parser {
                    text: self.registry.default_pipeline(),
                    at: 0,
                    registry: self.registry,
                    expanding_default: true,
                };
                let default = Pipeline::parse_with(inner).map_err(|e| PipelineError {
                    column: start + 1,
                    message: format!("in the default pipeline: {e}"),
                })?;
                steps.extend(default.steps);
            }
            _ => {
                let index = self.registry.find(name).ok_or_else(|| PipelineError {
                    column: start + 1,
                    message: format!(
                        "unknown pass `{name}` (known: none, default, {})",
                        self.registry.names()
                    ),
                })?;
                steps.push(Step::Pass(index));
            }
        }
        Ok(())
    }
}

/// How to run a pipeline.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Verify after every pass and stop at the first invalid shader.
    pub verify_each: bool,
    /// Passes after which the shader is printed (into [`RunReport::dumps`]); each must be one
    /// the pipeline runs.
    pub print_after: Vec<String>,
    pub print_after_all: bool,
    /// Most transformations to make (LLVM's opt-bisect-limit); `None`: no limit.
    pub bisect_limit: Option<u64>,
    /// Most rounds of a `(...)*` group.
    pub max_rounds: usize,
    /// Tag each instruction with the pass (and rule) that made it ([`crate::provenance`]).
    pub provenance: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            verify_each: true,
            print_after: Vec::new(),
            print_after_all: false,
            bisect_limit: None,
            max_rounds: 16,
            provenance: false,
        }
    }
}

/// What a pass did over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassStats {
    pub runs: u64,
    /// Runs that changed the shader.
    pub progress: u64,
    pub time: Duration,
    /// Instructions after minus before, summed over the runs.
    pub instruction_delta: i64,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// By pass name.
    pub passes: BTreeMap<String, PassStats>,
    /// The shader after each pass asked for, as IR text: (pass, text).
    pub dumps: Vec<(String, String)>,
    /// Rule firings by rule set name.
    pub rule_stats: BTreeMap<String, RuleStats>,
    /// Transformations made, and the description of the last.
    pub transformations: u64,
    pub last_transformation: Option<String>,
    /// The bisect limit stopped the pipeline.
    pub stopped_by_limit: bool,
    /// Why passes stopped before their own end ([`PassContext::stopped_early`]).
    pub stopped_early: Vec<String>,
}

impl RunReport {
    /// Adds what a later run did (the next stage of a compile) to this report: its passes'
    /// statistics, dumps, rule firings and transformations.
    pub fn append(&mut self, later: RunReport) {
        for (name, stats) in later.passes {
            let mine = self.passes.entry(name).or_default();
            mine.runs += stats.runs;
            mine.progress += stats.progress;
            mine.time += stats.time;
            mine.instruction_delta += stats.instruction_delta;
        }
        self.dumps.extend(later.dumps);
        for (set, stats) in later.rule_stats {
            let mine = self.rule_stats.entry(set).or_default();
            for (rule, &count) in stats.fired.iter().enumerate() {
                mine.add(rule, count);
            }
        }
        self.transformations += later.transformations;
        if later.last_transformation.is_some() {
            self.last_transformation = later.last_transformation;
        }
        self.stopped_by_limit |= later.stopped_by_limit;
        self.stopped_early.extend(later.stopped_early);
    }
}

impl RunOptions {
    /// The options of a run that follows one that made `transformations`: what is left of the
    /// bisect limit, and of the passes to print after, those `runs` says the run has.
    pub fn after(&self, transformations: u64, runs: impl Fn(&str) -> bool) -> RunOptions {
        RunOptions {
            bisect_limit: self
                .bisect_limit
                .map(|limit| limit.saturating_sub(transformations)),
            print_after: self
                .print_after
                .iter()
                .filter(|name| runs(name))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A [`RunOptions::print_after`] name that no pass has, or of a pass the pipeline does not
    /// run: nothing would be printed.
    #[error("cannot print after `{pass}`: {reason}")]
    PrintAfter { pass: String, reason: String },
    #[error("pass `{pass}` failed: {message}")]
    Pass { pass: String, message: String },
    #[error("internal error: invalid IR after pass `{pass}`:\n{errors}")]
    Invalid { pass: String, errors: String },
    /// The time limit of the run ([`crate::deadline`]) passed before pass `pass`.
    #[error("the time limit passed before pass `{pass}`")]
    TimeLimit { pass: String },
}

fn instruction_count(shader: &Shader) -> i64 {
    shader
        .functions
        .iter()
        .map(|f| f.all_insts().count() as i64)
        .sum()
}

/// Runs a pipeline over a shader.
pub fn run(
    pipeline: &Pipeline,
    registry: &Registry,
    shader: &mut Shader,
    options: &RunOptions,
) -> Result<RunReport, RunError> {
    for pass in &options.print_after {
        let reason = match registry.find(pass) {
            None => format!("no such pass (known: {})", registry.names()),
            Some(index) if !pipeline.runs(index) => "the pipeline does not run it".to_string(),
            Some(_) => continue,
        };
        return Err(RunError::PrintAfter {
            pass: pass.clone(),
            reason,
        });
    }
    if options.provenance {
        crate::provenance::record(shader);
    }
    let mut runner = Runner {
        registry,
        options,
        context: PassContext {
            budget: Budget::new(options.bisect_limit),
            rule_stats: BTreeMap::new(),
            stopped_early: Vec::new(),
        },
        report: RunReport::default(),
    };
    runner.steps(&pipeline.steps, shader)?;
    let mut report = runner.report;
    let budget = &runner.context.budget;
    report.transformations = budget.spent();
    report.last_transformation = budget.last().map(str::to_string);
    report.stopped_by_limit = budget.is_spent();
    report.rule_stats = runner.context.rule_stats;
    report.stopped_early = runner.context.stopped_early;
    Ok(report)
}

struct Runner<'a> {
    registry: &'a Registry,
    options: &'a RunOptions,
    context: PassContext,
    report: RunReport,
}

impl Runner<'_> {
    /// Runs the steps once; returns whether any changed the shader.
    fn steps(&mut self, steps: &[Step], shader: &mut Shader) -> Result<bool, RunError> {
        let mut progress = false;
        for step in steps {
            // Once the budget is spent only lowerings still run.
            let spent = self.context.budget.is_spent();
            progress |= match step {
                Step::Pass(index) if spent && !self.registry.passes[*index].lowers() => false,
                Step::Pass(index) => self.pass(*index, shader)?,
                Step::Repeat(group) => {
                    let mut any = false;
                    for _ in 0..self.options.max_rounds {
                        if !self.steps(group, shader)? {
                            break;
                        }
                        any = true;
                    }
                    any
                }
            };
        }
        Ok(progress)
    }

    fn pass(&mut self, index: usize, shader: &mut Shader) -> Result<bool, RunError> {
        let pass = self.registry.passes[index].as_ref();
        let name = pass.name().to_string();
        if crate::deadline::expired() {
            return Err(RunError::TimeLimit { pass: name });
        }
        let before = instruction_count(shader);
        let start = Instant::now();
        self.context.budget.start_pass(&name);
        // A lowering's changes are not transformations a bisection may skip.
        let budget = pass
            .lowers()
            .then(|| std::mem::replace(&mut self.context.budget, Budget::unlimited()));
        let snapshot = self
            .options
            .provenance
            .then(|| crate::provenance::Snapshot::take(shader));
        let changed = pass.run(shader, &mut self.context);
        if let Some(snapshot) = snapshot {
            snapshot.tag_changes(shader, &name);
        }
        if let Some(budget) = budget {
            self.context.budget = budget;
        }
        let changed = changed.map_err(|message| RunError::Pass {
            pass: name.clone(),
            message,
        })?;
        let time = start.elapsed();
        let stats = self.report.passes.entry(name.clone()).or_default();
        stats.runs += 1;
        stats.progress += changed as u64;
        stats.time += time;
        stats.instruction_delta += instruction_count(shader) - before;
        if self.options.verify_each
            && let Err(errors) = verify(shader)
        {
            let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            return Err(RunError::Invalid {
                pass: name,
                errors: lines.join("\n"),
            });
        }
        if self.options.print_after_all || self.options.print_after.contains(&name) {
            self.report.dumps.push((name, crate::text::print(shader)));
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, Stage};

    /// Narrows the workgroup by one invocation per run, down to 1: one transformation each.
    struct Shrink;

    impl Pass for Shrink {
        fn name(&self) -> &str {
            "shrink"
        }
        fn description(&self) -> &str {
            "narrows the workgroup by one"
        }
        fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
            let x = &mut shader.workgroup_size[0];
            if *x == 1 || context.budget.is_spent() {
                return Ok(false);
            }
            *x -= 1;
            let now = *x;
            context.budget.spend(|| format!("to {now}"));
            Ok(true)
        }
    }

    /// Makes the shader invalid.
    struct Break;

    impl Pass for Break {
        fn name(&self) -> &str {
            "break"
        }
        fn description(&self) -> &str {
            "zeroes the workgroup size"
        }
        fn run(&self, shader: &mut Shader, _: &mut PassContext) -> Result<bool, String> {
            shader.workgroup_size = [0, 1, 1];
            Ok(true)
        }
    }

    fn registry(default: &str) -> Registry {
        Registry::new(vec![Box::new(Shrink), Box::new(Break)], default)
    }

    fn shader(width: u32) -> Shader {
        let mut s = Shader::new(Stage::Compute);
        s.workgroup_size = [width, 1, 1];
        let entry = s.entry;
        Builder::new(&mut s, entry).ret(None);
        s
    }

    fn run_text(text: &str, width: u32, options: &RunOptions) -> (Shader, RunReport) {
        let registry = registry("shrink,shrink");
        let pipeline = Pipeline::parse(text, &registry).unwrap();
        let mut s = shader(width);
        let report = run(&pipeline, &registry, &mut s, options).unwrap();
        (s, report)
    }

    #[test]
    fn pipelines_parse_with_groups_none_and_default() {
        let registry = registry("shrink,(shrink)*");
        let parse = |text| Pipeline::parse(text, &registry);
        assert!(parse("none").unwrap().is_empty());
        assert!(parse("(none)*").is_ok());
        assert_eq!(
            parse(" default ").unwrap(),
            parse("shrink, ( shrink )*").unwrap()
        );
        assert_eq!(
            parse("((shrink)*,shrink)*").unwrap().steps,
            [Step::Repeat(vec![
                Step::Repeat(vec![Step::Pass(0)]),
                Step::Pass(0)
            ])]
        );
        let error = |text| parse(text).unwrap_err().to_string();
        assert_eq!(
            error("shrink,grow"),
            "pipeline column 8: unknown pass `grow` (known: none, default, shrink, break)"
        );
        assert_eq!(
            error("(shrink"),
            "pipeline column 8: expected `)` to close the group"
        );
        assert_eq!(
            error("(shrink)"),
            "pipeline column 9: expected `*` after a group: `(...)*` repeats it"
        );
        assert_eq!(
            error("shrink shrink"),
            "pipeline column 8: expected `,` or the end of the pipeline"
        );
        assert_eq!(
            error("shrink,,"),
            "pipeline column 8: expected a pass name or `(`"
        );
        assert_eq!(
            error(" "),
            "pipeline column 2: empty pipeline: `none` runs no passes"
        );
        assert_eq!(
            error("shrink,( )*"),
            "pipeline column 10: empty group: `(...)*` repeats one pass or more"
        );
        let looping = Registry::new(vec![Box::new(Shrink)], "shrink,default");
        let looped = Pipeline::parse("default", &looping)
            .unwrap_err()
            .to_string();
        assert!(
            looped.contains("the default pipeline names itself"),
            "{looped}"
        );
    }

    #[test]
    fn groups_repeat_to_a_fixpoint_or_the_round_cap() {
        let options = RunOptions::default();
        let (s, report) = run_text("(shrink)*", 5, &options);
        assert_eq!(s.workgroup_size[0], 1);
        let stats = &report.passes["shrink"];
        // Four rounds that changed something, and the one that found nothing to do.
        assert_eq!((stats.runs, stats.progress), (5, 4));
        let (s, _) = run_text("(shrink)*", 100, &options);
        assert_eq!(s.workgroup_size[0], 100 - options.max_rounds as u32);
        let (s, _) = run_text("default", 100, &options);
        assert_eq!(s.workgroup_size[0], 98);
    }

    #[test]
    fn the_bisect_limit_stops_after_that_many_transformations() {
        let options = RunOptions {
            bisect_limit: Some(3),
            ..RunOptions::default()
        };
        let (s, report) = run_text("shrink,(shrink)*,shrink", 10, &options);
        assert_eq!(s.workgroup_size[0], 7);
        assert_eq!(report.transformations, 3);
        assert_eq!(report.last_transformation.as_deref(), Some("shrink: to 7"));
        assert!(report.stopped_by_limit);
        let (_, unlimited) = run_text("shrink", 10, &RunOptions::default());
        assert!(!unlimited.stopped_by_limit);
        assert_eq!(unlimited.last_transformation, None);
    }

    #[test]
    fn print_after_dumps_the_shader() {
        let options = RunOptions {
            print_after: vec!["shrink".into()],
            ..RunOptions::default()
        };
        let (_, report) = run_text("shrink,shrink", 4, &options);
        assert_eq!(report.dumps.len(), 2);
        assert!(
            report.dumps[1].1.contains("workgroup_size=2,1,1"),
            "{}",
            report.dumps[1].1
        );
    }

    #[test]
    fn print_after_names_a_pass_the_pipeline_runs() {
        let registry = registry("shrink");
        let pipeline = Pipeline::parse("shrink", &registry).unwrap();
        let error = |name: &str| {
            let options = RunOptions {
                print_after: vec![name.into()],
                ..RunOptions::default()
            };
            run(&pipeline, &registry, &mut shader(4), &options)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error("grow"),
            "cannot print after `grow`: no such pass (known: shrink, break)"
        );
        assert_eq!(
            error("break"),
            "cannot print after `break`: the pipeline does not run it"
        );
    }

    #[test]
    fn verify_each_names_the_pass_that_broke_the_shader() {
        let registry = registry("");
        let pipeline = Pipeline::parse("shrink,break,shrink", &registry).unwrap();
        let mut s = shader(4);
        let error = run(&pipeline, &registry, &mut s, &RunOptions::default()).unwrap_err();
        let RunError::Invalid { pass, .. } = &error else {
            panic!("{error}");
        };
        assert_eq!(pass, "break");
    }
}
