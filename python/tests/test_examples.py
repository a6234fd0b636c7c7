"""The examples run, briefly, and do what they say."""

import importlib.util
import json

import pytest

import shrew
from conftest import EXAMPLES, ROOT, cli


def example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "python" / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_random_agent():
    best = example("random_agent").main(["--dataset", str(EXAMPLES), "--episodes", "4"])
    assert best and all(isinstance(pipeline, str) for _, pipeline in best.values())


def test_greedy_agent_never_ends_above_where_it_started():
    results = example("greedy_agent").main(["--dataset", str(EXAMPLES), "--steps", "3"])
    for name, (cost, _, pipeline) in results.items():
        shader = dict(shrew.corpus([EXAMPLES])[0])[name]
        assert cost <= shader.compile("gen9", pipeline="none").cost("instructions")


def test_policy_gradient_learns_a_positive_return():
    total, returns = example("policy_gradient").main(
        ["--benchmark", str(EXAMPLES / "lighting.shrew"), "--episodes", "60", "--steps", "6"]
    )
    assert len(returns) == 60 and total > 0


def test_optuna_study():
    pytest.importorskip("optuna")
    study = example("optuna_study").main(["--dataset", str(EXAMPLES), "--trials", "5"])
    assert len(study.trials) == 5


def test_plot_of_a_search(tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    run = tmp_path / "run.jsonl"
    cli("search", EXAMPLES, "--target", "gen9", "--budget", "4", "--output", run, "--jobs", "1")
    out = example("plot_search").main([str(run), "--out", str(tmp_path / "run.png")])
    assert (tmp_path / "run.png").stat().st_size > 1000
    assert json.loads(run.read_text().splitlines()[-1])["summary"]["target"] == "gen9"
