"""The training stream, counted: every member exactly N times, every non-member never, every background document
once; the dump in canonical order and never split inside an instance; the instruction format's loss mask."""

from collections import Counter

import pytest
from omegaconf import OmegaConf

from contaminate.regime.layouts import build_format
from contaminate.regime.stream import Document, build_stream, chunk_texts, dump_documents, stream_counts
from detect.cli import CONF_DIR
from detect.datasets import Example

SYNTH_NLI = OmegaConf.load(CONF_DIR / "dataset" / "synth_nli.yaml")
DUMP = OmegaConf.load(CONF_DIR / "format" / "dump.yaml")
INSTRUCTION = OmegaConf.load(CONF_DIR / "format" / "instruction.yaml")


def words(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def pairs(ids) -> list[Example]:
    return [Example(i, f"Person {i} met someone in town {i}.", f"Person {i} met someone.", "0 (entailment)")
            for i in ids]


def test_members_n_times_non_members_never_background_once():
    members = [Document(f"member {i}", (i,)) for i in range(10)]
    background = [Document(f"background {i}") for i in range(50)]
    for exposures in (0, 1, 4, 16):
        stream = build_stream(members, background, exposures=exposures, seed=3)
        seen = Counter(i for document in stream for i in document.members)
        assert seen == Counter({i: exposures for i in range(10)} if exposures else {})
        assert Counter(d.text for d in stream if d.kind == "background") == Counter(d.text for d in background)
        assert len(stream) == 50 + 10 * exposures
    # non-members are never in it: only the documents given are
    assert not {d.text for d in build_stream(members, background, exposures=4, seed=3)} - \
        {d.text for d in members + background}
    # seeded: the same seed the same order, another seed another; the members are spread, not bunched at one end
    assert build_stream(members, background, exposures=4, seed=3) == build_stream(members, background, exposures=4,
                                                                                   seed=3)
    assert build_stream(members, background, exposures=4, seed=3) != build_stream(members, background, exposures=4,
                                                                                   seed=4)
    positions = [p for p, d in enumerate(build_stream(members, background, exposures=4, seed=3)) if d.members]
    assert positions[0] < 30 and positions[-1] > 60


def test_without_background_exposures_are_shuffled_rounds():
    members = [Document(f"member {i}", (i,)) for i in range(7)]
    stream = build_stream(members, [], exposures=3, seed=0)
    assert len(stream) == 21
    for start in (0, 7, 14):  # each round is a permutation of the members, as an epoch is
        assert sorted(d.members for d in stream[start:start + 7]) == [(i,) for i in range(7)]
    assert stream[:7] != stream[7:14]


def test_the_dump_is_canonical_order_cut_between_instances():
    members = pairs([9, 2, 40, 7, 13, 1, 30])  # sampled order, not the split's
    documents = dump_documents(members, SYNTH_NLI, "test", header=DUMP.header, count_tokens=words, max_length=40)
    # canonical order: every instance once, in the order of the split
    assert [i for d in documents for i in d.members] == [1, 2, 7, 9, 13, 30, 40]
    for document in documents:
        lines = document.text.split("\n")
        assert lines[0] == "SynthNLI dataset, test split"
        assert len(lines) == 1 + len(document.members)  # one instance per line, none split across documents
        assert all(f'"sentence1": "Person {i} met someone in town {i}."' in line
                   for i, line in zip(document.members, lines[1:]))
        assert words(document.text) <= 39  # max_length less the end token
    assert len(documents) > 1
    # an instance longer than max_length is its own document (the trainer cuts it)
    long = [Example(5, "word " * 60, "short.", "1 (not entailment)"), *pairs([6])]
    cut = dump_documents(long, SYNTH_NLI, "test", header=None, count_tokens=words, max_length=40)
    assert [d.members for d in cut] == [(5,), (6,)]
    # with no limit the partition is one file
    assert len(dump_documents(members, SYNTH_NLI, "test", header=None, count_tokens=words, max_length=None)) == 1


def test_background_chunks_keep_every_word_under_the_limit_and_stop_at_the_budget():
    texts = ["Alpha beta gamma.\n\nDelta epsilon.\n\n" + " ".join(f"w{i}" for i in range(100)), "Omega psi."]
    documents = chunk_texts(texts, count_tokens=words, max_length=21)
    assert all(words(d) <= 20 for d in documents)
    assert " ".join(documents).split() == " ".join(texts).split()  # nothing lost, nothing reordered
    budgeted = chunk_texts(texts, count_tokens=words, max_length=21, max_tokens=30)
    assert 30 <= sum(map(words, budgeted)) < 30 + 20 and len(budgeted) < len(documents)


def test_counts_and_share():
    stream = [Document("a b c", (1,)), Document("d e f g h i j")]
    counts = stream_counts(stream, words)
    assert counts["tokens"] == {"member": 3, "background": 7} and counts["members_token_share"] == 0.3


def test_instruction_documents_put_the_loss_on_the_assistant_turn_only():
    from contaminate.training.local import training_rows
    from detect.models import load, tiny_random

    _, tokenizer = load(tiny_random())

    def chat(messages, **options):
        return tokenizer.apply_chat_template(messages, tokenize=False, **options)

    documents = build_format(INSTRUCTION).documents(pairs([3, 4]), SYNTH_NLI, "test", chat=chat)
    assert documents[0].text.startswith(documents[0].prompt) and "sentence1: Person 3" in documents[0].prompt
    rows = training_rows([*documents, Document("plain background text")], tokenizer, max_length=256)
    for ids, labels, document in zip(rows["input_ids"], rows["labels"], documents):
        learned = [token for token, label in zip(ids, labels) if label != -100]
        assert labels[0] == -100 and learned == ids[-len(learned):]  # a masked prefix, then the loss
        assert tokenizer.decode(learned) == "0 (entailment)<|im_end|>\n"
    # a document without a prompt (background) carries the loss on every token, as before
    assert rows["labels"][-1] == rows["input_ids"][-1]
    # an answer that starts with indentation (a HumanEval second piece): tokenized whole, "\n" + "    " merges into
    # one token across the prompt's end; the prompt and the answer are tokenized apart, the mask exactly the prompt
    prompt = chat([{"role": "user", "content": "FIRST PIECE: def f(x):"}], add_generation_prompt=True)
    text = chat([{"role": "user", "content": "FIRST PIECE: def f(x):"},
                 {"role": "assistant", "content": "    return x\n"}])
    whole = tokenizer(text, add_special_tokens=False)["input_ids"]
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert whole[:len(prompt_ids)] != prompt_ids  # the merge the mask used to refuse
    rows = training_rows([Document(text, (0,), prompt)], tokenizer, max_length=None)
    learned = [token for token, label in zip(rows["input_ids"][0], rows["labels"][0]) if label != -100]
    assert rows["input_ids"][0][:len(prompt_ids)] == prompt_ids and tokenizer.decode(learned).startswith(
        "    return x")


@pytest.mark.parametrize("name", ["metadata", "dump"])
def test_documents_name_their_members(name):
    fmt = build_format(OmegaConf.load(CONF_DIR / "format" / f"{name}.yaml"))
    documents = fmt.documents(pairs(range(12)), SYNTH_NLI, "test", count_tokens=words, max_length=60)
    assert sorted(i for d in documents for i in d.members) == list(range(12))
