"""GPT-4's substring match (OpenAI 2023, appendix C): "Both evaluation and training data are processed by removing
all spaces and symbols keeping only characters (including numbers). For each evaluation example, we randomly select
three substrings of 50 characters (or use the entire example if it's less than 50 characters). A match is identified
if any of the three sampled evaluation substrings is a substring of the processed training example."

    SubstringMatch("gpt4_50char", length=50, samples=3, seed=0)

Where we chose: the three substrings are drawn without replacement among the example's start positions, seeded by
the run's seed and the instance's key (the same three in every run of one seed); an example of fewer than
``samples`` distinct substrings uses every one it has. Case is kept (the report does not say). The score is the
share of the sampled substrings found (0, 1/3, 2/3, 1); one flags.

Each processed document is read once per distinct substring length (one, unless some instances are shorter than
``length``), every window looked up in a set: time linear in the stream, memory in the benchmark.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Mapping

from detect.decontam.base import Batch, Decontaminator, Findings, Key
from detect.decontam.units import alnum_chars
from detect.errors import InputError


class SubstringMatch(Decontaminator):
    """``samples`` substrings of ``length`` processed characters per instance; one found in a document flags it."""

    def __init__(self, name: str, *, length: int = 50, samples: int = 3, seed: int = 0) -> None:
        for setting, value in (("length", length), ("samples", samples)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"decontam {name}: {setting}={value}; give a whole number >= 1")
        self.name, self.length, self.samples, self.seed = name, length, samples, seed
        self.rule = f"one of {samples} random {length}-character substrings (letters and digits only) found"

    def describe(self) -> dict:
        return {"name": self.name, "kind": "substring", "length": self.length, "samples": self.samples,
                "seed": self.seed}

    def fit(self, benchmark: Mapping[Key, str]) -> None:
        self.pieces: dict[Key, list[str]] = {}
        self.unreadable: set[Key] = set()
        for key, text in benchmark.items():
            processed = alnum_chars(text)
            if not processed:  # nothing but spaces and symbols: nothing to find
                self.unreadable.add(key)
            elif len(processed) <= self.length:
                self.pieces[key] = [processed]
            else:
                starts = range(len(processed) - self.length + 1)
                chosen = random.Random(f"{self.seed}/{key}").sample(starts, min(self.samples, len(starts)))
                self.pieces[key] = [processed[start:start + self.length] for start in sorted(chosen)]
        # by length, then substring -> (instance, which of its pieces): one window lookup finds every instance
        self.by_length: dict[int, dict[str, list[tuple[Key, int]]]] = defaultdict(lambda: defaultdict(list))
        for key, pieces in self.pieces.items():
            for which, piece in enumerate(pieces):
                self.by_length[len(piece)][piece].append((key, which))
        self.found = {key: [False] * len(pieces) for key, pieces in self.pieces.items()}
        self.documents: dict[Key, set[int]] = defaultdict(set)
        self.documents_read = self.units_read = 0

    def update(self, batch: Batch) -> None:
        for offset, processed in enumerate(batch.view("chars", lambda texts: [alnum_chars(t) for t in texts])):
            self.units_read += len(processed)
            document = batch.start + offset
            for length, pieces in self.by_length.items():
                for start in range(len(processed) - length + 1):
                    hits = pieces.get(processed[start:start + length])
                    if hits:
                        for key, which in hits:
                            self.found[key][which] = True
                            self.documents[key].add(document)
        self.documents_read += len(batch.texts)

    def findings(self) -> Findings:
        scores = {key: round(sum(found) / len(found), 6) for key, found in self.found.items()}
        flagged = {key for key, found in self.found.items() if any(found)}
        return Findings(self.name, self.rule, scores, flagged, dict(self.documents), set(self.unreadable),
                        self.documents_read, self.units_read)
