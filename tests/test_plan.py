"""python -m contaminate.plan: hand-computed values, and its power and minimum detectable effects against simulated
studies (Gaussian scores: members N(mu, 1) against non-members N(0, 1), a true AUC of Phi(mu / sqrt 2))."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.stats import norm, ttest_1samp

from contaminate.calibration.statistics import auc_matrix
from contaminate.plan import (
    StudyDesign,
    auc_power,
    auc_sd,
    conformal_needs,
    main,
    minimum_detectable_auc,
    minimum_detectable_difference,
    plan,
    runs_for_sign_flip,
    sign_flip_floor,
)
from detect.errors import InputError


def test_hand_computed_values():
    """The null SE of one AUC at 8 v 8 is sqrt(17 / 768) = 0.1488 (the issue's 0.149), of a 6-run mean 0.0607; the
    exact sign-flip floor at 6 runs 2 / 64 = 0.031; a conformal threshold needs 19 clean scores at 5%, 99 at 1%."""
    assert auc_sd(0.5, 8, 8) == pytest.approx(math.sqrt(17 / 768))
    found = plan(StudyDesign(8, 8, 6))
    assert found["one_auc_null_sd"] == pytest.approx(0.14878, abs=1e-5)
    assert found["mean_auc_null_se"] == pytest.approx(0.14878 / math.sqrt(6), abs=1e-5)
    assert sign_flip_floor(6) == 0.03125 and runs_for_sign_flip(0.05, 1) == 6 and runs_for_sign_flip(0.05, 4) == 8
    assert conformal_needs(0.05) == 19 and conformal_needs(0.01) == 99
    # the CPU profile's design: a mean AUC below about 0.67-0.71 is not told from chance (issue 47)
    assert 0.67 <= found["minimum_detectable_auc"] <= 0.71
    assert found["recipe_known_needed"] > 0 and found["power_at_auc"] is None
    # more runs or more members: a smaller detectable AUC; a between-run spread: a larger one
    assert minimum_detectable_auc(24, 24, 10) < minimum_detectable_auc(8, 8, 10) < found["minimum_detectable_auc"]
    assert minimum_detectable_auc(8, 8, 6, run_sd=0.1) > found["minimum_detectable_auc"]
    assert minimum_detectable_auc(8, 8, 2, run_sd=0.5) is None  # not even 1.0 at 2 runs this spread


def _simulated_auc_power(auc: float, m: int, n: int, runs: int, reps: int, rng) -> tuple[float, float]:
    """(the share of simulated studies whose runs' t-test rejects AUC 0.5 at 0.05, one AUC's simulated SD)."""
    mu = math.sqrt(2) * norm.ppf(auc)
    positives = rng.normal(mu, 1, (reps * runs, m))
    negatives = rng.normal(0, 1, (reps * runs, n))
    aucs = auc_matrix(positives, negatives).reshape(reps, runs)
    rejected = ttest_1samp(aucs, 0.5, axis=1).pvalue < 0.05
    return float(rejected.mean()), float(aucs.std())


@pytest.mark.parametrize("m, n, runs", [(8, 8, 6), (24, 24, 10), (24, 68, 10)])
def test_the_minimum_detectable_auc_has_the_power_it_promises_in_simulation(m, n, runs):
    """At the plan's minimum detectable AUC, 2,000 simulated studies reject chance about 80% of the time (Monte
    Carlo SE 0.009; Hanley-McNeil's variance is an approximation for Gaussian scores: within 0.06), and at chance
    about 5%; one AUC's simulated spread at chance is the plan's exact null SD."""
    rng = np.random.default_rng(0)
    target = minimum_detectable_auc(m, n, runs)
    power, _ = _simulated_auc_power(target, m, n, runs, 2000, rng)
    assert power == pytest.approx(0.8, abs=0.06)
    assert auc_power(target, m, n, runs) == pytest.approx(0.8, abs=1e-6)
    size, spread = _simulated_auc_power(0.5, m, n, runs, 2000, rng)
    assert size == pytest.approx(0.05, abs=0.02)
    assert spread == pytest.approx(auc_sd(0.5, m, n), rel=0.05)


def test_the_minimum_detectable_difference_has_its_power_at_holms_first_step_in_simulation():
    """Paired differences N(delta, sd) over the runs, tested at alpha / contrasts: at the plan's delta the t-test
    rejects in 80% of 4,000 simulated studies (exact for Gaussian differences: within 3 Monte Carlo SE)."""
    rng = np.random.default_rng(1)
    for runs, contrasts, sd in ((6, 1, 0.08), (10, 4, 0.1)):
        delta = minimum_detectable_difference(sd, runs, contrasts=contrasts)
        differences = rng.normal(delta, sd, (4000, runs))
        rejected = ttest_1samp(differences, 0.0, axis=1).pvalue < 0.05 / contrasts
        assert rejected.mean() == pytest.approx(0.8, abs=0.02)
    # the profile's detector differences at x1 (SD 0.065-0.107 over 6 runs), 4 contrasts: about 0.1-0.2
    assert 0.08 < minimum_detectable_difference(0.065, 6, contrasts=4) < minimum_detectable_difference(0.107, 6,
                                                                                                     contrasts=4) < 0.3


@pytest.mark.parametrize("design, message", [
    (StudyDesign(8, 8, 1), "--runs 1: a plan needs at least 2 independent runs"),
    (StudyDesign(0, 8, 6), "--members 0: give a whole number >= 1"),
    (StudyDesign(8, 8, 6, auc=0.4), "--auc 0.4: give the expected AUC of a dose, in [0.5, 1)"),
    (StudyDesign(8, 8, 6, alpha=1.5), "--alpha 1.5: give a number in (0, 1)"),
    (StudyDesign(8, 8, 6, difference_sd=-1.0), "--difference-sd -1.0: give a standard deviation >= 0"),
])
def test_bad_designs_are_one_line_errors(design, message):
    with pytest.raises(InputError, match=re.escape(message)) as error:
        plan(design)
    assert "\n" not in str(error.value)


def test_the_command_prints_the_plan(capsys):
    found = main(["--members", "8", "--runs", "6", "--auc", "0.6", "--contrasts", "4"])
    out = capsys.readouterr().out
    assert "one AUC at chance: SE 0.149; the mean over 6 runs: SE 0.061" in out
    assert f"power at a mean AUC of 0.6: {found['power_at_auc']:.2f}" in out
    assert "smallest p 0.0312 at 6 runs, above 0.0125: no contrast can pass it; it needs 8 runs" in out
    with pytest.raises(SystemExit, match="error: --runs 1: a plan needs at least 2"):
        main(["--members", "8", "--runs", "1"])


def test_the_readme_quotes_the_plan_as_it_computes():
    """README's planning paragraph, number by number, against plan()."""
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    profile = plan(StudyDesign(8, 8, 6, contrasts=4))
    larger = plan(StudyDesign(24, 68, 10, contrasts=4))
    assert (f"a mean AUC below {profile['minimum_detectable_auc']:.3f} is not told from chance (80% power)"
            in readme)
    assert f"(it needs {profile['sign_flip_runs_needed']} runs)" in readme and profile["sign_flip_floor"] > 0.05 / 4
    assert f"24 members against 68 negatives over 10 runs tells {larger['minimum_detectable_auc']:.3f}" in readme
