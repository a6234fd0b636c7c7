//! Input generation: the special, structured and random values of each variable at its size,
//! restricted by its conditions, and their combinations, special values first so that
//! counterexamples are simple.

use super::{Counterexample, EXHAUSTIVE_BITS, MAX_SPECIAL_CASES, Plan};
use crate::ir::{Function, IDENTITY_SWIZZLE, Inst, InstKind, ValType, Value};
use crate::rewrite::{Ctx, RangeCache, Src, VarCond, conds};
use crate::rng::Rng;
use crate::uses::Uses;
use shrew_ops::MAX_COMPONENTS;
use shrew_ops::eval::{fput, frexp, ldexp, mask};

/// A variable at one size assignment.
pub(super) struct VarPlan {
    pub(super) name: &'static str,
    pub(super) bits: u8,
    pub(super) comps: u8,
    /// Chosen as a float (only at 16 bits or more).
    pub(super) float: bool,
    /// The conditions that restrict its value.
    pub(super) conds: Vec<Restriction>,
}

/// How the verifier applies one variable condition.
#[derive(Copy, Clone)]
pub(super) enum Restriction {
    /// A range condition of the library, by its one-component meaning: true of every
    /// component of any value the matcher admits, including non-constant values the range
    /// analysis only bounds (`is_gt_zero` admits NaN, which a NaN constant's exact range does
    /// not show).
    Holds(fn(u64, u8) -> bool),
    /// Any other condition, called on a constant: exact for the library's constant conditions,
    /// and the only way to apply a condition defined outside it.
    Call(fn(&Ctx<'_>, &Src) -> bool),
}

impl Restriction {
    pub(super) fn of(cond: &VarCond) -> Restriction {
        match conds::var_condition(cond.name) {
            Some(c) if c.kind == conds::CondKind::Range => match c.holds {
                Some(holds) => Restriction::Holds(holds),
                None => Restriction::Call(cond.check),
            },
            _ => Restriction::Call(cond.check),
        }
    }
}

/// Candidate values of one variable: `comps` raw values per entry.
#[derive(Clone, Debug)]
pub(super) struct Pool {
    comps: usize,
    data: Vec<u64>,
}

impl Pool {
    fn new(comps: u8) -> Pool {
        Pool {
            comps: comps as usize,
            data: Vec::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.data.len() / self.comps
    }

    pub(super) fn get(&self, i: usize) -> &[u64] {
        &self.data[i * self.comps..(i + 1) * self.comps]
    }

    pub(super) fn push(&mut self, v: &[u64]) {
        self.data.extend_from_slice(&v[..self.comps]);
    }

    pub(super) fn contains(&self, v: &[u64]) -> bool {
        self.data.chunks(self.comps).any(|e| e == &v[..self.comps])
    }

    /// Vectors built from scalar candidates: each one in every component, and rotations that
    /// mix them.
    pub(super) fn from_scalars(scalars: &[u64], comps: u8) -> Pool {
        let mut pool = Pool::new(comps);
        let n = scalars.len();
        if n == 0 {
            return pool;
        }
        let mut v = [0u64; MAX_COMPONENTS];
        for i in 0..n {
            v.fill(scalars[i]);
            pool.push(&v);
            if comps > 1 {
                for (k, slot) in v[..comps as usize].iter_mut().enumerate() {
                    *slot = scalars[(i + k * 7 + k * k) % n];
                }
                pool.push(&v);
            }
        }
        pool
    }

    /// The entries `keep` accepts, without duplicates.
    pub(super) fn filter(&self, mut keep: impl FnMut(&[u64]) -> bool) -> Pool {
        let mut out = Pool::new(self.comps as u8);
        for i in 0..self.len() {
            let v = self.get(i);
            if !out.contains(v) && keep(v) {
                out.push(v);
            }
        }
        out
    }
}

fn push_unique(out: &mut Vec<u64>, v: u64) {
    if !out.contains(&v) {
        out.push(v);
    }
}

/// Mantissa bits and smallest normal exponent of a float format.
fn float_format(bits: u8) -> (i64, i64) {
    match bits {
        16 => (10, -14),
        32 => (23, -126),
        _ => (52, -1022),
    }
}

pub(super) fn min_normal(bits: u8) -> f64 {
    ldexp(1.0, float_format(bits).1)
}

/// The distance between `x` and the next float of `bits` bits away from zero.
pub(super) fn ulp(x: f64, bits: u8) -> f64 {
    let (mantissa, emin) = float_format(bits);
    let x = x.abs();
    if x < min_normal(bits) || !x.is_finite() {
        return ldexp(1.0, emin - mantissa);
    }
    let (_, e) = frexp(x);
    ldexp(1.0, e - 1 - mantissa)
}

fn sign_bit(bits: u8) -> u64 {
    1u64 << (bits - 1)
}

/// Special float values of `bits` bits, raw.
fn float_specials(bits: u8, literals: &[f64]) -> Vec<u64> {
    let f = |x: f64| fput(x, bits);
    let (mantissa, emin) = float_format(bits);
    let sign = sign_bit(bits);
    let inf = f(f64::INFINITY);
    let k = (mantissa / 2).max(4);
    let mut out = Vec::new();
    for v in [
        f(0.0),
        f(-0.0),
        f(1.0),
        f(-1.0),
        f(2.0),
        f(-2.0),
        f(0.5),
        f(-0.5),
        f(-1.5),
        f(3.0),
        f(1.0 / 3.0),
        f(-1.0 / 3.0),
        inf,
        inf | sign,
        f(f64::NAN),
        1,
        1 | sign,
        f(ldexp(1.0, emin)),
        inf - 1,
        (inf - 1) | sign,
        f(ldexp(1.0, k)),
        f(ldexp(1.0, -k)),
        f(-ldexp(1.0, k)),
        f(1.0) + 1,
        f(0.25),
        f(10.0),
    ] {
        push_unique(&mut out, v);
    }
    for &x in literals {
        let v = f(x);
        push_unique(&mut out, v);
        push_unique(&mut out, f(-x));
        if x.is_finite() && x != 0.0 {
            push_unique(&mut out, v + 1);
            push_unique(&mut out, v - 1);
        }
    }
    out
}

/// Special integer values of `bits` bits, raw.
fn int_specials(bits: u8, literals: &[i64]) -> Vec<u64> {
    let m = |x: i64| mask(x as u64, bits);
    if bits == 1 {
        return vec![0, 1];
    }
    let min = sign_bit(bits);
    let max = min - 1;
    let b = bits as i64;
    let mut out = Vec::new();
    for v in [
        0,
        1,
        m(-1),
        2,
        3,
        m(-2),
        5,
        7,
        8,
        min,
        max,
        min + 1,
        max - 1,
        m(0x5555_5555_5555_5555),
        m(0xaaaa_aaaa_aaaa_aaaa_u64 as i64),
        m(1 << (b / 2)),
        m((1 << (b / 2)) - 1),
        m(1 << (b - 2)),
        m(b - 1),
        m(b),
        m(b + 1),
        m(0x0f0f_0f0f_0f0f_0f0f),
    ] {
        push_unique(&mut out, v);
    }
    for &x in literals {
        for v in [x.wrapping_sub(1), x, x.wrapping_add(1), x.wrapping_neg()] {
            push_unique(&mut out, m(v));
        }
    }
    out
}

/// Structured candidates for variables whose conditions reject most special values.
pub(super) fn targeted_scalars(bits: u8, float: bool) -> Vec<u64> {
    let mut out = Vec::new();
    if bits == 1 {
        return vec![0, 1];
    }
    if float {
        let f = |x: f64| fput(x, bits);
        let (mantissa, emin) = float_format(bits);
        let emax = -emin + 1;
        let mut e = emin - mantissa;
        while e <= emax {
            push_unique(&mut out, f(ldexp(1.0, e)));
            push_unique(&mut out, f(-ldexp(1.0, e)));
            e += if (-8..=8).contains(&e) { 1 } else { 3 };
        }
        for n in 1..=32 {
            for d in [1.0, 2.0, 4.0, 8.0, 3.0, 10.0] {
                push_unique(&mut out, f(n as f64 / d));
                push_unique(&mut out, f(-(n as f64) / d));
            }
        }
        for x in [0.1, 0.9, 0.99, 1.01, 100.0, 1000.0, 1e4, 65504.0] {
            push_unique(&mut out, f(x));
            push_unique(&mut out, f(-x));
        }
    } else {
        let m = |x: u64| mask(x, bits);
        for k in 0..bits as u32 {
            let p = 1u64 << k;
            for v in [p, p - 1, p + 1, p.wrapping_neg(), (p - 1).wrapping_neg()] {
                push_unique(&mut out, m(v));
            }
            for odd in [3u64, 5, 7, 9, 15] {
                push_unique(&mut out, m(odd << k));
            }
            // Contiguous masks.
            for width in [1u32, 4, 8] {
                let field = if width >= 64 {
                    u64::MAX
                } else {
                    (1 << width) - 1
                };
                push_unique(&mut out, m(field << k));
            }
        }
        for x in -64i64..=64 {
            push_unique(&mut out, m(x as u64));
        }
        let min = sign_bit(bits);
        for d in 0..4 {
            push_unique(&mut out, m(min + d));
            push_unique(&mut out, m(min - 1 - d));
        }
    }
    out
}

/// A random raw value: raw bits, small numbers and structured values.
fn random_scalar(bits: u8, float: bool, rng: &mut Rng) -> u64 {
    if bits == 1 {
        return rng.next_u64() & 1;
    }
    let r = rng.next_u64();
    if float {
        let f = |x: f64| fput(x, bits);
        let (mantissa, emin) = float_format(bits);
        let negative = rng.next_u64() & 1 != 0;
        let s = if negative { -1.0 } else { 1.0 };
        match rng.below(5) {
            0 => mask(r, bits),
            1 => {
                let frac = (r >> 11) as f64 / (1u64 << 53) as f64;
                f(s * (1.0 + frac) * ldexp(1.0, rng.range(-12, 12)))
            }
            2 => f(rng.range(-16, 16) as f64 / ldexp(1.0, rng.range(0, 3))),
            3 => f(s * ldexp(1.0, rng.range(emin - mantissa, -emin + 1))),
            _ => {
                // A random significand at a random exponent anywhere in the range.
                let frac = (r >> 11) as f64 / (1u64 << 53) as f64;
                f(s * (1.0 + frac) * ldexp(1.0, rng.range(emin, -emin)))
            }
        }
    } else {
        let k = rng.below(bits as usize) as u32;
        match rng.below(5) {
            0 | 1 => mask(r, bits),
            2 => mask(rng.range(-16, 16) as u64, bits),
            3 => {
                let v = mask(r, bits) >> k;
                mask(if r & 1 != 0 { v.wrapping_neg() } else { v }, bits)
            }
            _ => {
                let p = 1u64 << k;
                let v = match rng.below(4) {
                    0 => p,
                    1 => p - 1,
                    2 => p + 1,
                    _ => (rng.below(15) as u64 + 1) << k,
                };
                mask(if r & 1 != 0 { v.wrapping_neg() } else { v }, bits)
            }
        }
    }
}

/// Calls variable conditions on a constant in a scratch function.
pub(super) struct CondChecker {
    func: Function,
    value: Value,
    uses: Uses,
}

impl CondChecker {
    pub(super) fn new() -> CondChecker {
        let mut func = Function::new("scratch");
        let block = func.entry;
        let value = func.alloc_inst(Inst {
            kind: InstKind::Const(vec![0]),
            def: Some(ValType::scalar(32)),
            block,
        });
        func.cfg[block].insts.push(value);
        CondChecker {
            func,
            value,
            uses: Uses::default(),
        }
    }

    /// Whether every condition holds on the constant `value` (one raw value per component).
    pub(super) fn holds(&mut self, conds: &[Restriction], bits: u8, value: &[u64]) -> bool {
        let mut calls = false;
        for c in conds {
            match c {
                Restriction::Holds(holds) => {
                    if !value.iter().all(|&v| holds(mask(v, bits), bits)) {
                        return false;
                    }
                }
                Restriction::Call(_) => calls = true,
            }
        }
        if !calls {
            return true;
        }
        let inst = self.func.inst_mut(self.value);
        if let InstKind::Const(c) = &mut inst.kind {
            c.clear();
            c.extend(value.iter().map(|&v| mask(v, bits)));
        }
        inst.def = Some(ValType::new(bits, value.len() as u8));
        let ranges = RangeCache::default();
        let cx = Ctx {
            func: &self.func,
            uses: &self.uses,
            ranges: &ranges,
        };
        let src = Src {
            value: self.value,
            swizzle: IDENTITY_SWIZZLE,
            comps: value.len() as u8,
        };
        conds.iter().all(|c| match c {
            Restriction::Holds(_) => true,
            Restriction::Call(check) => check(&cx, &src),
        })
    }
}

impl Plan<'_> {
    pub(super) fn specials(&self, v: &VarPlan) -> Vec<u64> {
        if v.float {
            float_specials(v.bits, self.float_literals)
        } else {
            int_specials(v.bits, self.int_literals)
        }
    }

    /// Every value of `v` (its components packed into at most 16 bits) that satisfies its
    /// conditions, the special ones first.
    pub(super) fn all_values(
        &self,
        v: &VarPlan,
        specials: &Pool,
        checker: &mut CondChecker,
    ) -> Pool {
        let width = v.bits as u32 * v.comps as u32;
        let count = 1usize << width;
        let unpack = |packed: usize, out: &mut [u64; MAX_COMPONENTS]| {
            for (k, slot) in out[..v.comps as usize].iter_mut().enumerate() {
                *slot = mask((packed >> (k * v.bits as usize)) as u64, v.bits);
            }
        };
        let pack = |x: &[u64]| {
            x.iter().enumerate().fold(0usize, |acc, (k, &c)| {
                acc | ((c as usize) << (k * v.bits as usize))
            })
        };
        let mut seen = vec![false; count];
        let mut order = Vec::with_capacity(count);
        for i in 0..specials.len() {
            let packed = pack(specials.get(i));
            if !seen[packed] {
                seen[packed] = true;
                order.push(packed);
            }
        }
        order.extend((0..count).filter(|&p| !seen[p]));
        let mut pool = Pool::new(v.comps);
        pool.data.reserve(count * v.comps as usize);
        let mut x = [0u64; MAX_COMPONENTS];
        for packed in order {
            unpack(packed, &mut x);
            if checker.holds(&v.conds, v.bits, &x[..v.comps as usize]) {
                pool.push(&x);
            }
        }
        pool
    }

    /// Every combination of the pools of `vary`; the other variables take random satisfying
    /// values. Returns the number of cases compared.
    pub(super) fn combinations(
        &mut self,
        pools: &[Pool],
        vary: &[usize],
        inputs: &mut [[u64; MAX_COMPONENTS]],
        checker: &mut CondChecker,
        rng: &mut Rng,
    ) -> Result<u64, Counterexample> {
        let total: usize = vary.iter().map(|&i| pools[i].len()).product();
        let exhaustive = vary.len() == pools.len();
        // Sample evenly when there are too many combinations (only for special values).
        let step = if exhaustive && self.vars_bits() <= EXHAUSTIVE_BITS {
            1
        } else {
            total.div_ceil(MAX_SPECIAL_CASES).max(1)
        };
        let mut cases = 0;
        let mut index = 0;
        'cases: while index < total {
            let mut rest = index;
            for &i in vary.iter().rev() {
                let len = pools[i].len();
                let x = pools[i].get(rest % len);
                inputs[i][..x.len()].copy_from_slice(x);
                rest /= len;
            }
            for i in 0..pools.len() {
                if !vary.contains(&i) {
                    let picked = if rng.next_u64() & 1 == 0 {
                        let x = pools[i].get(rng.below(pools[i].len()));
                        inputs[i][..x.len()].copy_from_slice(x);
                        true
                    } else {
                        self.random_input(i, &pools[i], checker, rng, &mut inputs[i])
                    };
                    if !picked {
                        index += step;
                        continue 'cases;
                    }
                }
            }
            cases += self.check(inputs)? as u64;
            index += step;
        }
        Ok(cases)
    }

    fn vars_bits(&self) -> u32 {
        self.vars
            .iter()
            .map(|v| v.bits as u32 * v.comps as u32)
            .sum()
    }

    /// A random value of variable `i` satisfying its conditions: drawn afresh a few times, else
    /// one of the candidates known to satisfy them.
    pub(super) fn random_input(
        &self,
        i: usize,
        pool: &Pool,
        checker: &mut CondChecker,
        rng: &mut Rng,
        out: &mut [u64; MAX_COMPONENTS],
    ) -> bool {
        let v = &self.vars[i];
        let n = v.comps as usize;
        for _ in 0..8 {
            for slot in &mut out[..n] {
                *slot = random_scalar(v.bits, v.float, rng);
            }
            if checker.holds(&v.conds, v.bits, &out[..n]) {
                return true;
            }
        }
        if pool.len() == 0 {
            return false;
        }
        out[..n].copy_from_slice(pool.get(rng.below(pool.len())));
        true
    }
}
