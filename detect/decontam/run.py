"""``python -m detect.decontam``: the benchmark partition against a user's stream, every decontaminator in one pass.

Setup checks everything before the stream is read (the dataset, the detectors' settings, the stream's files, n
against the instances); the stream is then read once with a progress bar in bytes; nothing is written until the
whole stream has been read, so a bad line deep in a corpus costs the reading, never a half-written result.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from detect.datasets import load_split
from detect.decontam import build_detectors, scan
from detect.decontam.stream import stream_documents, stream_files
from detect.errors import InputError
from detect.markdown import table


def needs_tokenizer(detectors_cfg) -> bool:
    return any(node is not None and node.get("enabled", True) and node.get("unit") == "tokens"
               for node in (detectors_cfg or {}).values())


def summarize(found: dict[str, dict]) -> dict[str, dict]:
    """Per detector: its rule and settings, instances flagged of those it can read, unreadable ones, the stream
    documents it would drop, its seconds and units a second."""
    blocks = {}
    for name, result in found.items():
        findings, seconds = result["findings"], result["seconds"]
        blocks[name] = {"rule": findings.rule, "flagged": len(findings.flagged), "readable": len(findings.scores),
                        "unreadable": len(findings.unreadable), "documents_flagged": len(findings.flagged_documents()),
                        "seconds": seconds, "units_read": findings.units_read,
                        "units_per_s": round(findings.units_read / seconds["scan_s"]) if seconds["scan_s"] else None}
    return blocks


def run(cfg, out_dir: Path) -> dict:
    from omegaconf import OmegaConf
    from tqdm.auto import tqdm

    from detect.cli import instantiate

    if cfg.get("stream") in (None, "", []):
        raise InputError("no stream given: add stream=<file or folder> (or stream=[a.jsonl,docs/]), the training "
                         "corpus to search")
    paths = [cfg.stream] if isinstance(cfg.stream, str) else list(cfg.stream)
    files = stream_files(paths)
    split = cfg.split or cfg.dataset.default_split
    benchmark = {example.instance_id: example.full_text for example in load_split(cfg.dataset, split)}
    tokenizer = None
    if needs_tokenizer(cfg.decontam.detectors):
        from detect.models.loading import load_tokenizer

        tokenizer = load_tokenizer(instantiate(cfg.model).path)
    detectors = build_detectors(cfg.decontam.detectors, tokenizer=tokenizer, seed=cfg.seed)
    if not detectors:
        raise InputError("every decontaminator is disabled; enable one (decontam.detectors.<name>.enabled=true)")

    started = time.perf_counter()
    read = {"documents": 0}
    with tqdm(total=sum(f.stat().st_size for f in files), unit="B", unit_scale=True, desc="stream",
              disable=None) as bar:  # no bar where stderr is no terminal
        def counted():
            for text in stream_documents(files, text_field=cfg.text_field, progress=bar.update):
                read["documents"] += 1
                yield text

        found = scan(detectors, benchmark, counted(), batch_size=cfg.decontam.batch_size)
    seconds = round(time.perf_counter() - started, 2)

    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "findings.jsonl").open("w") as handle:
        for key in benchmark:
            row = {"instance_id": key}
            for name, result in found.items():
                findings = result["findings"]
                row[name] = None if key in findings.unreadable else {
                    "score": findings.scores.get(key), "flagged": key in findings.flagged,
                    "documents": sorted(findings.documents.get(key, ()))}
            handle.write(json.dumps(row) + "\n")
    summary = {"dataset": cfg.dataset.key, "split": split, "instances": len(benchmark),
               "stream": {"files": [str(f) for f in files], "documents": read["documents"], "seconds": seconds},
               "detectors": summarize(found),
               "settings": {detector.name: detector.describe() for detector in detectors}}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    (out_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    (out_dir / "report.md").write_text(report(summary))
    return summary


def report(summary: dict) -> str:
    rows = [[name, block["rule"], f"{block['flagged']}/{block['readable']}", block["unreadable"],
             block["documents_flagged"], block["units_per_s"]] for name, block in summary["detectors"].items()]
    return (f"# Decontamination: {summary['dataset']} {summary['split']} ({summary['instances']} instances) in "
            f"{summary['stream']['documents']:,} documents\n\n"
            + "\n".join(table(["detector", "flags an instance when", "flagged", "unreadable", "documents matched",
                               "units/s"], rows))
            + "\n\nAn unreadable instance (shorter than the detector's n) is neither found nor clean. findings.jsonl "
              "lists each instance's score and the documents that matched it.\n")
