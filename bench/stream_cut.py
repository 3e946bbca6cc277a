"""The background cut into documents (contaminate/regime/stream.py's chunk_texts) as a run does it, against the cut
that split every paragraph of the background before packing (the code until this bench; the baseline), both timed in
this process on the same texts, each with a fresh token counter (no count reused between them).

    python bench/stream_cut.py                          # package_docs' first 42,000 tokens at max_length 640
    python bench/stream_cut.py --max-tokens 0           # the whole of it (both cuts then do the same work)

Prints each cut's seconds, their ratio and whether the documents are the same (they must be: same digest).
"""

from __future__ import annotations

import argparse
import json
import time

from contaminate.regime import token_counter
from contaminate.regime.background import PackageDocsBackground
from contaminate.regime.stream import _split_long, chunk_texts
from detect.cache import digest
from detect.models.loading import embedded_folder, load_tokenizer


def eager_cut(texts, *, count_tokens, max_length, max_tokens) -> list[str]:
    """The baseline (chunk_texts until this bench): every paragraph of every text split before the first document
    is packed; the packing is chunk_texts' own."""
    budget = None if max_length is None else max_length - 1
    pieces = [piece for text in texts for paragraph in (p.strip() for p in text.split("\n\n")) if paragraph
              for piece in _split_long(paragraph, count_tokens, budget)]
    documents, current, taken = [], "", 0
    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if current and budget is not None and count_tokens(candidate) > budget:
            documents.append(current)
            taken += count_tokens(current)
            if max_tokens is not None and taken >= max_tokens:
                return documents
            current = piece
        else:
            current = candidate
    return documents + ([current] if current else [])


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=42_000, help="0: the whole background")
    parser.add_argument("--max-length", type=int, default=640)
    args = parser.parse_args()
    max_tokens = args.max_tokens or None
    tokenizer = load_tokenizer(str(embedded_folder()))
    texts = list(PackageDocsBackground().texts())
    tokenizer("warm up")  # the first call imports what transformers loads lazily (seconds): neither cut pays it
    found = {}
    for name, cut in (("lazy (chunk_texts)", chunk_texts), ("eager (baseline)", eager_cut)):
        started = time.perf_counter()
        documents = cut(texts, count_tokens=token_counter(tokenizer), max_length=args.max_length,
                        max_tokens=max_tokens)
        found[name] = {"seconds": round(time.perf_counter() - started, 2), "documents": len(documents),
                       "digest": digest(documents)}
    base, lazy = found["eager (baseline)"], found["lazy (chunk_texts)"]
    return {"max_tokens": max_tokens, "max_length": args.max_length, **found,
            "speedup": round(base["seconds"] / lazy["seconds"], 1), "same_documents": base["digest"] == lazy["digest"]}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
