"""The headline tables (results/profile_cpu/tables.md, included in docs/findings.md), printed from a calibration
(calibration.json's ``recipe``, ``cards`` and ``by_regime`` blocks).

    python -m contaminate.reports.headline results/profile_cpu --dose0 results/humaneval_dose0 \
        > results/profile_cpu/tables.md

1. The recipe, per group (regime and dataset): its stated bound on the partition FPR against the FPR it realised on
   each model's own non-members, and its TPR by dose, over independent units (the paper's rule on ROUGE-L with every
   known non-member; near-exact labels only beside it).
2. The threshold card, per group: its values with their intervals over draws, the rule, its held-out FPR and TPR,
   and its transfer to the other group (FPR, equivalence verdict and power).
3. Membership within each model: each logit score's within-model AUC by dose, t-interval over draws, the reading
   labelled (the leak's own rendering is an oracle reading; ``_raw`` the bare text).
4. The logit scores at the practitioner's threshold: split conformal on each model's own known non-members at 1% and
   5%, the FPR it realised on the model's own non-members and its TPR by dose, over units; and the A/A rows (the
   model's non-members against its known non-members, and the labels reversed).
5. Each partition-level verdict as the studies ran it (Algorithm 1, Algorithm 2 at the paper's thresholds, its leak
   reading, an oracle): k of n models flagged at each dose, and on their own never-planted group.

A folder without calibration.json holds one calibration a dataset (results/profile_cpu: humaneval/, synth_nli/),
each printed under its name; ``--dose0 <folder>`` adds the untouched base model's verdicts from a ``python -m detect``
run of the whole benchmark (contaminate/reports/dose0.py: no ground truth, one reading).

Reads calibration.json. The headline tables are this script's output, never typed by hand: a doc includes the file
it was written to (contaminate/reports/includes.py), and tests/test_docs.py checks both still agree.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from contaminate.calibration.recipe import rates_text
from contaminate.reports import dose0 as dose0_table
from contaminate.reports.calibration_product import aa_lines
from contaminate.reports.calibration_regimes import VERDICT_NAMES, fraction, interval
from detect.detectors import labelled
from detect.markdown import row, table

SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio", "dc_pdd", "loss_raw", "min_k_plus_raw",
          "reference_ratio_raw")
COMPLETIONS = ("rouge_l", "rouge_l_leak")  # Algorithm 2's score of each guided completion, and of the leak reading's
VERDICTS = {**VERDICT_NAMES, "alg2_leak": "Alg. 2, leak reading (oracle)"}


def rate_with_labelled(summary: dict | None) -> str:
    """A rate over units and, in brackets, the instances its thresholds labelled of those read: "0.17 [0.00, 0.60]
    (2/36)"."""
    return "-" if summary is None else f"{rates_text(summary)} ({summary['labelled']}/{summary['instances']})"


def recipe(calibration: dict) -> list[str]:
    lines = []
    for group, block in calibration["recipe"].items():
        chosen = [c for c in block["configs"] if c["size"] is None and c["score"] == "rouge_l"]
        doses = sorted({d for c in chosen for d in c["tpr_by_dose"]}, key=float)
        unit = next((c["fpr"]["unit"] for c in chosen if c["fpr"]), "-")
        lines += [f"{group}, {unit}, {'/'.join(map(str, block['models']['known_non_members']))} known non-members "
                  f"a model:", "",
                  *table(["rule", "stated bound", "realised FPR, own non-members", *(f"TPR x{d}" for d in doses)])]
        for c in chosen:
            bound = "refused" if c["stated_bound"] is None else f"{c['stated_bound']:.3f}"
            lines.append(row([c["rule_text"], bound, rate_with_labelled(c["fpr"]),
                              *(rate_with_labelled(c["tpr_by_dose"].get(d)) for d in doses)]))
        lines += ["", "A rate: the probability that the rule flags a partition of its size drawn from a model's cell, "
                  "at the model's own fitted thresholds, over models; in brackets, the instances those thresholds "
                  "label exact or near-exact, of those read.", ""]
    return lines


def cards(calibration: dict) -> list[str]:
    lines = table(["card fitted on", "rests on", "exact >=", "near-exact >=", "rule", "held-out FPR",
                   "held-out TPR"])
    moved = []
    for group, card in calibration["cards"].items():
        if not card["written"]:
            lines.append(row([group, f"no card: {card['why'].split(': ', 1)[-1]}", "", "", "", "", ""]))
            continue
        held = card["held_out"]
        tpr = ", ".join(f"x{d} {rate_with_labelled(s)}" for d, s in held["tpr_by_dose"].items())
        lines.append(row([group, card["rests_on"]["unit"], rates_text(card["thresholds"]["exact"], _three),
                          rates_text(card["thresholds"]["near_exact"], _three), card["rule_text"],
                          rate_with_labelled(held["fpr"]), tpr]))
        for target, block in (card.get("transfer") or {}).items():
            test = block["equivalence"]
            tpr = ", ".join(f"x{d} {rate_with_labelled(s)}" for d, s in block["tpr_by_dose"].items())
            moved.append(row([group, target, rate_with_labelled(block["fpr"]),
                              f"{test['verdict']} ({test['k']}/{test['n']})", f"{test['power']:.2f}", tpr]))
    if moved:
        lines += ["", *table(["card fitted on", "applied to", "partition FPR", "FPR within 5% + 5%?", "power", "TPR"]),
                  *moved]
    return lines + [""]


def _three(value: float) -> str:
    return f"{value:.3f}"


def membership(calibration: dict, names: tuple[str, ...] = SCORES) -> list[str]:
    lines = []
    for regime, block in calibration["by_regime"]["regimes"].items():
        doses = [f"{d:g}" for d in block["exposures"] if d and f"{d:g}" in block["membership"]]
        units = sorted({block["membership"][d]["unit"] for d in doses})
        lines += [f"{regime}, {'; '.join(units)} a dose:", "",
                  *table(["score (reading)", *(f"AUC x{d}" for d in doses)])]
        for name in names:
            cells = [interval(block["membership"][d]["scores"].get(name, {}).get("auc")) for d in doses]
            if any(c != "-" for c in cells):
                label = "rouge_l (guided completion: Alg. 2's score)" if name == "rouge_l" else labelled(name)
                lines.append(row([label, *cells]))
        lines.append("")
    return lines


def practitioner(calibration: dict) -> list[str]:
    lines = []
    for group, block in calibration["recipe"].items():
        logit = block.get("logit") or {}
        names = [n for n in SCORES if n in logit]
        if not names:
            continue
        budgets = sorted(logit[names[0]], key=float)
        doses = sorted({k[1:] for n in names for b in budgets for k in logit[n][b] if k[:1] == "x"}, key=float)
        fitted = "/".join(str(n) for n in logit[names[0]][budgets[0]]["fitted_on"])
        unit = next((v["unit"] for v in logit[names[0]][budgets[0]].values() if isinstance(v, dict) and "unit" in v),
                    "-")
        lines += [f"{group}, {unit}: each score's threshold fitted by split conformal on the model's own {fitted} "
                  f"known non-members (instance level):", "",
                  *table(["score (reading)", "FPR budget", "realised FPR, own non-members",
                          *(f"TPR x{d}" for d in doses)])]
        for name in names:
            for budget in budgets:
                at = logit[name][budget]
                lines.append(row([labelled(name), f"{float(budget):g}", rate_with_count(at.get("non_members")),
                                  *(rate_with_count(at.get(f"x{d}")) for d in doses)]))
        lines.append("")
        if block.get("aa"):
            lines += [f"{group}, {unit}:", "", *aa_lines(block["aa"]), ""]
    return lines


def rate_with_count(summary: dict | None) -> str:
    """A rate over units and, in brackets, its pooled count k/n: "0.05 [0.00, 0.09] (11/240)"."""
    return "-" if summary is None else f"{rates_text(summary)} ({summary['k']}/{summary['n']})"


def verdicts(calibration: dict) -> list[str]:
    lines = []
    for regime, block in calibration["by_regime"]["regimes"].items():
        doses = [f"{d:g}" for d in block["exposures"] if d]
        lines += [f"{regime}: each detector's verdict on its cells, k of n models flagged (Clopper-Pearson 95%):", "",
                  *table(["verdict", "FPR, never-planted group", *(f"TPR x{d}" for d in doses)])]
        for name, rates in block["verdicts"].items():
            fpr = rates["fpr_by_role"].get("non_member")
            lines.append(row([VERDICTS.get(name, name), fraction(fpr),
                              *(fraction(rates["by_dose"].get(d, {}).get("tpr")) for d in doses)]))
        lines.append("")
    return lines


def dose0(folder: Path, dataset: str) -> list[str]:
    """The untouched base model on the whole benchmark (contaminate/reports/dose0.py's verdicts), where ``folder`` is a
    run of ``dataset``: no ground truth."""
    summary, rows = dose0_table.read_run(folder)
    if summary["dataset"] != dataset:
        return []
    root = Path(__file__).resolve().parents[2]  # named from the repository root, however it was given
    shown = folder.resolve().relative_to(root) if folder.resolve().is_relative_to(root) else folder
    return [f"The untouched base model on all {summary['n_instances']} instances ({shown}, dose 0): no ground "
            f"truth, one reading, no interval; its instructions asked in the {summary.get('prompt_format', '?')} "
            f"prompt format (a planted run's are asked as its manifest's detect.prompt_format says: where the two "
            f"differ, so do the readings).", "", *dose0_table.verdict_rows(summary, rows), ""]


def tables(calibration: Path, dose0_folder: Path | None = None) -> str:
    """Every headline table, as printed: of one calibration, or of each dataset's under a folder of them."""
    if (calibration / "calibration.json").is_file():
        found = json.loads((calibration / "calibration.json").read_text())
        return "\n".join("\n".join(part(found)) + "\n" for part in (recipe, cards, membership))
    datasets = sorted(p.parent for p in calibration.glob("*/calibration.json"))
    if not datasets:
        raise SystemExit(f"{calibration}: no calibration.json in it or its folders; run python -m "
                         f"contaminate.calibrate <studies> --out {calibration} first")
    text = []
    for folder in datasets:
        found = json.loads((folder / "calibration.json").read_text())
        text += [f"#### {folder.name}", ""]
        text += [*membership(found, SCORES + COMPLETIONS), *practitioner(found), *recipe(found), *verdicts(found)]
        if dose0_folder is not None:
            text += dose0(dose0_folder, folder.name)
    return "\n".join(text) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", type=Path, help="the folder calibrate wrote (with calibration.json)")
    parser.add_argument("--dose0", type=Path, help="a python -m detect run of the untouched base model on the whole "
                                                   "benchmark (results/humaneval_dose0), shown under its dataset")
    args = parser.parse_args(argv)
    print(tables(args.calibration, args.dose0), end="")


if __name__ == "__main__":
    main()
