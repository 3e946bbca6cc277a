"""Dose 0 on a real benchmark (issue 34 item 3): what every detector reads in the untouched base model, from one
``python -m detect`` run folder (summary.json, results.jsonl).

    python -m detect +dataset=humaneval sample.n_detect=164 hydra.run.dir=runs/humaneval_dose0
    python -m contaminate.reports.dose0 runs/humaneval_dose0 > results/humaneval_dose0/table.md

The folder needs ``summary.json`` and ``results.jsonl`` (or the ``results.jsonl.gz`` a results folder keeps).

There is no ground truth here: whether the model's own pretraining held the benchmark is unknown, so a flag is
either that contamination or a false positive, and these numbers are readings, not error rates. One model, one
reading of each instance: no interval. Algorithm 2's rule is stated for the paper's 10 instances; over the whole
benchmark the same counts are also read as the paper would, in disjoint partitions of 10 (the instances in id
order; a remainder under 10 left out).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path

from detect.detectors.time_travel import rule_text
from detect.judges.threshold import alg2_verdict
from detect.markdown import row, table

PARTITION = 10  # the paper's sample: 10 instances a partition
LOGIT_BLOCKS = ("membership", "membership_raw", "dc_pdd")  # instance scores, higher = more likely seen


def read_run(folder: str | Path) -> tuple[dict, list[dict]]:
    root = Path(folder)
    if not (root / "summary.json").is_file():
        raise SystemExit(f"{folder}: no summary.json; run python -m detect +dataset=<key> hydra.run.dir={folder} first")
    results = root / "results.jsonl"  # the run's, or the gzipped copy a results folder keeps
    text = (results.read_text() if results.is_file() else
            gzip.decompress((root / "results.jsonl.gz").read_bytes()).decode())
    rows = [json.loads(line) for line in text.splitlines()]
    return json.loads((root / "summary.json").read_text()), rows


def of(rows: list[dict], instruction: str) -> list[dict]:
    return sorted((r for r in rows if r["instruction"] == instruction), key=lambda r: r["instance_id"])


def flagged_partitions(labels: list[str], block: dict) -> tuple[int, int]:
    """(flagged, partitions): Algorithm 2's rule applied to each disjoint run of PARTITION labels."""
    chunks = [labels[i:i + PARTITION] for i in range(0, len(labels) - PARTITION + 1, PARTITION)]
    flagged = sum(alg2_verdict(chunk, min_exact=block.get("min_exact"), min_near_exact=block.get("min_near_exact"))
                  for chunk in chunks)
    return flagged, len(chunks)


def quantiles(values: list[float]) -> tuple[float, float, float]:
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return deciles[0], statistics.median(values), deciles[-1]


def verdict(flag: bool) -> str:
    return "contaminated" if flag else "not contaminated"


def verdict_rows(summary: dict, rows: list[dict]) -> list[str]:
    n = summary["n_instances"]
    lines = table(["detector", "what it read", "reading", "verdict"])
    if "alg2" in summary:
        block = summary["alg2"]
        labels = [r["judge"] for r in of(rows, "guided")]
        flagged, chunks = flagged_partitions(labels, block)
        lines += [row(["Time Travel, Algorithm 2", f"{n} guided completions, the judge's labels",
                       f"{block['exact']} exact, {block['near_exact']} near-exact",
                       f"{verdict(block['contaminated'])} (rule: {rule_text(block)} of {n})"]),
                  row(["the same, at the paper's sample size",
                       f"{chunks} disjoint partitions of {PARTITION} (id order)", f"{flagged} of {chunks} flagged",
                       f"(rule: {rule_text(block)} of {PARTITION})"])]
    for score, result in summary.get("alg1", {}).items():
        lines.append(row([f"Time Travel, Algorithm 1, {score}",
                          f"guided against general completions, "
                          f"{'paired' if summary['bootstrap']['paired'] else 'unpaired'} bootstrap",
                          f"{result['guided_mean']:.3f} against {result['general_mean']:.3f}, "
                          f"p {result['p_value']:.3f}",
                          f"{verdict(result['significant'])} (flagged at p <= {summary['bootstrap']['alpha']})"]))
    if "cheat" in summary:
        block = summary["cheat"]
        lines.append(row(["ChatGPT-Cheat?", f"one request for the split's first instances, searched in its "
                          f"{block['n_references']}", f"{block['exact']} exact, {block['near_exact']} near-exact, best "
                          f"ROUGE-L {block['best_score']:.2f}", block["verdict"]]))
    for name, label in (("sharded_likelihood", "Oren et al., sharded"), ("permutation", "Oren et al., permutation")):
        if name in summary:
            block = summary[name]
            lines.append(row([label, f"the first {block['n_instances']} instances in the dataset's order",
                              f"p {block['p_value']:.3f}", verdict(block["significant"])]))
    if "ts_guessing" in summary:
        lines.append(row(["TS-Guessing", "each instance's masked keyword",
                          f"exact match {summary['ts_guessing']['ts_guessing']:.3f} of {n}", "(no partition rule)"]))
    return lines


def completion_rows(rows: list[dict]) -> list[str]:
    lines = table(["completions", "n", "ROUGE-L 10th pct", "median", "90th pct", "max", "mean"])
    for instruction in ("guided", "general"):
        scores = [r["rouge_l"] for r in of(rows, instruction) if r.get("rouge_l") is not None]
        if len(scores) >= 2:
            low, mid, high = quantiles(scores)
            lines.append(row([instruction, len(scores), f"{low:.3f}", f"{mid:.3f}", f"{high:.3f}", f"{max(scores):.3f}",
                              f"{statistics.fmean(scores):.3f}"]))
    return lines


def logit_rows(summary: dict, rows: list[dict]) -> list[str]:
    guided = of(rows, "guided")
    lines = table(["score", "n", "10th pct", "median", "90th pct", "mean"])
    same = []
    for block in LOGIT_BLOCKS:
        for score in summary.get(block, {}):
            values = [r[score] for r in guided if r.get(score) is not None]
            if score.endswith("_raw") and values == [r.get(score[:-4]) for r in guided]:
                same.append(score)  # without a leak's format the bare text is the rendering: the same numbers
                continue
            if len(values) >= 2:
                low, mid, high = quantiles(values)
                lines.append(row([score, len(values), f"{low:.4g}", f"{mid:.4g}", f"{high:.4g}",
                                  f"{statistics.fmean(values):.4g}"]))
    if same:
        lines += ["", f"{', '.join(same)}: the same values as without `_raw` (no leak format here: the bare text is "
                      f"what was scored)."]
    return lines


def main(folder: str) -> str:
    summary, rows = read_run(folder)
    resolved = summary.get("runtime", {}).get("resolved", {})
    timings = summary.get("timings", {})
    lines = [f"{summary['model']} on {summary['n_instances']} instances of {summary['dataset']} "
             f"({summary['split']} split), untouched: dose 0. No ground truth: whether the model's own pretraining "
             f"held them is unknown, so a flag is that contamination or a false positive, and neither can be told "
             f"apart here. One model, one reading of each instance: no interval. Prompt format "
             f"`{summary['prompt_format']}`; detection {timings.get('detect_s', 0):.0f} s after "
             f"{timings.get('load_s', 0):.0f} s of loading, on {resolved.get('device', '?')} in "
             f"{resolved.get('dtype', '?')} (`summary.json` `timings`, `runtime`).", "",
             "### Verdicts", "", *verdict_rows(summary, rows), "",
             "### The completions (ROUGE-L against each instance's second piece)", "", *completion_rows(rows), "",
             "### Logit scores of each instance (higher = more likely seen; loss is minus the mean negative "
             "log-likelihood a token)", "",
             "Without non-members of the same distribution there is no AUC here: these are the base model's levels, "
             "to be read beside a never-planted group of the same benchmark scored by a model of the same run.", "",
             *logit_rows(summary, rows)]
    skipped = summary.get("skipped")
    if skipped:
        lines += ["", "Skipped: " + "; ".join(f"{name} ({reason})" for name, reason in sorted(skipped.items())) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(main(sys.argv[1]), end="")
