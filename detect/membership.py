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
- ``reference_ratio``: the reference model's NLL minus this model's (Carlini et al. 2021's ratio, in log space): with the
  clean base as reference, what the fine-tune made more likely.

The first token has no context and is not scored. Texts are scored in batches, right-padded, one forward pass each.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

# The scores a calibration ranks (perplexity is loss seen upside down, so it is not ranked twice).
MEMBERSHIP_SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio")


def token_statistics(model, tokenizer, texts: Sequence[str], *, batch_size: int = 16,
                     moments: bool = True) -> list[dict]:
    """Per text: the log-probability of each token given its prefix (``logp``) and, with ``moments``, the mean
    and standard deviation of log p under the next-token distribution at that position (``mu``, ``sigma``).
    Without them only a log-sum-exp over the vocabulary is taken, about 4x less work on a 49k vocabulary."""
    import torch

    # Right padding, so that every text's positions start at 0 as when it is scored alone; the tokenizer is
    # shared with the generator (left padding), so it is set back afterwards.
    padding_side, pad_token = tokenizer.padding_side, tokenizer.pad_token
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    try:
        return _token_statistics(model, tokenizer, texts, batch_size, moments, torch)
    finally:
        tokenizer.padding_side, tokenizer.pad_token = padding_side, pad_token


def _token_statistics(model, tokenizer, texts, batch_size, moments, torch) -> list[dict]:
    results = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        encoded = tokenizer(batch, return_tensors="pt", padding=True)
        with torch.no_grad():
            logits = model(**encoded).logits[:, :-1].float()
        targets = encoded.input_ids[:, 1:].unsqueeze(-1)
        mask = encoded.attention_mask[:, 1:].bool()
        if moments:
            log_probs = torch.log_softmax(logits, dim=-1)
            token_logp = log_probs.gather(-1, targets).squeeze(-1)
            probs = log_probs.exp()
            mu = (probs * log_probs).sum(-1)
            sigma = ((probs * log_probs.pow(2)).sum(-1) - mu.pow(2)).clamp_min(1e-12).sqrt()
        else:
            token_logp = logits.gather(-1, targets).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        for row in range(len(batch)):
            keep = mask[row]
            found = {"logp": token_logp[row][keep].tolist()}
            if moments:
                found.update(mu=mu[row][keep].tolist(), sigma=sigma[row][keep].tolist())
            results.append(found)
    return results


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


def membership_scores(model, tokenizer, texts: Sequence[str], *, k: float = 0.2, reference=None,
                      batch_size: int = 16) -> list[dict]:
    """Every score above for each text; ``reference`` is an optional (model, tokenizer) pair."""
    if not 0 < k <= 1:
        raise ValueError(f"k={k}: Min-K% takes a fraction in (0, 1], e.g. 0.2")
    stats = token_statistics(model, tokenizer, texts, batch_size=batch_size)
    reference_stats = [None] * len(texts)
    if reference is not None:
        reference_stats = token_statistics(*reference, texts, batch_size=batch_size, moments=False)
    return [scores_from_statistics(s, text, k=k, reference=r) for s, text, r in zip(stats, texts, reference_stats)]


class MembershipScorer:
    """``texts -> scores`` for ``detect_partition``: a model, its tokenizer, k, and an optional reference pair."""

    def __init__(self, model, tokenizer, *, k: float = 0.2, reference=None, batch_size: int = 16) -> None:
        self.model, self.tokenizer, self.k, self.reference, self.batch_size = model, tokenizer, k, reference, batch_size

    def __call__(self, texts: Sequence[str]) -> list[dict]:
        return membership_scores(self.model, self.tokenizer, texts, k=self.k, reference=self.reference,
                                 batch_size=self.batch_size)
