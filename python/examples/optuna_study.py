"""An Optuna study over pipelines: each trial picks a pipeline of up to --length passes, scored
by the geometric mean over the dataset of its cost against the default pipeline's (below 1 is
better; a pipeline that fails on a shader scores infinity).

    python python/examples/optuna_study.py --dataset examples --target gen9 --trials 40
"""

import argparse
import math

import optuna

import shrew


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="examples")
    parser.add_argument("--target", default="gen9")
    parser.add_argument("--objective", default="instructions")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--length", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stage", default=None)
    args = parser.parse_args(argv)
    passes = shrew.pass_names(args.target)
    shaders = []
    for _, shader in shrew.corpus([args.dataset], args.stage)[0]:
        try:
            shaders.append((shader, shader.compile(args.target).cost(args.objective)))
        except shrew.ShrewError:
            continue

    def score(trial):
        length = trial.suggest_int("length", 1, args.length)
        pipeline = ",".join(
            trial.suggest_categorical(f"pass{i}", passes) for i in range(length)
        )
        trial.set_user_attr("pipeline", pipeline)
        logs = []
        for shader, default in shaders:
            try:
                cost = shader.compile(args.target, pipeline=pipeline).cost(args.objective)
            except shrew.ShrewError:
                return math.inf
            logs.append(math.log(max(cost, 1e-9) / default))
        return math.exp(sum(logs) / len(logs))

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=args.seed))
    study.optimize(score, n_trials=args.trials)
    best = study.best_trial
    print(f"best: {best.value:.4f} of the default pipeline's cost: {best.user_attrs['pipeline']}")
    return study


if __name__ == "__main__":
    main()
