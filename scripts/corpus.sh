#!/usr/bin/env bash
# The front end over the whole piglit corpus (the test script checks a fixed sample of it): every
# shader stage of piglit's `tests/` and `generated_tests/`, with the same gate. Cold, most of
# the time goes to glslangValidator (about an hour on two cores); its results are cached, and a
# second run takes minutes. Extra arguments go to `shrew corpus` (`-p default --target gen9`).
set -euo pipefail
cd "$(dirname "$0")/.."
piglit="$(bash scripts/piglit.sh)"
cargo build --release --locked -p shrew-cli
target/release/shrew corpus --json "$@" "$piglit/tests" "$piglit/generated_tests" \
    >target/corpus-full.jsonl || true
python3 scripts/gate.py corpus target/corpus-full.jsonl 99.0 --label "whole corpus"
