"""contaminate/compare_runs.py, the check a behaviour-preserving refactor is held to: what differs by construction
(times, checkpoint ids, each run's own folders in paths) is not a difference; a changed score, a missing row or a file
only one run wrote is, counted one by one."""

import json
from pathlib import Path

import pytest

from contaminate import compare_runs
from detect.errors import InputError

ROOT = Path(__file__).resolve().parent.parent


def write_run(folder: Path, *, score: float, rows: int, extra: bool = False) -> Path:
    folder.mkdir(parents=True)
    cache = folder.parent / f"{folder.name}-cache"
    (folder / "config.yaml").write_text(f"cache_dir: {cache}\n")
    (folder / "summary.json").write_text(json.dumps({"cells": {"a": {"score": score}}, "timings": {"total_s": 1}}))
    (folder / "manifest.json").write_text(json.dumps({
        "checkpoint": {"id": folder.name, "folder": str(cache / "checkpoints" / "x"), "train_seconds": 3.0,
                       "path": str(cache / "checkpoints" / "x")},
        "detect_s": 12.5, "log": str(folder / "train_log.json"),
        "post_train": {"parent": {"checkpoint": f"{folder.name}-parent"}}}))  # post-training's parent: by its id
    (folder / "results.jsonl").write_text("".join(json.dumps({"row": i}) + "\n" for i in range(rows)))
    if extra:
        (folder / "plant.json").write_text("{}")
    return folder


def test_runs_that_differ_only_by_construction_are_identical(tmp_path, capsys):
    first = write_run(tmp_path / "before", score=0.5, rows=3)
    second = write_run(tmp_path / "after", score=0.5, rows=3)
    assert compare_runs.compare(first, second) == 0
    assert "TOTAL differences: 0" in capsys.readouterr().out


def test_a_changed_score_a_missing_row_and_a_file_of_one_run_are_counted(tmp_path, capsys):
    first = write_run(tmp_path / "before", score=0.5, rows=3)
    second = write_run(tmp_path / "after", score=0.25, rows=2, extra=True)
    assert compare_runs.compare(first, second) == 3  # the score, the rows' count, plant.json
    out = capsys.readouterr().out
    assert "summary.json/cells/a/score: '0.5' against '0.25'" in out
    assert "results.jsonl: 3 items against 2" in out
    assert "plant.json: only in the second run" in out


def test_a_folder_without_records_is_refused_not_counted_as_agreeing(tmp_path):
    """Two missing run folders (a run that failed, a script that removed them) once printed TOTAL differences: 0."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text("{}")
    for first, second in [(tmp_path / "gone", tmp_path / "gone_too"), (tmp_path / "run", tmp_path / "gone")]:
        with pytest.raises(InputError, match="holds no run's records"):
            compare_runs.compare(first, second)
