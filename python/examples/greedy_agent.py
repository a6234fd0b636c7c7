"""A greedy agent: at each step, the pass that lowers the cost most (each tried on a copy of
the shader through the in-process API), until none lowers it. Prints each shader's pipeline and
its cost against the default pipeline's.

    python python/examples/greedy_agent.py --dataset examples --target evergreen --objective alu_groups
"""

import argparse

import shrew


def greedy(shader, target, objective, passes, steps):
    cost = shader.compile(target, pipeline="none").cost(objective)
    pipeline = []
    for _ in range(steps):
        tried = []
        for name in passes:
            try:
                candidate, _ = shader.optimize(name, target)
                tried.append((candidate.compile(target, pipeline="none").cost(objective), name,
                              candidate))
            except shrew.ShrewError:
                continue
        best = min(tried, key=lambda t: t[0], default=None)
        if best is None or best[0] >= cost:
            break
        cost, name, shader = best
        pipeline.append(name)
    return cost, pipeline


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="examples")
    parser.add_argument("--target", default="gen9")
    parser.add_argument("--objective", default="instructions")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--stage", default=None)
    args = parser.parse_args(argv)
    passes = shrew.pass_names(args.target)
    stages, _ = shrew.corpus([args.dataset], args.stage)
    results = {}
    for name, shader in stages:
        try:
            default = shader.compile(args.target).cost(args.objective)
        except shrew.ShrewError:
            continue
        cost, pipeline = greedy(shader, args.target, args.objective, passes, args.steps)
        results[name] = (cost, default, pipeline)
        print(f"{cost:g} (default {default:g})  {name}  {','.join(pipeline) or 'none'}")
    return results


if __name__ == "__main__":
    main()
