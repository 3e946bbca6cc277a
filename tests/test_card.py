"""The recipe validated within each model and the threshold card (contaminate/calibration/recipe.py, card.py) on
hand-built sweeps whose every rate is known by hand; the card loaded by judge.calibration=; their refusals."""

import json
import math

import pytest
from sweeps import study, sweep

from contaminate.calibration.partition_level import alg2_flag_rate
from detect.errors import InputError
from detect.judges.recipe import fit_recipe, rule_fpr
from detect.judges.threshold import ThresholdJudge

KNOWN = [k / 1000 for k in range(400)]         # each contaminated model's known non-members: 0.000 ... 0.399
K_NEAR = 391  # the near-exact rank once the exact part sits at the 400th: the lowest whose rule FPR stays <= 5%
TPR_6_OF_20 = 1 - math.comb(14, 10) / math.comb(20, 10)  # a 10-sample of 20 members, 6 of them replayed exactly


def _by_hand(root, *, draws: int = 3, seeds: int = 1, replays: int = 6, known=KNOWN, odd_non_member: float = 0.45,
             dataset: str = "synth_nli", fmt: str = "metadata", non_member: float = 0.1, model: str = "tiny") -> None:
    """Contaminated models (one a draw and seed) whose known non-members are KNOWN; 20 non-members at
    ``non_member``, draw 0's first one at ``odd_non_member`` (above every known score: an exact label); 20 members,
    ``replays`` of them replayed exactly, the rest at 0.1; the base model reads its known non-members below 0.05,
    its cells at 0.04 and 0.01."""
    for draw, seed in ((d, d + s) for d in range(draws) for s in range(seeds)):
        non_members = [odd_non_member if draw == 0 else non_member] + [non_member] * 19
        study(root / f"{dataset}_{fmt}_d{draw}s{seed}", draw=draw, seed=seed, exposures=4, dataset=dataset, fmt=fmt,
              model=model, cells={
            "contaminated_x_members": ("contaminated", [1.0] * replays + [0.1] * (20 - replays)),
            "contaminated_x_non_members": ("clean", non_members),
            "contaminated_x_known_non_members": ("clean", list(known)),
            "clean_x_members": ("clean", [0.04] * 20),
            "clean_x_non_members": ("clean", [0.01] * 20),
            "clean_x_known_non_members": ("clean", [k / 8000 for k in range(400)])})


def _calibrate(*folders, out=None):
    from contaminate.calibrate import main

    out = main([*map(str, folders), *([] if out is None else ["--out", str(out)])])
    return out, json.loads((out / "calibration.json").read_text())


def test_the_recipe_validated_within_each_model_by_hand(tmp_path):
    _by_hand(tmp_path / "sweep")
    out, result = _calibrate(tmp_path / "sweep", out=tmp_path / "out")
    block = result["recipe"]["metadata/none/full · synth_nli"]
    assert block["models"] == {"contaminated": 3, "clean": 1, "known_non_members": [400, 1200]}
    headline = block["configs"][0]
    assert (headline["score"], headline["rule_text"], headline["fitted_on"]) == (
        "rouge_l", ">= 1 exact or >= 2 near-exact of 10", [400, 1200])
    # the largest of the models' bounds: the base model's on its 1200 (three draws' known non-members) is 0.0436
    base = fit_recipe([k / 8000 for k in range(400)] * 3, partition_size=10)
    assert headline["stated_bound"] == pytest.approx(max(rule_fpr(400, 10, 400, K_NEAR, (1, 2)), base["bound"]))
    assert headline["thresholds"]["d0s0"] == {"exact": 0.399, "near_exact": (K_NEAR - 1) / 1000}
    # draw 0's odd non-member (0.45) is above the largest known score: exact, and half the 10-samples of its 20 hold it
    assert headline["per_model"]["d0s0"]["non_members"] == 0.5 and headline["per_model"]["d1s1"]["non_members"] == 0
    assert headline["fpr"]["estimate"] == pytest.approx(1 / 6) and headline["fpr"]["labelled"] == 1
    assert headline["fpr"]["unit"] == "3 draws (3 models)" and headline["fpr"]["low"] == 0.0
    assert headline["tpr_by_dose"]["4"]["estimate"] == pytest.approx(TPR_6_OF_20)
    assert headline["tpr_by_dose"]["4"]["estimate"] == pytest.approx(alg2_flag_rate(6, 0, 14, (1, 2)))
    # the base model: one clean model however many studies read it, its own 1200 known non-members, nothing flagged
    assert headline["fpr_clean_models"]["estimate"] == 0.0 and headline["fpr_clean_models"]["unit"] == "1 clean model"
    # fewer known non-members: the paper's rule is refused below 190, near-exact only is fitted
    by_size = {(c["size"], c["rule_text"]): c for c in block["configs"] if c["size"]}
    assert by_size[(100, ">= 1 exact or >= 2 near-exact of 10")]["n_refused"] == 4
    assert by_size[(100, ">= 2 near-exact of 10")]["n_refused"] == 0
    # the logit scores (loss = ROUGE-L - 3 here) at the practitioner's threshold on the same known non-members
    loss = block["logit"]["loss"]["0.05"]
    assert loss["fitted_on"] == [400] and loss["non_members"]["k"] == 1  # draw 0's odd one: -2.55 > the 381st
    report = (out / "calibration.md").read_text()
    assert report.index("## The practitioner's recipe, validated within each model") < report.index(
        "## The threshold card") < report.index("## Membership within each model")


def test_the_card_is_fitted_within_models_and_held_out_by_hand(tmp_path):
    _by_hand(tmp_path / "sweep")
    out, result = _calibrate(tmp_path / "sweep", out=tmp_path / "out")
    card = result["card"]
    assert card["written"] and card == result["cards"]["metadata/none/full · synth_nli"]
    assert card["rule"] == {"min_exact": 1, "min_near_exact": 2}  # ties with >= 1 exact or >= 3: the paper's
    assert card["exact_threshold"] == pytest.approx(0.399) and card["near_exact_threshold"] == pytest.approx(
        (K_NEAR - 1) / 1000)
    assert card["rests_on"]["unit"] == "3 draws (3 models)" and card["rests_on"]["known_non_members_per_model"] == [400]
    held = card["held_out"]
    # each fold's card is the other two draws' mean: the same thresholds here, applied >= as judge=threshold does
    assert [f["rule"] for f in held["folds"]] == [">= 1 exact or >= 2 near-exact of 10"] * 3
    assert held["fpr"]["per_draw"] == {"0": 0.5, "1": 0.0, "2": 0.0} or held["fpr"]["per_draw"] == {0: 0.5, 1: 0.0,
                                                                                                     2: 0.0}
    assert held["tpr_by_dose"]["4"]["estimate"] == pytest.approx(TPR_6_OF_20)
    assert card["transfer"] is None and card["transfer_note"].startswith("not measured")
    assert json.loads((out / "card.json").read_text()) == card
    # what judge.calibration= makes of it: the thresholds, and a line saying what they rest on
    judge = ThresholdJudge(calibration=str(out / "card.json"))
    assert (judge.exact_threshold, judge.near_exact_threshold) == (card["exact_threshold"],
                                                                   card["near_exact_threshold"])
    line = judge.describe()["card"]
    assert "3 draws (3 models), 400 known non-members each" in line and "held-out partition FPR 0.17" in line
    assert ThresholdJudge(calibration=str(out / "calibration.json")).exact_threshold == card["exact_threshold"]


def test_the_card_does_not_pool_the_base_models_easy_negatives(tmp_path):
    """Pooled with the base model's known non-members (all below 0.05), the recipe's thresholds would sit far lower
    and label the contaminated models' own clean instances well above its budget; the card, fitted within each
    contaminated model, sits above every one of them."""
    sweep(tmp_path / "sweep", n_known=400, known_high=0.6, base_high=0.05)
    _, result = _calibrate(tmp_path / "sweep", out=tmp_path / "out")
    card = result["card"]
    from contaminate.calibration.studies import load_instances

    instances, _, _ = load_instances([tmp_path / "sweep"])
    known = [i for i in instances if i.known]
    contaminated = {i.observation: i.exact_score for i in known if i.guided["checkpoint"] == "contaminated"}
    base = {i.observation: i.exact_score for i in known if i.guided["checkpoint"] == "clean"}
    pooled = fit_recipe([*contaminated.values(), *base.values()], partition_size=10)
    assert card["exact_threshold"] > pooled["exact"]["threshold"] or card["near_exact_threshold"] > \
        pooled["near_exact"]["threshold"]
    assert card["near_exact_threshold"] > pooled["near_exact"]["threshold"]
    # the pooled near-exact bar labels the contaminated models' own known non-members far above its 2.5% share
    share = sum(v > pooled["near_exact"]["threshold"] for v in contaminated.values()) / len(contaminated)
    assert share > 0.025


@pytest.mark.parametrize("kwargs, why", [
    ({"replays": 0}, r"flags no member cell of the 3 draws \(3 models\) at their own thresholds \(TPR 0\)"),
    # the rules with >= 2 exact need 33 (the exact part within the whole 5%), the paper's 190: 30 are too few for all
    ({"known": KNOWN[:30]}, r"too few known non-members for the budget \(30 known non-members are too few"),
    ({"draws": 1, "seeds": 2}, r"1 member draw with known non-members; a card is fitted on some draws and scored on"),
])
def test_a_card_that_would_detect_nothing_or_rest_on_too_little_is_not_written(tmp_path, kwargs, why, capsys):
    _by_hand(tmp_path / "sweep", **kwargs)
    out, result = _calibrate(tmp_path / "sweep", out=tmp_path / "out")
    card = result["cards"]["metadata/none/full · synth_nli"]
    assert not card["written"] and result["card"] is None
    assert __import__("re").search(why, card["why"])
    assert not (out / "card.json").exists()
    assert f"no threshold card: {card['why']}" in capsys.readouterr().err
    with pytest.raises(InputError, match="that calibration wrote no card"):
        ThresholdJudge(calibration=str(out / "calibration.json"))


def test_the_card_transfers_to_another_dataset_and_format_as_an_equivalence_test(tmp_path):
    _by_hand(tmp_path / "sweep")
    # another dataset and format whose models write their non-members near the card's bars: every partition flagged
    _by_hand(tmp_path / "other", dataset="synth_news", fmt="instance_only", non_member=0.5, odd_non_member=0.5)
    out, result = _calibrate(tmp_path / "sweep", tmp_path / "other", out=tmp_path / "out")
    card = result["cards"]["metadata/none/full · synth_nli"]
    moved = card["transfer"]["instance_only/none/full · synth_news"]
    assert moved["fpr"]["estimate"] == 1.0 and moved["unit"] == "3 draws (3 models)"
    # 3 of 3 partitions flagged: the one-sided lower bound 0.05^(1/3) = 0.37 is over the 5% budget
    test = moved["equivalence"]
    assert test["verdict"] == "over" and (test["k"], test["n"]) == (3, 3)
    assert moved["equivalence"]["power"] == 0.0
    # two cards: each its own file, and calibration.json names none as the one to load
    assert result["card"] is None and sorted(p.name for p in out.glob("card*.json")) == [
        "card_instance_only_none_full_synth_news.json", "card_metadata_none_full_synth_nli.json"]
    with pytest.raises(InputError, match="holds 2 cards"):
        ThresholdJudge(calibration=str(out / "calibration.json"))
    assert "Transfer to the other groups' contaminated models" in (out / "calibration.md").read_text()


def test_a_card_fitted_on_one_base_model_is_applied_to_the_others_models_both_ways(tmp_path):
    """Two base models in one regime and dataset: a card each, fitted within that model's runs, never across them,
    and each applied to the other model's contaminated models (issue 69 item 4)."""
    _by_hand(tmp_path / "smol")
    _by_hand(tmp_path / "gemma", model="gemma3_270m", non_member=0.5, odd_non_member=0.5)
    out, result = _calibrate(tmp_path / "smol", tmp_path / "gemma", out=tmp_path / "out")
    ours, theirs = "metadata/none/full · synth_nli · tiny", "metadata/none/full · synth_nli · gemma3_270m"
    assert set(result["cards"]) == {ours, theirs}
    assert result["cards"][ours]["rests_on"]["model"] == "tiny" and result["cards"][ours]["rests_on"]["regime"] == \
        "metadata/none/full"
    # tiny's card on gemma's models, whose non-members sit at 0.5 (above tiny's bars): every partition flagged
    moved = result["cards"][ours]["transfer"][theirs]
    assert moved["fpr"]["estimate"] == 1.0 and moved["equivalence"]["verdict"] == "over"
    # and back: gemma's card, fitted on its own models' known non-members, applied to tiny's
    assert set(result["cards"][theirs]["transfer"]) == {ours}
    # one model alone keeps the group's name as it was (committed calibrations unchanged)
    _, alone = _calibrate(tmp_path / "smol", out=tmp_path / "alone")
    assert set(alone["cards"]) == {"metadata/none/full · synth_nli"}


def test_judge_calibration_loads_a_card_and_refuses_what_is_not_one(tmp_path, compose_config):
    from hydra.utils import instantiate

    card = {"format": "contamination-lab threshold card 1", "score": "rouge_l", "exact_threshold": 0.83,
            "near_exact_threshold": 0.6, "rule_text": ">= 1 exact or >= 2 near-exact of 10", "budget": 0.05,
            "rests_on": {"regime": "metadata/none/full", "dataset": "synth_nli", "model": "tiny",
                         "unit": "3 draws (3 models)", "known_non_members_per_model": [400]},
            "held_out": {"fpr": {"estimate": 0.02, "low": 0.0, "high": 0.3}}}
    path = tmp_path / "card.json"
    path.write_text(json.dumps(card))
    judge = ThresholdJudge(calibration=str(path))
    assert (judge.exact_threshold, judge.near_exact_threshold) == (0.83, 0.6)
    assert judge.label("a b c", "x y z", {"rouge_l": 0.65}) == "near_exact"
    assert judge.describe()["card"].startswith("threshold card (metadata/none/full, synth_nli, tiny; 3 draws")
    cfg = compose_config("detect", ["+dataset=synth_nli", f"judge.calibration={path}"])
    assert instantiate(cfg.judge).exact_threshold == 0.83

    with pytest.raises(InputError, match="no such file; make a card with python -m contaminate.calibrate"):
        ThresholdJudge(calibration=str(tmp_path / "missing.json"))
    with pytest.raises(InputError, match="a card fitted on the near-exact score rouge_l, and this run's judge.score "
                                         "is semantic: set judge.score=rouge_l"):
        ThresholdJudge(calibration=str(path), score="semantic")
    path.write_text(json.dumps({"thresholds": {"exact_threshold": 0.9, "near_exact_threshold": {"rouge_l": 0.7}}}))
    with pytest.raises(InputError, match="is not a threshold card .*pooled across models, in-sample: not loaded"):
        ThresholdJudge(calibration=str(path))
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match="is not a threshold card"):
        ThresholdJudge(calibration=str(path))
