"""The stages every run goes through: setup (``check_study``), train, then per group detect -> summarize ->
write, on cells whose ground truth is known; contaminate/run.py's ``Run`` runs them, for a study and a planted run
alike. The two designs that lay the groups out (``plant.design``) are contaminate/study.py's ``OneGroup`` (a study)
and contaminate/planted.py's ``PlantedStream`` (a planted run).

    python -m contaminate +dataset=synth_nli                      # see contaminate/__main__.py

In a study, members and non-members are disjoint, label-balanced pools from one split (contaminate/sampling.py). The
members are formatted (``format``) and trained into the base model in the study's regime
(``contaminate/regime/__init__.py``: alone for epochs, or counted exposures among a ``background`` corpus, with a
control trained on the background alone); then the same detectors run on five cells (with a background, "clean" is
the control; at exposures 0 every cell is clean):

| cell                         | model        | instances           | ground truth |
| contaminated x members       | contaminated | members             | contaminated |
| contaminated x non_members   | contaminated | non-members         | clean        |
| contaminated x other_split   | contaminated | the dataset's other split | clean  |
| clean x members              | base         | members             | clean        |
| clean x non_members          | base         | non-members         | clean        |

The reference ratio's reference model is ``detect.reference_model`` (conf/contaminate.yaml): ``base`` (the default),
the model the run started from, a practitioner's public model where there is a background (the clean cells' control
is another model) and the clean model itself, the oracle, where there is none; ``clean``, the clean model (the
oracle: the contaminated model's own twin before the leak); a hub id or folder; or null (none). The manifest says
which it was and whether it was the oracle (``runtime.reference_model``).

Reuse: finished work is kept in ``cache_dir`` under a hash of everything that determines it. A checkpoint is
keyed by the resolved training config (base model, dataset, split, member ids, the training texts themselves,
format, hyperparameters, seed, the device kind and precision it trains with; for a stream its documents in order)
and the training code; a control by its background stream, hyperparameters and seed alone; a cell's
rows by the model (a checkpoint's own id, so a forced retrain invalidates them), its instances (ids and content),
the detector config, the reference model (by its id, beside the setting that chose it), the device kind and dtype,
and the detector code. A rerun, or a study killed mid-way and started again, picks up whatever finished.

Where the time goes is in ``manifest.json``'s ``timings``: each stage, and per cell its logit pass, its instance
detectors (generation, scores, judge) and its partition detectors, with the tokens each generated and scored.
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import OmegaConf

from contaminate.blind_baseline import blind_baseline
from contaminate.checkpoints import Checkpoint, checkpoint_record, train_checkpoint
from contaminate.code_version import DETECTOR_CODE, code_digest
from contaminate.regime import Regime, check_regime
from contaminate.regime.background import instantiate_background
from contaminate.regime.layouts import LeakReader, build_format
from contaminate.reports.run import write_report
from contaminate.sampling import GroupDraw, Sampled
from contaminate.shift import check_shift, shift_of
from contaminate.study_models import StudyModels
from contaminate.training import TrainingBackend, instantiate_backend
from contaminate.training.local import UNKEYED
from contaminate.training.post import post_train_stage
from detect.cache import write_atomically
from detect.datasets import Example
from detect.datasets.corpus import PYDOC, STDLIB_DOCSTRINGS
from detect.datasets.sources import source_of
from detect.detectors import Detector, Evidence, read_back
from detect.detectors.base import PlainText
from detect.detectors.time_travel.follow import follow_block
from detect.errors import InputError
from detect.models import ModelRef, digest
from detect.pipeline import (
    FORMAT_CHOICE,
    check_detection,
    choose_format,
    elicit_shots,
    follow_bar,
    instruction_formats,
    instruction_setting,
    is_record,
    reference_setting,
    run_partition,
    summarize,
    uninformative,
    unjudged,
    verdicts,
    write_jsonl,
)
from detect.runtime import Placement, release_freed_memory
from detect.validate import count

log = logging.getLogger(__name__)

# (cell, checkpoint, pool, ground truth)
CELLS = (
    ("contaminated_x_members", "contaminated", "members", "contaminated"),
    ("contaminated_x_non_members", "contaminated", "non_members", "clean"),
    ("contaminated_x_other_split", "contaminated", "other_split", "clean"),
    ("clean_x_members", "clean", "members", "clean"),
    ("clean_x_non_members", "clean", "non_members", "clean"),
)
# Each model's reading of the known non-members (``sample.n_heldout`` of the split, disjoint from every pool a cell
# reads): their guided completions and instance scores (``detect.known_non_members.detectors``), the null distribution
# the threshold recipe fits on within that model (detect/judges/recipe.py; calibration validates it on ground truth).
# Not partitions: no general completion, no partition-level detector, no verdict.
KNOWN_CELLS = (
    ("contaminated_x_known_non_members", "contaminated", "known_non_members", "clean"),
    ("clean_x_known_non_members", "clean", "known_non_members", "clean"),
)
KNOWN_INSTRUCTIONS = ("guided",)  # what the recipe reads of the known non-members (Algorithm 2's judge: guided only)
# The clean model's cells run first: where the reference model is the clean model (detect.reference_model=clean, or
# base without a background), its statistics of the members and non-members then serve, from memory, as the reference
# model's for the contaminated model's cells of the same instances (a third reference model memoises its own).
DETECTION_ORDER = ("clean", "contaminated")
PACKAGES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "rouge-score", "sentence-transformers",
            "hydra-core", "contamination-lab")
OPERATIONAL = {"_target_", "force", "dry_run", "api_key_env", "max_retries", "poll_seconds", "max_poll_seconds",
               "timeout_hours",
               "usd_per_million_training_tokens"}  # contaminate keys that do not change the trained model


@dataclass(frozen=True)
class Contaminated:
    """What the train stage leaves: the base, contaminated and control models and how they came about."""
    base: ModelRef
    model: ModelRef
    folder: Path
    reused: bool
    record: dict
    regime: Regime
    template: str | None
    hyperparameters: dict
    seconds: float
    control: Checkpoint | None = None  # trained on the background alone (or a planted run's twin); None: the base
    # model is the control
    # post_train=sft|grpo (contaminate/training/post.py): model, folder, record and control are the post-trained
    # checkpoints (the base model post-trained where it was the control); this is the manifest's record of the stage
    post_train: dict | None = None

    @property
    def checkpoint(self) -> Checkpoint:
        """The contaminated model as a checkpoint (its manifest block, a post-training parent)."""
        return Checkpoint(self.model, self.folder, self.reused, self.record)

    @property
    def clean(self) -> tuple[ModelRef, str]:
        """The model of the "clean" cells and the id its cells are cached under."""
        if self.control is None:
            return self.base, digest(asdict(self.base))
        return self.control.model, self.control.record["id"]


@dataclass(frozen=True)
class Layout:
    """What the lay_out stage lays out, nothing trained yet: the draw it laid out, the base model's tokenizer that cut
    and counted it, the one training run as the train stage trains it (``trained``, a ``Regime``: a study's, or a
    planted run's stream with each group's place in it, from which each group's view is cut) and every instance in it
    (``members``), the split its checkpoint's key names (the run's dataset's, where it plants a group of it), each
    group's format name (the data-side check reads it beside ``trained.stream``) and what a planted run adds to its
    checkpoint's key (its groups)."""
    draw: GroupDraw
    tokenizer: Any
    trained: Regime
    members: list[Example]
    split: str
    format_names: dict[str, str]
    key: dict | None = None


@dataclass(frozen=True)
class RunResult:
    """What every run returns and ``python -m contaminate`` prints (contaminate/__main__.py ``say``), one shape for
    each kind of run: each studied group's summary by name (a study's one group, ``members``, whose folder is the run
    folder), a planted run's plant.json record, ``decontam.only``'s check of the stream (decontamination.json:
    nothing trained), an API dry run's estimate (nothing sent), or that this process is a worker of a distributed
    launch (the main one reports)."""
    groups: dict[str, dict] = field(default_factory=dict)
    plant: dict | None = None
    decontamination_only: dict | None = None
    dry_run: dict | None = None
    worker: bool = False


def study_cells(regime: Regime, sampled: Sampled | None = None,
                checkpoints: tuple[str, ...] = DETECTION_ORDER) -> tuple[tuple[str, str, str, str], ...]:
    """The five cells with their ground truth: at exposures 0 the "contaminated" model saw no member. A dataset of
    one split has no other-split cell, a planted run with plant.control=none no clean cell (``not_run`` says so)."""
    cells = tuple(cell for cell in CELLS if (sampled is None or cell[2] in sampled.detection)
                  and cell[1] in checkpoints)
    if regime.members_seen:
        return cells
    return tuple((cell, checkpoint, pool, "clean") for cell, checkpoint, pool, _ in cells)


def not_run(dataset_key: str, sampled: Sampled, cells: tuple = CELLS) -> dict[str, str]:
    """The study's cells that cannot exist or whose model ``cells`` does not read (plant.control=none reads no clean
    model), each with its one line (summary.json "cells_not_run")."""
    found = {cell: f"dataset {dataset_key} has one split ({sampled.split}): no other split to read"
             for cell, _, pool, _ in CELLS if pool not in sampled.detection}
    read = {checkpoint for _, checkpoint, *_ in cells}
    found |= {cell: "plant.control=none: no clean model is read (each group is compared with the never-planted "
                    "group under the same model; the base model's own reading: python -m detect)"
              for cell, checkpoint, pool, _ in CELLS if checkpoint not in read and pool in sampled.detection}
    return found


@dataclass(frozen=True)
class Setup:
    """The study's components, each built once from config (checked as it is built), as a recipe's setup does."""
    trainer: TrainingBackend  # contaminate/training: LocalFineTune or OpenAIFineTune
    serving: Callable       # checkpoint ref -> the generation backend that opens it (the trainer's)
    format: Any             # contaminate/regime/layouts.py: how the members are laid out
    background: Any         # contaminate/regime/background.py
    detectors: list[Detector]
    judge: Any
    post_train: Any = None  # contaminate/training/post.py: the stage after the leak (post_train=sft|grpo), or None
    training: Training | None = None  # what the train stage keys and stores its checkpoints by


@dataclass(frozen=True)
class Training:
    """What the train stage reads of the run's config, taken from it at setup: the base model, the run's
    dataset and format (a checkpoint's key names them), the trainer's settings as keyed (``OPERATIONAL`` and the
    logging keys left out), the seed, and the checkpoint store (``cache_dir``, ``contaminate.force``)."""
    base: ModelRef
    dataset: Any
    format: Any
    hyperparameters: dict
    seed: int
    cache_dir: str
    force: bool

    @classmethod
    def of(cls, cfg, backend: TrainingBackend) -> Training:
        keyed = {k: v for k, v in OmegaConf.to_container(cfg.contaminate, resolve=True).items()
                 if k not in OPERATIONAL and not (k == "exposures" and v is None)  # keys as before exposures
                 and not (k == "trainer" and not v)}  # the API's empty trainer block (schedule=constant)
        if "trainer" in keyed:  # how a run is logged does not change the checkpoint
            keyed["trainer"] = {k: v for k, v in keyed["trainer"].items() if k not in UNKEYED}
        if keyed.get("peft", 0) is None:  # full fine-tuning: no adapter block
            del keyed["peft"]
        keyed["backend"] = backend.name  # full, lora or openai: the manifest's and calibration's regime axis
        return cls(backend.base_model(cfg), cfg.dataset, cfg.format, keyed, int(cfg.seed), str(cfg.cache_dir),
                   bool(cfg.contaminate.force))

    def store(self, placement: Placement) -> dict:
        """``train_checkpoint``'s keywords: where checkpoints are kept, whether to train again, seed, placement."""
        return {"cache_dir": self.cache_dir, "force": self.force, "seed": self.seed, "placement": placement}


@dataclass(frozen=True)
class Reading:
    """What the detect, summarize and write stages of one group read of the run's config, taken from it at setup so
    that no stage below the setup takes the root config: the group's dataset and format (a planted group's own),
    the run's detect block and requested runtime, its seeds, its cells' size and its cache."""
    dataset: Any
    format: Any
    detect: Any
    runtime: Any
    seed: int
    draw: int
    n_detect: int
    cache_dir: Path

    @classmethod
    def of(cls, cfg) -> Reading:
        """A group's reading of its config (``group_config``: the run's, with a planted group's dataset and format)."""
        return cls(cfg.dataset, cfg.format, cfg.detect, cfg.runtime, cfg.seed, cfg.sample.draw, cfg.sample.n_detect,
                   Path(cfg.cache_dir))


@dataclass(frozen=True)
class GroupView:
    """One studied group's view of the run (a design's ``view``): the trained models as its dose sees them (its
    regime, its exposures), the folder it is written to, and what its manifest and summary add (a planted group's
    place in the stream; a study's data-side check of its stream, which a planted run writes to plant.json)."""
    contaminated: Contaminated
    folder: Path
    manifest: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GroupStudy:
    """One group's study, as the detect stage reads it: its reading of the config (a planted group's own dataset and
    format), its pools, its view of the run, and how the detectors read its instances."""
    name: str
    reading: Reading
    sampled: Sampled
    view: GroupView
    reader: LeakReader
    checkpoints: tuple[str, ...] = DETECTION_ORDER  # the models whose cells are read (plant.control=none: contaminated)


@dataclass(frozen=True)
class GroupResult:
    """What one group's study found, as written to its folder: its summary, its cells' rows by cell, its manifest."""
    summary: dict
    rows: dict[str, list[dict]]
    manifest: dict


def study_group(group: GroupStudy, setup: Setup, models: StudyModels, placement: Placement, timings: dict,
                started: float) -> GroupResult:
    """The detect, summarize and write stages of one group: its cells' rows (cached), its summary, its manifest
    (the run's ``timings`` so far, then this group's), its folder."""
    stage, view = time.time(), group.view
    cells = study_cells(view.contaminated.regime, group.sampled, group.checkpoints)
    runtime_key = "api" if setup.trainer.api else placement.key()  # what, beyond the model, keys its cells
    rows, cell_timings, cached = detect_cells(group.reading, group.sampled, models, setup.judge, runtime_key, cells,
                                              reader=group.reader)
    timings = {**timings, "detect_s": round(time.time() - stage, 1), "cells": cell_timings}
    stage = time.time()
    summary = summarize_study(group.reading, group.sampled, view.contaminated, rows, setup.detectors,
                              cells) | view.summary
    timings |= {"summarize_s": round(time.time() - stage, 2), "total_s": round(time.time() - started, 1)}
    manifest = build_manifest(group.reading, group.sampled, view.contaminated, setup.judge, placement, models,
                              cached, timings) | view.manifest
    write_outputs(view.folder, summary, manifest, rows)
    return GroupResult(summary, rows, manifest)


def check_study(cfg) -> Setup:
    """The run's config checked as a whole before any work, each component built once as it is checked (each
    failure one line naming the key to set): the trainer, the background, the detectors and the judge (a bad
    calibration path fails in a second, not after an hour of training). It comes with the dose the design trains
    (``Design.with_dose``: a planted run's one pass); the groups' sizes are the design's to check (``study.OneGroup``:
    sample.n_members and n_non_members; ``PlantedStream``: the plant's)."""
    count(cfg.seed, "seed", minimum=0, hint=" (training, cut points, bootstrap)")
    count(cfg.sample.draw, "sample.draw", minimum=0, hint=" (which draw of members; default: the seed)")
    check_shift(shift_of(cfg.sample.get("known_shift"), cfg.dataset.key), cfg.dataset)  # a shifted known pool, if asked
    if cfg.judge.get("_target_", "").endswith("RecipeJudge"):
        raise InputError("judge=recipe fits on the known non-members of the model under test; a study reads each of "
                         "its models' own (sample.n_heldout) and reports the recipe's verdicts itself (summary.json "
                         "'recipe', report.md): use judge=threshold or judge=llm for the study's judge")
    trainer = instantiate_backend(cfg.contaminate)
    trainer.check()  # its numbers, and every trainer / adapter argument

    post = post_train_stage(cfg, trainer)  # the post-training stage's settings, if any: one line before any data
    if post is not None and post.needs_other_split and len(cfg.dataset.splits) < 2:  # is read
        raise InputError(f"post_train={cfg.post_train.name} trains on the dataset's other split, and "
                         f"{cfg.dataset.key} has one split ({', '.join(cfg.dataset.splits)}); use post_train=none")
    serving = trainer.serving(cfg)  # how its checkpoints will be served (a local checkpoint: generation=local)
    fmt = build_format(cfg.format)
    background = instantiate_background(cfg.get("background"))
    check_regime(cfg, fmt, background, api=trainer.api)  # format fields, background, exposures
    detectors = check_detection(cfg)
    known_setting(cfg.detect, detectors)  # the known non-members' detectors: instance scores of this run
    reference_setting(cfg.detect, study=True)  # base, clean, a hub id or folder, or null: one line if none of them
    check_reference_corpus(detectors, background)
    return Setup(trainer, serving, fmt, background, detectors, _judge(cfg), post, Training.of(cfg, trainer))


def check_reference_corpus(detectors: Sequence[Detector], background) -> None:
    """DC-PDD's token frequencies must not be counted in the text the members are diluted in (its background): the
    training stream's own tokens would look common. One line naming the setting."""
    from detect.datasets.corpus import PACKAGE_DOCS

    name = getattr(background, "name", "none")
    named = {PYDOC: "offline", PACKAGE_DOCS: PACKAGE_DOCS}  # the named corpora that are backgrounds too: corpus -> name
    for detector in detectors:
        corpus = getattr(detector, "corpus", None)
        if corpus is None:
            continue
        source = background.describe().get("source") if name not in ("none", *named.values()) else None
        same = named.get(corpus) == name or (
            source is not None and corpus not in (*named, STDLIB_DOCSTRINGS) and str(Path(corpus).resolve()) == source)
        if same:
            raise InputError(f"detect.detectors.{detector.name}.corpus={corpus} is the study's background "
                             f"({background.name}): its token frequencies would count the dilution text; use "
                             f"corpus={STDLIB_DOCSTRINGS} (the default) or another corpus")


# --- train ----------------------------------------------------------------------------------------------------


def train_models(layout: Layout, placement: Placement, out_dir: Path, setup: Setup, *,
                 post_control: bool = True) -> Contaminated | None:
    """The contaminated checkpoint for this training config (and, with a background, its control): reused when a
    finished one exists, else trained. None for an API dry run (``estimate.json`` written) and in the non-main
    processes of a distributed launch. What is trained is ``layout.trained`` (a study's ``study_regime``, a planted
    run's stream), keyed by ``layout.members`` and ``layout.split``, with ``layout.key`` added (a planted run's groups).
    With ``post_train`` (contaminate/training/post.py) both models are then post-trained on the run's dataset's
    other split and returned in their place; ``post_control=False`` leaves the control to the caller (a planted
    run's twin: ``Control.after``)."""
    regime, key = layout.trained, layout.key
    training, backend, post = setup.training, setup.trainer, setup.post_train
    dataset, seed, base = training.dataset, training.seed, training.base
    texts = [document.text for document in regime.members]
    template = training.format.templates.get(dataset.task)
    hyperparameters = copy.deepcopy(training.hyperparameters)  # the record's own: the manifest writes it
    training_key = {"base": asdict(base), "dataset": dataset.key, "source": source_of(dataset).describe(),
                    "split": layout.split, "member_ids": [e.instance_id for e in layout.members],
                    "format": training.format.name, "template": template,
                    "texts": digest(texts),  # content, not only ids: a file may change
                    "hyperparameters": hyperparameters, "seed": seed, **backend.key(placement), **(key or {})}
    if regime.stream is not regime.members:  # a stream: its documents, order and loss masks
        training_key["stream"] = digest([(document.text, document.prompt) for document in regime.stream])
        training_key["background"] = regime.background
    if backend.dry_run(texts, out_dir):  # an API backend's estimate of what it would cost; nothing sent
        return None
    started = time.time()
    store = training.store(placement)
    control = None
    if regime.control is not None:  # the same training on the background alone: shared by every dose and format
        control_key = {"base": asdict(base), "background": regime.background,
                       "stream": digest([document.text for document in regime.control]),
                       "hyperparameters": {**hyperparameters, "exposures": 0}, "seed": seed, **backend.key(placement)}
        control_model, control_folder, control_reused = train_checkpoint(backend, base, regime.control, control_key,
                                                                         **store)
        if control_model is None:
            return None
        control = Checkpoint.finished(control_model, control_folder, control_reused)
    if regime.members_seen:
        model, folder, reused = train_checkpoint(backend, base, regime.stream, training_key, **store)
        if model is None:
            return None
    else:  # exposures 0: the contaminated model is the control
        model, folder, reused = control.model, control.folder, control.reused
    seconds = time.time() - started
    record = checkpoint_record(folder)
    contaminated = Contaminated(base, model, folder, reused, record, regime, template, hyperparameters, seconds,
                                control)
    if post is None:
        return contaminated
    return post.apply(layout.draw, contaminated, setup, placement, control=post_control)


# --- detect ---------------------------------------------------------------------------------------------------


def _judge(cfg):
    from detect.cli import instantiate

    return instantiate(cfg.judge)


def study_recipe(known, partition_size: int, cell_rows: dict[str, list[dict]], detectors: Sequence[Detector],
                 cells: tuple) -> dict | None:
    """Each model's recipe (detect/judges/recipe.py), fitted on its own known non-members' guided rows for Algorithm
    2's rule at the cells' size (``partition_size``; ``known``: the run's ``detect.known_non_members``), and its
    verdict on each of that model's cells (summary.json "recipe"); a model whose known non-members are too few for
    the budget gets the recipe's one-line refusal, or, with ``known.narrow``, where they bound the rule's near-exact
    part alone, that part's fit, saying so (``fit_narrowed``). None without known cells."""
    from detect.judges.recipe import fit_narrowed, fit_recipe, label
    from detect.judges.threshold import alg2_verdict, exact_score

    if not any(cell in cell_rows for cell, *_ in KNOWN_CELLS):
        return None
    alg2 = next((d for d in detectors if d.name == "alg2"), None)
    if alg2 is None:  # the recipe is Algorithm 2's thresholds: off with it (no guided completion was generated)
        return None
    rule = (alg2.min_exact, alg2.min_near_exact)
    found: dict = {"rule": list(rule), "budget": known.budget, "models": {}, "cells": {}}
    for cell, checkpoint, *_ in KNOWN_CELLS:
        if cell not in cell_rows:  # that model not read (plant.control=none: no clean model)
            continue
        rows = [r for r in cell_rows[cell] if r.get("instruction") == "guided"]
        fitting = fit_narrowed if known.get("narrow") else fit_recipe
        try:
            fit = fitting([exact_score(r["reference"], r["completion"], r["rouge_l"]) for r in rows],
                          partition_size=partition_size, rule=rule, budget=known.budget, exact_share=known.exact_share)
        except InputError as refusal:
            found["models"][checkpoint] = {"refused": str(refusal), "n": len(rows)}
            continue
        found["models"][checkpoint] = fit
        fitted = (fit["rule"]["min_exact"], fit["rule"]["min_near_exact"])  # the rule asked, or its near-exact part
        for name, cell_checkpoint, *_ in cells:
            if cell_checkpoint == checkpoint:
                guided = [r for r in cell_rows[name] if r.get("instruction") == "guided"]
                labels = [label(fit, exact_score(r["reference"], r["completion"], r["rouge_l"]), r["rouge_l"])
                          for r in guided]
                found["cells"][name] = {"exact": labels.count("exact"), "near_exact": labels.count("near_exact"),
                                        "contaminated": alg2_verdict(labels, min_exact=fitted[0],
                                                                     min_near_exact=fitted[1])}
    return found


def known_setting(detect_cfg, detectors: Sequence[Detector]) -> list[Detector] | None:
    """The detectors a study runs on its known non-members (``detect.known_non_members``), checked in one line: None
    where that reading is off; each named detector must be an instance score of the run (one that is disabled is
    left out). ``detect_cfg``: the run's ``detect`` block."""
    known = detect_cfg.get("known_non_members")
    if not known or not known.get("enabled"):
        return None
    names = list(known.get("detectors") or [])
    by_name = {d.name: d for d in detectors}
    from detect.detectors import registry

    for name in names:
        cls = registry().get(name)
        if cls is None or cls.level != "instance" or not cls.scores or "known_non_members" in cls.needs:
            scoring = sorted(n for n, c in registry().items() if c.level == "instance" and c.scores
                             and "known_non_members" not in c.needs)
            raise InputError(f"detect.known_non_members.detectors names {name}, which is not an instance score that "
                             f"reads no known non-members; use some of {', '.join(scoring)}")
    return [by_name[name] for name in names if name in by_name]


def known_cells(detect_cfg, sampled: Sampled, detectors: Sequence[Detector]) -> tuple:
    """KNOWN_CELLS where the study reads its known non-members (the setting on, and some drawn), else ()."""
    if known_setting(detect_cfg, detectors) is None or not sampled.known_non_members.get(sampled.split):
        return ()
    return KNOWN_CELLS


def detect_cells(reading: Reading, sampled: Sampled, models: StudyModels, judge, runtime_key: str | dict,
                 cells: tuple = CELLS, *, reader=None) -> tuple[dict[str, list[dict]], dict, list[str]]:
    """Every cell's rows (each cached under its own key), the time and tokens each took, the cells reused; with
    them the known non-members' cells (``KNOWN_CELLS``: guided completions and the instance scores only).
    ``reader``: how the detectors read an instance (``LeakReader`` of the format; None: its plain text). The known
    non-members are read by the models ``cells`` reads (plant.control=none: the contaminated one only)."""
    cache = reading.cache_dir
    reader = reader if reader is not None else PlainText()
    detector_key = {"detect": OmegaConf.to_container(reading.detect, resolve=True), "judge": judge.describe(),
                    # the format renders what the detectors read: the clean model's cells differ by format too
                    "reads": OmegaConf.to_container(reading.format, resolve=True) if reader.name != "plain text"
                    else reader.name,
                    "seed": reading.seed, "dataset": reading.dataset.key, "code": code_digest(DETECTOR_CODE),
                    "runtime": runtime_key,
                    # the reference ratio's reference model by its identity (a checkpoint's own id, else its ref's
                    # digest), not by the word that chose it: base is another model with or without a background
                    "reference": models.reference.key,
                    # data a detector reads beyond its settings (DC-PDD's corpus), by content
                    "data": {name: key for name, key in ((d.name, d.data_key()) for d in models.detectors)
                             if key is not None}}
    known = known_setting(reading.detect, models.detectors)
    if known is not None:  # the recipe reads Algorithm 2's guided completions of them, where Algorithm 2 runs
        known = [*known, *(d for d in models.detectors if d.name == "alg2")]
    also = known_cells(reading.detect, sampled, models.detectors)  # each model's known non-members, where read
    setting = instruction_setting(reading.detect)
    # ReCaLL's prefix and the performance test read the known non-members inside a cell; without them a cell's rows
    # do not depend on that pool (a shifted pool, sample.known_shift, then reuses every judged cell)
    detectors_read_known = any("known_non_members" in d.needs for d in models.detectors)
    chosen: dict[str, str] = {}  # checkpoint -> the prompt format its instructions are asked in, from its known cell
    cell_rows, timings, cached = {}, {}, []
    read = {checkpoint for _, checkpoint, *_ in cells}
    for checkpoint in (c for c in DETECTION_ORDER if c in read):
        # the known non-members first: where detect.instruction_format=follow they choose the model's prompt format
        for cell, cell_checkpoint, pool, truth in (*also, *cells):
            if cell_checkpoint != checkpoint:
                continue
            reads_known = pool == "known_non_members"
            if reads_known:  # the known non-members themselves: no prefix or comparison pool drawn from them
                instances = whole = sampled.known_non_members[sampled.split]
                split, known_pool = sampled.split, []
            else:
                (instances, split), whole = sampled.detection[pool], sampled.whole[pool]
                known_pool = sampled.known_non_members.get(split, [])
            key = {**detector_key, "model": models.refs[checkpoint][1], "split": split,
                   "ids": [e.instance_id for e in instances],
                   "instances": digest([(e.text, e.text_pair, e.label) for e in instances]),
                   "pool": digest([(e.instance_id, e.text, e.text_pair, e.label) for e in whole])}
            if detectors_read_known:  # the known non-members are in a cell's key only where a detector reads them
                # under "heldout", their name in the keys of every cell cached before issue 70 named them one way
                key["heldout"] = digest([(e.instance_id, e.text, e.text_pair, e.label) for e in known_pool])
            if reads_known:
                key["known_non_members"] = {"instructions": list(KNOWN_INSTRUCTIONS),
                                            "detectors": [d.name for d in known]}
            asked = chosen.get(checkpoint) or (None if setting in ("follow", "model") else setting)
            if asked is not None and not reads_known:
                key["instruction_format"] = asked
            path = cache / "cells" / f"{digest(key)}.jsonl"
            started = time.time()
            if path.is_file():
                rows = [json.loads(line) for line in path.read_text().splitlines()]
                cached.append(cell)
                timings[cell] = {"total_s": round(time.time() - started, 2), "cached": True}
            else:
                log.info("detecting %s: %d instances on the %s model", cell, len(instances), checkpoint)
                rows, timings[cell] = detect_cell(reading, models, checkpoint, instances, whole, split, judge, reader,
                                                  known_pool, detectors=known if reads_known else None,
                                                  prompt_format=asked)
                timings[cell]["total_s"] = round(time.time() - started, 2)
                write_atomically(path, lambda scratch: write_jsonl(scratch, rows))  # never half a cell
                release_freed_memory()  # the next cell's tensors have other sizes (detect/runtime.py)
            if reads_known:
                choice = next((r for r in rows if r.get("detector") == FORMAT_CHOICE), None)
                if choice is not None:
                    chosen[checkpoint] = choice["chosen"]
            ref = models.refs[checkpoint][0]
            cell_rows[cell] = [{**row, "model": ref.name, "checkpoint": checkpoint, "cell": cell, "ground_truth": truth}
                               for row in rows]
    return cell_rows, timings, cached


def detect_cell(reading: Reading, models: StudyModels, checkpoint: str, instances: list[Example], whole: list[Example],
                split: str, judge, reader=None, known_non_members: Sequence[Example] = (),
                detectors: Sequence[Detector] | None = None, prompt_format: str | None = None
                ) -> tuple[list[dict], dict]:
    """One cell: ``detect.pipeline.run_partition`` on the checkpoint's model, the instance detectors on
    ``instances`` and the partition detectors on ``whole``, with ``models.reference_model()`` as the reference
    (``detect.reference_model``: by default the base model, which is the clean model where there is no background;
    the clean model's own cells against itself have a reference ratio of 0). ``detectors``: a known non-members'
    cell's (their guided completions and these instance scores only); None: the study's, every instruction.
    ``prompt_format``: how the guided and general instructions are asked (the model's known cell chose it). A known
    cell reads its guided prompts in every format ``detect.instruction_format`` allows and keeps the rows of the one
    the model follows more (``choose_format``), with a ``FORMAT_CHOICE`` row saying which and each format's rate."""
    known = detectors is not None
    detectors = models.detectors if detectors is None else detectors
    needed = any("reference" in detector.needs for detector in detectors)
    evidence = Evidence(reading.dataset, split, instances, whole, model=models.model(checkpoint),
                        reference=models.reference_model() if needed else None, seed=reading.seed,
                        reader=reader if reader is not None else PlainText(), known_non_members=list(known_non_members))
    third = needed and models.reference.ref is not None and models.reference.same_as is None
    before, reference_before = models.counters(checkpoint), models.counters("reference")
    if known:  # the recipe reads their ROUGE-L, not a judge's labels: an LLM judge is not paid for them
        judge = unjudged
    if known:
        formats = instruction_formats(evidence.model, instruction_setting(reading.detect))
        found = {name: run_partition(evidence, detectors, judge=judge, detect_cfg=reading.detect,
                                     semantic=models.semantic(), instructions=KNOWN_INSTRUCTIONS, prompt_format=name)
                 for name in formats}
        choice = choose_format({name: rows for name, (rows, _) in found.items()}, follow_bar(reading.detect))
        rows, timing = found[choice["chosen"]]
        rows = [*rows, {"level": "partition", "detector": FORMAT_CHOICE, **choice, "dataset": reading.dataset.key,
                        "split": split}]
        timing["formats_read"] = list(formats)
    else:
        rows, timing = run_partition(evidence, detectors, judge=judge, detect_cfg=reading.detect,
                                     semantic=models.semantic(), prompt_format=prompt_format)
    after = models.counters(checkpoint)
    timing.update({name: after[name] - before[name] for name in after})
    if third:  # a reference model of its own: the tokens it scored for this cell
        timing["reference_scored_tokens"] = (models.counters("reference")["scored_tokens"]
                                             - reference_before["scored_tokens"])
    return rows, timing


# --- summarize and report -------------------------------------------------------------------------------------


def summarize_study(reading: Reading, sampled: Sampled, contaminated: Contaminated, cell_rows: dict[str, list[dict]],
                    detectors: list[Detector], cells: tuple = CELLS) -> dict:
    """Per cell every detector's outcome and whether it is right; per detector the share of cells right; each
    model's recipe from its own known non-members (``study_recipe``)."""
    regime = contaminated.regime.describe()
    summary = {"dataset": reading.dataset.key, "split": sampled.split, "other_split": sampled.other_split,
               "base_model": contaminated.base.name, "backend": contaminated.hyperparameters["backend"],
               "format": reading.format.name,
               "seed": reading.seed, "draw": reading.draw,
               "regime": {key: regime[key] for key in ("name", "format", "exposures", "epochs", "control",
                                                       "members_token_share") if key in regime}
               | {"background": regime["background"]["name"]}, "cells": {}}
    bar = follow_bar(reading.detect)
    follows = model_follow(cell_rows, bar, elicit_shots(reading.detect))
    for cell, checkpoint, pool, truth in cells:
        cell_summary = summarize(cell_rows[cell], detectors, seed=reading.seed, follow=follows.get(checkpoint),
                                 follow_bar=bar)
        summary["cells"][cell] = {
            "checkpoint": checkpoint, "instances": pool, "split": sampled.detection[pool][1], "ground_truth": truth,
            **cell_summary,
            "correct": {name: flagged == (truth == "contaminated") for name, flagged in verdicts(cell_summary).items()},
        }
    verdict_names = next(iter(summary["cells"].values()))["correct"].keys()
    # Can the texts alone, with no model, tell the members from the non-members? (contaminate/blind_baseline.py)
    if min(len(sampled.members), len(sampled.non_members)) >= 2:
        summary["blind_baseline"] = {**blind_baseline([e.full_text for e in sampled.members],
                                                      [e.full_text for e in sampled.non_members],
                                                      seed=reading.draw), "draw": reading.draw}
    summary["accuracy"] = {name: sum(c["correct"][name] for c in summary["cells"].values()) / len(cells)
                           for name in verdict_names}
    if follows:  # each model's follow rate on its known non-members: its cells' Algorithm 1 / 2 are read against it
        summary["follow"] = follows
    # the cells whose verdict read answers that mostly did not answer: counted right or wrong by the rule's outcome
    # above, said beside it ("alg2 5/5, 2 uninformative"), never read as a clean model's
    unread = uninformative_counts(summary["cells"])
    if unread:
        summary["uninformative"] = {name: unread[name] for name in verdict_names if name in unread}
    recipe = study_recipe(reading.detect.known_non_members, reading.n_detect, cell_rows, detectors, cells)
    if recipe is not None:
        summary["recipe"] = recipe
    missing = not_run(reading.dataset.key, sampled, cells)
    if missing:
        summary["cells_not_run"] = missing
    return summary


def uninformative_counts(cells: dict[str, dict]) -> dict[str, int]:
    """Each verdict's cells read from answers that mostly did not answer (Algorithm 1 and 2's: their model's guided
    answers; Algorithm 1's also the partition's general answers, ``detect.pipeline.uninformative``)."""
    unread: dict[str, int] = {}
    for cell in cells.values():
        for cls, block in read_back(cell):
            if cls.follows_instruction and uninformative(cell, cls):
                for name in cls.verdicts(block):
                    unread[name] = unread.get(name, 0) + 1
    return unread


def model_follow(cell_rows: dict[str, list[dict]], bar: float, shots: int = 0) -> dict[str, dict]:
    """Each model's follow rate on its known non-members (``KNOWN_CELLS``' guided answers, follow.py), where it read
    them: the rate its cells' Algorithm 1 / 2 verdicts are read against (below ``bar``: uninformative), with the
    worked examples each prompt was asked with (``shots``: detect.elicit.shots, 0 the paper's zero-shot prompts)."""
    found = {}
    for cell, checkpoint, *_ in KNOWN_CELLS:
        guided = [row for row in cell_rows.get(cell, []) if row.get("instruction") == "guided"]
        block = follow_block(guided, on="known non-members", bar=bar)
        choice = next((r for r in cell_rows.get(cell, []) if r.get("detector") == FORMAT_CHOICE), None)
        if block is not None:  # with the prompt format its instructions were asked in, and each format's rate
            found[checkpoint] = block | {"shots": shots} | ({"prompt_format": choice["chosen"],
                                                             "by_format": choice["by_format"]} if choice else {})
    return found


def build_manifest(reading: Reading, sampled: Sampled, contaminated: Contaminated, judge, placement: Placement,
                   models: StudyModels, cached_cells: list[str], timings: dict) -> dict:
    seed = reading.seed
    return {
        "base_model": asdict(contaminated.base), "dataset": OmegaConf.to_container(reading.dataset, resolve=True),
        "split": sampled.split, "other_split": sampled.other_split,
        "member_ids": [e.instance_id for e in sampled.members],
        "non_member_ids": [e.instance_id for e in sampled.non_members],
        "detection_ids": {pool: [e.instance_id for e in instances]
                          for pool, (instances, _) in sampled.detection.items()},
        # the known non-members each model read (KNOWN_CELLS): the recipe's null distribution; [] where none
        "known_non_member_ids": [e.instance_id for e in sampled.known_non_members.get(sampled.split, [])]
        if known_cells(reading.detect, sampled, models.detectors) else [],
        "format": {"name": reading.format.name, "template": contaminated.template,
                   "example": contaminated.regime.members[0].text},
        "regime": contaminated.regime.describe(),
        "contaminate": contaminated.hyperparameters,
        "seeds": {"sampling": reading.draw, "training": seed, "cuts": seed, "bootstrap": seed},
        "checkpoint": contaminated.checkpoint.manifest(),
        "control_checkpoint": None if contaminated.control is None else contaminated.control.manifest(),
        # post_train=sft|grpo: kind, settings, data ids, steps, each parent's record and each post-trained one's
        # (checkpoint and control_checkpoint above are the post-trained models the cells read); None: no stage
        "post_train": contaminated.post_train,
        "runtime": {"requested": OmegaConf.to_container(reading.runtime, resolve=True),
                    "resolved": placement.describe(),
                    # where each model of this run really was (the reference model where it is a third one)
                    "models": models.placements(),
                    # which model the reference ratio read (detect.reference_model) and whether it is the oracle:
                    # the clean model, the contaminated model's own twin before the leak
                    "reference_model": models.reference.describe(),
                    "training": contaminated.record.get("placement")},
        "cached_cells": cached_cells, "detect": OmegaConf.to_container(reading.detect, resolve=True),
        "judge": judge.describe(), "packages": _versions(), "git_commit": _git_commit(), "timings": timings,
    }


def write_outputs(out_dir: Path, summary: dict, manifest: dict, cell_rows: dict[str, list[dict]]) -> None:
    contaminated_folder = Path(manifest["checkpoint"]["folder"])
    out_dir.mkdir(parents=True, exist_ok=True)  # a planted run's groups/<name>/
    link = out_dir / "checkpoint"
    if not link.exists():
        link.symlink_to(contaminated_folder, target_is_directory=True)
    for name in ("train_log.json", "loss.png", "job.json"):
        if (contaminated_folder / name).is_file():
            shutil.copy(contaminated_folder / name, out_dir / name)
    rows = [row for cell, *_ in (*CELLS, *KNOWN_CELLS) for row in cell_rows.get(cell, [])]
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    write_jsonl(out_dir / "results.jsonl", [row for row in rows if row.get("level") != "partition"])
    write_jsonl(out_dir / "partition.jsonl", [row for row in rows if row.get("level") == "partition"
                                              and not is_record(row)])  # skips and format choices: summary.json
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out_dir / "report.md", summary, manifest)


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _versions() -> dict[str, str | None]:
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions
