//! Bit operations and shifts: `iand`/`ior`/`ixor`/`inot` identities (absorption, De Morgan,
//! distributivity), shifts and rotates by zero or of zero, shift counts masked to the bit size
//! (the opcodes take the count modulo the size already), shift pairs that only clear bits,
//! bitwise operations of equally shifted values, rotate recognition, and bit-counting and bitfield
//! identities.
//!
//! The `iand`/`ior`/`ixor`/`inot` rules hold at every bit size, so they are also the boolean
//! identities for 1-bit values.

shrew_rules_macro::rules! {
    /// Bit operations and shifts.
    pub static BITOPS;

    // ---- Constants and self-application -------------------------------------------------------
    iand(a, 0) => 0;
    iand(a, -1) => a;
    iand(a, a) => a;
    ior(a, 0) => a;
    ior(a, -1) => -1;
    ior(a, a) => a;
    ixor(a, 0) => a;
    ixor(a, -1) => inot(a);
    ixor(a, a) => 0;
    inot(inot(a)) => a;
    iand(a, inot(a)) => 0;
    ior(a, inot(a)) => -1;
    ixor(a, inot(a)) => -1;

    // ---- Absorption, De Morgan, distributivity ------------------------------------------------
    iand(a, iand(a, b)) => iand(a, b);
    ior(a, ior(a, b)) => ior(a, b);
    ixor(a, ixor(a, b)) => b;
    iand(a, ior(a, b)) => a;
    ior(a, iand(a, b)) => a;
    iand(a, ior(inot(a), b)) => iand(a, b);
    ior(a, iand(inot(a), b)) => ior(a, b);
    iand(inot(a), inot(b)) => inot(ior(a, b));
    ior(inot(a), inot(b)) => inot(iand(a, b));
    ixor(inot(a), inot(b)) => ixor(a, b);
    ixor(inot(a[is_not_const]), #b) => ixor(a, inot(b));
    inot(ixor(a[is_not_const], #b)) => ixor(a, inot(b));
    ior(iand(a, b), iand(a, inot(b))) => a;
    iand(ior(a, b), ior(a, c)) => ior(a, iand(b, c));
    ior(iand(a, b), iand(a, c)) => iand(a, ior(b, c));
    ixor(iand(a, b), iand(a, c)) => iand(a, ixor(b, c));
    ior(ixor(a, b), iand(a, b)) => ior(a, b);
    ixor(ior(a, b), iand(a, b)) => ixor(a, b);
    // a + b = (a ^ b) + 2 (a & b) = (a | b) + (a & b).
    iadd(ixor(a, b), iand(a, b)) => ior(a, b);
    iadd(iand(a, b), ior(a, b)) => iadd(a, b);
    isub(ior(a, b), iand(a, b)) => ixor(a, b);
    // ~a = -a - 1.
    inot(ineg(a)) => iadd(a, -1);
    ineg(inot(a)) => iadd(a, 1);
    inot(iadd(a, -1)) => ineg(a);
    iadd(inot(a), 1) => ineg(a);

    // ---- Shifts and rotates -------------------------------------------------------------------
    for OP in [ishl, ishr, ushr, urol, uror] {
        OP(a, 0) => a;
        OP(0, a) => 0;
    }
    ishr(-1, a) => -1;
    urol(-1, a) => -1;
    uror(-1, a) => -1;
    // A 1-bit shift count is always 0 modulo the size.
    for OP in [ishl, ishr, ushr, urol, uror] {
        OP@1(a, b) => a;
    }
    // Shift counts are taken modulo the bit size: masking them first changes nothing.
    for (N, M) in [(8, 7), (16, 15), (32, 31), (64, 63)] {
        for OP in [ishl, ishr, ushr, urol, uror] {
            OP@N(a, iand(b, M)) => OP(a, b);
        }
    }
    // Shifting out and back in clears the bits that fell off.
    ushr(ishl(a, #b), #b) => iand(a, ushr(-1, b));
    ishl(ushr(a, #b), #b) => iand(a, ishl(-1, b));
    ishl(ishr(a, #b), #b) => iand(a, ishl(-1, b));
    // Bitwise operations of values shifted by the same amount.
    for SH in [ishl, ishr, ushr] {
        for OP in [iand, ior, ixor] {
            OP(SH[is_used_once](a, c), SH[is_used_once](b, c)) => SH(OP(a, b), c);
        }
    }
    // Rotates: -b is N - b modulo any power-of-two size N.
    urol(a, ineg(b)) => uror(a, b);
    uror(a, ineg(b)) => urol(a, b);
    ior(ishl(a, b), ushr(a, ineg(b))) => urol(a, b) if !opts.lower_rotate;
    ior(ushr(a, b), ishl(a, ineg(b))) => uror(a, b) if !opts.lower_rotate;
    for N in [8, 16, 32, 64] {
        ior(ishl(a@N, b), ushr(a, isub(N, b))) => urol(a, b) if !opts.lower_rotate;
        ior(ushr(a@N, b), ishl(a, isub(N, b))) => uror(a, b) if !opts.lower_rotate;
    }

    // ---- Bit counting -------------------------------------------------------------------------
    bitfield_reverse(bitfield_reverse(a)) => a;
    bit_count(bitfield_reverse(a)) => bit_count(a);
    find_lsb(ineg(a)) => find_lsb(a);
    find_lsb(iand(a, ineg(a))) => find_lsb(a);
    ifind_msb(inot(a)) => ifind_msb(a);

    // ---- Bitfields ----------------------------------------------------------------------------
    ubitfield_extract(a, b, 0) => 0;
    ibitfield_extract(a, b, 0) => 0;
    bitfield_insert(a, b, c, 0) => a;
    for N in [1, 8, 16, 32, 64] {
        ubitfield_extract@N(a, 0, N) => a;
        ibitfield_extract@N(a, 0, N) => a;
        bitfield_insert@N(a, b, 0, N) => b;
    }
    // (a >> b) & (2^k - 1) with b < 32 is the k-bit field at b (a wider mask is cut at the top
    // of the value, as the extract's count is).
    iand(ushr(a@32, #b[is_ult_32]), #c[is_const_bitmask]) => ubitfield_extract(a, b, bit_count(c)) if !opts.lower_bitfield_extract;
}
