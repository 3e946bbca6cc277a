"""The untouched model's HumanEval pass@1 by prompt format, each completion classed, behind the boundary (issue 68).

    python bench/pass_at_1.py --out results/pass_at_1_untouched          # the embedded SmolLM2-135M-Instruct
    python bench/pass_at_1.py --model gemma3_270m --out results/pass_at_1_untouched/gemma3_270m   # a base model

For each format of contaminate/harm.py (stripped: bigcode-evaluation-harness's prompt; raw: the prompt's trailing
newline kept, as the power runs asked it; chat: EvalPlus's instruction through the model's chat template, the code
taken from its first fenced block), greedy completions of all 164 problems, executed with their tests behind
bubblewrap (a model without a chat template, the pretrained Gemma 3 270M, in the formats it takes: stripped and
raw); pass@1 with its Clopper-Pearson interval over problems (one model: problems are the only units there
are), and each completion's class (empty, fence, prose, code) beside it, so that an artefact shows itself. The
format a design asks HumanEval in is chosen here, on the untouched model, never on members.

Also the boundary's cost: the 164 canonical solutions run with ``sandbox=bwrap`` and with ``sandbox=none`` (the
guard alone, today's harness before issue 68), seconds a program and the ratio, from the same run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contaminate.calibration.statistics import clopper_pearson  # noqa: E402
from contaminate.harm import CLASSES, PROMPT_FORMATS, complete, executable_problems, pass_at_1  # noqa: E402
from detect.markdown import interval_text, row, table  # noqa: E402


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def boundary_cost(problems, canonical: dict[int, str]) -> list[str]:
    """Seconds a program for the canonical solutions behind the boundary and with the guard alone (two workers)."""
    seconds = {}
    for sandbox in ("none", "bwrap"):
        started = time.perf_counter()
        found = pass_at_1(problems, canonical, sandbox=sandbox)
        seconds[sandbox] = (time.perf_counter() - started) / len(canonical)
        assert found["passed"] == len(canonical), f"canonical solutions failed with sandbox={sandbox}"
    return table(["sandbox", "s a program (2 workers)", "ratio"],
                 [["none (the guard alone)", f"{seconds['none']:.3f}", "1.00"],
                  ["bwrap", f"{seconds['bwrap']:.3f}", f"{seconds['bwrap'] / seconds['none']:.2f}"]])


def outcome_table(kept: Path) -> str:
    """How each format's kept completions ended: passed, or the exception their program raised (AssertionError: the
    program ran and answered wrong; SyntaxError / IndentationError: it did not compile, often a repetition cut at the
    token cap), counts of problems."""
    import re
    from collections import Counter

    with gzip.open(kept, "rt") as handle:
        completions = json.load(handle)
    counts = {fmt: Counter("passed" if row["outcome"] == "passed" else
                           (re.match(r"failed: (\w+)", row["outcome"]) or [None, row["outcome"][:20]])[1]
                           for row in rows.values()) for fmt, rows in completions.items()}
    total = sum(counts.values(), Counter())
    kinds = sorted(total, key=lambda k: (k != "passed", -total[k], k))
    rows = [[fmt, *(str(c[k]) for k in kinds)] for fmt, c in counts.items()]
    return "\n".join(table(["format", *kinds], rows)) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formats", nargs="+", default=list(PROMPT_FORMATS), choices=PROMPT_FORMATS)
    parser.add_argument("--model", default="smollm2_135m", help="an embedded model's name (detect/models/loading.py)")
    parser.add_argument("--limit", type=int, default=None, help="the first N problems only (a smoke run)")
    parser.add_argument("--out", required=True, help="a folder: table.md and completions.json.gz written there")
    parser.add_argument("--cost-only", action="store_true", help="the boundary's cost alone (cost.md), no model")
    parser.add_argument("--outcomes-only", action="store_true",
                        help="how the kept completions failed (outcomes.md), read from --out's completions.json.gz")
    args = parser.parse_args()

    from omegaconf import OmegaConf

    from detect.cli import CONF_DIR
    from detect.datasets import load_raw
    from detect.models import GenerationSettings, embedded
    from detect.models.hf import LocalModels

    dataset = OmegaConf.load(CONF_DIR / "dataset" / "humaneval.yaml")
    problems = executable_problems(dataset, "test")
    ids = sorted(problems)[: args.limit]
    canonical = {i: row["canonical_solution"] for i, row in enumerate(load_raw(dataset, "test")) if i in set(ids)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.outcomes_only:
        text = outcome_table(out / "completions.json.gz")
        (out / "outcomes.md").write_text(text)
        print(text, end="")
        return
    if args.cost_only:
        repeats = [boundary_cost(problems, canonical) for _ in range(3)]
        text = "\n\n".join("\n".join(table) for table in repeats)
        (out / "cost.md").write_text(f"{cpu_name()}, {len(canonical)} canonical solutions, three repeats:\n\n{text}\n")
        print(text)
        return
    ref = embedded(args.model)
    model = LocalModels().open(ref, GenerationSettings(max_new_tokens=384, progress=False))
    formats = [f for f in args.formats if f != "chat" or "chat" in model.prompt_formats]
    lines = [f"Model: {ref.name}, untouched, greedy; HumanEval test, {len(ids)} problems; {cpu_name()}. pass@1 with "
             f"its Clopper-Pearson 95% interval over problems (one model); each completion's class (contaminate/"
             f"harm.py `classify`). Programs run behind bubblewrap.", "",
             *table(["format", "pass@1 [Clopper-Pearson]", "passed", *CLASSES, "generation s"])]
    kept = {}
    for prompt_format in formats:
        started = time.perf_counter()
        completions = complete(model, problems, ids, prompt_format=prompt_format)
        generated = time.perf_counter() - started
        found = pass_at_1(problems, completions, prompt_format=prompt_format)
        ci = clopper_pearson(found["passed"], found["n"])
        classes = list(found["classes"].values())
        lines.append(row([prompt_format, interval_text(ci["rate"], ci["low"], ci["high"], ".3f"),
                          f"{found['passed']}/{found['n']}", *(classes.count(c) for c in CLASSES),
                          f"{generated:.0f}"]))
        kept[prompt_format] = {i: {"completion": completions[i], "outcome": found["results"][i],
                                   "class": found["classes"][i]} for i in ids}
        print(lines[-1], flush=True)
    lines += ["", "The boundary's cost on the canonical solutions (all pass under both):", "",
              *boundary_cost(problems, canonical), ""]
    (out / "table.md").write_text("\n".join(lines))
    with gzip.open(out / "completions.json.gz", "wt") as handle:
        json.dump(kept, handle)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
