//! Instances of a rule's search pattern in IR, to test the generated matcher.
//!
//! [`check`](super::check) checks that a rule is *true*; this module checks that its
//! generated code *fires*: that the group's dispatcher, with its shared checks, and the rule's
//! function accept an instruction tree built from the rule's own search, in every operand
//! order of its commutative ops. A dispatcher check that is not a necessary condition of the
//! rule (a wrong opcode two levels down, a literal compared at the wrong source), or a matcher
//! that misses an order, fails here.
//!
//! The instance is built at the first size assignment where it can exist. A variable is a
//! fresh `undef` of its size, read whole; a `#` variable, or one with a condition on its value,
//! is the first constant of a short list of candidates that satisfies its conditions, checked
//! by the condition functions themselves on the instance. Every other instruction is an ALU
//! instruction of the pattern's opcode with identity swizzles and no float controls, so
//! expression conditions such as `is_used_once` hold.

use super::check::{assignments, literal_bits};
use super::rewriter::{Placements, Rewriter};
use super::{Ctx, Pattern, RangeCache, RuleGroup, RuleInfo, Size, Src};
use crate::ir::{self, AluSrc, IDENTITY_SWIZZLE, InstKind, Shader, Stage, ValType, Value};
use crate::uses::Uses;
use shrew_ops::eval::{fput, mask};

/// At most this many commutative ops' orders are tried (2^this instances).
const MAX_ORDERS: u32 = 6;

/// Integer candidates for constant variables, masked to the variable's size.
const INT_CANDIDATES: &[i64] = &[2, 4, 8, 3, 5, 16, 1, -2, -4, 7, 0xff, 0x0f, 31, 0];

/// Float candidates, tried after the integers.
const FLOAT_CANDIDATES: &[f64] = &[2.0, 0.5, 3.0, -2.0, 1.5];

/// Checks that `group`'s dispatcher applies rule `index` to an instance of the rule's search in
/// every operand order; returns how many instances were tried. `Err` says which order failed,
/// or why no instance could be built.
pub fn check_matches(group: &RuleGroup, index: usize) -> Result<u32, String> {
    let rule = &group.rules[index];
    let Pattern::Op { op: root_op, .. } = rule.search else {
        return Err("the search root is not an op".into());
    };
    let commutative = count_commutative(&rule.search).min(MAX_ORDERS);
    let mut why_not = Vec::new();
    for sizes in assignments(rule.classes) {
        let mut tried = 0;
        for flips in 0..1u32 << commutative {
            let mut builder = Builder {
                rule,
                sizes: &sizes,
                shader: Shader::new(Stage::Compute),
                vars: vec![None; rule.vars.len()],
                flips,
                next_commutative: 0,
            };
            let root = match builder.node(&rule.search, 1) {
                Ok(root) => root,
                Err(why) => {
                    why_not.push(format!("sizes {sizes:?}: {why}"));
                    break;
                }
            };
            let func = builder.shader.entry_function_mut();
            let op = match &func.inst(root).kind {
                InstKind::Alu(alu) => alu.op,
                _ => unreachable!("the root is built as an ALU instruction"),
            };
            let Some(&(_, dispatch)) = group.roots.iter().find(|(o, _)| *o == op) else {
                return Err(format!(
                    "the group has no dispatcher for `{}` (root `{}`)",
                    op.name(),
                    root_op.name()
                ));
            };
            let mut enabled = vec![false; group.rules.len()];
            enabled[index] = true;
            let mut uses = Uses::build(func);
            let ranges = RangeCache::default();
            let mut placements = Placements::default();
            let mut rw = Rewriter::new(func, &mut uses, &ranges, &mut placements, &enabled);
            match dispatch(&mut rw, root) {
                Some((fired, _)) if fired == index => tried += 1,
                other => {
                    return Err(format!(
                        "no match at sizes {sizes:?} in operand order {flips:#b} (bit k swaps \
                         the k-th commutative op in pre-order); the dispatcher returned {:?}",
                        other.map(|(fired, _)| fired)
                    ));
                }
            }
        }
        if tried > 0 {
            return Ok(tried);
        }
    }
    Err(format!("no instance can be built: {}", why_not.join("; ")))
}

/// Panics unless [`check_matches`] succeeds.
pub fn assert_matches(group: &RuleGroup, index: usize) {
    if let Err(why) = check_matches(group, index) {
        panic!(
            "the matcher of `{}` ({}) does not match its own search: {why}",
            group.rules[index].text,
            group.rules[index].location()
        );
    }
}

fn count_commutative(p: &Pattern) -> u32 {
    let mut n = 0;
    p.walk(&mut |node| {
        if let Pattern::Op { op, .. } = node
            && op.is_commutative()
        {
            n += 1;
        }
    });
    n
}

/// Builds one instance; its instructions go to the entry function of `shader`.
struct Builder<'a> {
    rule: &'a RuleInfo,
    sizes: &'a [u8],
    shader: Shader,
    /// The value built for each variable, once built.
    vars: Vec<Option<Value>>,
    /// Bit k set: swap sources 0 and 1 of the k-th commutative op.
    flips: u32,
    next_commutative: u32,
}

impl Builder<'_> {
    fn bits(&self, size: Size) -> u8 {
        match size {
            Size::Fixed(bits) => bits,
            Size::Class(class) => self.sizes[class as usize],
        }
    }

    fn ir(&mut self) -> ir::Builder<'_> {
        let entry = self.shader.entry;
        ir::Builder::new(&mut self.shader, entry)
    }

    /// A constant with every one of `comps` components `raw`.
    fn splat(&mut self, raw: u64, bits: u8, comps: u8) -> Value {
        self.ir().imm(bits, &vec![raw; comps as usize])
    }

    /// Builds `p` with `comps` components (those its consumer reads).
    fn node(&mut self, p: &Pattern, comps: u8) -> Result<Value, String> {
        match p {
            Pattern::Var { index, .. } => self.var(*index as usize, comps),
            Pattern::Const { value, size } => {
                let bits = self.bits(*size);
                if matches!(value, super::Literal::Float(_)) && bits < 16 {
                    return Err("a float literal narrower than 16 bits".into());
                }
                Ok(self.splat(literal_bits(*value, bits), bits, comps))
            }
            Pattern::Op { op, size, srcs, .. } => {
                let bits = self.bits(*size);
                let alu_op = op
                    .resolve(bits)
                    .ok_or_else(|| format!("`{}` has no {bits}-bit member", op.name()))?;
                let info = alu_op.info();
                let swap = if op.is_commutative() && self.next_commutative < MAX_ORDERS {
                    let k = self.next_commutative;
                    self.next_commutative += 1;
                    self.flips & (1 << k) != 0
                } else {
                    false
                };
                let comps = if info.dst.comps != 0 {
                    info.dst.comps
                } else {
                    comps
                };
                let mut values = Vec::new();
                for (i, src) in srcs.iter().enumerate() {
                    let read = match info.srcs[i].comps {
                        0 => comps,
                        fixed => fixed,
                    };
                    values.push(AluSrc::new(self.node(src, read)?));
                }
                if swap {
                    values.swap(0, 1);
                }
                Ok(self.ir().alu_swizzled(alu_op, values, comps))
            }
        }
    }

    fn var(&mut self, index: usize, comps: u8) -> Result<Value, String> {
        if let Some(v) = self.vars[index] {
            return Ok(v);
        }
        let var = &self.rule.vars[index];
        let bits = self.bits(var.size);
        let value_conds = var
            .conds
            .iter()
            .any(|c| !super::conds::is_structural(c.name));
        let v = if var.is_const || value_conds {
            let ints = INT_CANDIDATES.iter().map(|&x| mask(x as u64, bits));
            let floats = FLOAT_CANDIDATES
                .iter()
                .filter(|_| matches!(bits, 16 | 32 | 64))
                .map(|&x| fput(x, bits));
            let mut found = None;
            for raw in ints.chain(floats) {
                let v = self.splat(raw, bits, comps);
                if self.conds_hold(index, v, comps) {
                    found = Some(v);
                    break;
                }
            }
            found.ok_or_else(|| {
                format!(
                    "no candidate constant satisfies the conditions of `{}`",
                    var.name
                )
            })?
        } else {
            self.ir().undef(ValType::new(bits, comps))
        };
        self.vars[index] = Some(v);
        Ok(v)
    }

    fn conds_hold(&self, index: usize, v: Value, comps: u8) -> bool {
        let func = self.shader.entry_function();
        let uses = Uses::build(func);
        let ranges = RangeCache::default();
        let cx = Ctx {
            func,
            uses: &uses,
            ranges: &ranges,
        };
        let src = Src {
            value: v,
            swizzle: IDENTITY_SWIZZLE,
            comps,
        };
        self.rule.vars[index]
            .conds
            .iter()
            .all(|c| (c.check)(&cx, &src))
    }
}
