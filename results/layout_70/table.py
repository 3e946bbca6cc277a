"""The README's tables from the committed logs: each run's files compared (compare_runs' output for the last step:
``<run>-<last>.txt``, or ``<run>.txt`` for the first table's), its differences at each step (``cmp-<commit>.out``'s
``TOTAL differences``) and its seconds before and after the last step (the logs' ``/usr/bin/time`` lines); then the
study that reads the known non-members inside its cells (``cmp_known-<commit>.out``, cmp_known.sh's logs, from the
step that renamed them on), where a step has one.

    python results/layout_70/table.py 4f4e4db 4aaa03a b739f12 2a4fbd4 ef63d03 7c6cb73 > results/layout_70/table.md
    python results/layout_70/table.py e2e1ba3 d88e144 b49e750 448376d 489f696 03ef49a c507af8 \
        > results/layout_70/table-e2e1ba3.md
    python results/layout_70/table.py 54aa5ab efe3942 b1db91a 88923c9 bd99127 > results/layout_70/table-54aa5ab.md
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from detect.markdown import row, table  # noqa: E402

HERE = Path(__file__).parent
RUNS = ("planted", "groups", "decontam", "study")


def differences(log: str) -> dict[str, int]:
    """Run -> compare_runs' TOTAL differences in a cmp.sh log."""
    found, run = {}, None
    for line in log.splitlines():
        if line.startswith("== "):
            run = line[3:].strip()
        elif line.startswith("TOTAL differences:") and run:
            found[run] = int(line.split(":")[1])
    return found


def seconds(log: str, commit: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(rf"^{commit} (\w+) rc 0 ([\d.]+) s", log, re.M)}


def main() -> None:
    before, *steps = sys.argv[1:]
    logs = {step: (HERE / f"cmp-{step}.out").read_text() for step in steps}
    last = steps[-1]
    header = ["run", "files compared", *(f"differences, {before} -> {step}" for step in steps),
              f"seconds, {before} / {last}"]
    print("\n".join(table(header)))
    for run in RUNS:
        full = HERE / f"{run}-{last}.txt"
        compared = sum(1 for line in (full if full.is_file() else HERE / f"{run}.txt").read_text().splitlines()
                       if re.search(r": (identical|\d+ differences|only in the \w+ run)$", line))
        counts = [f"**{differences(logs[step])[run]}**" for step in steps]
        print(row([f"`{run}`", compared, *counts,
                   f"{seconds(logs[last], before)[run]:.1f} / {seconds(logs[last], last)[run]:.1f}"]))
    known = {step: (HERE / f"cmp_known-{step}.out").read_text() for step in steps
             if (HERE / f"cmp_known-{step}.out").is_file()}
    if last not in known:
        return
    compared = sum(1 for line in known[last].splitlines() if re.search(r": (identical|\d+ differences|only in)", line))
    print(row(["`known`", compared, *(f"**{differences(known[step])['known']}**" if step in known else "-"
                                      for step in steps),
               f"{seconds(known[last], before)['known']:.1f} / {seconds(known[last], last)['known']:.1f}"]))

if __name__ == "__main__":
    main()
