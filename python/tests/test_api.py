"""The API against the CLI: the same shaders give the same IR, kernels, runs and searches."""

import json
import os

import pytest

import shrew
from conftest import EXAMPLES, cli, piglit_tests

PIGLIT = [
    "spec/glsl-1.10/execution/swizzled-writemask-indexing-nonconst.shader_test",
    "spec/glsl-1.10/execution/fs-discard-deep-branch.shader_test",
    "spec/glsl-1.20/execution/fs-function-inout-array-of-structs.shader_test",
]


def shader_files():
    files = sorted(EXAMPLES.glob("*.shrew"))
    root = piglit_tests()
    if root is None:
        if os.environ.get("SHREW_REQUIRE_PIGLIT"):
            pytest.fail("piglit's tests are missing: bash scripts/piglit.sh")
    else:
        files += [root / p for p in PIGLIT]
    return files


FILES = shader_files()
TARGETS = ["gen9", "evergreen"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_optimize_prints_what_shrew_opt_prints(path):
    optimized, stats = shrew.load(path).optimize("default")
    assert optimized.text() == cli("opt", path)
    assert stats["transformations"] >= 0
    assert all(p["runs"] >= 1 for p in stats["passes"].values())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compile_gives_what_shrew_compile_gives(path, target):
    shader = shrew.load(path)
    if shader.stage == "comp" and target == "evergreen":
        pytest.skip("no compute shaders on R600")
    kernel = shader.compile(target)
    listing = cli("compile", path, "--target", target, "--asm")
    assert listing == kernel.statistics_line() + "\n" + kernel.listing()
    stats = json.loads(cli("compile", path, "--target", target, "--json"))
    assert {k: v for k, v in stats.items() if k != "simd"} == kernel.statistics
    assert stats.get("simd") == kernel.width


def test_binaries_decode_to_the_listing(tmp_path):
    kernel = shrew.load(EXAMPLES / "lighting.shrew").compile("gen9")
    out = tmp_path / "kernel.bin"
    out.write_bytes(kernel.binary())
    cli("compile", EXAMPLES / "lighting.shrew", "--target", "gen9", "--binary", tmp_path / "cli.bin")
    assert (tmp_path / "cli.bin").read_bytes() == kernel.binary()


def test_run_reports_what_shrew_run_reports():
    path = EXAMPLES / "lighting.shrew"
    args = dict(inputs=["uv=0.5,0.25;0.75,1;0,0;1,1"], uniforms=["tint=1,2,3,4"], invocations=4)
    ours = shrew.load(path).run(**args)
    theirs = json.loads(
        cli(
            "run", path, "--input", args["inputs"][0], "--uniform", args["uniforms"][0],
            "--invocations", "4", "--json",
        )
    )
    assert ours == theirs


def test_check_agrees_and_names_what_it_compared():
    message = shrew.load(EXAMPLES / "lighting.shrew").check("evergreen")
    assert "the emulator agrees with the interpreter" in message


def test_errors_are_shrew_errors_with_their_location():
    with pytest.raises(shrew.ShrewError, match=r"<text>:4:\d+"):
        shrew.parse("shader fragment\nentry fn main() {\nb0:\n    32 %0 = fnothing %1\n    return\n}\n")
    with pytest.raises(shrew.ShrewError, match="column"):
        shrew.load(EXAMPLES / "lighting.shrew").optimize("dce,(cse")
    with pytest.raises(shrew.ShrewError, match="nosuch"):
        shrew.load(EXAMPLES / "lighting.shrew").compile("nosuch")
    with pytest.raises(shrew.ShrewError, match="cannot read"):
        shrew.load(EXAMPLES / "missing.shrew")


def test_registry_listings_are_the_cli_s():
    listed = cli("passes")
    for name, description in shrew.passes():
        assert f"{name}" in listed and description in listed
    assert f"default: {shrew.default_pipeline()}" in listed
    names = [t[0] for t in shrew.targets()]
    assert names == [line.split()[0] for line in cli("targets").splitlines()]
    assert shrew.pass_names() == [name for name, _ in shrew.passes()]


def test_features_are_named_counts():
    shader = shrew.load(EXAMPLES / "lighting.shrew")
    features = dict(zip(shrew.feature_names(), shader.features()))
    assert len(features) == len(shader.features())
    assert features["instructions"] == shader.instruction_count()
    assert features["loops"] == 1
    optimized, _ = shader.optimize("default")
    assert dict(zip(shrew.feature_names(), optimized.features()))["loops"] == 0


def test_a_search_gives_what_shrew_search_gives():
    settings = dict(target="gen9", objective="cycles", strategies="random,greedy", budget=6, seed=3)
    records, summary = shrew.search([EXAMPLES], jobs=1, **settings)
    lines = cli(
        "search", EXAMPLES, "--target", "gen9", "--objective", "cycles", "--strategy",
        "random,greedy", "--budget", "6", "--seed", "3", "--jobs", "1", "--json",
    ).splitlines()
    theirs = [json.loads(line) for line in lines]
    assert records == theirs[:-1]
    assert summary == theirs[-1]["summary"]
    assert "geomean" in shrew.report_text(summary)
