#!/usr/bin/env python3
"""Compares shrew's kernels with Mesa 24.0.3's figures for the same piglit tests.

Input: the JSON lines of `shrew corpus --json --target gen9 ...` or `--target evergreen ...`
over piglit tests, and the anchor file (../shared/anchors/mesa-24.0.3-piglit-dev.jsonl).

- Gen9: for fragment shaders at SIMD8 and SIMD16 and vertex shaders at SIMD8, how many kernels
  each side compiled, and over the tests both compiled: the sums of instructions and cycles,
  their ratio to Mesa's, and how many kernels are better, equal or worse than Mesa's (helped /
  hurt in shader-db's terms), plus the kernels that spill where Mesa's do not, and the sums
  without them.
- Evergreen: for fragment and vertex shaders, the same over ALU groups, dwords and GPRs.

    python3 scripts/compare_mesa.py /tmp/gen9.jsonl ../shared/anchors/mesa-24.0.3-piglit-dev.jsonl
    python3 scripts/compare_mesa.py /tmp/evergreen.jsonl ../shared/anchors/mesa-24.0.3-piglit-dev.jsonl
    python3 scripts/compare_mesa.py --worst 20 /tmp/gen9.jsonl ...   # and the 20 kernels furthest
                                                                     # above Mesa's count, each set
"""
import json
import sys

PIGLIT_ROOT = "usr/lib/x86_64-linux-gnu/piglit/"
STAGES = {"fragment": "FS", "vertex": "VS"}


def relative(name):
    path = name.split("#")[0]
    return path.split(PIGLIT_ROOT, 1)[-1]


def load_ours(path):
    """(test, stage, simd) -> summed figures of Gen kernels, (test, stage) -> R600 figures; and
    the keys that failed to compile."""
    ours, failed = {}, set()
    for line in open(path):
        d = json.loads(line)
        stage = STAGES.get(d.get("stage"))
        if stage is None:
            continue
        test = relative(d["name"])
        for k in d.get("kernels", []):
            # Gen kernels have a dispatch width; an R600 shader has none.
            if "simd" in k:
                key = (test, stage, k["simd"])
                if "error" in k:
                    failed.add(key)
                    continue
                acc = ours.setdefault(key, {"instructions": 0, "cycles": 0, "spills": 0})
                for f in acc:
                    acc[f] += k[f]
                continue
            key = (test, stage)
            if "error" in k:
                failed.add(key)
            else:
                acc = ours.setdefault(key, {"dwords": 0, "gprs": 0, "alu_groups": 0})
                # A test's shaders of one stage add up; GPRs are the most any needs.
                acc["dwords"] += k["dwords"]
                acc["alu_groups"] += k["alu_groups"]
                acc["gprs"] = max(acc["gprs"], k["gprs"])
    return ours, failed


def load_mesa(path):
    gen, evergreen = {}, {}
    for line in open(path):
        d = json.loads(line)
        for k in d.get("gen9") if isinstance(d.get("gen9"), list) else []:
            gen[(d["test"], k.get("stage"), k["simd"])] = k
        for k in d.get("evergreen") if isinstance(d.get("evergreen"), list) else []:
            evergreen[(d["test"], k.get("stage"))] = k
    return gen, evergreen


def change(ours, theirs):
    return f"{100 * (ours / max(theirs, 1) - 1):+.1f}%"


def compare_gen(ours, failed, mesa, worst):
    for stage, simd in (("FS", 8), ("FS", 16), ("VS", 8)):
        keys = [k for k in mesa if k[1:] == (stage, simd)]
        both = [k for k in keys if k in ours and k not in failed]
        helped = sum(ours[k]["instructions"] < mesa[k]["inst"] for k in both)
        hurt = sum(ours[k]["instructions"] > mesa[k]["inst"] for k in both)
        spilling = [k for k in both if ours[k]["spills"] > 0 and mesa[k]["spills"] == 0]
        print(
            f"{stage} SIMD{simd}: Mesa {len(keys)} kernels, shrew compiled {len(both)} of them; "
            f"{gen_totals(both, ours, mesa)}; "
            f"fewer instructions {helped}, more {hurt}, equal {len(both) - helped - hurt}; "
            f"spills where Mesa has none: {len(spilling)}"
        )
        if spilling:
            rest = [k for k in both if k not in spilling]
            print(f"  without those {len(spilling)}: {gen_totals(rest, ours, mesa)}")
        list_worst(both, lambda k: (ours[k]["instructions"], mesa[k]["inst"]), worst)


def list_worst(keys, figures, count):
    """The `count` keys whose figure is furthest above Mesa's: ours, Mesa's, the test."""
    excess = sorted(keys, key=lambda k: figures(k)[1] - figures(k)[0])[:count]
    for k in excess:
        a, b = figures(k)
        if a > b:
            print(f"    {a:6} vs {b:6} ({change(a, b)})  {k[0]}")


def gen_totals(keys, ours, mesa):
    """The sums of instructions and cycles over `keys`, ours against Mesa's."""
    parts = []
    for name, theirs_name in (("instructions", "inst"), ("cycles", "cycles")):
        a = sum(ours[k][name] for k in keys)
        b = sum(mesa[k][theirs_name] for k in keys)
        parts.append(f"{name} {a} vs {b} ({change(a, b)})")
    return ", ".join(parts)


def compare_evergreen(ours, failed, mesa, worst):
    for stage in ("FS", "VS"):
        compare_evergreen_stage(ours, failed, mesa, stage, worst)


def compare_evergreen_stage(ours, failed, mesa, stage, worst):
    keys = [k for k in mesa if k[1] == stage and "error" not in mesa[k]]
    both = [k for k in keys if k in ours and k not in failed]
    print(f"Evergreen {stage}: Mesa {len(keys)} shaders, shrew compiled {len(both)} of them")
    for name, theirs_name in (("alu_groups", "alu_groups"), ("dwords", "dw"), ("gprs", "gprs")):
        a = sum(ours[k][name] for k in both)
        b = sum(mesa[k][theirs_name] for k in both)
        fewer = sum(ours[k][name] < mesa[k][theirs_name] for k in both)
        more = sum(ours[k][name] > mesa[k][theirs_name] for k in both)
        print(
            f"  {name}: {a} vs {b} ({change(a, b)}); fewer {fewer}, more {more}, "
            f"equal {len(both) - fewer - more}"
        )
        list_worst(both, lambda k: (ours[k][name], mesa[k][theirs_name]), worst)


def main():
    args = sys.argv[1:]
    worst = 0
    if args[:1] == ["--worst"]:
        worst, args = int(args[1]), args[2:]
    ours, failed = load_ours(args[0])
    gen, evergreen = load_mesa(args[1])
    if any(len(k) == 3 for k in ours):
        compare_gen(ours, failed, gen, worst)
    if any(len(k) == 2 for k in ours):
        compare_evergreen(ours, failed, evergreen, worst)


if __name__ == "__main__":
    main()
