"""When a completion is done: at a length cap from the reference (the default), or at the reference's line count.

    shape = AnswerShape.of(first_piece, separator, reference, lines=False)   # from the reference's shape
    shape.done(text_so_far) -> bool;  shape.cut(text) -> str

By default (``detect.stop.lines: false``) the answer is read as generated, as the paper's judge reads it: an echoed
header ("SECOND PIECE:") and an echoed first piece removed, nothing cut, generation ended by the end token or by the
length cap below. The line stop (``detect.stop.lines=true``, a named variant; the leak reading always uses it, as it
continues a document whose next line is the leak's own ``label:``) cuts the answer at the reference's line count:

What is then scored is ``clean_completion(raw, reference, first_piece, cut_lines=True)``
(detect/detectors/time_travel/prompts.py): an echoed header and an echoed first piece removed, then as many lines as
the reference has. So generation can stop as soon as that result is fixed (``completion_is_final``): the header and
echo decisions can no longer flip and the text after them holds the reference's line count in complete lines.
Stopping there never changes a cleaned completion, a score or a verdict; it only drops what the cleaning would throw
away (a contaminated model's next ``label:`` line, a clean model's rambling), which on the default study was most of
the tokens: the clean model ran to the 256-token limit on 21 of its 40 prompts, where 30-40 tokens were ever scored.
But it hides a replay that follows a restated first piece (a function header written again, then the body), which is
why it is no longer the default (issue 45).

A second rule caps the raw completion's length at ``length_factor`` x (first piece + separator + reference)
characters + ``margin_chars`` (2x + 64 by default), for a model that writes one endless line. It can change a
score, but not a replica verdict: a near-exact candidate (ROUGE-L F1 >= 0.75 against r reference words) has at
most 2r/0.75 - r = 1.67r words, and the cap leaves room for an echoed first piece, a header and about twice the
reference. Rows record why they stopped (``stop``: eos, lines, length or max_new_tokens).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from detect.detectors.time_travel.prompts import ECHOED_HEADER

_HEADER_WORDS = ("second piece", "sentence 2")  # ECHOED_HEADER's keywords, lower case
_LEADING = re.compile(r"^[*#\s]*")
_TRAILING = re.compile(r"\s*[*]*\s*")


def _header_settled(text: str) -> tuple[bool, int]:
    """(whether ECHOED_HEADER's match on ``text``, or its absence, holds for every continuation, where the text
    after the header starts)."""
    match = ECHOED_HEADER.match(text)
    if match:  # settled once something the header's trailing white space / '*' cannot take follows it
        return match.end() < len(text), match.end()
    rest = _LEADING.sub("", text, count=1).lower()
    for word in _HEADER_WORDS:
        if word.startswith(rest) or (rest.startswith(word) and _TRAILING.fullmatch(rest[len(word):])):
            return False, 0  # it can still grow into a header
    return True, 0


def completion_is_final(text: str, reference: str, first_piece: str = "") -> bool:
    """True when ``clean_completion(text + anything, reference, first_piece)`` equals
    ``clean_completion(text, ...)`` for every continuation (tests/test_stopping.py checks it on random ones)."""
    settled, start = _header_settled(text)
    if not settled:
        return False
    rest = text[start:].lstrip()
    echo, words = " ".join(first_piece.split()), " ".join(rest.split())
    if echo:
        if len(words) <= len(echo):
            if echo.startswith(words):
                return False  # it may still turn out to be the echoed first piece
        elif words.startswith(echo + " "):  # an echo: cleaning removes its words, then a header after them
            rest = re.sub(rf"^\s*(?:\S+\s+){{{len(echo.split()) - 1}}}\S+", "", rest)
            settled, start = _header_settled(rest)
            if not settled:
                return False
            rest = rest[start:].lstrip()
    return rest.count("\n") >= reference.strip().count("\n") + 1


@dataclass(frozen=True)
class AnswerShape:
    """The shape of the answer one prompt asks for: the reference it will be scored against, the first piece a
    model may echo, and the longest raw completion kept."""

    reference: str
    first_piece: str = ""
    max_chars: int | None = None
    lines: bool = True  # stop at the reference's line count (the line-stop variant); False: at the length cap only
    end: str | None = None  # the answer ends where the model writes this (few-shot: the demonstrations' separator)

    @classmethod
    def of(cls, first_piece: str, separator: str, reference: str, *, length_factor: float | None = 2.0,
           margin_chars: int = 64, lines: bool = True, end: str | None = None) -> "AnswerShape":
        whole = len(first_piece) + len(separator) + len(reference)
        max_chars = None if length_factor is None else int(length_factor * whole) + margin_chars
        return cls(reference, first_piece, max_chars, lines, end)

    def done(self, text: str) -> str | None:
        """Why generation can stop here ("end", "lines" or "length"), or None."""
        if self.end and self.end in text:
            return "end"
        if self.max_chars is not None and len(text) >= self.max_chars:
            return "length"
        return "lines" if self.lines and completion_is_final(text, self.reference, self.first_piece) else None

    def cut(self, text: str) -> str:
        """The raw completion as kept: up to ``end`` where written, at most ``max_chars`` characters, wherever the
        tokens ended."""
        if self.end and self.end in text:
            text = text[: text.index(self.end)]
        return text if self.max_chars is None else text[: self.max_chars]
