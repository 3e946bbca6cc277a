"""The Data Contamination Quiz (Golchin & Surdeanu 2024, "Data Contamination Quiz: A Tool to Detect and Estimate
Contamination in Large Language Models", TACL 2025; code: github.com/shahriargolchin/DCQ): instance level, from the
model's log-probabilities of the option letters.

Each instance becomes one multiple-choice question: which option is EXACTLY the instance from this split of this
dataset? The options are the verbatim instance and ``n_paraphrases`` (default 3, the paper's three) paraphrases of
it with the same facts and label (``detect/datasets/paraphrase.py``), lettered A, B, ..., then "None of the provided
options" (``none_option``, the paper's option E). Only the exact wording tells the options apart, so a model that
saw the instance tends to pick it. Every option is rendered as the leak rendered its instance (``Evidence.renderings``:
title, split, fields and label for the web copy; a dump's JSON line), so the quiz asks about the text the model
would have seen; where the paraphrases leave that text unchanged (an instruction leak trains the answer only), the
options are the whole rendering, prompt included.

    quiz = DataContaminationQuiz(n_paraphrases=3)
    rows = quiz.score(evidence, examples)    # [{"dcq": 1.0 or 0.0, "dcq_margin": ...}, ...]

- The prompt (``QUIZ_PROMPT``) is the lab's wording of the paper's quiz prompt (its official code's
  ``quiz_question.py``: the task, two rules, the hint that only one option has the exact wording, the lettered options,
  "None of the provided options" last), ending in ``Answer:``.
- The model's answer is the option letter with the highest log-probability as the continuation of the prompt
  (``" A"``, ``" B"``, ...: ``LanguageModel.choice_logprobs``), not a parsed generation: a small or
  contaminated model asked to generate often writes no letter at all (it starts an option's text, a chat preamble,
  a repeat of the prompt), and lm-evaluation-harness scores multiple choice the same way. The choice is then always
  one of the allowed answers, deterministic, and comes with a margin.
- ``dcq``: 1.0 if the model picks the verbatim instance, else 0.0; ``dcq_margin``: the verbatim letter's
  log-probability minus the best other letter's (positive exactly when it is picked; a graded score for ROC curves).
  Both higher = more likely a member. The mean of ``dcq`` over a partition is the quiz's contamination estimate.
- Position bias: the paper first runs a Bias Detector Quiz (only the perturbations as options) to find the letters the
  model picks less often than chance, then Bias Compensator Quizzes with the original at each of those positions, and
  reports the best one's accuracy, corrected by a kappa-like ``(hits - bias) / (n - bias)`` for that position's own
  picks, as a range. The lab instead puts the verbatim at a position drawn per instance (seeded by the run seed and the
  instance id, uniform over the lettered positions), so a model that always prefers one letter is right at the chance
  rate, 1 / (n_paraphrases + 1), on members and non-members alike: the bias cannot separate them, and the comparison
  that matters (members vs non-members, contaminated vs clean) needs no correction. A raw partition mean should be
  read against that chance rate.
- Paraphrases: the lab's synthetic partitions are paraphrased exactly (same drawn values, other wordings); any other
  dataset needs ``rewriter`` (a hub id or model folder that rewrites each instance greedily; the paper used GPT-4 with
  word-level synonym perturbations), and without one the detector is skipped with that one line.

Cost: one pass over each quiz prompt (about five renderings long) where every letter is one token after it
(``LanguageModel.choice_logprobs``: the letters' log-probabilities from the next-token distribution at its last
position); otherwise (n_paraphrases + 2) scored texts per instance. Measured: ``bench/detector_costs.py``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from detect.datasets import Example
from detect.datasets.paraphrase import no_rewriter, paraphrases, synth_source
from detect.detectors.base import Detector, Evidence
from detect.validate import Range

LETTERS = "ABCDEFGH"
NONE_OPTION = "None of the provided options."
SETTING = "detect.detectors.dcq.rewriter"  # what a run without paraphrases is told to set

QUIZ_PROMPT = (
    "You are given a {count}-choice quiz. Choose the option that is EXACTLY an instance from the {split} split of "
    "the {title} dataset.\n\n"
    "Rules:\n"
    "(1) Answer with a single option letter only.\n"
    "(2) If you do not know the dataset or the answer, choose option {none}.\n\n"
    "Hint: all the options mean the same thing, but ONLY one of them has the EXACT WORDING of the original "
    "instance.\n---\n{options}\n---\nAnswer:"
)


class DataContaminationQuiz(Detector):
    """One multiple-choice quiz per instance: the verbatim rendering among paraphrases of it."""
    name, level, needs = "dcq", "instance", ("logits",)
    scores = ("dcq", "dcq_margin")
    title = "Data Contamination Quiz"
    describes = {"dcq": "logits of the option letters (paraphrases: synthetic partitions, or a rewriter model)"}

    ranges = {"n_paraphrases": Range(1, 4, "[]", hint="paraphrased options beside the verbatim one; the paper used 3")}

    def __init__(self, n_paraphrases: int = 3, none_option: bool = True, rewriter: str | None = None) -> None:
        self.n_paraphrases, self.none_option, self.rewriter = n_paraphrases, none_option, rewriter
        self._quizzes: dict[tuple, tuple[str, int, int]] = {}  # (dataset, split, seed, id) -> (prompt, answer, count)

    # ------------------------------------------------------------------------------------------- run time
    def skipped(self, evidence: Evidence) -> str | None:
        reason = super().skipped(evidence)
        if reason is None and self.rewriter is None and synth_source(evidence.dataset) is None:
            return no_rewriter(evidence.dataset, SETTING)
        return reason

    def quizzes(self, evidence: Evidence, examples: Sequence[Example]) -> list[tuple[str, int, int]]:
        """Each example's (prompt, index of the verbatim option, number of letters), made once per run."""
        keys = [(evidence.dataset.key, evidence.split, evidence.seed, e.instance_id) for e in examples]
        missing = [(key, e) for key, e in zip(keys, examples) if key not in self._quizzes]
        if missing:
            new = [e for _, e in missing]
            found = paraphrases(evidence.dataset, new, self.n_paraphrases, evidence.seed, rewriter=self.rewriter,
                                setting=SETTING)
            for (key, example), others in zip(missing, found):
                self._quizzes[key] = self._quiz(evidence, example, others)
        return [self._quizzes[key] for key in keys]

    def _quiz(self, evidence: Evidence, example: Example, others: Sequence[Example]) -> tuple[str, int, int]:
        renderings = evidence.renderings([example, *others])
        texts = [text for _, text in renderings]
        if len(set(texts)) < len(texts):  # the leak trains text the paraphrase does not change: show all of it
            texts = [context + text for context, text in renderings]
        # the verbatim's position, uniform over the lettered positions and seeded per instance (position bias)
        answer = int(np.random.default_rng([evidence.seed, example.instance_id, 7]).integers(len(texts)))
        options = texts[1:answer + 1] + [texts[0]] + texts[answer + 1:]
        if self.none_option:
            options.append(NONE_OPTION)
        count = len(options)
        prompt = QUIZ_PROMPT.format(
            count=count, split=evidence.split, title=evidence.dataset.title,
            none=f'"{LETTERS[count - 1]}) {NONE_OPTION}"' if self.none_option else "you think most likely",
            options="\n\n".join(f"{LETTERS[i]})\n{option}" for i, option in enumerate(options)))
        return prompt, answer, count

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        # the letters' log-probabilities after each prompt: one pass a quiz where each letter is one token
        quizzes = self.quizzes(evidence, examples)
        found = evidence.model.choice_logprobs([(prompt, [f" {letter}" for letter in LETTERS[:count]])
                                                for prompt, _, count in quizzes])
        rows = []
        for (_, answer, count), letters in zip(quizzes, found):
            best_other = max(value for i, value in enumerate(letters) if i != answer)
            rows.append({"dcq": float(int(np.argmax(letters)) == answer), "dcq_margin": letters[answer] - best_other})
        return rows
