"""Seconds per training step of the default study's contamination, per backend and setting, in one run.

    python bench/bench_train.py                  # ~4 minutes on a 2-core CPU
    python bench/bench_train.py --steps 8 --bf16-steps 0

The embedded SmolLM2-135M on the default study's 100 synth_nli members (metadata format, batch 4, the lab's
trainer: ``contaminate.training.local.build_trainer``). Each setting trains ``--steps`` steps from the same base
weights; the first two are left out of the mean (warm-up). Printed against the first row, the baseline of this run:

- full fine-tuning, padded batches (the lab before issue 12)
- full fine-tuning, padding-free (the default now), with its first losses beside the padded ones
- LoRA with its config's defaults (rank 16, all linear layers), padding-free, float32 (``runtime=auto`` on a CPU)
- LoRA in bf16 autocast, the LoRA config's default before issue 12 (``--bf16-steps`` steps: about 50 s each on a
  CPU without native bf16, which is why ``runtime=auto`` never picks it there)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def member_texts() -> list[str]:
    from omegaconf import OmegaConf

    from contaminate.regime.formats import format_instance
    from detect.datasets import disjoint_pools, load_split

    root = Path(__file__).resolve().parent.parent
    dataset = OmegaConf.load(root / "conf/dataset/synth_nli.yaml")
    template = OmegaConf.load(root / "conf/format/metadata.yaml").templates.nli
    members, _ = disjoint_pools(load_split(dataset, "test"), [100, 100], seed=0, where="synth_nli test")
    return [format_instance(e, template=template, dataset=dataset, split="test") for e in members]


def time_steps(backend: str, padding_free: bool, placement, steps: int) -> tuple[float, list[float]]:
    import torch

    from contaminate.training.local import tokenize_documents
    from detect.models import embedded_smollm2, load
    from detect.runtime import Placement

    root = Path(__file__).resolve().parent.parent
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
        cfg = compose("contaminate", ["+dataset=synth_nli", f"contaminate={backend}"]).contaminate
    cfg.trainer.padding_free = padding_free
    model, tokenizer = load(embedded_smollm2(), Placement(placement.device, "float32"))
    documents = tokenize_documents(member_texts(), tokenizer, cfg.max_length)
    times, losses, _ = timed_steps(model, tokenizer, documents, cfg, placement, steps)
    timed = times[2:] if len(times) > 2 else times
    del model
    torch.cuda.empty_cache() if torch.cuda.is_available() else None
    return sum(timed) / len(timed), losses


def timed_steps(model, tokenizer, documents, cfg, placement, steps: int) -> tuple[list[float], list[float], int]:
    """``steps`` steps of the lab's trainer (``build_trainer``) on ``documents`` (token ids): each step's seconds,
    the logged losses, and how many weights it trained (counted after PEFT wraps the model)."""
    from transformers import TrainerCallback

    from contaminate.training.local import FineTuning, build_trainer

    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.started = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.started)

    with tempfile.TemporaryDirectory() as scratch:
        trainer = build_trainer(model, tokenizer, documents, FineTuning.of(cfg), Path(scratch), seed=0,
                                placement=placement, max_steps=steps, disable_tqdm=True)
        trainer.add_callback(Timer())
        trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
        trainer.train()
    return times, [entry["loss"] for entry in trainer.state.log_history if "loss" in entry], trainable


def main() -> None:
    import torch

    from detect.runtime import Placement, resolve_placement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--bf16-steps", type=int, default=3, help="0 skips the bf16 LoRA row")
    args = parser.parse_args()
    placement = resolve_placement()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {placement.describe()}, "
          f"{args.steps} steps per setting", flush=True)
    settings = [("full, padded (before)", "full", False, placement, args.steps),
                ("full, padding-free (now)", "full", True, placement, args.steps),
                (f"LoRA defaults, padding-free, {placement.dtype} (now)", "lora", True, placement, args.steps)]
    if args.bf16_steps and placement.device_type == "cpu":
        settings.append(("LoRA, bf16 autocast (before)", "lora", True, Placement("cpu", "bfloat16"),
                         args.bf16_steps))
    baseline = None
    first_losses = {}
    for name, backend, padding_free, where, steps in settings:
        seconds, losses = time_steps(backend, padding_free, where, steps)
        baseline = baseline or seconds
        first_losses[name] = [round(float(loss), 4) for loss in losses[:4]]
        print(f"{name:<45} {seconds:6.2f} s/step  {baseline / seconds:5.2f}x the first row   "
              f"first losses {first_losses[name]}", flush=True)


if __name__ == "__main__":
    main()
