"""What each detector costs on one study cell, on the embedded model: seconds and tokens, each detector alone on a
fresh model (no memo shared), as ratios to the membership scores measured in the same run.

    python bench/detector_costs.py [--format metadata] [--detectors all] [--out results/detector_costs/metadata.md]

The cell is a study's: 10 synth_nli instances of a 100-instance pool (the partition-level detectors read it), 50
known non-members held out (ReCaLL's prefix, the performance test's comparison), read as ``--format`` renders them
(``LeakReader``), every detector at its ``conf/detect/default.yaml`` settings, the ones off by default included.
Time Travel's guided and general completions (what Algorithms 1 and 2 read) are timed as one row. Tokens: those the
model scored (log-probabilities) and generated. Run it on an otherwise idle machine: it measures wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    import torch
    from omegaconf import OmegaConf

    from contaminate.regime import chat_renderer
    from contaminate.regime.layouts import LeakReader, build_format
    from detect.datasets import disjoint_pools, load_split, sample
    from detect.detectors import build
    from detect.detectors.base import Evidence
    from detect.judges.threshold import ThresholdJudge
    from detect.markdown import row, table
    from detect.models import embedded_smollm2, load
    from detect.models.hf import HFModel
    from detect.pipeline import detect_partition
    from detect.runtime import resolve_placement

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", default="metadata")
    parser.add_argument("--detectors", default="all", help="comma-separated names, or all")
    parser.add_argument("--dtype", default="auto", help="runtime.dtype: auto, fp32 or bf16 (detect/runtime.py)")
    parser.add_argument("--out", type=Path, help="also write the table (and the machine line) to this file")
    args = parser.parse_args()
    placement = resolve_placement("cpu", args.dtype)
    model, tokenizer = load(embedded_smollm2(), placement)
    dataset = OmegaConf.load("conf/dataset/synth_nli.yaml")
    detect_cfg = OmegaConf.load("conf/detect/default.yaml")
    fmt = build_format(OmegaConf.load(f"conf/format/{args.format}.yaml"))
    reader = LeakReader(fmt, dataset, chat_renderer(tokenizer, fmt.name))
    pool, heldout = disjoint_pools(load_split(dataset, "test"), [100, 50], seed=0)
    instances = sample(pool, 10, seed=0)
    settings = OmegaConf.to_container(detect_cfg.detectors)
    for node in settings.values():
        node["enabled"] = True
    detectors = [d for d in build(settings) if args.detectors == "all" or d.name in args.detectors.split(",")]

    def fresh() -> HFModel:  # a new LanguageModel each time: its memo would answer a repeated text for free
        return HFModel(model, tokenizer, progress=False, prompt_format=fmt.prompt_format,
                       max_new_tokens=detect_cfg.max_new_tokens)

    def evidence(language_model) -> Evidence:
        return Evidence(dataset, "test", instances, pool, model=language_model, seed=0, reader=reader,
                        known_non_members=heldout)

    header = (f"torch {torch.__version__}, {torch.get_num_threads()} threads, embedded SmolLM2-135M "
              f"{placement.dtype}, format {args.format}: 10 instances, pool 100, held-out 50")
    print(header)
    rows = []
    language_model = fresh()
    started = time.perf_counter()
    detect_partition(instances, dataset=dataset, split="test", model=language_model, judge=ThresholdJudge(),
                     stop=detect_cfg.stop)
    rows.append(("alg1 + alg2 (guided and general completions)", time.perf_counter() - started, language_model))
    for detector in detectors:
        if detector.name in ("alg1", "alg2"):
            continue
        language_model = fresh()
        cell = evidence(language_model)
        reason = detector.skipped(cell)
        if reason:
            print(f"{detector.name}: skipped ({reason})")
            continue
        started = time.perf_counter()
        language_model.prefetch(detector.logit_requests(cell))
        if detector.level == "partition":
            detector.run(cell)
        else:
            detector.score(cell, instances)
        rows.append((detector.name, time.perf_counter() - started, language_model))
    baseline = next(seconds for name, seconds, _ in rows if name == "membership")
    lines = table(["detector", "seconds per cell", "x membership", "tokens scored", "tokens generated"])
    for name, seconds, used in rows:
        counted = used.counters()
        lines.append(row([name, f"{seconds:.1f}", f"{seconds / baseline:.1f}", f"{counted['scored_tokens']:,}",
                          f"{counted['generated_tokens']:,}"]))
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"{header}\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
