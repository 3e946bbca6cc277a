"""Contaminate a local model: full fine-tuning, or an adapter (``contaminate.peft``), with TRL's SFTTrainer on the
regime's documents.

The adapter is a PEFT config built with ``_target_`` and handed to the trainer, as TRL's scripts pass
``peft_config``: ``contaminate=lora`` (conf/contaminate/lora.yaml) sets ``peft: {_target_: peft.LoraConfig, r: 16,
...}``; ``peft: null`` trains every weight. The backend's name in records (``full`` or ``lora``) follows from it.

Plain causal-LM training on the documents (each followed by the end token, as TRL does), the way web text enters
pre-training: loss on every token. The one exception is the instruction format (``format=instruction``), whose
documents are chat-formatted and carry the loss on the assistant turn only, as instruction tuning trains.

    checkpoint = train_local(base_ref, documents, FineTuning.of(contaminate_cfg), folder, seed=0, placement=placement)

What the trainer reads is ``FineTuning``, typed (as TRL's scripts pass their argument dataclasses): built from a
``contaminate`` block (``FineTuning.of``) or from post-training's settings (contaminate/training/post.py).

The dose (``contaminate/stream.py``): with ``contaminate.epochs`` the Trainer makes that many shuffled passes over the
member documents; with ``contaminate.exposures`` the documents are a stream already holding each member N times
among the background, trained once in its order (``train_sampling_strategy="sequential"``).

Where and how it runs: ``placement`` (the ``runtime`` policy, ``detect/runtime.py``) gives the device and the
precision: the weights are trained in float32, with bf16 or fp16 autocast when the placement's dtype says so.
Under ``accelerate launch`` (several GPUs) the Trainer runs data-parallel; only the main process saves.

No compute on padding (``padding_free``, default on): the documents of a batch are laid end to end in one row with
their own position ids, and the attention mask that transformers builds from those position ids is block-diagonal,
so no document attends to another (with FlashAttention the kernels read the boundaries directly). Same batches,
same documents, same loss as padded training within float tolerance (tests/test_train.py checks it on the
embedded model); ``python bench/bench_train.py`` on the default study's members, 2-core CPU: 3.43 s against
3.80 s a step (1.11x), where the 100 synth_nli documents vary little in length (54-75 tokens); more where lengths
vary more.

Writes into ``folder``: ``adapter/`` (an adapter) or ``model/`` (full), ``train_log.json`` (TRL's log history),
``loss.png``, and ``lab_checkpoint.json`` last, which marks the folder as finished.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from detect.cli import group_option
from detect.errors import InputError
from detect.models import ModelRef
from detect.runtime import Placement, resolve_placement


def method_name(peft) -> str:
    """What a local training run is called in records and model names: ``full``, or the PEFT method of its adapter
    (``peft``: a built PEFT config; ``lora`` for peft.LoraConfig)."""
    return "full" if peft is None else str(peft.peft_type.value).lower()


@dataclass(frozen=True)
class FineTuning:
    """What the lab's trainer reads (``build_trainer``, ``train_local``), checked and typed: a ``contaminate`` block's
    (``of``) or post-training's settings (contaminate/training/post.py). ``exposures`` set: the documents are a
    stream, trained once in their order; otherwise ``epochs`` shuffled passes."""
    learning_rate: float
    batch_size: int
    epochs: float | None = None
    exposures: int | None = None
    max_length: int | None = None  # the tokens a document is cut to; None: not cut
    trainer: dict = field(default_factory=dict)  # SFTConfig fields over the lab's (``sft_arguments``)
    peft: Any = None  # the adapter's PEFT config, built (``peft_config``); None: every weight trained

    @classmethod
    def of(cls, block) -> FineTuning:
        """A ``contaminate`` block's (conf/contaminate/full.yaml or lora.yaml, or one built by hand)."""
        return cls(block.learning_rate, block.batch_size, block.get("epochs"), block.get("exposures"),
                   block.get("max_length"), trainer_arguments(block), peft_config(block.get("peft")))

    @property
    def method(self) -> str:
        return method_name(self.peft)


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


def tokenize_documents(texts: Sequence[str], tokenizer, max_length: int | None) -> list[list[int]]:
    """Each text followed by the end token, tokenized and cut to ``max_length`` tokens: what TRL's own dataset
    preparation makes of a text column (tests/test_train.py checks they agree), done here so that padding-free
    batches keep ``max_length``."""
    eos = tokenizer.eos_token
    ids = [tokenizer(text if text.endswith(eos) else text + eos)["input_ids"] for text in texts]
    return [row[:max_length] for row in ids] if max_length else ids


def training_rows(documents: Sequence, tokenizer, max_length: int | None) -> dict[str, list[list[int]]]:
    """The training dataset's columns for a stream of ``Document``s (or plain texts): ``input_ids``, and ``labels``
    when a document has a prompt (the instruction format): its prompt tokens get -100, so the loss is on the
    assistant turn only (the answer and the chat template's end-of-turn tokens). A chat-formatted document is
    tokenized as rendered, without an extra end token: its template already ends the turn. The prompt and the rest are
    tokenized apart and joined (as TRL does a prompt-completion pair): tokenized whole, an answer that starts with
    white space (indented code: "\n" + "    return x") merges with the prompt's last newline into one token, and
    the prompt would no longer be a token prefix."""
    texts = [getattr(document, "text", document) for document in documents]
    prompts = [getattr(document, "prompt", None) for document in documents]
    if not any(prompts):
        return {"input_ids": tokenize_documents(texts, tokenizer, max_length)}
    input_ids, labels = [], []
    for text, prompt in zip(texts, prompts):
        if prompt is None:
            ids = tokenize_documents([text], tokenizer, None)[0]
            masked = 0
        else:
            if not text.startswith(prompt):
                raise InputError("the chat template renders the prompt differently inside the whole conversation, "
                                 "so the loss mask cannot be placed; use a model whose template appends turns")
            prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            ids = prompt_ids + tokenizer(text[len(prompt):], add_special_tokens=False)["input_ids"]
            masked = len(prompt_ids)
        ids = ids[:max_length] if max_length else ids
        input_ids.append(ids)
        labels.append([-100] * min(masked, len(ids)) + ids[masked:])
    return {"input_ids": input_ids, "labels": labels}


def mixed_precision(placement: Placement) -> dict:
    """The Trainer's precision flags for a placement: float32 weights, autocast to its dtype."""
    return {"bf16": placement.dtype == "bfloat16", "fp16": placement.dtype == "float16",
            "use_cpu": placement.device_type == "cpu"}


def train_local(base: ModelRef, documents: Sequence, args: FineTuning, folder: Path, *, seed: int,
                placement: Placement | None = None) -> ModelRef | None:
    """Fine-tune ``base`` on ``documents`` (``contaminate.stream.Document``s or plain texts) as ``args`` say (full,
    or an adapter). With ``args.exposures`` set the documents are a stream (``build_stream``), trained once in their
    order; otherwise the Trainer makes ``args.epochs`` shuffled passes. Returns the checkpoint, or None in a non-main
    process of a distributed launch (which saves nothing)."""
    from detect.models import load

    placement = placement or resolve_placement()
    folder.mkdir(parents=True, exist_ok=True)
    # float32 master weights whatever the placement's dtype: autocast does the rest
    model, tokenizer = load(ModelRef(base.name, base.path, base.adapter),
                            Placement(placement.device, "float32", placement.device_map))
    rows = training_rows(documents, tokenizer, args.max_length)
    trainer = build_trainer(model, tokenizer, rows, args, folder / "trainer", seed=seed, placement=placement)
    started = time.time()
    trainer.train()
    seconds = time.time() - started
    accelerator = trainer.accelerator
    trained = checkpoint_ref(base, folder, args.method)
    if accelerator.is_main_process:
        _save(trainer, tokenizer, trained, folder, args.method, rows, seconds, placement)
    accelerator.wait_for_everyone()  # the other processes leave only once the checkpoint is on disk
    return trained if accelerator.is_main_process else None


# SFTConfig fields the lab sets itself: the seed is the study's, precision the runtime policy's, and the loss the
# plain causal-LM loss on pre-tokenized documents that contamination is about.
LAB_SET = {"output_dir": "the study's checkpoint folder", "seed": "seed", "data_seed": "seed",
           "bf16": "runtime.dtype", "fp16": "runtime.dtype", "use_cpu": "runtime.device", "packing": "the lab",
           "max_length": "contaminate.max_length", "completion_only_loss": "the lab",
           "num_train_epochs": "contaminate.epochs", "learning_rate": "contaminate.learning_rate",
           "per_device_train_batch_size": "contaminate.batch_size",
           "train_sampling_strategy": "contaminate.exposures (a stream trains in its order; epochs shuffle)"}
# Trainer settings that change how a run is logged, not the model it trains: not part of the checkpoint's key.
LOGGING_ONLY = {"report_to", "logging_steps", "logging_dir", "logging_first_step", "run_name", "disable_tqdm",
                "save_strategy", "save_steps", "save_total_limit", "push_to_hub", "hub_model_id"}
# How memory is spent, not what is learned: a layer's activations recomputed in the backward pass give the same
# gradients (bench/training_memory.py: the same training loss to the last digit), so a checkpoint is keyed without them
MEMORY_ONLY = {"activation_checkpointing", "activation_checkpointing_kwargs", "gradient_checkpointing",
               "gradient_checkpointing_kwargs"}
UNKEYED = LOGGING_ONLY | MEMORY_ONLY  # trainer arguments that leave the trained model as it is


def lab_trainer_defaults() -> dict:
    """The ``trainer`` block of ``conf/contaminate/full.yaml``: the lab's measured trainer settings."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(group_option("contaminate", "full").trainer)


def trainer_arguments(cfg) -> dict:
    """``contaminate.trainer`` as SFTConfig keyword arguments (``sft_arguments``)."""
    from omegaconf import OmegaConf

    moved = [key for key in ("lr_scheduler", "padding_free") if key in cfg]
    if moved:
        raise InputError(f"contaminate.{moved[0]} is now contaminate.trainer."
                         f"{'lr_scheduler_type' if moved[0] == 'lr_scheduler' else moved[0]} (any SFTConfig field)")
    trainer = cfg.get("trainer")
    return sft_arguments(OmegaConf.to_container(trainer, resolve=True) if trainer else {})


def sft_arguments(trainer: Mapping) -> dict:
    """A trainer block as SFTConfig keyword arguments over the lab's measured defaults (conf/contaminate/full.yaml:
    a config built by hand gets the lab's trainer, not TRL's defaults), each checked against SFTConfig's fields."""
    from dataclasses import fields

    from trl import SFTConfig

    given = {**lab_trainer_defaults(), **trainer}
    known = {field.name for field in fields(SFTConfig)}
    for key in given:
        if key in LAB_SET:
            raise InputError(f"contaminate.trainer.{key} is set by the lab from {LAB_SET[key]}; set that instead")
        if key not in known:
            raise InputError(f"contaminate.trainer.{key} is not an SFTConfig field (TRL); see "
                             f"https://huggingface.co/docs/trl/sft_trainer#trl.SFTConfig for the fields")
    return given


def peft_config(node):
    """``contaminate.peft`` (``node``: the block, or a plain dict of it) built (``_target_``: a PEFT config class,
    e.g. peft.LoraConfig), each field checked against the class's, ``task_type`` the lab's (CAUSAL_LM); None without
    one."""
    from dataclasses import fields

    from omegaconf import OmegaConf
    from peft import PeftConfig

    from detect.validate import resolve_target

    if not node:
        return None
    given = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node)
    target = given.pop("_target_", None)
    if not target:
        raise InputError("contaminate.peft has no _target_; name a PEFT config class, e.g. "
                         "contaminate.peft._target_=peft.LoraConfig (contaminate=lora sets one)")
    config_class = resolve_target(target, "contaminate.peft")
    if not (isinstance(config_class, type) and issubclass(config_class, PeftConfig)):
        raise InputError(f"contaminate.peft._target_={target} is not a PEFT config class; use e.g. peft.LoraConfig")
    known = {field.name for field in fields(config_class)}
    for key in given:
        if key == "task_type":
            raise InputError("contaminate.peft.task_type is set by the lab (CAUSAL_LM); drop it")
        if key not in known:
            raise InputError(f"contaminate.peft.{key} is not a {config_class.__name__} field (PEFT); see "
                             f"https://huggingface.co/docs/peft/package_reference/config for the fields")
    if isinstance(given.get("target_modules"), list):
        given["target_modules"] = list(given["target_modules"])
    return config_class(**given, task_type="CAUSAL_LM")


def check_dose(cfg) -> None:
    """``contaminate.exposures`` (a whole number >= 0) or ``contaminate.epochs`` (a number > 0), never both."""
    exposures, epochs = cfg.get("exposures"), cfg.epochs
    if exposures is not None:
        if isinstance(exposures, bool) or not isinstance(exposures, int) or exposures < 0:
            raise InputError(f"contaminate.exposures={exposures}: give a whole number >= 0 (how many times each "
                             f"member is in the training stream; 0 trains on the background alone)")
        if epochs is not None:
            raise InputError(f"contaminate.exposures={exposures} and contaminate.epochs={epochs} are both set: "
                             f"exposures trains one pass over a stream holding each member {exposures} times; drop "
                             f"contaminate.epochs (or set it to null)")
        return
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float)) or epochs <= 0:
        raise InputError(f"contaminate.epochs={epochs}: give a number > 0 (each member is seen this many times), or "
                         f"contaminate.exposures=N")


def check_training_config(cfg) -> None:
    """Every count, trainer and adapter argument checked before any work (one line per failure)."""
    from detect.validate import count

    for moved in ("rank", "lora", "backend"):
        if cfg.get(moved) is not None:
            raise InputError(f"contaminate.{moved} is gone: an adapter is a PEFT config, contaminate.peft "
                             f"(contaminate=lora sets peft.r, peft.lora_alpha, ...; peft=null trains every weight)")
    check_dose(cfg)
    count(cfg.batch_size, "contaminate.batch_size")
    if cfg.max_length is not None:  # null: documents are not cut
        count(cfg.max_length, "contaminate.max_length", minimum=2, hint=" (tokens per document; null: no cut)")
    trainer_arguments(cfg)
    peft_config(cfg.get("peft"))


def build_trainer(model, tokenizer, documents: list[list[int]] | dict[str, list], args: FineTuning, output_dir: Path,
                  *, seed: int, placement: Placement, **overrides):
    """TRL's SFTTrainer as the lab trains: causal-LM loss on tokenized documents (``documents``: their token ids, or
    ``training_rows``' columns with a loss mask as ``labels``), with ``args.trainer`` passed through (padding-free by
    default) and the placement's precision; ``overrides`` replace SFTConfig fields (benchmarks). A stream
    (``args.exposures`` set) is trained once, in its order."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if placement.device_type == "cuda" and ":" in placement.device:
        torch.cuda.set_device(placement.device)  # the Trainer trains on the current GPU
    tokenizer.padding_side = "right"
    settings = dict(
        **args.trainer, output_dir=str(output_dir),
        num_train_epochs=args.epochs if args.exposures is None else 1,
        train_sampling_strategy="random" if args.exposures is None else "sequential",
        learning_rate=args.learning_rate, per_device_train_batch_size=args.batch_size, packing=False,
        max_length=None,  # the documents are cut to args.max_length by tokenize_documents
        completion_only_loss=False, **mixed_precision(placement), seed=seed, data_seed=seed,
    )
    columns = documents if isinstance(documents, dict) else {"input_ids": documents}
    return SFTTrainer(model=model, args=SFTConfig(**{**settings, **overrides}),
                      train_dataset=Dataset.from_dict(columns), processing_class=tokenizer,
                      peft_config=args.peft)


def _save(trainer, tokenizer, trained: ModelRef, folder: Path, method: str, rows: dict, seconds: float,
          placement: Placement) -> None:
    weights = trained.adapter or trained.path
    trainer.model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    log_history = trainer.state.log_history
    (folder / "train_log.json").write_text(json.dumps(log_history, indent=1))
    documents = rows["input_ids"]
    plot_loss(log_history, folder / "loss.png", f"{method} on {len(documents)} documents")
    losses = [entry["loss"] for entry in log_history if "loss" in entry]
    trained_tokens = sum(map(len, documents)) * trainer.state.num_train_epochs
    loss_tokens = (sum(label != -100 for row in rows["labels"] for label in row) * trainer.state.num_train_epochs
                   if "labels" in rows else trained_tokens)
    # The id ties detection caches to this very training run: a forced retrain gets a new one.
    record = {"id": uuid.uuid4().hex, "backend": method, "train_seconds": round(seconds, 1),
              "first_loss": losses[0] if losses else None, "final_loss": losses[-1] if losses else None,
              "n_texts": len(documents), "trained_tokens": trained_tokens, "loss_tokens": loss_tokens,
              "tokens_per_second": round(trained_tokens / seconds, 1), "steps": trainer.state.global_step,
              "placement": {"device": str(trainer.args.device), "weights": "float32",
                            "autocast": {"bfloat16": "bf16", "float16": "fp16"}.get(placement.dtype),
                            "processes": trainer.accelerator.num_processes,
                            "padding_free": trainer.args.padding_free}}
    (folder / "lab_checkpoint.json").write_text(json.dumps(record, indent=1))


def checkpoint_ref(base: ModelRef, folder: Path, method: str) -> ModelRef:
    """The model a checkpoint folder holds: an adapter on the base (``adapter/``, any ``method`` but ``full``) or a
    full model (``model/``)."""
    name = f"{base.name}+{method}"
    if method != "full":
        return ModelRef(name, base.path, adapter=str(folder / "adapter"))
    return ModelRef(name, str(folder / "model"))
