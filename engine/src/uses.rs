//! Use lists: for every SSA value, the places that read it.
//!
//! The IR keeps only def→use edges (an instruction lists its sources), so passes that ask "how
//! many uses does this value have?" or "who reads it?" build a [`Uses`] once and keep it up to date
//! as they rewrite. A use is counted once per source slot: `fmul %a, %a` uses `%a` twice, as NIR
//! counts uses. Block terminators (branch conditions, returned values) are users too.

use crate::ir::{BlockId, Function, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Something that reads a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum User {
    Inst(Value),
    /// The terminator of a block: a branch condition or a returned value.
    Terminator(BlockId),
}

/// Users of every value of one function, one entry per source slot.
#[derive(Clone, Debug, Default)]
pub struct Uses {
    users: Vec<Vec<User>>,
    /// For a value whose list grew long and lost a user, where each user's entries are in it:
    /// forgetting a use then finds it at once instead of searching the list (a uniform or a
    /// constant read by every instruction of a long chain would make each deletion a walk over
    /// all of them).
    positions: FxHashMap<Value, FxHashMap<User, SmallVec<[u32; 2]>>>,
}

/// How long a use list is before forgetting one of its uses indexes it.
const INDEXED_FROM: usize = 32;

impl Uses {
    /// The use lists of every live instruction and terminator of `func`.
    pub fn build(func: &Function) -> Uses {
        let mut uses = Uses::default();
        for b in func.blocks() {
            for &v in &func.cfg[b].insts {
                for src in func.inst_sources(v) {
                    uses.add(src, User::Inst(v));
                }
            }
            if let Some(mut term) = func.cfg[b].terminator.clone()
                && let Some(&mut src) = term.src_mut()
            {
                uses.add(src, User::Terminator(b));
            }
        }
        uses
    }

    pub fn users(&self, v: Value) -> &[User] {
        self.users.get(v.index()).map_or(&[], Vec::as_slice)
    }

    pub fn count(&self, v: Value) -> usize {
        self.users(v).len()
    }

    /// Records that `user` reads `v` in one more source slot.
    pub fn add(&mut self, v: Value, user: User) {
        if self.users.len() <= v.index() {
            self.users.resize_with(v.index() + 1, Vec::new);
        }
        let list = &mut self.users[v.index()];
        if let Some(positions) = self.positions.get_mut(&v) {
            positions.entry(user).or_default().push(list.len() as u32);
        }
        list.push(user);
    }

    /// Forgets one source slot of `user` reading `v`.
    pub fn remove(&mut self, v: Value, user: User) {
        let Some(list) = self.users.get_mut(v.index()) else {
            return;
        };
        if list.len() >= INDEXED_FROM && !self.positions.contains_key(&v) {
            let mut positions: FxHashMap<User, SmallVec<[u32; 2]>> = FxHashMap::default();
            for (i, &u) in list.iter().enumerate() {
                positions.entry(u).or_default().push(i as u32);
            }
            self.positions.insert(v, positions);
        }
        let Some(positions) = self.positions.get_mut(&v) else {
            if let Some(i) = list.iter().position(|&u| u == user) {
                list.swap_remove(i);
            }
            return;
        };
        let Some(i) = positions.get_mut(&user).and_then(SmallVec::pop) else {
            return;
        };
        let last = list.len() - 1;
        list.swap_remove(i as usize);
        // The last entry moved into the hole: its position changes from `last` to `i`.
        if i as usize != last {
            let moved = list[i as usize];
            let at = positions
                .get_mut(&moved)
                .and_then(|p| p.iter_mut().find(|p| **p as usize == last))
                .expect("every entry of an indexed list has its position");
            *at = i;
        }
    }

    /// Redirects every use of `old` to `new`, in the IR and in the lists.
    pub fn replace_all(&mut self, func: &mut Function, old: Value, new: Value) {
        self.positions.remove(&old);
        let users = self.users.get_mut(old.index()).map(std::mem::take);
        for user in users.into_iter().flatten() {
            match user {
                User::Inst(u) => func.inst_mut(u).kind.for_each_src_mut(|s| {
                    if *s == old {
                        *s = new;
                    }
                }),
                User::Terminator(b) => {
                    if let Some(term) = func.cfg[b].terminator.as_mut()
                        && let Some(s) = term.src_mut()
                    {
                        *s = new;
                    }
                }
            }
            self.add(new, user);
        }
    }

    /// Forgets the uses instruction `v` makes of its sources, before it is deleted.
    pub fn forget_sources(&mut self, func: &Function, v: Value) {
        debug_assert_eq!(self.count(v), 0, "removing {v}, which is still used");
        for src in func.inst_sources(v) {
            self.remove(src, User::Inst(v));
        }
    }

    /// Deletes instruction `v`, which must have no uses, and forgets its own uses.
    pub fn remove_inst(&mut self, func: &mut Function, v: Value) {
        self.forget_sources(func, v);
        let block = func.inst(v).block;
        func.cfg[block].insts.retain(|&i| i != v);
        func.insts[v.index()] = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builder, FuncId, Shader, Stage};
    use shrew_ops::AluOp;

    #[test]
    fn counts_source_slots_and_terminators_and_follows_rewrites() {
        let mut shader = Shader::new(Stage::Compute);
        let mut b = Builder::new(&mut shader, FuncId(0));
        let x = b.imm_f32(2.0);
        let sq = b.alu(AluOp::Fmul, &[x, x]);
        let neg = b.alu(AluOp::Fneg, &[sq]);
        let cond = b.alu(AluOp::Flt, &[neg, x]);
        let nif = b.push_if(cond);
        b.pop_if(nif);
        b.ret(None);
        let func = &mut shader.functions[0];
        let mut uses = Uses::build(func);
        assert_eq!(uses.count(x), 3);
        assert_eq!(uses.count(sq), 1);
        let header = func.inst(cond).block;
        assert_eq!(uses.users(cond), &[User::Terminator(header)]);

        uses.replace_all(func, neg, sq);
        assert_eq!(uses.count(neg), 0);
        assert_eq!(uses.count(sq), 2);
        assert_eq!(func.inst_sources(cond), vec![sq, x]);
        uses.remove_inst(func, neg);
        assert_eq!(uses.count(sq), 1);
        assert!(func.get_inst(neg).is_none());
        assert!(crate::verify::verify_function(&shader, FuncId(0)).is_ok());
    }

    #[test]
    fn long_use_lists_forget_uses_as_short_ones_do() {
        // Random adds and removes on a few values, some with hundreds of users (indexed), some
        // with repeated users (one instruction reading a value in several slots), checked
        // against plain lists.
        let mut rng = crate::rng::Rng::new(7);
        let mut uses = Uses::default();
        let mut model: Vec<Vec<User>> = vec![Vec::new(); 4];
        for _ in 0..20_000 {
            let v = rng.below(4);
            let user = User::Inst(Value(rng.below(if v == 0 { 8 } else { 300 }) as u32));
            if rng.below(3) == 0 {
                uses.remove(Value(v as u32), user);
                if let Some(i) = model[v].iter().position(|&u| u == user) {
                    model[v].remove(i);
                }
            } else {
                uses.add(Value(v as u32), user);
                model[v].push(user);
            }
            let multiset = |list: &[User]| {
                let mut counts: FxHashMap<User, usize> = FxHashMap::default();
                for &u in list {
                    *counts.entry(u).or_default() += 1;
                }
                counts
            };
            assert_eq!(
                multiset(uses.users(Value(v as u32))),
                multiset(&model[v]),
                "the users of %{v}"
            );
        }
        assert!(uses.positions.len() >= 3, "the long lists were indexed");
    }
}
