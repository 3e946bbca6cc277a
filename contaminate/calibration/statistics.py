"""The statistics every calibrated number rests on (method section 9), as pure functions on arrays.

- ``unit_interval``: the mean over independent units of a per-unit statistic, with a t-interval over the units. The
  independent unit is the member draw: models (training seeds) that share a draw share their members' texts, so they
  are averaged within their draw first, and the interval is Student's t over the draws' values (D - 1 degrees of
  freedom); its half-width is at least the normal one of the instance-level sampling variance the draws' values
  carry (``auc_floor``, ``share_floor``: analytic, at an add-half estimate), so that units that all read 1.00 do not
  print [1.00, 1.00].
  Below ``MIN_UNITS`` draws no interval is printed: the table says so. Coverage by simulation
  (tests/test_statistics.py, bench/interval_coverage.py): at least 0.93 for a nominal 95% at 3, 5 and 10 draws, where
  the percentile hierarchical bootstrap it replaces covered about 0.82 at 3.
- ``auc``: the one ROC AUC every table prints (the Mann-Whitney statistic, ties one half, as sklearn's
  ``roc_auc_score``); ``auc_matrix`` is the same statistic over many resampled rows at once.
- ``t_interval``: a plain mean over units with its Student t-interval (a paired move over draws), where no
  instance-level floor applies.
- ``clopper_pearson``: the exact binomial interval of a rate over independent units (k of n models flagged);
  ``count_of_units`` uses it wherever every unit's value is 0 or 1, and ``over_bound`` holds such a count against a
  stated bound (the one-sided exact binomial test). ``unit_interval`` names in ``method`` which part set its width.
- ``share_interval``: a share of instances flagged, over units, never narrower than Clopper-Pearson on the pooled
  count.
- ``conformal_threshold``: a threshold fitted on clean scores with a finite-sample guarantee on the FPR.
- ``equivalence``: whether a rate is within a budget plus a tolerance, as a one-sided exact binomial test, with the
  power the data give; "not enough data" when it has none.
- ``paired_comparisons``: detectors compared over the draws they share, paired t-tests with Holm's correction; the
  only ground on which a table may call one detector better than another.
- ``platt``: a calibrated score (the probability of membership) from planted examples.

A model is one (member draw, training seed) pair: ``Unit = tuple[int, int]``; the independent unit is its draw.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy.stats import beta, binom, binomtest, norm, rankdata
from scipy.stats import t as student_t

Unit = tuple[int, int]  # (member draw, training seed)
CONFIDENCE = 0.95
MIN_UNITS = 3  # draws: with fewer, no interval (a t-interval on 2 draws spans +-12.7 standard errors)


def unit_label(unit: Unit) -> str:
    """A model as calibration.json names it: "d1s0" is draw 1 trained with seed 0."""
    return f"d{unit[0]}s{unit[1]}"


def units_text(units: Sequence[Unit]) -> str:
    """How many independent units a number rests on, as every table says it: "3 draws (6 models)" (the draws are
    the independent units; the models, one per draw and training seed, sit inside them)."""
    units = sorted(set(units))
    draws = len({d for d, _ in units})
    return f"{draws} draw{'s' * (draws != 1)} ({len(units)} model{'s' * (len(units) != 1)})"


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> dict:
    """The exact two-sided interval of a binomial rate: k of n independent units flagged (scipy's
    ``binomtest(k, n).proportion_ci(method="exact")``). 0/6: [0.000, 0.459]; 6/6: [0.541, 1.000]; 3/3: [0.292, 1]."""
    if n == 0:
        return {"rate": None, "low": None, "high": None, "k": 0, "n": 0, "method": "Clopper-Pearson"}
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return {"rate": k / n, "low": float(ci.low), "high": float(ci.high), "k": int(k), "n": int(n),
            "method": "Clopper-Pearson"}


def over_bound(k: int, n: int, bound: float) -> float | None:
    """The one-sided exact binomial p of k or more of n units flagged if each were flagged with probability
    ``bound`` (a count held against a stated bound: 2 of 3 against 0.047 gives 0.0064)."""
    if n == 0 or bound is None:
        return None
    return float(binomtest(int(k), int(n), float(bound), alternative="greater").pvalue)


def count_of_units(per_unit: Mapping, confidence: float = CONFIDENCE) -> dict | None:
    """Where every unit's value is 0 or 1 (a model flagged or not: a partition that is its whole pool), the values
    are k of n outcomes, and their interval is Clopper-Pearson's, never a t-interval over 0/1 (6/6 by a floored t
    prints [0.95, 1.00]; exactly, [0.54, 1.00]). None where some value lies between."""
    values = list(per_unit.values())
    if not values or any(v not in (0.0, 1.0) for v in values):
        return None
    return clopper_pearson(int(sum(values)), len(values), confidence)


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """ROC AUC of ``positives`` over ``negatives``: the Mann-Whitney statistic, ties counting one half, which is
    sklearn's ``roc_auc_score`` (tests/test_statistics.py), by ranks and without its input checks (a bootstrap or a
    permutation null calls it a thousand times). NaN where either side is empty."""
    positives, negatives = np.asarray(positives, float).ravel(), np.asarray(negatives, float).ravel()
    m, n = positives.size, negatives.size
    if m == 0 or n == 0:
        return float("nan")
    ranks = rankdata(np.concatenate([positives, negatives]))
    return float((ranks[:m].sum() - m * (m + 1) / 2) / (m * n))


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """The mean of independent units' values with its Student t-interval (n - 1 degrees of freedom), named in
    ``method``; no interval from fewer than 2 units. For a paired move over draws: mean +- t s / sqrt(n)."""
    values = np.asarray(values, float)
    n = values.size
    mean = float(values.mean()) if n else float("nan")
    if n < 2:
        return {"estimate": mean, "low": None, "high": None, "n": n, "method": "t"}
    half = float(student_t.ppf((1 + confidence) / 2, n - 1)) * float(values.std(ddof=1)) / math.sqrt(n)
    return {"estimate": mean, "low": mean - half, "high": mean + half, "n": n, "method": "t"}


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


def auc_floor(positives: np.ndarray, negatives: np.ndarray) -> float:
    """The sampling variance of one model's AUC from its instances (Hanley & McNeil 1982), at the add-half estimate
    (U + 0.5) / (m n + 1), so that a perfect separation still carries the uncertainty of m x n pairs."""
    m, n = len(positives), len(negatives)
    if m == 0 or n == 0:
        return 0.0
    auc = (float(auc_matrix(np.asarray(positives, float)[None, :], np.asarray(negatives, float)[None, :])[0]) * m * n
           + 0.5) / (m * n + 1)
    q1, q2 = auc / (2 - auc), 2 * auc ** 2 / (1 + auc)
    return max(0.0, (auc * (1 - auc) + (m - 1) * (q1 - auc ** 2) + (n - 1) * (q2 - auc ** 2)) / (m * n))


def share_floor(flags: np.ndarray) -> float:
    """The sampling variance of one model's share of flagged instances, p (1 - p) / n at p = (k + 0.5) / (n + 1)."""
    return rate_floor(float(np.mean(flags)) if len(flags) else 0.0, len(flags))


def rate_floor(rate: float, n: int) -> float:
    """``share_floor`` of a rate already computed over n instances (a TPR at a fixed FPR: a share of the members)."""
    if n == 0:
        return 0.0
    p = (rate * n + 0.5) / (n + 1)
    return p * (1 - p) / n


def unit_interval(units: Mapping[Unit, Sequence[np.ndarray]], statistic: Callable[..., np.ndarray], *,
                  floor: Callable[..., float] | None = None, confidence: float = CONFIDENCE,
                  bounds: tuple[float, float] = (0.0, 1.0)) -> dict:
    """The mean over independent units of a per-model statistic, with a t-interval over the member draws.

    ``units[model]``: one array per stratum (members, non-members, ...); ``statistic(*strata)`` maps one (R, size)
    array per stratum to R values (vectorised; here R = 1). Each draw's value is the mean over its models (seeds);
    the estimate is the mean over draws, and the interval mean +- max(t(D - 1) s / sqrt(D), z sqrt(v)), with s the
    draws' standard deviation and v the instance-level variance their mean carries by ``floor(*strata)`` (a lower
    bound on its sampling variance, known rather than estimated: the normal quantile), clipped to ``bounds``. Fewer
    than ``MIN_UNITS`` draws: the estimate alone, and ``interval`` says why there is none."""
    keys = sorted(units)
    point = {u: float(statistic(*(np.asarray(s, float)[None, :] for s in units[u]))[0]) for u in keys}
    draws = sorted({d for d, _ in keys})
    of_draw = {d: [u for u in keys if u[0] == d] for d in draws}
    per_draw = {d: float(np.mean([point[u] for u in of_draw[d]])) for d in draws}
    values = np.array(list(per_draw.values()))
    result = {"estimate": float(values.mean()) if keys else None, "low": None, "high": None, "n_units": len(draws),
              "n_draws": len(draws), "n_models": len(keys), "n_seeds": len({s for _, s in keys}),
              "per_unit": {unit_label(u): v for u, v in point.items()}, "per_draw": per_draw,
              "unit": units_text(keys) if keys else "no model",
              "interval": f"t over {len(draws)} draws" if len(draws) >= MIN_UNITS else
              f"none: {len(draws)} draw{'s' * (len(draws) != 1)}, fewer than {MIN_UNITS}"}
    if len(draws) < MIN_UNITS:
        return result
    between = float(values.var(ddof=1)) / len(draws)
    within = 0.0
    if floor is not None:
        within = sum(sum(floor(*(np.asarray(s, float) for s in units[u])) for u in of_draw[d]) / len(of_draw[d]) ** 2
                     for d in draws) / len(draws) ** 2
    # the floor is a known variance, not one estimated from D draws: it widens the interval at the normal quantile
    t_half = float(student_t.ppf((1 + confidence) / 2, len(draws) - 1)) * math.sqrt(between)
    floor_half = float(norm.ppf((1 + confidence) / 2)) * math.sqrt(within)
    half = max(t_half, floor_half)
    low, high = max(bounds[0], result["estimate"] - half), min(bounds[1], result["estimate"] + half)
    # which of the two set the width: a table says "t" only where the t did
    method = f"t over {len(draws)} draws" if t_half >= floor_half else "normal floor (instance-level variance)"
    return {**result, "low": low, "high": high, "method": method}


def share_interval(flags: Mapping[Unit, np.ndarray], confidence: float = CONFIDENCE) -> dict:
    """The mean over independent units of the share of instances flagged (``unit_interval`` with ``share_floor``),
    with the instances pooled (``k`` of ``n``), its interval never narrower than the exact Clopper-Pearson interval
    of that pooled count: instances inside a unit are not independent, so the pooled binomial is the least the
    uncertainty can be (0 of 48 flagged: [0, 0.074], where the t-interval with its floor gave [0, 0.06])."""
    block = unit_interval({u: [np.asarray(f, float)] for u, f in flags.items()}, lambda x: x.mean(axis=1),
                          floor=share_floor, confidence=confidence)
    pooled = np.concatenate([np.asarray(f, float) for f in flags.values()]) if flags else np.zeros(0)
    block.update(k=int(pooled.sum()), n=int(pooled.size))
    if block["low"] is not None and pooled.size:
        exact = clopper_pearson(block["k"], block["n"], confidence)
        if exact["low"] < block["low"] or exact["high"] > block["high"]:
            block["method"] = "Clopper-Pearson on the pooled count (wider than the t over draws there)"
        block.update(low=min(block["low"], exact["low"]), high=max(block["high"], exact["high"]))
    return block


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the given order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_comparisons(per_draw: Mapping[str, Mapping[int, float]], *, alpha: float = 0.05) -> dict:
    """Every pair of detectors compared over the draws both have: the mean difference of their per-draw values, a
    two-sided paired t-test, Holm-adjusted over all pairs. ``better`` lists the differences that survive at
    ``alpha``; with fewer than ``MIN_UNITS`` shared draws nothing is compared, and ``note`` says so."""
    from scipy.stats import ttest_rel

    names = sorted(per_draw)
    rows = []
    for a, b in itertools.combinations(names, 2):
        shared = sorted(set(per_draw[a]) & set(per_draw[b]))
        if len(shared) < MIN_UNITS:
            continue
        x, y = np.array([per_draw[a][d] for d in shared]), np.array([per_draw[b][d] for d in shared])
        difference = x - y
        if np.allclose(difference, difference[0]):  # no spread: a t-test is undefined (equal: no evidence either way)
            p = 1.0 if abs(difference[0]) < 1e-12 else float("nan")
        else:
            p = float(ttest_rel(x, y).pvalue)
        rows.append({"a": a, "b": b, "n_draws": len(shared), "difference": float(difference.mean()), "p": p})
    testable = [r for r in rows if not math.isnan(r["p"])]
    for row, adjusted in zip(testable, holm([r["p"] for r in testable])):
        row["p_holm"] = adjusted
    for row in rows:
        row.setdefault("p_holm", None)
        row["significant"] = row["p_holm"] is not None and row["p_holm"] <= alpha
    better = [f"{r['a'] if r['difference'] > 0 else r['b']} > {r['b'] if r['difference'] > 0 else r['a']} "
              f"(p_Holm {r['p_holm']:.3f}, {r['n_draws']} draws)" for r in rows if r["significant"]]
    note = None if rows else f"fewer than {MIN_UNITS} shared draws: no comparison"
    return {"pairs": rows, "better": better, "alpha": alpha, "note": note, "method": "paired t over draws, Holm"}


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
