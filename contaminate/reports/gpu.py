"""The GPU checks as docs/gpu.md shows them: bench/bench_gpu.py's JSON (training and generation throughput) and the
small planted runs' plant.json and per-group manifests (bench/gpu_check.sh), from a results folder.

    python -m contaminate.reports.gpu results/gpu_h200 > results/gpu_h200/table.md
    python -m contaminate.reports.gpu results/gpu_h200_1b > results/gpu_h200_1b/table.md
    python -m contaminate.reports.gpu results/gpu_h100_1b > results/gpu_h100_1b/table.md
    python -m contaminate.reports.includes docs/gpu.md

A training rate whose run did not keep a finite loss is printed as no measurement: the Trainer reports a non-finite
step's loss as the running mean (0 from the first step) unless told otherwise, so a mean loss of 0 on random
weights is read as such a run too. A planted run of which only its log came back gives the AUCs its log prints. A
run with more doses than x1 and x4 (RUNS=humaneval: plant=doubling) gets a second table, every dose's within-model
AUC and Algorithm 2's labels under both readings.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from detect.markdown import row as markdown_row
from detect.markdown import table


def training_loss(bench_json: Path, training: dict) -> float | None:
    """The run's mean training loss: the JSON's (bench_gpu.py since it kept one), else the Trainer's own line in
    the log beside it; None where neither says."""
    if "train_loss" in training:
        return training["train_loss"]
    log = bench_json.with_suffix(".log")
    found = re.search(r"'train_loss': '([^']+)'", log.read_text()) if log.exists() else None
    return float(found.group(1)) if found else None


def throughput_lines(folder: Path) -> list[str]:
    lines = table(["bench/bench_gpu.py", "parameters", "tokens/s", "model TFLOP/s", "of bf16 peak", "peak memory"])
    for path in sorted(folder.glob("bench_*.json")):
        bench = json.loads(path.read_text())
        args, training = bench["args"], bench.get("training")
        if training:
            what = [f"training, {args['attn']}, {args['batch_size']} x {args['doc_tokens']} tokens a step "
                    f"({training['steps_timed']} steps timed)", f"{training['parameters'] / 1e9:.2f}B"]
            loss = training_loss(path, training)
            if loss is not None and (not math.isfinite(loss) or loss == 0):
                lines.append(markdown_row([*what, f"no measurement: mean training loss {loss:g}, non-finite steps",
                                           "", "", ""]))
            else:
                lines.append(markdown_row([*what, f"{training['tokens_per_s']:,}", training["model_tflops"],
                                           f"{training['mfu']:.1%}", f"{training['max_memory_gib']} GiB"]))
        for batch, tokens_per_s in bench.get("generation_tokens_per_s", {}).items():
            lines.append(markdown_row([f"generation ({args['prompt_tokens']}-token prompts, {args['new_tokens']} new "
                                       f"tokens), batch {batch}", "", f"{tokens_per_s:,}", "", "", ""]))
    device = json.loads(next(folder.glob("bench_*.json")).read_text())["device"]
    return [f"On one {device}, bf16 (fp32 master weights, bf16 autocast, padding-free batches):", "", *lines]


def group_manifest(run: Path, group: str) -> dict:
    """A group's manifest: groups/<name>/manifest.json (planted runs since issue 33), <name>_manifest.json before."""
    for path in (run / "groups" / group / "manifest.json", run / f"{group}_manifest.json"):
        if path.exists():
            return json.loads(path.read_text())
    raise FileNotFoundError(f"no manifest of group {group} in {run}")


def planted_row(run: Path) -> str:
    plant = json.loads((run / "plant.json").read_text())
    timings = plant["timings"]
    aucs = {group["name"]: group["within_model_auc"] for group in plant["groups"] if group["exposures"]}

    def auc(score: str) -> str:
        return " / ".join(f"{aucs[group][score]:.2f}" for group in ("x1", "x4"))

    cached = [cell for cell, t in group_manifest(run, "x1")["timings"]["cells"].items() if t.get("cached")]
    note = f" ({len(cached)} clean cells from the cache)" if cached else ""
    return markdown_row([run.name.removeprefix("planted_"), f"{plant['stream']['training_tokens']:,}",
                         f"{timings['train_s']:.0f} s", f"{timings['detect_x1_s']:.0f} s{note}",
                         f"{timings['detect_x4_s']:.0f} s", auc("loss"), auc("min_k")])


def logged_row(log: Path) -> str:
    """A planted run of which only the log came back: the Trainer's own runtime and the AUCs the run printed."""
    text = log.read_text()
    runtime = float(re.search(r"'train_runtime': '([^']+)'", text).group(1))
    aucs = {name: dict(re.findall(r"(\w+) ([\d.]+)", scores)) for name, scores in
            re.findall(r"^group (x\d+) .*within-model AUC (.*)$", text, flags=re.M)}
    return markdown_row([f"{log.stem.removeprefix('planted_')} (log only)", "", f"{runtime:.0f} s (Trainer's runtime)",
                         "", "", f"{aucs['x1']['loss']} / {aucs['x4']['loss']}",
                         f"{aucs['x1']['min_k']} / {aucs['x4']['min_k']}"])


def planted_lines(folder: Path) -> list[str]:
    lines = table(["planted run", "training tokens", "train", "detect x1", "detect x4", "loss AUC x1 / x4",
                   "Min-K% AUC x1 / x4"])
    runs = {path.name: planted_row(path) for path in folder.glob("planted_*") if path.is_dir()}
    logs = {path.stem: logged_row(path) for path in folder.glob("planted_*.log") if path.stem not in runs}
    return lines + [row for _, row in sorted({**runs, **logs}.items())]


def replicas(group: dict, reading: str) -> str:
    """Algorithm 2's labels of a group's members under one reading: exact / near-exact of n."""
    members = group["replicas"][reading]["members"]
    return f"{members['exact']} / {members['near_exact']} of {members['n']}"


def dose_lines(folder: Path) -> list[str]:
    """Each run planted at more doses than x1 and x4: within-model AUC (loss, Min-K%) and Algorithm 2's labels of
    the members (the guided instruction, and the leak's rendering, an oracle) by dose."""
    lines = []
    for run in sorted(path for path in folder.glob("planted_*") if path.is_dir()):
        plant = json.loads((run / "plant.json").read_text())
        groups = sorted((g for g in plant["groups"] if g["exposures"]), key=lambda g: g["exposures"])
        if [g["name"] for g in groups] == ["x1", "x4"]:
            continue
        lines += ["", f"{run.name.removeprefix('planted_')} ({plant['dataset']}, {plant['plant']}): one model, "
                  f"{groups[0]['n']} members a dose against {plant['groups'][0]['n']} never planted, no interval; "
                  "Algorithm 2 as exact / near-exact of the members", "",
                  *table(["dose", "token share", "loss AUC", "Min-K% AUC", "Algorithm 2, guided",
                          "Algorithm 2, leak (oracle)"])]
        for g in groups:
            aucs = g["within_model_auc"]
            lines.append(markdown_row([f"x{g['exposures']}", f"{g['token_share']:.2%}", f"{aucs['loss']:.2f}",
                                       f"{aucs['min_k']:.2f}", replicas(g, "guided"), replicas(g, "leak")]))
    return lines


def main(folder: str) -> str:
    folder = Path(folder)
    return "\n".join([*throughput_lines(folder), "", *planted_lines(folder), *dose_lines(folder)]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1]))
