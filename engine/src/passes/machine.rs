//! Machine passes: the passes a backend runs on its own IR after lowering (copy propagation,
//! CSE, scheduling, register allocation, ...), run with the mid-end's observability.
//!
//! What: a backend calls [`MachinePasses::optimize`] for each optional pass,
//! [`MachinePasses::require`] for each step the kernel cannot do without, and
//! [`MachinePasses::translate`] for each step from one of its IRs to the next (packing into
//! instruction groups, register allocation, emission), in its own order and control flow (a
//! schedule tried on a copy, an allocation retried with spilling). The runner
//! keeps per-pass statistics, prints the IR after the passes [`RunOptions`] asks for, validates
//! it after every pass with `verify_each`, and counts transformations against the bisect limit:
//! a run of an optional pass that changes the IR is one transformation, and once the limit is
//! reached optional passes are skipped, so bisecting the limit finds the first pass whose change
//! breaks a kernel.
//!
//! Why: a bad backend transformation is then found the way a bad mid-end one is, with
//! `--print-after`, `--print-after-all`, `--verify-each`, `--stats` and `--bisect-limit`.
//!
//! Invariants: the passes run exactly as they would without the runner (the runner only copies
//! the IR before each pass to tell whether it changed); IR is printed and validated only when
//! the options ask.
//!
//! Options: [`RunOptions`] (its `max_rounds` unused); a compile that ran other passes before
//! passes what is left of its bisect limit ([`RunOptions::after`]).

use super::manager::{PassStats, RunError, RunOptions, RunReport};
use std::time::Instant;

/// A backend IR the runner can print, validate and compare (whether a pass changed it).
pub trait MachineIr: Clone + PartialEq {
    /// The IR as text, one instruction a line.
    fn print(&self) -> String;

    /// Checks the IR's invariants; the error lists what is wrong.
    fn validate(&self) -> Result<(), String>;

    /// Instructions, for the statistics' deltas.
    fn instruction_count(&self) -> usize;
}

/// Runs a backend's passes and reports on them.
pub struct MachinePasses<'o> {
    options: &'o RunOptions,
    /// What the passes did.
    pub report: RunReport,
}

/// Options that observe nothing.
static QUIET: RunOptions = RunOptions {
    verify_each: false,
    print_after: Vec::new(),
    print_after_all: false,
    bisect_limit: None,
    max_rounds: 0,
    provenance: false,
};

impl MachinePasses<'static> {
    /// A runner that observes nothing: the passes run as they are.
    pub fn quiet() -> MachinePasses<'static> {
        MachinePasses::new(&QUIET)
    }
}

impl<'o> MachinePasses<'o> {
    /// A runner for `options`.
    pub fn new(options: &'o RunOptions) -> MachinePasses<'o> {
        MachinePasses {
            options,
            report: RunReport::default(),
        }
    }

    /// Whether the bisect limit leaves no transformation to make.
    fn limit_reached(&self) -> bool {
        self.options
            .bisect_limit
            .is_some_and(|limit| self.report.transformations >= limit)
    }

    /// Runs the optional pass `name` (the kernel is correct without it) over `ir`, unless the
    /// bisect limit is reached; a run that changes the IR is one transformation.
    pub fn optimize<I: MachineIr>(
        &mut self,
        name: &str,
        ir: &mut I,
        pass: impl FnOnce(&mut I),
    ) -> Result<(), RunError> {
        if self.limit_reached() {
            self.report.stopped_by_limit = true;
            return Ok(());
        }
        let changed = self.run(name, ir, pass)?;
        if changed {
            self.report.transformations += 1;
            self.report.last_transformation = Some(format!("machine pass `{name}`"));
        }
        Ok(())
    }

    /// Runs the step `name` the kernel needs (lowering, allocation): always, whatever the
    /// bisect limit; gives what it returns.
    pub fn require<I: MachineIr, T>(
        &mut self,
        name: &str,
        ir: &mut I,
        step: impl FnOnce(&mut I) -> T,
    ) -> Result<T, RunError> {
        let mut result = None;
        self.run(name, ir, |ir| result = Some(step(ir)))?;
        Ok(result.expect("the step ran"))
    }

    /// Runs the step `name` that makes the backend's next IR from `ir` (packing, allocation,
    /// emission): always, whatever the bisect limit; prints and validates what it gives as the
    /// options ask. The step's own error passes through; what it gives may borrow from `ir`.
    pub fn translate<'i, I: MachineIr, O: MachineIr, E: From<RunError>>(
        &mut self,
        name: &str,
        ir: &'i I,
        step: impl FnOnce(&'i I) -> Result<O, E>,
    ) -> Result<O, E> {
        let start = Instant::now();
        let next = step(ir)?;
        let delta = next.instruction_count() as i64 - ir.instruction_count() as i64;
        self.record(name, true, start.elapsed(), delta);
        self.observe(name, &next)?;
        Ok(next)
    }

    /// Runs `pass`, keeping its statistics, printing and validating as asked; whether it
    /// changed the IR.
    fn run<I: MachineIr>(
        &mut self,
        name: &str,
        ir: &mut I,
        pass: impl FnOnce(&mut I),
    ) -> Result<bool, RunError> {
        let before = ir.clone();
        let start = Instant::now();
        pass(ir);
        let time = start.elapsed();
        let changed = *ir != before;
        let delta = ir.instruction_count() as i64 - before.instruction_count() as i64;
        self.record(name, changed, time, delta);
        self.observe(name, ir)?;
        Ok(changed)
    }

    /// Adds a run of pass `name` to the statistics.
    fn record(&mut self, name: &str, changed: bool, time: std::time::Duration, delta: i64) {
        let stats: &mut PassStats = self.report.passes.entry(name.to_string()).or_default();
        stats.runs += 1;
        stats.progress += u64::from(changed);
        stats.time += time;
        stats.instruction_delta += delta;
    }

    /// Prints and validates `ir`, as it is after pass `name`, as the options ask.
    fn observe<I: MachineIr>(&mut self, name: &str, ir: &I) -> Result<(), RunError> {
        if self.options.print_after_all || self.options.print_after.iter().any(|p| p == name) {
            self.report.dumps.push((name.to_string(), ir.print()));
        }
        if self.options.verify_each
            && let Err(errors) = ir.validate()
        {
            return Err(RunError::Invalid {
                pass: name.to_string(),
                errors,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy IR: numbers that must stay positive.
    #[derive(Clone, Debug, PartialEq)]
    struct Numbers(Vec<i32>);

    impl MachineIr for Numbers {
        fn print(&self) -> String {
            format!("{:?}", self.0)
        }
        fn validate(&self) -> Result<(), String> {
            match self.0.iter().find(|&&n| n <= 0) {
                Some(n) => Err(format!("{n} is not positive")),
                None => Ok(()),
            }
        }
        fn instruction_count(&self) -> usize {
            self.0.len()
        }
    }

    fn drop_last(ir: &mut Numbers) {
        ir.0.pop();
    }

    #[test]
    fn the_bisect_limit_skips_optional_passes_but_not_required_steps() {
        let options = RunOptions {
            bisect_limit: Some(3),
            ..RunOptions::default()
        };
        let options = options.after(2, |_| true);
        let mut passes = MachinePasses::new(&options);
        let mut ir = Numbers(vec![1, 2, 3, 4]);
        passes.optimize("drop", &mut ir, drop_last).unwrap();
        passes.optimize("drop", &mut ir, drop_last).unwrap();
        let length = passes.require("measure", &mut ir, |ir| ir.0.len()).unwrap();
        assert_eq!(length, 3);
        assert_eq!(ir, Numbers(vec![1, 2, 3]));
        assert_eq!(passes.report.transformations, 1);
        assert!(passes.report.stopped_by_limit);
        assert_eq!(
            passes.report.last_transformation.as_deref(),
            Some("machine pass `drop`")
        );
        assert_eq!(passes.report.passes["drop"].runs, 1);
    }

    #[test]
    fn verify_each_names_the_pass_that_broke_the_ir_and_dumps_follow_the_options() {
        let options = RunOptions {
            print_after: vec!["negate".into()],
            ..RunOptions::default()
        };
        let mut passes = MachinePasses::new(&options);
        let mut ir = Numbers(vec![1, 2]);
        passes.optimize("drop", &mut ir, drop_last).unwrap();
        let error = passes
            .optimize("negate", &mut ir, |ir| ir.0[0] = -1)
            .unwrap_err();
        assert!(
            matches!(&error, RunError::Invalid { pass, .. } if pass == "negate"),
            "{error}"
        );
        assert_eq!(
            passes.report.dumps,
            [("negate".to_string(), "[-1]".to_string())]
        );
    }

    #[test]
    fn quiet_runs_count_progress() {
        let mut passes = MachinePasses::quiet();
        let mut ir = Numbers(vec![1, 2]);
        passes.optimize("drop", &mut ir, drop_last).unwrap();
        passes.optimize("nothing", &mut ir, |_| {}).unwrap();
        assert_eq!(ir, Numbers(vec![1]));
        assert_eq!(passes.report.transformations, 1);
        assert!(passes.report.dumps.is_empty());
        assert_eq!(passes.report.passes["drop"].progress, 1);
        assert_eq!(passes.report.passes["drop"].instruction_delta, -1);
        assert_eq!(passes.report.passes["nothing"].progress, 0);
    }

    /// The toy IR's next form: the numbers as text, invalid when one is empty.
    #[derive(Clone, Debug, PartialEq)]
    struct Words(Vec<String>);

    impl MachineIr for Words {
        fn print(&self) -> String {
            self.0.join(" ")
        }
        fn validate(&self) -> Result<(), String> {
            match self.0.iter().any(String::is_empty) {
                true => Err("an empty word".into()),
                false => Ok(()),
            }
        }
        fn instruction_count(&self) -> usize {
            self.0.len()
        }
    }

    #[test]
    fn translations_run_past_the_limit_and_show_the_next_ir() {
        let options = RunOptions {
            bisect_limit: Some(0),
            print_after: vec!["spell".into()],
            verify_each: true,
            ..RunOptions::default()
        };
        let mut passes = MachinePasses::new(&options);
        let numbers = Numbers(vec![1, 22]);
        let spell =
            |n: &Numbers| Ok::<_, RunError>(Words(n.0.iter().map(i32::to_string).collect()));
        let words = passes.translate("spell", &numbers, spell).unwrap();
        assert_eq!(words, Words(vec!["1".into(), "22".into()]));
        assert_eq!(
            passes.report.dumps,
            [("spell".to_string(), "1 22".to_string())]
        );
        assert_eq!(passes.report.passes["spell"].runs, 1);
        assert_eq!(passes.report.transformations, 0);
        let error = passes
            .translate("blank", &numbers, |_| {
                Ok::<_, RunError>(Words(vec![String::new()]))
            })
            .unwrap_err();
        assert!(
            matches!(&error, RunError::Invalid { pass, .. } if pass == "blank"),
            "{error}"
        );
    }
}
