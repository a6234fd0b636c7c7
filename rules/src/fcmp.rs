//! Float comparisons and selects: complements of comparisons (the ordered/unordered pairs, so
//! NaN keeps its meaning), comparisons of a value with itself, of negated operands, of negated
//! values against constants, of `fabs` against zero, of sums against zero, merged pairs of
//! comparisons, and the generic `bcsel` rules: equal arms, constant or negated conditions,
//! nested selects on the same condition, and operations pulled out of both arms.
//!
//! Comparisons ignore the sign of zero, so `-0.0` operands become `0.0`.

shrew_rules_macro::rules! {
    /// Float comparisons and selects.
    pub static FCMP;

    // ---- Complements: not(a < b) is "a >= b or unordered" ----------------------------------------
    inot(flt(a, b)) => fgeu(a, b) if !opts.lower_unordered_cmp;
    inot(fge(a, b)) => fltu(a, b) if !opts.lower_unordered_cmp;
    inot(feq(a, b)) => fneu(a, b);
    inot(fneu(a, b)) => feq(a, b);
    inot(fltu(a, b)) => fge(a, b);
    inot(fgeu(a, b)) => flt(a, b);
    inot(fequ(a, b)) => fneo(a, b) if !opts.lower_unordered_cmp;
    inot(fneo(a, b)) => fequ(a, b) if !opts.lower_unordered_cmp;
    inot(ford(a, b)) => funord(a, b) if !opts.lower_unordered_cmp;
    inot(funord(a, b)) => ford(a, b) if !opts.lower_unordered_cmp;

    // ---- A value against itself: only NaN is unordered with itself ---------------------------
    flt(a, a) => false;
    fge(a, a) => feq(a, a);
    fltu(a, a) => fneu(a, a);
    fgeu(a, a) => true;
    fequ(a, a) => true;
    fneo(a, a) => false;
    ford(a, a) => feq(a, a);
    funord(a, a) => fneu(a, a);

    // ---- Negated operands ---------------------------------------------------------------------
    for OP in [flt, fge, fltu, fgeu] {
        OP(fneg(a), fneg(b)) => OP(b, a);
        OP(fneg(a), 0.0) => OP(0.0, a);
        OP(0.0, fneg(a)) => OP(a, 0.0);
        OP(a, -0.0) => OP(a, 0.0);
        OP(-0.0, a) => OP(0.0, a);
        OP(fneg(a[is_not_const]), #b) => OP(fneg(b), a);
        OP(#b, fneg(a[is_not_const])) => OP(a, fneg(b));
    }
    for OP in [feq, fneu, fequ, fneo] {
        OP(fneg(a), fneg(b)) => OP(a, b);
        OP(fneg(a), 0.0) => OP(a, 0.0);
        OP(fabs(a), 0.0) => OP(a, 0.0);
        OP(a, -0.0) => OP(a, 0.0);
        OP(fneg(a[is_not_const]), #b) => OP(a, fneg(b));
    }
    for OP in [ford, funord] {
        OP(fneg(a), b) => OP(a, b);
        OP(fabs(a), b) => OP(a, b);
    }
    flt(fneg(a), a) => flt(0.0, a);
    flt(a, fneg(a)) => flt(a, 0.0);
    fge(fneg(a), a) => fge(0.0, a);
    fge(a, fneg(a)) => fge(a, 0.0);
    feq(fneg(a), a) => feq(a, 0.0);
    fneu(fneg(a), a) => fneu(a, 0.0);

    // ---- fabs against zero ----------------------------------------------------------------------
    flt(fabs(a), 0.0) => false;
    fge(fabs(a), 0.0) => feq(a, a);
    fge(0.0, fabs(a)) => feq(a, 0.0);
    flt(0.0, fabs(a)) => fneo(a, 0.0) if !opts.lower_unordered_cmp;
    fltu(fabs(a), 0.0) => fneu(a, a);
    fgeu(fabs(a), 0.0) => true;
    fltu(0.0, fabs(a)) => fneu(a, 0.0);
    fgeu(0.0, fabs(a)) => fequ(a, 0.0) if !opts.lower_unordered_cmp;

    // ---- Sums against zero ----------------------------------------------------------------------
    // The rounded sum has the sign of the exact one, so `<` is exact; `>=` and `==` differ when
    // inf - inf is NaN.
    flt(fadd[is_used_once](a, b), 0.0) => flt(a, fneg(b));
    flt(0.0, fadd[is_used_once](a, b)) => flt(fneg(b), a);
    ~fge(fadd[is_used_once](a, b), 0.0) => fge(a, fneg(b));
    ~fge(0.0, fadd[is_used_once](a, b)) => fge(fneg(b), a);
    ~feq(fadd[is_used_once](a, b), 0.0) => feq(a, fneg(b));
    ~fneu(fadd[is_used_once](a, b), 0.0) => fneu(a, fneg(b));

    // ---- Pairs of comparisons -------------------------------------------------------------------
    ior(flt(a, b), feq(a, b)) => fge(b, a);
    iand(fge(a, b), fge(b, a)) => feq(a, b);
    iand(fge(a, b), fneu(a, b)) => flt(b, a);
    ior(flt(a, b), flt(b, a)) => fneo(a, b) if !opts.lower_unordered_cmp;
    for N in [16, 32, 64] {
        iand(feq(a@N, a), feq(b@N, b)) => ford(a, b) if !opts.lower_unordered_cmp;
        ior(fneu(a@N, a), fneu(b@N, b)) => funord(a, b) if !opts.lower_unordered_cmp;
    }
    // An ordered comparison is already false for NaN.
    iand(feq(a, a), flt(a, b)) => flt(a, b);
    iand(feq(a, a), flt(b, a)) => flt(b, a);
    iand(feq(a, a), fge(a, b)) => fge(a, b);
    iand(feq(a, a), fge(b, a)) => fge(b, a);
    iand(feq(a, a), feq(a, b)) => feq(a, b);
    // Against a common operand: a min or max (which ignores a NaN the comparisons would see).
    ~iand(flt(a, b), flt(a, c)) => flt(a, fmin(b, c));
    ~ior(flt(a, b), flt(a, c)) => flt(a, fmax(b, c));
    ~iand(flt(a, c), flt(b, c)) => flt(fmax(a, b), c);
    ~ior(flt(a, c), flt(b, c)) => flt(fmin(a, b), c);
    ~iand(fge(a, b), fge(a, c)) => fge(a, fmax(b, c));
    ~ior(fge(a, b), fge(a, c)) => fge(a, fmin(b, c));
    ~iand(fge(a, c), fge(b, c)) => fge(fmin(a, b), c);
    ~ior(fge(a, c), fge(b, c)) => fge(fmax(a, b), c);

    // ---- Selects ----------------------------------------------------------------------------------
    bcsel(c, a, a) => a;
    bcsel(true, a, b) => a;
    bcsel(false, a, b) => b;
    bcsel(inot(c), a, b) => bcsel(c, b, a);
    bcsel(c, bcsel(c, a, b), d) => bcsel(c, a, d);
    bcsel(c, a, bcsel(c, b, d)) => bcsel(c, a, d);
    bcsel(a, bcsel[is_used_once](b, c, d), d) => bcsel(iand(a, b), c, d);
    bcsel(a, c, bcsel[is_used_once](b, c, d)) => bcsel(ior(a, b), c, d);
    bcsel(ieq(a, b), a, b) => b;
    bcsel(ine(a, b), a, b) => a;
    bcsel(fneu[nsz](a, b), a, b) => a;
    bcsel(feq[nsz](a, b), a, b) => b;
    // The same operation on both arms, differing in one operand.
    for OP in [fadd, fmul, fmin, fmax, iadd, imul, iand, ior, ixor, imin, imax, umin, umax] {
        bcsel(c, OP[is_used_once](a, b), OP[is_used_once](a, d)) => OP(a, bcsel(c, b, d));
    }
    for OP in [fsub, fdiv, isub, ishl, ishr, ushr, udiv, idiv] {
        bcsel(c, OP[is_used_once](a, b), OP[is_used_once](a, d)) => OP(a, bcsel(c, b, d));
        bcsel(c, OP[is_used_once](b, a), OP[is_used_once](d, a)) => OP(bcsel(c, b, d), a);
    }
    for OP in [fneg, fabs, fsat, ineg, iabs, inot, ffloor, fceil, ftrunc, frcp, fsqrt, fexp2] {
        bcsel(c, OP[is_used_once](a), OP[is_used_once](b)) => OP(bcsel(c, a, b));
    }
}
