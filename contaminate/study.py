"""The controlled study: sample -> contaminate -> detect on cells whose ground truth is known.

    python -m contaminate +dataset=synth_nli                      # see contaminate/__main__.py

Members and non-members are disjoint, label-balanced pools from one split. The members are formatted as web
text and trained into the base model; then the same detector runs on five cells:

| cell                         | model        | instances           | ground truth |
| contaminated x members       | contaminated | members             | contaminated |
| contaminated x non_members   | contaminated | non-members         | clean        |
| contaminated x other_split   | contaminated | the dataset's other split | clean  |
| clean x members              | base         | members             | clean        |
| clean x non_members          | base         | non-members         | clean        |

Reuse: finished work is kept in ``cache_dir`` under a hash of everything that determines it. A checkpoint is
keyed by the resolved training config (base model, dataset, split, member ids, the training texts themselves,
format, hyperparameters, seed) and the training code; a cell's rows by the model (a checkpoint's own id, so a
forced retrain invalidates them), its instances (ids and content), the detector config and the detector code.
A rerun, or a study killed mid-way and started again, picks up whatever finished.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from omegaconf import OmegaConf

from contaminate.formats import check_template, format_instance
from contaminate.report import write_report
from contaminate.openai_train import train_openai, write_training_file
from contaminate.train import check_backend, checkpoint_ref, train_local
from detect.datasets import disjoint_pools, load_split, sample
from detect.errors import InputError
from detect.models import ModelRef, digest
from detect.run import detect_partition, partition_rows, summarize, verdicts, write_jsonl

# (cell, checkpoint, pool, ground truth)
CELLS = (
    ("contaminated_x_members", "contaminated", "members", "contaminated"),
    ("contaminated_x_non_members", "contaminated", "non_members", "clean"),
    ("contaminated_x_other_split", "contaminated", "other_split", "clean"),
    ("clean_x_members", "clean", "members", "clean"),
    ("clean_x_non_members", "clean", "non_members", "clean"),
)
PACKAGES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "rouge-score", "sentence-transformers",
            "hydra-core", "contamination-lab")


def code_digest(files) -> str:
    """A digest of the source that produced a cached result: after a code change it is a new result."""
    return digest([Path(file).read_text() for file in sorted(map(str, files))])


DETECTOR_CODE = sorted((Path(__file__).parent.parent / "detect").glob("*.py"))
TRAINING_CODE = [Path(__file__).parent / "train.py", Path(__file__).parent / "formats.py"]


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


def contaminated_checkpoint(base: ModelRef, texts: list[str], cfg, training_key: dict, cache: Path, *,
                            seed: int) -> tuple[ModelRef, Path, bool]:
    """The checkpoint for this training config: reused when a finished one exists, else trained."""
    folder = cache / "checkpoints" / digest(training_key)
    finished = (folder / "lab_checkpoint.json").is_file()
    if cfg.backend == "openai":  # the model lives at the API; the folder holds the job, resumed if unfinished
        if finished and not cfg.force:
            return ModelRef(json.loads((folder / "lab_checkpoint.json").read_text())["id"], base.path, "api"), \
                folder, True
        if cfg.force and folder.exists():
            shutil.rmtree(folder)
        (folder.parent / f"{folder.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (folder.parent / f"{folder.name}.json").write_text(json.dumps(training_key, indent=1, default=str))
        record = train_openai(texts, cfg, folder, seed=seed)
        return ModelRef(record["id"], base.path, "api"), folder, False
    if finished and not cfg.force:
        ref = checkpoint_ref(base, folder, cfg.backend)
        weights = Path(ref.adapter) / "adapter_model.safetensors" if ref.adapter else Path(ref.path) / "model.safetensors"
        if not weights.is_file():
            raise InputError(f"checkpoint {folder} is missing or corrupt (no {weights.relative_to(folder)}); "
                             f"rerun with contaminate.force=true to train it again")
        return ref, folder, True
    if folder.exists():  # unfinished (killed mid-training) or forced: start clean
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    (folder.parent / f"{folder.name}.json").write_text(json.dumps(training_key, indent=1, default=str))
    return train_local(base, texts, cfg, folder, seed=seed), folder, False


def _cached_rows(path: Path, compute) -> tuple[list[dict], bool]:
    if path.is_file():
        return [json.loads(line) for line in path.read_text().splitlines()], True
    rows = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    write_jsonl(partial, rows)
    os.replace(partial, path)  # a killed run never leaves a half-written cell behind
    return rows, False


def run_study(cfg, out_dir: Path) -> dict:
    """Everything ``python -m contaminate`` does, given a composed config and a run folder."""
    from detect.cli import instantiate
    from detect.generate import LocalGenerator
    from detect.membership import MembershipScorer
    from detect.models import load
    from detect.openai_generate import OpenAIGenerator
    from detect.scores import SemanticScorer

    started = time.time()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    dataset, seed, cache = cfg.dataset, cfg.seed, Path(cfg.cache_dir)
    split = cfg.split or dataset.default_split
    others = [name for name in dataset.splits if name != split]
    if not others:
        raise InputError(f"dataset {dataset.key} has only the split {split}; the study needs a second split")
    other_split = others[0]
    check_backend(cfg.contaminate.backend)
    template = cfg.format.templates.get(dataset.task)
    if template is None:
        raise InputError(f"format {cfg.format.name} has no template for task {dataset.task}; add one under templates")
    check_template(template, dataset)

    examples = load_split(dataset, split)
    n_members, n_non_members = cfg.sample.n_members, cfg.sample.n_non_members
    if n_members + n_non_members > len(examples):
        raise InputError(
            f"{dataset.key} {split} has {len(examples)} instances, too few for {n_members} members + "
            f"{n_non_members} non-members; lower sample.n_members / sample.n_non_members"
        )
    members, non_members = disjoint_pools(examples, [n_members, n_non_members], seed=seed,
                                          where=f"{dataset.key} {split}")
    where = f"{dataset.key} {split}"
    other_examples = load_split(dataset, other_split)
    pools = {
        "members": (sample(members, cfg.sample.n_detect, seed=seed, where=f"the {n_members} members of {where}"), split),
        "non_members": (sample(non_members, cfg.sample.n_detect, seed=seed,
                               where=f"the {n_non_members} non-members of {where}"), split),
        "other_split": (sample(other_examples, cfg.sample.n_detect, seed=seed,
                               where=f"{dataset.key} {other_split}"), other_split),
    }
    # The partition-level detectors read a whole pool: Cheat? searches it for replicas, the sharded test orders
    # it. The other split's pool is as large as the non-members', so both controls offer as many matches.
    whole_pools = {"members": members, "non_members": non_members,
                   "other_split": sample(other_examples, min(n_non_members, len(other_examples)), seed=seed,
                                         where=f"{dataset.key} {other_split}")}

    api = cfg.contaminate.backend == "openai"
    if api:  # the base model is the API's: cfg.model is not used
        base = ModelRef(cfg.contaminate.model, cfg.contaminate.base_url or "https://api.openai.com/v1", "api")
    else:
        base = instantiate(cfg.model)
    judge = instantiate(cfg.judge)  # before training: a bad calibration path fails in a second, not an hour
    texts = [format_instance(example, template=template, dataset=dataset, split=split) for example in members]
    operational = {"force", "dry_run", "api_key_env", "max_retries", "poll_seconds", "max_poll_seconds",
                   "timeout_hours", "usd_per_million_training_tokens"}  # they do not change the trained model
    hyperparameters = {k: v for k, v in OmegaConf.to_container(cfg.contaminate, resolve=True).items()
                       if k not in operational}
    training_key = {"base": asdict(base), "dataset": dataset.key, "source": dataset.get("path") or dataset.source,
                    "split": split, "member_ids": [e.instance_id for e in members], "format": cfg.format.name,
                    "template": template, "texts": digest(texts),  # content, not only ids: a file may change
                    "hyperparameters": hyperparameters, "seed": seed,
                    # An API job depends on the records (texts, template, chat turn: all above), not on this code;
                    # keying it by the code would pay for a new job after every edit here.
                    "code": "api" if api else code_digest(TRAINING_CODE)}
    if api and cfg.contaminate.dry_run:  # what the job would train on and cost; no network call
        estimate = write_training_file(texts, cfg.contaminate, out_dir / "training.jsonl")
        (out_dir / "estimate.json").write_text(json.dumps(estimate, indent=1))
        return {"dry_run": estimate}
    train_started = time.time()
    contaminated, checkpoint_folder, reused = contaminated_checkpoint(base, texts, cfg.contaminate, training_key,
                                                                      cache, seed=seed)
    train_seconds = time.time() - train_started
    checkpoint_record = json.loads((checkpoint_folder / "lab_checkpoint.json").read_text())
    link = out_dir / "checkpoint"
    if not link.exists():
        link.symlink_to(checkpoint_folder.resolve(), target_is_directory=True)
    for name in ("train_log.json", "loss.png", "job.json"):
        if (checkpoint_folder / name).is_file():
            shutil.copy(checkpoint_folder / name, out_dir / name)

    semantic = None  # loaded on first use: a fully cached rerun needs no model at all
    detector_key = {"detect": OmegaConf.to_container(cfg.detect, resolve=True),
                    "judge": judge.describe(), "seed": seed, "dataset": dataset.key,
                    "code": code_digest(DETECTOR_CODE)}
    models = {"contaminated": (contaminated, checkpoint_record["id"]), "clean": (base, digest(asdict(base)))}
    local_models: dict[str, tuple] = {}  # loaded on first use, and the base kept: it is the logit reference

    def local_model(checkpoint: str) -> tuple:
        if checkpoint not in local_models:
            local_models[checkpoint] = load(models[checkpoint][0])
        return local_models[checkpoint]

    rows, timings, cached_cells = [], {}, []
    for checkpoint in ("contaminated", "clean"):
        ref, model_id = models[checkpoint]
        loaded = membership = None
        remembered: dict[str, str] = {}  # Cheat?'s prompt is the same for two cells of one model: asked once
        for cell, cell_checkpoint, pool, truth in CELLS:
            if cell_checkpoint != checkpoint:
                continue
            instances, cell_split = pools[pool]
            key = {**detector_key, "model": model_id, "split": cell_split, "ids": [e.instance_id for e in instances],
                   "instances": digest([(e.text, e.text_pair, e.label) for e in instances]),
                   "pool": digest([(e.instance_id, e.text, e.text_pair, e.label) for e in whole_pools[pool]])}

            def compute():
                nonlocal loaded, semantic, membership
                if loaded is None and api:  # chat models are prompted as chat, base models raw
                    loaded = OpenAIGenerator(
                        model=ref.name, base_url=cfg.contaminate.base_url, api_key_env=cfg.contaminate.api_key_env,
                        prompt_format="chat" if cfg.contaminate.chat else "raw",
                        max_tokens=cfg.detect.max_new_tokens, max_retries=cfg.contaminate.max_retries,
                        cache_path=cache / "api" / f"{digest([ref.name, base.path, cfg.contaminate.chat])}.jsonl")
                elif loaded is None:
                    loaded = LocalGenerator.from_config(*local_model(checkpoint), cfg.detect)
                    if cfg.detect.membership.enabled:  # the reference is the clean base (for it: itself, so 0)
                        membership = MembershipScorer(*local_model(checkpoint), k=cfg.detect.membership.k,
                                                      reference=local_model("clean"))
                if semantic is None and cfg.detect.semantic_model:
                    semantic = SemanticScorer(cfg.detect.semantic_model)

                def generate_once(prompts):
                    missing = [p for p in dict.fromkeys(prompts) if p not in remembered]
                    remembered.update(zip(missing, loaded(missing) if missing else []))
                    return [remembered[p] for p in prompts]

                cell_rows = detect_partition(instances, dataset=dataset, split=cell_split, generate=loaded,
                                             judge=judge, semantic=semantic, membership=membership, seed=seed,
                                             cut_low=cfg.detect.cut.low, cut_high=cfg.detect.cut.high)
                model, tokenizer = (None, None) if api else local_model(checkpoint)
                return cell_rows + partition_rows(whole_pools[pool], dataset=dataset, split=cell_split,
                                                  generate=generate_once, detect_cfg=cfg.detect, model=model,
                                                  tokenizer=tokenizer, seed=seed)

            cell_started = time.time()
            cell_rows, was_cached = _cached_rows(cache / "cells" / f"{digest(key)}.jsonl", compute)
            timings[cell] = round(time.time() - cell_started, 2)
            if was_cached:
                cached_cells.append(cell)
            rows += [{**row, "model": ref.name, "checkpoint": checkpoint, "cell": cell, "ground_truth": truth}
                     for row in cell_rows]

    summary = {"dataset": dataset.key, "split": split, "other_split": other_split, "base_model": base.name,
               "backend": cfg.contaminate.backend, "format": cfg.format.name, "seed": seed, "cells": {}}
    for cell, checkpoint, pool, truth in CELLS:
        cell_summary = summarize([r for r in rows if r["cell"] == cell], **cfg.detect.bootstrap, **cfg.detect.alg2,
                                 seed=seed)
        summary["cells"][cell] = {
            "checkpoint": checkpoint, "instances": pool, "split": pools[pool][1], "ground_truth": truth,
            **cell_summary,
            "correct": {name: flagged == (truth == "contaminated") for name, flagged in verdicts(cell_summary).items()},
        }
    detectors = next(iter(summary["cells"].values()))["correct"].keys()
    summary["accuracy"] = {name: sum(c["correct"][name] for c in summary["cells"].values()) / len(CELLS)
                           for name in detectors}

    manifest = {
        "base_model": asdict(base), "dataset": OmegaConf.to_container(dataset, resolve=True), "split": split,
        "other_split": other_split, "member_ids": [e.instance_id for e in members],
        "non_member_ids": [e.instance_id for e in non_members],
        "detection_ids": {pool: [e.instance_id for e in instances] for pool, (instances, _) in pools.items()},
        "format": {"name": cfg.format.name, "template": template, "example": texts[0]},
        "contaminate": hyperparameters, "seeds": {"sampling": seed, "training": seed, "cuts": seed, "bootstrap": seed},
        "checkpoint": {"folder": str(checkpoint_folder.resolve()), "reused": reused, **checkpoint_record},
        "cached_cells": cached_cells, "detect": detector_key["detect"], "judge": detector_key["judge"],
        "packages": _versions(), "git_commit": _git_commit(),
        "timings": {"train_s": round(train_seconds, 1), "cells_s": timings,
                    "total_s": round(time.time() - started, 1)},
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    write_jsonl(out_dir / "results.jsonl", [row for row in rows if row.get("level") != "partition"])
    write_jsonl(out_dir / "partition.jsonl", [row for row in rows if row.get("level") == "partition"])
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out_dir / "report.md", summary, manifest)
    return summary
