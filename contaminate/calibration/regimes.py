"""Calibration by regime: each detector's power per (format, background, backend), its dose response, Algorithm 2's
rule per regime and everywhere, and whether a threshold fitted in one regime holds in another.

    by_regime = regime_calibration(result, partitions, partition_fpr=0.05, holds_at=0.8)   # -> dict (JSON-ready)

A regime is how the members went in: the format (metadata, dump, instruction, input_only...), the background they
were diluted in (none, offline...) and the backend that trained them (full, lora). Within a regime the dose
(exposures; epochs in the members-alone regime) and the seed vary. Every number here is over study cells as
partitions (the detector's n_detect-instance sample of one cell), except the instance-level AUCs:

- ``instance``: per instance score, ROC AUC with a 95% bootstrap interval and TPR at 1% / 5% FPR over the regime's
  instances (members trained in against every clean instance); ``auc_at_top``, the same with only the members of
  the regime's highest dose as positives.
- ``partition``: per partition statistic (Algorithm 1's 1 - p, Algorithm 2's replica count, ChatGPT-Cheat?'s best
  ROUGE-L, the sharded test's 1 - p) and per instance score averaged over the cell, the ROC over cells.
- ``detection``: each of those with the threshold at which at most ``partition_fpr`` of the regime's clean cells
  are flagged; its detection rate per dose, and the lowest exposure from which it holds (rate >= ``holds_at`` at
  that dose and every higher one). ``verdicts``: the studies' own decisions (Alg. 1 p <= 0.05, Alg. 2's rule,
  Cheat? strict / lenient, the sharded test), per dose, with their FPR; a lowest exposure only where FPR <= budget.
- ``alg2``: thresholds and rule calibrated within the regime (cross-fitted over seeds where there are several).
- ``blind_baseline``: the text-only classifier's AUC on the regime's member / non-member samples: a detector whose
  AUC does not beat it found nothing the texts alone do not show.

Across regimes: ``alg2_everywhere`` (which rule, with the thresholds calibrated over all studies and with the
paper's, keeps partition FPR <= budget in every regime), ``transfer`` (each detector's threshold, and Algorithm 2's
thresholds + rule, fitted in regime A and applied in regime B: FPR and TPR per pair, the pairs over budget marked,
and those beyond what refitting on as few clean cells from one distribution gives by chance)
and ``missing`` (started studies with no results, and the cells of the sweep's grid with no study).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from contaminate.calibration.constants import PAPER_JUDGE, PAPER_RULE, RULE_GRID, SAMPLE_SIZE
from contaminate.calibration.instance_level import (
    cross_fitted_labels,
    fit_thresholds,
    judges_from,
    label,
    roc_with_interval,
)
from contaminate.calibration.partition_level import alg2_flag_rate, partition_rates, pools_of, recommend_rule
from contaminate.calibration.studies import Instance, Partition, blind_baselines, distinct, regime_of
from detect.errors import InputError


@dataclass
class Cell:
    """One study cell as a partition of a regime, with every detector's statistic (larger = more contaminated;
    instance scores averaged over the cell's instances) and every verdict the study reached on it."""
    regime: str
    exposures: float | None
    seed: int
    study: str
    cell: str
    positive: bool
    observation: str
    statistics: dict[str, float]
    verdicts: dict[str, bool]


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
        if (regime, p.observation) in seen:
            continue
        seen.add((regime, p.observation))
        members = by_cell.get((p.study, p.cell), [])
        names = set.intersection(*(set(i.scores) for i in members)) if members else set()
        means = {name: float(np.mean([i.scores[name] for i in members])) for name in sorted(names)}
        statistics = {name: value for name, value in {**means, **p.statistics}.items()
                      if value is not None and math.isfinite(value)}
        cells.append(Cell(regime, settings.get("exposures"), p.seed, p.study, p.cell, p.positive, p.observation,
                          statistics, dict(p.verdicts)))
    return cells


def partition_threshold(clean: Sequence[float], every: Sequence[float], budget: float) -> float:
    """The lowest threshold t (flag: statistic >= t) that flags at most ``budget`` of the clean values, halfway
    between the lowest value it flags and the next lower one; inf (flags nothing) when only that meets it."""
    clean = np.asarray(clean, float)
    candidates = np.unique(np.asarray(every, float))
    for position, candidate in enumerate(candidates):
        if (clean >= candidate).mean() <= budget + 1e-12:
            return float(candidate if position == 0 else (candidate + candidates[position - 1]) / 2)
    return math.inf


def _rate(flags: Sequence[bool]) -> float | None:
    return float(np.mean(flags)) if len(flags) else None


def lowest_exposure(rates: dict, *, holds_at: float) -> float | None:
    """The lowest dose from which the detection rate stays >= holds_at at every higher dose (None: never)."""
    lowest = None
    for dose in sorted(rates, reverse=True):
        if rates[dose] is None or rates[dose] < holds_at:
            break
        lowest = dose
    return lowest


def _dose_rates(cells: Sequence[Cell], flagged) -> dict:
    """Detection rate over the positive cells of each dose (exposures >= 1)."""
    by_dose = defaultdict(list)
    for cell in cells:
        if cell.positive:
            by_dose[cell.exposures].append(bool(flagged(cell)))
    return {dose: _rate(flags) for dose, flags in sorted(by_dose.items(), key=lambda item: item[0])}


def detection(cells: Sequence[Cell], *, budget: float, holds_at: float) -> dict:
    """Per statistic: the threshold at partition FPR <= budget in these cells, its rate per dose and the lowest
    exposure detected; per verdict as the studies ran it: its FPR, rate per dose, lowest exposure (if FPR ok)."""
    found = {"statistics": {}, "verdicts": {}}
    for name in sorted({s for c in cells for s in c.statistics}):
        chosen = [c for c in cells if name in c.statistics]
        clean = [c.statistics[name] for c in chosen if not c.positive]
        if not clean or not any(c.positive for c in chosen):
            continue
        threshold = partition_threshold(clean, [c.statistics[name] for c in chosen], budget)
        rates = _dose_rates(chosen, lambda c: c.statistics[name] >= threshold)
        found["statistics"][name] = {
            "threshold": threshold, "fpr": _rate([v >= threshold for v in clean]), "n_clean": len(clean),
            "rate_by_exposures": _by_key(rates), "lowest_exposures": lowest_exposure(rates, holds_at=holds_at)}
    for name in sorted({v for c in cells for v in c.verdicts}):
        chosen = [c for c in cells if name in c.verdicts]
        fpr = _rate([c.verdicts[name] for c in chosen if not c.positive])
        rates = _dose_rates(chosen, lambda c: c.verdicts[name])
        found["verdicts"][name] = {
            "fpr": fpr, "n_clean": sum(not c.positive for c in chosen), "rate_by_exposures": _by_key(rates),
            "lowest_exposures": None if fpr is None or fpr > budget + 1e-12
            else lowest_exposure(rates, holds_at=holds_at)}
    return found


def _by_key(rates: dict) -> dict[str, float | None]:
    return {_dose_name(dose): rate for dose, rate in rates.items()}


def _dose_name(dose) -> str:
    return "-" if dose is None else f"{dose:g}"


def _roc_block(labels: list[bool], scores: list[float], clusters: list[str], seed: int) -> dict | None:
    if not 0 < sum(labels) < len(labels):
        return None
    block = roc_with_interval(labels, scores, clusters, seed=seed)
    return {k: v for k, v in block.items() if k not in ("fpr", "tpr")}  # curves stay in the pooled calibration


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


def refit_noise_count(n_fitted: int, n_applied: int, budget: float, alpha: float = 0.05) -> int | None:
    """How many of ``n_applied`` clean cells a threshold must flag before sampling noise stops explaining it.

    A threshold fitted to flag at most ``budget`` of ``n_fitted`` clean cells sits above their (f+1)-th largest value,
    f = floor(budget * n_fitted) (``partition_threshold``: halfway to the regime's next value). Applied to
    ``n_applied`` clean cells of the *same* distribution (both sets exchangeable, no ties), it flags at most X of them,
    the ones above that (f+1)-th value, and X >= x exactly when the top f + x of all the values hold at most f fitted
    ones: P(X >= x) = sum_j<=f C(n_fitted, j) C(n_applied, f + x - j) / C(n_fitted + n_applied, f + x). Exact when the
    threshold sits right above the (f+1)-th value, conservative (fewer cells called beyond noise) otherwise.
    Returns the smallest x with P(X >= x) <= alpha (None if none up to n_applied). With 16 and 16 cells at 5%:
    P(X >= 1) = 0.50, P(X >= 4) = 0.051, so 5 (FPR 0.31): at this size a threshold over budget elsewhere is the rule,
    not evidence that it fails to transfer."""
    flagged = math.floor(budget * n_fitted + 1e-9)
    total = n_fitted + n_applied
    for x in range(1, n_applied + 1):
        drawn = flagged + x
        tail = sum(math.comb(n_fitted, j) * math.comb(n_applied, drawn - j)
                   for j in range(min(flagged, n_fitted) + 1)) / math.comb(total, drawn)
        if tail <= alpha:
            return x
    return None


def transfer(cells_by_regime: dict[str, list[Cell]], detected: dict[str, dict], alg2: dict[str, dict],
             instances_by_regime: dict[str, list[Instance]], *, budget: float, sample_size: int) -> dict:
    """Each detector's threshold fitted in one regime (rows) applied in every other (columns): FPR and TPR of the
    column regime's cells, pooled over its doses; ``over`` marks FPR > budget, ``noise_fpr`` is the FPR a threshold
    refitted on as many cells of the column regime's own clean distribution would reach with probability <= 5%
    (``refit_noise_count``), and ``beyond_noise`` marks FPR >= that. Algorithm 2 transfers its thresholds and rule
    together (the paper's rule where a regime supports none; its FPR is a rate over instance pools, no noise bound)."""
    regimes = list(cells_by_regime)
    table: dict[str, dict] = {}
    names = sorted({name for block in detected.values() for name in block["statistics"]})
    for name in names:
        rows = {}
        for source in regimes:
            fitted = detected[source]["statistics"].get(name)
            if fitted is None:
                continue
            n_fitted = sum(1 for c in cells_by_regime[source] if name in c.statistics and not c.positive)
            row = {}
            for target in regimes:
                chosen = [c for c in cells_by_regime[target] if name in c.statistics]
                clean = [c for c in chosen if not c.positive]
                fpr = _rate([c.statistics[name] >= fitted["threshold"] for c in clean])
                tpr = _rate([c.statistics[name] >= fitted["threshold"] for c in chosen if c.positive])
                over = fpr is not None and fpr > budget + 1e-12
                noise = refit_noise_count(n_fitted, len(clean), budget) if clean and n_fitted else None
                noise_fpr = None if noise is None else noise / len(clean)
                row[target] = {"fpr": fpr, "tpr": tpr, "over": over, "noise_fpr": noise_fpr,
                               "beyond_noise": over and noise_fpr is not None and fpr >= noise_fpr - 1e-12}
            rows[source] = {"threshold": fitted["threshold"], "to": row}
        table[name] = rows
    rows = {}
    for source, block in alg2.items():
        judge = judges_from({"exact_threshold": block["exact_threshold"],
                             "near_exact_threshold": {block["score"]: block["near_exact_threshold"]}})[block["score"]]
        rule = (block["rule"]["min_exact"], block["rule"]["min_near_exact"]) if block["rule"] else PAPER_RULE
        row = {}
        for target, chosen in instances_by_regime.items():
            rates = _alg2_pool_rates(chosen, [label(judge, i) for i in chosen], rule, sample_size=sample_size)
            row[target] = {**rates, "over": rates["fpr"] is not None and rates["fpr"] > budget + 1e-12,
                           "noise_fpr": None, "beyond_noise": None}
        rows[source] = {"threshold": {"exact": block["exact_threshold"], "near_exact": block["near_exact_threshold"],
                                      "rule": _rule_key(rule)}, "to": row}
    table["alg2_calibrated"] = rows
    return table


def missing_cells(conditions: dict[str, dict], seeds_by_condition: dict[str, set[int]]) -> list[str]:
    """The sweep grid's cells with no finished study: every combination of the regimes' axes (format,
    background, backend, dataset, exposures, seed) seen among the studies, less those seen; background none has
    no exposures 0 (nothing would be trained)."""
    seen = {(s["format"], s.get("background", "none"), s.get("backend"), s["dataset"], s.get("exposures"), seed)
            for key, s in conditions.items() for seed in seeds_by_condition[key]}
    axes = [sorted({cell[k] for cell in seen}, key=lambda v: (v is None, str(v) if not isinstance(v, (int, float))
                                                             else f"{v:012.4f}")) for k in range(6)]
    gaps = []
    for cell in itertools.product(*axes):
        if cell in seen or (cell[1] == "none" and cell[4] == 0):
            continue
        fmt, background, backend, dataset, exposures, seed = cell
        gaps.append(f"{fmt}/{background}/{backend} {dataset} exposures {_dose_name(exposures)} seed {seed}")
    return gaps


def blind_baseline_of(studies: Sequence[str]) -> dict | None:
    """The blind baseline over a regime's studies: each distinct member / non-member sample once (the baseline
    reads texts, not models, so studies on the same sample agree): mean AUC, the widest interval, the samples."""
    blocks = list({json.dumps(b, sort_keys=True): b for b in blind_baselines(studies).values()}.values())
    if not blocks:
        return None
    return {"auc": float(np.mean([b["auc"] for b in blocks])), "low": float(min(b["low"] for b in blocks)),
            "high": float(max(b["high"] for b in blocks)), "n_samples": len(blocks),
            "biased": any(b.get("biased") for b in blocks)}


def regime_calibration(instances: Sequence[Instance], partitions: Sequence[Partition], conditions: dict[str, dict],
                       calibrated_labels: Sequence[str], *, exact_fpr: float, near_exact_fpr: float,
                       partition_fpr: float, score: str = "rouge_l", holds_at: float = 0.8,
                       sample_size: int = SAMPLE_SIZE, seed: int = 0) -> dict:
    """Everything above, for calibration.json's ``regimes`` block (see the module's docstring)."""
    regime_by_condition = {key: regime_of(settings) for key, settings in conditions.items()}
    instances_by_regime: dict[str, list[Instance]] = defaultdict(list)
    for instance in instances:
        instances_by_regime[regime_by_condition[instance.condition]].append(instance)
    cells = regime_cells(instances, partitions, conditions)
    cells_by_regime: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        cells_by_regime[cell.regime].append(cell)

    regimes, skipped = {}, {}
    for regime in sorted(instances_by_regime):
        chosen = instances_by_regime[regime]
        observed = distinct(chosen)
        if not any(i.positive for i in observed):
            skipped[regime] = "no contaminated study (exposures 0 only)"
            continue
        if all(i.positive for i in observed):
            skipped[regime] = "no clean instance"
            continue
        doses = sorted({conditions[i.condition].get("exposures") for i in chosen if i.positive},
                       key=lambda d: (d is None, d or 0))
        top = doses[-1]
        labels, clusters = [i.positive for i in observed], [f"{i.study}:{i.cell}" for i in observed]
        at_top = [i for i in observed if not i.positive or conditions[i.condition].get("exposures") == top]
        instance, auc_at_top = {}, {}
        for name in sorted(set.intersection(*(set(i.scores) for i in observed))):
            instance[name] = _roc_block(labels, [i.scores[name] for i in observed], clusters, seed)
            block = _roc_block([i.positive for i in at_top], [i.scores[name] for i in at_top],
                               [f"{i.study}:{i.cell}" for i in at_top], seed)
            auc_at_top[name] = None if block is None else block["auc"]
        partition = {}
        regime_cells_ = cells_by_regime[regime]
        for name in sorted({s for c in regime_cells_ for s in c.statistics} - set(instance)):
            chosen_cells = [c for c in regime_cells_ if name in c.statistics]
            partition[name] = _roc_block([c.positive for c in chosen_cells], [c.statistics[name] for c in chosen_cells],
                                         [f"{c.study}:{c.cell}" for c in chosen_cells], seed)
        studies = sorted({i.study for i in chosen})
        settings = conditions[chosen[0].condition]
        regimes[regime] = {
            "format": settings["format"], "background": settings.get("background", "none"),
            "backend": settings.get("backend"), "studies": len(studies),
            "exposures": [d for d in sorted({conditions[i.condition].get("exposures") for i in chosen},
                                            key=lambda d: (d is None, d or 0))],
            "seeds": sorted({i.seed for i in chosen}), "top_exposures": top,
            "n_instances": {"positive": sum(labels), "negative": len(labels) - sum(labels)},
            "n_cells": {"positive": sum(c.positive for c in regime_cells_),
                        "clean": sum(not c.positive for c in regime_cells_)},
            "instance": {k: v for k, v in instance.items() if v is not None},
            "auc_at_top": auc_at_top,
            "partition": {k: v for k, v in partition.items() if v is not None},
            "detection": detection(regime_cells_, budget=partition_fpr, holds_at=holds_at),
            "alg2": alg2_in_regime(chosen, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr, score=score,
                                   budget=partition_fpr, sample_size=sample_size),
            "blind_baseline": blind_baseline_of(studies)}

    calibrated = {id(i): lab for i, lab in zip(instances, calibrated_labels)}
    paper = {id(i): label(PAPER_JUDGE, i) for i in instances}
    kept = {regime: instances_by_regime[regime] for regime in regimes}
    seeds_by_condition: dict[str, set[int]] = defaultdict(set)
    for instance in instances:
        seeds_by_condition[instance.condition].add(instance.seed)
    return {
        "regimes": regimes, "skipped": skipped,
        "targets": {"partition_fpr": partition_fpr, "holds_at": holds_at, "sample_size": sample_size},
        "alg2_everywhere": alg2_everywhere(kept, {"paper": paper, "calibrated": calibrated}, budget=partition_fpr,
                                           sample_size=sample_size),
        "transfer": transfer({r: cells_by_regime[r] for r in regimes},
                             {r: block["detection"] for r, block in regimes.items()},
                             {r: block["alg2"] for r, block in regimes.items()}, kept,
                             budget=partition_fpr, sample_size=sample_size) if len(regimes) >= 2 else None,
        "missing": {"grid": missing_cells(conditions, seeds_by_condition)},
    }
