"""Run the Time Travel detector on one partition and one model.

    python -m detect +dataset=synth_nli                        # embedded SmolLM2-135M, the test split
    python -m detect +dataset=rte split=train model=tiny_random detect.prompt_format=raw
    python -m detect +dataset=imdb dataset.path=data/imdb model=HuggingFaceTB/SmolLM2-360M-Instruct

Writes runs/detect/<time>_<dataset>_<model>/ with results.jsonl, summary.json, report.md and config.yaml.
"""

import sys
from pathlib import Path

import hydra

from detect.cli import check_overrides, one_line_errors


@hydra.main(version_base="1.3", config_path="../conf", config_name="detect")
def main(cfg) -> None:
    from hydra.core.hydra_config import HydraConfig

    from detect.pipeline import main as run

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    with one_line_errors():
        summary = run(cfg, out_dir)
    from detect.detectors.time_travel import Algorithm1
    from detect.judges.threshold import thresholds_line
    from detect.pipeline import uninformative, verdicts

    print(out_dir)
    if uninformative(summary):
        print(f"Algorithm 1 and 2: {uninformative(summary)}; their rules' outcomes follow")
    elif uninformative(summary, Algorithm1):
        print(f"Algorithm 1: {uninformative(summary, Algorithm1)}; its rule's outcome follows")
    if "alg1" in summary:
        print("Algorithm 1: " + ", ".join(f"{score} p={result['p_value']:.4f}"
                                          for score, result in summary["alg1"].items()))
    if "alg2" in summary:
        alg2 = summary["alg2"]
        print(f"Algorithm 2: {alg2['exact']} exact, {alg2['near_exact']} near-exact -> "
              f"{'contaminated' if alg2['contaminated'] else 'not contaminated'} ({thresholds_line(summary['judge'])})")
    print("verdicts: " + ", ".join(f"{name} {'contaminated' if flagged else 'clean'}"
                                   for name, flagged in verdicts(summary).items()))


if __name__ == "__main__":
    with one_line_errors():
        sys.argv = check_overrides(sys.argv)
    main()
