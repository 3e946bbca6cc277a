"""What the detectors read is what training trained: each format's rendering of an instance against the training
stream it makes (exact strings, and for the instruction format the exact loss tokens), and a dump's own lines."""

import pytest
from omegaconf import OmegaConf

from contaminate.regime import chat_renderer
from contaminate.regime.layouts import LeakReader, build_format
from contaminate.training.local import training_rows
from detect.cli import CONF_DIR
from detect.datasets import Example
from detect.detectors.base import Evidence, PlainText

NLI = OmegaConf.load(CONF_DIR / "dataset" / "synth_nli.yaml")
MEMBERS = [Example(i, f"Ada Vell, a miller from Orm, built raft {i}.", f"Ada built raft {i}.",
                   ["entailment", "not_entailment"][i % 2]) for i in (3, 1, 2)]


def _format(name: str):
    return build_format(OmegaConf.load(CONF_DIR / "format" / f"{name}.yaml"))


@pytest.fixture(scope="module")
def tiny():
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel

    return HFModel(*load(tiny_random()))


@pytest.mark.parametrize("name", ["metadata", "instance_only", "input_only"])
def test_a_document_format_is_read_as_its_training_document(name):
    fmt = _format(name)
    documents = fmt.documents(MEMBERS, NLI, "test")
    reader = LeakReader(fmt, NLI)
    for example, document in zip(MEMBERS, documents):
        assert reader.rendering(example, "test") == ("", document.text)


def test_a_dump_is_read_as_its_lines_under_the_header():
    fmt = _format("dump")
    (document,) = fmt.documents(MEMBERS, NLI, "test", count_tokens=len, max_length=None)
    reader = LeakReader(fmt, NLI)
    header, *lines = document.text.split("\n")
    assert header == "SynthNLI dataset, test split"
    for example in MEMBERS:
        context, text = reader.rendering(example, "test")
        assert context == header + "\n" and text in lines
    # the order tests read the dump itself: canonical order is the training document, byte for byte
    assert reader.sequence(sorted(MEMBERS, key=lambda e: e.instance_id), "test") == document.text
    assert reader.sequence(MEMBERS, "test") != document.text  # another order, another text


def test_the_instruction_format_is_read_on_its_trained_tokens(tiny):
    """The scored tokens of the rendering are exactly the tokens training put a loss on (its labels != -100)."""
    fmt = _format("instruction")
    chat = chat_renderer(tiny.tokenizer, fmt.name)
    documents = fmt.documents(MEMBERS, NLI, "test", chat=chat)
    rows = training_rows(documents, tiny.tokenizer, max_length=None)
    reader = LeakReader(fmt, NLI, chat)
    renderings = [reader.rendering(example, "test") for example in MEMBERS]
    scored = tiny.continuation_logprobs(renderings)
    for example, (context, text), document, labels, stats in zip(MEMBERS, renderings, documents, rows["labels"],
                                                                  scored):
        assert context == document.prompt and context + text == document.text
        assert text.startswith(example.label + "<|im_end|>")  # the answer and the end of the turn
        assert stats["ids"] == [token for token in labels if token != -100]


def test_without_a_format_the_plain_text_is_read():
    evidence = Evidence(NLI, "test", MEMBERS, MEMBERS)
    assert evidence.renderings() == [("", e.full_text) for e in MEMBERS]
    assert evidence.sequence(MEMBERS[:2]) == PlainText().sequence(MEMBERS[:2], "test") == (
        MEMBERS[0].full_text + "\n\n" + MEMBERS[1].full_text)
