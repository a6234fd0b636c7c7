"""Checks that building one package resolves the same features as building the workspace.

usage: check_features.py

Cargo enables a dependency's features according to the packages a command selects, so
`cargo test -p shrew-rules` after `cargo test --workspace` would rebuild every dependency some
other package enables more features of, and everything above it. The crate `hack/`
(`shrew-workspace-hack`) depends on those dependencies with the union of their features, and
every member depends on it. This lists, per member, each dependency whose features differ from
the workspace's (with what to add to `hack/Cargo.toml`) and exits 1 if there is any. Packages a
member reaches only through dev-dependencies (criterion's regex and clap) are left out: a build
of them with other features sits beside the first and invalidates none of the member's code.
"""
import json
import subprocess
import sys


def features(args, edges="normal,build,dev"):
    """Package (name and version) -> the features `cargo tree` shows enabled over `edges` (by
    default what `cargo test` builds)."""
    out = subprocess.run(
        ["cargo", "tree", "--locked", "-e", edges, "-f", "{p}|{f}",
         "--prefix", "none"] + args,
        check=True, capture_output=True, text=True).stdout
    seen = {}
    for line in out.splitlines():
        if "|" not in line:
            continue
        package, enabled = line.split("|", 1)
        package = package.replace(" (*)", "").strip()
        enabled = enabled.replace(" (*)", "").strip()
        seen.setdefault(package, set()).update(f for f in enabled.split(",") if f)
    return seen


metadata = json.loads(subprocess.run(
    ["cargo", "metadata", "--locked", "--no-deps", "--format-version", "1"],
    check=True, capture_output=True, text=True).stdout)
members = sorted(p["name"] for p in metadata["packages"])
workspace = features(["--workspace"])
missing = 0
for member in members:
    # What the member's own code is built on: another feature set there rebuilds the member.
    built_on = features(["-p", member], edges="normal,build")
    for package, enabled in sorted(features(["-p", member]).items()):
        if package.startswith("shrew-") or package not in built_on:
            continue
        lacking = workspace.get(package, set()) - enabled
        if lacking:
            missing += 1
            print(f"{member}: {package} lacks {', '.join(sorted(lacking))}")
if missing:
    print(f"{missing} dependencies build with other features than in the workspace: add them "
          "to hack/Cargo.toml", file=sys.stderr)
    sys.exit(1)
print(f"features: the {len(members)} members resolve the workspace's features")
