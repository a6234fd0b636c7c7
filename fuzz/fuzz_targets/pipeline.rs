//! libFuzzer target: the whole compiler on SPIR-V bytes, every target, checked by
//! `shrew_harness::fuzz_targets::pipeline`; mutations edit the module's instructions
//! (`shrew_fuzz::mutate_spirv`).

#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use shrew_harness::fuzz_targets::{Compilers, pipeline};

thread_local! {
    /// The compilers, prepared once (libFuzzer runs the inputs on one thread).
    static COMPILERS: Compilers = Compilers::new();
}

fuzz_target!(|bytes: &[u8]| COMPILERS.with(|compilers| pipeline(bytes, compilers)));

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    shrew_fuzz::mutate_spirv(data, size, max_size, seed)
});
