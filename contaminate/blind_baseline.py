"""The blind baseline: can the texts alone tell members from non-members, with no model at all?

    result = blind_baseline(member_texts, non_member_texts, seed=0)   # {"auc", "low", "high", "p_value", ...}

Das, Zhang and Tramer (2024) showed that many published membership-inference results come from members and
non-members that differ in distribution (dates, topics, lengths), which a classifier on the texts alone already
separates. Here: TF-IDF of word 1-2-grams and character 2-5-grams (fitted on every text: no label is read), logistic
regression, out-of-fold scores from stratified k-fold cross-validation repeated ``repeats`` times with different
splits (each text's score averaged over the repeats: every text scored by models that never saw it), and their ROC
AUC. At small n this AUC is biased below 0.5 (a held-out fold's class is the minority of the training folds), so
it is read against a permutation null: the same procedure on ``n_permutations`` label shuffles. ``p_value`` is the
share of the null at or above the observed AUC; ``critical_auc`` the null's 95th percentile, the smallest AUC this
sample could have rejected (with 10 vs 10 texts about 0.75: a real bias below that goes unseen); ``biased`` when
p < 0.05. ``low`` / ``high``: a percentile bootstrap over texts of the observed scores (per sample; calibration
pools the samples of several draws with the hierarchical bootstrap, from ``member_scores`` / ``non_member_scores``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from contaminate.calibration.instance_level import rank_auc
from contaminate.calibration.statistics import auc as auc_of
from detect.errors import InputError


def _cross_validated_scores(features, labels: np.ndarray, *, folds: int, repeats: int, seed: int) -> np.ndarray:
    """Each text's out-of-fold decision score, averaged over ``repeats`` stratified k-fold splits."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import RepeatedStratifiedKFold

    scores = np.zeros(len(labels))
    splits = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    for train, test in splits.split(np.zeros(len(labels)), labels):
        model = LogisticRegression(solver="liblinear").fit(features[train], labels[train])
        scores[test] += model.decision_function(features[test])
    return scores / repeats


def blind_baseline(members: Sequence[str], non_members: Sequence[str], *, seed: int = 0, folds: int = 5,
                   repeats: int = 3, n_permutations: int = 50, n_resamples: int = 1000) -> dict:
    """Repeated cross-validated AUC of a text-only classifier separating ``members`` from ``non_members``, with its
    permutation null."""
    from scipy.stats import bootstrap
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_union

    folds = min(folds, len(members), len(non_members))
    if folds < 2:
        raise InputError(f"the blind baseline needs at least 2 members and 2 non-members; got {len(members)} and "
                         f"{len(non_members)}: raise sample.n_members / sample.n_non_members")
    texts = [*members, *non_members]
    labels = np.array([True] * len(members) + [False] * len(non_members))
    features = make_union(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                          TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True)
                          ).fit_transform(texts).tocsr()
    scores = _cross_validated_scores(features, labels, folds=folds, repeats=repeats, seed=seed)
    auc = rank_auc(labels, scores)
    rng = np.random.default_rng(seed)
    null = np.array([rank_auc(shuffled, _cross_validated_scores(features, shuffled, folds=folds,
                                                                repeats=repeats, seed=seed + 1 + k))
                     for k, shuffled in enumerate(rng.permutation(labels) for _ in range(n_permutations))])
    p_value = float((1 + (null >= auc - 1e-12).sum()) / (1 + n_permutations))
    # the percentile bootstrap, each class resampled on its own (two unpaired samples: scipy's bootstrap)
    interval = bootstrap((scores[labels], scores[~labels]), auc_of, n_resamples=n_resamples, method="percentile",
                         vectorized=False, random_state=rng).confidence_interval
    low, high = float(interval.low), float(interval.high)
    return {"auc": auc, "low": low, "high": high, "p_value": p_value, "biased": p_value < 0.05,
            "null_mean": float(null.mean()), "critical_auc": float(np.quantile(null, 0.95)),
            "n_permutations": n_permutations, "folds": folds, "repeats": repeats,
            "n_members": len(members), "n_non_members": len(non_members),
            "member_scores": scores[labels].round(6).tolist(),
            "non_member_scores": scores[~labels].round(6).tolist(),
            "features": "tf-idf word 1-2-grams + char 2-5-grams", "classifier": "logistic regression"}
