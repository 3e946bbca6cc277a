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


def test_best_prefix_rouge_l_by_hand():
    from detect.detectors.time_travel.scores import rouge_l_best_prefix

    # a replay then the next instance: the paper's ROUGE-L reads all 11 tokens (2 * 6 / (6 + 11)), the variant the 6
    replayed = "the cat sat on the mat SENTENCE 1: a dog barked"
    assert rouge_l("the cat sat on the mat", replayed) == pytest.approx(12 / 17)
    assert rouge_l_best_prefix("the cat sat on the mat", replayed) == 1.0
    # prefixes of "a x b c y y y y" against "a b c d": LCS 1, 1, 2, 3, 3... -> F 2/5, 2/6, 4/7, 6/8 (best), 6/9...
    assert rouge_l_best_prefix("a b c d", "a x b c y y y y") == pytest.approx(0.75)
    assert rouge_l("a b c d", "a x b c y y y y") == pytest.approx(0.5)
    # the paper's score where the whole candidate is the best prefix (F 0, 0, 2/7, 4/8, 6/9, 8/10), and never below
    assert rouge_l_best_prefix("a b c d", "x y a b c d") == pytest.approx(rouge_l("a b c d", "x y a b c d")) == 0.8
    assert rouge_l_best_prefix("a b c d", "d c b a") == pytest.approx(0.4)  # the first token; whole: 2 / 8
    assert rouge_l_best_prefix("a b", "") == 0.0 and rouge_l_best_prefix("", "a b") == 0.0


def test_semantic_score_ranks_a_paraphrase_above_unrelated_text():
    scorer = SemanticScorer()
    close, far = scorer(
        ["The council approved a new bridge over the river.", "The council approved a new bridge over the river."],
        ["A new bridge across the river was approved by the council.", "My cat likes to sleep in the sun."],
    )
    assert close > 0.8 > 0.3 > far
