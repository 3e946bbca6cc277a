"""The config checked before any work starts: each failure one line that names the key and says what to set.

    check_detection(cfg)     # python -m detect and the study: sample.n_detect, detect.*, the detectors

Hydra composes any value a type allows; these are the values the code below cannot use (a negative count, zero
tokens, a cut outside the instance), found in a second rather than after a model has loaded or trained.
"""

from __future__ import annotations

from detect.errors import InputError


def count(value, key: str, *, minimum: int = 1, hint: str = "") -> int:
    """``value`` as an integer of at least ``minimum``, or a one-line error naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{key}={value}: give a whole number >= {minimum}{hint}")
    return value


def check_detection(cfg) -> list:
    """What every detection reads; returns the built detectors (their own settings checked as they are built)."""
    from detect.detectors import build

    count(cfg.sample.n_detect, "sample.n_detect", hint=" (instances per partition; the paper: 10)")
    detect = cfg.detect
    count(detect.max_new_tokens, "detect.max_new_tokens", hint=" (tokens per completion; the default 256)")
    count(detect.batch_size, "detect.batch_size", hint=" (prompts per generate call)")
    low, high = detect.cut.low, detect.cut.high
    if not 0 < low <= high < 1:
        raise InputError(f"detect.cut.low={low} / detect.cut.high={high}: the cut point is a fraction of the "
                         f"instance; give 0 < low <= high < 1 (the default 0.4 / 0.7)")
    if detect.prompt_format not in ("auto", "chat", "raw"):
        raise InputError(f"detect.prompt_format={detect.prompt_format}: use auto, chat or raw")
    return build(detect.detectors)

