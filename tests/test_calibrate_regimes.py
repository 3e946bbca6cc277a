"""Calibration by regime (contaminate/calibration/regimes.py) on hand-built study folders whose scores give known
thresholds, transfer cells and lowest exposures; its bad inputs; and a real tiny-model multirun over two formats
and two seeds."""

import json
import math

import numpy as np
import pytest

from contaminate.calibration.instance_level import rank_auc
from contaminate.calibration.regimes import lowest_exposure, partition_threshold, refit_noise_count
from detect.errors import InputError

BASE = {"name": "tiny", "path": "/nowhere", "adapter": None}


def _study(folder, *, fmt: str, exposures: int, cells: dict, seed: int = 0, backend: str = "full",
           background: str = "none", blind: float = 0.5) -> None:
    """A finished study: ``cells`` maps a cell name to (ground truth, losses of its instances); every instance
    of the clean model's cell has the same id and prompt in every study, so that cell is shared between them."""
    folder.mkdir(parents=True)
    rows, summary_cells = [], {}
    for cell, (truth, losses) in cells.items():
        checkpoint = "clean" if cell.startswith("clean") else "contaminated"
        for k, loss in enumerate(losses):
            exact = truth == "contaminated" and exposures >= 4  # the members replay from 4 exposures on
            rows.append({"cell": cell, "instance_id": k if checkpoint == "clean" else f"{cell}-{k}",
                         "instruction": "guided", "checkpoint": checkpoint, "split": "test",
                         "prompt": f"{cell if checkpoint != 'clean' else 'clean'} {k}", "ground_truth": truth,
                         "reference": f"reference {k}", "completion": f"reference {k}" if exact else "other",
                         "rouge_l": 1.0 if exact else 0.1, "loss": loss})
        summary_cells[cell] = {"checkpoint": checkpoint, "ground_truth": truth, "n_instances": len(losses)}
    manifest = {"base_model": BASE, "dataset": {"key": "synth_nli"}, "member_ids": [0, 1],
                "detection_ids": {"members": [0, 1]}, "format": {"name": fmt}, "detect": {"prompt_format": "raw"},
                "contaminate": {"backend": backend, "exposures": exposures, "epochs": None, "learning_rate": 3e-4},
                "seeds": {"sampling": seed}, "checkpoint": {"id": f"{fmt}-{backend}-{exposures}-{seed}"},
                "judge": {"name": "threshold"}, "regime": {"background": {"name": background}},
                "control_checkpoint": None}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "results.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    (folder / "summary.json").write_text(json.dumps({"cells": summary_cells, "blind_baseline": {
        "auc": blind, "low": blind - 0.2, "high": blind + 0.2, "biased": False}}))


def _sweep(root, *, with_b4: bool = True):
    """Two regimes, metadata/none/full (A) and dump/none/full (B), at exposures 1 and 4 (cell means of loss):

    A: members -2 (x1), -1 (x4); non-members -4, -3.5; the shared clean cell -5.
    B: members -3.2 (x1), -0.5 (x4); non-members -2.5, -2.0; the shared clean cell -5.
    """
    for fmt, doses, blind in (("metadata", {1: (-2, -4), 4: (-1, -3.5)}, 0.5),
                              ("dump", {1: (-3.2, -2.5), 4: (-0.5, -2.0)}, 0.6)):
        for exposures, (member, non_member) in doses.items():
            if fmt == "dump" and exposures == 4 and not with_b4:
                continue
            _study(root / f"{fmt}_x{exposures}", fmt=fmt, exposures=exposures, blind=blind,
                   cells={"contaminated_x_members": ("contaminated", [member, member]),
                          "contaminated_x_non_members": ("clean", [non_member, non_member]),
                          "clean_x_members": ("clean", [-5.0, -5.0])})


def test_rank_auc_is_sklearns_roc_auc_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    for _ in range(50):
        labels = rng.random(30) < 0.4
        labels[:2] = True, False
        scores = rng.integers(0, 4, 30).astype(float)  # many ties
        assert rank_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))


def test_partition_threshold_and_lowest_exposure_by_hand():
    # clean -4, -3.5, -5: the lowest value flagging none of them is -2, halfway to -3.5 below it
    assert partition_threshold([-4, -3.5, -5], [-5, -4, -3.5, -2, -1], 0.05) == -2.75
    # one of 3 clean may be flagged at a 34% budget: -3.5 is the lowest that flags only it, halfway to -4
    assert partition_threshold([-4, -3.5, -5], [-5, -4, -3.5, -2, -1], 0.34) == -3.75
    assert partition_threshold([1.0], [1.0], 0.05) == math.inf  # nothing separates: never flag
    assert lowest_exposure({1: 0.5, 4: 1.0, 16: 1.0}, holds_at=0.8) == 4
    assert lowest_exposure({1: 1.0, 4: 0.5, 16: 1.0}, holds_at=0.8) == 16  # must hold at every higher dose
    assert lowest_exposure({1: 1.0, 4: 1.0, 16: 0.0}, holds_at=0.8) is None


def test_refit_noise_count_by_hand_and_by_enumeration():
    assert refit_noise_count(3, 3, 0.05) == 3        # P(X >= x) = C(3, x) / C(6, x): 1/2, 1/5, 1/20
    assert refit_noise_count(16, 16, 0.05) == 5      # C(16, 4) / C(32, 4) = 0.0506, C(16, 5) / C(32, 5) = 0.0217
    # 20 fitted cells flag 1 (f = 1): P(X >= x) = (C(10, 1 + x) + 20 C(10, x)) / C(30, 1 + x): x = 3 0.095, 4 0.031
    assert refit_noise_count(20, 10, 0.05) == 4
    assert refit_noise_count(2, 1, 0.05) is None     # one applied cell is flagged with probability 1/3
    # every way 5 fitted and 4 applied clean values can interleave, fitted with the calibration's own threshold rule
    # at 20% (flags 1 of 5). Where the regime has a value just above the 2nd-largest fitted one (a member cell, say)
    # the threshold sits right above it and the tail of X is the formula's; halfway to the largest fitted value
    # (no other value between), fewer applied cells pass it, so the formula's bound is conservative
    import itertools
    n_fitted, n_applied, budget = 5, 4, 0.2
    exact, halfway = [], []
    for applied_ranks in itertools.combinations(range(9), n_applied):
        fitted = [r for r in range(9) if r not in applied_ranks]
        for counts, every in ((exact, fitted + [r + 0.01 for r in fitted]), (halfway, fitted)):
            threshold = partition_threshold(fitted, every, budget)
            counts.append(sum(r >= threshold for r in applied_ranks))
    for alpha in (0.5, 0.2, 0.1, 0.05, 0.01):
        bound = refit_noise_count(n_fitted, n_applied, budget, alpha)
        tails = {x: np.mean([c >= x for c in exact]) for x in range(1, n_applied + 1)}
        assert bound == next((x for x, tail in tails.items() if tail <= alpha + 1e-12), None)
        if bound is not None:
            assert np.mean([c >= bound for c in halfway]) <= alpha + 1e-12


def test_calibration_by_regime_on_hand_built_studies(tmp_path):
    from contaminate.calibrate import main

    _sweep(tmp_path / "sweep")
    out = main([str(tmp_path / "sweep"), "--transfer", "--out", str(tmp_path / "out")])
    block = json.loads((out / "calibration.json").read_text())["by_regime"]
    a, b = "metadata/none/full", "dump/none/full"
    assert set(block["regimes"]) == {a, b}
    regime_a, regime_b = block["regimes"][a], block["regimes"][b]
    # the clean model's cell is shared by the two studies of a regime: 2 contaminated + 3 clean cells
    assert regime_a["n_cells"] == {"positive": 2, "clean": 3}
    loss_a, loss_b = regime_a["detection"]["statistics"]["loss"], regime_b["detection"]["statistics"]["loss"]
    # A: clean cells -4, -3.5, -5 -> threshold halfway between -3.5 and -2; both doses detected
    assert loss_a["threshold"] == pytest.approx(-2.75) and loss_a["fpr"] == 0
    assert loss_a["rate_by_exposures"] == {"1": 1.0, "4": 1.0} and loss_a["lowest_exposures"] == 1
    # B: clean cells -2.5, -2.0, -5 -> halfway between -2.0 and -0.5; the member cell at 1 exposure (-3.2) missed
    assert loss_b["threshold"] == pytest.approx(-1.25)
    assert loss_b["rate_by_exposures"] == {"1": 0.0, "4": 1.0} and loss_b["lowest_exposures"] == 4
    # instance AUC: A separates perfectly; in B each -3.2 member beats 2 of 6 clean instances, each -0.5 all 6
    assert regime_a["instance"]["loss"]["auc"] == 1.0
    assert regime_b["instance"]["loss"]["auc"] == pytest.approx((2 * 2 / 6 + 2 * 1) / 4)
    assert regime_b["auc_at_top"]["loss"] == 1.0  # only the 4-exposure members against every clean instance
    # transfer: A's -2.75 in B flags the non-member cells -2.5 and -2.0 (FPR 2/3, over budget) and the -0.5 member;
    # 3 clean cells a side: a same-distribution refit flags x of 3 with P = C(3, x) / C(6, x) = 1/2, 1/5, 1/20, so
    # only 3 of 3 (FPR 1.0) is beyond noise and 2/3 is not
    transfer = block["transfer"]["loss"]
    noise = {"noise_fpr": 1.0, "beyond_noise": False}
    assert transfer[a]["to"][b] == {"fpr": pytest.approx(2 / 3), "tpr": 0.5, "over": True, **noise}
    # B's -1.25 in A: no clean cell, and the -1 member only
    assert transfer[b]["to"][a] == {"fpr": 0.0, "tpr": 0.5, "over": False, **noise}
    assert transfer[a]["to"][a] == {"fpr": 0.0, "tpr": 1.0, "over": False, **noise}
    # Algorithm 2 with the paper's thresholds: the 4-exposure members replay exactly, nothing clean does, so the
    # paper's rule keeps FPR 0 in both regimes, detecting the 4-exposure pools only
    paper = block["alg2_everywhere"]["paper"]
    assert "1/2" in paper["safe_rules"]
    assert paper["paper_rule_by_regime"][a] == {"tpr": 0.5, "fpr": 0.0}
    assert "alg2_calibrated" in block["transfer"]
    # the blind baseline: one member / non-member sample per regime (every study drew the same)
    assert regime_a["blind_baseline"]["auc"] == 0.5 and regime_b["blind_baseline"]["auc"] == 0.6
    assert regime_a["blind_baseline"]["n_samples"] == 1
    assert block["missing"] == {"grid": [], "unfinished": []}
    report = (out / "calibration.md").read_text()
    # detector x regime (columns dump, metadata): the lowest exposure detected, then the AUC at the top dose
    assert "## Detectors across regimes" in report and "| loss | 4 · 1.00 | 1 · 1.00 |" in report
    assert "## Threshold transfer" in report and "**0.67** / 0.50" in report
    assert "blind baseline (texts alone) |" in report
    assert (out / "transfer.png").stat().st_size > 0 and (out / "regimes_dose_response.png").stat().st_size > 0


def test_the_readme_headline_tables_read_calibration_json(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    from contaminate.calibrate import main

    spec = importlib.util.spec_from_file_location(
        "headline_tables", Path(__file__).resolve().parents[1] / "bench" / "headline_tables.py")
    headline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(headline)
    _sweep(tmp_path / "sweep")
    out = main([str(tmp_path / "sweep"), "--transfer", "--out", str(tmp_path / "out")])
    capsys.readouterr()
    headline.main([str(out)])
    printed = capsys.readouterr().out
    # B (dump) detected by loss from 4 exposures, AUC 1 at the top dose; the as-run Algorithm 2 from 4 (replicas)
    assert "| dump/none/full | 4 · 1.00 |" in printed and "| metadata/none/full | 1 · 1.00 |" in printed
    # loss transfer: A -> B over budget (2/3) but within refit noise with 3 clean cells a side; the two regimes
    # differ in the format only
    assert "| loss | 1 of 2 | 0 | 1 of 2 | 0 | 0 of 2 / 0 of 0 / 0 of 0 |" in printed


def test_a_half_finished_sweep_is_calibrated_on_what_finished_and_says_what_is_missing(tmp_path, capsys):
    from contaminate.calibrate import main

    _sweep(tmp_path / "sweep", with_b4=False)
    started = tmp_path / "sweep" / "dump_x4"  # killed after it wrote its config
    (started / ".hydra").mkdir(parents=True)
    (started / "config.yaml").write_text("seed: 0\n")
    out = main([str(tmp_path / "sweep")])
    block = json.loads((out / "calibration.json").read_text())["by_regime"]
    assert block["missing"]["unfinished"] == [str(started.resolve())]
    assert block["missing"]["grid"] == ["dump/none/full synth_nli exposures 4 seed 0"]
    assert "1 unfinished, 1 cells of the grid" in capsys.readouterr().err
    report = (out / "calibration.md").read_text()
    assert "## Missing" in report and "dump/none/full synth_nli exposures 4 seed 0" in report
    # what finished is calibrated: B has its 1-exposure study, where loss misses
    assert block["regimes"]["dump/none/full"]["detection"]["statistics"]["loss"]["lowest_exposures"] is None


def test_calibrate_bad_regimes_are_one_line(tmp_path):
    from contaminate.calibrate import main

    _study(tmp_path / "only_a" / "x1", fmt="metadata", exposures=1,
           cells={"contaminated_x_members": ("contaminated", [-1.0, -1.0]),
                  "clean_x_members": ("clean", [-5.0, -5.0])})
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
    command = [sys.executable, "-m", "contaminate", "-m", "+experiment=regimes_cpu", "model=tiny_random",
               "contaminate=full", "background=none", "contaminate.exposures=2", "seed=0,1",
               "format=metadata,input_only", "sample.n_members=4", "sample.n_detect=4", "sample.n_non_members=4",
               "detect.max_new_tokens=8", f"hydra.sweep.dir={sweep}", f"cache_dir={tmp_path / 'cache'}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.parent.name for p in sweep.glob("full/none/*/summary.json")) == [
        "input_only_x2_s0", "input_only_x2_s1", "metadata_x2_s0", "metadata_x2_s1"]

    out = main([str(sweep), "--transfer"])
    block = json.loads((out / "calibration.json").read_text())["by_regime"]
    regimes = ["input_only/none/full", "metadata/none/full"]
    assert sorted(block["regimes"]) == regimes
    for regime in regimes:
        assert block["regimes"][regime]["seeds"] == [0, 1]
        assert 0 <= block["regimes"][regime]["blind_baseline"]["auc"] <= 1
        assert "cross-fitted over 2 seeds" in block["regimes"][regime]["alg2"]["labels"]
    for detector in ("loss", "min_k", "alg2_calibrated"):
        table = block["transfer"][detector]
        assert all(set(table[source]["to"]) == set(regimes) for source in table)
    report = (out / "calibration.md").read_text()
    assert "## Threshold transfer" in report and "blind baseline (texts alone)" in report
    assert (out / "transfer.png").stat().st_size > 0


def test_the_pooled_dose_plot_is_skipped_when_regimes_crowd_it(tmp_path):
    from contaminate.calibration.report import MAX_DOSE_VARIANTS, plot_dose_response

    def rows(n_regimes: int) -> list[dict]:
        return [{"dataset": "synth_nli", "exposures": e, "format": f"format_{i}", "tpr_alg2": 0.5, "fpr_alg2": 0.0,
                 "auc_loss": 0.9} for i in range(n_regimes) for e in (1, 4)]

    assert plot_dose_response(rows(MAX_DOSE_VARIANTS), ["alg2"], ["loss"], tmp_path / "few.png")
    assert (tmp_path / "few.png").stat().st_size > 0
    # one line per detector and regime: the per-regime panels (regimes_dose_response.png) draw these instead
    assert not plot_dose_response(rows(MAX_DOSE_VARIANTS + 1), ["alg2"], ["loss"], tmp_path / "many.png")
    assert not (tmp_path / "many.png").exists()
    assert not plot_dose_response(rows(1)[:1], ["alg2"], ["loss"], tmp_path / "one_dose.png")  # nothing varies
