"""Each group's config: a planted group's own dataset and format as Hydra composed them under ``plant.datasets`` /
``plant.formats`` (``+dataset@plant.datasets.<name>=<name>``, or an experiment's defaults), its format object, and
the run's planted groups. The recipe (contaminate/run.py) reads every group through these, a study's two groups and
a planted run's alike.
"""

from __future__ import annotations

from typing import Sequence

from omegaconf import OmegaConf

from contaminate.regime.layouts import build_format
from contaminate.regime.plant import PlantedGroup, plant_groups
from detect.errors import InputError


def planted_groups(cfg) -> list:
    """The run's planted groups (``plant``; [] for a study), a group's dataset and format the same as unset where
    they are the run's."""
    dataset, fmt = cfg.get("dataset"), cfg.get("format")
    return plant_groups(cfg.get("plant"), dataset.key if dataset else None, fmt.name if fmt else None)


def group_config(cfg, group: PlantedGroup):
    """The run's config as one group's study sees it: its dataset and format where the group names its own, as Hydra
    composed them under ``plant.datasets`` / ``plant.formats`` (``+dataset@plant.datasets.<name>=<name>``,
    ``+format@plant.formats.<name>=<name>``, or an experiment's defaults: then ``plant.datasets.<name>.<key>=...`` on
    the command line reaches the group); one line where a group names one that is not composed."""
    if group.dataset is None and group.format is None:
        return cfg
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    for key in ("dataset", "format"):
        name = getattr(group, key)
        if name is not None:
            composed = composed_options(cfg, key)
            if name not in composed:
                raise InputError(f"plant group {group.name} plants {key} {name}, which is not composed; add "
                                 f"+{key}@plant.{key}s.{name}={name} (an experiment: - /{key}@plant.{key}s.{name}: "
                                 f"{name} in its defaults)")
            cfg[key] = composed[name]
    return cfg


def composed_options(cfg, key: str) -> dict:
    """The groups' own datasets (``key="dataset"``) or formats Hydra composed under ``plant.datasets`` /
    ``plant.formats``, by config name."""
    return dict((cfg.get("plant") or {}).get(f"{key}s") or {})


def check_composed(cfg, groups: Sequence[PlantedGroup]) -> None:
    """A dataset or format composed for the groups that no group names would be silently unused: one line."""
    for key in ("dataset", "format"):
        named = {getattr(g, key) for g in groups}
        for name in composed_options(cfg, key):
            if name not in named:
                raise InputError(f"plant.{key}s.{name} is composed but no plant group names {key}: {name}; give a "
                                 f"group {key}: {name} in plant.groups, or drop +{key}@plant.{key}s.{name}")


def group_formats(cfg, groups: Sequence[PlantedGroup], run_format) -> tuple[dict, dict]:
    """Each group's config (``group_config``) and format object, each format checked against its group's dataset
    (one line where a format cannot lay the dataset out); the run's format object is shared, not rebuilt."""
    configs = {g.name: group_config(cfg, g) for g in groups}
    built = {cfg.format.name: run_format}
    formats = {}
    for group in groups:
        group_cfg = configs[group.name]
        if group_cfg.format.name not in built:
            built[group_cfg.format.name] = build_format(group_cfg.format)
        formats[group.name] = built[group_cfg.format.name]
        if group.planted and (group.dataset or group.format):
            try:
                formats[group.name].check(group_cfg.dataset)
            except InputError as error:
                raise InputError(f"plant group {group.name}: {error}") from None
            # the models are opened once, prompting as the run's format asks (detect.prompt_format)
            asked, run = group_cfg.detect.get("prompt_format"), cfg.detect.get("prompt_format")
            if asked != run:
                raise InputError(f"plant group {group.name}: format={group_cfg.format.name} is prompted as {asked} "
                                 f"and the run's format={cfg.format.name} as {run}; plant it in a run of its own "
                                 f"format, or set detect.prompt_format for both")
    return configs, formats
