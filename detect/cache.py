"""The lab's cache root and its content addresses: what every cached result (converted models, API answers) is
stored under. A study keeps its checkpoints and cells under its own ``cache_dir`` (conf/contaminate.yaml).

    cache_dir()         # $CONTAMINATION_LAB_CACHE, default ~/.cache/contamination-lab
    digest(value)       # a short content address for anything JSON can write
    stored("corpora", key, compute)   # compute() once per key, kept as JSON under cache_dir()/corpora/
    write_atomically(path, write)     # write(scratch) then renamed onto path: never half a file
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable


def cache_dir() -> Path:
    return Path(os.environ.get("CONTAMINATION_LAB_CACHE", "~/.cache/contamination-lab")).expanduser()


def digest(value) -> str:
    """A short content address for anything JSON can write: the name of a cached result."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def stored(kind: str, key, compute: Callable[[], Any]) -> Any:
    """``compute()``'s JSON value, computed once per ``key`` and kept as ``cache_dir()/<kind>/<digest(key)>.json``
    (written to a temporary sibling and renamed, so a killed or concurrent run never leaves half a file). For
    derived data that costs seconds each process: the standard library's docstrings (7 s of parsing), a corpus's
    token counts under a vocabulary (6 s of tokenizing)."""
    path = cache_dir() / kind / f"{digest(key)}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:  # a file damaged by hand or a full disk: computed again, written again
            pass
    value = compute()
    write_atomically(path, lambda scratch: scratch.write_text(json.dumps(value)))
    return value


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write(scratch)`` to a sibling of ``path`` named for this process and a random suffix, then renamed onto
    ``path``: a killed run never leaves half a file, and two runs writing one file at once (two studies reading the
    same cell) each write their own scratch file and the last rename wins, the contents being the same (one shared
    scratch name let the second's rename find the first had taken it: tests/test_faults.py). The scratch file is
    opened as any file is, so it keeps the umask's mode (``tempfile.mkstemp`` makes files 0600: a cache shared
    between users could not read them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.stem}-{os.getpid()}-{uuid.uuid4().hex}.partial")
    try:
        write(scratch)
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)  # a write that failed leaves no scratch behind (after the rename: gone)
