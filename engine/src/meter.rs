//! A count of the lane-instructions the current thread executes (one instruction run for one
//! invocation, channel or lane): the interpreter adds each run's instructions, the emulators
//! each instruction's enabled channels. Batch runs read it per item for throughput figures
//! (`shrew piglit --json` reports it per test).

use std::cell::Cell;

thread_local! {
    static LANE_INSTRUCTIONS: Cell<u64> = const { Cell::new(0) };
}

/// Counts `n` more lane-instructions on the current thread.
pub fn add(n: u64) {
    LANE_INSTRUCTIONS.with(|c| c.set(c.get().wrapping_add(n)));
}

/// Runs `f` and gives the lane-instructions it executed on the current thread.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = LANE_INSTRUCTIONS.with(Cell::get);
    let result = f();
    (
        result,
        LANE_INSTRUCTIONS.with(Cell::get).wrapping_sub(before),
    )
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
        assert_eq!((inner, outer), (4, 7));
    }
}
