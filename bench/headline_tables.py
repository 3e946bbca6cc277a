"""The README's headline tables, from a calibration by regime and (optionally) the sweep's study folders.

    python bench/headline_tables.py results/regimes_cpu                                  # regimes x detectors, transfer
    python bench/headline_tables.py results/regimes_cpu --studies runs/regimes_cpu       # + AUCs within the model at 1

1. Regimes x detectors (calibration.md's first table turned on its side, the README's detectors): the lowest
   exposure detected at partition FPR <= 5%, then the AUC at the regime's highest exposure; the as-run Algorithm 2;
   the blind baseline.
2. Threshold transfer per detector: off-diagonal pairs over the FPR budget, those beyond refit noise, with and
   without the instruction regimes, and (without instruction) where only one axis differs.
3. With ``--studies``: each logit score's AUC of the members against the non-members *on the contaminated model*
   at one exposure (``--exposures``), per seed: the membership-inference question MIMIR asks, unlike the
   calibration's AUCs, whose negatives include the clean model's cells.

Reads calibration.json (and each study's results.jsonl); writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

from contaminate.calibration.regime_report import auc_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from regimes_table import instance_aucs  # noqa: E402

DETECTORS = {"loss": "loss", "zlib": "zlib", "min_k": "Min-K%", "min_k_plus": "Min-K%++",
             "reference_ratio": "ref. ratio", "dc_pdd": "DC-PDD", "sharded_likelihood": "sharded",
             "alg1_rouge_l": "Alg. 1", "alg2": "Alg. 2", "cheat": "Cheat?", "rouge_l": "guided ROUGE-L"}
AXES = ("format", "background", "backend")


def _auc_text(value) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"


def detectors_by_regime(by_regime: dict) -> list[str]:
    lines = ["| regime (format/background/backend) | " + " | ".join(DETECTORS.values())
             + " | Alg. 2 as run | blind AUC |", "|---" * (len(DETECTORS) + 3) + "|"]
    for regime, block in by_regime["regimes"].items():
        cells = []
        for name in DETECTORS:
            detected = block["detection"]["statistics"].get(name)
            lowest = "-" if detected is None or detected["lowest_exposures"] is None \
                else f"{detected['lowest_exposures']:g}"
            cells.append(f"{lowest} · {_auc_text(auc_of(block, name))}")
        alg2 = block["detection"]["verdicts"].get("alg2")
        if alg2 is not None and alg2["fpr"] and alg2["fpr"] > by_regime["targets"]["partition_fpr"] + 1e-12:
            as_run = f"FPR {alg2['fpr']:.2f}"
        else:
            as_run = "-" if alg2 is None or alg2["lowest_exposures"] is None else f"{alg2['lowest_exposures']:g}"
        blind = block["blind_baseline"]
        lines.append(f"| {regime} | " + " | ".join(cells) + f" | {as_run} | "
                     + ("-" if blind is None else f"{blind['auc']:.2f}") + " |")
    return lines


def transfer_summary(by_regime: dict) -> list[str]:
    lines = ["| detector | over 5% FPR, all pairs | of them beyond noise | without instruction: over | beyond noise "
             "| beyond noise, only the format / background / backend differs (no instruction) |",
             "|---|---|---|---|---|---|"]
    for name, fitted in by_regime["transfer"].items():
        pairs = [(a, b, cell) for a, row in fitted.items() for b, cell in row["to"].items()
                 if a != b and cell["fpr"] is not None]
        plain = [p for p in pairs if "instruction" not in p[0] and "instruction" not in p[1]]

        def over(chosen):
            return f"{sum(bool(p[2]['over']) for p in chosen)} of {len(chosen)}"

        def beyond(chosen):
            if any(p[2].get("beyond_noise") is None for p in chosen):
                return "-"
            return str(sum(bool(p[2]["beyond_noise"]) for p in chosen))

        by_axis = []
        for axis in AXES:
            only = [p for p in plain if [x for x, a, b in zip(AXES, p[0].split("/"), p[1].split("/")) if a != b]
                    == [axis]]
            by_axis.append(f"{beyond(only)} of {len(only)}")
        lines.append(f"| {name} | {over(pairs)} | {beyond(pairs)} | {over(plain)} | {beyond(plain)} | "
                     + " / ".join(by_axis) + " |")
    return lines


def within_model(studies: Path, exposures: int) -> list[str]:
    """Members against non-members on the contaminated model at one dose, per regime; seeds listed."""
    aucs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for manifest in sorted(studies.rglob("manifest.json")):
        folder = manifest.parent
        summary = folder / "summary.json"
        if not summary.exists() or not (folder / "results.jsonl").exists():
            continue
        regime = json.loads(manifest.read_text()).get("regime") or {}
        if regime.get("exposures") != exposures:
            continue
        config = json.loads(summary.read_text())
        key = f"{config['format']}/{(regime.get('background') or {}).get('name', 'none')}/{config['backend']}"
        for score, auc in instance_aucs(folder).items():
            aucs[key][score].append(auc)
    scores = [s for s in ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio", "dc_pdd")
              if any(s in block for block in aucs.values())]
    lines = ["| regime | " + " | ".join(scores) + " |", "|---" * (len(scores) + 1) + "|"]
    for key in sorted(aucs):
        lines.append(f"| {key} | " + " | ".join(", ".join(f"{v:.2f}" for v in aucs[key].get(s, [])) or "-"
                                                for s in scores) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", type=Path, help="the folder calibrate wrote (with calibration.json)")
    parser.add_argument("--studies", type=Path, help="the sweep's study folders, for the AUCs within the model")
    parser.add_argument("--exposures", type=int, default=1)
    args = parser.parse_args(argv)
    by_regime = json.loads((args.calibration / "calibration.json").read_text())["by_regime"]
    print("\n".join(detectors_by_regime(by_regime)), end="\n\n")
    print("\n".join(transfer_summary(by_regime)))
    if args.studies:
        print("\n" + "\n".join(within_model(args.studies, args.exposures)))


if __name__ == "__main__":
    main()
