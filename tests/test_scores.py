import pytest

from detect import rouge_l
from detect.detectors.time_travel.scores import SemanticScorer


def test_rouge_l_matches_the_papers_table_6_example():
    # method section 6: LCS of 7 tokens, 8 in the reference and 9 in the candidate -> F1 = 14/17
    score = rouge_l("Nicolas Cage's son is called Kal-el.", "Nicolas Cage's new son is named Kal-el.")
    assert score == pytest.approx(14 / 17)
    assert round(score, 2) == 0.82


def test_rouge_l_bounds_and_direction():
    assert rouge_l("the cat sat on the mat", "the cat sat on the mat") == 1.0
    assert rouge_l("the cat sat on the mat", "quantum chromodynamics explained") == 0.0
    assert rouge_l("a b c d", "a b") == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # P=1, R=0.5


def test_semantic_score_ranks_a_paraphrase_above_unrelated_text():
    scorer = SemanticScorer()
    close, far = scorer(
        ["The council approved a new bridge over the river.", "The council approved a new bridge over the river."],
        ["A new bridge across the river was approved by the council.", "My cat likes to sleep in the sun."],
    )
    assert close > 0.8 > 0.3 > far
