"""The statistics every calibrated number rests on (SPEC section 9), as pure functions on arrays.

- ``hierarchical_bootstrap``: the interval of a mean over models, resampling member draws, then training seeds
  within a draw, then instances within a model. Instances that share a model are not independent, and models that
  share a draw share their members' texts, so each level is resampled where its variation lives.
- ``clopper_pearson``: the exact binomial interval of a rate over independent units (k of n models flagged).
- ``conformal_threshold``: a threshold fitted on clean scores with a finite-sample guarantee on the FPR.
- ``equivalence``: whether a rate is within a budget plus a tolerance, as a one-sided exact binomial test, with the
  power the data give; "not enough data" when it has none.
- ``platt``: a calibrated score (the probability of membership) from planted examples.

A unit is one (member draw, training seed) pair: ``Unit = tuple[int, int]``.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy.stats import beta, binom

Unit = tuple[int, int]  # (member draw, training seed)
CONFIDENCE = 0.95


def unit_label(unit: Unit) -> str:
    """A unit as calibration.json names it: "d1s0" is draw 1 trained with seed 0."""
    return f"d{unit[0]}s{unit[1]}"


def units_text(units: Sequence[Unit]) -> str:
    """How many independent units a number rests on, as every table says it: "6 models (3 draws x 2 seeds)" where
    every draw was trained with every seed, "3 models (3 draws, 3 seeds)" where not (each seed its own draw)."""
    units = sorted(set(units))
    draws, seeds = {d for d, _ in units}, {s for _, s in units}
    models = "model" if len(units) == 1 else "models"
    crossed = " x " if len(units) == len(draws) * len(seeds) else ", "
    return f"{len(units)} {models} ({len(draws)} draw{'s' * (len(draws) != 1)}{crossed}{len(seeds)} seed" \
           f"{'s' * (len(seeds) != 1)})"


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> dict:
    """The exact two-sided interval of a binomial rate: k of n independent units flagged."""
    if n == 0:
        return {"rate": None, "low": None, "high": None, "k": 0, "n": 0}
    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - tail, k + 1, n - k))
    return {"rate": k / n, "low": low, "high": high, "k": int(k), "n": int(n)}


def auc_matrix(positives: np.ndarray, negatives: np.ndarray) -> np.ndarray:
    """ROC AUC (the Mann-Whitney statistic, ties one half) of each row pair: positives (R, m), negatives (R, n)."""
    greater = (positives[:, :, None] > negatives[:, None, :]).mean(axis=(1, 2))
    ties = (positives[:, :, None] == negatives[:, None, :]).mean(axis=(1, 2))
    return greater + 0.5 * ties


def tpr_at_fpr_matrix(positives: np.ndarray, negatives: np.ndarray, fpr: float) -> np.ndarray:
    """Per row: the share of positives above the threshold that flags at most ``fpr`` of the negatives (flag:
    score > the k-th largest negative, k = floor(fpr * n)). With n negatives, an FPR below 1/n flags none of them."""
    n = negatives.shape[1]
    allowed = int(math.floor(fpr * n + 1e-9))
    ordered = np.sort(negatives, axis=1)
    threshold = ordered[:, n - allowed - 1] if allowed < n else np.full(len(ordered), -np.inf)
    return (positives > threshold[:, None]).mean(axis=1)


def _instance_bank(strata: Sequence[np.ndarray], statistic: Callable[..., np.ndarray], n_resamples: int,
                   rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` values of a unit's statistic, each on its instances resampled with replacement within each
    stratum (members and non-members apart, so each keeps its size). ``statistic`` takes one (R, size) array per
    stratum and returns R values."""
    resampled = [stratum[rng.integers(0, len(stratum), size=(n_resamples, len(stratum)))] for stratum in strata]
    return np.asarray(statistic(*resampled), float)


def hierarchical_bootstrap(units: Mapping[Unit, Sequence[np.ndarray]], statistic: Callable[..., np.ndarray], *,
                           n_resamples: int = 2000, seed: int = 0, confidence: float = CONFIDENCE) -> dict:
    """The mean over units of a per-unit statistic, with a percentile interval from a three-level bootstrap: draws
    with replacement, then seeds with replacement within each drawn draw, then each chosen unit's instances
    (``units[unit]``: one array per stratum, resampled within it).

    ``statistic(*strata)`` maps one (R, size) array per stratum to R values (vectorised: AUC, TPR at an FPR, a mean).
    Each unit's instance level is drawn from a bank of ``n_resamples`` resampled values, one fresh pick per time the
    unit is chosen. For the mean of a balanced design the bootstrap variance is analytic:
    (1/D) [v_draws + v_seeds / S + v_instances / (S N)], with v the variances (divisor n) at each level
    (tests/test_statistics.py checks it). With one unit there is no interval: its estimate alone.
    """
    rng = np.random.default_rng(seed)
    keys = sorted(units)
    point = {unit: float(statistic(*(np.asarray(s)[None, :] for s in units[unit]))[0]) for unit in keys}
    estimate = float(np.mean(list(point.values()))) if keys else None
    draws = sorted({d for d, _ in keys})
    result = {"estimate": estimate, "low": None, "high": None, "n_units": len(keys), "n_draws": len(draws),
              "n_seeds": len({s for _, s in keys}), "per_unit": {unit_label(u): v for u, v in point.items()},
              "unit": units_text(keys) if keys else "no model"}
    if len(keys) < 2:
        return result
    banks = {unit: _instance_bank([np.asarray(s, float) for s in units[unit]], statistic, n_resamples, rng)
             for unit in keys}
    seeds_of = {d: [u for u in keys if u[0] == d] for d in draws}
    means = np.empty(n_resamples)
    for r in range(n_resamples):
        values = []
        for d in rng.choice(draws, size=len(draws)):
            members = seeds_of[d]
            for k in rng.integers(0, len(members), size=len(members)):
                values.append(banks[members[k]][rng.integers(n_resamples)])
        means[r] = np.mean(values)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return {**result, "low": float(low), "high": float(high)}


def conformal_threshold(clean: Sequence[float], alpha: float) -> dict:
    """A threshold on clean scores with a finite-sample FPR guarantee (split conformal): with the clean scores
    sorted, t is the k-th smallest, k = ceil((1 - alpha) (n + 1)), and a score flags when it is > t. For a new clean
    score exchangeable with these n, P(flag) <= 1 - k / (n + 1) <= alpha, in expectation over the clean set (with
    ties, strict > keeps it below). With n < 1/alpha - 1 clean scores no k <= n exists: t = inf, nothing flags
    (at 5% that needs 19 clean scores)."""
    values = np.sort(np.asarray(clean, float))
    n = len(values)
    k = math.ceil((1 - alpha) * (n + 1) - 1e-9)
    if n == 0 or k > n:
        return {"threshold": math.inf, "k": k, "n": n, "guarantee": None}
    return {"threshold": float(values[k - 1]), "k": k, "n": n, "guarantee": 1 - k / (n + 1)}


def equivalence(k: int, n: int, *, budget: float, tolerance: float, alpha: float = 0.05) -> dict:
    """Is a rate (k of n independent units flagged) within ``budget + tolerance``? An exact one-sided binomial test
    of H0: rate >= budget + tolerance ("within" when P(X <= k) <= alpha at that rate, i.e. the one-sided upper
    Clopper-Pearson bound is below it); "over" when the one-sided lower bound exceeds ``budget`` (the rate is over
    budget beyond chance); otherwise "not enough data". ``power``: the probability of concluding "within" if the
    true rate were exactly ``budget``, at this n. With 12 units, 5% budget and 5% tolerance no outcome concludes
    "within" (0.9^12 = 0.28 > 0.05): power 0, and the answer is "not enough data" whatever is seen."""
    if n == 0:
        return {"verdict": "no data", "k": 0, "n": 0, "p_within": None, "power": 0.0, "limit": budget + tolerance}
    limit = budget + tolerance
    p_within = float(binom.cdf(k, n, limit))
    critical = max((c for c in range(n + 1) if binom.cdf(c, n, limit) <= alpha), default=None)
    power = 0.0 if critical is None else float(binom.cdf(critical, n, budget))
    low = 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))  # one-sided lower bound
    verdict = "within" if p_within <= alpha else "over" if low > budget else "not enough data"
    return {"verdict": verdict, "k": int(k), "n": int(n), "rate": k / n, "p_within": p_within, "power": power,
            "limit": limit}


def platt(scores: Sequence[float], labels: Sequence[bool]) -> Callable[[np.ndarray], np.ndarray]:
    """Platt scaling: a logistic fit of membership on one score (Wei et al. 2026 calibrate with ten planted
    examples or fewer). Returns the map from a score to the probability of membership."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(scores, float).reshape(-1, 1)
    model = LogisticRegression(C=1e4, max_iter=1000).fit(x, np.asarray(labels, bool))
    return lambda values: model.predict_proba(np.asarray(values, float).reshape(-1, 1))[:, 1]


def brier(probabilities: Sequence[float], labels: Sequence[bool]) -> float:
    """Mean squared error of probabilities against 0/1 truth (0.25: a constant 0.5 on a balanced set)."""
    return float(np.mean((np.asarray(probabilities, float) - np.asarray(labels, float)) ** 2))
