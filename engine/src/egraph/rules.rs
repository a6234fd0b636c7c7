//! Rules in the e-graph: the primitives the rule macro's e-graph matchers call, the glue that
//! makes every DSL rule an `egg::Rewrite`, and the built-in equalities of swizzles and memory.
//!
//! For every rule the macro emits a *search* function, nested loops over the nodes of the
//! classes its pattern walks (with both operand orders of commutative operations) that report
//! each match as the classes at every pattern position, in pre-order; and an *apply* function
//! that builds the replacement from those classes. [`Search`] and [`Apply`] are their view of
//! the e-graph, with the same meaning as the greedy matcher's primitives
//! (`crate::rewrite::Rewriter`): a variable's conditions are decided by the class analysis
//! (constants and ranges).
//!
//! Conditions on how values are used (`is_used_once`, `is_not_const`…) have no meaning in an
//! e-graph (a class may gain a constant or a use later), so rules carrying them stay with the
//! greedy matcher: [`egraph_ready`] says which. So do the rules that do not preserve every
//! float behaviour (inexact `~` rules, `nsz`, `nnan`, `ninf`): a union is an equality of bit
//! patterns, and constants are classes shared by every value with their bits, so once either
//! side of an approximate union folds (`ffma(x, 0.0, 0.0)`, +0.0, made one with
//! `fmul(x, 0.0)`, -0.0), the two constants become one class, and an unrelated integer
//! 0x80000000 elsewhere in the block reads 0. The greedy matcher changes the one value it
//! rewrites.

use super::{Discriminant, EGraph, FactsAnalysis, Node};
use crate::memory::disjoint;
use crate::rewrite::conds::{CondKind, var_condition};
use crate::rewrite::{OpName, Pattern, Range, RuleInfo, RuleSet, TargetOptions};
use crate::rewrite::{is_bool_literal, is_float_literal, is_int_literal};
use egg::{Applier, Id, Language, Rewrite, SearchMatches, Searcher, Subst, Symbol, Var};
use shrew_ops::eval::{fput, mask};
use shrew_ops::{AluOp, BaseType, ConvFamily};
use smallvec::SmallVec;

/// The functions the rule macro generates for running a rule in the e-graph.
#[derive(Debug)]
pub struct EggRule {
    /// Reports every match rooted at a class.
    pub search: fn(&mut Search<'_>, Id),
    /// Builds the replacement of a match; `None` when the match cannot be rebuilt at the root's
    /// shape.
    pub apply: fn(&mut Apply<'_>) -> Option<Id>,
}

/// Whether a rule can run in the e-graph: its matcher was generated, it preserves every float
/// behaviour (see the module comment), and every condition of its variables is one the class
/// analysis decides (a constant or a range condition).
pub fn egraph_ready(rule: &RuleInfo) -> bool {
    rule.egraph.is_some()
        && rule.loses.0 == 0
        && rule
            .vars
            .iter()
            .flat_map(|v| v.conds)
            .all(|c| var_condition(c.name).is_some_and(|d| d.kind != CondKind::Structural))
}

/// One decidable variable condition.
#[derive(Copy, Clone, Debug)]
enum Decider {
    /// Every component of the constant satisfies it.
    Constant(fn(u64, u8) -> bool),
    /// The class's range admits it.
    Range(fn(Range) -> bool),
}

impl Decider {
    fn of(name: &str) -> Option<Decider> {
        let cond = var_condition(name)?;
        match cond.kind {
            CondKind::Constant => cond.holds.map(Decider::Constant),
            CondKind::Range => cond.admits.map(Decider::Range),
            CondKind::Structural => None,
        }
    }
}

/// A node a search loop visits: its sources and flags.
#[derive(Clone, Debug)]
pub struct Matched {
    pub srcs: SmallVec<[Id; 3]>,
    pub exact: bool,
    pub fp: u8,
}

impl Matched {
    /// The operand orders of a commutative node: `false` reads sources 0 and 1 in order, `true`
    /// swapped; one order when both sources are the same class.
    pub fn swaps(&self) -> &'static [bool] {
        if self.srcs[0] == self.srcs[1] {
            &[false]
        } else {
            &[false, true]
        }
    }
}

/// One match: the class at every pattern position (pre-order), whether it went through an
/// exact node, and the root node's float controls.
#[derive(Clone, Debug)]
struct Match {
    positions: SmallVec<[Id; 8]>,
    exact: bool,
    fp: u8,
}

/// The e-graph as a generated search function sees it.
pub struct Search<'a> {
    egraph: &'a EGraph,
    deciders: &'a [Vec<Decider>],
    found: Vec<Match>,
}

impl Search<'_> {
    /// The ALU nodes of `class` with opcode `op` the rule may match.
    pub fn nodes(&self, class: Id, op: AluOp) -> SmallVec<[Matched; 2]> {
        self.matching(class, |o| o == op)
    }

    /// The conversion nodes of `family` in `class` the rule may match.
    pub fn conv_nodes(&self, class: Id, family: ConvFamily) -> SmallVec<[Matched; 2]> {
        self.matching(class, |o| family.contains(o))
    }

    fn matching(&self, class: Id, want: impl Fn(AluOp) -> bool) -> SmallVec<[Matched; 2]> {
        self.egraph[class]
            .nodes
            .iter()
            .filter_map(|node| match node {
                Node::Alu {
                    op,
                    exact,
                    fp,
                    srcs,
                    ..
                } if want(*op) => Some(Matched {
                    srcs: srcs.iter().map(|&s| self.egraph.find(s)).collect(),
                    exact: *exact,
                    fp: *fp,
                }),
                _ => None,
            })
            .collect()
    }

    pub fn bits(&self, class: Id) -> u8 {
        self.egraph[class].data.bits
    }

    pub fn is_const(&self, class: Id) -> bool {
        self.egraph[class].data.constant.is_some()
    }

    /// `a@float`…: some node of the class is an operation producing that base type; booleans
    /// are the 1-bit values.
    pub fn has_type(&self, class: Id, ty: BaseType) -> bool {
        if ty == BaseType::Bool {
            return self.bits(class) == 1;
        }
        self.egraph[class]
            .nodes
            .iter()
            .any(|n| matches!(n, Node::Alu { op, .. } if op.info().dst.base == ty))
    }

    /// Whether the class satisfies every condition of variable `var`.
    pub fn var_conds(&self, var: usize, class: Id) -> bool {
        let facts = &self.egraph[class].data;
        self.deciders[var].iter().all(|d| match d {
            Decider::Constant(holds) => facts
                .constant
                .as_ref()
                .is_some_and(|values| values.iter().all(|&v| holds(v, facts.bits))),
            Decider::Range(admits) => admits(facts.range),
        })
    }

    fn const_all(&self, class: Id, pred: impl Fn(u64, u8) -> bool) -> bool {
        let facts = &self.egraph[class].data;
        facts
            .constant
            .as_ref()
            .is_some_and(|values| values.iter().all(|&v| pred(v, facts.bits)))
    }

    /// A float literal, compared as a number (never on values narrower than 16 bits).
    pub fn const_float(&self, class: Id, x: f64) -> bool {
        self.const_all(class, |v, bits| is_float_literal(v, bits, x))
    }

    /// An integer literal, compared masked to the class's bit size.
    pub fn const_int(&self, class: Id, x: i64) -> bool {
        self.const_all(class, |v, bits| is_int_literal(v, bits, x))
    }

    pub fn const_bool(&self, class: Id, b: bool) -> bool {
        self.const_all(class, |v, bits| is_bool_literal(v, bits, b))
    }

    /// Reports a match: the class at every pattern position, whether an exact node was
    /// matched, and the root node's float controls.
    pub fn found(&mut self, positions: &[Id], exact: bool, fp: u8) {
        self.found.push(Match {
            positions: positions.into(),
            exact,
            fp,
        });
    }
}

/// The e-graph as a generated apply function sees it.
pub struct Apply<'a> {
    egraph: &'a mut EGraph,
    root: Id,
    found: Match,
}

impl Apply<'_> {
    /// The class at search position `pos`.
    pub fn at(&self, pos: usize) -> Id {
        self.found.positions[pos]
    }

    /// The bit size at search position `pos`.
    pub fn bits(&self, pos: usize) -> u8 {
        self.egraph[self.at(pos)].data.bits
    }

    pub fn root_comps(&self) -> u8 {
        self.egraph[self.root].data.comps
    }

    /// `a.yx`: components `sel` of `class`.
    pub fn swizzle(&mut self, class: Id, sel: &[u8]) -> Id {
        self.egraph.add(Node::Swizzle {
            sel: sel.into(),
            src: [class],
        })
    }

    fn imm(&mut self, raw: u64, bits: u8, comps: u8) -> Id {
        self.egraph.add(Node::Const {
            bits,
            values: SmallVec::from_elem(mask(raw, bits), comps as usize),
        })
    }

    pub fn imm_float(&mut self, x: f64, bits: u8, comps: u8) -> Id {
        self.imm(fput(x, bits), bits, comps)
    }

    pub fn imm_int(&mut self, x: i64, bits: u8, comps: u8) -> Id {
        self.imm(x as u64, bits, comps)
    }

    pub fn imm_bool(&mut self, b: bool, comps: u8) -> Id {
        self.imm(b as u64, 1, comps)
    }

    /// Builds `op` with `comps` components (`bits`: the destination size of opcodes whose
    /// destination is unsized), exact when `exact` or when the match went through an exact
    /// node, with the root's float controls. `None` when a source does not have the component
    /// count the operand reads.
    pub fn build(
        &mut self,
        op: AluOp,
        bits: u8,
        comps: u8,
        srcs: &[Id],
        exact: bool,
    ) -> Option<Id> {
        let info = op.info();
        let (bits, comps) = info.dst_shape(bits, comps);
        for (operand, &src) in info.srcs.iter().zip(srcs) {
            let want = if operand.comps != 0 {
                operand.comps
            } else {
                comps
            };
            if self.egraph[src].data.comps != want {
                return None;
            }
        }
        Some(self.egraph.add(Node::Alu {
            op,
            bits,
            comps,
            exact: exact || self.found.exact,
            fp: self.found.fp,
            srcs: srcs.into(),
        }))
    }
}

/// The substitution variables: one per pattern position, and one carrying the flags.
fn position_var(pos: usize) -> Var {
    Var::from_u32(pos as u32)
}

const FLAGS_VAR: u32 = u32::MAX;

/// A DSL rule as an egg searcher and applier.
struct DslRule {
    fns: &'static EggRule,
    deciders: Vec<Vec<Decider>>,
    /// The opcodes the search root may have.
    roots: Vec<AluOp>,
    positions: usize,
}

impl DslRule {
    fn new(rule: &'static RuleInfo) -> Option<DslRule> {
        let fns = rule.egraph.as_ref()?;
        let deciders = rule
            .vars
            .iter()
            .map(|v| v.conds.iter().map(|c| Decider::of(c.name)).collect())
            .collect::<Option<Vec<Vec<Decider>>>>()?;
        let Pattern::Op { op, .. } = &rule.search else {
            return None;
        };
        let roots = match op {
            OpName::Op(op) => vec![*op],
            OpName::Conv(family) => family.members().to_vec(),
        };
        let mut positions = 0;
        rule.search.walk(&mut |_| positions += 1);
        Some(DslRule {
            fns,
            deciders,
            roots,
            positions,
        })
    }

    fn matches(&self, egraph: &EGraph, class: Id) -> Vec<Match> {
        let mut search = Search {
            egraph,
            deciders: &self.deciders,
            found: Vec::new(),
        };
        (self.fns.search)(&mut search, class);
        search.found
    }
}

impl Searcher<Node, FactsAnalysis> for DslRule {
    fn search_eclass_with_limit(
        &self,
        egraph: &EGraph,
        eclass: Id,
        limit: usize,
    ) -> Option<SearchMatches<'_, Node>> {
        let mut found = self.matches(egraph, eclass);
        found.truncate(limit);
        if found.is_empty() {
            return None;
        }
        let substs = found
            .into_iter()
            .map(|m| {
                let mut subst = Subst::with_capacity(m.positions.len() + 1);
                for (pos, &class) in m.positions.iter().enumerate() {
                    subst.insert(position_var(pos), class);
                }
                let flags = m.exact as usize | (m.fp as usize) << 1;
                subst.insert(Var::from_u32(FLAGS_VAR), Id::from(flags));
                subst
            })
            .collect();
        Some(SearchMatches {
            eclass,
            substs,
            ast: None,
        })
    }

    /// Only the classes holding a node of the root's opcode.
    fn search_with_limit(&self, egraph: &EGraph, mut limit: usize) -> Vec<SearchMatches<'_, Node>> {
        let mut out = Vec::new();
        for op in &self.roots {
            let Some(classes) = egraph.classes_for_op(&super::Discriminant::Alu(*op)) else {
                continue;
            };
            for class in classes {
                if limit == 0 {
                    return out;
                }
                if let Some(m) = self.search_eclass_with_limit(egraph, class, limit) {
                    limit -= m.substs.len().min(limit);
                    out.push(m);
                }
            }
        }
        out
    }

    fn vars(&self) -> Vec<Var> {
        (0..self.positions)
            .map(position_var)
            .chain([Var::from_u32(FLAGS_VAR)])
            .collect()
    }
}

impl Applier<Node, FactsAnalysis> for DslRule {
    fn apply_one(
        &self,
        egraph: &mut EGraph,
        eclass: Id,
        subst: &Subst,
        _searcher_ast: Option<&egg::PatternAst<Node>>,
        _rule_name: Symbol,
    ) -> Vec<Id> {
        let positions = (0..self.positions)
            .map(|pos| subst[position_var(pos)])
            .collect();
        let flags = usize::from(subst[Var::from_u32(FLAGS_VAR)]);
        let mut apply = Apply {
            egraph,
            root: eclass,
            found: Match {
                positions,
                exact: flags & 1 != 0,
                fp: (flags >> 1) as u8,
            },
        };
        match (self.fns.apply)(&mut apply) {
            Some(new) if egraph.union(eclass, new) => vec![eclass],
            _ => Vec::new(),
        }
    }
}

/// The rewrites of every rule of `set` that can run in the e-graph and whose guard holds, each
/// with its index in the set.
pub fn rewrites(
    set: &'static RuleSet,
    opts: &TargetOptions,
) -> Vec<(usize, Rewrite<Node, FactsAnalysis>)> {
    let guards = set.guards(opts);
    set.rules()
        .zip(guards)
        .enumerate()
        .filter(|(_, (_, guard))| *guard)
        .filter_map(|(index, ((group, rule), _))| {
            if !egraph_ready(rule) {
                return None;
            }
            let dsl = DslRule::new(rule)?;
            let applier = DslRule::new(rule)?;
            let name = format!("{}::{}", group.name, rule.name);
            Some((index, Rewrite::new(name, dsl, applier).ok()?))
        })
        .collect()
}

/// The built-in equalities. About swizzles, which let DSL matchers see through them: an
/// identity swizzle is its source; swizzles compose; a swizzle of a per-component operation is
/// the operation on swizzled sources; a swizzle of a vector construction picks its sources.
/// About memory: a load reads what the last store to its address wrote, and looks through
/// stores to addresses it certainly does not overlap.
/// In the order of [`BUILTINS`]. They stop adding nodes once the e-graph holds `max_nodes`
/// (egg checks its node limit only between iterations, and one application of these rules may
/// add many nodes).
pub fn builtin_rewrites(max_nodes: usize) -> Vec<Rewrite<Node, FactsAnalysis>> {
    [
        (Discriminant::Swizzle, swizzle_rule as EqualsFn),
        (Discriminant::Load, memory_rule),
    ]
    .into_iter()
    .zip(BUILTINS)
    .map(|((kind, equals), (name, _))| {
        let rule = BuiltinRule {
            kind,
            equals,
            max_nodes,
        };
        Rewrite::new(name, rule.clone(), rule).expect("no variables")
    })
    .collect()
}

/// The names of the built-in equalities, with what they say.
pub const BUILTINS: [(&str, &str); 2] = [
    (
        "swizzle",
        "identity swizzles, composition, swizzles through per-component operations and vecN",
    ),
    (
        "memory",
        "loads of stored values, loads past disjoint stores",
    ),
];

/// Finds classes equal to a class, adding nodes while the e-graph holds fewer than the limit.
type EqualsFn = fn(&mut EGraph, Id, usize) -> Vec<Id>;

/// An equality built into the e-graph rather than written in the DSL: every class holding a
/// node of kind `kind` is equal to the classes `equals` finds for it.
#[derive(Clone)]
struct BuiltinRule {
    kind: Discriminant,
    equals: EqualsFn,
    max_nodes: usize,
}

impl Searcher<Node, FactsAnalysis> for BuiltinRule {
    fn search_eclass_with_limit(
        &self,
        egraph: &EGraph,
        eclass: Id,
        _limit: usize,
    ) -> Option<SearchMatches<'_, Node>> {
        let has_kind = egraph[eclass]
            .nodes
            .iter()
            .any(|n| n.discriminant() == self.kind);
        has_kind.then(|| SearchMatches {
            eclass,
            substs: vec![Subst::default()],
            ast: None,
        })
    }

    fn search_with_limit(&self, egraph: &EGraph, limit: usize) -> Vec<SearchMatches<'_, Node>> {
        egraph
            .classes_for_op(&self.kind)
            .into_iter()
            .flatten()
            .take(limit)
            .filter_map(|class| self.search_eclass_with_limit(egraph, class, 1))
            .collect()
    }

    fn vars(&self) -> Vec<Var> {
        Vec::new()
    }
}

impl Applier<Node, FactsAnalysis> for BuiltinRule {
    fn apply_one(
        &self,
        egraph: &mut EGraph,
        eclass: Id,
        _subst: &Subst,
        _searcher_ast: Option<&egg::PatternAst<Node>>,
        _rule_name: Symbol,
    ) -> Vec<Id> {
        let mut changed = Vec::new();
        for equal in (self.equals)(egraph, eclass, self.max_nodes) {
            if egraph.union(eclass, equal) {
                changed.push(eclass);
            }
        }
        changed
    }
}

/// Classes equal to the swizzles in `class`.
fn swizzle_rule(egraph: &mut EGraph, class: Id, max_nodes: usize) -> Vec<Id> {
    let swizzles: Vec<(SmallVec<[u8; 4]>, Id)> = egraph[class]
        .nodes
        .iter()
        .filter_map(|n| match n {
            Node::Swizzle { sel, src } => Some((sel.clone(), src[0])),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (sel, src) in swizzles {
        // Within one iteration, unions grow the classes this rule reads: without a bound, one
        // application could multiply the e-graph.
        if egraph.total_size() >= max_nodes {
            break;
        }
        // A class that is a swizzle of itself (a splat read as a splat) learns nothing from
        // it, and pushing the swizzle into its own operations would grow it without end.
        if egraph.find(src) != egraph.find(class) {
            out.extend(swizzle_equals(egraph, &sel, src));
        }
    }
    out
}

/// Classes equal to the loads in `class`: a load from the token of a store reads the stored
/// value when it loads the stored address with the stored shape, and reads what the memory held
/// before the store when its address certainly does not overlap the stored one.
fn memory_rule(egraph: &mut EGraph, class: Id, _max_nodes: usize) -> Vec<Id> {
    let loads: Vec<Node> = egraph[class]
        .nodes
        .iter()
        .filter(|n| matches!(n, Node::Load { .. }))
        .cloned()
        .collect();
    let mut out = Vec::new();
    for load in loads {
        let Node::Load {
            address,
            bits,
            comps,
            src: [memory],
        } = load
        else {
            continue;
        };
        let stores: Vec<(u32, Id, Id)> = egraph[memory]
            .nodes
            .iter()
            .filter_map(|n| match n {
                Node::Store { address, srcs } => Some((*address, srcs[0], srcs[1])),
                _ => None,
            })
            .collect();
        for (stored_at, before, data) in stores {
            let addresses = &egraph.analysis.addresses;
            if stored_at == address {
                let facts = &egraph[data].data;
                if (facts.bits, facts.comps) == (bits, comps) {
                    out.push(data);
                }
            } else if disjoint(&addresses[address as usize], &addresses[stored_at as usize]) {
                out.push(egraph.add(Node::Load {
                    address,
                    bits,
                    comps,
                    src: [before],
                }));
            }
        }
    }
    out
}

/// Classes equal to components `sel` of `src`.
fn swizzle_equals(egraph: &mut EGraph, sel: &[u8], src: Id) -> Vec<Id> {
    let src = egraph.find(src);
    let comps = egraph[src].data.comps;
    let mut out = Vec::new();
    if sel.len() == comps as usize && sel.iter().enumerate().all(|(i, &c)| c as usize == i) {
        out.push(src);
    }
    let inner: Vec<Node> = egraph[src].nodes.clone();
    for node in inner {
        match node {
            Node::Swizzle { sel: first, src } => {
                let composed: SmallVec<[u8; 4]> = sel.iter().map(|&c| first[c as usize]).collect();
                out.push(egraph.add(Node::Swizzle { sel: composed, src }));
            }
            Node::Alu {
                op,
                bits,
                exact,
                fp,
                srcs,
                ..
            } if is_per_component(op) => {
                let srcs = srcs
                    .iter()
                    .map(|&s| {
                        egraph.add(Node::Swizzle {
                            sel: sel.into(),
                            src: [s],
                        })
                    })
                    .collect();
                out.push(egraph.add(Node::Alu {
                    op,
                    bits,
                    comps: sel.len() as u8,
                    exact,
                    fp,
                    srcs,
                }));
            }
            Node::Alu {
                op,
                bits,
                exact,
                fp,
                srcs,
                ..
            } if op.is_vec() => {
                let picked: SmallVec<[Id; 3]> = sel.iter().map(|&c| srcs[c as usize]).collect();
                if picked.len() == 1 {
                    out.push(picked[0]);
                } else if let Some(vec) = AluOp::vec_of(picked.len() as u8) {
                    out.push(egraph.add(Node::Alu {
                        op: vec,
                        bits,
                        comps: picked.len() as u8,
                        exact,
                        fp,
                        srcs: picked,
                    }));
                }
            }
            _ => {}
        }
    }
    out
}

/// An operation that works component by component: every operand and the destination follow
/// the instruction's component count.
fn is_per_component(op: AluOp) -> bool {
    let info = op.info();
    info.is_per_component() && info.srcs.iter().all(|o| o.comps == 0)
}
