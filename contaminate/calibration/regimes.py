"""Calibration by regime: within each (format, background, backend), the within-model numbers of ``membership.py``
per dose; across regimes, whether a threshold or a calibrated score fitted in one holds in another.

    by_regime = regime_calibration(instances, partitions, conditions, labels, partition_fpr=0.05, ...)  # JSON-ready

A regime is how the members went in: the format (metadata, dump, instruction, input_only...), the background they
were diluted in (none, offline...) and the backend that trained them (full, lora). Within a regime the dose
(exposures; epochs in the members-alone regime), the member draw and the training seed vary; the independent unit
is a model, one (draw, seed) pair. Per regime:

- ``membership``, ``thresholds``, ``verdicts``, ``calibrated``: ``membership.py`` (within-model AUC and TPR at
  1% / 0.1% FPR; held-out conformal thresholds, practitioner and oracle; the studies' verdicts per model, k of n
  with exact intervals; Platt-calibrated scores).
- ``alg2``: Algorithm 2's thresholds and rule calibrated within the regime (cross-fitted over draws or seeds).
- ``blind_baseline``: the text-only classifier's AUC on the regime's member / non-member samples, pooled over draws
  with a t-interval over draws, with the smallest AUC each sample could have rejected.

Across regimes: ``alg2_everywhere`` (which rule, with the thresholds calibrated over all studies and with the
default thresholds, keeps partition FPR <= budget in every regime), ``transfer`` (each detector's oracle threshold
fitted on regime A's clean cells, applied to regime B's models: is B's within-model FPR within budget + tolerance?
an exact equivalence test with its power, "not enough data" where it has none; and each Platt-calibrated score
fitted on A's planted examples, scored on B's) and ``missing`` (started studies with no results, grid cells with no
study).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from contaminate.calibration.constants import DEFAULT_JUDGE, PAPER_RULE, RULE_GRID, SAMPLE_SIZE, TRANSFER_TOLERANCE
from contaminate.calibration.instance_level import (
    cross_fitted_labels,
    fit_thresholds,
    judges_from,
    label,
)
from contaminate.calibration.membership import (
    NON_MEMBERS,
    SETTINGS,
    Scored,
    distinct,
    regime_units,
    role_of,
)
from contaminate.calibration.partition_level import alg2_flag_rate, partition_rates, pools_of, recommend_rule
from contaminate.calibration.statistics import (
    auc_floor,
    auc_matrix,
    brier,
    clopper_pearson,
    conformal_threshold,
    equivalence,
    platt,
    unit_interval,
)
from contaminate.calibration.studies import Instance, Partition, blind_baselines, regime_of
from contaminate.calibration.studies import distinct as distinct_instances
from detect.errors import InputError


@dataclass
class Cell:
    """One study cell as a partition of a regime, with every detector's statistic (larger = more contaminated;
    instance scores averaged over the cell's instances) and every verdict the study reached on it."""
    regime: str
    exposures: float | None
    unit: tuple[int, int]
    model: str                  # the study's condition: with the unit, which contaminated model
    study: str
    cell: str
    positive: bool
    observation: str
    statistics: dict[str, float]
    verdicts: dict[str, bool]

    @property
    def scored(self) -> Scored:
        checkpoint = "clean" if self.cell.startswith("clean") else "contaminated"
        return Scored(self.unit, self.exposures, role_of(self.cell, self.positive, checkpoint, self.exposures),
                      self.observation, self.statistics, self.model)


def regime_cells(instances: Sequence[Instance], partitions: Sequence[Partition],
                 conditions: dict[str, dict]) -> list[Cell]:
    """Every study cell with its regime, dose and statistics; a clean cell shared by studies once per regime."""
    by_cell: dict[tuple[str, str], list[Instance]] = defaultdict(list)
    for instance in instances:
        by_cell[(instance.study, instance.cell)].append(instance)
    cells, seen = [], set()
    for p in partitions:
        settings = conditions[p.condition]
        regime = regime_of(settings)
        # a computation shared by studies counts once, except a contaminated model's non-members, which are every
        # dose's within-model negatives (a planted run's never-planted group serves each of its groups); fitting
        # thresholds takes each observation once regardless (membership.distinct)
        key = (regime, p.observation, settings.get("exposures") if p.cell == NON_MEMBERS else None)
        if key in seen:
            continue
        seen.add(key)
        members = by_cell.get((p.study, p.cell), [])
        names = set.intersection(*(set(i.scores) for i in members)) if members else set()
        means = {name: float(np.mean([i.scores[name] for i in members])) for name in sorted(names)}
        statistics = {name: value for name, value in {**means, **p.statistics}.items()
                      if value is not None and math.isfinite(value)}
        cells.append(Cell(regime, settings.get("exposures"), p.unit, p.condition, p.study, p.cell, p.positive,
                          p.observation, statistics, dict(p.verdicts)))
    return cells


def scored_instances(instances: Sequence[Instance], conditions: dict[str, dict]) -> list[Scored]:
    """The instances as ``membership.py`` reads them: unit, dose, role, observation, scores."""
    found = []
    for i in instances:
        dose = conditions[i.condition].get("exposures")
        found.append(Scored(i.unit, dose, role_of(i.cell, i.positive, i.guided.get("checkpoint", "contaminated"),
                                                  dose), i.observation, i.scores, i.condition))
    return found


def _rate(flags: Sequence[bool]) -> float | None:
    return float(np.mean(flags)) if len(flags) else None


def _dose_name(dose) -> str:
    return "-" if dose is None else f"{dose:g}"


def alg2_in_regime(instances: Sequence[Instance], *, exact_fpr: float, near_exact_fpr: float, score: str,
                   budget: float, sample_size: int) -> dict:
    """Algorithm 2 calibrated within a regime: thresholds fitted on its instances, the rule its pools support."""
    fitted = fit_thresholds(distinct(instances), exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr)
    try:
        labels, how = cross_fitted_labels(instances, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr, score=score)
    except InputError as error:  # a seed whose other seeds lack positives: fit in-sample, and say so
        judge = judges_from(fitted)[score]
        labels, how = [label(judge, i) for i in instances], f"in-sample ({error})"
    rates = partition_rates(instances, labels, pools_of(instances), sample_size=sample_size)["rules"]
    rule = recommend_rule(rates, partition_fpr=budget)
    chosen = rule or PAPER_RULE
    return {"exact_threshold": fitted["exact_threshold"],
            "near_exact_threshold": fitted["near_exact_threshold"][score], "score": score, "labels": how,
            "rule": None if rule is None else {"min_exact": rule[0], "min_near_exact": rule[1]},
            "tpr": rates[chosen]["tpr"]["mean"], "fpr": rates[chosen]["fpr"]["mean"],
            "paper_rule": {"tpr": rates[PAPER_RULE]["tpr"]["mean"], "fpr": rates[PAPER_RULE]["fpr"]["mean"]}}


def _alg2_pool_rates(instances: Sequence[Instance], labels: Sequence[str], rule: tuple, *,
                     sample_size: int) -> dict[str, float | None]:
    """TPR and FPR of one Algorithm 2 rule over these instances' pools, under these labels."""
    per_pool = {}
    for pool, positions in pools_of(instances).items():
        pool_labels = [labels[p] for p in positions]
        n_exact, n_near = pool_labels.count("exact"), pool_labels.count("near_exact")
        per_pool[pool] = (instances[positions[0]].positive,
                          alg2_flag_rate(n_exact, n_near, len(pool_labels) - n_exact - n_near, rule,
                                         sample_size=sample_size))
    return {"tpr": _rate([r for positive, r in per_pool.values() if positive]),
            "fpr": _rate([r for positive, r in per_pool.values() if not positive])}


def alg2_everywhere(by_regime: dict[str, list[Instance]], labels: dict[str, dict[int, str]], *, budget: float,
                    sample_size: int) -> dict:
    """For each set of labels (the paper's thresholds; those calibrated over every study): every rule's FPR and
    TPR in each regime, and the rule with the best mean TPR among those within budget in every regime."""
    found = {}
    for which, labelled in labels.items():
        rules = {}
        for rule in RULE_GRID:
            per_regime = {regime: _alg2_pool_rates(chosen, [labelled[id(i)] for i in chosen], rule,
                                                   sample_size=sample_size)
                          for regime, chosen in by_regime.items()}
            rules[rule] = per_regime
        safe = [rule for rule, per_regime in rules.items()
                if all(r["fpr"] is None or r["fpr"] <= budget + 1e-12 for r in per_regime.values())]

        def preference(rule):
            tprs = [r["tpr"] for r in rules[rule].values() if r["tpr"] is not None]
            return (round(float(np.mean(tprs)), 2) if tprs else 0.0, rule == PAPER_RULE,
                    -(rule[0] or 99), -(rule[1] or 99))

        best = max(safe, key=preference) if safe else None
        found[which] = {
            "rule": None if best is None else {"min_exact": best[0], "min_near_exact": best[1]},
            "safe_rules": [_rule_key(rule) for rule in safe],
            "by_regime": None if best is None else rules[best],
            "paper_rule_by_regime": rules[PAPER_RULE]}
    return found


def _rule_key(rule: tuple) -> str:
    return f"{rule[0] or '-'}/{rule[1] or '-'}"


def transfer(cells_by_regime: dict[str, list[Scored]], instances_by_regime: dict[str, list[Scored]], *,
             budget: float, tolerance: float = TRANSFER_TOLERANCE) -> dict:
    """Per cell statistic: the oracle threshold (split conformal at ``budget`` on every clean cell of the row
    regime) applied to the column regime's models: FPR on their own non-member cells, with the equivalence test of
    FPR <= budget + tolerance and its power; TPR on their member cells (k of n). Per instance score: Platt scaling
    fitted on the row regime's planted examples (members vs non-members), its Brier score on the column regime's.
    The diagonal is left out: a regime's own held-out numbers are in its ``thresholds`` and ``calibrated``."""
    regimes = list(cells_by_regime)
    names = sorted({n for cells in cells_by_regime.values() for c in cells for n in c.values})
    thresholds: dict[str, dict] = {}
    for name in names:
        rows = {}
        for source in regimes:
            clean = [c.values[name] for c in distinct(cells_by_regime[source])
                     if name in c.values and c.role in SETTINGS["oracle"]]
            fitted = conformal_threshold(clean, budget)
            row = {}
            for target in regimes:
                if target == source:
                    continue
                chosen = [c for c in cells_by_regime[target] if name in c.values]
                non = [c.values[name] > fitted["threshold"] for c in chosen if c.role == "non_member"]
                members = [c.values[name] > fitted["threshold"] for c in chosen if c.role == "member"]
                row[target] = {**equivalence(sum(non), len(non), budget=budget, tolerance=tolerance),
                               "tpr": clopper_pearson(sum(members), len(members))}
            rows[source] = {"threshold": fitted["threshold"], "fitted_on": fitted["n"], "to": row}
        thresholds[name] = rows
    scores = sorted(set.intersection(*(set(o.values) for group in instances_by_regime.values() for o in group
                                       if o.role in ("member", "non_member"))) or set())
    calibrated: dict[str, dict] = {}
    for name in (s for s in scores if not s.endswith("_gain")):
        rows = {}
        for source in regimes:
            fit = [o for o in instances_by_regime[source] if o.role in ("member", "non_member")]
            if len({o.role for o in fit}) < 2:
                continue
            model = platt([o.values[name] for o in fit], [o.role == "member" for o in fit])
            row = {}
            for target in regimes:
                test = [o for o in instances_by_regime[target] if o.role in ("member", "non_member")]
                if target == source or not test:
                    continue
                probabilities = model([o.values[name] for o in test])
                row[target] = {"brier": brier(probabilities, [o.role == "member" for o in test]), "n": len(test)}
            rows[source] = row
        calibrated[name] = rows
    return {"tolerance": tolerance, "budget": budget, "thresholds": thresholds, "calibrated": calibrated}


def missing_cells(conditions: dict[str, dict], units_by_condition: dict[str, set[tuple[int, int]]]) -> list[str]:
    """The sweep grid's cells with no finished study: every combination of the regimes' axes (format,
    background, backend, dataset, exposures, model) seen among the studies, less those seen, where a model is a
    (draw, seed) pair seen in some study (draws follow seeds unless set apart: they are one axis); background none
    has no exposures 0 (nothing would be trained)."""
    seen = {(s["format"], s.get("background", "none"), s.get("backend"), s["dataset"], s.get("exposures"), unit)
            for key, s in conditions.items() for unit in units_by_condition[key]}
    axes = [sorted({cell[k] for cell in seen}, key=lambda v: (v is None, str(v) if not isinstance(v, (int, float))
                                                             else f"{v:012.4f}")) for k in range(6)]
    gaps = []
    for cell in itertools.product(*axes):
        if cell in seen or (cell[1] == "none" and cell[4] == 0):
            continue
        fmt, background, backend, dataset, exposures, (draw, seed) = cell
        gaps.append(f"{fmt}/{background}/{backend} {dataset} exposures {_dose_name(exposures)} draw {draw} "
                    f"seed {seed}")
    return gaps


def blind_baseline_of(studies: Sequence[str]) -> dict | None:
    """The blind baseline over a regime's studies: each member / non-member draw once (the baseline reads texts, not
    models). With the texts' out-of-fold scores stored, the AUC averaged over draws with a t-interval over draws (none
    below 3); the smallest AUC each draw's sample could have rejected (its permutation null's 95th percentile).
    Summaries from before the scores were stored give the mean alone, no interval."""
    by_draw = {}
    for study, block in blind_baselines(studies).items():
        by_draw.setdefault(block.get("draw", len(by_draw)), block)
    if not by_draw:
        return None
    found = {"auc": float(np.mean([b["auc"] for b in by_draw.values()])), "low": None, "high": None,
             "n_draws": len(by_draw), "biased": any(b.get("biased") for b in by_draw.values()),
             "critical_auc": [b.get("critical_auc") for b in by_draw.values()],
             "null_mean": [b.get("null_mean") for b in by_draw.values()],
             "n_texts": [b.get("n_members", 0) + b.get("n_non_members", 0) for b in by_draw.values()]}
    if all("member_scores" in b for b in by_draw.values()):
        pooled = unit_interval({(draw, 0): [np.array(b["member_scores"]), np.array(b["non_member_scores"])]
                                for draw, b in by_draw.items()}, auc_matrix, floor=auc_floor)
        found.update(auc=pooled["estimate"], low=pooled["low"], high=pooled["high"], interval=pooled["interval"])
    return found


def regime_calibration(instances: Sequence[Instance], partitions: Sequence[Partition], conditions: dict[str, dict],
                       calibrated_labels: Sequence[str], *, exact_fpr: float, near_exact_fpr: float,
                       partition_fpr: float, score: str = "rouge_l", tolerance: float = TRANSFER_TOLERANCE,
                       sample_size: int = SAMPLE_SIZE, seed: int = 0) -> dict:
    """Everything above, for calibration.json's ``by_regime`` block (see the module's docstring)."""
    regime_by_condition = {key: regime_of(settings) for key, settings in conditions.items()}
    instances_by_regime: dict[str, list[Instance]] = defaultdict(list)
    for instance in instances:
        instances_by_regime[regime_by_condition[instance.condition]].append(instance)
    cells_by_regime: dict[str, list[Cell]] = defaultdict(list)
    for cell in regime_cells(instances, partitions, conditions):
        cells_by_regime[cell.regime].append(cell)

    regimes, skipped, scored, scored_cells = {}, {}, {}, {}
    for regime in sorted(instances_by_regime):
        chosen = instances_by_regime[regime]
        observed = distinct_instances(chosen)
        if not any(i.positive for i in observed):
            skipped[regime] = "no contaminated study (exposures 0 only)"
            continue
        if all(i.positive for i in observed):
            skipped[regime] = "no clean instance"
            continue
        scored[regime] = scored_instances(chosen, conditions)
        cells = cells_by_regime[regime]
        scored_cells[regime] = [c.scored for c in cells]
        settings = conditions[chosen[0].condition]
        regimes[regime] = {
            "format": settings["format"], "background": settings.get("background", "none"),
            "backend": settings.get("backend"), "studies": len({i.study for i in chosen}),
            "exposures": sorted({conditions[i.condition].get("exposures") for i in chosen},
                                key=lambda d: (d is None, d or 0)),
            "draws": sorted({i.unit[0] for i in chosen}), "seeds": sorted({i.unit[1] for i in chosen}),
            "n_cells": {"positive": sum(c.positive for c in cells), "clean": sum(not c.positive for c in cells)},
            **regime_units(scored[regime], scored_cells[regime], {c.observation: c.verdicts for c in cells},
                           budget=partition_fpr, seed=seed),
            "alg2": alg2_in_regime(chosen, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr, score=score,
                                   budget=partition_fpr, sample_size=sample_size),
            "blind_baseline": blind_baseline_of(sorted({i.study for i in chosen}))}

    calibrated = {id(i): lab for i, lab in zip(instances, calibrated_labels)}
    default = {id(i): label(DEFAULT_JUDGE, i) for i in instances}
    kept = {regime: instances_by_regime[regime] for regime in regimes}
    units_by_condition: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for instance in instances:
        units_by_condition[instance.condition].add(instance.unit)
    return {
        "regimes": regimes, "skipped": skipped,
        "targets": {"partition_fpr": partition_fpr, "tolerance": tolerance, "sample_size": sample_size},
        "alg2_everywhere": alg2_everywhere(kept, {"default": default, "calibrated": calibrated},
                                           budget=partition_fpr, sample_size=sample_size),
        "transfer": transfer(scored_cells, scored, budget=partition_fpr,
                             tolerance=tolerance) if len(regimes) >= 2 else None,
        "missing": {"grid": missing_cells(conditions, units_by_condition)},
    }
