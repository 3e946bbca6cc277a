"""Benchmark partitions: the registry in ``conf/dataset/``, loading (hub, local file, synth) and sampling.

A dataset is one declarative YAML (hub id, config, splits, fields, task shape); this module turns a
(dataset config, split) into ``Example`` objects with the label already written as the string the prompts
and the contamination text use: the label id and the dataset's own ClassLabel name, ``"1 (not entailment)"``.

    from detect.datasets import load_split, sample
    examples = load_split(dataset_cfg, "test")
    ten = sample(examples, 10, seed=0, where="synth_nli test")
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from detect.errors import InputError

TASKS = ("classification", "nli", "summary", "one_sentence_summary", "question")
SYNTH_KEYS = "+dataset=synth_nli, +dataset=synth_news or +dataset=synth_xsum"


@dataclass(frozen=True)
class Example:
    """One instance: ``text`` is the whole instance (or sentence 1 of a pair), ``text_pair`` sentence 2."""

    instance_id: int
    text: str
    text_pair: str | None = None
    label: str | None = None

    @property
    def full_text(self) -> str:
        """The whole instance as one text (a pair: sentence 1, a newline, sentence 2), as logit scores read it."""
        return self.text if self.text_pair is None else f"{self.text}\n{self.text_pair}"


def label_string(label_id: int, name: str) -> str:
    """``label_string(1, "not_entailment") == "1 (not entailment)"``: the id and the readable name."""
    return f"{label_id} ({name.replace('_', ' ')})"


_LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def _load_local(path: str, split: str, where: str):
    """One split from a file (``{split}`` in its name is replaced), or from ``<split>.<ext>`` in a folder."""
    import datasets

    file = Path(path.replace("{split}", split))
    if file.is_dir():
        candidates = [file / f"{split}{suffix}" for suffix in _LOCAL_FORMATS]
        found = [candidate for candidate in candidates if candidate.is_file()]
        if not found:
            present = ", ".join(sorted(p.name for p in file.iterdir())) or "nothing"
            raise InputError(f"{where}: folder {file} has no {split}.jsonl, .csv or .parquet (it holds {present})")
        file = found[0]
    if not file.is_file():
        raise InputError(f"{where}: no file at {file}; give an existing JSONL, CSV or Parquet file")
    builder = _LOCAL_FORMATS.get(file.suffix.lower())
    if builder is None:
        raise InputError(f"{where}: {file} is not .jsonl, .json, .csv or .parquet; convert it to one of these")
    if file.suffix.lower() == ".jsonl":
        check_json_lines(file)
    return datasets.load_dataset(builder, data_files=str(file), split="train")


def check_json_lines(file: Path) -> None:
    """Every non-blank line of a JSONL file one JSON object, or a one-line error naming the file and the line
    (``datasets`` would fail with a pyarrow traceback that names neither)."""
    with open(file, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{file} line {number} is not valid JSON ({error.msg} at column {error.colno}); "
                                 f"fix or remove that line") from None
            if not isinstance(value, dict):
                raise InputError(f"{file} line {number} is a JSON {type(value).__name__}, not an object of fields; "
                                 f"write one {{\"field\": value, ...}} object per line")


def _load_hub(cfg, split: str):
    import datasets

    try:
        return datasets.load_dataset(cfg.hub_id, cfg.hub_config, split=split)
    except Exception as error:  # offline, gated, renamed: all end the same way for the user
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(
            f"could not load {cfg.hub_id}{f' ({cfg.hub_config})' if cfg.hub_config else ''} split {split} "
            f"from the hub ({reason}); offline, use {SYNTH_KEYS}, or dataset.path=<local jsonl/csv/parquet>"
        ) from None


def load_raw(cfg, split: str):
    """The split as a ``datasets.Dataset``, from ``cfg.path`` if given, else the generator or the hub."""
    if split not in cfg.splits:
        raise InputError(f"dataset {cfg.key} has no split '{split}': its splits are {', '.join(cfg.splits)}")
    if cfg.get("path"):
        return _load_local(str(cfg.path), split, f"dataset {cfg.key} split {split}")
    if cfg.source == "synth":
        from detect import synth

        return synth.build(cfg.shape, split, size=cfg.size, seed=cfg.synth_seed)
    if cfg.source == "hub":
        return _load_hub(cfg, split)
    raise InputError(f"dataset {cfg.key}: unknown source '{cfg.source}'; use hub or synth, or set dataset.path")


def _label_names(raw, cfg) -> list[str] | None:
    """Names from the dataset's ClassLabel feature; a local file without one may name them in config."""
    feature = raw.features.get(cfg.fields.label)
    if getattr(feature, "names", None):
        return list(feature.names)
    if cfg.get("label_names"):
        return list(cfg.label_names)
    return None


def load_split(cfg, split: str) -> list[Example]:
    """All instances of one split, checked against the fields the dataset config names."""
    if cfg.task not in TASKS:
        raise InputError(f"dataset {cfg.key}: unknown task '{cfg.task}'; use one of {', '.join(TASKS)}")
    raw = load_raw(cfg, split)
    where = cfg.get("path") or f"{cfg.key} {split}"
    fields = cfg.fields
    needed = [fields.first, fields.second] if cfg.task == "nli" else [fields.text]
    if fields.get("label"):
        needed.append(fields.label)
    for field in needed:
        if field not in raw.column_names:
            raise InputError(
                f"{where} has no field '{field}' (its fields: {', '.join(raw.column_names)}); "
                f"rename the column or point dataset.fields at the right one"
            )
    names = _label_names(raw, cfg) if fields.get("label") else None
    examples = []
    for index, row in enumerate(raw):
        label = None
        if fields.get("label"):
            value = row[fields.label]
            if isinstance(value, str):
                label = value  # a local file that stores the label text itself
            elif names is None:
                raise InputError(
                    f"{where}: integer labels without names; save the file as Parquet from `datasets` "
                    f"(it keeps the ClassLabel names) or set dataset.label_names=[name0,name1,...]"
                )
            else:
                label = label_string(int(value), names[int(value)])
        if cfg.task == "nli":
            examples.append(Example(index, row[fields.first], row[fields.second], label))
        else:
            examples.append(Example(index, row[fields.text], None, label))
    return examples


def sample(
    examples: Sequence[Example], n: int, *, seed: int, exclude: Iterable[int] = (), where: str = "the split"
) -> list[Example]:
    """``n`` instances, label-balanced, seeded, none of whose ids is in ``exclude``.

    Each label gets ``n // k`` instances and the remainder goes to labels drawn at random, so 10 from a
    two-label split is 5 + 5 and 10 from AG News is 3 + 3 + 2 + 2 in some order.
    """
    excluded = set(exclude)
    pool = [example for example in examples if example.instance_id not in excluded]
    if n > len(pool):
        extra = f" ({len(excluded)} already drawn)" if excluded else ""
        raise InputError(f"asked for {n} instances from {where}, which has {len(pool)}{extra}; ask for fewer")
    rng = np.random.default_rng(seed)
    by_label: dict[str | None, list[Example]] = defaultdict(list)
    for example in pool:
        by_label[example.label].append(example)
    labels = sorted(by_label, key=str)
    quota = {label: n // len(labels) for label in labels}
    for label in rng.permutation(labels)[: n % len(labels)]:
        quota[label] += 1
    chosen: list[Example] = []
    for label in labels:
        group = by_label[label]
        if quota[label] > len(group):
            raise InputError(
                f"asked for {quota[label]} instances labelled {label} from {where}, which has {len(group)}; "
                f"ask for fewer"
            )
        chosen += [group[i] for i in rng.choice(len(group), size=quota[label], replace=False)]
    return [chosen[i] for i in rng.permutation(len(chosen))]


def disjoint_pools(
    examples: Sequence[Example], sizes: Sequence[int], *, seed: int, where: str = "the split"
) -> list[list[Example]]:
    """Label-balanced pools of the given sizes with no instance in two pools (members vs non-members)."""
    if sum(sizes) > len(examples):
        raise InputError(
            f"pools of {' + '.join(map(str, sizes))} = {sum(sizes)} instances asked from {where}, "
            f"which has {len(examples)}; ask for fewer"
        )
    pools: list[list[Example]] = []
    taken: set[int] = set()
    for index, size in enumerate(sizes):
        pool = sample(examples, size, seed=seed + 7919 * index, exclude=taken, where=where)
        taken |= {example.instance_id for example in pool}
        pools.append(pool)
    return pools
