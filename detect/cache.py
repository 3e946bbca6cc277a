"""The lab's cache root and its content addresses: what every cached result (converted models, API answers) is
stored under. A study keeps its checkpoints and cells under its own ``cache_dir`` (conf/contaminate.yaml).

    cache_dir()         # $CONTAMINATION_LAB_CACHE, default ~/.cache/contamination-lab
    digest(value)       # a short content address for anything JSON can write
    stored("corpora", key, compute)   # compute() once per key, kept as JSON under cache_dir()/corpora/
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
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
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
    with os.fdopen(handle, "w") as out:
        json.dump(value, out)
    os.replace(scratch, path)
    return value
