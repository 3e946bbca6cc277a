"""Data-side decontamination: which benchmark instances would a model builder's filter have found in a training stream?

    from detect.decontam import build_detectors, scan
    detectors = build_detectors(cfg.decontam.detectors, tokenizer=tokenizer, seed=0)   # conf/decontam/default.yaml
    findings = scan(detectors, {"0": "def f(x): ...", ...}, documents)                  # one pass over the stream

The published filters, each a named config: GPT-3's 13-grams (lm-eval-harness's Janitor), Llama 3's 8-gram token
coverage, GPT-4's three 50-character substrings, ConTAM's longest match (8-grams of tokens), and a fuzzy match by
sentence embeddings for what no n-gram sees. ``python -m detect.decontam`` runs them on a user's corpus;
a planted run (contaminate/decontam.py) scores them against where the lab put every copy.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping, Sequence

from detect.decontam.base import Batch, Decontaminator, Findings, Key
from detect.decontam.embedding import EmbeddingMatch
from detect.decontam.ngram import NgramMatch
from detect.decontam.substring import SubstringMatch
from detect.errors import InputError

__all__ = ["Batch", "Decontaminator", "EmbeddingMatch", "Findings", "NgramMatch", "SubstringMatch",
           "build_detectors", "scan"]


def build_detectors(detectors_cfg, *, tokenizer=None, seed: int = 0) -> list[Decontaminator]:
    """Each enabled entry of ``decontam.detectors`` built by its ``_target_``, named by its key; a token detector
    gets ``tokenizer`` (the model's), a sampling one ``seed``."""
    import inspect

    from hydra.utils import get_class

    built = []
    for name, node in (detectors_cfg or {}).items():
        if node is None or not node.get("enabled", True):
            continue
        settings = {key: value for key, value in node.items() if key not in ("_target_", "enabled")}
        target = get_class(node["_target_"])
        accepts = inspect.signature(target).parameters
        if "tokenizer" in accepts and settings.get("unit", "words") == "tokens":
            settings["tokenizer"] = tokenizer
        if "seed" in accepts:
            settings.setdefault("seed", seed)
        built.append(target(str(name), **settings))
    return built


def scan(detectors: Sequence[Decontaminator], benchmark: Mapping[Key, str], documents: Iterable[str], *,
         batch_size: int = 64, skip_unfit: bool = False) -> dict[str, dict]:
    """Every detector fitted on ``benchmark``, then the stream read once, in batches of ``batch_size`` documents,
    each batch given to every detector. Returns, per detector, its findings and its seconds (index and scan).

    A detector that cannot read the benchmark at all (n longer than every instance) raises its one-line error; with
    ``skip_unfit`` (a planted run, where the side check must not stop the study) it is left out of the scan and its
    entry is ``{"skipped": <that error>}`` instead: no reading, never a clean one."""
    started, skipped = {}, {}
    for detector in list(detectors):
        clock = time.perf_counter()
        try:
            detector.fit(benchmark)
        except InputError as error:
            if not skip_unfit:
                raise
            skipped[detector.name] = {"skipped": str(error)}
            continue
        started[detector.name] = {"index_s": time.perf_counter() - clock, "scan_s": 0.0}
    detectors = [detector for detector in detectors if detector.name not in skipped]
    pending, start = [], 0

    def flush() -> None:
        nonlocal start
        batch = Batch(start, pending)
        for detector in detectors:
            clock = time.perf_counter()
            detector.update(batch)
            started[detector.name]["scan_s"] += time.perf_counter() - clock
        start += len(pending)
        pending.clear()

    for text in documents:
        pending.append(text)
        if len(pending) >= batch_size:
            flush()
    if pending:
        flush()
    return {**{detector.name: {"findings": detector.findings(),
                               "seconds": {key: round(value, 3) for key, value in started[detector.name].items()}}
               for detector in detectors}, **skipped}
