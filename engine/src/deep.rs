//! Recursion as deep as the shader is nested.
//!
//! Walks over structured control flow, types and trees recurse once per nesting level, and a
//! valid shader may nest tens of thousands of levels (a generated `switch`, a long `else if`
//! chain). Every such recursive call goes through [`nested`], which runs it on the current stack
//! while enough is left and on a new heap-allocated segment otherwise, so depth is bounded by
//! memory and never aborts the process with a stack overflow, on any thread. Trees of that
//! depth hold their children in [`Children`].

use std::fmt;
use std::ops::{Deref, DerefMut};

/// Stack that must be left for a level to run on the current segment.
const RED_ZONE: usize = 128 * 1024;
/// Size of each new segment: many levels fit in one.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs one level of a recursive walk, growing the stack first when little is left.
#[inline]
pub fn nested<R>(level: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, level)
}

/// The children of a node of a tree that nests as deep as the shader does (a structured
/// control-flow tree): cloning, comparing, formatting and dropping them go through [`nested`],
/// so the node type's derived `Clone`, `PartialEq`, `Debug` and its drop are safe at any depth.
/// Reads as the `T` it holds.
#[derive(Default)]
pub struct Children<T: Default>(T);

impl<T: Default> From<T> for Children<T> {
    fn from(children: T) -> Self {
        Children(children)
    }
}

impl<T: Default> Deref for Children<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Default> DerefMut for Children<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: Default + Clone> Clone for Children<T> {
    fn clone(&self) -> Self {
        nested(|| Children(self.0.clone()))
    }
}

impl<T: Default + PartialEq> PartialEq for Children<T> {
    fn eq(&self, other: &Self) -> bool {
        nested(|| self.0 == other.0)
    }
}

impl<T: Default + Eq> Eq for Children<T> {}

impl<T: Default + fmt::Debug> fmt::Debug for Children<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        nested(|| self.0.fmt(f))
    }
}

impl<T: Default> Drop for Children<T> {
    fn drop(&mut self) {
        let children = std::mem::take(&mut self.0);
        nested(move || drop(children));
    }
}

#[cfg(test)]
mod tests {
    use super::{Children, nested};

    fn depth(n: u64) -> u64 {
        // A frame of a few hundred bytes, as a real walk's is.
        let frame = std::hint::black_box([n; 32]);
        if n == 0 {
            0
        } else {
            nested(|| depth(n - 1)) + frame[0] - n + 1
        }
    }

    /// A million levels need far more than the thread's 256 KB.
    #[test]
    fn a_million_levels_run_on_a_small_stack() {
        let levels = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| depth(1_000_000))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(levels, 1_000_000);
    }

    /// A chain of nodes a million deep is built, cloned, compared, formatted and dropped on a
    /// small stack.
    #[test]
    fn a_tree_a_million_deep_is_cloned_compared_and_dropped_on_a_small_stack() {
        #[derive(Clone, Debug, PartialEq)]
        struct Tree(Children<Vec<Tree>>);
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut tree = Tree(Vec::new().into());
                for _ in 0..1_000_000 {
                    tree = Tree(vec![tree].into());
                }
                let copy = tree.clone();
                assert_eq!(copy, tree);
                assert!(format!("{copy:?}").len() > 1_000_000);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
