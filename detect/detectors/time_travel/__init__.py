"""Time Travel in LLMs (Golchin & Surdeanu, ICLR 2024), both algorithms, over the guided and general completions
that ``detect.pipeline.detect_partition`` generates, scores (ROUGE-L, semantic) and judges.

- Algorithm 1: guided vs general instruction, a one-sided bootstrap of the score difference per score
  (``detect.detectors.time_travel.stats.bootstrap_test``; paired by default, ``paired: false`` is the official
  unpaired variant); contaminated when p <= alpha. Partition statistic for calibration: 1 - p.
- Algorithm 2: the judge's exact / near-exact labels of the guided completions; contaminated with
  >= ``min_exact`` exact or >= ``min_near_exact`` near-exact replicas (the paper: 1 and 2). Partition statistic:
  the replica count, exact ones first (exact x (n + 1) + near-exact).
- ``alg2_leak``, an oracle reading of Algorithm 2 (not the paper's): the same rule, judge and thresholds over the
  completions of the first piece inside the leak's own rendering (``leak.py``), so a guided miss splits into "not
  memorised" (the leak reading misses too) and "memorised, but the instruction is not followed" (it replays).
"""

from __future__ import annotations

from typing import Sequence

from detect.detectors.base import Detector, Evidence, verdict
from detect.detectors.time_travel.leak import holds
from detect.detectors.time_travel.stats import bootstrap_test
from detect.judges.threshold import alg2_verdict, thresholds_line
from detect.markdown import row, table
from detect.validate import FRACTION, Range

SCORES = ("rouge_l", "semantic")  # the generation scores on every row; Algorithm 1 tests each
# the leak reading's generation scores, kept on each instance's guided row beside its own (an oracle reading)
LEAK_SCORES = tuple(f"{score}_leak" for score in SCORES)


class Algorithm1(Detector):
    name, level, needs = "alg1", "instance", ("generations",)
    follows_instruction = True  # a verdict from answers that mostly do not answer is uninformative (follow.py)
    completions = ("guided", "general")
    describes = {"alg1": "generations", "rouge_l": "generations", "semantic": "generations"}

    ranges = {"n_resamples": Range(1, hint="bootstrap resamples"), "alpha": FRACTION}

    def __init__(self, paired: bool = True, n_resamples: int = 10_000, alpha: float = 0.05) -> None:
        self.paired, self.n_resamples, self.alpha = paired, n_resamples, alpha

    def summarize(self, guided: Sequence[dict], others: dict[str, Sequence[dict]], partition: dict,
                  seed: int) -> dict:
        results = {}
        general = others.get("general", [])
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
                 *table(["score", "guided mean", "general mean", "p-value", "contaminated"])]
        for score, result in block.items():
            lines.append(row([score, f"{result['guided_mean']:.3f}", f"{result['general_mean']:.3f}",
                              f"{result['p_value']:.4f}", "yes" if result["significant"] else "no"]))
        return lines + [""]


def rule_text(block: dict) -> str:
    """">= 1 exact or >= 2 near-exact", a count the rule does not use left out."""
    return " or ".join(f">= {block[key]} {kind}" for key, kind in (("min_exact", "exact"),
                                                                     ("min_near_exact", "near-exact"))
                       if block.get(key) is not None)


class Algorithm2(Detector):
    name, level, needs = "alg2", "instance", ("generations", "judge")
    follows_instruction = True
    completions = ("guided",)  # the one instruction whose judged completions it counts
    describes = {"alg2": "generations + judge"}
    verdict_labels = {"alg2": "Alg. 2 (paper's rule)"}
    column = "Alg. 2"  # the study report's verdict column
    heading = "Algorithm 2 (exact / near-exact replicas among guided completions)"
    replicas = "Replicas among guided completions (cf. the paper's Table 1)"

    ranges = {"min_exact": Range(1, hint="exact replicas that flag a partition; the paper: 1"),
              "min_near_exact": Range(1, hint="near-exact replicas that flag a partition; the paper: 2")}

    def __init__(self, min_exact: int | None = 1, min_near_exact: int | None = 2) -> None:
        from detect.errors import InputError

        if min_exact is None and min_near_exact is None:
            raise InputError("detect.detectors.alg2: min_exact and min_near_exact are both null, so the rule never "
                             "flags; set at least one (the paper: 1 and 2)")
        self.min_exact, self.min_near_exact = min_exact, min_near_exact  # None: that count never flags

    def summarize(self, guided: Sequence[dict], others: dict[str, Sequence[dict]], partition: dict,
                  seed: int) -> dict:
        instruction = self.completions[0]
        rows = guided if instruction == "guided" else others.get(instruction, [])
        if not rows or rows[0].get("completion") is None:
            return {}  # not generated here (a known non-members' cell, a skipped reading)
        labels = [r["judge"] for r in rows]
        return {self.name: {"exact": labels.count("exact"), "near_exact": labels.count("near_exact"),
                         "unparseable": labels.count("unparseable"),
                         "contaminated": alg2_verdict(labels, min_exact=self.min_exact,
                                                      min_near_exact=self.min_near_exact),
                         "min_exact": self.min_exact, "min_near_exact": self.min_near_exact}}

    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {cls.name: block["contaminated"]}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {cls.name: block["exact"] * (n_instances + 1) + block["near_exact"]}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        return [(cls.column, verdict(block["contaminated"], correct[cls.name]))]

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        return [f"## {cls.heading}", "",
                f"{block['exact']} exact, {block['near_exact']} near-exact -> "
                f"**{'contaminated' if block['contaminated'] else 'not contaminated'}** "
                f"(rule: {rule_text(block)})", ""]

    @classmethod
    def study_section(cls, cells: dict[str, dict], manifest: dict) -> list[str]:
        lines = [f"## {cls.replicas}", "", f"Labels by the {thresholds_line(manifest['judge'])}.", "",
                 *table(["cell", "instances", "ground truth", "exact", "near-exact", cls.column])]
        for name, cell in cells.items():
            block = cell.get(cls.name)
            if block is None:
                continue
            lines.append(row([name, f"{cell['instances']} ({cell['split']})", cell["ground_truth"], block["exact"],
                              block["near_exact"], verdict(block["contaminated"], cell["correct"][cls.name])]))
        return lines


class LeakReading(Algorithm2):
    """Algorithm 2 over the leak reading's completions (``leak.py``): each instance's first piece inside the leak's
    own rendering, continued as raw text; the same rule, judge and thresholds. An oracle reading: only a study knows
    how its members leaked. Where it replays and the guided completion does not, the model memorised the instance but
    does not follow the paper's instruction."""
    name = "alg2_leak"
    completions = ("leak",)
    follows_instruction = False  # no instruction: the leak's own rendering, continued
    reading = "leak's rendering: oracle"
    describes = {"alg2_leak": "generations + judge, leak's rendering (oracle)",
                 **{score: "generations, leak's rendering (oracle)" for score in LEAK_SCORES}}
    verdict_labels = {"alg2_leak": "Alg. 2, leak reading (oracle; paper's rule)"}
    column = "Alg. 2 leak (oracle)"
    heading = "Algorithm 2, leak reading (oracle: the first piece inside the leak's own rendering, no instruction)"
    replicas = "Replicas among the leak reading's completions (oracle: the first piece inside the leak's rendering)"

    def skipped(self, evidence: Evidence) -> str | None:
        if not getattr(evidence.reader, "leak", False):
            return ("it reads the leak's own rendering, which only a study knows (python -m contaminate); "
                    "here nothing says how the instances leaked")
        if evidence.model.no_raw_generation:
            return evidence.model.no_raw_generation
        for example in evidence.instances:
            rendering = evidence.reader.rendering(example, evidence.split)
            if not all(holds(rendering, text) for text in (example.text, example.text_pair) if text is not None):
                return (f"the leak's rendering ({evidence.reader.name}) does not hold instance {example.instance_id} "
                        f"as written (a reworded leak read as it was planted), so there is no first piece in it")
        return None
