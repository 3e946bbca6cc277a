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
    assert [s.tolist() for s in shards_of(9, 3)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert [s.tolist() for s in shards_of(7, 3)] == [[0, 1, 2, 3], [4, 5, 6]]  # 3 instances per shard at least
    assert len(shards_of(40, 10)) == 10 and len(shards_of(20, 10)) == 6
    with pytest.raises(InputError, match="at least 2 shards of 3 instances: 5 instances in 2 shards"):
        shards_of(5, 2)


def test_the_permutation_test_by_hand():
    """p = (1 + #{permutation >= canonical}) / (m + 1), on a log-likelihood that is known for every order."""
    from detect.detectors.sharded import permutation_orders, permutation_test

    orders = permutation_orders(5, n_permutations=19, seed=3)
    assert orders[0] == [0, 1, 2, 3, 4] and len(orders) == 20
    assert all(sorted(order) == [0, 1, 2, 3, 4] for order in orders)

    def in_place(order_list):  # how many instances sit at their canonical position
        return [float(sum(p == i for i, p in enumerate(order))) for order in order_list]

    found = permutation_test(in_place, 5, n_permutations=19, seed=3)
    values = in_place(orders)
    at_least = sum(v >= values[0] for v in values[1:])  # the canonical order is the only one with all 5 in place
    assert at_least == 0 and found["p_value"] == pytest.approx(1 / 20) and found["significant"]
    assert found["statistic"] == pytest.approx(5 - np.mean(values[1:]))
    flat = permutation_test(lambda order_list: [0.0] * len(order_list), 5, n_permutations=19)
    assert flat["p_value"] == 1.0 and not flat["significant"]  # ties count against the leak


def test_permutation_p_values_are_uniform_under_a_simulated_null():
    """Exchangeable instances (a random transition matrix, nothing canonical): p is uniform on {1/20, ..., 1}, so
    P(p <= 0.05) = 0.05 and P(p <= 0.5) = 0.5; with a leak on the canonical transitions, p is small."""
    from contaminate.analyses.order_tests_power import simulated_log_likelihood
    from detect.detectors.sharded import permutation_test

    rng = np.random.default_rng(0)
    null = np.array([permutation_test(simulated_log_likelihood(10, 0.0, rng), 10, n_permutations=19,
                                      seed=r)["p_value"] for r in range(1000)])
    assert abs(np.mean(null <= 0.05) - 0.05) < 0.025 and abs(np.mean(null <= 0.5) - 0.5) < 0.05
    leak = [permutation_test(simulated_log_likelihood(10, 2.0, rng), 10, n_permutations=19, seed=r)["p_value"]
            for r in range(50)]
    assert np.mean(np.array(leak) <= 0.05) > 0.9


def test_an_order_test_that_could_not_reject_is_one_line():
    from detect.detectors import build

    node = {"permutation": {"_target_": "detect.detectors.sharded.PermutationTest", "n_permutations": 10}}
    with pytest.raises(InputError, match="^detect.detectors.permutation.n_permutations=10 cannot give p <= 0.05 "
                                         "\\(the smallest p is 1/11\\); give at least 19$"):
        build(node)
    node = {"permutation": {"_target_": "detect.detectors.sharded.PermutationTest", "max_instances": 3}}
    with pytest.raises(InputError, match="3 instances have 6 orders, too few for a test at 0.05; give at least 4"):
        build(node)
    from detect.detectors.sharded import check_permutations

    with pytest.raises(InputError, match="3 instances have 6 orders, too few for a test at 0.05; give at least 4"):
        check_permutations(3, 19, 0.05, "detect.detectors.permutation")
    with pytest.raises(InputError, match="cannot give p <= 0.01 \\(the smallest p is 1/26\\); give at least 99"):
        check_permutations(20, 25, 0.01, "detect.detectors.permutation")


def test_the_test_by_hand_on_the_tiny_model():
    from scipy import stats

    from detect.models import load, tiny_random

    model, tokenizer = load(tiny_random())
    result = sharded_likelihood_test(HFModel(model, tokenizer), TEXTS, n_shards=2, n_permutations=3, seed=5,
                                     separator="\n")
    # the same draws, each sequence's log-likelihood summed position by position in plain Python
    rng = np.random.default_rng(5)
    differences = []
    for shard in shards_of(len(TEXTS), 2):
        canonical = _log_likelihood_by_hand(model, tokenizer, "\n".join(TEXTS[p] for p in shard))
        shuffled = [_log_likelihood_by_hand(model, tokenizer, "\n".join(TEXTS[p] for p in rng.permutation(shard)))
                    for _ in range(3)]
        differences.append(canonical - sum(shuffled) / 3)
    assert result["shard_differences"] == pytest.approx(differences, abs=1e-3)
    t = np.mean(differences) / (np.std(differences, ddof=1) / math.sqrt(2))
    assert result["p_value"] == pytest.approx(stats.t.sf(t, df=1), abs=1e-3)
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
    texts = TEXTS * 2  # 16 instances: 5 shards of 3 or 4
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


def test_the_order_tests_run_only_where_the_leak_lays_out_an_order():
    """A web copy (one instance a document) has no order to find: both tests skip it in one line unless told to run
    anyway; a dump and plain text (the benchmark as published) have one."""
    from omegaconf import OmegaConf

    from contaminate.regime.layouts import LeakReader, build_format
    from detect.datasets import load_split
    from detect.detectors.base import Evidence, PlainText
    from detect.detectors.sharded import PermutationTest, ShardedLikelihood

    dataset = OmegaConf.load("conf/dataset/synth_nli.yaml")
    pool = load_split(dataset, "test")[:20]

    def evidence(reader):
        return Evidence(dataset, "test", pool[:4], pool, reader=reader)

    web_copy = LeakReader(build_format(OmegaConf.load("conf/format/metadata.yaml")), dataset)
    dump = LeakReader(build_format(OmegaConf.load("conf/format/dump.yaml")), dataset)
    for test in (ShardedLikelihood(), PermutationTest()):
        reason = test.skipped(evidence(web_copy))
        assert reason.startswith("the leak's format metadata lays out one instance a document, no order to find")
        assert f"detect.detectors.{test.name}.require_order=false" in reason and "\n" not in reason
        assert test.skipped(evidence(dump)) is None and test.skipped(evidence(PlainText())) is None
    assert ShardedLikelihood(require_order=False).skipped(evidence(web_copy)) is None
    assert PermutationTest(require_order=False).skipped(evidence(web_copy)) is None
