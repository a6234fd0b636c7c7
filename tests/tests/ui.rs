//! Compile-time errors of the rule DSL: every file in `tests/ui/` is a rule group with mistakes,
//! and its `.stderr` is what the macro must say, pointing at the offending tokens.
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p shrew-tests --test ui`.

#[test]
fn rule_dsl_errors() {
    trybuild::TestCases::new().compile_fail("ui/*.rs");
}
