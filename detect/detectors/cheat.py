"""ChatGPT-Cheat? (Sainz et al. 2023), the paper's baseline: ask the model for the first instances of a split.

    row = cheat_partition(model, dataset=cfg, split="test", references=examples)   # model: a LanguageModel

One prompt per (model, split) names only the dataset and the split; as a partition-level detector
(``ChatGPTCheat``) the replicas are searched among the pool. What comes back is read in three ways
(Golchin & Surdeanu's Table 3 reads them strictly or leniently):

- **contaminated**: it holds a replica of a real instance. Each line of the output (a leading ``name:`` field
  header stripped) is compared with every piece of every reference instance (the text; for pairs sentence 1,
  sentence 2 and both joined) by ROUGE-L; a best match at or above the exact threshold is an exact replica,
  at or above the near-exact threshold a near-exact one. One replica suffices.
- **suspicious**: no replica, but the dataset's format: one of its label strings as the dataset writes them
  ("1 (not entailment)") or a field name that is an identifier, not a word (``sentence1``, ``question_id``).
- **clean**: neither. Strict reading: only "contaminated" flags the partition; lenient: "suspicious" too.

``best_score`` (the highest ROUGE-L between an output line and a reference piece) is kept as a continuous
statistic for ROC curves. ROUGE-L F1 never exceeds the unigram F1 of the same pair, so pairs whose unigram F1
is below both the best found so far and the near-exact threshold are skipped without losing any count: a
full split of a real dataset (100k instances) is searched in seconds.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, verdict
from detect.detectors.time_travel.follow import classify
from detect.detectors.time_travel.scores import lcs_length as _lcs
from detect.validate import Range

PROMPT = "Please, generate the first instances of the {dataset_name} dataset {split_name} split.\n"
VERDICTS = ("clean", "suspicious", "contaminated")
EXACT, NEAR_EXACT = 0.95, 0.75  # ROUGE-L of a line against a reference instance: exact / near-exact replica
_HEADER = re.compile(r"^\s*[\w .()-]{1,40}:\s+")
_IDENTIFIER = re.compile(r"^(?=.*[\d_])[A-Za-z][\w]*$")  # sentence1, question_id: not an English word


def _f1(overlap: int, n_reference: int, n_candidate: int) -> float:
    return 0.0 if overlap == 0 else 2 * overlap / (n_reference + n_candidate)


def reference_pieces(example: Example) -> list[str]:
    """What a replica of this instance may look like on one line: the text, or either sentence or both."""
    if example.text_pair is None:
        return [example.text]
    return [example.text, example.text_pair, f"{example.text} {example.text_pair}"]


def output_lines(text: str) -> list[str]:
    """The output's non-empty lines, a leading field header ("sentence2: ", "Text: ") removed."""
    return [_HEADER.sub("", line, count=1).strip() for line in text.splitlines() if line.strip()]


def match_replicas(output: str, references: Sequence[Example], *, exact_threshold: float = EXACT,
                   near_exact_threshold: float = NEAR_EXACT) -> dict:
    """Per reference instance, its best ROUGE-L against an output line, and the replicas among them."""
    from rouge_score import tokenize

    lines = [(line, tokenize.tokenize(line, None)) for line in output_lines(output)]
    lines = [(line, tokens, Counter(tokens)) for line, tokens in lines if tokens]
    best = {"score": 0.0, "instance_id": None, "line": None, "piece": None}
    replicas = []
    for example in references:
        instance_best = 0.0
        for piece in reference_pieces(example):
            piece_tokens = tokenize.tokenize(piece, None)
            if not piece_tokens:
                continue
            piece_counts = Counter(piece_tokens)
            for line, tokens, counts in lines:
                bound = _f1(sum((piece_counts & counts).values()), len(piece_tokens), len(tokens))
                if bound < near_exact_threshold and bound <= best["score"]:
                    continue  # ROUGE-L <= unigram F1: this pair can neither replicate nor beat the best
                score = _f1(_lcs(piece_tokens, tokens), len(piece_tokens), len(tokens))
                instance_best = max(instance_best, score)
                if score > best["score"]:
                    best = {"score": score, "instance_id": example.instance_id, "line": line, "piece": piece}
        if instance_best >= near_exact_threshold:
            kind = "exact" if instance_best >= exact_threshold else "near_exact"
            replicas.append({"instance_id": example.instance_id, "score": instance_best, "label": kind})
    return {"best": best, "replicas": replicas}


def format_signals(output: str, dataset, references: Sequence[Example]) -> list[str]:
    """The dataset's own label strings and identifier-like field names that the output reproduces."""
    signals = sorted({e.label for e in references if e.label and e.label in output})
    fields = [value for value in dict(dataset.fields).values() if value and _IDENTIFIER.match(str(value))]
    signals += [field for field in fields if re.search(rf"\b{re.escape(field)}\b", output)]
    return signals


def cheat_verdict(replicas: Sequence[dict], signals: Sequence[str]) -> str:
    return "contaminated" if replicas else "suspicious" if signals else "clean"


def cheat_partition(model, *, dataset, split: str,
                    references: Sequence[Example], prompt: str = PROMPT, exact_threshold: float = EXACT,
                    near_exact_threshold: float = NEAR_EXACT) -> dict:
    """One partition-level row: the prompt, the model's output, the replicas of ``references`` it holds, the
    format signals, and the verdict with its strict and lenient readings."""
    text = prompt.format(dataset_name=dataset.title, split_name=split)
    output = model.generate([text])[0]
    found = match_replicas(output, references, exact_threshold=exact_threshold,
                           near_exact_threshold=near_exact_threshold)
    signals = format_signals(output, dataset, references)
    verdict = cheat_verdict(found["replicas"], signals)
    return {"level": "partition", "detector": "cheat", "dataset": dataset.key, "split": split, "prompt": text,
            "raw_completion": output, "answer_class": classify(output, prompt=text, title=dataset.title, split=split),
            "n_references": len(references), "replicas": found["replicas"],
            "exact": sum(r["label"] == "exact" for r in found["replicas"]),
            "near_exact": sum(r["label"] == "near_exact" for r in found["replicas"]),
            "best_score": found["best"]["score"], "best_match": found["best"], "format_signals": signals,
            "verdict": verdict, "strict": verdict == "contaminated", "lenient": verdict != "clean",
            "thresholds": {"exact": exact_threshold, "near_exact": near_exact_threshold}}


class ChatGPTCheat(Detector):
    name, level, needs = "cheat", "partition", ("generations", "pool")
    describes = {"cheat": "generations"}
    summary_fields = ("verdict", "strict", "lenient", "exact", "near_exact", "best_score", "format_signals",
                      "n_references")
    verdict_labels = {"cheat_strict": "ChatGPT-Cheat?, strict (replicas only), whole pool",
                      "cheat_lenient": "ChatGPT-Cheat?, lenient (replicas or format), whole pool"}

    ranges = {"exact_threshold": Range(0, 1, "(]", hint="a ROUGE-L F1"),
              "near_exact_threshold": Range(0, 1, "(]", hint="a ROUGE-L F1")}

    def __init__(self, prompt: str = PROMPT, exact_threshold: float = EXACT, near_exact_threshold: float = NEAR_EXACT):
        self.prompt, self.exact_threshold, self.near_exact_threshold = prompt, exact_threshold, near_exact_threshold

    def run(self, evidence: Evidence) -> dict | None:
        return cheat_partition(evidence.model, dataset=evidence.dataset, split=evidence.split,
                               references=evidence.pool, prompt=self.prompt, exact_threshold=self.exact_threshold,
                               near_exact_threshold=self.near_exact_threshold)

    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {"cheat_strict": block["strict"], "cheat_lenient": block["lenient"]}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {"cheat": block["best_score"]}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        return [("Cheat? strict / lenient (replicas, best ROUGE-L)",
                 f"{verdict(block['strict'], correct['cheat_strict'])} / "
                 f"{verdict(block['lenient'], correct['cheat_lenient'])} "
                 f"({block['exact'] + block['near_exact']}, {block['best_score']:.2f})")]

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        signals = ", ".join(f"`{s}`" for s in block["format_signals"]) or "none"
        return ["## ChatGPT-Cheat? (asked for the split's first instances)", "",
                f"**{block['verdict']}**: {block['exact']} exact and {block['near_exact']} near-exact replicas of "
                f"{block['n_references']} reference instances (best ROUGE-L {block['best_score']:.2f}); format "
                f"signals: {signals}. Strict reading: {'contaminated' if block['strict'] else 'clean'}; lenient: "
                f"{'contaminated' if block['lenient'] else 'clean'}.", ""]
