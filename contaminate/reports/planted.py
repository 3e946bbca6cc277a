"""A planted run's ``plant.md`` (``plant_report``, written by ``contaminate/planted.py``), and the tables of a
planted sweep's results README, from what it wrote: each run's plant.json (its groups' token
shares and where they fell, its training and detection time), the calibration's within-model AUC by dose, and the
recipe and the card (``contaminate/reports/headline.py``'s tables).

    python -m contaminate.calibrate runs/planted_cpu --out results/planted_cpu --keep-studies
    python -m contaminate.reports.planted runs/planted_cpu results/planted_cpu > results/planted_cpu/tables.md
    # runs only
    python -m contaminate.reports.planted results/profile_cpu/humaneval/studies > results/profile_cpu/runs.md

Every number comes from those files; nothing is typed by hand (the README includes the output).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from contaminate.reports import headline as headline_tables
from contaminate.reports.calibration_regimes import interval
from contaminate.reports.decontamination import decontamination_section
from detect.detectors import instance_scores, labelled
from detect.detectors.time_travel import LEAK_SCORES
from detect.detectors.time_travel import SCORES as GUIDED_SCORES
from detect.errors import InputError
from detect.markdown import row, table

# the pools a planted run's answers are counted in (contaminate/planted.py ``answers``), each with its cell
ANSWER_POOLS = (("members", "contaminated_x_members"), ("non_members", "contaminated_x_non_members"),
                ("known_non_members", "contaminated_x_known_non_members"))
SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio", "dc_pdd", "loss_raw", "min_k_plus_raw")


def plant_report(record: dict) -> str:
    """plant.md: the groups, their share and place in the stream, and each score's within-model AUC per group."""
    planted = [g for g in record["groups"] if g["exposures"] > 0]
    lines = [f"# Planted run: {record['plant']}, {record['dataset']}, format {record['format']}", "",
             f"One training run, {record['stream']['training_tokens']:,} training tokens "
             f"({record['background'].get('name', 'none')} background"
             + (f", its last {record['tail']:g} after every planted copy" if record.get("tail") else "")
             + f"); {record['unit']}."
             + (f" The planted documents' shared template (title, split, field names) is "
                f"{record['stream']['template']['share']:.2%} of the training tokens."
                if "template" in record["stream"] else ""), ""]
    mixed = any("dataset" in g or "format" in g for g in record["groups"])  # a group of its own: say which
    lines += table(["group", *(("dataset", "format") if mixed else ()), "exposures", "instances", "window",
                    "token share", "first", "mean", "last"])
    for g in record["groups"]:
        where = g.get("positions") or {}
        kind = (g.get("dataset", record["dataset"]), g.get("format", record["format"])) if mixed else ()
        lines.append(row([g["name"], *kind, g["exposures"], g["n"], f"{g['window'][0]:g}-{g['window'][1]:g}",
                          f"{g.get('token_share', 0):.4%}",
                          *(f"{where[k]:.3f}" if k in where else "-"
                            for k in ("first_fraction", "mean_fraction", "last_fraction"))]))
    names = [n for n in (*instance_scores(), *GUIDED_SCORES, *LEAK_SCORES)
             if all(n in (g["within_model_auc"] or {}) for g in planted)]
    lines += ["", "Positions are fractions of the stream's tokens. Within-model AUC: each group's members against "
              "the never-planted group, both under the contaminated model.", "",
              *table(["score", *(g["name"] for g in planted)])]
    lines += [row([labelled(n), *(f"{g['within_model_auc'][n]:.3f}" for g in planted)]) for n in names]
    if all("loss" in (g.get("clean_model_auc") or {}) for g in planted):  # the same groups without the leak
        lines.append(row([f"loss under the clean model ({record['control']})",
                          *(f"{g['clean_model_auc']['loss']:.3f}" for g in planted)]))
    return "\n".join(lines + decontamination_section(record.get("decontamination"), record["groups"])
                     + replicas_section(record["groups"]) + answers_section(record["groups"])
                     + harm_section(record.get("pass_at_1"))) + "\n"


def harm_section(found: dict | None) -> list[str]:
    """pass@1 of each model's greedy completions on each group's problems (plant.pass_at_1; contaminate/harm.py):
    what the leak did to the benchmark score, beside what the detectors saw."""
    if not found:
        return []
    groups = list(next(iter(found.values())))
    lines = ["", "pass@1 of each model's greedy completion of each group's problems, run against the problems' own "
             "tests (contaminate/harm.py); one model, one unit: no interval.", "",
             *table(["model", *groups])]
    for checkpoint, blocks in found.items():
        lines.append(row([checkpoint, *(f"{blocks[g]['pass_at_1']:.3f} ({blocks[g]['passed']}/{blocks[g]['n']})"
                                        for g in groups)]))
    return lines


def replicas_section(groups: list[dict]) -> list[str]:
    """Algorithm 2's replicas by dose, the guided instruction beside the leak reading (oracle), members and the
    never-planted group: a member replayed on the leak reading but not the guided one was memorised, and the
    instruction not followed; one replayed on neither was not memorised to the judge's bar."""
    shown = [g for g in groups if (g.get("replicas") or {}).get("leak")]
    if not shown:
        return []

    def counts(block: dict | None) -> str:
        return "-" if not block else f"{block['exact']} / {block['near_exact']} of {block['n']}"

    lines = ["", "Algorithm 2's labels (exact / near-exact of n) under the contaminated model: the paper's guided "
             "instruction beside the leak reading (oracle: the first piece inside the leak's own rendering, continued "
             "as raw text; the same judge). A member the leak reading replays and the guided instruction does not "
             "was memorised, the instruction not followed.", "",
             *table(["group", "exposures", "members, guided", "members, leak (oracle)", "never planted, guided",
                     "never planted, leak (oracle)"])]
    for g in shown:
        found = g["replicas"]
        lines.append(row([g["name"], g["exposures"], *(counts(found.get(reading, {}).get(pool))
                                                        for pool in ("members", "non_members")
                                                        for reading in ("guided", "leak"))]))
    return lines


def answers_section(groups: list[dict]) -> list[str]:
    """Did the contaminated model answer? Its follow rate (the share of answers that are continuations, follow.py) by
    dose, per reading and pool: where the guided rate is low, Algorithm 2's misses are "not followed", not "clean"."""
    shown = [g for g in groups if (g.get("answers") or {}).get("guided")]
    if not shown:
        return []
    names = {"members": "members", "non_members": "never planted", "known_non_members": "known non-members"}
    columns = [(reading, pool) for reading in ("guided", "leak") for pool, _ in ANSWER_POOLS
               if any(pool in (g["answers"].get(reading) or {}) for g in shown)]

    def rate(block: dict | None) -> str:
        if not block:
            return "-"
        top = max((c for c in block["classes"] if c != "continuation"), key=lambda c: block["classes"][c])
        return (f"{block['follow_rate']:.2f} of {block['n']}"
                + (f" ({top.replace('_', ' ')} {block['classes'][top]})" if block["classes"][top] else ""))

    lines = ["", "Follow rate under the contaminated model (the share of answers that continue the first piece, "
             "detect/detectors/time_travel/follow.py; in brackets the commonest failure): the guided instruction "
             "and the leak reading (oracle), by pool.", "",
             *table(["group", "exposures", *(f"{names[pool]}, {reading}" for reading, pool in columns)])]
    for g in shown:
        lines.append(row([g["name"], g["exposures"],
                          *(rate((g["answers"].get(reading) or {}).get(pool)) for reading, pool in columns)]))
    return lines


def runs_table(runs: list[dict]) -> list[str]:
    # train s: the checkpoint's own record of its training (a run that reused its checkpoint from the cache took
    # ~0 s to train this time; its record keeps what training took); detect s: this invocation's detection, and a
    # run resumed from the cache says how many of its groups' member cells an earlier invocation detected (a
    # member cell is one group's own: within one invocation it is never reused, so cached means resumed)
    lines = table(["run", "draw", "seed", "training tokens", "steps", "train s", "detect s",
                   *(f"{g['name']} share" for g in runs[0]["groups"] if g["exposures"])])
    for run in runs:
        detect = sum(v for k, v in run["timings"].items() if k.startswith("detect_"))
        cached, read = run["members_cached"]
        resumed = f" (resumed: {cached} of {read} groups' members detected earlier)" if cached else ""
        lines.append(row([run["folder"], run["draw"], run["seed"], f"{run['stream']['training_tokens']:,}",
                          run["checkpoint"]["steps"], f"{train_seconds(run):.0f}", f"{detect:.0f}{resumed}",
                          *(f"{g['token_share']:.2%}" for g in run["groups"] if g["exposures"])]))
    trained = sum(train_seconds(run) for run in runs)
    lines += ["", f"{len(runs)} training runs, {trained / 3600:.2f} h of training in all (each checkpoint's "
              f"train_seconds{', the twins included' if any(r.get('control_checkpoint') for r in runs) else ''})."]
    rate = max(run["checkpoint"]["tokens_per_second"] for run in runs)
    planted_tokens = sum(run["stream"]["training_tokens"] for run in runs)  # counted as the doses are
    studies, tokens = one_study_per_dose(runs)
    lines += ["", f"Both designs at the fastest run's throughput ({rate:,.0f} training tokens a second): these "
              f"{len(runs)} planted runs train {planted_tokens:,} tokens, {planted_tokens / rate / 3600:.2f} h; the "
              f"same doses and dilution as one study per dose (the grid's design before planted groups: each planted "
              f"group alone in the same background, and exposures 0 a study of its own, the background alone) would "
              f"train {tokens:,} tokens in {studies} runs, {tokens / rate / 3600:.2f} h, "
              f"{tokens / planted_tokens:.1f}x (from token counts, not a measurement)."]
    return lines


def one_study_per_dose(runs: list[dict]) -> tuple[int, int]:
    """What the grid's design before planted groups (results/regimes_cpu: one study per dose) would train for the
    same doses and dilution: per run, one study per planted group (its copies among the same background) and the
    exposures-0 study (the background alone). Training runs and tokens."""
    studies, tokens = 0, 0
    for run in runs:
        background = run["stream"]["tokens"]["background"]
        planted = [g for g in run["groups"] if g["exposures"]]
        studies += len(planted) + 1
        tokens += sum(background + g["tokens"] for g in planted) + background
    return studies, tokens


def members_cached(run_folder: Path) -> tuple[int, int]:
    """How many of a planted run's groups read their members' cell from the cache, and how many groups it has (their
    manifests, as the run wrote them or as ``--keep-studies`` kept them): a member cell is never shared between
    groups, so a cached one was detected by an earlier invocation of the same run."""
    paths = [*run_folder.glob("groups/*/manifest.json"), *run_folder.glob("groups/*/manifest.json.gz")]
    count = 0
    for path in paths:
        text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        count += "contaminated_x_members" in json.loads(text).get("cached_cells", [])
    return count, len(paths)


def train_seconds(run: dict) -> float:
    """The run's training time as its checkpoints recorded it (the contaminated model's and a twin's, and
    post-training's where there was one)."""
    return (run["checkpoint"]["train_seconds"] + (run.get("control_checkpoint") or {}).get("train_seconds", 0)
            + (run.get("post_train_seconds") or 0))


def auc_table(calibration: dict) -> list[str]:
    lines = []
    for regime, block in calibration["by_regime"]["regimes"].items():
        if not regime.split("/")[-1].startswith("planted"):
            continue
        doses = sorted(block["membership"], key=lambda d: float(d) if d != "-" else -1)
        names = [n for n in SCORES if all(n in block["membership"][d]["scores"] for d in doses)]
        first = block["membership"][doses[0]]
        members, non_members = (", ".join(map(str, first[key])) for key in ("members_per_model",
                                                                              "non_members_per_model"))
        lines += [f"### {regime}", "",
                  f"Within-model AUC (each group's members against the never-planted group, under the same model), "
                  f"mean over {first['unit']}, [95% t-interval over draws]; {members} members and {non_members} "
                  f"non-members a model.", "",
                  *table(["score", *(f"x{d}" for d in doses)])]
        for name in names:
            cells = [interval(block["membership"][dose]["scores"][name]["auc"]) for dose in doses]
            lines.append(row([labelled(name), *cells]))
        # each dose its own family (the calibration's Holm correction runs within a dose): a claim says its dose
        supported = [f"x{dose}: " + "; ".join(found) for dose in doses
                     if (found := (block["membership"][dose].get("comparisons") or {}).get("better"))]
        lines += ["", "Differences between scores that a paired t-test over draws supports after Holm's correction, "
                  "by dose: " + (" | ".join(supported) if supported else "none") + "."]
        lines.append("")
    return lines


def main(runs_folder: str, calibration_folder: str | None = None) -> str:
    """The runs table, and with a calibration folder its within-model AUC, recipe and card tables after it."""
    runs = []
    for path in sorted(Path(runs_folder).rglob("plant.json")):
        record = json.loads(path.read_text())
        runs.append({**record, "folder": path.parent.name, "members_cached": members_cached(path.parent)})
    if not runs:
        raise SystemExit(f"no plant.json under {runs_folder}: give the sweep folder of planted runs")
    if calibration_folder is None:
        return "\n".join(["## Runs", "", *runs_table(runs)]) + "\n"
    calibration = json.loads((Path(calibration_folder) / "calibration.json").read_text())
    return "\n".join(["## Runs", "", *runs_table(runs), "", "## Within-model AUC by dose", "",
                      *auc_table(calibration), "## The recipe within each model, and the card", "",
                      *headline_tables.recipe(calibration), *headline_tables.cards(calibration)]) + "\n"


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: python -m contaminate.reports.planted <runs folder> [<calibration folder>]")
    print(main(*sys.argv[1:]), end="")


def planted_share_text(studies: Path) -> str:
    """The planted content's share of the training tokens over a folder's planted runs (each run's plant.json
    ``stream``, or the run.json a power profile keeps of it), as a headline states it: "62-65%", or "77%" where every
    run holds the same share."""
    shares = []
    for path in sorted([*Path(studies).rglob("plant.json"), *Path(studies).rglob("run.json")]):
        stream = json.loads(path.read_text())["stream"]
        shares.append(stream["tokens"]["member"] / stream["training_tokens"])
    if not shares:
        raise InputError(f"{studies} holds no planted run (plant.json); give a folder of planted runs' studies")
    low, high = (int(100 * s + 0.5) for s in (min(shares), max(shares)))
    return f"{low}%" if low == high else f"{low}-{high}%"
