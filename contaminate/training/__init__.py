"""Contamination backends, each built from the ``contaminate`` config group with ``_target_``:

    backend = instantiate_backend(cfg.contaminate)     # conf/contaminate/{full,lora,openai}.yaml
    base = backend.base_model(cfg)                     # what gets contaminated
    backend.key(placement)                             # what, beyond the data and settings, keys its checkpoint
    model = backend.reuse(base, folder) or backend.train(base, documents, folder, seed=..., placement=...)

- ``LocalFineTune`` (``contaminate=full`` and ``contaminate=lora``): TRL's SFTTrainer on this machine
  (``contaminate/training/local.py``); the checkpoint is a folder of weights, keyed by the device kind, the
  precision and the training code.
- ``OpenAIFineTune`` (``contaminate=openai``): the fine-tuning API (``contaminate/training/openai.py``); the
  checkpoint is a model id at the API; the folder holds the job, resumed if a run stopped while it was running.

    backend.serving(cfg)(checkpoint_ref).open(...)     # how its checkpoints are served to the detectors

A new backend is a class with the members of ``TrainingBackend`` and a YAML file in ``conf/contaminate/`` naming
it (``_target_``); ``instantiate_backend`` refuses, in one line, a class that lacks one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from contaminate.checkpoints import checkpoint_record
from detect.errors import InputError
from detect.models import ModelRef
from detect.runtime import Placement
from detect.validate import POSITIVE, PROBABILITY, Range

# The numbers of the local trainer's settings: the type and range each must have (a negative learning rate or a
# rank of 0 fails here in one line, not inside TRL or PEFT once the model has loaded). batch_size, max_length and
# the dose are counted by the trainer's own check_training_config.
TRAINING_LIMITS = {
    "learning_rate": (float, POSITIVE),
    "peft.r": (int, Range(1, hint="the LoRA rank, LoraConfig r")), "peft.lora_alpha": (float, POSITIVE),
    "peft.lora_dropout": (float, Range(0, 1, "[)")),
    # transformers >= 5: whole steps, or below 1 a fraction of the steps (conf/schedule/cosine.yaml); check_warmup
    "trainer.warmup_steps": (float, Range(0, hint="whole steps, or a fraction in [0, 1) of the steps")),
    "trainer.warmup_ratio": (float, PROBABILITY), "trainer.weight_decay": (float, Range(0)),
    "trainer.lr_scheduler_kwargs.min_lr_rate": (float, Range(0, 1, hint="the floor, a fraction of learning_rate")),
    "trainer.max_grad_norm": (float, POSITIVE), "trainer.gradient_accumulation_steps": (int, Range(1)),
    "trainer.max_steps": (int, Range(-1, hint="-1: as many as the epochs make")),
}


def check_warmup(trainer) -> None:
    """``contaminate.trainer.warmup_steps`` as the installed transformers reads it: whole steps, or from transformers
    5 on a fraction in [0, 1) of the steps (which replaced ``warmup_ratio``; 4.x would take 0.05 as 0.05 steps)."""
    from dataclasses import fields

    import transformers
    from trl import SFTConfig

    if not trainer:
        return
    has_ratio = "warmup_ratio" in {field.name for field in fields(SFTConfig)}  # transformers < 5
    steps = trainer.get("warmup_steps")
    if trainer.get("warmup_ratio") is not None and not has_ratio:
        raise InputError(f"contaminate.trainer.warmup_ratio is gone from transformers {transformers.__version__}: "
                         f"give contaminate.trainer.warmup_steps the fraction in [0, 1) instead")
    if isinstance(steps, float) and not steps.is_integer():
        if steps > 1:
            raise InputError(f"contaminate.trainer.warmup_steps={steps}: give whole steps, or a fraction in [0, 1) "
                             f"of the steps")
        if has_ratio:
            raise InputError(f"contaminate.trainer.warmup_steps={steps}: transformers {transformers.__version__} "
                             f"counts it in whole steps; a fraction needs transformers >= 5 (or give "
                             f"contaminate.trainer.warmup_ratio={steps} and warmup_steps=0)")


@runtime_checkable
class TrainingBackend(Protocol):
    """What a study asks of a contamination backend (``contaminate._target_``)."""
    name: str       # the manifest's and calibration's regime axis: full, lora, openai
    api: bool       # trains at a remote API (its checkpoints are model ids there, not folders here)
    resumes: bool   # an unfinished checkpoint folder is resumed (an API job), not trained again from scratch
    cfg: Any        # the contaminate group as configured

    def check(self) -> None:
        """Refuse bad settings in one line, before any model loads."""

    def base_model(self, cfg) -> ModelRef:
        """The model that gets contaminated."""

    def tokenizer(self, base: ModelRef) -> Any:
        """The tokenizer that cuts and counts the documents (None: the API's own)."""

    def key(self, placement: Placement) -> dict:
        """What, beyond the data and settings, keys a checkpoint (device and code, or nothing for an API)."""

    def serving(self, cfg) -> Callable[[ModelRef], Any]:
        """``checkpoint ref -> generation backend`` the detectors read it through."""

    def dry_run(self, texts: Sequence[str], out_dir: Path) -> dict | None:
        """What training would cost, written to ``out_dir`` with nothing sent; None where the backend has no dry
        run or it is off."""

    def reuse(self, base: ModelRef, folder: Path) -> ModelRef:
        """The finished checkpoint in ``folder``."""

    def train(self, base: ModelRef, documents: Sequence, folder: Path, *, seed: int,
              placement: Placement) -> ModelRef | None:
        """Train on ``documents`` into ``folder``; None in the other processes of a distributed launch."""


def instantiate_backend(contaminate_cfg) -> TrainingBackend:
    """The backend object for the ``contaminate`` group; a group file without ``_target_``, or a class that is not a
    ``TrainingBackend``, is refused in one line."""
    from detect.cli import instantiate

    if not contaminate_cfg.get("_target_"):
        raise InputError("contaminate has no _target_; name the backend "
                         "class, e.g. _target_: contaminate.training.LocalFineTune")
    backend = instantiate(contaminate_cfg, _convert_="none", _recursive_=False)
    if not isinstance(backend, TrainingBackend):
        missing = [name for name in backend_members() if not hasattr(backend, name)]
        raise InputError(f"contaminate._target_={contaminate_cfg._target_} is not a training backend (it lacks "
                         f"{', '.join(missing)}); see contaminate.training.TrainingBackend")
    return backend


def backend_members() -> list[str]:
    """``TrainingBackend``'s members in the order it declares them: its attributes, then its methods."""
    return [*TrainingBackend.__annotations__,
            *(name for name, value in vars(TrainingBackend).items() if callable(value) and not name.startswith("_"))]


class LocalFineTune:
    """Full fine-tuning, or an adapter (``peft``: a PEFT config, e.g. LoRA), with TRL on this machine's devices."""
    api = False
    resumes = False  # an unfinished folder (killed mid-training) is started again from scratch

    def __init__(self, **settings) -> None:
        from omegaconf import OmegaConf

        self.cfg = OmegaConf.create(settings)  # the contaminate group as configured

    @property
    def name(self) -> str:
        """full, or the adapter's PEFT method (lora)."""
        from contaminate.training.local import method_name, peft_config

        return method_name(peft_config(self.cfg.get("peft")))

    def check(self) -> None:
        from contaminate.training.local import check_training_config
        from detect.validate import check_values

        check_values(self.cfg, TRAINING_LIMITS, where="contaminate")  # types and ranges first: one line each
        check_warmup(self.cfg.get("trainer"))
        check_training_config(self.cfg)  # then the dose, and every trainer / adapter argument against TRL and PEFT

    def base_model(self, cfg) -> ModelRef:
        from detect.cli import instantiate

        return instantiate(cfg.model)

    def tokenizer(self, base: ModelRef):
        """The base model's tokenizer: it cuts and counts the regime's documents and renders chat turns."""
        from detect.models.loading import load_tokenizer

        return load_tokenizer(base.path)

    def key(self, placement: Placement) -> dict:
        from contaminate.code_version import TRAINING_CODE, code_digest

        return {"runtime": placement.key(), "code": code_digest(TRAINING_CODE)}

    def serving(self, cfg):
        """``checkpoint ref -> generation backend``: the ``generation`` group's (local: transformers here)."""
        from detect.models import build_backend
        from detect.validate import resolve_target

        if not getattr(resolve_target(cfg.generation._target_, "generation"), "reads_model_group", False):
            raise InputError(f"generation={cfg.generation.name} in a study that trains here: its checkpoints are "
                             f"folders on this machine; use generation=local (or contaminate=openai)")
        backend = build_backend(cfg.generation)
        return lambda ref: backend

    def reuse(self, base: ModelRef, folder: Path) -> ModelRef:
        """The finished checkpoint in ``folder``, its weights checked."""
        from contaminate.training.local import checkpoint_ref

        ref = checkpoint_ref(base, folder, self.name)
        weights = (Path(ref.adapter) / "adapter_model.safetensors" if ref.adapter
                   else Path(ref.path) / "model.safetensors")
        if not weights.is_file():
            raise InputError(f"checkpoint {folder} is missing or corrupt (no {weights.relative_to(folder)}); "
                             f"rerun with contaminate.force=true to train it again")
        return ref

    def dry_run(self, texts: Sequence[str], out_dir: Path) -> None:
        """No dry run: training here costs no money, only the time it takes."""
        return None

    def train(self, base: ModelRef, documents: Sequence, folder: Path, *, seed: int,
              placement: Placement) -> ModelRef | None:
        """Train on ``documents`` (``contaminate.regime.stream.Document``s) into ``folder`` (already prepared by the
        main process); None in other processes of a launch."""
        from contaminate.training.local import FineTuning, train_local

        return train_local(base, documents, FineTuning.of(self.cfg), folder, seed=seed, placement=placement)


class OpenAIFineTune:
    """A supervised fine-tuning job at an OpenAI-compatible API (``contaminate=openai``)."""
    name = "openai"
    api = True
    resumes = True  # an unfinished folder holds the job id: the job is resumed, not paid for twice

    def __init__(self, **settings) -> None:
        from omegaconf import OmegaConf

        self.cfg = OmegaConf.create(settings)

    def check(self) -> None:
        from detect.validate import count

        if self.cfg.get("exposures") is not None:
            raise InputError("contaminate.exposures is counted in a stream trained here; contaminate=openai takes "
                             "contaminate.epochs (or use contaminate=full or lora)")
        count(self.cfg.epochs, "contaminate.epochs", hint=" (each member is seen this many times)")
        for block in ("trainer", "peft"):
            if self.cfg.get(block):
                # a schedule (conf/schedule/) writes trainer keys too: say which keys, and where they may come from
                source = " and any schedule=... (the default, constant, sets none)" if block == "trainer" else ""
                raise InputError(f"contaminate.{block}.{{{', '.join(self.cfg[block])}}} is set but contaminate=openai "
                                 f"trains at the API, which takes epochs, batch_size and learning_rate_multiplier (no "
                                 f"schedule); drop the {block} settings{source}")

    def base_model(self, cfg) -> ModelRef:
        """The API's base model (the ``model`` group is not used)."""
        return ModelRef(self.cfg.model, self.cfg.base_url or "https://api.openai.com/v1")

    def key(self, placement: Placement) -> dict:
        # A job depends on the records (texts, template, chat turn: all in the key already), not on this code or
        # machine; keying it by them would pay for a new job after every edit here.
        return {"runtime": "api", "code": "api"}

    def tokenizer(self, base: ModelRef) -> None:
        return None  # the API's own; the regime is the members alone (contaminate/regime/__init__.py)

    def reuse(self, base: ModelRef, folder: Path) -> ModelRef:
        return ModelRef(checkpoint_record(folder)["id"], base.path)

    def serving(self, cfg):
        """``checkpoint ref -> generation backend``: the fine-tune and its base at the same API, chat models
        prompted as chat and base models raw, each model's completions cached in the study's cache."""
        from detect.models import digest
        from detect.models.server import OpenAIServer

        base = self.base_model(cfg)

        def backend(ref: ModelRef) -> OpenAIServer:
            cache = Path(cfg.cache_dir) / "api" / f"{digest([ref.name, base.path, self.cfg.chat])}.jsonl"
            return OpenAIServer(base_url=self.cfg.base_url, api_key_env=self.cfg.api_key_env,
                                max_retries=self.cfg.max_retries, prompt_format="chat" if self.cfg.chat else "raw",
                                cache_path=str(cache))

        return backend

    def dry_run(self, texts: Sequence[str], out_dir: Path) -> dict | None:
        """With ``dry_run: true``: training.jsonl and estimate.json written (tokens, cost), nothing sent."""
        from contaminate.training.openai import write_training_file

        if not self.cfg.dry_run:
            return None
        estimate = write_training_file(texts, self.cfg, out_dir / "training.jsonl")
        (out_dir / "estimate.json").write_text(json.dumps(estimate, indent=1))
        return estimate

    def train(self, base: ModelRef, documents: Sequence, folder: Path, *, seed: int,
              placement: Placement) -> ModelRef:
        from contaminate.training.openai import train_openai

        texts = [getattr(document, "text", document) for document in documents]
        record = train_openai(texts, self.cfg, folder, seed=seed)  # resumes the job recorded in the folder
        return ModelRef(record["id"], base.path)
