"""Faults (issue 46 item 7): a study killed with SIGKILL during training, while the known non-members are read, and
during a cell's detection, started again, finishes with the results of a study never killed (every result file
byte for byte, timings and paths aside); a calibration killed mid-way and run again writes the same files; two
studies started at once on one cache train its checkpoint once and agree.

Each run is a real ``python -m contaminate`` process on the tiny model (tests/lean.py's detectors), killed the moment
its log says the stage began (contaminate/checkpoints.py logs "training <folder>", contaminate/stages.py
"detecting <cell>: ..."); a kill at that line lands inside the stage, whose work takes a second or more here."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lean import TINY_STUDY, lean

pytestmark = pytest.mark.slow

TINY = [*TINY_STUDY, *lean()]  # test_study.py's tiny study, lean
RESULTS = ("results.jsonl", "partition.jsonl", "known_non_members.jsonl")
VARIES = {"timings", "total_s", "detect_s", "load_s", "train_s", "cached_cells", "folder", "path", "output_dir",
          "reused", "created", "seconds", "cache_dir"}  # what a resumed run may say otherwise: times, paths, reuse


def launch(run: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "contaminate", *TINY, f"cache_dir={cache}", f"hydra.run.dir={run}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def finish(process: subprocess.Popen) -> str:
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-3000:]
    return output


def kill_at(process: subprocess.Popen, line: str) -> str:
    """SIGKILL the run the moment its output has ``line``; what it printed until then."""
    seen = []
    for text in process.stdout:
        seen.append(text)
        if line in text:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
            return "".join(seen)
    process.wait(timeout=60)
    pytest.fail(f"the run ended (exit {process.returncode}) before {line!r}: {''.join(seen)[-3000:]}")


def comparable(value):
    """``value`` without what may differ between a resumed run and one never killed."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VARIES}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def results(run: Path) -> dict:
    found = {name: (run / name).read_bytes() for name in RESULTS if (run / name).is_file()}
    found["summary.json"] = comparable(json.loads((run / "summary.json").read_text()))
    manifest = json.loads((run / "manifest.json").read_text())
    found["manifest.json"] = comparable({k: v for k, v in manifest.items() if k not in ("checkpoint", "git_commit")})
    return found


@pytest.fixture(scope="module")
def never_killed(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("never_killed")
    finish(launch(root / "run", root / "cache"))
    return results(root / "run")


# (stage, the line the kill follows, checkpoints finished and cells cached when it lands)
KILLS = [("training", "training ", 0, 0),
         # the clean model's cells come first, each model's known non-members first of its (contaminate/stages.py)
         ("the known non-members", "detecting clean_x_known_non_members", 1, 0),
         ("a cell's detection", "detecting contaminated_x_members", 1, 4)]


@pytest.mark.parametrize("stage, line, finished, cells", KILLS, ids=[kill[0] for kill in KILLS])
def test_a_study_killed_resumes_to_the_same_results(never_killed, tmp_path, stage, line, finished, cells):
    cache = tmp_path / "cache"
    printed = kill_at(launch(tmp_path / "killed", cache), line)
    assert not (tmp_path / "killed" / "summary.json").exists(), printed[-2000:]
    assert len(list((cache / "checkpoints").glob("*/lab_checkpoint.json"))) == finished
    assert len(list((cache / "checkpoints").glob("*/"))) == 1  # the one the kill left, finished or not
    assert len(list(cache.glob("cells/*.jsonl"))) == cells
    finish(launch(tmp_path / "resumed", cache))
    resumed = results(tmp_path / "resumed")
    assert resumed.keys() == never_killed.keys()
    for name in never_killed:
        assert resumed[name] == never_killed[name], f"killed during {stage}: {name} differs"


def test_two_studies_at_once_on_one_cache_train_once_and_agree(never_killed, tmp_path):
    cache = tmp_path / "cache"
    first, second = launch(tmp_path / "first", cache), launch(tmp_path / "second", cache)
    printed = finish(first) + finish(second)
    reused = sorted(json.loads((tmp_path / run / "manifest.json").read_text())["checkpoint"]["reused"]
                    for run in ("first", "second"))
    assert reused == [False, True], printed[-3000:]  # one trained; the other waited on its lock and reused it
    assert len(list((cache / "checkpoints").glob("*/lab_checkpoint.json"))) == 1
    for run in ("first", "second"):
        assert results(tmp_path / run) == never_killed


def test_a_calibration_killed_writes_the_same_files_when_run_again(tmp_path):
    """The calibration of the committed recipe studies (seconds), killed once it began writing, then run again."""
    studies = Path(__file__).parent.parent / "results" / "replicas_recipe_cpu" / "studies"
    command = [sys.executable, "-m", "contaminate.calibrate", str(studies), "--keep-studies"]
    subprocess.run([*command, "--out", str(tmp_path / "whole")], check=True, capture_output=True)
    killed = subprocess.Popen([*command, "--out", str(tmp_path / "again")])
    while not (tmp_path / "again" / "calibration.json").exists() and killed.poll() is None:
        time.sleep(0.005)  # until the first file is written: the kill lands among the writes
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=60) == -signal.SIGKILL  # killed while it ran, not after it finished
    subprocess.run([*command, "--out", str(tmp_path / "again")], check=True, capture_output=True)

    def files(folder: Path) -> dict:
        found = {}
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            if path.name == "calibration.json":
                data = json.dumps(comparable(json.loads(data)))
            elif path.suffix == ".md":  # calibration.md says when it was generated
                data = b"\n".join(line for line in data.splitlines() if b"Generated " not in line)
            found[str(path.relative_to(folder))] = data
        return found

    assert files(tmp_path / "again") == files(tmp_path / "whole")


def test_two_writers_of_one_cell_do_not_take_each_others_scratch_file(tmp_path, monkeypatch):
    """The race test_two_studies_at_once hit once in CI, made to happen: a second run writes the same cell between
    the first's write and its rename. With one shared scratch name the first's rename found its file gone
    (FileNotFoundError); each writer's own scratch file lets both finish, the cell whole."""
    from detect import cache
    from detect.pipeline import write_jsonl

    cell, rows = tmp_path / "cells" / "abc.jsonl", [{"row": 1}, {"row": 2}]
    real_replace, raced = os.replace, []

    def replace_after_a_second_writer(source, target):
        if not raced:
            raced.append(True)
            cache.write_atomically(cell, write)  # the other run, between this write and this rename
        real_replace(source, target)

    def write(scratch):
        write_jsonl(scratch, rows)

    monkeypatch.setattr(cache.os, "replace", replace_after_a_second_writer)
    cache.write_atomically(cell, write)
    assert raced and [json.loads(line) for line in cell.read_text().splitlines()] == rows
    assert [p.name for p in cell.parent.iterdir()] == ["abc.jsonl"]  # no scratch file left behind
    umask = os.umask(0)
    os.umask(umask)
    assert cell.stat().st_mode & 0o777 == 0o666 & ~umask  # the umask's mode: mkstemp's 0600 shuts other users out


def test_a_failed_write_leaves_the_old_file_and_no_scratch(tmp_path):
    """A writer that fails half-way (a full disk, a row JSON cannot write) leaves the file as it was and no scratch
    file beside it; the error is the writer's."""
    from detect.cache import write_atomically

    target = tmp_path / "cell.jsonl"
    target.write_text("old\n")

    def fails(scratch):
        scratch.write_text("half")
        raise OSError("No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(target, fails)
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["cell.jsonl"]
