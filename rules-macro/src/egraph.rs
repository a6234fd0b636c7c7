//! Code generation for the e-graph: per rule, a search function and an apply function over
//! `shrew_engine::egraph::rules::{Search, Apply}`.
//!
//! The search is nested loops: each op node of the pattern loops over the matching nodes of its
//! class, each commutative node of the greedy matcher's list also over its two operand orders,
//! and every other check is a `continue` of the innermost loop, so a failed check backtracks to
//! the latest choice. A match reports the class at every pattern position (pre-order, the same
//! numbering as the greedy matcher's `p0`, `p1`…). The apply function builds the replacement
//! bottom-up from those classes, as the greedy builder does from its positions.

use crate::ast::{Literal, Node, OpName};
use crate::check::{Checked, preorder, subtree_size};
use crate::codegen::{alu_path, base_path, float_tokens, int_tokens, replacement_op};
use crate::infer::Resolved;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// Whether the e-graph can run the rule at all: conditions on matched operations are about
/// uses, which an e-graph does not have.
pub fn has_egraph_form(c: &Checked) -> bool {
    let mut nodes = Vec::new();
    preorder(&c.rule.search, &mut nodes);
    nodes
        .iter()
        .all(|n| !matches!(n, Node::Op(op) if !op.conds.is_empty()))
}

/// One step of a search function: a loop whose body holds everything after it, or a statement.
enum Layer {
    Loop(TokenStream),
    Stmt(TokenStream),
}

/// The search and apply functions of a rule, named `search_<name>` and `apply_<name>`.
pub fn rule_fns(c: &Checked, name: &Ident, doc: &str) -> TokenStream {
    let search = format_ident!("search_{}", name);
    let apply = format_ident!("apply_{}", name);
    let mut nodes = Vec::new();
    preorder(&c.rule.search, &mut nodes);
    let mut layers = Vec::new();
    let mut exact_flags = Vec::new();
    let mut first_at: Vec<Option<usize>> = vec![None; c.vars.len()];
    let mut id = 0;
    search_node(
        c,
        &c.rule.search,
        &mut id,
        &mut layers,
        &mut exact_flags,
        &mut first_at,
    );
    let positions = (0..nodes.len()).map(|i| format_ident!("p{}", i));
    let exact = if exact_flags.is_empty() {
        quote!(false)
    } else {
        quote!(#(#exact_flags)||*)
    };
    let mut body = quote!(m.found(&[#(#positions),*], #exact, n0.fp););
    for layer in layers.into_iter().rev() {
        body = match layer {
            Layer::Loop(header) => quote!(#header { #body }),
            Layer::Stmt(stmt) => quote!(#stmt #body),
        };
    }
    let mut build = TokenStream::new();
    let mut build_id = c.search_nodes;
    let result = replace_node(
        c,
        &c.rule.replace,
        quote!(b.root_comps()),
        &first_at,
        &mut build_id,
        &mut build,
    );
    let search_doc =
        format!("{doc}\n\n Search in the e-graph: reports every match rooted at `p0`.");
    let apply_doc = format!("{doc}\n\n Replacement in the e-graph, from a match of [`{search}`].");
    quote! {
        #[doc = #search_doc]
        pub fn #search(m: &mut Search<'_>, p0: Id) {
            #body
        }

        #[doc = #apply_doc]
        #[allow(unused_variables, clippy::approx_constant)]
        pub fn #apply(b: &mut Apply<'_>) -> Option<Id> {
            #build
            Some(#result)
        }
    }
}

/// Adds the layers of search node `node` (pre-order id `*id`, position `p<id>`).
fn search_node(
    c: &Checked,
    node: &Node,
    id: &mut usize,
    layers: &mut Vec<Layer>,
    exact_flags: &mut Vec<TokenStream>,
    first_at: &mut [Option<usize>],
) {
    let my_id = *id;
    *id += 1;
    let pos = format_ident!("p{}", my_id);
    let reject_unless = |layers: &mut Vec<Layer>, ok: TokenStream| {
        layers.push(Layer::Stmt(quote!(if !(#ok) { continue; })));
    };
    match node {
        Node::Op(op) => {
            let n = format_ident!("n{}", my_id);
            let nodes = match op.op {
                OpName::Op(alu) => {
                    let path = alu_path(alu);
                    quote!(m.nodes(#pos, #path))
                }
                OpName::Conv(family) => {
                    let variant = format_ident!("{}", format!("{family:?}"));
                    quote!(m.conv_nodes(#pos, ConvFamily::#variant))
                }
            };
            layers.push(Layer::Loop(quote!(for #n in #nodes)));
            exact_flags.push(quote!(#n.exact));
            if let Some((bits, _)) = op.size {
                reject_unless(layers, quote!(m.bits(#pos) == #bits));
            }
            let swap = c
                .commutative
                .iter()
                .position(|&k| k == my_id)
                .map(|k| format_ident!("swap{}", k));
            if let Some(swap) = &swap {
                layers.push(Layer::Loop(quote!(for &#swap in #n.swaps())));
            }
            let mut next = my_id + 1;
            let mut children = Vec::new();
            for (i, src) in op.srcs.iter().enumerate() {
                let child = format_ident!("p{}", next);
                let index = match &swap {
                    Some(swap) if i == 0 => quote!(#swap as usize),
                    Some(swap) if i == 1 => quote!(!#swap as usize),
                    _ => quote!(#i),
                };
                layers.push(Layer::Stmt(quote!(let #child = #n.srcs[#index];)));
                children.push(src);
                next += subtree_size(src);
            }
            for src in children {
                search_node(c, src, id, layers, exact_flags, first_at);
            }
        }
        Node::Var(var) => {
            let index = c.var_index(&var.ident.to_string());
            if let Some(first) = first_at[index] {
                let first = format_ident!("p{}", first);
                reject_unless(layers, quote!(#pos == #first));
                return;
            }
            first_at[index] = Some(my_id);
            // The variable's attributes gathered over all its occurrences: later occurrences
            // only check that they are the same class.
            let info = &c.vars[index];
            if info.is_const {
                reject_unless(layers, quote!(m.is_const(#pos)));
            }
            if let Some(bits) = info.size {
                reject_unless(layers, quote!(m.bits(#pos) == #bits));
            }
            if let Some(ty) = info.ty {
                let ty = base_path(ty);
                reject_unless(layers, quote!(m.has_type(#pos, #ty)));
            }
            if !info.conds.is_empty() {
                reject_unless(layers, quote!(m.var_conds(#index, #pos)));
            }
        }
        Node::Lit(lit) => {
            let matches = match lit.value {
                Literal::Int(v) => {
                    let v = int_tokens(v);
                    quote!(m.const_int(#pos, #v))
                }
                Literal::Float(v) => {
                    let v = float_tokens(v);
                    quote!(m.const_float(#pos, #v))
                }
                Literal::Bool(b) => quote!(m.const_bool(#pos, #b)),
            };
            reject_unless(layers, matches);
            if let Some((bits, _)) = lit.size {
                reject_unless(layers, quote!(m.bits(#pos) == #bits));
            }
        }
    }
}

/// The size of replacement node `id`'s value, as an expression.
fn size_expr(c: &Checked, id: usize) -> TokenStream {
    match c.resolve_dst(id) {
        Resolved::Fixed(bits) => quote!(#bits),
        Resolved::SearchNode(n) => quote!(b.bits(#n)),
    }
}

/// Emits the building of replacement node `node` with `comps` components; returns the local
/// holding its class.
fn replace_node(
    c: &Checked,
    node: &Node,
    comps: TokenStream,
    first_at: &[Option<usize>],
    id: &mut usize,
    out: &mut TokenStream,
) -> Ident {
    let my_id = *id;
    *id += 1;
    let local = format_ident!("b{}", my_id);
    match node {
        Node::Var(var) => {
            let index = c.var_index(&var.ident.to_string());
            let at = first_at[index].expect("replacement variables are bound by the search");
            out.extend(quote!(let #local = b.at(#at);));
            if let Some((swizzle, _)) = &var.swizzle {
                out.extend(quote!(let #local = b.swizzle(#local, &[#(#swizzle),*]);));
            }
        }
        Node::Lit(lit) => {
            let bits = size_expr(c, my_id);
            let make = match lit.value {
                Literal::Int(v) => {
                    let v = int_tokens(v);
                    quote!(b.imm_int(#v, bits, comps))
                }
                Literal::Float(v) => {
                    let v = float_tokens(v);
                    quote!(b.imm_float(#v, bits, comps))
                }
                Literal::Bool(v) => quote!(b.imm_bool(#v, comps)),
            };
            out.extend(quote! {
                let bits: u8 = #bits;
                let comps: u8 = #comps;
                let #local = #make;
            });
        }
        Node::Op(op) => {
            let (child_comps, bits, opcode) = replacement_op(op, &comps, || size_expr(c, my_id));
            let srcs: Vec<Ident> = op
                .srcs
                .iter()
                .zip(child_comps)
                .map(|(src, child_comps)| replace_node(c, src, child_comps, first_at, id, out))
                .collect();
            let exact = op.exact.is_some();
            out.extend(quote! {
                let bits: u8 = #bits;
                let comps: u8 = #comps;
                let #local = b.build(#opcode, bits, comps, &[#(#srcs),*], #exact)?;
            });
        }
    }
    local
}
