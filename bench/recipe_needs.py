"""How many known non-members the recipe needs (detect/judges/recipe.py): for each rule, partition size and budget,
the fewest with which its partition FPR can be bounded (each part's threshold at the largest known score, the
budget split evenly between the exact and the near-exact parts where the rule has both). Computed, not measured.

    python bench/recipe_needs.py > results/recipe_needs/needs.md     # the table docs/calibration.md includes
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from detect.judges.recipe import EXACT_SHARE, n_needed, rule_text, shares  # noqa: E402

RULES = [(1, 2), (1, None), (None, 2), (None, 3), (2, 2)]
SIZES = (10, 20)
BUDGETS = (0.05, 0.01)


def needed(rule: tuple, m: int, budget: float) -> int:
    alpha_exact, alpha_near = shares(rule, budget, EXACT_SHARE)
    return max(n_needed(m, rule[0], alpha_exact), n_needed(m, rule[1], alpha_near))


def table() -> str:
    columns = [(m, b) for m in SIZES for b in BUDGETS]
    lines = ["| rule (of m) | " + " | ".join(f"m = {m}, FPR <= {b:g}" for m, b in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for rule in RULES:
        lines.append(f"| {rule_text(rule, 'm')} | " + " | ".join(f"{needed(rule, m, b):,}" for m, b in columns) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(table(), end="")
