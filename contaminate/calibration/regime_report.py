"""calibration.md's regime sections and their two plots, from calibration.json's ``by_regime`` block
(``contaminate/calibration/regimes.py``): the headline (lowest exposure detected and AUC at the highest exposure,
detector x regime, with the blind baseline), one table per regime, Algorithm 2's rule per regime and everywhere,
threshold transfer (regime x regime FPR / TPR, over-budget cells in bold), and what is missing."""

from __future__ import annotations

import math
from pathlib import Path

VERDICT_NAMES = {"alg1_rouge_l": "Alg. 1 (ROUGE-L), as run", "alg1_semantic": "Alg. 1 (semantic), as run",
                 "alg2": "Alg. 2 (paper rule and thresholds), as run", "cheat_strict": "Cheat? strict, as run",
                 "cheat_lenient": "Cheat? lenient, as run", "sharded_likelihood": "sharded test, as run"}


def _num(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "never"
    if isinstance(value, float) and value.is_integer() and digits == 0:
        return str(int(value))
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _dose(value) -> str:
    return "-" if value is None else f"{value:g}"


def _rule_text(rule: dict) -> str:
    return f">= {rule['min_exact'] or 'never'} exact or >= {rule['min_near_exact'] or 'never'} near-exact"


def _lowest(value) -> str:
    return "none" if value is None else f"{value:g}"


def auc_of(block: dict, name: str) -> float | None:
    """A detector's AUC at the regime's highest exposure (instance scores) or over cells (partition statistics)."""
    if name in block["auc_at_top"]:
        return block["auc_at_top"][name]
    return block["partition"].get(name, {}).get("auc")


def headline(by_regime: dict) -> list[str]:
    """Detector x regime: the lowest exposure detected at partition FPR <= budget, and the AUC at the highest."""
    regimes = by_regime["regimes"]
    if not regimes:
        return []
    names = sorted({n for block in regimes.values() for n in block["detection"]["statistics"]})
    verdicts = sorted({n for block in regimes.values() for n in block["detection"]["verdicts"]})
    budget = by_regime["targets"]["partition_fpr"]
    lines = ["| detector | " + " | ".join(regimes) + " |", "|---|" + "---|" * len(regimes)]
    for name in names:
        cells = []
        for block in regimes.values():
            detected = block["detection"]["statistics"].get(name)
            lowest = "-" if detected is None else _lowest(detected["lowest_exposures"])
            cells.append(f"{lowest} · {_num(auc_of(block, name))}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name in verdicts:
        cells = []
        for block in regimes.values():
            verdict = block["detection"]["verdicts"].get(name)
            if verdict is None:
                cells.append("-")
            elif verdict["fpr"] is not None and verdict["fpr"] > budget + 1e-12:
                cells.append(f"FPR **{verdict['fpr']:.2f}**")
            else:
                cells.append(_lowest(verdict["lowest_exposures"]))
        lines.append(f"| {VERDICT_NAMES.get(name, name)} | " + " | ".join(cells) + " |")
    blind = [block["blind_baseline"] for block in regimes.values()]
    lines.append("| blind baseline (texts alone) | " + " | ".join(
        "-" if b is None else f"AUC {b['auc']:.2f} [{b['low']:.2f}, {b['high']:.2f}]" for b in blind) + " |")
    holds_at = by_regime["targets"]["holds_at"]
    return ["## Detectors across regimes", "",
            f"Each cell: the lowest exposure from which the detector flags >= {holds_at:.0%} of the contaminated "
            f"partitions at every higher dose, with its threshold set so that at most {budget:.0%} of the regime's "
            f"clean partitions (study cells: the clean model's, the contaminated model's non-members and other "
            f"split, every cell at exposures 0) are flagged ('none': not at the doses tried), then the AUC at the "
            f"regime's highest exposure (instance scores: its members against the regime's clean instances; "
            f"partition statistics: over cells, every dose). 'As run' rows are the studies' own verdicts; where "
            f"their FPR exceeds {budget:.0%} it is shown instead. A detector whose AUC does not beat the blind "
            f"baseline found nothing the texts alone do not show.", "", *lines, ""]


def regime_tables(by_regime: dict) -> list[str]:
    lines = []
    for regime, block in by_regime["regimes"].items():
        detection = block["detection"]
        doses = [d for d in block["exposures"] if d]
        lines += [f"### {regime}", "",
                  f"{block['studies']} studies, exposures {', '.join(_dose(d) for d in block['exposures'])}, seeds "
                  f"{', '.join(map(str, block['seeds']))}; {block['n_instances']['positive']} member instances "
                  f"against {block['n_instances']['negative']} clean; {block['n_cells']['positive']} contaminated "
                  f"and {block['n_cells']['clean']} clean cells.", "",
                  "| detector | AUC [95% CI] | TPR at 1% / 5% FPR | AUC at top dose | threshold at 5% cell FPR | "
                  + " | ".join(f"rate at {_dose(d)}" for d in doses) + " | lowest exposure |",
                  "|---|---|---|---|---|" + "---|" * len(doses) + "---|"]
        for name, detected in detection["statistics"].items():
            roc = block["instance"].get(name) or block["partition"].get(name)
            auc = "-" if roc is None else f"{roc['auc']:.2f} [{roc['auc_ci']['low']:.2f}, {roc['auc_ci']['high']:.2f}]"
            tpr = "-" if roc is None else f"{roc['tpr_at_fpr']['0.01']:.2f} / {roc['tpr_at_fpr']['0.05']:.2f}"
            rates = [_num(detected["rate_by_exposures"].get(_dose(d))) for d in doses]
            lines.append(f"| {name} | {auc} | {tpr} | {_num(block['auc_at_top'].get(name))} | "
                         f"{_num(detected['threshold'], 3)} | " + " | ".join(rates) + " | "
                         f"{_lowest(detected['lowest_exposures'])} |")
        for name, verdict in detection["verdicts"].items():
            rates = [_num(verdict["rate_by_exposures"].get(_dose(d))) for d in doses]
            lines.append(f"| {VERDICT_NAMES.get(name, name)} | - | - | - | FPR {_num(verdict['fpr'])} | "
                         + " | ".join(rates) + f" | {_lowest(verdict['lowest_exposures'])} |")
        blind, alg2 = block["blind_baseline"], block["alg2"]
        rule = "none keeps the budget" if alg2["rule"] is None else _rule_text(alg2["rule"])
        lines += ["", "Blind baseline: " + ("-" if blind is None else
                  f"AUC {blind['auc']:.2f} [{blind['low']:.2f}, {blind['high']:.2f}] over {blind['n_samples']} "
                  f"member / non-member samples" + (" (**biased**)" if blind["biased"] else "")) + ".",
                  f"Algorithm 2 calibrated here ({alg2['labels']}): exact >= {alg2['exact_threshold']:.3f}, "
                  f"near-exact >= {alg2['near_exact_threshold']:.3f} ({alg2['score']}); rule: {rule}; TPR "
                  f"{_num(alg2['tpr'])}, FPR {_num(alg2['fpr'])} (the paper's rule with these thresholds: TPR "
                  f"{_num(alg2['paper_rule']['tpr'])}, FPR {_num(alg2['paper_rule']['fpr'])}).", ""]
    return lines


def everywhere_section(by_regime: dict) -> list[str]:
    budget = by_regime["targets"]["partition_fpr"]
    lines = ["## Algorithm 2's rule in every regime", ""]
    for which, text in (("calibrated", "thresholds calibrated over every study"), ("paper", "the paper's thresholds")):
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


def transfer_section(by_regime: dict) -> list[str]:
    table = by_regime.get("transfer")
    if not table:
        return ["## Threshold transfer", "", "Needs studies of two regimes; these have one.", ""]
    budget = by_regime["targets"]["partition_fpr"]
    regimes = list(by_regime["regimes"])
    lines = ["## Threshold transfer", "",
             f"Each detector's threshold (at most {budget:.0%} of clean cells flagged) fitted in the row's regime and "
             f"applied in the column's: FPR / TPR over the column regime's cells (every dose pooled); **bold**: FPR "
             f"over {budget:.0%}; †: beyond sampling noise, an FPR that a threshold refitted on as few clean cells "
             f"of the column regime's own distribution reaches with probability under 5% (with 16 clean cells on "
             f"each side that is 5 of 16 flagged: below it, over budget is what chance alone gives). Algorithm 2 "
             f"carries its calibrated thresholds and rule together (a rate over instance pools: no noise bound).", "",
             "| detector | off-diagonal pairs over budget | of them beyond noise † "
             "| worst FPR (fitted in -> applied to) |", "|---|---|---|---|"]
    for name, rows in table.items():
        pairs = [(source, target, cell) for source, row in rows.items() for target, cell in row["to"].items()
                 if source != target and cell["fpr"] is not None]
        over = [p for p in pairs if p[2]["over"]]
        beyond = "-" if any(p[2].get("beyond_noise") is None for p in over) else \
            str(sum(bool(p[2]["beyond_noise"]) for p in over))
        worst = max(pairs, key=lambda p: p[2]["fpr"], default=None)
        lines.append(f"| {name} | {len(over)} of {len(pairs)} | {beyond} | " + ("-" if worst is None else
                     f"{worst[2]['fpr']:.2f} ({worst[0]} -> {worst[1]})") + " |")
    for name, rows in table.items():
        lines += ["", f"### {name}", "", "| fitted in \\ applied to | " + " | ".join(regimes) + " |",
                  "|---|" + "---|" * len(regimes)]
        for source in regimes:
            if source not in rows:
                continue
            cells = []
            for target in regimes:
                cell = rows[source]["to"].get(target)
                if cell is None or cell["fpr"] is None:
                    cells.append("-")
                    continue
                fpr = f"**{cell['fpr']:.2f}**" if cell["over"] else f"{cell['fpr']:.2f}"
                fpr += "†" if cell.get("beyond_noise") else ""
                cells.append(f"{fpr} / {_num(cell['tpr'])}")
            lines.append(f"| {source} | " + " | ".join(cells) + " |")
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
        lines += [f"Cells of the grid (every combination of the formats, backgrounds, backends, datasets, exposures "
                  f"and seeds above) with no finished study: {len(missing['grid'])}", "",
                  *(f"- {cell}" for cell in missing["grid"]), ""]
    if skipped:
        lines += ["Regimes not calibrated:", "", *(f"- {regime}: {why}" for regime, why in skipped.items()), ""]
    return lines


def plot_dose_response(by_regime: dict, path: Path) -> bool:
    """Detection rate at the 5%-FPR threshold against exposures: one panel per format (columns) and background +
    backend (rows), one line per detector. False (no file) when no regime has two doses."""
    regimes = by_regime["regimes"]
    if not any(len([d for d in b["exposures"] if d]) >= 2 for b in regimes.values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    formats = sorted({b["format"] for b in regimes.values()})
    rows = sorted({(b["background"], b["backend"]) for b in regimes.values()})
    names = sorted({n for b in regimes.values() for n in b["detection"]["statistics"]})
    colors = {name: plt.get_cmap("tab20")(k % 20) for k, name in enumerate(names)}
    figure, axes = plt.subplots(len(rows), len(formats), figsize=(3.6 * len(formats), 2.9 * len(rows) + 1.2),
                                squeeze=False, sharex=True, sharey=True)
    for (row, (background, backend)), (column, fmt) in ((r, c) for r in enumerate(rows) for c in enumerate(formats)):
        axis = axes[row, column]
        block = next((b for b in regimes.values() if (b["format"], b["background"], b["backend"]) ==
                      (fmt, background, backend)), None)
        axis.set_title(f"{fmt} / {background} / {backend}", fontsize=9)
        axis.grid(alpha=0.3)
        if block is None:
            axis.text(0.5, 0.5, "no studies", ha="center", va="center", transform=axis.transAxes, color="grey")
            continue
        for name, detected in block["detection"]["statistics"].items():
            points = sorted((float(d), r) for d, r in detected["rate_by_exposures"].items()
                            if d != "-" and r is not None)
            if points:  # each line nudged up or down a little, so that lines on top of each other stay visible
                nudge = 0.008 * (names.index(name) - len(names) / 2)
                axis.plot([x for x, _ in points], [y + nudge for _, y in points], marker="o", markersize=3,
                          color=colors[name], linestyle="-" if names.index(name) < 10 else "--", label=name)
        axis.set_xscale("log")
    for axis in axes[-1]:
        axis.set_xlabel("exposures")
    for axis in axes[:, 0]:
        axis.set_ylabel("detection rate\n(5% FPR threshold)")
    axes[0, 0].set_ylim(-0.08, 1.08)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for axis in axes.flat:  # the first panel with every line gives the legend
        more = axis.get_legend_handles_labels()
        if len(more[0]) > len(handles):
            handles, labels = more
    legend_rows = math.ceil(len(labels) / 6)
    figure.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=7)
    figure.tight_layout(rect=(0, (0.25 * legend_rows + 0.1) / figure.get_figheight(), 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def plot_transfer(by_regime: dict, path: Path) -> bool:
    """One heatmap per detector: the FPR of its threshold fitted in the row regime applied in the column regime,
    small crosses where it exceeds the budget, large rings where it is beyond sampling noise. False (no file)
    without a transfer table."""
    table = by_regime.get("transfer")
    if not table:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    regimes = list(by_regime["regimes"])
    names = list(table)
    columns = min(4, len(names))
    rows = math.ceil(len(names) / columns)
    size = max(2.6, 0.28 * len(regimes) + 1.2)
    figure, axes = plt.subplots(rows, columns, figsize=(size * columns, size * rows + 0.6), squeeze=False)
    image = None
    for position, (axis, name) in enumerate(zip(axes.flat, names)):
        matrix = np.full((len(regimes), len(regimes)), np.nan)
        over, beyond = [], []
        for i, source in enumerate(regimes):
            for j, target in enumerate(regimes):
                cell = table[name].get(source, {}).get("to", {}).get(target)
                if cell and cell["fpr"] is not None:
                    matrix[i, j] = cell["fpr"]
                    if cell["over"]:
                        (beyond if cell.get("beyond_noise") else over).append((j, i))
        image = axis.imshow(matrix, vmin=0, vmax=0.5, cmap="Reds")
        if over:
            axis.scatter(*zip(*over), marker="x", color="black", s=12, linewidths=0.8)
        if beyond:
            axis.scatter(*zip(*beyond), marker="o", facecolors="none", edgecolors="black", s=30, linewidths=0.9)
        axis.set_title(name, fontsize=9)
        # regime names on the outer panels only: a long label would run into the neighbouring panel
        bottom, left = position + columns >= len(names), position % columns == 0
        axis.set_xticks(range(len(regimes)), regimes if bottom else [], rotation=90, fontsize=6)
        axis.set_yticks(range(len(regimes)), regimes if left else [], fontsize=6)
        axis.set_xlim(-0.5, len(regimes) - 0.5)
        axis.set_ylim(len(regimes) - 0.5, -0.5)
    for axis in list(axes.flat)[len(names):]:
        axis.axis("off")
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.6,
                        label="FPR in the column regime at the row regime's threshold\n"
                              "(x: over budget; o: beyond sampling noise)")
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return True


def regime_headline(by_regime: dict | None, out: Path) -> list[str]:
    """calibration.md's first section: detectors x regimes; writes regimes_dose_response.png beside it."""
    if not by_regime or not by_regime["regimes"]:
        return []
    plotted = plot_dose_response(by_regime, out / "regimes_dose_response.png")
    return [*headline(by_regime), *(["![dose response by regime](regimes_dose_response.png)", ""] if plotted else [])]


def regime_details(by_regime: dict | None, out: Path) -> list[str]:
    """calibration.md's last sections: per regime, Algorithm 2 everywhere, transfer (transfer.png), missing."""
    if not by_regime:
        return []
    if not by_regime["regimes"]:
        return missing_section(by_regime)
    plot_transfer(by_regime, out / "transfer.png")
    return ["## By regime", "", *regime_tables(by_regime), *everywhere_section(by_regime),
            *transfer_section(by_regime), *missing_section(by_regime)]
