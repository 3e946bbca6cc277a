"""Algorithm 2 read two ways on a planted sweep's committed rows: the paper's ROUGE-L on the completion as generated,
and the named variant ``threshold_best_prefix`` (ROUGE-L of the completion's best prefix: a replay the model went on
writing past counts as the replay). Nothing is generated again: both judges read the same guided completions.

    python -m contaminate.analyses.best_prefix results/replicas_recipe_cpu/studies \
        > results/replicas_recipe_cpu/best_prefix.md

Two sets of thresholds, each judge with its own:
- the threshold judge's defaults (exact 0.95, near-exact 0.75), as the studies ran them;
- the recipe (``detect.judges.recipe.fit_recipe``): fitted within each model on its own known non-members' scores under
  that judge's reading (the paper's rule, 5% budget), so the variant pays for its higher scores on non-members there.

A unit is a run (one member draw): a dose's member pool is flagged or not by each reading in each run; the clean pools
are each run's never-trained cells (non-members, the other split). The paired contrast per dose is an exact sign test
over the runs where the two readings disagree, Holm-adjusted across doses. Every number comes from the rows.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

from scipy.stats import binomtest

from contaminate.calibration.statistics import clopper_pearson, holm
from detect.judges.recipe import fit_recipe, label
from detect.judges.threshold import ThresholdJudge, best_prefix_exact_score, exact_score
from detect.markdown import interval_text, table
from detect.markdown import row as markdown_row

PARTITION, RULE, BUDGET = 10, (1, 2), 0.05
MEMBERS, KNOWN = "contaminated_x_members", "contaminated_x_known_non_members"
DEFAULT = ThresholdJudge()  # the thresholds the studies ran with


def exact_scores(row: dict) -> dict[str, float]:
    """Each reading's exact score of one guided row, as its judge computes it; with ROUGE-L for near-exact (the
    judges' and the recipe's default) one score serves both labels."""
    completion = row["completion"] or ""
    return {"paper": exact_score(row["reference"], completion, row["rouge_l"]),
            "best_prefix": best_prefix_exact_score(row["reference"], completion)}


def default_label(score: float) -> str:
    """The threshold judge's label at its defaults, from a reading's one score (ThresholdJudge.label's rule)."""
    return ("exact" if score >= DEFAULT.exact_threshold else
            "near_exact" if score >= DEFAULT.near_exact_threshold else "none")


def flagged(labels: list[str]) -> bool:
    return labels.count("exact") >= RULE[0] or labels.count("near_exact") >= RULE[1]


def load_runs(folder: Path) -> list[dict]:
    """Per run: its known non-members' scores, its member pools' by dose, its clean pools' (each pool once); each
    row's two readings scored once here."""
    runs = []
    for study in sorted(p for p in folder.iterdir() if (p / "plant.json").is_file()):
        plant = json.loads((study / "plant.json").read_text())
        run = {"name": study.name, "draw": plant["draw"], "known": {}, "members": {}, "clean": {}}
        for group in plant["groups"]:
            path = study / "groups" / group["name"] / "results.jsonl.gz"
            if not path.is_file():
                continue
            with gzip.open(path, "rt") as file:
                rows = [json.loads(line) for line in file]
            by_cell = defaultdict(list)
            for row in rows:
                if row["instruction"] == "guided":
                    by_cell[row["cell"]].append(row)
            run["known"].update({r["instance_id"]: r for r in by_cell.pop(KNOWN, [])})
            run["members"][group["exposures"]] = by_cell.pop(MEMBERS, [])
            for cell, cell_rows in by_cell.items():  # a never-trained cell shared by groups is one pool
                run["clean"][(cell, frozenset(r["instance_id"] for r in cell_rows))] = cell_rows
        run["known"] = [exact_scores(r) for r in run["known"].values()]
        run["members"] = {dose: [exact_scores(r) for r in rows] for dose, rows in run["members"].items()}
        run["clean"] = [[exact_scores(r) for r in rows] for rows in run["clean"].values()]
        runs.append(run)
    if not runs:
        raise SystemExit(f"{folder}: no study with a plant.json under it; give a planted sweep's studies folder")
    return runs


def read(runs: list[dict]) -> dict:
    """Per reading and thresholds: members' labels by dose, each run's flag by dose, the clean pools' flags, the known
    non-members' labels (for the recipe, the labels its own fit gives them: in-sample, shown as a cost only)."""
    found = {}
    for reading in ("paper", "best_prefix"):
        for thresholds in ("default", "recipe"):
            block = {"labels": defaultdict(list), "flags": defaultdict(list), "clean": [], "known": [], "bound": []}
            for run in runs:
                known = [scores[reading] for scores in run["known"]]
                fit = fit_recipe(known, partition_size=PARTITION, rule=RULE, budget=BUDGET) \
                    if thresholds == "recipe" else None
                labeller = (lambda s: label(fit, s, s)) if fit else default_label  # noqa: E731
                if fit:
                    block["bound"].append(fit["bound"])
                block["known"] += [labeller(s) for s in known]
                for dose, rows in sorted(run["members"].items()):
                    labels = [labeller(scores[reading]) for scores in rows]
                    block["labels"][dose] += labels
                    block["flags"][dose].append(flagged(labels))
                block["clean"] += [flagged([labeller(scores[reading]) for scores in rows]) for rows in run["clean"]]
            found[(reading, thresholds)] = block
    return found


def rate(k: int, n: int) -> str:
    ci = clopper_pearson(k, n)
    return f"{k}/{n} ({interval_text(ci['rate'], ci['low'], ci['high'])})" if n else "-"


def tables(runs: list[dict]) -> list[str]:
    found = read(runs)
    doses = sorted({d for run in runs for d in run["members"]} - {0})
    draws = sorted({run["draw"] for run in runs})
    lines = [f"Read from {len(runs)} runs ({len(draws)} member draws: each run one unit), "
             f"{sum(len(r['known']) for r in runs) // len(runs)} known non-members a run, "
             f"partitions of {PARTITION}, the paper's rule (>= {RULE[0]} exact or >= {RULE[1]} near-exact).", ""]
    for thresholds, title in (("default", f"Default thresholds (exact {DEFAULT.exact_threshold:g}, near-exact "
                                          f"{DEFAULT.near_exact_threshold:g})"),
                              ("recipe", f"The recipe, fitted within each run on its own known non-members "
                                         f"({BUDGET:.0%} budget)")):
        paper, prefix = found[("paper", thresholds)], found[("best_prefix", thresholds)]
        lines += [f"## {title}", "", "Members labelled exact + near-exact, of the dose's members in all runs:", "",
                  *table(["reading", *(f"x{d}" for d in doses), "known non-members"])]
        for name, block in (("paper (as generated)", paper), ("best prefix (variant)", prefix)):
            counts = [f"{block['labels'][d].count('exact')} + {block['labels'][d].count('near_exact')} / "
                      f"{len(block['labels'][d])}" for d in doses]
            known = block["known"]
            lines.append(markdown_row([name, *counts,
                                       f"{known.count('exact')} + {known.count('near_exact')} / {len(known)}"]))
        lines += ["", "Runs whose member pool Algorithm 2 flags (TPR over runs, Clopper-Pearson 95%), the clean pools "
                  "flagged (FPR over each run's never-trained cells), and the paired contrast:", "",
                  *table(["reading", *(f"x{d}" for d in doses), "clean pools"])]
        for name, block in (("paper (as generated)", paper), ("best prefix (variant)", prefix)):
            lines.append(markdown_row([name, *(rate(sum(block["flags"][d]), len(block["flags"][d])) for d in doses),
                                       rate(sum(block["clean"]), len(block["clean"]))]))
        p_values, discordant = [], []
        for d in doses:
            only_prefix = sum(b and not a for a, b in zip(paper["flags"][d], prefix["flags"][d]))
            only_paper = sum(a and not b for a, b in zip(paper["flags"][d], prefix["flags"][d]))
            discordant.append((only_prefix, only_paper))
            n = only_prefix + only_paper
            p_values.append(binomtest(only_prefix, n, 0.5).pvalue if n else 1.0)
        lines.append(markdown_row(["runs only the variant / only the paper flags; sign test, Holm",
                                   *(f"{a} / {b}; p {p:.2f}" for (a, b), p in zip(discordant, holm(p_values))), ""]))
        if prefix["bound"]:
            lines += ["", f"Stated bound of each fit (marginal, the paper's reading / the variant): "
                          f"{max(paper['bound']):.3f} / {max(prefix['bound']):.3f} at most."]
        lines.append("")
    return lines


def main(argv: list[str]) -> None:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        raise SystemExit("usage: python -m contaminate.analyses.best_prefix <a planted sweep's studies folder>")
    print("\n".join(tables(load_runs(Path(argv[0])))).rstrip())


if __name__ == "__main__":
    main(sys.argv[1:])
