//! Round trips of the `.shrew` text format: the IR files under `tests/ir/`, one shader that uses
//! every operation, and random programs. Each check prints a shader, parses the text, prints
//! again and requires the two texts to be equal, and every shader to verify.

use proptest::prelude::*;
use shrew_engine::ir::*;
use shrew_engine::text::{parse, print};
use shrew_ops::{AluOp, AtomicOp, BaseType, DestShape, IndexKind, Intrinsic, SrcShape};
use std::path::Path;

/// Requires a shader these tests built or parsed to pass the verifier: every round-tripped
/// program is valid IR, before and after the trip.
fn check_well_formed(shader: &Shader) {
    if let Err(errors) = shrew_engine::verify::verify(shader) {
        let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        panic!("verifier errors:\n{}\n{}", list.join("\n"), print(shader));
    }
}

/// Prints `shader`, parses the text and prints again; returns the text after checking that the
/// two printings are equal.
fn assert_round_trip(shader: &Shader) -> String {
    check_well_formed(shader);
    let text = print(shader);
    let parsed = parse(&text, "<printed>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    check_well_formed(&parsed);
    assert_eq!(print(&parsed), text);
    text
}

// ---- (a) The IR files.

#[test]
fn ir_files_are_in_printed_form() {
    let files =
        shrew_tests::files_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("ir"), "shrew");
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let shader = parse(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        check_well_formed(&shader);
        // A file may open with `//` lines saying what it covers. The parser drops comments;
        // everything after them must be exactly what the printer writes.
        let body: String = text
            .split_inclusive('\n')
            .skip_while(|line| line.starts_with("//"))
            .collect();
        assert_eq!(
            print(&shader),
            body,
            "{} is not in printed form",
            path.display()
        );
    }
}

// ---- (b) Every operation.

/// A 4-component constant of each bit size, for sources to swizzle from.
struct Pool {
    by_bits: [(u8, Value); 5],
}

impl Pool {
    fn new(b: &mut Builder) -> Pool {
        let f32s = |xs: [f32; 4]| xs.map(|x| x.to_bits() as u64);
        Pool {
            by_bits: [
                (1, b.imm(1, &[1, 0, 1, 1])),
                (8, b.imm(8, &[1, 0x7f, 0x80, 0xff])),
                (16, b.imm(16, &[0x3c00, 0xc000, 0x7bff, 0x0001])),
                (32, b.imm(32, &f32s([0.5, -2.0, 3.25, 1e-3]))),
                (
                    64,
                    b.imm(64, &[1.5f64.to_bits(), 7, u64::MAX, (-0.0f64).to_bits()]),
                ),
            ],
        }
    }

    fn get(&self, bits: u8) -> Value {
        self.by_bits.iter().find(|(b, _)| *b == bits).unwrap().1
    }
}

/// The common bit size and width of an instruction of `op`: the `choice`-th size the opcode
/// allows but the 1-bit one (booleans are covered elsewhere; fully sized opcodes ignore it), and
/// `comps` components unless the opcode fixes them.
fn alu_shape(op: AluOp, choice: usize, comps: u8) -> (u8, u8) {
    let info = op.info();
    let sizes: Vec<u8> = info
        .unsized_bit_sizes()
        .into_iter()
        .filter(|&b| b != 1)
        .collect();
    let bits = sizes
        .get(choice % sizes.len().max(1))
        .copied()
        .unwrap_or(32);
    (
        bits,
        if info.dst.comps == 0 {
            comps
        } else {
            info.dst.comps
        },
    )
}

/// One instruction of every ALU opcode, with legal shapes from its table entry and sizes,
/// widths, swizzles and flags that vary from opcode to opcode.
fn every_alu_op(b: &mut Builder, pool: &Pool) {
    for (i, op) in AluOp::all().enumerate() {
        let info = op.info();
        let (bits, comps) = alu_shape(op, i, 1 + (i % 4) as u8);
        let srcs = info
            .srcs
            .iter()
            .enumerate()
            .map(|(j, operand)| {
                let src_bits = if operand.bits == 0 {
                    bits
                } else {
                    operand.bits
                };
                let read = if operand.comps == 0 {
                    comps
                } else {
                    operand.comps
                };
                let swizzle: Vec<u8> = (0..read as usize)
                    .map(|c| ((c + i + j) % 4) as u8)
                    .collect();
                AluSrc::swizzled(pool.get(src_bits), &swizzle)
            })
            .collect();
        let v = b.alu_swizzled(op, srcs, comps);
        if let InstKind::Alu(alu) = &mut b.function_mut().inst_mut(v).kind {
            alu.exact = i % 5 == 0;
            alu.fp = FpFlags((i % 8) as u8);
        }
    }
}

/// A nonzero value for each index, so that every index is printed.
fn sample_index(op: Intrinsic, kind: IndexKind) -> u32 {
    match kind {
        IndexKind::WriteMask => 0b1011,
        // cmpxchg belongs to the swap forms; the others take xchg.
        IndexKind::AtomicOp if op.name().ends_with("_swap") => AtomicOp::Cmpxchg as u32,
        IndexKind::AtomicOp => AtomicOp::Xchg as u32,
        IndexKind::ImageDim => 1,
        IndexKind::ImageArray => 1,
        IndexKind::Access | IndexKind::MemoryModes => 5,
        IndexKind::ExecutionScope | IndexKind::MemoryScope | IndexKind::MemorySemantics => 3,
        IndexKind::AlignMul => 16,
        _ => 4,
    }
}

/// Derefs the intrinsics read through.
struct Derefs {
    /// An SSBO element of shape 32x4.
    vector: Value,
    /// An SSBO `u32`, for atomics.
    counter: Value,
    /// A storage image.
    image: Value,
}

/// The stage that tests an intrinsic: the one it exists in when it is stage-specific, else the
/// fragment stage of [`every_operation_shader`].
fn test_stage(op: Intrinsic) -> Stage {
    use Intrinsic::*;
    match op {
        LoadShared
        | StoreShared
        | SharedAtomic
        | SharedAtomicSwap
        | Barrier
        | LoadLocalInvocationId
        | LoadLocalInvocationIndex
        | LoadGlobalInvocationId
        | LoadWorkgroupId
        | LoadNumWorkgroups
        | LoadWorkgroupSize => Stage::Compute,
        LoadVertexId | LoadInstanceId | LoadBaseVertex | LoadBaseInstance | LoadDrawId => {
            Stage::Vertex
        }
        LoadInvocationId => Stage::Geometry,
        _ => Stage::Fragment,
    }
}

/// One instruction of every intrinsic tested in `stage` (`load_param` is in the helper
/// functions of [`every_operation_shader`]).
fn every_intrinsic(b: &mut Builder, pool: &Pool, derefs: &Derefs, stage: Stage) {
    let scalar = b.imm_u32(3);
    let address = b.imm(64, &[0x1000]);
    let cond = b.imm_bool(false);
    // The image is a 2D array: two coordinates and a layer.
    let coord = b.imm(32, &[1, 2, 0]);
    let vector = b.channel(pool.get(32), 0);
    let vector = b.vec(&[vector, vector, vector, vector]);
    let tested = |&op: &Intrinsic| op != Intrinsic::LoadParam && test_stage(op) == stage;
    for op in Intrinsic::all().filter(tested) {
        let info = op.info();
        let image = op.name().starts_with("image_");
        let atomic = info.has_index(IndexKind::AtomicOp);
        let data = if atomic { scalar } else { vector };
        let srcs: Vec<Value> = info
            .srcs
            .iter()
            .map(|shape| match shape {
                SrcShape::Deref if image => derefs.image,
                SrcShape::Deref if atomic => derefs.counter,
                SrcShape::Deref => derefs.vector,
                SrcShape::Scalar32 => scalar,
                SrcShape::Address64 => address,
                SrcShape::Cond => cond,
                SrcShape::Coord => coord,
                SrcShape::Data => data,
            })
            .collect();
        let def = match info.dest {
            DestShape::Data if op == Intrinsic::ImageDerefSize => Some(ValType::new(32, 3)),
            DestShape::Data => Some(b.value_type(data)),
            _ => None,
        };
        let indices: Vec<(IndexKind, u32)> = info
            .indices
            .iter()
            .map(|&k| (k, sample_index(op, k)))
            .collect();
        b.intrinsic(op, &srcs, def, &indices);
    }
}

/// One instruction of every texture operation, each on a texture variable of its own type.
fn every_tex_op(b: &mut Builder, sampler: VarId) {
    use TexSrc::*;
    let f = |x: f32| x.to_bits() as u64;
    for (i, &op) in TexOp::ALL.iter().enumerate() {
        let (dim, arrayed, shadow) = match op {
            TexOp::Tex => (Dim::D2, false, false),
            TexOp::Txb => (Dim::Cube, false, false),
            TexOp::Txl => (Dim::D2, true, true),
            TexOp::Txd => (Dim::D3, false, false),
            TexOp::Txf => (Dim::Buf, false, false),
            TexOp::TxfMs => (Dim::Ms, true, false),
            TexOp::Txs => (Dim::Rect, false, false),
            TexOp::Lod => (Dim::D1, true, false),
            TexOp::Tg4 => (Dim::D2, false, true),
            TexOp::QueryLevels => (Dim::Cube, true, false),
        };
        let base = if op == TexOp::TxfMs {
            BaseType::Uint
        } else {
            BaseType::Float
        };
        let ty = Type::Texture {
            dim,
            arrayed,
            shadow,
            base,
        };
        let mut var = Variable::new(format!("tex_{}", op.name()), Mode::Uniform, ty);
        var.binding = Some(10 + i as u32);
        let var = b.shader.add_variable(var);
        let texture = b.deref_var(var);
        let coord_comps = dim.coord_components() + arrayed as u8;
        let coord = b.imm(32, &vec![f(0.25); coord_comps as usize]);
        let scalar = b.imm_f32(0.5);
        let mut srcs = vec![(TextureDeref, texture)];
        if !matches!(
            op,
            TexOp::Txf | TexOp::TxfMs | TexOp::Txs | TexOp::QueryLevels
        ) {
            srcs.push((SamplerDeref, b.deref_var(sampler)));
        }
        if !matches!(op, TexOp::Txs | TexOp::QueryLevels) {
            srcs.push((Coord, coord));
        }
        match op {
            TexOp::Txb => srcs.push((Bias, scalar)),
            TexOp::Txl | TexOp::Txf | TexOp::Txs => srcs.push((Lod, scalar)),
            TexOp::Txd => {
                let grad = b.imm(32, &[f(0.01); 3]);
                srcs.extend([(Ddx, grad), (Ddy, grad)]);
            }
            TexOp::TxfMs => srcs.push((MsIndex, b.imm_u32(3))),
            TexOp::Tex => srcs.push((MinLod, scalar)),
            _ => {}
        }
        if shadow {
            srcs.push((Comparator, scalar));
        }
        if op == TexOp::Tg4 {
            srcs.push((Offset, b.imm(32, &[1, (-1i32) as u32 as u64])));
        }
        let def = match op {
            TexOp::Txs => ValType::new(32, coord_comps),
            TexOp::QueryLevels => ValType::scalar(32),
            TexOp::Lod => ValType::new(32, 2),
            TexOp::Txl => ValType::scalar(32),
            _ => ValType::new(32, 4),
        };
        b.tex(
            Tex {
                op,
                dim,
                is_array: arrayed,
                is_shadow: shadow,
                dest_type: base,
                texture: 0,
                sampler: 0,
                component: (op == TexOp::Tg4) as u8 * 2,
                srcs,
            },
            def,
        );
    }
    // A bindless sample: the texture and sampler by index instead of by deref.
    let coord = b.imm(32, &[f(0.5), f(0.5)]);
    let index = b.imm_u32(1);
    b.tex(
        Tex {
            op: TexOp::Tex,
            dim: Dim::D2,
            is_array: false,
            is_shadow: false,
            dest_type: BaseType::Int,
            texture: 7,
            sampler: 3,
            component: 0,
            srcs: vec![
                (Coord, coord),
                (TextureOffset, index),
                (SamplerOffset, index),
            ],
        },
        ValType::new(32, 4),
    );
}

/// A loop counting from 0 to `trips`, opened by [`begin_counted_loop`]: the counter is a phi
/// in the loop header and the body starts with the exit test.
struct CountedLoop {
    lp: LoopBuilder,
    pre: BlockId,
    init: Value,
    counter: Value,
}

fn begin_counted_loop(b: &mut Builder, trips: u32) -> CountedLoop {
    let init = b.imm_u32(0);
    let limit = b.imm_u32(trips);
    let pre = b.cursor.block;
    let lp = b.push_loop();
    let body = b.cursor;
    b.cursor = Cursor::at_end(lp.header);
    let counter = b.phi(ValType::scalar(32), Vec::new());
    b.cursor = body;
    let done = b.alu(AluOp::Uge, &[counter, limit]);
    let exit = b.push_if(done);
    b.break_loop(&lp);
    b.pop_if(exit);
    CountedLoop {
        lp,
        pre,
        init,
        counter,
    }
}

/// Closes the loop: the continue block increments the counter; the cursor moves after the loop.
fn end_counted_loop(b: &mut Builder, l: CountedLoop) {
    let cont = l.lp.cont;
    b.pop_loop(l.lp);
    let after = b.cursor;
    b.cursor = Cursor {
        block: cont,
        pos: Some(0),
    };
    let one = b.imm_u32(1);
    let next = b.alu(AluOp::Iadd, &[l.counter, one]);
    b.cursor = after;
    b.function_mut().inst_mut(l.counter).kind = InstKind::Phi(vec![(l.pre, l.init), (cont, next)]);
}

/// A fragment shader using every ALU opcode, texture operation and intrinsic (but those of
/// other stages, see [`stage_specific_shader`]), every deref kind, phis, undef, calls with and
/// without a result, if/else and a loop.
fn every_operation_shader() -> Shader {
    let mut s = Shader::new(Stage::Fragment);
    let f32x3 = Type::Vector(Scalar::F32, 3);
    let light = s.add_struct(StructType {
        name: "Light".into(),
        members: vec![
            Member::new("pos", f32x3.clone()),
            Member {
                name: "color".into(),
                ty: f32x3,
                offset: Some(16),
            },
        ],
    });
    let buffer = s.add_struct(StructType {
        name: "Buffer".into(),
        members: vec![
            Member {
                name: "lights".into(),
                ty: Type::Array {
                    elem: Box::new(Type::Struct(light)),
                    len: 4,
                    stride: 32,
                },
                offset: None,
            },
            Member {
                name: "counter".into(),
                ty: Type::Scalar(Scalar::U32),
                offset: Some(128),
            },
            Member {
                name: "data".into(),
                ty: Type::Array {
                    elem: Box::new(Type::Vector(Scalar::U32, 4)),
                    len: 0,
                    stride: 0,
                },
                offset: Some(144),
            },
        ],
    });
    let mut var = Variable::new("buf", Mode::Ssbo, Type::Struct(buffer));
    (var.binding, var.desc_set) = (Some(0), Some(1));
    let buf = s.add_variable(var);
    let mut var = Variable::new(
        "img",
        Mode::Uniform,
        Type::Image {
            dim: Dim::D2,
            arrayed: true,
            base: BaseType::Float,
        },
    );
    var.binding = Some(2);
    let img = s.add_variable(var);
    let mut var = Variable::new("smp", Mode::Uniform, Type::Sampler { shadow: false });
    var.binding = Some(3);
    let smp = s.add_variable(var);
    let mut var = Variable::new("color", Mode::ShaderIn, Type::Vector(Scalar::F32, 4));
    (var.location, var.interp) = (Some(0), Interp::Flat);
    let color = s.add_variable(var);
    let mut var = Variable::new("depth", Mode::ShaderOut, Type::Scalar(Scalar::F32));
    var.builtin = Some(Builtin::FragDepth);
    let depth = s.add_variable(var);
    let matrix = Type::Matrix {
        elem: Scalar::F32,
        cols: 4,
        rows: 3,
    };
    let mats = s.add_variable(Variable::new(
        "mats",
        Mode::FunctionTemp,
        Type::Array {
            elem: Box::new(matrix),
            len: 2,
            stride: 0,
        },
    ));

    // fn scale(32x4, 32) -> 32x4 and fn sink(32), for calls with and without a result.
    let scale = s.add_function(
        "scale",
        &[ValType::new(32, 4), ValType::scalar(32)],
        Some(ValType::new(32, 4)),
    );
    let mut b = Builder::new(&mut s, scale);
    let v = b.intrinsic(Intrinsic::LoadParam, &[], Some(ValType::new(32, 4)), &[]);
    let k = b.intrinsic(
        Intrinsic::LoadParam,
        &[],
        Some(ValType::scalar(32)),
        &[(IndexKind::ParamIdx, 1)],
    );
    let scaled = b.alu(AluOp::Fmul, &[v, k]);
    b.ret(Some(scaled));
    let sink = s.add_function("sink", &[ValType::scalar(32)], None);
    let mut b = Builder::new(&mut s, sink);
    let x = b.intrinsic(Intrinsic::LoadParam, &[], Some(ValType::scalar(32)), &[]);
    let out = b.deref_var(depth);
    b.store_deref_all(out, x);
    b.ret(None);

    let mut b = Builder::new(&mut s, FuncId(0));
    let pool = Pool::new(&mut b);
    every_alu_op(&mut b, &pool);

    let base = b.deref_var(buf);
    let data = b.deref_struct(base, 2);
    let one = b.imm_u32(1);
    let vector = b.deref_array(data, one);
    let lights = b.deref_struct(base, 0);
    let light = b.deref_array(lights, one);
    let light_color = b.deref_struct(light, 1);
    b.load_deref(light_color);
    let counter = b.deref_struct(base, 1);
    let image = b.deref_var(img);
    let mats = b.deref_var(mats);
    let mat = b.deref_array(mats, one);
    let column = b.deref_array(mat, one);
    let element = b.deref_array(column, one);
    b.load_deref(element);
    every_intrinsic(
        &mut b,
        &pool,
        &Derefs {
            vector,
            counter,
            image,
        },
        Stage::Fragment,
    );
    every_tex_op(&mut b, smp);

    // if/else merged by a phi, both sides calling.
    let input = b.deref_var(color);
    let x = b.load_deref(input);
    let half = b.imm_f32(0.5);
    let w = b.channel(x, 3);
    let cond = b.alu(AluOp::Flt, &[w, half]);
    let mut nif = b.push_if(cond);
    let negated = b.alu(AluOp::Fneg, &[x]);
    let then_end = b.cursor.block;
    b.push_else(&mut nif);
    let scaled = b.call(scale, &[x, half]).unwrap();
    let else_end = b.cursor.block;
    b.pop_if(nif);
    let merged = b.phi(
        ValType::new(32, 4),
        vec![(then_end, negated), (else_end, scaled)],
    );

    // A counted loop calling a void function, then an undefined value.
    let l = begin_counted_loop(&mut b, 4);
    let lane = b.channel(merged, 1);
    b.call(sink, &[lane]);
    end_counted_loop(&mut b, l);
    let undef = b.undef(ValType::new(16, 2));
    b.alu(AluOp::Fadd, &[undef, undef]);
    b.ret(None);
    s
}

/// A shader of `stage` with the intrinsics that exist only there.
fn stage_specific_shader(stage: Stage) -> Shader {
    let mut s = Shader::new(stage);
    if stage == Stage::Compute {
        s.workgroup_size = [8, 8, 1];
    }
    let u32x4 = Type::Vector(Scalar::U32, 4);
    let mut var = Variable::new("vectors", Mode::Ssbo, u32x4);
    var.binding = Some(0);
    let vectors = s.add_variable(var);
    let mut var = Variable::new("counter", Mode::Ssbo, Type::Scalar(Scalar::U32));
    var.binding = Some(1);
    let counter = s.add_variable(var);
    let image = Type::Image {
        dim: Dim::D2,
        arrayed: true,
        base: BaseType::Float,
    };
    let mut var = Variable::new("img", Mode::Uniform, image);
    var.binding = Some(2);
    let image = s.add_variable(var);
    let mut b = Builder::new(&mut s, FuncId(0));
    let pool = Pool::new(&mut b);
    let derefs = Derefs {
        vector: b.deref_var(vectors),
        counter: b.deref_var(counter),
        image: b.deref_var(image),
    };
    every_intrinsic(&mut b, &pool, &derefs, stage);
    b.ret(None);
    s
}

#[test]
fn every_operation_round_trips() {
    let shaders = [
        every_operation_shader(),
        stage_specific_shader(Stage::Compute),
        stage_specific_shader(Stage::Vertex),
        stage_specific_shader(Stage::Geometry),
    ];
    let text: String = shaders.iter().map(assert_round_trip).collect();
    let words: Vec<&str> = text.split([' ', '\n', '(', ',']).collect();
    let names = AluOp::all()
        .map(|op| op.name())
        .chain(Intrinsic::all().map(|op| op.name()))
        .chain(TexOp::ALL.map(|op| op.name()))
        .chain([
            "deref_var",
            "deref_array",
            "deref_struct",
            "phi",
            "undef",
            "call",
            "load_const",
            "selection",
            "loop",
        ]);
    for name in names {
        assert!(words.contains(&name), "{name} is missing from\n{text}");
    }
}

// ---- (c) Random programs.

/// A random statement of a generated program. Numbers are choices that [`Gen`] reduces to
/// legal ones, so every statement builds.
#[derive(Clone, Debug)]
enum Stmt {
    Const {
        bits: u8,
        comps: u8,
        values: Vec<u64>,
    },
    Alu {
        op: usize,
        size: usize,
        comps: u8,
        picks: Vec<usize>,
        flags: u8,
    },
    If {
        cond: usize,
        then: Vec<Stmt>,
        els: Option<Vec<Stmt>>,
    },
    Loop {
        trips: u32,
        body: Vec<Stmt>,
    },
}

/// Component bits that stress the constant printer: NaNs, infinities, signed zeros and
/// denormals of every float size, and plain random bits and floats.
fn component_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        any::<f32>().prop_map(|x| x.to_bits() as u64),
        any::<f64>().prop_map(f64::to_bits),
        (-70000i64..70000).prop_map(|x| x as u64),
        prop::sample::select(vec![
            0x7fc0_0000,
            0x7f80_0001,
            0x7f80_0000,
            0xff80_0000,
            0x8000_0000,
            0x0000_0001,
            0x007f_ffff,
            0x7e00,
            0x7c01,
            0x7c00,
            0xfc00,
            0x8000,
            0x0001,
            0x03ff,
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            0x7ff0_0000_0000_0000,
            0x8000_0000_0000_0000,
            0x0000_0000_0000_0001,
            0x3f80_0000,
            0x3c00,
            0x3ff0_0000_0000_0000,
        ]),
    ]
}

fn stmt() -> impl Strategy<Value = Stmt> {
    let leaf = prop_oneof![
        (
            prop::sample::select(&shrew_ops::BIT_SIZES[..]),
            prop::sample::select(&[1u8, 2, 3, 4, 5, 8, 16][..]),
            prop::collection::vec(component_bits(), 16),
        )
            .prop_map(|(bits, comps, values)| Stmt::Const {
                bits,
                comps,
                values,
            }),
        (
            any::<usize>(),
            any::<usize>(),
            1..=4u8,
            prop::collection::vec(any::<usize>(), 20),
            any::<u8>(),
        )
            .prop_map(|(op, size, comps, picks, flags)| Stmt::Alu {
                op,
                size,
                comps,
                picks,
                flags,
            }),
    ];
    leaf.prop_recursive(3, 64, 6, |inner| {
        let block = prop::collection::vec(inner, 0..6);
        prop_oneof![
            (
                any::<usize>(),
                block.clone(),
                prop::option::of(block.clone())
            )
                .prop_map(|(cond, then, els)| Stmt::If { cond, then, els }),
            (1..5u32, block).prop_map(|(trips, body)| Stmt::Loop { trips, body }),
        ]
    })
}

/// Builds a program from statements, keeping SSA valid: each construct opens a scope whose
/// values are not used after it.
struct Gen<'a> {
    b: Builder<'a>,
    scopes: Vec<Vec<Value>>,
}

impl Gen<'_> {
    fn shape(&self, v: Value) -> ValType {
        self.b.value_type(v)
    }

    fn define(&mut self, v: Value) {
        self.scopes.last_mut().unwrap().push(v);
    }

    /// A visible value of `bits` bits chosen by `pick`, or a new constant when there is none.
    fn value_of_size(&mut self, bits: u8, pick: usize) -> Value {
        let visible: Vec<Value> = self
            .scopes
            .iter()
            .flatten()
            .copied()
            .filter(|&v| self.shape(v).bits == bits)
            .collect();
        if visible.is_empty() {
            let v = self.b.imm(bits, &[pick as u64, !(pick as u64), 1, 0]);
            self.define(v);
            v
        } else {
            visible[pick % visible.len()]
        }
    }

    fn run(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            match stmt {
                Stmt::Const {
                    bits,
                    comps,
                    values,
                } => {
                    let v = self.b.imm(*bits, &values[..*comps as usize]);
                    self.define(v);
                }
                Stmt::Alu {
                    op,
                    size,
                    comps,
                    picks,
                    flags,
                } => self.alu(*op, *size, *comps, picks, *flags),
                Stmt::If { cond, then, els } => self.branch(*cond, then, els.as_deref()),
                Stmt::Loop { trips, body } => {
                    let l = begin_counted_loop(&mut self.b, *trips);
                    self.scopes.push(vec![l.counter]);
                    self.run(body);
                    self.scopes.pop();
                    end_counted_loop(&mut self.b, l);
                }
            }
        }
    }

    fn alu(&mut self, op: usize, size: usize, comps: u8, picks: &[usize], flags: u8) {
        let op = AluOp::all().nth(op % AluOp::all().count()).unwrap();
        let info = op.info();
        let (bits, comps) = alu_shape(op, size, comps);
        let mut picks = picks.iter().copied().cycle();
        let mut srcs = Vec::new();
        for operand in info.srcs {
            let src_bits = if operand.bits == 0 {
                bits
            } else {
                operand.bits
            };
            let value = self.value_of_size(src_bits, picks.next().unwrap());
            let available = self.shape(value).comps as usize;
            let read = if operand.comps == 0 {
                comps
            } else {
                operand.comps
            };
            let swizzle: Vec<u8> = (0..read)
                .map(|_| (picks.next().unwrap() % available) as u8)
                .collect();
            srcs.push(AluSrc::swizzled(value, &swizzle));
        }
        let v = self.b.alu_swizzled(op, srcs, comps);
        if let InstKind::Alu(alu) = &mut self.b.function_mut().inst_mut(v).kind {
            alu.exact = flags & 1 != 0;
            alu.fp = FpFlags((flags >> 1) & 7);
        }
        self.define(v);
    }

    /// An `if`, with a phi merging the last values of its sides when their shapes agree (the
    /// side without code contributes a value from before the `if`).
    fn branch(&mut self, cond: usize, then: &[Stmt], els: Option<&[Stmt]>) {
        let cond = self.value_of_size(1, cond);
        let cond = self.b.channel(cond, 0);
        let header = self.b.cursor.block;
        let mut nif = self.b.push_if(cond);
        self.scopes.push(Vec::new());
        self.run(then);
        let then_value = self.scopes.pop().unwrap().last().copied();
        let then_end = self.b.cursor.block;
        let (else_value, else_end) = match els {
            Some(els) => {
                self.b.push_else(&mut nif);
                self.scopes.push(Vec::new());
                self.run(els);
                let value = self.scopes.pop().unwrap().last().copied();
                (value, self.b.cursor.block)
            }
            None => (self.scopes.last().unwrap().last().copied(), header),
        };
        self.b.pop_if(nif);
        if let (Some(t), Some(e)) = (then_value, else_value)
            && self.shape(t) == self.shape(e)
        {
            let phi = self
                .b
                .phi(self.shape(t), vec![(then_end, t), (else_end, e)]);
            self.define(phi);
        }
    }
}

fn random_shader(stage: Stage, stmts: &[Stmt]) -> Shader {
    let mut shader = Shader::new(stage);
    let b = Builder::new(&mut shader, FuncId(0));
    let mut g = Gen {
        b,
        scopes: vec![Vec::new()],
    };
    g.run(stmts);
    g.b.ret(None);
    shader
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_programs_round_trip(
        stage in prop::sample::select(&Stage::ALL[..]),
        stmts in prop::collection::vec(stmt(), 0..12),
    ) {
        assert_round_trip(&random_shader(stage, &stmts));
    }
}
