//! The primitives generated rule functions are made of: matching a pattern node at a position,
//! binding variables, checking constants, and building replacement instructions.

use super::RangeCache;
use crate::ir::fold::fold_alu;
use crate::ir::{Alu, AluSrc, FpFlags, Function, IDENTITY_SWIZZLE, Inst, InstKind, ValType, Value};
use crate::uses::{User, Uses};
use rustc_hash::FxHashMap;
use shrew_ops::eval::{fget, fput, mask};
use shrew_ops::{AluOp, BaseType, ConvFamily, MAX_COMPONENTS};
use smallvec::SmallVec;

/// A value read through a swizzle: a position in the matched tree, a bound variable, or a source
/// of a replacement instruction. Only the first `comps` swizzle entries are meaningful.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Src {
    pub value: Value,
    pub swizzle: [u8; MAX_COMPONENTS],
    pub comps: u8,
}

impl Src {
    /// The read components, in order.
    pub fn read(&self) -> &[u8] {
        &self.swizzle[..self.comps as usize]
    }
}

/// What feeds an instruction's source, as the generated dispatchers see it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SrcKind {
    Alu(AluOp),
    Const,
    /// Anything else, or no such source.
    #[default]
    Other,
}

impl SrcKind {
    fn of(func: &Function, v: Value) -> SrcKind {
        match func.get_inst(v).map(|inst| &inst.kind) {
            Some(InstKind::Alu(alu)) => SrcKind::Alu(alu.op),
            Some(InstKind::Const(_)) => SrcKind::Const,
            _ => SrcKind::Other,
        }
    }
}

/// What feeds an instruction's sources: `src[i]` is the kind of source `i`.
#[derive(Copy, Clone, Debug, Default)]
pub struct Shape {
    pub src: [SrcKind; 4],
}

impl Shape {
    fn read(func: &Function, v: Value) -> Shape {
        let mut shape = Shape::default();
        if let Some(InstKind::Alu(alu)) = func.get_inst(v).map(|inst| &inst.kind) {
            for (kind, src) in shape.src.iter_mut().zip(&alu.srcs) {
                *kind = SrcKind::of(func, src.value);
            }
        }
        shape
    }
}

/// What conditions may look at: the function, its use lists and the range analysis.
#[derive(Copy, Clone)]
pub struct Ctx<'a> {
    pub func: &'a Function,
    pub uses: &'a Uses,
    pub ranges: &'a RangeCache,
}

/// Where the instructions a pass builds go in their blocks: each right before the root it
/// replaces, in the order built. Placement is recorded during the pass and applied once at its
/// end, because inserting into a block's instruction list at once would search the list for
/// the root on every build, which is quadratic on large blocks. Until [`Placements::apply`],
/// the block lists miss the built instructions and still hold deleted ones; nothing a rule looks
/// at reads them.
#[derive(Default)]
pub struct Placements {
    before: FxHashMap<Value, Vec<Value>>,
}

impl Placements {
    /// Rebuilds every block's instruction list: the instructions placed before each one, then
    /// the instruction itself unless it was deleted.
    pub fn apply(mut self, func: &mut Function) {
        for block in func.blocks() {
            let old = std::mem::take(&mut func.cfg[block].insts);
            let mut insts = Vec::with_capacity(old.len());
            // (instruction, whatever was placed before it is already emitted)
            let mut stack: Vec<(Value, bool)> = old.into_iter().rev().map(|v| (v, false)).collect();
            while let Some((v, expanded)) = stack.pop() {
                if !expanded && let Some(placed) = self.before.remove(&v) {
                    stack.push((v, true));
                    stack.extend(placed.into_iter().rev().map(|p| (p, false)));
                } else if func.get_inst(v).is_some() {
                    insts.push(v);
                }
            }
            func.cfg[block].insts = insts;
        }
    }
}

/// What a match attempt has bound so far, to go back to before trying another operand order.
#[derive(Copy, Clone)]
pub struct Checkpoint {
    bound: u16,
    exact_seen: bool,
}

/// Matches rules against one function and builds their replacements.
///
/// A rule function calls [`Rewriter::begin`], then the matching primitives, each of which
/// returns `false` to reject. Before trying the operand orders of a commutative node it takes a
/// [`Checkpoint`], and it rewinds to it before each order. On success it builds the replacement
/// with the building primitives, which place new instructions before the root (see
/// [`Placements`]).
pub struct Rewriter<'a> {
    pub func: &'a mut Function,
    pub uses: &'a mut Uses,
    pub ranges: &'a RangeCache,
    placements: &'a mut Placements,
    enabled: &'a [bool],
    root: Value,
    root_type: ValType,
    /// Variable bindings of the current attempt: entry `i` is meaningful when bit `i` of `bound`
    /// is set, so starting an attempt only clears the mask.
    vars: [Src; 16],
    bound: u16,
    /// The last root whose [`Shape`] was read, and its shape.
    shape: (Value, Shape),
    inexact: bool,
    loses: FpFlags,
    exact_seen: bool,
    /// Instructions built by the last replacement.
    pub created: Vec<Value>,
}

impl<'a> Rewriter<'a> {
    /// `enabled[i]` says whether rule `i` of the set may fire (its guard held and no user
    /// filter removed it).
    pub fn new(
        func: &'a mut Function,
        uses: &'a mut Uses,
        ranges: &'a RangeCache,
        placements: &'a mut Placements,
        enabled: &'a [bool],
    ) -> Rewriter<'a> {
        Rewriter {
            func,
            uses,
            ranges,
            placements,
            enabled,
            root: Value(0),
            root_type: ValType::scalar(32),
            vars: [Src {
                value: Value(0),
                swizzle: IDENTITY_SWIZZLE,
                comps: 0,
            }; 16],
            bound: 0,
            shape: (Value(u32::MAX), Shape::default()),
            inexact: false,
            loses: FpFlags::default(),
            exact_seen: false,
            created: Vec::new(),
        }
    }

    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            func: self.func,
            uses: self.uses,
            ranges: self.ranges,
        }
    }

    /// Switches to another group's enable flags.
    pub fn set_enabled(&mut self, enabled: &'a [bool]) {
        self.enabled = enabled;
    }

    pub fn enabled(&self, rule: usize) -> bool {
        self.enabled.get(rule).copied().unwrap_or(false)
    }

    /// The bit size of `v`, for the dispatchers' shared checks.
    pub fn value_bits(&self, v: Value) -> u8 {
        self.func.value_type(v).map_or(0, |t| t.bits)
    }

    /// Whether the sources reached from `v` by following the source indices of `a` and of `b`
    /// (`[0, 1]`: source 1 of the instruction feeding source 0) read the same value, through
    /// any swizzles, for the dispatchers' checks of repeated variables.
    pub fn same_value(&self, v: Value, a: &[usize], b: &[usize]) -> bool {
        matches!((self.value_at(v, a), self.value_at(v, b)), (Some(x), Some(y)) if x == y)
    }

    /// The value read by the source reached from `v` by following the source indices of
    /// `path`, if every step is an ALU instruction with that source.
    fn value_at(&self, v: Value, path: &[usize]) -> Option<Value> {
        path.iter().try_fold(v, |at, &i| {
            self.alu(at)
                .and_then(|alu| alu.srcs.get(i))
                .map(|s| s.value)
        })
    }

    /// What feeds the sources of ALU instruction `v`, for the dispatchers' shared checks. Every
    /// group's dispatcher asks this of the same root, so it is read once per root.
    pub fn shape(&mut self, v: Value) -> Shape {
        if self.shape.0 != v {
            self.shape = (v, Shape::read(self.func, v));
        }
        self.shape.1
    }

    /// The position of source `i` of ALU instruction `v`, as a rule matching at `v` sees it,
    /// for the dispatchers' checks of literals.
    pub fn root_src(&self, v: Value, i: usize) -> Src {
        let root = Src {
            value: v,
            swizzle: IDENTITY_SWIZZLE,
            comps: self.func.value_type(v).map_or(0, |t| t.comps),
        };
        self.src(&root, i)
    }

    /// What feeds source `j` of the instruction feeding source `i` of `v`, for the dispatchers'
    /// checks one level deeper than [`Rewriter::shape`]. Read only when a check gets that far:
    /// a dispatcher's checks of the sources usually fail first, and reading two levels down
    /// for every root would cost more in memory traffic than it saves.
    pub fn src_src_kind(&self, v: Value, i: usize, j: usize) -> SrcKind {
        match self.value_at(v, &[i, j]) {
            Some(src) => SrcKind::of(self.func, src),
            None => SrcKind::Other,
        }
    }

    /// Starts an attempt at matching a rule at `root`. `inexact` is the rule's `~`; `loses` the
    /// float behaviours it does not preserve.
    pub fn begin(&mut self, root: Value, inexact: bool, loses: FpFlags) -> Src {
        self.root = root;
        self.root_type = self.func.value_type(root).unwrap_or(ValType::scalar(32));
        self.bound = 0;
        self.inexact = inexact;
        self.loses = loses;
        self.exact_seen = false;
        Src {
            value: root,
            swizzle: IDENTITY_SWIZZLE,
            comps: self.root_type.comps,
        }
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            bound: self.bound,
            exact_seen: self.exact_seen,
        }
    }

    /// Forgets what was bound since `checkpoint`.
    pub fn rewind(&mut self, checkpoint: Checkpoint) {
        self.bound = checkpoint.bound;
        self.exact_seen = checkpoint.exact_seen;
    }

    fn alu(&self, v: Value) -> Option<&Alu> {
        match &self.func.get_inst(v)?.kind {
            InstKind::Alu(alu) => Some(alu),
            _ => None,
        }
    }

    /// Accepts a matched ALU instruction under the rule's exactness and float controls.
    fn admit(&mut self, exact: bool, fp: FpFlags) -> bool {
        if fp.0 & self.loses.0 != 0 || (exact && self.inexact) {
            return false;
        }
        self.exact_seen |= exact;
        true
    }

    /// Matches an ALU instruction with opcode `op` at `pos`.
    pub fn op(&mut self, pos: &Src, op: AluOp) -> bool {
        match self.alu(pos.value) {
            Some(alu) if alu.op == op => {
                let (exact, fp) = (alu.exact, alu.fp);
                self.admit(exact, fp)
            }
            _ => false,
        }
    }

    /// Matches any conversion of `family` at `pos`.
    pub fn conv(&mut self, pos: &Src, family: ConvFamily) -> bool {
        match self.alu(pos.value) {
            Some(alu) if family.contains(alu.op) => {
                let (exact, fp) = (alu.exact, alu.fp);
                self.admit(exact, fp)
            }
            _ => false,
        }
    }

    /// The position of source `i` of the ALU instruction matched at `pos`: per-component
    /// sources compose the instruction's swizzle with the position's, sources with a fixed
    /// component count start afresh.
    pub fn src(&self, pos: &Src, i: usize) -> Src {
        let alu = self
            .alu(pos.value)
            .expect("src() follows a successful op()");
        let operand = alu.op.info().srcs[i];
        let src = &alu.srcs[i];
        if operand.comps != 0 {
            return Src {
                value: src.value,
                swizzle: src.swizzle,
                comps: operand.comps,
            };
        }
        let mut swizzle = IDENTITY_SWIZZLE;
        for (composed, &c) in swizzle.iter_mut().zip(pos.read()) {
            *composed = src.swizzle[usize::from(c) % MAX_COMPONENTS];
        }
        Src {
            value: src.value,
            swizzle,
            comps: pos.comps,
        }
    }

    /// Binds variable `var` to `pos`, or checks that it is bound to the same value read the same
    /// way.
    pub fn bind(&mut self, var: usize, pos: &Src) -> bool {
        if self.bound & (1 << var) != 0 {
            let bound = &self.vars[var];
            bound.value == pos.value && bound.read() == pos.read()
        } else {
            self.vars[var] = *pos;
            self.bound |= 1 << var;
            true
        }
    }

    pub fn bits(&self, pos: &Src) -> u8 {
        self.func.value_type(pos.value).map_or(0, |t| t.bits)
    }

    /// The constant read at `pos`, one entry per read component, with its bit size.
    pub fn constant(&self, pos: &Src) -> Option<(ConstRead, u8)> {
        constant_at(self.func, pos)
    }

    pub fn is_const(&self, pos: &Src) -> bool {
        matches!(
            self.func.get_inst(pos.value).map(|i| &i.kind),
            Some(InstKind::Const(_))
        )
    }

    /// `a@float`, `a@int`…: the value comes from an instruction producing that base type.
    /// Booleans are recognised by their size (they are the IR's only 1-bit values).
    pub fn has_type(&self, pos: &Src, ty: BaseType) -> bool {
        if ty == BaseType::Bool {
            return self.bits(pos) == 1;
        }
        self.alu(pos.value)
            .is_some_and(|alu| alu.op.info().dst.base == ty)
    }

    /// Every read component of the constant at `pos` satisfies `pred(raw bits, bit size)`.
    fn const_all(&self, pos: &Src, pred: impl Fn(u64, u8) -> bool) -> bool {
        self.constant(pos)
            .is_some_and(|(values, bits)| values.iter().all(|&v| pred(v, bits)))
    }

    /// A float literal: compared as a number (never on values narrower than 16 bits).
    pub fn const_float(&self, pos: &Src, x: f64) -> bool {
        self.const_all(pos, |v, bits| is_float_literal(v, bits, x))
    }

    /// An integer literal: compared masked to the value's bit size, so `-1` matches all ones.
    pub fn const_int(&self, pos: &Src, x: i64) -> bool {
        self.const_all(pos, |v, bits| is_int_literal(v, bits, x))
    }

    pub fn const_bool(&self, pos: &Src, b: bool) -> bool {
        self.const_all(pos, |v, bits| is_bool_literal(v, bits, b))
    }

    // Building.

    /// The value variable `var` was bound to.
    pub fn var(&self, var: usize) -> Src {
        debug_assert!(
            self.bound & (1 << var) != 0,
            "replacement variables are bound by the search"
        );
        self.vars[var]
    }

    pub fn root_comps(&self) -> u8 {
        self.root_type.comps
    }

    /// `a.yx` in a replacement: reads `src` through another swizzle.
    pub fn swizzle(&self, src: Src, comps: &[u8]) -> Src {
        let mut swizzle = IDENTITY_SWIZZLE;
        for (k, &c) in comps.iter().enumerate() {
            swizzle[k] = src.swizzle[c as usize];
        }
        Src {
            value: src.value,
            swizzle,
            comps: comps.len() as u8,
        }
    }

    fn insert(&mut self, kind: InstKind, def: ValType) -> Value {
        let block = self.func.inst(self.root).block;
        let v = self.func.alloc_inst(Inst {
            kind,
            def: Some(def),
            block,
        });
        self.placements.before.entry(self.root).or_default().push(v);
        self.created.push(v);
        v
    }

    /// A scalar constant of `bits` bits, read as many times as its consumer needs.
    fn imm(&mut self, raw: u64, bits: u8) -> Src {
        let value = self.insert(
            InstKind::Const(vec![mask(raw, bits)]),
            ValType::scalar(bits),
        );
        Src {
            value,
            swizzle: [0; MAX_COMPONENTS],
            comps: MAX_COMPONENTS as u8,
        }
    }

    pub fn imm_float(&mut self, x: f64, bits: u8) -> Src {
        self.imm(fput(x, bits), bits)
    }

    pub fn imm_int(&mut self, x: i64, bits: u8) -> Src {
        self.imm(x as u64, bits)
    }

    pub fn imm_bool(&mut self, b: bool) -> Src {
        self.imm(b as u64, 1)
    }

    /// Builds `op` with `comps` components; `bits` is the destination size of opcodes whose
    /// destination is unsized. The instruction is exact when `exact` (`!op`) or when the match
    /// consumed an exact instruction; it keeps the root's float controls. An instruction whose
    /// sources are all constants (a `#b` of the search, literals of the replacement) is folded
    /// into a constant on the spot, with the semantics the interpreter runs, so that
    /// `ishl(a, find_lsb(b))` leaves a shift by a number rather than work for a later pass.
    pub fn build(&mut self, op: AluOp, bits: u8, comps: u8, srcs: &[Src], exact: bool) -> Src {
        let info = op.info();
        let (bits, comps) = info.dst_shape(bits, comps);
        let fp = match self.alu(self.root) {
            Some(alu) => alu.fp,
            None => FpFlags::default(),
        };
        let alu = Alu {
            op,
            srcs: srcs
                .iter()
                .map(|s| AluSrc {
                    value: s.value,
                    swizzle: s.swizzle,
                })
                .collect(),
            exact: exact || self.exact_seen,
            fp,
        };
        let value = self.insert(InstKind::Alu(alu), ValType::new(bits, comps));
        if let Some(folded) = fold_alu(self.func, value) {
            self.func.inst_mut(value).kind = InstKind::Const(folded);
        } else {
            for s in srcs {
                self.uses.add(s.value, User::Inst(value));
            }
        }
        Src {
            value,
            swizzle: IDENTITY_SWIZZLE,
            comps,
        }
    }

    /// The generic conversion of `family` producing `bits` bits.
    pub fn conv_op(family: ConvFamily, bits: u8) -> AluOp {
        family
            .op(bits)
            .expect("bit-size inference only picks sizes the family has")
    }

    /// Makes `replacement` the root's value: every use of the root reads it instead, through a
    /// `mov` when it is read through a swizzle. Returns the value that replaced the root; the
    /// root itself is deleted, the rest of the matched tree is left to dead-code elimination.
    pub fn finish(&mut self, replacement: Src) -> Value {
        let comps = self.root_type.comps;
        let direct = self.func.value_type(replacement.value).map(|t| t.comps) == Some(comps)
            && replacement.swizzle[..comps as usize] == IDENTITY_SWIZZLE[..comps as usize];
        let new = if direct {
            replacement.value
        } else {
            let bits = self.root_type.bits;
            let mov = Src {
                comps,
                ..replacement
            };
            self.build(AluOp::Mov, bits, comps, &[mov], false).value
        };
        self.uses.replace_all(self.func, self.root, new);
        self.uses.forget_sources(self.func, self.root);
        self.func.insts[self.root.index()] = None;
        new
    }
}

/// The components of a constant a position reads. Matching checks constants all the time, so
/// the usual vec4 or narrower is kept off the heap.
pub type ConstRead = SmallVec<[u64; 4]>;

/// The constant read at `pos`, one entry per read component, with its bit size.
pub(super) fn constant_at(func: &Function, pos: &Src) -> Option<(ConstRead, u8)> {
    let inst = func.get_inst(pos.value)?;
    let (InstKind::Const(values), Some(def)) = (&inst.kind, inst.def) else {
        return None;
    };
    let read = pos
        .read()
        .iter()
        .map(|&c| values.get(c as usize).copied())
        .collect::<Option<ConstRead>>()?;
    Some((read, def.bits))
}

/// Whether constant component `v` of `bits` bits is the float literal `x` of a rule: equal as a
/// number, with the same sign of zero, and NaN for NaN; never on values narrower than 16 bits.
pub fn is_float_literal(v: u64, bits: u8, x: f64) -> bool {
    bits >= 16 && {
        let y = fget(v, bits);
        if x.is_nan() {
            y.is_nan()
        } else {
            y == x && y.is_sign_negative() == x.is_sign_negative()
        }
    }
}

/// Whether `v` is the integer literal `x`, compared masked to `bits` (so `-1` is all ones).
pub fn is_int_literal(v: u64, bits: u8, x: i64) -> bool {
    mask(v, bits) == mask(x as u64, bits)
}

/// Whether `v` is the boolean literal `b` (only 1-bit values are booleans).
pub fn is_bool_literal(v: u64, bits: u8, b: bool) -> bool {
    bits == 1 && (v & 1 != 0) == b
}
