//! Binary encoding of [`crate::program::Program`] and its decoder (being written).
