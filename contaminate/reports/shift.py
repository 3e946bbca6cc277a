"""How far the practitioner's bounds move when the known non-members are shifted: the recipe (Algorithm 2's paper
rule, thresholds fitted within each model on its own known non-members) and the conformal thresholds of the logit
scores, fitted once on the pool as drawn and once on the same pool rewritten (``sample.known_shift=rewrite``,
contaminate/shift.py), read on the same models' never-planted groups (FPR) and members (TPR by dose).

    python -m contaminate.reports.shift results/replicas_recipe_humaneval_shift/as_drawn \
        results/replicas_recipe_humaneval_shift > results/replicas_recipe_humaneval_shift/shift.md

Both folders are calibrations (``python -m contaminate.calibrate``) of the same member draws: a draw is the unit, so
the two pools are compared within each model (paired), and a calibration of other draws is refused. Printed:

1. The recipe by draw: each model's fitted thresholds (exact, near-exact ROUGE-L) and its partition flag rates on
   its never-planted group and on each dose's members, as drawn -> rewritten.
2. The recipe over draws: its stated bound, realised FPR and TPR by dose, for each pool; and the mean move of each
   fitted threshold (rewritten minus as drawn) with a t-interval over draws.
3. The logit scores at the practitioner's conformal threshold: realised FPR on the never-planted group and TPR at
   the lowest dose, for each pool; and the A/A rows against the rewritten pool.

Reads calibration.json; tests/test_docs.py checks a committed table is this script's output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from contaminate.calibration.statistics import t_interval
from contaminate.reports.calibration_product import aa_lines
from contaminate.reports.headline import SCORES, rate_with_count, rate_with_labelled
from detect.detectors import labelled
from detect.markdown import table

POOLS = ("as drawn", "rewritten")


def _load(folder: Path) -> dict:
    path = folder / "calibration.json"
    if not path.is_file():
        raise SystemExit(f"{folder}: no calibration.json; run python -m contaminate.calibrate <studies> --out "
                         f"{folder} first")
    return json.loads(path.read_text())


def _paired_groups(drawn: dict, rewritten: dict) -> list[tuple[str, dict, dict]]:
    """The recipe's groups present under both pools, by name (one group each: paired whatever their names)."""
    a, b = drawn["recipe"], rewritten["recipe"]
    if len(a) == 1 and len(b) == 1:
        return [(next(iter(b)), next(iter(a.values())), next(iter(b.values())))]
    shared = [g for g in b if g in a]
    if not shared:
        raise SystemExit(f"no recipe group in both calibrations (as drawn: {', '.join(a)}; rewritten: "
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
    if m["low"] is None:
        return f"{m['estimate']:+.3f} (no interval: {m['n']} draw)"
    return f"{m['estimate']:+.3f} [{m['low']:+.3f}, {m['high']:+.3f}]"


def recipe_lines(group: str, drawn: dict, rewritten: dict) -> list[str]:
    pairs = list(zip(_chosen(drawn), _chosen(rewritten)))
    if not pairs:
        return [f"{group}: no recipe fitted on ROUGE-L under both pools.", ""]
    first_a, first_b = pairs[0]
    units = _units(first_b)
    if _units(first_a) != units:
        raise SystemExit(f"{group}: as drawn rests on {', '.join(_units(first_a))}, rewritten on {', '.join(units)}; "
                         f"calibrate the same draws' studies under both pools (the draw is the paired unit)")
    doses = sorted({d for c in (first_a, first_b) for d in c["tpr_by_dose"]}, key=float)
    known = {pool: "/".join(map(str, block["models"]["known_non_members"]))
             for pool, block in zip(POOLS, (drawn, rewritten))}
    lines = [f"{group}, {first_b['fpr']['unit'] if first_b['fpr'] else '-'}; known non-members a model: "
             f"{known['as drawn']} as drawn, {known['rewritten']} rewritten.", ""]
    for a, b in pairs:
        lines += [f"The recipe by draw, {b['rule_text']} (its thresholds fitted on each pool; a flag rate is the "
                  f"probability that a random partition of the cell is flagged):", "",
                  *table(["draw", "exact >=", "near-exact >=", "never-planted flagged",
                          *(f"x{d} flagged" for d in doses)])]
        for unit in units:
            ta, tb = a["thresholds"][unit], b["thresholds"][unit]
            pa, pb = a["per_model"].get(unit, {}), b["per_model"].get(unit, {})
            lines.append(f"| {unit} | {_arrow(ta['exact'], tb['exact'], '{:.3f}')} | "
                         f"{_arrow(ta['near_exact'], tb['near_exact'], '{:.3f}')} | "
                         f"{_arrow(pa.get('non_members'), pb.get('non_members'))} | "
                         + " | ".join(_arrow(pa.get(f'x{d}'), pb.get(f'x{d}')) for d in doses) + " |")
        lines.append("")
    lines += ["The recipe over draws (rates as the calibration's recipe table prints them: a mean over draws, "
              "never narrower than Clopper-Pearson on the instances labelled, in brackets):", "",
              *table(["rule", "pool", "stated bound", "realised FPR, never-planted group",
                      *(f"TPR x{d}" for d in doses)])]
    for a, b in pairs:
        for pool, c in zip(POOLS, (a, b)):
            bound = "refused" if c["stated_bound"] is None else f"{c['stated_bound']:.3f}"
            lines.append(f"| {c['rule_text']} | {pool} | {bound} | {rate_with_labelled(c['fpr'])} | "
                         + " | ".join(rate_with_labelled(c["tpr_by_dose"].get(d)) for d in doses) + " |")
    lines += ["", f"How far the fitted thresholds move (rewritten minus as drawn, within each model; mean and 95% "
                  f"t-interval over {len(units)} draws):", "",
              *table(["rule", "exact >=", "near-exact >="])]
    for a, b in pairs:
        cells = []
        for label in ("exact", "near_exact"):
            before, after = ([c["thresholds"][u][label] for u in units] for c in (a, b))
            finite = np.isfinite(before).all() and np.isfinite(after).all()  # a rule without that part: inf
            cells.append(_move_text(move(before, after)) if finite else "- (no such part)")
        lines.append(f"| {b['rule_text']} | {' | '.join(cells)} |")
    return lines + [""]


def logit_lines(group: str, drawn: dict, rewritten: dict) -> list[str]:
    la, lb = drawn.get("logit") or {}, rewritten.get("logit") or {}
    names = [n for n in SCORES if n in la and n in lb]
    if not names:
        return []
    budgets = sorted(lb[names[0]], key=float)
    doses = sorted({k[1:] for k in lb[names[0]][budgets[0]] if k[:1] == "x"}, key=float)
    low = doses[0] if doses else None
    lines = [f"{group}: each logit score's split-conformal threshold fitted on the model's own known non-members "
             f"(instance level), as drawn and rewritten:", "",
             *table(["score (reading)", "FPR budget", "realised FPR, as drawn", "realised FPR, rewritten",
                     f"TPR x{low}, as drawn", f"TPR x{low}, rewritten"])]
    for name in names:
        for budget in budgets:
            at_a, at_b = la[name].get(budget, {}), lb[name].get(budget, {})
            lines.append(f"| {labelled(name)} | {float(budget):g} | {rate_with_count(at_a.get('non_members'))} | "
                         f"{rate_with_count(at_b.get('non_members'))} | {rate_with_count(at_a.get(f'x{low}'))} | "
                         f"{rate_with_count(at_b.get(f'x{low}'))} |")
    if rewritten.get("aa"):
        lines += ["", f"{group}, A/A rows against the rewritten pool:", "", *aa_lines(rewritten["aa"])]
    return lines + [""]


def report(drawn_folder: Path, rewritten_folder: Path) -> str:
    drawn, rewritten = _load(drawn_folder), _load(rewritten_folder)
    lines = []
    for group, a, b in _paired_groups(drawn, rewritten):
        lines += [*recipe_lines(group, a, b), *logit_lines(group, a, b)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("as_drawn", type=Path, help="the calibration of the studies whose known non-members are as "
                                                    "drawn")
    parser.add_argument("rewritten", type=Path, help="the calibration of the same draws' studies with "
                                                     "sample.known_shift=rewrite")
    args = parser.parse_args(argv)
    print(report(args.as_drawn, args.rewritten), end="")


if __name__ == "__main__":
    main()
