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
    # Carlini et al. / MIMIR: the model's (mean) loss over the zlib size, here 3.0 / 27 bytes, negated
    assert len(zlib.compress(text.encode())) == 27
    assert scores["zlib"] == pytest.approx(-3.0 / 27)
    assert scores["min_k"] == pytest.approx(-4.5)                     # 40% of 5 tokens: the two lowest, -5 and -4
    assert scores["min_k_plus"] == pytest.approx(-4.5)                # mu 0, sigma 1: the same
    assert scores["reference_ratio"] == pytest.approx(4.0 - 3.0)            # reference NLL minus this model's
    assert scores_from_statistics(stats, text, k=0.01)["min_k"] == -5.0  # at least one token


def test_min_k_takes_the_floor_of_k_n_tokens_as_the_reference_code():
    """Min-K%'s and Min-K%++'s code: ``k_length = int(len(token_log_probs) * ratio)``: 20% of 7 tokens is 1 token
    (ceil would take 2), 20% of 10 is 2, 50% of 7 is 3."""
    logp = [-0.5, -7.0, -1.0, -3.0, -0.2, -2.0, -6.0]
    stats = {"logp": logp, "mu": [-1.0] * 7, "sigma": [2.0] * 7}
    scores = scores_from_statistics(stats, "seven", k=0.2)
    assert scores["min_k"] == -7.0                                    # the lowest one alone
    assert scores["min_k_plus"] == pytest.approx((-7.0 + 1.0) / 2.0)  # its standardised value
    assert scores_from_statistics(stats, "seven", k=0.5)["min_k"] == pytest.approx((-7.0 - 6.0 - 3.0) / 3)
    ten = {"logp": [-float(i) for i in range(10)]}
    assert scores_from_statistics(ten, "ten", k=0.2)["min_k"] == pytest.approx((-9.0 - 8.0) / 2)


def test_scores_read_the_text_after_its_context():
    """A rendering's context is read, not scored: the tokens of ``text`` given ``context``; zlib compresses the text."""
    from detect.models.base import LanguageModel

    class Fixed(LanguageModel):
        """Token i of a text has log-probability -(i + 1); every character is a token."""
        def _token_logprobs(self, texts, moments):
            return [{"logp": [-(i + 1.0) for i in range(1, len(t))], "offsets": list(range(1, len(t)))} for t in texts]

    from detect.detectors.base import Rendering

    found = membership_scores(Fixed(), [Rendering("abc", "de"), "abcde"], k=0.5)
    # "abcde": tokens b..e scored (-2, -3, -4, -5); with context "abc": d and e only (-4, -5)
    assert found[0]["loss"] == pytest.approx(-4.5)
    assert found[0]["min_k"] == pytest.approx(-5.0)
    assert found[0]["zlib"] == pytest.approx(-4.5 / len(zlib.compress(b"de")))
    assert found[1]["loss"] == pytest.approx(-3.5)


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
    count = max(1, int(len(logp) * k))
    nll = -sum(logp) / len(logp)
    return {"loss": -nll, "min_k": sum(sorted(logp)[:count]) / count,
            "min_k_plus": sum(sorted(standardised)[:count]) / count,
            "zlib": -nll / len(zlib.compress(text.encode()))}


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


def test_texts_that_share_a_prefix_run_it_once_and_score_as_the_plain_pass():
    """ReCaLL's one prefix before every instance, the performance test's one context before each label: the prefix
    runs once (its key/value cache repeated over the texts after it), and every statistic is the plain pass's."""
    from detect.models import load, tiny_random
    from detect.models.logits import TokenScorer

    model, tokenizer = load(tiny_random())
    shots = "".join(f"sentence1: Shot {i} moved to Belwick on a Monday. label: neutral\n" for i in range(8))
    instances = ["sentence1: Hugo Retteltor is a surveyor.", "sentence1: A much longer one, so that the batch "
                 "pads the shorter ones: it built a seed drill.", "x"]
    context = "SynthNLI, test split. sentence1: The mill at Corbridge was sold in the spring of that year. label:"
    texts = ([shots + x for x in instances] + [context + label for label in (" entailment", " neutral", " no")]
             + instances)  # and three texts that share nothing
    moments = [True, False, True, False, True, False, True, False, True]
    plain, shared = TokenScorer(model, tokenizer, share_prefix=False), TokenScorer(model, tokenizer)
    expected, got = plain(texts, moments), shared(texts, moments)
    for want, have in zip(expected, got):
        assert have["ids"] == want["ids"] and have["offsets"] == want["offsets"] and set(have) == set(want)
        for key in ("logp", "mu", "sigma"):
            if key in want:
                assert have[key] == pytest.approx(want[key], abs=1e-4), key
    # two groups (the shots, ~300 tokens, run once for 3 texts; the context once for 3 labels), three texts alone
    assert sorted(len(rows) for rows, _ in shared._groups([tokenizer(t).input_ids for t in texts])) == [1, 1, 1, 3, 3]
    shots_tokens = len(tokenizer(shots).input_ids)
    assert plain.scored_tokens - shared.scored_tokens >= 2 * (shots_tokens - 2)


def test_statistics_in_row_chunks_are_the_whole_batchs():
    """The per-token statistics computed a few rows at a time (bounded memory) equal the whole batch's, masked
    positions dropped, moments only where asked; and logp is the log-softmax at the target, computed by hand."""
    import torch

    from detect.models.logits import _statistics

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 7, 11, generator=generator)
    targets = torch.randint(0, 11, (5, 7), generator=generator)
    mask = torch.ones(5, 7, dtype=torch.bool)
    mask[1, 4:] = False
    moments = [True, False, True, True, False]
    whole = _statistics(logits, targets, mask, moments, torch, max_tokens=10_000)
    chunked = _statistics(logits, targets, mask, moments, torch, max_tokens=7)  # one row at a time
    assert chunked == whole
    assert len(whole[1]["logp"]) == 4 and "mu" not in whole[1] and "mu" in whole[2]
    by_hand = float(logits[0, 3, targets[0, 3]] - torch.logsumexp(logits[0, 3], dim=-1))
    assert abs(whole[0]["logp"][3] - by_hand) < 1e-6


def test_the_head_runs_apart_from_the_decoder_and_scores_as_the_whole_model():
    """The scorer runs the decoder, then the head a chunk of positions at a time (no batch's logits whole): the same
    statistics as the whole model's logits, plain and shared-prefix passes alike; a model whose logits are not the
    head's alone (capped after it) fails the eight-token check and is run whole."""
    import torch

    from detect.models import load, tiny_random
    from detect.models import logits as scorer_module
    from detect.models.logits import TokenScorer, split_head

    model, tokenizer = load(tiny_random())
    decoder, head = split_head(model, torch)
    assert decoder is model.get_decoder() and head is model.get_output_embeddings()
    shots = "".join(f"sentence1: Shot {i} moved to Belwick on a Monday. label: neutral\n" for i in range(4))
    texts = ["sentence1: Hugo Retteltor is a surveyor.", shots + "sentence1: The mill was sold.",
             shots + "sentence1: The mill was sold in May. label: neutral", "x"]  # two share a prefix
    moments = [True, False, True, True]
    apart = TokenScorer(model, tokenizer, max_statistics_tokens=4)
    got = apart(texts, moments)
    assert apart._split == (decoder, head) and len(apart._groups([tokenizer(t).input_ids for t in texts])) == 3
    whole = TokenScorer(model, tokenizer)
    whole._split = None  # the whole model's logits
    for want, have in zip(whole(texts, moments), got):
        assert have["ids"] == want["ids"]
        for key in ("logp", "mu", "sigma"):
            if key in want:
                assert have[key] == pytest.approx(want[key], abs=1e-5), key

    class Capped(torch.nn.Module):  # logits capped after the head, as Gemma 2's are: not the head's alone
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config, self.device = inner, inner.config, inner.device

        def get_decoder(self):
            return self.inner.get_decoder()

        def get_output_embeddings(self):
            return self.inner.get_output_embeddings()

        def forward(self, **inputs):
            output = self.inner(**inputs)
            output.logits = 0.5 * torch.tanh(output.logits)
            return output

    assert split_head(Capped(model), torch) is None
    assert scorer_module.split_head(torch.nn.Linear(2, 2), torch) is None  # no decoder or head
