"""Contaminate a local model: LoRA or full fine-tuning with TRL's SFTTrainer on the formatted members.

Plain causal-LM training on the contamination texts (TRL appends the end token to each), the way web text
enters pre-training: no instruction, no chat template, loss on every token.

    checkpoint = train_local(base_ref, texts, contaminate_cfg, folder, seed=0)   # -> ModelRef of the result

Writes into ``folder``: ``adapter/`` (LoRA) or ``model/`` (full), ``train_log.json`` (TRL's log history),
``loss.png``, and ``lab_checkpoint.json`` last, which marks the folder as finished.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Sequence

from detect.errors import InputError
from detect.models import ModelRef

BACKENDS = ("lora", "full", "openai")  # openai: contaminate/openai_train.py


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise InputError(f"unknown contamination backend '{backend}'; use one of {', '.join(BACKENDS)} "
                         f"(contaminate=<backend>)")


def plot_loss(log_history: Sequence[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(entry["epoch"], entry["loss"]) for entry in log_history if "loss" in entry]
    figure, axis = plt.subplots(figsize=(6, 3.5))
    if points:
        axis.plot(*zip(*points), marker=".")
    axis.set(xlabel="epoch", ylabel="training loss", title=title)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def train_local(base: ModelRef, texts: Sequence[str], cfg, folder: Path, *, seed: int) -> ModelRef:
    """Fine-tune ``base`` on ``texts``; ``cfg`` is the ``contaminate`` config group (lora or full)."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from detect.models import load

    check_backend(cfg.backend)
    folder.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load(ModelRef(base.name, base.path, "float32", base.adapter))
    tokenizer.padding_side = "right"
    use_bf16 = cfg.precision == "bf16"
    args = SFTConfig(
        output_dir=str(folder / "trainer"), num_train_epochs=cfg.epochs, learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler, warmup_steps=0, weight_decay=0.0,
        per_device_train_batch_size=cfg.batch_size, max_length=cfg.max_length, packing=False,
        dataset_text_field="text", completion_only_loss=False, bf16=use_bf16, fp16=False,
        # A 135M model fits many times over; recomputing activations would only slow a CPU run down.
        activation_checkpointing=False, logging_steps=1, save_strategy="no", report_to="none",
        seed=seed, data_seed=seed, disable_tqdm=False, use_cpu=not torch.cuda.is_available(),
    )
    peft_config = None
    if cfg.backend == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout,
                                 target_modules=cfg.target_modules, task_type="CAUSAL_LM")
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict({"text": list(texts)}),
                         processing_class=tokenizer, peft_config=peft_config)
    started = time.time()
    trainer.train()
    seconds = time.time() - started

    trained = checkpoint_ref(base, folder, cfg.backend)
    weights = trained.adapter or trained.path
    trainer.model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    log_history = trainer.state.log_history
    (folder / "train_log.json").write_text(json.dumps(log_history, indent=1))
    plot_loss(log_history, folder / "loss.png", f"{cfg.backend} on {len(texts)} instances")
    losses = [entry["loss"] for entry in log_history if "loss" in entry]
    # The id ties detection caches to this very training run: a forced retrain gets a new one.
    record = {"id": uuid.uuid4().hex, "backend": cfg.backend, "train_seconds": round(seconds, 1),
              "first_loss": losses[0] if losses else None, "final_loss": losses[-1] if losses else None,
              "n_texts": len(texts)}
    (folder / "lab_checkpoint.json").write_text(json.dumps(record, indent=1))
    return trained


def checkpoint_ref(base: ModelRef, folder: Path, backend: str) -> ModelRef:
    """The model a checkpoint folder holds: a LoRA adapter on the base (``adapter/``) or a full model (``model/``)."""
    name = f"{base.name}+{backend}"
    if backend == "lora":
        return ModelRef(name, base.path, base.dtype, adapter=str(folder / "adapter"))
    return ModelRef(name, str(folder / "model"), base.dtype)
