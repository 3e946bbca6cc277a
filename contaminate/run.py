"""The lab's one entry point (``python -m contaminate``; contaminate/__main__.py is its command line): a composed
config is either a study of one group (``plant=none``: members trained in, five cells; contaminate/study.py) or a
planted run (``plant=dose_ladder`` and the like: several groups in one training stream, one study folder per group;
contaminate/planted.py). Both are checked whole before anything is read or trained, and both train through the one
checkpoint store (contaminate/checkpoints.py).

The dispatch lives here, not in either kind of run, so that neither imports the other's entry: planted.py builds on
study.py's stages; study.py knows nothing of planted runs.
"""

from __future__ import annotations

from pathlib import Path

from contaminate.planted import check_planted_run, run_planted
from contaminate.study import Setup, check_study, planted_groups, run_study


def check_config(cfg) -> Setup:
    """Every component built and checked (one line on the first failure), nothing read or trained."""
    return check_planted_run(cfg) if planted_groups(cfg) else check_study(cfg)


def run_config(cfg, out_dir: Path) -> dict:
    """Everything ``python -m contaminate`` does with a composed config and a run folder; its summary."""
    return run_planted(cfg, out_dir) if planted_groups(cfg) else run_study(cfg, out_dir)
