"""Benchmark partitions: the registry in ``conf/dataset/``, loading (hub, local file, synth) and sampling.

A dataset is one declarative YAML (hub id, config, splits, fields, task shape); this module turns a
(dataset config, split) into ``Example`` objects with the label already written as the string the prompts
and the contamination text use: the label id and the dataset's own ClassLabel name, ``"1 (not entailment)"``.

    from detect.datasets import load_split, sample
    examples = load_split(dataset_cfg, "test")
    ten = sample(examples, 10, seed=0, where="synth_nli test")
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from detect.datasets.sources import source_of
from detect.errors import InputError

TASKS = ("classification", "nli", "summary", "one_sentence_summary", "question", "code")
# A task whose instance is a function (HumanEval: its prompt and canonical solution joined): cut into pieces at
# line boundaries, not sentences (detect/detectors/time_travel/split.py)
LINE_TASKS = ("code",)


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


def load_raw(cfg, split: str):
    """The split as a ``datasets.Dataset``, from ``cfg.path`` if given, else the YAML's ``source``
    (``detect/datasets/sources.py``: the hub, the lab's generator, a local file)."""
    if split not in cfg.splits:
        raise InputError(f"dataset {cfg.key} has no split '{split}': its splits are {', '.join(cfg.splits)}")
    return source_of(cfg).load(split, f"dataset {cfg.key} split {split}")


def _label_names(raw, cfg) -> list[str] | None:
    """Names from the dataset's ClassLabel feature; a local file without one may name them in config."""
    feature = raw.features.get(cfg.fields.label)
    if getattr(feature, "names", None):
        return list(feature.names)
    if cfg.get("label_names"):
        return list(cfg.label_names)
    return None


def joined(raw, cfg):
    """The split with the dataset's ``join`` columns added: each the named columns joined as they are, no separator
    (HumanEval: ``code`` is ``prompt`` + ``canonical_solution``, the function as it leaks)."""
    for name, columns in (cfg.get("join") or {}).items():
        missing = [column for column in columns if column not in raw.column_names]
        if missing:
            raise InputError(f"dataset {cfg.key}: join.{name} names {missing[0]}, which the split lacks (its fields: "
                             f"{', '.join(raw.column_names)}); fix dataset.join")
        raw = raw.add_column(name, ["".join(row[column] for column in columns) for row in raw])
    return raw


def load_split(cfg, split: str) -> list[Example]:
    """All instances of one split, checked against the fields the dataset config names."""
    if cfg.task not in TASKS:
        raise InputError(f"dataset {cfg.key}: unknown task '{cfg.task}'; use one of {', '.join(TASKS)}")
    raw = joined(load_raw(cfg, split), cfg)
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
