"""The Gymnasium environment: registered, valid for Gymnasium's checker, deterministic for a
seed, and an episode through the default pipeline's passes reaches its cost with a return of 1."""

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import shrew
from conftest import EXAMPLES

LIGHTING = str(EXAMPLES / "lighting.shrew")


def make(**kwargs):
    return gym.make("shrew/PassOrdering-v0", dataset=str(EXAMPLES), target="gen9", **kwargs)


def test_the_environment_passes_gymnasium_s_checker():
    env = make()
    check_env(env.unwrapped, skip_render_check=False)
    assert env.unwrapped.action_space.n == len(shrew.pass_names("gen9")) + 1


def rollout(env, seed, steps=12):
    obs, info = env.reset(seed=seed)
    trace = [(info["benchmark"], obs.tolist())]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        trace.append((obs.tolist(), reward, terminated, info["pipeline"]))
        if terminated or truncated:
            break
    return trace


def test_episodes_are_the_same_for_a_seed():
    first, second = make(), make()
    first.action_space.seed(7)
    second.action_space.seed(7)
    assert rollout(first, 11) == rollout(second, 11)


def test_the_default_pipeline_s_passes_score_one():
    env = make(max_steps=500)
    obs, info = env.reset(seed=0, options={"benchmark": LIGHTING})
    assert info["unoptimized_cost"] > info["default_cost"]
    # The default pipeline's passes in order, its fixpoint group twice.
    items = re.findall(r"\((.*?)\)\*|([\w-]+)", shrew.default_pipeline("gen9"))
    passes = []
    for group, single in items:
        passes += group.split(",") * 2 if group else [single]
    total = 0.0
    for name in passes:
        obs, reward, terminated, truncated, info = env.step(env.unwrapped.actions.index(name))
        assert not terminated, info
        total += reward
    assert info["cost"] == info["default_cost"]
    assert total == pytest.approx(1.0)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32
    *_, terminated, _, _ = env.step(len(env.unwrapped.actions))
    assert terminated


def test_a_benchmark_outside_the_dataset_and_a_bad_one():
    env = make()
    _, info = env.reset(options={"benchmark": LIGHTING})
    assert info["benchmark"] == LIGHTING
    with pytest.raises(shrew.ShrewError):
        env.reset(options={"benchmark": str(EXAMPLES / "missing.shrew")})
