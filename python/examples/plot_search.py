"""Plots a search's JSON lines (`shrew search --output run.jsonl`) with pandas and matplotlib:
the best ratio against the default pipeline over the evaluations, per strategy (per shader: the
geometric mean over the shaders of each one's best so far).

    shrew search examples --target gen9 --budget 20 --output run.jsonl
    python python/examples/plot_search.py run.jsonl --out run.png
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def best_curves(summary):
    """Per strategy: (evaluations, geometric mean of the best ratios) at every evaluation."""
    curves = {}
    for result in summary["results"]:
        rows = result.get("shaders") or [result]
        length = max(r["evaluated"] for r in rows) if rows else 0
        best = np.ones((len(rows), length + 1))
        for i, row in enumerate(rows):
            for evaluated, ratio in row["curve"]:
                best[i, evaluated:] = ratio
        curves[result["strategy"]] = np.exp(np.log(best).mean(axis=0))
    return curves


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--out", default="search.png")
    args = parser.parse_args(argv)
    with open(args.run) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    summary = next(line["summary"] for line in lines if "summary" in line)
    evaluations = pd.DataFrame([line for line in lines if "summary" not in line])
    print(evaluations.groupby("status").size().to_string())
    figure, axes = plt.subplots(figsize=(7, 4))
    for strategy, curve in best_curves(summary).items():
        axes.plot(range(len(curve)), curve, label=strategy)
    axes.set_xlabel("candidates evaluated")
    axes.set_ylabel(f"best {summary['objective']} / default")
    axes.set_title(f"{summary['target']}, {summary['shaders']} shaders")
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.out)
    print(f"wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
