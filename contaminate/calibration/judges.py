"""Judge agreement: the LLM judge against the threshold judges, and each against the ground truth."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from contaminate.calibration.studies import Instance


def agreement(a: Sequence[str], b: Sequence[str], classes: Sequence[str]) -> dict:
    """Share of equal labels, Cohen's kappa (None when undefined: one class on both sides) and the confusion
    matrix (rows: ``a``, columns: ``b``, in ``classes`` order)."""
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    same = float(np.mean([x == y for x, y in zip(a, b)]))
    kappa = None if len(set(a) | set(b)) < 2 else float(cohen_kappa_score(a, b, labels=list(classes)))
    return {"agreement": same, "kappa": kappa, "classes": list(classes),
            "confusion": confusion_matrix(a, b, labels=list(classes)).tolist()}


def judge_agreement(instances: Sequence[Instance], threshold_labels: dict[str, list[str]]) -> dict | None:
    """For studies run with judge=llm: the LLM judge against the threshold judges (default and calibrated
    thresholds; labels exact / near_exact / none / unparseable) and each against ground truth (replica claimed:
    exact or near-exact, vs member of the contaminated model). None if no study used an LLM judge."""
    judged = [(p, i) for p, i in enumerate(instances) if i.judge == "llm" and i.guided.get("judge")]
    if not judged:
        return None
    from detect.judges.threshold import LABELS

    llm = [i.guided["judge"] for _, i in judged]
    truth = ["member" if i.positive else "clean" for _, i in judged]
    claimed = {"llm": llm, **{name: [labels[p] for p, _ in judged] for name, labels in threshold_labels.items()}}
    result = {"n": len(judged), "unparseable": llm.count("unparseable")}
    for name in threshold_labels:
        result[f"llm_vs_{name}"] = agreement(llm, claimed[name], LABELS)
    for name, labels in claimed.items():
        replica = ["member" if label in ("exact", "near_exact") else "clean" for label in labels]
        result[f"{name}_vs_truth"] = agreement(replica, truth, ("member", "clean"))
    return result
