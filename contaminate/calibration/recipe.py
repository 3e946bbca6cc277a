"""The practitioner's recipe validated on ground truth, within each model and held out (method section 11).

    block = validate_recipe(groups, budget=0.05, partition_size=10)      # JSON-ready, per group (regime · dataset)

For every model that read known non-members (``models.py``), the recipe (``detect/judges/recipe.py``) is fitted on
that model's own guided completions of them, and scored where the model's ground truth is known and which the fit
never saw:

- the realised partition FPR: the probability that the rule flags a random ``partition_size``-instance sample of the
  model's own non-members (exactly, over the pool's samples: ``alg2_flag_rate``), and of its other-split cell; on a
  clean model (the base model, a control), of its cells; against the **stated bound** (the recipe's own number);
- the TPR by dose: the same probability on each member cell.

Each is a mean over independent units with ``unit_interval``: a contaminated model's unit is its member draw, a
clean model counts once. A per-model rate rests on a pool of a few dozen instances, so its interval is floored by
the delta method at the add-half label rate (``partition_floor``): 0 labels among 20 non-members bounds the
partition FPR only to about 0.4 on three models, and the tables say what the data can and cannot rule out.

Variants beside the headline (the paper's rule on ROUGE-L at the study's n): near-exact on ``semantic`` (a union
bound), near-exact labels only (>= 2 of 10), and fewer known non-members (``SIZES``, each the mean over ``SUBSETS``
seeded subsets of the model's known non-members), which shows how many the guarantee needs.

The logit scores get the practitioner's setting too (``logit_practitioner``): each instance score's threshold fitted
by split conformal on the suspect model's own known non-members (``conformal_threshold`` at 5% and 1%), its
instance-level FPR on the model's own non-members and other split, and its TPR by dose; and the A/A rows
(``aa_controls``): the model's non-members against its known non-members, and the labels reversed.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from contaminate.calibration.membership import over_draws, pairs_floor, pairs_mean
from contaminate.calibration.models import MEMBERS, NON_MEMBERS, OTHER_SPLIT, Model, Pool
from contaminate.calibration.partition_level import alg2_flag_rate
from contaminate.calibration.statistics import (
    auc_floor,
    auc_matrix,
    conformal_threshold,
    count_of_units,
    over_bound,
    share_interval,
    unit_interval,
)
from detect.errors import InputError
from detect.judges.recipe import PAPER_RULE, fit_recipe, label, rule_text
from detect.markdown import interval_text

SIZES = (50, 100, 200)   # fewer known non-members than a study read: how the recipe fares with what a user may have
SUBSETS = 10              # seeded subsets of each size, per model (their rates averaged)
NEAR_ONLY = (None, 2)     # near-exact labels only: the rule the recipe can bound with about 33 known non-members
LOGIT_BUDGETS = (0.05, 0.01)


def partition_floor(labelled: np.ndarray, m: int) -> float:
    """A per-model partition rate's sampling variance from its pool: the variance of the instance label rate at the
    add-half estimate p, carried through 1 - (1 - p)^m (a partition of m flags about as often as one of its
    instances is labelled, m times over), at most 1/4."""
    p = (float(np.sum(labelled)) + 0.5) / (len(labelled) + 1)
    slope = m * (1 - p) ** (m - 1)
    return min(0.25, slope ** 2 * p * (1 - p) / max(1, len(labelled)))


def fit_model(model: Model, *, score: str, rule: tuple, budget: float, exact_share: float, partition_size: int,
              known: Sequence | None = None) -> dict:
    """The recipe fitted on the model's known non-members (or a subset of them): its fit, or why it refused."""
    chosen = model.known if known is None else known
    exact = [i.exact_score for i in chosen]
    near = None if score == "rouge_l" else [i.scores[score] for i in chosen]
    try:
        return fit_recipe(exact, near, partition_size=partition_size, rule=rule, budget=budget,
                          exact_share=exact_share, score=score)
    except InputError as error:
        return {"refused": str(error), "n": len(chosen)}


def recipe_labeller(fit: dict) -> Callable:
    """An instance's label under the recipe's fitted thresholds (strictly above each)."""
    return lambda i: label(fit, i.exact_score, i.scores.get(fit["score"], i.guided.get(fit["score"])))


def pool_rate(pool: Pool, labeller: Callable, rule: tuple, partition_size: int) -> tuple[float, np.ndarray]:
    """The probability that the rule flags a random sample of the pool under these labels, and each instance's
    labelled-or-not (exact or near-exact)."""
    labels = [labeller(i) for i in pool.instances]
    n_exact, n_near = labels.count("exact"), labels.count("near_exact")
    rate = alg2_flag_rate(n_exact, n_near, len(labels) - n_exact - n_near, rule, sample_size=partition_size)
    return rate, np.array([lab != "none" for lab in labels], float)


def model_rates(model: Model, labeller: Callable, rule: tuple, partition_size: int) -> dict:
    """One model's rates under some labels: per kind of pool and per dose ("x<dose>"), (mean rate over its pools,
    the pools' labelled flags)."""
    found = {}
    for key, pools in model.pools_by_key():
        if pools:
            rates = [pool_rate(pool, labeller, rule, partition_size) for pool in pools]
            found[key] = (float(np.mean([r for r, _ in rates])), np.concatenate([f for _, f in rates]))
    return found


def summary_over_units(per_model: dict[Model, dict], key: str, partition_size: int, *,
                       clean: bool = False) -> dict | None:
    """The mean over independent units of one rate (``key``) with its interval: contaminated models by draw, clean
    models each once."""
    units = {}
    for model, rates in per_model.items():
        if key in rates and (model.kind == "clean") == clean:
            rate, flags = rates[key]
            units.setdefault(model.unit, []).append((rate, flags))
    if not units:
        return None
    data = {unit: [np.array([r for r, _ in pairs]), np.concatenate([f for _, f in pairs])]
            for unit, pairs in units.items()}
    block = unit_interval(data, lambda rates, flags: rates.mean(axis=1),
                          floor=lambda rates, flags: partition_floor(flags, partition_size))
    count = count_of_units(block["per_draw"])  # every unit flagged or not: k of n, Clopper-Pearson
    if count is not None:
        block.update(estimate=count["rate"], low=count["low"], high=count["high"], k=count["k"], n=count["n"],
                     method=count["method"])
    labelled = np.concatenate([v[1] for v in data.values()])
    block.update(labelled=int(labelled.sum()), instances=int(labelled.size))
    if clean:
        block["unit"] = f"{len(units)} clean model{'s' * (len(units) != 1)}"
    return block


def validate_config(models: Sequence[Model], *, score: str, rule: tuple, budget: float, exact_share: float,
                    partition_size: int, size: int | None = None, seed: int = 0) -> dict:
    """The recipe with one score and rule, fitted on each model's known non-members (all, or ``SUBSETS`` subsets of
    ``size``), scored on its pools: the stated bound, the realised FPR and the TPR by dose over units."""
    per_model, refused, bounds, fitted_on, thresholds, own = {}, [], [], [], {}, []
    rng = np.random.default_rng(seed)
    for model in models:
        if not model.known or (size is not None and size > len(model.known)):
            continue
        subsets = [None] if size is None else [
            [model.known[i] for i in rng.choice(len(model.known), size=size, replace=False)] for _ in range(SUBSETS)]
        fits = [fit_model(model, score=score, rule=rule, budget=budget, exact_share=exact_share,
                          partition_size=partition_size, known=subset) for subset in subsets]
        if "refused" in fits[0]:
            refused.append(fits[0]["refused"])
            continue
        evaluated = [model_rates(model, recipe_labeller(fit), rule, partition_size) for fit in fits]
        per_model[model] = {key: (float(np.mean([e[key][0] for e in evaluated])), evaluated[0][key][1])
                            for key in evaluated[0]}
        bounds.append(fits[0]["bound"])
        own.append(fits[0].get("conditional"))
        fitted_on.append(fits[0]["n"])
        thresholds[model.label] = {"exact": fits[0]["exact"]["threshold"],
                                   "near_exact": fits[0]["near_exact"]["threshold"]}
    doses = sorted({d for m in per_model for d in m.doses})
    stated = max(bounds) if bounds else None
    fprs = {key: summary_over_units(per_model, pool, partition_size, clean=key == "fpr_clean_models")
            for key, pool in (("fpr", NON_MEMBERS), ("fpr_other_split", OTHER_SPLIT), ("fpr_clean_models", "clean"))}
    for block in fprs.values():  # a count of models flagged, held against the stated bound
        if block is not None and block.get("method") == "Clopper-Pearson" and stated is not None:
            block["p_over_bound"] = over_bound(block["k"], block["n"], stated)
    return {
        "score": score, "rule": {"min_exact": rule[0], "min_near_exact": rule[1]},
        "rule_text": rule_text(rule, partition_size), "size": size, "subsets": None if size is None else SUBSETS,
        "fitted_on": sorted(set(fitted_on)), "stated_bound": stated,
        # the training-conditional view of one fit (detect/judges/recipe.py conditional), the worst over the models
        "own_fit": own_fit(own),
        "refused": sorted(set(refused)), "n_refused": len(refused),
        **fprs,
        "tpr_by_dose": {f"{d:g}": summary_over_units(per_model, f"x{d:g}", partition_size) for d in doses},
        "per_model": {model.label: {key: rate for key, (rate, _) in rates.items()}
                      for model, rates in per_model.items()},
        "thresholds": thresholds if size is None else None,  # each model's own (a subset's vary: not kept)
    }


def own_fit(found: Sequence[dict | None]) -> dict | None:
    """The models' fits' training-conditional views, the worst of each number: P(a fit's own FPR > budget) and the
    FPR a fit stays under with probability 1 - delta."""
    found = [c for c in found if c]
    if not found:
        return None
    over = [c["p_over_budget"] for c in found if c["p_over_budget"] is not None]
    return {"p_over_budget": max(over) if over else None, "quantile": max(c["quantile"] for c in found),
            "delta": found[0]["delta"]}


def configs(scores: Sequence[str]) -> list[tuple[str, tuple, int | None]]:
    """(score, rule, size): the headline (ROUGE-L, the paper's rule, every known non-member), then the variants."""
    found = [("rouge_l", PAPER_RULE, None)]
    if "semantic" in scores:
        found.append(("semantic", PAPER_RULE, None))
    found.append(("rouge_l", NEAR_ONLY, None))
    found += [("rouge_l", rule, size) for size in SIZES for rule in (PAPER_RULE, NEAR_ONLY)]
    return found


def _instance_rates(values: Sequence[float], threshold: float) -> np.ndarray:
    return (np.asarray(values, float) > threshold).astype(float)


def logit_names(models: Sequence[Model]) -> set[str]:
    """The instance scores every model's known non-members carry, but the judge's (ROUGE-L, semantic: the recipe's)
    and Algorithm 1's gains."""
    names = set.intersection(*({n for n in i.scores if not n.endswith("_gain")} for m in models for i in m.known))
    return names - {"rouge_l", "semantic"}


def logit_practitioner(models: Sequence[Model], *, budgets: Sequence[float] = LOGIT_BUDGETS) -> dict:
    """Each instance score's practitioner threshold: split conformal on the suspect model's own known non-members,
    scored on its own non-members and other split (FPR) and on each member cell (TPR), per budget."""
    contaminated = [m for m in models if m.kind == "contaminated" and m.known]
    if not contaminated:
        return {}
    names = logit_names(contaminated)
    found: dict = {}
    for name in sorted(names):
        by_budget = {}
        for budget in budgets:
            rates: dict[str, dict] = {}
            fitted_on = []
            for model in contaminated:
                threshold = conformal_threshold([i.scores[name] for i in model.known], budget)
                fitted_on.append(threshold["n"])
                for key, pools in model.pools_by_key():
                    if key == "clean":
                        continue
                    flags = [_instance_rates([i.scores[name] for i in p.instances if name in i.scores],
                                             threshold["threshold"]) for p in pools]
                    if flags and sum(f.size for f in flags):
                        rates.setdefault(key, {}).setdefault(model.unit, []).append(np.concatenate(flags))
            block = {"fitted_on": sorted(set(fitted_on)), "guarantee": f"<= {budget:g} per clean instance"}
            for key, units in rates.items():
                block[key] = share_interval({unit: np.concatenate(flags) for unit, flags in units.items()})
            by_budget[f"{budget:g}"] = block
        found[name] = by_budget
    return found


def aa_controls(models: Sequence[Model], *, alpha: float = 0.05) -> dict:
    """The A/A rows of the logit scores (issue 47): within each contaminated model, two pools that differ only where
    a detector should find nothing. ``non_members v known``: its own never-trained non-members against its known
    non-members (exchangeable by design: AUC 0.5, and a one-sided Mann-Whitney test at ``alpha`` flags about that
    share of models); ``reversed``: the labels reversed, the non-members against the lowest dose's members (a
    membership test run backwards must not flag). Each: the AUC over units, and the models flagged (k of n)."""
    contaminated = [m for m in models if m.kind == "contaminated" and m.known and m.pools_of(NON_MEMBERS)]
    if not contaminated:
        return {}
    names = logit_names(contaminated)

    def values(instances, name: str) -> np.ndarray:
        return np.array([i.scores[name] for i in instances if name in i.scores], float)

    found: dict = {}
    for name in sorted(names):
        rows = {}
        for row, second in (("non_members v known", lambda m: m.known),
                            ("reversed", lambda m: [i for p in m.pools_of(MEMBERS) if m.doses and
                                                    p.dose == m.doses[0] for i in p.instances])):
            data: dict = {}
            flags = []
            for model in contaminated:
                first = values([i for p in model.pools_of(NON_MEMBERS) for i in p.instances], name)
                other = values(second(model), name)
                if first.size and other.size:
                    data.setdefault(model.unit, []).extend([first, other])
                    flags.append((model.unit, bool(mannwhitneyu(first, other, alternative="greater").pvalue <= alpha)))
            if data:
                rows[row] = {"auc": unit_interval(data, pairs_mean(auc_matrix), floor=pairs_floor(auc_floor)),
                             "flagged": over_draws(flags), "alpha": alpha}
        found[name] = rows
    return found


def precheck_models(models: Sequence[Model]) -> dict | None:
    """The A/A pre-check a practitioner can run (detect/exchangeability.py), within each contaminated model: its own
    non-members against its known non-members under the reference model, which saw neither (its bare-text loss is
    ``loss_raw - reference_ratio_raw``); the AUC over draws and the models the rule warns on (k of n). None where the
    scores lack the reference ratio."""
    from detect.exchangeability import departure, reference_loss, rule_text, verdict

    def base(instances) -> np.ndarray | None:
        if not instances or not all("loss_raw" in i.scores and "reference_ratio_raw" in i.scores for i in instances):
            return None
        return np.array([reference_loss(i.scores["loss_raw"], i.scores["reference_ratio_raw"]) for i in instances])

    data, flags = {}, []
    for model in (m for m in models if m.kind == "contaminated" and m.known and m.pools_of(NON_MEMBERS)):
        judged = base([i for p in model.pools_of(NON_MEMBERS) for i in p.instances])
        known = base(model.known)
        if judged is None or known is None:
            continue
        data.setdefault(model.unit, []).extend([judged, known])
        flags.append((model.unit, verdict({"loss": departure(known, judged)})["warn"]))
    if not flags:
        return None
    return {"auc": unit_interval(data, pairs_mean(auc_matrix), floor=pairs_floor(auc_floor)),
            "warned": over_draws(flags), "rule": rule_text()}


def validate_recipe(groups: dict[str, list[Model]], *, budget: float, exact_share: float, partition_size: int,
                    seed: int = 0) -> dict:
    """Per group (regime · dataset): every config's validation, and the logit scores' practitioner thresholds."""
    found = {}
    for group, models in groups.items():
        models = [m for m in models if m.known]
        if not models:
            continue
        scores = set.intersection(*(set(i.scores) for m in models for i in m.known))
        found[group] = {
            "models": {"contaminated": sum(m.kind == "contaminated" for m in models),
                       "clean": sum(m.kind == "clean" for m in models),
                       "known_non_members": sorted({len(m.known) for m in models})},
            "configs": [validate_config(models, score=score, rule=rule, budget=budget, exact_share=exact_share,
                                        partition_size=partition_size, size=size, seed=seed)
                        for score, rule, size in configs(sorted(scores))],
            "logit": logit_practitioner(models), "aa": aa_controls(models), "precheck": precheck_models(models)}
    return found


def headline(block: dict) -> dict:
    """The recipe's headline config of a group's validation (ROUGE-L, the paper's rule, every known non-member)."""
    return block["configs"][0]


def rates_text(summary: dict | None, fmt: Callable[[float], str] = lambda v: f"{v:.2f}") -> str:
    """"0.02 [0.00, 0.31]" (t over draws), "2/3 0.67 [0.09, 0.99] (Clopper-Pearson; p 0.006 over the bound)" (every
    unit flagged or not), or "0.02 (no interval: 2 draws)" for a ``summary_over_units`` block."""
    if summary is None or summary.get("estimate") is None:
        return "-"
    if summary.get("low") is None:
        return f"{fmt(summary['estimate'])} (no interval: {summary['unit']})"
    interval = interval_text(*(fmt(summary[key]) for key in ("estimate", "low", "high")), spec="")
    if summary.get("method") == "Clopper-Pearson":  # k of n models, each flagged or not
        p = summary.get("p_over_bound")
        against = "" if p is None else f"; p {p:.3f} over the bound"
        return f"{summary['k']}/{summary['n']} {interval} (Clopper-Pearson{against})"
    return interval
