"""The oracle's speed: the interpreter and the emulators on a fixed set of piglit tests, and the
whole-suite time of the piglit sets CI runs, for one shrew binary or two side by side.

usage: bench_oracle.py PIGLIT [--shrew PATH] [--baseline PATH] [--suites] [--jobs N]

PIGLIT is piglit's directory (`bash scripts/piglit.sh` prints it). The fixed set is
`tests/benches/oracle_tests.txt` (paths under PIGLIT: full-window draws, loops, arrays, 64-bit
conversions). Each configuration runs it with `shrew piglit --json --jobs 1`:

- `interpreter`: `-p none` (the oracle itself);
- `gen9`: `-p default --target gen9` (the Gen emulator);
- `evergreen`: `-p default --target evergreen` (the R600-family emulator).

For each it prints the tests that pass, the time, the executed lane-instructions (one
instruction for one invocation or channel, which `shrew piglit --json` reports per test as
`lane_instructions`) and lane-instructions per second, of the whole run and of the time spent
executing (`execution_time`: in the interpreter's and emulators' runs, without parsing,
compiling and rasterizing). A baseline that does not report its execution time is given an
estimate: its whole time less what is not execution in the newer binary's run (the same work
when the two differ only in their executors). `--suites` also times the CI sets (the
executable piglit directories of `scripts/test.sh`) per configuration, with the default number
of jobs, in every configuration `scripts/test.sh` runs (the interpreter without and with the
default pipeline, five emulators). With `--baseline`, every figure is also taken with that binary (an older build; it may
not report lane-instructions) and the ratio of the times is printed. Runs alternate between the
binaries, so machine noise hits both alike.
"""
import argparse
import json
import os
import subprocess
import sys
import time

CONFIGURATIONS = {
    "interpreter": ["-p", "none"],
    "default": ["-p", "default"],
    "gen9": ["-p", "default", "--target", "gen9"],
    "evergreen": ["-p", "default", "--target", "evergreen"],
    "r600": ["-p", "default", "--target", "r600"],
    "r700": ["-p", "default", "--target", "r700"],
    "cayman": ["-p", "default", "--target", "cayman"],
}

# The executable subsets `scripts/test.sh` runs.
CI_SETS = [
    "generated_tests/spec/glsl-1.10/execution",
    "generated_tests/spec/glsl-1.20/execution",
    "tests/spec/glsl-1.10/execution",
    "tests/spec/glsl-1.20/execution",
    "tests/shaders/ssa",
]


def run(shrew, configuration, paths, jobs):
    """Runs `shrew piglit --json`: wall time, passes, tests, lane-instructions and execution
    time (None where not reported)."""
    command = [shrew, "piglit", "--json", *CONFIGURATIONS[configuration], *paths]
    if jobs:
        command[3:3] = ["--jobs", str(jobs)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    took = time.perf_counter() - start
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    tests = [r for r in rows if "path" in r]
    if not tests:
        sys.exit(f"{' '.join(command)} ran no test:\n{done.stderr}")
    passed = sum(r["status"] == "pass" for r in tests)
    lanes = executing = None
    if all("lane_instructions" in r for r in tests):
        lanes = sum(r["lane_instructions"] for r in tests)
    if all("execution_time" in r for r in tests):
        executing = sum(r["execution_time"] for r in tests)
    return took, passed, len(tests), lanes, executing


def line(label, took, passed, total, lanes, executing):
    rate = ""
    if lanes:
        rate = f"{lanes / 1e6:10.1f} M lane-instr  {lanes / took / 1e6:8.1f} M/s  " \
               f"{took / lanes * 1e9:7.1f} ns each"
    print(f"  {label:<10} {passed:>4}/{total:<4} pass  {took:8.2f} s  {rate}")
    if executing is not None:
        each = f"  {executing / lanes * 1e9:7.1f} ns per lane-instruction" if lanes else ""
        print(f"  {'':<10} executing {executing:8.2f} s{each}")


def compare(binaries, configuration, paths, jobs):
    results = {name: run(path, configuration, paths, jobs) for name, path in binaries}
    for name, result in results.items():
        line(name, *result)
    if len(results) == 2:
        (_, new), (_, old) = results.items()
        print(f"  {'':<10} the baseline takes {old[0] / new[0]:.2f}x the time")
        # Execution time sums the jobs' times: comparable with the wall time with one job only.
        if jobs == 1 and new[4]:
            old_executing = old[4]
            estimate = old_executing is None
            if estimate:
                old_executing = old[0] - (new[0] - new[4])
            print(f"  {'':<10} the baseline takes {old_executing / new[4]:.2f}x the execution "
                  f"time{' (estimated)' if estimate else ''}")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("piglit")
    parser.add_argument("--shrew", default="target/release/shrew")
    parser.add_argument("--baseline", help="another shrew binary to compare with")
    parser.add_argument("--suites", action="store_true", help="also time the CI piglit sets")
    parser.add_argument("--jobs", type=int, help="jobs for the suites (default: shrew's)")
    args = parser.parse_args()
    binaries = [("shrew", args.shrew)]
    if args.baseline:
        binaries.append(("baseline", args.baseline))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "tests", "benches", "oracle_tests.txt")) as listing:
        fixed = [os.path.join(args.piglit, p.strip()) for p in listing if p.strip()]
    missing = [p for p in fixed if not os.path.exists(p)]
    if missing:
        sys.exit(f"not in {args.piglit}: {missing}")
    for configuration in ["interpreter", "gen9", "evergreen"]:
        print(f"fixed set ({len(fixed)} tests), {configuration}, one job:")
        compare(binaries, configuration, fixed, 1)
    if args.suites:
        sets = [os.path.join(args.piglit, s) for s in CI_SETS]
        totals = {name: 0.0 for name, _ in binaries}
        for configuration in CONFIGURATIONS:
            print(f"CI piglit sets, {configuration}:")
            for name, result in compare(binaries, configuration, sets, args.jobs).items():
                totals[name] += result[0]
        print("CI piglit sets, all configurations: " + ", ".join(
            f"{name} {total:.1f} s" for name, total in totals.items()))


if __name__ == "__main__":
    main()
