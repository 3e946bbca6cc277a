"""The README's headline tables, printed from a calibration (calibration.json's ``by_regime`` block).

    python bench/headline_tables.py results/units_cpu

1. Membership within each model: each instance score's AUC (members against the same model's non-members), per
   regime and dose, mean over models with the hierarchical bootstrap's 95% interval, and how many models.
2. Held-out thresholds at the cell level: TPR and within-model FPR, practitioner and oracle, k of n models.
3. The studies' own verdicts per model: TPR and within-model FPR, k of n models.
4. Transfer: per detector, how many regime pairs the equivalence test calls within, over, or not enough data.

Reads calibration.json; writes nothing. The README's numbers are this script's output, never typed by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contaminate.calibration.regime_report import VERDICT_NAMES, fraction, interval  # noqa: E402

SCORES = {"loss": "loss", "zlib": "zlib", "min_k": "Min-K%", "min_k_plus": "Min-K%++",
          "reference_ratio": "ref. ratio", "dc_pdd": "DC-PDD", "rouge_l": "guided ROUGE-L",
          "rouge_l_gain": "ROUGE-L gain (guided - general)"}
CELL_DETECTORS = ("loss", "min_k_plus", "reference_ratio", "alg2", "alg1_rouge_l")


def _doses(block: dict) -> list[str]:
    return [f"{d:g}" for d in block["exposures"] if d]


def membership(by_regime: dict) -> list[str]:
    lines = []
    for regime, block in by_regime["regimes"].items():
        doses = [d for d in _doses(block) if d in block["membership"]]
        units = sorted({block["membership"][d]["unit"] for d in doses})
        lines += [f"{regime}, {'; '.join(units)} a dose:", "",
                  "| score | regime | " + " | ".join(f"AUC x{d}" for d in doses) + " |",
                  "|---|---|" + "---|" * len(doses)]
        for name in SCORES:
            cells = [interval(block["membership"][d]["scores"].get(name, {}).get("auc")) for d in doses]
            if any(c != "-" for c in cells):
                lines.append(f"| {name} | {regime} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def thresholds(by_regime: dict) -> list[str]:
    lines = []
    for regime, block in by_regime["regimes"].items():
        doses = _doses(block)
        detectors = block["thresholds"]["cell"]["detectors"]
        lines += [f"{regime} (cell level, leave one {block['thresholds']['cell']['folds']} out):", "",
                  "| detector | setting | " + " | ".join(f"TPR x{d} | FPR x{d}" for d in doses) + " |",
                  "|---|---|" + "---|---|" * len(doses)]
        for name in (n for n in CELL_DETECTORS if n in detectors):
            for setting, result in detectors[name].items():
                cells = [fraction(result["by_dose"].get(d, {}).get(rate)) for d in doses for rate in ("tpr", "fpr")]
                lines.append(f"| {name} | {setting} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def verdicts(by_regime: dict) -> list[str]:
    lines = []
    for regime, block in by_regime["regimes"].items():
        doses = _doses(block)
        lines += [f"{regime}:", "", "| verdict, as run | " + " | ".join(f"TPR x{d} | FPR x{d}" for d in doses)
                  + " | FPR clean models |", "|---|" + "---|---|" * len(doses) + "---|"]
        for name, rates in block["verdicts"].items():
            cells = [fraction(rates["by_dose"].get(d, {}).get(rate)) for d in doses for rate in ("tpr", "fpr")]
            lines.append(f"| {VERDICT_NAMES.get(name, name)} | " + " | ".join(cells)
                         + f" | {fraction(rates['fpr_by_role']['clean_model'])} |")
        lines.append("")
    return lines


def transfer(by_regime: dict) -> list[str]:
    table = by_regime.get("transfer")
    if not table:
        return ["Transfer: one regime, nothing to transfer."]
    lines = ["| detector | within | over | not enough data | largest power |", "|---|---|---|---|---|"]
    for name, rows in table["thresholds"].items():
        cells = [cell for row in rows.values() for cell in row["to"].values()]
        counts = [sum(c["verdict"] == v for c in cells) for v in ("within", "over", "not enough data")]
        lines.append(f"| {name} | " + " | ".join(map(str, counts))
                     + f" | {max((c['power'] for c in cells), default=0):.2f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", type=Path, help="the folder calibrate wrote (with calibration.json)")
    args = parser.parse_args(argv)
    by_regime = json.loads((args.calibration / "calibration.json").read_text())["by_regime"]
    for part in (membership, thresholds, verdicts, transfer):
        print("\n".join(part(by_regime)), end="\n\n")


if __name__ == "__main__":
    main()
