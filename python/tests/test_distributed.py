"""Ray: an evaluation and a search spread over 2 workers of a local instance give the serial
results."""

import pytest

ray = pytest.importorskip("ray")

import shrew  # noqa: E402
from shrew import distributed  # noqa: E402
from conftest import EXAMPLES  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_an_evaluation_over_two_workers_is_the_serial_one(local_ray):
    pipelines = ["default", "none", "dce,cse"]
    rows = distributed.evaluate([EXAMPLES], pipelines, "gen9", objective="cycles", workers=2)
    stages, _ = shrew.corpus([EXAMPLES])
    serial = [
        (name, p, shader.compile("gen9", pipeline=p).cost("cycles"))
        for name, shader in stages
        for p in pipelines
    ]
    assert [(r["shader"], r["pipeline"], r["cost"]) for r in rows] == serial
    # The stages were split into two chunks, one Ray task each (the test does not check which
    # worker process ran which).
    assert len({r["shader"] for r in rows}) == len(stages) >= 2


def test_a_search_over_two_workers_is_the_serial_one(local_ray):
    settings = dict(objective="instructions", strategies="random,greedy", budget=5, seed=2)
    distributed_records, distributed_summary = distributed.search(
        [EXAMPLES], "gen9", workers=2, **settings
    )
    records, summary = shrew.search([EXAMPLES], "gen9", jobs=1, **settings)
    assert distributed_summary["results"] == summary["results"]
    assert [(r["shader"], r["pipeline"], r.get("cost")) for r in distributed_records] == [
        (r["shader"], r["pipeline"], r.get("cost")) for r in records
    ]


def test_a_corpus_wide_search_over_two_workers_finds_the_serial_pipelines(local_ray):
    settings = dict(mode="corpus", strategies="random,greedy", budget=4, seed=5)
    _, spread = distributed.search([EXAMPLES], "gen9", **settings)
    _, serial = shrew.search([EXAMPLES], "gen9", jobs=1, **settings)
    assert spread["results"] == serial["results"]
