//! Rules that never fire: an earlier rule of the same set matches everything they match.
//!
//! The rule macro rejects such a rule within one group at the offending token; groups are
//! separate invocations, so a set of several groups is checked here, on the rules' metadata.
//! The test is conservative: a rule is reported only when the earlier one certainly fires
//! wherever it would (no guard or condition the later rule lacks, no stricter exactness, a
//! search pattern that generalises the later one's).

use super::{Literal, OpName, Pattern, RuleInfo, RuleSet, Size};

/// A rule that never fires, and the earlier rule that pre-empts it.
#[derive(Debug)]
pub struct Shadowed {
    pub rule: &'static RuleInfo,
    pub by: &'static RuleInfo,
}

/// Every rule of `set` that an earlier rule of the set always pre-empts. The greedy matcher
/// tries a set's rules in order; equalities, which only the e-graph runs, take no part.
pub fn shadowed_rules(set: &RuleSet) -> Vec<Shadowed> {
    let greedy: Vec<&'static RuleInfo> = set
        .rules()
        .map(|(_, rule)| rule)
        .filter(|rule| !rule.egraph_only)
        .collect();
    greedy
        .iter()
        .enumerate()
        .filter_map(|(i, &later)| {
            let by = greedy[..i]
                .iter()
                .find(|&&earlier| preempts(earlier, later))?;
            Some(Shadowed { rule: later, by })
        })
        .collect()
}

/// Whether `earlier` fires wherever `later` would.
fn preempts(earlier: &RuleInfo, later: &RuleInfo) -> bool {
    if let Some(guard) = &earlier.guard
        && later.guard.as_ref().is_none_or(|g| g.text != guard.text)
    {
        return false;
    }
    if (earlier.inexact && !later.inexact) || earlier.loses.0 & !later.loses.0 != 0 {
        return false;
    }
    let mut bound = vec![None; earlier.vars.len()];
    generalises(earlier, later, &earlier.search, &later.search, &mut bound)
}

/// Whether pattern `a` of rule `ra` matches every tree pattern `b` of rule `rb` matches,
/// extending `bound` (each variable of `ra` to the subtree of `rb` it stands for).
fn generalises<'b>(
    ra: &RuleInfo,
    rb: &RuleInfo,
    a: &Pattern,
    b: &'b Pattern,
    bound: &mut Vec<Option<&'b Pattern>>,
) -> bool {
    match (a, b) {
        (Pattern::Var { index, .. }, _) => {
            let var = &ra.vars[*index as usize];
            let constrained = var.is_const || var.ty.is_some() || !var.conds.is_empty();
            let implied = match b {
                Pattern::Var { index: other, .. } => {
                    let other = &rb.vars[*other as usize];
                    (!var.is_const || other.is_const)
                        && (var.ty.is_none() || var.ty == other.ty)
                        && var
                            .conds
                            .iter()
                            .all(|c| other.conds.iter().any(|o| o.name == c.name))
                        && size_implied(var.size, other.size)
                }
                Pattern::Const { size, .. } => {
                    var.ty.is_none() && var.conds.is_empty() && size_implied(var.size, *size)
                }
                Pattern::Op { size, .. } => !constrained && size_implied(var.size, *size),
            };
            if !implied {
                return false;
            }
            match bound[*index as usize] {
                Some(earlier) => same_tree(earlier, b),
                None => {
                    bound[*index as usize] = Some(b);
                    true
                }
            }
        }
        (
            Pattern::Const { value, size },
            Pattern::Const {
                value: other,
                size: other_size,
            },
        ) => same_literal(value, other) && size_implied(*size, *other_size),
        (
            Pattern::Op {
                op,
                size,
                srcs,
                conds,
                ..
            },
            Pattern::Op {
                op: other_op,
                size: other_size,
                srcs: other_srcs,
                conds: other_conds,
                ..
            },
        ) => {
            let op_matches = op == other_op
                || matches!((op, other_op), (OpName::Conv(f), OpName::Op(o)) if f.contains(*o));
            if !op_matches
                || !size_implied(*size, *other_size)
                || !conds.iter().all(|c| other_conds.contains(c))
                || srcs.len() != other_srcs.len()
            {
                return false;
            }
            let mut straight = bound.clone();
            if srcs
                .iter()
                .zip(other_srcs.iter())
                .all(|(x, y)| generalises(ra, rb, x, y, &mut straight))
            {
                *bound = straight;
                return true;
            }
            if op.is_commutative() {
                let mut swapped = bound.clone();
                let order = [1, 0].into_iter().chain(2..srcs.len());
                if order
                    .zip(other_srcs.iter())
                    .all(|(i, y)| generalises(ra, rb, &srcs[i], y, &mut swapped))
                {
                    *bound = swapped;
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// A fixed size constrains; a class (free at the rule's level) admits every size.
fn size_implied(required: Size, given: Size) -> bool {
    match required {
        Size::Fixed(bits) => given == Size::Fixed(bits),
        Size::Class(_) => true,
    }
}

/// Equality that tells -0.0 from 0.0 and takes every NaN as one value.
fn same_literal(a: &Literal, b: &Literal) -> bool {
    match (a, b) {
        (Literal::Float(x), Literal::Float(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        _ => a == b,
    }
}

/// Whether two subtrees of one rule are the same pattern (what a repeated variable needs).
fn same_tree(a: &Pattern, b: &Pattern) -> bool {
    match (a, b) {
        (
            Pattern::Var { index, swizzle },
            Pattern::Var {
                index: other,
                swizzle: other_swizzle,
            },
        ) => index == other && swizzle == other_swizzle,
        (
            Pattern::Const { value, size },
            Pattern::Const {
                value: other,
                size: other_size,
            },
        ) => same_literal(value, other) && size == other_size,
        (
            Pattern::Op { op, size, srcs, .. },
            Pattern::Op {
                op: other_op,
                size: other_size,
                srcs: other_srcs,
                ..
            },
        ) => {
            op == other_op
                && size == other_size
                && srcs.len() == other_srcs.len()
                && srcs
                    .iter()
                    .zip(other_srcs.iter())
                    .all(|(x, y)| same_tree(x, y))
        }
        _ => false,
    }
}
