"""Models: which weights (``loading``: the ``model`` group), and the one interface every detector, judge and the
study reach them through (``base.LanguageModel``), served by one backend class per kind, built by one factory
from the ``generation`` config group:

    backend = build_backend(cfg.generation)               # conf/generation/{local,openai}.yaml, by _target_
    model = backend.open(ref, GenerationSettings.of(cfg.detect), placement)
    model.generate(prompts, stop=shapes);  model.token_logprobs(texts, moments=True)

Adding a backend (vLLM's offline engine, say) is one module here with a class whose ``open`` returns a
``LanguageModel``, and one file in ``conf/generation/`` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from detect.cache import cache_dir, digest
from detect.errors import InputError
from detect.models.base import LanguageModel
from detect.models.loading import ModelRef, embedded, embedded_smollm2, hub, load, tiny_random

__all__ = ["LanguageModel", "ModelRef", "GenerationSettings", "build_backend", "check_backend", "cache_dir", "digest",
           "embedded", "embedded_smollm2", "hub", "load", "tiny_random"]


@dataclass(frozen=True)
class GenerationSettings:
    """How a model is prompted: the ``detect`` group's prompt_format, max_new_tokens, batch_size, share_prefix."""
    prompt_format: str = "auto"
    max_new_tokens: int = 256
    batch_size: int = 32
    share_prefix: bool = True
    progress: bool = True

    @classmethod
    def of(cls, detect_cfg) -> "GenerationSettings":
        return cls(prompt_format=detect_cfg.prompt_format, max_new_tokens=detect_cfg.max_new_tokens,
                   batch_size=detect_cfg.batch_size, share_prefix=detect_cfg.share_prefix)


def build_backend(node, where: str = "generation"):
    """The backend a ``generation`` node names (``_target_``), checked first (``check_backend``)."""
    from detect.cli import instantiate

    if hasattr(node, "open"):  # already built (Hydra instantiates a nested _target_ first)
        return node
    return instantiate(check_backend(node, where), _convert_="all")


def check_backend(node, where: str = "generation"):
    """A ``generation`` node checked against its class without building it: a missing required setting, a missing
    or misnamed target, a setting of the wrong type or range is one line naming the key under ``where``."""
    from omegaconf import DictConfig, OmegaConf

    if not isinstance(node, DictConfig):
        node = OmegaConf.create(dict(node))
    name = node.get("name", "?")
    missing = [key for key in node if OmegaConf.is_missing(node, key)]
    if missing:
        raise InputError(f"{where}={name} needs {where}.{missing[0]}=<...> (for openai: the served model's id)")
    from detect.validate import check_node

    check_node(OmegaConf.to_container(node, resolve=True), where=where, what=f"{where} {name}",
               example="detect.models.hf.LocalModels", ignore=("name",))
    return node
