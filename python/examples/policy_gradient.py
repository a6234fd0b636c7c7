"""A small policy-gradient agent (REINFORCE with a baseline) on shrew/PassOrdering-v0: a
softmax policy over the passes for each step of the episode, learnt from the returns, numpy
only. Prints the mean return every few episodes and the greedy pipeline at the end.

    python python/examples/policy_gradient.py --benchmark examples/lighting.shrew --episodes 200
"""

import argparse

import gymnasium as gym
import numpy as np

import shrew  # noqa: F401  (registers the environment)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default="examples/lighting.shrew")
    parser.add_argument("--target", default="gen9")
    parser.add_argument("--objective", default="instructions")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    env = gym.make(
        "shrew/PassOrdering-v0",
        target=args.target,
        objective=args.objective,
        max_steps=args.steps,
    )
    actions = env.action_space.n
    logits = np.zeros((args.steps, actions))
    rng = np.random.default_rng(args.seed)
    baseline, returns = 0.0, []
    for episode in range(args.episodes):
        env.reset(seed=args.seed + episode, options={"benchmark": args.benchmark})
        chosen, total = [], 0.0
        for step in range(args.steps):
            p = np.exp(logits[step] - logits[step].max())
            p /= p.sum()
            action = int(rng.choice(actions, p=p))
            chosen.append((step, action, p))
            _, reward, terminated, truncated, _ = env.step(action)
            total += reward
            if terminated or truncated:
                break
        advantage = total - baseline
        baseline += 0.1 * (total - baseline)
        for step, action, p in chosen:
            gradient = -p
            gradient[action] += 1.0
            logits[step] += args.learning_rate * advantage * gradient
        returns.append(total)
        if (episode + 1) % 20 == 0:
            print(f"episode {episode + 1}: mean return {np.mean(returns[-20:]):+.3f}")
    env.reset(options={"benchmark": args.benchmark})
    total, info = 0.0, {}
    for step in range(args.steps):
        _, reward, terminated, truncated, info = env.step(int(np.argmax(logits[step])))
        total += reward
        if terminated or truncated:
            break
    print(f"greedy policy: return {total:+.3f}, pipeline {info.get('pipeline')}")
    return total, returns


if __name__ == "__main__":
    main()
