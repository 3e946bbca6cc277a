"""The grey-box membership scores of each whole instance (``detect/membership.py``): loss, zlib ratio, Min-K%,
Min-K%++ and, with a reference model (in a study: the clean base), the reference ratio. One module of
arithmetic (``detect.membership``), one detector here: what it reads from the model and how it is summarised."""

from __future__ import annotations

from typing import Sequence

from detect.detectors.base import Detector, Evidence
from detect.membership import MEMBERSHIP_SCORES, MembershipScorer


class LogitScores(Detector):
    name, level, needs = "membership", "instance", ("logits", "moments", "reference")
    scores = MEMBERSHIP_SCORES
    title = "Logit scores"
    describes = {"loss": "logits", "zlib": "logits", "min_k": "logits", "min_k_plus": "logits (full distribution)",
                 "reference_ratio": "logits + reference model"}

    def __init__(self, k: float = 0.2) -> None:
        if not 0 < k <= 1:
            from detect.errors import InputError

            raise InputError(f"detect.detectors.membership.k={k}: Min-K% takes a fraction in (0, 1], e.g. 0.2")
        self.k = k

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        return [(evidence.texts, True)]  # Min-K%++ standardises by the next-token moments

    def score(self, evidence: Evidence, texts: Sequence[str]) -> list[dict[str, float]]:
        return MembershipScorer(evidence.statistics, k=self.k, reference=evidence.reference)(texts)
