"""How many known non-members the recipe needs (detect/judges/recipe.py): for each rule, partition size and budget,
the fewest with which its partition FPR can be bounded (one score for both labels: the recipe's joint split, where
the exact part may take the whole budget at the largest known score). Computed, not measured.

    # the table docs/calibration.md includes
    python -m contaminate.analyses.recipe_needs > results/recipe_needs/needs.md
"""

from __future__ import annotations

from detect import markdown
from detect.judges.recipe import rule_needs, rule_text

RULES = [(1, 2), (1, None), (None, 2), (None, 3), (2, 2)]
SIZES = (10, 20)
BUDGETS = (0.05, 0.01)


def table() -> str:
    columns = [(m, b) for m in SIZES for b in BUDGETS]
    lines = markdown.table(["rule (of m)", *(f"m = {m}, FPR <= {b:g}" for m, b in columns)])
    for rule in RULES:
        lines.append(markdown.row([rule_text(rule, "m"), *(f"{rule_needs(m, rule, b):,}" for m, b in columns)]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(table(), end="")
