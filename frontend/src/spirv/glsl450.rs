//! The GLSL.std.450 extended instruction set.

use super::function::{Translator, Val};
use super::module::{id, literal, result_type};
use super::{Inst, Result, SpirvError};
use shrew_engine::ir::Value;
use shrew_engine::ops::AluOp;

/// Instructions that are one IR opcode on their operands.
fn direct(op: u32) -> Option<AluOp> {
    use AluOp as A;
    Some(match op {
        1 | 2 => A::FroundEven, // Round may round halves either way; RoundEven
        3 => A::Ftrunc,
        4 => A::Fabs,
        5 => A::Iabs,
        6 => A::Fsign,
        7 => A::Isign,
        8 => A::Ffloor,
        9 => A::Fceil,
        10 => A::Ffract,
        13 => A::Fsin,
        14 => A::Fcos,
        15 => A::Ftan,
        16 => A::Fasin,
        17 => A::Facos,
        18 => A::Fatan,
        19 => A::Fsinh,
        20 => A::Fcosh,
        21 => A::Ftanh,
        22 => A::Fasinh,
        23 => A::Facosh,
        24 => A::Fatanh,
        25 => A::Fatan2,
        26 => A::Fpow,
        29 => A::Fexp2,
        30 => A::Flog2,
        31 => A::Fsqrt,
        32 => A::Frsq,
        37 | 79 => A::Fmin,
        38 => A::Umin,
        39 => A::Imin,
        40 | 80 => A::Fmax,
        41 => A::Umax,
        42 => A::Imax,
        50 => A::Ffma,
        53 => A::Fldexp,
        54 => A::PackSnorm4x8,
        55 => A::PackUnorm4x8,
        56 => A::PackSnorm2x16,
        57 => A::PackUnorm2x16,
        58 => A::PackHalf2x16,
        59 => A::Pack64_2x32,
        60 => A::UnpackSnorm2x16,
        61 => A::UnpackUnorm2x16,
        62 => A::UnpackHalf2x16,
        63 => A::UnpackSnorm4x8,
        64 => A::UnpackUnorm4x8,
        65 => A::Unpack64_2x32,
        73 => A::FindLsb,
        74 => A::IfindMsb,
        75 => A::UfindMsb,
        _ => return None,
    })
}

impl Translator<'_> {
    pub fn ext_inst(&mut self, inst: &Inst) -> Result<()> {
        let set = id(inst, 0)?;
        let op = literal(inst, 1)?;
        let args = (2..inst.inst.operands.len())
            .map(|i| id(inst, i))
            .collect::<Result<Vec<_>>>()?;
        let v = if self.module.glsl450.contains(&set) {
            self.glsl450(inst, op, &args)?
        } else if self.module.trinary_minmax.contains(&set) {
            self.trinary_minmax(op, &args)?
        } else {
            return Err(SpirvError::unsupported(
                "extended instruction sets other than GLSL.std.450 and \
                 SPV_AMD_shader_trinary_minmax",
            ));
        };
        self.set(inst, v)
    }

    /// `SPV_AMD_shader_trinary_minmax`: min3, max3 and mid3 of floats, unsigned and signed
    /// integers, as two or four min/max operations.
    fn trinary_minmax(&mut self, op: u32, args: &[u32]) -> Result<Val> {
        use AluOp as A;
        let [a, b, c] = args else {
            return Err(SpirvError::malformed("a trinary min/max needs 3 operands"));
        };
        let (a, b, c) = (self.ssa(*a)?, self.ssa(*b)?, self.ssa(*c)?);
        let (min, max) = match op {
            1 | 4 | 7 => (A::Fmin, A::Fmax),
            2 | 5 | 8 => (A::Umin, A::Umax),
            3 | 6 | 9 => (A::Imin, A::Imax),
            _ => {
                return Err(SpirvError::unsupported(format!(
                    "SPV_AMD_shader_trinary_minmax instruction {op}"
                )));
            }
        };
        let v = match op {
            1..=3 => {
                let ab = self.builder().alu(min, &[a, b]);
                self.builder().alu(min, &[ab, c])
            }
            4..=6 => {
                let ab = self.builder().alu(max, &[a, b]);
                self.builder().alu(max, &[ab, c])
            }
            // The median: max(min(a, b), min(max(a, b), c)).
            _ => {
                let low = self.builder().alu(min, &[a, b]);
                let high = self.builder().alu(max, &[a, b]);
                let high_c = self.builder().alu(min, &[high, c]);
                self.builder().alu(max, &[low, high_c])
            }
        };
        Ok(Val::Ssa(v))
    }

    fn glsl450(&mut self, inst: &Inst, op: u32, args: &[u32]) -> Result<Val> {
        use AluOp as A;
        let arity = match op {
            // Composite or pointer operands: handled below.
            33 | 34 | 35 | 36 | 51 | 52 | 76..=78 => 0,
            _ => args.len(),
        };
        // The operands those read: a matrix (determinant, inverse), a value (modfStruct,
        // frexpStruct), or a value and a pointer (modf, frexp).
        let composite_operands = match op {
            33 | 34 | 36 | 52 => 1,
            35 | 51 => 2,
            _ => 0,
        };
        if args.len() < composite_operands {
            return Err(SpirvError::malformed(format!(
                "extended instruction {op} needs {composite_operands} operands"
            )));
        }
        let mut x = Vec::with_capacity(arity);
        for &a in &args[..arity] {
            x.push(self.ssa(a)?);
        }
        let need = |n: usize| {
            if x.len() < n {
                Err(SpirvError::malformed(format!(
                    "extended instruction {op} needs {n} operands"
                )))
            } else {
                Ok(())
            }
        };
        if let Some(alu) = direct(op) {
            need(alu.info().srcs.len())?;
            let mut srcs = x[..alu.info().srcs.len()].to_vec();
            if alu == A::Fldexp {
                srcs[1] = self.int32(srcs[1])?;
            }
            let mut v = self.builder().alu(alu, &srcs);
            if matches!(alu, A::FindLsb | A::IfindMsb | A::UfindMsb) {
                let want = self.val_type(result_type(inst)?)?.bits;
                if want != 32 {
                    return Err(SpirvError::unsupported(format!(
                        "bit searches with {want}-bit results"
                    )));
                }
                v = self.builder().alu(A::Mov, &[v]);
            }
            return Ok(Val::Ssa(v));
        }
        let bits = match x.first() {
            Some(&a) => self.builder().value_type(a).bits,
            None => 32,
        };
        let v = match op {
            11 | 12 => {
                need(1)?;
                let factor = if op == 11 {
                    std::f64::consts::PI / 180.0
                } else {
                    180.0 / std::f64::consts::PI
                };
                let k = self.builder().imm_float(factor, bits);
                self.builder().alu(A::Fmul, &[x[0], k])
            }
            27 | 28 => {
                // exp(x) = 2^(x·log2 e); log(x) = log2(x)·ln 2.
                need(1)?;
                if op == 27 {
                    let k = self.builder().imm_float(std::f64::consts::LOG2_E, bits);
                    let t = self.builder().alu(A::Fmul, &[x[0], k]);
                    self.builder().alu(A::Fexp2, &[t])
                } else {
                    let k = self.builder().imm_float(std::f64::consts::LN_2, bits);
                    let t = self.builder().alu(A::Flog2, &[x[0]]);
                    self.builder().alu(A::Fmul, &[t, k])
                }
            }
            43 | 44 | 45 | 81 => {
                need(3)?;
                let (max, min) = match op {
                    43 | 81 => (A::Fmax, A::Fmin),
                    44 => (A::Umax, A::Umin),
                    _ => (A::Imax, A::Imin),
                };
                let lo = self.builder().alu(max, &[x[0], x[1]]);
                self.builder().alu(min, &[lo, x[2]])
            }
            46 => {
                need(3)?;
                self.builder().alu(A::Flrp, &[x[0], x[1], x[2]])
            }
            47 => {
                // IMix is not in GLSL; select by a boolean-ish integer.
                return Err(SpirvError::unsupported("IMix"));
            }
            48 => {
                // step(edge, x) = x < edge ? 0 : 1
                need(2)?;
                let lt = self.builder().alu(A::Flt, &[x[1], x[0]]);
                let zero = self.builder().imm_float(0.0, bits);
                let one = self.builder().imm_float(1.0, bits);
                self.builder().alu(A::Bcsel, &[lt, zero, one])
            }
            49 => {
                // t = clamp((x - e0) / (e1 - e0), 0, 1); t·t·(3 − 2t)
                need(3)?;
                let num = self.builder().alu(A::Fsub, &[x[2], x[0]]);
                let den = self.builder().alu(A::Fsub, &[x[1], x[0]]);
                let q = self.builder().alu(A::Fdiv, &[num, den]);
                let t = self.builder().alu(A::Fsat, &[q]);
                let two = self.builder().imm_float(2.0, bits);
                let three = self.builder().imm_float(3.0, bits);
                let t2 = self.builder().alu(A::Fmul, &[two, t]);
                let s = self.builder().alu(A::Fsub, &[three, t2]);
                let tt = self.builder().alu(A::Fmul, &[t, t]);
                self.builder().alu(A::Fmul, &[tt, s])
            }
            66 => {
                need(1)?;
                self.length(x[0])?
            }
            67 => {
                need(2)?;
                let d = self.builder().alu(A::Fsub, &[x[0], x[1]]);
                self.length(d)?
            }
            68 => {
                need(2)?;
                let (a, b) = (x[0], x[1]);
                let comps = |translator: &mut Self, v: Value, s: [u8; 3]| {
                    translator.builder().alu_swizzled(
                        A::Mov,
                        vec![shrew_engine::ir::AluSrc::swizzled(v, &s)],
                        3,
                    )
                };
                let a_yzx = comps(self, a, [1, 2, 0]);
                let b_zxy = comps(self, b, [2, 0, 1]);
                let a_zxy = comps(self, a, [2, 0, 1]);
                let b_yzx = comps(self, b, [1, 2, 0]);
                let l = self.builder().alu(A::Fmul, &[a_yzx, b_zxy]);
                let r = self.builder().alu(A::Fmul, &[a_zxy, b_yzx]);
                self.builder().alu(A::Fsub, &[l, r])
            }
            69 => {
                need(1)?;
                let n = self.builder().value_type(x[0]).comps;
                if n == 1 {
                    self.builder().alu(A::Fsign, &[x[0]])
                } else {
                    let d = self.dot(x[0], x[0])?;
                    let r = self.builder().alu(A::Frsq, &[d]);
                    self.builder().alu(A::Fmul, &[x[0], r])
                }
            }
            70 => {
                // faceforward(N, I, Nref) = dot(Nref, I) < 0 ? N : -N
                need(3)?;
                let d = self.dot(x[2], x[1])?;
                let zero = self.builder().imm_float(0.0, bits);
                let lt = self.builder().alu(A::Flt, &[d, zero]);
                let neg = self.builder().alu(A::Fneg, &[x[0]]);
                self.builder().alu(A::Bcsel, &[lt, x[0], neg])
            }
            71 => {
                // reflect(I, N) = I − 2·dot(N, I)·N
                need(2)?;
                let d = self.dot(x[1], x[0])?;
                let two = self.builder().imm_float(2.0, bits);
                let d2 = self.builder().alu(A::Fmul, &[d, two]);
                let t = self.builder().alu(A::Fmul, &[x[1], d2]);
                self.builder().alu(A::Fsub, &[x[0], t])
            }
            72 => {
                // k = 1 − η²(1 − dot(N,I)²); k < 0 ? 0 : η·I − (η·dot(N,I) + √k)·N
                need(3)?;
                let (i, n, eta) = (x[0], x[1], x[2]);
                let d = self.dot(n, i)?;
                let one = self.builder().imm_float(1.0, bits);
                let dd = self.builder().alu(A::Fmul, &[d, d]);
                let omd = self.builder().alu(A::Fsub, &[one, dd]);
                let ee = self.builder().alu(A::Fmul, &[eta, eta]);
                let e_omd = self.builder().alu(A::Fmul, &[ee, omd]);
                let k = self.builder().alu(A::Fsub, &[one, e_omd]);
                let ei = self.builder().alu(A::Fmul, &[i, eta]);
                let ed = self.builder().alu(A::Fmul, &[eta, d]);
                let sk = self.builder().alu(A::Fsqrt, &[k]);
                let s = self.builder().alu(A::Fadd, &[ed, sk]);
                let sn = self.builder().alu(A::Fmul, &[n, s]);
                let r = self.builder().alu(A::Fsub, &[ei, sn]);
                let zero_s = self.builder().imm_float(0.0, bits);
                let neg = self.builder().alu(A::Flt, &[k, zero_s]);
                let comps = self.builder().value_type(r).comps;
                let zero = self.builder().imm(bits, &vec![0; comps as usize]);
                self.builder().alu(A::Bcsel, &[neg, zero, r])
            }
            33 => {
                let m = self.columns(args[0])?;
                self.determinant(&m)?
            }
            34 => {
                let m = self.columns(args[0])?;
                let inv = self.inverse(&m)?;
                return Ok(Val::Composite(inv.into_iter().map(Val::Ssa).collect()));
            }
            35 | 36 => {
                // modf: the fraction part is x − trunc(x), the whole part trunc(x).
                let a = self.ssa(args[0])?;
                let whole = self.builder().alu(A::Ftrunc, &[a]);
                let frac = self.builder().alu(A::Fsub, &[a, whole]);
                if op == 36 {
                    return Ok(Val::Composite(vec![Val::Ssa(frac), Val::Ssa(whole)]));
                }
                let p = self.ptr(args[1])?;
                let ty = self.type_of(args[0])?;
                self.store(&p, ty, &Val::Ssa(whole))?;
                frac
            }
            51 | 52 => {
                let a = self.ssa(args[0])?;
                let sig = self.builder().alu(A::FrexpSig, &[a]);
                let exp = self.builder().alu(A::FrexpExp, &[a]);
                if op == 52 {
                    return Ok(Val::Composite(vec![Val::Ssa(sig), Val::Ssa(exp)]));
                }
                let p = self.ptr(args[1])?;
                let ty = self.pointee(self.type_of(args[1])?)?;
                self.store(&p, ty, &Val::Ssa(exp))?;
                sig
            }
            76..=78 => {
                // Rendering here is single-sampled: the centroid and every sample are the
                // pixel's centre, so interpolateAtCentroid and interpolateAtSample read the
                // input as it is. interpolateAtOffset adds the input's screen-space
                // derivatives times the offset: exact for inputs linear in screen space (flat
                // and noperspective ones, and any under an affine projection), a first-order
                // approximation under perspective.
                let p = self.ptr(args[0])?;
                let ty = self.pointee(self.type_of(args[0])?)?;
                let Val::Ssa(value) = self.load(&p, ty)? else {
                    return Err(SpirvError::unsupported(
                        "interpolateAt* of a value that is not a scalar or vector",
                    ));
                };
                if op != 78 {
                    return Ok(Val::Ssa(value));
                }
                let offset = self.ssa(args[1])?;
                let (ox, oy) = (
                    self.builder().channel(offset, 0),
                    self.builder().channel(offset, 1),
                );
                let ddx = self.builder().alu(A::Fddx, &[value]);
                let ddy = self.builder().alu(A::Fddy, &[value]);
                let along_x = self.builder().alu(A::Fmul, &[ddx, ox]);
                let along_y = self.builder().alu(A::Fmul, &[ddy, oy]);
                let moved = self.builder().alu(A::Fadd, &[along_x, along_y]);
                self.builder().alu(A::Fadd, &[value, moved])
            }
            _ => {
                return Err(SpirvError::unsupported(format!(
                    "GLSL.std.450 instruction {op}"
                )));
            }
        };
        Ok(Val::Ssa(v))
    }

    fn int32(&mut self, v: Value) -> Result<Value> {
        Ok(match self.builder().value_type(v).bits {
            32 => v,
            _ => self.builder().alu(AluOp::I2i32, &[v]),
        })
    }

    fn length(&mut self, v: Value) -> Result<Value> {
        if self.builder().value_type(v).comps == 1 {
            return Ok(self.builder().alu(AluOp::Fabs, &[v]));
        }
        let d = self.dot(v, v)?;
        Ok(self.builder().alu(AluOp::Fsqrt, &[d]))
    }

    /// The scalar entries of a matrix, `m[col][row]`.
    fn entries(&mut self, m: &[Value]) -> Vec<Vec<Value>> {
        m.iter()
            .map(|&c| {
                let n = self.builder().value_type(c).comps;
                (0..n).map(|r| self.builder().channel(c, r)).collect()
            })
            .collect()
    }

    fn determinant(&mut self, m: &[Value]) -> Result<Value> {
        let e = self.entries(m);
        if e.iter().any(|c| c.len() != e.len()) || !(2..=4).contains(&e.len()) {
            return Err(SpirvError::malformed(
                "the determinant of a non-square matrix",
            ));
        }
        Ok(self.det(&e))
    }

    /// Laplace expansion along the first column.
    fn det(&mut self, e: &[Vec<Value>]) -> Value {
        let n = e.len();
        if n == 1 {
            return e[0][0];
        }
        let mut acc: Option<Value> = None;
        for r in 0..n {
            let minor = self.minor(e, 0, r);
            let d = self.det(&minor);
            let term = self.builder().alu(AluOp::Fmul, &[e[0][r], d]);
            acc = Some(match acc {
                None => term,
                Some(a) if r % 2 == 1 => self.builder().alu(AluOp::Fsub, &[a, term]),
                Some(a) => self.builder().alu(AluOp::Fadd, &[a, term]),
            });
        }
        acc.expect("a matrix has entries")
    }

    /// The matrix without column `col` and row `row`.
    fn minor(&mut self, e: &[Vec<Value>], col: usize, row: usize) -> Vec<Vec<Value>> {
        e.iter()
            .enumerate()
            .filter(|(c, _)| *c != col)
            .map(|(_, column)| {
                column
                    .iter()
                    .enumerate()
                    .filter(|(r, _)| *r != row)
                    .map(|(_, v)| *v)
                    .collect()
            })
            .collect()
    }

    /// The inverse by the adjugate: inv[c][r] = (−1)^(r+c) · det(minor(r, c)) / det.
    fn inverse(&mut self, m: &[Value]) -> Result<Vec<Value>> {
        let e = self.entries(m);
        let n = e.len();
        if e.iter().any(|c| c.len() != n) || !(2..=4).contains(&n) {
            return Err(SpirvError::malformed("the inverse of a non-square matrix"));
        }
        let det = self.det(&e);
        let bits = self.builder().value_type(det).bits;
        let one = self.builder().imm_float(1.0, bits);
        let inv_det = self.builder().alu(AluOp::Fdiv, &[one, det]);
        let mut cols = Vec::new();
        for c in 0..n {
            let mut comps = Vec::new();
            for r in 0..n {
                let minor = self.minor(&e, r, c);
                let mut d = self.det(&minor);
                if (r + c) % 2 == 1 {
                    d = self.builder().alu(AluOp::Fneg, &[d]);
                }
                comps.push(self.builder().alu(AluOp::Fmul, &[d, inv_det]));
            }
            cols.push(self.vector(&comps)?);
        }
        Ok(cols)
    }
}
