//! Out-of-SSA translation checked by execution. A register machine runs the destructed function
//! (phis are skipped, each block's copies run at its top and at its end) and must compute what
//! the reference interpreter computes from the SSA function. Hand-written functions cover the
//! classic failures (lost copy, swap, rotation, copies on critical edges). Random structured
//! programs with while and do-while loops, conditional breaks and continues, and loop-carried
//! values permuted on every iteration cover the rest, before and after the engine's passes.

use shrew_engine::interp::{self, Launch, Resources};
use shrew_engine::ir::fold::eval_alu;
use shrew_engine::ir::{
    BlockId, Deref, Edge, Function, InstKind, Mode, Shader, Terminator, Value, VarId,
};
use shrew_engine::ops::{IndexKind, Intrinsic};
use shrew_engine::out_of_ssa::{Destruction, Reg, destruct};
use shrew_engine::random_program::{random_program, simplify};
use shrew_engine::{text, verify};
use std::collections::BTreeMap;

/// Blocks the register machine runs before it gives up on a function that does not end.
const BLOCK_LIMIT: usize = 100_000;

fn copy(regs: &mut [Vec<u64>], copies: &[(Reg, Reg)]) {
    for &(dst, src) in copies {
        regs[dst.0 as usize] = regs[src.0 as usize].clone();
    }
}

/// Runs the entry function of `shader` on the registers of `out`, with `input` as the value of
/// the input variable; returns the output variables by name, as the interpreter reports them.
/// Values are only ever read from their registers, so a wrong register or a missing or
/// misordered copy shows in the outputs.
fn run_registers(shader: &Shader, out: &Destruction, input: &[u64]) -> BTreeMap<String, Vec<u64>> {
    let func = shader.entry_function();
    let mut regs: Vec<Vec<u64>> = vec![Vec::new(); out.num_regs() as usize];
    let reg = |v: Value| out.reg_of(v).0 as usize;
    let mut outputs = BTreeMap::new();
    let mut block = func.entry;
    for _ in 0..BLOCK_LIMIT {
        copy(&mut regs, out.copies_at_start(block));
        for &v in &func.cfg[block].insts {
            let inst = func.inst(v);
            let result = match &inst.kind {
                InstKind::Phi(_) => continue,
                InstKind::Const(values) => values.clone(),
                InstKind::Undef => vec![0; inst.def.unwrap().comps as usize],
                InstKind::Alu(_) => eval_alu(func, v, |src| Some(regs[reg(src)].as_slice()))
                    .unwrap_or_else(|| panic!("{v} does not evaluate")),
                InstKind::Deref(Deref::Var(var)) => vec![var.0 as u64],
                InstKind::Intrinsic(i) if i.op == Intrinsic::LoadDeref => {
                    let var = shader.variable(VarId(regs[reg(i.srcs[0])][0] as u32));
                    assert_eq!(var.mode, Mode::ShaderIn, "loads only read the input");
                    input.to_vec()
                }
                InstKind::Intrinsic(i) if i.op == Intrinsic::StoreDeref => {
                    let var = shader.variable(VarId(regs[reg(i.srcs[0])][0] as u32));
                    let value = &regs[reg(i.srcs[1])];
                    let mask = i.index(IndexKind::WriteMask).unwrap();
                    let slot: &mut Vec<u64> = outputs
                        .entry(var.name.clone())
                        .or_insert_with(|| vec![0; value.len()]);
                    for (c, &x) in value.iter().enumerate() {
                        if mask & (1 << c) != 0 {
                            slot[c] = x;
                        }
                    }
                    continue;
                }
                other => panic!("the register machine does not run {}", other.name()),
            };
            regs[reg(v)] = result;
        }
        copy(&mut regs, out.copies_at_end(block));
        let edge = match func.cfg[block].terminator {
            Some(Terminator::Jump) => Edge::Jump,
            Some(Terminator::Branch { cond }) if regs[reg(cond)][0] != 0 => Edge::True,
            Some(Terminator::Branch { .. }) => Edge::False,
            Some(Terminator::Return { value: None }) => return outputs,
            ref other => panic!("the register machine does not run {other:?}"),
        };
        block = func.successor(block, edge).expect("the terminator's edge");
    }
    panic!("the register machine ran {BLOCK_LIMIT} blocks")
}

/// Destructs the entry function of `shader` and checks that the register machine computes what
/// the interpreter computes, for each input of the `u32x4` input variable `v`.
#[track_caller]
fn check_against_interpreter(shader: &Shader, inputs: &[[u32; 4]]) {
    let context = || text::print(shader);
    if let Err(errors) = verify::verify(shader) {
        panic!("{errors:?}\n{}", context());
    }
    let func = shader.entry_function();
    let out = destruct(func);
    for v in func.all_insts() {
        if let Some(shape) = func.value_type(v) {
            assert_eq!(out.reg_shape(out.reg_of(v)), shape, "{v}\n{}", context());
        }
    }
    let inputs: Vec<Vec<u64>> = inputs
        .iter()
        .map(|i| i.iter().map(|&x| x as u64).collect())
        .collect();
    let launch = Launch::invocations(inputs.len()).with_input("v", inputs.clone());
    let expected = interp::run(shader, &launch, &mut Resources::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", context()));
    for (input, invocation) in inputs.iter().zip(expected.invocations()) {
        let got = run_registers(shader, &out, input);
        let want: BTreeMap<String, Vec<u64>> = invocation
            .outputs()
            .map(|(name, values)| (name.to_string(), values.to_vec()))
            .collect();
        assert_eq!(
            got,
            want,
            "input {input:?}\n{}\n{}",
            context(),
            listing(func, &out)
        );
    }
}

/// The registers of every value and the copies of every block, for failure messages.
fn listing(func: &Function, out: &Destruction) -> String {
    let mut text = String::new();
    for v in func.all_insts() {
        if func.value_type(v).is_some() {
            text += &format!("{v}: {}\n", out.reg_of(v));
        }
    }
    for b in func.blocks() {
        for (place, copies) in [
            ("top", out.copies_at_start(b)),
            ("end", out.copies_at_end(b)),
        ] {
            let copies: Vec<String> = copies.iter().map(|(d, s)| format!("{d} <- {s}")).collect();
            if !copies.is_empty() {
                text += &format!("b{} {place}: {}\n", b.index(), copies.join("; "));
            }
        }
    }
    text
}

/// The declarations every hand-written function below uses.
const HEADER: &str = "shader vertex
var shader_in u32x4 @v (location=0)
var shader_out u32x4 @o (location=0)
";

fn parse(body: &str) -> Shader {
    let src = format!("{HEADER}\n{body}");
    text::parse(&src, "test.shrew").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn lost_copy() {
    // Briggs et al.'s lost copy: the loop is its own latch and exits from it, and %3 (the phi)
    // is used after the loop. A copy `%3 <- %4` at the end of b1, before the branch, would hand
    // b2 the incremented value: %3 must get a register of its own, copied from the phi register
    // at the top of b1.
    let shader = parse(
        "entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (1)
    32 %8 = mov %1.x
    jump b1
b1: loop merge=b2 continue=b1
    32 %3 = phi b0: %8, b1: %4
    32 %4 = iadd %3, %2
    1 %5 = ult %4, %1.y
    branch %5, b1, b2
b2:
    32 %6 = deref_var @o
    32x4 %7 = vec4 %3, %4, %1.y, %2
    store_deref %6, %7 (write_mask=xyzw)
    return
}",
    );
    check_against_interpreter(
        &shader,
        &[[0, 5, 0, 0], [3, 4, 0, 0], [7, 2, 0, 0], [1, 9, 0, 0]],
    );
}

#[test]
fn swap() {
    // The swap problem: %3 and %4 trade values on every iteration, and so do the vectors %14
    // and %15. Copying at the end of the latch one after another, `%3 <- %4` then `%4 <- %3`,
    // would give both the same value, and the outputs would differ after an odd number of
    // iterations: each pair needs a temporary.
    let shader = parse(
        "entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (0)
    32 %9 = load_const (1)
    32 %12 = mov %1.x
    32 %13 = mov %1.y
    32x2 %16 = mov %1.xy
    32x2 %17 = mov %1.zw
    jump b1
b1: loop merge=b3 continue=b2
    32 %3 = phi b0: %12, b2: %4
    32 %4 = phi b0: %13, b2: %3
    32x2 %14 = phi b0: %16, b2: %15
    32x2 %15 = phi b0: %17, b2: %14
    32 %5 = phi b0: %2, b2: %6
    1 %7 = ult %5, %1.w
    branch %7, b2, b3
    b2:
        32 %6 = iadd %5, %9
        jump b1
b3:
    32 %10 = deref_var @o
    32x4 %11 = vec4 %3, %4, %14.y, %15.x
    store_deref %10, %11 (write_mask=xyzw)
    return
}",
    );
    let inputs: Vec<[u32; 4]> = (0..5).map(|n| [10, 20, 30, n]).collect();
    check_against_interpreter(&shader, &inputs);
}

#[test]
fn rotation_of_three() {
    // A 3-cycle of phis: one temporary breaks it, and its order matters.
    let shader = parse(
        "entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (0)
    32 %9 = load_const (1)
    32 %13 = mov %1.x
    32 %14 = mov %1.y
    32 %15 = mov %1.z
    jump b1
b1: loop merge=b3 continue=b2
    32 %3 = phi b0: %13, b2: %4
    32 %4 = phi b0: %14, b2: %12
    32 %12 = phi b0: %15, b2: %3
    32 %5 = phi b0: %2, b2: %6
    1 %7 = ult %5, %1.w
    branch %7, b2, b3
    b2:
        32 %6 = iadd %5, %9
        jump b1
b3:
    32 %10 = deref_var @o
    32x4 %11 = vec4 %3, %4, %12, %5
    store_deref %10, %11 (write_mask=xyzw)
    return
}",
    );
    let inputs: Vec<[u32; 4]> = (0..5).map(|n| [10, 20, 30, n]).collect();
    check_against_interpreter(&shader, &inputs);
}

#[test]
fn copies_on_critical_edges_out_of_a_loop() {
    // Both edges into b4 are critical, and neither can take a block of its own in a structured
    // CFG: b2's conditional break must target the merge itself, and the continue block b3 must
    // keep its edge to the header. So the copies for b4's phis run at the end of b2 and b3,
    // where b3 (from b2) and b1 (from b3) still need %8, %11 and %12, which are also sources of
    // b4's phis, and the header phis swap-rotate %8, %9 through %11 and %12.
    let shader = parse(
        "entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %5 = load_const (0)
    32 %6 = load_const (1)
    32 %7 = load_const (6)
    32 %2 = mov %1.x
    32 %3 = mov %1.y
    jump b1
b1: loop merge=b4 continue=b3
    32 %8 = phi b0: %2, b3: %11
    32 %9 = phi b0: %3, b3: %12
    32 %10 = phi b0: %5, b3: %14
    jump b2
    b2:
        32 %11 = iadd %8, %9
        1 %13 = ult %1.z, %10
        branch %13, b4, b3
    b3:
        32 %12 = ixor %8, %11
        32 %14 = iadd %10, %6
        1 %15 = ult %14, %7
        branch %15, b1, b4
b4:
    32 %16 = phi b2: %8, b3: %12
    32 %17 = phi b2: %11, b3: %8
    32 %18 = deref_var @o
    32x4 %19 = vec4 %16, %17, %10, %9
    store_deref %18, %19 (write_mask=xyzw)
    return
}",
    );
    let inputs: Vec<[u32; 4]> = (0..8).map(|n| [3, 5, n, 0]).collect();
    check_against_interpreter(&shader, &inputs);
}

#[test]
fn copies_on_the_critical_edge_of_an_if_without_else() {
    // b0 -> b2 is critical. The copy `%6' <- %2` at the end of b0 must not write the register
    // of %4, which b1 still reads, though %4 is also a source of %6 (from b1) and could share
    // the phi's register if b1's needs were forgotten.
    let shader = parse(
        "entry fn main() {
b0: selection merge=b2
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = mov %1.x
    32 %3 = mov %1.y
    32 %4 = mov %1.z
    1 %8 = ult %2, %3
    branch %8, b1, b2
    b1:
        32 %5 = iadd %4, %3
        jump b2
b2:
    32 %6 = phi b0: %2, b1: %4
    32 %7 = phi b0: %3, b1: %5
    32 %9 = deref_var @o
    32x4 %10 = vec4 %6, %7, %2, %3
    store_deref %9, %10 (write_mask=xyzw)
    return
}",
    );
    check_against_interpreter(&shader, &[[1, 2, 3, 0], [2, 1, 3, 0], [5, 9, 7, 0]]);
}

#[test]
fn a_copy_shares_its_sources_register_where_both_live_on() {
    // piglit's fs-swap-problem: %3 swaps two components of the loop value %1 on every trip,
    // and the value after the loop is %3. The phi register's copy `%1' <- %3` at the end of
    // b2 runs while %3 lives on into b3, but holds %3's value: %4, its phi register and %3
    // share a register (Chaitin's rule), and the latch copies nothing.
    let shader = parse(
        "entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (0)
    32 %8 = load_const (1)
    jump b1
b1: loop merge=b3 continue=b2
    32x4 %4 = phi b0: %1, b2: %3
    32 %5 = phi b0: %2, b2: %6
    32x4 %3 = vec4 %4.y, %4.x, %4.z, %4.w
    jump b2
    b2:
        32 %6 = iadd %5, %8
        1 %7 = ult %6, %1.w
        branch %7, b1, b3
b3:
    32 %9 = deref_var @o
    store_deref %9, %3 (write_mask=xyzw)
    return
}",
    );
    let inputs: Vec<[u32; 4]> = (0..4).map(|n| [10, 20, 30, n]).collect();
    check_against_interpreter(&shader, &inputs);
    let func = shader.entry_function();
    let out = destruct(func);
    assert_eq!(
        out.reg_of(Value(3)),
        out.reg_of(Value(4)),
        "{}",
        listing(func, &out)
    );
    let latch = BlockId::new(2);
    assert_eq!(out.copies_at_end(latch), [], "{}", listing(func, &out));
}

#[test]
fn phis_given_one_value_on_one_edge_share_a_register() {
    // piglit's fs-if-def-else-break: the latch b4 gives the constant %6 both to the loop phi
    // %3 and to the exit phi %9, whose other source is %3. The two phi registers are written
    // at once with one value, so they may share a register, and %3 and %9 become one.
    let shader = parse(
        "entry fn main() {
b0:
    32 %0 = deref_var @v
    32x4 %1 = load_deref %0
    32 %2 = load_const (7)
    32 %6 = load_const (9)
    jump b1
b1: loop merge=b5 continue=b4
    32 %3 = phi b0: %2, b4: %6
    1 %4 = ult %1.x, %1.y
    branch %4, b2, b3
    b2:
        jump b4
    b3:
        jump b5
    b4:
        1 %5 = ult %1.z, %1.w
        branch %5, b1, b5
b5:
    32 %9 = phi b3: %3, b4: %6
    32 %10 = deref_var @o
    32x4 %11 = vec4 %9, %9, %9, %9
    store_deref %10, %11 (write_mask=xyzw)
    return
}",
    );
    check_against_interpreter(&shader, &[[2, 1, 3, 4], [1, 2, 4, 3], [5, 5, 0, 0]]);
    let func = shader.entry_function();
    let out = destruct(func);
    assert_eq!(
        out.reg_of(Value(3)),
        out.reg_of(Value(9)),
        "{}",
        listing(func, &out)
    );
    let latch = BlockId::new(4);
    assert_eq!(out.copies_at_end(latch).len(), 1, "{}", listing(func, &out));
}

const RANDOM_INPUTS: [[u32; 4]; 4] = [
    [0, 1, 2, 3],
    [7, 0xffff_fff0, 3, 100],
    [0x8000_0000, 5, 5, 1],
    [12345, 678, 0, 31],
];

#[test]
fn random_structured_programs() {
    for seed in 0..300 {
        check_against_interpreter(&random_program(seed, 24), &RANDOM_INPUTS);
    }
}

#[test]
fn random_structured_programs_after_the_engines_passes() {
    for seed in 0..300 {
        let mut shader = random_program(seed, 24);
        simplify(&mut shader).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        check_against_interpreter(&shader, &RANDOM_INPUTS);
    }
}
