"""The A/A pre-check of known non-members against the judged split under a model that saw neither
(detect/exchangeability.py, issue 68)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from detect.errors import InputError
from detect.exchangeability import departure, precheck_line, verdict


def test_a_shifted_pool_warns_and_an_exchangeable_one_is_quiet_by_hand():
    """Scores the pools draw from one distribution: AUC near 0.5, no warning; the known pool shifted by two standard
    deviations: AUC near 1 (the judged split reads as more familiar), a warning. The AUC by hand on a tiny case."""
    rng = np.random.default_rng(0)
    judged = rng.normal(size=40)
    same = departure(rng.normal(size=40), judged)
    assert abs(same["auc"] - 0.5) < 0.15 and same["p"] > 0.05
    assert not verdict({"loss": same})["warn"]
    shifted = departure(rng.normal(size=40) - 2.0, judged)
    assert shifted["auc"] > 0.9 and shifted["p"] < 1e-6
    found = {"reference": "base", "scores": {"loss": shifted}, **verdict({"loss": shifted})}
    assert found["warn"] and "WARNING, the pools are not exchangeable" in precheck_line(found)
    # 2 judged above 1 of 2 known, ties one half: (1 + 1 + 0.5 + 0) / 4
    assert departure([1.0, 2.0], [2.0, 1.5])["auc"] == pytest.approx((1 + 0.5 + 1 + 0) / 4)
    assert precheck_line(None).startswith("A/A pre-check: not run")


def test_the_precheck_asked_without_a_model_that_saw_neither_is_one_line(compose_config, tmp_path):
    """judge.precheck=true with no detect.reference_model: refused before any model opens."""
    from omegaconf import OmegaConf

    from detect.datasets import load_split
    from detect.pipeline import main

    train = load_split(OmegaConf.load("conf/dataset/synth_nli.yaml"), "train")[:60]
    known = tmp_path / "known.jsonl"
    known.write_text("".join(json.dumps({"sentence1": e.text, "sentence2": e.text_pair, "label": e.label}) + "\n"
                             for e in train))
    cfg = compose_config("detect", ["+dataset=synth_nli", "model=tiny_random", "judge=recipe",
                                    f"judge.known_non_members={known}", "judge.precheck=true",
                                    "detect.detectors.alg2.min_exact=null", "detect.reference_model=null"])
    with pytest.raises(InputError, match=re.escape("judge.precheck=true reads the known non-members")) as error:
        main(cfg, tmp_path / "run")
    assert "\n" not in str(error.value) and "detect.reference_model" in str(error.value)


@pytest.mark.slow
def test_the_precheck_under_the_embedded_model_warns_on_a_shifted_pool_and_not_on_a_drawn_one():
    """Under the untouched SmolLM2: 30 synth_nli test instances judged against 30 others of the same split, drawn at
    random (quiet), and against the same 30 in capitals (a pool written differently: warns)."""
    from omegaconf import OmegaConf

    from detect.datasets import load_split, sample
    from detect.exchangeability import precheck
    from detect.models import GenerationSettings, embedded_smollm2
    from detect.models.hf import LocalModels

    examples = sample(load_split(OmegaConf.load("conf/dataset/synth_nli.yaml"), "test"), 80, seed=0)  # shuffled
    judged = [e.full_text for e in examples[:40]]
    drawn = [e.full_text for e in examples[40:80]]
    model = LocalModels().open(embedded_smollm2(), GenerationSettings(progress=False))
    quiet = precheck(model, drawn[:30], judged[:30])
    assert not quiet["warn"], quiet
    loud = precheck(model, [text.upper() for text in drawn[:30]], judged[:30])
    # capitals read as more predictable tokens to this model: the departure's sign is the model's, its size the point
    assert loud["warn"] and abs(loud["scores"]["loss"]["auc"] - 0.5) > 0.3, loud
