"""plant.json's per-group readings of one run (contaminate/analyses/within_model.py), against hand-computed values."""

from contaminate.analyses.within_model import replicas, within_model_auc


def guided(score: dict, judge: str = "none") -> dict:
    return {"instruction": "guided", "completion": "text", "judge": judge, **score}


def test_the_within_model_auc_is_members_over_the_never_planted_group_by_hand():
    # members' loss-like scores 3, 2 against 1, 2: pairs (3>1, 3>2, 2>1, 2=2) -> (1 + 1 + 1 + 0.5) / 4 = 0.875
    rows = {"contaminated_x_members": [guided({"loss": 3.0, "zlib": 1.0}), guided({"loss": 2.0, "zlib": 1.0})],
            "contaminated_x_non_members": [guided({"loss": 1.0, "zlib": 1.0}), guided({"loss": 2.0})],
            "clean_x_members": [guided({"loss": 0.0})], "clean_x_non_members": [guided({"loss": 1.0})]}
    found = within_model_auc(rows)
    assert found["loss"] == 0.875
    assert "zlib" not in found  # one never-planted row has no zlib score: the AUC would read a subset, so none
    assert within_model_auc(rows, "clean") == {"loss": 0.0}  # the same groups under the clean model
    general = {cell: [{**r, "instruction": "general"} for r in pool] for cell, pool in rows.items()}
    assert within_model_auc(general) == {}  # only the guided prompts' rows are read


def test_replicas_count_the_judge_labels_per_reading_and_pool():
    rows = {"contaminated_x_members": [guided({}, "exact"), guided({}, "near_exact"), guided({}, "exact"),
                                       {"instruction": "guided", "completion": None, "judge": "exact"}],
            "contaminated_x_non_members": [guided({}, "none")],
            "contaminated_x_known_non_members": [{**guided({}, "near_exact"), "instruction": "leak"}]}
    assert replicas(rows) == {
        "guided": {"members": {"n": 3, "exact": 2, "near_exact": 1},  # the row without a completion is not counted
                   "non_members": {"n": 1, "exact": 0, "near_exact": 0}},
        "leak": {"known_non_members": {"n": 1, "exact": 0, "near_exact": 1}}}
