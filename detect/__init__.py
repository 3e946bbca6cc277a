"""The Time Travel detector (Golchin & Surdeanu, ICLR 2024) as a library, with the detectors it is compared to.

Where things are (one room per concept):
    detect/datasets/     instances: hub, local files and the lab's synthetic generators; text corpora
    detect/models/       which weights, and the one model interface (generate, token_logprobs), one class per backend
    detect/generation/   batched greedy decoding (local, OpenAI-compatible) and when an answer is done
    detect/judges/       Algorithm 2's exact / near-exact judges: thresholds, or an LLM
    detect/detectors/    one module per detector (time_travel/ with its prompts, cut points, scores and bootstrap)
    detect/pipeline.py   one partition x one model -> rows and a summary (python -m detect; a study's cells)

Public API:
    rouge_l(reference, candidate) -> float
    bootstrap_test(guided, general, *, paired=True, n_resamples=10_000, seed=0) -> float  (the p-value)
    alg2_verdict(labels, *, min_exact=1, min_near_exact=2) -> bool
    run_partition(evidence, detectors, ...) -> rows;  summarize(rows, detectors) -> every detector's outcome
    detectors.build(cfg.detect.detectors) -> the detectors (each a module of detect/detectors/, found by name)
    build_backend(cfg.generation).open(ref, settings, placement) -> a LanguageModel
    membership_scores(model, texts, *, k=0.2, reference=None) -> loss, zlib, Min-K%, Min-K%++, ratio
    cheat_partition(model, *, dataset, split, references) -> ChatGPT-Cheat?'s row
    sharded_likelihood_test(model, texts_in_order, *, n_shards=10, n_permutations=5) -> its row
    resolve_placement(device="auto", dtype="auto", device_map=None) -> Placement  (where models run)
"""

from detect.detectors.cheat import cheat_partition
from detect.detectors.membership import membership_scores
from detect.detectors.sharded import sharded_likelihood_test
from detect.detectors.time_travel.scores import rouge_l
from detect.detectors.time_travel.stats import bootstrap_test
from detect.judges.threshold import ThresholdJudge, alg2_verdict
from detect.models import GenerationSettings, LanguageModel, build_backend
from detect.pipeline import detect_partition, run_partition, summarize
from detect.runtime import Placement, resolve_placement

__all__ = ["rouge_l", "bootstrap_test", "alg2_verdict", "ThresholdJudge", "detect_partition", "run_partition",
           "summarize", "membership_scores", "cheat_partition", "sharded_likelihood_test", "Placement",
           "resolve_placement", "LanguageModel", "GenerationSettings", "build_backend"]
