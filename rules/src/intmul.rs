//! Integer multiplication, division and remainder: by 0, 1 and −1, by powers of two (shifts and
//! masks), negations moved onto constants, constant factors merged across shifts and
//! distributed over constant additions, and the high half of multiplications by 0 and 1.
//!
//! Division and remainder by zero give 0 (the opcode table's choice), and `INT_MIN / -1` wraps
//! to `INT_MIN`, which `ineg` does too.

shrew_rules_macro::rules! {
    /// Integer multiply, divide and modulo by constants.
    pub static INTMUL;

    // ---- imul -------------------------------------------------------------------------------
    imul(a, 0) => 0;
    imul(a, 1) => a;
    imul(a, -1) => ineg(a);
    imul(a, #b[is_pos_power_of_two]) => ishl(a, find_lsb(b));
    // The lowest set bit of -2^k is bit k.
    imul(a, #b[is_neg_power_of_two]) => ineg(ishl(a, find_lsb(b)));
    imul(ineg(a), ineg(b)) => imul(a, b);
    imul(ineg(a[is_not_const]), #b) => imul(a, ineg(b));
    ineg(imul(a[is_not_const], #b)) => imul(a, ineg(b));
    // a * 2^b * c: one multiplication by a folded constant.
    imul(ishl(a[is_not_const], #b), #c) => imul(a, ishl(c, b));
    ishl(imul(a[is_not_const], #b), #c) => imul(a, ishl(b, c));
    // (a + b) * c = a * c + b * c with b * c folded: exact in wrapping arithmetic.
    imul(iadd[is_used_once](a[is_not_const], #b), #c) => iadd(imul(a, c), imul(b, c));
    ishl(iadd[is_used_once](a[is_not_const], #b), #c) => iadd(ishl(a, c), ishl(b, c));

    // ---- udiv / idiv ------------------------------------------------------------------------
    udiv(a, 1) => a;
    idiv(a, 1) => a;
    idiv(a, -1) => ineg(a);
    udiv(a, 0) => 0;
    idiv(a, 0) => 0;
    udiv(0, a) => 0;
    idiv(0, a) => 0;
    udiv(a, #b[is_pos_power_of_two]) => ushr(a, find_lsb(b));
    // Signed division by 2^k rounds toward zero: bias a negative dividend by 2^k - 1 before
    // the arithmetic shift. `is_pos_power_of_two` reads the constant as signed, so it is never
    // INT_MIN; -2^k divides like 2^k and negates.
    for (N, M) in [(8, 7), (16, 15), (32, 31), (64, 63)] {
        idiv@N(a, #b[is_pos_power_of_two])
            => ishr(iadd(a, iand(ishr(a, M), iadd(b, -1))), find_lsb(b));
        idiv@N(a, #b[is_neg_power_of_two])
            => ineg(ishr(iadd(a, iand(ishr(a, M), inot(b))), find_lsb(b)));
        irem@N(a, #b[is_pos_power_of_two])
            => isub(a, iand(iadd(a, iand(ishr(a, M), iadd(b, -1))), ineg(b)));
        irem@N(a, #b[is_neg_power_of_two])
            => isub(a, iand(iadd(a, iand(ishr(a, M), inot(b))), b));
    }

    // ---- umod / imod / irem -----------------------------------------------------------------
    umod(a, 0) => 0;
    imod(a, 0) => 0;
    irem(a, 0) => 0;
    umod(a, 1) => 0;
    imod(a, 1) => 0;
    irem(a, 1) => 0;
    imod(a, -1) => 0;
    irem(a, -1) => 0;
    umod(0, a) => 0;
    imod(0, a) => 0;
    irem(0, a) => 0;
    umod(a, a) => 0;
    imod(a, a) => 0;
    irem(a, a) => 0;
    umod(a, #b[is_pos_power_of_two]) => iand(a, iadd(b, -1));
    // A positive divisor gives a result in [0, b); a negative one a result in (b, 0].
    imod(a, #b[is_pos_power_of_two]) => iand(a, iadd(b, -1));
    imod(a, #b[is_neg_power_of_two]) => bcsel(ieq(iand(a, inot(b)), 0), 0, iadd(iand(a, inot(b)), b));
    umod(umod(a, b), b) => umod(a, b);
    imod(imod(a, b), b) => imod(a, b);
    irem(irem(a, b), b) => irem(a, b);

    // ---- High halves ------------------------------------------------------------------------
    umul_high(a, 0) => 0;
    imul_high(a, 0) => 0;
    umul_high(a, 1) => 0;
    // a * 1 fits in the low half: the high half is the sign extension.
    for (N, M) in [(8, 7), (16, 15), (32, 31), (64, 63)] {
        imul_high@N(a, 1) => ishr(a, M);
    }
}
