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

from contaminate.controls import Control, build_control
from contaminate.group_configs import check_composed, group_config, planted_groups
from contaminate.harm import TemplateOf, check_pass_at_1, check_prompt_format, executable_problems, group_pass_at_1
from contaminate.regime import Regime, background_documents, chat_renderer, check_fits, token_counter
from contaminate.regime.plant import (
    PlantedGroup,
    group_positions,
    never_planted_group,
    plant_tail,
    planted_stream,
)
from contaminate.regime.stream import Document, build_stream, stream_counts
from contaminate.reports.planted import ANSWER_POOLS, plant_report
from contaminate.sampling import PLANT_FIX, GroupDraw
from contaminate.stages import GroupView, Layout, RunResult
from contaminate.study_models import StudyModels
from detect.datasets import Example
from detect.detectors import instance_scores
from detect.detectors.time_travel import LEAK_SCORES, SCORES
from detect.detectors.time_travel.follow import answer_classes
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


def planted_regime(plant_cfg, draw: GroupDraw, groups: Sequence[PlantedGroup], tokenizer, source, fmt,
                   formats: dict, datasets: dict, control: Control, *, seed: int, max_length: int | None) -> Regime:
    """The one training run: each planted group's documents as its format lays them out, the background cut as a
    study cuts it, the stream (one pass), the control's, each group's token share (checked against
    ``plant.max_share_per_exposure``) and the twin's stream where drawn. ``plant_cfg``: the run's ``plant`` block;
    ``fmt``: the run's format object; ``formats`` and ``datasets``: each group's format object and dataset config
    (``group_configs.group_formats``); ``control``: ``plant.control``; ``max_length``: ``contaminate.max_length``."""
    count_tokens = token_counter(tokenizer)

    def documents_of(group: PlantedGroup, instances: Sequence[Example]) -> list[Document]:
        own, dataset = formats.get(group.name, fmt), datasets[group.name]
        return own.documents(instances, dataset, draw.split_of(group), count_tokens=count_tokens,
                             max_length=max_length, chat=chat_renderer(tokenizer, own.name))

    documents = {g.name: documents_of(g, draw.groups[g.name]) for g in groups if g.planted}
    if max_length:
        check_fits([d for group in documents.values() for d in group], count_tokens, max_length)
    background, described = background_documents(source, count_tokens, max_length)
    tail = plant_tail(plant_cfg)  # the end of the background kept clean of copies: equal recency
    stream = planted_stream(documents, groups, background, seed=seed, tail=tail)
    placed = group_positions(stream, documents, count_tokens)
    limit = plant_cfg.get("max_share_per_exposure")
    for group in groups:
        if group.planted and limit is not None:
            share = placed[group.name]["token_share"] / group.exposures
            if share > limit:
                raise InputError(
                    f"background {source.name} ({described.get('tokens', 0):,} tokens) gives each exposure of group "
                    f"{group.name} {share:.2%} of the training tokens, above plant.max_share_per_exposure={limit:g}; "
                    f"use a larger background, raise background.max_tokens, or plant fewer instances (plant.n)")
    background_alone = build_stream([], background, exposures=0, seed=seed) if background else None
    counts = {key: value for key, value in stream_counts(stream, count_tokens).items() if key != "members_token_share"}
    counts["template"] = shared_template(documents, draw, groups, datasets, count_tokens, counts["training_tokens"])
    losses = sorted({formats.get(g.name, fmt).loss for g in groups if g.planted} - {None})
    if losses:  # what the loss covers (the instruction format's: the answer only)
        counts["loss"] = losses[0] if len(losses) == 1 else "; ".join(losses)
    twin = twin_counts = None
    if draw.twins:  # the same stream with each planted group's documents replaced by its stand-ins' (same slots)
        stand_ins = {g.name: twin_documents(documents[g.name], draw.twins[g.name], formats.get(g.name, fmt),
                                            datasets[g.name], draw.split_of(g),
                                            count_tokens=count_tokens,
                                            chat=chat_renderer(tokenizer, formats.get(g.name, fmt).name))
                     for g in groups if g.planted}
        for name, docs in stand_ins.items():  # the same slots need the same document count, group by group
            if len(docs) != len(documents[name]):
                raise InputError(f"the swap twin's group {name} lays out as {len(docs)} documents where the planted "
                                 f"one has {len(documents[name])} (format={formats.get(name, fmt).name}); use "
                                 f"plant.control=background or base")
        twin = planted_stream(stand_ins, groups, background, seed=seed, tail=tail)
        twin_counts = {key: value for key, value in stream_counts(twin, count_tokens).items()
                       if key != "members_token_share"}
    return Regime(f"planted ({plant_cfg.name})", fmt.name, described, 1, None,
                  [d for g in groups if g.planted for d in documents[g.name]], stream,
                  control.trained_with(background_alone), counts, groups=documents, placed=placed, twin=twin,
                  twin_counts=twin_counts,
                  formats={name: own.name for name, own in formats.items() if own.name != fmt.name},
                  losses={g.name: formats.get(g.name, fmt).loss for g in groups if g.planted})


def template_tokens(documents: Sequence[Document], instances: dict[int, Example], dataset, count_tokens) -> int:
    """The tokens of ``documents`` beyond their instances' own field values: what every planted document of the
    format shares (title, split, field names, a dump's JSON keys and header, a chat template). Each field value is
    counted on its own, so a word split differently in context moves the count by a token or so."""
    from contaminate.regime.formats import instance_fields

    shared = 0
    for document in documents:
        own = sum(count_tokens(value) for member in document.members
                  for value in instance_fields(instances[member], dataset).values() if value)
        shared += max(count_tokens(document.text) - own, 0)
    return shared


def shared_template(documents: dict[str, list[Document]], draw: GroupDraw, groups: Sequence[PlantedGroup],
                    datasets: dict, count_tokens, training_tokens: int) -> dict:
    """The planted documents' shared template over the stream (plant.json ``stream.template``): every copy of every
    group teaches it, so high doses teach the template that the low doses' members are read in (issue 34)."""
    tokens = sum(group.exposures * template_tokens(documents[group.name],
                                                   {e.instance_id: e for e in draw.groups[group.name]},
                                                   datasets[group.name], count_tokens)
                 for group in groups if group.planted)
    return {"tokens": tokens, "share": round(tokens / training_tokens, 6) if training_tokens else 0.0}


def twin_documents(planted: Sequence[Document], stand_ins: Sequence[Example], fmt, dataset, split: str, *,
                   count_tokens, chat) -> list[Document]:
    """The swap twin's documents for one group: document for document, as many stand-ins as the planted document
    holds instances, laid out by the format as one document (a dump's lines under its header; one instance
    elsewhere), so that the twin has the planted group's document count and slots, within a few tokens."""
    documents, taken = [], 0
    for document in planted:
        chunk = list(stand_ins[taken:taken + len(document.members)])
        taken += len(document.members)
        documents += fmt.documents(chunk, dataset, split, count_tokens=count_tokens, max_length=None, chat=chat)
    return documents


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

    def finish(self, layout: Layout, contaminated, results: dict, models: StudyModels, timings: dict,
               decontamination: dict | None, out_dir: Path, *, datasets: dict, checkpoints: tuple) -> RunResult:
        """plant.json and plant.md: each group's share and place in the stream, each score's within-model AUC."""
        timings = {**{k: v for k, v in timings.items() if k != "total_s"},
                   **{f"detect_{name}_s": manifest["timings"]["detect_s"] for name, (_, _, manifest) in
                      results.items()}, "total_s": timings["total_s"]}
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
        return RunResult(groups={name: summary for name, (summary, _, _) in results.items()}, plant=record)

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


def within_model_auc(rows: dict[str, list[dict]], model: str = "contaminated") -> dict[str, float]:
    """Each instance score's AUC, the group's members against the never-planted group, both under ``model`` (higher
    score = member, as the detectors orient them); with them the guided completions' ROUGE-L and semantic scores and
    the leak reading's (``*_leak``, an oracle reading) where they were generated. ``model="clean"``: the same groups
    under the run's clean model (the untouched base model with plant.control=base), how far apart they are without
    the leak: with 8 against 8 an AUC of 0.62 is within chance (results/pilot_cpu's base row)."""
    from contaminate.calibration.statistics import auc

    def guided(cell: str) -> list[dict]:
        return [r for r in rows.get(cell, []) if r.get("instruction") == "guided"]

    members, non_members = guided(f"{model}_x_members"), guided(f"{model}_x_non_members")
    found = {}
    for name in (*instance_scores(), *SCORES, *LEAK_SCORES):
        pos = [r[name] for r in members if r.get(name) is not None]
        neg = [r[name] for r in non_members if r.get(name) is not None]
        if pos and neg and len(pos) == len(members) and len(neg) == len(non_members):
            found[name] = round(auc(pos, neg), 4)
    return found


def replicas(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """Algorithm 2's judge labels of the contaminated model's completions, per reading (``guided``: the paper's
    instruction; ``leak``: the first piece inside the leak's rendering, an oracle reading) and pool (the group's
    members, the never-planted group, the known non-members: the label rate a practitioner sees where nothing was
    trained): n, exact, near-exact. Readings and pools not generated are left out."""
    found: dict[str, dict] = {}
    for reading in ("guided", "leak"):
        for pool, cell in ANSWER_POOLS:
            labels = [r["judge"] for r in rows.get(cell, []) if r.get("instruction") == reading
                      and r.get("completion") is not None]
            if labels:
                found.setdefault(reading, {})[pool] = {"n": len(labels), "exact": labels.count("exact"),
                                                       "near_exact": labels.count("near_exact")}
    return found


def answers(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """The contaminated model's answers by class (detect/detectors/time_travel/follow.py), per reading and pool (the
    group's members, the never-planted group, the known non-members): n, classes, follow rate. A guided answer that is
    not a continuation (a restated first piece, an echoed instruction, nothing) says nothing about membership."""
    found: dict[str, dict] = {}
    for reading in ("guided", "general", "leak"):
        for pool, cell in ANSWER_POOLS:
            block = answer_classes([r for r in rows.get(cell, []) if r.get("instruction") == reading])
            if block["n"]:
                found.setdefault(reading, {})[pool] = block
    return found


def plant_record(plant_cfg, groups, draw: GroupDraw, planted: Regime, contaminated, results: dict,
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
                    "within_model_auc": within_model_auc(results[g.name][1]) if g.name in results else None,
                    # the same groups under the clean model: the AUC before (or without) the leak
                    "clean_model_auc": within_model_auc(results[g.name][1], "clean") if g.name in results else None,
                    "replicas": replicas(results[g.name][1]) if g.name in results else None,
                    "answers": answers(results[g.name][1]) if g.name in results else None}
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
