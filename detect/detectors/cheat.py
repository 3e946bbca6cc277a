"""ChatGPT-Cheat? (Sainz et al. 2023, ``detect/cheat.py``) as a partition-level detector: one prompt per model and
split; replicas searched among the pool. Verdicts: strict (a replica) and lenient (a replica or the dataset's
format); partition statistic: the best replica ROUGE-L."""

from __future__ import annotations

from detect.cheat import PROMPT, cheat_partition
from detect.detectors.base import Detector, Evidence, verdict


class ChatGPTCheat(Detector):
    name, level, needs = "cheat", "partition", ("generations", "pool")
    describes = {"cheat": "generations"}
    summary_fields = ("verdict", "strict", "lenient", "exact", "near_exact", "best_score", "format_signals",
                      "n_references")
    verdict_labels = {"cheat_strict": "ChatGPT-Cheat?, strict (replicas only), whole pool",
                      "cheat_lenient": "ChatGPT-Cheat?, lenient (replicas or format), whole pool"}

    def __init__(self, prompt: str = PROMPT, exact_threshold: float = 0.95, near_exact_threshold: float = 0.75):
        self.prompt, self.exact_threshold, self.near_exact_threshold = prompt, exact_threshold, near_exact_threshold

    def run(self, evidence: Evidence) -> dict | None:
        return cheat_partition(evidence.generate, dataset=evidence.dataset, split=evidence.split,
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
