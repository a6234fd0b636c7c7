//! The shrew engine.
