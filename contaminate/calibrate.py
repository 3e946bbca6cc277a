"""Calibration from ground truth: how good each detector is, and the judge's thresholds chosen from data.

    python -m contaminate.calibrate runs/dose_response/<time>                 # a multirun folder, or study folders
    python -m contaminate.calibrate runs/contaminate/a runs/contaminate/b --exact-fpr 0.005 --near-exact-fpr 0.03

Reads every finished study under the folders (``results.jsonl`` + ``manifest.json``) and writes to ``--out``
(default ``<first folder>/calibration``): ``calibration.json`` (the thresholds; ``judge.calibration=<path>``
loads them into any detection), ``calibration.md``, ``dose_response.csv``/``.md`` and PNG plots.

Ground truth: an instance is positive when it was trained into the model it is detected on (the
contaminated x members cell); every other instance (the clean base model's, the contaminated model's
non-members and other split) is negative.

- Instance level, every score of the guided completion (``rouge_l``, ``semantic``) and its gain over the
  general completion (``rouge_l_gain``: an instance-level Algorithm 1): ROC, AUC with a 95% bootstrap interval,
  TPR at 1% and 5% FPR.
- Thresholds: ``exact_threshold`` is the lowest ROUGE-L whose exact labels stay within ``--exact-fpr`` of the
  negatives; ``near_exact_threshold`` (per score) the lowest whose exact-or-near-exact labels stay within
  ``--near-exact-fpr``. With several seeds, the partition-level numbers for "calibrated" use thresholds fitted
  on the other seeds (cross-fitting), so they are not scored on the data that chose them.
- Every detector ranked by AUC (``ranking``): instance scores (also the logit scores, and each also on the
  contaminated model alone), and partition statistics over study cells (Algorithm 1: 1 - p; Algorithm 2: the
  replica count; ChatGPT-Cheat?: the best replica ROUGE-L; the sharded likelihood test: 1 - p).
- Partition level: a pool is one cell of one condition (every setting but the seed), pooled over seeds. The
  rate at which a rule flags a random 10-instance sample of a pool is exact for Algorithm 2 (a multivariate
  hypergeometric sum over the pool's exact / near-exact / none counts) and Monte Carlo for Algorithm 1 (the
  paired bootstrap test on sampled instances). TPR is the mean rate over positive pools, FPR over negative
  pools, with 95% intervals from resampling pools; the binomial FPR is what the rule implies if instances
  were independent draws at the negatives' instance-level rates. ChatGPT-Cheat? (strict, lenient) and the sharded
  test are rated as the studies ran them, on whole pools: a pool's rate is the share of its studies flagged.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np

from detect.detectors import describe, instance_scores, read_back
from detect.errors import InputError
from detect.judge import ThresholdJudge, normalize
from detect.run import SCORES, verdicts
from detect.stats import bootstrap_test

SAMPLE_SIZE = 10                      # the paper's partition sample
# Default instance-level targets: at 0.2% exact and 2% exact-or-near-exact among clean instances, the paper's
# rule (>= 1 exact or >= 2 near-exact of 10) flags a clean partition with probability 0.033 under the binomial
# model (alg2_binomial_rate), inside a 5% partition budget; 1% / 5% would give 0.149.
EXACT_FPR, NEAR_EXACT_FPR, PARTITION_FPR = 0.002, 0.02, 0.05
FPR_POINTS = (0.01, 0.05)             # TPR reported at these instance-level FPRs
RULE_GRID = [(k_exact, k_near) for k_exact in (1, 2, 3, None) for k_near in (1, 2, 3, 4, 5, None)
             if (k_exact, k_near) != (None, None)]    # None: that count never flags
PAPER_RULE = (1, 2)
PAPER_JUDGE = ThresholdJudge()        # exact 0.95, near-exact 0.75 on ROUGE-L


@dataclass
class Instance:
    """One instance of one cell of one study: its guided (and general) row and its ground truth."""
    study: str
    seed: int
    condition: str               # every setting of the study but the seed, as a key
    cell: str
    positive: bool
    guided: dict
    general: dict | None
    observation: str = ""        # the model that answered + the prompt: equal for a clean cell shared by studies
    judge: str = "threshold"     # the judge the study ran (its labels are in guided["judge"])
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def exact_score(self) -> float:
        """ROUGE-L, or 1.0 for texts equal after normalisation: what the judge's exact label compares."""
        equal = normalize(self.guided["reference"]) == normalize(self.guided["completion"])
        return 1.0 if equal else self.guided["rouge_l"]


@dataclass
class Partition:
    """One cell of one study as a partition: every partition-level detector's verdict and statistic on it."""
    study: str
    seed: int
    condition: str
    cell: str
    positive: bool
    verdicts: dict[str, bool]
    statistics: dict[str, float]  # larger = more contaminated, for a partition-level ROC
    observation: str = ""         # equal for a clean cell shared by studies


def needs(name: str) -> str:
    """What a detector needs of the model: the README's and the report's "needs" column (from the registry)."""
    return describe(name)


def cell_partition(cell: dict) -> tuple[dict[str, bool], dict[str, float]]:
    """A study cell's partition verdicts and statistics (summary.json), from every registered detector's block:
    Algorithm 1 (1 - p per score), Algorithm 2 (replica count, exact ones first), ChatGPT-Cheat? (best replica
    ROUGE-L; strict and lenient verdicts), the sharded likelihood test (1 - p), and any detector added since."""
    statistics = {name: value for cls, block in read_back(cell)
                  for name, value in cls.statistics(block, cell["n_instances"]).items()}
    return verdicts(cell), statistics


# ---------------------------------------------------------------------------------------------- gathering

def find_studies(folders: Sequence[str | Path]) -> list[Path]:
    """Every finished study (a folder with results.jsonl and manifest.json) under the given folders."""
    found: list[Path] = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise InputError(f"{folder}: no such folder; give study or multirun folders (runs/...)")
        found += sorted(p.parent for p in folder.rglob("results.jsonl") if (p.parent / "manifest.json").is_file())
    found = list(dict.fromkeys(p.resolve() for p in found))
    if not found:
        raise InputError(f"no finished study under {', '.join(map(str, folders))} (a study folder holds "
                         f"results.jsonl and manifest.json); run python -m contaminate first")
    return found


def condition_of(manifest: dict) -> dict:
    """The settings that define a condition: everything that shapes the study except its seed."""
    hyperparameters = dict(manifest["contaminate"])
    return {"dataset": manifest["dataset"]["key"], "model": manifest["base_model"]["name"],
            "n_members": len(manifest["member_ids"]), "n_detect": len(manifest["detection_ids"]["members"]),
            "format": manifest["format"]["name"], "prompt_format": manifest["detect"].get("prompt_format"),
            **hyperparameters}


def load_instances(folders: Sequence[str | Path]) -> tuple[list[Instance], dict[str, dict], list[Partition]]:
    """The instances of every study under ``folders``, each condition's settings (by condition key) and every
    study cell as a partition. A second study with the same condition and seed is a rerun, and is skipped."""
    instances, conditions, seen, duplicates, partitions = [], {}, {}, [], []
    registered = set(instance_scores())  # every detector's score of the whole instance (local models)
    for study in find_studies(folders):
        manifest = json.loads((study / "manifest.json").read_text())
        settings = condition_of(manifest)
        key = json.dumps(settings, sort_keys=True, default=str)
        seed = manifest["seeds"]["sampling"]
        if (key, seed) in seen:  # a rerun of the same study (same instances, same cached rows): count it once
            duplicates.append(f"{study} (same condition and seed as {seen[key, seed]})")
            continue
        seen[key, seed] = study
        conditions[key] = settings
        # Studies that differ only in the contaminated model (exposure, learning rate...) share the clean
        # model's cells, row for row, from the cache: the same observation, to be counted once when pooling.
        # An observation is a model, the detector's settings (a chat prompt is another observation) and a prompt.
        detector = json.dumps(manifest["detect"], sort_keys=True)
        models = {"contaminated": [manifest["checkpoint"].get("id", str(study)), detector],
                  "clean": [json.dumps(manifest["base_model"], sort_keys=True), detector]}
        rows = [json.loads(line) for line in (study / "results.jsonl").read_text().splitlines() if line.strip()]
        by_instance: dict[tuple, dict] = defaultdict(dict)
        for row in rows:
            by_instance[(row["cell"], row["instance_id"])][row["instruction"]] = row
        for (cell, _), pair in by_instance.items():
            guided, general = pair.get("guided"), pair.get("general")
            if guided is None:
                continue
            observation = json.dumps([models[guided["checkpoint"]], guided["split"], guided["instance_id"],
                                      guided["prompt"]])
            instance = Instance(study=str(study), seed=seed, condition=key, cell=cell,
                                positive=guided["ground_truth"] == "contaminated", guided=guided, general=general,
                                observation=observation, judge=manifest.get("judge", {}).get("name", "threshold"))
            for score in SCORES:
                if guided.get(score) is None:
                    continue
                instance.scores[score] = guided[score]
                if general is not None and general.get(score) is not None:
                    instance.scores[f"{score}_gain"] = guided[score] - general[score]
            for score in (key for key in guided if key in registered):  # detectors' scores, in row order
                if guided.get(score) is not None:
                    instance.scores[score] = guided[score]
            instances.append(instance)
        summary = json.loads((study / "summary.json").read_text()) if (study / "summary.json").is_file() else {}
        for cell, block in summary.get("cells", {}).items():
            cell_verdicts, statistics = cell_partition(block)
            observation = json.dumps([models[block["checkpoint"]], cell, block], sort_keys=True, default=str)
            partitions.append(Partition(study=str(study), seed=seed, condition=key, cell=cell,
                                        positive=block["ground_truth"] == "contaminated", verdicts=cell_verdicts,
                                        statistics=statistics, observation=observation))
    for duplicate in duplicates:
        print(f"skipped {duplicate}", file=sys.stderr)
    if not any(i.positive for i in instances) or all(i.positive for i in instances):
        raise InputError("calibration needs both contaminated and clean instances; give folders of "
                         "python -m contaminate studies (each has both)")
    return instances, conditions, partitions


def distinct(instances: Sequence[Instance]) -> list[Instance]:
    """Each observation once (the first study's copy): what instance-level statistics and thresholds use."""
    return list({i.observation or id(i): i for i in reversed(instances)}.values())[::-1]


def score_names(instances: Sequence[Instance]) -> list[str]:
    """The scores every instance has, in SCORES order, then gains, then the detectors' scores as the rows hold them."""
    common = set.intersection(*(set(i.scores) for i in instances))
    order = [*SCORES, *(f"{s}_gain" for s in SCORES), *instances[0].scores]
    return [name for name in order if name in common] + sorted(common - set(order))


# ---------------------------------------------------------------------------------------------- instance level

def roc(labels: Sequence[bool], scores: Sequence[float]) -> dict:
    """ROC curve, AUC and TPR at the FPR_POINTS (the best TPR whose FPR does not exceed the point)."""
    from sklearn.metrics import roc_auc_score, roc_curve

    labels, scores = np.asarray(labels, bool), np.asarray(scores, float)
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    return {"auc": float(roc_auc_score(labels, scores)), "fpr": fpr.tolist(), "tpr": tpr.tolist(),
            "tpr_at_fpr": {str(point): float(tpr[fpr <= point + 1e-12].max()) for point in FPR_POINTS},
            "n_positive": int(labels.sum()), "n_negative": int((~labels).sum())}


def auc_interval(labels: Sequence[bool], scores: Sequence[float], clusters: Sequence[str], *,
                 n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict:
    """A percentile bootstrap interval for the AUC, resampling within each class.

    Instances of one cell share a checkpoint and a sample, so they are not independent: with at least 5 cells
    of each class the cells are resampled (a cluster bootstrap); with fewer, the instances are.
    """
    from sklearn.metrics import roc_auc_score

    labels, scores, clusters = np.asarray(labels, bool), np.asarray(scores, float), np.asarray(clusters)
    rng = np.random.default_rng(seed)
    groups = {cls: [np.flatnonzero((clusters == c) & (labels == cls)) for c in np.unique(clusters[labels == cls])]
              for cls in (True, False)}
    by_cluster = all(len(g) >= 5 for g in groups.values())
    estimates = []
    for _ in range(n_resamples):
        if by_cluster:
            index = np.concatenate([g[j] for g in groups.values() for j in rng.integers(len(g), size=len(g))])
        else:
            index = np.concatenate([rng.choice(np.flatnonzero(labels == cls), size=int((labels == cls).sum()))
                                    for cls in (True, False)])
        estimates.append(roc_auc_score(labels[index], scores[index]))
    low, high = np.quantile(estimates, [(1 - confidence) / 2, (1 + confidence) / 2])
    return {"low": float(low), "high": float(high), "unit": "cell" if by_cluster else "instance",
            "n_resamples": n_resamples}


def roc_with_interval(labels: Sequence[bool], scores: Sequence[float], clusters: Sequence[str], *,
                      seed: int = 0) -> dict:
    """``roc`` with the AUC's bootstrap interval (``auc_interval``) as ``auc_ci``."""
    return {**roc(labels, scores), "auc_ci": auc_interval(labels, scores, clusters, seed=seed)}


def lowest_threshold(scores: Sequence[float], positive: Sequence[bool], target_fpr: float, *,
                     already: Sequence[bool] | None = None) -> dict:
    """The lowest threshold t such that the negatives flagged (score >= t, or ``already`` flagged) are at most
    ``target_fpr`` of the negatives, with the FPR and TPR it achieves on these instances.

    t is placed halfway between the lowest score it flags and the highest score below that, so that a new
    score equal to either observed neighbour is judged as here. If even t = 1.0 flags too many negatives
    (negatives replayed exactly), t = 1.0 and ``attainable`` is false.
    """
    scores, positive = np.asarray(scores, float), np.asarray(positive, bool)
    already = np.zeros_like(positive) if already is None else np.asarray(already, bool)
    negatives = ~positive
    if not negatives.any() or not positive.any():
        raise InputError("threshold selection needs both positive and negative instances")
    candidates = np.unique(np.append(scores, 1.0))
    for position, candidate in enumerate(candidates):
        flagged = already | (scores >= candidate)
        fpr = float(flagged[negatives].mean())
        if fpr <= target_fpr + 1e-12:
            threshold = candidate if position == 0 else (candidate + candidates[position - 1]) / 2
            if candidate == 1.0 and position > 0 and not (scores == 1.0).any():
                threshold = 1.0  # nothing scored 1.0: only a perfect replay should pass
            return {"threshold": float(threshold), "fpr": fpr, "tpr": float(flagged[positive].mean()),
                    "target_fpr": target_fpr, "attainable": True}
    flagged = already | (scores >= 1.0)
    return {"threshold": 1.0, "fpr": float(flagged[negatives].mean()), "tpr": float(flagged[positive].mean()),
            "target_fpr": target_fpr, "attainable": False}


def fit_thresholds(instances: Sequence[Instance], *, exact_fpr: float, near_exact_fpr: float) -> dict:
    """exact_threshold on ROUGE-L and a near_exact_threshold per score (SCORES present), from ground truth."""
    if near_exact_fpr < exact_fpr:
        raise InputError(f"--near-exact-fpr {near_exact_fpr} is below --exact-fpr {exact_fpr}: a near-exact "
                         f"label is the weaker claim, so its false-positive budget must be at least as large")
    positive = np.array([i.positive for i in instances])
    exact_scores = np.array([i.exact_score for i in instances])
    exact = lowest_threshold(exact_scores, positive, exact_fpr)
    exact_flagged = exact_scores >= exact["threshold"]
    near = {}
    for score in (s for s in SCORES if all(s in i.scores for i in instances)):
        near[score] = lowest_threshold([i.scores[score] for i in instances], positive, near_exact_fpr,
                                       already=exact_flagged)
    if "rouge_l" in near:  # same score: the judge requires near <= exact; the fit gives it, up to the midpoint
        near["rouge_l"]["threshold"] = min(near["rouge_l"]["threshold"], exact["threshold"])
    return {"exact_threshold": exact["threshold"],
            "near_exact_threshold": {score: result["threshold"] for score, result in near.items()},
            "achieved": {"exact": exact, "near_exact": near}}


def rates_at(instances: Sequence[Instance], exact_threshold: float, near_exact_threshold: float,
             score: str) -> dict:
    """FPR and TPR of the exact labels and of the exact-or-near-exact labels at given thresholds."""
    positive = np.array([i.positive for i in instances])
    exact = np.array([i.exact_score for i in instances]) >= exact_threshold
    either = exact | (np.array([i.scores[score] for i in instances]) >= near_exact_threshold)
    return {"exact": {"fpr": float(exact[~positive].mean()), "tpr": float(exact[positive].mean())},
            "near_exact": {"fpr": float(either[~positive].mean()), "tpr": float(either[positive].mean())}}


def judges_from(thresholds: dict) -> dict[str, ThresholdJudge]:
    """One threshold judge per near-exact score, with fitted thresholds."""
    return {score: ThresholdJudge(thresholds["exact_threshold"], near, score=score)
            for score, near in thresholds["near_exact_threshold"].items()}


def label(judge: ThresholdJudge, instance: Instance) -> str:
    return judge.label(instance.guided["reference"], instance.guided["completion"], instance.guided)


def cross_fitted_labels(instances: Sequence[Instance], *, exact_fpr: float, near_exact_fpr: float,
                        score: str) -> tuple[list[str], str]:
    """Each instance labelled with thresholds fitted without its seed (in-sample if there is one seed)."""
    seeds = sorted({i.seed for i in instances})
    if len(seeds) < 2:
        fitted = fit_thresholds(distinct(instances), exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr)
        judge = judges_from(fitted)[score]
        return [label(judge, i) for i in instances], "in-sample (one seed)"
    labels: list[str | None] = [None] * len(instances)
    for seed in seeds:
        rest = distinct([i for i in instances if i.seed != seed])
        if not any(i.positive for i in rest) or all(i.positive for i in rest):
            raise InputError(f"seed {seed}: the other seeds lack positives or negatives; cannot cross-fit")
        judge = judges_from(fit_thresholds(rest, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr))[score]
        for position, instance in enumerate(instances):
            if instance.seed == seed:
                labels[position] = label(judge, instance)
    return labels, f"cross-fitted over {len(seeds)} seeds (thresholds from the other seeds)"


# ---------------------------------------------------------------------------------------------- partition level

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
    pairs = np.array([(i.guided[score], i.general[score]) for i in pool if i.general is not None], float)
    m = min(sample_size, len(pairs))
    rng = np.random.default_rng(seed)
    n_draws = 1 if m == len(pairs) else draws  # the whole pool: one sample, no Monte Carlo
    significant = 0
    for draw in range(n_draws):
        chosen = pairs[rng.choice(len(pairs), size=m, replace=False)]
        p_value = bootstrap_test(chosen[:, 0], chosen[:, 1], paired=True, n_resamples=n_resamples, seed=seed + draw)
        significant += p_value <= alpha
    return significant / n_draws


def pools_of(instances: Sequence[Instance]) -> dict[tuple[str, str], list[int]]:
    """Instance positions by (condition, cell): the pools partition samples are drawn from."""
    pools: dict[tuple[str, str], list[int]] = defaultdict(list)
    for position, instance in enumerate(instances):
        pools[(instance.condition, instance.cell)].append(position)
    return dict(pools)


def rate_summary(rates: Sequence[float], *, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Mean of per-pool rates with a percentile bootstrap interval over pools."""
    rates = np.asarray(rates, float)
    if rates.size == 0:
        return {"mean": None, "low": None, "high": None, "n_pools": 0}
    rng = np.random.default_rng(seed)
    means = rates[rng.integers(0, rates.size, size=(n_resamples, rates.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return {"mean": float(rates.mean()), "low": float(low), "high": float(high), "n_pools": int(rates.size)}


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
    (a clean cell shared by studies once), and each verdict's flag rate per pool (pooled over seeds)."""
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
        per_pool: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for p in partitions:
            if name in p.verdicts and (p.condition, p.cell) in pools:
                per_pool[(p.condition, p.cell)].append(p.verdicts[name])
        rates = {pool: float(np.mean(flags)) for pool, flags in per_pool.items()}
        result["verdicts"][name] = summarize_pools(rates, instances, {pool: pools[pool] for pool in rates})
    return result


# ---------------------------------------------------------------------------------------------- judges

def agreement(a: Sequence[str], b: Sequence[str], classes: Sequence[str]) -> dict:
    """Share of equal labels, Cohen's kappa (None when undefined: one class on both sides) and the confusion
    matrix (rows: ``a``, columns: ``b``, in ``classes`` order)."""
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    same = float(np.mean([x == y for x, y in zip(a, b)]))
    kappa = None if len(set(a) | set(b)) < 2 else float(cohen_kappa_score(a, b, labels=list(classes)))
    return {"agreement": same, "kappa": kappa, "classes": list(classes),
            "confusion": confusion_matrix(a, b, labels=list(classes)).tolist()}


def judge_agreement(instances: Sequence[Instance], threshold_labels: dict[str, list[str]]) -> dict | None:
    """For studies run with judge=llm: the LLM judge against the threshold judges (paper and calibrated
    thresholds; labels exact / near_exact / none / unparseable) and each against ground truth (replica claimed:
    exact or near-exact, vs member of the contaminated model). None if no study used an LLM judge."""
    judged = [(p, i) for p, i in enumerate(instances) if i.judge == "llm" and i.guided.get("judge")]
    if not judged:
        return None
    from detect.judge import LABELS

    llm = [i.guided["judge"] for _, i in judged]
    truth = ["member" if i.positive else "clean" for _, i in judged]
    claimed = {"llm": llm, **{name: [labels[p] for p, _ in judged] for name, labels in threshold_labels.items()}}
    result = {"n": len(judged), "unparseable": llm.count("unparseable")}
    for name in threshold_labels:
        result[f"llm_vs_{name}"] = agreement(llm, claimed[name], LABELS)
    for name, labels in claimed.items():
        replica = ["member" if label in ("exact", "near_exact") else "clean" for label in labels]
        result[f"{name}_vs_truth"] = agreement(replica, truth, ("member", "clean"))
    return result


# ---------------------------------------------------------------------------------------------- the whole

def calibrate(folders: Sequence[str | Path], *, exact_fpr: float = EXACT_FPR, near_exact_fpr: float = NEAR_EXACT_FPR,
              partition_fpr: float = PARTITION_FPR, score: str = "rouge_l", sample_size: int = SAMPLE_SIZE,
              alg1_draws: int = 200, seed: int = 0) -> dict:
    """Everything calibration.json and the reports hold, computed from the studies under ``folders``."""
    for name, value in (("--exact-fpr", exact_fpr), ("--near-exact-fpr", near_exact_fpr),
                        ("--partition-fpr", partition_fpr)):
        if not 0 <= value < 1:
            raise InputError(f"{name} {value} is not a rate in [0, 1)")
    instances, conditions, partitions = load_instances(folders)
    names = score_names(instances)
    if score not in names or score.endswith("_gain"):
        raise InputError(f"--score {score} is not a near-exact score of these studies; "
                         f"use one of {', '.join(s for s in names if not s.endswith('_gain'))}")
    observed = distinct(instances)
    positive = [i.positive for i in observed]
    cells = [f"{i.study}:{i.cell}" for i in observed]
    instance_level = {}
    for name in names:
        instance_level[name] = roc_with_interval(positive, [i.scores[name] for i in observed], cells, seed=seed)
    # The same on the contaminated model alone (members against its non-members and other split): the usual
    # membership-inference setting, where a score need not be comparable across models.
    same_model = [i for i in observed if i.guided.get("checkpoint") == "contaminated"]
    within_model = {}
    if 0 < sum(i.positive for i in same_model) < len(same_model):
        labels, clusters = [i.positive for i in same_model], [f"{i.study}:{i.cell}" for i in same_model]
        for name in names:
            within_model[name] = roc_with_interval(labels, [i.scores[name] for i in same_model], clusters, seed=seed)
    thresholds = fit_thresholds(observed, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr)

    pools = pools_of(instances)
    paper_labels = [label(PAPER_JUDGE, i) for i in instances]
    calibrated_labels, calibrated_how = cross_fitted_labels(instances, exact_fpr=exact_fpr,
                                                            near_exact_fpr=near_exact_fpr, score=score)
    alg2 = {"paper": partition_rates(instances, paper_labels, pools, sample_size=sample_size),
            "calibrated": partition_rates(instances, calibrated_labels, pools, sample_size=sample_size)}
    alg1 = {}
    for name in (s for s in SCORES if s in names and f"{s}_gain" in names):
        per_pool = {pool: alg1_flag_rate([instances[p] for p in positions], name, sample_size=sample_size,
                                         draws=alg1_draws, seed=seed)
                    for pool, positions in pools.items()}
        alg1[name] = summarize_pools(per_pool, instances, pools)
    recommended = recommend_rule(alg2["calibrated"]["rules"], partition_fpr=partition_fpr)
    partition_detectors = partition_level(partitions, instances, pools, seed=seed)

    return {
        "format": "contamination-lab calibration 1",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sources": sorted({i.study for i in instances}),
        "conditions": conditions,
        "n_instances": {"positive": sum(positive), "negative": len(positive) - sum(positive),
                        "in_pools": len(instances)},
        "targets": {"exact_fpr": exact_fpr, "near_exact_fpr": near_exact_fpr, "partition_fpr": partition_fpr,
                    "sample_size": sample_size},
        "thresholds": {"exact_threshold": thresholds["exact_threshold"],
                       "near_exact_threshold": thresholds["near_exact_threshold"]},
        "achieved": thresholds["achieved"],
        "paper_thresholds": {"exact_threshold": PAPER_JUDGE.exact_threshold,
                             "near_exact_threshold": PAPER_JUDGE.near_exact_threshold,
                             **rates_at(observed, PAPER_JUDGE.exact_threshold, PAPER_JUDGE.near_exact_threshold,
                                        PAPER_JUDGE.score)},
        "score": score,
        "calibrated_labels": calibrated_how,
        "paper_rule": PAPER_RULE,
        "rule": None if recommended is None else {"min_exact": recommended[0], "min_near_exact": recommended[1]},
        "instance": instance_level,
        "alg2": alg2,
        "alg1": alg1,
        "partition_detectors": partition_detectors,
        "instance_within_model": within_model,
        "ranking": ranking(instance_level, partition_detectors, within_model),
        "judges": judge_agreement(instances, {"paper": paper_labels, "calibrated": calibrated_labels}),
        "_instances": instances,          # for the reports; not written to calibration.json
        "_labels": {"paper": paper_labels, "calibrated": calibrated_labels},
    }


def ranking(instance_level: dict, partition_detectors: dict, within_model: dict | None = None) -> dict[str, list[dict]]:
    """Detectors by AUC, best first: instance scores at the instance level (each with its AUC on the
    contaminated model alone beside it), partition statistics over study cells."""
    def ranked(blocks: dict) -> list[dict]:
        rows = [{"detector": name, "needs": needs(name), "auc": block["auc"], "auc_low": block["auc_ci"]["low"],
                 "auc_high": block["auc_ci"]["high"], **{f"tpr_at_{p}_fpr": block["tpr_at_fpr"][str(p)]
                                                         for p in FPR_POINTS},
                 "n_positive": block["n_positive"], "n_negative": block["n_negative"]}
                for name, block in blocks.items()]
        return sorted(rows, key=lambda row: -row["auc"])

    instance = ranked(instance_level)
    for row in instance:
        block = (within_model or {}).get(row["detector"])
        row["auc_within_model"] = None if block is None else block["auc"]
        row["tpr_at_0.05_fpr_within_model"] = None if block is None else block["tpr_at_fpr"]["0.05"]
    return {"instance": instance, "partition": ranked(partition_detectors["roc"])}


def to_json(result: dict) -> dict:
    """calibration.json: everything but the instances; rules as "k_exact/k_near" keys, ROC curves kept."""
    def pools_keyed(block: dict) -> dict:  # (condition, cell) keys as "condition|cell" strings
        return {**block, "per_pool": {f"{c}|{cell}": rate for (c, cell), rate in block["per_pool"].items()}}

    def rules(block: dict) -> dict:
        return {**{k: v for k, v in block.items() if k != "rules"},
                "rules": {f"{k_e or '-'}/{k_n or '-'}": pools_keyed(r) for (k_e, k_n), r in block["rules"].items()}}

    out = {k: v for k, v in result.items()
           if not k.startswith("_") and k not in ("alg2", "alg1", "partition_detectors")}
    out["partition_detectors"] = {
        "roc": result["partition_detectors"]["roc"],
        "verdicts": {name: pools_keyed(block) for name, block in result["partition_detectors"]["verdicts"].items()}}
    out["alg2"] = {name: rules(block) for name, block in result["alg2"].items()}
    out["alg1"] = {name: pools_keyed(block) for name, block in result["alg1"].items()}
    return out


def main(argv: Sequence[str] | None = None) -> Path:
    from contaminate.calibration_report import write_reports

    parser = argparse.ArgumentParser(prog="python -m contaminate.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", help="study folders, or multirun folders holding studies")
    parser.add_argument("--out", help="output folder (default: <first folder>/calibration)")
    parser.add_argument("--exact-fpr", type=float, default=EXACT_FPR, help="instance-level FPR for exact labels")
    parser.add_argument("--near-exact-fpr", type=float, default=NEAR_EXACT_FPR,
                        help="instance-level FPR for exact-or-near-exact labels")
    parser.add_argument("--partition-fpr", type=float, default=PARTITION_FPR,
                        help="partition FPR a recommended rule keeps")
    parser.add_argument("--score", default="rouge_l", help="the near-exact score of the calibrated judge")
    parser.add_argument("--holds-at", type=float, default=0.8,
                        help="detection holds from an exposure on when partition TPR >= this (and FPR <= "
                             "--partition-fpr) there and at every higher exposure")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.folders[0]) / "calibration"
    result = calibrate(args.folders, exact_fpr=args.exact_fpr, near_exact_fpr=args.near_exact_fpr,
                       partition_fpr=args.partition_fpr, score=args.score)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(to_json(result), indent=1))
    write_reports(result, out, holds_at=args.holds_at)
    return out


if __name__ == "__main__":
    from detect.cli import one_line_errors

    with one_line_errors():
        folder = main()
    print(f"{folder / 'calibration.md'}\njudge.calibration={folder / 'calibration.json'}", file=sys.stdout)
