"""The command line of calibration (the library is ``contaminate/calibration/``):

    python -m contaminate.calibrate runs/dose_response/<time>                 # a multirun folder, or study folders
    python -m contaminate.calibrate runs/contaminate/a runs/contaminate/b --exact-fpr 0.005 --near-exact-fpr 0.03

    python -m contaminate.calibrate runs/regimes_cpu --transfer               # by regime, with the transfer table

Reads every finished study under the folders (``results.jsonl`` + ``manifest.json``) and writes to ``--out``
(default ``<first folder>/calibration``): ``calibration.json`` (the thresholds; ``judge.calibration=<path>``
loads them into any detection; ``by_regime``: every detector per regime, Algorithm 2's rule everywhere, threshold
transfer, what is missing), ``calibration.md``, ``dose_response.csv``/``.md`` and PNG plots, and ``answers.md``
(each generated answer classed, follow.py: the follow rate by reading, pool and dose, over draws). What is measured and
how: ``contaminate/calibration/__init__.py``, ``membership.py`` and ``regimes.py``. ``--keep-studies`` also writes
``<out>/studies``: each study's manifest, summary and rows, compressed, from which the calibration recomputes.

The library's names are importable from here as before (``from contaminate.calibrate import calibrate``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from contaminate.analyses.answers import table as answers_table
from contaminate.calibration.constants import (  # noqa: F401  (the library's names, public here as before)
    DEFAULT_JUDGE,
    EXACT_FPR,
    FPR_POINTS,
    NEAR_EXACT_FPR,
    PAPER_RULE,
    PARTITION_FPR,
    RULE_GRID,
    SAMPLE_SIZE,
    TRANSFER_TOLERANCE,
)
from contaminate.calibration.instance_level import (  # noqa: F401
    auc_interval,
    cross_fitted_labels,
    fit_thresholds,
    judges_from,
    label,
    lowest_threshold,
    rates_at,
    roc,
    roc_with_interval,
)
from contaminate.calibration.judges import agreement, judge_agreement  # noqa: F401
from contaminate.calibration.partition_level import (  # noqa: F401
    alg1_flag_rate,
    alg2_binomial_rate,
    alg2_flag_rate,
    partition_level,
    partition_rates,
    pools_of,
    rate_summary,
    recommend_rule,
    summarize_pools,
)
from contaminate.calibration.result import Calibration, calibrate, ranking  # noqa: F401
from contaminate.calibration.studies import (  # noqa: F401
    Instance,
    Partition,
    cell_partition,
    condition_of,
    distinct,
    find_studies,
    keep_studies,
    load_instances,
    needs,
    score_names,
)
from contaminate.reports.calibration import write_reports
from detect.judges.recipe import EXACT_SHARE


def main(argv: Sequence[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m contaminate.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", help="study folders, or multirun folders holding studies")
    parser.add_argument("--out", help="output folder (default: <first folder>/calibration)")
    parser.add_argument("--exact-fpr", type=float, default=EXACT_FPR, help="instance-level FPR for exact labels")
    parser.add_argument("--near-exact-fpr", type=float, default=NEAR_EXACT_FPR,
                        help="instance-level FPR for exact-or-near-exact labels")
    parser.add_argument("--partition-fpr", type=float, default=PARTITION_FPR,
                        help="partition FPR a recommended rule keeps")
    parser.add_argument("--score", default="rouge_l", help="the near-exact score of the threshold card")
    parser.add_argument("--partition-size", type=int, default=SAMPLE_SIZE,
                        help="instances in one of Algorithm 2's partitions: the recipe's fit, the card and every "
                             "partition rate (default: the paper's 10; HumanEval's recipe study uses 6)")
    parser.add_argument("--exact-share", type=float, default=EXACT_SHARE,
                        help="the exact part's share of the partition budget in the recipe and the card (the "
                             "near-exact part has the rest)")
    parser.add_argument("--tolerance", type=float, default=TRANSFER_TOLERANCE,
                        help="a threshold transfers when its FPR in the other regime is within --partition-fpr + this "
                             "(an equivalence test)")
    parser.add_argument("--keep-studies", action="store_true",
                        help="also write what calibration reads of each study, gzip-compressed, to <out>/studies, so "
                             "that python -m contaminate.calibrate <out>/studies recomputes this calibration")
    parser.add_argument("--transfer", action=argparse.BooleanOptionalAction, default=None,
                        help="the regime x regime threshold transfer table: --transfer demands it (an error with "
                             "fewer than two regimes); default: where there are two or more")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.folders[0]) / "calibration"
    result = calibrate(args.folders, exact_fpr=args.exact_fpr, near_exact_fpr=args.near_exact_fpr,
                       partition_fpr=args.partition_fpr, score=args.score, tolerance=args.tolerance,
                       transfer=args.transfer, exact_share=args.exact_share, sample_size=args.partition_size)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(result.to_json(), indent=1))
    write_cards(result.cards, out)
    write_reports(result, out)
    # did the models answer the paper's instruction? each answer classed, by reading, pool and dose (issue 45)
    (out / "answers.md").write_text(answers_table(result.sources))
    if args.keep_studies:
        keep_studies(result.sources, out)
    missing = result.by_regime["missing"]
    if missing["unfinished"] or missing["grid"]:  # a half-finished sweep: calibrated on what finished
        print(f"calibrated on the {len(result.sources)} finished studies; missing: {len(missing['unfinished'])} "
              f"unfinished, {len(missing['grid'])} cells of the grid with no study (calibration.md, 'Missing')",
              file=sys.stderr)
    for card in result.cards.values():
        if not card["written"]:
            print(f"no threshold card: {card['why']}", file=sys.stderr)
    return out


def write_cards(cards: dict[str, dict], out: Path) -> list[Path]:
    """Each written card as its own file (``judge.calibration=`` loads one): card.json where there is one, else
    card_<regime>_<dataset>.json each; stale card files of an earlier calibration in ``out`` removed."""
    for stale in [*out.glob("card_*.json"), out / "card.json"]:
        stale.unlink(missing_ok=True)
    written = {group: card for group, card in cards.items() if card["written"]}
    paths = []
    for group, card in written.items():
        slug = "".join(c if c.isalnum() else "_" for c in group.replace(" · ", "_")).strip("_")
        path = out / ("card.json" if len(written) == 1 else f"card_{slug}.json")
        path.write_text(json.dumps(card, indent=1))
        paths.append(path)
    return paths


if __name__ == "__main__":
    from detect.cli import one_line_errors

    with one_line_errors():
        folder = main()
    print(folder / "calibration.md")
    for card in sorted(folder.glob("card*.json")):
        print(f"judge.calibration={card}")
