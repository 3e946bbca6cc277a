"""The grey-box membership scores of each whole instance, from the model's token log-probabilities: one
instance-level detector (``membership``) over any ``LanguageModel`` that gives them (a local model, or a server
that echoes prompt log-probabilities).

    scores = membership_scores(model, texts, k=0.2, reference=reference_model)   # LanguageModels

Every score is oriented so that **higher means more likely a member** (seen in training), like ROUGE-L, so the
calibration's ROC and thresholds treat them alike:

- ``loss``: minus the mean token negative log-likelihood (Yeom et al. 2018); ``perplexity`` is exp of the NLL.
- ``zlib``: minus the NLL summed over the text, divided by the text's zlib-compressed length in bytes
  (Carlini et al. 2021): a text that is cheap for the model but not for zlib is suspicious.
- ``min_k``: the mean log-probability of the k% least likely tokens (Min-K%, Shi et al. 2024; k = 20% default).
- ``min_k_plus``: Min-K%++ (Zhang et al. 2024): each token's log-probability standardised by the mean and standard
  deviation of log-probabilities under the model's own next-token distribution at that position,
  (log p(x_t) - mu_t) / sigma_t with mu_t = E_z[log p(z)], sigma_t^2 = E_z[(log p(z))^2] - mu_t^2, then the mean of
  the k% lowest.
- ``reference_ratio``: the reference model's NLL minus this model's (Carlini et al. 2021's ratio, in log space):
  with the clean base as reference, what the fine-tune made more likely.

The first token has no context and is not scored. The per-token statistics come from the model's
``token_logprobs`` (each text computed once per model). Where the model cannot give the next-token moments (a
server), Min-K%++ is left out and the others are written; without a reference model, the reference ratio.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

from detect.detectors.base import Detector, Evidence
from detect.validate import Range

# The scores a calibration ranks (perplexity is loss seen upside down, so it is not ranked twice).
MEMBERSHIP_SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio")


def _lowest_mean(values: Sequence[float], k: float) -> float:
    count = max(1, math.ceil(len(values) * k))  # at least one token, so a short text still has a score
    return float(np.mean(np.sort(np.asarray(values))[:count]))


def scores_from_statistics(stats: dict, text: str, *, k: float = 0.2, reference: dict | None = None) -> dict:
    """The scores of one text from its token statistics (and the reference model's, if given); Min-K%++ only
    where ``stats`` has the next-token moments."""
    logp = np.asarray(stats["logp"])
    nll = float(-logp.mean())
    scores = {"loss": -nll, "perplexity": math.exp(nll),
              "zlib": float(logp.sum()) / len(zlib.compress(text.encode("utf-8"))), "min_k": _lowest_mean(logp, k)}
    if "mu" in stats:
        scores["min_k_plus"] = _lowest_mean((logp - np.asarray(stats["mu"])) / np.asarray(stats["sigma"]), k)
    if reference is not None:
        scores["reference_ratio"] = float(-np.mean(reference["logp"])) - nll
    return scores


def membership_scores(model, texts: Sequence[str], *, k: float = 0.2, reference=None) -> list[dict]:
    """Every score above for each text under ``model`` (a ``LanguageModel``); ``reference`` an optional one."""
    moments = model.no_moments is None
    stats = model.token_logprobs(texts, moments=moments)
    reference_stats = reference.token_logprobs(texts) if reference is not None else [None] * len(texts)
    return [scores_from_statistics(s, text, k=k, reference=r) for s, text, r in zip(stats, texts, reference_stats)]


class LogitScores(Detector):
    name, level, needs = "membership", "instance", ("logits", "reference")
    scores = MEMBERSHIP_SCORES
    title = "Logit scores"
    describes = {"loss": "logits", "zlib": "logits", "min_k": "logits", "min_k_plus": "logits (full distribution)",
                 "reference_ratio": "logits + reference model"}

    ranges = {"k": Range(0, 1, "(]", hint="Min-K% takes a fraction of the tokens, e.g. 0.2")}

    def __init__(self, k: float = 0.2) -> None:
        self.k = k

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        # Min-K%++ standardises by the next-token moments, where the model can give them
        return [(evidence.texts, evidence.model.no_moments is None)]

    def score(self, evidence: Evidence, texts: Sequence[str]) -> list[dict[str, float]]:
        return membership_scores(evidence.model, texts, k=self.k, reference=evidence.scoring_reference)
