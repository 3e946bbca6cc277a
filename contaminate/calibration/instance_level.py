"""Instance level: ROC curves with bootstrap intervals, and the judge's thresholds fitted to FPR targets."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from contaminate.calibration.constants import FPR_POINTS
from contaminate.calibration.membership import folds_of
from contaminate.calibration.statistics import auc
from contaminate.calibration.studies import Instance, distinct
from detect.errors import InputError
from detect.judges.threshold import ThresholdJudge
from detect.pipeline import SCORES


def roc(labels: Sequence[bool], scores: Sequence[float]) -> dict:
    """ROC curve, AUC and TPR at the FPR_POINTS (the best TPR whose FPR does not exceed the point)."""
    from sklearn.metrics import roc_curve

    labels, scores = np.asarray(labels, bool), np.asarray(scores, float)
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    return {"auc": rank_auc(labels, scores), "fpr": fpr.tolist(), "tpr": tpr.tolist(),
            "tpr_at_fpr": {str(point): float(tpr[fpr <= point + 1e-12].max()) for point in FPR_POINTS},
            "n_positive": int(labels.sum()), "n_negative": int((~labels).sum())}


def rank_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """``auc`` of the scores labelled True over the rest."""
    return auc(scores[labels], scores[~labels])


def auc_interval(labels: Sequence[bool], scores: Sequence[float], clusters: Sequence[str], *,
                 n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict:
    """A percentile bootstrap interval for the AUC, resampling within each class.

    Instances of one cell share a checkpoint and a sample, so they are not independent: with at least 5 cells
    of each class the cells are resampled (a cluster bootstrap); with fewer, the instances are.
    """
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
        estimates.append(rank_auc(labels[index], scores[index]))
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
    """Each instance labelled with thresholds fitted without its model: leave one draw out (models of a draw share
    their members), or one seed where there is one draw; in-sample where there is one model."""
    kind, folds = folds_of([i.unit for i in instances])
    if len(folds) < 2:
        fitted = fit_thresholds(distinct(instances), exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr)
        judge = judges_from(fitted)[score]
        return [label(judge, i) for i in instances], "in-sample (one model)"
    labels: list[str | None] = [None] * len(instances)
    for fold in folds:
        rest = distinct([i for i in instances if i.unit not in fold])
        if not any(i.positive for i in rest) or all(i.positive for i in rest):
            raise InputError(f"the models outside {kind} {fold[0][0 if kind == 'draw' else 1]} lack positives or "
                             f"negatives; cannot cross-fit")
        judge = judges_from(fit_thresholds(rest, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr))[score]
        for position, instance in enumerate(instances):
            if instance.unit in fold:
                labels[position] = label(judge, instance)
    return labels, f"cross-fitted over {len(folds)} {kind}s (thresholds from the other {kind}s)"
