"""The one place a study opens models at run time: each checkpoint as a ``detect.models.LanguageModel``, the
semantic encoder, each opened on first use and kept for the whole study (a torchtune recipe's
setup, done lazily so that a study whose cells are all cached loads nothing).

    models = StudyModels(cfg, placement, {"contaminated": (ref, id), "clean": (base, id)}, serving, detectors)
    models.model("clean")          # its LanguageModel: generation and log-probabilities, each memoised, so the
                                   # clean model's statistics of the members serve its cells and the reference
    models.placements()            # where each model really ran, for the manifest

``serving(checkpoint_ref)`` is the training backend's: a local checkpoint opens with ``generation=local``
(transformers here), a fine-tune at an API with ``generation=openai`` on the API's connection.
"""

from __future__ import annotations

from typing import Callable

from detect.models import GenerationSettings, LanguageModel, ModelRef
from detect.runtime import Placement


class StudyModels:
    def __init__(self, cfg, placement: Placement, refs: dict[str, tuple[ModelRef, str]],
                 serving: Callable[[ModelRef], object], detectors: list) -> None:
        self.cfg, self.placement, self.refs, self.serving = cfg, placement, refs, serving
        self.detectors = detectors  # built once by the study's setup: DC-PDD's token counts serve every cell
        self.settings = GenerationSettings.of(cfg.detect)
        self._models: dict[str, LanguageModel] = {}
        self._semantic = None

    def model(self, checkpoint: str) -> LanguageModel:
        """A checkpoint's model (``contaminated`` or ``clean``), opened once."""
        if checkpoint not in self._models:
            ref = self.refs[checkpoint][0]
            self._models[checkpoint] = self.serving(ref).open(ref, self.settings, self.placement)
        return self._models[checkpoint]

    def semantic(self):
        from detect.detectors.time_travel.scores import SemanticScorer

        if self._semantic is None and self.cfg.detect.semantic_model:
            self._semantic = SemanticScorer(self.cfg.detect.semantic_model, placement=self.placement)
        return self._semantic

    def counters(self, checkpoint: str) -> dict[str, int]:
        """Tokens generated and scored so far by a checkpoint's model (0 for one not opened)."""
        model = self._models.get(checkpoint)
        return model.counters() if model else {"generated_tokens": 0, "scored_tokens": 0}

    def placements(self) -> dict:
        """Where each model that was opened really is (device or device map, dtype); servers have none."""
        found = {checkpoint: model.placement() for checkpoint, model in self._models.items() if model.placement()}
        if self._semantic is not None:
            found["semantic"] = self._semantic.placement()
        return found
