"""The sample stage of every run: its groups, disjoint and label-balanced from one split, then the known non-members
and the other split's pools. A study's groups are two (``study_groups``: its members at the study's dose, then its
non-members, never trained); a planted run's are its plant's (contaminate/regime/plant.py). Both are drawn by one
function, ``sample_groups``, in one ``disjoint_pools`` call per dataset, in the groups' order:

    draw = sample_groups(groups, datasets, cfg.sample)     # group name -> its instances; per dataset, its splits
    sampled = draw.study(group, x0, n_detect, seed)        # one group's study: its members against x0's, never planted

so a study's members, non-members and known non-members are the pools ``disjoint_pools(examples, [n_members,
n_non_members, n_heldout])`` gives, as they were before a study was a run of two groups (issue 46: its checkpoint
and cell keys unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from contaminate.regime.plant import PlantedGroup
from contaminate.shift import check_shift_keys, shift_of, shift_pool
from detect.datasets import Example, disjoint_pools, load_split, sample
from detect.errors import InputError
from detect.validate import count

STUDY_FIX = "lower sample.n_members / sample.n_non_members"
PLANT_FIX = "lower plant.n or drop a group"


@dataclass(frozen=True)
class Sampled:
    """One group's study as the sample stage drew it: the pools and, per pool, the instances detection runs on and
    its split."""
    split: str
    other_split: str | None  # None: a dataset of one split (HumanEval), whose study has no other-split cell
    members: list[Example]
    non_members: list[Example]
    detection: dict[str, tuple[list[Example], str]]  # pool -> (its n_detect instances, their split)
    whole: dict[str, list[Example]]  # pool -> every instance the partition-level detectors may read
    # split -> known non-members of that split, disjoint from every pool and sample a cell of that split reads
    known_non_members: dict[str, list[Example]] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupDraw:
    """The sample stage of a run: each group's instances, and per dataset its splits, its other split's pools and
    its known non-members (a planted group may plant another dataset than the run's: ``dataset_of``)."""
    groups: dict[str, list[Example]]                         # group name -> its instances
    dataset_of: dict[str, str]                               # group name -> its dataset's key
    splits: dict[str, tuple[str, str | None]]                # dataset key -> (the planted split, the other split)
    other: dict[str, tuple[list[Example], list[Example]]]    # dataset key -> the other split's (detected, whole pool);
    # a dataset of one split (HumanEval) has none: its groups' studies have no other-split cell
    known_non_members: dict[str, dict[str, list[Example]]]   # dataset key -> split -> known non-members
    twins: dict[str, list[Example]] = field(default_factory=dict)  # planted group -> the swap twin's stand-ins

    def split_of(self, group: PlantedGroup) -> str:
        return self.splits[self.dataset_of[group.name]][0]

    def study(self, group: PlantedGroup, x0: PlantedGroup, n_detect: int, seed: int) -> Sampled:
        """The study of one group: its instances the members, the never-planted group's the non-members."""
        key = self.dataset_of[group.name]
        split, other_split = self.splits[key]
        members, non_members = self.groups[group.name], self.groups[x0.name]

        def detected(pool: list[Example], name: str) -> list[Example]:
            # a label-balanced sample; where it is the whole group, the group as drawn if the sample cannot be had
            # (6 of 4 labels drawn 2+2+1+1: the sample gives the remainder to labels at random again)
            try:
                return sample(pool, n_detect, seed=seed, where=f"group {name}")
            except InputError:
                if n_detect < len(pool):
                    raise
                return list(pool)

        detection = {"members": (detected(members, group.name), split),
                     "non_members": (detected(non_members, x0.name), split)}
        whole = {"members": members, "non_members": non_members}
        if key in self.other:
            detection["other_split"], whole["other_split"] = (self.other[key][0], other_split), self.other[key][1]
        return Sampled(split, other_split, members, non_members, detection, whole, self.known_non_members[key])


def study_groups(cfg) -> tuple[PlantedGroup, PlantedGroup]:
    """A study's two groups, in the order they are drawn: its members (``sample.n_members``, at the study's dose:
    ``contaminate.exposures``, or one for its epochs alone; 0 at exposures 0, where the contaminated model is the
    control) and its non-members (``sample.n_non_members``), never trained."""
    exposures = cfg.contaminate.get("exposures")
    return (PlantedGroup("members", 1 if exposures is None else exposures, cfg.sample.n_members),
            PlantedGroup("non-members", 0, cfg.sample.n_non_members))


def sample_pools(cfg) -> Sampled:
    """A study's draw (its members against its non-members; the other split beside them): ``sample_groups`` on
    ``study_groups``."""
    members, non_members = study_groups(cfg)
    draw = sample_groups([members, non_members], {g.name: cfg.dataset for g in (members, non_members)}, cfg.sample,
                         splits=asked_split(cfg), never_planted={cfg.dataset.key: non_members}, fix=STUDY_FIX)
    return draw.study(members, non_members, cfg.sample.n_detect, cfg.sample.draw)


def asked_split(cfg) -> dict[str, str]:
    """The split the run asks of its own dataset (``split``; none asked: {}, each dataset's default)."""
    return {cfg.dataset.key: cfg.split} if cfg.get("split") else {}


def sample_groups(groups: Sequence[PlantedGroup], datasets: Mapping[str, Any], sample_cfg, *,
                  splits: Mapping[str, str] | None = None, twin: bool = False,
                  never_planted: Mapping[str, PlantedGroup] | None = None, fix: str = PLANT_FIX) -> GroupDraw:
    """Per dataset, its groups, disjoint and label-balanced from one split (then known non-members, disjoint from
    all of them, and a twin's stand-ins after those, ``twin``), and the other split's pools, as large as the
    dataset's never-planted group (``never_planted``: dataset key -> that group; default its first unplanted group).
    ``datasets``: each group's dataset config, by group name; ``sample_cfg``: the run's ``sample`` block (its draw,
    ``n_detect``, ``n_heldout``); ``splits``: a dataset key -> the split asked of it (default: its own default
    split). ``fix``: what the one line says to do where a split has too few instances."""
    seed = sample_cfg.draw  # the draw: the training seed unless set apart
    by_dataset: dict[str, list[PlantedGroup]] = {}
    for group in groups:
        by_dataset.setdefault(datasets[group.name].key, []).append(group)
    draw = GroupDraw({}, {g.name: datasets[g.name].key for g in groups}, {}, {}, {})
    check_shift_keys(sample_cfg.get("known_shift"), list(by_dataset))
    for key, members in by_dataset.items():
        dataset = datasets[members[0].name]
        split = (splits or {}).get(key) or dataset.default_split
        others = [name for name in dataset.splits if name != split]  # none: one split, no other-split cell
        examples = load_split(dataset, split)
        sizes = [g.n for g in members]
        # the swap twin's stand-ins: one more disjoint group per planted group, drawn after the groups and the known
        # non-members, so that asking for a twin leaves every other pool as it was
        planted = [g for g in members if g.planted]
        twin_sizes = [g.n for g in planted] if twin else []
        if sum(sizes) + sum(twin_sizes) > len(examples):
            asked = " + ".join(f"{g.n} {g.name}" for g in members) + (
                f" + a twin's {' + '.join(map(str, twin_sizes))}" if twin_sizes else "")
            raise InputError(f"{key} {split} has {len(examples)} instances, too few for {asked} = "
                             f"{sum(sizes) + sum(twin_sizes)}; {fix}")
        where = f"{key} {split}"
        # A pool after the groups, disjoint from all of them (drawing it leaves the groups as they were): known
        # non-members the detectors may condition on or compare with (ReCaLL's prefix, a performance test's
        # held-out accuracy) and the recipe fits its thresholds on.
        n_known = known_size(sample_cfg, len(examples) - sum(sizes) - sum(twin_sizes), where)
        *pools, known = disjoint_pools(examples, [*sizes, n_known], seed=seed, where=where)
        if twin_sizes:
            taken = {e.instance_id for pool in [*pools, known] for e in pool}
            rest = [e for e in examples if e.instance_id not in taken]
            stand_ins = disjoint_pools(rest, twin_sizes, seed=seed + 1, where=f"{where} (the twin's)")
            draw.twins.update({g.name: pool for g, pool in zip(planted, stand_ins)})
        draw.groups.update({g.name: pool for g, pool in zip(members, pools)})
        draw.splits[key] = (split, others[0] if others else None)
        shift = shift_of(sample_cfg.get("known_shift"), key)
        draw.known_non_members[key] = {split: shift_pool(dataset, split, known, shift)}  # a shifted pool, where asked
        if others:
            # the other split's pool is as large as the never-planted group's: both offer as many matches to the
            # partition-level detectors (Cheat? searches a pool for replicas, the sharded test orders it)
            x0 = (never_planted or {}).get(key) or next(g for g in members if not g.planted)
            detection, whole, other_known = other_split_pools(dataset, others[0], n_detect=sample_cfg.n_detect,
                                                              n_pool=x0.n, n_known=len(known), seed=seed)
            draw.other[key] = (detection, whole)
            draw.known_non_members[key][others[0]] = shift_pool(dataset, others[0], other_known, shift)
    return draw


def known_size(sample_cfg, left: int, where: str) -> int:
    """``sample.n_heldout``, checked against what the split has left after the pools drawn before it (one line where
    it asks for more: the study never runs on fewer known non-members than it was asked for)."""
    n_known = sample_cfg.get("n_heldout", 0) or 0
    count(n_known, "sample.n_heldout", minimum=0, hint=" (known non-members drawn beside members and non-members)")
    if n_known > left:
        raise InputError(f"sample.n_heldout={n_known} known non-members asked of {where}, which has {left} left "
                         f"after the other pools; lower sample.n_heldout to {left} or less, or draw smaller pools")
    return n_known


def other_split_pools(dataset, other_split: str, *, n_detect: int, n_pool: int, n_known: int,
                      seed: int) -> tuple[list[Example], list[Example], list[Example]]:
    """The other split's control: the instances its cell detects on, the pool its partition-level detectors read
    (``n_pool``, as large as the non-members'), and its own known non-members, disjoint from both."""
    other_examples = load_split(dataset, other_split)
    where = f"{dataset.key} {other_split}"
    detection = sample(other_examples, n_detect, seed=seed, where=where)
    whole = sample(other_examples, min(n_pool, len(other_examples)), seed=seed, where=where)
    # the other split's cell gets known non-members of its own split, disjoint from what that cell reads
    taken = {e.instance_id for e in [*whole, *detection]}
    left = len(other_examples) - len(taken)
    known = sample(other_examples, min(n_known, left), seed=seed, exclude=taken,
                   where=where) if n_known and left else []
    return detection, whole, known
