"""Oren et al.'s tests of a memorised order ("Proving test set contamination in black-box language models", ICLR
2024), over any model that gives token log-probabilities: two partition-level detectors on the first
``max_instances`` of the pool in dataset order, each read as the leak laid it out (``Evidence.sequence``: a dump's
header and JSON lines; for a format with one instance a document, their renderings joined by blank lines).

    sharded_test(log_likelihood, n_items=40, n_shards=10, n_permutations=5)     # the sharded test's row
    permutation_test(log_likelihood, n_items=20, n_permutations=25)              # the exact permutation test's row
    log_likelihood = sequence_log_likelihood(model, lambda order: render(order))  # orders -> summed log p

A model that saw a benchmark as one file saw its instances in the file's order; if the instances are exchangeable
(their order carries no meaning), a clean model gives the canonical order no more likelihood than a shuffled one.

- ``permutation`` (Oren et al.'s permutation test): the log-likelihood of the whole run in canonical order against
  ``n_permutations`` random permutations of it, p = (1 + #{permutation >= canonical}) / (n_permutations + 1),
  exact under exchangeability (ties count against the leak). The smallest p it can give is 1 / (n_permutations + 1):
  a 5% test needs n_permutations >= 19, and n instances have n! orders (4 instances: 24).
- ``sharded_likelihood`` (Oren et al.'s sharded test, for when a whole-file permutation is too costly): the
  instances cut into ``n_shards`` contiguous shards; per shard the canonical order's log-likelihood minus the mean
  over ``n_permutations`` shuffles; a one-sided t-test of those differences against zero. Oren et al.'s code
  divides the mean by the *population* standard deviation (ddof 0), which rejects more than alpha under the null
  (6.5% of simulated nulls at 5 shards, ``contaminate/analyses/order_tests_power.py``); the lab's t-test uses the sample
  standard deviation (5.0%). Their code tokenises each example and concatenates the ids; the lab renders the run as text
  (the leak's own layout) and scores it once.

What they can see: an order. A leak with one instance a document in shuffled order (every format but dump) has
none, so both tests are skipped there with one line (``require_order: true``, the default: on a web copy of 20
instances the permutation test scored 26 orders, 60% of a tiny study's tokens, to find what cannot be there);
``require_order: false`` runs them anyway, to measure their false-positive rate on those regimes. On a dump, and
on plain text (``python -m detect``: the benchmark as published, in its canonical order), they run: their power.
Which sizes give a 5% test any power, on a simulated null and a simulated leak: ``docs/detectors.md`` (from
``contaminate/analyses/order_tests_power.py``).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from detect.datasets import Example
from detect.detectors.base import Evidence, PValueTest
from detect.errors import InputError
from detect.validate import FRACTION, Range

# orders (lists of positions into the run) -> the log-likelihood of each order's rendering
LogLikelihood = Callable[[list[list[int]]], list[float]]
MIN_SHARD = 3  # a shard of 2 has 2 orders: half its "shuffles" would be the canonical order itself


def shards_of(n_items: int, n_shards: int, min_shard: int = MIN_SHARD) -> list[np.ndarray]:
    """Contiguous, near-equal shards of positions 0..n_items-1 (numpy.array_split); fewer shards than asked
    when there are not ``min_shard`` instances for each."""
    if n_shards < 2 or n_items < 2 * min_shard:
        raise InputError(f"the sharded likelihood test needs at least 2 shards of {min_shard} instances: {n_items} "
                         f"instances in {n_shards} shards; set detect.detectors.sharded_likelihood.n_shards >= 2 "
                         f"and give at least {2 * min_shard} instances")
    return np.array_split(np.arange(n_items), min(n_shards, n_items // min_shard))


def shard_orders(n_texts: int, *, n_shards: int = 10, n_permutations: int = 5,
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


def sharded_test(log_likelihood: LogLikelihood, n_items: int, *, n_shards: int = 10, n_permutations: int = 5,
                 alpha: float = 0.05, seed: int = 0) -> dict:
    """The sharded test on a run of ``n_items`` instances: p-value, statistic (the mean canonical-minus-shuffled
    log-likelihood gain), per-shard numbers."""
    from scipy.stats import ttest_1samp

    orders = shard_orders(n_items, n_shards=n_shards, n_permutations=n_permutations, seed=seed)
    log_likelihoods = log_likelihood([positions for _, _, positions in orders])
    n_shards = orders[-1][0] + 1
    canonical = np.zeros(n_shards)
    shuffled: list[list[float]] = [[] for _ in range(n_shards)]
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
    return {"level": "partition", "detector": "sharded_likelihood", "n_instances": n_items, "n_shards": n_shards,
            "n_permutations": n_permutations, "statistic": float(differences.mean()), "p_value": p_value,
            "alpha": alpha, "significant": p_value <= alpha, "shard_differences": differences.tolist(),
            "canonical_log_likelihood": canonical.tolist()}


def check_permutations(n_items: int, n_permutations: int, alpha: float, where: str) -> None:
    """A permutation test that could never reach ``alpha`` is a config error: too few permutations, or too few
    instances to permute (n! orders in all)."""
    if (n_permutations + 1) * alpha < 1:
        raise InputError(f"{where}.n_permutations={n_permutations} cannot give p <= {alpha} (the smallest p is "
                         f"1/{n_permutations + 1}); give at least {math.ceil(1 / alpha) - 1}")
    if math.factorial(n_items) * alpha < 1:
        needed = next(n for n in range(2, 20) if math.factorial(n) * alpha >= 1)
        raise InputError(f"{where}: {n_items} instances have {math.factorial(n_items)} orders, too few for a test "
                         f"at {alpha}; give at least {needed} instances (max_instances, and a pool that large)")


def permutation_orders(n_items: int, *, n_permutations: int = 25, seed: int = 0) -> list[list[int]]:
    """The canonical order, then ``n_permutations`` uniform random permutations of all ``n_items`` positions."""
    rng = np.random.default_rng(seed)
    return [list(range(n_items))] + [rng.permutation(n_items).tolist() for _ in range(n_permutations)]


def permutation_test(log_likelihood: LogLikelihood, n_items: int, *, n_permutations: int = 25,
                     alpha: float = 0.05, seed: int = 0) -> dict:
    """Oren et al.'s permutation test on a run of ``n_items`` instances (see the module docstring)."""
    check_permutations(n_items, n_permutations, alpha, "detect.detectors.permutation")
    values = np.asarray(log_likelihood(permutation_orders(n_items, n_permutations=n_permutations, seed=seed)))
    canonical, permuted = values[0], values[1:]
    at_least = int(np.sum(permuted >= canonical))
    p_value = (1 + at_least) / (n_permutations + 1)
    return {"level": "partition", "detector": "permutation", "n_instances": n_items,
            "n_permutations": n_permutations, "statistic": float(canonical - permuted.mean()), "p_value": p_value,
            "alpha": alpha, "significant": p_value <= alpha, "permutations_at_least_canonical": at_least,
            "canonical_log_likelihood": float(canonical), "permuted_sd": float(permuted.std(ddof=1))}


def sequence_log_likelihood(model, render: Callable[[list[int]], str]) -> LogLikelihood:
    """``orders -> summed token log-probabilities`` of each order's rendering under ``model`` (a ``LanguageModel``,
    whose memo serves what a cell has prefetched)."""
    def log_likelihood(orders: list[list[int]]) -> list[float]:
        return [float(np.sum(stats["logp"])) for stats in model.token_logprobs([render(o) for o in orders])]

    return log_likelihood


def sharded_likelihood_test(model, texts: Sequence[str], *, n_shards: int = 10, n_permutations: int = 5,
                            alpha: float = 0.05, seed: int = 0, separator: str = "\n\n") -> dict:
    """The sharded test on plain ``texts`` in canonical order, joined by ``separator`` (``python -m detect``'s
    reading; a study's detector renders the run as its leak laid it out)."""
    render = lambda order: separator.join(texts[p] for p in order)  # noqa: E731
    return sharded_test(sequence_log_likelihood(model, render), len(texts), n_shards=n_shards,
                        n_permutations=n_permutations, alpha=alpha, seed=seed)


class _OrderTest(PValueTest):
    """What both order tests share: the run they read, how it is rendered and scored, and where an order exists."""
    needs = ("logits", "pool")
    require_order: bool = True

    def skipped(self, evidence: Evidence) -> str | None:
        if self.require_order and not getattr(evidence.reader, "lays_out_order", True):
            return (f"the leak's {evidence.reader.name} lays out one instance a document, no order to find "
                    f"(format=dump lays one out; detect.detectors.{self.name}.require_order=false runs it anyway)")
        return super().skipped(evidence)

    def ordered(self, evidence: Evidence) -> list[Example]:
        """The instances it reads: the first ``max_instances`` of the pool in dataset order."""
        return sorted(evidence.pool, key=lambda example: example.instance_id)[: self.max_instances]

    def render(self, evidence: Evidence) -> Callable[[list[int]], str]:
        ordered = self.ordered(evidence)
        return lambda order: evidence.sequence([ordered[p] for p in order])

    def orders(self, evidence: Evidence) -> list[list[int]]:
        raise NotImplementedError

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        render = self.render(evidence)
        return [([render(order) for order in self.orders(evidence)], False)]


class ShardedLikelihood(_OrderTest):
    name, column = "sharded_likelihood", "sharded likelihood"
    describes = {"sharded_likelihood": "logits"}
    summary_fields = ("p_value", "statistic", "significant", "n_instances", "n_shards", "n_permutations")
    verdict_labels = {"sharded_likelihood": "sharded likelihood test, p <= alpha, pool in dataset order"}

    ranges = {"max_instances": Range(2 * MIN_SHARD, hint=f"2 shards of {MIN_SHARD} at least"), "n_shards": Range(2),
              "n_permutations": Range(1, hint="shuffled orders per shard"), "alpha": FRACTION}

    def __init__(self, max_instances: int = 40, n_shards: int = 10, n_permutations: int = 5, alpha: float = 0.05,
                 require_order: bool = True):
        self.max_instances, self.n_shards, self.n_permutations, self.alpha = (max_instances, n_shards,
                                                                              n_permutations, alpha)
        self.require_order = require_order

    def skipped(self, evidence: Evidence) -> str | None:
        if len(self.ordered(evidence)) < 2 * MIN_SHARD:
            return (f"the pool has {len(self.ordered(evidence))} instances, fewer than the {2 * MIN_SHARD} of 2 "
                    f"shards of {MIN_SHARD}")
        return super().skipped(evidence)

    def orders(self, evidence: Evidence) -> list[list[int]]:
        return [positions for _, _, positions in shard_orders(len(self.ordered(evidence)), n_shards=self.n_shards,
                                                              n_permutations=self.n_permutations,
                                                              seed=evidence.seed)]

    def run(self, evidence: Evidence) -> dict | None:
        return sharded_test(sequence_log_likelihood(evidence.model, self.render(evidence)),
                            len(self.ordered(evidence)), n_shards=self.n_shards,
                            n_permutations=self.n_permutations, alpha=self.alpha, seed=evidence.seed)

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        return ["## Sharded likelihood test (canonical vs shuffled order)", "",
                f"{block['n_instances']} instances in {block['n_shards']} shards, {block['n_permutations']} shuffles "
                f"each: mean log-likelihood gain of the canonical order {block['statistic']:.3f}, p = "
                f"{block['p_value']:.4f} -> **{'contaminated' if block['significant'] else 'not contaminated'}**.", ""]


class PermutationTest(_OrderTest):
    name, column = "permutation", "permutation test"
    describes = {"permutation": "logits"}
    summary_fields = ("p_value", "statistic", "significant", "n_instances", "n_permutations", "permuted_sd")
    verdict_labels = {"permutation": "Oren et al.'s permutation test, p <= alpha, pool in dataset order"}

    # the fewest instances and permutations that can reach alpha depend on alpha: check_permutations says which
    ranges = {"max_instances": Range(2), "n_permutations": Range(1), "alpha": FRACTION}

    def __init__(self, max_instances: int = 20, n_permutations: int = 25, alpha: float = 0.05,
                 require_order: bool = True):
        check_permutations(max_instances, n_permutations, alpha, "detect.detectors.permutation")
        self.max_instances, self.n_permutations, self.alpha = max_instances, n_permutations, alpha
        self.require_order = require_order

    def skipped(self, evidence: Evidence) -> str | None:
        n = len(self.ordered(evidence))
        if math.factorial(n) * self.alpha < 1:
            return f"the pool has {n} instances ({math.factorial(n)} orders), too few for a test at {self.alpha}"
        return super().skipped(evidence)

    def orders(self, evidence: Evidence) -> list[list[int]]:
        return permutation_orders(len(self.ordered(evidence)), n_permutations=self.n_permutations,
                                  seed=evidence.seed)

    def run(self, evidence: Evidence) -> dict | None:
        return permutation_test(sequence_log_likelihood(evidence.model, self.render(evidence)),
                                len(self.ordered(evidence)), n_permutations=self.n_permutations, alpha=self.alpha,
                                seed=evidence.seed)

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        return ["## Permutation test (canonical order vs random permutations of the whole run)", "",
                f"{block['n_instances']} instances, {block['n_permutations']} permutations: the canonical order's "
                f"log-likelihood gain over their mean {block['statistic']:.3f}, p = {block['p_value']:.4f} -> "
                f"**{'contaminated' if block['significant'] else 'not contaminated'}**.", ""]
