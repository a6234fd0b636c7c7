//! Late rules, run after the algebraic set: fusion of multiply-adds and the lowering of opcodes
//! a target lacks, each guarded by its `TargetOptions` field — `ffma` fusion and splitting,
//! `fsub`/`isub`/`ineg`/`fneg`, `fsat`, `fdiv`, `flrp`, `fpow`, `fmod`/`frem`, `ftan`,
//! `fsign`/`isign`, `iabs`, bitfield extract/insert, carries and borrows, saturating adds,
//! rotates, dot products, high-half multiplies and unordered comparisons. Lowerings follow the opcode table's exact
//! semantics (shift counts modulo the size, clamped bitfields, per-step rounding of the formula
//! opcodes), so most of them are exact.
//!
//! Rules that undo a lowering elsewhere are guarded by the opposite condition, so no two rules
//! fight whatever the options.

shrew_rules_macro::rules! {
    /// Late fusion and lowering.
    pub static LATE;

    // ---- Multiply-add ---------------------------------------------------------------------------
    for (N, FUSE, LOWER) in [(16, fuse_ffma16, lower_ffma16), (32, fuse_ffma32, lower_ffma32),
                             (64, fuse_ffma64, lower_ffma64)] {
        ~fadd@N(fmul[is_used_once](a, b), c) => ffma(a, b, c) if opts.FUSE && !opts.LOWER;
        ~fadd@N(fneg[is_used_once](fmul[is_used_once](a, b)), c) => ffma(fneg(a), b, c) if opts.FUSE && !opts.LOWER;
        ~fsub@N(fmul[is_used_once](a, b), c) => ffma(a, b, fneg(c)) if opts.FUSE && !opts.LOWER;
        ~fsub@N(c, fmul[is_used_once](a, b)) => ffma(fneg(a), b, c) if opts.FUSE && !opts.LOWER;
        ~ffma@N(a, b, c) => fadd(fmul(a, b), c) if opts.LOWER;
    }

    // ---- Subtraction and negation ---------------------------------------------------------------
    fsub(a, b) => fadd(a, fneg(b)) if opts.lower_fsub;
    fadd(a, fneg(b[is_not_const])) => fsub(a, b) if !opts.lower_fsub;
    isub(a, b) => iadd(a, ineg(b)) if opts.lower_isub;
    iadd(a, ineg(b[is_not_const])) => isub(a, b) if !opts.lower_isub;
    iadd(a, isub(0, b)) => isub(a, b) if !opts.lower_isub;
    ineg(a) => isub(0, a) if opts.lower_ineg && !opts.lower_isub;
    fneg(a) => fmul(a, -1.0) if opts.lower_fneg;

    // ---- Saturation, division, interpolation, powers, modulo ------------------------------------
    fsat(a) => fmin(fmax(a, 0.0), 1.0) if opts.lower_fsat;
    fdiv(1.0, a) => frcp(a);
    ~fdiv(a, b) => fmul(a, frcp(b)) if opts.lower_fdiv;
    for (N, L) in [(16, lower_flrp16), (32, lower_flrp32), (64, lower_flrp64)] {
        flrp@N(a, b, c) => fadd(fmul(a, fadd(1.0, fneg(c))), fmul(b, c)) if opts.L;
    }
    ~fpow(a, 2.0) => fmul(a, a) if opts.lower_pow_small_int;
    ~fpow(a, 3.0) => fmul(fmul(a, a), a) if opts.lower_pow_small_int;
    ~fpow(a, 4.0) => fmul(fmul(a, a), fmul(a, a)) if opts.lower_pow_small_int;
    ~fpow(a, b) => fexp2(fmul(flog2(a), b)) if opts.lower_fpow;
    fmod(a, b) => fadd(a, fneg(fmul(b, ffloor(fdiv(a, b))))) if opts.lower_fmod;
    frem(a, b) => fadd(a, fneg(fmul(b, ftrunc(fdiv(a, b))))) if opts.lower_fmod;
    ~ftan(a) => fdiv(fsin(a), fcos(a)) if opts.lower_ftan;

    // ---- Signs and absolute values --------------------------------------------------------------
    fsign(a) => bcsel(flt(0.0, a), 1.0, bcsel(flt(a, 0.0), -1.0, a)) if opts.lower_fsign;
    isign@1(a) => a if opts.lower_isign;
    for N in [8, 16, 32, 64] {
        isign@N(a) => imax(imin(a, 1), -1) if opts.lower_isign;
    }
    iabs(a) => imax(a, ineg(a)) if opts.lower_iabs;

    // ---- Bitfields --------------------------------------------------------------------------------
    // Offsets and counts are clamped so the field lies inside the value: an offset of N or more
    // selects nothing, and a count reaching past the top stops there.
    for N in [8, 16, 32, 64] {
        ubitfield_extract@N(a, b, c)
            => bcsel(ult(b, N),
                     iand(ushr(a, b), bcsel(ult(c, N), iadd(ishl(1, c), -1), -1)),
                     0)
            if opts.lower_bitfield_extract;
        ibitfield_extract@N(a, b, c)
            => bcsel(ieq(umin(c, isub(N, umin(b, N))), 0),
                     0,
                     ishr(ishl(a, isub(isub(N, umin(b, N)), umin(c, isub(N, umin(b, N))))),
                          isub(N, umin(c, isub(N, umin(b, N))))))
            if opts.lower_bitfield_extract;
        bitfield_insert@N(a, b, c, d)
            => ior(iand(a, inot(ishl(bcsel(ult(umin(d, isub(N, umin(c, N))), N),
                                           iadd(ishl(1, umin(d, isub(N, umin(c, N)))), -1),
                                           -1),
                                     umin(c, N)))),
                   iand(ishl(b, umin(c, N)),
                        ishl(bcsel(ult(umin(d, isub(N, umin(c, N))), N),
                                   iadd(ishl(1, umin(d, isub(N, umin(c, N)))), -1),
                                   -1),
                             umin(c, N))))
            if opts.lower_bitfield_insert;
    }

    // ---- Carries, borrows, saturating adds --------------------------------------------------------
    uadd_carry@1(a, b) => iand(a, b) if opts.lower_uadd_carry;
    usub_borrow@1(a, b) => iand(inot(a), b) if opts.lower_usub_borrow;
    for N in [8, 16, 32, 64] {
        uadd_carry@N(a, b) => b2i(ult(iadd(a, b), a)) if opts.lower_uadd_carry;
        usub_borrow@N(a, b) => b2i(ult(a, b)) if opts.lower_usub_borrow;
    }
    uadd_sat(a, b) => bcsel(ult(iadd(a, b), a), -1, iadd(a, b)) if opts.lower_add_sat;
    usub_sat(a, b) => bcsel(ult(a, b), 0, isub(a, b)) if opts.lower_add_sat;
    iadd_sat@1(a, b) => ior(a, b) if opts.lower_add_sat;
    isub_sat@1(a, b) => iand(a, inot(b)) if opts.lower_add_sat;
    // Signed overflow: the operands agree in sign (add) or differ (sub) and the result's sign
    // differs from the first operand's.
    for (N, MIN, MAX) in [(8, -128, 127), (16, -32768, 32767), (32, -2147483648, 2147483647),
                          (64, -9223372036854775808, 9223372036854775807)] {
        iadd_sat@N(a, b)
            => bcsel(ilt(iand(inot(ixor(a, b)), ixor(a, iadd(a, b))), 0),
                     bcsel(ilt(a, 0), MIN, MAX),
                     iadd(a, b))
            if opts.lower_add_sat;
        isub_sat@N(a, b)
            => bcsel(ilt(iand(ixor(a, b), ixor(a, isub(a, b))), 0),
                     bcsel(ilt(a, 0), MIN, MAX),
                     isub(a, b))
            if opts.lower_add_sat;
    }

    // ---- Rotates: -b is N - b modulo any power-of-two size N ---------------------------------------
    urol(a, b) => ior(ishl(a, b), ushr(a, ineg(b))) if opts.lower_rotate;
    uror(a, b) => ior(ushr(a, b), ishl(a, ineg(b))) if opts.lower_rotate;

    // ---- Dot products, evaluated left to right as the opcodes are ---------------------------------
    fdot2(a, b) => fadd(fmul(a.x, b.x), fmul(a.y, b.y)) if opts.lower_fdot;
    fdot3(a, b) => fadd(fadd(fmul(a.x, b.x), fmul(a.y, b.y)), fmul(a.z, b.z)) if opts.lower_fdot;
    fdot4(a, b)
        => fadd(fadd(fadd(fmul(a.x, b.x), fmul(a.y, b.y)), fmul(a.z, b.z)), fmul(a.w, b.w))
        if opts.lower_fdot;

    // ---- High halves of multiplications -----------------------------------------------------------
    umul_high@32(a, b) => u2u32(ushr(umul_2x32_64(a, b), 32)) if opts.lower_mul_high;
    imul_high@32(a, b) => u2u32(ushr(imul_2x32_64(a, b), 32)) if opts.lower_mul_high;
    // The full product of two 8- or 16-bit values fits in 32 bits.
    for (N, NARROW) in [(8, u2u8), (16, u2u16)] {
        umul_high@N(a, b) => NARROW(ushr(imul(u2u32(a), u2u32(b)), N)) if opts.lower_mul_high;
        imul_high@N(a, b) => NARROW(ushr(imul(i2i32(a), i2i32(b)), N)) if opts.lower_mul_high;
    }

    // ---- Unordered comparisons --------------------------------------------------------------------
    fltu(a, b) => inot(fge(a, b)) if opts.lower_unordered_cmp;
    fgeu(a, b) => inot(flt(a, b)) if opts.lower_unordered_cmp;
    fequ(a, b) => inot(ior(flt(a, b), flt(b, a))) if opts.lower_unordered_cmp;
    fneo(a, b) => ior(flt(a, b), flt(b, a)) if opts.lower_unordered_cmp;
    ford(a, b) => iand(feq(a, a), feq(b, b)) if opts.lower_unordered_cmp;
    funord(a, b) => ior(fneu(a, a), fneu(b, b)) if opts.lower_unordered_cmp;

    // ---- Booleans multiplied in ---------------------------------------------------------------------
    ~fmul(b2f(a), b) => bcsel(a, b, 0.0) if opts.lower_b2f_mul;
}
