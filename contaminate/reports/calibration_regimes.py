"""calibration.md's regime sections and their plots, from calibration.json's ``by_regime`` block
(``contaminate/calibration/regimes.py`` and ``membership.py``): membership within each model (the headline), held-out
thresholds (practitioner and oracle), the studies' verdicts per model, calibrated scores, Algorithm 2's rule
everywhere, transfer as an equivalence test, and what is missing. Every table says how many models it rests on."""

from __future__ import annotations

import math
from pathlib import Path

from detect import markdown
from detect.detectors import labelled

VERDICT_NAMES = {"alg1_rouge_l": "Alg. 1 (ROUGE-L)", "alg1_semantic": "Alg. 1 (semantic)",
                 "alg2": "Alg. 2 (default thresholds, paper's rule)", "cheat_strict": "Cheat? strict",
                 "cheat_lenient": "Cheat? lenient", "sharded_likelihood": "sharded test"}
# Detector families, one panel each in the membership plot: few lines a panel.
FAMILIES = {"likelihood": ("loss", "zlib", "min_k", "min_k_plus"), "reference": ("reference_ratio", "dc_pdd"),
            "Time Travel (guided completion)": ("rouge_l", "semantic", "rouge_l_gain", "semantic_gain"),
            "Time Travel, leak reading (oracle)": ("rouge_l_leak", "semantic_leak")}


def registered_labels() -> dict[str, str]:
    """Every registered detector's verdicts with how each reads a partition (a detector's ``verdict_labels``)."""
    from detect.detectors import registry

    return {name: text for cls in registry().values() for name, text in cls.verdict_labels.items()}


def _num(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "never"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def interval(block: dict | None, digits: int = 2) -> str:
    """"0.81 [0.62, 0.95]" for a ``unit_interval`` block (t over draws), "0.81 [0.62, 0.95]†" where the instance-level
    floor set its width (``FLOOR_NOTE`` says so under the table); "0.81 (2 draws: no interval)" below three draws."""
    if not block or block.get("estimate") is None:
        return "-"
    if block.get("low") is None:
        draws = block.get("n_draws")
        return _num(block["estimate"], digits) + ("" if draws is None else
                                                 f" ({draws} draw{'s' * (draws != 1)}: no interval)")
    floored = FLOORED if str(block.get("method", "")).startswith("normal floor") else ""
    return markdown.interval_text(*(_num(block[key], digits) for key in ("estimate", "low", "high")), spec="") + floored


FLOORED = "†"  # beside an interval whose width the instance-level floor set, not the t over draws
FLOOR_NOTE = ("† the interval's width is the normal floor of the instance-level sampling variance (wider there than "
              "the t over runs, which sets every other).")


def fraction(block: dict | None) -> str:
    """"3/6 [0.12, 0.88]" for k of n models with their interval; "2/6 (no interval: 2 draws (6 models))" where the
    models' draws are too few; a clean-model block adds its cells: "0/1 [0.00, 0.97] (0/12 cells)"."""
    if not block or not block.get("n"):
        return "-"
    cells = f" ({block['cells']['k']}/{block['cells']['n']} cells)" if block.get("cells") else ""
    if block.get("low") is None:
        return f"{block['k']}/{block['n']} (no interval: {block.get('unit', 'too few draws')}){cells}"
    return f"{block['k']}/{block['n']} [{block['low']:.2f}, {block['high']:.2f}]{cells}"


def _instance_rate(block: dict | None) -> str:
    """A mean share over draws with its interval, and the instances flagged: "(0/40)" says how little was seen."""
    if not block or block.get("estimate") is None:
        return "-"
    return f"{interval(block)} ({block['k']}/{block['n']})"


def _rule_text(rule: dict) -> str:
    return f">= {rule['min_exact'] or 'never'} exact or >= {rule['min_near_exact'] or 'never'} near-exact"


def _doses(block: dict) -> list[str]:
    return [f"{d:g}" for d in block["exposures"] if d]


def membership_section(by_regime: dict) -> list[str]:
    """The headline: per regime, each instance score's AUC within each model per dose, and TPR at 1% FPR."""
    lines = ["## Membership within each model", "",
             "Each contaminated model's members against its own non-members (same split, same model): the AUC and "
             "the TPR at 1% FPR, averaged over a draw's models, then over draws, with 95% t-intervals over draws "
             "(none below 3 draws). With n non-members per model an FPR below 1/n flags none "
             "of them, so with 10 the TPR at 1% (and at 0.1%) is the share of members above the top non-member.", ""]
    for regime, block in by_regime["regimes"].items():
        doses = [d for d in _doses(block) if d in block["membership"]]
        if not doses:
            continue
        units = "; ".join(f"x{d}: {block['membership'][d]['unit']}, {block['membership'][d]['members_per_model']} "
                          f"members and {block['membership'][d]['non_members_per_model']} non-members per model"
                          for d in doses)
        lines += [f"### {regime}", "", f"Rests on {units}.", "",
                  *markdown.table(["score", *(f"AUC at x{d}" for d in doses),
                                   *(f"TPR at 1% FPR, x{d}" for d in doses)])]
        names = sorted({n for d in doses for n in block["membership"][d]["scores"]})
        for name in names:
            aucs = [interval(block["membership"][d]["scores"].get(name, {}).get("auc")) for d in doses]
            tprs = [interval(block["membership"][d]["scores"].get(name, {}).get("tpr_at_0.01")) for d in doses]
            lines.append(markdown.row([labelled(name), *aucs, *tprs]))
        lines += ["", blind_text(block["blind_baseline"]), ""]
    return lines


def blind_text(blind: dict | None) -> str:
    if blind is None:
        return "Blind baseline: not in these studies' summaries."
    auc = (f"{blind['auc']:.2f}" if blind["low"] is None
           else markdown.interval_text(blind["auc"], blind["low"], blind["high"]))
    critical = [c for c in blind["critical_auc"] if c is not None]
    rejectable = "" if not critical else (
        f"; the smallest AUC a draw's sample could have rejected at p < 0.05 (its permutation null's 95th percentile): "
        f"{min(critical):.2f}-{max(critical):.2f}")
    why = blind.get("interval") or "these summaries hold no per-text scores"
    interval_note = "" if blind["low"] is not None else f" (no interval: {why})"
    texts = ", ".join(map(str, sorted(set(blind["n_texts"]))))
    biased = " (**biased**: the split is separable without a model)" if blind["biased"] else ""
    return (f"Blind baseline (a classifier on the texts alone, members vs non-members): AUC {auc} over "
            f"{blind['n_draws']} draw{'s' * (blind['n_draws'] != 1)} of {texts} texts{interval_note}{rejectable}"
            f"{biased}.")


def thresholds_section(by_regime: dict) -> list[str]:
    budget = by_regime["targets"]["partition_fpr"]
    lines = ["## Held-out thresholds fitted on other models (variants)", "",
             f"Each detector's threshold fitted on the other draws' models (one draw: the other seeds') with the "
             f"split-conformal rule at {budget:.0%} (the k-th smallest of n clean scores, k = ceil(0.95 (n + 1)): a "
             f"clean score exchangeable with them is flagged with probability <= {budget:.0%}; with fewer than 19 "
             f"clean scores nothing can be flagged), then scored on the held-out models: TPR on their members, FPR on "
             f"their own non-members. Both settings fit on negatives of other models, which are not exchangeable with "
             f"the held-out model's own: variants, not a practitioner's threshold (that is fitted on the suspect "
             f"model's own known non-members: the recipe's section above). other_models: clean models' cells and the "
             f"other split; oracle: the other contaminated models' non-members too. An FPR far over {budget:.0%} is "
             f"the contaminated model scoring its own non-members higher than the other models' clean instances. A "
             f"fold that cannot flag (too few clean scores for the guarantee) flags nothing, and its models count as "
             f"not detected. Instance-level rates: the mean share over draws [95% t-interval over draws] (flagged / "
             f"instances).", ""]
    for regime, block in by_regime["regimes"].items():
        doses = _doses(block)
        for level, text in (("cell", "cell level (one statistic per 10-instance cell; k of n models)"),
                            ("instance", "instance level (share of instances flagged, mean over models)")):
            held = block["thresholds"][level]
            if not held["detectors"]:
                continue
            lines += [f"### {regime}: {text}", "",
                      f"Rests on {block['unit']}; folds: leave one {held['folds']} out ({held['n_folds']} folds).", "",
                      *markdown.table(["detector", "setting", "clean scores fitted on", "folds that cannot flag",
                                       *(f"{rate} x{d}" for d in doses for rate in ("TPR", "FPR"))])]
            for name, settings in held["detectors"].items():
                for setting, result in settings.items():
                    fitted = result["fitted_on"]
                    cells = []
                    for d in doses:
                        rates = result["by_dose"].get(d, {})
                        show = fraction if level == "cell" else _instance_rate
                        cells += [show(rates.get("tpr")), show(rates.get("fpr"))]
                    lines.append(markdown.row([labelled(name), setting, f"{min(fitted)}-{max(fitted)}",
                                               f"{result['unflaggable_folds']} of {len(fitted)}", *cells]))
            lines.append("")
    return lines


def verdicts_section(by_regime: dict) -> list[str]:
    lines = ["## The studies' verdicts, per model", "",
             "Each partition-level verdict as the studies ran it on their 10-instance cells: k of n models flagged "
             "with exact (Clopper-Pearson) 95% intervals; TPR on the member cells, FPR on the same models' "
             "non-member cells per dose, then over every other-split cell and every clean model's cell.", ""]
    names = {**registered_labels(), **VERDICT_NAMES}  # the table's own short names first, then each detector's
    for regime, block in by_regime["regimes"].items():
        doses = _doses(block)
        lines += [f"### {regime}", "", f"Rests on {block['unit']}.", "",
                  *markdown.table(["verdict", *(f"{rate} x{d}" for d in doses for rate in ("TPR", "FPR")),
                                   "FPR other split", "FPR clean models"])]
        for name, rates in block["verdicts"].items():
            cells = []
            for d in doses:
                at = rates["by_dose"].get(d, {})
                cells += [fraction(at.get("tpr")), fraction(at.get("fpr"))]
            role = rates["fpr_by_role"]
            lines.append(markdown.row([names.get(name, name), *cells, fraction(role["other_split"]),
                                       fraction(role["clean_model"])]))
        alg2 = block["alg2"]
        rule = "none keeps the budget" if alg2["rule"] is None else _rule_text(alg2["rule"])
        lines += ["", f"Algorithm 2 calibrated here ({alg2['labels']}): exact >= {alg2['exact_threshold']:.3f}, "
                  f"near-exact >= {alg2['near_exact_threshold']:.3f} ({alg2['score']}); rule: {rule}; TPR "
                  f"{_num(alg2['tpr'])}, FPR {_num(alg2['fpr'])} over each model's cells (the paper's rule with these "
                  f"thresholds: TPR {_num(alg2['paper_rule']['tpr'])}, FPR {_num(alg2['paper_rule']['fpr'])}).", ""]
    return lines


def calibrated_section(by_regime: dict) -> list[str]:
    lines = ["## Calibrated scores (Platt scaling)", "",
             "Each instance score mapped to a probability of membership by a logistic fit on planted examples (the "
             "other folds' members and non-members), scored on the held-out models by Brier score (lower is better; "
             "0.25 is a constant 0.5 on these balanced sets).", ""]
    for regime, block in by_regime["regimes"].items():
        scores = block["calibrated"]["scores"]
        if not scores:
            continue
        lines += [f"### {regime}", "", f"Rests on {block['unit']}; folds: leave one {block['calibrated']['folds']} "
                  f"out.", "", *markdown.table(["score", "Brier (held out)", "mean p, members", "mean p, non-members",
                                                 "n"])]
        lines += [markdown.row([name, f"{r['brier']:.3f}", f"{r['mean_member']:.2f}", f"{r['mean_non_member']:.2f}",
                                r["n"]]) for name, r in sorted(scores.items(), key=lambda item: item[1]["brier"])]
        lines.append("")
    return lines


def everywhere_section(by_regime: dict) -> list[str]:
    budget = by_regime["targets"]["partition_fpr"]
    lines = ["## Algorithm 2's rule in every regime", "",
             "Over each model's cells. The default thresholds are the lab's threshold judge (ROUGE-L 0.95 / 0.75), "
             "not the paper's judge (GPT-4, few-shot).", ""]
    for which, text in (("calibrated", "thresholds calibrated over every study"),
                        ("default", "the default thresholds")):
        block = by_regime["alg2_everywhere"][which]
        if block["rule"] is None:
            lines.append(f"- With {text}: **no rule** (>= k exact or >= k near-exact, k <= 5) keeps partition FPR "
                         f"<= {budget:.0%} in every regime.")
            continue
        rates = ", ".join(f"{regime} {_num(r['tpr'])} / {_num(r['fpr'])}" for regime, r in block["by_regime"].items())
        lines.append(f"- With {text}: **{_rule_text(block['rule'])}** keeps partition FPR <= {budget:.0%} in every "
                     f"regime with the best mean TPR (TPR / FPR: {rates}). Rules within budget everywhere: "
                     f"{', '.join(block['safe_rules'])}.")
    return lines + [""]


VERDICT_MARK = {"within": "=", "over": "✗", "not enough data": "?", "no data": ""}


def transfer_section(by_regime: dict) -> list[str]:
    table = by_regime.get("transfer")
    if not table:
        return ["## Transfer", "", "Needs studies of two regimes; these have one.", ""]
    budget, tolerance = table["budget"], table["tolerance"]
    lines = ["## Transfer: thresholds and calibrated scores fitted in one regime, used in another", "",
             f"Each detector's oracle threshold (split conformal at {budget:.0%} on every clean cell of the row "
             f"regime) applied to the column regime's models. The question is equivalence: is the FPR on their own "
             f"non-member cells within {budget:.0%} + {tolerance:.0%}? '=' within (exact one-sided binomial test, "
             f"p <= 0.05), '✗' over budget beyond chance (one-sided lower bound > {budget:.0%}), '?' not enough data "
             f"to tell. Power: the chance of concluding '=' if the true FPR were {budget:.0%}, at that many cells.",
             "", *markdown.table(["detector", "= within", "✗ over", "? not enough data", "largest power"])]
    for name, rows in table["thresholds"].items():
        cells = [cell for row in rows.values() for cell in row["to"].values()]
        counts = {v: sum(c["verdict"] == v for c in cells) for v in ("within", "over", "not enough data")}
        lines.append(markdown.row([name, counts["within"], counts["over"], counts["not enough data"],
                                   f"{max((c['power'] for c in cells), default=0):.2f}"]))
    regimes = list(by_regime["regimes"])
    for name, rows in table["thresholds"].items():
        lines += ["", f"### {name}: FPR k/n (verdict) · TPR k/n", "",
                  *markdown.table(["fitted in \\ applied to", *regimes])]
        for source in regimes:
            if source not in rows:
                continue
            cells = []
            for target in regimes:
                cell = rows[source]["to"].get(target)
                if cell is None or not cell["n"]:
                    cells.append("-")
                    continue
                tpr = cell["tpr"]
                cells.append(f"{cell['k']}/{cell['n']} ({VERDICT_MARK[cell['verdict']]}) · "
                             + ("-" if not tpr["n"] else f"{tpr['k']}/{tpr['n']}"))
            lines.append(markdown.row([source, *cells]))
    if table["calibrated"]:
        lines += ["", "Platt-calibrated scores fitted on the row regime's planted examples, Brier score on the "
                  "column regime's models (compare each regime's held-out Brier above):", ""]
        for name, rows in table["calibrated"].items():
            pairs = ", ".join(f"{source} -> {target} {cell['brier']:.3f}" for source, row in rows.items()
                              for target, cell in row.items())
            lines.append(f"- {name}: {pairs}")
    return lines + ["", "![transfer](transfer.png)", ""]


def missing_section(by_regime: dict) -> list[str]:
    missing, skipped = by_regime["missing"], by_regime["skipped"]
    if not (missing["grid"] or missing.get("unfinished") or skipped):
        return []
    lines = ["## Missing", ""]
    if missing.get("unfinished"):
        lines += [f"Started and not finished (killed, failed or running): {len(missing['unfinished'])} studies", "",
                  *(f"- {path}" for path in missing["unfinished"]), ""]
    if missing["grid"]:
        lines += [f"Cells of the grid (every combination of the formats, backgrounds, backends, datasets, exposures, "
                  f"draws and seeds above) with no finished study: {len(missing['grid'])}", "",
                  *(f"- {cell}" for cell in missing["grid"]), ""]
    if skipped:
        lines += ["Regimes not calibrated:", "", *(f"- {regime}: {why}" for regime, why in skipped.items()), ""]
    return lines


def error_bars(points: list[tuple[float, float | None, float | None]]) -> list[list[float]]:
    """matplotlib's ``yerr`` for (estimate, low, high) points: the distances below and above each estimate, 0 where
    a point has no interval (fewer than three draws)."""
    return [[e - (low if low is not None else e) for e, low, _ in points],
            [(high if high is not None else e) - e for e, _, high in points]]


def plot_membership(by_regime: dict, path: Path) -> bool:
    """Within-model AUC against exposures with 95% intervals: a row per regime, a column per detector family, at
    most four lines a panel. False (no file) when no regime has a membership block."""
    regimes = {r: b for r, b in by_regime["regimes"].items() if b["membership"]}
    if not regimes:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = {family: names for family, names in FAMILIES.items()
                if any(n in m["scores"] for b in regimes.values() for m in b["membership"].values() for n in names)}
    figure, axes = plt.subplots(len(regimes), len(families), figsize=(3.8 * len(families), 2.8 * len(regimes) + 0.8),
                                squeeze=False, sharey=True)
    for row, (regime, block) in enumerate(regimes.items()):
        doses = sorted(float(d) for d in block["membership"] if d != "-")
        for column, (family, names) in enumerate(families.items()):
            axis = axes[row, column]
            for k, name in enumerate(names):
                points = [(d, block["membership"][f"{d:g}"]["scores"].get(name, {}).get("auc")) for d in doses]
                points = [(d * (1 + 0.04 * (k - 1.5)), a) for d, a in points if a and a["estimate"] is not None]
                if not points:
                    continue
                x = [d for d, _ in points]
                y = [a["estimate"] for _, a in points]
                axis.errorbar(x, y, yerr=error_bars([(a["estimate"], a["low"], a["high"]) for _, a in points]),
                              marker="o", markersize=3, capsize=2, label=name)
            axis.axhline(0.5, color="grey", linestyle=":", linewidth=1)
            axis.set_xscale("log")
            axis.set_xticks(doses, [f"{d:g}" for d in doses])
            axis.minorticks_off()
            axis.set_ylim(-0.02, 1.02)
            axis.grid(alpha=0.3)
            axis.set_title(f"{regime}\n{family}" if column == 0 or row == 0 else regime, fontsize=8)
            if row == 0:
                axis.legend(fontsize=7, loc="lower right")
        axes[row, 0].set_ylabel(f"AUC within model\n({next(iter(block['membership'].values()))['unit']})", fontsize=8)
    for axis in axes[-1]:
        axis.set_xlabel("exposures")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def plot_transfer(by_regime: dict, path: Path) -> bool:
    """One heatmap per detector: the FPR of its threshold fitted in the row regime on the column regime's
    non-member cells, marked with the equivalence verdict. False (no file) without a transfer table."""
    table = by_regime.get("transfer")
    if not table:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    regimes = list(by_regime["regimes"])
    names = list(table["thresholds"])
    columns = min(4, len(names))
    rows = math.ceil(len(names) / columns)
    size = max(2.6, 0.28 * len(regimes) + 1.4)
    figure, axes = plt.subplots(rows, columns, figsize=(size * columns, size * rows + 0.6), squeeze=False)
    image = None
    for position, (axis, name) in enumerate(zip(axes.flat, names)):
        matrix = np.full((len(regimes), len(regimes)), np.nan)
        for i, source in enumerate(regimes):
            for j, target in enumerate(regimes):
                cell = table["thresholds"][name].get(source, {}).get("to", {}).get(target)
                if cell and cell["n"]:
                    matrix[i, j] = cell["rate"]
                    axis.text(j, i, VERDICT_MARK[cell["verdict"]], ha="center", va="center", fontsize=8)
        image = axis.imshow(matrix, vmin=0, vmax=0.5, cmap="Reds")
        axis.set_title(name, fontsize=9)
        bottom, left = position + columns >= len(names), position % columns == 0
        axis.set_xticks(range(len(regimes)), regimes if bottom else [], rotation=90, fontsize=6)
        axis.set_yticks(range(len(regimes)), regimes if left else [], fontsize=6)
    for axis in list(axes.flat)[len(names):]:
        axis.axis("off")
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.6, label="FPR on the column regime's non-members at the row regime's "
                                                          "threshold\n(= within budget + tolerance; ✗ over; ? not "
                                                          "enough data)")
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return True


def regime_headline(by_regime: dict | None, out: Path) -> list[str]:
    """calibration.md's first sections: membership within each model (writes membership.png), held-out thresholds,
    the verdicts per model."""
    if not by_regime or not by_regime["regimes"]:
        return []
    plotted = plot_membership(by_regime, out / "membership.png")
    return [*membership_section(by_regime), *(["![membership within each model](membership.png)", ""] if plotted
                                              else []),
            *thresholds_section(by_regime), *verdicts_section(by_regime)]


def regime_details(by_regime: dict | None, out: Path) -> list[str]:
    """calibration.md's later sections: calibrated scores, Algorithm 2 everywhere, transfer (transfer.png),
    missing."""
    if not by_regime:
        return []
    if not by_regime["regimes"]:
        return missing_section(by_regime)
    for stale in ("regimes_dose_response.png",):  # written by calibrations before the within-model statistics
        (out / stale).unlink(missing_ok=True)
    if not plot_transfer(by_regime, out / "transfer.png"):
        (out / "transfer.png").unlink(missing_ok=True)
    return [*calibrated_section(by_regime), *everywhere_section(by_regime), *transfer_section(by_regime),
            *missing_section(by_regime)]
