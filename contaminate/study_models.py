"""The one place a study builds models at run time: each checkpoint's weights, generator and token statistics,
and the semantic encoder, each loaded on first use by the run's ``runtime`` policy and kept for the whole study.

    models = StudyModels(cfg, placement, {"contaminated": (ref, id), "clean": (base, id)}, cache, api=False)
    models.generator("clean")      # LocalGenerator (or the API's) answering a repeated prompt from memory
    models.statistics("clean")     # TokenStatistics: the clean model's memo serves its cells and the reference
    models.placements()            # where each model really ran, for the manifest

Nothing is loaded for a study whose cells are all cached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from detect.models import ModelRef, digest
from detect.runtime import Placement, placement_of


class RememberingGenerator:
    """A generator that answers a (prompt, answer shape) it has seen from memory: ChatGPT-Cheat?'s prompt is the
    same for the two cells of one model and one split, and is generated once."""

    def __init__(self, generate) -> None:
        self.generate, self.memory = generate, {}
        self.stop_reasons: list = []

    def __call__(self, prompts: Sequence[str], shapes: Sequence | None = None) -> list[str]:
        keys = list(zip(prompts, shapes if shapes is not None else [None] * len(prompts)))
        missing = [key for key in dict.fromkeys(keys) if key not in self.memory]
        if missing:
            new_prompts, new_shapes = [p for p, _ in missing], [s for _, s in missing]
            texts = self.generate(new_prompts, new_shapes) if any(new_shapes) else self.generate(new_prompts)
            reasons = getattr(self.generate, "stop_reasons", None) or [None] * len(missing)
            self.memory.update(zip(missing, zip(texts, reasons)))
        self.stop_reasons = [self.memory[key][1] for key in keys]
        return [self.memory[key][0] for key in keys]


class StudyModels:
    def __init__(self, cfg, placement: Placement, refs: dict[str, tuple[ModelRef, str]], cache: Path, *,
                 api: bool = False) -> None:
        self.cfg, self.placement, self.refs, self.cache = cfg, placement, refs, cache
        self.api = api  # the contamination backend's: a model at an API has no logits and generates over HTTP
        self._loaded: dict[str, tuple] = {}
        self._generators: dict[str, RememberingGenerator] = {}
        self._statistics: dict = {}
        self._semantic = None
        self._detectors = None

    def local(self, checkpoint: str) -> tuple:
        """(model, tokenizer) of a local checkpoint, loaded once."""
        from detect.models import load

        if checkpoint not in self._loaded:
            self._loaded[checkpoint] = load(self.refs[checkpoint][0], self.placement)
        return self._loaded[checkpoint]

    def generator(self, checkpoint: str) -> RememberingGenerator:
        if checkpoint not in self._generators:
            self._generators[checkpoint] = RememberingGenerator(self._build_generator(checkpoint))
        return self._generators[checkpoint]

    def _build_generator(self, checkpoint: str):
        cfg, ref = self.cfg, self.refs[checkpoint][0]
        if self.api:  # chat models are prompted as chat, base models raw
            from detect.openai_generate import OpenAIGenerator

            base = self.refs["clean"][0]
            return OpenAIGenerator(
                model=ref.name, base_url=cfg.contaminate.base_url, api_key_env=cfg.contaminate.api_key_env,
                prompt_format="chat" if cfg.contaminate.chat else "raw", max_tokens=cfg.detect.max_new_tokens,
                max_retries=cfg.contaminate.max_retries,
                cache_path=self.cache / "api" / f"{digest([ref.name, base.path, cfg.contaminate.chat])}.jsonl")
        from detect.generate import LocalGenerator

        return LocalGenerator.from_config(*self.local(checkpoint), cfg.detect)

    def statistics(self, checkpoint: str):
        """The checkpoint's TokenStatistics (local models only), kept for every cell that reads it."""
        from detect.logits import TokenStatistics

        if checkpoint not in self._statistics:
            self._statistics[checkpoint] = TokenStatistics(*self.local(checkpoint))
        return self._statistics[checkpoint]

    def semantic(self):
        from detect.scores import SemanticScorer

        if self._semantic is None and self.cfg.detect.semantic_model:
            self._semantic = SemanticScorer(self.cfg.detect.semantic_model, placement=self.placement)
        return self._semantic

    def detectors(self) -> list:
        """The run's detectors (``detect.detectors``), built once: DC-PDD's token counts serve every cell."""
        from detect.detectors import build

        if self._detectors is None:
            self._detectors = build(self.cfg.detect.detectors)
        return self._detectors

    def counters(self, checkpoint: str) -> dict[str, int]:
        """Tokens generated and scored so far by a checkpoint's local models (0 for what is not loaded)."""
        generator = self._generators.get(checkpoint)
        statistics = self._statistics.get(checkpoint)
        return {"generated_tokens": getattr(getattr(generator, "generate", None), "generated_tokens", 0),
                "scored_tokens": statistics.scored_tokens if statistics else 0}

    def placements(self) -> dict:
        """Where each model that was loaded really is (device or device map, dtype)."""
        found = {checkpoint: placement_of(model) for checkpoint, (model, _) in self._loaded.items()}
        if self._semantic is not None:
            found["semantic"] = placement_of(self._semantic.encoder)
        return found
