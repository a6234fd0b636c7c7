//! Equality saturation over the IR's pure dataflow, with the `egg` crate.
//!
//! A region of the IR (one basic block: [`region`]) becomes an e-graph of [`Node`]s: ALU
//! operations with their bit size and component count, constants, swizzles, pure intrinsics
//! (equal ones merge by hash-consing), and *leaves* for
//! every value the region does not compute purely (phis, intrinsics, texture results, values of
//! other blocks). The rule sets written in the rule DSL run on it through the matchers the rule
//! macro generates for the e-graph ([`rules`]), next to a few built-in equalities that let those
//! matchers see through swizzles. Extraction ([`extract`]) then picks one node per e-class under
//! a target's [`CostModel`], counting shared values once, and the region is rebuilt from the
//! choice.
//!
//! Swizzles are nodes of their own, so an ALU node's sources are e-classes read whole: a class
//! has one bit size and one component count ([`Facts`]), and `fadd(a.yx, b)` is
//! `fadd(swizzle[1,0](a), b)`. The built-in rules push swizzles through per-component
//! operations (`swizzle(fadd(a, b))` = `fadd(swizzle(a), swizzle(b))`), compose them, and drop
//! identities, so a rule rooted at an instruction that reads another one through a swizzle still
//! matches the pair.
//!
//! Memory has tokens, as in the `memory-cse` pass ([`crate::memory`]): the region's memory of
//! each kind starts as a [`Node::Memory`] token, every whole store makes a new token
//! ([`Node::Store`]), and every other write a fresh opaque one. A load is a [`Node::Load`] of
//! an address from the token current where it runs, in the class of its result
//! ([`Node::Loaded`]). So two loads of one address under one token are one node (hash-consing
//! merges them), and the memory rules prove `load(store(t, a, v), a) = v` and, for an address
//! `b` that `a` certainly does not overlap, `load(store(t, a, v), b) = load(t, b)`. The token
//! and load nodes are never extracted: what replaces a load is the earlier load or the stored
//! value its class was proved equal to.
//!
//! The e-class analysis ([`Facts`]) knows each class's shape, its constant value when it has one
//! (classes whose nodes fold are given a constant node), and the float range facts of
//! [`crate::rewrite::Range`] that rule conditions ask about.

pub mod cost;
pub mod extract;
pub mod region;
pub mod rules;

pub use cost::{CostModel, UnitCost};
pub use egg::Id;

use crate::memory::Address;
use crate::rewrite::{Range, alu_range};
use egg::{Analysis, DidMerge, Language};
use shrew_ops::eval::{Bits, mask};
use shrew_ops::{AluOp, Intrinsic};
use smallvec::SmallVec;
use std::fmt;

/// What the pure instructions of `shader` cost under `model`: the measure `eqsat` minimizes, for
/// comparing pipelines on a target.
pub fn shader_cost(shader: &crate::ir::Shader, model: &dyn CostModel) -> u64 {
    shader
        .functions
        .iter()
        .map(|func| {
            let uses = crate::uses::Uses::build(func);
            func.blocks()
                .into_iter()
                .map(|b| {
                    region::Region::build(func, &shader.variables, &uses, b, model).original_cost
                })
                .sum::<u64>()
        })
        .sum()
}

/// The e-graph of a region.
pub type EGraph = egg::EGraph<Node, FactsAnalysis>;

/// Children of a node: most operations have at most three sources.
pub type Children = SmallVec<[Id; 3]>;

/// A node of the e-graph language.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Node {
    /// An ALU operation producing `comps` components of `bits` bits, reading each source class
    /// whole. `exact` and `fp` are the instruction's `exact` flag and float controls.
    Alu {
        op: AluOp,
        bits: u8,
        comps: u8,
        exact: bool,
        fp: u8,
        srcs: Children,
    },
    /// A constant: raw bits per component.
    Const {
        bits: u8,
        values: SmallVec<[u64; 4]>,
    },
    /// Components `sel` of the source class, in that order.
    Swizzle {
        sel: SmallVec<[u8; 4]>,
        src: [Id; 1],
    },
    /// A pure intrinsic (system values, uniform and UBO loads, sizes: see
    /// [`crate::ir::IntrinsicInst::is_pure`]) with its indices, reading each source class whole.
    Intrinsic {
        op: Intrinsic,
        indices: SmallVec<[u32; 4]>,
        bits: u8,
        comps: u8,
        srcs: Children,
    },
    /// A value of the IR the region does not compute purely (by its number in the function).
    Leaf { value: u32, bits: u8, comps: u8 },
    /// The value a load instruction of the region reads: a leaf that costs what the load does,
    /// since the load goes once nothing reads it.
    Loaded { value: u32, bits: u8, comps: u8 },
    /// A memory token: memory of kind `kind` (an index into [`crate::memory::KINDS`]) as the
    /// region finds it (`after: None`) or after the instruction `after` clobbered it.
    Memory { kind: u8, after: Option<u32> },
    /// The memory token after a whole store of class `srcs[1]` at `address` (an index into the
    /// analysis's [`FactsAnalysis::addresses`]) into memory `srcs[0]`.
    Store { address: u32, srcs: [Id; 2] },
    /// What memory `src` holds at `address`: `comps` components of `bits` bits. Never extracted:
    /// its class also holds the load's [`Node::Loaded`], or what the memory rules proved equal.
    Load {
        address: u32,
        bits: u8,
        comps: u8,
        src: [Id; 1],
    },
}

impl Node {
    /// Whether extraction may choose the node: memory tokens and loads from them only exist to
    /// prove values equal.
    pub fn is_extractable(&self) -> bool {
        !matches!(
            self,
            Node::Memory { .. } | Node::Store { .. } | Node::Load { .. }
        )
    }
}

/// What e-matching and the class index key on: the variant, and the opcode of ALU nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Discriminant {
    Alu(AluOp),
    Const,
    Swizzle,
    Intrinsic(Intrinsic),
    Leaf,
    Loaded,
    Memory,
    Store,
    Load,
}

impl Language for Node {
    type Discriminant = Discriminant;

    fn discriminant(&self) -> Discriminant {
        match self {
            Node::Alu { op, .. } => Discriminant::Alu(*op),
            Node::Const { .. } => Discriminant::Const,
            Node::Swizzle { .. } => Discriminant::Swizzle,
            Node::Intrinsic { op, .. } => Discriminant::Intrinsic(*op),
            Node::Leaf { .. } => Discriminant::Leaf,
            Node::Loaded { .. } => Discriminant::Loaded,
            Node::Memory { .. } => Discriminant::Memory,
            Node::Store { .. } => Discriminant::Store,
            Node::Load { .. } => Discriminant::Load,
        }
    }

    fn matches(&self, other: &Node) -> bool {
        match (self, other) {
            (
                Node::Alu {
                    op,
                    bits,
                    comps,
                    exact,
                    fp,
                    ..
                },
                Node::Alu {
                    op: op2,
                    bits: bits2,
                    comps: comps2,
                    exact: exact2,
                    fp: fp2,
                    ..
                },
            ) => (op, bits, comps, exact, fp) == (op2, bits2, comps2, exact2, fp2),
            (Node::Swizzle { sel, .. }, Node::Swizzle { sel: sel2, .. }) => sel == sel2,
            (
                Node::Intrinsic {
                    op,
                    indices,
                    bits,
                    comps,
                    ..
                },
                Node::Intrinsic {
                    op: op2,
                    indices: indices2,
                    bits: bits2,
                    comps: comps2,
                    ..
                },
            ) => (op, indices, bits, comps) == (op2, indices2, bits2, comps2),
            (
                Node::Store { address, .. },
                Node::Store {
                    address: address2, ..
                },
            ) => address == address2,
            (
                Node::Load {
                    address,
                    bits,
                    comps,
                    ..
                },
                Node::Load {
                    address: address2,
                    bits: bits2,
                    comps: comps2,
                    ..
                },
            ) => (address, bits, comps) == (address2, bits2, comps2),
            _ => self == other,
        }
    }

    fn children(&self) -> &[Id] {
        match self {
            Node::Alu { srcs, .. } | Node::Intrinsic { srcs, .. } => srcs,
            Node::Swizzle { src, .. } | Node::Load { src, .. } => src,
            Node::Store { srcs, .. } => srcs,
            Node::Const { .. } | Node::Leaf { .. } | Node::Loaded { .. } | Node::Memory { .. } => {
                &[]
            }
        }
    }

    fn children_mut(&mut self) -> &mut [Id] {
        match self {
            Node::Alu { srcs, .. } | Node::Intrinsic { srcs, .. } => srcs,
            Node::Swizzle { src, .. } | Node::Load { src, .. } => src,
            Node::Store { srcs, .. } => srcs,
            Node::Const { .. } | Node::Leaf { .. } | Node::Loaded { .. } | Node::Memory { .. } => {
                &mut []
            }
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Alu { op, .. } => write!(f, "{}", op.name()),
            Node::Intrinsic { op, .. } => write!(f, "{}", op.info().name),
            Node::Const { values, .. } => write!(f, "{values:x?}"),
            Node::Swizzle { sel, .. } => {
                let names: String = sel
                    .iter()
                    .map(|&c| b"xyzwefghijklmnop"[c as usize] as char)
                    .collect();
                write!(f, "swizzle.{names}")
            }
            Node::Leaf { value, .. } | Node::Loaded { value, .. } => write!(f, "%{value}"),
            Node::Memory { kind, after } => match after {
                Some(v) => write!(f, "memory{kind}@%{v}"),
                None => write!(f, "memory{kind}"),
            },
            Node::Store { address, .. } => write!(f, "store@{address}"),
            Node::Load { address, .. } => write!(f, "load@{address}"),
        }
    }
}

/// What the analysis knows about an e-class.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    pub bits: u8,
    pub comps: u8,
    /// The raw value of every component, when the class is a constant.
    pub constant: Option<SmallVec<[u64; 4]>>,
    /// The float range facts of every component.
    pub range: Range,
}

/// The e-class analysis: shapes, constant folding and ranges; and the addresses the region's
/// memory nodes access, which the memory rules compare.
#[derive(Debug, Default)]
pub struct FactsAnalysis {
    pub addresses: Vec<Address>,
}

impl Analysis<Node> for FactsAnalysis {
    type Data = Facts;

    fn make(egraph: &mut EGraph, enode: &Node, _id: Id) -> Facts {
        let facts = |id: Id| &egraph[id].data;
        match enode {
            Node::Const { bits, values } => Facts {
                bits: *bits,
                comps: values.len() as u8,
                constant: Some(values.clone()),
                range: Range::of_constant(values, *bits),
            },
            Node::Leaf { bits, comps, .. }
            | Node::Intrinsic { bits, comps, .. }
            | Node::Loaded { bits, comps, .. }
            | Node::Load { bits, comps, .. } => Facts {
                bits: *bits,
                comps: *comps,
                constant: None,
                range: Range::UNKNOWN,
            },
            Node::Memory { .. } | Node::Store { .. } => Facts {
                bits: 0,
                comps: 0,
                constant: None,
                range: Range::UNKNOWN,
            },
            Node::Swizzle { sel, src } => {
                let from = facts(src[0]);
                let constant = from.constant.as_ref().and_then(|values| {
                    sel.iter()
                        .map(|&c| values.get(c as usize).copied())
                        .collect()
                });
                Facts {
                    bits: from.bits,
                    comps: sel.len() as u8,
                    constant,
                    range: from.range,
                }
            }
            Node::Alu {
                op,
                bits,
                comps,
                srcs,
                ..
            } => {
                let constant = fold(*op, *bits, *comps, srcs, &facts);
                let range = match &constant {
                    Some(values) => Range::of_constant(values, *bits),
                    None => alu_range(
                        *op,
                        *bits,
                        |i| facts(srcs[i]).bits,
                        srcs.len() >= 2 && srcs[0] == srcs[1],
                        |i| facts(srcs[i]).range,
                    ),
                };
                Facts {
                    bits: *bits,
                    comps: *comps,
                    constant,
                    range,
                }
            }
        }
    }

    fn merge(&mut self, a: &mut Facts, b: Facts) -> DidMerge {
        let mut changed_a = false;
        if a.constant.is_none() && b.constant.is_some() {
            a.constant = b.constant.clone();
            changed_a = true;
        }
        let range = a.range.meet(b.range);
        if range != a.range {
            a.range = range;
            changed_a = true;
        }
        let b_learned = b.constant.is_none() && a.constant.is_some() || range != b.range;
        DidMerge(changed_a, b_learned)
    }

    /// A class that is a constant holds the constant's node, so matchers and extraction see it.
    fn modify(egraph: &mut EGraph, id: Id) {
        let facts = &egraph[id].data;
        if let Some(values) = facts.constant.clone() {
            let node = Node::Const {
                bits: facts.bits,
                values,
            };
            let constant = egraph.add(node);
            egraph.union(id, constant);
        }
    }
}

/// The value of ALU node `op` when its sources are constants, with the opcode table's semantics
/// (what the interpreter computes). `None` for operations that need invocation context.
fn fold<'a>(
    op: AluOp,
    bits: u8,
    comps: u8,
    srcs: &[Id],
    facts: &impl Fn(Id) -> &'a Facts,
) -> Option<SmallVec<[u64; 4]>> {
    let values: Vec<&[u64]> = srcs
        .iter()
        .map(|&s| facts(s).constant.as_deref())
        .collect::<Option<_>>()?;
    let info = op.info();
    let first = info
        .first_unsized_src()
        .and_then(|i| srcs.get(i))
        .map(|&s| facts(s).bits);
    let src_bits = info.src_bit_sizes(bits, first);
    let mut out: SmallVec<[u64; 4]> = SmallVec::from_elem(0, comps as usize);
    op.eval(
        &values,
        Bits {
            src: &src_bits,
            dst: bits,
        },
        &mut out,
    )
    .then(|| out.into_iter().map(|v| mask(v, bits)).collect())
}
