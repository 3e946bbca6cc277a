"""Two runs of the suite compared per test file, from pytest's ``--durations=0`` lines (setup, call and teardown
of each test; pytest leaves out those under 5 ms):

    python bench/suite_durations.py results/suite_46/durations_a452878.txt results/suite_46/durations_4cd7dfe.txt

Prints the sum of each run's durations and every file whose sum moved by 10 s or more. A run on two xdist workers
gives each test one core where a one-worker run gave it two: its sums are not wall time, and run for run they are
inflated by what runs beside each test."""
import re
import sys
from collections import defaultdict

from detect.markdown import row, table


def per_file(path):
    files, tests = defaultdict(float), defaultdict(float)
    for line in open(path, errors="replace"):
        m = re.match(r"^([\d.]+)s (call|setup|teardown)\s+(tests/[^:]+)::(\S.*)$", line.strip())
        if m:
            files[m.group(3)] += float(m.group(1))
            tests[m.group(3) + "::" + m.group(4)] += float(m.group(1))
    return files, tests

(old, old_t), (new, new_t) = per_file(sys.argv[1]), per_file(sys.argv[2])
print(f"sum of test durations: old {sum(old.values()):.0f} s over {len(old_t)} tests, "
      f"new {sum(new.values()):.0f} s over {len(new_t)} tests")
print("\n".join(table(["file", "old s", "new s", "change s"])))
for f in sorted(set(old) | set(new), key=lambda f: -(new.get(f, 0) - old.get(f, 0))):
    if abs(new.get(f, 0) - old.get(f, 0)) >= 10:
        print(row([f, f"{old.get(f, 0):.0f}", f"{new.get(f, 0):.0f}", f"{new.get(f, 0) - old.get(f, 0):+.0f}"]))
