"""What the embedded model's one-time conversion leaves resident in the process that converts it (the README's first
command on a fresh machine converts SmolLM2 in-process during its setup, then trains on top of what is left).

    python bench/conversion_memory.py                     # SmolLM2: about a minute on 2 cores
    python bench/conversion_memory.py --model gemma3_270m

Converts ``--model`` from its PyPI GGUF into an empty temporary lab cache, in this process, and prints the resident
set (VmRSS) after the imports (the baseline), after the conversion with its freed heap still held (glibc keeps a
freed heap for reuse), and after ``detect.runtime.release_freed_memory`` (what ``embedded_folder`` now calls when
it has converted), each as a ratio of the baseline; and the process's peak. Run it alone: it reads memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pass_at_1 import cpu_name  # noqa: E402  (the CPU as every bench names it)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2_135m")
    args = parser.parse_args()
    os.environ["CONTAMINATION_LAB_CACHE"] = tempfile.mkdtemp(prefix="conversion-memory-")  # before the lab reads it
    import torch  # noqa: F401  (the imports a run has made before its setup converts)
    import transformers  # noqa: F401

    from detect.models import loading
    from detect.runtime import resident_gb

    readings = {"after the imports": resident_gb()}
    release = loading.release_freed_memory

    def held_then_released() -> None:  # the conversion's own call, read on both sides
        readings["converted, its freed heap held"] = resident_gb()
        release()
        readings["after release_freed_memory"] = resident_gb()

    loading.release_freed_memory = held_then_released
    started = time.time()
    folder = loading.embedded_folder(args.model)
    seconds = time.time() - started
    print(f"{cpu_name()}; {args.model} converted in {seconds:.0f} s into {folder}")
    baseline = readings["after the imports"]
    for what, value in readings.items():
        print(f"{what:<32} {value:5.2f} GB  {value / baseline:4.2f}x the baseline")
    print(f"{'peak (ru_maxrss)':<32} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:5.2f} GB")


if __name__ == "__main__":
    main()
