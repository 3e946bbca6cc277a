"""The blind baseline: can the texts alone tell members from non-members, with no model at all?

    result = blind_baseline(member_texts, non_member_texts, seed=0)   # {"auc", "low", "high", "biased", ...}

Das, Zhang and Tramer (2024) showed that many published membership-inference results come from members and
non-members that differ in distribution (dates, topics, lengths), which a classifier on the texts alone already
separates. Here: TF-IDF of word 1-2-grams and character 2-5-grams, logistic regression, out-of-fold scores from
stratified k-fold cross-validation (every text scored by a model that never saw it), their ROC AUC, and a
percentile bootstrap interval over texts. A study's members and non-members are a seeded random split of one
split, so the interval should hold 0.5; when it excludes 0.5 (``biased``) the split is not random in content and
a detector's AUC cannot be read as membership.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from detect.errors import InputError


def blind_baseline(members: Sequence[str], non_members: Sequence[str], *, seed: int = 0, folds: int = 5,
                   n_resamples: int = 1000) -> dict:
    """Cross-validated AUC of a text-only classifier separating ``members`` from ``non_members``."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline, make_union

    folds = min(folds, len(members), len(non_members))
    if folds < 2:
        raise InputError(f"the blind baseline needs at least 2 members and 2 non-members; got {len(members)} and "
                         f"{len(non_members)}: raise sample.n_members / sample.n_non_members")
    texts = [*members, *non_members]
    labels = np.array([1] * len(members) + [0] * len(non_members))
    features = make_union(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                          TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True))
    classifier = make_pipeline(features, LogisticRegression(max_iter=1000))
    splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scores = cross_val_predict(classifier, texts, labels, cv=splits, method="decision_function")
    auc = float(roc_auc_score(labels, scores))
    rng = np.random.default_rng(seed)
    positive, negative = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    estimates = []
    for _ in range(n_resamples):  # resample within each class, as calibration's instance-level intervals do
        index = np.concatenate([rng.choice(positive, positive.size), rng.choice(negative, negative.size)])
        estimates.append(roc_auc_score(labels[index], scores[index]))
    low, high = (float(q) for q in np.quantile(estimates, [0.025, 0.975]))
    return {"auc": auc, "low": low, "high": high, "biased": low > 0.5, "folds": folds,
            "n_members": len(members), "n_non_members": len(non_members),
            "features": "tf-idf word 1-2-grams + char 2-5-grams", "classifier": "logistic regression"}
