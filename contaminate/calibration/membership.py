"""Membership within each model, held-out thresholds and per-model rates: the numbers a reviewer can accept.

    block = regime_units(instances, cells, budget=0.05, seed=0)        # one regime's, JSON-ready

Every number here follows method section 9:

- A model is one (member draw, training seed) pair; the independent unit is its draw. Intervals are ``unit_interval``'s
  (a t-interval over draws, a draw's models averaged first; none below 3 draws) or, for a rate over models,
  Clopper-Pearson; each block says how many draws and models it rests on.
- ``membership``: per dose and instance score, each contaminated model's members against its own non-members
  (same split, same distribution, same model): AUC and TPR at 1% and 0.1% FPR, averaged over models. With n
  non-members per model an FPR below 1/n flags none of them (10 non-members: TPR at 1% = at 0.1% = above the top
  non-member).
- ``thresholds``: each detector's threshold fitted on the other draws' (or, with one draw, the other seeds')
  clean scores by the split-conformal rule (``conformal_threshold``: FPR <= budget in expectation for exchangeable
  clean scores) and scored on the held-out models: their members (TPR) and their own non-members (FPR). Two
  variants, both fitted on other models (the practitioner's setting, the suspect model's own known non-members, is
  ``recipe.py``'s): ``other_models`` fits on clean models' cells and the other split, ``oracle`` adds the other
  contaminated models' non-members. At the instance level for instance scores, at the cell level (the statistic of
  a whole n_detect-instance cell) for every detector.
- ``verdicts``: each partition-level verdict as the studies ran it, per model: the member cells flagged (TPR) and
  each kind of clean cell flagged (FPR), k of n with exact intervals; never a sample pooled across models.
- ``calibrated``: Platt scaling of each instance score on planted examples (members vs non-members of other
  models), scored on held-out models by Brier score: the form a user carries to another dataset.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from contaminate.calibration.statistics import (
    Unit,
    auc_floor,
    auc_matrix,
    brier,
    clopper_pearson,
    conformal_threshold,
    paired_comparisons,
    platt,
    rate_floor,
    share_interval,
    tpr_at_fpr_matrix,
    unit_interval,
    units_text,
)

MEMBERS, NON_MEMBERS = "contaminated_x_members", "contaminated_x_non_members"
MEMBERSHIP_FPR = (0.01, 0.001)   # TPR at these FPRs within a model (MIMIR's and the MIA literature's points)
# Thresholds fitted on OTHER models' negatives (variants: a practitioner fits on the suspect model's own known
# non-members, recipe.py): other_models reads what needs no ground truth (clean models' cells, the other split under
# its own name), oracle adds the other contaminated models' non-members
SETTINGS = {"other_models": {"other_split", "clean_model"},
            "oracle": {"other_split", "clean_model", "non_member"}}


@dataclass
class Scored:
    """One observation a detector scored, at the instance or the cell level, with its role for calibration."""
    unit: Unit
    dose: float | None
    role: str                   # member | non_member (within the contaminated model) | other_split | clean_model
    observation: str            # equal for the same computation (a clean-model cell shared by doses)
    values: dict[str, float]
    model: str = ""             # with the unit, which model: the study's condition (its dose, hyperparameters...)


def role_of(cell: str, positive: bool, checkpoint: str, dose: float | None) -> str:
    """What an observation is for calibration. An exposures-0 study's "contaminated" model is its control: a clean
    model."""
    if positive:
        return "member"
    if checkpoint == "clean" or dose == 0:
        return "clean_model"
    return "non_member" if cell == NON_MEMBERS else "other_split" if cell.endswith("other_split") else "clean_model"


def distinct(observations: Sequence[Scored]) -> list[Scored]:
    return list({o.observation: o for o in observations}.values())


def folds_of(units: Sequence[Unit]) -> tuple[str, list[list[Unit]]]:
    """Leave-one-draw-out where there are two or more draws (models of one draw share their members' texts), else
    leave-one-seed-out."""
    units = sorted(set(units))
    draws = sorted({d for d, _ in units})
    if len(draws) >= 2:
        return "draw", [[u for u in units if u[0] == d] for d in draws]
    return "seed", [[u] for u in units]


def _doses(observations: Sequence[Scored]) -> list:
    return sorted({o.dose for o in observations if o.role == "member"}, key=lambda d: (d is None, d or 0))


def _dose_key(dose) -> str:
    return "-" if dose is None else f"{dose:g}"


def pairs_mean(statistic):
    """A per-unit statistic over several models of one unit (strata: members, non-members, members, ...): the mean
    of ``statistic`` over the unit's models, each on its own members and non-members."""
    return lambda *strata: np.mean([statistic(strata[k], strata[k + 1]) for k in range(0, len(strata), 2)], axis=0)


def pairs_floor(floor):
    """The instance-level variance of ``pairs_mean``: the pairs' own variances, averaged as the mean of independent
    estimates (sum / pairs^2)."""
    return lambda *strata: sum(floor(strata[k], strata[k + 1]) for k in range(0, len(strata), 2)) / \
        (len(strata) // 2) ** 2


def membership(instances: Sequence[Scored], *, pooled: bool = False, seed: int = 0, n_resamples: int = 2000) -> dict:
    """Per dose (``pooled``: every dose together, key "-"), per score: each model's members against its own
    non-members, averaged over a unit's models (one per dose and condition), summarised over units."""
    within = [o for o in instances if o.role in ("member", "non_member")]
    groups = {"-": within} if pooled else {_dose_key(d): [o for o in within if o.dose == d] for d in _doses(within)}
    found = {}
    for key, chosen in groups.items():
        models: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))  # unit -> model -> role -> obs
        for o in chosen:
            models[o.unit][f"{o.model}|{o.dose}"][o.role].append(o)
        units = {u: {m: roles for m, roles in by_model.items() if roles["member"] and roles["non_member"]}
                 for u, by_model in models.items()}
        units = {u: by_model for u, by_model in units.items() if by_model}
        if not units:
            continue
        names = sorted(set.intersection(*(set(o.values) for o in chosen)))
        block = {}
        for name in names:
            data = {u: [np.array([o.values[name] for o in roles[role]]) for roles in by_model.values()
                        for role in ("member", "non_member")] for u, by_model in units.items()}
            block[name] = {"auc": unit_interval(data, pairs_mean(auc_matrix), floor=pairs_floor(auc_floor)),
                           **{f"tpr_at_{fpr:g}": unit_interval(
                               data, pairs_mean(lambda p, n, fpr=fpr: tpr_at_fpr_matrix(p, n, fpr)),
                               floor=pairs_floor(lambda p, n, fpr=fpr: rate_floor(
                                   float(tpr_at_fpr_matrix(p[None, :], n[None, :], fpr)[0]), len(p))))
                               for fpr in MEMBERSHIP_FPR}}
        every = [roles for by_model in units.values() for roles in by_model.values()]
        found[key] = {"unit": units_text(list(units)), "n_units": len({d for d, _ in units}), "n_models": len(every),
                      # which scores differ, over the draws: paired t-tests, Holm-corrected (the only ranking claimed)
                      "comparisons": paired_comparisons({name: b["auc"]["per_draw"] for name, b in block.items()}),
                      "members_per_model": sorted({len(r["member"]) for r in every}),
                      "non_members_per_model": sorted({len(r["non_member"]) for r in every}), "scores": block}
    return found


def held_out(observations: Sequence[Scored], names: Sequence[str], *, level: str, budget: float,
             seed: int = 0) -> dict:
    """Per detector and setting: thresholds fitted on the other folds' clean observations (split conformal at
    ``budget``), applied to each held-out model's members and non-members, per dose."""
    kind, folds = folds_of([o.unit for o in observations])
    found = {"folds": kind, "n_folds": len(folds), "budget": budget, "level": level, "detectors": {}}
    if len(folds) < 2:
        return found
    for name in names:
        chosen = [o for o in observations if name in o.values]
        block = {}
        for setting, roles in SETTINGS.items():
            flags: dict = defaultdict(lambda: defaultdict(list))   # (dose, unit, model) -> role -> flags
            fitted = []
            for fold in folds:
                fit = [o.values[name] for o in distinct([o for o in chosen if o.unit not in fold and o.role in roles])]
                threshold = conformal_threshold(fit, budget)
                fitted.append(threshold)
                for o in chosen:
                    if o.unit in fold and o.role in ("member", "non_member"):
                        flags[(o.dose, o.unit, o.model)][o.role].append(o.values[name] > threshold["threshold"])
            block[setting] = {"fitted_on": [t["n"] for t in fitted],
                              "unflaggable_folds": sum(t["guarantee"] is None for t in fitted),
                              "by_dose": _held_out_rates(flags, level=level, seed=seed)}
        found["detectors"][name] = block
    return found


def _held_out_rates(flags: dict, *, level: str, seed: int) -> dict:
    """TPR on the held-out members and FPR on their own non-members, per dose: at the cell level k of n models
    (Clopper-Pearson; one member and one non-member cell per model), at the instance level the mean over units of
    the share flagged (t-interval over draws)."""
    by_dose: dict = defaultdict(dict)
    for (dose, unit, model), roles in flags.items():
        by_dose[dose][(unit, model)] = roles
    found = {}
    for dose, models in sorted(by_dose.items(), key=lambda item: (item[0] is None, item[0] or 0)):
        block = {}
        for role, rate in (("member", "tpr"), ("non_member", "fpr")):
            chosen = {key: np.array(r[role], float) for key, r in models.items() if r.get(role)}
            if level == "cell":
                block[rate] = over_draws([(unit, bool(v.any())) for (unit, _), v in chosen.items()])
            else:
                per_unit: dict[Unit, list] = defaultdict(list)
                for (unit, _), values in chosen.items():
                    per_unit[unit].append(values)
                block[rate] = share_interval({u: np.concatenate(v) for u, v in per_unit.items()})
        block["unit"] = units_text([unit for unit, _ in models])
        found[_dose_key(dose)] = block
    return found


def over_draws(flags: Sequence[tuple[Unit, bool]]) -> dict:
    """k of n models flagged, with an interval over their member draws: exact (Clopper-Pearson) where each draw holds
    one model, else a t-interval over the draws' shares (a draw's models share their members: not independent)."""
    k, n = sum(flag for _, flag in flags), len(flags)
    units = [unit for unit, _ in flags]
    if len({d for d, _ in units}) == n:
        return {**clopper_pearson(k, n), "unit": units_text(units)}
    by_unit: dict[Unit, list[float]] = defaultdict(list)
    for unit, flag in flags:
        by_unit[unit].append(float(flag))
    block = unit_interval({u: [np.array(v)] for u, v in by_unit.items()}, lambda x: x.mean(axis=1))
    return {"rate": k / n, "k": int(k), "n": n, "low": block["low"], "high": block["high"], "unit": block["unit"],
            "interval": block["interval"]}


def model_of(observation: str) -> str:
    """The model an observation was read from (its first element: the checkpoint and the detector's settings)."""
    try:
        return json.dumps(json.loads(observation)[0])
    except (ValueError, TypeError, IndexError, KeyError):
        return observation


def verdict_rates(cells: Sequence[Scored], verdicts: dict[str, dict[str, bool]]) -> dict:
    """Each verdict as the studies ran it, per model: per dose, the member cells flagged (TPR) and the non-member
    cells flagged (FPR within the model), k of n models; the clean models' and other-split cells over all doses."""
    found = {}
    for name in sorted({v for flags in verdicts.values() for v in flags}):
        chosen = [c for c in cells if name in verdicts[c.observation]]
        flagged = {c.observation: verdicts[c.observation][name] for c in chosen}
        by_dose = {}
        for dose in _doses(chosen):
            at = [c for c in chosen if c.dose == dose]
            members = [c for c in at if c.role == "member"]
            non = [c for c in at if c.role == "non_member"]
            by_dose[_dose_key(dose)] = {"tpr": over_draws([(c.unit, flagged[c.observation]) for c in members]),
                                        "fpr": over_draws([(c.unit, flagged[c.observation]) for c in non]),
                                        "unit": units_text([c.unit for c in members])}
        clean = {}
        for role in ("other_split", "non_member"):
            seen = distinct([c for c in chosen if c.role == role])
            clean[role] = over_draws([(c.unit, flagged[c.observation]) for c in seen])
        # a clean model counts once however many cells of it the studies read: flagged where any of them is
        models: dict[str, list[bool]] = defaultdict(list)
        for c in distinct([c for c in chosen if c.role == "clean_model"]):
            models[model_of(c.observation)].append(flagged[c.observation])
        clean["clean_model"] = {**clopper_pearson(sum(any(v) for v in models.values()), len(models)),
                                "cells": {"k": sum(sum(v) for v in models.values()),
                                          "n": sum(len(v) for v in models.values())}}
        found[name] = {"by_dose": by_dose, "fpr_by_role": clean}
    return found


def calibrated_scores(instances: Sequence[Scored], names: Sequence[str]) -> dict:
    """Platt scaling per instance score, fitted on planted examples (members vs their models' non-members) of the
    other folds and scored on the held-out models: Brier score (0.25 is a constant 0.5) and the mean probability
    given to members and to non-members."""
    within = [o for o in instances if o.role in ("member", "non_member")]
    kind, folds = folds_of([o.unit for o in within])
    found = {"folds": kind, "scores": {}}
    if len(folds) < 2:
        return found
    for name in names:
        probabilities, labels = [], []
        for fold in folds:
            fit = [o for o in within if o.unit not in fold and name in o.values]
            test = [o for o in within if o.unit in fold and name in o.values]
            if not test or len({o.role for o in fit}) < 2:
                continue
            model = platt([o.values[name] for o in fit], [o.role == "member" for o in fit])
            probabilities += list(model([o.values[name] for o in test]))
            labels += [o.role == "member" for o in test]
        if labels:
            probabilities, labels = np.array(probabilities), np.array(labels)
            found["scores"][name] = {"brier": brier(probabilities, labels),
                                     "mean_member": float(probabilities[labels].mean()),
                                     "mean_non_member": float(probabilities[~labels].mean()), "n": int(labels.size)}
    return found


def regime_units(instances: Sequence[Scored], cells: Sequence[Scored], verdicts: dict[str, dict[str, bool]], *,
                 budget: float, seed: int = 0) -> dict:
    """One regime's within-model numbers (the module's docstring), JSON-ready."""
    scores = sorted(set.intersection(*(set(o.values) for o in instances))) if instances else []
    statistics = sorted({name for c in cells for name in c.values})
    return {"unit": units_text([o.unit for o in instances]),
            "membership": membership(instances, seed=seed),
            "thresholds": {"instance": held_out(instances, scores, level="instance", budget=budget, seed=seed),
                           "cell": held_out(cells, statistics, level="cell", budget=budget, seed=seed)},
            "verdicts": verdict_rates(cells, verdicts),
            "calibrated": calibrated_scores(instances, [s for s in scores if not s.endswith("_gain")])}
