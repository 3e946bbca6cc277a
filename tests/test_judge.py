import pytest

from detect import alg2_verdict, rouge_l
from detect.judges.threshold import ThresholdJudge, normalize


def test_normalize_ignores_case_punctuation_and_spaces():
    assert normalize("  The Cat,  sat!") == normalize("the cat sat")


def test_threshold_judge_labels():
    judge = ThresholdJudge(exact_threshold=0.95, near_exact_threshold=0.75)
    reference = "Nicolas Cage's son is called Kal-el."
    assert judge.label(reference, "nicolas cage's son is called kal-el", {"rouge_l": 0.5}) == "exact"
    assert judge.label(reference, "whatever", {"rouge_l": 0.96}) == "exact"
    assert judge.label(reference, "Nicolas Cage's new son is named Kal-el.", {"rouge_l": 0.82}) == "near_exact"
    assert judge.label(reference, "Something else.", {"rouge_l": 0.3}) == "none"


def test_threshold_judge_on_the_semantic_score():
    judge = ThresholdJudge(near_exact_threshold=0.8, score="semantic")
    assert judge.label("a", "b", {"rouge_l": 0.1, "semantic": 0.85}) == "near_exact"
    assert judge.label("a", "b", {"rouge_l": 0.9, "semantic": 0.5}) == "none"


def test_best_prefix_judge_reads_a_replay_the_model_went_on_past():
    from detect.judges.threshold import BestPrefixJudge

    reference = "Nicolas Cage's son is called Kal-el."
    plain, prefix = ThresholdJudge(), BestPrefixJudge()
    replayed = reference + "\n\nSENTENCE 1: The next instance begins here and runs on for a while."
    close = "Nicolas Cage's new son is named Kal-el.\nlabel: entailment and some more words after it"
    for completion in (replayed, close):  # the row's score is the paper's ROUGE-L of the whole completion
        scores = {"rouge_l": rouge_l(reference, completion)}
        assert plain.label(reference, completion, scores) == "none"
    assert prefix.label(reference, replayed, {"rouge_l": rouge_l(reference, replayed)}) == "exact"
    assert prefix.label(reference, close, {"rouge_l": rouge_l(reference, close)}) == "near_exact"  # 0.82
    assert prefix.label(reference, "Something else.", {"rouge_l": 0.0}) == "none"
    assert BestPrefixJudge(near_exact_threshold=0.8, score="semantic").label(
        reference, close, {"rouge_l": 0.4, "semantic": 0.5}) == "none"  # near-exact on the semantic score
    assert prefix.describe()["name"] == "threshold_best_prefix"  # its own name: a variant, in caches and reports
    from detect.judges.threshold import thresholds_line

    assert "exact: best-prefix ROUGE-L >= 0.950; near-exact: best-prefix ROUGE-L >= 0.750" in \
        thresholds_line(prefix.describe())
    assert "exact: ROUGE-L >= 0.950; near-exact: ROUGE-L >= 0.750" in thresholds_line(plain.describe())


def test_threshold_order_is_checked():
    with pytest.raises(ValueError):
        ThresholdJudge(exact_threshold=0.5, near_exact_threshold=0.7)


def test_alg2_rule():
    assert alg2_verdict(["exact"] + ["none"] * 9)
    assert alg2_verdict(["near_exact", "near_exact"] + ["none"] * 8)
    assert not alg2_verdict(["near_exact"] + ["none"] * 9)
    assert not alg2_verdict(["none"] * 10)
    assert not alg2_verdict(["exact"], min_exact=2)
    assert alg2_verdict(["near_exact"] * 3, min_near_exact=3)
    with pytest.raises(ValueError, match="unknown judge labels"):
        alg2_verdict(["yes"])
