"""The Time Travel detector (Golchin & Surdeanu, ICLR 2024) as a library, with the detectors it is compared to.

Public API:
    rouge_l(reference, candidate) -> float
    bootstrap_test(guided, general, *, paired=True, n_resamples=10_000, seed=0) -> float  (the p-value)
    alg2_verdict(labels, *, min_exact=1, min_near_exact=2) -> bool
    detect_partition(examples, ...) -> rows;  summarize(rows, detectors) -> every detector's outcome
    detectors.build(cfg.detect.detectors) -> the detectors (each a module of detect/detectors/, found by name)
    membership_scores(model, tokenizer, texts, *, k=0.2, reference=None) -> loss, zlib, Min-K%, Min-K%++, ratio
    cheat_partition(generate, *, dataset, split, references) -> ChatGPT-Cheat?'s row
    sharded_likelihood_test(model, tokenizer, texts_in_order, *, n_shards=10, n_permutations=5) -> its row
    resolve_placement(device="auto", dtype="auto", device_map=None) -> Placement  (where models run)
"""

from detect.cheat import cheat_partition
from detect.judge import ThresholdJudge, alg2_verdict
from detect.membership import membership_scores
from detect.run import detect_partition, summarize
from detect.runtime import Placement, resolve_placement
from detect.scores import rouge_l
from detect.sharded import sharded_likelihood_test
from detect.stats import bootstrap_test

__all__ = ["rouge_l", "bootstrap_test", "alg2_verdict", "ThresholdJudge", "detect_partition", "summarize",
           "membership_scores", "cheat_partition", "sharded_likelihood_test", "Placement", "resolve_placement"]
