//! A time limit for the work of the current thread: a batch run sets one per item, and the
//! long-running loops (the interpreter, the emulators, the pass manager between passes) check
//! it and stop with an error once it has passed, so an item past its limit frees its worker.
//!
//! Checking costs a read of the clock, so loops check every [`CHECK_EVERY`] steps.

use std::cell::Cell;
use std::time::Instant;

/// Steps a loop takes between two checks of the clock.
pub const CHECK_EVERY: u64 = 1 << 14;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `f` with `at` as the current thread's deadline (none: no limit), then restores the
/// deadline it had.
pub fn within<R>(at: Option<Instant>, f: impl FnOnce() -> R) -> R {
    let outer = DEADLINE.with(|d| d.replace(at));
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(outer);
    f()
}

/// Whether the current thread's deadline has passed.
pub fn expired() -> bool {
    DEADLINE
        .with(|d| d.get())
        .is_some_and(|at| Instant::now() >= at)
}
