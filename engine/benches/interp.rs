//! Throughput of the reference interpreter: a fragment shader of about a hundred ALU
//! instructions over a 64×64 grid. Criterion reports the throughput in ALU instruction-lanes
//! (ALU instructions executed, summed over invocations) per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::{AluSrc, Builder, FuncId, Mode, Scalar, Shader, Stage, Type, Variable};
use shrew_engine::ops::{AluOp, Intrinsic};
use std::hint::black_box;

/// `v = fract(v · 1.1 + 0.3)` 32 times on a vec4 seeded from `frag_coord`, then a few reductions.
fn alu_heavy_shader() -> Shader {
    let mut s = Shader::new(Stage::Fragment);
    let out = s.add_variable(Variable::new(
        "color",
        Mode::ShaderOut,
        Type::Vector(Scalar::F32, 4),
    ));
    let mut b = Builder::new(&mut s, FuncId(0));
    let fc = b.intrinsic(Intrinsic::LoadFragCoord, &[], None, &[]);
    let scale = b.imm_f32(1.0 / 64.0);
    let mut v = b.alu_swizzled(
        AluOp::Fmul,
        vec![
            AluSrc::swizzled(fc, &[0, 1, 0, 1]),
            AluSrc::swizzled(scale, &[0, 0, 0, 0]),
        ],
        4,
    );
    let k = b.imm_vec_f32(&[1.1, 1.2, 1.3, 1.4]);
    let c = b.imm_vec_f32(&[0.3, 0.2, 0.1, 0.05]);
    for _ in 0..32 {
        let m = b.alu(AluOp::Fmul, &[v, k]);
        let a = b.alu(AluOp::Fadd, &[m, c]);
        v = b.alu(AluOp::Ffract, &[a]);
    }
    let d = b.alu(AluOp::Fdot4, &[v, k]);
    let mx = b.alu(AluOp::Fmax, &[v, d]);
    let mn = b.alu(AluOp::Fmin, &[mx, c]);
    let dst = b.deref_var(out);
    b.store_deref_all(dst, mn);
    b.ret(None);
    s
}

fn bench(c: &mut Criterion) {
    let shader = alu_heavy_shader();
    let launch = Launch {
        width: 64,
        ..Launch::invocations(64 * 64)
    };
    let alu = run(&shader, &launch, &mut Resources::default())
        .expect("the benchmark shader runs")
        .stats
        .alu;
    let mut group = c.benchmark_group("interp");
    group.throughput(Throughput::Elements(alu));
    group.bench_function("fragment_alu_64x64", |b| {
        b.iter(|| {
            let r = run(black_box(&shader), &launch, &mut Resources::default()).unwrap();
            black_box(r.stats.alu)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
