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
