//! Automatic reduction of a failing shader: delta debugging over the IR while the failure
//! persists (`shrew reduce`).
//!
//! Each round collects the edits that make a shader simpler: deleting an instruction that only
//! has an effect (a store, a discard), replacing a value by one of its own sources of the same
//! shape or by zero, and deciding a branch with a constant condition; then `dce` and `dead-cf`
//! clear what became unused or unreachable. Edits are tried in chunks, halving the chunk size
//! when no chunk keeps the failure (ddmin), so a failure depending on a few instructions of
//! a large shader is found in a number of tries near-linear in its size. Every candidate must
//! verify; rounds repeat until none makes progress or the budget of tries runs out.
//!
//! What "the failure persists" means is the caller's predicate: for `shrew reduce`, the same
//! run still fails the same way (a refusal with the same message, or a difference). A
//! replacement by zero can make a guarded operation undefined (a division by zero); a
//! difference that appears only then is no longer the original bug, so the result is worth a
//! look before it becomes a regression test.

use crate::differential::{Failure, directive, file_runs, run_on_target};
use shrew_engine::ir::{
    BlockId, FuncId, Function, Inst, InstKind, Shader, Terminator, ValType, Value,
};
use shrew_engine::ops::Intrinsic;
use shrew_targets::Pipeline;
use std::collections::HashSet;

/// One way to make the shader simpler.
#[derive(Copy, Clone, Debug)]
enum Edit {
    /// Delete an instruction with an effect and no result.
    Delete(FuncId, Value),
    /// Make every reader of the value read another (a source of the same shape).
    Forward(FuncId, Value, Value),
    /// Make every reader of the value read zero.
    Zero(FuncId, Value),
    /// Branch one way only.
    Decide(FuncId, BlockId, bool),
}

/// `shader` reduced while `still_fails` holds, with at most `tries` evaluations of it.
pub fn reduce(shader: &Shader, still_fails: &dyn Fn(&Shader) -> bool, tries: usize) -> Shader {
    let mut best = shader.clone();
    let mut left = tries;
    loop {
        let before = size(&best);
        for kind in 0..3 {
            let edits = edits(&best, kind);
            best = ddmin(best, edits, still_fails, &mut left);
        }
        if size(&best) >= before || left == 0 {
            return best;
        }
    }
}

/// How many instructions the shader has.
pub fn size(shader: &Shader) -> usize {
    shader
        .functions
        .iter()
        .map(|f| f.insts.iter().flatten().count())
        .sum()
}

/// Applies chunks of `edits`, keeping each chunk after which the shader still fails.
fn ddmin(
    mut best: Shader,
    mut edits: Vec<Edit>,
    still_fails: &dyn Fn(&Shader) -> bool,
    left: &mut usize,
) -> Shader {
    let mut chunks = 2;
    while !edits.is_empty() && *left > 0 {
        let chunk = edits.len().div_ceil(chunks);
        let mut kept_any = false;
        let mut start = 0;
        while start < edits.len() && *left > 0 {
            let end = (start + chunk).min(edits.len());
            if let Some(candidate) = apply(&best, &edits[start..end]) {
                *left -= 1;
                if still_fails(&candidate) {
                    best = candidate;
                    edits.drain(start..end);
                    kept_any = true;
                    continue;
                }
            }
            start = end;
        }
        if !kept_any {
            if chunk == 1 {
                break;
            }
            chunks = (chunks * 2).min(edits.len());
        }
    }
    best
}

/// The edits of one kind: 0 deletions, 1 decisions of branches, 2 replacements of values.
fn edits(shader: &Shader, kind: usize) -> Vec<Edit> {
    let mut edits = Vec::new();
    for (f, func) in shader.functions.iter().enumerate() {
        let f = FuncId(f as u32);
        match kind {
            0 => {
                for v in func.all_insts() {
                    let inst = func.inst(v);
                    if inst.def.is_none()
                        && matches!(&inst.kind, InstKind::Intrinsic(i) if i.op != Intrinsic::Barrier)
                    {
                        edits.push(Edit::Delete(f, v));
                    }
                }
            }
            1 => {
                for block in func.blocks() {
                    if let Some(Terminator::Branch { .. }) = func.cfg[block].terminator {
                        edits.push(Edit::Decide(f, block, true));
                        edits.push(Edit::Decide(f, block, false));
                    }
                }
            }
            _ => {
                for v in func.all_insts() {
                    let inst = func.inst(v);
                    let Some(def) = inst.def else { continue };
                    if matches!(inst.kind, InstKind::Deref(_) | InstKind::Const(_)) {
                        continue;
                    }
                    let same_shape = func
                        .inst_sources(v)
                        .into_iter()
                        .find(|&s| func.value_type(s) == Some(def));
                    match same_shape {
                        Some(source) => edits.push(Edit::Forward(f, v, source)),
                        None => edits.push(Edit::Zero(f, v)),
                    }
                }
            }
        }
    }
    edits
}

/// The shader after `edits` and a clean-up, if it verifies.
fn apply(shader: &Shader, edits: &[Edit]) -> Option<Shader> {
    let mut candidate = shader.clone();
    for &edit in edits {
        match edit {
            Edit::Delete(f, v) => {
                let func = &mut candidate.functions[f.0 as usize];
                if func.insts.get(v.index()).is_some_and(Option::is_some) {
                    func.remove_inst(v);
                }
            }
            Edit::Forward(f, v, source) => {
                let func = &mut candidate.functions[f.0 as usize];
                if func.insts.get(source.index()).is_some_and(Option::is_some) {
                    func.replace_uses(v, source);
                }
            }
            Edit::Zero(f, v) => {
                let func = &mut candidate.functions[f.0 as usize];
                let Some(def) = func.value_type(v) else {
                    continue;
                };
                let zero = constant(func, def, 0);
                func.replace_uses(v, zero);
            }
            Edit::Decide(f, block, way) => {
                let func = &mut candidate.functions[f.0 as usize];
                // The block may be gone: an earlier edit of the chunk made it unreachable.
                let branches = func
                    .cfg
                    .node_weight(block)
                    .is_some_and(|b| matches!(b.terminator, Some(Terminator::Branch { .. })));
                if !branches {
                    continue;
                }
                let cond = constant(func, ValType::new(1, 1), way as u64);
                if let Some(Terminator::Branch { cond: c }) = func.cfg[block].terminator.as_mut() {
                    *c = cond;
                }
            }
        }
    }
    shrew_engine::verify::verify(&candidate).ok()?;
    clean_up(&mut candidate)?;
    candidate
        .functions
        .iter()
        .all(always_may_return)
        .then_some(candidate)
}

/// Whether every block of `func` can reach a `return`: deciding a loop's exit branch the
/// wrong way makes a loop no invocation leaves, and code after it that no longer runs, which
/// tells nothing about the original failure.
fn always_may_return(func: &Function) -> bool {
    let blocks = func.blocks();
    let mut reaches: HashSet<BlockId> = blocks
        .iter()
        .copied()
        .filter(|&b| matches!(func.cfg[b].terminator, Some(Terminator::Return { .. })))
        .collect();
    let mut work: Vec<BlockId> = reaches.iter().copied().collect();
    while let Some(b) = work.pop() {
        for p in func.predecessors(b) {
            if reaches.insert(p) {
                work.push(p);
            }
        }
    }
    reaches.len() == blocks.len()
}

/// A constant at the top of the function's entry block, which dominates every use.
fn constant(func: &mut Function, def: ValType, bits: u64) -> Value {
    let entry = func.entry;
    let kind = InstKind::Const(vec![bits; def.comps as usize]);
    match func.cfg[entry].insts.first().copied() {
        Some(first) => func.insert_before(first, kind, Some(def)),
        None => {
            let v = func.alloc_inst(Inst {
                kind,
                def: Some(def),
                block: entry,
            });
            func.cfg[entry].insts.push(v);
            v
        }
    }
}

/// `dce` and `dead-cf`: what the edits left unused or unreachable goes (and the result
/// verifies).
fn clean_up(shader: &mut Shader) -> Option<()> {
    let pipeline = Pipeline::parse("dead-cf,dce", shrew_targets::generic()).ok()?;
    pipeline.run(shader).ok()?;
    Some(())
}

/// A test file reduced: its directive lines kept, its shader replaced.
pub struct Reduced {
    pub text: String,
    /// The run that fails, as [`Run::describe`] gives it.
    pub run: String,
    pub failure: Failure,
    /// Instructions before and after.
    pub before: usize,
    pub after: usize,
}

/// Reduces the IR text file `source` (a `.shrew` file with `// run:` lines, as `shrew fuzz`
/// saves its findings) while the first of its runs that fails keeps failing the same way.
pub fn reduce_file(source: &str, file: &str, tries: usize) -> Result<Reduced, String> {
    let shader = shrew_engine::text::parse(source, file).map_err(|e| e.to_string())?;
    let tolerance = directive(source, "// tolerance:")
        .map(|t| {
            t.parse::<f32>()
                .map_err(|e| format!("`// tolerance: {t}`: {e}"))
        })
        .transpose()?;
    let runs = file_runs(source, "default", tolerance)?;
    if runs.is_empty() {
        return Err(format!(
            "{file}: no `// run:` line says how the shader fails"
        ));
    }
    let (run, failure) = runs
        .iter()
        .find_map(|run| {
            let error = run_on_target(&shader, run).err()?;
            Some((run, Failure::of(&error)))
        })
        .ok_or_else(|| format!("{file}: every run agrees with the interpreter"))?;
    if failure == Failure::Interpreter {
        return Err(format!(
            "{file}: the interpreter does not run the shader, so nothing can be compared"
        ));
    }
    let still_fails = |candidate: &Shader| {
        run_on_target(candidate, run).is_err_and(|e| Failure::of(&e) == failure)
    };
    let reduced = reduce(&shader, &still_fails, tries);
    let directives: String = source
        .lines()
        .take_while(|line| line.trim_start().starts_with("//"))
        .map(|line| format!("{line}\n"))
        .collect();
    Ok(Reduced {
        text: directives + &shrew_engine::text::print(&reduced),
        run: run.describe(),
        failure,
        before: size(&shader),
        after: size(&reduced),
    })
}
