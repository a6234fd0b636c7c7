"""Evaluations and searches spread over Ray workers.

``ray`` is an optional extra (``pip install ./python[ray]``). Every function takes ``address``:
``None`` starts (or joins) a local Ray instance, nothing to configure on one machine;
``"auto"`` joins the cluster this machine is part of; ``"ray://host:port"`` a remote one. A Ray
instance this process already joined is used as it is.

The results are the serial ones: ``evaluate`` gives what ``Shader.compile`` gives shader by
shader, and ``search`` what ``shrew search`` (and ``shrew.search``) give with the same settings
and seed, since a per-shader search's shaders are searched independently (each worker takes a
shard, ``--shard i/n``, and the shards' runs are joined as ``shrew report --merge`` joins them)
and a corpus-wide search's strategies are independent searches (each worker runs one).
"""

from __future__ import annotations

import json
from typing import Any

from . import _shrew


def _ray(address: str | None):
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("shrew.distributed needs Ray: pip install ./python[ray]") from e
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    return ray


def _evaluate_chunk(
    paths: list, names: list, pipelines: list, target: str, objective: str, stage: str | None
) -> list:
    """On a worker: every pipeline on the stages ``names`` of the corpus files ``paths``."""
    stages, _ = _shrew.corpus(paths, stage)
    wanted = set(names)
    rows = []
    for name, shader in stages:
        if name not in wanted:
            continue
        for pipeline in pipelines:
            row = {"shader": name, "pipeline": pipeline}
            try:
                kernel = shader.compile(target, pipeline=pipeline)
                row.update(
                    status="ok",
                    cost=kernel.cost(objective),
                    stats=dict(kernel.statistics),
                )
            except _shrew.ShrewError as e:
                row.update(status="failed", message=str(e))
            rows.append(row)
    return rows


def evaluate(
    corpus: list | str,
    pipelines: list | str,
    target: str,
    objective: str = "instructions",
    stage: str | None = None,
    workers: int | None = None,
    address: str | None = None,
) -> list:
    """Every pipeline on every stage of ``corpus`` (files or directories) for ``target``: one
    row per (shader, pipeline) in corpus order, with the kernel's ``cost`` under ``objective``
    and its ``stats``, or ``status == "failed"`` and the ``message``. The stages are spread over
    ``workers`` Ray tasks (by default the cluster's CPUs)."""
    ray = _ray(address)
    paths = [corpus] if isinstance(corpus, str) else list(corpus)
    pipelines = [pipelines] if isinstance(pipelines, str) else list(pipelines)
    stages, _ = _shrew.corpus(paths, stage)
    names = [name for name, _ in stages]
    if not names:
        return []
    workers = max(1, min(workers or int(ray.cluster_resources().get("CPU", 1)), len(names)))
    # The files a chunk's stages come from: a worker reads only those.
    chunks = [names[i::workers] for i in range(workers)]
    task = ray.remote(_evaluate_chunk)
    futures = [
        task.remote(sorted({n.split("#", 1)[0] for n in chunk}), chunk, pipelines, target,
                    objective, stage)
        for chunk in chunks
    ]
    rows = [row for result in ray.get(futures) for row in result]
    order = {name: i for i, name in enumerate(names)}
    return sorted(rows, key=lambda r: (order[r["shader"]], pipelines.index(r["pipeline"])))


def _search_part(settings: dict) -> str:
    """On a worker: one part of a search, as JSON lines."""
    records, summary = _shrew.search(**settings)
    lines = [json.dumps(r) for r in records] + [json.dumps({"summary": summary})]
    return "\n".join(lines) + "\n"


def search(
    paths: list | str,
    target: str,
    workers: int | None = None,
    address: str | None = None,
    **settings: Any,
) -> tuple:
    """``shrew.search`` over Ray: per shader, ``workers`` shards of the searched shaders (by
    default the cluster's CPUs) searched at once and joined; corpus-wide, each strategy on its
    own worker, the results in the order of the strategies. Gives ``(evaluations, summary)``
    as ``shrew.search`` does; a corpus-wide search's evaluations are each strategy's in turn
    (a pipeline two strategies tried is listed under both)."""
    ray = _ray(address)
    paths = [paths] if isinstance(paths, str) else list(paths)
    settings = dict(settings, paths=paths, target=target)
    settings.setdefault("jobs", 1)
    task = ray.remote(_search_part)
    if settings.get("mode", "per-shader") == "corpus":
        strategies = settings.get("strategies", "random,greedy").split(",")
        parts = ray.get([task.remote(dict(settings, strategies=s)) for s in strategies])
        runs = [_parse(part) for part in parts]
        evaluations = [e for records, _ in runs for e in records]
        for i, e in enumerate(evaluations):
            e["evaluation"] = i
        summary = dict(runs[0][1])
        summary["results"] = [r for _, s in runs for r in s["results"]]
        bugs = [b for _, s in runs for b in s["bugs"]]
        summary["bugs"] = [json.loads(b) for b in dict.fromkeys(json.dumps(b) for b in bugs)]
        return evaluations, summary
    count = max(1, workers or int(ray.cluster_resources().get("CPU", 1)))
    parts = ray.get([task.remote(dict(settings, shard=(i, count))) for i in range(1, count + 1)])
    return _parse(_shrew.merge_runs(parts))


def _parse(lines: str) -> tuple:
    values = [json.loads(line) for line in lines.splitlines() if line.strip()]
    records = [v for v in values if "summary" not in v]
    summary = next(v["summary"] for v in values if "summary" in v)
    return records, summary
