"""CDD, Contamination Detection via output Distribution (Dong et al. 2024, "Generalization or Memorization: Data
Contamination and Trustworthy Evaluation for Large Language Models", ACL 2024, arXiv 2402.15938; official code
YihongDong/CDD-TED4LLMs, ``CDD.py``): a model that memorised an instance keeps producing (nearly) the same output when
sampled, so its output distribution on that instance is peaked around the greedy output.

For each instance, with ``s_0`` the greedy output and ``s_1 .. s_n`` outputs sampled at temperature ``tau``, ``ED`` the
edit distance between token sequences (Levenshtein: insertions, deletions, substitutions of whole tokens) and
``l = max(len(s_0), len(s_1), ..., len(s_n))`` the longest output in tokens:

    rho(d) = (1/n) * #{i : ED(s_i, s_0) = d}            the edit-distance distribution
    Peak   = sum_{d = 0}^{alpha * l} rho(d) = (1/n) * #{i : ED(s_i, s_0) <= alpha * l}

and the instance is called contaminated when Peak > xi. The score written on each instance's guided row is
``cdd`` = Peak, in [0, 1] (higher = more peaked = more likely a member); the summary keeps its mean and, as
``flagged_share``, the share of instances with Peak > xi (the official code's "Contamination Ratio").

Defaults and their source:

- ``temperature`` 0.8 and ``alpha`` 0.05, ``xi`` 0.01: the paper's settings and the official code's defaults
  (``--alpha 0.05``, ``--xi 0.01``; the sampling client's ``--temperature 0.8 --top_p 1``).
- ``n_samples`` 20 here; the paper draws 50 (``--num 50``). 20 keeps a CPU run affordable (each instance costs
  1 greedy + n sampled completions); Peak then moves in steps of 1/20. Set 50 for the paper's setting.
- ``max_tokens`` 100: the official code compares only the first 100 tokens of every output
  (``tokenize_code(..., length=100)``); the paper does not say so.
- ``max_new_tokens`` 64: the lab's second pieces are one or two sentences (the paper's code generation ran 512).

The prompt (the lab's choice; the paper prompts with the benchmark's own input, a code problem): the instance as its
leak rendered it (``Evidence.renderings``: the rendering's context + text), cut where Time Travel's first piece ends
(method section 4: ``split_instance(example, seed=evidence.seed).first``, code at a line), found in the rendering's
text; where it is not found there, the text up to the end of the first half of its words). The model is asked to
continue the leak, as it was trained, so a memorised member's continuation is the rest of its training document.
The prompt goes through the model's prompt format as every generation does (raw in a study of the document and dump
formats).

Tokens: the model's own tokenizer where it has one (``LanguageModel.tokenizer``, no special tokens), as the official
code encodes with the evaluated model's tokenizer; a server without one is compared word by word (white space).

Where the official code differs from the paper: it truncates every output to its first 100 tokens before the edit
distance (so ``l`` <= 100); it first cuts each output at a triple newline or a code fence (``strip_code``: code
generation only; here outputs are only stripped of surrounding white space); its Llama tokenizers add a start token to
every output (+1 to ``l``, nothing to a distance; left out here); and its "real world" mode sets alpha = 0 and
xi = 0.2 "to enhance the detection precision". ``rho`` and Peak are as the paper writes them: ``<=`` alpha * l,
inclusive.

Cost: per instance one greedy completion and ``n_samples`` sampled ones of up to ``max_new_tokens`` tokens.
"""

from __future__ import annotations

import re
from typing import Sequence

from detect.datasets import Example
from detect.detectors.base import Detector, Evidence, Rendering
from detect.detectors.time_travel.split import cut_unit, split_instance
from detect.validate import Range

_WORD = re.compile(r"\S+")


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance between two sequences (of tokens): the fewest insertions, deletions and substitutions
    of single elements that turn one into the other."""
    if len(a) > len(b):
        a, b = b, a
    previous = list(range(len(a) + 1))
    for j, element in enumerate(b, 1):
        current = [j]
        for i, other in enumerate(a, 1):
            current.append(previous[i - 1] if element == other else 1 + min(previous[i - 1], previous[i], current[-1]))
        previous = current
    return previous[-1]


def peakedness(greedy: Sequence, samples: Sequence[Sequence], alpha: float = 0.05) -> float:
    """Peak: the share of ``samples`` within edit distance ``alpha * l`` of ``greedy`` (inclusive), ``l`` the
    longest of all the outputs (the greedy one included), every output a sequence of tokens."""
    if not samples:
        return 0.0
    longest = max(len(greedy), *(len(sample) for sample in samples))
    return sum(edit_distance(greedy, sample) <= alpha * longest for sample in samples) / len(samples)


def cdd_prompt(rendering: Rendering, first_piece: str) -> str:
    """The rendering's context and its text up to the end of ``first_piece`` in it; where the first piece is not in
    the text, up to the end of the first half of the text's words (at least one word)."""
    context, text = rendering
    at = text.find(first_piece) if first_piece else -1
    if at >= 0:
        return context + text[:at + len(first_piece)]
    words = list(_WORD.finditer(text))
    return context + (text[:words[max(1, len(words) // 2) - 1].end()] if words else text)


class CDD(Detector):
    """The peakedness of each instance's sampled continuations around its greedy continuation."""
    name, level, needs = "cdd", "instance", ("generations",)
    scores = ("cdd",)
    title = "CDD: peakedness of sampled outputs (Dong et al. 2024)"
    describes = {"cdd": "generations (greedy + sampled)"}

    ranges = {"n_samples": Range(1, hint="sampled outputs per instance; the paper: 50"),
              "temperature": Range(0, None, "()", hint="the paper samples at 0.8"),
              "alpha": Range(0, 1, hint="edit distance allowed, a share of the longest output; the paper: 0.05"),
              "xi": Range(0, 1, hint="the Peak above which an instance is flagged; the paper: 0.01"),
              "max_new_tokens": Range(1, hint="tokens per output"),
              "max_tokens": Range(1, hint="tokens of each output compared; the official code: 100")}

    def __init__(self, n_samples: int = 20, temperature: float = 0.8, alpha: float = 0.05, xi: float = 0.01,
                 max_new_tokens: int = 64, max_tokens: int | None = 100) -> None:
        self.n_samples, self.temperature, self.alpha, self.xi = n_samples, temperature, alpha, xi
        self.max_new_tokens, self.max_tokens = max_new_tokens, max_tokens

    def skipped(self, evidence: Evidence) -> str | None:
        return getattr(evidence.model, "no_sampling", None) or super().skipped(evidence)

    def prompts(self, evidence: Evidence, examples: Sequence[Example]) -> list[str]:
        unit = cut_unit(evidence.dataset.task)  # code at line boundaries
        return [cdd_prompt(rendering, split_instance(example, seed=evidence.seed, unit=unit).first)
                for example, rendering in zip(examples, evidence.renderings(examples))]

    def tokens(self, model, text: str) -> list:
        """The output as the sequence its edit distance counts: the model's tokens, else its words."""
        text = text.strip()
        tokenizer = getattr(model, "tokenizer", None)
        found = tokenizer(text, add_special_tokens=False).input_ids if tokenizer is not None else text.split()
        return list(found[:self.max_tokens] if self.max_tokens else found)

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        model = evidence.model
        prompts = self.prompts(evidence, examples)
        greedy = model.generate(prompts, max_new_tokens=self.max_new_tokens)
        sampled = model.sample(prompts, self.n_samples, temperature=self.temperature,
                               max_new_tokens=self.max_new_tokens, seed=evidence.seed)
        return [{"cdd": peakedness(self.tokens(model, g), [self.tokens(model, s) for s in samples], self.alpha)}
                for g, samples in zip(greedy, sampled)]

    def summarize(self, guided: Sequence[dict], others: dict[str, Sequence[dict]], partition: dict[str, dict],
                  seed: int) -> dict:
        """The mean Peak, and the share of instances the paper's rule flags (Peak > xi)."""
        found = super().summarize(guided, others, partition, seed)
        if found:
            found[self.name]["flagged_share"] = float(sum(row["cdd"] > self.xi for row in guided) / len(guided))
        return found
