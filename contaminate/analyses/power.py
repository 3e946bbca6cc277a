"""The power profile's tables (issue 47; conf/experiment/power_cpu.yaml): logit scores by dose over independent runs,
the pre-registered contrasts, the practitioner's threshold on an exchangeable and on a shifted pool of known
non-members, the A/A rows, and what each leak did to pass@1.

    python -m contaminate.analyses.power --collect runs/power_cpu --shifted runs/power_cpu_shift \
        --out results/power_cpu/studies                       # each run's scores, kept (no checkpoint)
    python -m contaminate.analyses.power --collect runs/power_gemma_cpu --out results/power_gemma_cpu/studies \
        --shifted runs/power_gemma_cpu_shift runs/power_gemma_cpu_rename runs/power_gemma_cpu_reword  # + the arms
    python -m contaminate.analyses.power results/power_cpu/studies --json results/power_cpu/power.json \
        --plot results/power_cpu/power.png > results/power_cpu/tables.md

One run is one unit: seed N trained on member draw N, every group of that run inside it. Per run and dataset the
pools are each dose's members (24 a dose in the profile), the never-planted group x0, the known non-members (44) and,
where the shifted invocations read them, the same known non-members rewritten (contaminate/shift.py): ``shifted``
(the whole rewrite), ``renamed`` and ``reworded`` (its two parts as arms of their own, issue 68; each invocation's
``sample.known_shift`` says which arm it read, per dataset). Every number is within one model, then summarised over
runs:

1. **AUC by dose**: members against x0 and the known non-members together (both never trained, exchangeable by
   design; the A/A row checks it), mean over runs with the t-interval of ``unit_interval`` (coverage at this shape:
   results/interval_coverage); and the ROC curve's TPR at 1% and 5% FPR on the same negatives (a threshold at the
   negatives' own quantile: the curve's point, not a threshold a practitioner could fit).
2. **The pre-registered contrasts** (``power.contrasts`` of the experiment): each a paired difference of AUCs over
   runs, two-sided, the paired t and the exact sign-flip p, Holm over those contrasts only (per test).
3. **The practitioner's threshold**: split conformal at 5% on the model's own known non-members, as drawn and as
   each arm read rewrote them; the FPR it realises on x0 and the TPR by dose, over runs. At 1% it needs 99 known
   non-members (the profile has 44: the table says so).
4. **A/A rows**: x0 against the known non-members (exchangeable: AUC 0.5 by design), x0 against each rewritten pool
   (what the shift alone does), and labels reversed (x0 called members, the x1 members called non-members); each a
   mean AUC over runs and the runs a one-sided Mann-Whitney test at 0.05 flags (k of n, Clopper-Pearson). Beside
   them the pre-check a practitioner can run (``precheck_rows``): the same pools under the base model, which saw
   neither.
5. **Harm**: each HumanEval group's pass@1 with its own tests (contaminate/harm.py), by dose over runs, and the gain
   over the same run's x0 group (paired).
6. **Harm beside detection** (``--untouched``: the untouched model's greedy outcome on every problem, as
   bench/pass_at_1.py keeps it): per dose, each score's TPR at the practitioner's threshold beside the exploitation
   gain (pass@1 of the members against the same problems under the untouched model, paired by problem, and against
   x0), and the 2x2 of members: detected by the threshold or not, exploited (passes where the untouched model
   failed) or not.
7. **Thresholds across models** (``--transfer`` another model's kept runs of the same draws; issue 69 item 4): each
   model's conformal threshold fitted on its own known non-members and applied to the other model's x0 and members,
   both directions, beside the other model's own threshold on the same runs:

    python -m contaminate.analyses.power results/power_cpu/studies --transfer results/power_gemma_cpu/studies \
        --names SmolLM2-135M-Instruct,"Gemma 3 270M"
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from omegaconf import OmegaConf
from scipy.stats import mannwhitneyu, ttest_1samp

from contaminate.calibration.statistics import (
    MIN_UNITS,
    auc_floor,
    auc_matrix,
    clopper_pearson,
    conformal_threshold,
    holm,
    rate_floor,
    share_floor,
    share_interval,
    tpr_at_fpr_matrix,
    unit_interval,
)
from contaminate.reports.calibration_regimes import FLOOR_NOTE, fraction, interval
from contaminate.shift import shift_of
from detect.detectors import labelled
from detect.errors import InputError
from detect.markdown import interval_text, table
from detect.markdown import row as markdown_row

SCORES = ("loss", "zlib", "min_k", "min_k_plus", "reference_ratio", "dc_pdd", "loss_raw", "zlib_raw", "min_k_raw",
          "min_k_plus_raw", "reference_ratio_raw")
CELLS = {"contaminated_x_members": "members", "contaminated_x_non_members": "x0",
         "contaminated_x_known_non_members": "known"}
CURVE_FPRS = (0.01, 0.05)
CONFORMAL_FPR = 0.05
TRANSFER_NOTE = ("Each model's split-conformal threshold at 5% fitted on its known non-members, applied to the other "
                 "model trained on the same member draw (each pair of runs one unit), beside that model's own "
                 "threshold on the same runs: a mean over runs of the share flagged (k of n instances pooled), a "
                 "t-interval never narrower than Clopper-Pearson on the pooled count; below three runs, no interval.")
EXPERIMENT = Path(__file__).resolve().parents[2] / "conf" / "experiment" / "power_cpu.yaml"
# The known non-members' pools: as drawn, and each arm of the rewrite (sample.known_shift, contaminate/shift.py)
ARM_POOLS = {"rewrite": "shifted", "rename": "renamed", "reword": "reworded"}
KNOWN_POOLS = ("known", *ARM_POOLS.values())
POOL_NAMES = {"known": "as drawn", "shifted": "rewritten", "renamed": "renamed alone", "reworded": "reworded alone"}


@dataclass
class PowerRun:
    """One run's scores: ``pools[dataset][pool][score]`` (pool: "x1", "x2", ... the members of each dose, "x0",
    and ``KNOWN_POOLS`` where read), its pass@1 by dataset and dose, and what it cost."""

    name: str
    seed: int
    draw: int
    pools: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)
    pass_at_1: dict[str, dict[int, dict]] = field(default_factory=dict)
    completions: dict[str, dict[int, dict[int, str]]] = field(default_factory=dict)  # dataset -> dose -> id -> text
    passed: dict[str, dict[int, dict[int, bool]]] = field(default_factory=dict)  # dataset -> dose -> id -> passed
    ids: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # dataset -> pool -> instance ids, in order
    pass_at_1_format: str = "raw"  # how its problems were asked (plant.pass_at_1_format; raw before issue 68)
    cost: dict = field(default_factory=dict)
    precision: str | None = None  # where and in what it trained: "cpu float32" (a design's runs share one)
    background: str | None = None  # the background it trained on: its digest, else its size (runs kept before 68)

    @property
    def unit(self) -> tuple[int, int]:
        return self.draw, self.seed

    def doses(self, dataset: str) -> list[int]:
        return sorted(int(p[1:]) for p in self.pools[dataset] if p.startswith("x") and p != "x0")


# --- collecting a run's scores (no checkpoint, no text) ---------------------------------------------------------------

def _rows(path: Path) -> list[dict]:
    plain, packed = path / "results.jsonl", path / "results.jsonl.gz"
    opened = plain.open() if plain.exists() else gzip.open(packed, "rt")
    with opened as lines:
        return [json.loads(line) for line in lines]


def known_shift_of(shifted_dir: Path):
    """What a shifted invocation asked: its ``sample.known_shift`` (its config.yaml: an arm, or a mapping by dataset,
    ``shift_of``); a folder without one read the whole rewrite (the only arm before issue 68)."""
    config = shifted_dir / "config.yaml"
    return OmegaConf.load(config).sample.get("known_shift") if config.exists() else "rewrite"


def collect(run_dir: Path, shifted_dirs: Sequence[Path] = ()) -> dict:
    """One planted run's kept record: each instance's scores by dataset and pool, its pass@1 by group and its cost
    (plant.json), and, where given, the shifted invocations' known non-members of the same models, each dataset's
    under the pool of the arm it read (``ARM_POOLS``; a dataset read as drawn there is not kept again)."""
    plant = json.loads((run_dir / "plant.json").read_text())
    doses = {g["name"]: g["exposures"] for g in plant["groups"]}
    rows, seen = [], set()
    for group_dir in sorted((run_dir / "groups").iterdir()):
        for row in _rows(group_dir):
            pool = CELLS.get(row["cell"])
            if pool is None or row.get("instruction") not in (None, "guided"):
                continue
            pool = f"x{doses[group_dir.name]}" if pool == "members" else pool
            key = (row["dataset"], pool, row["instance_id"])
            if key not in seen:  # x0 and the known non-members are read once and served to every group
                seen.add(key)
                rows.append({"dataset": row["dataset"], "pool": pool, "instance_id": row["instance_id"],
                             **{s: row.get(s) for s in SCORES}})
    timings = {}
    for shifted_dir in shifted_dirs:
        shifted = json.loads((shifted_dir / "plant.json").read_text())
        if shifted["groups"] and (shifted["seed"], shifted["draw"], shifted["checkpoint"]["id"]) != \
                (plant["seed"], plant["draw"], plant["checkpoint"]["id"]):
            raise InputError(f"{shifted_dir} read another model than {run_dir} (seed, draw or checkpoint differ); "
                             f"pair each run with its own shifted invocation")
        asked, taken = known_shift_of(shifted_dir), set()  # taken: this invocation's known rows (every group's)
        for group_dir in sorted((shifted_dir / "groups").iterdir()):
            for row in _rows(group_dir):
                pool = ARM_POOLS.get(shift_of(asked, row["dataset"]))
                key = (row["dataset"], pool, row["instance_id"])
                if pool is None or CELLS.get(row["cell"]) != "known" or key in taken:
                    continue
                if key in seen:  # kept from another invocation of the same arm
                    raise InputError(f"{shifted_dir}: {row['dataset']}'s {pool} pool given twice for "
                                     f"{run_dir.name}; give each arm's invocation once")
                taken.add(key)
                rows.append({"dataset": row["dataset"], "pool": pool, "instance_id": row["instance_id"],
                             **{s: row.get(s) for s in SCORES}})
        seen |= taken
        timings.update({pool: shifted.get("timings") for _, pool, _ in taken})
    record = {key: plant.get(key) for key in ("seed", "draw", "stream", "timings", "pass_at_1", "checkpoint",
                                              "background", "pass_at_1_options")}
    datasets = {row["dataset"] for row in rows}
    record["groups"] = [{**{k: g.get(k) for k in ("name", "exposures", "n", "tokens", "token_share")},
                         "dataset": group_dataset(g["name"], g["exposures"], datasets, plant["dataset"])}
                        for g in plant["groups"]]
    if "shifted" in timings:
        record["shifted_timings"] = timings["shifted"]
    if set(timings) - {"shifted"}:
        record["arm_timings"] = {pool: t for pool, t in timings.items() if pool != "shifted"}
    details = run_dir / "pass_at_1.json"  # every completion and its outcome, where pass@1 ran
    return {"run": record, "rows": rows, "pass_at_1": json.loads(details.read_text()) if details.exists() else None}


def group_dataset(name: str, exposures: int, datasets: set[str], run_dataset: str) -> str:
    """A planted group's dataset from its name (contaminate/regime/plant.py names a group of another dataset
    ``x<exposures>_<dataset>[_<format>]``; the run's own dataset's groups carry none)."""
    rest = name[len(f"x{exposures}"):].lstrip("_")
    return next((d for d in sorted(datasets, key=len, reverse=True) if rest == d or rest.startswith(d + "_")),
                run_dataset)


def _write_gz(path: Path, text: str) -> None:
    """The same bytes for the same text (mtime 0 in the header): collecting a kept run again changes no file."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
        packed.write(text.encode())


def keep(found: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(found["run"], indent=1))
    _write_gz(out / "scores.jsonl.gz", "".join(json.dumps(row) + "\n" for row in found["rows"]))
    if found.get("pass_at_1") is not None:
        _write_gz(out / "pass_at_1.json.gz", json.dumps(found["pass_at_1"]))


def load(kept: Path) -> PowerRun:
    """A kept run (``keep``) as a ``PowerRun``."""
    record = json.loads((kept / "run.json").read_text())
    with gzip.open(kept / "scores.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    run = PowerRun(kept.name, record["seed"], record["draw"], precision=precision_of(record.get("checkpoint")),
                   background=background_of(record))
    for dataset in sorted({r["dataset"] for r in rows}):
        for pool in sorted({r["pool"] for r in rows if r["dataset"] == dataset}):
            chosen = sorted((r for r in rows if r["dataset"] == dataset and r["pool"] == pool),
                            key=lambda r: r["instance_id"])
            run.pools.setdefault(dataset, {})[pool] = {
                s: np.array([r[s] for r in chosen], float) for s in SCORES if all(r.get(s) is not None for r in chosen)}
            run.ids.setdefault(dataset, {})[pool] = np.array([r["instance_id"] for r in chosen])
    groups = {g["name"]: g for g in record["groups"]}
    for name, block in ((record.get("pass_at_1") or {}).get("contaminated") or {}).items():  # the trained model's
        run.pass_at_1.setdefault(groups[name]["dataset"], {})[groups[name]["exposures"]] = block
    run.pass_at_1_format = (record.get("pass_at_1_options") or {}).get("prompt_format", "raw")
    if (kept / "pass_at_1.json.gz").exists():  # what the model wrote: read, so an artefact shows beside the rate
        with gzip.open(kept / "pass_at_1.json.gz", "rt") as f:
            details = json.load(f).get("contaminated") or {}
        for name, rows in details.items():
            run.completions.setdefault(groups[name]["dataset"], {})[groups[name]["exposures"]] = {
                int(i): row["completion"] for i, row in rows.items()}
            run.passed.setdefault(groups[name]["dataset"], {})[groups[name]["exposures"]] = {
                int(i): row["outcome"] == "passed" for i, row in rows.items()}
    timings = record.get("timings") or {}
    stream = record.get("stream") or {}
    run.cost = {"training_tokens": stream.get("training_tokens"),
                "planted_share": (stream.get("tokens") or {}).get("member", 0) / stream["training_tokens"]
                if stream.get("training_tokens") else None,
                "train_s": timings.get("train_s"), "total_s": timings.get("total_s"),
                "shifted_s": (record.get("shifted_timings") or {}).get("total_s"),
                "shares": {g["name"]: g.get("token_share") for g in record["groups"] if g["exposures"]},
                "steps": (record.get("checkpoint") or {}).get("steps")}
    return run


def precision_of(checkpoint: dict | None) -> str | None:
    """A checkpoint's device kind and weights (and autocast, where on) as one label: "cpu float32", "cuda bfloat16"."""
    placement = (checkpoint or {}).get("placement")
    if not placement:
        return None
    autocast = f", autocast {placement['autocast']}" if placement.get("autocast") else ""
    return f"{placement['device'].split(':')[0]} {placement['weights']}{autocast}"


def background_of(record: dict) -> str | None:
    """The background a run trained on, as one label: its name and the digest of its documents where plant.json
    recorded them (issue 68), else its size in the stream ("78 documents, 42,432 tokens"): runs kept before the
    digest was kept say only that."""
    described = record.get("background") or {}
    if described.get("digest"):
        return f"{described.get('name', 'background')} {described['digest'][:12]}"
    stream = record.get("stream") or {}
    documents, tokens = ((stream.get(k) or {}).get("background") for k in ("documents", "tokens"))
    return None if documents is None else f"{documents} documents, {tokens:,} tokens"


def backgrounds_note(runs: Sequence[PowerRun]) -> str | None:
    """Where a design's runs trained on more than one background (package_docs follows the installed packages'
    versions), which runs on which: flagged beside the tables, not refused (a background that differs by a document
    is another design only in that document; the reader judges)."""
    by: dict = {}
    for run in runs:
        by.setdefault(run.background, []).append(run.name)
    if len(by) < 2:
        return None
    found = "; ".join(f"{', '.join(names)}: {label or 'not recorded'}" for label, names in by.items())
    return (f"**The runs trained on more than one background** ({found}): the background follows the installed "
            f"packages' versions (background=package_docs); pin them, or use background=offline, for a design's runs "
            f"to share one.")


def one_precision(runs: Sequence[PowerRun]) -> None:
    """A design's runs are replicates of one training: runs trained at another precision are not its units
    (``runtime.dtype=auto`` takes bf16 on a CPU with AVX-512 BF16 or AMX, float32 on one without)."""
    by = {}
    for run in runs:
        by.setdefault(run.precision, []).append(run.name)
    if len(by) > 1:
        found = "; ".join(f"{', '.join(names)}: {kind or 'not recorded'}" for kind, names in by.items())
        raise InputError(f"the runs trained at more than one precision ({found}); rerun the odd ones with "
                         f"runtime.dtype set to the others' (auto takes bf16 on a CPU with AVX-512 BF16 or AMX)")


# --- statistics over runs ---------------------------------------------------------------------------------------------

def sign_flip_p(differences: Sequence[float]) -> float:
    """The exact two-sided sign-flip p of paired differences: the share of the 2^n sign patterns whose mean is at
    least as far from 0 as the observed (the observed pattern counted). 10 runs: smallest p 2/1024."""
    d = np.asarray(differences, float)
    n = len(d)
    if n == 0 or n > 20:
        raise InputError(f"an exact sign-flip test over {n} runs: use between 1 and 20")
    signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    means = np.abs(signs @ d) / n
    return float(np.mean(means >= abs(d.mean()) - 1e-12))


def _units(runs: Sequence[PowerRun], strata) -> dict:
    return {run.unit: strata(run) for run in runs if strata(run) is not None}


def _negatives(run: PowerRun, dataset: str, score: str) -> np.ndarray:
    pools = run.pools[dataset]
    return np.concatenate([pools["x0"][score], pools["known"][score]])


def auc_by_dose(runs: Sequence[PowerRun], dataset: str, score: str) -> dict:
    """Per dose: the within-model AUC of the members against x0 and the known non-members, over runs."""
    found = {}
    for dose in runs[0].doses(dataset):
        units = _units(runs, lambda r: [r.pools[dataset][f"x{dose}"][score], _negatives(r, dataset, score)])
        found[dose] = unit_interval(units, auc_matrix, floor=auc_floor)
    return found


def curve_tpr(runs: Sequence[PowerRun], dataset: str, score: str, fpr: float) -> dict:
    """Per dose: the ROC curve's TPR at ``fpr`` on the same negatives as the AUC, over runs."""
    found = {}
    for dose in runs[0].doses(dataset):
        units = _units(runs, lambda r: [r.pools[dataset][f"x{dose}"][score], _negatives(r, dataset, score)])
        found[dose] = unit_interval(units, lambda p, n: tpr_at_fpr_matrix(p, n, fpr),
                                    floor=lambda p, n: rate_floor(float(tpr_at_fpr_matrix(p[None], n[None], fpr)[0]),
                                                                  len(p)))
    return found


def conformal_refusal(thresholds: dict, fpr: float) -> dict | None:
    """``{"refused": why}`` where some run's pool is too small for a split-conformal threshold at ``fpr``, else None."""
    if all(t["guarantee"] is not None for t in thresholds.values()):
        return None
    n = min(t["n"] for t in thresholds.values())
    return {"refused": f"{n} known non-members: a split-conformal threshold at {fpr:g} needs "
                       f"{math.ceil((1 - fpr) / fpr - 1e-9)}"}


def practitioner(runs: Sequence[PowerRun], dataset: str, score: str, pool: str, fpr: float = CONFORMAL_FPR) -> dict:
    """The split-conformal threshold at ``fpr`` fitted on each model's own ``pool`` (of ``KNOWN_POOLS``): the FPR
    it realises on x0 and its TPR by dose, over runs. None where no run has the pool."""
    fitted = [r for r in runs if pool in r.pools[dataset] and score in r.pools[dataset][pool]]
    if not fitted:
        return {}
    thresholds = {r.unit: conformal_threshold(r.pools[dataset][pool][score], fpr) for r in fitted}
    refused = conformal_refusal(thresholds, fpr)
    if refused:
        return refused
    return {**flagged_at(fitted, dataset, score, thresholds), "n_fitted": min(t["n"] for t in thresholds.values()),
            "runs": len(fitted)}


def flagged_at(runs: Sequence[PowerRun], dataset: str, score: str, thresholds: dict) -> dict:
    """The share of each run's x0 (FPR) and of each dose's members (TPR) above that run's threshold (``thresholds``:
    unit -> ``conformal_threshold``'s block, fitted on whichever pool and model), over runs (and pooled: k of n)."""
    def flagged(pool: str) -> dict:
        return share_interval({r.unit: r.pools[dataset][pool][score] > thresholds[r.unit]["threshold"] for r in runs})

    return {"fpr": flagged("x0"), "tpr": {d: flagged(f"x{d}") for d in runs[0].doses(dataset)}}


def transfer(fitted_on: Sequence[PowerRun], applied_to: Sequence[PowerRun], dataset: str, score: str,
             fpr: float = CONFORMAL_FPR) -> dict:
    """Thresholds across models (issue 69 item 4): the split-conformal threshold at ``fpr`` fitted on one model's
    known non-members, applied to another model trained on the same member draw (the runs paired by unit: seed and
    draw): the FPR it realises on that model's x0 and its TPR by dose, beside that model's own threshold on the same
    units. A score whose scale follows the model (the loss) moves with it; one read against the model's own base (the
    reference ratio) may not. Empty where no unit is paired or a pool lacks the score."""
    source = {r.unit: r for r in fitted_on}
    pairs = [(source[r.unit], r) for r in applied_to if r.unit in source
             and score in source[r.unit].pools.get(dataset, {}).get("known", {})
             and score in r.pools.get(dataset, {}).get("x0", {})]
    if not pairs:
        return {}
    thresholds = {b.unit: conformal_threshold(a.pools[dataset]["known"][score], fpr) for a, b in pairs}
    refused = conformal_refusal(thresholds, fpr)
    if refused:
        return refused
    applied = [b for _, b in pairs]
    return {**flagged_at(applied, dataset, score, thresholds),
            "own": practitioner(applied, dataset, score, "known", fpr), "runs": len(pairs),
            "threshold": {"fitted": float(np.mean([t["threshold"] for t in thresholds.values()])),
                          "own": float(np.mean([conformal_threshold(b.pools[dataset]["known"][score], fpr)["threshold"]
                                                for b in applied]))}}


def transfer_table(fitted_on: Sequence[PowerRun], applied_to: Sequence[PowerRun], names: tuple[str, str]) -> list[str]:
    """Both directions of ``transfer`` for every dataset and score the two sets of runs share, one table each."""
    lines = []
    for first, second, (a, b) in ((fitted_on, applied_to, names), (applied_to, fitted_on, names[::-1])):
        for dataset in sorted(set(first[0].pools) & set(second[0].pools)):
            doses = second[0].doses(dataset)
            rows, paired = [], 0
            for score in (s for s in SCORES if s in first[0].pools[dataset].get("known", {})):
                got = transfer(first, second, dataset, score)
                if not got or "refused" in got:
                    continue
                own, paired = got["own"], got["runs"]
                rows.append([labelled(score), f"{got['threshold']['fitted']:.3f} / {got['threshold']['own']:.3f}",
                             _share(got["fpr"]), _share(own["fpr"]),
                             *(f"{_share(got['tpr'][d])} v {_share(own['tpr'][d])}" for d in doses)])
            if rows:
                lines += ["", f"### {dataset}: fitted on {a}'s known non-members, applied to {b}'s pools "
                              f"({paired} paired run{'s' * (paired != 1)})", "",
                          *table(["score", "threshold: fitted / own (mean)", f"FPR on {b}'s x0", "own FPR",
                                  *(f"TPR x{d}: fitted v own" for d in doses)], rows)]
    return lines


def contrast(runs: Sequence[PowerRun], spec: dict) -> dict:
    """One pre-registered contrast: the per-run AUC difference a - b at one dose of one dataset."""
    dataset, dose, a, b = spec["dataset"], int(spec["dose"]), spec["a"], spec["b"]
    differences = []
    for run in runs:
        pools = run.pools.get(dataset, {})
        members = pools.get(f"x{dose}", {})
        if a not in members or b not in members:
            raise InputError(f"power.contrasts: {dataset} x{dose} has no {a if a not in members else b} score in run "
                             f"{run.name}; name scores the runs read ({', '.join(sorted(members))})")
        aucs = [float(auc_matrix(members[s][None, :], _negatives(run, dataset, s)[None, :])[0]) for s in (a, b)]
        differences.append(aucs[0] - aucs[1])
    d = np.array(differences)
    found = {**spec, "n_runs": len(d), "difference": float(d.mean()), "per_run": [round(x, 4) for x in d]}
    if len(d) >= 2 and d.std(ddof=1) > 0:
        test = ttest_1samp(d, 0.0)
        half = float(test.confidence_interval().high - d.mean())
        found.update(low=float(d.mean() - half), high=float(d.mean() + half), p_t=float(test.pvalue))
    else:
        found.update(low=None, high=None, p_t=None)
    found["p_sign_flip"] = sign_flip_p(d)
    return found


def contrasts(runs: Sequence[PowerRun], specs: Sequence[dict], alpha: float) -> list[dict]:
    """The pre-registered contrasts, each test Holm-adjusted over these only."""
    found = [contrast(runs, dict(spec)) for spec in specs]
    for test in ("p_t", "p_sign_flip"):
        tested = [c for c in found if c[test] is not None]
        for c, adjusted in zip(tested, holm([c[test] for c in tested])):
            c[f"{test}_holm"] = adjusted
        for c in found:
            c.setdefault(f"{test}_holm", None)
    for c in found:
        c["told"] = all(c[f"{t}_holm"] is not None and c[f"{t}_holm"] <= alpha for t in ("p_t", "p_sign_flip"))
    return found


def aa_rows(runs: Sequence[PowerRun], dataset: str, score: str, alpha: float = 0.05) -> dict:
    """The A/A controls: two pools neither of which was trained (or the labels reversed), the AUC over runs and the
    runs whose one-sided Mann-Whitney test (the first pool higher) rejects at ``alpha``."""
    pairs = {**{f"x0 v {pool}": ("x0", pool) for pool in KNOWN_POOLS}, "reversed, x0 v x1": ("x0", "x1")}
    found = {}
    for name, (first, second) in pairs.items():
        chosen = [r for r in runs if second in r.pools[dataset] and score in r.pools[dataset][second]]
        if not chosen:
            continue
        units = {r.unit: [r.pools[dataset][first][score], r.pools[dataset][second][score]] for r in chosen}
        flagged = sum(mannwhitneyu(*units[r.unit], alternative="greater").pvalue <= alpha for r in chosen)
        found[name] = {"auc": unit_interval(units, auc_matrix, floor=auc_floor),
                       "flagged": clopper_pearson(int(flagged), len(chosen))}
    return found


def precheck_rows(runs: Sequence[PowerRun], dataset: str) -> dict:
    """The A/A pre-check a practitioner can run (detect/exchangeability.py): each known pool (as drawn, by each arm)
    against x0 under the base model, which saw neither; its bare-text loss is the run's ``loss_raw`` less its
    ``reference_ratio_raw`` (the reference model is the base model). Per pool: the AUC over runs (x0 above the
    pool), and the runs the rule warns on (two-sided Mann-Whitney p <= 0.05; k of n, Clopper-Pearson)."""
    from detect.exchangeability import departure, reference_loss, verdict

    def base(pools: dict) -> np.ndarray | None:
        if "loss_raw" not in pools or "reference_ratio_raw" not in pools:
            return None
        return reference_loss(pools["loss_raw"], pools["reference_ratio_raw"])

    found = {}
    for pool in KNOWN_POOLS:
        units = {}  # run -> [x0, the pool], the base model's loss of each
        for run in runs:
            pools = run.pools[dataset]
            read = [base(pools["x0"]), base(pools[pool]) if pool in pools else None]
            if all(r is not None for r in read):
                units[run.unit] = read
        if not units:
            continue
        warned = sum(verdict({"loss": departure(known, x0)})["warn"] for x0, known in units.values())
        # what the broken exchangeability costs before any fine-tune: the untouched model's 5% threshold fitted on
        # this pool, applied to x0
        flags = {u: x0 > conformal_threshold(known, CONFORMAL_FPR)["threshold"] for u, (x0, known) in units.items()}
        found[pool] = {"auc": unit_interval(units, auc_matrix, floor=auc_floor),
                       "warned": clopper_pearson(int(warned), len(units)), "fpr_untouched": share_interval(flags)}
    return found


def harm(runs: Sequence[PowerRun], dataset: str) -> dict:
    """pass@1 by dose over runs (a share of problems: never narrower than Clopper-Pearson on the problems pooled), and
    each dose's gain over the same run's x0 group (paired; its floor the two shares' sampling variances)."""
    chosen = [r for r in runs if dataset in r.pass_at_1]
    if not chosen:
        return {}
    doses = sorted(chosen[0].pass_at_1[dataset])

    def outcomes(run: PowerRun, dose: int) -> np.ndarray:  # one flag a problem (pass@1 keeps the count)
        block = run.pass_at_1[dataset][dose]
        return np.r_[np.ones(block["passed"]), np.zeros(block["n"] - block["passed"])]

    found = {"pass_at_1": {}, "gain": {}, "n": chosen[0].pass_at_1[dataset][doses[0]]["n"]}
    for dose in doses:
        found["pass_at_1"][dose] = share_interval({r.unit: outcomes(r, dose) for r in chosen})
        found["gain"][dose] = unit_interval({r.unit: [outcomes(r, dose), outcomes(r, 0)] for r in chosen},
                                            lambda a, b: a.mean(axis=1) - b.mean(axis=1),
                                            floor=lambda a, b: share_floor(a) + share_floor(b), bounds=(-1.0, 1.0))
    found["classes"] = completion_classes(chosen, dataset)
    return found


def completion_classes(runs: Sequence[PowerRun], dataset: str) -> dict | None:
    """What the kept completions were, over every run and dose (contaminate/harm.py ``classify``: empty, fence,
    prose, code), in the prompt format the runs asked (plant.pass_at_1_format; before issue 68 always raw)."""
    from omegaconf import OmegaConf

    from contaminate.harm import CLASSES, classify, executable_problems
    from detect.cli import CONF_DIR

    texts = [(i, text, run.pass_at_1_format) for run in runs for by_id in run.completions.get(dataset, {}).values()
             for i, text in by_id.items()]
    if not texts:
        return None
    problems = executable_problems(OmegaConf.load(CONF_DIR / "dataset" / f"{dataset}.yaml"), "test")
    found = [classify(text, problems[i].program(text, asked)) for i, text, asked in texts]
    return {"counts": {c: found.count(c) for c in CLASSES}, "n": len(found),
            "prompt_format": "/".join(sorted({asked for _, _, asked in texts}))}


def untouched_outcomes(path: Path, prompt_format: str) -> dict[int, bool]:
    """The untouched model's greedy outcome on each problem, asked in ``prompt_format``: bench/pass_at_1.py's
    completions.json.gz (format -> problem id -> its completion, outcome and class)."""
    try:
        with gzip.open(path, "rt") as f:
            kept = json.load(f)
    except (OSError, ValueError) as error:
        raise InputError(f"--untouched {path}: not bench/pass_at_1.py's completions.json.gz ({error}); run "
                         f"python bench/pass_at_1.py --model <name> --out <folder>") from None
    if prompt_format not in kept:
        raise InputError(f"--untouched {path} has the untouched model asked {', '.join(sorted(kept))}, the runs "
                         f"asked {prompt_format}; read it in the runs' format (bench/pass_at_1.py --formats)")
    return {int(i): row["outcome"] == "passed" for i, row in kept[prompt_format].items()}


def harm_beside_detection(runs: Sequence[PowerRun], dataset: str, untouched: dict[int, bool],
                          fpr: float = CONFORMAL_FPR) -> dict:
    """Per dose, over runs: each score's TPR at the split-conformal threshold fitted on the run's own known
    non-members; pass@1 of the members, its gain over the same problems under the untouched model (paired by
    problem) and over the run's x0 group; and, per score, the 2x2 of members pooled over runs: detected (above the
    threshold) or not, exploited (passes where the untouched model failed) or not. {} where no run kept outcomes."""
    chosen = [r for r in runs if r.passed.get(dataset) and "known" in r.pools[dataset]]
    if not chosen:
        return {}
    missing = sorted({i for r in chosen for by_id in r.passed[dataset].values() for i in by_id} - set(untouched))
    if missing:
        raise InputError(f"the untouched model's outcomes lack problems {missing[:5]}; read it on every problem "
                         f"(bench/pass_at_1.py without --limit)")
    doses = [d for d in chosen[0].doses(dataset) if all(d in r.passed[dataset] for r in chosen)]
    scores = [s for s in SCORES if all(s in r.pools[dataset]["known"] for r in chosen)]
    thresholds = {(r.unit, s): conformal_threshold(r.pools[dataset]["known"][s], fpr) for r in chosen for s in scores}
    refused = conformal_refusal(thresholds, fpr)
    if refused:
        return refused

    def members(run: PowerRun, dose: int) -> tuple[np.ndarray, np.ndarray]:  # passed, the untouched model's
        ids = run.ids[dataset][f"x{dose}"]
        return (np.array([run.passed[dataset][dose][int(i)] for i in ids], float),
                np.array([untouched[int(i)] for i in ids], float))

    found = {"doses": {}, "scores": scores, "fpr": fpr, "runs": len(chosen),
             "untouched": {"passed": int(sum(untouched.values())), "n": len(untouched)}}
    x0 = {r.unit: np.array(list(r.passed[dataset][0].values()), float) for r in chosen if 0 in r.passed[dataset]}
    for dose in doses:
        rows = {r.unit: members(r, dose) for r in chosen}
        exploited = np.concatenate([(passed == 1) & (before == 0) for passed, before in rows.values()])
        block = {"pass_at_1": share_interval({u: passed for u, (passed, _) in rows.items()}),
                 "gain_untouched": unit_interval({u: [passed, before] for u, (passed, before) in rows.items()},
                                                 lambda a, b: a.mean(axis=1) - b.mean(axis=1),
                                                 # the discordant share's variance: a floor under the paired one's
                                                 floor=lambda a, b: rate_floor(float(np.mean(a != b)), a.size),
                                                 bounds=(-1.0, 1.0)),
                 "tpr": {}, "table": {}}
        if len(x0) == len(rows):
            block["gain_x0"] = unit_interval({u: [rows[u][0], x0[u]] for u in rows},
                                             lambda a, b: a.mean(axis=1) - b.mean(axis=1),
                                             floor=lambda a, b: share_floor(a) + share_floor(b), bounds=(-1.0, 1.0))
        for s in scores:
            detected = {r.unit: r.pools[dataset][f"x{dose}"][s] > thresholds[(r.unit, s)]["threshold"] for r in chosen}
            block["tpr"][s] = share_interval(detected)
            flagged = np.concatenate([detected[u] for u in rows])  # the members in the order ``exploited`` holds
            block["table"][s] = {"detected_exploited": int((flagged & exploited).sum()),
                                 "detected_only": int((flagged & ~exploited).sum()),
                                 "exploited_only": int((~flagged & exploited).sum()),
                                 "neither": int((~flagged & ~exploited).sum())}
        found["doses"][dose] = block
    return found


def contrasts_of(experiment: Path = EXPERIMENT) -> tuple[list[dict], float]:
    """The pre-registered contrasts and their alpha, as the experiment's config wrote them before the first run (or the
    experiment it extends: power_gemma_cpu's are power_cpu's, through its defaults list)."""
    loaded = OmegaConf.load(experiment)
    cfg = loaded.get("power")
    if not cfg or not cfg.get("contrasts"):
        extended = [experiment.parent / f"{e}.yaml" for e in (loaded.get("defaults") or [])
                    if isinstance(e, str) and e != "_self_"]
        if extended and extended[0].is_file():
            return contrasts_of(extended[0])
        raise InputError(f"{experiment} has no power.contrasts; write the primary contrasts into the experiment's "
                         f"config before running it")
    return [dict(c) for c in OmegaConf.to_container(cfg.contrasts)], float(cfg.get("alpha", 0.05))


def analyse(runs: Sequence[PowerRun], specs: Sequence[dict], alpha: float,
            untouched: dict[str, dict[int, bool]] | None = None) -> dict:
    if not runs:
        raise InputError("no run kept: collect the design's runs first (python -m contaminate.analyses.power RUNS "
                         "--collect --out KEPT)")
    one_precision(runs)
    datasets = sorted(runs[0].pools)
    found = {"runs": [r.name for r in runs], "n_runs": len(runs), "datasets": {}, "alpha": alpha,
             "contrasts": contrasts(runs, specs, alpha), "cost": {r.name: r.cost for r in runs},
             "backgrounds": backgrounds_note(runs)}
    for dataset in datasets:
        scores = [s for s in SCORES if all(s in r.pools[dataset]["x0"] for r in runs)]
        found["datasets"][dataset] = {
            "doses": runs[0].doses(dataset),
            "members": len(runs[0].pools[dataset][f"x{runs[0].doses(dataset)[0]}"][scores[0]]),
            "x0": len(runs[0].pools[dataset]["x0"][scores[0]]),
            "known": len(runs[0].pools[dataset]["known"][scores[0]]),
            "auc": {s: auc_by_dose(runs, dataset, s) for s in scores},
            "curve": {f"{fpr:g}": {s: curve_tpr(runs, dataset, s, fpr) for s in scores} for fpr in CURVE_FPRS},
            "practitioner": {pool: {s: practitioner(runs, dataset, s, pool) for s in scores}
                             for pool in KNOWN_POOLS if any(pool in r.pools[dataset] for r in runs)},
            "aa": {s: aa_rows(runs, dataset, s) for s in scores},
            "precheck": precheck_rows(runs, dataset),
            "harm": harm(runs, dataset)}
        if (untouched or {}).get(dataset) is not None:
            found["datasets"][dataset]["harm_detection"] = harm_beside_detection(runs, dataset, untouched[dataset])
    return found


# --- tables -----------------------------------------------------------------------------------------------------------

def _share(block: dict) -> str:
    return f"{interval(block)} ({block['k']}/{block['n']})"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def harm_table(h: dict | None) -> list[str]:
    """pass@1 by dose, its gain over x0, the problems passed and what the completions were (``harm``), or nothing."""
    if not h:
        return []
    lines: list[str] = []
    lines += ["", f"### Harm: pass@1 on each dose's {h['n']} problems (their own tests), and the gain over the "
                  f"run's x0 group", "", *table(["", *(f"x{d}" for d in sorted(h['pass_at_1']))]),
              markdown_row(["pass@1", *(interval(h["pass_at_1"][d], 3) for d in sorted(h["pass_at_1"]))]),
              markdown_row(["gain over x0", *(interval(h["gain"][d], 3) for d in sorted(h["gain"]))]),
              markdown_row(["problems passed, all runs", *(f"{h['pass_at_1'][d]['k']}/{h['pass_at_1'][d]['n']}"
                                                            for d in sorted(h["pass_at_1"]))])]
    if h.get("classes"):
        counts = h["classes"]["counts"]
        asked = h["classes"]["prompt_format"]
        lines += ["", f"What the {h['classes']['n']} completions were (contaminate/harm.py `classify`; asked "
                  f"{asked}{', the prompt with its trailing newline' if asked == 'raw' else ''}): "
                  + ", ".join(f"{k} {v}" for k, v in counts.items())
                  + ". Where most are empty or a markdown fence, pass@1 measures the prompt format, not the "
                  "model: results/pass_at_1_untouched reads the untouched model in each format."]
    return lines


def harm_detection_table(h: dict | None) -> list[str]:
    """``harm_beside_detection`` as two tables: per dose the gains beside each score's TPR, then the 2x2s."""
    if not h:
        return []
    if "refused" in h:
        return ["", f"### Harm beside detection: refused: {h['refused']}"]
    doses, scores = sorted(h["doses"]), h["scores"]
    untouched = h["untouched"]
    lines = ["", f"### Harm beside detection: each dose's members under the practitioner's {h['fpr']:.0%} threshold "
                 f"(split conformal on the run's own known non-members) and what the leak bought them", "",
             f"Over {h['runs']} runs. The untouched model passes {untouched['passed']}/{untouched['n']} problems "
             f"(greedy, the runs' prompt format); a member is exploited where it passes and the untouched model "
             f"failed it. Gains: pass@1 minus the untouched model's on the same problems (paired by problem), and "
             f"minus the run's x0 group's; mean over runs, t-interval (floored).", "",
             *table(["dose", "pass@1", "gain over the untouched model", "gain over x0",
                     *(f"TPR {labelled(s)}" for s in scores)])]
    for d in doses:
        block = h["doses"][d]
        lines.append(markdown_row([f"x{d}", _share(block["pass_at_1"]), interval(block["gain_untouched"], 3),
                                   interval(block["gain_x0"], 3) if "gain_x0" in block else "-",
                                   *(_share(block["tpr"][s]) for s in scores)]))
    lines += ["", "The members pooled over runs: detected by the threshold or not, exploited or not.", "",
              *table(["score", "dose", "detected, exploited", "detected, not exploited", "exploited, not detected",
                      "neither"])]
    for s in scores:
        for d in doses:
            t = h["doses"][d]["table"][s]
            lines.append(markdown_row([labelled(s), f"x{d}", t["detected_exploited"], t["detected_only"],
                                       t["exploited_only"], t["neither"]]))
    return lines


def precheck_table(rows: dict | None) -> list[str]:
    """The A/A pre-check's rows (``precheck_rows``), or nothing."""
    if not rows:
        return []
    return ["", "### The A/A pre-check a practitioner can run: each known pool against x0 under the base model, which "
                "saw neither (bare-text loss; detect/exchangeability.py: warn at a two-sided Mann-Whitney p <= 0.05)",
            "", *table(["known pool", "AUC, x0 above the pool", "runs warned [Clopper-Pearson]",
                        f"the untouched model's {CONFORMAL_FPR:.0%} threshold on the pool: FPR on x0"]),
            *(markdown_row([POOL_NAMES[pool], interval(row["auc"]), fraction(row["warned"]),
                            _share(row["fpr_untouched"])]) for pool, row in rows.items())]


def report(found: dict) -> str:
    n = found["n_runs"]
    lines = [f"Power profile: {n} independent run{'s' * (n != 1)} ({', '.join(found['runs'])}), each one "
             f"model trained on its own member draw; intervals are 95% over the runs: Student's t, or the normal "
             f"floor of the instance-level variance where that is wider (marked). {FLOOR_NOTE}", ""]
    if n < MIN_UNITS:  # a design read before its runs are in: what fewer can tell (no interval, no told contrast)
        lines += [f"**{n} run{'s' * (n != 1)}, fewer than {MIN_UNITS}: every number below is an estimate over "
                  f"{'that one model' if n == 1 else 'these models'}, with no interval over runs and no contrast "
                  f"told; the design's runs are still to come.**", ""]
    if found.get("backgrounds"):
        lines += [found["backgrounds"], ""]
    lines += ["## Pre-registered contrasts", "",
              f"Each a paired AUC difference (a - b) over {n} runs, two-sided; Holm over these "
              f"{len(found['contrasts'])} only (alpha {found['alpha']:g}). Told: both tests survive Holm.", "",
              *table(["dataset", "dose", "a", "b", "a - b [95% CI]", "paired t p", "Holm", "sign-flip p", "Holm",
                      "told"])]
    for c in found["contrasts"]:
        ci = (f"{c['difference']:+.3f}" if c["low"] is None
              else interval_text(c["difference"], c["low"], c["high"], "+.3f"))
        lines.append(markdown_row([c["dataset"], f"x{c['dose']}", labelled(c["a"]), labelled(c["b"]), ci,
                                   _p(c["p_t"]), _p(c["p_t_holm"]), _p(c["p_sign_flip"]), _p(c["p_sign_flip_holm"]),
                                   "yes" if c["told"] else "no"]))
    for dataset, block in found["datasets"].items():
        doses = block["doses"]
        negatives = f"x0 ({block['x0']}) and the known non-members ({block['known']})"
        lines += ["", f"## {dataset}", "", "The reference ratio reads the base model (the model before the fine-tune "
                  "that leaked: a practitioner has it for a fine-tune of an open base); a score on the leak's "
                  "rendering reads the leak's exact format (an oracle); `_raw`, the bare text.", "",
                  f"### Within-model AUC by dose: {block['members']} members a dose against {negatives}", "",
                  *table(["score", *(f"x{d}" for d in doses)])]
        lines += [markdown_row([labelled(s), *(interval(block["auc"][s][d]) for d in doses)]) for s in block["auc"]]
        for fpr, scored in block["curve"].items():
            count = block["x0"] + block["known"]
            above = int(math.floor(float(fpr) * count + 1e-9))
            lines += ["", f"### The curve's TPR at {float(fpr):.0%} FPR (negatives: {negatives}; the threshold at "
                      f"their own quantile, not a practitioner's: at most {above} of the {count} negatives above it, "
                      f"so a realised FPR of {above / count:.3f} on them and about {(above + 1) / (count + 1):.3f} "
                      f"expected on a new one)", "", *table(["score", *(f"x{d}" for d in doses)])]
            lines += [markdown_row([labelled(s), *(interval(scored[s][d]) for d in doses)]) for s in scored]
        lines += ["", f"### The practitioner's threshold: split conformal at {CONFORMAL_FPR:.0%} on the model's own "
                      f"known non-members, as drawn and as each arm rewrote them (contaminate/shift.py)", "",
                  f"At 1% a split-conformal threshold needs 99 known non-members; the runs have {block['known']}.", "",
                  "Each a mean over runs of the share flagged (k of n instances pooled over the runs): a t-interval "
                  "never narrower than Clopper-Pearson on the pooled count.", "",
                  *table(["score", "pool", "FPR on x0", *(f"TPR x{d}" for d in doses)])]
        for s in block["auc"]:
            for pool in block["practitioner"]:
                got = block["practitioner"][pool][s]
                if not got:
                    continue
                if "refused" in got:
                    lines.append(markdown_row([labelled(s), pool, got["refused"], *["-"] * len(doses)]))
                    continue
                lines.append(markdown_row([labelled(s), pool, _share(got["fpr"]),
                                           *(_share(got["tpr"][d]) for d in doses)]))
        lines += ["", "### A/A rows: pools neither trained (or the labels reversed)", "",
                  "AUC of the first pool against the second, and the runs whose one-sided Mann-Whitney test (the first "
                  "higher) rejects at 0.05; exchangeable pools: about 5% of runs.", "",
                  *table(["score", *(f"{name}: {what}" for name in next(iter(block['aa'].values()))
                                     for what in ("AUC", "runs flagged"))])]
        for s, rows in block["aa"].items():
            lines.append(markdown_row([labelled(s), *(text for r in rows.values()
                                                      for text in (interval(r["auc"]), fraction(r["flagged"])))]))
        lines += precheck_table(block.get("precheck"))
        lines += harm_table(block["harm"])
        lines += harm_detection_table(block.get("harm_detection"))
    lines += ["", "## Cost", "", *table(["run", "training tokens", "planted share", "steps", "train s",
                                         "planted run s", "shifted pool s"])]
    for name, cost in found["cost"].items():
        share = "-" if cost.get("planted_share") is None else f"{cost['planted_share']:.1%}"
        lines.append(markdown_row([name, f"{cost['training_tokens']:,}", share, cost["steps"], cost["train_s"],
                                   cost["total_s"], cost["shifted_s"] if cost["shifted_s"] is not None else "-"]))
    return "\n".join(lines) + "\n"


def status(runs: Sequence[PowerRun]) -> str:
    """The kept runs, one line each (what a profile in progress can say before its design is complete): the run's
    unit, where and in what it trained, its stream, its cost and HumanEval's pass@1 by dose; no interval and no
    comparison."""
    doses = sorted({d for r in runs for blocks in r.pass_at_1.values() for d in blocks})
    lines = [f"{len(runs)} run{'s' * (len(runs) != 1)} kept:", "",
             *table(["run", "draw", "seed", "trained in", "background", "training tokens", "planted share",
                     "train s", "planted run s", "shifted pool s", "shifted pool", *(f"pass@1 x{d}" for d in doses)])]
    for r in runs:
        c = r.cost
        shifted = ", ".join(a for a, pool in ARM_POOLS.items() if any(pool in pools for pools in r.pools.values())) \
            or "-"
        passed = next(iter(r.pass_at_1.values()), {})
        lines.append(markdown_row([r.name, r.draw, r.seed, r.precision or "-", r.background or "-",
                                   f"{c['training_tokens']:,}", f"{c['planted_share']:.1%}", c["train_s"], c["total_s"],
                                   c["shifted_s"] if c["shifted_s"] is not None else "-", shifted,
                                   *(f"{passed[d]['passed']}/{passed[d]['n']}" if d in passed else "-"
                                     for d in doses)]))
    note = backgrounds_note(runs)
    return "\n".join(lines + ([] if note is None else ["", note])) + "\n"


PLOTTED = ("loss_raw", "min_k_plus_raw", "reference_ratio_raw", "min_k_plus")  # bare text, and one oracle reading


def plot(found: dict, path: Path, scores: Sequence[str] = PLOTTED) -> None:
    """The profile in one figure: a panel per dataset of the within-model AUC by dose (95% t-intervals over runs),
    and a panel of the FPR the practitioner's 5% threshold realises on x0, fitted on the known non-members as drawn
    and as rewritten (a bar per score and pool, its interval over runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from contaminate.reports.calibration_regimes import error_bars

    datasets = list(found["datasets"])
    figure, axes = plt.subplots(1, len(datasets) + 1, figsize=(4.2 * (len(datasets) + 1), 3.8))
    for axis, dataset in zip(axes, datasets):
        block = found["datasets"][dataset]
        for k, score in enumerate(s for s in scores if s in block["auc"]):
            points = [(d * (1 + 0.04 * (k - 1.5)), block["auc"][score][d]) for d in block["doses"]]
            axis.errorbar([d for d, _ in points], [a["estimate"] for _, a in points],
                          yerr=error_bars([(a["estimate"], a["low"], a["high"]) for _, a in points]),
                          marker="o", markersize=3, capsize=2, label=labelled(score))
        axis.axhline(0.5, color="grey", linestyle=":", linewidth=1)
        axis.set_xscale("log")
        axis.set_xticks(block["doses"], [f"x{d}" for d in block["doses"]])
        axis.minorticks_off()
        axis.set(ylim=(0.4, 1.02), xlabel="copies in the training stream",
                 ylabel=f"AUC within model ({found['n_runs']} runs)")
        axis.set_title(f"{dataset}\n{block['members']} members a dose v {block['x0'] + block['known']} never trained",
                       fontsize=9)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6, loc="upper left")
    axis = axes[-1]
    bars = [(dataset, score) for dataset in datasets for score in scores  # where both pools fitted a threshold
            if all(found["datasets"][dataset]["practitioner"].get(pool, {}).get(score, {}).get("fpr")
                   for pool in ("known", "shifted"))]
    for offset, pool, colour in ((-0.2, "known", "tab:blue"), (0.2, "shifted", "tab:red")):
        got = [found["datasets"][d]["practitioner"][pool][s]["fpr"] for d, s in bars]
        axis.bar([i + offset for i in range(len(bars))], [g["estimate"] for g in got], width=0.4, color=colour,
                 yerr=error_bars([(g["estimate"], g["low"], g["high"]) for g in got]), capsize=2,
                 label=f"fitted on the known non-members{' rewritten' if pool == 'shifted' else ''}")
    axis.axhline(CONFORMAL_FPR, color="black", linestyle="--", linewidth=1, label=f"the bound, {CONFORMAL_FPR:g}")
    axis.set_xticks(range(len(bars)), [f"{d}\n{s}" for d, s in bars], fontsize=6, rotation=60)
    axis.set(ylabel="FPR on the never-planted x0", ylim=(0, 1))
    known = found["datasets"][datasets[0]]["known"]
    axis.set_title(f"the practitioner's {CONFORMAL_FPR:.0%} threshold\n(split conformal on {known} known non-members)",
                   fontsize=9)
    axis.legend(fontsize=6, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _json_default(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(type(value))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m contaminate.analyses.power", description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="kept runs (--out of --collect), one folder a run")
    parser.add_argument("--collect", action="store_true", help="read planted run folders (FOLDER/s*) and keep them")
    parser.add_argument("--shifted", type=Path, nargs="+", default=[], help="with --collect: the shifted invocations' "
                        "folders (same run names), one an arm (each run's config.yaml says which)")
    parser.add_argument("--out", type=Path, help="with --collect: where the kept runs go")
    parser.add_argument("--experiment", type=Path, default=EXPERIMENT, help="the config holding power.contrasts")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument("--plot", type=Path, help="also draw the AUC by dose and the threshold's FPR here (.png)")
    parser.add_argument("--status", action="store_true", help="only the kept runs, one line each (any number)")
    parser.add_argument("--transfer", type=Path, help="another model's kept runs of the same draws: only the "
                        "thresholds across models, fitted on each model's known non-members and applied to the other's")
    parser.add_argument("--names", default="this model,the other model", help="with --transfer: the two models' "
                        "names, comma-separated (FOLDER's first)")
    parser.add_argument("--untouched", type=Path, help="HumanEval's outcomes under the untouched model "
                        "(bench/pass_at_1.py's completions.json.gz): harm beside detection, per member")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        raise SystemExit(f"error: {args.folder} is not a folder; give the runs' folder")
    if args.collect:
        if args.out is None:
            raise SystemExit("error: --collect needs --out (where the kept runs go)")
        for run_dir in sorted(p for p in args.folder.iterdir() if (p / "plant.json").exists()):
            shifted = []
            for folder in args.shifted:
                if (folder / run_dir.name / "plant.json").exists():
                    shifted.append(folder / run_dir.name)
                else:
                    print(f"{run_dir.name}: no shifted invocation in {folder}; kept without its pool", file=sys.stderr)
            if (args.out / run_dir.name).exists():
                shutil.rmtree(args.out / run_dir.name)
            keep(collect(run_dir, shifted), args.out / run_dir.name)
            print(f"kept {run_dir.name} -> {args.out / run_dir.name}", file=sys.stderr)
        return
    try:
        runs = [load(p) for p in sorted(args.folder.iterdir(), key=lambda p: p.name) if (p / "run.json").exists()]
        if args.status:
            print(status(runs), end="")
            return
        if args.transfer:
            other = [load(p) for p in sorted(args.transfer.iterdir(), key=lambda p: p.name)
                     if (p / "run.json").exists()]
            names = tuple(n.strip() for n in args.names.split(","))
            if len(names) != 2:
                raise InputError(f"--names {args.names}: give the two models' names, comma-separated")
            lines = transfer_table(runs, other, names)
            if not lines:
                raise InputError(f"{args.folder} and {args.transfer} share no run of the same seed and draw; "
                                 f"thresholds across models pair each model's run of one member draw")
            print("\n".join(["## Thresholds across models", "", TRANSFER_NOTE, *lines, "", FLOOR_NOTE]))
            return
        specs, alpha = contrasts_of(args.experiment)
        untouched = None
        if args.untouched:
            asked = {r.pass_at_1_format for r in runs if r.passed}
            if len(asked) > 1:
                raise InputError(f"the runs asked HumanEval in {', '.join(sorted(asked))}; harm beside detection "
                                 f"reads runs of one prompt format")
            untouched = {"humaneval": untouched_outcomes(args.untouched, next(iter(asked), "raw"))}
        found = analyse(runs, specs, alpha, untouched)
    except InputError as error:
        raise SystemExit(f"error: {error}") from None
    if args.json:
        args.json.write_text(json.dumps(found, indent=1, default=_json_default))
    if args.plot:
        plot(found, args.plot)
    print(report(found), end="")


if __name__ == "__main__":
    main()
