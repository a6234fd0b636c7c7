//! Immediate dominators of any directed graph given by its successor lists, by Lengauer and
//! Tarjan's algorithm with path compression: O(E log V), where the iteration of Cooper, Harvey
//! and Kennedy is quadratic on deep graphs whose joins have many predecessors (a `switch` with
//! thousands of cases). Every walk is a loop over an explicit stack, so a graph 100,000 blocks
//! deep needs no deep call stack.

/// Per node `0..node_count`, its immediate dominator in the graph whose edges `successors`
/// lists, from `entry`; `None` for `entry` itself and for the nodes `entry` does not reach.
pub fn immediate_dominators<I: IntoIterator<Item = usize>>(
    node_count: usize,
    entry: usize,
    successors: impl Fn(usize) -> I,
) -> Vec<Option<usize>> {
    let search = DepthFirst::new(node_count, entry, successors);
    let idom = idoms_by_number(&search.parent, &search.predecessors);
    let mut result = vec![None; node_count];
    for (number, &node) in search.node_at.iter().enumerate().skip(1) {
        result[node] = Some(search.node_at[idom[number]]);
    }
    result
}

/// No node: the forest link of a tree root, an empty bucket, a node not yet numbered.
const NONE: usize = usize::MAX;

/// A depth-first search from the entry, numbering the nodes it reaches in preorder (the entry
/// is 0). Everything but `node_at` is indexed by those numbers.
struct DepthFirst {
    /// The node of each number.
    node_at: Vec<usize>,
    /// The number of the parent in the depth-first tree (the entry's is `NONE`).
    parent: Vec<usize>,
    /// The numbers of the predecessors (every one is reached too).
    predecessors: Vec<Vec<usize>>,
}

impl DepthFirst {
    fn new<I: IntoIterator<Item = usize>>(
        node_count: usize,
        entry: usize,
        successors: impl Fn(usize) -> I,
    ) -> DepthFirst {
        let mut number = vec![NONE; node_count];
        let mut search = DepthFirst {
            node_at: vec![entry],
            parent: vec![NONE],
            predecessors: vec![Vec::new()],
        };
        number[entry] = 0;
        // The path from the entry to the node being searched: each node's number and its
        // successors still to look at.
        let mut path = vec![(0, successors(entry).into_iter())];
        while let Some((from, next)) = path.last_mut() {
            let from = *from;
            let Some(succ) = next.next() else {
                path.pop();
                continue;
            };
            if number[succ] == NONE {
                number[succ] = search.node_at.len();
                search.node_at.push(succ);
                search.parent.push(from);
                search.predecessors.push(Vec::new());
                path.push((number[succ], successors(succ).into_iter()));
            }
            search.predecessors[number[succ]].push(from);
        }
        search
    }
}

/// The immediate dominator of every node but the entry (number 0), all by preorder numbers,
/// from the depth-first tree's `parent`s and the `predecessors`.
///
/// Lengauer and Tarjan: the semidominator of `w` is the smallest node `s` with a path to `w`
/// whose inner nodes are all numbered above `w`; visiting the nodes from the last, it is the
/// smallest over `w`'s predecessors `v` of `v` itself when `v < w`, and of the semidominators
/// of `v`'s tree ancestors above `w` when `v > w`. Those ancestors form a forest of the nodes
/// already visited, linked to their tree parents, which `eval` searches with path compression.
/// Then `idom(w)` is `sdom(w)` unless some node `u` on the tree path from `sdom(w)` (excluded)
/// to `w` has a smaller semidominator, in which case it is `idom(u)` for the `u` with the
/// smallest: decided when the forest holds exactly that path, that is when `sdom(w)`'s child
/// on it is linked, and finished in preorder once `idom(u)` is known.
fn idoms_by_number(parent: &[usize], predecessors: &[Vec<usize>]) -> Vec<usize> {
    let n = parent.len();
    let mut forest = Forest {
        semi: (0..n).collect(),
        label: (0..n).collect(),
        ancestor: vec![NONE; n],
        path: Vec::new(),
    };
    // The nodes whose idom waits on their semidominator's child being linked, as linked lists:
    // the first per semidominator and the next of each.
    let mut bucket_first = vec![NONE; n];
    let mut bucket_next = vec![NONE; n];
    // Either the final idom, or a node with the same idom (when it differs from `semi`).
    let mut idom = vec![0; n];
    for w in (1..n).rev() {
        for &v in &predecessors[w] {
            let u = forest.eval(v);
            forest.semi[w] = forest.semi[w].min(forest.semi[u]);
        }
        let semi = forest.semi[w];
        bucket_next[w] = bucket_first[semi];
        bucket_first[semi] = w;
        let p = parent[w];
        forest.ancestor[w] = p;
        let mut v = std::mem::replace(&mut bucket_first[p], NONE);
        while v != NONE {
            let u = forest.eval(v);
            idom[v] = if forest.semi[u] < forest.semi[v] {
                u
            } else {
                p
            };
            v = bucket_next[v];
        }
    }
    for w in 1..n {
        if idom[w] != forest.semi[w] {
            idom[w] = idom[idom[w]];
        }
    }
    idom
}

/// The forest of the nodes visited so far, each linked to its depth-first tree parent.
struct Forest {
    /// Per node its semidominator's number (its own number until it is visited).
    semi: Vec<usize>,
    /// Per node, the node of smallest semidominator on the forest path from it up to its
    /// `ancestor` (that excluded).
    label: Vec<usize>,
    /// Per node, a proper ancestor in the forest: its parent, or nearer the root once the path
    /// is compressed; `NONE` for a root.
    ancestor: Vec<usize>,
    /// Scratch: the path being compressed.
    path: Vec<usize>,
}

impl Forest {
    /// `v` when it is a root of the forest, otherwise the node of smallest semidominator on the
    /// path from `v` up to its root (the root excluded). Points every node on the path at the
    /// root, keeping in its label the smallest it skips.
    fn eval(&mut self, v: usize) -> usize {
        if self.ancestor[v] == NONE {
            return v;
        }
        let mut top = v;
        while self.ancestor[self.ancestor[top]] != NONE {
            self.path.push(top);
            top = self.ancestor[top];
        }
        // `top` is the root's child: its label already covers the path up to the root. Going
        // down, each node's ancestor has just been brought up to date.
        let root = self.ancestor[top];
        while let Some(node) = self.path.pop() {
            let above = self.label[self.ancestor[node]];
            if self.semi[above] < self.semi[self.label[node]] {
                self.label[node] = above;
            }
            self.ancestor[node] = root;
        }
        self.label[v]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use petgraph::algo::dominators::simple_fast;
    use petgraph::graph::{DiGraph, NodeIndex};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random graphs, with unreachable nodes, self loops, repeated edges and irreducible
        /// loops (edges into the middle of a loop from outside it) as they come: the same
        /// immediate dominators as Cooper, Harvey and Kennedy's iteration.
        #[test]
        fn the_same_immediate_dominators_as_the_iterative_algorithm(
            (node_count, edges) in (1usize..40).prop_flat_map(|n| {
                (Just(n), proptest::collection::vec((0..n, 0..n), 0..3 * n))
            }),
            entry_seed in any::<usize>(),
        ) {
            let entry = entry_seed % node_count;
            let mut graph = DiGraph::<(), ()>::new();
            for _ in 0..node_count {
                graph.add_node(());
            }
            for &(from, to) in &edges {
                graph.add_edge(NodeIndex::new(from), NodeIndex::new(to), ());
            }
            let expected = simple_fast(&graph, NodeIndex::new(entry));
            let idoms = immediate_dominators(node_count, entry, |node| {
                graph.neighbors(NodeIndex::new(node)).map(|s| s.index())
            });
            for (node, idom) in idoms.into_iter().enumerate() {
                let expected = expected.immediate_dominator(NodeIndex::new(node));
                prop_assert_eq!(idom, expected.map(|d| d.index()), "node {}", node);
            }
        }
    }
}
