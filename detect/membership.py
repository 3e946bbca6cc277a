"""Logit-based membership scores of texts under a local model (issue 6's grey-box detectors).

    scores = membership_scores(model, tokenizer, texts, k=0.2, reference=(ref_model, ref_tokenizer))

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

The first token has no context and is not scored. The per-token statistics come from ``detect.logits``
(length-sorted batches, each text computed once per model).
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

from detect.logits import TokenStatistics, token_statistics  # noqa: F401 (token_statistics: the public name)

# The scores a calibration ranks (perplexity is loss seen upside down, so it is not ranked twice).
MEMBERSHIP_SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio")


def _lowest_mean(values: Sequence[float], k: float) -> float:
    count = max(1, math.ceil(len(values) * k))  # at least one token, so a short text still has a score
    return float(np.mean(np.sort(np.asarray(values))[:count]))


def scores_from_statistics(stats: dict, text: str, *, k: float = 0.2, reference: dict | None = None) -> dict:
    """The scores of one text from its ``token_statistics`` (and the reference model's, if given)."""
    logp = np.asarray(stats["logp"])
    nll = float(-logp.mean())
    standardised = (logp - np.asarray(stats["mu"])) / np.asarray(stats["sigma"])
    scores = {"loss": -nll, "perplexity": math.exp(nll),
              "zlib": float(logp.sum()) / len(zlib.compress(text.encode("utf-8"))),
              "min_k": _lowest_mean(logp, k), "min_k_plus": _lowest_mean(standardised, k)}
    if reference is not None:
        scores["reference_ratio"] = float(-np.mean(reference["logp"])) - nll
    return scores


def membership_scores(model, tokenizer, texts: Sequence[str], *, k: float = 0.2, reference=None) -> list[dict]:
    """Every score above for each text; ``reference`` is an optional (model, tokenizer) pair."""
    reference = TokenStatistics(*reference) if reference is not None else None
    return MembershipScorer(TokenStatistics(model, tokenizer), k=k, reference=reference)(texts)


class MembershipScorer:
    """``texts -> scores`` for ``detect_partition``: a model's ``TokenStatistics``, k, and optionally the reference
    model's (in a study: the clean base's, whose memo its own cells fill)."""

    def __init__(self, statistics: TokenStatistics, *, k: float = 0.2, reference: TokenStatistics | None = None):
        if not 0 < k <= 1:
            raise ValueError(f"k={k}: Min-K% takes a fraction in (0, 1], e.g. 0.2")
        self.statistics, self.k, self.reference = statistics, k, reference

    def __call__(self, texts: Sequence[str]) -> list[dict]:
        stats = self.statistics.get(texts, moments=True)
        reference_stats = [None] * len(texts)
        if self.reference is not None:
            reference_stats = self.reference.get(texts, moments=False)
        return [scores_from_statistics(s, text, k=self.k, reference=r)
                for s, text, r in zip(stats, texts, reference_stats)]
