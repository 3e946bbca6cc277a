"""The lab's one recipe (``python -m contaminate``; contaminate/__main__.py is its command line). A composed config
is a run of groups of members, each studied against its never-planted group under the same models:

- a study (``plant=none``): two groups, its members (``sample.n_members``, trained in alone for epochs or at counted
  exposures among a background) and its non-members (``sample.n_non_members``, never trained); its five cells
  written to the run folder (contaminate/study.py ``OneGroup``);
- a planted run (``plant=dose_ladder`` and the like): several groups at several doses in one training stream, one
  study folder per planted group and plant.json beside them (contaminate/planted.py ``PlantedStream``).

``Run`` is the recipe, the same for both; its ``design`` (``Design``, the component ``plant.design`` names) is where
the two differ: the dose it trains, how the groups are laid into what is trained, each group's view of the trained
models, and what the run writes last. Read top to bottom:

    setup (every component built once and checked, nothing read or trained) -> sample (every group, one draw:
    contaminate/sampling.py; a ``GroupDraw``) -> lay_out (what is trained; a ``Layout``) -> decontaminate (the
    data-side check of it, contaminate/decontam.py) -> train (the one checkpoint store:
    contaminate/checkpoints.py; a ``Contaminated``) -> per group: detect, summarize, write (contaminate/stages.py
    ``study_group``) -> finish (a planted run's plant.json). With ``decontam.only`` it stops after decontaminate
    (decontamination.json), nothing trained

Each stage returns its record and the next reads only the records it is handed: a design keeps no state between
stages and never calls back into the ``Run``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from contaminate.checkpoints import is_main_process
from contaminate.controls import Control
from contaminate.decontam import stream_check
from contaminate.group_configs import group_formats
from contaminate.regime import chat_renderer
from contaminate.regime.layouts import LeakReader
from contaminate.regime.plant import PlantedGroup
from contaminate.sampling import GroupDraw, asked_split, sample_groups
from contaminate.stages import (
    DETECTION_ORDER,
    Contaminated,
    GroupResult,
    GroupStudy,
    GroupView,
    Layout,
    Reading,
    RunResult,
    Setup,
    check_study,
    study_group,
    train_models,
)
from contaminate.study import OneGroup
from contaminate.study_models import StudyModels
from detect.cli import instantiate
from detect.errors import InputError
from detect.pipeline import write_config
from detect.runtime import Placement
from detect.runtime import from_config as placement_from


@runtime_checkable
class Design(Protocol):
    """Where a study (``OneGroup``) and a planted run (``PlantedStream``) differ, and only there: a component Hydra
    composes (``plant.design``, conf/plant/<name>.yaml), built with the run's config and set up from it (the only
    place it reads it); each stage is handed the records it reads and keeps nothing between stages. A new design is
    a class with these members and a plant file naming it."""
    groups: list[PlantedGroup]   # every group, in the order they are drawn
    pairs: list[tuple[PlantedGroup, PlantedGroup]]  # each studied group and the never-planted group it is read against
    never_planted: dict | None  # dataset key -> its never-planted group, where not the first (sample_groups)
    control: Control         # the clean cells' model (contaminate/controls.py; a planted run's plant.control)
    fix: str                 # what to lower where a split has too few instances for the groups

    def with_dose(self, cfg): ...  # the run's config with the dose the design trains (a planted run: one pass)

    def lay_out(self, draw: GroupDraw, tokenizer, setup: Setup, formats: dict, datasets: dict) -> Layout: ...

    def view(self, layout: Layout, group: PlantedGroup, x0: PlantedGroup, template: str | None,
             contaminated: Contaminated, decontamination: dict | None, out_dir: Path) -> GroupView: ...
    # the group's models (``template``: its format's for its task), its folder, what its manifest and summary add

    def finish(self, layout: Layout, contaminated: Contaminated, results: dict[str, GroupResult],
               models: StudyModels, timings: dict, decontamination: dict | None, out_dir: Path, *,
               datasets: dict, checkpoints: tuple) -> RunResult: ...


class Run:
    """One run, stage by stage (``run_config`` reads them top to bottom). Made, it is set up: every component built
    once and checked (one line on the first failure), nothing read or trained. ``placement``: where its models go
    (None: a check of the config alone). Each stage method returns a record and reads only the records given it."""

    def __init__(self, cfg, placement: Placement | None) -> None:
        self.design = build_design(cfg)
        cfg = self.design.with_dose(cfg)  # a planted run's dose is its groups': one pass over its stream
        self.placement, self.all_groups = placement, self.design.groups
        self.setup: Setup = check_study(cfg)
        # each group's config (a planted group's own dataset and format) and format object, checked; what the stages
        # read of them (each group's reading, its format's template for its task) is kept, not the configs
        configs, self.formats = group_formats(cfg, self.all_groups, self.setup.format)
        self.readings = {name: Reading.of(group_cfg) for name, group_cfg in configs.items()}
        self.templates = {name: group_cfg.format.templates.get(group_cfg.dataset.task)
                          for name, group_cfg in configs.items()}
        self.checkpoints = DETECTION_ORDER if self.design.control.reads_clean else ("contaminated",)
        # what the sample, decontaminate and models stages read of the run's config
        self.sample_cfg, self.splits, self.detect_cfg = cfg.sample, asked_split(cfg), cfg.detect
        self.decontam_cfg = cfg.get("decontam")
        self.identity = {"dataset": cfg.dataset.key, "seed": cfg.seed, "draw": cfg.sample.draw}

    @property
    def datasets(self) -> dict:
        """Each group's dataset config, by group name (its reading's)."""
        return {name: reading.dataset for name, reading in self.readings.items()}

    @property
    def decontamination_asked_only(self) -> bool:
        """``decontam.only``: the data-side check of the stream alone, nothing trained."""
        return bool((self.decontam_cfg or {}).get("only"))

    def sample(self) -> GroupDraw:
        return sample_groups(self.all_groups, self.datasets, self.sample_cfg, splits=self.splits,
                             twin=self.design.control.draws_twin, never_planted=self.design.never_planted,
                             fix=self.design.fix)

    def lay_out(self, draw: GroupDraw) -> Layout:
        """What is trained (nothing is yet): the base model's tokenizer cuts and counts it."""
        tokenizer = self.setup.trainer.tokenizer(self.setup.training.base)
        return self.design.lay_out(draw, tokenizer, self.setup, self.formats, self.datasets)

    def decontaminate(self, layout: Layout) -> dict | None:
        """The data-side check of what ``layout`` laid out, before training (contaminate/decontam.py): every
        decontaminator on the stream, the benchmark each group's split; None where decontam.enabled is false."""
        return stream_check(self.decontam_cfg, self.identity["seed"], layout.draw, self.all_groups,
                            layout.trained.stream, self.datasets, layout.format_names, tokenizer=layout.tokenizer)

    def decontamination_only(self, decontamination: dict | None, out_dir: Path) -> RunResult:
        """``decontam.only``: the check is the run's one result (decontamination.json), nothing trained or
        detected."""
        if decontamination is None:
            raise InputError("decontam.only=true reads the stream with the decontaminators, and decontam.enabled is "
                             "false; set decontam.enabled=true")
        found = {**self.identity, "groups": [g.describe() for g in self.all_groups], "decontamination": decontamination}
        if is_main_process():
            (out_dir / "decontamination.json").write_text(json.dumps(found, indent=2))
        return RunResult(decontamination_only=found)

    def train(self, layout: Layout, out_dir: Path) -> Contaminated | None:
        """The trained models (of what ``layout`` laid out, and what the control trains after them: the swap twin),
        or reused; None for an API dry run or a non-main process of a distributed launch."""
        control = self.design.control
        contaminated = train_models(layout, self.placement, out_dir, self.setup, post_control=control.post_control)
        return None if contaminated is None else control.after(contaminated, layout, self.setup, self.placement)

    def unfinished(self, out_dir: Path) -> RunResult:
        """A dry run of an API job (its estimate), or a non-main process of a distributed launch."""
        if not is_main_process():
            return RunResult(worker=True)
        return RunResult(dry_run=json.loads((out_dir / "estimate.json").read_text()))

    def models(self, layout: Layout, contaminated: Contaminated) -> StudyModels:
        refs = {"contaminated": (contaminated.model, contaminated.record["id"]), "clean": contaminated.clean}
        # the clean model is the contaminated one's twin before the leak (the reference ratio against it an oracle's)
        # unless it is the untouched base model beside a background (plant.control=base or none)
        return StudyModels(self.detect_cfg, self.placement, refs, self.setup.serving, self.setup.detectors,
                           base=contaminated.base, clean_is_twin=self.design.control.clean_is_twin(layout.trained))

    def groups(self, layout: Layout, contaminated: Contaminated, decontamination: dict | None,
               out_dir: Path) -> list[GroupStudy]:
        """Each studied group's study: its dataset and format (the detectors read each instance as the format
        rendered it for training, its chat turns the base's), its pools, its view of the run (the models as its dose
        sees them; ``decontamination``: the data-side check, which the design puts where it is written)."""
        studies = []
        for group, x0 in self.design.pairs:
            reading, fmt = self.readings[group.name], self.formats[group.name]
            view = self.design.view(layout, group, x0, self.templates[group.name], contaminated, decontamination,
                                    out_dir)
            reader = LeakReader(fmt, reading.dataset, chat_renderer(layout.tokenizer, fmt.name))
            sampled = layout.draw.study(group, x0, reading.n_detect, reading.draw)
            studies.append(GroupStudy(group.name, reading, sampled, view, reader, self.checkpoints))
        return studies

    def finish(self, layout: Layout, contaminated: Contaminated, results: dict[str, GroupResult],
               models: StudyModels, timings: dict, decontamination: dict | None, out_dir: Path) -> RunResult:
        return self.design.finish(layout, contaminated, results, models, timings, decontamination, out_dir,
                                  datasets=self.datasets, checkpoints=self.checkpoints)


def build_design(cfg) -> Design:
    """``plant.design`` as Hydra composed it (conf/plant/none.yaml: the study's ``OneGroup``; a plant of groups:
    ``PlantedStream``), built from its ``_target_`` with the run's config; a config without a plant block is a study.
    One line where the class is not a design, or where a config composed before the design was a component plants
    groups without naming one."""
    from detect.validate import resolve_target

    plant = cfg.get("plant") or {}
    node = plant.get("design")
    if node is None:
        if plant.get("groups"):
            raise InputError("plant.groups is set and plant.design is not (a config composed before the design was a "
                             "component); add plant.design._target_=contaminate.planted.PlantedStream")
        return OneGroup(cfg)
    resolve_target(node.get("_target_", ""), "plant.design")  # no such class: one line
    design = instantiate(node, cfg, _recursive_=False)
    if not isinstance(design, Design):
        members = [*Design.__annotations__, *(name for name, value in vars(Design).items()
                                               if callable(value) and not name.startswith("_"))]
        missing = ", ".join(name for name in members if not hasattr(design, name))
        raise InputError(f"plant.design._target_={node._target_} is not a design: it has no {missing} "
                         f"(contaminate.run.Design); name contaminate.study.OneGroup or "
                         f"contaminate.planted.PlantedStream")
    return design


def check_config(cfg) -> Setup:
    """Every component built and checked (one line on the first failure), nothing read or trained; the machine is
    not asked (a config for a GPU checks on a CPU)."""
    return Run(cfg, None).setup


def run_config(cfg, out_dir: Path) -> RunResult:
    """Everything ``python -m contaminate`` does with a composed config and a run folder; what it found (one shape
    for every kind of run: ``RunResult``)."""
    started = time.time()
    out_dir = Path(out_dir)
    placement = placement_from(cfg.runtime)  # a GPU asked for where none is: one line, before anything else
    run = Run(cfg, placement)
    if is_main_process():
        out_dir.mkdir(parents=True, exist_ok=True)
        write_config(out_dir / "config.yaml", cfg, placement)  # as composed, so that it composes again

    stage = time.time()
    draw = run.sample()
    timings = {"sample_s": round(time.time() - stage, 2)}

    layout = run.lay_out(draw)
    decontamination = run.decontaminate(layout)  # before training: would decontamination have caught it?
    if run.decontamination_asked_only:  # the data-side check of the stream alone: nothing trained
        return run.decontamination_only(decontamination, out_dir)
    contaminated = run.train(layout, out_dir)
    if contaminated is None:  # an API dry run, or a non-main process of a distributed launch
        return run.unfinished(out_dir)
    timings["train_s"] = round(contaminated.seconds, 1)

    models = run.models(layout, contaminated)
    results = {group.name: study_group(group, run.setup, models, placement, timings, started)
               for group in run.groups(layout, contaminated, decontamination, out_dir)}
    timings["total_s"] = round(time.time() - started, 1)
    return run.finish(layout, contaminated, results, models, timings, decontamination, out_dir)
