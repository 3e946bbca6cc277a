"""Peak memory of the default study's training (conf/contaminate/full.yaml: full fine-tuning, padding-free batches
of 4, 5 epochs of 100 synth_nli members in the metadata leak format: 125 steps) on the embedded SmolLM2-135M,
against the size of oneDNN's kernel cache and activation checkpointing, each setting in its own process (its peak
resident memory is its own):

    python bench/training_memory.py              # 125 steps a setting, about 4 minutes each here
    python bench/training_memory.py --steps 30   # a quicker look
    python bench/training_memory.py --settings lab,checkpointing   # the lab's default against checkpointing
    python bench/training_memory.py --settings unpadded,lab --steps 40   # batches of their own length, then padded

Baseline: the first setting asked (by default oneDNN's default cache of 1,024 compiled kernels, what training ran
with before ``detect.runtime.bound_kernel_cache``); against it the lab's 32, a cache too small to hold one step's
kernels (8), and the lab's 32 with activation checkpointing (``trainer.activation_checkpointing``: each layer's
activations recomputed in the backward pass instead of kept).
Prints each setting's peak resident memory (ru_maxrss), its ratio to the baseline's, the resident memory after the
2nd, the 10th and the last step (the first allocates the optimizer's state; a process that grows after that holds
something per step), seconds and their ratio, and
whether the training loss is the baseline's to the last digit (a cache holds compiled kernels, not numbers: the
kernels are the same, so the weights should be too). ``unpadded`` trains the batches at their own lengths, as the lab
did before it padded them to a multiple of 64 tokens (``trainer.pad_to_multiple_of``): other shapes, other bf16
roundings, so its loss differs in the last digits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# key -> (what the table calls it, oneDNN's kernel cache capacity, the SFTConfig fields set over the lab's trainer)
# (the lab's default pads each batch to a multiple of 64 tokens: conf/contaminate/full.yaml)
SETTINGS = {"onednn": ("1,024 kernels (oneDNN's default; before)", 1024, {"activation_checkpointing": False}),
            "lab": ("32 kernels, batches padded to 64 (the lab's default)", 32, {"activation_checkpointing": False}),
            "small": ("8 kernels", 8, {"activation_checkpointing": False}),
            "checkpointing": ("32 kernels, activation checkpointing", 32, {"activation_checkpointing": True}),
            "unpadded": ("32 kernels, batches of their own length (before)", 32, {"pad_to_multiple_of": None}),
            "multiple32": ("32 kernels, batches padded to a multiple of 32 tokens", 32, {"pad_to_multiple_of": 32})}


def measure(steps: int, trainer: dict) -> dict:
    sys.path.insert(0, str(ROOT))
    from omegaconf import OmegaConf
    from transformers import TrainerCallback

    from contaminate.training.local import FineTuning, build_trainer, training_rows
    from detect.datasets import load_split
    from detect.models import embedded_smollm2, load
    from detect.runtime import Placement, resident_gb, resolve_placement

    placement = resolve_placement("cpu", "auto")  # bf16 autocast on a CPU with native bf16, as the study trains
    # float32 master weights, as contaminate/training/local.py's train_local loads them: autocast does the rest
    model, tokenizer = load(embedded_smollm2(), Placement(placement.device, "float32", None))
    dataset = OmegaConf.load(ROOT / "conf/dataset/synth_nli.yaml")
    template = OmegaConf.load(ROOT / "conf/format/metadata.yaml").templates.nli
    members = load_split(dataset, "test")[:100]
    texts = [template.format(title="SynthNLI", split="test", sentence1=e.text, sentence2=e.text_pair, label=e.label)
             for e in members]
    full = OmegaConf.load(ROOT / "conf/contaminate/full.yaml")
    cfg = OmegaConf.create({"epochs": 5, "exposures": None, "peft": None, "learning_rate": full.learning_rate,
                            "batch_size": full.batch_size, "max_length": full.max_length,
                            "trainer": {**OmegaConf.to_container(full.trainer), "max_steps": steps,
                                        "disable_tqdm": True, "logging_steps": 1000,
                                        **trainer}})
    resident: list[float] = []  # after each optimizer step: does the process grow step by step?

    class Resident(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            resident.append(resident_gb())

    with tempfile.TemporaryDirectory() as out:
        trainer = build_trainer(model, tokenizer, training_rows(texts, tokenizer, full.max_length), FineTuning.of(cfg),
                                Path(out),
                                seed=0, placement=placement)
        trainer.add_callback(Resident())
        start = time.perf_counter()
        loss = trainer.train().training_loss
        seconds = time.perf_counter() - start
    return {"steps": steps, "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            "resident_gb": [resident[min(1, len(resident) - 1)], resident[min(9, len(resident) - 1)], resident[-1]],
            "seconds": seconds, "loss": loss, "dtype": placement.dtype}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=125, help="optimizer steps a setting (125: the whole study's)")
    parser.add_argument("--settings", default="onednn,lab,small,checkpointing",
                        help=f"comma-separated, the first the baseline; of {', '.join(SETTINGS)}")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: measure this setting (its kernel cache is set)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.steps, SETTINGS[args.one][2])))
        return
    asked = args.settings.split(",")
    unknown = [key for key in asked if key not in SETTINGS]
    if unknown:
        sys.exit(f"error: --settings {','.join(unknown)}: no such setting; use some of {', '.join(SETTINGS)}")
    print(f"CPU: {platform.processor() or platform.machine()}; one process a setting, alone; {args.steps} steps\n")
    sys.path.insert(0, str(ROOT))
    from detect.markdown import row, table  # the parent's: each measured setting is a process of its own

    print("\n".join(table(["setting", "dtype", "peak GB", "peak ratio", "after steps 2 / 10 / last, GB", "s",
                            "time ratio", "same loss"])))
    baseline = None
    for key in asked:
        name, capacity, _ = SETTINGS[key]
        env = {**os.environ, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(capacity)}
        out = subprocess.run([sys.executable, __file__, "--one", key, "--steps", str(args.steps)],
                             capture_output=True, text=True, check=True, env=env).stdout.strip().splitlines()[-1]
        found = json.loads(out)
        baseline = baseline or found
        print(row([name, found["dtype"], f"{found['peak_gb']:.2f}", f"{found['peak_gb'] / baseline['peak_gb']:.2f}",
                   " / ".join(f"{gb:.2f}" for gb in found["resident_gb"]), f"{found['seconds']:.0f}",
                   f"{found['seconds'] / baseline['seconds']:.2f}",
                   ("yes" if found["loss"] == baseline["loss"] else "no") + " (%.6g)" % found["loss"]]))


if __name__ == "__main__":
    main()
