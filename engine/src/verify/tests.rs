//! Tests of the verifier: shaders built with the builder verify clean, and every check has a
//! shader with exactly its defect.

use super::*;
use crate::ir::*;
use crate::rng::Rng;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::EdgeRef;
use shrew_ops::{AluOp, BaseType, IndexKind, Intrinsic};

// ---------------------------------------------------------------------------------------------
// Helpers.

fn lines(errors: &[VerifyError]) -> String {
    errors
        .iter()
        .map(|e| format!("  {:?}: {e}", e.kind))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A shader of `stage` whose main function `f` builds; main returns afterwards if `f` left the
/// current block open.
fn build<T>(stage: Stage, f: impl FnOnce(&mut Builder) -> T) -> (Shader, T) {
    let mut s = Shader::new(stage);
    let mut b = Builder::new(&mut s, FuncId(0));
    let out = f(&mut b);
    if b.function().cfg[b.cursor.block].terminator.is_none() {
        b.ret(None);
    }
    (s, out)
}

fn frag<T>(f: impl FnOnce(&mut Builder) -> T) -> (Shader, T) {
    build(Stage::Fragment, f)
}

fn add_var(b: &mut Builder, name: &str, mode: Mode, ty: Type) -> VarId {
    b.shader.add_variable(Variable::new(name, mode, ty))
}

fn vec_ty(n: u8) -> Type {
    Type::Vector(Scalar::F32, n)
}

fn array_ty(elem: Type, len: u32) -> Type {
    Type::Array {
        elem: Box::new(elem),
        len,
        stride: 0,
    }
}

/// Adds a function with the given signature and returns a builder-ready id.
fn main_fn(s: &mut Shader) -> &mut Function {
    &mut s.functions[0]
}

#[track_caller]
fn assert_clean(shader: &Shader) {
    if let Err(errors) = verify(shader) {
        panic!("expected no errors, got:\n{}", lines(&errors));
    }
}

/// Asserts the shader has errors, all of them of `kind`.
#[track_caller]
fn expect(shader: &Shader, kind: ErrorKind) -> Vec<VerifyError> {
    let errors = verify(shader).err().unwrap_or_default();
    assert!(
        !errors.is_empty(),
        "expected {kind:?}, but the shader verified"
    );
    assert!(
        errors.iter().all(|e| e.kind == kind),
        "expected only {kind:?}, got:\n{}",
        lines(&errors)
    );
    errors
}

/// Asserts the shader has errors, all of `kind`, one of them about instruction `v` and naming
/// it as `%v = opcode`.
#[track_caller]
fn expect_inst(shader: &Shader, kind: ErrorKind, v: Value, opcode: &str) -> VerifyError {
    let errors = expect(shader, kind);
    let named = format!(", {v} = {opcode}: ");
    errors
        .iter()
        .find(|e| e.inst == Some(v) && e.to_string().contains(&named))
        .cloned()
        .unwrap_or_else(|| panic!("no error names {v} = {opcode}:\n{}", lines(&errors)))
}

/// Asserts the shader has errors, all of `kind`, one of them about block `b`.
#[track_caller]
fn expect_block(shader: &Shader, kind: ErrorKind, b: BlockId) {
    let errors = expect(shader, kind);
    let named = format!(", b{}: ", b.index());
    assert!(
        errors
            .iter()
            .any(|e| e.block == Some(b) && e.to_string().contains(&named)),
        "no error names b{}:\n{}",
        b.index(),
        lines(&errors)
    );
}

fn texture_ty(dim: Dim) -> Type {
    Type::Texture {
        dim,
        arrayed: false,
        shadow: false,
        base: BaseType::Float,
    }
}

fn alu(op: AluOp, srcs: &[Value]) -> InstKind {
    InstKind::Alu(Alu {
        op,
        srcs: srcs.iter().map(|&v| AluSrc::new(v)).collect(),
        exact: false,
        fp: FpFlags::default(),
    })
}

// ---------------------------------------------------------------------------------------------
// Shaders that verify.

fn if_else_with_phi() -> Shader {
    let (s, ()) = frag(|b| {
        let out = add_var(b, "out", Mode::ShaderOut, vec_ty(4));
        b.shader.variables[out.0 as usize].location = Some(0);
        let x = b.imm_f32(1.0);
        let y = b.imm_f32(2.0);
        let c = b.alu(AluOp::Flt, &[x, y]);
        let mut nif = b.push_if(c);
        let t = b.alu(AluOp::Fadd, &[x, y]);
        let then_end = b.cursor.block;
        b.push_else(&mut nif);
        let e = b.alu(AluOp::Fmul, &[x, y]);
        let else_end = b.cursor.block;
        b.pop_if(nif);
        let p = b.phi(ValType::scalar(32), vec![(then_end, t), (else_end, e)]);
        let v = b.vec(&[p, p, p, x]);
        let sw = b.alu_swizzled(AluOp::Fmul, vec![AluSrc::swizzled(v, &[3, 2, 1, 0]); 2], 4);
        let d = b.deref_var(out);
        b.store_deref_all(d, sw);
    });
    s
}

fn nested_ifs_and_early_return() -> Shader {
    let (s, ()) = frag(|b| {
        let x = b.imm_f32(1.0);
        let c = b.alu(AluOp::Fge, &[x, x]);
        let outer = b.push_if(c);
        let inner = b.push_if(c);
        b.ret(None);
        b.pop_if(inner);
        let _ = b.alu(AluOp::Fneg, &[x]);
        b.pop_if(outer);
    });
    s
}

fn loop_with_break_continue_and_phi() -> Shader {
    let (s, ()) = build(Stage::Compute, |b| {
        let buf = add_var(b, "buf", Mode::Ssbo, Type::Scalar(Scalar::U32));
        b.shader.variables[buf.0 as usize].binding = Some(0);
        let zero = b.imm_u32(0);
        let pre = b.cursor.block;
        let lp = b.push_loop();
        let (header, cont) = (lp.header, lp.cont);
        let body = b.cursor.block;
        b.cursor = Cursor::at_end(header);
        let i = b.phi(ValType::scalar(32), vec![]);
        b.cursor = Cursor::at_end(body);
        let ten = b.imm_u32(10);
        let done = b.alu(AluOp::Uge, &[i, ten]);
        let nif = b.push_if(done);
        b.break_loop(&lp);
        b.pop_if(nif);
        let one = b.imm_u32(1);
        let odd = b.alu(AluOp::Iand, &[i, one]);
        let is_odd = b.alu(AluOp::I2b1, &[odd]);
        let nif = b.push_if(is_odd);
        b.continue_loop(&lp);
        b.pop_if(nif);
        let d = b.deref_var(buf);
        b.store_deref_all(d, i);
        b.pop_loop(lp);
        let after = b.cursor;
        b.cursor = Cursor {
            block: cont,
            pos: Some(0),
        };
        let step = b.imm_u32(1);
        let next = b.alu(AluOp::Iadd, &[i, step]);
        if let InstKind::Phi(srcs) = &mut b.function_mut().inst_mut(i).kind {
            *srcs = vec![(pre, zero), (cont, next)];
        }
        b.cursor = after;
        let d = b.deref_var(buf);
        b.store_deref_all(d, i);
    });
    s
}

fn derefs_into_structs_arrays_matrices_and_vectors() -> Shader {
    let (s, ()) = frag(|b| {
        let light = b.shader.add_struct(StructType {
            name: "Light".into(),
            members: vec![
                Member::new("pos", vec_ty(4)),
                Member {
                    name: "power".into(),
                    ty: Type::Scalar(Scalar::F32),
                    offset: Some(16),
                },
            ],
        });
        let data = b.shader.add_struct(StructType {
            name: "Data".into(),
            members: vec![
                Member::new("count", Type::Scalar(Scalar::U32)),
                Member::new("values", array_ty(Type::Scalar(Scalar::F32), 0)),
            ],
        });
        let lights = add_var(b, "lights", Mode::Ubo, array_ty(Type::Struct(light), 4));
        b.shader.variables[lights.0 as usize].binding = Some(0);
        let ssbo = add_var(b, "data", Mode::Ssbo, Type::Struct(data));
        let tmp_ty = array_ty(array_ty(Type::Scalar(Scalar::F32), 32), 3);
        let tmp = add_var(b, "tmp", Mode::FunctionTemp, tmp_ty.clone());
        let tmp2 = add_var(b, "tmp2", Mode::FunctionTemp, tmp_ty);
        let mat = Type::Matrix {
            elem: Scalar::F32,
            cols: 4,
            rows: 3,
        };
        let m = add_var(b, "m", Mode::ShaderTemp, mat);

        let two = b.imm_u32(2);
        let l = b.deref_var(lights);
        let l2 = b.deref_array(l, two);
        let pos = b.deref_struct(l2, 0);
        let _ = b.load_deref(pos);
        let power = b.deref_struct(l2, 1);
        let pw = b.load_deref(power);

        let t = b.deref_var(tmp);
        let last = b.imm_u32(31);
        let t2 = b.deref_array(t, two);
        let t3 = b.deref_array(t2, last);
        b.store_deref_all(t3, pw);
        let t_other = b.deref_var(tmp2);
        b.copy_deref(t_other, t);

        let md = b.deref_var(m);
        let col = b.deref_array(md, two);
        let _ = b.load_deref(col);
        let one = b.imm_u32(1);
        let comp = b.deref_array(col, one);
        b.store_deref_all(comp, pw);

        // Runtime-sized arrays take any index.
        let far = b.imm_u32(1000);
        let sd = b.deref_var(ssbo);
        let values = b.deref_struct(sd, 1);
        let elem = b.deref_array(values, far);
        b.store_deref(elem, pw, 1);
    });
    s
}

fn textures() -> Shader {
    let (s, ()) = frag(|b| {
        let t2d = add_var(b, "t2d", Mode::Uniform, texture_ty(Dim::D2));
        let shadow = add_var(
            b,
            "shadow",
            Mode::Uniform,
            Type::Texture {
                dim: Dim::D2,
                arrayed: true,
                shadow: true,
                base: BaseType::Float,
            },
        );
        let smp = add_var(b, "smp", Mode::Uniform, Type::Sampler { shadow: true });
        let cube = add_var(b, "cube", Mode::Uniform, texture_ty(Dim::Cube));
        let ms = add_var(b, "ms", Mode::Uniform, texture_ty(Dim::Ms));
        for (i, v) in [t2d, shadow, smp, cube, ms].into_iter().enumerate() {
            b.shader.variables[v.0 as usize].binding = Some(i as u32);
        }
        let td = b.deref_var(t2d);
        let uv = b.imm_vec_f32(&[0.5, 0.5]);
        let f = b.imm_f32(1.0);
        let i0 = b.imm_u32(0);
        let derefs = [(TexSrc::TextureDeref, td), (TexSrc::SamplerDeref, td)];
        let with = |extra: &[(TexSrc, Value)]| {
            let mut srcs = derefs.to_vec();
            srcs.extend_from_slice(extra);
            srcs
        };
        let v4 = ValType::new(32, 4);
        let v2 = ValType::new(32, 2);
        let coord = (TexSrc::Coord, uv);
        b.tex(Tex::new(TexOp::Tex, Dim::D2, with(&[coord])), v4);
        b.tex(
            Tex::new(TexOp::Txb, Dim::D2, with(&[coord, (TexSrc::Bias, f)])),
            v4,
        );
        b.tex(
            Tex::new(TexOp::Txl, Dim::D2, with(&[coord, (TexSrc::Lod, f)])),
            v4,
        );
        let grads = [coord, (TexSrc::Ddx, uv), (TexSrc::Ddy, uv)];
        b.tex(Tex::new(TexOp::Txd, Dim::D2, with(&grads)), v4);
        let mut gather = Tex::new(TexOp::Tg4, Dim::D2, with(&[coord, (TexSrc::Offset, uv)]));
        gather.component = 1;
        b.tex(gather, v4);
        b.tex(Tex::new(TexOp::Lod, Dim::D2, with(&[coord])), v2);
        b.tex(
            Tex::new(TexOp::Txs, Dim::D2, with(&[(TexSrc::Lod, i0)])),
            v2,
        );
        b.tex(
            Tex::new(TexOp::QueryLevels, Dim::D2, with(&[])),
            ValType::scalar(32),
        );
        let iuv = b.imm(32, &[1, 2]);
        let mut fetch = Tex::new(TexOp::Txf, Dim::D2, with(&[(TexSrc::Coord, iuv)]));
        fetch.dest_type = BaseType::Uint;
        b.tex(fetch, v4);

        let sd = b.deref_var(shadow);
        let sm = b.deref_var(smp);
        let uvw = b.imm_vec_f32(&[0.5, 0.5, 2.0]);
        let mut cmp = Tex::new(
            TexOp::Tex,
            Dim::D2,
            vec![
                (TexSrc::TextureDeref, sd),
                (TexSrc::SamplerDeref, sm),
                (TexSrc::Coord, uvw),
                (TexSrc::Comparator, f),
            ],
        );
        cmp.is_array = true;
        cmp.is_shadow = true;
        b.tex(cmp, ValType::scalar(32));

        let cd = b.deref_var(cube);
        let cube_size = Tex::new(TexOp::Txs, Dim::Cube, vec![(TexSrc::TextureDeref, cd)]);
        b.tex(cube_size, v2);
        let md = b.deref_var(ms);
        let fetch_ms = Tex::new(
            TexOp::TxfMs,
            Dim::Ms,
            vec![
                (TexSrc::TextureDeref, md),
                (TexSrc::Coord, iuv),
                (TexSrc::MsIndex, i0),
            ],
        );
        b.tex(fetch_ms, v4);
    });
    s
}

fn calls_and_parameters() -> Shader {
    let mut s = Shader::new(Stage::Vertex);
    let v4 = ValType::new(32, 4);
    let helper = s.add_function("scale", &[v4, ValType::scalar(32)], Some(v4));
    let mut b = Builder::new(&mut s, helper);
    let p0 = b.intrinsic(Intrinsic::LoadParam, &[], Some(v4), &[]);
    let p1 = b.intrinsic(
        Intrinsic::LoadParam,
        &[],
        Some(ValType::scalar(32)),
        &[(IndexKind::ParamIdx, 1)],
    );
    let r = b.alu(AluOp::Fmul, &[p0, p1]);
    b.ret(Some(r));
    let noop = s.add_function("noop", &[], None);
    Builder::new(&mut s, noop).ret(None);

    let mut b = Builder::new(&mut s, FuncId(0));
    let x = b.imm_vec_f32(&[1.0, 2.0, 3.0, 4.0]);
    let k = b.imm_f32(0.5);
    let y = b.call(helper, &[x, k]).unwrap();
    let _ = b.call(helper, &[y, k]);
    assert_eq!(b.call(noop, &[]), None);
    let _ = b.intrinsic(Intrinsic::LoadVertexId, &[], None, &[]);
    b.ret(None);
    s
}

fn compute_memory_and_barriers() -> Shader {
    let (s, ()) = build(Stage::Compute, |b| {
        b.shader.workgroup_size = [64, 1, 1];
        let shared = add_var(
            b,
            "cache",
            Mode::Shared,
            array_ty(Type::Scalar(Scalar::U32), 64),
        );
        let img = add_var(
            b,
            "img",
            Mode::Uniform,
            Type::Image {
                dim: Dim::D2,
                arrayed: true,
                base: BaseType::Float,
            },
        );
        b.shader.variables[img.0 as usize].binding = Some(0);
        let id = b.intrinsic(Intrinsic::LoadLocalInvocationId, &[], None, &[]);
        let x = b.channel(id, 0);
        let d = b.deref_var(shared);
        let slot = b.deref_array(d, x);
        b.store_deref_all(slot, x);
        let scope = |name| IndexKind::ExecutionScope.parse_value(name).unwrap();
        b.intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[
                (IndexKind::ExecutionScope, scope("workgroup")),
                (IndexKind::MemoryScope, scope("workgroup")),
                (
                    IndexKind::MemorySemantics,
                    IndexKind::MemorySemantics
                        .parse_value("acquire|release")
                        .unwrap(),
                ),
                (
                    IndexKind::MemoryModes,
                    IndexKind::MemoryModes.parse_value("shared").unwrap(),
                ),
            ],
        );
        let one = b.imm_u32(1);
        let iadd = IndexKind::AtomicOp.parse_value("iadd").unwrap();
        b.intrinsic(
            Intrinsic::DerefAtomic,
            &[slot, one],
            Some(ValType::scalar(32)),
            &[(IndexKind::AtomicOp, iadd)],
        );
        let _ = b.intrinsic(
            Intrinsic::SsboAtomicSwap,
            &[one, x, one, one],
            Some(ValType::scalar(32)),
            &[(IndexKind::AtomicOp, 9)],
        );
        let _ = b.intrinsic(Intrinsic::LoadShared, &[x], Some(ValType::new(32, 4)), &[]);

        let id_d = b.deref_var(img);
        let coord = b.imm(32, &[1, 2, 0]);
        let zero = b.imm_u32(0);
        let dims = [
            (IndexKind::ImageDim, Dim::D2.index_value()),
            (IndexKind::ImageArray, 1),
        ];
        let texel = b.intrinsic(
            Intrinsic::ImageDerefLoad,
            &[id_d, coord, zero, zero],
            Some(ValType::new(32, 4)),
            &dims,
        );
        b.intrinsic(
            Intrinsic::ImageDerefStore,
            &[id_d, coord, zero, texel, zero],
            None,
            &dims,
        );
        let addr = b.imm(64, &[0x1000]);
        b.intrinsic(
            Intrinsic::StoreGlobal,
            &[texel, addr],
            None,
            &[(IndexKind::WriteMask, 0b1111)],
        );
    });
    s
}

fn fragment_intrinsics_and_dead_code() -> Shader {
    let (s, ()) = frag(|b| {
        let color = add_var(b, "color", Mode::ShaderIn, vec_ty(4));
        b.shader.variables[color.0 as usize].location = Some(0);
        let fc = b.intrinsic(Intrinsic::LoadFragCoord, &[], None, &[]);
        let x = b.channel(fc, 0);
        let zero = b.imm_f32(0.0);
        let c = b.alu(AluOp::Flt, &[x, zero]);
        b.intrinsic(Intrinsic::DiscardIf, &[c], None, &[]);
        let off = b.imm_u32(0);
        let _ = b.intrinsic(Intrinsic::LoadInput, &[off], Some(ValType::new(32, 4)), &[]);
        let nif = b.push_if(c);
        b.intrinsic(Intrinsic::Demote, &[], None, &[]);
        b.pop_if(nif);
        let d = b.deref_var(color);
        let _ = b.load_deref(d);
        b.ret(None);
        // Code after a return lands in a fresh unreachable block; it may use reachable values.
        let _ = b.alu(AluOp::Fneg, &[x]);
        b.ret(None);
    });
    s
}

#[test]
fn if_else_with_phi_verifies() {
    assert_clean(&if_else_with_phi());
}

#[test]
fn nested_ifs_and_early_return_verify() {
    assert_clean(&nested_ifs_and_early_return());
}

#[test]
fn loop_with_break_continue_and_phi_verifies() {
    assert_clean(&loop_with_break_continue_and_phi());
}

#[test]
fn derefs_into_structs_arrays_matrices_and_vectors_verify() {
    assert_clean(&derefs_into_structs_arrays_matrices_and_vectors());
}

#[test]
fn textures_verify() {
    assert_clean(&textures());
}

#[test]
fn calls_and_parameters_verify() {
    assert_clean(&calls_and_parameters());
}

#[test]
fn compute_memory_and_barriers_verify() {
    assert_clean(&compute_memory_and_barriers());
}

#[test]
fn fragment_intrinsics_and_dead_code_verify() {
    assert_clean(&fragment_intrinsics_and_dead_code());
}

/// Every valid shader above, for the robustness test.
fn valid_shaders() -> Vec<Shader> {
    vec![
        if_else_with_phi(),
        nested_ifs_and_early_return(),
        loop_with_break_continue_and_phi(),
        derefs_into_structs_arrays_matrices_and_vectors(),
        textures(),
        calls_and_parameters(),
        compute_memory_and_barriers(),
        fragment_intrinsics_and_dead_code(),
    ]
}

#[test]
fn display_names_function_block_and_instruction() {
    let (s, v) = frag(|b| {
        let x = b.imm_f32(1.0);
        let h = b.imm_float(1.0, 16);
        b.insert(alu(AluOp::Fadd, &[x, h]), Some(ValType::scalar(32)))
    });
    let errors = verify(&s).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        format!("fn main, b0, {v} = fadd: source 1 has bit size 16, expected 32")
    );
}

// ---------------------------------------------------------------------------------------------
// Declarations.

#[test]
fn unknown_entry_function() {
    let (mut s, ()) = frag(|_| {});
    s.entry = FuncId(3);
    expect(&s, ErrorKind::UnknownFunction);
}

#[test]
fn call_to_missing_function() {
    let (s, v) = frag(|b| {
        b.insert(
            InstKind::Call {
                func: FuncId(7),
                args: vec![],
            },
            None,
        )
    });
    expect_inst(&s, ErrorKind::UnknownFunction, v, "call");
}

#[test]
fn verify_function_reports_an_unknown_function() {
    let (s, ()) = frag(|_| {});
    assert_eq!(verify_function(&s, FuncId(0)), Ok(()));
    let errors = verify_function(&s, FuncId(1)).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ErrorKind::UnknownFunction);
}

#[test]
fn entry_with_parameters() {
    let (mut s, ()) = frag(|_| {});
    main_fn(&mut s).params.push(ValType::scalar(32));
    expect(&s, ErrorKind::EntrySignature);
}

#[test]
fn duplicate_names() {
    let (mut vars, ()) = frag(|b| {
        add_var(b, "x", Mode::FunctionTemp, vec_ty(2));
        add_var(b, "x", Mode::FunctionTemp, vec_ty(3));
    });
    expect(&vars, ErrorKind::DuplicateName);
    vars.variables[1].name = "y".into();
    assert_clean(&vars);

    let (mut structs, ()) = frag(|_| {});
    for _ in 0..2 {
        structs.add_struct(StructType {
            name: "S".into(),
            members: vec![],
        });
    }
    expect(&structs, ErrorKind::DuplicateName);

    let (mut funcs, ()) = frag(|_| {});
    let f = funcs.add_function("main", &[], None);
    Builder::new(&mut funcs, f).ret(None);
    expect(&funcs, ErrorKind::DuplicateName);
}

#[test]
fn duplicate_struct_member() {
    let (mut s, ()) = frag(|_| {});
    let member = Member::new("a", Type::Scalar(Scalar::F32));
    s.add_struct(StructType {
        name: "S".into(),
        members: vec![member.clone(), member],
    });
    expect(&s, ErrorKind::DuplicateMember);
}

#[test]
fn missing_and_self_containing_structs() {
    let (s, ()) = frag(|b| {
        add_var(b, "v", Mode::FunctionTemp, Type::Struct(StructId(2)));
    });
    expect(&s, ErrorKind::InvalidStruct);

    let (mut s, ()) = frag(|_| {});
    s.add_struct(StructType {
        name: "Node".into(),
        members: vec![Member {
            name: "next".into(),
            ty: array_ty(Type::Struct(StructId(0)), 2),
            offset: None,
        }],
    });
    let errors = expect(&s, ErrorKind::InvalidStruct);
    assert!(errors[0].message.contains("contains itself"));
}

#[test]
fn malformed_types() {
    let bad = [
        Type::Vector(Scalar::F32, 7),
        Type::Vector(Scalar::F32, 1),
        Type::Scalar(Scalar::new(BaseType::Float, 8)),
        Type::Matrix {
            elem: Scalar::I32,
            cols: 2,
            rows: 2,
        },
        Type::Matrix {
            elem: Scalar::F32,
            cols: 5,
            rows: 2,
        },
        array_ty(Type::Scalar(Scalar::new(BaseType::Bool, 32)), 4),
        Type::Image {
            dim: Dim::D2,
            arrayed: false,
            base: BaseType::Bool,
        },
    ];
    for ty in bad {
        let (s, ()) = frag(|b| {
            add_var(b, "v", Mode::FunctionTemp, ty.clone());
        });
        expect(&s, ErrorKind::InvalidType);
    }
}

#[test]
fn binding_on_a_function_temp() {
    let (s, ()) = frag(|b| {
        let v = add_var(b, "v", Mode::FunctionTemp, vec_ty(4));
        b.shader.variables[v.0 as usize].binding = Some(3);
    });
    expect(&s, ErrorKind::MisplacedBinding);
}

#[test]
fn location_on_a_ubo() {
    let (s, ()) = frag(|b| {
        let v = add_var(b, "v", Mode::Ubo, vec_ty(4));
        b.shader.variables[v.0 as usize].location = Some(1);
    });
    expect(&s, ErrorKind::MisplacedLocation);
}

#[test]
fn stage_mismatches() {
    let (s, v) = build(Stage::Vertex, |b| {
        b.intrinsic(Intrinsic::Discard, &[], None, &[])
    });
    expect_inst(&s, ErrorKind::StageMismatch, v, "discard");

    let (s, v) = build(Stage::Compute, |b| {
        b.intrinsic(Intrinsic::LoadVertexId, &[], None, &[])
    });
    expect_inst(&s, ErrorKind::StageMismatch, v, "load_vertex_id");

    let (s, v) = frag(|b| {
        let workgroup = IndexKind::ExecutionScope.parse_value("workgroup").unwrap();
        b.intrinsic(
            Intrinsic::Barrier,
            &[],
            None,
            &[(IndexKind::ExecutionScope, workgroup)],
        )
    });
    expect_inst(&s, ErrorKind::StageMismatch, v, "barrier");

    let (s, ()) = frag(|b| {
        add_var(b, "cache", Mode::Shared, Type::Scalar(Scalar::U32));
    });
    expect(&s, ErrorKind::StageMismatch);
}

#[test]
fn recursion_through_the_call_graph() {
    let mut s = Shader::new(Stage::Fragment);
    let a = s.add_function("a", &[], None);
    let c = s.add_function("c", &[], None);
    let mut b = Builder::new(&mut s, FuncId(0));
    let to_a = b.call(a, &[]);
    assert_eq!(to_a, None);
    b.ret(None);
    let mut b = Builder::new(&mut s, a);
    b.call(c, &[]);
    b.ret(None);
    let mut b = Builder::new(&mut s, c);
    b.call(a, &[]);
    b.ret(None);
    let errors = expect(&s, ErrorKind::Recursion);
    let mut funcs: Vec<&str> = errors.iter().map(|e| e.func.as_str()).collect();
    funcs.sort();
    assert_eq!(funcs, ["a", "c"]);
    assert!(errors.iter().all(|e| e.to_string().contains(" = call: ")));

    let mut s = Shader::new(Stage::Fragment);
    let f = s.add_function("f", &[], None);
    Builder::new(&mut s, FuncId(0)).ret(None);
    let mut b = Builder::new(&mut s, f);
    b.call(f, &[]);
    b.ret(None);
    expect(&s, ErrorKind::Recursion);
}

#[test]
fn workgroup_sizes() {
    let mut s = Shader::new(Stage::Compute);
    Builder::new(&mut s, FuncId(0)).ret(None);
    s.workgroup_size = [8, 4, 2];
    assert_clean(&s);
    s.workgroup_size = [8, 0, 1];
    expect(&s, ErrorKind::WorkgroupSize);

    let mut s = Shader::new(Stage::Fragment);
    Builder::new(&mut s, FuncId(0)).ret(None);
    s.workgroup_size = [4, 4, 4];
    expect(&s, ErrorKind::WorkgroupSize);
    s.workgroup_size = [1, 1, 1];
    assert_clean(&s);
}

/// A compute shader declaring structs `S0`, `S1`, ... with members of the given types and
/// variables `v0`, `v1`, ... of the given modes and types.
fn declarations(structs: &[&[Type]], vars: &[(Mode, Type)]) -> Shader {
    let mut s = Shader::new(Stage::Compute);
    Builder::new(&mut s, FuncId(0)).ret(None);
    for (i, members) in structs.iter().enumerate() {
        let members = members
            .iter()
            .enumerate()
            .map(|(j, ty)| Member {
                name: format!("m{j}"),
                ty: ty.clone(),
                offset: None,
            })
            .collect();
        s.add_struct(StructType {
            name: format!("S{i}"),
            members,
        });
    }
    for (i, (mode, ty)) in vars.iter().enumerate() {
        s.add_variable(Variable::new(format!("v{i}"), *mode, ty.clone()));
    }
    s
}

#[test]
fn runtime_sized_arrays_outside_ssbo_blocks() {
    let u32_ty = Type::Scalar(Scalar::U32);
    let runtime = array_ty(u32_ty.clone(), 0);
    // S0 ends in a runtime-sized array.
    let ends_unsized: &[Type] = &[u32_ty.clone(), runtime.clone()];
    let s0 = Type::Struct(StructId(0));
    let s = declarations(
        &[ends_unsized],
        &[
            (Mode::Ssbo, runtime.clone()),
            (Mode::Ssbo, s0.clone()),
            (Mode::Ssbo, array_ty(array_ty(u32_ty.clone(), 4), 0)),
        ],
    );
    assert_clean(&s);

    let bad = [
        declarations(&[], &[(Mode::FunctionTemp, runtime.clone())]),
        declarations(&[], &[(Mode::PushConst, runtime.clone())]),
        declarations(&[ends_unsized], &[(Mode::Ubo, s0.clone())]),
        // Not the last member.
        declarations(&[&[runtime.clone(), u32_ty.clone()]], &[]),
        // An unsized struct inside another struct or an array.
        declarations(&[ends_unsized, std::slice::from_ref(&s0)], &[]),
        declarations(&[ends_unsized], &[(Mode::Ssbo, array_ty(s0.clone(), 2))]),
        // Arrays of runtime-sized arrays.
        declarations(&[], &[(Mode::Ssbo, array_ty(runtime.clone(), 4))]),
        declarations(&[], &[(Mode::Ssbo, array_ty(runtime, 0))]),
    ];
    for s in &bad {
        expect(s, ErrorKind::RuntimeArray);
    }
}

// ---------------------------------------------------------------------------------------------
// Control flow.

#[test]
fn entry_block_with_a_predecessor() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let other = f.add_block();
    f.set_jump(other, entry);
    expect_block(&s, ErrorKind::EntryBlock, entry);
}

#[test]
fn missing_entry_block() {
    let (mut s, ()) = frag(|b| {
        let _ = b.imm_f32(1.0);
    });
    main_fn(&mut s).entry = NodeIndex::new(50);
    expect(&s, ErrorKind::EntryBlock);
}

#[test]
fn block_without_terminator() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    f.cfg[entry].terminator = None;
    expect_block(&s, ErrorKind::MissingTerminator, entry);
}

#[test]
fn return_with_an_out_edge() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let next = f.add_block();
    f.set_exit(next, Terminator::Return { value: None });
    f.cfg.add_edge(entry, next, Edge::Jump);
    expect_block(&s, ErrorKind::TerminatorEdges, entry);
}

#[test]
fn branch_with_two_true_edges() {
    let (mut s, header) = frag(|b| {
        let c = b.imm_bool(true);
        let header = b.cursor.block;
        let nif = b.push_if(c);
        b.pop_if(nif);
        header
    });
    let f = main_fn(&mut s);
    let edges: Vec<_> = f.cfg.edges(header).map(|e| (e.id(), e.target())).collect();
    for (id, _) in &edges {
        f.cfg.remove_edge(*id);
    }
    for (_, target) in edges {
        f.cfg.add_edge(header, target, Edge::True);
    }
    expect_block(&s, ErrorKind::TerminatorEdges, header);
}

#[test]
fn branch_on_a_32_bit_value() {
    let (s, header) = frag(|b| {
        let c = b.imm_u32(1);
        let header = b.cursor.block;
        let nif = b.push_if(c);
        b.pop_if(nif);
        header
    });
    expect_block(&s, ErrorKind::BranchCondition, header);
}

#[test]
fn return_values_against_the_return_type() {
    let (s, ()) = frag(|b| {
        let x = b.imm_f32(1.0);
        b.ret(Some(x));
    });
    expect(&s, ErrorKind::ReturnValue);

    let mut s = Shader::new(Stage::Fragment);
    Builder::new(&mut s, FuncId(0)).ret(None);
    let f = s.add_function("f", &[], Some(ValType::new(32, 2)));
    Builder::new(&mut s, f).ret(None);
    expect(&s, ErrorKind::ReturnValue);

    let mut s = Shader::new(Stage::Fragment);
    Builder::new(&mut s, FuncId(0)).ret(None);
    let f = s.add_function("f", &[], Some(ValType::new(32, 2)));
    let mut b = Builder::new(&mut s, f);
    let x = b.imm_f32(1.0);
    b.ret(Some(x));
    expect(&s, ErrorKind::ReturnValue);
}

/// A shader with an if/else; returns the header, the then side, the else side and the merge.
fn if_else(s: &mut Shader) -> (BlockId, BlockId, BlockId, BlockId) {
    let mut b = Builder::new(s, FuncId(0));
    let c = b.imm_bool(true);
    let header = b.cursor.block;
    let mut nif = b.push_if(c);
    let then_block = b.cursor.block;
    b.push_else(&mut nif);
    let else_block = b.cursor.block;
    b.pop_if(nif);
    let merge = b.cursor.block;
    b.ret(None);
    (header, then_block, else_block, merge)
}

#[test]
fn merge_block_that_does_not_exist() {
    let mut s = Shader::new(Stage::Fragment);
    let (header, ..) = if_else(&mut s);
    assert_clean(&s);
    main_fn(&mut s).cfg[header].structure = Some(Structure::Selection {
        merge: NodeIndex::new(99),
    });
    expect_block(&s, ErrorKind::MissingStructureBlock, header);
}

#[test]
fn continue_block_that_does_not_exist() {
    let mut s = Shader::new(Stage::Fragment);
    let (header, _, _, merge) = simple_loop(&mut s);
    main_fn(&mut s).cfg[header].structure = Some(Structure::Loop {
        merge,
        cont: NodeIndex::new(99),
    });
    expect_block(&s, ErrorKind::MissingStructureBlock, header);
}

#[test]
fn merge_block_is_the_header() {
    let mut s = Shader::new(Stage::Fragment);
    let (header, ..) = if_else(&mut s);
    main_fn(&mut s).cfg[header].structure = Some(Structure::Selection { merge: header });
    expect_block(&s, ErrorKind::MergeIsHeader, header);
}

#[test]
fn selection_header_ending_in_a_jump() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let next = f.add_block();
    f.set_exit(next, Terminator::Return { value: None });
    f.set_jump(entry, next);
    f.cfg[entry].structure = Some(Structure::Selection { merge: next });
    expect_block(&s, ErrorKind::SelectionHeader, entry);
}

/// A loop whose body breaks; returns the header, body, continue and merge blocks.
fn simple_loop(s: &mut Shader) -> (BlockId, BlockId, BlockId, BlockId) {
    let mut b = Builder::new(s, FuncId(0));
    let lp = b.push_loop();
    let (header, cont, merge) = (lp.header, lp.cont, lp.merge);
    let body = b.cursor.block;
    let c = b.imm_bool(true);
    let nif = b.push_if(c);
    b.break_loop(&lp);
    b.pop_if(nif);
    b.pop_loop(lp);
    b.ret(None);
    (header, body, cont, merge)
}

#[test]
fn loop_continue_without_a_back_edge() {
    let mut s = Shader::new(Stage::Fragment);
    let (header, body, _, merge) = simple_loop(&mut s);
    assert_clean(&s);
    main_fn(&mut s).cfg[header].structure = Some(Structure::Loop { merge, cont: body });
    expect_block(&s, ErrorKind::LoopContinue, header);
}

#[test]
fn loop_continue_not_dominated_by_the_header() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let (header, side, merge) = (f.add_block(), f.add_block(), f.add_block());
    let c = f.alloc_inst(Inst {
        kind: InstKind::Const(vec![1]),
        def: Some(ValType::BOOL),
        block: entry,
    });
    f.cfg[entry].insts.push(c);
    f.set_branch(entry, c, header, side);
    f.cfg[entry].structure = Some(Structure::Selection { merge: header });
    f.set_jump(side, header);
    f.set_jump(header, merge);
    f.set_exit(merge, Terminator::Return { value: None });
    f.cfg[header].structure = Some(Structure::Loop { merge, cont: side });
    expect_block(&s, ErrorKind::LoopContinue, header);
}

#[test]
fn back_edge_to_a_block_that_is_not_a_loop_header() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let (a, back, exit) = (f.add_block(), f.add_block(), f.add_block());
    let c = f.alloc_inst(Inst {
        kind: InstKind::Const(vec![1]),
        def: Some(ValType::BOOL),
        block: entry,
    });
    f.cfg[entry].insts.push(c);
    f.set_jump(entry, a);
    f.set_branch(a, c, back, exit);
    f.cfg[a].structure = Some(Structure::Selection { merge: exit });
    f.set_jump(back, a);
    f.set_exit(exit, Terminator::Return { value: None });
    expect_block(&s, ErrorKind::BackEdge, back);
}

#[test]
fn back_edge_from_outside_the_loop() {
    let mut s = Shader::new(Stage::Fragment);
    let (header, _, _, merge) = simple_loop(&mut s);
    let f = main_fn(&mut s);
    f.set_jump(merge, header);
    expect_block(&s, ErrorKind::BackEdge, merge);
}

/// Adds a `true` constant to the end of `block`'s instructions.
fn cond_in(f: &mut Function, block: BlockId) -> Value {
    let c = f.alloc_inst(Inst {
        kind: InstKind::Const(vec![1]),
        def: Some(ValType::BOOL),
        block,
    });
    f.cfg[block].insts.push(c);
    c
}

#[test]
fn irreducible_cycle() {
    // b0 (a selection merging at b3) enters the cycle b1 <-> b2 at both blocks, so neither
    // dominates the other and the cycle is no loop.
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let (b1, b2, b3) = (f.add_block(), f.add_block(), f.add_block());
    let c = cond_in(f, entry);
    f.set_branch(entry, c, b1, b2);
    f.cfg[entry].structure = Some(Structure::Selection { merge: b3 });
    f.set_jump(b1, b2);
    f.set_branch(b2, c, b1, b3);
    f.set_exit(b3, Terminator::Return { value: None });
    expect_block(&s, ErrorKind::Irreducible, b2);
}

#[test]
fn conditional_branches_outside_headers() {
    // Structured: a conditional break or continue from inside a selection in a loop, and a
    // continue block that branches back to the header or out of the loop.
    let (s, ()) = frag(|b| {
        let lp = b.push_loop();
        let (header, cont, merge) = (lp.header, lp.cont, lp.merge);
        let c = b.imm_bool(true);
        let nif = b.push_if(c);
        let then_block = b.cursor.block;
        b.function_mut().set_branch(then_block, c, merge, cont);
        b.pop_if(nif);
        b.pop_loop(lp);
        b.function_mut().set_branch(cont, c, header, merge);
    });
    assert_clean(&s);

    // Structured: a jump to the enclosing selection's merge, else into the selection.
    let mut s = Shader::new(Stage::Fragment);
    let (_, then_block, _, merge) = if_else(&mut s);
    let f = main_fn(&mut s);
    let inner = f.add_block();
    f.set_jump(inner, merge);
    let c = cond_in(f, then_block);
    f.set_branch(then_block, c, merge, inner);
    assert_clean(&s);

    // A branch between two blocks of the selection.
    let f = main_fn(&mut s);
    let inner2 = f.add_block();
    f.set_jump(inner2, merge);
    f.set_branch(then_block, c, inner, inner2);
    expect_block(&s, ErrorKind::UnstructuredBranch, then_block);

    // A branch outside every construct.
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let (a, b) = (f.add_block(), f.add_block());
    let c = cond_in(f, entry);
    f.set_branch(entry, c, a, b);
    f.set_exit(a, Terminator::Return { value: None });
    f.set_exit(b, Terminator::Return { value: None });
    expect_block(&s, ErrorKind::UnstructuredBranch, entry);
}

#[test]
fn merge_blocks_in_the_wrong_place() {
    // A loop whose merge block is its continue block.
    let mut s = Shader::new(Stage::Fragment);
    let (header, _, cont, _) = simple_loop(&mut s);
    main_fn(&mut s).cfg[header].structure = Some(Structure::Loop { merge: cont, cont });
    expect_block(&s, ErrorKind::MergePlacement, header);

    // A selection whose merge block comes before it.
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let (header, a, b) = (f.add_block(), f.add_block(), f.add_block());
    f.set_jump(entry, header);
    let c = cond_in(f, header);
    f.set_branch(header, c, a, b);
    f.cfg[header].structure = Some(Structure::Selection { merge: entry });
    f.set_exit(a, Terminator::Return { value: None });
    f.set_exit(b, Terminator::Return { value: None });
    expect_block(&s, ErrorKind::MergePlacement, header);
}

// ---------------------------------------------------------------------------------------------
// Placement and SSA.

#[test]
fn block_lists_a_missing_instruction() {
    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    f.cfg[entry].insts.push(Value(99));
    expect_block(&s, ErrorKind::UnknownInstInBlock, entry);
}

#[test]
fn instruction_in_the_wrong_block_or_in_none() {
    let mut s = Shader::new(Stage::Fragment);
    let (_, then_block, ..) = if_else(&mut s);
    let c = Value(0);
    main_fn(&mut s).inst_mut(c).block = then_block;
    expect_inst(&s, ErrorKind::InstPlacement, c, "load_const");

    let (mut s, ()) = frag(|_| {});
    let f = main_fn(&mut s);
    let entry = f.entry;
    let orphan = f.alloc_inst(Inst {
        kind: InstKind::Undef,
        def: Some(ValType::scalar(32)),
        block: entry,
    });
    expect_inst(&s, ErrorKind::InstPlacement, orphan, "undef");
}

#[test]
fn instruction_listed_twice() {
    let mut s = Shader::new(Stage::Fragment);
    let (_, then_block, ..) = if_else(&mut s);
    main_fn(&mut s).cfg[then_block].insts.push(Value(0));
    expect_inst(&s, ErrorKind::InstListedTwice, Value(0), "load_const");
}

#[test]
fn sources_that_are_not_values() {
    let (s, v) = frag(|b| b.insert(alu(AluOp::Fneg, &[Value(99)]), Some(ValType::scalar(32))));
    expect_inst(&s, ErrorKind::InvalidSource, v, "fneg");

    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, Type::Scalar(Scalar::F32));
        let d = b.deref_var(var);
        let x = b.imm_f32(1.0);
        let store = b.intrinsic(
            Intrinsic::StoreDeref,
            &[d, x],
            None,
            &[(IndexKind::WriteMask, 1)],
        );
        b.insert(alu(AluOp::Fneg, &[store]), Some(ValType::scalar(32)))
    });
    expect_inst(&s, ErrorKind::InvalidSource, v, "fneg");
}

#[test]
fn uses_not_dominated_by_their_definitions() {
    // Used before its definition in the same block.
    let (mut s, neg) = frag(|b| {
        let x = b.imm_f32(1.0);
        b.alu(AluOp::Fneg, &[x])
    });
    let f = main_fn(&mut s);
    let entry = f.entry;
    f.cfg[entry].insts.swap(0, 1);
    expect_inst(&s, ErrorKind::NotDominated, neg, "fneg");

    // Defined on one side of an if, used after it.
    let (s, neg) = frag(|b| {
        let c = b.imm_bool(true);
        let nif = b.push_if(c);
        let x = b.imm_f32(1.0);
        b.pop_if(nif);
        b.alu(AluOp::Fneg, &[x])
    });
    expect_inst(&s, ErrorKind::NotDominated, neg, "fneg");

    // A phi source from the wrong side.
    let (s, phi) = frag(|b| {
        let c = b.imm_bool(true);
        let mut nif = b.push_if(c);
        let t = b.imm_f32(1.0);
        let then_end = b.cursor.block;
        b.push_else(&mut nif);
        let e = b.imm_f32(2.0);
        let else_end = b.cursor.block;
        b.pop_if(nif);
        b.phi(ValType::scalar(32), vec![(then_end, e), (else_end, t)])
    });
    expect_inst(&s, ErrorKind::NotDominated, phi, "phi");

    // A branch on a value defined in a block that does not dominate it.
    let (mut s, header) = frag(|b| {
        let c = b.imm_bool(true);
        let header = b.cursor.block;
        let nif = b.push_if(c);
        b.pop_if(nif);
        header
    });
    let f = main_fn(&mut s);
    let merge = f.successor(header, Edge::False).unwrap();
    let late = f.alloc_inst(Inst {
        kind: InstKind::Const(vec![0]),
        def: Some(ValType::BOOL),
        block: merge,
    });
    f.cfg[merge].insts.push(late);
    f.cfg[header].terminator = Some(Terminator::Branch { cond: late });
    expect_block(&s, ErrorKind::NotDominated, header);
}

#[test]
fn reachable_use_of_an_unreachable_definition() {
    let (s, neg) = frag(|b| {
        let entry = b.cursor.block;
        b.ret(None);
        let x = b.imm_f32(1.0);
        b.ret(None);
        b.cursor = Cursor {
            block: entry,
            pos: Some(0),
        };
        b.alu(AluOp::Fneg, &[x])
    });
    expect_inst(&s, ErrorKind::DefInUnreachable, neg, "fneg");
}

#[test]
fn phi_source_defined_in_an_unreachable_block() {
    let (mut s, (phi, ..)) = frag(|b| phi_shader(b, 32));
    let f = main_fn(&mut s);
    let dead = f.add_block();
    f.set_exit(dead, Terminator::Unreachable);
    let x = f.alloc_inst(Inst {
        kind: InstKind::Const(vec![0]),
        def: Some(ValType::scalar(32)),
        block: dead,
    });
    f.cfg[dead].insts.push(x);
    phi_srcs(&mut s, phi)[0].1 = x;
    expect_inst(&s, ErrorKind::DefInUnreachable, phi, "phi");
}

// ---------------------------------------------------------------------------------------------
// Result shapes, ALU instructions and constants.

#[test]
fn results_present_or_absent_against_the_operation() {
    let (s, v) = frag(|b| {
        let x = b.imm_f32(1.0);
        b.insert(alu(AluOp::Fneg, &[x]), None)
    });
    expect_inst(&s, ErrorKind::DefPresence, v, "fneg");

    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, Type::Scalar(Scalar::F32));
        let d = b.deref_var(var);
        let x = b.imm_f32(1.0);
        let mut store = IntrinsicInst::new(Intrinsic::StoreDeref, vec![d, x]);
        store.set_index(IndexKind::WriteMask, 1);
        b.insert(InstKind::Intrinsic(store), Some(ValType::scalar(32)))
    });
    expect_inst(&s, ErrorKind::DefPresence, v, "store_deref");
}

#[test]
fn invalid_result_shapes() {
    for shape in [ValType::new(32, 6), ValType::new(7, 1), ValType::new(32, 0)] {
        let (s, v) = frag(|b| b.undef(shape));
        expect_inst(&s, ErrorKind::InvalidShape, v, "undef");
    }
}

#[test]
fn alu_source_count() {
    let (s, v) = frag(|b| {
        let x = b.imm_f32(1.0);
        b.insert(alu(AluOp::Fadd, &[x]), Some(ValType::scalar(32)))
    });
    expect_inst(&s, ErrorKind::AluSourceCount, v, "fadd");
}

#[test]
fn alu_bit_sizes() {
    // Unsized float operands of different sizes.
    let (s, v) = frag(|b| {
        let x = b.imm_f32(1.0);
        let h = b.imm_float(1.0, 16);
        b.insert(alu(AluOp::Fadd, &[x, h]), Some(ValType::scalar(32)))
    });
    let e = expect_inst(&s, ErrorKind::AluBitSize, v, "fadd");
    assert_eq!(e.message, "source 1 has bit size 16, expected 32");

    // A size floats cannot have.
    let (s, v) = frag(|b| {
        let x = b.imm(8, &[1]);
        b.alu(AluOp::Fadd, &[x, x])
    });
    expect_inst(&s, ErrorKind::AluBitSize, v, "fadd");

    // A sized source of the wrong size.
    let (s, v) = frag(|b| {
        let x = b.imm_u32(1);
        let n = b.imm(16, &[1]);
        b.alu(AluOp::Ishl, &[x, n])
    });
    expect_inst(&s, ErrorKind::AluBitSize, v, "ishl");

    // A sized result of the wrong size.
    let (s, v) = frag(|b| {
        let x = b.imm_f32(1.0);
        b.insert(alu(AluOp::Flt, &[x, x]), Some(ValType::scalar(32)))
    });
    expect_inst(&s, ErrorKind::AluBitSize, v, "flt");
}

#[test]
fn alu_result_components() {
    let (s, v) = frag(|b| {
        let x = b.imm_vec_f32(&[1.0, 2.0, 3.0]);
        b.alu_swizzled(AluOp::Fdot3, vec![AluSrc::new(x); 2], 2)
    });
    expect_inst(&s, ErrorKind::AluComponents, v, "fdot3");
}

#[test]
fn swizzle_out_of_range() {
    let (s, v) = frag(|b| {
        let x = b.imm_vec_f32(&[1.0, 2.0]);
        b.alu_swizzled(AluOp::Mov, vec![AluSrc::swizzled(x, &[3])], 1)
    });
    expect_inst(&s, ErrorKind::Swizzle, v, "mov");

    // Vector-reading opcodes read their operand's fixed count, not the result's.
    let (s, v) = frag(|b| {
        let x = b.imm_vec_f32(&[1.0, 2.0]);
        b.alu_swizzled(AluOp::Fdot3, vec![AluSrc::new(x); 2], 1)
    });
    expect_inst(&s, ErrorKind::Swizzle, v, "fdot3");
}

#[test]
fn constant_with_the_wrong_number_of_values() {
    let (s, v) = frag(|b| b.insert(InstKind::Const(vec![1, 2]), Some(ValType::new(32, 3))));
    expect_inst(&s, ErrorKind::ConstComponents, v, "load_const");
}

#[test]
fn constant_value_too_wide() {
    let (s, v) = frag(|b| b.insert(InstKind::Const(vec![1 << 40]), Some(ValType::scalar(32))));
    expect_inst(&s, ErrorKind::ConstRange, v, "load_const");
    let (s, v) = frag(|b| b.insert(InstKind::Const(vec![2]), Some(ValType::BOOL)));
    expect_inst(&s, ErrorKind::ConstRange, v, "load_const");
}

// ---------------------------------------------------------------------------------------------
// Phis.

/// An if/else writing one value on each side and a phi merging them. Returns the phi, the
/// two sides, and a value defined before the if.
fn phi_shader(b: &mut Builder, else_bits: u8) -> (Value, BlockId, BlockId, Value) {
    let before = b.imm_f32(0.5);
    let c = b.imm_bool(true);
    let mut nif = b.push_if(c);
    let t = b.imm_f32(1.0);
    let then_end = b.cursor.block;
    b.push_else(&mut nif);
    let e = b.imm_float(2.0, else_bits);
    let else_end = b.cursor.block;
    b.pop_if(nif);
    let phi = b.phi(ValType::scalar(32), vec![(then_end, t), (else_end, e)]);
    (phi, then_end, else_end, before)
}

fn phi_srcs(s: &mut Shader, phi: Value) -> &mut Vec<(BlockId, Value)> {
    match &mut main_fn(s).inst_mut(phi).kind {
        InstKind::Phi(srcs) => srcs,
        _ => unreachable!(),
    }
}

#[test]
fn phi_after_another_instruction() {
    let (mut s, (phi, ..)) = frag(|b| {
        let r = phi_shader(b, 32);
        let _ = b.alu(AluOp::Fneg, &[r.0]);
        r
    });
    assert_clean(&s);
    let f = main_fn(&mut s);
    let merge = f.inst(phi).block;
    let x = f.alloc_inst(Inst {
        kind: InstKind::Undef,
        def: Some(ValType::scalar(32)),
        block: merge,
    });
    f.cfg[merge].insts.insert(0, x);
    expect_inst(&s, ErrorKind::PhiNotAtTop, phi, "phi");
}

#[test]
fn phi_entries_against_predecessors() {
    // No entry for one predecessor.
    let (mut s, (phi, ..)) = frag(|b| phi_shader(b, 32));
    phi_srcs(&mut s, phi).pop();
    expect_inst(&s, ErrorKind::PhiPredecessors, phi, "phi");

    // Two entries for one edge (and none for the other).
    let (mut s, (phi, ..)) = frag(|b| phi_shader(b, 32));
    let srcs = phi_srcs(&mut s, phi);
    srcs[1] = srcs[0];
    expect_inst(&s, ErrorKind::PhiPredecessors, phi, "phi");

    // An entry for a block that is not a predecessor.
    let (mut s, (phi, _, _, before)) = frag(|b| phi_shader(b, 32));
    let entry = main_fn(&mut s).entry;
    phi_srcs(&mut s, phi).push((entry, before));
    expect_inst(&s, ErrorKind::PhiPredecessors, phi, "phi");
}

#[test]
fn phi_for_a_block_with_two_edges_to_it() {
    // `branch %c, b1, b1` makes b0 one predecessor of b1: its phis have one entry for b0.
    let with_entries = |n: usize| {
        frag(|b| {
            let c = b.imm_bool(true);
            let x = b.imm_u32(1);
            let y = b.imm_u32(2);
            let entry = b.cursor.block;
            let f = b.function_mut();
            let merge = f.add_block();
            f.set_branch(entry, c, merge, merge);
            f.cfg[entry].structure = Some(Structure::Selection { merge });
            b.cursor = Cursor::at_end(merge);
            b.phi(ValType::scalar(32), [(entry, x), (entry, y)][..n].to_vec())
        })
    };
    assert_clean(&with_entries(1).0);
    for n in [0, 2] {
        let (s, phi) = with_entries(n);
        expect_inst(&s, ErrorKind::PhiPredecessors, phi, "phi");
    }
}

#[test]
fn phi_source_of_another_shape() {
    let (s, (phi, ..)) = frag(|b| phi_shader(b, 16));
    expect_inst(&s, ErrorKind::PhiShape, phi, "phi");
}

// ---------------------------------------------------------------------------------------------
// Intrinsics.

#[test]
fn intrinsic_source_count() {
    let (s, v) = frag(|b| b.intrinsic(Intrinsic::LoadDeref, &[], Some(ValType::scalar(32)), &[]));
    expect_inst(&s, ErrorKind::IntrinsicSourceCount, v, "load_deref");
}

#[test]
fn intrinsic_source_shapes() {
    let (s, v) = frag(|b| {
        let off = b.imm(16, &[0]);
        b.intrinsic(Intrinsic::LoadInput, &[off], Some(ValType::new(32, 4)), &[])
    });
    expect_inst(&s, ErrorKind::IntrinsicSourceShape, v, "load_input");

    let (s, v) = frag(|b| {
        let c = b.imm_u32(1);
        b.intrinsic(Intrinsic::DiscardIf, &[c], None, &[])
    });
    expect_inst(&s, ErrorKind::IntrinsicSourceShape, v, "discard_if");

    let (s, v) = frag(|b| {
        let x = b.imm_f32(1.0);
        b.intrinsic(Intrinsic::LoadDeref, &[x], Some(ValType::scalar(32)), &[])
    });
    expect_inst(&s, ErrorKind::IntrinsicSourceShape, v, "load_deref");

    let (s, v) = build(Stage::Compute, |b| {
        let x = b.imm_u32(1);
        let wide = b.imm(64, &[1]);
        b.intrinsic(
            Intrinsic::SsboAtomic,
            &[x, x, wide],
            Some(ValType::scalar(32)),
            &[],
        )
    });
    expect_inst(&s, ErrorKind::IntrinsicSourceShape, v, "ssbo_atomic");

    let (s, v) = build(Stage::Compute, |b| {
        let img = add_var(
            b,
            "img",
            Mode::Uniform,
            Type::Image {
                dim: Dim::D2,
                arrayed: false,
                base: BaseType::Float,
            },
        );
        let d = b.deref_var(img);
        let coord = b.imm(32, &[0, 0, 0, 0, 0]);
        let zero = b.imm_u32(0);
        b.intrinsic(
            Intrinsic::ImageDerefLoad,
            &[d, coord, zero, zero],
            Some(ValType::new(32, 4)),
            &[(IndexKind::ImageDim, Dim::D2.index_value())],
        )
    });
    expect_inst(&s, ErrorKind::IntrinsicSourceShape, v, "image_deref_load");
}

#[test]
fn intrinsic_result_shapes() {
    let (s, v) = frag(|b| {
        b.intrinsic(
            Intrinsic::LoadFragCoord,
            &[],
            Some(ValType::new(32, 2)),
            &[],
        )
    });
    expect_inst(&s, ErrorKind::IntrinsicDefShape, v, "load_frag_coord");

    let (s, v) = build(Stage::Compute, |b| {
        let x = b.imm_u32(1);
        let data = b.imm(32, &[1, 2]);
        b.intrinsic(
            Intrinsic::SsboAtomic,
            &[x, x, data],
            Some(ValType::new(32, 2)),
            &[],
        )
    });
    expect_inst(&s, ErrorKind::IntrinsicDefShape, v, "ssbo_atomic");
}

#[test]
fn intrinsic_index_count() {
    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, Type::Scalar(Scalar::F32));
        let d = b.deref_var(var);
        let x = b.imm_f32(1.0);
        let store = IntrinsicInst {
            op: Intrinsic::StoreDeref,
            srcs: vec![d, x],
            indices: vec![1],
        };
        b.insert(InstKind::Intrinsic(store), None)
    });
    expect_inst(&s, ErrorKind::IndexCount, v, "store_deref");
}

#[test]
fn write_masks() {
    for mask in [0, 0b111] {
        let (s, v) = frag(|b| {
            let var = add_var(b, "t", Mode::FunctionTemp, vec_ty(2));
            let d = b.deref_var(var);
            let x = b.imm_vec_f32(&[1.0, 2.0]);
            b.intrinsic(
                Intrinsic::StoreDeref,
                &[d, x],
                None,
                &[(IndexKind::WriteMask, mask)],
            )
        });
        expect_inst(&s, ErrorKind::WriteMask, v, "store_deref");
    }
}

#[test]
fn index_values_out_of_range() {
    let cases = [
        (IndexKind::MemoryScope, 42),
        (IndexKind::ExecutionScope, 6),
        (IndexKind::MemorySemantics, 1 << 9),
    ];
    for (kind, value) in cases {
        let (s, v) = build(Stage::Compute, |b| {
            b.intrinsic(Intrinsic::Barrier, &[], None, &[(kind, value)])
        });
        expect_inst(&s, ErrorKind::IndexOutOfRange, v, "barrier");
    }

    let (s, v) = build(Stage::Compute, |b| {
        let x = b.imm_u32(1);
        b.intrinsic(
            Intrinsic::SsboAtomic,
            &[x, x, x],
            Some(ValType::scalar(32)),
            &[(IndexKind::AtomicOp, 13)],
        )
    });
    expect_inst(&s, ErrorKind::IndexOutOfRange, v, "ssbo_atomic");
}

#[test]
fn deref_accesses_that_do_not_fit_the_type() {
    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, vec_ty(4));
        let d = b.deref_var(var);
        b.intrinsic(Intrinsic::LoadDeref, &[d], Some(ValType::new(32, 2)), &[])
    });
    expect_inst(&s, ErrorKind::DerefAccess, v, "load_deref");

    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, array_ty(vec_ty(4), 2));
        let d = b.deref_var(var);
        b.intrinsic(Intrinsic::LoadDeref, &[d], Some(ValType::new(32, 4)), &[])
    });
    expect_inst(&s, ErrorKind::DerefAccess, v, "load_deref");

    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, vec_ty(4));
        let d = b.deref_var(var);
        let x = b.imm(16, &[0, 0, 0, 0]);
        b.intrinsic(
            Intrinsic::StoreDeref,
            &[d, x],
            None,
            &[(IndexKind::WriteMask, 0xf)],
        )
    });
    expect_inst(&s, ErrorKind::DerefAccess, v, "store_deref");

    let (s, v) = frag(|b| {
        let a = add_var(b, "a", Mode::FunctionTemp, vec_ty(4));
        let c = add_var(b, "c", Mode::FunctionTemp, vec_ty(2));
        let da = b.deref_var(a);
        let dc = b.deref_var(c);
        b.intrinsic(Intrinsic::CopyDeref, &[da, dc], None, &[])
    });
    expect_inst(&s, ErrorKind::DerefAccess, v, "copy_deref");

    let (s, v) = build(Stage::Compute, |b| {
        let t = add_var(b, "t", Mode::Uniform, texture_ty(Dim::D2));
        let d = b.deref_var(t);
        let coord = b.imm(32, &[0, 0]);
        let zero = b.imm_u32(0);
        b.intrinsic(
            Intrinsic::ImageDerefLoad,
            &[d, coord, zero, zero],
            Some(ValType::new(32, 4)),
            &[(IndexKind::ImageDim, Dim::D2.index_value())],
        )
    });
    expect_inst(&s, ErrorKind::DerefAccess, v, "image_deref_load");

    let (s, v) = build(Stage::Compute, |b| {
        let img = add_var(
            b,
            "img",
            Mode::Uniform,
            Type::Image {
                dim: Dim::D3,
                arrayed: false,
                base: BaseType::Float,
            },
        );
        let d = b.deref_var(img);
        let lod = b.imm_u32(0);
        b.intrinsic(
            Intrinsic::ImageDerefSize,
            &[d, lod],
            Some(ValType::new(32, 3)),
            &[(IndexKind::ImageDim, Dim::D2.index_value())],
        )
    });
    expect_inst(&s, ErrorKind::DerefAccess, v, "image_deref_size");
}

#[test]
fn atomic_operations_against_the_form_and_the_target() {
    let op = |name| IndexKind::AtomicOp.parse_value(name).unwrap();
    // Deref atomics: the form, the scalar they point to, the operation, and whether it fits.
    let cases = [
        (Intrinsic::DerefAtomic, Scalar::U32, "iadd", true),
        (Intrinsic::DerefAtomic, Scalar::I32, "imin", true),
        (Intrinsic::DerefAtomic, Scalar::F32, "fadd", true),
        (Intrinsic::DerefAtomic, Scalar::F32, "xchg", true),
        (Intrinsic::DerefAtomicSwap, Scalar::U32, "cmpxchg", true),
        (Intrinsic::DerefAtomic, Scalar::U32, "cmpxchg", false),
        (Intrinsic::DerefAtomicSwap, Scalar::U32, "iadd", false),
        (Intrinsic::DerefAtomic, Scalar::U32, "fadd", false),
        (Intrinsic::DerefAtomic, Scalar::I32, "fmax", false),
        (Intrinsic::DerefAtomic, Scalar::F32, "iadd", false),
        (Intrinsic::DerefAtomic, Scalar::F32, "umax", false),
    ];
    for (intr, scalar, name, fits) in cases {
        let (s, v) = build(Stage::Compute, |b| {
            let var = add_var(b, "x", Mode::Ssbo, Type::Scalar(scalar));
            let d = b.deref_var(var);
            let data = b.imm_u32(1);
            let mut srcs = vec![d, data];
            if intr == Intrinsic::DerefAtomicSwap {
                srcs.push(data);
            }
            let def = Some(ValType::scalar(32));
            b.intrinsic(intr, &srcs, def, &[(IndexKind::AtomicOp, op(name))])
        });
        if fits {
            assert_clean(&s);
        } else {
            expect_inst(&s, ErrorKind::AtomicOperation, v, intr.name());
        }
    }

    // Image atomics go by the image's base type.
    for (base, fits) in [(BaseType::Uint, true), (BaseType::Float, false)] {
        let (s, v) = build(Stage::Compute, |b| {
            let image = Type::Image {
                dim: Dim::Buf,
                arrayed: false,
                base,
            };
            let img = add_var(b, "img", Mode::Uniform, image);
            let d = b.deref_var(img);
            let x = b.imm_u32(1);
            b.intrinsic(
                Intrinsic::ImageDerefAtomic,
                &[d, x, x, x],
                Some(ValType::scalar(32)),
                &[
                    (IndexKind::ImageDim, Dim::Buf.index_value()),
                    (IndexKind::AtomicOp, op("umax")),
                ],
            )
        });
        if fits {
            assert_clean(&s);
        } else {
            expect_inst(&s, ErrorKind::AtomicOperation, v, "image_deref_atomic");
        }
    }

    // Lowered atomics have no type to go by, but still a form.
    let lowered = [
        (Intrinsic::SsboAtomic, 3, "fadd", true),
        (Intrinsic::SsboAtomic, 3, "cmpxchg", false),
        (Intrinsic::SharedAtomicSwap, 3, "iadd", false),
    ];
    for (intr, srcs, name, fits) in lowered {
        let (s, v) = build(Stage::Compute, |b| {
            let x = b.imm_u32(1);
            let def = Some(ValType::scalar(32));
            b.intrinsic(
                intr,
                &vec![x; srcs],
                def,
                &[(IndexKind::AtomicOp, op(name))],
            )
        });
        if fits {
            assert_clean(&s);
        } else {
            expect_inst(&s, ErrorKind::AtomicOperation, v, intr.name());
        }
    }
}

#[test]
fn writes_into_read_only_variables() {
    let (s, v) = frag(|b| {
        let var = add_var(b, "u", Mode::Ubo, vec_ty(4));
        let d = b.deref_var(var);
        let x = b.imm_vec_f32(&[1.0; 4]);
        b.intrinsic(
            Intrinsic::StoreDeref,
            &[d, x],
            None,
            &[(IndexKind::WriteMask, 0xf)],
        )
    });
    expect_inst(&s, ErrorKind::ReadOnlyStore, v, "store_deref");

    let (s, v) = frag(|b| {
        let input = add_var(b, "i", Mode::ShaderIn, vec_ty(4));
        let tmp = add_var(b, "t", Mode::FunctionTemp, vec_ty(4));
        let di = b.deref_var(input);
        let dt = b.deref_var(tmp);
        b.intrinsic(Intrinsic::CopyDeref, &[di, dt], None, &[])
    });
    expect_inst(&s, ErrorKind::ReadOnlyStore, v, "copy_deref");

    let (s, v) = frag(|b| {
        let var = add_var(b, "p", Mode::PushConst, Type::Scalar(Scalar::U32));
        let d = b.deref_var(var);
        let x = b.imm_u32(1);
        b.intrinsic(
            Intrinsic::DerefAtomic,
            &[d, x],
            Some(ValType::scalar(32)),
            &[],
        )
    });
    expect_inst(&s, ErrorKind::ReadOnlyStore, v, "deref_atomic");
}

#[test]
fn load_param_against_the_parameters() {
    for (params, def) in [
        (vec![], ValType::scalar(32)),
        (vec![ValType::new(32, 2)], ValType::scalar(32)),
    ] {
        let mut s = Shader::new(Stage::Fragment);
        Builder::new(&mut s, FuncId(0)).ret(None);
        let f = s.add_function("f", &params, None);
        let mut b = Builder::new(&mut s, f);
        let v = b.intrinsic(Intrinsic::LoadParam, &[], Some(def), &[]);
        b.ret(None);
        expect_inst(&s, ErrorKind::LoadParam, v, "load_param");
    }
}

// ---------------------------------------------------------------------------------------------
// Derefs.

#[test]
fn deref_of_a_missing_variable() {
    let (s, v) = frag(|b| b.deref_var(VarId(5)));
    expect_inst(&s, ErrorKind::DerefVar, v, "deref_var");
}

#[test]
fn deref_parents() {
    let (s, v) = frag(|b| {
        let x = b.imm_u32(0);
        b.deref_array(x, x)
    });
    expect_inst(&s, ErrorKind::DerefParent, v, "deref_array");

    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, vec_ty(4));
        let d = b.deref_var(var);
        b.deref_struct(d, 0)
    });
    expect_inst(&s, ErrorKind::DerefParent, v, "deref_struct");

    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, Type::Scalar(Scalar::F32));
        let d = b.deref_var(var);
        let i = b.imm_u32(0);
        b.deref_array(d, i)
    });
    expect_inst(&s, ErrorKind::DerefParent, v, "deref_array");
}

#[test]
fn atomic_counters_are_ssbos() {
    let counters = |mode: Mode| {
        let (mut s, _) = frag(|_| ());
        let mut var = Variable::new("c", mode, array_ty(Type::Scalar(Scalar::U32), 2));
        var.atomic_counters = true;
        s.add_variable(var);
        s
    };
    assert_clean(&counters(Mode::Ssbo));
    expect(&counters(Mode::Ubo), ErrorKind::AtomicCounters);
}

#[test]
fn arrays_of_blocks_are_sized_buffer_arrays() {
    let blocks = |mode: Mode, ty: Type| {
        let (mut s, _) = frag(|_| ());
        let mut var = Variable::new("b", mode, ty);
        var.array_of_blocks = true;
        s.add_variable(var);
        s
    };
    assert_clean(&blocks(Mode::Ubo, array_ty(vec_ty(4), 2)));
    let runtime_blocks = array_ty(array_ty(Type::Scalar(Scalar::U32), 0), 3);
    assert_clean(&blocks(Mode::Ssbo, runtime_blocks));
    for (mode, ty) in [
        (Mode::Ubo, vec_ty(4)),
        (Mode::Ssbo, array_ty(vec_ty(4), 0)),
        (Mode::ShaderTemp, array_ty(vec_ty(4), 2)),
    ] {
        expect(&blocks(mode, ty), ErrorKind::ArrayOfBlocks);
    }
}

#[test]
fn constant_variables_and_only_they_have_fitting_initializers() {
    let with = |mode: Mode, init: Option<Vec<u64>>| {
        let (mut s, _) = frag(|_| ());
        let mut var = Variable::new("c", mode, array_ty(Type::Scalar(Scalar::U32), 2));
        var.init = init;
        s.add_variable(var);
        s
    };
    assert_clean(&with(Mode::Constant, Some(vec![1, 2])));
    expect(&with(Mode::Constant, None), ErrorKind::Initializer);
    expect(&with(Mode::Constant, Some(vec![1])), ErrorKind::Initializer);
    expect(
        &with(Mode::Constant, Some(vec![1, 1 << 32])),
        ErrorKind::Initializer,
    );
    expect(
        &with(Mode::FunctionTemp, Some(vec![1, 2])),
        ErrorKind::Initializer,
    );
}

#[test]
fn deref_index_must_be_32_bit() {
    let (s, v) = frag(|b| {
        let var = add_var(
            b,
            "t",
            Mode::FunctionTemp,
            array_ty(Type::Scalar(Scalar::F32), 4),
        );
        let d = b.deref_var(var);
        let i = b.imm(16, &[0]);
        b.deref_array(d, i)
    });
    expect_inst(&s, ErrorKind::DerefIndex, v, "deref_array");
}

#[test]
fn constant_indices_past_the_end_verify() {
    // Dead code after constant folding can index past the end; only executing it is wrong (the
    // interpreter's out-of-bounds fault).
    let matrix = Type::Matrix {
        elem: Scalar::F32,
        cols: 2,
        rows: 4,
    };
    for (ty, index) in [
        (array_ty(Type::Scalar(Scalar::F32), 4), 4),
        (vec_ty(4), 4),
        (matrix, 2),
    ] {
        let (s, _) = frag(|b| {
            let var = add_var(b, "t", Mode::FunctionTemp, ty.clone());
            let d = b.deref_var(var);
            let i = b.imm_u32(index);
            b.deref_array(d, i)
        });
        assert_clean(&s);
    }
}

#[test]
fn deref_of_a_missing_member() {
    let (s, v) = frag(|b| {
        let st = b.shader.add_struct(StructType {
            name: "S".into(),
            members: vec![Member::new("a", Type::Scalar(Scalar::F32))],
        });
        let var = add_var(b, "t", Mode::FunctionTemp, Type::Struct(st));
        let d = b.deref_var(var);
        b.deref_struct(d, 1)
    });
    expect_inst(&s, ErrorKind::DerefMember, v, "deref_struct");
}

#[test]
fn deref_with_a_non_deref_shape() {
    let (s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, vec_ty(4));
        b.insert(InstKind::Deref(Deref::Var(var)), Some(ValType::scalar(64)))
    });
    expect_inst(&s, ErrorKind::DerefShape, v, "deref_var");
}

#[test]
fn cyclic_deref_chain_does_not_hang() {
    let (mut s, v) = frag(|b| {
        let var = add_var(b, "t", Mode::FunctionTemp, array_ty(vec_ty(4), 2));
        let d = b.deref_var(var);
        let i = b.imm_u32(0);
        let a = b.deref_array(d, i);
        let _ = b.load_deref(a);
        a
    });
    let InstKind::Deref(Deref::Array { parent, .. }) = &mut main_fn(&mut s).inst_mut(v).kind else {
        unreachable!()
    };
    *parent = v;
    expect_inst(&s, ErrorKind::NotDominated, v, "deref_array");
}

#[test]
fn deref_values_used_as_ordinary_values() {
    /// Declares a `u32` variable and derefs it.
    fn counter(b: &mut Builder, name: &str) -> Value {
        let var = add_var(b, name, Mode::FunctionTemp, Type::Scalar(Scalar::U32));
        b.deref_var(var)
    }

    let (s, v) = frag(|b| {
        let d = counter(b, "c");
        let one = b.imm_u32(1);
        b.alu(AluOp::Iadd, &[d, one])
    });
    expect_inst(&s, ErrorKind::DerefUse, v, "iadd");

    // Stored data.
    let (s, v) = frag(|b| {
        let d = counter(b, "c");
        b.intrinsic(
            Intrinsic::StoreDeref,
            &[d, d],
            None,
            &[(IndexKind::WriteMask, 1)],
        )
    });
    expect_inst(&s, ErrorKind::DerefUse, v, "store_deref");

    // An array index.
    let (s, v) = frag(|b| {
        let d = counter(b, "c");
        let arr = add_var(b, "a", Mode::FunctionTemp, array_ty(vec_ty(4), 4));
        let a = b.deref_var(arr);
        b.deref_array(a, d)
    });
    expect_inst(&s, ErrorKind::DerefUse, v, "deref_array");

    // A phi source.
    let (s, v) = frag(|b| {
        let d = counter(b, "c");
        let c = b.imm_bool(true);
        let mut nif = b.push_if(c);
        let then_end = b.cursor.block;
        b.push_else(&mut nif);
        let else_end = b.cursor.block;
        b.pop_if(nif);
        b.phi(ValType::DEREF, vec![(then_end, d), (else_end, d)])
    });
    expect_inst(&s, ErrorKind::DerefUse, v, "phi");

    // A texture source that is not a deref source.
    let (s, v) = sample(TexOp::Txl, V4, |b| {
        let uv = b.imm_vec_f32(&[0.0; 2]);
        let d = counter(b, "c");
        (vec![(TexSrc::Coord, uv), (TexSrc::Lod, d)], false)
    });
    expect_inst(&s, ErrorKind::DerefUse, v, "txl");

    // A call argument and a return value.
    let mut s = Shader::new(Stage::Fragment);
    let f = s.add_function("f", &[ValType::DEREF], None);
    Builder::new(&mut s, f).ret(None);
    let mut b = Builder::new(&mut s, FuncId(0));
    let d = counter(&mut b, "c");
    b.call(f, &[d]);
    b.ret(None);
    let g = s.add_function("g", &[], Some(ValType::DEREF));
    let mut b = Builder::new(&mut s, g);
    let d = counter(&mut b, "r");
    b.ret(Some(d));
    let errors = expect(&s, ErrorKind::DerefUse);
    let found: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 2, "{found:?}");
    assert!(found[0].starts_with("fn main, b0, %1 = call: source 0 %0 is a deref"));
    assert!(found[1].starts_with("fn g, b0: return value %0 is a deref"));
}

// ---------------------------------------------------------------------------------------------
// Textures.

/// A fragment shader sampling a 2D texture with `srcs` (after the deref sources); returns the
/// texture instruction.
fn sample(
    op: TexOp,
    def: ValType,
    f: impl FnOnce(&mut Builder) -> (Vec<(TexSrc, Value)>, bool),
) -> (Shader, Value) {
    frag(|b| {
        let t = add_var(b, "t", Mode::Uniform, texture_ty(Dim::D2));
        let d = b.deref_var(t);
        let (extra, shadow) = f(b);
        let mut srcs = vec![(TexSrc::TextureDeref, d), (TexSrc::SamplerDeref, d)];
        srcs.extend(extra);
        let mut inst = Tex::new(op, Dim::D2, srcs);
        inst.is_shadow = shadow;
        b.tex(inst, def)
    })
}

const V4: ValType = ValType::new(32, 4);

#[test]
fn texture_sources_missing() {
    let (s, v) = sample(TexOp::Txl, V4, |b| {
        (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 2]))], false)
    });
    expect_inst(&s, ErrorKind::TexMissingSource, v, "txl");

    let (s, v) = sample(TexOp::Txb, V4, |b| {
        (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 2]))], false)
    });
    expect_inst(&s, ErrorKind::TexMissingSource, v, "txb");

    let (s, v) = sample(TexOp::Tex, ValType::scalar(32), |b| {
        (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 2]))], true)
    });
    expect_inst(&s, ErrorKind::TexMissingSource, v, "tex");

    let (s, v) = sample(TexOp::Tex, V4, |_| (vec![], false));
    expect_inst(&s, ErrorKind::TexMissingSource, v, "tex");
}

#[test]
fn texture_sources_the_operation_does_not_take() {
    let (s, v) = sample(TexOp::Tex, V4, |b| {
        let uv = b.imm_vec_f32(&[0.0; 2]);
        let lod = b.imm_f32(0.0);
        (vec![(TexSrc::Coord, uv), (TexSrc::Lod, lod)], false)
    });
    expect_inst(&s, ErrorKind::TexUnexpectedSource, v, "tex");

    let (s, v) = sample(TexOp::Txf, V4, |b| {
        let uv = b.imm(32, &[0, 0]);
        let r = b.imm_f32(0.0);
        (vec![(TexSrc::Coord, uv), (TexSrc::Comparator, r)], false)
    });
    expect_inst(&s, ErrorKind::TexUnexpectedSource, v, "txf");
}

#[test]
fn texture_source_given_twice() {
    let (s, v) = sample(TexOp::Tex, V4, |b| {
        let uv = b.imm_vec_f32(&[0.0; 2]);
        (vec![(TexSrc::Coord, uv), (TexSrc::Coord, uv)], false)
    });
    expect_inst(&s, ErrorKind::TexDuplicateSource, v, "tex");
}

#[test]
fn texture_source_shapes() {
    let (s, v) = sample(TexOp::Tex, V4, |b| {
        (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 3]))], false)
    });
    expect_inst(&s, ErrorKind::TexSourceShape, v, "tex");

    let (s, v) = sample(TexOp::Txl, V4, |b| {
        let uv = b.imm_vec_f32(&[0.0; 2]);
        let lod = b.imm_float(0.0, 16);
        (vec![(TexSrc::Coord, uv), (TexSrc::Lod, lod)], false)
    });
    expect_inst(&s, ErrorKind::TexSourceShape, v, "txl");

    let (s, v) = frag(|b| {
        let uv = b.imm_vec_f32(&[0.0; 2]);
        let not_deref = b.imm_u32(0);
        let srcs = vec![(TexSrc::TextureDeref, not_deref), (TexSrc::Coord, uv)];
        b.tex(Tex::new(TexOp::Tex, Dim::D2, srcs), V4)
    });
    expect_inst(&s, ErrorKind::TexSourceShape, v, "tex");
}

#[test]
fn texture_derefs_of_the_wrong_type() {
    let wrong = [
        (TexSrc::TextureDeref, Type::Scalar(Scalar::F32)),
        (TexSrc::TextureDeref, texture_ty(Dim::D3)),
        (TexSrc::TextureDeref, Type::Sampler { shadow: false }),
        (TexSrc::SamplerDeref, vec_ty(4)),
    ];
    for (role, ty) in wrong {
        let (s, v) = frag(|b| {
            let t = add_var(b, "t", Mode::Uniform, texture_ty(Dim::D2));
            let w = add_var(b, "w", Mode::Uniform, ty.clone());
            let (dt, dw) = (b.deref_var(t), b.deref_var(w));
            let uv = b.imm_vec_f32(&[0.0; 2]);
            let mut srcs = vec![(TexSrc::Coord, uv), (role, dw)];
            srcs.push(match role {
                TexSrc::TextureDeref => (TexSrc::SamplerDeref, dt),
                _ => (TexSrc::TextureDeref, dt),
            });
            b.tex(Tex::new(TexOp::Tex, Dim::D2, srcs), V4)
        });
        expect_inst(&s, ErrorKind::TexDerefType, v, "tex");
    }
}

#[test]
fn texture_result_shapes() {
    let (s, v) = sample(TexOp::Tex, ValType::new(32, 3), |b| {
        (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 2]))], false)
    });
    expect_inst(&s, ErrorKind::TexDefShape, v, "tex");

    let (s, v) = sample(TexOp::Txs, ValType::new(32, 3), |_| (vec![], false));
    expect_inst(&s, ErrorKind::TexDefShape, v, "txs");

    let (s, v) = sample(TexOp::Tex, ValType::new(16, 4), |b| {
        (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 2]))], false)
    });
    expect_inst(&s, ErrorKind::TexDefShape, v, "tex");
}

#[test]
fn gathered_component_out_of_range() {
    for (component, fits) in [(3, true), (4, false)] {
        let (mut s, v) = sample(TexOp::Tg4, V4, |b| {
            (vec![(TexSrc::Coord, b.imm_vec_f32(&[0.0; 2]))], false)
        });
        let InstKind::Tex(tex) = &mut main_fn(&mut s).inst_mut(v).kind else {
            unreachable!()
        };
        tex.component = component;
        if fits {
            assert_clean(&s);
        } else {
            expect_inst(&s, ErrorKind::TexComponent, v, "tg4");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Calls.

#[test]
fn call_arguments() {
    for args in [1, 2] {
        let mut s = Shader::new(Stage::Fragment);
        let f = s.add_function("f", &[ValType::new(32, 2)], None);
        Builder::new(&mut s, f).ret(None);
        let mut b = Builder::new(&mut s, FuncId(0));
        let x = b.imm_f32(1.0);
        let v = b.insert(
            InstKind::Call {
                func: f,
                args: vec![x; args],
            },
            None,
        );
        b.ret(None);
        expect_inst(&s, ErrorKind::CallArguments, v, "call");
    }
}

#[test]
fn call_result_shape() {
    let mut s = Shader::new(Stage::Fragment);
    let f = s.add_function("f", &[], Some(ValType::new(32, 4)));
    let mut b = Builder::new(&mut s, f);
    let x = b.imm_vec_f32(&[0.0; 4]);
    b.ret(Some(x));
    let mut b = Builder::new(&mut s, FuncId(0));
    let v = b.insert(
        InstKind::Call {
            func: f,
            args: vec![],
        },
        Some(ValType::scalar(32)),
    );
    b.ret(None);
    expect_inst(&s, ErrorKind::CallResult, v, "call");
}

// ---------------------------------------------------------------------------------------------
// Robustness: the verifier reports, never panics, whatever the IR holds.

/// Breaks one random thing in the shader: ids out of range, cycles, wrong shapes, missing
/// blocks or instructions.
fn mutate(s: &mut Shader, rng: &mut Rng) {
    let nf = s.functions.len();
    let nv = s.variables.len();
    let ns = s.structs.len();
    let fi = rng.below(nf);
    let f = &mut s.functions[fi];
    let ni = f.insts.len();
    let blocks = f.blocks();
    if blocks.is_empty() {
        return;
    }
    let any_value = |rng: &mut Rng| Value(rng.below(ni + 3) as u32);
    let any_block = |rng: &mut Rng| NodeIndex::new(rng.below(blocks.len() + 3));
    let any_shape = |rng: &mut Rng| {
        ValType::new(
            rng.pick(&[0, 1, 7, 8, 16, 32, 64, 200]),
            rng.pick(&[0, 1, 2, 3, 4, 6, 16, 17, 255]),
        )
    };
    let live: Vec<usize> = (0..ni).filter(|&i| f.insts[i].is_some()).collect();
    let target = (!live.is_empty()).then(|| live[rng.below(live.len())]);
    match rng.below(16) {
        0 => {
            if let Some(i) = target {
                let v = any_value(rng);
                let inst = f.insts[i].as_mut().unwrap();
                match &mut inst.kind {
                    InstKind::Alu(a) if !a.srcs.is_empty() => {
                        let k = rng.below(a.srcs.len());
                        a.srcs[k].value = v;
                    }
                    InstKind::Phi(srcs) if !srcs.is_empty() => {
                        let k = rng.below(srcs.len());
                        srcs[k].1 = v;
                    }
                    InstKind::Intrinsic(intr) if !intr.srcs.is_empty() => {
                        let k = rng.below(intr.srcs.len());
                        intr.srcs[k] = v;
                    }
                    InstKind::Tex(t) if !t.srcs.is_empty() => {
                        let k = rng.below(t.srcs.len());
                        t.srcs[k].1 = v;
                    }
                    InstKind::Deref(Deref::Array { parent, index }) => {
                        *if rng.below(2) == 0 { parent } else { index } = v;
                    }
                    InstKind::Deref(Deref::Struct { parent, .. }) => *parent = v,
                    InstKind::Call { args, .. } => args.push(v),
                    _ => inst.kind = InstKind::Phi(vec![(NodeIndex::new(0), v)]),
                }
            }
        }
        1 => {
            if let Some(i) = target {
                let shape = any_shape(rng);
                let inst = f.insts[i].as_mut().unwrap();
                inst.def = if rng.below(4) == 0 { None } else { Some(shape) };
            }
        }
        2 => {
            if let Some(i) = target {
                match &mut f.insts[i].as_mut().unwrap().kind {
                    InstKind::Alu(a) if !a.srcs.is_empty() => {
                        let k = rng.below(a.srcs.len());
                        let c = rng.below(16);
                        a.srcs[k].swizzle[c] = rng.below(256) as u8;
                    }
                    InstKind::Intrinsic(intr) => match rng.below(4) {
                        0 => {
                            intr.indices.pop();
                        }
                        1 => intr.srcs.pop().map_or((), drop),
                        2 if !intr.indices.is_empty() => {
                            let k = rng.below(intr.indices.len());
                            intr.indices[k] = rng.next_u64() as u32;
                        }
                        _ => intr.indices.push(7),
                    },
                    InstKind::Const(values) => values.push(rng.next_u64()),
                    InstKind::Tex(t) => {
                        t.dim = rng.pick(&Dim::ALL);
                        t.is_array ^= rng.below(2) == 0;
                        t.is_shadow ^= rng.below(2) == 0;
                        let role = rng.pick(&TexSrc::ALL);
                        let v = any_value(rng);
                        t.srcs.push((role, v));
                    }
                    InstKind::Deref(d) => {
                        *d = match rng.below(3) {
                            0 => Deref::Var(VarId(rng.below(nv + 2) as u32)),
                            1 => Deref::Struct {
                                parent: Value(i as u32),
                                member: rng.below(4) as u32,
                            },
                            _ => Deref::Struct {
                                parent: any_value(rng),
                                member: rng.next_u64() as u32,
                            },
                        }
                    }
                    InstKind::Call { func, .. } => *func = FuncId(rng.below(nf + 2) as u32),
                    _ => {}
                }
            }
        }
        3 => {
            if let Some(i) = target
                && let InstKind::Phi(srcs) = &mut f.insts[i].as_mut().unwrap().kind
            {
                let b = any_block(rng);
                match srcs.first_mut() {
                    Some(src) => src.0 = b,
                    None => srcs.push((b, Value(0))),
                }
            }
        }
        4 => {
            let b = rng.pick(&blocks);
            let (x, y) = (any_block(rng), any_block(rng));
            f.cfg[b].structure = Some(if rng.below(2) == 0 {
                Structure::Selection { merge: x }
            } else {
                Structure::Loop { merge: x, cont: y }
            });
        }
        5 => {
            let b = rng.pick(&blocks);
            f.cfg.remove_node(b);
        }
        6 => {
            if let Some(i) = target {
                f.insts[i] = None;
            }
        }
        7 => f.entry = any_block(rng),
        8 => s.entry = FuncId(rng.below(nf + 2) as u32),
        9 => {
            let b = rng.pick(&blocks);
            let v = any_value(rng);
            f.cfg[b].terminator = Some(match rng.below(4) {
                0 => Terminator::Branch { cond: v },
                1 => Terminator::Return { value: Some(v) },
                2 => Terminator::Jump,
                _ => Terminator::Unreachable,
            });
        }
        10 => {
            let (a, b) = (rng.pick(&blocks), rng.pick(&blocks));
            let kind = rng.pick(&[Edge::Jump, Edge::True, Edge::False]);
            f.cfg.add_edge(a, b, kind);
        }
        11 => {
            let b = rng.pick(&blocks);
            let v = any_value(rng);
            let insts = &mut f.cfg[b].insts;
            let at = rng.below(insts.len() + 1);
            insts.insert(at, v);
        }
        12 => {
            if nv > 0 {
                let v = rng.below(nv);
                s.variables[v].ty = match rng.below(3) {
                    0 => Type::Struct(StructId(rng.below(ns + 2) as u32)),
                    1 => array_ty(Type::Struct(StructId(rng.below(ns + 1) as u32)), 3),
                    _ => Type::Vector(Scalar::F32, rng.below(20) as u8),
                };
            }
        }
        13 => {
            if ns > 0 {
                let st = rng.below(ns);
                let target = StructId(rng.below(ns + 1) as u32);
                s.structs[st]
                    .members
                    .push(Member::new("m", array_ty(Type::Struct(target), 2)));
            }
        }
        14 => {
            let callee = FuncId(rng.below(nf) as u32);
            let b = rng.pick(&blocks);
            let v = f.alloc_inst(Inst {
                kind: InstKind::Call {
                    func: callee,
                    args: vec![],
                },
                def: None,
                block: b,
            });
            f.cfg[b].insts.push(v);
        }
        _ => {
            let f = &mut s.functions[fi];
            f.params.push(any_shape(rng));
            f.ret = Some(any_shape(rng));
        }
    }
}

#[test]
fn broken_ir_is_reported_without_panicking() {
    let shaders = valid_shaders();
    let mut rng = Rng::new(0x5eed_1234_abcd_ef01);
    for round in 0..3000 {
        let mut s = shaders[round % shaders.len()].clone();
        let mutations = 1 + rng.below(4);
        for _ in 0..mutations {
            mutate(&mut s, &mut rng);
        }
        let result = std::panic::catch_unwind(|| {
            let whole = verify(&s);
            for f in 0..s.functions.len() + 1 {
                let _ = verify_function(&s, FuncId(f as u32));
            }
            whole
        });
        match result {
            Ok(Ok(())) | Ok(Err(_)) => {}
            Err(_) => panic!("the verifier panicked in round {round}: {s:#?}"),
        }
    }
}
