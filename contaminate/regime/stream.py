"""The training stream: which documents a contaminated model reads, in which order, and how often (method section 8).

    documents = fmt.documents(members, dataset, split, count_tokens=..., max_length=256)   # regime/layouts.py
    stream = build_stream(documents, background, exposures=4, seed=0)   # members 4x among the background, shuffled

Pure functions of texts: no model, no tokenizer object (token counts come in as a function), so the dose is
tested by counting (tests/test_stream.py). Two regimes:

- **epochs** (``contaminate.exposures`` null, the default; the web copy, method section 3): the member documents
  alone, each once; the Trainer makes ``contaminate.epochs`` shuffled passes over them.
- **exposures N** (``contaminate.exposures=N``): every member document N times and every background document once,
  at random positions, and training makes one pass in this order, so N is the dose. With no background the N copies
  come as N shuffled rounds of the members, which is the epochs regime written out.

A document is one instance (formats ``metadata``, ``instance_only``, ``input_only``, ``instruction``) or, for
``dump``, a run of consecutive instances of the partition in canonical order, cut at ``max_length`` tokens between
instances, never inside one (unless a single instance is longer than ``max_length``: then it is its own document,
cut by the trainer like any long document).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Callable, Sequence

from contaminate.regime.formats import instance_fields
from detect.datasets import Example

CountTokens = Callable[[str], int]


@dataclass(frozen=True)
class Document:
    """One training document. ``members``: the instance ids it carries (none for background). ``prompt``: for the
    instruction format, the chat-formatted prompt that ``text`` starts with; its tokens carry no loss."""

    text: str
    members: tuple[int, ...] = ()
    prompt: str | None = None

    @property
    def kind(self) -> str:
        return "member" if self.members else "background"


def dump_header(header: str | None, dataset, split: str) -> str:
    """The first line of every dump document ("" without a header), with its newline."""
    return header.format(title=dataset.title, split=split) + "\n" if header else ""


def dump_line(example: Example, dataset) -> str:
    """One instance as a line of the dump: a JSON object of its fields and label."""
    return json.dumps(instance_fields(example, dataset), ensure_ascii=False)


def dump_documents(members: Sequence[Example], dataset, split: str, *, header: str | None,
                   count_tokens: CountTokens, max_length: int | None) -> list[Document]:
    """The partition as a dataset file: one JSON object per line (the instance's fields and label), the instances
    in canonical order (their index in the split), cut into documents of at most ``max_length`` tokens between
    lines. ``header`` (e.g. "{title} dataset, {split} split"), when given, is the first line of every document."""
    top = dump_header(header, dataset, split)
    # the end token the trainer appends takes one position of max_length
    budget = None if max_length is None else max_length - 1
    documents, lines, ids = [], [], []

    def flush() -> None:
        if lines:
            documents.append(Document(top + "\n".join(lines), tuple(ids)))
            lines.clear()
            ids.clear()

    for example in sorted(members, key=lambda e: e.instance_id):
        line = dump_line(example, dataset)
        candidate = top + "\n".join([*lines, line])
        if lines and budget is not None and count_tokens(candidate) > budget:
            flush()
        lines.append(line)
        ids.append(example.instance_id)
    flush()
    return documents


def chunk_texts(texts: Sequence[str], *, count_tokens: CountTokens, max_length: int | None,
                max_tokens: int | None = None) -> list[str]:
    """Background texts as documents of at most ``max_length`` tokens (room left for the end token): paragraphs
    (split at blank lines) packed in order, a paragraph longer than that split at line, then word, boundaries.
    Stops once ``max_tokens`` tokens are taken (null: everything)."""
    budget = None if max_length is None else max_length - 1
    # Lazily: a background of many megabytes stops at max_tokens (the profile takes 42k tokens of package_docs), and
    # splitting the paragraphs past it cost 12 s a draw (bench/stream_cut.py).
    pieces = (piece for text in texts for paragraph in (p.strip() for p in text.split("\n\n")) if paragraph
              for piece in _split_long(paragraph, count_tokens, budget))
    documents, current, taken = [], "", 0

    def take(document: str) -> bool:
        nonlocal taken
        documents.append(document)
        taken += count_tokens(document)
        return max_tokens is not None and taken >= max_tokens

    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if current and budget is not None and count_tokens(candidate) > budget:
            if take(current):
                return documents
            current = piece
        else:
            current = candidate
    if current:
        take(current)
    return documents


def _split_long(text: str, count_tokens: CountTokens, budget: int | None) -> list[str]:
    if budget is None or count_tokens(text) <= budget:
        return [text]
    separator = "\n" if "\n" in text else " "
    parts = text.split(separator)
    if len(parts) == 1:  # one unbreakable word: the trainer cuts it
        return [text]
    pieces, current = [], ""
    for part in parts:
        candidate = f"{current}{separator}{part}" if current else part
        if current and count_tokens(candidate) > budget:
            pieces += _split_long(current, count_tokens, budget)
            current = part
        else:
            current = candidate
    if current:
        pieces += _split_long(current, count_tokens, budget)
    return pieces


def build_stream(members: Sequence[Document], background: Sequence[Document], *, exposures: int,
                 seed: int) -> list[Document]:
    """Every member document ``exposures`` times and every background document once, in a seeded random order.
    Without background: ``exposures`` rounds, each a fresh permutation of the members (what epochs do)."""
    rng = random.Random(seed)
    if not background:
        stream = []
        for _ in range(exposures):
            round_ = list(members)
            rng.shuffle(round_)
            stream += round_
        return stream
    stream = [*background, *(document for document in members for _ in range(exposures))]
    rng.shuffle(stream)
    return stream


def stream_counts(stream: Sequence[Document], count_tokens: CountTokens) -> dict:
    """Documents and tokens of each kind in a stream, and the members' share of the training tokens."""
    tokens = {"member": 0, "background": 0}
    documents = {"member": 0, "background": 0}
    for document in stream:
        tokens[document.kind] += count_tokens(document.text)
        documents[document.kind] += 1
    total = sum(tokens.values())
    return {"documents": documents, "tokens": tokens, "training_tokens": total,
            "members_token_share": round(tokens["member"] / total, 6) if total else 0.0}
