"""Would decontamination have caught the leak? Every data-side decontaminator (detect/decontam/) on the stream a
planted run trains on, scored against where the lab put every copy (issue 48).

    block = planted_decontamination(planted, draw, groups, datasets, cfg.decontam, tokenizer=tok, seed=0)
    record["decontamination"] = block          # plant.json; plant.md's decontamination table

The benchmark each detector indexes is what a model builder indexes: every instance of each planted dataset's split
(the planted groups, the never-planted group, the known non-members and the rest), each as its bare text
(``Example.full_text``: no title, no label), keyed ``<dataset>/<id>``. The stream is the one the model trains on,
every copy of every planted document among the background, read before training. Per detector:

- recall by group: the share of a planted group's instances flagged (its dose and format are the group's);
- false flags: the never-planted groups' instances flagged, and every other instance of the split (none of them is
  in the stream: each flag is a false positive), with the instance-level precision of the flags;
- documents: the stream documents it would drop, as planted copies or background (precision over the background:
  the share of dropped documents that carry a planted copy), and the share of planted copies it drops;
- the score's AUC, each planted group against its dataset's never-planted group: the data-side counterpart of the
  model-side detectors' within-model AUC, beside them in plant.md.

One run is one unit (one member draw): no interval here; a measurement over runs pools them (results/decontam_cpu).
"""

from __future__ import annotations

import time
from typing import Sequence

from contaminate.regime.plant import PlantedGroup, never_planted_group
from detect.datasets import load_split
from detect.decontam import build_detectors, scan


def key_of(dataset: str, instance_id: int) -> str:
    return f"{dataset}/{instance_id}"


def score_auc(scores: dict, positives: Sequence[str], negatives: Sequence[str]) -> float | None:
    """AUC of a detector's score, ``positives`` against ``negatives`` (ties count half); None where either side has
    no readable instance."""
    from contaminate.calibration.statistics import auc

    pos = [scores[key] for key in positives if key in scores]
    neg = [scores[key] for key in negatives if key in scores]
    if not pos or not neg:
        return None
    return round(auc(pos, neg), 4)


def stream_check(decontam_cfg, seed: int, draw, groups: Sequence[PlantedGroup], stream, datasets: dict,
                 formats: dict[str, str], *, tokenizer) -> dict | None:
    """The run's ``decontamination`` block (``planted_decontamination``) with its seconds, read before training; None
    where ``decontam.enabled`` is false. ``decontam_cfg``: the run's ``decontam`` block (None: none composed);
    ``seed``: the run's."""
    from omegaconf import OmegaConf

    if not (decontam_cfg or {}).get("enabled", False):
        return None
    started = time.time()
    skipped = {}
    if tokenizer is None:  # an API model (contaminate=openai): no local tokenizer to count token n-grams in
        kept = {}
        for name, node in decontam_cfg.detectors.items():
            if node is not None and node.get("enabled", True) and node.get("unit") == "tokens":
                skipped[name] = "no local tokenizer (an API model): its token n-grams cannot be counted"
            else:
                kept[name] = node
        decontam_cfg = OmegaConf.create({"detectors": kept, "batch_size": decontam_cfg.batch_size})
    block = planted_decontamination(stream, draw, groups, datasets, decontam_cfg, tokenizer=tokenizer, seed=seed,
                                    formats=formats)
    return {**block, "skipped": {**skipped, **block["skipped"]}, "seconds": round(time.time() - started, 1)}


def planted_decontamination(stream, draw, groups: Sequence[PlantedGroup], datasets: dict, decontam_cfg, *,
                            tokenizer, seed: int, formats: dict[str, str]) -> dict:
    """plant.json's ``decontamination`` block for one planted stream (module docstring). ``stream``: the planted
    ``Document`` list; ``datasets``: each group's dataset config by group name; ``formats``: each group's format."""
    by_dataset: dict[str, tuple] = {}  # dataset key -> (its config, its planted split)
    for group in groups:
        by_dataset.setdefault(draw.dataset_of[group.name], (datasets[group.name], draw.split_of(group)))
    benchmark = {key_of(key, example.instance_id): example.full_text
                 for key, (dataset, split) in by_dataset.items() for example in load_split(dataset, split)}
    group_keys = {g.name: [key_of(draw.dataset_of[g.name], e.instance_id) for e in draw.groups[g.name]]
                  for g in groups}
    planted_keys = {key for g in groups if g.planted for key in group_keys[g.name]}
    member_documents = {index for index, document in enumerate(stream) if document.members}

    detectors = build_detectors(decontam_cfg.detectors, tokenizer=tokenizer, seed=seed)
    found = scan(detectors, benchmark, [document.text for document in stream], batch_size=decontam_cfg.batch_size,
                 skip_unfit=True)
    blocks, skipped = {}, {}
    for detector in detectors:
        if "skipped" in found[detector.name]:
            skipped[detector.name] = found[detector.name]["skipped"]
            continue
        findings, seconds = found[detector.name]["findings"], found[detector.name]["seconds"]
        by_group = {}
        for group in groups:
            keys = group_keys[group.name]
            readable = [key for key in keys if key not in findings.unreadable]
            block = {"dataset": draw.dataset_of[group.name], "format": formats.get(group.name),
                     "exposures": group.exposures, "n": len(keys), "unreadable": len(keys) - len(readable),
                     "flagged": sum(key in findings.flagged for key in keys),
                     "flagged_ids": sorted(int(key.rsplit("/", 1)[1]) for key in keys if key in findings.flagged)}
            block["flag_rate"] = round(block["flagged"] / len(keys), 4) if keys else None
            if group.planted:
                x0 = never_planted_group(groups, group)
                block["auc_vs_x0"] = score_auc(findings.scores, keys, group_keys[x0.name])
            by_group[group.name] = block
        never = [key for key in benchmark if key not in planted_keys]  # none of these is in the stream
        false_flags = sum(key in findings.flagged for key in never)
        true_flags = sum(key in findings.flagged for key in planted_keys)
        dropped = findings.flagged_documents()
        blocks[detector.name] = {
            "settings": detector.describe(), "rule": findings.rule, "seconds": seconds,
            "groups": by_group,
            "never_in_stream": {"n": len(never), "flagged": false_flags,
                                "flagged_keys": sorted(key for key in never if key in findings.flagged),
                                "unreadable": sum(key in findings.unreadable for key in never)},
            "instance_precision": round(true_flags / (true_flags + false_flags), 4) if true_flags + false_flags
            else None,
            "documents": {"dropped": len(dropped), "planted": len(dropped & member_documents),
                          "background": len(dropped - member_documents),
                          "planted_share_dropped": round(len(dropped & member_documents) / len(member_documents), 4)
                          if member_documents else None,
                          "precision": round(len(dropped & member_documents) / len(dropped), 4) if dropped else None},
        }
    return {"benchmark": {key: {"split": split, "instances": sum(k.startswith(f"{key}/") for k in benchmark)}
                          for key, (_, split) in by_dataset.items()},
            "stream": {"documents": len(stream), "planted_documents": len(member_documents)},
            "detectors": blocks, "skipped": skipped}

