"""Where replicas appear (issue 45 item 4; conf/experiment/replicas_cpu.yaml): for each training setting and reading,
Algorithm 2's exact + near-exact labels of each dose's members, the smallest dose at which a group meets the paper's
rule, and what the same reading labels where nothing was trained (the never-planted group, the known non-members).

    python -m contaminate +experiment=replicas_cpu contaminate.learning_rate=3e-4 contaminate.batch_size=4   # and
    #   the same + detect.elicit.shots=3, + post_train=elicit: each a reading of the same checkpoint
    python -m contaminate.analyses.replicas --keep runs/replicas_cpu results/replicas_cpu/studies   # the records kept
    python -m contaminate.analyses.replicas results/replicas_cpu/studies > results/replicas_cpu/tables.md

Reads every run folder below the given one with ``plant.json``, ``config.yaml`` and its groups' rows
(``groups/<name>/results.jsonl[.gz]``); the labels are counted from the rows (contaminate/analyses/within_model.py),
so a run whose plant.json predates a pool is read the same. A reading is the run's guided prompt (plain, k-shot,
after post-training) or the leak reading (an oracle: the first piece inside the leak's own rendering). One draw a
run: counts of a few members, an existence ladder, not a rate.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Iterator

import yaml

from contaminate.analyses.within_model import answers, replicas
from detect.markdown import row as markdown_row
from detect.markdown import table

MIN_EXACT, MIN_NEAR_EXACT = 1, 2  # Algorithm 2's rule on a group (conf/detect/default.yaml alg2)


KEPT = ("plant.json", "plant.md", "config.yaml")


def kept_runs(runs_folder: str | Path, out: str | Path) -> Iterator[tuple[Path, Path]]:
    """Each finished planted run under ``runs_folder`` (it has plant.json) and its folder ``out/<run>/``, with the
    run's records (``KEPT``) copied into it; never a checkpoint."""
    for plant in sorted(Path(runs_folder).rglob("plant.json")):
        run, target = plant.parent, Path(out) / plant.parent.name
        target.mkdir(parents=True, exist_ok=True)
        for name in KEPT:
            shutil.copy(run / name, target / name)
        yield run, target


def keep(runs_folder: str | Path, out: str | Path) -> list[str]:
    """Copy each finished run's records into ``out/<run>/``: plant.json, plant.md, config.yaml and each group's rows
    (``groups/<name>/results.jsonl.gz``), what the table is read from; never a checkpoint."""
    kept = []
    for run, target in kept_runs(runs_folder, out):
        for rows in sorted((run / "groups").glob("*/results.jsonl")):
            (target / "groups" / rows.parent.name).mkdir(parents=True, exist_ok=True)
            (target / "groups" / rows.parent.name / "results.jsonl.gz").write_bytes(
                gzip.compress(rows.read_bytes(), mtime=0))
        kept.append(run.name)
    return kept


def read_rows(folder: Path) -> dict[str, list[dict]]:
    """A group's rows by cell (results.jsonl, or the .gz a results folder keeps)."""
    path = folder / "results.jsonl"
    text = path.read_text() if path.exists() else gzip.decompress((folder / "results.jsonl.gz").read_bytes()).decode()
    cells: dict[str, list[dict]] = {}
    for line in text.splitlines():
        row = json.loads(line)
        cells.setdefault(row.get("cell"), []).append(row)
    return cells


def post_training(config: dict) -> str:
    """The post-training stage a run's model had ("" for none), with its learning rate where it is not the leak's."""
    stage = config.get("post_train") or {}
    if (stage.get("name") or "none") == "none":
        return ""
    rate = stage.get("learning_rate")
    own = rate is not None and float(rate) != float(config["contaminate"]["learning_rate"])
    return f"after post_train={stage['name']}" + (f" at lr {float(rate):g}" if own else "")


def reading(config: dict) -> str:
    """The guided reading a run's settings make: plain, k-shot, or after a post-training stage."""
    shots = int(((config.get("detect") or {}).get("elicit") or {}).get("shots") or 0)
    post = post_training(config)
    parts = ([f"{shots}-shot"] if shots else []) + ([post] if post else [])
    return "guided, " + (", ".join(parts) or "plain")


def batch(contaminate: dict) -> int:
    """Documents an optimizer step: the per-device batch times gradient accumulation (a batch of 16 that does not fit
    in memory runs as 4 x 4: the same setting)."""
    accumulation = int((contaminate.get("trainer") or {}).get("gradient_accumulation_steps") or 1)
    return int(contaminate["batch_size"]) * accumulation


def read_runs(folder: str | Path) -> list[dict]:
    """Every finished run below ``folder``: its setting and reading (config.yaml) and its groups' labels (rows)."""
    runs = []
    for plant in sorted(Path(folder).rglob("plant.json")):
        config = yaml.safe_load((plant.parent / "config.yaml").read_text())
        record = json.loads(plant.read_text())
        groups = []
        known = {}  # each dataset's known non-members' guided ROUGE-L, each instance once (every group serves them)
        for group in record["groups"]:
            rows_folder = plant.parent / "groups" / group["name"]
            # the never-planted group has no folder of its own: it is every planted group's non-members
            has_rows = any((rows_folder / name).exists() for name in ("results.jsonl", "results.jsonl.gz"))
            rows = read_rows(rows_folder) if has_rows else {}
            groups.append({"name": group["name"], "exposures": group["exposures"],
                           "dataset": group.get("dataset") or record["dataset"],
                           "token_share": group.get("token_share"), "replicas": replicas(rows),
                           "answers": answers(rows)})
            for row in rows.get("contaminated_x_known_non_members", []):
                if row.get("instruction") == "guided" and row.get("rouge_l") is not None:
                    known.setdefault(row["dataset"], {})[row["instance_id"]] = row["rouge_l"]
        runs.append({"folder": plant.parent.name, "learning_rate": float(config["contaminate"]["learning_rate"]),
                     "known_rouge_l": {d: list(v.values()) for d, v in known.items()},
                     "batch_size": batch(config["contaminate"]), "reading": reading(config),
                     "steps": record["checkpoint"]["steps"], "train_seconds": record["checkpoint"]["train_seconds"],
                     "training_tokens": record["stream"]["training_tokens"], "groups": groups,
                     "post_train_seconds": record.get("post_train_seconds"), "post_training": post_training(config)})
    if not runs:
        raise SystemExit(f"{folder}: no run with plant.json and config.yaml below it; run "
                         "python -m contaminate +experiment=replicas_cpu first")
    return sorted(runs, key=lambda r: (-r["learning_rate"], r["batch_size"], r["reading"] != "guided, plain",
                                       r["reading"]))


def meets_rule(block: dict | None) -> bool:
    return bool(block) and (block["exact"] >= MIN_EXACT or block["near_exact"] >= MIN_NEAR_EXACT)


def counts(block: dict | None) -> str:
    return "-" if not block else f"{block['exact']} + {block['near_exact']} / {block['n']}"


def smallest_dose(groups: list[dict], key: str) -> str:
    """The smallest dose whose members meet Algorithm 2's rule under this reading; "none to xN" if none does."""
    planted = [g for g in groups if g["exposures"]]
    for group in planted:
        if meets_rule(((group["replicas"].get(key) or {}).get("members"))):
            return f"x{group['exposures']}"
    return f"none to x{planted[-1]['exposures']}" if planted else "-"


def follow(groups: list[dict], key: str, pool: str) -> str:
    """The reading's follow rate on one pool (every group reads the same known non-members: the first says it)."""
    for group in groups:
        block = (group["answers"].get(key) or {}).get(pool)
        if block:
            return f"{block['follow_rate']:.2f} of {block['n']}"
    return "-"


def dataset_table(runs: list[dict], dataset: str) -> list[str]:
    """One dataset's rows: per setting and reading, exact + near-exact of n by dose, the never-planted group, the
    known non-members, the follow rate on the known non-members and the smallest dose meeting the rule."""
    first = [g for g in runs[0]["groups"] if g["dataset"] == dataset]
    doses = [g for g in first if g["exposures"]]
    lines = table(["setting", "reading", "known non-members follow", *(f"x{g['exposures']}" for g in doses),
                   "never planted", "known non-members", "smallest dose"])
    leaks_shown: set[tuple] = set()
    for run in runs:
        groups = [g for g in run["groups"] if g["dataset"] == dataset]
        if not groups:
            continue
        setting = f"lr {run['learning_rate']:g}, {run['batch_size']} a batch"
        # the leak reading does not depend on the guided prompt's shots: one row a trained model
        model = (run["learning_rate"], run["batch_size"], run["post_training"])
        readings = [("guided", run["reading"])]
        if model not in leaks_shown and any(g["replicas"].get("leak") for g in groups):
            leaks_shown.add(model)
            readings.append(("leak", "leak (oracle)" + (f", {model[2]}" if model[2] else "")))
        never = next((g for g in groups if not g["exposures"]), None)
        for key, label in readings:
            planted = [g for g in groups if g["exposures"]]
            cells = [counts((g["replicas"].get(key) or {}).get("members")) for g in planted]
            control = (planted[0]["replicas"].get(key) or {}).get("non_members") if planted else None
            known = (planted[0]["replicas"].get(key) or {}).get("known_non_members") if planted else None
            named = f" ({never['name']})" if never and control else ""
            lines.append(markdown_row([setting, label, follow(groups, key, "known_non_members"), *cells,
                                       f"{counts(control)}{named}", counts(known), smallest_dose(groups, key)]))
    return lines


def main(folder: str) -> str:
    runs = read_runs(folder)
    datasets = list(dict.fromkeys(g["dataset"] for g in runs[0]["groups"]))
    lines = ["## Runs", "", *table(["setting", "reading", "steps", "training tokens", "train s", "post-train s"])]
    for run in runs:
        post = "-" if run["post_train_seconds"] is None else f"{run['post_train_seconds']:.0f}"
        lines.append(markdown_row([f"lr {run['learning_rate']:g}, {run['batch_size']} a batch", run["reading"],
                                   run["steps"], f"{run['training_tokens']:,}", f"{run['train_seconds']:.0f}", post]))
    for dataset in datasets:
        shares = ", ".join(f"x{g['exposures']} {g['token_share']:.2%}" for g in runs[0]["groups"]
                           if g["dataset"] == dataset and g["exposures"] and g.get("token_share") is not None)
        lines += ["", f"## {dataset}", "",
                  f"Algorithm 2's labels, exact + near-exact of n, by dose (one model a setting, draw 0: counts, no "
                  f"interval); its rule on a group: >= {MIN_EXACT} exact or >= {MIN_NEAR_EXACT} near-exact. Share of "
                  f"the training tokens: {shares}.", "", *dataset_table(runs, dataset)]
    lines += ["", "## The known non-members' guided answers, by reading", "",
              "Each reading's ROUGE-L of the known non-members' guided answers against their true second pieces "
              "(never trained: what a threshold fitted on them sees): the tail elicitation moves. One model a "
              "setting, draw 0.", "",
              *table(["setting", "reading", *(f"{d} {what}" for d in datasets
                                               for what in ("mean", "max", ">= 0.75"))])]
    for run in runs:
        cells = []
        for dataset in datasets:
            values = run["known_rouge_l"].get(dataset) or []
            cells += ([f"{sum(values) / len(values):.2f}", f"{max(values):.2f}",
                       f"{sum(v >= 0.75 for v in values)}/{len(values)}"] if values else ["-"] * 3)
        lines.append(markdown_row([f"lr {run['learning_rate']:g}, {run['batch_size']} a batch", run["reading"],
                                   *cells]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--keep":
        print("kept:", ", ".join(keep(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) == 2:
        sys.stdout.write(main(sys.argv[1]))
    else:
        raise SystemExit("usage: python -m contaminate.analyses.replicas <folder of replicas_cpu runs> "
                         "| --keep <runs> <out>")
