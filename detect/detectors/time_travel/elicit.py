"""Teach the task, not the data: the paper's guided task built from text no benchmark holds (method section 12).

    examples = task_examples("code", 3, seed=0)                   # stdlib functions, cut as the lab cuts code
    demos = demonstrations("guided", "nli", 3, seed=0, labels=["0 (entailment)", "1 (not entailment)"])
    prompt = demos + build_prompt("guided", "nli", ...)            # few-shot: detect.elicit.shots
    overlapping(examples, benchmark_instances)                     # [] or the pairs sharing a 50-character run

Time Travel's premise is a model that answers its instruction with the second piece. A small model mostly restates the
first piece or echoes the instruction instead (follow.py). Where it cannot follow, the premise is restored without
touching the benchmark: the model is shown (``detect.elicit.shots``: few-shot demonstrations before each guided and
general prompt) the same task, in the same wording, on text that is in no benchmark: the Python standard library's
own functions (for code) and docstring sentences (for prose), read from its source with ``ast`` (nothing imported),
in a fixed order. Each demonstration is the instruction for one such text's first piece, named as what it is ("the
source split of the Python standard library dataset"), followed by its true second piece; demonstrations and query
are separated as the paper's judge separates its examples (``---``). A task with a label (classification, NLI) takes
the benchmark's own label names in turn: the label says nothing about a docstring, and the task is to copy, not to
classify. It stands in for the paper's premise and is labelled as such: where a model follows the instruction
unaided it is off (``shots: 0``, the default).

``overlapping`` is the check that the stand-in touched no benchmark text: any 50-character run (white space
collapsed, GPT-4's contamination criterion) an elicitation text shares with an instance read is a one-line refusal.
"""

from __future__ import annotations

import ast
import functools
import random
import re
import sysconfig
from pathlib import Path
from typing import Callable, Sequence

from detect.datasets import Example
from detect.detectors.time_travel.split import cut_unit, split_instance
from detect.errors import InputError

SOURCE_TITLE = "Python standard library"
SOURCE_SPLIT = "source"
SEPARATOR = "\n\n---\n\n"
# stdlib modules whose functions are read (small, stable, documented): sorted, so every machine reads the same order
MODULES = ("base64.py", "bisect.py", "calendar.py", "colorsys.py", "difflib.py", "fnmatch.py", "fractions.py",
           "ftplib.py", "gettext.py", "glob.py", "heapq.py", "ipaddress.py", "mimetypes.py", "netrc.py",
           "ntpath.py", "numbers.py", "operator.py", "optparse.py", "posixpath.py", "pprint.py", "quopri.py",
           "random.py", "sched.py", "shlex.py", "shutil.py", "statistics.py", "string.py", "textwrap.py",
           "tokenize.py", "uu.py", "zipfile.py")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# an example's id: its index in its pool plus its pool's offset (ids are integers: the cut's generator is seeded by it)
ID_OFFSETS = {"code": 1_000_000, "nli": 2_000_000, "text": 3_000_000}


@functools.cache
def stdlib_functions(min_lines: int = 6, max_lines: int = 30) -> tuple[tuple[str, str], ...]:
    """(module.function, source) of the stdlib functions in ``MODULES`` with a docstring and ``min_lines`` to
    ``max_lines`` lines, dedented, in file and line order."""
    import textwrap

    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for name in MODULES:
        path = root / name
        if not path.is_file():  # a module a Python version dropped
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
                source = ast.get_source_segment(text, node)
                lines = (source or "").count("\n") + 1
                if source and min_lines <= lines <= max_lines:
                    # get_source_segment drops the first line's indentation: put it back, then dedent the whole
                    found.append((f"{name[:-3]}.{node.name}", textwrap.dedent(" " * node.col_offset + source)))
    return tuple(found)  # files in MODULES order, functions in ast.walk's order (breadth first)


@functools.cache
def stdlib_sentences(min_words: int = 8, max_words: int = 40) -> tuple[tuple[str, ...], ...]:
    """The docstring paragraphs of ``MODULES``' functions as runs of sentences (each ``min_words`` to ``max_words``
    words, one line), a run per paragraph with two sentences or more."""
    runs = []
    for _, source in stdlib_functions(min_lines=1, max_lines=10_000):
        doc = ast.get_docstring(ast.parse(source).body[0]) or ""
        for paragraph in doc.split("\n\n"):
            sentences = [" ".join(s.split()) for s in _SENTENCE.split(paragraph.strip())]
            kept = [s for s in sentences if min_words <= len(s.split()) <= max_words and ">>>" not in s]
            if len(kept) >= 2:
                runs.append(tuple(kept))
    return tuple(runs)


def task_examples(task: str, n: int, *, seed: int = 0, labels: Sequence[str] = ()) -> list[Example]:
    """``n`` instances of ``task``'s shape from the standard library, drawn with ``seed``: code a function; NLI two
    consecutive docstring sentences (sentence 1, sentence 2); every other task a docstring's run of sentences. A task
    with a label takes ``labels`` in turn."""
    if n <= 0:
        return []
    rng = random.Random(f"elicit:{task}:{seed}")
    if task == "code":
        pool = [Example(ID_OFFSETS["code"] + i, source) for i, (_, source) in enumerate(stdlib_functions())]
    elif task == "nli":
        pool = [Example(ID_OFFSETS["nli"] + i, run[0], run[1]) for i, run in enumerate(stdlib_sentences())]
    else:
        pool = [Example(ID_OFFSETS["text"] + i, " ".join(run[:3])) for i, run in enumerate(stdlib_sentences())]
    if len(pool) < n:
        raise InputError(f"detect.elicit: the standard library gives {len(pool)} {task} examples, fewer than the "
                         f"{n} asked; lower detect.elicit.shots")
    chosen = rng.sample(pool, n)
    if labels and task in ("nli", "classification"):
        chosen = [Example(e.instance_id, e.text, e.text_pair, labels[i % len(labels)]) for i, e in enumerate(chosen)]
    return chosen


def demonstrations(instruction: str, task: str, shots: int, *, seed: int = 0, labels: Sequence[str] = (),
                   cut_low: float = 0.4, cut_high: float = 0.7, wording: str = "paper") -> str:
    """``shots`` worked examples of ``instruction`` (guided or general, in ``wording``) on stdlib text, each its prompt
    and true second piece, ending in ``SEPARATOR``: the prefix a few-shot prompt puts before the query ("" for 0
    shots)."""
    from detect.detectors.time_travel.prompts import build_prompt

    parts = []
    for example in task_examples(task, shots, seed=seed, labels=labels):
        cut = split_instance(example, seed=seed, low=cut_low, high=cut_high, unit=cut_unit(task))
        prompt = build_prompt(instruction, task, first_piece=cut.first, label=example.label,
                              dataset_name=SOURCE_TITLE, split_name=SOURCE_SPLIT, wording=wording)
        parts.append(prompt + cut.second.strip("\n") + SEPARATOR)
    return "".join(parts)


def _shingles(text: str, width: int) -> set[str]:
    flat = " ".join(text.split())
    return {flat[i:i + width] for i in range(max(len(flat) - width + 1, 0))}


def _first_hits(elicitation: Sequence[Example], benchmark: Sequence[Example],
                shingles: Callable[[str], set]) -> list[tuple[str, str]]:
    """(elicitation id, benchmark id) for every elicitation text sharing a shingle with the benchmark (its first)."""
    index: dict = {}
    for example in benchmark:
        for shingle in shingles(example.full_text):
            index.setdefault(shingle, str(example.instance_id))
    found = []
    for example in elicitation:
        hit = next((index[s] for s in shingles(example.full_text) if s in index), None)
        if hit is not None:
            found.append((str(example.instance_id), hit))
    return found


def overlapping(elicitation: Sequence[Example], benchmark: Sequence[Example], *,
                width: int = 50) -> list[tuple[str, str]]:
    """(elicitation id, benchmark id) for every pair sharing a ``width``-character run, white space collapsed."""
    return _first_hits(elicitation, benchmark, lambda text: _shingles(text, width))


def word_overlaps(elicitation: Sequence[Example], benchmark: Sequence[Example], n: int) -> list[tuple[str, str]]:
    """(elicitation id, benchmark id) for every elicitation text sharing a word ``n``-gram with the benchmark, words
    as GPT-3's decontamination reads them (lm-eval-harness's Janitor: lower case, punctuation dropped)."""
    from detect.decontam.units import janitor_words

    def grams(text: str) -> set[tuple[str, ...]]:
        words = janitor_words(text)
        return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}

    return _first_hits(elicitation, benchmark, grams)


def check_disjoint(elicitation: Sequence[Example], benchmark: Sequence[Example], where: str) -> dict:
    """One line where the elicitation text shares a 50-character run or a 13-gram (GPT-3's decontamination rule) with
    an instance the detectors read; else how close the disjoint texts came: how many share an 8-gram (Llama 3's n)."""
    shared = overlapping(elicitation, benchmark)
    if shared:
        raise InputError(f"{where}: {len(shared)} elicitation example(s) share a 50-character run with the benchmark "
                         f"(first: {shared[0][0]} with instance {shared[0][1]}); the stand-in must teach the task on "
                         f"text no benchmark holds: use another source or turn it off")
    grams = word_overlaps(elicitation, benchmark, 13)
    if grams:
        raise InputError(f"{where}: {len(grams)} elicitation example(s) share a 13-gram with the benchmark (first: "
                         f"{grams[0][0]} with instance {grams[0][1]}; GPT-3's decontamination would remove them); the "
                         f"stand-in must teach the task on text no benchmark holds: use another source or turn it off")
    return {"examples": len(elicitation), "sharing_50_characters": 0, "sharing_13_grams": 0,
            "sharing_8_grams": len(word_overlaps(elicitation, benchmark, 8))}
