"""The A/A rows every calibration now prints (contaminate/calibration/recipe.py ``aa_controls``): within each
contaminated model its non-members against its known non-members, and the labels reversed; hand-computed AUCs."""

from __future__ import annotations

import numpy as np
import pytest

from contaminate.calibration.models import MEMBERS, NON_MEMBERS, Model, Pool
from contaminate.calibration.recipe import aa_controls
from contaminate.calibration.studies import Instance


def _instances(cell: str, values, positive: bool = False) -> list[Instance]:
    return [Instance("study", 0, "c", cell, positive, {}, None, observation=f"{cell}{i}", scores={"loss": float(v)})
            for i, v in enumerate(values)]


def _model(unit, non_members, known, members) -> Model:
    return Model(f"m{unit}", "contaminated", unit, [unit], known=_instances("known", known),
                 pools=[Pool(NON_MEMBERS, None, _instances("contaminated_x_non_members", non_members)),
                        Pool(MEMBERS, 1.0, _instances("contaminated_x_members", members, True)),
                        Pool(MEMBERS, 4.0, _instances("contaminated_x_members", [99, 99], True))])


def test_the_aa_rows_compare_the_models_own_untrained_pools_and_the_labels_reversed():
    # model 0: non-members 1, 3 against known 2, 4 -> pairs won 0 + 1 of 4 -> AUC 0.25; reversed against the x1
    # members 0, 5 (not the x4 ones) -> 1 > 0, 3 > 0: 2 of 4 -> 0.5. model 1: 5, 6 against 2, 4 -> 1.0; against
    # members 7, 8 -> 0. model 2: 2, 4 against 2, 4 -> ties: 0.5; against 1, 1 -> 1.0
    models = [_model((0, 0), [1, 3], [2, 4], [0, 5]), _model((1, 1), [5, 6], [2, 4], [7, 8]),
              _model((2, 2), [2, 4], [2, 4], [1, 1])]
    found = aa_controls(models)["loss"]
    assert found["non_members v known"]["auc"]["per_draw"] == pytest.approx({0: 0.25, 1: 1.0, 2: 0.5})
    assert found["reversed"]["auc"]["per_draw"] == pytest.approx({0: 0.5, 1: 0.0, 2: 1.0})
    assert found["non_members v known"]["auc"]["estimate"] == pytest.approx(np.mean([0.25, 1.0, 0.5]))
    # 2 against 2 is too few for a one-sided Mann-Whitney test to reach 0.05 (its smallest p is 1/6): none flagged
    assert found["non_members v known"]["flagged"]["k"] == 0 and found["non_members v known"]["flagged"]["n"] == 3


def test_a_shifted_known_pool_shows_in_the_aa_row_as_models_flagged():
    rng = np.random.default_rng(1)
    models = [_model((d, d), rng.normal(0, 1, 30), rng.normal(-1.5, 1, 40), rng.normal(0, 1, 10)) for d in range(6)]
    found = aa_controls(models)["loss"]["non_members v known"]
    assert found["auc"]["estimate"] > 0.75 and found["flagged"]["k"] >= 5
    assert aa_controls([m for m in models if False]) == {}


def test_the_precheck_reads_the_reference_models_loss_within_each_model():
    """recipe.py ``precheck_models``: the reference model's bare-text loss is loss_raw - reference_ratio_raw; a known
    pool shifted under it warns in most models, an exchangeable one in few; without the reference ratio, nothing."""
    from contaminate.calibration.recipe import precheck_models

    def pool(cell, base, suspect):  # the reference model's loss score `base`, the suspect's `suspect`
        return [Instance("study", 0, "c", cell, False, {}, None, observation=f"{cell}{i}",
                         scores={"loss_raw": float(s), "reference_ratio_raw": float(s - b)})
                for i, (b, s) in enumerate(zip(base, suspect))]

    def model(unit, judged, known) -> Model:
        rng = np.random.default_rng(unit[0])
        return Model(f"m{unit}", "contaminated", unit, [unit],
                     known=pool("known", known, rng.normal(0, 1, len(known))),
                     pools=[Pool(NON_MEMBERS, None, pool("contaminated_x_non_members", judged,
                                                         rng.normal(0, 1, len(judged))))])

    rng = np.random.default_rng(0)
    shifted = [model((d, d), rng.normal(0, 1, 40), rng.normal(-1.5, 1, 40)) for d in range(6)]
    found = precheck_models(shifted)
    assert found["auc"]["estimate"] > 0.8 and found["warned"]["k"] >= 5 and found["warned"]["n"] == 6
    drawn = [model((d, d), rng.normal(0, 1, 40), rng.normal(0, 1, 40)) for d in range(6)]
    assert precheck_models(drawn)["warned"]["k"] <= 1
    assert precheck_models([_model((0, 0), [1, 3], [2, 4], [0, 5])]) is None  # no reference ratio in its scores
