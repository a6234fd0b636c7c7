"""Type stubs of the extension module ``shrew._shrew`` (see ``python/src/lib.rs``)."""

from os import PathLike
from typing import Any, Optional, Sequence, Union

_Path = Union[str, PathLike]

class ShrewError(Exception):
    """What shrew refused, with the located message the CLI prints."""

class Shader:
    """A shader in shrew's IR."""

    @property
    def stage(self) -> str:
        """vert, frag, comp, geom, tesc or tese."""
    def text(self) -> str:
        """The IR as text (``shrew fmt``'s output)."""
    def instruction_count(self) -> int: ...
    def features(self) -> list[int]:
        """One count per name of ``feature_names()``."""
    def optimize(
        self, pipeline: str = "default", target: str = "generic"
    ) -> tuple["Shader", dict[str, Any]]:
        """The shader after ``pipeline``, and per pass (``passes``: runs, progress, ms,
        instruction_delta), per rule that fired (``rules``: set, rule, location, count) and in
        all (``transformations``) what it did."""
    def compile(
        self, target: str, pipeline: str = "default", width: Optional[int] = None
    ) -> "Kernel":
        """The kernel ``shrew compile`` makes: ``pipeline``, the target's backend pipeline and
        its backend."""
    def run(
        self,
        inputs: Sequence[str] = ...,
        uniforms: Sequence[str] = ...,
        invocations: int = 1,
        workgroups: tuple[int, int, int] = (1, 1, 1),
        resources: Optional[str] = None,
    ) -> dict[str, Any]:
        """``shrew run --json``'s report: inputs and uniforms as ``"NAME=VALUES"``, resources as
        JSON text."""
    def check(
        self,
        target: str,
        pipeline: str = "default",
        width: Optional[int] = None,
        tolerance: float = 1e-4,
        workgroups: tuple[int, int, int] = (1, 1, 1),
    ) -> str:
        """``shrew compile --check``: what the emulator and the interpreter agreed on; raises
        ``ShrewError`` where they differ."""

class Kernel:
    """A target's kernel of a shader."""

    @property
    def target(self) -> str: ...
    @property
    def width(self) -> Optional[int]: ...
    @property
    def statistics(self) -> dict[str, int]:
        """shader-db's figures by its names."""
    def statistics_line(self) -> str: ...
    def cost(self, objective: str) -> float:
        """A search objective (``cycles``, ``instructions+4*spills``) on the statistics."""
    def listing(self) -> str: ...
    def binary(self) -> bytes: ...

def load(path: _Path, stage: Optional[str] = None, entry_point: Optional[str] = None) -> Shader: ...
def parse(text: str, name: str = "<text>") -> Shader: ...
def corpus(
    paths: Sequence[_Path], stage: Optional[str] = None
) -> tuple[list[tuple[str, Shader]], list[tuple[str, str]]]: ...
def passes(target: str = "generic") -> list[tuple[str, str]]: ...
def targets() -> list[tuple[str, str, bool]]: ...
def default_pipeline(target: str = "generic") -> str: ...
def feature_names() -> list[str]: ...
def search(
    paths: Sequence[_Path],
    target: str,
    objective: str = "instructions",
    strategies: str = "random,greedy",
    mode: str = "per-shader",
    budget: int = 100,
    seconds: Optional[float] = None,
    seed: int = 1,
    test_fraction: float = 0.0,
    stage: Optional[str] = None,
    max_shaders: Optional[int] = None,
    passes: Optional[str] = None,
    prefix: str = "",
    suffix: str = "",
    max_length: int = 24,
    groups: bool = True,
    check: bool = True,
    shard: Optional[tuple[int, int]] = None,
    jobs: Optional[int] = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]: ...
def merge_runs(runs: Sequence[str]) -> str: ...
def report_text(summary: dict[str, Any]) -> str: ...
