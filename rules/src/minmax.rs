//! Minimum and maximum: idempotence and absorption, min/max of a value and its negation or
//! absolute value, negations and complements pulled out (they reverse the order), the extreme
//! constants of each type, comparisons against a min/max of the compared value, and selects on a
//! comparison of their own arms recognised as min/max.
//!
//! `fmin`/`fmax` return the other operand when one is NaN and order −0.0 below +0.0, so most
//! float rules here are exact; those that would turn a NaN operand into a number carry `nnan`.

shrew_rules_macro::rules! {
    /// fmin/fmax, imin/imax, umin/umax.
    pub static MINMAX;

    for OP in [fmin, fmax, imin, imax, umin, umax] {
        OP(a, a) => a;
        OP(OP(a, b), b) => OP(a, b);
    }
    imin(a, imax(a, b)) => a;
    imax(a, imin(a, b)) => a;
    umin(a, umax(a, b)) => a;
    umax(a, umin(a, b)) => a;
    fmin[nnan](a, fmax(a, b)) => a;
    fmax[nnan](a, fmin(a, b)) => a;

    // ---- A value against its negation or absolute value -----------------------------------------
    fmax(a, fneg(a)) => fabs(a);
    fmin(a, fneg(a)) => fneg(fabs(a));
    fmax(a, fabs(a)) => fabs(a);
    fmin(a, fabs(a)) => a;
    fmin(a, fneg(fabs(a))) => fneg(fabs(a));
    fmax(a, fneg(fabs(a))) => a;
    imax(a, ineg(a)) => iabs(a) if !opts.lower_iabs;
    imin(a, ineg(a)) => ineg(iabs(a)) if !opts.lower_iabs;
    imax(a, iabs(a)) => iabs(a);
    imin(a, iabs(a)) => a;
    fmin(fabs(a), 0.0) => 0.0;
    fmax[nnan](fabs(a), 0.0) => fabs(a);

    // ---- Order-reversing operations -------------------------------------------------------------
    fmin(fneg(a), fneg(b)) => fneg(fmax(a, b));
    fmax(fneg(a), fneg(b)) => fneg(fmin(a, b));
    imin(inot(a), inot(b)) => inot(imax(a, b));
    imax(inot(a), inot(b)) => inot(imin(a, b));
    umin(inot(a), inot(b)) => inot(umax(a, b));
    umax(inot(a), inot(b)) => inot(umin(a, b));

    // ---- Unsigned bounds of bit operations, shifts and divisions ---------------------------------
    umin(iand(a, b), a) => iand(a, b);
    umax(iand(a, b), a) => a;
    umin(ior(a, b), a) => a;
    umax(ior(a, b), a) => ior(a, b);
    umin(ushr(a, b), a) => ushr(a, b);
    umax(ushr(a, b), a) => a;
    umin(udiv(a, b), a) => udiv(a, b);
    umax(udiv(a, b), a) => a;
    umin(umod(a, b), a) => umod(a, b);
    umax(umod(a, b), a) => a;

    // ---- Extreme constants ------------------------------------------------------------------------
    fmin(a, -INF) => -INF;
    fmax(a, INF) => INF;
    fmin[nnan](a, INF) => a;
    fmax[nnan](a, -INF) => a;
    fmin(a, NAN) => a;
    fmax(a, NAN) => a;
    umin(a, 0) => 0;
    umax(a, 0) => a;
    umin(a, -1) => a;
    umax(a, -1) => -1;
    // 1-bit min and max are `ior`/`iand` (the boolean group), whose identities cover these.
    for (N, MIN, MAX) in [(8, -128, 127), (16, -32768, 32767),
                          (32, -2147483648, 2147483647),
                          (64, -9223372036854775808, 9223372036854775807)] {
        imin@N(a, MAX) => a;
        imax@N(a, MIN) => a;
        imin@N(a, MIN) => MIN;
        imax@N(a, MAX) => MAX;
    }

    // ---- Comparisons against a min/max of the compared value --------------------------------------
    for (LT, GE, MIN, MAX) in [(ilt, ige, imin, imax), (ult, uge, umin, umax)] {
        LT(MAX(a, b), a) => false;
        GE(MAX(a, b), a) => true;
        LT(a, MIN(a, b)) => false;
        GE(a, MIN(a, b)) => true;
        LT(MIN(a, b), a) => LT(b, a);
        LT(a, MAX(a, b)) => LT(a, b);
        GE(MIN(a, b), a) => GE(b, a);
        GE(a, MAX(a, b)) => GE(a, b);
    }
    flt(fmax(a, b), a) => false;
    flt(a, fmin(a, b)) => false;
    fge(fmax(a, b), a) => feq(a, a);
    fge(a, fmin(a, b)) => feq(a, a);
    flt(fmin(a, b), a) => flt(b, a);
    flt(a, fmax(a, b)) => flt(a, b);

    // ---- Selects recognised as min/max/abs ------------------------------------------------------
    for (LT, GE, MIN, MAX) in [(ilt, ige, imin, imax), (ult, uge, umin, umax)] {
        bcsel(LT(a, b), a, b) => MIN(a, b);
        bcsel(LT(a, b), b, a) => MAX(a, b);
        bcsel(GE(a, b), a, b) => MAX(a, b);
        bcsel(GE(a, b), b, a) => MIN(a, b);
    }
    ~bcsel(flt(a, b), a, b) => fmin(a, b);
    ~bcsel(flt(a, b), b, a) => fmax(a, b);
    ~bcsel(fge(a, b), a, b) => fmax(a, b);
    ~bcsel(fge(a, b), b, a) => fmin(a, b);
    bcsel(ilt(a, 0), ineg(a), a) => iabs(a);
    bcsel(ige(a, 0), a, ineg(a)) => iabs(a);
    bcsel(ilt(a, 0), a, ineg(a)) => ineg(iabs(a));
    bcsel(ige(a, 0), ineg(a), a) => ineg(iabs(a));
    bcsel(flt[nsz](a, 0.0), fneg(a), a) => fabs(a);
    bcsel(fge[nsz](a, 0.0), a, fneg(a)) => fabs(a);
}
