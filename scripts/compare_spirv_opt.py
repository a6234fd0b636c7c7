#!/usr/bin/env python3
"""Compares two ways into one of shrew's backends on the same SPIR-V fragment shaders: shrew's
default mid-end pipeline, against `spirv-opt -O` followed by the backend with no mid-end
(`-p none`). For each dispatch width (Gen; an R600 chip has one variant, sized in dwords
rather than instructions) it prints, over the kernels both compiled, the sums of size and
cycles of each, their ratio, the geometric mean of the per-kernel cycle ratios, and how many
kernels the default pipeline makes smaller or larger (helped / hurt in shader-db's terms).

Input: a directory of SPIR-V modules, as `shrew corpus --save-spirv DIR` writes them:

    target/release/shrew corpus --save-spirv /tmp/spv $P/tests/spec/glsl-1.10/execution ...
    python3 scripts/compare_spirv_opt.py /tmp/spv [--target gen9|evergreen] [--jobs 2]

Modules spirv-opt rejects or takes longer than `--timeout` on, and kernels either side cannot compile, are counted apart.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

SHREW = os.path.join(os.path.dirname(__file__), "..", "target", "release", "shrew")


def optimize(src, dst, timeout):
    """Runs `spirv-opt -O`; gives whether it succeeded within `timeout` seconds (it loops on some
    modules: the unroller on piglit's nested loops)."""
    try:
        result = subprocess.run(
            ["spirv-opt", "-O", src, "-o", dst], capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return False
    return result.returncode == 0


def kernels(directory, target, pipeline):
    """(module file name, variant) -> (size, cycles) of the fragment kernels: on Gen the
    variant is the SIMD width and the size instructions; on R600 chips the variant is 0 and
    the size dwords (ALU groups give the cycles' share)."""
    out = subprocess.run(
        [SHREW, "corpus", "--json", "--target", target, "-p", pipeline, directory],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        d = json.loads(line)
        if d.get("stage") != "fragment":
            continue
        name = os.path.basename(d["name"].split("#")[0])
        for k in d.get("kernels", []):
            if "error" in k:
                continue
            # Gen kernels have a dispatch width and count instructions; R600 shaders dwords.
            if "simd" in k:
                found[(name, k["simd"])] = (k["instructions"], k["cycles"])
            else:
                found[(name, 0)] = (k["dwords"], k["cycles"])
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spirv_dir")
    parser.add_argument("--target", default="gen9")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=30, help="seconds per spirv-opt run")
    args = parser.parse_args()
    modules = sorted(f for f in os.listdir(args.spirv_dir) if f.endswith(".spv"))
    with tempfile.TemporaryDirectory() as optimized_dir:
        with ThreadPoolExecutor(args.jobs) as pool:
            ok = list(
                pool.map(
                    lambda f: optimize(
                        os.path.join(args.spirv_dir, f),
                        os.path.join(optimized_dir, f),
                        args.timeout,
                    ),
                    modules,
                )
            )
        rejected = ok.count(False)
        ours = kernels(args.spirv_dir, args.target, "default")
        peer = kernels(optimized_dir, args.target, "none")
    print(f"{len(modules)} modules, {rejected} rejected by spirv-opt -O or timed out")
    gen = args.target.startswith("gen")
    size = "instructions" if gen else "dwords"
    for simd in (8, 16) if gen else (0,):
        variant = f"SIMD{simd}" if gen else args.target
        both = sorted(k for k in ours if k[1] == simd and k in peer)
        only_one = sum(1 for k in set(ours) ^ set(peer) if k[1] == simd)
        if not both:
            print(f"{variant}: no kernel compiled both ways")
            continue
        inst = [sum(side[k][0] for k in both) for side in (ours, peer)]
        cyc = [sum(side[k][1] for k in both) for side in (ours, peer)]
        # Geometric mean of the per-kernel cycle ratios: the sums are dominated by the few
        # kernels whose loops the static model weighs exponentially.
        log_ratio = sum(math.log(max(ours[k][1], 1) / max(peer[k][1], 1)) for k in both)
        cycle_geomean = math.exp(log_ratio / len(both))
        helped = sum(ours[k][0] < peer[k][0] for k in both)
        hurt = sum(ours[k][0] > peer[k][0] for k in both)
        print(
            f"{variant}: {len(both)} fragment kernels ({only_one} compiled one way only); "
            f"{size} {inst[0]} (-p default) vs {inst[1]} (spirv-opt -O, -p none): "
            f"{100.0 * (inst[0] / inst[1] - 1):+.1f}%; cycles {cyc[0]} vs {cyc[1]}: "
            f"{100.0 * (cyc[0] / cyc[1] - 1):+.1f}% (geometric mean of the ratios "
            f"{100.0 * (cycle_geomean - 1):+.1f}%); default smaller in {helped}, larger in {hurt}"
        )


if __name__ == "__main__":
    sys.exit(main())
