"""One partition x one model -> rows (every prompt, completion and score) + a summary with every verdict.

    python -m detect +dataset=synth_nli split=test model=smollm2_135m

``detect_partition`` is the library call (the lab's studies call it once per cell); ``summarize`` turns any
set of rows into Algorithm 1 and 2 outcomes; ``main`` is what ``python -m detect`` runs: load, sample,
detect, and write ``results.jsonl`` (one row per instance and instruction), ``partition.jsonl`` (one row per
partition-level detector: ChatGPT-Cheat?, the sharded likelihood test), ``summary.json``, ``report.md`` and
``config.yaml`` to the run folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

from detect.cheat import cheat_partition
from detect.datasets import Example, load_split, sample
from detect.judge import alg2_verdict, thresholds_line
from detect.membership import MEMBERSHIP_SCORES
from detect.prompts import INSTRUCTIONS, build_prompt, clean_completion
from detect.scores import rouge_l
from detect.sharded import MIN_INSTANCES, ordered_sequences, shard_orders, sharded_likelihood_test
from detect.split import split_instance
from detect.stats import bootstrap_test
from detect.stopping import AnswerShape

SCORES = ("rouge_l", "semantic")


def detect_partition(
    examples: Sequence[Example], *, dataset, split: str, generate: Callable[[list[str]], list[str]], judge,
    semantic=None, membership=None, seed: int = 0, cut_low: float = 0.4, cut_high: float = 0.7, stop=None,
) -> list[dict]:
    """Guided and general completions for each instance, scored and judged: one row per (instance, instruction).

    ``dataset`` is the dataset config (title, task); ``generate`` maps prompts to raw completions;
    ``semantic`` is an optional ``(references, candidates) -> scores`` callable; ``membership`` an optional
    ``texts -> [{score: value}]`` callable (``detect.membership.MembershipScorer``) whose logit scores of the
    whole instance go on its guided row; ``stop`` (``detect.stop`` config: enabled, length_factor, margin_chars)
    makes ``generate(prompts, shapes)`` stop each completion once its answer is done (``detect/stopping.py``).
    """
    cuts = [split_instance(example, seed=seed, low=cut_low, high=cut_high) for example in examples]
    rows = []
    for instruction in INSTRUCTIONS:
        for example, cut in zip(examples, cuts):
            prompt = build_prompt(instruction, dataset.task, first_piece=cut.first, label=example.label,
                                  dataset_name=dataset.title, split_name=split)
            rows.append({
                "dataset": dataset.key, "split": split, "instance_id": example.instance_id, "label": example.label,
                "instruction": instruction, "prompt": prompt, "first_piece": cut.first,
                "separator": cut.separator, "reference": cut.second, "cut_unit": cut.unit,
                "cut_fraction": cut.fraction,
            })
    prompts = [row["prompt"] for row in rows]
    if stop is not None and stop.enabled:
        shapes = [AnswerShape.of(r["first_piece"], r["separator"], r["reference"], length_factor=stop.length_factor,
                                 margin_chars=stop.margin_chars) for r in rows]
        raw_completions = generate(prompts, shapes)
    else:
        raw_completions = generate(prompts)
    reasons = getattr(generate, "stop_reasons", None) or [None] * len(rows)
    for row, raw, reason in zip(rows, raw_completions, reasons):
        row["raw_completion"], row["stop"] = raw, reason
        row["completion"] = clean_completion(raw, row["reference"], row["first_piece"])
        row["rouge_l"] = rouge_l(row["reference"], row["completion"])
    if semantic is not None:
        # SPEC 6: a cut inside a sentence is scored as the whole instance (first piece + completion vs
        # original), so the embedding sees a full sentence on both sides; otherwise the completion alone.
        whole = [row["cut_unit"] == "word" for row in rows]
        references = [r["first_piece"] + r["separator"] + r["reference"] if w else r["reference"]
                      for r, w in zip(rows, whole)]
        candidates = [r["first_piece"] + r["separator"] + r["completion"] if w else r["completion"]
                      for r, w in zip(rows, whole)]
        for row, value in zip(rows, semantic(references, candidates)):
            row["semantic"] = value
    else:
        for row in rows:
            row["semantic"] = None
    # Algorithm 2 reads the guided completions only, and an LLM judge is paid per call: judge those.
    guided = [row for row in rows if row["instruction"] == "guided"]
    if membership is not None:  # one value per instance, whatever the instruction: kept on the guided row
        for row, scores in zip(guided, membership([r["first_piece"] + r["separator"] + r["reference"]
                                                   for r in guided])):
            row.update(scores)
    for row in rows:
        row["judge"] = None
    for row, label in zip(guided, judge(guided)):
        row["judge"] = label
    return rows


def sharded_pool(references: Sequence[Example], detect_cfg) -> list[Example]:
    """The instances the sharded test reads: the first ``detect_cfg.sharded.max_instances`` in dataset order."""
    return sorted(references, key=lambda example: example.instance_id)[: detect_cfg.sharded.max_instances]


def logit_requests(examples: Sequence[Example], references: Sequence[Example], detect_cfg, *,
                   seed: int = 0) -> list[tuple[list[str], bool]]:
    """Everything a partition's logit detectors will read from a local model, as ``TokenStatistics.prefetch``
    requests, so one batched pass serves them all: the whole instances with the next-token moments (membership
    scores) and the sharded test's orders of ``references`` (log-probabilities only)."""
    requests = []
    if detect_cfg.membership.enabled:
        requests.append(([example.full_text for example in examples], True))
    ordered = sharded_pool(references, detect_cfg)
    if detect_cfg.sharded.enabled and len(ordered) >= MIN_INSTANCES:
        orders = shard_orders(len(ordered), n_shards=detect_cfg.sharded.n_shards,
                              n_permutations=detect_cfg.sharded.n_permutations, seed=seed)
        requests.append((ordered_sequences([example.full_text for example in ordered], orders), False))
    return requests


def partition_rows(references: Sequence[Example], *, dataset, split: str, generate, detect_cfg, model=None,
                   tokenizer=None, seed: int = 0, statistics=None) -> list[dict]:
    """The partition-level detectors' rows: ChatGPT-Cheat? (any backend; its replicas are searched among
    ``references``) and the sharded likelihood test (local models: ``model`` and ``tokenizer`` given, or their
    ``statistics``; the first ``detect_cfg.sharded.max_instances`` references in the dataset's order). Each is
    switched by ``detect_cfg.cheat.enabled`` / ``.sharded.enabled``."""
    rows = []
    if detect_cfg.cheat.enabled:
        rows.append(cheat_partition(generate, dataset=dataset, split=split, references=references,
                                    prompt=detect_cfg.cheat.prompt, exact_threshold=detect_cfg.cheat.exact_threshold,
                                    near_exact_threshold=detect_cfg.cheat.near_exact_threshold))
    ordered = sharded_pool(references, detect_cfg)
    if detect_cfg.sharded.enabled and model is not None and len(ordered) >= MIN_INSTANCES:
        row = sharded_likelihood_test(model, tokenizer, [example.full_text for example in ordered],
                                      n_shards=detect_cfg.sharded.n_shards,
                                      n_permutations=detect_cfg.sharded.n_permutations,
                                      alpha=detect_cfg.sharded.alpha, seed=seed, statistics=statistics)
        rows.append({**row, "dataset": dataset.key, "split": split})
    return rows


def summarize(rows: Sequence[dict], *, paired: bool = True, n_resamples: int = 10_000, alpha: float = 0.05,
              min_exact: int = 1, min_near_exact: int = 2, seed: int = 0) -> dict:
    """Algorithm 1 per score, Algorithm 2 (guided completions only), the mean logit scores and the
    partition-level detectors' verdicts over a set of rows."""
    guided = sorted((r for r in rows if r.get("instruction") == "guided"), key=lambda r: r["instance_id"])
    general = sorted((r for r in rows if r.get("instruction") == "general"), key=lambda r: r["instance_id"])
    partition = {r["detector"]: r for r in rows if r.get("level") == "partition"}
    alg1 = {}
    for score in SCORES:
        if not guided or guided[0].get(score) is None:
            continue
        guided_scores, general_scores = [r[score] for r in guided], [r[score] for r in general]
        p_value = bootstrap_test(guided_scores, general_scores, paired=paired, n_resamples=n_resamples, seed=seed)
        alg1[score] = {
            "guided_mean": sum(guided_scores) / len(guided_scores),
            "general_mean": sum(general_scores) / len(general_scores),
            "p_value": p_value, "significant": p_value <= alpha,
        }
    labels = [r["judge"] for r in guided]
    alg2 = {
        "exact": labels.count("exact"), "near_exact": labels.count("near_exact"),
        "unparseable": labels.count("unparseable"),
        "contaminated": alg2_verdict(labels, min_exact=min_exact, min_near_exact=min_near_exact),
        "min_exact": min_exact, "min_near_exact": min_near_exact,
    }
    membership = {score: float(sum(r[score] for r in guided) / len(guided))
                  for score in MEMBERSHIP_SCORES if guided and guided[0].get(score) is not None}
    summary = {"n_instances": len(guided), "alg1": alg1, "alg2": alg2, "membership": membership,
               "bootstrap": {"paired": paired, "n_resamples": n_resamples, "alpha": alpha, "seed": seed}}
    if "cheat" in partition:
        cheat = partition["cheat"]
        summary["cheat"] = {key: cheat[key] for key in ("verdict", "strict", "lenient", "exact", "near_exact",
                                                        "best_score", "format_signals", "n_references")}
    if "sharded_likelihood" in partition:
        sharded = partition["sharded_likelihood"]
        summary["sharded_likelihood"] = {key: sharded[key] for key in ("p_value", "statistic", "significant",
                                                                       "n_instances", "n_shards", "n_permutations")}
    return summary


def verdicts(summary: dict) -> dict[str, bool]:
    """Every detector's partition verdict in a summary: contaminated (True) or not."""
    found = {f"alg1_{score}": result["significant"] for score, result in summary["alg1"].items()}
    found["alg2"] = summary["alg2"]["contaminated"]
    if "cheat" in summary:
        found["cheat_strict"], found["cheat_lenient"] = summary["cheat"]["strict"], summary["cheat"]["lenient"]
    if "sharded_likelihood" in summary:
        found["sharded_likelihood"] = summary["sharded_likelihood"]["significant"]
    return found


def _cell(text: str | None, width: int = 90) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def write_report(path: Path, summary: dict, rows: Sequence[dict]) -> None:
    lines = [f"# Contamination detection: {summary['dataset']} / {summary['split']} / {summary['model']}", ""]
    lines += [f"{summary['n_instances']} instances, prompt format `{summary['prompt_format']}`, "
              f"{thresholds_line(summary['judge'])}, seed {summary['seed']}.", ""]
    lines += ["## Algorithm 1 (guided vs general, one-sided bootstrap)", "",
              "| score | guided mean | general mean | p-value | contaminated |", "|---|---|---|---|---|"]
    for score, result in summary["alg1"].items():
        lines.append(f"| {score} | {result['guided_mean']:.3f} | {result['general_mean']:.3f} | "
                     f"{result['p_value']:.4f} | {'yes' if result['significant'] else 'no'} |")
    alg2 = summary["alg2"]
    lines += ["", "## Algorithm 2 (exact / near-exact replicas among guided completions)", "",
              f"{alg2['exact']} exact, {alg2['near_exact']} near-exact -> "
              f"**{'contaminated' if alg2['contaminated'] else 'not contaminated'}** "
              f"(rule: >= {alg2['min_exact']} exact or >= {alg2['min_near_exact']} near-exact)", "",
              *partition_lines(summary),
              "## Instances", "", "| id | instruction | reference | completion | ROUGE-L | semantic | judge |",
              "|---|---|---|---|---|---|---|"]
    for row in sorted(rows, key=lambda r: (r["instance_id"], r["instruction"] != "guided")):
        semantic = "-" if row["semantic"] is None else f"{row['semantic']:.2f}"
        lines.append(f"| {row['instance_id']} | {row['instruction']} | {_cell(row['reference'])} | "
                     f"{_cell(row['completion'])} | {row['rouge_l']:.2f} | {semantic} | {row['judge'] or '-'} |")
    path.write_text("\n".join(lines) + "\n")


def partition_lines(summary: dict) -> list[str]:
    """The report's lines for the logit scores and the partition-level detectors, where they ran."""
    lines = []
    if summary.get("membership"):
        lines += ["## Logit scores (mean over the instances; higher = more likely seen in training)", "",
                  "| " + " | ".join(summary["membership"]) + " |", "|" + "---|" * len(summary["membership"]),
                  "| " + " | ".join(f"{value:.3f}" for value in summary["membership"].values()) + " |", ""]
    if "cheat" in summary:
        cheat = summary["cheat"]
        signals = ", ".join(f"`{s}`" for s in cheat["format_signals"]) or "none"
        lines += ["## ChatGPT-Cheat? (asked for the split's first instances)", "",
                  f"**{cheat['verdict']}**: {cheat['exact']} exact and {cheat['near_exact']} near-exact replicas of "
                  f"{cheat['n_references']} reference instances (best ROUGE-L {cheat['best_score']:.2f}); format "
                  f"signals: {signals}. Strict reading: {'contaminated' if cheat['strict'] else 'clean'}; lenient: "
                  f"{'contaminated' if cheat['lenient'] else 'clean'}.", ""]
    if "sharded_likelihood" in summary:
        test = summary["sharded_likelihood"]
        lines += ["## Sharded likelihood test (canonical vs shuffled order)", "",
                  f"{test['n_instances']} instances in {test['n_shards']} shards, {test['n_permutations']} shuffles "
                  f"each: mean log-likelihood gain of the canonical order {test['statistic']:.3f}, p = "
                  f"{test['p_value']:.4f} -> **{'contaminated' if test['significant'] else 'not contaminated'}**.", ""]
    return lines


def write_config(path: Path, cfg, placement) -> None:
    """The run's config with interpolations resolved and ``runtime.device`` / ``runtime.dtype`` as the policy
    resolved them (Hydra's own copy, as asked, is in ``.hydra/``)."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved["runtime"].update(device=placement.device, dtype=placement.dtype)
    path.write_text(OmegaConf.to_yaml(resolved))


def write_jsonl(path: Path, rows: Sequence[dict]) -> None:
    with open(path, "w") as file:
        for row in rows:
            file.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(cfg, out_dir: Path) -> dict:
    """Everything ``python -m detect`` does, given a composed config and a run folder."""
    from detect.cli import instantiate
    from detect.generate import LocalGenerator
    from detect.logits import TokenStatistics
    from detect.membership import MembershipScorer
    from detect.models import cache_dir, hub, load
    from detect.openai_generate import OpenAIGenerator
    from detect.runtime import from_config as placement_from
    from detect.runtime import placement_of
    from detect.scores import SemanticScorer

    started = time.time()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dataset = cfg.dataset
    split = cfg.split or dataset.default_split
    placement = placement_from(cfg.runtime)
    write_config(out_dir / "config.yaml", cfg, placement)

    split_examples = load_split(dataset, split)
    examples = sample(split_examples, cfg.sample.n_detect, seed=cfg.seed, where=f"{dataset.key} {split}")
    judge = instantiate(cfg.judge)
    model = tokenizer = membership = statistics = None  # logit detectors need a local model
    placements = {}
    if cfg.backend.name == "openai":
        generator = OpenAIGenerator.from_config(cfg.backend, cfg.detect, cache_dir=cache_dir())
        model_name, model_path = cfg.backend.model, cfg.backend.base_url or "https://api.openai.com/v1"
    else:
        model_ref = instantiate(cfg.model)
        model, tokenizer = load(model_ref, placement)
        placements["model"] = placement_of(model)
        generator = LocalGenerator.from_config(model, tokenizer, cfg.detect)
        model_name, model_path = model_ref.name, model_ref.path
        statistics = TokenStatistics(model, tokenizer)
        # one batched pass for what the logit detectors read (membership scores, the sharded test's orders)
        statistics.prefetch(logit_requests(examples, split_examples, cfg.detect, seed=cfg.seed))
        if cfg.detect.membership.enabled:
            reference_model = cfg.detect.membership.reference_model
            reference = None
            if reference_model:
                reference_pair = load(hub(str(reference_model)), placement)
                placements["reference"] = placement_of(reference_pair[0])
                reference = TokenStatistics(*reference_pair)
            membership = MembershipScorer(statistics, k=cfg.detect.membership.k, reference=reference)
    semantic = SemanticScorer(cfg.detect.semantic_model, placement=placement) if cfg.detect.semantic_model else None
    if semantic is not None:
        placements["semantic"] = placement_of(semantic.encoder)
    loaded = time.time()

    rows = detect_partition(examples, dataset=dataset, split=split, generate=generator, judge=judge,
                            semantic=semantic, membership=membership, seed=cfg.seed, cut_low=cfg.detect.cut.low,
                            cut_high=cfg.detect.cut.high, stop=cfg.detect.stop)
    # The partition detectors read the split, not the sample: Cheat? searches all of it for replicas, the
    # sharded test takes its first instances in the dataset's order.
    partition = partition_rows(split_examples, dataset=dataset, split=split, generate=generator,
                               detect_cfg=cfg.detect, model=model, tokenizer=tokenizer, seed=cfg.seed,
                               statistics=statistics)
    for row in rows + partition:
        row["model"] = model_name
    summary = summarize(rows + partition, **cfg.detect.bootstrap, **cfg.detect.alg2, seed=cfg.seed)
    summary.update(
        dataset=dataset.key, split=split, model=model_name, model_path=model_path, backend=cfg.backend.name,
        prompt_format=generator.prompt_format, seed=cfg.seed,
        judge=judge.describe(),
        runtime={"resolved": placement.describe(), "models": placements},
        instance_ids=[example.instance_id for example in examples],
        timings={"load_s": round(loaded - started, 2), "detect_s": round(time.time() - loaded, 2)},
    )
    write_jsonl(out_dir / "results.jsonl", rows)
    write_jsonl(out_dir / "partition.jsonl", partition)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out_dir / "report.md", summary, rows)
    return summary
