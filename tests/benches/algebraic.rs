//! The greedy algebraic pass over large generated programs: time per instruction with the whole
//! `algebraic` rule set against a set made of its smallest groups (about a tenth of the rules).
//! The generated matchers dispatch on the root opcode, so the cost should grow far slower than
//! the number of rules. Compare the two `elements/s` figures criterion prints.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use shrew_engine::passes::algebraic::{self, RuleStats};
use shrew_engine::rewrite::{RuleGroup, RuleSet, TargetOptions};

/// The smallest groups of `set` until they hold a tenth of its rules.
fn tenth(set: &RuleSet) -> RuleSet {
    let mut groups: Vec<&'static RuleGroup> = set.groups.to_vec();
    groups.sort_by_key(|g| g.rules.len());
    let mut chosen = Vec::new();
    let mut count = 0;
    for g in groups {
        if count * 10 >= set.len() {
            break;
        }
        count += g.rules.len();
        chosen.push(g);
    }
    RuleSet {
        name: "tenth",
        description: "the smallest groups of the algebraic set",
        groups: Box::leak(chosen.into_boxed_slice()),
    }
}

fn bench(c: &mut Criterion) {
    let shader = shrew_tests::program(0x5eed, 4000);
    let insts = shader.functions[0].all_insts().count() as u64;
    let full = &shrew_rules::ALGEBRAIC;
    let small = tenth(full);
    eprintln!(
        "program: {insts} instructions; full set {} rules, small set {} rules",
        full.len(),
        small.len()
    );
    let opts = TargetOptions::default();
    let mut group = c.benchmark_group("algebraic");
    group.throughput(Throughput::Elements(insts));
    group.sample_size(20);
    for (name, set) in [("full", full), ("tenth", &small)] {
        group.bench_function(name, |bench| {
            bench.iter_batched(
                || shader.clone(),
                |mut s| {
                    algebraic::run(&mut s, set, &opts, &[], &mut RuleStats::default())
                        .expect("no cycle")
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
