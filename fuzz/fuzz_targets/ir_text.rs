//! libFuzzer target: the IR text parser on arbitrary bytes, checked by
//! `shrew_harness::fuzz_targets::ir_text`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| shrew_harness::fuzz_targets::ir_text(bytes));
