"""The A/A pre-check of a pool of known non-members (issue 68): are they exchangeable with the split being judged?

The recipe's bound and a split-conformal threshold's hold by theorem when the known non-members and the judged
instances are exchangeable. That assumption can be checked before any verdict, with what a practitioner has: a model
that saw neither pool (the base model of a fine-tune, or any reference model). Under it the two pools should read
alike; where they do not, a threshold fitted on one pool does not carry its bound to the other, whatever the suspect
model learnt.

    found = precheck(reference, known_texts, judged_texts)       # per score: AUC, two-sided Mann-Whitney p
    print(precheck_line(found))

The rule (a warning, never a refusal: the thresholds are still fitted and printed, their bound marked as resting on
an assumption the data question): **warn where the loss under the reference model departs from exchangeability at a
two-sided Mann-Whitney p <= 0.05**. The AUC is P(a judged instance scores as more familiar than a known one): 0.5
where the pools are exchangeable. With a few dozen instances a pool this check has little power: "no departure
found" is not "exchangeable" (40 against 40 finds an AUC of 0.65 about half the time).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from detect.detectors.membership import membership_scores

PRECHECK_ALPHA = 0.05
PRECHECK_SCORES = ("loss", "zlib", "min_k_plus")  # read under the reference model alone
RULE_SCORE = "loss"


def rule_text(alpha: float = PRECHECK_ALPHA) -> str:
    return (f"warn where the {RULE_SCORE} under a model that saw neither pool departs at a two-sided Mann-Whitney "
            f"p <= {alpha:g}")


def reference_loss(loss, reference_ratio):
    """The reference model's loss score of a text from a run's own scores, where the reference saw neither pool:
    ``loss`` is -nll and ``reference_ratio`` is nll_ref - nll (detect/detectors/membership.py), so their difference
    is -nll_ref. Arrays or floats."""
    return loss - reference_ratio


def departure(known: Sequence[float], judged: Sequence[float]) -> dict:
    """AUC (judged above known; higher = more familiar, as the lab's scores point) and the two-sided Mann-Whitney p."""
    known, judged = np.asarray(known, float), np.asarray(judged, float)
    if known.size == 0 or judged.size == 0:
        return {"auc": None, "p": None, "n_known": int(known.size), "n_judged": int(judged.size)}
    test = mannwhitneyu(judged, known, alternative="two-sided")
    return {"auc": float(test.statistic) / (known.size * judged.size), "p": float(test.pvalue),
            "n_known": int(known.size), "n_judged": int(judged.size)}


def verdict(found: dict, alpha: float = PRECHECK_ALPHA) -> dict:
    """The rule on a ``departure`` per score: warn where the loss departs at p <= alpha."""
    rule = found.get(RULE_SCORE) or {}
    warn = rule.get("p") is not None and rule["p"] <= alpha
    return {"warn": bool(warn), "alpha": alpha, "score": RULE_SCORE, "rule": rule_text(alpha)}


def precheck(reference, known_texts: Sequence[str], judged_texts: Sequence[str], *,
             alpha: float = PRECHECK_ALPHA) -> dict:
    """Each score of ``PRECHECK_SCORES`` of both pools' bare texts under ``reference`` (a ``LanguageModel`` that saw
    neither), its departure, and the rule's verdict."""
    known = membership_scores(reference, list(known_texts))
    judged = membership_scores(reference, list(judged_texts))
    found = {score: departure([row[score] for row in known], [row[score] for row in judged])
             for score in PRECHECK_SCORES if all(score in row for row in known + judged)}
    return {"reference": getattr(reference, "name", None), "scores": found, **verdict(found, alpha)}


def precheck_line(found: dict | None) -> str:
    """One line for a run's summary: what the pre-check found and whether it warns."""
    if found is None:
        return "A/A pre-check: not run (no model that saw neither pool: give detect.reference_model)"
    rule = found["scores"].get(found["score"]) or {}
    if rule.get("auc") is None:
        return "A/A pre-check: no instances to compare"
    head = (f"A/A pre-check under {found['reference']}: known non-members against the judged split, "
            f"{found['score']} AUC {rule['auc']:.2f} (Mann-Whitney p {rule['p']:.3g}, {rule['n_known']} v "
            f"{rule['n_judged']})")
    if found["warn"]:
        return (f"{head}: WARNING, the pools are not exchangeable under a model that saw neither; the recipe's and the "
                f"conformal thresholds' bounds assume they are (fit on known non-members drawn as the judged split "
                f"was)")
    return f"{head}: no departure found (a small pool has little power: not a proof of exchangeability)"
