"""Which LoRA settings make the embedded model replay its members at the default dose? A small search, two seeds.

    python bench/lora_search.py                       # the settings below, seed 0, then the best with seed 1
    python bench/lora_search.py --settings "peft.r=64,learning_rate=2e-3" --seeds 0 1

Each setting trains the default study's contamination (100 synth_nli members, metadata format, 5 epochs, batch 4)
with ``contaminate=lora`` through the study's own ``contaminate`` stage (so its checkpoint lands in the cache and a
later study with the same settings reuses it), then runs Algorithms 1 and 2 on the contaminated x members cell only
(10 members, guided and general completions; the other detectors off). "Replays" is Algorithm 2's count of exact and
near-exact guided completions, the paper's Table 1; the full fine-tune at the default dose gives 4 exact + 3
near-exact (conf/contaminate/full.yaml). Prints one row per (setting, seed) and writes them to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

# Ordered by how hard they push: the LoRA defaults before this search, then a higher rate, then rank and rate.
SETTINGS = ("peft.r=16,learning_rate=1e-3", "peft.r=16,learning_rate=3e-3", "peft.r=64,learning_rate=2e-3")
OFF = ("membership", "dc_pdd", "cheat", "sharded_likelihood")


def run(setting: str, seed: int, cache: Path, extra: list[str] = ()) -> dict:
    from hydra import compose, initialize_config_dir

    from contaminate.run import Run
    from contaminate.stages import Reading, StudyModels, detect_cell
    from detect.cli import CONF_DIR
    from detect.pipeline import summarize
    from detect.runtime import from_config

    overrides = [f"contaminate.{pair}" for pair in setting.split(",")]
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("contaminate", ["+dataset=synth_nli", "contaminate=lora", *overrides, f"seed={seed}",
                                      f"cache_dir={cache}", "detect.semantic_model=null",
                                      *(f"detect.detectors.{name}.enabled=false" for name in OFF), *extra])
    placement = from_config(cfg.runtime)
    study = Run(cfg, placement)  # the study's setup, checked
    setup = study.setup
    started = time.time()
    layout = study.lay_out(study.sample())
    sampled = layout.draw.study(*study.design.pairs[0], cfg.sample.n_detect, cfg.sample.draw)
    contaminated = study.train(layout, cache / "unused")
    train_s = time.time() - started
    models = StudyModels(cfg.detect, placement, {"contaminated": (contaminated.model, contaminated.record["id"]),
                                          "clean": contaminated.clean}, setup.serving, setup.detectors)
    instances, split = sampled.detection["members"]
    started = time.time()
    rows, _ = detect_cell(Reading.of(cfg), models, "contaminated", instances, sampled.whole["members"], split,
                          setup.judge)
    outcome = summarize(rows, setup.detectors, seed=seed)
    record = contaminated.record
    return {"setting": setting, "seed": seed, "first_loss": record["first_loss"], "final_loss": record["final_loss"],
            "train_s": record["train_seconds"] if not contaminated.reused else round(train_s, 1),
            "reused": contaminated.reused, "detect_s": round(time.time() - started, 1),
            "exact": outcome["alg2"]["exact"], "near_exact": outcome["alg2"]["near_exact"],
            "alg2": outcome["alg2"]["contaminated"],
            "alg1": {score: result["significant"] for score, result in outcome["alg1"].items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), help="contaminate.<key>=<value>,...")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="seeds for every setting")
    parser.add_argument("--best-seed", type=int, default=1, help="the best setting again with this seed (-1: no)")
    parser.add_argument("--cache", type=Path, default=Path("runs/cache"))
    parser.add_argument("--out", type=Path, default=Path("runs/lora_search.json"))
    parser.add_argument("--overrides", nargs="*", default=[], help="more config overrides (a smoke run: "
                        "model=tiny_random sample.n_members=12 ...)")
    args = parser.parse_args()
    results = []
    print(f"{'setting':<32} seed  loss first->final  train s  replays (exact+near)  Alg2  Alg1")

    def report(row: dict) -> None:
        results.append(row)
        print(f"{row['setting']:<32} {row['seed']:>4}  {row['first_loss']:.2f} -> {row['final_loss']:.2f}     "
              f"{row['train_s']:>7.0f}  {row['exact']} + {row['near_exact']:<17}  {str(row['alg2']):<5} "
              f"{row['alg1']}", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))

    for setting in args.settings:
        for seed in args.seeds:
            report(run(setting, seed, args.cache, args.overrides))
    if args.best_seed >= 0 and args.best_seed not in args.seeds:
        # Algorithm 2's verdict first, then exact replicas (the stronger evidence), then near-exact ones
        best = max(results, key=lambda row: (row["alg2"], row["exact"], row["near_exact"], -row["final_loss"]))
        report(run(best["setting"], args.best_seed, args.cache, args.overrides))


if __name__ == "__main__":
    main()
