"""Where every model runs and in which number format: one policy for the lab's checkpoints, the reference model,
the semantic-score encoder and a local judge (the ``runtime`` config group).

    placement = resolve_placement(device="auto", dtype="auto")      # Placement(device="cpu", dtype="float32")
    model = from_pretrained(path, **placement.load_kwargs())        # detect.models.load does this

``auto`` means CUDA with bfloat16 where the GPU supports it, CUDA with float32 on an older GPU, else the CPU:
with bfloat16 where it has native bf16 instructions (AVX-512 BF16 or AMX), float32 otherwise. Measured on a 2-core
AMD EPYC with AVX-512 BF16: the embedded model's forward pass 3.1-3.5x faster in bf16 than in float32 (~2,000
against ~580 tokens/s), bf16-autocast training 1.6x, the README study 7 min 9 s against 12 min 44 s with Algorithm
2's counts unchanged (docs/study.md). Without native instructions PyTorch emulates bf16: on this project's earlier
2-core AVX2 machine bf16 autocast trained about 20x slower than float32 (49 s against 2.5 s a step), hence float32
there. Logits in bf16 carry ~3 significant digits (a token's log-probability to ~0.06 nats): the scores average
many tokens, and a GPU run reads them the same way. ``LAB_AUTO_CPU_BF16=0`` keeps auto at float32 on every CPU
(the test suite sets it, so that its numbers do not depend on which CPU runs it); ``runtime.dtype=fp32`` asks for
float32 in one run. An explicit value is honoured or refused with one line that says what to set: ``cuda`` on a
machine without one, ``cuda:2`` with two GPUs, ``bf16`` on a CPU or GPU without it, ``fp16`` on a CPU.

``device_map``: ``null`` puts the whole model on ``device``; ``auto`` spreads it over every visible GPU (and the
CPU if they are full) with accelerate. A model whose weights do not fit in 90% of one GPU's free memory is spread
the same way without being asked, when more GPUs are visible. Under a distributed launch (``accelerate launch``,
``torchrun``: ``LOCAL_RANK`` / ``WORLD_SIZE`` set) each process takes its own GPU and nothing is spread.

Training follows the same policy: float32 weights are trained with bf16 (or fp16) autocast where the dtype says
so (mixed precision), in full float32 otherwise.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from detect.errors import InputError

DTYPES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16",
          "fp16": "float16", "float16": "float16"}
_DEVICE = re.compile(r"^(cpu|mps|cuda)(?::(\d+))?$")
DEVICES = "auto, cpu, cuda, cuda:<index> or mps"


@dataclass(frozen=True)
class Placement:
    device: str              # "cpu", "cuda:0", "mps"
    dtype: str               # torch dtype name: "float32", "bfloat16", "float16"
    device_map: str | None = None  # "auto": spread over the visible GPUs with accelerate

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    @property
    def torch_dtype(self):
        import torch

        return getattr(torch, self.dtype)

    def describe(self) -> dict:
        return asdict(self)

    def key(self) -> dict:
        """What changes computed numbers (for cache keys): the kind of device and the dtype, not the GPU's index."""
        return {"device": self.device_type, "dtype": self.dtype}


def _cpu_has_native_bf16() -> bool:
    """AVX-512 BF16 or AMX on x86, bf16 instructions on Arm. Not ``torch.ops.mkldnn._is_mkldnn_bf16_supported``: it
    also says yes for plain AVX-512 (Skylake to Ice Lake), where oneDNN converts bf16 rather than computing it."""
    import platform

    import torch

    if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686"):
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())  # Arm: its check is the bf16 extension


def _auto_bf16(device: str) -> bool:
    """Whether ``dtype=auto`` takes bfloat16 on ``device``: a GPU or CPU that computes it natively (on a CPU, unless
    ``LAB_AUTO_CPU_BF16=0``)."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.is_bf16_supported()
    return device == "cpu" and os.environ.get("LAB_AUTO_CPU_BF16", "1") != "0" and _cpu_has_native_bf16()


def _local_gpu() -> int:
    import torch

    return int(os.environ.get("LOCAL_RANK", torch.cuda.current_device()))


def _check_device(device: str) -> str:
    import torch

    match = _DEVICE.match(device)
    if not match:
        raise InputError(f"unknown runtime.device '{device}'; use {DEVICES}")
    kind, index = match.group(1), match.group(2)
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise InputError(f"runtime.device={device} but this machine has no CUDA GPU (torch {torch.__version__}); "
                             f"set runtime.device=cpu or auto")
        if index is not None and int(index) >= count:
            raise InputError(f"runtime.device={device} but this machine has {count} CUDA GPU(s), cuda:0 to "
                             f"cuda:{count - 1}; set runtime.device=cuda:0 or auto")
        return f"cuda:{index or _local_gpu()}"
    if kind == "mps" and not torch.backends.mps.is_available():
        raise InputError("runtime.device=mps but this machine has no Apple GPU; set runtime.device=cpu or auto")
    if kind == "cpu" and index is not None:
        raise InputError(f"runtime.device={device}: the CPU has no index; set runtime.device=cpu")
    return kind


def _check_dtype(dtype: str, device: str) -> str:
    import torch

    name = DTYPES.get(str(dtype).lower())
    if name is None:
        raise InputError(f"unknown runtime.dtype '{dtype}'; use auto, fp32, bf16 or fp16")
    kind = device.split(":")[0]
    if name == "bfloat16" and kind == "cpu" and not _cpu_has_native_bf16():
        raise InputError("runtime.dtype=bf16 but this CPU has no native bfloat16 (AVX-512 BF16 or AMX), where it runs "
                         "about 20x slower than float32; set runtime.dtype=fp32 (or auto)")
    if name == "bfloat16" and kind == "cuda" and not torch.cuda.is_bf16_supported():
        raise InputError(f"runtime.dtype=bf16 but {torch.cuda.get_device_name(device)} has no bfloat16; "
                         f"set runtime.dtype=fp16 or fp32 (or auto)")
    if name == "float16" and kind == "cpu":
        raise InputError("runtime.dtype=fp16 runs on GPUs only; on a CPU set runtime.dtype=fp32 (or auto)")
    return name


def resolve_placement(device: str = "auto", dtype: str = "auto", device_map: str | None = None) -> Placement:
    """The concrete device and dtype for ``runtime.device`` / ``runtime.dtype`` / ``runtime.device_map``."""
    import torch

    device, dtype = str(device), str(dtype)
    if device == "auto":  # under a distributed launch each process takes its own GPU
        device = f"cuda:{_local_gpu()}" if torch.cuda.is_available() else "cpu"
    else:
        device = _check_device(device)
    if dtype == "auto":
        dtype = "bfloat16" if _auto_bf16(device) else "float32"
    else:
        dtype = _check_dtype(dtype, device)
    if device_map not in (None, "auto"):
        raise InputError(f"unknown runtime.device_map '{device_map}'; use null (one device) or auto (every GPU)")
    if device_map == "auto" and not device.startswith("cuda"):
        raise InputError("runtime.device_map=auto spreads a model over GPUs, and this run has none; "
                         "set runtime.device_map=null")
    return Placement(device, dtype, device_map)


_MALLOC_SET = False


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep the memory PyTorch frees on the CPU for its next tensors, instead of handing it
    back to the system (``detect.models.load`` calls it when a model runs on the CPU; True where it took effect).

    glibc serves every allocation over 32 MB (a batch's logits: 2,048 tokens x 49,152 x 4 bytes = 400 MB) with a
    fresh ``mmap`` and unmaps it on free, so each such tensor page-faults in 100k zeroed pages again. Measured on
    the README study (2-core AMD EPYC, bf16): 73 million page faults and 166 s of system time; detection alone
    179 -> 151 s with them gone (``MALLOC_MMAP_MAX_=0``, ``MALLOC_TRIM_THRESHOLD_``: what this sets). Freed memory
    is held for reuse until the process ends or ``release_freed_memory`` hands it back (at the end of each stage):
    alone, the README study peaked at 11.9 GB against 6.4 GB before. ``LAB_KEEP_FREED_MEMORY=0`` leaves malloc as it
    is (less memory, more system time). A no-op off Linux/glibc."""
    global _MALLOC_SET
    if _MALLOC_SET:
        return True
    libc = _glibc()
    if libc is None or os.environ.get("LAB_KEEP_FREED_MEMORY", "1") == "0":
        return False
    mallopt = libc.mallopt
    m_trim_threshold, m_mmap_max = -1, -4  # malloc.h
    # no mmap for large blocks, and no trimming of the heap's free top (-1: never; a bounded threshold still handed
    # back the top after training freed its ~3 GB, and every big tensor after it faulted in again: detection 180 s
    # after training against 145 s alone)
    _MALLOC_SET = bool(mallopt(m_mmap_max, 0)) and bool(mallopt(m_trim_threshold, -1))
    return _MALLOC_SET


KERNEL_CACHE_CAPACITY = 32


def bound_kernel_cache(capacity: int = KERNEL_CACHE_CAPACITY) -> bool:
    """Hold at most ``capacity`` compiled CPU kernels in oneDNN's primitive cache, not its default 1,024
    (``detect.models.load`` calls it with ``keep_freed_memory``; True where this call set it).

    oneDNN (PyTorch's CPU matmuls in bf16) compiles a kernel per operand shape and keeps it in an LRU cache.
    Padding-free training gives each step a batch length of its own, so every step compiles 20 kernels (the same
    20 shapes over its 30 layers, 5,474 matmuls: ``ONEDNN_VERBOSE=2``) that no later step uses. The default study's
    training alone (125 steps, 2-core AMD EPYC, bf16: ``python bench/training_memory.py``) peaked at 5.26 GB with
    1,024 kernels and 4.16 GB with 32, in the same time; 8, fewer than a step's 20, compiled again within steps:
    4.12 GB, 1.08x the time. The whole study: 6.11 -> 4.43 GB, scores identical (results/memory_46/kernel_cache).
    oneDNN reads the variable when it first compiles a kernel, so this takes effect only before the process's first
    bf16 matmul; a value the user set (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``) is kept."""
    if "ONEDNN_PRIMITIVE_CACHE_CAPACITY" in os.environ:
        return False
    os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(capacity)
    return True


def release_freed_memory() -> None:
    """Hand the memory freed so far back to the system: a full garbage collection (a trainer is held in reference
    cycles), then glibc's ``malloc_trim(0)``, which returns every free page of the heap, not only its top.

    ``keep_freed_memory`` keeps freed memory for the next tensors, which is what a stage wants inside it; between
    stages it is memory held for tensors of the wrong sizes: the heap only grows (a small study, 16 members: 3.1 GB
    held after training, 5.5 GB by its last cell). Called where one stage ends and the next one's sizes differ
    (after training, after each detection cell): the next stage faults its pages in once, not once per tensor.
    Only the collection off Linux/glibc."""
    import gc

    gc.collect()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def resident_gb() -> float:
    """This process's resident memory now (``VmRSS`` in /proc/self/status, Linux), in KiB / 1e6: the unit of
    ``ru_maxrss`` as the benches print a peak, so a reading and a peak compare (bench/training_memory.py after each
    step, bench/conversion_memory.py around the conversion)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1e6


def _glibc():
    """glibc as a ctypes library with ``mallopt`` and ``malloc_trim``; None off Linux or on another libc (musl)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 (both looked up: another libc lacks them)
    except (OSError, AttributeError):
        return None
    return libc


def from_config(runtime_cfg) -> Placement:
    """From the ``runtime`` config group (device, dtype, device_map)."""
    return resolve_placement(runtime_cfg.device, runtime_cfg.dtype, runtime_cfg.get("device_map"))


def weights_bytes(folder: str | Path) -> int:
    """The size of a model folder's weight files (0 for a hub id not downloaded yet)."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    return sum(path.stat().st_size for pattern in ("*.safetensors", "*.bin") for path in folder.glob(pattern))


def _stored_itemsize(folder: Path) -> int:
    """Bytes per weight as the folder stores them (its config's dtype; float32 if it says none)."""
    import json

    import torch

    config = json.loads((folder / "config.json").read_text()) if (folder / "config.json").is_file() else {}
    name = config.get("dtype") or config.get("torch_dtype") or "float32"
    return getattr(torch, str(name), torch.float32).itemsize


def needs_device_map(placement: Placement, folder: str | Path) -> bool:
    """True when ``placement`` asks for a spread model, or puts a model on a GPU that it does not fit (90% of the
    GPU's free memory after conversion to ``placement.dtype``) while more GPUs are visible."""
    if placement.device_map == "auto":
        return True
    if not placement.device.startswith("cuda") or int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return False  # one GPU per process under a distributed launch
    import torch

    if torch.cuda.device_count() < 2:
        return False
    free, _ = torch.cuda.mem_get_info(placement.device)
    size = weights_bytes(folder) * placement.torch_dtype.itemsize / _stored_itemsize(Path(folder))
    return size > 0.9 * free


def placement_of(model) -> dict:
    """Where a loaded model really is: its device (or device map) and dtype."""
    device_map = getattr(model, "hf_device_map", None)
    if device_map and len(set(device_map.values())) > 1:
        return {"device_map": {str(k): str(v) for k, v in device_map.items()}, "dtype": str(model.dtype).split(".")[-1]}
    parameter = next(model.parameters())
    return {"device": str(parameter.device), "dtype": str(parameter.dtype).split(".")[-1]}
