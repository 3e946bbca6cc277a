"""The practitioner's recipe (detect/judges/recipe.py): the exceedance law against brute force, the numbers of known
non-members it needs, its stated bound held by simulation over thousands of clean partitions, its judge, its bad
input; and the lab's validation of it (contaminate/calibration/recipe.py) on a hand-built sweep, by hand."""

import itertools
import json
import math

import numpy as np
import pytest
from lean import lean
from scipy.optimize import brentq
from scipy.stats import beta, binom

from detect.errors import InputError
from detect.judges.recipe import (
    RecipeJudge,
    conditional_fprs,
    exceedances,
    fit_line,
    fit_recipe,
    joint_ranks,
    label,
    lowest_rank,
    n_needed,
    rule_fpr,
    rule_needs,
    tail,
)


def _arrangements(n: int, m: int):
    """Every order of n known (False) and m new (True) scores, equally likely under exchangeability."""
    for positions in itertools.combinations(range(n + m), m):
        chosen = set(positions)
        yield [p in chosen for p in range(n + m)]


def _above(order: list[bool], k: int) -> int:
    """New scores after the k-th known one (k = n + 1: never)."""
    seen = 0
    for position, new in enumerate(order):
        if not new:
            seen += 1
            if seen == k:
                return sum(order[position + 1:])
    return 0


def test_the_exceedance_law_is_the_brute_force_count():
    n, m = 6, 4
    orders = list(_arrangements(n, m))
    for k in range(1, n + 2):
        counts = np.bincount([_above(o, k) for o in orders], minlength=m + 1) / len(orders)
        assert exceedances(n, m, k) == pytest.approx(counts)
    # one exact label among m above the largest of n: m / (n + m), the union bound's ~200 for 10 at 5%
    assert tail(400, 10, 400, 1) == pytest.approx(10 / 410)
    assert sum(exceedances(50, 10, 37)) == pytest.approx(1.0)


def test_the_rule_fpr_is_the_brute_force_count_of_the_joint_labels():
    # one score for both labels: exact above rank k_e, near-exact above rank k_n and not exact
    n, m = 7, 4
    orders = list(_arrangements(n, m))
    for k_exact, k_near in [(7, 5), (6, 6), (8, 4), (7, 1)]:
        for rule in [(1, 2), (2, 2), (None, 2), (1, None), (1, 1)]:
            flagged = 0
            for order in orders:
                exact, either = _above(order, k_exact), _above(order, min(k_near, k_exact))
                flagged += (rule[0] is not None and exact >= rule[0]) or \
                    (rule[1] is not None and either - exact >= rule[1])
            assert rule_fpr(n, m, k_exact, k_near, rule) == pytest.approx(flagged / len(orders)), (k_exact, k_near,
                                                                                                   rule)


def test_how_many_known_non_members_each_part_needs():
    # >= 1 exact of 10 at 2.5% (half the 5% budget) needs the largest of 390; at the whole 5%, 190
    assert n_needed(10, 1, 0.025) == 390 and n_needed(10, 1, 0.05) == 190
    assert 10 / (390 + 10) <= 0.025 < 10 / (389 + 10)
    assert n_needed(10, 2, 0.025) == 51 and n_needed(10, 2, 0.05) == 33 and n_needed(10, None, 0.05) == 0
    assert lowest_rank(389, 10, 1, 0.025) is None and lowest_rank(390, 10, 1, 0.025) == 390
    assert lowest_rank(100, 10, None, 0.05) == 101  # a count the rule does not use: never


def test_fit_recipe_by_hand_and_its_refusal():
    scores = [k / 1000 for k in range(400)]  # 0.000 ... 0.399, all distinct
    fit = fit_recipe(scores, partition_size=10)
    # the exact part at its half of the 5% budget (the largest of 400: 10 / 410 <= 0.025); the near-exact part then
    # spends the rest of the whole budget under the rule's joint law: the lowest rank whose rule FPR stays <= 0.05
    k_near = next(k for k in range(1, 401) if rule_fpr(400, 10, 400, k, (1, 2)) <= 0.05)
    assert k_near == 391 and rule_fpr(400, 10, 400, 390, (1, 2)) > 0.05
    assert k_near < lowest_rank(400, 10, 2, 0.025) == 392  # lower than bounding each part within its half
    assert fit["exact"]["rank"] == 400 and fit["exact"]["threshold"] == 0.399
    assert fit["near_exact"]["rank"] == k_near and fit["near_exact"]["threshold"] == (k_near - 1) / 1000
    assert fit["bound"] == pytest.approx(rule_fpr(400, 10, 400, k_near, (1, 2))) and fit["bound"] <= 0.05
    assert fit["exact"]["bound"] == pytest.approx(10 / 410)
    assert label(fit, 0.5, 0.5) == "exact" and label(fit, 0.399, 0.399) == "near_exact"  # strictly above
    assert label(fit, (k_near - 1) / 1000, 0.0) == "none"
    # two scores: the union of the parts is the stated bound, the near-exact part taking what the exact part left
    two = fit_recipe(scores, [s / 2 for s in scores], partition_size=10, score="semantic")
    assert two["bound"] == pytest.approx(two["exact"]["bound"] + two["near_exact"]["bound"]) and two["bound"] <= 0.05
    assert two["near_exact"]["rank"] == lowest_rank(400, 10, 2, 0.05 - 10 / 410)
    # the paper's rule at 5% from 190 known non-members (the exact part alone at the whole budget, near-exact labels
    # above rank 189 only), refused at 189 with the number
    assert fit_recipe(scores[:190], partition_size=10)["exact"]["rank"] == 190
    # a near-exact-only rule whose bar would sit above every known score is too few, not a rule that never flags
    assert joint_ranks(32, 10, (None, 2), 0.05, 0.5, True) is None and joint_ranks(33, 10, (None, 2), 0.05, 0.5, True)
    with pytest.raises(InputError, match=r"^189 known non-members are too few .* its exact part alone needs 190; give "
                                         r"at least 190 known non-members.*alg2.min_exact=null: 33 at 0.05\)$"):
        fit_recipe(scores[:189], partition_size=10)
    with pytest.raises(InputError, match="judge.budget=1.5"):
        fit_recipe(scores, partition_size=10, budget=1.5)


def test_too_few_for_the_rules_exact_part_but_enough_for_its_near_exact_part_fits_that_part_and_says_so():
    """fit_narrowed (a study's recipe, detect.known_non_members.narrow): 50 known non-members cannot bound the paper's
    rule at 5% (190 needed) but can its near-exact part (33): that part's fit, labelled; 190 or more: the rule itself;
    under 33: the rule's own refusal. Then the study's closing lines: each model's fit and its cells under it."""
    from contaminate.reports.run import command_lines
    from detect.judges.recipe import fit_line, fit_narrowed

    scores = [k / 1000 for k in range(400)]
    fit = fit_narrowed(scores[:50], partition_size=10)
    plain = fit_recipe(scores[:50], partition_size=10, rule=(None, 2))
    assert fit == {**plain, "narrowed": {"rule": {"min_exact": 1, "min_near_exact": 2}, "needs": 190}}
    assert fit["near_exact"]["threshold"] == 0.049 and fit["exact"]["threshold"] == float("inf")
    assert label(fit, 1.0, 1.0) == "near_exact"  # a replica: above the near-exact bar, never "exact"
    assert fit_line(fit).startswith("the recipe on 50 known non-members, its near-exact part alone (the rule >= 1 "
                                    "exact or >= 2 near-exact of 10 needs 190): near-exact rouge_l > 0.049; rule >= 2 "
                                    "near-exact of 10; partition FPR <= 0.0254")
    assert "narrowed" not in fit_narrowed(scores[:190], partition_size=10)
    with pytest.raises(InputError, match=r"^32 known non-members are too few .* needs 190; .*: 33 at 0.05\)$"):
        fit_narrowed(scores[:32], partition_size=10)

    def cell(checkpoint: str, truth: str) -> dict:
        return {"checkpoint": checkpoint, "ground_truth": truth, "alg2": {"exact": 0, "near_exact": 0,
                "contaminated": False}, "follow": {"informative": True}}

    summary = {"cells": {"contaminated_x_members": cell("contaminated", "contaminated"),
                         "clean_x_members": cell("clean", "clean")},
               "recipe": {"models": {"contaminated": fit, "clean": {"refused": "too few"}},
                          "cells": {"contaminated_x_members": {"exact": 0, "near_exact": 3, "contaminated": True}}},
               "accuracy": {"alg2": 0.5}}
    lines = command_lines(summary)
    assert lines[0] == "contaminated_x_members       truth contaminated Algorithm 2: 0 exact, 0 near-exact -> clean  " \
                       "(wrong)"
    assert lines[2:5] == [f"recipe on the contaminated model: {fit_line(fit)}",
                          "contaminated_x_members       truth contaminated recipe: 0 exact, 3 near-exact -> "
                          "contaminated", "recipe on the clean model: refused: too few"]


def test_the_joint_split_is_never_above_each_part_within_its_share():
    # the same stated bound (<= the budget), every threshold the same or lower, over rules and sizes
    for n in (60, 120, 390, 700):
        for rule in ((1, 2), (None, 2), (2, 3), (1, None)):
            alpha_exact, alpha_near = (0.025, 0.025) if None not in rule else (0.05, 0.05)
            old_exact, old_near = lowest_rank(n, 10, rule[0], alpha_exact), lowest_rank(n, 10, rule[1], alpha_near)
            if old_exact is None or old_near is None:
                continue
            fit = fit_recipe([k / 1000 for k in range(n)], partition_size=10, rule=rule)
            assert fit["bound"] <= 0.05 + 1e-12
            assert fit["exact"]["rank"] <= old_exact and fit["near_exact"]["rank"] <= min(old_near, old_exact)


def test_what_a_rule_needs_is_where_the_joint_split_first_fits():
    # rule_needs (the refusal's number and contaminate/analyses/recipe_needs.py's table) against joint_ranks itself,
    # both scores
    for rule in ((1, 2), (1, None), (None, 2), (None, 3), (2, 2)):
        for m, budget in ((10, 0.05), (10, 0.01), (20, 0.05)):
            need = rule_needs(m, rule, budget)
            for one_score in (True, False):
                assert joint_ranks(need - 1, m, rule, budget, 0.5, one_score) is None, (rule, m, budget, one_score)
                assert joint_ranks(need, m, rule, budget, 0.5, one_score) is not None, (rule, m, budget, one_score)
    assert rule_needs(10, (1, 2), 0.05) == 190 and rule_needs(10, (None, 2), 0.05) == 33


def test_the_training_conditional_view_by_hand():
    # the conditional FPR's mean over the known non-members' draw is the marginal law (Dirichlet coverages)
    for n, k_exact, k_near, rule in [(60, 58, 50, (1, 2)), (100, 101, 98, (None, 2)), (40, 38, 30, (2, 2))]:
        fprs = conditional_fprs(n, 10, k_exact, k_near, rule, draws=200_000, rng=np.random.default_rng(1))
        assert fprs.mean() == pytest.approx(rule_fpr(n, 10, k_exact, k_near, rule), abs=0.002)
    # near-exact only at n = 100: rank 98, p ~ Beta(3, 98), FPR(p) = P(Bin(10, p) >= 2); P(FPR > 0.05) by quadrature
    fit = fit_recipe([k / 1000 for k in range(100)], partition_size=10, rule=(None, 2))
    assert fit["near_exact"]["rank"] == 98
    p_star = brentq(lambda p: binom.sf(1, 10, p) - 0.05, 1e-6, 0.5)
    assert fit["conditional"]["p_over_budget"] == pytest.approx(beta(3, 98).sf(p_star), abs=0.003)
    assert fit["conditional"]["p_over_budget"] == pytest.approx(0.28, abs=0.01)  # the 0.28
    # the paper's rule on 400 (docs/calibration.md quotes these): bound 0.046, over 5% with probability 0.35, under
    # 0.081 with probability 0.9
    paper = fit_recipe([k / 1000 for k in range(400)], partition_size=10)
    assert (round(paper["bound"], 3), round(paper["conditional"]["p_over_budget"], 2),
            round(paper["conditional"]["quantile"], 3)) == (0.046, 0.35, 0.081)
    over = fit["conditional"]["p_over_budget"]
    assert f"this fit's own FPR: over 0.05 with probability {over:.2f}, at most" in fit_line(fit)


@pytest.mark.parametrize("n, rule, score", [(20, (None, 3), "rouge_l"), (50, (None, 2), "rouge_l"),
                                            (100, (None, 2), "rouge_l"), (100, (None, 2), "semantic"),
                                            (400, (1, 2), "rouge_l")])
def test_the_stated_bound_holds_over_simulated_clean_partitions(n, rule, score):
    # 2,000 simulated suspect models: n known non-members and one clean partition of 10 from the same distribution,
    # thresholds fitted on the known ones, the partition judged. With continuous scores the realised FPR is the
    # stated bound itself (one score: an exact law), within Monte Carlo error; with tied (rounded) scores it is below.
    rng = np.random.default_rng(n + len(score))
    reps = 2000
    for rounded in (False, True):
        flagged, bound = 0, None
        for _ in range(reps):
            exact = rng.beta(2, 5, size=n + 10)
            near = exact * 0.8 + rng.normal(0, 0.05, size=n + 10)  # a second score, correlated
            if rounded:
                exact, near = exact.round(1), near.round(1)
            fit = fit_recipe(list(exact[:n]), None if score == "rouge_l" else list(near[:n]), partition_size=10,
                             rule=rule, score=score)
            bound = fit["bound"]
            labels = [label(fit, e, e if score == "rouge_l" else s) for e, s in zip(exact[n:], near[n:])]
            flagged += (rule[0] is not None and labels.count("exact") >= rule[0]) or \
                (rule[1] is not None and labels.count("near_exact") >= rule[1])
        realised, error = flagged / reps, 3 * math.sqrt(bound * (1 - bound) / reps)
        assert bound <= 0.05 and realised <= bound + error, (rounded, realised, bound)
        if score == "rouge_l" and not rounded:  # exact, not merely a bound
            assert realised >= bound - error, (realised, bound)
    # the same simulation judged by a naive empirical quantile (the 95th percentile of the known scores) overshoots
    naive = np.mean([(rng.beta(2, 5, 10) > np.quantile(rng.beta(2, 5, n), 0.95)).sum() >= 2 for _ in range(reps)])
    assert naive > 0.05


def test_the_recipe_judge_fits_on_rows_and_labels(tmp_path):
    known = tmp_path / "known.jsonl"
    known.write_text(json.dumps({"sentence1": "a", "sentence2": "b", "label": "0 (entailment)"}) + "\n")
    judge = RecipeJudge(known_non_members=str(known))
    rows = [{"reference": f"ref {k}", "completion": f"other {k}", "rouge_l": k / 100, "semantic": 0.0}
            for k in range(60)]
    fit = judge.fit_on(rows, partition_size=10, rule=(None, 2))
    assert fit["n"] == 60 and math.isinf(fit["exact"]["threshold"])
    assert judge([{"reference": "x y", "completion": "x y", "rouge_l": 1.0, "semantic": 1.0},
                  {"reference": "x y", "completion": "z", "rouge_l": 0.0, "semantic": 0.0}]) == ["near_exact", "none"]
    described = judge.describe()
    assert described["fit"]["bound"] == fit["bound"] and described["known_non_members"] == str(known)
    from detect.judges.threshold import thresholds_line

    assert "partition FPR <= " in thresholds_line(described) and "60 known non-members" in thresholds_line(described)
    with pytest.raises(InputError, match="judge=recipe fits its thresholds on known non-members"):
        RecipeJudge()
    with pytest.raises(InputError, match="no such file"):
        RecipeJudge(known_non_members=str(tmp_path / "nope.jsonl"))
    with pytest.raises(RuntimeError, match="labels after fit_on"):
        RecipeJudge(known_non_members=str(known))([rows[0]])


def test_known_non_members_in_the_partition_and_too_few_are_one_line_before_any_model(tmp_path, compose_config):
    from detect.cli import instantiate
    from detect.datasets import load_split, sample
    from detect.detectors import build
    from detect.pipeline import recipe_known

    cfg = compose_config("detect", ["+dataset=synth_nli", "judge=recipe",
                                    f"judge.known_non_members={tmp_path}/k.jsonl"])
    examples = load_split(cfg.dataset, "test")
    judged = sample(examples, 10, seed=0)
    taken = {j.instance_id for j in judged}
    clean = [{"sentence1": e.text, "sentence2": e.text_pair, "label": e.label} for e in examples
             if e.instance_id not in taken][:400]
    rows = [*clean, {"sentence1": judged[3].text, "sentence2": judged[3].text_pair, "label": judged[3].label}]
    (tmp_path / "k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge, detectors = instantiate(cfg.judge), build(cfg.detect.detectors)
    with pytest.raises(InputError, match=rf"^judge.known_non_members=.*k.jsonl: 1 of its {len(rows)} instances is in "
                                         rf"the partition being judged \(instance {judged[3].instance_id} of "
                                         r"synth_nli test\); known non-members must be"):
        recipe_known(judge, cfg.dataset, "test", judged, detectors)
    (tmp_path / "k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in clean[:100]))
    with pytest.raises(InputError, match="^100 known non-members are too few .* needs 190"):
        recipe_known(judge, cfg.dataset, "test", judged, detectors)
    (tmp_path / "k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in clean))
    known = recipe_known(judge, cfg.dataset, "test", judged, detectors)
    assert len(known) == 400 and judge.partition_size == 10 and judge.rule == (1, 2)


def test_the_known_non_members_binomial_reading_of_the_paper_rule():
    # at p_n = 5% near-exact per clean instance the paper's rule (>= 2 of 10) fires ~8.6% (method section 11)
    assert 1 - binom.cdf(1, 10, 0.05) == pytest.approx(0.086, abs=0.001)


@pytest.mark.slow
def test_python_m_detect_with_known_non_members_or_a_card_prints_what_its_verdict_rests_on(tmp_path):
    import subprocess
    import sys

    from omegaconf import OmegaConf

    from detect.datasets import load_split

    train = load_split(OmegaConf.load("conf/dataset/synth_nli.yaml"), "train")[:60]  # not the test split judged
    known = tmp_path / "known.jsonl"
    known.write_text("".join(json.dumps({"sentence1": e.text, "sentence2": e.text_pair, "label": e.label}) + "\n"
                             for e in train))
    tiny = ["+dataset=synth_nli", "model=tiny_random", "detect.max_new_tokens=6", "detect.semantic_model=null", *lean()]
    result = subprocess.run([sys.executable, "-m", "detect", *tiny, "judge=recipe",
                             f"judge.known_non_members={known}", "detect.detectors.alg2.min_exact=null",
                             f"hydra.run.dir={tmp_path / 'recipe'}"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(text for text in result.stdout.splitlines() if text.startswith("Algorithm 2:"))
    summary = json.loads((tmp_path / "recipe" / "summary.json").read_text())
    assert f"partition FPR <= {summary['judge']['fit']['bound']:.4f}" in line and "60 known non-members" in line
    assert summary["judge"]["fit"]["rule"] == {"min_exact": None, "min_near_exact": 2}
    assert len((tmp_path / "recipe" / "known_non_members.jsonl").read_text().splitlines()) == 60
    # the paper's rule from 60: refused in one line, before any model opens, saying how many it needs
    refused = subprocess.run([sys.executable, "-m", "detect", *tiny, "judge=recipe",
                              f"judge.known_non_members={known}", f"hydra.run.dir={tmp_path / 'refused'}"],
                             capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith(
        "error: 60 known non-members are too few") and "needs 190" in refused.stderr
    # a card: what it rests on beside the verdict
    card = {"format": "contamination-lab threshold card 1", "score": "rouge_l", "exact_threshold": 0.83,
            "near_exact_threshold": 0.6, "rule_text": ">= 1 exact or >= 2 near-exact of 10", "budget": 0.05,
            "rests_on": {"regime": "metadata/none/full", "dataset": "synth_nli", "model": "smollm2_135m",
                         "unit": "3 draws (3 models)", "known_non_members_per_model": [400]},
            "held_out": {"fpr": {"estimate": 0.02, "low": 0.0, "high": 0.3}}}
    (tmp_path / "card.json").write_text(json.dumps(card))
    carded = subprocess.run([sys.executable, "-m", "detect", *tiny, f"judge.calibration={tmp_path / 'card.json'}",
                             f"hydra.run.dir={tmp_path / 'card'}"], capture_output=True, text=True, timeout=600)
    assert carded.returncode == 0, carded.stderr[-2000:]
    line = next(text for text in carded.stdout.splitlines() if text.startswith("Algorithm 2:"))
    assert "threshold card (metadata/none/full, synth_nli, smollm2_135m; 3 draws (3 models)" in line
    assert "held-out partition FPR 0.02 [0.00, 0.30]" in line


def test_the_study_table_shows_each_cells_recipe_verdict_beside_algorithm_2s():
    """contaminate/reports/study.py: a recipe column where the study fitted one (its model's cells only; "-" for a
    cell of a model whose recipe was refused), uninformative where that model mostly did not answer."""
    from contaminate.reports.study import CELLS, verdict_table

    def cell(name: str) -> dict:
        truth = "contaminated" if name == "contaminated_x_members" else "clean"
        return {"ground_truth": truth, "alg2": {"exact": 0, "near_exact": 0, "contaminated": False},
                "alg1": {"rouge_l": {"guided_mean": 0.5, "general_mean": 0.25, "p_value": 0.125}},
                "follow": {"informative": name.startswith("contaminated"), "rate": 0.16, "n": 50,
                           "on": "known non-members", "bar": 0.5}}  # a study's follow block

    summary = {"cells": {name: cell(name) for name in CELLS},
               "recipe": {"cells": {"contaminated_x_members": {"exact": 0, "near_exact": 7, "contaminated": True},
                                    "clean_x_members": {"exact": 0, "near_exact": 2, "contaminated": True}}}}
    lines = verdict_table(summary)
    assert lines[0] == "| cell | exact | near-exact | Alg. 2 | recipe: exact / near-exact, verdict | Alg. 1 ROUGE-L " \
                       "guided / general (p) |"
    assert lines[2] == "| contaminated x members | 0 | 0 | clean (wrong) | 0 / 7, contaminated (right) | 0.50 / 0.25 " \
                       "(0.125) |"
    assert lines[3].split(" | ")[4] == "-"
    assert lines[5].split(" | ")[3:5] == ["uninformative (the rule: clean, right)",
                                          "0 / 2, uninformative (the rule: contaminated, wrong)"]
    del summary["recipe"]  # no recipe fitted: the table as before issue 71
    assert "recipe" not in verdict_table(summary)[0]
