//! Checks of one rule group: markers on the right side, arities, variable binding, bit sizes,
//! the commutative-order cap, rules that rewrite to themselves, and rules an earlier rule always
//! pre-empts. Every problem becomes a spanned error; all of them are reported together.

use crate::ast::{Group, Node, OpName, Rule, Side, VarNode};
use crate::infer::{Resolved, Sizes};
use proc_macro2::Span;
use shrew_ops::BaseType;
use std::collections::HashMap;

/// Commutative operand orders tried per rule without `many_comm`: 2^4.
pub const COMMUTATIVE_CAP: usize = 4;
/// With `many_comm`: 2^8.
pub const COMMUTATIVE_HARD_CAP: usize = 8;

/// A search variable with the constraints of all its occurrences.
pub struct Var {
    pub name: String,
    pub is_const: bool,
    pub size: Option<u8>,
    pub ty: Option<BaseType>,
    pub conds: Vec<syn::Path>,
}

/// A rule that passed the checks, with what code generation needs.
pub struct Checked<'a> {
    pub rule: &'a Rule,
    pub vars: Vec<Var>,
    pub sizes: Sizes,
    /// Number of search nodes (pre-order ids below this are search nodes).
    pub search_nodes: usize,
    /// Pre-order ids of the search's commutative op nodes whose operand orders are tried.
    pub commutative: Vec<usize>,
    pub inexact: bool,
    /// Float behaviours lost: bit 0 signed zero, bit 1 NaN, bit 2 infinity (as `FpFlags`).
    pub loses: u8,
}

impl Checked<'_> {
    pub fn var_index(&self, name: &str) -> usize {
        self.vars
            .iter()
            .position(|v| v.name == name)
            .expect("replacement variables are checked to be bound")
    }

    /// How the replacement learns the size of the value of node `id`.
    pub fn resolve_dst(&self, id: usize) -> Resolved {
        self.sizes
            .resolve(self.sizes.dst[id], self.search_nodes)
            .expect("checked: every replacement size is determined")
    }
}

/// Pre-order list of a tree's nodes.
pub fn preorder<'a>(node: &'a Node, out: &mut Vec<&'a Node>) {
    out.push(node);
    if let Node::Op(op) = node {
        op.srcs.iter().for_each(|s| preorder(s, out));
    }
}

/// How many pattern nodes `node`'s subtree holds.
pub fn subtree_size(node: &Node) -> usize {
    let mut nodes = Vec::new();
    preorder(node, &mut nodes);
    nodes.len()
}

pub fn check_group<'a>(group: &'a Group, errors: &mut Vec<syn::Error>) -> Vec<Checked<'a>> {
    let mut checked: Vec<Checked> = Vec::new();
    for rule in &group.rules {
        let before = errors.len();
        let result = check_rule(rule, errors);
        if errors.len() > before {
            continue;
        }
        // The greedy matcher never runs equalities, so they neither pre-empt nor are pre-empted.
        if let Some(earlier) = checked
            .iter()
            .filter(|c| !c.rule.equality && !rule.equality)
            .find(|c| preempts(c, &result))
        {
            errors.push(syn::Error::new(
                rule.span,
                format!(
                    "this rule never fires: the earlier rule `{}` matches everything it matches",
                    earlier.rule
                ),
            ));
            continue;
        }
        checked.push(result);
    }
    // The two directions of an equality check the same tokens: report each problem once.
    let mut seen = Vec::new();
    errors.retain(|e| {
        let key = (format!("{:?}", e.span()), e.to_string());
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    checked
}

fn err(errors: &mut Vec<syn::Error>, span: Span, message: impl std::fmt::Display) {
    errors.push(syn::Error::new(span, message));
}

fn check_rule<'a>(rule: &'a Rule, errors: &mut Vec<syn::Error>) -> Checked<'a> {
    let before = errors.len();
    let Node::Op(_) = &rule.search else {
        err(errors, rule.search.span(), "a search pattern must be an op");
        return empty(rule);
    };
    check_markers(&rule.search, Side::Search, errors);
    let before_replace = errors.len();
    check_markers(&rule.replace, Side::Replace, errors);
    if rule.equality {
        for e in &mut errors[before_replace..] {
            *e = syn::Error::new(
                e.span(),
                format!("{e} (each side of `<=>` is both a search and a replacement)"),
            );
        }
    }

    let mut vars: Vec<Var> = Vec::new();
    let mut search_nodes = Vec::new();
    preorder(&rule.search, &mut search_nodes);
    for node in &search_nodes {
        if let Node::Var(v) = node {
            merge_var(&mut vars, v, errors);
        }
    }
    let mut replace_nodes = Vec::new();
    preorder(&rule.replace, &mut replace_nodes);
    for node in &replace_nodes {
        if let Node::Var(v) = node
            && !vars.iter().any(|b| v.ident == b.name)
        {
            err(
                errors,
                v.ident.span(),
                format!("`{}` is not bound by the search", v.ident),
            );
        }
    }
    if vars.len() > 16 {
        err(errors, rule.span, "a rule may use at most 16 variables");
    }
    if errors.len() > before {
        // Shapes are wrong: size inference and the later checks would only add noise.
        return empty(rule);
    }

    // One bit-size error per rule: the first conflict explains the others.
    let mut size_errors = Vec::new();
    let mut sizes = Sizes::new();
    let search_root = sizes.walk(&rule.search, Side::Search, &mut size_errors);
    let replace_root = sizes.walk(&rule.replace, Side::Replace, &mut size_errors);
    if let Err(e) = sizes.unify_roots(search_root, replace_root, rule.replace.span()) {
        size_errors.push(e);
    }
    errors.extend(size_errors.into_iter().take(1));
    for (offset, node) in replace_nodes.iter().enumerate() {
        let id = search_nodes.len() + offset;
        let needs_size = match node {
            Node::Lit(_) => true,
            Node::Op(op) => match op.op {
                OpName::Conv(_) => true,
                OpName::Op(alu) => alu.info().dst.bits == 0,
            },
            Node::Var(_) => false,
        };
        if needs_size && sizes.resolve(sizes.dst[id], search_nodes.len()).is_none() {
            err(
                errors,
                node.span(),
                "the bit size of this replacement node is not determined by the search; add `@N`",
            );
        }
    }

    let commutative: Vec<usize> = search_nodes
        .iter()
        .enumerate()
        .filter_map(|(id, node)| match node {
            Node::Op(op)
                if op.op.is_commutative() && op.srcs[0].to_string() != op.srcs[1].to_string() =>
            {
                Some(id)
            }
            _ => None,
        })
        .collect();
    let many_comm = search_nodes
        .iter()
        .any(|n| matches!(n, Node::Op(op) if op.flags.iter().any(|f| f == "many_comm")));
    let cap = if many_comm {
        COMMUTATIVE_HARD_CAP
    } else {
        COMMUTATIVE_CAP
    };
    if commutative.len() > cap {
        err(
            errors,
            rule.search.span(),
            format!(
                "{} commutative ops would need {} operand orders; the cap is {} ops{}",
                commutative.len(),
                1u64 << commutative.len(),
                cap,
                if many_comm {
                    ""
                } else {
                    " (mark one op `[many_comm]` to allow up to 8)"
                }
            ),
        );
    }

    if strip_markers(&rule.search) == strip_markers(&rule.replace) {
        err(
            errors,
            rule.replace.span(),
            "the replacement is the search itself",
        );
    }

    let mut inexact = false;
    let mut loses = 0u8;
    for node in &search_nodes {
        if let Node::Op(op) = node {
            inexact |= op.inexact.is_some();
            for flag in &op.flags {
                loses |= match flag.to_string().as_str() {
                    "nsz" => 1,
                    "nnan" => 2,
                    "ninf" => 4,
                    _ => 0,
                };
            }
        }
    }
    if inexact {
        loses = 7;
    }
    Checked {
        rule,
        vars,
        sizes,
        search_nodes: search_nodes.len(),
        commutative,
        inexact,
        loses,
    }
}

fn empty(rule: &Rule) -> Checked<'_> {
    Checked {
        rule,
        vars: Vec::new(),
        sizes: Sizes::new(),
        search_nodes: 0,
        commutative: Vec::new(),
        inexact: false,
        loses: 0,
    }
}

/// Markers that only make sense on one side, and arities.
fn check_markers(node: &Node, side: Side, errors: &mut Vec<syn::Error>) {
    match node {
        Node::Op(op) => {
            let expected = op.op.num_srcs();
            if op.srcs.len() != expected {
                err(
                    errors,
                    op.ident.span(),
                    format!(
                        "`{}` takes {expected} source{}, not {}",
                        op.op.name(),
                        if expected == 1 { "" } else { "s" },
                        op.srcs.len()
                    ),
                );
            }
            match side {
                Side::Search => {
                    if let Some(span) = op.exact {
                        err(
                            errors,
                            span,
                            "`!` marks exact ops in a replacement, not in a search",
                        );
                    }
                    if op.srcs.len() > 4 {
                        err(
                            errors,
                            op.ident.span(),
                            "a search op may have at most 4 sources",
                        );
                    }
                    if let (OpName::Conv(f), Some((_, span))) = (op.op, op.size) {
                        err(
                            errors,
                            span,
                            format!(
                                "`{}` matches every size; write the sized opcode instead",
                                f.name()
                            ),
                        );
                    }
                }
                Side::Replace => {
                    if let Some(span) = op.inexact {
                        err(
                            errors,
                            span,
                            "`~` marks inexact search ops; a replacement cannot be inexact",
                        );
                    }
                    if let Some(span) = op.cond_span {
                        err(
                            errors,
                            span,
                            "conditions belong to the search, not the replacement",
                        );
                    }
                }
            }
            op.srcs.iter().for_each(|s| check_markers(s, side, errors));
        }
        Node::Var(var) => match side {
            Side::Search => {
                if let Some((_, span)) = var.swizzle {
                    err(errors, span, "swizzles apply to replacement variables only");
                }
            }
            Side::Replace => {
                if let Some(span) = var.is_const {
                    err(
                        errors,
                        span,
                        "`#` constrains search variables; remove it from the replacement",
                    );
                }
                if let Some(span) = var.cond_span {
                    err(
                        errors,
                        span,
                        "conditions belong to the search, not the replacement",
                    );
                }
                if let Some((_, span)) = var.ty {
                    err(
                        errors,
                        span,
                        "types constrain search variables; remove it from the replacement",
                    );
                }
            }
        },
        Node::Lit(_) => {}
    }
}

fn merge_var(vars: &mut Vec<Var>, v: &VarNode, errors: &mut Vec<syn::Error>) {
    let name = v.ident.to_string();
    let index = match vars.iter().position(|b| b.name == name) {
        Some(i) => i,
        None => {
            vars.push(Var {
                name,
                is_const: false,
                size: None,
                ty: None,
                conds: Vec::new(),
            });
            vars.len() - 1
        }
    };
    let var = &mut vars[index];
    var.is_const |= v.is_const.is_some();
    if let Some((bits, _)) = v.size {
        var.size = Some(bits);
    }
    if let Some((ty, span)) = v.ty {
        if var.ty.is_some_and(|t| t != ty) {
            err(
                errors,
                span,
                format!("`{}` already has another type", v.ident),
            );
        }
        var.ty = Some(ty);
    }
    var.conds.extend(v.conds.iter().cloned());
}

/// The pattern text without the markers that do not change what it computes.
fn strip_markers(node: &Node) -> String {
    match node {
        Node::Op(op) => {
            let srcs: Vec<String> = op.srcs.iter().map(strip_markers).collect();
            format!("{}({})", op.op.name(), srcs.join(", "))
        }
        Node::Var(v) => match &v.swizzle {
            Some((s, _)) => format!("{}.{}", v.ident, shrew_ops::swizzle_letters(s)),
            None => v.ident.to_string(),
        },
        Node::Lit(_) => node.to_string(),
    }
}

fn path_text(p: &syn::Path) -> String {
    quote::quote!(#p).to_string()
}

/// Whether `earlier` fires whenever `later` would: it has no guard or condition that `later`
/// lacks, no stricter exactness, and its search pattern generalises `later`'s.
fn preempts(earlier: &Checked, later: &Checked) -> bool {
    let guard_text = |c: &Checked| c.rule.guard.as_ref().map(|g| quote::quote!(#g).to_string());
    if earlier.rule.guard.is_some() && guard_text(earlier) != guard_text(later) {
        return false;
    }
    if (earlier.inexact && !later.inexact) || earlier.loses & !later.loses != 0 {
        return false;
    }
    let later_vars: HashMap<&str, &Var> = later.vars.iter().map(|v| (v.name.as_str(), v)).collect();
    let earlier_vars: HashMap<&str, &Var> =
        earlier.vars.iter().map(|v| (v.name.as_str(), v)).collect();
    let cx = Generalise {
        earlier: &earlier_vars,
        later: &later_vars,
    };
    cx.node(
        &earlier.rule.search,
        &later.rule.search,
        &mut HashMap::new(),
    )
}

struct Generalise<'a> {
    earlier: &'a HashMap<&'a str, &'a Var>,
    later: &'a HashMap<&'a str, &'a Var>,
}

impl Generalise<'_> {
    /// Whether pattern `a` matches every tree pattern `b` matches, extending `binding`
    /// (a's variables to b's subtree texts).
    fn node(&self, a: &Node, b: &Node, binding: &mut HashMap<String, String>) -> bool {
        match (a, b) {
            (Node::Var(va), _) => {
                let var = self.earlier[va.ident.to_string().as_str()];
                let constrained =
                    var.is_const || var.size.is_some() || var.ty.is_some() || !var.conds.is_empty();
                if constrained {
                    // Only the same constraints on a variable of `b` are known to imply them.
                    let Node::Var(vb) = b else {
                        let only_const = var.is_const
                            && var.size.is_none()
                            && var.ty.is_none()
                            && var.conds.is_empty();
                        return only_const
                            && matches!(b, Node::Lit(_))
                            && self.bind(va, b, binding);
                    };
                    let other = self.later[vb.ident.to_string().as_str()];
                    let conds_b: Vec<String> = other.conds.iter().map(path_text).collect();
                    let implied = (!var.is_const || other.is_const)
                        && (var.size.is_none() || var.size == other.size)
                        && (var.ty.is_none() || var.ty == other.ty)
                        && var.conds.iter().all(|c| conds_b.contains(&path_text(c)));
                    if !implied {
                        return false;
                    }
                }
                self.bind(va, b, binding)
            }
            (Node::Lit(la), Node::Lit(lb)) => {
                la.size.map(|s| s.0) == lb.size.map(|s| s.0) && la.value.same(&lb.value)
            }
            (Node::Op(oa), Node::Op(ob)) => {
                let op_matches = oa.op == ob.op
                    || matches!((oa.op, ob.op), (OpName::Conv(f), OpName::Op(op)) if f.contains(op));
                let conds_b: Vec<String> = ob.conds.iter().map(path_text).collect();
                if !op_matches
                    || (oa.size.is_some() && oa.size.map(|s| s.0) != ob.size.map(|s| s.0))
                    || !oa.conds.iter().all(|c| conds_b.contains(&path_text(c)))
                    || oa.srcs.len() != ob.srcs.len()
                {
                    return false;
                }
                let mut straight = binding.clone();
                if oa
                    .srcs
                    .iter()
                    .zip(&ob.srcs)
                    .all(|(x, y)| self.node(x, y, &mut straight))
                {
                    *binding = straight;
                    return true;
                }
                if oa.op.is_commutative() {
                    let mut swapped = binding.clone();
                    let order = [1, 0].into_iter().chain(2..oa.srcs.len());
                    if order
                        .zip(&ob.srcs)
                        .all(|(i, y)| self.node(&oa.srcs[i], y, &mut swapped))
                    {
                        *binding = swapped;
                        return true;
                    }
                }
                false
            }
            _ => false,
        }
    }

    fn bind(&self, var: &VarNode, b: &Node, binding: &mut HashMap<String, String>) -> bool {
        let text = strip_markers(b);
        match binding.get(&var.ident.to_string()) {
            Some(bound) => *bound == text,
            None => {
                binding.insert(var.ident.to_string(), text);
                true
            }
        }
    }
}

impl crate::ast::Literal {
    /// Equality that treats NaN as equal to NaN and tells -0.0 from 0.0.
    pub fn same(&self, other: &crate::ast::Literal) -> bool {
        use crate::ast::Literal::*;
        match (self, other) {
            (Float(a), Float(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            _ => self == other,
        }
    }
}
