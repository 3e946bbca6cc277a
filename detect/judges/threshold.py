"""Algorithm 2: label each guided completion exact / near-exact / none, then decide the partition.

The paper asks GPT-4 (few-shot) whether a completion is an exact or near-exact replica of the reference and
flags the partition with >= 1 exact or >= 2 near-exact matches among 10 instances. The threshold judge makes
the same call from scores, with thresholds the lab calibrates from ground truth:

- exact: the texts are equal after normalisation (case, punctuation, white space), or ROUGE-L >= exact_threshold;
- near_exact: ``score`` (ROUGE-L by default, or ``semantic``) >= near_exact_threshold;
- none otherwise.

Defaults: exact_threshold 0.95 (one token off in a 40-token piece is still an exact replay); near_exact
0.75, below the paper's own near-exact example (Table 6, ROUGE-L 0.82) and above what the clean embedded model
reaches on the synth partitions (ROUGE-L 0.05-0.38). ``calibration=<calibration.json>`` replaces both with the
thresholds ``python -m contaminate.calibrate`` chose from ground truth (for this judge's ``score``).
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from detect.errors import InputError

LABELS = ("exact", "near_exact", "none", "unparseable")  # unparseable: an LLM judge's answer that was neither
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}\u2018\u2019\u201c\u201d]")


def normalize(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


class ThresholdJudge:
    name = "threshold"

    def __init__(self, exact_threshold: float = 0.95, near_exact_threshold: float = 0.75,
                 score: str = "rouge_l", calibration: str | None = None) -> None:
        if calibration is not None:
            exact_threshold, near_exact_threshold = load_calibration(calibration, score)
        if not (0 <= exact_threshold <= 1 and 0 <= near_exact_threshold <= 1):
            raise InputError("judge thresholds must lie in [0, 1]")
        # Both thresholds are on ROUGE-L by default, and then a near-exact bar above the exact one is a typo.
        if score == "rouge_l" and near_exact_threshold > exact_threshold:
            raise InputError(f"near_exact_threshold {near_exact_threshold} is above exact_threshold {exact_threshold}")
        self.exact_threshold, self.near_exact_threshold, self.score = exact_threshold, near_exact_threshold, score
        self.calibration = None if calibration is None else str(calibration)

    def describe(self) -> dict:
        """What determines the labels (a cache key and a report line): the thresholds in force, not a path."""
        return {"name": self.name, "exact_threshold": self.exact_threshold,
                "near_exact_threshold": self.near_exact_threshold, "score": self.score,
                "calibration": self.calibration}

    def label(self, reference: str, candidate: str, scores: Mapping[str, float]) -> str:
        if normalize(reference) == normalize(candidate) or scores["rouge_l"] >= self.exact_threshold:
            return "exact"
        if scores[self.score] >= self.near_exact_threshold:
            return "near_exact"
        return "none"

    def __call__(self, rows: Sequence[Mapping]) -> list[str]:
        """Labels for rows with ``reference``, ``completion`` and the scores."""
        return [self.label(row["reference"], row["completion"], row) for row in rows]


def thresholds_line(description: Mapping) -> str:
    """A judge's ``describe()`` as a report phrase: which thresholds were in force and where they came from."""
    if "exact_threshold" not in description:
        details = ", ".join(f"{k} {v}" for k, v in description.items() if k != "name" and v not in ("", None))
        return f"judge `{description['name']}`" + (f" ({details})" if details else "")
    source = f"; from {description['calibration']}" if description.get("calibration") else ""
    return (f"judge `{description['name']}` (exact: ROUGE-L >= {description['exact_threshold']:.3f}; near-exact: "
            f"{description['score']} >= {description['near_exact_threshold']:.3f}{source})")


def load_calibration(path: str | Path, score: str) -> tuple[float, float]:
    """(exact_threshold, near_exact_threshold for ``score``) from a calibration.json."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"judge.calibration={path}: no such file; make one with "
                         f"python -m contaminate.calibrate <study or multirun folders>")
    try:
        thresholds = json.loads(path.read_text())["thresholds"]
        near = thresholds["near_exact_threshold"]
        exact = float(thresholds["exact_threshold"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise InputError(f"judge.calibration={path} is not a calibration.json (no thresholds); "
                         f"make one with python -m contaminate.calibrate") from None
    if score not in near:
        raise InputError(f"judge.calibration={path} has no near-exact threshold for score {score}; "
                         f"it has {', '.join(near)}: set judge.score to one of them")
    return exact, float(near[score])


def alg2_verdict(labels: Iterable[str], *, min_exact: int = 1, min_near_exact: int = 2) -> bool:
    """The partition rule: contaminated if >= min_exact exact or >= min_near_exact near-exact labels."""
    labels = list(labels)
    unknown = set(labels) - set(LABELS)
    if unknown:
        raise ValueError(f"unknown judge labels {sorted(unknown)}; expected {LABELS}")
    return labels.count("exact") >= min_exact or labels.count("near_exact") >= min_near_exact
