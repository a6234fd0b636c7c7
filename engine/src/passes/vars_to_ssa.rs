//! `vars-to-ssa`: promotes temporary variables to SSA values.
//!
//! What: a `function_temp` variable that only one function reaches, and a `shader_temp`
//! variable that only the entry function reaches, is promoted when every access to it is a
//! `load_deref` or `store_deref` through a chain of constant, in-bounds indices (struct
//! members, array elements, matrix columns, and at the end optionally one vector component).
//! Each distinct scalar or vector such a chain ends at is a *leaf*: an SSA variable of its own.
//! Phis go at the iterated dominance frontier of each loaded leaf's stores (Cytron et al.), in
//! the blocks where the leaf is live (pruned SSA, so the phis grow with the live ranges, not
//! with the nesting around them). Where a leaf's live range is far longer than its accesses and
//! one of its stores dominates every read, the search for the range stops and the phis go at
//! the frontier within what that store dominates, the only blocks the leaf can be live into
//! (some of those phis are dead; `dce` deletes them): searching out every such range takes the
//! sum of their lengths, quadratic in the nesting of loops. Then, walking down the dominator tree with each leaf's
//! current value (Cytron et al.'s renaming), every load becomes a `mov` of that value (with a
//! swizzle for a component) and every store becomes the leaf's next value — a `mov` of the
//! data, or a `vecN` mixing the written components into the old value (write masks, stores to
//! a component); a block starts from its phi or from what its immediate dominator left, and
//! each phi receives what each predecessor leaves. The promoted variables, their derefs, loads and stores are then gone; `copy-prop`
//! and `dce` clean up the moves and the phis nothing reads.
//!
//! Why: loads and stores of temporaries hide every value from the other passes and cost
//! memory traffic in a backend; front ends emit them for every local variable and parameter.
//!
//! Invariants: a temporary holds nothing defined before the function that owns it first
//! stores to it (SPIR-V's function-storage semantics; a `shader_temp` of the entry function
//! starts undefined too), so a leaf read before any store reads `undef`. Accesses in
//! unreachable blocks are rewritten the same way, starting from `undef`. Variables with an
//! indirect index, a deref that escapes (into a call, a copy, an atomic, a phi...) or accesses
//! in several functions are left alone. An access at a constant index out of bounds reaches no
//! leaf: its load reads zero and its store is dropped (GLSL leaves such accesses undefined;
//! zero is what robust buffer access and the interpreter's robust mode give). Promoting one
//! variable is one transformation.
//!
//! Options: none.

use super::manager::{Pass, PassContext};
use super::vars::{AccessKind, read, rewrite_as_alu, var_accesses};
use crate::cfg::{DomTree, dominance_frontiers, iterated_dominance_frontier};
use crate::ir::{
    AluSrc, BlockId, Deref, Function, Inst, InstKind, Shader, ValType, Value, VarId, deref_chain,
};
use crate::liveness::LiveRangeSearch;
use crate::ops::AluOp;
use rustc_hash::{FxHashMap, FxHashSet};
use shrew_ops::IndexKind;

/// The `vars-to-ssa` pass.
pub struct VarsToSsa;

impl Pass for VarsToSsa {
    fn name(&self) -> &str {
        "vars-to-ssa"
    }

    fn lowers(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "promotes temporaries accessed only directly to SSA values, with phis"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        let owned = super::vars::owned_temporaries(shader);
        let mut promoted = FxHashSet::default();
        context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let candidates = &owned[f];
                if candidates.is_empty() {
                    return;
                }
                let mut accesses = find_accesses(shader, &shader.functions[f], candidates);
                let mut chosen: Vec<VarId> = accesses.promotable.iter().copied().collect();
                chosen.sort();
                chosen.retain(|&var| {
                    let name = &shader.variable(var).name;
                    transformations.take(|| format!("@{name}"))
                });
                if chosen.is_empty() {
                    return;
                }
                accesses.keep_only(&chosen);
                promote(&mut shader.functions[f], &accesses);
                promoted.extend(chosen);
            });
        if promoted.is_empty() {
            return Ok(false);
        }
        shader.retain_variables(|var| !promoted.contains(&var));
        Ok(true)
    }
}

/// Where a load or store of a promoted variable lands.
#[derive(Clone, Debug)]
struct Access {
    leaf: usize,
    /// The vector component accessed, when not the whole leaf.
    component: Option<u8>,
    /// Stores: the data and the components written (of the leaf, or of the component).
    store: Option<(Value, u32)>,
}

impl Access {
    /// Whether this is a store of every component of its leaf, of `comps` components: one
    /// that keeps nothing of the old value.
    fn replaces_leaf(&self, comps: u8) -> bool {
        let every = (1u32 << comps) - 1;
        self.component.is_none() && self.store.is_some_and(|(_, mask)| mask & every == every)
    }
}

/// The accesses of one function to its candidate variables.
#[derive(Default)]
struct Accesses {
    promotable: FxHashSet<VarId>,
    leaves: Vec<(VarId, ValType)>,
    by_path: FxHashMap<(VarId, Vec<u32>), usize>,
    /// Loads and stores by instruction.
    by_inst: FxHashMap<Value, Access>,
    /// Loads and stores out of bounds, with their variables.
    out_of_bounds: Vec<(Value, VarId)>,
    /// Every deref instruction rooted at each variable.
    derefs: FxHashMap<VarId, Vec<Value>>,
}

impl Accesses {
    /// Forgets the variables not chosen for promotion.
    fn keep_only(&mut self, chosen: &[VarId]) {
        let chosen: FxHashSet<VarId> = chosen.iter().copied().collect();
        let leaves = &self.leaves;
        self.by_inst
            .retain(|_, access| chosen.contains(&leaves[access.leaf].0));
        self.out_of_bounds.retain(|(_, var)| chosen.contains(var));
        self.derefs.retain(|var, _| chosen.contains(var));
    }
}

/// Finds the loads and stores of the candidates in `func` and which candidates can be promoted:
/// those whose derefs only lead to loads and stores through constant paths.
fn find_accesses(shader: &Shader, func: &Function, candidates: &FxHashSet<VarId>) -> Accesses {
    let mut acc = Accesses::default();
    let mut all = var_accesses(func);
    all.retain(|var, _| candidates.contains(var));
    let mut vars: Vec<VarId> = all.keys().copied().collect();
    vars.sort();
    for var in vars {
        let uses = &all[&var];
        let mut found = Vec::with_capacity(uses.accesses.len());
        let promotable = !uses.escapes
            && uses.accesses.iter().all(|a| {
                let store = match a.kind {
                    AccessKind::Load => None,
                    AccessKind::Store => {
                        let InstKind::Intrinsic(i) = &func.inst(a.inst).kind else {
                            return false;
                        };
                        Some((i.srcs[1], i.index(IndexKind::WriteMask).unwrap_or(0)))
                    }
                    AccessKind::CopyDst | AccessKind::CopySrc => return false,
                };
                match leaf_path(shader, func, a.deref) {
                    Some(Reach::Leaf(leaf)) => found.push((a.inst, leaf, store)),
                    Some(Reach::OutOfBounds) => acc.out_of_bounds.push((a.inst, var)),
                    None => return false,
                }
                true
            });
        if !promotable {
            acc.out_of_bounds.retain(|&(_, v)| v != var);
            continue;
        }
        for (inst, (path, ty, component), store) in found {
            let next = acc.leaves.len();
            let leaf = *acc.by_path.entry((var, path)).or_insert(next);
            if leaf == next {
                acc.leaves.push((var, ty));
            }
            acc.by_inst.insert(
                inst,
                Access {
                    leaf,
                    component,
                    store,
                },
            );
        }
        acc.derefs.insert(var, uses.derefs.clone());
        acc.promotable.insert(var);
    }
    acc
}

/// Where a deref of a candidate leads.
enum Reach {
    /// The constant path from the variable to the scalar or vector the deref reaches, that
    /// leaf's shape, and the vector component selected after it, if any.
    Leaf((Vec<u32>, ValType, Option<u8>)),
    /// A constant index past the end of its array, matrix or vector.
    OutOfBounds,
}

/// Where `deref` leads; `None` when an index is not a constant or the chain ends elsewhere.
fn leaf_path(shader: &Shader, func: &Function, deref: Value) -> Option<Reach> {
    let (var, steps) = deref_chain(func, deref)?;
    let mut ty = shader.variables.get(var.0 as usize)?.ty.clone();
    let mut path = Vec::with_capacity(steps.len());
    let mut leaf = ty.val_type();
    let mut component = None;
    for step in steps {
        let InstKind::Deref(d) = &func.inst(step).kind else {
            return None;
        };
        let index = match d {
            Deref::Array { index, .. } => {
                let InstKind::Const(values) = &func.get_inst(*index)?.kind else {
                    return None;
                };
                match u32::try_from(*values.first()?) {
                    Ok(i) if i < ty.element_count()? => i,
                    _ => return Some(Reach::OutOfBounds),
                }
            }
            Deref::Struct { member, .. } => *member,
            Deref::Var(_) => return None,
        };
        if let Some(vector) = leaf {
            // Only one step may follow the leaf: its component.
            if component.is_some() || vector.comps == 1 {
                return None;
            }
            component = Some(index as u8);
        } else {
            path.push(index);
        }
        ty = shader.deref_step_type(&ty, d)?;
        if leaf.is_none() {
            leaf = ty.val_type();
        }
    }
    Some(Reach::Leaf((path, leaf?, component)))
}

/// Rewrites the chosen variables' accesses into SSA values and deletes their derefs.
fn promote(func: &mut Function, acc: &Accesses) {
    let dom = DomTree::new(func);
    let frontiers = dominance_frontiers(func, &dom);

    // Phis at the iterated dominance frontier of each loaded leaf's stores.
    let mut loaded = vec![false; acc.leaves.len()];
    let mut store_blocks: Vec<Vec<BlockId>> = vec![Vec::new(); acc.leaves.len()];
    for (&v, access) in &acc.by_inst {
        let block = func.inst(v).block;
        if access.store.is_some() {
            if dom.is_reachable(block) {
                store_blocks[access.leaf].push(block);
            }
        } else {
            loaded[access.leaf] = true;
        }
    }
    let mut phis: FxHashMap<BlockId, Vec<(usize, Value)>> = FxHashMap::default();
    let (exposed, replacing) = exposed_reads(func, acc);
    // Phis go only where their leaf is live (pruned SSA): a variable live in a small region,
    // like the temporary of a ternary, gets none at the merges around it. A live range far
    // longer than the leaf's accesses (a counter live in every loop inside its own, a variable
    // live around a whole dispatch loop) is not searched out when a store dominates every
    // read: the leaf is live only where that store dominates, and the frontier there is what
    // the phis need, with dead ones `dce` deletes. Searching every such range would take the
    // sum of their lengths, quadratic in the nesting.
    let mut liveness = LiveRangeSearch::over_blocks(func);
    for (leaf, blocks) in store_blocks.into_iter().enumerate() {
        // No store block with a frontier, no phi: the liveness search (as long as the live
        // range, which nested live ranges make quadratic in total) is not needed.
        let meets_others = blocks
            .iter()
            .any(|b| frontiers.get(b).is_some_and(|f| !f.is_empty()));
        if !loaded[leaf] || !meets_others {
            continue;
        }
        let (exposed, replacing) = (&exposed[leaf], &replacing[leaf]);
        let index = |b: &BlockId| b.index();
        let budget = LIVE_BLOCKS_PER_ACCESS * (exposed.len() + replacing.len() + 1);
        let search = |liveness: &mut LiveRangeSearch, budget| {
            let (exposed, replacing) = (exposed.iter().map(index), replacing.iter().map(index));
            liveness.search_within(exposed, replacing, budget, |_| {})
        };
        let placed = if search(&mut liveness, budget) {
            iterated_dominance_frontier(&frontiers, blocks, |b| liveness.is_live_in(b.index()))
        } else if let Some(kill) = dominating_store(&dom, exposed, replacing) {
            // Live only where that store dominates: the frontier there, some phis dead.
            let dominated = |b: BlockId| b != kill && dom.dominates(kill, b);
            iterated_dominance_frontier(&frontiers, blocks, dominated)
        } else {
            search(&mut liveness, usize::MAX);
            iterated_dominance_frontier(&frontiers, blocks, |b| liveness.is_live_in(b.index()))
        };
        for b in placed {
            let phi = func.alloc_inst(Inst {
                kind: InstKind::Phi(Vec::new()),
                def: Some(acc.leaves[leaf].1),
                block: b,
            });
            func.cfg[b].insts.insert(0, phi);
            phis.entry(b).or_default().push((leaf, phi));
        }
    }

    for &(v, _) in &acc.out_of_bounds {
        match func.inst(v).def {
            Some(ty) => func.inst_mut(v).kind = InstKind::Const(vec![0; ty.comps as usize]),
            None => func.remove_inst(v),
        }
    }
    let mut renamer = Renamer {
        acc,
        phis: &phis,
        current: vec![None; acc.leaves.len()],
        phi_sources: FxHashMap::default(),
        undefs: FxHashMap::default(),
    };
    // The reachable blocks down the dominator tree, each leaf's current value restored on the
    // way back up; then each unreachable block on its own, from nothing.
    let mut stack: Vec<(BlockId, usize, Undo)> = Vec::new();
    let undo = renamer.rename(func, func.entry);
    stack.push((func.entry, 0, undo));
    while let Some((b, next_child, undo)) = stack.pop() {
        match dom.children(b).get(next_child) {
            Some(&child) => {
                stack.push((b, next_child + 1, undo));
                let child_undo = renamer.rename(func, child);
                stack.push((child, 0, child_undo));
            }
            None => renamer.restore(undo),
        }
    }
    for b in func.blocks() {
        if !dom.is_reachable(b) {
            let undo = renamer.rename(func, b);
            renamer.restore(undo);
        }
    }

    // Phi sources: the value leaving each predecessor.
    let mut phi_list: Vec<(BlockId, usize, Value)> = (phis.iter())
        .flat_map(|(&b, list)| list.iter().map(move |&(leaf, phi)| (b, leaf, phi)))
        .collect();
    phi_list.sort();
    for (b, leaf, phi) in phi_list {
        let srcs: Vec<(BlockId, Value)> = func
            .predecessors(b)
            .into_iter()
            .map(|p| {
                let source = renamer.phi_sources.get(&(phi, p)).copied();
                (p, source.unwrap_or_else(|| renamer.undef(func, leaf)))
            })
            .collect();
        func.inst_mut(phi).kind = InstKind::Phi(srcs);
    }
    // The undefs go first in the entry block only now: inserting them while its instructions
    // were being walked would have shifted the walk.
    let entry = func.entry;
    let mut undefs: Vec<Value> = renamer.undefs.into_values().collect();
    undefs.sort();
    func.cfg[entry].insts.splice(0..0, undefs);

    func.remove_insts(acc.derefs.values().flatten().copied());
}

/// How many blocks a leaf's live range may cover, per block accessing it, before the search
/// for it gives up and the phis follow dominance instead.
const LIVE_BLOCKS_PER_ACCESS: usize = 32;

/// A block whose store of the whole leaf comes before any read in it and which dominates every
/// block reading the leaf before such a store (`exposed`, in any order), if there is one: no
/// block it does not dominate has the leaf live into it. Found in time linear in the blocks
/// given: a block dominates them all when it dominates the first and the last of them in the
/// dominator tree's preorder.
fn dominating_store(dom: &DomTree, exposed: &[BlockId], replacing: &[BlockId]) -> Option<BlockId> {
    if exposed.iter().any(|b| !dom.is_reachable(*b)) {
        return None;
    }
    let by_preorder = |b: &&BlockId| dom.preorder_index(**b);
    let first = *exposed.iter().min_by_key(by_preorder)?;
    let last = *exposed.iter().max_by_key(by_preorder)?;
    let exposed: FxHashSet<BlockId> = exposed.iter().copied().collect();
    (replacing.iter().copied())
        .find(|&r| !exposed.contains(&r) && dom.dominates(r, first) && dom.dominates(r, last))
}

/// Per leaf, the blocks that read it before any store of the whole leaf (a load, or a store
/// keeping some old components), and the blocks that store the whole leaf; each in block order.
fn exposed_reads(func: &Function, acc: &Accesses) -> (Vec<Vec<BlockId>>, Vec<Vec<BlockId>>) {
    let mut exposed = vec![Vec::new(); acc.leaves.len()];
    let mut replacing = vec![Vec::new(); acc.leaves.len()];
    for b in func.blocks() {
        for v in &func.cfg[b].insts {
            let Some(access) = acc.by_inst.get(v) else {
                continue;
            };
            let leaf = access.leaf;
            if replacing[leaf].last() == Some(&b) {
                continue;
            }
            if access.replaces_leaf(acc.leaves[leaf].1.comps) {
                replacing[leaf].push(b);
            } else if exposed[leaf].last() != Some(&b) {
                exposed[leaf].push(b);
            }
        }
    }
    (exposed, replacing)
}

/// The leaves' values a block's renaming replaced, in order, to put back after its subtree.
type Undo = Vec<(usize, Option<Value>)>;

/// The renaming walk: each leaf's current value, and what each phi gets from each predecessor.
struct Renamer<'a> {
    acc: &'a Accesses,
    /// The phis of each block, with their leaves.
    phis: &'a FxHashMap<BlockId, Vec<(usize, Value)>>,
    /// Each leaf's value at the point of the walk; `None` before any store.
    current: Vec<Option<Value>>,
    /// The value each phi receives from each predecessor block.
    phi_sources: FxHashMap<(Value, BlockId), Value>,
    /// One `undef` per leaf, for the entry block: the value before any store.
    undefs: FxHashMap<usize, Value>,
}

impl Renamer<'_> {
    /// Rewrites the loads and stores of block `b` from the current values (its phis first),
    /// records what its successors' phis receive, and returns how to undo the changes to the
    /// current values.
    fn rename(&mut self, func: &mut Function, b: BlockId) -> Undo {
        let mut undo = Vec::new();
        for &(leaf, phi) in self.phis.get(&b).map_or(&[][..], Vec::as_slice) {
            undo.push((leaf, self.current[leaf].replace(phi)));
        }
        for i in 0..func.cfg[b].insts.len() {
            let v = func.cfg[b].insts[i];
            let Some(access) = self.acc.by_inst.get(&v) else {
                continue;
            };
            let leaf = access.leaf;
            let ty = self.acc.leaves[leaf].1;
            match access.store {
                None => {
                    let source = self.value(func, leaf);
                    let swizzle = access.component.map_or_else(Vec::new, |c| vec![c]);
                    rewrite_as_alu(func.inst_mut(v), AluOp::Mov, vec![read(source, &swizzle)]);
                }
                Some((data, mask)) => {
                    if access.replaces_leaf(ty.comps) {
                        rewrite_as_alu(func.inst_mut(v), AluOp::Mov, vec![AluSrc::new(data)]);
                    } else {
                        // Per component of the leaf: read from the data or keep the old value.
                        let old = self.value(func, leaf);
                        let srcs: Vec<AluSrc> = (0..ty.comps)
                            .map(|c| {
                                let written = match access.component {
                                    Some(k) => (c == k && mask & 1 != 0).then_some(0),
                                    None => (mask & (1 << c) != 0).then_some(c),
                                };
                                match written {
                                    Some(d) => read(data, &[d]),
                                    None => read(old, &[c]),
                                }
                            })
                            .collect();
                        let op = AluOp::vec_of(ty.comps).unwrap_or(AluOp::Mov);
                        rewrite_as_alu(func.inst_mut(v), op, srcs);
                    }
                    func.inst_mut(v).def = Some(ty);
                    undo.push((leaf, self.current[leaf].replace(v)));
                }
            }
        }
        for s in func.successors(b) {
            for &(leaf, phi) in self.phis.get(&s).map_or(&[][..], Vec::as_slice) {
                let value = self.value(func, leaf);
                self.phi_sources.insert((phi, b), value);
            }
        }
        undo
    }

    /// Puts back the current values a [`Renamer::rename`] changed.
    fn restore(&mut self, undo: Undo) {
        for (leaf, value) in undo.into_iter().rev() {
            self.current[leaf] = value;
        }
    }

    /// The current value of `leaf`: its `undef` before any store.
    fn value(&mut self, func: &mut Function, leaf: usize) -> Value {
        match self.current[leaf] {
            Some(value) => value,
            None => self.undef(func, leaf),
        }
    }

    /// The leaf's `undef`, made in the arena; [`promote`] places it in the entry block.
    fn undef(&mut self, func: &mut Function, leaf: usize) -> Value {
        let ty = self.acc.leaves[leaf].1;
        *self.undefs.entry(leaf).or_insert_with(|| {
            func.alloc_inst(Inst {
                kind: InstKind::Undef,
                def: Some(ty),
                block: func.entry,
            })
        })
    }
}
