"""The control of a planted run: the clean cells' model, what is trained beside the contaminated model so that the
clean cells read a model that differs from it by the leak alone (or nothing, where the within-model comparison of
each group against its never-planted group is all a run reads).

    python -m contaminate +dataset=synth_nli plant=dose_ladder plant/control=twin

``plant.control`` is a config group Hydra composes (conf/plant/control/, ``plant/control=<name>``; ``plant.control=
<name>`` on the command line means the same), its ``_target_`` the class, built once at setup (``build_control``); a
new control is a subclass and a YAML file naming it:

- ``background`` (``BackgroundControl``, the default, and a study's): the background alone, trained in the same
  stage as the contaminated model (the regime's ``control`` stream), or the untouched base model where the run has
  no background;
- ``twin`` (``SwapTwin``): the planted stream with each planted group's instances replaced by disjoint stand-ins of
  the same split at the same slots (same documents, steps and schedule, tokens within a few), trained after the
  contaminated model and post-trained as it was: the fair run-level control for every format, instruction included;
- ``base`` (``BaseModelControl``): the untouched base model, nothing more trained;
- ``none`` (``NoControl``): nothing more trained and no clean cell read.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

from contaminate.checkpoints import Checkpoint, train_checkpoint
from detect.errors import InputError
from detect.models import digest


class Control:
    """What the clean cells read and how it is trained, asked by the run at each stage where they differ."""
    name = ""
    draws_twin = False     # the sample stage draws disjoint stand-ins for every planted group (the twin's)
    reads_clean = True     # the clean cells are read (``none``: the contaminated model's alone)
    post_control = True    # the post-training stage post-trains the control with the contaminated model
    regime_kind: str | None = None  # the regime's record of it, where not the background alone or the base model

    def __init__(self, name: str | None = None) -> None:
        self.name = name or self.name  # as conf/plant/control/<name>.yaml names it

    def trained_with(self, background_alone: list | None) -> list | None:
        """The documents trained as the control in the train stage itself, beside the contaminated model (the planted
        regime's ``control``), given the background alone in the stream's order (None without a background)."""
        return None

    def stream(self, regime) -> list | None:
        """The control's training stream as each group's view of the planted ``Regime`` records it (None: nothing
        trained)."""
        return regime.control

    def clean_is_twin(self, regime) -> bool:
        """Whether the clean model is the contaminated one's twin before the leak (the reference ratio against it is
        then an oracle's): not where it is the untouched base model beside a background."""
        return not regime.background.get("tokens")

    def describe(self, regime) -> str:
        """plant.json's ``control``."""
        return "base model"

    def after(self, contaminated, layout, setup, placement) -> Any:
        """``contaminated`` with what is trained after it (the swap twin), from the run's ``Layout``; None on a
        distributed worker."""
        return contaminated


class BackgroundControl(Control):
    """The background alone, trained as a study's control (the base model without a background)."""
    name = "background"

    def trained_with(self, background_alone: list | None) -> list | None:
        return background_alone

    def clean_is_twin(self, regime) -> bool:
        return True

    def describe(self, regime) -> str:
        return "background alone" if regime.control is not None else "base model"


class BaseModelControl(Control):
    """The untouched base model: nothing more trained."""
    name = "base"


class NoControl(Control):
    """Nothing more trained, and no clean cell read."""
    name = "none"
    reads_clean = False
    regime_kind = "none"

    def describe(self, regime) -> str:
        return "none (no clean cells)"


class SwapTwin(Control):
    """The swap twin: the planted stream (same background order, same slots, same document count, hence the same
    optimizer steps and schedule) with each planted group's instances replaced by disjoint stand-ins of the same
    split, trained like the contaminated model after it, then post-trained as it was."""
    name = "twin"
    draws_twin = True
    post_control = False  # post-trained after the twin is trained (``after``)
    regime_kind = "swap twin"

    def stream(self, regime) -> list | None:
        return regime.twin

    def clean_is_twin(self, regime) -> bool:
        return True

    def describe(self, regime) -> str:
        return "swap twin"

    def after(self, contaminated, layout, setup, placement) -> Any:
        """``contaminated`` with the swap twin as its control (trained, or reused), post-trained as the contaminated
        model was where post_train is set."""
        stage = time.time()
        contaminated = replace(contaminated, control=self.train(layout.draw, layout.trained, contaminated, setup,
                                                                placement, layout.key))
        contaminated = replace(contaminated, seconds=contaminated.seconds + time.time() - stage)
        if contaminated.control is None:
            return None
        if contaminated.post_train:  # post_train=sft|grpo: the twin post-trained as the contaminated model was
            return setup.post_train.apply_to_control(layout.draw, contaminated, setup, placement)
        return contaminated

    def train(self, draw, planted, contaminated, setup, placement, plant_key: dict) -> Checkpoint | None:
        """The twin's checkpoint (the study's control), keyed as the contaminated model's with the stand-ins and
        the twin's stream; None in a non-main process."""
        base, training = contaminated.base, setup.training
        key = {"base": asdict(base), "dataset": training.dataset.key, "split": next(iter(draw.splits.values()))[0],
               "format": training.format.name,
               "twin_of": plant_key,
               "stand_ins": {name: [e.instance_id for e in pool] for name, pool in draw.twins.items()},
               "stream": digest([(d.text, d.prompt) for d in planted.twin]), "background": planted.background,
               "hyperparameters": contaminated.hyperparameters, "seed": training.seed,
               **setup.trainer.key(placement)}
        model, folder, reused = train_checkpoint(setup.trainer, base, planted.twin, key, **training.store(placement))
        if model is None:
            return None
        return Checkpoint.finished(model, folder, reused)


def build_control(node) -> Control:
    """``plant.control``, as Hydra composed it from conf/plant/control/ (``plant/control=<name>``), built from its
    ``_target_``; one line where it is a bare name (a config composed before the control was a group) or the class is
    not a control."""
    from detect.cli import instantiate
    from detect.validate import resolve_target

    if not hasattr(node, "get"):
        raise InputError(f"plant.control={node}: the control is a config group, chosen with plant/control=<name> "
                         f"(background, twin, base or none: conf/plant/control/)")
    if not (isinstance(cls := resolve_target(node.get("_target_", ""), "plant.control"), type)
            and issubclass(cls, Control)):
        raise InputError(f"plant.control._target_={node.get('_target_')} is not a control; name a subclass of "
                         f"contaminate.controls.Control")
    return instantiate(node, _convert_="none", _recursive_=False)
