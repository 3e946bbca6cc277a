"""What a data-side decontaminator compares: a text cut into units, normalised as each source specifies.

    janitor_words("Hello, World!  x-y")   # ['hello', 'world', 'xy']: GPT-3 / lm-eval-harness (13-grams)
    alnum_chars("a b_c, 1!")              # 'abc1': GPT-4 (50-character substrings)
    TokenUnits(tokenizer)("def f():")     # the model's token ids: Llama 3 (8-grams), ConTAM (longest match)

Where the sources leave a choice, the choice is written here:

- ``words`` is lm-eval-harness's ``Janitor`` (the open implementation of GPT-3's 13-gram filter): ASCII letters
  lowercased, every ``string.punctuation`` character deleted (not replaced by a space: "x-y" is one word, "xy"),
  then split at whitespace. A line break is whitespace, so a line-wrapped copy has the same words.
- ``chars`` is GPT-4's "removing all spaces and symbols keeping only characters (including numbers)": every
  character for which ``str.isalnum`` holds is kept, case as it is (the report says nothing of case: we keep it).
- ``tokens`` are the ids of the model's own tokenizer with no special tokens (Llama 3 and ConTAM count the model's
  tokens). A line break is a token of its own: a line-wrapped copy tokenizes differently around each break.
"""

from __future__ import annotations

import string
from typing import Callable, Sequence

_JANITOR = str.maketrans(string.ascii_uppercase, string.ascii_lowercase, string.punctuation)

Units = Callable[[str], Sequence]  # a text -> its units (words, token ids); equal units compare equal


def janitor_words(text: str) -> list[str]:
    """lm-eval-harness's ``Janitor.normalize_string`` then ``str.split``: GPT-3's 13-gram units."""
    return text.translate(_JANITOR).split()


def alnum_chars(text: str) -> str:
    """GPT-4's processing: only letters and digits kept, every space and symbol dropped."""
    return "".join(character for character in text if character.isalnum())


class TokenUnits:
    """A tokenizer's ids of a text (no special tokens); ``many`` tokenizes a batch at once (a fast tokenizer's
    batch call is ~10x quicker than one call a text)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def __call__(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def many(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []


UNITS = ("words", "tokens")  # what an n-gram matcher counts in (chars: detect/decontam/substring.py)
