"""What the command lines share: checking group choices before Hydra composes, and one-line errors.

Hydra reports an unknown group option as a multi-line error with a hint about HYDRA_FULL_ERROR; a researcher
typing ``+dataset=rtee`` should get one line naming the valid keys. ``model=`` also takes a hub id or a local
folder directly: ``model=HuggingFaceTB/SmolLM2-360M-Instruct`` becomes ``model=hub model.name_or_path=...``;
``contaminate.trainer.max_grad_norm=0.5`` (any SFTConfig or LoraConfig field) becomes ``++contaminate.trainer...``.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

from detect.errors import InputError

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
_GROUP_CHOICE = re.compile(r"^(\+{0,2})([a-z_/]+)=(.*)$")
# Config groups nested in another's block, chosen by their path (plant/control=twin): the dotted key a researcher
# types (plant.control=twin, the key the composed config has) would replace the composed node with a bare string
_NESTED = {"plant.control": "plant/control"}
_SWEEP = re.compile(r"^\w+\(|[*\[\]{}]")  # choice(...), range(...), globs: left to Hydra
# Pass-through groups (any SFTConfig / PEFT config field): a key the YAML does not list is added, not refused by
# Hydra's struct check in a multi-line error; the training code checks it against the real fields in one line (the
# old LoRA keys, contaminate.rank and contaminate.lora.*, reach their one-line refusal the same way).
_PASS_THROUGH = re.compile(r"^(contaminate\.((trainer|peft|lora)\.\w+|rank)=)")


def options(group: str) -> list[str]:
    return sorted(path.stem for path in (CONF_DIR / group).glob("*.yaml"))


def group_option(group: str, name: str):
    """One option of a config group as its file gives it (``conf/<group>/<name>.yaml``, no command-line override):
    the one place the code reads a group's YAML itself, for what Hydra's composition has not composed (a planted
    group's own dataset or format, the instruction format of post-training, the lab's trainer defaults)."""
    from omegaconf import OmegaConf

    if name not in options(group):
        raise InputError(f"unknown {group} '{name}'; use one of {', '.join(options(group))}")
    return OmegaConf.load(CONF_DIR / group / f"{name}.yaml")


def check_overrides(argv: list[str], *, require: tuple[str, ...] = ("dataset",)) -> list[str]:
    """``argv`` with its group choices checked (and ``model=<hub id or folder>`` rewritten)."""
    program, args = argv[0], argv[1:]
    flags = [arg for arg in args if arg.startswith("-") and arg not in ("-m", "--multirun")]
    chosen, rewritten = set(), []
    for arg in args:
        if arg.startswith("judge.generator.name="):
            raise InputError(f"{arg}: the judge's model is a generation node; choose it with "
                             f"generation@judge.generator=local (or openai) and judge.generator.model=<...>")
        if re.match(r"^\+{0,2}backend[.=]", arg):
            raise InputError(f"{arg}: the model backend is now the generation group; use generation=openai "
                             f"generation.model=<served id> (generation.base_url=..., generation.api_key_env=...)")
        key, _, value = arg.partition("=")
        if key in _NESTED:
            arg = f"{_NESTED[key]}={value}"
        if _PASS_THROUGH.match(arg):
            rewritten.append(f"++{arg}")
            continue
        match = _GROUP_CHOICE.match(arg)
        if not match or not (CONF_DIR / match.group(2)).is_dir():
            rewritten.append(arg)
            continue
        prefix, group, value = match.groups()
        chosen.add(group)
        values = [] if _SWEEP.search(value) else value.split(",")
        unknown = [v for v in values if v not in options(group)]
        if group == "model" and len(values) == 1 and unknown and ("/" in value or Path(value).exists()):
            rewritten += [f"{prefix}model=hub", f"{prefix}model.name_or_path={value}"]
            continue
        if unknown:
            extra = ", a hub id or a local folder" if group == "model" else ""
            raise InputError(f"unknown {group} '{unknown[0]}'; use one of {', '.join(options(group))}{extra}")
        rewritten.append(arg)
    for group in require:
        if group not in chosen and not flags and "experiment" not in chosen:  # an experiment may choose it
            raise InputError(f"no {group} chosen: add +{group}=<key>, one of {', '.join(options(group))}")
    return [program, *rewritten]


@contextlib.contextmanager
def one_line_errors():
    """Print an ``InputError`` as ``error: <message>`` on stderr and exit with status 2."""
    try:
        yield
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def instantiate(node, *args, **kwargs):
    """``hydra.utils.instantiate``, except that an ``InputError`` raised by the target reaches the user as itself
    (Hydra wraps every exception in a multi-line InstantiationException)."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate as hydra_instantiate

    try:
        return hydra_instantiate(node, *args, **kwargs)
    except InstantiationException as error:
        if isinstance(error.__cause__, InputError):
            raise error.__cause__ from None
        raise
