//! Booleans: integer comparisons (complements, self-comparisons, comparisons against 0 and 1,
//! comparisons of negated or offset values, sign-bit tests, and pairs of comparisons merged into
//! one against a min/max), selects between boolean constants, `b2f`/`b2i` arithmetic and
//! comparisons, and 1-bit integer arithmetic, which is boolean logic.

shrew_rules_macro::rules! {
    /// Boolean logic, integer comparisons, b2f/b2i.
    pub static BOOL;

    // ---- Integer comparisons ------------------------------------------------------------------
    ilt(a, a) => false;
    ult(a, a) => false;
    ige(a, a) => true;
    uge(a, a) => true;
    ieq(a, a) => true;
    ine(a, a) => false;
    inot(ilt(a, b)) => ige(a, b);
    inot(ige(a, b)) => ilt(a, b);
    inot(ult(a, b)) => uge(a, b);
    inot(uge(a, b)) => ult(a, b);
    inot(ieq(a, b)) => ine(a, b);
    inot(ine(a, b)) => ieq(a, b);
    ult(a, 0) => false;
    uge(a, 0) => true;
    uge(0, a) => ieq(a, 0);
    ult(0, a) => ine(a, 0);
    ult(a, 1) => ieq(a, 0);
    uge(a, 1) => ine(a, 0);
    // Negation, complement and xor are bijections: equality survives them.
    ieq(ineg(a), ineg(b)) => ieq(a, b);
    ine(ineg(a), ineg(b)) => ine(a, b);
    ieq(inot(a), inot(b)) => ieq(a, b);
    ine(inot(a), inot(b)) => ine(a, b);
    ieq(ineg(a), 0) => ieq(a, 0);
    ine(ineg(a), 0) => ine(a, 0);
    ieq(iabs(a), 0) => ieq(a, 0);
    ine(iabs(a), 0) => ine(a, 0);
    ieq(ixor(a, b), 0) => ieq(a, b);
    ine(ixor(a, b), 0) => ine(a, b);
    ieq(isub(a, b), 0) => ieq(a, b);
    ine(isub(a, b), 0) => ine(a, b);
    ieq(iadd(a, b), a) => ieq(b, 0);
    ine(iadd(a, b), a) => ine(b, 0);
    ieq(ineg(a[is_not_const]), #b) => ieq(a, ineg(b));
    ine(ineg(a[is_not_const]), #b) => ine(a, ineg(b));
    ieq(inot(a[is_not_const]), #b) => ieq(a, inot(b));
    ine(inot(a[is_not_const]), #b) => ine(a, inot(b));
    ieq(iadd(a[is_not_const], #b), #c) => ieq(a, isub(c, b));
    ine(iadd(a[is_not_const], #b), #c) => ine(a, isub(c, b));
    ieq(ixor(a[is_not_const], #b), #c) => ieq(a, ixor(b, c));
    ine(ixor(a[is_not_const], #b), #c) => ine(a, ixor(b, c));
    // A single-bit mask is either 0 or the bit.
    ieq(iand(a, #b[is_pos_power_of_two]), b) => ine(iand(a, b), 0);
    ine(iand(a, #b[is_pos_power_of_two]), b) => ieq(iand(a, b), 0);
    // Sign-bit tests.
    for (N, M, S) in [(8, 7, 0x80), (16, 15, 0x8000), (32, 31, 0x80000000),
                      (64, 63, 0x8000000000000000)] {
        ine(ushr(a@N, M), 0) => ilt(a, 0);
        ieq(ushr(a@N, M), 0) => ige(a, 0);
        ine(ishr(a@N, M), 0) => ilt(a, 0);
        ieq(ishr(a@N, M), 0) => ige(a, 0);
        ilt(ishr(a@N, M), 0) => ilt(a, 0);
        ige(ishr(a@N, M), 0) => ige(a, 0);
        ine(iand(a@N, S), 0) => ilt(a, 0);
        ieq(iand(a@N, S), 0) => ige(a, 0);
    }
    // Two comparisons against a common operand are one comparison against a min or max.
    for (LT, MIN, MAX) in [(ilt, imin, imax), (ult, umin, umax)] {
        iand(LT(a, b), LT(a, c)) => LT(a, MIN(b, c));
        ior(LT(a, b), LT(a, c)) => LT(a, MAX(b, c));
        iand(LT(a, c), LT(b, c)) => LT(MAX(a, b), c);
        ior(LT(a, c), LT(b, c)) => LT(MIN(a, b), c);
    }
    for (GE, MIN, MAX) in [(ige, imin, imax), (uge, umin, umax)] {
        iand(GE(a, b), GE(a, c)) => GE(a, MAX(b, c));
        ior(GE(a, b), GE(a, c)) => GE(a, MIN(b, c));
        iand(GE(a, c), GE(b, c)) => GE(MIN(a, b), c);
        ior(GE(a, c), GE(b, c)) => GE(MAX(a, b), c);
    }
    for (LT, GE) in [(ilt, ige), (ult, uge)] {
        ior(LT(a, b), ieq(a, b)) => GE(b, a);
        iand(GE(a, b), GE(b, a)) => ieq(a, b);
        ior(LT(a, b), LT(b, a)) => ine(a, b);
        iand(GE(a, b), ine(a, b)) => LT(b, a);
    }
    for N in [8, 16, 32, 64] {
        iand(ieq(a@N, 0), ieq(b@N, 0)) => ieq(ior(a, b), 0);
        ior(ine(a@N, 0), ine(b@N, 0)) => ine(ior(a, b), 0);
    }

    // ---- Selects of booleans --------------------------------------------------------------------
    bcsel@1(a, true, false) => a;
    bcsel@1(a, false, true) => inot(a);
    bcsel(a, true, b@1) => ior(a, b);
    bcsel(a, b@1, false) => iand(a, b);
    bcsel(a, false, b@1) => iand(inot(a), b);
    bcsel(a, b@1, true) => ior(inot(a), b);
    bcsel(a, a, b@1) => ior(a, b);
    bcsel(a, b@1, a) => iand(a, b);
    for N in [8, 16, 32, 64] {
        bcsel@N(c, 1, 0) => b2i(c);
        bcsel@N(c, 0, 1) => b2i(inot(c));
        bcsel@N(c, -1, 0) => ineg(b2i(c));
        bcsel@N(c, 0, -1) => ineg(b2i(inot(c)));
    }
    for N in [16, 32, 64] {
        bcsel@N(c, 1.0, 0.0) => b2f(c);
        bcsel@N(c, 0.0, 1.0) => b2f(inot(c));
        bcsel@N(c, -1.0, -0.0) => fneg(b2f(c));
        bcsel@N(c, -0.0, -1.0) => fneg(b2f(inot(c)));
    }

    // ---- b2f / b2i ------------------------------------------------------------------------------
    fmul(b2f(a), b2f(b)) => b2f(iand(a, b));
    fmin(b2f(a), b2f(b)) => b2f(iand(a, b));
    fmax(b2f(a), b2f(b)) => b2f(ior(a, b));
    imul(b2i(a), b2i(b)) => b2i(iand(a, b));
    iand(b2i(a), b2i(b)) => b2i(iand(a, b));
    ior(b2i(a), b2i(b)) => b2i(ior(a, b));
    ixor(b2i(a), b2i(b)) => b2i(ixor(a, b));
    imin(b2i(a), b2i(b)) => b2i(iand(a, b));
    imax(b2i(a), b2i(b)) => b2i(ior(a, b));
    umin(b2i(a), b2i(b)) => b2i(iand(a, b));
    umax(b2i(a), b2i(b)) => b2i(ior(a, b));
    fabs(b2f(a)) => b2f(a);
    fsat(b2f(a)) => b2f(a);
    iabs(b2i(a)) => b2i(a);
    iand(b2i(a), 1) => b2i(a);
    fsub(1.0, b2f(a)) => b2f(inot(a));
    fadd(1.0, fneg(b2f(a))) => b2f(inot(a));
    isub(1, b2i(a)) => b2i(inot(a));
    ixor(b2i(a), 1) => b2i(inot(a));
    imul(b2i(a), b) => bcsel(a, b, 0);
    feq(b2f(a), 0.0) => inot(a);
    fneu(b2f(a), 0.0) => a;
    flt(0.0, b2f(a)) => a;
    fge(0.0, b2f(a)) => inot(a);
    feq(b2f(a), 1.0) => a;
    fneu(b2f(a), 1.0) => inot(a);
    fge(b2f(a), 1.0) => a;
    flt(b2f(a), 1.0) => inot(a);
    ieq(b2i(a), 0) => inot(a);
    ine(b2i(a), 0) => a;
    ieq(b2i(a), 1) => a;
    ine(b2i(a), 1) => inot(a);
    ilt(0, b2i(a)) => a;
    ige(0, b2i(a)) => inot(a);
    feq(b2f(a), b2f(b)) => ieq(a, b);
    fneu(b2f(a), b2f(b)) => ine(a, b);
    ieq(b2i(a), b2i(b)) => ieq(a, b);
    ine(b2i(a), b2i(b)) => ine(a, b);
    flt(b2f(a), b2f(b)) => iand(inot(a), b);
    fge(b2f(a), b2f(b)) => ior(a, inot(b));
    for (LT, GE) in [(ilt, ige), (ult, uge)] {
        LT(b2i(a), b2i(b)) => iand(inot(a), b);
        GE(b2i(a), b2i(b)) => ior(a, inot(b));
    }

    // ---- 1-bit integer arithmetic is boolean logic ---------------------------------------------
    ieq(a@1, 0) => inot(a);
    ine(a@1, 0) => a;
    ieq(a@1, 1) => a;
    ine(a@1, 1) => inot(a);
    iadd@1(a, b) => ixor(a, b);
    isub@1(a, b) => ixor(a, b);
    imul@1(a, b) => iand(a, b);
    ineg@1(a) => a;
    iabs@1(a) => a;
    isign@1(a) => a;
    bitfield_reverse@1(a) => a;
    // Signed, the 1-bit value 1 is -1.
    imin@1(a, b) => ior(a, b);
    imax@1(a, b) => iand(a, b);
    umin@1(a, b) => iand(a, b);
    umax@1(a, b) => ior(a, b);
    ilt(a@1, b) => iand(a, inot(b));
    ige(a@1, b) => ior(inot(a), b);
    ult(a@1, b) => iand(inot(a), b);
    uge(a@1, b) => ior(a, inot(b));
    idiv@1(a, b) => iand(a, b);
    udiv@1(a, b) => iand(a, b);
    imod@1(a, b) => 0;
    irem@1(a, b) => 0;
    umod@1(a, b) => 0;
    imul_high@1(a, b) => 0;
    umul_high@1(a, b) => 0;
    uadd_carry@1(a, b) => iand(a, b);
    usub_borrow@1(a, b) => iand(inot(a), b);
    uadd_sat@1(a, b) => ior(a, b);
    iadd_sat@1(a, b) => ior(a, b);
    usub_sat@1(a, b) => iand(a, inot(b));
    isub_sat@1(a, b) => iand(a, inot(b));
}
