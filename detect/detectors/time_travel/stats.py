"""Algorithm 1: is the guided score significantly above the general score? (paper section 3.2)

``bootstrap_test(guided, general)`` returns a one-sided p-value for H0: mean(guided) <= mean(general).

- paired (the lab's default): the instances are the same under both instructions, so resample the
  per-instance differences d = guided - general. Under H0 the differences are shifted to mean 0 and
  p = (1 + #{resampled mean >= observed mean}) / (1 + n_resamples) (Efron & Tibshirani, section 16.4);
  the +1 keeps p above 0 for a finite number of resamples.
- unpaired (the official code, for fidelity): scores rounded to 2 decimals, each group resampled on its own,
  p = 1 - share of resamples where the guided mean exceeds the general mean.

Both are vectorised: 10 instances x 10,000 resamples is one (10000, 10) index draw, about 1-2 ms.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def bootstrap_test(
    guided: Sequence[float], general: Sequence[float], *, paired: bool = True, n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    guided_scores, general_scores = np.asarray(guided, float), np.asarray(general, float)
    if guided_scores.ndim != 1 or guided_scores.size == 0 or general_scores.ndim != 1 or general_scores.size == 0:
        raise ValueError("bootstrap_test needs two non-empty 1-D score lists")
    rng = np.random.default_rng(seed)
    if paired:
        if guided_scores.shape != general_scores.shape:
            raise ValueError("the paired test needs one guided and one general score per instance")
        differences = guided_scores - general_scores
        observed = differences.mean()
        null = differences - observed
        means = null[rng.integers(0, null.size, size=(n_resamples, null.size))].mean(axis=1)
        # A tolerance so that float noise in "identical" scores does not count as evidence either way.
        return float((1 + np.count_nonzero(means >= observed - 1e-12)) / (1 + n_resamples))
    guided_scores, general_scores = guided_scores.round(2), general_scores.round(2)
    guided_means = guided_scores[rng.integers(0, guided_scores.size, size=(n_resamples, guided_scores.size))].mean(1)
    general_draws = rng.integers(0, general_scores.size, size=(n_resamples, general_scores.size))
    general_means = general_scores[general_draws].mean(1)
    return float(1.0 - np.mean(guided_means > general_means))
