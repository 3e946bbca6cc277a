"""Generation backends for ``python -m detect``, each built from the ``backend`` config group with ``_target_``:

    opened = instantiate(cfg.backend).open(cfg, placement)    # conf/backend/{local,openai}.yaml
    opened.generate(prompts, shapes)                          # completions
    opened.model, opened.tokenizer                            # the local model for the logit detectors, or None

- ``LocalBackend``: transformers in this process, on the ``model`` group's weights, placed by ``runtime``.
- ``OpenAIBackend``: an OpenAI-compatible server (OpenAI, vLLM, ``transformers serve``, Ollama); no logits, so
  the logit detectors are skipped. Completions are cached as they arrive (``detect/openai_generate.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from detect.errors import InputError


@dataclass
class Opened:
    generate: Callable
    name: str                  # the model's name in rows and summaries
    path: str                  # its folder, hub id or server
    model: Any = None          # local backends: the loaded model and tokenizer
    tokenizer: Any = None
    placements: dict = field(default_factory=dict)


class LocalBackend:
    def __init__(self, name: str = "local") -> None:
        self.name = name

    def open(self, cfg, placement) -> Opened:
        from detect.cli import instantiate
        from detect.generate import LocalGenerator
        from detect.models import load
        from detect.runtime import placement_of

        model_ref = instantiate(cfg.model)
        model, tokenizer = load(model_ref, placement)
        return Opened(LocalGenerator.from_config(model, tokenizer, cfg.detect), model_ref.name, model_ref.path,
                      model, tokenizer, {"model": placement_of(model)})


class OpenAIBackend:
    def __init__(self, name: str = "openai", **connection) -> None:
        self.name, self.connection = name, connection

    def open(self, cfg, placement) -> Opened:
        from detect.models import cache_dir
        from detect.openai_generate import OpenAIGenerator

        generator = OpenAIGenerator.from_config(cfg.backend, cfg.detect, cache_dir=cache_dir())
        return Opened(generator, cfg.backend.model, cfg.backend.base_url or "https://api.openai.com/v1")


def open_backend(cfg, placement) -> tuple[Any, Opened]:
    """The configured backend (``cfg.backend``) and what it opened; a missing required setting is one line."""
    from omegaconf import OmegaConf

    from detect.cli import instantiate

    missing = [key for key in cfg.backend if OmegaConf.is_missing(cfg.backend, key)]
    if missing:
        raise InputError(f"backend={cfg.backend.name} needs backend.{missing[0]}=<...> "
                         f"(for openai: the served model's id)")
    if not cfg.backend.get("_target_"):
        raise InputError(f"backend {cfg.backend.get('name')} has no _target_; name its class, e.g. "
                         f"_target_: detect.backends.LocalBackend")
    backend = instantiate(cfg.backend)
    return backend, backend.open(cfg, placement)
