//! What instructions do to the memory that has *tokens*: SSBOs, images, shared and global
//! memory. A load reads the memory of its kind at an [`Address`]; a whole store writes one; any
//! other write (atomics, barriers, partial or volatile stores, calls) clobbers the kinds it
//! touches, so nothing is known about them afterwards. [`disjoint`] says when two addresses
//! certainly do not overlap.
//!
//! Two clients build on this: the `memory-cse` pass, which threads tokens through the CFG, and
//! the e-graph regions ([`crate::egraph::region`]), where loads and stores become nodes and the
//! memory rules forward stores to loads.

use crate::ir::{Function, InstKind, Mode, ValType, Value, Variable};
use crate::passes::vars::{DerefPath, PathStep};
use shrew_ops::{
    ACCESS_COHERENT, ACCESS_RESTRICT, ACCESS_VOLATILE, IndexKind, Intrinsic, MemClass,
};

/// The kinds of memory that have tokens.
pub const KINDS: [MemClass; 4] = [
    MemClass::SSBO,
    MemClass::IMAGE,
    MemClass::SHARED,
    MemClass::GLOBAL,
];

/// An operand of an address: a constant or some other value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Const(u64),
    Value(Value),
}

/// Where an access goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Address {
    /// A deref chain, and whether no other variable reaches its memory.
    Deref { path: DerefPath, restrict: bool },
    /// A buffer, shared-memory or global address: the intrinsic family, the operands naming
    /// the memory, the byte offset and the size.
    Offset {
        family: Intrinsic,
        memory: Vec<Operand>,
        offset: Operand,
        bytes: u64,
    },
    /// An image texel: the load's operands.
    Texel(Vec<Operand>),
}

/// What an instruction does to token-carrying memory.
pub enum Effect {
    /// Reads `kind` at an address, mergeable.
    Load(usize, Address),
    /// Writes the whole value `data` at an address of `kind`.
    Store(usize, Address, Value),
    /// Writes `kinds` in a way nothing is known about afterwards.
    Clobber(Vec<usize>),
    None,
}

/// Whether two addresses certainly do not overlap.
pub fn disjoint(a: &Address, b: &Address) -> bool {
    match (a, b) {
        (
            Address::Deref {
                path: pa,
                restrict: ra,
            },
            Address::Deref {
                path: pb,
                restrict: rb,
            },
        ) => {
            if pa.var != pb.var {
                // Distinct shared variables never overlap; distinct SSBOs only when declared so.
                return *ra && *rb;
            }
            pa.steps.iter().zip(&pb.steps).any(|pair| match pair {
                (PathStep::Const(x), PathStep::Const(y)) => x != y,
                (PathStep::Member(x), PathStep::Member(y)) => x != y,
                _ => false,
            })
        }
        (
            Address::Offset {
                family: fa,
                memory: ma,
                offset: Operand::Const(oa),
                bytes: na,
            },
            Address::Offset {
                family: fb,
                memory: mb,
                offset: Operand::Const(ob),
                bytes: nb,
            },
        ) => fa == fb && ma == mb && (oa + na <= *ob || ob + nb <= *oa),
        _ => false,
    }
}

/// The token kind of a class of memory.
pub fn kind_of(class: MemClass) -> Option<usize> {
    KINDS.iter().position(|&k| class.contains(k))
}

/// What an instruction does to the memory this pass tracks.
pub fn effect(variables: &[Variable], func: &Function, v: Value) -> Effect {
    let clobber_all = || Effect::Clobber((0..KINDS.len()).collect());
    let intr = match &func.inst(v).kind {
        InstKind::Intrinsic(i) => i,
        InstKind::Call { .. } => return clobber_all(),
        _ => return Effect::None,
    };
    let info = intr.op.info();
    let access = intr.index(IndexKind::Access).unwrap_or(0);
    let mergeable = access & (ACCESS_VOLATILE | ACCESS_COHERENT) == 0;
    let operand = |value: Value| match &func.inst(value).kind {
        InstKind::Const(c) if c.len() == 1 => Operand::Const(c[0]),
        _ => Operand::Value(value),
    };
    let bytes = |value: Value| {
        func.value_type(value)
            .map_or(0, |t: ValType| t.comps as u64 * t.bits.div_ceil(8) as u64)
    };
    // The kind of a deref's variable, with its address.
    let deref = |d: Value| -> Option<(usize, Address)> {
        let path = DerefPath::of(func, d)?;
        let kind = match variables.get(path.var.0 as usize)?.mode {
            Mode::Ssbo => kind_of(MemClass::SSBO)?,
            Mode::Shared => kind_of(MemClass::SHARED)?,
            _ => return None,
        };
        let restrict = kind == kind_of(MemClass::SHARED)? || access & ACCESS_RESTRICT != 0;
        Some((kind, Address::Deref { path, restrict }))
    };
    let whole_store = |data: Value| {
        let comps = func.value_type(data).map_or(0, |t| t.comps);
        intr.index(IndexKind::WriteMask)
            .is_none_or(|mask| mask == (1u32 << comps) - 1)
    };
    // Loads and stores of one family share addresses: the operands naming the memory, the
    // `base` index, the offset (the last source) and the size.
    let offset_address = |family: Intrinsic, memory: &[Value], bytes: u64| Address::Offset {
        family,
        memory: memory
            .iter()
            .map(|&m| operand(m))
            .chain([Operand::Const(
                intr.index(IndexKind::Base).unwrap_or(0) as u64
            )])
            .collect(),
        offset: operand(*intr.srcs.last().expect("a memory access has an offset")),
        bytes,
    };
    let n = intr.srcs.len();
    match intr.op {
        Intrinsic::LoadDeref => match deref(intr.srcs[0]) {
            Some((kind, address)) if mergeable => Effect::Load(kind, address),
            _ => Effect::None,
        },
        Intrinsic::StoreDeref => match deref(intr.srcs[0]) {
            Some((kind, address)) if mergeable && whole_store(intr.srcs[1]) => {
                Effect::Store(kind, address, intr.srcs[1])
            }
            Some((kind, _)) => Effect::Clobber(vec![kind]),
            None => Effect::None,
        },
        Intrinsic::LoadSsbo | Intrinsic::LoadShared | Intrinsic::LoadGlobal if mergeable => {
            let kind = kind_of(info.reads).expect("a memory load reads a tracked kind");
            Effect::Load(kind, offset_address(intr.op, &intr.srcs[..n - 1], bytes(v)))
        }
        Intrinsic::StoreSsbo | Intrinsic::StoreShared | Intrinsic::StoreGlobal
            if mergeable && whole_store(intr.srcs[0]) =>
        {
            let family = match intr.op {
                Intrinsic::StoreSsbo => Intrinsic::LoadSsbo,
                Intrinsic::StoreShared => Intrinsic::LoadShared,
                _ => Intrinsic::LoadGlobal,
            };
            let kind = kind_of(info.writes).expect("a memory store writes a tracked kind");
            let data = intr.srcs[0];
            Effect::Store(
                kind,
                offset_address(family, &intr.srcs[1..n - 1], bytes(data)),
                data,
            )
        }
        Intrinsic::ImageDerefLoad if mergeable => Effect::Load(
            kind_of(MemClass::IMAGE).expect("images are tracked"),
            Address::Texel(
                intr.srcs
                    .iter()
                    .map(|&s| operand(s))
                    .chain(intr.indices.iter().map(|&i| Operand::Const(i as u64)))
                    .collect(),
            ),
        ),
        _ => {
            let mut kinds: Vec<usize> = (0..KINDS.len())
                .filter(|&k| info.writes.contains(KINDS[k]))
                .collect();
            if info.writes.contains(MemClass::VARIABLE)
                && let Some((kind, _)) = intr.srcs.first().and_then(|&d| deref(d))
            {
                kinds.push(kind);
            }
            if kinds.is_empty() {
                Effect::None
            } else {
                Effect::Clobber(kinds)
            }
        }
    }
}
