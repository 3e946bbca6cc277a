"""The threshold card: default exact / near-exact thresholds for a user with no known non-members, fitted within each
contaminated model and measured held out (method section 11).

    cards = threshold_cards(groups, budget=0.05, exact_share=0.5, partition_size=10, tolerance=0.05)

How a card is fitted, per group (one regime and dataset):

1. Per contaminated model, for each candidate rule (``CARD_RULES``), the recipe's thresholds on that model's own
   known non-members (``detect/judges/recipe.py``: the lowest order statistics that keep the rule's partition FPR
   within the budget on that model). Never a base model's completions, never negatives pooled across models.
2. The rule: the candidate with the highest TPR (mean over the models' member cells and doses, each model at its own
   thresholds) among those every model can fit. The card's thresholds: each model's, averaged within its member draw,
   then over draws, with a t-interval over draws (``unit_interval``).
3. Held out: leave one member draw out. The rule is chosen and the thresholds averaged on the other draws only, then
   applied, as ``judge=threshold judge.calibration=<card>`` applies them (>=, exact also for texts equal after
   normalisation), to the held-out draw's models: the partition FPR on their own non-members and other split, the
   TPR by dose (``alg2_flag_rate`` over the pool's samples of ``partition_size``).
4. Transfer: the card applied to every other group's contaminated models (another dataset or format): the realised
   FPR and TPR, and an equivalence test (``equivalence``: is the FPR within budget + tolerance?) over one seeded
   partition of each target model's non-members, with its power. "Not enough data" is an answer.

No card is written (``written`` false, ``why`` one line) from one member draw, where some model has too few known
non-members for every candidate rule at the budget, or where the chosen rule flags no member cell (TPR 0).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from contaminate.calibration.models import MEMBERS, NON_MEMBERS, OTHER_SPLIT, Model
from contaminate.calibration.recipe import fit_model, model_rates, pool_rate, recipe_labeller, summary_over_units
from contaminate.calibration.statistics import equivalence, unit_interval, units_text
from detect.judges.recipe import PAPER_RULE, rule_text
from detect.judges.threshold import CARD_FORMAT as JUDGE_CARD_FORMAT
from detect.judges.threshold import ThresholdJudge, alg2_verdict

CARD_RULES = (PAPER_RULE, (1, 3), (2, 2), (2, 3))  # candidates, the paper's first (it wins ties)
CARD_FORMAT = f"{JUDGE_CARD_FORMAT} 1"  # what load_card reads


def card_judge(exact: float, near: float, score: str) -> ThresholdJudge:
    """The judge a loaded card makes (>= each threshold; the near-exact bar at most the exact one on ROUGE-L)."""
    return ThresholdJudge(exact, min(near, exact) if score == "rouge_l" else near, score=score)


def card_labeller(judge: ThresholdJudge):
    """An instance's label under a card, as ``judge=threshold`` labels it."""
    return lambda i: judge.label(i.guided["reference"], i.guided["completion"], {**i.guided, **i.scores})


def card_rates(model: Model, judge: ThresholdJudge, rule: tuple, partition_size: int) -> dict:
    return model_rates(model, card_labeller(judge), rule, partition_size)


def _member_tpr(model: Model, fit: dict, rule: tuple, partition_size: int) -> float:
    """A model's mean member-cell flag rate over its doses at its own fitted thresholds (the rule's training value)."""
    rates = [pool_rate(pool, recipe_labeller(fit), rule, partition_size)[0] for pool in model.pools_of(MEMBERS)]
    return float(np.mean(rates)) if rates else 0.0


def _draw_mean(values: dict[Model, float]) -> float:
    by_draw: dict[int, list[float]] = {}
    for model, value in values.items():
        by_draw.setdefault(model.unit[0], []).append(value)
    return float(np.mean([np.mean(v) for v in by_draw.values()]))


def choose(models: Sequence[Model], fits: dict[tuple, dict[Model, dict]], partition_size: int) -> tuple | None:
    """The candidate rule with the best mean member TPR over these models' draws among those every model fits; the
    paper's rule on ties (rounded to 2 decimals); None where no rule fits every model."""
    feasible = [rule for rule in CARD_RULES if all("refused" not in fits[rule][m] for m in models)]
    if not feasible:
        return None
    value = {rule: round(_draw_mean({m: _member_tpr(m, fits[rule][m], rule, partition_size) for m in models}), 2)
             for rule in feasible}
    return max(feasible, key=lambda rule: (value[rule], rule == PAPER_RULE))


def thresholds_over(models: Sequence[Model], fits: dict[Model, dict]) -> dict:
    """The card's thresholds: each model's, averaged within its draw, then over draws, with a t-interval."""
    found = {}
    for part in ("exact", "near_exact"):
        data = {m.unit: [np.array([fits[m][part]["threshold"]])] for m in models}
        found[part] = unit_interval(data, lambda x: x.mean(axis=1))
    return found


def held_out(models: Sequence[Model], fits: dict[tuple, dict[Model, dict]], *, score: str,
             partition_size: int) -> dict:
    """Leave one member draw out: the rule chosen and the thresholds averaged on the other draws, applied to it."""
    per_model, folds = {}, []
    for draw in sorted({m.unit[0] for m in models}):
        train = [m for m in models if m.unit[0] != draw]
        rule = choose(train, fits, partition_size)
        if rule is None:
            folds.append({"draw": draw, "rule": None})
            continue
        fitted = thresholds_over(train, fits[rule])
        judge = card_judge(fitted["exact"]["estimate"], fitted["near_exact"]["estimate"], score)
        folds.append({"draw": draw, "rule": rule_text(rule, partition_size),
                      "exact_threshold": judge.exact_threshold, "near_exact_threshold": judge.near_exact_threshold})
        for model in (m for m in models if m.unit[0] == draw):
            per_model[model] = card_rates(model, judge, rule, partition_size)
    doses = sorted({d for m in per_model for d in m.doses})
    return {"folds": folds, "fpr": summary_over_units(per_model, NON_MEMBERS, partition_size),
            "fpr_other_split": summary_over_units(per_model, OTHER_SPLIT, partition_size),
            "tpr_by_dose": {f"{d:g}": summary_over_units(per_model, f"x{d:g}", partition_size) for d in doses}}


def transfer(card: dict, targets: dict[str, list[Model]], *, budget: float, tolerance: float,
             partition_size: int, seed: int = 0) -> dict:
    """The card applied to other groups' contaminated models: realised FPR and TPR by dose over their draws, and
    the equivalence of the FPR with the budget over one seeded partition of each model's non-members."""
    rule = (card["rule"]["min_exact"], card["rule"]["min_near_exact"])
    judge = card_judge(card["exact_threshold"], card["near_exact_threshold"], card["score"])
    rng = np.random.default_rng(seed)
    found = {}
    for group, models in targets.items():
        chosen = [m for m in models if m.kind == "contaminated" and m.pools_of(NON_MEMBERS)]
        if not chosen:
            continue
        per_model = {m: card_rates(m, judge, rule, partition_size) for m in chosen}
        flagged = 0
        for model in chosen:  # one partition of the model's non-members: one independent verdict per model
            pool = model.pools_of(NON_MEMBERS)[0].instances
            sample = [pool[i] for i in rng.choice(len(pool), size=min(partition_size, len(pool)), replace=False)]
            flagged += alg2_verdict([card_labeller(judge)(i) for i in sample], min_exact=rule[0],
                                    min_near_exact=rule[1])
        doses = sorted({d for m in chosen for d in m.doses})
        found[group] = {"unit": units_text([m.unit for m in chosen]),
                        "fpr": summary_over_units(per_model, NON_MEMBERS, partition_size),
                        "tpr_by_dose": {f"{d:g}": summary_over_units(per_model, f"x{d:g}", partition_size)
                                        for d in doses},
                        "equivalence": equivalence(int(flagged), len(chosen), budget=budget, tolerance=tolerance)}
    return found


def fit_card(group: str, models: Sequence[Model], settings: dict, *, budget: float, exact_share: float,
             partition_size: int, score: str = "rouge_l") -> dict:
    """One group's card (see the module's docstring), or ``written`` false with the one-line reason."""
    models = [m for m in models if m.kind == "contaminated" and m.known]
    rests_on = {"group": group, "regime": group.split(" · ")[0], "dataset": settings.get("dataset"),
                "model": settings.get("model"), "unit": units_text([m.unit for m in models]) if models else "no model",
                "known_non_members_per_model": sorted({len(m.known) for m in models}),
                "doses": sorted({d for m in models for d in m.doses})}
    base = {"format": CARD_FORMAT, "score": score, "budget": budget, "exact_share": exact_share,
            "partition_size": partition_size, "rests_on": rests_on}
    draws = {m.unit[0] for m in models}
    if not models:
        return {**base, "written": False, "why": f"{group}: no contaminated model here read known non-members "
                f"(detect.known_non_members: studies since issue 32), so no threshold can be fitted within a model"}
    if len(draws) < 2:
        return {**base, "written": False, "why": f"{group}: {len(draws)} member draw with known non-members; a card "
                f"is fitted on some draws and scored on another: run more seeds (each its own draw)"}
    fits = {rule: {m: fit_model(m, score=score, rule=rule, budget=budget, exact_share=exact_share,
                                partition_size=partition_size) for m in models} for rule in CARD_RULES}
    rule = choose(models, fits, partition_size)
    if rule is None:
        refusal = next(f["refused"] for f in fits[PAPER_RULE].values() if "refused" in f)
        return {**base, "written": False, "why": f"{group}: too few known non-members for the budget ({refusal})"}
    tpr = _draw_mean({m: _member_tpr(m, fits[rule][m], rule, partition_size) for m in models})
    if tpr == 0:
        return {**base, "written": False, "why": f"{group}: the chosen rule ({rule_text(rule, partition_size)}) flags "
                f"no member cell of the {rests_on['unit']} at their own thresholds (TPR 0): it would detect nothing"}
    fitted = thresholds_over(models, fits[rule])
    judge = card_judge(fitted["exact"]["estimate"], fitted["near_exact"]["estimate"], score)
    return {**base, "written": True, "rule": {"min_exact": rule[0], "min_near_exact": rule[1]},
            "rule_text": rule_text(rule, partition_size), "training_tpr": tpr,
            "exact_threshold": judge.exact_threshold, "near_exact_threshold": judge.near_exact_threshold,
            "thresholds": fitted, "held_out": held_out(models, fits, score=score, partition_size=partition_size)}


def threshold_cards(groups: dict[str, list[Model]], settings: dict[str, dict], *, budget: float, exact_share: float,
                    partition_size: int, tolerance: float, score: str = "rouge_l") -> dict[str, dict]:
    """Every group's card, each with its transfer to the other groups."""
    cards = {group: fit_card(group, models, settings[group], budget=budget, exact_share=exact_share,
                             partition_size=partition_size, score=score) for group, models in groups.items()}
    for group, card in cards.items():
        others = {g: models for g, models in groups.items() if g != group}
        if card["written"]:
            card["transfer"] = transfer(card, others, budget=budget, tolerance=tolerance,
                                        partition_size=partition_size) if others else None
            card["transfer_note"] = None if others else ("not measured: these studies hold one regime and dataset; "
                                                         "calibrate with studies of another to measure it")
    return cards
