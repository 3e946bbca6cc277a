"""calibration.md's opening sections: the lab's product. The practitioner's recipe validated within each model (what a
user with known non-members runs, and how its stated bound held) and the threshold card (what a user without them
loads, and what it rests on), from calibration.json's ``recipe`` and ``cards`` blocks."""

from __future__ import annotations

import math

from contaminate.calibration.recipe import rates_text
from contaminate.reports.calibration_regimes import fraction, interval
from detect.detectors import labelled
from detect.markdown import row as markdown_row
from detect.markdown import table


def _bound(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _with_counts(summary: dict | None) -> str:
    """A rate with its interval and the instances labelled under it: "0.02 [0.00, 0.31] (1/60)"."""
    if summary is None:
        return "-"
    return f"{rates_text(summary)} ({summary['labelled']}/{summary['instances']})"


def recipe_section(recipe: dict, budget: float) -> list[str]:
    lines = ["## The practitioner's recipe, validated within each model", "",
             f"What a user with known non-members runs (`python -m detect ... judge=recipe "
             f"judge.known_non_members=<file>`): Algorithm 2's thresholds fitted on the suspect model's own guided "
             f"completions of n known non-members, the lowest order statistics whose exact partition-level FPR bound "
             f"stays within the budget ({budget:g}) under exchangeability (detect/judges/recipe.py states the "
             f"formula). Here each model is fitted on its own known non-members (`sample.n_heldout`) and scored where "
             f"the fit never looked: its own non-members and other split (realised FPR) and each member cell (TPR), a "
             f"clean model on its own cells. A rate is the probability that a random partition of the cell is "
             f"flagged; the mean over independent units (a contaminated model's member draw; a clean model once) "
             f"[95% t-interval over draws, at least as wide as each cell's instance-level sampling error; where "
             f"every unit's rate is 0 or 1 (a partition that is the whole pool), k/n of the units with its exact "
             f"Clopper-Pearson interval and, for an FPR, the one-sided binomial p of k or more at the stated bound]; "
             f"(labelled / instances) counts the instances labelled exact or near-exact. The stated bound is marginal "
             f"(over the known non-members and the partition together): a unit's realised rate may exceed it; their "
             f"mean should not. One fit's own: the training-conditional view of a single fit (its FPR given the known "
             f"non-members it was fitted on), P(above the budget) and the FPR it stays under with probability 0.9, "
             f"the worst over the models.", ""]
    for group, block in recipe.items():
        models = block["models"]
        configs = block["configs"]
        doses = sorted({d for c in configs for d in c["tpr_by_dose"]}, key=float)
        lines += [f"### {group}", "",
                  f"{models['contaminated']} contaminated and {models['clean']} clean model(s); known non-members a "
                  f"model: {', '.join(map(str, models['known_non_members']))}.", "",
                  *table(["score", "rule", "known non-members", "stated bound", "one fit's own",
                          "FPR, own non-members", "FPR, other split", "FPR, clean models",
                          *(f"TPR x{d}" for d in doses), "refused"])]
        for config in configs:
            size = "all" if config["size"] is None else f"{config['size']} ({config['subsets']} subsets)"
            fitted = "/".join(map(str, config["fitted_on"])) or "-"
            lines.append(markdown_row([config["score"], config["rule_text"], size if config["size"] else fitted,
                                       _bound(config["stated_bound"]), _own(config.get("own_fit")),
                                       _with_counts(config["fpr"]), _with_counts(config["fpr_other_split"]),
                                       _with_counts(config["fpr_clean_models"]),
                                       *(_with_counts(config["tpr_by_dose"].get(d)) for d in doses),
                                       config["n_refused"] or "-"]))
        refusals = sorted({r for c in configs for r in c["refused"]})
        if refusals:
            lines += ["", "Refused (the recipe's own one-line answer where n is too small):", "",
                      *(f"- {r}" for r in refusals)]
        lines += ["", *logit_lines(block["logit"]), "", *aa_lines(block.get("aa") or {}), "",
                  *precheck_lines(block.get("precheck"))]
    return lines


def _own(found: dict | None) -> str:
    """"P 0.35 over, <= 0.081 at 0.9" (a fit's own FPR; "-" where none was fitted)."""
    if not found:
        return "-"
    over = "" if found["p_over_budget"] is None else f"P {found['p_over_budget']:.2f} over, "
    return f"{over}<= {found['quantile']:.3f} at {1 - found['delta']:g}"


def logit_lines(logit: dict) -> list[str]:
    """The logit scores' practitioner thresholds: split conformal on the model's own known non-members."""
    if not logit:
        return []
    budgets = sorted({b for blocks in logit.values() for b in blocks}, key=float, reverse=True)
    doses = sorted({k[1:] for blocks in logit.values() for block in blocks.values() for k in block
                    if k.startswith("x")}, key=float)
    lines = ["Every instance score at the practitioner's threshold: split conformal on the suspect model's own known "
             "non-members (a new clean instance is flagged with probability <= the budget), its instance-level FPR "
             "on the model's own non-members and other split, and its TPR by dose; mean over draws [95% t-interval] "
             "(flagged / instances). A score read on the leak's own rendering is an oracle reading (a practitioner "
             "does not know the leak's format); `_raw` reads the bare text.", "",
             *table(["score", "budget", "fitted on", "FPR, own non-members", "FPR, other split",
                     *(f"TPR x{d}" for d in doses)])]

    def cell(summary: dict | None) -> str:
        return "-" if summary is None else f"{rates_text(summary)} ({summary['k']}/{summary['n']})"

    for name, blocks in logit.items():
        for budget in budgets:
            block = blocks[budget]
            lines.append(markdown_row([labelled(name), budget, "/".join(map(str, block["fitted_on"])),
                                       cell(block.get("non_members")), cell(block.get("other_split")),
                                       *(cell(block.get(f"x{d}")) for d in doses)]))
    return lines


def aa_lines(aa: dict) -> list[str]:
    """The A/A rows: pools that differ only where a detector should find nothing (recipe.py ``aa_controls``)."""
    if not aa:
        return []
    rows = list(dict.fromkeys(row for blocks in aa.values() for row in blocks))
    lines = ["A/A rows: within each contaminated model, its never-trained non-members against its known non-members "
             "(exchangeable by design: AUC 0.5), and the labels reversed (the non-members against the lowest dose's "
             "members); the AUC over draws [95% t-interval] and the models a one-sided Mann-Whitney test at 0.05 "
             "flags (k of n). A flag rate well above 5% on the first says the two pools are not exchangeable.", "",
             *table(["score", *(f"{row}: {what}" for row in rows for what in ("AUC", "flagged"))])]
    for name, blocks in aa.items():
        lines.append(markdown_row([labelled(name), *(text for row in rows for text in (
            (interval(blocks[row]["auc"]), fraction(blocks[row]["flagged"])) if row in blocks else ("-", "-")))]))
    return lines


def precheck_lines(found: dict | None) -> list[str]:
    """The A/A pre-check a practitioner can run before trusting the thresholds (recipe.py ``precheck_models``)."""
    if not found:
        return []
    return [f"The A/A pre-check a practitioner can run (detect/exchangeability.py): within each contaminated model, "
            f"its non-members against its known non-members under the reference model, which saw neither (bare-text "
            f"loss); {found['rule']}. AUC {interval(found['auc'])} over draws; models warned "
            f"{fraction(found['warned'])}.", ""]


def card_section(cards: dict) -> list[str]:
    lines = ["## The threshold card", "",
             "What a user with no known non-members loads (`judge=threshold judge.calibration=<card.json>`): the "
             "recipe's thresholds of each contaminated model, fitted on that model's own known non-members (never "
             "another model's, never pooled), averaged within member draws and then over draws [95% t-interval over "
             "draws]; the rule chosen among >= 1 or 2 exact / >= 2 or 3 near-exact by TPR. Its error rates are "
             "measured, not guaranteed: leaving one member draw out, the rule is chosen and the thresholds averaged "
             "on the other draws, then applied to the held-out draw's models. Transfer: the card applied to the "
             "models of another regime or dataset, with an equivalence test of FPR <= budget + tolerance over one "
             "partition of each model's non-members.", ""]
    for group, card in cards.items():
        lines += [f"### {group}", ""]
        if not card["written"]:
            lines += [f"**No card**: {card['why']}", ""]
            continue
        rests, thresholds, held = card["rests_on"], card["thresholds"], card["held_out"]
        doses = sorted(held["tpr_by_dose"], key=float)
        lines += [f"Rests on {rests['unit']} ({rests['model']}, {rests['dataset']}, {rests['regime']}), "
                  f"{'/'.join(map(str, rests['known_non_members_per_model']))} known non-members a model, doses "
                  f"{', '.join(f'x{d:g}' for d in rests['doses'])}; budget {card['budget']:g}, partitions of "
                  f"{card['partition_size']}, near-exact score {card['score']}.", "",
                  *table(["", "value [95% CI over draws]"], [
                      ["exact threshold (>=)", rates_text(thresholds["exact"], _three)],
                      ["near-exact threshold (>=)", rates_text(thresholds["near_exact"], _three)],
                      ["rule (chosen on training draws)", card["rule_text"]],
                      ["held-out partition FPR, own non-members", _with_counts(held["fpr"])],
                      ["held-out partition FPR, other split", _with_counts(held["fpr_other_split"])],
                      *([f"held-out TPR x{d}", _with_counts(held["tpr_by_dose"][d])] for d in doses)]), ""]
        folds = "; ".join(f"draw {f['draw']} out: {f['rule'] or 'no rule'}" + (
            "" if f["rule"] is None else f", {f['exact_threshold']:.3f} / {f['near_exact_threshold']:.3f}")
            for f in held["folds"])
        lines += [f"Folds: {folds}.", ""]
        if card.get("transfer"):
            lines += ["Transfer to the other groups' contaminated models:", "",
                      *table(["applied to", "models", "partition FPR, own non-members",
                              "equivalence (FPR <= budget + tolerance)", "power", "TPR by dose"])]
            for target, block in card["transfer"].items():
                test = block["equivalence"]
                tprs = ", ".join(f"x{d} {rates_text(s)}" for d, s in block["tpr_by_dose"].items()) or "-"
                lines.append(markdown_row([target, block["unit"], _with_counts(block["fpr"]),
                                           f"{test['verdict']} ({test['k']}/{test['n']} partitions flagged)",
                                           f"{test['power']:.2f}", tprs]))
            lines.append("")
        elif card.get("transfer_note"):
            lines += [f"Transfer: {card['transfer_note']}.", ""]
    return lines


def _three(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.3f}"


def product_sections(recipe: dict, cards: dict, budget: float) -> list[str]:
    """calibration.md's first sections: the recipe validated, then the cards; nothing where no study read known
    non-members (a note says so)."""
    if not recipe and not any(card["rests_on"]["known_non_members_per_model"] for card in cards.values()):
        return ["## The recipe and the threshold card", "",
                "Not measured: no study here read known non-members (`detect.known_non_members`, studies after "
                "issue 32), so neither the recipe nor a card can be fitted within a model.", ""]
    return [*recipe_section(recipe, budget), *card_section(cards)]
