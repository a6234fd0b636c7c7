//! The rule DSL proc macro. It reads the opcode table of `shrew-ops` at expansion time; the
//! DSL itself arrives with the rules issue, so this crate exports nothing yet.
