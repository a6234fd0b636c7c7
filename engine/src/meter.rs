//! A count of the work the current thread executes: lane-instructions (one instruction run for
//! one invocation, channel or lane: the interpreter adds each run's instructions, the emulators
//! each instruction's enabled channels) and the time spent executing (in the interpreter's and
//! the emulators' runs, apart from parsing, compiling and rasterizing). Batch runs read it per
//! item for throughput figures (`shrew piglit --json` reports both per test).

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static LANE_INSTRUCTIONS: Cell<u64> = const { Cell::new(0) };
    static EXECUTION_NANOS: Cell<u64> = const { Cell::new(0) };
    /// Whether an [`executing`] call is under way on this thread.
    static EXECUTING: Cell<bool> = const { Cell::new(false) };
}

/// What a closure executed on the current thread.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Work {
    pub lane_instructions: u64,
    /// Time inside [`executing`] (an inner call's time counted once, in the outermost).
    pub execution: Duration,
}

/// Counts `n` more lane-instructions on the current thread.
pub fn add(n: u64) {
    LANE_INSTRUCTIONS.with(|c| c.set(c.get().wrapping_add(n)));
}

/// Runs `f`, an execution (an interpreter or emulator run), counting its time.
pub fn executing<R>(f: impl FnOnce() -> R) -> R {
    if EXECUTING.with(|e| e.replace(true)) {
        return f();
    }
    /// Counts the time when the execution ends, also by a panic (a batch run goes on after it).
    struct Timer(Instant);
    impl Drop for Timer {
        fn drop(&mut self) {
            let nanos = self.0.elapsed().as_nanos() as u64;
            EXECUTION_NANOS.with(|c| c.set(c.get().wrapping_add(nanos)));
            EXECUTING.with(|e| e.set(false));
        }
    }
    let _timer = Timer(Instant::now());
    f()
}

fn now() -> (u64, u64) {
    (
        LANE_INSTRUCTIONS.with(Cell::get),
        EXECUTION_NANOS.with(Cell::get),
    )
}

/// Runs `f` and gives the work it executed on the current thread.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Work) {
    let (lanes, nanos) = now();
    let result = f();
    let (lanes_after, nanos_after) = now();
    let work = Work {
        lane_instructions: lanes_after.wrapping_sub(lanes),
        execution: Duration::from_nanos(nanos_after.wrapping_sub(nanos)),
    };
    (result, work)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_what_its_closure_adds_nested_or_not() {
        let (inner, outer) = measure(|| {
            add(3);
            let ((), inner) = measure(|| add(4));
            inner
        });
        assert_eq!((inner.lane_instructions, outer.lane_instructions), (4, 7));
    }

    #[test]
    fn execution_time_counts_executions_and_nothing_between_them() {
        let pause = Duration::from_millis(20);
        let outside = Duration::from_millis(400);
        let ((), work) = measure(|| {
            executing(|| {
                std::thread::sleep(pause);
                executing(|| std::thread::sleep(pause));
            });
            std::thread::sleep(outside);
        });
        assert!(work.execution >= 2 * pause, "{:?}", work.execution);
        assert!(work.execution < outside, "{:?}", work.execution);
    }

    #[test]
    fn a_panicking_execution_is_counted_and_the_next_one_too() {
        let caught = std::panic::catch_unwind(|| executing(|| panic!("deliberate")));
        assert!(caught.is_err());
        let ((), work) = measure(|| executing(|| std::thread::sleep(Duration::from_millis(5))));
        assert!(
            work.execution >= Duration::from_millis(5),
            "{:?}",
            work.execution
        );
    }
}
