"""report.md for a study: the per-cell verdicts against ground truth, shaped like the paper's Tables 1 and 4.

Table 1 of the paper counts exact and near-exact replicas among the guided completions of the contaminated
model; Table 4 sets each algorithm's verdict beside the truth. Here both are per cell, and every verdict is
marked right or wrong, because here the truth is known.
"""

from __future__ import annotations

from pathlib import Path

from detect.judge import thresholds_line


def _verdict(flagged: bool, correct: bool) -> str:
    return f"{'contaminated' if flagged else 'clean'} {'✓' if correct else '✗'}"


def _training(checkpoint: dict) -> str:
    if checkpoint.get("first_loss") is None:  # a fine-tuning API job reports no loss curve here
        return f"job {checkpoint.get('job_id', '-')}, {checkpoint['train_seconds']:.0f} s"
    return (f"training loss {checkpoint['first_loss']:.3f} -> {checkpoint['final_loss']:.3f}, "
            f"{checkpoint['train_seconds']:.0f} s")


def _where(runtime: dict | None) -> str:
    if not runtime or not runtime.get("resolved"):
        return ""
    resolved = runtime["resolved"]
    spread = ", spread over GPUs" if resolved.get("device_map") else ""
    return f" on {resolved['device']} in {resolved['dtype']}{spread}"


def write_report(path: Path, summary: dict, manifest: dict) -> None:
    cells = summary["cells"]
    lines = [
        f"# Contamination study: {summary['dataset']} / {summary['split']} / {summary['base_model']} "
        f"+ {summary['backend']}", "",
        f"{len(manifest['member_ids'])} members trained in ({summary['format']} format), "
        f"{len(manifest['non_member_ids'])} held-out non-members, {next(iter(cells.values()))['n_instances']} "
        f"instances per cell, seed {summary['seed']}. Checkpoint "
        f"{'reused' if manifest['checkpoint']['reused'] else 'trained'} "
        f"({_training(manifest['checkpoint'])}); study {manifest['timings']['total_s']:.0f} s"
        f"{_where(manifest.get('runtime'))}.", "",
        "## Replicas among guided completions (cf. the paper's Table 1)", "",
        f"Labels by the {thresholds_line(manifest['judge'])}.", "",
        "| cell | instances | ground truth | exact | near-exact | Algorithm 2 |", "|---|---|---|---|---|---|",
    ]
    for name, cell in cells.items():
        alg2 = cell["alg2"]
        lines.append(f"| {name} | {cell['instances']} ({cell['split']}) | {cell['ground_truth']} | {alg2['exact']} | "
                     f"{alg2['near_exact']} | {_verdict(alg2['contaminated'], cell['correct']['alg2'])} |")
    scores = list(next(iter(cells.values()))["alg1"])
    first = next(iter(cells.values()))
    partition = [name for name in ("cheat", "sharded_likelihood") if name in first]
    headers = {"cheat": "Cheat? strict / lenient (replicas, best ROUGE-L)",
               "sharded_likelihood": "sharded likelihood (p)"}
    lines += ["", "## Verdicts against ground truth (cf. the paper's Tables 3 and 4)", "",
              "| cell | ground truth | " + " | ".join(f"Alg. 1 {s} (guided / general, p)" for s in scores)
              + " | Alg. 2 | " + "".join(f"{headers[name]} | " for name in partition),
              "|---|---|" + "---|" * (len(scores) + 1 + len(partition))]
    for name, cell in cells.items():
        alg1 = [f"{_verdict(r['significant'], cell['correct'][f'alg1_{s}'])} "
                f"({r['guided_mean']:.2f} / {r['general_mean']:.2f}, {r['p_value']:.3f})"
                for s, r in cell["alg1"].items()]
        extra = []
        if "cheat" in cell:
            cheat, correct = cell["cheat"], cell["correct"]
            extra.append(f"{_verdict(cheat['strict'], correct['cheat_strict'])} / "
                         f"{_verdict(cheat['lenient'], correct['cheat_lenient'])} "
                         f"({cheat['exact'] + cheat['near_exact']}, {cheat['best_score']:.2f})")
        if "sharded_likelihood" in cell:
            test = cell["sharded_likelihood"]
            extra.append(f"{_verdict(test['significant'], cell['correct']['sharded_likelihood'])} "
                         f"({test['p_value']:.3f})")
        lines.append(f"| {name} | {cell['ground_truth']} | " + " | ".join(alg1)
                     + f" | {_verdict(cell['alg2']['contaminated'], cell['correct']['alg2'])} |"
                     + "".join(f" {e} |" for e in extra))
    if first.get("membership"):
        names = list(first["membership"])
        lines += ["", "## Logit scores (mean per cell; higher = more likely seen in training)", "",
                  "| cell | ground truth | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        lines += [f"| {name} | {cell['ground_truth']} | "
                  + " | ".join(f"{cell['membership'][n]:.3f}" for n in names) + " |" for name, cell in cells.items()]
    lines += ["", "Cells right: " + ", ".join(f"{name} {round(share * len(cells))}/{len(cells)}"
                                             for name, share in summary["accuracy"].items()) + ".", "",
              "## Training loss", "", "![training loss](loss.png)", "",
              "Rows with every prompt, completion and score: `results.jsonl`. Provenance: `manifest.json`.", ""]
    path.write_text("\n".join(lines))
