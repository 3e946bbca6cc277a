"""A template spread for Time Travel's generating detectors (issue 69 item 5): what each wording of the guided and
general instructions (detect/detectors/time_travel/prompts.py: the paper's, then four meaning-preserving rewordings)
makes of the same instances on the same model, and how far the verdicts move over the wordings.

    python bench/template_spread.py ... --out <folder>           # measures (a model asked in every wording)
    python -m contaminate.analyses.template_spread <folder>/spread.json > <folder>/table.md   # renders again

For each dataset, group (the untouched instances; a run's member and never-planted cells) and wording:

- the follow rate of the guided answers (detect/detectors/time_travel/follow.py), Clopper-Pearson over instances;
- the default threshold judge's exact / near-exact labels and Algorithm 2's verdict (>= 1 exact or >= 2 near-exact,
  the paper's rule);
- Algorithm 1's (guided v general ROUGE-L, paired one-sided bootstrap, 10,000 resamples, alpha 0.05), as the lab's
  ``Algorithm1`` computes it;
- each verdict as the lab reads it: "uninformative" where the guided answers of the group that holds no member (the
  untouched instances; a run's never-planted group) follow below 0.5 under that wording (``detect.follow.min_rate``).

Then the spread: each group's follow rate over the wordings (lowest, highest, range) and in how many wordings each
algorithm flags (and how many of those flags are informative). One model and one draw of instances: the spread says
how far wording alone moves a verdict on that model.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from contaminate.calibration.statistics import clopper_pearson
from detect.markdown import interval_text, table

UNTOUCHED = "untouched"
BAR = 0.5  # detect.follow.min_rate's default


def holds_no_member(group: str) -> bool:
    """The group a practitioner reads the follow rate on: the untouched instances, a run's never-planted cell."""
    return group == UNTOUCHED or group.endswith("non_members")


def read_group(rows: Sequence[dict]) -> dict:
    """One (dataset, group, wording)'s rows of ``detect.pipeline.detect_partition`` (guided and general) read as
    the lab reads them: follow count, judge labels, Algorithm 2's and Algorithm 1's (ROUGE-L) verdicts."""
    from detect.detectors.time_travel import Algorithm1
    from detect.detectors.time_travel.follow import FOLLOWED
    from detect.judges.threshold import alg2_verdict

    guided = [r for r in rows if r["instruction"] == "guided"]
    general = [r for r in rows if r["instruction"] == "general"]
    labels = [r["judge"] for r in guided]
    alg1 = Algorithm1().summarize(guided, {"general": general}, {}, seed=0)["alg1"]["rouge_l"]
    return {"n": len(guided), "followed": sum(r["answer_class"] == FOLLOWED for r in guided),
            "exact": labels.count("exact"), "near_exact": labels.count("near_exact"),
            "alg2": alg2_verdict(labels), "alg1": alg1["significant"], "alg1_p": alg1["p_value"],
            "guided_rouge_l": alg1["guided_mean"], "general_rouge_l": alg1["general_mean"]}


def _basis(groups: dict[str, dict[str, dict]], dataset: str) -> dict[str, dict]:
    found = [by_wording for name, by_wording in groups.items() if holds_no_member(name)]
    if len(found) != 1:
        raise ValueError(f"{dataset}: {len(found)} groups hold no member; a spread reads the follow rate on one")
    return found[0]


def informative(groups: dict[str, dict[str, dict]], dataset: str) -> dict[str, bool]:
    """wording -> whether the group holding no member follows at or above ``BAR`` under it."""
    return {w: g["followed"] / g["n"] >= BAR for w, g in _basis(groups, dataset).items()}


def spread(found: dict[str, dict[str, dict[str, dict]]]) -> dict[str, dict[str, dict]]:
    """dataset -> group -> the spread over wordings: the follow rate's lowest and highest, how many wordings flag with
    each algorithm (all, and those read informative), how many wordings are read informative."""
    out: dict[str, dict[str, dict]] = {}
    for dataset, groups in found.items():
        read = informative(groups, dataset)
        for group, by_wording in groups.items():
            rates = [g["followed"] / g["n"] for g in by_wording.values()]
            out.setdefault(dataset, {})[group] = {
                "wordings": len(by_wording), "follow_low": min(rates), "follow_high": max(rates),
                **{f"{alg}_flags": sum(bool(g[alg]) for g in by_wording.values()) for alg in ("alg1", "alg2")},
                **{f"{alg}_informative_flags": sum(bool(g[alg]) and read[w] for w, g in by_wording.items())
                   for alg in ("alg1", "alg2")},
                "informative": sum(read[w] for w in by_wording)}
    return out


def rate(k: int, n: int) -> str:
    """"0.30 [0.17, 0.47]": a share of instances with its Clopper-Pearson 95% interval."""
    ci = clopper_pearson(k, n)
    return interval_text(k / n, ci["low"], ci["high"])


def verdict(flagged: bool, is_informative: bool) -> str:
    return ("flagged" if flagged else "not flagged") + ("" if is_informative else " (uninformative)")


def render(found: dict[str, dict[str, dict[str, dict]]], header: str) -> str:
    """The by-wording table and the spread table of each dataset, after ``header``."""
    spreads = spread(found)
    lines = [header, ""]
    for dataset, groups in found.items():
        read = informative(groups, dataset)
        rows = [[group, wording, g["n"], rate(g["followed"], g["n"]), g["exact"], g["near_exact"],
                 verdict(g["alg2"], read[wording]), f"{g['guided_rouge_l']:.3f} / {g['general_rouge_l']:.3f}",
                 f"{g['alg1_p']:.3f}", verdict(g["alg1"], read[wording])]
                for group, by_wording in groups.items() for wording, g in by_wording.items()]
        lines += [f"#### {dataset}", ""]
        lines += table(["group", "wording", "n", "follow rate", "exact", "near-exact", "Algorithm 2",
                        "ROUGE-L guided / general", "Algorithm 1 p", "Algorithm 1"], rows)
        lines += ["", f"Spread over the wordings ({dataset}):", ""]
        lines += table(["group", "follow rate: lowest - highest (range)", "Algorithm 2 flags", "Algorithm 1 flags",
                        "wordings read informative"],
                       [[group, f"{s['follow_low']:.2f} - {s['follow_high']:.2f} "
                                f"({s['follow_high'] - s['follow_low']:.2f})",
                         f"{s['alg2_flags']} of {s['wordings']} ({s['alg2_informative_flags']} informative)",
                         f"{s['alg1_flags']} of {s['wordings']} ({s['alg1_informative_flags']} informative)",
                         f"{s['informative']} of {s['wordings']}"] for group, s in spreads[dataset].items()])
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spread", type=Path, help="bench/template_spread.py's spread.json")
    args = parser.parse_args(argv)
    kept = json.loads(args.spread.read_text())
    print(render(kept["found"], kept["header"]))


if __name__ == "__main__":
    main()
