//! The search strategies. Each asks [`Search::score`] for batches of candidates (a batch is
//! evaluated in parallel) until its budget is spent or it has nothing better to try; every
//! random choice comes from the search's seeded generator, so a strategy run twice with the
//! same seed and budget of evaluations asks for the same candidates and finds the same result.

use super::{Gene, Search};
use std::collections::HashSet;

/// How a search walks the space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Random sequences of random length.
    Random,
    /// From the empty sequence, appends the pass that scores best, while the score improves.
    Greedy,
    /// Greedy with the `width` best sequences of each length kept.
    Beam { width: usize },
    /// A population of sequences, the first half the space's start (the default pipeline) and
    /// mutants of it: tournament selection, one-point crossover, mutations (insert, delete,
    /// replace, wrap into a fixpoint group), the best two kept every generation.
    Evolution { population: usize },
}

/// Candidates scored at once by the random strategy.
const RANDOM_BATCH: usize = 16;

impl Strategy {
    /// `random`, `greedy`, `beam` or `beam:W`, `evolution` or `evolution:P`.
    pub fn parse(text: &str) -> Result<Strategy, String> {
        let (name, arg) = match text.split_once(':') {
            Some((name, arg)) => (name, Some(arg)),
            None => (text, None),
        };
        let number = |default: usize| -> Result<usize, String> {
            match arg {
                None => Ok(default),
                Some(a) => a
                    .parse()
                    .ok()
                    .filter(|&n| n >= 2)
                    .ok_or_else(|| format!("strategy `{text}`: `{a}` is not a number >= 2")),
            }
        };
        match name {
            "random" | "greedy" if arg.is_some() => {
                Err(format!("strategy `{text}`: `{name}` takes no argument"))
            }
            "random" => Ok(Strategy::Random),
            "greedy" => Ok(Strategy::Greedy),
            "beam" => Ok(Strategy::Beam { width: number(4)? }),
            "evolution" => Ok(Strategy::Evolution {
                population: number(16)?,
            }),
            _ => Err(format!(
                "unknown strategy `{text}` (strategies: random, greedy, beam[:WIDTH], \
                 evolution[:POPULATION])"
            )),
        }
    }

    pub(super) fn run(&self, search: &mut Search) {
        match *self {
            Strategy::Random => random(search),
            Strategy::Greedy => beam(search, 1),
            Strategy::Beam { width } => beam(search, width),
            Strategy::Evolution { population } => evolution(search, population),
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::Random => f.write_str("random"),
            Strategy::Greedy => f.write_str("greedy"),
            Strategy::Beam { width } => write!(f, "beam:{width}"),
            Strategy::Evolution { population } => write!(f, "evolution:{population}"),
        }
    }
}

fn random(search: &mut Search) {
    while search.remaining() > 0 {
        let batch: Vec<Vec<Gene>> = (0..RANDOM_BATCH)
            .map(|_| search.space.random(&mut search.rng))
            .collect();
        search.score(&batch);
    }
}

/// Beam search over appended passes; width 1 is the greedy search.
fn beam(search: &mut Search, width: usize) {
    let passes = search.space.passes.len();
    let mut beams: Vec<(f64, Vec<Gene>)> = vec![(f64::INFINITY, Vec::new())];
    let mut best = f64::INFINITY;
    for _ in 0..search.space.max_length {
        let candidates: Vec<Vec<Gene>> = beams
            .iter()
            .flat_map(|(_, genes)| {
                (0..passes).map(move |p| {
                    let mut next = genes.clone();
                    next.push(Gene::Pass(p));
                    next
                })
            })
            .collect();
        if search.remaining() == 0 {
            return;
        }
        let scores = search.score(&candidates);
        let mut scored: Vec<(f64, Vec<Gene>)> = scores
            .into_iter()
            .zip(candidates)
            .filter_map(|(score, genes)| score.map(|s| (s, genes)))
            .collect();
        // Stable: among equal scores the earlier candidate stays first.
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        scored.truncate(width);
        match scored.first() {
            Some(&(top, _)) if top < best => best = top,
            _ => return,
        }
        beams = scored;
    }
}

fn evolution(search: &mut Search, size: usize) {
    // The space's start and mutants of it for half the first generation, random sequences for
    // the rest.
    let mut population: Vec<Vec<Gene>> = Vec::with_capacity(size);
    let start = search.space.start.clone();
    if !start.is_empty() && start.len() <= search.space.max_length {
        population.push(start.clone());
        while population.len() < size / 2 {
            let mut mutant = start.clone();
            mutate(search, &mut mutant);
            population.push(mutant);
        }
    }
    while population.len() < size {
        population.push(search.space.random(&mut search.rng));
    }
    while search.remaining() > 0 {
        let scores = search.score(&population);
        let mut ranked: Vec<(f64, Vec<Gene>)> = scores
            .into_iter()
            .zip(population)
            .map(|(score, genes)| (score.unwrap_or(f64::INFINITY), genes))
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut next: Vec<Vec<Gene>> = ranked.iter().take(2).map(|(_, g)| g.clone()).collect();
        let mut seen: HashSet<Vec<Gene>> = next.iter().cloned().collect();
        let mut attempts = 0;
        while next.len() < size && attempts < 8 * size {
            attempts += 1;
            let a = tournament(search, &ranked);
            let b = tournament(search, &ranked);
            let mut child = crossover(search, a, b);
            mutate(search, &mut child);
            if !child.is_empty() && seen.insert(child.clone()) {
                next.push(child);
            }
        }
        while next.len() < size {
            next.push(search.space.random(&mut search.rng));
        }
        population = next;
    }
}

/// The better of three sequences picked at random.
fn tournament<'r>(search: &mut Search, ranked: &'r [(f64, Vec<Gene>)]) -> &'r [Gene] {
    let pick = (0..3).map(|_| search.rng.below(ranked.len())).min();
    &ranked[pick.unwrap_or(0)].1
}

/// `a`'s head and `b`'s tail, cut at random points, at most the space's length.
fn crossover(search: &mut Search, a: &[Gene], b: &[Gene]) -> Vec<Gene> {
    let cut_a = search.rng.below(a.len() + 1);
    let cut_b = search.rng.below(b.len() + 1);
    let mut child: Vec<Gene> = a[..cut_a].iter().chain(&b[cut_b..]).cloned().collect();
    child.truncate(search.space.max_length);
    child
}

/// One random change, three times in four: insert, delete, replace, or wrap a run of passes
/// into a fixpoint group.
fn mutate(search: &mut Search, genes: &mut Vec<Gene>) {
    if search.rng.below(4) == 0 {
        return;
    }
    let at = search.rng.below(genes.len() + 1);
    match search.rng.below(4) {
        0 if genes.len() < search.space.max_length => {
            let gene = search.space.random_gene(&mut search.rng);
            genes.insert(at, gene);
        }
        1 if at < genes.len() => {
            genes.remove(at);
        }
        2 if at < genes.len() => genes[at] = search.space.random_gene(&mut search.rng),
        3 if search.space.groups && at < genes.len() => {
            let end =
                (at + 2 + search.rng.below(search.space.max_group.max(2) - 1)).min(genes.len());
            let passes: Vec<usize> = genes[at..end]
                .iter()
                .filter_map(|g| match g {
                    Gene::Pass(p) => Some(*p),
                    Gene::Group(_) => None,
                })
                .collect();
            if passes.len() >= 2 {
                genes.splice(at..end, [Gene::Group(passes)]);
            }
        }
        _ => {
            let gene = search.space.random_gene(&mut search.rng);
            if genes.len() < search.space.max_length {
                genes.push(gene);
            }
        }
    }
}
