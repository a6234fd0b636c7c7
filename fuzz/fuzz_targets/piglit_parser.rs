//! The piglit `.shader_test` parser on arbitrary text (read as the harness reads files, invalid
//! UTF-8 replaced): `parse_shader_test` must return an error with its line or a test; the GLSL
//! of a test's stages (`stage_sources`) and the file line of each of their lines must come out
//! without a panic. A panic, an abort, a stack overflow or a hang is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shrew_frontend::shader_test::stage_sources;
use shrew_harness::parse_shader_test;

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let test = match parse_shader_test(&text) {
        Ok(test) => test,
        Err(error) => {
            let _ = (error.line(), error.to_string());
            return;
        }
    };
    let Ok(stages) = stage_sources(&test.sources) else {
        return;
    };
    for stage in &stages {
        for line in 1..=stage.source.lines().count() + 1 {
            let _ = stage.location("<fuzz>", line);
        }
    }
});
