"""The Gymnasium environment ``shrew/PassOrdering-v0``: pass ordering on one shader at a time.

An episode optimizes one shader of a dataset, pass by pass, for a target:

* action: one pass of ``actions`` (by default every pass of the target's registry), or the last
  action, "stop", which ends the episode;
* observation: the shader's feature vector (``shrew.feature_names()`` names its entries), as
  ``float32``;
* reward: the reduction of the objective (a kernel statistic or a weighted sum, as
  ``shrew search --objective`` takes it) over the step, divided by the reduction the default
  pipeline makes on the unoptimized shader, so that an episode whose passes reach the default
  pipeline's cost has a return of 1 (CompilerGym's convention against ``-Oz``). Where the default
  pipeline reduces nothing, the unoptimized cost is the divisor.

``reset(seed=..., options={"benchmark": path})`` starts an episode on the shader at ``path``
(a stage of a ``.shader_test`` as ``name#fragment1``, or any file ``shrew.load`` reads), or on a
shader of the dataset drawn with the environment's generator. Episodes are deterministic for a
seed. A pass the target's backend then fails on ends the episode (``info["error"]`` says why)
with no reward.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import _shrew

ENV_ID = "shrew/PassOrdering-v0"

STOP = "stop"


def piglit_dataset() -> list:
    """Piglit's GLSL 1.10 and 1.20 execution tests (the CI sets), where ``bash scripts/piglit.sh``
    unpacked them (``SHREW_PIGLIT`` names another piglit directory)."""
    root = os.environ.get("SHREW_PIGLIT") or os.path.expanduser(
        "~/.cache/shrew/piglit/root/usr/lib/x86_64-linux-gnu/piglit"
    )
    sets = [
        Path(root) / "tests" / "spec" / version / "execution"
        for version in ("glsl-1.10", "glsl-1.20")
    ]
    found = [str(s) for s in sets if s.is_dir()]
    if not found:
        raise _shrew.ShrewError(
            f"no piglit tests under {root}: run `bash scripts/piglit.sh` or give a dataset"
        )
    return found


class PassOrderingEnv(gym.Env):
    """Pass ordering on the shaders of ``dataset`` (files or directories; piglit's CI sets by
    default) for ``target``, minimising ``objective``."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        dataset: list | str | None = None,
        target: str = "gen9",
        objective: str = "instructions",
        actions: list | None = None,
        stage: str = "frag",
        max_steps: int = 32,
        render_mode: str | None = None,
    ):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: None or 'ansi'")
        self.render_mode = render_mode
        self.target = target
        self.objective = objective
        self.stage = stage
        self.max_steps = max_steps
        known = [name for name, _ in _shrew.passes(target)]
        self.actions = list(actions) if actions is not None else known
        unknown = [a for a in self.actions if a not in known]
        if unknown:
            raise _shrew.ShrewError(f"not passes of {target}: {', '.join(unknown)}")
        self.action_space = spaces.Discrete(len(self.actions) + 1)
        self.observation_space = spaces.Box(
            low=0.0,
            high=np.finfo(np.float32).max,
            shape=(len(_shrew.feature_names()),),
            dtype=np.float32,
        )
        if isinstance(dataset, (str, os.PathLike)):
            dataset = [dataset]
        self._dataset_paths = [str(p) for p in dataset] if dataset is not None else None
        self._dataset: list | None = None
        # Per benchmark: (unoptimized shader, its cost with no pass, the default pipeline's).
        self._baselines: dict = {}
        self.benchmark: str | None = None
        self._shader = None
        self._cost = 0.0
        self._steps = 0
        self._pipeline: list = []

    def action_name(self, action: int) -> str:
        """The pass an action runs (or "stop")."""
        return self.actions[action] if action < len(self.actions) else STOP

    def dataset(self) -> list:
        """The names of the dataset's shaders the target compiles, in name order (read once)."""
        if self._dataset is None:
            paths = self._dataset_paths or piglit_dataset()
            stages, _ = _shrew.corpus(paths, self.stage)
            self._dataset = stages
        return [name for name, _ in self._dataset]

    def _baseline(self, name: str, shader: Any) -> tuple | None:
        if name not in self._baselines:
            try:
                start = shader.compile(self.target, pipeline="none").cost(self.objective)
                default = shader.compile(self.target, pipeline="default").cost(self.objective)
                self._baselines[name] = (shader, start, default)
            except _shrew.ShrewError:
                self._baselines[name] = None
        return self._baselines[name]

    def _load(self, benchmark: str) -> tuple:
        if "#" in benchmark:
            path = benchmark.rsplit("#", 1)[0]
            stages, failed = _shrew.corpus([path])
            found = [s for n, s in stages if n == benchmark]
            if not found:
                raise _shrew.ShrewError(f"{benchmark}: no such stage ({failed or 'not read'})")
            shader = found[0]
        else:
            # A piglit test or a `.glsl` file holds or needs a stage; other files say theirs.
            needs_stage = benchmark.endswith((".shader_test", ".glsl"))
            shader = _shrew.load(benchmark, stage=self.stage if needs_stage else None)
        baseline = self._baseline(benchmark, shader)
        if baseline is None:
            raise _shrew.ShrewError(f"{benchmark}: {self.target} does not compile it")
        return baseline

    def _observation(self) -> np.ndarray:
        return np.asarray(self._shader.features(), dtype=np.float32)

    def _info(self, **more: Any) -> dict:
        _, start, default = self._baselines[self.benchmark]
        return {
            "benchmark": self.benchmark,
            "cost": self._cost,
            "unoptimized_cost": start,
            "default_cost": default,
            "pipeline": ",".join(self._pipeline) or "none",
            **more,
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "benchmark" in options:
            self.benchmark = str(options["benchmark"])
            shader, start, _ = self._load(self.benchmark)
        else:
            names = self.dataset()
            order = self.np_random.permutation(len(names))
            for index in order:
                name, candidate = self._dataset[index]
                baseline = self._baseline(name, candidate)
                if baseline is not None:
                    self.benchmark = name
                    shader, start, _ = baseline
                    break
            else:
                raise _shrew.ShrewError(f"no shader of the dataset compiles for {self.target}")
        self._shader = shader
        self._cost = start
        self._steps = 0
        self._pipeline = []
        return self._observation(), self._info()

    def _scale(self) -> float:
        _, start, default = self._baselines[self.benchmark]
        return start - default if start > default else max(start, 1.0)

    def step(self, action):
        if self._shader is None:
            raise RuntimeError("step() before reset()")
        action = int(action)
        if not self.action_space.contains(action):
            raise ValueError(f"action {action}: not in {self.action_space}")
        name = self.action_name(action)
        self._steps += 1
        truncated = self._steps >= self.max_steps
        if name == STOP:
            return self._observation(), 0.0, True, False, self._info()
        try:
            shader, _ = self._shader.optimize(name, self.target)
            cost = shader.compile(self.target, pipeline="none").cost(self.objective)
        except _shrew.ShrewError as e:
            return self._observation(), 0.0, True, False, self._info(error=str(e))
        reward = (self._cost - cost) / self._scale()
        self._shader, self._cost = shader, cost
        self._pipeline.append(name)
        return self._observation(), float(reward), False, truncated, self._info()

    def render(self):
        if self.render_mode == "ansi":
            info = self._info()
            return (
                f"{info['benchmark']}: {info['cost']:g} (none {info['unoptimized_cost']:g}, "
                f"default {info['default_cost']:g}) after {info['pipeline']}\n"
            )
        return None


def register_envs() -> None:
    """Registers ``shrew/PassOrdering-v0`` with Gymnasium (once)."""
    if ENV_ID not in gym.envs.registry:
        gym.register(id=ENV_ID, entry_point="shrew.env:PassOrderingEnv")


register_envs()
