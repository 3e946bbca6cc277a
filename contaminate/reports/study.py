"""One finished study as docs/study.md shows it: where its time went (training, each cell's seconds and tokens
scored, from ``manifest.json``'s ``timings``) and each cell's verdicts (``summary.json``).

    python -m contaminate.reports.study results/readme_study > results/readme_study/table.md
    python -m contaminate.reports.includes docs/study.md

The folder needs ``summary.json`` and ``manifest.json`` (a study's run folder, or the copies a results folder keeps).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from contaminate.reports.run import verdict_of
from detect.detectors.time_travel.follow import shots_text
from detect.markdown import row, table

CELLS = ("contaminated_x_members", "contaminated_x_non_members", "contaminated_x_other_split", "clean_x_members",
         "clean_x_non_members")  # contaminate/stages.py's CELLS, in its order
LABELS = {cell: cell.replace("_x_", " x ").replace("_", "-").replace("-split", " split") for cell in CELLS}


def timing_lines(manifest: dict) -> list[str]:
    timings = manifest["timings"]
    cells = timings["cells"]
    study = [c for name, c in cells.items() if name in LABELS]
    known = [c for name, c in cells.items() if name.endswith("_known_non_members")]
    resolved = (manifest.get("runtime") or {}).get("resolved") or {}
    where = f" on {resolved['device']} in {resolved['dtype']}" if resolved else ""
    lines = [f"Training {timings['train_s']:.0f} s, detection {timings['detect_s']:.0f} s, the study "
             f"{timings['total_s']:.0f} s{where} (`manifest.json` `timings`, `runtime`). The five cells: "
             f"{min(c['total_s'] for c in study):.0f}-{max(c['total_s'] for c in study):.0f} s each, "
             f"{min(c['scored_tokens'] for c in study):,}-{max(c['scored_tokens'] for c in study):,} tokens scored."]
    if known:
        lines[0] += (f" Each model's known non-members: {min(c['total_s'] for c in known):.0f}-"
                     f"{max(c['total_s'] for c in known):.0f} s, {max(c['scored_tokens'] for c in known):,} tokens "
                     f"scored.")
    skipped = sorted({f"{name} ({reason})" for c in study for name, reason in c.get("skipped", {}).items()})
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped) + "."]
    return lines


def verdict_table(summary: dict) -> list[str]:
    """Each cell's Algorithm 2 verdict at the paper's thresholds, its recipe's where the study fitted one (issue 71:
    the thresholds fitted on its model's own known non-members), and Algorithm 1's means and p."""
    recipe = (summary.get("recipe") or {}).get("cells") or {}
    columns = ["recipe: exact / near-exact, verdict"] if recipe else []
    lines = table(["cell", "exact", "near-exact", "Alg. 2", *columns, "Alg. 1 ROUGE-L guided / general (p)"])
    for name, label in LABELS.items():
        cell = summary["cells"][name]
        alg2, rouge = cell["alg2"], cell["alg1"]["rouge_l"]
        fitted = [f"{recipe[name]['exact']} / {recipe[name]['near_exact']}, {verdict_text(cell, recipe[name])}"
                  if name in recipe else "-"] if recipe else []
        lines.append(row([label, alg2["exact"], alg2["near_exact"], verdict_text(cell, alg2), *fitted,
                          f"{rouge['guided_mean']:.2f} / {rouge['general_mean']:.2f} ({rouge['p_value']:.3f})"]))
    return lines


def verdict_text(cell: dict, block: dict) -> str:
    """"contaminated (right)", or "uninformative (the rule: clean, right)" where its model mostly did not answer."""
    verdict, right, unread = verdict_of(cell, block)
    judged = "right" if right else "wrong"
    return f"uninformative (the rule: {verdict}, {judged})" if unread else f"{verdict} ({judged})"


def recipe_lines(summary: dict) -> list[str]:
    """Each model's fitted recipe in one line (detect/judges/recipe.py ``fit_line``); a refusal is the run's closing
    lines' and report.md's to print (this table's readers before issue 71 saw none)."""
    from detect.judges.recipe import fit_line

    fits = {m: fit for m, fit in ((summary.get("recipe") or {}).get("models") or {}).items() if "refused" not in fit}
    return ["", *(f"Recipe on the {checkpoint} model: {fit_line(fit)}." for checkpoint, fit in fits.items())] \
        if fits else []


def follow_lines(summary: dict) -> list[str]:
    """Each model's follow rate on its known non-members and the format its instructions were asked in (issue 45)."""
    follows = summary.get("follow") or {}
    if not follows:
        return []
    text = "; ".join(f"{checkpoint} model {f['rate']:.2f} of {f['n']}, asked {f.get('prompt_format', '-')}"
                     + shots_text(f)
                     + (" (" + ", ".join(f"{name} {r['rate']:.2f}" for name, r in f.get("by_format", {}).items()) + ")"
                        if f.get("by_format") else "") for checkpoint, f in follows.items())
    return ["", f"Follow rate on the known non-members (continuations among guided answers; below 0.50 Algorithm 1 "
                f"and 2 are uninformative): {text}."]


def main(folder: str) -> str:
    root = Path(folder)
    summary = json.loads((root / "summary.json").read_text())
    manifest = json.loads((root / "manifest.json").read_text())
    return "\n".join([*timing_lines(manifest), *follow_lines(summary), *recipe_lines(summary), "",
                      *verdict_table(summary)]) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m contaminate.reports.study <study folder>")
    sys.stdout.write(main(sys.argv[1]))
