//! Integration tests of shrew live in `tests/`; this library is empty.
