"""docs/study.md's table of config groups, generated from conf/ itself so that it cannot fall behind it: every
group (a folder of conf/), its options (the YAML files; the default of ``python -m contaminate`` marked), each with
the first sentence of the comment its file opens with, and the settings its options hold (top-level keys; a
mapping's keys one level down).

    python -m contaminate.reports.config_groups > docs/generated/config_groups.md
    python -m contaminate.reports.includes docs/study.md

tests/test_docs.py checks the committed file against this script's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from detect import markdown

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
SKIP = {"_target_", "defaults"}
MAX_LISTED = 8  # a mapping with more keys than this is shown as key.*


def defaults(primary: str = "contaminate.yaml") -> dict[str, str]:
    """group -> its default option in a primary config's defaults list."""
    found = {}
    for entry in yaml.safe_load((CONF / primary).read_text()).get("defaults", []):
        if isinstance(entry, dict):
            found.update({str(k): str(v) for k, v in entry.items()})
    return found


def leading_sentence(path: Path) -> str:
    """The first sentence of the comment block a YAML file opens with (after any ``# @package`` line)."""
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("# @package"):
            continue
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text, depth = " ".join(lines), 0
    for at, char in enumerate(text):  # the first . : or ; outside parentheses that ends a word
        depth += (char == "(") - (char == ")")
        if depth == 0 and char in ".:;" and (at + 1 == len(text) or text[at + 1] == " "):
            return text[: at + (char == ".")]
    return text


def settings(paths: list[Path]) -> list[str]:
    """The keys the options set, in order of first appearance: top level, and one level into a mapping."""
    keys: dict[str, dict[str, None]] = {}
    for path in paths:
        loaded = yaml.safe_load(path.read_text()) or {}
        for key, value in loaded.items():
            if key in SKIP or str(key).startswith("_"):
                continue
            inner = keys.setdefault(str(key), {})
            if isinstance(value, dict):
                inner.update((str(k), None) for k in value if k not in SKIP)
    shown = []
    for key, inner in keys.items():
        if not inner:
            shown.append(key)
        elif len(inner) > MAX_LISTED:
            shown.append(f"{key}.*")
        else:
            shown.append(f"{key}.{{{','.join(inner)}}}" if len(inner) > 1 else f"{key}.{next(iter(inner))}")
    return shown


def groups() -> list[tuple[str, list[Path]]]:
    found = []
    for folder in sorted(p for p in CONF.rglob("*") if p.is_dir()):
        files = sorted(folder.glob("*.yaml"))
        if files:
            found.append((folder.relative_to(CONF).as_posix(), files))
    return found


MAX_DESCRIBED = 6  # a group with more options lists their names only (the datasets: docs/study.md's next table)


def table() -> str:
    chosen = defaults()
    lines = markdown.table(["group", "options (the first sentence of each option's file)", "settings"])
    for group, files in groups():
        default = chosen.get(group)

        def option(path: Path) -> str:
            name = f"`{path.stem}`" + (" (default)" if path.stem == default else "")
            said = leading_sentence(path) if len(files) <= MAX_DESCRIBED else ""
            return f"{name}: {said}" if said else name

        keys = ", ".join(f"`{key}`" for key in settings(files))
        lines.append(markdown.row([f"`{group}`", "; ".join(option(p) for p in files), keys]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(table())
