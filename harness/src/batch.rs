//! Batch runs (`shrew piglit`, `shrew corpus`): items worked on in parallel, each item's end
//! handed to the caller as soon as it happens, in the order items end, so a long run reports as
//! it goes; a panic ends only its item, reported with its message; and an item past the time
//! limit is reported as such at the limit.
//!
//! An item past its limit is told to stop through [`shrew_engine::deadline`] (the interpreter,
//! the emulators and the pass manager check it), and its late result is dropped. The batch ends
//! when every worker has ended its item.

use shrew_engine::deadline;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a batch runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchOptions {
    /// Items worked on at once (default: one per core).
    pub jobs: Option<usize>,
    /// Longest an item may take.
    pub time_limit: Option<Duration>,
}

/// How an item ended.
#[derive(Debug, PartialEq)]
pub enum ItemEnd<T> {
    Done(T),
    /// The item's work panicked, with this message.
    Panicked(String),
    /// The item was still running at the time limit.
    TimedOut(Duration),
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

/// Runs `work` on every item and calls `on_end` with each item's index and end as it happens.
pub fn run_batch<I: Sync, T: Send>(
    items: &[I],
    options: BatchOptions,
    work: impl Fn(&I) -> T + Sync,
    mut on_end: impl FnMut(usize, ItemEnd<T>),
) {
    let jobs = options
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    // What each worker is on: its item and when it started.
    let running: Mutex<Vec<Option<(usize, Instant)>>> = Mutex::new(vec![None; jobs]);
    let (sender, receiver) = mpsc::channel::<(usize, ItemEnd<T>, Duration)>();
    let mut ended = vec![false; items.len()];
    std::thread::scope(|scope| {
        for worker in 0..jobs {
            let sender = sender.clone();
            let (next, running, work) = (&next, &running, &work);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else {
                        return;
                    };
                    let start = Instant::now();
                    running.lock().unwrap()[worker] = Some((index, start));
                    let end = deadline::within(options.time_limit.map(|t| start + t), || {
                        catch_unwind(AssertUnwindSafe(|| work(item)))
                    });
                    running.lock().unwrap()[worker] = None;
                    let end = match end {
                        Ok(result) => ItemEnd::Done(result),
                        Err(payload) => ItemEnd::Panicked(panic_message(payload.as_ref())),
                    };
                    if sender.send((index, end, start.elapsed())).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let tick = options.time_limit.map_or(Duration::from_millis(200), |t| {
            (t / 4).max(Duration::from_millis(1))
        });
        loop {
            match receiver.recv_timeout(tick) {
                Ok((index, end, took)) => {
                    if !std::mem::replace(&mut ended[index], true) {
                        // Work that ends past the limit was cut short by the deadline.
                        match options.time_limit {
                            Some(limit) if took >= limit => on_end(index, ItemEnd::TimedOut(limit)),
                            _ => on_end(index, end),
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let Some(limit) = options.time_limit else {
                continue;
            };
            let late: Vec<(usize, Duration)> = running
                .lock()
                .unwrap()
                .iter()
                .flatten()
                .map(|&(index, start)| (index, start.elapsed()))
                .filter(|&(index, took)| took > limit && !ended[index])
                .collect();
            for (index, _) in late {
                ended[index] = true;
                on_end(index, ItemEnd::TimedOut(limit));
            }
        }
    });
}

/// One of `count` shards of a batch (`--shard INDEX/COUNT`, 1-based): the items at positions
/// `INDEX, INDEX + COUNT, ...`, so that shards run anywhere (one machine each, any scheduler)
/// together cover the batch once.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// `I/N` with 1 <= I <= N.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let parsed = text.split_once('/').and_then(|(i, n)| {
            Some(Shard {
                index: i.trim().parse().ok()?,
                count: n.trim().parse().ok()?,
            })
        });
        match parsed {
            Some(shard) if shard.index >= 1 && shard.index <= shard.count => Ok(shard),
            _ => Err(format!("`{text}` is not a shard I/N with 1 <= I <= N")),
        }
    }

    /// Whether the item at 1-based `position` is in the shard.
    pub fn contains(&self, position: usize) -> bool {
        position >= 1 && (position - 1) % self.count == self.index - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_a_batch_once() {
        let shards: Vec<Shard> = (1..=3)
            .map(|i| Shard::parse(&format!("{i}/3")).unwrap())
            .collect();
        for position in 1..=10 {
            assert_eq!(shards.iter().filter(|s| s.contains(position)).count(), 1);
        }
        assert!(shards[0].contains(1) && shards[0].contains(4) && shards[2].contains(3));
        for bad in ["0/3", "4/3", "1", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_panicking_item_fails_alone_and_the_others_finish() {
        let items: Vec<u32> = (0..9).collect();
        let mut ends = Vec::new();
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        run_batch(
            &items,
            BatchOptions {
                jobs: Some(2),
                time_limit: None,
            },
            |&i| {
                if i == 4 {
                    panic!("item {i} panics on purpose");
                }
                i * 10
            },
            |index, end| ends.push((index, end)),
        );
        std::panic::set_hook(hook);
        ends.sort_by_key(|(index, _)| *index);
        let expected: Vec<(usize, ItemEnd<u32>)> = (0..9)
            .map(|i| {
                let end = if i == 4 {
                    ItemEnd::Panicked("item 4 panics on purpose".into())
                } else {
                    ItemEnd::Done(i as u32 * 10)
                };
                (i, end)
            })
            .collect();
        assert_eq!(ends, expected);
    }

    #[test]
    fn ends_are_reported_as_they_happen_and_a_late_item_at_its_limit() {
        let items = ["slow", "quick", "stuck"];
        let started = Instant::now();
        let mut ends = Vec::new();
        run_batch(
            &items,
            BatchOptions {
                jobs: Some(3),
                time_limit: Some(Duration::from_millis(300)),
            },
            |&item| match item {
                "slow" => std::thread::sleep(Duration::from_millis(100)),
                // Runs until told to stop, as the interpreter does at the deadline.
                "stuck" => {
                    while !deadline::expired() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                _ => {}
            },
            |index, end| ends.push((items[index], end, started.elapsed())),
        );
        let order: Vec<&str> = ends.iter().map(|(item, ..)| *item).collect();
        assert_eq!(order, ["quick", "slow", "stuck"]);
        assert_eq!(ends[2].1, ItemEnd::TimedOut(Duration::from_millis(300)));
        assert!(
            ends[1].2 < Duration::from_millis(300),
            "slow was reported when it ended"
        );
    }
}
