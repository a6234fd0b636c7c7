//! Arithmetic identities: float and integer addition, multiplication and division by neutral or
//! absorbing constants, `fneg`/`fabs`/`ineg`/`iabs` simplification, rounding functions applied to
//! values that are already integral, reassociation that gathers constants (guarded with
//! `is_not_const` so two constants never trade places forever), distributivity, and recognition
//! of the formulas behind `flrp`, `fmod` and `frem`.
//!
//! Float rules that are wrong only for −0.0 carry `nsz`, only for NaN/infinity `nnan`/`ninf`;
//! rules that may round differently are inexact (`~`).

shrew_rules_macro::rules! {
    /// Float and integer arithmetic identities.
    pub static ARITH;

    // ---- fneg / fabs ----------------------------------------------------------------------
    fneg(fneg(a)) => a;
    fabs(fabs(a)) => fabs(a);
    fabs(fneg(a)) => fabs(a);
    fabs(fmul(a, a)) => fmul(a, a);
    fabs(fexp2(a)) => fexp2(a);
    fabs(u2f(a)) => u2f(a);
    fmul(fabs(a), fabs(a)) => fmul(a, a);
    fmul(fabs(a), fabs(b)) => fabs(fmul(a, b));
    fdiv(fabs(a), fabs(b)) => fabs(fdiv(a, b));
    fmul(fneg(a), fneg(b)) => fmul(a, b);
    fdiv(fneg(a), fneg(b)) => fdiv(a, b);
    ffma(fneg(a), fneg(b), c) => ffma(a, b, c);
    // Negation moves onto constants (folded later); the other operand must not be a constant,
    // or the two would swap the negation back and forth.
    fmul(fneg(a[is_not_const]), #b) => fmul(a, fneg(b));
    fneg(fmul(a[is_not_const], #b)) => fmul(a, fneg(b));
    fdiv(fneg(a[is_not_const]), #b) => fdiv(a, fneg(b));
    fdiv(#b, fneg(a[is_not_const])) => fdiv(fneg(b), a);
    frcp(fneg(a)) => fneg(frcp(a));
    fsign(fneg(a)) => fneg(fsign(a));
    fsign(fsign(a)) => fsign(a);
    fmul(fsign(a), fabs(a)) => a;
    fabs(fsign(a)) => fsign(fabs(a));
    fsign[nnan](fabs(a)) => b2f(fneu(a, 0.0));

    // ---- fadd / fsub ------------------------------------------------------------------------
    fadd(a, -0.0) => a;
    fadd[nsz](a, 0.0) => a;
    fsub(a, 0.0) => a;
    fsub[nsz](a, -0.0) => a;
    fsub(-0.0, a) => fneg(a);
    fsub[nsz](0.0, a) => fneg(a);
    fsub(a, fneg(b)) => fadd(a, b);
    fsub(a, #b) => fadd(a, fneg(b));
    fadd[nnan, ninf](a, fneg(a)) => 0.0;
    fsub[nnan, ninf](a, a) => 0.0;
    fadd(a, a) => fmul(a, 2.0);
    ~fadd(fsub(a, b), b) => a;
    ~fsub(fadd(a, b), b) => a;
    ~fsub(a, fsub(a, b)) => b;
    ~fadd(fadd(a, b), fneg(b)) => a;

    // ---- fmul / fdiv / ffma -----------------------------------------------------------------
    fmul(a, 1.0) => a;
    fmul(a, -1.0) => fneg(a) if !opts.lower_fneg;
    ~fmul(a, 0.0) => 0.0;
    ~fmul(a, -0.0) => -0.0;
    fdiv(a, 1.0) => a;
    fdiv(a, -1.0) => fneg(a);
    fdiv(1.0, a) => frcp(a);
    fdiv(-1.0, a) => fneg(frcp(a));
    // Division by a power of two is an exact multiplication by its reciprocal.
    for (D, R) in [(2.0, 0.5), (4.0, 0.25), (8.0, 0.125), (16.0, 0.0625), (0.5, 2.0),
                   (0.25, 4.0), (0.125, 8.0), (-2.0, -0.5), (-4.0, -0.25), (-0.5, -2.0)] {
        fdiv(a, D) => fmul(a, R);
    }
    ~fmul(a, frcp[is_used_once](b)) => fdiv(a, b) if !opts.lower_fdiv;
    ~frcp(fsqrt(a)) => frsq(a);
    ~frcp(frsq(a)) => fsqrt(a);
    ~fdiv(a, fsqrt(b)) => fmul(a, frsq(b));
    ~fdiv(a, frsq(b)) => fmul(a, fsqrt(b));
    ffma(a, 1.0, b) => fadd(a, b);
    ffma(a, -1.0, b) => fadd(b, fneg(a));
    ffma(a, b, -0.0) => fmul(a, b);
    ffma[nsz](a, b, 0.0) => fmul(a, b);
    ~ffma(a, 0.0, b) => b;
    ~ffma(#a, #b, c) => fadd(fmul(a, b), c);

    // ---- fpow, trigonometry -------------------------------------------------------------------
    fpow(a, 1.0) => a;
    fpow(a, 0.0) => 1.0;
    fpow(a, -0.0) => 1.0;
    fpow(1.0, a) => 1.0;
    ~fpow(a, 0.5) => fsqrt(a);
    ~fpow(a, -0.5) => frsq(a);
    ~fpow(a, -1.0) => frcp(a);
    fcos(fneg(a)) => fcos(a);
    fcos(fabs(a)) => fcos(a);
    fcosh(fneg(a)) => fcosh(a);
    fcosh(fabs(a)) => fcosh(a);

    // ---- Rounding ---------------------------------------------------------------------------
    // Every rounding function returns an integral value (or ±0, ±inf, NaN), which every other
    // rounding function leaves alone; so do integer conversions and b2f.
    for OUTER in [ffloor, fceil, ftrunc, fround_even] {
        for INNER in [ffloor, fceil, ftrunc, fround_even] {
            OUTER(INNER(a)) => INNER(a);
        }
        OUTER(i2f(a)) => i2f(a);
        OUTER(u2f(a)) => u2f(a);
        OUTER(b2f(a)) => b2f(a);
        ffract[nnan, ninf](OUTER(a)) => 0.0;
    }
    fneg(ffloor(fneg(a))) => fceil(a);
    fneg(fceil(fneg(a))) => ffloor(a);
    fneg(ftrunc(fneg(a))) => ftrunc(a);
    fneg(fround_even(fneg(a))) => fround_even(a);
    // i2f16 of a wide integer may overflow to infinity, whose fraction is NaN: only conversions
    // that stay finite.
    for CONV in [i2f32, i2f64, u2f32, u2f64] {
        ffract(CONV(a)) => 0.0;
    }
    ffract(i2f16(a@8)) => 0.0;
    ffract(u2f16(a@8)) => 0.0;
    ffract(b2f(a)) => 0.0;

    // ---- Reassociation of constants -----------------------------------------------------------
    // `op(op(a, #b), #c)` folds the constants together; `op(op(a, #b), c)` moves the constant
    // outwards so it meets the next one.
    for OP in [iadd, imul, iand, ior, ixor, imin, imax, umin, umax, fmin, fmax] {
        OP(OP(a[is_not_const], #b), #c) => OP(a, OP(b, c));
        OP(OP[is_used_once](a[is_not_const], #b), c[is_not_const]) => OP(OP(a, c), b);
    }
    for OP in [fadd, fmul] {
        ~OP(OP(a[is_not_const], #b), #c) => OP(a, OP(b, c));
        ~OP(OP[is_used_once](a[is_not_const], #b), c[is_not_const]) => OP(OP(a, c), b);
    }

    // ---- Distributivity ---------------------------------------------------------------------
    iadd(imul[is_used_once](a[is_not_const], b), imul[is_used_once](a, c)) => imul(a, iadd(b, c));
    iadd(imul[is_used_once](a[is_not_const], b), a) => imul(a, iadd(b, 1));
    ~fadd(fmul[is_used_once](a[is_not_const], b), fmul[is_used_once](a, c)) => fmul(a, fadd(b, c));
    ~fadd(fmul[is_used_once](a[is_not_const], b), a) => fmul(a, fadd(b, 1.0));

    // ---- Integer add / sub / neg ------------------------------------------------------------
    iadd(a, 0) => a;
    isub(a, 0) => a;
    isub(0, a) => ineg(a) if !opts.lower_ineg;
    isub(a, a) => 0;
    iadd(a, ineg(a)) => 0;
    ineg(ineg(a)) => a;
    ineg(isub(a, b)) => isub(b, a);
    isub(a, ineg(b)) => iadd(a, b);
    iadd(ineg(a), ineg(b)) => ineg(iadd(a, b));
    iadd(isub(a, b), b) => a;
    isub(iadd(a, b), b) => a;
    isub(a, isub(a, b)) => b;
    iadd(iadd(a, b), ineg(b)) => a;
    isub(isub(a, b), a) => ineg(b);
    isub(isub(a, b), isub(a, c)) => isub(c, b);
    // Subtracting a constant is adding its negation, which the reassociation rules understand.
    isub(a, #b) => iadd(a, ineg(b));
    iadd(a, ineg(b[is_not_const])) => isub(a, b) if !opts.lower_isub;

    // ---- iabs / isign -------------------------------------------------------------------------
    iabs(iabs(a)) => iabs(a);
    iabs(ineg(a)) => iabs(a);
    isign(isign(a)) => isign(a);
    imul(isign(a), iabs(a)) => a;

    // ---- flrp / fmod / frem: their definitions, rounded step by step as the opcodes are -------
    for (N, L) in [(16, lower_flrp16), (32, lower_flrp32), (64, lower_flrp64)] {
        fadd@N(fmul[is_used_once](a, fadd(1.0, fneg(c))), fmul[is_used_once](b, c)) => flrp(a, b, c) if !opts.L;
        fadd@N(fmul[is_used_once](a, fsub(1.0, c)), fmul[is_used_once](b, c)) => flrp(a, b, c) if !opts.L;
    }
    ~flrp(a, b, 0.0) => a;
    ~flrp(a, b, 1.0) => b;
    ~flrp(a, a, b) => a;
    ~flrp(0.0, a, b) => fmul(a, b);
    for (ROUND, OP) in [(ffloor, fmod), (ftrunc, frem)] {
        fadd(a, fneg(fmul(b, ROUND(fdiv(a, b))))) => OP(a, b) if !opts.lower_fmod;
        fsub(a, fmul(b, ROUND(fdiv(a, b)))) => OP(a, b) if !opts.lower_fmod;
    }
}
