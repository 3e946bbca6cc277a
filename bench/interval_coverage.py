"""How often the calibration's intervals cover, by simulation: the within-model AUC of D member draws (S training
seeds each), members N(mu_model, 1) against non-members N(0, 1), mu_model = mu + a draw effect + a seed effect.

    python bench/interval_coverage.py                 # the table docs/calibration.md quotes (about 1 min, 2 cores)
    python bench/interval_coverage.py --reps 400      # quicker, coarser

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--size", type=int, default=20, help="members and non-members a model")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    designs = [(3, 1), (3, 2), (5, 1), (10, 1)]
    print(f"Coverage of a nominal 95% interval, {args.reps} simulated sweeps a cell, {args.size} members and "
          f"{args.size} non-members a model.\n")
    print("| scenario | true mean AUC | interval | " + " | ".join(f"{d} draws x {s} seed{'s' * (s > 1)}"
                                                           for d, s in designs) + " |")
    print("|---|---|---|" + "---|" * len(designs))
    for name, mu, draw_sd, seed_sd in SCENARIOS:
        truth = estimand(mu, draw_sd, seed_sd, rng)
        for floor in (True, False):
            cells = [coverage(mu, draw_sd, seed_sd, d, s, reps=args.reps, size=args.size, floor=floor, rng=rng,
                              truth=truth) for d, s in designs]
            print(f"| {name} | {truth:.3f} | {'t over draws, floored' if floor else 't, no floor'} | "
                  + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
