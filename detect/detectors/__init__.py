"""The detectors, each a spec (``detect/detectors/base.py``) in its own module, found by name.

    detectors = build(cfg.detect.detectors)          # the run's detectors, from config (``_target_`` each)
    registry()["cheat"]                              # a detector class by its summary name
    read_back(cell_summary)                          # (class, block) for every detector block in a summary

Adding a detector: one module here with a ``Detector`` subclass, and one entry under ``detect.detectors`` in
``conf/detect/default.yaml`` (``_target_`` and its settings). Nothing else names it: the study, the summaries, the
reports and calibration iterate over what is registered.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Iterator

from detect.detectors.base import Detector, Evidence
from detect.detectors.time_travel import LEAK_SCORES, LeakReading
from detect.errors import InputError

__all__ = ["Detector", "Evidence", "registry", "build", "read_back", "describe"]


@cache
def registry() -> dict[str, type[Detector]]:
    """Every ``Detector`` subclass defined in this package, by name (modules are found, not listed)."""
    found: dict[str, type[Detector]] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name == "base":
            continue
        for value in vars(importlib.import_module(f"{__name__}.{module.name}")).values():
            if isinstance(value, type) and issubclass(value, Detector) and getattr(value, "name", None):
                found[value.name] = value
    return found


def build(detectors_cfg) -> list[Detector]:
    """The configured detectors in config order; an entry that is null or has ``enabled: false`` is off."""
    from omegaconf import DictConfig, OmegaConf

    from detect.cli import instantiate

    built = []
    for key, node in (detectors_cfg or {}).items():
        if node is None:
            continue
        settings = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)
        if not settings.pop("enabled", True):
            continue
        from detect.validate import check_node

        detector = instantiate(check_node(settings, where=f"detect.detectors.{key}",
                                          example="detect.detectors.cheat.ChatGPTCheat"))
        if not isinstance(detector, Detector) or detector.name != key:
            raise InputError(f"detect.detectors.{key}: _target_ {settings['_target_']} is not the detector "
                             f"named {key}; registered: {', '.join(registry())}")
        built.append(detector)
    return built


def read_back(summary: dict) -> Iterator[tuple[type[Detector], dict]]:
    """(detector class, its block) for every detector block in a (cell) summary, in the order it was written."""
    classes = registry()
    for key, block in summary.items():
        if key in classes:
            yield classes[key], block


def describe(name: str) -> str:
    """What a score, verdict or statistic needs of the model (the reports' "needs" column): the longest prefix
    of ``name`` a registered detector describes; '-' if none does."""
    described = {prefix: text for cls in registry().values() for prefix, text in cls.describes.items()}
    for prefix in sorted(described, key=len, reverse=True):
        if name.startswith(prefix):
            return described[prefix]
    return "-"


def instance_scores() -> tuple[str, ...]:
    """Every instance score a registered detector writes on guided rows."""
    return tuple(score for cls in registry().values() for score in cls.scores)


def reading_of(score: str) -> str:
    """How a score's text was read (a detector's ``reading``: the leak's rendering, an oracle reading, or the bare
    text); '' where a score has no second reading."""
    for cls in registry().values():
        if score in cls.scores:
            return cls.reading
    return LeakReading.reading if score in LEAK_SCORES else ""


def labelled(score: str) -> str:
    """A score's name as a table shows it: "loss (leak's rendering: oracle)", "loss_raw (bare text)"."""
    reading = reading_of(score)
    return f"{score} ({reading})" if reading else score
