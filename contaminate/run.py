"""The lab's one recipe (``python -m contaminate``; contaminate/__main__.py is its command line). A composed config
is a run of one or more groups of members: a study (``plant=none``: one group, trained in alone or diluted, its
five cells in the run folder; contaminate/study.py ``StudyRun``) or a planted run (``plant=dose_ladder`` and the
like: several groups at several doses in one training stream, one study folder per group; contaminate/planted.py
``PlantedRun``). Either is set up once (every component built and checked before anything is read or trained),
then goes through the same stages, read top to bottom below:

    setup -> sample -> contaminate (the one checkpoint store: contaminate/checkpoints.py) -> per group: detect,
    summarize, write (contaminate/study.py ``study_group``) -> finish (a planted run's plant.json)

The dispatch lives here, not in either kind of run, so that neither imports the other's entry: planted.py builds on
study.py's stages; study.py knows nothing of planted runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from contaminate.checkpoints import is_main_process
from contaminate.planted import PlantedRun
from contaminate.regime.plant import plant_groups
from contaminate.study import Contaminated, GroupStudy, Setup, StudyRun, study_group
from contaminate.study_models import StudyModels
from detect.pipeline import write_config
from detect.runtime import Placement
from detect.runtime import from_config as placement_from


@runtime_checkable
class Run(Protocol):
    """The stages ``run_config`` reads top to bottom, as a study (``StudyRun``) and a planted run (``PlantedRun``)
    give them; ``setup`` is every component, built once when the run is made."""
    setup: Setup

    def sample(self) -> None: ...

    def contaminate(self, out_dir: Path) -> Contaminated | None: ...

    def unfinished(self, out_dir: Path) -> dict: ...

    def models(self, contaminated: Contaminated) -> StudyModels: ...

    def groups(self, contaminated: Contaminated, out_dir: Path) -> list[GroupStudy]: ...

    def finish(self, contaminated: Contaminated, results: dict, models: StudyModels, timings: dict,
               out_dir: Path) -> dict: ...


def planted_groups(cfg) -> list:
    """The run's planted groups (``plant``; [] for a study of one group), a group's dataset and format the same as
    unset where they are the run's."""
    dataset, fmt = cfg.get("dataset"), cfg.get("format")
    return plant_groups(cfg.get("plant"), dataset.key if dataset else None, fmt.name if fmt else None)


def build_run(cfg, placement: Placement | None) -> Run:
    """The setup stage: the run's kind from its groups, every component built once and checked (one line on the
    first failure), nothing read or trained. ``placement``: where its models go (None: a check of the config alone)."""
    groups = planted_groups(cfg)
    return PlantedRun(cfg, groups, placement) if groups else StudyRun(cfg, placement)


def check_config(cfg) -> Setup:
    """Every component built and checked (one line on the first failure), nothing read or trained; the machine is
    not asked (a config for a GPU checks on a CPU)."""
    return build_run(cfg, None).setup


def run_config(cfg, out_dir: Path) -> dict:
    """Everything ``python -m contaminate`` does with a composed config and a run folder; its summary (a planted
    run's: its plant record and each group's summary)."""
    started = time.time()
    out_dir = Path(out_dir)
    placement = placement_from(cfg.runtime)  # a GPU asked for where none is: one line, before anything else
    run = build_run(cfg, placement)
    if is_main_process():
        out_dir.mkdir(parents=True, exist_ok=True)
        write_config(out_dir / "config.yaml", cfg, placement)  # as composed, so that it composes again

    stage = time.time()
    run.sample()
    timings = {"sample_s": round(time.time() - stage, 2)}

    contaminated = run.contaminate(out_dir)
    if contaminated is None:  # an API dry run, or a non-main process of a distributed launch
        return run.unfinished(out_dir)
    timings["train_s"] = round(contaminated.seconds, 1)

    models = run.models(contaminated)
    results = {group.name: study_group(group, run.setup, models, placement, timings, started)
               for group in run.groups(contaminated, out_dir)}
    timings["total_s"] = round(time.time() - started, 1)
    return run.finish(contaminated, results, models, timings, out_dir)
