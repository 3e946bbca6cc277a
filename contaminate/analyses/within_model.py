"""What one planted run's rows say of each group under one model (plant.json's per-group blocks, written by
contaminate/planted.py; read again over many runs by contaminate/analyses/replicas.py): each instance score's
within-model AUC, members against the never-planted group; Algorithm 2's judge labels per reading and pool; the
answers' classes and follow rate. One run is one unit: no interval here.
"""

from __future__ import annotations

from contaminate.calibration.statistics import auc
from contaminate.reports.planted import ANSWER_POOLS
from detect.detectors import instance_scores
from detect.detectors.time_travel import LEAK_SCORES, SCORES
from detect.detectors.time_travel.follow import answer_classes


def within_model_auc(rows: dict[str, list[dict]], model: str = "contaminated") -> dict[str, float]:
    """Each instance score's AUC, the group's members against the never-planted group, both under ``model`` (higher
    score = member, as the detectors orient them); with them the guided completions' ROUGE-L and semantic scores and
    the leak reading's (``*_leak``, an oracle reading) where they were generated. ``model="clean"``: the same groups
    under the run's clean model (the untouched base model with plant.control=base), how far apart they are without
    the leak: with 8 against 8 an AUC of 0.62 is within chance (results/pilot_cpu's base row)."""
    def guided(cell: str) -> list[dict]:
        return [r for r in rows.get(cell, []) if r.get("instruction") == "guided"]

    members, non_members = guided(f"{model}_x_members"), guided(f"{model}_x_non_members")
    found = {}
    for name in (*instance_scores(), *SCORES, *LEAK_SCORES):
        pos = [r[name] for r in members if r.get(name) is not None]
        neg = [r[name] for r in non_members if r.get(name) is not None]
        if pos and neg and len(pos) == len(members) and len(neg) == len(non_members):
            found[name] = round(auc(pos, neg), 4)
    return found


def replicas(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """Algorithm 2's judge labels of the contaminated model's completions, per reading (``guided``: the paper's
    instruction; ``leak``: the first piece inside the leak's rendering, an oracle reading) and pool (the group's
    members, the never-planted group, the known non-members: the label rate a practitioner sees where nothing was
    trained): n, exact, near-exact. Readings and pools not generated are left out."""
    found: dict[str, dict] = {}
    for reading in ("guided", "leak"):
        for pool, cell in ANSWER_POOLS:
            labels = [r["judge"] for r in rows.get(cell, []) if r.get("instruction") == reading
                      and r.get("completion") is not None]
            if labels:
                found.setdefault(reading, {})[pool] = {"n": len(labels), "exact": labels.count("exact"),
                                                       "near_exact": labels.count("near_exact")}
    return found


def answers(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """The contaminated model's answers by class (detect/detectors/time_travel/follow.py), per reading and pool (the
    group's members, the never-planted group, the known non-members): n, classes, follow rate. A guided answer that is
    not a continuation (a restated first piece, an echoed instruction, nothing) says nothing about membership."""
    found: dict[str, dict] = {}
    for reading in ("guided", "general", "leak"):
        for pool, cell in ANSWER_POOLS:
            block = answer_classes([r for r in rows.get(cell, []) if r.get("instruction") == reading])
            if block["n"]:
                found.setdefault(reading, {})[pool] = block
    return found
