"""The power profile's report (contaminate/analyses/power.py) against hand-computed values: the exact sign-flip p, the
within-model AUC with x0 and the known non-members as negatives, the practitioner's conformal threshold on an
exchangeable and a shifted pool, Holm over the pre-registered contrasts, the A/A rows, pass@1's gain, and a planted
run's folder collected, kept and loaded back."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contaminate.analyses import power
from contaminate.analyses.power import PowerRun, sign_flip_p
from contaminate.calibration.statistics import clopper_pearson
from detect.errors import InputError


def test_sign_flip_p_counts_the_sign_patterns_as_extreme_as_the_observed():
    # 3 differences of one sign: 2 of the 8 patterns (all +, all -) are as extreme
    assert sign_flip_p([1.0, 1.0, 1.0]) == pytest.approx(0.25)
    # |sums| of +-1 +-2 +-0.5: 3.5 2.5 0.5 1.5 1.5 0.5 2.5 3.5; the observed 2.5: 4 of 8
    assert sign_flip_p([1.0, 2.0, -0.5]) == pytest.approx(0.5)
    assert sign_flip_p([0.1] * 10) == pytest.approx(2 / 1024)
    with pytest.raises(InputError, match="sign-flip test over 21 runs"):
        sign_flip_p([1.0] * 21)


def _run(i: int, members: dict[int, list[float]], x0: list[float], known: list[float], shifted=None,
         passed=None) -> PowerRun:
    pools = {f"x{d}": {"loss": np.array(v, float), "min_k": -np.array(v, float)} for d, v in members.items()}
    pools["x0"] = {"loss": np.array(x0, float), "min_k": -np.array(x0, float)}
    pools["known"] = {"loss": np.array(known, float), "min_k": -np.array(known, float)}
    if shifted is not None:
        pools["shifted"] = {"loss": np.array(shifted, float), "min_k": -np.array(shifted, float)}
    run = PowerRun(f"s{i}", i, i, {"humaneval": pools})
    if passed is not None:
        run.pass_at_1 = {"humaneval": {d: {"pass_at_1": k / 4, "passed": k, "n": 4} for d, k in passed.items()}}
    return run


def test_the_auc_pools_x0_with_the_known_non_members_and_averages_over_runs():
    # run 0: members 3, 4 above all four negatives (AUC 1); run 1: member 2.2 above 3 of 4, member 0.5 above 1 of 4
    # (AUC 4/8); run 2: a tie counts one half: 1.0 against 1, 0, 2, 3 -> (1 + 0.5) / 4, 5 against all -> 4 / 4
    runs = [_run(0, {1: [3, 4]}, [1, 2], [0, 2.5]), _run(1, {1: [2.2, 0.5]}, [1, 2], [0, 2.5]),
            _run(2, {1: [1.0, 5.0]}, [1, 0], [2, 3])]
    found = power.auc_by_dose(runs, "humaneval", "loss")[1]
    per_run = [1.0, 0.5, (1.5 + 4) / 8]
    assert found["per_unit"] == pytest.approx({"d0s0": per_run[0], "d1s1": per_run[1], "d2s2": per_run[2]})
    assert found["estimate"] == pytest.approx(np.mean(per_run)) and found["n_units"] == 3
    half = 4.302653 * np.std(per_run, ddof=1) / math.sqrt(3)  # t(2) at 0.975
    assert found["low"] == pytest.approx(max(0.0, np.mean(per_run) - half), abs=1e-5)


def test_the_practitioners_threshold_is_fitted_on_the_pool_and_read_on_x0_and_the_members():
    # 19 known non-members 0..18: at 5% the conformal threshold is the 19th smallest (k = ceil(0.95 x 20)), 18;
    # x0 = [17, 18.5, 19, 3]: two above 18 (FPR 0.5); members [18, 30]: one above (strict >)
    known = list(range(19))
    shifted = [v - 10 for v in known]  # a shifted pool scores lower: its threshold, 8, flags all x0 but the 3
    runs = [_run(i, {1: [18, 30]}, [17, 18.5, 19, 3], known, shifted) for i in range(3)]
    exchangeable = power.practitioner(runs, "humaneval", "loss", "known")
    assert exchangeable["fpr"]["estimate"] == pytest.approx(0.5) and exchangeable["tpr"][1]["estimate"] == 0.5
    assert exchangeable["fpr"]["k"] == 6 and exchangeable["fpr"]["n"] == 12
    moved = power.practitioner(runs, "humaneval", "loss", "shifted")
    assert moved["fpr"]["estimate"] == pytest.approx(0.75) and moved["tpr"][1]["estimate"] == 1.0
    few = power.practitioner([_run(0, {1: [1]}, [0], list(range(10)))] * 2, "humaneval", "loss", "known")
    assert few == {"refused": "10 known non-members: a split-conformal threshold at 0.05 needs 19"}


def test_the_contrasts_are_paired_over_runs_and_holm_adjusted_over_themselves_only():
    # loss separates perfectly in every run (AUC 1); min_k is -loss (AUC 0): the difference is +1 in each run
    runs = [_run(i, {1: [5, 6 + i]}, [0, 1], [2, 3]) for i in range(6)]
    specs = [{"dataset": "humaneval", "dose": 1, "a": "loss", "b": "min_k"},
             {"dataset": "humaneval", "dose": 1, "a": "loss", "b": "loss"}]
    first, second = power.contrasts(runs, specs, 0.05)
    assert first["difference"] == 1.0 and first["p_sign_flip"] == pytest.approx(2 / 64)
    assert first["p_sign_flip_holm"] == pytest.approx(2 * 2 / 64)  # the smaller of two p-values, times 2
    assert first["p_t"] is None and not first["told"]  # no spread: no t-test, so not told by both
    assert second["difference"] == 0.0 and second["p_sign_flip"] == 1.0
    with pytest.raises(InputError, match="power.contrasts: humaneval x2 has no loss score in run s0"):
        power.contrasts(runs, [{"dataset": "humaneval", "dose": 2, "a": "loss", "b": "min_k"}], 0.05)


def test_a_contrast_with_spread_gets_the_paired_t_and_its_interval():
    from scipy.stats import t as student_t

    # each run's loss AUC minus min_k's (min_k = -loss), members against 0, 1, 2, 3: 5 and 6 above all (1 - 0);
    # 5 and 2.5 above 4 + 3 of 4 (7/8 - 1/8); 5 and 0.5 above 4 + 1 (5/8 - 3/8)
    runs = [_run(0, {1: [5, 6]}, [0, 1], [2, 3]), _run(1, {1: [5, 2.5]}, [0, 1], [2, 3]),
            _run(2, {1: [5, 0.5]}, [0, 1], [2, 3])]
    found = power.contrast(runs, {"dataset": "humaneval", "dose": 1, "a": "loss", "b": "min_k"})
    d = np.array([1.0 - 0.0, 0.875 - 0.125, 0.625 - 0.375])
    se = d.std(ddof=1) / math.sqrt(3)
    assert found["per_run"] == pytest.approx(list(d))
    assert found["p_t"] == pytest.approx(2 * student_t.sf(d.mean() / se, 2))
    assert found["high"] - found["difference"] == pytest.approx(student_t.ppf(0.975, 2) * se)


def test_the_aa_rows_read_two_untrained_pools_and_the_labels_reversed():
    rng = np.random.default_rng(0)
    runs = [_run(i, {1: list(rng.normal(1, 1, 24))}, list(rng.normal(0, 1, 24)), list(rng.normal(0, 1, 44)),
                 list(rng.normal(-1, 1, 44))) for i in range(10)]
    rows = power.aa_rows(runs, "humaneval", "loss")
    assert set(rows) == {"x0 v known", "x0 v shifted", "reversed, x0 v x1"}
    assert 0.4 < rows["x0 v known"]["auc"]["estimate"] < 0.6  # exchangeable: near one half
    assert rows["x0 v shifted"]["auc"]["estimate"] > 0.7 and rows["x0 v shifted"]["flagged"]["k"] >= 8  # the shift
    assert rows["reversed, x0 v x1"]["auc"]["estimate"] < 0.3 and rows["reversed, x0 v x1"]["flagged"]["k"] == 0


def test_harm_is_pass_at_1_by_dose_and_its_gain_over_the_runs_own_x0():
    runs = [_run(i, {1: [1], 8: [2]}, [0], [0], passed={0: i % 2, 1: 1, 8: 4}) for i in range(4)]
    found = power.harm(runs, "humaneval")
    top = found["pass_at_1"][8]
    assert top["estimate"] == 1.0 and (top["k"], top["n"]) == (16, 16)
    assert found["gain"][1]["estimate"] == pytest.approx(np.mean([0.25, 0.0, 0.25, 0.0]))
    assert found["n"] == 4
    # no problem passed in any run: the interval is the pooled count's exact one, not [0, 0]
    none = power.harm([_run(i, {1: [1]}, [0], [0], passed={0: 0, 1: 0}) for i in range(4)], "humaneval")
    assert none["pass_at_1"][1]["high"] == pytest.approx(clopper_pearson(0, 16)["high"])
    assert none["gain"][1]["high"] > 0.05


def test_a_planted_run_is_collected_kept_and_loaded_back(tmp_path):
    """A run folder as a planted run writes it (plant.json, groups/<name>/results.jsonl): x0 and the known
    non-members are read once though every group holds them; each shifted invocation adds its known pool under its
    arm's name (its config.yaml's sample.known_shift; none: the whole rewrite), a dataset it read as drawn adds none."""
    def write_run(folder, known_loss: float, checkpoint: str = "c0"):
        groups = [{"name": "x0", "exposures": 0, "n": 2}, {"name": "x1", "exposures": 1, "n": 2, "tokens": 10,
                                                          "token_share": 0.1},
                  {"name": "x0_synth_nli", "exposures": 0, "n": 2}]
        plant = {"seed": 3, "draw": 3, "dataset": "humaneval", "groups": groups,
                 "stream": {"training_tokens": 100}, "timings": {"train_s": 5.0, "total_s": 9.0},
                 "background": {"name": "package_docs", "documents": 3, "digest": "abcdef0123456789"},
                 "checkpoint": {"id": checkpoint, "steps": 4,
                                "placement": {"device": "cpu", "weights": "float32", "autocast": None}},
                 "pass_at_1": {"contaminated": {"x0": {"pass_at_1": 0.0, "passed": 0, "n": 2},
                                                "x1": {"pass_at_1": 0.5, "passed": 1, "n": 2}}}}
        (folder / "groups" / "x1").mkdir(parents=True)
        (folder / "plant.json").write_text(json.dumps(plant))
        rows = [{"cell": "contaminated_x_members", "dataset": "humaneval", "instance_id": i, "instruction": "guided",
                 "loss": -1.0 + i} for i in (5, 6)]
        rows += [{"cell": "contaminated_x_non_members", "dataset": "humaneval", "instance_id": i,
                  "instruction": "guided", "loss": -2.0} for i in (7, 8)]
        rows += [{"cell": "contaminated_x_known_non_members", "dataset": "humaneval", "instance_id": i,
                  "instruction": "guided", "loss": known_loss} for i in (9, 10, 11)]
        (folder / "groups" / "x1" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        outcomes = {"5": {"completion": "    return 1", "outcome": "passed", "class": "code"},
                    "6": {"completion": "", "outcome": "failed: ", "class": "empty"}}
        (folder / "pass_at_1.json").write_text(json.dumps({"contaminated": {"x1": outcomes}}))

    write_run(tmp_path / "run", -3.0)
    write_run(tmp_path / "shifted", -4.0)
    write_run(tmp_path / "renamed", -5.0)
    (tmp_path / "renamed" / "config.yaml").write_text("sample:\n  known_shift: {humaneval: rename}\n")
    write_run(tmp_path / "elsewhere", -6.0)  # an arm asked of another dataset: HumanEval's pool as drawn, not kept
    (tmp_path / "elsewhere" / "config.yaml").write_text("sample:\n  known_shift: {synth_nli: rewrite}\n")
    shifted = [tmp_path / name for name in ("shifted", "renamed", "elsewhere")]
    power.keep(power.collect(tmp_path / "run", shifted), tmp_path / "kept" / "s3")
    run = power.load(tmp_path / "kept" / "s3")
    pools = run.pools["humaneval"]
    assert list(pools["x1"]["loss"]) == [4.0, 5.0] and list(pools["known"]["loss"]) == [-3.0] * 3
    assert list(pools["shifted"]["loss"]) == [-4.0] * 3 and len(pools["x0"]["loss"]) == 2
    assert list(pools["renamed"]["loss"]) == [-5.0] * 3 and set(pools) == {"x0", "x1", "known", "shifted", "renamed"}
    assert run.pass_at_1 == {"humaneval": {0: {"pass_at_1": 0.0, "passed": 0, "n": 2},
                                           1: {"pass_at_1": 0.5, "passed": 1, "n": 2}}}
    assert run.cost["training_tokens"] == 100 and run.cost["shifted_s"] == 9.0 and run.unit == (3, 3)
    assert run.passed == {"humaneval": {1: {5: True, 6: False}}} and list(run.ids["humaneval"]["x1"]) == [5, 6]
    assert run.precision == "cpu float32"
    assert run.background == "package_docs abcdef012345"
    assert power.status([run]).splitlines()[4] == \
        "| s3 | 3 | 3 | cpu float32 | package_docs abcdef012345 | 100 | 0.0% | 5.0 | 9.0 | 9.0 | rewrite, rename | " \
        "0/2 | 1/2 |"
    found = power.analyse([run], [], 0.05)["datasets"]["humaneval"]
    assert set(found["practitioner"]) == {"known", "shifted", "renamed"}
    assert set(found["aa"]["loss"]) == {"x0 v known", "x0 v shifted", "x0 v renamed", "reversed, x0 v x1"}
    write_run(tmp_path / "other", -4.0, checkpoint="c1")
    with pytest.raises(InputError, match="read another model than"):
        power.collect(tmp_path / "run", [tmp_path / "other"])
    with pytest.raises(InputError, match="humaneval's renamed pool given twice for run; give each arm's invocation"):
        power.collect(tmp_path / "run", [tmp_path / "renamed", tmp_path / "renamed"])


def test_no_run_or_no_contrasts_is_one_line_and_one_run_reads_without_intervals(tmp_path):
    with pytest.raises(InputError, match="no run kept: collect the design's runs first"):
        power.analyse([], [], 0.05)
    run = _run(0, {1: [3, 1]}, [0, 2], [0.5, 4])
    run.cost = {"training_tokens": 100, "planted_share": 0.5, "steps": 2, "train_s": 1, "total_s": 2, "shifted_s": None}
    one = power.analyse([run], [{"dataset": "humaneval", "dose": 1, "a": "loss", "b": "min_k"}], 0.05)
    assert one["datasets"]["humaneval"]["auc"]["loss"][1]["estimate"] == 0.625  # 3 above 3 of 4, 1 above 2 of 4
    assert one["datasets"]["humaneval"]["auc"]["loss"][1]["low"] is None and not one["contrasts"][0]["told"]
    text = power.report(one)
    assert text.startswith("Power profile: 1 independent run (s0)") and "**1 run, fewer than 3: every number below " \
        "is an estimate over that one model, with no interval over runs and no contrast told" in text
    (tmp_path / "e.yaml").write_text("plant: {n: 4}\n")
    with pytest.raises(InputError, match="has no power.contrasts; write the primary contrasts"):
        power.contrasts_of(tmp_path / "e.yaml")
    specs, alpha = power.contrasts_of()
    # an experiment that extends another through its defaults list has that one's contrasts (power_gemma_cpu)
    assert power.contrasts_of(power.EXPERIMENT.parent / "power_gemma_cpu.yaml") == (specs, alpha)
    assert len(specs) == 4 and alpha == 0.05 and specs[0] == {"dataset": "humaneval", "dose": 1, "a": "min_k_plus",
                                                               "b": "loss"}


def test_runs_trained_at_another_precision_are_refused_in_one_line():
    """The runs of one design are replicates of one training: a run that took bf16 (``runtime.dtype=auto`` on a CPU
    with AVX-512 BF16) among float32 runs is not one of its units."""
    runs = [_run(i, {1: [1.0, 2.0]}, [0.0], [0.5]) for i in range(3)]
    for run, kind in zip(runs, ("cpu float32", "cpu float32", "cpu bfloat16")):
        run.precision = kind
    with pytest.raises(InputError, match=r"more than one precision \(s0, s1: cpu float32; s2: cpu bfloat16\); rerun"):
        power.analyse(runs, [], 0.05)
    assert power.precision_of({"placement": {"device": "cuda:1", "weights": "float32", "autocast": "bfloat16"}}) == \
        "cuda float32, autocast bfloat16"
    assert power.precision_of({"id": "c0"}) is None


def test_the_figure_draws_the_auc_by_dose_and_the_thresholds_fpr_on_both_pools(tmp_path):
    known = [float(v) for v in range(19)]
    runs = [_run(i, {1: [18.0 + i, 5.0], 2: [30.0, 20.0]}, [17.0, 18.5, 3.0], known, shifted=[v - 10 for v in known])
            for i in range(3)]
    found = power.analyse(runs, [], 0.05)
    assert found["datasets"]["humaneval"]["practitioner"]["shifted"]["loss"]["fpr"]["k"] == 6  # 17 and 18.5 > 8
    power.plot(found, tmp_path / "power.png", scores=("loss", "min_k"))
    assert (tmp_path / "power.png").read_bytes()[:4] == b"\x89PNG"


def test_runs_on_different_backgrounds_are_flagged_beside_the_tables():
    """Issue 68 item 5: runs of one design that trained on different backgrounds (package_docs follows the installed
    packages) are named in the status and the tables; a digest where recorded, else the background's size."""
    same = [_run(i, {1: [1]}, [0], [0]) for i in range(3)]
    for run in same:
        run.background = "package_docs abcdef012345"
        run.cost = {"training_tokens": 100, "planted_share": 0.5, "train_s": 1.0, "total_s": 2.0, "shifted_s": None}
    assert power.backgrounds_note(same) is None
    same[2].background = power.background_of({"stream": {"documents": {"background": 79},
                                                          "tokens": {"background": 42199}}})
    note = power.backgrounds_note(same)
    assert "more than one background" in note and "79 documents, 42,199 tokens" in note and "s0, s1:" in note
    assert note in power.status(same)


def _with_outcomes(run: PowerRun, outcomes: dict[int, dict[int, bool]]) -> PowerRun:
    """``run`` with its members' instance ids (x{d}: 10d, 10d + 1, ...) and each one's pass@1 outcome."""
    run.ids = {"humaneval": {pool: 10 * int(pool[1:]) + np.arange(len(v["loss"])) if pool.startswith("x")
                             else np.arange(len(v["loss"])) + 900 for pool, v in run.pools["humaneval"].items()}}
    run.passed = {"humaneval": {d: {int(i): flag for i, flag in zip(run.ids["humaneval"][f"x{d}"], flags)}
                                for d, flags in outcomes.items()}}
    return run


def test_harm_beside_detection_reads_each_member_detected_or_not_and_exploited_or_not():
    # 19 known non-members 0..18: the 5% threshold is 18 (strict >). Members x1 [30, 5]: the first detected.
    # The untouched model passes problem 10 (x1's first) and 0 (x0's), fails 11. Each run's x1: [passed, passed]:
    # problem 10 passed but not exploited (the untouched model passed it too), problem 11 exploited.
    known = list(range(19))
    untouched = {0: True, 1: False, 10: True, 11: False}
    runs = [_with_outcomes(_run(i, {1: [30, 5]}, [0, 0], known), {0: [True, False], 1: [True, True]})
            for i in range(3)]
    found = power.harm_beside_detection(runs, "humaneval", untouched)
    block = found["doses"][1]
    assert block["pass_at_1"]["estimate"] == 1.0 and (block["pass_at_1"]["k"], block["pass_at_1"]["n"]) == (6, 6)
    assert block["gain_untouched"]["estimate"] == pytest.approx(0.5)  # 1.0 against the untouched model's 0.5
    assert block["gain_x0"]["estimate"] == pytest.approx(0.5)  # against x0's 1 of 2
    assert block["tpr"]["loss"]["estimate"] == pytest.approx(0.5) and block["tpr"]["min_k"]["estimate"] == 0.0
    # loss: problem 10 detected, not exploited; 11 exploited, not detected; three runs
    assert block["table"]["loss"] == {"detected_exploited": 0, "detected_only": 3, "exploited_only": 3, "neither": 0}
    assert found["untouched"] == {"passed": 2, "n": 4} and found["runs"] == 3
    text = "\n".join(power.harm_detection_table(found))
    assert "The untouched model passes 2/4 problems" in text
    assert "| loss (leak's rendering: oracle) | x1 | 0 | 3 | 3 | 0 |" in text
    with pytest.raises(InputError, match=r"lack problems \[11\]"):
        power.harm_beside_detection(runs, "humaneval", {0: True, 1: False, 10: True})
    few = [_with_outcomes(_run(i, {1: [30, 5]}, [0, 0], list(range(10))), {0: [True, False], 1: [True, True]})
           for i in range(2)]
    assert power.harm_beside_detection(few, "humaneval", untouched) == \
        {"refused": "10 known non-members: a split-conformal threshold at 0.05 needs 19"}


def test_the_untouched_outcomes_are_read_in_the_runs_format_or_refused_in_one_line(tmp_path):
    import gzip

    path = tmp_path / "completions.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"stripped": {"0": {"completion": "", "outcome": "passed", "class": "code"},
                                "1": {"completion": "", "outcome": "failed: ", "class": "empty"}}}, f)
    assert power.untouched_outcomes(path, "stripped") == {0: True, 1: False}
    with pytest.raises(InputError, match="asked stripped, the runs asked raw"):
        power.untouched_outcomes(path, "raw")
    (tmp_path / "bad.json.gz").write_text("not gzip")
    with pytest.raises(InputError, match="not bench/pass_at_1.py's completions.json.gz"):
        power.untouched_outcomes(tmp_path / "bad.json.gz", "raw")


def test_a_threshold_fitted_on_one_models_known_non_members_is_read_on_the_other_models_pools():
    """Issue 69 item 4: model A's conformal threshold (known 0..18: the 19th smallest, 18) applied to model B's runs
    of the same draws, whose scores sit 10 higher: B's x0 [27, 3, 5, 6] has one above 18 (FPR 0.25), where B's own
    threshold (28) flags none; B's members [25, 40]: both above A's 18, one above B's own 28."""
    a = [_run(i, {1: [18, 30]}, [17, 18.5, 19, 3], list(range(19))) for i in range(3)]
    b = [_run(i, {1: [25, 40]}, [27, 3, 5, 6], [v + 10 for v in range(19)]) for i in range(3)]
    moved = power.transfer(a, b, "humaneval", "loss")
    assert moved["runs"] == 3 and moved["threshold"] == {"fitted": 18.0, "own": 28.0}
    assert (moved["fpr"]["k"], moved["fpr"]["n"]) == (3, 12) and moved["fpr"]["estimate"] == pytest.approx(0.25)
    assert moved["tpr"][1]["estimate"] == 1.0 and moved["own"]["tpr"][1]["estimate"] == 0.5
    assert moved["own"]["fpr"]["k"] == 0
    back = power.transfer(b, a, "humaneval", "loss")  # B's 28 on A: x0 none above, members one of two (30)
    assert back["fpr"]["k"] == 0 and back["tpr"][1]["estimate"] == 0.5
    assert power.transfer(a, [_run(7, {1: [1]}, [0], [0])], "humaneval", "loss") == {}  # no run of the same draw
    lines = power.transfer_table(a, b, ("SmolLM2", "Gemma"))
    assert "### humaneval: fitted on SmolLM2's known non-members, applied to Gemma's pools (3 paired runs)" in lines
    assert "### humaneval: fitted on Gemma's known non-members, applied to SmolLM2's pools (3 paired runs)" in lines
    row = next(line for line in lines if line.startswith("| loss ("))
    assert row.startswith("| loss (leak's rendering: oracle) | 18.000 / 28.000 | 0.25 [0.00, 0.57] (3/12) | 0.00 ")
    assert row.endswith("| 1.00 [0.54, 1.00] (6/6) v 0.50 [0.10, 0.90]† (3/6) |")
