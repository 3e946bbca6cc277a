"""The sharded likelihood test: by hand on the tiny model's logits, shards, and its power on a model that has
learnt an order."""

import math

import numpy as np
import pytest
import torch

from detect.detectors.sharded import sharded_likelihood_test, shards_of
from detect.errors import InputError
from detect.models.hf import HFModel
from detect.models.logits import token_statistics

TEXTS = [f"Instance {i}: the {word} crossed river number {i * 7 % 11}." for i, word in
         enumerate("otter heron barge ferry swan pike eel raft".split())]


def _log_likelihood_by_hand(model, tokenizer, text):
    ids = tokenizer(text, return_tensors="pt").input_ids[0]
    with torch.no_grad():
        logits = model(ids[None]).logits[0].double()
    total = 0.0
    for t in range(len(ids) - 1):
        row = logits[t].tolist()
        top = max(row)
        total += row[ids[t + 1]] - (top + math.log(sum(math.exp(v - top) for v in row)))
    return total


def test_shards():
    assert [s.tolist() for s in shards_of(7, 3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert len(shards_of(8, 10)) == 4  # 2 instances per shard at least
    with pytest.raises(InputError, match="at least 2 shards of 2 instances"):
        shards_of(3, 2)


def test_the_test_by_hand_on_the_tiny_model():
    from scipy import stats

    from detect.models import load, tiny_random

    model, tokenizer = load(tiny_random())
    result = sharded_likelihood_test(HFModel(model, tokenizer), TEXTS, n_shards=4, n_permutations=3, seed=5,
                                     separator="\n")
    # the same draws, each sequence's log-likelihood summed position by position in plain Python
    rng = np.random.default_rng(5)
    differences = []
    for shard in shards_of(len(TEXTS), 4):
        canonical = _log_likelihood_by_hand(model, tokenizer, "\n".join(TEXTS[p] for p in shard))
        shuffled = [_log_likelihood_by_hand(model, tokenizer, "\n".join(TEXTS[p] for p in rng.permutation(shard)))
                    for _ in range(3)]
        differences.append(canonical - sum(shuffled) / 3)
    assert result["shard_differences"] == pytest.approx(differences, abs=1e-3)
    t = np.mean(differences) / (np.std(differences, ddof=1) / math.sqrt(4))
    assert result["p_value"] == pytest.approx(stats.t.sf(t, df=3), abs=1e-3)
    assert result["statistic"] == pytest.approx(np.mean(differences), abs=1e-3)
    assert result["significant"] == (result["p_value"] <= 0.05)
    # the log-sum-exp path gives the log-probabilities of the full-distribution path
    fast, full = (token_statistics(model, tokenizer, TEXTS[:3], moments=m) for m in (False, True))
    assert [f["logp"] for f in fast] == [pytest.approx(f["logp"], abs=1e-4) for f in full]
    assert "mu" not in fast[0] and "mu" in full[0]


@pytest.mark.slow
def test_a_model_that_learnt_the_canonical_order_is_caught():
    """Train the tiny model on each shard in the canonical order: the test flags it; the untrained model not."""
    from detect.models import load, tiny_random

    model, tokenizer = load(tiny_random())
    texts = TEXTS * 2  # 16 instances, 8 shards of 2
    before = sharded_likelihood_test(HFModel(model, tokenizer), texts, n_shards=8, n_permutations=4, seed=0)
    documents = ["\n\n".join(texts[p] for p in shard) for shard in shards_of(len(texts), 8)]
    encoded = tokenizer(documents, return_tensors="pt", padding=True)
    labels = encoded.input_ids.masked_fill(encoded.attention_mask == 0, -100)
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(60):
        optimizer.zero_grad()
        model(**encoded, labels=labels).loss.backward()
        optimizer.step()
    model.eval()
    after = sharded_likelihood_test(HFModel(model, tokenizer), texts, n_shards=8, n_permutations=4, seed=0)
    assert after["significant"] and after["p_value"] < 0.01 and after["statistic"] > 1.0
    assert not before["significant"]
