//! `inline`: replaces calls by the bodies of the functions they call, within a size budget.
//!
//! What: the entry function's calls are taken top down: each is replaced by a copy of the
//! callee as written, whose own calls are then taken in turn. A callee called from one place
//! only is always inlined (its original then goes, so the shader does not grow); a copy of a
//! callee called from several places is made while the entry function, grown by it, stays
//! within [`MAX_FUNCTION_SIZE`] instructions and the callee is within
//! [`MAX_SHARED_CALLEE_SIZE`]. (Inlining callees first would
//! copy each callee with its own callees already inside: quadratic on a chain of calls; top
//! down, the work is linear in what the entry function becomes.) The call's block is split at
//! the call; the callee's blocks are copied in between, its `load_param`s read the call's
//! arguments, and its returns jump to the rest of the block, where the call's instruction
//! becomes a move of the returned value, or a phi of them when there are several (so its
//! readers need no rewriting). A callee that returns from inside a selection is wrapped in a
//! loop that runs once, so that its returns are structured breaks. Functions no call reaches
//! from the entry any more are deleted.
//!
//! Why: every other pass works within one function, and backends need no call convention when
//! none is left; after inlining, a callee's parameters and locals are the caller's temporaries,
//! which `vars-to-ssa` promotes. The budget keeps exponential call trees (piglit's
//! inline-explosion tests call one function 2^64 times) from exhausting memory: the remaining
//! calls stay calls.
//!
//! A callee that returns from inside a loop first has those returns lowered, as Mesa's
//! `nir_lower_returns`: the return sets a `returned` temporary (and stores its value in
//! another) and breaks out of the loop, whose merge block then tests `returned` and returns,
//! until no return is left inside a loop.
//!
//! Invariants: the CFG stays structured. Not inlined: calls in a loop's continue block (the
//! back edge would leave a block that is not the continue block), and callees whose returns
//! stay inside a loop (a loop whose merge block heads another loop has no place for the test).
//! Each inlined call is one transformation.
//!
//! Options: [`Inline::max_function_size`] (the target's `inline_budget`, else
//! [`MAX_FUNCTION_SIZE`]), [`MAX_SHARED_CALLEE_SIZE`].

use super::manager::{Pass, PassContext};
use super::vars::unique_name;
use crate::cfg::{DomTree, innermost_constructs};
use crate::ir::{
    Alu, AluSrc, BlockId, Builder, Cursor, Edge, FpFlags, FuncId, Function, Inst, InstKind, Mode,
    Scalar, Shader, Structure, Terminator, Type, Value, Variable,
};
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::{AluOp, BaseType, IndexKind, Intrinsic};

/// The most instructions a caller may grow to by inlining copies of shared callees.
pub const MAX_FUNCTION_SIZE: usize = 20_000;

/// The most instructions of a callee copied into each of several call sites (a callee called
/// once is inlined whatever its size, and its original then goes).
pub const MAX_SHARED_CALLEE_SIZE: usize = 2_000;

/// The `inline` pass.
pub struct Inline {
    /// The most instructions the entry function may grow to with copies of shared callees
    /// (the target's `inline_budget`, else [`MAX_FUNCTION_SIZE`]).
    pub max_function_size: usize,
}

impl Pass for Inline {
    fn name(&self) -> &str {
        "inline"
    }

    fn description(&self) -> &str {
        "inlines calls top down; copies of shared callees within a size budget"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let mut call_counts = vec![0usize; shader.functions.len()];
        for func in &shader.functions {
            for call in call_sites(func) {
                if let InstKind::Call { func: callee, .. } = func.inst(call).kind {
                    call_counts[callee.0 as usize] += 1;
                }
            }
        }
        // Top down from the entry: each call takes a copy of its callee as written, whose own
        // calls are then taken in turn. Inlining callees first instead would copy each callee
        // with its callees already inside it: quadratic on a chain of calls.
        let f = shader.entry.0 as usize;
        let mut caller_size = size(&shader.functions[f]);
        // Inlining splits blocks: later sites of the same block move to the split-off part,
        // so sites are taken last first (a stack).
        let mut sites = call_sites(&shader.functions[f]);
        let mut continues: FxHashSet<BlockId> = shader.functions[f]
            .cfg
            .node_weights()
            .filter_map(|b| match b.structure {
                Some(Structure::Loop { cont, .. }) => Some(cont),
                _ => None,
            })
            .collect();
        let mut returns_of: FxHashMap<usize, Returns> = FxHashMap::default();
        let mut transformations = context.budget.in_function(&shader.functions[f].name);
        while let Some(call) = sites.pop() {
            let made = transformations.attempt(|| {
                let InstKind::Call { func: callee, .. } = shader.functions[f].inst(call).kind
                else {
                    return None;
                };
                let callee = callee.0 as usize;
                let mut returns = *returns_of
                    .entry(callee)
                    .or_insert_with(|| how_it_returns(&shader.functions[callee]));
                if returns == Returns::InsideLoop && lower_returns_in_loops(shader, callee) {
                    returns = how_it_returns(&shader.functions[callee]);
                    returns_of.insert(callee, returns);
                }
                let callee_size = size(&shader.functions[callee]);
                let shared = call_counts[callee] > 1;
                let block = shader.functions[f].inst(call).block;
                // A callee called once goes once inlined: the shader does not grow, so only
                // copies of shared callees count against the budgets.
                let too_big = caller_size + callee_size > self.max_function_size
                    || callee_size > MAX_SHARED_CALLEE_SIZE;
                if (shared && too_big)
                    || returns == Returns::InsideLoop
                    || continues.contains(&block)
                {
                    return None;
                }
                let body = shader.functions[callee].clone();
                let inlined = inline_call(&mut shader.functions[f], call, &body, returns);
                caller_size = (caller_size + callee_size).saturating_sub(1);
                // The copy's calls count; once the last call of the callee is gone, its own
                // calls no longer do.
                call_counts[callee] -= 1;
                for &site in &inlined.calls {
                    if let InstKind::Call { func: inner, .. } = shader.functions[f].inst(site).kind
                    {
                        call_counts[inner.0 as usize] += 1;
                        if call_counts[callee] == 0 {
                            call_counts[inner.0 as usize] -= 1;
                        }
                    }
                }
                sites.extend(inlined.calls);
                continues.extend(inlined.continues);
                let callee = body.name;
                Some(move || format!("a call of `{callee}`"))
            });
            if !made {
                break;
            }
        }
        let progress = transformations.made_any();
        if progress {
            delete_uncalled(shader);
        }
        Ok(progress)
    }
}

/// Live instructions of a function.
fn size(func: &Function) -> usize {
    func.cfg.node_weights().map(|b| b.insts.len()).sum()
}

/// The calls of a function in block and instruction order.
fn call_sites(func: &Function) -> Vec<Value> {
    func.all_insts()
        .filter(|&v| matches!(func.inst(v).kind, InstKind::Call { .. }))
        .collect()
}

/// Where a function returns from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Returns {
    /// Outside every construct.
    AtTopLevel,
    /// From inside selections only.
    InsideSelection,
    /// From inside a loop.
    InsideLoop,
}

fn how_it_returns(func: &Function) -> Returns {
    let dom = DomTree::new(func);
    let innermost = innermost_constructs(func, &dom);
    let mut returns = Returns::AtTopLevel;
    for b in func.blocks() {
        if !matches!(func.cfg[b].terminator, Some(Terminator::Return { .. })) {
            continue;
        }
        let mut constructs = std::iter::successors(innermost.get(&b).copied().flatten(), |h| {
            innermost.get(h).copied().flatten()
        });
        if constructs.any(|h| matches!(func.cfg[h].structure, Some(Structure::Loop { .. }))) {
            return Returns::InsideLoop;
        }
        if innermost.get(&b).copied().flatten().is_some() {
            returns = Returns::InsideSelection;
        }
    }
    returns
}

/// Lowers the returns from inside loops of function `f` (see the module's header); gives
/// whether none is left. Each round moves one return out of its innermost loop, keeping the
/// function valid, so stopping early (at a loop whose merge block heads a loop) is safe.
fn lower_returns_in_loops(shader: &mut Shader, f: usize) -> bool {
    let mut returned = None;
    let mut value_slot = None;
    loop {
        let func = &shader.functions[f];
        let dom = DomTree::new(func);
        let innermost = innermost_constructs(func, &dom);
        let inner_loop = |b: BlockId| {
            std::iter::successors(innermost.get(&b).copied().flatten(), |h| {
                innermost.get(h).copied().flatten()
            })
            .find_map(|h| match func.cfg[h].structure {
                Some(Structure::Loop { merge, .. }) => Some(merge),
                _ => None,
            })
        };
        let Some((ret, merge)) = func.blocks().into_iter().find_map(|b| {
            let returns = matches!(func.cfg[b].terminator, Some(Terminator::Return { .. }));
            returns.then(|| inner_loop(b)).flatten().map(|m| (b, m))
        }) else {
            return true;
        };
        if matches!(func.cfg[merge].structure, Some(Structure::Loop { .. })) {
            return false;
        }
        let Some(Terminator::Return { value }) = func.cfg[ret].terminator.clone() else {
            unreachable!("found as a return")
        };
        let returned = *returned.get_or_insert_with(|| {
            let name = unique_name(shader, format!("{}_returned", shader.functions[f].name));
            let var = shader.add_variable(Variable::new(
                name,
                Mode::FunctionTemp,
                Type::Scalar(Scalar::BOOL),
            ));
            let mut b = Builder::new(shader, FuncId(f as u32));
            b.cursor = Cursor {
                block: b.function().entry,
                pos: Some(0),
            };
            let (flag, no) = (b.deref_var(var), b.imm_bool(false));
            b.store_deref_all(flag, no);
            var
        });
        let value_slot = value.map(|_| {
            *value_slot.get_or_insert_with(|| {
                let ty = shader.functions[f].ret.expect("a value is returned");
                let scalar = match ty.bits {
                    1 => Scalar::BOOL,
                    bits => Scalar::new(BaseType::Uint, bits),
                };
                let ty = match ty.comps {
                    1 => Type::Scalar(scalar),
                    n => Type::Vector(scalar, n),
                };
                let name = unique_name(shader, format!("{}_result", shader.functions[f].name));
                shader.add_variable(Variable::new(name, Mode::FunctionTemp, ty))
            })
        });

        // The return sets the flag, keeps its value and breaks.
        let end = shader.functions[f].cfg[ret].insts.len();
        let mut b = Builder::new(shader, FuncId(f as u32));
        b.cursor = Cursor {
            block: ret,
            pos: Some(end),
        };
        let (flag, yes) = (b.deref_var(returned), b.imm_bool(true));
        b.store_deref_all(flag, yes);
        if let (Some(slot), Some(value)) = (value_slot, value) {
            let slot = b.deref_var(slot);
            b.store_deref_all(slot, value);
        }
        // The merge's phis take undefined values from the new edge: the path returns.
        let phis: Vec<Value> = b.function().cfg[merge]
            .insts
            .iter()
            .copied()
            .filter(|&v| matches!(b.function().inst(v).kind, InstKind::Phi(_)))
            .collect();
        for phi in phis {
            let ty = b.value_type(phi);
            let undef = b.undef(ty);
            if let InstKind::Phi(srcs) = &mut b.function_mut().inst_mut(phi).kind {
                srcs.push((ret, undef));
            }
        }
        let func = &mut shader.functions[f];
        func.set_jump(ret, merge);

        // The merge tests the flag first: `if (returned) return;`, the rest after it.
        let first = func.cfg[merge]
            .insts
            .iter()
            .position(|&v| !matches!(func.inst(v).kind, InstKind::Phi(_)))
            .unwrap_or(func.cfg[merge].insts.len());
        let rest = func.split_at(merge, first);
        let exit = func.add_block();
        let phis_end = func.cfg[merge].insts.len();
        let mut b = Builder::new(shader, FuncId(f as u32));
        b.cursor = Cursor {
            block: merge,
            pos: Some(phis_end),
        };
        let flag = b.deref_var(returned);
        let flag = b.load_deref(flag);
        b.cursor = Cursor::at_end(exit);
        let result = value_slot.map(|slot| {
            let slot = b.deref_var(slot);
            b.load_deref(slot)
        });
        let func = b.function_mut();
        func.set_exit(exit, Terminator::Return { value: result });
        func.set_branch(merge, flag, exit, rest);
        func.cfg[merge].structure = Some(Structure::Selection { merge: rest });
    }
}

/// Replaces `call` in `caller` by a copy of `callee`.
fn inline_call(caller: &mut Function, call: Value, callee: &Function, how: Returns) -> Inlined {
    let block = caller.inst(call).block;
    let InstKind::Call { args, .. } = caller.inst(call).kind.clone() else {
        unreachable!("inline_call on a call");
    };
    let rest = split_after(caller, block, call);

    // Blocks first, so branches and phis can name them; then values, so sources can.
    let blocks: FxHashMap<BlockId, BlockId> = callee
        .blocks()
        .into_iter()
        .map(|b| (b, caller.add_block()))
        .collect();
    let mut values: FxHashMap<Value, Value> = FxHashMap::default();
    let mut calls = Vec::new();
    for b in callee.blocks() {
        for &v in &callee.cfg[b].insts {
            let inst = callee.inst(v);
            if let InstKind::Intrinsic(i) = &inst.kind
                && i.op == Intrinsic::LoadParam
                && let Some(&arg) = i
                    .index(IndexKind::ParamIdx)
                    .and_then(|p| args.get(p as usize))
            {
                values.insert(v, arg);
                continue;
            }
            let copy = caller.alloc_inst(Inst {
                block: blocks[&b],
                ..inst.clone()
            });
            if matches!(inst.kind, InstKind::Call { .. }) {
                calls.push(copy);
            }
            values.insert(v, copy);
            caller.cfg[blocks[&b]].insts.push(copy);
        }
    }
    let remap = |v: &mut Value| {
        if let Some(&new) = values.get(v) {
            *v = new;
        }
    };
    let mut returns: Vec<(BlockId, Option<Value>)> = Vec::new();
    for b in callee.blocks() {
        let copy = blocks[&b];
        for i in 0..caller.cfg[copy].insts.len() {
            let v = caller.cfg[copy].insts[i];
            let kind = &mut caller.inst_mut(v).kind;
            kind.for_each_src_mut(remap);
            if let InstKind::Phi(srcs) = kind {
                for (pred, _) in srcs {
                    *pred = blocks[pred];
                }
            }
        }
        caller.cfg[copy].structure = callee.cfg[b]
            .structure
            .map(|s| s.map_blocks(|b| blocks[&b]));
        match callee.cfg[b].terminator.clone() {
            Some(Terminator::Return { mut value }) => {
                if let Some(v) = value.as_mut() {
                    remap(v);
                }
                returns.push((copy, value));
                caller.set_jump(copy, rest);
            }
            Some(Terminator::Branch { mut cond }) => {
                remap(&mut cond);
                let target = |kind| blocks[&callee.successor(b, kind).expect("branch edge")];
                caller.set_branch(copy, cond, target(Edge::True), target(Edge::False));
            }
            Some(Terminator::Jump) => {
                let target = blocks[&callee.successor(b, Edge::Jump).expect("jump edge")];
                caller.set_jump(copy, target);
            }
            Some(term) => caller.set_exit(copy, term),
            None => {}
        }
    }

    // Enter the copy, through a loop that runs once when returns need to break out.
    let entry = blocks[&callee.entry];
    let mut continue_of_wrapper = None;
    if how == Returns::InsideSelection {
        let header = caller.add_block();
        let cont = caller.add_block();
        caller.cfg[header].structure = Some(Structure::Loop { merge: rest, cont });
        caller.set_jump(header, entry);
        caller.set_jump(cont, header);
        caller.set_jump(block, header);
        continue_of_wrapper = Some(cont);
    } else {
        caller.set_jump(block, entry);
    }

    // The call's value: the one returned (a move of it), or a phi of them. The call's own
    // instruction becomes it, at the top of the rest of the block, so that its readers need
    // no rewriting (a search of the whole caller per call, quadratic on chains of calls).
    let kind = match (&returns[..], caller.inst(call).def) {
        (_, None) => None,
        ([(_, value)], _) => value.map(|v| {
            InstKind::Alu(Alu {
                op: AluOp::Mov,
                srcs: vec![AluSrc::new(v)],
                exact: false,
                fp: FpFlags::default(),
            })
        }),
        (_, Some(_)) => Some(InstKind::Phi(
            returns
                .iter()
                .filter_map(|&(b, value)| Some((b, value?)))
                .collect(),
        )),
    };
    match kind {
        Some(kind) => {
            caller.cfg[block].insts.pop();
            let inst = caller.inst_mut(call);
            inst.kind = kind;
            inst.block = rest;
            caller.cfg[rest].insts.insert(0, call);
        }
        None => caller.remove_inst(call),
    }
    Inlined {
        calls,
        continues: callee
            .cfg
            .node_weights()
            .filter_map(|b| match b.structure {
                Some(Structure::Loop { cont, .. }) => Some(blocks[&cont]),
                _ => None,
            })
            .chain(continue_of_wrapper)
            .collect(),
    }
}

/// What [`inline_call`] added to the caller: the calls of the copy, in the callee's order,
/// and the continue blocks of its loops.
struct Inlined {
    calls: Vec<Value>,
    continues: Vec<BlockId>,
}

/// [`Function::split_at`] after instruction `at`.
fn split_after(func: &mut Function, block: BlockId, at: Value) -> BlockId {
    let pos = func.cfg[block]
        .insts
        .iter()
        .position(|&v| v == at)
        .expect("the instruction is in its block");
    func.split_at(block, pos + 1)
}

/// Deletes the functions no chain of calls from the entry reaches, renumbering the others.
fn delete_uncalled(shader: &mut Shader) {
    let mut reached: FxHashSet<FuncId> = shader.called_callers_first().into_iter().collect();
    reached.insert(shader.entry);
    shader.retain_functions(|f| reached.contains(&f));
}
