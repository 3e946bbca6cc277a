"""The calibration's statistics (contaminate/calibration/statistics.py) against analytic and simulated answers."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from contaminate.calibration.statistics import (
    auc_matrix,
    brier,
    clopper_pearson,
    conformal_threshold,
    equivalence,
    hierarchical_bootstrap,
    platt,
    tpr_at_fpr_matrix,
    units_text,
)


def _mean(values: np.ndarray) -> np.ndarray:
    return values.mean(axis=1)


def test_hierarchical_bootstrap_variance_of_a_mean_is_the_analytic_one():
    # 4 draws x 3 seeds x 5 instances, balanced. Resampling every level, the variance of the grand mean is
    # (1/D) [v_d + v_s / S + v_i / (S N)] with divisor-n variances at each level (draw means around the grand
    # mean, seed means around their draw's, instances around their model's).
    rng = np.random.default_rng(1)
    D, S, N = 4, 3, 5
    values = {(d, s): rng.normal(2.0 * d + 0.7 * s * (d % 2), 1.0, size=N) for d in range(D) for s in range(S)}
    model_means = {u: v.mean() for u, v in values.items()}
    draw_means = {d: np.mean([model_means[d, s] for s in range(S)]) for d in range(D)}
    grand = np.mean(list(draw_means.values()))
    v_d = np.mean([(m - grand) ** 2 for m in draw_means.values()])
    v_s = np.mean([(model_means[d, s] - draw_means[d]) ** 2 for d in range(D) for s in range(S)])
    v_i = np.mean([((v - v.mean()) ** 2).mean() for v in values.values()])
    analytic_sd = math.sqrt((v_d + v_s / S + v_i / (S * N)) / D)

    draws = [hierarchical_bootstrap({u: [v] for u, v in values.items()}, _mean, n_resamples=4000, seed=k)
             for k in range(3)]
    result = draws[0]
    assert result["estimate"] == pytest.approx(grand)
    assert (result["n_units"], result["n_draws"], result["n_seeds"]) == (12, 4, 3)
    assert result["unit"] == "12 models (4 draws x 3 seeds)"
    # the 95% percentile interval of a near-normal mean spans 2 x 1.96 SD; 4000 resamples: within 5%
    width = np.mean([(r["high"] - r["low"]) for r in draws])
    assert width == pytest.approx(2 * 1.96 * analytic_sd, rel=0.05)


def test_hierarchical_bootstrap_with_one_unit_has_no_interval():
    result = hierarchical_bootstrap({(0, 0): [np.array([1.0, 2.0])]}, _mean)
    assert result["estimate"] == 1.5 and result["low"] is None and result["high"] is None
    assert result["unit"] == "1 model (1 draw x 1 seed)"


def test_auc_and_tpr_at_fpr_by_hand():
    positives = np.array([[0.9, 0.8, 0.55]])
    negatives = np.array([[0.7, 0.6, 0.2]])
    assert auc_matrix(positives, negatives)[0] == pytest.approx(7 / 9)
    assert auc_matrix(np.array([[0.5]]), np.array([[0.5]]))[0] == 0.5  # ties count one half
    # 3 negatives: 5% allows none flagged, so the threshold is the top negative 0.7 -> 2 of 3 positives
    assert tpr_at_fpr_matrix(positives, negatives, 0.05)[0] == pytest.approx(2 / 3)
    # 34% allows one negative flagged: above the second negative 0.6 -> still 2 of 3; 67% allows two: all 3
    assert tpr_at_fpr_matrix(positives, negatives, 0.34)[0] == pytest.approx(2 / 3)
    assert tpr_at_fpr_matrix(positives, negatives, 0.67)[0] == 1.0


def test_clopper_pearson_known_values():
    # 0 of 10: the upper bound solves (1 - p)^10 = 0.025 -> 1 - 0.025^(1/10)
    block = clopper_pearson(0, 10)
    assert block["low"] == 0 and block["high"] == pytest.approx(1 - 0.025 ** 0.1)
    # 2 of 2 ("detected in both cells"): [0.158, 1], the interval the issue quotes
    assert clopper_pearson(2, 2)["low"] == pytest.approx(0.1581, abs=1e-4)
    block = clopper_pearson(5, 10)
    assert (block["low"], block["high"]) == (pytest.approx(0.1871, abs=1e-4), pytest.approx(0.8129, abs=1e-4))
    assert clopper_pearson(0, 0)["rate"] is None


def test_conformal_threshold_keeps_its_fpr_guarantee_by_simulation():
    # Many simulated clean sets of 30: the realised FPR on fresh clean scores averages <= alpha (the guarantee is
    # in expectation: 1 - k/(n+1) = 1 - 30/31 = 0.032 at alpha 0.05), and a plain empirical 95% quantile does not.
    rng = np.random.default_rng(0)
    alpha, n = 0.05, 30
    realised, naive = [], []
    for _ in range(4000):
        clean = rng.normal(size=n)
        fitted = conformal_threshold(clean, alpha)
        fresh = rng.normal(size=200)
        realised.append((fresh > fitted["threshold"]).mean())
        naive.append((fresh > np.quantile(clean, 1 - alpha)).mean())
    assert fitted["k"] == 30 and fitted["guarantee"] == pytest.approx(1 / 31)
    assert np.mean(realised) == pytest.approx(1 / 31, abs=0.004) and np.mean(realised) <= alpha
    assert np.mean(naive) > alpha  # the in-sample quantile overshoots its budget
    # too few clean scores for 5%: nothing can be flagged with the guarantee
    assert conformal_threshold(rng.normal(size=18), 0.05)["threshold"] == math.inf
    assert conformal_threshold(rng.normal(size=19), 0.05)["k"] == 19


def test_equivalence_says_within_over_or_not_enough_data():
    # 12 units, budget 5% + tolerance 5%: even 0 of 12 is not evidence of <= 10% (0.9^12 = 0.28)
    small = equivalence(0, 12, budget=0.05, tolerance=0.05)
    assert small["verdict"] == "not enough data" and small["power"] == 0.0
    # 0 of 40: 0.9^40 = 0.015 <= 0.05 -> within; its power at a true 5% is P(X <= critical) with the critical count
    # the largest c with P(X <= c | 0.10) <= 0.05
    big = equivalence(0, 40, budget=0.05, tolerance=0.05)
    critical = max(c for c in range(41) if binom.cdf(c, 40, 0.10) <= 0.05)
    assert big["verdict"] == "within" and big["power"] == pytest.approx(binom.cdf(critical, 40, 0.05))
    # 6 of 12 flagged: the one-sided lower bound is far above 5%
    assert equivalence(6, 12, budget=0.05, tolerance=0.05)["verdict"] == "over"
    assert equivalence(0, 0, budget=0.05, tolerance=0.05)["verdict"] == "no data"


def test_platt_and_brier():
    scores = np.array([-3.0, -2.5, -2.0, -1.0, -0.5, 0.0])
    labels = np.array([False, False, False, True, True, True])
    probabilities = platt(scores, labels)(scores)
    assert probabilities[:3].max() < 0.5 < probabilities[3:].min()
    assert brier([0.5] * 4, [True, False, True, False]) == 0.25
    assert units_text([(0, 0), (0, 1), (1, 0)]) == "3 models (2 draws, 2 seeds)"  # not crossed: no (1, 1)
