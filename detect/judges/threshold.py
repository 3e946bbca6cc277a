"""Algorithm 2: label each guided completion exact / near-exact / none, then decide the partition.

The paper asks GPT-4 (few-shot) whether a completion is an exact or near-exact replica of the reference and
flags the partition with >= 1 exact or >= 2 near-exact matches among 10 instances. The threshold judge makes
the same call from scores, with thresholds the lab calibrates from ground truth:

- exact: the texts are equal after normalisation (case, punctuation, white space), or ROUGE-L >= exact_threshold;
- near_exact: ``score`` (ROUGE-L by default, or ``semantic``) >= near_exact_threshold;
- none otherwise.

Defaults: exact_threshold 0.95 (one token off in a 40-token piece is still an exact replay); near_exact
0.75, below the paper's own near-exact example (Table 6, ROUGE-L 0.82) and above what the clean embedded model
reaches on the synth partitions (ROUGE-L 0.05-0.38). ``calibration=<card.json>`` replaces both with the
thresholds of a threshold card, which ``python -m contaminate.calibrate`` fits within contaminated models and
measures held out (``card.json``; its near-exact score must be this judge's ``score``), and the report says what the
card rests on.

``judge=threshold_best_prefix`` is a named variant, not the paper's reading: ROUGE-L is read on the best prefix of the
completion (``rouge_l_best_prefix``), so a replay followed by more text (the next instance, a label line) counts as
the replay it starts with; exact also when the normalised reference starts the normalised completion. Its scores are
never below the paper's, on known non-members too: fit its thresholds (a card) before trusting its labels.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from detect.detectors.time_travel.scores import rouge_l_best_prefix
from detect.errors import InputError
from detect.markdown import interval_text

LABELS = ("exact", "near_exact", "none", "unparseable")  # unparseable: an LLM judge's answer that was neither
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}\u2018\u2019\u201c\u201d]")


def normalize(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def exact_score(reference: str, completion: str, rouge: float) -> float:
    """What an exact label compares: 1.0 for texts equal after normalisation, else ROUGE-L."""
    return 1.0 if normalize(reference) == normalize(completion) else rouge


class ThresholdJudge:
    name = "threshold"

    def __init__(self, exact_threshold: float = 0.95, near_exact_threshold: float = 0.75,
                 score: str = "rouge_l", calibration: str | None = None) -> None:
        self.card = None
        if calibration is not None:
            self.card = load_card(calibration, score)
            exact_threshold, near_exact_threshold = self.card["exact_threshold"], self.card["near_exact_threshold"]
        if not (0 <= exact_threshold <= 1 and 0 <= near_exact_threshold <= 1):
            raise InputError("judge thresholds must lie in [0, 1]")
        # Both thresholds are on ROUGE-L by default, and then a near-exact bar above the exact one is a typo.
        if score == "rouge_l" and near_exact_threshold > exact_threshold:
            raise InputError(f"near_exact_threshold {near_exact_threshold} is above exact_threshold {exact_threshold}")
        self.exact_threshold, self.near_exact_threshold, self.score = exact_threshold, near_exact_threshold, score
        self.calibration = None if calibration is None else str(calibration)

    def describe(self) -> dict:
        """What determines the labels (a cache key and a report line): the thresholds in force, not a path."""
        found = {"name": self.name, "exact_threshold": self.exact_threshold,
                 "near_exact_threshold": self.near_exact_threshold, "score": self.score,
                 "calibration": self.calibration}
        if self.card is not None:  # what the loaded card rests on, for the report and the console
            found["card"] = card_line(self.card)
        return found

    def label(self, reference: str, candidate: str, scores: Mapping[str, float]) -> str:
        if exact_score(reference, candidate, scores["rouge_l"]) >= self.exact_threshold:
            return "exact"
        if scores[self.score] >= self.near_exact_threshold:
            return "near_exact"
        return "none"

    def __call__(self, rows: Sequence[Mapping]) -> list[str]:
        """Labels for rows with ``reference``, ``completion`` and the scores."""
        return [self.label(row["reference"], row["completion"], row) for row in rows]


def best_prefix_exact_score(reference: str, completion: str) -> float:
    """What the best-prefix variant's exact label compares: 1.0 where the normalised reference starts the normalised
    completion, else the completion's best-prefix ROUGE-L (its near-exact score too, with ``score: rouge_l``)."""
    expected = normalize(reference)
    if expected and normalize(completion).startswith(expected):
        return 1.0
    return rouge_l_best_prefix(reference, completion)


class BestPrefixJudge(ThresholdJudge):
    """The threshold judge reading each completion's best prefix (module docstring); ``score: semantic`` keeps the
    near-exact label on the whole completion's semantic score."""

    name = "threshold_best_prefix"

    def describe(self) -> dict:
        return {**super().describe(), "rouge": "best-prefix ROUGE-L"}  # what thresholds_line calls its score

    def label(self, reference: str, candidate: str, scores: Mapping[str, float]) -> str:
        # a completion the reference starts scores 1.0 and is exact at any threshold, so its near score is not read
        score = best_prefix_exact_score(reference, candidate)
        if score >= self.exact_threshold:
            return "exact"
        near = score if self.score == "rouge_l" else scores[self.score]
        return "near_exact" if near >= self.near_exact_threshold else "none"


def thresholds_line(description: Mapping) -> str:
    """A judge's ``describe()`` as a report phrase: which thresholds were in force and where they came from."""
    if description.get("line"):  # a judge that says what its thresholds rest on (judge=recipe, once fitted)
        return f"judge `{description['name']}` ({description['line']})"
    if "exact_threshold" not in description:
        details = ", ".join(f"{k} {v}" for k, v in description.items() if k != "name" and v not in ("", None))
        return f"judge `{description['name']}`" + (f" ({details})" if details else "")
    if description.get("card"):
        return f"judge `{description['name']}` with the {description['card']} (from {description['calibration']})"
    source = f"; from {description['calibration']}" if description.get("calibration") else ""
    rouge = description.get("rouge", "ROUGE-L")
    near = rouge if description["score"] == "rouge_l" else description["score"]
    return (f"judge `{description['name']}` (exact: {rouge} >= {description['exact_threshold']:.3f}; near-exact: "
            f"{near} >= {description['near_exact_threshold']:.3f}{source})")


CARD_FORMAT = "contamination-lab threshold card"  # python -m contaminate.calibrate writes it (card.json)


def load_card(path: str | Path, score: str) -> dict:
    """The threshold card at ``path`` (a card.json, or a calibration.json holding one card), checked against the run's
    near-exact score; each failure one line saying what to give instead."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"judge.calibration={path}: no such file; make a card with "
                         f"python -m contaminate.calibrate <study or multirun folders> (it writes card.json)")
    try:
        found = json.loads(path.read_text())
    except json.JSONDecodeError:
        raise InputError(f"judge.calibration={path} is not JSON; give the card.json python -m contaminate.calibrate "
                         f"wrote") from None
    if not isinstance(found, dict):
        raise InputError(f"judge.calibration={path} is not a threshold card; give a card.json")
    card = found if str(found.get("format", "")).startswith(CARD_FORMAT) else found.get("card")
    if card is None:
        cards = found.get("cards")
        if isinstance(cards, dict):
            written = [group for group, block in cards.items() if block.get("written")]
            why = "; ".join(block.get("why", "") for block in cards.values() if not block.get("written"))
            if written:
                raise InputError(f"judge.calibration={path} holds {len(written)} cards ({', '.join(written)}); give "
                                 f"one of the card_*.json files beside it")
            raise InputError(f"judge.calibration={path}: that calibration wrote no card ({why or 'no group'})")
        raise InputError(f"judge.calibration={path} is not a threshold card (a calibration from before the card "
                         f"holds thresholds pooled across models, in-sample: not loaded); run python -m "
                         f"contaminate.calibrate again and give its card.json")
    if card.get("score") != score:
        raise InputError(f"judge.calibration={path} is a card fitted on the near-exact score {card.get('score')}, and "
                         f"this run's judge.score is {score}: set judge.score={card.get('score')}, or fit a card on "
                         f"{score} (python -m contaminate.calibrate --score {score})")
    return card


def card_line(card: Mapping) -> str:
    """What a loaded card rests on, in one line (the report and the console say it beside the verdict)."""
    rests = card["rests_on"]
    held = (card.get("held_out") or {}).get("fpr") or {}
    fpr = ("-" if held.get("estimate") is None else f"{held['estimate']:.2f}" if held.get("low") is None
           else interval_text(held["estimate"], held["low"], held["high"]))
    known = "/".join(map(str, rests["known_non_members_per_model"]))
    return (f"threshold card ({rests['regime']}, {rests['dataset']}, {rests['model']}; {rests['unit']}, {known} "
            f"known non-members each): exact >= {card['exact_threshold']:.3f}, near-exact {card['score']} >= "
            f"{card['near_exact_threshold']:.3f}, rule {card['rule_text']}; held-out partition FPR {fpr} (budget "
            f"{card['budget']:g}: measured on those models, not guaranteed on another)")


def alg2_verdict(labels: Iterable[str], *, min_exact: int | None = 1, min_near_exact: int | None = 2) -> bool:
    """The partition rule: contaminated if >= min_exact exact or >= min_near_exact near-exact labels (a count set to
    None never flags)."""
    labels = list(labels)
    unknown = set(labels) - set(LABELS)
    if unknown:
        raise ValueError(f"unknown judge labels {sorted(unknown)}; expected {LABELS}")
    return (min_exact is not None and labels.count("exact") >= min_exact) or \
        (min_near_exact is not None and labels.count("near_exact") >= min_near_exact)
