"""The pilot's table (issue 34 item 5; conf/experiment/pilot_cpu.yaml): one planted run per training setting, and
the setting the CPU profile takes, chosen by a rule written here rather than by eye.

    python -m contaminate -m +experiment=pilot_cpu
    # the records a results folder keeps
    python -m contaminate.analyses.pilot --keep runs/pilot_cpu results/pilot_cpu/studies
    python -m contaminate.analyses.pilot results/pilot_cpu/studies > results/pilot_cpu/tables.md

Reads every run folder below the given one that has ``plant.json`` and ``config.yaml`` (the runs themselves, or
the copies results/pilot_cpu/studies keeps). The rule: a setting qualifies when its within-model loss AUC spans the
range, x1 <= 0.75 (one exposure not yet memorised) and the top dose >= 0.95 (memorised); among those, the widest
span (top dose minus x1), then the lower learning rate. One model a setting, 8 members against 8 never-planted
problems a dose: a pilot's point estimates, no interval (an AUC from 8 against 8 has a standard error near 0.1).
Algorithm 2's two readings are shown for the runs that generated them (the pilot runs them on the chosen setting).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import yaml

from contaminate.analyses.replicas import kept_runs
from detect.markdown import row as markdown_row
from detect.markdown import table

X1_AT_MOST, TOP_AT_LEAST = 0.75, 0.95  # the rule: the loss curve neither saturated at x1 nor flat at the top
EXPERIMENT = Path(__file__).resolve().parents[2] / "conf" / "experiment" / "pilot_cpu.yaml"
SCORES = ("loss", "zlib", "min_k", "min_k_plus", "dc_pdd", "loss_raw")  # beside the chosen setting
BASE_CELLS = ("clean_x_members", "clean_x_non_members")  # plant.control=base: the untouched model's readings


def keep(runs_folder: str | Path, out: str | Path) -> list[str]:
    """Copy each finished run's records into ``out/<run>/``, with ``base_scores.jsonl.gz``: the untouched base
    model's loss of each group's members and of the never-planted group (the study's clean cells), so that the
    table can show how far apart the same groups are before any training (chance, up to the noise of 8 against 8)."""
    kept = []
    for run, target in kept_runs(runs_folder, out):
        rows = [{"group": group.name, "cell": row["cell"], "instance_id": row["instance_id"], "loss": row["loss"]}
                for group in sorted((run / "groups").iterdir())
                for row in map(json.loads, (group / "results.jsonl").read_text().splitlines())
                if row["cell"] in BASE_CELLS and row.get("instruction") == "guided" and row.get("loss") is not None]
        if rows:
            text = "".join(json.dumps(row) + "\n" for row in rows)
            (target / "base_scores.jsonl.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        kept.append(run.name)
    return kept


def base_aucs(folder: Path) -> dict[str, float]:
    """Each group's loss AUC under the untouched base model (its members against the never-planted group)."""
    from contaminate.calibration.statistics import auc

    path = folder / "base_scores.jsonl.gz"
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
    found = {}
    for group in sorted({r["group"] for r in rows}):
        pos = [r["loss"] for r in rows if r["group"] == group and r["cell"] == "clean_x_members"]
        neg = [r["loss"] for r in rows if r["group"] == group and r["cell"] == "clean_x_non_members"]
        if pos and neg:
            found[group] = round(auc(pos, neg), 4)
    return found


def read_runs(folder: str | Path) -> list[dict]:
    """Every finished run below ``folder``: its setting (from its resolved config.yaml) and plant.json."""
    runs = []
    for plant in sorted(Path(folder).rglob("plant.json")):
        config = yaml.safe_load((plant.parent / "config.yaml").read_text())
        record = json.loads(plant.read_text())
        runs.append({"folder": plant.parent.name, "base_auc": base_aucs(plant.parent),
                     "learning_rate": float(config["contaminate"]["learning_rate"]),
                     "batch_size": int(config["contaminate"]["batch_size"]),
                     "method": "full" if config["contaminate"].get("peft") is None else "lora", **record})
    if not runs:
        raise SystemExit(f"{folder}: no run with plant.json and config.yaml below it; run "
                         "python -m contaminate -m +experiment=pilot_cpu first")
    return sorted(runs, key=lambda r: (r["method"], r["learning_rate"], r["batch_size"]))


def swept(experiment: Path = EXPERIMENT) -> list[tuple[float, int]]:
    """The (learning rate, documents a batch) settings the pilot's sweep runs."""
    params = yaml.safe_load(experiment.read_text())["hydra"]["sweeper"]["params"]
    return [(float(lr), int(batch)) for lr in str(params["contaminate.learning_rate"]).split(",")
            for batch in str(params["contaminate.batch_size"]).split(",")]


def missing(runs: list[dict], experiment: Path = EXPERIMENT) -> list[tuple[float, int]]:
    have = {(r["learning_rate"], r["batch_size"]) for r in runs}
    return [setting for setting in swept(experiment) if setting not in have]


def planted(run: dict) -> list[dict]:
    return sorted((g for g in run["groups"] if g["exposures"]), key=lambda g: g["exposures"])


def group_auc(group: dict, score: str = "loss") -> float | None:
    return (group.get("within_model_auc") or {}).get(score)


def meets_rule(run: dict) -> bool:
    groups = planted(run)
    low, top = group_auc(groups[0]), group_auc(groups[-1])
    return (groups[0]["exposures"] == 1 and low is not None and top is not None
            and low <= X1_AT_MOST and top >= TOP_AT_LEAST)


def chosen(runs: list[dict]) -> dict | None:
    """The qualifying setting with the widest loss-AUC span, then the lower learning rate; None if none qualifies."""
    qualifying = [r for r in runs if meets_rule(r)]
    if not qualifying:
        return None
    return min(qualifying, key=lambda r: (-round(group_auc(planted(r)[-1]) - group_auc(planted(r)[0]), 4),
                                          r["learning_rate"],
                                          r["batch_size"]))


def setting(run: dict) -> str:
    return f"{run['method']}, lr {run['learning_rate']:g}, {run['batch_size']} docs a batch"


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def settings_table(runs: list[dict]) -> list[str]:
    doses = [g["name"] for g in planted(runs[0])]
    lines = table(["setting", "steps", "training tokens", "train s", "final loss", *(f"loss AUC {d}" for d in doses),
                   "rule"])
    for run in runs:
        checkpoint = run["checkpoint"]
        lines.append(markdown_row([setting(run), checkpoint["steps"], f"{run['stream']['training_tokens']:,}",
                                   f"{checkpoint['train_seconds']:.0f}", _f(checkpoint.get("final_loss")),
                                   *(_f(group_auc(g)) for g in planted(run)), "meets" if meets_rule(run) else "-"]))
    base = next((run for run in runs if run["base_auc"]), None)
    if base is not None:  # every run reads the same groups (one draw): the untouched model's AUC is one row
        lines.append(markdown_row(["untouched base model, the same groups", "-", "-", "-", "-",
                                   *(_f(base["base_auc"].get(g["name"])) for g in planted(base)), "-"]))
    return lines


def replicas_table(runs: list[dict]) -> list[str]:
    """Algorithm 2's judge labels of each dose's members, both readings: exact + near-exact of n."""
    doses = [g["name"] for g in planted(runs[0])]
    lines = table(["setting", "reading", *doses, "x0"])
    for run in runs:
        if not any(g.get("replicas") for g in planted(run)):
            continue  # Algorithm 2 not run on this setting
        never = next(g for g in run["groups"] if not g["exposures"])
        for reading, label in (("guided", "guided (the paper's)"), ("leak", "leak's rendering (oracle)")):
            cells = []
            for group in planted(run):
                found = ((group.get("replicas") or {}).get(reading) or {}).get("members")
                cells.append("-" if found is None else f"{found['exact']} + {found['near_exact']} / {found['n']}")
            # the never-planted group is each dose's non-members: every group reads it, any one says what it holds
            control = ((planted(run)[0].get("replicas") or {}).get(reading) or {}).get("non_members")
            cells.append("-" if control is None else
                         f"{control['exact']} + {control['near_exact']} / {control['n']} ({never['name']})")
            lines.append(markdown_row([setting(run), label, *cells]))
    return lines


def scores_table(run: dict) -> list[str]:
    doses = [g["name"] for g in planted(run)]
    lines = table(["score", *doses])
    for score in (*SCORES, "rouge_l", "rouge_l_leak"):
        if any(group_auc(g, score) is not None for g in planted(run)):
            lines.append(markdown_row([score, *(_f(group_auc(g, score)) for g in planted(run))]))
    return lines


def main(folder: str) -> str:
    runs = read_runs(folder)
    first = runs[0]
    shares = ", ".join(f"{g['name']} {g['token_share']:.2%}" for g in planted(first))
    lines = ["## Settings", "",
             f"{len(runs)} planted runs on {first['dataset']} ({first['format']} format, {first['plant']}), one model "
             f"each (draw {first['draw']}, seed {first['seed']}: the same members in every run); each planted "
             f"group's share of the training tokens: {shares}. Within-model AUC: each dose's members against the "
             f"never-planted group under the same model; one model a setting, no interval.", "",
             *settings_table(runs), ""]
    best = chosen(runs)
    left = missing(runs)
    if left:  # a choice among some of the settings is not the pilot's choice
        lines += [f"Not chosen yet: {len(runs)} of {len(swept())} settings run; to run: "
                  + ", ".join(f"lr {lr:g}, {batch} docs a batch" for lr, batch in left) + ".", ""]
    elif best is None:
        lines += [f"No setting meets the rule (loss AUC x1 <= {X1_AT_MOST} and top dose >= {TOP_AT_LEAST}).", ""]
    else:
        top = planted(best)[-1]
        lines += [f"Chosen: **{setting(best)}** (loss AUC x1 {group_auc(planted(best)[0]):.2f}, "
                  f"{top['name']} {group_auc(top):.2f}; the rule: x1 <= {X1_AT_MOST}, top dose "
                  f">= {TOP_AT_LEAST}, then the widest span, then the lower learning rate).", "",
                  "### Every score of the chosen setting (within-model AUC by dose)", "", *scores_table(best), ""]
    replicas = replicas_table(runs)
    lines += ["## Algorithm 2, both readings", ""]
    lines += (["Exact + near-exact replicas of n members, as the judge labels them (the exact / near-exact "
               "thresholds of the run's judge); the last column, the never-planted group under the same model.", "",
               *replicas] if len(replicas) > 2 else ["Not run on any setting yet."])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1] == "--keep":
        print("kept:", ", ".join(keep(sys.argv[2], sys.argv[3])))
    else:
        print(main(sys.argv[1]), end="")
