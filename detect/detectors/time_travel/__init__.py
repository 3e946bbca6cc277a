"""Time Travel in LLMs (Golchin & Surdeanu, ICLR 2024), both algorithms, over the guided and general completions
that ``detect.pipeline.detect_partition`` generates, scores (ROUGE-L, semantic) and judges.

- Algorithm 1: guided vs general instruction, a one-sided bootstrap of the score difference per score
  (``detect.detectors.time_travel.stats.bootstrap_test``; paired by default, ``paired: false`` is the official
  unpaired variant); contaminated when p <= alpha. Partition statistic for calibration: 1 - p.
- Algorithm 2: the judge's exact / near-exact labels of the guided completions; contaminated with
  >= ``min_exact`` exact or >= ``min_near_exact`` near-exact replicas (the paper: 1 and 2). Partition statistic:
  the replica count, exact ones first (exact x (n + 1) + near-exact).
"""

from __future__ import annotations

from typing import Sequence

from detect.detectors.base import Detector, verdict
from detect.detectors.time_travel.stats import bootstrap_test
from detect.judges.threshold import alg2_verdict, thresholds_line
from detect.validate import FRACTION, Range

SCORES = ("rouge_l", "semantic")  # the generation scores on every row; Algorithm 1 tests each


class Algorithm1(Detector):
    name, level, needs = "alg1", "instance", ("generations",)
    completions = ("guided", "general")
    describes = {"alg1": "generations", "rouge_l": "generations", "semantic": "generations"}

    ranges = {"n_resamples": Range(1, hint="bootstrap resamples"), "alpha": FRACTION}

    def __init__(self, paired: bool = True, n_resamples: int = 10_000, alpha: float = 0.05) -> None:
        self.paired, self.n_resamples, self.alpha = paired, n_resamples, alpha

    def summarize(self, guided: Sequence[dict], general: Sequence[dict], partition: dict, seed: int) -> dict:
        results = {}
        for score in SCORES:
            if not guided or guided[0].get(score) is None:
                continue
            guided_scores, general_scores = [r[score] for r in guided], [r[score] for r in general]
            p_value = bootstrap_test(guided_scores, general_scores, paired=self.paired,
                                     n_resamples=self.n_resamples, seed=seed)
            results[score] = {"guided_mean": sum(guided_scores) / len(guided_scores),
                              "general_mean": sum(general_scores) / len(general_scores),
                              "p_value": p_value, "significant": p_value <= self.alpha}
        return {"alg1": results, "bootstrap": {"paired": self.paired, "n_resamples": self.n_resamples,
                                               "alpha": self.alpha, "seed": seed}}

    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {f"alg1_{score}": result["significant"] for score, result in block.items()}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {f"alg1_{score}": 1 - result["p_value"] for score, result in block.items()}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        return [(f"Alg. 1 {score} (guided / general, p)",
                 f"{verdict(r['significant'], correct[f'alg1_{score}'])} "
                 f"({r['guided_mean']:.2f} / {r['general_mean']:.2f}, {r['p_value']:.3f})")
                for score, r in block.items()]

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        lines = ["## Algorithm 1 (guided vs general, one-sided bootstrap)", "",
                 "| score | guided mean | general mean | p-value | contaminated |", "|---|---|---|---|---|"]
        for score, result in block.items():
            lines.append(f"| {score} | {result['guided_mean']:.3f} | {result['general_mean']:.3f} | "
                         f"{result['p_value']:.4f} | {'yes' if result['significant'] else 'no'} |")
        return lines + [""]


def rule_text(block: dict) -> str:
    """">= 1 exact or >= 2 near-exact", a count the rule does not use left out."""
    return " or ".join(f">= {block[key]} {kind}" for key, kind in (("min_exact", "exact"),
                                                                     ("min_near_exact", "near-exact"))
                       if block.get(key) is not None)


class Algorithm2(Detector):
    name, level, needs = "alg2", "instance", ("generations", "judge")
    completions = ("guided",)
    describes = {"alg2": "generations + judge"}

    ranges = {"min_exact": Range(1, hint="exact replicas that flag a partition; the paper: 1"),
              "min_near_exact": Range(1, hint="near-exact replicas that flag a partition; the paper: 2")}

    def __init__(self, min_exact: int | None = 1, min_near_exact: int | None = 2) -> None:
        from detect.errors import InputError

        if min_exact is None and min_near_exact is None:
            raise InputError("detect.detectors.alg2: min_exact and min_near_exact are both null, so the rule never "
                             "flags; set at least one (the paper: 1 and 2)")
        self.min_exact, self.min_near_exact = min_exact, min_near_exact  # None: that count never flags

    def summarize(self, guided: Sequence[dict], general: Sequence[dict], partition: dict, seed: int) -> dict:
        labels = [r["judge"] for r in guided]
        return {"alg2": {"exact": labels.count("exact"), "near_exact": labels.count("near_exact"),
                         "unparseable": labels.count("unparseable"),
                         "contaminated": alg2_verdict(labels, min_exact=self.min_exact,
                                                      min_near_exact=self.min_near_exact),
                         "min_exact": self.min_exact, "min_near_exact": self.min_near_exact}}

    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {"alg2": block["contaminated"]}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {"alg2": block["exact"] * (n_instances + 1) + block["near_exact"]}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        return [("Alg. 2", verdict(block["contaminated"], correct["alg2"]))]

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        return ["## Algorithm 2 (exact / near-exact replicas among guided completions)", "",
                f"{block['exact']} exact, {block['near_exact']} near-exact -> "
                f"**{'contaminated' if block['contaminated'] else 'not contaminated'}** "
                f"(rule: {rule_text(block)})", ""]

    @classmethod
    def study_section(cls, cells: dict[str, dict], manifest: dict) -> list[str]:
        lines = ["## Replicas among guided completions (cf. the paper's Table 1)", "",
                 f"Labels by the {thresholds_line(manifest['judge'])}.", "",
                 "| cell | instances | ground truth | exact | near-exact | Algorithm 2 |", "|---|---|---|---|---|---|"]
        for name, cell in cells.items():
            block = cell["alg2"]
            lines.append(f"| {name} | {cell['instances']} ({cell['split']}) | {cell['ground_truth']} | "
                         f"{block['exact']} | {block['near_exact']} | "
                         f"{verdict(block['contaminated'], cell['correct']['alg2'])} |")
        return lines
