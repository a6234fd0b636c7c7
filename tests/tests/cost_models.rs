//! The e-graph's cost models against what the backends emit: for each 32-bit ALU opcode a
//! backend compiles, a fragment shader computing it once against a baseline without it. The
//! difference of what the target's cost model charges the two shaders (`shader_cost`, the
//! measure `eqsat` minimizes) must equal the difference of what the backend emits, weighted as
//! the model's unit says:
//!
//! * Gen (`gen9`, `shrew_gen::GenCost`): instructions at SIMD8, an extended-math instruction
//!   counting its time in the math unit (2 for inv, rsq, sqrt, exp, log, sin and cos, 4 for pow
//!   and fdiv, 13 for integer division);
//! * R600 (`evergreen`, `shrew_r600::R600Cost`): ALU slots, an instruction only the trans slot
//!   runs counting 2 (a group has one trans slot against four vector slots, so they pack worst),
//!   and literal dwords.
//!
//! The comparison is exact: the shaders are one block whose only arithmetic is the operation
//! and its user, so scheduling has nothing to move, and on R600 the slots and literals count
//! whatever groups they pack into (packing changes the group count, which is not compared).
//! Opcodes a backend does not compile are skipped. The exceptions, each with its reason, are
//! [`known_differences`].

use shrew_engine::egraph::shader_cost;
use shrew_engine::ops::{AluOp, BaseType, Operand};
use shrew_engine::text;

/// The components of the uniform the operands read, in turn.
const LANES: [char; 4] = ['x', 'y', 'z', 'w'];

/// The instruction computing `op` on the uniform `%1` (a float vec4 whose bits the operands
/// read as whatever they are) as `%3`, after the comparison `%2` that a boolean operand reads
/// (which the model and the backend then both count with the op); `None` for opcodes outside
/// the test: other sizes than 32 bits, vector or boolean results, derivatives.
fn computation(op: AluOp) -> Option<String> {
    let info = op.info();
    let sized_32 = |o: &Operand| o.bits == 0 || o.bits == 32 || o.base == BaseType::Bool;
    if !info.srcs.iter().chain([&info.dst]).all(sized_32)
        || info.dst.comps > 1
        || info.dst.base == BaseType::Bool
        || info.srcs.is_empty()
        || op.is_vec()
        || op.name().starts_with("fdd")
    {
        return None;
    }
    let mut lane = 2;
    let mut needs_comparison = false;
    let srcs: Vec<String> = (info.srcs.iter())
        .map(|operand| {
            if operand.base == BaseType::Bool {
                needs_comparison = true;
                return "%2".to_string();
            }
            let comps = operand.comps.max(1) as usize;
            let swizzle: String = (0..comps).map(|c| LANES[(lane + c) % 4]).collect();
            lane += 1;
            format!("%1.{swizzle}")
        })
        .collect();
    let comparison = if needs_comparison {
        "    1 %2 = flt %1.x, %1.w\n"
    } else {
        ""
    };
    Some(format!(
        "{comparison}    32 %3 = {op} {}\n",
        srcs.join(", ")
    ))
}

/// A fragment shader storing `fmax %3, %1.y` where `lines` compute `%3` from the uniform `%1`.
/// The uniform costs nothing on either backend (Gen's push constants come in the payload, R600
/// reads the constant cache in the ALU group), and the `fmax` writes the output itself and
/// takes a negation or an absolute value as a source modifier (an `fadd` would also fuse a
/// product into a multiply-add), so the shaders differ only in what computes `%3`.
fn shader(lines: &str) -> String {
    format!(
        "shader fragment\n\
         var uniform f32x4 @u\n\
         var shader_out f32 @color (location=0)\n\
         entry fn main() {{\n\
         b0:\n\
         \x20   32 %0 = deref_var @u\n\
         \x20   32x4 %1 = load_deref %0\n\
         {lines}\
         \x20   32 %4 = fmax %3, %1.y\n\
         \x20   32 %5 = deref_var @color\n\
         \x20   store_deref %5, %4 (write_mask=x)\n\
         \x20   return\n\
         }}\n"
    )
}

/// The baseline: `%3` is the uniform's first component.
const BASELINE: &str = "    32 %3 = mov %1.x\n";

/// The emitted figure of a kernel under the model's unit (see the module comment).
fn emitted(target: &str, statistics: &[(&str, u64)], listing: &str) -> i64 {
    let figure = |name: &str| statistics.iter().find(|(n, _)| *n == name).unwrap().1 as i64;
    if target == "gen9" {
        let math = |function: &str| match function {
            "inv" | "rsq" | "sqrt" | "exp" | "log" | "sin" | "cos" => 2,
            "pow" | "fdiv" => 4,
            "intdiv" | "intmod" | "intdivmod" => 13,
            other => panic!("math {other}"),
        };
        let extra: i64 = (listing.lines())
            .filter_map(|line| line.split_once(": math ")?.1.split('(').next())
            .map(|function| math(function) - 1)
            .sum();
        figure("instructions") + extra
    } else {
        // The instructions Evergreen runs in the trans slot only.
        const TRANS: &[&str] = &[
            "EXP_IEEE",
            "LOG_CLAMPED",
            "LOG_IEEE",
            "RECIP_CLAMPED",
            "RECIP_FF",
            "RECIP_IEEE",
            "RECIPSQRT_CLAMPED",
            "RECIPSQRT_FF",
            "RECIPSQRT_IEEE",
            "SQRT_IEEE",
            "SIN",
            "COS",
            "MULLO_INT",
            "MULHI_INT",
            "MULLO_UINT",
            "MULHI_UINT",
            "RECIP_INT",
            "RECIP_UINT",
            "FLT_TO_UINT",
            "INT_TO_FLT",
            "UINT_TO_FLT",
        ];
        let trans = (listing.lines())
            .filter(|line| line.split_whitespace().any(|word| TRANS.contains(&word)))
            .count() as i64;
        figure("alu_slots") + trans + figure("literals")
    }
}

/// For each opcode `target` compiles: the emitted figure of the shader computing it minus the
/// baseline's, and the model's cost of the one minus the other.
fn measure(target: &str) -> Vec<(AluOp, i64, i64)> {
    let name = target;
    let target = shrew_targets::lookup(name).unwrap();
    let compiler = target.compiler().unwrap();
    let model = target.options().costs.model.0.clone();
    let figures = |lines: &str| -> Option<(i64, i64)> {
        let source = shader(lines);
        let shader = text::parse(&source, "cost").unwrap_or_else(|e| panic!("{e}\n{source}"));
        let cost = shader_cost(&shader, model.as_ref()) as i64;
        let kernel = compiler.compile(&shader, None).ok()?;
        let listing = kernel.listing().unwrap();
        Some((emitted(name, &kernel.statistics(), &listing), cost))
    };
    let (base, base_cost) = figures(BASELINE).unwrap();
    (AluOp::all())
        .filter_map(|op| {
            let (figure, cost) = figures(&computation(op)?)?;
            Some((op, figure - base, cost - base_cost))
        })
        .collect()
}

/// Where the model and the emitted figure differ in this test, by how much (emitted minus
/// model), and why: the model prices an operation without its context, and here the context
/// is a uniform operand and an `fmax` user.
fn known_differences(target: &str) -> Vec<(AluOp, i64, &'static str)> {
    use AluOp::*;
    const SATURATE: &str = "a saturate is free as the destination modifier of the instruction \
        computing its operand; a uniform has none, so here it is a move";
    const IDENTITY: &str = "a conversion to the size its operand already has is folded away; the \
        model, which does not see the operand's size, prices a real conversion";
    let mut known = vec![
        (Fsat, 1, SATURATE),
        (F2f32, -1, IDENTITY),
        (I2i32, -1, IDENTITY),
        (U2u32, -1, IDENTITY),
    ];
    if target == "gen9" {
        const INTEGER_MODIFIER: &str = "an integer negation or absolute value is a source \
            modifier of an integer user only; `fmax` takes it as a move";
        known.extend([
            (Ineg, 1, INTEGER_MODIFIER),
            (Iabs, 1, INTEGER_MODIFIER),
            (
                Bcsel,
                -1,
                "the model charges `bcsel` the `cmp` that sets the flag; a comparison operand \
                 sets the flag itself, so `flt` and `bcsel` are one `cmp` and one `sel`",
            ),
        ]);
    } else {
        known.push((
            B2f32,
            -1,
            "a comparison converted to a float is one SETGT writing 1.0; the model charges the \
             AND_INT with the literal 1.0 that converts any other boolean",
        ));
    }
    known
}

fn check(target: &str) {
    let known = known_differences(target);
    let mut wrong = Vec::new();
    let measured = measure(target);
    assert!(
        measured.len() > 40,
        "{target}: only {} opcodes compiled",
        measured.len()
    );
    for (op, figure, cost) in measured {
        let allowed = known.iter().find(|k| k.0 == op).map_or(0, |k| k.1);
        if figure - cost != allowed {
            wrong.push(format!("{op}: emitted {figure}, model {cost}"));
        }
    }
    assert!(wrong.is_empty(), "{target}:\n{}", wrong.join("\n"));
}

#[test]
fn gen_cost_matches_what_gen9_emits() {
    check("gen9");
}

#[test]
fn r600_cost_matches_what_evergreen_emits() {
    check("evergreen");
}
