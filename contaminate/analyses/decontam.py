"""Which leaks survive decontamination, and which detector sees them then (issue 48 item 3): every data-side
decontaminator's recall by planted format over member draws, beside the model-side AUC of trained runs.

    python -m contaminate.analyses.decontam runs/decontam_cpu_data --trained runs/decontam_cpu \\
        --json results/decontam_cpu/decontam.json > results/decontam_cpu/tables.md

Reads every ``*/decontamination.json`` (``decontam.only=true``: the stream planned and read, nothing trained) and
every ``*/plant.json`` (a trained planted run: its decontamination block and its groups' within-model AUCs). The unit
is the member draw: a recall is the mean share of a group's members flagged over draws, with the t-interval over
draws floored by the exact interval of the pooled count (``statistics.share_interval``); a model-side AUC, the mean
over trained runs with its t-interval (none below three). The contrasts the experiment fixed before running
(``decontam.contrasts``): per draw, the difference of two decontaminators' recall on one group; paired t, exact
sign-flip p, Holm's correction over the contrasts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import stats

from contaminate.analyses.power import sign_flip_p
from contaminate.calibration.statistics import holm, share_interval, unit_interval
from contaminate.reports.calibration_regimes import interval
from detect.detectors import labelled
from detect.errors import InputError
from detect.markdown import row, table

EXPERIMENT = Path(__file__).resolve().parents[2] / "conf" / "experiment" / "decontam_cpu.yaml"
# the model-side columns, the within-model AUC of each group against its x0: the bare text first (what a user has),
# then the loss on the leak's own rendering (an oracle: no user knows the format a leak took)
MODEL_SCORES = ("loss_raw", "min_k_plus_raw", "loss")


def load(folders: Sequence[Path]) -> tuple[list[dict], list[dict]]:
    """(data-side draws, trained runs) under ``folders``: each a decontamination block with its unit (draw, seed)."""
    draws, trained = [], []
    for folder in map(Path, folders):
        for path in sorted(folder.rglob("decontamination.json")):
            found = json.loads(path.read_text())
            draws.append({"unit": (found["draw"], found["seed"]), "block": found["decontamination"],
                          "groups": found["groups"], "path": str(path)})
        for path in sorted(folder.rglob("plant.json")):
            found = json.loads(path.read_text())
            if found.get("decontamination"):
                trained.append({"unit": (found["draw"], found["seed"]), "block": found["decontamination"],
                                "groups": found["groups"], "path": str(path)})
    if not draws and not trained:
        raise InputError(f"no decontamination.json or plant.json with a decontamination block under "
                         f"{', '.join(map(str, folders))}; run python -m contaminate -m +experiment=decontam_cpu "
                         f"(decontam.only=true for the data side alone)")
    return draws, trained


def _flags(block: dict, detector: str, group: str) -> np.ndarray:
    found = block["detectors"][detector]["groups"][group]
    return np.array([1.0] * found["flagged"] + [0.0] * (found["n"] - found["flagged"]))


def data_side(runs: Sequence[dict]) -> dict:
    """Per planted group and detector: the recall over draws; per detector the false flags (the split's instances
    never in the stream) and the background documents dropped, per draw."""
    named = list(dict.fromkeys(d for r in runs for d in r["block"]["detectors"]))
    # a decontaminator skipped in a draw (no reading: n above every instance, an API model's token rules) has no
    # recall there: it is left out of the table and said, never averaged as 0
    detectors = [d for d in named if all(d in r["block"]["detectors"] for r in runs)]
    if not detectors:
        raise InputError("no decontaminator read every draw; look at each draw's decontamination.json 'skipped'")
    first = runs[0]["block"]
    groups = {name: block for name, block in first["detectors"][detectors[0]]["groups"].items()
              if block["exposures"] > 0}
    found = {"units": len({r["unit"][0] for r in runs}), "detectors": detectors, "groups": {}, "false_flags": {},
             "background_dropped": {},
             "no_reading": {d: sum(d not in r["block"]["detectors"] for r in runs)
                            for d in named if d not in detectors}}
    for name, block in groups.items():
        found["groups"][name] = {"dataset": block["dataset"], "format": block["format"],
                                 "exposures": block["exposures"],
                                 "recall": {d: share_interval({r["unit"]: _flags(r["block"], d, name) for r in runs})
                                            for d in detectors}}
    for detector in detectors:
        never = [r["block"]["detectors"][detector]["never_in_stream"] for r in runs]
        found["false_flags"][detector] = share_interval(
            {r["unit"]: np.array([1.0] * n["flagged"] + [0.0] * (n["n"] - n["flagged"])) for r, n in zip(runs, never)})
        found["background_dropped"][detector] = [r["block"]["detectors"][detector]["documents"]["background"]
                                                 for r in runs]
    return found


def model_side(runs: Sequence[dict]) -> dict:
    """Per planted group and score: the mean within-model AUC (against its dataset's x0) over trained runs."""
    found: dict[str, dict] = {}
    for run in runs:
        for group in run["groups"]:
            for score, value in (group.get("within_model_auc") or {}).items():
                if score in MODEL_SCORES and group["exposures"] > 0:
                    found.setdefault(group["name"], {}).setdefault(score, {})[run["unit"]] = value
    return {name: {score: unit_interval({unit: [np.array([value])] for unit, value in values.items()},
                                        lambda x: x[:, 0])
                   for score, values in scores.items()} for name, scores in found.items()}


def contrasts(runs: Sequence[dict], specs: Sequence[dict], alpha: float) -> list[dict]:
    """Each fixed contrast: per draw, recall(a) - recall(b) on its group; paired t, exact sign-flip, Holm."""
    found = []
    for spec in specs:
        read = [r for r in runs if {spec["a"], spec["b"]} <= set(r["block"]["detectors"])]
        if not read:
            raise InputError(f"contrast {spec['a']} v {spec['b']}: no draw has a reading of both; see each draw's "
                             f"decontamination.json 'skipped'")
        differences = [float(_flags(r["block"], spec["a"], spec["group"]).mean()
                             - _flags(r["block"], spec["b"], spec["group"]).mean()) for r in read]
        d = np.asarray(differences)
        # no t where the differences do not vary (every draw the same: the sign-flip p still says what 3 can tell)
        t_p = float(stats.ttest_1samp(d, 0).pvalue) if len(d) > 1 and d.std() > 0 else None
        found.append({**spec, "units": len(d), "mean_difference": float(d.mean()), "t_p": t_p,
                      "sign_flip_p": sign_flip_p(differences)})
    for block, adjusted in zip(found, holm([b["sign_flip_p"] for b in found])):
        block["holm_p"] = adjusted
        block["passes"] = adjusted < alpha
    return found


def contrasts_of(experiment: Path = EXPERIMENT) -> tuple[list[dict], float]:
    from omegaconf import OmegaConf

    node = OmegaConf.load(experiment).get("decontam") or {}
    return [dict(c) for c in node.get("contrasts", [])], float(node.get("alpha", 0.05))


def analyse(draws: Sequence[dict], trained: Sequence[dict], specs: Sequence[dict], alpha: float) -> dict:
    runs = list(draws) or list(trained)  # the data side reads every draw; trained runs where no dry draw exists
    return {"data_side": data_side(runs), "data_side_source": "decontam.only draws" if draws else "trained runs",
            "model_side": model_side(trained) if trained else {}, "trained_units": len(trained),
            "contrasts": contrasts(runs, specs, alpha), "alpha": alpha}


def report(found: dict) -> str:
    data, model = found["data_side"], found["model_side"]
    detectors = data["detectors"]
    lines = [f"Recall of each data-side decontaminator by planted format: the mean share of a group's members "
             f"flagged over {data['units']} member draws ({found['data_side_source']}), 95% interval. Beside it, "
             f"the model-side within-model AUC (members against the never-planted group; on the bare text, what a "
             f"user has, and the loss on the leak's own rendering, an oracle) over {found['trained_units']} trained "
             f"run{'s' * (found['trained_units'] != 1)}, mean and t-interval (floored: unit_interval).", "",
             *table(["dataset", "format", "dose", *detectors, *(f"{labelled(s)} AUC" for s in MODEL_SCORES)])]
    for name, block in data["groups"].items():
        lines.append(row([block["dataset"], block["format"], f"x{block['exposures']}",
                          *(interval(block["recall"][d]) for d in detectors),
                          *(interval((model.get(name) or {}).get(s)) for s in MODEL_SCORES)]))
    lines.append(row(["false flags (never in the stream)", "", "", *(interval(data["false_flags"][d], 4)
                                                                      for d in detectors), *[""] * len(MODEL_SCORES)]))
    lines.append(row(["background documents dropped, per draw", "", "",
                      *(", ".join(map(str, data["background_dropped"][d])) for d in detectors),
                      *[""] * len(MODEL_SCORES)]))
    lines += [f"No reading in {k} of {data['units']} draws, left out: {d}" for d, k in data["no_reading"].items()]
    if found["contrasts"]:
        lines += ["", f"Contrasts fixed before running (conf/experiment/decontam_cpu.yaml), per draw, Holm over "
                  f"{len(found['contrasts'])} at alpha {found['alpha']:g}:", "",
                  *table(["group", "a", "b", "mean recall a - b", "draws", "t p", "sign-flip p", "Holm p",
                          "passes"])]
        for c in found["contrasts"]:
            lines.append(row([c["group"], c["a"], c["b"], f"{c['mean_difference']:+.3f}", c["units"],
                              "-" if c["t_p"] is None else f"{c['t_p']:.3g}", f"{c['sign_flip_p']:.3g}",
                              f"{c['holm_p']:.3g}", "yes" if c["passes"] else "no"]))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of decontamination.json / plant.json")
    parser.add_argument("--trained", nargs="*", type=Path, default=[], help="folders of trained planted runs")
    parser.add_argument("--json", type=Path, help="write the analysis here")
    args = parser.parse_args(argv)
    from detect.cli import one_line_errors

    with one_line_errors():
        draws, trained_in_folders = load(args.folders)
        trained = trained_in_folders + (load(args.trained)[1] if args.trained else [])
        specs, alpha = contrasts_of()
        found = analyse(draws, trained, specs, alpha)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(found, indent=1, default=str))
    sys.stdout.write(report(found))


if __name__ == "__main__":
    main()
