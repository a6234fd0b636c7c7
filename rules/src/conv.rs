//! Conversions, packing and unpacking: conversions to the value's own size, chains of
//! conversions where the inner one is exact (a widening, or a narrowing the outer one narrows
//! further), integer → float → integer round trips that cannot round or saturate, booleans
//! converted on, `f2b1`/`i2b1` as comparisons with zero, and pack/unpack pairs that cancel.
//!
//! Float → integer conversions saturate (and send NaN to 0), so a round trip is only removed when
//! the intermediate float holds every value exactly and the destination holds every source value.

shrew_rules_macro::rules! {
    /// Conversions and pack/unpack.
    pub static CONV;

    // ---- Conversions to the same size ---------------------------------------------------------
    for (OP, N) in [(f2f16, 16), (f2f32, 32), (f2f64, 64), (i2i8, 8), (i2i16, 16), (i2i32, 32),
                    (i2i64, 64), (u2u8, 8), (u2u16, 16), (u2u32, 32), (u2u64, 64)] {
        OP(a@N) => a;
    }
    f2f16_rtne(a) => f2f16(a);

    // ---- Chains ---------------------------------------------------------------------------------
    // A widening conversion is exact: what follows sees the original value.
    for (F, N) in [(f2f32, 16), (f2f64, 16), (f2f64, 32)] {
        f2f(F(a@N)) => f2f(a);
    }
    for (SEXT, ZEXT, N) in [(i2i16, u2u16, 8), (i2i32, u2u32, 8), (i2i64, u2u64, 8),
                            (i2i32, u2u32, 16), (i2i64, u2u64, 16), (i2i64, u2u64, 32)] {
        i2i(SEXT(a@N)) => i2i(a);
        u2u(ZEXT(a@N)) => u2u(a);
        i2f(SEXT(a@N)) => i2f(a);
        u2f(ZEXT(a@N)) => u2f(a);
        i2f(ZEXT(a@N)) => u2f(a);
    }
    // Narrowing to X bits only looks at the low X bits of the inner conversion's result.
    for (X, Y) in [(i2i8, i2i16), (i2i8, i2i32), (i2i8, i2i64), (i2i16, i2i32), (i2i16, i2i64),
                   (i2i32, i2i64)] {
        X(Y(a)) => X(a);
    }
    for (X, Y) in [(u2u8, u2u16), (u2u8, u2u32), (u2u8, u2u64), (u2u16, u2u32), (u2u16, u2u64),
                   (u2u32, u2u64)] {
        X(Y(a)) => X(a);
    }
    for (X, Y, S) in [(u2u8, i2i16, i2i8), (u2u8, i2i32, i2i8), (u2u8, i2i64, i2i8),
                      (u2u16, i2i32, i2i16), (u2u16, i2i64, i2i16), (u2u32, i2i64, i2i32)] {
        X(Y(a)) => S(a);
    }
    for (X, Y, U) in [(i2i8, u2u16, u2u8), (i2i8, u2u32, u2u8), (i2i8, u2u64, u2u8),
                      (i2i16, u2u32, u2u16), (i2i16, u2u64, u2u16), (i2i32, u2u64, u2u32)] {
        X(Y(a)) => U(a);
    }
    iand(u2u(a@8), 0xff) => u2u(a);
    iand(u2u(a@16), 0xffff) => u2u(a);
    iand(u2u(a@32), 0xffffffff) => u2u(a);

    // ---- Integer → float → integer --------------------------------------------------------------
    // f16 holds every 8-bit integer, f32 every 16-bit one, f64 every 32-bit one.
    for I2F in [i2f16, i2f32, i2f64] {
        f2i8(I2F(a@8)) => a;
        f2i16(I2F(a@8)) => i2i16(a);
        f2i32(I2F(a@8)) => i2i32(a);
        f2i64(I2F(a@8)) => i2i64(a);
    }
    for I2F in [i2f32, i2f64] {
        f2i16(I2F(a@16)) => a;
        f2i32(I2F(a@16)) => i2i32(a);
        f2i64(I2F(a@16)) => i2i64(a);
    }
    f2i32(i2f64(a@32)) => a;
    f2i64(i2f64(a@32)) => i2i64(a);
    for U2F in [u2f16, u2f32, u2f64] {
        f2u8(U2F(a@8)) => a;
        f2u16(U2F(a@8)) => u2u16(a);
        f2u32(U2F(a@8)) => u2u32(a);
        f2u64(U2F(a@8)) => u2u64(a);
    }
    for U2F in [u2f32, u2f64] {
        f2u16(U2F(a@16)) => a;
        f2u32(U2F(a@16)) => u2u32(a);
        f2u64(U2F(a@16)) => u2u64(a);
    }
    f2u32(u2f64(a@32)) => a;
    f2u64(u2f64(a@32)) => u2u64(a);
    f2i(ftrunc(a)) => f2i(a);
    f2u(ftrunc(a)) => f2u(a);

    // ---- Booleans -------------------------------------------------------------------------------
    i2i(b2i(a)) => b2i(a);
    u2u(b2i(a)) => b2i(a);
    i2f(b2i(a)) => b2f(a);
    u2f(b2i(a)) => b2f(a);
    f2f(b2f(a)) => b2f(a);
    f2i(b2f(a)) => b2i(a);
    f2u(b2f(a)) => b2i(a);
    u2u(a@1) => b2i(a);
    i2i(a@1) => ineg(b2i(a));
    u2f(a@1) => b2f(a);
    f2b1(b2f(a)) => a;
    i2b1(b2i(a)) => a;
    i2b1(a@1) => a;
    f2b1(a) => fneu(a, 0.0);
    i2b1(a) => ine(a, 0);

    // ---- Float precision ------------------------------------------------------------------------
    fquantize2f16(fquantize2f16(a)) => fquantize2f16(a);

    // ---- Pack / unpack --------------------------------------------------------------------------
    unpack_64_2x32(pack_64_2x32(a)) => a;
    pack_64_2x32(unpack_64_2x32(a)) => a;
    unpack_32_2x16(pack_32_2x16(a)) => a;
    pack_32_2x16(unpack_32_2x16(a)) => a;
    // unorm fields survive the float round trip (the float is within 2^-16 of the field).
    pack_unorm_4x8(unpack_unorm_4x8(a)) => a;
    pack_unorm_2x16(unpack_unorm_2x16(a)) => a;
}
