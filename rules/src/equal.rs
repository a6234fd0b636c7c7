//! Equalities: laws the e-graph applies in both directions, such as distributivity. Neither
//! direction is an improvement in itself (expanding `a * (b + c)` costs a multiplication), so
//! the greedy matcher, which commits to every rewrite it makes, never runs them; in the e-graph
//! both forms stay, and a later rule may find that one of them simplifies, as in
//! `a * (b + c) - a * c`, which becomes `a * b` only through the expanded form.
//!
//! Only exact laws belong here: integer arithmetic wraps, so distributivity holds at every size,
//! and so does the distributivity of the bitwise operations over each other.

shrew_rules_macro::rules! {
    /// Distributive laws, run only by the e-graph.
    pub static EQUAL;

    imul(a, iadd(b, c)) <=> iadd(imul(a, b), imul(a, c));
    imul(a, isub(b, c)) <=> isub(imul(a, b), imul(a, c));
    iand(a, ior(b, c)) <=> ior(iand(a, b), iand(a, c));
    ior(a, iand(b, c)) <=> iand(ior(a, b), ior(a, c));
}
