//! Extraction: one node per e-class, minimizing the cost of the whole DAG the roots need.
//!
//! Tree-cost extraction (egg's `Extractor`) counts a value once per use, so it prefers
//! duplicating work to sharing it. Here every class keeps the *set* of classes its best choice
//! computes with their costs, and a candidate's cost is the sum over the union of its children's
//! sets plus its own: a value two sources share is paid once. This is the greedy DAG heuristic of
//! extraction-gym (`faster-greedy-dag`): not optimal in general (that needs ILP), exact on trees,
//! and never counting anything twice. Its blind spot is a class whose cheapest cone is its own
//! when a dearer node would reuse what other roots compute anyway (a component of a vector the
//! block needs whole); a local search over the whole DAG's cost then revisits every needed
//! class.
//!
//! Availability: a node may only be chosen where its class is first available. Each class gets
//! the earliest point of the region where some node of it can be computed (leaves are available
//! after the instruction that defines them, constants from the start, an operation once all its
//! sources are); a node later than its class is never chosen, so whatever uses the class can use
//! the choice. Memory nodes are never chosen, and count for no class's availability.

use super::{CostModel, EGraph, Node};
use egg::{Id, Language};
use std::collections::{HashMap, HashSet};

/// How many rounds the cost fixpoint may take; each round visits every class once, in an order
/// where sources usually come first, so a few rounds settle.
const MAX_ROUNDS: usize = 64;

/// The choice of one node per class that extraction made.
#[derive(Debug, Default)]
pub struct Choice {
    /// The chosen node of each class, with its own cost.
    best: HashMap<Id, (Node, u32)>,
}

impl Choice {
    /// The node chosen for `class`.
    pub fn node(&self, egraph: &EGraph, class: Id) -> Option<&Node> {
        self.best.get(&egraph.find(class)).map(|(node, _)| node)
    }

    /// The cost of computing every class in `roots` with the chosen nodes, shared ones once.
    /// `None` when a class they need has no choice.
    pub fn dag_cost(&self, egraph: &EGraph, roots: impl IntoIterator<Item = Id>) -> Option<u64> {
        let mut seen: HashSet<Id> = HashSet::new();
        let mut stack: Vec<Id> = roots.into_iter().map(|r| egraph.find(r)).collect();
        let mut total = 0;
        while let Some(class) = stack.pop() {
            if !seen.insert(class) {
                continue;
            }
            let (node, cost) = self.best.get(&class)?;
            total += *cost as u64;
            stack.extend(node.children().iter().map(|&c| egraph.find(c)));
        }
        Some(total)
    }

    /// Whether `from`, with the chosen nodes, computes with `class`.
    fn reaches(&self, egraph: &EGraph, from: &[Id], class: Id) -> bool {
        let mut seen: HashSet<Id> = HashSet::new();
        let mut stack: Vec<Id> = from.iter().map(|&c| egraph.find(c)).collect();
        while let Some(next) = stack.pop() {
            if next == class {
                return true;
            }
            if seen.insert(next)
                && let Some((node, _)) = self.best.get(&next)
            {
                stack.extend(node.children().iter().map(|&c| egraph.find(c)));
            }
        }
        false
    }
}

/// Chooses a node per class under `model` for computing `roots`. `position` gives the point
/// after which a leaf is available (0: before the region starts).
///
/// First the greedy DAG heuristic chooses every class bottom-up by the cost of its own cone;
/// then a local search revisits the classes the roots need: a class switches to another node
/// when that makes the whole DAG cheaper. The second step finds what the first cannot see,
/// such as a component read from a vector that other roots compute anyway rather than
/// recomputed on its own.
pub fn extract(
    egraph: &EGraph,
    model: &dyn CostModel,
    position: impl Fn(&Node) -> u32,
    roots: &[Id],
) -> Choice {
    let avail = availability(egraph, &position);
    let allowed = |id: Id, node: &Node| {
        node.is_extractable() && node_availability(egraph, &avail, node, &position) <= avail[&id]
    };
    let mut choice = greedy(egraph, model, &allowed);
    improve(egraph, model, &allowed, roots, &mut choice);
    choice
}

/// The greedy DAG heuristic: every class keeps the set of classes its best node computes with
/// their costs, and a candidate costs the union of its children's sets plus itself.
fn greedy(egraph: &EGraph, model: &dyn CostModel, allowed: &impl Fn(Id, &Node) -> bool) -> Choice {
    let mut ids: Vec<Id> = egraph.classes().map(|c| c.id).collect();
    ids.sort();
    let mut sets: HashMap<Id, Vec<(Id, u32)>> = HashMap::new();
    let mut choice = Choice::default();
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for &id in &ids {
            let class = &egraph[id];
            for node in class.nodes.iter().filter(|n| allowed(id, n)) {
                let Some(set) = candidate(egraph, &sets, id, node, model) else {
                    continue;
                };
                let total: u64 = set.iter().map(|&(_, c)| c as u64).sum();
                let better = match sets.get(&id) {
                    Some(best) => total < best.iter().map(|&(_, c)| c as u64).sum(),
                    None => true,
                };
                if better {
                    let own = model.cost(node, &class.data);
                    choice.best.insert(id, (node.clone(), own));
                    sets.insert(id, set);
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

/// How many alternatives the local search may weigh, so that large regions stay fast.
const MAX_TRIALS: usize = 2_000;

/// Local search over the classes the roots need: switches a class to another allowed node that
/// only reads classes already needed whenever the DAG cost of the roots drops, until nothing
/// improves or the trials run out. (A node that needs new classes is the greedy step's job.)
fn improve(
    egraph: &EGraph,
    model: &dyn CostModel,
    allowed: &impl Fn(Id, &Node) -> bool,
    roots: &[Id],
    choice: &mut Choice,
) {
    let Some(mut current) = choice.dag_cost(egraph, roots.iter().copied()) else {
        return;
    };
    let mut trials = 0;
    loop {
        let mut improved = false;
        let needed = needed_classes(egraph, choice, roots);
        let mut order: Vec<Id> = needed.iter().copied().collect();
        order.sort();
        for id in order {
            let class = &egraph[id];
            for node in class.nodes.iter().filter(|n| allowed(id, n)) {
                if trials == MAX_TRIALS {
                    return;
                }
                let chosen = &choice.best[&id].0;
                if node == chosen
                    || node
                        .children()
                        .iter()
                        .any(|&c| !needed.contains(&egraph.find(c)))
                    || choice.reaches(egraph, node.children(), id)
                {
                    continue;
                }
                trials += 1;
                let own = model.cost(node, &class.data);
                let previous = choice
                    .best
                    .insert(id, (node.clone(), own))
                    .expect("needed classes are chosen");
                match choice.dag_cost(egraph, roots.iter().copied()) {
                    Some(cost) if cost < current => {
                        current = cost;
                        improved = true;
                    }
                    _ => {
                        choice.best.insert(id, previous);
                    }
                }
            }
        }
        if !improved {
            return;
        }
    }
}

/// The classes the roots compute with under `choice`.
fn needed_classes(egraph: &EGraph, choice: &Choice, roots: &[Id]) -> HashSet<Id> {
    let mut seen: HashSet<Id> = HashSet::new();
    let mut stack: Vec<Id> = roots.iter().map(|&r| egraph.find(r)).collect();
    while let Some(class) = stack.pop() {
        if seen.insert(class)
            && let Some((node, _)) = choice.best.get(&class)
        {
            stack.extend(node.children().iter().map(|&c| egraph.find(c)));
        }
    }
    seen
}

/// The cost set of choosing `node` for class `id`: its children's sets merged, plus itself.
/// `None` when a child has no choice yet or already computes `id` (a cycle).
fn candidate(
    egraph: &EGraph,
    sets: &HashMap<Id, Vec<(Id, u32)>>,
    id: Id,
    node: &Node,
    model: &dyn CostModel,
) -> Option<Vec<(Id, u32)>> {
    let mut set = vec![(id, model.cost(node, &egraph[id].data))];
    for &child in node.children() {
        let best = sets.get(&egraph.find(child))?;
        if best.binary_search_by_key(&id, |&(c, _)| c).is_ok() {
            return None;
        }
        set = merge(&set, best);
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
