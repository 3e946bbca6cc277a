"""The blind baseline: near 0.5 on a random split of one partition, near 1.0 on a split biased on purpose."""

import numpy as np
import pytest

from contaminate.blind_baseline import blind_baseline
from detect.datasets import load_split
from detect.errors import InputError


@pytest.fixture(scope="module")
def synth_texts(compose_config_module):
    return [e.full_text for e in load_split(compose_config_module.dataset, "test")]


@pytest.fixture(scope="module")
def compose_config_module():
    from pathlib import Path

    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(Path("conf").resolve()), version_base="1.3"):
        return compose("detect", ["+dataset=synth_nli"])


def test_a_random_split_is_not_separable(synth_texts):
    order = np.random.default_rng(0).permutation(len(synth_texts))[:100]
    texts = [synth_texts[i] for i in order]
    result = blind_baseline(texts[:50], texts[50:], seed=0)
    assert result["low"] < 0.5 < result["high"] and not result["biased"] and 0.3 < result["auc"] < 0.7
    assert result["p_value"] >= 0.05 and len(result["member_scores"]) == len(result["non_member_scores"]) == 50


def test_at_ten_texts_a_side_the_null_is_biased_low_and_only_a_large_auc_can_be_rejected(synth_texts):
    # k-fold AUC at tiny n sits below 0.5 under the null, and its 95th percentile (the smallest AUC the sample could
    # reject) is far above 0.5: with 10 vs 10 a text bias below about 0.7 goes unseen
    order = np.random.default_rng(1).permutation(len(synth_texts))[:20]
    texts = [synth_texts[i] for i in order]
    result = blind_baseline(texts[:10], texts[10:], seed=0)
    assert result["null_mean"] < 0.5 and 0.65 < result["critical_auc"] < 0.9
    assert not result["biased"] and result["n_permutations"] == 50
    assert result["p_value"] * 51 == pytest.approx(round(result["p_value"] * 51))  # (1 + count) / (1 + 50)


def test_a_split_biased_on_purpose_is_found(synth_texts):
    # members are the partition's shortest texts, non-members its longest: a length bias, as in the papers
    by_length = sorted(synth_texts, key=len)
    result = blind_baseline(by_length[:50], by_length[-50:], seed=0)
    assert result["auc"] > 0.9 and result["biased"] and result["p_value"] == pytest.approx(1 / 51)


def test_too_few_texts_is_one_line():
    with pytest.raises(InputError, match="at least 2 members and 2 non-members"):
        blind_baseline(["a b"], ["c d", "e f"])
