//! The shape of a rule: what it says independently of the bit sizes (each variable's
//! component count and whether it is a float, the literals), worked out once per rule before
//! any size assignment is planned.

use crate::rewrite::{Literal, OpName, Pattern, RuleInfo};
use shrew_ops::{BaseType, OpInfo};

/// The opcode table entry describing every member of `name` (a family's members share their
/// base types and component counts).
fn representative(name: OpName) -> &'static OpInfo {
    match name {
        OpName::Op(op) => op.info(),
        OpName::Conv(family) => family.members()[0].info(),
    }
}

/// Component counts, variable types and literals of a rule.
pub(super) struct Shape {
    pub(super) var_comps: Vec<u8>,
    pub(super) var_float: Vec<bool>,
    /// Components of the root.
    pub(super) root_comps: u8,
    pub(super) int_literals: Vec<i64>,
    pub(super) float_literals: Vec<f64>,
}

impl Shape {
    pub(super) fn new(rule: &RuleInfo) -> Shape {
        let root_comps = match &rule.search {
            Pattern::Op { op, .. } => representative(*op).dst.comps.max(1),
            _ => 1,
        };
        let mut shape = Shape {
            var_comps: vec![1; rule.vars.len()],
            var_float: rule
                .vars
                .iter()
                .map(|v| v.ty == Some(BaseType::Float))
                .collect(),
            root_comps,
            int_literals: Vec::new(),
            float_literals: Vec::new(),
        };
        // Twice, so that the replacement root's type, which comes from the variables' types,
        // reaches the variables the replacement passes through.
        for _ in 0..2 {
            shape.visit(&rule.search, root_comps, false);
            let float_root = shape.float_valued(&rule.search);
            shape.visit(&rule.replace, root_comps, float_root);
        }
        for (float, var) in shape.var_float.iter_mut().zip(rule.vars) {
            if matches!(
                var.ty,
                Some(BaseType::Int | BaseType::Uint | BaseType::Bool)
            ) {
                *float = false;
            }
        }
        let mut literals = |p: &Pattern| match p {
            Pattern::Const {
                value: Literal::Int(x),
                ..
            } => shape.int_literals.push(*x),
            Pattern::Const {
                value: Literal::Float(x),
                ..
            } => shape.float_literals.push(*x),
            _ => {}
        };
        rule.search.walk(&mut literals);
        rule.replace.walk(&mut literals);
        shape
    }

    /// Records what `p`, read at `ctx` components as a float or not, needs of its variables.
    fn visit(&mut self, p: &Pattern, ctx: u8, float: bool) {
        match p {
            Pattern::Var { index, swizzle } => {
                let i = *index as usize;
                let needed = match swizzle {
                    Some(s) => (0..ctx as usize)
                        .map(|k| s.get(k).map_or(k, |&c| c as usize) + 1)
                        .max()
                        .unwrap_or(1) as u8,
                    None => ctx,
                };
                self.var_comps[i] = self.var_comps[i].max(needed);
                self.var_float[i] |= float;
            }
            Pattern::Const { .. } => {}
            Pattern::Op { op, srcs, .. } => {
                let info = representative(*op);
                let comps = if info.dst.comps != 0 {
                    info.dst.comps
                } else {
                    ctx
                };
                for (i, (src, operand)) in srcs.iter().zip(info.srcs).enumerate() {
                    let src_ctx = if operand.comps != 0 {
                        operand.comps
                    } else {
                        comps
                    };
                    let src_float =
                        operand.base == BaseType::Float || (info.passes_through(i) && float);
                    self.visit(src, src_ctx, src_float);
                }
            }
        }
    }

    /// Whether `p` produces a float.
    fn float_valued(&self, p: &Pattern) -> bool {
        match p {
            Pattern::Var { index, .. } => self.var_float[*index as usize],
            Pattern::Const { value, .. } => matches!(value, Literal::Float(_)),
            Pattern::Op { op, srcs, .. } => {
                representative(*op).dst.base == BaseType::Float
                    || srcs
                        .iter()
                        .enumerate()
                        .any(|(i, s)| representative(*op).passes_through(i) && self.float_valued(s))
            }
        }
    }
}
