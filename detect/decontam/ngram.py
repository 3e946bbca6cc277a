"""n-gram overlap of a benchmark and a training stream: GPT-3's 13-grams, Llama 3's 8-grams, ConTAM's longest match.

    NgramMatch("gpt3_13gram", n=13, unit="words", rule="any")                    # one shared 13-gram flags it
    NgramMatch("llama3_8gram", n=8, unit="tokens", rule="coverage", threshold=0.5, tokenizer=tok)
    NgramMatch("contam_longest", n=8, unit="tokens", rule="longest", threshold=0.5, tokenizer=tok)

The index maps each n-gram of each benchmark instance to where it sits (instance, position): memory is linear in the
benchmark, and the stream is read once, each document's n-grams looked up as they come. A stream n-gram found in
the index marks the instance's units it covers; from those marks:

- ``coverage`` (ConTAM's TOKEN-MATCH; Llama 3: "a ratio T of its tokens are contained in an 8-gram occurring at
  least once in the pre-training corpus"): the share of the instance's units inside some matched n-gram;
- ``longest`` (ConTAM's LONGEST-MATCH, which Singh et al. 2024 found the best of their four): the longest run of
  covered units over the instance's length, runs separated by at most ``skip_budget`` uncovered units joined (the
  gap counted in the run), as their skip budget joins them;
- ``any`` (GPT-3, lm-eval-harness's Janitor): flagged by one matched n-gram; its score is the coverage.

Where we chose: Llama 3 picks T per benchmark by the largest estimated performance gain and ConTAM its threshold the
same way, from the model's own scores; a data-side check has no model, so both flag at ``threshold`` (0.5 in
conf/decontam/default.yaml) and the report gives each score's AUC as well. ConTAM counts an n-gram's occurrences
in the corpus against a minimum (mincount); here one occurrence is enough (their best setting at scale).
An instance with fewer than ``n`` units has no n-gram: ``unreadable``, never clean.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping

from detect.decontam.base import Batch, Decontaminator, Findings, Key
from detect.decontam.units import UNITS, TokenUnits, janitor_words
from detect.errors import InputError

RULES = ("any", "coverage", "longest")


def longest_run(covered: bytes | bytearray, skip_budget: int = 0) -> int:
    """The longest run of covered positions (non-zero bytes), runs at most ``skip_budget`` positions apart joined
    with the gap counted: ``longest_run(b"\\1\\1\\0\\1", 1) == 4``, ``longest_run(b"\\1\\1\\0\\1") == 2``."""
    best, start, last = 0, None, None  # the current joined run: its first and last covered position
    for position, mark in enumerate(covered):
        if not mark:
            continue
        if start is None or position - last - 1 > skip_budget:
            start = position
        last = position
        best = max(best, last - start + 1)
    return best


class NgramMatch(Decontaminator):
    """n-gram overlap at ``n`` ``unit``s (``words``: the Janitor's normalised words; ``tokens``: ``tokenizer``'s
    ids), flagged by ``rule`` (module docstring) at ``threshold`` (unused by ``any``)."""

    def __init__(self, name: str, *, n: int, unit: str = "words", rule: str = "any", threshold: float = 0.5,
                 skip_budget: int = 0, tokenizer=None) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"decontam {name}: n={n}; give the n-gram length, a whole number >= 1 (13: GPT-3's)")
        if unit not in UNITS:
            raise InputError(f"decontam {name}: unit={unit}; use one of {', '.join(UNITS)}")
        if rule not in RULES:
            raise InputError(f"decontam {name}: rule={rule}; use one of {', '.join(RULES)}")
        if not 0 < threshold <= 1:
            raise InputError(f"decontam {name}: threshold={threshold}; give a share of the instance in (0, 1]")
        if unit == "tokens" and tokenizer is None:
            raise InputError(f"decontam {name}: unit=tokens needs the model's tokenizer")
        self.name, self.n, self.unit, self.threshold, self.skip_budget = name, n, unit, float(threshold), skip_budget
        self.rule_name = rule
        self.tokenizer_name = getattr(tokenizer, "name_or_path", None) if tokenizer is not None else None
        self.units = TokenUnits(tokenizer) if unit == "tokens" else None
        gaps = f", gaps <= {skip_budget}" if skip_budget else ""
        self.rule = {"any": f"one shared {n}-gram of {unit}",
                     "coverage": f"share of the instance's {unit} in shared {n}-grams >= {threshold:g}",
                     "longest": f"longest shared run of {unit} ({n}-grams{gaps}) / length >= {threshold:g}"}[rule]

    def describe(self) -> dict:
        found = {"name": self.name, "kind": "ngram", "n": self.n, "unit": self.unit, "rule": self.rule_name}
        if self.rule_name != "any":
            found["threshold"] = self.threshold
        if self.rule_name == "longest":
            found["skip_budget"] = self.skip_budget
        if self.unit == "tokens":
            found["tokenizer"] = self.tokenizer_name
        return found

    def _units(self, texts) -> list:
        return self.units.many(texts) if self.units else [janitor_words(text) for text in texts]

    def fit(self, benchmark: Mapping[Key, str]) -> None:
        keys = list(benchmark)
        units = self._units([benchmark[key] for key in keys])
        self.lengths = {key: len(found) for key, found in zip(keys, units)}
        self.unreadable = {key for key, length in self.lengths.items() if length < self.n}
        if keys and len(self.unreadable) == len(keys):
            longest = max(self.lengths.values())
            raise InputError(f"decontam {self.name}: n={self.n} is larger than every instance (the longest has "
                             f"{longest} {self.unit}); lower n")
        self.index: dict[tuple, list[tuple[Key, int]]] = defaultdict(list)
        for key, found in zip(keys, units):
            for position in range(len(found) - self.n + 1):
                self.index[tuple(found[position:position + self.n])].append((key, position))
        self.index = dict(self.index)
        self.covered = {key: bytearray(length) for key, length in self.lengths.items() if key not in self.unreadable}
        self.documents: dict[Key, set[int]] = defaultdict(set)
        self.documents_read = self.units_read = 0

    def update(self, batch: Batch) -> None:
        n, index, covered, documents = self.n, self.index, self.covered, self.documents
        mark = b"\x01" * n
        for offset, units in enumerate(batch.view((self.unit, id(self.units and self.units.tokenizer)),
                                                  self._units)):
            self.units_read += len(units)
            document = batch.start + offset
            for position in range(len(units) - n + 1):
                found = index.get(tuple(units[position:position + n]))
                if found:
                    for key, at in found:
                        covered[key][at:at + n] = mark
                        documents[key].add(document)
        self.documents_read += len(batch.texts)

    def score(self, key: Key) -> float:
        covered = self.covered[key]
        if self.rule_name == "longest":
            return longest_run(covered, self.skip_budget) / len(covered)
        return sum(covered) / len(covered)

    def findings(self) -> Findings:
        exact = {key: self.score(key) for key in self.covered}
        flagged = {key for key, value in exact.items()
                   if (value > 0 if self.rule_name == "any" else value >= self.threshold)}
        scores = {key: round(value, 6) for key, value in exact.items()}
        return Findings(self.name, self.rule, scores, flagged, dict(self.documents), set(self.unreadable),
                        self.documents_read, self.units_read)
