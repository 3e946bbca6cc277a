"""Calibration: ROC/AUC, threshold selection and partition rates against hand-computed cases; the judge loading
calibration.json; cross-fitting by seed."""

import json
import math

import pytest
from lean import NO_EMBEDDING, TINY_MODEL

from contaminate.calibrate import (
    Instance,
    alg2_binomial_rate,
    alg2_flag_rate,
    cross_fitted_labels,
    fit_thresholds,
    lowest_threshold,
    recommend_rule,
    roc,
)
from contaminate.reports.calibration import markdown_table
from detect.errors import InputError
from detect.judges.threshold import ThresholdJudge


def test_roc_auc_and_tpr_at_fpr_by_hand():
    # positives 0.9, 0.8, 0.55; negatives 0.7, 0.6, 0.2: of the 9 (positive, negative) pairs, 7 are ordered right.
    labels = [True, True, False, False, True, False]
    scores = [0.9, 0.8, 0.7, 0.6, 0.55, 0.2]
    result = roc(labels, scores)
    assert result["auc"] == pytest.approx(7 / 9)
    # no false positive allowed with 3 negatives (1% or 5% of 3 is < 1): threshold 0.8 catches 2 of 3.
    assert result["tpr_at_fpr"] == {"0.01": pytest.approx(2 / 3), "0.05": pytest.approx(2 / 3)}
    assert (result["n_positive"], result["n_negative"]) == (3, 3)
    assert roc([True, False], [0.5, 0.5])["auc"] == 0.5  # ties count one half


def test_lowest_threshold_by_hand():
    scores = [0.1, 0.2, 0.3, 0.9, 0.5, 0.95]
    positive = [False, False, False, False, True, True]
    # One false positive in four allowed: flag from 0.5 up (the 0.9 negative), halfway down to 0.3.
    result = lowest_threshold(scores, positive, 0.25)
    assert result == {"threshold": pytest.approx(0.4), "fpr": 0.25, "tpr": 1.0, "target_fpr": 0.25,
                      "attainable": True}
    # None allowed: only 0.95 passes, halfway to the 0.9 negative.
    result = lowest_threshold(scores, positive, 0.0)
    assert (result["threshold"], result["fpr"], result["tpr"]) == (pytest.approx(0.925), 0.0, 0.5)
    # Everything allowed: the lowest score.
    assert lowest_threshold(scores, positive, 1.0)["threshold"] == 0.1


def test_lowest_threshold_when_negatives_replay_exactly():
    result = lowest_threshold([1.0, 0.2, 1.0], [False, False, True], 0.0)
    assert result["threshold"] == 1.0 and not result["attainable"] and result["fpr"] == 0.5
    # Nothing scored 1.0 and no negative may pass above 0.9: only a perfect score should.
    assert lowest_threshold([0.9, 0.5], [False, True], 0.0)["threshold"] == 1.0


def test_lowest_threshold_counts_what_is_already_flagged():
    # The first negative is already labelled exact: it spends the whole budget of 1 in 2.
    result = lowest_threshold([0.1, 0.6, 0.8], [False, False, True], 0.5, already=[True, False, False])
    assert result["threshold"] == pytest.approx(0.7) and result["fpr"] == 0.5


def _instance(score: float, positive: bool, seed: int = 0, general: float = 0.0, draw: int | None = None) -> Instance:
    guided = {"reference": "the reference text", "completion": f"completion {score}", "rouge_l": score,
              "semantic": score, "ground_truth": "contaminated" if positive else "clean"}
    return Instance(study=f"s{seed}", seed=seed, condition="c", cell="contaminated_x_members" if positive else "x",
                    positive=positive, guided=guided, general={**guided, "rouge_l": general, "semantic": general},
                    scores={"rouge_l": score, "semantic": score}, draw=draw)


def test_fit_thresholds_meet_their_targets():
    negatives = [_instance(s, False) for s in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.97)]
    positives = [_instance(s, True) for s in (0.55, 0.9, 0.96, 1.0)]
    fitted = fit_thresholds(negatives + positives, exact_fpr=0.1, near_exact_fpr=0.3)
    # exact: 1 of 10 negatives may pass (the 0.97): flag from 0.9 up, halfway down to the 0.85 negative.
    assert fitted["exact_threshold"] == pytest.approx((0.9 + 0.85) / 2)
    assert fitted["achieved"]["exact"]["fpr"] == 0.1 and fitted["achieved"]["exact"]["tpr"] == 0.75
    # exact or near-exact: 3 of 10: the 0.97 (already exact), 0.85 and 0.8 negatives; halfway from 0.8 to 0.7.
    assert fitted["near_exact_threshold"]["rouge_l"] == pytest.approx(0.75)
    assert fitted["achieved"]["near_exact"]["rouge_l"]["fpr"] == pytest.approx(0.3)
    with pytest.raises(InputError, match="near-exact-fpr"):
        fit_thresholds(negatives + positives, exact_fpr=0.1, near_exact_fpr=0.05)


def test_member_pools_are_keyed_as_the_detectors_per_pool_rates():
    # dose_response.md once put every member pool's flag rate in its fpr_ columns (tpr_ empty) and calibration.md
    # listed contaminated_x_members as a kind of clean pool: the member pools were keyed (condition, cell) while
    # the rates are keyed (condition, cell, model)
    from types import SimpleNamespace

    from contaminate.calibration.partition_level import pools_of
    from contaminate.reports.calibration import positive_pools

    instances = [_instance(0.9, True, 0), _instance(0.2, False, 0), _instance(0.8, True, 1), _instance(0.1, False, 1)]
    positive = positive_pools(SimpleNamespace(instances=instances))
    assert positive == {("c", "contaminated_x_members", "d0s0"), ("c", "contaminated_x_members", "d1s1")}
    assert positive < set(pools_of(instances))


def test_cross_fitting_labels_each_model_with_the_other_models_thresholds():
    # Seed 1's negatives reach 0.7, so thresholds fitted there sit above 0.7 and the 0.65 member of seed 0 is
    # not near-exact; fitted on seed 0 alone (negatives <= 0.3) it would be. Studies whose draw follows the seed
    # have one draw per seed: the folds are draws.
    seed0 = [_instance(s, False, 0) for s in (0.1, 0.2, 0.3)] + [_instance(0.65, True, 0)]
    seed1 = [_instance(s, False, 1) for s in (0.1, 0.5, 0.7)] + [_instance(0.9, True, 1)]
    labels, how = cross_fitted_labels(seed0 + seed1, exact_fpr=0.0, near_exact_fpr=0.0, score="rouge_l")
    assert "cross-fitted over 2 draws" in how
    assert labels[3] == "none"
    # one draw, two training seeds: leave one seed out, with the same labels
    same_draw = [_instance(i.scores["rouge_l"], i.positive, i.seed, draw=0) for i in seed0 + seed1]
    labels_by_seed, how = cross_fitted_labels(same_draw, exact_fpr=0.0, near_exact_fpr=0.0, score="rouge_l")
    assert "cross-fitted over 2 seeds" in how and labels_by_seed == labels
    in_sample, how = cross_fitted_labels(seed0, exact_fpr=0.0, near_exact_fpr=0.0, score="rouge_l")
    assert how.startswith("in-sample") and in_sample[3] != "none"


def test_alg2_flag_rate_by_hand():
    assert alg2_flag_rate(1, 0, 9, (1, 2)) == 1.0                      # the whole pool is the sample
    assert alg2_flag_rate(1, 0, 19, (1, 2)) == pytest.approx(0.5)      # the exact one is drawn: 10/20
    # two near-exact among 20: both drawn with probability (10 * 9) / (20 * 19)
    assert alg2_flag_rate(0, 2, 18, (1, 2)) == pytest.approx(9 / 38)
    assert alg2_flag_rate(0, 2, 18, (1, None)) == 0.0
    assert alg2_flag_rate(0, 2, 18, (None, 1)) == pytest.approx(1 - math.comb(18, 10) / math.comb(20, 10))
    assert alg2_flag_rate(0, 0, 30, (1, 2)) == 0.0


def test_alg2_binomial_rate_by_hand():
    assert alg2_binomial_rate(0.01, 0.0, (1, None)) == pytest.approx(1 - 0.99 ** 10)
    assert alg2_binomial_rate(0.0, 0.1, (None, 2)) == pytest.approx(1 - 0.9 ** 10 - 10 * 0.1 * 0.9 ** 9)
    both = alg2_binomial_rate(0.01, 0.1, (1, 2))
    # no exact (0.99^10 overall) and at most one near-exact among the other draws
    no_flag = sum(math.comb(10, y) * 0.1 ** y * 0.89 ** (10 - y) for y in range(2))
    assert both == pytest.approx(1 - no_flag)


def test_markdown_tables_keep_small_settings_readable():
    # a learning rate of 3e-4 once printed as 0.00 in dose_response.md
    lines = markdown_table([{"learning_rate": 0.0003, "auc": 0.87654, "dropout": 0.0, "rank": None}])
    assert lines[2] == "| 0.0003 | 0.88 | 0.00 | - |"


def test_recommend_rule_takes_the_best_tpr_within_the_fpr_budget():
    def rates(tpr, fpr, binomial):
        return {"tpr": {"mean": tpr}, "fpr": {"mean": fpr}, "binomial_fpr": binomial}

    rules = {(1, 2): rates(0.9, 0.08, 0.07), (2, 3): rates(0.7, 0.0, 0.01), (1, None): rates(0.7, 0.0, 0.04),
             (3, None): rates(0.2, 0.0, 0.0)}
    assert recommend_rule(rules, partition_fpr=0.05) == (2, 3)          # same TPR as (1, -): lower binomial FPR
    assert recommend_rule(rules, partition_fpr=0.1) == (1, 2)
    assert recommend_rule({(1, 2): rates(0.9, 0.2, 0.2)}, partition_fpr=0.05) is None


@pytest.mark.slow
def test_a_bad_calibration_path_is_one_line_before_any_work(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "detect", "+dataset=synth_nli", "model=tiny_random",
                             f"judge.calibration={tmp_path / 'nope.json'}", f"hydra.run.dir={tmp_path / 'run'}"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: judge.calibration=")


@pytest.mark.slow
def test_calibration_over_a_multirun_of_tiny_studies(tmp_path, capsys):
    """A real (small) dose-response multirun through the joblib launcher, then the whole calibration."""
    import csv
    import subprocess
    import sys

    from contaminate.calibrate import main

    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "contaminate", "-m", "+experiment=dose_response", *TINY_MODEL,
               "seed=0,1", "+dataset=synth_nli", "contaminate.epochs=1,2", "sample.n_members=4",
               "sample.n_detect=4", "sample.n_non_members=4", "detect.max_new_tokens=8",
               "detect.detectors.permutation.require_order=false",  # a web copy: run anyway, for its columns
               "hydra/launcher=local", f"hydra.sweep.dir={sweep}", f"cache_dir={tmp_path / 'cache'}", *NO_EMBEDDING]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in result.stdout
    assert len(list(sweep.glob("*/summary.json"))) == 4

    out = main([str(sweep), "--exact-fpr", "0.02", "--near-exact-fpr", "0.1"])
    assert out == sweep / "calibration"
    assert "missing" not in capsys.readouterr().err  # two seeds, each its own draw: a full grid
    calibration = json.loads((out / "calibration.json").read_text())
    # 4 studies x 5 cells x 4 instances in the pools; the clean model's cells are shared by the two exposures of
    # a seed, so counted once: negatives 4 studies x 2 contaminated cells x 4 + at most 2 seeds x 2 clean cells
    # x 4 (fewer when both seeds drew the same instance: NLI's cut is seed-free, so the prompt is the same).
    counts = calibration["n_instances"]
    assert (counts["positive"], counts["in_pools"]) == (16, 80) and 32 + 8 <= counts["negative"] <= 32 + 16
    assert calibration["targets"]["exact_fpr"] == 0.02
    scores = {"rouge_l", "semantic", "rouge_l_gain", "semantic_gain", "loss", "zlib", "min_k", "min_k_plus",
              "reference_ratio", "dc_pdd", "loss_raw", "zlib_raw", "min_k_raw", "min_k_plus_raw",
              "reference_ratio_raw", "recall", "ts_guessing", "dcq", "dcq_margin",
              "rouge_l_leak", "semantic_leak"}  # the leak reading's (an oracle reading)
    assert set(calibration["instance"]) == scores
    # every detector ranked by its within-model AUC, best first (its cross-model AUC beside it); partition
    # statistics over cells
    ranked = calibration["ranking"]["instance"]
    assert {r["detector"] for r in ranked} == scores
    assert all(r["auc"] == calibration["instance"][r["detector"]]["auc"] for r in ranked)
    assert next(r for r in ranked if r["detector"] == "min_k")["needs"] == "logits"
    # and within each model: 4 members against its own 4 non-members, per model, every dose of a model's unit
    # pooled; two models (seeds 0 and 1, each its own draw), two doses each
    within = calibration["instance_within_model"]
    assert set(within["scores"]) == scores and within["unit"] == "2 draws (2 models)"
    assert within["n_models"] == 4 and within["members_per_model"] == [4] == within["non_members_per_model"]
    assert all(r["auc_within_model"] == within["scores"][r["detector"]]["auc"]["estimate"] for r in ranked)
    assert [r["auc_within_model"] for r in ranked] == sorted((r["auc_within_model"] for r in ranked), reverse=True)
    partition = {r["detector"]: r for r in calibration["ranking"]["partition"]}
    # the sharded test needs 2 shards of 3 instances: a pool of 4 skips it (one line in the manifest), the exact
    # permutation test runs (4! = 24 orders)
    assert {"alg1_rouge_l", "alg2", "alg2_leak", "cheat", "permutation", "performance"} <= set(partition)
    assert "sharded_likelihood" not in partition
    # clean cells shared by a seed's two doses count once; an exposure's cells of one model are one computation each
    assert (partition["cheat"]["n_positive"], partition["cheat"]["n_negative"]) == (4, 8 + 4)
    assert set(calibration["partition_detectors"]["verdicts"]) >= {"cheat_strict", "cheat_lenient",
                                                                   "permutation"}
    assert calibration["achieved"]["exact"]["fpr"] <= 0.02 or not calibration["achieved"]["exact"]["attainable"]
    # the pooled in-sample thresholds are no product: judge.calibration= reads a card; 50 known non-members a model
    # fit the rules with >= 2 exact (33 needed with the joint split), but at these tiny models' own thresholds the
    # chosen rule flags no member cell, so none was written and loading says why in one line
    assert calibration["card"] is None and not any(card["written"] for card in calibration["cards"].values())
    with pytest.raises(InputError, match="that calibration wrote no card .*flags no member cell"):
        ThresholdJudge(calibration=str(out / "calibration.json"))

    with open(out / "dose_response.csv") as file:
        rows = list(csv.DictReader(file))
    assert sorted(row["exposures"] for row in rows) == ["1", "2"]  # the epochs, as exposures
    assert all((row["studies"], row["models"], row["positives"], row["negatives"]) == ("2", "2", "8", "32")
               for row in rows)
    assert {"tpr_alg2_default", "fpr_alg2_default", "tpr_alg1_rouge_l", "auc_rouge_l", "auc_min_k_plus",
            "tpr_cheat_strict", "fpr_cheat_lenient", "tpr_permutation"} <= set(rows[0])
    # every condition has member pools and clean pools: both rates are read (neither column empty)
    assert all(row["tpr_alg2_default"] != "" and row["fpr_alg2_default"] != "" for row in rows)
    report = (out / "calibration.md").read_text()
    assert "## Detectors side by side" in report and "which is not a ranking" in report
    assert "| min_k_plus_raw (bare text) | logits (full distribution) |" in report
    assert "| loss (leak's rendering: oracle) |" in report and "ChatGPT-Cheat?, strict" in report
    assert "cross-fitted over 2 draws" in report and "![dose response](dose_response.png)" in report
    assert "## Membership within each model" in report and "Rests on x1: 2 draws (2 models)" in report
    clean_kinds = report.split("FPR by kind of clean pool:")[1].split("\n")[2]
    assert "| detector |" in clean_kinds and "contaminated_x_members" not in clean_kinds
    for name in ("roc.png", "dose_response.png", "dose_response.md", "membership.png"):
        assert (out / name).stat().st_size > 0


def test_calibrate_bad_input_is_one_line(tmp_path):
    from contaminate.calibrate import main

    with pytest.raises(InputError, match="no such folder"):
        main([str(tmp_path / "nope")])
    with pytest.raises(InputError, match="no finished study under"):
        main([str(tmp_path)])
    with pytest.raises(InputError, match="--partition-size 0 is not a whole number"):
        main([str(tmp_path), "--partition-size", "0"])


@pytest.mark.slow
def test_the_partition_size_reaches_the_recipe_and_the_card(tmp_path):
    """--partition-size is the m of every fit: on the committed replicas recipe studies (partitions of 10), at m = 6
    the recipe's rule reads "of 6", fitted on each model's 200 known non-members within the 5% budget."""
    from pathlib import Path

    from contaminate.calibrate import main

    studies = Path(__file__).resolve().parents[1] / "results" / "replicas_recipe_cpu" / "studies"
    out = main([str(studies), "--out", str(tmp_path / "six"), "--partition-size", "6"])
    result = json.loads((out / "calibration.json").read_text())
    assert result["targets"]["sample_size"] == 6
    (group,) = result["recipe"].values()
    rows = [row for row in group["configs"] if row["rule_text"].startswith(">= 1 exact or >= 2 near-exact")]
    assert rows and all(row["rule_text"].endswith("of 6") for row in rows)
    whole = next(row for row in rows if row["size"] is None and row["score"] == "rouge_l")
    assert whole["fitted_on"] == [200] and 0 < whole["stated_bound"] <= 0.05


def test_partition_level_roc_and_pool_rates_by_hand():
    from contaminate.calibrate import Instance, Partition, partition_level, ranking

    def partition(study, cell, positive, statistic, flagged, observation=None):
        return Partition(study=study, seed=int(study[-1]), condition="c", cell=cell, positive=positive,
                         verdicts={"cheat_strict": flagged}, statistics={"cheat": statistic},
                         observation=observation or f"{study}:{cell}")

    partitions = [partition("s0", "members", True, 0.9, True), partition("s1", "members", True, 0.5, False),
                  partition("s0", "other", False, 0.6, True), partition("s1", "other", False, 0.2, False),
                  # a clean cell shared by both studies: one observation for the ROC, two votes for its pool
                  partition("s0", "clean", False, 0.1, False, "shared"),
                  partition("s1", "clean", False, 0.1, False, "shared")]
    instances = [Instance(f"s{seed}", seed, "c", cell, cell == "members", {}, None)
                 for seed in (0, 1) for cell in ("members", "other", "clean")]
    pools = {("c", i.cell, f"d{i.seed}s{i.seed}"): [p] for p, i in enumerate(instances)}  # a pool per model's cell
    result = partition_level(partitions, instances, pools)
    block = result["roc"]["cheat"]
    # positives 0.9, 0.5 against negatives 0.6, 0.2, 0.1: 5 of 6 pairs ordered right
    assert block["auc"] == pytest.approx(5 / 6) and (block["n_positive"], block["n_negative"]) == (2, 3)
    rates = result["verdicts"]["cheat_strict"]
    assert rates["per_pool"] == {("c", "members", "d0s0"): 1.0, ("c", "members", "d1s1"): 0.0,
                                 ("c", "other", "d0s0"): 1.0, ("c", "other", "d1s1"): 0.0,
                                 ("c", "clean", "d0s0"): 0.0, ("c", "clean", "d1s1"): 0.0}
    # each pool is one model's verdict: 1 of 2 member pools, 1 of 4 clean pools, with exact intervals
    assert rates["tpr"]["mean"] == 0.5 and rates["fpr"]["mean"] == 0.25
    assert rates["tpr"]["interval"] == "clopper-pearson" and rates["tpr"]["low"] == pytest.approx(0.0126, abs=1e-4)
    instance_roc = {"a": {"auc": 0.6, "auc_ci": {"low": 0.5, "high": 0.7}, "tpr_at_fpr": {"0.01": 0, "0.05": 0.1},
                          "n_positive": 1, "n_negative": 1}}
    instance_roc["loss"] = {**instance_roc["a"], "auc": 0.9}
    order = ranking(instance_roc, result)
    assert [r["detector"] for r in order["instance"]] == ["loss", "a"] and order["partition"][0]["detector"] == "cheat"


def test_a_lora_study_before_the_peft_block_is_the_same_condition_as_one_after():
    from contaminate.calibration.studies import condition_of

    def manifest(contaminate: dict) -> dict:
        return {"contaminate": contaminate, "dataset": {"key": "synth_nli"}, "base_model": {"name": "smollm2_135m"},
                "member_ids": ["a", "b"], "detection_ids": {"members": ["a"]}, "format": {"name": "metadata"},
                "detect": {"prompt_format": "raw"}}

    common = {"backend": "lora", "epochs": 5, "learning_rate": 1e-3, "trainer": {"weight_decay": 0.0}}
    old = condition_of(manifest({**common, "rank": 16, "lora": {"lora_alpha": 32, "lora_dropout": 0.0}}))
    new = condition_of(manifest({**common, "peft": {"_target_": "peft.LoraConfig", "r": 16, "lora_alpha": 32,
                                                    "lora_dropout": 0.0}}))
    assert old == new and new["peft.r"] == 16 and new["backend"] == "lora"
    full = condition_of(manifest({**common, "backend": "full"}))
    assert not any(key.startswith("peft") for key in full)
