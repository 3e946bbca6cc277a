"""Markdown tables: the one way the lab writes them (a study's report.md, a planted run's plant.md, calibration.md,
the committed results' tables). Cells are written as given (``str``); each table's numbers are formatted where it
knows what they are."""

from __future__ import annotations

from typing import Iterable, Sequence


def row(cells: Iterable[object]) -> str:
    """One table line: ``| a | b |`` (an empty cell ``| |``)."""
    return "|" + "|".join(f" {text} " if text else " " for text in map(str, cells)) + "|"


def table(header: Sequence[object], rows: Iterable[Iterable[object]] = ()) -> list[str]:
    """A table's lines: the header, its rule, a line a row (rows may be added later with ``row``)."""
    return [row(header), "|" + "---|" * len(header), *(row(cells) for cells in rows)]


def interval_text(estimate: object, low: object, high: object, spec: str = ".2f") -> str:
    """An estimate with its interval, the one way the lab writes it: ``"0.17 [0.00, 0.60]"`` (``spec`` formats all
    three: ``"+.3f"`` gives ``"+0.080 [-0.009, +0.169]"``). Numbers a caller formats itself (``"never"``, a count)
    pass as text with ``spec=""``."""
    return f"{estimate:{spec}} [{low:{spec}}, {high:{spec}}]"
