//! Where one variable at a time is live, over any graph of blocks `0..n` given by its
//! successors: the search that SSA construction (where phis go) and the backends' register
//! allocators (live ranges) share.
//!
//! A variable is live into the blocks from which a path reaches one of its upward-exposed uses
//! (a read before any write of the whole variable in that block) without passing a block that
//! writes it whole, and out of their predecessors. A backward search from the uses visits only
//! where the variable is live and finds the least solution of the dataflow equations (live-out
//! the union of the successors' live-in) without iterating them to a fixed point: the work of
//! all the searches is the size of the live ranges, not the blocks times the variables.

use crate::ir::{BlockId, Function};
use petgraph::visit::NodeIndexable;

/// A block where the variable is live: at its start, or at its end (after its terminator).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Live {
    In(usize),
    Out(usize),
}

/// A graph's predecessor lists, and the per-block marks one variable's search leaves, reused
/// from one variable to the next.
pub struct LiveRangeSearch {
    predecessors: Vec<Vec<usize>>,
    /// Which search each mark was last set by (0: none yet).
    search: usize,
    live_in: Vec<usize>,
    live_out: Vec<usize>,
    defines: Vec<usize>,
    work: Vec<usize>,
}

impl LiveRangeSearch {
    /// The searches over the blocks `0..blocks` whose successors `successors` lists.
    pub fn new<I: IntoIterator<Item = usize>>(
        blocks: usize,
        successors: impl Fn(usize) -> I,
    ) -> LiveRangeSearch {
        let mut predecessors = vec![Vec::new(); blocks];
        for b in 0..blocks {
            for s in successors(b) {
                predecessors[s].push(b);
            }
        }
        LiveRangeSearch {
            predecessors,
            search: 0,
            live_in: vec![0; blocks],
            live_out: vec![0; blocks],
            defines: vec![0; blocks],
            work: Vec::new(),
        }
    }

    /// The searches over the blocks of `func`, by block index.
    pub fn over_blocks(func: &Function) -> LiveRangeSearch {
        LiveRangeSearch::new(func.cfg.node_bound(), |b| {
            func.cfg.neighbors(BlockId::new(b)).map(|s| s.index())
        })
    }

    /// Finds where one variable is live from the blocks that read it before writing it whole
    /// (`exposed`) and those that write it whole (`defining`), and reports each block it is
    /// live into or out of to `found`, once.
    pub fn search(
        &mut self,
        exposed: impl IntoIterator<Item = usize>,
        defining: impl IntoIterator<Item = usize>,
        found: impl FnMut(Live),
    ) {
        self.search_within(exposed, defining, usize::MAX, found);
    }

    /// [`LiveRangeSearch::search`], giving up once it has found the variable live into or out
    /// of more than `budget` blocks: false then, and what it reported is only part of the
    /// variable's range (nor does [`LiveRangeSearch::is_live_in`] hold the rest).
    pub fn search_within(
        &mut self,
        exposed: impl IntoIterator<Item = usize>,
        defining: impl IntoIterator<Item = usize>,
        budget: usize,
        mut found: impl FnMut(Live),
    ) -> bool {
        let mut reported = 0usize;
        let mut found = |live| {
            found(live);
            reported += 1;
            reported <= budget
        };
        self.search += 1;
        let mark = self.search;
        for b in defining {
            self.defines[b] = mark;
        }
        let mut within = true;
        for b in exposed {
            if self.live_in[b] != mark {
                self.live_in[b] = mark;
                within &= found(Live::In(b));
                self.work.push(b);
            }
        }
        while within && let Some(b) = self.work.pop() {
            for &p in &self.predecessors[b] {
                if !within {
                    break;
                }
                if self.live_out[p] == mark {
                    continue;
                }
                self.live_out[p] = mark;
                within &= found(Live::Out(p));
                if self.defines[p] != mark && self.live_in[p] != mark {
                    self.live_in[p] = mark;
                    within &= found(Live::In(p));
                    self.work.push(p);
                }
            }
        }
        self.work.clear();
        within
    }

    /// Whether the last search found its variable live into `block`.
    pub fn is_live_in(&self, block: usize) -> bool {
        self.search != 0 && self.live_in[block] == self.search
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop `1 -> 2 -> 1` between an entry 0 and an exit 3, the variable written in 0 and
    /// read in 2, then written in 1 and read in 3.
    #[test]
    fn a_variable_read_in_a_loop_is_live_around_it_up_to_its_definition() {
        let successors = [vec![1], vec![2, 3], vec![1], vec![]];
        let mut search = LiveRangeSearch::new(4, |b| successors[b].iter().copied());
        let mut found = Vec::new();
        search.search([2], [0], |live| found.push(live));
        found.sort_by_key(|&live| match live {
            Live::In(b) => (b, 0),
            Live::Out(b) => (b, 1),
        });
        let expected = [
            Live::Out(0),
            Live::In(1),
            Live::Out(1),
            Live::In(2),
            Live::Out(2),
        ];
        assert_eq!(found, expected);
        assert!(search.is_live_in(1) && !search.is_live_in(0) && !search.is_live_in(3));

        let mut found = Vec::new();
        search.search([3], [1], |live| found.push(live));
        assert_eq!(found, [Live::In(3), Live::Out(1)]);
        assert!(search.is_live_in(3) && !search.is_live_in(2));
    }

    /// A search within a budget stops once it has reported more blocks than the budget, and
    /// says so; a budget as large as the range finds it all, as the plain search does.
    #[test]
    fn a_search_within_a_budget_gives_up_past_it() {
        let successors = [vec![1], vec![2, 3], vec![1], vec![]];
        let mut search = LiveRangeSearch::new(4, |b| successors[b].iter().copied());
        let mut found = Vec::new();
        assert!(!search.search_within([2], [0], 3, |live| found.push(live)));
        assert_eq!(found.len(), 4);
        found.clear();
        assert!(search.search_within([2], [0], 5, |live| found.push(live)));
        assert_eq!(found.len(), 5);
        assert!(search.is_live_in(1) && !search.is_live_in(0));
    }
}
