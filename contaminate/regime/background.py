"""Background corpora that contamination is diluted in (``conf/background/``, each built with ``_target_``):

    python -m contaminate +dataset=synth_nli background=offline contaminate.exposures=4

- ``NoBackground`` (``background=none``, the default): the members alone, as the web-copy regime trains them.
- ``OfflineBackground`` (``background=offline``): the documentation text that ships with Python's standard library
  (``pydoc_data.topics``: 465k characters of real English prose about Python, about 116k SmolLM2 tokens), on every
  machine with no download.
- ``PackageDocsBackground`` (``background=package_docs``): the English prose in the docstrings of the packages the
  README's install brings (``detect.datasets.corpus.package_docs``: about 2M SmolLM2 tokens, disjoint from ``pydoc``
  and from DC-PDD's reference corpus), for dilution at realistic shares, with no download.
- ``HubBackground`` (``background=hub``): a hub corpus streamed with ``datasets`` up to a token budget
  (FineWeb-Edu by default, the corpus Bordt et al. diluted their benchmarks in).
- ``LocalBackground`` (``background=local background.path=<file or folder>``): .txt files, or JSONL with a text
  field.

The offline, package_docs and local corpora are read by ``detect/datasets/corpus.py``, as DC-PDD's reference corpus is.

``texts(max_tokens)`` returns raw texts; ``contaminate/regime/stream.py`` cuts them into documents of at most
``contaminate.max_length`` tokens and stops at ``max_tokens`` (null: all of it). ``describe()`` keys the
checkpoints trained on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from detect.datasets.corpus import corpus_files, package_docs, package_docs_sources, pydoc_texts, read_corpus
from detect.errors import InputError
from detect.hub_retries import retries_said_once
from detect.validate import POSITIVE, Range


class NoBackground:
    name = "none"

    def __init__(self, **_) -> None:
        self.max_tokens = None

    def texts(self) -> list[str]:
        return []

    def describe(self) -> dict:
        return {"name": self.name}


class OfflineBackground:
    name = "offline"
    ranges = {"max_tokens": Range(1, hint="tokens of background; null: all of it")}

    def __init__(self, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens

    def texts(self) -> list[str]:
        return pydoc_texts()  # a fixed order: the same documents on every machine

    def describe(self) -> dict:

        # the text changes with the Python release it ships with; the digest of the documents keys it as well
        return {"name": self.name, "source": f"pydoc_data (Python {sys.version_info.major}.{sys.version_info.minor})",
                "max_tokens": self.max_tokens}


class PackageDocsBackground:
    name = "package_docs"
    ranges = {"max_tokens": Range(1, hint="tokens of background; null: all of it")}

    def __init__(self, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens

    def texts(self) -> list[str]:
        return list(package_docs())  # packages and files in sorted order: the same documents for the same versions

    def describe(self) -> dict:

        # the text changes with the packages' versions (and, through the paragraphs it leaves out, Python's); the
        # digest of the documents keys it as well
        return {"name": self.name, "source": f"package docstrings (Python {sys.version_info.major}."
                f"{sys.version_info.minor})", "packages": package_docs_sources(), "max_tokens": self.max_tokens}


class HubBackground:
    name = "hub"
    ranges = {"max_tokens": Range(1, hint="tokens of background; null: all of it"), "chars_per_token": POSITIVE}

    def __init__(self, hub_id: str, hub_config: str | None = None, split: str = "train", text_field: str = "text",
                 max_tokens: int | None = 1_000_000, chars_per_token: float = 3.0) -> None:
        self.hub_id, self.hub_config, self.split, self.text_field = hub_id, hub_config, split, text_field
        self.max_tokens, self.chars_per_token = max_tokens, chars_per_token

    def texts(self) -> list[str]:
        import datasets

        name = f"{self.hub_id}{f' ({self.hub_config})' if self.hub_config else ''}"
        with retries_said_once(f"background {name}"):
            return self._stream(datasets, name)

    def _stream(self, datasets, name: str) -> list[str]:
        try:
            rows = datasets.load_dataset(self.hub_id, self.hub_config, split=self.split, streaming=True)
            texts, characters = [], 0
            # streamed until comfortably past the token budget (the exact cut is made on tokens afterwards)
            limit = None if self.max_tokens is None else self.max_tokens * self.chars_per_token * 1.5
            for row in rows:
                if self.text_field not in row:
                    raise InputError(f"background {name} has no field '{self.text_field}' (its fields: "
                                     f"{', '.join(row)}); set background.text_field")
                texts.append(row[self.text_field])
                characters += len(row[self.text_field])
                if limit is not None and characters >= limit:
                    break
        except InputError:
            raise
        except Exception as error:  # offline, gated, renamed
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise InputError(f"could not stream background {name} from the hub ({reason}); offline, use "
                             f"background=offline (Python's documentation text, no download)") from None
        return texts

    def describe(self) -> dict:
        return {"name": self.name, "source": self.hub_id, "config": self.hub_config, "split": self.split,
                "text_field": self.text_field, "max_tokens": self.max_tokens}


class LocalBackground:
    name = "local"
    ranges = {"max_tokens": Range(1, hint="tokens of background; null: all of it")}

    def __init__(self, path: str | None = None, text_field: str = "text", max_tokens: int | None = None) -> None:
        self.path, self.text_field, self.max_tokens = path, text_field, max_tokens

    def files(self) -> list[Path]:
        """Its files, checked before any work: a missing path is one line."""
        if not self.path:
            raise InputError("background=local needs background.path=<a .txt or .jsonl file, or a folder of them>")
        return corpus_files(self.path, key="background.path", fallback="use background=offline")

    def texts(self) -> list[str]:
        self.files()
        return read_corpus(self.path, text_field=self.text_field, key="background.path",
                           fallback="use background=offline")

    def describe(self) -> dict:
        return {"name": self.name, "source": str(Path(self.path).resolve()) if self.path else None,
                "text_field": self.text_field, "max_tokens": self.max_tokens}


def instantiate_background(background_cfg):
    """The background object for the ``background`` group (``_target_`` + its settings)."""
    from detect.cli import instantiate

    if background_cfg is None:
        return NoBackground()
    from detect.validate import check_node

    settings = {key: value for key, value in background_cfg.items() if key != "name"}
    return instantiate(check_node(settings, where="background", example="contaminate.regime.background."
                                  "OfflineBackground"), _convert_="all")
