//! Code generation: one matcher function per rule, a dispatcher per root opcode that shares the
//! opcode checks of the rules rooted there, and the group's metadata table.

use crate::ast::{Group, Literal, Node, OpName, OpNode};
use crate::check::{Checked, check_group, preorder, subtree_size};
use crate::egraph;
use crate::infer::Resolved;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use shrew_ops::{AluOp, BaseType};
use std::collections::HashMap;

pub fn expand(mut group: Group) -> TokenStream {
    let mut errors = std::mem::take(&mut group.errors);
    let checked = check_group(&group, &mut errors);
    let fn_names = rule_names(&checked, &mut errors);
    let name = &group.name;
    let attrs = &group.attrs;
    let vis = &group.vis;
    let group_name = name.to_string().to_lowercase();
    if !errors.is_empty() {
        let errors = errors.iter().map(syn::Error::to_compile_error);
        return quote! {
            #(#errors)*
            #vis static #name: ::shrew_engine::rewrite::RuleGroup = ::shrew_engine::rewrite::RuleGroup {
                name: #group_name,
                rules: &[],
                roots: &[],
            };
        };
    }
    let rule_fns = checked
        .iter()
        .zip(&fn_names)
        .filter(|(c, _)| !c.rule.equality)
        .map(|(c, f)| rule_fn(c, f));
    let egraph_fns = checked
        .iter()
        .zip(&fn_names)
        .filter(|(c, _)| egraph::has_egraph_form(c))
        .map(|(c, f)| egraph::rule_fns(c, f, &rule_doc(c)));
    let indices = 0..checked.len();
    let expect_rejection = checked
        .iter()
        .map(|c| c.rule.wrong.then(|| quote! { #[should_panic] }));
    let infos = checked.iter().zip(&fn_names).map(|(c, f)| rule_info(c, f));
    let (dispatch, roots) = dispatchers(&checked, &fn_names);
    let output = quote! {
        #(#attrs)*
        #[allow(clippy::approx_constant)]
        #vis static #name: ::shrew_engine::rewrite::RuleGroup = ::shrew_engine::rewrite::RuleGroup {
            name: #group_name,
            rules: &[#(#infos),*],
            roots: &[#(#roots),*],
        };

        #[allow(unused_imports)]
        use ::shrew_engine::rewrite::matcher_prelude::*;

        #dispatch
        #(#rule_fns)*

        /// The rules as the e-graph runs them (`shrew_engine::egraph::rules`): a search and
        /// an apply function per rule, except the rules with conditions on matched
        /// operations, which only the greedy matcher can decide.
        #vis mod egraph {
            #[allow(unused_imports)]
            use ::shrew_engine::egraph::rules::{Apply, Search};
            #[allow(unused_imports)]
            use ::shrew_engine::rewrite::Rewriter;
            #[allow(unused_imports)]
            use ::shrew_engine::ops::{AluOp, BaseType, ConvFamily};
            use ::shrew_engine::egraph::Id;

            #(#egraph_fns)*
        }

        /// One test per rule: search and replacement evaluated on special and random values
        /// at every bit size the rule allows must agree (see `shrew_engine::rewrite::check`);
        /// for a rule marked `#[wrong]`, they must not.
        #[cfg(test)]
        mod verify {
            #(
                #[test]
                #expect_rejection
                fn #fn_names() {
                    ::shrew_engine::rewrite::check::assert_rule(&super::#name.rules[#indices]);
                }
            )*
        }
    };
    unsuffixed(output)
}

/// The name of each rule's functions and test: its label (`#[name = label]`), or its root op
/// and line (`fadd_l42`), so that a rule listed at `file:line` is found by that line. Rules
/// written once that expand to several (the items of a `for`, the two directions of an
/// equality) share the name with `_1`, `_2`, ... appended; a label used on two lines is an
/// error.
fn rule_names(checked: &[Checked], errors: &mut Vec<syn::Error>) -> Vec<Ident> {
    let bases: Vec<(String, u32)> = checked
        .iter()
        .map(|c| {
            let line = location(c.rule.span).1;
            let base = match &c.rule.label {
                Some(label) => label.to_string(),
                None => format!("{}_l{line}", root_op(c).name()),
            };
            (base, line)
        })
        .collect();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for (base, _) in &bases {
        *uses.entry(base).or_default() += 1;
    }
    // Per name: the line of its first rule, and how many rules took it so far.
    let mut taken: HashMap<&str, (u32, usize)> = HashMap::new();
    checked
        .iter()
        .zip(&bases)
        .map(|(c, (base, line))| {
            let (first_line, k) = taken.entry(base).or_insert((*line, 0));
            *k += 1;
            if *first_line != *line {
                let span = c.rule.label.as_ref().map_or(c.rule.span, Ident::span);
                errors.push(syn::Error::new(
                    span,
                    format!(
                        "the rule name `{base}` is already taken by the rule at line {first_line}"
                    ),
                ));
            }
            if uses[base.as_str()] > 1 {
                format_ident!("{}_{}", base, k)
            } else {
                format_ident!("{}", base)
            }
        })
        .collect()
}

/// Drops the type suffixes `quote` puts on integers (`0usize`, `32u8`): every place they land
/// is typed, and the expanded code reads like hand-written code without them.
fn unsuffixed(tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Literal(lit) => {
                let text = lit.to_string();
                let suffixes = ["usize", "u8", "u32", "u64", "i64"];
                match suffixes.iter().find_map(|s| text.strip_suffix(s)) {
                    Some(number)
                        if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        let mut new =
                            proc_macro2::Literal::u64_unsuffixed(number.parse().expect("digits"));
                        new.set_span(lit.span());
                        proc_macro2::TokenTree::Literal(new)
                    }
                    _ => proc_macro2::TokenTree::Literal(lit),
                }
            }
            proc_macro2::TokenTree::Group(g) => {
                let mut new = proc_macro2::Group::new(g.delimiter(), unsuffixed(g.stream()));
                new.set_span(g.span());
                proc_macro2::TokenTree::Group(new)
            }
            tt => tt,
        })
        .collect()
}

fn root_op(c: &Checked) -> OpName {
    match &c.rule.search {
        Node::Op(op) => op.op,
        _ => unreachable!("checked: the search root is an op"),
    }
}

pub(crate) fn alu_path(op: AluOp) -> TokenStream {
    let variant = format_ident!("{}", format!("{op:?}"));
    quote!(AluOp::#variant)
}

pub(crate) fn base_path(ty: BaseType) -> TokenStream {
    let variant = format_ident!("{}", format!("{ty:?}"));
    quote!(BaseType::#variant)
}

fn cond_path(path: &syn::Path) -> TokenStream {
    match path.get_ident() {
        Some(id) => quote!(conds::#id),
        None => quote!(#path),
    }
}

pub(crate) fn float_tokens(x: f64) -> TokenStream {
    if x.is_nan() {
        quote!(f64::NAN)
    } else if x == f64::INFINITY {
        quote!(f64::INFINITY)
    } else if x == f64::NEG_INFINITY {
        quote!(f64::NEG_INFINITY)
    } else if x.is_sign_negative() {
        let lit = proc_macro2::Literal::f64_unsuffixed(-x);
        quote!(-#lit)
    } else {
        let lit = proc_macro2::Literal::f64_unsuffixed(x);
        quote!(#lit)
    }
}

pub(crate) fn int_tokens(x: i64) -> TokenStream {
    let lit = proc_macro2::Literal::i64_suffixed(x.unsigned_abs() as i64);
    if x < 0 && x != i64::MIN {
        quote!(-#lit)
    } else if x == i64::MIN {
        quote!(i64::MIN)
    } else {
        quote!(#lit)
    }
}

/// `file:line` of a span, when the compiler can tell.
fn location(span: Span) -> (String, u32) {
    if proc_macro::is_available() {
        let span = span.unwrap();
        (span.file(), span.line() as u32)
    } else {
        (String::new(), 0)
    }
}

// One function per rule.

/// One statement of a rule's matcher: the condition under which the current operand orders are
/// rejected, or a `let` of a position. `level` is how many commutative nodes' orders it depends on
/// (one more than the index of the last of them), so that it runs inside exactly those loops.
struct Step {
    level: usize,
    kind: StepKind,
}

enum StepKind {
    RejectIf(TokenStream),
    Let(TokenStream),
}

/// The doc comment of a rule's functions: its text and where it is defined.
fn rule_doc(c: &Checked) -> String {
    let text = c.rule.to_string();
    let (file, line) = location(c.rule.span);
    let equality = if c.rule.equality {
        " One direction of an equality `<=>`: only the e-graph runs it."
    } else {
        ""
    };
    format!(" `{text}`\n\n Defined at {file}:{line}.{equality}")
}

fn rule_fn(c: &Checked, name: &Ident) -> TokenStream {
    let doc = rule_doc(c);
    let mut next_id = 0;
    let mut steps = Vec::new();
    search_node(c, &c.rule.search, &quote!(p0), 0, &mut next_id, &mut steps);
    let mut build = TokenStream::new();
    let mut build_id = c.search_nodes;
    let result = replace_node(
        c,
        &c.rule.replace,
        quote!(rw.root_comps()),
        &mut build_id,
        &mut build,
    );
    let inexact = c.inexact;
    let loses = c.loses;
    let tail = quote! {
        #build
        return Some(#result);
    };
    let matcher = nest(&steps, 0, c.commutative.len(), &tail);
    let end = if c.commutative.is_empty() {
        TokenStream::new()
    } else {
        quote!(None)
    };
    quote! {
        #[doc = #doc]
        // A rule's literals are the author's numbers (`1.4426950408889634` is log2 e as the rule
        // text writes it), not constants to spell with `std`.
        #[allow(clippy::needless_return, clippy::approx_constant)]
        // Most calls fail: `cold` keeps the calls out of the dispatchers' straight-line checks.
        #[cold]
        pub fn #name(rw: &mut Rewriter<'_>, root: Value) -> Option<Src> {
            let p0 = rw.begin(root, #inexact, FpFlags(#loses));
            #matcher
            #end
        }
    }
}

/// The matcher from `level` on: its steps at that level, then a loop over both operand orders
/// of commutative node `level` holding the deeper levels, and `tail` at the innermost. A check
/// failing inside a loop moves on to the loop's next order, so a mismatch near the root is not
/// tried again for every order of the nodes below it. Each order starts from the bindings the
/// loop started with.
fn nest(steps: &[Step], level: usize, levels: usize, tail: &TokenStream) -> TokenStream {
    let fail = if level == 0 {
        quote!(return None)
    } else {
        quote!(continue)
    };
    let here = steps
        .iter()
        .filter(|s| s.level == level)
        .map(|s| match &s.kind {
            StepKind::RejectIf(condition) => quote!(if #condition { #fail; }),
            StepKind::Let(statement) => statement.clone(),
        });
    if level == levels {
        return quote!(#(#here)* #tail);
    }
    let swap = format_ident!("swap{}", level);
    let start = format_ident!("before_swap{}", level);
    let inner = nest(steps, level + 1, levels, tail);
    quote! {
        #(#here)*
        let #start = rw.checkpoint();
        for #swap in [false, true] {
            rw.rewind(#start);
            #inner
        }
    }
}

/// Adds the steps of search node `node` at position `pos` (pre-order id `*id`), which depends
/// on the operand orders of `level` commutative nodes.
fn search_node(
    c: &Checked,
    node: &Node,
    pos: &TokenStream,
    level: usize,
    id: &mut usize,
    steps: &mut Vec<Step>,
) {
    let my_id = *id;
    *id += 1;
    let reject_if = |steps: &mut Vec<Step>, tokens: TokenStream| {
        steps.push(Step {
            level,
            kind: StepKind::RejectIf(tokens),
        })
    };
    match node {
        Node::Op(op) => {
            reject_if(
                steps,
                match op.op {
                    OpName::Op(alu) => {
                        let path = alu_path(alu);
                        quote!(!rw.op(&#pos, #path))
                    }
                    OpName::Conv(family) => {
                        let variant = format_ident!("{}", format!("{family:?}"));
                        quote!(!rw.conv(&#pos, ConvFamily::#variant))
                    }
                },
            );
            if let Some((bits, _)) = op.size {
                reject_if(steps, quote!(rw.bits(&#pos) != #bits));
            }
            for cond in &op.conds {
                let path = cond_path(cond);
                let span = cond
                    .segments
                    .last()
                    .map_or(Span::call_site(), |s| s.ident.span());
                reject_if(steps, quote_spanned!(span=> !#path(&rw.ctx(), #pos.value)));
            }
            // The k-th commutative node's sources 0 and 1 swap in the k-th loop.
            let swap = c.commutative.iter().position(|&n| n == my_id);
            // Pre-order ids of the sources: each follows the previous source's subtree.
            let mut next = my_id + 1;
            for (i, src) in op.srcs.iter().enumerate() {
                let child = next;
                next += subtree_size(src);
                let p = format_ident!("p{}", child);
                let (index, child_level) = match swap {
                    Some(k) if i < 2 => {
                        let flag = format_ident!("swap{}", k);
                        let index = if i == 0 {
                            quote!(#flag as usize)
                        } else {
                            quote!(!#flag as usize)
                        };
                        (index, level.max(k + 1))
                    }
                    _ => (quote!(#i), level),
                };
                steps.push(Step {
                    level: child_level,
                    kind: StepKind::Let(quote!(let #p = rw.src(&#pos, #index);)),
                });
                search_node(c, src, &quote!(#p), child_level, id, steps);
            }
        }
        Node::Var(var) => {
            let index = c.var_index(&var.ident.to_string());
            reject_if(steps, quote!(!rw.bind(#index, &#pos)));
            if var.is_const.is_some() {
                reject_if(steps, quote!(!rw.is_const(&#pos)));
            }
            if let Some((bits, _)) = var.size {
                reject_if(steps, quote!(rw.bits(&#pos) != #bits));
            }
            if let Some((ty, _)) = var.ty {
                let ty = base_path(ty);
                reject_if(steps, quote!(!rw.has_type(&#pos, #ty)));
            }
            for cond in &var.conds {
                let path = cond_path(cond);
                let span = cond
                    .segments
                    .last()
                    .map_or(Span::call_site(), |s| s.ident.span());
                reject_if(steps, quote_spanned!(span=> !#path(&rw.ctx(), &#pos)));
            }
        }
        Node::Lit(lit) => {
            let matches = literal_check(lit, pos);
            reject_if(steps, quote!(!#matches));
            if let Some((bits, _)) = lit.size {
                reject_if(steps, quote!(rw.bits(&#pos) != #bits));
            }
        }
    }
}

/// Whether the constant at `pos` is the literal `lit`.
fn literal_check(lit: &crate::ast::LitNode, pos: &TokenStream) -> TokenStream {
    match lit.value {
        Literal::Int(v) => {
            let v = int_tokens(v);
            quote!(rw.const_int(&#pos, #v))
        }
        Literal::Float(v) => {
            let v = float_tokens(v);
            quote!(rw.const_float(&#pos, #v))
        }
        Literal::Bool(b) => quote!(rw.const_bool(&#pos, #b)),
    }
}

/// The size of replacement node `id`'s value, as an expression.
fn size_expr(c: &Checked, id: usize) -> TokenStream {
    match c.resolve_dst(id) {
        Resolved::Fixed(bits) => quote!(#bits),
        Resolved::SearchNode(n) => {
            let p = format_ident!("p{}", n);
            quote!(rw.bits(&#p))
        }
    }
}

/// Emits the building of replacement node `node` with `comps` components; returns the local
/// holding its `Src`.
fn replace_node(
    c: &Checked,
    node: &Node,
    comps: TokenStream,
    id: &mut usize,
    out: &mut TokenStream,
) -> Ident {
    let my_id = *id;
    *id += 1;
    let local = format_ident!("b{}", my_id);
    match node {
        Node::Var(var) => {
            let index = c.var_index(&var.ident.to_string());
            match &var.swizzle {
                Some((swizzle, _)) => out.extend(quote! {
                    let #local = rw.var(#index);
                    let #local = rw.swizzle(#local, &[#(#swizzle),*]);
                }),
                None => out.extend(quote!(let #local = rw.var(#index);)),
            }
        }
        Node::Lit(lit) => {
            let bits = size_expr(c, my_id);
            let make = match lit.value {
                Literal::Int(v) => {
                    let v = int_tokens(v);
                    quote!(rw.imm_int(#v, bits))
                }
                Literal::Float(v) => {
                    let v = float_tokens(v);
                    quote!(rw.imm_float(#v, bits))
                }
                Literal::Bool(b) => quote!(rw.imm_bool(#b)),
            };
            out.extend(quote! {
                #[allow(unused_variables)]
                let bits: u8 = #bits;
                let #local = #make;
            });
        }
        Node::Op(op) => {
            let (child_comps, bits, opcode) = replacement_op(op, &comps, || size_expr(c, my_id));
            let srcs: Vec<Ident> = op
                .srcs
                .iter()
                .zip(child_comps)
                .map(|(src, child_comps)| replace_node(c, src, child_comps, id, out))
                .collect();
            let exact = op.exact.is_some();
            out.extend(quote! {
                let bits: u8 = #bits;
                let comps: u8 = #comps;
                let #local = rw.build(#opcode, bits, comps, &[#(#srcs),*], #exact);
            });
        }
    }
    local
}

/// What building replacement op node `op` with `comps` components takes, in either engine: the
/// component count of each source (an operand's fixed count, else `comps`), the destination
/// size (`size()` for opcodes whose destination is unsized, else a placeholder the builder
/// ignores), and the opcode, resolved from `bits` for width-generic conversions.
pub(crate) fn replacement_op(
    op: &OpNode,
    comps: &TokenStream,
    size: impl FnOnce() -> TokenStream,
) -> (Vec<TokenStream>, TokenStream, TokenStream) {
    let operands = match op.op {
        OpName::Op(alu) => alu.info().srcs,
        OpName::Conv(f) => f.members()[0].info().srcs,
    };
    let child_comps = operands
        .iter()
        .map(|operand| match operand.comps {
            0 => comps.clone(),
            n => quote!(#n),
        })
        .collect();
    let needs_size = match op.op {
        OpName::Op(alu) => alu.info().dst.bits == 0,
        OpName::Conv(_) => true,
    };
    let bits = if needs_size { size() } else { quote!(0) };
    let opcode = match op.op {
        OpName::Op(alu) => alu_path(alu),
        OpName::Conv(f) => {
            let variant = format_ident!("{}", format!("{f:?}"));
            quote!(Rewriter::conv_op(ConvFamily::#variant, bits))
        }
    };
    (child_comps, bits, opcode)
}

// The group's functions.

/// How many levels below the root the dispatchers check opcodes and constants before calling a
/// rule. Two levels reject most rules that cannot match (`fadd(fadd(a, #b), c)` on a chain of
/// `fadd`s of non-constants) with a few loads and compares; deeper checks would cost more than
/// they save.
const SHAPE_DEPTH: usize = 2;

/// What a conjunct of a dispatcher's check reads, cheapest first: conjuncts are evaluated in
/// this order, so a check that reads the IR or a constant runs only when the shape allows it.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Cost {
    /// The root's size or the shape read once per root.
    Shape,
    /// Instructions two levels down.
    Deeper,
    /// A constant's components.
    Value,
}

/// One conjunct of a dispatcher's check, with its cost.
type Conjunct = (Cost, TokenStream);

/// The dispatcher's check of what feeds the sources of `op`, found at `path` (source indices
/// from the root): the opcodes and constants (literals, `#` variables) the search requires
/// down to [`SHAPE_DEPTH`] levels, with both operand orders of a commutative op. It is a
/// necessary condition of a match, never a sufficient one. Empty when nothing is required.
fn sources_check(op: &crate::ast::OpNode, path: &[usize], reads: &mut RootReads) -> Vec<Conjunct> {
    let at = |i: usize| [path, &[i]].concat();
    let mut terms = Vec::new();
    let mut first = 0;
    if op.op.is_commutative() && op.srcs.len() >= 2 {
        first = 2;
        let mut pair = |a: usize, b: usize| {
            let mut both = node_check(&op.srcs[0], &at(a), reads);
            both.extend(node_check(&op.srcs[1], &at(b), reads));
            let cost = both.iter().map(|t| t.0).max();
            cost.zip(and_all(both))
        };
        if let (Some((cost, straight)), Some((_, swapped))) = (pair(0, 1), pair(1, 0)) {
            terms.push((cost, quote!((#straight || #swapped))));
        }
    }
    for (i, src) in op.srcs.iter().enumerate().skip(first) {
        terms.extend(node_check(src, &at(i), reads));
    }
    terms
}

/// What the dispatcher of one root opcode reads of the root before checking its rules, once
/// whatever the number of rules that look at it: the root's size (`bits`) and what feeds its
/// sources (`shape`, the engine's `rewrite::Shape`). Checks one level deeper
/// read the IR when they get there.
#[derive(Default)]
struct RootReads {
    bits: bool,
    shape: bool,
}

impl RootReads {
    /// The `let`s at the top of the dispatcher.
    fn lets(&self) -> TokenStream {
        let bits = self.bits.then(|| quote!(let bits = rw.value_bits(root);));
        let shape = self.shape.then(|| quote!(let shape = rw.shape(root);));
        quote!(#bits #shape)
    }
}

/// The check of search node `node` found at `path`, reading the kinds `reads` collects.
fn node_check(node: &Node, path: &[usize], reads: &mut RootReads) -> Vec<Conjunct> {
    let (kind, cost) = match path {
        [i] => (quote!(shape.src[#i]), Cost::Shape),
        [i, j] => (quote!(rw.src_src_kind(root, #i, #j)), Cost::Deeper),
        _ => unreachable!("dispatchers check {SHAPE_DEPTH} levels of sources"),
    };
    let is_const = (cost, quote!((#kind == SrcKind::Const)));
    let terms = match node {
        // A literal among the root's sources is compared right away: rules that differ only in
        // a literal (`fmul(a, 1.0)`, `fmul(a, -1.0)`…) would otherwise each be called.
        Node::Lit(lit) => match path {
            [i] => vec![
                is_const,
                (
                    Cost::Value,
                    literal_check(lit, &quote!(rw.root_src(root, #i))),
                ),
            ],
            _ => vec![is_const],
        },
        Node::Var(var) if var.is_const.is_some() => vec![is_const],
        Node::Var(var) if var.conds.iter().any(|c| c.is_ident("is_not_const")) => {
            vec![(cost, quote!((#kind != SrcKind::Const)))]
        }
        Node::Var(_) => Vec::new(),
        Node::Op(op) => {
            let me = match op.op {
                OpName::Op(alu) => {
                    let path = alu_path(alu);
                    quote!((#kind == SrcKind::Alu(#path)))
                }
                OpName::Conv(family) => {
                    let variant = format_ident!("{}", format!("{family:?}"));
                    quote!(matches!(#kind, SrcKind::Alu(op) if ConvFamily::#variant.contains(op)))
                }
            };
            let mut terms = vec![(cost, me)];
            if path.len() < SHAPE_DEPTH {
                terms.extend(sources_check(op, path, reads));
            }
            terms
        }
    };
    reads.shape |= !terms.is_empty();
    terms
}

/// The conjunction of `terms`, cheapest first; `None` when there are none.
fn and_all(mut terms: Vec<Conjunct>) -> Option<TokenStream> {
    terms.sort_by_key(|t| t.0);
    let terms: Vec<TokenStream> = terms.into_iter().map(|t| t.1).collect();
    (!terms.is_empty()).then(|| quote!(#(#terms)&&*))
}

/// The shared check of a rule in its root's dispatcher, or `None` when it requires nothing:
/// the root's size when the search fixes it (`iadd@1`), the places a repeated variable binds
/// twice (`fadd(a, a)`: the same value, the swizzles compared by the rule), and the shape of
/// what feeds the sources.
fn rule_guard(c: &Checked, reads: &mut RootReads) -> Option<TokenStream> {
    let Node::Op(root) = &c.rule.search else {
        return None;
    };
    let mut terms = Vec::new();
    if let Some((bits, _)) = root.size {
        reads.bits = true;
        terms.push((Cost::Shape, quote!((bits == #bits))));
    }
    terms.extend(sources_check(root, &[], reads));
    terms.extend(repeated_vars_check(c).map(|check| (Cost::Deeper, check)));
    and_all(terms)
}

/// A step of a path from the root to a pattern node: a fixed source index, or side 0 or 1 of a
/// commutative node's swappable sources, which source that is depending on the node's order.
#[derive(Clone, Copy, PartialEq)]
enum PathStep {
    Fixed(usize),
    Swappable { node: usize, side: usize },
}

/// Collects the paths of the variables of `node` (pre-order id `*id`, at `path`) down to
/// [`SHAPE_DEPTH`] levels.
fn var_paths(
    c: &Checked,
    node: &Node,
    path: Vec<PathStep>,
    id: &mut usize,
    out: &mut Vec<(String, Vec<PathStep>)>,
) {
    let my_id = *id;
    *id += 1;
    match node {
        Node::Var(var) => out.push((var.ident.to_string(), path)),
        Node::Lit(_) => {}
        Node::Op(op) => {
            let swappable = c.commutative.contains(&my_id);
            for (i, src) in op.srcs.iter().enumerate() {
                if path.len() == SHAPE_DEPTH {
                    *id += subtree_size(src);
                    continue;
                }
                let step = if swappable && i < 2 {
                    PathStep::Swappable {
                        node: my_id,
                        side: i,
                    }
                } else {
                    PathStep::Fixed(i)
                };
                var_paths(c, src, [path.clone(), vec![step]].concat(), id, out);
            }
        }
    }
}

/// At most this many commutative nodes' orders are enumerated for [`repeated_vars_check`].
const MAX_GUARD_ORDERS: usize = 3;

/// The check that every variable bound more than once in the first [`SHAPE_DEPTH`] levels
/// finds the same value at each place (`fadd(fmul(a, b), a)`), in at least one operand order
/// of the commutative nodes on the way (the swizzles are left to the rule).
fn repeated_vars_check(c: &Checked) -> Option<TokenStream> {
    let mut occurrences = Vec::new();
    var_paths(c, &c.rule.search, Vec::new(), &mut 0, &mut occurrences);
    let mut repeated: Vec<(String, Vec<Vec<PathStep>>)> = Vec::new();
    for (name, path) in occurrences {
        match repeated.iter_mut().find(|(n, _)| *n == name) {
            Some((_, paths)) => paths.push(path),
            None => repeated.push((name, vec![path])),
        }
    }
    repeated.retain(|(_, paths)| paths.len() > 1);
    let mut nodes: Vec<usize> = Vec::new();
    for step in repeated
        .iter()
        .flat_map(|(_, paths)| paths.iter().flatten())
    {
        if let PathStep::Swappable { node, .. } = *step
            && !nodes.contains(&node)
        {
            nodes.push(node);
        }
    }
    if repeated.is_empty() || nodes.len() > MAX_GUARD_ORDERS {
        return None;
    }
    let mut alternatives: Vec<TokenStream> = Vec::new();
    for flips in 0..1usize << nodes.len() {
        let concrete = |path: &[PathStep]| -> Vec<usize> {
            path.iter()
                .map(|step| match *step {
                    PathStep::Fixed(i) => i,
                    PathStep::Swappable { node, side } => {
                        let k = nodes.iter().position(|&n| n == node).expect("collected");
                        side ^ ((flips >> k) & 1)
                    }
                })
                .collect()
        };
        let pairs = repeated.iter().flat_map(|(_, paths)| {
            let first = concrete(&paths[0]);
            paths[1..].iter().map(move |other| {
                let other = concrete(other);
                quote!(rw.same_value(root, &[#(#first),*], &[#(#other),*]))
            })
        });
        let alternative = quote!((#(#pairs)&&*));
        if !alternatives
            .iter()
            .any(|a| a.to_string() == alternative.to_string())
        {
            alternatives.push(alternative);
        }
    }
    Some(match alternatives.as_slice() {
        [only] => only.clone(),
        _ => quote!((#(#alternatives)||*)),
    })
}

/// The rules rooted at each opcode, in priority order; opcodes no rule is rooted at are left out.
fn rules_by_root(checked: &[Checked]) -> Vec<(AluOp, Vec<usize>)> {
    AluOp::all()
        .map(|op| {
            let rules = checked
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.rule.equality)
                .filter(|(_, c)| match root_op(c) {
                    OpName::Op(root) => root == op,
                    OpName::Conv(f) => f.contains(op),
                })
                .map(|(i, _)| i)
                .collect::<Vec<usize>>();
            (op, rules)
        })
        .filter(|(_, rules)| !rules.is_empty())
        .collect()
}

/// The dispatchers, and the group's table of them by root opcode.
fn dispatchers(checked: &[Checked], fn_names: &[Ident]) -> (TokenStream, Vec<TokenStream>) {
    // Opcodes with the same rule list share a dispatcher.
    let mut shared: Vec<(Vec<AluOp>, Vec<usize>)> = Vec::new();
    for (op, rules) in rules_by_root(checked) {
        match shared.iter_mut().find(|(_, r)| *r == rules) {
            Some((ops, _)) => ops.push(op),
            None => shared.push((vec![op], rules)),
        }
    }
    let mut table = Vec::new();
    let mut fns = Vec::new();
    for (ops, rules) in &shared {
        let name = format_ident!("on_{}", ops[0].name());
        table.extend(ops.iter().map(|&op| {
            let path = alu_path(op);
            quote!((::shrew_engine::ops::#path, #name))
        }));
        let mut reads = RootReads::default();
        let guards: Vec<Option<TokenStream>> = rules
            .iter()
            .map(|&i| rule_guard(&checked[i], &mut reads))
            .collect();
        let reads = reads.lets();
        // Consecutive rules with the same check share one `if`.
        let mut body = TokenStream::new();
        let mut k = 0;
        while k < rules.len() {
            let key = guards[k].as_ref().map(ToString::to_string);
            let mut run = Vec::new();
            while k < rules.len() && guards[k].as_ref().map(ToString::to_string) == key {
                let i = rules[k];
                let f = &fn_names[i];
                run.push(quote! {
                    if rw.enabled(#i) && let Some(r) = #f(rw, root) {
                        return Some((#i, r));
                    }
                });
                k += 1;
            }
            match &guards[k - 1] {
                Some(check) => body.extend(quote!(if #check { #(#run)* })),
                None => body.extend(run),
            }
        }
        let doc = format!(
            " Rules rooted at `{}`, in priority order: the first enabled one that matches `root` \
             is applied; returns its index and the replacement.",
            ops.iter()
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join("`, `")
        );
        fns.push(quote! {
            #[doc = #doc]
            pub fn #name(rw: &mut Rewriter<'_>, root: Value) -> Option<(usize, Src)> {
                #reads
                #body
                None
            }
        });
    }
    (quote!(#(#fns)*), table)
}

// Metadata.

fn size_tokens(c: &Checked, class: Option<usize>, free: &[(usize, Vec<u8>)]) -> TokenStream {
    match class.and_then(|cl| c.sizes.describe(cl, free)) {
        Some(Ok(bits)) => quote!(::shrew_engine::rewrite::Size::Fixed(#bits)),
        Some(Err(index)) => {
            let index = index as u8;
            quote!(::shrew_engine::rewrite::Size::Class(#index))
        }
        None => quote!(::shrew_engine::rewrite::Size::Fixed(0)),
    }
}

fn pattern_tokens(
    c: &Checked,
    node: &Node,
    id: &mut usize,
    free: &[(usize, Vec<u8>)],
) -> TokenStream {
    let my_id = *id;
    *id += 1;
    let rw = quote!(::shrew_engine::rewrite);
    match node {
        Node::Var(var) => {
            let index = c.var_index(&var.ident.to_string()) as u8;
            let swizzle = match &var.swizzle {
                Some((s, _)) => quote!(Some(&[#(#s),*])),
                None => quote!(None),
            };
            quote!(#rw::Pattern::Var { index: #index, swizzle: #swizzle })
        }
        Node::Lit(lit) => {
            let value = match lit.value {
                Literal::Int(v) => {
                    let v = int_tokens(v);
                    quote!(#rw::Literal::Int(#v))
                }
                Literal::Float(v) => {
                    let v = float_tokens(v);
                    quote!(#rw::Literal::Float(#v))
                }
                Literal::Bool(b) => quote!(#rw::Literal::Bool(#b)),
            };
            let size = size_tokens(c, Some(c.sizes.dst[my_id]), free);
            quote!(#rw::Pattern::Const { value: #value, size: #size })
        }
        Node::Op(op) => {
            let name = match op.op {
                OpName::Op(alu) => {
                    let path = alu_path(alu);
                    quote!(#rw::OpName::Op(::shrew_engine::ops::#path))
                }
                OpName::Conv(f) => {
                    let variant = format_ident!("{}", format!("{f:?}"));
                    quote!(#rw::OpName::Conv(::shrew_engine::ops::ConvFamily::#variant))
                }
            };
            let size = size_tokens(c, Some(c.sizes.dst[my_id]), free);
            let src_size = size_tokens(c, c.sizes.src[my_id], free);
            let srcs: Vec<TokenStream> = op
                .srcs
                .iter()
                .map(|s| pattern_tokens(c, s, id, free))
                .collect();
            let exact = op.exact.is_some();
            let conds = op.conds.iter().map(path_string);
            quote! {
                #rw::Pattern::Op {
                    op: #name,
                    size: #size,
                    src_size: #src_size,
                    srcs: &[#(#srcs),*],
                    exact: #exact,
                    conds: &[#(#conds),*],
                }
            }
        }
    }
}

fn path_string(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn rule_info(c: &Checked, fn_name: &Ident) -> TokenStream {
    let rw = quote!(::shrew_engine::rewrite);
    let text = c.rule.to_string();
    let (file, line) = location(c.rule.span);
    let name = fn_name.to_string();
    let free = c.sizes.free_classes();
    let mut id = 0;
    let search = pattern_tokens(c, &c.rule.search, &mut id, &free);
    let replace = pattern_tokens(c, &c.rule.replace, &mut id, &free);
    let mut search_nodes = Vec::new();
    preorder(&c.rule.search, &mut search_nodes);
    let vars = c.vars.iter().map(|v| {
        let var_name = &v.name;
        let first = search_nodes
            .iter()
            .position(|n| matches!(n, Node::Var(x) if x.ident == v.name))
            .expect("every variable occurs in the search");
        let size = size_tokens(c, Some(c.sizes.dst[first]), &free);
        let is_const = v.is_const;
        let ty = match v.ty {
            Some(ty) => {
                let ty = base_path(ty);
                quote!(Some(::shrew_engine::ops::#ty))
            }
            None => quote!(None),
        };
        let conds = v.conds.iter().map(|cond| {
            let name = path_string(cond);
            let check = match cond.get_ident() {
                Some(id) => quote!(::shrew_engine::rewrite::conds::#id),
                None => quote!(#cond),
            };
            quote!(#rw::VarCond { name: #name, check: #check })
        });
        quote! {
            #rw::VarInfo {
                name: #var_name,
                size: #size,
                is_const: #is_const,
                ty: #ty,
                conds: &[#(#conds),*],
            }
        }
    });
    let classes = free.iter().map(|(_, sizes)| quote!(&[#(#sizes),*]));
    let inexact = c.inexact;
    let loses = c.loses;
    let guard = match (&c.rule.guard, c.rule.guard_text()) {
        (Some(guard), Some(text)) => quote! {
            Some(#rw::Guard {
                text: #text,
                holds: |opts: &#rw::TargetOptions| -> bool { #guard },
            })
        },
        _ => quote!(None),
    };
    let egraph = if egraph::has_egraph_form(c) {
        let search = format_ident!("search_{}", fn_name);
        let apply = format_ident!("apply_{}", fn_name);
        quote! {
            Some(::shrew_engine::egraph::rules::EggRule {
                search: egraph::#search,
                apply: egraph::#apply,
            })
        }
    } else {
        quote!(None)
    };
    let egraph_only = c.rule.equality;
    quote! {
        #rw::RuleInfo {
            text: #text,
            file: #file,
            line: #line,
            module: module_path!(),
            name: #name,
            search: #search,
            replace: #replace,
            vars: &[#(#vars),*],
            classes: &[#(#classes),*],
            inexact: #inexact,
            loses: ::shrew_engine::ir::FpFlags(#loses),
            guard: #guard,
            egraph: #egraph,
            egraph_only: #egraph_only,
        }
    }
}
