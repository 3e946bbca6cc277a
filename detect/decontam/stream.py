"""A user's training stream as documents, read lazily (a corpus of any size is read once, never held whole).

    documents = stream_documents(["corpus/", "extra.jsonl"])   # an iterator of texts, in order
    total_bytes(["corpus/"])                                    # what the progress bar counts

A ``.jsonl`` (or ``.jsonl.gz``) file is one document a line, its ``text_field`` (``text``: the field of Dolma,
The Pile, RedPajama, FineWeb); any other file is one document, read as UTF-8 text; a folder is its files, recursively,
in sorted order. What cannot be read is refused in one line naming the file (and line): a file that is not UTF-8
text, a JSONL line that is not an object with the text field. An empty file or line is no document; a stream with
none is refused before anything is written.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Callable, Iterator, Sequence

from detect.errors import InputError


def stream_files(paths: Sequence[str | Path]) -> list[Path]:
    """The files of ``paths`` (a folder: its files, recursively, sorted; hidden ones skipped), each checked to exist."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file() and not any(part.startswith(".")
                                                                                for part in p.relative_to(path).parts))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"stream {path}: no such file or folder; give text or JSONL files, or folders of them")
    if not files:
        raise InputError(f"stream {', '.join(map(str, paths)) or '(none)'}: no files; give text or JSONL files, or "
                         f"folders of them (stream=[a.jsonl,docs/])")
    return files


def total_bytes(paths: Sequence[str | Path]) -> int:
    return sum(path.stat().st_size for path in stream_files(paths))


def _is_jsonl(path: Path) -> bool:
    return path.name.endswith((".jsonl", ".jsonl.gz", ".ndjson"))


def stream_documents(paths: Sequence[str | Path], *, text_field: str = "text",
                     progress: Callable[[int], None] | None = None) -> Iterator[str]:
    """Every document of the stream in order (``progress(n)``: called with each document's size in bytes)."""
    read = 0
    for path in stream_files(paths):
        if _is_jsonl(path):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as handle:
                for number, line in enumerate(handle, start=1):
                    if progress:
                        progress(len(line))
                    if not line.strip():
                        continue
                    text = _jsonl_text(path, number, line, text_field)
                    if text.strip():
                        read += 1
                        yield text
        else:
            raw = path.read_bytes()
            if progress:
                progress(len(raw))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"stream file {path} is not UTF-8 text; give text or JSONL files (one document a "
                                 f"line, the text in {text_field!r}), or convert it first") from None
            if "\x00" in text:
                raise InputError(f"stream file {path} is binary (it holds NUL bytes), not text or JSONL; give text or "
                                 f"JSONL files, or convert it first")
            if text.strip():  # an empty file is no document
                read += 1
                yield text
    if not read:
        raise InputError(f"stream {', '.join(map(str, paths))} has no documents (empty files); give a non-empty "
                         f"corpus")


def _jsonl_text(path: Path, number: int, line: bytes, text_field: str) -> str:
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(f"stream file {path} line {number} is not JSON; a .jsonl file holds one JSON object a line "
                         f"(the text in {text_field!r})") from None
    if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
        fields = ", ".join(record) if isinstance(record, dict) else type(record).__name__
        raise InputError(f"stream file {path} line {number} has no text field {text_field!r} (it has: {fields}); "
                         f"set text_field=<field>")
    return record[text_field]
