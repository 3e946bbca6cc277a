"""A shifted pool of known non-members: the same problems written differently (issue 47, item 4).

The practitioner's known non-members are rarely a uniform draw from the benchmark itself: they are problems written
after a cut-off, rewrites, another source. The recipe's and the conformal thresholds' guarantees hold by theorem
where the known non-members are exchangeable with the judged ones; fitted on a shifted pool they may not, and a
calibration that validates them only on an exchangeable pool checks the code, not the assumption. This module makes
the shift known: a deterministic rewrite of each HumanEval problem that keeps it the same problem (its canonical
solution, rewritten alike, passes its own tests: ``tests/test_shift.py``) while its text changes.

A synthetic partition (synth_*) is rewritten by its generator: each instance's drawn facts in another wording and
frame (``SYNTH_VARIANT``), the same instance written from a second template.

``sample.known_shift=rewrite`` gives a study's known non-members rewritten (``shift_pool``): what the recipe and the
conformal thresholds are fitted on, and what ReCaLL's prefix and the performance test read; the judged pools stay
as drawn. ``rename`` and ``reword`` are its two parts as arms of their own (issue 68), so that a departure can be
laid to the names or to the prose. A design that plants several datasets asks per dataset
(``sample.known_shift={humaneval:rename}``: ``shift_of``), the others' pools as drawn: the two arms are code rewrites,
which a synthetic partition has no counterpart of.

``rewrite_problem(prompt, solution, entry_point)``:

- **identifiers renamed**: every parameter and local name of the program's functions (``arg0``, ``arg1``, ...
  and ``var0``, ``var1``, ... in order of first appearance), at the positions the syntax tree gives, so attributes
  (``s.count``), keyword arguments of calls (``sorted(key=...)``), builtins, imports and the function the tests
  call are left as they are; a parameter the tests pass by keyword keeps its name;
- **the docstring reworded and reflowed**: the renamed parameters' new names where its prose names them (not
  ``a``), fixed phrase substitutions (``Return`` -> ``Give back``, ``Given`` ->
  ``For``, ``list`` -> ``sequence``, ...) in its prose, and the prose re-wrapped at 60 characters; example lines
  (``>>>``, what follows them, lines with ``==`` or ``->``) kept verbatim.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from typing import Mapping, Sequence

from detect.datasets import Example
from detect.datasets.paraphrase import paraphrase_variants, synth_source
from detect.errors import InputError

REWORDINGS = (  # whole words, in order; prose only
    ("Return", "Give back"), ("return", "give back"), ("Returns", "Gives back"), ("returns", "gives back"),
    ("Given", "For"), ("given", "supplied"), ("list", "sequence"), ("lists", "sequences"),
    ("string", "text"), ("strings", "texts"), ("numbers", "values"),
    ("function", "routine"), ("Write", "Implement"), ("Check if", "Determine whether"),
    ("check if", "determine whether"), ("You are given", "You have"), ("integer", "whole number"),
    ("integers", "whole numbers"), ("element", "item"), ("elements", "items"), ("such that", "so that"),
)
WIDTH = 60
_EXAMPLE = re.compile(r"(>>>|==|->|=>|\bprint\()")


def _bound_names(tree: ast.AST, keep: set[str]) -> tuple[list[str], list[str]]:
    """(parameters, locals) of every function in the tree, each in order of first appearance, without ``keep``."""
    params: list[str] = []
    local: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None and arg.arg not in params and arg.arg not in keep:
                    params.append(arg.arg)
            if isinstance(node, ast.Lambda):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) and inner.id not in keep:
                    if inner.id not in local and inner.id not in params:
                        local.append(inner.id)
    return params, local


def _keyword_names(test: str) -> set[str]:
    """Names the tests pass by keyword (``candidate(x=1)``): their parameters keep their names."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return set()
    return {kw.arg for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords if kw.arg}


def rename_identifiers(program: str, entry_point: str, test: str = "") -> tuple[str, dict[str, str]]:
    """``program`` with its functions' parameters and locals renamed (module docstring), and the map used."""
    tree = ast.parse(program)
    functions = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                    ast.ClassDef))}
    imported = {alias.asname or alias.name.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for alias in n.names}
    globals_ = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    declared = {name for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    keep = {entry_point} | functions | imported | globals_ | declared | set(dir(builtins)) | _keyword_names(test)
    params, local = _bound_names(tree, keep)
    mapping = {name: f"arg{i}" for i, name in enumerate(params)}
    mapping.update({name: f"var{i}" for i, name in enumerate(local)})
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(params) | set(local)
    mapping = {old: new for old, new in mapping.items() if new not in taken}  # never onto a name already used
    spots = []  # (line, column, old name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in mapping:
            spots.append((node.lineno, node.col_offset, node.id))
        elif isinstance(node, ast.arg) and node.arg in mapping:
            spots.append((node.lineno, node.col_offset, node.arg))
    lines = program.splitlines(keepends=True)
    for line, column, old in sorted(spots, reverse=True):  # right to left: earlier columns stay valid
        text = lines[line - 1]
        start = len(text.encode()[:column].decode())  # ast columns count UTF-8 bytes
        assert text[start:start + len(old)] == old
        lines[line - 1] = text[:start] + mapping[old] + text[start + len(old):]
    return "".join(lines), mapping


def reword(text: str) -> str:
    """Prose with the fixed substitutions (whole words), longest phrases first."""
    for old, new in sorted(REWORDINGS, key=lambda pair: -len(pair[0])):
        text = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w(])", new, text)
    return text


def rewrite_docstring(body: str, names: dict[str, str] | None = None) -> str:
    """A docstring's inner text (between its quotes, as in the source) reworded and reflowed: prose paragraphs
    re-wrapped at ``WIDTH`` under their indentation (the first line's text keeps its place after the quotes); example
    lines, the lines after them up to a blank line, and blank lines kept as they are."""
    lines = body.split("\n")
    indented = [re.match(r"\s*", line).group(0) for line in lines[1:] if line.strip()]
    body_indent = min(indented, key=len) if indented else "    "
    out: list[str] = []
    prose: list[tuple[int, str]] = []
    after_example = False

    def flush() -> None:
        if prose:
            first_index, first = prose[0]
            lead = re.match(r"\s*", first).group(0)
            joined = reword(" ".join(line.strip() for _, line in prose))
            for old, new in (names or {}).items():  # the renamed parameters, where the prose names them
                joined = re.sub(rf"(?<![\w.']){re.escape(old)}(?![\w(])", new, joined)
            wrapped = textwrap.wrap(joined, WIDTH, initial_indent=lead if first_index == 0 else body_indent,
                                    subsequent_indent=body_indent)
            out.extend(wrapped or [first])
            prose.clear()

    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            flush()
            out.append(line)
            after_example = False
        elif after_example or _EXAMPLE.search(stripped):
            flush()
            out.append(line)
            after_example = True
        else:
            prose.append((index, line))
    flush()
    return "\n".join(out)


def _docstring_span(program: str, entry_point: str) -> tuple[int, int] | None:
    """Character offsets of the entry function's docstring's inner text in ``program``, or None."""
    tree = ast.parse(program)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines = program.splitlines(keepends=True)
                start = sum(len(line) for line in lines[:first.lineno - 1]) + first.col_offset
                end = sum(len(line) for line in lines[:first.end_lineno - 1]) + first.end_col_offset
                literal = program[start:end]
                quote = re.match(r"[rRuU]?('''|\"\"\"|'|\")", literal)
                if quote is None or literal[:1] in "rRuU":
                    return None  # a raw or prefixed literal: left as it is
                width = len(quote.group(1))
                return start + width, end - width
    return None


def rename_in_prose(body: str, names: dict[str, str]) -> str:
    """A docstring's prose lines with the renamed parameters' new names (example lines kept): the rename arm's
    docstring, which is otherwise left word for word."""
    out = []
    for line in body.split("\n"):
        if line.strip() and not _EXAMPLE.search(line):
            for old, new in names.items():
                line = re.sub(rf"(?<![\w.']){re.escape(old)}(?![\w(])", new, line)
        out.append(line)
    return "\n".join(out)


def rewrite_problem(prompt: str, solution: str, entry_point: str, test: str = "", *,
                    shift: str = "rewrite") -> tuple[str, str]:
    """(prompt, solution) rewritten by ``shift`` (``SHIFTS``): ``rewrite``, identifiers renamed across both and the
    entry function's docstring reworded and reflowed; ``rename``, the identifiers alone (and their names in the
    docstring's prose); ``reword``, the docstring alone. The prompt still ends where the solution begins."""
    if not prompt.endswith("\n"):
        raise ValueError(f"{entry_point}: the prompt does not end with a line: the rewrite cuts it by lines")
    program = prompt + solution
    renamed, mapping = rename_identifiers(program, entry_point, test) if shift != "reword" else (program, {})
    # the parameters' new names in the prose too (not "a", an English word before it is a name)
    prose_names = {old: new for old, new in mapping.items() if new.startswith("arg") and old not in ("a", "A", "I")}
    # where the prompt ends in the renamed text: the same number of lines (renaming never adds a line), and the
    # prompt always ends with a newline
    cut_line = prompt.count("\n")
    renamed_lines = renamed.splitlines(keepends=True)
    new_prompt, new_solution = "".join(renamed_lines[:cut_line]), "".join(renamed_lines[cut_line:])
    try:
        span = _docstring_span(new_prompt + "\n    pass\n", entry_point)
    except SyntaxError:  # a prompt that does not end inside its function's body: its docstring left as it is
        span = None
    if span is not None and span[1] <= len(new_prompt):
        start, end = span
        inner = new_prompt[start:end]
        inner = rename_in_prose(inner, prose_names) if shift == "rename" else rewrite_docstring(inner, prose_names)
        new_prompt = new_prompt[:start] + inner + new_prompt[end:]
    return new_prompt, new_solution


# sample.known_shift: rewrite (both), and its two parts as separate arms (issue 68): rename (identifiers) and
# reword (the docstring's prose); a synthetic partition has its generator's rewrite alone
SHIFTS = ("rewrite", "rename", "reword")
# A synthetic partition's rewrite: paraphrase variant 4 of its generator (detect/datasets/synth.py ``render``): every
# fact in its second other wording and the second other frame, the drawn values and label kept (the same instance,
# another template)
SYNTH_VARIANT = 4
REWRITE_COLUMNS = ("prompt", "canonical_solution", "entry_point")


def shift_of(known_shift, key: str) -> str | None:
    """``sample.known_shift`` for dataset ``key``: one arm for every dataset (a string; null, as drawn), or a mapping
    dataset key -> arm, where a dataset it does not name is read as drawn."""
    if known_shift is None or isinstance(known_shift, str):
        return known_shift
    if isinstance(known_shift, Mapping):
        return known_shift.get(key)
    raise InputError(f"sample.known_shift={known_shift}: use one arm ({', '.join(SHIFTS)}) or a mapping of dataset "
                     f"keys to arms (sample.known_shift={{humaneval:rename}})")


def check_shift_keys(known_shift, drawn: Sequence[str]) -> None:
    """A mapping's keys checked against the datasets the run draws (one line: a key naming none is a typo that would
    leave every pool as drawn)."""
    if isinstance(known_shift, Mapping):
        unknown = sorted(set(known_shift) - set(drawn))
        if unknown:
            raise InputError(f"sample.known_shift names {', '.join(unknown)}, which this run does not draw; name its "
                             f"datasets ({', '.join(drawn)})")


def check_shift(shift, dataset) -> None:
    """``sample.known_shift`` checked against the dataset before any work: one line where it is unknown or the
    dataset has nothing it can rewrite."""
    if shift is None:
        return
    if shift not in SHIFTS:
        raise InputError(f"sample.known_shift={shift}: use null (the known non-members as drawn), rewrite (the "
                         f"same problems written differently), or its parts rename or reword (contaminate/shift.py)")
    synthetic = synth_source(dataset) is not None
    if rewrites_code(dataset) or (synthetic and shift == "rewrite"):
        return
    if synthetic:
        raise InputError(f"sample.known_shift={shift} renames or rewords a code problem; a synthetic partition "
                         f"({dataset.key}) is rewritten by its generator alone: use sample.known_shift=rewrite")
    raise InputError(f"sample.known_shift=rewrite rewrites code problems whose text is their prompt and canonical "
                     f"solution (HumanEval) or the lab's synthetic partitions (synth_*), and {dataset.key} is neither; "
                     f"use sample.known_shift=null")


def rewrites_code(dataset) -> bool:
    """Whether the dataset's text is a code problem's prompt and canonical solution (what ``rewrite_problem`` takes)."""
    return dataset.task == "code" and list((dataset.get("join") or {}).get(dataset.fields.text) or []) == \
        ["prompt", "canonical_solution"]


def shift_pool(dataset, split: str, pool: Sequence[Example], shift: str | None) -> list[Example]:
    """``pool`` as ``sample.known_shift`` asks (``shift_of`` this dataset's arm): as drawn (null), or each problem
    rewritten (its instance id kept)."""
    if shift is None or not pool:
        return list(pool)
    check_shift(shift, dataset)
    if not rewrites_code(dataset):  # a synthetic partition: every instance in its generator's other wording and frame
        return [variants[0] for variants in paraphrase_variants(dataset, pool, [[SYNTH_VARIANT]] * len(pool))]
    from detect.datasets import load_raw

    raw = load_raw(dataset, split)
    missing = [column for column in (*REWRITE_COLUMNS, "test") if column not in raw.column_names]
    if missing:
        raise InputError(f"sample.known_shift=rewrite needs {', '.join(missing)} of {dataset.key} {split} (its "
                         f"fields: {', '.join(raw.column_names)}); use sample.known_shift=null")
    shifted = []
    for example in pool:
        row = raw[example.instance_id]
        prompt, solution = rewrite_problem(row["prompt"], row["canonical_solution"], row["entry_point"], row["test"],
                                           shift=shift)
        shifted.append(Example(example.instance_id, prompt + solution, example.text_pair, example.label))
    return shifted
