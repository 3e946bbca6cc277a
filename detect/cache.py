"""The lab's cache root and its content addresses: what every cached result (converted models, API answers) is
stored under. A study keeps its checkpoints and cells under its own ``cache_dir`` (conf/contaminate.yaml).

    cache_dir()         # $CONTAMINATION_LAB_CACHE, default ~/.cache/contamination-lab
    digest(value)       # a short content address for anything JSON can write
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("CONTAMINATION_LAB_CACHE", "~/.cache/contamination-lab")).expanduser()


def digest(value) -> str:
    """A short content address for anything JSON can write: the name of a cached result."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
