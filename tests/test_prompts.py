from detect.detectors.time_travel.prompts import build_prompt, strip_echoed_header

# Verbatim from method section 5 (the paper's Table 5 as published in the official code).
GUIDED_CLASSIFICATION = """INSTRUCTION:
You are provided with the FIRST PIECE of an instance from the test split of the AG News dataset.
Finish the SECOND PIECE of the instance as EXACTLY appeared in the dataset.
ONLY rely on the original form of the instance in the dataset to finish the SECOND PIECE.

LABEL: 1 (Sports)

FIRST PIECE:
The first half.

SECOND PIECE:
"""

GUIDED_NLI = """INSTRUCTION:
You are provided with SENTENCE 1 from the validation split of the RTE dataset.
Finish SENTENCE 2 as appeared in the dataset.
SENTENCE 2 MUST EXACTLY match the instance in the dataset.

SENTENCE 1:
A man walks.

LABEL: 0 (entailment)

SENTENCE 2:
"""

GENERAL_CLASSIFICATION = """INSTRUCTION:
Finish the SECOND PIECE based on the FIRST PIECE, such that these two pieces become a single instance with the following LABEL.

LABEL: 1 (Sports)

FIRST PIECE:
The first half.

SECOND PIECE:
"""

GENERAL_NLI = """INSTRUCTION:
Finish SENTENCE 2 based on SENTENCE 1, such that the following LABEL shows the logical relationship between SENTENCE 1 and SENTENCE 2.

SENTENCE 1:
A man walks.

LABEL: 0 (entailment)

SENTENCE 2:
"""

GUIDED_XSUM = """INSTRUCTION:
You are provided with the FIRST PIECE of a one-sentence summary from the test split of the XSum dataset.
Finish the SECOND PIECE of the summary as EXACTLY appeared in the dataset.
ONLY rely on the original form of the summary in the dataset to finish the SECOND PIECE.

FIRST PIECE:
The council has

SECOND PIECE:
"""

GENERAL_SUMMARY = """INSTRUCTION:
Finish the SECOND PIECE based on the FIRST PIECE, such that these two pieces become a single summary.

FIRST PIECE:
Amanda will

SECOND PIECE:
"""


def test_classification_prompts_match_spec():
    args = dict(first_piece="The first half.", label="1 (Sports)", dataset_name="AG News", split_name="test")
    assert build_prompt("guided", "classification", **args) == GUIDED_CLASSIFICATION
    assert build_prompt("general", "classification", **args) == GENERAL_CLASSIFICATION


def test_nli_prompts_match_spec():
    args = dict(first_piece="A man walks.", label="0 (entailment)", dataset_name="RTE", split_name="validation")
    assert build_prompt("guided", "nli", **args) == GUIDED_NLI
    assert build_prompt("general", "nli", **args) == GENERAL_NLI


def test_summary_question_prompts_match_spec():
    xsum = build_prompt("guided", "one_sentence_summary", first_piece="The council has", label=None,
                        dataset_name="XSum", split_name="test")
    assert xsum == GUIDED_XSUM
    general = build_prompt("general", "summary", first_piece="Amanda will", label=None, dataset_name="SAMSum",
                           split_name="test")
    assert general == GENERAL_SUMMARY
    general_xsum = build_prompt("general", "one_sentence_summary", first_piece="x", label=None,
                                dataset_name="XSum", split_name="test")
    assert "become a single one-sentence summary." in general_xsum
    question = build_prompt("guided", "question", first_piece="Tom has", label=None, dataset_name="GSM8k",
                            split_name="test")
    assert "FIRST PIECE of a question from the test split of the GSM8k dataset." in question
    assert "SECOND PIECE of the question as EXACTLY" in question and "LABEL" not in question


def test_echoed_headers_are_stripped():
    assert strip_echoed_header("SECOND PIECE:\nthe rest.") == "the rest."
    assert strip_echoed_header("**Second piece:** the rest.") == "the rest."
    assert strip_echoed_header("  SENTENCE 2: He left.\n") == "He left."
    assert strip_echoed_header("The second piece: stays") == "The second piece: stays"


def test_completions_are_cut_to_the_references_line_count():
    from detect.detectors.time_travel.prompts import clean_completion

    replay = "SECOND PIECE: Corret Efhel walked to Helvale in 1984.\nlabel: 0 (entailment)"
    sentence = "Corret Efhel walked to Helvale in 1984."
    assert clean_completion(replay, sentence, cut_lines=True) == sentence
    assert clean_completion("\n\nfirst line\nsecond\nthird", "a\nb", cut_lines=True) == "first line\nsecond"
    assert clean_completion("  one  ", "ref", cut_lines=True) == "one"
    # by default (the paper's judge) the answer is read as generated: the label line stays
    assert clean_completion(replay, sentence) == sentence + "\nlabel: 0 (entailment)"


def test_an_echoed_first_piece_is_stripped():
    from detect.detectors.time_travel.prompts import clean_completion

    first = "The Tamwick students behind a new water filter have been"
    restarted = "The Tamwick students  behind a new water filter have been sacked after a 3-3 defeat.\nlabel: x"
    assert clean_completion(restarted, "sacked after a 3-3 defeat.", first, cut_lines=True) == \
        "sacked after a 3-3 defeat."
    pair = "Ivan sold boats.\nSENTENCE 2: Ivan is a pilot.\nlabel: 0 (entailment)"
    assert clean_completion(pair, "Ivan is a pilot.", "Ivan sold boats.", cut_lines=True) == "Ivan is a pilot."
    assert clean_completion(pair, "Ivan is a pilot.", "Ivan sold boats.") == "Ivan is a pilot.\nlabel: 0 (entailment)"
    # only a whole-word echo of the entire first piece counts
    assert clean_completion("Ivan sold boatsmen a lot", "x", "Ivan sold boats") == "Ivan sold boatsmen a lot"
    assert clean_completion("Ivan sold", "x", "Ivan sold boats") == "Ivan sold"


def test_every_wording_reaches_the_prompt_in_the_papers_frame():
    """Each of the five wordings asks in its own words, in the paper's frame (the slots the answer follows): guided
    names the dataset and split, general names neither, for every task shape."""
    import pytest

    from detect.detectors.time_travel.prompts import PAPER, WORDINGS
    from detect.errors import InputError

    assert len(WORDINGS) >= 5 and next(iter(WORDINGS)) == PAPER
    shapes = [("nli", "0 (entailment)"), ("classification", "1 (Sports)"), ("code", None), ("summary", None)]
    for task, label in shapes:
        args = dict(first_piece="def f(x):", label=label, dataset_name="HumanEval", split_name="test")
        for instruction in ("guided", "general"):
            prompts = {w: build_prompt(instruction, task, wording=w, **args) for w in WORDINGS}
            assert len(set(prompts.values())) == len(WORDINGS)  # five different prompts
            slot = "SENTENCE 2:\n" if task == "nli" else "SECOND PIECE:\n"
            opening = "SENTENCE 1:\ndef f(x):" if task == "nli" else "FIRST PIECE:\ndef f(x):"
            for wording, prompt in prompts.items():
                assert prompt.startswith("INSTRUCTION:\n") and prompt.endswith(slot) and opening in prompt
                assert (f"LABEL: {label}" in prompt) == (label is not None)
                named = "HumanEval" in prompt and "test" in prompt.split(opening)[0]
                assert named == (instruction == "guided"), (wording, task, instruction)
                assert "{" not in prompt.replace("def f(x):", "")  # every field filled
        assert build_prompt("guided", task, **args) == build_prompt("guided", task, wording=PAPER, **args)
    with pytest.raises(InputError, match="detect.wording=plain: no such wording .* use one of paper, reworded"):
        build_prompt("guided", "nli", wording="plain", first_piece="A.", label="0", dataset_name="RTE",
                     split_name="test")
