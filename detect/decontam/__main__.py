"""Would decontamination have found the benchmark in this corpus? Every data-side decontaminator on a user's stream.

    python -m detect.decontam +dataset=humaneval stream=corpus/              # a folder of .jsonl / text files
    python -m detect.decontam +dataset=synth_nli stream=[a.jsonl,b.txt] decontam.detectors.embedding.enabled=false

Writes runs/decontam/<time>_<dataset>/: findings.jsonl (per instance, each detector's score, flag and matching
documents), summary.json and report.md; prints one line per detector.
"""

import sys
from pathlib import Path

import hydra

from detect.cli import check_overrides, one_line_errors


@hydra.main(version_base="1.3", config_path="../../conf", config_name="decontam")
def main(cfg) -> None:
    from hydra.core.hydra_config import HydraConfig

    from detect.decontam.run import run

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    with one_line_errors():
        summary = run(cfg, out_dir)
    print(out_dir)
    for name, block in summary["detectors"].items():
        print(f"{name}: {block['flagged']}/{block['readable']} instances flagged"
              + (f" ({block['unreadable']} unreadable)" if block["unreadable"] else "")
              + f", {block['documents_flagged']} of {summary['stream']['documents']} documents; {block['rule']}")


if __name__ == "__main__":
    with one_line_errors():
        sys.argv = check_overrides(sys.argv)
    main()
