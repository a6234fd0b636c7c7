"""Checks a `shrew piglit --json` or `shrew corpus --json` run against a minimum rate.

usage: gate.py piglit|corpus RUN.jsonl MIN_PERCENT
"""
import json
import sys

kind, path, minimum = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = [json.loads(line) for line in open(path) if line.strip()]
summary = next(r["summary"] for r in rows if "summary" in r)
if kind == "piglit":
    for r in rows:
        if r.get("status") == "fail":
            print(f"FAIL {r['path']}: {r['reason']}")
    ran = summary["passed"] + summary["failed"]
    rate = 100.0 * summary["passed"] / ran if ran else 0.0
    print(f"piglit: {summary['passed']} passed, {summary['failed']} failed, "
          f"{summary['skipped']} skipped: {rate:.2f}% of the {ran} tests that compile pass "
          f"(gate {minimum}%)")
else:
    rate = summary["translated_percent"]
    print(f"corpus: {summary['stages']} stages, {summary['ok']} translated, "
          f"{summary['not_compiled']} not compiled by glslang, {summary['unsupported']} "
          f"unsupported, {summary['frontend_error']} frontend errors, {summary['panicked']} panics: "
          f"{rate:.2f}% (gate {minimum}%)")
    for r in rows:
        if r.get("status") == "panicked":
            print(f"PANIC {r['name']}: {r['message']}")
    for reason, n in summary["top_reasons"]:
        print(f"{n:>8}  {reason}")
if kind == "corpus" and summary["panicked"]:
    print(f"corpus: {summary['panicked']} inputs made the front end panic", file=sys.stderr)
    sys.exit(1)
if rate < minimum:
    print(f"{kind}: {rate:.2f}% is below the gate of {minimum}%", file=sys.stderr)
    sys.exit(1)
