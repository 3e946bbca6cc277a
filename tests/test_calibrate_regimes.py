"""Calibration by regime (contaminate/calibration/regimes.py, membership.py) on hand-built study folders whose scores
give known within-model AUCs, held-out thresholds, per-model verdict rates and transfer verdicts; its bad inputs;
and a real tiny-model multirun over two formats and two seeds."""

import json

import pytest
from lean import NO_EMBEDDING, TINY_MODEL, lean

from contaminate.calibration.instance_level import rank_auc
from detect.errors import InputError

BASE = {"name": "tiny", "path": "/nowhere", "adapter": None}


def _study(folder, *, fmt: str, exposures: int, cells: dict, seed: int = 0, draw: int | None = None,
           backend: str = "full", background: str = "none", blind: float = 0.5) -> None:
    """A finished study: ``cells`` maps a cell name to (ground truth, losses of its instances); the clean model's
    cell has the same ids and prompts in every study of a draw (the draw's instances), so studies share it. A member
    cell at 4 exposures or more replays exactly (Algorithm 2 flags it)."""
    draw = seed if draw is None else draw
    folder.mkdir(parents=True)
    rows, summary_cells = [], {}
    for cell, (truth, losses) in cells.items():
        checkpoint = "clean" if cell.startswith("clean") else "contaminated"
        exact = truth == "contaminated" and exposures >= 4
        for k, loss in enumerate(losses):
            rows.append({"cell": cell, "instance_id": f"{draw}-{k}" if checkpoint == "clean" else f"{cell}-{k}",
                         "instruction": "guided", "checkpoint": checkpoint, "split": "test",
                         "prompt": f"{cell if checkpoint != 'clean' else 'clean'} {draw} {k}", "ground_truth": truth,
                         "reference": f"reference {k}", "completion": f"reference {k}" if exact else "other",
                         "rouge_l": 1.0 if exact else 0.1, "loss": loss})
        summary_cells[cell] = {"checkpoint": checkpoint, "ground_truth": truth, "n_instances": len(losses),
                               "split": "test", "instances": cell.split("_x_")[1],
                               "alg2": {"exact": len(losses) if exact else 0, "near_exact": 0, "unparseable": 0,
                                        "contaminated": exact, "min_exact": 1, "min_near_exact": 2}}
    manifest = {"base_model": BASE, "dataset": {"key": "synth_nli"}, "member_ids": [0, 1],
                "detection_ids": {"members": [0, 1]}, "format": {"name": fmt}, "detect": {"prompt_format": "raw"},
                "contaminate": {"backend": backend, "exposures": exposures, "epochs": None, "learning_rate": 3e-4},
                "seeds": {"sampling": draw, "training": seed},
                "checkpoint": {"id": f"{fmt}-{backend}-{exposures}-{draw}-{seed}"},
                "judge": {"name": "threshold"}, "regime": {"background": {"name": background}},
                "control_checkpoint": None}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "results.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    (folder / "summary.json").write_text(json.dumps({"cells": summary_cells, "blind_baseline": {
        "auc": blind, "low": blind - 0.2, "high": blind + 0.2, "biased": False, "draw": draw}}))


# Cell losses (members, non-members) per regime, dose and draw; the clean model's cell is -5 in every draw.
SWEEP = {"metadata": {1: {0: (-2.0, -4.0), 1: (-3.0, -2.5)}, 4: {0: (-1.0, -3.5), 1: (-1.0, -3.5)}},
         "dump": {1: {0: (-3.2, -2.5), 1: (-3.2, -2.5)}, 4: {0: (-0.5, -2.0), 1: (-0.5, -2.0)}}}


def _sweep(root, *, with_b4: bool = True):
    """Two regimes, metadata/none/full (A) and dump/none/full (B), at exposures 1 and 4, two member draws (seed 0):
    four models a regime, two a dose. Each cell's two instances share its loss (SWEEP)."""
    for fmt, doses in SWEEP.items():
        for exposures, draws in doses.items():
            if fmt == "dump" and exposures == 4 and not with_b4:
                continue
            for draw, (member, non_member) in draws.items():
                _study(root / f"{fmt}_x{exposures}_d{draw}", fmt=fmt, exposures=exposures, draw=draw,
                       blind=0.5 if fmt == "metadata" else 0.6,
                       cells={"contaminated_x_members": ("contaminated", [member, member]),
                              "contaminated_x_non_members": ("clean", [non_member, non_member]),
                              "clean_x_members": ("clean", [-5.0, -5.0])})


def test_rank_auc_is_sklearns_roc_auc_with_ties():
    import numpy as np
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    labels = rng.random(40) < 0.4
    scores = rng.integers(0, 5, size=40).astype(float)  # many ties
    assert rank_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))


def test_calibration_by_regime_on_hand_built_studies(tmp_path):
    from contaminate.calibrate import main

    _sweep(tmp_path / "sweep")
    # a 50% budget, so that the conformal rule can flag with 1-3 clean cells: k = ceil(0.5 (n + 1))
    out = main([str(tmp_path / "sweep"), "--transfer", "--partition-fpr", "0.5", "--out", str(tmp_path / "out")])
    block = json.loads((out / "calibration.json").read_text())["by_regime"]
    a, b = "metadata/none/full", "dump/none/full"
    assert set(block["regimes"]) == {a, b}
    regime_a, regime_b = block["regimes"][a], block["regimes"][b]
    assert regime_a["draws"] == [0, 1] and regime_a["seeds"] == [0]
    # a draw's clean-model cell is shared by its two studies: 4 contaminated + 4 non-member + 2 clean-model cells
    assert regime_a["n_cells"] == {"positive": 4, "clean": 6}

    # Membership within each model: at x1 draw 0 separates (-2 vs -4), draw 1 inverts (-3 vs -2.5): mean 0.5
    at1 = regime_a["membership"]["1"]
    assert at1["unit"] == "2 draws (2 models)" and at1["members_per_model"] == [2]
    assert at1["scores"]["loss"]["auc"]["estimate"] == 0.5
    assert at1["scores"]["loss"]["auc"]["per_unit"] == {"d0s0": 1.0, "d1s0": 0.0}
    assert at1["scores"]["loss"]["tpr_at_0.01"]["estimate"] == 0.5
    assert regime_a["membership"]["4"]["scores"]["loss"]["auc"]["estimate"] == 1.0
    assert regime_b["membership"]["1"]["scores"]["loss"]["auc"]["estimate"] == 0.0

    # Held-out thresholds at the cell level, leave one draw out. other_models: the other draw's clean cells are
    # its one clean-model cell (-5), k = 1, so t = -5 flags every cell. Oracle, draw 0 held out: fitted on
    # -5, -3.5, -2.5 (draw 1's non-members), k = 2, t = -3.5: draw 0's members (-2, -1) flagged, its non-members
    # (-4, -3.5) not; draw 1 held out: fitted on -5, -4, -3.5, t = -4: all of draw 1 flagged.
    held = regime_a["thresholds"]["cell"]
    assert held["folds"] == "draw" and held["n_folds"] == 2
    practitioner, oracle = held["detectors"]["loss"]["other_models"], held["detectors"]["loss"]["oracle"]
    assert practitioner["fitted_on"] == [1, 1] and oracle["fitted_on"] == [3, 3]
    for dose in ("1", "4"):
        assert (practitioner["by_dose"][dose]["tpr"]["k"], practitioner["by_dose"][dose]["fpr"]["k"]) == (2, 2)
        assert (oracle["by_dose"][dose]["tpr"]["k"], oracle["by_dose"][dose]["fpr"]["k"]) == (2, 1)
        assert oracle["by_dose"][dose]["fpr"]["n"] == 2
    # at the instance level the same thresholds, on instances: the oracle's FPR is a mean over models, 0.5
    instance = regime_a["thresholds"]["instance"]["detectors"]["loss"]["oracle"]["by_dose"]["1"]
    assert instance["fpr"]["estimate"] == 0.5 and instance["tpr"]["estimate"] == 1.0

    # the studies' Algorithm 2, per model: the x4 members replay (2 of 2 models), nothing clean does
    alg2 = regime_a["verdicts"]["alg2"]
    assert alg2["by_dose"]["4"]["tpr"]["k"] == 2 and alg2["by_dose"]["1"]["tpr"]["k"] == 0
    assert alg2["by_dose"]["4"]["tpr"]["low"] == pytest.approx(0.1581, abs=1e-4)  # 2 of 2: [0.16, 1]
    # 4 non-member cells of 4 models, but two draws: not 4 independent units, so no Clopper-Pearson over 4 (and two
    # draws are too few for an interval over draws)
    non = alg2["fpr_by_role"]["non_member"]
    assert (non["k"], non["n"], non["low"], non["unit"]) == (0, 4, None, "2 draws (2 models)")
    # the clean model counts once, however many cells of it the studies read (one per draw)
    clean = alg2["fpr_by_role"]["clean_model"]
    assert (clean["k"], clean["n"], clean["cells"]) == (0, 1, {"k": 0, "n": 2})

    # Transfer: A's oracle threshold (every clean cell of A: -5, -5, -4, -3.5, -3.5, -2.5 -> k = 4 of 6, t = -3.5)
    # on B's non-member cells (-2.5 x2, -2.0 x2): 4 of 4 flagged, the lower bound far above 50%? no: 4 of 4 at a
    # 50% budget + 5% tolerance is "over" only if the one-sided lower bound (0.05^(1/4) = 0.47) exceeds 0.5: it
    # does not, and 4 cells cannot show "within": not enough data
    cell = block["transfer"]["thresholds"]["loss"][a]["to"][b]
    assert block["transfer"]["thresholds"]["loss"][a]["threshold"] == -3.5
    assert (cell["k"], cell["n"], cell["verdict"]) == (4, 4, "not enough data")
    assert cell["tpr"]["k"] == 4  # B's members -3.2 and -0.5 are all above -3.5
    assert a not in block["transfer"]["thresholds"]["loss"][a]["to"]  # no diagonal: the held-out numbers cover it
    assert set(block["transfer"]["calibrated"]["loss"][a]) == {b}

    # Algorithm 2 with the default thresholds: the 4-exposure members replay exactly, nothing clean does
    default = block["alg2_everywhere"]["default"]
    assert "1/2" in default["safe_rules"]
    assert default["paper_rule_by_regime"][a] == {"tpr": 0.5, "fpr": 0.0}
    # the blind baseline: one draw per sample, pooled over the regime's two draws (no scores: no interval)
    assert regime_a["blind_baseline"]["auc"] == 0.5 and regime_b["blind_baseline"]["auc"] == 0.6
    assert regime_a["blind_baseline"]["n_draws"] == 2 and regime_a["blind_baseline"]["low"] is None
    assert block["missing"] == {"grid": [], "unfinished": []}

    report = (out / "calibration.md").read_text()
    assert "# Calibration from 8 studies: 2 draws (2 models)" in report
    # two draws: two independent units, too few for an interval, and the table says so
    assert "## Membership within each model" in report
    assert "| loss (leak's rendering: oracle) | 0.50 (2 draws: no interval) |" in report
    assert "## Held-out thresholds fitted on other models (variants)" in report
    assert "| loss (leak's rendering: oracle) | oracle | 3-3 | 0 of 2 | 2/2 [0.16, 1.00] | 1/2 [0.01, 0.99] |" in report
    assert "| Alg. 2 (default thresholds, paper's rule) | 0/2 [0.00, 0.84] |" in report
    assert "4/4 (?) · 4/4" in report and "# Cross-model numbers (not membership)" in report
    assert report.index("## Membership within each model") < report.index("# Cross-model numbers")
    assert (out / "transfer.png").stat().st_size > 0 and (out / "membership.png").stat().st_size > 0


def test_per_model_algorithm_2_rates_never_pool_two_models():
    """Each of two models has one near-exact replica among its 10 members: no model has two, so the paper's rule
    (>= 2 near-exact) flags neither; a pool mixing both models' cells would flag a sample holding both."""
    from contaminate.calibration.partition_level import alg2_flag_rate, partition_rates, pools_of
    from contaminate.calibration.studies import Instance

    instances = [Instance(study=f"s{draw}", seed=0, condition="c", cell="contaminated_x_members", positive=True,
                          guided={}, general=None, draw=draw) for draw in (0, 1) for _ in range(10)]
    instances += [Instance(study=f"s{draw}", seed=0, condition="c", cell="clean_x_members", positive=False,
                           guided={}, general=None, draw=draw) for draw in (0, 1) for _ in range(10)]
    labels = (["near_exact"] + ["none"] * 9) * 2 + ["none"] * 20
    pools = pools_of(instances)
    assert len(pools) == 4 and all(len(positions) == 10 for positions in pools.values())
    rates = partition_rates(instances, labels, pools)["rules"][(1, 2)]
    assert rates["tpr"]["mean"] == 0.0 and rates["tpr"]["interval"] == "clopper-pearson"
    # pooled over the two models (the calibration before per-model pools): a 10-sample of the 20 holds both
    # replicas with probability 9/38
    pooled = {("c", cell): [p for p, i in enumerate(instances) if i.cell == cell]
              for cell in ("contaminated_x_members", "clean_x_members")}
    assert partition_rates(instances, labels, pooled)["rules"][(1, 2)]["tpr"]["mean"] == pytest.approx(9 / 38)
    assert alg2_flag_rate(0, 2, 18, (1, 2)) == pytest.approx(9 / 38)


def test_the_headline_tables_read_calibration_json(tmp_path, capsys):
    from contaminate.calibrate import main
    from contaminate.reports import headline
    _sweep(tmp_path / "sweep")
    out = main([str(tmp_path / "sweep"), "--transfer", "--out", str(tmp_path / "out")])
    capsys.readouterr()
    headline.main([str(out)])
    printed = capsys.readouterr().out
    # within-model AUC of loss, per regime and dose: dump inverts at x1 and separates at x4
    assert "dump/none/full, 2 draws (2 models) a dose:" in printed
    assert "| loss (leak's rendering: oracle) | 0.00 (2 draws: no interval) | 1.00 (2 draws: no interval) |" in printed
    # no study here read known non-members: no card, and the table says why
    assert "no contaminated model here read known non-members" in printed


def test_a_half_finished_sweep_is_calibrated_on_what_finished_and_says_what_is_missing(tmp_path, capsys):
    from contaminate.calibrate import main

    _sweep(tmp_path / "sweep", with_b4=False)
    started = tmp_path / "sweep" / "dump_x4_d0"  # killed after it wrote its config
    (started / ".hydra").mkdir(parents=True)
    (started / "config.yaml").write_text("seed: 0\n")
    out = main([str(tmp_path / "sweep")])
    block = json.loads((out / "calibration.json").read_text())["by_regime"]
    assert block["missing"]["unfinished"] == [str(started.resolve())]
    assert block["missing"]["grid"] == ["dump/none/full synth_nli exposures 4 draw 0 seed 0",
                                        "dump/none/full synth_nli exposures 4 draw 1 seed 0"]
    assert "1 unfinished, 2 cells of the grid" in capsys.readouterr().err
    report = (out / "calibration.md").read_text()
    assert "## Missing" in report and "dump/none/full synth_nli exposures 4 draw 0 seed 0" in report
    # what finished is calibrated: B has its 1-exposure studies, where loss inverts
    assert block["regimes"]["dump/none/full"]["membership"]["1"]["scores"]["loss"]["auc"]["estimate"] == 0.0
    assert "4" not in block["regimes"]["dump/none/full"]["membership"]


def test_kept_studies_recompute_the_same_calibration(tmp_path):
    from contaminate.calibrate import main

    _sweep(tmp_path / "sweep")
    out = main([str(tmp_path / "sweep"), "--out", str(tmp_path / "out"), "--keep-studies"])
    kept = sorted(p.relative_to(out / "studies") for p in (out / "studies").rglob("*.gz"))
    assert len(kept) == 8 * 3 and str(kept[0]) == "dump_x1_d0/manifest.json.gz"
    first_report, first = (out / "calibration.md").read_text(), json.loads((out / "calibration.json").read_text())
    # as the committed folders are recomputed: from <out>/studies into <out> itself
    main([str(out / "studies"), "--out", str(out)])

    def without_timestamp(text):
        return [line for line in text.splitlines() if "Generated" not in line]

    assert without_timestamp((out / "calibration.md").read_text()) == without_timestamp(first_report)
    second = json.loads((out / "calibration.json").read_text())
    assert first["by_regime"] == second["by_regime"] and first["cards"] == second["cards"]
    assert first["recipe"] == second["recipe"] and first["cross_model_thresholds"] == second["cross_model_thresholds"]


def test_calibrate_bad_regimes_are_one_line(tmp_path):
    from contaminate.calibrate import main

    cells = {"contaminated_x_members": ("contaminated", [-1.0, -1.0]),
             "contaminated_x_non_members": ("clean", [-3.0, -3.0]), "clean_x_members": ("clean", [-5.0, -5.0])}
    _study(tmp_path / "only_a" / "x1", fmt="metadata", exposures=1, cells=cells)
    with pytest.raises(InputError, match="one model \\(draw 0, seed 0\\).*seed=0,1,2.*sample.draw=0,1,2"):
        main([str(tmp_path / "only_a")])  # one draw and one seed: no interval can be had
    _study(tmp_path / "only_a" / "x1_s1", fmt="metadata", exposures=1, seed=1, cells=cells)
    with pytest.raises(InputError, match="transfer table needs studies of two regimes.*all metadata/none/full"):
        main([str(tmp_path / "only_a"), "--transfer"])
    main([str(tmp_path / "only_a")])  # without --transfer one regime calibrates
    _study(tmp_path / "controls" / "x0", fmt="metadata", exposures=0,
           cells={"contaminated_x_members": ("clean", [-1.0, -1.0]), "clean_x_members": ("clean", [-5.0, -5.0])})
    with pytest.raises(InputError, match="no contaminated study among these: every study is at exposures 0"):
        main([str(tmp_path / "controls")])
    _study(tmp_path / "members_only" / "x1", fmt="metadata", exposures=1,
           cells={"contaminated_x_members": ("contaminated", [-1.0, -1.0])})
    with pytest.raises(InputError, match="no clean instance among these studies"):
        main([str(tmp_path / "members_only")])


@pytest.mark.slow
def test_a_tiny_regime_multirun_over_two_formats_and_two_seeds_then_calibrate(tmp_path):
    """The headline experiment's config, shrunk to the tiny random model: 2 formats x 2 seeds, then calibrate."""
    import subprocess
    import sys

    from contaminate.calibrate import main

    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "contaminate", "-m", "+experiment=regimes_cpu", *TINY_MODEL,
               "contaminate=full", "background=none", "contaminate.exposures=2", "seed=0,1",
               "format=metadata,input_only", "sample.n_members=4", "sample.n_detect=4", "sample.n_non_members=4",
               "detect.max_new_tokens=8", *lean(), *NO_EMBEDDING, f"hydra.sweep.dir={sweep}",
               f"cache_dir={tmp_path / 'cache'}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.parent.name for p in sweep.glob("full/none/*/summary.json")) == [
        "input_only_x2_s0", "input_only_x2_s1", "metadata_x2_s0", "metadata_x2_s1"]

    out = main([str(sweep), "--transfer"])
    block = json.loads((out / "calibration.json").read_text())["by_regime"]
    regimes = ["input_only/none/full", "metadata/none/full"]
    assert sorted(block["regimes"]) == regimes
    for regime in regimes:
        assert block["regimes"][regime]["seeds"] == [0, 1] and block["regimes"][regime]["draws"] == [0, 1]
        blind = block["regimes"][regime]["blind_baseline"]
        assert 0 <= blind["auc"] <= 1 and blind["n_draws"] == 2 and blind["low"] is None  # 2 draws: no interval
        assert "cross-fitted over 2 draws" in block["regimes"][regime]["alg2"]["labels"]
        assert block["regimes"][regime]["membership"]["2"]["unit"] == "2 draws (2 models)"
    for detector in ("loss", "min_k"):
        table = block["transfer"]["thresholds"][detector]
        assert all(set(table[source]["to"]) == set(regimes) - {source} for source in table)
    report = (out / "calibration.md").read_text()
    assert "## Transfer" in report and "Blind baseline (a classifier on the texts alone" in report
    assert (out / "transfer.png").stat().st_size > 0


def test_the_dose_plot_is_skipped_when_regimes_crowd_it(tmp_path):
    from contaminate.reports.calibration import MAX_DOSE_VARIANTS, plot_dose_response

    def rows(n_regimes: int) -> list[dict]:
        return [{"dataset": "synth_nli", "exposures": e, "format": f"format_{i}", "tpr_alg2": 0.5, "fpr_alg2": 0.0,
                 "tpr_alg2_draws": 0.5, "tpr_alg2_low": 0.2, "tpr_alg2_high": 0.8, "auc_loss": 0.9}
                for i in range(n_regimes) for e in (1, 4)]

    assert plot_dose_response(rows(MAX_DOSE_VARIANTS), ["alg2"], tmp_path / "few.png")
    assert (tmp_path / "few.png").stat().st_size > 0
    # one line per detector and regime: membership.png draws a row per regime instead
    assert not plot_dose_response(rows(MAX_DOSE_VARIANTS + 1), ["alg2"], tmp_path / "many.png")
    assert not (tmp_path / "many.png").exists()
    assert not plot_dose_response(rows(1)[:1], ["alg2"], tmp_path / "one_dose.png")  # nothing varies


def test_a_dose_tpr_interval_is_over_member_draws_with_the_recipes_floor():
    """tpr_over_draws by hand: a draw's models are averaged first, then a t-interval over draws whose half-width is at
    least 1.96 sqrt(sum of share_floor / D^2), share_floor([r]) = p (1 - p) at p = (r + 0.5) / 2."""
    from scipy.stats import t as student_t

    from contaminate.reports.calibration import tpr_over_draws

    def pools(rates: dict) -> tuple[dict, dict]:
        return ({("x4", "contaminated_x_members", f"d{d}s{s}"): r for (d, s), r in rates.items()},
                {f"d{d}s{s}": (d, s) for d, s in rates})

    every = tpr_over_draws(*pools({(1, 0): 1.0, (2, 0): 1.0, (3, 0): 1.0, (4, 0): 1.0}))
    # all four draws flagged: no spread between draws, the floor alone: 1.96 sqrt(4 x 0.1875 / 16) = 0.424
    assert every["estimate"] == 1.0 and every["high"] == 1.0
    assert every["low"] == pytest.approx(1 - 1.959964 * (4 * 0.1875 / 16) ** 0.5)
    # draw 1's two seeds average to 0.5 before the draws are: mean (0.5 + 1 + 1) / 3, t(2) over the draws' values
    mixed = tpr_over_draws(*pools({(1, 0): 1.0, (1, 1): 0.0, (2, 0): 1.0, (3, 0): 1.0}))
    assert mixed["estimate"] == pytest.approx(5 / 6) and mixed["n_draws"] == 3 and mixed["n_models"] == 4
    assert mixed["low"] == pytest.approx(5 / 6 - student_t.ppf(0.975, 2) * (1 / 12 / 3) ** 0.5)
    assert mixed["high"] == 1.0
    two = tpr_over_draws(*pools({(1, 0): 1.0, (2, 0): 0.0}))
    assert two["estimate"] == 0.5 and two["low"] is None and two["high"] is None  # no interval below three draws


def test_a_planted_runs_groups_make_one_line_across_doses_and_formats_make_their_own():
    from contaminate.reports.calibration import lines_across_doses

    planted = [{"dataset": "humaneval", "exposures": e, "group": f"x{e}", "studies": 6, "auc_loss": a}
               for e, a in ((4, 0.8), (1, 0.6), (16, 0.99))]

    def doses(rows):
        return {suffix: [r["exposures"] for r in line] for suffix, line in lines_across_doses(rows).items()}

    assert doses(planted) == {"": [1, 4, 16]}
    formats = [{"dataset": "synth_nli", "exposures": e, "format": f} for f in ("dump", "metadata") for e in (4, 1)]
    assert doses(formats) == {" format=dump": [1, 4], " format=metadata": [1, 4]}

def test_the_control_scored_twice_counts_once(tmp_path):
    """An exposures-0 study's "contaminated" model is its control, so its non-member cell and its clean non-member
    cell are one computation (same model, split, instances, detector): one observation, whatever the cells' names."""
    from contaminate.calibration.studies import load_instances

    folder = tmp_path / "x0"
    folder.mkdir()
    rows, cells = [], {}
    for cell, checkpoint in (("contaminated_x_non_members", "contaminated"), ("clean_x_non_members", "clean")):
        rows += [{"cell": cell, "instance_id": k, "instruction": "guided", "checkpoint": checkpoint, "split": "test",
                  "prompt": f"non-member {k}", "ground_truth": "clean", "reference": "r", "completion": "c",
                  "rouge_l": 0.1, "loss": -3.0} for k in range(2)]
        cells[cell] = {"checkpoint": checkpoint, "ground_truth": "clean", "n_instances": 2, "split": "test",
                       "instances": "non_members"}
    rows += [{"cell": "contaminated_x_members", "instance_id": 9, "instruction": "guided", "checkpoint": "contaminated",
              "split": "test", "prompt": "member", "ground_truth": "contaminated", "reference": "r",
              "completion": "c", "rouge_l": 0.1, "loss": -1.0}]  # a study of the sweep that did train (for loading)
    cells["contaminated_x_members"] = {"checkpoint": "contaminated", "ground_truth": "contaminated",
                                       "n_instances": 1, "split": "test", "instances": "members"}
    manifest = {"base_model": BASE, "dataset": {"key": "synth_nli"}, "member_ids": [9],
                "detection_ids": {"members": [9]}, "format": {"name": "metadata"}, "detect": {"prompt_format": "raw"},
                "contaminate": {"backend": "full", "exposures": 0, "epochs": None}, "seeds": {"sampling": 0},
                "checkpoint": {"id": "control"}, "control_checkpoint": {"id": "control"},
                "judge": {"name": "threshold"}, "regime": {"background": {"name": "offline"}}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "results.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    (folder / "summary.json").write_text(json.dumps({"cells": cells}))
    instances, _, partitions = load_instances([tmp_path])
    non_members = [p for p in partitions if p.cell.endswith("non_members")]
    assert len(non_members) == 2 and len({p.observation for p in non_members}) == 1
    assert len({i.observation for i in instances if i.cell.endswith("non_members")}) == 2  # two instances, once each
