//! libFuzzer target: the piglit `.shader_test` parser on arbitrary bytes, checked by
//! `shrew_harness::fuzz_targets::piglit_parser`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| shrew_harness::fuzz_targets::piglit_parser(bytes));
