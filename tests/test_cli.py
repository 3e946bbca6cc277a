import subprocess
import sys

import pytest

from detect.cli import check_overrides
from detect.errors import InputError


def test_unknown_dataset_lists_the_valid_keys():
    with pytest.raises(InputError, match=r"unknown dataset 'rtee'; use one of ag_news, gsm8k, humaneval, imdb, rte, "
                                         r".*synth_nli"):
        check_overrides(["prog", "+dataset=rtee"])


def test_missing_dataset():
    with pytest.raises(InputError, match=r"no dataset chosen: add \+dataset=<key>"):
        check_overrides(["prog", "model=tiny_random"])


def test_unknown_model_and_hub_ids():
    with pytest.raises(InputError, match="unknown model 'gpt5'; use one of gemma3_270m, hub, smollm2_135m, "
                                         "tiny_random, a hub id"):
        check_overrides(["prog", "+dataset=rte", "model=gpt5"])
    argv = check_overrides(["prog", "+dataset=rte", "model=HuggingFaceTB/SmolLM2-360M-Instruct"])
    assert argv == ["prog", "+dataset=rte", "model=hub", "model.name_or_path=HuggingFaceTB/SmolLM2-360M-Instruct"]


def test_renamed_keys_name_their_successors():
    """backend= became the generation group (issue 24); the judge's model is chosen as a generation node."""
    with pytest.raises(InputError, match="now the generation group; use generation=openai generation.model="):
        check_overrides(["prog", "+dataset=rte", "backend=openai"])
    with pytest.raises(InputError, match="now the generation group"):
        check_overrides(["prog", "+dataset=rte", "backend.model=gpt-4o-mini"])
    with pytest.raises(InputError, match="choose it with generation@judge.generator=local"):
        check_overrides(["prog", "+dataset=rte", "judge=llm", "judge.generator.name=local"])


def test_sweeps_and_plain_overrides_pass():
    argv = ["prog", "-m", "+dataset=synth_nli,synth_news", "model=tiny_random", "split=train", "seed=3"]
    assert check_overrides(argv) == argv
    with pytest.raises(InputError, match="unknown dataset 'nope'"):
        check_overrides(["prog", "-m", "+dataset=synth_nli,nope"])


@pytest.mark.parametrize("args,expected", [
    (["+dataset=rtee"], "error: unknown dataset 'rtee'; use one of"),
    (["+dataset=synth_nli", "split=validation", "model=tiny_random"],
     "error: dataset synth_nli has no split 'validation': its splits are train, test"),
    (["+dataset=synth_nli", "sample.n_detect=5000", "model=tiny_random"],
     "error: asked for 5000 instances from synth_nli test, which has 1200; ask for fewer"),
])
def test_command_line_errors_are_one_line(args, expected, tmp_path):
    result = subprocess.run([sys.executable, "-m", "detect", *args, f"hydra.run.dir={tmp_path}/run"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and error_lines[0].startswith(expected)
    assert "Traceback" not in result.stderr


def test_a_peft_or_trainer_field_the_yaml_does_not_list_passes_through():
    argv = check_overrides(["prog", "+dataset=synth_nli", "contaminate=lora", "contaminate.peft.use_rslora=true",
                            "contaminate.trainer.max_grad_norm=0.5", "contaminate.rank=8", "contaminate.epochs=2"])
    assert argv[-4:] == ["++contaminate.peft.use_rslora=true", "++contaminate.trainer.max_grad_norm=0.5",
                         "++contaminate.rank=8", "contaminate.epochs=2"]
