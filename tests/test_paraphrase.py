import hashlib
import json

import pytest
from omegaconf import OmegaConf

from contaminate.regime.layouts import build_format
from detect.cli import CONF_DIR
from detect.datasets import Example, load_split, synth
from detect.datasets.paraphrase import paraphrases
from detect.errors import InputError
from detect.models.base import LanguageModel

SYNTH = {shape: OmegaConf.load(CONF_DIR / "dataset" / f"synth_{shape}.yaml") for shape in ("nli", "news", "xsum")}
RTE = OmegaConf.load(CONF_DIR / "dataset" / "rte.yaml")
PARAPHRASE = OmegaConf.load(CONF_DIR / "format" / "paraphrase.yaml")

# sha256 of json.dumps(generate_rows(shape, 1200, seed=0), sort_keys=True), computed before the generators were
# split into draws and renders: every partition and checkpoint is keyed by these rows, so they must never change
ROW_DIGESTS = {
    "nli": "833f315b0d3df4249dd84c41f10c0ee695f8080f8f282ce442d4d1ea03e8dd3b",
    "news": "4bf1b1b1cbeb7cfd244f17195c9d5ce25a64624f36700a51c8265b30649bef03",
    "xsum": "c11943bfe7a6e68b79db76b9918323d978e621f7883f140fd5d09ed81f164f5c",
}


@pytest.mark.parametrize("shape", ["nli", "news", "xsum"])
def test_generated_rows_are_byte_identical_to_before_paraphrases(shape):
    rows = synth.generate_rows(shape, 1200, seed=0)
    assert hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest() == ROW_DIGESTS[shape]


def _drawn_values(draws) -> set[str]:
    """Every drawn name and number of an instance (the values dicts, the person), however deep."""
    found: set[str] = set()
    stack = [draws]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [value for key, value in item.items() if key != "label"]
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            found.add(item)
    return found


@pytest.mark.parametrize("shape", ["nli", "news", "xsum"])
def test_every_variant_rewords_and_keeps_the_label_and_every_drawn_value(shape):
    fields = synth.TEXT_FIELDS[shape]
    for draws in synth.generate_draws(shape, 1200, seed=0)["test"][:150]:
        row = synth.render(shape, draws)
        original = " ".join(row[f] for f in fields)
        values = _drawn_values(draws)
        assert all(value in original for value in values)  # the row states every value it drew
        texts = set()
        for variant in range(1, synth.VARIANTS + 1):
            reworded = synth.render(shape, draws, variant)
            assert reworded.get("label") == row.get("label")
            assert all(reworded[f] != row[f] for f in fields)  # every text field reworded
            text = " ".join(reworded[f] for f in fields)
            assert all(value in text for value in values)  # no fact dropped
            texts.add(text)
        assert len(texts) == synth.VARIANTS  # the variants are distinct from each other


def test_a_news_paraphrase_by_hand():
    # The first synth_news test row: World facts 3 (wording 1) and 2 (wording 1). Variant 1 = (wording shift 1,
    # frame shift 1): each fact's next wording with the same fields (wording 2), the two sentences in turned order.
    row = synth.generate_rows("news", 1200, seed=0)["test"][0]
    assert row == {"text": "Turnout reached 10 percent in the vote that made Walter Selzantor governor of Tamdramouth. "
                           "223 families near Vartormoor lost their homes to floods.", "label": 0}
    assert synth.paraphrase(row, "news", 1) == {
        "text": "Rising water forced 223 households out of Vartormoor. The new governor of Tamdramouth, Walter "
                "Selzantor, took office after 10 percent of voters took part.", "label": 0}


def test_an_xsum_lead_whose_other_wordings_name_other_fields_keeps_its_own():
    # lead 5's second wording names a person its others lack: rewording it would add or drop a fact
    draws = {"lead": [5, 1], "consequence": [6, 0],
             "values": {"person": "Ana Kor", "role": "pilot", "place": "Velford", "percent": "12", "place2": "Osmoor"}}
    assert synth.render("xsum", draws)["summary"] == (
        "Ana Kor, a pilot living in Velford, has warned that 12 percent of bridges in Osmoor need repairs.")
    assert synth.render("xsum", draws, 1)["summary"] == (
        "It emerged that Ana Kor, a pilot living in Velford, says repairs are due on 12 percent of the bridges in "
        "Osmoor.")


@pytest.mark.parametrize("shape", ["nli", "news", "xsum"])
def test_paraphrases_of_a_dataset_are_distinct_seeded_and_deterministic(shape):
    cfg = SYNTH[shape]
    examples = load_split(cfg, "test")[:20]
    first = paraphrases(cfg, examples, 3, seed=0)
    assert first == paraphrases(cfg, examples, 3, seed=0)
    assert first != paraphrases(cfg, examples, 3, seed=1)  # another seed orders the variants otherwise
    for example, options in zip(examples, first):
        assert len(options) == 3
        assert len({(o.text, o.text_pair) for o in options} | {(example.text, example.text_pair)}) == 4
        assert all(o.instance_id == example.instance_id and o.label == example.label for o in options)
        assert all((o.text_pair is None) == (example.text_pair is None) for o in options)


def test_too_many_paraphrases_and_a_hub_dataset_without_rewriter_are_one_line_errors():
    examples = load_split(SYNTH["nli"], "test")[:2]
    with pytest.raises(InputError, match=r"5 paraphrases asked of synth_nli: there are 4 variants"):
        paraphrases(SYNTH["nli"], examples, 5, seed=0)
    with pytest.raises(InputError, match=r"^dataset rte is not one of the lab's synthetic partitions .* set "
                                         r"detect.detectors.dcq.rewriter=<hub id or model folder>$") as error:
        paraphrases(RTE, [Example(0, "A man walks.", "A man moves.", "0 (entailment)")], 3, seed=0,
                    setting="detect.detectors.dcq.rewriter")
    assert "\n" not in str(error.value)


class EchoRewriter(LanguageModel):
    """A fake rewriter: answers each prompt with its style's first word and the text, then a note to drop."""
    name = "echo"

    def _generate(self, prompts, stop, max_new_tokens):
        answers = []
        for prompt in prompts:
            style = prompt.split("in other words: ")[1].split(" ")[0]
            text = prompt.split("\nText: ")[1].split("\nRewritten text:")[0]
            answers.append(f" {style}: {text}\n\nNote: done.")
        return answers, [None] * len(prompts)


def test_a_hub_dataset_is_paraphrased_by_its_rewriter_greedily_with_the_label_kept():
    pair = Example(4, "A man walks his dog.", "A dog is outside.", "0 (entailment)")
    found = paraphrases(RTE, [pair], 2, seed=0, rewriter=EchoRewriter())
    # seed 0, instance 4: the styles in the order the seeded permutation gives; the answer up to its blank line
    assert {(o.text, o.text_pair) for o in found[0]} <= {
        (f"{word}: A man walks his dog.", f"{word}: A dog is outside.") for word in ("replace", "change", "reorder",
                                                                                      "use")}
    assert len(found[0]) == 2 and all(o.label == pair.label and o.instance_id == 4 for o in found[0])
    assert found == paraphrases(RTE, [pair], 2, seed=0, rewriter=EchoRewriter())


def test_paraphrase_format_plants_the_paraphrases_and_the_detectors_read_the_verbatim():
    dataset = SYNTH["nli"]
    members = load_split(dataset, "train")[:6]
    fmt = build_format(PARAPHRASE)
    fmt.check(dataset)
    documents = fmt.documents(members, dataset, "train")
    assert [d.members for d in documents] == [(e.instance_id,) for e in members]
    planted = paraphrases(dataset, members, 4, seed=0)  # every variant; variant 1 is the one planted
    for document, example, options in zip(documents, members, planted):
        assert example.text not in document.text and example.text_pair not in document.text  # not the verbatim
        assert document.text.endswith(f"\nlabel: {example.label}")  # the label unchanged
        variant_1 = synth.paraphrase({"sentence1": example.text}, "nli", 1)
        assert document.text == (f"SynthNLI dataset, train split\nsentence1: {variant_1['sentence1']}\n"
                                 f"sentence2: {variant_1['sentence2']}\nlabel: {example.label}")
        assert (variant_1["sentence1"], variant_1["sentence2"]) in {(o.text, o.text_pair) for o in options}
    # the detectors read the benchmark's own instance (the default); reads=paraphrase reads the planted text
    verbatim = fmt.rendering(members[0], dataset, "train")
    assert members[0].text in verbatim.text and verbatim.context == ""
    oracle = build_format({**OmegaConf.to_container(PARAPHRASE), "reads": "paraphrase"})
    assert oracle.rendering(members[0], dataset, "train").text == documents[0].text
    other = build_format({**OmegaConf.to_container(PARAPHRASE), "variant": 2})
    assert other.documents(members[:1], dataset, "train")[0].text != documents[0].text


def test_paraphrase_format_settings_and_a_dataset_without_rewriter_fail_in_one_line():
    with pytest.raises(InputError, match=r"format.variant=5: give a whole number in \[1, 4\]"):
        build_format({**OmegaConf.to_container(PARAPHRASE), "variant": 5})
    with pytest.raises(InputError, match=r"format.reads=both: give verbatim"):
        build_format({**OmegaConf.to_container(PARAPHRASE), "reads": "both"})
    with pytest.raises(InputError, match=r"^dataset rte is not one .* set format.rewriter=<hub id or model folder>$"):
        build_format(PARAPHRASE).check(RTE)


def test_humaneval_is_paraphrased_by_the_code_rewrite_without_a_rewriter():
    from contaminate.shift import rewrite_problem
    from detect.cli import group_option
    from detect.datasets import load_raw

    dataset = group_option("dataset", "humaneval")
    fmt = build_format(PARAPHRASE)
    fmt.check(dataset)  # no rewriter needed: contaminate/shift.py rewrites code problems
    members = load_split(dataset, "test")[:3]
    raw = load_raw(dataset, "test")
    for document, example in zip(fmt.documents(members, dataset, "test"), members):
        row = raw[example.instance_id]
        prompt, solution = rewrite_problem(row["prompt"], row["canonical_solution"], row["entry_point"], row["test"])
        assert document.text == f"HumanEval dataset, test split\ntask_id: HumanEval/{example.instance_id}\n" \
                                f"{prompt}{solution}"
        assert example.text not in document.text and document.members == (example.instance_id,)
    # the detectors still read the benchmark's own problem (reads=verbatim)
    assert members[0].text in fmt.rendering(members[0], dataset, "test").text
