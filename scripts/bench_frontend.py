"""SPIR-V → IR translation throughput, side by side with `spirv-opt --strip-debug`.

usage: bench_frontend.py SPV_DIR [--shrew PATH] [--sample N]

SPV_DIR holds `.spv` modules, e.g. those `shrew corpus --save-spirv SPV_DIR` writes for the
piglit corpus. Three measurements over the same files, in one run:

- shrew in process: `shrew corpus --json --jobs 1` times each translation (parse, translate,
  verify) inside one process;
- shrew per process: `shrew verify FILE`, one process per file;
- spirv-opt per process: `spirv-opt --strip-debug FILE -o /dev/null`, one process per file
  (SPIRV-Tools' parse, validation and write; it cannot take several modules in one process).

The per-process runs alternate file by file so that machine noise hits both tools alike. The
start-up cost of each tool (`--version`) is printed so the per-process figures can be read.
Figures are throughput (modules/s) and the median per module, and the ratios between the tools.
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
    print(f"{label:<28} {len(times):>6} modules  {len(times) / total:>10.1f} modules/s  "
          f"median {median * 1e3:8.3f} ms")
    return len(times) / total, median


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spv_dir")
    parser.add_argument("--shrew", default="target/release/shrew")
    parser.add_argument("--sample", type=int, default=0,
                        help="use every k-th module so that about N are measured (0: all)")
    args = parser.parse_args()

    files = sorted(os.path.join(args.spv_dir, f) for f in os.listdir(args.spv_dir)
                   if f.endswith(".spv"))
    if args.sample and len(files) > args.sample:
        files = files[::len(files) // args.sample]
    if not files:
        sys.exit(f"no .spv files in {args.spv_dir}")

    with tempfile.TemporaryDirectory() as chosen:
        for f in files:
            os.symlink(os.path.abspath(f), os.path.join(chosen, os.path.basename(f)))
        run = subprocess.run([args.shrew, "corpus", "--json", "--jobs", "1", chosen],
                             capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    in_process = [r["time"] for r in rows if "summary" not in r]
    summary = next(r["summary"] for r in rows if "summary" in r)

    startup = {name: statistics.median(timed(command)[0] for _ in range(20))
               for name, command in [("shrew", [args.shrew, "--version"]),
                                     ("spirv-opt", ["spirv-opt", "--version"])]}
    shrew_process, spirv_opt_process = [], []
    spirv_opt_failures = 0
    for f in files:
        shrew_process.append(timed([args.shrew, "verify", f])[0])
        seconds, code = timed(["spirv-opt", "--strip-debug", f, "-o", os.devnull])
        spirv_opt_process.append(seconds)
        spirv_opt_failures += code != 0

    print(f"{len(files)} modules from {args.spv_dir}: shrew translated {summary['ok']}, "
          f"spirv-opt rejected {spirv_opt_failures}")
    print(f"process start-up (--version, median of 20): shrew {startup['shrew'] * 1e3:.3f} ms, "
          f"spirv-opt {startup['spirv-opt'] * 1e3:.3f} ms")
    rate_in, median_in = report("shrew, in process", in_process)
    rate_shrew, median_shrew = report("shrew verify, per process", shrew_process)
    rate_opt, median_opt = report("spirv-opt, per process", spirv_opt_process)
    print(f"per process: shrew is {rate_shrew / rate_opt:.2f}x spirv-opt's throughput "
          f"(median {median_opt / median_shrew:.2f}x)")
    work_shrew = median_shrew - startup["shrew"]
    work_opt = median_opt - startup["spirv-opt"]
    print(f"per process less start-up (medians): shrew {work_shrew * 1e3:.3f} ms, spirv-opt "
          f"{work_opt * 1e3:.3f} ms: shrew {work_opt / work_shrew:.2f}x faster")
    print(f"in process vs spirv-opt per process: {rate_in / rate_opt:.1f}x throughput "
          f"(median {median_opt / median_in:.1f}x)")


if __name__ == "__main__":
    main()
