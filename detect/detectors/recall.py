"""ReCaLL (Xie et al., EMNLP 2024, "ReCaLL: Membership Inference via Relative Conditional Log-Likelihoods"): how
much an instance's log-likelihood changes when known non-members are put before it.

With LL(x) the mean log-probability of x's tokens and P a prefix of known non-members,

    ReCaLL(x) = LL(x | P) / LL(x)

Both log-likelihoods are negative, so the ratio is NLL(x | P) / NLL(x). The paper's finding: a non-member prefix
lowers a member's log-likelihood more than a non-member's (the prefix moves the model away from what it
memorised), so a member's ratio is larger. **Higher = more likely a member**, as the paper's project page says
and as the official code (github.com/ruoyuxie/recall, ``src/run.py``) feeds ``ll_nonmember / ll`` to the ROC
with members labelled 1, unsigned: the lab's orientation as it is.

Each instance x is read as its leak rendered it (``Evidence.renderings``): LL(x) is the mean log-probability of
the tokens of its ``text`` given its ``context`` (an instruction's answer given its chat prompt; with no context
the first token has none and is not scored), LL(x | P) the same tokens given ``P + context``. Both come from
``LanguageModel.continuation_logprobs`` and are asked for in ``logit_requests`` (one batched pass per cell).

The prefix, as the lab builds it:

- **which non-members**: ``n_shots`` instances of ``Evidence.known_non_members``, the lab's known non-members (a third
  pool of the split, disjoint from members, non-members and the scored sample: ``sample.n_heldout``), drawn without
  replacement by ``numpy.random.default_rng(evidence.seed)`` from the known non-members sorted by instance id, so
  every instance of a cell is scored against one prefix (the official code also uses one prefix for all) and a
  cell recomputes the same one; all of them where fewer than ``n_shots`` are held out. The official code takes the
  first ``num_shots`` of WikiMIA's non-members after ``random.shuffle`` (seed 42) and scores the rest.
- **how each shot is written**: as the leak renders that instance (its context, then its text), the way the
  scored instances are read, so the prefix is in-distribution non-member text of the leak's own shape.
- **default n_shots = 12**: the official code's ``--num_shots`` default (``src/options.py``; its README example
  runs 7; the paper sweeps 1 to 28 shots on WikiMIA).
- **separator ""**: the official code joins the shots with ``"".join(prefix)`` and puts the target straight after
  them, no separator. ``separator`` (a setting) is put between shots and after the last one.

No truncation to the context window (the official default ``--pass_window True`` does not truncate either): 12
shots of a lab instance are a few hundred tokens.

Where the official code differs from the paper's formula as written: the two log-likelihoods average over
different tokens. ``get_ll`` scores x alone, whose first token has no context; ``get_conditional_ll`` tokenizes the
prefix and x apart and concatenates the ids, so x's first token is scored (given the prefix). The lab does the
same through ``continuation_logprobs``: with an empty context x's first token is not scored in LL(x) and is in
LL(x | P) (with a context, every token of ``text`` is scored in both). The lab joins prefix and instance as text,
not as separately tokenized ids, so a token straddling the join belongs to the context (``continuation``).

A score is NaN where it is undefined: x has no scored token, or LL(x) = 0.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, Rendering
from detect.validate import Range


def recall_score(conditional_logp: Sequence[float], logp: Sequence[float]) -> float:
    """LL(x | P) / LL(x) from the scored tokens' log-probabilities with and without the prefix (mean each)."""
    if len(logp) == 0 or len(conditional_logp) == 0:
        return float("nan")
    unconditional = float(np.mean(logp))
    # LL(x) = 0 only if every token has probability 1: the ratio is undefined, not infinite
    return float(np.mean(conditional_logp)) / unconditional if unconditional != 0 else float("nan")


class ReCaLL(Detector):
    """ReCaLL of each instance as its leak rendered it, against a prefix of known non-members."""
    name, level, needs = "recall", "instance", ("logits", "known_non_members")
    scores = ("recall",)
    title = "ReCaLL (log-likelihood given known non-members over log-likelihood alone)"
    describes = {"recall": "logits + known non-members (held-out pool)"}

    ranges = {"n_shots": Range(1, hint="known non-members in the prefix; the official code's default is 12")}

    def __init__(self, n_shots: int = 12, separator: str = "") -> None:
        self.n_shots, self.separator = n_shots, separator

    def shots(self, evidence: Evidence) -> list[Example]:
        """The known non-members the prefix is made of, in prefix order (a seeded draw of
        ``evidence.known_non_members``)."""
        known = sorted(evidence.known_non_members, key=lambda example: example.instance_id)
        rng = np.random.default_rng(evidence.seed)
        chosen = rng.choice(len(known), size=min(self.n_shots, len(known)), replace=False)
        return [known[i] for i in chosen]

    def prefix(self, evidence: Evidence) -> str:
        """P: each shot as the leak renders it (context + text), each followed by ``separator``."""
        return "".join(context + text + self.separator for context, text in evidence.renderings(self.shots(evidence)))

    def requests(self, evidence: Evidence,
                 examples: Sequence[Example] | None = None) -> tuple[list[Rendering], list[Rendering]]:
        """(x alone, x after the prefix) as ``continuation_logprobs`` requests: the same scored text in both."""
        renderings = evidence.renderings(examples)
        prefix = self.prefix(evidence)
        return renderings, [Rendering(prefix + context, text) for context, text in renderings]

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        alone, prefixed = self.requests(evidence)
        return [([context + text for context, text in alone + prefixed], False)]

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        alone, prefixed = self.requests(evidence, examples)
        stats = evidence.model.continuation_logprobs(alone)
        conditional = evidence.model.continuation_logprobs(prefixed)
        return [{"recall": recall_score(c["logp"], s["logp"])} for c, s in zip(conditional, stats)]
