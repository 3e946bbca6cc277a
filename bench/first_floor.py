"""Where the first command's time goes, against what this machine could do at best (issue 71 item 2).

    python bench/first_floor.py runs/contaminate/<time>_synth_nli_smollm2_135m_full     # a finished study's folder

Measures, on this machine, alone: the matrix-multiply rate of the model's own shapes (a batch of 2,048 token rows
through SmolLM2-135M's MLP projections, 576 x 1,536, and its output head, 576 x 49,152) in float32 and bfloat16, and
the greedy decode rate of the embedded model (a batch of 10 prompts, 64 new tokens, the study's batch of one cell's
guided prompts). Then reads the study's manifest (its trained, scored and generated tokens, its stage timings) and
prints each stage's floor: training 6 N flops a trained token, scoring 2 N a scored token (N, the model's parameters
with the tied head counted once as a matmul: every token goes through it), both at the measured matmul rate in the
run's precision; generation its generated tokens at the measured decode rate. The floor ignores attention (sequences
here are under 700 tokens, where it is a few percent of the flops), the optimizer step and data handling: what is
above it is overhead, not arithmetic.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pass_at_1 import cpu_name  # noqa: E402  (the CPU as every bench names it)
from detect.markdown import row, table  # noqa: E402


def matmul_rate(dtype, rows: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of the model's own matmul shapes (MLP up and down, the head) at ``rows`` token rows."""
    import torch

    shapes = [(576, 1536), (1536, 576), (576, 49152)]
    weights = [torch.randn(a, b, dtype=dtype) for a, b in shapes]
    inputs = [torch.randn(rows, a, dtype=dtype) for a, _ in shapes]
    flops = sum(2 * rows * a * b for a, b in shapes)
    for x, w in zip(inputs, weights):  # warm
        x @ w
    started = time.perf_counter()
    for _ in range(repeats):
        for x, w in zip(inputs, weights):
            x @ w
    return flops * repeats / (time.perf_counter() - started)


def decode_rate(dtype_name: str, batch: int = 10, new_tokens: int = 64) -> tuple[float, int]:
    """Generated tokens a second (greedy, ``batch`` prompts of a synth_nli guided shape, ``new_tokens`` each), and the
    model's parameters (the tied head once)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from detect.models import embedded

    folder = embedded("smollm2_135m").path
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype_name)).eval()
    prompts = [f"Instruction: finish the second piece exactly as it appeared.\nFirst piece: sentence {i} of a "
               f"synthetic premise about a town and its river.\nSecond piece:" for i in range(batch)]
    encoded = tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.inference_mode():
        model.generate(**encoded, max_new_tokens=4, do_sample=False, pad_token_id=tokenizer.eos_token_id)  # warm
        started = time.perf_counter()
        out = model.generate(**encoded, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                             pad_token_id=tokenizer.eos_token_id)
        elapsed = time.perf_counter() - started
    return (out.shape[1] - encoded["input_ids"].shape[1]) * batch / elapsed, sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="a finished study's folder (its manifest.json)")
    args = parser.parse_args()
    import torch

    manifest = json.loads((args.study / "manifest.json").read_text())
    precision = (manifest.get("runtime") or {}).get("resolved", {}).get("dtype", "float32")
    ran_in = "bfloat16" if "bf" in str(precision) else "float32"  # the run's precision, as torch names it
    rate = {name: matmul_rate(getattr(torch, name)) for name in ("float32", "bfloat16")}
    decode, n_params = decode_rate(ran_in)
    timings = manifest["timings"]
    cells = timings.get("cells") or {}
    trained = manifest["checkpoint"].get("trained_tokens") or 0
    scored = sum(c.get("scored_tokens", 0) for c in cells.values())
    generated = sum(c.get("generated_tokens", 0) for c in cells.values())
    used = rate[ran_in]
    floors = {"training": 6 * n_params * trained / used, "scoring": 2 * n_params * scored / used,
              "generation": generated / decode}
    print(f"{cpu_name()}, {torch.get_num_threads()} threads; the study ran in {precision}")
    print(f"matmul rate (the model's shapes, 2,048 rows): float32 {rate['float32'] / 1e9:.1f} GFLOP/s, bfloat16 "
          f"{rate['bfloat16'] / 1e9:.1f} GFLOP/s; greedy decode, batch 10: {decode:.0f} tokens/s")
    print(f"{n_params:,} parameters; trained tokens {trained:,}, scored {scored:,}, generated {generated:,}")
    logits = sum(c.get("logits_s", 0) for c in cells.values())
    instances = sum(c.get("instances_s", 0) for c in cells.values())
    measured = {"training": timings.get("train_s"), "scoring": logits, "generation": instances}
    print("\n".join(table(["stage", "measured s", "floor s", "measured / floor"])))
    for stage, floor in floors.items():
        got = measured[stage]
        print(row([stage, f"{got:.0f}", f"{floor:.0f}", f"{got / floor:.1f}x"] if got else
                  [stage, "-", f"{floor:.0f}", "-"]))
    print(f"study total {timings.get('total_s', 0):.0f} s; floor of the three {sum(floors.values()):.0f} s "
          f"(scoring: the cells' logits_s; generation: their instances_s, which also holds the judge's scoring)")


if __name__ == "__main__":
    main()
