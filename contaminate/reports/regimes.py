"""Markdown tables of finished studies side by side: the regime, each detector's verdict on the members under the
contaminated model and under the control (and on the non-members), the blind baseline and the study's time; each
logit score's AUC.

    # one row per study folder, sorted by exposures
    python -m contaminate.reports.regimes runs/regimes/exposures_*

Reads each folder's summary.json and manifest.json; writes nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from contaminate.calibration.statistics import auc
from detect.markdown import interval_text, table
from detect.markdown import row as markdown_row


def instance_aucs(folder: Path) -> dict[str, float]:
    """Each logit score's AUC of the members against the non-members under the contaminated model (its guided rows:
    sample.n_detect instances each, so a coarse number)."""
    from detect.detectors import instance_scores

    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    guided = [r for r in rows if r["instruction"] == "guided" and r["checkpoint"] == "contaminated"
              and r["cell"] in ("contaminated_x_members", "contaminated_x_non_members")]
    def side(cell: str, score: str) -> list[float]:
        return [r[score] for r in guided if r["cell"] == cell]

    return {score: auc(side("contaminated_x_members", score), side("contaminated_x_non_members", score))
            for score in instance_scores()
            if all(r.get(score) is not None for r in guided)}


def row(folder: Path) -> tuple[tuple, dict]:
    from detect.pipeline import verdicts

    summary = json.loads((folder / "summary.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    regime = manifest.get("regime", {})
    members = verdicts(summary["cells"]["contaminated_x_members"])
    non_members = verdicts(summary["cells"]["contaminated_x_non_members"])
    control = verdicts(summary["cells"]["clean_x_members"])
    blind = summary.get("blind_baseline")
    checkpoint = manifest["checkpoint"]
    return (regime.get("exposures") or 0, folder.name), {
        "exposures": regime.get("exposures", regime.get("epochs")),
        "share": f"{regime.get('members_token_share', 1):.1%}",
        "tokens": f"{regime.get('training_tokens', checkpoint.get('trained_tokens', 0)):,}",
        "loss": f"{checkpoint['first_loss']:.2f} -> {checkpoint['final_loss']:.2f}",
        "verdicts": {name: (members[name], non_members[name], control[name]) for name in members},
        "aucs": instance_aucs(folder),
        "blind": interval_text(blind["auc"], blind["low"], blind["high"]) if blind else "-",
        "train_s": manifest["timings"].get("train_s"), "total_s": manifest["timings"]["total_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    rows = [values for _, values in sorted(row(folder) for folder in args.folders)]
    detectors = list(rows[0]["verdicts"])
    print("\n".join(table(["exposures", "members' share of tokens", "training tokens", "loss", *detectors,
                           "blind AUC", "train s", "study s"])))
    for values in rows:
        cells = [" / ".join("C" if flagged else "-" for flagged in three) for three in values["verdicts"].values()]
        print(markdown_row([values["exposures"], values["share"], values["tokens"], values["loss"], *cells,
                            values["blind"], f"{values['train_s']:.0f}", f"{values['total_s']:.0f}"]))
    print("\nEach detector: its verdict on the members under the contaminated model / the non-members under the "
          "contaminated model / the members under the control (C: contaminated, -: clean; right is C / - / - at "
          "exposures >= 1, - / - / - at 0).\n")
    scores = list(rows[0]["aucs"])
    print("\n".join(table(["exposures", *(f"{score} AUC" for score in scores)])))
    for values in rows:
        print(markdown_row([values["exposures"], *(f"{values['aucs'][score]:.2f}" for score in scores)]))
    print("\nLogit scores: AUC of the members against the non-members under the contaminated model "
          "(its guided rows, sample.n_detect of each).")


if __name__ == "__main__":
    main()
