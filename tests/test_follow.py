"""The answer classifier (detect/detectors/time_travel/follow.py) on hand-labelled answers, code and prose, and the
follow rate that makes a verdict uninformative."""

import pytest

from detect.detectors.time_travel.follow import (
    CLASSES,
    answer_classes,
    classify,
    classify_row,
    follow_block,
)
from detect.detectors.time_travel.prompts import build_prompt
from detect.errors import InputError

# HumanEval/53 cut inside its docstring, as the lab cuts code (at a line boundary)
CODE_FIRST = 'def add(x: int, y: int):\n    """Add two numbers x and y\n    >>> add(2, 3)\n    5\n    >>> add(5, 7)'
CODE_SECOND = '    12\n    """\n    return x + y\n'
CODE_PROMPT = build_prompt("guided", "code", first_piece=CODE_FIRST, label=None, dataset_name="HumanEval",
                           split_name="test")

# hand-labelled: (answer as generated, its class)
CODE_ANSWERS = [
    ('\n    12\n    """\n    return x + y\n', "continuation"),               # the replay
    ('    return x - y\n', "continuation"),                                   # wrong, but an attempt
    ('\ndef add(x: int, y: int):\n    """Add two numbers', "restatement"),   # the header again
    ('def add_three(x, y, z):\n    """Add three numbers x, y and z', "restatement"),  # a variant of the header
    (CODE_FIRST, "restatement"),                                              # the whole first piece, nothing more
    (CODE_FIRST + "\n" + CODE_SECOND, "continuation"),                        # echoed, then the replay
    (CODE_FIRST + "\n\nFIRST PIECE:\n\ndef sub(x, y):", "instruction_echo"),  # echoed, then the prompt's header
    ("", "empty"),
    ("  \n\n ", "empty"),
    ("SECOND PIECE:", "empty"),                                               # the header alone
    ('"""', "empty"),                                                         # no word at all
    ("You are provided with the FIRST PIECE of a function from the test split of the HumanEval dataset.",
     "instruction_echo"),
    ("Finish the SECOND PIECE of the function as EXACTLY appeared in the dataset.", "instruction_echo"),
    ("FIRST PIECE:\ndef add(x, y):", "instruction_echo"),
    ("HumanEval dataset, test split\ntask_id: HumanEval/53", "metadata_echo"),
    ("task_id: HumanEval/53\ndef add(x, y):", "metadata_echo"),
    ("Test split:\n\ndef add(x, y):", "metadata_echo"),
]

NLI_FIRST = ("Nadia Efwexdun, a nurse from Silstead, opened a wind pump workshop in Risburg and sold 551 violins to "
             "Helmarware.")
NLI_SECOND = ("It is true that Nadia Efwexdun opened a wind pump workshop in Risburg and taught 38 apprentices who now "
              "work at Nyzu Mills.")
NLI_PROMPT = build_prompt("guided", "nli", first_piece=NLI_FIRST, label="0 (entailment)", dataset_name="SynthNLI",
                          split_name="test")
NLI_ANSWERS = [
    (NLI_SECOND, "continuation"),                                             # the replay
    ("SENTENCE 2: " + NLI_SECOND, "continuation"),                            # after an echoed header
    ("Nadia Efwexdun is a nurse who lives in Silstead.", "continuation"),     # a plausible sentence 2
    ("The weather in Risburg was mild that year.", "continuation"),
    (NLI_FIRST, "restatement"),                                               # sentence 1 copied: the profile's 44-71%
    ("Nadia Efwexdun, a nurse from Silstead, opened a wind pump workshop in Risburg.", "restatement"),
    ("label: 0 (entailment)", "metadata_echo"),
    ("LABEL: 0 (entailment)\nSENTENCE 2:", "metadata_echo"),
    ("SENTENCE 1:\n" + NLI_FIRST, "instruction_echo"),
    ("Finish SENTENCE 2 as appeared in the dataset.", "instruction_echo"),
    ("SENTENCE 2 MUST EXACTLY match the instance in the dataset.", "instruction_echo"),
]

SUMMARY_FIRST = "The council said the new bridge"
SUMMARY_SECOND = "would open in May after two years of work."
SUMMARY_PROMPT = build_prompt("guided", "one_sentence_summary", first_piece=SUMMARY_FIRST, label=None,
                              dataset_name="XSum", split_name="test")
SUMMARY_ANSWERS = [
    (" would open in spring next year.", "continuation"),
    ("The council said the new bridge would open", "continuation"),           # the first piece, then new words
    ("The council said the new bridge", "restatement"),
    ("You are provided with the FIRST PIECE of a one-sentence summary from the test split", "instruction_echo"),
    ("XSum dataset, test split", "metadata_echo"),
]


@pytest.mark.parametrize("raw, expected", CODE_ANSWERS)
def test_code_answers(raw, expected):
    assert classify(raw, prompt=CODE_PROMPT, first_piece=CODE_FIRST, reference=CODE_SECOND, title="HumanEval",
                    split="test") == expected


@pytest.mark.parametrize("raw, expected", NLI_ANSWERS)
def test_nli_answers(raw, expected):
    assert classify(raw, prompt=NLI_PROMPT, first_piece=NLI_FIRST, reference=NLI_SECOND, title="SynthNLI",
                    split="test") == expected


@pytest.mark.parametrize("raw, expected", SUMMARY_ANSWERS)
def test_summary_answers(raw, expected):
    assert classify(raw, prompt=SUMMARY_PROMPT, first_piece=SUMMARY_FIRST, reference=SUMMARY_SECOND, title="XSum",
                    split="test") == expected


def test_a_leak_reading_has_no_instruction_to_echo():
    """The leak reading's prompt is the leak's own rendering: its words are no instruction, so an answer that
    shares them is read on its own (here the rendering's words are the answer's)."""
    rendering = "SynthNLI dataset, test split\nsentence1: " + NLI_FIRST + "\nsentence2:"
    row = {"instruction": "leak", "prompt": rendering, "raw_completion": " " + NLI_SECOND, "first_piece": NLI_FIRST,
           "reference": NLI_SECOND, "split": "test"}
    assert classify_row(row, "SynthNLI") == "continuation"
    guided = {**row, "instruction": "guided", "prompt": NLI_PROMPT, "raw_completion": "SENTENCE 1:"}
    assert classify_row(guided, "SynthNLI") == "instruction_echo"
    assert classify_row({**row, "raw_completion": "\nlabel: 0 (entailment)\n"}, "SynthNLI") == "metadata_echo"


def test_answer_classes_and_the_follow_bar():
    rows = [{"answer_class": c} for c in ["continuation"] * 3 + ["restatement"] * 4 + ["empty"] * 3]
    counted = answer_classes(rows)
    assert counted == {"n": 10, "classes": {"continuation": 3, "empty": 3, "restatement": 4, "instruction_echo": 0,
                                            "metadata_echo": 0}, "follow_rate": 0.3}
    assert set(counted["classes"]) == set(CLASSES)
    block = follow_block(rows, on="known non-members", bar=0.5)
    assert block == {"rate": 0.3, "n": 10, "on": "known non-members", "bar": 0.5, "informative": False}
    assert follow_block(rows, on="known non-members", bar=0.3)["informative"]  # at the bar: informative
    assert follow_block([{"answer_class": None}], on="x", bar=0.5) is None     # nothing generated: no rate
    assert answer_classes([])["follow_rate"] is None


def _guided(classes, judge="none"):
    return [{"instruction": "guided", "instance_id": i, "judge": judge, "completion": "x", "rouge_l": 0.1,
             "reference": "y", "semantic": None, "raw_completion": "x", "answer_class": c}
            for i, c in enumerate(classes)]


def test_a_verdict_below_the_follow_bar_is_uninformative_and_a_skipped_detector_says_why(tmp_path):
    """Algorithm 2 on answers that restate the first piece: its rule says clean, the summary says uninformative (on
    the partition itself where no known non-members were read; against the model's own known non-members where they
    were); a detector that did not run is in the summary with its reason, and both reach report.md."""
    from detect.detectors.time_travel import Algorithm2
    from detect.pipeline import summarize, uninformative, write_report

    rows = _guided(["restatement"] * 7 + ["continuation"] * 3)
    rows.append({"level": "partition", "detector": "permutation", "skipped": "the leak lays out no order"})
    summary = summarize(rows, [Algorithm2()])
    assert summary["alg2"]["contaminated"] is False  # the paper's rule, as computed
    assert summary["follow"] == {"rate": 0.3, "n": 10, "on": "instances of this partition", "bar": 0.5,
                                 "informative": False}
    assert summary["answers"]["guided"]["classes"]["restatement"] == 7
    assert summary["skipped"] == {"permutation": "the leak lays out no order"}
    assert uninformative(summary) == ("uninformative: the instruction was not followed (follow 0.30 of 10 instances "
                                      "of this partition, below 0.50)")
    known = {"rate": 0.9, "n": 100, "on": "known non-members", "bar": 0.5, "informative": True}
    assert uninformative(summarize(rows, [Algorithm2()], follow=known)) is None
    assert uninformative(summarize(rows, [Algorithm2()], follow_bar=0.3)) is None  # at the bar: informative
    summary.update(dataset="synth_nli", split="test", model="m", prompt_format="raw", seed=0,
                   judge={"name": "threshold", "exact_threshold": 0.95, "near_exact_threshold": 0.75,
                          "score": "rouge_l"})
    write_report(tmp_path / "report.md", summary, [r for r in rows if r.get("level") != "partition"])
    report = (tmp_path / "report.md").read_text()
    assert "**uninformative: the instruction was not followed (follow 0.30" in report
    assert "- permutation: not run: the leak lays out no order" in report
    assert "| guided | 10 | 3 | 0 | 7 | 0 | 0 |" in report


# a study's manifest as contaminate.reports.run.write_report reads it, and a one-cell study summary around ``cells``
STUDY_MANIFEST = {"member_ids": [1], "non_member_ids": [2], "timings": {"total_s": 1.0},
                  "judge": {"name": "threshold", "exact_threshold": 0.95, "near_exact_threshold": 0.75,
                            "score": "rouge_l"},
                  "checkpoint": {"reused": True, "first_loss": 2.0, "final_loss": 1.0, "train_seconds": 3.0}}


def _study(cells: dict, accuracy: dict, follow: dict) -> dict:
    return {"dataset": "synth_nli", "split": "test", "base_model": "m", "backend": "full", "format": "metadata",
            "seed": 0, "cells": cells, "accuracy": accuracy, "follow": follow}


def test_algorithm_1_against_general_answers_that_do_not_answer_is_uninformative(tmp_path):
    """The first command's clean model, one worked example before each prompt: it follows the guided instruction
    (0.68 of its known non-members) but copies the worked example's second piece as its general answer, so guided
    beats general and Algorithm 1 flags a clean partition. Its general answers are read like the guided ones: below
    the bar (here 1 of 10), Algorithm 1's verdict is uninformative; Algorithm 2, which reads the guided answers alone,
    is not; a partition whose general answers follow is read as before. The study's count and report say so per
    verdict."""
    from contaminate.reports.run import write_report
    from contaminate.stages import uninformative_counts
    from detect.detectors.time_travel import Algorithm1, Algorithm2
    from detect.pipeline import summarize, uninformative, verdicts

    guided = [{**row, "rouge_l": 0.3 + 0.01 * row["instance_id"], "semantic": None}
              for row in _guided(["continuation"] * 8 + ["restatement"] * 2)]
    general = [{**row, "instruction": "general", "rouge_l": 0.0, "semantic": None}
               for row in _guided(["instruction_echo"] * 9 + ["continuation"])]
    known = {"rate": 0.68, "n": 40, "on": "known non-members", "bar": 0.5, "informative": True}
    cell = summarize(guided + general, [Algorithm1(n_resamples=200), Algorithm2()], follow=known)
    assert cell["alg1"]["rouge_l"]["significant"]  # the paper's test, as computed: guided > general
    assert cell["answers"]["general"]["follow_rate"] == 0.1
    assert uninformative(cell) is None and uninformative(cell, Algorithm2) is None
    assert uninformative(cell, Algorithm1) == ("uninformative: the general instruction was not followed (follow "
                                               "0.10 of 10 general answers of this partition, below 0.50)")
    followed = [{**row, "answer_class": "continuation"} for row in general]
    assert uninformative(summarize(guided + followed, [Algorithm1(n_resamples=200)], follow=known), Algorithm1) is None
    not_known = {**known, "rate": 0.2, "informative": False}  # the model-level reason comes first, for both
    assert uninformative(summarize(guided + general, [Algorithm1(n_resamples=200)], follow=not_known),
                         Algorithm1).startswith("uninformative: the instruction was not followed (follow 0.20")

    cell |= {"checkpoint": "clean", "instances": "non_members", "split": "test", "ground_truth": "clean",
             "correct": {name: flagged is False for name, flagged in verdicts(cell).items()}}
    summary = _study({"clean_x_non_members": cell}, {"alg1_rouge_l": 0.0, "alg2": 1.0}, {"clean": known})
    write_report(tmp_path / "report.md", summary, STUDY_MANIFEST)
    verdict_row = next(line for line in (tmp_path / "report.md").read_text().splitlines()
                       if line.startswith("| clean_x_non_members | clean |"))
    assert verdict_row.split(" | ")[2].startswith("uninformative (contaminated ✗")  # Algorithm 1 on rouge_l
    assert verdict_row.split(" | ")[3] == "clean ✓ |"  # Algorithm 2: read as before
    assert uninformative_counts(summary["cells"]) == {"alg1_rouge_l": 1}  # "alg1_rouge_l 0/1 (1 uninformative)"


def test_the_study_report_reads_an_uninformative_model_as_such(tmp_path):
    """A study cell whose model mostly did not answer: its Algorithm 2 column says uninformative beside the rule's
    outcome, and the answers section gives each model's follow rate on its known non-members."""
    from contaminate.reports.run import write_report
    from detect.detectors.time_travel import Algorithm2
    from detect.pipeline import summarize, verdicts

    follow = {"rate": 0.12, "n": 100, "on": "known non-members", "bar": 0.5, "informative": False}
    cell = summarize(_guided(["restatement"] * 8 + ["continuation"] * 2), [Algorithm2()], follow=follow)
    cell |= {"checkpoint": "contaminated", "instances": "members", "split": "test", "ground_truth": "contaminated",
             "correct": {name: flagged for name, flagged in verdicts(cell).items()}}
    summary = _study({"contaminated_x_members": cell}, {"alg2": 0.0}, {"contaminated": follow})
    write_report(tmp_path / "report.md", summary, STUDY_MANIFEST)
    report = (tmp_path / "report.md").read_text()
    assert "| contaminated_x_members | contaminated | uninformative (clean ✗) |" in report
    assert ("- contaminated model: follow 0.12 of 100 known non-members answered the guided instruction with a "
            "continuation (bar 0.50): its Algorithm 1 and 2 verdicts are **uninformative") in report
    assert "| contaminated_x_members | guided | 10 | 2 | 0 | 8 | 0 | 0 |" in report
    from contaminate.reports.run import cells_right

    # the cells right by the rule's outcome, and how many of them were read from answers that mostly did not answer
    assert cells_right({**summary, "accuracy": {"alg2": 0.0, "cheat_strict": 1.0},
                        "uninformative": {"alg2": 1}}) == "alg2 0/1 (1 uninformative), cheat_strict 1/1"


def test_the_prompt_format_is_chosen_by_the_follow_rate_on_known_non_members():
    """choose_format: the format the model answers the guided instruction in more often on its known non-members; a
    tie goes to chat (as the paper prompts chat models); instruction_formats says which formats a setting reads."""
    from detect.pipeline import choose_format, instruction_formats

    chat = _guided(["continuation"] * 3 + ["restatement"] * 7)
    raw = _guided(["continuation"] * 1 + ["empty"] * 9)
    assert choose_format({"raw": raw, "chat": chat}) == {
        "chosen": "chat", "by_format": {"raw": {"rate": 0.1, "n": 10}, "chat": {"rate": 0.3, "n": 10}}}
    assert choose_format({"raw": chat, "chat": raw})["chosen"] == "raw"
    assert choose_format({"raw": chat, "chat": chat})["chosen"] == "chat"  # a tie: chat
    assert choose_format({"raw": raw})["chosen"] == "raw"

    class Model:
        name, prompt_format, prompt_formats = "m", "raw", ("raw", "chat")

    assert instruction_formats(Model(), "follow") == ("raw", "chat")
    assert instruction_formats(Model(), "model") == ("raw",)
    assert instruction_formats(Model(), "chat") == ("chat",)
    Model.prompt_formats = ("raw",)  # no chat template: one way only
    assert instruction_formats(Model(), "follow") == ("raw",)
    with pytest.raises(InputError, match="detect.instruction_format=chat: m takes raw prompts"):
        instruction_formats(Model(), "chat")


def test_the_instructions_line_says_how_many_worked_examples_each_prompt_had():
    """formats_text: the format asked and each format's rate; asked after worked examples (a study's default since
    issue 71, detect.elicit.shots=1), it says how many, and a summary written before shots were recorded reads as
    zero-shot, as it was."""
    from detect.detectors.time_travel.follow import formats_text

    follow = {"rate": 0.68, "n": 40, "on": "known non-members", "bar": 0.5, "informative": True,
              "prompt_format": "raw", "by_format": {"raw": {"rate": 0.675, "n": 40}}}
    assert formats_text(follow) == "asked raw (follow: raw 0.68 of 40 known non-members)"  # no shots key: as before
    assert formats_text(follow | {"shots": 0}) == "asked raw (follow: raw 0.68 of 40 known non-members)"
    assert formats_text(follow | {"shots": 1}) == ("asked raw after 1 worked example on standard-library text "
                                                   "(follow: raw 0.68 of 40 known non-members)")
    assert formats_text(follow | {"shots": 3}).startswith("asked raw after 3 worked examples on")


def test_a_study_report_says_what_decontamination_would_have_caught(tmp_path):
    """The data-side check of a study's stream (summary.json "decontamination") in its report.md: each
    decontaminator's members flagged (with its AUC against the non-members), false flags and documents dropped; no
    model-side loss column, which a study's summary does not hold."""
    from contaminate.reports.run import write_report

    found = {"flagged": 3, "n": 4, "auc_vs_x0": 0.875, "unreadable": 0, "format": "metadata"}
    block = {"stream": {"documents": 4, "planted_documents": 4},
             "detectors": {"gpt3_13gram": {"groups": {"members": found}, "never_in_stream": {"flagged": 1, "n": 96},
                                           "documents": {"planted": 3, "background": 0}}}}
    summary = {**_study({}, {}, {}), "regime": {"exposures": None}, "decontamination": block}
    summary["cells"] = {"contaminated_x_members": {"n_instances": 4, "checkpoint": "contaminated",
                                                   "ground_truth": "contaminated", "correct": {}}}
    write_report(tmp_path / "report.md", summary, STUDY_MANIFEST)
    lines = (tmp_path / "report.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Would decontamination have caught it?"))
    assert "beside the model-side loss AUC" not in lines[start]
    assert lines[start + 2:start + 7] == ["| group | format | gpt3_13gram |", "|---|---|---|",
                                          "| members | metadata | 3/4 (0.88) |",
                                          "| never in the stream (false flags) | | 1/96 |",
                                          "| documents dropped: planted / background | | 3 / 0 |"]
