#!/usr/bin/env bash
# The execution tests of the families in scripts/piglit-families.txt, whole (the test script
# runs the generated ones one in 20 on the interpreter and one in 100 on the emulators), on the
# interpreter and then on each target's emulator, with the test script's gates: 94% of the
# hand-written tests glslang compiles and 99.5% of the generated ones pass on the interpreter;
# on each target at least 99% of what the interpreter passes, and nothing that runs to other
# results. The generated sets hold about 27,000 files: on two cores the interpreter takes
# about 45 minutes, gen9 about as long, an R600 target about half an hour.
#
# usage: bash scripts/families.sh [--keep-reference] [TARGET...]
#   (default targets: gen9 gen7 evergreen cayman)
# The runs go to target/families/*.jsonl. --keep-reference reuses the interpreter's runs of an
# earlier invocation when they are there (the interpreter alone takes most of an hour).
set -euo pipefail
cd "$(dirname "$0")/.."
piglit="$(bash scripts/piglit.sh)"
cargo build --release --locked -p shrew-cli
out=target/families
mkdir -p "$out"
# One binary for the whole run, whatever is rebuilt meanwhile.
cp target/release/shrew "$out/shrew"
shrew=$out/shrew
keep_reference=false
if [ "${1:-}" = --keep-reference ]; then keep_reference=true; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gen9 gen7 evergreen cayman)
hand_written=() generated=()
while read -r family; do
    case "$family" in "#"* | "") continue ;; esac
    [ -d "$piglit/tests/spec/$family/execution" ] && hand_written+=("$piglit/tests/spec/$family/execution")
    [ -d "$piglit/generated_tests/spec/$family/execution" ] \
        && generated+=("$piglit/generated_tests/spec/$family/execution")
done <scripts/piglit-families.txt
status=0
for set in hand-written generated; do
    if [ "$set" = hand-written ]; then dirs=("${hand_written[@]}") gate=94.0; else dirs=("${generated[@]}") gate=99.5; fi
    if ! $keep_reference || [ ! -s "$out/$set.jsonl" ]; then
        "$shrew" piglit --json --time-limit 300 -p default "${dirs[@]}" >"$out/$set.jsonl" || true
    fi
    python3 scripts/gate.py piglit "$out/$set.jsonl" "$gate" --label "$set, interpreter" \
        || status=1
    for target in "${targets[@]}"; do
        "$shrew" piglit --json --time-limit 300 -p default --target "$target" "${dirs[@]}" \
            >"$out/$set-$target.jsonl" || true
        python3 scripts/gate.py relative "$out/$set-$target.jsonl" 99.0 \
            --reference "$out/$set.jsonl" --label "$set, $target" || status=1
    done
done
exit $status
