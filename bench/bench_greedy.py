"""Greedy decoding: the lab's loop, which drops each row from the batch the step it ends, against transformers'
generate(), which decodes every row until the batch's longest answer ends (detect/generation/local.py).

    python bench/bench_greedy.py                 # its four readings 250 s on a 2-core EPYC with bf16, alone
    python bench/bench_greedy.py --instances 10 --dtype fp32

The workload is the first command's reading of its untouched model (the clean model of
`python -m contaminate +dataset=synth_nli`): the embedded SmolLM2-135M-Instruct, ``--instances`` synth_nli test
instances, Time Travel's guided and general prompts asked raw after one worked example (conf/detect/one_shot.yaml),
then the leak reading of the same instances (their first pieces inside the dump format, continued as raw text), at
the study's batch size and stop rules. Each path reads the same prompts on a fresh model memo, generate() first,
then the loop, then generate() again (so a warm-up or drift shows as two baselines that differ), then generate() at
half the batch size: how many completions a batch's shape alone changes (in bf16 the matrix kernels' blocking follows
the rows in a batch, and the loop's batches shrink; in float32 the loop's completions are generate()'s). Printed:
seconds, tokens generated, rows computed (a decode step of b rows counts b), completions identical to generate()'s,
and each time as a ratio of the two baselines' mean. Run it on an otherwise idle machine: it measures wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pass_at_1 import cpu_name  # noqa: E402  (the CPU as every bench names it)


def main() -> None:
    import torch
    from omegaconf import OmegaConf

    from contaminate.regime import chat_renderer
    from contaminate.regime.layouts import LeakReader, build_format
    from detect.datasets import load_split, sample
    from detect.generation import local
    from detect.judges.threshold import ThresholdJudge
    from detect.markdown import table
    from detect.models import embedded_smollm2, load
    from detect.models.hf import HFModel
    from detect.pipeline import LEAK, detect_partition
    from detect.runtime import resolve_placement

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--dtype", default="auto", help="runtime.dtype: auto, fp32 or bf16 (detect/runtime.py)")
    args = parser.parse_args()
    placement = resolve_placement("cpu", args.dtype)
    model, tokenizer = load(embedded_smollm2(), placement)
    dataset = OmegaConf.load("conf/dataset/synth_nli.yaml")
    detect_cfg = OmegaConf.load("conf/detect/default.yaml")
    fmt = build_format(OmegaConf.load("conf/format/dump.yaml"))
    reader = LeakReader(fmt, dataset, chat_renderer(tokenizer, fmt.name))
    instances = sample(load_split(dataset, "test"), args.instances, seed=0)

    rows_computed = [0]

    def count(module, args, kwargs):  # a hook, not a wrapper: generate() reads forward's signature
        rows_computed[0] += (kwargs.get("input_ids") if "input_ids" in kwargs else args[0]).shape[0]

    model.register_forward_pre_hook(count, with_kwargs=True)

    def read(loop: bool, batch_size: int = detect_cfg.batch_size) -> tuple[float, int, int, list]:
        original = local.plain_greedy
        local.plain_greedy = original if loop else (lambda config: False)
        try:
            language_model = HFModel(model, tokenizer, progress=False, prompt_format="raw",
                                     batch_size=batch_size, max_new_tokens=detect_cfg.max_new_tokens)
            rows_computed[0] = 0
            started = time.perf_counter()
            rows = detect_partition(instances, dataset=dataset, split="test", model=language_model,
                                    judge=ThresholdJudge(), stop=detect_cfg.stop, prompt_format="raw", shots=1)
            rows += detect_partition(instances, dataset=dataset, split="test", model=language_model,
                                     judge=ThresholdJudge(), stop=detect_cfg.stop, instructions=(LEAK,),
                                     reader=reader)
            seconds = time.perf_counter() - started
        finally:
            local.plain_greedy = original
        completions = [row["completion"] for row in rows]
        return seconds, language_model.counters()["generated_tokens"], rows_computed[0], completions

    print(f"{cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads, embedded SmolLM2-135M {placement.dtype}; {args.instances} synth_nli instances: guided and "
          f"general raw after one example, then the leak reading; batch {detect_cfg.batch_size}, "
          f"max_new_tokens {detect_cfg.max_new_tokens}")
    half = detect_cfg.batch_size // 2
    runs = [("generate()", read(False)), ("loop", read(True)), ("generate()", read(False)),
            (f"generate(), batch {half}", read(False, half))]
    baseline = (runs[0][1][0] + runs[2][1][0]) / 2
    reference = runs[0][1][3]
    lines = table(["decoding", "seconds", "x generate()", "tokens generated", "rows computed",
                   "completions as generate()'s"],
                  [[name, f"{seconds:.1f}", f"{seconds / baseline:.2f}", f"{tokens:,}", f"{computed:,}",
                    f"{sum(a == b for a, b in zip(completions, reference))}/{len(reference)}"]
                   for name, (seconds, tokens, computed, completions) in runs])
    print("\n".join(lines))


if __name__ == "__main__":
    main()
