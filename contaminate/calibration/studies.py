"""Gathering: every finished study under some folders, as instances (one per cell x instance, with its ground
truth and scores) and partitions (one per cell, with every registered detector's verdicts and statistics)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from detect.detectors import describe, instance_scores, read_back
from detect.detectors.time_travel import LEAK_SCORES
from detect.errors import InputError
from detect.judges.threshold import exact_score
from detect.pipeline import SCORES, verdicts

KNOWN_SUFFIX = "_known_non_members"  # contaminate/stages.py's KNOWN_CELLS


def unit_of(draw: int | None, seed: int) -> tuple[int, int]:
    """The independent unit: (member draw, training seed). Instances of one unit share a model and its members; a
    study from before draws were set apart drew with its seed."""
    return (seed if draw is None else draw, seed)


@dataclass
class Instance:
    """One instance of one cell of one study: its guided (and general) row and its ground truth."""
    study: str
    seed: int
    condition: str               # every setting of the study but the seed, as a key
    cell: str
    positive: bool
    guided: dict
    general: dict | None
    observation: str = ""        # the model that answered + the prompt: equal for a clean cell shared by studies
    judge: str = "threshold"     # the judge the study ran (its labels are in guided["judge"])
    scores: dict[str, float] = field(default_factory=dict)
    draw: int | None = None      # the member draw (sample.draw); None: the seed's (studies before draws were set apart)

    @property
    def unit(self) -> tuple[int, int]:
        return unit_of(self.draw, self.seed)

    @property
    def exact_score(self) -> float:
        """ROUGE-L, or 1.0 for texts equal after normalisation: what the judge's exact label compares."""
        return exact_score(self.guided["reference"], self.guided["completion"], self.guided["rouge_l"])

    @property
    def known(self) -> bool:
        """A known non-member (a study's ``KNOWN_CELLS``): the recipe's null distribution, no partition's instance."""
        return self.cell.endswith(KNOWN_SUFFIX)

    @property
    def model(self) -> str:
        """Which model answered (its checkpoint id, or the base model's record, with the detector's settings): the
        same for every cell and study that read one model, so that a clean model counts once."""
        if not self.observation:  # built by hand
            return f"{self.study}:{self.guided.get('checkpoint')}"
        return json.dumps(json.loads(self.observation)[0])


@dataclass
class Partition:
    """One cell of one study as a partition: every partition-level detector's verdict and statistic on it."""
    study: str
    seed: int
    condition: str
    cell: str
    positive: bool
    verdicts: dict[str, bool]
    statistics: dict[str, float]  # larger = more contaminated, for a partition-level ROC
    observation: str = ""         # equal for a clean cell shared by studies (same model, instances, detector)
    draw: int | None = None

    @property
    def unit(self) -> tuple[int, int]:
        return unit_of(self.draw, self.seed)


def needs(name: str) -> str:
    """What a detector needs of the model: the README's and the report's "needs" column (from the registry)."""
    return describe(name)


def cell_partition(cell: dict) -> tuple[dict[str, bool], dict[str, float]]:
    """A study cell's partition verdicts and statistics (summary.json), from every registered detector's block:
    Algorithm 1 (1 - p per score), Algorithm 2 (replica count, exact ones first), ChatGPT-Cheat? (best replica
    ROUGE-L; strict and lenient verdicts), the sharded likelihood test (1 - p), and any detector added since."""
    statistics = {name: value for cls, block in read_back(cell)
                  for name, value in cls.statistics(block, cell["n_instances"]).items()}
    return verdicts(cell), statistics


STUDY_FILES = ("manifest.json", "summary.json", "results.jsonl")  # what calibration reads of a study
PLANT_FILES = ("plant.json", "plant.md")  # a planted run's own record, beside its groups' study folders


def has(path: Path) -> bool:
    """A study file is there, as written or gzip-compressed (``--keep-studies`` commits them compressed)."""
    return path.is_file() or path.with_name(path.name + ".gz").is_file()


def read_text(path: Path) -> str:
    if path.is_file():
        return path.read_text()
    with gzip.open(path.with_name(path.name + ".gz"), "rt") as file:
        return file.read()


def read_json(path: Path):
    return json.loads(read_text(path))


def keep_studies(studies: Sequence[str | Path], out: Path) -> Path:
    """What calibration reads of each study (manifest, summary, rows), gzip-compressed under ``out/studies/``, so
    that ``python -m contaminate.calibrate out/studies`` recomputes the calibration without the runs folder (no
    checkpoint, no cache). Studies are named by their path below the deepest folder they share. A planted run's
    ``plant.json`` and ``plant.md`` (its groups' token shares, positions and times) go beside its groups' folders, as
    written (contaminate/reports/planted.py reads them)."""
    studies = [Path(s) for s in studies]

    def planted_run(study: Path) -> Path | None:  # <run>/groups/<group>/ beside <run>/plant.json
        run = study.parent.parent
        return run if study.parent.name == "groups" and (run / "plant.json").is_file() else None

    # named from the runs' folders, so that one planted run keeps its groups/ level and its plant.json
    anchors = list(dict.fromkeys(planted_run(s) or s for s in studies))
    root = Path(os.path.commonpath(anchors)) if len(anchors) > 1 else anchors[0].parent
    target = Path(out) / "studies"
    for study in studies:
        folder = target / study.relative_to(root)
        folder.mkdir(parents=True, exist_ok=True)
        for name in STUDY_FILES:
            if has(study / name):  # mtime 0: the same studies compress to the same bytes
                with open(folder / f"{name}.gz", "wb") as raw, \
                        gzip.GzipFile(filename=name, mode="wb", fileobj=raw, mtime=0) as file:
                    file.write(read_text(study / name).encode())
        run = planted_run(study)
        for name in PLANT_FILES if run is not None else ():
            if (run / name).is_file():
                shutil.copyfile(run / name, target / run.relative_to(root) / name)
    return target


def find_studies(folders: Sequence[str | Path]) -> list[Path]:
    """Every finished study (a folder with results.jsonl and manifest.json, or their .gz) under the given folders."""
    found: list[Path] = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise InputError(f"{folder}: no such folder; give study or multirun folders (runs/...)")
        found += sorted(p.parent for pattern in ("results.jsonl", "results.jsonl.gz") for p in folder.rglob(pattern)
                        if has(p.parent / "manifest.json"))
    found = list(dict.fromkeys(p.resolve() for p in found))
    if not found:
        raise InputError(f"no finished study under {', '.join(map(str, folders))} (a study folder holds "
                         f"results.jsonl and manifest.json); run python -m contaminate first")
    return found


def reference_of(manifest: dict) -> str | None:
    """The reference ratio's reference model as the study's manifest labels it (``runtime.reference_model``):
    ``base``, ``clean``, a given model's name or ``none``, with " (oracle)" where it was the study's clean model (the
    contaminated model's own twin before the leak). A study before the setting (issue 26) read its clean model."""
    reference = (manifest.get("runtime") or {}).get("reference_model")
    if reference is None:
        return None
    if isinstance(reference, str):
        return "clean (oracle)"
    name = reference["model"] if reference["kind"] == "model" else reference["kind"]
    return f"{name} (oracle)" if reference.get("oracle") else name


def condition_of(manifest: dict) -> dict:
    """The settings that define a condition: everything that shapes the study except its seed. Nested settings
    (``trainer``, ``lora``) are flattened to ``trainer.<field>``, so each is a column of the dose-response table."""
    hyperparameters = {}
    contaminate = dict(manifest["contaminate"])
    if "rank" in contaminate or "lora" in contaminate:  # a LoRA study before the peft block: keyed as one after it
        contaminate["peft"] = {"_target_": "peft.LoraConfig", "r": contaminate.pop("rank", None),
                               **(contaminate.pop("lora", None) or {})}
    for key, value in contaminate.items():
        if isinstance(value, dict):
            hyperparameters.update({f"{key}.{field}": inner for field, inner in value.items()})
        else:
            hyperparameters[key] = value
    # The dose: exposures where the study counted them, else epochs (each an exposure of every member).
    hyperparameters["exposures"] = hyperparameters.get("exposures")
    if hyperparameters["exposures"] is None:
        hyperparameters["exposures"] = hyperparameters.get("epochs")
    background = (manifest.get("regime") or {}).get("background") or {"name": "none"}
    # the reference ratio's reference model, where the study chose it (detect.reference_model): studies that differ
    # in it alone are two conditions, not a rerun (studies before the setting read the clean model, keyed as before)
    reference = (manifest.get("runtime") or {}).get("reference_model")
    chosen = {"reference": reference_of(manifest)} if isinstance(reference, dict) else {}
    # a post-training stage after the leak (post_train=sft|grpo): its kind and settings, flattened as above (studies
    # without one, and those before it existed, are keyed as before)
    post = manifest.get("post_train")
    if post and post.get("kind", "none") != "none":
        chosen["post_train"] = post["kind"]
        for key, value in (post.get("settings") or {}).items():
            if key == "name":
                continue
            if isinstance(value, dict):
                chosen.update({f"post_train.{key}.{field}": inner for field, inner in value.items()})
            else:
                chosen[f"post_train.{key}"] = value
    # a planted run's group: its plant and window are part of its condition (x16 planted early and x16 planted
    # late are two conditions of one run, not a rerun of one)
    if manifest.get("plant"):
        chosen.update(plant=manifest["plant"]["name"], group=manifest["plant"]["group"]["name"],
                      window=manifest["plant"]["group"]["window"], control=manifest["regime"].get("control"))
    return {"dataset": manifest["dataset"]["key"], "model": manifest["base_model"]["name"],
            "n_members": len(manifest["member_ids"]), "n_detect": len(manifest["detection_ids"]["members"]),
            "format": manifest["format"]["name"], "prompt_format": manifest["detect"].get("prompt_format"),
            "background": background["name"], "background_tokens": background.get("tokens"), **chosen,
            **hyperparameters}


def regime_of(settings: dict) -> str:
    """A condition's regime: how the members went in (format), among what (background), by what training
    (backend), and what training came after (post_train, where there was any: ``metadata/offline/full/grpo``).
    Calibration groups studies by it; the dose (exposures) and the seed vary within a regime."""
    regime = f"{settings['format']}/{settings.get('background', 'none')}/{settings.get('backend', '?')}"
    post = settings.get("post_train", "none")
    regime = regime if post in (None, "none") else f"{regime}/{post}"
    # a planted run's groups: a regime of their own (x0 is scored by a model that saw every other group), and a
    # window of their own (early and late in one stream are what plant=forgetting compares)
    if settings.get("plant"):
        window = settings.get("window") or [0, 1]
        regime += "/planted" + ("" if list(window) == [0, 1] else f"@{window[0]:g}-{window[1]:g}")
    return regime


def load_instances(folders: Sequence[str | Path]) -> tuple[list[Instance], dict[str, dict], list[Partition]]:
    """The instances of every study under ``folders``, each condition's settings (by condition key) and every
    study cell as a partition. A second study with the same condition and seed is a rerun, and is skipped."""
    instances, conditions, seen, duplicates, partitions = [], {}, {}, [], []
    registered = set(instance_scores())  # every detector's score of the whole instance (local models)
    for study in find_studies(folders):
        manifest = read_json(study / "manifest.json")
        settings = condition_of(manifest)
        key = json.dumps(settings, sort_keys=True, default=str)
        seeds = manifest["seeds"]
        draw, seed = seeds["sampling"], seeds.get("training", seeds["sampling"])  # the unit: (draw, seed)
        if (key, draw, seed) in seen:  # a rerun of the same study (same instances, same cached rows): count it once
            duplicates.append(f"{study} (same condition, draw and seed as {seen[key, draw, seed]})")
            continue
        seen[key, draw, seed] = study
        conditions[key] = settings
        # Studies that differ only in the contaminated model (exposure, learning rate...) share the clean
        # model's cells, row for row, from the cache: the same observation, to be counted once when pooling.
        # An observation is a model, the detector's settings (a chat prompt is another observation) and a prompt.
        detector = json.dumps(manifest["detect"], sort_keys=True)
        # The clean cells' model: the control trained on the background alone where there is one, else the base.
        control = (manifest.get("control_checkpoint") or {}).get("id")
        models = {"contaminated": [manifest["checkpoint"].get("id", str(study)), detector],
                  "clean": [control or json.dumps(manifest["base_model"], sort_keys=True), detector]}
        rows = [json.loads(line) for line in read_text(study / "results.jsonl").splitlines() if line.strip()]
        by_instance: dict[tuple, dict] = defaultdict(dict)
        for row in rows:
            by_instance[(row["cell"], row["instance_id"])][row["instruction"]] = row
        for (cell, _), pair in by_instance.items():
            guided, general = pair.get("guided"), pair.get("general")
            if guided is None:
                continue
            observation = json.dumps([models[guided["checkpoint"]], guided["split"], guided["instance_id"],
                                      guided["prompt"]])
            instance = Instance(study=str(study), seed=seed, condition=key, cell=cell,
                                positive=guided["ground_truth"] == "contaminated", guided=guided, general=general,
                                observation=observation, judge=manifest.get("judge", {}).get("name", "threshold"),
                                draw=draw)
            for score in SCORES:
                if guided.get(score) is None:
                    continue
                instance.scores[score] = guided[score]
                if general is not None and general.get(score) is not None:
                    instance.scores[f"{score}_gain"] = guided[score] - general[score]
            for score in LEAK_SCORES:  # the leak reading's, kept on the guided row (an oracle reading)
                if guided.get(score) is not None:
                    instance.scores[score] = guided[score]
            for score in (key for key in guided if key in registered):  # detectors' scores, in row order
                if guided.get(score) is not None:
                    instance.scores[score] = guided[score]
            instances.append(instance)
        summary = read_json(study / "summary.json") if has(study / "summary.json") else {}
        detected = {cell: sorted(str(i) for c, i in by_instance if c == cell) for cell in summary.get("cells", {})}
        for cell, block in summary.get("cells", {}).items():
            cell_verdicts, statistics = cell_partition(block)
            # The same computation counts once: the model, the detector's settings, the split and the instances it
            # read, not the cell's name (an exposures-0 study's "contaminated" cells are its control's cells).
            observation = json.dumps([models[block["checkpoint"]], block.get("split"), detected[cell],
                                      block.get("instances")], sort_keys=True, default=str)
            partitions.append(Partition(study=str(study), seed=seed, condition=key, cell=cell,
                                        positive=block["ground_truth"] == "contaminated", verdicts=cell_verdicts,
                                        statistics=statistics, observation=observation, draw=draw))
    for duplicate in duplicates:
        print(f"skipped {duplicate}", file=sys.stderr)
    if not any(i.positive for i in instances):
        raise InputError("no contaminated study among these: every study is at exposures 0 (a control), so no "
                         "instance was trained in; add studies with contaminate.exposures >= 1 (or epochs)")
    if all(i.positive for i in instances):
        raise InputError("no clean instance among these studies; give folders of python -m contaminate studies "
                         "(each detects on clean cells too)")
    return instances, conditions, partitions


def unfinished_studies(folders: Sequence[str | Path]) -> list[Path]:
    """Study folders that started (config.yaml written) and have no results: killed, failed or still running. A
    finished planted run's own folder (plant.json) holds its studies below it, under groups/."""
    started = {p.parent.resolve() for folder in map(Path, folders) if folder.is_dir()
               for p in folder.rglob("config.yaml") if (p.parent / "__main__.log").is_file()
               or (p.parent / ".hydra").is_dir()}
    return sorted(p for p in started if not (has(p / "results.jsonl") and has(p / "manifest.json"))
                  and not (p / "plant.json").is_file())


def blind_baselines(studies: Sequence[str]) -> dict[str, dict]:
    """Each study's blind baseline (summary.json), where it has one."""
    found = {}
    for study in studies:
        summary = Path(study) / "summary.json"
        if has(summary):
            block = read_json(summary).get("blind_baseline")
            if block and block.get("auc") is not None:
                found[study] = block
    return found


def distinct(instances: Sequence[Instance]) -> list[Instance]:
    """Each observation once (the first study's copy): what instance-level statistics and thresholds use."""
    return list({i.observation or id(i): i for i in reversed(instances)}.values())[::-1]


def score_names(instances: Sequence[Instance]) -> list[str]:
    """The scores every instance has, in SCORES order, then gains, then the detectors' scores as the rows hold them."""
    common = set.intersection(*(set(i.scores) for i in instances))
    order = [*SCORES, *(f"{s}_gain" for s in SCORES), *instances[0].scores]
    return [name for name in order if name in common] + sorted(common - set(order))
