"""Each planted group's share of the training tokens, counted before any training (no model is trained or loaded
beyond its tokenizer): what a planted run's stream would hold.

    python bench/plant_shares.py                                   # the CPU profile (+experiment=planted_cpu)
    python bench/plant_shares.py plant.n=50 background.max_tokens=null

Prints the stream's documents and tokens and, per planted group, its tokens and share; the overrides are the
study's (Hydra syntax). Measured here: 38 s, mostly reading and cutting package_docs.
"""

from __future__ import annotations

import json
import sys
import time

from hydra import compose, initialize_config_dir

from contaminate.run import Run
from detect.cli import CONF_DIR

PROFILE = ["+experiment=planted_cpu", "+dataset=synth_nli", "plant=dose_ladder", "background=package_docs",
           "schedule=cosine", "seed=0"]


def main(overrides: list[str]) -> dict:
    started = time.time()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("contaminate", overrides=[*PROFILE, *overrides])
    run = Run(cfg, None)  # the planted run's setup: its groups, their datasets and formats, checked
    planted = run.lay_out(run.sample()).trained  # the stream, nothing trained
    return {"stream": planted.counts, "background": {k: v for k, v in planted.background.items() if k != "digest"},
            "groups": {name: {k: block[k] for k in ("documents", "tokens", "token_share")}
                       for name, block in planted.placed.items()}, "seconds": round(time.time() - started, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1))
