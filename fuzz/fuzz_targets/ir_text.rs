//! The `.shrew` text parser on arbitrary text: `parse` must return a located error or a
//! shader. A shader that also passes the IR verifier must round-trip: its printed text parses
//! again, verifies, and prints the same. A panic, an abort, a stack overflow or a hang is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shrew_engine::text::{parse, print};
use shrew_engine::verify::verify;

fuzz_target!(|bytes: &[u8]| {
    let Ok(source) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(shader) = parse(source, "<fuzz>") else {
        return;
    };
    if verify(&shader).is_err() {
        return;
    }
    let text = print(&shader);
    let reparsed = parse(&text, "<printed>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    if let Err(errors) = verify(&reparsed) {
        panic!("the printed text fails the verifier: {}\n{text}", errors[0]);
    }
    assert_eq!(
        print(&reparsed),
        text,
        "the printed text does not round-trip"
    );
});
