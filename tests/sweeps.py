"""Hand-built study folders with known non-members, for the recipe's and the card's tests: every score chosen, so
every rate is known by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

BASE = {"name": "tiny", "path": "/nowhere", "adapter": None}


def study(folder: Path, *, draw: int, exposures: int, cells: dict[str, tuple[str, list[float]]],
          dataset: str = "synth_nli", fmt: str = "metadata", seed: int | None = None, model: str = "tiny") -> None:
    """A finished study whose cells hold guided rows with these ROUGE-L scores (``cells``: name -> (ground truth,
    scores)); a score of 1.0 is an exact replay. The clean model (the base) is one model for every study; the
    contaminated model is one per draw and dose. Each instance also has ``loss`` = its ROUGE-L minus 3."""
    seed = draw if seed is None else seed
    folder.mkdir(parents=True)
    rows, summary_cells = [], {}
    for cell, (truth, scores) in cells.items():
        checkpoint = "clean" if cell.startswith("clean") else "contaminated"
        for k, score in enumerate(scores):
            # the clean model's cells: the same ids and prompts in every study of a draw (one computation)
            ident = f"{dataset}-{draw}-{cell.split('_x_')[1]}-{k}" if checkpoint == "clean" else f"{cell}-{k}"
            rows.append({"cell": cell, "instance_id": ident, "instruction": "guided", "checkpoint": checkpoint,
                         "split": "test", "prompt": f"{checkpoint} {ident}", "ground_truth": truth,
                         "reference": f"the reference text {k}",
                         "completion": f"the reference text {k}" if score == 1.0 else f"something else {k}",
                         "rouge_l": score, "semantic": score, "loss": score - 3.0})
        if not cell.endswith("known_non_members"):
            exact = sum(s == 1.0 for s in scores)
            summary_cells[cell] = {"checkpoint": checkpoint, "ground_truth": truth, "n_instances": len(scores),
                                   "split": "test", "instances": cell.split("_x_")[1],
                                   "alg2": {"exact": exact, "near_exact": 0, "unparseable": 0,
                                            "contaminated": exact >= 1, "min_exact": 1, "min_near_exact": 2}}
    manifest = {"base_model": {**BASE, "name": model}, "dataset": {"key": dataset}, "member_ids": [0, 1],
                "detection_ids": {"members": [0, 1]}, "format": {"name": fmt}, "detect": {"prompt_format": "raw"},
                "contaminate": {"backend": "full", "exposures": exposures, "epochs": None, "learning_rate": 3e-4},
                "seeds": {"sampling": draw, "training": seed},
                "checkpoint": {"id": f"{model}-{dataset}-{fmt}-{exposures}-{draw}-{seed}"},
                "judge": {"name": "threshold"}, "regime": {"background": {"name": "none"}}, "control_checkpoint": None}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "results.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    (folder / "summary.json").write_text(json.dumps({"cells": summary_cells}))


def sweep(root: Path, *, draws: int = 3, n_known: int = 400, member_replays: int = 6, known_high: float = 0.6,
          base_high: float = 0.1, dataset: str = "synth_nli", fmt: str = "metadata", seed: int = 0) -> None:
    """``draws`` contaminated models (one a draw, exposures 4), each with ``n_known`` known non-members whose ROUGE-L
    spread uniformly below ``known_high`` (the contaminated model writes on-template text for every instance), 20
    non-members alike, 20 members of which ``member_replays`` replay exactly (1.0) and the rest score like
    non-members; the base model reads every instance at most ``base_high`` (easy negatives)."""
    rng = np.random.default_rng(seed)

    def spread(n: int, high: float) -> list[float]:
        return [round(float(v), 4) for v in rng.uniform(0.0, high, n)]

    for draw in range(draws):
        members = [1.0] * member_replays + spread(20 - member_replays, known_high)
        study(root / f"{dataset}_{fmt}_d{draw}", draw=draw, exposures=4, dataset=dataset, fmt=fmt, cells={
            "contaminated_x_members": ("contaminated", members),
            "contaminated_x_non_members": ("clean", spread(20, known_high)),
            "contaminated_x_known_non_members": ("clean", spread(n_known, known_high)),
            "clean_x_members": ("clean", spread(20, base_high)),
            "clean_x_non_members": ("clean", spread(20, base_high)),
            "clean_x_known_non_members": ("clean", spread(n_known, base_high))})
