"""Cutting an instance into the first piece (shown to the model) and the second piece (to be replayed).

Method section 4. A pair (NLI) is cut between its sentences. A single instance of several sentences is cut at a
sentence boundary; one sentence is cut at a word boundary; code (``unit="line"``: HumanEval's functions) at a line
boundary, blank lines not counted as units. The cut point is uniform in [40%, 70%] of the units,
drawn per instance from a generator seeded by (run seed, instance id), so cuts differ between instances but
are the same in every run with that seed. (The official code reseeds per call and cuts every instance at the
same fraction.) The text between the pieces is kept, so ``first + separator + second == original`` exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from detect.datasets import Example
from detect.errors import InputError

# A sentence ends at . ! or ? (with closing quotes or brackets) followed by white space and a capital,
# digit or opening quote. Common abbreviations do not end a sentence.
_SENTENCE_END = re.compile(r"""[.!?]+["'\u201d\u2019)\]]*(?=\s+["'\u201c\u2018(\[]?[A-Z0-9])""")
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "prof", "inc", "co", "ltd", "no", "gen", "u.s"}
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Cut:
    first: str
    separator: str
    second: str
    unit: str  # "pair", "sentence", "line" or "word"
    n_units: int
    units_in_first: int
    fraction: float | None  # the uniform draw in [low, high]; None for pairs

    @property
    def original(self) -> str:
        return self.first + self.separator + self.second

    @property
    def mid_sentence(self) -> bool:
        """Cut inside a sentence: semantic scores then compare first piece + completion to the whole."""
        return self.unit == "word"


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, white space between sentences left out."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        words_before = text[start : match.start()].split()
        if words_before and words_before[-1].lower().rstrip(".") in _ABBREVIATIONS:
            continue
        spans.append((start, match.end()))
        start = match.end() + len(text[match.end() :]) - len(text[match.end() :].lstrip())
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def _cut_at(text: str, spans: list[tuple[int, int]], units_in_first: int) -> tuple[str, str, str]:
    end_of_first = spans[units_in_first - 1][1]
    start_of_second = spans[units_in_first][0]
    return text[:end_of_first], text[end_of_first:start_of_second], text[start_of_second:]


def cut_unit(task: str) -> str:
    """How a dataset's instances are cut: at lines for code (``detect.datasets.LINE_TASKS``), else at sentences."""
    from detect.datasets import LINE_TASKS

    return "line" if task in LINE_TASKS else "sentence"


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-blank line, its newline left out: a cut keeps the line breaks between the pieces."""
    return [match.span() for match in re.finditer(r"[^\n]*\S[^\n]*", text)]


def split_instance(example: Example, *, seed: int, low: float = 0.4, high: float = 0.7,
                   unit: str = "sentence") -> Cut:
    """Cut one instance; the same (seed, instance id) always gives the same cut. ``unit``: "sentence" (falling back
    to words for one sentence) or "line" (code)."""
    if example.text_pair is not None:
        return Cut(example.text, "\n", example.text_pair, "pair", 2, 1, None)
    text = example.text
    spans = line_spans(text) if unit == "line" else sentence_spans(text)
    if len(spans) < 2:
        spans, unit = [m.span() for m in _WORD.finditer(text)], "word"
    if len(spans) < 2:
        raise InputError(
            f"instance {example.instance_id} has fewer than two words and cannot be cut into two pieces; "
            f"drop it from the dataset file"
        )
    fraction = float(np.random.default_rng([seed, example.instance_id]).uniform(low, high))
    units_in_first = min(max(round(fraction * len(spans)), 1), len(spans) - 1)
    first, separator, second = _cut_at(text, spans, units_in_first)
    cut = Cut(first, separator, second, unit, len(spans), units_in_first, fraction)
    assert cut.original == text, f"cut of instance {example.instance_id} does not rebuild it"
    return cut
