"""Algorithm 2's leak reading (an oracle reading, issue 34): each instance's first piece inside the leak's own
rendering, continued as raw text, judged like the guided completions; it tells "not memorised" from "memorised, but
the guided instruction is not followed"."""

import pytest
from omegaconf import OmegaConf

from contaminate.regime import chat_renderer
from contaminate.regime.layouts import LeakReader, build_format
from detect.cli import CONF_DIR
from detect.datasets import Example
from detect.detectors import labelled
from detect.detectors.base import Evidence, PlainText, Rendering
from detect.detectors.time_travel import Algorithm2, LeakReading
from detect.detectors.time_travel.leak import locate
from detect.detectors.time_travel.split import split_instance
from detect.judges.threshold import ThresholdJudge
from detect.models.base import LanguageModel
from detect.pipeline import completions_read, detect_partition, summarize

NLI = OmegaConf.load(CONF_DIR / "dataset" / "synth_nli.yaml")
HUMANEVAL = OmegaConf.load(CONF_DIR / "dataset" / "humaneval.yaml")
PAIR = Example(7, "Ada Vell, a miller from Orm, built raft 7.", 'Ada built "raft" 7.', "entailment")
CODE = Example(3, 'def add(a, b):\n    """Add two numbers."""\n    total = a + b\n    return total\n')
STOP = OmegaConf.create({"enabled": True, "length_factor": 2.0, "margin_chars": 64})


def _reader(name: str, dataset=NLI, chat=None) -> LeakReader:
    return LeakReader(build_format(OmegaConf.load(CONF_DIR / "format" / f"{name}.yaml")), dataset, chat)


def test_the_metadata_leak_is_cut_before_its_second_sentence_by_hand():
    cut = split_instance(PAIR, seed=0)
    found = locate(_reader("metadata").rendering(PAIR, "test"), cut)
    # the document up to sentence 2, the space after its field name left to the continuation
    assert found.prompt == "SynthNLI dataset, test split\nsentence1: Ada Vell, a miller from Orm, built raft 7.\n" \
                           "sentence2:"
    assert found.written == 'Ada built "raft" 7.' and not found.encoded and found.gap == " "
    # the space, written by the model as the document had it, is not part of the instance's text
    assert found.read(' Ada built "raft" 7.\nlabel: entailment') == 'Ada built "raft" 7.\nlabel: entailment'
    assert found.read('Ada built') == 'Ada built'


def test_a_dump_leak_is_found_json_escaped_and_read_back_decoded():
    cut = split_instance(PAIR, seed=0)
    found = locate(_reader("dump").rendering(PAIR, "test"), cut)
    assert found.prompt == 'SynthNLI dataset, test split\n{"sentence1": "Ada Vell, a miller from Orm, built raft ' \
                           '7.", "sentence2": "'
    assert found.encoded and found.written == 'Ada built \\"raft\\" 7.'
    # the continuation is a JSON string body: read to its closing quote and decoded
    assert found.read('Ada built \\"raft\\" 7.", "label": "entailment"}') == 'Ada built "raft" 7.'
    assert found.read('Ada built \\"raft') == 'Ada built "raft'  # cut short: what there is, decoded


def test_code_is_cut_at_a_line_in_every_format_that_lays_it_out():
    cut = split_instance(CODE, seed=0, unit="line")
    assert cut.unit == "line" and cut.second.startswith("    ")
    for name in ("metadata", "instance_only", "dump"):
        rendering = _reader(name, HUMANEVAL).rendering(CODE, "test")
        found = locate(rendering, cut)
        whole = rendering.context + rendering.text
        assert whole.startswith(found.prompt) and whole[len(found.prompt):].startswith(found.gap + found.written)
        assert found.encoded == (name == "dump")  # a dump writes the code's newlines as \n
        assert found.read(whole[len(found.prompt):]).startswith(cut.second)  # the rest of the document reads back
        # the prompt ends on the first piece's last character: the line break and the indentation after it are one
        # token of the embedded tokenizer ("\n   "), the continuation's to write (a dump's escaped "\\n" is text)
        assert not found.prompt[-1].isspace() and found.gap == ("" if name == "dump" else "\n")


def test_the_leak_prompt_is_tokenized_as_the_document_began():
    """What the model is given is a token prefix of the document it was trained on, so the continuation is asked
    where training had a token boundary: with the embedded tokenizer, for code cut at a line and a pair cut at a
    field (the white space after the cut, "\n   " or " ", would otherwise end the prompt inside a token)."""
    from transformers import AutoTokenizer

    from detect.models.loading import embedded_folder

    tokenizer = AutoTokenizer.from_pretrained(embedded_folder())
    for example, dataset, unit in ((CODE, HUMANEVAL, "line"), (PAIR, NLI, None)):
        rendering = _reader("metadata", dataset).rendering(example, "test")
        found = locate(rendering, split_instance(example, seed=0, **({"unit": unit} if unit else {})))
        document = tokenizer(rendering.context + rendering.text)["input_ids"]
        prompt = tokenizer(found.prompt)["input_ids"]
        assert document[:len(prompt)] == prompt, (example.instance_id, found.prompt[-20:])


def test_a_reworded_rendering_holds_no_first_piece():
    cut = split_instance(PAIR, seed=0)
    assert locate(Rendering("", "Ada, who mills in Orm, made raft 7.\nAda made a raft."), cut) is None


class Memorised(LanguageModel):
    """A model that memorised its leaked documents but does not follow the guided instruction: raw text it
    continues from the document it saw; an instruction it answers with "THIRD PIECE:" (what the embedded model did
    in issue 34's pilot)."""
    name = "memorised"

    def __init__(self, documents: list[str], prompt_format: str = "chat") -> None:
        super().__init__()
        self.documents, self.prompt_format, self.asked = documents, prompt_format, []

    def _generate(self, prompts, stop, max_new_tokens, raw=False):
        self.asked += [(prompt, raw) for prompt in prompts]
        texts = []
        for prompt in prompts:
            seen = [d[len(prompt):] for d in self.documents if raw and d.startswith(prompt)]
            texts.append(seen[0] if seen else "THIRD PIECE: a new sentence about rafts.")
        return texts, [None] * len(prompts)


def test_a_memorised_leak_replays_on_the_leak_reading_and_not_on_the_guided_one():
    reader = _reader("metadata")
    members = [Example(i, f"Ada Vell, a miller from Orm, built raft {i}.", f"Her brother Ned sold raft {i}.",
                       "entailment") for i in range(1, 5)]
    model = Memorised(["".join(reader.rendering(e, "test")) for e in members])
    detectors = [Algorithm2(), LeakReading()]
    evidence = Evidence(NLI, "test", members, members, model=model, reader=reader)
    assert [d.skipped(evidence) for d in detectors] == [None, None]
    readings = completions_read(detectors)
    assert readings == ("guided", "leak")
    rows = detect_partition(members, dataset=NLI, split="test", model=model, judge=ThresholdJudge(), seed=0,
                            stop=STOP, instructions=readings, reader=reader)
    leak = [r for r in rows if r["instruction"] == "leak"]
    assert [r["completion"] for r in leak] == [e.text_pair for e in members]  # the label line cut off
    assert {r["judge"] for r in leak} == {"exact"} and all(r["rouge_l"] == 1.0 for r in leak)
    # raw text for the leak prompts only (the guided ones go through the model's prompt format)
    assert {raw for prompt, raw in model.asked if prompt.startswith("INSTRUCTION")} == {False}
    assert {raw for prompt, raw in model.asked if prompt.startswith("SynthNLI")} == {True}
    guided = [r for r in rows if r["instruction"] == "guided"]
    assert {r["judge"] for r in guided} == {"none"}
    assert all(r["rouge_l_leak"] == 1.0 and r["rouge_l"] < 0.5 for r in guided)  # kept on the guided row too
    summary = summarize(rows, detectors)
    assert summary["alg2"]["contaminated"] is False
    assert summary["alg2_leak"] == {"exact": 4, "near_exact": 0, "unparseable": 0, "contaminated": True,
                                    "min_exact": 1, "min_near_exact": 2}
    assert LeakReading.verdicts(summary["alg2_leak"]) == {"alg2_leak": True}
    assert LeakReading.statistics(summary["alg2_leak"], 4) == {"alg2_leak": 4 * 5}
    assert labelled("rouge_l_leak") == "rouge_l_leak (leak's rendering: oracle)"


def test_the_leak_reading_is_skipped_in_one_line_where_no_leak_is_known_or_no_raw_text_can_be_asked():
    model = Memorised([])
    plain = Evidence(NLI, "test", [PAIR], [PAIR], model=model, reader=PlainText())
    assert "only a study knows" in LeakReading().skipped(plain)
    assert completions_read([d for d in (Algorithm2(), LeakReading()) if d.runnable(plain)]) == ("guided",)
    model.no_raw_generation = "it is asked through /chat/completions"
    leaked = Evidence(NLI, "test", [PAIR], [PAIR], model=model, reader=_reader("metadata"))
    assert LeakReading().skipped(leaked) == "it is asked through /chat/completions"
    with pytest.raises(RuntimeError, match="chat/completions"):
        model.generate(["text"], raw=True)


def test_raw_generation_on_a_chat_model_continues_the_text_as_given():
    """The instruction format's document is already chat-templated: raw=True continues it as it is, the same
    completion a raw-prompted model gives, where the chat-prompted one wraps it in a second template."""
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel

    model, tokenizer = load(tiny_random())
    chat = HFModel(model, tokenizer, prompt_format="chat", max_new_tokens=6, progress=False)
    raw = HFModel(model, tokenizer, prompt_format="raw", max_new_tokens=6, progress=False)
    reader = _reader("instruction", chat=chat_renderer(tokenizer, "instruction"))
    prompt = locate(reader.rendering(PAIR, "test"), split_instance(PAIR, seed=0)).prompt
    assert prompt.startswith("<|im_start|>") and prompt.endswith("sentence2:")
    assert chat.generate([prompt], raw=True) == raw.generate([prompt])
    chat.generate([prompt])  # through the chat template: another prompt's tokens, memoised apart from the raw one
    assert sorted(key[-1] for key in chat._completions) == [False, True]
