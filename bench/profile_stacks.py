"""Where a profiled run's time went: py-spy's collapsed stacks summed by stage, and the frames that spent it.

    py-spy record --rate 10 --format raw -o run.stacks -- python -m contaminate +dataset=synth_nli
    python bench/profile_stacks.py run.stacks            # or run.stacks.gz

A sample's stage is the first of these its stack passes through: generation (``generate``), training (the trainer's
``train``), scoring (detect/models/logits.py), the semantic model (sentence_transformers), loading
(``from_pretrained``); the rest is "other" (the judge, the bootstrap, the detectors' own arithmetic, writing). Shares of
samples, so of wall time where the process is the only one running.
"""

from __future__ import annotations

import argparse
import gzip
from collections import Counter
from pathlib import Path

from detect.markdown import table


def _method(names: list[str], method: str) -> bool:  # "Class.method" or "method", as py-spy names a frame
    return any(name == method or name.endswith("." + method) for name in names)


STAGES = (("generation", lambda names, files: _method(names, "generate")),
          ("training", lambda names, files: _method(names, "train")),
          ("scoring (logits)", lambda names, files: any(f.endswith("logits.py") for f in files)),
          ("semantic model", lambda names, files: any("sentence_transformers" in f for f in files)),
          ("loading", lambda names, files: _method(names, "from_pretrained")))


def frames(line: str) -> tuple[list[str], list[str], int]:
    """One collapsed line: its frames' function names, their files, its sample count."""
    stack, _, count = line.rstrip().rpartition(" ")
    names, files = [], []
    for frame in stack.split(";"):
        name, _, where = frame.partition(" (")
        names.append(name)
        files.append(where.split(":")[0])
    return names, files, int(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stacks", type=Path, help="py-spy record --format raw output (optionally .gz)")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    opened = gzip.open(args.stacks, "rt") if args.stacks.suffix == ".gz" else args.stacks.open()
    stages, own, total = Counter(), Counter(), 0
    with opened as lines:
        for line in lines:
            names, files, n = frames(line)
            total += n
            stages[next((stage for stage, hit in STAGES if hit(names, files)), "other")] += n
            own[f"{names[-1]} ({files[-1].split('site-packages/')[-1]})"] += n
    print(f"{total} samples")
    print("\n".join(table(["stage", "share of samples"], ([stage, f"{n / total:.1%}"] for stage, n in
                                                          stages.most_common()))))
    print("\n" + "\n".join(table([f"the {args.top} frames that spent most (self)", "share"],
                                ([frame, f"{n / total:.1%}"] for frame, n in own.most_common(args.top)))))


if __name__ == "__main__":
    main()
