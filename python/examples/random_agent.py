"""A random agent on shrew/PassOrdering-v0: episodes of random passes, the best kept.

    python python/examples/random_agent.py --dataset examples --target gen9 --episodes 20
"""

import argparse

import gymnasium as gym

import shrew  # noqa: F401  (registers the environment)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="examples")
    parser.add_argument("--target", default="gen9")
    parser.add_argument("--objective", default="instructions")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    env = gym.make(
        "shrew/PassOrdering-v0",
        dataset=args.dataset,
        target=args.target,
        objective=args.objective,
        max_steps=args.steps,
    )
    env.action_space.seed(args.seed)
    best = {}
    for episode in range(args.episodes):
        _, info = env.reset(seed=args.seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += reward
            done = terminated or truncated
        name = info["benchmark"]
        if name not in best or total > best[name][0]:
            best[name] = (total, info["pipeline"])
    for name, (total, pipeline) in sorted(best.items()):
        print(f"{total:+.3f}  {name}  {pipeline}")
    return best


if __name__ == "__main__":
    main()
