"""Which part of the lab's rewrite breaks exchangeability, read by the untouched model (issue 68 item 3).

    python bench/shift_arms.py --out results/shift_arms_untouched
    python bench/shift_arms.py --model gemma3_270m --out results/shift_arms_untouched/gemma3_270m   # a base model

HumanEval's 164 problems (prompt and canonical solution, the text the lab plants) are split at random into a judged
half, as drawn, and a known half, written by each arm of contaminate/shift.py: as drawn, ``rename`` (identifiers
alone), ``reword`` (the docstring's prose alone) and ``rewrite`` (both). Under the untouched embedded model, which saw
neither half, each logit score of both halves gives (detect/exchangeability.py) the A/A pre-check's AUC (the judged
half above the known one; 0.5 where exchangeable) and its warning (two-sided Mann-Whitney p <= 0.05), and the FPR a
5% split-conformal threshold fitted on the known half realises on the judged half: what the arm costs a
practitioner's threshold before any fine-tune.

``--splits`` random splits (seeds 0..S-1) of one model's scores of one pool: resampling, not independent units, so
each cell is the mean over splits with their range, no interval. The reference ratio is not read: under the model
that is its own reference it is zero.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pass_at_1 import cpu_name  # noqa: E402  (the CPU as every bench names it)
from contaminate.calibration.statistics import conformal_threshold  # noqa: E402
from detect.exchangeability import departure, verdict  # noqa: E402
from detect.markdown import row, table  # noqa: E402

ARMS = ("as drawn", "rename", "reword", "rewrite")
SCORES = ("loss", "zlib", "min_k", "min_k_plus")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--model", default="smollm2_135m", help="an embedded model's name (detect/models/loading.py)")
    parser.add_argument("--out", required=True, help="a folder: table.md written there")
    args = parser.parse_args()

    from omegaconf import OmegaConf

    from contaminate.shift import shift_pool
    from detect.cli import CONF_DIR
    from detect.datasets import load_split
    from detect.detectors.membership import membership_scores
    from detect.models import GenerationSettings, embedded
    from detect.models.hf import LocalModels

    started = time.perf_counter()
    dataset = OmegaConf.load(CONF_DIR / "dataset" / "humaneval.yaml")
    examples = load_split(dataset, "test")
    model = LocalModels().open(embedded(args.model), GenerationSettings(progress=False))
    scores = {}  # arm -> score -> array over problems (instance order)
    for arm in ARMS:
        pool = examples if arm == "as drawn" else shift_pool(dataset, "test", examples, arm)
        rows = membership_scores(model, [e.full_text for e in pool])
        scores[arm] = {s: np.array([row[s] for row in rows], float) for s in SCORES}
    cells: dict = {}
    for seed in range(args.splits):
        order = np.random.default_rng(seed).permutation(len(examples))
        judged, known = order[: len(order) // 2], order[len(order) // 2:]
        for arm in ARMS:
            for score in SCORES:
                found = departure(scores[arm][score][known], scores["as drawn"][score][judged])
                threshold = conformal_threshold(scores[arm][score][known], 0.05)["threshold"]
                fpr = float(np.mean(scores["as drawn"][score][judged] > threshold))
                cell = cells.setdefault((arm, score), {"auc": [], "warn": [], "fpr": []})
                cell["auc"].append(found["auc"])
                cell["warn"].append(verdict({"loss": found})["warn"])
                cell["fpr"].append(fpr)

    def spread(values) -> str:
        return f"{np.mean(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    lines = [f"Untouched {args.model}; HumanEval test, {len(examples)} problems split {args.splits} times at random "
             f"into a judged half (as drawn) and a known half (by arm); {cpu_name()}. Mean over splits (range); splits "
             f"of one pool are not independent units: no interval.", "",
             *table(["arm", "score", "AUC, judged above known", "splits warned (p <= 0.05)",
                     "5% threshold on the known half: FPR on the judged half"])]
    for arm in ARMS:
        for score in SCORES:
            cell = cells[(arm, score)]
            lines.append(row([arm, score, spread(cell["auc"]), f"{sum(cell['warn'])}/{len(cell['warn'])}",
                              spread(cell["fpr"])]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
