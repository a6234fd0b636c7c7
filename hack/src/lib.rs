//! Deliberately empty: this crate exists for the features its dependencies declare (see its
//! `Cargo.toml`).
