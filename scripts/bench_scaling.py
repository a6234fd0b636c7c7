"""How compile time grows with the shape of a shader: per shape, stage and pass.

usage: bench_scaling.py [--shrew PATH] [--targets gen9,evergreen] [--shapes a,b,...]
                        [--sizes 1000,2000,4000,8000] [--timeout SECONDS] [--json FILE]
                        [--work]

Generates fragment shaders of each shape at growing sizes (the size is the number of IR
instructions the front end makes, which the generator aims at):

- chain:     one long dependency chain, `x = x * 1.0001 + 0.5` over and over;
- live:      many values live at once, each a sine of the input, summed at the end;
- ifs:       `if`s nested in one another;
- loops:     loops (bounds from a uniform, so never unrolled) nested in one another;
- switch:    one `switch` with many cases;
- ternaries: a ternary nested in the false arm of the one before;
- calls:     a chain of small functions, each calling the one before;
- rotation:  many variables a loop carries, rotated by one place each iteration (one large
  parallel copy at the loop's back edge, every copy on one cycle);
- deep-ifs, deep-loops: `if`s and counted loops nested in one another, written as IR text
  (`.shrew`): GLSL cannot nest deeper than about 1,250 levels (glslang's parser overflows).

For each shader it times the front end (`shrew verify`: glslang, the SPIR-V reader, the
verifier) and `shrew compile --stats` for each target (the default pipeline, the backend
pipeline and the backend's own passes, each pass's time from `--stats`; "backend" is what the
compile takes beyond its passes: lowering to the backend IR, allocation, emission where they are
not passes, and the process). It prints, per shape, each stage's time at every size and the
growth exponent between the last two sizes (log of the time ratio over log of the size ratio:
1 is linear, 2 quadratic), the stages whose exponent is above 1.2 first. A run that exceeds the
timeout or fails is reported as such (a budget must never reject a valid shader).

With `--work` it counts work instead of time: each compile runs under valgrind's callgrind,
which counts the instructions the process executes, the same on an idle machine and a loaded
one. It prints, per shape and target, the whole compile's instructions at every size, and the
functions (inclusive of what they call, at least 1% of the compile) whose work grows fastest,
with their exponents. A time exponent above 1.2 whose work exponent is near 1 comes from the
memory hierarchy (a working set past the caches, the allocator), not from the algorithm. Under
callgrind a compile runs about 50 times slower: take sizes up to about 32,000.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HEADER = """#version 450
layout(location = 0) in vec4 v;
layout(location = 0) out vec4 color;
layout(binding = 0, std140) uniform Block { vec4 u; int n; };
"""

# Each shape: a function from a count to GLSL, and roughly how many IR instructions one unit
# of the count makes (to aim at the sizes asked for; the measured size is what is reported).
SHAPES = {}


def shape(per_unit, suffix="frag"):
    def register(generate):
        SHAPES[generate.__name__.replace("_", "-")] = (generate, per_unit, suffix)
        return generate
    return register


@shape(per_unit=2)
def chain(count):
    body = "".join("    x = x * 1.0001 + 0.5;\n" for _ in range(count))
    return f"{HEADER}void main() {{\n    float x = v.x;\n{body}    color = vec4(x);\n}}\n"


@shape(per_unit=4)
def live(count):
    values = "".join(f"    float a{k} = sin(v.x + {k}.0);\n" for k in range(count))
    total = " + ".join(f"a{k}" for k in reversed(range(count)))
    return f"{HEADER}void main() {{\n{values}    color = vec4({total});\n}}\n"


@shape(per_unit=5)
def ifs(count):
    opens = "".join(f"    if (v.x > {k}.0 * u.x) {{ x = x * u.y + {k}.0;\n" for k in range(count))
    return (f"{HEADER}void main() {{\n    float x = v.y;\n{opens}" + "    }\n" * count
            + "    color = vec4(x);\n}\n")


@shape(per_unit=8)
def loops(count):
    opens = "".join(f"    for (int i{k} = 0; i{k} < n; i{k}++) {{ x = x * u.y + 1.0;\n"
                    for k in range(count))
    return (f"{HEADER}void main() {{\n    float x = v.y;\n{opens}" + "    }\n" * count
            + "    color = vec4(x);\n}\n")


@shape(per_unit=4)
def switch(count):
    cases = "".join(f"    case {k}: x = v.y * {k}.0 + u.z; break;\n" for k in range(count))
    return (f"{HEADER}void main() {{\n    float x = 0.0;\n    switch (int(v.x * 1000.0)) {{\n"
            f"{cases}    default: x = u.w; break;\n    }}\n    color = vec4(x);\n}}\n")


@shape(per_unit=4)
def ternaries(count):
    expression = "u.w"
    for k in reversed(range(count)):
        expression = f"(v.x > {k}.0 * u.x ? v.y * {k}.0 : {expression})"
    return f"{HEADER}void main() {{\n    color = vec4({expression});\n}}\n"


@shape(per_unit=13)
def rotation(count):
    values = "".join(f"    float a{k} = v.x + {k}.0;\n" for k in range(count))
    rotate = "".join(f"        a{k} = a{k + 1};\n" for k in range(count - 1))
    total = "".join(f"    x = x * 0.5 + a{k};\n" for k in range(count))
    return (f"{HEADER}void main() {{\n{values}    for (int i = 0; i < n; i++) {{\n"
            f"        float first = a0;\n{rotate}        a{count - 1} = first;\n    }}\n"
            f"    float x = 0.0;\n{total}    color = vec4(x);\n}}\n")


@shape(per_unit=6)
def calls(count):
    functions = "float f0(float x) { return x * 1.0001 + 1.0; }\n"
    functions += "".join(f"float f{k}(float x) {{ return f{k - 1}(x) * 1.0001 + u.x; }}\n"
                         for k in range(1, count))
    return f"{HEADER}{functions}void main() {{\n    color = vec4(f{count - 1}(v.x));\n}}\n"


# Nesting GLSL cannot reach (glslang's parser overflows around 1,250 nested lines) is written
# as IR text: `x` is a variable the passes promote, `n` a uniform bound that keeps loops.
IR_HEADER = """shader fragment
struct Block { u: f32x4 offset 0, n: i32 offset 16 }
var shader_in f32x4 @v (location=0)
var ubo Block @Block (binding=0, desc_set=0)
var shader_out f32x4 @color (location=0)
var function_temp f32 @x
"""


def ir_main(variables, entry, blocks, last):
    """A `main` whose entry block sets `x` from the input and runs `entry` lines before jumping
    to `b1`; `blocks` follow; block `b<last>` writes `x` to the output and returns. Values are
    written `%name` here and numbered in the text."""
    text = "\n".join([
        IR_HEADER + variables, "entry fn main() {", "b0:",
        "    32 %x = deref_var @x", "    32 %v = deref_var @v", "    32 %block = deref_var @Block",
        "    32 %u = deref_struct %block.u", "    32 %n_ref = deref_struct %block.n",
        "    32 %zero = load_const (0)", "    32 %one = load_const (1)",
        "    32 %v1 = deref_array %v[%one]", "    32 %u1 = deref_array %u[%one]",
        "    32 %in = load_deref %v1", "    store_deref %x, %in (write_mask=x)",
        *entry, "    jump b1", *blocks, f"b{last}:", "    32 %out = load_deref %x",
        "    32x4 %out4 = vec4 %out, %out, %out, %out", "    32 %color = deref_var @color",
        "    store_deref %color, %out4 (write_mask=xyzw)", "    return", "}", ""])
    numbers = {}
    return re.sub(r"%([a-z]\w*)", lambda m: f"%{numbers.setdefault(m.group(1), len(numbers))}",
                  text)


def update_x(k):
    """`x = x * u.y + k`."""
    return [f"    32 %a{k} = load_deref %x", f"    32 %uy{k} = load_deref %u1",
            f"    32 %k{k} = load_const ({k}.0)", f"    32 %m{k} = fmul %a{k}, %uy{k}",
            f"    32 %s{k} = fadd %m{k}, %k{k}", f"    store_deref %x, %s{k} (write_mask=x)"]


@shape(per_unit=9, suffix="shrew")
def deep_ifs(count):
    """`if (x > k) { x = x * u.y + k; ... }` nested `count` deep."""
    blocks = []
    merge = lambda k: 2 * count + 1 - k  # noqa: E731 (the merge of level k)
    for k in range(count):
        blocks += [f"b{k + 1}: selection merge=b{merge(k)}", *update_x(k),
                   f"    1 %c{k} = flt %k{k}, %s{k}", f"    branch %c{k}, b{k + 2}, b{merge(k)}"]
    blocks += [f"b{count + 1}:", f"    jump b{merge(count - 1)}"]
    blocks += [line for k in reversed(range(count))
               for line in (f"b{merge(k)}:", f"    jump b{merge(k) + 1}")]
    return ir_main("", [], blocks, 2 * count + 2)


@shape(per_unit=14, suffix="shrew")
def deep_loops(count):
    """`for (int i = 0; i < n; i++) { x = x * u.y + k; ... }` nested `count` deep."""
    variables = "".join(f"var function_temp i32 @i{k}\n" for k in range(count))
    entry = [f"    32 %i{k} = deref_var @i{k}" for k in range(count)]
    entry.append("    store_deref %i0, %zero (write_mask=x)")
    base = 3 * count + 1
    cont = lambda k: base + 2 * (count - 1 - k)  # noqa: E731 (level k's continue block)
    blocks = []
    for k in range(count):
        header = 3 * k + 1
        inner = (f"    store_deref %i{k + 1}, %zero (write_mask=x)", f"    jump b{header + 3}") \
            if k + 1 < count else (f"    jump b{cont(k)}",)
        blocks += [f"b{header}: loop merge=b{cont(k) + 1} continue=b{cont(k)}",
                   f"    jump b{header + 1}", f"b{header + 1}:",
                   f"    32 %i{k}_now = load_deref %i{k}", f"    32 %n{k} = load_deref %n_ref",
                   f"    1 %c{k} = ilt %i{k}_now, %n{k}",
                   f"    branch %c{k}, b{header + 2}, b{cont(k) + 1}",
                   f"b{header + 2}:", *update_x(k), *inner]
    for k in reversed(range(count)):
        after = f"b{cont(k - 1)}" if k > 0 else f"b{base + 2 * count}"
        blocks += [f"b{cont(k)}:", f"    32 %i{k}_last = load_deref %i{k}",
                   f"    32 %i{k}_next = iadd %i{k}_last, %one",
                   f"    store_deref %i{k}, %i{k}_next (write_mask=x)", f"    jump b{3 * k + 1}",
                   f"b{cont(k) + 1}:", f"    jump {after}"]
    return ir_main(variables, entry, blocks, base + 2 * count)


INSTRUCTION = re.compile(r"^\s+(\d+(x\d+)? %\d+ = |store_|jump|branch|return|discard|demote|"
                         r"terminate|call |barrier|emit)")


def instructions(shrew, path, timeout):
    """The IR instructions the front end makes of `path`, and its time (`shrew verify`)."""
    start = time.perf_counter()
    verify = subprocess.run([shrew, "verify", path], capture_output=True, text=True,
                            timeout=timeout)
    seconds = time.perf_counter() - start
    if verify.returncode != 0:
        raise RuntimeError(f"front end: {verify.stderr.strip()[:300]}")
    printed = subprocess.run([shrew, "fmt", path], capture_output=True, text=True,
                             timeout=timeout, check=True).stdout
    return sum(1 for line in printed.splitlines() if INSTRUCTION.match(line)), seconds


PASS_LINE = re.compile(r"^([\w-]+): (\d+) runs, \d+ with progress, ([\d.]+) ms")


def compile_times(shrew, path, target, timeout):
    """Each pass's time (seconds) in one compile for `target`, and "backend": the rest."""
    start = time.perf_counter()
    run = subprocess.run([shrew, "compile", path, "--target", target, "--stats"],
                         capture_output=True, text=True, timeout=timeout)
    total = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip().splitlines()[-1][:300] if run.stderr else "failed")
    times = {}
    for line in run.stderr.splitlines():
        match = PASS_LINE.match(line)
        if match:
            times[match.group(1)] = float(match.group(3)) / 1000
    times["backend"] = max(total - sum(times.values()), 0.0)
    return times


def compile_work(shrew, path, target, timeout, directory):
    """The instructions one compile for `target` executes, inclusive per function (callgrind),
    with the whole process's under "total"."""
    out = os.path.join(directory, "callgrind.out")
    run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                          shrew, "compile", path, "--target", target],
                         capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        # The last line of shrew's, not valgrind's (`==pid== ...`).
        ours = [line for line in run.stderr.splitlines() if not line.startswith("==")]
        raise RuntimeError(ours[-1][:300] if ours else "failed")
    listing = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                             capture_output=True, text=True, check=True).stdout
    work = {}
    for line in listing.splitlines():
        match = ANNOTATED.match(line)
        if match:
            count, function = int(match.group(1).replace(",", "")), match.group(2)
            if function == "PROGRAM TOTALS":
                work["total"] = count
            else:
                # `file:function [object]`: the function, its file unknown for Rust code. A
                # function called recursively (`name'2`) has its inclusive count summed over
                # its levels of recursion, which says nothing: left out.
                name = re.sub(r"^\S*?:(?=\S)", "", function.split(" [")[0], count=1)
                if not re.search(r"'\d+$", name):
                    work[name] = max(work.get(name, 0), count)
    os.remove(out)
    return work


ANNOTATED = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$")


def exponent(size_a, time_a, size_b, time_b):
    """The growth exponent between two measurements (None when the times are too small to
    tell: the larger under 5 ms, where the machine's noise decides)."""
    if time_b < 5e-3 or time_a <= 0 or size_b == size_a:
        return None
    return math.log(time_b / time_a) / math.log(size_b / size_a)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shrew", default="target/release/shrew")
    parser.add_argument("--targets", default="gen9,evergreen")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--sizes", default="1000,2000,4000,8000",
                        help="IR instructions to aim at (at least two sizes)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--work", action="store_true",
                        help="count instructions executed (callgrind) instead of time")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    targets = args.targets.split(",")
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for name in args.shapes.split(","):
            generate, per_unit, suffix = SHAPES[name]
            rows = []  # (size, {stage: seconds}) or (size, error)
            for aimed in sizes:
                path = os.path.join(directory, f"{name}-{aimed}.{suffix}")
                with open(path, "w") as out:
                    out.write(generate(max(aimed // per_unit, 1)))
                try:
                    size, front_end = instructions(args.shrew, path, args.timeout)
                    stages = {} if args.work else {"front end": front_end}
                    for target in targets:
                        measured = (compile_work(args.shrew, path, target, args.timeout,
                                                 directory) if args.work else
                                    compile_times(args.shrew, path, target, args.timeout))
                        for stage, amount in measured.items():
                            stages[f"{target} {stage}"] = amount
                    rows.append((size, stages))
                except subprocess.TimeoutExpired:
                    rows.append((aimed, f"timeout after {args.timeout:.0f} s"))
                except (RuntimeError, subprocess.CalledProcessError) as error:
                    rows.append((aimed, f"error: {error}"))
                print(f"{name} {aimed}: {rows[-1][1] if isinstance(rows[-1][1], str) else 'ok'}",
                      file=sys.stderr, flush=True)
            results.append({"shape": name, "rows": [
                {"size": size, "stages" if isinstance(r, dict) else "error": r}
                for size, r in rows]})
            (report_work if args.work else report)(name, rows, targets)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)


def heading(title, rows):
    """Prints the shape's title and the sizes that failed; gives the measured rows, or None
    when fewer than two sizes were measured."""
    print(f"\n## {title}")
    for size, r in rows:
        if isinstance(r, str):
            print(f"  size {size}: {r}")
    measured = [(size, r) for size, r in rows if isinstance(r, dict)]
    return measured if len(measured) >= 2 else None


def report(name, rows, _targets):
    """The shape's table: each stage's time at every size and its last growth exponent,
    steepest first; stages under a millisecond everywhere are left out."""
    measured = heading(name, rows)
    if measured is None:
        return
    stages = sorted({stage for _, r in measured for stage in r})
    lines = []
    for stage in stages:
        times = [r.get(stage, 0.0) for _, r in measured]
        if max(times) < 1e-3:
            continue
        (size_a, _), (size_b, _) = measured[-2], measured[-1]
        growth = exponent(size_a, times[-2], size_b, times[-1])
        lines.append((growth if growth is not None else -1, stage, times))
    header = "  ".join(f"{size:>9}" for size, _ in measured)
    print(f"  {'stage':<34} {header}  exponent")
    for growth, stage, times in sorted(lines, reverse=True):
        cells = "  ".join(f"{t * 1000:>7.1f}ms" for t in times)
        mark = "" if growth <= 1.2 else "  <-- super-linear"
        shown = f"{growth:.2f}" if growth >= 0 else "-"
        print(f"  {stage:<34} {cells}  {shown}{mark}")


def report_work(name, rows, targets):
    """Per target: the whole compile's instructions at every size and their growth exponent,
    then the functions of at least 1% of the largest compile whose work grows fastest."""
    measured = heading(f"{name} (instructions executed)", rows)
    if measured is None:
        return
    (size_a, a), (size_b, b) = measured[-2], measured[-1]
    header = "  ".join(f"{size:>9}" for size, _ in measured)
    print(f"  {'compile':<60} {header}  exponent")
    for target in targets:
        total = f"{target} total"
        cells = "  ".join(f"{r.get(total, 0) / 1e6:>8.0f}M" for _, r in measured)
        growth = exponent(size_a, a.get(total, 0), size_b, b.get(total, 0))
        print(f"  {total:<60} {cells}  {growth:.2f}")
        steep = []
        for function, amount in b.items():
            if (function.startswith(f"{target} ") and function != total
                    and amount >= 0.01 * b[total] and a.get(function)):
                steep.append((exponent(size_a, a[function], size_b, amount), function))
        for growth, function in sorted(steep, reverse=True)[:5]:
            cells = "  ".join(f"{r.get(function, 0) / 1e6:>8.0f}M" for _, r in measured)
            mark = "" if growth <= 1.2 else "  <-- super-linear"
            print(f"    {function[len(target) + 1:][:58]:<58} {cells}  {growth:.2f}{mark}")


if __name__ == "__main__":
    main()
