"""Text corpora, read one way for every reader: the backgrounds contamination is diluted in
(``contaminate/regime/background.py``) and the reference corpus DC-PDD counts token frequencies in.

    read_corpus("pydoc")                         # Python's own documentation text: ships with Python, offline
    read_corpus("stdlib_docstrings")             # the standard library's docstrings, disjoint from pydoc
    read_corpus("corpus/", text_field="text")    # a .txt file, a .jsonl file with a text field, or a folder of them

``pydoc`` is ``pydoc_data.topics`` (465k characters of English prose about Python, about 116k SmolLM2 tokens), in a
fixed order (sorted topic names), so every machine reads the same documents. A folder is read in sorted order.

``stdlib_docstrings`` is the reference corpus DC-PDD counts token frequencies in by default, kept apart from the
backgrounds members are diluted in (a token's frequency must not be counted in the very text that dilutes the
members): the docstrings of 200 characters or more of the standard library's modules, classes and functions, read
from its source with ``ast`` (nothing is imported; tests, idlelib, lib2to3 and site-packages left out), with every
paragraph that also appears in ``pydoc`` removed. On CPython 3.11 about 2,200 documents, 1.2M characters (312k
SmolLM2 tokens); 2.5 s to read, once per process.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from detect.errors import InputError

PYDOC = "pydoc"
STDLIB_DOCSTRINGS = "stdlib_docstrings"
_LEFT_OUT = ("test", "tests", "idlelib", "lib2to3", "site-packages", "__pycache__")


def pydoc_texts() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[key] for key in sorted(topics)]


@functools.cache
def stdlib_docstrings(min_chars: int = 200) -> tuple[str, ...]:
    """The standard library's docstrings of ``min_chars`` or more, in sorted file order, minus the paragraphs that
    also appear in ``pydoc`` (see the module docstring)."""
    import ast
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    background = {paragraph.strip() for text in pydoc_texts() for paragraph in text.split("\n\n")}
    documents = []
    for file in sorted(root.rglob("*.py")):
        if any(part in _LEFT_OUT or part.startswith("test") for part in file.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # a file this Python cannot parse is not prose anyway
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node)
                if text and len(text) >= min_chars:
                    kept = [p for p in text.split("\n\n") if p.strip() and p.strip() not in background]
                    if kept:
                        documents.append("\n\n".join(kept))
    return tuple(documents)


def corpus_files(path: str | Path, *, key: str, fallback: str) -> list[Path]:
    """The files of a corpus path: the file itself, or a folder's .txt and .jsonl files in sorted order."""
    path = Path(path)
    files = [path] if path.is_file() else sorted([*path.rglob("*.txt"), *path.rglob("*.jsonl")]) \
        if path.is_dir() else []
    if not files:
        raise InputError(f"{key}={path}: no such file, or a folder without .txt or .jsonl files; give one, "
                         f"or {fallback}")
    return files


def read_corpus(source: str | Path, *, text_field: str = "text", key: str = "corpus",
                fallback: str = "corpus=pydoc (offline, ships with Python)") -> list[str]:
    """The documents of ``source`` (``pydoc``, a file or a folder); a bad path or line is one line naming ``key``."""
    if str(source) == PYDOC:
        return pydoc_texts()
    if str(source) == STDLIB_DOCSTRINGS:
        return list(stdlib_docstrings())
    texts = []
    for file in corpus_files(source, key=key, fallback=fallback):
        if file.suffix != ".jsonl":
            texts.append(file.read_text())
            continue
        for number, line in enumerate(file.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                texts.append(json.loads(line)[text_field])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise InputError(f"{file} line {number}: not a JSON object with a '{text_field}' field; fix the "
                                 f"line or set the corpus's text_field") from None
    return texts
