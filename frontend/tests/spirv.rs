//! The SPIR-V translator on small modules built with rspirv's builder: each is translated,
//! verified, run on the reference interpreter and its outputs compared with what the SPIR-V
//! means. Malformed and unsupported modules must give located errors, never panics.

use rspirv::binary::Assemble;
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    AddressingModel, Capability, Decoration, ExecutionMode, ExecutionModel, FunctionControl,
    MemoryModel, SelectionControl, StorageClass, Word,
};
use shrew_engine::interp::{Launch, Resources, run};
use shrew_engine::ir::Shader;
use shrew_frontend::spirv::{ErrorKind, Options, translate, translate_bytes};

/// A fragment shader module under construction: `float` type, a `vec4` output `color` at
/// location 0, and `main` open at its first block.
struct Frag {
    b: Builder,
    float: Word,
    vec4: Word,
    uint: Word,
    boolean: Word,
    color: Word,
    main: Word,
    /// The label of `main`'s first block.
    entry: Word,
}

impl Frag {
    fn new() -> Frag {
        let mut b = Builder::new();
        b.set_version(1, 0);
        b.capability(Capability::Shader);
        b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
        let void = b.type_void();
        let float = b.type_float(32, None);
        let uint = b.type_int(32, 0);
        let boolean = b.type_bool();
        let vec4 = b.type_vector(float, 4);
        let out_ptr = b.type_pointer(None, StorageClass::Output, vec4);
        let color = b.variable(out_ptr, None, StorageClass::Output, None);
        b.name(color, "color");
        b.decorate(color, Decoration::Location, [Operand::LiteralBit32(0)]);
        let fn_ty = b.type_function(void, []);
        let main = b
            .begin_function(void, None, FunctionControl::NONE, fn_ty)
            .unwrap();
        let entry = b.begin_block(None).unwrap();
        Frag {
            entry,
            b,
            float,
            vec4,
            uint,
            boolean,
            color,
            main,
        }
    }

    fn f(&mut self, x: f32) -> Word {
        self.b.constant_bit32(self.float, x.to_bits())
    }

    fn u(&mut self, x: u32) -> Word {
        self.b.constant_bit32(self.uint, x)
    }

    /// Stores `vec4(x, y, z, w)` to `color`.
    fn store_color(&mut self, comps: [Word; 4]) {
        let v = self.b.composite_construct(self.vec4, None, comps).unwrap();
        self.b.store(self.color, v, None, []).unwrap();
    }

    fn finish(mut self) -> Vec<u32> {
        self.b.ret().unwrap();
        self.b.end_function().unwrap();
        self.b
            .entry_point(ExecutionModel::Fragment, self.main, "main", [self.color]);
        self.b
            .execution_mode(self.main, ExecutionMode::OriginUpperLeft, []);
        self.b.module().assemble()
    }
}

fn translate_ok(words: &[u32]) -> Shader {
    translate(words, &Options::default()).unwrap_or_else(|e| panic!("translation failed: {e}"))
}

/// The `color` output of one fragment invocation.
fn color_of(shader: &Shader) -> Vec<f32> {
    let r = run(shader, &Launch::invocations(1), &mut Resources::default()).unwrap();
    r.invocation(0)
        .output("color")
        .expect("a color output")
        .iter()
        .map(|&v| f32::from_bits(v as u32))
        .collect()
}

#[test]
fn constants_and_arithmetic() {
    let mut m = Frag::new();
    let (two, three) = (m.f(2.0), m.f(3.0));
    let float = m.float;
    let sum = m.b.f_add(float, None, two, three).unwrap();
    let prod = m.b.f_mul(float, None, sum, two).unwrap();
    let neg = m.b.f_negate(float, None, prod).unwrap();
    let quot = m.b.f_div(float, None, three, two).unwrap();
    m.store_color([sum, prod, neg, quot]);
    let shader = translate_ok(&m.finish());
    assert_eq!(color_of(&shader), [5.0, 10.0, -10.0, 1.5]);
}

#[test]
fn loop_with_phis_counts_to_ten() {
    // i = 0; acc = 1; while (i < 10) { acc *= 2 (as float: acc + acc); i++ } color = (acc, i, 0, 0)
    let mut m = Frag::new();
    let (zero_u, one_u, ten) = (m.u(0), m.u(1), m.u(10));
    let (one_f, zero_f) = (m.f(1.0), m.f(0.0));
    let (float, uint, boolean) = (m.float, m.uint, m.boolean);
    let header = m.b.id();
    let body = m.b.id();
    let cont = m.b.id();
    let merge = m.b.id();
    let entry_label = m.entry;
    m.b.branch(header).unwrap();
    m.b.begin_block(Some(header)).unwrap();
    let i = m.b.id();
    let acc = m.b.id();
    let i_next = m.b.id();
    let acc_next = m.b.id();
    m.b.phi(uint, Some(i), [(zero_u, entry_label), (i_next, cont)])
        .unwrap();
    m.b.phi(float, Some(acc), [(one_f, entry_label), (acc_next, cont)])
        .unwrap();
    let lt = m.b.u_less_than(boolean, None, i, ten).unwrap();
    m.b.loop_merge(merge, cont, rspirv::spirv::LoopControl::NONE, [])
        .unwrap();
    m.b.branch_conditional(lt, body, merge, []).unwrap();
    m.b.begin_block(Some(body)).unwrap();
    m.b.f_add(float, Some(acc_next), acc, acc).unwrap();
    m.b.branch(cont).unwrap();
    m.b.begin_block(Some(cont)).unwrap();
    m.b.i_add(uint, Some(i_next), i, one_u).unwrap();
    m.b.branch(header).unwrap();
    m.b.begin_block(Some(merge)).unwrap();
    let i_f = m.b.convert_u_to_f(float, None, i).unwrap();
    m.store_color([acc, i_f, zero_f, zero_f]);
    let shader = translate_ok(&m.finish());
    assert_eq!(color_of(&shader), [1024.0, 10.0, 0.0, 0.0]);
}

#[test]
fn switch_with_shared_targets_and_a_phi_in_its_merge_block() {
    // switch (sel) { case 1: case 3: x = 10; break; case 2: x = 20; break; default: x = 30 }
    for (sel, want) in [(1u32, 10.0f32), (2, 20.0), (3, 10.0), (7, 30.0)] {
        let mut m = Frag::new();
        let s = m.u(sel);
        let (ten, twenty, thirty, zero) = (m.f(10.0), m.f(20.0), m.f(30.0), m.f(0.0));
        let float = m.float;
        let (a, b2, d, merge) = (m.b.id(), m.b.id(), m.b.id(), m.b.id());
        m.b.selection_merge(merge, SelectionControl::NONE).unwrap();
        m.b.switch(
            s,
            d,
            [
                (Operand::LiteralBit32(1), a),
                (Operand::LiteralBit32(2), b2),
                (Operand::LiteralBit32(3), a),
            ],
        )
        .unwrap();
        for (label, _) in [(a, ten), (b2, twenty), (d, thirty)] {
            m.b.begin_block(Some(label)).unwrap();
            m.b.branch(merge).unwrap();
        }
        m.b.begin_block(Some(merge)).unwrap();
        let x =
            m.b.phi(float, None, [(ten, a), (twenty, b2), (thirty, d)])
                .unwrap();
        m.store_color([x, zero, zero, zero]);
        let shader = translate_ok(&m.finish());
        assert_eq!(color_of(&shader)[0], want, "sel = {sel}");
    }
}

/// `switch (sel) { case 0..N-1: x = i; break; default: x = -1 }`: its tests are sibling
/// selections (one construct deep, however many cases), and each case still runs alone.
#[test]
fn switch_cases_are_sibling_selections() {
    const CASES: u32 = 200;
    for (sel, want) in [(0u32, 0.0f32), (7, 7.0), (199, 199.0), (500, -1.0)] {
        let mut m = Frag::new();
        let s = m.u(sel);
        let zero = m.f(0.0);
        let float = m.float;
        let labels: Vec<Word> = (0..CASES).map(|_| m.b.id()).collect();
        let (d, merge) = (m.b.id(), m.b.id());
        let values: Vec<Word> = (0..CASES).map(|i| m.f(i as f32)).collect();
        let minus_one = m.f(-1.0);
        m.b.selection_merge(merge, SelectionControl::NONE).unwrap();
        let targets: Vec<(Operand, Word)> = (0..CASES)
            .map(|i| (Operand::LiteralBit32(i), labels[i as usize]))
            .collect();
        m.b.switch(s, d, targets).unwrap();
        for &label in labels.iter().chain([&d]) {
            m.b.begin_block(Some(label)).unwrap();
            m.b.branch(merge).unwrap();
        }
        m.b.begin_block(Some(merge)).unwrap();
        let sources: Vec<(Word, Word)> = (values.iter().copied().zip(labels.iter().copied()))
            .chain([(minus_one, d)])
            .collect();
        let x = m.b.phi(float, None, sources).unwrap();
        m.store_color([x, zero, zero, zero]);
        let shader = translate_ok(&m.finish());
        let func = &shader.functions[shader.entry.0 as usize];
        let depths =
            shrew_engine::cfg::construct_depths(func, &shrew_engine::cfg::DomTree::new(func));
        let deepest = depths.values().copied().max().unwrap_or(0);
        // The one-trip loop (the merge block has a phi, so breaks stay loop breaks), a test,
        // its case.
        assert!(deepest <= 2, "constructs {deepest} deep");
        assert_eq!(color_of(&shader)[0], want, "sel = {sel}");
    }
}

/// A case construct that branches to two other case targets is not a fall-through SPIR-V
/// allows: a located error, not a guess.
#[test]
fn a_case_falling_into_two_cases_is_rejected() {
    let mut m = Frag::new();
    let s = m.u(0);
    let (a, b2, c, merge) = (m.b.id(), m.b.id(), m.b.id(), m.b.id());
    let t = m.b.constant_true(m.boolean);
    m.b.selection_merge(merge, SelectionControl::NONE).unwrap();
    m.b.switch(
        s,
        merge,
        [
            (Operand::LiteralBit32(0), a),
            (Operand::LiteralBit32(1), b2),
            (Operand::LiteralBit32(2), c),
        ],
    )
    .unwrap();
    m.b.begin_block(Some(a)).unwrap();
    m.b.branch_conditional(t, b2, c, []).unwrap();
    for label in [b2, c] {
        m.b.begin_block(Some(label)).unwrap();
        m.b.branch(merge).unwrap();
    }
    m.b.begin_block(Some(merge)).unwrap();
    let one = m.f(1.0);
    m.store_color([one, one, one, one]);
    rejected(&m.finish(), "falls through into two other cases");
}

#[test]
fn matrices_are_columns() {
    // mat2(1, 2, 3, 4) * vec2(10, 100) = (1·10 + 3·100, 2·10 + 4·100) = (310, 420)
    let mut m = Frag::new();
    let float = m.float;
    let vec2 = m.b.type_vector(float, 2);
    let mat2 = m.b.type_matrix(vec2, 2);
    let c = [1.0, 2.0, 3.0, 4.0, 10.0, 100.0].map(|x| m.f(x));
    let col0 = m.b.composite_construct(vec2, None, [c[0], c[1]]).unwrap();
    let col1 = m.b.composite_construct(vec2, None, [c[2], c[3]]).unwrap();
    let mat = m.b.composite_construct(mat2, None, [col0, col1]).unwrap();
    let v = m.b.composite_construct(vec2, None, [c[4], c[5]]).unwrap();
    let r = m.b.matrix_times_vector(vec2, None, mat, v).unwrap();
    let t = m.b.transpose(mat2, None, mat).unwrap();
    let t01 = m.b.composite_extract(float, None, t, [0, 1]).unwrap();
    let r0 = m.b.composite_extract(float, None, r, [0]).unwrap();
    let r1 = m.b.composite_extract(float, None, r, [1]).unwrap();
    let zero = m.f(0.0);
    m.store_color([r0, r1, t01, zero]);
    let shader = translate_ok(&m.finish());
    assert_eq!(color_of(&shader), [310.0, 420.0, 3.0, 0.0]);
}

#[test]
fn function_with_pointer_parameter_copies_in_and_out() {
    // void twice(inout float x) { x = x + x; }  main: float v = 3; twice(v); color = (v, ...)
    let mut b = Builder::new();
    b.set_version(1, 0);
    b.capability(Capability::Shader);
    b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    let void = b.type_void();
    let float = b.type_float(32, None);
    let vec4 = b.type_vector(float, 4);
    let out_ptr = b.type_pointer(None, StorageClass::Output, vec4);
    let fptr = b.type_pointer(None, StorageClass::Function, float);
    let color = b.variable(out_ptr, None, StorageClass::Output, None);
    b.name(color, "color");
    b.decorate(color, Decoration::Location, [Operand::LiteralBit32(0)]);
    let three = b.constant_bit32(float, 3f32.to_bits());
    let zero = b.constant_bit32(float, 0);
    let main_ty = b.type_function(void, []);
    let twice_ty = b.type_function(void, [fptr]);
    let twice = b.id();
    let main = b
        .begin_function(void, None, FunctionControl::NONE, main_ty)
        .unwrap();
    b.begin_block(None).unwrap();
    let v = b.variable(fptr, None, StorageClass::Function, Some(three));
    b.function_call(void, None, twice, [v]).unwrap();
    let x = b.load(float, None, v, None, []).unwrap();
    let c = b
        .composite_construct(vec4, None, [x, zero, zero, zero])
        .unwrap();
    b.store(color, c, None, []).unwrap();
    b.ret().unwrap();
    b.end_function().unwrap();
    b.begin_function(void, Some(twice), FunctionControl::NONE, twice_ty)
        .unwrap();
    let p = b.function_parameter(fptr).unwrap();
    b.begin_block(None).unwrap();
    let y = b.load(float, None, p, None, []).unwrap();
    let yy = b.f_add(float, None, y, y).unwrap();
    b.store(p, yy, None, []).unwrap();
    b.ret().unwrap();
    b.end_function().unwrap();
    b.entry_point(ExecutionModel::Fragment, main, "main", [color]);
    b.execution_mode(main, ExecutionMode::OriginUpperLeft, []);
    let shader = translate_ok(&b.module().assemble());
    assert_eq!(shader.functions.len(), 2);
    assert_eq!(color_of(&shader), [6.0, 0.0, 0.0, 0.0]);
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let good = {
        let mut m = Frag::new();
        let one = m.f(1.0);
        m.store_color([one, one, one, one]);
        m.finish()
    };
    // Every truncation and every single-word corruption of a valid module.
    for len in 0..good.len() {
        let _ = translate(&good[..len], &Options::default());
    }
    for i in 0..good.len() {
        for value in [
            0,
            1,
            0xffff_ffff,
            good[i] ^ 0x0001_0000,
            good[i].wrapping_add(1),
        ] {
            let mut bad = good.clone();
            bad[i] = value;
            let _ = translate(&bad, &Options::default());
        }
    }
    let e = translate_bytes(&[1, 2, 3], &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    let e = translate(&good[..3], &Options::default()).unwrap_err();
    assert!(e.to_string().contains("does not parse"), "{e}");
}

#[test]
fn errors_name_the_instruction_and_its_word_offset() {
    // An OpFAdd whose operand is not defined anywhere.
    let mut m = Frag::new();
    let one = m.f(1.0);
    let float = m.float;
    let undefined = m.b.id();
    let bad = m.b.f_add(float, None, one, undefined).unwrap();
    m.store_color([bad, one, one, one]);
    let words = m.finish();
    let e = translate(&words, &Options::default()).unwrap_err();
    assert_eq!(e.opcode.as_deref(), Some("OpFAdd"), "{e}");
    let offset = e.offset.expect("an offset");
    assert_eq!(words[offset] & 0xffff, rspirv::spirv::Op::FAdd as u32);
    assert!(
        e.to_string()
            .starts_with(&format!("word {offset} (OpFAdd)")),
        "{e}"
    );
}

#[test]
fn unsupported_stages_say_so() {
    let mut b = Builder::new();
    b.set_version(1, 0);
    b.capability(Capability::Geometry);
    b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    let void = b.type_void();
    let fn_ty = b.type_function(void, []);
    let main = b
        .begin_function(void, None, FunctionControl::NONE, fn_ty)
        .unwrap();
    b.begin_block(None).unwrap();
    b.ret().unwrap();
    b.end_function().unwrap();
    b.entry_point(ExecutionModel::Geometry, main, "main", []);
    let e = translate(&b.module().assemble(), &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.to_string().contains("Geometry"), "{e}");
}

/// The word offset of the first instruction with opcode `op` in a module.
fn find(words: &[u32], op: rspirv::spirv::Op) -> usize {
    let mut offset = 5;
    while words[offset] & 0xffff != op as u32 {
        offset += (words[offset] >> 16) as usize;
    }
    offset
}

/// The translation of `words` fails with a malformed-module error saying `what`, located at an
/// instruction.
fn rejected(words: &[u32], what: &str) {
    let e = translate(words, &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed, "{e}");
    assert!(e.offset.is_some() && e.to_string().contains(what), "{e}");
}

/// A fragment shader writing `color = vec4(1.0)`.
fn white() -> Vec<u32> {
    let mut m = Frag::new();
    let one = m.f(1.0);
    m.store_color([one, one, one, one]);
    m.finish()
}

/// What the translator relies on is checked first: ids defined once and below the bound, types
/// that name only earlier, well-formed types, function types that match.
#[test]
fn malformed_structure_is_rejected_before_translation() {
    let good = white();
    translate_ok(&good);
    // `%vec4 = OpTypeVector %vec4 4`: a type naming itself.
    let mut bad = good.clone();
    let at = find(&bad, rspirv::spirv::Op::TypeVector);
    bad[at + 2] = bad[at + 1];
    rejected(&bad, "before its declaration");
    // A result id at the bound, and one defined twice.
    let mut bad = good.clone();
    let at = find(&bad, rspirv::spirv::Op::TypeVector);
    bad[at + 1] = bad[3];
    rejected(&bad, "the module's bound");
    let mut bad = good.clone();
    let (void, float) = (
        find(&bad, rspirv::spirv::Op::TypeVoid),
        find(&bad, rspirv::spirv::Op::TypeFloat),
    );
    bad[float + 1] = bad[void + 1];
    rejected(&bad, "defined twice");
    // A matrix of zero columns.
    let mut b = Frag::new();
    let mat = b.b.type_matrix(b.vec4, 0);
    let _ = mat;
    let one = b.f(1.0);
    b.store_color([one, one, one, one]);
    rejected(&b.finish(), "a matrix of 0 columns");
    // A vector of vectors.
    let mut b = Frag::new();
    b.b.type_vector(b.vec4, 2);
    let one = b.f(1.0);
    b.store_color([one, one, one, one]);
    rejected(&b.finish(), "as a vector's component");
    // `main` declared as returning a float while its function type returns void.
    let mut bad = good.clone();
    let at = find(&bad, rspirv::spirv::Op::Function);
    let float = find(&bad, rspirv::spirv::Op::TypeFloat);
    bad[at + 1] = bad[float + 1];
    rejected(&bad, "is not its function type's");
}

/// A GLSL.std.450 instruction without the operands it reads is a located error: those of
/// composite or pointer operands (determinant, inverse, modf, frexp and their struct forms) as
/// much as the arithmetic ones (found by fuzzing: determinant without operands panicked).
#[test]
fn extended_instructions_missing_operands_are_rejected() {
    const DETERMINANT: u32 = 33;
    const MATRIX_INVERSE: u32 = 34;
    const MODF: u32 = 35;
    const MODF_STRUCT: u32 = 36;
    const FREXP: u32 = 51;
    const FREXP_STRUCT: u32 = 52;
    const FMIN: u32 = 37;
    for (op, given) in [
        (DETERMINANT, 0),
        (MATRIX_INVERSE, 0),
        (MODF, 1),
        (MODF_STRUCT, 0),
        (FREXP, 1),
        (FREXP_STRUCT, 0),
        (FMIN, 1),
    ] {
        let mut m = Frag::new();
        let glsl = m.b.ext_inst_import("GLSL.std.450");
        let one = m.f(1.0);
        let float = m.float;
        let operands = vec![Operand::IdRef(one); given];
        let result = m.b.ext_inst(float, None, glsl, op, operands).unwrap();
        m.store_color([result, one, one, one]);
        // The structure check (no operands at all) or the translator (too few) says so.
        rejected(&m.finish(), "extended instruction");
    }
}

/// A call must pass as many arguments as its callee has parameters.
#[test]
fn calls_must_match_their_callee() {
    for arguments in [1, 0, 2] {
        let mut m = Frag::new();
        let float = m.float;
        let fn_ty = m.b.type_function(float, [float]);
        let twice = m.b.id();
        let one = m.f(1.0);
        let passed = vec![one; arguments];
        let result = m.b.function_call(float, None, twice, passed).unwrap();
        m.store_color([result, one, one, one]);
        m.b.ret().unwrap();
        m.b.end_function().unwrap();
        // float twice(float x) { return x + x; }
        m.b.begin_function(float, Some(twice), FunctionControl::NONE, fn_ty)
            .unwrap();
        let x = m.b.function_parameter(float).unwrap();
        m.b.begin_block(None).unwrap();
        let sum = m.b.f_add(float, None, x, x).unwrap();
        m.b.ret_value(sum).unwrap();
        m.b.end_function().unwrap();
        m.b.entry_point(ExecutionModel::Fragment, m.main, "main", [m.color]);
        m.b.execution_mode(m.main, ExecutionMode::OriginUpperLeft, []);
        let words = m.b.module().assemble();
        if arguments == 1 {
            assert_eq!(color_of(&translate_ok(&words)), [2.0, 1.0, 1.0, 1.0]);
        } else {
            rejected(
                &words,
                &format!("{arguments} arguments to %{twice}, which takes 1"),
            );
        }
    }
}

/// A module's header and its instructions, each as its words.
fn split(words: &[u32]) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut insts = Vec::new();
    let mut offset = 5;
    while offset < words.len() {
        let count = (words[offset] >> 16) as usize;
        insts.push(words[offset..offset + count].to_vec());
        offset += count;
    }
    (words[..5].to_vec(), insts)
}

fn join(header: &[u32], insts: &[Vec<u32>]) -> Vec<u32> {
    header
        .iter()
        .chain(insts.iter().flatten())
        .copied()
        .collect()
}

/// The index of the first instruction with opcode `op`.
fn position(insts: &[Vec<u32>], op: rspirv::spirv::Op) -> usize {
    insts
        .iter()
        .position(|inst| inst[0] & 0xffff == op as u32)
        .unwrap_or_else(|| panic!("no Op{op:?}"))
}

/// An instruction from its opcode and operand words.
fn inst(op: rspirv::spirv::Op, operands: &[u32]) -> Vec<u32> {
    let mut words = vec![((operands.len() as u32 + 1) << 16) | op as u32];
    words.extend(operands);
    words
}

/// The sections come in order, one memory model, every function instruction in a block.
#[test]
fn logical_layout_is_checked() {
    use rspirv::spirv::Op;
    let (header, insts) = split(&white());
    // OpName after the decorations.
    let mut bad = insts.clone();
    let name = bad.remove(position(&bad, Op::Name));
    bad.insert(position(&bad, Op::Decorate) + 1, name);
    rejected(&join(&header, &bad), "module section's order");
    // A second memory model.
    let mut bad = insts.clone();
    let at = position(&bad, Op::MemoryModel);
    bad.insert(at, bad[at].clone());
    rejected(&join(&header, &bad), "a second memory model");
    // A second OpReturn, after the block has ended.
    let mut bad = insts.clone();
    let at = position(&bad, Op::Return);
    bad.insert(at, bad[at].clone());
    rejected(&join(&header, &bad), "an instruction outside a block");
    // A branch's merge instruction away from the branch.
    let mut bad = insts.clone();
    let label = bad[position(&bad, Op::Label)][1];
    let at = position(&bad, Op::Store);
    bad.insert(at, inst(Op::SelectionMerge, &[label, 0]));
    rejected(
        &join(&header, &bad),
        "a merge instruction not right before a branch",
    );
}

/// An `OpSpecConstantOp` computes only the operations SPIR-V allows there: one of another
/// (`OpConstant`, whose literal the parser could not size, or `OpSwitch`) is a located error,
/// not a panic in the parser.
#[test]
fn spec_constant_ops_of_operations_not_allowed_there_are_rejected() {
    use rspirv::spirv::Op;
    let (header, insts) = split(&white());
    let constant = &insts[position(&insts, Op::Constant)];
    let (float, one) = (constant[1], constant[3]);
    for operation in [Op::Constant, Op::Switch, Op::SpecConstantOp, Op::Nop] {
        let mut bad = insts.clone();
        let at = position(&bad, Op::Constant) + 1;
        // Words enough for every operation's operands, so that the parser would reach the
        // literals it cannot decode.
        let operands = [float, header[3], operation as u32, one, one, one, one];
        bad.insert(at, inst(Op::SpecConstantOp, &operands));
        let mut words = join(&header, &bad);
        words[3] += 1;
        rejected(&words, "OpSpecConstantOp with operation");
    }
}

/// Names and decorations name what they apply to; entry points are functions whose interfaces
/// are input and output variables; a fragment shader has an origin.
#[test]
fn names_decorations_and_entry_points_are_checked() {
    use rspirv::spirv::Op;
    let (header, insts) = split(&white());
    let constant = insts[position(&insts, Op::Constant)][2];
    let vec4 = insts[position(&insts, Op::TypeVector)][1];
    // `Location` on a constant.
    let mut bad = insts.clone();
    let at = position(&bad, Op::Decorate);
    bad[at][1] = constant;
    rejected(
        &join(&header, &bad),
        "which is not a variable or struct member",
    );
    // `Block` on a vector type.
    let mut bad = insts.clone();
    let at = position(&bad, Op::Decorate);
    bad[at] = inst(Op::Decorate, &[vec4, Decoration::Block as u32]);
    rejected(&join(&header, &bad), "which is not a struct type");
    // A member name on a vector type.
    let mut bad = insts.clone();
    let at = position(&bad, Op::Name);
    bad.insert(at + 1, inst(Op::MemberName, &[vec4, 0, 0]));
    rejected(&join(&header, &bad), "is not a struct type");
    // An interface that is a constant.
    let mut bad = insts.clone();
    let at = position(&bad, Op::EntryPoint);
    *bad[at].last_mut().unwrap() = constant;
    rejected(&join(&header, &bad), "is not an input or output variable");
    // An output the entry point does not list.
    let mut bad = insts.clone();
    let at = position(&bad, Op::EntryPoint);
    bad[at].pop();
    bad[at][0] -= 1 << 16;
    rejected(&join(&header, &bad), "is in no entry point's interface");
    // A fragment shader without OriginUpperLeft.
    let mut bad = insts.clone();
    bad.remove(position(&bad, Op::ExecutionMode));
    rejected(&join(&header, &bad), "without an origin execution mode");
}

/// The members of a uniform block's struct have an offset, one.
#[test]
fn uniform_blocks_are_laid_out_explicitly() {
    for offsets in [1, 0, 2] {
        let mut m = Frag::new();
        let vec4 = m.vec4;
        let block = m.b.type_struct([vec4]);
        m.b.decorate(block, Decoration::Block, []);
        for _ in 0..offsets {
            m.b.member_decorate(block, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
        }
        let block_ptr = m.b.type_pointer(None, StorageClass::Uniform, block);
        let member_ptr = m.b.type_pointer(None, StorageClass::Uniform, vec4);
        // A global variable: declared while no block is selected.
        let block_index = m.b.selected_block();
        m.b.select_block(None).unwrap();
        let params = m.b.variable(block_ptr, None, StorageClass::Uniform, None);
        m.b.select_block(block_index).unwrap();
        m.b.decorate(params, Decoration::Binding, [Operand::LiteralBit32(0)]);
        m.b.decorate(
            params,
            Decoration::DescriptorSet,
            [Operand::LiteralBit32(0)],
        );
        let zero = m.u(0);
        let member = m.b.access_chain(member_ptr, None, params, [zero]).unwrap();
        let value = m.b.load(vec4, None, member, None, []).unwrap();
        m.b.store(m.color, value, None, []).unwrap();
        let words = m.finish();
        match offsets {
            1 => drop(translate_ok(&words)),
            0 => rejected(&words, "member 0 of the block struct"),
            _ => rejected(&words, "decorated Offset again"),
        }
    }
}

/// Every instruction's operands and result have the types its opcode requires.
#[test]
fn operand_and_result_types_are_checked() {
    use rspirv::spirv::Op;
    // An OpFAdd of an integer.
    let mut m = Frag::new();
    let (two, three) = (m.f(2.0), m.u(3));
    let sum = m.b.f_add(m.float, None, two, three).unwrap();
    m.store_color([sum, two, two, two]);
    rejected(&m.finish(), "is of type");
    // A load whose result type is not its pointer's pointee.
    let mut m = Frag::new();
    let loaded = m.b.load(m.float, None, m.color, None, []).unwrap();
    m.store_color([loaded, loaded, loaded, loaded]);
    rejected(&m.finish(), "is not the pointee");
    // A boolean OpConstant.
    let mut m = Frag::new();
    m.b.constant_bit32(m.boolean, 1);
    let one = m.f(1.0);
    m.store_color([one, one, one, one]);
    rejected(&m.finish(), "is not a scalar numeric type");
    // A shuffle of a component past both vectors'.
    let mut m = Frag::new();
    let one = m.f(1.0);
    let v =
        m.b.composite_construct(m.vec4, None, [one, one, one, one])
            .unwrap();
    let shuffled =
        m.b.vector_shuffle(m.vec4, None, v, v, [0, 1, 2, 9])
            .unwrap();
    m.b.store(m.color, shuffled, None, []).unwrap();
    rejected(&m.finish(), "the component 9 of 8");
    // An integer type of signedness 2, and a second float type.
    let (header, insts) = split(&white());
    let mut bad = insts.clone();
    let at = position(&bad, Op::TypeInt);
    bad[at][3] = 2;
    rejected(&join(&header, &bad), "signedness 2");
    let mut bad = insts.clone();
    let at = position(&bad, Op::TypeFloat);
    let mut again = bad[at].clone();
    again[1] = header[3];
    bad.insert(at + 1, again);
    let mut bigger = header.clone();
    bigger[3] += 1;
    rejected(
        &join(&bigger, &bad),
        "a second declaration of the same type",
    );
    // A value returned from the void `main`.
    let mut bad = insts.clone();
    let constant = bad[position(&bad, Op::Constant)][2];
    let at = position(&bad, Op::Return);
    bad[at] = inst(Op::ReturnValue, &[constant]);
    rejected(
        &join(&header, &bad),
        "a value returned from a void function",
    );
}

/// Where the branches of `if (true) { then } else { else }` go, and the merge block's, in
/// [`if_else`]: the blocks by name.
#[derive(Copy, Clone)]
enum To {
    Header,
    Then,
    Merge,
    End,
}

/// `header: if (true) then else; then: -> then_to; else: -> merge; merge: -> merge_to; end:
/// color = 1, return` as a fragment shader.
fn if_else(then_to: To, merge_to: To) -> Vec<u32> {
    let mut m = Frag::new();
    let t = m.b.constant_true(m.boolean);
    let one = m.f(1.0);
    let [header, then, other, merge, end] = [(); 5].map(|()| m.b.id());
    let label = |to: To| match to {
        To::Header => header,
        To::Then => then,
        To::Merge => merge,
        To::End => end,
    };
    m.b.branch(header).unwrap();
    m.b.begin_block(Some(header)).unwrap();
    m.b.selection_merge(merge, SelectionControl::NONE).unwrap();
    m.b.branch_conditional(t, then, other, []).unwrap();
    m.b.begin_block(Some(then)).unwrap();
    m.b.branch(label(then_to)).unwrap();
    m.b.begin_block(Some(other)).unwrap();
    m.b.branch(merge).unwrap();
    m.b.begin_block(Some(merge)).unwrap();
    m.b.branch(label(merge_to)).unwrap();
    m.b.begin_block(Some(end)).unwrap();
    m.store_color([one, one, one, one]);
    m.finish()
}

/// Constructs are entered through their headers and left through their merge blocks; back
/// edges go to loop headers; a block merges one construct.
#[test]
fn structured_control_flow_is_checked() {
    use rspirv::spirv::Op;
    translate_ok(&if_else(To::Merge, To::End));
    rejected(&if_else(To::Header, To::End), "a back edge to");
    rejected(&if_else(To::End, To::End), "construct");
    rejected(&if_else(To::Merge, To::Then), "a branch into a construct");
    // A second selection whose merge block is the first's.
    let (header, mut insts) = split(&if_else(To::Merge, To::End));
    let merge = insts[position(&insts, Op::SelectionMerge)][1];
    let branch = insts
        .iter()
        .rposition(|i| i[0] & 0xffff == Op::Branch as u32);
    let at = branch.unwrap();
    let end = insts[at][1];
    let condition = insts[position(&insts, Op::BranchConditional)][1];
    insts[at] = inst(Op::BranchConditional, &[condition, end, end]);
    insts.insert(at, inst(Op::SelectionMerge, &[merge, 0]));
    rejected(
        &join(&header, &insts),
        "is already another header's merge block",
    );
}

/// A call may pass a pointer whose type is another declaration of the parameter's pointer type
/// (glslang does, for a struct of samplers): the translator copies arguments member by member.
#[test]
fn pointer_arguments_may_have_another_pointer_type() {
    use rspirv::spirv::Op;
    let mut b = Builder::new();
    b.set_version(1, 0);
    b.capability(Capability::Shader);
    b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    let void = b.type_void();
    let float = b.type_float(32, None);
    let vec4 = b.type_vector(float, 4);
    let out_ptr = b.type_pointer(None, StorageClass::Output, vec4);
    let fptr = b.type_pointer(None, StorageClass::Function, float);
    let color = b.variable(out_ptr, None, StorageClass::Output, None);
    b.name(color, "color");
    b.decorate(color, Decoration::Location, [Operand::LiteralBit32(0)]);
    let three = b.constant_bit32(float, 3f32.to_bits());
    let zero = b.constant_bit32(float, 0);
    let main_ty = b.type_function(void, []);
    let twice_ty = b.type_function(void, [fptr]);
    let twice = b.id();
    let main = b
        .begin_function(void, None, FunctionControl::NONE, main_ty)
        .unwrap();
    b.begin_block(None).unwrap();
    let v = b.variable(fptr, None, StorageClass::Function, Some(three));
    b.function_call(void, None, twice, [v]).unwrap();
    let x = b.load(float, None, v, None, []).unwrap();
    let c = b
        .composite_construct(vec4, None, [x, zero, zero, zero])
        .unwrap();
    b.store(color, c, None, []).unwrap();
    b.ret().unwrap();
    b.end_function().unwrap();
    b.begin_function(void, Some(twice), FunctionControl::NONE, twice_ty)
        .unwrap();
    let p = b.function_parameter(fptr).unwrap();
    b.begin_block(None).unwrap();
    let y = b.load(float, None, p, None, []).unwrap();
    let yy = b.f_add(float, None, y, y).unwrap();
    b.store(p, yy, None, []).unwrap();
    b.ret().unwrap();
    b.end_function().unwrap();
    b.entry_point(ExecutionModel::Fragment, main, "main", [color]);
    b.execution_mode(main, ExecutionMode::OriginUpperLeft, []);
    // `v` gets a pointer type of its own, declared after the parameter's.
    let (mut header, mut insts) = split(&b.module().assemble());
    let own = header[3];
    header[3] += 1;
    let at = (insts.iter())
        .position(|i| i[0] & 0xffff == Op::TypePointer as u32 && i[1] == fptr)
        .unwrap();
    let mut pointer = insts[at].clone();
    pointer[1] = own;
    insts.insert(at + 1, pointer);
    let variable = (insts.iter())
        .position(|i| i[0] & 0xffff == Op::Variable as u32 && i[2] == v)
        .unwrap();
    insts[variable][1] = own;
    let shader = translate_ok(&join(&header, &insts));
    assert_eq!(color_of(&shader), [6.0, 0.0, 0.0, 0.0]);
}

/// A seed gives the same mutant every time, a changed module; every kind of mutation that
/// applies is made.
#[test]
fn mutations_are_deterministic() {
    use shrew_frontend::spirv::mutate::{Mutation, mutate};
    let words = if_else(To::Merge, To::End);
    let mut kinds = std::collections::HashSet::new();
    for seed in 0..200 {
        let a = mutate(&words, seed).unwrap();
        let b = mutate(&words, seed).unwrap();
        assert_eq!((&a.words, &a.description), (&b.words, &b.description));
        assert_ne!(a.words, words, "seed {seed}: {}", a.description);
        kinds.insert(a.mutation);
    }
    // The module has one function type: there is no other to give its function.
    let applicable = Mutation::ALL
        .iter()
        .filter(|&&k| k != Mutation::FunctionType);
    assert!(
        applicable.into_iter().all(|k| kinds.contains(k)),
        "{kinds:?}"
    );
}
