"""contaminate/analyses/paired.py: the recipe and the conformal thresholds under two readings of the same draws (the
pool as drawn against rewritten; the model as left against elicited), paired by draw, checked against hand values."""

from __future__ import annotations

import json

import pytest

from contaminate.analyses import paired


def _rate(estimate: float, labelled: int, instances: int) -> dict:
    return {"estimate": estimate, "low": 0.0, "high": 1.0, "unit": "2 draws (2 models)", "labelled": labelled,
            "instances": instances, "k": labelled, "n": instances}


def _calibration(thresholds: dict, per_model: dict, fpr: float, units: tuple[str, ...] = ("d0s0", "d1s1")) -> dict:
    config = {"score": "rouge_l", "size": None, "rule_text": ">= 1 exact or >= 2 near-exact of 6",
              "stated_bound": 0.047, "fpr": _rate(fpr, 1, 12), "tpr_by_dose": {"4": _rate(1.0, 12, 12)},
              "thresholds": {u: thresholds[u] for u in units}, "per_model": {u: per_model[u] for u in units}}
    return {"recipe": {"humaneval": {"models": {"known_non_members": [134]}, "configs": [config],
                                     "logit": {"loss_raw": {"0.05": {"non_members": _rate(fpr, 1, 12),
                                                                     "x4": _rate(1.0, 12, 12)}}}}}}


def _write(folder, calibration: dict):
    folder.mkdir()
    (folder / "calibration.json").write_text(json.dumps(calibration))
    return folder


def test_move_is_the_mean_paired_difference_with_a_t_interval():
    # differences -0.1 and -0.2: mean -0.15, sd 0.0707, se 0.05, t(0.975, 1) 12.706: half-width 0.635
    m = paired.move([0.6, 0.8], [0.5, 0.6])
    assert m["estimate"] == pytest.approx(-0.15)
    assert (m["low"], m["high"]) == pytest.approx((-0.15 - 0.6353, -0.15 + 0.6353), abs=1e-3)
    assert paired.move([0.6], [0.5])["low"] is None  # one draw: no interval


def test_the_report_pairs_each_draw_and_prints_both_pools(tmp_path):
    thresholds = {"d0s0": {"exact": 0.8, "near_exact": 0.7}, "d1s1": {"exact": 0.9, "near_exact": 0.6}}
    lowered = {"d0s0": {"exact": 0.5, "near_exact": 0.4}, "d1s1": {"exact": 0.7, "near_exact": 0.5}}
    per_model = {u: {"non_members": 0.0, "x4": 1.0} for u in thresholds}
    flagged = {"d0s0": {"non_members": 1.0, "x4": 1.0}, "d1s1": {"non_members": 0.5, "x4": 1.0}}
    drawn = _write(tmp_path / "drawn", _calibration(thresholds, per_model, 0.0))
    rewritten = _write(tmp_path / "rewritten", _calibration(lowered, flagged, 0.75))
    text = paired.report(drawn, rewritten)
    assert "| d0s0 | 0.800 -> 0.500 | 0.700 -> 0.400 | 0.00 -> 1.00 | 1.00 -> 1.00 |" in text
    assert "| d1s1 | 0.900 -> 0.700 | 0.600 -> 0.500 | 0.00 -> 0.50 | 1.00 -> 1.00 |" in text
    assert "| >= 1 exact or >= 2 near-exact of 6 | rewritten | 0.047 | 0.75 [0.00, 1.00] (1/12) |" in text
    # exact moves -0.3 and -0.2 (mean -0.25), near-exact -0.3 and -0.1 (mean -0.2)
    assert "| >= 1 exact or >= 2 near-exact of 6 | -0.250 (no interval: 2 draws) | -0.200 (no interval: 2 draws) |" \
        in text  # no interval over fewer than 3 draws
    assert "| loss_raw (bare text) | 0.05 | 0.00 [0.00, 1.00] (1/12) | 0.75 [0.00, 1.00] (1/12) |" in text


def test_calibrations_of_other_draws_are_refused_in_one_line(tmp_path):
    thresholds = {u: {"exact": 0.8, "near_exact": 0.7} for u in ("d0s0", "d1s1", "d2s2")}
    per_model = {u: {"non_members": 0.0, "x4": 1.0} for u in thresholds}
    drawn = _write(tmp_path / "drawn", _calibration(thresholds, per_model, 0.0, ("d0s0", "d1s1", "d2s2")))
    rewritten = _write(tmp_path / "rewritten", _calibration(thresholds, per_model, 0.0))
    with pytest.raises(SystemExit, match="calibrate the same draws"):
        paired.report(drawn, rewritten)
    with pytest.raises(SystemExit, match="no calibration.json"):
        paired.report(tmp_path / "nowhere", rewritten)


def _study(folder, draw: int, follow: float, rouge_l: list[float]):
    """A kept study with one planted group whose known non-members' guided answers score ``rouge_l``."""
    import gzip

    study = folder / "studies" / f"s{draw}"
    (study / "groups" / "x4").mkdir(parents=True)
    answers = {"guided": {"known_non_members": {"n": len(rouge_l), "follow_rate": follow}}}
    (study / "plant.json").write_text(json.dumps({"draw": draw, "seed": draw, "groups": [
        {"name": "x4", "exposures": 4, "answers": answers}]}))
    rows = [{"cell": "contaminated_x_known_non_members", "instruction": "guided", "instance_id": i, "rouge_l": v}
            for i, v in enumerate(rouge_l)]
    (study / "groups" / "x4" / "results.jsonl.gz").write_bytes(
        gzip.compress("\n".join(json.dumps(r) for r in rows).encode()))


def test_the_known_non_members_answers_by_draw_under_each_reading(tmp_path):
    thresholds = {u: {"exact": 0.8, "near_exact": 0.7} for u in ("d0s0", "d1s1", "d2s2")}
    per_model = {u: {"non_members": 0.0, "x4": 1.0} for u in thresholds}
    units = ("d0s0", "d1s1", "d2s2")
    left = _write(tmp_path / "left", _calibration(thresholds, per_model, 0.0, units))
    elicited = _write(tmp_path / "elicited", _calibration(thresholds, per_model, 0.0, units))
    for draw in range(3):
        _study(left, draw, 0.25, [0.1, 0.2, 0.3, 0.2])          # mean 0.20, max 0.30, none >= 0.75
        _study(elicited, draw, 1.0, [0.2, 0.8, 0.5, 0.1 * draw + 0.3])  # means 0.45, 0.475, 0.50
    text = paired.report(left, elicited, ("as left", "elicited"))
    assert "| d0s0 | 0.25 of 4 | 0.20 | 0.30 | 0/4 | 1.00 of 4 | 0.45 | 0.80 | 1/4 |" in text
    assert "| d2s2 | 0.25 of 4 | 0.20 | 0.30 | 0/4 | 1.00 of 4 | 0.50 | 0.80 | 1/4 |" in text
    # moves 0.25, 0.275, 0.30: mean 0.275, sd 0.025, t(0.975, 2) 4.3027: half-width 0.0621
    assert "(elicited minus as left, mean and 95% t-interval over 3 draws): +0.275 [+0.213, +0.337]." in text
    assert "| >= 1 exact or >= 2 near-exact of 6 | elicited | 0.047 |" in text
