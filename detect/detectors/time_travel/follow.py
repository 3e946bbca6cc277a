"""Did the model follow the instruction? Each generated answer gets a class, and a model its follow rate.

    classify(raw, prompt=..., first_piece=..., title=..., split=...) -> "continuation" | "empty" | ...
    answer_classes(rows) -> {"n": 10, "classes": {"continuation": 4, ...}, "follow_rate": 0.4}
    follow_block(rows, on="known non-members", bar=0.5) -> {"rate": 0.4, "n": 100, "on": ..., "informative": False}

The paper's premise is a model that answers its instruction with a second piece. A 135M model mostly does not: on
the profile's HumanEval runs half the guided answers restated the function header, 6-27% echoed the instruction;
on synth_nli 44-71% copied sentence 1 and nothing else (issue 45). A guided completion that replicates nothing then
says nothing about membership, and a verdict read from it is "uninformative", never "clean". The classes, decided
in this order on the raw answer (an echoed "SECOND PIECE:" header first stripped):

- ``empty``: nothing left.
- ``restatement``: the answer is the first piece again: all of it and nothing after (sentence 1 copied), a first
  line that is a near copy of it, or its first line again or a variant of it (``restates``): a restated function
  header, a docstring rewritten from its start, sentence 1 reworded. The whole first piece echoed and then more text
  is classified by that text, as the cleaning drops the echo before the judge reads it.
- ``instruction_echo``: the answer's first line is the prompt's own wording (half or more of its 4-word runs, or
  all of a shorter line's words in order, are in the prompt's instruction text, the first piece left out): "You are
  provided with the FIRST PIECE ...", "FIRST PIECE:", "INSTRUCTION:".
- ``metadata_echo``: the first line is the leak's metadata, not the instance: a ``label:`` / ``task_id:`` line, or a
  line that opens with the dataset's title followed by "dataset" or names its split ("HumanEval dataset, test
  split").
- ``continuation``: anything else: an attempt at the second piece, right or wrong.

Decided on the first line only: what the answer opens with is what a reader of the paper's judge would take as the
answer; a continuation that later drifts into a label line is a continuation. The follow rate is the share of
continuations; the ``bar`` (``detect.follow.min_rate``, 0.5: "mostly does not follow") makes a verdict uninformative.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import Sequence

from detect.detectors.time_travel.prompts import strip_echoed_header
from detect.detectors.time_travel.scores import lcs_length as _lcs

CLASSES = ("continuation", "empty", "restatement", "instruction_echo", "metadata_echo")
FOLLOWED = "continuation"
_WORD = re.compile(r"\w+")
_METADATA_FIELD = re.compile(r"^\W*(label|task_id|task id|split)\s*:", re.IGNORECASE)
_RUN = 4  # words in a run compared with the instruction


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _runs(words: Sequence[str], n: int = _RUN) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _contains(whole: Sequence[str], part: Sequence[str]) -> bool:
    """Whether ``part`` occurs as a contiguous run of ``whole``."""
    n = len(part)
    return any(list(whole[i:i + n]) == list(part) for i in range(len(whole) - n + 1))


def _similarity(a: str, b: str) -> float:
    """difflib's ratio of two lines (white space at their ends left out, the first 200 characters read)."""
    return difflib.SequenceMatcher(None, a.strip()[:200], b.strip()[:200], autojunk=False).ratio()


def restates(line: str, first_piece: str, reference: str = "") -> bool:
    """The line restates the first piece rather than going on from it, in one of two ways, each only where the line
    is closer to the first piece than to the true second piece (a replay that shares the first piece's words, as an
    NLI pair's sentence 2 does, is no restatement):

    - a near copy of the whole first piece: 80% or more of the line's words (3 at least, the first 40 read) are the
      first piece's in order, and they cover 80% of it (a shorter sentence built from some of its facts, an entailed
      sentence 2, is an answer);
    - the first piece's first line again, or a variant of it (difflib ratio >= 0.7: 0.75 for ``def
      triangle_perimeter(a, b):`` against ``def triangle_area(a, h):``, 0.84 for sentence 1 reworded with "The new
      employee," before it; 0.59 for an entailed half of sentence 1), or a block header opening with the same word
      as the first piece's (another ``def`` where the first piece opened with one): the instance started over."""
    words, piece, second = _words(line)[:40], _words(first_piece), _words(reference)
    if not piece or len(words) < min(3, len(piece)):
        return False
    common = _lcs(words, piece)
    in_piece = common / len(words)
    if in_piece >= 0.8 and common >= 0.8 * len(piece) and in_piece > (
            _lcs(words, second) / len(words) if second else 0.0):
        return True
    opening = _first_line(first_piece)
    if _is_header(line) and _is_header(opening) and _words(line)[:1] == _words(opening)[:1] and not (
            reference and _words(_first_line(reference))[:1] == _words(line)[:1]):
        return True  # a block header opened as the first piece opens (``def add_three(x, y, z):`` for ``def add``)
    again = _similarity(line, opening)
    return again >= 0.7 and again > (_similarity(line, _first_line(reference)) if reference else 0.0)


def _is_header(line: str) -> bool:
    """A code block's header: a line ending in ":" after its last bracket (``def f(x: int) -> str:``)."""
    return line.rstrip().endswith(":") and len(_words(line)) >= 2


def _drop_words(text: str, k: int) -> str:
    """``text`` after its first ``k`` words (as ``_WORD`` counts them), layout of the rest kept."""
    matches = list(_WORD.finditer(text))
    return text[matches[k - 1].end():] if k and len(matches) >= k else text


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if _WORD.search(line)), "")


def is_instruction_echo(line: str, instruction: str) -> bool:
    """The line is the prompt's own wording: half or more of its 4-word runs are in ``instruction``; a line of fewer
    than 4 words (2 at least: "FIRST PIECE:") counts when its words occur in that order in the instruction."""
    words, said = _words(line), _words(instruction)
    if len(words) < 2 or not said:
        return False
    if len(words) < _RUN:
        return _contains(said, words)
    runs = [tuple(words[i:i + _RUN]) for i in range(len(words) - _RUN + 1)]
    known = _runs(said)
    return 2 * sum(run in known for run in runs) >= len(runs)


def is_metadata_echo(line: str, title: str = "", split: str = "") -> bool:
    """The line is the leak's metadata: a label / task id / split field, or the dataset's title as a heading."""
    if _METADATA_FIELD.match(line):
        return True
    words = _words(line)
    title_words = _words(title)
    if title_words and words[:len(title_words) + 1] == [*title_words, "dataset"]:
        return True
    return bool(split) and _contains(words, [*_words(split), "split"]) and len(words) <= len(title_words) + 6


def classify(raw: str | None, *, prompt: str = "", first_piece: str = "", reference: str = "", title: str = "",
             split: str = "") -> str:
    """The class of one generated answer (module docstring): ``raw`` as generated (a leak reading's: as read back),
    ``prompt`` the instruction it answered (the first piece is left out of it when echoes are looked for),
    ``reference`` the true second piece where known (it keeps a replay that shares the first piece's words from being
    read as a restatement)."""
    text = strip_echoed_header(raw or "")
    if not _WORD.search(text):
        return "empty"
    piece = _words(first_piece)
    if piece and _words(text)[:len(piece)] == piece:  # the whole first piece echoed: the cleaning drops it
        text = strip_echoed_header(_drop_words(text, len(piece)))
        if not _WORD.search(text):
            return "restatement"
    line = _first_line(text)
    if is_metadata_echo(line, title, split):
        return "metadata_echo"
    if is_instruction_echo(line, prompt.replace(first_piece, " ") if first_piece else prompt):
        return "instruction_echo"
    if first_piece and restates(line, first_piece, reference):
        return "restatement"
    return FOLLOWED


def classify_row(row: dict, title: str = "") -> str:
    """The class of a Time Travel row's answer (guided, general or leak: ``detect.pipeline``'s rows). A leak reading
    has no instruction: its prompt is the leak's own rendering, so only its metadata, not its wording, is an echo."""
    prompt = "" if row.get("instruction") == "leak" else row.get("prompt") or ""
    return classify(row.get("raw_completion"), prompt=prompt, first_piece=row.get("first_piece") or "",
                    reference=row.get("reference") or "", title=title, split=row.get("split") or "")


def answer_classes(rows: Sequence[dict]) -> dict:
    """How a set of answers (rows with ``answer_class``) split by class, and their follow rate (None: no answer)."""
    found = Counter(row["answer_class"] for row in rows if row.get("answer_class"))
    n = sum(found.values())
    return {"n": n, "classes": {name: found.get(name, 0) for name in CLASSES},
            "follow_rate": found.get(FOLLOWED, 0) / n if n else None}


def follow_block(rows: Sequence[dict], *, on: str, bar: float) -> dict | None:
    """A model's follow rate on ``rows`` (its guided answers; ``on`` says which: its known non-members, or the
    partition judged where none are known) against ``bar``: below it, a verdict from those answers is
    uninformative. None where no answer was generated."""
    counted = answer_classes(rows)
    if not counted["n"]:
        return None
    return {"rate": counted["follow_rate"], "n": counted["n"], "on": on, "bar": bar,
            "informative": counted["follow_rate"] >= bar}


def follow_text(follow: dict | None) -> str:
    """"follow 0.12 of 100 known non-members" (the reports' wording)."""
    if not follow:
        return ""
    return f"follow {follow['rate']:.2f} of {follow['n']} {follow['on']}"


def formats_text(follow: dict | None) -> str:
    """"asked chat (follow: chat 0.29, raw 0.10 of 50 known non-members)": the prompt format a model's instructions
    were asked in and each format's follow rate, where it was chosen (a study's ``follow`` block); "" where not.
    Asked with worked examples (the block's ``shots``, detect.elicit.shots), it says how many: "asked raw after 1
    worked example on standard-library text (...)"."""
    if not follow or not follow.get("prompt_format"):
        return ""
    rates = [f"{name} {r['rate']:.2f}" for name, r in (follow.get("by_format") or {}).items()
             if r.get("rate") is not None]
    return (f"asked {follow['prompt_format']}{shots_text(follow)}"
            + (f" (follow: {', '.join(rates)} of {follow['n']} {follow['on']})" if rates else ""))


def shots_text(follow: dict | None) -> str:
    """" after 1 worked example on standard-library text" where a model's prompts had worked examples (a study's
    ``follow`` block's ``shots``, detect.elicit.shots); "" for the paper's zero-shot prompts, or a block from before
    shots were recorded."""
    shots = (follow or {}).get("shots") or 0
    return f" after {shots} worked example{'s' * (shots > 1)} on standard-library text" if shots else ""


UNINFORMATIVE = "uninformative: the instruction was not followed"
