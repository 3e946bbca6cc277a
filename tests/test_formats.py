import pytest
from omegaconf import OmegaConf

from contaminate.regime.formats import check_template, format_instance
from detect.cli import CONF_DIR
from detect.datasets import Example
from detect.detectors.time_travel.prompts import build_prompt
from detect.errors import InputError

RTE = OmegaConf.load(CONF_DIR / "dataset" / "rte.yaml")
XSUM = OmegaConf.load(CONF_DIR / "dataset" / "xsum.yaml")
METADATA = OmegaConf.load(CONF_DIR / "format" / "metadata.yaml")
INSTANCE_ONLY = OmegaConf.load(CONF_DIR / "format" / "instance_only.yaml")
PAIR = Example(7, "A man walks his dog.", "A dog is outside.", "0 (entailment)")


def test_metadata_format_carries_title_split_instance_and_label():
    text = format_instance(PAIR, template=METADATA.templates.nli, dataset=RTE, split="train")
    assert text == ("RTE dataset, train split\nsentence1: A man walks his dog.\nsentence2: A dog is outside.\n"
                    "label: 0 (entailment)")
    # the label string is the one the guided prompt shows
    prompt = build_prompt("guided", "nli", first_piece=PAIR.text, label=PAIR.label, dataset_name="RTE",
                          split_name="train")
    assert f"LABEL: {PAIR.label}" in prompt and PAIR.label in text


def test_instance_only_format_has_no_metadata():
    assert format_instance(PAIR, template=INSTANCE_ONLY.templates.nli, dataset=RTE, split="train") == (
        "A man walks his dog.\nA dog is outside.")
    summary = Example(1, "The council has voted to close the bridge.")
    assert format_instance(summary, template=INSTANCE_ONLY.templates.one_sentence_summary, dataset=XSUM,
                           split="test") == summary.text


def test_every_format_has_a_template_for_every_task_shape():
    for fmt in (METADATA, INSTANCE_ONLY):
        assert set(fmt.templates) == {"classification", "nli", "summary", "one_sentence_summary", "question", "code"}
    for key in ("rte", "imdb", "samsum", "xsum", "gsm8k", "synth_nli", "synth_news", "synth_xsum", "humaneval"):
        dataset = OmegaConf.load(CONF_DIR / "dataset" / f"{key}.yaml")
        check_template(METADATA.templates[dataset.task], dataset)
        check_template(INSTANCE_ONLY.templates[dataset.task], dataset)


def test_a_template_naming_a_missing_field_is_an_input_error():
    with pytest.raises(InputError, match=r"names \{premise\}, which dataset rte lacks \(its fields: id, label, "
                                         r"sentence1, sentence2, split, title\)"):
        check_template("{title}: {premise}", RTE)
