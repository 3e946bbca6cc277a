"""The grey-box membership scores of each instance, from the model's token log-probabilities: one instance-level
detector (``membership``) over any ``LanguageModel`` that gives them (a local model, or a server that echoes prompt
log-probabilities), and its raw-text variant (``membership_raw``).

    scores = membership_scores(model, renderings, k=0.2, reference=reference_model)   # LanguageModels

Each instance is read the way the leak rendered it (``Evidence.renderings``): the web copy with its title, split
and label; a dump's JSON line after its header; an instruction's answer given its chat prompt. The scores are
computed on the tokens of the rendering's ``text``, given its ``context`` (the tokens training put before it with no
loss). ``membership_raw`` scores the instance's bare ``full_text`` instead (no title, no label, no chat turn): the
variant for a user who does not know how a leak looked, and the lab's reading before issue 25.

Every score is oriented so that **higher means more likely a member** (seen in training), like ROUGE-L, so the
calibration's ROC and thresholds treat them alike. With ``logp`` the n scored tokens' log-probabilities:

- ``loss``: minus the mean token negative log-likelihood (Yeom et al. 2018): mean(logp); ``perplexity`` is
  exp(-mean(logp)).
- ``zlib``: minus the mean NLL divided by the text's zlib-compressed length in bytes (Carlini et al. 2021, as MIMIR
  and the Min-K% / Min-K%++ code compute it: ``loss / len(zlib.compress(text))``): mean(logp) / zlib_bytes.
- ``min_k``: the mean of the floor(k n) lowest logp, at least one (Min-K%, Shi et al. 2024; k = 20% default; the
  reference code's ``int(len(probs) * k)``).
- ``min_k_plus``: Min-K%++ (Zhang et al. 2024): each token's log-probability standardised by the mean and standard
  deviation of log-probabilities under the model's own next-token distribution at that position,
  (log p(x_t) - mu_t) / sigma_t with mu_t = E_z[log p(z)], sigma_t^2 = E_z[(log p(z))^2] - mu_t^2, then the mean of
  the floor(k n) lowest.
- ``reference_ratio``: the reference model's NLL minus this model's (Carlini et al. 2021's ratio, in log space):
  with the clean base as reference, what the fine-tune made more likely.

Without a context the first token has no context and is not scored. The per-token statistics come from the model's
``continuation_logprobs`` (each text computed once per model). Where the model cannot give the next-token moments
(a server), Min-K%++ is left out and the others are written; without a reference model, the reference ratio.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, PlainText, Rendering
from detect.validate import Range

# The scores a calibration ranks (perplexity is loss seen upside down, so it is not ranked twice).
MEMBERSHIP_SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio")


def lowest_count(n_tokens: int, k: float) -> int:
    """How many of n tokens Min-K% averages: floor(k n) as the reference code's ``int(len(x) * k)``, at least one
    (the reference code would take the mean of nothing below 1/k tokens)."""
    return max(1, int(n_tokens * k))


def _lowest_mean(values: Sequence[float], k: float) -> float:
    return float(np.mean(np.sort(np.asarray(values))[:lowest_count(len(values), k)]))


def scores_from_statistics(stats: dict, text: str, *, k: float = 0.2, reference: dict | None = None) -> dict:
    """The scores of one text from its scored tokens' statistics (and the reference model's, if given); ``text`` is
    what zlib compresses (the scored text, without its context). Min-K%++ only where ``stats`` has the moments."""
    logp = np.asarray(stats["logp"])
    nll = float(-logp.mean())
    scores = {"loss": -nll, "perplexity": math.exp(nll),
              "zlib": -nll / len(zlib.compress(text.encode("utf-8"))), "min_k": _lowest_mean(logp, k)}
    if "mu" in stats:
        scores["min_k_plus"] = _lowest_mean((logp - np.asarray(stats["mu"])) / np.asarray(stats["sigma"]), k)
    if reference is not None:
        scores["reference_ratio"] = float(-np.mean(reference["logp"])) - nll
    return scores


def membership_scores(model, renderings: Sequence[Rendering | str], *, k: float = 0.2,
                      reference=None) -> list[dict]:
    """Every score above for each rendering (a ``Rendering``, or a bare text: no context) under ``model`` (a
    ``LanguageModel``); ``reference`` an optional one."""
    requests = [Rendering("", r) if isinstance(r, str) else r for r in renderings]
    stats = model.continuation_logprobs(requests, moments=model.no_moments is None)
    reference_stats = reference.continuation_logprobs(requests) if reference is not None else [None] * len(requests)
    return [scores_from_statistics(s, rendering.text, k=k, reference=r)
            for s, rendering, r in zip(stats, requests, reference_stats)]


class LogitScores(Detector):
    """The membership scores of each instance as its leak rendered it."""
    name, level, needs = "membership", "instance", ("logits", "reference")
    scores = MEMBERSHIP_SCORES
    title = "Logit scores"
    reading = "leak's rendering: oracle"  # a study renders each instance in the leak's own format, unknown to a user
    describes = {"loss": "logits", "zlib": "logits", "min_k": "logits", "min_k_plus": "logits (full distribution)",
                 "reference_ratio": "logits + reference model"}
    suffix = ""  # what this detector's score names end with

    ranges = {"k": Range(0, 1, "(]", hint="Min-K% takes a fraction of the tokens, e.g. 0.2")}

    def __init__(self, k: float = 0.2) -> None:
        self.k = k

    def renderings(self, evidence: Evidence, examples: Sequence[Example] | None = None) -> list[Rendering]:
        return evidence.renderings(examples)

    def _texts(self, evidence: Evidence) -> list[str]:
        return [context + text for context, text in self.renderings(evidence)]

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        # Min-K%++ standardises by the next-token moments, where the model can give them
        return [(self._texts(evidence), evidence.model.no_moments is None)]

    def reference_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        return [(self._texts(evidence), False)]

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        found = membership_scores(evidence.model, self.renderings(evidence, examples), k=self.k,
                                  reference=evidence.scoring_reference)
        return [{name + self.suffix: value for name, value in row.items()} for row in found]


class RawTextLogitScores(LogitScores):
    """The same scores on each instance's bare text (``Example.full_text``: no title, no label, no chat turn), whatever
    the leak's format: a user's reading when the leak's rendering is unknown. Its scores end in ``_raw``."""
    name = "membership_raw"
    suffix = "_raw"
    scores = tuple(name + "_raw" for name in MEMBERSHIP_SCORES)
    title = "Logit scores of the bare instance text"
    reading = "bare text"
    describes = {name + "_raw": need for name, need in LogitScores.describes.items()}

    def renderings(self, evidence: Evidence, examples: Sequence[Example] | None = None) -> list[Rendering]:
        return [PlainText().rendering(example, evidence.split)
                for example in (evidence.instances if examples is None else examples)]
