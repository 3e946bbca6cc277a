"""A planted run: several groups of one split planted at different doses into one training stream, then every
detector on every group, so that one training run gives a dose-response curve with a same-model control.

    python -m contaminate +dataset=synth_nli plant=dose_ladder background=offline     # x0, x1, x4, x16, x64

The stages are a study's, run by the one recipe (contaminate/run.py ``Run``); this module is the planted run's
design (``PlantedStream``: what it trains, each group's view, plant.json) and the stream's planning:

1. setup: the groups (``contaminate/regime/plant.py``), then the study's components, checked before any work;
2. sample (contaminate/sampling.py, as a study's two groups are drawn): the groups, disjoint and label-balanced from
   one split (``disjoint_pools``), plus the other split's pool and known non-members; a group may plant another
   dataset or format (contaminate/group_configs.py): each dataset's groups are drawn from its own split, with its own
   never-planted group;
3. contaminate: one stream, every planted group's documents its exposures among the background (one pass, in
   order), trained once; the control (``plant.control``) as a study's (``background``: the background alone, or
   the base model without one), ``base`` (the untouched base model: nothing more trained), ``none`` (nothing more
   trained and no clean cell read: the within-model comparison below needs no second model), or ``twin``, the swap
   twin: the same stream with each planted group replaced by disjoint stand-ins of the
   same split at the same slots (same tokens within a few, same documents, same steps, same schedule), trained
   once more: the fair run-level control for every format, instruction included;
4. detect: per planted group, the study's five cells with that group as the members and the never-planted group
   (exposures 0) as the non-members: the same model, the same split, the same distribution. The never-planted
   group's cells are computed once (the cell cache) and serve every group;
5. write: one study folder per planted group under ``groups/<name>/`` (manifest, summary, rows, report: what
   ``python -m contaminate.calibrate`` reads; each group's exposures is its dose), and ``plant.json`` /
   ``plant.md`` beside them: each group's share of the training tokens, where its copies fell, and each instance
   score's within-model AUC per group (one model: one unit, so no interval; calibrate over seeds and draws for one).

The unit of every number is still one (member draw, training seed) pair: the groups of one run share it. A
calibration over planted runs counts each run once per dose (its groups are that run's doses).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from hydra.utils import get_class
from omegaconf import OmegaConf

from contaminate.analyses.within_model import answers, replicas, within_model_auc
from contaminate.controls import Control, build_control
from contaminate.group_configs import check_composed, group_config, planted_groups
from contaminate.harm import TemplateOf, check_pass_at_1, check_prompt_format, executable_problems, group_pass_at_1
from contaminate.regime import Regime, planted_regime
from contaminate.regime.plant import PlantedGroup, never_planted_group, plant_tail
from contaminate.reports.planted import plant_report
from contaminate.sampling import PLANT_FIX, GroupDraw
from contaminate.stages import GroupResult, GroupView, Layout, RunResult
from contaminate.study_models import StudyModels
from detect.errors import InputError


def pass_at_1_datasets(asked, planted: Sequence[str]) -> list[str]:
    """The datasets ``plant.pass_at_1`` asks pass@1 of: none (false), every planted one (true), or those it lists
    (each checked in one line against what the run plants)."""
    if asked is None or asked is False:
        return []
    if asked is True:
        return list(planted)
    names = [asked] if isinstance(asked, str) else list(asked)
    unknown = [name for name in names if name not in planted]
    if unknown:
        raise InputError(f"plant.pass_at_1 names {', '.join(map(str, unknown))}, which this run does not plant; use "
                         f"true, false or some of {', '.join(planted)}")
    return names


def check_planted(cfg, groups: Sequence[PlantedGroup]) -> None:
    """What a planted run needs of the sample settings (before the study's own checks, whose sample.n_members and
    n_non_members a planted run does not use)."""
    check_composed(cfg, groups)
    smallest = min(groups, key=lambda g: g.n)
    if cfg.sample.n_detect > smallest.n:
        raise InputError(f"sample.n_detect={cfg.sample.n_detect} is more than group {smallest.name}'s {smallest.n} "
                         f"instances; each group's cells detect on n_detect of them: lower it or raise plant.n")


class PlantedStream:
    """How a planted run (``plant``) trains and reads its groups (contaminate/run.py's ``Run`` runs the stages): every
    planted group in one stream, trained once (and its twin, with plant.control=twin); then one study per planted
    group, its members against its dataset's never-planted group under the same model, written to
    ``groups/<name>/``, and ``plant.json`` / ``plant.md`` beside them. A study's design is ``study.OneGroup``; each
    plant of groups names this one (``plant.design``, conf/plant/<name>.yaml)."""

    fix = PLANT_FIX  # what to lower where a split has too few instances for the groups

    def __init__(self, cfg) -> None:
        """Set up from the run's config (its plant's groups, conf/plant/<name>.yaml); the stages below read what it
        keeps, never the config."""
        self.groups = planted_groups(cfg)
        if not self.groups:
            raise InputError(f"plant={cfg.plant.get('name')} plants groups and plant.groups is empty; give "
                             f"plant.groups=[{{exposures:0}},{{exposures:4}}] or use plant=none for a study")
        check_planted(cfg, self.groups)
        # what the stages read of the config: the plant block, the run's dataset, seeds and stream cut
        self.plant, self.dataset_key, self.seed = cfg.plant, cfg.dataset.key, cfg.seed
        self.member_draw, self.max_length = cfg.sample.draw, cfg.contaminate.get("max_length")
        # plant.control (contaminate/controls.py): the background alone is trained as a study's control; the twin
        # instead of it; base: neither (the untouched base model's clean cells; the within-model comparison needs no
        # second model); none: neither, and no clean cell read (a base model read six times over six draws is still
        # one clean unit: the profile reads it once, on the whole benchmark, with python -m detect)
        self.control = build_control(cfg.plant.get("control"))
        # plant.pass_at_1: every model's pass@1 on its groups' problems after detection (a code benchmark's): true,
        # every planted dataset's; a list, those datasets' only (a run that also plants one without tests)
        datasets = {}
        for group in self.groups:
            dataset = group_config(cfg, group).dataset
            datasets.setdefault(dataset.key, dataset)
        self.pass_at_1 = pass_at_1_datasets(cfg.plant.get("pass_at_1", False), list(datasets))
        # plant.sandbox: the boundary model-written code runs behind (none: the guard alone, recorded in plant.json);
        # plant.pass_at_1_format: how each problem is asked (stripped, raw, chat)
        self.harm_options = {"sandbox": cfg.plant.get("sandbox", "bwrap"),
                             "prompt_format": cfg.plant.get("pass_at_1_format", "chat")}
        if self.pass_at_1:
            check_pass_at_1({key: datasets[key] for key in self.pass_at_1},
                            {cfg.dataset.key: cfg.get("split")}, sandbox=self.harm_options["sandbox"])
        self.trained = [g for g in self.groups if g.planted]
        # the group whose split the checkpoint's key names: the first planted group of the run's dataset, else the
        # first planted group; post-training trains on the run's dataset's other split (contaminate/training/post.py)
        own = next((g for g in self.trained if g.dataset is None), None)
        post_train = (cfg.get("post_train") or {}).get("name", "none")
        if own is None and post_train != "none":
            raise InputError(f"post_train={post_train} trains on the run's dataset {cfg.dataset.key}, and every "
                             f"planted group plants another; plant a group of {cfg.dataset.key} or use "
                             f"post_train=none")
        self.lead = own or self.trained[0]
        self.pairs = [(g, never_planted_group(self.groups, g)) for g in self.trained]  # each studied against its x0
        self.never_planted = None  # the other split's pool: as large as each dataset's first never-planted group

    def with_dose(self, cfg):
        """The run's config with the dose its groups give: one pass over the stream in its order
        (``contaminate.exposures`` 1 to the trainer; each group's copies are its exposures)."""
        if cfg.contaminate.get("_target_") and get_class(cfg.contaminate._target_).api:
            raise InputError(f"plant={cfg.plant.name} builds a token-counted stream on a local model; use "
                             f"contaminate=full or lora")
        if cfg.contaminate.get("exposures") is not None:
            raise InputError(f"plant={cfg.plant.name} gives each group its exposures; drop contaminate.exposures="
                             f"{cfg.contaminate.exposures} (a planted stream is trained once, in its order)")
        cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
        OmegaConf.update(cfg, "contaminate.exposures", 1)
        if cfg.contaminate.get("epochs") is not None:  # null once exposures is given (conf/contaminate/full.yaml)
            raise InputError(f"plant={cfg.plant.name} trains one pass over its stream; drop contaminate.epochs="
                             f"{cfg.contaminate.epochs}")
        return cfg

    def lay_out(self, draw: GroupDraw, tokenizer, setup, formats: dict, datasets: dict) -> Layout:
        """The planted stream: each group's documents among the background, where they fell, the control's; the
        split (``lead``'s) and the groups the checkpoint's key names."""
        if self.pass_at_1:  # pass@1 in chat asks the base model's template: one line before anything trains
            check_prompt_format(self.harm_options["prompt_format"], TemplateOf(tokenizer))
        trained = planted_regime(self.plant, draw, self.groups, tokenizer, setup.background, setup.format, formats,
                                 datasets, self.control, seed=self.seed, max_length=self.max_length)
        key = {"plant": [g.describe() for g in self.groups],
               "groups": {g.name: [e.instance_id for e in draw.groups[g.name]] for g in self.groups}}
        names = {g.name: trained.formats.get(g.name, trained.format) for g in self.groups}
        everyone = [e for g in self.trained for e in draw.groups[g.name]]
        return Layout(draw, tokenizer, trained, everyone, draw.split_of(self.lead), names, key)

    def view(self, layout: Layout, group: PlantedGroup, x0: PlantedGroup, template: str | None, contaminated,
             decontamination: dict | None, out_dir: Path) -> GroupView:
        """One planted group's view of the run: the models as its dose sees them (its regime, its exposures, its
        format's template), its folder, and its place in the stream (its manifest's ``plant`` block); the data-side
        check is the run's (plant.json), not a group's."""
        planted, name = layout.trained, self.plant.name
        hyperparameters = {k: v for k, v in contaminated.hyperparameters.items() if k != "exposures"}
        view = replace(contaminated, regime=planted.view(group, name, self.control),
                       template=template,
                       hyperparameters={**hyperparameters, "exposures": group.exposures})
        plant = {"name": name, "group": group.describe(), "control_group": x0.describe(),
                 "groups": [g.describe() for g in self.groups], "placed": planted.placed[group.name]}
        return GroupView(view, out_dir / "groups" / group.name, manifest={"plant": plant})

    def finish(self, layout: Layout, contaminated, results: dict[str, GroupResult],
               models: StudyModels, timings: dict, decontamination: dict | None, out_dir: Path, *,
               datasets: dict, checkpoints: tuple) -> RunResult:
        """plant.json and plant.md: each group's share and place in the stream, each score's within-model AUC."""
        timings = {**{k: v for k, v in timings.items() if k != "total_s"},
                   **{f"detect_{name}_s": result.manifest["timings"]["detect_s"] for name, result in results.items()},
                   "total_s": timings["total_s"]}
        record = plant_record(self.plant, self.groups, layout.draw, layout.trained, contaminated, results, timings,
                              control=self.control, dataset_key=self.dataset_key, seed=self.seed,
                              member_draw=self.member_draw)
        record["reference_model"] = models.reference.describe()
        record["decontamination"] = decontamination
        if self.pass_at_1:
            record["pass_at_1"] = self.harm(layout.draw, datasets, checkpoints, models, out_dir)
            record["pass_at_1_options"] = self.harm_options  # the prompt format and the boundary (or the opt-out)
        (out_dir / "plant.json").write_text(json.dumps(record, indent=2))
        (out_dir / "plant.md").write_text(plant_report(record))
        return RunResult(groups={name: result.summary for name, result in results.items()}, plant=record)

    def harm(self, draw: GroupDraw, datasets: dict, checkpoints: tuple, models: StudyModels, out_dir: Path) -> dict:
        """pass@1 of each model read (``checkpoints``: the contaminated one, and the clean one where read) on each
        group's problems (``datasets``: each group's dataset config); every completion and outcome in
        pass_at_1.json beside plant.json."""
        by_dataset: dict[str, dict] = {}  # dataset key -> its groups' instances, by group name
        for group in self.groups:
            if draw.dataset_of[group.name] in self.pass_at_1:
                by_dataset.setdefault(draw.dataset_of[group.name], {})[group.name] = draw.groups[group.name]
        problems = {key: executable_problems(datasets[next(iter(groups))], draw.splits[key][0])
                    for key, groups in by_dataset.items()}  # each split's problems read once, for every model
        found, details = {}, {}
        for checkpoint in checkpoints:
            found[checkpoint], details[checkpoint] = {}, {}
            for key, groups in by_dataset.items():
                for name, block in group_pass_at_1(models.model(checkpoint), problems[key], groups,
                                                   **self.harm_options).items():
                    found[checkpoint][name] = {k: block[k] for k in ("pass_at_1", "passed", "n")}
                    details[checkpoint][name] = {i: {"completion": block["completions"][i], "outcome": outcome,
                                                     "class": block["classes"][i]}
                                                 for i, outcome in block["results"].items()}
        (out_dir / "pass_at_1.json").write_text(json.dumps(details, indent=1))
        return found


def plant_record(plant_cfg, groups, draw: GroupDraw, planted: Regime, contaminated, results: dict[str, GroupResult],
                 timings: dict, *, control: Control, dataset_key: str, seed: int, member_draw: int) -> dict:
    """plant.json: the run's groups, each one's place in the stream and within-model AUCs, its checkpoints and
    control. ``plant_cfg``: the run's ``plant`` block; ``dataset_key``, ``seed``, ``member_draw``: the run's."""
    parents = (contaminated.post_train or {}).get("parents", {})  # post_train: the models before it
    return {
        "plant": plant_cfg.name, "dataset": dataset_key, "format": planted.format,
        "background": planted.background, "seed": seed, "draw": member_draw,
        "tail": plant_tail(plant_cfg),  # the last fraction of the background after every copy (equal recency)
        "unit": f"one model (draw {member_draw}, seed {seed}): no interval",
        "groups": [{**g.describe(), **planted.placed.get(g.name, {}),
                    "within_model_auc": within_model_auc(results[g.name].rows) if g.name in results else None,
                    # the same groups under the clean model: the AUC before (or without) the leak
                    "clean_model_auc": within_model_auc(results[g.name].rows, "clean") if g.name in results else None,
                    "replicas": replicas(results[g.name].rows) if g.name in results else None,
                    "answers": answers(results[g.name].rows) if g.name in results else None}
                   for g in groups],
        # the leak's own checkpoint (its steps, time and throughput); a post-trained run's final one beside it
        "stream": planted.counts, "checkpoint": parents.get("contaminated") or contaminated.record,
        "post_trained_checkpoint": contaminated.record if contaminated.post_train else None,
        "post_trained_control_checkpoint": (contaminated.control.record if contaminated.post_train
                                            and contaminated.control else None),
        "post_train_seconds": (contaminated.post_train or {}).get("seconds"),
        "control": control.describe(planted)
        + (f", post_train={contaminated.post_train['kind']}" if contaminated.post_train else ""),  # both post-trained
        "control_checkpoint": (parents["control"] if "id" in parents.get("control", {})  # before post_train
                               else contaminated.control.record if contaminated.control and not parents else None),
        "twin_stream": planted.twin_counts,
        "twin_stand_ins": {name: [e.instance_id for e in pool] for name, pool in draw.twins.items()},
        "timings": timings,
    }
