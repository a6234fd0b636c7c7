#!/usr/bin/env python3
"""The Python package against the CLI, side by side on the same shaders: per shader, loading,
the default pipeline and a compile for a target in process (`shrew.load(...).compile(...)`)
against one `shrew compile FILE --target T` process each; and steps per second of the
Gymnasium environment with random actions. Prints times per shader and their ratio (the
machines are noisy: compare ratios).

    python scripts/bench_python.py --shaders 100 --target gen9   # in the package's venv
"""

import argparse
import os
import subprocess
import time
from pathlib import Path

import gymnasium as gym

import shrew

ROOT = Path(__file__).resolve().parents[1]
PIGLIT = Path(
    os.environ.get("SHREW_PIGLIT")
    or Path.home() / ".cache/shrew/piglit/root/usr/lib/x86_64-linux-gnu/piglit"
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default=str(PIGLIT / "tests/spec/glsl-1.10/execution"))
    parser.add_argument("--shaders", type=int, default=100)
    parser.add_argument("--target", default="gen9")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--bin", default=str(ROOT / "target/release/shrew"))
    args = parser.parse_args()
    files = []
    for path in sorted(Path(args.set).rglob("*.shader_test")):
        try:
            shrew.load(path).compile(args.target)
        except shrew.ShrewError:
            continue
        files.append(path)
        if len(files) == args.shaders:
            break
    # Warm both (glslang's SPIR-V cache, the page cache) before timing.
    for path in files:
        subprocess.run([args.bin, "compile", str(path), "--target", args.target],
                       capture_output=True, check=True)
    start = time.perf_counter()
    for path in files:
        shrew.load(path).compile(args.target).statistics
    in_process = (time.perf_counter() - start) / len(files)
    start = time.perf_counter()
    for path in files:
        subprocess.run([args.bin, "compile", str(path), "--target", args.target],
                       capture_output=True, check=True)
    per_process = (time.perf_counter() - start) / len(files)
    shaders = [shrew.load(path) for path in files]
    start = time.perf_counter()
    for shader in shaders:
        shader.optimize("default")[0].compile(args.target, pipeline="none")
    loaded = (time.perf_counter() - start) / len(files)
    print(f"{len(files)} shaders of {args.set} on {args.target}:")
    print(f"  CLI, one process per shader:      {per_process * 1e3:8.2f} ms/shader")
    print(f"  in process, load+optimize+compile: {in_process * 1e3:8.2f} ms/shader "
          f"({per_process / in_process:.1f}x faster)")
    print(f"  in process, optimize+compile:      {loaded * 1e3:8.2f} ms/shader "
          f"({per_process / loaded:.1f}x faster)")
    env = gym.make("shrew/PassOrdering-v0", dataset=[str(f) for f in files], target=args.target,
                   max_steps=32)
    env.action_space.seed(1)
    env.reset(seed=1)
    start, steps = time.perf_counter(), 0
    while steps < args.steps:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    print(f"  environment: {steps / (time.perf_counter() - start):.0f} steps/s "
          "(random actions, resets included)")


if __name__ == "__main__":
    main()
