"""Algorithm 2's oracle reading: the first piece inside the leak's own rendering, continued as raw text.

The paper's guided instruction asks a model to finish an instance it is told comes from a named split of a named
dataset. A model that memorised the instance but does not follow that instruction (a small base model answers
"THIRD PIECE:" or rewords) misses as surely as one that never saw it. The leak reading tells the two apart: the
document as the leak trained it (``Evidence.reader``'s rendering: title, split, field names, chat turn or JSON line),
cut at the same point as the guided prompt's instance, is given to the model as it is, with no instruction and no
chat template around it; the model's continuation is then cleaned, scored and judged exactly as a guided completion
is, against the same second piece. Only a study knows the leak's rendering, so it is an oracle reading: no
practitioner has it.

    found = locate(rendering, cut)          # LeakCut(prompt, written) or None where the rendering lacks the pieces
    found.prompt                            # the rendering up to where the second piece starts (white space out)
    found.read(raw_completion)              # the continuation as the instance's own text (a dump's JSON decoded)

The white space between the two pieces is the continuation's, not the prompt's: a BPE tokenizer writes it with the
text after it (" word" is one token; in SmolLM2's, a newline and the next line's indentation are one token, "\n   "),
so a prompt ending in a space or a newline ends inside a token the document never had. Measured on HumanEval, the
pilot's chosen setting (results/pilot_cpu): with the newline left in the prompt, 4 of the 8 members planted 16 times
got an end-of-text at once, an empty continuation.

A dump writes each instance as a JSON line, so its pieces appear JSON-escaped (quotes, newlines of code): they are
found escaped, and the continuation is read back as a JSON string body (up to its closing quote) and decoded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from detect.detectors.base import Rendering
from detect.detectors.time_travel.split import Cut

_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)  # a JSON string's characters up to its closing quote


def _json_body(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _decode_json_body(text: str) -> str:
    """The JSON string body at the start of ``text`` (up to its unescaped closing quote), decoded; as written where
    it does not decode (a raw newline, a cut escape)."""
    body = _STRING_BODY.match(text).group(0)
    try:
        return json.loads(f'"{body}"')
    except ValueError:
        return body


@dataclass(frozen=True)
class LeakCut:
    prompt: str      # the rendering up to the second piece, without the white space before it
    written: str     # the second piece as the rendering writes it (JSON-escaped in a dump)
    encoded: bool    # the pieces were found JSON-escaped: a continuation is read back as a JSON string
    gap: str = ""    # the white space between the prompt and the second piece, the continuation's to write

    def read(self, completion: str) -> str:
        """A raw continuation as the instance's own text (what clean_completion and the judge take): the gap, where
        the model wrote it as the document had it, left out."""
        if self.gap and completion.startswith(self.gap):
            completion = completion[len(self.gap):]
        return _decode_json_body(completion) if self.encoded else completion


def locate(rendering: Rendering, cut: Cut) -> LeakCut | None:
    """The leak reading's prompt for one instance: the rendering (context + text) up to where ``cut.second`` starts,
    after ``cut.first``; found as written, else JSON-escaped; None where the rendering holds neither (a paraphrase
    that leaked reworded and is read so). White space at the prompt's end goes to the continuation (``gap``)."""
    whole = rendering.context + rendering.text
    for encoded, encode in ((False, str), (True, _json_body)):
        first, second = encode(cut.first), encode(cut.second)
        start = whole.find(first)
        if start < 0 or not second:
            continue
        at = whole.find(second, start + len(first))
        if at >= 0:
            prompt = whole[:at].rstrip()
            return LeakCut(prompt, second, encoded, whole[len(prompt):at])
    return None


def holds(rendering: Rendering, text: str) -> bool:
    """Whether a rendering holds ``text`` as written or JSON-escaped (every cut of it is then found)."""
    whole = rendering.context + rendering.text
    return text in whole or _json_body(text) in whole
