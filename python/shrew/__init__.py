"""shrew from Python: the shader compiler in process.

Load shaders from every input the ``shrew`` command reads, run pipelines of passes with the
pass manager's statistics, compile them through a target to kernels (shader-db statistics,
assembly, binary), run them on the reference interpreter and check kernels on the target's
emulator, observe shaders as feature vectors, and search pass orders.

>>> import shrew
>>> shader = shrew.load("examples/lighting.shrew")
>>> optimized, stats = shader.optimize("default")
>>> kernel = shader.compile("gen9")
>>> kernel.statistics["instructions"]

``shrew.env`` holds the Gymnasium environment ``shrew/PassOrdering-v0`` (registered when this
package is imported), ``shrew.distributed`` spreads evaluations and searches over Ray.
"""

from ._shrew import (
    Kernel,
    Shader,
    ShrewError,
    corpus,
    default_pipeline,
    feature_names,
    load,
    merge_runs,
    parse,
    passes,
    report_text,
    search,
    targets,
)

__all__ = [
    "Kernel",
    "Shader",
    "ShrewError",
    "corpus",
    "default_pipeline",
    "feature_names",
    "load",
    "merge_runs",
    "parse",
    "pass_names",
    "passes",
    "report_text",
    "search",
    "targets",
]


def pass_names(target: str = "generic") -> list:
    """The names of the passes a pipeline may name for ``target``."""
    return [name for name, _ in passes(target)]


from . import env as env  # noqa: E402  (registers the environment)
