"""How often the calibration's intervals cover, by simulation: the within-model AUC of D member draws (S training
seeds each), members N(mu_model, 1) against non-members N(0, 1), mu_model = mu + a draw effect + a seed effect.

    python bench/interval_coverage.py                 # the table docs/calibration.md quotes (about 1 min, 2 cores)
    python bench/interval_coverage.py --reps 400      # quicker, coarser
    python bench/interval_coverage.py --shape profile # the planted profiles' shape (issue 47), per-item heterogeneity

``--shape profile``: 8 v 8 and 24 v 24 a model over 6 and 10 runs (one seed each: a run is its own draw), each
member's shift its own (``item sd``: memorisation differs from problem to problem) around its run's (``run sd``:
the CPU profile's loss AUC at x2 read 0.30 in one run and 0.87 in another); the estimand is the mean over runs of a
model's true AUC, Phi(mu_run / sqrt(2 + item sd^2)). Beside the intervals, the rate at which the runs' t-test
rejects chance (its size where the true AUC is 0.5).

The estimand is the population mean of a model's true AUC, Phi(mu_model / sqrt 2), over the draw and seed effects
(computed by Monte Carlo). ``unit_interval`` is contaminate/calibration/statistics.py's t-interval over draws with
its instance-level floor; "t, no floor" is the same interval without the floor, to show what the floor buys where
every model separates perfectly.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import norm

from contaminate.calibration.statistics import auc_floor, auc_matrix, unit_interval
from detect.markdown import row, table

SCENARIOS = [  # (name, mu, draw sd, seed sd)
    ("AUC ~0.64, heterogeneous", 0.5, 0.3, 0.1),
    ("AUC ~0.84, heterogeneous", 1.4, 0.4, 0.15),
    ("AUC ~0.96, homogeneous", 2.5, 0.1, 0.05),
    ("AUC ~0.995, near the bound", 3.7, 0.1, 0.05),
]


def estimand(mu: float, draw_sd: float, seed_sd: float, rng: np.random.Generator) -> float:
    effects = mu + rng.normal(0, draw_sd, 400_000) + rng.normal(0, seed_sd, 400_000)
    return float(norm.cdf(effects / np.sqrt(2)).mean())


def coverage(mu: float, draw_sd: float, seed_sd: float, draws: int, seeds: int, *, reps: int, size: int,
             floor: bool, rng: np.random.Generator, truth: float) -> float:
    hits = 0
    for _ in range(reps):
        units = {}
        for d in range(draws):
            shift = mu + rng.normal(0, draw_sd)
            for s in range(seeds):
                units[(d, s)] = [rng.normal(shift + rng.normal(0, seed_sd), 1, size), rng.normal(0, 1, size)]
        block = unit_interval(units, auc_matrix, floor=auc_floor if floor else None)
        hits += block["low"] <= truth <= block["high"]
    return hits / reps


PROFILE_SCENARIOS = [  # (name, mu, run sd, item sd): the profiles' range, chance to near-saturation
    ("chance (AUC 0.5)", 0.0, 0.3, 1.0),
    ("AUC ~0.56, runs spread as the profile's x1-x2", 0.25, 0.5, 1.0),
    ("AUC ~0.70", 0.9, 0.4, 1.0),
    ("AUC ~0.85", 1.8, 0.3, 0.8),
    ("AUC ~0.98, near the bound", 3.2, 0.2, 0.5),
]
PROFILE_DESIGNS = [(8, 6), (8, 10), (24, 6), (24, 10)]  # (members = non-members a model, runs)


def profile_estimand(mu: float, run_sd: float, item_sd: float, rng: np.random.Generator) -> float:
    effects = mu + rng.normal(0, run_sd, 400_000)
    return float(norm.cdf(effects / np.sqrt(2 + item_sd ** 2)).mean())


def profile_cell(mu: float, run_sd: float, item_sd: float, size: int, runs: int, *, reps: int,
                 rng: np.random.Generator, truth: float) -> dict[str, float]:
    """Coverage of the floored and the bare t-interval, and the share of studies whose runs' t-test rejects 0.5."""
    from scipy.stats import ttest_1samp

    hits = {"floored": 0, "bare": 0}
    rejected = 0
    for _ in range(reps):
        shifts = mu + rng.normal(0, run_sd, runs)
        units = {(r, 0): [rng.normal(shifts[r] + rng.normal(0, item_sd, size), 1), rng.normal(0, 1, size)]
                 for r in range(runs)}
        for name, floor in (("floored", auc_floor), ("bare", None)):
            block = unit_interval(units, auc_matrix, floor=floor)
            hits[name] += block["low"] <= truth <= block["high"]
        values = np.array(list(block["per_draw"].values()))
        rejected += bool(ttest_1samp(values, 0.5).pvalue < 0.05) if values.std() > 0 else values[0] != 0.5
    return {"floored": hits["floored"] / reps, "bare": hits["bare"] / reps, "rejects": rejected / reps}


def profile_table(reps: int, rng: np.random.Generator) -> str:
    lines = [f"Coverage of a nominal 95% interval at the planted profiles' shape, {reps} simulated studies a cell; "
             f"members and non-members a model, runs (one seed each), each member's shift its own.", "",
             *table(["scenario", "run sd", "item sd", "true mean AUC", "interval",
                     *(f"{m} v {m} x {r} runs" for m, r in PROFILE_DESIGNS)])]
    for name, mu, run_sd, item_sd in PROFILE_SCENARIOS:
        truth = profile_estimand(mu, run_sd, item_sd, rng)
        cells = [profile_cell(mu, run_sd, item_sd, m, r, reps=reps, rng=rng, truth=truth) for m, r in PROFILE_DESIGNS]
        for key, label in (("floored", "t over runs, floored"), ("bare", "t, no floor"),
                           ("rejects", "runs' t-test rejects 0.5")):
            lines.append(row([name, f"{run_sd:g}", f"{item_sd:g}", f"{truth:.3f}", label,
                              *(f"{c[key]:.3f}" for c in cells)]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--size", type=int, default=20, help="members and non-members a model")
    parser.add_argument("--shape", choices=("sweep", "profile"), default="sweep",
                        help="sweep: the calibration sweeps' 20 v 20; profile: the planted profiles' 8 v 8, 24 v 24")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    if args.shape == "profile":
        print(profile_table(args.reps, rng))
        return
    designs = [(3, 1), (3, 2), (5, 1), (10, 1)]
    print(f"Coverage of a nominal 95% interval, {args.reps} simulated sweeps a cell, {args.size} members and "
          f"{args.size} non-members a model.\n")
    print("\n".join(table(["scenario", "true mean AUC", "interval",
                           *(f"{d} draws x {s} seed{'s' * (s > 1)}" for d, s in designs)])))
    for name, mu, draw_sd, seed_sd in SCENARIOS:
        truth = estimand(mu, draw_sd, seed_sd, rng)
        for floor in (True, False):
            cells = [coverage(mu, draw_sd, seed_sd, d, s, reps=args.reps, size=args.size, floor=floor, rng=rng,
                              truth=truth) for d, s in designs]
            print(row([name, f"{truth:.3f}", "t over draws, floored" if floor else "t, no floor",
                       *(f"{c:.3f}" for c in cells)]))


if __name__ == "__main__":
    main()
