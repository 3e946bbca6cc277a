"""Logit-based membership scores against hand computations on a tiny model's logits."""

import math
import zlib

import numpy as np
import pytest
import torch

from detect.detectors import build
from detect.detectors.membership import membership_scores, scores_from_statistics
from detect.errors import InputError
from detect.models.hf import HFModel


def test_scores_from_given_token_statistics_by_hand():
    text = "five tokens of text"
    stats = {"logp": [-1.0, -2.0, -3.0, -4.0, -5.0], "mu": [0.0] * 5, "sigma": [1.0] * 5}
    scores = scores_from_statistics(stats, text, k=0.4, reference={"logp": [-4.0] * 5})
    assert scores["loss"] == pytest.approx(-3.0)                      # minus the mean NLL
    assert scores["perplexity"] == pytest.approx(math.exp(3.0))
    assert scores["zlib"] == pytest.approx(-15.0 / len(zlib.compress(text.encode())))
    assert scores["min_k"] == pytest.approx(-4.5)                     # 40% of 5 tokens: the two lowest, -5 and -4
    assert scores["min_k_plus"] == pytest.approx(-4.5)                # mu 0, sigma 1: the same
    assert scores["reference_ratio"] == pytest.approx(4.0 - 3.0)            # reference NLL minus this model's
    assert scores_from_statistics(stats, text, k=0.01)["min_k"] == -5.0  # at least one token


def _by_hand(model, tokenizer, text, k):
    """One text alone, position by position, with plain Python arithmetic on the logits."""
    ids = tokenizer(text, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(ids).logits[0].double().tolist()
    logp, standardised = [], []
    for t in range(len(ids[0]) - 1):
        row = logits[t]
        top = max(row)
        log_z = top + math.log(sum(math.exp(v - top) for v in row))
        log_probs = [v - log_z for v in row]
        mu = sum(math.exp(lp) * lp for lp in log_probs)
        sigma = math.sqrt(sum(math.exp(lp) * lp * lp for lp in log_probs) - mu * mu)
        token_logp = log_probs[ids[0][t + 1].item()]
        logp.append(token_logp)
        standardised.append((token_logp - mu) / sigma)
    count = max(1, math.ceil(len(logp) * k))
    nll = -sum(logp) / len(logp)
    return {"loss": -nll, "min_k": sum(sorted(logp)[:count]) / count,
            "min_k_plus": sum(sorted(standardised)[:count]) / count,
            "zlib": sum(logp) / len(zlib.compress(text.encode()))}


def test_batched_scores_match_one_text_at_a_time_by_hand():
    from detect.models import load, tiny_random

    model, tokenizer = load(tiny_random())
    tokenizer.padding_side = "left"  # as the generator leaves it
    texts = ["Hugo Retteltor is a surveyor.", "A much longer text, so that the batch pads the shorter ones: "
             "it moved to Belwick on a Monday and built a seed drill.", "Short."]
    scores = membership_scores(HFModel(model, tokenizer), texts, k=0.2, reference=HFModel(model, tokenizer))
    assert tokenizer.padding_side == "left"  # restored
    for text, got in zip(texts, scores):
        expected = _by_hand(model, tokenizer, text, 0.2)
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-4, abs=1e-5), name
        assert got["reference_ratio"] == pytest.approx(0.0, abs=1e-5)  # the model against itself
    assert np.isfinite([v for s in scores for v in s.values()]).all()
    with pytest.raises(InputError, match="membership.k=0: give a number in \\(0, 1\\] \\(Min-K% takes a fraction"):
        build({"membership": {"_target_": "detect.detectors.membership.LogitScores", "k": 0}})
