//! Extraction: one node per e-class, minimizing the cost of the whole DAG the roots need.
//!
//! Tree-cost extraction (egg's `Extractor`) counts a value once per use, so it prefers
//! duplicating work to sharing it. Here every class keeps the *set* of classes its best choice
//! computes with their costs, and a candidate's cost is the sum over the union of its children's
//! sets plus its own: a value two sources share is paid once. This is the greedy DAG heuristic of
//! extraction-gym (`faster-greedy-dag`): not optimal in general (that needs ILP), exact on trees,
//! and never counting anything twice.
//!
//! Availability: a node may only be chosen where its class is first available. Each class gets
//! the earliest point of the region where some node of it can be computed (leaves are available
//! after the instruction that defines them, constants from the start, an operation once all its
//! sources are); a node later than its class is never chosen, so whatever uses the class can use
//! the choice. Memory nodes are never chosen, and count for no class's availability.

use super::{CostModel, EGraph, Node};
use egg::{Id, Language};
use std::collections::HashMap;

/// How many rounds the cost fixpoint may take; each round visits every class once, in an order
/// where sources usually come first, so a few rounds settle.
const MAX_ROUNDS: usize = 64;

/// The choice of one node per class that extraction made.
#[derive(Debug, Default)]
pub struct Choice {
    best: HashMap<Id, Best>,
}

#[derive(Debug)]
struct Best {
    node: Node,
    /// Every class the choice computes (itself included), sorted, with its own cost.
    set: Vec<(Id, u32)>,
}

impl Choice {
    /// The node chosen for `class`.
    pub fn node(&self, egraph: &EGraph, class: Id) -> Option<&Node> {
        self.best.get(&egraph.find(class)).map(|b| &b.node)
    }

    /// The cost of computing every class in `roots` with the chosen nodes, shared ones once.
    /// `None` when a root has no choice.
    pub fn dag_cost(&self, egraph: &EGraph, roots: impl IntoIterator<Item = Id>) -> Option<u64> {
        let mut seen: HashMap<Id, u32> = HashMap::new();
        for root in roots {
            let best = self.best.get(&egraph.find(root))?;
            seen.extend(best.set.iter().copied());
        }
        Some(seen.values().map(|&c| c as u64).sum())
    }
}

/// Chooses a node per class under `model`. `position` gives the point after which a leaf is
/// available (0: before the region starts).
pub fn extract(egraph: &EGraph, model: &dyn CostModel, position: impl Fn(&Node) -> u32) -> Choice {
    let avail = availability(egraph, &position);
    let mut ids: Vec<Id> = egraph.classes().map(|c| c.id).collect();
    ids.sort();
    let mut choice = Choice::default();
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for &id in &ids {
            let class = &egraph[id];
            for node in class.nodes.iter().filter(|n| n.is_extractable()) {
                if node_availability(egraph, &avail, node, &position) > avail[&id] {
                    continue;
                }
                let Some(set) = candidate(egraph, &choice, id, node, model) else {
                    continue;
                };
                let total: u64 = set.iter().map(|&(_, c)| c as u64).sum();
                let better = match choice.best.get(&id) {
                    Some(best) => total < best.set.iter().map(|&(_, c)| c as u64).sum(),
                    None => true,
                };
                if better {
                    choice.best.insert(
                        id,
                        Best {
                            node: node.clone(),
                            set,
                        },
                    );
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    choice
}

/// The cost set of choosing `node` for class `id`: its children's sets merged, plus itself.
/// `None` when a child has no choice yet or already computes `id` (a cycle).
fn candidate(
    egraph: &EGraph,
    choice: &Choice,
    id: Id,
    node: &Node,
    model: &dyn CostModel,
) -> Option<Vec<(Id, u32)>> {
    let mut set = vec![(id, model.cost(node, &egraph[id].data))];
    for &child in node.children() {
        let best = choice.best.get(&egraph.find(child))?;
        if best.set.binary_search_by_key(&id, |&(c, _)| c).is_ok() {
            return None;
        }
        set = merge(&set, &best.set);
    }
    Some(set)
}

/// The union of two sorted sets.
fn merge(a: &[(Id, u32)], b: &[(Id, u32)]) -> Vec<(Id, u32)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The earliest point where each class can be computed, by fixpoint: a class is as early as its
/// earliest node, a node as late as its latest source (or its own definition, for leaves).
fn availability(egraph: &EGraph, position: &impl Fn(&Node) -> u32) -> HashMap<Id, u32> {
    let mut avail: HashMap<Id, u32> = egraph.classes().map(|c| (c.id, u32::MAX)).collect();
    loop {
        let mut changed = false;
        for class in egraph.classes() {
            let earliest = class
                .nodes
                .iter()
                .filter(|n| n.is_extractable())
                .map(|n| node_availability(egraph, &avail, n, position))
                .min()
                .unwrap_or(u32::MAX);
            if earliest < avail[&class.id] {
                avail.insert(class.id, earliest);
                changed = true;
            }
        }
        if !changed {
            return avail;
        }
    }
}

fn node_availability(
    egraph: &EGraph,
    avail: &HashMap<Id, u32>,
    node: &Node,
    position: &impl Fn(&Node) -> u32,
) -> u32 {
    node.children()
        .iter()
        .map(|&c| avail[&egraph.find(c)])
        .fold(position(node), u32::max)
}
