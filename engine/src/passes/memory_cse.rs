//! `memory-cse`: merges loads of SSBOs, images, shared and global memory through memory tokens,
//! and forwards stored values to loads.
//!
//! What: every point of a function gets a *memory token* per kind of memory (SSBO, image,
//! shared, global). The function starts with one token per kind; a store, an atomic, a barrier
//! or a call makes a new token for the kinds it writes; where control flow joins with different
//! tokens, the join block gets a token of its own (a phi of tokens, found by iterating over
//! loops to a fixpoint). A load reads the token current where it is. Then, walking the blocks
//! in reverse post-order:
//! - two loads of the same address under the same token are one value (the first must dominate
//!   the second);
//! - a load of the address a store just wrote, under the store's token, is the stored value
//!   (whole stores only: every component written, same shape);
//! - what was known under a store's previous token stays known under its new one for addresses
//!   the store provably does not touch: distinct constant indices or struct members of one
//!   variable, distinct shared variables, SSBO variables accessed `restrict`, byte ranges at
//!   distinct constant offsets of one buffer.
//!
//! Atomics and barriers are never merged or moved and nothing is known across them; volatile
//! and coherent loads are left alone; stores to images forward nothing. The tokens exist only
//! inside the pass: the IR keeps its loads in place and only their users change.
//!
//! Why: loads from buffers are expensive (a send on Gen, a fetch clause on R600), and shaders
//! reload the same element many times (a struct member in a loop body, a value they just
//! wrote). Loads cannot simply be CSE'd like pure values because stores between them matter;
//! tokens make "nothing wrote this memory in between" a question of equality.
//!
//! Invariants: a load is replaced only by a value equal to what it would read on every path:
//! in `A = load x; if (c) { store x } B = load x`, B reads the join token, so A and B stay
//! apart. Each replaced load is one transformation; the replaced loads go (they are
//! eliminable).
//!
//! Options: none.

use super::Transformations;
use super::manager::{Pass, PassContext};
use crate::cfg::{DomTree, reverse_post_order};
use crate::ir::{BlockId, Function, Shader, Terminator, Value};
use crate::memory::{Address, Effect, disjoint, effect};
use rustc_hash::FxHashMap;

/// The `memory-cse` pass.
pub struct MemoryCse;

impl Pass for MemoryCse {
    fn name(&self) -> &str {
        "memory-cse"
    }

    fn description(&self) -> &str {
        "merges buffer, image and shared-memory loads and forwards stores, through memory tokens"
    }

    fn run(&self, shader: &mut Shader, context: &mut PassContext) -> Result<bool, String> {
        Ok(context
            .budget
            .each_function(shader, |shader, f, transformations| {
                let replaced = find_redundant_loads(shader, &shader.functions[f], transformations);
                if replaced.is_empty() {
                    return;
                }
                let func = &mut shader.functions[f];
                // A load may be replaced by one that is itself replaced: follow to the end.
                let resolve = |mut v: Value| {
                    while let Some(&next) = replaced.get(&v) {
                        v = next;
                    }
                    v
                };
                for inst in func.insts.iter_mut().flatten() {
                    inst.kind.for_each_src_mut(|v| *v = resolve(*v));
                }
                for block in func.cfg.node_weights_mut() {
                    if let Some(v) = block.terminator.as_mut().and_then(Terminator::src_mut) {
                        *v = resolve(*v);
                    }
                }
                func.remove_insts(replaced.keys().copied());
            }))
    }
}

/// A memory token of one kind of memory (an index into [`crate::memory::KINDS`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Token {
    /// The memory as the function finds it.
    Entry(usize),
    /// The memory after an instruction that writes it.
    After(Value, usize),
    /// The memory where a block joins paths with different tokens.
    Join(BlockId, usize),
}

/// The loads that can go, each with the value that replaces it.
fn find_redundant_loads(
    shader: &Shader,
    func: &Function,
    transformations: &mut Transformations,
) -> FxHashMap<Value, Value> {
    let effects: FxHashMap<Value, Effect> = func
        .all_insts()
        .map(|v| (v, effect(&shader.variables, func, v)))
        .filter(|(_, e)| !matches!(e, Effect::None))
        .collect();
    let entry_tokens = entry_tokens(func, &effects);
    let dom = DomTree::new(func);
    // Known values: (token, address) → (value, the block it is available from).
    let mut known: FxHashMap<(Token, Address), Vec<(Value, BlockId)>> = FxHashMap::default();
    let mut by_token: FxHashMap<Token, Vec<Address>> = FxHashMap::default();
    let mut replaced: FxHashMap<Value, Value> = FxHashMap::default();
    for b in reverse_post_order(func) {
        let mut tokens = entry_tokens[&b];
        for &v in &func.cfg[b].insts {
            match effects.get(&v) {
                Some(Effect::Load(kind, address)) => {
                    let key = (tokens[*kind], address.clone());
                    let def = func.inst(v).def;
                    let earlier = known.get(&key).and_then(|list| {
                        list.iter().find(|&&(value, from)| {
                            dom.dominates(from, b) && func.inst(value).def == def
                        })
                    });
                    match earlier {
                        Some(&(value, _)) if transformations.take(|| format!("{v} is {value}")) => {
                            replaced.insert(v, value);
                        }
                        _ => {
                            by_token.entry(key.0).or_default().push(key.1.clone());
                            known.entry(key).or_default().push((v, b));
                        }
                    }
                }
                Some(Effect::Store(kind, address, data)) => {
                    let (old, new) = (tokens[*kind], Token::After(v, *kind));
                    let kept: Vec<(Address, Vec<(Value, BlockId)>)> = by_token
                        .get(&old)
                        .into_iter()
                        .flatten()
                        .filter(|a| disjoint(a, address))
                        .filter_map(|a| {
                            let list: Vec<(Value, BlockId)> = known[&(old, a.clone())]
                                .iter()
                                .copied()
                                .filter(|&(_, from)| dom.dominates(from, b))
                                .collect();
                            (!list.is_empty()).then(|| (a.clone(), list))
                        })
                        .collect();
                    for (a, list) in kept {
                        by_token.entry(new).or_default().push(a.clone());
                        known.entry((new, a)).or_default().extend(list);
                    }
                    let data = replaced.get(data).copied().unwrap_or(*data);
                    by_token.entry(new).or_default().push(address.clone());
                    known
                        .entry((new, address.clone()))
                        .or_default()
                        .push((data, b));
                    tokens[*kind] = new;
                }
                Some(Effect::Clobber(kinds)) => {
                    for &k in kinds {
                        tokens[k] = Token::After(v, k);
                    }
                }
                _ => {}
            }
        }
    }
    replaced
}

/// The tokens current at the start of every reachable block, by forward dataflow to a fixpoint:
/// a block takes its predecessors' common token, or its own join token when they differ.
fn entry_tokens(
    func: &Function,
    effects: &FxHashMap<Value, Effect>,
) -> FxHashMap<BlockId, [Token; 4]> {
    let order = reverse_post_order(func);
    let initial: [Token; 4] = std::array::from_fn(Token::Entry);
    let mut exit: FxHashMap<BlockId, [Token; 4]> = FxHashMap::default();
    let mut entry: FxHashMap<BlockId, [Token; 4]> = FxHashMap::default();
    // Tokens only become joins as more paths are seen, so a few rounds settle; the cap keeps
    // a pathological CFG from taking long, with every join block then given its own token.
    let mut rounds_left = 2 * order.len() + 4;
    loop {
        rounds_left -= 1;
        let give_up = rounds_left == 0;
        let mut changed = false;
        for &b in &order {
            let tokens: [Token; 4] = if b == func.entry {
                initial
            } else {
                // Predecessors not reached yet (back edges, on the first round) say nothing.
                let incoming: Vec<[Token; 4]> = func
                    .predecessors(b)
                    .iter()
                    .filter_map(|p| exit.get(p).copied())
                    .collect();
                let joins = func.predecessors(b).len() > 1;
                std::array::from_fn(|k| {
                    let first = incoming.first().map_or(Token::Join(b, k), |t| t[k]);
                    if !(give_up && joins) && incoming.iter().all(|t| t[k] == first) {
                        first
                    } else {
                        Token::Join(b, k)
                    }
                })
            };
            let mut out = tokens;
            for v in &func.cfg[b].insts {
                match effects.get(v) {
                    Some(Effect::Store(k, ..)) => out[*k] = Token::After(*v, *k),
                    Some(Effect::Clobber(kinds)) => {
                        for &k in kinds {
                            out[k] = Token::After(*v, k);
                        }
                    }
                    _ => {}
                }
            }
            let entry_changed = entry.insert(b, tokens) != Some(tokens);
            let exit_changed = exit.insert(b, out) != Some(out);
            changed |= entry_changed || exit_changed;
        }
        if !changed || give_up {
            return entry;
        }
    }
}
