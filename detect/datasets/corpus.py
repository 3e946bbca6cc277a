"""Text corpora, read one way for every reader: the backgrounds contamination is diluted in
(``contaminate/regime/background.py``) and the reference corpus DC-PDD counts token frequencies in.

    read_corpus("pydoc")                         # Python's own documentation text: ships with Python, offline
    read_corpus("stdlib_docstrings")             # the standard library's docstrings, disjoint from pydoc
    read_corpus("package_docs")                  # installed packages' docstrings, disjoint from both: 1M+ tokens
    read_corpus("corpus/", text_field="text")    # a .txt file, a .jsonl file with a text field, or a folder of them

``pydoc`` is ``pydoc_data.topics`` (465k characters of English prose about Python, about 116k SmolLM2 tokens), in a
fixed order (sorted topic names), so every machine reads the same documents. A folder is read in sorted order.

``stdlib_docstrings`` is the reference corpus DC-PDD counts token frequencies in by default, kept apart from the
backgrounds members are diluted in (a token's frequency must not be counted in the very text that dilutes the
members): the docstrings of 200 characters or more of the standard library's modules, classes and functions, read
from its source with ``ast`` (nothing is imported; tests, idlelib, lib2to3 and site-packages left out), with every
paragraph that also appears in ``pydoc`` removed. On CPython 3.11 about 2,200 documents, 1.2M characters (312k
SmolLM2 tokens); 2.5 s to read, once per process.

``package_docs`` is a larger offline corpus, for dilution at realistic shares (1M+ tokens of background): the English
prose in the docstrings of the third-party packages the README's install brings (``PACKAGE_DOCS_PACKAGES``:
pyproject.toml's dependencies and omegaconf; torch and transformers left out, their 110 MB of source would take about
17 s more to parse), read from their source with ``ast`` (nothing is imported; test folders left out), packages and
files in sorted order. Docstrings are split into paragraphs at blank lines (a numpy-style section title and its
underline cut off); a paragraph is kept if it is prose: 80 characters or more, no doctest (``>>>``) line, no table or
underline line, not a reST directive, at least 70% plain words and 10% common English function words. Each paragraph is
kept once (whitespace aside: many packages repeat docstrings), and none that also appears in ``pydoc`` or
``stdlib_docstrings``, so it shares no paragraph with DC-PDD's reference corpus or the other offline background. A
document is one docstring's kept paragraphs. The text changes with the packages' versions: ``package_docs_sources()``
names the packages read and their versions (the background's ``describe()`` records them). Measured on CPython 3.11 with
this lab's install (scipy 1.17.1, scikit-learn 1.9.1, numpy 2.4.6, matplotlib 3.11.2, ...): 10,836 documents, 7.77M
characters, 1.96M SmolLM2 tokens (3.97 characters a token); 10-12 s to read on 2 CPU cores (stdlib_docstrings' 3 s
included), once per process: ``time python -c "from detect.datasets.corpus import package_docs; package_docs()"``.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from detect.errors import InputError

PYDOC = "pydoc"
STDLIB_DOCSTRINGS = "stdlib_docstrings"
PACKAGE_DOCS = "package_docs"
# import name -> distribution (for its version): the README install's packages whose docstrings package_docs reads
PACKAGE_DOCS_PACKAGES = {
    "accelerate": "accelerate", "datasets": "datasets", "gguf": "gguf", "hydra": "hydra-core",
    "matplotlib": "matplotlib", "numpy": "numpy", "omegaconf": "omegaconf", "openai": "openai", "peft": "peft",
    "rouge_score": "rouge-score", "scipy": "scipy", "sentence_transformers": "sentence-transformers",
    "sklearn": "scikit-learn", "tqdm": "tqdm", "trl": "trl",
}
_LEFT_OUT = ("test", "tests", "idlelib", "lib2to3", "site-packages", "__pycache__")


def pydoc_texts() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[key] for key in sorted(topics)]


@functools.cache
def stdlib_docstrings(min_chars: int = 200) -> tuple[str, ...]:
    """The standard library's docstrings of ``min_chars`` or more, in sorted file order, minus the paragraphs that
    also appear in ``pydoc`` (see the module docstring)."""
    import sys
    import sysconfig

    from detect.cache import stored

    root = Path(sysconfig.get_paths()["stdlib"])
    # parsing the standard library takes ~7 s on 2 cores: kept per Python build and settings (detect/cache.py)
    key = {"python": sys.version, "stdlib": str(root), "min_chars": min_chars, "left_out": _LEFT_OUT, "version": 1}
    return tuple(stored("corpora", key, lambda: _stdlib_docstrings(root, min_chars)))


def _stdlib_docstrings(root: Path, min_chars: int) -> list[str]:
    import ast

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
    return documents


def package_docs_sources() -> dict[str, str]:
    """The packages ``package_docs`` reads, installed here, with their versions (sorted by import name): what keys
    its text. A package that is not installed is left out."""
    import importlib.metadata
    import importlib.util

    sources = {}
    for name in sorted(PACKAGE_DOCS_PACKAGES):
        try:
            spec = importlib.util.find_spec(name)  # a top-level name: found, not imported
            version = importlib.metadata.version(PACKAGE_DOCS_PACKAGES[name])
        except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
            continue
        if spec is not None and spec.submodule_search_locations:
            sources[name] = version
    return sources


_TABLE_LINE = re.compile(r"\s*(\+[-=+]+\+?|\|.*\||=+(\s+=+)*|-{3,}|~{3,}|\^{3,})\s*")
_HEADING = re.compile(r"\A[^\n]*\n\s*(-{3,}|={3,}|~{3,})\s*(\n|$)")  # a numpy-style section title and its underline
_PLAIN_WORD = re.compile(r"[(\"'`]*[A-Za-z][a-z'-]*[.,;:!?)\"'`]*")
_FUNCTION_WORDS = frozenset("the a an of to is in and or for that this it be are with as if by on not which".split())


def _is_prose(paragraph: str, min_chars: int) -> bool:
    """Enough English prose to keep: long enough, no doctest, table or reST directive, mostly plain words."""
    lines = paragraph.splitlines()
    if len(paragraph) < min_chars or paragraph.startswith(".. "):
        return False
    if any(line.lstrip().startswith(">>>") or _TABLE_LINE.fullmatch(line) for line in lines):
        return False
    words = paragraph.split()
    plain = sum(bool(_PLAIN_WORD.fullmatch(word)) for word in words)
    common = sum(word.lower() in _FUNCTION_WORDS for word in words)
    return plain >= 0.7 * len(words) and common >= 0.1 * len(words)


def _normal(paragraph: str) -> str:
    return " ".join(paragraph.split())


@functools.cache
def package_docs(min_chars: int = 80) -> tuple[str, ...]:
    """The prose paragraphs of the installed packages' docstrings, each once, none in ``pydoc`` or
    ``stdlib_docstrings``, packages and files in sorted order (see the module docstring)."""
    import importlib.util
    import sys

    from detect.cache import stored

    sources = package_docs_sources()
    roots = {name: str(Path(importlib.util.find_spec(name).submodule_search_locations[0])) for name in sources}
    # parsing ~4,400 files of the packages takes ~10 s on 2 cores, in every process that reads a package_docs
    # background: kept per Python build, package versions and folders, and settings (detect/cache.py)
    key = {"python": sys.version, "packages": sources, "roots": roots, "min_chars": min_chars,
           "left_out": _LEFT_OUT, "version": 1}
    return tuple(stored("corpora", key, lambda: _package_docs(roots, min_chars)))


def _package_docs(roots: dict[str, str], min_chars: int) -> list[str]:
    import ast
    import textwrap
    import warnings

    seen = {_normal(paragraph) for texts in (pydoc_texts(), stdlib_docstrings()) for text in texts
            for paragraph in text.split("\n\n")}
    documents = []
    for name, folder in roots.items():
        root = Path(folder)
        for file in sorted(root.rglob("*.py")):
            if any(part in _LEFT_OUT or part.startswith("test") for part in file.relative_to(root).parts):
                continue
            try:
                with warnings.catch_warnings():  # a package's invalid escapes are its own affair
                    warnings.simplefilter("ignore")
                    tree = ast.parse(file.read_bytes())
            except (SyntaxError, ValueError):
                continue  # a file this Python cannot parse is not prose anyway
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                kept = []
                for paragraph in re.split(r"\n\s*\n", ast.get_docstring(node) or ""):
                    paragraph = _HEADING.sub("", textwrap.dedent(paragraph).strip(), count=1).strip()
                    if _is_prose(paragraph, min_chars) and _normal(paragraph) not in seen:
                        seen.add(_normal(paragraph))
                        kept.append(paragraph)
                if kept:
                    documents.append("\n\n".join(kept))
    return documents


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
    if str(source) == PACKAGE_DOCS:
        return list(package_docs())
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
