//! `lower-call-params`: the arguments and result of each call left go through temporaries
//! that the caller and the callee share.
//!
//! What: for each function other than the entry that takes parameters or returns a value,
//! and whose every call passes values (no derefs), one `shader_temp` variable per parameter
//! (`<function>_param<i>`) and one for the result (`<function>_result`), each of the value's
//! shape as unsigned integers (a boolean as a 32-bit 0 or 1, as memory holds booleans). Each call stores its arguments to the
//! parameters' variables before it, and the call's instruction becomes a load of the result's
//! variable after a call without arguments or result; in the callee each `load_param` becomes
//! a load of its parameter's variable and each `return %v` a store of `%v` to the result's
//! before a plain `return`. The function then has no parameters and no result.
//!
//! Why: backends compile a call the inliner leaves as a subroutine, which keeps its callers'
//! registers; what caller and callee exchange goes through memory they both reach. The
//! variables are accessed in two functions, so `vars-to-ssa` leaves them to memory (scratch
//! on the targets), like every other temporary a subroutine shares with its callers.
//!
//! Invariants: no recursion (GLSL has none), so a callee's variables hold its own call's
//! arguments until it returns: a call of it can only start after. The values each call passes
//! and receives are unchanged; readers of a call's result read the load, which keeps the
//! call's value id. Functions with a deref argument at some call (a pointer into the caller's
//! variables) are left alone. Each function lowered is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use super::vars::{rewrite_as_alu, unique_name};
use crate::ir::{
    AluSrc, Builder, Cursor, FuncId, InstKind, IntrinsicInst, Mode, Scalar, Shader, Terminator,
    Type, ValType, Value, VarId, Variable,
};
use shrew_ops::{AluOp, BaseType, IndexKind, Intrinsic};

/// The `lower-call-params` pass.
pub struct LowerCallParams;

impl Pass for LowerCallParams {
    fn name(&self) -> &str {
        "lower-call-params"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "passes the arguments and results of calls through temporaries caller and callee share"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let mut transformations = context.budget.whole_shader();
        transformations.each(with_value_parameters(shader), |callee| {
            lower(shader, callee);
            let name = shader.functions[callee.0 as usize].name.clone();
            Some(move || format!("fn {name}"))
        });
        Ok(transformations.made_any())
    }
}

/// The functions but the entry with parameters or a result whose calls all pass values.
fn with_value_parameters(shader: &Shader) -> Vec<FuncId> {
    let mut passes_a_deref = vec![false; shader.functions.len()];
    for func in &shader.functions {
        for v in func.all_insts() {
            if let InstKind::Call { func: callee, args } = &func.inst(v).kind
                && args
                    .iter()
                    .any(|&a| matches!(func.inst(a).kind, InstKind::Deref(_)))
            {
                passes_a_deref[callee.0 as usize] = true;
            }
        }
    }
    (0..shader.functions.len())
        .filter(|&f| {
            let func = &shader.functions[f];
            f != shader.entry.0 as usize
                && (!func.params.is_empty() || func.ret.is_some())
                && !passes_a_deref[f]
        })
        .map(|f| FuncId(f as u32))
        .collect()
}

/// The variable type holding values of shape `ty`: unsigned integers, booleans as 32-bit
/// ones.
fn variable_type(ty: ValType) -> Type {
    let bits = if ty.bits == 1 { 32 } else { ty.bits };
    let scalar = Scalar::new(BaseType::Uint, bits);
    match ty.comps {
        1 => Type::Scalar(scalar),
        comps => Type::Vector(scalar, comps),
    }
}

fn shared_temporary(shader: &mut Shader, name: String, ty: ValType) -> VarId {
    let name = unique_name(shader, name);
    shader.add_variable(Variable::new(name, Mode::ShaderTemp, variable_type(ty)))
}

fn lower(shader: &mut Shader, callee: FuncId) {
    let func = &shader.functions[callee.0 as usize];
    let (name, params, ret) = (func.name.clone(), func.params.clone(), func.ret);
    let params: Vec<VarId> = (params.into_iter().enumerate())
        .map(|(i, ty)| shared_temporary(shader, format!("{name}_param{i}"), ty))
        .collect();
    let result = ret.map(|ty| shared_temporary(shader, format!("{name}_result"), ty));
    for caller in 0..shader.functions.len() {
        let func = &shader.functions[caller];
        let calls: Vec<Value> = func
            .all_insts()
            .filter(
                |&v| matches!(&func.inst(v).kind, InstKind::Call { func, .. } if *func == callee),
            )
            .collect();
        for call in calls {
            pass_through_temporaries(shader, FuncId(caller as u32), call, &params, result);
        }
    }
    let func = &shader.functions[callee.0 as usize];
    let param_loads: Vec<(Value, u32)> = func
        .all_insts()
        .filter_map(|v| match &func.inst(v).kind {
            InstKind::Intrinsic(ii) if ii.op == Intrinsic::LoadParam => {
                Some((v, ii.index(IndexKind::ParamIdx).unwrap_or(0)))
            }
            _ => None,
        })
        .collect();
    for (load, index) in param_loads {
        load_in_place(shader, callee, load, params[index as usize]);
    }
    let func = &shader.functions[callee.0 as usize];
    let returns: Vec<_> = (func.blocks().into_iter())
        .filter_map(|b| match func.cfg[b].terminator {
            Some(Terminator::Return { value: Some(v) }) => Some((b, v)),
            _ => None,
        })
        .collect();
    for (block, value) in returns {
        let result = result.expect("a function returning a value has a result variable");
        let before_return = shader.functions[callee.0 as usize].cfg[block].insts.len();
        let mut b = Builder::new(shader, callee);
        b.cursor = Cursor {
            block,
            pos: Some(before_return),
        };
        store(&mut b, result, value);
        b.function_mut().cfg[block].terminator = Some(Terminator::Return { value: None });
    }
    let func = &mut shader.functions[callee.0 as usize];
    func.params.clear();
    func.ret = None;
}

/// Stores the arguments of `call` (in `caller`) to `params` before it, and makes the call's
/// instruction a load of `result` after a call without arguments or result.
fn pass_through_temporaries(
    shader: &mut Shader,
    caller: FuncId,
    call: Value,
    params: &[VarId],
    result: Option<VarId>,
) {
    let InstKind::Call { func: callee, args } =
        shader.functions[caller.0 as usize].inst(call).kind.clone()
    else {
        unreachable!("a call");
    };
    insert_before(shader, caller, call, |b| {
        for (&arg, &param) in args.iter().zip(params) {
            store(b, param, arg);
        }
        if result.is_some() {
            b.insert(
                InstKind::Call {
                    func: callee,
                    args: Vec::new(),
                },
                None,
            );
        }
    });
    match result {
        Some(result) => load_in_place(shader, caller, call, result),
        None => {
            let func = &mut shader.functions[caller.0 as usize];
            func.inst_mut(call).kind = InstKind::Call {
                func: callee,
                args: Vec::new(),
            };
        }
    }
}

/// Stores `value` to `var` at the builder's cursor (a boolean as a 32-bit 0 or 1).
fn store(b: &mut Builder, var: VarId, value: Value) {
    let value = match b.value_type(value).bits {
        1 => b.alu(AluOp::B2i32, &[value]),
        _ => value,
    };
    let deref = b.deref_var(var);
    b.store_deref_all(deref, value);
}

/// Makes instruction `v` of `func` read `var`, keeping its id and shape: a load of it, or for
/// a boolean a comparison of the loaded integer with zero.
fn load_in_place(shader: &mut Shader, func: FuncId, v: Value, var: VarId) {
    let boolean = (shader.functions[func.0 as usize].value_type(v)).is_some_and(|t| t.bits == 1);
    let (deref, loaded) = insert_before(shader, func, v, |b| {
        let deref = b.deref_var(var);
        let loaded = boolean.then(|| (b.load_deref(deref), b.imm(32, &[0])));
        (deref, loaded)
    });
    let inst = shader.functions[func.0 as usize].inst_mut(v);
    match loaded {
        Some((word, zero)) => {
            rewrite_as_alu(inst, AluOp::Ine, vec![AluSrc::new(word), AluSrc::new(zero)])
        }
        None => {
            inst.kind = InstKind::Intrinsic(IntrinsicInst::new(Intrinsic::LoadDeref, vec![deref]))
        }
    }
}

/// Runs `build` with a builder inserting right before instruction `v` of `func`.
fn insert_before<T>(
    shader: &mut Shader,
    func: FuncId,
    v: Value,
    build: impl FnOnce(&mut Builder) -> T,
) -> T {
    let f = &shader.functions[func.0 as usize];
    let block = f.inst(v).block;
    let pos = f.cfg[block]
        .insts
        .iter()
        .position(|&w| w == v)
        .expect("an instruction is in its block");
    let mut b = Builder::new(shader, func);
    b.cursor = Cursor {
        block,
        pos: Some(pos),
    };
    build(&mut b)
}
