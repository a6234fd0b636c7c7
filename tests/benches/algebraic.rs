//! The greedy algebraic pass over a large generated program: time per instruction with the whole
//! `algebraic` rule set against a set made of its smallest groups (about a tenth of the rules).
//! The generated matchers dispatch on the root opcode and check what feeds its sources before
//! calling a rule, so the cost of trying rules should grow far slower than their number.
//! Compare the times criterion prints for `full` and `tenth`:
//! * on `settled` nothing fires, so the ratio is the cost of the library's size: the figure the
//!   rule library is held to (at most 1.5);
//! * on `raw` the full set also does far more rewrites (their counts are printed first), so the
//!   ratio there is mostly the cost of that extra work.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use shrew_engine::ir::Shader;
use shrew_engine::passes::Budget;
use shrew_engine::passes::algebraic::{self, RuleStats};
use shrew_engine::rewrite::{RuleGroup, RuleSet, TargetOptions};

/// The smallest groups of `set`, as many as bring their rule count closest to a tenth of the set.
fn tenth(set: &RuleSet) -> RuleSet {
    let mut groups: Vec<&'static RuleGroup> = set.groups.to_vec();
    groups.sort_by_key(|g| g.rules.len());
    let target = set.len() as f64 / 10.0;
    let mut chosen = Vec::new();
    let mut count = 0;
    for g in groups {
        let with = count + g.rules.len();
        if (with as f64 - target).abs() >= (count as f64 - target).abs() {
            break;
        }
        count = with;
        chosen.push(g);
    }
    RuleSet {
        name: "tenth",
        description: "the smallest groups of the algebraic set",
        groups: Box::leak(chosen.into_boxed_slice()),
    }
}

fn bench(c: &mut Criterion) {
    let full = &shrew_rules::ALGEBRAIC;
    let small = tenth(full);
    let sets = [("full", full), ("tenth", &small)];
    let opts = TargetOptions::default();
    let run = |shader: &mut Shader, set: &RuleSet| {
        let mut stats = RuleStats::default();
        algebraic::run(
            shader,
            set,
            &opts,
            &[],
            &mut stats,
            &mut Budget::unlimited(),
        )
        .expect("no cycle");
        stats.total()
    };
    // `raw` is full of work for the rules; `settled` is what the full set leaves of it, on which
    // no rule of either set fires, so its time is the pure cost of trying the rules.
    let raw = shrew_tests::program(0x5eed, 4000);
    let mut settled = raw.clone();
    run(&mut settled, full);
    eprintln!(
        "full set {} rules, small set {} rules",
        full.len(),
        small.len()
    );
    let mut group = c.benchmark_group("algebraic");
    group.sample_size(20);
    for (program, shader) in [("raw", &raw), ("settled", &settled)] {
        let insts = shader.functions[0].all_insts().count() as u64;
        group.throughput(Throughput::Elements(insts));
        for (name, set) in sets {
            let rewrites = run(&mut shader.clone(), set);
            eprintln!("{program}: {insts} instructions, {name}: {rewrites} rewrites");
            group.bench_function(format!("{program}/{name}"), |bench| {
                bench.iter_batched(
                    || shader.clone(),
                    // Returned, so that dropping the shader is not timed.
                    |mut s| {
                        run(&mut s, set);
                        s
                    },
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
