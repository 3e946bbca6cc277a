"""A template spread for Time Travel's generating detectors (issue 69 item 5): one model asked the guided and general
instructions in each of their wordings (detect/detectors/time_travel/prompts.py: the paper's, four meaning-preserving
rewordings) on the same instances; read and rendered by contaminate/analyses/template_spread.py.

    python bench/template_spread.py --n 20 --out results/template_spread/smollm2_135m        # untouched SmolLM2
    python bench/template_spread.py --n 20 --model gemma3_270m --out results/template_spread/gemma3_270m
    python bench/template_spread.py --model <run>/groups/x32/checkpoint --from <run>/groups/x32/results.jsonl \
        --out results/template_spread/<name>                                # a contaminated model: its own groups

Without ``--from``: ``--n`` instances (seed 0) of each dataset's default split, none of them planted (the untouched
model: on synth_nli, novel text, every exact or near-exact label and every flag is a false positive; HumanEval may be
in its pretraining data, so there a flag is a reading). With ``--from`` a run's results.jsonl: the instances of each of
its member and never-planted cells (up to ``--n`` each), read on that run's checkpoint (``--model``): the instances the
run judged, with their ground truth. Asked raw by default (both embedded models take raw prompts; the base model has
no chat template), greedy, as detect_partition asks them (the default stop, no worked examples).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.follow_rates import open_model  # noqa: E402  (the model as every follow bench opens it)
from contaminate.analyses.template_spread import BAR, UNTOUCHED, read_group, render, spread  # noqa: E402

DATASETS = ("humaneval", "synth_nli")


def run_groups(results: Path, n: int) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """dataset -> group -> [(split, instance id)] of a run's results.jsonl: each member cell's and never-planted cell's
    instances (the known non-members' cells left out: the never-planted group is the run's own non-member reading),
    the first ``n`` of each in the file's order; a group is named by its cell."""
    groups: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for line in results.read_text().splitlines():
        row = json.loads(line)
        cell = row.get("cell") or ""
        # a run that generated nothing (the power design) keeps one row an instance, with no instruction
        if row.get("instruction") not in (None, "guided") or row.get("instance_id") is None or \
                cell.endswith("known_non_members") or not cell.endswith("members"):
            continue
        chosen = groups.setdefault(row["dataset"], {}).setdefault(cell, [])
        if len(chosen) < n:
            chosen.append((row["split"], row["instance_id"]))
    if not groups:
        raise SystemExit(f"--from {results}: no member or never-planted cell's guided rows; give a run's results.jsonl")
    return groups


def measure(model_name: str, n: int, wordings: list[str], prompt_format: str, results: Path | None) -> tuple[dict, str]:
    from omegaconf import OmegaConf

    from detect.cli import CONF_DIR
    from detect.datasets import load_split, sample
    from detect.judges.threshold import ThresholdJudge
    from detect.pipeline import detect_partition

    detect_cfg = OmegaConf.load(CONF_DIR / "detect" / "default.yaml")
    ref, model = open_model(model_name, prompt_format)
    judge = ThresholdJudge()
    if results is None:
        wanted = {key: {UNTOUCHED: None} for key in DATASETS}
    else:
        wanted = run_groups(results, n)
    found: dict = {}
    for key, groups in wanted.items():
        dataset = OmegaConf.load(CONF_DIR / "dataset" / f"{key}.yaml")
        for group, ids in groups.items():
            if ids is None:
                split = dataset.default_split
                examples = sample(load_split(dataset, split), n, seed=0)
            else:
                split = ids[0][0]
                by_id = {e.instance_id: e for e in load_split(dataset, split)}
                examples = [by_id[i] for _, i in ids]
            for wording in wordings:
                rows = detect_partition(examples, dataset=dataset, split=split, model=model, judge=judge, seed=0,
                                        stop=detect_cfg.stop, instructions=("guided", "general"),
                                        prompt_format=prompt_format, wording=wording)
                found.setdefault(key, {}).setdefault(group, {})[wording] = read_group(rows)
    header = (f"Model: {ref.name} ({ref.path}), asked {prompt_format}, greedy, answers read as generated to the length "
              f"cap (detect.stop.lines: false), the default threshold judge (ROUGE-L >= 0.95 exact, >= 0.75 "
              f"near-exact); " + (f"{n} instances a dataset (seed 0), none planted" if results is None else
                                  f"up to {n} instances of each member and never-planted cell of {results}")
              + f". Follow rate: the guided answers' share of continuations, Clopper-Pearson 95% over instances (one "
                f"model). A verdict is uninformative where the group that holds no member follows below {BAR}.")
    return found, header


def main() -> None:
    from detect.detectors.time_travel.prompts import WORDINGS, check_wording
    from detect.errors import InputError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="instances a dataset (a group, with --from)")
    parser.add_argument("--model", default="smollm2_135m", help="an embedded model's name (smollm2_135m, "
                        "gemma3_270m), a model folder (a run's checkpoint) or hub id")
    parser.add_argument("--from", dest="results", type=Path, default=None,
                        help="a run's results.jsonl: read its member and never-planted cells' instances")
    parser.add_argument("--wordings", default=",".join(WORDINGS), help="comma-separated (default: all)")
    parser.add_argument("--format", default="raw", choices=("raw", "chat"), help="how the prompts are put")
    parser.add_argument("--out", default=None, help="a folder: table.md and spread.json written there")
    args = parser.parse_args()
    try:
        wordings = [check_wording(w.strip(), "--wordings") for w in args.wordings.split(",") if w.strip()]
    except InputError as error:
        raise SystemExit(str(error)) from None
    if args.results is not None and not args.results.is_file():
        raise SystemExit(f"--from {args.results}: no such file; give a run's results.jsonl")
    started = time.time()
    found, header = measure(args.model, args.n, wordings, args.format, args.results)
    text = render(found, header)
    seconds = time.time() - started
    print(text)
    print(f"{seconds:.0f} s", file=sys.stderr)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "table.md").write_text(text + "\n")
        (out / "spread.json").write_text(json.dumps({"header": header, "found": found, "spread": spread(found),
                                                     "seconds": round(seconds),
                                                     "model": args.model, "format": args.format,
                                                     "from": str(args.results) if args.results else None},
                                                    indent=1) + "\n")


if __name__ == "__main__":
    main()
