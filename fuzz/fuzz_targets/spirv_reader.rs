//! The SPIR-V reader on arbitrary bytes: `translate_bytes` must return a located error or a
//! shader; a shader must pass the IR verifier and print as `.shrew` text that parses back to
//! the same text. A panic, an abort, a stack overflow or a hang is a bug. Mutations edit
//! the module's instructions (`shrew_fuzz::mutate_spirv`) more often than its bytes.

#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use shrew_engine::text::{parse, print};
use shrew_frontend::spirv::{Options, translate_bytes};

fuzz_target!(|bytes: &[u8]| {
    let Ok(shader) = translate_bytes(bytes, &Options::default()) else {
        return;
    };
    if let Err(errors) = shrew_engine::verify::verify(&shader) {
        panic!(
            "the reader returned IR that fails the verifier: {}",
            errors[0]
        );
    }
    let text = print(&shader);
    let reparsed = parse(&text, "<printed>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        print(&reparsed),
        text,
        "the printed text does not round-trip"
    );
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    shrew_fuzz::mutate_spirv(data, size, max_size, seed)
});
