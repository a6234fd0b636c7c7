//! libFuzzer target: the SPIR-V reader on arbitrary bytes, checked by
//! `shrew_harness::fuzz_targets::spirv_reader`; mutations edit the module's instructions
//! (`shrew_fuzz::mutate_spirv`) more often than its bytes.

#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target};

fuzz_target!(|bytes: &[u8]| shrew_harness::fuzz_targets::spirv_reader(bytes));

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    shrew_fuzz::mutate_spirv(data, size, max_size, seed)
});
