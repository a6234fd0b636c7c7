"""Checks that testing one package reuses what testing the workspace compiled.

usage: check_features.py

Cargo enables a dependency's features according to the packages a command selects, separately
for the host (build scripts, proc-macros) and for the target, so `cargo test -p shrew-rules`
after `cargo test --workspace` would compile a second copy of every dependency some other
package enables more features of, and of everything above it: a one-line change in the engine
would then be compiled twice. The crate `hack/` (`shrew-workspace-hack`) depends on those
dependencies with the union of their features, and every member depends on it.

This asks cargo for the units each `cargo test -p MEMBER` would compile (`--unit-graph`, through
RUSTC_BOOTSTRAP since the flag is unstable; nothing is built) and compares them with the
workspace's. For every unit the member would compile that the workspace build does not, it
prints the first cause (features that differ, for the host or the target) and exits 1.
"""
import json
import os
import subprocess
import sys


def unit_graph(selection):
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    out = subprocess.run(
        ["cargo", "test", "--no-run", "--locked", "--unit-graph", "-Z", "unstable-options"]
        + selection,
        check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)["units"]


def short(pkg_id):
    """`registry+...#syn@2.0.1` or `path+file:///x/hack#shrew-workspace-hack@0.1.0` -> `syn@2.0.1`."""
    return pkg_id.rsplit("#", 1)[-1]


def describe(unit):
    kind = "/".join(unit["target"]["kind"])
    return f'{short(unit["pkg_id"])} {kind} `{unit["target"]["name"]}` ({unit["mode"]})'


def identities(units):
    """Each unit's identity: itself (package, target, mode, platform, profile, features) and,
    recursively, the identities of its dependencies, as cargo's own metadata hash is."""
    memo = {}

    def identity(index):
        if index not in memo:
            unit = units[index]
            own = (unit["pkg_id"], unit["target"]["name"], tuple(unit["target"]["kind"]),
                   unit["mode"], unit["platform"], json.dumps(unit["profile"], sort_keys=True),
                   tuple(unit["features"]))
            deps = tuple(sorted((dep["extern_crate_name"], identity(dep["index"]))
                                for dep in unit["dependencies"]))
            memo[index] = hash((own, deps))
        return memo[index]

    return [identity(i) for i in range(len(units))]


def slot(unit):
    """What a unit is apart from its features and dependencies: two units in the same slot with
    different identities are the same code compiled twice."""
    return (unit["pkg_id"], unit["target"]["name"], tuple(unit["target"]["kind"]),
            unit["mode"], unit["profile"]["name"])


def main():
    workspace = unit_graph(["--workspace"])
    built = set(identities(workspace))
    features_in_workspace = {}
    for unit in workspace:
        features_in_workspace.setdefault(slot(unit), []).append(set(unit["features"]))
    members = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"],
        check=True, capture_output=True, text=True).stdout)["packages"]
    failures = 0
    for member in sorted(package["name"] for package in members):
        units = unit_graph(["-p", member])
        ids = identities(units)
        rebuilt = {index for index, identity in enumerate(ids) if identity not in built}
        # A dependency reached only from this member (a dev-dependency's build) is compiled
        # once beside the workspace's and invalidates nothing; what costs is a member's own
        # code compiled twice, so every change to it is compiled twice.
        members_rebuilt = [i for i in rebuilt if units[i]["pkg_id"].startswith("path+")]
        if not members_rebuilt:
            continue
        causes = set()
        stack, seen = list(members_rebuilt), set()
        while stack:
            index = stack.pop()
            if index in seen or index not in rebuilt:
                continue
            seen.add(index)
            unit = units[index]
            known = features_in_workspace.get(slot(unit), [])
            if set(unit["features"]) not in known:
                wanted = set().union(set(), *known) - set(unit["features"])
                causes.add(f"{describe(unit)}: the workspace also enables {sorted(wanted)}")
            stack.extend(dep["index"] for dep in unit["dependencies"])
        names = sorted({short(units[i]["pkg_id"]) for i in members_rebuilt})
        if causes:
            failures += 1
            print(f"cargo test -p {member} would compile again: {', '.join(names)}; because:")
            for cause in sorted(causes):
                print(f"  {cause}")
    if failures:
        print("add those features to hack/Cargo.toml")
        return 1
    print(f"each of the {len(members)} members reuses the workspace's build of the members")
    return 0


if __name__ == "__main__":
    sys.exit(main())
