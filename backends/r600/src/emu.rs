//! The emulator of R600-family programs (being written).
