//! The texture units' model (being written).
