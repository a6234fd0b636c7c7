"""shrew against SPIRV-Tools on the same SPIR-V modules, one process per module for both.

usage: bench_frontend.py SPV_DIR [--shrew PATH] [--sample N] [--optimize]

SPV_DIR holds `.spv` modules, e.g. those `shrew corpus --save-spirv SPV_DIR` writes for the
piglit corpus.

- Without `--optimize` (the front end): `shrew verify FILE` (parse, translate, verify) against
  `spirv-opt --strip-debug FILE -o /dev/null` (SPIRV-Tools' parse, validation and write).
- With `--optimize` (the mid-end): `shrew opt -p default FILE` (translate, optimize, print the
  IR) against `spirv-opt -O FILE -o /dev/null`. Also prints the total IR instructions before and
  after the default pipeline.

Both also report shrew's in-process time (`shrew corpus --json --jobs 1`). The per-process runs
alternate file by file, so machine noise hits both tools alike, and each tool's start-up
(`--version`) is printed. Figures are throughput (modules/s), the median per module, and the
ratios of the medians and of the totals.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(command):
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, done.returncode


def report(label, times):
    total = sum(times)
    median = statistics.median(times)
    print(f"{label:<34} {len(times):>6} modules  {len(times) / total:>10.1f} modules/s  "
          f"median {median * 1e3:8.3f} ms  total {total:8.2f} s")
    return total, median


def corpus(shrew, directory, pipeline):
    run = subprocess.run([shrew, "corpus", "--json", "--jobs", "1", "-p", pipeline, directory],
                         capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return [r for r in rows if "summary" not in r], next(r["summary"] for r in rows if "summary" in r)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spv_dir")
    parser.add_argument("--shrew", default="target/dist/shrew",
                        help="the binary to time: by default the shipped build "
                        "(`cargo build --profile dist -p shrew-cli`)")
    parser.add_argument("--sample", type=int, default=0,
                        help="use every k-th module so that about N are measured (0: all)")
    parser.add_argument("--optimize", action="store_true",
                        help="compare the default pipeline with spirv-opt -O")
    args = parser.parse_args()

    files = sorted(os.path.join(args.spv_dir, f) for f in os.listdir(args.spv_dir)
                   if f.endswith(".spv"))
    if args.sample and len(files) > args.sample:
        files = files[::len(files) // args.sample]
    if not files:
        sys.exit(f"no .spv files in {args.spv_dir}")

    pipeline = "default" if args.optimize else "none"
    with tempfile.TemporaryDirectory() as chosen:
        for f in files:
            os.symlink(os.path.abspath(f), os.path.join(chosen, os.path.basename(f)))
        rows, summary = corpus(args.shrew, chosen, pipeline)
        if args.optimize:
            _, unoptimized = corpus(args.shrew, chosen, "none")
    in_process = [r["time"] for r in rows]

    if args.optimize:
        shrew_command = lambda f: [args.shrew, "opt", "-p", "default", f]
        peer_command = lambda f: ["spirv-opt", "-O", f, "-o", os.devnull]
        shrew_label, peer_label = "shrew opt -p default, per process", "spirv-opt -O, per process"
    else:
        shrew_command = lambda f: [args.shrew, "verify", f]
        peer_command = lambda f: ["spirv-opt", "--strip-debug", f, "-o", os.devnull]
        shrew_label, peer_label = "shrew verify, per process", "spirv-opt --strip-debug, per proc."

    startup = {name: statistics.median(timed(command)[0] for _ in range(20))
               for name, command in [("shrew", [args.shrew, "--version"]),
                                     ("spirv-opt", ["spirv-opt", "--version"])]}
    shrew_times, peer_times = [], []
    peer_failures = 0
    for f in files:
        shrew_times.append(timed(shrew_command(f))[0])
        seconds, code = timed(peer_command(f))
        peer_times.append(seconds)
        peer_failures += code != 0

    print(f"{len(files)} modules from {args.spv_dir}: shrew translated {summary['ok']}, "
          f"spirv-opt failed on {peer_failures}")
    if args.optimize:
        before, after = unoptimized["instructions"], summary["instructions"]
        print(f"IR instructions: {before} before, {after} after the default pipeline "
              f"({100.0 * (after - before) / before:+.1f}%)")
    print(f"process start-up (--version, median of 20): shrew {startup['shrew'] * 1e3:.3f} ms, "
          f"spirv-opt {startup['spirv-opt'] * 1e3:.3f} ms")
    report("shrew, in process", in_process)
    shrew_total, shrew_median = report(shrew_label, shrew_times)
    peer_total, peer_median = report(peer_label, peer_times)
    print(f"per process, shrew / spirv-opt: median {shrew_median / peer_median:.3f}, "
          f"total {shrew_total / peer_total:.3f}")
    work_shrew = shrew_median - startup["shrew"]
    work_peer = peer_median - startup["spirv-opt"]
    print(f"medians less start-up: shrew {work_shrew * 1e3:.3f} ms, spirv-opt "
          f"{work_peer * 1e3:.3f} ms (ratio {work_shrew / work_peer:.3f})")


if __name__ == "__main__":
    main()
