import pytest

from detect.datasets import Example
from detect.datasets.synth import generate_rows
from detect.detectors.time_travel.split import sentence_spans, split_instance
from detect.errors import InputError

TEXTS = [
    "One sentence only, with quite a few words in it to cut somewhere.",
    "First sentence here. Second one follows! Third? Fourth sentence ends it.",
    "Dr. Smith met Mr. Jones at 5 p.m. on Monday. They talked for an hour.\n\nThen they left.  ",
    "  Leading spaces. And\ttabs\tinside. \"Quoted start.\" (Bracketed end.)",
    "short text",
]


def _all_instances():
    rows = generate_rows("news", 300, 0)["test"] + generate_rows("xsum", 300, 0)["test"]
    texts = [row.get("text") or row["summary"] for row in rows] + TEXTS
    return [Example(i, text) for i, text in enumerate(texts)]


def test_pieces_rebuild_the_original_exactly():
    for example in _all_instances():
        for seed in (0, 1):
            cut = split_instance(example, seed=seed)
            assert cut.first + cut.separator + cut.second == example.text
            assert cut.first.strip() and cut.second.strip()
            assert cut.separator.strip() == ""


def test_cut_point_is_in_the_40_to_70_percent_window_and_varies():
    fractions, shares = [], []
    for example in _all_instances():
        cut = split_instance(example, seed=0)
        assert 0.4 <= cut.fraction <= 0.7
        fractions.append(cut.fraction)
        if cut.n_units >= 10:
            shares.append(cut.units_in_first / cut.n_units)
    assert len(set(fractions)) > 100  # not one fraction for every instance, as the official code does
    assert all(0.35 <= share <= 0.75 for share in shares)  # rounding to whole units moves it a little


def test_cut_is_seeded_by_run_seed_and_instance_id():
    example = Example(42, TEXTS[0])
    assert split_instance(example, seed=3) == split_instance(example, seed=3)
    assert len({split_instance(example, seed=s).fraction for s in range(20)}) == 20


def test_unit_choice():
    assert split_instance(Example(0, TEXTS[0]), seed=0).unit == "word"
    assert split_instance(Example(0, TEXTS[1]), seed=0).unit == "sentence"
    pair = split_instance(Example(0, "Sentence one.", "Sentence two."), seed=0)
    assert (pair.first, pair.second, pair.unit, pair.mid_sentence) == ("Sentence one.", "Sentence two.", "pair", False)


def test_sentences_do_not_end_at_abbreviations():
    text = TEXTS[2]
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    assert sentences == ["Dr. Smith met Mr. Jones at 5 p.m. on Monday.", "They talked for an hour.", "Then they left."]


def test_a_one_word_instance_is_an_input_error():
    with pytest.raises(InputError, match="instance 7 has fewer than two words"):
        split_instance(Example(7, "Hello"), seed=0)
