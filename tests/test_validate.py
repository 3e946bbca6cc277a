"""Bad input, as a new user types it: one line naming what to set, before any data or model is touched."""

import subprocess
import sys

import pytest

from contaminate.sampling import sample_pools
from contaminate.stages import check_study
from detect.datasets import load_split
from detect.errors import InputError
from detect.pipeline import check_detection

STUDY = ["+dataset=synth_nli"]


@pytest.mark.parametrize("override, message", [
    ("sample.n_members=-3", "sample.n_members=-3: give a whole number >= 1"),
    ("sample.n_non_members=0", "sample.n_non_members=0: give a whole number >= 1"),
    ("sample.n_detect=0", "sample.n_detect=0: give a whole number >= 1"),
    ("sample.n_detect=20", "sample.n_detect=20 is more than sample.n_members=10"),
    ("detect.max_new_tokens=0", "detect.max_new_tokens=0: give a whole number >= 1"),
    ("detect.cut.low=0.9", "give 0 < low <= high < 1"),
    ("detect.wording=plain", "detect.wording=plain: no such wording of the guided and general instructions; use one "
                             "of paper, reworded"),
    ("contaminate.epochs=0", "contaminate.epochs=0"),
    ("++contaminate.trainer.lerning_rate=1", "contaminate.trainer.lerning_rate is not an SFTConfig field"),
    ("++contaminate.trainer.bf16=true", "contaminate.trainer.bf16 is set by the lab from runtime.dtype"),
    ("detect.detectors.membership.k=2", "membership.k=2: give a number in \\(0, 1\\] \\(Min-K% takes a fraction"),
    # issue 24: what a new user typed that used to give a traceback or run on
    ("contaminate.learning_rate=-1", "contaminate.learning_rate=-1: give a number > 0"),
    ("contaminate.learning_rate=fast", "contaminate.learning_rate=fast: give a number"),
    ("contaminate.batch_size=0", "contaminate.batch_size=0: give a whole number >= 1"),
    ("++contaminate.trainer.warmup_ratio=1.5", "contaminate.trainer.warmup_ratio=1.5: give a number in \\[0, 1\\]"),
    ("detect.detectors.alg1.alpha=5", "detect.detectors.alg1.alpha=5: give a number in \\(0, 1\\)"),
    ("detect.detectors.alg2.min_exact=0", "detect.detectors.alg2.min_exact=0: give a whole number >= 1"),
    ("detect.detectors.sharded_likelihood.n_shards=1", "sharded_likelihood.n_shards=1: give a whole number >= 2"),
    ("detect.detectors.cheat.exact_threshold=95", "cheat.exact_threshold=95: give a number in \\(0, 1\\]"),
    ("+detect.detectors.alg1.resamples=5", "detect.detectors.alg1.resamples is not a setting of Algorithm1; its "
                                           "settings: paired, n_resamples, alpha"),
    ("detect.detectors.cheat._target_=detect.detectors.cheat.Cheat", "cheat._target_=detect.detectors.cheat.Cheat: "
                                                                      "no such class or function"),
    ("format._target_=contaminate.regime.layouts.Web", "format._target_=contaminate.regime.layouts.Web: no such class"),
    ("+format.layout=dump", "format.layout is not a setting of DocumentFormat"),
    ("generation=openai", "generation=openai in a study that trains here"),
    ("detect.detectors.dc_pdd._target_=detect.no_such_module.DCPDD", "no such class or function"),
])
def test_a_study_config_is_refused_in_one_line(compose_config, override, message):
    from contaminate.run import check_config

    extra = ["sample.n_members=10"] if "n_detect=20" in override else []
    cfg = compose_config("contaminate", [*STUDY, *extra, override])
    with pytest.raises(InputError, match=message):
        check_config(cfg)  # the setup: the study's design checks its pools, check_study the rest


def test_lora_arguments_pass_through_and_an_unknown_one_is_named(compose_config):
    """LoRA is a PEFT config block (contaminate.peft, TRL-style), every field of the class passing through."""
    from peft import LoraConfig

    from contaminate.training import instantiate_backend
    from contaminate.training.local import peft_config, trainer_arguments

    cfg = compose_config("contaminate", [*STUDY, "contaminate=lora", "++contaminate.peft.use_rslora=true",
                                         "++contaminate.trainer.max_grad_norm=0.5",
                                         "contaminate.trainer.report_to=tensorboard"])
    check_study(cfg)
    config = peft_config(cfg.contaminate.peft)
    assert isinstance(config, LoraConfig) and (config.r, config.lora_alpha, config.lora_dropout) == (16, 32, 0.0)
    assert config.target_modules == "all-linear" and config.use_rslora and config.task_type == "CAUSAL_LM"
    assert instantiate_backend(cfg.contaminate).name == "lora"
    assert peft_config(compose_config("contaminate", STUDY).contaminate.get("peft")) is None
    assert instantiate_backend(compose_config("contaminate", STUDY).contaminate).name == "full"
    arguments = trainer_arguments(cfg.contaminate)
    assert arguments["max_grad_norm"] == 0.5 and arguments["report_to"] == "tensorboard"
    refused = [(["++contaminate.peft.rnk=3"], "contaminate.peft.rnk is not a LoraConfig field"),
               (["++contaminate.peft.task_type=SEQ_CLS"], "contaminate.peft.task_type is set by the lab"),
               (["contaminate.peft._target_=collections.OrderedDict"], "is not a PEFT config class"),
               (["++contaminate.rank=8"], "contaminate.rank is gone: an adapter is a PEFT config")]
    for overrides, message in refused:
        with pytest.raises(InputError, match=message):
            check_study(compose_config("contaminate", [*STUDY, "contaminate=lora", *overrides]))


def test_the_default_configs_pass(compose_config):
    check_study(compose_config("contaminate", STUDY))
    assert [d.name for d in check_detection(compose_config("detect", STUDY))][:2] == ["alg1", "alg2"]


def test_a_malformed_jsonl_line_names_the_file_and_the_line(compose_config, tmp_path):
    good = '{"sentence1": "A man walks.", "sentence2": "He moves.", "label": "entailment"}\n'
    (tmp_path / "validation.jsonl").write_text(good + "\n" + '{"sentence1": "x", "sentence2": oops}\n')
    cfg = compose_config("detect", ["+dataset=rte", f"dataset.path={tmp_path}"]).dataset
    with pytest.raises(InputError, match=f"{tmp_path / 'validation.jsonl'} line 3 is not valid JSON"):
        load_split(cfg, "validation")
    (tmp_path / "validation.jsonl").write_text(good + "[1, 2]\n")
    with pytest.raises(InputError, match="line 2 is a JSON list, not an object"):
        load_split(cfg, "validation")


@pytest.mark.slow
def test_the_command_line_prints_one_line_and_writes_nothing_finished(tmp_path):
    """The four inputs of issue 13, through the real command: exit 2, one line on stderr, no training started."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text('{"sentence1": "a b", "sentence2": oops}\n')
    (tmp_path / "data" / "train.jsonl").write_text('{"sentence1": "a b", "sentence2": "c d", "label": "x"}\n')
    for override in (f"dataset.path={tmp_path / 'data'}", "sample.n_members=-3", "sample.n_detect=0",
                     "detect.max_new_tokens=0"):
        done = subprocess.run([sys.executable, "-m", "contaminate", "+dataset=synth_nli", override,
                               f"hydra.run.dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'cache'}"],
                              capture_output=True, text=True)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (override, done.stderr)
        assert not (tmp_path / "cache" / "checkpoints").exists()


ISSUE_24 = [  # (overrides, the one line), what a new user typed that gave a traceback once
    ("contaminate.learning_rate=-1", "error: contaminate.learning_rate=-1: give a number > 0"),  # training started
    ("contaminate=lora contaminate.peft.r=0", "error: contaminate.peft.r=0: give a whole number >= 1"),  # PEFT's error
    ("seed=abc", "error: seed=abc: give a whole number >= 0"),
    ("dataset.path={tmp}/empty", "{tmp}/empty/test.jsonl holds no instances"),  # a datasets traceback
    ("dataset.path={tmp}/header", "{tmp}/header/test.csv holds no instances"),
    ("contaminate=lora contaminate.peft.lora_dropout=1.5",
     "contaminate.peft.lora_dropout=1.5: give a number in [0, 1)"),
]


def _empty_split_files(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "test.jsonl").write_text("\n")
    (tmp_path / "header").mkdir()
    (tmp_path / "header" / "test.csv").write_text("sentence1,sentence2,label\n")


# One case through the real command in the fast tier (~5 s a process: the imports), the rest in the full suite; every
# case is also refused in-process below, before any model is loaded (the split files when the pools are drawn).
@pytest.mark.parametrize("overrides, message", [pytest.param(*case, marks=[pytest.mark.slow] if i else [])
                                                for i, case in enumerate(ISSUE_24)])
def test_the_inputs_of_issue_24_through_the_real_command(tmp_path, overrides, message):
    """Exit 2, one line on stderr, nothing trained."""
    _empty_split_files(tmp_path)
    overrides, message = overrides.format(tmp=tmp_path), message.format(tmp=tmp_path)
    done = subprocess.run([sys.executable, "-m", "contaminate", "+dataset=synth_nli", *overrides.split(),
                           f"hydra.run.dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'cache'}"],
                          capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and message in lines[0], (overrides, done.stderr[-800:])
    assert not (tmp_path / "cache" / "checkpoints").exists()


@pytest.mark.parametrize("overrides, message", ISSUE_24)
def test_the_inputs_of_issue_24_in_process(compose_config, tmp_path, overrides, message):
    _empty_split_files(tmp_path)
    overrides, message = overrides.format(tmp=tmp_path), message.format(tmp=tmp_path).removeprefix("error: ")
    cfg = compose_config("contaminate", [*STUDY, *overrides.split()])
    with pytest.raises(InputError) as refused:
        check_study(cfg)
        sample_pools(cfg)  # the split files are read here
    assert str(refused.value).splitlines() == [str(refused.value)] and message in str(refused.value)


@pytest.mark.parametrize("overrides, message", [
    (["++contaminate.lora.lora_alpha=8"], "contaminate.lora is gone: an adapter is a PEFT config"),
    (["contaminate=openai", "++contaminate.peft.r=8"], "contaminate.peft.{r} is set but contaminate=openai"),
    (["contaminate=openai", "++contaminate.trainer.max_grad_norm=0.5"], "contaminate=openai trains at the API"),
])
def test_a_pass_through_block_for_another_backend_is_refused(compose_config, overrides, message):
    with pytest.raises(InputError, match=message):
        check_study(compose_config("contaminate", [*STUDY, *overrides]))


def test_no_cut_and_fractional_epochs_are_valid(compose_config):
    check_study(compose_config("contaminate", [*STUDY, "contaminate.max_length=null", "contaminate.epochs=0.5"]))


def test_a_hand_built_training_config_gets_the_labs_trainer_and_old_keys_are_named():
    from omegaconf import OmegaConf

    from contaminate.training.local import trainer_arguments

    arguments = trainer_arguments(OmegaConf.create({"backend": "full", "epochs": 1, "learning_rate": 1e-4,
                                                    "batch_size": 2, "max_length": 64}))
    assert arguments["lr_scheduler_type"] == "constant" and arguments["padding_free"] is True
    assert arguments["activation_checkpointing"] is False and arguments["report_to"] == "none"
    with pytest.raises(InputError, match="contaminate.padding_free is now contaminate.trainer.padding_free"):
        trainer_arguments(OmegaConf.create({"backend": "full", "padding_free": True}))


def test_values_against_types_and_ranges_by_hand():
    import inspect

    from detect.validate import Range, check_value

    assert [Range(1).describe(), Range(0, None, "()").describe(), Range(0, 1, "(]").describe()] == \
        [">= 1", "> 0", "in (0, 1]"]
    assert Range(0, 1, "(]").holds(1) and not Range(0, 1, "(]").holds(0) and Range(0, 1, "[)").holds(0)
    check_value(3, "a", int, Range(1))
    check_value(None, "a", int | None)
    check_value(2000, "a", inspect.Parameter.empty)  # a **settings catch-all: range only
    check_value(2, "a", float, Range(0, None, "()"))  # a whole number is a number
    for value, annotation, limits, message in [
        (True, int, None, "a=True: give a whole number"), (0.5, int, None, "a=0.5: give a whole number"),
        ("x", float, None, "a=x: give a number"), (None, float, None, "a=null: give a value"),
        (0, inspect.Parameter.empty, Range(1), "a=0: give a number >= 1"),
        (0, int | None, Range(1), "a=0: give a whole number >= 1"),
    ]:
        with pytest.raises(InputError, match=message):
            check_value(value, "a", annotation, limits)


def test_a_backend_class_must_have_every_member_of_the_protocol():
    """contaminate._target_ names any class; one that is not a TrainingBackend is refused in one line naming what it
    lacks, before anything loads. Both of the lab's backends are TrainingBackends."""
    from omegaconf import OmegaConf

    from contaminate.training import LocalFineTune, OpenAIFineTune, TrainingBackend, instantiate_backend

    assert isinstance(LocalFineTune(), TrainingBackend) and isinstance(OpenAIFineTune(), TrainingBackend)
    assert LocalFineTune().dry_run(["a text"], None) is None  # no dry run here: nothing costs money
    with pytest.raises(InputError) as refused:
        instantiate_backend(OmegaConf.create({"_target_": "collections.OrderedDict"}))
    assert str(refused.value).startswith("contaminate._target_=collections.OrderedDict is not a training backend (it "
                                         "lacks name, api, resumes, cfg, check, base_model, tokenizer, key, serving, "
                                         "dry_run, reuse, train)")
