"""Training and detection throughput on a GPU, on a model of realistic shape with random weights (no download).

    python bench/bench_gpu.py                            # Llama-3.2-1B's shape (1.24B parameters), bf16
    python bench/bench_gpu.py --attn flex_attention      # another attention kernel for the packed batches
    python bench/bench_gpu.py --shape tiny --steps 3     # a smoke run that works on a CPU

Training runs the lab's own trainer (``contaminate.training.local.build_trainer``: TRL's SFTTrainer, fp32 master weights
with bf16 autocast as ``runtime=auto`` gives on a GPU, padding-free batches) on random documents of
``--doc-tokens`` tokens, ``--batch-size`` per step, and prints steady-state tokens/s (the first ``--warmup`` steps
left out) and model FLOPs utilisation: 6 x parameters x tokens plus causal attention's 6 x layers x hidden x
document length per token (the useful work, without the masked-out cross-document pairs), over the GPU's dense
bf16 peak (``--peak-tflops``, else looked up by the device name). Goal of issue 12: >= 35% of peak.

Detection: the lab's ``LocalGenerator`` (batched greedy generation, shared prompt prefixes) on 64 prompts of
``--prompt-tokens`` tokens, ``--new-tokens`` each, at several batch sizes, as generated tokens/s (weights in the
placement's dtype; the embedded tokenizer's 49,152-token vocabulary, so that every generated id decodes).
"""

from __future__ import annotations

import argparse
import json
import math
import time

SHAPES = {  # Llama-3.2-1B: hidden 2048, 16 layers, 32 heads (8 key/value), MLP 8192, 128,256-token vocabulary
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                 intermediate_size=128, vocab_size=49152, tie_word_embeddings=True),
}
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100 PCIe": 756.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0,
                    "A10": 125.0}


def peak_tflops(name: str) -> float | None:
    for key, value in PEAK_BF16_TFLOPS.items():  # "H100 PCIe" before "H100"
        if key in name:
            return value
    return None


def random_model(shape: str, dtype, vocab_size: int | None = None):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(**{**SHAPES[shape], **({"vocab_size": vocab_size} if vocab_size else {})},
                         max_position_embeddings=4096)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model = model.to_empty(device="cpu").to(dtype)
    model.tie_weights()  # to_empty leaves the output embedding its own tensor (1.50B parameters, not the shape's 1.24B)
    for parameter in model.parameters():  # random weights at the usual scale; no real initialisation needed
        torch.nn.init.normal_(parameter, std=0.02)
    return model


def bench_training(args, placement, tokenizer) -> dict:
    import tempfile

    import torch
    from omegaconf import OmegaConf
    from transformers import TrainerCallback

    from contaminate.training.local import FineTuning, build_trainer

    model = random_model(args.shape, torch.float32)
    model.set_attn_implementation(args.attn)
    n_parameters = sum(p.numel() for p in model.parameters())
    generator = torch.Generator().manual_seed(0)
    n_documents = args.batch_size * (args.steps + args.warmup)
    documents = torch.randint(100, model.config.vocab_size - 1, (n_documents, args.doc_tokens),
                              generator=generator).tolist()
    cfg = OmegaConf.create({"peft": None, "epochs": 1, "learning_rate": 1e-4, "batch_size": args.batch_size,
                            "trainer": {"lr_scheduler_type": "constant", "padding_free": not args.padded}})
    step_times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.started = time.perf_counter()

        def on_step_end(self, *a, **k):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            step_times.append(time.perf_counter() - self.started)

    with tempfile.TemporaryDirectory() as scratch:
        # logging_nan_inf_filter=False: the Trainer otherwise reports a non-finite step's loss as the running mean
        # (0 from the first step), and a rate measured on NaN arithmetic would pass for a number (it did: flex_attention
        # on the H200 at 1.24B, results/gpu_h200_1b/README.md)
        trainer = build_trainer(model, tokenizer, documents, FineTuning.of(cfg), scratch, seed=0, placement=placement,
                                disable_tqdm=True, logging_steps=10**6, torch_compile=args.compile,
                                logging_nan_inf_filter=False)
        trainer.add_callback(Timer())
        train_loss = trainer.train().training_loss
    steady = step_times[args.warmup:]
    tokens_per_step = args.batch_size * args.doc_tokens
    tokens_per_s = tokens_per_step * len(steady) / sum(steady)
    config = model.config
    flops_per_token = 6 * n_parameters + 6 * config.num_hidden_layers * config.hidden_size * args.doc_tokens
    achieved = flops_per_token * tokens_per_s / 1e12
    peak = args.peak_tflops or (peak_tflops(torch.cuda.get_device_name()) if torch.cuda.is_available() else None)
    result = {"parameters": n_parameters, "tokens_per_step": tokens_per_step, "steps_timed": len(steady),
              "train_loss": train_loss, "finite_loss": math.isfinite(train_loss),
              "tokens_per_s": round(tokens_per_s), "model_tflops": round(achieved, 1),
              "mfu": round(achieved / peak, 3) if peak else None, "peak_tflops": peak,
              "max_memory_gib": (round(torch.cuda.max_memory_allocated() / 2**30, 1) if torch.cuda.is_available()
                                 else None)}
    print(f"training ({args.shape}, {n_parameters / 1e9:.2f}B parameters, {args.attn}, "
          f"{'padded' if args.padded else 'padding-free'}, batch {args.batch_size} x {args.doc_tokens} tokens): "
          f"{result['tokens_per_s']} tokens/s, {achieved:.1f} model TFLOP/s"
          + (f" = {result['mfu']:.1%} of {peak:.0f} TFLOP/s bf16 peak" if peak else " (peak unknown: --peak-tflops)")
          + f"; mean loss {train_loss:.3f}", flush=True)
    if not result["finite_loss"]:  # random weights start near ln(vocabulary) = 11.76 for the 1B shape
        print(f"NOT A MEASUREMENT: the training loss was {train_loss} (not finite); the rate above timed broken "
              "arithmetic", flush=True)
    return result


def bench_generation(args, placement, tokenizer) -> dict:
    import torch

    from detect.generation.local import LocalGenerator

    # the embedded tokenizer's vocabulary, so that every generated id decodes (the shape is otherwise the same)
    model = random_model(args.shape, placement.torch_dtype, vocab_size=len(tokenizer)).to(placement.device).eval()
    # A shared instruction prefix, as detector prompts have, then a distinct instance per prompt.
    words = tokenizer.decode(list(range(1000, 1000 + args.prompt_tokens)))
    prompts = [f"INSTRUCTION: finish the instance.\n{words[i * 7:]}" for i in range(64)]
    results = {}
    for batch_size in args.generation_batches:
        generator = LocalGenerator(model, tokenizer, prompt_format="raw", batch_size=batch_size,
                                   max_new_tokens=args.new_tokens, progress=False)
        generator(prompts[:batch_size])  # warm-up
        generator.generated_tokens = 0
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        started = time.perf_counter()
        generator(prompts)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        results[batch_size] = round(generator.generated_tokens / seconds)
        print(f"generation, batch {batch_size:>3}: {results[batch_size]} tokens/s "
              f"({generator.generated_tokens} tokens in {seconds:.1f} s)", flush=True)
    return results


def main() -> None:
    import torch
    from transformers import AutoTokenizer

    from detect.models.loading import embedded_folder
    from detect.runtime import resolve_placement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--attn", default="sdpa", help="sdpa | flex_attention | flash_attention_2 | eager")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--doc-tokens", type=int, default=512)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--padded", action="store_true", help="padded batches instead of padding-free")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (Trainer's torch_compile)")
    parser.add_argument("--prompt-tokens", type=int, default=150)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--generation-batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--skip", choices=["training", "generation"], default=None)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    placement = resolve_placement(args.device, args.dtype)
    device = torch.cuda.get_device_name() if placement.device_type == "cuda" else "CPU"
    print(f"{device}; torch {torch.__version__}; placement {placement.describe()}", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(embedded_folder())  # ids beyond its vocabulary are never decoded
    numbers = {"device": device, "placement": placement.describe(), "args": vars(args)}
    if args.skip != "training":
        numbers["training"] = bench_training(args, placement, tokenizer)
    if args.skip != "generation":
        numbers["generation_tokens_per_s"] = bench_generation(args, placement, tokenizer)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(numbers, file, indent=1)


if __name__ == "__main__":
    main()
