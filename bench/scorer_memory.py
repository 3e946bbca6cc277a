"""Peak memory of the logit detectors' per-token statistics (detect/models/logits.py TokenScorer, what membership,
DC-PDD and the reference ratio read): every HumanEval problem in the metadata leak format, with Min-K%++'s moments,
on the embedded SmolLM2-135M, each setting in its own process (its peak resident memory is its own):

    python bench/scorer_memory.py

Baseline: the statistics of a whole batch at once (``max_statistics_tokens`` unbounded: what the scorer did before,
up to 8,192 positions x 49,152 vocabulary in float32 copies); against it 1,024 positions at a time and 256, the
model's logits made whole for each batch (before issue 46), and 256 with the head run apart from the decoder
(``split_head``, the default since issue 46: no batch's logits exist whole, 256 positions' at a time).
Prints each setting's peak resident memory (ru_maxrss), its growth over the loaded model, seconds, and whether the
statistics are the baseline's (the sum of log p, and of mu where computed).
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"whole batch (before issue 45)": (10**9, False), "1,024 positions at a time (issue 45)": (1024, False),
            "256 positions at a time (issue 45)": (256, False),
            "256 at a time, head apart (default)": (256, True)}


def measure(max_statistics_tokens: int, split: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    from omegaconf import OmegaConf

    from detect.datasets import load_split
    from detect.models import embedded_smollm2, load, logits
    from detect.models.logits import TokenScorer
    from detect.runtime import resolve_placement

    if not split:  # the whole model's logits for every batch, as before issue 46
        logits.split_head = lambda model, torch: None

    model, tokenizer = load(embedded_smollm2(), resolve_placement("cpu", "auto"))
    dataset = OmegaConf.load(ROOT / "conf/dataset/humaneval.yaml")
    texts = [f"HumanEval dataset, test split\ntask_id: HumanEval/{example.instance_id}\ncode: {example.full_text}"
             for example in load_split(dataset, "test")]
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    start = time.perf_counter()
    stats = TokenScorer(model, tokenizer, max_statistics_tokens=max_statistics_tokens)(texts, [True] * len(texts))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return {"texts": len(texts), "loaded_gb": loaded, "peak_gb": peak, "seconds": seconds,
            "sum_logp": sum(sum(s["logp"]) for s in stats), "sum_mu": sum(sum(s["mu"]) for s in stats)}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(measure(int(sys.argv[2]), sys.argv[3] == "split")))
        return
    sys.path.insert(0, str(ROOT))
    from detect.markdown import row, table  # the parent's: each measured setting is a process of its own

    print(f"CPU: {platform.processor() or platform.machine()}; one process a setting, alone\n")
    print("\n".join(table(["setting", "texts", "loaded GB", "peak GB", "growth GB", "growth ratio", "s",
                           "same statistics"])))
    baseline = None
    for name, (tokens, split) in SETTINGS.items():
        out = subprocess.run([sys.executable, __file__, "--one", str(tokens), "split" if split else "whole"],
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        found = json.loads(out)
        growth = found["peak_gb"] - found["loaded_gb"]
        baseline = baseline or {**found, "growth": growth}
        same = (abs(found["sum_logp"] - baseline["sum_logp"]) < 1e-6 * abs(baseline["sum_logp"])
                and abs(found["sum_mu"] - baseline["sum_mu"]) < 1e-6 * abs(baseline["sum_mu"]))
        print(row([name, found["texts"], f"{found['loaded_gb']:.2f}", f"{found['peak_gb']:.2f}", f"{growth:.2f}",
                   f"{growth / baseline['growth']:.2f}", f"{found['seconds']:.1f}", "yes" if same else "no"]))


if __name__ == "__main__":
    main()
