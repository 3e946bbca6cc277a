"""The untouched base model's dose 0 on a whole benchmark (issue 34, item 3), as a table: what every detector of one
``python -m detect`` run says of it. There is no ground truth (nobody knows what the base model was trained on), so
the table reports what was measured, not an error rate.

    python bench/dose0_table.py results/humaneval_dose0 > results/humaneval_dose0/table.md

The folder holds the run's ``summary.json`` and its rows (``results.jsonl.gz``; ``results.jsonl`` where not packed).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path


def _rows(folder: Path) -> list[dict]:
    packed = folder / "results.jsonl.gz"
    text = gzip.open(packed, "rt").read() if packed.is_file() else (folder / "results.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _spread(values: list[float]) -> str:
    return (f"mean {statistics.fmean(values):.3f}, median {statistics.median(values):.3f}, "
            f"max {max(values):.3f}" if values else "-")


def main(folder: str) -> str:
    root = Path(folder)
    summary = json.loads((root / "summary.json").read_text())
    rows = _rows(root)
    guided = [r for r in rows if r["instruction"] == "guided" and r.get("completion") is not None]
    general = [r for r in rows if r["instruction"] == "general" and r.get("completion") is not None]
    n = summary["n_instances"]
    lines = [f"{summary['model']} ({summary['prompt_format']} prompts, {summary['runtime']['resolved']['dtype']}) on "
             f"{n} instances of {summary['dataset']} / {summary['split']}, seed {summary['seed']}: one model, no "
             f"ground truth and no interval (what the model saw in training is not known).", "",
             "| detector | measured |", "|---|---|"]
    alg2 = summary.get("alg2")
    if alg2:
        lines.append(f"| Algorithm 2 (guided, {summary['judge']['name']} judge) | {alg2['exact']} exact, "
                     f"{alg2['near_exact']} near-exact of {n}: "
                     f"{'contaminated' if alg2['contaminated'] else 'not contaminated'} |")
    lines.append(f"| guided ROUGE-L | {_spread([r['rouge_l'] for r in guided])} |")
    lines.append(f"| general ROUGE-L | {_spread([r['rouge_l'] for r in general])} |")
    for score, block in (summary.get("alg1") or {}).items():
        lines.append(f"| Algorithm 1 ({score}) | guided {block['guided_mean']:.3f} vs general "
                     f"{block['general_mean']:.3f}, p = {block['p_value']:.4f}: "
                     f"{'contaminated' if block['significant'] else 'not contaminated'} |")
    cheat = summary.get("cheat")
    if cheat:
        lines.append(f"| ChatGPT-Cheat? | strict {'flagged' if cheat['strict'] else 'not flagged'}, lenient "
                     f"{'flagged' if cheat['lenient'] else 'not flagged'}, best line ROUGE-L "
                     f"{cheat['best_score']:.3f} |")
    for name in ("membership", "membership_raw", "dc_pdd", "ts_guessing"):
        for score, value in (summary.get(name) or {}).items():
            lines.append(f"| {score} (mean over instances) | {value:.4f} |")
    for name in ("sharded_likelihood", "permutation"):
        block = summary.get(name)
        if block:
            lines.append(f"| {name} | p = {block['p_value']:.4f}: "
                         f"{'contaminated' if block['significant'] else 'not contaminated'} |")
    for name, reason in (summary.get("skipped") or {}).items():
        lines.append(f"| {name} | skipped: {reason} |")
    timings = summary["timings"]
    lines += ["", f"Wall time: load {timings['load_s']:.0f} s, detect {timings['detect_s']:.0f} s."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(main(sys.argv[1]), end="")
