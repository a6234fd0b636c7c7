//! Late rules, run after the algebraic set: fusion of multiply-adds and the lowering of opcodes
//! a target lacks, each guarded by its `TargetOptions` field — `ffma` fusion and splitting,
//! `fsub`/`isub`/`ineg`/`fneg`, `fsat`, `fdiv`, `flrp`, `fpow`, `fmod`/`frem`, `ftan`,
//! `fsign`/`isign`, `iabs`, bitfield extract/insert, carries and borrows, saturating adds,
//! rotates, dot products, high-half multiplies (from 64-bit products or 16-bit halves),
//! unordered comparisons, hyperbolic functions, `imod`, 32-bit `ldexp`/`frexp`, GLSL's packs
//! and unpacks, `fquantize2f16`, bit counts, bit reversal and bit scans. Lowerings follow the opcode table's exact
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

    // ---- Hyperbolic functions from exponentials and logarithms ------------------------------------
    // At 32 bits: `tanh` clamps its argument to ±10 first, beyond which it is ±1, and e^2x would
    // overflow to inf/inf.
    ~fsinh@32(a) => fmul(fsub(fexp2(fmul(a, 1.4426950408889634)), fexp2(fmul(a, -1.4426950408889634))), 0.5)
        if opts.lower_hyperbolic;
    ~fcosh@32(a) => fmul(fadd(fexp2(fmul(a, 1.4426950408889634)), fexp2(fmul(a, -1.4426950408889634))), 0.5)
        if opts.lower_hyperbolic;
    ~ftanh@32(a) => fdiv(fadd(fexp2(fmul(fmin(fmax(a, -10.0), 10.0), 2.8853900817779268)), -1.0),
                      fadd(fexp2(fmul(fmin(fmax(a, -10.0), 10.0), 2.8853900817779268)), 1.0))
        if opts.lower_hyperbolic;
    ~fasinh@32(a) => fmul(fsign(a), fmul(flog2(fadd(fabs(a), fsqrt(ffma(a, a, 1.0)))), 0.6931471805599453))
        if opts.lower_hyperbolic;
    ~facosh@32(a) => fmul(flog2(fadd(a, fsqrt(ffma(a, a, -1.0)))), 0.6931471805599453)
        if opts.lower_hyperbolic;
    ~fatanh@32(a) => fmul(flog2(fdiv(fadd(a, 1.0), fsub(1.0, a))), 0.34657359027997264)
        if opts.lower_hyperbolic;

    // ---- Floored modulo from the truncated remainder ----------------------------------------------
    // A non-zero remainder whose sign differs from the divisor's moves by one divisor.
    imod(a, b) => bcsel(iand(ine(irem(a, b), 0), ilt(ixor(irem(a, b), b), 0)), iadd(irem(a, b), b), irem(a, b))
        if opts.lower_imod;

    // ---- Exponents of 32-bit floats -----------------------------------------------------------------
    // `ldexp` multiplies by three powers of two, each exponent clamped to the normal ones, which
    // reach every finite result; `frexp` reads the exponent field, denormals scaled by 2^24 first,
    // and leaves zeros, infinities and NaNs (exponent 0).
    ~fldexp@32(a, b) => fmul(fmul(fmul(a, ishl(iadd(imin(imax(b, -126), 127), 127), 23)), ishl(iadd(imin(imax(isub(b, imin(imax(b, -126), 127)), -126), 127), 127), 23)), ishl(iadd(imin(imax(isub(isub(b, imin(imax(b, -126), 127)), imin(imax(isub(b, imin(imax(b, -126), 127)), -126), 127)), -126), 127), 127), 23)) if opts.lower_ldexp_frexp32;
    frexp_sig@32(a) => bcsel(ior(feq(a, 0.0), ieq(iand(a, 0x7f800000), 0x7f800000)), a, ior(iand(bcsel(ieq(iand(a, 0x7f800000), 0), fmul(a, 16777216.0), a), 0x807fffff), 0x3f000000))
        if opts.lower_ldexp_frexp32;
    frexp_exp(a@32) => bcsel(ior(feq(a, 0.0), ieq(iand(a, 0x7f800000), 0x7f800000)), 0, isub(ushr(iand(bcsel(ieq(iand(a, 0x7f800000), 0), fmul(a, 16777216.0), a), 0x7f800000), 23), bcsel(ieq(iand(a, 0x7f800000), 0), 150, 126)))
        if opts.lower_ldexp_frexp32;

    // ---- High halves of 32-bit multiplications from 16-bit partial products --------------------------
    // For targets without 64-bit multiplies: every partial product and the sum of the middle
    // terms' low halves fit in 32 bits; the signed high half subtracts each operand where the
    // other is negative.
    umul_high@32(a, b)
        => iadd(iadd(imul(ushr(a, 16), ushr(b, 16)),
                     iadd(ushr(imul(ushr(a, 16), iand(b, 0xffff)), 16), ushr(imul(iand(a, 0xffff), ushr(b, 16)), 16))),
                ushr(iadd(iadd(ushr(imul(iand(a, 0xffff), iand(b, 0xffff)), 16),
                               iand(imul(ushr(a, 16), iand(b, 0xffff)), 0xffff)),
                          iand(imul(iand(a, 0xffff), ushr(b, 16)), 0xffff)), 16))
        if opts.lower_mul_high_in_halves && !opts.lower_mul_high;
    imul_high@32(a, b)
        => isub(isub(umul_high(a, b), bcsel(ilt(a, 0), b, 0)), bcsel(ilt(b, 0), a, 0))
        if opts.lower_mul_high_in_halves && !opts.lower_mul_high;

    // ---- Packing of normalized values, rounded to nearest even as GLSL's functions are --------------
    ~pack_unorm_2x16(a) => ior(f2u32(fround_even(fmul(fsat(a.x), 65535.0))), ishl(f2u32(fround_even(fmul(fsat(a.y), 65535.0))), 16)) if opts.lower_pack;
    ~pack_snorm_2x16(a) => ior(iand(f2i32(fround_even(fmul(bcsel(feq(a.x, a.x), fmin(fmax(a.x, -1.0), 1.0), 0.0), 32767.0))), 0xffff), ishl(iand(f2i32(fround_even(fmul(bcsel(feq(a.y, a.y), fmin(fmax(a.y, -1.0), 1.0), 0.0), 32767.0))), 0xffff), 16)) if opts.lower_pack;
    ~pack_unorm_4x8(a) => ior(ior(f2u32(fround_even(fmul(fsat(a.x), 255.0))), ishl(f2u32(fround_even(fmul(fsat(a.y), 255.0))), 8)), ior(ishl(f2u32(fround_even(fmul(fsat(a.z), 255.0))), 16), ishl(f2u32(fround_even(fmul(fsat(a.w), 255.0))), 24))) if opts.lower_pack;
    ~pack_snorm_4x8(a) => ior(ior(iand(f2i32(fround_even(fmul(bcsel(feq(a.x, a.x), fmin(fmax(a.x, -1.0), 1.0), 0.0), 127.0))), 0xff), ishl(iand(f2i32(fround_even(fmul(bcsel(feq(a.y, a.y), fmin(fmax(a.y, -1.0), 1.0), 0.0), 127.0))), 0xff), 8)), ior(ishl(iand(f2i32(fround_even(fmul(bcsel(feq(a.z, a.z), fmin(fmax(a.z, -1.0), 1.0), 0.0), 127.0))), 0xff), 16), ishl(iand(f2i32(fround_even(fmul(bcsel(feq(a.w, a.w), fmin(fmax(a.w, -1.0), 1.0), 0.0), 127.0))), 0xff), 24))) if opts.lower_pack;
    unpack_unorm_2x16(a) => vec2(fdiv(u2f32(iand(a, 65535)), 65535.0), fdiv(u2f32(iand(ushr(a, 16), 65535)), 65535.0)) if opts.lower_pack;
    unpack_snorm_2x16(a) => vec2(fmax(fdiv(i2f32(ishr(ishl(a, 16), 16)), 32767.0), -1.0), fmax(fdiv(i2f32(ishr(a, 16)), 32767.0), -1.0)) if opts.lower_pack;
    unpack_unorm_4x8(a) => vec4(fdiv(u2f32(iand(a, 255)), 255.0), fdiv(u2f32(iand(ushr(a, 8), 255)), 255.0), fdiv(u2f32(iand(ushr(a, 16), 255)), 255.0), fdiv(u2f32(iand(ushr(a, 24), 255)), 255.0)) if opts.lower_pack;
    unpack_snorm_4x8(a) => vec4(fmax(fdiv(i2f32(ishr(ishl(a, 24), 24)), 127.0), -1.0), fmax(fdiv(i2f32(ishr(ishl(a, 16), 24)), 127.0), -1.0), fmax(fdiv(i2f32(ishr(ishl(a, 8), 24)), 127.0), -1.0), fmax(fdiv(i2f32(ishr(a, 24)), 127.0), -1.0)) if opts.lower_pack;

    // ---- Half floats: rounded to nearest even through the exponent and significand bits ----------
    // Normal halves rebias the exponent (-112) and round at bit 13; subnormal ones add 0.5,
    // whose ulp is the half subnormals' quantum, so that the float add rounds. Unpacking
    // rebiases normals, scales subnormals by 2^-24, and keeps infinities and NaNs.
    pack_half_2x16(a) => ior(ior(iand(ushr(a.x, 16), 0x8000), bcsel(ult(0x7f800000, iand(a.x, 0x7fffffff)), 0x7e00, bcsel(uge(iand(a.x, 0x7fffffff), 0x477ff000), 0x7c00, bcsel(uge(iand(a.x, 0x7fffffff), 0x38800000), ushr(iadd(iadd(iand(a.x, 0x7fffffff), 0xc8000fff), iand(ushr(iand(a.x, 0x7fffffff), 13), 1)), 13), isub(fadd(iand(a.x, 0x7fffffff), 0.5), 0x3f000000))))), ishl(ior(iand(ushr(a.y, 16), 0x8000), bcsel(ult(0x7f800000, iand(a.y, 0x7fffffff)), 0x7e00, bcsel(uge(iand(a.y, 0x7fffffff), 0x477ff000), 0x7c00, bcsel(uge(iand(a.y, 0x7fffffff), 0x38800000), ushr(iadd(iadd(iand(a.y, 0x7fffffff), 0xc8000fff), iand(ushr(iand(a.y, 0x7fffffff), 13), 1)), 13), isub(fadd(iand(a.y, 0x7fffffff), 0.5), 0x3f000000))))), 16)) if opts.lower_pack;
    unpack_half_2x16(a) => vec2(ior(ishl(iand(iand(a, 0xffff), 0x8000), 16), bcsel(ieq(iand(iand(a, 0xffff), 0x7c00), 0x7c00), ior(0x7f800000, ishl(iand(iand(a, 0xffff), 0x3ff), 13)), bcsel(ieq(iand(iand(a, 0xffff), 0x7c00), 0), fmul(u2f32(iand(iand(a, 0xffff), 0x3ff)), 5.9604644775390625e-08), iadd(ishl(iand(iand(a, 0xffff), 0x7fff), 13), 0x38000000)))), ior(ishl(iand(iand(ushr(a, 16), 0xffff), 0x8000), 16), bcsel(ieq(iand(iand(ushr(a, 16), 0xffff), 0x7c00), 0x7c00), ior(0x7f800000, ishl(iand(iand(ushr(a, 16), 0xffff), 0x3ff), 13)), bcsel(ieq(iand(iand(ushr(a, 16), 0xffff), 0x7c00), 0), fmul(u2f32(iand(iand(ushr(a, 16), 0xffff), 0x3ff)), 5.9604644775390625e-08), iadd(ishl(iand(iand(ushr(a, 16), 0xffff), 0x7fff), 13), 0x38000000))))) if opts.lower_pack;
    fquantize2f16@32(a) => bcsel(fneu(a, a), a, bcsel(uge(iand(a, 0x7fffffff), 0x477ff000), ior(iand(a, 0x80000000), 0x7f800000), bcsel(ult(iand(a, 0x7fffffff), 0x38800000), iand(a, 0x80000000), iand(iadd(iadd(a, 0xfff), iand(ushr(a, 13), 1)), 0xffffe000)))) if opts.lower_pack;

    // ---- Bit counts and reversal by halving steps ----------------------------------------------------
    bit_count(a@32)
        => ushr(imul(iand(iadd(iadd(iand(isub(a, iand(ushr(a, 1), 0x55555555)), 0x33333333),
                                    iand(ushr(isub(a, iand(ushr(a, 1), 0x55555555)), 2), 0x33333333)),
                               ushr(iadd(iand(isub(a, iand(ushr(a, 1), 0x55555555)), 0x33333333),
                                         iand(ushr(isub(a, iand(ushr(a, 1), 0x55555555)), 2), 0x33333333)), 4)),
                          0x0f0f0f0f),
                     0x01010101),
                24)
        if opts.lower_bit_count;
    bitfield_reverse@32(a) => ior(ushr(ior(iand(ushr(ior(iand(ushr(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 4), 0x0f0f0f0f), ishl(iand(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 0x0f0f0f0f), 4)), 8), 0x00ff00ff), ishl(iand(ior(iand(ushr(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 4), 0x0f0f0f0f), ishl(iand(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 0x0f0f0f0f), 4)), 0x00ff00ff), 8)), 16), ishl(ior(iand(ushr(ior(iand(ushr(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 4), 0x0f0f0f0f), ishl(iand(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 0x0f0f0f0f), 4)), 8), 0x00ff00ff), ishl(iand(ior(iand(ushr(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 4), 0x0f0f0f0f), ishl(iand(ior(iand(ushr(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 2), 0x33333333), ishl(iand(ior(iand(ushr(a, 1), 0x55555555), ishl(iand(a, 0x55555555), 1)), 0x33333333), 2)), 0x0f0f0f0f), 4)), 0x00ff00ff), 8)), 16)) if opts.lower_bitfield_reverse;
    // The highest set bit is one less than the count of bits once it is smeared down (-1 for 0);
    // negative values look for their highest clear bit. The lowest set bit is the count of the
    // zeros below it.
    ufind_msb(a@32) => iadd(bit_count(ior(ior(ior(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), ushr(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), 4)), ushr(ior(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), ushr(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), 4)), 8)), ushr(ior(ior(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), ushr(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), 4)), ushr(ior(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), ushr(ior(ior(a, ushr(a, 1)), ushr(ior(a, ushr(a, 1)), 2)), 4)), 8)), 16))), -1) if opts.lower_find_msb;
    ifind_msb(a@32) => ufind_msb(bcsel(ilt(a, 0), inot(a), a)) if opts.lower_find_msb;
    find_lsb(a@32) => bcsel(ieq(a, 0), -1, bit_count(iadd(iand(a, ineg(a)), -1))) if opts.lower_find_lsb;
}
