//! Runs the `shrew` binary the way a user does: on the shipped examples and on bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn shrew(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shrew"))
        .args(args)
        .output()
        .expect("cannot start shrew")
}

fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// Writes `text` to a fresh temporary file and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shrew-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A failure the user caused: exit status 1 (a panic would be 101).
fn assert_user_error(out: &Output) {
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(out));
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
}

#[test]
fn examples_verify_and_format_idempotently() {
    for example in [
        "examples/lighting.shrew",
        "examples/shared_rotate.shrew",
        "examples/texel_fetch.shrew",
        "examples/algebraic.shrew",
    ] {
        let path = repo_path(example);
        let out = shrew(&["verify", path.to_str().unwrap()]);
        assert!(out.status.success(), "{example}: {}", stderr(&out));
        let once = stdout(&shrew(&["fmt", path.to_str().unwrap()]));
        assert!(once.contains("entry fn main()"), "{once}");
        let copy = temp_file("formatted.shrew", &once);
        let twice = stdout(&shrew(&["fmt", copy.to_str().unwrap()]));
        assert_eq!(once, twice, "fmt is not idempotent on {example}");
    }
}

#[test]
fn parse_errors_are_located() {
    let path = temp_file(
        "bad_syntax.shrew",
        "shader fragment\nentry fn main() {\nb0:\n    32 %0 = fadd %1\n}\n",
    );
    let out = shrew(&["verify", path.to_str().unwrap()]);
    assert_user_error(&out);
    let err = stderr(&out);
    assert!(err.contains("bad_syntax.shrew:4:"), "{err}");
}

#[test]
fn verifier_errors_name_the_instruction() {
    // Well-formed text, but fadd mixes a 32-bit and a 16-bit source.
    let text = "shader fragment\nentry fn main() {\nb0:\n    32 %0 = load_const (1.0)\n    16 %1 = load_const (2.0)\n    32 %2 = fadd %0, %1\n    return\n}\n";
    let path = temp_file("bad_sizes.shrew", text);
    let out = shrew(&["verify", path.to_str().unwrap()]);
    assert_user_error(&out);
    let err = stderr(&out);
    assert!(err.contains("%2") && err.contains("fadd"), "{err}");
}

#[test]
fn missing_file_and_garbage_are_errors_not_panics() {
    assert_user_error(&shrew(&["verify", "/nonexistent/shader.shrew"]));
    // Malformed input that gets past the lexer's first characters: a valid header, then
    // truncated and scrambled instructions, each reaching a different part of the parser.
    let valid = std::fs::read_to_string(repo_path("examples/lighting.shrew")).unwrap();
    let mut broken = vec![
        "\u{1F980} %%% {{{ shader ))) 0x 1e99999 @\n\t\0".to_string(),
        valid.replace("fdot2 %1, %1", "fdot2 %1"),
        valid.replace(
            "32x2 %1 = load_deref %0",
            "32x2 %1 = load_deref %0 (access=bogus)",
        ),
        valid.replace("branch %6, b1, b2", "branch %6, b1, b99"),
        valid.replace("phi b1: %7, b2: %8", "phi b1: %7, b2:"),
        valid.replace("0.25", "0.25e999999"),
        valid.replace("vec4 %14", "vec4 %99999999999"),
    ];
    for cut in (0..valid.len()).step_by(97) {
        broken.push(valid[..cut].to_string());
    }
    for (i, text) in broken.iter().enumerate() {
        let path = temp_file(&format!("broken{i}.shrew"), text);
        for command in ["fmt", "verify", "run", "opt"] {
            let out = shrew(&[command, path.to_str().unwrap()]);
            assert_user_error(&out);
            assert!(
                stderr(&out).contains(&format!("broken{i}.shrew")),
                "{command} {i}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn run_prints_fragment_outputs_per_invocation() {
    let path = repo_path("examples/lighting.shrew");
    let out = shrew(&[
        "run",
        path.to_str().unwrap(),
        "--invocations",
        "4",
        "--input",
        "uv=0.1,0.2;0.9,0.2;0.1,0.8;0.9,0.8",
        "--uniform",
        "tint=1,0.5,0.25,1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // Invocation 0: |uv|² = 0.05 (a dot product rounded at f32 after each step) takes the
    // squaring branch, then three loop trips scale by 0.25: 0.05² / 64. Its quad's derivatives are d(uv.x)/dx = 0.8 and d(uv.y)/dy = 0.6,
    // scaled by the tint.
    assert!(
        text.contains("invocation 0\n    @color = 3.9062506e-5, 0.39999998, 0.15, 0.25\n"),
        "{text}"
    );
    assert_eq!(text.matches("invocation ").count(), 4, "{text}");
}

#[test]
fn run_reports_compute_buffers_as_json() {
    let path = repo_path("examples/shared_rotate.shrew");
    let out = shrew(&["run", path.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(json["buffers"]["result"], "1, 4, 9, 0");
    assert_eq!(json["invocations"].as_array().unwrap().len(), 4);
}

#[test]
fn run_rejects_bad_arguments_with_reasons() {
    let path = repo_path("examples/lighting.shrew");
    let file = path.to_str().unwrap();
    let wrong_mode = shrew(&["run", file, "--input", "tint=1"]);
    assert_user_error(&wrong_mode);
    assert!(
        stderr(&wrong_mode).contains("@tint is a uniform variable"),
        "{}",
        stderr(&wrong_mode)
    );
    let wrong_count = shrew(&["run", file, "--input", "uv=1,2,3"]);
    assert_user_error(&wrong_count);
    assert!(
        stderr(&wrong_count).contains("needs 2 components"),
        "{}",
        stderr(&wrong_count)
    );
    assert_user_error(&shrew(&["run", file, "--input", "nosuch=1"]));
    assert_user_error(&shrew(&[
        "run",
        file,
        "--invocations",
        "2",
        "--input",
        "uv=1;2;3",
    ]));
}

#[test]
fn run_takes_textures_from_a_resources_file() {
    let shader = repo_path("examples/texel_fetch.shrew");
    let resources = repo_path("examples/texel_fetch.resources.json");
    let out = shrew(&[
        "run",
        shader.to_str().unwrap(),
        "--resources",
        resources.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("@color = 1.0, 0.5, 0.25, 1.0"),
        "{}",
        stdout(&out)
    );
    let bad = temp_file("bad_resources.json", "{\"textures\": {\"0\": 5}}");
    let out = shrew(&[
        "run",
        shader.to_str().unwrap(),
        "--resources",
        bad.to_str().unwrap(),
    ]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("bad_resources.json: invalid type"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn eqsat_statistics_name_the_rules_applied_in_the_egraph() {
    let path = repo_path("tests/filetests/eqsat/store_forwarding.shrew");
    let file = path.to_str().unwrap();
    let out = shrew(&["opt", file, "--pipeline", "eqsat,dce", "--stats"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = stderr(&out);
    assert!(
        stats.contains("eqsat:built-in: 2 applications in the e-graph"),
        "{stats}"
    );
    assert!(
        stats.contains("2  memory  (loads of stored values"),
        "{stats}"
    );
}

#[test]
fn opt_simplifies_the_example_without_changing_its_results() {
    let path = repo_path("examples/algebraic.shrew");
    let file = path.to_str().unwrap();
    let out = shrew(&["opt", file, "--pipeline", "algebraic", "--stats"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let optimized = stdout(&out);
    for gone in ["imul", "fmul", "fmin", "fneu", "iadd"] {
        assert!(!optimized.contains(gone), "{gone} is left: {optimized}");
    }
    assert!(optimized.contains("fsat %1"), "{optimized}");
    assert_eq!(optimized.matches("bcsel").count(), 1, "{optimized}");
    // The statistics name every rule that fired, with its location, and the total.
    let stats = stderr(&out);
    assert!(stats.contains("algebraic: 8 rewrites"), "{stats}");
    assert!(
        stats.contains("1  bcsel(c, a, a) => a  (rules/src/fcmp.rs:"),
        "{stats}"
    );
    // The optimized text is valid IR and computes what the original computes.
    let copy = temp_file("optimized.shrew", &optimized);
    let run = |file: &str| {
        let out = shrew(&["run", file, "--input", "v=0.5,-2,3,0.25", "--input", "n=3"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        text.lines().nth(1).unwrap().to_string()
    };
    assert_eq!(run(file), "    @color = 24.5, 24.0, 25.0, 24.25");
    assert_eq!(run(copy.to_str().unwrap()), run(file));
}

#[test]
fn opt_rejects_unknown_passes() {
    let path = repo_path("examples/algebraic.shrew");
    let out = shrew(&["opt", path.to_str().unwrap(), "-p", "algebraic,nosuch"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("unknown pass `nosuch`"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("algebraic-late"), "{}", stderr(&out));
}

/// An empty pipeline and a `--print-after` pass that would print nothing are errors that say
/// what is valid.
#[test]
fn empty_pipelines_and_idle_print_after_are_errors() {
    let path = repo_path("examples/algebraic.shrew");
    let file = path.to_str().unwrap();
    for args in [
        &["opt", file, "-p", ""][..],
        &["compile", file, "--target", "gen9", "-p", " "],
        &["compile", file, "--target", "evergreen", "-p", ""],
    ] {
        let out = shrew(args);
        assert_user_error(&out);
        assert!(
            stderr(&out).contains("empty pipeline: `none` runs no passes"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = shrew(&["opt", file, "--print-after", "nosuchpass"]);
    assert_user_error(&out);
    let err = stderr(&out);
    assert!(
        err.contains("cannot print after `nosuchpass`: no such pass (known: ")
            && err.contains("algebraic-late"),
        "{err}"
    );
    let out = shrew(&["opt", file, "-p", "algebraic", "--print-after", "dce"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("cannot print after `dce`: the pipeline does not run it"),
        "{}",
        stderr(&out)
    );
}

/// Every command that reads a shader says which kinds of file it takes, `--stage` included.
#[test]
fn shader_commands_describe_the_files_they_take() {
    for command in ["fmt", "verify", "run", "opt", "compile"] {
        let help = stdout(&shrew(&[command, "--help"]));
        for kind in [
            "`.shrew` IR text",
            "SPIR-V (`.spv`)",
            "WGSL (`.wgsl`)",
            "`.vert` `.frag`",
            "`.glsl` with `--stage`",
            "piglit `.shader_test`",
            "--stage <STAGE>",
        ] {
            assert!(help.contains(kind), "{command}: {kind}: {help}");
        }
    }
    let help = stdout(&shrew(&["fmt", "--help"]));
    assert!(help.contains("(`.shrew` IR text files only)"), "{help}");
    let glsl = temp_file(
        "kept.frag",
        "#version 450
void main() {}
",
    );
    let out = shrew(&["fmt", glsl.to_str().unwrap(), "--write"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("--write rewrites .shrew IR text files only"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&glsl).unwrap(),
        "#version 450\nvoid main() {}\n"
    );
}

/// `piglit` names every target whose emulator it runs on; `corpus` describes itself, not
/// `piglit`.
#[test]
fn batch_commands_describe_their_targets() {
    let piglit = stdout(&shrew(&["piglit", "--help"]));
    for targets in [
        "(gen7, gen75, gen8, gen9)",
        "(r600, r700, evergreen, cayman)",
    ] {
        assert!(piglit.contains(targets), "{targets}: {piglit}");
    }
    assert!(piglit.contains("emulator"), "{piglit}");
    let corpus = stdout(&shrew(&["corpus", "--help"]));
    assert!(!corpus.contains("piglit"), "{corpus}");
    assert!(corpus.contains("Gen or R600 `--target`"), "{corpus}");
}

/// A `.glsl` file takes its stage from `--stage`, and without it the error names the option;
/// a file whose name says its stage must be of the `--stage` one; `--stage` picks a piglit
/// test's shader.
#[test]
fn stage_option_gives_the_stage_of_glsl_files() {
    let source =
        "#version 450\nlayout(location = 0) in vec4 p;\nvoid main() { gl_Position = p; }\n";
    let glsl = temp_file("position.glsl", source);
    let glsl = glsl.to_str().unwrap();
    let out = shrew(&["verify", glsl]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains(
            "position.glsl: a .glsl file does not say its stage: give it with --stage \
             vert|tesc|tese|geom|frag|comp"
        ),
        "{}",
        stderr(&out)
    );
    for args in [
        &["fmt", glsl, "--stage", "vert"][..],
        &["verify", glsl, "--stage", "vert"],
        &["run", glsl, "--stage", "vert"],
        &["opt", glsl, "--stage", "vert"],
        &["compile", glsl, "--stage", "vert", "--target", "gen9"],
    ] {
        let out = shrew(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let printed = stdout(&shrew(&["fmt", glsl, "--stage", "vert"]));
    assert!(printed.starts_with("shader vertex"), "{printed}");
    let vert = temp_file("position.vert", source);
    let out = shrew(&["verify", vert.to_str().unwrap(), "--stage", "frag"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("position.vert: a vertex shader, not a fragment one"),
        "{}",
        stderr(&out)
    );
    let test = temp_file(
        "stages.shader_test",
        "[require]\nGLSL >= 1.10\n\n[vertex shader]\nvoid main() { gl_Position = vec4(0.0); }\n\n\
         [fragment shader]\nvoid main() { gl_FragColor = vec4(1.0); }\n",
    );
    let test = test.to_str().unwrap();
    let printed = stdout(&shrew(&["fmt", test, "--stage", "vert"]));
    assert!(printed.starts_with("shader vertex"), "{printed}");
    let printed = stdout(&shrew(&["fmt", test]));
    assert!(printed.starts_with("shader fragment"), "{printed}");
}

/// glslang's messages name the user's file and line, not glslang's standard input: a GLSL
/// file's own lines, and a piglit test's lines in the test file.
#[test]
fn glslang_messages_are_located_in_the_file() {
    let frag = temp_file(
        "undeclared.frag",
        "#version 450\nlayout(location = 0) out vec4 c;\nvoid main() { c = vec4(x); }\n",
    );
    let test = temp_file(
        "undeclared.shader_test",
        "[require]\nGLSL >= 1.10\n\n[vertex shader passthrough]\n\n[fragment shader]\n\
         void main() {\n  gl_FragColor = vec4(y);\n}\n\n[test]\ndraw rect -1 -1 2 2\n",
    );
    for (path, message) in [
        (&frag, ":3: 'x' : undeclared identifier"),
        (&test, ":8: 'y' : undeclared identifier"),
    ] {
        let path = path.to_str().unwrap();
        let out = shrew(&["verify", path]);
        assert_user_error(&out);
        let err = stderr(&out);
        assert!(err.contains(&format!("ERROR: {path}{message}")), "{err}");
        assert!(!err.contains("stdin"), "{err}");
    }
}

/// `shrew passes` lines the descriptions up in one column, past the longest name.
#[test]
fn passes_are_listed_in_columns() {
    let out = shrew(&["passes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    assert!(lines.len() > 20, "{text}");
    let columns: Vec<usize> = lines
        .iter()
        .map(|line| {
            let name_end = line.find(' ').unwrap();
            name_end + line[name_end..].find(|c| c != ' ').unwrap()
        })
        .collect();
    assert!(columns.iter().all(|&c| c == columns[0]), "{text}");
    assert!(text.contains("outputs-to-temporaries  "), "{text}");
}

#[test]
fn rules_lists_every_rule_as_text_and_json() {
    let text = stdout(&shrew(&["rules"]));
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("# ")).collect();
    // The shared sets, then Gen's.
    assert_eq!(headers.len(), 3, "{headers:?}");
    assert!(headers[2].starts_with("# gen-algebraic"), "{headers:?}");
    let json = stdout(&shrew(&["rules", "--json"]));
    let entries: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(entries.len(), text.lines().count() - headers.len());
    assert!(entries.len() >= 400, "{}", entries.len());
    for entry in &entries {
        let text = entry["text"].as_str().unwrap();
        assert!(text.contains("=>"), "{entry}");
        let location = entry["location"].as_str().unwrap();
        assert!(
            location.starts_with("rules/src/") || location.starts_with("backends/gen/src/"),
            "{entry}"
        );
        assert!(location.rsplit(':').next().unwrap().parse::<u32>().is_ok());
        // Each rule names its generated test, found by the rule's line unless it has a label.
        let (file, line) = location.rsplit_once(':').unwrap();
        let module = file.rsplit('/').next().unwrap().trim_end_matches(".rs");
        let test = entry["test"].as_str().unwrap();
        assert!(test.starts_with(&format!("{module}::verify::")), "{entry}");
        assert!(test.contains(&format!("_l{line}")), "{entry}");
    }
    let late = stdout(&shrew(&["rules", "--set", "algebraic-late", "--json"]));
    assert!(
        late.lines()
            .all(|l| l.contains(r#""set":"algebraic-late""#))
    );
    assert!(late.contains(r#""guard":"opts.lower_fsub""#), "{late}");
    let unknown = shrew(&["rules", "--set", "nosuch"]);
    assert_user_error(&unknown);
    assert!(
        stderr(&unknown).contains("algebraic, algebraic-late, gen-algebraic"),
        "the error lists the sets: {}",
        stderr(&unknown)
    );
}

#[test]
fn rules_test_verifies_the_rules_a_pattern_selects() {
    let out = shrew(&["rules", "--test", "bitops::verify::iand_l"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().collect();
    assert!(lines.len() > 5, "{lines:?}");
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("ok      shrew_rules bitops::verify::iand_l")),
        "{lines:?}"
    );
    assert_eq!(
        *lines.last().unwrap(),
        format!("{} rules verified, 0 failed", lines.len() - 1)
    );
    // By `file:line`: the line `shrew rules` prints.
    let listing = stdout(&shrew(&["rules", "--set", "algebraic"]));
    let location = listing
        .lines()
        .find(|l| l.contains(" ineg(ineg(a)) => a "))
        .and_then(|l| l.split('(').nth(3))
        .and_then(|l| l.split(',').next())
        .expect("the listing has `ineg(ineg(a)) => a` with its location");
    let one = stdout(&shrew(&["rules", "--test", location]));
    assert!(one.contains("ineg_l"), "{one}");
    assert!(one.ends_with("1 rules verified, 0 failed\n"), "{one}");
    assert_user_error(&shrew(&["rules", "--test", "no rule has this"]));
}

#[test]
fn compile_prints_gen_assembly_and_statistics() {
    let example = repo_path("examples/lighting.shrew");
    let out = shrew(&[
        "compile",
        example.to_str().unwrap(),
        "--target",
        "gen9",
        "--asm",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("SIMD8 shader: "),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("EOT"), "{}", stdout(&out));
    let out = shrew(&[
        "compile",
        example.to_str().unwrap(),
        "--target",
        "gen8",
        "--simd",
        "16",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(stats["instructions"].as_u64().unwrap() > 0, "{stats}");
}

/// `compile` and `disasm` take exactly the targets that have a backend: their help lists
/// those, and any other is refused with the list.
#[test]
fn compile_and_disasm_take_only_backend_targets() {
    let backends = "gen7, gen75, gen8, gen9, r600, r700, evergreen, cayman";
    for command in ["compile", "disasm"] {
        let help = stdout(&shrew(&[command, "-h"]));
        assert!(
            help.contains(&format!("[possible values: {backends}]")),
            "{help}"
        );
        let out = shrew(&[command, "x", "--target", "generic"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("invalid value 'generic'")
                && err.contains(&format!("[possible values: {backends}]")),
            "{err}"
        );
    }
}

/// The README's command table gives `compile` and `disasm` the targets they take.
#[test]
fn readme_lists_the_targets_of_compile_and_disasm() {
    let readme = std::fs::read_to_string(repo_path("README.md")).unwrap();
    for command in ["compile", "disasm"] {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `shrew {command} ")))
            .unwrap_or_else(|| panic!("no README row for {command}"));
        let targets = row.split("--target ").nth(1).unwrap();
        let targets = targets
            .split([' ', '`'])
            .next()
            .unwrap()
            .replace("\\|", ", ");
        let help = stdout(&shrew(&[command, "-h"]));
        assert!(
            help.contains(&format!("[possible values: {targets}]")),
            "README: {targets}; help: {help}"
        );
    }
}

/// The binary `--binary` writes disassembles to the assembly `--asm` prints; a truncated one
/// gets a clear error.
#[test]
fn compiled_binaries_disassemble_to_their_assembly() {
    let example = repo_path("examples/lighting.shrew");
    let binary = temp_file("lighting.bin", "");
    for target in ["gen7", "gen9"] {
        let out = shrew(&[
            "compile",
            example.to_str().unwrap(),
            "--target",
            target,
            "--simd",
            "16",
            "--asm",
            "--binary",
            binary.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let listing = shrew(&["disasm", binary.to_str().unwrap(), "--target", target]);
        assert!(listing.status.success(), "{}", stderr(&listing));
        let compiled = stdout(&out);
        let (_statistics, compiled_listing) = compiled.split_once('\n').unwrap();
        assert_eq!(stdout(&listing), compiled_listing, "{target}");
    }
    let bytes = std::fs::read(&binary).unwrap();
    std::fs::write(&binary, &bytes[..bytes.len() - 3]).unwrap();
    let out = shrew(&["disasm", binary.to_str().unwrap(), "--target", "gen9"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("not a whole number of 16-byte instructions"),
        "{}",
        stderr(&out)
    );
}

/// An R600 binary's file carries the GPRs and stack size beside its dwords: `disasm` prints the
/// figures `compile` reports, in the listing `compile --asm` prints; another chip's binary or
/// bare dwords get clear errors.
#[test]
fn r600_binaries_disassemble_with_their_gprs_and_stack() {
    let binary = temp_file("r600.bin", "");
    let binary = binary.to_str().unwrap();
    for shader in [
        "examples/lighting.shrew",
        "tests/ir/control_flow.shrew",
        "tests/ir/loops_and_returns.shrew",
        "tests/ir/vertex_outputs.shrew",
    ] {
        let path = repo_path(shader);
        for target in ["r600", "evergreen", "cayman"] {
            let args = ["compile", path.to_str().unwrap(), "--target", target];
            let out = shrew(&[&args[..], &["--asm", "--binary", binary]].concat());
            assert!(out.status.success(), "{shader} {target}: {}", stderr(&out));
            let listing = shrew(&["disasm", binary, "--target", target]);
            assert!(listing.status.success(), "{}", stderr(&listing));
            let compiled = stdout(&out);
            let (statistics, compiled_listing) = compiled.split_once('\n').unwrap();
            assert!(statistics.starts_with("shader: "), "{statistics}");
            assert_eq!(stdout(&listing), compiled_listing, "{shader} {target}");
            let stats: serde_json::Value =
                serde_json::from_str(&stdout(&shrew(&[&args[..], &["--json"]].concat()))).unwrap();
            let header = format!("-- {} gprs -- {} nstack --", stats["gprs"], stats["stack"]);
            assert!(
                stdout(&listing).contains(&header),
                "{header}: {}",
                stdout(&listing)
            );
        }
    }
    let out = shrew(&["disasm", binary, "--target", "r700"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("r600.bin: a binary for cayman, not r700"),
        "{}",
        stderr(&out)
    );
    let bytes = std::fs::read(binary).unwrap();
    std::fs::write(binary, &bytes[12..]).unwrap();
    let out = shrew(&["disasm", binary, "--target", "cayman"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("not a shrew R600 binary"),
        "{}",
        stderr(&out)
    );
}

/// A vertex shader compiles for Gen8 and later at SIMD8, its position sent to the URB, and
/// for Gen7 at SIMD4x2, in interleaved URB writes; other widths get clear errors.
#[test]
fn compile_takes_vertex_shaders() {
    let shader = temp_file(
        "position.vert",
        "#version 450\nlayout(location = 0) in vec4 p;\nvoid main() { gl_Position = p * 2.0; }\n",
    );
    let path = shader.to_str().unwrap();
    let out = shrew(&["compile", path, "--target", "gen9", "--asm"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("urb MsgDesc: 1 SIMD8 write mlen 5"),
        "{}",
        stdout(&out)
    );
    let out = shrew(&["compile", path, "--target", "gen7", "--asm"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for expected in [
        "SIMD4x2 shader",
        "urb MsgDesc: 1 write HWord interleave mlen 2",
    ] {
        assert!(stdout(&out).contains(expected), "{}", stdout(&out));
    }
    let out = shrew(&["compile", path, "--target", "gen9", "--simd", "16"]);
    assert_user_error(&out);
    assert!(stderr(&out).contains("SIMD8"), "{}", stderr(&out));
}

/// A compute shader compiles at SIMD8, 16 and 32: its barrier is the gateway's message and a
/// `wait`, its shared memory the SLM surface, and the thread ends at the thread spawner; a
/// workgroup too large for 64 threads of the width gets a clear error.
#[test]
fn compile_takes_compute_shaders() {
    let example = repo_path("examples/shared_rotate.shrew");
    for simd in ["8", "16", "32"] {
        let out = shrew(&[
            "compile",
            example.to_str().unwrap(),
            "--target",
            "gen9",
            "--simd",
            simd,
            "--asm",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let listing = stdout(&out);
        for expected in [
            "(barrier msg)",
            "wait(1)",
            "Surface = 254",
            "thread_spawner",
        ] {
            assert!(listing.contains(expected), "{expected}: {listing}");
        }
    }
    let shader = temp_file(
        "wide.comp",
        "#version 430\nlayout(local_size_x = 1024) in;\nvoid main() { barrier(); }\n",
    );
    let out = shrew(&["compile", shader.to_str().unwrap(), "--target", "gen9"]);
    assert_user_error(&out);
    assert!(stderr(&out).contains("64"), "{}", stderr(&out));
}

/// A piglit test compiles as its fragment shader; one without gets a clear error.
#[test]
fn compile_takes_a_shader_tests_fragment_shader() {
    let test = temp_file(
        "green.shader_test",
        "[require]\nGLSL >= 1.10\n\n[vertex shader passthrough]\n\n[fragment shader]\n\
         void main() { gl_FragColor = vec4(0.0, 1.0, 0.0, 1.0); }\n\n[test]\ndraw rect -1 -1 2 2\n",
    );
    let out = shrew(&[
        "compile",
        test.to_str().unwrap(),
        "--target",
        "gen9",
        "--asm",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("EOT"), "{}", stdout(&out));
    let test = temp_file(
        "vertex-only.shader_test",
        "[require]\nGLSL >= 1.10\n\n[vertex shader]\nvoid main() { gl_Position = vec4(0.0); }\n",
    );
    let out = shrew(&["compile", test.to_str().unwrap(), "--target", "gen9"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("no fragment shader section"),
        "{}",
        stderr(&out)
    );
}

/// `corpus --target gen9 --vs-pipeline B` compiles each fragment shader with both pipelines and
/// sums up in shader-db's terms: the default pipeline unrolls the loop `none` keeps.
#[test]
fn corpus_compares_pipelines_on_gen_kernels() {
    let shader = temp_file(
        "fold.frag",
        "#version 450\nlayout(location = 0) in vec4 v;\nlayout(location = 0) out vec4 color;\n\
         void main() { vec4 a = vec4(0.0); for (int i = 0; i < 4; i++) a += v; color = a; }\n",
    );
    let out = shrew(&[
        "corpus",
        shader.to_str().unwrap(),
        "--target",
        "gen9",
        "-p",
        "default",
        "--vs-pipeline",
        "none",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let summary: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("kernel_summary").cloned())
        .unwrap_or_else(|| panic!("no kernel_summary in {text}"));
    let widths: Vec<_> = summary
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["stage"] == "fragment")
        .collect();
    // SIMD32 does not beat SIMD16's throughput here: it is left out, and nothing changes.
    let simd32 = widths.iter().find(|w| w["simd"] == 32).expect("SIMD32");
    assert_eq!(simd32["kernels"], 0, "{simd32}");
    assert_eq!(
        simd32["vs_pipeline"]["instructions"]["change_percent"], 0.0,
        "{simd32}"
    );
    for width in widths.iter().filter(|w| w["simd"] != 32) {
        assert_eq!(width["kernels"], 1, "{width}");
        let instructions = &width["vs_pipeline"]["instructions"];
        assert_eq!(instructions["helped"], 1, "{width}");
        assert_eq!(instructions["hurt"], 0, "{width}");
        assert!(
            instructions["change_percent"].as_f64().unwrap() < 0.0,
            "{width}"
        );
    }
}

/// `shrew targets` lists every target `--target` takes, with what it is.
#[test]
fn targets_lists_every_target() {
    let out = shrew(&["targets"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Vec<String> = stdout(&out)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert_eq!(
        listed,
        [
            "generic",
            "gen7",
            "gen75",
            "gen8",
            "gen9",
            "r600",
            "r700",
            "evergreen",
            "cayman"
        ]
    );
    let help = stdout(&shrew(&["opt", "--help"]));
    for name in &listed {
        assert!(help.contains(name.as_str()), "{name}: {help}");
    }
}

/// A dispatch width is a choice on Gen only: R600 chips refuse `--simd`, and Gen names the
/// widths a stage takes.
#[test]
fn simd_is_checked_against_the_target() {
    let shader = temp_file(
        "white.frag",
        "#version 450\nlayout(location = 0) out vec4 color;\nvoid main() { color = vec4(1.0); }\n",
    );
    let path = shader.to_str().unwrap();
    let out = shrew(&["compile", path, "--target", "evergreen", "--simd", "16"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("no choice of dispatch width"),
        "{}",
        stderr(&out)
    );
    let out = shrew(&["compile", path, "--target", "gen9", "--simd", "4"]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("SIMD8, SIMD16, SIMD32"),
        "{}",
        stderr(&out)
    );
    let out = shrew(&["compile", path, "--target", "evergreen"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("gprs"), "{}", stdout(&out));
}

/// `compile` watches the backend's passes as `opt` watches the mid-end's: `--print-after` names a
/// machine pass, `--print-after-all` prints all three stages, `--bisect-limit` counts across them
/// (lowerings still run, so every limit compiles), and an unknown pass is an error listing those
/// that ran.
#[test]
fn compile_observes_backend_passes() {
    let path = "../examples/lighting.shrew";
    let out = shrew(&[
        "compile",
        path,
        "--target",
        "gen9",
        "--print-after",
        "gen-schedule",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("; after gen-schedule\nSIMD8 program:"),
        "{}",
        stderr(&out)
    );
    let out = shrew(&["compile", path, "--target", "gen9", "--print-after-all"]);
    let dumps = stderr(&out);
    for pass in [
        "; after algebraic",
        "; after lower-io",
        "; after gen-copy-prop",
        "; after gen-regalloc",
    ] {
        assert!(dumps.contains(pass), "{pass}: {dumps}");
    }
    let mut made = Vec::new();
    for limit in ["0", "3", "1000"] {
        let out = shrew(&["compile", path, "--target", "gen9", "--bisect-limit", limit]);
        assert!(out.status.success(), "{limit}: {}", stderr(&out));
        made.push(stderr(&out));
    }
    assert!(made[0].contains("0 transformations made"), "{}", made[0]);
    assert!(made[1].contains("3 transformations made"), "{}", made[1]);
    // The last transformation is described after the name of the pass that made it.
    let passes = stdout(&shrew(&["passes"]));
    let last = made[1]
        .split("; the last: ")
        .nth(1)
        .expect("a last transformation");
    let pass = last.split(": ").next().unwrap();
    assert!(
        passes
            .lines()
            .any(|l| l.split_whitespace().next() == Some(pass)),
        "{last}"
    );
    assert!(
        made[2].contains("the last: machine pass `gen-"),
        "{}",
        made[2]
    );
    let out = shrew(&[
        "compile",
        path,
        "--target",
        "evergreen",
        "--print-after",
        "nosuch",
    ]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("no pass of that name ran"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("lower-io"), "{}", stderr(&out));
    // R600's packing, allocation and emission show the IR each makes.
    let out = shrew(&[
        "compile",
        path,
        "--target",
        "cayman",
        "--verify-each",
        "--print-after",
        "r600-pack",
        "--print-after",
        "r600-regalloc",
        "--print-after",
        "r600-emit",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dumps = stderr(&out);
    for shown in [
        "; after r600-pack\n0 scratch elements\nalu clause",
        "; after r600-regalloc\n",
        " GPRs: v",
        "; after r600-emit\nbytecode ",
    ] {
        assert!(dumps.contains(shown), "{shown}: {dumps}");
    }
}

/// `compile --check` runs the kernel on the target's emulator against the interpreter and says
/// what it compared; its options need it.
#[test]
fn compile_checks_the_emulator_against_the_interpreter() {
    let cases = [
        (
            "examples/lighting.shrew",
            "gen9",
            &["--simd", "16"][..],
            "31 covered pixels",
        ),
        (
            "examples/lighting.shrew",
            "evergreen",
            &[],
            "31 covered pixels",
        ),
        ("tests/ir/vertex_outputs.shrew", "r700", &[], "70 vertices"),
        (
            "examples/shared_rotate.shrew",
            "gen8",
            &["--workgroups", "2,1,1"],
            "2x1x1 workgroups",
        ),
    ];
    for (file, target, extra, compared) in cases {
        let path = repo_path(file);
        let args = [
            "compile",
            path.to_str().unwrap(),
            "--target",
            target,
            "--check",
        ];
        let out = shrew(&[&args[..], extra].concat());
        assert!(out.status.success(), "{file} {target}: {}", stderr(&out));
        let last = stdout(&out).lines().last().unwrap_or_default().to_string();
        assert!(
            last.contains("the emulator agrees with the interpreter") && last.contains(compared),
            "{file} {target}: {last}"
        );
    }
    let example = repo_path("examples/lighting.shrew");
    let out = shrew(&[
        "compile",
        example.to_str().unwrap(),
        "--target",
        "gen9",
        "--tolerance",
        "0.1",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--check"), "{}", stderr(&out));
}

/// The README's first command (the main job on a shipped example) runs and ends with the line
/// the README quotes.
#[test]
fn readme_first_command_checks_the_example() {
    let readme = std::fs::read_to_string(repo_path("README.md")).unwrap();
    let prefix = "cargo run --release -p shrew-cli -- ";
    let command = readme
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .expect("the README runs shrew");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shrew"))
        .args(command.split_whitespace())
        .current_dir(repo_path(""))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let last = stdout(&out).lines().last().unwrap_or_default().to_string();
    let quoted: String = readme
        .split("It ends with `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("the README quotes the last line")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(last, quoted);
}

/// A shader on which a rule set reaches its cap on rewrites still compiles: the pass stops, the
/// pipeline goes on, and a note says so.
#[test]
fn a_rule_set_reaching_its_cap_does_not_reject_the_shader() {
    let chain = "    x = x * 1.0001;\n".repeat(300);
    let shader = temp_file(
        "chain.frag",
        &format!(
            "#version 450\nlayout(location = 0) in vec4 v;\nlayout(location = 0) out vec4 color;\n\
             void main() {{\n    float x = v.x;\n{chain}    color = vec4(x);\n}}\n"
        ),
    );
    for target in ["gen9", "evergreen"] {
        let out = shrew(&[
            "compile",
            shader.to_str().unwrap(),
            "--target",
            target,
            "--check",
        ]);
        assert!(out.status.success(), "{target}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("the emulator agrees with the interpreter"),
            "{}",
            stdout(&out)
        );
    }
}

/// A test that panics in the middle of a piglit batch (through the test-only hook) is reported
/// as failed with the panic's message, and every other test of the batch still runs and reports
/// its work.
#[test]
fn a_panicking_piglit_test_fails_alone_and_the_batch_finishes() {
    let test = "[require]\nGLSL >= 1.10\n\n[fragment shader]\nvoid main() { gl_FragColor = \
                vec4(0.0, 1.0, 0.0, 1.0); }\n\n[test]\ndraw rect -1 -1 2 2\nprobe rgba 1 1 0.0 \
                1.0 0.0 1.0\n";
    let paths: Vec<PathBuf> = (1..=5)
        .map(|i| temp_file(&format!("batch-{i}.shader_test"), test))
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_shrew"))
        .arg("piglit")
        .arg("--json")
        .args(&paths)
        .env(shrew_harness::PANIC_HOOK, "batch-3.shader_test")
        .output()
        .expect("cannot start shrew");
    let text = stdout(&out);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 6, "{text}");
    for line in &lines[..5] {
        let panicked = line["path"]
            .as_str()
            .unwrap()
            .ends_with("batch-3.shader_test");
        let expected = if panicked { "fail" } else { "pass" };
        assert_eq!(line["status"], expected, "{line}");
        if panicked {
            let reason = line["reason"].as_str().unwrap();
            assert!(reason.starts_with("panic: "), "{reason}");
        } else {
            // The work of each test: the interpreter's instructions and time, within the test's.
            assert!(line["lane_instructions"].as_u64().unwrap() > 0, "{line}");
            let executing = line["execution_time"].as_f64().unwrap();
            assert!(
                executing > 0.0 && executing <= line["time"].as_f64().unwrap(),
                "{line}"
            );
        }
    }
    assert_eq!(lines[5]["summary"]["passed"], 4, "{text}");
    assert_eq!(lines[5]["summary"]["failed"], 1, "{text}");
}

/// `shrew search` logs every evaluation and a summary as JSON lines, on stdout and in
/// `--output`; the same seed gives the same lines; bad arguments are located errors.
#[test]
fn search_with_a_fixed_seed_prints_the_same_evaluations_twice() {
    let corpus = repo_path("examples/lighting.shrew");
    let output = temp_file("search.jsonl", "");
    let args = [
        "search",
        corpus.to_str().unwrap(),
        "--target",
        "gen9",
        "--strategy",
        "random,greedy",
        "--budget",
        "6",
        "--max-length",
        "3",
        "--seed",
        "3",
        "--json",
        "--output",
        output.to_str().unwrap(),
    ];
    let first = shrew(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let text = stdout(&first);
    assert_eq!(std::fs::read_to_string(&output).unwrap(), text);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (summary, evaluations) = lines.split_last().unwrap();
    assert!(!evaluations.is_empty() && evaluations.len() <= 12, "{text}");
    assert!(
        evaluations
            .iter()
            .all(|e| e["shader"].as_str().unwrap().ends_with("lighting.shrew"))
    );
    let summary = &summary["summary"];
    assert_eq!(summary["shaders"], 1, "{summary}");
    assert_eq!(summary["checked_by_random_inputs"], 1, "{summary}");
    let results = summary["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{summary}");
    for result in results {
        assert!(result["geomean_ratio"].as_f64().unwrap() <= 1.0, "{result}");
    }
    assert_eq!(
        stdout(&shrew(&args)),
        text,
        "the same seed, the same search"
    );

    // The text summary, and `shrew report` of the saved run, alone and against itself.
    let text_args: Vec<&str> = args.iter().copied().filter(|&a| a != "--json").collect();
    let printed = stdout(&shrew(&text_args));
    assert!(printed.contains("random: geomean"), "{printed}");
    let report = shrew(&["report", output.to_str().unwrap()]);
    assert_eq!(stdout(&report), printed, "{}", stderr(&report));
    let both = stdout(&shrew(&[
        "report",
        output.to_str().unwrap(),
        output.to_str().unwrap(),
    ]));
    assert!(both.contains("greedy  A geomean"), "{both}");
    assert_user_error(&shrew(&["report", corpus.to_str().unwrap()]));

    // The plots, as SVG and PNG.
    let plots = output.with_file_name("search-plots");
    let out = shrew(&[
        "report",
        output.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ["best", "improvements", "passes"] {
        let svg = std::fs::read_to_string(plots.join(format!("{name}.svg"))).unwrap();
        assert!(svg.contains("gen9, instructions, per-shader"), "{name}.svg");
        let png = std::fs::read(plots.join(format!("{name}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}.png");
    }

    for (bad, message) in [
        (["--strategy", "annealing"], "unknown strategy `annealing`"),
        (["--objective", "x*cycles"], "bad weight `x`"),
        (["--passes", "nonsense"], "no pass `nonsense`"),
    ] {
        let out = shrew(&[&args[..4], &bad[..]].concat());
        assert_user_error(&out);
        assert!(stderr(&out).contains(message), "{}", stderr(&out));
    }
}

/// `--provenance` tags what the rules built with the rule's text and file:line, in the IR
/// (`opt`) and in both backends' listings (`compile`), which it prints; without it nothing is
/// tagged.
#[test]
fn provenance_tags_instructions_with_the_rule_that_made_them() {
    let shader = repo_path("examples/algebraic.shrew");
    let shader = shader.to_str().unwrap();
    let rule = "from algebraic: `fmin(fmax(a, 0.0), 1.0) => fsat(a) if !opts.lower_fsat` \
                (rules/src/fsat.rs:";
    let out = shrew(&["opt", shader, "--provenance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let fsat = text.lines().find(|l| l.contains("= fsat")).unwrap_or("");
    assert!(fsat.contains(&format!("// {rule}")), "{text}");
    for (target, comment) in [("gen9", "// "), ("evergreen", "; ")] {
        let out = shrew(&["compile", shader, "--target", target, "--provenance"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let listing = stdout(&out);
        assert!(
            listing.contains(&format!("{comment}{rule}")),
            "{target}:\n{listing}"
        );
        let plain = stdout(&shrew(&["compile", shader, "--target", target, "--asm"]));
        assert!(!plain.contains("from algebraic"), "{target}:\n{plain}");
    }
    assert!(!stdout(&shrew(&["opt", shader])).contains("from algebraic"));
}

/// `shrew bisect` with a pipeline whose kernels are right says there is nothing to bisect.
#[test]
fn bisect_of_a_right_pipeline_has_nothing_to_bisect() {
    let shader = repo_path("examples/lighting.shrew");
    let out = shrew(&[
        "bisect",
        shader.to_str().unwrap(),
        "-p",
        "default",
        "--target",
        "gen9",
    ]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("nothing to bisect"),
        "{}",
        stderr(&out)
    );
}

/// `shrew bisect --objective` over a corpus lists the shaders a pipeline makes worse than the
/// reference and bisects each: a pipeline that only lacks transformations (`vars-to-ssa` alone)
/// has none to blame, and says so; the one-shader mode refuses a corpus.
#[test]
fn bisect_of_a_corpus_regression_lists_the_shaders_made_worse() {
    let examples = repo_path("examples");
    let examples = examples.to_str().unwrap();
    let args = ["bisect", examples, "-p", "vars-to-ssa", "--target", "gen9"];
    let out = shrew(&[&args[..], &["--objective", "instructions"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "4 shaders compared on gen9 (instructions, `vars-to-ssa` against `default`): 1 worse"
        ),
        "{text}"
    );
    assert!(text.contains("lighting.shrew: 22 against 17"), "{text}");
    assert!(
        text.contains("not bisected:") && text.contains("nothing to bisect"),
        "{text}"
    );
    let out = shrew(&args);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("takes one shader"),
        "{}",
        stderr(&out)
    );
}

/// A per-shader search in shards, joined with `shrew report --merge`, is the search made in one
/// run: the same evaluations in the same order, the same summary.
#[test]
fn search_shards_merge_into_the_whole_search() {
    let dir = std::env::temp_dir().join(format!("shrew-cli-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["lighting.shrew", "algebraic.shrew", "texel_fetch.shrew"] {
        std::fs::copy(repo_path(&format!("examples/{name}")), dir.join(name)).unwrap();
    }
    let run = |extra: &[&str], output: &Path| {
        let mut args = vec![
            "search",
            dir.to_str().unwrap(),
            "--target",
            "gen9",
            "--strategy",
            "random,greedy",
            "--budget",
            "4",
            "--max-length",
            "3",
            "--output",
            output.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = shrew(&args);
        assert!(out.status.success(), "{}", stderr(&out));
    };
    let (whole, first, second, merged) = (
        dir.join("whole.jsonl"),
        dir.join("1.jsonl"),
        dir.join("2.jsonl"),
        dir.join("merged.jsonl"),
    );
    run(&[], &whole);
    run(&["--shard", "1/2"], &first);
    run(&["--shard", "2/2"], &second);
    let out = shrew(&[
        "report",
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "--merge",
        merged.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = |path: &Path| -> serde_json::Value {
        let text = std::fs::read_to_string(path).unwrap();
        serde_json::from_str::<serde_json::Value>(text.lines().last().unwrap()).unwrap()["summary"]
            .clone()
    };
    let lines = |path: &Path| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(lines(&whole), lines(&merged));
    assert_eq!(
        summary(&first)["results"][0]["shaders"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        stdout(&out),
        stdout(&shrew(&["report", merged.to_str().unwrap()]))
    );
    // Shards of different searches do not merge.
    let other = dir.join("other.jsonl");
    run(&["--shard", "2/2", "--seed", "9"], &other);
    let out = shrew(&[
        "report",
        first.to_str().unwrap(),
        other.to_str().unwrap(),
        "--merge",
        merged.to_str().unwrap(),
    ]);
    assert_user_error(&out);
    assert!(
        stderr(&out).contains("not shards of one search"),
        "{}",
        stderr(&out)
    );
}

/// The runner's own piglit-format tests (tests/piglit: `draw arrays` of every primitive from
/// `[vertex data]`, 64-bit vertex inputs, ...) pass on the interpreter, unoptimized and through
/// the default pipeline.
#[test]
fn the_runners_own_piglit_tests_pass_on_the_interpreter() {
    let dir = repo_path("tests/piglit");
    for pipeline in ["none", "default"] {
        let out = shrew(&["piglit", "-p", pipeline, dir.to_str().unwrap()]);
        let text = stdout(&out);
        assert!(out.status.success(), "{pipeline}: {text}{}", stderr(&out));
        assert!(
            !text.contains("FAIL") && !text.contains("SKIP"),
            "{pipeline}: {text}"
        );
    }
}
