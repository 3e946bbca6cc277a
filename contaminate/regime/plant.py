"""Planted groups: several disjoint groups of one split, each planted a counted number of times into one training
stream, so that one training run gives a whole dose-response curve (Hubble's duplication levels, Carlini et al.'s
canaries), with a never-planted group of the same split as every group's same-model control.

    groups = plant_groups(cfg.plant)                       # conf/plant/dose_ladder.yaml: x0, x1, x4, x16, x64
    stream = planted_stream(documents, background, seed=0) # documents: group name -> that group's documents
    placement = group_positions(stream, count_tokens)      # where each group's copies fell, in tokens

Pure functions of documents, as ``stream.py`` is: the dose is tested by counting (tests/test_plant.py).

Where copies go. The background is shuffled exactly as ``stream.build_stream`` shuffles it for the control (the
same ``random.Random(seed)`` permutation), so the planted run and the control trained on the background alone read
the background in the same order. Each copy of a planted document then gets an insertion slot among the background
documents, drawn uniformly within its group's window (``[start, end]``, fractions of the background; ``[0, 1]``:
anywhere), copies that share a slot in a seeded random order. Slots are drawn from the group's index, the copy and
the document's index alone, never from their text: a twin stream of other documents of the same counts gets the
same positions. A window ending before 1 leaves a clean tail of background after the group's last copy (Bordt et
al. 2025: what is trained after a leak erases it); a window starting after 0, a clean head.

Equal recency. ``plant.tail`` (conf/plant/dose_ladder.yaml: 0.2) keeps the last fraction of the background clean of
every copy: each group's window ends at ``1 - tail`` at the latest, so that every dose is read after the same stretch
of clean training (without it a x1 group's one copy falls on average mid-stream and a x16 group's last copy near
the end: dose and recency confounded). A group's own window must end before the tail (one line where they overlap).

Without a background the stream is the copies alone, in a seeded random order (a window needs a background).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from contaminate.regime.stream import Document
from detect.errors import InputError

GROUP_KEYS = ("name", "exposures", "n", "window", "dataset", "format")  # what a group may set; the rest is the run's


@dataclass(frozen=True)
class PlantedGroup:
    """One group: ``n`` instances of the split, each planted ``exposures`` times within ``window``; ``dataset`` and
    ``format`` name a conf/dataset and conf/format config where the group's differ from the run's (None: the run's)."""
    name: str
    exposures: int
    n: int
    window: tuple[float, float] = (0.0, 1.0)
    dataset: str | None = None
    format: str | None = None

    @property
    def planted(self) -> bool:
        return self.exposures > 0

    def describe(self) -> dict:
        found = {"name": self.name, "exposures": self.exposures, "n": self.n, "window": list(self.window)}
        # only where set: a run of the run's own dataset and format keeps the description (and checkpoint key) it had
        return {**found, **{key: value for key, value in (("dataset", self.dataset), ("format", self.format))
                            if value is not None}}


def _window(value, where: str) -> tuple[float, float]:
    if value is None:
        return (0.0, 1.0)
    try:
        start, end = (float(v) for v in value)
    except (TypeError, ValueError):
        raise InputError(f"{where}={value}: give [start, end], fractions of the background, e.g. [0, 0.5] (its "
                         f"first half), or null (anywhere)") from None
    if not 0 <= start < end <= 1:
        raise InputError(f"{where}=[{start:g}, {end:g}] is outside the stream: give 0 <= start < end <= 1 "
                         f"(fractions of the background; [0.8, 1] is its last fifth)")
    return (start, end)


def plant_tail(plant_cfg) -> float:
    """``plant.tail``: the fraction of the background kept after every planted copy (None or absent: 0, no tail)."""
    tail = plant_cfg.get("tail") if plant_cfg is not None else None
    if tail is None:
        return 0.0
    if isinstance(tail, bool) or not isinstance(tail, (int, float)) or not 0 <= tail < 1:
        raise InputError(f"plant.tail={tail}: give the fraction of the background kept clean after every planted "
                         f"copy, in [0, 1) (0.2: its last fifth; 1 would leave no room for the copies; 0: no tail)")
    return float(tail)


def _count(value, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{where}={value}: give a whole number >= {minimum}")
    return value


def _config_name(value, where: str, group: str) -> str:
    from detect.cli import options

    known = options(group)
    if not isinstance(value, str) or value not in known:
        raise InputError(f"{where}={value}: no conf/{group}/{value}.yaml; give one of {', '.join(known)}")
    return value


def plant_groups(plant_cfg, dataset: str | None = None, format: str | None = None) -> list[PlantedGroup]:
    """The groups of ``plant`` (conf/plant/), each checked (one line per failure): its exposures, its size (the
    group's ``n`` or ``plant.n``), its window (the group's or ``plant.window``), its dataset and format (config names;
    ``dataset`` and ``format``, the run's, are the same as unset), unique names, at least one planted group, and for
    every planted group's dataset a group of it never planted (that group's same-model control)."""
    groups_cfg = plant_cfg.get("groups") if plant_cfg is not None else None
    if not groups_cfg:
        return []
    default_n, default_window, tail = plant_cfg.get("n"), plant_cfg.get("window"), plant_tail(plant_cfg)
    groups = []
    for index, group in enumerate(groups_cfg):
        where = f"plant.groups[{index}]"
        if not hasattr(group, "keys"):
            raise InputError(f"{where}={group}: give a mapping, e.g. {{exposures: 4}} (keys: {', '.join(GROUP_KEYS)})")
        unknown = sorted(set(group.keys()) - set(GROUP_KEYS))
        if unknown:
            raise InputError(f"{where}.{unknown[0]} is not a group setting (a group sets {', '.join(GROUP_KEYS)}; "
                             f"the rest is the run's)")
        if group.get("exposures") is None:
            raise InputError(f"{where} has no exposures: give each group exposures: N (0: never planted)")
        exposures = _count(group.get("exposures"), f"{where}.exposures", 0)
        n = group.get("n", default_n)
        if n is None:
            raise InputError(f"{where} has no n: set plant.n (instances a group) or the group's n")
        n = _count(n, f"{where}.n" if group.get("n") is not None else "plant.n", 1)
        given = group.get("window")
        window = _window(given if given is not None else default_window,
                         f"{where}.window" if given is not None else "plant.window")
        if exposures and tail and window[1] > 1 - tail and window != (0.0, 1.0):
            raise InputError(f"{where if given is not None else 'plant'}.window=[{window[0]:g}, {window[1]:g}] "
                             f"overlaps plant.tail={tail:g}, the last {tail:g} of the background kept clean of copies: "
                             f"end the window at {1 - tail:g} or lower plant.tail (0: no tail)")
        chosen = {}
        for key, run_value in (("dataset", dataset), ("format", format)):
            value = group.get(key)
            chosen[key] = None if value is None or value == run_value else _config_name(value, f"{where}.{key}", key)
        if exposures == 0 and chosen["format"]:
            raise InputError(f"{where}.format={chosen['format']}: a never-planted group is read in each planted "
                             f"group's format (it is never laid out); drop its format")
        name = group.get("name") or "_".join(
            [f"x{exposures}", *(v for v in chosen.values() if v)]
            + ([] if window == (0.0, 1.0) else [f"{window[0]:g}-{window[1]:g}"]))
        groups.append(PlantedGroup(str(name), exposures, n, window, **chosen))
    names = [g.name for g in groups]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"plant.groups: two groups are named {repeated[0]}; give each a distinct name")
    if not any(g.planted for g in groups):
        raise InputError("plant.groups: every group has exposures 0, so nothing is planted; give at least one group "
                         "exposures >= 1")
    for group in groups:
        if group.planted and not any(not g.planted and g.dataset == group.dataset for g in groups):
            if group.dataset is None:
                which = "no group" if all(g.planted for g in groups) else "no group of the run's dataset"
                raise InputError(f"plant.groups: {which} has exposures 0; add one ({{exposures: 0}}): the "
                                 f"never-planted group of the same split is each planted group's control within the "
                                 f"same model")
            raise InputError(f"plant.groups: group {group.name} plants {group.dataset}, and no group of "
                             f"{group.dataset} has exposures 0; add {{exposures: 0, dataset: {group.dataset}}}: its "
                             f"control within the same model")
    return groups


def never_planted_group(groups: Sequence[PlantedGroup], group: PlantedGroup | None = None) -> PlantedGroup:
    """The never-planted group ``group`` is compared with: the first with exposures 0 of its dataset (without
    ``group``: of the run's dataset)."""
    dataset = group.dataset if group is not None else None
    return next(g for g in groups if not g.planted and g.dataset == dataset)


def planted_stream(documents: Mapping[str, Sequence[Document]], groups: Sequence[PlantedGroup],
                   background: Sequence[Document], *, seed: int, tail: float = 0.0) -> list[Document]:
    """Every document of each group ``exposures`` times (never for exposures 0) among the background documents,
    each copy at a slot drawn within its group's window, which ends at ``1 - tail`` at the latest (``plant.tail``:
    the end of the background kept clean); the background in the control's order (module docstring)."""
    rng = random.Random(seed)
    order = list(background)
    rng.shuffle(order)  # what build_stream([], background, exposures=0, seed) does: the control's order
    if not background:
        windowed = [g.name for g in groups if g.planted and g.window != (0.0, 1.0)]
        if windowed:
            raise InputError(f"group {windowed[0]} has a window, and the stream has no background to place it in; "
                             f"use a background (background=offline) or drop the window")
        if tail:
            raise InputError(f"plant.tail={tail:g} keeps the end of the background clean of copies, and the stream "
                             f"has no background; use a background (background=offline) or set plant.tail=0")
    copies = []  # (slot, tie-break, document)
    for index, group in enumerate(groups):
        if not group.planted:
            continue
        placer = random.Random(f"{seed}/{index}")  # from the group's index alone: a twin gets the same slots
        low = round(group.window[0] * len(order))
        high = round(min(group.window[1], 1 - tail) * len(order))
        for copy in range(group.exposures):
            for document in documents[group.name]:
                copies.append((placer.randint(low, high), placer.random(), document))
    copies.sort(key=lambda item: (item[0], item[1]))
    stream, taken = [], 0
    for slot, _, document in copies:
        stream += order[taken:slot]
        taken = max(taken, slot)
        stream.append(document)
    return stream + order[taken:]


def group_positions(stream: Sequence[Document], documents: Mapping[str, Sequence[Document]],
                    count_tokens: Callable[[str], int]) -> dict[str, dict]:
    """Per group, where its copies fell in the stream, in tokens from its start (each document counted as the
    trainer counts it, before the end token): documents and tokens planted, their share of the training tokens,
    and the first, last and mean position of a copy's first token, also as fractions of the stream."""
    # by the document itself, not its instance ids: groups of two datasets can share ids (each split counts from 0)
    group_of = {id(document): name for name, docs in documents.items() for document in docs}
    total = sum(count_tokens(document.text) for document in stream)
    found = {name: {"documents": 0, "tokens": 0, "starts": []} for name in documents}
    position = 0
    for document in stream:
        tokens = count_tokens(document.text)
        if document.members:
            block = found[group_of[id(document)]]
            block["documents"] += 1
            block["tokens"] += tokens
            block["starts"].append(position)
        position += tokens
    placed = {}
    for name, block in found.items():
        starts = block.pop("starts")
        placed[name] = {**block, "token_share": round(block["tokens"] / total, 6) if total else 0.0}
        if starts:
            first, last, mean = starts[0], starts[-1], sum(starts) / len(starts)
            placed[name]["positions"] = {"first": first, "last": last, "mean": round(mean, 1),
                                         "first_fraction": round(first / total, 4),
                                         "last_fraction": round(last / total, 4),
                                         "mean_fraction": round(mean / total, 4)}
    return placed
