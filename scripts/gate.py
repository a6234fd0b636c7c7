"""Checks a `shrew piglit --json` or `shrew corpus --json` run against a minimum rate.

usage: gate.py piglit|backend|corpus|relative RUN.jsonl MIN_PERCENT [--label WHAT]
       [--reference REFERENCE.jsonl]

`--label` names the run (the target, the pipeline, the sample) in every line the gate prints.

`backend` reads a `shrew piglit --target gen*|r600|r700|evergreen|cayman --json` run: tests with a fragment or vertex
shader the backend does not compile yet are counted apart (by reason), and the rate is that of
the tests it compiles, so any wrong pixel from compiled code fails the gate.

`relative` compares a target's run with the interpreter's run (`--reference`) over the files
of the target's run (the reference may cover more: a sample of one file in 100 is within one
in 20): the rate is the share of the tests the interpreter passes that pass on the target
too, and each of those that does not is listed with its reason. Tests the target skips because
its hardware lacks an extension they require (as a driver that does not expose it) are listed
apart and left out of the rate. Whatever the rate, a test the target compiles and runs to other
results than the interpreter's fails the gate.
"""
import argparse
import json
import re
import sys

parser = argparse.ArgumentParser(description="Checks a shrew run against a minimum pass rate.")
parser.add_argument("kind", choices=["piglit", "backend", "corpus", "relative"])
parser.add_argument("path")
parser.add_argument("minimum", type=float)
parser.add_argument("--label", default="")
parser.add_argument("--reference", help="the interpreter's run, for `relative`")
args = parser.parse_args()
kind, path, minimum = args.kind, args.path, args.minimum
name = f"{kind} ({args.label})" if args.label else kind
rows = [json.loads(line) for line in open(path) if line.strip()]
summary = next(r["summary"] for r in rows if "summary" in r)
if kind == "relative" and not args.reference:
    parser.error("`relative` needs --reference")
BACKEND = re.compile(r"^(fragment|vertex|compute) shader: backend: ")
if kind == "backend":
    not_compiled = [r for r in rows if BACKEND.match(r.get("reason") or "")]
    reasons = {}
    for r in not_compiled:
        # The stage, without the function and value, so that equal causes group together.
        stage = r["reason"].split(" ", 1)[0]
        reason = stage + ": " + re.sub(r"^fn \S+: %\d+ ", "", BACKEND.sub("", r["reason"]))
        reasons[reason] = reasons.get(reason, 0) + 1
    for r in rows:
        if r.get("status") == "fail" and r not in not_compiled:
            print(f"FAIL ({name}) {r['path']}: {r['reason']}")
    ran = summary["passed"] + summary["failed"] - len(not_compiled)
    rate = 100.0 * summary["passed"] / ran if ran else 0.0
    print(f"{name}: {summary['passed']} passed, {summary['failed'] - len(not_compiled)} failed, "
          f"{len(not_compiled)} not compiled by the backend, {summary['skipped']} skipped: "
          f"{rate:.2f}% of the {ran} tests it compiles pass (gate {minimum}%)")
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:12]:
        print(f"{n:>8}  {reason}")
elif kind == "relative":
    status = {r["path"]: r for r in rows if "path" in r}
    reference = [json.loads(line) for line in open(args.reference) if line.strip()]
    passed = [r["path"] for r in reference if r.get("status") == "pass" and r["path"] in status]
    lacks = [p for p in passed if (status[p].get("reason") or "").startswith("the target lacks ")]
    for p in lacks:
        print(f"NOT EXPOSED ({name}) {p}: {status[p].get('reason')}")
    passed = [p for p in passed if p not in lacks]
    missing = [p for p in passed if status[p].get("status") != "pass"]
    for p in missing:
        print(f"MISSING ({name}) {p}: {status[p].get('reason')}")
    rate = 100.0 * (len(passed) - len(missing)) / len(passed) if passed else 0.0
    print(f"{name}: {len(passed) - len(missing)} of the {len(passed)} tests the interpreter "
          f"passes pass: {rate:.2f}% (gate {minimum}%); {len(lacks)} need extensions the "
          f"target's hardware lacks")
    not_run = ("the time limit of", "shader: backend: ")
    wrong = [p for p in missing if not any(w in (status[p].get("reason") or "") for w in not_run)]
    if wrong:
        print(f"{name}: {len(wrong)} tests compile to other results than the interpreter's",
              file=sys.stderr)
        sys.exit(1)
elif kind == "piglit":
    for r in rows:
        if r.get("status") == "fail":
            print(f"FAIL ({name}) {r['path']}: {r['reason']}")
    ran = summary["passed"] + summary["failed"]
    rate = 100.0 * summary["passed"] / ran if ran else 0.0
    print(f"{name}: {summary['passed']} passed, {summary['failed']} failed, "
          f"{summary['skipped']} skipped: {rate:.2f}% of the {ran} tests that compile pass "
          f"(gate {minimum}%)")
else:
    rate = summary["translated_percent"]
    print(f"{name}: {summary['stages']} stages, {summary['ok']} translated, "
          f"{summary['not_compiled']} not compiled by glslang, {summary['unsupported']} "
          f"unsupported, {summary['frontend_error']} frontend errors, {summary['panicked']} panics: "
          f"{rate:.2f}% (gate {minimum}%)")
    for r in rows:
        if r.get("status") == "panicked":
            print(f"PANIC {r['name']}: {r['message']}")
    for reason, n in summary["top_reasons"]:
        print(f"{n:>8}  {reason}")
if kind == "corpus" and summary["panicked"]:
    print(f"{name}: {summary['panicked']} inputs made the front end panic", file=sys.stderr)
    sys.exit(1)
if rate < minimum:
    print(f"{name}: {rate:.2f}% is below the gate of {minimum}%", file=sys.stderr)
    sys.exit(1)
