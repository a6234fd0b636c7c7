#!/usr/bin/env bash
# Runs every check of shrew on a fresh machine: installs what the tests need (glslang-tools and
# spirv-tools from Debian, piglit's test files into a cache), then formatting, lints, the whole
# test suite, and piglit's executable tests on the interpreter with their pass-rate gate. CI
# runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

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
if ! command -v glslangValidator >/dev/null 2>&1 || ! command -v spirv-opt >/dev/null 2>&1; then
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y glslang-tools spirv-tools >/dev/null
fi
piglit="$(bash scripts/piglit.sh)"
# Tests that need glslangValidator fail instead of skipping when it is missing.
export SHREW_REQUIRE_GLSLANG=1

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked

cargo build --release --locked -p shrew-cli
shrew=target/release/shrew

executable=(
    "$piglit/generated_tests/spec/glsl-1.10/execution"
    "$piglit/generated_tests/spec/glsl-1.20/execution"
    "$piglit/tests/spec/glsl-1.10/execution"
    "$piglit/tests/spec/glsl-1.20/execution"
    "$piglit/tests/shaders/ssa"
)
# The executable subsets on the reference interpreter: every failure is listed, and the pass rate
# of the tests that compile through glslang must not drop below the figure reached.
"$shrew" piglit --json "${executable[@]}" >target/piglit.jsonl || true
python3 scripts/gate.py piglit target/piglit.jsonl 99.5
# The same tests through the default pipeline must pass at the same rate.
"$shrew" piglit --json -p default "${executable[@]}" >target/piglit-default.jsonl || true
python3 scripts/gate.py piglit target/piglit-default.jsonl 99.5
# The same tests with their fragment shaders compiled for Gen9 and run on its emulator: every
# test the backend compiles must pass at the interpreter's rate.
"$shrew" piglit --json -p default --target gen9 "${executable[@]}" >target/piglit-gen9.jsonl || true
python3 scripts/gate.py backend target/piglit-gen9.jsonl 99.5
# And for each R600 family chip, run on the R600 emulator.
for chip in r600 r700 evergreen cayman; do
    "$shrew" piglit --json -p default --target "$chip" "${executable[@]}" >"target/piglit-$chip.jsonl" || true
    python3 scripts/gate.py backend "target/piglit-$chip.jsonl" 99.5
done

# The whole corpus through the front end: no input may panic, and the front end must translate
# and verify the vertex, fragment and compute stages that glslang compiles at the rate reached.
"$shrew" corpus --json "$piglit/tests" "$piglit/generated_tests" >target/corpus.jsonl || true
python3 scripts/gate.py corpus target/corpus.jsonl 99.0
