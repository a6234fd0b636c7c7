//! Optimization passes, one file each, and the pass manager that runs them by name from a
//! pipeline string ([`manager`]).

pub mod algebraic;
pub mod constant_fold;
pub mod copy_prop;
pub mod copy_prop_vars;
pub mod cse;
pub mod dce;
pub mod dead_cf;
pub mod discard_if;
pub mod eqsat;
pub mod find_array_copies;
pub mod if_convert;
pub mod inline;
pub mod loop_unroll;
pub mod lower_alu_to_scalar;
pub mod lower_idiv;
pub mod lower_indirect_derefs;
pub mod lower_inverse_trig;
pub mod lower_io;
pub mod lower_system_values;
pub mod lower_var_copies;
pub mod machine;
pub mod manager;
pub mod memory_cse;
pub mod move_discards;
pub mod opt_large_constants;
pub mod outputs_to_temporaries;
pub mod phi_simplify;
pub mod split_vars;
pub mod vars;
pub mod vars_to_ssa;

use crate::ir::{Builder, Cursor, FuncId, Inst, InstKind, Shader, Value};
use crate::ops::AluOp;
use crate::rewrite::TargetOptions;
use manager::{Pass, PassContext};

/// The engine's own passes for a target (rule-set passes come with their rule sets).
pub fn standard(opts: &TargetOptions) -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(constant_fold::ConstantFold),
        Box::new(copy_prop::CopyProp),
        Box::new(copy_prop_vars::CopyPropVars),
        Box::new(cse::Cse),
        Box::new(dce::Dce),
        Box::new(dead_cf::DeadCf),
        Box::new(discard_if::DiscardIf),
        Box::new(find_array_copies::FindArrayCopies),
        Box::new(if_convert::IfConvert {
            costs: opts.costs.clone(),
        }),
        Box::new(inline::Inline),
        Box::new(lower_alu_to_scalar::LowerAluToScalar {
            which: opts.scalarize,
        }),
        Box::new(lower_idiv::LowerIdiv {
            enabled: opts.lower_idiv,
        }),
        Box::new(lower_indirect_derefs::LowerIndirectDerefs {
            indirect_uniform_loads: opts.indirect_uniform_loads,
            indexed_temporaries: opts.indexed_temporaries,
        }),
        Box::new(lower_inverse_trig::LowerInverseTrig {
            enabled: opts.lower_inverse_trig,
        }),
        Box::new(loop_unroll::LoopUnroll),
        Box::new(lower_io::LowerIo),
        Box::new(lower_system_values::LowerSystemValues),
        Box::new(lower_var_copies::LowerVarCopies),
        Box::new(memory_cse::MemoryCse),
        Box::new(move_discards::MoveDiscards {
            derivatives_safe_after_discard: opts.derivatives_safe_after_discard,
        }),
        Box::new(opt_large_constants::OptLargeConstants),
        Box::new(outputs_to_temporaries::OutputsToTemporaries),
        Box::new(phi_simplify::PhiSimplify),
        Box::new(split_vars::SplitVars),
        Box::new(vars_to_ssa::VarsToSsa),
    ]
}

/// How many transformations passes may still make: LLVM's opt-bisect-limit. Every rule firing
/// and every pass-level change spends one; once the limit is reached, passes make no more, and
/// the last transformation made is remembered so a bad one can be found by bisection.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    limit: Option<u64>,
    spent: u64,
    last: Option<String>,
}

impl Budget {
    /// A budget of `limit` transformations (`None`: no limit).
    pub fn new(limit: Option<u64>) -> Budget {
        Budget {
            limit,
            ..Budget::default()
        }
    }

    pub fn unlimited() -> Budget {
        Budget::default()
    }

    /// Whether no more transformations may be made.
    pub fn is_spent(&self) -> bool {
        self.limit.is_some_and(|limit| self.spent >= limit)
    }

    /// Records a transformation just made; `what` describes it (called only under a limit).
    pub fn spend(&mut self, what: impl FnOnce() -> String) {
        self.spent += 1;
        if self.limit.is_some() {
            self.last = Some(what());
        }
    }

    pub fn spent(&self) -> u64 {
        self.spent
    }

    /// The last transformation made under a limit.
    pub fn last(&self) -> Option<&str> {
        self.last.as_deref()
    }
}

/// What the lowering passes that replace one instruction by a sequence share: `lower` runs on
/// every instruction of every function that `lowers` accepts, each one transformation of the
/// budget (named after `pass`), until the budget is spent; gives whether any ran.
pub(crate) fn lower_each(
    shader: &mut Shader,
    context: &mut PassContext,
    pass: &str,
    lowers: impl Fn(&Inst) -> bool,
    mut lower: impl FnMut(&mut Shader, FuncId, Value),
) -> bool {
    let mut progress = false;
    for f in 0..shader.functions.len() {
        let func = &shader.functions[f];
        let targets: Vec<Value> = func.all_insts().filter(|&v| lowers(func.inst(v))).collect();
        for v in targets {
            if context.budget.is_spent() {
                return progress;
            }
            lower(shader, FuncId(f as u32), v);
            progress = true;
            let name = &shader.functions[f].name;
            context.budget.spend(|| format!("{pass}: {v} in `{name}`"));
        }
    }
    progress
}

/// Replaces ALU instruction `v` of `func` by what `build` makes of its opcode and its sources
/// (their swizzles applied, so whole vectors of the instruction's width), with a builder placed
/// just before it.
pub(crate) fn replace_alu(
    shader: &mut Shader,
    func: FuncId,
    v: Value,
    build: impl FnOnce(&mut Builder, AluOp, &[Value]) -> Value,
) {
    let function = &shader.functions[func.0 as usize];
    let inst = function.inst(v);
    let (block, comps) = (inst.block, inst.def.expect("an ALU value").comps);
    let InstKind::Alu(alu) = inst.kind.clone() else {
        unreachable!("only ALU instructions are replaced")
    };
    let pos = function.cfg[block].insts.iter().position(|&i| i == v);
    let mut b = Builder::new(shader, func);
    b.cursor = Cursor { block, pos };
    let srcs: Vec<Value> = alu
        .srcs
        .into_iter()
        .map(|s| b.alu_swizzled(AluOp::Mov, vec![s], comps))
        .collect();
    let result = build(&mut b, alu.op, &srcs);
    let function = &mut shader.functions[func.0 as usize];
    function.replace_uses(v, result);
    function.remove_inst(v);
}
