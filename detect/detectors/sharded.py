"""Oren et al. 2023's sharded likelihood test (``detect/sharded.py``) as a partition-level detector: the first
``max_instances`` of the pool in dataset order, canonical against shuffled orders per shard. Verdict: p <= alpha;
partition statistic: 1 - p."""

from __future__ import annotations

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, verdict
from detect.sharded import MIN_INSTANCES, ordered_sequences, shard_orders, sharded_likelihood_test


class ShardedLikelihood(Detector):
    name, level, needs = "sharded_likelihood", "partition", ("logits", "pool")
    describes = {"sharded_likelihood": "logits"}
    summary_fields = ("p_value", "statistic", "significant", "n_instances", "n_shards", "n_permutations")
    verdict_labels = {"sharded_likelihood": "sharded likelihood test, p <= alpha, pool in dataset order"}

    def __init__(self, max_instances: int = 40, n_shards: int = 10, n_permutations: int = 5, alpha: float = 0.05):
        self.max_instances, self.n_shards, self.n_permutations, self.alpha = (max_instances, n_shards,
                                                                              n_permutations, alpha)

    def ordered(self, evidence: Evidence) -> list[Example]:
        """The instances it reads: the first ``max_instances`` of the pool in dataset order."""
        return sorted(evidence.pool, key=lambda example: example.instance_id)[: self.max_instances]

    def runnable(self, evidence: Evidence) -> bool:
        return super().runnable(evidence) and len(self.ordered(evidence)) >= MIN_INSTANCES

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        ordered = self.ordered(evidence)
        orders = shard_orders(len(ordered), n_shards=self.n_shards, n_permutations=self.n_permutations,
                              seed=evidence.seed)
        return [(ordered_sequences([example.full_text for example in ordered], orders), False)]

    def run(self, evidence: Evidence) -> dict | None:
        statistics = evidence.statistics
        return sharded_likelihood_test(statistics.model, statistics.tokenizer,
                                       [example.full_text for example in self.ordered(evidence)],
                                       n_shards=self.n_shards, n_permutations=self.n_permutations, alpha=self.alpha,
                                       seed=evidence.seed, statistics=statistics)

    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {"sharded_likelihood": block["significant"]}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {"sharded_likelihood": 1 - block["p_value"]}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        return [("sharded likelihood (p)",
                 f"{verdict(block['significant'], correct['sharded_likelihood'])} ({block['p_value']:.3f})")]

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        return ["## Sharded likelihood test (canonical vs shuffled order)", "",
                f"{block['n_instances']} instances in {block['n_shards']} shards, {block['n_permutations']} shuffles "
                f"each: mean log-likelihood gain of the canonical order {block['statistic']:.3f}, p = "
                f"{block['p_value']:.4f} -> **{'contaminated' if block['significant'] else 'not contaminated'}**.", ""]
