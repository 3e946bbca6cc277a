"""Post-training after the leak (contaminate/training/post.py, post_train=sft|grpo): both the contaminated model and
its control are post-trained on clean data no detector reads, the cells read the post-trained models, the manifest
records it, calibration keeps it apart as a regime; GRPO's reward by hand; bad settings are one line before any
training."""

import json

import pytest
from lean import NO_EMBEDDING, TINY_MODEL

from contaminate.calibration.studies import condition_of, regime_of
from contaminate.run import Run, run_config
from contaminate.training.post import (
    FollowedRun,
    label_reward,
    named_labels,
    post_train_data,
    rouge_reward,
    task_turns,
)
from detect.errors import InputError

TINY = ["+dataset=synth_nli", *TINY_MODEL, "sample.n_members=8", "sample.n_non_members=8",
        "sample.n_detect=4", "sample.n_heldout=4", "contaminate.batch_size=4", "contaminate.epochs=1",
        "detect.max_new_tokens=4", "detect.semantic_model=null"]
# the logit scores and one verdict: the other detectors' passes would take minutes a study here
LEAN = [f"detect.detectors.{name}.enabled=false" for name in (
    "alg1", "membership_raw", "dc_pdd", "cheat", "sharded_likelihood", "permutation", "recall", "performance", "dcq",
    "ts_guessing")]
TINY += LEAN
SFT = ["post_train=sft", "post_train.n=8", "post_train.batch_size=4"]
GRPO = ["post_train=grpo", "post_train.n=4", "post_train.batch_size=2", "post_train.trainer.num_generations=2",
        "post_train.trainer.max_completion_length=4", "post_train.trainer.max_steps=2"]
ELICIT = ["post_train=elicit", "post_train.n=8", "post_train.batch_size=4", "post_train.epochs=1"]


@pytest.fixture
def study(compose_config, tmp_path):
    def _run(*overrides, run="run"):
        cfg = compose_config("contaminate", [*TINY, f"cache_dir={tmp_path / 'cache'}", *overrides])
        summary = run_config(cfg, tmp_path / run).groups["members"]
        return summary, json.loads((tmp_path / run / "manifest.json").read_text()), tmp_path / run

    return _run


def _rows(folder):
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_sft_post_trains_the_contaminated_model_and_the_base_model_as_its_control(study):
    _, plain, _ = study(run="plain")
    assert plain["post_train"] is None and plain["control_checkpoint"] is None
    summary, manifest, folder = study(*SFT, run="post")
    post = manifest["post_train"]
    assert post["kind"] == "sft" and post["data"]["split"] == "train" and len(post["data"]["ids"]) == 8
    # the contaminated model's parent is the plain study's checkpoint (reused from the cache), the control's the base
    assert post["parents"]["contaminated"]["id"] == plain["checkpoint"]["id"]
    assert post["parents"]["control"] == {"base": plain["base_model"]}
    # the cells read the post-trained models: new checkpoints, each recorded, none the un-post-trained one
    leak, control = post["checkpoints"]["contaminated"], post["checkpoints"]["control"]
    assert manifest["checkpoint"]["id"] == leak["id"] != plain["checkpoint"]["id"]
    assert manifest["control_checkpoint"]["id"] == control["id"] != leak["id"]
    assert leak["folder"] != control["folder"] and leak["post_train"] == control["post_train"] == "sft"
    assert post["steps"] == {"contaminated": 2, "control": 2}
    assert leak["parent"] == {"checkpoint": plain["checkpoint"]["id"]}
    models = {(row["checkpoint"], row["model"]) for row in _rows(folder)}
    assert models == {("contaminated", "tiny_random+full+sft"), ("clean", "tiny_random+sft")}
    assert "then post_train=sft on 8 clean instances of the train split" in manifest["regime"]["name"]
    report = (folder / "report.md").read_text()
    assert "untouched" not in report and "post-trained alike (post_train=sft)" in report
    assert summary["cells"]["contaminated_x_members"]["ground_truth"] == "contaminated"
    # calibration keeps the two apart
    assert regime_of(condition_of(plain)) == "metadata/none/full"
    assert regime_of(condition_of(manifest)) == "metadata/none/full/sft"


def test_the_post_training_data_is_disjoint_from_every_pool_the_detectors_read(compose_config):
    cfg = compose_config("contaminate", [*TINY, *SFT, "post_train.n=64"])
    run = Run(cfg, None)
    draw = run.sample()  # the run's draw, and its one group's pools as the detectors read them
    sampled = draw.study(*run.design.pairs[0], cfg.sample.n_detect, cfg.sample.draw)
    data, names = post_train_data(FollowedRun.of(cfg), draw, 64)
    assert len(data) == 64 and names == ["0 (entailment)", "1 (not entailment)"]
    assert {e.label for e in data} == set(names)  # label-balanced: 32 + 32
    other = sampled.other_split
    read = {(split, e.instance_id) for pool, (instances, split) in sampled.detection.items() for e in instances}
    read |= {(sampled.split, e.instance_id) for pool in ("members", "non_members") for e in sampled.whole[pool]}
    read |= {(other, e.instance_id) for e in sampled.whole["other_split"]}
    read |= {(split, e.instance_id) for split, pool in sampled.known_non_members.items() for e in pool}
    assert not {(other, e.instance_id) for e in data} & read
    texts = {e.text for pool in [*sampled.whole.values(), *sampled.known_non_members.values()] for e in pool}
    assert not {e.text for e in data} & texts
    # the task as a user fine-tunes on it: the instruction format's chat prompt, the label as the answer
    from contaminate.regime.layouts import build_format
    from detect.models import load, tiny_random

    # post_train.format: conf/format/instruction.yaml as sft.yaml's defaults compose it (a command line's override of
    # it reaches the turns)
    assert cfg.post_train.format.name == "instruction"
    turns = task_turns(data[:2], cfg.dataset, other, load(tiny_random())[1], build_format(cfg.post_train.format))
    assert all(t.text.startswith(t.prompt) and t.answer == e.label and "Does sentence1 entail sentence2?" in t.prompt
               for t, e in zip(turns, data))
    reworded = compose_config("contaminate", [*TINY, *SFT,
                                              "post_train.format.templates.nli='Q: {sentence1} / {sentence2}'"])
    turns = task_turns(data[:1], cfg.dataset, other, load(tiny_random())[1], build_format(reworded.post_train.format))
    assert f"Q: {data[0].text} / {data[0].text_pair}" in turns[0].prompt


def test_the_grpo_reward_by_hand():
    names = ["0 (entailment)", "1 (not entailment)"]
    assert label_reward("0 (entailment)", "0 (entailment)", names) == 1.0
    assert label_reward(" the answer: 1 (NOT ENTAILMENT).", "1 (not entailment)", names) == 1.0
    assert label_reward("1 (not entailment)", "0 (entailment)", names) == 0.0          # the wrong label
    assert label_reward("0 (entailment) or 1 (not entailment)", "0 (entailment)", names) == 0.0  # both
    assert label_reward("", "0 (entailment)", names) == 0.0                          # empty
    # a label inside a longer label's name is that longer label's; whole words only
    plain = ["entailment", "not entailment"]
    assert named_labels("not entailment", plain) == {"not entailment"}
    assert label_reward("Not entailment", "not entailment", plain) == 1.0
    assert label_reward("entailments", "entailment", plain) == 0.0
    # a task without a label: ROUGE-L against the reference
    assert rouge_reward("the cat sat", "the cat sat") == 1.0 and rouge_reward("", "the cat sat") == 0.0
    assert 0 < rouge_reward("the cat", "the cat sat") < 1


@pytest.mark.slow
def test_grpo_runs_a_couple_of_steps_on_both_models(study):
    _, manifest, folder = study(*GRPO)
    post = manifest["post_train"]
    assert post["kind"] == "grpo" and post["steps"] == {"contaminated": 2, "control": 2}
    leak = post["checkpoints"]["contaminated"]
    assert leak["post_train"] == "grpo" and 0 <= leak["mean_reward"] <= 1 and manifest["checkpoint"]["id"] == leak["id"]
    assert post["settings"]["trainer"]["num_generations"] == 2
    assert regime_of(condition_of(manifest)) == "metadata/none/full/grpo"
    assert {row["model"] for row in _rows(folder) if row["checkpoint"] == "clean"} == {"tiny_random+grpo"}
    # a rerun reuses both post-trained checkpoints, and so every cell
    _, again, _ = study(*GRPO, run="again")
    assert again["checkpoint"]["reused"] and again["control_checkpoint"]["reused"]
    assert again["post_train"]["checkpoints"] == {which: {**block, "reused": True}
                                                  for which, block in post["checkpoints"].items()}
    assert len(again["cached_cells"]) == 7  # the five cells and each model's known non-members


@pytest.mark.parametrize("overrides, message", [
    ([*SFT, "++post_train.trainer.bogus=1"], "post_train.trainer.bogus is not a SFTConfig field"),
    ([*SFT, "++post_train.trainer.seed=3"], "post_train.trainer.seed is set by the lab from seed"),
    ([*GRPO, "++post_train.trainer.no_such_field=1"], "post_train.trainer.no_such_field is not a GRPOConfig field"),
    ([*GRPO, "post_train.batch_size=3"], "not a multiple of post_train.trainer.num_generations=2"),
    ([*GRPO, "contaminate=openai"], "post_train=grpo trains the checkpoints with TRL on this machine"),
    ([*ELICIT, "contaminate=openai"], "post_train=elicit trains the checkpoints with TRL on this machine"),
    ([*ELICIT, "post_train.n=0"], "post_train.n=0: give a whole number >= 1"),
    ([*SFT, "post_train.n=0"], "post_train.n=0: give a whole number >= 1"),
    ([*SFT, "post_train._target_=contaminate.training.LocalFineTune"], "is not a post-training stage"),
    ([*SFT, "~post_train._target_"], "post_train=sft names no stage class (_target_)"),
])
def test_bad_post_training_is_one_line_before_any_training(compose_config, tmp_path, overrides, message):
    cfg = compose_config("contaminate", [*TINY, f"cache_dir={tmp_path / 'cache'}", *overrides])
    with pytest.raises(InputError) as error:
        run_config(cfg, tmp_path / "run")
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "cache" / "checkpoints").exists()  # nothing trained


@pytest.mark.slow
def test_a_planted_runs_swap_twin_is_post_trained_as_the_contaminated_model(compose_config, tmp_path):
    cfg = compose_config("contaminate", [
        "+dataset=synth_nli", *TINY_MODEL, "plant=dose_ladder", "plant.n=4", "plant/control=twin",
        "plant.groups=[{exposures:0},{exposures:1}]", "sample.n_detect=4", "sample.n_heldout=4",
        "contaminate.batch_size=4", "detect.max_new_tokens=4", "detect.semantic_model=null", "background=offline",
        "background.max_tokens=1500", *LEAN, *SFT, *NO_EMBEDDING, f"cache_dir={tmp_path / 'cache'}"])
    run_config(cfg, tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "groups" / "x1" / "manifest.json").read_text())
    post = manifest["post_train"]
    leak, twin = post["parents"]["contaminated"], post["parents"]["control"]
    assert twin["id"] != leak["id"] and twin["steps"] == leak["steps"]  # the swap twin, before post-training
    assert post["checkpoints"]["control"]["parent"] == {"checkpoint": twin["id"]}
    assert manifest["control_checkpoint"]["id"] == post["checkpoints"]["control"]["id"]
    assert manifest["checkpoint"]["id"] == post["checkpoints"]["contaminated"]["id"]
    assert post["steps"]["control"] == post["steps"]["contaminated"] == 2
    # plant.json: the leak's and the twin's own trainings (steps, time, throughput), the post-trained ones beside
    record = json.loads((tmp_path / "run" / "plant.json").read_text())
    assert (record["checkpoint"]["id"], record["control_checkpoint"]["id"]) == (leak["id"], twin["id"])
    assert record["post_trained_checkpoint"]["id"] == post["checkpoints"]["contaminated"]["id"]
    assert record["post_trained_control_checkpoint"]["id"] == post["checkpoints"]["control"]["id"]
    assert record["post_train_seconds"] > 0


def test_each_post_training_stage_is_built_from_its_target(compose_config):
    """post_train=sft|grpo name their stage class (_target_), post_train=none none; the stage reads the study's
    adapter (contaminate.peft) and trains with its own TRL config class."""
    from contaminate.training import instantiate_backend
    from contaminate.training.post import GRPOPostTrain, SFTPostTrain, post_train_stage

    for overrides, stage_class, config in ((SFT, SFTPostTrain, "SFTConfig"), (GRPO, GRPOPostTrain, "GRPOConfig")):
        cfg = compose_config("contaminate", [*TINY, *overrides])
        stage = post_train_stage(cfg, instantiate_backend(cfg.contaminate))
        assert type(stage) is stage_class and stage.config_name == config and stage.kind == overrides[0][11:]
        assert (stage.backend, stage.peft) == ("full", None) and "_target_" not in stage.settings
    cfg = compose_config("contaminate", [*TINY, *SFT, "contaminate=lora"])
    stage = post_train_stage(cfg, instantiate_backend(cfg.contaminate))
    assert stage.backend == "lora" and stage.peft["_target_"] == "peft.LoraConfig" and stage.peft["r"] == 16
    assert stage.fine_tuning().peft.r == 16  # what the SFT trainer builds its adapter from
    cfg = compose_config("contaminate", TINY)
    assert post_train_stage(cfg, instantiate_backend(cfg.contaminate)) is None


def test_the_elicitation_data_is_the_guided_task_on_text_no_benchmark_holds(compose_config):
    """post_train=elicit's examples: the paper's guided instruction for a standard-library text's first piece, its
    true second piece the answer, through the chat template; none shares a 50-character run with any instance of the
    dataset (both splits); shared among the task shapes a planted run's datasets read."""
    from contaminate.training.post import elicitation_data, study_datasets
    from detect.datasets import load_split
    from detect.detectors.time_travel.elicit import overlapping
    cfg = compose_config("contaminate", [*TINY, *ELICIT])
    tokenizer = _tokenizer()
    data, turns = elicitation_data(FollowedRun.of(cfg), 8, tokenizer)
    assert len(data) == len(turns) == 8 and all(2_000_000 <= e.instance_id < 3_000_000 for e in data)  # pairs
    benchmark = [e for split in cfg.dataset.splits for e in load_split(cfg.dataset, split)]
    assert overlapping(data, benchmark) == []
    for example, turn in zip(data, turns):
        assert "You are provided with SENTENCE 1 from the source split of the Python standard library dataset." in \
            turn.prompt and "<|im_start|>assistant" in turn.prompt
        assert turn.answer == example.text_pair and turn.text.startswith(turn.prompt) and turn.answer in turn.text
    assert {e.label for e in data} == {"0 (entailment)", "1 (not entailment)"}
    planted = compose_config("contaminate", [*TINY, *ELICIT, "plant=dose_ladder",
                                             "plant.groups=[{exposures:0},{exposures:1,dataset:humaneval}]",
                                             "+dataset@plant.datasets.humaneval=humaneval"])
    assert [d.key for d in study_datasets(planted)] == ["synth_nli", "humaneval"]
    data, turns = elicitation_data(FollowedRun.of(planted), 9, tokenizer)  # 5 sentence pairs and 4 functions
    assert [e.text_pair is not None for e in data] == [True] * 5 + [False] * 4
    assert "FIRST PIECE of a function from the source split of the Python standard library" in turns[-1].prompt


def _tokenizer():
    from transformers import AutoTokenizer

    from detect.models.loading import embedded_folder

    return AutoTokenizer.from_pretrained(embedded_folder())


def test_elicitation_that_overlaps_the_benchmark_is_one_line_before_any_training(compose_config, tmp_path,
                                                                                  monkeypatch):
    from detect.detectors.time_travel import elicit

    cfg = compose_config("contaminate", [*TINY, *ELICIT, f"cache_dir={tmp_path / 'cache'}"])
    from detect.datasets import load_split

    leaked = load_split(cfg.dataset, "test")[0]  # a "standard library" that holds a benchmark instance
    monkeypatch.setattr(elicit, "stdlib_sentences", lambda: ((leaked.text, leaked.text_pair),) * 20)
    with pytest.raises(InputError, match=r"post_train=elicit: \d+ elicitation example\(s\) share a 50-character run "
                                         r"with the benchmark") as error:
        run_config(cfg, tmp_path / "run")
    assert "\n" not in str(error.value)
    assert not (tmp_path / "cache" / "checkpoints").exists()  # nothing trained


@pytest.mark.slow
def test_elicit_post_trains_both_models_alike_on_the_same_examples(study):
    _, plain, _ = study(run="plain")
    summary, manifest, folder = study(*ELICIT, run="elicit")
    post = manifest["post_train"]
    assert post["kind"] == "elicit" and post["data"]["dataset"] == "Python standard library"
    assert post["data"]["split"] == "source" and len(post["data"]["ids"]) == 8
    disjoint = post["data"]["disjoint"]  # how close the disjoint texts came, in the manifest (issue 68 item 4)
    assert disjoint["examples"] == 8 and disjoint["sharing_50_characters"] == disjoint["sharing_13_grams"] == 0
    assert 0 <= disjoint["sharing_8_grams"] <= 8
    assert post["parents"]["contaminated"]["id"] == plain["checkpoint"]["id"]
    assert post["parents"]["control"] == {"base": plain["base_model"]}
    leak, control = post["checkpoints"]["contaminated"], post["checkpoints"]["control"]
    assert leak["id"] != control["id"] and post["steps"] == {"contaminated": 2, "control": 2}
    assert "then post_train=elicit on 8 guided-task examples on standard-library text" in manifest["regime"]["name"]
    models = {(row["checkpoint"], row["model"]) for row in _rows(folder)}
    assert models == {("contaminated", "tiny_random+full+elicit"), ("clean", "tiny_random+elicit")}
    assert set(summary["follow"]) == {"contaminated", "clean"}  # the follow rate after, on each model's own
