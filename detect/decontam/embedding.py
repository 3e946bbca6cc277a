"""Fuzzy match by sentence embeddings: what an n-gram filter cannot see (a paraphrase, a translation of the wording).

    EmbeddingMatch("embedding", model="packaged-minilm", threshold=0.8)

Each benchmark instance is embedded once (the lab's semantic model, all-MiniLM-L6-v2 from PyPI, the one Time
Travel's semantic score uses); each stream document is cut into windows of whitespace words, each window embedded,
and every instance keeps its highest cosine similarity over the stream. The score is that maximum; the rule flags it
at ``threshold``, and the documents whose windows reached the threshold are the ones it matched.

Where we chose (no published setting fixes these; embedding screens such as Yang et al. 2023's LLM decontaminator
retrieve top-k neighbours for a judge instead of thresholding): windows come in a ladder of lengths (16, 32, 64, 128
and 200 whitespace words: MiniLM reads 256 word pieces), each stepped by half its length, and each instance is read
against the windows of the size nearest its own length, so an instance embedded in a longer document meets a window
about its own size (one median window for a benchmark of 30-word pairs and 150-word functions missed verbatim
functions); the threshold is 0.8 in conf/decontam/default.yaml, and the report gives the score's AUC beside the rule's
recall.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import defaultdict
from typing import Mapping

from detect.decontam.base import Batch, Decontaminator, Findings, Key
from detect.detectors.time_travel.scores import SemanticScorer
from detect.errors import InputError

_EMBEDDED: dict = {}  # (model, digest of the benchmark's texts) -> their embeddings: the last benchmark embedded
# Window lengths in whitespace words: an instance is read against windows of the size nearest its own length (MiniLM
# reads 256 word pieces, about 200 words), so a 30-word sentence pair and a 150-word function each meet windows of
# about their own size
LADDER = (16, 32, 64, 128, 200)
MEMO_DOCUMENTS = 1_000_000  # distinct documents remembered (20-byte digests: ~100 MB at most), then forgotten


def _digest(text: str) -> bytes:
    return hashlib.sha1(text.encode()).digest()


@functools.lru_cache(maxsize=2)
def _scorer(model: str):
    """The sentence encoder, loaded once a process (a multirun's draws share it)."""
    return SemanticScorer(model)


def windows(text: str, size: int) -> list[str]:
    """``text``'s whitespace words in windows of ``size``, stepped by half of it (the whole text when shorter; a last
    window ending at the last word)."""
    words = text.split()
    if len(words) <= size:
        return [" ".join(words)] if words else []
    step = max(size // 2, 1)
    starts = list(range(0, len(words) - size + 1, step))
    if starts[-1] != len(words) - size:
        starts.append(len(words) - size)
    return [" ".join(words[start:start + size]) for start in starts]


class EmbeddingMatch(Decontaminator):
    """Each instance's highest cosine similarity to a window of the stream, flagged at ``threshold``. ``encoder``:
    a callable texts -> unit-norm embeddings (a ``torch`` tensor); by default the lab's ``SemanticScorer``'s."""

    def __init__(self, name: str, *, model: str = "packaged-minilm", threshold: float = 0.8, batch_size: int = 64,
                 encoder=None) -> None:
        if not -1 <= threshold <= 1:
            raise InputError(f"decontam {name}: threshold={threshold}; give a cosine similarity in [-1, 1]")
        self.name, self.model, self.threshold, self.batch_size = name, model, float(threshold), batch_size
        self._encoder, self._own_encoder = encoder, encoder is None
        self.rule = f"cosine similarity of a stream window to the instance >= {threshold:g} ({model})"

    def describe(self) -> dict:
        return {"name": self.name, "kind": "embedding", "model": self.model, "threshold": self.threshold,
                "window_words": getattr(self, "window", None)}

    def encode(self, texts):
        if self._encoder is None:
            scorer = _scorer(self.model)
            self._encoder = lambda texts: scorer.encoder.encode(
                list(texts), batch_size=self.batch_size, convert_to_tensor=True, normalize_embeddings=True,
                show_progress_bar=False)
        return self._encoder(texts)

    def fit(self, benchmark: Mapping[Key, str]) -> None:
        import torch

        self.keys = [key for key, text in benchmark.items() if text.split()]
        self.unreadable = {key for key, text in benchmark.items() if not text.split()}
        lengths = [len(benchmark[key].split()) for key in self.keys]
        # each instance read against windows of the ladder size nearest its own length (log scale)
        self.scale_of = [min(LADDER, key=lambda size: abs(math.log(size / max(length, 1)))) for length in lengths]
        self.window = sorted(set(self.scale_of))
        texts = [benchmark[key] for key in self.keys]
        # the same benchmark in the same process (a multirun's draws): embedded once
        memo = (self.model, hashlib.sha1("\0".join(texts).encode()).hexdigest()) if self._own_encoder else None
        if memo is not None and memo in _EMBEDDED:
            self.instances = _EMBEDDED[memo]
        else:
            self.instances = self.encode(texts) if texts else torch.zeros(0, 1)
            if memo is not None:
                _EMBEDDED.clear()  # one benchmark kept: memory stays linear in it
                _EMBEDDED[memo] = self.instances
        self.best = torch.full((len(self.keys),), -1.0)
        self.documents: dict[Key, set[int]] = defaultdict(set)
        self.matched: dict[bytes, frozenset] = {}  # digest of a document read -> the instances its windows matched
        self.documents_read = self.units_read = 0

    def update(self, batch: Batch) -> None:
        import torch

        self.units_read += sum(len(text.split()) for text in batch.texts)
        self.documents_read += len(batch.texts)
        # A document repeated in the stream (a leak copied 4 times, a page crawled twice) has the same windows: each
        # distinct text is embedded once, its repeats take what it matched (a decontam_cpu stream: 893 documents, 824
        # of them 4 copies of 206)
        where: dict[str, list[int]] = defaultdict(list)
        for offset, text in enumerate(batch.texts):
            where[text].append(batch.start + offset)
        digests = {text: _digest(text) for text in where}
        matched: dict[str, set[Key]] = {text: set(self.matched[digest]) for text, digest in digests.items()
                                        if digest in self.matched}
        fresh = [text for text in where if text not in matched]
        matched.update({text: set() for text in fresh})
        for size in self.window:  # each ladder size: its windows against the instances read at that size
            columns = torch.tensor([i for i, scale in enumerate(self.scale_of) if scale == size])
            pieces, owner = [], []
            for text in fresh:
                for window in windows(text, size):
                    pieces.append(window)
                    owner.append(text)
            if not pieces:
                continue
            similarity = self.encode(pieces).float() @ self.instances[columns].float().T  # windows x instances
            self.best[columns] = torch.maximum(self.best[columns], similarity.max(dim=0).values.cpu())
            for window, column in (similarity >= self.threshold).nonzero().tolist():
                matched[owner[window]].add(self.keys[int(columns[column])])
        if len(self.matched) > MEMO_DOCUMENTS:  # memory stays bounded on a stream of any size
            self.matched.clear()
        for text in fresh:
            self.matched[digests[text]] = frozenset(matched[text])
        for text, documents in where.items():
            for key in matched[text]:
                self.documents[key].update(documents)

    def findings(self) -> Findings:
        best = dict(zip(self.keys, self.best.tolist()))
        scores = {key: round(value, 6) for key, value in best.items()}
        flagged = {key for key, value in best.items() if value >= self.threshold}
        return Findings(self.name, self.rule, scores, flagged, dict(self.documents), set(self.unreadable),
                        self.documents_read, self.units_read)
