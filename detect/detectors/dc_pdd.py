"""DC-PDD (Zhang et al., EMNLP 2024, "Pretraining Data Detection for Large Language Models: A Divergence-based
Calibration Method"): the model's token probabilities calibrated by how common each token is in a reference corpus.

For the tokens of a text (each token's probability p_i given its prefix; the first token has no context), keep
the first occurrence of each distinct token, and with f(t) the token's frequency in the reference corpus
(Laplace-smoothed over the vocabulary: (count + 1) / (total + |V|)),

    alpha_i = min(p_i * log(1 / f(x_i)), a)          DC-PDD(x) = mean_i alpha_i

A member's rare tokens are predicted with high probability: large alpha. Higher = more likely a member (the
official code returns the negative, "larger for non-members"). ``a`` caps one token's say; the paper's code
defaults to 0.01.

The reference corpus: the paper counts tokens in a large public corpus (C4). Offline, the default
``corpus: stdlib_docstrings`` counts the standard library's docstrings (``detect/datasets/corpus.py``: 1.2M
characters, about 312k SmolLM2 tokens), which share no paragraph with ``pydoc`` (Python's documentation topics, the
offline background members are diluted in): a corpus that holds the dilution text would count the training stream's
own tokens as common. A study refuses a DC-PDD corpus that is its background. ``pydoc``, or a path to a .txt / .jsonl
file or a folder of them, counts that instead. Its token counts are computed once per tokenizer and kept. Unlike
the official code, which counts each corpus document's first 1,024 tokens only, every token is counted.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from typing import Sequence

from detect.cache import stored
from detect.datasets import Example
from detect.datasets.corpus import read_corpus
from detect.detectors.base import Detector, Evidence
from detect.validate import Range


def corpus_texts(corpus: str) -> list[str]:
    """The reference corpus's documents (``detect/datasets/corpus.py``): ``pydoc``, a file or a folder."""
    return read_corpus(corpus, key="detect.detectors.dc_pdd.corpus")


def token_frequencies(counts: Counter, vocabulary_size: int) -> tuple[dict[int, float], float]:
    """Laplace-smoothed frequencies of the counted tokens, and the frequency of a token never counted."""
    total = sum(counts.values()) + vocabulary_size
    return {token: (count + 1) / total for token, count in counts.items()}, 1 / total


def dc_pdd_score(token_ids: Sequence[int], logp: Sequence[float], frequencies: dict[int, float], unseen: float,
                 *, a: float = 0.01) -> float:
    """DC-PDD of one text from its scored tokens' ids and log-probabilities (see the module docstring)."""
    seen, alphas = set(), []
    for token, value in zip(token_ids, logp):
        if token in seen:
            continue
        seen.add(token)
        alphas.append(min(math.exp(value) * -math.log(frequencies.get(token, unseen)), a))
    return sum(alphas) / len(alphas) if alphas else 0.0


class DCPDD(Detector):
    name, level, needs = "dc_pdd", "instance", ("logits", "token_ids")
    scores = ("dc_pdd",)
    describes = {"dc_pdd": "logits + token frequencies"}
    reading = "leak's rendering: oracle"  # it reads the membership scores' texts, as the leak rendered them

    ranges = {"a": Range(0, None, "()", hint="the cap on one token's score; the paper's code: 0.01")}

    def __init__(self, corpus: str = "stdlib_docstrings", a: float = 0.01) -> None:
        self.corpus, self.a = corpus, a
        self._frequencies: dict[str, tuple[dict[int, float], float]] = {}

    def frequencies(self, tokenizer) -> tuple[dict[int, float], float]:
        # keyed by what tokenizes (a fast tokenizer's whole definition: vocabulary, merges, normalizer, special
        # tokens; else the vocabulary), not by its folder: a study's contaminated checkpoint saves the base model's
        # tokenizer, whose corpus counts (~6 s on 2 cores) then serve both models
        backend = getattr(tokenizer, "backend_tokenizer", None)
        definition = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
        key = hashlib.sha1(f"{type(tokenizer).__name__}\n{definition}".encode()).hexdigest()
        if key not in self._frequencies:
            def count() -> list[list[int]]:  # ~6 s of tokenizing: kept per corpus and vocabulary (detect/cache.py)
                counts = Counter(token for ids in tokenizer(corpus_texts(self.corpus)).input_ids for token in ids)
                return sorted(counts.items())

            counts = stored("token_counts", {"corpus": self.data_key(), "vocabulary": key}, count)
            self._frequencies[key] = token_frequencies(Counter(dict(map(tuple, counts))), len(tokenizer))
        return self._frequencies[key]

    def data_key(self) -> str:
        """The corpus's content: an edited corpus file, or another Python's documentation, is new data."""
        from detect.models import digest

        return digest(corpus_texts(self.corpus))

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        return [([context + text for context, text in evidence.renderings()], False)]

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        """Each instance as its leak rendered it (the tokens of its text, given its context)."""
        frequencies, unseen = self.frequencies(evidence.model.tokenizer)
        return [{"dc_pdd": dc_pdd_score(stats["ids"], stats["logp"], frequencies, unseen, a=self.a)}
                for stats in evidence.model.continuation_logprobs(evidence.renderings(examples))]
