"""Tables that scripts wrote into results/ copied into the docs between marker lines, so that no number in the
docs is typed by hand:

    <!-- include results/order_tests_power/power.md -->
    ...the file's content...
    <!-- end include -->

    python -m contaminate.reports.includes docs/detectors.md            # rewrite the blocks from their files
    # exit 1 where a block differs (tests/test_docs.py)
    python -m contaminate.reports.includes docs/detectors.md --check
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"(<!-- include (?P<path>\S+) -->\n)(?P<body>.*?)(<!-- end include -->)", re.DOTALL)


def filled(text: str) -> str:
    """``text`` with every include block's body replaced by its file's content."""
    return BLOCK.sub(lambda m: m.group(1) + (ROOT / m.group("path")).read_text().rstrip("\n") + "\n" + m.group(4),
                     text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for path in args.docs:
        text = path.read_text()
        if filled(text) != text:
            stale.append(str(path))
            if not args.check:
                path.write_text(filled(text))
    if args.check and stale:
        sys.exit(f"stale include blocks in {', '.join(stale)}: run python -m contaminate.reports.includes "
                 f"{' '.join(stale)}")


if __name__ == "__main__":
    main()
