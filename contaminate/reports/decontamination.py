"""The "would decontamination have caught it?" table (contaminate/decontam.py's check of a run's stream before
training), as plant.md, a study's report.md and ``decontam.only``'s printed lines show it."""

from __future__ import annotations

from detect.detectors import labelled
from detect.markdown import row, table


def decontamination_section(block: dict | None, groups: list[dict]) -> list[str]:
    """plant.md's table (and a study's report.md): each detector's recall per planted group beside the loss's
    within-model AUC of the same group where the run has it (a planted run's), its false flags and the documents it
    would drop."""
    if not block:
        return []
    planted = [g for g in groups if g["exposures"] > 0]
    names = list(block["detectors"])
    loss_auc = any("within_model_auc" in g for g in planted)
    lines = ["", f"Would decontamination have caught it? Each data-side decontaminator (detect/decontam/) on this "
             f"run's stream ({block['stream']['documents']:,} documents, {block['stream']['planted_documents']:,} "
             f"carrying planted copies), the benchmark every instance of the split: the share of each group "
             f"flagged (its score's AUC against the never-planted group)"
             + (", beside the model-side loss AUC" if loss_auc else "") + ". One run: no interval.", "",
             *table(["group", "format", *names, *([f"{labelled('loss')} AUC"] if loss_auc else [])])]
    for g in planted:
        cells = []
        for name in names:
            found = block["detectors"][name]["groups"][g["name"]]
            auc = found.get("auc_vs_x0")
            cells.append(f"{found['flagged']}/{found['n']}" + (f" ({auc:.2f})" if auc is not None else "")
                         + (f", {found['unreadable']} unreadable" if found["unreadable"] else ""))
        loss = (g.get("within_model_auc") or {}).get("loss")
        fmt = block["detectors"][names[0]]["groups"][g["name"]]["format"] if names else "-"
        lines.append(row([g["name"], fmt, *cells, *([f"{loss:.3f}" if loss is not None else "-"] if loss_auc else [])]))
    last = [""] if loss_auc else []
    lines.append(row(["never in the stream (false flags)", "", *(
        f"{block['detectors'][n]['never_in_stream']['flagged']}/{block['detectors'][n]['never_in_stream']['n']}"
        for n in names), *last]))
    lines.append(row(["documents dropped: planted / background", "", *(
        f"{block['detectors'][n]['documents']['planted']} / {block['detectors'][n]['documents']['background']}"
        for n in names), *last]))
    skipped = [f"Not run, no reading: {name} ({why})" for name, why in (block.get("skipped") or {}).items()]
    return lines + ["", *skipped] if skipped else lines
