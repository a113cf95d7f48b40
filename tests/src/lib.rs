//! Integration tests of cdpc live in tests/; this crate has no library code.
