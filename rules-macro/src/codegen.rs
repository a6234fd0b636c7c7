//! Code generation: one matcher function per rule, a dispatcher per root opcode that shares the
//! opcode checks of the rules rooted there, and the group's metadata table.

use crate::ast::{Group, Literal, Node, OpName};
use crate::check::{Checked, check_group, preorder};
use crate::infer::Resolved;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use shrew_ops::{AluOp, BaseType};
use std::collections::BTreeSet;

pub fn expand(mut group: Group) -> TokenStream {
    let mut errors = std::mem::take(&mut group.errors);
    let checked = check_group(&group, &mut errors);
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
                guards: |_| ::std::vec::Vec::new(),
                apply: |_, _| ::std::option::Option::None,
            };
        };
    }
    let module = format_ident!("{}", group_name);
    let fn_names: Vec<Ident> = checked
        .iter()
        .enumerate()
        .map(|(i, c)| format_ident!("r{}_{}", i, root_op(c).name()))
        .collect();
    let infos = checked.iter().zip(&fn_names).map(|(c, f)| rule_info(c, f));
    let rule_fns = checked.iter().zip(&fn_names).map(|(c, f)| rule_fn(c, f));
    let guards = guards_fn(&checked);
    let indices = 0..checked.len();
    let per_op = rules_by_root(&checked);
    let roots: Vec<TokenStream> = per_op
        .iter()
        .map(|(op, _)| {
            let path = alu_path(*op);
            quote!(::shrew_engine::ops::#path)
        })
        .collect();
    let dispatch = dispatchers(&checked, &fn_names, per_op);
    let module_doc = format!(
        "Matchers of the rule group [`{name}`](super::{name}): one function per rule, in priority \
         order, and [`apply`], which dispatches on the root opcode."
    );
    let output = quote! {
        #(#attrs)*
        #vis static #name: ::shrew_engine::rewrite::RuleGroup = ::shrew_engine::rewrite::RuleGroup {
            name: #group_name,
            rules: &[#(#infos),*],
            roots: &[#(#roots),*],
            guards: #module::guards,
            apply: #module::apply,
        };

        #[doc = #module_doc]
        #vis mod #module {
            #[allow(unused_imports)]
            use ::shrew_engine::ir::{FpFlags, Value};
            #[allow(unused_imports)]
            use ::shrew_engine::ops::{AluOp, BaseType, ConvFamily};
            #[allow(unused_imports)]
            use ::shrew_engine::rewrite::{Rewriter, Src, SrcKind, TargetOptions, conds};

            #guards
            #dispatch
            #(#rule_fns)*

            /// One test per rule: search and replacement evaluated on special and random values
            /// at every bit size the rule allows must agree (see `shrew_engine::rewrite::verify`).
            #[cfg(test)]
            mod verify {
                #(
                    #[test]
                    fn #fn_names() {
                        ::shrew_engine::rewrite::verify::assert_rule(&super::super::#name.rules[#indices]);
                    }
                )*
            }
        }
    };
    unsuffixed(output)
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

fn alu_path(op: AluOp) -> TokenStream {
    let variant = format_ident!("{}", format!("{op:?}"));
    quote!(AluOp::#variant)
}

fn base_path(ty: BaseType) -> TokenStream {
    let variant = format_ident!("{}", format!("{ty:?}"));
    quote!(BaseType::#variant)
}

fn cond_path(path: &syn::Path) -> TokenStream {
    match path.get_ident() {
        Some(id) => quote!(conds::#id),
        None => quote!(#path),
    }
}

fn float_tokens(x: f64) -> TokenStream {
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

fn int_tokens(x: i64) -> TokenStream {
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

fn rule_fn(c: &Checked, name: &Ident) -> TokenStream {
    let text = c.rule.to_string();
    let (file, line) = location(c.rule.span);
    let doc = format!(" `{text}`\n\n Defined at {file}:{line}.");
    let mut next_id = 0;
    let looped = !c.commutative.is_empty();
    let fail = if looped {
        quote!(continue)
    } else {
        quote!(return None)
    };
    let mut matcher = TokenStream::new();
    let root = quote!(p0);
    search_node(c, &c.rule.search, &root, &mut next_id, &fail, &mut matcher);
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
    let body = quote! {
        let p0 = rw.begin(root, #inexact, FpFlags(#loses));
        #matcher
        #build
        return Some(#result);
    };
    let body = if looped {
        let orders = 1u32 << c.commutative.len();
        quote! {
            for flips in 0..#orders {
                #body
            }
            None
        }
    } else {
        body
    };
    quote! {
        #[doc = #doc]
        #[allow(clippy::needless_return)]
        pub fn #name(rw: &mut Rewriter<'_>, root: Value) -> Option<Src> {
            #body
        }
    }
}

/// Emits the checks of search node `node` at position `pos` (pre-order id `*id`).
fn search_node(
    c: &Checked,
    node: &Node,
    pos: &TokenStream,
    id: &mut usize,
    fail: &TokenStream,
    out: &mut TokenStream,
) {
    let my_id = *id;
    *id += 1;
    match node {
        Node::Op(op) => {
            let check = match op.op {
                OpName::Op(alu) => {
                    let path = alu_path(alu);
                    quote!(rw.op(&#pos, #path))
                }
                OpName::Conv(family) => {
                    let variant = format_ident!("{}", format!("{family:?}"));
                    quote!(rw.conv(&#pos, ConvFamily::#variant))
                }
            };
            out.extend(quote!(if !#check { #fail; }));
            if let Some((bits, _)) = op.size {
                out.extend(quote!(if rw.bits(&#pos) != #bits { #fail; }));
            }
            for cond in &op.conds {
                let path = cond_path(cond);
                let span = cond
                    .segments
                    .last()
                    .map_or(Span::call_site(), |s| s.ident.span());
                out.extend(quote_spanned!(span=> if !#path(&rw.ctx(), #pos.value) { #fail; }));
            }
            // Flip bit k of the loop counter swaps the operands of the k-th commutative node.
            let swap = if let Some(k) = c.commutative.iter().position(|&n| n == my_id) {
                let mask = 1u32 << k;
                out.extend(quote!(let swap = flips & #mask != 0;));
                true
            } else {
                false
            };
            // Pre-order ids of the sources: each follows the previous source's subtree.
            let mut child_ids = Vec::new();
            let mut next = my_id + 1;
            for src in &op.srcs {
                child_ids.push(next);
                next += subtree_size(src);
            }
            for (i, child) in child_ids.iter().enumerate() {
                let p = format_ident!("p{}", child);
                let index = match (swap, i) {
                    (true, 0) => quote!(swap as usize),
                    (true, 1) => quote!(!swap as usize),
                    _ => quote!(#i),
                };
                out.extend(quote!(let #p = rw.src(&#pos, #index);));
            }
            for (src, child) in op.srcs.iter().zip(&child_ids) {
                let p = format_ident!("p{}", child);
                search_node(c, src, &quote!(#p), id, fail, out);
            }
        }
        Node::Var(var) => {
            let index = c.var_index(&var.ident.to_string());
            out.extend(quote!(if !rw.bind(#index, &#pos) { #fail; }));
            if var.is_const.is_some() {
                out.extend(quote!(if !rw.is_const(&#pos) { #fail; }));
            }
            if let Some((bits, _)) = var.size {
                out.extend(quote!(if rw.bits(&#pos) != #bits { #fail; }));
            }
            if let Some((ty, _)) = var.ty {
                let ty = base_path(ty);
                out.extend(quote!(if !rw.has_type(&#pos, #ty) { #fail; }));
            }
            for cond in &var.conds {
                let path = cond_path(cond);
                let span = cond
                    .segments
                    .last()
                    .map_or(Span::call_site(), |s| s.ident.span());
                out.extend(quote_spanned!(span=> if !#path(&rw.ctx(), &#pos) { #fail; }));
            }
        }
        Node::Lit(lit) => {
            let check = match lit.value {
                Literal::Int(v) => {
                    let v = int_tokens(v);
                    quote!(rw.const_int(&#pos, #v))
                }
                Literal::Float(v) => {
                    let v = float_tokens(v);
                    quote!(rw.const_float(&#pos, #v))
                }
                Literal::Bool(b) => quote!(rw.const_bool(&#pos, #b)),
            };
            out.extend(quote!(if !#check { #fail; }));
            if let Some((bits, _)) = lit.size {
                out.extend(quote!(if rw.bits(&#pos) != #bits { #fail; }));
            }
        }
    }
}

/// The size of replacement node `id`'s value, as an expression.
fn subtree_size(node: &Node) -> usize {
    let mut nodes = Vec::new();
    preorder(node, &mut nodes);
    nodes.len()
}

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
            let operands = match op.op {
                OpName::Op(alu) => alu.info().srcs.to_vec(),
                OpName::Conv(f) => f.members()[0].info().srcs.to_vec(),
            };
            let srcs: Vec<Ident> = op
                .srcs
                .iter()
                .zip(&operands)
                .map(|(src, operand)| {
                    let child_comps = if operand.comps != 0 {
                        let n = operand.comps;
                        quote!(#n)
                    } else {
                        comps.clone()
                    };
                    replace_node(c, src, child_comps, id, out)
                })
                .collect();
            let needs_size = match op.op {
                OpName::Op(alu) => alu.info().dst.bits == 0,
                OpName::Conv(_) => true,
            };
            let bits = if needs_size {
                size_expr(c, my_id)
            } else {
                quote!(0)
            };
            let opcode = match op.op {
                OpName::Op(alu) => alu_path(alu),
                OpName::Conv(f) => {
                    let variant = format_ident!("{}", format!("{f:?}"));
                    quote!(Rewriter::conv_op(ConvFamily::#variant, bits))
                }
            };
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

// The group's functions.

fn guards_fn(checked: &[Checked]) -> TokenStream {
    let any_guard = checked.iter().any(|c| c.rule.guard.is_some());
    let values = checked.iter().map(|c| match &c.rule.guard {
        Some(guard) => quote!(#guard),
        None => quote!(true),
    });
    let param = if any_guard {
        quote!(opts)
    } else {
        quote!(_opts)
    };
    quote! {
        /// Whether each rule's guard holds for the target's options.
        pub fn guards(#param: &TargetOptions) -> Vec<bool> {
            vec![#(#values),*]
        }
    }
}

/// How many levels below the root the dispatchers check opcodes and constants before calling a
/// rule. Two levels reject most rules that cannot match (`fadd(fadd(a, #b), c)` on a chain of
/// `fadd`s of non-constants) with a few loads and compares; deeper checks would cost more than
/// they save.
const SHAPE_DEPTH: usize = 2;

/// The dispatcher's check of what feeds the sources of `op`, found at `path` (source indices
/// from the root): the opcodes and constants (literals, `#` variables) the search requires
/// down to [`SHAPE_DEPTH`] levels, with both operand orders of a commutative op. It is a
/// necessary condition of a match, never a sufficient one. `None` when nothing is required.
fn sources_check(
    op: &crate::ast::OpNode,
    path: &[usize],
    slots: &mut BTreeSet<usize>,
) -> Option<TokenStream> {
    let at = |i: usize| [path, &[i]].concat();
    let mut terms: Vec<TokenStream> = Vec::new();
    let mut first = 0;
    if op.op.is_commutative() && op.srcs.len() >= 2 {
        first = 2;
        let mut pair = |a: usize, b: usize| {
            and_all(
                [
                    node_check(&op.srcs[0], &at(a), slots),
                    node_check(&op.srcs[1], &at(b), slots),
                ]
                .into_iter()
                .flatten(),
            )
        };
        if let (Some(straight), Some(swapped)) = (pair(0, 1), pair(1, 0)) {
            terms.push(quote!((#straight || #swapped)));
        }
    }
    terms.extend(
        op.srcs
            .iter()
            .enumerate()
            .skip(first)
            .filter_map(|(i, src)| node_check(src, &at(i), slots)),
    );
    and_all(terms.into_iter())
}

/// The check of search node `node` found at `path`. The kinds of the root's own sources are
/// read once per dispatch, into the variables `s0`, `s1`…; `slots` collects those used.
fn node_check(node: &Node, path: &[usize], slots: &mut BTreeSet<usize>) -> Option<TokenStream> {
    let kind = match path {
        [i] => {
            slots.insert(*i);
            let slot = format_ident!("s{}", i);
            quote!(#slot)
        }
        _ => quote!(rw.src_kind_at(root, &[#(#path),*])),
    };
    match node {
        Node::Lit(_) => Some(quote!((#kind == SrcKind::Const))),
        Node::Var(var) if var.is_const.is_some() => Some(quote!((#kind == SrcKind::Const))),
        Node::Var(_) => None,
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
            let below = if path.len() < SHAPE_DEPTH {
                sources_check(op, path, slots)
            } else {
                None
            };
            and_all([Some(me), below].into_iter().flatten())
        }
    }
}

fn and_all(terms: impl Iterator<Item = TokenStream>) -> Option<TokenStream> {
    let terms: Vec<TokenStream> = terms.collect();
    (!terms.is_empty()).then(|| quote!(#(#terms)&&*))
}

/// The shared check of a rule in its root's dispatcher, or `None` when it requires nothing:
/// the root's size when the search fixes it (`iadd@1`), the sources a repeated variable binds
/// twice (`fadd(a, a)`: the same value, the swizzles compared by the rule), and the shape of
/// what feeds the sources.
fn rule_guard(c: &Checked, slots: &mut BTreeSet<usize>) -> Option<TokenStream> {
    let Node::Op(root) = &c.rule.search else {
        return None;
    };
    let mut terms = Vec::new();
    if let Some((bits, _)) = root.size {
        terms.push(quote!((rw.value_bits(root) == #bits)));
    }
    let var_name = |node: &Node| match node {
        Node::Var(var) => Some(var.ident.to_string()),
        _ => None,
    };
    // A commutative root may match with sources 0 and 1 swapped, so a variable at one of them
    // may be found at either.
    let swappable = |i: usize| root.op.is_commutative() && i < 2;
    for (i, a) in root.srcs.iter().enumerate() {
        for (j, b) in root.srcs.iter().enumerate().skip(i + 1) {
            if var_name(a).is_none() || var_name(a) != var_name(b) {
                continue;
            }
            terms.push(if swappable(i) && !swappable(j) {
                quote!((rw.same_source_value(root, 0, #j) || rw.same_source_value(root, 1, #j)))
            } else {
                quote!(rw.same_source_value(root, #i, #j))
            });
        }
    }
    terms.extend(sources_check(root, &[], slots));
    and_all(terms.into_iter())
}

/// The rules rooted at each opcode, in priority order; opcodes no rule is rooted at are left out.
fn rules_by_root(checked: &[Checked]) -> Vec<(AluOp, Vec<usize>)> {
    AluOp::all()
        .map(|op| {
            let rules = checked
                .iter()
                .enumerate()
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

fn dispatchers(
    checked: &[Checked],
    fn_names: &[Ident],
    per_op: Vec<(AluOp, Vec<usize>)>,
) -> TokenStream {
    // Opcodes with the same rule list share a dispatcher.
    let mut shared: Vec<(Vec<AluOp>, Vec<usize>)> = Vec::new();
    for (op, rules) in per_op {
        match shared.iter_mut().find(|(_, r)| *r == rules) {
            Some((ops, _)) => ops.push(op),
            None => shared.push((vec![op], rules)),
        }
    }
    let mut arms = Vec::new();
    let mut fns = Vec::new();
    for (ops, rules) in &shared {
        let name = format_ident!("on_{}", ops[0].name());
        let paths = ops.iter().map(|&op| alu_path(op));
        arms.push(quote!(#(#paths)|* => #name(rw, root),));
        let mut slots = BTreeSet::new();
        let guards: Vec<Option<TokenStream>> = rules
            .iter()
            .map(|&i| rule_guard(&checked[i], &mut slots))
            .collect();
        let slot_lets = slots.iter().map(|&i| {
            let slot = format_ident!("s{}", i);
            quote!(let #slot = rw.src_kind(root, #i);)
        });
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
            " Rules rooted at `{}`, in priority order.",
            ops.iter()
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join("`, `")
        );
        fns.push(quote! {
            #[doc = #doc]
            fn #name(rw: &mut Rewriter<'_>, root: Value) -> Option<(usize, Src)> {
                #(#slot_lets)*
                #body
                None
            }
        });
    }
    quote! {
        /// Tries the group's enabled rules on `root` in priority order and applies the first that
        /// matches; returns its index and the replacement.
        pub fn apply(rw: &mut Rewriter<'_>, root: Value) -> Option<(usize, Src)> {
            match rw.alu_op(root)? {
                #(#arms)*
                _ => None,
            }
        }
        #(#fns)*
    }
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
    let guard = match c.rule.guard_text() {
        Some(text) => quote!(Some(#text)),
        None => quote!(None),
    };
    quote! {
        #rw::RuleInfo {
            text: #text,
            file: #file,
            line: #line,
            name: #name,
            search: #search,
            replace: #replace,
            vars: &[#(#vars),*],
            classes: &[#(#classes),*],
            inexact: #inexact,
            loses: ::shrew_engine::ir::FpFlags(#loses),
            guard: #guard,
        }
    }
}
