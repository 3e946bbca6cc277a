"""Does the model answer the paper's guided instruction? Its follow rate and false-positive cost by reading: chat or
raw, zero-shot or with worked examples on standard-library text (detect.elicit.shots), on instances this lab never
planted in it (issue 45).

    python bench/follow_rates.py --n 40 --out results/follow_untouched     # the untouched embedded model
    python bench/follow_rates.py --n 40 --model gemma3_270m --out results/follow_untouched/gemma3_270m

For each dataset, ``--n`` instances (seed 0) of its default split are asked under the guided instruction in every
reading; each answer is classed (detect/detectors/time_travel/follow.py) and judged by the default threshold judge
(ROUGE-L >= 0.95 exact, >= 0.75 near-exact). On synth_nli (novel text) an exact or near-exact label is a false positive
by construction; on HumanEval the untouched model may have met the problems in pretraining (no ground truth), so its
labels are a reading, not an error rate. One model, one draw of instances: shares with Clopper-Pearson intervals over
instances, which is all one model allows. A model without a chat template (a pretrained base model: Gemma 3 270M) is
read raw only, zero-shot and with the worked examples.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contaminate.analyses.template_spread import rate  # noqa: E402  (a share with its Clopper-Pearson interval)
from detect.detectors.time_travel.follow import CLASSES, FOLLOWED  # noqa: E402
from detect.markdown import row, table  # noqa: E402

DATASETS = ("humaneval", "synth_nli")
READINGS = (("chat", 0), ("raw", 0), ("chat", 3), ("raw", 3))


def open_model(name: str, prompt_format: str = "raw"):
    """(ref, model) for a bench that asks the guided instruction: ``name`` an embedded model's (smollm2_135m,
    gemma3_270m), a run's checkpoint folder (groups/<g>/checkpoint: its model/ inside), a model folder or a hub id;
    greedy, 256 new tokens, asked ``prompt_format``."""
    from detect.models import GenerationSettings, embedded, hub
    from detect.models.hf import LocalModels
    from detect.models.loading import EMBEDDED

    if (Path(name) / "lab_checkpoint.json").is_file():
        name = str(Path(name) / "model")
    ref = embedded(name) if name in EMBEDDED else hub(name)
    return ref, LocalModels().open(ref, GenerationSettings(prompt_format=prompt_format, max_new_tokens=256,
                                                           progress=False))


def measure(n: int, model_path: str | None = None) -> tuple[str, float]:
    from omegaconf import OmegaConf

    from detect.cli import CONF_DIR
    from detect.datasets import load_split, sample
    from detect.judges.threshold import ThresholdJudge
    from detect.pipeline import detect_partition

    detect_cfg = OmegaConf.load(CONF_DIR / "detect" / "default.yaml")
    ref, model = open_model(model_path or "smollm2_135m")
    judge = ThresholdJudge()
    started = time.time()
    lines = [f"Model: {ref.name} ({ref.path}), greedy, answers read as generated to the length cap "
             f"(detect.stop.lines: false); {n} instances a dataset (seed 0). Follow rate: the share of continuations; "
             f"exact / near-exact: the default threshold judge's labels. Clopper-Pearson 95% over instances (one "
             f"model).", ""]
    for key in DATASETS:
        dataset = OmegaConf.load(CONF_DIR / "dataset" / f"{key}.yaml")
        split = dataset.default_split
        examples = sample(load_split(dataset, split), n, seed=0)
        lines += [f"#### {key} ({split})", "", *table(["reading", "shots", "follow rate",
                                                      *(c.replace("_", " ") for c in CLASSES), "exact", "near-exact"])]
        for prompt_format, shots in (r for r in READINGS if r[0] in model.prompt_formats):
            rows = detect_partition(examples, dataset=dataset, split=split, model=model, judge=judge, seed=0,
                                    stop=detect_cfg.stop, instructions=("guided",), prompt_format=prompt_format,
                                    shots=shots)
            classes = [r["answer_class"] for r in rows]
            labels = [r["judge"] for r in rows]
            exact, near = (rate(labels.count(label), len(rows)) for label in ("exact", "near_exact"))
            lines.append(row([prompt_format, shots, rate(classes.count(FOLLOWED), len(rows)),
                              *(classes.count(c) for c in CLASSES), exact, near]))
        lines.append("")
    return "\n".join(lines), time.time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="instances a dataset")
    parser.add_argument("--model", default=None, help="an embedded model's name (smollm2_135m, the default; "
                        "gemma3_270m), a run's checkpoint folder, a model folder or hub id")
    parser.add_argument("--out", default=None, help="a folder: table.md written there")
    args = parser.parse_args()
    table, seconds = measure(args.n, args.model)
    print(table)
    print(f"{seconds:.0f} s", file=sys.stderr)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "table.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
