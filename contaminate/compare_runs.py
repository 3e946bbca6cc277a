"""Do two runs of ``python -m contaminate`` say the same thing? Every JSON and JSONL file of the first run folder
(summary.json, results.jsonl, partition.jsonl, manifest.json, train_log.json; a planted run's plant.json and
groups/*) against the second's, after dropping what differs by construction: times and rates, checkpoint ids (a
fresh id per training run), commits, package versions, which cells came from the cache, and each run's own folder
and cache folder in paths (a post-trained checkpoint's parent is named by the parent's id: dropped too). For a
refactor that must not change results: run the same command from a worktree of each commit, each with its own
empty cache, then

    python -m contaminate.compare_runs runs/before runs/after      # "TOTAL differences: 0" where they agree

(issue 33: the default study and a planted run on the tiny model, before and after the one recipe: 0 differences
in summaries, rows and partition rows; the manifests differ in training speed alone.)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

from detect.cli import one_line_errors
from detect.errors import InputError

VOLATILE = {"id", "seconds", "git_commit", "folder", "timings", "created", "reused", "packages", "cached_cells",
            "train_runtime", "train_samples_per_second", "train_steps_per_second", "tokens_per_second",
            "trained_tokens_per_s", "train_seconds", "post_train_seconds"}


def places(run: Path) -> list[tuple[str, str]]:
    """The run's own folder and cache folder, as they appear in its paths, with the placeholder for each."""
    cfg = yaml.safe_load((run / "config.yaml").read_text()) if (run / "config.yaml").exists() else {}
    found = [(str(run.resolve()), "RUN"), (str(run), "RUN")]
    if cfg.get("cache_dir"):
        found += [(str(Path(cfg["cache_dir"]).resolve()), "CACHE"), (str(cfg["cache_dir"]), "CACHE")]
    return sorted(found, key=lambda pair: -len(pair[0]))  # the longest first: a cache inside the run folder


def normalised(value, run_places: list[tuple[str, str]]):
    if isinstance(value, dict):
        return {k: normalised(v, run_places) for k, v in value.items()
                if k not in VOLATILE and not k.endswith("_s")
                and not (k == "checkpoint" and isinstance(v, str))}  # a parent named by its checkpoint's id
    if isinstance(value, list):
        return [normalised(v, run_places) for v in value]
    if isinstance(value, str):
        for place, placeholder in run_places:
            value = value.replace(place, placeholder)
        return re.sub(r"/+", "/", value)
    return value


def load(path: Path):
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    return json.loads(path.read_text())


def differences(a, b, where: str, shown: list[str]) -> int:
    if type(a) is not type(b):
        shown.append(f"{where}: {type(a).__name__} against {type(b).__name__}")
        return 1
    if isinstance(a, dict):
        count = 0
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                shown.append(f"{where}/{key}: only in the {'first' if key in a else 'second'}")
                count += 1
            else:
                count += differences(a[key], b[key], f"{where}/{key}", shown)
        return count
    if isinstance(a, list):
        if len(a) != len(b):
            shown.append(f"{where}: {len(a)} items against {len(b)}")
            return 1
        return sum(differences(x, y, f"{where}[{i}]", shown) for i, (x, y) in enumerate(zip(a, b)))
    if a != b:
        shown.append(f"{where}: {str(a)[:100]!r} against {str(b)[:100]!r}")
        return 1
    return 0


def records(run: Path) -> set[Path]:
    return {path.relative_to(run) for path in run.rglob("*.json*") if path.suffix in (".json", ".jsonl")
            and ".hydra" not in path.parts and "checkpoint" not in path.parts}


def compare(first: Path, second: Path) -> int:
    for run in (first, second):  # two empty or missing folders would agree on nothing at all: not a proof
        if not records(run):
            raise InputError(f"{run} holds no run's records (summary.json, results.jsonl, plant.json, ...); give "
                             f"the run folder python -m contaminate wrote (hydra.run.dir)")
    total = 0
    places_a, places_b = places(first), places(second)
    for name in sorted(records(first) | records(second)):
        if not (first / name).exists() or not (second / name).exists():
            print(f"{name}: only in the {'first' if (first / name).exists() else 'second'} run")
            total += 1
            continue
        shown: list[str] = []
        count = differences(normalised(load(first / name), places_a), normalised(load(second / name), places_b),
                            str(name), shown)
        print(f"{name}: " + ("identical" if not count else f"{count} differences"))
        for line in shown[:20]:
            print(f"  {line}")
        total += count
    print(f"TOTAL differences: {total}")
    return total


if __name__ == "__main__":
    with one_line_errors():
        sys.exit(1 if compare(Path(sys.argv[1]), Path(sys.argv[2])) else 0)
