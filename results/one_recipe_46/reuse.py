"""For each run folder of an after-run on the before-run's cache: was every checkpoint reused and every cell read
from the cache? (A moved checkpoint or cell key trains or detects again: reused false, a cell missing below.)

    python results/one_recipe_46/reuse.py /tmp/cmp/after/*
"""

import json
import sys
from pathlib import Path

for run in map(Path, sys.argv[1:]):
    for manifest_path in sorted(run.glob("manifest.json")) + sorted(run.glob("groups/*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        cells = manifest["timings"]["cells"]
        cached = manifest["cached_cells"]
        control = manifest.get("control_checkpoint") or {}
        print(f"{manifest_path.parent.relative_to(run.parent)}: checkpoint reused {manifest['checkpoint']['reused']}, "
              f"control reused {control.get('reused', '-')}, cells from the cache {len(cached)} of {len(cells)}")
