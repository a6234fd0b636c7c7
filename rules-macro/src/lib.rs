//! The rule DSL of shrew: algebraic rewrite rules, one per line, compiled into matcher code.
//!
//! ```text
//! shrew_rules_macro::rules! {
//!     /// Arithmetic identities.
//!     pub static ARITH;
//!
//!     iadd(a, 0) => a;
//!     ~fadd(a, 0.0) => a;
//!     fadd@32(fmul[is_used_once](a, b), c) => ffma(a, b, c) if opts.fuse_ffma32;
//!     ishl(a, #b[is_ult_32]) => imul(a, ishl(1, b));
//! }
//! ```
//!
//! An invocation declares one rule group (a `static` of type
//! `shrew_engine::rewrite::RuleGroup`) and lists its rules in priority order: on an
//! instruction, the first rule that matches wins. Rule sets are built from groups. Next to the
//! `static`, in the invoking module (one group per module: `rules/src/bitops.rs` holds
//! `BITOPS`), it expands a dispatcher per root opcode (`on_iand`), one function per rule, the
//! `egraph` module and the `verify` tests.
//!
//! A rule's function and test are named by its label, `#[name = label] search => ...;`, or
//! else by its root op and line (`ior_l42`, for the rule `shrew rules` lists at `bitops.rs:42`);
//! the rules one line expands to (the items of a `for`) take `_1`, `_2`, ... after it. So
//! `cargo test -p shrew-rules bitops::verify::ior_l42` runs one rule's test, and
//! `shrew rules --test bitops.rs:42` verifies it without building the tests.
//!
//! The same rules run in the e-graph (`shrew_engine::egraph`): the module's `egraph` submodule
//! holds a `search_<rule>` function (nested loops over the nodes of the e-classes the pattern
//! walks, reporting every match) and an `apply_<rule>` function (building the replacement) per
//! rule, except rules with conditions on matched operations: those look at uses, which an
//! e-graph does not have, so only the greedy matcher runs them.
//!
//! A dispatcher reads once what feeds the root's sources and tries a rule only when the root's
//! size, its repeated sources and the opcodes and constants two levels down allow a match. A
//! rule function backtracks over the operand orders of its commutative ops with nested loops,
//! so a mismatch near the root is not tried again for every order below it.
//!
//! # A rule
//! `search => replacement [if guard];`
//!
//! An *equality* `a <=> b [if guard];` is two rules, `a => b` and `b => a`, that only the
//! e-graph runs: laws such as distributivity, where neither direction is better in itself but
//! one may lead to a simplification (the greedy matcher would undo each with the other). Each
//! side is both a search and a replacement, so neither may carry search-only or
//! replacement-only markers, and both must be ops.
//!
//! * **Ops**: `fadd(x, y)` — an ALU opcode of the opcode table with exactly its number of
//!   sources (at most 4 in a search), or a width-generic conversion (`f2f`, `f2i`, `f2u`, `i2f`,
//!   `u2f`, `i2i`, `u2u`, `b2f`, `b2i`) that matches every size of the family and, in a
//!   replacement, builds the member of the inferred size.
//!   * `op@32(...)`: the destination has 32 bits (in a search: checked; in a replacement: built).
//!   * `~op(...)` (search only): the rule is inexact. It may round differently and may change
//!     NaN, infinity and signed-zero results; it never touches an `exact` instruction nor one whose
//!     float controls preserve those.
//!   * `!op(...)` (replacement only): the built instruction is `exact`.
//!   * `op[cond, ...](...)` (search only): conditions on the matched instruction, functions
//!     `fn(&Ctx, Value) -> bool` of `shrew_engine::rewrite::conds` (or any path), e.g.
//!     `is_used_once`; and the flags `nsz`, `nnan`, `ninf` (the rule does not preserve signed zeros,
//!     NaNs, infinities: instructions that must preserve them block it), and `many_comm` (allow
//!     more commutative operand orders than the default cap).
//! * **Variables**: any other identifier. A repeated variable is the same value read through the
//!   same swizzle.
//!   * `#a` (search only): only constants match.
//!   * `a@16`: the value has 16 bits. `a@float`, `a@int`, `a@uint`, `a@bool`, `a@float32`…
//!     (search only): the value is produced by an instruction of that base type.
//!   * `a[cond, ...]` (search only): conditions on the variable, functions `fn(&Ctx, &Src) -> bool`
//!     of `shrew_engine::rewrite::conds` (or any path), e.g. `is_not_const`,
//!     `is_pos_power_of_two`, `is_gt_zero`.
//!   * `a.yx` (replacement only): reads the bound value through a further swizzle.
//! * **Constants**: integers (`0`, `-1`, `0xff`; compared masked to the value's size), floats
//!   (`0.5`, `-0.0`, `INF`, `-INF`, `NAN`; never match values narrower than 16 bits), booleans
//!   (`true`, `false`), each optionally with a size (`1.0@32`).
//! * **Replacement**: an op tree, a bare variable, or a bare constant. Vector constructors
//!   (`vec2(a.x, b.y)`) and swizzles build vectors.
//! * **Guard**: `if <expr>` — a Rust boolean expression over `opts`, the target's
//!   `&shrew_engine::rewrite::TargetOptions`, evaluated once per pass run.
//! * **Label**: `#[name = label]` before a rule names its function and test (`label` an
//!   identifier, unique in the group).
//! * **Wrong on purpose**: `#[wrong]` before a rule inverts its generated test, which then
//!   asserts that the verification rejects the rule: for tests of the tools that find wrong
//!   rules (`shrew bisect`), never in a rule set a pipeline runs.
//!
//! # Checks at expansion time
//! Every error points at the offending token, and all errors of an invocation are reported:
//! unknown ops, wrong arity, unbound replacement variables, `#`/conditions/`~` in a replacement,
//! `!`/swizzles in a search, bit-size conflicts, replacements whose bit size the search does not
//! determine, more commutative ops than the cap, rules whose replacement is their search, rules
//! that an earlier, unconditional rule of the group always pre-empts, and a label used twice.
//! Rules pre-empted by a rule of an earlier group of their set are found at run time
//! (`shrew_engine::rewrite::shadow`; the rule crates test their sets with it).
//!
//! Bit sizes are inferred by unification over classes (as in NIR's algebraic validator): every
//! unsized operand of an op shares the op's class; a variable has one class everywhere; sized
//! operands pin their class. The search may unify freely; the replacement may not unify two classes
//! the search kept apart, nor pin a class the search left free, and every replacement node's size
//! must be fixed or come from the search.

mod ast;
mod check;
mod codegen;
mod egraph;
mod infer;

use proc_macro::TokenStream;

/// Compiles a group of rewrite rules. See the crate documentation for the language.
#[proc_macro]
pub fn rules(input: TokenStream) -> TokenStream {
    match ast::parse_group(input.into()) {
        Ok(group) => codegen::expand(group).into(),
        Err(err) => err.to_compile_error().into(),
    }
}
