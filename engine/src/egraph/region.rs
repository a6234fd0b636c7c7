//! A basic block as an e-graph, and back.
//!
//! [`Region::build`] turns the block's pure instructions (ALU operations, constants and pure
//! intrinsics such as system values and UBO loads) into nodes; everything else in the block
//! (phis, other intrinsics, texture operations, derefs, calls, undefs) stays where it is as the
//! region's *skeleton*, and the values it defines, like the values of other blocks, are leaves. Loads and stores of memory with tokens
//! ([`crate::memory`]) also become memory nodes, so that a load's class can learn the value it
//! reads; they stay in the skeleton too, and a load nothing reads any more goes with dead-code
//! elimination. The *roots* are the pure values and loads something other than the block's
//! pure instructions reads: a skeleton instruction, the terminator, another block.
//!
//! [`Region::rebuild`] replaces the block's pure instructions with the extracted choice: walking
//! the skeleton in order, it emits the chosen computation of each root just before the first
//! skeleton instruction that reads it (the rest at the end of the block), each class once, and
//! swizzle nodes become the swizzles of the sources that read them. Extraction only chooses a
//! node where its class is first available ([`super::extract`]), so every emitted instruction
//! follows the leaves it reads.

use super::extract::Choice;
use super::{CostModel, EGraph, FactsAnalysis, Node};
use crate::ir::{
    Alu, AluSrc, BlockId, FpFlags, Function, IDENTITY_SWIZZLE, Inst, InstKind, IntrinsicInst,
    ValType, Value, Variable,
};
use crate::memory::{Address, Effect, KINDS, effect};
use crate::uses::{User, Uses};
use egg::Id;
use shrew_ops::AluOp;
use smallvec::SmallVec;
use std::collections::{HashMap, HashSet};

/// One block as an e-graph.
pub struct Region {
    pub block: BlockId,
    pub egraph: EGraph,
    /// The class of every pure value and load of the block, and of the leaves read so far.
    class_of: HashMap<Value, Id>,
    /// The pure values and loads read outside the block's pure instructions, with their
    /// classes.
    pub roots: Vec<(Value, Id)>,
    /// For the block's skeleton values, one more than their index in the block: a leaf of
    /// theirs is available from there. Values of other blocks are available from 0.
    positions: HashMap<Value, u32>,
    /// What the block's pure instructions cost now, under the model the region was built with.
    pub original_cost: u64,
}

/// Whether an instruction becomes nodes of the region.
fn is_pure(inst: &Inst) -> bool {
    let pure = match &inst.kind {
        InstKind::Alu(_) | InstKind::Const(_) => true,
        InstKind::Intrinsic(intrinsic) => intrinsic.is_pure(),
        _ => false,
    };
    pure && inst.def.is_some()
}

impl Region {
    /// The region of `block`, whose memory accesses reach `variables`.
    pub fn build(
        func: &Function,
        variables: &[Variable],
        uses: &Uses,
        block: BlockId,
        model: &dyn CostModel,
    ) -> Region {
        let mut region = Region {
            block,
            egraph: EGraph::new(FactsAnalysis::default()),
            class_of: HashMap::new(),
            roots: Vec::new(),
            positions: HashMap::new(),
            original_cost: 0,
        };
        let mut memory = Memory::default();
        let mut loads = HashSet::new();
        let insts = &func.cfg[block].insts;
        for (index, &v) in insts.iter().enumerate() {
            let inst = func.inst(v);
            if !is_pure(inst) {
                region.positions.insert(v, index as u32 + 1);
                let effect = effect(variables, func, v);
                if let Some(loaded) = region.access_memory(func, &mut memory, v, effect)
                    && !uses.users(v).is_empty()
                {
                    loads.insert(v);
                    let facts = &region.egraph[region.class_of[&v]].data;
                    region.original_cost += model.cost(&loaded, facts) as u64;
                }
                continue;
            }
            let def = inst.def.expect("pure instructions define a value");
            let class = match &inst.kind {
                InstKind::Const(values) => {
                    let node = Node::Const {
                        bits: def.bits,
                        values: values.iter().copied().collect(),
                    };
                    region.add_priced(node, model)
                }
                InstKind::Alu(alu) if alu.op == AluOp::Mov => {
                    region.read(func, &alu.srcs[0], def.comps)
                }
                InstKind::Intrinsic(intrinsic) => {
                    let srcs = intrinsic
                        .srcs
                        .iter()
                        .map(|&src| region.value(func, src))
                        .collect();
                    let node = Node::Intrinsic {
                        op: intrinsic.op,
                        indices: intrinsic.indices.iter().copied().collect(),
                        bits: def.bits,
                        comps: def.comps,
                        srcs,
                    };
                    region.add_priced(node, model)
                }
                InstKind::Alu(alu) => {
                    let srcs = alu
                        .srcs
                        .iter()
                        .enumerate()
                        .map(|(i, src)| region.read(func, src, alu.src_components(i, def)))
                        .collect();
                    let node = Node::Alu {
                        op: alu.op,
                        bits: def.bits,
                        comps: def.comps,
                        exact: alu.exact,
                        fp: alu.fp.0,
                        srcs,
                    };
                    region.add_priced(node, model)
                }
                _ => unreachable!("is_pure"),
            };
            region.class_of.insert(v, class);
        }
        let pure_here = |user: &User| match user {
            User::Inst(u) => {
                let inst = func.inst(*u);
                inst.block == block && is_pure(inst)
            }
            User::Terminator(_) => false,
        };
        for &v in insts {
            if let Some(&class) = region.class_of.get(&v)
                && (!region.positions.contains_key(&v) || loads.contains(&v))
                && !uses.users(v).iter().all(pure_here)
            {
                region.roots.push((v, class));
            }
        }
        region.egraph.rebuild();
        region
    }

    /// Adds the node of a pure instruction, counting what it costs now.
    fn add_priced(&mut self, node: Node, model: &dyn CostModel) -> Id {
        let class = self.egraph.add(node.clone());
        self.original_cost += model.cost(&node, &self.egraph[class].data) as u64;
        class
    }

    /// Adds what skeleton instruction `v` does to memory. For a load, returns its
    /// [`Node::Loaded`], in the class it now has.
    fn access_memory(
        &mut self,
        func: &Function,
        memory: &mut Memory,
        v: Value,
        effect: Effect,
    ) -> Option<Node> {
        match effect {
            Effect::Load(kind, address) => {
                let def = func.inst(v).def.expect("a load defines a value");
                let node = Node::Load {
                    address: memory.intern(&mut self.egraph, address),
                    bits: def.bits,
                    comps: def.comps,
                    src: [memory.token(&mut self.egraph, kind)],
                };
                let loaded = Node::Loaded {
                    value: v.0,
                    bits: def.bits,
                    comps: def.comps,
                };
                let class = self.egraph.add(node);
                let leaf = self.egraph.add(loaded.clone());
                self.egraph.union(class, leaf);
                self.class_of.insert(v, self.egraph.find(class));
                Some(loaded)
            }
            Effect::Store(kind, address, data) => {
                let node = Node::Store {
                    address: memory.intern(&mut self.egraph, address),
                    srcs: [memory.token(&mut self.egraph, kind), self.value(func, data)],
                };
                memory.tokens[kind] = Some(self.egraph.add(node));
                None
            }
            Effect::Clobber(kinds) => {
                for kind in kinds {
                    let node = Node::Memory {
                        kind: kind as u8,
                        after: Some(v.0),
                    };
                    memory.tokens[kind] = Some(self.egraph.add(node));
                }
                None
            }
            Effect::None => None,
        }
    }

    /// The class of `src` read with `comps` components: its value's class, through a swizzle
    /// node unless it reads the whole value in order.
    fn read(&mut self, func: &Function, src: &AluSrc, comps: u8) -> Id {
        let whole = self.value(func, src.value);
        let value_comps = self.egraph[whole].data.comps;
        let sel = &src.swizzle[..comps as usize];
        if comps == value_comps && sel == &IDENTITY_SWIZZLE[..comps as usize] {
            return whole;
        }
        self.egraph.add(Node::Swizzle {
            sel: sel.into(),
            src: [whole],
        })
    }

    /// The class of a value: a pure value of the block already seen, or a leaf.
    fn value(&mut self, func: &Function, v: Value) -> Id {
        if let Some(&class) = self.class_of.get(&v) {
            return class;
        }
        let ty = func.value_type(v).unwrap_or(ValType::scalar(32));
        let class = self.egraph.add(Node::Leaf {
            value: v.0,
            bits: ty.bits,
            comps: ty.comps,
        });
        self.class_of.insert(v, class);
        class
    }

    /// Where a node becomes available (see [`super::extract`]).
    pub fn position(&self, node: &Node) -> u32 {
        match node {
            Node::Leaf { value, .. } | Node::Loaded { value, .. } => {
                self.positions.get(&Value(*value)).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// The cost of the roots under `choice`, or `None` when a root has no choice.
    pub fn extracted_cost(&self, choice: &Choice) -> Option<u64> {
        choice.dag_cost(&self.egraph, self.roots.iter().map(|&(_, c)| c))
    }

    /// Replaces the block's pure instructions with `choice`.
    pub fn rebuild(&self, func: &mut Function, choice: &Choice) {
        let old = std::mem::take(&mut func.cfg[self.block].insts);
        let mut emit = Emitter {
            region: self,
            choice,
            block: self.block,
            insts: Vec::with_capacity(old.len()),
            made: HashMap::new(),
        };
        let root_class: HashMap<Value, Id> = self.roots.iter().copied().collect();
        let mut replaced: HashMap<Value, Value> = HashMap::new();
        for &v in &old {
            if self.class_of.contains_key(&v) && !self.positions.contains_key(&v) {
                continue;
            }
            if !matches!(func.inst(v).kind, InstKind::Phi(_)) {
                for src in func.inst_sources(v) {
                    if let Some(&class) = root_class.get(&src) {
                        let new = emit.value(func, class);
                        replaced.insert(src, new);
                    }
                }
            }
            emit.insts.push(v);
        }
        for &(v, class) in &self.roots {
            let new = emit.value(func, class);
            replaced.insert(v, new);
        }
        func.cfg[self.block].insts = emit.insts;
        for &v in &old {
            if self.class_of.contains_key(&v) && !self.positions.contains_key(&v) {
                func.insts[v.index()] = None;
            }
        }
        let resolve = |v: &mut Value| {
            if let Some(&new) = replaced.get(v) {
                *v = new;
            }
        };
        for inst in func.insts.iter_mut().flatten() {
            inst.kind.for_each_src_mut(resolve);
        }
        for block in func.cfg.node_weights_mut() {
            if let Some(v) = block.terminator.as_mut().and_then(|t| t.src_mut()) {
                resolve(v);
            }
        }
    }
}

/// The memory state while a region is built: the current token of every kind, and the addresses
/// interned so far.
#[derive(Default)]
struct Memory {
    tokens: [Option<Id>; KINDS.len()],
    addresses: HashMap<Address, u32>,
}

impl Memory {
    /// The token of `kind` now: the memory as the region finds it, until something writes it.
    fn token(&mut self, egraph: &mut EGraph, kind: usize) -> Id {
        *self.tokens[kind].get_or_insert_with(|| {
            egraph.add(Node::Memory {
                kind: kind as u8,
                after: None,
            })
        })
    }

    /// The number of `address` in the analysis's address table.
    fn intern(&mut self, egraph: &mut EGraph, address: Address) -> u32 {
        let table = &mut egraph.analysis.addresses;
        *self.addresses.entry(address).or_insert_with_key(|address| {
            table.push(address.clone());
            table.len() as u32 - 1
        })
    }
}

/// Emits the chosen computation of classes, each once.
struct Emitter<'a> {
    region: &'a Region,
    choice: &'a Choice,
    block: BlockId,
    insts: Vec<Value>,
    made: HashMap<Id, Value>,
}

impl Emitter<'_> {
    fn node(&self, class: Id) -> &Node {
        self.choice
            .node(&self.region.egraph, class)
            .expect("extraction chose a node for every class the roots need")
    }

    /// A value holding `class`.
    fn value(&mut self, func: &mut Function, class: Id) -> Value {
        let class = self.region.egraph.find(class);
        if let Some(&v) = self.made.get(&class) {
            return v;
        }
        let facts = &self.region.egraph[class].data;
        let def = ValType::new(facts.bits, facts.comps);
        let v = match self.node(class).clone() {
            Node::Leaf { value, .. } | Node::Loaded { value, .. } => Value(value),
            Node::Memory { .. } | Node::Store { .. } | Node::Load { .. } => {
                unreachable!("extraction never chooses memory nodes")
            }
            Node::Const { values, .. } => self.push(func, InstKind::Const(values.to_vec()), def),
            Node::Swizzle { .. } => {
                let src = self.read(func, class);
                let mov = Alu {
                    op: AluOp::Mov,
                    srcs: vec![src],
                    exact: false,
                    fp: FpFlags::default(),
                };
                self.push(func, InstKind::Alu(mov), def)
            }
            Node::Intrinsic {
                op, indices, srcs, ..
            } => {
                let srcs = srcs.iter().map(|&s| self.value(func, s)).collect();
                let intrinsic = IntrinsicInst {
                    op,
                    srcs,
                    indices: indices.to_vec(),
                };
                self.push(func, InstKind::Intrinsic(intrinsic), def)
            }
            Node::Alu {
                op,
                exact,
                fp,
                srcs,
                ..
            } => {
                let srcs: SmallVec<[AluSrc; 3]> =
                    srcs.iter().map(|&s| self.read(func, s)).collect();
                let alu = Alu {
                    op,
                    srcs: srcs.to_vec(),
                    exact,
                    fp: FpFlags(fp),
                };
                self.push(func, InstKind::Alu(alu), def)
            }
        };
        self.made.insert(class, v);
        v
    }

    /// `class` as an ALU source: swizzle nodes fold into the source's swizzle.
    fn read(&mut self, func: &mut Function, class: Id) -> AluSrc {
        let class = self.region.egraph.find(class);
        if let Node::Swizzle { sel, src } = self.node(class).clone() {
            let inner = self.read(func, src[0]);
            let mut swizzle = IDENTITY_SWIZZLE;
            for (k, &c) in sel.iter().enumerate() {
                swizzle[k] = inner.swizzle[c as usize];
            }
            return AluSrc {
                value: inner.value,
                swizzle,
            };
        }
        AluSrc::new(self.value(func, class))
    }

    fn push(&mut self, func: &mut Function, kind: InstKind, def: ValType) -> Value {
        let v = func.alloc_inst(Inst {
            kind,
            def: Some(def),
            block: self.block,
        });
        self.insts.push(v);
        v
    }
}
