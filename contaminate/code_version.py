"""The code version in every cache key: a digest of the source that produced a cached result, so that after a
code change it is a new result (a checkpoint is keyed by the training code, a cell by the detector code)."""

from __future__ import annotations

from pathlib import Path

from detect.models import digest

# The code that makes a cell: the detectors, and the formats' renderings of an instance that they read (not the
# data-side decontaminators, detect/decontam/: they read the stream, never a cell).
DETECTOR_CODE = sorted(path for path in (Path(__file__).parent.parent / "detect").rglob("*.py")
                       if "decontam" not in path.parent.parts) + [
    Path(__file__).parent / "regime" / name for name in ("__init__.py", "formats.py", "layouts.py", "stream.py")]
# The code that makes a checkpoint: the trainer and the leak formats. Digested by content in path order, so moving
# them (issue 24: contaminate/train.py and formats.py into training/ and regime/) keeps every checkpoint's key.
TRAINING_CODE = [Path(__file__).parent / "training" / "local.py", Path(__file__).parent / "regime" / "formats.py"]


def code_digest(files) -> str:
    return digest([Path(file).read_text() for file in sorted(map(str, files))])
