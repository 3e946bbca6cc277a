"""TS-Guessing, Testset Slot Guessing (Deng et al. 2024, "Investigating Data Contamination in Modern Benchmarks for
Large Language Models", NAACL 2024, arXiv 2311.09783), its question-based setting: hide one keyword of a test
instance behind ``[MASK]`` and ask the model to name it. A model that never saw the instance can only guess from the
rest of the sentence; one that memorised it can fill in the exact word.

Per instance, greedy (temperature 0, as the paper queries its models):

    ts_guessing = 1.0 if normalise(first word of the answer) == lower(masked word) else 0.0

the paper's exact match (EM); the summary's mean over the instances is the EM rate the paper reports per benchmark.
``normalise``: the answer's first white-space word, punctuation and quotes stripped from its ends, lower-cased (the
reproduction in LLMSanitize takes the first ``nltk`` token and lower-cases both sides).

The prompt, the question-based template as LLMSanitize (ntunlp/LLMSanitize,
``model_methods/ts_guessing_question_based.py``) reproduces the paper's Figure 2 (the authors released no code):

    Complete the sentence in one word:

    {the instance with one word replaced by [MASK]}
    Reply the answer only.

Which word (the lab's rule): the paper masks one keyword, a content word (a noun, adjective or verb: LLMSanitize tags
the instance with the Stanford POS tagger and picks one of those at random, which needs Java and is not
reproducible run to run). Here, deterministically and without a tagger: the **longest** word of the instance (its
text and, for a pair, sentence 2; a word being a run of letters) that is not an English stop word (scikit-learn's
``ENGLISH_STOP_WORDS``), ties to the first in the text. Long non-stop words are content words, mostly names and
nouns, the words a model cannot infer from the sentence around them; lab instances whose only such words are invented
names (the synth datasets) make the task close to impossible for a model that has not seen them. Where an instance has
no such word, the longest word of letters; where none, the longest white-space token.

What the model sees (the lab's choice): the instance as its leak rendered it (``Evidence.renderings``: the
rendering's context + text, so the title, split and label cues a web copy trained are there), with the keyword's
first occurrence at or after the start of the instance's text replaced by ``[MASK]``; where the rendering does not
contain the word (a format that re-encodes the text), the bare instance text is masked instead. Under the instruction
format the rendering's context is the chat prompt itself, and the whole prompt is then chat-templated again by a
model prompted through its chat template.

The paper's second setting, question-multichoice (mask one wrong option of a multiple-choice question and ask for
it), is not implemented: the lab's datasets (classification, NLI, summaries, questions without options) have no
options to mask.

Cost: one greedy completion of at most ``max_new_tokens`` tokens per instance (the answer is one word).
"""

from __future__ import annotations

import re
import string
from typing import Sequence

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, Rendering
from detect.validate import Range

PROMPT = "Complete the sentence in one word:\n\n{masked}\nReply the answer only."
MASK = "[MASK]"
_LETTERS = re.compile(r"[^\W\d_]+")  # a run of letters (any script), no digits, no underscore
_TOKEN = re.compile(r"\S+")
_ENDS = string.punctuation + "\u201c\u201d\u2018\u2019\u00ab\u00bb"  # and curly quotes


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS


def keyword(text: str) -> str:
    """The word the lab masks in ``text``: the longest run of letters that is not a stop word, ties to the first;
    else the longest run of letters; else the longest white-space token ('' for an empty text)."""
    letters = _LETTERS.findall(text)
    stop = _stop_words()
    for candidates in ([w for w in letters if w.lower() not in stop], letters, _TOKEN.findall(text)):
        if candidates:
            return max(candidates, key=len)  # max keeps the first of equal lengths
    return ""


def _whole_word(word: str) -> re.Pattern:
    """``word`` not inside a longer run of letters ("art" is not found in "party")."""
    return re.compile(rf"(?<![^\W\d_]){re.escape(word)}(?![^\W\d_])")


def mask_rendering(rendering: Rendering, example: Example) -> tuple[str, str]:
    """(the text the model sees, the masked word): the rendering (context + text) with the instance's keyword's
    first occurrence at or after the instance's text replaced by ``[MASK]``; the bare instance text masked where
    the rendering does not contain the word."""
    word = keyword(example.full_text)
    whole = rendering.context + rendering.text
    start = max(whole.find(example.text), 0)
    found = _whole_word(word).search(whole, start) or _whole_word(word).search(whole)
    if found is None:
        whole = example.full_text
        found = _whole_word(word).search(whole) or re.search(re.escape(word), whole)
    return whole[:found.start()] + MASK + whole[found.end():], word


def normalise(answer: str) -> str:
    """The answer's first white-space word, punctuation and quotes stripped from its ends, lower-cased."""
    words = answer.split()
    return words[0].strip(_ENDS).lower() if words else ""


def exact_match(answer: str, word: str) -> float:
    """1.0 if the answer's normalised first word is the masked word (case ignored), else 0.0."""
    return float(normalise(answer) == word.lower())


class TSGuessing(Detector):
    """Question-based TS-Guessing: can the model name the masked keyword of each instance as its leak rendered it?"""
    name, level, needs = "ts_guessing", "instance", ("generations",)
    scores = ("ts_guessing",)
    title = "TS-Guessing: exact match of a masked keyword (Deng et al. 2024)"
    describes = {"ts_guessing": "generations (greedy)"}

    ranges = {"max_new_tokens": Range(1, hint="tokens of the answer; one word is asked for")}

    def __init__(self, max_new_tokens: int = 16) -> None:
        self.max_new_tokens = max_new_tokens

    def prompts(self, evidence: Evidence, examples: Sequence[Example]) -> list[tuple[str, str]]:
        """(prompt, masked word) per instance."""
        masked = [mask_rendering(rendering, example)
                  for example, rendering in zip(examples, evidence.renderings(examples))]
        return [(PROMPT.format(masked=text), word) for text, word in masked]

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        prompts = self.prompts(evidence, examples)
        answers = evidence.model.generate([prompt for prompt, _ in prompts], max_new_tokens=self.max_new_tokens)
        return [{"ts_guessing": exact_match(answer, word)} for answer, (_, word) in zip(answers, prompts)]
