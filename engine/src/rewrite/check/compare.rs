//! The comparison of the two trees' results under the rule's exactness: the cases a rule
//! need not preserve (NaN, infinity, underflow), the tolerance of inexact rules, and whether
//! a differing non-float result comes from rounding rather than from a wrong rule.

use super::Plan;
use super::eval::{Kind, Prog, Values, compile};
use super::inputs::{min_normal, ulp};
use crate::rewrite::Pattern;
use shrew_ops::eval::{Bits, fget, fput, mask};
use shrew_ops::{AluOp, Eval, MAX_COMPONENTS};

/// Magnitudes inside one component of an operation that the tolerance must cover besides its
/// operands and result: the products inside formula opcodes, and for exponentials the result
/// scaled by how much a relative error of the exponent moves it (`exp2(x)` turns a relative
/// error e of x into a relative error e·|x|·ln 2 of the result). `src(j, k)` is component `k`
/// of operand `j`; vector operands have `vector_comps` components. (A formula per opcode over
/// its operands, so code here rather than a column of the opcode table.)
fn inner_magnitudes(
    op: AluOp,
    src: &impl Fn(usize, usize) -> f64,
    result: f64,
    vector_comps: u8,
    k: usize,
    note: &mut impl FnMut(f64),
) {
    use AluOp::*;
    match op {
        Ffma => note(src(0, k) * src(1, k)),
        Flrp => {
            note(src(0, k) * (1.0 - src(2, k)));
            note(src(1, k) * src(2, k));
        }
        Fdot2 | Fdot3 | Fdot4 => note(
            (0..vector_comps as usize)
                .map(|c| (src(0, c) * src(1, c)).abs())
                .sum(),
        ),
        Fexp2 => note(result * src(0, k) * std::f64::consts::LN_2),
        Fpow => {
            let (base, exponent) = (src(0, k), src(1, k));
            note(result * exponent * base.abs().ln().abs().max(1.0));
        }
        _ => {}
    }
}

impl Plan<'_> {
    /// Whether a case is outside what the rule preserves: NaN or infinity anywhere, or (for
    /// inexact rules) an underflowing float operation.
    pub(super) fn excluded(&self) -> bool {
        for (prog, vals) in [(&self.search, &self.sv), (&self.replace, &self.rv)] {
            for (i, node) in prog.nodes.iter().enumerate() {
                if !node.float || node.bits < 16 {
                    continue;
                }
                let results = &vals[i][..node.comps as usize];
                for &raw in results {
                    let x = fget(raw, node.bits);
                    if (self.lose_nan && x.is_nan()) || (self.lose_inf && x.is_infinite()) {
                        return true;
                    }
                }
                let Kind::Op { op, srcs, .. } = &node.kind else {
                    continue;
                };
                if !self.rule.inexact || !op.info().may_underflow() {
                    continue;
                }
                // A denormal result, or zero from nonzero operands, lost precision.
                let underflow = results.iter().enumerate().any(|(k, &raw)| {
                    let x = fget(raw, node.bits);
                    (x != 0.0 && x.abs() < min_normal(node.bits))
                        || (x == 0.0
                            && srcs.iter().all(|&s| {
                                let n = &prog.nodes[s];
                                !n.float || fget(vals[s][k], n.bits) != 0.0
                            }))
                });
                if underflow {
                    return true;
                }
            }
        }
        false
    }

    /// Why `s` and `r` (root components of `bits` bits) are not equal under the rule's
    /// exactness, or `None` if they are.
    pub(super) fn mismatch(
        &self,
        s: u64,
        r: u64,
        bits: u8,
        tolerance: &mut Option<(f64, f64)>,
    ) -> Option<String> {
        let (s, r) = (mask(s, bits), mask(r, bits));
        if s == r {
            return None;
        }
        if !self.float_root || bits < 16 {
            return Some(if self.rule.inexact {
                "the results differ".to_string()
            } else {
                "the rule is exact, so the results must be identical".to_string()
            });
        }
        let (x, y) = (fget(s, bits), fget(r, bits));
        if x.is_nan() && y.is_nan() {
            return None;
        }
        if self.lose_sz && x == 0.0 && y == 0.0 {
            return None;
        }
        if self.rule.inexact && x.is_finite() && y.is_finite() {
            let (tol, largest) = *tolerance.get_or_insert_with(|| self.tolerance(bits));
            let diff = (x - y).abs();
            if diff <= tol {
                return None;
            }
            return Some(format!(
                "the rule is inexact, but the results differ by {diff:e}, more than the \
                 tolerance {tol:e} (4 × {} float ops × ulp({largest:e}) at {bits} bits)",
                self.float_ops.max(1)
            ));
        }
        let mut why = String::from(if self.rule.inexact || self.rule.loses.0 != 0 {
            "the results must be equal"
        } else {
            "the rule is exact, so the results must be identical bit for bit"
        });
        why.push_str(" (any NaN equals any NaN");
        if self.lose_sz {
            why.push_str(", +0 equals -0");
        }
        why.push(')');
        if self.rule.loses.0 != 0 && !self.rule.inexact {
            let lost: Vec<&str> = ["signed zeros", "NaNs", "infinities"]
                .into_iter()
                .enumerate()
                .filter(|(i, _)| self.rule.loses.0 & (1 << i) != 0)
                .map(|(_, n)| n)
                .collect();
            why.push_str(&format!("; the rule only gives up {}", lost.join(", ")));
        }
        Some(why)
    }

    /// The inexact tolerance at `bits` bits and the largest magnitude it is based on.
    fn tolerance(&self, bits: u8) -> (f64, f64) {
        let mut largest = 0.0f64;
        let mut note = |x: f64| {
            if x.is_finite() {
                largest = largest.max(x.abs());
            }
        };
        for (prog, vals) in [(&self.search, &self.sv), (&self.replace, &self.rv)] {
            for (i, node) in prog.nodes.iter().enumerate() {
                if !node.float || node.bits < 16 {
                    continue;
                }
                let results = &vals[i][..node.comps as usize];
                for &raw in results {
                    note(fget(raw, node.bits));
                }
                let Kind::Op {
                    op, srcs, src_bits, ..
                } = &node.kind
                else {
                    continue;
                };
                let src = |j: usize, k: usize| fget(vals[srcs[j]][k], src_bits[j]);
                let vector_comps = prog.nodes[srcs[0]].comps;
                for (k, &raw) in results.iter().enumerate() {
                    let result = fget(raw, node.bits);
                    inner_magnitudes(*op, &src, result, vector_comps, k, &mut note);
                }
            }
        }
        let tol = 4.0 * self.float_ops.max(1) as f64 * ulp(largest, bits);
        (tol, largest)
    }

    /// Whether the root operation of one tree, applied to its rounded float operands (results
    /// of float operations; inputs and literals are exact) each moved by up to the inexact
    /// tolerance, can give the other tree's result for component `k`: a comparison of nearly
    /// equal values, a conversion at an integer boundary.
    pub(super) fn rounding_decides(&self, k: usize, bits: u8) -> bool {
        let (_, largest) = self.tolerance(bits);
        let (s, r) = (self.sv[self.sv.len() - 1][k], self.rv[self.rv.len() - 1][k]);
        self.root_can_give(&self.search, &self.sv, k, r, largest)
            || self.root_can_give(&self.replace, &self.rv, k, s, largest)
    }

    fn root_can_give(
        &self,
        prog: &Prog,
        vals: &Values,
        k: usize,
        target: u64,
        largest: f64,
    ) -> bool {
        let root = prog.root();
        let Kind::Op {
            op, srcs, src_bits, ..
        } = &root.kind
        else {
            return false;
        };
        if !matches!(op.info().eval, Eval::Comp(_)) {
            return false;
        }
        let moved: Vec<usize> = (0..srcs.len())
            .filter(|&j| prog.nodes[srcs[j]].float_op && src_bits[j] >= 16)
            .collect();
        if moved.is_empty() || moved.len() > 3 {
            return false;
        }
        let base: Vec<u64> = srcs.iter().map(|&s| vals[s][k]).collect();
        let combos = 3usize.pow(moved.len() as u32);
        for combo in 0..combos {
            let mut v = base.clone();
            let mut rest = combo;
            for &j in &moved {
                let direction = (rest % 3) as f64 - 1.0;
                rest /= 3;
                let tol = 4.0 * self.float_ops.max(1) as f64 * ulp(largest, src_bits[j]);
                let x = fget(v[j], src_bits[j]);
                v[j] = fput(x + direction * tol, src_bits[j]);
            }
            let one: Vec<[u64; 1]> = v.iter().map(|&x| [x]).collect();
            let refs: Vec<&[u64]> = one.iter().map(|x| &x[..]).collect();
            let mut out = [0u64];
            let bits = Bits {
                src: src_bits,
                dst: root.bits,
            };
            if op.eval(&refs, bits, &mut out) && mask(out[0], root.bits) == mask(target, root.bits)
            {
                return true;
            }
        }
        false
    }

    /// Whether both trees agree when every unsized float operation is computed at 64 bits.
    pub(super) fn wide_agrees(&mut self, inputs: &[[u64; MAX_COMPONENTS]]) -> bool {
        if self.wide.is_none() {
            let build = |p: &Pattern, float_root: bool, search: bool| {
                compile(
                    p,
                    &self.sizes,
                    &self.vars,
                    self.root_comps,
                    float_root,
                    true,
                    search,
                )
            };
            let (Ok(s), Ok(r)) = (
                build(&self.rule.search, false, true),
                build(&self.rule.replace, self.float_root, false),
            ) else {
                return false;
            };
            self.wide = Some((s, r));
        }
        let Some((s, r)) = &self.wide else {
            return false;
        };
        let mut sv = vec![[0; MAX_COMPONENTS]; s.nodes.len()];
        let mut rv = vec![[0; MAX_COMPONENTS]; r.nodes.len()];
        s.run(inputs, &mut sv);
        r.run(inputs, &mut rv);
        let bits = s.root().bits;
        let (a, b) = (&sv[sv.len() - 1], &rv[rv.len() - 1]);
        (0..self.root_comps as usize).all(|k| mask(a[k], bits) == mask(b[k], bits))
    }
}
