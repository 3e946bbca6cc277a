"""The study before and after, in one run on this machine: each stage's seconds and tokens/s, and the verdicts.

    python bench/bench_study.py                          # the README default study, twice from empty caches (~25 min)
    python bench/bench_study.py --scale small            # 16 members, 1 epoch, 4 instances per cell (~4 min)
    python bench/bench_study.py --before e05b620         # the baseline: any commit (default: the one before issue 12)
    python bench/bench_study.py --before none            # this checkout alone: its time and memory, no comparison

The baseline is the code of ``--before``, checked out into a temporary git worktree; the current code is this
checkout. Each runs ``python -m contaminate`` in a subprocess with its own empty cache (the converted embedded
model is shared), one after the other, so nothing else competes for the cores. Printed: training (seconds, trained
tokens/s), each detection cell (seconds, generated and scored tokens, tokens/s), the whole study, the ratios, and
whether every detector's verdict on every cell is the same. Memory: each run's peak resident set (the kernel's
``ru_maxrss`` of the study's process, as ``/usr/bin/time -v`` reports it) and, from RSS sampled every 0.2 s against
the study's own log lines (``training ...``, ``detecting <cell> ...``), the peak of each stage.

Generated tokens of the baseline, which did not count them, are counted here by re-tokenizing its raw completions
(each completion plus its end token when it ended before ``max_new_tokens``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "e05b620"  # main before issue 12 (runtime policy, padding-free training, stop criteria, logit memo)
SCALES = {
    "default": [],
    "small": ["sample.n_members=16", "sample.n_non_members=16", "sample.n_detect=4", "contaminate.epochs=1"],
}


def run_study(checkout: Path, work: Path, overrides: list[str]) -> tuple[Path, float, dict]:
    """Run the study once; its folder, wall seconds and memory (peak RSS in GB, overall and per stage)."""
    import psutil

    run_dir, cache = work / "run", work / "cache"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "contaminate", "+dataset=synth_nli", *overrides, f"cache_dir={cache}",
               f"hydra.run.dir={run_dir}"]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    samples: list[tuple[float, int]] = []
    stages: list[tuple[float, str]] = [(0.0, "start-up and sampling")]
    lines: list[str] = []

    def sample() -> None:  # the study's process and any child it starts (a server, a judge)
        parent = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                rss = sum(p.memory_info().rss for p in [parent, *parent.children(recursive=True)])
            except psutil.Error:
                break
            samples.append((time.perf_counter() - started, rss))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    for line in process.stdout:  # the stage the memory belongs to: the study's own log lines
        lines.append(line)
        if "] - training " in line:
            stages.append((time.perf_counter() - started, "training"))
        elif "] - detecting " in line:  # "detecting <cell>: ..."
            stages.append((time.perf_counter() - started, line.split("] - detecting ")[1].split(":")[0]))
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"the study failed in {checkout}:\n{''.join(lines)[-3000:]}")
    stages.append((seconds, "end"))
    per_stage = {}
    for (start, name), (end, _) in zip(stages, stages[1:]):
        inside = [rss for t, rss in samples if start <= t < end]
        per_stage[name] = max(per_stage.get(name, 0.0), max(inside, default=0) / 1e9)
    return run_dir, seconds, {"peak_gb": usage.ru_maxrss * 1024 / 1e9, "stages_gb": per_stage}


def generated_tokens(run_dir: Path, tokenizer, max_new_tokens: int) -> dict[str, int]:
    """Per cell, the tokens its generations took, counted from the raw completions."""
    counts: dict[str, int] = {}
    for name in ("results.jsonl", "partition.jsonl"):
        for line in (run_dir / name).read_text().splitlines():
            row = json.loads(line)
            if "raw_completion" not in row:
                continue
            n = len(tokenizer(row["raw_completion"], add_special_tokens=False).input_ids)
            counts[row["cell"]] = counts.get(row["cell"], 0) + n + (n < max_new_tokens)
    return counts


def describe(run_dir: Path, wall: float, memory: dict, tokenizer) -> dict:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    timings, checkpoint = manifest["timings"], manifest["checkpoint"]
    log = json.loads((run_dir / "train_log.json").read_text())
    trained_tokens = checkpoint.get("trained_tokens") or max(float(e.get("num_tokens", 0)) for e in log)
    cells = timings.get("cells") or {name: {"total_s": s} for name, s in timings["cells_s"].items()}
    counted = generated_tokens(run_dir, tokenizer, manifest["detect"]["max_new_tokens"])
    for name, cell in cells.items():
        cell.setdefault("generated_tokens", counted.get(name, 0))
    verdicts = {cell: {detector: outcome for detector, outcome in result["correct"].items()}
                for cell, result in summary["cells"].items()}
    rows = {(r["cell"], r["instance_id"], r["instruction"]): r
            for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    return {"wall_s": wall, "memory": memory, "train_s": checkpoint["train_seconds"], "trained_tokens": trained_tokens,
            "rows": rows,
            "steps": checkpoint.get("steps"), "cells": cells, "total_s": timings["total_s"], "verdicts": verdicts,
            "alg2": {cell: (r["alg2"]["exact"], r["alg2"]["near_exact"]) for cell, r in summary["cells"].items()
                     if "alg2" in r}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help="the baseline commit")
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--keep", help="copy both run folders (not the caches) here: before/ and after/")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from detect.models.loading import embedded_folder

    tokenizer = AutoTokenizer.from_pretrained(embedded_folder())
    overrides = SCALES[args.scale]
    with tempfile.TemporaryDirectory(prefix="bench-study-") as scratch:
        scratch = Path(scratch)
        print(f"study: python -m contaminate +dataset=synth_nli {' '.join(overrides)} (scale {args.scale}); "
              f"before = {args.before}, after = this checkout", flush=True)
        before = None
        if args.before != "none":
            baseline = scratch / "baseline-code"
            subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.before], cwd=ROOT, check=True,
                           capture_output=True)
            try:
                before = describe(*run_study(baseline, scratch / "before", overrides), tokenizer)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, capture_output=True)
        after = describe(*run_study(ROOT, scratch / "after", overrides), tokenizer)
        if args.keep:
            for name in ("before", "after")[before is None:]:
                shutil.copytree(scratch / name / "run", Path(args.keep) / name, symlinks=True)
    print_memory(before, after)
    if before is not None:
        report(before, after)


def print_memory(before: dict | None, after: dict) -> None:
    """Peak resident memory, GB: the whole study (ru_maxrss) and each stage (sampled), before and after."""
    runs = [("before", before), ("after", after)] if before else [("this checkout", after)]
    print(f"\n{'peak resident memory, GB':<40}" + "".join(f"{name:>15}" for name, _ in runs))
    stages = dict.fromkeys(name for _, run in runs for name in run["memory"]["stages_gb"])
    for stage in stages:
        print(f"{stage:<40}" + "".join(f"{run['memory']['stages_gb'].get(stage, float('nan')):15.2f}"
                                        for _, run in runs))
    print(f"{'the study (ru_maxrss)':<40}" + "".join(f"{run['memory']['peak_gb']:15.2f}" for _, run in runs))
    print(f"{'wall seconds':<40}" + "".join(f"{run['wall_s']:15.1f}" for _, run in runs), flush=True)


def score_differences(before: dict, after: dict) -> str:
    """The largest absolute difference of each numeric score over the instance rows both runs wrote."""
    largest: dict[str, float] = {}
    for key in before.keys() & after.keys():
        for name, value in after[key].items():
            old = before[key].get(name)
            if isinstance(value, float) and isinstance(old, float) and value == value and old == old:
                largest[name] = max(largest.get(name, 0.0), abs(value - old))
    if not largest:
        return "instance scores: no row in common"
    worst = max(largest.values())
    return (f"instance scores over {len(before.keys() & after.keys())} rows in common: largest difference "
            f"{worst:.2e} ({max(largest, key=largest.get)}); all within 1e-4: {worst <= 1e-4}")


def _rate(tokens: float, seconds: float) -> str:
    return f"{tokens / seconds:7.1f}" if seconds else "      -"


def report(before: dict, after: dict) -> None:
    print(f"\n{'stage':<30} {'before s':>9} {'after s':>9} {'ratio':>6}   tokens/s before / after")
    print(f"{'training':<30} {before['train_s']:9.1f} {after['train_s']:9.1f} "
          f"{before['train_s'] / after['train_s']:5.2f}x   {_rate(before['trained_tokens'], before['train_s'])} / "
          f"{_rate(after['trained_tokens'], after['train_s'])} trained ({after['trained_tokens']:.0f} tokens)")
    for cell, timing in after["cells"].items():
        old = before["cells"][cell]
        print(f"{cell:<30} {old['total_s']:9.1f} {timing['total_s']:9.1f} {old['total_s'] / timing['total_s']:5.2f}x"
              f"   generated {old['generated_tokens']:>5} -> {timing['generated_tokens']:>5}, scored "
              f"{old.get('scored_tokens', '-')} -> {timing.get('scored_tokens', 0)} tokens; after: logits "
              f"{timing.get('logits_s', 0):.1f} s, instances "
              f"{timing.get('instances_s', 0):.1f} s, partition {timing.get('partition_s', 0):.1f} s")
    detect_before = sum(c["total_s"] for c in before["cells"].values())
    detect_after = sum(c["total_s"] for c in after["cells"].values())
    print(f"{'detection (all cells)':<30} {detect_before:9.1f} {detect_after:9.1f} "
          f"{detect_before / detect_after:5.2f}x")
    print(f"{'study (manifest total)':<30} {before['total_s']:9.1f} {after['total_s']:9.1f} "
          f"{before['total_s'] / after['total_s']:5.2f}x")
    print(f"{'command wall (with start-up)':<30} {before['wall_s']:9.1f} {after['wall_s']:9.1f} "
          f"{before['wall_s'] / after['wall_s']:5.2f}x")
    print(f"\n{score_differences(before['rows'], after['rows'])}")
    gone = sorted({d for cell in before["verdicts"].values() for d in cell}
                  - {d for cell in after["verdicts"].values() for d in cell})
    if gone:
        print(f"verdicts only before (skipped after: see the manifest's timings.cells.*.skipped): {', '.join(gone)}")
    shared = {cell: {d: v for d, v in verdicts.items() if d not in gone}
              for cell, verdicts in before["verdicts"].items()}
    same = shared == after["verdicts"]
    print(f"verdicts right/wrong per cell and detector identical (every detector of both): {same}")
    if not same:
        for cell in after["verdicts"]:
            if shared[cell] != after["verdicts"][cell]:
                print(f"  {cell}: before {shared[cell]}\n  {' ' * len(cell)}  after  {after['verdicts'][cell]}")
    print("Algorithm 2 (exact, near-exact) per cell, before -> after: "
          + "; ".join(f"{cell} {before['alg2'][cell]} -> {after['alg2'][cell]}" for cell in after["alg2"]))


if __name__ == "__main__":
    main()
