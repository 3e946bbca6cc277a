"""A randomly initialised Llama-shaped model saved as a plain model folder with the embedded model's tokenizer, for
GPU checks where no weights can be downloaded (the planted run of bench/gpu_check.sh reads it as ``model=hub
model.name_or_path=<folder>``).

    python bench/random_llama.py /tmp/rand1b              # Llama-3.2-1B's shape, 49,152-token vocabulary: 1.07B
    python bench/random_llama.py /tmp/randtiny --shape tiny

The library's own initialisation (normal with std 0.02, norms at 1), seeded, built on the GPU when there is one,
saved in bf16 (about 2 GB for the 1B shape; 3-5 s on an H200).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from bench_gpu import SHAPES


def main() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from detect.models.loading import embedded_folder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    args = parser.parse_args()
    started = time.perf_counter()
    tokenizer_folder = embedded_folder()
    config = LlamaConfig(**{**SHAPES[args.shape], "vocab_size": 49152}, max_position_embeddings=4096,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2)
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(config)
    model.to(torch.bfloat16).save_pretrained(args.target)
    for name in ["chat_template.jinja", "tokenizer.json", "tokenizer_config.json", "generation_config.json"]:
        shutil.copy(tokenizer_folder / name, args.target / name)
    print(f"{sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters saved to {args.target} "
          f"in {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
