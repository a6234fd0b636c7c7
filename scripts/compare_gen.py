#!/usr/bin/env python3
"""Compares shrew's Gen9 kernels with Mesa 24.0.3's figures for the same piglit tests.

Input: the JSON lines of `shrew corpus --json --target gen9 ...` over piglit tests, and the
anchor file (../shared/anchors/mesa-24.0.3-piglit-dev.jsonl). For fragment shaders at SIMD8 and
SIMD16 and vertex shaders at SIMD8 it prints how many kernels each side compiled, and over the tests both compiled: the sums of
instructions and cycles, their ratio to Mesa's, and how many kernels are better, equal or worse
than Mesa's (helped / hurt in shader-db's terms), plus the kernels that spill where Mesa's do
not, and the sums without them.

    python3 scripts/compare_gen.py /tmp/gen9.jsonl ../shared/anchors/mesa-24.0.3-piglit-dev.jsonl
"""
import json
import sys

PIGLIT_ROOT = "usr/lib/x86_64-linux-gnu/piglit/"
STAGES = {"fragment": "FS", "vertex": "VS"}


def relative(name):
    path = name.split("#")[0]
    return path.split(PIGLIT_ROOT, 1)[-1]


def main():
    ours_path, anchors_path = sys.argv[1], sys.argv[2]
    ours = {}  # (test, stage, simd) -> stats; a test's stages of one kind summed
    failed = {}
    for line in open(ours_path):
        d = json.loads(line)
        stage = STAGES.get(d.get("stage"))
        if "gen" not in d or stage is None:
            continue
        test = relative(d["name"])
        for k in d["gen"]:
            key = (test, stage, k["simd"])
            if "error" in k:
                failed[key] = k["error"]
                continue
            acc = ours.setdefault(key, {"instructions": 0, "cycles": 0, "spills": 0})
            for f in acc:
                acc[f] += k[f]
    mesa = {}
    for line in open(anchors_path):
        d = json.loads(line)
        kernels = d.get("gen9")
        if not isinstance(kernels, list):
            continue  # Mesa did not compile the test
        for k in kernels:
            mesa[(d["test"], k.get("stage"), k["simd"])] = k
    for stage, simd in (("FS", 8), ("FS", 16), ("VS", 8)):
        keys = [k for k in mesa if k[1:] == (stage, simd)]
        both = [k for k in keys if k in ours and k not in failed]
        helped = sum(ours[k]["instructions"] < mesa[k]["inst"] for k in both)
        hurt = sum(ours[k]["instructions"] > mesa[k]["inst"] for k in both)
        spilling = [k for k in both if ours[k]["spills"] > 0 and mesa[k]["spills"] == 0]
        print(
            f"{stage} SIMD{simd}: Mesa {len(keys)} kernels, shrew compiled {len(both)} of them; "
            f"{totals(both, ours, mesa)}; "
            f"fewer instructions {helped}, more {hurt}, equal {len(both) - helped - hurt}; "
            f"spills where Mesa has none: {len(spilling)}"
        )
        if spilling:
            rest = [k for k in both if k not in spilling]
            print(f"  without those {len(spilling)}: {totals(rest, ours, mesa)}")


def totals(keys, ours, mesa):
    """The sums of instructions and cycles over `keys`, ours against Mesa's."""
    ours_inst = sum(ours[k]["instructions"] for k in keys)
    mesa_inst = sum(mesa[k]["inst"] for k in keys)
    ours_cyc = sum(ours[k]["cycles"] for k in keys)
    mesa_cyc = sum(mesa[k]["cycles"] for k in keys)
    return (
        f"instructions {ours_inst} vs {mesa_inst} ({100 * (ours_inst / max(mesa_inst, 1) - 1):+.1f}%), "
        f"cycles {ours_cyc} vs {mesa_cyc} ({100 * (ours_cyc / max(mesa_cyc, 1) - 1):+.1f}%)"
    )

if __name__ == "__main__":
    main()
