"""Did the models answer? Each generated answer's class (detect/detectors/time_travel/follow.py) over a sweep's studies,
by dataset, reading, pool and dose, with the follow rate's mean over independent units (member draws).

    python -m contaminate.analyses.answers results/profile_cpu/{humaneval,synth_nli}/studies

The classes are recomputed from each row's raw answer (a study written before the classifier has none stored), so a
committed sweep says how often its model answered the paper's instruction at all. The pools are the contaminated
model's cells: its members at each dose, the never-planted group and the known non-members (both shared by every
dose of a planted run: counted once a run). The follow rate is each run's share of continuations, averaged over
draws with ``unit_interval``'s t-interval (three draws at least).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from contaminate.calibration.statistics import share_interval
from contaminate.calibration.studies import find_studies, read_json, read_text, unit_of
from contaminate.reports.calibration_regimes import interval
from detect import markdown
from detect.detectors.time_travel.follow import CLASSES, FOLLOWED, classify_row

POOLS = (("members", "contaminated_x_members"), ("never planted", "contaminated_x_non_members"),
         ("known non-members", "contaminated_x_known_non_members"))
READINGS = ("guided", "general", "leak")


def collect(folders: Sequence[str | Path]) -> dict[str, dict]:
    """dataset -> {(reading, pool, dose): {unit: [class, ...]}}, the dose None for the pools every dose shares."""
    import json

    found: dict[str, dict] = defaultdict(lambda: defaultdict(dict))
    for study in find_studies(folders):
        manifest = read_json(study / "manifest.json")
        dataset, seeds = manifest["dataset"], manifest["seeds"]
        unit = unit_of(seeds["sampling"], seeds["training"])
        dose = (manifest.get("regime") or {}).get("exposures")
        rows = [json.loads(line) for line in read_text(study / "results.jsonl").splitlines() if line.strip()]
        for pool, cell in POOLS:
            at = dose if pool == "members" else None  # the other pools are every dose's own, counted once a run
            for reading in READINGS:
                classes = [row.get("answer_class") or classify_row(row, dataset.get("title", "")) for row in rows
                           if row.get("cell") == cell and row.get("instruction") == reading
                           and row.get("raw_completion") is not None]
                if classes:
                    found[dataset["key"]][(reading, pool, at)].setdefault(unit, classes)
    return found


def table(folders: Sequence[str | Path]) -> str:
    """The markdown tables: per dataset, a row per (reading, pool, dose) with the answers' classes pooled and the
    follow rate over draws."""
    lines = []
    for dataset, groups in sorted(collect(folders).items()):
        units = {unit for by_unit in groups.values() for unit in by_unit}
        draws = len({draw for draw, _ in units})
        lines += [f"#### {dataset}", "",
                  f"The contaminated model's answers, {draws} draw{'s' * (draws != 1)} ({len(units)} models): each "
                  f"class's share of the answers pooled, and the follow rate (continuations) as a mean over draws.", "",
                  *markdown.table(["reading", "pool", "dose", "answers", *(c.replace("_", " ") for c in CLASSES),
                          "follow rate"])]
        order = {name: i for i, (name, _) in enumerate(POOLS)}
        for (reading, pool, dose), by_unit in sorted(groups.items(), key=lambda item: (
                READINGS.index(item[0][0]), order[item[0][1]], item[0][2] or 0)):
            counts = Counter(c for classes in by_unit.values() for c in classes)
            n = sum(counts.values())
            rate = share_interval({u: np.array([c == FOLLOWED for c in classes], float)
                                   for u, classes in by_unit.items()})
            lines.append(markdown.row([reading, pool, "-" if dose is None else f"x{dose}", n,
                                       *(f"{counts.get(c, 0) / n:.2f}" for c in CLASSES), interval(rate)]))
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> str:
    from detect.cli import one_line_errors

    with one_line_errors():
        folders = list(sys.argv[1:] if argv is None else argv)
        if not folders:
            from detect.errors import InputError

            raise InputError("give the folders of finished studies (a sweep's kept studies), e.g. "
                             "results/profile_cpu/humaneval/studies")
        text = table(folders)
    return text


if __name__ == "__main__":
    print(main(), end="")
