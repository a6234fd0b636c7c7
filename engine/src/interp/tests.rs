//! Tests of the interpreter: shaders built with [`Builder`] and their known results.

use super::*;
use crate::ir::*;
use shrew_ops::{AluOp, AtomicOp, BaseType, IndexKind, Intrinsic};

fn f(x: f32) -> u64 {
    x.to_bits() as u64
}

fn fs(xs: &[f32]) -> Vec<u64> {
    xs.iter().map(|&x| f(x)).collect()
}

fn to_f32(v: &[u64]) -> Vec<f32> {
    v.iter().map(|&x| f32::from_bits(x as u32)).collect()
}

const F32: Type = Type::Scalar(Scalar::F32);
const U32: Type = Type::Scalar(Scalar::U32);
const I32: Type = Type::Scalar(Scalar::I32);
const F32X4: Type = Type::Vector(Scalar::F32, 4);

fn array(elem: Type, len: u32) -> Type {
    Type::Array {
        elem: Box::new(elem),
        len,
        stride: 0,
    }
}

/// A shader whose entry function `body` builds; a `return` closes it.
fn build(stage: Stage, body: impl FnOnce(&mut Builder)) -> Shader {
    let mut s = Shader::new(stage);
    build_into(&mut s, body);
    s
}

fn build_into(s: &mut Shader, body: impl FnOnce(&mut Builder)) {
    let entry = s.entry;
    let mut b = Builder::new(s, entry);
    body(&mut b);
    b.ret(None);
}

fn var(b: &mut Builder, name: &str, mode: Mode, ty: Type) -> VarId {
    b.shader.add_variable(Variable::new(name, mode, ty))
}

fn binding(b: &mut Builder, name: &str, mode: Mode, ty: Type, binding: u32) -> VarId {
    let mut v = Variable::new(name, mode, ty);
    v.binding = Some(binding);
    b.shader.add_variable(v)
}

fn store(b: &mut Builder, var: VarId, value: Value) {
    let d = b.deref_var(var);
    b.store_deref_all(d, value);
}

/// Stores `value` into a new output variable of type `ty`.
fn output(b: &mut Builder, name: &str, ty: Type, value: Value) {
    let v = var(b, name, Mode::ShaderOut, ty);
    store(b, v, value);
}

fn sysval(b: &mut Builder, op: Intrinsic) -> Value {
    b.intrinsic(op, &[], None, &[])
}

fn run_one(s: &Shader) -> RunResult {
    run(s, &Launch::default(), &mut Resources::default()).unwrap()
}

fn out<'a>(r: InvocationResult<'a>, name: &str) -> &'a [u64] {
    r.output(name)
        .unwrap_or_else(|| panic!("no output @{name}"))
}

#[test]
fn float_special_values_follow_ieee() {
    let s = build(Stage::Vertex, |b| {
        let inf = b.imm_f32(f32::INFINITY);
        let ninf = b.imm_f32(f32::NEG_INFINITY);
        let nz = b.imm_f32(-0.0);
        let zero = b.imm_f32(0.0);
        let one = b.imm_f32(1.0);
        let half = b.imm_f32(0.5);
        let nan = b.imm_f32(f32::NAN);
        let tiny = b.imm(32, &[1]);
        let results = [
            ("inf_minus_inf", b.alu(AluOp::Fadd, &[inf, ninf])),
            ("neg_zero_mul", b.alu(AluOp::Fmul, &[nz, one])),
            ("one_div_zero", b.alu(AluOp::Fdiv, &[one, zero])),
            ("one_div_neg_zero", b.alu(AluOp::Fdiv, &[one, nz])),
            ("neg_zero_plus_zero", b.alu(AluOp::Fadd, &[nz, zero])),
            ("neg_zero_plus_neg_zero", b.alu(AluOp::Fadd, &[nz, nz])),
            ("denormal_sum", b.alu(AluOp::Fadd, &[tiny, tiny])),
            ("denormal_half", b.alu(AluOp::Fmul, &[tiny, half])),
            ("min_nan", b.alu(AluOp::Fmin, &[nan, one])),
            ("min_zeros", b.alu(AluOp::Fmin, &[zero, nz])),
            ("sqrt_neg", b.alu(AluOp::Fsqrt, &[ninf])),
            ("sat_nan", b.alu(AluOp::Fsat, &[nan])),
            ("floor_neg_half", {
                let x = b.imm_f32(-0.5);
                b.alu(AluOp::Ffloor, &[x])
            }),
        ];
        for (name, v) in results {
            output(b, name, F32, v);
        }
        let lt = b.alu(AluOp::Flt, &[nan, one]);
        let ne = b.alu(AluOp::Fneu, &[nan, nan]);
        let to_int = b.alu(AluOp::F2i32, &[nan]);
        for (name, v) in [("lt_nan", lt), ("ne_nan", ne)] {
            output(b, name, Type::Scalar(Scalar::BOOL), v);
        }
        output(b, "nan_to_int", I32, to_int);
    });
    let run = run_one(&s);
    let r = run.invocation(0);
    let x = |name: &str| f32::from_bits(out(r, name)[0] as u32);
    assert!(x("inf_minus_inf").is_nan());
    assert_eq!(out(r, "neg_zero_mul"), fs(&[-0.0]));
    assert_eq!(x("one_div_zero"), f32::INFINITY);
    assert_eq!(x("one_div_neg_zero"), f32::NEG_INFINITY);
    assert_eq!(out(r, "neg_zero_plus_zero"), fs(&[0.0]));
    assert_eq!(out(r, "neg_zero_plus_neg_zero"), fs(&[-0.0]));
    assert_eq!(out(r, "denormal_sum"), [2], "denormals are not flushed");
    assert_eq!(out(r, "denormal_half"), [0], "ties round to even");
    assert_eq!(x("min_nan"), 1.0);
    assert_eq!(out(r, "min_zeros"), fs(&[-0.0]));
    assert!(x("sqrt_neg").is_nan());
    assert_eq!(out(r, "sat_nan"), fs(&[0.0]));
    assert_eq!(out(r, "floor_neg_half"), fs(&[-1.0]));
    assert_eq!(out(r, "lt_nan"), [0]);
    assert_eq!(out(r, "ne_nan"), [1]);
    assert_eq!(out(r, "nan_to_int"), [0]);
}

#[test]
fn integer_wrap_and_undefined_cases_are_fixed() {
    let s = build(Stage::Vertex, |b| {
        let int_min = b.imm_u32(0x8000_0000);
        let neg1 = b.imm_int(-1, 32);
        let int_max = b.imm_u32(0x7fff_ffff);
        let one = b.imm_u32(1);
        let zero = b.imm_u32(0);
        let seven = b.imm_u32(7);
        let results = [
            ("add_wrap", b.alu(AluOp::Iadd, &[int_max, one])),
            ("min_div_neg1", b.alu(AluOp::Idiv, &[int_min, neg1])),
            ("udiv_zero", b.alu(AluOp::Udiv, &[seven, zero])),
            ("irem_zero", b.alu(AluOp::Irem, &[seven, zero])),
            ("shl_33", {
                let n = b.imm_u32(33);
                b.alu(AluOp::Ishl, &[one, n])
            }),
            ("neg_min", b.alu(AluOp::Ineg, &[int_min])),
            ("msb_zero", b.alu(AluOp::UfindMsb, &[zero])),
            ("extract_clamped", {
                let x = b.imm_u32(0xabcd_1234);
                let off = b.imm_u32(28);
                let count = b.imm_u32(8);
                b.alu(AluOp::UbitfieldExtract, &[x, off, count])
            }),
            ("f2i_big", {
                let x = b.imm_f32(1e20);
                b.alu(AluOp::F2i32, &[x])
            }),
            ("f2u_neg", {
                let x = b.imm_f32(-1.0);
                b.alu(AluOp::F2u32, &[x])
            }),
        ];
        for (name, v) in results {
            output(b, name, U32, v);
        }
        let a = b.imm_int(0xff, 8);
        let c = b.imm_int(1, 8);
        let byte_sum = b.alu(AluOp::Iadd, &[a, c]);
        output(
            b,
            "u8_wrap",
            Type::Scalar(Scalar::new(BaseType::Uint, 8)),
            byte_sum,
        );
        let wide = b.imm_u32(0x1ff);
        let narrowed = b.alu(AluOp::U2u8, &[wide]);
        output(
            b,
            "u2u8",
            Type::Scalar(Scalar::new(BaseType::Uint, 8)),
            narrowed,
        );
    });
    let run = run_one(&s);
    let r = run.invocation(0);
    let expect = [
        ("add_wrap", 0x8000_0000),
        ("min_div_neg1", 0x8000_0000),
        ("udiv_zero", 0),
        ("irem_zero", 0),
        ("shl_33", 2),
        ("neg_min", 0x8000_0000),
        ("msb_zero", 0xffff_ffff),
        ("extract_clamped", 0xa),
        ("f2i_big", 0x7fff_ffff),
        ("f2u_neg", 0),
        ("u8_wrap", 0),
        ("u2u8", 0xff),
    ];
    for (name, v) in expect {
        assert_eq!(out(r, name), [v], "{name}");
    }
}

#[test]
fn swizzles_and_vectors() {
    let s = build(Stage::Vertex, |b| {
        let v = b.imm_vec_f32(&[1.0, 2.0, 3.0, 4.0]);
        let w = b.imm_vec_f32(&[10.0, 20.0, 30.0, 40.0]);
        let sum = b.alu_swizzled(
            AluOp::Fadd,
            vec![
                AluSrc::swizzled(v, &[3, 2, 1, 0]),
                AluSrc::swizzled(w, &[0, 0, 1, 1]),
            ],
            4,
        );
        output(b, "sum", F32X4, sum);
        let dot = b.alu(AluOp::Fdot4, &[v, w]);
        output(b, "dot", F32, dot);
    });
    let run = run_one(&s);
    let r = run.invocation(0);
    assert_eq!(out(r, "sum"), fs(&[14.0, 13.0, 22.0, 21.0]));
    assert_eq!(out(r, "dot"), fs(&[300.0]));
}

/// A fragment shader computing `v = x² · y` from `frag_coord` and storing all derivatives of it;
/// `kill` runs on every invocation before the derivatives.
fn derivative_shader(kill: impl FnOnce(&mut Builder, Value, Value)) -> Shader {
    build(Stage::Fragment, |b| {
        let fc = sysval(b, Intrinsic::LoadFragCoord);
        let x = b.channel(fc, 0);
        let y = b.channel(fc, 1);
        kill(b, x, y);
        let xx = b.alu(AluOp::Fmul, &[x, x]);
        let v = b.alu(AluOp::Fmul, &[xx, y]);
        for (name, op) in [
            ("dx", AluOp::Fddx),
            ("dx_fine", AluOp::FddxFine),
            ("dx_coarse", AluOp::FddxCoarse),
            ("dy", AluOp::Fddy),
            ("dy_fine", AluOp::FddyFine),
            ("dy_coarse", AluOp::FddyCoarse),
        ] {
            let d = b.alu(op, &[v]);
            output(b, name, F32, d);
        }
    })
}

fn derivs(r: &RunResult, name: &str) -> Vec<Option<f32>> {
    r.invocations()
        .map(|i| i.output(name).map(|v| to_f32(v)[0]))
        .collect()
}

#[test]
fn fine_and_coarse_derivatives_in_a_quad() {
    // Pixel centres 0.5 and 1.5: v = 0.125, 1.125 (top row), 0.375, 3.375 (bottom row).
    let s = derivative_shader(|_, _, _| {});
    let r = run(&s, &Launch::invocations(4), &mut Resources::default()).unwrap();
    let all = |x: f32| vec![Some(x); 4];
    assert_eq!(
        derivs(&r, "dx_fine"),
        [Some(1.0), Some(1.0), Some(3.0), Some(3.0)]
    );
    assert_eq!(derivs(&r, "dx_coarse"), all(1.0));
    assert_eq!(derivs(&r, "dx"), all(1.0));
    assert_eq!(
        derivs(&r, "dy_fine"),
        [Some(0.25), Some(2.25), Some(0.25), Some(2.25)]
    );
    assert_eq!(derivs(&r, "dy_coarse"), all(0.25));
    assert_eq!(derivs(&r, "dy"), all(0.25));
    assert_eq!(r.stats.alu, 4 * (2 + 2 + 6));
}

#[test]
fn larger_grids_split_into_aligned_quads() {
    // On a 4×4 grid, x² has coarse x derivatives (2x + 1) taken at each quad's left column.
    let s = build(Stage::Fragment, |b| {
        let fc = sysval(b, Intrinsic::LoadFragCoord);
        let x = b.channel(fc, 0);
        let xx = b.alu(AluOp::Fmul, &[x, x]);
        let d = b.alu(AluOp::FddxCoarse, &[xx]);
        output(b, "d", F32, d);
        output(b, "fc", F32X4, fc);
    });
    let r = run(&s, &Launch::invocations(16), &mut Resources::default()).unwrap();
    let d = derivs(&r, "d");
    for (i, inv) in r.invocations().enumerate() {
        let (x, y) = (i % 4, i / 4);
        assert_eq!(
            to_f32(out(inv, "fc")),
            [x as f32 + 0.5, y as f32 + 0.5, 0.0, 1.0]
        );
        let left = (x & !1) as f32 + 0.5;
        assert_eq!(d[i], Some((left + 1.0).powi(2) - left.powi(2)), "pixel {i}");
    }
}

#[test]
fn grid_origin_moves_frag_coord_but_not_quads() {
    let s = build(Stage::Fragment, |b| {
        let fc = sysval(b, Intrinsic::LoadFragCoord);
        let x = b.channel(fc, 0);
        let d = b.alu(AluOp::FddxFine, &[x]);
        output(b, "d", F32, d);
        output(b, "fc", F32X4, fc);
    });
    let launch = Launch {
        origin: [100, 42],
        ..Launch::invocations(4)
    };
    let r = run(&s, &launch, &mut Resources::default()).unwrap();
    for (i, inv) in r.invocations().enumerate() {
        let (x, y) = (100 + i % 2, 42 + i / 2);
        assert_eq!(
            to_f32(out(inv, "fc")),
            [x as f32 + 0.5, y as f32 + 0.5, 0.0, 1.0]
        );
        assert_eq!(to_f32(out(inv, "d")), [1.0], "pixel {i}");
    }
}

/// `top_left(b, x, y)` is true for pixel (0, 0) only.
fn top_left(b: &mut Builder, x: Value, y: Value) -> Value {
    let one = b.imm_f32(1.0);
    let left = b.alu(AluOp::Flt, &[x, one]);
    let top = b.alu(AluOp::Flt, &[y, one]);
    b.alu(AluOp::Iand, &[left, top])
}

#[test]
fn discarded_pixel_leaves_the_quad_and_neighbours_use_the_other_pair() {
    let s = derivative_shader(|b, x, y| {
        let c = top_left(b, x, y);
        b.intrinsic(Intrinsic::DiscardIf, &[c], None, &[]);
    });
    let r = run(&s, &Launch::invocations(4), &mut Resources::default()).unwrap();
    assert!(r.discarded[0] && !r.invocation(0).has_outputs());
    // Row 0 and column 0 lost pixel 0: every x derivative comes from row 1 (3.0), every y
    // derivative from column 1 (2.25).
    assert_eq!(
        derivs(&r, "dx_coarse"),
        [None, Some(3.0), Some(3.0), Some(3.0)]
    );
    assert_eq!(
        derivs(&r, "dx_fine"),
        [None, Some(3.0), Some(3.0), Some(3.0)]
    );
    assert_eq!(
        derivs(&r, "dy_coarse"),
        [None, Some(2.25), Some(2.25), Some(2.25)]
    );
    assert_eq!(
        derivs(&r, "dy_fine"),
        [None, Some(2.25), Some(2.25), Some(2.25)]
    );
}

#[test]
fn demoted_pixel_keeps_feeding_derivatives() {
    let s = derivative_shader(|b, x, y| {
        let c = top_left(b, x, y);
        b.intrinsic(Intrinsic::DemoteIf, &[c], None, &[]);
        let helper = sysval(b, Intrinsic::IsHelperInvocation);
        let initial = sysval(b, Intrinsic::LoadHelperInvocation);
        // Pixel 0 is a helper now but was not one at the start.
        let odd = b.alu(AluOp::Ixor, &[helper, initial]);
        let neither = b.alu(AluOp::Inot, &[helper]);
        let ok = b.alu(AluOp::Ior, &[odd, neither]);
        let bad = b.alu(AluOp::Inot, &[ok]);
        b.intrinsic(Intrinsic::TerminateIf, &[bad], None, &[]);
    });
    let r = run(&s, &Launch::invocations(4), &mut Resources::default()).unwrap();
    let first = r.invocation(0);
    assert!(first.helper && !first.discarded && first.outputs().next().is_none());
    assert_eq!(
        derivs(&r, "dx_coarse"),
        [None, Some(1.0), Some(1.0), Some(1.0)]
    );
    assert_eq!(
        derivs(&r, "dx_fine"),
        [None, Some(1.0), Some(3.0), Some(3.0)]
    );
    assert_eq!(
        derivs(&r, "dy_fine"),
        [None, Some(2.25), Some(0.25), Some(2.25)]
    );
}

#[test]
fn uncovered_pixels_run_as_helpers() {
    let s = derivative_shader(|_, _, _| {});
    let launch = Launch {
        covered: vec![true, true, true, false],
        ..Launch::invocations(4)
    };
    let r = run(&s, &launch, &mut Resources::default()).unwrap();
    assert!(r.helper[3] && r.invocation(3).outputs().next().is_none());
    // Pixel 2's fine x derivative needs the helper's value.
    assert_eq!(
        derivs(&r, "dx_fine"),
        [Some(1.0), Some(1.0), Some(3.0), None]
    );
    // A quad with no covered pixel does not run at all.
    let launch = Launch {
        covered: vec![false; 4],
        ..Launch::invocations(4)
    };
    let r = run(&s, &launch, &mut Resources::default()).unwrap();
    assert!(r.helper.iter().all(|&h| h));
    assert_eq!(r.stats.instructions, 0);
}

#[test]
fn derivative_in_divergent_control_flow_sees_only_participants() {
    // Only the left column computes a derivative along y: both rows take part.
    // The right column computes a derivative along x alone: no pair is complete, so 0.
    let s = build(Stage::Fragment, |b| {
        let fc = sysval(b, Intrinsic::LoadFragCoord);
        let x = b.channel(fc, 0);
        let y = b.channel(fc, 1);
        let v = b.alu(AluOp::Fmul, &[y, y]);
        let one = b.imm_f32(1.0);
        let left = b.alu(AluOp::Flt, &[x, one]);
        let o = var(b, "d", Mode::ShaderOut, F32);
        let mut nif = b.push_if(left);
        let dy = b.alu(AluOp::FddyFine, &[v]);
        store(b, o, dy);
        b.push_else(&mut nif);
        let dx = b.alu(AluOp::FddxFine, &[v]);
        store(b, o, dx);
        b.pop_if(nif);
    });
    let r = run(&s, &Launch::invocations(4), &mut Resources::default()).unwrap();
    // y² at 0.5 and 1.5: 0.25 and 2.25.
    assert_eq!(
        derivs(&r, "d"),
        [Some(2.0), Some(0.0), Some(2.0), Some(0.0)]
    );
}

#[test]
fn compute_shared_memory_and_barrier() {
    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [4, 1, 1];
    build_into(&mut s, |b| {
        let tmp = var(b, "tmp", Mode::Shared, array(U32, 4));
        let out = binding(b, "out", Mode::Ssbo, array(U32, 0), 0);
        let li = sysval(b, Intrinsic::LoadLocalInvocationIndex);
        let wg = sysval(b, Intrinsic::LoadWorkgroupId);
        let wg = b.channel(wg, 0);
        let ten = b.imm_u32(10);
        let t = b.alu(AluOp::Imul, &[li, ten]);
        let val = b.alu(AluOp::Iadd, &[t, wg]);
        let base = b.deref_var(tmp);
        let mine = b.deref_array(base, li);
        b.store_deref_all(mine, val);
        b.intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[(IndexKind::ExecutionScope, 3), (IndexKind::MemoryScope, 3)],
        );
        let one = b.imm_u32(1);
        let four = b.imm_u32(4);
        let next = b.alu(AluOp::Iadd, &[li, one]);
        let next = b.alu(AluOp::Umod, &[next, four]);
        let theirs = b.deref_array(base, next);
        let got = b.load_deref(theirs);
        let gid = sysval(b, Intrinsic::LoadGlobalInvocationId);
        let gid = b.channel(gid, 0);
        let obase = b.deref_var(out);
        let slot = b.deref_array(obase, gid);
        b.store_deref_all(slot, got);
    });
    let mut res = Resources::default();
    res.ssbos.insert(0, vec![0; 32]);
    let launch = Launch {
        workgroups: [2, 1, 1],
        ..Launch::default()
    };
    let r = run(&s, &launch, &mut res).unwrap();
    assert_eq!(r.len(), 8);
    assert_eq!(
        res.variable(&s, "out").unwrap(),
        [10, 20, 30, 0, 11, 21, 31, 1]
    );
}

#[test]
fn divergent_barriers_are_an_error() {
    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [4, 1, 1];
    build_into(&mut s, |b| {
        let li = sysval(b, Intrinsic::LoadLocalInvocationIndex);
        let two = b.imm_u32(2);
        let c = b.alu(AluOp::Ult, &[li, two]);
        let barrier = [(IndexKind::ExecutionScope, 3)];
        let mut nif = b.push_if(c);
        b.intrinsic(Intrinsic::Barrier, &[], None, &barrier);
        b.push_else(&mut nif);
        b.intrinsic(Intrinsic::Barrier, &[], None, &barrier);
        b.pop_if(nif);
    });
    let err = run(&s, &Launch::default(), &mut Resources::default()).unwrap_err();
    assert!(matches!(err, InterpError::Barrier { .. }), "{err}");
    assert!(err.to_string().contains("2 of the 4"), "{err}");
}

#[test]
fn ssbo_and_shared_atomics() {
    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [8, 1, 1];
    let counters = s.add_struct(StructType {
        name: "Counters".into(),
        members: vec![
            Member::new("count", U32),
            Member::new("max", U32),
            Member::new("olds", array(U32, 8)),
            Member::new("min", I32),
            Member::new("sum", F32),
        ],
    });
    build_into(&mut s, |b| {
        let buf = binding(b, "buf", Mode::Ssbo, Type::Struct(counters), 0);
        let li = sysval(b, Intrinsic::LoadLocalInvocationIndex);
        let root = b.deref_var(buf);
        let count = b.deref_struct(root, 0);
        let one = b.imm_u32(1);
        let atomic = |b: &mut Builder, d: Value, x: Value, op: AtomicOp| {
            b.intrinsic(
                Intrinsic::DerefAtomic,
                &[d, x],
                Some(ValType::scalar(32)),
                &[(IndexKind::AtomicOp, op as u32)],
            )
        };
        let old = atomic(b, count, one, AtomicOp::Iadd);
        let olds = b.deref_struct(root, 2);
        let slot = b.deref_array(olds, li);
        b.store_deref_all(slot, old);
        let zero = b.imm_u32(0);
        let four = b.imm_u32(4);
        b.intrinsic(
            Intrinsic::SsboAtomic,
            &[zero, four, li],
            Some(ValType::scalar(32)),
            &[(IndexKind::AtomicOp, AtomicOp::Umax as u32)],
        );
        let three = b.imm_u32(3);
        let signed = b.alu(AluOp::Isub, &[three, li]);
        let min = b.deref_struct(root, 3);
        atomic(b, min, signed, AtomicOp::Imin);
        let half = b.imm_f32(0.5);
        let sum = b.deref_struct(root, 4);
        atomic(b, sum, half, AtomicOp::Fadd);
        // Only the last invocation sees a count of 8 and swaps in 100.
        let eight = b.imm_u32(8);
        let hundred = b.imm_u32(100);
        b.intrinsic(
            Intrinsic::SsboAtomicSwap,
            &[zero, zero, eight, hundred],
            Some(ValType::scalar(32)),
            &[(IndexKind::AtomicOp, AtomicOp::Cmpxchg as u32)],
        );
        // Shared memory counts too; its old values (0..7) feed the same maximum.
        let prev = b.intrinsic(
            Intrinsic::SharedAtomic,
            &[zero, one],
            Some(ValType::scalar(32)),
            &[(IndexKind::AtomicOp, AtomicOp::Iadd as u32)],
        );
        let shared_max = b.deref_struct(root, 1);
        atomic(b, shared_max, prev, AtomicOp::Umax);
    });
    let mut res = Resources::default();
    res.ssbos.insert(0, vec![0; 48]);
    run(&s, &Launch::default(), &mut res).unwrap();
    let v = res.variable(&s, "buf").unwrap();
    assert_eq!(v[0], 100);
    assert_eq!(v[1], 7);
    assert_eq!(&v[2..10], [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(v[10], (-4i32) as u32 as u64);
    assert_eq!(v[11], f(4.0));
}

#[test]
fn loops_with_break_continue_and_phis() {
    // sum of i for i in 0.. with `continue` at 3 and `break` at 7: 0+1+2+4+5+6 = 18.
    let s = build(Stage::Vertex, |b| {
        let zero = b.imm_u32(0);
        let pre = b.cursor.block;
        let lp = b.push_loop();
        b.cursor = Cursor::at_end(lp.header);
        let i = b.phi(ValType::scalar(32), vec![]);
        let sum = b.phi(ValType::scalar(32), vec![]);
        b.cursor = Cursor::at_end(b.function().successors(lp.header)[0]);
        let seven = b.imm_u32(7);
        let at7 = b.alu(AluOp::Ieq, &[i, seven]);
        let nif = b.push_if(at7);
        b.break_loop(&lp);
        b.pop_if(nif);
        let three = b.imm_u32(3);
        let at3 = b.alu(AluOp::Ieq, &[i, three]);
        let nif = b.push_if(at3);
        let continue_from = b.cursor.block;
        b.continue_loop(&lp);
        b.pop_if(nif);
        let added = b.alu(AluOp::Iadd, &[sum, i]);
        let body_end = b.cursor.block;
        b.jump(lp.cont);
        // The continue block already jumps back to the header: insert before that.
        b.cursor = Cursor {
            block: lp.cont,
            pos: Some(0),
        };
        let sum_next = b.phi(
            ValType::scalar(32),
            vec![(continue_from, sum), (body_end, added)],
        );
        let one = b.imm_u32(1);
        let i_next = b.alu(AluOp::Iadd, &[i, one]);
        let f = b.function_mut();
        f.inst_mut(i).kind = InstKind::Phi(vec![(pre, zero), (lp.cont, i_next)]);
        f.inst_mut(sum).kind = InstKind::Phi(vec![(pre, zero), (lp.cont, sum_next)]);
        let merge = lp.merge;
        b.pop_loop(lp);
        b.cursor = Cursor::at_end(merge);
        output(b, "sum", U32, sum);
        output(b, "i", U32, i);
    });
    let run = run_one(&s);
    let r = run.invocation(0);
    assert_eq!(out(r, "sum"), [18]);
    assert_eq!(out(r, "i"), [7]);
}

#[test]
fn phis_copy_in_parallel() {
    // (a, b) = (b, a) three times starting from (1, 2).
    let s = build(Stage::Vertex, |b| {
        let one = b.imm_u32(1);
        let two = b.imm_u32(2);
        let zero = b.imm_u32(0);
        let three = b.imm_u32(3);
        let pre = b.cursor.block;
        let lp = b.push_loop();
        b.cursor = Cursor::at_end(lp.header);
        let x = b.phi(ValType::scalar(32), vec![]);
        let y = b.phi(ValType::scalar(32), vec![]);
        let n = b.phi(ValType::scalar(32), vec![]);
        b.cursor = Cursor::at_end(b.function().successors(lp.header)[0]);
        let done = b.alu(AluOp::Ieq, &[n, three]);
        let nif = b.push_if(done);
        b.break_loop(&lp);
        b.pop_if(nif);
        let inc = b.alu(AluOp::Iadd, &[n, one]);
        b.jump(lp.cont);
        let f = b.function_mut();
        f.inst_mut(x).kind = InstKind::Phi(vec![(pre, one), (lp.cont, y)]);
        f.inst_mut(y).kind = InstKind::Phi(vec![(pre, two), (lp.cont, x)]);
        f.inst_mut(n).kind = InstKind::Phi(vec![(pre, zero), (lp.cont, inc)]);
        let merge = lp.merge;
        b.pop_loop(lp);
        b.cursor = Cursor::at_end(merge);
        output(b, "x", U32, x);
        output(b, "y", U32, y);
    });
    let run = run_one(&s);
    let r = run.invocation(0);
    assert_eq!((out(r, "x"), out(r, "y")), (&[2][..], &[1][..]));
}

#[test]
fn function_calls_and_private_variables() {
    let mut s = Shader::new(Stage::Vertex);
    let sc = ValType::scalar(32);
    s.add_function("mad", &[sc, sc], Some(sc));
    let counter = s.add_variable(Variable::new("calls", Mode::ShaderTemp, U32));
    {
        let mut b = Builder::new(&mut s, FuncId(1));
        let p = |b: &mut Builder, i: u32| {
            b.intrinsic(
                Intrinsic::LoadParam,
                &[],
                Some(ValType::scalar(32)),
                &[(IndexKind::ParamIdx, i)],
            )
        };
        let a = p(&mut b, 0);
        let c = p(&mut b, 1);
        let sq = b.alu(AluOp::Imul, &[a, a]);
        let r = b.alu(AluOp::Iadd, &[sq, c]);
        let d = b.deref_var(counter);
        let n = b.load_deref(d);
        let one = b.imm_u32(1);
        let n = b.alu(AluOp::Iadd, &[n, one]);
        b.store_deref_all(d, n);
        b.ret(Some(r));
    }
    build_into(&mut s, |b| {
        let three = b.imm_u32(3);
        let four = b.imm_u32(4);
        let x = b.call(FuncId(1), &[three, four]).unwrap();
        let y = b.call(FuncId(1), &[x, three]).unwrap();
        output(b, "y", U32, y);
        let d = b.deref_var(counter);
        let calls = b.load_deref(d);
        output(b, "calls", U32, calls);
    });
    let run = run_one(&s);
    let r = run.invocation(0);
    assert_eq!(out(r, "y"), [172]);
    assert_eq!(out(r, "calls"), [2]);
}

#[test]
fn struct_and_array_derefs_with_indirect_indices() {
    let mut s = Shader::new(Stage::Vertex);
    let item = s.add_struct(StructType {
        name: "Item".into(),
        members: vec![
            Member::new("w", F32),
            Member::new("pos", Type::Vector(Scalar::F32, 3)),
            Member {
                name: "m".into(),
                ty: Type::Matrix {
                    elem: Scalar::F32,
                    cols: 2,
                    rows: 3,
                },
                offset: None,
            },
        ],
    });
    build_into(&mut s, |b| {
        let items = var(b, "items", Mode::FunctionTemp, array(Type::Struct(item), 3));
        let idx = var(b, "idx", Mode::ShaderIn, U32);
        let i = {
            let d = b.deref_var(idx);
            b.load_deref(d)
        };
        let root = b.deref_var(items);
        let elem = b.deref_array(root, i);
        // items[i].pos.z = 5; items[i].m[1] = (1, 2, 3); items[2 - i].w = 7
        let pos = b.deref_struct(elem, 1);
        let two = b.imm_u32(2);
        let z = b.deref_array(pos, two);
        let five = b.imm_f32(5.0);
        b.store_deref_all(z, five);
        let m = b.deref_struct(elem, 2);
        let one = b.imm_u32(1);
        let col = b.deref_array(m, one);
        let c = b.imm_vec_f32(&[1.0, 2.0, 3.0]);
        b.store_deref_all(col, c);
        let j = b.alu(AluOp::Isub, &[two, i]);
        let other = b.deref_array(root, j);
        let w = b.deref_struct(other, 0);
        let seven = b.imm_f32(7.0);
        b.store_deref_all(w, seven);
        // Copy the whole array to an output through copy_deref.
        let o = var(b, "copy", Mode::ShaderOut, array(Type::Struct(item), 3));
        let od = b.deref_var(o);
        b.copy_deref(od, root);
        let pos_back = b.load_deref(pos);
        output(b, "pos", Type::Vector(Scalar::F32, 3), pos_back);
        // A partial write mask keeps the other components.
        let v = b.imm_vec_f32(&[9.0, 9.0, 9.0]);
        b.store_deref(pos, v, 0b001);
        let pos_masked = b.load_deref(pos);
        output(b, "masked", Type::Vector(Scalar::F32, 3), pos_masked);
    });
    let launch = Launch::default().with_input("idx", vec![vec![0]]);
    let r = run(&s, &launch, &mut Resources::default()).unwrap();
    let r = r.invocation(0);
    assert_eq!(out(r, "pos"), fs(&[0.0, 0.0, 5.0]));
    assert_eq!(out(r, "masked"), fs(&[9.0, 0.0, 5.0]));
    // Each item flattens to 1 + 3 + 6 components.
    let copy = to_f32(out(r, "copy"));
    assert_eq!(copy.len(), 30);
    assert_eq!(
        &copy[0..10],
        [0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0]
    );
    assert_eq!(copy[20], 7.0);
}

#[test]
fn arrays_of_blocks_address_one_buffer_per_element() {
    // blocks[idx][1] = idx + 100, with blocks an array of 3 SSBOs from binding 4.
    let s = build(Stage::Vertex, |b| {
        let mut blocks = Variable::new("blocks", Mode::Ssbo, array(array(U32, 0), 3));
        blocks.binding = Some(4);
        blocks.array_of_blocks = true;
        let blocks = b.shader.add_variable(blocks);
        let idx = var(b, "idx", Mode::ShaderIn, U32);
        let i = {
            let d = b.deref_var(idx);
            b.load_deref(d)
        };
        let hundred = b.imm_u32(100);
        let value = b.alu(AluOp::Iadd, &[i, hundred]);
        let root = b.deref_var(blocks);
        let block = b.deref_array(root, i);
        let one = b.imm_u32(1);
        let element = b.deref_array(block, one);
        b.store_deref_all(element, value);
    });
    let launch = |i: u64| Launch::default().with_input("idx", vec![vec![i]]);
    let mut res = Resources::default();
    for binding in 4..7 {
        res.ssbos.insert(binding, vec![0; 8]);
    }
    run(&s, &launch(2), &mut res).unwrap();
    assert_eq!(res.ssbos[&6][4..8], 102u32.to_le_bytes());
    assert!(res.ssbos[&4].iter().chain(&res.ssbos[&5]).all(|&b| b == 0));
    let err = run(&s, &launch(3), &mut res).unwrap_err();
    assert!(matches!(err, InterpError::OutOfBounds { .. }), "{err}");
}

#[test]
fn robust_access_reads_zero_and_drops_writes_out_of_bounds() {
    // arr = {1, 1, 1, 1}; arr[idx] = 5; out = (arr[idx], arr[0] + arr[3])
    let s = build(Stage::Vertex, |b| {
        let arr = var(b, "arr", Mode::FunctionTemp, array(F32, 4));
        let idx = var(b, "idx", Mode::ShaderIn, U32);
        let one = b.imm_f32(1.0);
        let five = b.imm_f32(5.0);
        let root = b.deref_var(arr);
        for k in 0..4 {
            let k = b.imm_u32(k);
            let e = b.deref_array(root, k);
            b.store_deref_all(e, one);
        }
        let i = {
            let d = b.deref_var(idx);
            b.load_deref(d)
        };
        let e = b.deref_array(root, i);
        b.store_deref_all(e, five);
        let at_idx = b.load_deref(e);
        let (zero, three) = (b.imm_u32(0), b.imm_u32(3));
        let first = b.deref_array(root, zero);
        let last = b.deref_array(root, three);
        let (first, last) = (b.load_deref(first), b.load_deref(last));
        let ends = b.alu(AluOp::Fadd, &[first, last]);
        output(b, "at_idx", F32, at_idx);
        output(b, "ends", F32, ends);
    });
    let launch = |i: u64| Launch {
        robust_access: true,
        ..Launch::default().with_input("idx", vec![vec![i]])
    };
    let outputs = |i: u64| {
        let r = run(&s, &launch(i), &mut Resources::default()).unwrap();
        let o = r.invocation(0);
        [out(o, "at_idx")[0], out(o, "ends")[0]].map(|v| f32::from_bits(v as u32))
    };
    assert_eq!(outputs(3), [5.0, 6.0]);
    for bad in [4, 0xffff_ffff] {
        assert_eq!(outputs(bad), [0.0, 2.0], "index {bad}");
    }
}

#[test]
fn out_of_bounds_accesses_are_errors_naming_the_instruction() {
    let s = build(Stage::Vertex, |b| {
        let arr = var(b, "arr", Mode::FunctionTemp, array(F32, 4));
        let idx = var(b, "idx", Mode::ShaderIn, U32);
        let i = {
            let d = b.deref_var(idx);
            b.load_deref(d)
        };
        let root = b.deref_var(arr);
        let e = b.deref_array(root, i);
        let v = b.load_deref(e);
        output(b, "v", F32, v);
    });
    let launch = |i: u64| Launch::default().with_input("idx", vec![vec![i]]);
    assert!(run(&s, &launch(3), &mut Resources::default()).is_ok());
    for bad in [4, 0xffff_ffff] {
        let err = run(&s, &launch(bad), &mut Resources::default()).unwrap_err();
        let InterpError::OutOfBounds { site, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(site.function, "main");
        assert!(site.inst.ends_with("= load_deref"), "{err}");
    }

    let s = build(Stage::Vertex, |b| {
        let zero = b.imm_u32(0);
        let off = b.imm_u32(14);
        let v = b.intrinsic(
            Intrinsic::LoadSsbo,
            &[zero, off],
            Some(ValType::scalar(32)),
            &[],
        );
        output(b, "v", U32, v);
    });
    let mut res = Resources::default();
    res.ssbos.insert(0, vec![0; 16]);
    let err = run(&s, &Launch::default(), &mut res).unwrap_err();
    assert!(
        matches!(&err, InterpError::OutOfBounds { site, .. } if site.inst.ends_with("= load_ssbo")),
        "{err}"
    );
    res.ssbos.clear();
    let err = run(&s, &Launch::default(), &mut res).unwrap_err();
    assert!(matches!(err, InterpError::Invalid { .. }), "{err}");
}

#[test]
fn step_limit_stops_infinite_loops() {
    let s = build(Stage::Vertex, |b| {
        let lp = b.push_loop();
        b.pop_loop(lp);
    });
    let launch = Launch {
        step_limit: 1000,
        ..Launch::default()
    };
    let err = run(&s, &launch, &mut Resources::default()).unwrap_err();
    assert!(
        matches!(err, InterpError::StepLimit { limit: 1000, .. }),
        "{err}"
    );
}

#[test]
fn global_memory_is_unsupported() {
    let s = build(Stage::Vertex, |b| {
        let addr = b.imm(64, &[0x1000]);
        b.intrinsic(
            Intrinsic::LoadGlobal,
            &[addr],
            Some(ValType::scalar(32)),
            &[],
        );
    });
    let err = run(&s, &Launch::default(), &mut Resources::default()).unwrap_err();
    assert!(matches!(err, InterpError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("load_global"), "{err}");
}

#[test]
fn unreachable_and_malformed_code_is_an_error() {
    let s = build(Stage::Vertex, |b| {
        let block = b.cursor.block;
        b.function_mut().set_exit(block, Terminator::Unreachable);
    });
    let err = run(&s, &Launch::default(), &mut Resources::default()).unwrap_err();
    assert!(err.to_string().contains("unreachable"), "{err}");
}

#[test]
fn lowered_io_uniforms_and_buffers() {
    let s = build(Stage::Vertex, |b| {
        let mut color = Variable::new("color", Mode::ShaderIn, F32X4);
        color.location = Some(2);
        b.shader.add_variable(color);
        let mut o = Variable::new("o", Mode::ShaderOut, F32X4);
        o.location = Some(1);
        b.shader.add_variable(o);
        var(b, "scale", Mode::Uniform, F32);
        var(b, "offset", Mode::Uniform, Type::Vector(Scalar::F32, 2));
        let zero = b.imm_u32(0);
        // color.zw through load_input (location 2, component 2).
        let zw = b.intrinsic(
            Intrinsic::LoadInput,
            &[zero],
            Some(ValType::new(32, 2)),
            &[(IndexKind::Base, 2), (IndexKind::Component, 2)],
        );
        let scale = b.intrinsic(
            Intrinsic::LoadUniform,
            &[zero],
            Some(ValType::scalar(32)),
            &[],
        );
        let eight = b.imm_u32(8);
        let off = b.intrinsic(
            Intrinsic::LoadUniform,
            &[eight],
            Some(ValType::new(32, 2)),
            &[],
        );
        let pc = b.intrinsic(
            Intrinsic::LoadPushConstant,
            &[zero],
            Some(ValType::scalar(32)),
            &[(IndexKind::Base, 4)],
        );
        let ubo = b.intrinsic(
            Intrinsic::LoadUbo,
            &[zero, eight],
            Some(ValType::scalar(32)),
            &[],
        );
        let scaled = b.alu(AluOp::Fmul, &[zw, scale]);
        let moved = b.alu(AluOp::Fadd, &[scaled, off]);
        let x = b.channel(moved, 0);
        let y = b.channel(moved, 1);
        let v = b.vec(&[x, y, pc, ubo]);
        b.intrinsic(
            Intrinsic::StoreOutput,
            &[v, zero],
            None,
            &[(IndexKind::Base, 1), (IndexKind::WriteMask, 0xf)],
        );
    });
    let mut res = Resources::default();
    res.set_variable(&s, "scale", &fs(&[2.0])).unwrap();
    res.set_variable(&s, "offset", &fs(&[0.5, 0.25])).unwrap();
    res.push_constants = [0u8; 4].into_iter().chain(7.0f32.to_le_bytes()).collect();
    res.ubos.insert(
        0,
        [0u8; 8].into_iter().chain(9.0f32.to_le_bytes()).collect(),
    );
    let launch = Launch::default().with_input("color", vec![fs(&[1.0, 2.0, 3.0, 4.0])]);
    let r = run(&s, &launch, &mut res).unwrap();
    assert_eq!(out(r.invocation(0), "o"), fs(&[6.5, 8.25, 7.0, 9.0]));
}

#[test]
fn vertex_and_compute_system_values() {
    let s = build(Stage::Vertex, |b| {
        let id = sysval(b, Intrinsic::LoadVertexId);
        output(b, "id", U32, id);
    });
    let launch = Launch {
        system: SystemValues {
            base_vertex: 10,
            ..SystemValues::default()
        },
        ..Launch::invocations(3)
    };
    let r = run(&s, &launch, &mut Resources::default()).unwrap();
    let ids: Vec<_> = r.invocations().map(|i| out(i, "id")[0]).collect();
    assert_eq!(ids, [10, 11, 12]);

    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [2, 2, 1];
    build_into(&mut s, |b| {
        let out = binding(b, "out", Mode::Ssbo, array(U32, 0), 0);
        let gid = sysval(b, Intrinsic::LoadGlobalInvocationId);
        let num = sysval(b, Intrinsic::LoadNumWorkgroups);
        let size = sysval(b, Intrinsic::LoadWorkgroupSize);
        // Linear global index: gid.y * (num.x * size.x) + gid.x.
        let (gx, gy) = (b.channel(gid, 0), b.channel(gid, 1));
        let (nx, sx) = (b.channel(num, 0), b.channel(size, 0));
        let row = b.alu(AluOp::Imul, &[nx, sx]);
        let base = b.alu(AluOp::Imul, &[gy, row]);
        let lin = b.alu(AluOp::Iadd, &[base, gx]);
        let li = sysval(b, Intrinsic::LoadLocalInvocationIndex);
        let root = b.deref_var(out);
        let slot = b.deref_array(root, lin);
        b.store_deref_all(slot, li);
    });
    let mut res = Resources::default();
    res.ssbos.insert(0, vec![0; 4 * 8]);
    let launch = Launch {
        workgroups: [2, 1, 1],
        ..Launch::default()
    };
    run(&s, &launch, &mut res).unwrap();
    assert_eq!(res.variable(&s, "out").unwrap(), [0, 1, 0, 1, 2, 3, 2, 3]);
}

#[test]
fn storage_images() {
    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [2, 1, 1];
    build_into(&mut s, |b| {
        let img = binding(
            b,
            "img",
            Mode::Uniform,
            Type::Image {
                dim: Dim::D2,
                arrayed: false,
                base: BaseType::Uint,
            },
            1,
        );
        let li = sysval(b, Intrinsic::LoadLocalInvocationIndex);
        let zero = b.imm_u32(0);
        let coord = b.vec(&[li, zero]);
        let d = b.deref_var(img);
        let dim = (IndexKind::ImageDim, Dim::D2.index_value());
        let texel = b.intrinsic(
            Intrinsic::ImageDerefLoad,
            &[d, coord, zero, zero],
            Some(ValType::new(32, 4)),
            &[dim],
        );
        let one = b.imm_u32(1);
        let bumped = b.alu(AluOp::Iadd, &[texel, one]);
        let down = b.vec(&[li, one]);
        b.intrinsic(
            Intrinsic::ImageDerefStore,
            &[d, down, zero, bumped, zero],
            None,
            &[dim],
        );
        b.intrinsic(
            Intrinsic::ImageDerefAtomic,
            &[d, coord, zero, li],
            Some(ValType::scalar(32)),
            &[dim, (IndexKind::AtomicOp, AtomicOp::Iadd as u32)],
        );
        let size = b.intrinsic(
            Intrinsic::ImageDerefSize,
            &[d, zero],
            Some(ValType::new(32, 2)),
            &[dim],
        );
        let w = b.channel(size, 0);
        let sz = b.vec(&[w, w, w, w]);
        let corner = b.vec(&[one, one]);
        b.intrinsic(
            Intrinsic::ImageDerefStore,
            &[d, corner, zero, sz, zero],
            None,
            &[dim],
        );
    });
    let mut res = Resources::default();
    let mut img = Image::new(2, 2, 1, 1).unwrap();
    img.texels[0] = [10, 20, 30, 40];
    img.texels[1] = [50, 60, 70, 80];
    res.images.insert(1, img);
    run(&s, &Launch::default(), &mut res).unwrap();
    let t = &res.images[&1].texels;
    assert_eq!(t[0], [10, 20, 30, 40]);
    assert_eq!(t[1], [51, 60, 70, 80]);
    assert_eq!(t[2], [11, 21, 31, 41]);
    assert_eq!(t[3], [2, 2, 2, 2]);
}

// --- Textures -----------------------------------------------------------------------------

/// Runs one vertex invocation that samples with `txl` at LOD 0 at every coordinate.
fn sample_2d(coords: &[[f32; 2]], sampler: SamplerState, texture: Texture) -> Vec<Vec<f32>> {
    let s = build(Stage::Vertex, |b| {
        for (i, c) in coords.iter().enumerate() {
            let c = b.imm_vec_f32(c);
            let lod = b.imm_f32(0.0);
            let t = Tex::new(
                TexOp::Txl,
                Dim::D2,
                vec![(TexSrc::Coord, c), (TexSrc::Lod, lod)],
            );
            let v = b.tex(t, ValType::new(32, 4));
            output(b, &format!("s{i}"), F32X4, v);
        }
    });
    let mut res = Resources::default();
    res.textures.insert(0, texture);
    res.samplers.insert(0, sampler);
    let r = run(&s, &Launch::default(), &mut res).unwrap();
    (0..coords.len())
        .map(|i| to_f32(out(r.invocation(0), &format!("s{i}"))))
        .collect()
}

const T00: [f32; 4] = [1.0, 0.0, 0.0, 1.0];
const T10: [f32; 4] = [0.0, 1.0, 0.0, 1.0];
const T01: [f32; 4] = [0.0, 0.0, 1.0, 1.0];
const T11: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

fn quad_texture() -> Texture {
    Texture::from_f32(2, 2, 1, &[T00, T10, T01, T11])
}

#[test]
fn nearest_and_bilinear_filtering() {
    let got = sample_2d(
        &[[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.99, 0.99]],
        SamplerState::default(),
        quad_texture(),
    );
    assert_eq!(got, [T00, T10, T01, T11]);
    let got = sample_2d(
        &[[0.5, 0.5], [0.25, 0.25], [0.375, 0.25]],
        SamplerState::linear().with_wrap(Wrap::ClampToEdge),
        quad_texture(),
    );
    assert_eq!(got[0], [0.5, 0.5, 0.5, 1.0]);
    assert_eq!(got[1], T00);
    assert_eq!(got[2], [0.75, 0.25, 0.0, 1.0]);
}

#[test]
fn wrap_modes() {
    let coords = [[-0.25, 0.25], [1.75, 0.25], [1.25, 0.25]];
    let with = |w| {
        sample_2d(
            &coords,
            SamplerState::default().with_wrap(w),
            quad_texture(),
        )
    };
    assert_eq!(with(Wrap::Repeat), [T10, T10, T00]);
    assert_eq!(with(Wrap::ClampToEdge), [T00, T10, T10]);
    assert_eq!(with(Wrap::MirroredRepeat), [T00, T00, T10]);
    // Linear filtering at the left edge: repeat blends in the right column, clamp does not.
    let edge = [[0.0, 0.25]];
    let linear = |w| sample_2d(&edge, SamplerState::linear().with_wrap(w), quad_texture());
    assert_eq!(linear(Wrap::Repeat)[0], [0.5, 0.5, 0.0, 1.0]);
    assert_eq!(linear(Wrap::ClampToEdge)[0], T00);
}

/// An 8×8 texture with 4 levels whose texels are `(level, 0, 0, 1)`.
fn mip_texture() -> Texture {
    let level = |l: u32| {
        let n = 8 >> l;
        MipLevel::from_f32(n, n, 1, &vec![[l as f32, 0.0, 0.0, 1.0]; (n * n) as usize])
    };
    Texture {
        layers: 1,
        levels: (0..4).map(level).collect(),
    }
}

/// Samples with `op` in a 2×2 quad where the coordinates are `frag_coord.xy · k`, so that
/// `ρ = 8k` texels per pixel; returns the red channel seen by pixel 0.
fn quad_lod(op: TexOp, k: f32, extra: Vec<(TexSrc, f32)>, sampler: SamplerState) -> Vec<f32> {
    let s = build(Stage::Fragment, |b| {
        let fc = sysval(b, Intrinsic::LoadFragCoord);
        let scale = b.imm_f32(k);
        let c = b.alu_swizzled(
            AluOp::Fmul,
            vec![
                AluSrc::swizzled(fc, &[0, 1]),
                AluSrc::swizzled(scale, &[0, 0]),
            ],
            2,
        );
        let mut srcs = vec![(TexSrc::Coord, c)];
        for (kind, x) in extra {
            let v = b.imm_f32(x);
            srcs.push((kind, v));
        }
        let comps = if op == TexOp::Lod { 2 } else { 4 };
        let v = b.tex(Tex::new(op, Dim::D2, srcs), ValType::new(32, comps));
        let ty = Type::Vector(Scalar::F32, comps);
        output(b, "v", ty, v);
    });
    let mut res = Resources::default();
    res.textures.insert(0, mip_texture());
    res.samplers.insert(0, sampler);
    let r = run(&s, &Launch::invocations(4), &mut res).unwrap();
    to_f32(out(r.invocation(0), "v"))
}

#[test]
fn implicit_lod_selects_mip_levels() {
    let nearest = SamplerState::default();
    for (k, level) in [
        (1.0 / 8.0, 0.0),
        (0.25, 1.0),
        (0.5, 2.0),
        (1.0, 3.0),
        (4.0, 3.0),
    ] {
        assert_eq!(
            quad_lod(TexOp::Tex, k, vec![], nearest)[0],
            level,
            "k = {k}"
        );
    }
    // ρ = 3: λ = log2 3 ≈ 1.585, rounded to level 2, or blended between 1 and 2.
    assert_eq!(quad_lod(TexOp::Tex, 3.0 / 8.0, vec![], nearest)[0], 2.0);
    let linear = SamplerState {
        mipmap_mode: Filter::Linear,
        ..SamplerState::default()
    };
    let blended = quad_lod(TexOp::Tex, 3.0 / 8.0, vec![], linear)[0];
    assert_eq!(blended, 3f64.log2() as f32);
    // A bias of 1 moves one level down the chain; the lod query reports it too.
    assert_eq!(
        quad_lod(TexOp::Txb, 0.125, vec![(TexSrc::Bias, 1.0)], nearest)[0],
        1.0
    );
    assert_eq!(quad_lod(TexOp::Lod, 0.25, vec![], nearest), [1.0, 1.0]);
    assert_eq!(
        quad_lod(TexOp::Lod, 1.0 / 16.0, vec![], nearest),
        [0.0, 0.0]
    );
    // Explicit LODs and derivatives.
    assert_eq!(
        quad_lod(TexOp::Txl, 0.125, vec![(TexSrc::Lod, 2.0)], nearest)[0],
        2.0
    );
    assert_eq!(
        quad_lod(TexOp::Txl, 0.125, vec![(TexSrc::Lod, 1.5)], linear)[0],
        1.5
    );
    // Sampler LOD clamps.
    let clamped = SamplerState {
        max_lod: 1.0,
        ..nearest
    };
    assert_eq!(quad_lod(TexOp::Tex, 1.0, vec![], clamped)[0], 1.0);
}

#[test]
fn explicit_derivatives_select_mip_levels() {
    let s = build(Stage::Vertex, |b| {
        let c = b.imm_vec_f32(&[0.5, 0.5]);
        let ddx = b.imm_vec_f32(&[0.5, 0.0]);
        let ddy = b.imm_vec_f32(&[0.0, 0.125]);
        let t = Tex::new(
            TexOp::Txd,
            Dim::D2,
            vec![(TexSrc::Coord, c), (TexSrc::Ddx, ddx), (TexSrc::Ddy, ddy)],
        );
        let v = b.tex(t, ValType::new(32, 4));
        output(b, "v", F32X4, v);
    });
    let mut res = Resources::default();
    res.textures.insert(0, mip_texture());
    res.samplers.insert(0, SamplerState::default());
    let r = run(&s, &Launch::default(), &mut res).unwrap();
    // ρ = max(0.5 · 8, 0.125 · 8) = 4: level 2.
    assert_eq!(to_f32(out(r.invocation(0), "v"))[0], 2.0);
}

#[test]
fn texel_fetch_and_queries() {
    let s = build(Stage::Vertex, |b| {
        let c = b.imm(32, &[1, 0]);
        let zero = b.imm_u32(0);
        let one = b.imm_u32(1);
        let t = Tex::new(
            TexOp::Txf,
            Dim::D2,
            vec![(TexSrc::Coord, c), (TexSrc::Lod, zero)],
        );
        let texel = b.tex(t, ValType::new(32, 4));
        output(b, "texel", F32X4, texel);
        let t = Tex::new(TexOp::Txs, Dim::D2, vec![(TexSrc::Lod, one)]);
        let size = b.tex(t, ValType::new(32, 2));
        output(b, "size", Type::Vector(Scalar::U32, 2), size);
        let t = Tex::new(TexOp::QueryLevels, Dim::D2, vec![]);
        let levels = b.tex(t, ValType::scalar(32));
        output(b, "levels", U32, levels);
    });
    let mut res = Resources::default();
    res.textures.insert(
        0,
        quad_texture().with_level(MipLevel::from_f32(1, 1, 1, &[T11])),
    );
    let r = run(&s, &Launch::default(), &mut res).unwrap();
    let r = r.invocation(0);
    assert_eq!(out(r, "texel"), fs(&T10));
    assert_eq!(out(r, "size"), [1, 1]);
    assert_eq!(out(r, "levels"), [2]);

    let s = build(Stage::Vertex, |b| {
        let c = b.imm(32, &[2, 0]);
        let t = Tex::new(TexOp::Txf, Dim::D2, vec![(TexSrc::Coord, c)]);
        b.tex(t, ValType::new(32, 4));
    });
    let err = run(&s, &Launch::default(), &mut res).unwrap_err();
    assert!(
        matches!(&err, InterpError::OutOfBounds { site, .. } if site.inst.ends_with("= txf")),
        "{err}"
    );
}

#[test]
fn shadow_compare_and_gather() {
    let depth = Texture::from_f32(2, 2, 1, &[0.1, 0.2, 0.3, 0.4].map(|d| [d, 0.0, 0.0, 1.0]));
    let s = build(Stage::Vertex, |b| {
        for (name, op, coord, reference, shadow) in [
            ("center", TexOp::Txl, [0.5, 0.5], 0.25, true),
            ("corner", TexOp::Txl, [0.25, 0.25], 0.05, true),
            ("gather", TexOp::Tg4, [0.5, 0.5], 0.0, false),
            ("gather_cmp", TexOp::Tg4, [0.5, 0.5], 0.25, true),
        ] {
            let c = b.imm_vec_f32(&coord);
            let r = b.imm_f32(reference);
            let lod = b.imm_f32(0.0);
            let mut t = Tex::new(op, Dim::D2, vec![(TexSrc::Coord, c), (TexSrc::Lod, lod)]);
            if shadow {
                t.is_shadow = true;
                t.srcs.push((TexSrc::Comparator, r));
            }
            let v = b.tex(t, ValType::new(32, 4));
            output(b, name, F32X4, v);
        }
    });
    let mut res = Resources::default();
    res.textures.insert(0, depth);
    res.samplers.insert(
        0,
        SamplerState {
            compare: Some(CompareFunc::LessOrEqual),
            ..SamplerState::linear()
        },
    );
    let r = run(&s, &Launch::default(), &mut res).unwrap();
    let r = r.invocation(0);
    assert_eq!(to_f32(out(r, "center")), [0.5, 0.0, 0.0, 1.0]);
    assert_eq!(to_f32(out(r, "corner")), [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(to_f32(out(r, "gather")), [0.3, 0.4, 0.2, 0.1]);
    assert_eq!(to_f32(out(r, "gather_cmp")), [1.0, 1.0, 0.0, 0.0]);
    // Shadow sampling needs a compare function.
    res.samplers.insert(0, SamplerState::default());
    assert!(matches!(
        run(&s, &Launch::default(), &mut res),
        Err(InterpError::Invalid { .. })
    ));
}

#[test]
fn cube_array_3d_and_1d_textures() {
    let faces: Vec<[f32; 4]> = (0..6).map(|f| [f as f32, 0.0, 0.0, 1.0]).collect();
    let cube = Texture {
        layers: 6,
        levels: vec![MipLevel::from_f32(1, 1, 1, &faces)],
    };
    let layers: Vec<[f32; 4]> = (0..3).map(|l| [l as f32, 0.0, 0.0, 1.0]).collect();
    let arr = Texture {
        layers: 3,
        levels: vec![MipLevel::from_f32(1, 1, 1, &layers)],
    };
    let slices: Vec<[f32; 4]> = (0..8).map(|i| [i as f32, 0.0, 0.0, 1.0]).collect();
    let vol = Texture::from_f32(2, 2, 2, &slices);
    let line = Texture::from_f32(4, 1, 1, &slices[..4]);
    let dirs = [
        [1.0, 0.2, 0.3],
        [-1.0, 0.5, 0.0],
        [0.0, 1.0, 0.0],
        [0.1, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.3, 0.3, -1.0],
    ];
    let s = build(Stage::Vertex, |b| {
        let lod = b.imm_f32(0.0);
        let sample = |b: &mut Builder, name: String, t: Tex, coord: &[f32]| {
            let c = b.imm_vec_f32(coord);
            let mut t = t;
            t.srcs = vec![(TexSrc::Coord, c), (TexSrc::Lod, lod)];
            let v = b.tex(t, ValType::new(32, 4));
            output(b, &name, F32X4, v);
        };
        for (i, d) in dirs.iter().enumerate() {
            let t = Tex {
                texture: 1,
                ..Tex::new(TexOp::Txl, Dim::Cube, vec![])
            };
            sample(b, format!("cube{i}"), t, d);
        }
        for (i, layer) in [1.4, 1.6, 2.5, 7.0, -1.0].into_iter().enumerate() {
            let t = Tex {
                texture: 2,
                is_array: true,
                ..Tex::new(TexOp::Txl, Dim::D2, vec![])
            };
            sample(b, format!("layer{i}"), t, &[0.5, 0.5, layer]);
        }
        let t = Tex {
            texture: 3,
            ..Tex::new(TexOp::Txl, Dim::D3, vec![])
        };
        sample(b, "vol".into(), t, &[0.75, 0.25, 0.75]);
        let t = Tex {
            texture: 4,
            ..Tex::new(TexOp::Txl, Dim::D1, vec![])
        };
        sample(b, "line".into(), t, &[0.6]);
    });
    let mut res = Resources::default();
    for (binding, t) in [(1, cube), (2, arr), (3, vol), (4, line)] {
        res.textures.insert(binding, t);
    }
    res.samplers.insert(0, SamplerState::default());
    let r = run(&s, &Launch::default(), &mut res).unwrap();
    let red = |name: String| to_f32(out(r.invocation(0), &name))[0];
    let faces: Vec<f32> = (0..6).map(|i| red(format!("cube{i}"))).collect();
    assert_eq!(faces, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let layers: Vec<f32> = (0..5).map(|i| red(format!("layer{i}"))).collect();
    assert_eq!(layers, [1.0, 2.0, 2.0, 2.0, 0.0]);
    // (x, y, z) = (1, 0, 1): index (1 · 2 + 0) · 2 + 1 = 5.
    assert_eq!(red("vol".into()), 5.0);
    assert_eq!(red("line".into()), 2.0);
}

#[test]
fn textures_through_derefs_and_integer_results() {
    let s = build(Stage::Vertex, |b| {
        let texture = Type::Texture {
            dim: Dim::D2,
            arrayed: false,
            shadow: false,
            base: BaseType::Uint,
        };
        let textures = binding(b, "textures", Mode::Uniform, array(texture, 2), 3);
        let one = b.imm_u32(1);
        let root = b.deref_var(textures);
        let second = b.deref_array(root, one);
        let c = b.imm(32, &[0, 1]);
        let t = Tex {
            dest_type: BaseType::Uint,
            ..Tex::new(
                TexOp::Txf,
                Dim::D2,
                vec![(TexSrc::Coord, c), (TexSrc::TextureDeref, second)],
            )
        };
        let v = b.tex(t, ValType::new(32, 4));
        output(b, "v", Type::Vector(Scalar::U32, 4), v);
    });
    let mut res = Resources::default();
    let ints = Texture {
        layers: 1,
        levels: vec![MipLevel {
            width: 1,
            height: 2,
            depth: 1,
            texels: vec![[1, 2, 3, 4], [5, 6, 7, 0xffff_ffff]],
        }],
    };
    res.textures.insert(4, ints);
    let r = run(&s, &Launch::default(), &mut res).unwrap();
    assert_eq!(out(r.invocation(0), "v"), [5, 6, 7, 0xffff_ffff]);
}

// --- Layouts and values ---------------------------------------------------------------------

fn size_align(layout: &memory::Layout, ty: &Type) -> (u32, u32) {
    let info = layout.info(ty).unwrap();
    (info.size, info.align)
}

#[test]
fn std430_and_slot_layouts() {
    let mut s = Shader::new(Stage::Vertex);
    let st = s.add_struct(StructType {
        name: "S".into(),
        members: vec![
            Member::new("a", F32),
            Member::new("b", Type::Vector(Scalar::F32, 3)),
            Member::new("c", F32),
            Member {
                name: "d".into(),
                ty: Type::Vector(Scalar::F32, 2),
                offset: Some(40),
            },
        ],
    });
    let ty = Type::Struct(st);
    let std430 = memory::Layout::new(&s, LayoutRule::Std430);
    assert_eq!(std430.member_offsets(st).unwrap(), [0, 16, 28, 40]);
    assert_eq!(size_align(&std430, &ty), (48, 16));
    let slots = memory::Layout::new(&s, LayoutRule::Slots);
    assert_eq!(slots.member_offsets(st).unwrap(), [0, 16, 32, 48]);
    let mat = Type::Matrix {
        elem: Scalar::F32,
        cols: 3,
        rows: 3,
    };
    assert_eq!(size_align(&std430, &mat), (48, 16));
    assert_eq!(
        size_align(&std430, &array(Type::Scalar(Scalar::BOOL), 3)),
        (12, 4)
    );
    let strided = Type::Array {
        elem: Box::new(F32),
        len: 4,
        stride: 16,
    };
    assert_eq!(size_align(&std430, &strided), (64, 4));

    // Placement: located inputs at location · 16, the rest after them.
    let mut a = Variable::new("a", Mode::ShaderIn, F32X4);
    a.location = Some(3);
    s.add_variable(a);
    s.add_variable(Variable::new("b", Mode::ShaderIn, F32));
    s.add_variable(Variable::new("t", Mode::FunctionTemp, F32));
    s.add_variable(Variable::new("u", Mode::FunctionTemp, F32X4));
    let l = layout_variables(&s).unwrap();
    assert_eq!((l[0].storage, l[0].offset), (Storage::Input, 48));
    assert_eq!((l[1].storage, l[1].offset), (Storage::Input, 64));
    assert_eq!((l[2].offset, l[3].offset), (0, 16));
}

#[test]
fn values_parse_and_format() {
    let s = Shader::new(Stage::Vertex);
    let v = parse_value(&s, &F32X4, "1.0,2, 3 ,4").unwrap();
    assert_eq!(v, fs(&[1.0, 2.0, 3.0, 4.0]));
    assert_eq!(parse_value(&s, &F32X4, "(0.5)").unwrap(), fs(&[0.5; 4]));
    assert!(parse_value(&s, &F32X4, "1,2").is_err());
    assert_eq!(parse_value(&s, &I32, "-1").unwrap(), [0xffff_ffff]);
    assert!(parse_value(&s, &Type::Scalar(Scalar::new(BaseType::Uint, 8)), "256").is_err());
    let bools = Type::Vector(Scalar::BOOL, 2);
    assert_eq!(parse_value(&s, &bools, "true false").unwrap(), [1, 0]);
    let specials = parse_value(&s, &F32X4, "nan,-inf,-0.0,0x3f800000").unwrap();
    assert_eq!(format_value(&s, &F32X4, &specials), "nan, -inf, -0.0, 1.0");
    assert_eq!(format_value(&s, &I32, &[0xffff_fffe]), "-2");
    assert_eq!(format_value(&s, &bools, &[1, 0]), "true, false");
    // Shortest round-trip forms.
    let third = parse_value(&s, &F32, "0.33333334").unwrap();
    assert_eq!(format_value(&s, &F32, &third), "0.33333334");
    let half = Type::Scalar(Scalar::new(BaseType::Float, 16));
    assert_eq!(parse_value(&s, &half, "0.1").unwrap(), [0x2e66]);
}

#[test]
fn zero_variable_sizes_a_buffer_and_keeps_its_data() {
    let mut s = Shader::new(Stage::Compute);
    build_into(&mut s, |b| {
        binding(b, "data", Mode::Ssbo, array(U32, 4), 1);
        var(b, "pos", Mode::ShaderIn, F32X4);
    });
    let mut res = Resources::default();
    res.zero_variable(&s, "data").unwrap();
    assert_eq!(res.variable(&s, "data").unwrap(), [0, 0, 0, 0]);
    res.ssbos.insert(1, vec![7, 0, 0, 0]);
    res.zero_variable(&s, "data").unwrap();
    assert_eq!(res.variable(&s, "data").unwrap(), [7, 0, 0, 0]);
    assert!(res.zero_variable(&s, "pos").is_err());
}

#[test]
fn variables_by_name_in_launch_and_resources() {
    let mut s = Shader::new(Stage::Vertex);
    build_into(&mut s, |b| {
        var(b, "pos", Mode::ShaderIn, F32X4);
        binding(b, "data", Mode::Ssbo, array(U32, 0), 2);
    });
    let per_inv = parse_variable(&s, "pos", "1,2,3,4; 5,6,7,8").unwrap();
    assert_eq!(per_inv.len(), 2);
    let mut res = Resources::default();
    res.set_variable(&s, "data", &[1, 2, 3]).unwrap();
    assert_eq!(res.ssbos[&2].len(), 12);
    assert_eq!(res.variable(&s, "data").unwrap(), [1, 2, 3]);
    assert!(res.set_variable(&s, "pos", &[0; 4]).is_err());
    assert_eq!(
        format_variable(&s, "pos", &fs(&[1.0, 2.0, 3.0, 4.0])).unwrap(),
        "1.0, 2.0, 3.0, 4.0"
    );
    // A launch input with the wrong component count is rejected up front.
    let bad = Launch::default().with_input("pos", vec![vec![0; 3]]);
    assert!(matches!(
        run(&s, &bad, &mut res),
        Err(InterpError::Setup(_))
    ));
}

#[test]
fn results_serialize() {
    let r = RunResult {
        outputs: vec![OutputValues {
            name: "o".into(),
            components: 2,
            values: vec![1, 2],
        }],
        discarded: vec![false],
        helper: vec![false],
        stats: Stats {
            instructions: 3,
            alu: 1,
        },
    };
    fn assert_serde<T: Serialize + for<'de> Deserialize<'de>>(_: &T) {}
    assert_serde(&r);
    assert_serde(&Launch::default());
    assert_serde(&Resources::default());
}

#[test]
fn lowered_shared_memory_explicit_strides_and_output_reads() {
    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [2, 1, 1];
    build_into(&mut s, |b| {
        let strided = Type::Array {
            elem: Box::new(U32),
            len: 4,
            stride: 16,
        };
        let out = binding(b, "out", Mode::Ssbo, strided, 0);
        let li = sysval(b, Intrinsic::LoadLocalInvocationIndex);
        let four = b.imm_u32(4);
        let off = b.alu(AluOp::Imul, &[li, four]);
        let hundred = b.imm_u32(100);
        let val = b.alu(AluOp::Iadd, &[li, hundred]);
        // shared[base 8 + 4·li] = 100 + li, read back by the other invocation after a barrier.
        b.intrinsic(
            Intrinsic::StoreShared,
            &[val, off],
            None,
            &[(IndexKind::Base, 8), (IndexKind::WriteMask, 1)],
        );
        b.intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[(IndexKind::ExecutionScope, 3)],
        );
        let one = b.imm_u32(1);
        let other = b.alu(AluOp::Ixor, &[li, one]);
        let other_off = b.alu(AluOp::Imul, &[other, four]);
        let got = b.intrinsic(
            Intrinsic::LoadShared,
            &[other_off],
            Some(ValType::scalar(32)),
            &[(IndexKind::Base, 8)],
        );
        let root = b.deref_var(out);
        let slot = b.deref_array(root, li);
        b.store_deref_all(slot, got);
    });
    let mut res = Resources::default();
    res.ssbos.insert(0, vec![0; 64]);
    run(&s, &Launch::default(), &mut res).unwrap();
    let bytes = &res.ssbos[&0];
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!((word(0), word(16)), (101, 100));
    assert_eq!(res.variable(&s, "out").unwrap(), [101, 100, 0, 0]);

    // Outputs can be read back, through derefs and through lowered I/O.
    let s = build(Stage::Vertex, |b| {
        let mut o = Variable::new("o", Mode::ShaderOut, F32X4);
        o.location = Some(0);
        let o = b.shader.add_variable(o);
        let v = b.imm_vec_f32(&[1.0, 2.0, 3.0, 4.0]);
        store(b, o, v);
        let zero = b.imm_u32(0);
        let yz = b.intrinsic(
            Intrinsic::LoadOutput,
            &[zero],
            Some(ValType::new(32, 2)),
            &[(IndexKind::Component, 1)],
        );
        output(b, "yz", Type::Vector(Scalar::F32, 2), yz);
    });
    assert_eq!(out(run_one(&s).invocation(0), "yz"), fs(&[2.0, 3.0]));
}

// --- Limits on untrusted shaders, resources and launches ----------------------------------

/// Parses a shader from text.
fn parse(src: &str) -> Shader {
    crate::text::parse(src, "test").unwrap()
}

/// A struct `name { a: ty, b: ty, ... }` with one member per type.
fn struct_of(s: &mut Shader, name: &str, members: &[(Type, Option<u32>)]) -> StructId {
    s.add_struct(StructType {
        name: name.into(),
        members: members
            .iter()
            .enumerate()
            .map(|(i, (ty, offset))| Member {
                name: format!("m{i}"),
                ty: ty.clone(),
                offset: *offset,
            })
            .collect(),
    })
}

/// A compute shader with one invocation, no code and the variable `@x` of `ty`.
fn shader_with_var(s: &mut Shader, mode: Mode, ty: Type) {
    s.add_variable(Variable::new("x", mode, ty));
    build_into(s, |_| {});
}

fn setup_error(r: Result<RunResult, InterpError>) -> String {
    match r {
        Err(InterpError::Setup(msg)) => msg,
        other => panic!("expected a setup error, got {other:?}"),
    }
}

#[test]
fn nested_array_and_struct_layouts_take_linear_time() {
    // 40 nested arrays: each level used to lay out its element twice (2^40 steps).
    let mut s = Shader::new(Stage::Compute);
    let ty = (0..40).fold(U32, |t, _| array(t, 1));
    shader_with_var(&mut s, Mode::FunctionTemp, ty);
    run(&s, &Launch::default(), &mut Resources::default()).unwrap();
    // 24 levels of structs of two copies of the previous one: 4^24 steps before.
    let mut s = Shader::new(Stage::Compute);
    let mut prev = U32;
    for i in 0..24 {
        let id = struct_of(
            &mut s,
            &format!("S{i}"),
            &[(prev.clone(), None), (prev, None)],
        );
        prev = Type::Struct(id);
    }
    shader_with_var(&mut s, Mode::Ssbo, prev.clone());
    run(&s, &Launch::default(), &mut Resources::default()).unwrap();
    assert_eq!(variable_size(&s, "x").unwrap(), 4 << 24);
}

#[test]
fn types_nested_deeper_than_the_limit_are_errors() {
    // A chain of 100 000 structs each holding the previous one overflowed the stack.
    let mut s = Shader::new(Stage::Compute);
    let mut prev = U32;
    for i in 0..100_000 {
        prev = Type::Struct(struct_of(&mut s, &format!("S{i}"), &[(prev, None)]));
    }
    shader_with_var(&mut s, Mode::Ssbo, prev);
    let msg = setup_error(run(&s, &Launch::default(), &mut Resources::default()));
    assert!(
        msg.contains("@x") && msg.contains("nested deeper than 256"),
        "{msg}"
    );
    let mut res = Resources::default();
    assert!(res.set_variable(&s, "x", &[0]).is_err());
    assert!(parse_variable(&s, "x", "0").is_err());
    // Arrays count too; 256 levels are fine.
    for (depth, ok) in [(256, true), (300, false)] {
        let mut s = Shader::new(Stage::Compute);
        let ty = (0..depth - 1).fold(array(U32, 1), |t, _| array(t, 1));
        shader_with_var(&mut s, Mode::FunctionTemp, ty);
        let r = run(&s, &Launch::default(), &mut Resources::default());
        assert_eq!(r.is_ok(), ok, "{depth}: {r:?}");
    }
}

#[test]
fn struct_offsets_sizes_and_placements_are_checked() {
    let err = |src: &str| {
        setup_error(run(
            &parse(src),
            &Launch::default(),
            &mut Resources::default(),
        ))
    };
    // An explicit offset whose end overflows used to panic.
    let msg = err("shader compute (workgroup_size=1,1,1)
         struct S { a: u32, b: u32 offset 4294967295 }
         var ssbo S[2] @x (binding=0)
         entry fn main() {\nb0:\n    return\n}\n");
    assert!(msg.contains("@x") && msg.contains("1073741824"), "{msg}");
    // A member overlapping the previous one.
    let msg = err("shader compute (workgroup_size=1,1,1)
         struct S { a: u32x4, b: u32 offset 8 }
         var ssbo S @x (binding=0)
         entry fn main() {\nb0:\n    return\n}\n");
    assert!(msg.contains("overlaps"), "{msg}");
    // An explicit stride smaller than the element.
    let mut s = Shader::new(Stage::Compute);
    let strided = Type::Array {
        elem: Box::new(F32X4),
        len: 4,
        stride: 4,
    };
    shader_with_var(&mut s, Mode::Ssbo, strided);
    let msg = setup_error(run(&s, &Launch::default(), &mut Resources::default()));
    assert!(msg.contains("stride"), "{msg}");
    // A 16 GB buffer variable: an error, not an allocation.
    let src = "shader compute (workgroup_size=1,1,1)
         var ssbo u32[4000000000] @big (binding=0)
         entry fn main() {\nb0:\n    return\n}\n";
    assert!(err(src).contains("@big"));
    let s = parse(src);
    assert!(Resources::default().set_variable(&s, "big", &[]).is_err());
    assert!(flatten_type(&s, &s.variables[0].ty).is_empty());
    // Variables that fit one by one but not together in the uniform block.
    let mut s = Shader::new(Stage::Compute);
    for i in 0..5 {
        let ty = array(Type::Scalar(Scalar::new(BaseType::Uint, 8)), 1 << 30);
        s.add_variable(Variable::new(format!("u{i}"), Mode::Uniform, ty));
    }
    build_into(&mut s, |_| {});
    let msg = setup_error(run(&s, &Launch::default(), &mut Resources::default()));
    assert!(msg.contains("@u1"), "{msg}");
    // Locations past the slot limit.
    let mut s = Shader::new(Stage::Vertex);
    let mut v = Variable::new("o", Mode::ShaderOut, F32X4);
    v.location = Some(u32::MAX);
    s.add_variable(v);
    build_into(&mut s, |_| {});
    let msg = setup_error(run(&s, &Launch::default(), &mut Resources::default()));
    assert!(msg.contains("@o"), "{msg}");
}

#[test]
fn variable_sizes_and_buffers_past_the_limit() {
    let s = parse(
        "shader compute (workgroup_size=1,1,1)
         struct S { a: u32, b: u32x3 }
         var ssbo S[3] @small (binding=0)
         var ssbo u32[] @rt (binding=1)
         var ssbo u32[268435456] @whole (binding=2)
         var ssbo u32[268435457] @over (binding=3)
         entry fn main() {\nb0:\n    return\n}\n",
    );
    assert_eq!(variable_size(&s, "small").unwrap(), 96);
    assert_eq!(variable_size(&s, "rt").unwrap(), 0);
    assert_eq!(variable_size(&s, "whole").unwrap(), 1 << 30);
    assert!(variable_size(&s, "over").is_err());
    assert!(variable_size(&s, "none").is_err());
    // Filling a runtime-sized array past the buffer limit.
    let mut res = Resources::default();
    let s = build(Stage::Compute, |b| {
        let strided = Type::Array {
            elem: Box::new(U32),
            len: 0,
            stride: 1 << 29,
        };
        binding(b, "rt", Mode::Ssbo, strided, 0);
    });
    res.set_variable(&s, "rt", &[1, 2]).unwrap();
    assert_eq!(res.ssbos[&0].len(), (1 << 29) + 4);
    let err = res.set_variable(&s, "rt", &[1, 2, 3, 4]).unwrap_err();
    assert!(err.to_string().contains("@rt"), "{err}");
}

/// A shader that fetches texel `(1, 1)` of the 2D texture at binding 1, then texel
/// `(0, 0, 2147483647)` of a 3D image.
fn fetching_shader() -> Shader {
    parse(
        "shader compute (workgroup_size=1,1,1)
         var uniform image(3d, uint) @img (binding=0)
         entry fn main() {
         b0:
             32x2 %0 = load_const (1, 1)
             32 %1 = load_const (0)
             32x4 %2 = txf 2d %0 (coord), %1 (lod) (texture=1)
             32 %3 = deref_var @img
             32x3 %4 = load_const (0, 0, 2147483647)
             32x4 %5 = image_deref_load %3, %4, %1, %1 (image_dim=3d)
             return
         }\n",
    )
}

#[test]
fn caller_textures_and_images_are_validated() {
    let s = fetching_shader();
    let run_with = |texture: Texture, image: Image| {
        let mut res = Resources::default();
        res.textures.insert(1, texture);
        res.images.insert(0, image);
        run(&s, &Launch::default(), &mut res)
    };
    let level = |width, height, depth, n| MipLevel {
        width,
        height,
        depth,
        texels: vec![[0; 4]; n],
    };
    let tex = |layers, level| Texture {
        layers,
        levels: vec![level],
    };
    let good = || tex(1, level(2, 2, 1, 4));
    let image = Image::new(1, 1, 1, 1).unwrap();
    let huge = u32::MAX;
    for (texture, what) in [
        // Sizes whose texel count overflowed (or wrapped to 0 and matched no texels).
        (tex(huge, level(huge, huge, huge, 0)), "16384"),
        (tex(65536, level(65536, 65536, 65536, 0)), "16384"),
        (tex(1, level(16385, 1, 1, 16385)), "16384"),
        (tex(0, level(1, 1, 1, 0)), "16384"),
        (tex(1, level(0, 1, 1, 0)), "16384"),
        (tex(16384, level(16384, 16384, 1, 0)), "268435456 texels"),
        (tex(1, level(2, 2, 1, 3)), "3 texels"),
        (good().with_level(level(1, 1, 1, 2)), "level 1"),
    ] {
        let msg = setup_error(run_with(texture, image.clone()));
        assert!(msg.contains("texture 1") && msg.contains(what), "{msg}");
    }
    let huge_image = Image {
        width: huge,
        height: huge,
        depth: huge,
        layers: 1,
        texels: Vec::new(),
    };
    let msg = setup_error(run_with(good(), huge_image));
    assert!(msg.contains("image 0") && msg.contains("16384"), "{msg}");
    let err = Image::new(65536, 65536, 65536, 65536).unwrap_err();
    assert!(err.to_string().contains("16384"), "{err}");
    // Valid resources: the far image coordinate is out of bounds, not a panic.
    let err = run_with(good(), image).unwrap_err();
    assert!(
        matches!(&err, InterpError::OutOfBounds { site, .. } if site.inst.contains("image")),
        "{err}"
    );
}

#[test]
fn launch_sizes_are_checked_quickly() {
    let compute = |size: [u32; 3]| {
        let mut s = Shader::new(Stage::Compute);
        s.workgroup_size = size;
        build_into(&mut s, |_| {});
        s
    };
    let with_groups = |workgroups| Launch {
        workgroups,
        ..Launch::default()
    };
    let msg = setup_error(run(
        &compute([1, 1, 1]),
        &with_groups([u32::MAX; 3]),
        &mut Resources::default(),
    ));
    assert!(msg.contains("invocations"), "{msg}");
    let msg = setup_error(run(
        &compute([65536, 65536, 1024]),
        &Launch::default(),
        &mut Resources::default(),
    ));
    assert!(msg.contains("workgroup"), "{msg}");
    // An empty dispatch runs nothing, however many workgroups the other axes have.
    let r = run(
        &compute([1, 1, 1]),
        &with_groups([0, u32::MAX, u32::MAX]),
        &mut Resources::default(),
    );
    assert!(r.unwrap().is_empty());
    assert!(
        run(
            &compute([0, 1, 1]),
            &Launch::default(),
            &mut Resources::default()
        )
        .is_err()
    );
    for stage in [Stage::Vertex, Stage::Fragment] {
        let s = build(stage, |_| {});
        let launch = Launch::invocations(usize::MAX);
        assert!(setup_error(run(&s, &launch, &mut Resources::default())).contains("invocations"));
    }
    // The fragment grid: as wide as asked, without visiting empty columns.
    let s = build(Stage::Fragment, |_| {});
    let wide = Launch {
        width: u32::MAX,
        ..Launch::invocations(3)
    };
    assert_eq!(run(&s, &wide, &mut Resources::default()).unwrap().len(), 3);
    assert_eq!(Launch::invocations(usize::MAX).grid_width(), u32::MAX - 1);
    for (n, w) in [(0, 2), (1, 2), (4, 2), (5, 4), (16, 4), (17, 6), (4097, 66)] {
        assert_eq!(Launch::invocations(n).grid_width(), w, "{n}");
    }
}

/// A compute shader of `size` invocations that twice recurses 15 calls deep into a function
/// with 40 MB of registers (never written, so never touched) and waits at a barrier at the
/// bottom: every invocation of the workgroup holds its frames at once.
fn deep_calls_shader(size: u32) -> Shader {
    let mut s = Shader::new(Stage::Compute);
    s.workgroup_size = [size, 1, 1];
    s.add_function("f", &[], None);
    let depth = s.add_variable(Variable::new("depth", Mode::FunctionTemp, U32));
    {
        let mut b = Builder::new(&mut s, FuncId(1));
        let d = b.deref_var(depth);
        let n = b.load_deref(d);
        let one = b.imm_u32(1);
        let n = b.alu(AluOp::Iadd, &[n, one]);
        b.store_deref_all(d, n);
        let limit = b.imm_u32(15);
        let deeper = b.alu(AluOp::Ult, &[n, limit]);
        let mut nif = b.push_if(deeper);
        b.call(FuncId(1), &[]);
        b.push_else(&mut nif);
        b.intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[(IndexKind::ExecutionScope, 3)],
        );
        b.pop_if(nif);
        let never = b.imm_bool(false);
        let nif = b.push_if(never);
        for _ in 0..20_000 {
            b.undef(ValType::new(32, 255));
        }
        b.pop_if(nif);
        b.ret(None);
    }
    build_into(&mut s, |b| {
        b.call(FuncId(1), &[]);
        let d = b.deref_var(depth);
        let zero = b.imm_u32(0);
        b.store_deref_all(d, zero);
        b.call(FuncId(1), &[]);
    });
    s
}

#[test]
fn call_frames_of_a_group_are_bounded() {
    // One invocation holds 15 · 40 MB = 612 MB of frames at a time, twice: the first calls'
    // memory is given back.
    let r = run(
        &deep_calls_shader(1),
        &Launch::default(),
        &mut Resources::default(),
    );
    assert_eq!(r.unwrap().len(), 1);
    // Two invocations of a workgroup would hold 1.2 GB.
    let err = run(
        &deep_calls_shader(2),
        &Launch::default(),
        &mut Resources::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, InterpError::Unsupported { detail, .. } if detail.contains("call frames")),
        "{err}"
    );
}

#[test]
fn constant_variables_hold_their_initializer_for_derefs_and_load_constant() {
    // @k is placed after @pad's 4 bytes, aligned to 16: its element 1 starts at byte 32.
    let s = parse(
        "shader compute
var constant u32 @pad = (9)
var constant f32x4[2] @k = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
var shader_out f32x4 @o
var shader_out f32 @c
entry fn main() {
b0:
    32 %0 = deref_var @k
    32 %1 = load_const (1)
    32 %2 = deref_array %0[%1]
    32x4 %3 = load_deref %2
    32 %4 = deref_var @o
    store_deref %4, %3 (write_mask=xyzw)
    32 %5 = load_const (8)
    32 %6 = load_constant %5 (base=28)
    32 %7 = deref_var @c
    store_deref %7, %6 (write_mask=x)
    return
}
",
    );
    assert_eq!(crate::verify::verify(&s), Ok(()));
    let run = run_one(&s);
    let r = run.invocation(0);
    assert_eq!(out(r, "o"), fs(&[5.0, 6.0, 7.0, 8.0]));
    assert_eq!(out(r, "c"), fs(&[6.0]));
    assert_eq!(
        crate::text::print(&s),
        crate::text::print(&parse(&crate::text::print(&s)))
    );
}

// --- The wide executor ---------------------------------------------------------------------

/// Which executor a run takes, and that its result is the reference scheduler's.
fn executor_of(s: &Shader, launch: &Launch, res: &Resources) -> launch::Executor {
    let (wide, executor) = launch::run(s, launch, &mut res.clone(), launch::Executor::Wide)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(Ok(wide), run_reference(s, launch, &mut res.clone()));
    executor
}

#[test]
fn programs_without_shared_writes_run_wide_and_others_on_the_reference() {
    // Divergent branches, a loop, coarse derivatives: a full wave of quads, results identical.
    let lighting = parse(include_str!("../../../examples/lighting.shrew"));
    let mut launch = Launch::invocations(40 * 30);
    launch.width = 40;
    let uv = (0..40 * 30u32)
        .map(|i| {
            let at = |p: u32, n: u32| ((p as f32 + 0.5) / n as f32).to_bits() as u64;
            vec![at(i % 40, 40), at(i / 40, 30)]
        })
        .collect();
    launch.inputs.insert("uv".into(), uv);
    let mut res = Resources::default();
    res.zero_variable(&lighting, "tint").unwrap();
    assert_eq!(
        executor_of(&lighting, &launch, &res),
        launch::Executor::Wide
    );
    // SSBO and shared-memory writes: another invocation could see them, so the order of work
    // matters and the reference runs it.
    let memory = parse(include_str!("../../../tests/ir/memory.shrew"));
    assert!(!wide::eligible(&program::Program::new(&memory).unwrap()));
}

/// Random structured programs (divergent ifs, loops with breaks and continues, phis that swap)
/// over waves of invocations with different inputs, as vertex and as fragment shaders: the
/// wide executor runs them and gives the reference's results bit for bit.
#[test]
fn random_programs_run_wide_as_on_the_reference() {
    let mut rng = crate::rng::Rng::new(7);
    for seed in 0..24 {
        let mut shader = crate::random_program::random_program(seed, 30);
        if seed % 2 == 1 {
            crate::random_program::simplify(&mut shader).unwrap();
        }
        let inputs: Vec<Vec<u64>> = (0..300)
            .map(|_| (0..4).map(|_| rng.below(40) as u64).collect())
            .collect();
        let launch = Launch::invocations(inputs.len()).with_input("v", inputs);
        for stage in [Stage::Vertex, Stage::Fragment] {
            shader.stage = stage;
            let executor = executor_of(&shader, &launch, &Resources::default());
            assert_eq!(executor, launch::Executor::Wide, "seed {seed}, {stage:?}");
        }
    }
}

/// Values that cannot differ between invocations (constants, uniform loads and what is computed
/// from them only) are found as such, and nothing an invocation's own inputs, memory or path
/// reaches is; computed once per batch and copied, they give the reference's results, also where
/// only some lanes of a wave compute them.
#[test]
fn uniform_values_are_computed_once_per_batch() {
    let shader = parse(
        "shader fragment
var shader_in f32x2 @uv (location=0)
var uniform f32x4 @tint
var function_temp f32 @t
var shader_out f32x4 @color (location=0)

entry fn main() {
b0: selection merge=b3
    32 %0 = deref_var @uv
    32x2 %1 = load_deref %0
    32 %2 = deref_var @tint
    32x4 %3 = load_deref %2
    32x4 %4 = fmul %3, %3
    32 %5 = load_const (0.5)
    1 %6 = flt %1.x, %5
    32 %7 = deref_var @t
    store_deref %7, %5 (write_mask=x)
    branch %6, b1, b2
    b1:
        32x4 %8 = fadd %4, %3
        32 %9 = fadd %8.x, %1.y
        32 %10 = load_deref %7
        jump b3
    b2:
        32 %11 = fmul %4.y, %5
        jump b3
b3:
    32 %12 = phi b1: %9, b2: %11
    32 %13 = fmul %4.z, %5
    32x4 %14 = vec4 %12, %13, %4.w, %5
    32 %15 = deref_var @color
    store_deref %15, %14 (write_mask=xyzw)
    return
}",
    );
    let prog = program::Program::new(&shader).unwrap();
    let uniform: Vec<Vec<bool>> = wide::WideCode::new(&prog)
        .uniform
        .iter()
        .map(|ops| ops.iter().map(Option::is_some).collect())
        .collect();
    let (t, f) = (true, false);
    assert_eq!(
        uniform,
        [
            vec![t, f, t, t, t, t, f, t, f],
            vec![t, f, f],
            vec![t],
            vec![t, f, t, f]
        ]
    );
    let mut launch = Launch::invocations(24 * 20);
    launch.width = 24;
    let uv = (0..24 * 20u32)
        .map(|i| {
            let at = |p: u32, n: u32| ((p as f32 + 0.5) / n as f32).to_bits() as u64;
            vec![at(i % 24, 24), at(i / 24, 20)]
        })
        .collect();
    launch.inputs.insert("uv".into(), uv);
    let mut res = Resources::default();
    let tint = [0.5f32, 2.0, 3.0, 4.0].map(|x| x.to_bits() as u64);
    res.set_variable(&shader, "tint", &tint).unwrap();
    assert_eq!(executor_of(&shader, &launch, &res), launch::Executor::Wide);
}

// --- Subgroups --------------------------------------------------------------------------

/// A fragment shader where the odd lanes of each subgroup take a branch: `@all` is the ballot
/// of every lane, `@odd` the ballot inside the branch (0 outside), `@first` the first active
/// lane's index there, `@mirror` the value 100 + lane of the lane `size - 1 - lane`, `@masks`
/// the eq, ge, gt, le masks' first words and `@vote` whether every active lane is odd.
const SUBGROUP_SHADER: &str = "\
shader fragment
var shader_out u32x4 @all (location=0)
var shader_out u32x4 @odd (location=1)
var shader_out u32 @first (location=2)
var shader_out u32 @mirror (location=3)
var shader_out u32x4 @masks (location=4)
var shader_out u32 @vote (location=5)

entry fn main() {
b0: selection merge=b2
    32 %0 = load_subgroup_invocation
    32 %1 = load_subgroup_size
    32 %2 = load_const (1)
    32 %3 = load_const (100)
    1 %4 = load_const (true)
    32x4 %5 = ballot %4
    32 %6 = deref_var @all
    store_deref %6, %5 (write_mask=xyzw)
    32 %7 = iadd %0, %3
    32 %8 = isub %1, %2
    32 %9 = isub %8, %0
    32 %10 = read_invocation %7, %9
    32 %11 = deref_var @mirror
    store_deref %11, %10 (write_mask=x)
    32x4 %12 = load_subgroup_eq_mask
    32x4 %13 = load_subgroup_ge_mask
    32x4 %14 = load_subgroup_gt_mask
    32x4 %15 = load_subgroup_le_mask
    32x4 %16 = vec4 %12.x, %13.x, %14.x, %15.x
    32 %17 = deref_var @masks
    store_deref %17, %16 (write_mask=xyzw)
    32 %18 = iand %0, %2
    1 %19 = ine %18, %2
    branch %19, b2, b1
    b1:
        32x4 %20 = ballot %4
        32 %21 = deref_var @odd
        store_deref %21, %20 (write_mask=xyzw)
        32 %22 = read_first_invocation %0
        32 %23 = deref_var @first
        store_deref %23, %22 (write_mask=x)
        1 %24 = ieq %18, %2
        1 %25 = vote_all %24
        32 %26 = b2i32 %25
        32 %27 = deref_var @vote
        store_deref %27, %26 (write_mask=x)
        jump b2
b2:
    return
}
";

#[test]
fn subgroup_operations_see_the_lanes_active_together() {
    let s = parse(SUBGROUP_SHADER);
    for size in [4u32, 8, 16] {
        // A 4x4 grid: four quads, one subgroup of 16, two of 8 or four of 4.
        let launch = Launch {
            width: 4,
            subgroup_size: size,
            ..Launch::invocations(16)
        };
        let r = run(&s, &launch, &mut Resources::default()).unwrap();
        let full = (1u64 << size) - 1;
        let odd = 0xaaaa_aaaa & full;
        for (i, inv) in r.invocations().enumerate() {
            // Pixel i is in quad (x / 2, y / 2) at position (x % 2) + 2 (y % 2); quads are taken
            // in rows, 4 lanes each.
            let (x, y) = (i % 4, i / 4);
            let quad = (y / 2) * 2 + x / 2;
            let lane = (4 * quad + x % 2 + 2 * (y % 2)) as u64 % size as u64;
            assert_eq!(out(inv, "all"), [full, 0, 0, 0], "size {size}, pixel {i}");
            assert_eq!(out(inv, "mirror"), [100 + size as u64 - 1 - lane]);
            let ge = full & !((1 << lane) - 1);
            let masks = [1 << lane, ge, ge & !(1 << lane), (2 << lane) - 1];
            assert_eq!(out(inv, "masks"), masks, "size {size}, pixel {i}");
            if lane % 2 == 1 {
                assert_eq!(out(inv, "odd"), [odd, 0, 0, 0], "size {size}, pixel {i}");
                assert_eq!(out(inv, "first"), [1]);
                assert_eq!(out(inv, "vote"), [1]);
            } else {
                assert_eq!(out(inv, "odd"), [0; 4]);
            }
        }
    }
}

#[test]
fn subgroup_sizes_must_be_powers_of_two_from_4_to_128() {
    let s = parse(SUBGROUP_SHADER);
    for size in [0, 2, 12, 256] {
        let launch = Launch {
            subgroup_size: size,
            ..Launch::invocations(4)
        };
        let msg = setup_error(run(&s, &launch, &mut Resources::default()));
        assert!(msg.contains("power of two from 4 to 128"), "{msg}");
    }
}

#[test]
fn compute_workgroups_hold_several_subgroups() {
    // 8 invocations in subgroups of 4: each reads the first lane of its subgroup's local index.
    let s = parse(
        "\
shader compute (workgroup_size=8,1,1)
var ssbo u32[8] @out (binding=0)

entry fn main() {
b0:
    32 %0 = load_local_invocation_index
    32 %1 = read_first_invocation %0
    32 %2 = deref_var @out
    32 %3 = deref_array %2[%0]
    store_deref %3, %1 (write_mask=x)
    return
}
",
    );
    let launch = Launch {
        subgroup_size: 4,
        ..Launch::default()
    };
    let mut res = Resources::default();
    res.ssbos.insert(0, vec![0; 32]);
    run(&s, &launch, &mut res).unwrap();
    let words: Vec<u32> = res.ssbos[&0]
        .chunks(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    assert_eq!(words, [0, 0, 0, 0, 4, 4, 4, 4]);
}
