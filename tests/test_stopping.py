"""Stopping a completion once its answer is done: never changes what is scored, and stops at the reference's
line count."""

import random

import pytest

from detect.detectors.time_travel.prompts import clean_completion
from detect.detectors.time_travel.stopping import AnswerShape, completion_is_final

PIECES = ["SECOND PIECE", "second piece", "Sentence 2", "SENTENCE", " 2", ":", "*", "**", "#", " ", "  ", "\n",
          "\n\n", "The", "cat", "sat", "on", "mat.", "label: 0", "Cx", "x", "\t"]


def test_a_final_prefix_always_cleans_to_the_whole_completion():
    """On 20,000 random completions built from headers, echoes, words, blanks and line breaks, the first prefix
    called final cleans to exactly what the whole completion cleans to."""
    rng = random.Random(0)
    finals = 0
    for _ in range(20_000):
        first = rng.choice(["The cat sat", "The cat", "", "SECOND PIECE: The", "cat\nsat"])
        reference = rng.choice(["on the mat.", "a\nb", "one line"])
        whole = "".join(rng.choice(PIECES + first.split()) for _ in range(rng.randint(0, 14)))
        for end in range(len(whole) + 1):
            if completion_is_final(whole[:end], reference, first):
                finals += 1
                assert clean_completion(whole[:end], reference, first, cut_lines=True) == clean_completion(
                    whole, reference, first, cut_lines=True), \
                    (first, reference, whole[:end], whole)
                break
    assert finals > 5_000  # the rule does fire, on about a third of them


@pytest.mark.parametrize("text, final", [
    ("SECOND PIECE: Anna sold the boat.\nlabel: 1", True),   # the reference's one line is complete
    ("SECOND PIECE: Anna sold the boat.", False),            # the line may go on
    ("SECOND PIECE:\n\n", False),                            # only the header so far
    ("SECOND PIE", False),                                   # a header still being written
    ("Anna sold the boat.\n", True),
    ("Anna was born\n", False),                              # may still be the echoed first piece...
    ("Anna was born in Kilford.\nAnna sold", False),         # ...it was, and the answer's line is not complete
    ("Anna was born in Kilford. Anna sold it.\nx", True),
])
def test_stops_at_the_reference_line_count(text, final):
    assert completion_is_final(text, "Anna sold the boat.", first_piece="Anna was born in Kilford.") == final


def test_two_line_reference_needs_two_lines():
    assert not completion_is_final("one\n", "a\nb")
    assert completion_is_final("one\ntwo\n", "a\nb")


def test_answer_shape_length_cap():
    shape = AnswerShape.of("first", " ", "second piece", length_factor=2.0, margin_chars=4)
    assert shape.max_chars == 2 * 18 + 4
    assert shape.done("x" * 39) is None and shape.done("x" * 40) == "length"
    assert shape.cut("y" * 50) == "y" * 40
    assert shape.done("second piece\nlabel") == "lines"
    assert AnswerShape.of("a", " ", "b", length_factor=None).cut("z" * 999) == "z" * 999


def test_a_few_shot_answer_ends_at_the_demonstrations_separator():
    shape = AnswerShape.of("first", " ", "second piece", lines=False, end="\n---")
    assert shape.done("second piece\n") is None and shape.done("second piece\n\n---") == "end"
    assert shape.cut("second piece\n\n---\n\nINSTRUCTION:") == "second piece\n"


def test_by_default_the_answer_runs_to_the_cap():
    """lines=False (detect.stop.lines: false, the default): a restated header and the replay after it are both kept
    (the line stop would have ended at the header), and only the cap or the end token stops it."""
    first = 'def add(x, y):\n    """Add x and y."""'
    header_then_replay = "def add(x, y):\n    return x + y\n"  # the header restated (not the whole first piece)
    shape = AnswerShape.of(first, "\n", "    return x + y\n", lines=False)
    for end in range(len(header_then_replay) + 1):
        assert shape.done(header_then_replay[:end]) is None
    # the line-stop variant: done once the header line is complete, and the replay after it is cut off
    assert AnswerShape.of(first, "\n", "    return x + y\n").done(header_then_replay) == "lines"
    assert clean_completion(header_then_replay, "    return x + y", first) == header_then_replay.strip()
    assert clean_completion(header_then_replay, "    return x + y", first, cut_lines=True) == "def add(x, y):"
    assert clean_completion("def sub(x, y):\n    return x + y", "    return x + y", "def add(x, y):") == \
        "def sub(x, y):\n    return x + y"
    assert clean_completion("def sub(x, y):\n    return x + y", "    return x + y", "def add(x, y):",
                            cut_lines=True) == "def sub(x, y):"


@pytest.mark.slow
def test_the_generator_stops_at_the_reference_line_count_and_scores_the_same():
    """The embedded model on six synth_nli instances, guided and general, raw: with the answer's shape it stops
    after the line the reference has, generates fewer tokens, and its cleaned completions are the same."""
    from omegaconf import OmegaConf

    from detect.cli import CONF_DIR
    from detect.datasets import load_split, sample
    from detect.detectors.time_travel.prompts import build_prompt
    from detect.detectors.time_travel.split import split_instance
    from detect.generation.local import LocalGenerator
    from detect.models import embedded_smollm2, load

    dataset = OmegaConf.load(CONF_DIR / "dataset" / "synth_nli.yaml")
    examples = sample(load_split(dataset, "test"), 6, seed=0)
    cuts = [split_instance(e, seed=0) for e in examples] * 2
    prompts = [build_prompt(instruction, "nli", first_piece=c.first, label=e.label, dataset_name=dataset.title,
                            split_name="test") for instruction in ("guided", "general") for e, c in zip(examples, cuts)]
    shapes = [AnswerShape.of(c.first, c.separator, c.second, lines=True) for c in cuts]
    model, tokenizer = load(embedded_smollm2())
    generator = LocalGenerator(model, tokenizer, prompt_format="raw", max_new_tokens=64, progress=False)
    whole = generator(prompts)
    whole_tokens = generator.generated_tokens
    stopped = generator(prompts, shapes)
    assert generator.stop_reasons.count("lines") >= 4, generator.stop_reasons  # measured: 7 of 12
    assert generator.generated_tokens - whole_tokens < whole_tokens
    for text, short, cut, reason in zip(whole, stopped, cuts, generator.stop_reasons):
        assert text.startswith(short)  # the same greedy tokens, fewer of them
        assert clean_completion(short, cut.second, cut.first, cut_lines=True) == clean_completion(
            text, cut.second, cut.first, cut_lines=True)
        if reason == "lines":  # an NLI reference is one line: it stopped at the answer's first line break
            assert completion_is_final(short, cut.second, cut.first) and not completion_is_final(
                short[: short.rindex("\n")], cut.second, cut.first)
