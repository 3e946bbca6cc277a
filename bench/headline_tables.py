"""The README's headline tables, printed from a calibration (calibration.json's ``recipe``, ``cards`` and
``by_regime`` blocks).

    python bench/headline_tables.py results/transfer_cpu                      # print them
    python bench/headline_tables.py results/transfer_cpu --write README.md    # put them between the README's markers

1. The recipe, per group (regime and dataset): its stated bound on the partition FPR against the FPR it realised on
   each model's own non-members, and its TPR by dose, over independent units (the paper's rule on ROUGE-L with every
   known non-member; near-exact labels only beside it).
2. The threshold card, per group: its values with their intervals over draws, the rule, its held-out FPR and TPR,
   and its transfer to the other group (FPR, equivalence verdict and power).
3. Membership within each model: each logit score's within-model AUC by dose, t-interval over draws, the reading
   labelled (the leak's own rendering is an oracle reading; ``_raw`` the bare text).

Reads calibration.json. The README's tables are this script's output, never typed by hand: ``--write`` replaces
the text between its two marker lines (``BEGIN``, ``END``), and tests/test_docs.py checks they still agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contaminate.calibration.recipe import rates_text  # noqa: E402
from contaminate.calibration.regime_report import interval  # noqa: E402
from detect.detectors import labelled  # noqa: E402

SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio", "dc_pdd", "loss_raw", "min_k_plus_raw")


def _rate(summary: dict | None) -> str:
    return "-" if summary is None else f"{rates_text(summary)} ({summary['labelled']}/{summary['instances']})"


def recipe(calibration: dict) -> list[str]:
    lines = []
    for group, block in calibration["recipe"].items():
        chosen = [c for c in block["configs"] if c["size"] is None and c["score"] == "rouge_l"]
        doses = sorted({d for c in chosen for d in c["tpr_by_dose"]}, key=float)
        unit = next((c["fpr"]["unit"] for c in chosen if c["fpr"]), "-")
        lines += [f"{group}, {unit}, {'/'.join(map(str, block['models']['known_non_members']))} known non-members "
                  f"a model:", "",
                  "| rule | stated bound | realised FPR, own non-members | " + " | ".join(f"TPR x{d}" for d in doses)
                  + " |", "|---|---|---|" + "---|" * len(doses)]
        for c in chosen:
            bound = "refused" if c["stated_bound"] is None else f"{c['stated_bound']:.3f}"
            lines.append(f"| {c['rule_text']} | {bound} | {_rate(c['fpr'])} | "
                         + " | ".join(_rate(c["tpr_by_dose"].get(d)) for d in doses) + " |")
        lines.append("")
    return lines


def cards(calibration: dict) -> list[str]:
    lines = ["| card fitted on | rests on | exact >= | near-exact >= | rule | held-out FPR | held-out TPR |",
             "|---|---|---|---|---|---|---|"]
    moved = []
    for group, card in calibration["cards"].items():
        if not card["written"]:
            lines.append(f"| {group} | no card: {card['why'].split(': ', 1)[-1]} | | | | | |")
            continue
        held = card["held_out"]
        tpr = ", ".join(f"x{d} {_rate(s)}" for d, s in held["tpr_by_dose"].items())
        lines.append(f"| {group} | {card['rests_on']['unit']} | {rates_text(card['thresholds']['exact'], _three)} | "
                     f"{rates_text(card['thresholds']['near_exact'], _three)} | {card['rule_text']} | "
                     f"{_rate(held['fpr'])} | {tpr} |")
        for target, block in (card.get("transfer") or {}).items():
            test = block["equivalence"]
            tpr = ", ".join(f"x{d} {_rate(s)}" for d, s in block["tpr_by_dose"].items())
            moved.append(f"| {group} | {target} | {_rate(block['fpr'])} | {test['verdict']} ({test['k']}/{test['n']}) "
                         f"| {test['power']:.2f} | {tpr} |")
    if moved:
        lines += ["", "| card fitted on | applied to | partition FPR | FPR within 5% + 5%? | power | TPR |",
                  "|---|---|---|---|---|---|", *moved]
    return lines + [""]


def _three(value: float) -> str:
    return f"{value:.3f}"


def membership(calibration: dict) -> list[str]:
    lines = []
    for regime, block in calibration["by_regime"]["regimes"].items():
        doses = [f"{d:g}" for d in block["exposures"] if d and f"{d:g}" in block["membership"]]
        units = sorted({block["membership"][d]["unit"] for d in doses})
        lines += [f"{regime}, {'; '.join(units)} a dose:", "",
                  "| score (reading) | " + " | ".join(f"AUC x{d}" for d in doses) + " |", "|---|" + "---|" * len(doses)]
        for name in SCORES:
            cells = [interval(block["membership"][d]["scores"].get(name, {}).get("auc")) for d in doses]
            if any(c != "-" for c in cells):
                lines.append(f"| {labelled(name)} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


BEGIN = "<!-- headline tables: generated by python bench/headline_tables.py {folder} --write README.md -->"
END = "<!-- end of the headline tables -->"


def tables(calibration: Path) -> str:
    """Every headline table, as printed."""
    found = json.loads((calibration / "calibration.json").read_text())
    return "\n".join("\n".join(part(found)) + "\n" for part in (recipe, cards, membership))


def _split(text: str, folder: Path) -> tuple[str, str, str]:
    """A document as (up to and with the begin marker, between the markers, from the end marker on)."""
    begin = BEGIN.format(folder=folder)
    if begin not in text or END not in text.split(begin, 1)[1]:
        raise SystemExit(f"no headline markers for {folder}: add the lines {begin!r} and {END!r}")
    head, rest = text.split(begin, 1)
    inside, tail = rest.split(END, 1)
    return head + begin, inside, END + tail


def between_markers(text: str, folder: Path) -> str:
    """What stands between a document's markers for this calibration folder."""
    return _split(text, folder)[1].strip("\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", type=Path, help="the folder calibrate wrote (with calibration.json)")
    parser.add_argument("--write", type=Path, help="a markdown file whose marked block is replaced by the tables")
    args = parser.parse_args(argv)
    generated = tables(args.calibration)
    if args.write is None:
        print(generated)
        return
    head, _, tail = _split(args.write.read_text(), args.calibration)
    args.write.write_text(f"{head}\n{generated.strip()}\n{tail}")


if __name__ == "__main__":
    main()
