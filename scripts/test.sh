#!/usr/bin/env bash
# Runs every check of shrew on a fresh machine: installs what the tests need (glslang-tools and
# spirv-tools from Debian, piglit's test files into a cache), then formatting, lints, the whole
# test suite, piglit's executable tests on the interpreter and on every target's emulator with
# their pass-rate gates, and the front end over a fixed sample of piglit's whole corpus. CI runs
# exactly this. Each phase prints a header and, when it ends, its time and the total so far.
#
# Requirements: Debian or Ubuntu (apt-get; piglit comes from `apt-get download`), root or sudo
# to install packages that are missing, python3, and the Rust toolchain `rust-toolchain.toml`
# names (with rustfmt and clippy).
set -euo pipefail
cd "$(dirname "$0")/.."

# Logs get no colour codes (cargo, and trybuild, which looks only at NO_COLOR).
if [ ! -t 1 ]; then
    export NO_COLOR=1 CARGO_TERM_COLOR=never
fi

start=$SECONDS
phase_start=$SECONDS
phase_name=""
phase() {
    end_phase
    phase_name="$1"
    phase_start=$SECONDS
    echo "==== $phase_name"
}
end_phase() {
    if [ -n "$phase_name" ]; then
        local took=$((SECONDS - phase_start)) total=$((SECONDS - start))
        printf '==== %s: %dm%02ds (total %dm%02ds)\n' "$phase_name" $((took / 60)) $((took % 60)) \
            $((total / 60)) $((total % 60))
    fi
}
trap 'status=$?; if [ $status != 0 ]; then echo "==== FAILED in: $phase_name" >&2; fi' EXIT

phase "set-up (packages, piglit)"
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
fi
export SUDO
# The plots of `shrew report --plots` draw their text in DejaVu Sans.
if ! command -v glslangValidator >/dev/null 2>&1 || ! command -v spirv-opt >/dev/null 2>&1 \
    || [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y glslang-tools spirv-tools fonts-dejavu-core >/dev/null
fi
piglit="$(bash scripts/piglit.sh)"
# Tests that need glslangValidator fail instead of skipping when it is missing.
export SHREW_REQUIRE_GLSLANG=1

phase "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
python3 scripts/check_features.py

phase "test suite (cargo test --workspace)"
cargo test --workspace --locked

phase "build (release)"
cargo build --release --locked -p shrew-cli
shrew=target/release/shrew

# The Python package (python/): built into a virtual environment kept in the cache with what
# its tests and examples need, then its pytest suite against the release binary (round trips
# with the CLI, the Gymnasium environment, Ray on a local instance).
phase "Python package (maturin, pytest)"
venv="${SHREW_VENV:-$HOME/.cache/shrew/venv}"
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        $SUDO apt-get install -y python3-venv >/dev/null
        rm -rf "$venv"
        python3 -m venv "$venv"
    fi
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements-test.txt
(cd python && VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release --locked -q)
SHREW_BIN="$PWD/$shrew" SHREW_PIGLIT="$piglit" SHREW_REQUIRE_PIGLIT=1 \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests

# Random valid shaders on every target's emulator, the default and eqsat pipelines and random
# pass orders, against the unoptimized interpreter: a fixed-seed slice (`shrew fuzz` runs any
# number; see docs/testing.md).
phase "random differential testing (fixed seed)"
"$shrew" fuzz --programs 200 --seed 1
# Every ALU opcode at every bit size on every target: none may compile to something that
# computes other values than the interpreter (WRONG in the matrix).
"$shrew" ops >target/ops.txt
if grep WRONG target/ops.txt; then
    echo "an opcode computes wrong values on a target (target/ops.txt)" >&2
    exit 1
fi

executable=(
    "$piglit/generated_tests/spec/glsl-1.10/execution"
    "$piglit/generated_tests/spec/glsl-1.20/execution"
    "$piglit/tests/spec/glsl-1.10/execution"
    "$piglit/tests/spec/glsl-1.20/execution"
    "$piglit/tests/shaders/ssa"
    tests/piglit
)
# The executable subsets on the reference interpreter: every failure is listed, and the pass rate
# of the tests that compile through glslang must not drop below the figure reached. Without a
# pipeline, then through the default pipeline.
# A test past its time limit fails alone instead of holding up the run.
limit=(--time-limit 300)
phase "piglit on the interpreter"
"$shrew" piglit --json "${limit[@]}" "${executable[@]}" >target/piglit.jsonl || true
python3 scripts/gate.py piglit target/piglit.jsonl 99.5 --label "interpreter, -p none"
"$shrew" piglit --json "${limit[@]}" -p default "${executable[@]}" >target/piglit-default.jsonl || true
python3 scripts/gate.py piglit target/piglit-default.jsonl 99.5 --label "interpreter, -p default"

# The execution tests of the GLSL 1.40 to 4.50 and ES 3.x families and of the extensions
# that add operations, types and resources (64-bit types, gpu_shader5, compute, images, ...;
# scripts/piglit-families.txt; scripts/families.sh runs them whole) on the interpreter: the
# hand-written ones whole, the generated ones (about 27,000, most of them 64-bit vertex inputs)
# one in 20. The hand-written ones' gate is the rate reached so far: their remaining failures
# are features still missing (subgroup ballots, the sample mask, denormal results of ldexp;
# docs/piglit-and-corpus.md lists them).
hand_written=() generated=()
while read -r family; do
    case "$family" in "#"* | "") continue ;; esac
    [ -d "$piglit/tests/spec/$family/execution" ] && hand_written+=("$piglit/tests/spec/$family/execution")
    [ -d "$piglit/generated_tests/spec/$family/execution" ] \
        && generated+=("$piglit/generated_tests/spec/$family/execution")
done <scripts/piglit-families.txt
phase "piglit on the interpreter: GLSL 1.40-4.50 and extension families"
"$shrew" piglit --json "${limit[@]}" -p default --sample 20 "${generated[@]}" \
    >target/piglit-families-generated.jsonl || true
python3 scripts/gate.py piglit target/piglit-families-generated.jsonl 99.5 \
    --label "generated families, 1 in 20, -p default"
"$shrew" piglit --json "${limit[@]}" -p default "${hand_written[@]}" \
    >target/piglit-families.jsonl || true
python3 scripts/gate.py piglit target/piglit-families.jsonl 94.0 \
    --label "hand-written families, -p default"
# The same families on the emulators of the chips that have their features: at least 99% of
# what the interpreter passes passes there too, and none runs to other results (the generated
# ones one in 100, a subset of the interpreter's one in 20).
for target in gen9 gen7 evergreen cayman; do
    phase "GLSL 1.40-4.50 and extension families on the $target emulator"
    "$shrew" piglit --json "${limit[@]}" -p default --target "$target" "${hand_written[@]}" \
        >"target/piglit-families-$target.jsonl" || true
    python3 scripts/gate.py relative "target/piglit-families-$target.jsonl" 99.0 \
        --reference target/piglit-families.jsonl --label "hand-written families, $target"
    "$shrew" piglit --json "${limit[@]}" -p default --target "$target" --sample 100 \
        "${generated[@]}" >"target/piglit-families-generated-$target.jsonl" || true
    python3 scripts/gate.py relative "target/piglit-families-generated-$target.jsonl" 99.0 \
        --reference target/piglit-families-generated.jsonl \
        --label "generated families, 1 in 100, $target"
done

# The GLSL 1.10/1.20 and SSA tests compiled for each target and run on its emulator: 99% of
# what the interpreter passes passes there too, and no test the backend compiles runs to other
# results than the interpreter's.
for target in gen9 gen7 r600 r700 evergreen cayman; do
    phase "piglit on the $target emulator"
    "$shrew" piglit --json "${limit[@]}" -p default --target "$target" "${executable[@]}" \
        >"target/piglit-$target.jsonl" || true
    python3 scripts/gate.py relative "target/piglit-$target.jsonl" 99.0 \
        --reference target/piglit-default.jsonl --label "$target"
done

# The front end over a fixed sample of the whole corpus (one file in 8 of each directory, the
# same files on every run): no input may panic, and the vertex, fragment and compute stages
# that glslang compiles must translate and verify at the rate reached. The whole corpus:
# `bash scripts/corpus.sh`.
phase "corpus sample through the front end"
"$shrew" corpus --json --sample 8 "$piglit/tests" "$piglit/generated_tests" \
    >target/corpus.jsonl || true
python3 scripts/gate.py corpus target/corpus.jsonl 99.0 --label "1 file in 8"
end_phase
phase_name=""
echo "==== all checks passed in $(((SECONDS - start) / 60))m$(printf %02d $(((SECONDS - start) % 60)))s"
