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
pub mod flatten_deep_cf;
pub mod if_convert;
pub mod inline;
pub mod loop_unroll;
pub mod lower_alu_to_scalar;
pub mod lower_block_indices;
pub mod lower_call_params;
pub mod lower_doubles;
pub mod lower_idiv;
pub mod lower_indirect_derefs;
pub mod lower_int64;
pub mod lower_inverse_trig;
pub mod lower_io;
pub mod lower_system_values;
pub mod lower_texture_indices;
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

use crate::ir::{Builder, Cursor, FuncId, Function, Inst, InstKind, Shader, Value};
use crate::ops::{AluOp, BaseType};
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
        Box::new(flatten_deep_cf::FlattenDeepCf {
            budget: opts.cf_nesting,
        }),
        Box::new(if_convert::IfConvert {
            costs: opts.costs.clone(),
        }),
        Box::new(inline::Inline {
            max_function_size: opts.inline_budget.unwrap_or(inline::MAX_FUNCTION_SIZE),
        }),
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
        Box::new(lower_doubles::LowerDoubles {
            ops: opts.lower_doubles.clone(),
        }),
        Box::new(lower_int64::LowerInt64 {
            ops: opts.lower_int64.clone(),
        }),
        Box::new(lower_inverse_trig::LowerInverseTrig {
            enabled: opts.lower_inverse_trig,
        }),
        Box::new(lower_texture_indices::LowerTextureIndices {
            enabled: opts.lower_texture_indices,
        }),
        Box::new(loop_unroll::LoopUnroll),
        Box::new(lower_block_indices::LowerBlockIndices),
        Box::new(lower_call_params::LowerCallParams),
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
/// the last transformation made is remembered so a bad one can be found by bisection. Passes
/// make their transformations through [`Transformations`], per function
/// ([`Budget::each_function`]) or on the whole shader.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    limit: Option<u64>,
    spent: u64,
    last: Option<String>,
    /// The pass making the transformations, whose name starts their descriptions.
    pass: Option<String>,
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

    /// Names the pass whose transformations follow: their descriptions start with its name.
    pub fn start_pass(&mut self, name: &str) {
        if self.limit.is_some() {
            self.pass = Some(name.to_string());
        }
    }

    /// Records a transformation just made; `what` describes it (called only under a limit),
    /// after the name of the pass that made it.
    pub fn spend(&mut self, what: impl FnOnce() -> String) {
        self.spent += 1;
        if self.limit.is_some() {
            self.last = Some(match &self.pass {
                Some(pass) => format!("{pass}: {}", what()),
                None => what(),
            });
        }
    }

    pub fn spent(&self) -> u64 {
        self.spent
    }

    /// The last transformation made under a limit.
    pub fn last(&self) -> Option<&str> {
        self.last.as_deref()
    }

    /// Runs `work` on each function of the shader (by index) while the budget lasts, with the
    /// transformations it makes there, described as made in that function; gives whether any
    /// was made.
    pub fn each_function(
        &mut self,
        shader: &mut Shader,
        mut work: impl FnMut(&mut Shader, usize, &mut Transformations),
    ) -> bool {
        let mut made = false;
        for f in 0..shader.functions.len() {
            if self.is_spent() {
                break;
            }
            let mut transformations = self.in_function(&shader.functions[f].name);
            work(shader, f, &mut transformations);
            made |= transformations.made;
        }
        made
    }

    /// The transformations a pass makes in the function called `name`, for passes that visit
    /// the functions in an order of their own.
    pub fn in_function(&mut self, name: &str) -> Transformations<'_> {
        Transformations {
            budget: self,
            place: format!(" in `{name}`"),
            made: false,
        }
    }

    /// The transformations a pass makes on the shader as a whole, not within one function.
    pub fn whole_shader(&mut self) -> Transformations<'_> {
        Transformations {
            budget: self,
            place: String::new(),
            made: false,
        }
    }
}

/// The transformations a pass makes in one place (a function, or the whole shader), each step
/// tried only while the budget lasts. A step says what it changed, if anything: that is one
/// transformation of the budget, described as what the step says followed by the place.
pub struct Transformations<'b> {
    budget: &'b mut Budget,
    /// Where the steps are made: `` in `main` `` for a function, empty for the whole shader.
    place: String,
    made: bool,
}

impl Transformations<'_> {
    /// Runs `step` unless the budget is spent; gives whether it ran. `step` gives the
    /// description of the change it made, or `None` if it made none.
    pub fn attempt<D: FnOnce() -> String>(&mut self, step: impl FnOnce() -> Option<D>) -> bool {
        if self.budget.is_spent() {
            return false;
        }
        if let Some(what) = step() {
            self.made = true;
            let place = &self.place;
            self.budget.spend(|| format!("{}{place}", what()));
        }
        true
    }

    /// Spends one transformation, described by `what`, if the budget has one left; whether it
    /// had. For steps decided before they are made (the caller then makes it).
    pub fn take(&mut self, what: impl FnOnce() -> String) -> bool {
        self.attempt(|| Some(what))
    }

    /// Runs `step` on each item in turn while the budget lasts.
    pub fn each<T, D: FnOnce() -> String>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut step: impl FnMut(T) -> Option<D>,
    ) {
        for item in items {
            if !self.attempt(|| step(item)) {
                return;
            }
        }
    }

    /// Runs `step` again and again until it changes nothing or the budget is spent.
    pub fn to_fixpoint<D: FnOnce() -> String>(&mut self, mut step: impl FnMut() -> Option<D>) {
        let mut changed = true;
        while changed
            && self.attempt(|| {
                let made = step();
                changed = made.is_some();
                made
            })
        {}
    }

    /// Whether no more steps may run.
    pub fn is_spent(&self) -> bool {
        self.budget.is_spent()
    }

    /// Whether any step made a change.
    pub fn made_any(&self) -> bool {
        self.made
    }
}

/// What the lowering passes that replace one instruction by a sequence share: `lower` runs on
/// every instruction of every function that `lowers` accepts, each one transformation of the
/// budget, until the budget is spent; gives whether any ran.
pub(crate) fn lower_each(
    shader: &mut Shader,
    context: &mut PassContext,
    lowers: impl Fn(&Function, &Inst) -> bool,
    mut lower: impl FnMut(&mut Shader, FuncId, Value),
) -> bool {
    context
        .budget
        .each_function(shader, |shader, f, transformations| {
            let func = &shader.functions[f];
            let targets: Vec<Value> = func
                .all_insts()
                .filter(|&v| lowers(func, func.inst(v)))
                .collect();
            transformations.each(targets, |v| {
                lower(shader, FuncId(f as u32), v);
                Some(move || v.to_string())
            });
        })
}

/// The instructions of `func`, block by block in reverse post-order, so that every instruction
/// but a phi comes after the definitions of its sources.
pub(crate) fn insts_in_reverse_post_order(func: &Function) -> Vec<Value> {
    crate::cfg::reverse_post_order(func)
        .into_iter()
        .flat_map(|b| func.cfg[b].insts.iter().copied())
        .collect()
}

/// Whether `inst` is an ALU instruction with a 64-bit operand (a source or its result) of one
/// of the base types `bases`: what the 64-bit lowerings look for.
pub(crate) fn has_64_bit_operand(func: &Function, inst: &Inst, bases: &[BaseType]) -> bool {
    let InstKind::Alu(alu) = &inst.kind else {
        return false;
    };
    let info = alu.op.info();
    let wide = |base: BaseType, bits: Option<u8>| bases.contains(&base) && bits == Some(64);
    wide(info.dst.base, inst.def.map(|d| d.bits))
        || (alu.srcs.iter().zip(info.srcs))
            .any(|(s, operand)| wide(operand.base, func.value_type(s.value).map(|t| t.bits)))
}

/// The low and high 32-bit halves of 64-bit `x`.
pub(crate) fn halves(b: &mut Builder, x: Value) -> (Value, Value) {
    let pair = b.alu(AluOp::Unpack64_2x32, &[x]);
    (b.channel(pair, 0), b.channel(pair, 1))
}

/// The 64-bit value of halves `lo`, `hi`.
pub(crate) fn join(b: &mut Builder, lo: Value, hi: Value) -> Value {
    let pair = b.vec(&[lo, hi]);
    b.alu(AluOp::Pack64_2x32, &[pair])
}

/// `build` applied to each component of `srcs` (vectors of one width) on its own, the results
/// gathered into a vector: for lowerings written on scalars.
pub(crate) fn per_component(
    b: &mut Builder,
    srcs: &[Value],
    build: impl Fn(&mut Builder, &[Value]) -> Value,
) -> Value {
    let comps = srcs
        .iter()
        .map(|&s| b.value_type(s).comps)
        .max()
        .unwrap_or(1);
    if comps == 1 {
        return build(b, srcs);
    }
    let results: Vec<Value> = (0..comps)
        .map(|c| {
            let scalars: Vec<Value> = srcs.iter().map(|&s| b.channel(s, c)).collect();
            build(b, &scalars)
        })
        .collect();
    b.vec(&results)
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
    let first_new = function.next_value();
    let mut b = Builder::new(shader, func);
    b.cursor = Cursor { block, pos };
    let srcs: Vec<Value> = alu
        .srcs
        .into_iter()
        .map(|s| b.alu_swizzled(AluOp::Mov, vec![s], comps))
        .collect();
    let result = build(&mut b, alu.op, &srcs);
    shader.functions[func.0 as usize].replace_inst(v, result, first_new);
}
