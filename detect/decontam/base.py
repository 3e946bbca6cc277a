"""A data-side decontaminator: it indexes a benchmark once, reads a training stream once, and says which benchmark
instances it found there, with a score per instance and the stream documents that matched.

    detector.fit({"humaneval/0": "def f(x):...", ...})   # the index: memory linear in the benchmark
    for batch in batches: detector.update(batch)        # the stream, in order, in batches of documents
    findings = detector.findings()                      # per instance: score, flagged, matching documents

Every detector reads each stream document on its own (no match crosses a document boundary: a training example is
what the published filters compare against). An instance the detector cannot read (fewer units than its n) is
``unreadable``: it is never counted as clean, and the report gives the count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Mapping, Sequence

Key = Hashable  # an instance's key in the benchmark: an instance id, or "dataset/id" where two datasets share ids


class Batch:
    """A run of stream documents (their indices in the stream and texts), each view of it computed once and shared
    by the detectors that read it (two token detectors tokenize a batch once)."""

    def __init__(self, start: int, texts: Sequence[str]) -> None:
        self.start, self.texts = start, list(texts)
        self._views: dict = {}

    def view(self, key, compute):
        """``compute(texts)`` once per ``key`` (a units function's identity) for this batch."""
        if key not in self._views:
            self._views[key] = compute(self.texts)
        return self._views[key]


@dataclass
class Findings:
    """One detector's reading of one stream. ``scores``: per readable instance, higher = more of it found (the
    detector's own measure, in [0, 1]); ``flagged``: the instances its rule calls contaminated; ``documents``: per
    instance, the stream documents (indices) that matched any part of it; ``unreadable``: instances it cannot read."""

    detector: str
    rule: str
    scores: dict[Key, float]
    flagged: set[Key]
    documents: dict[Key, set[int]]
    unreadable: set[Key] = field(default_factory=set)
    documents_read: int = 0
    units_read: int = 0

    def flagged_documents(self) -> set[int]:
        """The stream documents a decontamination by this detector would drop: those that matched a flagged
        instance (a document that matched only instances left unflagged stays)."""
        return {d for key in self.flagged for d in self.documents.get(key, ())}


class Decontaminator:
    """The interface every data-side detector implements (detect/decontam/ngram.py, substring.py, embedding.py)."""

    name: str
    rule: str  # one line: what flags an instance, as the report prints it

    def fit(self, benchmark: Mapping[Key, str]) -> None:
        raise NotImplementedError

    def update(self, batch: Batch) -> None:
        raise NotImplementedError

    def findings(self) -> Findings:
        raise NotImplementedError

    def describe(self) -> dict:
        """The settings that decide what it flags (summary.json, plant.json)."""
        raise NotImplementedError
