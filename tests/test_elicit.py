"""Elicitation (detect/detectors/time_travel/elicit.py): the guided task on standard-library text, disjoint from every
benchmark the lab reads, as few-shot demonstrations before the paper's prompts."""

import pytest
from omegaconf import OmegaConf

from detect.datasets import Example
from detect.detectors.time_travel.elicit import (
    SEPARATOR,
    SOURCE_SPLIT,
    SOURCE_TITLE,
    check_disjoint,
    demonstrations,
    overlapping,
    task_examples,
)
from detect.detectors.time_travel.prompts import build_prompt
from detect.errors import InputError


def test_examples_take_each_tasks_shape_and_are_drawn_the_same_way_each_time():
    code = task_examples("code", 4, seed=0)
    assert all(e.text.startswith(("def ", "async def ")) and e.text_pair is None for e in code)
    assert all(1_000_000 <= e.instance_id < 2_000_000 for e in code)  # ids: the pool's offset + the index
    pairs = task_examples("nli", 4, seed=0, labels=["0 (entailment)", "1 (not entailment)"])
    assert all(e.text_pair and e.text.endswith((".", "!", "?", ":")) for e in pairs)
    assert [e.label for e in pairs] == ["0 (entailment)", "1 (not entailment)"] * 2
    assert task_examples("summary", 3, seed=0)[0].label is None
    assert task_examples("code", 4, seed=0) == code and task_examples("code", 4, seed=1) != code
    assert task_examples("code", 0) == []
    with pytest.raises(InputError, match="fewer than the 100000 asked; lower detect.elicit.shots"):
        task_examples("code", 100_000)


def test_a_demonstration_is_the_same_instruction_on_stdlib_text_with_its_true_second_piece():
    first, second = task_examples("code", 1, seed=3)[0], None
    demos = demonstrations("guided", "code", 2, seed=3)
    assert demos.count(SEPARATOR) == 2 and demos.endswith(SEPARATOR)
    block = demos.split(SEPARATOR)[0]
    assert block.startswith("INSTRUCTION:\nYou are provided with the FIRST PIECE of a function from the source split "
                            f"of the {SOURCE_TITLE} dataset.")
    head, second = block.split("\n\nSECOND PIECE:\n")
    assert head.split("FIRST PIECE:\n", 1)[1] + "\n" in first.text and second.strip() in first.text
    general = demonstrations("general", "nli", 1, seed=3, labels=["0 (entailment)"])
    assert general.startswith("INSTRUCTION:\nFinish SENTENCE 2 based on SENTENCE 1") and "LABEL: 0 (entailment)" in \
        general
    assert demonstrations("guided", "code", 0) == ""


def test_few_shot_prompts_put_the_demonstrations_before_the_papers_prompt():
    from detect.pipeline import detect_partition

    class Model:
        stop_reasons, prompt_format = None, "raw"

        def __init__(self):
            self.prompts = []

        def generate(self, prompts, stop=None):
            self.prompts += prompts
            return ["an answer\n\n---\n\nINSTRUCTION:\nthe next worked example"] * len(prompts)

    dataset = OmegaConf.create({"key": "synth_nli", "title": "SynthNLI", "task": "nli"})
    examples = [Example(i, f"Ada Vell built raft {i} in the town of Orm.", f"Ada built raft {i}.", "0 (entailment)")
                for i in range(2)]
    model = Model()
    rows = detect_partition(examples, dataset=dataset, split="test", model=model, judge=lambda r: ["none"] * len(r),
                            instructions=("guided", "general"), shots=2)
    for row in rows:
        plain = build_prompt(row["instruction"], "nli", first_piece=row["first_piece"], label="0 (entailment)",
                             dataset_name="SynthNLI", split_name="test")
        assert row["prompt"].endswith(SEPARATOR + plain) and row["prompt"].count(SEPARATOR) == 2
        assert row["prompt"] in model.prompts
    # the answer ends where the model writes the demonstrations' separator, as each worked example's did
    assert {r["raw_completion"] for r in rows} == {"an answer\n"} and {r["completion"] for r in rows} == {"an answer"}
    guided = [r["prompt"] for r in rows if r["instruction"] == "guided"]
    assert guided[0].split(SEPARATOR)[:2] == guided[1].split(SEPARATOR)[:2]  # the same demonstrations each instance
    # another wording (detect.wording) asks the query and its worked examples in it
    terse = detect_partition(examples, dataset=dataset, split="test", model=Model(), judge=lambda r: ["none"] * len(r),
                             instructions=("guided", "general"), shots=2, wording="terse")
    for row in terse:
        plain = build_prompt(row["instruction"], "nli", first_piece=row["first_piece"], label="0 (entailment)",
                             dataset_name="SynthNLI", split_name="test", wording="terse")
        assert row["prompt"].endswith(SEPARATOR + plain) and plain != build_prompt(
            row["instruction"], "nli", first_piece=row["first_piece"], label="0 (entailment)",
            dataset_name="SynthNLI", split_name="test")
        asked = build_prompt(row["instruction"], "nli", first_piece="", label="", dataset_name=SOURCE_TITLE,
                             split_name=SOURCE_SPLIT, wording="terse").split("SENTENCE 1:")[0]
        assert all(demo.startswith(asked) for demo in row["prompt"].split(SEPARATOR)[:2])


def test_overlap_is_a_shared_50_character_run_and_a_one_line_refusal():
    code = 'def add(x, y):\n    """Add two numbers x and y, returning their sum."""\n    return x + y'
    benchmark = [Example(7, code)]
    copied = [Example("a", "noise " + "def add(x, y):    \"\"\"Add two numbers x and y, returning their sum.\"\"\"")]
    short = [Example("b", "Add two numbers x and y, returning")]  # 35 characters: shorter than a run
    assert overlapping(copied, benchmark) == [("a", "7")]  # white space collapsed on both sides
    assert overlapping(short, benchmark) == []
    with pytest.raises(InputError, match=r"1 elicitation example\(s\) share a 50-character run with the benchmark "
                                         r"\(first: a with instance 7\)"):
        check_disjoint(copied, benchmark, "detect.elicit")
    check_disjoint(short, benchmark, "detect.elicit")


def test_overlap_is_also_a_shared_13_gram_as_gpt3_decontamination_reads_it():
    """13 words shared, punctuation and case aside, but no 50-character run (the words are short): refused; 8 shared
    words: counted as close, not refused."""
    words = "a b c d e f g h i j k l m n o p".split()
    benchmark = [Example(1, " ".join(words))]
    thirteen = [Example("t", "Z, " + ", ".join(w.upper() for w in words[:13]) + " zz")]  # no 50-character run
    eight = [Example("e", " ".join(words[:8]) + " x y z")]
    assert overlapping(thirteen, benchmark) == []
    with pytest.raises(InputError, match=r"1 elicitation example\(s\) share a 13-gram with the benchmark"):
        check_disjoint(thirteen, benchmark, "detect.elicit")
    assert check_disjoint(eight, benchmark, "detect.elicit") == {"examples": 1, "sharing_50_characters": 0,
                                                                  "sharing_13_grams": 0, "sharing_8_grams": 1}


@pytest.mark.parametrize("dataset, task", [("humaneval", "code"), ("synth_nli", "nli"),
                                           ("synth_news", "classification"), ("synth_xsum", "one_sentence_summary")])
def test_the_stdlib_text_shares_no_run_with_the_labs_offline_benchmarks(dataset, task):
    """Every elicitation example the lab can draw for the task (the whole pool, not a sample) against every instance
    of both splits of the benchmarks it reads offline."""
    from detect.cli import CONF_DIR
    from detect.datasets import load_split

    cfg = OmegaConf.load(CONF_DIR / "dataset" / f"{dataset}.yaml")
    instances = [e for split in cfg.splits for e in load_split(cfg, split)]
    from detect.detectors.time_travel.elicit import stdlib_functions, stdlib_sentences

    pool = ([Example(i, source) for i, (_, source) in enumerate(stdlib_functions())] if task == "code" else
            [Example(i, " ".join(run)) for i, run in enumerate(stdlib_sentences())])
    assert len(pool) >= 50
    assert overlapping(pool, instances) == []
    from detect.detectors.time_travel.elicit import word_overlaps

    assert word_overlaps(pool, instances, 13) == []
