"""pass@1 with HumanEval's own tests, each program in a guarded process of its own (contaminate/harm.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from contaminate.harm import executable_problems, pass_at_1, run_program
from detect.errors import InputError

CONF = Path(__file__).resolve().parents[1] / "conf" / "dataset"


@pytest.fixture(scope="module")
def problems():
    return executable_problems(OmegaConf.load(CONF / "humaneval.yaml"), "test")


def _canonical(index: int) -> str:
    from detect.datasets import load_raw

    return load_raw(OmegaConf.load(CONF / "humaneval.yaml"), "test")[index]["canonical_solution"]


def test_canonical_solutions_pass_and_empty_completions_fail(problems):
    """The first 12 problems: pass@1 1.0 with their canonical solutions, 0.0 with nothing after the prompt."""
    chosen = range(12)
    found = pass_at_1(problems, {i: _canonical(i) for i in chosen})
    assert found["pass_at_1"] == 1.0 and found["n"] == 12, found["results"]
    empty = pass_at_1(problems, {i: "" for i in chosen})
    assert empty["pass_at_1"] == 0.0 and all(r.startswith("failed") for r in empty["results"].values())


def test_a_completion_that_loops_writes_outside_or_exits_early_fails(problems, tmp_path):
    body = "    return 1\n"
    outside = tmp_path / "written.txt"
    assert run_program(problems[0].program("    while True:\n        pass\n"), timeout=2) == "timed out"
    result = run_program(problems[0].program(f"    open({str(outside)!r}, 'w').write('x')\n{body}"))
    assert result.startswith("failed") and "refused in the sandbox" in result and not outside.exists()
    assert run_program(problems[0].program("    import os; os.system('touch /tmp/lab-x')\n" + body)).startswith(
        "failed")
    assert run_program(problems[0].program("    import socket; socket.socket()\n" + body)).startswith("failed")
    # a program that leaves before its tests run does not pass
    assert run_program("import sys; sys.exit(0)").startswith("failed")
    assert run_program("import os; os._exit(0)").startswith("failed")
    # writing inside its own temporary folder is allowed, and the folder is gone afterwards
    assert run_program("open('scratch.txt', 'w').write('x'); assert open('scratch.txt').read() == 'x'") == "passed"
    assert not any(name.startswith("lab-exec-") and Path("/tmp", name, "scratch.txt").exists()
                   for name in os.listdir("/tmp"))


def test_pass_at_1_asked_of_a_dataset_without_tests_is_one_line(problems):
    nli = OmegaConf.load(CONF / "synth_nli.yaml")
    with pytest.raises(InputError, match=re.escape("pass@1 runs each problem's tests, and synth_nli")) as error:
        executable_problems(nli, nli.default_split)
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match=re.escape("completions for instances [999]")):
        pass_at_1(problems, {999: ""})


@pytest.mark.slow
def test_a_planted_run_reports_each_models_pass_at_1_on_each_group(compose_config, tmp_path):
    """plant.pass_at_1=true on the tiny model (HumanEval, doses 0 and 1): plant.json gives each model's pass@1 on
    each group's problems (the tiny model passes none), pass_at_1.json every completion and outcome, plant.md a
    table; a run that plants a dataset without tests is refused in one line before any work."""
    import json

    from lean import TINY_MODEL, lean

    from contaminate.run import check_config, run_config

    tiny = ["+dataset=humaneval", *TINY_MODEL, "plant=doubling", "plant.n=2", "plant.control=base",
            "sample.n_detect=2", "contaminate.max_length=640", "detect.max_new_tokens=6", "detect.semantic_model=null",
            "plant.groups=[{exposures:0},{exposures:1}]", "background=offline", "background.max_tokens=6000",
            f"cache_dir={tmp_path / 'cache'}", *lean(), "sample.n_heldout=0", "plant.pass_at_1=true"]
    run_config(compose_config("contaminate", tiny), tmp_path / "run")
    record = json.loads((tmp_path / "run" / "plant.json").read_text())
    found = record["pass_at_1"]
    assert set(found) == {"contaminated", "clean"} and set(found["contaminated"]) == {"x0", "x1"}
    assert all(block["n"] == 2 and block["pass_at_1"] == 0.0 for blocks in found.values() for block in blocks.values())
    details = json.loads((tmp_path / "run" / "pass_at_1.json").read_text())
    assert all(row["outcome"].startswith(("failed", "timed out")) for row in details["contaminated"]["x1"].values())
    assert "pass@1 of each model's greedy completion" in (tmp_path / "run" / "plant.md").read_text()
    with pytest.raises(InputError, match=re.escape("pass@1 runs each problem's tests, and synth_nli")):
        check_config(compose_config("contaminate", ["+dataset=synth_nli", *TINY_MODEL, "plant=dose_ladder",
                                                    "plant.pass_at_1=true"]))


def test_plant_pass_at_1_names_the_datasets_it_asks_of_in_one_line():
    """plant.pass_at_1: false none, true every planted dataset, a list those only (a run that also plants synth_nli,
    which has no tests); a dataset the run does not plant is one line."""
    from contaminate.planted import pass_at_1_datasets
    from detect.errors import InputError

    planted = ["humaneval", "synth_nli"]
    assert pass_at_1_datasets(False, planted) == [] and pass_at_1_datasets(True, planted) == planted
    assert pass_at_1_datasets(["humaneval"], planted) == ["humaneval"]
    with pytest.raises(InputError, match="plant.pass_at_1 names mbpp, which this run does not plant") as error:
        pass_at_1_datasets(["mbpp"], planted)
    assert "\n" not in str(error.value)


def test_a_completion_stops_generating_at_the_functions_end():
    """FunctionEnd, the generation stop of pass@1's completions: done at the first of the Codex stops, kept to it."""
    from contaminate.harm import FunctionEnd

    stop = FunctionEnd()
    assert stop.done("    return x + 1\n") is None
    assert stop.done("    return x + 1\n\ndef other():") == "end"
    assert stop.cut("    return x + 1\n\ndef other():\n    pass") == "    return x + 1\n"
