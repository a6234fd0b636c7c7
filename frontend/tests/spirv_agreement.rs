//! The SPIR-V reader against `spirv-val` on mutated modules ([`mutate`]): whatever `spirv-val`
//! rejects, the reader must reject too (or translate correctly), and it must never panic.
//!
//! A mutant is a disagreement when `spirv-val --target-env opengl4.5` (the environment that
//! accepts glslang's `-V -R` output unchanged) rejects it and the translator accepts it, that is
//! translates it into IR the verifier accepts. The reverse, `spirv-val` accepting what the
//! reader rejects, is counted apart: it is over-strictness or an unsupported feature, not a
//! missed error. Only sources that both accept unmutated are mutated; the few mutants
//! `spirv-val` takes more than ten seconds on are listed and not counted.
//!
//! - `mutated_modules_agree_with_spirv_val`: the CI slice, 200 mutants of a fixed seed of a few
//!   shaders compiled here, must show no disagreement (needs glslangValidator and spirv-val; see
//!   [`Glslang::for_tests`]).
//! - `corpus_agreement` (ignored): the measurement on the SPIR-V cache (the modules glslang made
//!   for piglit), printing the rates and the disagreements by `spirv-val`'s message:
//!   `cargo test -p shrew-frontend --test spirv_agreement -- --ignored --nocapture`, sized by
//!   `SHREW_AGREEMENT_SOURCES` (500), `SHREW_AGREEMENT_MUTANTS` (per source, 4),
//!   `SHREW_AGREEMENT_SEED` (1) and `SHREW_AGREEMENT_DIR` (the cache directory).

use rayon::prelude::*;
use shrew_engine::ir::Stage;
use shrew_frontend::glsl::{Glslang, cached_spirv, default_cache_dir};
use shrew_frontend::spirv::mutate::{Mutation, mutate};
use shrew_frontend::spirv::{Options, translate};
use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `spirv-val` may take on one module: it runs for minutes on a few mutants.
const SPIRV_VAL_TIMEOUT: Duration = Duration::from_secs(10);

/// `spirv-val`'s verdict: `Err` holds its message; `None` when it did not finish in time.
fn spirv_val(words: &[u32]) -> Option<Result<(), String>> {
    let mut child = Command::new("spirv-val")
        .args(["--target-env", "opengl4.5", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spirv-val runs");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut stdin = child.stdin.take().expect("a piped stdin");
    // spirv-val may stop reading early on a broken module: a closed pipe is its verdict.
    let _ = stdin.write_all(&bytes);
    drop(stdin);
    let start = Instant::now();
    // Its messages are short: they fit in the pipes while it runs.
    while child.try_wait().expect("spirv-val runs").is_none() {
        if start.elapsed() > SPIRV_VAL_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let output = child.wait_with_output().expect("spirv-val ends");
    Some(if output.status.success() {
        Ok(())
    } else {
        let mut message = String::from_utf8_lossy(&output.stderr).into_owned();
        message.push_str(&String::from_utf8_lossy(&output.stdout));
        Err(message.trim().to_string())
    })
}

/// Whether `spirv-val` is installed; a missing one fails the test under
/// `SHREW_REQUIRE_GLSLANG` (the test script installs both tools), else skips it.
fn have_spirv_val() -> bool {
    let found = Command::new("spirv-val")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("SHREW_REQUIRE_GLSLANG").is_none(),
            "spirv-val is not installed"
        );
        eprintln!("skipping a test that needs spirv-val");
    }
    found
}

/// The translator's verdict.
enum Verdict {
    Accepted,
    Rejected(String),
    Panicked(String),
}

fn shrew(words: &[u32]) -> Verdict {
    match catch_unwind(AssertUnwindSafe(|| translate(words, &Options::default()))) {
        Ok(Ok(_)) => Verdict::Accepted,
        Ok(Err(error)) => Verdict::Rejected(error.to_string()),
        Err(panic) => Verdict::Panicked(
            (panic.downcast_ref::<String>().cloned())
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

/// One mutant on which the two disagree.
struct Case {
    source: String,
    seed: u64,
    mutation: Mutation,
    description: String,
    message: String,
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let first_line = self.message.lines().next().unwrap_or_default();
        write!(
            f,
            "{} seed {} {:?} ({}): {first_line}",
            self.source, self.seed, self.mutation, self.description
        )
    }
}

/// The verdicts over a set of mutants.
#[derive(Default)]
struct Tally {
    both_accept: usize,
    both_reject: usize,
    /// `spirv-val` rejects, the translator accepts (the message is `spirv-val`'s).
    missed: Vec<Case>,
    /// `spirv-val` accepts, the translator rejects (the message is the translator's).
    stricter: Vec<Case>,
    /// The translator panicked.
    panics: Vec<Case>,
    /// `spirv-val` did not finish in time (not counted).
    timeouts: Vec<Case>,
    by_mutation: BTreeMap<Mutation, (usize, usize)>,
}

impl Tally {
    fn total(&self) -> usize {
        self.both_accept + self.both_reject + self.missed.len() + self.stricter.len()
    }

    fn add(&mut self, source: &str, seed: u64, words: &[u32]) {
        let mutant = mutate(words, seed).expect("the source parses");
        let case = |message: String| Case {
            source: source.to_string(),
            seed,
            mutation: mutant.mutation,
            description: mutant.description.clone(),
            message,
        };
        let ours = shrew(&mutant.words);
        let Some(val) = spirv_val(&mutant.words) else {
            self.timeouts.push(case("spirv-val timed out".into()));
            return;
        };
        let entry = self.by_mutation.entry(mutant.mutation).or_default();
        entry.0 += 1;
        match (val, ours) {
            (_, Verdict::Panicked(message)) => {
                entry.1 += 1;
                self.panics.push(case(message));
            }
            (Ok(()), Verdict::Accepted) => self.both_accept += 1,
            (Err(_), Verdict::Rejected(_)) => self.both_reject += 1,
            (Err(message), Verdict::Accepted) => {
                entry.1 += 1;
                self.missed.push(case(message));
            }
            (Ok(()), Verdict::Rejected(message)) => self.stricter.push(case(message)),
        }
    }

    fn merge(mut self, other: Tally) -> Tally {
        self.both_accept += other.both_accept;
        self.both_reject += other.both_reject;
        self.missed.extend(other.missed);
        self.stricter.extend(other.stricter);
        self.panics.extend(other.panics);
        self.timeouts.extend(other.timeouts);
        for (mutation, (n, bad)) in other.by_mutation {
            let entry = self.by_mutation.entry(mutation).or_default();
            entry.0 += n;
            entry.1 += bad;
        }
        self
    }

    /// The share of mutants without a missed rejection or a panic, in percent.
    fn agreement(&self) -> f64 {
        let bad = self.missed.len() + self.panics.len();
        let total = self.total() + self.panics.len();
        100.0 * (total - bad) as f64 / total.max(1) as f64
    }

    fn report(&self) -> String {
        let total = self.total() + self.panics.len();
        let mut out = format!(
            "{total} mutants: {} both accept, {} both reject, {} spirv-val rejects and shrew \
             accepts, {} spirv-val accepts and shrew rejects, {} panics ({} more on which \
             spirv-val timed out)\n\
             agreement (no missed rejection, no panic): {:.2}%\n",
            self.both_accept,
            self.both_reject,
            self.missed.len(),
            self.stricter.len(),
            self.panics.len(),
            self.timeouts.len(),
            self.agreement(),
        );
        out.push_str("by mutation (mutants, missed or panicked):\n");
        for (mutation, (n, bad)) in &self.by_mutation {
            out.push_str(&format!("  {mutation:?}: {n}, {bad}\n"));
        }
        for case in &self.timeouts {
            out.push_str(&format!("spirv-val timed out on {case}\n"));
        }
        for (title, cases) in [
            ("panics", &self.panics),
            ("spirv-val rejects, shrew accepts", &self.missed),
            ("spirv-val accepts, shrew rejects", &self.stricter),
        ] {
            let mut categories: BTreeMap<String, Vec<&Case>> = BTreeMap::new();
            for case in cases {
                categories
                    .entry(category(&case.message))
                    .or_default()
                    .push(case);
            }
            let mut categories: Vec<_> = categories.into_iter().collect();
            categories.sort_by_key(|(name, cases)| (std::cmp::Reverse(cases.len()), name.clone()));
            out.push_str(&format!("{title}: {}\n", cases.len()));
            for (name, cases) in categories {
                out.push_str(&format!("  {:5}  {name}\n", cases.len()));
                for case in cases.iter().take(2) {
                    out.push_str(&format!("         e.g. {case}\n"));
                }
            }
        }
        out
    }
}

/// A message reduced to its kind: its first line without the location prefix
/// (`error: line 12: `, `word 40 (OpFAdd): `), quoted names and numbers blanked, at most eight
/// words.
fn category(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let line = match line.split_once(": ") {
        Some((location, rest))
            if location.starts_with("line ") || location.starts_with("word ") =>
        {
            rest
        }
        _ => line,
    };
    let mut out = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                if quoted {
                    out.push_str("'_'");
                }
            }
            _ if quoted => {}
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N');
                }
            }
            _ => out.push(c),
        }
    }
    out.split_whitespace().take(8).collect::<Vec<_>>().join(" ")
}

/// Mutates each source `mutants` times (seeds `seed + mutants * i + k` for source `i`), in
/// parallel; the tally does not depend on the order.
fn run(sources: &[(String, Vec<u32>)], mutants: u64, seed: u64) -> Tally {
    (sources.par_iter().enumerate())
        .map(|(i, (name, words))| {
            let mut tally = Tally::default();
            for k in 0..mutants {
                tally.add(name, seed + mutants * i as u64 + k, words);
            }
            tally
        })
        .reduce(Tally::default, Tally::merge)
}

/// Whether a source module is one both accept unmutated; `Err` says which does not, and why.
fn both_accept(words: &[u32]) -> Result<(), String> {
    match shrew(words) {
        Verdict::Accepted => match spirv_val(words) {
            Some(verdict) => verdict.map_err(|e| format!("spirv-val: {e}")),
            None => Err("spirv-val timed out".into()),
        },
        Verdict::Rejected(e) | Verdict::Panicked(e) => Err(format!("shrew: {e}")),
    }
}

/// Shaders of the kinds glslang emits for piglit: structured control flow of every kind,
/// function calls with in and out parameters, structs and arrays, matrices, samplers, blocks,
/// compute with shared memory.
const SHADERS: &[(Stage, &str)] = &[
    (
        Stage::Fragment,
        "#version 330
        in vec4 v; out vec4 color;
        float f(in float x, out float y) { y = x * 2.0; return x + 1.0; }
        void main() {
            float acc = 0.0, y;
            for (int i = 0; i < 4; i++) {
                if (v.x > float(i)) acc += f(v.y, y); else acc -= y;
            }
            color = vec4(acc, y, 0.0, 1.0);
        }",
    ),
    (
        Stage::Vertex,
        "#version 330
        uniform mat4 mvp; uniform vec3 offsets[3];
        in vec4 position; out vec3 n;
        void main() {
            gl_Position = mvp * (position + vec4(offsets[gl_VertexID % 3], 0.0));
            n = normalize(mat3(mvp) * position.xyz);
        }",
    ),
    (
        Stage::Fragment,
        "#version 330
        struct S { vec2 a; int k[3]; };
        uniform S s[2]; uniform int which; out vec4 color;
        void main() {
            S t = s[which & 1];
            switch (t.k[1]) {
                case 0: color = vec4(t.a, 0.0, 1.0); break;
                case 1: case 2: color = vec4(t.a.yx, 1.0, 1.0); break;
                default: color = vec4(float(t.k[2]));
            }
        }",
    ),
    (
        Stage::Fragment,
        "#version 330
        uniform sampler2D tex; uniform sampler2DShadow shadow; in vec2 uv; out vec4 color;
        void main() {
            vec4 c = texture(tex, uv) + textureLod(tex, uv * 2.0, 1.0);
            c.w = texture(shadow, vec3(uv, 0.5));
            color = c + texelFetch(tex, ivec2(uv * 8.0), 0);
        }",
    ),
    (
        Stage::Compute,
        "#version 430
        layout(local_size_x = 8) in;
        layout(std430, binding = 0) buffer Data { uint values[]; };
        shared uint scratch[8];
        void main() {
            uint i = gl_LocalInvocationID.x;
            scratch[i] = values[gl_GlobalInvocationID.x] * 3u;
            barrier();
            values[gl_GlobalInvocationID.x] = scratch[7u - i] ^ (i << 2);
        }",
    ),
    (
        Stage::Fragment,
        "#version 330
        in vec4 v; out vec4 color;
        void main() {
            int n = int(v.x * 10.0), steps = 0;
            while (n != 1 && steps < 50) {
                steps++;
                if ((n & 1) == 0) { n /= 2; continue; }
                n = 3 * n + 1;
            }
            do { steps--; } while (steps > 40);
            if (v.w < 0.0) discard;
            color = vec4(float(steps), float(n), v.zw);
        }",
    ),
    (
        Stage::Fragment,
        "#version 330
        flat in ivec4 a; flat in uvec2 b; out vec4 color;
        void main() {
            ivec4 c = (a.wzyx >> 1) | (a & ivec4(7)) ^ ivec4(b.xyxy);
            uvec2 d = b * 3u % 5u + uvec2(bitCount(b.x), findMSB(b.y));
            bvec4 m = lessThan(c, ivec4(3));
            color = vec4(mix(vec4(c), vec4(d.xyxy), vec4(m)));
        }",
    ),
    (
        Stage::Fragment,
        "#version 330
        struct Light { vec3 dir; float power; };
        Light make(float p) { return Light(vec3(0.0, 1.0, 0.0), p); }
        float shade(Light l, vec3 n) { return max(dot(l.dir, n), 0.0) * l.power; }
        in vec3 n; out vec4 color;
        void main() {
            Light l = make(2.0);
            mat2 r = mat2(0.0, 1.0, -1.0, 0.0);
            color = vec4(shade(l, normalize(n)), r * n.xy, 1.0);
        }",
    ),
    (
        Stage::Vertex,
        "#version 330
        const vec2 corners[4] = vec2[4](vec2(-1.0), vec2(1.0, -1.0), vec2(-1.0, 1.0), vec2(1.0));
        out vec2 uv; flat out int id;
        void main() {
            vec2 p = corners[gl_VertexID & 3];
            uv = p * 0.5 + 0.5; id = gl_InstanceID;
            gl_Position = vec4(p, 0.0, 1.0);
        }",
    ),
    (
        Stage::Fragment,
        "#version 430
        layout(std140, binding = 1) uniform Params { mat3 m; vec4 tint; float scale[2]; };
        in vec3 p; out vec4 color;
        void main() {
            vec3 q = m * p * scale[int(p.x) & 1];
            color = q.x > 0.0 ? tint * vec4(q, 1.0) : vec4(fract(q), abs(q.y));
        }",
    ),
];

#[test]
fn mutated_modules_agree_with_spirv_val() {
    let Some(glslang) = Glslang::for_tests() else {
        return;
    };
    if !have_spirv_val() {
        return;
    }
    let sources: Vec<(String, Vec<u32>)> = (SHADERS.iter().enumerate())
        .map(|(i, (stage, source))| {
            let compiled = glslang
                .compile_cascade(source, *stage)
                .unwrap_or_else(|e| panic!("shader {i}: {e}"));
            if let Err(e) = both_accept(&compiled.words) {
                panic!("shader {i} is not accepted: {e}");
            }
            (format!("shader {i}"), compiled.words)
        })
        .collect();
    let tally = run(&sources, 20, 1);
    assert_eq!(
        tally.total() + tally.panics.len() + tally.timeouts.len(),
        200
    );
    assert!(
        tally.missed.is_empty() && tally.panics.is_empty(),
        "{}",
        tally.report()
    );
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

#[test]
#[ignore = "a measurement on the SPIR-V cache: minutes"]
fn corpus_agreement() {
    if !have_spirv_val() {
        return;
    }
    let wanted = env_number("SHREW_AGREEMENT_SOURCES", 500) as usize;
    let mutants = env_number("SHREW_AGREEMENT_MUTANTS", 4);
    let seed = env_number("SHREW_AGREEMENT_SEED", 1);
    let dir = std::env::var_os("SHREW_AGREEMENT_DIR")
        .map(PathBuf::from)
        .or_else(default_cache_dir)
        .expect("a cache directory");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    names.sort();
    // Entries are named by hash: every stride-th is a sample of the whole. Six times as many as
    // wanted are looked at: most entries are glslang's rejections, and some modules are not
    // accepted unmutated.
    let stride = (names.len() / (6 * wanted).max(1)).max(1);
    let candidates: Vec<(String, Vec<u32>)> = (names.iter().step_by(stride))
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy()[..16].to_string();
            Some((name, cached_spirv(path)?))
        })
        .collect();
    let looked_at = candidates.len();
    let accepted: Vec<bool> = candidates
        .par_iter()
        .map(|(_, words)| both_accept(words).is_ok())
        .collect();
    let sources: Vec<(String, Vec<u32>)> = (candidates.into_iter().zip(accepted))
        .filter_map(|(source, ok)| ok.then_some(source))
        .take(wanted)
        .collect();
    println!(
        "{} sources (of {looked_at} modules looked at in {}), {mutants} mutants each, seed {seed}",
        sources.len(),
        dir.display()
    );
    let tally = run(&sources, mutants, seed);
    println!("{}", tally.report());
    assert!(tally.agreement() >= 99.0, "below 99% agreement");
}
