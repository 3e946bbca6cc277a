"""The calibration's statistics (contaminate/calibration/statistics.py) against analytic and simulated answers."""

import math

import numpy as np
import pytest
from scipy.stats import binom, norm, ttest_rel
from scipy.stats import t as student_t

from contaminate.calibration.statistics import (
    auc,
    auc_floor,
    auc_matrix,
    brier,
    clopper_pearson,
    conformal_threshold,
    equivalence,
    holm,
    paired_comparisons,
    platt,
    share_floor,
    t_interval,
    tpr_at_fpr_matrix,
    unit_interval,
    units_text,
)


def _mean(values: np.ndarray) -> np.ndarray:
    return values.mean(axis=1)


def test_unit_interval_is_a_t_interval_over_draws_by_hand():
    # 3 draws x 2 seeds: each draw's value is the mean of its two models'; the interval is mean +- t(2) s / sqrt(3)
    values = {(0, 0): [1.0, 3.0], (0, 1): [3.0, 5.0], (1, 0): [5.0], (1, 1): [7.0], (2, 0): [0.0], (2, 1): [2.0]}
    result = unit_interval({u: [np.array(v)] for u, v in values.items()}, _mean, bounds=(-10, 10))
    draws = np.array([3.0, 6.0, 1.0])  # (2 + 4) / 2, (5 + 7) / 2, (0 + 2) / 2
    half = student_t.ppf(0.975, 2) * draws.std(ddof=1) / math.sqrt(3)
    assert result["estimate"] == pytest.approx(draws.mean())
    assert (result["low"], result["high"]) == (pytest.approx(draws.mean() - half), pytest.approx(draws.mean() + half))
    assert (result["n_units"], result["n_models"]) == (3, 6) and result["unit"] == "3 draws (6 models)"
    assert result["per_draw"] == {0: 3.0, 1: 6.0, 2: 1.0}
    # clipped to the statistic's range: a rate's interval stays in [0, 1]
    rates = unit_interval({(d, 0): [np.array([r])] for d, r in enumerate([0.0, 0.1, 0.9])}, _mean)
    assert rates["low"] == 0.0 and rates["high"] == 1.0


def test_unit_interval_with_fewer_than_three_draws_has_none_and_says_so():
    one = unit_interval({(0, 0): [np.array([1.0, 2.0])]}, _mean)
    assert one["estimate"] == 1.5 and one["low"] is None and one["high"] is None
    assert one["unit"] == "1 draw (1 model)" and one["interval"] == "none: 1 draw, fewer than 3"
    # two draws x three seeds are six models but two independent units: still no interval
    two = unit_interval({(d, s): [np.array([float(d + s)])] for d in range(2) for s in range(3)}, _mean)
    assert two["low"] is None and two["unit"] == "2 draws (6 models)" and "fewer than 3" in two["interval"]


def test_the_floor_keeps_perfect_separation_from_collapsing_the_interval():
    # three models that each separate 20 members from 20 non-members perfectly read AUC 1.00; the data cannot tell
    # 1.00 from 0.99, and the floored interval says so where the bare t-interval reads [1.00, 1.00]
    perfect = {(d, 0): [np.arange(20) + 100.0, np.arange(20) * 1.0] for d in range(3)}
    bare = unit_interval(perfect, auc_matrix)
    floored = unit_interval(perfect, auc_matrix, floor=auc_floor)
    assert bare["estimate"] == floored["estimate"] == 1.0 and bare["low"] == 1.0
    assert 0.97 < floored["low"] < 0.995 and floored["high"] == 1.0
    assert share_floor(np.zeros(20)) == pytest.approx((0.5 / 21) * (1 - 0.5 / 21) / 20)


@pytest.mark.parametrize("draws, seeds, size", [(3, 1, 20), (3, 2, 20), (5, 1, 20), (10, 1, 20), (4, 1, 8), (6, 1, 8)])
def test_unit_interval_covers_a_within_model_auc_by_simulation(draws, seeds, size):
    # 1,000 simulated sweeps of D draws x S seeds, `size` members N(mu_model, 1) against as many non-members N(0, 1),
    # with a draw effect and a seed effect; the estimand is the mean true AUC Phi(mu_model / sqrt 2) over both. A
    # nominal 95% interval covers at least 0.93 of the time (bench/interval_coverage.py: 0.95-0.97 in these cells, and
    # 1.00 near AUC 1, where the floor makes it conservative; the percentile hierarchical bootstrap it replaced covered
    # ~0.82 at 3 units). 8 against 8 in 4 or 6 runs is results/profile_cpu's shape: 0.939 here over 6,000 sweeps of 6
    # runs (0.95-0.96 at AUC 0.64 and 0.96), so 3,000 sweeps there, where 1,000 read 0.92-0.96 by seed.
    rng = np.random.default_rng(draws * 10 + seeds)
    mu, draw_sd, seed_sd = 1.4, 0.4, 0.15
    effects = mu + rng.normal(0, draw_sd, 200_000) + rng.normal(0, seed_sd, 200_000)
    truth = float(norm.cdf(effects / math.sqrt(2)).mean())
    hits, reps = 0, 1000 if size >= 20 else 3000
    for _ in range(reps):
        units = {}
        for d in range(draws):
            shift = mu + rng.normal(0, draw_sd)
            for s in range(seeds):
                units[(d, s)] = [rng.normal(shift + rng.normal(0, seed_sd), 1, size), rng.normal(0, 1, size)]
        block = unit_interval(units, auc_matrix, floor=auc_floor)
        hits += block["low"] <= truth <= block["high"]
    assert hits / reps >= 0.93


@pytest.mark.parametrize("draws, size, rate, sd", [(3, 20, 0.1, 0.03), (6, 8, 0.05, 0.02), (6, 8, 0.3, 0.1)])
def test_unit_interval_covers_a_rate_by_simulation(draws, size, rate, sd):
    # a share of flagged instances per model (the held-out FPR, a TPR at a conformal threshold): a true rate with a
    # draw effect, D draws of `size` instances; 6 runs of 8 is results/profile_cpu's never-planted group and doses
    # (simulated: 0.999 at 0.05, 0.96 at 0.3; 4 runs: 0.999, 0.95)
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(1000):
        units = {(d, 0): [(rng.random(size) < np.clip(rate + rng.normal(0, sd), 0, 1)).astype(float)]
                 for d in range(draws)}
        block = unit_interval(units, _mean, floor=share_floor)
        hits += block["low"] <= rate <= block["high"]
    assert hits / 1000 >= 0.93


def test_holm_and_paired_comparisons_by_hand():
    # Holm: sorted p 0.01, 0.02, 0.04 times 3, 2, 1 -> 0.03, 0.04, 0.04 (monotone), in the given order
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    per_draw = {"a": {0: 0.90, 1: 0.80, 2: 0.85, 3: 0.95}, "b": {0: 0.60, 1: 0.52, 2: 0.58, 3: 0.66},
                "c": {0: 0.89, 1: 0.81, 2: 0.86, 3: 0.94}}
    found = paired_comparisons(per_draw)
    ab = next(r for r in found["pairs"] if (r["a"], r["b"]) == ("a", "b"))
    assert ab["difference"] == pytest.approx(0.285) and ab["n_draws"] == 4
    assert ab["p"] == pytest.approx(ttest_rel([0.90, 0.80, 0.85, 0.95], [0.60, 0.52, 0.58, 0.66]).pvalue)
    assert any(b.startswith("a > b") for b in found["better"]) and not any("a > c" in b or "c > a" in b
                                                                         for b in found["better"])
    # two shared draws: nothing compared, and the note says why
    assert paired_comparisons({"a": {0: 1.0, 1: 0.9}, "b": {0: 0.5, 1: 0.4}})["note"].startswith("fewer than 3")


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


def test_counts_of_units_get_clopper_pearson_and_a_one_sided_test_against_a_bound():
    """Issue 68's hand values: 0/6 [0, 0.459], 6/6 [0.541, 1], 3/3 [0.292, 1] (exact, never the floored t over 0/1
    outcomes, which printed [0.95, 1.00] for 6/6); 2 of 3 flagged against a stated 0.047 has one-sided binomial p
    3 (0.047^2)(0.953) + 0.047^3 = 0.0064; a unit between 0 and 1 is no count."""
    from contaminate.calibration.statistics import count_of_units, over_bound

    assert clopper_pearson(0, 6)["high"] == pytest.approx(0.4593, abs=1e-4)
    assert clopper_pearson(6, 6)["low"] == pytest.approx(0.5407, abs=1e-4)
    assert clopper_pearson(3, 3)["low"] == pytest.approx(0.2924, abs=1e-4)
    assert over_bound(2, 3, 0.047) == pytest.approx(3 * 0.047 ** 2 * 0.953 + 0.047 ** 3, rel=1e-9)
    assert over_bound(2, 3, 0.047) < 0.01 and over_bound(0, 3, 0.047) == 1.0
    block = count_of_units({0: 1.0, 1: 1.0, 2: 0.0})
    assert (block["k"], block["n"], block["method"]) == (2, 3, "Clopper-Pearson")
    assert count_of_units({0: 1.0, 1: 0.5, 2: 0.0}) is None


def test_unit_interval_names_what_set_its_width():
    """A t-interval over draws says so; where the instance-level floor is wider, it says that instead."""
    spread = unit_interval({(d, 0): [np.array([v])] for d, v in enumerate([0.2, 0.5, 0.8])}, lambda x: x.mean(axis=1))
    assert spread["method"] == "t over 3 draws"
    flat = unit_interval({(d, 0): [np.ones(5), np.zeros(5)] for d in range(3)}, auc_matrix, floor=auc_floor)
    assert flat["method"].startswith("normal floor")


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
    assert units_text([(0, 0), (0, 1), (1, 0)]) == "2 draws (3 models)"  # the draws are the independent units


def test_a_share_of_instances_is_never_narrower_than_clopper_pearson_on_the_pooled_count():
    """0 of 48 instances flagged over 6 units of 8 (results/profile_cpu's FPR cells): the t-interval with its floor
    alone reached 0.06; the exact interval of 0/48 reaches 0.074, and the share's interval takes it."""
    from contaminate.calibration.statistics import clopper_pearson, share_interval, unit_interval

    flags = {(d, d): np.zeros(8) for d in range(6)}
    block = share_interval(flags)
    assert (block["k"], block["n"], block["estimate"], block["low"]) == (0, 48, 0.0, 0.0)
    assert block["high"] == pytest.approx(clopper_pearson(0, 48)["high"]) and block["high"] == pytest.approx(0.0740,
                                                                                                            abs=1e-4)
    narrower = unit_interval({u: [f] for u, f in flags.items()}, lambda x: x.mean(axis=1))
    assert narrower["high"] == 0.0  # no floor, no spread: the interval this replaces in spirit
    # where the units disagree the t-interval is the wider one and is kept
    spread = share_interval({(0, 0): np.ones(8), (1, 1): np.zeros(8), (2, 2): np.ones(8)})
    assert spread["high"] == 1.0 and spread["low"] < clopper_pearson(16, 24)["low"]
    assert share_interval({(0, 0): np.ones(4)})["low"] is None  # one unit: no interval, as unit_interval


def test_auc_by_hand_and_as_sklearns_with_ties():
    # pairs (1, 0) > , (1, 2) < , (2, 0) > , (2, 2) tie: (1 + 0 + 1 + 0.5) / 4
    assert auc([1, 2], [0, 2]) == 0.625
    assert math.isnan(auc([], [1.0]))
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    positives, negatives = rng.integers(0, 5, 40).astype(float), rng.integers(0, 4, 60).astype(float)  # many ties
    expected = roc_auc_score([1] * 40 + [0] * 60, np.concatenate([positives, negatives]))
    assert auc(positives, negatives) == pytest.approx(expected, abs=1e-12)
    assert auc(positives, negatives) == pytest.approx(float(auc_matrix(positives[None], negatives[None])[0]), abs=1e-12)


def test_t_interval_by_hand():
    # 1, 2, 3: mean 2, s 1, t(0.975, 2) = 4.3027: half-width 4.3027 / sqrt(3) = 2.4841
    block = t_interval([1.0, 2.0, 3.0])
    assert block["estimate"] == 2.0 and block["method"] == "t" and block["n"] == 3
    assert block["low"] == pytest.approx(2 - 2.48414, abs=1e-4)
    assert block["high"] == pytest.approx(2 + 2.48414, abs=1e-4)
    assert t_interval([0.4])["low"] is None  # one unit: no interval
