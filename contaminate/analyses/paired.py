"""Two readings of the same member draws, paired within each model: how far the practitioner's bounds move from
reading A to reading B. The recipe (Algorithm 2's paper rule, thresholds fitted within each model on its own known
non-members) and the conformal thresholds of the logit scores, fitted under each reading and read on the same draws'
never-planted groups (FPR) and members (TPR by dose). The readings the lab compares:

- the known pool as drawn against the same pool rewritten (``sample.known_shift=rewrite``, contaminate/shift.py;
  issue 47):

    python -m contaminate.analyses.paired results/replicas_recipe_humaneval_shift/as_drawn \
        results/replicas_recipe_humaneval_shift > results/replicas_recipe_humaneval_shift/shift.md

- the model as the leak left it against the same checkpoint elicited (``post_train=elicit``; issue 68):

    python -m contaminate.analyses.paired results/elicit_arms_humaneval/none results/elicit_arms_humaneval/elicit \
        --labels "as left" elicited > results/elicit_arms_humaneval/arms.md

Both folders are calibrations (``python -m contaminate.calibrate``) of the same member draws: a draw is the unit, so
the readings are compared within each model (paired), and a calibration of other draws is refused. Printed:

1. The recipe by draw: each model's fitted thresholds (exact, near-exact ROUGE-L) and its partition flag rates on
   its never-planted group and on each dose's members, A -> B.
2. The recipe over draws: its stated bound, realised FPR and TPR by dose, for each reading; and the mean move of
   each fitted threshold (B minus A) with a t-interval over draws.
3. The logit scores at the practitioner's conformal threshold: realised FPR on the never-planted group and TPR at
   the lowest dose, for each reading; and B's A/A rows.
4. Where the calibrations kept their studies (``--keep-studies``): the known non-members' guided answers by draw
   under each reading, their follow rate and their ROUGE-L tail (what a threshold fitted on them sees).

Reads calibration.json (and studies/*/plant.json with its groups' rows); tests/test_docs.py checks a committed
table is this script's output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from contaminate.analyses.replicas import read_rows
from contaminate.calibration.statistics import MIN_UNITS, t_interval
from contaminate.reports.calibration_product import aa_lines
from contaminate.reports.headline import SCORES, rate_with_count, rate_with_labelled
from detect.detectors import labelled
from detect.markdown import interval_text, table
from detect.markdown import row as markdown_row

LABELS = ("as drawn", "rewritten")  # the pool shift's readings (issue 47), the default


def _load(folder: Path) -> dict:
    path = folder / "calibration.json"
    if not path.is_file():
        raise SystemExit(f"{folder}: no calibration.json; run python -m contaminate.calibrate <studies> --out "
                         f"{folder} first")
    return json.loads(path.read_text())


def _paired_groups(first: dict, second: dict, labels: tuple[str, str]) -> list[tuple[str, dict, dict]]:
    """The recipe's groups present under both readings, by name (one group each: paired whatever their names)."""
    a, b = first["recipe"], second["recipe"]
    if len(a) == 1 and len(b) == 1:
        names = list(dict.fromkeys([*a, *b]))  # one name where both readings call the group alike
        return [(" | ".join(names), next(iter(a.values())), next(iter(b.values())))]
    shared = [g for g in b if g in a]
    if not shared:
        raise SystemExit(f"no recipe group in both calibrations ({labels[0]}: {', '.join(a)}; {labels[1]}: "
                         f"{', '.join(b)}); calibrate the same studies' two readings")
    return [(g, a[g], b[g]) for g in shared]


def _chosen(block: dict) -> list[dict]:
    """The recipe's rules on ROUGE-L with every known non-member (the fits its headline reports)."""
    return [c for c in block["configs"] if c["size"] is None and c["score"] == "rouge_l"]


def _units(config: dict) -> list[str]:
    return sorted((config.get("thresholds") or {}), key=lambda u: (len(u), u))


def _arrow(a: float | None, b: float | None, fmt: str = "{:.2f}") -> str:
    """``a -> b``; a threshold of inf (a rule without that part) or a missing rate reads "-"."""
    def show(value: float | None) -> str:
        return "-" if value is None or not np.isfinite(value) else fmt.format(value)
    return f"{show(a)} -> {show(b)}"


def move(before: list[float], after: list[float]) -> dict:
    """The mean paired move ``after - before`` with its 95% t-interval over units (none from fewer than 2)."""
    return t_interval(np.asarray(after, float) - np.asarray(before, float))


def _move_text(m: dict) -> str:
    if m["n"] < MIN_UNITS:  # as every table of the lab: no interval over fewer draws (t on 2 spans +-12.7 SE)
        return f"{m['estimate']:+.3f} (no interval: {m['n']} draw{'s' * (m['n'] != 1)})"
    return interval_text(m["estimate"], m["low"], m["high"], "+.3f")


def recipe_lines(group: str, first: dict, second: dict, labels: tuple[str, str] = LABELS) -> list[str]:
    la, lb = labels
    pairs = list(zip(_chosen(first), _chosen(second)))
    if not pairs:
        return [f"{group}: no recipe fitted on ROUGE-L under both readings.", ""]
    first_a, first_b = pairs[0]
    units = _units(first_b)
    if _units(first_a) != units:
        raise SystemExit(f"{group}: {la} rests on {', '.join(_units(first_a))}, {lb} on {', '.join(units)}; "
                         f"calibrate the same draws' studies under both readings (the draw is the paired unit)")
    doses = sorted({d for c in (first_a, first_b) for d in c["tpr_by_dose"]}, key=float)
    known = ["/".join(map(str, block["models"]["known_non_members"])) for block in (first, second)]
    lines = [f"{group}, {first_b['fpr']['unit'] if first_b['fpr'] else '-'}; known non-members a model: "
             f"{known[0]} {la}, {known[1]} {lb}.", ""]
    for a, b in pairs:
        lines += [f"The recipe by draw, {b['rule_text']} (its thresholds fitted under each reading, {la} -> {lb}; a "
                  f"flag rate is the probability that a random partition of the cell is flagged):", "",
                  *table(["draw", "exact >=", "near-exact >=", "never-planted flagged",
                          *(f"x{d} flagged" for d in doses)])]
        for unit in units:
            ta, tb = a["thresholds"][unit], b["thresholds"][unit]
            pa, pb = a["per_model"].get(unit, {}), b["per_model"].get(unit, {})
            lines.append(markdown_row([unit, _arrow(ta["exact"], tb["exact"], "{:.3f}"),
                                       _arrow(ta["near_exact"], tb["near_exact"], "{:.3f}"),
                                       _arrow(pa.get("non_members"), pb.get("non_members")),
                                       *(_arrow(pa.get(f"x{d}"), pb.get(f"x{d}")) for d in doses)]))
        lines.append("")
    lines += ["The recipe over draws (rates as the calibration's recipe table prints them: a mean over draws, "
              "never narrower than Clopper-Pearson on the instances labelled, in brackets):", "",
              *table(["rule", "reading", "stated bound", "realised FPR, never-planted group",
                      *(f"TPR x{d}" for d in doses)])]
    for a, b in pairs:
        for label, c in zip(labels, (a, b)):
            bound = "refused" if c["stated_bound"] is None else f"{c['stated_bound']:.3f}"
            lines.append(markdown_row([c["rule_text"], label, bound, rate_with_labelled(c["fpr"]),
                                       *(rate_with_labelled(c["tpr_by_dose"].get(d)) for d in doses)]))
    lines += ["", f"How far the fitted thresholds move ({lb} minus {la}, within each model; mean and 95% "
                  f"t-interval over {len(units)} draws, from {MIN_UNITS}):", "",
              *table(["rule", "exact >=", "near-exact >="])]
    for a, b in pairs:
        cells = []
        for label in ("exact", "near_exact"):
            before, after = ([c["thresholds"][u][label] for u in units] for c in (a, b))
            finite = np.isfinite(before).all() and np.isfinite(after).all()  # a rule without that part: inf
            cells.append(_move_text(move(before, after)) if finite else "- (no such part)")
        lines.append(markdown_row([b["rule_text"], *cells]))
    return lines + [""]


def logit_lines(group: str, first: dict, second: dict, labels: tuple[str, str] = LABELS) -> list[str]:
    la, lb = first.get("logit") or {}, second.get("logit") or {}
    names = [n for n in SCORES if n in la and n in lb]
    if not names:
        return []
    budgets = sorted(lb[names[0]], key=float)
    doses = sorted({k[1:] for k in lb[names[0]][budgets[0]] if k[:1] == "x"}, key=float)
    low = doses[0] if doses else None
    lines = [f"{group}: each logit score's split-conformal threshold fitted on the model's own known non-members "
             f"(instance level), {labels[0]} and {labels[1]}:", "",
             *table(["score (reading)", "FPR budget", *(f"realised FPR, {label}" for label in labels),
                     *(f"TPR x{low}, {label}" for label in labels)])]
    for name in names:
        for budget in budgets:
            at_a, at_b = la[name].get(budget, {}), lb[name].get(budget, {})
            lines.append(markdown_row([labelled(name), f"{float(budget):g}", rate_with_count(at_a.get("non_members")),
                                       rate_with_count(at_b.get("non_members")), rate_with_count(at_a.get(f"x{low}")),
                                       rate_with_count(at_b.get(f"x{low}"))]))
    if second.get("aa"):
        lines += ["", f"{group}, A/A rows ({labels[1]}):", "", *aa_lines(second["aa"])]
    return lines + [""]


def known_answers(folder: Path) -> dict[str, dict]:
    """Each kept study's known non-members' guided answers (every planted group reads the same pool: each instance
    once), by unit ("d0s0"): their follow rate (plant.json's answer classes) and their ROUGE-L values (the rows)."""
    found = {}
    for plant_path in sorted((folder / "studies").glob("*/plant.json")):
        plant = json.loads(plant_path.read_text())
        follow = next((g["answers"]["guided"]["known_non_members"] for g in plant["groups"]
                       if ((g.get("answers") or {}).get("guided") or {}).get("known_non_members")), None)
        values = {}
        for rows_folder in sorted((plant_path.parent / "groups").iterdir()):
            for row in read_rows(rows_folder).get("contaminated_x_known_non_members", []):
                if row.get("instruction") == "guided" and row.get("rouge_l") is not None:
                    values[row["instance_id"]] = row["rouge_l"]
        found[f"d{plant['draw']}s{plant['seed']}"] = {"follow": follow, "rouge_l": list(values.values())}
    return found


def _tail(block: dict | None) -> list[str]:
    """One reading's four cells of a draw: follow rate, ROUGE-L mean, max and share >= 0.75."""
    if not block or not block["rouge_l"]:
        return ["-"] * 4
    values, follow = block["rouge_l"], block["follow"]
    rate = "-" if not follow else f"{follow['follow_rate']:.2f} of {follow['n']}"
    return [rate, f"{np.mean(values):.2f}", f"{max(values):.2f}", f"{sum(v >= 0.75 for v in values)}/{len(values)}"]


def answer_lines(first_folder: Path, second_folder: Path, labels: tuple[str, str]) -> list[str]:
    first, second = known_answers(first_folder), known_answers(second_folder)
    units = sorted((u for u in set(first) & set(second) if first[u]["rouge_l"] and second[u]["rouge_l"]),
                   key=lambda u: (len(u), u))  # draws whose kept rows hold guided answers under both readings
    if not units:
        return []
    lines = ["The known non-members' guided answers by draw (never trained: what the fitted thresholds see), each "
             "reading's follow rate (continuations of the first piece) and the ROUGE-L of its answers against the "
             "true second pieces:", "",
             *table(["draw", *(f"{label} {what}" for label in labels
                               for what in ("follow", "ROUGE-L mean", "max", ">= 0.75"))])]
    lines += [markdown_row([unit, *_tail(first[unit]), *_tail(second[unit])]) for unit in units]
    means = [[float(np.mean(block[u]["rouge_l"])) for u in units] for block in (first, second)]
    if len(units) >= MIN_UNITS:
        lines += ["", f"The ROUGE-L mean's move ({labels[1]} minus {labels[0]}, mean and 95% t-interval over "
                      f"{len(units)} draws): {_move_text(move(*means))}."]
    else:
        lines += ["", f"{len(units)} draws: no interval over draws (the lab prints one from {MIN_UNITS})."]
    return lines + [""]


def report(first_folder: Path, second_folder: Path, labels: tuple[str, str] = LABELS) -> str:
    first, second = _load(first_folder), _load(second_folder)
    lines = []
    for group, a, b in _paired_groups(first, second, labels):
        lines += [*recipe_lines(group, a, b, labels), *logit_lines(group, a, b, labels)]
    lines += answer_lines(first_folder, second_folder, labels)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path, help="reading A's calibration (the pool as drawn; the model as left)")
    parser.add_argument("second", type=Path, help="reading B's calibration of the same draws' studies "
                                                  "(sample.known_shift=rewrite; post_train=elicit)")
    parser.add_argument("--labels", nargs=2, default=list(LABELS), metavar=("A", "B"),
                        help=f"the two readings' names in the tables (default: {' / '.join(LABELS)})")
    args = parser.parse_args(argv)
    print(report(args.first, args.second, tuple(args.labels)), end="")


if __name__ == "__main__":
    main()
