"""A performance test in the spirit of ConStat (Dekoninck et al., NeurIPS 2024, "ConStat: Performance-Based
Contamination Detection in Large Language Models"): is the model's task accuracy on the partition higher than
on known non-members of the same distribution? What a leak of the answers (an instruction leak above all)
inflates is performance, whether or not the text itself became more likely.

    row = performance_test(correct_pool, correct_heldout, alpha=0.05)       # per-instance 0/1 correctness

**Accuracy** (labelled tasks only: classification, NLI; the dataset config names ``fields.label``). The candidate
answers are the distinct labels of the instances read (pool and held-out). For each instance and each candidate
c, the instance is rendered with label c (``dataclasses.replace(example, label=c)``, then
``Evidence.renderings``: as the leak's format lays it out) and the rendering's text is scored given its context;
the model's answer is the candidate with the highest **summed** log-probability, lm-evaluation-harness's
multiple-choice ``acc`` (ConStat evaluates its multiple-choice benchmarks, ARC, MMLU, HellaSwag, through the
harness). For the instruction format that is the answer turn given the chat prompt; for a document format the
whole document with that label. Ties go to the first candidate in sorted order. A format that does not render the
label (``input_only``, ``instance_only``) gives every candidate the same text: the test is skipped with that line,
as it is on a dataset with no label.

**The test.** With a = correct / n on the partition (the first ``max_instances`` of ``Evidence.pool`` by instance
id) and b on ``Evidence.known_non_members``: H0 the two accuracies are equal, H1 the partition's is higher. p-value:
Fisher's exact test, one-sided (``scipy.stats.fisher_exact(..., alternative="greater")`` on [[correct, wrong] of
the partition, [correct, wrong] of the held-out]). Exact given the margins, so valid at a cell's small counts (40
and 50 by default, accuracies near 0 or 1 after a leak), where a normal approximation is not; conservative (its
discreteness keeps the false-positive rate at or below alpha). statistic = a - b (ConStat's delta, the
performance gain beyond what is expected); verdict p <= alpha; its ROC statistic 1 - p.

**What is kept of ConStat and what is simplified.** ConStat's contamination is abnormal performance: the model's
benchmark accuracy against the accuracy predicted from its accuracy on a reference benchmark, the prediction
fitted on reference models (a smoothing spline of benchmark vs reference-benchmark accuracy over >= 5 reference
models, ``src/constat/detection.py``), with a bootstrap over samples and reference models for the p-value and for
delta. Here the reference benchmark is held-out instances of the same split, the same distribution as the
partition, so an uncontaminated model's expected accuracy on the partition is its own held-out accuracy: the
spline (the map between two benchmarks of different difficulty) is the identity and no reference models are
needed. What remains is ConStat's own ``MeanScoreTest`` baseline ("MeanTest" in the paper: the model's mean on the
benchmark against its mean on the reference data, one-sided), with Fisher's exact test in place of its bootstrap
z-test. Kept: performance as the signal, the one-sided alternative, delta as the effect. Dropped: reference
models, the spline, the bootstrap, ``p_value_delta`` (the test here is of delta > 0) and the estimate of the
uncontaminated performance (it is b). ConStat's sample-specific setting (synthetic samples of the same
distribution as the reference) is the closest to the lab's.

Defaults: ``max_instances = 40`` (the sharded test's pool size, so both partition tests read the same instances),
``alpha = 0.05``. Cost: (max_instances + held-out) x candidates scored texts, one pass: 90 x 2 on SynthNLI.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from detect.datasets import Example
from detect.detectors.base import Evidence, PValueTest, Rendering
from detect.validate import FRACTION, Range


def performance_test(correct: Sequence[bool], correct_heldout: Sequence[bool], *, alpha: float = 0.05) -> dict:
    """The one-sided test of the partition's accuracy against the held-out accuracy, from per-instance correctness:
    accuracies, their difference (``statistic``), Fisher's exact one-sided p-value and the verdict."""
    from scipy.stats import fisher_exact

    n, n_heldout = len(correct), len(correct_heldout)
    hits, hits_heldout = int(sum(correct)), int(sum(correct_heldout))
    accuracy, accuracy_heldout = hits / n, hits_heldout / n_heldout
    # odds ratio > 1 <=> the partition's accuracy is the higher one
    p_value = float(fisher_exact([[hits, n - hits], [hits_heldout, n_heldout - hits_heldout]],
                                 alternative="greater").pvalue)
    # the row's fields keep the pool's first name, n_heldout and accuracy_heldout: every committed row reads so
    return {"level": "partition", "detector": "performance", "n_instances": n, "n_heldout": n_heldout,
            "accuracy": accuracy, "accuracy_heldout": accuracy_heldout, "statistic": accuracy - accuracy_heldout,
            "p_value": p_value, "alpha": alpha, "significant": p_value <= alpha}


class PerformanceTest(PValueTest):
    """Accuracy on the partition against accuracy on known non-members, answers as the leak's format asks them."""
    name, column, needs = "performance", "performance test", ("logits", "pool", "known_non_members")
    describes = {"performance": "logits + known non-members (held-out pool), labelled tasks"}
    summary_fields = ("p_value", "statistic", "significant", "accuracy", "accuracy_heldout", "n_instances",
                      "n_heldout", "candidates")
    verdict_labels = {"performance": "performance test, accuracy on the pool > held-out accuracy, p <= alpha"}

    ranges = {"max_instances": Range(1, hint="instances of the pool whose accuracy is measured"), "alpha": FRACTION}

    def __init__(self, max_instances: int = 40, alpha: float = 0.05) -> None:
        self.max_instances, self.alpha = max_instances, alpha

    def instances(self, evidence: Evidence) -> list[Example]:
        """The partition's instances it reads: the first ``max_instances`` of the pool by instance id."""
        return sorted(evidence.pool, key=lambda example: example.instance_id)[: self.max_instances]

    def candidates(self, evidence: Evidence) -> list[str]:
        """The answers to choose from: the distinct labels of the instances read, sorted (ties go to the first)."""
        examples = [*self.instances(evidence), *evidence.known_non_members]
        return sorted({e.label for e in examples if e.label is not None})

    def skipped(self, evidence: Evidence) -> str | None:
        reason = super().skipped(evidence)
        if reason:
            return reason
        dataset = evidence.dataset
        if not dataset.fields.get("label"):
            return (f"it measures accuracy on a labelled task, and dataset {dataset.key} has no label "
                    f"(task {dataset.task})")
        if not self.instances(evidence):
            return "it needs the partition's instances (Evidence.pool), and the pool is empty"
        candidates = self.candidates(evidence)
        if len(candidates) < 2:
            return f"it needs at least 2 distinct labels to choose from, and the instances read have {candidates}"
        probe = evidence.known_non_members[0]
        renderings = evidence.renderings([dataclasses.replace(probe, label=c) for c in candidates])
        if len(set(renderings)) < len(candidates):
            return (f"the leak's format ({getattr(evidence.reader, 'name', 'unknown')}) does not render the label, "
                    f"so there is no answer to score")
        return None

    def choices(self, evidence: Evidence, examples: Sequence[Example]) -> list[list[Rendering]]:
        """Per instance, its rendering with each candidate label (in ``candidates`` order)."""
        candidates = self.candidates(evidence)
        flat = evidence.renderings([dataclasses.replace(e, label=c) for e in examples for c in candidates])
        return [flat[i:i + len(candidates)] for i in range(0, len(flat), len(candidates))]

    def correct(self, evidence: Evidence, examples: Sequence[Example]) -> list[bool]:
        """Per instance, whether the model's answer (the most likely candidate rendering) is its label."""
        candidates = self.candidates(evidence)
        choices = self.choices(evidence, examples)
        stats = evidence.model.continuation_logprobs([r for rows in choices for r in rows])
        totals = [float(sum(s["logp"])) for s in stats]
        answers = []
        for i in range(len(examples)):
            row = totals[i * len(candidates):(i + 1) * len(candidates)]
            answers.append(candidates[row.index(max(row))])  # first maximum: ties go to the first candidate
        return [answer == example.label for answer, example in zip(answers, examples)]

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        examples = [*self.instances(evidence), *evidence.known_non_members]
        return [([context + text for rows in self.choices(evidence, examples) for context, text in rows], False)]

    def run(self, evidence: Evidence) -> dict | None:
        row = performance_test(self.correct(evidence, self.instances(evidence)),
                               self.correct(evidence, evidence.known_non_members), alpha=self.alpha)
        return {**row, "candidates": self.candidates(evidence)}

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        return ["## Performance test (accuracy on the partition vs known non-members)", "",
                f"Accuracy {block['accuracy']:.3f} on {block['n_instances']} instances of the partition against "
                f"{block['accuracy_heldout']:.3f} on {block['n_heldout']} known non-members (answers: "
                f"{', '.join(block['candidates'])}): gain {block['statistic']:+.3f}, one-sided Fisher p = "
                f"{block['p_value']:.4f} -> **{'contaminated' if block['significant'] else 'not contaminated'}**.",
                ""]
