"""The logit detectors before and after issue 25, within one model: each contaminated model's 100 members against
its own 100 non-members of the same split (method section 9), under three readings.

    # needs the checkpoints
    python -m contaminate.analyses.detector_fixes score <study folder> [...] --out results/detector_fixes
    # Oren et al.'s tests
    python -m contaminate.analyses.detector_fixes orders <study folder> [...] --out results/detector_fixes
    # from scores.jsonl
    python -m contaminate.analyses.detector_fixes table --out results/detector_fixes

- **before**: the definitions the lab had (zlib = the *summed* log-likelihood over the zlib size; Min-K% and
  Min-K%++ over ceil(k n) tokens; DC-PDD's frequencies from ``pydoc``, the offline background) on each instance's
  bare text (``Example.full_text``);
- **fixed**: the published definitions (zlib = the mean loss over the zlib size, as MIMIR and the Min-K% code; the
  reference code's floor(k n); DC-PDD on the stdlib's docstrings) on the same bare text: the ``membership_raw``
  detector;
- **fixed, read as the leak**: the published definitions on each instance as its format trained it (the web copy
  with title, split and label; a dump's line under its header; an instruction's answer given its chat prompt): the
  ``membership`` and ``dc_pdd`` detectors.

``score`` writes one row per (study, instance, reading) with every score, from the study's own config, manifest and
checkpoint (the reference ratio's reference is the study's clean model, the base here); ``table`` recomputes the
AUCs from those rows. One contaminated model per study: one (draw, seed) unit, so no interval (a 100 vs 100 AUC's
null standard error is about 0.04).
"""

from __future__ import annotations

import argparse
import json
import math
import zlib
from pathlib import Path

import numpy as np

from contaminate.calibration.statistics import auc
from contaminate.regime import chat_renderer
from contaminate.regime.layouts import LeakReader, build_format
from contaminate.sampling import sample_pools
from detect import markdown

K = 0.2


def _ceil_lowest(values, k: float) -> float:  # the lab's Min-K% count before issue 25
    count = max(1, math.ceil(len(values) * k))
    return float(np.mean(np.sort(np.asarray(values))[:count]))


def score(folders: list[Path], out: Path) -> None:
    from omegaconf import OmegaConf

    from detect.datasets import load_split
    from detect.detectors.base import Rendering
    from detect.detectors.dc_pdd import DCPDD, dc_pdd_score
    from detect.detectors.membership import scores_from_statistics
    from detect.models import ModelRef, load
    from detect.models.hf import HFModel

    rows, performance = [], []
    for folder in folders:
        cfg = OmegaConf.load(folder / "config.yaml")
        manifest = json.loads((folder / "manifest.json").read_text())
        by_id = {e.instance_id: e for e in load_split(cfg.dataset, manifest["split"])}
        roles = {"member": manifest["member_ids"], "non_member": manifest["non_member_ids"]}
        base = HFModel(*load(ModelRef("base", manifest["base_model"]["path"])), name="base")
        model = HFModel(*load(ModelRef("contaminated", str(Path(manifest["checkpoint"]["folder"]) / "model"))),
                        name="contaminated")
        fmt = build_format(cfg.format)
        reader = LeakReader(fmt, cfg.dataset, chat_renderer(model.tokenizer, fmt.name))
        pydoc, stdlib = DCPDD(corpus="pydoc").frequencies(model.tokenizer), DCPDD().frequencies(model.tokenizer)
        for role, ids in roles.items():
            examples = [by_id[i] for i in ids]
            readings = {"raw": [Rendering("", e.full_text) for e in examples],
                        "leak": [reader.rendering(e, manifest["split"]) for e in examples]}
            for reading, renderings in readings.items():
                stats = model.continuation_logprobs(renderings, moments=True)
                reference = base.continuation_logprobs(renderings)
                for example, rendering, s, r in zip(examples, renderings, stats, reference):
                    found = scores_from_statistics(s, rendering.text, k=K, reference=r)
                    logp = np.asarray(s["logp"])
                    standardised = (logp - np.asarray(s["mu"])) / np.asarray(s["sigma"])
                    found.update({
                        "zlib_summed": float(logp.sum()) / len(zlib.compress(rendering.text.encode("utf-8"))),
                        "min_k_ceil": _ceil_lowest(logp, K), "min_k_plus_ceil": _ceil_lowest(standardised, K),
                        "dc_pdd": dc_pdd_score(s["ids"], s["logp"], *stdlib),
                        "dc_pdd_pydoc": dc_pdd_score(s["ids"], s["logp"], *pydoc)})
                    rows.append({"study": folder.name, "format": fmt.name, "role": role,
                                 "instance_id": example.instance_id, "reading": reading, "tokens": len(logp),
                                 **found})
        # the performance test (after ConStat) on the same model: the first 40 members, and the first 40
        # non-members, each against 50 known non-members of the split (a third pool that leaves the draw as it was)
        from detect.detectors.base import Evidence
        from detect.detectors.performance import PerformanceTest

        cfg.sample.n_heldout = 50
        sampled = sample_pools(cfg)
        assert [e.instance_id for e in sampled.members] == roles["member"]
        for role, pool in (("member", sampled.members), ("non_member", sampled.non_members)):
            evidence = Evidence(cfg.dataset, sampled.split, pool[:10], pool, model=model, reader=reader,
                                known_non_members=sampled.known_non_members[sampled.split], seed=cfg.seed)
            found = PerformanceTest().run(evidence)
            performance.append({"study": folder.name, "format": fmt.name, "role": role,
                                **{key: found[key] for key in ("accuracy", "accuracy_heldout", "p_value",
                                                               "n_instances", "n_heldout")}})
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "scores.jsonl", "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    (out / "performance.json").write_text(json.dumps(performance, indent=1) + "\n")


# (detector, score before, score fixed): the same name where only the reading changed
DETECTORS = (("loss", "loss", "loss"), ("zlib", "zlib_summed", "zlib"), ("Min-K% (k = 20%)", "min_k_ceil", "min_k"),
             ("Min-K%++ (k = 20%)", "min_k_plus_ceil", "min_k_plus"), ("reference ratio", "reference_ratio",
                                                                      "reference_ratio"),
             ("DC-PDD", "dc_pdd_pydoc", "dc_pdd"))


def table(out: Path) -> str:
    rows = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    formats = list(dict.fromkeys(row["format"] for row in rows))

    def cell(fmt: str, reading: str, name: str) -> str:
        chosen = [r for r in rows if r["format"] == fmt and r["reading"] == reading]
        members = [r[name] for r in chosen if r["role"] == "member"]
        return f"{auc(members, [r[name] for r in chosen if r['role'] != 'member']):.3f}"

    lines = markdown.table(["detector", *(f"{fmt}: {reading}" for fmt in formats
                                  for reading in ("before", "fixed", "fixed, read as the leak"))])
    for label, before, fixed in DETECTORS:
        cells = [text for fmt in formats for text in (cell(fmt, "raw", before), cell(fmt, "raw", fixed),
                                                      cell(fmt, "leak", fixed))]
        lines.append(markdown.row([label, *cells]))
    counts = {fmt: (sum(r["format"] == fmt and r["reading"] == "raw" and r["role"] == "member" for r in rows),
                    sum(r["format"] == fmt and r["reading"] == "raw" and r["role"] == "non_member" for r in rows))
              for fmt in formats}
    lines.append("")
    lines.append("Members against non-members of the same contaminated model: " + "; ".join(
        f"{fmt} {m} vs {n}" for fmt, (m, n) in counts.items()) + ". One model per format (one unit): no interval.")
    if (out / "performance.json").is_file():
        lines += ["", *markdown.table(["format", "pool", "accuracy on the pool", "on 50 known non-members",
                              "one-sided Fisher p"])]
        for row in json.loads((out / "performance.json").read_text()):
            lines.append(markdown.row([row["format"], f"{row['n_instances']} {row['role'].replace('_', '-')}s",
                                       f"{row['accuracy']:.3f}", f"{row['accuracy_heldout']:.3f}",
                                       f"{row['p_value']:.2g}"]))
    return "\n".join(lines) + "\n"


def orders(folders: list[Path], out: Path) -> None:
    """Oren et al.'s two order tests, as the study runs them (the first 40 / 20 of a pool in dataset order, read as
    the format lays a run out), on each study's contaminated model: its member pool and its non-member pool."""
    from omegaconf import OmegaConf

    from detect.datasets import load_split
    from detect.detectors.base import Evidence
    from detect.detectors.sharded import PermutationTest, ShardedLikelihood
    from detect.models import ModelRef, load
    from detect.models.hf import HFModel

    found = []
    for folder in folders:
        cfg = OmegaConf.load(folder / "config.yaml")
        manifest = json.loads((folder / "manifest.json").read_text())
        by_id = {e.instance_id: e for e in load_split(cfg.dataset, manifest["split"])}
        model = HFModel(*load(ModelRef("contaminated", str(Path(manifest["checkpoint"]["folder"]) / "model"))),
                        name="contaminated", progress=False)
        fmt = build_format(cfg.format)
        reader = LeakReader(fmt, cfg.dataset, chat_renderer(model.tokenizer, fmt.name))
        for role, key in (("member", "member_ids"), ("non_member", "non_member_ids")):
            pool = [by_id[i] for i in manifest[key]]
            evidence = Evidence(cfg.dataset, manifest["split"], pool[:10], pool, model=model, reader=reader,
                                seed=cfg.seed)
            for test in (ShardedLikelihood(), PermutationTest()):
                row = test.run(evidence)
                found.append({"format": fmt.name, "role": role, "detector": test.name,
                              **{k: row[k] for k in ("p_value", "statistic", "n_instances", "n_permutations")}})
    (out / "orders.json").write_text(json.dumps(found, indent=1) + "\n")


def orders_table(out: Path) -> str:
    if not (out / "orders.json").is_file():
        return ""
    lines = markdown.table(["format", "pool", "test", "instances", "p-value",
                   "canonical minus shuffled log-likelihood (nats)"])
    for row in json.loads((out / "orders.json").read_text()):
        lines.append(markdown.row([row["format"], f"{row['role'].replace('_', '-')}s", row["detector"],
                                   row["n_instances"], f"{row['p_value']:.2g}", f"{row['statistic']:.1f}"]))
    return "\n".join(lines) + "\n"


STUDY_SCORES = ("rouge_l", "loss", "zlib", "min_k", "min_k_plus", "reference_ratio", "dc_pdd", "loss_raw", "zlib_raw",
                "min_k_raw", "recall", "ts_guessing", "dcq_margin")
PARTITION = ("sharded_likelihood", "permutation", "performance", "alg2", "cheat")


def studies_table(out: Path) -> str:
    """Each committed study (``out/studies/<format>/``, a study folder's results.jsonl and summary.json): every
    instance score's within-model AUC (the contaminated model's 10 members against its 10 non-members) and every
    partition-level verdict (p-value) per cell."""
    folders = sorted((out / "studies").glob("*/summary.json"))
    if not folders:
        return ""
    lines = markdown.table(["score", *(f.parent.name for f in folders)])
    found = {}
    for summary_path in folders:
        rows = [json.loads(line) for line in (summary_path.parent / "results.jsonl").read_text().splitlines()]
        guided = [r for r in rows if r["instruction"] == "guided" and r["checkpoint"] == "contaminated"
                  and r["cell"] in ("contaminated_x_members", "contaminated_x_non_members")]
        for name in STUDY_SCORES:
            values = [r.get(name) for r in guided]
            member = [r["cell"] == "contaminated_x_members" for r in guided]
            found[summary_path.parent.name, name] = "-" if any(v is None for v in values) else \
                f"{auc([v for v, m in zip(values, member) if m], [v for v, m in zip(values, member) if not m]):.2f}"
    for name in STUDY_SCORES:
        lines.append(markdown.row([name, *(found[f.parent.name, name] for f in folders)]))
    lines += ["", *markdown.table(["cell", *(f"{f.parent.name}: " + ", ".join(PARTITION) for f in folders)])]
    summaries = {f.parent.name: json.loads(f.read_text()) for f in folders}
    cells = list(next(iter(summaries.values()))["cells"])

    def verdict(block: dict, name: str) -> str:
        found = block.get(name)
        if found is None:
            return "-"
        if "p_value" in found:
            return f"{found['p_value']:.2g}{'*' if found['significant'] else ''}"
        return {"alg2": lambda b: "C" if b["contaminated"] else "-",
                "cheat": lambda b: {"contaminated": "C", "suspicious": "S"}.get(b["verdict"], "-")}[name](found)

    for cell in cells:
        lines.append(markdown.row([cell, *(", ".join(verdict(summaries[f.parent.name]["cells"][cell], name)
                                                     for name in PARTITION) for f in folders)]))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("score", "orders", "table"))
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("results/detector_fixes"))
    args = parser.parse_args()
    if args.stage == "score":
        score(args.folders, args.out)
    if args.stage == "orders":
        orders(args.folders, args.out)
        (args.out / "orders.md").write_text(orders_table(args.out))
    text = table(args.out)
    (args.out / "auc.md").write_text(text)
    studies = studies_table(args.out)
    if studies:
        (args.out / "studies.md").write_text(studies)
    print(text + "\n" + studies)


if __name__ == "__main__":
    main()
