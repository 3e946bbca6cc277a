"""Detector speed on the embedded model: batched vs one-prompt-at-a-time generation, and the bootstrap.

    python bench/bench_detect.py                    # ~3 minutes on a 2-core CPU
    python bench/bench_detect.py --batch-sizes 4 8 20 --max-new-tokens 64

Prints tokens/s of batched generation against sequential generation of the same 20 detector prompts
(10 synth_nli instances x guided/general; greedy, so both give the same tokens), and the time of a
10-instance, 10,000-resample bootstrap against a plain Python loop measured in the same run.
Targets (issue 2): batched >= 5x sequential tokens/s; bootstrap <= 20 ms.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np


def bench_generation(batch_sizes: list[int], max_new_tokens: int, dtype: str) -> None:
    import torch
    from omegaconf import OmegaConf

    from detect.datasets import load_split, sample
    from detect.detectors.time_travel.prompts import INSTRUCTIONS, build_prompt
    from detect.detectors.time_travel.split import split_instance
    from detect.generation.local import LocalGenerator
    from detect.models import embedded_smollm2, load

    dataset = OmegaConf.load("conf/dataset/synth_nli.yaml")
    examples = sample(load_split(dataset, "test"), 10, seed=0)
    prompts = [build_prompt(instruction, dataset.task, first_piece=split_instance(e, seed=0).first, label=e.label,
                            dataset_name=dataset.title, split_name="test")
               for instruction in INSTRUCTIONS for e in examples]
    from detect.runtime import Placement

    # bfloat16 is placed by hand: the runtime policy refuses it on a CPU without native bf16
    model, tokenizer = load(embedded_smollm2(), Placement("cpu", dtype))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {dtype}, {len(prompts)} prompts, "
          f"max_new_tokens={max_new_tokens}")
    baseline = None
    for batch_size in [1, *batch_sizes]:
        # The baseline is the plain loop: one prompt, its whole prompt run, no shared prefix.
        generator = LocalGenerator(model, tokenizer, batch_size=batch_size, max_new_tokens=max_new_tokens,
                                   share_prefix=batch_size > 1, progress=False)
        generator(prompts[:2])  # warm-up
        generator.generated_tokens = 0
        started = time.perf_counter()
        completions = generator(prompts)
        seconds = time.perf_counter() - started
        tokens_per_s = generator.generated_tokens / seconds
        baseline = baseline or (tokens_per_s, completions)
        same = sum(a == b for a, b in zip(completions, baseline[1]))
        print(f"batch {batch_size:>3}: {generator.generated_tokens:>5} tokens in {seconds:6.1f} s = "
              f"{tokens_per_s:7.1f} tokens/s, {tokens_per_s / baseline[0]:5.2f}x sequential "
              f"({same}/{len(prompts)} completions identical to sequential)")


def python_loop_bootstrap(guided, general, n_resamples: int, seed: int) -> float:
    """The baseline: the same paired test written as a loop, as the official code does it."""
    rng = random.Random(seed)
    differences = [g - h for g, h in zip(guided, general)]
    observed = sum(differences) / len(differences)
    null = [d - observed for d in differences]
    hits = 0
    for _ in range(n_resamples):
        resample = [null[rng.randrange(len(null))] for _ in null]
        hits += sum(resample) / len(resample) >= observed - 1e-12
    return (1 + hits) / (1 + n_resamples)


def bench_bootstrap(repeats: int = 20) -> None:
    from detect.detectors.time_travel.stats import bootstrap_test

    rng = np.random.default_rng(0)
    guided, general = rng.random(10), rng.random(10)
    timings = {}
    for name, test in [("loop", python_loop_bootstrap), ("vectorised", None)]:
        runs = []
        for _ in range(repeats if test is None else 3):
            started = time.perf_counter()
            if test is None:
                bootstrap_test(guided, general, n_resamples=10_000, seed=0)
            else:
                test(list(guided), list(general), 10_000, 0)
            runs.append(time.perf_counter() - started)
        timings[name] = float(np.median(runs))
    print(f"bootstrap, 10 instances x 10,000 resamples: vectorised {timings['vectorised'] * 1e3:.2f} ms "
          f"(target <= 20 ms), Python loop {timings['loop'] * 1e3:.0f} ms, "
          f"{timings['loop'] / timings['vectorised']:.0f}x faster")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--dtype", default="float32", help="float32 (the model config's default) or bfloat16")
    args = parser.parse_args()
    bench_bootstrap()
    bench_generation(args.batch_sizes, args.max_new_tokens, args.dtype)
