"""Which sizes give Oren et al.'s order tests a 5% test with any power: their rejection rate on a simulated null and
on a simulated leak, through the lab's own test functions (``detect/detectors/sharded.py``).

    # 20 min, loaded 2-core CPU
    python -m contaminate.analyses.order_tests_power --replications 2000 --out results/order_tests_power

The simulated model: the log-likelihood of a run of n instances in an order is the sum, over adjacent pairs, of a
transition term T[i, j] ~ N(0, 1), drawn once per simulated model (how well the model happens to predict instance j
after instance i; each instance's own likelihood is the same in every order and cancels). Under the null the
instances are exchangeable: nothing more. A leak adds ``delta`` (in units of the transitions' standard deviation)
to every canonical transition T[i, i + 1]: the model learnt which line follows which, as a dump trains it. A
permutation row of a study estimates its own delta: ``statistic / (n - 1)`` over ``permuted_sd / sqrt(n - 1)``.

Each row: the share of R simulated models whose test rejects at alpha = 0.05, with its Clopper-Pearson 95%
interval. The null row of a valid test stays at or below 5%; Oren's sharded test with the population standard
deviation (their code) is shown beside the lab's sample standard deviation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from contaminate.calibration.statistics import clopper_pearson
from detect import markdown
from detect.detectors.sharded import permutation_test, sharded_test, shards_of

ALPHA = 0.05


def simulated_log_likelihood(n_items: int, delta: float, rng: np.random.Generator):
    """``orders -> log-likelihoods`` of one simulated model (see the module docstring)."""
    transitions = rng.standard_normal((n_items, n_items))
    transitions[np.arange(n_items - 1), np.arange(1, n_items)] += delta

    def log_likelihood(orders: list[list[int]]) -> list[float]:
        return [float(transitions[np.asarray(o[:-1]), np.asarray(o[1:])].sum()) for o in orders]

    return log_likelihood


def oren_population_p(differences: list[float]) -> float:
    """Oren et al.'s code's p-value from the sharded test's per-shard differences: their mean over the population
    standard deviation / sqrt(n), against a t distribution with n - 1 degrees of freedom."""
    differences = np.asarray(differences)
    z = differences.mean() / (differences.std() / np.sqrt(len(differences)))
    return float(stats.t.sf(z, df=len(differences) - 1))


def rate(rejections: int, total: int) -> dict:
    interval = clopper_pearson(rejections, total)
    return {"rate": interval["rate"], "low": interval["low"], "high": interval["high"], "n": total}


def run(replications: int, seed: int) -> list[dict]:
    designs = [("permutation", n, None, m) for n, m in ((8, 19), (8, 39), (20, 19), (20, 39), (20, 99), (40, 39))]
    designs += [("sharded", n, shards, m) for n, shards, m in ((20, 10, 5), (20, 5, 25), (40, 10, 5), (40, 10, 25),
                                                               (40, 5, 25))]
    rows = []
    for test, n_items, n_shards, n_permutations in designs:
        for delta in (0.0, 0.5, 1.0, 2.0):
            rng = np.random.default_rng([seed, n_items, int(delta * 10), n_permutations])
            lab = oren = 0
            for r in range(replications):
                log_likelihood = simulated_log_likelihood(n_items, delta, rng)
                if test == "permutation":
                    lab += permutation_test(log_likelihood, n_items, n_permutations=n_permutations, alpha=ALPHA,
                                            seed=r)["significant"]
                else:
                    found = sharded_test(log_likelihood, n_items, n_shards=n_shards, n_permutations=n_permutations,
                                         alpha=ALPHA, seed=r)
                    lab += found["significant"]
                    oren += oren_population_p(found["shard_differences"]) <= ALPHA
            row = {"test": test, "n_instances": n_items, "n_permutations": n_permutations,
                   "n_shards": len(shards_of(n_items, n_shards)) if n_shards else None,
                   "delta": delta, "lab": rate(lab, replications)}
            if test == "sharded":
                row["oren_population_std"] = rate(oren, replications)
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    """The markdown table of ``rows`` (docs/detectors.md includes it; tests/test_docs.py checks it is current)."""
    def cell(found: dict | None) -> str:
        return "" if found is None else markdown.interval_text(found["rate"], found["low"], found["high"], ".3f")

    lines = markdown.table(["test", "instances", "shards", "orders per shard / permutations", "leak delta",
                   "rejects at 5% [95% CI]", "Oren's code (population sd)"])
    for row in rows:
        lines.append(markdown.row([row["test"], row["n_instances"], row["n_shards"] or "-", row["n_permutations"],
                                   f"{row['delta']:g}", cell(row["lab"]), cell(row.get("oren_population_std"))]))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/order_tests_power"))
    args = parser.parse_args()
    started = time.time()
    rows = run(args.replications, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "power.json").write_text(json.dumps({"replications": args.replications, "seed": args.seed,
                                                     "alpha": ALPHA, "rows": rows}, indent=1) + "\n")
    (args.out / "power.md").write_text(table(rows))
    print(table(rows))
    print(f"{time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
