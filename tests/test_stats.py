import numpy as np
import pytest

from detect import bootstrap_test


@pytest.mark.parametrize("paired", [True, False])
def test_separated_scores_give_a_small_p_value(paired):
    guided = [0.9, 0.8, 0.95, 0.7, 0.85, 0.9, 0.6, 0.99, 0.8, 0.75]
    general = [0.2, 0.3, 0.1, 0.4, 0.25, 0.3, 0.2, 0.1, 0.35, 0.3]
    assert bootstrap_test(guided, general, paired=paired) <= 0.001


@pytest.mark.parametrize("paired", [True, False])
def test_identical_scores_are_not_significant(paired):
    scores = list(np.linspace(0.1, 0.9, 10))
    assert bootstrap_test(scores, scores, paired=paired) >= 0.5
    assert bootstrap_test([0.4] * 10, [0.4] * 10, paired=paired) >= 0.5


def test_guided_below_general_is_not_significant():
    assert bootstrap_test([0.1] * 5 + [0.2] * 5, [0.8] * 10) > 0.99


def test_paired_test_uses_the_pairing():
    # Large spread between instances, but guided is always 0.05 above general on the same instance:
    # only a paired test sees it.
    general = list(np.linspace(0.0, 0.9, 10))
    guided = [g + 0.05 for g in general]
    assert bootstrap_test(guided, general, paired=True) < 0.01
    assert bootstrap_test(guided, general, paired=False) > 0.2


def test_seeded_and_p_value_floor():
    rng = np.random.default_rng(3)
    guided, general = rng.random(10), rng.random(10)
    assert bootstrap_test(guided, general, seed=7) == bootstrap_test(guided, general, seed=7)
    # with the +1 correction p never reaches 0 for a finite number of resamples
    assert bootstrap_test([1.0] * 10, [0.0] * 10, n_resamples=999) == pytest.approx(1 / 1000)


def test_unpaired_variant_is_the_official_formula():
    # Official: round to 2 decimals, resample each group, p = 1 - share(guided mean > general mean).
    # guided always 0.5 and general always 0.504 -> both round to 0.50: never strictly greater, p = 1.
    assert bootstrap_test([0.5] * 10, [0.504] * 10, paired=False) == 1.0
    assert bootstrap_test([0.6] * 10, [0.5] * 10, paired=False) == 0.0


def test_paired_needs_equal_lengths():
    with pytest.raises(ValueError, match="one guided and one general score per instance"):
        bootstrap_test([0.1, 0.2], [0.1])
