"""Partition level: how often a rule flags a sample of a pool (exactly for Algorithm 2, by Monte Carlo for
Algorithm 1), rates over pools with intervals, the recommended rule, and the partition-level detectors."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Sequence

import numpy as np

from contaminate.calibration.constants import PAPER_RULE, RULE_GRID, SAMPLE_SIZE
from contaminate.calibration.instance_level import roc_with_interval
from contaminate.calibration.statistics import clopper_pearson, unit_label
from contaminate.calibration.studies import Instance, Partition, distinct
from detect.detectors.time_travel import Algorithm1
from detect.detectors.time_travel.stats import bootstrap_test


def alg2_flag_rate(n_exact: int, n_near: int, n_none: int, rule: tuple[int | None, int | None], *,
                   sample_size: int = SAMPLE_SIZE) -> float:
    """P(the rule flags a sample of ``sample_size`` drawn without replacement from a pool with these label
    counts): 1 - P(fewer than k_exact exact and fewer than k_near near-exact), a multivariate hypergeometric sum.
    A pool smaller than the sample is used whole."""
    total = n_exact + n_near + n_none
    m = min(sample_size, total)
    k_exact, k_near = (m + 1 if k is None else k for k in rule)
    clean = sum(math.comb(n_exact, x) * math.comb(n_near, y) * math.comb(n_none, m - x - y)
                for x in range(min(k_exact, n_exact + 1)) for y in range(min(k_near, n_near + 1))
                if 0 <= m - x - y <= n_none)
    return 1.0 - clean / math.comb(total, m)


def alg2_binomial_rate(p_exact: float, p_near: float, rule: tuple[int | None, int | None], *,
                       sample_size: int = SAMPLE_SIZE) -> float:
    """The same probability if each of the sample's instances were independently exact / near-exact with
    these rates (a multinomial): the FPR the rule implies from instance-level rates alone."""
    m = sample_size
    k_exact, k_near = (m + 1 if k is None else k for k in rule)
    p_none = max(0.0, 1.0 - p_exact - p_near)
    clean = sum(math.factorial(m) / (math.factorial(x) * math.factorial(y) * math.factorial(m - x - y))
                * p_exact ** x * p_near ** y * p_none ** (m - x - y)
                for x in range(k_exact) for y in range(k_near) if x + y <= m)
    return max(0.0, 1.0 - clean)  # float error can take an all-clean sum a hair above 1


def alg1_flag_rate(pool: Sequence[Instance], score: str, *, sample_size: int = SAMPLE_SIZE, draws: int = 200,
                   n_resamples: int = 2000, alpha: float = 0.05, seed: int = 0) -> float:
    """P(Algorithm 1's paired bootstrap test is significant on a random sample of the pool) by Monte Carlo."""
    usable = sorted((i for i in pool if i.general is not None), key=lambda i: i.guided.get("instance_id", 0))
    pairs = np.array([(i.guided[score], i.general[score]) for i in usable], float)
    m = min(sample_size, len(pairs))
    if m and m == len(pairs):
        # the whole pool is the one sample: the study's own test (its instances in id order, Algorithm 1's
        # resamples, the study's seed), so that this rate and the verdict the study printed cannot disagree (a p
        # of 0.0505 once tipped under 0.05 in a re-run with other resamples: results/profile_cpu, issue 47)
        p_value = bootstrap_test(pairs[:, 0], pairs[:, 1], paired=True, n_resamples=Algorithm1().n_resamples,
                                 seed=usable[0].seed)
        return float(p_value <= alpha)
    rng = np.random.default_rng(seed)
    n_draws = draws
    significant = 0
    for draw in range(n_draws):
        chosen = pairs[rng.choice(len(pairs), size=m, replace=False)]
        p_value = bootstrap_test(chosen[:, 0], chosen[:, 1], paired=True, n_resamples=n_resamples, seed=seed + draw)
        significant += p_value <= alpha
    return significant / n_draws


def pools_of(instances: Sequence[Instance]) -> dict[tuple[str, str, str], list[int]]:
    """Instance positions by (condition, cell, model): the pools partition samples are drawn from. A pool is one
    model's cell: a sample never mixes instances of two models (two models' single near-exact replicas are no
    model's two)."""
    pools: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for position, instance in enumerate(instances):
        pools[(instance.condition, instance.cell, unit_label(instance.unit))].append(position)
    # One computation, one pool: a cell shared by studies (the clean model's cells under two doses of a seed, a
    # planted run's never-planted group under each of its groups) is the same instances under the same model. An
    # instance without an observation (built by hand) is its own.
    found, seen = {}, set()
    for pool, positions in pools.items():
        signature = tuple(sorted(instances[p].observation or f"#{p}" for p in positions))
        if signature not in seen:
            seen.add(signature)
            found[pool] = positions
    return found


def rate_summary(rates: Sequence[float], *, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Mean of per-pool rates with an interval: exact (Clopper-Pearson) where every pool's rate is 0 or 1 (a pool
    the size of the sample: its one verdict), else a percentile bootstrap over pools."""
    rates = np.asarray(rates, float)
    if rates.size == 0:
        return {"mean": None, "low": None, "high": None, "n_pools": 0}
    if np.isin(rates, (0.0, 1.0)).all():
        exact = clopper_pearson(int(rates.sum()), rates.size)
        return {"mean": exact["rate"], "low": exact["low"], "high": exact["high"], "n_pools": int(rates.size),
                "interval": "clopper-pearson"}
    rng = np.random.default_rng(seed)
    means = rates[rng.integers(0, rates.size, size=(n_resamples, rates.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return {"mean": float(rates.mean()), "low": float(low), "high": float(high), "n_pools": int(rates.size),
            "interval": "bootstrap over pools"}


def partition_rates(instances: Sequence[Instance], labels: Sequence[str], pools: dict, *,
                    sample_size: int = SAMPLE_SIZE) -> dict:
    """Per rule in RULE_GRID: every pool's Algorithm 2 flag rate under these labels, TPR, FPR, accuracy, and
    the binomial FPR from the negatives' instance-level exact / near-exact rates (each observation once)."""
    first = {id(i) for i in distinct(instances)}
    negatives = [label for label, i in zip(labels, instances) if not i.positive and id(i) in first]
    p_exact, p_near = negatives.count("exact") / len(negatives), negatives.count("near_exact") / len(negatives)
    counts = {}  # (exact, near-exact, neither) per pool; unparseable counts as neither, as in alg2_verdict
    for pool, positions in pools.items():
        pool_labels = [labels[p] for p in positions]
        n_exact, n_near = pool_labels.count("exact"), pool_labels.count("near_exact")
        counts[pool] = (n_exact, n_near, len(pool_labels) - n_exact - n_near)
    results = {}
    for rule in RULE_GRID:
        per_pool = {pool: alg2_flag_rate(*counted, rule, sample_size=sample_size) for pool, counted in counts.items()}
        results[rule] = summarize_pools(per_pool, instances, pools)
        results[rule]["binomial_fpr"] = alg2_binomial_rate(p_exact, p_near, rule, sample_size=sample_size)
    return {"rules": results, "instance_rates": {"exact": p_exact, "near_exact": p_near}}


def summarize_pools(per_pool: dict, instances: Sequence[Instance], pools: dict) -> dict:
    positive = {pool: instances[positions[0]].positive for pool, positions in pools.items()}
    tpr = rate_summary([rate for pool, rate in per_pool.items() if positive[pool]])
    fpr = rate_summary([rate for pool, rate in per_pool.items() if not positive[pool]])
    correct = [rate if positive[pool] else 1 - rate for pool, rate in per_pool.items()]
    return {"tpr": tpr, "fpr": fpr, "accuracy": rate_summary(correct), "per_pool": per_pool}


def recommend_rule(rules: dict, *, partition_fpr: float) -> tuple[int | None, int | None] | None:
    """The rule with the highest TPR whose measured and binomial FPR both stay within ``partition_fpr``; among
    equals (to 2 decimals), the lower measured FPR, then the lower binomial FPR, then the paper's rule, then the
    smaller counts (the rule that needs the least evidence, so the least likely to miss on new data). None if no
    rule does."""
    admissible = [(rule, r) for rule, r in rules.items()
                  if r["fpr"]["mean"] is not None and r["fpr"]["mean"] <= partition_fpr
                  and r["binomial_fpr"] <= partition_fpr and r["tpr"]["mean"] is not None]
    if not admissible:
        return None

    def preference(item):
        (k_exact, k_near), r = item
        # Rates to 2 decimals: a difference of 1e-4 in a pooled rate is not evidence for a rule.
        return (round(r["tpr"]["mean"], 2), -round(r["fpr"]["mean"], 2), -round(r["binomial_fpr"], 2),
                (k_exact, k_near) == PAPER_RULE, -(k_exact or 99), -(k_near or 99))

    return max(admissible, key=preference)[0]


def partition_level(partitions: Sequence[Partition], instances: Sequence[Instance], pools: dict, *,
                    seed: int = 0) -> dict:
    """Every partition-level detector as the studies ran it on their cells (n_detect-instance samples for
    Algorithms 1 and 2, whole pools for Cheat? and the sharded test): a ROC over partitions of each statistic
    (a clean cell shared by studies once), and each verdict's flag rate per pool (one model's cell)."""
    observed = list({p.observation: p for p in reversed(partitions)}.values())[::-1]
    positive = [p.positive for p in observed]
    result = {"roc": {}, "verdicts": {}}
    if 0 < sum(positive) < len(positive):
        for name in sorted({s for p in observed for s in p.statistics}):
            chosen = [p for p in observed if name in p.statistics]
            labels = [p.positive for p in chosen]
            if 0 < sum(labels) < len(labels):
                result["roc"][name] = roc_with_interval(labels, [p.statistics[name] for p in chosen],
                                                        [f"{p.study}:{p.cell}" for p in chosen], seed=seed)
    for name in sorted({v for p in partitions for v in p.verdicts}):
        per_pool: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
        for p in partitions:
            pool = (p.condition, p.cell, unit_label(p.unit))
            if name in p.verdicts and pool in pools:
                per_pool[pool].append(p.verdicts[name])
        rates = {pool: float(np.mean(flags)) for pool, flags in per_pool.items()}
        result["verdicts"][name] = summarize_pools(rates, instances, {pool: pools[pool] for pool in rates})
    return result
