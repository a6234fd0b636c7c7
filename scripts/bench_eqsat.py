"""eqsat against the greedy rules over a shader corpus, per target.

usage: bench_eqsat.py PATH... [--shrew PATH] [--targets gen9,evergreen] [--jobs N]
                       [--memory-sample N --spv-dir DIR]

Runs `shrew corpus --json` over PATH (e.g. piglit's `tests` and `generated_tests`) with three
pipelines for each target:

- greedy: the default pipeline (the `algebraic` pass in its loop);
- eqsat:  the default pipeline with `eqsat` in place of `algebraic`, after `cse`;
- both:   the default pipeline with `algebraic,cse,eqsat` in the loop.

For each target it prints the pipeline time per stage (p50, p99, max; in process, so start-up
is not counted) and the target cost of every stage (`cost` in the JSON: what the stage's pure
instructions cost under the target's model), compared stage by stage with greedy: how many
stages are cheaper, equal and dearer, and the totals.

With `--memory-sample N` it also runs `shrew opt` in a process of its own on N modules of
`--spv-dir` (written by `shrew corpus --save-spirv DIR`) per pipeline and reports the peak
resident memory of each process (p50, p99, max), with `-p none` as the baseline.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

def pipelines(shrew):
    """The three pipelines, from the default one `shrew passes` prints."""
    listing = subprocess.run([shrew, "passes"], capture_output=True, text=True, check=True).stdout
    default = next(line.split(": ", 1)[1] for line in listing.splitlines()
                   if line.startswith("default: "))
    # The `algebraic` pass itself (not `algebraic-late`) and the `cse` after it. eqsat runs after
    # cse: blocks then hold the values other blocks share (a constant cse merged into a
    # dominating block is a root there), which a block-local e-graph cannot see otherwise.
    standalone = re.compile(r"(?<![\w-])algebraic,cse(?![\w-])")
    if not standalone.search(default):
        sys.exit("the default pipeline has no `algebraic,cse` to place eqsat at")
    return {
        "greedy": default,
        "eqsat": standalone.sub("cse,eqsat", default),
        "both": standalone.sub("algebraic,cse,eqsat", default),
    }


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))
    return values[k]


def corpus(shrew, paths, spec, target, jobs):
    command = [shrew, "corpus", "--json", "--jobs", str(jobs), "-p", spec, "--target", target, *paths]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    stages = {}
    for line in out.splitlines():
        record = json.loads(line)
        if "summary" in record or record.get("status") != "ok":
            continue
        stages[(record["index"], record["name"], record["stage"])] = record
    return stages


def peak_rss_kib(command):
    """Runs `command` under GNU time and returns its peak resident set in KiB. (The rusage of
    a child of this process would not do: Linux keeps the peak of the forked copy of this
    process across exec.)"""
    with tempfile.NamedTemporaryFile("r") as report:
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, *command],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return int(report.read().split()[-1]) if done.returncode == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--shrew", default="target/dist/shrew",
                        help="the binary to time: by default the shipped build "
                        "(`cargo build --profile dist -p shrew-cli`)")
    parser.add_argument("--targets", default="gen9,evergreen")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--memory-sample", type=int, default=0)
    parser.add_argument("--spv-dir")
    args = parser.parse_args()

    specs = pipelines(args.shrew)
    for target in args.targets.split(","):
        runs = {name: corpus(args.shrew, args.paths, spec, target, args.jobs)
                for name, spec in specs.items()}
        common = set.intersection(*(set(r) for r in runs.values()))
        print(f"# target {target}: {len(common)} stages translated by every pipeline")
        print(f"{'pipeline':<8} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9} {'total cost':>12} "
              f"{'vs greedy':>10} {'cheaper':>8} {'equal':>8} {'dearer':>8}")
        greedy_total = sum(runs["greedy"][k]["cost"] for k in common)
        for name, stages in runs.items():
            times = [stages[k]["pipeline_time"] * 1e3 for k in common]
            total = sum(stages[k]["cost"] for k in common)
            cheaper = sum(stages[k]["cost"] < runs["greedy"][k]["cost"] for k in common)
            dearer = sum(stages[k]["cost"] > runs["greedy"][k]["cost"] for k in common)
            change = 100.0 * (total - greedy_total) / greedy_total if greedy_total else 0.0
            print(f"{name:<8} {percentile(times, 50):9.3f} {percentile(times, 99):9.3f} "
                  f"{max(times):9.3f} {total:12d} {change:+9.2f}% {cheaper:8d} "
                  f"{len(common) - cheaper - dearer:8d} {dearer:8d}")
        worst = sorted(common, key=lambda k: runs["both"][k]["cost"] - runs["greedy"][k]["cost"])
        for k in worst[-3:][::-1]:
            delta = runs["both"][k]["cost"] - runs["greedy"][k]["cost"]
            if delta > 0:
                print(f"  both dearer than greedy by {delta}: #{k[0]} {k[1]} ({k[2]})")

        if args.memory_sample and args.spv_dir:
            files = sorted(os.path.join(args.spv_dir, f) for f in os.listdir(args.spv_dir)
                           if f.endswith(".spv"))
            random.Random(1).shuffle(files)
            files = files[:args.memory_sample]
            for name, spec in [("none", "none"), *specs.items()]:
                peaks = [p for f in files
                         if (p := peak_rss_kib([args.shrew, "opt", "-p", spec, "--target", target, f]))]
                print(f"peak RSS {name:<7} over {len(peaks)} modules: p50 {percentile(peaks, 50) / 1024:.1f} MiB, "
                      f"p99 {percentile(peaks, 99) / 1024:.1f} MiB, max {max(peaks) / 1024:.1f} MiB")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
