"""What ``python -m contaminate.calibrate`` writes besides calibration.json, from a ``Calibration``: calibration.md,
the dose-response table (CSV and markdown) and the plots (ROC curves; each partition-level detector's detection
rate against exposure, with intervals over member draws).

A condition is every setting of a study but its seed; the table has one row per condition and shows the
settings that vary between conditions. A detector's TPR in a row is its rate on that condition's
contaminated x members pool (pooled over seeds), its FPR the mean over the condition's clean pools.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from contaminate.calibration.partition_level import pools_of
from contaminate.calibration.result import Calibration
from contaminate.calibration.statistics import Unit, auc, share_floor, unit_interval, unit_label, units_text
from contaminate.reports.calibration_product import product_sections
from contaminate.reports.calibration_regimes import error_bars, regime_details, regime_headline
from detect.detectors import labelled
from detect.markdown import interval_text, table
from detect.markdown import row as markdown_row

EXPOSURE = "exposures"  # exposures where a study counted them, else epochs (studies.condition_of)
MAX_DOSE_VARIANTS = 3  # conditions per dose beyond which the pooled dose-response plot is skipped


def verdict_labels() -> dict[str, str]:
    """The partition-level detectors' verdicts as the studies ran them on whole pools (from the registry), each
    with how it reads a partition."""
    from detect.detectors import registry

    return {name: text for cls in registry().values() if cls.level == "partition"
            for name, text in cls.verdict_labels.items()}


def rule_name(rule: tuple[int | None, int | None] | None) -> str:
    if rule is None:
        return "none"
    k_exact, k_near = rule
    parts = [f">= {k_exact} exact" if k_exact else "", f">= {k_near} near-exact" if k_near else ""]
    return " or ".join(p for p in parts if p)


def positive_pools(result: Calibration) -> set[tuple[str, str, str]]:
    """The pools holding members, keyed as the detectors' per-pool rates are: (condition, cell, model)."""
    return {key for key, positions in pools_of(result.instances).items()
            if result.instances[positions[0]].positive}


def detectors(result: Calibration) -> dict[str, dict]:
    """Per detector: its per-pool flag rates, keyed (condition, cell). The names are the table's columns."""
    paper_rule = result.paper_rule
    found = {f"alg1_{score}": block["per_pool"] for score, block in result.alg1.items()}
    found["alg2_default"] = result.alg2["default"]["rules"][paper_rule]["per_pool"]
    found["alg2_calibrated"] = result.alg2["calibrated"]["rules"][paper_rule]["per_pool"]
    if result.rule is not None:
        rule = (result.rule["min_exact"], result.rule["min_near_exact"])
        if rule != paper_rule:
            found["alg2_calibrated_rule"] = result.alg2["calibrated"]["rules"][rule]["per_pool"]
    for name in verdict_labels():  # as the studies ran them, on whole pools
        if name in result.partition_detectors["verdicts"]:
            found[name] = result.partition_detectors["verdicts"][name]["per_pool"]
    return found


def varying(conditions: dict[str, dict]) -> list[str]:
    """The settings that differ between conditions (the dataset and exposure always shown)."""
    fields = list(dict.fromkeys(k for settings in conditions.values() for k in settings))
    shown = [k for k in fields if len({str(s.get(k)) for s in conditions.values()}) > 1
             and k != "epochs"]  # the exposures column carries the dose of the epochs regime too
    return ["dataset", EXPOSURE] + [k for k in shown if k not in ("dataset", EXPOSURE)]


def dose_response_rows(result: Calibration) -> list[dict]:
    """One row per condition: settings that vary, instance AUCs, and every detector's TPR and FPR."""
    instances, conditions = result.instances, result.conditions
    columns = varying(conditions)
    by_condition = defaultdict(list)
    for instance in instances:
        by_condition[instance.condition].append(instance)
    rates = detectors(result)
    positive = positive_pools(result)
    units = {unit_label(i.unit): i.unit for i in instances}
    rows = []
    for key, settings in conditions.items():
        members = by_condition[key]
        row = {column: settings.get(column) for column in columns}
        row["studies"] = len({i.study for i in members})
        row["models"] = len({i.unit for i in members})
        row["positives"] = sum(i.positive for i in members)
        row["negatives"] = len(members) - row["positives"]
        labels = [i.positive for i in members]
        for score in result.instance:
            if 0 < sum(labels) < len(labels):
                row[f"auc_{score}"] = auc([i.scores[score] for i in members if i.positive],
                                         [i.scores[score] for i in members if not i.positive])
        for name, per_pool in rates.items():
            tpr = [rate for pool, rate in per_pool.items() if pool[0] == key and pool in positive]
            fpr = [rate for pool, rate in per_pool.items() if pool[0] == key and pool not in positive]
            row[f"tpr_{name}"] = float(np.mean(tpr)) if tpr else None
            row[f"fpr_{name}"] = float(np.mean(fpr)) if fpr else None
            # the TPR over member draws with its interval (the figure's points and bars): each model's flag rate on
            # its own members, averaged within its draw, a t-interval over draws with the recipe's floor; with one
            # model a draw (seeds set apart as draws) it is tpr_ itself
            found = tpr_over_draws({pool: rate for pool, rate in per_pool.items()
                                    if pool[0] == key and pool in positive}, units)
            row[f"tpr_{name}_draws"], row[f"tpr_{name}_low"], row[f"tpr_{name}_high"] = (
                found["estimate"], found["low"], found["high"])
        rows.append(row)
    return sorted(rows, key=lambda r: [str(r[c]) if not isinstance(r[c], (int, float)) else f"{r[c]:012.6f}"
                                       for c in columns])


def tpr_over_draws(per_pool: dict[tuple[str, str, str], float], units: dict[str, Unit]) -> dict:
    """A detector's TPR at one condition over its models' member pools ((condition, cell, model) -> flag rate): the
    mean over member draws and its t-interval (``unit_interval`` with ``share_floor``, as the recipe's TPR); no
    interval below three draws."""
    by_model = {units[pool[2]]: [np.array([rate])] for pool, rate in per_pool.items()}
    return unit_interval(by_model, lambda flags: flags.mean(axis=1), floor=share_floor)


def _format(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        # rates and AUCs read best at 2 decimals; a learning rate of 3e-4 must not print as 0.00
        return f"{value:.2g}" if 0 < abs(value) < 0.005 else f"{value:.2f}"
    return str(value)


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> list[str]:
    columns = columns or list(dict.fromkeys(k for row in rows for k in row))
    return table(columns, ([_format(row.get(c)) for c in columns] for row in rows))


def plot_roc(result: Calibration, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(5, 5))
    for score, block in result.instance.items():
        axis.plot(block["fpr"], block["tpr"], label=f"{score} (AUC {block['auc']:.2f})")
    axis.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    axis.set(xlabel="false positive rate (clean instances)", ylabel="true positive rate (members)",
             title=f"Instance ROC: {result.n_instances['positive']} positive, "
                   f"{result.n_instances['negative']} negative")
    axis.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def lines_across_doses(rows: list[dict]) -> dict[str, list[dict]]:
    """One dataset's dose-response rows as lines across exposure: {label suffix: rows by exposure}. Rows that differ
    in something other than their dose (a regime, a format) are separate lines; a planted group's name (x1, x4) only
    names its dose, so a planted run's groups make one line (not one point a line under a 40-entry legend)."""
    dose_only = (EXPOSURE, "group", "dataset", "studies", "models", "positives", "negatives")
    conditions = sorted({tuple((k, str(v)) for k, v in r.items() if k not in dose_only
                               and not k.startswith(("tpr_", "fpr_", "auc_"))) for r in rows})
    return {("" if len(conditions) == 1 else " " + ",".join(f"{k}={v}" for k, v in condition)):
            sorted((r for r in rows if all(str(r.get(k)) == v for k, v in condition)), key=lambda r: r[EXPOSURE])
            for condition in conditions}


def plot_dose_response(rows: list[dict], detector_names: list[str], path: Path) -> bool:
    """Each partition-level detector's TPR against exposure, one line a detector across doses with its 95% interval
    over member draws (none below three), its mean FPR dashed; a panel per dataset. The instance scores' dose
    response is membership.png (within each model, intervals over draws). False (and no file) if the exposure does
    not vary, or if more than MAX_DOSE_VARIANTS conditions share an exposure (a sweep over regimes: one line per
    detector and regime is unreadable here)."""
    exposures = {r[EXPOSURE] for r in rows if r.get(EXPOSURE) is not None}
    if len(exposures) < 2 or max(Counter((r["dataset"], r.get(EXPOSURE)) for r in rows).values()) > MAX_DOSE_VARIANTS:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(dataset, suffix, line) for dataset in sorted({r["dataset"] for r in rows})
              for suffix, line in lines_across_doses([r for r in rows if r["dataset"] == dataset]).items()]
    colors = {name: f"C{k % 10}" for k, name in enumerate(detector_names)}  # a detector's colour in every panel
    figure, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 1.7, 3.8), squeeze=False, sharey=True)
    for axis, (dataset, suffix, line) in zip(axes[0], panels):  # a panel per dataset and condition beyond dose
        for k, name in enumerate(detector_names):
            drawn = [r for r in line if r.get(f"tpr_{name}_draws") is not None]
            if not drawn:
                continue
            shift = 1 + 0.025 * (k - (len(detector_names) - 1) / 2)  # side by side: no bar hides another
            points = [(r[f"tpr_{name}_draws"], r.get(f"tpr_{name}_low"), r.get(f"tpr_{name}_high")) for r in drawn]
            axis.errorbar([r[EXPOSURE] * shift for r in drawn], [e for e, _, _ in points], yerr=error_bars(points),
                          color=colors[name], marker="o", markersize=3, capsize=2, label=name)
            fpr = [(r[EXPOSURE] * shift, r[f"fpr_{name}"]) for r in line if r.get(f"fpr_{name}") is not None]
            if fpr:
                axis.plot(*zip(*fpr), color=colors[name], linestyle="--", marker=".", linewidth=1)
        axis.set_title(f"{dataset}\n{suffix.strip()}" if suffix else dataset, fontsize=8)
        axis.set(ylim=(-0.03, 1.03), xlabel="exposures (or epochs)")
        axis.set_xscale("log")
        axis.set_xticks(sorted(exposures), [f"{e:g}" for e in sorted(exposures)])
        axis.minorticks_off()
        axis.grid(alpha=0.3)
    axes[0, 0].set_ylabel("partition TPR on the members\n(95% over draws; dashed: mean FPR)", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    figure.legend(handles, labels, fontsize=7, loc="center right")
    figure.tight_layout(rect=(0, 0, 1 - 1.7 / (3.6 * len(panels) + 1.7), 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def judges_section(judges: dict | None) -> list[str]:
    """The LLM judge against the threshold judges and ground truth (studies run with judge=llm only)."""
    if judges is None:
        return []
    lines = ["", "## Judges: the LLM judge, the threshold judges and the truth", "",
             f"{judges['n']} guided completions judged by an LLM ({judges['unparseable']} unparseable).", "",
             *table(["pair", "agreement", "Cohen's kappa"])]
    for pair, block in judges.items():
        if isinstance(block, dict):
            kappa = "-" if block["kappa"] is None else f"{block['kappa']:.2f}"
            lines.append(markdown_row([pair.replace("_vs_", " vs "), f"{block['agreement']:.2f}", kappa]))
    block = judges["llm_vs_default"]
    lines += ["", "LLM judge (rows) against the threshold judge with the default thresholds (columns):", "",
              *table(["", *block["classes"]], ([name, *counts] for name, counts in zip(block["classes"],
                                                                                         block["confusion"])))]
    return lines


def ranking_section(result: Calibration) -> list[str]:
    """The detectors side by side: instance scores by their AUC within each model (members against that model's own
    non-members, every dose, mean over draws), with the cross-model AUC beside it; which differences the paired tests
    support; partition statistics over study cells (cross-model). Listed by point estimate: no ranking is claimed."""
    ranking = result.ranking
    within = result.instance_within_model
    comparisons = within.get("comparisons") or {}
    supported = comparisons.get("better") or []
    lines = ["## Detectors side by side", "",
             f"Instance level, by the AUC within each model (each model's members against its own non-members, "
             f"averaged over its doses, then over {within.get('unit', 'the models')}; t-interval over draws). Listed "
             f"by point estimate, which is not a ranking: a difference is claimed only where a paired t-test over "
             f"draws, Holm-corrected over every pair, finds it. The cross-model AUC sets the members against every "
             f"clean instance, the clean base model's included: it measures fine-tuning on the format as much as "
             f"membership, and is no headline.", "",
             "Differences the paired tests support (p_Holm <= 0.05): "
             + ("; ".join(supported) if supported else comparisons.get("note") or "none") + ".", "",
             *table(["detector", "needs", "AUC within model [95% CI]", "TPR at 1% FPR within model",
                     "cross-model AUC"])]

    def within_auc(r):
        if r.get("auc_within_model") is None:
            return "-"
        if r["auc_within_model_low"] is None:
            return f"{r['auc_within_model']:.3f} (no interval: {within.get('unit', '')})"
        return interval_text(r["auc_within_model"], r["auc_within_model_low"], r["auc_within_model_high"], ".3f")

    def within_tpr(r):
        value = r.get("tpr_at_0.01_fpr_within_model")
        return "-" if value is None else f"{value:.2f}"

    lines += [markdown_row([labelled(r["detector"]), r["needs"], within_auc(r), within_tpr(r), f"{r['auc']:.3f}"])
              for r in ranking["instance"]]
    if ranking["partition"]:
        first = ranking["partition"][0]
        lines += ["", f"Partition level (is this cell contaminated?), CROSS-MODEL: over {first['n_positive']} "
                  f"contaminated and {first['n_negative']} clean study cells of every model, each statistic as the "
                  f"studies computed it: Algorithm 1 1 - p, Algorithm 2 the replica count (exact ones first), Cheat? "
                  f"the best replica ROUGE-L, the sharded test 1 - p. Cells of one model are not independent: no "
                  f"difference between these is claimed.", "",
                  *table(["detector", "needs", "cross-model AUC [cell bootstrap]", "TPR at 5% FPR"])]
        lines += [markdown_row([r["detector"], r["needs"], interval_text(r["auc"], r["auc_low"], r["auc_high"], ".3f"),
                                f"{r['tpr_at_0.05_fpr']:.2f}"]) for r in ranking["partition"]]
    return lines + [""]


def _interval(summary: dict) -> str:
    if summary["mean"] is None:
        return "-"
    return interval_text(summary["mean"], summary["low"], summary["high"])


def reference_section(sources) -> list[str]:
    """Which reference model the studies' reference ratio read (each manifest's label), and what an oracle one is."""
    from contaminate.calibration.studies import has, read_json, reference_of

    labels = Counter(reference_of(read_json(Path(study) / "manifest.json")) for study in sources
                     if has(Path(study) / "manifest.json"))
    labels.pop(None, None)  # a manifest that does not say
    if not labels:
        return []
    counts = ", ".join(f"{label} in {n} of {len(sources)} studies" for label, n in sorted(labels.items()))
    oracle = (" An oracle reference is the study's clean model, the contaminated model's own twin before the leak, "
              "which no practitioner has: reference_ratio's numbers against it are an oracle's, not a practitioner's."
              if any(label.endswith("(oracle)") for label in labels) else "")
    return [f"The reference ratio's reference model (`detect.reference_model`): {counts}.{oracle}", ""]


def write_reports(result: Calibration, out: Path) -> None:
    """calibration.md, dose_response.csv / .md and the plots of a calibration, into ``out``: the sections top to
    bottom (the product, membership within models, then the cross-model numbers)."""
    out = Path(out)
    rows = dose_response_rows(result)
    rates = detectors(result)
    with open(out / "dose_response.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        writer.writeheader()
        writer.writerows(rows)
    table_columns = [c for c in rows[0] if not c.startswith("fpr_") and not c.endswith(("_draws", "_low", "_high"))]
    (out / "dose_response.md").write_text("\n".join(markdown_table(rows, table_columns)) + "\n")
    plot_roc(result, out / "roc.png")
    has_dose_plot = plot_dose_response(rows, list(rates), out / "dose_response.png")
    lines = [*opening_lines(result),
             *product_sections(result.recipe, result.cards, result.targets["partition_fpr"]),
             *reference_section(result.sources),
             *regime_headline(result.by_regime, out),
             *regime_details(result.by_regime, out),
             *cross_model_lines(result),
             *partition_lines(result, rates),
             *judges_section(result.judges),
             *dose_lines(rows, table_columns, has_dose_plot, out)]
    (out / "calibration.md").write_text("\n".join(lines) + "\n")


def opening_lines(result: Calibration) -> list[str]:
    n = result.n_instances
    return [
        f"# Calibration from {len(result.sources)} studies: {units_text([i.unit for i in result.instances])}",
        "",
        f"The independent unit is a member draw (the models trained on it, one per training seed, are averaged "
        f"first; a clean model counts once); intervals are t-intervals over draws, none below 3 draws, and every "
        f"table says how many draws and models it rests on. {n['positive']} member instances and {n['negative']} "
        f"clean ones (each computation once), over {len(result.conditions)} conditions. Generated {result.created} "
        f"by `python -m contaminate.calibrate`.",
        ""]


def cross_model_lines(result: Calibration) -> list[str]:
    """The cross-model numbers: detectors side by side, instance AUCs against every clean instance, and the
    retired thresholds pooled across models."""
    targets, thresholds, achieved = result.targets, result.thresholds, result.achieved
    default = result.default_thresholds
    lines = [
        "# Cross-model numbers (not membership)",
        "",
        "Below, members of a contaminated model are set against every clean instance, the clean base model's "
        "included, and partition rates are averaged over every model's cells: these measure fine-tuning on the "
        "format as much as membership. The thresholds below are fitted in-sample on negatives pooled across models: "
        "kept to compare with the card, never loaded by `judge.calibration=` (it loads the card above); the "
        "membership numbers are the sections above.",
        "",
        *ranking_section(result),
        "## Instance level, cross-model: members against every clean instance",
        "",
        *table(["score", "AUC [95% CI]", "TPR at 1% FPR", "TPR at 5% FPR"]),
    ]
    for score, block in result.instance.items():
        ci = block["auc_ci"]
        lines.append(markdown_row([score, interval_text(block["auc"], ci["low"], ci["high"], ".3f"),
                                   f"{block['tpr_at_fpr']['0.01']:.2f}", f"{block['tpr_at_fpr']['0.05']:.2f}"]))
    unit = next(iter(result.instance.values()))["auc_ci"]["unit"]
    lines += ["", f"`<score>_gain` is guided minus general (an instance-level Algorithm 1). Intervals: "
              f"percentile bootstrap resampling {unit}s within each class (cross-model: for the within-model "
              f"intervals see above).", "", "![ROC](roc.png)", "",
              "## Thresholds pooled across models (in-sample, retired)", "",
              f"Chosen so that at most {targets['exact_fpr']:.1%} of negatives are labelled exact and at most "
              f"{targets['near_exact_fpr']:.1%} exact or near-exact (lowest such threshold, halfway to the next "
              f"lower score).", "",
              *table(["label", "score", "default", "its FPR / TPR", "calibrated", "FPR (target)", "TPR"]),
              markdown_row(["exact", "rouge_l", f"{default['exact_threshold']:.2f}",
                            f"{default['exact']['fpr']:.3f} / {default['exact']['tpr']:.2f}",
                            f"{thresholds['exact_threshold']:.3f}",
                            f"{achieved['exact']['fpr']:.3f} ({targets['exact_fpr']})",
                            f"{achieved['exact']['tpr']:.2f}"])]
    for score, near in achieved["near_exact"].items():
        default_near = [f"{default['near_exact_threshold']:.2f}",
                        f"{default['near_exact']['fpr']:.3f} / {default['near_exact']['tpr']:.2f}"
                        ] if score == "rouge_l" else ["-", "-"]
        lines.append(markdown_row(["exact or near-exact", score, *default_near, f"{near['threshold']:.3f}",
                                   f"{near['fpr']:.3f} ({targets['near_exact_fpr']})", f"{near['tpr']:.2f}"]))
    unattainable = [label for label, a in [("exact", achieved["exact"]), *achieved["near_exact"].items()]
                    if not a["attainable"]]
    if unattainable:
        lines += ["", f"**Not attainable for {', '.join(unattainable)}**: negatives score 1.0 (clean models "
                  f"replaying exactly, or guessable instances) more often than the target allows."]
    return lines + ["", "In-sample and pooled across models (a base model's easy negatives meet the budget for the "
                    "contaminated models' own): not a threshold to use. The card (at the top) is.", ""]


def partition_lines(result: Calibration, rates: dict) -> list[str]:
    """Partition level over random samples of one model's cell: each detector's rates, the FPR by kind of clean
    pool, Algorithm 2's rule grid and the rule the data support."""
    targets = result.targets
    paper_rule = result.alg2["default"]["rules"][result.paper_rule]
    calibrated_rule = result.alg2["calibrated"]["rules"][result.paper_rule]
    rows_partition = [(f"Algorithm 1, {score}", block, None) for score, block in result.alg1.items()]
    rows_partition += [("Algorithm 2, default thresholds (ROUGE-L 0.95 / 0.75), paper rule (1 exact / 2 near)",
                        paper_rule,
                        paper_rule["binomial_fpr"]),
                       ("Algorithm 2, calibrated thresholds, paper rule", calibrated_rule,
                        calibrated_rule["binomial_fpr"])]
    recommended = None if result.rule is None else (result.rule["min_exact"], result.rule["min_near_exact"])
    if recommended is not None and recommended != result.paper_rule:
        block = result.alg2["calibrated"]["rules"][recommended]
        rows_partition.append((f"Algorithm 2, calibrated thresholds, {rule_name(recommended)}", block,
                               block["binomial_fpr"]))
    lines = [f"## Partition level: random {targets['sample_size']}-instance samples of one model's cell", "",
             *table(["detector", "TPR [95% CI]", "FPR [95% CI]", "accuracy [95% CI]", "binomial FPR"])]
    rows_partition += [(text, result.partition_detectors["verdicts"][name], None)
                       for name, text in verdict_labels().items() if name in result.partition_detectors["verdicts"]]
    for name, block, binomial in rows_partition:
        lines.append(markdown_row([name, _interval(block["tpr"]), _interval(block["fpr"]), _interval(block["accuracy"]),
                                   "-" if binomial is None else f"{binomial:.3f}"]))
    lines += ["", f"Calibrated labels: {result.calibrated_labels}. A pool is one model's cell (never instances of "
              f"two models). TPR: mean flag rate over the {paper_rule['tpr']['n_pools']} contaminated x members "
              f"pools; FPR: over the {paper_rule['fpr']['n_pools']} clean pools (every kind of clean cell, every "
              f"model); accuracy: over all pools. Intervals: exact (Clopper-Pearson) where each pool is one sample, "
              f"else a bootstrap over pools.",
              "", "FPR by kind of clean pool:", ""]
    positive = positive_pools(result)
    cells = sorted({pool[1] for per_pool in rates.values() for pool in per_pool if pool not in positive})
    lines += table(["detector", *cells])
    for name, per_pool in rates.items():
        by_cell = [np.mean([r for (_, c, _), r in per_pool.items() if c == cell]) for cell in cells]
        lines.append(markdown_row([name, *(f"{v:.2f}" for v in by_cell)]))
    for which in ("default", "calibrated"):
        lines += rule_grid_lines(which, result.alg2[which])
    return lines + rule_lines(result, recommended, calibrated_rule)


def rule_grid_lines(which: str, block: dict) -> list[str]:
    """Algorithm 2's rule grid at one set of thresholds: TPR / FPR / binomial FPR per (min exact, min near)."""
    k_exacts = sorted({k for k, _ in block["rules"]}, key=lambda k: (k is None, k or 0))
    k_nears = sorted({k for _, k in block["rules"]}, key=lambda k: (k is None, k or 0))
    lines = ["", f"Algorithm 2 rule grid, {which} thresholds: TPR / FPR / binomial FPR "
             f"(instance rates among negatives: exact {block['instance_rates']['exact']:.3f}, "
             f"near-exact {block['instance_rates']['near_exact']:.3f})", "",
             *table(["min exact \\ min near-exact", *(k or "never" for k in k_nears)])]
    for k_exact in k_exacts:
        cells_text = []
        for k_near in k_nears:
            r = block["rules"].get((k_exact, k_near))
            cells_text.append("" if r is None else f"{r['tpr']['mean']:.2f} / {r['fpr']['mean']:.2f} / "
                                                   f"{r['binomial_fpr']:.3f}")
        lines.append(markdown_row([k_exact or "never", *cells_text]))
    return lines


def rule_lines(result: Calibration, recommended: tuple | None, paper_cal: dict) -> list[str]:
    """The rule the data support (highest TPR within the partition FPR budget), and how to set it."""
    targets = result.targets
    if recommended is None:
        verdict = (f"No rule keeps both the measured and the binomial partition FPR within "
                   f"{targets['partition_fpr']:.0%} with calibrated thresholds.")
    elif recommended == result.paper_rule:
        verdict = "The data support the paper's rule (>= 1 exact or >= 2 near-exact) with calibrated thresholds."
    else:
        block = result.alg2["calibrated"]["rules"][recommended]
        verdict = (f"The data support **{rule_name(recommended)}**: TPR {block['tpr']['mean']:.2f} at measured FPR "
                   f"{block['fpr']['mean']:.2f} (binomial {block['binomial_fpr']:.3f}), against the paper's 1/2: TPR "
                   f"{paper_cal['tpr']['mean']:.2f}, FPR {paper_cal['fpr']['mean']:.2f} "
                   f"(binomial {paper_cal['binomial_fpr']:.3f}).")
    return ["", f"**Rule.** {verdict} (Highest TPR among rules whose measured and binomial FPR stay within "
            f"{targets['partition_fpr']:.0%}.)" + ("" if recommended is None else
            f" Set it with `detect.detectors.alg2.min_exact={recommended[0] or targets['sample_size'] + 1} "
            f"detect.detectors.alg2.min_near_exact={recommended[1] or targets['sample_size'] + 1}`.")]


def dose_lines(rows: list[dict], table_columns: list[str], has_dose_plot: bool, out: Path) -> list[str]:
    """The dose-response table, and its plot where one plot can tell the conditions apart."""
    lines = ["", "## Dose response", "", *markdown_table(rows, table_columns), "",
             "TPR columns: partition detection rate of each detector on the condition's members, mean over its "
             "models; AUC: instance level within the condition, cross-model (members against every clean "
             "instance). FPRs are in dose_response.csv."]
    dose_varies = len({r.get(EXPOSURE) for r in rows} - {None}) > 1
    if has_dose_plot:
        lines += ["", "The figure: each partition-level detector's TPR by dose, mean over member draws with its 95% "
                  "t-interval over draws (none below three; dose_response.csv's tpr_*_draws, _low, _high), its mean "
                  "FPR dashed; the instance scores' dose response within each model is membership.png above.", "",
                  "![dose response](dose_response.png)"]
    else:
        (out / "dose_response.png").unlink(missing_ok=True)  # not a stale one from an earlier calibration
        if dose_varies:
            lines += ["", "More conditions than one plot can tell apart share each exposure: membership.png (at the "
                      "top) draws each regime on its own row."]
    return lines
