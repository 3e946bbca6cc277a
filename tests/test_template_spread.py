"""The template spread (contaminate/analyses/template_spread.py; issue 69 item 5) from hand-made rows: each wording's
follow rate, labels and verdicts as the lab reads them, the uninformative reading taken from the group that holds no
member, and the spread over wordings."""

import pytest

from contaminate.analyses.template_spread import UNTOUCHED, read_group, render, spread


def rows(guided: list[tuple[str, str, float]], general: list[float]) -> list[dict]:
    """Guided rows as (answer class, judge label, ROUGE-L), general rows by ROUGE-L (paired by position)."""
    return ([{"instruction": "guided", "answer_class": c, "judge": j, "rouge_l": r, "semantic": None}
             for c, j, r in guided] +
            [{"instruction": "general", "answer_class": "continuation", "judge": None, "rouge_l": r, "semantic": None}
             for r in general])


REPLAYS = rows([("continuation", "exact", 1.0), ("continuation", "none", 0.9), ("continuation", "none", 0.8),
                ("restatement", "none", 0.7)], [0.1, 0.1, 0.1, 0.1])
NOTHING = rows([("continuation", "none", 0.2), ("restatement", "none", 0.2), ("instruction_echo", "none", 0.2),
                ("restatement", "none", 0.2)], [0.2, 0.2, 0.2, 0.2])
NEAR = rows([("continuation", "near_exact", 0.8), ("continuation", "near_exact", 0.8), ("continuation", "none", 0.1),
             ("continuation", "none", 0.1)], [0.1, 0.1, 0.1, 0.1])


def test_a_wording_is_read_as_the_lab_reads_a_partition():
    replays = read_group(REPLAYS)
    assert {k: replays[k] for k in ("n", "followed", "exact", "near_exact", "alg2", "alg1")} == \
        {"n": 4, "followed": 3, "exact": 1, "near_exact": 0, "alg2": True, "alg1": True}
    # differences 0.9, 0.8, 0.7, 0.6: no resampled null mean reaches 0.75, so p = 1 / 10,001
    assert replays["alg1_p"] == pytest.approx(1 / 10_001) and replays["guided_rouge_l"] == pytest.approx(0.85)
    nothing = read_group(NOTHING)
    assert (nothing["followed"], nothing["alg2"], nothing["alg1"], nothing["alg1_p"]) == (1, False, False, 1.0)
    assert read_group(NEAR)["alg2"] is True  # two near-exact: the paper's rule


def test_the_spread_counts_flags_and_reads_informative_from_the_group_without_members():
    found = {"synth_nli": {
        "x_members": {"paper": read_group(REPLAYS), "terse": read_group(NOTHING), "reworded": read_group(NEAR)},
        "x_non_members": {"paper": read_group(NEAR), "terse": read_group(REPLAYS), "reworded": read_group(NOTHING)}}}
    members, never = spread(found)["synth_nli"]["x_members"], spread(found)["synth_nli"]["x_non_members"]
    # the never-planted group follows 4/4 (paper), 3/4 (terse), 1/4 (reworded): two wordings read informative
    assert members == {"wordings": 3, "follow_low": 0.25, "follow_high": 1.0, "alg1_flags": 1, "alg2_flags": 2,
                       "alg1_informative_flags": 1, "alg2_informative_flags": 1, "informative": 2}
    assert never["alg2_flags"] == 2 and never["alg2_informative_flags"] == 2 and never["informative"] == 2
    text = render(found, "header")
    assert "| x_members | reworded | 4 | 1.00 [0.40, 1.00] | 0 | 2 | flagged (uninformative) |" in text
    assert "| x_members | paper | 4 | 0.75 [0.19, 0.99] | 1 | 0 | flagged | 0.850 / 0.100 | 0.000 | flagged |" in text
    assert "| x_members | 0.25 - 1.00 (0.75) | 2 of 3 (1 informative) | 1 of 3 (1 informative) | 2 of 3 |" in text
    untouched = {"humaneval": {UNTOUCHED: {"paper": read_group(NOTHING)}}}
    assert spread(untouched)["humaneval"][UNTOUCHED]["informative"] == 0  # 1/4 follow: below the bar
    with pytest.raises(ValueError, match="humaneval: 0 groups hold no member"):
        spread({"humaneval": {"x_members": {"paper": read_group(NOTHING)}}})
