"""contaminate/analyses/decontam.py against values worked by hand: recall over draws, contrasts, the model side."""

import json

import pytest

from contaminate.analyses.decontam import analyse, load, report
from detect.errors import InputError


def block(flags: dict[str, dict[str, int]], never: dict[str, int], n: int = 4) -> dict:
    """A decontamination block: flags[detector][group] of ``n`` members; x0 never flagged."""
    def groups(detector):
        found = {"x0": {"dataset": "d", "format": "metadata", "exposures": 0, "n": n, "flagged": 0}}
        for group, k in flags[detector].items():
            found[group] = {"dataset": "d", "format": group.split("_")[-1], "exposures": 2, "n": n, "flagged": k}
        return found

    return {"detectors": {d: {"groups": groups(d), "never_in_stream": {"n": 10, "flagged": never[d]},
                              "documents": {"background": never[d]}} for d in flags}}


def write(folder, draw, flags, never, auc=None):
    path = folder / f"s{draw}"
    path.mkdir(parents=True)
    found = {"dataset": "d", "seed": draw, "draw": draw, "groups": [], "decontamination": block(flags, never)}
    (path / "decontamination.json").write_text(json.dumps(found))
    if auc is not None:  # a trained run of the same draw: its plant.json
        groups = [{"name": "x2_metadata", "exposures": 2,
                   "within_model_auc": {"loss": auc, "loss_raw": auc - 0.1, "min_k_plus_raw": auc}}]
        (path / "plant.json").write_text(json.dumps({"draw": draw, "seed": draw, "groups": groups,
                                                     "decontamination": block(flags, never)}))


def test_recall_contrasts_and_the_model_side_by_hand(tmp_path):
    # three draws; gpt3 finds 4, 4, 2 of 4 paraphrased members (shares 1, 1, 0.5: mean 5/6); emb 4, 4, 4
    for draw, (gpt3, never) in enumerate([(4, 0), (4, 1), (2, 0)]):
        write(tmp_path, draw, {"gpt3": {"x2_metadata": 4, "x2_paraphrase": gpt3},
                               "emb": {"x2_metadata": 3, "x2_paraphrase": 4}}, {"gpt3": never, "emb": 0},
              auc=[0.6, 0.7, 0.8][draw])
    draws, trained = load([tmp_path])
    assert len(draws) == len(trained) == 3
    specs = [{"group": "x2_paraphrase", "a": "emb", "b": "gpt3"}, {"group": "x2_metadata", "a": "emb", "b": "gpt3"}]
    found = analyse(draws, trained, specs, 0.05)
    recall = found["data_side"]["groups"]["x2_paraphrase"]["recall"]
    assert recall["gpt3"]["estimate"] == pytest.approx(5 / 6) and (recall["gpt3"]["k"], recall["gpt3"]["n"]) == (10, 12)
    assert recall["emb"]["estimate"] == 1.0 and recall["emb"]["high"] == 1.0 and recall["emb"]["low"] < 1.0
    # false flags: 1 of 30 pooled (10 never-planted instances a draw)
    assert found["data_side"]["false_flags"]["gpt3"]["k"] == 1 and found["data_side"]["false_flags"]["gpt3"]["n"] == 30
    assert found["data_side"]["background_dropped"]["gpt3"] == [0, 1, 0]
    paraphrase, metadata = found["contrasts"]
    # differences 0, 0, 0.5: mean 1/6; sign flips: |mean| >= 1/6 for the 4 patterns where 0.5 keeps its sign... of 8,
    # the zeros flip freely: 4 of 8 patterns give +1/6, 4 give -1/6: p = 1
    assert paraphrase["mean_difference"] == pytest.approx(1 / 6) and paraphrase["sign_flip_p"] == 1.0
    # differences -0.25 each draw: constant, so no t; sign flips: only the all-same-sign patterns reach 0.25: 2/8
    assert metadata["mean_difference"] == pytest.approx(-0.25) and metadata["t_p"] is None
    assert metadata["sign_flip_p"] == pytest.approx(0.25) and metadata["holm_p"] == pytest.approx(0.5)
    assert not metadata["passes"]
    auc = found["model_side"]["x2_metadata"]["loss"]
    assert auc["estimate"] == pytest.approx(0.7) and auc["n_draws"] == 3 and auc["low"] < 0.7 < auc["high"]
    assert found["model_side"]["x2_metadata"]["loss_raw"]["estimate"] == pytest.approx(0.6)
    text = report(found)
    # the bare-text columns first (what a user has), the leak's rendering labelled an oracle
    assert "| loss_raw (bare text) AUC | min_k_plus_raw (bare text) AUC | loss (leak's rendering: oracle) AUC |" in text
    assert "| d | paraphrase | x2 | 0.83 [" in text and "| 0.60 [" in text and "0.70 [" in text
    assert "| x2_metadata | emb | gpt3 | -0.250 | 3 | - |" in text


def test_nothing_to_read_is_one_line(tmp_path):
    with pytest.raises(InputError, match="no decontamination.json or plant.json"):
        load([tmp_path])


def test_a_detector_without_a_reading_in_a_draw_is_left_out_and_said(tmp_path):
    write(tmp_path, 0, {"gpt3": {"x2_paraphrase": 1}, "emb": {"x2_paraphrase": 4}}, {"gpt3": 0, "emb": 0})
    write(tmp_path, 1, {"emb": {"x2_paraphrase": 2}}, {"emb": 0})  # gpt3 skipped in draw 1
    found = analyse(*load([tmp_path]), [{"group": "x2_paraphrase", "a": "emb", "b": "gpt3"}], 0.05)
    assert found["data_side"]["detectors"] == ["emb"] and found["data_side"]["no_reading"] == {"gpt3": 1}
    assert found["data_side"]["groups"]["x2_paraphrase"]["recall"]["emb"]["estimate"] == pytest.approx(0.75)
    assert found["contrasts"][0]["units"] == 1  # only the draw that read both
    assert "No reading in 1 of 2 draws, left out: gpt3" in report(found)
