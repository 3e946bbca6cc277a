"""The runtime policy: auto, explicit and refused devices and dtypes, on this CPU and on a GPU faked by patching
torch's queries (no GPU is needed to check what the policy decides)."""

import subprocess
import sys

import pytest
import torch

import detect.runtime as runtime
from detect.errors import InputError
from detect.runtime import Placement, resolve_placement


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.fixture
def two_gpus(monkeypatch):
    """Two CUDA devices with bf16, as an H100 machine would report them."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100")


def test_auto_on_a_cpu_machine_is_cpu_float32(no_gpu, monkeypatch):
    monkeypatch.setattr(runtime, "_cpu_has_native_bf16", lambda: False)  # an AVX2 CPU: bf16 would be emulated
    monkeypatch.delenv("LAB_AUTO_CPU_BF16", raising=False)
    assert resolve_placement() == Placement("cpu", "float32", None)
    assert resolve_placement("cpu", "fp32") == resolve_placement("auto", "float32") == Placement("cpu", "float32")
    assert resolve_placement().key() == {"device": "cpu", "dtype": "float32"}


def test_refused_on_a_cpu_machine(no_gpu, monkeypatch):
    for device in ("cuda", "cuda:0"):
        with pytest.raises(InputError, match=f"runtime.device={device} but this machine has no CUDA GPU.*"
                                             f"set runtime.device=cpu or auto"):
            resolve_placement(device)
    monkeypatch.setattr(runtime, "_cpu_has_native_bf16", lambda: False)
    with pytest.raises(InputError, match="runtime.dtype=bf16 but this CPU has no native bfloat16 .*set runtime.dtype="
                                         "fp32"):
        resolve_placement("cpu", "bf16")
    with pytest.raises(InputError, match="runtime.dtype=fp16 runs on GPUs only"):
        resolve_placement("auto", "fp16")
    with pytest.raises(InputError, match="unknown runtime.device 'gpu'; use auto, cpu, cuda, cuda:<index> or mps"):
        resolve_placement("gpu")
    with pytest.raises(InputError, match="unknown runtime.dtype 'int8'; use auto, fp32, bf16 or fp16"):
        resolve_placement("cpu", "int8")
    with pytest.raises(InputError, match="runtime.device_map=auto spreads a model over GPUs, and this run has none"):
        resolve_placement("auto", "auto", "auto")
    with pytest.raises(InputError, match="the CPU has no index"):
        resolve_placement("cpu:1")


def test_bf16_on_a_cpu_that_has_it_is_honoured(no_gpu, monkeypatch):
    monkeypatch.setattr(runtime, "_cpu_has_native_bf16", lambda: True)  # AVX-512 BF16 / AMX
    assert resolve_placement("cpu", "bf16") == Placement("cpu", "bfloat16")
    monkeypatch.delenv("LAB_AUTO_CPU_BF16", raising=False)
    assert resolve_placement() == Placement("cpu", "bfloat16")  # auto takes it where it is native
    assert resolve_placement("cpu", "fp32") == Placement("cpu", "float32")
    monkeypatch.setenv("LAB_AUTO_CPU_BF16", "0")  # what the test suite sets
    assert resolve_placement() == Placement("cpu", "float32")


def test_on_a_gpu_machine(two_gpus, monkeypatch):
    assert resolve_placement() == Placement("cuda:0", "bfloat16")
    assert resolve_placement("cuda:1", "fp16") == Placement("cuda:1", "float16")
    assert resolve_placement("cuda", "fp32", "auto") == Placement("cuda:0", "float32", "auto")
    assert resolve_placement("cpu") == Placement("cpu", "float32")  # a CPU run on a GPU machine
    with pytest.raises(InputError, match="runtime.device=cuda:2 but this machine has 2 CUDA GPU\\(s\\), cuda:0 to "
                                         "cuda:1; set runtime.device=cuda:0 or auto"):
        resolve_placement("cuda:2")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)  # a V100
    assert resolve_placement() == Placement("cuda:0", "float32")
    with pytest.raises(InputError, match="runtime.dtype=bf16 but NVIDIA H100 has no bfloat16; set runtime.dtype=fp16"):
        resolve_placement("cuda", "bf16")


def test_each_process_of_a_distributed_launch_takes_its_own_gpu(two_gpus, monkeypatch, tmp_path):
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert resolve_placement() == Placement("cuda:1", "bfloat16")
    assert resolve_placement("cuda") == Placement("cuda:1", "bfloat16")
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 10**6)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (10, 20))
    assert not runtime.needs_device_map(Placement("cuda:1", "bfloat16"), tmp_path)  # data-parallel: no spreading


def test_a_model_too_large_for_one_gpu_is_spread(two_gpus, monkeypatch, tmp_path):
    (tmp_path / "config.json").write_text('{"dtype": "bfloat16"}')
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 1000)  # 500 values stored in bf16
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (1500, 2000))
    assert not runtime.needs_device_map(Placement("cuda:0", "bfloat16"), tmp_path)  # 1000 bytes fit in 90% of 1500
    assert runtime.needs_device_map(Placement("cuda:0", "float32"), tmp_path)       # 2000 bytes do not
    assert runtime.needs_device_map(Placement("cuda:0", "bfloat16", "auto"), tmp_path)  # asked for
    assert not runtime.needs_device_map(Placement("cpu", "float32"), tmp_path)


def test_loaded_models_are_where_the_policy_says(no_gpu):
    from detect.detectors.time_travel.scores import SemanticScorer
    from detect.models import load, tiny_random

    model, _ = load(tiny_random(), resolve_placement("auto", "auto"))
    assert runtime.placement_of(model) == {"device": "cpu", "dtype": "float32"}
    encoder = SemanticScorer(placement=resolve_placement()).encoder
    assert runtime.placement_of(encoder) == {"device": "cpu", "dtype": "float32"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
@pytest.mark.parametrize("command", ["contaminate", "detect"])
def test_a_gpu_asked_for_on_the_command_line_is_one_line(command, tmp_path):
    result = subprocess.run([sys.executable, "-m", command, "+dataset=synth_nli", "runtime.device=cuda",
                             f"hydra.run.dir={tmp_path}"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: runtime.device=cuda but this machine has no CUDA GPU")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results.jsonl").exists()


def test_freed_memory_is_kept_for_the_next_tensors():
    """glibc would unmap every freed tensor over 32 MB and page-fault it in again for the next (detect/runtime.py):
    after keep_freed_memory a freed 400 MB block is reused, so allocating it again faults in almost nothing. In its
    own process: inside the suite's, whatever else the process holds decides where the heap can grow (it failed
    there two runs in three, each block faulted in afresh)."""
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt only")
    code = """
import resource, torch
from detect.runtime import keep_freed_memory
assert keep_freed_memory()
def faults_for_a_fresh_block():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = torch.ones(100_000_000)  # 400 MB, every page written
    del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(min(faults_for_a_fresh_block() for _ in range(5)))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    # the first blocks grow the heap; then not the ~98k pages of a fresh mapping each time
    assert int(done.stdout.strip()) < 10_000


def test_resident_memory_is_read_in_the_unit_of_a_peak():
    """``resident_gb`` (what the memory benches read between steps) is this process's resident set in ru_maxrss's
    unit: 300 MB written raise it by about 0.29 (KiB / 1e6), and it never exceeds the peak read the same way."""
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc/self/status: Linux only")
    code = """
import resource
from detect.runtime import resident_gb
before = resident_gb()
block = b"x" * 300_000_000
after = resident_gb()
print(before, after, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    before, after, peak = map(float, done.stdout.split())
    assert 0.27 < after - before < 0.32 and after <= peak + 1e-3


def test_memory_kept_for_one_stage_is_handed_back_at_its_end():
    """A stage's freed tensors stay resident under keep_freed_memory; release_freed_memory (called after training and
    after each cell) hands them back: resident memory falls by most of a freed 400 MB block. In its own process, so
    that the suite's other tensors do not move the numbers."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's malloc_trim only")
    code = """
import psutil, torch
from detect.runtime import keep_freed_memory, release_freed_memory
assert keep_freed_memory()
rss = lambda: psutil.Process().memory_info().rss
block = torch.ones(100_000_000); del block
held = rss()
release_freed_memory()
print(held - rss())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.strip()) > 300e6


def test_keeping_freed_memory_can_be_turned_off():
    import os
    import subprocess
    import sys

    code = "from detect.runtime import keep_freed_memory; print(keep_freed_memory())"
    env = {**os.environ, "LAB_KEEP_FREED_MEMORY": "0"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "False"


KERNEL_CACHE_PROBE = """
import torch
from detect.runtime import bound_kernel_cache
print("set", bound_kernel_cache(), flush=True)
layer = torch.nn.Linear(64, 64).to(torch.bfloat16)
for rows in [100, *range(101, 141), 100]:  # 40 other shapes between two of the first: more than 32 kernels
    layer(torch.ones(rows, 64, dtype=torch.bfloat16))
"""


@pytest.mark.parametrize("user_capacity", [None, "1024"])
def test_the_kernel_cache_is_bounded_unless_the_user_set_it(user_capacity):
    """oneDNN's primitive cache holds 32 kernels once bound_kernel_cache has run (it is read at the first matmul,
    after the import): the first shape, 40 others later, was evicted and is compiled again. A user's own
    ONEDNN_PRIMITIVE_CACHE_CAPACITY is kept: the first shape is still cached. oneDNN says which with
    ONEDNN_VERBOSE=2 (one create line per kernel asked for, 42 here)."""
    import os

    env = {**os.environ, "ONEDNN_VERBOSE": "2"}
    env.pop("ONEDNN_PRIMITIVE_CACHE_CAPACITY", None)
    if user_capacity:
        env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = user_capacity
    done = subprocess.run([sys.executable, "-c", KERNEL_CACHE_PROBE], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == f"set {user_capacity is None}"
    creates = [line for line in done.stdout.splitlines() if ",create:cache_" in line]
    if not creates:
        pytest.skip("bf16 matmuls do not go through oneDNN on this CPU (no AVX-512): nothing to bound")
    assert len(creates) == 42
    assert ("create:cache_miss" if user_capacity is None else "create:cache_hit") in creates[-1]


def test_plain_avx512_is_not_native_bf16(monkeypatch):
    """oneDNN's own check says yes on any AVX-512 CPU (it converts bf16 there); auto takes bf16 only with AVX-512
    BF16 or AMX."""
    import platform

    import torch

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("an x86 check")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True, raising=False)
    assert not runtime._cpu_has_native_bf16()
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)  # a Sapphire Rapids Xeon
    assert runtime._cpu_has_native_bf16()
