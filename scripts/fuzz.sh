#!/usr/bin/env bash
# Runs shrew's fuzz targets (fuzz/fuzz_targets/, cargo-fuzz and libFuzzer).
#
#   bash scripts/fuzz.sh [TARGET...] [--seconds N] [--jobs N]
#       Long runs: each target (all by default) in turn for N seconds (600 by default) with N
#       jobs (1 by default), on its corpus fuzz/corpus/TARGET, which keeps what the runs find
#       and is seeded with the committed seeds and a fixed sample of piglit
#       (scripts/fuzz_corpus.py). Prints per target the executions and anything found; a
#       crash, a timeout or running out of memory leaves the input in fuzz/artifacts/TARGET/
#       (replay it with `fuzz/target/x86_64-unknown-linux-gnu/release/TARGET FILE`).
#   bash scripts/fuzz.sh --ci
#       The fixed slice CI runs: each target from its committed seeds only, with libFuzzer's
#       seed 1 and a fixed number of executions, so the same build runs the same inputs. Fails
#       if any target finds something.
#
# Every run stops an input after 10 seconds (-timeout=10) or 2 GiB (-rss_limit_mb=2048). The
# targets are built once, with the nightly toolchain (installed with cargo-fuzz if missing),
# optimised with debug assertions and overflow checks, and no sanitizer: shrew has no unsafe
# code for AddressSanitizer to watch, and without it a run is several times faster.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(spirv_reader ir_text piglit_parser pipeline)
# The CI slice's executions per target: about 2.5 minutes in all on two cores.
declare -A CI_RUNS=([spirv_reader]=100000 [ir_text]=200000 [piglit_parser]=300000 [pipeline]=40000)

targets=()
seconds=600
jobs=1
ci=false
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) ci=true ;;
        --seconds) seconds="$2"; shift ;;
        --jobs) jobs="$2"; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *)
            if [[ ! " ${ALL_TARGETS[*]} " == *" $1 "* ]]; then
                echo "fuzz.sh: unknown target $1 (targets: ${ALL_TARGETS[*]})" >&2
                exit 2
            fi
            targets+=("$1")
            ;;
    esac
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

fuzz_dir="$PWD/fuzz"
start=$SECONDS
cargo +nightly fuzz build --sanitizer none --debug-assertions --target-dir "$fuzz_dir/target"
echo "fuzz.sh: built in $((SECONDS - start))s"
bin="$fuzz_dir/target/x86_64-unknown-linux-gnu/release"

# The executions of a libFuzzer log (-print_final_stats=1), summed over its jobs' logs.
executions() {
    grep -ho 'stat::number_of_executed_units: [0-9]*' "$@" | awk '{n += $2} END {print n + 0}'
}

piglit=""
if ! $ci; then
    piglit="$(bash scripts/piglit.sh)"
fi
failed=()
for target in "${targets[@]}"; do
    artifacts="$fuzz_dir/artifacts/$target"
    logs="$fuzz_dir/logs/$target"
    mkdir -p "$artifacts"
    rm -rf "$logs"
    mkdir -p "$logs"
    if $ci; then
        corpus="$(mktemp -d)"
        python3 scripts/fuzz_corpus.py "$target" "$corpus"
        run=(-seed=1 "-runs=${CI_RUNS[$target]}")
    else
        corpus="$fuzz_dir/corpus/$target"
        python3 scripts/fuzz_corpus.py "$target" "$corpus" --piglit "$piglit"
        run=("-max_total_time=$seconds")
        [ "$jobs" = 1 ] || run+=("-jobs=$jobs" "-workers=$jobs")
    fi
    before=$(ls "$artifacts" | wc -l)
    target_start=$SECONDS
    status=0
    # With -jobs, libFuzzer writes each job's log into fuzz-N.log in the working directory.
    (cd "$logs" && "$bin/$target" "$corpus" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "-artifact_prefix=$artifacts/" "${run[@]}" >run.log 2>&1) || status=$?
    took=$((SECONDS - target_start))
    found=$(ls "$artifacts" | wc -l)
    echo "fuzz.sh: $target: $(executions "$logs"/*.log) executions in ${took}s," \
        "$(ls "$corpus" | wc -l) inputs in the corpus, exit status $status"
    if [ "$status" != 0 ] || [ "$found" != "$before" ]; then
        failed+=("$target")
        grep -h -A12 -E '^(==[0-9]+== ERROR|thread .* panicked|ALARM|SUMMARY)' "$logs"/*.log \
            | head -40 || true
        echo "fuzz.sh: $target: found something; the inputs are in $artifacts," \
            "the log in $logs"
    fi
    if $ci; then
        rm -rf "$corpus"
    fi
done
echo "fuzz.sh: done in $((SECONDS - start))s"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: findings in: ${failed[*]}" >&2
    exit 1
fi
