"""The sharded likelihood comparison test (Oren et al. 2023, "Proving test set contamination in black-box
language models"), over any model that gives token log-probabilities (``ShardedLikelihood``, a partition-level
detector: the first ``max_instances`` of the pool in dataset order; verdict p <= alpha, statistic 1 - p).

    row = sharded_likelihood_test(model, texts_in_dataset_order, n_shards=10, n_permutations=20)   # a LanguageModel
    orders = shard_orders(len(texts), n_shards=10, n_permutations=20, seed=0)   # what it will score

A model that saw a benchmark as one file saw its instances in the file's order; if the instances are
exchangeable (their order carries no meaning), a clean model gives the canonical order no more likelihood
than a shuffled one. The instances, in canonical order, are cut into ``n_shards`` contiguous shards; in each
shard the log-likelihood of the instances joined in canonical order is compared with the mean over
``n_permutations`` random orders; a one-sided t-test of those per-shard differences against zero is the
p-value (Oren et al.'s sharded test, whose statistic is the mean difference).

What it can and cannot see: it detects memorised *order*. The lab trains each member as its own document in a
shuffled order, so by construction it has nothing to find in a lab contamination; its flag rate on the lab's
positives measures that, and on negatives its false-positive rate (alpha when the test is calibrated).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, verdict
from detect.errors import InputError
from detect.validate import FRACTION, Range

MIN_INSTANCES = 4  # 2 shards of 2: the fewest with a t-test and a shuffle that changes anything


def shards_of(n_items: int, n_shards: int) -> list[np.ndarray]:
    """Contiguous, near-equal shards of positions 0..n_items-1 (numpy.array_split); fewer shards than asked
    when there are not 2 instances for each."""
    if n_shards < 2 or n_items < MIN_INSTANCES:
        raise InputError(f"the sharded likelihood test needs at least 2 shards of 2 instances: {n_items} instances "
                         f"in {n_shards} shards; set detect.detectors.sharded_likelihood.n_shards >= 2 and give "
                         f"at least {MIN_INSTANCES}")
    return np.array_split(np.arange(n_items), min(n_shards, n_items // 2))


def shard_orders(n_texts: int, *, n_shards: int = 10, n_permutations: int = 20,
                 seed: int = 0) -> list[tuple[int, bool, list[int]]]:
    """Per shard, its canonical order and then ``n_permutations`` shuffles, as (shard, canonical, positions): the
    sequences the test scores. Drawn from ``seed`` alone, so a cell can ask for their statistics before the test."""
    if n_permutations < 1:
        raise InputError(f"detect.detectors.sharded_likelihood.n_permutations={n_permutations}: give at least 1 "
                         f"shuffled order per shard")
    rng = np.random.default_rng(seed)
    orders = []
    for shard, positions in enumerate(shards_of(n_texts, n_shards)):
        orders.append((shard, True, positions.tolist()))
        orders += [(shard, False, rng.permutation(positions).tolist()) for _ in range(n_permutations)]
    return orders


def ordered_sequences(texts: Sequence[str], orders: Sequence[tuple[int, bool, list[int]]],
                      separator: str = "\n\n") -> list[str]:
    """The texts joined in each order of ``shard_orders``."""
    return [separator.join(texts[p] for p in positions) for _, _, positions in orders]


def sharded_likelihood_test(model, texts: Sequence[str], *, n_shards: int = 10, n_permutations: int = 20,
                            alpha: float = 0.05, seed: int = 0, separator: str = "\n\n") -> dict:
    """The test on ``texts`` (instances in the dataset's canonical order) under ``model`` (a ``LanguageModel``,
    whose memo serves what a cell has already computed): p-value, statistic, per-shard numbers."""
    from scipy.stats import ttest_1samp

    orders = shard_orders(len(texts), n_shards=n_shards, n_permutations=n_permutations, seed=seed)
    sequences = ordered_sequences(texts, orders, separator)
    log_likelihoods = [float(np.sum(s["logp"])) for s in model.token_logprobs(sequences)]
    n_shards = orders[-1][0] + 1
    canonical = np.zeros(n_shards)
    shuffled = [[] for _ in range(n_shards)]
    for (shard, is_canonical, _), value in zip(orders, log_likelihoods):
        if is_canonical:
            canonical[shard] = value
        else:
            shuffled[shard].append(value)
    differences = canonical - np.array([np.mean(values) for values in shuffled])
    if np.allclose(differences, differences[0]):  # no spread (a constant model): the t-test is undefined
        p_value = 0.5 if differences[0] == 0 else float(differences[0] < 0)
    else:
        p_value = float(ttest_1samp(differences, 0.0, alternative="greater").pvalue)
    return {"level": "partition", "detector": "sharded_likelihood", "n_instances": len(texts), "n_shards": n_shards,
            "n_permutations": n_permutations, "statistic": float(differences.mean()), "p_value": p_value,
            "alpha": alpha, "significant": p_value <= alpha, "shard_differences": differences.tolist(),
            "canonical_log_likelihood": canonical.tolist()}


class ShardedLikelihood(Detector):
    name, level, needs = "sharded_likelihood", "partition", ("logits", "pool")
    describes = {"sharded_likelihood": "logits"}
    summary_fields = ("p_value", "statistic", "significant", "n_instances", "n_shards", "n_permutations")
    verdict_labels = {"sharded_likelihood": "sharded likelihood test, p <= alpha, pool in dataset order"}

    ranges = {"max_instances": Range(MIN_INSTANCES, hint="2 shards of 2 at least"), "n_shards": Range(2),
              "n_permutations": Range(1, hint="shuffled orders per shard"), "alpha": FRACTION}

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
        return sharded_likelihood_test(evidence.model, [example.full_text for example in self.ordered(evidence)],
                                       n_shards=self.n_shards, n_permutations=self.n_permutations, alpha=self.alpha,
                                       seed=evidence.seed)

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
