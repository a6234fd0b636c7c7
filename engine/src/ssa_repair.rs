//! SSA repair: makes every value dominate its uses again after a transformation redirected
//! edges (the SPIR-V reader's switch lowering routes a case's exits through new blocks, so a
//! value a case defines may no longer dominate the switch's merge block that reads it).
//!
//! What: [`repair_ssa`] finds the values some reachable use of which their definition no longer
//! dominates, and gives each of those uses the value that reaches it: the definition itself
//! where it dominates, a new phi where paths with and without it meet, and `undef` on the
//! paths that never pass the definition (Mesa's `nir_repair_ssa`). A phi's source counts as a
//! use at the end of its predecessor.
//!
//! How: per broken value, pruned SSA construction for a variable written once: phis go on the
//! iterated dominance frontier of the definition's block, restricted to the blocks the value is
//! live into (found by walking backwards from the uses to the definition); then each use reads
//! the nearest definition (the value or one of its phis) up its dominator tree. The dominance
//! frontiers are computed once for all values.
//!
//! Invariants: uses the definition dominates, and uses in unreachable blocks, are unchanged; a
//! function without broken values is not touched.

use crate::cfg::{DomTree, dominance_frontiers, iterated_dominance_frontier};
use crate::ir::{BlockId, Function, Inst, InstKind, ValType, Value};
use rustc_hash::{FxHashMap, FxHashSet};

/// A reading of a value: an instruction's source, a phi's source from a predecessor, or a
/// terminator's condition.
#[derive(Copy, Clone, Debug)]
enum Use {
    Inst(Value),
    Phi { phi: Value, pred: BlockId },
    Terminator(BlockId),
}

/// Repairs every value whose definition no longer dominates some reachable use (see the module
/// comment); returns how many values were repaired.
pub fn repair_ssa(func: &mut Function) -> usize {
    let dom = DomTree::new(func);
    let broken = broken_uses(func, &dom);
    if broken.is_empty() {
        return 0;
    }
    let frontiers = dominance_frontiers(func, &dom);
    let mut undefs: FxHashMap<ValType, Value> = FxHashMap::default();
    for (value, uses) in &broken {
        repair_value(func, &dom, &frontiers, &mut undefs, *value, uses);
    }
    broken.len()
}

/// The values with uses their definition does not dominate, with those uses, by value.
fn broken_uses(func: &Function, dom: &DomTree) -> Vec<(Value, Vec<Use>)> {
    let mut broken: FxHashMap<Value, Vec<Use>> = FxHashMap::default();
    let def_block = |v: Value| func.get_inst(v).map(|i| i.block);
    let mut check = |v: Value, at: BlockId, reading: Use| {
        if let Some(d) = def_block(v)
            && dom.is_reachable(d)
            && !dom.dominates(d, at)
        {
            broken.entry(v).or_default().push(reading);
        }
    };
    for &b in dom.preorder() {
        for &v in &func.cfg[b].insts {
            match &func.inst(v).kind {
                InstKind::Phi(srcs) => {
                    for &(pred, src) in srcs {
                        if dom.is_reachable(pred) {
                            check(src, pred, Use::Phi { phi: v, pred });
                        }
                    }
                }
                kind => {
                    for src in crate::ir::inst_sources(kind) {
                        check(src, b, Use::Inst(v));
                    }
                }
            }
        }
        if let Some(term) = &func.cfg[b].terminator
            && let Some(cond) = term.src()
        {
            check(cond, b, Use::Terminator(b));
        }
    }
    let mut broken: Vec<(Value, Vec<Use>)> = broken.into_iter().collect();
    broken.sort_by_key(|(v, _)| *v);
    broken
}

/// Gives each of `uses` of `value` the definition that reaches it.
fn repair_value(
    func: &mut Function,
    dom: &DomTree,
    frontiers: &FxHashMap<BlockId, Vec<BlockId>>,
    undefs: &mut FxHashMap<ValType, Value>,
    value: Value,
    uses: &[Use],
) {
    let def = func.inst(value).block;
    let ty = func.inst(value).def.expect("a used value has a type");
    let use_block = |u: &Use, func: &Function| match *u {
        Use::Inst(v) => func.inst(v).block,
        Use::Phi { pred, .. } => pred,
        Use::Terminator(b) => b,
    };
    // The blocks the value is live into: backwards from the uses, stopping at the definition.
    let mut live_in: FxHashSet<BlockId> = FxHashSet::default();
    let mut work: Vec<BlockId> = uses.iter().map(|u| use_block(u, func)).collect();
    while let Some(b) = work.pop() {
        if b == def || !dom.is_reachable(b) || !live_in.insert(b) {
            continue;
        }
        work.extend(func.predecessors(b));
    }
    let phi_blocks = iterated_dominance_frontier(frontiers, [def], |b| live_in.contains(&b));
    let mut phis: FxHashMap<BlockId, Value> = FxHashMap::default();
    for &b in &phi_blocks {
        let phi = func.alloc_inst(Inst {
            kind: InstKind::Phi(Vec::new()),
            def: Some(ty),
            block: b,
        });
        func.cfg[b].insts.insert(0, phi);
        phis.insert(b, phi);
    }
    // Paths that never pass the definition read `undef`, one per type and function.
    let undef = *undefs.entry(ty).or_insert_with(|| {
        let entry = func.entry;
        let v = func.alloc_inst(Inst {
            kind: InstKind::Undef,
            def: Some(ty),
            block: entry,
        });
        func.cfg[entry].insts.insert(0, v);
        v
    });
    // The definition live at the end of each block, memoized along the dominator tree.
    let mut reaching: FxHashMap<BlockId, Option<Value>> = FxHashMap::default();
    let mut live_out = |b: BlockId| -> Option<Value> {
        let mut path = Vec::new();
        let mut at = Some(b);
        let found = loop {
            let Some(x) = at else { break None };
            if let Some(&r) = reaching.get(&x) {
                break r;
            }
            if x == def {
                break Some(value);
            }
            if let Some(&phi) = phis.get(&x) {
                break Some(phi);
            }
            path.push(x);
            at = dom.immediate_dominator(x);
        };
        for x in path {
            reaching.insert(x, found);
        }
        found
    };
    for &b in &phi_blocks {
        let mut preds = func.predecessors(b);
        preds.dedup();
        let srcs: Vec<(BlockId, Value)> = preds
            .into_iter()
            .filter(|&p| dom.is_reachable(p))
            .map(|p| (p, live_out(p).unwrap_or(undef)))
            .collect();
        func.inst_mut(phis[&b]).kind = InstKind::Phi(srcs);
    }
    for u in uses {
        // A use in a block with a phi of the value reads that phi; otherwise what reaches the
        // end of its immediate dominator (the block has no definition of its own above it).
        let reader =
            |b: BlockId, live_out: &mut dyn FnMut(BlockId) -> Option<Value>| match phis.get(&b) {
                Some(&phi) => Some(phi),
                None => dom.immediate_dominator(b).and_then(live_out),
            };
        let new = match *u {
            Use::Inst(v) => reader(func.inst(v).block, &mut live_out),
            Use::Terminator(b) => reader(b, &mut live_out),
            Use::Phi { pred, .. } => live_out(pred),
        }
        .unwrap_or(undef);
        match *u {
            Use::Inst(v) => func.inst_mut(v).kind.for_each_src_mut(|s| {
                if *s == value {
                    *s = new;
                }
            }),
            Use::Phi { phi, pred } => {
                if let InstKind::Phi(srcs) = &mut func.inst_mut(phi).kind {
                    for (p, s) in srcs.iter_mut() {
                        if *p == pred && *s == value {
                            *s = new;
                        }
                    }
                }
            }
            Use::Terminator(b) => {
                if let Some(src) = func.cfg[b].terminator.as_mut().and_then(|t| t.src_mut()) {
                    *src = new;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{parse, print};
    use crate::verify::verify;

    fn repaired(text: &str) -> (usize, String) {
        let mut shader = parse(text, "test.shrew").expect("valid IR text");
        let entry = shader.entry.0 as usize;
        let count = repair_ssa(&mut shader.functions[entry]);
        verify(&shader).expect("repaired IR verifies");
        (count, print(&shader))
    }

    /// A value defined in one arm and read after the merge: the merge gets a phi of it and
    /// `undef` from the other arm.
    #[test]
    fn a_value_read_past_its_arm_gets_a_phi_with_undef() {
        let text = "shader fragment
entry fn main() {
b0: selection merge=b3
    1 %0 = load_const (true)
    branch %0, b1, b2
    b1:
        32 %1 = load_const (7)
        jump b3
    b2:
        jump b3
b3:
    32 %2 = iadd %1, %1
    return
}";
        let (count, out) = repaired(text);
        assert_eq!(count, 1);
        assert!(out.contains("32 %4 = undef"), "{out}");
        assert!(out.contains("32 %3 = phi b1: %1, b2: %4"), "{out}");
        assert!(out.contains("iadd %3, %3"), "{out}");
    }

    /// A use in a loop the definition does not dominate: the header and the loop's merge get
    /// phis, and a phi's source reads what reaches the end of its predecessor.
    #[test]
    fn a_value_read_around_a_loop() {
        let text = "shader fragment
entry fn main() {
b0:
    1 %0 = load_const (true)
    jump b1
b1: loop merge=b5 continue=b4
    jump b2
    b2: selection merge=b4
        branch %0, b3, b4
        b3:
            32 %1 = load_const (7)
            jump b4
    b4:
        32 %2 = iadd %1, %1
        branch %0, b1, b5
b5:
    32 %3 = phi b4: %1
    return
}";
        let (count, out) = repaired(text);
        assert_eq!(count, 1);
        // b4 merges the arm that defines %1 with the one that does not; b1 merges the entry
        // (undef) with the back edge.
        assert!(out.contains("32 %4 = phi b0: %6, b4: %5"), "{out}");
        assert!(out.contains("32 %5 = phi b2: %4, b3: %1"), "{out}");
        assert!(out.contains("iadd %5, %5"), "{out}");
        assert!(out.contains("phi b4: %5"), "{out}");
    }

    #[test]
    fn valid_ssa_is_left_alone() {
        let text = "shader fragment
entry fn main() {
b0:
    32 %0 = load_const (7)
    jump b1
b1:
    32 %1 = iadd %0, %0
    return
}";
        let (count, out) = repaired(text);
        assert_eq!(count, 0);
        assert_eq!(
            out.trim(),
            parse(text, "t").map(|s| print(&s)).unwrap().trim()
        );
    }
}
