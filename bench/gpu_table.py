"""The GPU checks as docs/gpu.md shows them: bench/bench_gpu.py's JSON (training and generation throughput) and the
small planted runs' plant.json and per-group manifests (bench/gpu_check.sh), from a results folder.

    python bench/gpu_table.py results/gpu_h200 > results/gpu_h200/table.md
    python bench/include_tables.py docs/gpu.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def throughput_lines(folder: Path) -> list[str]:
    lines = ["| bench/bench_gpu.py | parameters | tokens/s | model TFLOP/s | of bf16 peak | peak memory |",
             "|---|---|---|---|---|---|"]
    for path in sorted(folder.glob("bench_*.json")):
        bench = json.loads(path.read_text())
        args, training = bench["args"], bench["training"]
        lines.append(f"| training, {args['attn']}, {args['batch_size']} x {args['doc_tokens']} tokens a step "
                     f"({training['steps_timed']} steps timed) | {training['parameters'] / 1e9:.2f}B | "
                     f"{training['tokens_per_s']:,} | {training['model_tflops']} | {training['mfu']:.1%} | "
                     f"{training['max_memory_gib']} GiB |")
        for batch, tokens_per_s in bench.get("generation_tokens_per_s", {}).items():
            lines.append(f"| generation ({args['prompt_tokens']}-token prompts, {args['new_tokens']} new tokens), "
                         f"batch {batch} | | {tokens_per_s:,} | | | |")
    device = json.loads(next(folder.glob("bench_*.json")).read_text())["device"]
    return [f"On one {device}, bf16 (fp32 master weights, bf16 autocast, padding-free batches):", "", *lines]


def planted_lines(folder: Path) -> list[str]:
    lines = ["| planted run | training tokens | train | detect x1 | detect x4 | loss AUC x1 / x4 "
             "| Min-K% AUC x1 / x4 |", "|---|---|---|---|---|---|---|"]
    for run in sorted(folder.glob("planted_*")):
        plant = json.loads((run / "plant.json").read_text())
        timings = plant["timings"]
        aucs = {group["name"]: group["within_model_auc"] for group in plant["groups"] if group["exposures"]}

        def auc(score: str) -> str:
            return " / ".join(f"{aucs[group][score]:.2f}" for group in ("x1", "x4"))

        cached = [cell for cell, t in json.loads((run / "x1_manifest.json").read_text())["timings"]["cells"].items()
                  if t.get("cached")]
        note = f" ({len(cached)} clean cells from the cache)" if cached else ""
        lines.append(f"| {run.name.removeprefix('planted_')} | {plant['stream']['training_tokens']:,} | "
                     f"{timings['train_s']:.0f} s | {timings['detect_x1_s']:.0f} s{note} | "
                     f"{timings['detect_x4_s']:.0f} s | {auc('loss')} | {auc('min_k')} |")
    return lines


def main(folder: str) -> str:
    folder = Path(folder)
    return "\n".join([*throughput_lines(folder), "", *planted_lines(folder)]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1]))
