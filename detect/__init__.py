"""The Time Travel detector (Golchin & Surdeanu, ICLR 2024) as a library.

Public API:
    rouge_l(reference, candidate) -> float
    bootstrap_test(guided, general, *, paired=True, n_resamples=10_000, seed=0) -> float  (the p-value)
    alg2_verdict(labels, *, min_exact=1, min_near_exact=2) -> bool
    detect_partition(examples, ...) -> rows;  summarize(rows, ...) -> Algorithm 1 and 2 outcomes
"""

from detect.judge import ThresholdJudge, alg2_verdict
from detect.run import detect_partition, summarize
from detect.scores import rouge_l
from detect.stats import bootstrap_test

__all__ = ["rouge_l", "bootstrap_test", "alg2_verdict", "ThresholdJudge", "detect_partition", "summarize"]
