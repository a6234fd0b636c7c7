//! Bit-size inference: unification of bit-size classes over a rule's nodes.
//!
//! Every node gets the class of the value it produces; an op whose sources are unsized but whose
//! destination is sized (comparisons, conversions) has a second class for its sources. Classes
//! carry the sizes they may still take (from the base types of the operands they meet) and
//! possibly a fixed size. The search unifies freely, which adds match constraints; the
//! replacement may only unify classes it created itself with others, so that it never relies on
//! a constraint the matcher did not check.

use crate::ast::{Node, OpName, Side};
use proc_macro2::Span;
use shrew_ops::{BIT_SIZES, BaseType};
use std::collections::HashMap;

pub type ClassId = usize;

#[derive(Clone)]
struct Class {
    parent: ClassId,
    fixed: Option<u8>,
    /// Bit mask over [`BIT_SIZES`].
    allowed: u8,
    /// Created while walking the search: its size is known when the rule matches.
    search: bool,
}

/// The classes of one rule's nodes, numbered in pre-order, search first.
pub struct Sizes {
    classes: Vec<Class>,
    /// Class of the value each node produces.
    pub dst: Vec<ClassId>,
    /// Class of the unsized sources of each op node, if it has any.
    pub src: Vec<Option<ClassId>>,
    vars: HashMap<String, ClassId>,
    side: Side,
}

fn mask_of(sizes: &[u8]) -> u8 {
    BIT_SIZES
        .iter()
        .enumerate()
        .filter(|(_, b)| sizes.contains(b))
        .fold(0, |m, (i, _)| m | 1 << i)
}

fn sizes_of(mask: u8) -> Vec<u8> {
    BIT_SIZES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & 1 << i != 0)
        .map(|(_, &b)| b)
        .collect()
}

/// What the replacement needs to know about a class to build values of its size.
pub enum Resolved {
    Fixed(u8),
    /// The size of the value matched at this search node.
    SearchNode(usize),
}

impl Sizes {
    pub fn new() -> Sizes {
        Sizes {
            classes: Vec::new(),
            dst: Vec::new(),
            src: Vec::new(),
            vars: HashMap::new(),
            side: Side::Search,
        }
    }

    fn fresh(&mut self, allowed: u8) -> ClassId {
        let id = self.classes.len();
        self.classes.push(Class {
            parent: id,
            fixed: None,
            allowed,
            search: self.side == Side::Search,
        });
        id
    }

    pub fn find(&self, mut c: ClassId) -> ClassId {
        while self.classes[c].parent != c {
            c = self.classes[c].parent;
        }
        c
    }

    fn restrict(&mut self, c: ClassId, base: BaseType, span: Span) -> syn::Result<()> {
        let root = self.find(c);
        let allowed = self.classes[root].allowed & mask_of(base.allowed_bit_sizes());
        if self.side == Side::Replace
            && self.classes[root].search
            && allowed != self.classes[root].allowed
        {
            return Err(syn::Error::new(
                span,
                format!(
                    "the replacement needs a {} operand here, which the search does not guarantee; \
                     add `@N` or a type to the search",
                    base.name()
                ),
            ));
        }
        if allowed == 0 {
            return Err(syn::Error::new(
                span,
                format!(
                    "bit-size conflict: no size fits both a {} operand and the sizes {:?} required elsewhere",
                    base.name(),
                    sizes_of(self.classes[root].allowed)
                ),
            ));
        }
        self.classes[root].allowed = allowed;
        Ok(())
    }

    fn pin(&mut self, c: ClassId, bits: u8, span: Span) -> syn::Result<()> {
        let fixed = self.fresh(mask_of(&[bits]));
        self.classes[fixed].fixed = Some(bits);
        self.unify(c, fixed, span)
    }

    fn unify(&mut self, a: ClassId, b: ClassId, span: Span) -> syn::Result<()> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let (ca, cb) = (self.classes[ra].clone(), self.classes[rb].clone());
        if let (Some(x), Some(y)) = (ca.fixed, cb.fixed)
            && x != y
        {
            return Err(syn::Error::new(
                span,
                format!("bit-size conflict: this must have {x} bits and {y} bits"),
            ));
        }
        if self.side == Side::Replace {
            let same_fixed = ca.fixed.is_some() && ca.fixed == cb.fixed;
            if ca.search && cb.search && !same_fixed {
                return Err(syn::Error::new(
                    span,
                    "the replacement needs two bit sizes to be equal that the search does not \
                     tie together; add `@N` to the search",
                ));
            }
            let search_free = (ca.search && ca.fixed.is_none() && cb.fixed.is_some())
                || (cb.search && cb.fixed.is_none() && ca.fixed.is_some());
            if search_free {
                return Err(syn::Error::new(
                    span,
                    format!(
                        "the replacement needs {} bits where the search accepts any size; add `@N` to the search",
                        ca.fixed.or(cb.fixed).unwrap_or(0)
                    ),
                ));
            }
        }
        let allowed = ca.allowed & cb.allowed;
        let narrows_search =
            (ca.search && allowed != ca.allowed) || (cb.search && allowed != cb.allowed);
        if self.side == Side::Replace && narrows_search && allowed != 0 {
            return Err(syn::Error::new(
                span,
                format!(
                    "the replacement only works for sizes {:?}, which the search does not check; \
                     add `@N` to the search",
                    sizes_of(allowed)
                ),
            ));
        }
        if allowed == 0 {
            return Err(syn::Error::new(
                span,
                format!(
                    "bit-size conflict: sizes {:?} and {:?} have nothing in common",
                    sizes_of(ca.allowed),
                    sizes_of(cb.allowed)
                ),
            ));
        }
        self.classes[rb].parent = ra;
        let root = &mut self.classes[ra];
        root.fixed = ca.fixed.or(cb.fixed);
        root.allowed = allowed;
        root.search = ca.search || cb.search;
        Ok(())
    }

    /// Assigns classes to `node` and its sources in pre-order and returns its value's class.
    /// Errors are collected; a failed unification leaves the classes apart.
    pub fn walk(&mut self, node: &Node, side: Side, errors: &mut Vec<syn::Error>) -> ClassId {
        self.side = side;
        let id = self.dst.len();
        self.dst.push(usize::MAX);
        self.src.push(None);
        let check = |r: syn::Result<()>, errors: &mut Vec<syn::Error>| {
            if let Err(e) = r {
                errors.push(e);
            }
        };
        let class = match node {
            Node::Var(var) => {
                let name = var.ident.to_string();
                let class = match self.vars.get(&name) {
                    Some(&c) => c,
                    None => {
                        let c = self.fresh(mask_of(&BIT_SIZES));
                        self.vars.insert(name, c);
                        c
                    }
                };
                if let Some((bits, span)) = var.size {
                    let r = self.pin(class, bits, span);
                    check(r, errors);
                }
                if let Some((ty, span)) = var.ty {
                    let r = self.restrict(class, ty, span);
                    check(r, errors);
                }
                class
            }
            Node::Lit(lit) => {
                let class = self.fresh(mask_of(&BIT_SIZES));
                if let Some((bits, span)) = lit.size {
                    let r = self.pin(class, bits, span);
                    check(r, errors);
                }
                class
            }
            Node::Op(op) => {
                let span = op.ident.span();
                let (dst_operand, src_operands): (_, Vec<_>) = match op.op {
                    OpName::Op(alu) => {
                        let info = alu.info();
                        (info.dst, info.srcs.to_vec())
                    }
                    OpName::Conv(family) => {
                        let first = family.members()[0].info();
                        (first.dst, first.srcs.to_vec())
                    }
                };
                let dst = self.fresh(mask_of(&BIT_SIZES));
                match op.op {
                    OpName::Conv(family) => {
                        let sizes: Vec<u8> =
                            family.members().iter().map(|m| m.info().dst.bits).collect();
                        self.classes[dst].allowed = mask_of(&sizes);
                    }
                    OpName::Op(_) if dst_operand.bits != 0 => {
                        let r = self.pin(dst, dst_operand.bits, span);
                        check(r, errors);
                    }
                    OpName::Op(_) => {
                        let r = self.restrict(dst, dst_operand.base, span);
                        check(r, errors);
                    }
                }
                if let Some((bits, size_span)) = op.size {
                    let r = self.pin(dst, bits, size_span);
                    check(r, errors);
                }
                let unsized_srcs = src_operands.iter().any(|o| o.bits == 0);
                let common = match op.op {
                    OpName::Op(_) if dst_operand.bits == 0 => Some(dst),
                    _ if unsized_srcs => Some(self.fresh(mask_of(&BIT_SIZES))),
                    _ => None,
                };
                self.src[id] = common;
                for (src, operand) in op.srcs.iter().zip(&src_operands) {
                    let child = self.walk(src, side, errors);
                    let span = src.span();
                    let r = match (operand.bits, common) {
                        (0, Some(common)) => self
                            .unify(common, child, span)
                            .and_then(|()| self.restrict(child, operand.base, span)),
                        (bits, _) => self
                            .pin(child, bits, span)
                            .and_then(|()| self.restrict(child, operand.base, span)),
                    };
                    check(r, errors);
                }
                dst
            }
        };
        self.dst[id] = class;
        class
    }

    /// Ties the replacement's root to the search's.
    pub fn unify_roots(
        &mut self,
        search: ClassId,
        replace: ClassId,
        span: Span,
    ) -> syn::Result<()> {
        self.side = Side::Replace;
        self.unify(search, replace, span)
    }

    /// How the replacement learns the size of `class`, or `None` when nothing determines it.
    pub fn resolve(&self, class: ClassId, search_nodes: usize) -> Option<Resolved> {
        let root = self.find(class);
        if let Some(bits) = self.classes[root].fixed {
            return Some(Resolved::Fixed(bits));
        }
        if self.classes[root].allowed.count_ones() == 1 {
            return Some(Resolved::Fixed(sizes_of(self.classes[root].allowed)[0]));
        }
        (0..search_nodes)
            .find(|&n| self.find(self.dst[n]) == root)
            .map(Resolved::SearchNode)
    }

    /// The free classes of the rule (roots without a fixed size), numbered densely, with the
    /// sizes each may take.
    pub fn free_classes(&self) -> Vec<(ClassId, Vec<u8>)> {
        let mut out: Vec<(ClassId, Vec<u8>)> = Vec::new();
        for c in 0..self.classes.len() {
            let root = self.find(c);
            if root == c && self.classes[c].fixed.is_none() {
                out.push((c, sizes_of(self.classes[c].allowed)));
            }
        }
        out
    }

    /// A class as metadata: fixed, or its index among [`Sizes::free_classes`].
    pub fn describe(
        &self,
        class: ClassId,
        free: &[(ClassId, Vec<u8>)],
    ) -> Option<Result<u8, usize>> {
        let root = self.find(class);
        if let Some(bits) = self.classes[root].fixed {
            return Some(Ok(bits));
        }
        free.iter().position(|(c, _)| *c == root).map(Err)
    }
}
