"""The calibration as one typed result, and the function that computes it from study folders.

    result = calibrate(["runs/dose_response/<time>"])        # -> Calibration
    result.thresholds, result.rule, result.instance["rouge_l"]["auc_ci"], result.to_json()

``Calibration`` holds what calibration.json holds (``to_json``) and, for the reports, the instances and their
labels; rendering it (calibration.md, the dose-response table, plots) is ``contaminate/reports/calibration.py``,
and the command line ``contaminate/calibrate.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from contaminate.calibration.card import threshold_cards
from contaminate.calibration.constants import (
    DEFAULT_JUDGE,
    EXACT_FPR,
    FPR_POINTS,
    NEAR_EXACT_FPR,
    PAPER_RULE,
    PARTITION_FPR,
    SAMPLE_SIZE,
    TRANSFER_TOLERANCE,
)
from contaminate.calibration.instance_level import (
    cross_fitted_labels,
    fit_thresholds,
    label,
    rates_at,
    roc_with_interval,
)
from contaminate.calibration.judges import judge_agreement
from contaminate.calibration.membership import membership
from contaminate.calibration.models import model_groups
from contaminate.calibration.partition_level import (
    alg1_flag_rate,
    partition_level,
    partition_rates,
    pools_of,
    recommend_rule,
    summarize_pools,
)
from contaminate.calibration.recipe import validate_recipe
from contaminate.calibration.regimes import regime_calibration, scored_instances
from contaminate.calibration.studies import (
    Instance,
    distinct,
    load_instances,
    needs,
    regime_of,
    score_names,
    unfinished_studies,
)
from detect.errors import InputError
from detect.judges.recipe import EXACT_SHARE
from detect.pipeline import SCORES

Rule = tuple  # (min exact, min near-exact), None where that count never flags


@dataclass
class Calibration:
    """Everything a calibration found. Thresholds and the recommended rule are what a detection loads
    (``judge.calibration=<calibration.json>``); the rest is the evidence for them."""
    sources: list[str]                      # the study folders read
    conditions: dict[str, dict]             # condition key -> its settings (every setting but the seed)
    n_instances: dict[str, int]             # positive / negative (each observation once), in_pools
    targets: dict                           # exact_fpr, near_exact_fpr, partition_fpr, sample_size
    thresholds: dict                        # CROSS-MODEL, in-sample: exact / near-exact fitted on every negative pooled
    achieved: dict                          # the FPR / TPR each pooled threshold reaches on these instances
    default_thresholds: dict                # the threshold judge's defaults (0.95 / 0.75), their FPR / TPR here
    score: str                              # the near-exact score of the calibrated judge
    calibrated_labels: str                  # how the calibrated labels were fitted (cross-fitted over seeds or not)
    rule: dict | None                       # the recommended Algorithm 2 rule, or None if none keeps the FPR
    instance: dict[str, dict]               # CROSS-MODEL: score -> ROC points, AUC, TPR at FPR points
    alg2: dict[str, dict]                   # default / calibrated labels -> per rule: TPR, FPR, accuracy, per pool
    alg1: dict[str, dict]                   # score -> Algorithm 1's flag rates over pools
    partition_detectors: dict               # roc (partition statistics) and verdicts (flag rates) per detector
    instance_within_model: dict[str, dict]  # per score: each model's members vs its non-members, over models
    ranking: dict[str, list[dict]]          # instance and partition detectors by AUC
    judges: dict | None                     # LLM judge agreement, where studies ran one
    by_regime: dict | None = None           # calibration by regime, transfer, what is missing (regimes.py)
    recipe: dict = field(default_factory=dict)   # the recipe validated within each model, per group (recipe.py)
    cards: dict = field(default_factory=dict)    # the threshold card of each group, written or why not (card.py)
    exact_share: float = EXACT_SHARE
    paper_rule: Rule = PAPER_RULE
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    format: str = "contamination-lab calibration 1"
    instances: list[Instance] = field(default_factory=list, repr=False)      # for the reports, not the JSON
    labels: dict[str, list[str]] = field(default_factory=dict, repr=False)   # default / calibrated label per instance

    def to_json(self) -> dict:
        """calibration.json: everything but the instances; rules as "k_exact/k_near" keys, ROC curves kept."""
        def pools_keyed(block: dict) -> dict:  # (condition, cell, model) keys as "condition|cell|model" strings
            return {**block, "per_pool": {"|".join(pool): rate for pool, rate in block["per_pool"].items()}}

        def rules(block: dict) -> dict:
            return {**{k: v for k, v in block.items() if k != "rules"},
                    "rules": {f"{k_e or '-'}/{k_n or '-'}": pools_keyed(r)
                              for (k_e, k_n), r in block["rules"].items()}}

        written = [card for card in self.cards.values() if card["written"]]
        return {
            "format": self.format, "created": self.created, "sources": self.sources, "conditions": self.conditions,
            "n_instances": self.n_instances, "targets": self.targets,
            # what judge.calibration= loads: the one card written (several: card_<group>.json each), or null
            "card": written[0] if len(written) == 1 else None, "cards": self.cards, "recipe": self.recipe,
            # fitted in-sample on every negative pooled across models (a base model's easy ones included): the numbers
            # issue 32 retired as a product, kept to compare; judge.calibration= does not load them
            "cross_model_thresholds": self.thresholds, "achieved": self.achieved,
            "default_thresholds": self.default_thresholds, "score": self.score,
            "calibrated_labels": self.calibrated_labels, "paper_rule": self.paper_rule, "rule": self.rule,
            "instance": self.instance, "instance_within_model": self.instance_within_model,
            "ranking": self.ranking, "judges": self.judges,
            "partition_detectors": {
                "roc": self.partition_detectors["roc"],
                "verdicts": {name: pools_keyed(block)
                             for name, block in self.partition_detectors["verdicts"].items()}},
            "alg2": {name: rules(block) for name, block in self.alg2.items()},
            "alg1": {name: pools_keyed(block) for name, block in self.alg1.items()},
            "by_regime": self.by_regime,
        }


def calibrate(folders: Sequence[str | Path], *, exact_fpr: float = EXACT_FPR, near_exact_fpr: float = NEAR_EXACT_FPR,
              partition_fpr: float = PARTITION_FPR, score: str = "rouge_l", sample_size: int = SAMPLE_SIZE,
              alg1_draws: int = 200, seed: int = 0, tolerance: float = TRANSFER_TOLERANCE,
              transfer: bool | None = None, exact_share: float = EXACT_SHARE) -> Calibration:
    """Everything calibration.json and the reports hold, computed from the studies under ``folders``.
    ``transfer``: True demands the regime x regime transfer table (an error with fewer than two regimes), None
    computes it where there are two or more."""
    check_targets(exact_fpr, near_exact_fpr, partition_fpr, exact_share, sample_size)
    instances, conditions, partitions = load_instances(folders)
    known = [i for i in instances if i.known]  # each model's known non-members: the recipe's, not a partition's
    instances = [i for i in instances if not i.known]
    regimes = sorted({regime_of(settings) for settings in conditions.values()})
    if transfer and len(regimes) < 2:
        raise InputError(f"the transfer table needs studies of two regimes (format / background / backend), and "
                         f"these are all {regimes[0]}; add studies of another regime, or leave out --transfer")
    names = score_names(instances)
    if score not in names or score.endswith("_gain"):
        raise InputError(f"--score {score} is not a near-exact score of these studies; "
                         f"use one of {', '.join(s for s in names if not s.endswith('_gain'))}")
    units = sorted({i.unit for i in instances})
    if len(units) < 2:
        draw, seed_ = units[0]
        raise InputError(f"these studies rest on one model (draw {draw}, seed {seed_}): an interval needs at least two "
                         f"independent models; run more seeds (seed=0,1,2) or member draws (sample.draw=0,1,2)")
    observed = distinct(instances)
    positive = [i.positive for i in observed]
    cells = [f"{i.study}:{i.cell}" for i in observed]
    # CROSS-MODEL (members of the contaminated model against every clean instance, the base model's included): this
    # measures fine-tuning on the format as much as membership. Kept for the judge's thresholds and labelled so.
    instance_level = {}
    for name in names:
        instance_level[name] = roc_with_interval(positive, [i.scores[name] for i in observed], cells, seed=seed)
    # Membership within each model, every dose pooled per model: members against that model's own non-members.
    within_model = membership(scored_instances(instances, conditions), pooled=True, seed=seed).get("-", {})
    thresholds = fit_thresholds(observed, exact_fpr=exact_fpr, near_exact_fpr=near_exact_fpr)

    pools = pools_of(instances)
    default_labels = [label(DEFAULT_JUDGE, i) for i in instances]
    calibrated_labels, calibrated_how = cross_fitted_labels(instances, exact_fpr=exact_fpr,
                                                            near_exact_fpr=near_exact_fpr, score=score)
    alg2 = {"default": partition_rates(instances, default_labels, pools, sample_size=sample_size),
            "calibrated": partition_rates(instances, calibrated_labels, pools, sample_size=sample_size)}
    alg1 = {}
    for name in (s for s in SCORES if s in names and f"{s}_gain" in names):
        per_pool = {pool: alg1_flag_rate([instances[p] for p in positions], name, sample_size=sample_size,
                                         draws=alg1_draws, seed=seed)
                    for pool, positions in pools.items()}
        alg1[name] = summarize_pools(per_pool, instances, pools)
    recommended = recommend_rule(alg2["calibrated"]["rules"], partition_fpr=partition_fpr)
    partition_detectors = partition_level(partitions, instances, pools, seed=seed)
    by_regime = regime_calibration(instances, partitions, conditions, calibrated_labels, exact_fpr=exact_fpr,
                                   near_exact_fpr=near_exact_fpr, partition_fpr=partition_fpr, score=score,
                                   tolerance=tolerance, sample_size=sample_size, seed=seed)
    if transfer is False:
        by_regime["transfer"] = None
    by_regime["missing"]["unfinished"] = [str(path) for path in unfinished_studies(folders)]
    recipe, cards = product(instances, known, conditions, budget=partition_fpr, exact_share=exact_share,
                            partition_size=sample_size, tolerance=tolerance, score=score, seed=seed)

    return Calibration(
        sources=sorted({i.study for i in instances}), conditions=conditions,
        n_instances={"positive": sum(positive), "negative": len(positive) - sum(positive), "in_pools": len(instances)},
        targets={"exact_fpr": exact_fpr, "near_exact_fpr": near_exact_fpr, "partition_fpr": partition_fpr,
                 "exact_share": exact_share,
                 "sample_size": sample_size},
        thresholds={"exact_threshold": thresholds["exact_threshold"],
                    "near_exact_threshold": thresholds["near_exact_threshold"]},
        achieved=thresholds["achieved"],
        default_thresholds={"exact_threshold": DEFAULT_JUDGE.exact_threshold,
                            "near_exact_threshold": DEFAULT_JUDGE.near_exact_threshold,
                            **rates_at(observed, DEFAULT_JUDGE.exact_threshold, DEFAULT_JUDGE.near_exact_threshold,
                                       DEFAULT_JUDGE.score)},
        score=score, calibrated_labels=calibrated_how,
        rule=None if recommended is None else {"min_exact": recommended[0], "min_near_exact": recommended[1]},
        instance=instance_level, alg2=alg2, alg1=alg1, partition_detectors=partition_detectors,
        instance_within_model=within_model, ranking=ranking(instance_level, partition_detectors, within_model),
        judges=judge_agreement(instances, {"default": default_labels, "calibrated": calibrated_labels}),
        instances=instances, labels={"default": default_labels, "calibrated": calibrated_labels}, by_regime=by_regime,
        recipe=recipe, cards=cards, exact_share=exact_share,
    )


def check_targets(exact_fpr: float, near_exact_fpr: float, partition_fpr: float, exact_share: float,
                  sample_size: int = SAMPLE_SIZE) -> None:
    """The calibration's rates and partition size, each in range, or one line naming the flag."""
    if isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size < 1:
        raise InputError(f"--partition-size {sample_size} is not a whole number >= 1: the instances in one of "
                         f"Algorithm 2's partitions (the paper's 10)")
    for name, value in (("--exact-fpr", exact_fpr), ("--near-exact-fpr", near_exact_fpr),
                        ("--partition-fpr", partition_fpr)):
        if not 0 <= value < 1:
            raise InputError(f"{name} {value} is not a rate in [0, 1)")
    if not 0 < exact_share < 1:
        raise InputError(f"--exact-share {exact_share} is not a share in (0, 1): the exact part's share of the budget")


def product(instances: Sequence[Instance], known: Sequence[Instance], conditions: dict[str, dict], *, budget: float,
            exact_share: float, partition_size: int, tolerance: float, score: str, seed: int) -> tuple[dict, dict]:
    """The lab's product from the studies' models: the recipe validated within each model, and each group's
    threshold card fitted within contaminated models, held out and transferred (recipe.py, card.py)."""
    groups = model_groups(instances, known, conditions)
    recipe = validate_recipe(groups, budget=budget, exact_share=exact_share, partition_size=partition_size, seed=seed)
    settings = {group: conditions[next(i.condition for m in models for p in m.pools for i in p.instances)]
                for group, models in groups.items()}
    cards = threshold_cards(groups, settings, budget=budget, exact_share=exact_share, partition_size=partition_size,
                            tolerance=tolerance, score=score)
    return recipe, cards


def ranking(instance_level: dict, partition_detectors: dict, within_model: dict | None = None) -> dict[str, list[dict]]:
    """Detectors by AUC, best first: instance scores by their within-model AUC (mean over models) where there is
    one, else the cross-model AUC; each row carries both. Partition statistics over study cells (cross-model)."""
    def ranked(blocks: dict) -> list[dict]:
        rows = [{"detector": name, "needs": needs(name), "auc": block["auc"], "auc_low": block["auc_ci"]["low"],
                 "auc_high": block["auc_ci"]["high"], **{f"tpr_at_{p}_fpr": block["tpr_at_fpr"][str(p)]
                                                         for p in FPR_POINTS},
                 "n_positive": block["n_positive"], "n_negative": block["n_negative"]}
                for name, block in blocks.items()]
        return sorted(rows, key=lambda row: -row["auc"])

    instance = ranked(instance_level)
    for row in instance:
        block = ((within_model or {}).get("scores") or {}).get(row["detector"])
        row["auc_within_model"] = None if block is None else block["auc"]["estimate"]
        row["auc_within_model_low"] = None if block is None else block["auc"]["low"]
        row["auc_within_model_high"] = None if block is None else block["auc"]["high"]
        row["tpr_at_0.01_fpr_within_model"] = None if block is None else block["tpr_at_0.01"]["estimate"]
    if instance and all(row["auc_within_model"] is not None for row in instance):
        instance.sort(key=lambda row: -row["auc_within_model"])
    return {"instance": instance, "partition": ranked(partition_detectors["roc"])}
