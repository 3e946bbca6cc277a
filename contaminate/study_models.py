"""The one place a study opens models at run time: each checkpoint as a ``detect.models.LanguageModel``, the
reference model, the semantic encoder, each opened on first use and kept for the whole study (a torchtune recipe's
setup, done lazily so that a study whose cells are all cached loads nothing).

    models = StudyModels(cfg.detect, placement, {"contaminated": (ref, id), "clean": (base, id)}, serving, detectors,
                         base=base)
    models.model("clean")          # its LanguageModel: generation and log-probabilities, each memoised, so the
                                   # clean model's statistics of the members serve its cells and the reference
    models.reference               # detect.reference_model resolved: which model, its cells' id, oracle or not
    models.reference_model()       # that model: the clean one itself where it is the clean model, else a third
    models.placements()            # where each model really ran, for the manifest

``serving(checkpoint_ref)`` is the training backend's: a local checkpoint opens with ``generation=local``
(transformers here), a fine-tune at an API with ``generation=openai`` on the API's connection. A reference model
given by hub id or folder opens locally, as ``python -m detect`` opens it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from detect.models import GenerationSettings, LanguageModel, ModelRef, digest
from detect.runtime import Placement


@dataclass(frozen=True)
class Reference:
    """The reference ratio's reference model in a study (``detect.reference_model``)."""
    kind: str                 # base (the model the run started from), clean (the study's clean model), model (a hub
    # id or folder), none (no reference: the reference ratio is left out)
    ref: ModelRef | None
    same_as: str | None       # the study's checkpoint it is ("clean", "contaminated"), whose model serves it; None:
    # a model of its own
    key: str | None           # the id its cells are keyed by: that checkpoint's own id, else its ref's digest
    oracle: bool              # the study's clean model: the contaminated model's own twin, which no practitioner has

    def describe(self) -> dict:
        """``runtime.reference_model`` in the manifest."""
        found = {"kind": self.kind, "model": None if self.ref is None else self.ref.name,
                 "path": None if self.ref is None else self.ref.path, "oracle": self.oracle, "same_as": self.same_as}
        if self.ref is not None and self.ref.adapter:
            found["adapter"] = self.ref.adapter
        return found


def resolve_reference(setting, refs: dict[str, tuple[ModelRef, str]], base: ModelRef, *,
                      clean_is_twin: bool = True) -> Reference:
    """``detect.reference_model`` (``detect.pipeline.reference_setting``: None, ``base``, ``clean`` or a ModelRef)
    against the study's models: ``base`` is the model the run started from, the clean model itself where there is no
    background (then the oracle); a given model is the clean or contaminated one where it has its weights. The clean
    model is the oracle where it is the contaminated model's twin before the leak (``clean_is_twin``); a planted run
    whose clean cells read the untouched base model beside a background (``plant.control=base``) has no twin."""
    if setting is None:
        return Reference("none", None, None, None, False)
    if setting == "clean":
        return Reference("clean", refs["clean"][0], "clean", refs["clean"][1], clean_is_twin)
    kind, ref = ("base", base) if setting == "base" else ("model", setting)
    for checkpoint in ("clean", "contaminated"):
        known = refs[checkpoint][0]
        if known == ref or (kind == "model" and (known.path, known.adapter) == (ref.path, ref.adapter)):
            return Reference(kind, known if kind == "model" else ref, checkpoint, refs[checkpoint][1],
                             checkpoint == "clean" and clean_is_twin)
    return Reference(kind, ref, None, digest(asdict(ref)), False)


class StudyModels:
    def __init__(self, detect_cfg, placement: Placement, refs: dict[str, tuple[ModelRef, str]],
                 serving: Callable[[ModelRef], object], detectors: list, *, base: ModelRef,
                 clean_is_twin: bool = True) -> None:
        # the run's detect block: how its models generate, its reference model, its semantic scorer
        self.detect, self.placement, self.refs, self.serving = detect_cfg, placement, refs, serving
        self.clean_is_twin = clean_is_twin  # the clean model is the contaminated one's twin before the leak
        self.detectors = detectors  # built once by the study's setup: DC-PDD's token counts serve every cell
        self.settings = GenerationSettings.of(detect_cfg)
        self.base = base  # the model the run started from
        self._models: dict[str, LanguageModel] = {}
        self._semantic = None
        self._reference: Reference | None = None

    def model(self, checkpoint: str) -> LanguageModel:
        """A checkpoint's model (``contaminated`` or ``clean``), opened once."""
        if checkpoint not in self._models:
            ref = self.refs[checkpoint][0]
            self._models[checkpoint] = self.serving(ref).open(ref, self.settings, self.placement)
        return self._models[checkpoint]

    @property
    def reference(self) -> Reference:
        """``detect.reference_model`` resolved against this study's models, once."""
        if self._reference is None:
            from detect.pipeline import reference_setting

            self._reference = resolve_reference(reference_setting(self.detect, study=True), self.refs,
                                                self.base, clean_is_twin=self.clean_is_twin)
        return self._reference

    def reference_model(self) -> LanguageModel | None:
        """The reference model, opened once: the clean (or contaminated) checkpoint's own model where it is that
        model, so its memoised statistics serve (no model opened twice); else a third model, opened on first use."""
        reference = self.reference
        if reference.ref is None:
            return None
        if reference.same_as is not None:
            return self.model(reference.same_as)
        if "reference" not in self._models:
            if reference.kind == "model":  # a hub id or folder: transformers here, as python -m detect opens it
                from detect.models.hf import LocalModels

                backend = LocalModels()
            else:  # the base model: as the trainer serves its checkpoints (an API's base at that API)
                backend = self.serving(reference.ref)
            self._models["reference"] = backend.open(reference.ref, self.settings, self.placement)
        return self._models["reference"]

    def semantic(self):
        from detect.detectors.time_travel.scores import SemanticScorer

        if self._semantic is None and self.detect.semantic_model:
            self._semantic = SemanticScorer(self.detect.semantic_model, placement=self.placement)
        return self._semantic

    def counters(self, checkpoint: str) -> dict[str, int]:
        """Tokens generated and scored so far by a checkpoint's model (or ``reference``'s; 0 for one not opened)."""
        model = self._models.get(checkpoint)
        return model.counters() if model else {"generated_tokens": 0, "scored_tokens": 0}

    def placements(self) -> dict:
        """Where each model that was opened really is (device or device map, dtype); servers have none."""
        found = {checkpoint: model.placement() for checkpoint, model in self._models.items() if model.placement()}
        if self._semantic is not None:
            found["semantic"] = self._semantic.placement()
        return found
