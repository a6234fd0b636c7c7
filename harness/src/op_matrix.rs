//! The op × target matrix: for every ALU opcode at every bit size it allows, whether each
//! target compiles it (natively, or after a pass lowered it to other opcodes) and runs it as
//! the interpreter does, or why not; and, as the fuzzer needs it, whether each target writes
//! SSBOs in each stage ([`writes_ssbos`]).
//!
//! Each entry is a probe: a fragment shader applying the opcode once to operands loaded from
//! uniforms (so nothing folds it away), its result written to the colour: floats converted to
//! 32 bits, compared within the differential runner's tolerance; other results folded to 32
//! bits and written a byte per component, so compared exactly. The uniforms hold small random
//! floats in thousandths; integer operands see their bits, so integer opcodes run on large
//! values of both signs.

use crate::differential::{Failure, Run, run_on_target};
use shrew_engine::ir::{
    Alu, Builder, Builtin, FuncId, Function, InstKind, Mode, Scalar, Shader, Stage, Type, ValType,
    Value, Variable,
};
use shrew_engine::ops::{AluOp, AtomicOp, BaseType, IndexKind, Intrinsic, Operand};
use shrew_targets::{Pipeline, Target};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

/// How a target fares with one opcode at one bit size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// Compiled as the opcode itself, and runs as the interpreter does.
    Native,
    /// Compiled after a pass turned it into other opcodes, and runs as the interpreter does.
    Lowered,
    /// Compiled, but computes something else.
    Wrong(String),
    /// Not compiled: the reason.
    Refused(String),
}

impl Support {
    pub fn compiles(&self) -> bool {
        !matches!(self, Support::Refused(_))
    }

    /// A short word for tables.
    pub fn word(&self) -> &'static str {
        match self {
            Support::Native => "native",
            Support::Lowered => "lowered",
            Support::Wrong(_) => "WRONG",
            Support::Refused(_) => "no",
        }
    }

    /// Why not, for the entries that do not work.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Support::Wrong(why) | Support::Refused(why) => Some(why),
            _ => None,
        }
    }
}

/// Every opcode and the bit sizes it allows (0 for an opcode whose operands are all sized).
pub fn entries() -> Vec<(AluOp, u8)> {
    AluOp::all()
        .flat_map(|op| {
            let sizes = op.info().unsized_bit_sizes();
            if sizes.is_empty() {
                vec![(op, 0)]
            } else {
                sizes.into_iter().map(|bits| (op, bits)).collect()
            }
        })
        .collect()
}

/// The probe of `op` at `bits` (see the module's documentation).
pub fn probe(op: AluOp, bits: u8) -> Shader {
    let info = op.info();
    let mut shader = Shader::new(Stage::Fragment);
    let mut b = Builder::new(&mut shader, FuncId(0));
    let srcs: Vec<Value> = info
        .srcs
        .iter()
        .enumerate()
        .map(|(i, operand)| uniform_operand(&mut b, i, operand, bits))
        .collect();
    let result = b.alu(op, &srcs);
    let ty = b.value_type(result);
    let floats = info.dst.base == BaseType::Float && ty.bits > 1;
    let colour: Vec<Value> = if floats {
        let result = match ty.bits {
            32 => result,
            _ => b.alu(AluOp::F2f32, &[result]),
        };
        (0..4).map(|c| b.channel(result, c % ty.comps)).collect()
    } else {
        // Every component's bits, folded into 32 (sign- or zero-extension is the same for
        // telling results apart), then a byte per colour component: integers below 2^8,
        // which the colour's tolerance tells apart.
        let mut folded: Option<Value> = None;
        for c in 0..ty.comps {
            let x = b.channel(result, c);
            let x = match ty.bits {
                32 => x,
                64 => {
                    let halves = b.alu(AluOp::Unpack64_2x32, &[x]);
                    let (low, high) = (b.channel(halves, 0), b.channel(halves, 1));
                    b.alu(AluOp::Ixor, &[low, high])
                }
                1 => b.alu(AluOp::B2i32, &[x]),
                _ => b.alu(AluOp::U2u32, &[x]),
            };
            folded = Some(match folded {
                None => x,
                Some(f) => {
                    let seven = b.imm_u32(7);
                    let rotated = b.alu(AluOp::Urol, &[f, seven]);
                    b.alu(AluOp::Ixor, &[rotated, x])
                }
            });
        }
        let folded = folded.expect("a result has components");
        (0..4)
            .map(|k| {
                let shift = b.imm_u32(8 * k);
                let high = b.alu(AluOp::Ushr, &[folded, shift]);
                let byte = b.imm_u32(0xff);
                let low = b.alu(AluOp::Iand, &[high, byte]);
                b.alu(AluOp::U2f32, &[low])
            })
            .collect()
    };
    let colour = b.vec(&colour);
    let mut var = Variable::new("colour", Mode::ShaderOut, Type::Vector(Scalar::F32, 4));
    var.location = Some(0);
    let var = b.shader.add_variable(var);
    let deref = b.deref_var(var);
    b.store_deref_all(deref, colour);
    b.ret(None);
    shader
}

/// Source `i` of the probe: a uniform of the operand's type (booleans: a uniform compared
/// with zero).
fn uniform_operand(b: &mut Builder, i: usize, operand: &Operand, bits: u8) -> Value {
    let size = match operand.bits {
        0 => bits,
        fixed => fixed,
    };
    let comps = operand.comps.max(1);
    let boolean = operand.base == BaseType::Bool || size == 1;
    let scalar = if boolean {
        Scalar::U32
    } else {
        Scalar::new(operand.base, size)
    };
    let ty = match comps {
        1 => Type::Scalar(scalar),
        n => Type::Vector(scalar, n),
    };
    let var = b
        .shader
        .add_variable(Variable::new(format!("s{i}"), Mode::Uniform, ty));
    let deref = b.deref_var(var);
    let value = b.load_deref(deref);
    if boolean {
        let zero = b.imm_u32(0);
        b.alu(AluOp::Ine, &[value, zero])
    } else {
        value
    }
}

/// How `target` fares with `op` at `bits`: the probe run at the target's first width.
pub fn support(target: &'static Target, op: AluOp, bits: u8) -> Support {
    let shader = probe(op, bits);
    let mut run = Run::new(target.name, target.widths(Stage::Fragment)[0]);
    // Operands below 1 in magnitude, results below 4: what the opcode's accuracy allows there.
    run.tolerance = run
        .tolerance
        .max(2.0 * op.accuracy().error(4.0, 1.0) as f32);
    match run_on_target(&shader, &run) {
        Ok(_) if survives(&shader, op, bits, target) => Support::Native,
        Ok(_) => Support::Lowered,
        Err(e) => match Failure::of(&e) {
            Failure::Refused(_) => Support::Refused(first_line(&e)),
            _ => Support::Wrong(first_line(&e)),
        },
    }
}

/// Whether `op` at `bits` is still in `shader` after the default pipeline and `target`'s backend
/// pipeline: what the backend itself then compiles.
fn survives(shader: &Shader, op: AluOp, bits: u8, target: &'static Target) -> bool {
    let spec = format!("default,{}", target.backend_pipeline());
    let mut lowered = shader.clone();
    let Ok(pipeline) = Pipeline::parse(&spec, target) else {
        return false;
    };
    if pipeline.run(&mut lowered).is_err() {
        return false;
    }
    lowered.functions.iter().any(|f| {
        f.insts.iter().flatten().any(|inst| match &inst.kind {
            InstKind::Alu(alu) if alu.op == op => bits == 0 || common_bits(f, inst) == Some(bits),
            _ => false,
        })
    })
}

/// The bit size an ALU instruction's unsized operands share: a 64-bit `frcp` lowered to a
/// 32-bit estimate no longer has the opcode at that size.
fn common_bits(f: &Function, inst: &shrew_engine::ir::Inst) -> Option<u8> {
    let InstKind::Alu(alu) = &inst.kind else {
        return None;
    };
    let info = alu.op.info();
    match info.first_unsized_src() {
        Some(i) => f.value_type(alu.srcs.get(i)?.value).map(|t| t.bits),
        None => inst.def.map(|d| d.bits),
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").to_string()
}

/// The entries (an opcode at a bit size, as [`entries`] lists them) `target` compiles into
/// shaders of any stage it takes (probed once per target, then remembered).
pub fn compiled_ops(target: &'static Target) -> BTreeSet<(AluOp, u8)> {
    static KNOWN: OnceLock<Mutex<HashMap<&'static str, OpSet>>> = OnceLock::new();
    let known = KNOWN.get_or_init(|| Mutex::new(HashMap::new()));
    let remembered = known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(target.name)
        .cloned();
    if let Some(ops) = remembered {
        return ops;
    }
    let ops: OpSet = entries()
        .into_iter()
        .filter(|&(op, bits)| support(target, op, bits).compiles())
        .collect();
    known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(target.name, ops.clone());
    ops
}

type OpSet = BTreeSet<(AluOp, u8)>;

/// The entry of the matrix an instruction of `func` defining `def` is: its opcode and the
/// bit size of its unsized operands (0 when every operand is sized).
pub fn entry_of(func: &Function, alu: &Alu, def: ValType) -> (AluOp, u8) {
    let info = alu.op.info();
    let bits = if info.dst.bits == 0 {
        def.bits
    } else {
        match info.first_unsized_src() {
            Some(i) => alu.src_bit_sizes(func, def)[i],
            None => 0,
        }
    };
    (alu.op, bits)
}

/// Whether `target` compiles `stage` shaders that write SSBOs and runs them as the
/// interpreter does: a probe storing to one dword and adding to another atomically (probed
/// once per target and stage, then remembered).
pub fn writes_ssbos(target: &'static Target, stage: Stage) -> bool {
    probed((target.name, stage, "ssbo"), || {
        let run = Run::new(target.name, target.widths(stage)[0]);
        target.compiles(stage) && run_on_target(&ssbo_probe(stage, false), &run).is_ok()
    })
}

/// Whether `target` compiles compute shaders with shared memory and runs them as the
/// interpreter does: the SSBO probe with a value passed through shared memory (probed once
/// per target, then remembered).
pub fn has_shared_memory(target: &'static Target) -> bool {
    probed((target.name, Stage::Compute, "shared"), || {
        let run = Run::new(target.name, target.widths(Stage::Compute)[0]);
        target.compiles(Stage::Compute)
            && run_on_target(&ssbo_probe(Stage::Compute, true), &run).is_ok()
    })
}

/// What `probe` gives for `key`, computed once.
fn probed(key: (&'static str, Stage, &'static str), probe: impl FnOnce() -> bool) -> bool {
    type Known = Mutex<HashMap<(&'static str, Stage, &'static str), bool>>;
    static KNOWN: OnceLock<Known> = OnceLock::new();
    let known = KNOWN.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(&answer) = known.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return answer;
    }
    let answer = probe();
    known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, answer);
    answer
}

/// A shader of `stage` storing 1 to dword 0 of an SSBO (`through_shared`: a value stored to
/// shared memory and loaded back) and adding 1 to dword 1 atomically.
fn ssbo_probe(stage: Stage, through_shared: bool) -> Shader {
    let mut shader = Shader::new(stage);
    let mut b = Builder::new(&mut shader, FuncId(0));
    let ty = Type::Array {
        elem: Box::new(Type::Scalar(Scalar::U32)),
        len: 4,
        stride: 0,
    };
    let mut cells = Variable::new("cells", Mode::Ssbo, ty);
    cells.binding = Some(0);
    let cells = b.shader.add_variable(cells);
    let array = b.deref_var(cells);
    let (zero, one) = (b.imm_u32(0), b.imm_u32(1));
    let first = b.deref_array(array, zero);
    let stored = if through_shared {
        let shared = Variable::new("shared", Mode::Shared, Type::Scalar(Scalar::U32));
        let shared = b.shader.add_variable(shared);
        let cell = b.deref_var(shared);
        b.store_deref_all(cell, one);
        b.load_deref(cell)
    } else {
        one
    };
    b.store_deref_all(first, stored);
    let second = b.deref_array(array, one);
    b.intrinsic(
        Intrinsic::DerefAtomic,
        &[second, one],
        Some(ValType::new(32, 1)),
        &[(IndexKind::AtomicOp, AtomicOp::Iadd as u32)],
    );
    let output = match stage {
        Stage::Fragment => {
            let mut colour = Variable::new("colour", Mode::ShaderOut, Type::Vector(Scalar::F32, 4));
            colour.location = Some(0);
            Some(colour)
        }
        Stage::Vertex => {
            let mut position =
                Variable::new("position", Mode::ShaderOut, Type::Vector(Scalar::F32, 4));
            position.builtin = Some(Builtin::Position);
            Some(position)
        }
        _ => None,
    };
    if let Some(output) = output {
        let output = b.shader.add_variable(output);
        let half = b.imm_f32(0.5);
        let value = b.vec(&[half; 4]);
        let deref = b.deref_var(output);
        b.store_deref_all(deref, value);
    }
    b.ret(None);
    shader
}
