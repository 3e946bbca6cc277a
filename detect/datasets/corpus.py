"""Text corpora, read one way for every reader: the backgrounds contamination is diluted in
(``contaminate/regime/background.py``) and the reference corpus DC-PDD counts token frequencies in.

    read_corpus("pydoc")                         # Python's own documentation text: ships with Python, offline
    read_corpus("corpus/", text_field="text")    # a .txt file, a .jsonl file with a text field, or a folder of them

``pydoc`` is ``pydoc_data.topics`` (465k characters of English prose about Python, about 116k SmolLM2 tokens), in a
fixed order (sorted topic names), so every machine reads the same documents. A folder is read in sorted order.
"""

from __future__ import annotations

import json
from pathlib import Path

from detect.errors import InputError

PYDOC = "pydoc"


def pydoc_texts() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[key] for key in sorted(topics)]


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
