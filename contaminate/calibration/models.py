"""The models of a calibration, each with what it read: its known non-members (the recipe's null distribution) and its
pools (one cell of one model: members by dose, its own non-members, the other split), grouped by regime and dataset.

    groups = model_groups(instances, known, conditions)     # {"metadata/package_docs/full/planted · synth_nli": [...]}
    for model in groups[key]: model.known, model.pools, model.kind, model.unit

A model is what answered: a contaminated checkpoint, or a clean one (the base model, a control), identified by its
checkpoint (``Instance.model``), so that a clean model read by three studies counts once. The independent unit of a
contaminated model is its member draw; each clean model is a unit of its own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Sequence

from contaminate.calibration.statistics import Unit, unit_label
from contaminate.calibration.studies import Instance, distinct, regime_of

MEMBERS, NON_MEMBERS, OTHER_SPLIT = "members", "non_members", "other_split"


@dataclass
class Pool:
    """One cell of one model: its instances (each observation once), its kind and, for members, the dose."""
    kind: str                  # members | non_members | other_split | clean (a clean model's cell)
    dose: float | None
    instances: list[Instance]


@dataclass(eq=False)  # identity: a model is its own dictionary key
class Model:
    key: str                   # Instance.model
    kind: str                  # contaminated | clean
    unit: Unit                 # a contaminated model's (draw, seed); a clean model's own
    units: list[Unit]          # the (draw, seed) pairs whose studies read it (a clean model: several draws)
    known: list[Instance] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)

    @property
    def label(self) -> str:
        return unit_label(self.unit) if self.kind == "contaminated" else f"clean {self.unit[0]}"

    def pools_of(self, kind: str) -> list[Pool]:
        return [pool for pool in self.pools if pool.kind == kind]

    def pools_by_key(self) -> list[tuple[str, list[Pool]]]:
        """(kind, its pools) for the non-members, the other split, a clean model's cells, then each dose's members
        ("x<dose>"): what every rate is read on."""
        return [(kind, self.pools_of(kind)) for kind in (NON_MEMBERS, OTHER_SPLIT, "clean")] + \
            [(f"x{d:g}", [p for p in self.pools_of(MEMBERS) if p.dose == d]) for d in self.doses]

    @property
    def doses(self) -> list[float]:
        return sorted({pool.dose for pool in self.pools_of(MEMBERS) if pool.dose is not None})


def group_of(instance: Instance, conditions: dict[str, dict]) -> str:
    """The regime and dataset a model's numbers are grouped by (a card is fitted within one, and transferred), and
    the base model where the studies hold more than one: a card fitted on one model's runs is then applied to the
    other's (``card.transfer``), never fitted across them."""
    settings = conditions[instance.condition]
    group = f"{regime_of(settings)} · {settings['dataset']}"
    if len({c.get("model") for c in conditions.values()}) > 1:
        group += f" · {settings.get('model')}"
    return group


def _pool_kind(instance: Instance) -> str:
    if instance.positive:
        return MEMBERS
    if instance.cell.startswith("clean"):
        return "clean"
    if instance.cell.endswith("non_members"):
        return NON_MEMBERS
    return OTHER_SPLIT if instance.cell.endswith("other_split") else "clean"


def model_groups(instances: Sequence[Instance], known: Sequence[Instance],
                 conditions: dict[str, dict]) -> dict[str, list[Model]]:
    """Every model, per group (regime and dataset), with its known non-members (none where its studies read none:
    the recipe cannot be fitted for it, though a card can be applied to it) and its pools."""
    known_by_model: dict[str, list[Instance]] = defaultdict(list)
    for instance in distinct(known):
        known_by_model[instance.model].append(instance)
    cells: dict[tuple[str, str], dict[tuple[str, str], list[Instance]]] = defaultdict(lambda: defaultdict(list))
    for instance in instances:
        cells[(group_of(instance, conditions), instance.model)][(instance.condition, instance.cell)].append(instance)
    groups: dict[str, list[Model]] = defaultdict(list)
    clean_index: dict[str, int] = {}
    for (group, key), pools in sorted(cells.items()):
        every = [i for chosen in pools.values() for i in chosen]
        contaminated = any(i.positive for i in every)
        units = sorted({i.unit for i in every})
        if contaminated:
            unit = units[0]
        else:  # a clean model is a unit of its own, however many draws read it
            unit = (clean_index.setdefault(key, len(clean_index)), -1)
        model = Model(key, "contaminated" if contaminated else "clean", unit, units, known=known_by_model.get(key, []))
        seen = set()
        for (condition, _), chosen in sorted(pools.items()):
            chosen = distinct(chosen)
            signature = tuple(sorted(i.observation for i in chosen))
            if signature in seen:  # one computation, one pool (a never-planted group read under each group)
                continue
            seen.add(signature)
            kind = _pool_kind(chosen[0]) if contaminated else "clean"
            dose = conditions[condition].get("exposures") if kind == MEMBERS else None
            model.pools.append(Pool(kind, dose, chosen))
        groups[group].append(model)
    return dict(groups)
