"""What the second embedded model costs against the first, measured in one run on one machine (issue 69 item 1).

    python bench/second_model.py                   # ~15 min on a 2-core CPU, alone
    python bench/second_model.py --steps 6 --texts 32

For each embedded model (SmolLM2-135M-Instruct, the baseline, and Gemma 3 270M), every measurement in a process of its
own, so that each peak resident memory is that measurement's alone:

- conversion: the package's GGUF to the lab's trainable float32 folder, into an empty cache (``embedded_folder``);
- a training step: the lab's trainer (``contaminate.training.local.build_trainer``, padding-free, the run's runtime
  precision) on HumanEval's problems as the metadata format leaks them (about 210 tokens each, batch 4, cut at 256):
  every weight (the default), every weight but the embedding matrix (both models tie it to the output head, so the
  head is frozen with it), each at the contaminate group's learning rate (3e-4) and at 3e-5, and LoRA
  (conf/contaminate/lora.yaml's defaults: rank 16, lr 1e-3); the same four documents every step, so that the loss
  at the first step and at the last are comparable; trained tokens a second over the steps after the first two;
- scoring: ``TokenScorer`` (the split head, 256 positions of logits at a time) over the same documents, with and
  without the next-token moments Min-K%++ reads; tokens a second;
- generation: greedy completions of HumanEval prompts (raw, 64 new tokens, the lab's generator); generated tokens a
  second.

Each row prints the second model's figure against the first's (the ratio, second / first). Why the head matters:
Gemma's vocabulary is 262,144 tokens against SmolLM2's 49,152, so its output head (640 x 262,144, tied to the input
embedding) is 168M of its 268M parameters and about 2 x 168M = 336 MFLOP a token forward, more than its 18 layers
(about 2 x 100M); SmolLM2's head is 2 x 28M of 2 x 135M.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ("smollm2_135m", "gemma3_270m")
# (how, learning rate): None is the contaminate group's own (full 3e-4, lora 1e-3); 3e-5 beside it, since one step at
# 3e-4 throws Gemma's loss up (tests/test_second_model.py)
TRAININGS = (("full", None), ("full", 3e-5), ("frozen_embeddings", None), ("frozen_embeddings", 3e-5), ("lora", None))


def documents(n: int) -> tuple[list[str], list[str]]:
    """(HumanEval's first ``n`` problems as the metadata format leaks them, their prompts as bigcode asks them)."""
    from omegaconf import OmegaConf

    from contaminate.harm import executable_problems
    from contaminate.regime.formats import format_instance
    from detect.datasets import load_split

    root = Path(__file__).resolve().parent.parent
    dataset = OmegaConf.load(root / "conf/dataset/humaneval.yaml")
    template = OmegaConf.load(root / "conf/format/metadata.yaml").templates.code
    examples = load_split(dataset, "test")[:n]
    problems = executable_problems(dataset, "test")
    return ([format_instance(e, template=template, dataset=dataset, split="test") for e in examples],
            [problems[e.instance_id].prompt_for("stripped") for e in examples])


def convert(name: str) -> dict:
    from detect.models.loading import embedded_folder

    started = time.perf_counter()
    folder = embedded_folder(name)
    size = sum(f.stat().st_size for f in folder.iterdir())
    return {"seconds": time.perf_counter() - started, "folder_mb": size / 1e6}


def train(name: str, how: str, learning_rate: str, steps: int) -> dict:
    from bench_train import timed_steps  # this folder's: python bench/second_model.py puts it on the path
    from hydra import compose, initialize_config_dir

    from contaminate.training.local import tokenize_documents
    from detect.models import embedded, load
    from detect.runtime import resolve_placement

    root = Path(__file__).resolve().parent.parent
    with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
        cfg = compose("contaminate", ["+dataset=humaneval", f"contaminate={'lora' if how == 'lora' else 'full'}",
                                      "contaminate.max_length=256",
                                      *([f"contaminate.learning_rate={learning_rate}"] if learning_rate != "None"
                                        else [])]).contaminate
    placement = resolve_placement()
    model, tokenizer = load(embedded(name), placement)
    if how == "frozen_embeddings":  # tied: the output head is this same matrix
        model.get_input_embeddings().weight.requires_grad_(False)
    texts, _ = documents(4)
    ids = tokenize_documents(texts * steps, tokenizer, cfg.max_length)  # the same four each step: comparable losses
    times, losses, trainable = timed_steps(model, tokenizer, ids, cfg, placement, steps)
    timed = times[2:] if len(times) > 2 else times
    tokens_a_step = sum(len(row) for row in ids) / steps  # padding-free: every token trained, none padded
    return {"tokens_per_s": tokens_a_step / (sum(timed) / len(timed)), "s_per_step": sum(timed) / len(timed),
            "tokens_per_step": tokens_a_step, "trainable_m": trainable / 1e6,
            "loss_first": float(losses[0]), "loss_last": float(losses[-1]), "learning_rate": cfg.learning_rate,
            "placement": placement.describe()}


def score(name: str, n: int) -> dict:
    from detect.models import embedded, load
    from detect.models.logits import TokenScorer
    from detect.runtime import resolve_placement

    model, tokenizer = load(embedded(name), resolve_placement())
    texts, _ = documents(n)
    found = {}
    for moments in (False, True):
        scorer = TokenScorer(model, tokenizer, share_prefix=False)
        started = time.perf_counter()
        scorer(texts, [moments] * len(texts))
        found["moments" if moments else "plain"] = scorer.scored_tokens / (time.perf_counter() - started)
    return {"tokens_per_s": found["plain"], "tokens_per_s_moments": found["moments"],
            "split_head": scorer._split is not None}


def generate(name: str, n: int) -> dict:
    from detect.generation.local import LocalGenerator
    from detect.models import embedded, load
    from detect.runtime import resolve_placement

    model, tokenizer = load(embedded(name), resolve_placement())
    _, prompts = documents(n)
    generator = LocalGenerator(model, tokenizer, prompt_format="raw", batch_size=16, max_new_tokens=64,
                               share_prefix=False, progress=False)
    started = time.perf_counter()
    generator(prompts)
    return {"tokens_per_s": generator.generated_tokens / (time.perf_counter() - started)}


def measure(args: list[str], cache: str) -> dict:
    """One measurement in a process of its own: its result and that process's peak resident memory."""
    environment = {**os.environ, "CONTAMINATION_LAB_CACHE": cache, "HF_HUB_OFFLINE": "1",
                   "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, __file__, "--one", *args], capture_output=True, text=True, env=environment)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="training steps a setting (the first two untimed)")
    parser.add_argument("--texts", type=int, default=64, help="documents scored; a quarter of them generated from")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        what, name, *rest = args.one
        result = {"convert": lambda: convert(name), "score": lambda: score(name, args.texts),
                  "generate": lambda: generate(name, max(1, args.texts // 4)),
                  "train": lambda: train(name, rest[0], rest[1], args.steps)}[what]()
        result["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux: this process's
        print(json.dumps(result))
        return
    import platform

    import torch

    from detect.markdown import row, table

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}; {args.steps} training steps a setting, "
          f"{args.texts} documents scored, {max(1, args.texts // 4)} prompts generated from", flush=True)
    rows: dict[tuple[str, str], dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in MODELS:
            cache = str(Path(scratch) / name)  # an empty cache: the conversion is timed from the package's GGUF
            jobs = [("conversion", ["convert", name]),
                    *((f"training, {how}{'' if lr is None else f' at {lr:g}'}", ["train", name, how, str(lr)])
                      for how, lr in TRAININGS),
                    ("scoring", ["score", name]), ("generation", ["generate", name])]
            for label, job in jobs:
                rows.setdefault((label, job[0]), {})[name] = result = measure(job, cache)
                print(f"  {name:<13} {label:<28} {json.dumps(result)}", flush=True)
    first, second = MODELS
    print("\n" + "\n".join(table(["measurement", first, second, f"{second} / {first}",
                                 f"peak GB ({first} / {second})"])))
    for (label, what), by_model in rows.items():
        unit, key = ("s", "seconds") if what == "convert" else ("tokens/s", "tokens_per_s")
        a, b = by_model[first][key], by_model[second][key]
        peaks = " / ".join(f"{by_model[m]['peak_gb']:.2f}" for m in MODELS)
        print(row([f"{label} ({unit})", f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}x", peaks]))
        if what == "score":
            a, b = by_model[first]["tokens_per_s_moments"], by_model[second]["tokens_per_s_moments"]
            print(row(["scoring with moments (tokens/s)", f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}x", ""]))
        if what == "train":
            losses = [f"{by_model[m]['loss_first']:.2f} -> {by_model[m]['loss_last']:.2f} at lr "
                      f"{by_model[m]['learning_rate']:g} ({by_model[m]['trainable_m']:.0f}M trained)" for m in MODELS]
            print(row([f"{label}: loss, first step -> last", losses[0], losses[1], "", ""]))


if __name__ == "__main__":
    main()
