"""The member draw (sample.draw) apart from the training seed: the independent unit is a (draw, seed) pair."""

import pytest

from contaminate.sampling import sample_pools
from contaminate.stages import check_study
from detect.errors import InputError


def _ids(compose_config, *overrides):
    sampled = sample_pools(compose_config("contaminate", ["+dataset=synth_nli", "sample.n_members=10",
                                                          "sample.n_non_members=10", *overrides]))
    return [e.instance_id for e in sampled.members], [e.instance_id for e in sampled.detection["non_members"][0]]


def test_the_draw_follows_the_seed_unless_set_apart(compose_config):
    seed0, seed1 = _ids(compose_config, "seed=0"), _ids(compose_config, "seed=1")
    assert seed0 != seed1
    # draw 1 under training seed 0 draws seed 1's members: today's studies keep their members by default
    assert _ids(compose_config, "seed=0", "sample.draw=1") == seed1
    # and the same draw under another training seed keeps them
    assert _ids(compose_config, "seed=1", "sample.draw=0") == seed0
    assert compose_config("contaminate", ["+dataset=synth_nli", "seed=3"]).sample.draw == 3


@pytest.mark.parametrize("override, message", [("sample.draw=-1", "sample.draw=-1: give a whole number >= 0"),
                                               ("seed=abc", "seed=abc: give a whole number >= 0")])
def test_a_bad_draw_or_seed_is_one_line(compose_config, override, message):
    with pytest.raises(InputError, match=message):
        check_study(compose_config("contaminate", ["+dataset=synth_nli", override]))


def test_more_known_non_members_than_the_split_has_left_is_one_line(compose_config):
    base = ["+dataset=synth_nli", "sample.n_members=100", "sample.n_non_members=100"]
    with pytest.raises(InputError, match=r"^sample.n_heldout=100000 known non-members asked of synth_nli test, "
                                         r"which has 1000 left after the other pools; lower sample.n_heldout to "
                                         r"1000 or less"):
        sample_pools(compose_config("contaminate", [*base, "sample.n_heldout=100000"]))
    with pytest.raises(InputError, match="sample.n_heldout=-1: give a whole number >= 0"):
        sample_pools(compose_config("contaminate", [*base, "sample.n_heldout=-1"]))


def test_judge_recipe_in_a_study_is_one_line(compose_config):
    with pytest.raises(InputError, match="^judge=recipe fits on the known non-members of the model under test; a study "
                                         "reads each of its models' own"):
        check_study(compose_config("contaminate", ["+dataset=synth_nli", "judge=recipe"]))


def test_the_known_non_members_detectors_are_checked_in_one_line(compose_config):
    from contaminate.stages import known_setting
    from detect.detectors import build

    cfg = compose_config("contaminate", ["+dataset=synth_nli", "detect.known_non_members.detectors=[membership,cheat]"])
    with pytest.raises(InputError, match="detect.known_non_members.detectors names cheat, which is not an instance "
                                         "score that reads no known non-members; use some of cdd, dc_pdd, dcq, "):
        known_setting(cfg.detect, build(cfg.detect.detectors))
    on = compose_config("contaminate", ["+dataset=synth_nli"])
    assert [d.name for d in known_setting(on.detect, build(on.detect.detectors))] == ["membership", "membership_raw",
                                                                                       "dc_pdd"]
    off = compose_config("contaminate", ["+dataset=synth_nli", "detect.known_non_members.enabled=false"])
    assert known_setting(off.detect, build(off.detect.detectors)) is None


def test_known_non_members_are_a_third_pool_that_leaves_the_draw_as_it_was(compose_config):
    """sample.n_heldout: per split, known non-members disjoint from every pool and sample a cell of it reads; drawing
    them changes neither members nor non-members (so no checkpoint is retrained for them)."""
    base = ["+dataset=synth_nli", "sample.n_members=10", "sample.n_non_members=10"]
    sampled = sample_pools(compose_config("contaminate", [*base, "sample.n_heldout=20"]))
    without = sample_pools(compose_config("contaminate", [*base, "sample.n_heldout=0"]))
    assert [e.instance_id for e in sampled.members] == [e.instance_id for e in without.members]
    assert [e.instance_id for e in sampled.non_members] == [e.instance_id for e in without.non_members]
    main, other = sampled.known_non_members[sampled.split], sampled.known_non_members[sampled.other_split]
    assert len(main) == len(other) == 20 and without.known_non_members[without.split] == []
    assert not {e.instance_id for e in main} & {e.instance_id for e in [*sampled.members, *sampled.non_members]}
    reads = [*sampled.whole["other_split"], *sampled.detection["other_split"][0]]
    assert not {e.instance_id for e in other} & {e.instance_id for e in reads}
