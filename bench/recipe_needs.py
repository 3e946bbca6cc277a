"""How many known non-members the recipe needs (detect/judges/recipe.py): for each rule, partition size and budget,
the fewest with which its partition FPR can be bounded (one score for both labels: the recipe's joint split, where
the exact part may take the whole budget at the largest known score). Computed, not measured.

    python bench/recipe_needs.py > results/recipe_needs/needs.md     # the table docs/calibration.md includes
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from detect.judges.recipe import EXACT_SHARE, joint_ranks, rule_text  # noqa: E402

RULES = [(1, 2), (1, None), (None, 2), (None, 3), (2, 2)]
SIZES = (10, 20)
BUDGETS = (0.05, 0.01)


def needed(rule: tuple, m: int, budget: float) -> int:
    """The fewest n with which the recipe fits the rule (joint_ranks is monotone in n: more known scores never hurt)."""
    def fits(n: int) -> bool:
        return joint_ranks(n, m, rule, budget, EXACT_SHARE, True) is not None

    high = 1
    while not fits(high):
        high *= 2
    low = high // 2 + 1 if high > 1 else 1
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle + 1, high)
    return low


def table() -> str:
    columns = [(m, b) for m in SIZES for b in BUDGETS]
    lines = ["| rule (of m) | " + " | ".join(f"m = {m}, FPR <= {b:g}" for m, b in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for rule in RULES:
        lines.append(f"| {rule_text(rule, 'm')} | " + " | ".join(f"{needed(rule, m, b):,}" for m, b in columns) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(table(), end="")
