//! Tests of the rule checker: small rules that must pass or fail, for each part of the method.

use super::*;
use crate::ir::InstKind;
use crate::rewrite::{Ctx, Src, VarCond, VarInfo};
use shrew_ops::eval::fget;

fn leak<T>(v: Vec<T>) -> &'static [T] {
    Vec::leak(v)
}

fn var(index: u8) -> Pattern {
    Pattern::Var {
        index,
        swizzle: None,
    }
}

fn swz(index: u8, swizzle: &'static [u8]) -> Pattern {
    Pattern::Var {
        index,
        swizzle: Some(swizzle),
    }
}

fn float(x: f64) -> Pattern {
    Pattern::Const {
        value: Literal::Float(x),
        size: Size::Class(0),
    }
}

fn int(x: i64) -> Pattern {
    Pattern::Const {
        value: Literal::Int(x),
        size: Size::Class(0),
    }
}

fn int_sized(x: i64, bits: u8) -> Pattern {
    Pattern::Const {
        value: Literal::Int(x),
        size: Size::Fixed(bits),
    }
}

/// An op whose unsized operands all belong to class 0.
fn op(op: AluOp, srcs: Vec<Pattern>) -> Pattern {
    let info = op.info();
    Pattern::Op {
        op: OpName::Op(op),
        size: if info.dst.bits != 0 {
            Size::Fixed(info.dst.bits)
        } else {
            Size::Class(0)
        },
        src_size: if info.srcs.iter().any(|s| s.bits == 0) {
            Size::Class(0)
        } else {
            Size::Fixed(0)
        },
        srcs: leak(srcs),
        exact: false,
        conds: &[],
    }
}

fn var_info(name: &'static str) -> VarInfo {
    VarInfo {
        name,
        size: Size::Class(0),
        is_const: false,
        ty: None,
        conds: &[],
    }
}

/// A rule over class 0; `~` in the text makes it inexact.
fn rule(
    text: &'static str,
    search: Pattern,
    replace: Pattern,
    vars: Vec<VarInfo>,
    sizes: &'static [u8],
) -> RuleInfo {
    let inexact = text.starts_with('~');
    RuleInfo {
        text,
        file: file!(),
        line: line!(),
        module: module_path!(),
        name: "test_rule",
        search,
        replace,
        vars: leak(vars),
        classes: leak(vec![sizes]),
        inexact,
        loses: FpFlags(if inexact { 7 } else { 0 }),
        guard: None,
        egraph: None,
        egraph_only: false,
    }
}

/// The first `n` of `a`, `b`, `c`.
fn vars(n: usize) -> Vec<VarInfo> {
    ["a", "b", "c"][..n]
        .iter()
        .map(|&name| var_info(name))
        .collect()
}

fn abc() -> Vec<VarInfo> {
    vars(3)
}

const FLOATS: &[u8] = &[16, 32, 64];
const INTS: &[u8] = &[8, 16, 32, 64];

fn fails(r: &RuleInfo) -> Counterexample {
    match verify_rule(r) {
        Ok(report) => panic!("`{}` passed: {report:?}", r.text),
        Err(e) => e,
    }
}

fn passes(r: &RuleInfo) -> Report {
    match verify_rule(r) {
        Ok(report) => report,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn exact_fadd_of_zero_fails_on_negative_zero() {
    let r = rule(
        "fadd(a, 0.0) => a",
        op(AluOp::Fadd, vec![var(0), float(0.0)]),
        var(0),
        vars(1),
        FLOATS,
    );
    let e = fails(&r);
    let text = e.to_string();
    assert!(text.contains("-0"), "{text}");
    assert!(text.contains("fadd(a, 0.0) => a"), "{text}");
    assert!(text.contains(file!()), "{text}");
    assert!(text.contains("class 0 = 16"), "{text}");
    assert_eq!(e.inputs[0].value, [0x8000]);
    assert_eq!(
        (e.search.as_slice(), e.replace.as_slice()),
        (&[0][..], &[0x8000][..])
    );
}

#[test]
fn inexact_fadd_of_zero_passes() {
    let r = rule(
        "~fadd(a, 0.0) => a",
        op(AluOp::Fadd, vec![var(0), float(0.0)]),
        var(0),
        vars(1),
        FLOATS,
    );
    let report = passes(&r);
    assert_eq!(report.sizes, [[16], [32], [64]]);
    // All halves but the NaNs and infinities, which `~` does not preserve, and more.
    assert!(report.cases > 63488 + 2000, "{report:?}");
    assert_eq!(report.skipped, None);
}

#[test]
fn nsz_forgives_the_sign_of_zero_but_not_nan() {
    let mut r = rule(
        "fadd[nsz](a, 0.0) => a",
        op(AluOp::Fadd, vec![var(0), float(0.0)]),
        var(0),
        vars(1),
        FLOATS,
    );
    r.loses = FpFlags::PRESERVE_SIGNED_ZERO;
    passes(&r);
    let mut r = rule(
        "fmul[nsz](a, 0.0) => 0.0",
        op(AluOp::Fmul, vec![var(0), float(0.0)]),
        float(0.0),
        vars(1),
        FLOATS,
    );
    r.loses = FpFlags::PRESERVE_SIGNED_ZERO;
    let e = fails(&r);
    assert!(e.to_string().contains("gives up signed zeros"), "{e}");
    r.loses = FpFlags(7);
    passes(&r);
}

#[test]
fn iadd_of_one_fails() {
    let r = rule(
        "iadd(a, 1) => a",
        op(AluOp::Iadd, vec![var(0), int(1)]),
        var(0),
        vars(1),
        &[1, 8, 16, 32, 64],
    );
    let e = fails(&r);
    assert!(e.to_string().contains("must be identical"), "{e}");
}

#[test]
fn shifts_and_multiplies_by_two() {
    let shl = || op(AluOp::Ishl, vec![var(0), int_sized(1, 32)]);
    let r = rule(
        "ishl(a, 1) => iadd(a, a)",
        shl(),
        op(AluOp::Iadd, vec![var(0), var(0)]),
        vars(1),
        INTS,
    );
    let report = passes(&r);
    assert_eq!(report.sizes.len(), 4);
    let r = rule(
        "imul(a, 2) => ishl(a, 1)",
        op(AluOp::Imul, vec![var(0), int(2)]),
        shl(),
        vars(1),
        INTS,
    );
    passes(&r);
    // A 1-bit shift counts modulo 1: `ishl(a, 1)` is `a` there, `iadd(a, a)` is 0.
    let r = rule(
        "ishl(a, 1) => iadd(a, a)",
        shl(),
        op(AluOp::Iadd, vec![var(0), var(0)]),
        vars(1),
        &[1],
    );
    assert_eq!(fails(&r).sizes, [1]);
}

#[test]
fn inexact_reassociation_passes_and_a_wrong_one_fails() {
    let r = rule(
        "~fadd(fadd(a, b), c) => fadd(a, fadd(b, c))",
        op(
            AluOp::Fadd,
            vec![op(AluOp::Fadd, vec![var(0), var(1)]), var(2)],
        ),
        op(
            AluOp::Fadd,
            vec![var(0), op(AluOp::Fadd, vec![var(1), var(2)])],
        ),
        abc(),
        FLOATS,
    );
    passes(&r);
    let r = rule(
        "~fmul(fmul(a, b), c) => fmul(a, fmul(b, c))",
        op(
            AluOp::Fmul,
            vec![op(AluOp::Fmul, vec![var(0), var(1)]), var(2)],
        ),
        op(
            AluOp::Fmul,
            vec![var(0), op(AluOp::Fmul, vec![var(1), var(2)])],
        ),
        abc(),
        FLOATS,
    );
    passes(&r);
    let r = rule(
        "~fadd(fmul(a, b), fmul(a, c)) => fmul(a, fadd(b, c))",
        op(
            AluOp::Fadd,
            vec![
                op(AluOp::Fmul, vec![var(0), var(1)]),
                op(AluOp::Fmul, vec![var(0), var(2)]),
            ],
        ),
        op(
            AluOp::Fmul,
            vec![var(0), op(AluOp::Fadd, vec![var(1), var(2)])],
        ),
        abc(),
        FLOATS,
    );
    passes(&r);
    let r = rule(
        "~fadd(fmul(a, b), c) => fmul(a, fadd(b, c))",
        op(
            AluOp::Fadd,
            vec![op(AluOp::Fmul, vec![var(0), var(1)]), var(2)],
        ),
        op(
            AluOp::Fmul,
            vec![var(0), op(AluOp::Fadd, vec![var(1), var(2)])],
        ),
        abc(),
        FLOATS,
    );
    let e = fails(&r);
    assert!(e.to_string().contains("tolerance"), "{e}");
}

#[test]
fn fusing_a_multiply_add_is_inexact() {
    let search = || {
        op(
            AluOp::Fadd,
            vec![op(AluOp::Fmul, vec![var(0), var(1)]), var(2)],
        )
    };
    let fused = || op(AluOp::Ffma, vec![var(0), var(1), var(2)]);
    fails(&rule(
        "fadd(fmul(a, b), c) => ffma(a, b, c)",
        search(),
        fused(),
        abc(),
        FLOATS,
    ));
    passes(&rule(
        "~fadd(fmul(a, b), c) => ffma(a, b, c)",
        search(),
        fused(),
        abc(),
        FLOATS,
    ));
}

#[test]
fn two_8_bit_variables_are_checked_exhaustively() {
    let r = rule(
        "ixor(a, b) => ior(iand(a, inot(b)), iand(inot(a), b))",
        op(AluOp::Ixor, vec![var(0), var(1)]),
        op(
            AluOp::Ior,
            vec![
                op(AluOp::Iand, vec![var(0), op(AluOp::Inot, vec![var(1)])]),
                op(AluOp::Iand, vec![op(AluOp::Inot, vec![var(0)]), var(1)]),
            ],
        ),
        vars(2),
        &[8],
    );
    let report = passes(&r);
    assert_eq!(report.cases, 65536);
    // A bug on one input pair in 65536 is found.
    let r = rule(
        "ult(a, b) => ilt(a, b)",
        op(AluOp::Ult, vec![var(0), var(1)]),
        op(AluOp::Ilt, vec![var(0), var(1)]),
        vars(2),
        &[8],
    );
    fails(&r);
}

fn single_bit(cx: &Ctx, src: &Src) -> bool {
    match cx.func.get_inst(src.value).map(|i| &i.kind) {
        Some(InstKind::Const(values)) => src
            .read()
            .iter()
            .all(|&c| values[c as usize].count_ones() == 1),
        _ => false,
    }
}

fn is_used_once(_: &Ctx, _: &Src) -> bool {
    false
}

static SINGLE_BIT: [VarCond; 2] = [
    VarCond {
        name: "single_bit",
        check: single_bit,
    },
    VarCond {
        name: "is_used_once",
        check: is_used_once,
    },
];

fn mul_by_single_bit(replace: Pattern, text: &'static str) -> RuleInfo {
    let mut vars = vars(2);
    vars[1].is_const = true;
    vars[1].conds = &SINGLE_BIT;
    rule(
        text,
        op(AluOp::Imul, vec![var(0), var(1)]),
        replace,
        vars,
        INTS,
    )
}

#[test]
fn conditions_restrict_the_inputs_and_structural_ones_are_ignored() {
    let find_lsb = Pattern::Op {
        op: OpName::Op(AluOp::FindLsb),
        size: Size::Fixed(32),
        src_size: Size::Class(0),
        srcs: leak(vec![var(1)]),
        exact: false,
        conds: &[],
    };
    let r = mul_by_single_bit(
        op(AluOp::Ishl, vec![var(0), find_lsb]),
        "imul(a, #b[single_bit, is_used_once]) => ishl(a, find_lsb(b))",
    );
    let report = passes(&r);
    assert_eq!(report.skipped, None);
    // 8 single-bit values of b at 8 bits, all 256 values of a.
    assert!(report.cases >= 8 * 256 + 3 * 500, "{report:?}");
    let r = mul_by_single_bit(
        op(AluOp::Ishl, vec![var(0), var(1)]),
        "imul(a, #b[single_bit]) => ishl(a, b)",
    );
    let e = fails(&r);
    assert_eq!(e.inputs[1].value[0].count_ones(), 1, "{e}");
}

#[test]
fn vectors_swizzles_and_fixed_component_counts() {
    let mul = |i: &'static [u8], j: &'static [u8]| op(AluOp::Fmul, vec![swz(0, i), swz(0, j)]);
    let r = rule(
        "fdot2(a, a) => fadd(fmul(a.x, a.x), fmul(a.y, a.y))",
        op(AluOp::Fdot2, vec![var(0), var(0)]),
        op(AluOp::Fadd, vec![mul(&[0], &[0]), mul(&[1], &[1])]),
        vars(1),
        FLOATS,
    );
    passes(&r);
    let r = rule(
        "fdot2(a, a) => fadd(fmul(a.x, a.x), fmul(a.x, a.y))",
        op(AluOp::Fdot2, vec![var(0), var(0)]),
        op(AluOp::Fadd, vec![mul(&[0], &[0]), mul(&[0], &[1])]),
        vars(1),
        FLOATS,
    );
    let e = fails(&r);
    assert_eq!(e.inputs[0].value.len(), 2, "{e}");
    // Vector construction and extraction.
    let r = rule(
        "mov(vec2(a, b)) => a",
        op(AluOp::Mov, vec![op(AluOp::Vec2, vec![var(0), var(1)])]),
        var(0),
        vars(2),
        INTS,
    );
    passes(&r);
}

#[test]
fn inexact_comparisons_may_differ_only_by_rounding() {
    let r = rule(
        "~feq(fadd(a, b), a) => feq(b, 0.0)",
        op(
            AluOp::Feq,
            vec![op(AluOp::Fadd, vec![var(0), var(1)]), var(0)],
        ),
        op(AluOp::Feq, vec![var(1), float(0.0)]),
        vars(2),
        &[16, 32],
    );
    passes(&r);
    let r = rule(
        "~flt(fneg(a), b) => flt(a, b)",
        op(AluOp::Flt, vec![op(AluOp::Fneg, vec![var(0)]), var(1)]),
        op(AluOp::Flt, vec![var(0), var(1)]),
        vars(2),
        FLOATS,
    );
    let e = fails(&r);
    assert!(e.to_string().contains("this is not rounding"), "{e}");
}

#[test]
fn ties_of_inputs_are_not_rounding() {
    // With exact inputs, `a < b` and `b >= a` differ exactly when a == b.
    let r = rule(
        "~flt(a, b) => fge(b, a)",
        op(AluOp::Flt, vec![var(0), var(1)]),
        op(AluOp::Fge, vec![var(1), var(0)]),
        vars(2),
        FLOATS,
    );
    let e = fails(&r);
    assert_eq!(e.inputs[0].value, e.inputs[1].value, "{e}");
}

#[test]
fn the_tolerance_follows_the_conditioning_of_exponentials_and_formulas() {
    let r = rule(
        "~fexp2(flog2(a)) => a",
        op(AluOp::Fexp2, vec![op(AluOp::Flog2, vec![var(0)])]),
        var(0),
        vars(1),
        FLOATS,
    );
    passes(&r);
    let pow = || op(AluOp::Fpow, vec![var(0), var(1)]);
    let exp_log = |b: Pattern| {
        op(
            AluOp::Fexp2,
            vec![op(AluOp::Fmul, vec![op(AluOp::Flog2, vec![var(0)]), b])],
        )
    };
    passes(&rule(
        "~fpow(a, b) => fexp2(fmul(flog2(a), b))",
        pow(),
        exp_log(var(1)),
        vars(2),
        FLOATS,
    ));
    fails(&rule(
        "~fpow(a, b) => fexp2(fmul(flog2(a), fadd(b, 0.001)))",
        pow(),
        exp_log(op(AluOp::Fadd, vec![var(1), float(0.001)])),
        vars(2),
        FLOATS,
    ));
    // Extrapolation cancels inside flrp: the products bound the error.
    passes(&rule(
        "~flrp(a, a, b) => a",
        op(AluOp::Flrp, vec![var(0), var(0), var(1)]),
        var(0),
        vars(2),
        FLOATS,
    ));
}

static LT_ZERO: [VarCond; 1] = [VarCond {
    name: "is_lt_zero",
    check: conds::is_lt_zero,
}];

static NUMBER_LT_ZERO: [VarCond; 1] = [VarCond {
    name: "is_a_number_lt_zero",
    check: conds::is_a_number_lt_zero,
}];

#[test]
fn range_conditions_admit_what_the_analysis_admits() {
    let fsign = |conds: &'static [VarCond], text| {
        let mut vars = vars(1);
        vars[0].conds = conds;
        rule(
            text,
            op(AluOp::Fsign, vec![var(0)]),
            float(-1.0),
            vars,
            FLOATS,
        )
    };
    // A value the analysis knows to be negative may still be NaN.
    let e = fails(&fsign(&LT_ZERO, "fsign(a[is_lt_zero]) => -1.0"));
    assert!(
        e.search.iter().all(|&v| fget(v, e.result_bits).is_nan()),
        "{e}"
    );
    let report = passes(&fsign(
        &NUMBER_LT_ZERO,
        "fsign(a[is_a_number_lt_zero]) => -1.0",
    ));
    assert!(report.cases > 30_000, "{report:?}");
}

fn never(_: &Ctx, _: &Src) -> bool {
    false
}

static NEVER: [VarCond; 1] = [VarCond {
    name: "never",
    check: never,
}];

#[test]
fn unsatisfiable_conditions_are_reported() {
    let mut vars = vars(2);
    vars[1].conds = &NEVER;
    let r = rule(
        "iadd(a, b[never]) => a",
        op(AluOp::Iadd, vec![var(0), var(1)]),
        var(0),
        vars,
        INTS,
    );
    let report = passes(&r);
    assert_eq!(report.cases, 0);
    assert!(report.skipped.unwrap().contains("no value of `b`"));
}

#[test]
fn derivatives_are_skipped() {
    let r = rule(
        "fddx(fneg(a)) => fneg(fddx(a))",
        op(AluOp::Fddx, vec![op(AluOp::Fneg, vec![var(0)])]),
        op(AluOp::Fneg, vec![op(AluOp::Fddx, vec![var(0)])]),
        vars(1),
        FLOATS,
    );
    let report = passes(&r);
    assert_eq!(report.cases, 0);
    assert!(report.skipped.unwrap().contains("fddx"));
}

#[test]
fn sizes_without_a_conversion_member_are_left_out() {
    let conv = |src: Pattern| Pattern::Op {
        op: OpName::Conv(shrew_ops::ConvFamily::I2i),
        size: Size::Class(0),
        src_size: Size::Class(1),
        srcs: leak(vec![src]),
        exact: false,
        conds: &[],
    };
    let and = |a: Pattern, b: Pattern, class: u8| Pattern::Op {
        op: OpName::Op(AluOp::Iand),
        size: Size::Class(class),
        src_size: Size::Class(class),
        srcs: leak(vec![a, b]),
        exact: false,
        conds: &[],
    };
    let mut vars = vars(2);
    vars[0].size = Size::Class(1);
    vars[1].size = Size::Class(1);
    let r = RuleInfo {
        classes: &[&[1, 8, 16, 32, 64], &[8, 16, 32, 64]],
        ..rule(
            "i2i(iand(a, b)) => iand(i2i(a), i2i(b))",
            conv(and(var(0), var(1), 1)),
            and(conv(var(0)), conv(var(1)), 0),
            vars,
            &[],
        )
    };
    let report = passes(&r);
    assert_eq!(report.sizes.len(), 16);
    assert!(report.sizes.iter().all(|s| s[0] != 1));
    assert_eq!(report.skipped, None);
}

#[test]
fn fixed_size_float_conversions_round_trip() {
    let r = RuleInfo {
        classes: &[],
        ..rule(
            "f2f32(f2f64(a@32)) => a",
            Pattern::Op {
                op: OpName::Op(AluOp::F2f32),
                size: Size::Fixed(32),
                src_size: Size::Fixed(64),
                srcs: leak(vec![Pattern::Op {
                    op: OpName::Op(AluOp::F2f64),
                    size: Size::Fixed(64),
                    src_size: Size::Fixed(32),
                    srcs: leak(vec![var(0)]),
                    exact: false,
                    conds: &[],
                }]),
                exact: false,
                conds: &[],
            },
            var(0),
            vec![VarInfo {
                size: Size::Fixed(32),
                ..var_info("a")
            }],
            &[],
        )
    };
    let report = passes(&r);
    assert_eq!(report.sizes, [Vec::<u8>::new()]);
    assert!(report.cases >= 1000);
}
