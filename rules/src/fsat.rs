//! Saturation: `fsat` of values already in [0, 1] or known to clamp to an end, `fsat` next to
//! the `fmin`/`fmax` it implies, the clamp `fmin(fmax(a, 0), 1)` recognised as `fsat`, and
//! comparisons of saturated values turned into comparisons of the value itself.
//!
//! `fsat(NaN)` is 0 and `fsat(-0.0)` is +0.0: a clamp written with `fmax` first sends NaN to 0
//! as `fsat` does, one with `fmin` first does not.

shrew_rules_macro::rules! {
    /// fsat and clamps.
    pub static FSAT;

    fsat(fsat(a)) => fsat(a);
    fabs(fsat(a)) => fsat(a);
    fsat(fneg(fsat(a))) => 0.0;
    fsat(fneg(fabs(a))) => 0.0;
    fsat(fneg(b2f(a))) => 0.0;
    fsat(fmax(a, 0.0)) => fsat(a);
    fsat(fmin(a, 0.0)) => 0.0;
    fsat(fmax(a, 1.0)) => 1.0;
    fsat[nnan](fmin(a, 1.0)) => fsat(a);
    fsat(fadd(b2f(a), b2f(b))) => b2f(ior(a, b));
    // Results already in [+0, 1].
    fsat(fmul(fsat(a), fsat(b))) => fmul(fsat(a), fsat(b));
    fsat(fmin(fsat(a), fsat(b))) => fmin(fsat(a), fsat(b));
    fsat(fmax(fsat(a), fsat(b))) => fmax(fsat(a), fsat(b));
    fsat(fadd(1.0, fneg(fsat(a)))) => fadd(1.0, fneg(fsat(a)));
    fsat(fsub(1.0, fsat(a))) => fsub(1.0, fsat(a));
    fmin(fsat(a), 1.0) => fsat(a);
    fmax(fsat(a), 0.0) => fsat(a);
    fmax(fsat(a), 1.0) => 1.0;
    fmin(fsat(a), 0.0) => 0.0;

    // ---- Clamps -----------------------------------------------------------------------------------
    fmin(fmax(a, 0.0), 1.0) => fsat(a) if !opts.lower_fsat;
    fmax[nnan](fmin(a, 1.0), 0.0) => fsat(a) if !opts.lower_fsat;

    // ---- Comparisons of saturated values --------------------------------------------------------
    flt(fsat(a), 0.0) => false;
    fge(fsat(a), 0.0) => true;
    flt(1.0, fsat(a)) => false;
    fge(1.0, fsat(a)) => true;
    flt(0.0, fsat(a)) => flt(0.0, a);
    fge(0.0, fsat(a)) => inot(flt(0.0, a));
    fge(fsat(a), 1.0) => fge(a, 1.0);
    flt(fsat(a), 1.0) => inot(fge(a, 1.0));
    feq(fsat(a), 0.0) => inot(flt(0.0, a));
    fneu(fsat(a), 0.0) => flt(0.0, a);
    feq(fsat(a), 1.0) => fge(a, 1.0);
    fneu(fsat(a), 1.0) => inot(fge(a, 1.0));
}
